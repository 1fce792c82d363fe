//! Users: the people who log in, each belonging to one party and holding roles.
use async_trait::async_trait;
use atrium_kernel::StrEnum;
pub use atrium_kernel::UserStatus;
use atrium_kernel::{
    Actor, AuditRecord, Clock, Email, Error, Id, Name, Page, Party, PartyType, PermissionSet, Phone, Result, Text, Timestamp, patch,
};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

use crate::roles::Role;
use crate::scope::ListQuery;

/// A role as listed on a user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UserRole {
    pub id: Id,
    pub code: String,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OrgUser {
    pub id: Id,
    pub username: String,
    pub name: String,
    pub phone: Option<String>,
    pub email: Option<String>,
    pub party: Party,
    pub status: UserStatus,
    pub roles: Vec<UserRole>,
    /// Union of the roles' permission strings.
    pub permissions: Vec<String>,
    pub chat_bound: bool,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// Login names: 3–64 of lower-case letters, digits and `._-@+`.
pub type Username = Text<64>;
/// Passwords are checked against the policy by the service (8–128 characters).
pub type PasswordInput = Text<128>;

#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewUser {
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub username: Username,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = Password))]
    pub password: String,
    pub name: Name,
    pub phone: Option<Phone>,
    pub email: Option<Email>,
    /// A partner user of this partner.
    pub partner_id: Option<Id>,
    /// A tenant user of this tenant. Without either, the user joins the caller's party.
    pub tenant_id: Option<Id>,
    #[serde(default)]
    pub role_ids: Vec<Id>,
    pub status: Option<UserStatus>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct UserPatch {
    pub name: Option<Name>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub phone: Option<Option<Phone>>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub email: Option<Option<Email>>,
    pub status: Option<UserStatus>,
    /// Replaces the user's roles.
    pub role_ids: Option<Vec<Id>>,
    /// Sets a new password and ends the user's sessions.
    #[cfg_attr(feature = "openapi", schema(format = Password))]
    pub password: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct UserQuery {
    pub list: ListQuery<UserSort>,
    pub status: Option<UserStatus>,
    pub party_type: Option<PartyType>,
    pub partner_id: Option<Id>,
    pub tenant_id: Option<Id>,
}

/// What a list of these may be sorted by (`sort=name`, `sort=-created_at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::EnumString, strum::IntoStaticStr, strum::VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum UserSort {
    Id,
    CreatedAt,
    Username,
    Name,
}

/// What a write of a user changes besides its row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UserWrite {
    /// Replace the user's roles with these.
    pub role_ids: Option<Vec<Id>>,
    /// Store this new password hash.
    pub password_hash: Option<String>,
    /// End every session of the user.
    pub revoke_sessions: bool,
}

/// Storage of users. Reads are filtered by `scope`; out-of-scope rows are absent.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait UserRepo: Send + Sync + 'static {
    async fn list_users(&self, scope: Party, query: UserQuery) -> Result<Page<OrgUser>>;
    async fn get_user(&self, scope: Party, id: Id) -> Result<Option<OrgUser>>;
    /// The roles with these ids that a caller of `scope` can see (missing ids are left out).
    async fn roles_by_ids(&self, scope: Party, ids: Vec<Id>) -> Result<Vec<Role>>;
    /// The partner of a tenant in `scope`; `NotFound` if the tenant is not in scope.
    async fn tenant_partner(&self, scope: Party, tenant_id: Id) -> Result<Option<Id>>;
    async fn partner_exists(&self, id: Id) -> Result<bool>;
    /// MUST return `Conflict` for a taken username, phone or e-mail.
    async fn insert_user(&self, user: OrgUser, password_hash: String, role_ids: Vec<Id>, audit: AuditRecord) -> Result<OrgUser>;
    async fn update_user(&self, user: OrgUser, write: UserWrite, audit: AuditRecord) -> Result<OrgUser>;
    /// Deletes the user and its sessions, and revokes the API tokens it issued.
    async fn delete_user(&self, id: Id, audit: AuditRecord) -> Result<()>;
    /// Stores the audit record of a refused write (a create that hit a taken value).
    async fn record_refusal(&self, audit: AuditRecord) -> Result<()>;
}

pub struct UserService {
    repo: Arc<dyn UserRepo>,
    hasher: Arc<dyn crate::PasswordHashing>,
    access: Arc<dyn crate::AccessChanged>,
    limiter: Arc<dyn crate::RateLimiter>,
    clock: Arc<dyn Clock>,
    /// The password policy (identity owns it; the server passes it in).
    password_policy: fn(&str) -> std::result::Result<(), &'static str>,
    /// User creations one caller may attempt per hour (each answer, 409s included, tells
    /// something about which usernames, phones and e-mails exist).
    creates_per_hour: i64,
}

