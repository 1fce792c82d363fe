//! Roles: named sets of permission strings. Built-in roles come with the schema; parties add
//! custom roles within their scope, never granting more than the creator holds.
use async_trait::async_trait;
use atrium_kernel::permission::is_known_permission;
use atrium_kernel::{Actor, AuditRecord, Clock, Error, Id, Name, Page, PageRequest, Party, PartyType, Result, Text, Timestamp};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Role {
    pub id: Id,
    pub code: String,
    pub name: String,
    /// The kind of user that can hold it.
    pub party_type: PartyType,
    /// The party that owns a custom role (none for built-in and platform roles).
    pub owner_partner_id: Option<Id>,
    pub owner_tenant_id: Option<Id>,
    pub builtin: bool,
    pub permissions: Vec<String>,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub created_at: Timestamp,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub updated_at: Timestamp,
}

impl Role {
    /// Whether a user of `party` may hold this role.
    pub fn usable_by(&self, party: Party) -> bool {
        if party.party_type() != self.party_type {
            return false;
        }
        match (self.owner_partner_id, self.owner_tenant_id, party) {
            (None, None, _) => true,
            (_, Some(t), Party::Tenant { tenant_id, .. }) => t == tenant_id,
            (Some(p), None, Party::Partner { partner_id }) => p == partner_id,
            (Some(p), None, Party::Tenant { partner_id, .. }) => partner_id == Some(p),
            _ => false,
        }
    }
}

pub type RoleCode = Text<64>;

#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewRole {
    /// Letters, digits and underscores.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub code: RoleCode,
    pub name: Name,
    pub party_type: PartyType,
    pub permissions: Vec<String>,
}

/// Codes of the built-in roles; no custom role may take one.
pub const BUILTIN_ROLE_CODES: &[&str] =
    &["platform_admin", "partner_admin", "tenant_admin", "payroll_clerk", "payroll_approver", "finance", "viewer"];

#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RolePatch {
    pub name: Option<Name>,
    pub permissions: Option<Vec<String>>,
}

/// Storage of roles. Reads are filtered by `scope` (see [`RoleService`]).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait RoleRepo: Send + Sync + 'static {
    /// Built-in roles a caller of `scope` can hand out, plus the custom roles it owns or
    /// inherits; everything for the platform.
    async fn list_roles(&self, scope: Party, page: PageRequest) -> Result<Page<Role>>;
    async fn get_role(&self, scope: Party, id: Id) -> Result<Option<Role>>;
    /// MUST return `Conflict` if the code is taken by the same owner.
    async fn insert_role(&self, role: Role, audit: AuditRecord) -> Result<Role>;
    async fn update_role(&self, role: Role, audit: AuditRecord) -> Result<Role>;
    /// MUST return `Conflict` while users hold the role.
    async fn delete_role(&self, id: Id, audit: AuditRecord) -> Result<()>;
}

pub struct RoleService {
    repo: Arc<dyn RoleRepo>,
    access: Arc<dyn crate::AccessChanged>,
    clock: Arc<dyn Clock>,
}

fn audit_json(r: &Role) -> serde_json::Value {
    serde_json::to_value(r).unwrap_or_default()
}

fn check_permissions(actor: &Actor, perms: &[String]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::with_capacity(perms.len());
    for (i, p) in perms.iter().enumerate() {
        let p = p.trim();
        if !is_known_permission(p) {
            return Err(Error::invalid(format!("permissions[{i}]"), format!("unknown permission {p:?}")));
        }
        // Wildcards are covered only by an equal or wider wildcard (see permission_matches).
        if !actor.permissions.allows(p) {
            return Err(Error::forbidden(format!("cannot grant {p}, which you do not hold")));
        }
        if !out.iter().any(|o| o == p) {
            out.push(p.to_owned());
        }
    }
    Ok(out)
}

impl RoleService {
    pub fn new(repo: Arc<dyn RoleRepo>, access: Arc<dyn crate::AccessChanged>, clock: Arc<dyn Clock>) -> Self {
        RoleService { repo, access, clock }
    }

    pub async fn list(&self, actor: &Actor, page: PageRequest) -> Result<Page<Role>> {
        self.repo.list_roles(actor.party, page).await
    }

    pub async fn get(&self, actor: &Actor, id: Id) -> Result<Role> {
        self.repo.get_role(actor.party, id).await?.ok_or(Error::NotFound("role"))
    }

