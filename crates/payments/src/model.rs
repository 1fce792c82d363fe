//! Payments: a tenant's merchant account on the pay platform, its transactions and refunds,
//! and what the pay platform tells us about them (answers, notifications, trade bills).
use crate::lifecycle::TradeState;
use atrium_kernel::pay::{LedgerPayment, OrderRefund, PaymentState};
use atrium_kernel::{Id, Money, PaymentMethod, RefundStatus, Secret, Timestamp};
use chrono::NaiveDate;

/// How a tenant collects: into a merchant account of its own, or as a sub-merchant (特约商户)
/// under the platform's service-provider account.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, strum::IntoStaticStr, strum::EnumString,
)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum PaymentMode {
    /// The tenant's own merchant account, with its own keys (the default).
    #[default]
    Direct,
    /// A sub-merchant of the platform's service-provider account: no keys of its own, every
    /// call goes through the provider, payments are placed with profit sharing on.
    SubMerchant,
}

/// The keys of one merchant account on the pay platform: the merchant key and certificate every
/// request is signed with, the APIv3 key that decrypts notifications, and the platform key
/// that signs answers. A tenant's direct account and the platform's service-provider account
/// each hold one set.
///
/// The store encrypts `merchant_private_key` and `api_v3_key` (AES-256-GCM under the master
/// key); the rest is plain. Views never show a key, only fingerprints, serials and dates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MerchantCredentials {
    /// The merchant certificate's serial, upper-case hex: `serial_no` of every signed request.
    pub merchant_serial_no: Option<String>,
    /// When the merchant certificate expires.
    pub merchant_cert_not_after: Option<Timestamp>,
    /// The merchant private key (PEM, PKCS#8 or PKCS#1). Encrypted at rest.
    pub merchant_private_key: Option<Secret>,
    /// SHA-256 of the merchant key pair's public half (DER), hex: how people tell keys apart,
    /// and how a key uploaded later is matched with the certificate (and the other way round).
    pub merchant_key_fingerprint: Option<String>,
    /// The 32-character APIv3 key that decrypts notifications. Encrypted at rest.
    pub api_v3_key: Option<Secret>,
    /// `PUB_KEY_ID_…` (public-key mode) or the platform certificate's serial.
    pub platform_public_key_id: Option<String>,
    /// The platform's public key or certificate (PEM). Public; not encrypted.
    pub platform_public_key: Option<String>,
    /// SHA-256 of the platform's public key (DER), hex: how people tell keys apart.
    pub platform_key_fingerprint: Option<String>,
}

impl MerchantCredentials {
    /// The keys still missing, by their upload or field names.
    pub fn missing_parts(&self) -> Vec<&'static str> {
        let mut missing = Vec::new();
        if self.merchant_private_key.is_none() {
            missing.push("private_key");
        }
        if self.merchant_serial_no.is_none() {
            missing.push("certificate");
        }
        if self.api_v3_key.is_none() {
            missing.push("api_v3_key");
        }
        if self.platform_public_key.is_none() || self.platform_public_key_id.is_none() {
            missing.push("platform_public_key");
        }
        missing
    }

    /// The account of merchant `mchid` paying in `appid` with these keys, when every key is there.
    pub fn account(&self, mchid: &str, appid: &str) -> Option<MerchantAccount> {
        let platform_keys = match (&self.platform_public_key_id, &self.platform_public_key) {
            (Some(id), Some(pem)) => vec![PlatformKey { id: id.clone(), pem: pem.clone() }],
            _ => return None,
        };
        Some(MerchantAccount {
            mchid: mchid.to_owned(),
            appid: appid.to_owned(),
            serial_no: self.merchant_serial_no.clone()?,
            private_key: self.merchant_private_key.clone()?,
            api_v3_key: self.api_v3_key.clone()?,
            platform_keys,
            sub_merchant: None,
        })
    }
}

/// A tenant's payment configuration: the merchant account its orders are paid into, its own
/// (direct mode) or a sub-merchant under the platform's service provider.
///
/// Switching mode keeps the other mode's fields: the payments made before the switch are still
/// queried and refunded through the account they were made with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentConfig {
    /// The tenant whose merchant account this is.
    pub tenant_id: Id,
    /// How the tenant collects now.
    pub mode: PaymentMode,
    /// The merchant id (商户号) of the tenant's own account (direct mode).
    pub mchid: String,
    /// The mini-program the payments are made in (direct mode).
    pub appid: String,
    /// The sub-merchant id under the platform's service provider (sub-merchant mode).
    pub sub_mchid: Option<String>,
    /// The sub-merchant's own mini-program, when its payers pay in it (sub-merchant mode).
    pub sub_appid: Option<String>,
    /// The keys of the tenant's own account (direct mode); a sub-merchant needs none.
    pub credentials: MerchantCredentials,
    /// Whether the tenant takes payments; a disabled configuration places no new orders.
    pub enabled: bool,
    /// When the configuration was first saved.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}

impl PaymentConfig {
    /// A new direct configuration with no keys yet, disabled.
    pub fn new(tenant_id: Id, mchid: String, appid: String, now: Timestamp) -> Self {
        PaymentConfig {
            tenant_id,
            mode: PaymentMode::Direct,
            mchid,
            appid,
            sub_mchid: None,
            sub_appid: None,
            credentials: MerchantCredentials::default(),
            enabled: false,
            created_at: now,
            updated_at: now,
        }
    }

