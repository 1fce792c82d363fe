//! `Idempotency-Key` on the routes that create or move money (create, pay, refund): the
//! first answer to a caller's key on a route is stored and replayed to every retry with the
//! same body (`Idempotent-Replayed: true`); another body under the key, or a retry while the
//! first is still running, is a 409. The records live in the database, so this holds across
//! instances.
//!
//! What is kept follows what the request may have done:
//! - an answer (2xx), or a refusal by the pay platform (a 4xx naming `pay_platform`: it was
//!   asked) → stored and replayed;
//! - any other 4xx — refused before it changed anything → nothing stored, the key is free;
//! - a 5xx — it may have reached the platform (a lost answer, a time-out) or stopped midway →
//!   the key stays taken for this body, but the next retry runs again. The handler is given
//!   a [`RequestKey`] from which the service derives the numbers it sends to the platform
//!   (`out_trade_no`, `out_refund_no`), so the retry asks the same question under the same
//!   numbers — the platform deduplicates by them — and answers with what the platform says.
use actix_web::body::MessageBody;
use actix_web::http::StatusCode;
use actix_web::http::header::{CONTENT_TYPE, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, ResponseError};
use atrium_kernel::Reason;
use atrium_kernel::idempotency::{Claim, IdempotencyKey, RequestKey};
use atrium_kernel::{Actor, Error};

use crate::app::AppState;
use crate::envelope::ApiResult;
use crate::error::ApiError;

/// The request header.
pub const HEADER: &str = "idempotency-key";
/// The header on a replayed answer.
pub const REPLAYED: &str = "idempotent-replayed";

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
pub async fn once<F>(state: &AppState, req: &HttpRequest, actor: &Actor, body: &[u8], act: F) -> HttpResponse
where
    F: AsyncFnOnce(Option<RequestKey>) -> ApiResult,
{
    let key = match key_of(req) {
        Ok(Some(key)) => key,
        Ok(None) => return respond(act(None).await),
        Err(e) => return e.error_response(),
    };
    // The concrete path: with the template, one body sent to two orders would replay.
    let route = format!("{} {}", req.method(), req.path());
    let key = IdempotencyKey { caller: format!("user:{}", actor.user_id), route, key };
    let hash = hash(body);
    let now = chrono::Utc::now();
    let store = state.idempotency.as_ref();
    // A claim older than this whose request never finished (its instance died) is taken over.
    match store.claim(&key, hash, now, state.idempotency_stale_secs).await {
        Err(e) => ApiError(e).error_response(),
        Ok(Claim::Replay { status, body }) => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
            HttpResponse::build(status).content_type("application/json").insert_header((REPLAYED, "true")).body(body)
        }
        Ok(Claim::InProgress) => {
            ApiError(Error::conflict(Reason::TryAgain, "a request with this Idempotency-Key is still in progress; retry later"))
                .error_response()
        }
        Ok(Claim::Mismatch) => {
            ApiError(Error::conflict(Reason::IdempotencyKeyReused, "this Idempotency-Key was used with a different request"))
                .error_response()
        }
        Ok(Claim::New) => {
            let result = act(Some(RequestKey::of(&key))).await;
            let response = match &result {
                Err(e) if e.status().is_server_error() => {
                    // It may have acted: keep the key for this body, let a retry run again.
                    if let Err(e) = store.reopen(&key).await {
                        log::error!("reopening an idempotency key failed: {e}");
                    }
                    return respond(result);
                }
                Err(e) if !asked_the_platform(&e.0) => {
                    // Refused before it changed anything: leave no trace.
                    if let Err(e) = store.release(&key).await {
                        log::error!("releasing an idempotency key failed: {e}");
                    }
                    return respond(result);
                }
                _ => respond(result),
            };
            let status = response.status();
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

/// Whether a refusal came from the pay platform (which was asked, and may have recorded the
/// request): such a refusal is replayed, not forgotten.
fn asked_the_platform(e: &Error) -> bool {
    match e {
        Error::Invalid(fields) | Error::Blocked(_, fields) => fields.iter().any(|f| f.field == "pay_platform"),
        _ => false,
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