/// Default of [`UserService::with_create_limit`].
pub const USER_CREATES_PER_HOUR: i64 = 200;

fn audit_json(u: &OrgUser) -> serde_json::Value {
    serde_json::to_value(u).unwrap_or_default()
}

impl UserService {
    pub fn new(
        repo: Arc<dyn UserRepo>,
        hasher: Arc<dyn crate::PasswordHashing>,
        access: Arc<dyn crate::AccessChanged>,
        limiter: Arc<dyn crate::RateLimiter>,
        clock: Arc<dyn Clock>,
        password_policy: fn(&str) -> std::result::Result<(), &'static str>,
    ) -> Self {
        UserService { repo, hasher, access, limiter, clock, password_policy, creates_per_hour: USER_CREATES_PER_HOUR }
    }

    /// Sets how many user creations one caller may attempt per hour.
    pub fn with_create_limit(mut self, per_hour: i64) -> Self {
        self.creates_per_hour = per_hour;
        self
    }

    /// Counts a create attempt of the caller; 429 once its hourly budget is spent.
    async fn spend_create_budget(&self, actor: &Actor, now: Timestamp) -> Result<()> {
        let key = format!("user-create:user:{}", actor.user_id);
        let since = now - chrono::Duration::hours(1);
        let (used, oldest) = self.limiter.count(&key, since).await?;
        if used >= self.creates_per_hour {
            let reopen = oldest.map(|o| o + chrono::Duration::hours(1)).unwrap_or(now + chrono::Duration::hours(1));
            let secs = (reopen - now).num_seconds().max(1) as u64;
            return Err(Error::RateLimited {
                message: "too many users created in the last hour; try again later".into(),
                retry_after_secs: secs,
            });
        }
        self.limiter.hit(&key, now, since).await
    }

    pub async fn list(&self, actor: &Actor, query: UserQuery) -> Result<Page<OrgUser>> {
        self.repo.list_users(actor.party, query).await
    }

    pub async fn get(&self, actor: &Actor, id: Id) -> Result<OrgUser> {
        self.repo.get_user(actor.party, id).await?.ok_or(Error::NotFound("user"))
    }

    /// The party a new user joins, checked against the caller's scope.
    async fn new_user_party(&self, actor: &Actor, partner_id: Option<Id>, tenant_id: Option<Id>) -> Result<Party> {
        match (partner_id, tenant_id) {
            (Some(_), Some(_)) => Err(Error::invalid("tenant_id", "give partner_id or tenant_id, not both")),
            (None, Some(t)) => {
                let partner = self.repo.tenant_partner(actor.party, t).await.map_err(|e| match e {
                    Error::NotFound(_) => Error::invalid("tenant_id", "no such tenant"),
                    other => other,
                })?;
                Ok(Party::Tenant { tenant_id: t, partner_id: partner })
            }
            (Some(p), None) => match actor.party {
                Party::Platform if self.repo.partner_exists(p).await? => Ok(Party::Partner { partner_id: p }),
                Party::Partner { partner_id } if partner_id == p => Ok(Party::Partner { partner_id: p }),
                _ => Err(Error::invalid("partner_id", "no such partner")),
            },
            (None, None) => Ok(actor.party),
        }
    }

    /// Resolves role ids for a user of `party`: each must be visible, fit the party and
    /// grant nothing the caller lacks.
    async fn grantable_roles(&self, actor: &Actor, party: Party, ids: &[Id]) -> Result<(Vec<Id>, Vec<Role>)> {
        let mut unique: Vec<Id> = ids.to_vec();
        unique.sort_unstable();
        unique.dedup();
        let roles = self.repo.roles_by_ids(actor.party, unique.clone()).await?;
        for id in &unique {
            let Some(role) = roles.iter().find(|r| r.id == *id) else {
                return Err(Error::invalid("role_ids", format!("no such role {id}")));
            };
            if !role.usable_by(party) {
                return Err(Error::invalid("role_ids", format!("role {} is not for a {} user", role.code, party.party_type().as_str())));
            }
            if !actor.permissions.covers_all(role.permissions.iter().map(String::as_str)) {
                return Err(Error::forbidden(format!("cannot grant role {}: it holds permissions you lack", role.code)));
            }
        }
        Ok((unique, roles))
    }

    fn check_password(&self, field: &str, password: &str) -> Result<()> {
        (self.password_policy)(password).map_err(|m| Error::invalid(field, m))
    }

    /// A caller may manage only users whose permissions it holds itself.
    fn check_outranks(&self, actor: &Actor, target: &OrgUser) -> Result<()> {
        if !actor.permissions.covers_all(target.permissions.iter().map(String::as_str)) {
            return Err(Error::forbidden("this user holds permissions you lack"));
        }
        Ok(())
    }