    /// The parts the current mode still lacks, by their upload or field names. A sub-merchant
    /// lacks only its `sub_mchid`: the provider's keys are the platform's matter.
    pub fn missing_parts(&self) -> Vec<&'static str> {
        if self.mode == PaymentMode::SubMerchant {
            return if self.sub_mchid.is_none() { vec!["sub_mchid"] } else { Vec::new() };
        }
        let mut missing = Vec::new();
        if self.mchid.is_empty() {
            missing.push("mchid");
        }
        if self.appid.is_empty() {
            missing.push("appid");
        }
        missing.extend(self.credentials.missing_parts());
        missing
    }

    /// The tenant's own account (direct mode), when every part is there — whatever the mode
    /// now, since payments made in direct mode settle through it.
    pub fn account(&self) -> Option<MerchantAccount> {
        if self.mchid.is_empty() || self.appid.is_empty() {
            return None;
        }
        self.credentials.account(&self.mchid, &self.appid)
    }

    /// The sub-merchant `sub_mchid` as this tenant pays through it: with the tenant's
    /// `sub_appid` when `sub_mchid` is its current one.
    pub fn sub_merchant(&self, sub_mchid: &str) -> SubMerchant {
        let sub_appid = if self.sub_mchid.as_deref() == Some(sub_mchid) { self.sub_appid.clone() } else { None };
        SubMerchant { sub_mchid: sub_mchid.to_owned(), sub_appid }
    }
}

/// The platform's service-provider account (服务商): the merchant account tenants in
/// sub-merchant mode collect under, and the platform's default shares of their payments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderConfig {
    /// The provider's merchant id.
    pub sp_mchid: String,
    /// The provider's app id (the mini-program payers pay in when a sub-merchant has no
    /// `sub_appid`, and the `appid` of profit-sharing requests).
    pub sp_appid: String,
    /// The provider's registered merchant name, which the platform requires for a
    /// `MERCHANT_ID` profit-sharing receiver.
    pub sp_name: Option<String>,
    /// The provider's keys.
    pub credentials: MerchantCredentials,
    /// Whether sub-merchants can take new payments.
    pub enabled: bool,
    /// The platform's share of each sub-merchant payment, in basis points (0–10,000).
    pub platform_bp: u32,
    /// A partner's commission when its share plan names none, in basis points.
    pub default_commission_bp: u32,
    /// When the account was first saved.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}

impl ProviderConfig {
    /// A new account with no keys yet, disabled, taking no shares.
    pub fn new(sp_mchid: String, sp_appid: String, now: Timestamp) -> Self {
        ProviderConfig {
            sp_mchid,
            sp_appid,
            sp_name: None,
            credentials: MerchantCredentials::default(),
            enabled: false,
            platform_bp: 0,
            default_commission_bp: 0,
            created_at: now,
            updated_at: now,
        }
    }

    /// The parts a working account still lacks.
    pub fn missing_parts(&self) -> Vec<&'static str> {
        self.credentials.missing_parts()
    }

    /// The provider acting for `sub`, when every key is there.
    pub fn account_for(&self, sub: SubMerchant) -> Option<MerchantAccount> {
        let account = self.credentials.account(&self.sp_mchid, &self.sp_appid)?;
        Some(MerchantAccount { sub_merchant: Some(sub), ..account })
    }
}

/// One key the pay platform signs with, chosen by the `Wechatpay-Serial` of an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlatformKey {
    /// `PUB_KEY_ID_…` in public-key mode, the platform certificate's serial otherwise.
    pub id: String,
    /// A PEM public key, or a PEM certificate whose key is used.
    pub pem: String,
}

/// What the pay platform adapter needs to act for one merchant. `Debug` hides the secrets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MerchantAccount {
    /// The merchant id (商户号).
    pub mchid: String,
    /// The mini-program the payments are made in.
    pub appid: String,
    /// The merchant certificate's serial.
    pub serial_no: String,
    /// The merchant private key (PEM) every request is signed with.
    pub private_key: Secret,
    /// The APIv3 key that decrypts notifications and encrypted answers.
    pub api_v3_key: Secret,
    /// Every key the platform may sign with; several during a move from platform
    /// certificates to a platform public key.
    pub platform_keys: Vec<PlatformKey>,
    /// In service-provider mode, the sub-merchant (特约商户) the provider acts for: the
    /// account's `mchid`, `appid`, keys and platform keys are then the provider's (`sp_mchid`,
    /// `sp_appid`), every call goes through the platform's partner endpoints naming this
    /// sub-merchant, and payments are placed with profit sharing on. `None`: a merchant
    /// acting for itself (direct mode).
    pub sub_merchant: Option<SubMerchant>,
}

impl MerchantAccount {
    /// The mini-program the payer pays in, whose `appId` `wx.requestPayment` gets: the
    /// sub-merchant's own when it pays as itself, the account's otherwise.
    pub fn payer_appid(&self) -> &str {
        self.sub_merchant.as_ref().and_then(|s| s.sub_appid.as_deref()).unwrap_or(&self.appid)
    }
}

/// A sub-merchant under the platform's service-provider account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubMerchant {
    /// The sub-merchant's merchant id (特约商户号).
    pub sub_mchid: String,
    /// The sub-merchant's own mini-program, when payers pay in it (the payer is then named by
    /// its `sub_openid`); `None`: payers pay in the provider's `sp_appid` (`sp_openid`).
    pub sub_appid: Option<String>,
}

