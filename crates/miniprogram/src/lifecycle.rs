//! The lifecycles of code releases: a tenant's authorisation, an upload task, an audit task
//! and the release steps that may follow a passed audit.
//!
//! - Authorisation: `none` → `authorized` ⇄ `revoked` (a revoked mini-program may be
//!   authorised again).
//! - Upload: `queued` → `running` → `uploaded` | `failed`. A crashed run leaves the task
//!   `running`; it runs again from there. `uploaded` and `failed` are final.
//! - Audit: `auditing` → `delayed` → `passed` | `rejected` | `withdrawn`; `delayed` is still
//!   under audit. The platform's reports arrive late and twice (an event and a poll), so a
//!   report that would move an audit backwards is ignored.
//! - Release of a passed audit: any number of gray steps whose percentage only rises, then at
//!   most one full release; nothing after the full release.
use crate::model::{ReleaseMode, ReleaseState};
use atrium_kernel::Error;
use atrium_kernel::Reason;
use serde::{Deserialize, Serialize};

/// Whether a tenant's mini-program is authorised to our third-party platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum AuthorizationStatus {
    /// Never authorised.
    None,
    /// Authorised: calls for the tenant use its authorizer token.
    Authorized,
    /// The mini-program's admin withdrew the authorisation (an `unauthorized` event, or the
    /// platform answering 61003). Authorising again restores it.
    Revoked,
}

/// An upload task's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum UploadStatus {
    /// Recorded; its job has not started.
    Queued,
    /// Its job is uploading and committing the code.
    Running,
    /// The code is committed to the tenant's mini-program: it can be submitted for audit.
    Uploaded,
    /// The upload or the commit failed; `errcode` and `error` say why.
    Failed,
}

impl UploadStatus {
    /// Whether the upload is over (`uploaded` or `failed`) and will not change again.
    pub fn is_final(self) -> bool {
        matches!(self, UploadStatus::Uploaded | UploadStatus::Failed)
    }

    /// The status once a job starts on the task: `Some(Running)` from `queued` or from a
    /// `running` task whose earlier run crashed; `None` for a finished task.
    pub fn start(self) -> Option<UploadStatus> {
        (!self.is_final()).then_some(UploadStatus::Running)
    }

    /// The status once a run ends with `outcome` (`Uploaded` or `Failed`): only a running
    /// task finishes.
    pub fn finish(self, outcome: UploadStatus) -> Option<UploadStatus> {
        (self == UploadStatus::Running && outcome.is_final()).then_some(outcome)
    }
}

/// An audit task's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum AuditStatus {
    /// Submitted, under audit.
    Auditing,
    /// Under audit, and the platform said it will take longer.
    Delayed,
    /// Passed: releasable.
    Passed,
    /// Rejected, with a reason and screenshots.
    Rejected,
    /// Withdrawn (`undocodeaudit`).
    Withdrawn,
}

impl AuditStatus {
    /// The status the platform's `get_auditstatus` code stands for: 0 passed, 1 rejected,
    /// 2 auditing, 3 withdrawn, 4 delayed.
    pub fn from_platform_code(code: i64) -> Option<AuditStatus> {
        match code {
            0 => Some(AuditStatus::Passed),
            1 => Some(AuditStatus::Rejected),
            2 => Some(AuditStatus::Auditing),
            3 => Some(AuditStatus::Withdrawn),
            4 => Some(AuditStatus::Delayed),
            _ => None,
        }
    }

    /// Whether the platform is still deciding (another submission is refused meanwhile).
    pub fn is_running(self) -> bool {
        matches!(self, AuditStatus::Auditing | AuditStatus::Delayed)
    }

    fn rank(self) -> u8 {
        match self {
            AuditStatus::Auditing => 0,
            AuditStatus::Delayed => 1,
            AuditStatus::Passed | AuditStatus::Rejected | AuditStatus::Withdrawn => 2,
        }
    }

    /// The status once the platform has reported `reported`: `Some` when it moves the audit
    /// forward, `None` when the report is stale, repeats the status, or contradicts a
    /// decision already taken.
    pub fn advance(self, reported: AuditStatus) -> Option<AuditStatus> {
        (reported.rank() > self.rank()).then_some(reported)
    }
}

/// What a release task did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ReleaseKind {
    /// `/wxa/release`: every user gets the audited version.
    Full,
    /// `/wxa/grayrelease`: a percentage of users get it.
    Gray,
    /// `/wxa/revertcoderelease`: back to an earlier version.
    Rollback,
}

/// Whether the platform carried a release task out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ReleaseStatus {
    /// The platform carried it out.
    Succeeded,
    /// The platform refused or could not be reached; `errcode` says why when it answered.
    Failed,
}

