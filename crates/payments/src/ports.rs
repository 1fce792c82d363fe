//! The payments domain's ports: storage ([`PaymentRepo`]), the pay platform
//! ([`PayPlatform`]) and the inspection of merchant keys and certificates
//! ([`MerchantKeys`]), which keeps PEM and X.509 parsing out of the domain.
use crate::discrepancies::{Discrepancy, DiscrepancyQuery, Resolution};
use crate::earnings::{Earner, EarningsGroup, EarningsRow};
use crate::lifecycle::TradeState;
use crate::model::*;
use crate::sharing::{
    PlatformReturn, PlatformShareOrder, ReceiverAdd, ReturnOrder, ReturnStatus, Share, ShareOrder, SharePlan, ShareQuery, ShareReturn,
    ShareStatus, Sharing, SubMerchantTenant, UnfreezeOrder,
};
use async_trait::async_trait;
use atrium_kernel::PayParams;
use atrium_kernel::RefundStatus;
use atrium_kernel::{Id, Page, Party, Result, Secret, Timestamp};
use chrono::NaiveDate;

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

    /// The tenant's payment configuration, with its secrets decrypted; `None` before one is saved.
    async fn get_config(&self, tenant_id: Id) -> Result<Option<PaymentConfig>>;
    /// Inserts or replaces the tenant's configuration (one per tenant) with its audit record,
    /// in one transaction, and returns what it stored. MUST return `Conflict`, writing
    /// nothing, when
    /// - another tenant's configuration has the same `sub_mchid` (one tenant per
    ///   sub-merchant; a unique index);
    /// - `settled_first` is set and the tenant has a transaction or refund that is not final
    ///   ([`PaymentRepo::unfinished`]), counted in the same write transaction.
    async fn put_config(&self, config: PaymentConfig, effects: Effects, settled_first: bool) -> Result<PaymentConfig>;
    /// How many of the tenant's platform transactions are not final (unpaid, neither closed
    /// nor holding a discrepancy) plus how many of its refunds are still processing.
    async fn unfinished(&self, tenant_id: Id) -> Result<u64>;

    /// The platform's service-provider account, with its secrets decrypted; `None` before one
    /// is saved.
    async fn get_provider(&self) -> Result<Option<ProviderConfig>>;
    /// Inserts or replaces the platform's one service-provider account with its audit record,
    /// in one transaction, and returns what it stored.
    async fn put_provider(&self, config: ProviderConfig, effects: Effects) -> Result<ProviderConfig>;

    /// Whether partner `partner_id` exists in `scope` (the platform sees every partner, a
    /// partner itself only, a tenant none).
    async fn partner(&self, scope: Party, partner_id: Id) -> Result<bool>;
    /// The partner's current share plan (its latest version); `None` before one is set.
    async fn share_plan(&self, partner_id: Id) -> Result<Option<SharePlan>>;
    /// Stores `plan` as a new version of its partner's plan with its audit record, in one
    /// transaction, and returns it. Versions are never changed. MUST return
    /// - `NotFound` when the partner does not exist;
    /// - `Conflict` (`TryAgain`), writing nothing, when the partner already has a plan of
    ///   `plan.version` (another change came first: the caller read an older version).
    async fn put_share_plan(&self, plan: SharePlan, effects: Effects) -> Result<SharePlan>;
    /// The tenants collecting as sub-merchants (payment configuration in `sub_merchant` mode)
    /// — those of `partner_id` when given, else all — each with its partner's current plan.
    async fn sub_merchant_tenants(&self, partner_id: Option<Id>) -> Result<Vec<SubMerchantTenant>>;

    /// How the transaction `payment_id` is shared, with its shares (oldest first); `None`
    /// before sharing began.
    async fn sharing(&self, payment_id: Id) -> Result<Option<(Sharing, Vec<Share>)>>;
    /// Begins sharing a transaction: stores `sharing` and its `shares` in one database
    /// transaction, unless the transaction's sharing is already stored (two runners racing),
    /// and returns what is stored either way. So a transaction is shared once. With the
    /// transaction's row locked as [`PaymentRepo::reserve_refund`] locks it, it MUST return
    /// `Conflict` (`TryAgain`), writing nothing, when a refund of the transaction is
    /// processing, or when its amount less its succeeded refunds is not `sharing.base` (a
    /// refund settled since the base was read).
    async fn begin_sharing(&self, sharing: Sharing, shares: Vec<Share>) -> Result<(Sharing, Vec<Share>)>;
    /// Writes each share's mutable fields (status, fail reason, out_order_no, retries,
    /// settled_at, updated_at) only where the stored status and `out_order_no` still equal
    /// `read` (the status and number it was read with), with `effects`, in one database
    /// transaction; returns how many it wrote. Nothing is written (effects neither) when none
    /// matches.
    async fn update_shares(&self, shares: Vec<Share>, read: Vec<(ShareStatus, String)>, effects: Effects) -> Result<u64>;
    /// Records that the rest of the transaction was unfrozen for its tenant.
    async fn set_unfrozen(&self, payment_id: Id, at: Timestamp) -> Result<()>;
    /// The share `id` if its tenant is in `scope`.
    async fn get_share(&self, scope: Party, id: Id) -> Result<Option<Share>>;
    /// The shares in `scope` matching `query`, newest first.
    async fn list_shares(&self, scope: Party, query: ShareQuery) -> Result<Page<Share>>;
    /// The tenant's shares sent in request `out_order_no`.
    async fn shares_in_order(&self, tenant_id: Id, out_order_no: String) -> Result<Vec<Share>>;
    /// Makes the closed share `read` pending again under `out_order_no` at `at`, as
    /// [`Share::retried`] says (what refunds took of it while closed is kept back), with
    /// `effects`, in one database transaction with the share's transaction locked as
    /// [`PaymentRepo::reserve_refund`] locks it, so no refund is reserved meanwhile. MUST
    /// return `Conflict` (`TryAgain`), writing nothing, while a refund of the transaction is
    /// processing; `None`, writing nothing, when the share's status or number is no longer as
    /// read; else the share as written.
    async fn retry_share(&self, read: Share, out_order_no: String, at: Timestamp, effects: Effects) -> Result<Option<Share>>;
    /// The returns of the tenant's refund `out_refund_no` (oldest first).
    async fn returns_of(&self, tenant_id: Id, out_refund_no: String) -> Result<Vec<ShareReturn>>;
    /// Writes a return's status, platform id, fail reason, settled_at and updated_at only if
    /// its stored status still equals `read`; returns whether it wrote. A return written
    /// `succeeded` from `processing` adds its amount to its share's `returned` in the same
    /// database transaction, and a succeeded share that holds nothing after is `returned`
    /// (its `settled_at` then the return's).
    async fn settle_return(&self, ret: ShareReturn, read: ReturnStatus) -> Result<bool>;

    /// Stores a new transaction with its [`Effects`] (one database transaction) and returns
    /// it with its id. MUST return `Conflict`, writing nothing, when
    /// - the tenant already has a transaction with this `out_trade_no` (a unique index);
    /// - one of the tenant's orders has this number and the transaction is not that order's
    ///   (`order_id`): an order's number belongs to its own transaction only;
    /// - `order_id` is set and the order already has a live (not closed or revoked)
    ///   transaction (a partial unique index): one way to pay an order at a time, whatever
    ///   races.
    async fn insert_transaction(&self, tx: Transaction, effects: Effects) -> Result<Transaction>;
    /// The tenant's transaction with our number `out_trade_no`, if any.
    async fn get_transaction(&self, tenant_id: Id, out_trade_no: String) -> Result<Option<Transaction>>;
    /// The order's live transaction, or its latest one when none is live.
    async fn order_transaction(&self, tenant_id: Id, order_id: Id) -> Result<Option<Transaction>>;
    /// Writes `tx`'s mutable fields (prepay id, trade state, transaction id, payer total,
    /// success time, discrepancy, updated_at) and its [`Effects`] only if the stored
    /// `trade_state` still equals `read_state` — a conditional update, so a notification and a
    /// query racing each other cannot move a transaction backwards. A recorded discrepancy is
    /// never erased; `found`, a discrepancy the write marks, is stored with it for a person
    /// to resolve. Returns whether it wrote; on `false` the caller reads again and re-applies.
    async fn update_transaction(
        &self,
        tx: Transaction,
        read_state: TradeState,
        found: Option<crate::NewDiscrepancy>,
        effects: Effects,
    ) -> Result<bool>;

    /// Reserves a refund, atomically, in one write transaction that serialises with every
    /// other write of the same transaction (its row locked: `SELECT … FOR UPDATE` on
    /// PostgreSQL; SQLite's `BEGIN IMMEDIATE` holds the one write lock):
    /// 1. a refund with `refund.out_refund_no` for this tenant exists → `Existing(it)`,
    ///    nothing written;
    /// 2. no transaction `refund.out_trade_no` of the tenant → `NotFound`;
    /// 3. `rule.check(transaction, its refunds, refund)` refuses → `Refused(why)`, nothing
    ///    written;
    /// 4. the transaction's sharing has begun and [`plan_returns`](crate::plan_returns) (with
    ///    its shares, returns and refunds as stored) refuses → `Refused(why)`, nothing written;
    /// 5. otherwise stores `refund` with the status it carries (`processing`, or
    ///    `succeeded` for an offline payment's refund), the returns planned, and its
    ///    [`Effects`] → `Reserved(stored)`.
    ///
    /// So concurrent refunds of one transaction can never together exceed what was paid, nor
    /// the count limit. `out_refund_no` is unique per tenant.
    async fn reserve_refund(&self, refund: Refund, rule: RefundRule, effects: Effects) -> Result<RefundReservation>;
    /// The tenant's refund with our number `out_refund_no`, if any.
    async fn get_refund(&self, tenant_id: Id, out_refund_no: String) -> Result<Option<Refund>>;
    /// The refunds of the tenant's transaction `out_trade_no`, oldest first.
    async fn refunds_of(&self, tenant_id: Id, out_trade_no: String) -> Result<Vec<Refund>>;
    /// The refunds of these orders (of any tenant: the caller names each order's tenant and
    /// checks it), by order, oldest first.
    async fn refunds_of_orders(&self, order_ids: Vec<Id>) -> Result<Vec<Refund>>;
    /// The shares of the payments of the orders `order_ids` (any tenant's: the caller keeps
    /// those it named), each with its order, by order and then id.
    async fn shares_of_orders(&self, order_ids: Vec<Id>) -> Result<Vec<(Id, Share)>>;
    /// Writes `refund`'s mutable fields (refund id, status, fail reason, succeeded_at,
    /// updated_at) and its
    /// [`Effects`] only if the stored status still equals `read_status`; returns whether it
    /// wrote. A refund leaving `processing` for `failed` or `closed` gives its amount back
    /// to what [`PaymentRepo::reserve_refund`] allows.
    async fn update_refund(&self, refund: Refund, read_status: RefundStatus, effects: Effects) -> Result<bool>;

    /// Up to `limit` of what should have settled by `before` and has not: platform
    /// transactions still unpaid (without a discrepancy) that expired before it, and refunds
    /// still processing that were requested before it — for the sweep that queues their
    /// settle jobs again.
    async fn unsettled(&self, before: Timestamp, limit: u32) -> Result<Unsettled>;
    /// How many transactions hold a discrepancy (a payment reported that does not match).
    async fn open_discrepancies(&self) -> Result<u64>;

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
    /// The statement of `earner` over the paid sub-merchant transactions whose payment
    /// succeeded from day `from` to day `to` (China Standard Time, inclusive), one row per day
    /// or per tenant (see [`EarningsSums`](crate::EarningsSums) for what each sum counts);
    /// rows only where something is counted, in any order.
    async fn earnings(&self, earner: Earner, from: NaiveDate, to: NaiveDate, group: EarningsGroup) -> Result<Vec<EarningsRow>>;
    /// The shares sent to the platform (not `pending`) of `tenant_id`'s payments of which one
    /// was created or changed in `[from, to)`: each such payment's every sent share, payments
    /// with an id above `after_payment` in order of id, at most `payments` of them. What the
    /// day's reconciliation checks against the platform's answers, a page at a time.
    async fn shares_changed(&self, tenant_id: Id, from: Timestamp, to: Timestamp, after_payment: Id, payments: u32) -> Result<Vec<Share>>;
    /// The returns of `tenant_id` created or changed in `[from, to)` with an id above `after`,
    /// in order of id, at most `limit`.
    async fn returns_changed(&self, tenant_id: Id, from: Timestamp, to: Timestamp, after: Id, limit: u32) -> Result<Vec<ShareReturn>>;
    /// Records `found` as share `read.id`'s discrepancy (the platform's record of it differs
    /// from ours; its description on the share, the record for a person to resolve), with
    /// `effects`, unless the share changed since it was read or already holds one. Returns
    /// whether it was recorded.
    async fn share_discrepancy(&self, read: Share, found: crate::NewDiscrepancy, effects: Effects) -> Result<bool>;

    /// Discrepancy `id` if its tenant is in `scope`.
    async fn get_discrepancy(&self, scope: Party, id: Id) -> Result<Option<Discrepancy>>;
    /// The discrepancies in `scope` matching `query`, newest first.
    async fn list_discrepancies(&self, scope: Party, query: DiscrepancyQuery) -> Result<Page<Discrepancy>>;
    /// Every discrepancy recorded of transaction `payment_id`, open or resolved, oldest first.
    async fn discrepancies_of(&self, payment_id: Id) -> Result<Vec<Discrepancy>>;
    /// The tenant's return `id` (of any share), if any.
    async fn get_return(&self, tenant_id: Id, id: Id) -> Result<Option<ShareReturn>>;
    /// Writes a [`Resolution`] in one database transaction, all of it or none:
    /// 1. the discrepancy as resolved, only if it is still `open` as stored;
    /// 2. the transaction's amount, trade state, platform id, payer total, success time,
    ///    `discrepancy` (cleared) and updated_at, only where its stored trade state equals
    ///    the one read and it still holds a discrepancy;
    /// 3. the refund, inserted as it is (`Conflict` when its number is taken);
    /// 4. the share's amount, returned, status, fail reason, settled_at, `discrepancy`
    ///    (cleared) and updated_at, only where the stored share still has the status, number
    ///    and `returned` it was read with and holds a discrepancy;
    /// 5. the return's status, amount, platform id, fail reason, settled_at and updated_at,
    ///    only where its stored status equals the one read;
    /// 6. the effects.
    ///
    /// Returns `false`, writing nothing, when any of the conditions fails (resolved or changed
    /// meanwhile: the caller reads again).
    async fn resolve_discrepancy(&self, resolution: Resolution) -> Result<bool>;
}

