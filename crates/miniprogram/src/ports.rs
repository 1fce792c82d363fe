//! The mini-program domain's ports: payment storage ([`PaymentRepo`]), the pay platform
//! ([`PayPlatform`]) and the inspection of merchant keys and certificates
//! ([`MerchantKeys`]), which keeps PEM and X.509 parsing out of the domain.
use crate::api::PayParams;
use crate::lifecycle::{RefundStatus, TradeState};
use crate::model::*;
use async_trait::async_trait;
use atrium_kernel::{AuditRecord, Id, Party, Result, Timestamp};

/// Storage of payment configurations, transactions, refunds and seen notifications.
///
/// Every write that must be atomic is one method here, run as one database transaction. The
/// store encrypts [`Secret`] fields at rest and decrypts them on read.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait PaymentRepo: Send + Sync + 'static {
    /// The tenant if it is in `scope` (a partner sees its tenants, a tenant itself, the
    /// platform all); `None` otherwise.
    async fn tenant(&self, scope: Party, tenant_id: Id) -> Result<Option<PaymentTenant>>;

    async fn get_config(&self, tenant_id: Id) -> Result<Option<PaymentConfig>>;
    /// Inserts or replaces the tenant's configuration (one per tenant) with its audit record,
    /// in one transaction, and returns what it stored.
    async fn put_config(&self, config: PaymentConfig, audit: AuditRecord) -> Result<PaymentConfig>;

    /// Stores a new transaction and returns it with its id. MUST return `Conflict` when the
    /// tenant already has a transaction with this `out_trade_no` (a unique index on
    /// `(tenant_id, out_trade_no)`).
    async fn insert_transaction(&self, tx: Transaction) -> Result<Transaction>;
    async fn get_transaction(&self, tenant_id: Id, out_trade_no: String) -> Result<Option<Transaction>>;
    /// Writes `tx`'s mutable fields (prepay id, trade state, transaction id, payer total,
    /// success time, updated_at) only if the stored `trade_state` still equals `read_state` —
    /// a conditional update (`… WHERE trade_state = read_state`), so a notification and a
    /// query racing each other cannot move a transaction backwards. Returns whether it wrote;
    /// on `false` the caller reads again and re-applies.
    async fn update_transaction(&self, tx: Transaction, read_state: TradeState) -> Result<bool>;

    /// Reserves a refund, atomically, in one write transaction that serialises with every
    /// other reservation for the same transaction (a row lock on the transaction, `SELECT …
    /// FOR UPDATE` on PostgreSQL, `BEGIN IMMEDIATE` on SQLite):
    /// 1. a refund with `refund.out_refund_no` for this tenant exists → `Existing(it)`,
    ///    nothing written;
    /// 2. the transaction already has `max_refunds` refunds (any status) → `TooManyRefunds`;
    /// 3. the `amount`s of its `processing` and `succeeded` refunds plus `refund.amount`
    ///    exceed `paid` → `ExceedsPaid { refundable: paid − those }`;
    /// 4. otherwise inserts `refund` (status `processing`) → `Reserved(stored)`.
    ///
    /// So concurrent refunds of one transaction can never together exceed what was paid.
    /// `out_refund_no` is unique per tenant.
    async fn reserve_refund(&self, refund: Refund, paid: atrium_kernel::Money, max_refunds: u32) -> Result<RefundReservation>;
    async fn get_refund(&self, tenant_id: Id, out_refund_no: String) -> Result<Option<Refund>>;
    /// Writes `refund`'s mutable fields (refund id, status, succeeded_at, updated_at) only if
    /// the stored status still equals `read_status`; returns whether it wrote. A refund
    /// leaving `processing` for `failed` or `closed` gives its amount back to the balance
    /// [`PaymentRepo::reserve_refund`] checks.
    async fn update_refund(&self, refund: Refund, read_status: RefundStatus) -> Result<bool>;

    /// Whether the tenant's notification `event_id` was already processed.
    async fn notification_seen(&self, tenant_id: Id, event_id: String) -> Result<bool>;
    /// Records that `event_id` was processed. MUST be idempotent: recording an id twice (two
    /// deliveries racing) is not an error.
    async fn record_notification(&self, tenant_id: Id, event_id: String, event_type: String, at: Timestamp) -> Result<()>;

    /// The tenant's transactions whose `success_time` lies in `[from, to)`.
    async fn paid_between(&self, tenant_id: Id, from: Timestamp, to: Timestamp) -> Result<Vec<Transaction>>;
    /// The tenant's transactions with these numbers (unknown ones are left out).
    async fn transactions_by_numbers(&self, tenant_id: Id, out_trade_nos: Vec<String>) -> Result<Vec<Transaction>>;
    /// The tenant's refunds whose `succeeded_at` lies in `[from, to)`.
    async fn refunds_succeeded_between(&self, tenant_id: Id, from: Timestamp, to: Timestamp) -> Result<Vec<Refund>>;
    /// The tenant's refunds with these numbers (unknown ones are left out).
    async fn refunds_by_numbers(&self, tenant_id: Id, out_refund_nos: Vec<String>) -> Result<Vec<Refund>>;
    /// The tenants with a transaction or refund created before `to` and changed at or after
    /// `from`: those whose trade bill of that period is worth reconciling.
    async fn tenants_with_activity(&self, from: Timestamp, to: Timestamp) -> Result<Vec<Id>>;
}

