//! `/api/v1/users`: users of the caller's scope, their roles and status.
use crate::query::Query;
use actix_web::web;
use atrium_identity::UserQuery;
use atrium_identity::api::{ManagedUserView, NewUser, UserListParams, UserPatch};

use super::IdPath;
use crate::app::AppState;
use crate::envelope::{ApiResult, ok};
use crate::extract::{Authorized, Json};
use crate::permission;
use atrium_kernel::permission as perm;

permission!(UserRead = perm::USER_READ, UserCreate = perm::USER_CREATE, UserUpdate = perm::USER_UPDATE, UserDelete = perm::USER_DELETE);

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/users").route(web::get().to(list)).route(web::post().to(create)))
        .service(web::resource("/users/{id}").route(web::get().to(get)).route(web::put().to(update)).route(web::delete().to(delete)));
}

/// List users.
#[utoipa::path(get, path = "/api/v1/users", tag = "users", params(UserListParams), security(("bearer" = ["user:read"])),
    responses((status = 200, body = inline(atrium_kernel::Page<ManagedUserView>)), (status = 401), (status = 403)))]
pub async fn list(state: web::Data<AppState>, auth: Authorized<UserRead>, q: Query<UserListParams>) -> ApiResult {
    ok(state.users.list(&auth.actor, UserQuery::try_from(q.into_inner())?).await?.map(ManagedUserView::from))
}

/// User detail.
#[utoipa::path(get, path = "/api/v1/users/{id}", tag = "users", params(IdPath), security(("bearer" = ["user:read"])),
    responses((status = 200, body = ManagedUserView), (status = 404)))]
pub async fn get(state: web::Data<AppState>, auth: Authorized<UserRead>, id: web::Path<i64>) -> ApiResult {
    ok(ManagedUserView::from(state.users.get(&auth.actor, id.into_inner()).await?))
}

/// Create a user in the caller's scope, with roles the caller may grant.
#[utoipa::path(post, path = "/api/v1/users", tag = "users", request_body = NewUser, security(("bearer" = ["user:create"])),
    responses((status = 200, body = ManagedUserView), (status = 400), (status = 403, description = "A role grants permissions you lack"), (status = 409, description = "Username, phone or e-mail taken")))]
pub async fn create(state: web::Data<AppState>, auth: Authorized<UserCreate>, body: Json<NewUser>) -> ApiResult {
    ok(ManagedUserView::from(state.users.create(&auth.actor, body.0).await?))
}

/// Update a user. Disabling, a new password or new roles take effect on the user's next request.
#[utoipa::path(put, path = "/api/v1/users/{id}", tag = "users", params(IdPath), request_body = UserPatch, security(("bearer" = ["user:update"])),
    responses((status = 200, body = ManagedUserView), (status = 400), (status = 403), (status = 404), (status = 409)))]
pub async fn update(state: web::Data<AppState>, auth: Authorized<UserUpdate>, id: web::Path<i64>, body: Json<UserPatch>) -> ApiResult {
    ok(ManagedUserView::from(state.users.update(&auth.actor, id.into_inner(), body.0).await?))
}

/// Delete a user; its sessions end at once. Deleting yourself is refused (409).
#[utoipa::path(delete, path = "/api/v1/users/{id}", tag = "users", params(IdPath), security(("bearer" = ["user:delete"])),
    responses((status = 200), (status = 403), (status = 404), (status = 409)))]
pub async fn delete(state: web::Data<AppState>, auth: Authorized<UserDelete>, id: web::Path<i64>) -> ApiResult {
    state.users.delete(&auth.actor, id.into_inner()).await?;
    ok(serde_json::json!({}))
}