/// What the tenant's scope check needs of a tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PaymentTenant {
    /// The tenant's id.
    pub id: Id,
    /// The tenant's partner, if it has one.
    pub partner_id: Option<Id>,
}

/// A payment transaction (one `out_trade_no`) as we keep it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transaction {
    /// 0 until stored.
    pub id: Id,
    /// The tenant whose merchant account is paid.
    pub tenant_id: Id,
    /// Our number, unique per tenant (and so per merchant account), never reused. An order's
    /// transaction carries the order's number; no other transaction may take it.
    pub out_trade_no: String,
    /// The order this transaction pays, if it pays one: such a transaction is paid, refunded
    /// and closed through its order only. An order has at most one live (not closed)
    /// transaction.
    pub order_id: Option<Id>,
    /// How it is paid: on the platform, or recorded as paid outside it (never sent to the
    /// platform).
    pub method: PaymentMethod,
    /// An offline payment's reference (a bank transfer's number, a receipt number).
    pub reference: Option<String>,
    /// The user who recorded an offline payment.
    pub paid_by: Option<Id>,
    /// What is paid for, shown to the payer (at most 127 bytes).
    pub description: String,
    /// What the payer is asked to pay.
    pub amount: Money,
    /// The payer's openid in the tenant's mini-program; empty for an offline payment.
    pub openid: String,
    /// Free text the platform hands back with the transaction's notifications.
    pub attach: Option<String>,
    /// The platform's prepay id, once the order was placed.
    pub prepay_id: Option<String>,
    /// Where the transaction stands; it only moves forward.
    pub trade_state: TradeState,
    /// The platform's transaction id, once paid.
    pub transaction_id: Option<String>,
    /// What the payer actually paid (less any platform coupons).
    pub payer_total: Option<Money>,
    /// When the payment succeeded, as the platform reported it.
    pub success_time: Option<Timestamp>,
    /// What the platform reported that does not match the transaction — a payment of
    /// another amount or currency. Kept, shown and audited, never taken as paid.
    pub discrepancy: Option<String>,
    /// The sub-merchant the transaction was placed for, under the platform's service
    /// provider; `None`: placed with the tenant's own merchant account. Queries, closes and
    /// refunds go through the account it was placed with, whatever the tenant's mode now.
    pub sub_mchid: Option<String>,
    /// After this the order can no longer be paid; a job then settles it by a query.
    pub expires_at: Timestamp,
    /// When the transaction was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}

/// The only currency the merchant accounts take.
pub const CURRENCY: &str = "CNY";

/// The number of an order's offline payment: the order's number and `:offline`. No
/// `out_trade_no` of the payment routes can be it (those are `[0-9A-Za-z_-]` only), so no
/// transaction of theirs can take it before the order is paid offline. It is never sent to the
/// platform. (Databases from before kept their older offline payments' `<order_no>-offline`.)
pub fn offline_trade_no(order_no: &str) -> String {
    format!("{order_no}:offline")
}

impl Transaction {
    /// A new platform (JSAPI) transaction, not yet placed nor paid, of no order.
    pub fn unpaid(
        tenant_id: Id,
        out_trade_no: String,
        description: String,
        amount: Money,
        openid: String,
        expires_at: Timestamp,
        now: Timestamp,
    ) -> Self {
        Transaction {
            id: 0,
            tenant_id,
            out_trade_no,
            order_id: None,
            method: PaymentMethod::WechatJsapi,
            reference: None,
            paid_by: None,
            description,
            amount,
            openid,
            attach: None,
            prepay_id: None,
            trade_state: TradeState::NotPay,
            transaction_id: None,
            payer_total: None,
            success_time: None,
            discrepancy: None,
            sub_mchid: None,
            expires_at,
            created_at: now,
            updated_at: now,
        }
    }

    /// Paid in full: the platform reported exactly its amount in CNY (or it was paid offline).
    pub fn is_paid(&self) -> bool {
        self.trade_state.is_paid() && self.discrepancy.is_none()
    }

    /// The transaction as the payment of its order, in the contract's words
    /// ([`atrium_kernel::pay`]): where it stands — a discrepancy first (never paid), then
    /// paid, closed or unpaid — with the platform's number only for a platform payment.
    pub fn as_order_payment(&self) -> LedgerPayment {
        let state = if let Some(why) = &self.discrepancy {
            PaymentState::Discrepancy(why.clone())
        } else if self.is_paid() {
            PaymentState::Paid { transaction_id: self.transaction_id.clone(), paid_at: self.success_time.unwrap_or(self.updated_at) }
        } else if self.trade_state.is_closed() {
            PaymentState::Closed
        } else {
            PaymentState::Unpaid
        };
        LedgerPayment {
            method: self.method,
            out_trade_no: (self.method == PaymentMethod::WechatJsapi).then(|| self.out_trade_no.clone()),
            amount: self.amount,
            openid: Some(self.openid.clone()).filter(|o| !o.is_empty()),
            state,
            reference: self.reference.clone(),
            paid_by: self.paid_by,
            sub_merchant: self.sub_mchid.is_some(),
        }
    }

