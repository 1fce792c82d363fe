//! `/api/v1/doc-projects` and `/api/v1/doc-tokens`: managing the document interface's
//! projects and API tokens. Reads need `doc:read`, changes `doc:manage`; everything is
//! scoped to the caller's own party.
use crate::query::Query;
use actix_web::web;
use atrium_docs::{CreateProjectRequest, CreateTokenRequest, IssuedTokenView, PageQuery, ProjectView, TokenView};
use atrium_kernel::Page;

use crate::app::AppState;
use crate::envelope::{ApiResult, ok};
use crate::extract::{Authorized, Json};

use atrium_kernel::permission as perm;

crate::permission!(DocRead = perm::DOC_READ, DocManage = perm::DOC_MANAGE);

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/doc-projects").route(web::get().to(list_projects)).route(web::post().to(create_project)))
        .service(web::resource("/doc-projects/{id}").route(web::get().to(get_project)))
        .service(web::resource("/doc-tokens").route(web::get().to(list_tokens)).route(web::post().to(create_token)))
        .service(web::resource("/doc-tokens/{id}").route(web::delete().to(revoke_token)));
}

/// The caller's party's projects, oldest first.
#[utoipa::path(get, path = "/api/v1/doc-projects", tag = "doc-admin", params(PageQuery), security(("bearer" = ["doc:read"])),
    responses((status = 200, body = Page<ProjectView>), (status = 400), (status = 401), (status = 403, description = "Missing doc:read")))]
pub async fn list_projects(state: web::Data<AppState>, auth: Authorized<DocRead>, q: Query<PageQuery>) -> ApiResult {
    ok(state.docs.list_projects(auth.actor.party, q.request()?).await?.map(ProjectView::from))
}

/// Create a project owned by the caller's party.
#[utoipa::path(post, path = "/api/v1/doc-projects", tag = "doc-admin", request_body = CreateProjectRequest, security(("bearer" = ["doc:manage"])),
    responses((status = 200, body = ProjectView), (status = 400), (status = 401), (status = 403, description = "Missing doc:manage")))]
pub async fn create_project(state: web::Data<AppState>, auth: Authorized<DocManage>, body: Json<CreateProjectRequest>) -> ApiResult {
    ok(ProjectView::from(state.docs.create_project(Some(&auth.actor), auth.actor.party.into(), &body.0.name).await?))
}

/// One of the caller's party's projects.
#[utoipa::path(get, path = "/api/v1/doc-projects/{id}", tag = "doc-admin", params(("id" = i64, Path)), security(("bearer" = ["doc:read"])),
    responses((status = 200, body = ProjectView), (status = 401), (status = 403), (status = 404, description = "Missing or another party's")))]
pub async fn get_project(state: web::Data<AppState>, auth: Authorized<DocRead>, id: web::Path<i64>) -> ApiResult {
    ok(ProjectView::from(state.docs.get_project(auth.actor.party, id.into_inner()).await?))
}

/// The caller's party's API tokens, oldest first. Token values are never listed.
#[utoipa::path(get, path = "/api/v1/doc-tokens", tag = "doc-admin", params(PageQuery), security(("bearer" = ["doc:read"])),
    responses((status = 200, body = Page<TokenView>), (status = 400), (status = 401), (status = 403, description = "Missing doc:read")))]
pub async fn list_tokens(state: web::Data<AppState>, auth: Authorized<DocRead>, q: Query<PageQuery>) -> ApiResult {
    let now = state.docs.now();
    ok(state.docs.list_tokens(auth.actor.party, q.request()?).await?.map(|t| TokenView::new(t, now)))
}

/// Issue an API token for the document interface, owned by the caller's party.
#[utoipa::path(post, path = "/api/v1/doc-tokens", tag = "doc-admin", request_body = CreateTokenRequest, security(("bearer" = ["doc:manage"])),
    responses((status = 200, body = IssuedTokenView), (status = 400), (status = 401), (status = 403, description = "Missing doc:manage"),
              (status = 404, description = "A listed project is missing or another party's")))]
pub async fn create_token(state: web::Data<AppState>, auth: Authorized<DocManage>, body: Json<CreateTokenRequest>) -> ApiResult {
    let issued = state.docs.create_token(Some(&auth.actor), auth.actor.party.into(), body.0).await?;
    ok(IssuedTokenView::new(issued, state.docs.now()))
}

/// Revoke a token: it answers 401 from the next request on. Revoking twice changes nothing.
#[utoipa::path(delete, path = "/api/v1/doc-tokens/{id}", tag = "doc-admin", params(("id" = i64, Path)), security(("bearer" = ["doc:manage"])),
    responses((status = 200, body = TokenView), (status = 401), (status = 403, description = "Missing doc:manage"),
              (status = 404, description = "Missing or another party's")))]
pub async fn revoke_token(state: web::Data<AppState>, auth: Authorized<DocManage>, id: web::Path<i64>) -> ApiResult {
    let token = state.docs.revoke_token(Some(&auth.actor), auth.actor.party, id.into_inner()).await?;
    ok(TokenView::new(token, state.docs.now()))
}
