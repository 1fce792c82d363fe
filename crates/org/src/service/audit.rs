//! Reading the audit trail. An entry never shows more of its target than the target's own
//! API would: `audit:read` reveals who did what to which record, while the before/after
//! values need the read permission of the target's kind (see [`target_read_permission`]).
use atrium_kernel::audit::redact;
use atrium_kernel::permission as perm;
use atrium_kernel::{Actor, Page, Result};
use std::sync::Arc;

use crate::model::{AuditEntry, AuditQuery};
use crate::ports::AuditRepo;

/// The permission that reads a target of `target_type` through its own API: the one its
/// routes require. `None` for kinds with no read API, whose values only `*` holders see.
pub fn target_read_permission(target_type: &str) -> Option<&'static str> {
    match target_type {
        "employee" => Some(perm::EMPLOYEE_READ.name),
        "user" => Some(perm::USER_READ.name),
        "tenant" => Some(perm::TENANT_READ.name),
        "partner" | "share_plan" => Some(perm::AGENT_READ.name),
        "role" => Some(perm::ROLE_READ.name),
        "payroll_sheet" => Some(perm::PAYROLL_READ.name),
        "order" => Some(perm::ORDER_READ.name),
        "payment_config" | "pay_provider" => Some(perm::MINIPROGRAM_PAYMENT.name),
        "miniprogram_settings" | "miniprogram_upload_task" | "miniprogram_audit_task" | "miniprogram_release_task" => {
            Some(perm::MINIPROGRAM_READ.name)
        }
        "payment_transaction" => Some(perm::MINIPROGRAM_PAYMENT.name),
        "payment_share" => Some(perm::PAYMENT_QUERY.name),
        "doc_project" | "doc_token" => Some(perm::DOC_MANAGE.name),
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

/// Reads the audit trail, scoped to the caller, each entry's values shown only to callers who
/// may read its target.
pub struct AuditService {
    repo: Arc<dyn AuditRepo>,
}

impl AuditService {
    /// A service over audit storage.
    pub fn new(repo: Arc<dyn AuditRepo>) -> Self {
        AuditService { repo }
    }

    /// One page of the entries the caller may read that match `query`, newest first, each as
    /// [`visible_to`] the caller.
    pub async fn list(&self, actor: &Actor, query: AuditQuery) -> Result<Page<AuditEntry>> {
        Ok(self.repo.list_audit(actor.party, query).await?.map(|entry| visible_to(actor, entry)))
    }
}
