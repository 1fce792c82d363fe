//! User administration: the users of the caller's scope, their roles and status.
use atrium_kernel::Reason;
use atrium_kernel::StrEnum;
use atrium_kernel::{Actor, AuditRecord, Clock, Effects, Error, Id, Page, Party, Result, Timestamp};
use std::sync::Arc;

use super::SessionCache;
use crate::api::{NewUser, UserPatch};
use crate::model::{Role, User, UserQuery, UserStatus, UserWithRoles, UserWrite};
use crate::password::validate_password;
use crate::ports::{PasswordHasher, RateBucketRepo, UserRepo};

/// The user administration's use cases, scoped to the caller.
pub struct UserService {
    repo: Arc<dyn UserRepo>,
    buckets: Arc<dyn RateBucketRepo>,
    hasher: Arc<dyn PasswordHasher>,
    sessions: Arc<SessionCache>,
    clock: Arc<dyn Clock>,
    /// User creations one caller may attempt per hour (each answer, 409s included, tells
    /// something about which usernames, phones and e-mails exist).
    creates_per_hour: i64,
}

/// Default of [`UserService::with_create_limit`].
pub const USER_CREATES_PER_HOUR: i64 = 200;

fn audit_json(u: &UserWithRoles) -> serde_json::Value {
    serde_json::to_value(u).unwrap_or_default()
}

impl UserService {
    /// A service over user storage, the rate counters (user creations per caller and hour), the
    /// password hasher, the session cache shared with the login service, and a clock.
    pub fn new(
        repo: Arc<dyn UserRepo>,
        buckets: Arc<dyn RateBucketRepo>,
        hasher: Arc<dyn PasswordHasher>,
        sessions: Arc<SessionCache>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        UserService { repo, buckets, hasher, sessions, clock, creates_per_hour: USER_CREATES_PER_HOUR }
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
        let (used, oldest) = self.buckets.rate_bucket(&key, since).await?;
        if used >= self.creates_per_hour {
            let reopen = oldest.map(|o| o + chrono::Duration::hours(1)).unwrap_or(now + chrono::Duration::hours(1));
            let secs = (reopen - now).num_seconds().max(1) as u64;
            return Err(Error::RateLimited {
                message: "too many users created in the last hour; try again later".into(),
                retry_after_secs: secs,
            });
        }
        self.buckets.hit_rate_bucket(&key, now, since).await?;
        Ok(())
    }

    /// One page of the users in the caller's scope that match `query`.
    pub async fn list(&self, actor: &Actor, query: UserQuery) -> Result<Page<UserWithRoles>> {
        self.repo.list_users(actor.party, query).await
    }

    /// A user in the caller's scope with its roles; `NotFound` for any other.
    pub async fn get(&self, actor: &Actor, id: Id) -> Result<UserWithRoles> {
        self.repo.get_user(actor.party, id).await?.ok_or(Error::NotFound("user"))
    }

    /// The party a new user joins, checked against the caller's scope.
    async fn new_user_party(&self, actor: &Actor, partner_id: Option<Id>, tenant_id: Option<Id>) -> Result<Party> {
        match (partner_id, tenant_id) {
            (Some(_), Some(_)) => Err(Error::invalid("tenant_id", "give partner_id or tenant_id, not both")),
            (None, Some(t)) => {
                let partner = self.repo.tenant_partner(actor.party, t).await.map_err(|e| match e {
                    Error::NotFound(_) => Error::no_such("tenant_id", "no such tenant"),
                    other => other,
                })?;
                Ok(Party::Tenant { tenant_id: t, partner_id: partner })
            }
            (Some(p), None) => match actor.party {
                Party::Platform if self.repo.partner_exists(p).await? => Ok(Party::Partner { partner_id: p }),
                Party::Partner { partner_id } if partner_id == p => Ok(Party::Partner { partner_id: p }),
                _ => Err(Error::no_such("partner_id", "no such partner")),
            },
            (None, None) => Ok(actor.party),
        }
    }

    /// Resolves role ids for a user of `party`: each must be visible, fit the party and
    /// grant nothing the caller lacks.
    async fn grantable_roles(&self, actor: &Actor, party: Party, ids: &[Id]) -> Result<Vec<Role>> {
        let mut unique: Vec<Id> = ids.to_vec();
        unique.sort_unstable();
        unique.dedup();
        let mut roles = self.repo.roles_by_ids(actor.party, unique.clone()).await?;
        for id in &unique {
            let Some(role) = roles.iter().find(|r| r.id == *id) else {
                return Err(Error::no_such("role_ids", format!("no such role {id}")));
            };
            if !role.usable_by(party) {
                return Err(Error::invalid("role_ids", format!("role {} is not for a {} user", role.code, party.party_type().as_str())));
            }
            if !actor.permissions.covers_all(role.permissions.iter().map(String::as_str)) {
                return Err(Error::forbidden(
                    Reason::Escalation,
                    format!("cannot grant role {}: it holds permissions you lack", role.code),
                ));
            }
        }
        roles.sort_by_key(|r| r.id);
        Ok(roles)
    }

    fn check_password(&self, field: &str, password: &str) -> Result<()> {
        validate_password(password).map_err(|m| Error::invalid(field, m))
    }

