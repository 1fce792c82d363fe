//! `/api/v1/users`: users of the caller's scope, their roles and status.
use actix_web::web;
use atrium_kernel::{Party, PartyType, PartyView};
use atrium_org::{ListQuery, NewUser, OrgUser, UserPatch, UserQuery, UserRole, UserStatus};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

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

/// A user as listed. Password hashes never leave the server.
#[derive(Debug, Serialize, ToSchema)]
pub struct OrgUserView {
    pub id: i64,
    pub username: String,
    pub name: String,
    pub phone: Option<String>,
    pub email: Option<String>,
    pub party: PartyView,
    pub partner_id: Option<i64>,
    pub tenant_id: Option<i64>,
    pub status: UserStatus,
    pub roles: Vec<UserRole>,
    pub permissions: Vec<String>,
    pub chat_bound: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<OrgUser> for OrgUserView {
    fn from(u: OrgUser) -> Self {
        let (partner_id, tenant_id) = match u.party {
            Party::Platform => (None, None),
            Party::Partner { partner_id } => (Some(partner_id), None),
            Party::Tenant { tenant_id, partner_id } => (partner_id, Some(tenant_id)),
        };
        OrgUserView {
            id: u.id,
            username: u.username,
            name: u.name,
            phone: u.phone,
            email: u.email,
            party: u.party.into(),
            partner_id,
            tenant_id,
            status: u.status,
            roles: u.roles,
            permissions: u.permissions,
            chat_bound: u.chat_bound,
            created_at: u.created_at,
            updated_at: u.updated_at,
        }
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct UserListParams {
    pub page: Option<i64>,
    pub page_size: Option<i64>,
    /// Matches username, name, phone or e-mail.
    pub keyword: Option<String>,
    pub status: Option<UserStatus>,
    pub party_type: Option<PartyType>,
    pub partner_id: Option<i64>,
    pub tenant_id: Option<i64>,
    /// `id`, `created_at`, `username` or `name`, `-` for descending; default `-id`.
    pub sort: Option<String>,
}

/// List users.
#[utoipa::path(get, path = "/api/v1/users", tag = "users", params(UserListParams), security(("bearer" = [])),
    responses((status = 200, body = inline(atrium_kernel::Page<OrgUserView>)), (status = 401), (status = 403)))]
pub async fn list(state: web::Data<AppState>, auth: Authorized<UserRead>, q: web::Query<UserListParams>) -> ApiResult {
    let q = q.into_inner();
    let query = UserQuery {
        list: ListQuery::parse(q.page, q.page_size, q.keyword, q.sort.as_deref())?,
        status: q.status,
        party_type: q.party_type,
        partner_id: q.partner_id,
        tenant_id: q.tenant_id,
    };
    ok(state.users.list(&auth.actor, query).await?.map(OrgUserView::from))
}

/// User detail.
#[utoipa::path(get, path = "/api/v1/users/{id}", tag = "users", params(IdPath), security(("bearer" = [])),
    responses((status = 200, body = OrgUserView), (status = 404)))]
pub async fn get(state: web::Data<AppState>, auth: Authorized<UserRead>, id: web::Path<i64>) -> ApiResult {
    ok(OrgUserView::from(state.users.get(&auth.actor, id.into_inner()).await?))
}

/// Create a user in the caller's scope, with roles the caller may grant.
#[utoipa::path(post, path = "/api/v1/users", tag = "users", request_body = NewUser, security(("bearer" = [])),
    responses((status = 200, body = OrgUserView), (status = 400), (status = 403, description = "A role grants permissions you lack"), (status = 409, description = "Username, phone or e-mail taken")))]
pub async fn create(state: web::Data<AppState>, auth: Authorized<UserCreate>, body: Json<NewUser>) -> ApiResult {
    ok(OrgUserView::from(state.users.create(&auth.actor, body.0).await?))
}

/// Update a user. Disabling, a new password or new roles take effect on the user's next request.
#[utoipa::path(put, path = "/api/v1/users/{id}", tag = "users", params(IdPath), request_body = UserPatch, security(("bearer" = [])),
    responses((status = 200, body = OrgUserView), (status = 400), (status = 403), (status = 404), (status = 409)))]
pub async fn update(state: web::Data<AppState>, auth: Authorized<UserUpdate>, id: web::Path<i64>, body: Json<UserPatch>) -> ApiResult {
    ok(OrgUserView::from(state.users.update(&auth.actor, id.into_inner(), body.0).await?))
}

/// Delete a user; its sessions end at once. Deleting yourself is refused (409).
#[utoipa::path(delete, path = "/api/v1/users/{id}", tag = "users", params(IdPath), security(("bearer" = [])),
    responses((status = 200), (status = 403), (status = 404), (status = 409)))]
pub async fn delete(state: web::Data<AppState>, auth: Authorized<UserDelete>, id: web::Path<i64>) -> ApiResult {
    state.users.delete(&auth.actor, id.into_inner()).await?;
    ok(serde_json::json!({}))
}