/// Hears of transactions and refunds whose state changed (another domain, such as orders,
/// through the server). Called after the change is stored, by whichever path made it — a
/// notification, a query, a close, a job; an error is logged and the change stands, so the
/// observer must also be able to catch up by asking (the payment service's `*_for` calls).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait PaymentObserver: Send + Sync + 'static {
    async fn transaction_changed(&self, tx: Transaction) -> Result<()>;
    async fn refund_changed(&self, refund: Refund) -> Result<()>;
}

/// Why a pay platform call failed. Messages never carry a key, a signature or a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PayPlatformError {
    /// The platform answered 4xx: it refused the request, with its `code` (`ORDER_NOT_EXIST`,
    /// `ORDERPAID`, `NOT_ENOUGH`, …). Never retried.
    #[error("the pay platform refused the request (HTTP {status}, {code}): {message}")]
    Refused { status: u16, code: String, message: String },
    /// The platform answered 5xx or not at all (time-out, connection) after the bounded
    /// retries, or its answer was unreadable or failed signature verification.
    #[error("the pay platform is unavailable: {0}")]
    Unavailable(String),
    /// Our side cannot make the call: the stored key or a platform key cannot be used.
    #[error("the payment credentials cannot be used: {0}")]
    Credentials(String),
}

pub type PayResult<T> = std::result::Result<T, PayPlatformError>;

/// The pay platform (WeChat Pay API v3), acting for one merchant per call. The adapter signs
/// each request with the merchant key, verifies each answer with the platform key the answer
/// names, retries 5xx answers and time-outs a bounded number of times and never a 4xx.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait PayPlatform: Send + Sync + 'static {
    /// Places a JSAPI order; returns the `prepay_id`.
    async fn jsapi_order(&self, account: &MerchantAccount, order: &JsapiOrder) -> PayResult<String>;
    /// What the mini-program passes to `wx.requestPayment` for `prepay_id`, signed with the
    /// merchant key over `appId\ntimeStamp\nnonceStr\npackage\n`.
    fn pay_params(&self, account: &MerchantAccount, prepay_id: &str) -> PayResult<PayParams>;
    /// The transaction as the platform knows it; `Refused` with `ORDER_NOT_EXIST` when it
    /// does not.
    async fn query_order(&self, account: &MerchantAccount, out_trade_no: &str) -> PayResult<PlatformTransaction>;
    /// Closes an unpaid order (`ORDERPAID` when it was paid meanwhile).
    async fn close_order(&self, account: &MerchantAccount, out_trade_no: &str) -> PayResult<()>;
    /// Requests a refund; an accepted refund is usually still `processing`.
    async fn refund(&self, account: &MerchantAccount, refund: &RefundOrder) -> PayResult<PlatformRefund>;
    async fn query_refund(&self, account: &MerchantAccount, out_refund_no: &str) -> PayResult<PlatformRefund>;
    /// The day's trade bill: downloaded, its SHA-1 checked, parsed, amounts in fen. An empty
    /// day (`NO_STATEMENT_EXIST`) is an empty list.
    async fn trade_bill(&self, account: &MerchantAccount, date: BillDate) -> PayResult<Vec<BillLine>>;
    /// Verifies a notification's signature over its raw body with the platform key its
    /// `Wechatpay-Serial` names (timestamp within 300 s of `now`), decrypts its resource with
    /// the APIv3 key and parses it.
    fn open_notification(
        &self,
        account: &MerchantAccount,
        request: &NotificationRequest,
        now: Timestamp,
    ) -> std::result::Result<PayEvent, NotificationError>;
}

