//! `Idempotency-Key` on the routes that create or move money (create, pay, refund): the
//! first answer to a caller's key on a route is stored and replayed to every retry with the
//! same body (`Idempotent-Replayed: true`); another body under the key, or a retry while the
//! first is still running, is a 409. A request refused as invalid stores nothing. The records
//! live in the database, so this holds across instances.
use actix_web::body::MessageBody;
use actix_web::http::StatusCode;
use actix_web::http::header::{CONTENT_TYPE, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, ResponseError};
use atrium_kernel::idempotency::{Claim, IdempotencyKey, IdempotencyStore};
use atrium_kernel::{Actor, Error};
use std::future::Future;

use crate::envelope::ApiResult;
use crate::error::ApiError;

/// The request header.
pub const HEADER: &str = "idempotency-key";
/// The header on a replayed answer.
pub const REPLAYED: &str = "idempotent-replayed";
/// A claim older than this whose request never finished (its instance died) is taken over.
const STALE_AFTER_SECS: i64 = 60;

/// The key of a request, if it sent one: 1–255 printable ASCII characters, else a 400.
pub fn key_of(req: &HttpRequest) -> Result<Option<String>, ApiError> {
    let Some(value) = req.headers().get(HEADER) else { return Ok(None) };
    let bytes = value.as_bytes();
    if bytes.is_empty() || bytes.len() > 255 || !bytes.iter().all(|b| (0x20..=0x7e).contains(b)) {
        return Err(ApiError(Error::invalid("Idempotency-Key", "must be 1 to 255 printable ASCII characters")));
    }
    Ok(Some(String::from_utf8_lossy(bytes).into_owned()))
}

/// Runs `act` once per caller, route and key: with no key it simply runs.
pub async fn once<F, Fut>(store: &dyn IdempotencyStore, req: &HttpRequest, actor: &Actor, body: &[u8], act: F) -> HttpResponse
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = ApiResult>,
{
    let key = match key_of(req) {
        Ok(Some(key)) => key,
        Ok(None) => return respond(act().await),
        Err(e) => return e.error_response(),
    };
    // The concrete path: with the template, one body sent to two orders would replay.
    let route = format!("{} {}", req.method(), req.path());
    let key = IdempotencyKey { caller: format!("user:{}", actor.user_id), route, key };
    let hash = hash(body);
    let now = chrono::Utc::now();
    match store.claim(&key, hash, now, STALE_AFTER_SECS).await {
        Err(e) => ApiError(e).error_response(),
        Ok(Claim::Replay { status, body }) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
            HttpResponse::build(status).content_type("application/json").insert_header((REPLAYED, "true")).body(body)
        }
        Ok(Claim::InProgress) => {
            ApiError(Error::conflict("a request with this Idempotency-Key is still in progress; retry later")).error_response()
        }
        Ok(Claim::Mismatch) => ApiError(Error::conflict("this Idempotency-Key was used with a different request")).error_response(),
        Ok(Claim::New) => {
            let response = respond(act().await);
            let status = response.status();
            // Invalid input acted on nothing; a 5xx may be retried as a new request.
            if status == StatusCode::BAD_REQUEST || status.is_server_error() {
                if let Err(e) = store.release(&key).await {
                    log::error!("releasing an idempotency key failed: {e}");
                }
                return response;
            }
            let (head, body) = response.into_parts();
            let bytes = match body.try_into_bytes() {
                Ok(bytes) => bytes,
                Err(_) => {
                    log::error!("an idempotent answer had a streaming body; it was not stored");
                    return ApiError(Error::internal("unstorable answer")).error_response();
                }
            };
            if let Err(e) = store.complete(&key, status.as_u16(), bytes.to_vec(), chrono::Utc::now()).await {
                log::error!("storing an idempotent answer failed: {e}");
            }
            let mut response = head.set_body(bytes).map_into_boxed_body();
            response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            response
        }
    }
}

fn respond(result: ApiResult) -> HttpResponse {
    result.unwrap_or_else(|e| e.error_response())
}

/// SHA-256 of the body, so a retry is compared with what was first sent.
fn hash(body: &[u8]) -> Vec<u8> {
    use sha2::Digest;
    sha2::Sha256::digest(body).to_vec()
}
