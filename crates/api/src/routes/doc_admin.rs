//! `/api/v1/doc-projects` and `/api/v1/doc-tokens`: managing the document interface's
//! projects and API tokens. Reads need `doc:read`, changes `doc:manage`; everything is
//! scoped to the caller's own party.
use actix_web::web;
use atrium_docs::{ApiToken, Owner, Project, TokenRequest};
use atrium_kernel::StrEnum;
use atrium_kernel::{Page, PageRequest, Timestamp};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::app::AppState;
use crate::envelope::{ApiResult, ok};
use crate::extract::{Authorized, Json};
use atrium_kernel::PartyView;

use atrium_kernel::permission as perm;

crate::permission!(DocRead = perm::DOC_READ, DocManage = perm::DOC_MANAGE);

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/doc-projects").route(web::get().to(list_projects)).route(web::post().to(create_project)))
        .service(web::resource("/doc-projects/{id}").route(web::get().to(get_project)))
        .service(web::resource("/doc-tokens").route(web::get().to(list_tokens)).route(web::post().to(create_token)))
        .service(web::resource("/doc-tokens/{id}").route(web::delete().to(revoke_token)));
}

fn party(owner: Owner) -> PartyView {
    PartyView { party_type: owner.party_type(), id: owner.party_id() }
}

/// `page` (1-based, default 1) and `page_size` (default 20, at most 100).
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct PageQuery {
    pub page: Option<i64>,
    pub page_size: Option<i64>,
}

impl PageQuery {
    fn request(&self) -> Result<PageRequest, atrium_kernel::Error> {
        PageRequest::new(self.page, self.page_size)
    }
}

/// A document project (collection).
#[derive(Debug, Serialize, ToSchema)]
pub struct ProjectView {
    pub id: i64,
    pub name: String,
    /// The party that owns it; only that party's tokens reach it.
    pub party: PartyView,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<Project> for ProjectView {
    fn from(p: Project) -> Self {
        ProjectView { id: p.id, name: p.name, party: party(p.owner), created_at: p.created_at, updated_at: p.updated_at }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateProjectRequest {
    /// 1–255 characters.
    pub name: String,
}

/// The caller's party's projects, oldest first.
#[utoipa::path(get, path = "/api/v1/doc-projects", tag = "doc-admin", params(PageQuery), security(("bearer" = [])),
    responses((status = 200, body = Page<ProjectView>), (status = 400), (status = 401), (status = 403, description = "Missing doc:read")))]
pub async fn list_projects(state: web::Data<AppState>, auth: Authorized<DocRead>, q: web::Query<PageQuery>) -> ApiResult {
    ok(state.docs.list_projects(auth.actor.party, q.request()?).await?.map(ProjectView::from))
}

/// Create a project owned by the caller's party.
#[utoipa::path(post, path = "/api/v1/doc-projects", tag = "doc-admin", request_body = CreateProjectRequest, security(("bearer" = [])),
    responses((status = 200, body = ProjectView), (status = 400), (status = 401), (status = 403, description = "Missing doc:manage")))]
pub async fn create_project(state: web::Data<AppState>, auth: Authorized<DocManage>, body: Json<CreateProjectRequest>) -> ApiResult {
    ok(ProjectView::from(state.docs.create_project(auth.actor.party.into(), &body.0.name).await?))
}

/// One of the caller's party's projects.
#[utoipa::path(get, path = "/api/v1/doc-projects/{id}", tag = "doc-admin", params(("id" = i64, Path)), security(("bearer" = [])),
    responses((status = 200, body = ProjectView), (status = 401), (status = 403), (status = 404, description = "Missing or another party's")))]
pub async fn get_project(state: web::Data<AppState>, auth: Authorized<DocRead>, id: web::Path<i64>) -> ApiResult {
    ok(ProjectView::from(state.docs.get_project(auth.actor.party, id.into_inner()).await?))
}

