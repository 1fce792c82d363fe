use serde::Serialize;

/// A problem with one input field: `{"field": "...", "message": "..."}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError { field: field.into(), message: message.into() }
    }
}

/// The error every domain operation returns. The HTTP layer maps each variant to one
/// envelope code in one place; nothing here knows about HTTP.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input; each entry names the field at fault (400).
    #[error("invalid input: {}", .0.iter().map(|e| format!("{}: {}", e.field, e.message)).collect::<Vec<_>>().join("; "))]
    Invalid(Vec<FieldError>),
    /// Bad input not tied to one field (400).
    #[error("{0}")]
    BadRequest(String),
    /// Missing, wrong or expired credentials (401). The message is safe to show.
    #[error("{0}")]
    Unauthenticated(String),
    /// Authenticated but not allowed (403).
    #[error("{0}")]
    Forbidden(String),
    /// Missing or outside the caller's scope (404) — the two are indistinguishable on purpose.
    #[error("{0} not found")]
    NotFound(&'static str),
    /// A record the request names in a field (`tenant_id`, `role_ids`) is missing or outside
    /// the caller's scope (404, as for a record named by the path); the field is named.
    #[error("{}: {}", .0.field, .0.message)]
    NoSuch(FieldError),
    /// The request conflicts with the current state (409).
    #[error("{0}")]
    Conflict(String),
    /// What the request acts on is in a state that does not allow it, for reasons each entry
    /// names (409): a sheet whose items cannot be calculated, say. Unlike `Invalid`, the
    /// request itself may be flawless.
    #[error("{}", .0.iter().map(|e| format!("{}: {}", e.field, e.message)).collect::<Vec<_>>().join("; "))]
    Blocked(Vec<FieldError>),
    /// A payload over its size limit (413).
    #[error("{0}")]
    TooLarge(String),
    /// Too many attempts; try again after the given number of seconds (429).
    #[error("{message}")]
    RateLimited { message: String, retry_after_secs: u64 },
    /// A remote platform failed or refused (502); the message is safe to show.
    #[error("{0}")]
    Upstream(String),
    /// A remote platform refused the call with its own error code (502): `data` carries
    /// `{errcode, errmsg}` so a client can act on the code. The message is safe to show.
    #[error("the platform refused the call (errcode {errcode}): {errmsg}")]
    PlatformRefused { errcode: i64, errmsg: String },
    /// A dependency of ours (the database) is down or saturated for now (503); try again
    /// after the given number of seconds.
    #[error("{message}")]
    Unavailable { message: String, retry_after_secs: u64 },
    /// Anything else (500). Logged in full, shown to nobody.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl Error {
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Invalid(vec![FieldError::new(field, message)])
    }

    /// A 404 naming the field whose record does not exist for the caller, e.g.
    /// `Error::no_such("tenant_id", "no such tenant")`.
    pub fn no_such(field: impl Into<String>, message: impl Into<String>) -> Self {
        Error::NoSuch(FieldError::new(field, message))
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Error::Conflict(message.into())
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Error::Forbidden(message.into())
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Error::Internal(anyhow::anyhow!(message.into()))
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