    /// Takes in what the platform reported. Returns whether anything changed; the trade state
    /// only moves forward ([`TradeState::advance`]), and the payment's facts are filled in
    /// once the platform reports a payment. A payment is taken only when the report names
    /// exactly the transaction's amount in CNY: anything else is recorded as a discrepancy
    /// and the transaction stays unpaid.
    pub fn apply(&mut self, report: &PlatformTransaction, now: Timestamp) -> bool {
        let mut changed = false;
        if report.trade_state.is_paid() && !self.trade_state.is_paid() {
            // A payment report that does not say how much waits for one that does (a query).
            let Some(total) = report.amount else { return false };
            if let Some(why) = self.mismatch(total, report.currency.as_deref()) {
                if self.discrepancy.is_some() {
                    return false;
                }
                self.discrepancy = Some(why);
                fill(&mut self.transaction_id, &report.transaction_id);
                self.updated_at = now;
                return true;
            }
        }
        if let Some(next) = self.trade_state.advance(report.trade_state) {
            self.trade_state = next;
            changed = true;
        }
        if self.trade_state.is_paid() && report.trade_state.is_paid() {
            changed |= fill(&mut self.transaction_id, &report.transaction_id);
            changed |= fill(&mut self.payer_total, &report.payer_total);
            changed |= fill(&mut self.success_time, &report.success_time);
        }
        if changed {
            self.updated_at = now;
        }
        changed
    }
}

impl Transaction {
    /// Why a reported payment of `total` in `currency` does not match this transaction, if it
    /// does not.
    fn mismatch(&self, total: Money, currency: Option<&str>) -> Option<String> {
        let currency = currency.unwrap_or(CURRENCY);
        (total != self.amount || currency != CURRENCY).then(|| {
            format!(
                "the pay platform reported {} fen in {currency} paid for a transaction of {} fen in {CURRENCY}",
                total.fen(),
                self.amount.fen()
            )
        })
    }
}

/// Sets an unset field from a reported value; a set field keeps its value.
fn fill<T: Clone>(field: &mut Option<T>, reported: &Option<T>) -> bool {
    if field.is_none() && reported.is_some() {
        field.clone_from(reported);
        true
    } else {
        false
    }
}

/// A refund of (part of) a paid transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refund {
    /// 0 until stored.
    pub id: Id,
    /// The tenant whose merchant account refunds.
    pub tenant_id: Id,
    /// The transaction refunded.
    pub out_trade_no: String,
    /// The order whose payment is refunded, if the transaction pays one.
    pub order_id: Option<Id>,
    /// Our number: one number, one refund; a retry reuses it.
    pub out_refund_no: String,
    /// The platform's refund id, once it accepted the refund.
    pub refund_id: Option<String>,
    /// How much is refunded.
    pub amount: Money,
    /// Processing until the platform settles it, then succeeded, failed or closed.
    pub status: RefundStatus,
    /// The reason given, shown to the payer.
    pub reason: Option<String>,
    /// The user who asked for it; `None` when the system did.
    pub requested_by: Option<Id>,
    /// Why it failed, when Atrium knows: a share's return the platform refused (its
    /// `fail_reason`), so the refund was never sent.
    pub fail_reason: Option<String>,
    /// When the money went back, once it did.
    pub succeeded_at: Option<Timestamp>,
    /// When the refund was reserved.
    pub created_at: Timestamp,
    /// When its status last changed.
    pub updated_at: Timestamp,
}

impl Refund {
    /// The refund as its order's, in the contract's words ([`atrium_kernel::pay`]); `None`
    /// for a refund of a transaction of the payment routes.
    pub fn as_order_refund(&self) -> Option<OrderRefund> {
        Some(OrderRefund {
            id: self.id,
            order_id: self.order_id?,
            tenant_id: self.tenant_id,
            out_refund_no: self.out_refund_no.clone(),
            amount: self.amount,
            status: self.status,
            reason: self.reason.clone(),
            requested_by: self.requested_by,
            fail_reason: self.fail_reason.clone(),
            settled_at: self.status.settled_at(self.succeeded_at, self.updated_at),
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }

    /// Takes in what the platform reported; the status only moves forward.
    pub fn apply(&mut self, report: &PlatformRefund, now: Timestamp) -> bool {
        let mut changed = fill(&mut self.refund_id, &report.refund_id);
        if let Some(next) = self.status.advance(report.status) {
            self.status = next;
            changed = true;
        }
        if self.status == RefundStatus::Succeeded {
            changed |= fill(&mut self.succeeded_at, &report.success_time);
        }
        if changed {
            self.updated_at = now;
        }
        changed
    }
}

/// What [`crate::PaymentRepo::reserve_refund`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefundReservation {
    /// The refund was stored with the status it carried; its amount is now spoken for.
    Reserved(Refund),
    /// A refund with this `out_refund_no` already exists (a retry): here it is, unchanged.
    Existing(Refund),
    /// The rule refused it; nothing was written.
    Refused(RefundRefusal),
}

/// Why the ledger refuses a refund.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefundRefusal {
    /// The transaction is not paid (in full).
    NotPaid,
    /// The refund window has passed: refunds are possible for `days` after the payment.
    WindowClosed {
        /// How many days after the payment refunds are possible.
        days: i64,
    },
    /// The transaction already has the maximum number of refunds (of any status).
    TooManyRefunds {
        /// The most refunds a transaction may have.
        max: u32,
    },
    /// Processing and succeeded refunds plus this one would exceed what was paid;
    /// `refundable` is what is left.
    ExceedsPaid {
        /// What is left to refund.
        refundable: Money,
    },
    /// A share of the transaction is being requested: the money may be leaving for its
    /// receiver; try again once it settled.
    BeingShared,
    /// The refund needs part of share `share_id` back, and it went to a person: the platform
    /// takes nothing back from a person, and shared money is never refunded from the
    /// tenant's rest.
    NotReturnable {
        /// The share.
        share_id: Id,
    },
    /// Share `share_id` of the transaction holds a discrepancy (the platform's record of it
    /// differs from ours): nothing is refunded until a person resolved it.
    ShareDiscrepancy {
        /// The share.
        share_id: Id,
    },
}

