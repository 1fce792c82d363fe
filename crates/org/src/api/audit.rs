//! `/audit-logs` requests.
use atrium_kernel::{Error, PageRequest};
use chrono::{DateTime, Utc};
use serde::Deserialize;

use crate::model::AuditQuery;

/// `GET /audit-logs` parameters.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct AuditListParams {
    /// 1-based page number; default 1.
    pub page: Option<i64>,
    /// Entries per page; default 20, at most 100.
    pub page_size: Option<i64>,
    /// Entries by this user.
    pub actor_id: Option<i64>,
    /// `user`, `partner`, `tenant`, `employee`, `role`, `session`, …
    pub target_type: Option<String>,
    /// Entries about this record (with `target_type`).
    pub target_id: Option<i64>,
    /// e.g. `tenant.update`.
    pub action: Option<String>,
    /// RFC 3339; entries at or after.
    pub from: Option<DateTime<Utc>>,
    /// RFC 3339; entries before.
    pub to: Option<DateTime<Utc>>,
}

/// Validates the paging; a 400 naming the offending parameter otherwise.
impl TryFrom<AuditListParams> for AuditQuery {
    type Error = Error;
    fn try_from(p: AuditListParams) -> Result<Self, Error> {
        Ok(AuditQuery {
            page: PageRequest::new(p.page, p.page_size)?,
            actor_user_id: p.actor_id,
            target_type: p.target_type,
            target_id: p.target_id,
            action: p.action,
            from: p.from,
            to: p.to,
        })
    }
}
