//! Why a request was refused, as a stable name a program can branch on.

use serde::Serialize;

/// Why a request was refused: every error answer carries one as `data.reason`, beside its
/// HTTP status and its English `message`. The names are part of the interface: a variant may
/// be added, never renamed or removed. Statuses are the usual ones for each reason; a reason
/// keeps its name whatever status it comes with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, strum::IntoStaticStr, strum::EnumString, strum::EnumIter)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Reason {
    /// 400: the request itself is malformed or a field is wrong (`data.errors` names them).
    InvalidInput,
    /// 401: no credentials, wrong ones, or an ended session.
    Unauthenticated,
    /// 403: the caller's roles lack the permission the operation needs.
    MissingPermission,
    /// 403: the caller's party (platform, partner or tenant) may not do this at all, e.g. a
    /// tenant user creating a partner.
    PartyNotAllowed,
    /// 403: the change would give someone a permission the caller does not hold itself.
    Escalation,
    /// 403: four-eyes approval; the user who calculated a payroll sheet may not approve it.
    FourEyes,
    /// 403: the caller's tenant or partner is not active (awaiting activation, disabled).
    PartyInactive,
    /// 403: a document API token that is revoked, expired or not granted the project.
    TokenNotAllowed,
    /// 403 or 409: the tenant's mini-program has not authorised the platform, revoked it, or
    /// did not grant the permission the call needs; its admin must authorise it again.
    MiniprogramAuthorization,
    /// 404: the record is missing or outside the caller's scope (never told apart).
    NotFound,
    /// 409: a value that must be unique is taken (a username, an order number, a version).
    Duplicate,
    /// 409: other records refer to this one (users hold the role, payroll pays the employee).
    InUse,
    /// 409: the record's state does not allow this (an approved sheet, a closed order, a
    /// scanned QR ticket); `message` says which state.
    State,
    /// 409: the record changed while the request was being served, or another request on it
    /// is in progress; the same request may succeed when tried again.
    TryAgain,
    /// 409: this `Idempotency-Key` was used with a different request.
    IdempotencyKeyReused,
    /// 409: the request acts on the caller's own user or tenant in a way that is not allowed.
    SelfAction,
    /// 409: a built-in role cannot be changed or deleted.
    BuiltIn,
    /// 409: the order or transaction is already paid.
    AlreadyPaid,
    /// 409: the order expired before it was paid; create a new one.
    OrderExpired,
    /// 409: the refund asks for more than is left to refund of what was paid.
    RefundExceedsPaid,
    /// 409: refunds of this payment are no longer possible (the refund window closed).
    RefundWindowClosed,
    /// 409: the payment already has the most refunds allowed.
    TooManyRefunds,
    /// 409: the order is being paid by another payer.
    OtherPayer,
    /// 409: paying through the mini-program needs the payer's openid, and neither the order
    /// nor the request has one.
    PayerOpenidMissing,
    /// 409: the payment has a discrepancy between our books and the pay platform's to resolve
    /// first.
    Discrepancy,
    /// 409: the transaction belongs to an order (or to the payment routes) and is paid,
    /// refunded and closed through that route instead.
    WrongRoute,
    /// 409: the tenant's payments are not configured, disabled, or its configuration is
    /// incomplete or unusable.
    PaymentsNotReady,
    /// 409: the pay platform refused because of the payment's state there (its code is in
    /// `data.errors`).
    PlatformState,
    /// 409: only an audit that passed can be released.
    AuditNotPassed,
    /// 409: the tenant already has an audit running on the platform (one at a time).
    AuditRunning,
    /// 409: a later version was uploaded; the platform audits the latest upload only.
    Superseded,
    /// 409: a gray release may only rise.
    GrayNotRising,
    /// 409: the tenant is in another release campaign that is running or paused.
    TenantInCampaign,
    /// 409: a tenant a partner's release campaign names has left the partner's scope (moved
    /// to another partner) since the campaign was created.
    TenantOutOfScope,
    /// 409: items of the sheet block it (`data.errors` names them): an item that cannot be
    /// calculated, an employee without a bank account, a cell a file cannot hold.
    SheetItems,
    /// 409: the tenant's payroll policy is not valid (`data.errors` names its fields).
    PayrollPolicy,
    /// 409: another sheet of the employees was approved since this one was calculated;
    /// recalculate it.
    StaleYearToDate,
    /// 409: a supplementary sheet needs its period's regular sheet, approved or sent.
    RegularSheetFirst,
    /// 409: the tenant has no active employees to pay.
    NoEmployees,
    /// 409: a total is too large to write in a file; split the sheet.
    TotalTooLarge,
    /// 409: the shares a payment would be split into add up to more than the sub-merchant
    /// allows the service provider to split off (its `max_ratio` on the pay platform);
    /// `data.errors` names the rate and each sub-merchant it exceeds.
    OverMaxRatio,
    /// 409: the refund of a shared payment needs part of a share back from its receiver first,
    /// and it could not be taken back (the platform's word in `data.fail_reason`, or a share
    /// paid to a person, whom the platform takes nothing back from). The refund was not sent.
    ReturnFailed,
    /// 405: the path exists, the method does not (`Allow` lists those that do).
    MethodNotAllowed,
    /// 408: the request body did not arrive in time; the connection is closed.
    RequestTimeout,
    /// 413: the body or file is larger than allowed.
    TooLarge,
    /// 429: too many attempts; `Retry-After` says when to try again.
    RateLimited,
    /// 502: a platform refused the call with its own error code (`data.errcode`, `data.errmsg`).
    PlatformRefused,
    /// 502: a platform failed, timed out or answered something unreadable.
    PlatformUnavailable,
    /// 503: the database is unavailable or saturated; `Retry-After` says when to try again.
    Unavailable,
    /// 500: an error of ours; the message says nothing more, the log has the cause.
    Internal,
}

impl Reason {
    /// The name on the wire, e.g. `"four_eyes"`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Every reason, in the order they are declared.
    pub fn all() -> impl Iterator<Item = Reason> {
        <Reason as strum::IntoEnumIterator>::iter()
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strum::IntoEnumIterator;

    #[test]
    fn wire_names_are_snake_case_and_match_serde() {
        for r in Reason::iter() {
            assert_eq!(serde_json::to_value(r).ok(), Some(serde_json::Value::from(r.as_str())));
            assert!(r.as_str().chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{r}");
            assert_eq!(r.as_str().parse::<Reason>().ok(), Some(r));
        }
        assert_eq!(Reason::FourEyes.as_str(), "four_eyes");
    }
}
