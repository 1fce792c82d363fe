//! `/api/v1/audit-logs`: the append-only audit trail, scoped to the caller's party.
use crate::query::Query;
use actix_web::web;
use atrium_org::{AuditEntry, AuditListParams, AuditQuery};

use crate::app::AppState;
use crate::envelope::{ApiResult, ok};
use crate::extract::Authorized;
use crate::permission;
use atrium_kernel::permission as perm;

permission!(AuditRead = perm::AUDIT_READ);

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/audit-logs").route(web::get().to(list)));
}

/// The audit trail, newest first.
#[utoipa::path(get, path = "/api/v1/audit-logs", tag = "audit", params(AuditListParams), security(("bearer" = ["audit:read"])),
    responses((status = 200, body = inline(atrium_kernel::Page<AuditEntry>)), (status = 403)))]
pub async fn list(state: web::Data<AppState>, auth: Authorized<AuditRead>, q: Query<AuditListParams>) -> ApiResult {
    ok(state.audit.list(&auth.actor, AuditQuery::try_from(q.into_inner())?).await?)
}
