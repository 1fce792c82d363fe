//! `/api/v1/miniprogram/campaigns`: release campaigns, one template version shipped to many
//! tenants' mini-programs in waves (platform and partner callers).
use crate::query::Query;
use actix_web::web;
use atrium_miniprogram::campaign::{
    CampaignListParams, CampaignRetry, CampaignTenantListParams, CampaignTenantView, CampaignView, NewCampaign,
};

use super::IdPath;
use crate::app::AppState;
use crate::envelope::{ApiResult, ok};
use crate::extract::{Authorized, JsonBody};
use crate::permission;
use atrium_kernel::permission as perm;

permission!(MiniprogramRead = perm::MINIPROGRAM_READ, MiniprogramPublish = perm::MINIPROGRAM_PUBLISH);

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/miniprogram/campaigns").route(web::post().to(create_campaign)).route(web::get().to(list_campaigns)))
        .service(web::resource("/miniprogram/campaigns/{id}").route(web::get().to(campaign)))
        .service(web::resource("/miniprogram/campaigns/{id}/tenants").route(web::get().to(campaign_tenants)))
        .service(web::resource("/miniprogram/campaigns/{id}/start").route(web::post().to(start_campaign)))
        .service(web::resource("/miniprogram/campaigns/{id}/pause").route(web::post().to(pause_campaign)))
        .service(web::resource("/miniprogram/campaigns/{id}/resume").route(web::post().to(resume_campaign)))
        .service(web::resource("/miniprogram/campaigns/{id}/advance").route(web::post().to(advance_campaign)))
        .service(web::resource("/miniprogram/campaigns/{id}/cancel").route(web::post().to(cancel_campaign)))
        .service(web::resource("/miniprogram/campaigns/{id}/retry").route(web::post().to(retry_campaign)));
}

/// Create a campaign (a `draft`): a version of a library template for the selected tenants'
/// mini-programs, in waves. `tenants` is `{"all": true}`, `{"partner_id": n}` or
/// `{"tenant_ids": [..]}`; the first two take the tenants in scope whose mini-program is
/// authorised. Default waves: 5 % (at least one tenant), then the rest, in full.
#[utoipa::path(post, path = "/api/v1/miniprogram/campaigns", tag = "miniprogram", request_body = NewCampaign,
    security(("bearer" = ["miniprogram:publish"])),
    responses((status = 200, body = CampaignView), (status = 403, description = "A tenant caller"),
        (status = 404, description = "A template not in the library, or a tenant or partner that is not yours"),
        (status = 409, description = "A tenant is in another running or paused campaign")))]
pub async fn create_campaign(state: web::Data<AppState>, auth: Authorized<MiniprogramPublish>, body: JsonBody<NewCampaign>) -> ApiResult {
    ok(state.campaigns.create(&auth.actor, body.value).await?)
}

/// List campaigns.
#[utoipa::path(get, path = "/api/v1/miniprogram/campaigns", tag = "miniprogram", params(CampaignListParams),
    security(("bearer" = ["miniprogram:read"])), responses((status = 200, body = inline(atrium_kernel::Page<CampaignView>))))]
pub async fn list_campaigns(state: web::Data<AppState>, auth: Authorized<MiniprogramRead>, q: Query<CampaignListParams>) -> ApiResult {
    ok(state.campaigns.list(&auth.actor, q.into_inner()).await?)
}

/// One campaign, with its waves and its tenants' counts per status.
#[utoipa::path(get, path = "/api/v1/miniprogram/campaigns/{id}", tag = "miniprogram", params(IdPath),
    security(("bearer" = ["miniprogram:read"])), responses((status = 200, body = CampaignView), (status = 404)))]
pub async fn campaign(state: web::Data<AppState>, auth: Authorized<MiniprogramRead>, id: web::Path<i64>) -> ApiResult {
    ok(state.campaigns.get(&auth.actor, id.into_inner()).await?)
}

/// A campaign's tenants and their progress; each tenant's upload, audit and release tasks
/// are the single-tenant routes' tasks.
#[utoipa::path(get, path = "/api/v1/miniprogram/campaigns/{id}/tenants", tag = "miniprogram", params(IdPath, CampaignTenantListParams),
    security(("bearer" = ["miniprogram:read"])),
    responses((status = 200, body = inline(atrium_kernel::Page<CampaignTenantView>)), (status = 404)))]