/// The ledger's one refund rule: what may be refunded of a transaction, checked by
/// [`crate::PaymentRepo::reserve_refund`] while it holds the transaction's lock, so that
/// concurrent refunds are checked one after the other against what is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefundRule {
    /// No refunds after this long from the payment (the platform's limit is a year).
    pub window: chrono::Duration,
    /// At most this many refunds per transaction, of any status (the platform's limit is 50).
    pub max_refunds: u32,
}

impl RefundRule {
    /// Whether `wanted` may be added to `tx`'s refunds `existing`, at `wanted.created_at`.
    ///
    /// ```
    /// use atrium_kernel::{Money, RefundStatus};
    /// use atrium_payments::{Refund, RefundRefusal, RefundRule, TradeState, Transaction};
    ///
    /// let now = chrono::Utc::now();
    /// let mut tx = Transaction::unpaid(7, "T0001".into(), "Membership".into(), Money::from_yuan(100), "o-payer".into(), now, now);
    /// tx.trade_state = TradeState::Success;
    /// tx.success_time = Some(now);
    /// let refund = |no: &str, yuan| Refund {
    ///     id: 0,
    ///     tenant_id: 7,
    ///     out_trade_no: "T0001".into(),
    ///     order_id: None,
    ///     out_refund_no: no.into(),
    ///     refund_id: None,
    ///     amount: Money::from_yuan(yuan),
    ///     status: RefundStatus::Processing,
    ///     reason: None,
    ///     requested_by: None,
    ///     fail_reason: None,
    ///     succeeded_at: None,
    ///     created_at: now,
    ///     updated_at: now,
    /// };
    /// let rule = RefundRule { window: chrono::Duration::days(365), max_refunds: 50 };
    ///
    /// // 60 yuan of the 100 paid are being refunded: 40 are left.
    /// let existing = [refund("R1", 60)];
    /// assert_eq!(rule.check(&tx, &existing, &refund("R2", 40)), Ok(()));
    /// assert_eq!(rule.check(&tx, &existing, &refund("R2", 41)), Err(RefundRefusal::ExceedsPaid { refundable: Money::from_yuan(40) }));
    /// ```
    pub fn check(&self, tx: &Transaction, existing: &[Refund], wanted: &Refund) -> Result<(), RefundRefusal> {
        if !tx.is_paid() {
            return Err(RefundRefusal::NotPaid);
        }
        let paid_at = tx.success_time.unwrap_or(tx.created_at);
        if wanted.created_at - paid_at > self.window {
            return Err(RefundRefusal::WindowClosed { days: self.window.num_days() });
        }
        if existing.len() >= self.max_refunds as usize {
            return Err(RefundRefusal::TooManyRefunds { max: self.max_refunds });
        }
        let held = Money::checked_sum(existing.iter().filter(|r| r.status.holds_amount()).map(|r| r.amount)).unwrap_or(Money::MAX_INPUT);
        let refundable = tx.amount.checked_sub(held).unwrap_or(Money::ZERO).max(Money::ZERO);
        if wanted.amount > refundable {
            return Err(RefundRefusal::ExceedsPaid { refundable });
        }
        Ok(())
    }
}

/// What a ledger write leaves behind in the same database transaction, so that a crash
/// leaves either none of it or all of it: the jobs that settle or follow the change (a settle
/// job, an event for the order it belongs to), its audit record and its events.
pub use atrium_kernel::Effects;

/// A JSAPI (mini-program) order to place with the platform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsapiOrder {
    /// Our number for the order, unique per merchant account.
    pub out_trade_no: String,
    /// What is paid for, shown to the payer.
    pub description: String,
    /// What the payer is asked to pay, in CNY fen.
    pub amount: Money,
    /// The payer's openid in the mini-program the payer pays in
    /// ([`MerchantAccount::payer_appid`]): a sub-merchant's own app when it has a `sub_appid`
    /// (sent as `sub_openid`), the provider's otherwise (`sp_openid`).
    pub openid: String,
    /// Free text the platform hands back with notifications.
    pub attach: Option<String>,
    /// After this the order can no longer be paid.
    pub time_expire: Timestamp,
    /// Where the platform sends this order's notifications.
    pub notify_url: String,
}

/// A refund to request from the platform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefundOrder {
    /// The transaction to refund.
    pub out_trade_no: String,
    /// Our number for the refund: the same number again is the same refund.
    pub out_refund_no: String,
    /// The reason, shown to the payer.
    pub reason: Option<String>,
    /// How much to refund.
    pub amount: Money,
    /// The transaction's total.
    pub total: Money,
    /// Where the platform sends this refund's notifications.
    pub notify_url: String,
}