/// An API token as listed: never its value.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenView {
    pub id: i64,
    pub name: String,
    pub party: PartyView,
    /// The projects it is limited to; null when it reaches every project of its party.
    pub project_ids: Option<Vec<i64>>,
    /// `active`, `expired` or `revoked`.
    pub status: &'static str,
    /// The user who issued it; null when issued from the command line.
    pub created_by: Option<i64>,
    pub created_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
    /// Updated at most once a minute.
    pub last_used_at: Option<DateTime<Utc>>,
}

impl TokenView {
    fn new(t: ApiToken, now: Timestamp) -> Self {
        TokenView {
            status: t.status(now).as_str(),
            project_ids: t.projects.ids().map(<[i64]>::to_vec),
            id: t.id,
            name: t.name,
            party: party(t.owner),
            created_by: t.created_by,
            created_at: t.created_at,
            expires_at: t.expires_at,
            revoked_at: t.revoked_at,
            last_used_at: t.last_used_at,
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateTokenRequest {
    /// A label, 1–255 characters.
    pub name: String,
    /// Limit the token to these projects of your party; leave out for all of them.
    pub project_ids: Option<Vec<i64>>,
    /// When the token stops working (RFC 3339, in the future); leave out for never.
    pub expires_at: Option<DateTime<Utc>>,
}

/// A new token: `token` is its value, shown this once and never again.
#[derive(Debug, Serialize, ToSchema)]
pub struct IssuedTokenView {
    /// Send as `Authorization: Token <token>` to /api/docs/. Store it now: it is not kept.
    pub token: String,
    #[serde(flatten)]
    pub api_token: TokenView,
}

/// The caller's party's API tokens, oldest first. Token values are never listed.
#[utoipa::path(get, path = "/api/v1/doc-tokens", tag = "doc-admin", params(PageQuery), security(("bearer" = [])),
    responses((status = 200, body = Page<TokenView>), (status = 400), (status = 401), (status = 403, description = "Missing doc:read")))]
pub async fn list_tokens(state: web::Data<AppState>, auth: Authorized<DocRead>, q: web::Query<PageQuery>) -> ApiResult {
    let now = state.docs.now();
    ok(state.docs.list_tokens(auth.actor.party, q.request()?).await?.map(|t| TokenView::new(t, now)))
}

/// Issue an API token for the document interface, owned by the caller's party.
#[utoipa::path(post, path = "/api/v1/doc-tokens", tag = "doc-admin", request_body = CreateTokenRequest, security(("bearer" = [])),
    responses((status = 200, body = IssuedTokenView), (status = 400), (status = 401), (status = 403, description = "Missing doc:manage"),
              (status = 404, description = "A listed project is missing or another party's")))]
pub async fn create_token(state: web::Data<AppState>, auth: Authorized<DocManage>, body: Json<CreateTokenRequest>) -> ApiResult {
    let b = body.0;
    let req = TokenRequest { name: b.name, project_ids: b.project_ids, expires_at: b.expires_at };
    let issued = state.docs.create_token(auth.actor.party.into(), Some(auth.actor.user_id), req).await?;
    ok(IssuedTokenView { token: issued.secret, api_token: TokenView::new(issued.token, state.docs.now()) })
}

/// Revoke a token: it answers 401 from the next request on. Revoking twice changes nothing.
#[utoipa::path(delete, path = "/api/v1/doc-tokens/{id}", tag = "doc-admin", params(("id" = i64, Path)), security(("bearer" = [])),
    responses((status = 200, body = TokenView), (status = 401), (status = 403, description = "Missing doc:manage"),
              (status = 404, description = "Missing or another party's")))]
pub async fn revoke_token(state: web::Data<AppState>, auth: Authorized<DocManage>, id: web::Path<i64>) -> ApiResult {
    let token = state.docs.revoke_token(auth.actor.party, id.into_inner()).await?;
    ok(TokenView::new(token, state.docs.now()))
}
