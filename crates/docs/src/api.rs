//! What clients send and receive: the document interface's (`/api/docs/`) bodies, parameters
//! and views, and those of managing projects and tokens (`/api/v1/doc-projects`,
//! `/api/v1/doc-tokens`). Views convert from the model.
use crate::model::*;
use atrium_kernel::{Error, PageRequest, PartyView, StrEnum, Timestamp};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// What the service's name check accepts under the default limits (`DocsConfig`): 1–255
/// characters, trimmed, no control characters.
#[cfg(feature = "openapi")]
fn name_schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    let max = crate::DocsConfig::default().max_name_chars;
    atrium_kernel::schema::string_schema(
        &format!("1–{max} characters, no control characters"),
        Some(atrium_kernel::schema::TEXT_PATTERN),
        Some(1),
        Some(max),
    )
}

/// `project_ids` of a new token: at least one, at most the default limit; null or absent for
/// every project.
#[cfg(feature = "openapi")]
fn project_ids_schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    let max = crate::DocsConfig::default().max_token_projects;
    atrium_kernel::schema::schema_from_json(serde_json::json!({
        "type": ["array", "null"],
        "items": {"type": "integer", "format": "int64"},
        "minItems": 1,
        "maxItems": max,
        "description": format!("Limit the token to these projects of your party (1–{max}); leave out or null for all of them"),
    }))
}

// ----- the document interface ---------------------------------------------------------------

/// `POST /api/docs/` body.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"project": 1, "name": "Getting started", "content": "# Getting started\n\nWelcome.", "parent": null, "sort": 0})))]
pub struct CreateDocumentRequest {
    /// Id of the project (document collection).
    pub project: i64,
    /// Title, 1–255 characters.
    #[cfg_attr(feature = "openapi", schema(schema_with = name_schema))]
    pub name: String,
    /// Markdown, at most 1 MiB.
    pub content: Option<String>,
    /// Id of the parent document in the same project; null or absent for a root.
    pub parent: Option<i64>,
    /// Sort number among siblings (default 0).
    pub sort: Option<i64>,
}

/// What `POST /api/docs/` returns in `data`.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CreatedDocument {
    /// The new document's id.
    pub id: i64,
    /// Its title, trimmed.
    pub name: String,
    /// The project it was created in.
    pub project_id: i64,
}

impl From<Document> for CreatedDocument {
    fn from(d: Document) -> Self {
        CreatedDocument { id: d.id, name: d.name, project_id: d.project_id }
    }
}

/// One document with its content.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DocumentView {
    /// The document's id.
    pub id: i64,
    /// The project it belongs to.
    pub project_id: i64,
    /// Its title.
    pub name: String,
    /// Markdown.
    pub content: String,
    /// The parent document's id, null for a root.
    pub parent: Option<i64>,
    /// Sort number among its siblings.
    pub sort: i64,
    /// The API token that created the document.
    pub author_token_id: Option<i64>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it was last changed.
    pub updated_at: DateTime<Utc>,
}

impl From<Document> for DocumentView {
    fn from(d: Document) -> Self {
        DocumentView {
            id: d.id,
            project_id: d.project_id,
            name: d.name,
            content: d.content,
            parent: d.parent_id,
            sort: d.sort,
            author_token_id: d.author_token_id,
            created_at: d.created_at,
            updated_at: d.updated_at,
        }
    }
}

/// A document in a tree listing: no content, its children ordered by sort, then id.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DocumentNodeView {
    /// The document's id.
    pub id: i64,
    /// Its title.
    pub name: String,
    /// The parent document's id, null for a root.
    pub parent: Option<i64>,
    /// Sort number among its siblings.
    pub sort: i64,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it was last changed.
    pub updated_at: DateTime<Utc>,
    /// Its child documents, ordered by sort, then id.
    #[cfg_attr(feature = "openapi", schema(no_recursion))]
    pub children: Vec<DocumentNodeView>,
}

impl From<DocumentNode> for DocumentNodeView {
    fn from(n: DocumentNode) -> Self {
        DocumentNodeView {
            id: n.doc.id,
            name: n.doc.name,
            parent: n.doc.parent_id,
            sort: n.doc.sort,
            created_at: n.doc.created_at,
            updated_at: n.doc.updated_at,
            children: n.children.into_iter().map(DocumentNodeView::from).collect(),
        }
    }
}

/// A project's documents: the roots, ordered by sort then id, each with its children.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DocumentTreeView {
    /// The project listed.
    pub project_id: i64,
    /// Documents at every level.
    pub total: usize,
    /// The root documents, each with its children.
    pub documents: Vec<DocumentNodeView>,
}

impl From<DocumentTree> for DocumentTreeView {
    fn from(t: DocumentTree) -> Self {
        DocumentTreeView { project_id: t.project.id, total: t.total, documents: t.roots.into_iter().map(Into::into).collect() }
    }
}

/// `GET /api/docs/` parameters.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct TreeQuery {
    /// Id of the project to list.
    pub project: i64,
}

// ----- projects and tokens ------------------------------------------------------------------