    /// A caller may manage only users whose permissions it holds itself.
    fn check_outranks(&self, actor: &Actor, target: &UserWithRoles) -> Result<()> {
        if !actor.permissions.covers_all(target.permissions.iter().map(String::as_str)) {
            return Err(Error::forbidden(Reason::Escalation, "this user holds permissions you lack"));
        }
        Ok(())
    }

    /// Creates a user in the caller's party (or one in its scope), with a checked username and
    /// password and roles that grant nothing the caller lacks. A taken username, phone or e-mail is a
    /// `Conflict`; a caller of a pending tenant may not create users.
    pub async fn create(&self, actor: &Actor, input: NewUser) -> Result<UserWithRoles> {
        actor.require_active_party("create users")?;
        self.spend_create_budget(actor, self.clock.now()).await?;
        let username = input.username.as_str().to_lowercase();
        if username.len() < 3 || !username.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-@+".contains(&b)) {
            return Err(Error::invalid("username", "must be 3–64 letters, digits or ._-@+"));
        }
        self.check_password("password", &input.password)?;
        let party = self.new_user_party(actor, input.partner_id, input.tenant_id).await?;
        let roles = self.grantable_roles(actor, party, &input.role_ids).await?;
        let hash = self.hasher.hash(&input.password).await?;
        let now = self.clock.now();
        let user = User {
            id: 0,
            username,
            name: input.name.into_string(),
            phone: input.phone.map(String::from),
            email: input.email.map(String::from),
            party,
            status: input.status.unwrap_or(UserStatus::Active),
            chat_bound: false,
            created_at: now,
            updated_at: now,
        };
        let user = UserWithRoles::new(user, &roles);
        let audit = AuditRecord::by(actor, now, "user.create", "user", None).owned_by_party(party).change(None, Some(&audit_json(&user)));
        let (username, phone, email) = (user.user.username.clone(), user.user.phone.clone(), user.user.email.clone());
        match self.repo.insert_user(user, hash, Effects::audited(audit)).await {
            Err(Error::Conflict(reason, why)) => {
                // A 409 tells the caller a value exists somewhere: keep a trace of who asked.
                let refusal = AuditRecord::by(actor, now, "user.create_conflict", "user", None)
                    .owned_by_party(actor.party)
                    .with_after(serde_json::json!({"username": username, "phone": phone, "email": email, "reason": why}));
                self.repo.record_refusal(refusal).await?;
                Err(Error::Conflict(reason, why))
            }
            other => other,
        }
    }

    /// Changes a user in the caller's scope whose permissions the caller holds. A new password or
    /// a disabled status ends the user's sessions; the caller may not change its own status.
    pub async fn update(&self, actor: &Actor, id: Id, patch: UserPatch) -> Result<UserWithRoles> {
        let before = self.get(actor, id).await?;
        self.check_outranks(actor, &before)?;
        let mut after = before.clone();
        let mut write = UserWrite::default();
        if let Some(v) = patch.name {
            after.user.name = v.into_string();
        }
        if let Some(v) = patch.phone {
            after.user.phone = v.map(String::from);
        }
        if let Some(v) = patch.email {
            after.user.email = v.map(String::from);
        }
        if let Some(s) = patch.status
            && s != before.user.status
        {
            if id == actor.user_id {
                return Err(Error::conflict(Reason::SelfAction, "you cannot change your own status"));
            }
            after.user.status = s;
            write.revoke_sessions = s == UserStatus::Disabled;
        }
        if let Some(ids) = patch.role_ids {
            let roles = self.grantable_roles(actor, before.user.party, &ids).await?;
            write.role_ids = Some(roles.iter().map(|r| r.id).collect());
            after = UserWithRoles::new(after.user, &roles);
        }
        if let Some(pw) = patch.password {
            self.check_password("password", &pw)?;
            write.password_hash = Some(self.hasher.hash(&pw).await?);
            write.revoke_sessions = true;
        }
        after.user.updated_at = self.clock.now();
        let action = if write.password_hash.is_some() {
            "user.password_set"
        } else if after.user.status != before.user.status {
            "user.status"
        } else {
            "user.update"
        };
        let audit = AuditRecord::by(actor, after.user.updated_at, action, "user", Some(id))
            .owned_by_party(before.user.party)
            .change(Some(&audit_json(&before)), Some(&audit_json(&after)));
        let saved = self.repo.update_user(after, write, Effects::audited(audit)).await?;
        self.sessions.forget_user(id);
        Ok(saved)
    }

    /// Deletes a user in the caller's scope (not the caller itself), its sessions, and the API tokens
    /// it issued.
    pub async fn delete(&self, actor: &Actor, id: Id) -> Result<()> {
        if id == actor.user_id {
            return Err(Error::conflict(Reason::SelfAction, "you cannot delete your own user"));
        }
        let before = self.get(actor, id).await?;
        self.check_outranks(actor, &before)?;
        let audit = AuditRecord::by(actor, self.clock.now(), "user.delete", "user", Some(id))
            .owned_by_party(before.user.party)
            .change(Some(&audit_json(&before)), None);
        self.repo.delete_user(id, Effects::audited(audit)).await?;
        self.sessions.forget_user(id);
        Ok(())
    }
}
