//! `/api/v1/partners`: partners (agents), scoped to the caller's party.
use crate::query::Query;
use actix_web::web;
use atrium_org::{NewPartner, Partner, PartnerListParams, PartnerPatch, PartnerQuery};
use atrium_payments::{EarningsParams, EarningsView, SharePlanPut, SharePlanView};

use super::{DeleteParams, IdPath};
use crate::app::AppState;
use crate::envelope::{ApiResult, ok};
use crate::extract::{Authorized, Json};
use crate::permission;
use atrium_kernel::permission as perm;

permission!(
    AgentRead = perm::AGENT_READ,
    AgentCreate = perm::AGENT_CREATE,
    AgentUpdate = perm::AGENT_UPDATE,
    AgentDelete = perm::AGENT_DELETE
);

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/partners").route(web::get().to(list)).route(web::post().to(create)))
        .service(web::resource("/partners/{id}").route(web::get().to(get)).route(web::put().to(update)).route(web::delete().to(delete)))
        .service(web::resource("/partners/{id}/share-plan").route(web::get().to(get_share_plan)).route(web::put().to(put_share_plan)))
        .service(web::resource("/partners/{id}/earnings").route(web::get().to(earnings)));
}

/// List partners.
#[utoipa::path(get, path = "/api/v1/partners", tag = "partners", params(PartnerListParams), security(("bearer" = ["agent:read"])),
    responses((status = 200, body = inline(atrium_kernel::Page<Partner>)), (status = 401), (status = 403)))]
pub async fn list(state: web::Data<AppState>, auth: Authorized<AgentRead>, q: Query<PartnerListParams>) -> ApiResult {
    ok(state.partners.list(&auth.actor, PartnerQuery::try_from(q.into_inner())?).await?)
}

/// Partner detail.
#[utoipa::path(get, path = "/api/v1/partners/{id}", tag = "partners", params(IdPath), security(("bearer" = ["agent:read"])),
    responses((status = 200, body = Partner), (status = 404)))]
pub async fn get(state: web::Data<AppState>, auth: Authorized<AgentRead>, id: web::Path<i64>) -> ApiResult {
    ok(state.partners.get(&auth.actor, id.into_inner()).await?)
}

/// Create a partner (platform users only).
#[utoipa::path(post, path = "/api/v1/partners", tag = "partners", request_body = NewPartner, security(("bearer" = ["agent:create"])),
    responses((status = 200, body = Partner), (status = 400), (status = 403)))]
pub async fn create(state: web::Data<AppState>, auth: Authorized<AgentCreate>, body: Json<NewPartner>) -> ApiResult {
    ok(state.partners.create(&auth.actor, body.0).await?)
}

/// Update a partner; absent fields stay, `null` clears.
#[utoipa::path(put, path = "/api/v1/partners/{id}", tag = "partners", params(IdPath), request_body = PartnerPatch, security(("bearer" = ["agent:update"])),
    responses((status = 200, body = Partner), (status = 400), (status = 404)))]
pub async fn update(state: web::Data<AppState>, auth: Authorized<AgentUpdate>, id: web::Path<i64>, body: Json<PartnerPatch>) -> ApiResult {
    ok(state.partners.update(&auth.actor, id.into_inner(), body.0).await?)
}

/// Delete a partner. 409 while it has tenants or users, unless `cascade=true`.
#[utoipa::path(delete, path = "/api/v1/partners/{id}", tag = "partners", params(IdPath, DeleteParams), security(("bearer" = ["agent:delete"])),
    responses((status = 200), (status = 404), (status = 409)))]
pub async fn delete(state: web::Data<AppState>, auth: Authorized<AgentDelete>, id: web::Path<i64>, q: Query<DeleteParams>) -> ApiResult {
    state.partners.delete(&auth.actor, id.into_inner(), q.cascade.unwrap_or(false)).await?;
    ok(serde_json::json!({}))
}

/// The partner's share plan: its commission of its sub-merchant tenants' payments, the
/// platform's rate for them, where the commission goes, and the plan's version. The platform
/// reads any partner's, a partner its own; 404 for anyone else, and before a plan is set.
#[utoipa::path(get, path = "/api/v1/partners/{id}/share-plan", tag = "partners", params(IdPath), security(("bearer" = ["agent:read"])),
    responses((status = 200, body = SharePlanView), (status = 404, description = "No such partner in your scope, or no plan yet")))]
pub async fn get_share_plan(state: web::Data<AppState>, auth: Authorized<AgentRead>, id: web::Path<i64>) -> ApiResult {
    ok(state.payments.get_share_plan(&auth.actor, id.into_inner()).await?)
}

/// Set the partner's share plan (platform users only; a partner reads its own and never sets
/// it). Each call stores a new version; an absent rate follows the service provider's default.
/// Refused (409 `over_max_ratio`) when it raises what a sub-merchant tenant of the partner
/// would share above that sub-merchant's `max_ratio` on the pay platform.
#[utoipa::path(put, path = "/api/v1/partners/{id}/share-plan", tag = "partners", params(IdPath), request_body = SharePlanPut,
    security(("bearer" = ["agent:update"])),
    responses((status = 200, body = SharePlanView), (status = 400), (status = 403, description = "Not a platform user"), (status = 404),
        (status = 409, description = "Over a sub-merchant's max_ratio, or changed meanwhile"), (status = 502)))]
pub async fn put_share_plan(
    state: web::Data<AppState>,
    auth: Authorized<AgentUpdate>,
    id: web::Path<i64>,
    body: Json<SharePlanPut>,
) -> ApiResult {
    ok(state.payments.put_share_plan(&auth.actor, id.into_inner(), body.0).await?)
}

/// The partner's statement: its commission of its tenants' sub-merchant payments that
/// succeeded from `from` to `to` (China Standard Time days, inclusive), by day or by tenant,
/// each payment as it stands now (paid, refunded, and the commission shared, returned before
/// refunds, pending and failed; `net` = shared − returned). The platform reads any partner's,
/// a partner its own; 404 for anyone else.
#[utoipa::path(get, path = "/api/v1/partners/{id}/earnings", tag = "partners", params(IdPath, EarningsParams),
    security(("bearer" = ["agent:read"])),
    responses((status = 200, body = EarningsView), (status = 400, description = "A missing or malformed day, `to` before `from`, or more than 366 days"),
        (status = 404, description = "No such partner in your scope")))]
pub async fn earnings(state: web::Data<AppState>, auth: Authorized<AgentRead>, id: web::Path<i64>, q: Query<EarningsParams>) -> ApiResult {
    ok(state.payments.partner_earnings(&auth.actor, id.into_inner(), q.into_inner()).await?)
}
