//! Platform calls as the release services make them: each logged with its errcode and the
//! task it belongs to (never with a token), and a failure turned into a domain error, never a
//! 500 ([`release_platform_error`]).
use crate::ports::{PlatformError, PlatformResult};
use atrium_kernel::{Error, FieldError, Id, Reason};

/// Errcodes that say the mini-program's state forbids the step now: 409. Already under audit,
/// gray percentage must rise, gray release running, nothing audited, not releasable, nothing
/// committed, no live version, cannot revert, template library full, bad category, name or
/// avatar missing, privacy check unfinished.
const CONFLICT_CODES: &[i64] = &[85009, 85082, 87011, 85019, 85020, 85086, 85079, 87012, 85065, 85077, 86002, 61039];
/// Errcodes of used-up quotas (audits, audit withdrawals): 429.
const QUOTA_CODES: &[i64] = &[85085, 87013];
/// Errcodes that blame one field of the request: 400 naming it.
const FIELD_CODES: &[(i64, &str)] =
    &[(85013, "ext_json"), (85014, "template_id"), (85064, "template_id"), (85081, "gray_percentage"), (85044, "package")];
/// The authorisation was revoked.
pub(super) const REVOKED: i64 = 61003;
/// The authorisation code was used already.
pub(super) const CODE_USED: i64 = 61009;
/// The mini-program did not grant the platform the permission the call needs.
const NOT_GRANTED: i64 = 61007;
/// How long a client should wait after a quota error.
const QUOTA_RETRY_SECS: u64 = 3600;

/// A mini-program platform failure as a domain error, never a 500:
/// - 61003 and 61007 → 403 naming what the admin must do;
/// - 85085 and 87013 (quota) → 429;
/// - errcodes that blame a field (85013 `ext_json`, 85014/85064 `template_id`, 85081
///   `gray_percentage`, 85044 `package`) → 400 naming it, the errcode in `data.errors`;
/// - errcodes of out-of-order steps (85009, 85082, 87011, …) → 409, the errcode in
///   `data.errors` under `platform`;
/// - any other errcode → 502 with `{errcode, errmsg}` in `data` (`Error::PlatformRefused`);
/// - no answer, or no verify ticket yet → 502.
pub fn release_platform_error(e: PlatformError) -> Error {
    match e {
        PlatformError::Refused { errcode: REVOKED, errmsg } => Error::Forbidden(
            Reason::MiniprogramAuthorization,
            format!(
                "the mini-program's authorisation to the platform was revoked (errcode {REVOKED}: {errmsg}); its admin must authorise it again"
            ),
        ),
        PlatformError::Refused { errcode: NOT_GRANTED, errmsg } => Error::Forbidden(
            Reason::MiniprogramAuthorization,
            format!(
                "the mini-program has not granted the platform the permission this needs (errcode {NOT_GRANTED}: {errmsg}); its admin must authorise it again with code management (development management) granted"
            ),
        ),
        PlatformError::Refused { errcode, errmsg } if QUOTA_CODES.contains(&errcode) => Error::RateLimited {
            message: format!("the platform's quota for this is used up (errcode {errcode}: {errmsg})"),
            retry_after_secs: QUOTA_RETRY_SECS,
        },
        PlatformError::Refused { errcode, errmsg } => {
            if let Some((_, field)) = FIELD_CODES.iter().find(|(code, _)| *code == errcode) {
                Error::Invalid(vec![FieldError::new(*field, format!("errcode {errcode}: {errmsg}"))])
            } else if CONFLICT_CODES.contains(&errcode) {
                Error::blocked(Reason::State, "platform", format!("errcode {errcode}: {errmsg}"))
            } else {
                Error::PlatformRefused { errcode, errmsg }
            }
        }
        e @ (PlatformError::Unavailable(_) | PlatformError::NoTicket) => Error::Upstream(e.to_string()),
    }
}

/// Which task a platform call belongs to, for the log.
#[derive(Clone, Copy)]
pub(super) enum TaskRef {
    None,
    Upload(Id),
    Audit(Id),
    Release,
}

impl std::fmt::Display for TaskRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TaskRef::None => f.write_str("no task"),
            TaskRef::Upload(id) => write!(f, "upload task {id}"),
            TaskRef::Audit(id) => write!(f, "audit task {id}"),
            TaskRef::Release => f.write_str("a release task"),
        }
    }
}

/// Logs a platform call's outcome for the tenant with its errcode and task, and hands it on.
pub(super) fn logged<T>(tenant_id: Id, call: &str, task: TaskRef, r: PlatformResult<T>) -> PlatformResult<T> {
    match &r {
        Ok(_) => log::info!("mini-program platform {call} for tenant {tenant_id} ({task}): errcode 0"),
        Err(e) => log::warn!("mini-program platform {call} for tenant {tenant_id} ({task}): {e}"),
    }
    r
}
