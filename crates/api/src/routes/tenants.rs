//! `/api/v1/tenants`: tenants (enterprises), scoped to the caller's party.
use crate::query::Query;
use actix_web::web;
use atrium_org::{NewTenant, Tenant, TenantListParams, TenantPatch, TenantQuery};

use super::{DeleteParams, IdPath};
use crate::app::AppState;
use crate::envelope::{ApiResult, ok};
use crate::extract::{Authorized, Json};
use crate::permission;
use atrium_kernel::permission as perm;

permission!(
    TenantRead = perm::TENANT_READ,
    TenantCreate = perm::TENANT_CREATE,
    TenantUpdate = perm::TENANT_UPDATE,
    TenantDelete = perm::TENANT_DELETE
);

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/tenants").route(web::get().to(list)).route(web::post().to(create)))
        .service(web::resource("/tenants/{id}").route(web::get().to(get)).route(web::put().to(update)).route(web::delete().to(delete)));
}

/// List tenants.
#[utoipa::path(get, path = "/api/v1/tenants", tag = "tenants", params(TenantListParams), security(("bearer" = ["tenant:read"])),
    responses((status = 200, body = inline(atrium_kernel::Page<Tenant>)), (status = 401), (status = 403)))]
pub async fn list(state: web::Data<AppState>, auth: Authorized<TenantRead>, q: Query<TenantListParams>) -> ApiResult {
    ok(state.tenants.list(&auth.actor, TenantQuery::try_from(q.into_inner())?).await?)
}

/// Tenant detail.
#[utoipa::path(get, path = "/api/v1/tenants/{id}", tag = "tenants", params(IdPath), security(("bearer" = ["tenant:read"])),
    responses((status = 200, body = Tenant), (status = 404)))]
pub async fn get(state: web::Data<AppState>, auth: Authorized<TenantRead>, id: web::Path<i64>) -> ApiResult {
    ok(state.tenants.get(&auth.actor, id.into_inner()).await?)
}

/// Create a tenant under the caller's partner (or any partner, for platform users).
#[utoipa::path(post, path = "/api/v1/tenants", tag = "tenants", request_body = NewTenant, security(("bearer" = ["tenant:create"])),
    responses((status = 200, body = Tenant), (status = 400), (status = 403), (status = 409, description = "Credit code already used")))]
pub async fn create(state: web::Data<AppState>, auth: Authorized<TenantCreate>, body: Json<NewTenant>) -> ApiResult {
    ok(state.tenants.create(&auth.actor, body.0).await?)
}

/// Update a tenant; absent fields stay, `null` clears. Activating a pending tenant is
/// `{"status":"active"}` by a platform or partner user.
#[utoipa::path(put, path = "/api/v1/tenants/{id}", tag = "tenants", params(IdPath), request_body = TenantPatch, security(("bearer" = ["tenant:update"])),
    responses((status = 200, body = Tenant), (status = 400), (status = 403), (status = 404), (status = 409)))]
pub async fn update(state: web::Data<AppState>, auth: Authorized<TenantUpdate>, id: web::Path<i64>, body: Json<TenantPatch>) -> ApiResult {
    ok(state.tenants.update(&auth.actor, id.into_inner(), body.0).await?)
}

/// Delete a tenant. 409 while it has employees or users, unless `cascade=true`.
#[utoipa::path(delete, path = "/api/v1/tenants/{id}", tag = "tenants", params(IdPath, DeleteParams), security(("bearer" = ["tenant:delete"])),
    responses((status = 200), (status = 404), (status = 409)))]
pub async fn delete(state: web::Data<AppState>, auth: Authorized<TenantDelete>, id: web::Path<i64>, q: Query<DeleteParams>) -> ApiResult {
    state.tenants.delete(&auth.actor, id.into_inner(), q.cascade.unwrap_or(false)).await?;
    ok(serde_json::json!({}))
}
