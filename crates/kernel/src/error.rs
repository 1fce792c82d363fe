use serde::Serialize;

use crate::Reason;

/// A problem with one input field: `{"field": "...", "message": "..."}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FieldError {
    /// The field at fault, as the request names it (`items[2].amount`, `tenant_id`).
    pub field: String,
    /// What is wrong with it, in English.
    pub message: String,
}

impl FieldError {
    /// The problem `message` with `field`.
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
    /// Authenticated but not allowed (403), and why.
    #[error("{1}")]
    Forbidden(Reason, String),
    /// Missing or outside the caller's scope (404) — the two are indistinguishable on purpose.
    #[error("{0} not found")]
    NotFound(&'static str),
    /// A record the request names in a field (`tenant_id`, `role_ids`) is missing or outside
    /// the caller's scope (404, as for a record named by the path); the field is named.
    #[error("{}: {}", .0.field, .0.message)]
    NoSuch(FieldError),
    /// The request conflicts with the current state (409), and why.
    #[error("{1}")]
    Conflict(Reason, String),
    /// What the request acts on is in a state that does not allow it, for reasons each entry
    /// names (409): a sheet whose items cannot be calculated, say. Unlike `Invalid`, the
    /// request itself may be flawless.
    #[error("{}", .1.iter().map(|e| format!("{}: {}", e.field, e.message)).collect::<Vec<_>>().join("; "))]
    Blocked(Reason, Vec<FieldError>),
    /// A payload over its size limit (413).
    #[error("{0}")]
    TooLarge(String),
    /// Too many attempts; try again after the given number of seconds (429).
    #[error("{message}")]
    RateLimited {
        /// What was limited, in English.
        message: String,
        /// When to try again (the `Retry-After` header).
        retry_after_secs: u64,
    },
    /// A remote platform failed or refused (502); the message is safe to show.
    #[error("{0}")]
    Upstream(String),
    /// A remote platform refused the call with its own error code (502): `data` carries
    /// `{errcode, errmsg}` so a client can act on the code. The message is safe to show.
    #[error("the platform refused the call (errcode {errcode}): {errmsg}")]
    PlatformRefused {
        /// The platform's own error code.
        errcode: i64,
        /// The platform's own message.
        errmsg: String,
    },
    /// A step a remote platform had to carry out first failed for the platform's own reason,
    /// so the request was not carried out (409): `data.fail_reason` carries the platform's
    /// word (a share's return before a refund, say). The message is safe to show.
    #[error("{message}")]
    PlatformFailed {
        /// Why, as the stable name.
        reason: Reason,
        /// What happened, in English.
        message: String,
        /// The platform's own reason (`BALANCE_NOT_ENOUGH`, …).
        fail_reason: String,
    },
    /// A dependency of ours (the database) is down or saturated for now (503); try again
    /// after the given number of seconds.
    #[error("{message}")]
    Unavailable {
        /// What is unavailable, in English.
        message: String,
        /// When to try again (the `Retry-After` header).
        retry_after_secs: u64,
    },
    /// Anything else (500). Logged in full, shown to nobody.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl Error {
    /// A 400 naming the one field at fault.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Invalid(vec![FieldError::new(field, message)])
    }

    /// A 404 naming the field whose record does not exist for the caller, e.g.
    /// `Error::no_such("tenant_id", "no such tenant")`.
    pub fn no_such(field: impl Into<String>, message: impl Into<String>) -> Self {
        Error::NoSuch(FieldError::new(field, message))
    }

    /// A 409: `reason` for programs, `message` for people.
    pub fn conflict(reason: Reason, message: impl Into<String>) -> Self {
        Error::Conflict(reason, message.into())
    }

    /// A 403: `reason` for programs, `message` for people.
    pub fn forbidden(reason: Reason, message: impl Into<String>) -> Self {
        Error::Forbidden(reason, message.into())
    }

    /// A 409 naming the one field (or item) whose state blocks the request.
    pub fn blocked(reason: Reason, field: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Blocked(reason, vec![FieldError::new(field, message)])
    }

    /// Why the request was refused, as the stable name an answer carries in `data.reason`.
    pub fn reason(&self) -> Reason {
        match self {
            Error::Invalid(_) | Error::BadRequest(_) => Reason::InvalidInput,
            Error::Unauthenticated(_) => Reason::Unauthenticated,
            Error::Forbidden(reason, _) | Error::Conflict(reason, _) | Error::Blocked(reason, _) => *reason,
            Error::PlatformFailed { reason, .. } => *reason,
            Error::NotFound(_) | Error::NoSuch(_) => Reason::NotFound,
            Error::TooLarge(_) => Reason::TooLarge,
            Error::RateLimited { .. } => Reason::RateLimited,
            Error::Upstream(_) => Reason::PlatformUnavailable,
            Error::PlatformRefused { .. } => Reason::PlatformRefused,
            Error::Unavailable { .. } => Reason::Unavailable,
            Error::Internal(_) => Reason::Internal,
        }
    }

    /// A 500 whose `message` goes to the log only.
    pub fn internal(message: impl Into<String>) -> Self {
        Error::Internal(anyhow::anyhow!(message.into()))
    }
}

/// The result of a domain operation.
pub type Result<T, E = Error> = std::result::Result<T, E>;