/// Inspects uploaded key material. Errors are `Invalid` naming the part at fault
/// (`private_key`, `certificate`, `platform_public_key`).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
pub trait MerchantKeys: Send + Sync + 'static {
    /// A PEM RSA private key (PKCS#8 or PKCS#1) of at least 2048 bits.
    fn inspect_private_key(&self, pem: &Secret) -> Result<KeyInfo>;
    /// A PEM X.509 certificate with an RSA key of at least 2048 bits, valid at `now`.
    fn inspect_certificate(&self, pem: &str, now: Timestamp) -> Result<CertInfo>;
    /// A PEM public key, or a PEM certificate, of the platform; returns its fingerprint.
    fn inspect_platform_key(&self, pem: &str) -> Result<KeyInfo>;
}

// --- code releases ----------------------------------------------------------------------------
// (Imports for this part sit here so the part stays one block at the end of the file.)
use crate::lifecycle::UploadStatus;
use crate::package::{PackageError, PackageInfo, PackageLimits};
use atrium_kernel::Page;
use std::path::PathBuf;

/// Storage of authorisations, the verify ticket, kept packages, upload, audit and release
/// tasks and seen events.
///
/// The store encrypts [`Secret`] fields at rest (the refresh token, the verify ticket) and
/// decrypts them on read. Every write that must be atomic is one method here.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait ReleaseRepo: Send + Sync + 'static {
    /// The tenant if it is in `scope`; `None` otherwise.
    async fn tenant(&self, scope: Party, tenant_id: Id) -> Result<Option<ReleaseTenant>>;

    async fn get_authorization(&self, tenant_id: Id) -> Result<Option<Authorization>>;
    async fn authorization_by_appid(&self, authorizer_appid: String) -> Result<Option<Authorization>>;
    /// Inserts or replaces the tenant's authorisation (one per tenant) with its audit record,
    /// in one transaction. MUST return `Conflict` when another tenant's authorisation holds
    /// the same `authorizer_appid` (a unique index).
    async fn save_authorization(&self, authorization: Authorization, audit: AuditRecord) -> Result<Authorization>;

    async fn insert_authorization_attempt(&self, attempt: AuthorizationAttempt) -> Result<()>;
    /// Removes and returns the attempt with this state hash: a state is used once.
    async fn take_authorization_attempt(&self, state_hash: String) -> Result<Option<AuthorizationAttempt>>;
    /// The attempt that handed out `pre_auth_code` (an `authorized` event names it), left in
    /// place.
    async fn authorization_attempt_by_code(&self, pre_auth_code: String) -> Result<Option<AuthorizationAttempt>>;

    async fn verify_ticket(&self) -> Result<Option<VerifyTicket>>;
    /// Keeps `ticket` unless the stored one is as new or newer (by `created_at`), in one
    /// conditional write; returns whether it wrote.
    async fn save_verify_ticket(&self, ticket: VerifyTicket) -> Result<bool>;

    /// Whether the pushed event `event_id` was already processed.
    async fn event_seen(&self, event_id: String) -> Result<bool>;
    /// Records that `event_id` was processed. MUST be idempotent.
    async fn record_event(&self, event_id: String, kind: String, at: Timestamp) -> Result<()>;

    /// Takes the checked package file at `file` into keeping, named by `info.sha256`, and
    /// records it (moving the file; the same hash twice keeps one copy and drops the second
    /// file). Returns where it is kept.
    async fn keep_package(&self, tenant_id: Id, info: PackageInfo, file: PathBuf) -> Result<StoredPackage>;
    async fn package(&self, sha256: String) -> Result<Option<StoredPackage>>;

    /// Stores a new upload task and returns it with its id. MUST return `Conflict` when the
    /// tenant already has a task with this `version` (a unique index on
    /// `(tenant_id, version)`).
    async fn insert_upload_task(&self, task: UploadTask) -> Result<UploadTask>;
    /// The task if its tenant is in `scope`.
    async fn upload_task(&self, scope: Party, id: Id) -> Result<Option<UploadTask>>;
    async fn upload_version_used(&self, tenant_id: Id, version: String) -> Result<bool>;
    /// The tenant's most recently finished `uploaded` task: the code the platform holds.
    async fn latest_uploaded(&self, tenant_id: Id) -> Result<Option<UploadTask>>;
    /// Writes the task's mutable fields (status, template id, errcode, error, started,
    /// finished, updated) only if the stored status still equals `read_status`; returns
    /// whether it wrote.
    async fn update_upload_task(&self, task: UploadTask, read_status: UploadStatus) -> Result<bool>;
    /// Tasks whose tenant is in `scope`, filtered, newest first by default.
    async fn list_upload_tasks(&self, scope: Party, query: UploadTaskQuery) -> Result<Page<UploadTask>>;

    /// Stores a new audit task and returns it with its id. MUST return `Conflict` when the
    /// tenant already has an audit that is `auditing` or `delayed`.
    async fn insert_audit_task(&self, task: AuditTask) -> Result<AuditTask>;
    /// The task if its tenant is in `scope`.
    async fn audit_task(&self, scope: Party, id: Id) -> Result<Option<AuditTask>>;
    /// The tenant's newest audit task.
    async fn latest_audit_task(&self, tenant_id: Id) -> Result<Option<AuditTask>>;
    /// The tenant's audit that is `auditing` or `delayed`, if any.
    async fn running_audit(&self, tenant_id: Id) -> Result<Option<AuditTask>>;
    /// Writes the task's mutable fields (status, reason, screenshots, decided, release
    /// state, updated) only if the stored status and release state still equal `read`;
    /// returns whether it wrote.
    async fn update_audit_task(&self, task: AuditTask, read: AuditState) -> Result<bool>;
    async fn list_audit_tasks(&self, scope: Party, query: AuditTaskQuery) -> Result<Page<AuditTask>>;

    /// Stores a release task and returns it with its id.
    async fn insert_release_task(&self, task: ReleaseTask) -> Result<ReleaseTask>;
}