pub async fn campaign_tenants(
    state: web::Data<AppState>,
    auth: Authorized<MiniprogramRead>,
    id: web::Path<i64>,
    q: Query<CampaignTenantListParams>,
) -> ApiResult {
    ok(state.campaigns.tenants(&auth.actor, id.into_inner(), q.into_inner()).await?)
}

/// Start a draft campaign; its first wave starts at once.
#[utoipa::path(post, path = "/api/v1/miniprogram/campaigns/{id}/start", tag = "miniprogram", params(IdPath),
    security(("bearer" = ["miniprogram:publish"])),
    responses((status = 200, body = CampaignView), (status = 404),
        (status = 409, description = "Not a draft, or a tenant is in another running or paused campaign")))]
pub async fn start_campaign(state: web::Data<AppState>, auth: Authorized<MiniprogramPublish>, id: web::Path<i64>) -> ApiResult {
    ok(state.campaigns.start(&auth.actor, id.into_inner()).await?)
}

/// Pause a running campaign (`manual`): no new steps; steps under way finish.
#[utoipa::path(post, path = "/api/v1/miniprogram/campaigns/{id}/pause", tag = "miniprogram", params(IdPath),
    security(("bearer" = ["miniprogram:publish"])),
    responses((status = 200, body = CampaignView), (status = 404), (status = 409, description = "Not running")))]
pub async fn pause_campaign(state: web::Data<AppState>, auth: Authorized<MiniprogramPublish>, id: web::Path<i64>) -> ApiResult {
    ok(state.campaigns.pause(&auth.actor, id.into_inner()).await?)
}

/// Resume a paused campaign where it stopped.
#[utoipa::path(post, path = "/api/v1/miniprogram/campaigns/{id}/resume", tag = "miniprogram", params(IdPath),
    security(("bearer" = ["miniprogram:publish"])),
    responses((status = 200, body = CampaignView), (status = 404), (status = 409, description = "Not paused")))]
pub async fn resume_campaign(state: web::Data<AppState>, auth: Authorized<MiniprogramPublish>, id: web::Path<i64>) -> ApiResult {
    ok(state.campaigns.resume(&auth.actor, id.into_inner()).await?)
}

/// Start the next wave, once every tenant of the current one is released, rejected, failed
/// or skipped.
#[utoipa::path(post, path = "/api/v1/miniprogram/campaigns/{id}/advance", tag = "miniprogram", params(IdPath),
    security(("bearer" = ["miniprogram:publish"])),
    responses((status = 200, body = CampaignView), (status = 404),
        (status = 409, description = "The current wave has not settled, no wave is left, or the campaign is not running or paused")))]
pub async fn advance_campaign(state: web::Data<AppState>, auth: Authorized<MiniprogramPublish>, id: web::Path<i64>) -> ApiResult {
    ok(state.campaigns.advance(&auth.actor, id.into_inner()).await?)
}

/// Cancel a campaign: no new steps, tenants not started are `skipped`, what was released
/// stays released.
#[utoipa::path(post, path = "/api/v1/miniprogram/campaigns/{id}/cancel", tag = "miniprogram", params(IdPath),
    security(("bearer" = ["miniprogram:publish"])),
    responses((status = 200, body = CampaignView), (status = 404), (status = 409, description = "Completed or cancelled already")))]
pub async fn cancel_campaign(state: web::Data<AppState>, auth: Authorized<MiniprogramPublish>, id: web::Path<i64>) -> ApiResult {
    ok(state.campaigns.cancel(&auth.actor, id.into_inner()).await?)
}

/// Start failed, rejected and pre-flight-failed tenants of the started waves again (only
/// `tenant_ids` when given), from where they stopped; a campaign paused for rejections or
/// failures, or completed, runs again.
#[utoipa::path(post, path = "/api/v1/miniprogram/campaigns/{id}/retry", tag = "miniprogram", params(IdPath), request_body = CampaignRetry,
    security(("bearer" = ["miniprogram:publish"])),
    responses((status = 200, body = CampaignView), (status = 404), (status = 409, description = "No wave started yet, or cancelled")))]
pub async fn retry_campaign(
    state: web::Data<AppState>,
    auth: Authorized<MiniprogramPublish>,
    id: web::Path<i64>,
    body: JsonBody<CampaignRetry>,
) -> ApiResult {
    ok(state.campaigns.retry(&auth.actor, id.into_inner(), body.value).await?)
}
