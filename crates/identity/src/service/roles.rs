//! Roles: named sets of permission strings. Built-in roles come with the schema; parties add
//! custom roles within their scope, never granting more than the creator holds.
use atrium_kernel::Reason;
use atrium_kernel::permission::is_known_permission;
use atrium_kernel::{Actor, AuditRecord, Clock, Effects, Error, Id, Page, PageRequest, Party, PartyType, Result};
use std::sync::Arc;

use super::SessionCache;
use crate::api::{NewRole, RolePatch};
use crate::model::{BUILTIN_ROLE_CODES, Role};
use crate::ports::RoleRepo;

/// The role administration's use cases, scoped to the caller.
pub struct RoleService {
    repo: Arc<dyn RoleRepo>,
    sessions: Arc<SessionCache>,
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
            return Err(Error::forbidden(Reason::Escalation, format!("cannot grant {p}, which you do not hold")));
        }
        if !out.iter().any(|o| o == p) {
            out.push(p.to_owned());
        }
    }
    Ok(out)
}

impl RoleService {
    /// A service over role storage, the session cache shared with the login service, and a clock.
    pub fn new(repo: Arc<dyn RoleRepo>, sessions: Arc<SessionCache>, clock: Arc<dyn Clock>) -> Self {
        RoleService { repo, sessions, clock }
    }

    /// One page of the roles the caller sees: the built-in roles it can hand out and the custom
    /// roles of its party.
    pub async fn list(&self, actor: &Actor, page: PageRequest) -> Result<Page<Role>> {
        self.repo.list_roles(actor.party, page).await
    }

    /// A role the caller sees; `NotFound` for any other.
    pub async fn get(&self, actor: &Actor, id: Id) -> Result<Role> {
        self.repo.get_role(actor.party, id).await?.ok_or(Error::NotFound("role"))
    }

    /// Creates a custom role of the caller's party, granting nothing the caller lacks; a built-in
    /// role's code or one its party already has is refused.
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
        self.repo.insert_role(role, Effects::audited(audit)).await
    }

    fn editable(&self, actor: &Actor, role: &Role) -> Result<()> {
        if role.builtin {
            return Err(Error::conflict(Reason::BuiltIn, "built-in roles cannot be changed"));
        }
        let owns = match actor.party {
            Party::Platform => true,
            Party::Partner { partner_id } => role.owner_partner_id == Some(partner_id),
            Party::Tenant { tenant_id, .. } => role.owner_tenant_id == Some(tenant_id),
        };
        if !owns {
            return Err(Error::forbidden(Reason::PartyNotAllowed, "only the owner of a custom role can change it"));
        }
        Ok(())
    }

    /// Changes a custom role of the caller's party; its holders' cached sessions are dropped, so the
    /// change applies at their next request. Built-in roles cannot change.
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
        let saved = self.repo.update_role(after, Effects::audited(audit)).await?;
        // Every holder is affected.
        self.sessions.clear();
        Ok(saved)
    }

    /// Deletes a custom role of the caller's party that no user holds (`Conflict` otherwise).
    pub async fn delete(&self, actor: &Actor, id: Id) -> Result<()> {
        let before = self.get(actor, id).await?;
        self.editable(actor, &before)?;
        let audit = AuditRecord::by(actor, self.clock.now(), "role.delete", "role", Some(id))
            .owned_by_party(actor.party)
            .change(Some(&audit_json(&before)), None);
        self.repo.delete_role(id, Effects::audited(audit)).await
    }
}