/// Why a pay platform call failed. Messages never carry a key, a signature or a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PayPlatformError {
    /// The platform answered 4xx: it refused the request, with its `code` (`ORDER_NOT_EXIST`,
    /// `ORDERPAID`, `NOT_ENOUGH`, …). Never retried.
    #[error("the pay platform refused the request (HTTP {status}, {code}): {message}")]
    Refused {
        /// The HTTP status of the answer.
        status: u16,
        /// The platform's error code.
        code: String,
        /// The platform's error message.
        message: String,
    },
    /// The platform answered 5xx or not at all (time-out, connection) after the bounded
    /// retries, or its answer was unreadable or failed signature verification.
    #[error("the pay platform is unavailable: {0}")]
    Unavailable(String),
    /// Our side cannot make the call: the stored key or a platform key cannot be used.
    #[error("the payment credentials cannot be used: {0}")]
    Credentials(String),
}

/// What a pay platform call returns.
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
    /// The refund as the platform knows it; `Refused` when the platform does not know it.
    async fn query_refund(&self, account: &MerchantAccount, out_refund_no: &str) -> PayResult<PlatformRefund>;
    /// The largest share of a payment, in basis points, the provider may split off the
    /// payments of the sub-merchant `account` acts for (`GET
    /// /v3/profitsharing/merchant-configs/{sub_mchid}`); `Credentials` for an account acting
    /// for no sub-merchant.
    async fn max_ratio(&self, account: &MerchantAccount) -> PayResult<u32>;
    /// Adds a profit-sharing receiver for the sub-merchant `account` acts for; adding one
    /// that is already there is no error. The receiver's name goes encrypted under the
    /// platform's key.
    async fn add_receiver(&self, account: &MerchantAccount, receiver: &ReceiverAdd) -> PayResult<()>;
    /// Requests a share of a payment of the sub-merchant `account` acts for. The platform
    /// answers a number it knows with that request's result (whatever this one asks).
    async fn share(&self, account: &MerchantAccount, order: &ShareOrder) -> PayResult<PlatformShareOrder>;
    /// The share or unfreeze request `out_order_no` of payment `transaction_id`;
    /// `Refused` with `RESOURCE_NOT_EXISTS` when the platform does not know it.
    async fn query_share(&self, account: &MerchantAccount, transaction_id: &str, out_order_no: &str) -> PayResult<PlatformShareOrder>;
    /// Unfreezes what is left of a payment for the sub-merchant; the same number again is the
    /// same request.
    async fn unfreeze(&self, account: &MerchantAccount, order: &UnfreezeOrder) -> PayResult<PlatformShareOrder>;
    /// Returns part of a merchant receiver's share to the sub-merchant `account` acts for,
    /// before a refund. The platform answers a number it knows with that return's result.
    async fn return_share(&self, account: &MerchantAccount, order: &ReturnOrder) -> PayResult<PlatformReturn>;
    /// The return `out_return_no` of share request `out_order_no` as the platform knows it
    /// (`GET /v3/profitsharing/return-orders/{out_return_no}?sub_mchid=&out_order_no=`):
    /// asking never makes one. `Refused` with `RESOURCE_NOT_EXISTS` when it does not know it.
    async fn query_return(&self, account: &MerchantAccount, out_order_no: &str, out_return_no: &str) -> PayResult<PlatformReturn>;
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