/// A transaction as the platform reports it (query answer or notification).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlatformTransaction {
    /// Our number for the transaction.
    pub out_trade_no: String,
    /// The state the platform reports.
    pub trade_state: TradeState,
    /// The platform's transaction id, once paid.
    pub transaction_id: Option<String>,
    /// The order's total, when reported.
    pub amount: Option<Money>,
    /// The currency of `amount`, when reported (`CNY`).
    pub currency: Option<String>,
    /// What the payer actually paid (less any platform coupons), when reported.
    pub payer_total: Option<Money>,
    /// When the payment succeeded, when reported.
    pub success_time: Option<Timestamp>,
    /// The sub-merchant the transaction belongs to, when the platform reports it through its
    /// partner endpoints (service-provider mode); `None` for a merchant's own.
    pub sub_mchid: Option<String>,
}

/// A refund as the platform reports it (refund answer, query or notification).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlatformRefund {
    /// Our number for the refund.
    pub out_refund_no: String,
    /// The transaction refunded, when reported.
    pub out_trade_no: Option<String>,
    /// The platform's refund id.
    pub refund_id: Option<String>,
    /// `SUCCESS` → succeeded, `PROCESSING` → processing, `CLOSED` → closed, `ABNORMAL` →
    /// failed.
    pub status: RefundStatus,
    /// The refund amount, when reported.
    pub amount: Option<Money>,
    /// When the money went back, when reported.
    pub success_time: Option<Timestamp>,
    /// The sub-merchant the refund belongs to, when reported (service-provider mode).
    pub sub_mchid: Option<String>,
}

/// A notification's headers and raw body, as received: verification works on these bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotificationRequest {
    /// `Wechatpay-Timestamp`
    pub timestamp: String,
    /// `Wechatpay-Nonce`
    pub nonce: String,
    /// `Wechatpay-Signature`
    pub signature: String,
    /// `Wechatpay-Serial`
    pub serial: String,
    /// The raw body, exactly as received.
    pub body: Vec<u8>,
}

/// A verified, decrypted notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayEvent {
    /// The event id: the same id twice is the same event.
    pub id: String,
    /// `TRANSACTION.SUCCESS`, `REFUND.SUCCESS`, `REFUND.ABNORMAL`, `REFUND.CLOSED`, …
    pub event_type: String,
    /// What the event reports.
    pub resource: EventResource,
}

/// What a notification is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventResource {
    /// A transaction's new state (`TRANSACTION.*`).
    Transaction(PlatformTransaction),
    /// A refund's new state (`REFUND.*`).
    Refund(PlatformRefund),
    /// A profit-sharing receiver's result (`PROFITSHARING.*`): which request to settle sooner.
    Share {
        /// The share request's number.
        out_order_no: String,
        /// The platform's transaction id.
        transaction_id: String,
    },
    /// An event type we do not act on; acknowledged.
    Other,
}

/// Why a notification was not accepted. Each is answered with the platform's failure format;
/// nothing changes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotificationError {
    /// A `Wechatpay-*` header is missing or malformed.
    #[error("a Wechatpay header is missing or malformed")]
    MissingHeaders,
    /// The signature does not verify with the platform key named by `Wechatpay-Serial`.
    #[error("the signature does not verify")]
    BadSignature,
    /// A `WECHATPAY/SIGNTEST/` signature: the platform probing that we check signatures.
    #[error("signature probe refused")]
    Probe,
    /// The timestamp is 300 s or more away from now (a replay, or a badly set clock).
    #[error("the timestamp is 300 s or more away from now")]
    StaleTimestamp,
    /// No platform key with the header's serial is configured for the tenant.
    #[error("no platform key with this serial is configured")]
    UnknownSerial,
    /// The resource does not decrypt with the tenant's APIv3 key.
    #[error("the resource cannot be decrypted")]
    Undecryptable,
    /// The body or the decrypted resource is not the JSON expected.
    #[error("the body or the decrypted resource is not the expected JSON")]
    NotJson,
    /// The tenant has no complete, enabled payment configuration.
    #[error("payments are not configured for this tenant")]
    NotConfigured,
    /// The event was valid but storing its effect failed; the platform should retry.
    #[error("the notification could not be processed now")]
    Unavailable,
}

/// A transaction's state on a trade bill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::EnumString)]
#[strum(serialize_all = "UPPERCASE")]
pub enum BillTradeState {
    /// Paid.
    Success,
    /// A refund of a paid transaction.
    Refund,
    /// Cancelled after payment (撤销).
    Revoked,
}

/// One line of a day's trade bill, amounts converted exactly from yuan to fen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BillLine {
    /// The platform's transaction id.
    pub transaction_id: String,
    /// Our number for the transaction.
    pub out_trade_no: String,
    /// What the line records.
    pub trade_state: BillTradeState,
    /// The order's total (订单金额).
    pub amount: Money,
    /// On `REFUND` lines: the refund.
    pub refund: Option<BillRefund>,
}

/// The refund part of a `REFUND` bill line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BillRefund {
    /// The platform's refund id.
    pub refund_id: String,
    /// Our number for the refund.
    pub out_refund_no: String,
    /// The refund amount requested (申请退款金额).
    pub amount: Money,
    /// The platform's refund status on the bill (`SUCCESS`, `PROCESSING`, …).
    pub status: String,
}

