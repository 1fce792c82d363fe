//! The document interface's conventions: success is `{"code":0,"message":"success","data":…}`;
//! every error is `{"code":<HTTP status>,"message":"<why>","data":null}` — field errors
//! name the field in the message instead of listing `data.errors`. Callers authenticate with
//! `Authorization: Token <API_TOKEN>`.
use actix_web::dev::Payload;
use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{FromRequest, HttpRequest, HttpResponse, ResponseError, web};
use atrium_docs::ApiToken;
use atrium_kernel::Error;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt;
use std::future::Future;
use std::pin::Pin;

use crate::app::AppState;
use crate::envelope::{Envelope, respond};
use crate::error::ApiError;
use crate::extract::Json;

/// Whether `path` is on the document interface (`/api/docs`, `/api/docs/…`).
pub(crate) fn serves(path: &str) -> bool {
    path == "/api/docs" || path.starts_with("/api/docs/")
}

/// 200 with the document interface's success envelope (code 0).
pub fn docs_ok<T: Serialize>(data: T) -> Result<HttpResponse, DocsError> {
    Ok(HttpResponse::Ok().json(Envelope { code: 0, message: "success".to_owned(), data: Some(data) }))
}

/// An error of the document interface: same status as on the main interface, `data` null.
#[derive(Debug)]
pub struct DocsError(pub ApiError);

impl From<Error> for DocsError {
    fn from(e: Error) -> Self {
        DocsError(ApiError(e))
    }
}

impl From<ApiError> for DocsError {
    fn from(e: ApiError) -> Self {
        DocsError(e)
    }
}

impl fmt::Display for DocsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl ResponseError for DocsError {
    fn status_code(&self) -> StatusCode {
        self.0.status()
    }

    fn error_response(&self) -> HttpResponse {
        let status = self.status_code();
        let message = match &self.0.0 {
            Error::Invalid(errors) => errors.iter().map(|e| format!("{}: {}", e.field, e.message)).collect::<Vec<_>>().join("; "),
            Error::Internal(cause) => {
                log::error!("internal error: {cause:#}");
                "internal server error".to_owned()
            }
            Error::NotFound(what) => format!("{what} not found"),
            other => other.to_string(),
        };
        let mut resp = respond::<()>(status, status.as_u16(), &message, None);
        self.0.add_retry_after(&mut resp);
        if status == StatusCode::UNAUTHORIZED {
            resp.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Token"));
        }
        resp
    }
}

/// A caller of the document interface: a live API token from `Authorization: Token …`.
pub struct DocsToken(pub ApiToken);

impl FromRequest for DocsToken {
    type Error = DocsError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, DocsError>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let state = req.app_data::<web::Data<AppState>>().cloned();
        let presented = token_header(req);
        Box::pin(async move {
            let state = state.ok_or_else(|| Error::internal("application state missing"))?;
            let raw = presented?;
            Ok(DocsToken(state.docs.authenticate(&raw).await?))
        })
    }
}

/// The value of `Authorization: Token <value>`; any other scheme or none is a 401.
fn token_header(req: &HttpRequest) -> Result<String, DocsError> {
    let unauthenticated = |m: &str| DocsError::from(Error::Unauthenticated(m.to_owned()));
    let value = req
        .headers()
        .get(header::AUTHORIZATION)
        .ok_or_else(|| unauthenticated("missing API token: send 'Authorization: Token <API_TOKEN>'"))?;
    let value = value.to_str().unwrap_or_default().trim();
    let (scheme, token) = value.split_once(' ').unwrap_or((value, ""));
    if !scheme.eq_ignore_ascii_case("token") || token.trim().is_empty() {
        return Err(unauthenticated("the document interface takes 'Authorization: Token <API_TOKEN>'"));
    }
    Ok(token.trim().to_owned())
}

/// A JSON body, with the main interface's parsing rules and the document interface's errors.
pub struct DocsJson<T>(pub T);

impl<T: DeserializeOwned + 'static> FromRequest for DocsJson<T> {
    type Error = DocsError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, DocsError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let fut = Json::<T>::from_request(req, payload);
        Box::pin(async move { fut.await.map(|j| DocsJson(j.0)).map_err(DocsError::from) })
    }
}