/// `page` (1-based, default 1) and `page_size` (default 20, at most 100).
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct PageQuery {
    /// 1-based page number; default 1.
    pub page: Option<i64>,
    /// Records per page; default 20, at most 100.
    pub page_size: Option<i64>,
}

impl PageQuery {
    /// The page asked for; an out-of-range value is `Invalid`, naming the field.
    pub fn request(&self) -> Result<PageRequest, Error> {
        PageRequest::new(self.page, self.page_size)
    }
}

/// The owning party as clients see it.
impl From<Owner> for PartyView {
    fn from(owner: Owner) -> Self {
        PartyView { party_type: owner.party_type(), id: owner.party_id() }
    }
}

/// A document project (collection).
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProjectView {
    /// The project's id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// The party that owns it; only that party's tokens reach it.
    pub party: PartyView,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it was last changed.
    pub updated_at: DateTime<Utc>,
}

impl From<Project> for ProjectView {
    fn from(p: Project) -> Self {
        ProjectView { id: p.id, name: p.name, party: p.owner.into(), created_at: p.created_at, updated_at: p.updated_at }
    }
}

/// `POST /api/v1/doc-projects` body: a new project of the caller's party.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"name": "Employee handbook"})))]
pub struct CreateProjectRequest {
    /// 1–255 characters.
    #[cfg_attr(feature = "openapi", schema(schema_with = name_schema))]
    pub name: String,
}

/// An API token as listed: never its value.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TokenView {
    /// The token's id (not its value).
    pub id: i64,
    /// Its label.
    pub name: String,
    /// The party whose projects it reaches.
    pub party: PartyView,
    /// The projects it is limited to; null when it reaches every project of its party.
    pub project_ids: Option<Vec<i64>>,
    /// `active`, `expired`, `revoked`, or `suspended` (live, but its party or issuer is disabled).
    pub status: &'static str,
    /// The user who issued it; null when issued from the command line.
    pub created_by: Option<i64>,
    /// When it was issued.
    pub created_at: DateTime<Utc>,
    /// When it stops working; null for never.
    pub expires_at: Option<DateTime<Utc>>,
    /// When it was revoked; null while it is not.
    pub revoked_at: Option<DateTime<Utc>>,
    /// Updated at most once a minute.
    pub last_used_at: Option<DateTime<Utc>>,
}

impl TokenView {
    /// The token with its status at `now`.
    pub fn new(t: ApiToken, now: Timestamp) -> Self {
        TokenView {
            status: t.status(now).as_str(),
            project_ids: t.projects.ids().map(<[i64]>::to_vec),
            id: t.id,
            name: t.name,
            party: t.owner.into(),
            created_by: t.created_by,
            created_at: t.created_at,
            expires_at: t.expires_at,
            revoked_at: t.revoked_at,
            last_used_at: t.last_used_at,
        }
    }
}

/// `POST /api/v1/doc-tokens` body: a new API token of the caller's party.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"name": "Handbook publisher", "project_ids": [1], "expires_at": "2030-01-01T00:00:00Z"})))]
pub struct CreateTokenRequest {
    /// A label, 1–255 characters.
    #[cfg_attr(feature = "openapi", schema(schema_with = name_schema))]
    pub name: String,
    /// The projects of the caller's party it may reach (1 or more); leave out or null for all of
    /// them, present and future.
    #[cfg_attr(feature = "openapi", schema(schema_with = project_ids_schema))]
    pub project_ids: Option<Vec<i64>>,
    /// When the token stops working (RFC 3339, in the future); leave out for never.
    pub expires_at: Option<DateTime<Utc>>,
}

/// A new token: `token` is its value, shown this once and never again. `Debug` leaves the
/// value out, so a logged view cannot leak it.
#[derive(Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct IssuedTokenView {
    /// Send as `Authorization: Token <token>` to /api/docs/. Store it now: it is not kept.
    pub token: String,
    /// What the token is, as listed later.
    #[serde(flatten)]
    pub api_token: TokenView,
}

impl std::fmt::Debug for IssuedTokenView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssuedTokenView").field("token", &"<redacted>").field("api_token", &self.api_token).finish()
    }
}

impl IssuedTokenView {
    /// The issued token with its status at `now`.
    pub fn new(issued: IssuedToken, now: Timestamp) -> Self {
        IssuedTokenView { token: issued.secret, api_token: TokenView::new(issued.token, now) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ApiToken, IssuedToken, Owner, ProjectGrant};

    #[test]
    fn an_issued_token_view_never_shows_its_value_in_debug_output() {
        let now = chrono::Utc::now();
        let token = ApiToken {
            id: 1,
            name: "ci".into(),
            owner: Owner::PLATFORM,
            projects: ProjectGrant::All,
            created_by: None,
            created_at: now,
            expires_at: None,
            revoked_at: None,
            last_used_at: None,
            suspended: None,
        };
        let view = IssuedTokenView::new(IssuedToken { token, secret: "atd_the-secret-value".into() }, now);

        assert!(!format!("{view:?}").contains("the-secret-value"));
        assert_eq!(view.token, "atd_the-secret-value", "the answer still carries it, once");
    }
}
