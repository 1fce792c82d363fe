//! Entries of the audit trail. They are written by the repositories, in the transaction of
//! the change they record; there is no way to edit or delete them.
use atrium_kernel::{Id, PageRequest, Timestamp};
use serde::Serialize;

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