    pub async fn create(&self, actor: &Actor, input: NewRole) -> Result<Role> {
        if !input.code.as_str().bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(Error::invalid("code", "may contain only letters, digits and underscores"));
        }
        if BUILTIN_ROLE_CODES.contains(&input.code.as_str().to_lowercase().as_str()) {
            return Err(Error::invalid("code", "is reserved for a built-in role"));
        }
        let allowed = match actor.party {
            Party::Platform => true,
            Party::Partner { .. } => input.party_type != PartyType::Platform,
            Party::Tenant { .. } => input.party_type == PartyType::Tenant,
        };
        if !allowed {
            return Err(Error::invalid("party_type", "is above your own party"));
        }
        let permissions = check_permissions(actor, &input.permissions)?;
        let (owner_partner_id, owner_tenant_id) = match actor.party {
            Party::Platform => (None, None),
            Party::Partner { partner_id } => (Some(partner_id), None),
            Party::Tenant { tenant_id, .. } => (None, Some(tenant_id)),
        };
        let now = self.clock.now();
        let role = Role {
            id: 0,
            code: input.code.into_string().to_lowercase(),
            name: input.name.into_string(),
            party_type: input.party_type,
            owner_partner_id,
            owner_tenant_id,
            builtin: false,
            permissions,
            created_at: now,
            updated_at: now,
        };
        let audit =
            AuditRecord::by(actor, now, "role.create", "role", None).owned_by_party(actor.party).change(None, Some(&audit_json(&role)));
        self.repo.insert_role(role, audit).await
    }

    fn editable(&self, actor: &Actor, role: &Role) -> Result<()> {
        if role.builtin {
            return Err(Error::conflict("built-in roles cannot be changed"));
        }
        let owns = match actor.party {
            Party::Platform => true,
            Party::Partner { partner_id } => role.owner_partner_id == Some(partner_id),
            Party::Tenant { tenant_id, .. } => role.owner_tenant_id == Some(tenant_id),
        };
        if !owns {
            return Err(Error::forbidden("only the owner of a custom role can change it"));
        }
        Ok(())
    }

    pub async fn update(&self, actor: &Actor, id: Id, patch: RolePatch) -> Result<Role> {
        let before = self.get(actor, id).await?;
        self.editable(actor, &before)?;
        let mut after = before.clone();
        if let Some(n) = patch.name {
            after.name = n.into_string();
        }
        if let Some(p) = patch.permissions {
            after.permissions = check_permissions(actor, &p)?;
        }
        after.updated_at = self.clock.now();
        let audit = AuditRecord::by(actor, after.updated_at, "role.update", "role", Some(id))
            .owned_by_party(actor.party)
            .change(Some(&audit_json(&before)), Some(&audit_json(&after)));
        let saved = self.repo.update_role(after, audit).await?;
        self.access.role_changed(id);
        Ok(saved)
    }

    pub async fn delete(&self, actor: &Actor, id: Id) -> Result<()> {
        let before = self.get(actor, id).await?;
        self.editable(actor, &before)?;
        let audit = AuditRecord::by(actor, self.clock.now(), "role.delete", "role", Some(id))
            .owned_by_party(actor.party)
            .change(Some(&audit_json(&before)), None);
        self.repo.delete_role(id, audit).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(owner_partner: Option<Id>, owner_tenant: Option<Id>) -> Role {
        Role {
            id: 1,
            code: "c".into(),
            name: "n".into(),
            party_type: PartyType::Tenant,
            owner_partner_id: owner_partner,
            owner_tenant_id: owner_tenant,
            builtin: false,
            permissions: vec![],
            created_at: chrono::Utc::now(),
            updated_at: chrono::Utc::now(),
        }
    }

    #[test]
    fn a_tenant_role_is_usable_only_inside_its_owner() {
        let t1 = Party::Tenant { tenant_id: 1, partner_id: Some(9) };
        let t2 = Party::Tenant { tenant_id: 2, partner_id: Some(8) };
        assert!(role(None, None).usable_by(t1));
        assert!(role(None, Some(1)).usable_by(t1));
        assert!(!role(None, Some(1)).usable_by(t2));
        assert!(role(Some(9), None).usable_by(t1), "a partner's role serves its tenants");
        assert!(!role(Some(9), None).usable_by(t2));
        assert!(!role(None, None).usable_by(Party::Partner { partner_id: 9 }), "party type must match");
    }
}