/// Whether a passed audit may be released in `mode` now, given what was released of it
/// before. A bad percentage is `Invalid` (400); a step out of order is `Blocked` (409).
///
/// ```
/// use atrium_miniprogram::{AuditStatus, ReleaseMode, ReleaseState, check_release};
///
/// // Gray to 10 %, then to 50 %: a gray release only rises.
/// let at_ten = ReleaseState { gray_percentage: Some(10), released_at: None };
/// assert!(check_release(AuditStatus::Passed, &at_ten, ReleaseMode::Gray(50)).is_ok());
/// assert!(check_release(AuditStatus::Passed, &at_ten, ReleaseMode::Gray(5)).is_err());
/// // Only a passed audit is released.
/// assert!(check_release(AuditStatus::Auditing, &ReleaseState::default(), ReleaseMode::Full).is_err());
/// ```
pub fn check_release(audit: AuditStatus, released: &ReleaseState, mode: ReleaseMode) -> Result<(), Error> {
    let blocked = |reason: Reason, message: String| Error::blocked(reason, "audit_task_id", message);
    if audit != AuditStatus::Passed {
        let status: &'static str = audit.into();
        return Err(blocked(Reason::AuditNotPassed, format!("only a passed audit can be released; this one is {status}")));
    }
    if released.released_at.is_some() {
        return Err(blocked(Reason::State, "this version is already fully released".into()));
    }
    if let ReleaseMode::Gray(percentage) = mode {
        if !(1..=100).contains(&percentage) {
            return Err(Error::invalid("gray_percentage", "must be between 1 and 100"));
        }
        if let Some(current) = released.gray_percentage.filter(|current| percentage <= *current) {
            return Err(Error::blocked(
                Reason::GrayNotRising,
                "gray_percentage",
                format!("a gray release may only rise; it is at {current} %, so ask for more than that"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use atrium_kernel::StrEnum;

    #[test]
    fn platform_audit_codes_map_to_statuses() {
        let mapped: Vec<_> = (0..5).map(AuditStatus::from_platform_code).collect();
        assert_eq!(
            mapped,
            [
                Some(AuditStatus::Passed),
                Some(AuditStatus::Rejected),
                Some(AuditStatus::Auditing),
                Some(AuditStatus::Withdrawn),
                Some(AuditStatus::Delayed)
            ]
        );
        assert_eq!(AuditStatus::from_platform_code(5), None);
    }

    #[test]
    fn an_audit_moves_forward_only_and_a_decision_is_final() {
        use AuditStatus as A;
        assert_eq!(A::Auditing.advance(A::Delayed), Some(A::Delayed));
        assert_eq!(A::Auditing.advance(A::Passed), Some(A::Passed));
        assert_eq!(A::Delayed.advance(A::Rejected), Some(A::Rejected));
        assert_eq!(A::Delayed.advance(A::Auditing), None);
        for decided in [A::Passed, A::Rejected, A::Withdrawn] {
            for later in [A::Auditing, A::Delayed, A::Passed, A::Rejected, A::Withdrawn] {
                assert_eq!(decided.advance(later), None, "{decided:?} -> {later:?}");
            }
            assert!(!decided.is_running());
        }
        assert!(A::Auditing.is_running() && A::Delayed.is_running());
    }

    #[test]
    fn an_upload_starts_once_and_finishes_once() {
        use UploadStatus as U;
        assert_eq!(U::Queued.start(), Some(U::Running));
        assert_eq!(U::Running.start(), Some(U::Running), "a crashed run is taken up again");
        assert_eq!(U::Uploaded.start(), None);
        assert_eq!(U::Failed.start(), None);
        assert_eq!(U::Running.finish(U::Uploaded), Some(U::Uploaded));
        assert_eq!(U::Running.finish(U::Failed), Some(U::Failed));
        assert_eq!(U::Queued.finish(U::Uploaded), None);
        assert_eq!(U::Uploaded.finish(U::Failed), None);
        assert_eq!(U::Running.finish(U::Queued), None);
    }

    #[test]
    fn statuses_have_snake_case_names() {
        assert_eq!(AuthorizationStatus::Authorized.as_str(), "authorized");
        assert_eq!(UploadStatus::Uploaded.as_str(), "uploaded");
        assert_eq!(AuditStatus::Withdrawn.as_str(), "withdrawn");
        assert_eq!(ReleaseKind::Rollback.as_str(), "rollback");
        assert_eq!(serde_json::to_value(ReleaseStatus::Succeeded).ok(), Some(serde_json::Value::from("succeeded")));
    }

    fn state(gray: Option<u8>, full: bool) -> ReleaseState {
        ReleaseState { gray_percentage: gray, released_at: full.then(chrono::Utc::now) }
    }

    #[test]
    fn only_a_passed_audit_is_releasable() {
        for status in [AuditStatus::Auditing, AuditStatus::Delayed, AuditStatus::Rejected, AuditStatus::Withdrawn] {
            let err = check_release(status, &state(None, false), ReleaseMode::Full).unwrap_err();
            assert!(matches!(err, Error::Blocked(_, ref f) if f[0].field == "audit_task_id"), "{status:?}: {err:?}");
        }
        assert!(check_release(AuditStatus::Passed, &state(None, false), ReleaseMode::Full).is_ok());
    }

    #[test]
    fn a_gray_percentage_is_1_to_100_and_only_rises() {
        let fresh = state(None, false);
        for bad in [0, 101, 255] {
            assert!(matches!(check_release(AuditStatus::Passed, &fresh, ReleaseMode::Gray(bad)), Err(Error::Invalid(_))), "{bad}");
        }
        assert!(check_release(AuditStatus::Passed, &fresh, ReleaseMode::Gray(1)).is_ok());
        assert!(check_release(AuditStatus::Passed, &fresh, ReleaseMode::Gray(100)).is_ok());
        let at_20 = state(Some(20), false);
        for not_higher in [5, 20] {
            let err = check_release(AuditStatus::Passed, &at_20, ReleaseMode::Gray(not_higher)).unwrap_err();
            assert!(matches!(err, Error::Blocked(_, ref f) if f[0].field == "gray_percentage"), "{not_higher}: {err:?}");
        }
        assert!(check_release(AuditStatus::Passed, &at_20, ReleaseMode::Gray(50)).is_ok());
        assert!(check_release(AuditStatus::Passed, &at_20, ReleaseMode::Full).is_ok(), "full completes a gray release");
    }

    #[test]
    fn nothing_follows_a_full_release() {
        let done = state(Some(30), true);
        assert!(matches!(check_release(AuditStatus::Passed, &done, ReleaseMode::Full), Err(Error::Blocked(..))));
        assert!(matches!(check_release(AuditStatus::Passed, &done, ReleaseMode::Gray(60)), Err(Error::Blocked(..))));
    }
}
