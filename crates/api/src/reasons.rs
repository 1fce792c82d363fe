//! Which `data.reason` each operation can answer with, per status: what the OpenAPI document
//! lists in `x-reasons` and in each error response's description. Every status has its
//! reasons that need no listing here (400 `invalid_input`, 401 `unauthenticated`, 404
//! `not_found`, …; see [`common`]); this table adds what an operation's own rules refuse.
//! The document interface (`/api/docs/`) keeps its own convention, `data` null, and is not
//! listed. The black-box tests check every error answer they meet against the document, so an entry
//! missing here fails a test rather than misleading a client.

use atrium_kernel::Reason::{self, *};

/// Reasons each operation (by `operationId`) adds, by status.
pub(crate) const BY_OPERATION: &[(&str, u16, &[Reason])] = &[
    ("auth_login", 403, &[PartyInactive]),
    ("auth_refresh", 403, &[PartyInactive]),
    ("auth_register", 409, &[Duplicate]),
    ("auth_chat_qr_callback", 409, &[State]),
    ("auth_chat_bind", 409, &[State, Duplicate]),
    ("users_create", 403, &[Escalation, PartyNotAllowed]),
    ("users_create", 409, &[Duplicate]),
    ("users_update", 403, &[Escalation, PartyNotAllowed]),
    ("users_update", 409, &[Duplicate, SelfAction]),
    ("users_delete", 403, &[Escalation]),
    ("users_delete", 409, &[SelfAction, InUse]),
    ("partners_create", 403, &[PartyNotAllowed]),
    ("partners_create", 409, &[Duplicate]),
    ("partners_update", 403, &[PartyNotAllowed]),
    ("partners_update", 409, &[Duplicate]),
    ("partners_delete", 403, &[PartyNotAllowed]),
    ("partners_delete", 409, &[InUse]),
    ("tenants_create", 403, &[PartyNotAllowed]),
    ("tenants_create", 409, &[Duplicate]),
    ("tenants_update", 403, &[PartyNotAllowed]),
    ("tenants_update", 409, &[Duplicate]),
    ("tenants_delete", 403, &[PartyNotAllowed]),
    ("tenants_delete", 409, &[InUse]),
    ("employees_create", 409, &[Duplicate]),
    ("employees_update", 409, &[Duplicate]),
    ("employees_delete", 409, &[InUse]),
    ("payroll_create", 409, &[Duplicate, RegularSheetFirst, NoEmployees]),
    ("payroll_update", 409, &[State, TryAgain]),
    ("payroll_calculate", 409, &[State, SheetItems, PayrollPolicy, TryAgain]),
    ("payroll_approve", 403, &[FourEyes]),
    ("payroll_approve", 409, &[State, StaleYearToDate, SheetItems, TryAgain]),
    ("payroll_send", 409, &[State, TryAgain]),
    ("payroll_export", 409, &[TotalTooLarge, SheetItems]),
    ("payroll_bank_file", 409, &[State, SheetItems, TotalTooLarge]),
    ("payroll_import", 409, &[State, TryAgain]),
    ("roles_create", 403, &[Escalation]),
    ("roles_create", 409, &[Duplicate]),
    ("roles_update", 403, &[Escalation, PartyNotAllowed]),
    ("roles_update", 409, &[BuiltIn, Duplicate]),
    ("roles_delete", 403, &[PartyNotAllowed]),
    ("roles_delete", 409, &[BuiltIn, InUse]),
    ("doc_admin_create_project", 409, &[Duplicate]),
    ("partners_put_share_plan", 403, &[PartyNotAllowed]),
    ("partners_put_share_plan", 409, &[OverMaxRatio, PaymentsNotReady, PlatformState, TryAgain]),
    ("payments_put_config", 409, &[PaymentsNotReady, State, Duplicate, OverMaxRatio, PlatformState]),
    ("payments_get_provider", 403, &[PartyNotAllowed]),
    ("payments_platform_earnings", 403, &[PartyNotAllowed]),
    ("payments_put_provider", 403, &[PartyNotAllowed]),
    ("payments_put_provider", 409, &[PaymentsNotReady, OverMaxRatio, PlatformState, State]),
    ("payments_upload_provider_keys", 403, &[PartyNotAllowed]),
    ("payments_test_provider", 403, &[PartyNotAllowed]),
    ("payments_test", 409, &[PaymentsNotReady, PlatformState]),
    (
        "payments_unified_order",
        409,
        &[
            AlreadyPaid,
            State,
            Duplicate,
            WrongRoute,
            Discrepancy,
            OtherPayer,
            PaymentsNotReady,
            PlatformState,
            TryAgain,
            IdempotencyKeyReused,
        ],
    ),
    ("payments_query", 409, &[PaymentsNotReady, PlatformState, TryAgain]),
    (
        "payments_refund",
        409,
        &[
            State,
            RefundExceedsPaid,
            RefundWindowClosed,
            TooManyRefunds,
            WrongRoute,
            Duplicate,
            Discrepancy,
            PaymentsNotReady,
            PlatformState,
            ReturnFailed,
            TryAgain,
            IdempotencyKeyReused,
        ],
    ),
    ("payments_close", 409, &[AlreadyPaid, State, WrongRoute, PaymentsNotReady, PlatformState, TryAgain]),
    ("payments_reconciliation", 409, &[PaymentsNotReady, PlatformState]),
    ("payments_retry_share", 409, &[State, Discrepancy, TryAgain]),
    ("payments_resolve_discrepancy", 403, &[PartyNotAllowed]),
    ("payments_resolve_discrepancy", 409, &[State, TryAgain, PaymentsNotReady, PlatformState, Duplicate]),
    ("orders_create", 409, &[Duplicate, WrongRoute, TryAgain, IdempotencyKeyReused]),
    (
        "orders_pay",
        409,
        &[
            State,
            AlreadyPaid,
            OrderExpired,
            OtherPayer,
            PayerOpenidMissing,
            PaymentsNotReady,
            Discrepancy,
            WrongRoute,
            Duplicate,
            PlatformState,
            TryAgain,
            IdempotencyKeyReused,
        ],
    ),
    (
        "orders_refund",
        409,
        &[
            State,
            RefundExceedsPaid,
            RefundWindowClosed,
            TooManyRefunds,
            Discrepancy,
            Duplicate,
            PaymentsNotReady,
            PlatformState,
            ReturnFailed,
            TryAgain,
            IdempotencyKeyReused,
        ],
    ),
    ("miniprogram_authorization_callback", 409, &[Duplicate, MiniprogramAuthorization]),
    ("miniprogram_upload", 409, &[Duplicate, MiniprogramAuthorization]),
    ("miniprogram_submit_audit", 403, &[MiniprogramAuthorization]),
    ("miniprogram_submit_audit", 409, &[State, Superseded, AuditRunning, MiniprogramAuthorization]),
    ("miniprogram_audit_status", 403, &[MiniprogramAuthorization]),
    ("miniprogram_audit_status", 409, &[State, TryAgain, MiniprogramAuthorization]),
    ("miniprogram_publish", 403, &[MiniprogramAuthorization]),
    ("miniprogram_publish", 409, &[AuditNotPassed, State, GrayNotRising, MiniprogramAuthorization]),
    ("miniprogram_rollback", 403, &[MiniprogramAuthorization]),
    ("miniprogram_rollback", 409, &[State, MiniprogramAuthorization]),
    ("miniprogram_versions", 403, &[MiniprogramAuthorization]),
    ("miniprogram_versions", 409, &[State, MiniprogramAuthorization]),
    ("miniprogram_audit_quota", 403, &[MiniprogramAuthorization]),
    ("miniprogram_audit_quota", 409, &[State, MiniprogramAuthorization]),
    ("miniprogram_speedup_audit", 403, &[MiniprogramAuthorization]),
    ("miniprogram_speedup_audit", 409, &[State, TryAgain, MiniprogramAuthorization]),
    ("miniprogram_undo_audit", 403, &[MiniprogramAuthorization]),
    ("miniprogram_undo_audit", 409, &[State, TryAgain, MiniprogramAuthorization]),
    ("miniprogram_domains", 403, &[MiniprogramAuthorization]),
    ("miniprogram_domains", 409, &[State, MiniprogramAuthorization]),
    ("miniprogram_put_domains", 403, &[MiniprogramAuthorization]),
    ("miniprogram_put_domains", 409, &[State, MiniprogramAuthorization]),
    ("miniprogram_privacy", 403, &[MiniprogramAuthorization]),
    ("miniprogram_privacy", 409, &[State, MiniprogramAuthorization]),
    ("miniprogram_put_privacy", 403, &[MiniprogramAuthorization]),
    ("miniprogram_put_privacy", 409, &[State, MiniprogramAuthorization]),
    ("miniprogram_create_campaign", 403, &[PartyNotAllowed]),
    ("miniprogram_create_campaign", 409, &[TenantInCampaign]),
    ("miniprogram_start_campaign", 409, &[State, TryAgain, TenantInCampaign, TenantOutOfScope]),
    ("miniprogram_pause_campaign", 409, &[State, TryAgain]),
    ("miniprogram_resume_campaign", 409, &[State, TryAgain]),
    ("miniprogram_advance_campaign", 409, &[State, TryAgain, TenantInCampaign]),
    ("miniprogram_cancel_campaign", 409, &[State, TryAgain]),
    ("miniprogram_retry_campaign", 409, &[State, TryAgain, TenantInCampaign]),
    ("miniprogram_experience_qr", 403, &[MiniprogramAuthorization]),
    ("miniprogram_experience_qr", 409, &[State, MiniprogramAuthorization]),
];

/// The reasons any operation answering `status` can give, whatever its own rules: what the
/// shared parts of the stack (parsing, authentication, scope, limits, the database, the
/// platforms) refuse with.
pub(crate) fn common(status: u16, with_permission: bool) -> Vec<Reason> {
    match status {
        400 => vec![InvalidInput],
        401 => vec![Unauthenticated],
        403 if with_permission => vec![MissingPermission, PartyInactive],
        403 => vec![PartyInactive],
        404 => vec![NotFound],
        408 => vec![RequestTimeout],
        413 => vec![TooLarge],
        429 => vec![RateLimited],
        502 => vec![PlatformRefused, PlatformUnavailable],
        503 => vec![Unavailable],
        _ => vec![],
    }
}

/// Every reason `operation` can answer `status` with.
pub(crate) fn of(operation: &str, status: u16, with_permission: bool) -> Vec<Reason> {
    let mut out = common(status, with_permission);
    for (_, _, extra) in BY_OPERATION.iter().filter(|(op, st, _)| *op == operation && *st == status) {
        for r in *extra {
            if !out.contains(r) {
                out.push(*r);
            }
        }
    }
    out
}
