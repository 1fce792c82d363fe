//! Reading the audit trail. Entries are written by the repositories, in the transaction of
//! the change they record; there is no way to edit or delete them.
//!
//! An entry never shows more of its target than the target's own API would: `audit:read`
//! reveals who did what to which record, while the before/after values need the read
//! permission of the target's kind (see [`target_read_permission`]).
use async_trait::async_trait;
use atrium_kernel::audit::redact;
use atrium_kernel::permission as perm;
use atrium_kernel::{Actor, Id, Page, PageRequest, Party, Result, Timestamp};
use serde::Serialize;
use std::sync::Arc;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuditEntry {
    pub id: Id,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub at: Timestamp,
    pub actor_user_id: Option<Id>,
    pub ip: Option<String>,
    pub request_id: Option<String>,
    pub action: String,
    pub target_type: String,
    pub target_id: Option<Id>,
    pub partner_id: Option<Id>,
    pub tenant_id: Option<Id>,
    /// Changed fields before the change (secrets redacted).
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub before: Option<serde_json::Value>,
    /// Changed fields after the change (secrets redacted).
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub after: Option<serde_json::Value>,
    /// True when `before` and `after` were withheld because the caller may not read the
    /// target (it lacks the target's read permission).
    pub redacted: bool,
}

/// The permission that reads a target of `target_type` through its own API: the one its
/// routes require. `None` for kinds with no read API, whose values only `*` holders see.
pub fn target_read_permission(target_type: &str) -> Option<&'static str> {
    match target_type {
        "employee" => Some(perm::EMPLOYEE_READ.name),
        "user" => Some(perm::USER_READ.name),
        "tenant" => Some(perm::TENANT_READ.name),
        "partner" => Some(perm::AGENT_READ.name),
        "role" => Some(perm::ROLE_READ.name),
        "payroll_sheet" => Some(perm::PAYROLL_READ.name),
        _ => None,
    }
}

/// `entry` as `actor` may see it: values withheld without the target's read permission, and
/// secrets masked again in any case (entries written before a field joined the list).
pub fn visible_to(actor: &Actor, mut entry: AuditEntry) -> AuditEntry {
    let readable = match target_read_permission(&entry.target_type) {
        Some(permission) => actor.permissions.allows(permission),
        None => actor.permissions.iter().any(|p| p == "*"),
    };
    if readable {
        entry.before = entry.before.map(redact);
        entry.after = entry.after.map(redact);
    } else {
        entry.redacted = entry.before.is_some() || entry.after.is_some();
        entry.before = None;
        entry.after = None;
    }
    entry
}

#[derive(Debug, Clone, Default)]
pub struct AuditQuery {
    pub page: PageRequest,
    pub actor_user_id: Option<Id>,
    pub target_type: Option<String>,
    pub target_id: Option<Id>,
    pub action: Option<String>,
    pub from: Option<Timestamp>,
    pub to: Option<Timestamp>,
}

/// Reading stored audit entries, newest first. Partner callers see entries about their
/// partner and its tenants; tenant callers entries about their tenant.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait AuditRepo: Send + Sync + 'static {
    async fn list_audit(&self, scope: Party, query: AuditQuery) -> Result<Page<AuditEntry>>;
}

pub struct AuditService {
    repo: Arc<dyn AuditRepo>,
}

impl AuditService {
    pub fn new(repo: Arc<dyn AuditRepo>) -> Self {
        AuditService { repo }
    }

    pub async fn list(&self, actor: &Actor, query: AuditQuery) -> Result<Page<AuditEntry>> {
        Ok(self.repo.list_audit(actor.party, query).await?.map(|entry| visible_to(actor, entry)))
    }
}
