use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{Error, HttpMessage};
use rand::Rng;

pub const HEADER: HeaderName = HeaderName::from_static("x-request-id");

/// The id of the request being served, from the client's `X-Request-Id` or generated.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

/// Echoes a client `X-Request-Id` of a safe form (1–128 of letters, digits and `._:-`, so it
/// cannot carry markup into a log viewer or the audit trail) or makes one; stores it for
/// handlers and the audit trail and puts it on the response.
pub async fn middleware(req: ServiceRequest, next: Next<impl MessageBody>) -> Result<ServiceResponse<impl MessageBody>, Error> {
    let id = req
        .headers()
        .get(&HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b)))
        .map(str::to_owned)
        .unwrap_or_else(|| format!("{:016x}", rand::rng().random::<u64>()));
    req.extensions_mut().insert(RequestId(id.clone()));
    let mut res = next.call(req).await?;
    if let Ok(v) = HeaderValue::from_str(&id) {
        res.headers_mut().insert(HEADER, v);
    }
    Ok(res)
}
