//! `/api/v1/audit-logs`: the append-only audit trail, scoped to the caller's party.
use actix_web::web;
use atrium_kernel::PageRequest;
use atrium_org::{AuditEntry, AuditQuery};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::app::AppState;
use crate::envelope::{ApiResult, ok};
use crate::extract::Authorized;
use crate::permission;
use atrium_kernel::permission as perm;

permission!(AuditRead = perm::AUDIT_READ);

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/audit-logs").route(web::get().to(list)));
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct AuditListParams {
    pub page: Option<i64>,
    pub page_size: Option<i64>,
    /// Entries by this user.
    pub actor_id: Option<i64>,
    /// `user`, `partner`, `tenant`, `employee`, `role`, `session`, …
    pub target_type: Option<String>,
    pub target_id: Option<i64>,
    /// e.g. `tenant.update`.
    pub action: Option<String>,
    /// RFC 3339; entries at or after.
    pub from: Option<DateTime<Utc>>,
    /// RFC 3339; entries before.
    pub to: Option<DateTime<Utc>>,
}

/// The audit trail, newest first.
#[utoipa::path(get, path = "/api/v1/audit-logs", tag = "audit", params(AuditListParams), security(("bearer" = [])),
    responses((status = 200, body = inline(atrium_kernel::Page<AuditEntry>)), (status = 403)))]
pub async fn list(state: web::Data<AppState>, auth: Authorized<AuditRead>, q: web::Query<AuditListParams>) -> ApiResult {
    let q = q.into_inner();
    let query = AuditQuery {
        page: PageRequest::new(q.page, q.page_size)?,
        actor_user_id: q.actor_id,
        target_type: q.target_type,
        target_id: q.target_id,
        action: q.action,
        from: q.from,
        to: q.to,
    };
    ok(state.audit.list(&auth.actor, query).await?)
}
