use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpResponse, ResponseError};
use atrium_kernel::{Error, FieldError, Reason};
use serde::Serialize;
use std::fmt;

use crate::envelope::respond;

/// A domain error on its way out. The one mapping from [`Error`] to status and envelope.
#[derive(Debug)]
pub struct ApiError(pub Error);

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        ApiError(e)
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// `data` of an error: why, for programs (`reason`), and what the error names — the fields
/// at fault, or a platform's own code and message.
#[derive(Serialize)]
pub(crate) struct ErrorData<'a> {
    reason: Reason,
    #[serde(skip_serializing_if = "Option::is_none")]
    errors: Option<&'a [FieldError]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    errcode: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    errmsg: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fail_reason: Option<&'a str>,
}

impl<'a> ErrorData<'a> {
    /// `{"reason": …}` alone: the data of an error that names nothing more.
    pub(crate) fn new(reason: Reason) -> Self {
        ErrorData { reason, errors: None, errcode: None, errmsg: None, fail_reason: None }
    }

    /// The data of an error answered before any route ran (no route, a wrong method, a body
    /// too large): `{"reason": …}`, or none on the document interface, whose errors carry
    /// `data` null.
    pub(crate) fn for_path(path: &str, reason: Reason) -> Option<Self> {
        (!crate::docs_interface::serves(path)).then(|| ErrorData::new(reason))
    }
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match &self.0 {
            Error::Invalid(_) | Error::BadRequest(_) => StatusCode::BAD_REQUEST,
            Error::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            Error::Forbidden(..) => StatusCode::FORBIDDEN,
            Error::NotFound(_) | Error::NoSuch(_) => StatusCode::NOT_FOUND,
            Error::Conflict(..) | Error::Blocked(..) | Error::PlatformFailed { .. } => StatusCode::CONFLICT,
            Error::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Error::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            Error::Upstream(_) | Error::PlatformRefused { .. } => StatusCode::BAD_GATEWAY,
            Error::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            Error::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// `Retry-After` on a 429 or 503.
    pub(crate) fn add_retry_after(&self, resp: &mut HttpResponse) {
        let (Error::RateLimited { retry_after_secs, .. } | Error::Unavailable { retry_after_secs, .. }) = &self.0 else { return };
        if let Ok(v) = HeaderValue::from_str(&retry_after_secs.to_string()) {
            resp.headers_mut().insert(header::RETRY_AFTER, v);
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError(Error::BadRequest(message.into()))
    }

    pub fn unauthenticated(message: impl Into<String>) -> Self {
        ApiError(Error::Unauthenticated(message.into()))
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status()
    }

    fn error_response(&self) -> HttpResponse {
        let status = self.status();
        let code = status.as_u16();
        let data = ErrorData::new(self.0.reason());
        let mut resp = match &self.0 {
            Error::Invalid(errors) | Error::Blocked(_, errors) => {
                let message = match (errors.as_slice(), &self.0) {
                    ([one], _) => format!("{}: {}", one.field, one.message),
                    (_, Error::Invalid(_)) => "request parameters are invalid".to_owned(),
                    _ => "the records this acts on do not allow it now; see data.errors".to_owned(),
                };
                respond(status, code, &message, Some(ErrorData { errors: Some(errors), ..data }))
            }
            Error::Internal(cause) => {
                log::error!("internal error: {cause:#}");
                respond(status, code, "internal server error", Some(data))
            }
            Error::NotFound(what) => respond(status, code, &format!("{what} not found"), Some(data)),
            Error::PlatformRefused { errcode, errmsg } => {
                respond(status, code, &self.0.to_string(), Some(ErrorData { errcode: Some(*errcode), errmsg: Some(errmsg), ..data }))
            }
            Error::PlatformFailed { message, fail_reason, .. } => {
                respond(status, code, message, Some(ErrorData { fail_reason: Some(fail_reason), ..data }))
            }
            Error::NoSuch(error) => respond(
                status,
                code,
                &format!("{}: {}", error.field, error.message),
                Some(ErrorData { errors: Some(std::slice::from_ref(error)), ..data }),
            ),
            other => respond(status, code, &other.to_string(), Some(data)),
        };
        self.add_retry_after(&mut resp);
        if status == StatusCode::UNAUTHORIZED {
            resp.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        resp
    }
}