/// Why a call to the mini-program platform failed. Messages never carry a token or secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlatformError {
    /// The platform answered with a non-zero `errcode`. A stale authorizer token
    /// (40001/42001) is refreshed and retried once by the adapter before this is returned.
    #[error("the mini-program platform refused the call (errcode {errcode}): {errmsg}")]
    Refused { errcode: i64, errmsg: String },
    /// No answer (time-out, connection) after the bounded retries, an HTTP error, or an
    /// unreadable answer.
    #[error("the mini-program platform is unavailable: {0}")]
    Unavailable(String),
    /// Nothing to call with yet: no verify ticket has arrived.
    #[error("the third-party platform has no verify ticket yet; it pushes one every 10 minutes")]
    NoTicket,
}

impl PlatformError {
    pub fn errcode(&self) -> Option<i64> {
        match self {
            PlatformError::Refused { errcode, .. } => Some(*errcode),
            _ => None,
        }
    }
}

pub type PlatformResult<T> = std::result::Result<T, PlatformError>;

/// The mini-program platform as a third-party platform sees it: the component's own calls
/// (pre-auth codes, authorisations, the template library) and code management of one
/// authorised mini-program, in domain words.
///
/// The adapter derives the component token from the verify ticket it is given and caches it
/// until shortly before it expires; it caches each mini-program's authorizer token the same
/// way, and on 40001/42001 refreshes it and retries the call exactly once.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait MiniProgramPlatform: Send + Sync + 'static {
    /// A pre-auth code for the authorisation page.
    async fn pre_auth_code(&self, verify_ticket: &Secret) -> PlatformResult<PreAuthCode>;
    /// The platform's authorisation page for `pre_auth_code`, redirecting to `redirect_uri`.
    fn authorize_url(&self, pre_auth_code: &str, redirect_uri: &str) -> String;
    /// What an authorisation code grants (`api_query_auth`).
    async fn query_auth(&self, verify_ticket: &Secret, authorization_code: &Secret) -> PlatformResult<AuthorizationGrant>;
    async fn authorizer_profile(&self, verify_ticket: &Secret, authorizer_appid: &str) -> PlatformResult<AuthorizerProfile>;

    /// The drafts in the template-development mini-program.
    async fn template_drafts(&self, verify_ticket: &Secret) -> PlatformResult<Vec<TemplateDraft>>;
    /// Adds a draft to the template library.
    async fn add_to_template(&self, verify_ticket: &Secret, draft_id: i64) -> PlatformResult<()>;
    async fn templates(&self, verify_ticket: &Secret) -> PlatformResult<Vec<Template>>;

    async fn commit(&self, access: &AuthorizerAccess, commit: &CodeCommit) -> PlatformResult<()>;
    /// Submits the committed code for audit; returns the `auditid`.
    async fn submit_audit(&self, access: &AuthorizerAccess, submission: &AuditSubmission) -> PlatformResult<i64>;
    async fn audit_status(&self, access: &AuthorizerAccess, auditid: i64) -> PlatformResult<PlatformAudit>;
    /// Releases the passed audit to every user.
    async fn release(&self, access: &AuthorizerAccess) -> PlatformResult<()>;
    async fn gray_release(&self, access: &AuthorizerAccess, percentage: u8) -> PlatformResult<()>;
    async fn gray_plan(&self, access: &AuthorizerAccess) -> PlatformResult<GrayPlan>;
    async fn revert_gray_release(&self, access: &AuthorizerAccess) -> PlatformResult<()>;
    /// Back to `app_version`, or to the previous version.
    async fn revert_release(&self, access: &AuthorizerAccess, app_version: Option<i64>) -> PlatformResult<()>;
    /// Up to five earlier versions a rollback can go to.
    async fn history_versions(&self, access: &AuthorizerAccess) -> PlatformResult<Vec<VersionRecord>>;
    async fn version_info(&self, access: &AuthorizerAccess) -> PlatformResult<VersionInfo>;
    /// The trial version's QR code, a JPEG, opening `path` when given.
    async fn experience_qr(&self, access: &AuthorizerAccess, path: Option<String>) -> PlatformResult<Vec<u8>>;

    /// Verifies a push's `msg_signature`, decrypts it, checks that it is addressed to our
    /// component, and reads it.
    fn open_event(&self, url: EventUrl, request: &EventRequest) -> std::result::Result<PlatformEvent, EventError>;
}

/// Why the uploader failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UploaderError {
    /// It ran and refused: its error code (e.g. -10008, IP not allowed) and message.
    #[error("the uploader refused the package (code {code:?}): {message}")]
    Rejected { code: Option<i64>, message: String },
    /// It ran longer than allowed and was stopped.
    #[error("the uploader did not finish within {0} s and was stopped")]
    TimedOut(u64),
    /// It could not be run, or the package could not be prepared for it.
    #[error("the uploader could not run: {0}")]
    Failed(String),
}

/// Uploads a kept package to the platform's template-development mini-program (in
/// production `miniprogram-ci`, run as a child process with a time-out).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait CodeUploader: Send + Sync + 'static {
    async fn upload(&self, job: &UploadJob) -> std::result::Result<UploadReport, UploaderError>;
}

/// Checks a package file against [`PackageLimits`] with [`crate::package::inspect`], off the
/// async workers (it reads and decompresses the whole file).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait PackageInspector: Send + Sync + 'static {
    async fn inspect(&self, file: PathBuf, limits: PackageLimits) -> std::result::Result<PackageInfo, PackageError>;
}
