//! The document interface, `/api/docs/`: create a document, read one back, list a project's
//! documents as a tree. Authenticated by `Authorization: Token <API_TOKEN>`; success is code 0,
//! errors carry the HTTP status as code and `data` null.
use actix_web::{HttpResponse, web};
use atrium_docs::{Document, DocumentInput, DocumentNode, DocumentTree};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::app::AppState;
use crate::docs_interface::{DocsError, DocsJson, DocsQuery, DocsToken, docs_ok};
use crate::extract::JsonLimit;

/// Room for the other fields and JSON escaping beside the largest allowed content.
const BODY_SLACK: usize = 64 * 1024;

/// `/api/docs` and `/api/docs/` (both), and `/api/docs/{id}`. The body limit is the
/// domain's content limit plus slack, so content just over the limit gets the domain's
/// own 413 and anything larger the framework's.
pub fn scope(state: &AppState) -> actix_web::Scope {
    let body_limit = state.json_limit.max(state.docs.config().max_content_bytes + BODY_SLACK);
    web::scope("/api/docs")
        .app_data(JsonLimit(body_limit))
        .app_data(web::PayloadConfig::new(body_limit))
        .service(web::resource(["", "/"]).route(web::post().to(create_document)).route(web::get().to(document_tree)))
        .service(web::resource("/{id}").route(web::get().to(get_document)))
}

type DocsResult = Result<HttpResponse, DocsError>;

/// `POST /api/docs/` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateDocumentRequest {
    /// Id of the project (document collection).
    pub project: i64,
    /// Title, 1–255 characters.
    pub name: String,
    /// Markdown, at most 1 MiB.
    pub content: Option<String>,
    /// Id of the parent document in the same project; null or absent for a root.
    pub parent: Option<i64>,
    /// Sort number among siblings (default 0).
    pub sort: Option<i64>,
}

/// What `POST /api/docs/` returns in `data`.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedDocument {
    pub id: i64,
    pub name: String,
    pub project_id: i64,
}

/// One document with its content.
#[derive(Debug, Serialize, ToSchema)]
pub struct DocumentView {
    pub id: i64,
    pub project_id: i64,
    pub name: String,
    /// Markdown.
    pub content: String,
    /// The parent document's id, null for a root.
    pub parent: Option<i64>,
    pub sort: i64,
    /// The API token that created the document.
    pub author_token_id: Option<i64>,
    pub created_at: DateTime<Utc>,
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
#[derive(Debug, Serialize, ToSchema)]
pub struct DocumentNodeView {
    pub id: i64,
    pub name: String,
    pub parent: Option<i64>,
    pub sort: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[schema(no_recursion)]
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
#[derive(Debug, Serialize, ToSchema)]
pub struct DocumentTreeView {
    pub project_id: i64,
    /// Documents at every level.
    pub total: usize,
    pub documents: Vec<DocumentNodeView>,
}

impl From<DocumentTree> for DocumentTreeView {
    fn from(t: DocumentTree) -> Self {
        DocumentTreeView { project_id: t.project.id, total: t.total, documents: t.roots.into_iter().map(Into::into).collect() }
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct TreeQuery {
    /// Id of the project to list.
    pub project: i64,
}

/// Create a document. Success: HTTP 200 with `{"code":0,"message":"success","data":{"id","name","project_id"}}`.
/// Errors: `{"code":<status>,"message":"…","data":null}`.
#[utoipa::path(post, path = "/api/docs/", tag = "docs", request_body = CreateDocumentRequest, security(("docs_token" = [])),
    responses((status = 200, description = "Created; envelope code 0", body = CreatedDocument),
              (status = 400, description = "Malformed body, bad name, or a parent not in the project"),
              (status = 401, description = "Missing, unknown, revoked or expired token"),
              (status = 403, description = "The token is not granted this project"),
              (status = 404, description = "No such project (or another party's)"),
              (status = 413, description = "Content or body over the limit")))]
pub async fn create_document(state: web::Data<AppState>, token: DocsToken, body: DocsJson<CreateDocumentRequest>) -> DocsResult {
    let b = body.0;
    let input = DocumentInput { project: b.project, name: b.name, content: b.content, parent: b.parent, sort: b.sort };
    let doc = state.docs.create_document(&token.0, input).await?;
    docs_ok(CreatedDocument { id: doc.id, name: doc.name, project_id: doc.project_id })
}

/// One document with its content.
#[utoipa::path(get, path = "/api/docs/{id}", tag = "docs", params(("id" = i64, Path, description = "Document id")),
    security(("docs_token" = [])),
    responses((status = 200, description = "Envelope code 0", body = DocumentView), (status = 401), (status = 403),
              (status = 404, description = "No such document (or another party's)")))]
pub async fn get_document(state: web::Data<AppState>, token: DocsToken, id: web::Path<i64>) -> DocsResult {
    docs_ok(DocumentView::from(state.docs.get_document(&token.0, id.into_inner()).await?))
}

/// A project's documents as a tree (without content).
#[utoipa::path(get, path = "/api/docs/", tag = "docs", params(TreeQuery), security(("docs_token" = [])),
    responses((status = 200, description = "Envelope code 0", body = DocumentTreeView), (status = 400), (status = 401), (status = 403),
              (status = 404)))]
pub async fn document_tree(state: web::Data<AppState>, token: DocsToken, q: DocsQuery<TreeQuery>) -> DocsResult {
    docs_ok(DocumentTreeView::from(state.docs.document_tree(&token.0, q.0.project).await?))
}