    pub async fn create(&self, actor: &Actor, input: NewUser) -> Result<OrgUser> {
        actor.require_active_party("create users")?;
        self.spend_create_budget(actor, self.clock.now()).await?;
        let username = input.username.as_str().to_lowercase();
        if username.len() < 3 || !username.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-@+".contains(&b)) {
            return Err(Error::invalid("username", "must be 3–64 letters, digits or ._-@+"));
        }
        self.check_password("password", &input.password)?;
        let party = self.new_user_party(actor, input.partner_id, input.tenant_id).await?;
        let (role_ids, roles) = self.grantable_roles(actor, party, &input.role_ids).await?;
        let hash = self.hasher.hash_password(&input.password).await?;
        let now = self.clock.now();
        let perms = PermissionSet::new(roles.iter().flat_map(|r| r.permissions.iter().cloned()));
        let user = OrgUser {
            id: 0,
            username,
            name: input.name.into_string(),
            phone: input.phone.map(String::from),
            email: input.email.map(String::from),
            party,
            status: input.status.unwrap_or(UserStatus::Active),
            roles: roles.iter().map(|r| UserRole { id: r.id, code: r.code.clone(), name: r.name.clone() }).collect(),
            permissions: perms.to_vec(),
            chat_bound: false,
            created_at: now,
            updated_at: now,
        };
        let audit = AuditRecord::by(actor, now, "user.create", "user", None).owned_by_party(party).change(None, Some(&audit_json(&user)));
        let (username, phone, email) = (user.username.clone(), user.phone.clone(), user.email.clone());
        match self.repo.insert_user(user, hash, role_ids, audit).await {
            Err(Error::Conflict(why)) => {
                // A 409 tells the caller a value exists somewhere: keep a trace of who asked.
                let refusal = AuditRecord::by(actor, now, "user.create_conflict", "user", None)
                    .owned_by_party(actor.party)
                    .with_after(serde_json::json!({"username": username, "phone": phone, "email": email, "reason": why}));
                self.repo.record_refusal(refusal).await?;
                Err(Error::Conflict(why))
            }
            other => other,
        }
    }

    pub async fn update(&self, actor: &Actor, id: Id, patch: UserPatch) -> Result<OrgUser> {
        let before = self.get(actor, id).await?;
        self.check_outranks(actor, &before)?;
        let mut after = before.clone();
        let mut write = UserWrite::default();
        if let Some(v) = patch.name {
            after.name = v.into_string();
        }
        if let Some(v) = patch.phone {
            after.phone = v.map(String::from);
        }
        if let Some(v) = patch.email {
            after.email = v.map(String::from);
        }
        if let Some(s) = patch.status
            && s != before.status
        {
            if id == actor.user_id {
                return Err(Error::conflict("you cannot change your own status"));
            }
            after.status = s;
            write.revoke_sessions = s == UserStatus::Disabled;
        }
        if let Some(ids) = patch.role_ids {
            let (ids, roles) = self.grantable_roles(actor, before.party, &ids).await?;
            after.roles = roles.iter().map(|r| UserRole { id: r.id, code: r.code.clone(), name: r.name.clone() }).collect();
            after.permissions = PermissionSet::new(roles.iter().flat_map(|r| r.permissions.iter().cloned())).to_vec();
            write.role_ids = Some(ids);
        }
        if let Some(pw) = patch.password {
            self.check_password("password", &pw)?;
            write.password_hash = Some(self.hasher.hash_password(&pw).await?);
            write.revoke_sessions = true;
        }
        after.updated_at = self.clock.now();
        let action = if write.password_hash.is_some() {
            "user.password_set"
        } else if after.status != before.status {
            "user.status"
        } else {
            "user.update"
        };
        let audit = AuditRecord::by(actor, after.updated_at, action, "user", Some(id))
            .owned_by_party(before.party)
            .change(Some(&audit_json(&before)), Some(&audit_json(&after)));
        let saved = self.repo.update_user(after, write, audit).await?;
        self.access.user_access_changed(id);
        Ok(saved)
    }

    pub async fn delete(&self, actor: &Actor, id: Id) -> Result<()> {
        if id == actor.user_id {
            return Err(Error::conflict("you cannot delete your own user"));
        }
        let before = self.get(actor, id).await?;
        self.check_outranks(actor, &before)?;
        let audit = AuditRecord::by(actor, self.clock.now(), "user.delete", "user", Some(id))
            .owned_by_party(before.party)
            .change(Some(&audit_json(&before)), None);
        self.repo.delete_user(id, audit).await?;
        self.access.user_access_changed(id);
        Ok(())
    }
}
