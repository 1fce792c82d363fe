//! Entries of the audit trail. They are written by the repositories, in the transaction of
//! the change they record; there is no way to edit or delete them.
use atrium_kernel::{Id, PageRequest, Timestamp};
use serde::Serialize;

/// One entry of the audit trail: who changed what, when, from where, and how.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuditEntry {
    /// The entry's id.
    pub id: Id,
    /// When the change happened.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub at: Timestamp,
    /// The user who made the change; null for the system.
    pub actor_user_id: Option<Id>,
    /// The client's address.
    pub ip: Option<String>,
    /// The request's id, to find its log lines.
    pub request_id: Option<String>,
    /// `<resource>.<verb>`, e.g. `tenant.update`, `session.login`.
    pub action: String,
    /// What kind of record changed: `tenant`, `user`, `payroll_sheet`, ….
    pub target_type: String,
    /// The record that changed.
    pub target_id: Option<Id>,
    /// The partner owning the record, which decides who may read the entry.
    pub partner_id: Option<Id>,
    /// The tenant owning the record, which decides who may read the entry.
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

/// A page of the audit trail, as handed to the repository; newest first. Every filter narrows
/// the caller's scope.
#[derive(Debug, Clone, Default)]
pub struct AuditQuery {
    /// Which page.
    pub page: PageRequest,
    /// Only changes by this user.
    pub actor_user_id: Option<Id>,
    /// Only changes of this kind of record.
    pub target_type: Option<String>,
    /// Only changes of this record.
    pub target_id: Option<Id>,
    /// Only this action.
    pub action: Option<String>,
    /// Only changes at or after this time.
    pub from: Option<Timestamp>,
    /// Only changes before this time.
    pub to: Option<Timestamp>,
}