/// The day a trade bill covers (the platform's day, China Standard Time).
pub type BillDate = NaiveDate;

/// A merchant private key as inspected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyInfo {
    /// SHA-256 of the public key (DER), lower-case hex.
    pub fingerprint: String,
    /// The RSA key's size in bits.
    pub bits: u32,
}

/// A merchant certificate as inspected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertInfo {
    /// Upper-case hex, as the platform writes it.
    pub serial_no: String,
    /// When the certificate expires.
    pub not_after: Timestamp,
    /// SHA-256 of the certificate's public key (DER), lower-case hex: equal to the matching
    /// private key's [`KeyInfo::fingerprint`].
    pub key_fingerprint: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Duration, TimeZone, Utc};

    fn now() -> Timestamp {
        Utc.with_ymd_and_hms(2026, 4, 1, 4, 0, 0).single().expect("valid")
    }

    /// An unpaid platform transaction of `fen`.
    fn unpaid(fen: i64) -> Transaction {
        Transaction {
            id: 5,
            tenant_id: 3,
            out_trade_no: "T0000001".into(),
            order_id: None,
            method: PaymentMethod::WechatJsapi,
            reference: None,
            paid_by: None,
            description: "Coffee".into(),
            amount: Money::from_fen(fen),
            openid: "o-ann".into(),
            attach: None,
            prepay_id: Some("prepay-1".into()),
            trade_state: TradeState::NotPay,
            transaction_id: None,
            payer_total: None,
            success_time: None,
            discrepancy: None,
            sub_mchid: None,
            expires_at: now() + Duration::hours(2),
            created_at: now() - Duration::days(1),
            updated_at: now() - Duration::days(1),
        }
    }

    /// A transaction of `fen` paid in full a day ago.
    fn paid(fen: i64) -> Transaction {
        Transaction {
            trade_state: TradeState::Success,
            transaction_id: Some("4200000001".into()),
            payer_total: Some(Money::from_fen(fen)),
            success_time: Some(now() - Duration::days(1)),
            ..unpaid(fen)
        }
    }

    fn refund(no: &str, fen: i64, status: RefundStatus) -> Refund {
        Refund {
            id: 7,
            tenant_id: 3,
            out_trade_no: "T0000001".into(),
            order_id: None,
            out_refund_no: no.into(),
            refund_id: None,
            amount: Money::from_fen(fen),
            status,
            reason: None,
            requested_by: None,
            fail_reason: None,
            succeeded_at: None,
            created_at: now(),
            updated_at: now(),
        }
    }

    fn rule() -> RefundRule {
        RefundRule { window: Duration::days(365), max_refunds: 50 }
    }

    /// The platform reporting `state` for `T0000001` with `amount` fen in `currency`.
    fn report(state: TradeState, amount: Option<i64>, currency: Option<&str>) -> PlatformTransaction {
        PlatformTransaction {
            out_trade_no: "T0000001".into(),
            trade_state: state,
            transaction_id: state.is_paid().then(|| "4200000001".into()),
            amount: amount.map(Money::from_fen),
            currency: currency.map(str::to_owned),
            payer_total: amount.map(Money::from_fen),
            success_time: state.is_paid().then(now),
            sub_mchid: None,
        }
    }

    // --- RefundRule::check -------------------------------------------------------------------

    #[test]
    fn an_unpaid_transaction_cannot_be_refunded() {
        let wanted = refund("R1", 100, RefundStatus::Processing);

        for state in [TradeState::NotPay, TradeState::UserPaying, TradeState::PayError, TradeState::Closed, TradeState::Revoked] {
            let tx = Transaction { trade_state: state, ..unpaid(1000) };

            assert_eq!(rule().check(&tx, &[], &wanted), Err(RefundRefusal::NotPaid), "{state:?}");
        }
    }

    #[test]
    fn a_payment_with_a_discrepancy_cannot_be_refunded() {
        let tx = Transaction { discrepancy: Some("1 fen paid for 1000".into()), ..paid(1000) };

        let checked = rule().check(&tx, &[], &refund("R1", 1, RefundStatus::Processing));

        assert_eq!(checked, Err(RefundRefusal::NotPaid));
    }

    #[test]
    fn a_refund_exactly_at_the_end_of_the_window_is_allowed_and_one_second_later_refused() {
        let tx = paid(1000);
        let paid_at = tx.success_time.unwrap();
        let at_edge = Refund { created_at: paid_at + Duration::days(365), ..refund("R1", 100, RefundStatus::Processing) };
        let past_edge = Refund { created_at: at_edge.created_at + Duration::seconds(1), ..at_edge.clone() };

        let allowed = rule().check(&tx, &[], &at_edge);
        let refused = rule().check(&tx, &[], &past_edge);

        assert_eq!(allowed, Ok(()));
        assert_eq!(refused, Err(RefundRefusal::WindowClosed { days: 365 }));
    }

    #[test]
    fn without_a_success_time_the_window_runs_from_the_transactions_creation() {
        let tx = Transaction { success_time: None, ..paid(1000) };
        let late =
            Refund { created_at: tx.created_at + Duration::days(365) + Duration::seconds(1), ..refund("R1", 1, RefundStatus::Processing) };

        assert_eq!(rule().check(&tx, &[], &late), Err(RefundRefusal::WindowClosed { days: 365 }));
    }

    #[test]
    fn the_count_limit_counts_refunds_of_any_status() {
        let rule = RefundRule { max_refunds: 3, ..rule() };
        let tx = paid(1000);
        let existing =
            [refund("R1", 10, RefundStatus::Failed), refund("R2", 10, RefundStatus::Closed), refund("R3", 10, RefundStatus::Succeeded)];
        let wanted = refund("R4", 10, RefundStatus::Processing);

        let below = rule.check(&tx, &existing[..2], &wanted);
        let at_limit = rule.check(&tx, &existing, &wanted);

        assert_eq!(below, Ok(()));
        assert_eq!(at_limit, Err(RefundRefusal::TooManyRefunds { max: 3 }));
    }

    #[test]
    fn processing_and_succeeded_refunds_hold_their_amount_and_failed_or_closed_ones_free_it() {
        let tx = paid(10_000);
        let existing = [
            refund("R1", 3000, RefundStatus::Processing),
            refund("R2", 4000, RefundStatus::Succeeded),
            refund("R3", 2000, RefundStatus::Failed),
            refund("R4", 1000, RefundStatus::Closed),
        ];

        let too_much = rule().check(&tx, &existing, &refund("R5", 3001, RefundStatus::Processing));

        assert_eq!(too_much, Err(RefundRefusal::ExceedsPaid { refundable: Money::from_fen(3000) }));
    }

    #[test]
    fn exactly_what_is_left_can_be_refunded_and_not_a_fen_more() {
        let tx = paid(10_000);
        let existing = [refund("R1", 3000, RefundStatus::Processing), refund("R2", 4000, RefundStatus::Succeeded)];

        let exact = rule().check(&tx, &existing, &refund("R3", 3000, RefundStatus::Processing));
        let all_refunded = rule().check(&tx, &[refund("R1", 10_000, RefundStatus::Succeeded)], &refund("R2", 1, RefundStatus::Processing));

        assert_eq!(exact, Ok(()));
        assert_eq!(all_refunded, Err(RefundRefusal::ExceedsPaid { refundable: Money::ZERO }));
    }

    // --- Transaction::apply ------------------------------------------------------------------

    #[test]
    fn a_payment_of_exactly_the_amount_in_cny_is_taken() {
        for currency in [Some("CNY"), None] {
            let mut tx = unpaid(10_000);

            let changed = tx.apply(&report(TradeState::Success, Some(10_000), currency), now());

            assert!(changed, "{currency:?}");
            assert!(tx.is_paid(), "{currency:?}");
            assert_eq!(tx.discrepancy, None);
            assert_eq!(
                (tx.transaction_id.as_deref(), tx.payer_total, tx.success_time, tx.updated_at),
                (Some("4200000001"), Some(Money::from_fen(10_000)), Some(now()), now())
            );
        }
    }

    #[test]
    fn one_fen_reported_for_ten_thousand_is_a_discrepancy_recorded_once_and_never_paid() {
        let mut tx = unpaid(10_000);

        let first = tx.apply(&report(TradeState::Success, Some(1), Some("CNY")), now());
        let recorded = tx.clone();
        let second = tx.apply(&report(TradeState::Success, Some(2), Some("CNY")), now() + Duration::minutes(1));

        assert!(first);
        assert!(!tx.is_paid());
        assert_eq!(tx.trade_state, TradeState::NotPay);
        let why = tx.discrepancy.clone().unwrap();
        assert!(why.contains("1 fen in CNY") && why.contains("10000 fen"), "{why}");
        assert!(!second, "a discrepancy is recorded once");
        assert_eq!(tx, recorded);
    }

    #[test]
    fn a_payment_in_another_currency_is_a_discrepancy() {
        let mut tx = unpaid(10_000);

        let changed = tx.apply(&report(TradeState::Success, Some(10_000), Some("USD")), now());

        assert!(changed);
        assert!(!tx.is_paid());
        assert_eq!(tx.trade_state, TradeState::NotPay);
        assert!(tx.discrepancy.as_deref().is_some_and(|d| d.contains("USD")), "{:?}", tx.discrepancy);
    }

    #[test]
    fn a_payment_report_without_an_amount_changes_nothing() {
        let mut tx = unpaid(10_000);
        let before = tx.clone();

        let changed = tx.apply(&report(TradeState::Success, None, None), now());

        assert!(!changed);
        assert_eq!(tx, before);
    }

    #[test]
    fn a_late_unpaid_report_after_a_payment_changes_nothing() {
        for late in [TradeState::NotPay, TradeState::UserPaying, TradeState::PayError, TradeState::Closed, TradeState::Revoked] {
            let mut tx = paid(10_000);
            let before = tx.clone();

            let changed = tx.apply(&report(late, Some(10_000), None), now());

            assert!(!changed, "{late:?}");
            assert_eq!(tx, before, "{late:?}");
        }
    }
}

/// What the sweep finds unsettled past its deadline (see [`crate::PaymentRepo::unsettled`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Unsettled {
    /// `(tenant_id, out_trade_no, expires_at)` of platform transactions still unpaid.
    pub transactions: Vec<(Id, String, Timestamp)>,
    /// `(tenant_id, out_refund_no)` of refunds still processing.
    pub refunds: Vec<(Id, String)>,
}
