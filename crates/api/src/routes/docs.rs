//! The document interface, `/api/docs/`: create a document, read one back, list a project's
//! documents as a tree. Authenticated by `Authorization: Token <API_TOKEN>`; success is code 0,
//! errors carry the HTTP status as code and `data` null.
use actix_web::{HttpResponse, web};
use atrium_docs::{CreateDocumentRequest, CreatedDocument, DocumentTreeView, DocumentView, TreeQuery};

use crate::app::AppState;
use crate::docs_interface::{DocsError, DocsJson, DocsToken, docs_ok};
use crate::extract::JsonLimit;
use crate::query::Query;

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
        .service(
            web::resource(["", "/"])
                .wrap(actix_web::middleware::from_fn(move |req, next| crate::limits::declared_over(body_limit, req, next)))
                .route(web::post().to(create_document))
                .route(web::get().to(document_tree)),
        )
        .service(web::resource("/{id}").route(web::get().to(get_document)))
}

type DocsResult = Result<HttpResponse, DocsError>;

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
    docs_ok(CreatedDocument::from(state.docs.create_document(&token.0, body.0).await?))
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
pub async fn document_tree(state: web::Data<AppState>, token: DocsToken, q: Query<TreeQuery>) -> DocsResult {
    docs_ok(DocumentTreeView::from(state.docs.document_tree(&token.0, q.0.project).await?))
}
