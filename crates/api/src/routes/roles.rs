//! `/api/v1/roles`: built-in and custom roles, and the permission catalogue.
use crate::query::Query;
use actix_web::web;
use atrium_identity::Role;
use atrium_identity::api::{NewRole, PermissionInfo, RoleListParams, RolePatch};
use atrium_kernel::PageRequest;

use super::IdPath;
use crate::app::AppState;
use crate::envelope::{ApiResult, ok};
use crate::extract::{Authorized, Json};
use crate::permission;
use atrium_kernel::permission as perm;

permission!(RoleRead = perm::ROLE_READ, RoleCreate = perm::ROLE_CREATE, RoleUpdate = perm::ROLE_UPDATE, RoleDelete = perm::ROLE_DELETE);

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/roles").route(web::get().to(list)).route(web::post().to(create)))
        .service(web::resource("/roles/permissions").route(web::get().to(permissions)))
        .service(web::resource("/roles/{id}").route(web::get().to(get)).route(web::put().to(update)).route(web::delete().to(delete)));
}

/// Roles the caller can see and hand out.
#[utoipa::path(get, path = "/api/v1/roles", tag = "roles", params(RoleListParams), security(("bearer" = ["role:read"])),
    responses((status = 200, body = inline(atrium_kernel::Page<Role>)), (status = 403)))]
pub async fn list(state: web::Data<AppState>, auth: Authorized<RoleRead>, q: Query<RoleListParams>) -> ApiResult {
    ok(state.roles.list(&auth.actor, PageRequest::new(q.page, q.page_size)?).await?)
}

/// The permission catalogue.
#[utoipa::path(get, path = "/api/v1/roles/permissions", tag = "roles", security(("bearer" = ["role:read"])),
    responses((status = 200, body = Vec<PermissionInfo>)))]
pub async fn permissions(_auth: Authorized<RoleRead>) -> ApiResult {
    ok(perm::CATALOGUE.iter().map(|p| PermissionInfo { name: p.name, description: p.description }).collect::<Vec<_>>())
}

/// Role detail.
#[utoipa::path(get, path = "/api/v1/roles/{id}", tag = "roles", params(IdPath), security(("bearer" = ["role:read"])),
    responses((status = 200, body = Role), (status = 404)))]
pub async fn get(state: web::Data<AppState>, auth: Authorized<RoleRead>, id: web::Path<i64>) -> ApiResult {
    ok(state.roles.get(&auth.actor, id.into_inner()).await?)
}

/// Create a custom role owned by the caller's party; it may hold only permissions the caller holds.
#[utoipa::path(post, path = "/api/v1/roles", tag = "roles", request_body = NewRole, security(("bearer" = ["role:create"])),
    responses((status = 200, body = Role), (status = 400), (status = 403), (status = 409)))]
pub async fn create(state: web::Data<AppState>, auth: Authorized<RoleCreate>, body: Json<NewRole>) -> ApiResult {
    ok(state.roles.create(&auth.actor, body.0).await?)
}

/// Update a custom role (built-in roles are fixed: 409).
#[utoipa::path(put, path = "/api/v1/roles/{id}", tag = "roles", params(IdPath), request_body = RolePatch, security(("bearer" = ["role:update"])),
    responses((status = 200, body = Role), (status = 403), (status = 404), (status = 409)))]
pub async fn update(state: web::Data<AppState>, auth: Authorized<RoleUpdate>, id: web::Path<i64>, body: Json<RolePatch>) -> ApiResult {
    ok(state.roles.update(&auth.actor, id.into_inner(), body.0).await?)
}

/// Delete a custom role nobody holds.
#[utoipa::path(delete, path = "/api/v1/roles/{id}", tag = "roles", params(IdPath), security(("bearer" = ["role:delete"])),
    responses((status = 200), (status = 404), (status = 409)))]
pub async fn delete(state: web::Data<AppState>, auth: Authorized<RoleDelete>, id: web::Path<i64>) -> ApiResult {
    state.roles.delete(&auth.actor, id.into_inner()).await?;
    ok(serde_json::json!({}))
}
