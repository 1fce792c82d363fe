//! The pay platform (API v3) on the same wire: a merchant registry, signed requests checked
//! against the merchant certificate, answers signed with the sandbox's platform key (public-key
//! mode), JSAPI orders, queries, closes, refunds, the trade bill, and signed, encrypted
//! notifications. Everything the platform does on its own (the payer paying, a refund
//! settling) is played by control calls.
//!
//! Service-provider mode: a registered merchant may be the provider (服务商) of sub-merchants
//! ([`Sandbox::register_sub_merchant`]) and act for them through the partner endpoints
//! (`/v3/pay/partner/transactions/…`, and `sub_mchid` on the refund and bill endpoints). A
//! sub-merchant's orders and refunds are kept under its `sub_mchid`, apart from any merchant's
//! own: a direct call never reaches them, and a partner call reaches only those of the
//! provider's own sub-merchants. Their answers and notifications have the partner shape
//! (`sp_appid`, `sp_mchid`, `sub_appid`, `sub_mchid`, `payer.sp_openid` or `payer.sub_openid`),
//! and their notifications are sealed with the provider's APIv3 key.

mod bill;
mod control;
mod keys;
mod notify;
mod sharing;

pub(crate) use control::{
    control_merchant, control_notifications, control_notify_fail, control_notify_lose, control_notify_requests, control_pay,
    control_pay_delay, control_pay_fail, control_profitsharing, control_refund, control_share_close_next, control_share_return_fail_next,
    control_share_rules, control_share_tamper, control_share_tamper_return, control_sub_merchant, control_trade,
};
pub use notify::{HOLD_DUPLICATE, NotifyAttempt, PayNotification, SignedNotification};
pub use sharing::{
    DEFAULT_SHARE_FINISH_AFTER, MAX_RETURNS_PER_SHARE_ORDER, MAX_SHARE_FINISH_AFTER, MAX_SHARE_ORDERS_PER_TRANSACTION, MAX_SHARE_RECEIVERS,
    ProfitSharingView, RETURN_FAIL_REASONS, RecordChange, ShareLineView, ShareOrderView, ShareReceiverView, ShareReturnView, ShareRules,
    UnfrozenView,
};

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use atrium_payments::{MerchantAccount, PlatformKey, Secret, SubMerchant, TradeState};
use chrono::{DateTime, FixedOffset, Utc};
use keys::IssuedMerchantKeys;
pub(crate) use keys::PlatformKeyPair;
use openssl::pkey::{PKey, Public};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::time::Duration;

use crate::platform::{Sandbox, random_hex};

const KEEP_MERCHANTS: usize = 1_000;
const KEEP_ORDERS: usize = 100_000;
const KEEP_BILLS: usize = 100;
const KEEP_FAILURES: usize = 100;
/// Refunds one order may have, as on the platform.
pub const MAX_REFUNDS_PER_ORDER: usize = 50;

/// China Standard Time, the platform's clock for times and bill days.
pub(crate) fn cst() -> FixedOffset {
    atrium_kernel::china_standard_time()
}

/// A time as the platform writes it: RFC 3339 in China Standard Time, whole seconds.
pub(crate) fn platform_time(t: DateTime<Utc>) -> String {
    t.with_timezone(&cst()).to_rfc3339_opts(chrono::SecondsFormat::Secs, false)
}

/// Everything a tenant uploads to use a merchant account registered with the sandbox: answer
/// of `POST {prefix}/control/merchant` and [`Sandbox::register_merchant`]. `Debug` hides the
/// private key and the APIv3 key.
#[derive(Clone, Serialize, PartialEq, Eq)]
pub struct SandboxMerchant {
    pub mchid: String,
    pub appid: String,
    /// PKCS#8 PEM RSA-2048 merchant private key.
    pub private_key_pem: String,
    /// PEM X.509 certificate of that key, valid for one year.
    pub certificate_pem: String,
    /// The certificate's serial, upper-case hex.
    pub merchant_serial_no: String,
    /// 32 characters.
    pub api_v3_key: String,
    /// The sandbox's platform public key (PEM), which signs answers and notifications.
    pub platform_public_key_pem: String,
    /// Its id, `PUB_KEY_ID_…`, sent as `Wechatpay-Serial`.
    pub platform_public_key_id: String,
    /// The certificate's expiry.
    pub not_after: DateTime<Utc>,
}

impl fmt::Debug for SandboxMerchant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SandboxMerchant")
            .field("mchid", &self.mchid)
            .field("appid", &self.appid)
            .field("merchant_serial_no", &self.merchant_serial_no)
            .field("platform_public_key_id", &self.platform_public_key_id)
            .field("not_after", &self.not_after)
            .finish_non_exhaustive()
    }
}

impl SandboxMerchant {
    /// The merchant account the pay client needs to act for this merchant.
    pub fn account(&self) -> MerchantAccount {
        MerchantAccount {
            mchid: self.mchid.clone(),
            appid: self.appid.clone(),
            serial_no: self.merchant_serial_no.clone(),
            private_key: Secret::new(self.private_key_pem.clone()),
            api_v3_key: Secret::new(self.api_v3_key.clone()),
            platform_keys: vec![PlatformKey { id: self.platform_public_key_id.clone(), pem: self.platform_public_key_pem.clone() }],
            sub_merchant: None,
        }
    }

    /// The merchant account the pay client needs to act, as this provider, for sub-merchant
    /// `sub` (registered under this merchant; the sandbox refuses the calls otherwise).
    pub fn account_for(&self, sub: &SandboxSubMerchant) -> MerchantAccount {
        MerchantAccount {
            sub_merchant: Some(SubMerchant { sub_mchid: sub.sub_mchid.clone(), sub_appid: sub.sub_appid.clone() }),
            ..self.account()
        }
    }
}

/// A sub-merchant (特约商户) of a provider merchant: answer of `POST
/// {prefix}/control/sub-merchant` and [`Sandbox::register_sub_merchant`]. It has no keys of
/// its own: its provider signs for it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct SandboxSubMerchant {
    /// The provider (服务商) merchant, registered with [`Sandbox::register_merchant`].
    pub sp_mchid: String,
    pub sub_mchid: String,
    /// The sub-merchant's own mini-program, when its payers pay in it (`payer.sub_openid`).
    pub sub_appid: Option<String>,
    /// The largest share of a payment the provider may split off, in basis points (3000:
    /// 30 %), as the platform's default; kept for profit sharing.
    pub max_ratio: u32,
}

/// The platform's default [`SandboxSubMerchant::max_ratio`]: 30 %.
pub const DEFAULT_MAX_RATIO: u32 = 3000;

/// What the payer does in `POST {prefix}/control/pay`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum PaymentResult {
    /// Paid: `SUCCESS`, and a `TRANSACTION.SUCCESS` notification follows.
    Success,
    /// The payment failed (`PAYERROR`); like the platform, no notification follows.
    PayError,
}

/// How a refund settles in `POST {prefix}/control/refund`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum RefundResult {
    Success,
    Abnormal,
    Closed,
}

impl RefundResult {
    fn status(self) -> &'static str {
        match self {
            RefundResult::Success => "SUCCESS",
            RefundResult::Abnormal => "ABNORMAL",
            RefundResult::Closed => "CLOSED",
        }
    }
}

/// The outcome of a control call that moves an order or a refund, with the notification it
/// caused (its first delivery attempt already made).
#[derive(Debug, Clone, Serialize)]
pub struct SettleReport {
    pub mchid: String,
    pub out_trade_no: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out_refund_no: Option<String>,
    /// The order's `trade_state` afterwards.
    pub trade_state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refund_status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transaction_id: Option<String>,
    pub notification: Option<PayNotification>,
}

/// A merchant as the sandbox keeps it.
pub(crate) struct Merchant {
    pub(crate) issued: SandboxMerchant,
    pub(crate) public_key: PKey<Public>,
}

#[derive(Debug, Clone)]
pub(crate) struct Order {
    pub(crate) mchid: String,
    pub(crate) appid: String,
    pub(crate) out_trade_no: String,
    pub(crate) description: String,
    pub(crate) attach: Option<String>,
    pub(crate) notify_url: String,
    pub(crate) total: i64,
    pub(crate) openid: String,
    pub(crate) time_expire: Option<DateTime<Utc>>,
    pub(crate) prepay_id: String,
    pub(crate) state: TradeState,
    pub(crate) transaction_id: Option<String>,
    pub(crate) success_time: Option<DateTime<Utc>>,
    pub(crate) refunds: Vec<String>,
    /// What the platform reports paid, when a test makes it report another amount than the
    /// order's (`control/pay {"reported_total"}`): a misbehaving or forged platform answer.
    pub(crate) reported_total: Option<i64>,
    /// The provider that placed the order for sub-merchant `mchid` (partner endpoints); `None`
    /// for a merchant's own order. `appid` is then the provider's `sp_appid`.
    pub(crate) sp_mchid: Option<String>,
    /// The sub-merchant's mini-program the payer pays in, when the order named one (the payer's
    /// `openid` is then its `sub_openid`, otherwise the `sp_openid`).
    pub(crate) sub_appid: Option<String>,
    /// `settle_info.profit_sharing`: the payment is held for profit sharing.
    pub(crate) profit_sharing: bool,
}

impl Order {
    /// What the payer paid, as the platform holds it: the order's total, or what a test made
    /// the platform report instead (`control/pay {"reported_total"}`). Refunds and shares are
    /// of this.
    pub(crate) fn paid(&self) -> i64 {
        self.reported_total.unwrap_or(self.total)
    }
}

impl Order {
    /// The merchant that signs for the order: the provider of a sub-merchant's order, the
    /// merchant itself otherwise.
    pub(crate) fn signer(&self) -> &str {
        self.sp_mchid.as_deref().unwrap_or(&self.mchid)
    }

    /// The mini-program the payer pays in: `wx.requestPayment`'s `appId`.
    pub(crate) fn payer_appid(&self) -> &str {
        self.sub_appid.as_deref().unwrap_or(&self.appid)
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Refund {
    pub(crate) mchid: String,
    pub(crate) out_refund_no: String,
    pub(crate) out_trade_no: String,
    pub(crate) refund_id: String,
    pub(crate) amount: i64,
    pub(crate) notify_url: String,
    /// `PROCESSING`, `SUCCESS`, `ABNORMAL` or `CLOSED`.
    pub(crate) status: &'static str,
    pub(crate) created_at: DateTime<Utc>,
    pub(crate) success_time: Option<DateTime<Utc>>,
}

struct InjectedPayFailure {
    path: String,
    status: u16,
    code: String,
    /// The call is carried out before the failure is answered: an answer lost on its way.
    after: bool,
    remaining: u32,
}

/// An injected failure as a call meets it.
#[derive(Debug, PartialEq, Eq)]
struct Injected {
    status: u16,
    code: String,
    after: bool,
}

struct InjectedPayDelay {
    path: String,
    delay: Duration,
    remaining: u32,
}

/// The longest an answer may be held back: well inside the 300 s the answer's signature is
/// good for, and long enough to outlast any client's time-out.
pub(crate) const MAX_PAY_DELAY: Duration = Duration::from_secs(30);

/// Whether `path` is named by `pattern`: the same path, or a start followed by `*`.
fn path_matches(pattern: &str, path: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => path.starts_with(prefix),
        None => pattern == path,
    }
}

/// The pay platform's state, inside the sandbox's one lock.
#[derive(Default)]
pub(crate) struct PayState {
    pub(crate) merchants: HashMap<String, Merchant>,
    /// sub_mchid → the sub-merchant and its provider. No sub_mchid is a merchant's mchid, so
    /// the two kinds of records never share a key.
    pub(crate) sub_merchants: HashMap<String, SandboxSubMerchant>,
    /// (mchid or sub_mchid, out_trade_no) → order.
    pub(crate) orders: HashMap<(String, String), Order>,
    /// (mchid or sub_mchid, out_refund_no) → refund.
    pub(crate) refunds: HashMap<(String, String), Refund>,
    /// token → (mchid of the signer, who alone may download it, bill bytes).
    bills: VecDeque<(String, String, Vec<u8>)>,
    failures: Vec<InjectedPayFailure>,
    delays: Vec<InjectedPayDelay>,
    /// The pay mount's public URL for download addresses; `None`: from each request.
    public_base: Option<String>,
    next_id: u64,
    /// "METHOD path" → calls received (signed or not).
    calls: HashMap<String, usize>,
    pub(crate) notify: notify::NotifyState,
    /// Profit sharing: receivers, share and unfreeze orders, and the controls that steer them.
    pub(crate) sharing: sharing::SharingState,
}

impl PayState {
    /// A fresh sequence number for the platform's own ids.
    fn next(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn injected(&mut self, path: &str) -> Option<Injected> {
        let i = self.failures.iter().position(|f| path_matches(&f.path, path))?;
        let f = &mut self.failures[i];
        let out = Injected { status: f.status, code: f.code.clone(), after: f.after };
        f.remaining -= 1;
        if f.remaining == 0 {
            self.failures.remove(i);
        }
        Some(out)
    }

    fn delayed(&mut self, path: &str) -> Option<Duration> {
        let i = self.delays.iter().position(|d| path_matches(&d.path, path))?;
        let d = &mut self.delays[i];
        let out = d.delay;
        d.remaining -= 1;
        if d.remaining == 0 {
            self.delays.remove(i);
        }
        Some(out)
    }

    /// The APIv3 key that seals notifications about the records of `owner` (a merchant, or a
    /// sub-merchant, whose provider's key it is); empty when neither is known.
    pub(crate) fn api_v3_key(&self, owner: &str) -> String {
        let signer = self.sub_merchants.get(owner).map_or(owner, |sub| sub.sp_mchid.as_str());
        self.merchants.get(signer).map(|m| m.issued.api_v3_key.clone()).unwrap_or_default()
    }

    /// Makes the platform report `total` fen paid for order `out_trade_no` from now on, whatever
    /// the order's amount (`control/pay {"reported_total"}`).
    pub(crate) fn report_total(&mut self, mchid: Option<&str>, out_trade_no: &str, total: i64) -> Result<(), String> {
        let key = self.find_order(mchid, out_trade_no)?;
        let order = self.orders.get_mut(&key).ok_or_else(|| format!("no order {out_trade_no}"))?;
        order.reported_total = Some(total);
        Ok(())
    }

    /// Makes closed order `out_trade_no` payable again, as if its close had lost a race with
    /// the payer (`control/pay {"after_close": true}`); an order not closed is refused.
    pub(crate) fn reopen(&mut self, mchid: Option<&str>, out_trade_no: &str) -> Result<(), String> {
        let key = self.find_order(mchid, out_trade_no)?;
        let order = self.orders.get_mut(&key).ok_or_else(|| format!("no order {out_trade_no}"))?;
        if !matches!(order.state, TradeState::Closed) {
            return Err(format!("order {out_trade_no} is not closed"));
        }
        order.state = TradeState::NotPay;
        order.time_expire = None;
        Ok(())
    }

    /// The one order named `out_trade_no` (of `mchid`, a merchant or a sub-merchant, when
    /// given).
    pub(crate) fn find_order(&self, mchid: Option<&str>, out_trade_no: &str) -> Result<(String, String), String> {
        let mut found = self.orders.keys().filter(|(m, no)| no == out_trade_no && mchid.is_none_or(|want| want == m));
        match (found.next(), found.next()) {
            (Some(key), None) => Ok(key.clone()),
            (None, _) => Err(format!("no order {out_trade_no}")),
            (Some(_), Some(_)) => Err(format!("several merchants have an order {out_trade_no}: name the mchid")),
        }
    }

    pub(crate) fn find_refund(&self, mchid: Option<&str>, out_refund_no: &str) -> Result<(String, String), String> {
        let mut found = self.refunds.keys().filter(|(m, no)| no == out_refund_no && mchid.is_none_or(|want| want == m));
        match (found.next(), found.next()) {
            (Some(key), None) => Ok(key.clone()),
            (None, _) => Err(format!("no refund {out_refund_no}")),
            (Some(_), Some(_)) => Err(format!("several merchants have a refund {out_refund_no}: name the mchid")),
        }
    }
}

/// The request headers a pay platform call reads besides its path, query and body.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CallHeaders<'a> {
    /// `Authorization`: the merchant's signature.
    pub(crate) authorization: Option<&'a str>,
    /// `Wechatpay-Serial`: the platform key the body's sensitive fields are encrypted under.
    pub(crate) wechatpay_serial: Option<&'a str>,
}

/// An answer before signing.
pub(crate) struct Answer {
    status: u16,
    body: Option<Value>,
}

impl Answer {
    fn ok(body: Value) -> Self {
        Answer { status: 200, body: Some(body) }
    }

    fn no_content() -> Self {
        Answer { status: 204, body: None }
    }

    fn error(status: u16, code: &str, message: impl Into<String>) -> Self {
        Answer { status, body: Some(json!({"code": code, "message": message.into()})) }
    }

    fn param(field: &str, issue: impl Into<String>) -> Self {
        let issue = issue.into();
        Answer {
            status: 400,
            body: Some(json!({
                "code": "PARAM_ERROR",
                "message": format!("{field}: {issue}"),
                "detail": {"field": field, "location": "body", "issue": issue},
            })),
        }
    }
}

/// Transaction JSON as the query answer and the `TRANSACTION.*` resource write it.
pub(crate) fn transaction_json(order: &Order) -> Value {
    let state: &'static str = order.state.into();
    let desc = match order.state {
        TradeState::NotPay => "订单未支付",
        TradeState::Success => "支付成功",
        TradeState::Refund => "转入退款",
        TradeState::Closed => "订单已关闭",
        TradeState::PayError => "支付失败，请重新下单支付",
        TradeState::UserPaying => "用户支付中",
        TradeState::Revoked => "已撤销",
    };
    let mut answer = json!({
        "appid": order.appid,
        "mchid": order.mchid,
        "out_trade_no": order.out_trade_no,
        "trade_type": "JSAPI",
        "trade_state": state,
        "trade_state_desc": desc,
        "attach": order.attach.clone().unwrap_or_default(),
        "payer": {"openid": order.openid},
        "amount": {"total": order.total, "currency": "CNY"},
    });
    if let (Some(sp_mchid), Some(map)) = (&order.sp_mchid, answer.as_object_mut()) {
        // The partner shape: the provider's ids and the sub-merchant's, the payer in the app
        // they paid in.
        map.remove("appid");
        map.remove("mchid");
        map.insert("sp_appid".into(), json!(order.appid));
        map.insert("sp_mchid".into(), json!(sp_mchid));
        map.insert("sub_mchid".into(), json!(order.mchid));
        let payer = match &order.sub_appid {
            Some(sub_appid) => {
                map.insert("sub_appid".into(), json!(sub_appid));
                json!({"sub_openid": order.openid})
            }
            None => json!({"sp_openid": order.openid}),
        };
        map.insert("payer".into(), payer);
    }
    if let (Some(txid), Some(at)) = (&order.transaction_id, order.success_time) {
        answer["transaction_id"] = json!(txid);
        answer["success_time"] = json!(platform_time(at));
        answer["bank_type"] = json!("OTHERS");
        let total = order.paid();
        answer["amount"] = json!({"total": total, "payer_total": total, "currency": "CNY", "payer_currency": "CNY"});
    }
    answer
}

/// Refund JSON as the refund answers write it (`status`); the `REFUND.*` resource renames it.
pub(crate) fn refund_json(refund: &Refund, order: &Order) -> Value {
    let mut answer = json!({
        "refund_id": refund.refund_id,
        "out_refund_no": refund.out_refund_no,
        "transaction_id": order.transaction_id.clone().unwrap_or_default(),
        "out_trade_no": refund.out_trade_no,
        "channel": "ORIGINAL",
        "user_received_account": "支付用户零钱",
        "create_time": platform_time(refund.created_at),
        "status": refund.status,
        "funds_account": "AVAILABLE",
        "amount": {
            "total": order.paid(),
            "refund": refund.amount,
            "payer_total": order.paid(),
            "payer_refund": refund.amount,
            "settlement_total": order.paid(),
            "settlement_refund": refund.amount,
            "discount_refund": 0,
            "refund_fee": 0,
            "currency": "CNY",
        },
    });
    if let Some(at) = refund.success_time {
        answer["success_time"] = json!(platform_time(at));
    }
    if order.sp_mchid.is_some() {
        answer["sub_mchid"] = json!(order.mchid);
    }
    answer
}

fn is_out_trade_no(s: &str) -> bool {
    (6..=32).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'*'))
}

fn is_out_refund_no(s: &str) -> bool {
    (1..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'|' | b'*' | b'@'))
}

/// A path control calls may inject into: one of the pay platform's.
fn check_injected_path(path: &str) -> Result<(), String> {
    if path.starts_with("/v3/") { Ok(()) } else { Err("path must start with /v3/".into()) }
}

/// `https://…`, or `http://` to a loopback host; no query, no fragment, at most 256 bytes.
fn check_notify_url(raw: &str) -> Result<(), String> {
    if raw.len() > 256 {
        return Err("is longer than 256 bytes".into());
    }
    let url = url::Url::parse(raw).map_err(|_| "is not an absolute URL".to_owned())?;
    if url.query().is_some() || url.fragment().is_some() {
        return Err("must not carry a query or a fragment".into());
    }
    match (url.scheme(), url.host()) {
        ("https", Some(_)) => Ok(()),
        ("http", Some(url::Host::Domain(d))) if d.eq_ignore_ascii_case("localhost") => Ok(()),
        ("http", Some(url::Host::Ipv4(ip))) if ip.is_loopback() => Ok(()),
        ("http", Some(url::Host::Ipv6(ip))) if ip.is_loopback() => Ok(()),
        _ => Err("must be https (plain http only to a loopback host)".into()),
    }
}

fn str_field<'a>(body: &'a Value, field: &str) -> Result<&'a str, Answer> {
    match body.get(field) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        Some(Value::String(_)) | None | Some(Value::Null) => Err(Answer::param(field, "is required")),
        Some(_) => Err(Answer::param(field, "must be a string")),
    }
}

fn opt_str_field<'a>(body: &'a Value, field: &str) -> Result<Option<&'a str>, Answer> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(Answer::param(field, "must be a string")),
    }
}

/// `payer.{name}`, a non-empty string.
fn payer_field<'a>(body: &'a Value, name: &str) -> Result<&'a str, Answer> {
    let field = format!("payer.{name}");
    match body.get("payer").and_then(|p| p.get(name)) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        Some(Value::String(_)) | None | Some(Value::Null) => Err(Answer::param(&field, "is required")),
        Some(_) => Err(Answer::param(&field, "must be a string")),
    }
}

/// `settle_info.profit_sharing`, false when absent.
fn profit_sharing_field(body: &Value) -> Result<bool, Answer> {
    match body.get("settle_info") {
        None | Some(Value::Null) => Ok(false),
        Some(settle) if settle.is_object() => match settle.get("profit_sharing") {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(Answer::param("settle_info.profit_sharing", "must be a boolean")),
        },
        Some(_) => Err(Answer::param("settle_info", "must be an object")),
    }
}

/// The fields a JSAPI order has in both modes; who places it, for whom and for which payer
/// are left empty for the caller.
fn order_fields(body: &Value) -> Result<Order, Answer> {
    let description = str_field(body, "description")?;
    if description.len() > 127 {
        return Err(Answer::param("description", "is longer than 127 bytes"));
    }
    let out_trade_no = str_field(body, "out_trade_no")?;
    if !is_out_trade_no(out_trade_no) {
        return Err(Answer::param("out_trade_no", "must be 6 to 32 of 0-9 A-Z a-z _ - *"));
    }
    let notify_url = str_field(body, "notify_url")?;
    check_notify_url(notify_url).map_err(|why| Answer::param("notify_url", why))?;
    let attach = opt_str_field(body, "attach")?;
    if attach.is_some_and(|a| a.len() > 128) {
        return Err(Answer::param("attach", "is longer than 128 bytes"));
    }
    let time_expire = match opt_str_field(body, "time_expire")? {
        None => None,
        Some(t) => {
            Some(DateTime::parse_from_rfc3339(t).map_err(|_| Answer::param("time_expire", "must be an RFC 3339 time"))?.with_timezone(&Utc))
        }
    };
    if time_expire.is_some_and(|t| t <= Utc::now()) {
        return Err(Answer::param("time_expire", "has passed"));
    }
    let total = amount_field(body, "total")?;
    Ok(Order {
        mchid: String::new(),
        appid: String::new(),
        out_trade_no: out_trade_no.to_owned(),
        description: description.to_owned(),
        attach: attach.map(str::to_owned),
        notify_url: notify_url.to_owned(),
        total,
        openid: String::new(),
        time_expire,
        prepay_id: String::new(),
        state: TradeState::NotPay,
        transaction_id: None,
        success_time: None,
        refunds: Vec::new(),
        reported_total: None,
        sp_mchid: None,
        sub_appid: None,
        profit_sharing: false,
    })
}

fn amount_field(body: &Value, field: &str) -> Result<i64, Answer> {
    let name = format!("amount.{field}");
    let amount = body.get("amount").filter(|a| a.is_object()).ok_or_else(|| Answer::param("amount", "is required"))?;
    if amount.get("currency").is_some_and(|c| !c.is_null() && c.as_str() != Some("CNY")) {
        return Err(Answer::param("amount.currency", "must be CNY"));
    }
    match amount.get(field).and_then(Value::as_i64) {
        Some(v) if v >= 1 => Ok(v),
        Some(_) => Err(Answer::param(&name, "must be at least 1 fen")),
        None => Err(Answer::param(&name, "is required and must be an integer (fen)")),
    }
}

impl Sandbox {
    /// The sandbox's platform key pair, made on first use.
    pub(crate) fn platform_keys(&self) -> Result<&PlatformKeyPair, String> {
        self.pay_keys.get_or_init(PlatformKeyPair::generate).as_ref().map_err(Clone::clone)
    }

    /// The id of the platform public key the sandbox signs with (`PUB_KEY_ID_…`).
    pub fn platform_public_key_id(&self) -> Result<String, String> {
        self.platform_keys().map(|k| k.id.clone())
    }

    /// The platform public key the sandbox signs with, PEM.
    pub fn platform_public_key_pem(&self) -> Result<String, String> {
        self.platform_keys().map(|k| k.public_pem.clone())
    }

    /// Registers merchant `mchid` for mini-program `appid`: a fresh RSA-2048 merchant key, a
    /// certificate for it (one year), a 32-character APIv3 key, and the sandbox's platform
    /// public key with its id. Registering a known `mchid` again with the same `appid` answers
    /// the same material; with another `appid` it is refused, and so is a sub-merchant's
    /// `mchid` ([`Sandbox::register_sub_merchant`]).
    pub fn register_merchant(&self, mchid: &str, appid: &str) -> Result<SandboxMerchant, String> {
        if mchid.is_empty() || mchid.len() > 32 || !mchid.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err("mchid must be 1 to 32 letters or digits".into());
        }
        if appid.is_empty() || appid.len() > 32 || !appid.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err("appid must be 1 to 32 letters, digits or underscores".into());
        }
        if let Some(sub) = self.lock().pay.sub_merchants.get(mchid) {
            return Err(format!("{mchid} is registered as a sub-merchant of {}", sub.sp_mchid));
        }
        if let Some(known) = self.lock().pay.merchants.get(mchid) {
            return if known.issued.appid == appid {
                Ok(known.issued.clone())
            } else {
                Err(format!("merchant {mchid} is registered for another appid"))
            };
        }
        let platform = self.platform_keys()?;
        let IssuedMerchantKeys { private_key_pem, certificate_pem, serial_no, not_after, public_key, api_v3_key } =
            keys::issue_merchant_keys(mchid)?;
        let issued = SandboxMerchant {
            mchid: mchid.to_owned(),
            appid: appid.to_owned(),
            private_key_pem,
            certificate_pem,
            merchant_serial_no: serial_no,
            api_v3_key,
            platform_public_key_pem: platform.public_pem.clone(),
            platform_public_key_id: platform.id.clone(),
            not_after,
        };
        let mut state = self.lock();
        if state.pay.sub_merchants.contains_key(mchid) {
            return Err(format!("{mchid} is registered as a sub-merchant"));
        }
        let merchants = &mut state.pay.merchants;
        if let Some(known) = merchants.get(mchid) {
            // Registered concurrently: the first one stands.
            return if known.issued.appid == appid { Ok(known.issued.clone()) } else { Err(format!("merchant {mchid} is registered")) };
        }
        if merchants.len() >= KEEP_MERCHANTS {
            return Err(format!("the sandbox keeps at most {KEEP_MERCHANTS} merchants"));
        }
        merchants.insert(mchid.to_owned(), Merchant { issued: issued.clone(), public_key });
        log::info!("sandbox pay platform registered merchant {mchid} for {appid} (serial {})", issued.merchant_serial_no);
        Ok(issued)
    }

    /// Registers `sub_mchid` as a sub-merchant (特约商户) of provider `sp_mchid`, a merchant
    /// registered with [`Sandbox::register_merchant`], with its own mini-program `sub_appid`
    /// when its payers pay in it. The provider then acts for it through the partner endpoints.
    /// Registering the same sub-merchant again under the same provider with the same
    /// `sub_appid` answers the same record; a `sub_mchid` that is a merchant's `mchid`, or a
    /// sub-merchant of another provider (or with another `sub_appid`), is refused.
    pub fn register_sub_merchant(&self, sp_mchid: &str, sub_mchid: &str, sub_appid: Option<&str>) -> Result<SandboxSubMerchant, String> {
        if sub_mchid.is_empty() || sub_mchid.len() > 32 || !sub_mchid.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err("sub_mchid must be 1 to 32 letters or digits".into());
        }
        if sub_appid.is_some_and(|a| a.is_empty() || a.len() > 32 || !a.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')) {
            return Err("sub_appid must be 1 to 32 letters, digits or underscores".into());
        }
        let mut state = self.lock();
        let pay = &mut state.pay;
        if !pay.merchants.contains_key(sp_mchid) {
            return Err(format!(
                "provider {sp_mchid} is not a merchant registered with the sandbox (POST …/control/merchant registers it)"
            ));
        }
        if pay.merchants.contains_key(sub_mchid) {
            return Err(format!("{sub_mchid} is a merchant of its own, not a sub-merchant"));
        }
        if let Some(known) = pay.sub_merchants.get(sub_mchid) {
            return if known.sp_mchid != sp_mchid {
                Err(format!("{sub_mchid} is a sub-merchant of another provider"))
            } else if known.sub_appid.as_deref() != sub_appid {
                Err(format!("sub-merchant {sub_mchid} is registered with another sub_appid"))
            } else {
                Ok(known.clone())
            };
        }
        if pay.sub_merchants.len() >= KEEP_MERCHANTS {
            return Err(format!("the sandbox keeps at most {KEEP_MERCHANTS} sub-merchants"));
        }
        let sub = SandboxSubMerchant {
            sp_mchid: sp_mchid.to_owned(),
            sub_mchid: sub_mchid.to_owned(),
            sub_appid: sub_appid.map(str::to_owned),
            max_ratio: DEFAULT_MAX_RATIO,
        };
        pay.sub_merchants.insert(sub_mchid.to_owned(), sub.clone());
        log::info!("sandbox pay platform registered sub-merchant {sub_mchid} of {sp_mchid}");
        Ok(sub)
    }

    /// Sets the largest share of a payment the provider may split off from sub-merchant
    /// `sub_mchid`'s payments, in basis points (0–10,000), as the sub-merchant does on the
    /// platform; `GET /v3/profitsharing/merchant-configs/{sub_mchid}` answers it.
    pub fn set_max_ratio(&self, sub_mchid: &str, max_ratio: u32) -> Result<SandboxSubMerchant, String> {
        if max_ratio > 10_000 {
            return Err("max_ratio must be basis points from 0 to 10000".into());
        }
        let mut state = self.lock();
        let sub = state.pay.sub_merchants.get_mut(sub_mchid).ok_or_else(|| format!("{sub_mchid} is not a registered sub-merchant"))?;
        sub.max_ratio = max_ratio;
        log::info!("sandbox pay platform: sub-merchant {sub_mchid} allows profit sharing up to {max_ratio} bp");
        Ok(sub.clone())
    }

    /// The sub-merchant `sub_mchid`, if registered.
    pub fn sub_merchant(&self, sub_mchid: &str) -> Option<SandboxSubMerchant> {
        self.lock().pay.sub_merchants.get(sub_mchid).cloned()
    }

    /// How many calls the pay platform received for `method_and_path`, e.g.
    /// `POST /v3/pay/transactions/out-trade-no/T1/close` (injected failures included).
    pub fn pay_calls(&self, method_and_path: &str) -> usize {
        self.lock().pay.calls.get(method_and_path).copied().unwrap_or(0)
    }

    /// The material a registered merchant was issued.
    pub fn merchant(&self, mchid: &str) -> Option<SandboxMerchant> {
        self.lock().pay.merchants.get(mchid).map(|m| m.issued.clone())
    }

    /// The `trade_state` of order `out_trade_no` of `mchid` (a merchant or a sub-merchant), if
    /// the sandbox has it.
    pub fn trade_state(&self, mchid: &str, out_trade_no: &str) -> Option<TradeState> {
        self.lock().pay.orders.get(&(mchid.to_owned(), out_trade_no.to_owned())).map(|o| o.state)
    }

    /// Makes the next `times` calls to pay platform path `path` (relative to the pay mount and
    /// without query, e.g. `/v3/pay/transactions/jsapi`; a trailing `*` matches any path with
    /// that start) answer HTTP `status` (400–599) with `{"code": code}`, signed, without doing
    /// anything. Injections for a path apply in the order they were made.
    pub fn fail_next_pay_call(&self, path: &str, status: u16, code: &str, times: u32) -> Result<(), String> {
        self.inject_pay_failure(path, status, code, times, false)
    }

    /// Like [`Sandbox::fail_next_pay_call`], but each of those calls is carried out first (the
    /// order placed, the refund accepted, …) and only its answer is replaced by the failure:
    /// the platform acted, its answer was lost.
    pub fn lose_next_pay_answers(&self, path: &str, status: u16, code: &str, times: u32) -> Result<(), String> {
        self.inject_pay_failure(path, status, code, times, true)
    }

    fn inject_pay_failure(&self, path: &str, status: u16, code: &str, times: u32, after: bool) -> Result<(), String> {
        check_injected_path(path)?;
        if !(400..=599).contains(&status) {
            return Err("status must be 400 to 599".into());
        }
        if code.is_empty() {
            return Err("code must not be empty".into());
        }
        if times == 0 {
            return Ok(());
        }
        let mut state = self.lock();
        if state.pay.failures.len() >= KEEP_FAILURES {
            return Err(format!("at most {KEEP_FAILURES} injected failures may be pending"));
        }
        state.pay.failures.push(InjectedPayFailure { path: path.to_owned(), status, code: code.to_owned(), after, remaining: times });
        Ok(())
    }

    /// Holds back the next `times` answers to pay platform path `path` (matched as by
    /// [`Sandbox::fail_next_pay_call`]) by `delay`, at most 30 s. The call is carried out
    /// first, so a client that gives up waiting still finds its effect.
    pub fn delay_next_pay_answers(&self, path: &str, delay: Duration, times: u32) -> Result<(), String> {
        check_injected_path(path)?;
        if delay > MAX_PAY_DELAY {
            return Err(format!("delay_ms must be at most {}", MAX_PAY_DELAY.as_millis()));
        }
        if times == 0 || delay.is_zero() {
            return Ok(());
        }
        let mut state = self.lock();
        if state.pay.delays.len() >= KEEP_FAILURES {
            return Err(format!("at most {KEEP_FAILURES} injected delays may be pending"));
        }
        state.pay.delays.push(InjectedPayDelay { path: path.to_owned(), delay, remaining: times });
        Ok(())
    }

    /// How long to hold back the answer to a call of `path` (used up by asking).
    fn take_pay_delay(&self, path: &str) -> Option<Duration> {
        self.lock().pay.delayed(path)
    }

    /// The pay mount's public URL (e.g. `https://atrium.example.com/sandbox/pay`), used in bill
    /// download addresses. By default it is taken from each request's scheme and `Host`, which
    /// is right unless a proxy rewrites the path.
    pub fn set_pay_public_base(&self, base: &str) {
        self.lock().pay.public_base = Some(base.trim_end_matches('/').to_owned());
    }

    /// Answers one pay platform call: `path` relative to the pay mount, `raw_path_and_query`
    /// as signed, `base` the pay mount's absolute URL (for download addresses).
    fn pay_call(&self, method: &str, path: &str, raw_path_and_query: &str, headers: CallHeaders<'_>, body: &[u8], base: &str) -> Answer {
        let injected = {
            let mut state = self.lock();
            *state.pay.calls.entry(format!("{method} {path}")).or_default() += 1;
            state.pay.injected(path)
        };
        match injected {
            None => self.carry_out(method, path, raw_path_and_query, headers, body, base),
            Some(Injected { status, code, after: false }) => Answer::error(status, &code, "injected failure"),
            Some(Injected { status, code, after: true }) => {
                let done = self.carry_out(method, path, raw_path_and_query, headers, body, base);
                log::info!("sandbox pay platform: {method} {path} answered {}, which is lost: {status} {code} instead", done.status);
                Answer::error(status, &code, "injected failure after the call was carried out")
            }
        }
    }

    /// Does what a pay platform call does and answers it.
    fn carry_out(&self, method: &str, path: &str, raw_path_and_query: &str, headers: CallHeaders<'_>, body: &[u8], base: &str) -> Answer {
        let mchid = match self.check_signature(method, raw_path_and_query, headers.authorization, body) {
            Ok(mchid) => mchid,
            Err(why) => {
                log::info!("sandbox pay platform refused {method} {path}: {why}");
                return Answer { status: 401, body: Some(json!({"code": "SIGN_ERROR", "message": why})) };
            }
        };
        let json_body = || -> Result<Value, Answer> {
            serde_json::from_slice::<Value>(body)
                .ok()
                .filter(Value::is_object)
                .ok_or_else(|| Answer::error(400, "PARAM_ERROR", "the body is not a JSON object"))
        };
        let query: HashMap<String, String> = raw_path_and_query
            .split_once('?')
            .map(|(_, q)| url::form_urlencoded::parse(q.as_bytes()).into_owned().collect())
            .unwrap_or_default();
        let segments: Vec<String> = path.trim_start_matches('/').split('/').map(percent_decode).collect();
        let segs: Vec<&str> = segments.iter().map(String::as_str).collect();
        let result = match (method, segs.as_slice()) {
            ("POST", ["v3", "pay", "transactions", "jsapi"]) => json_body().map(|b| self.jsapi(&mchid, &b)),
            ("GET", ["v3", "pay", "transactions", "out-trade-no", no]) => Ok(self.query_order(&mchid, query.get("mchid"), Some(no), None)),
            ("GET", ["v3", "pay", "transactions", "id", id]) => Ok(self.query_order(&mchid, query.get("mchid"), None, Some(id))),
            ("POST", ["v3", "pay", "transactions", "out-trade-no", no, "close"]) => json_body().map(|b| self.close(&mchid, &b, no)),
            ("POST", ["v3", "pay", "partner", "transactions", "jsapi"]) => json_body().map(|b| self.partner_jsapi(&mchid, &b)),
            ("GET", ["v3", "pay", "partner", "transactions", "out-trade-no", no]) => Ok(self.partner_query(&mchid, &query, Some(no), None)),
            ("GET", ["v3", "pay", "partner", "transactions", "id", id]) => Ok(self.partner_query(&mchid, &query, None, Some(id))),
            ("POST", ["v3", "pay", "partner", "transactions", "out-trade-no", no, "close"]) => {
                json_body().map(|b| self.partner_close(&mchid, &b, no))
            }
            ("POST", ["v3", "refund", "domestic", "refunds"]) => json_body().map(|b| self.refund(&mchid, &b)),
            ("GET", ["v3", "refund", "domestic", "refunds", no]) => Ok(self.query_refund(&mchid, query.get("sub_mchid"), no)),
            ("GET", ["v3", "profitsharing", "merchant-configs", sub]) => Ok(self
                .sub_merchant_of(&mchid, sub)
                .map_or_else(|refusal| refusal, |s| Answer::ok(json!({"sub_mchid": s.sub_mchid, "max_ratio": s.max_ratio})))),
            ("POST", ["v3", "profitsharing", "receivers", "add"]) => {
                json_body().map(|b| self.add_share_receiver(&mchid, &b, headers.wechatpay_serial))
            }
            ("POST", ["v3", "profitsharing", "orders", "unfreeze"]) => json_body().map(|b| self.unfreeze(&mchid, &b)),
            ("POST", ["v3", "profitsharing", "orders"]) => json_body().map(|b| self.share(&mchid, &b)),
            ("GET", ["v3", "profitsharing", "orders", no]) => Ok(self.query_share(&mchid, &query, no)),
            ("POST", ["v3", "profitsharing", "return-orders"]) => json_body().map(|b| self.return_share(&mchid, &b)),
            ("GET", ["v3", "profitsharing", "return-orders", no]) => Ok(self.query_return(&mchid, &query, no)),
            ("GET", ["v3", "bill", "tradebill"]) => Ok(self.trade_bill(&mchid, &query, base)),
            ("GET", ["v3", "billdownload", "file"]) => return self.bill_file(&mchid, query.get("token")),
            _ => Ok(Answer::error(404, "NOT_FOUND", format!("the sandbox pay platform has no {method} {path}"))),
        };
        result.unwrap_or_else(|refusal| refusal)
    }

    /// The mchid of a correctly signed request, or why it is refused.
    fn check_signature(&self, method: &str, path_and_query: &str, auth: Option<&str>, body: &[u8]) -> Result<String, String> {
        let auth = keys::parse_authorization(auth.ok_or("the Authorization header is missing")?)?;
        let state = self.lock();
        let merchant =
            state.pay.merchants.get(&auth.mchid).ok_or_else(|| {
                format!("merchant {} is not registered with the sandbox (POST …/control/merchant registers it)", auth.mchid)
            })?;
        if auth.serial_no != merchant.issued.merchant_serial_no {
            return Err(format!("serial_no {} is not the certificate of merchant {}", auth.serial_no, auth.mchid));
        }
        keys::verify_request(&merchant.public_key, &auth, method, path_and_query, body, Utc::now().timestamp())?;
        Ok(auth.mchid)
    }

    /// A merchant's own JSAPI order (`/v3/pay/transactions/jsapi`).
    fn jsapi(&self, mchid: &str, body: &Value) -> Answer {
        let parsed = (|| {
            let appid = str_field(body, "appid")?;
            if str_field(body, "mchid")? != mchid {
                return Err(Answer::param("mchid", "is not the merchant that signed the request"));
            }
            let mut order = order_fields(body)?;
            order.openid = payer_field(body, "openid")?.to_owned();
            order.mchid = mchid.to_owned();
            order.appid = appid.to_owned();
            Ok(order)
        })();
        let order = match parsed {
            Ok(o) => o,
            Err(refusal) => return refusal,
        };
        if self.lock().pay.merchants.get(mchid).is_none_or(|m| m.issued.appid != order.appid) {
            return Answer::error(400, "APPID_MCHID_NOT_MATCH", "appid and mchid do not belong together");
        }
        self.place_order(order)
    }

    /// A provider's JSAPI order for one of its sub-merchants
    /// (`/v3/pay/partner/transactions/jsapi`): kept under the `sub_mchid`.
    fn partner_jsapi(&self, signer: &str, body: &Value) -> Answer {
        let parsed = (|| {
            let sp_appid = str_field(body, "sp_appid")?;
            if str_field(body, "sp_mchid")? != signer {
                return Err(Answer::param("sp_mchid", "is not the provider that signed the request"));
            }
            let sub_mchid = str_field(body, "sub_mchid")?;
            let sub_appid = opt_str_field(body, "sub_appid")?;
            let mut order = order_fields(body)?;
            order.profit_sharing = profit_sharing_field(body)?;
            // The payer is named in the app they pay in: the sub-merchant's when it is given.
            order.openid = match sub_appid {
                Some(_) => payer_field(body, "sub_openid")?.to_owned(),
                None if body.get("payer").and_then(|p| p.get("sub_openid")).is_some() => {
                    return Err(Answer::param("payer.sub_openid", "needs sub_appid; without it name the payer by sp_openid"));
                }
                None => payer_field(body, "sp_openid")?.to_owned(),
            };
            order.mchid = sub_mchid.to_owned();
            order.appid = sp_appid.to_owned();
            order.sp_mchid = Some(signer.to_owned());
            order.sub_appid = sub_appid.map(str::to_owned);
            Ok(order)
        })();
        let order = match parsed {
            Ok(o) => o,
            Err(refusal) => return refusal,
        };
        let sub = match self.sub_merchant_of(signer, &order.mchid) {
            Ok(sub) => sub,
            Err(refusal) => return refusal,
        };
        if self.lock().pay.merchants.get(signer).is_none_or(|m| m.issued.appid != order.appid) {
            return Answer::error(400, "APPID_MCHID_NOT_MATCH", "sp_appid and sp_mchid do not belong together");
        }
        if order.sub_appid.is_some() && order.sub_appid != sub.sub_appid {
            return Answer::error(400, "APPID_MCHID_NOT_MATCH", "sub_appid and sub_mchid do not belong together");
        }
        self.place_order(order)
    }

    /// The sub-merchant `sub_mchid` of provider `signer`, or the platform's refusal: the two
    /// have no service relationship (受理关系).
    fn sub_merchant_of(&self, signer: &str, sub_mchid: &str) -> Result<SandboxSubMerchant, Answer> {
        match self.lock().pay.sub_merchants.get(sub_mchid) {
            Some(sub) if sub.sp_mchid == signer => Ok(sub.clone()),
            _ => Err(Answer::error(
                400,
                "INVALID_REQUEST",
                format!("受理关系不存在: sub_mchid {sub_mchid} is not a sub-merchant of sp_mchid {signer}"),
            )),
        }
    }

    /// Whose records a call acts on: the sub-merchant it names (which must be one of the
    /// signer's), else the signer's own.
    fn records_of(&self, signer: &str, sub_mchid: Option<&str>) -> Result<String, Answer> {
        match sub_mchid {
            None => Ok(signer.to_owned()),
            Some(sub) => self.sub_merchant_of(signer, sub).map(|s| s.sub_mchid),
        }
    }

    /// Keeps a checked order under its `mchid` (a merchant's or a sub-merchant's): the same
    /// number again with the same details gets the same `prepay_id`.
    fn place_order(&self, mut order: Order) -> Answer {
        let mut state = self.lock();
        let pay = &mut state.pay;
        let key = (order.mchid.clone(), order.out_trade_no.clone());
        if let Some(known) = pay.orders.get(&key) {
            let same = known.appid == order.appid
                && known.description == order.description
                && known.total == order.total
                && known.openid == order.openid
                && known.notify_url == order.notify_url
                && known.attach == order.attach
                && known.sp_mchid == order.sp_mchid
                && known.sub_appid == order.sub_appid
                && known.profit_sharing == order.profit_sharing;
            return match known.state {
                _ if !same => Answer::error(400, "INVALID_REQUEST", "out_trade_no is already used with other details"),
                TradeState::Success | TradeState::Refund => Answer::error(400, "ORDERPAID", "the order is paid"),
                TradeState::Closed | TradeState::Revoked => Answer::error(400, "ORDER_CLOSED", "the order is closed"),
                _ => Answer::ok(json!({"prepay_id": known.prepay_id})),
            };
        }
        if pay.orders.len() >= KEEP_ORDERS {
            return Answer::error(429, "FREQUENCY_LIMITED", format!("the sandbox keeps at most {KEEP_ORDERS} orders"));
        }
        order.prepay_id = format!("wx{}{}", Utc::now().with_timezone(&cst()).format("%d%H%M%S"), random_hex(13));
        log::info!("sandbox pay platform: order {} of {}, {} fen", order.out_trade_no, order.mchid, order.total);
        let answer = Answer::ok(json!({"prepay_id": order.prepay_id}));
        pay.orders.insert(key, order);
        answer
    }

    /// An order by `out_trade_no` or by `transaction_id`.
    fn query_order(&self, mchid: &str, query_mchid: Option<&String>, out_trade_no: Option<&str>, transaction_id: Option<&str>) -> Answer {
        if query_mchid.map(String::as_str) != Some(mchid) {
            return Answer::error(400, "PARAM_ERROR", "the query must name mchid, the merchant that signed the request");
        }
        self.find_transaction(mchid, out_trade_no, transaction_id)
    }

    /// A sub-merchant's order by `out_trade_no` or by `transaction_id`, asked by its provider
    /// (`?sp_mchid=&sub_mchid=`).
    fn partner_query(
        &self,
        signer: &str,
        query: &HashMap<String, String>,
        out_trade_no: Option<&str>,
        transaction_id: Option<&str>,
    ) -> Answer {
        if query.get("sp_mchid").map(String::as_str) != Some(signer) {
            return Answer::error(400, "PARAM_ERROR", "the query must name sp_mchid, the provider that signed the request");
        }
        let Some(sub_mchid) = query.get("sub_mchid") else {
            return Answer::error(400, "PARAM_ERROR", "the query must name sub_mchid");
        };
        match self.sub_merchant_of(signer, sub_mchid) {
            Ok(sub) => self.find_transaction(&sub.sub_mchid, out_trade_no, transaction_id),
            Err(refusal) => refusal,
        }
    }

    /// The order of `mchid` (a merchant or a sub-merchant) by number or transaction id.
    fn find_transaction(&self, mchid: &str, out_trade_no: Option<&str>, transaction_id: Option<&str>) -> Answer {
        let state = self.lock();
        let found = state.pay.orders.iter().find(|((m, no), o)| {
            m == mchid
                && out_trade_no.is_none_or(|want| want == no)
                && transaction_id.is_none_or(|t| o.transaction_id.as_deref() == Some(t))
        });
        match found.map(|(_, o)| o) {
            Some(order) => Answer::ok(transaction_json(order)),
            None => Answer::error(404, "ORDER_NOT_EXIST", "the order does not exist"),
        }
    }

    fn close(&self, mchid: &str, body: &Value, out_trade_no: &str) -> Answer {
        match str_field(body, "mchid") {
            Ok(m) if m == mchid => {}
            Ok(_) => return Answer::param("mchid", "is not the merchant that signed the request"),
            Err(refusal) => return refusal,
        }
        self.close_order_of(mchid, out_trade_no)
    }

    /// A provider closes a sub-merchant's order (`{sp_mchid, sub_mchid}`).
    fn partner_close(&self, signer: &str, body: &Value, out_trade_no: &str) -> Answer {
        match str_field(body, "sp_mchid") {
            Ok(m) if m == signer => {}
            Ok(_) => return Answer::param("sp_mchid", "is not the provider that signed the request"),
            Err(refusal) => return refusal,
        }
        let sub_mchid = match str_field(body, "sub_mchid") {
            Ok(sub) => sub,
            Err(refusal) => return refusal,
        };
        match self.sub_merchant_of(signer, sub_mchid) {
            Ok(sub) => self.close_order_of(&sub.sub_mchid, out_trade_no),
            Err(refusal) => refusal,
        }
    }

    /// Closes the unpaid order `out_trade_no` of `mchid` (a merchant or a sub-merchant).
    fn close_order_of(&self, mchid: &str, out_trade_no: &str) -> Answer {
        let mut state = self.lock();
        let Some(order) = state.pay.orders.get_mut(&(mchid.to_owned(), out_trade_no.to_owned())) else {
            return Answer::error(404, "ORDER_NOT_EXIST", "the order does not exist");
        };
        match order.state {
            TradeState::Success | TradeState::Refund => Answer::error(400, "ORDERPAID", "the order is paid and cannot be closed"),
            _ => {
                order.state = TradeState::Closed;
                Answer::no_content()
            }
        }
    }

    /// A refund of a merchant's own order, or, with `sub_mchid` in the body, of a sub-merchant's
    /// order asked by its provider.
    fn refund(&self, signer: &str, body: &Value) -> Answer {
        let mchid = match opt_str_field(body, "sub_mchid").and_then(|sub| self.records_of(signer, sub)) {
            Ok(owner) => owner,
            Err(refusal) => return refusal,
        };
        let mchid = mchid.as_str();
        let parsed = (|| {
            let out_refund_no = str_field(body, "out_refund_no")?;
            if !is_out_refund_no(out_refund_no) {
                return Err(Answer::param("out_refund_no", "must be 1 to 64 of 0-9 A-Z a-z _ - | * @"));
            }
            let out_trade_no = opt_str_field(body, "out_trade_no")?;
            let transaction_id = opt_str_field(body, "transaction_id")?;
            if out_trade_no.is_none() && transaction_id.is_none() {
                return Err(Answer::param("out_trade_no", "or transaction_id is required"));
            }
            if opt_str_field(body, "reason")?.is_some_and(|r| r.len() > 80) {
                return Err(Answer::param("reason", "is longer than 80 bytes"));
            }
            let notify_url = opt_str_field(body, "notify_url")?;
            if let Some(url) = notify_url {
                check_notify_url(url).map_err(|why| Answer::param("notify_url", why))?;
            }
            Ok((out_refund_no, out_trade_no, transaction_id, notify_url, amount_field(body, "refund")?, amount_field(body, "total")?))
        })();
        let (out_refund_no, out_trade_no, transaction_id, notify_url, amount, total) = match parsed {
            Ok(p) => p,
            Err(refusal) => return refusal,
        };
        let mut state = self.lock();
        let pay = &mut state.pay;
        let order_key = pay
            .orders
            .iter()
            .find(|((m, no), o)| {
                m == mchid
                    && out_trade_no.is_none_or(|want| want == no)
                    && transaction_id.is_none_or(|t| o.transaction_id.as_deref() == Some(t))
            })
            .map(|(k, _)| k.clone());
        let Some(order_key) = order_key else { return Answer::error(404, "RESOURCE_NOT_EXISTS", "the order does not exist") };
        let refund_key = (mchid.to_owned(), out_refund_no.to_owned());
        if let Some(known) = pay.refunds.get(&refund_key) {
            // One number, one refund: a retry gets the refund as it stands.
            if known.out_trade_no != order_key.1 || known.amount != amount {
                return Answer::error(400, "INVALID_REQUEST", "out_refund_no is already used with other details");
            }
            return match pay.orders.get(&order_key) {
                Some(order) => Answer::ok(refund_json(known, order)),
                None => Answer::error(404, "RESOURCE_NOT_EXISTS", "the order does not exist"),
            };
        }
        let (refunded, holds) = {
            let Some(order) = pay.orders.get(&order_key) else {
                return Answer::error(404, "RESOURCE_NOT_EXISTS", "the order does not exist");
            };
            if !order.state.is_paid() {
                return Answer::error(400, "INVALID_REQUEST", "the order is not paid");
            }
            if order.paid() != total {
                return Answer::param("amount.total", "is not the order's total");
            }
            if order.refunds.len() >= MAX_REFUNDS_PER_ORDER {
                return Answer::error(403, "REFUND_TRANSACTION_ERROR", format!("an order has at most {MAX_REFUNDS_PER_ORDER} refunds"));
            }
            let refunded: i64 = order
                .refunds
                .iter()
                .filter_map(|no| pay.refunds.get(&(mchid.to_owned(), no.clone())))
                .filter(|r| r.status != "CLOSED")
                .map(|r| r.amount)
                .sum();
            (refunded, pay.sub_merchant_holds(order))
        };
        let id = pay.next();
        let Some(order) = pay.orders.get_mut(&order_key) else {
            return Answer::error(404, "RESOURCE_NOT_EXISTS", "the order does not exist");
        };
        if amount > order.paid() - refunded {
            return Answer::error(
                400,
                "INVALID_REQUEST",
                format!("the refund exceeds what is left to refund ({} fen)", order.paid() - refunded),
            );
        }
        // A sub-merchant refunds from what it holds of the payment: what was shared off is
        // the receivers' until returned.
        if let Some(holds) = holds
            && amount > holds
        {
            log::info!("sandbox pay platform: refund {out_refund_no} of {amount} fen refused: the sub-merchant holds {holds} fen");
            return Answer::error(403, "NOT_ENOUGH", "基本账户余额不足，请充值后重新发起");
        }
        let refund = Refund {
            mchid: mchid.to_owned(),
            out_refund_no: out_refund_no.to_owned(),
            out_trade_no: order.out_trade_no.clone(),
            refund_id: format!("50{}{:012}", Utc::now().with_timezone(&cst()).format("%Y%m%d%H%M%S"), id),
            amount,
            notify_url: notify_url.map(str::to_owned).unwrap_or_else(|| order.notify_url.clone()),
            status: "PROCESSING",
            created_at: Utc::now(),
            success_time: None,
        };
        order.refunds.push(refund.out_refund_no.clone());
        order.state = TradeState::Refund;
        let answer = Answer::ok(refund_json(&refund, order));
        log::info!("sandbox pay platform: refund {out_refund_no} of {} ({amount} fen) processing", refund.out_trade_no);
        pay.refunds.insert(refund_key, refund);
        answer
    }

    /// A refund of the signer's own, or of its sub-merchant `sub_mchid`.
    fn query_refund(&self, signer: &str, sub_mchid: Option<&String>, out_refund_no: &str) -> Answer {
        let mchid = match self.records_of(signer, sub_mchid.map(String::as_str)) {
            Ok(owner) => owner,
            Err(refusal) => return refusal,
        };
        let mchid = mchid.as_str();
        let state = self.lock();
        let refund = state.pay.refunds.get(&(mchid.to_owned(), out_refund_no.to_owned()));
        match refund.and_then(|r| state.pay.orders.get(&(mchid.to_owned(), r.out_trade_no.clone())).map(|o| (r, o))) {
            Some((refund, order)) => Answer::ok(refund_json(refund, order)),
            None => Answer::error(404, "RESOURCE_NOT_EXISTS", "the refund does not exist"),
        }
    }

    /// The day's bill of the signer's own orders, or of its sub-merchant's (`sub_mchid`); only
    /// the signer may download it.
    fn trade_bill(&self, signer: &str, query: &HashMap<String, String>, base: &str) -> Answer {
        let owner = match self.records_of(signer, query.get("sub_mchid").map(String::as_str)) {
            Ok(owner) => owner,
            Err(refusal) => return refusal,
        };
        let Some(date) = query.get("bill_date").and_then(|d| chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d").ok()) else {
            return Answer::error(400, "PARAM_ERROR", "bill_date must be YYYY-MM-DD");
        };
        let bill_type = query.get("bill_type").map_or("ALL", String::as_str);
        if !["ALL", "SUCCESS", "REFUND"].contains(&bill_type) {
            return Answer::error(400, "PARAM_ERROR", "bill_type must be ALL, SUCCESS or REFUND");
        }
        if query.contains_key("tar_type") {
            return Answer::error(400, "PARAM_ERROR", "the sandbox serves uncompressed bills only: leave tar_type out");
        }
        let today = Utc::now().with_timezone(&cst()).date_naive();
        if date > today {
            return Answer::error(400, "PARAM_ERROR", "bill_date is in the future");
        }
        if date < today - chrono::Days::new(92) {
            return Answer::error(400, "PARAM_ERROR", "bills are kept for three months");
        }
        let mut state = self.lock();
        let pay = &mut state.pay;
        let base = pay.public_base.clone().unwrap_or_else(|| base.to_owned());
        let Some(text) = bill::trade_bill(pay, &owner, date, bill_type) else {
            return Answer::error(400, "NO_STATEMENT_EXIST", "no bill for this day");
        };
        let token = random_hex(16);
        let hash = hex::encode(openssl::sha::sha1(text.as_bytes()));
        if pay.bills.len() >= KEEP_BILLS {
            pay.bills.pop_front();
        }
        pay.bills.push_back((token.clone(), signer.to_owned(), text.into_bytes()));
        Answer::ok(json!({"hash_type": "SHA1", "hash_value": hash, "download_url": format!("{base}/v3/billdownload/file?token={token}")}))
    }

    /// The bill download: unsigned, as on the platform.
    fn bill_file(&self, mchid: &str, token: Option<&String>) -> Answer {
        let state = self.lock();
        match state.pay.bills.iter().find(|(t, m, _)| Some(t) == token && m == mchid) {
            Some((_, _, bytes)) => Answer { status: 200, body: Some(Value::String(String::from_utf8_lossy(bytes).into_owned())) },
            None => Answer::error(404, "RESOURCE_NOT_EXISTS", "no bill with this token"),
        }
    }
}

/// Percent-decodes a path segment; invalid UTF-8 becomes U+FFFD, so such a segment names
/// nothing.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The pay platform's entry point: every request under `{prefix}/pay`.
pub(crate) async fn entry(sb: web::Data<Sandbox>, req: HttpRequest, body: web::Bytes) -> HttpResponse {
    // The part of the path the scopes consumed ("{prefix}/pay"), as received: our prefix has no
    // escapes, so its length is the same in the raw and in the decoded path.
    let info = req.match_info();
    let consumed = info.as_str().len().saturating_sub(info.unprocessed().len());
    let raw = req.uri().path();
    let (mount, rel) = if raw.get(..consumed) == info.as_str().get(..consumed) && raw.is_char_boundary(consumed) {
        raw.split_at(consumed)
    } else {
        (raw, "")
    };
    let path_and_query = match req.uri().query() {
        Some(q) => format!("{rel}?{q}"),
        None => rel.to_owned(),
    };
    let base = {
        let conn = req.connection_info();
        format!("{}://{}{mount}", conn.scheme(), conn.host())
    };
    let header = |name: &str| req.headers().get(name).and_then(|h| h.to_str().ok());
    let headers = CallHeaders { authorization: header("Authorization"), wechatpay_serial: header("Wechatpay-Serial") };
    let answer = sb.pay_call(req.method().as_str(), rel, &path_and_query, headers, &body, &base);
    if let Some(delay) = sb.take_pay_delay(rel) {
        // The work is done; only the answer is late. A timer, so the worker serves others meanwhile.
        tokio::time::sleep(delay).await;
    }
    let download = rel == "/v3/billdownload/file" && answer.status == 200;
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = HttpResponse::build(status);
    response.insert_header(("Request-ID", random_hex(16)));
    let bytes = match &answer.body {
        Some(Value::String(text)) if download => {
            // The bill itself is not signed: its SHA-1 in the signed bill answer vouches for it.
            return response.content_type("text/csv; charset=utf-8").body(text.clone());
        }
        Some(body) => body.to_string().into_bytes(),
        None => Vec::new(),
    };
    match sb.platform_keys() {
        Ok(platform) => {
            let ts = Utc::now().timestamp().to_string();
            let nonce = random_hex(16).to_uppercase();
            match platform.sign_answer(&ts, &nonce, &bytes) {
                Ok(signature) => {
                    response
                        .insert_header(("Wechatpay-Timestamp", ts))
                        .insert_header(("Wechatpay-Nonce", nonce))
                        .insert_header(("Wechatpay-Signature", signature))
                        .insert_header(("Wechatpay-Serial", platform.id.clone()));
                }
                Err(e) => log::error!("sandbox pay platform could not sign an answer: {e}"),
            }
        }
        Err(e) => log::error!("sandbox pay platform has no key: {e}"),
    }
    if bytes.is_empty() { response.finish() } else { response.content_type("application/json").body(bytes) }
}

/// Delays between notification attempts after a failed one: a few seconds, not the platform's
/// hours.
pub(crate) const DEFAULT_RETRY_DELAYS: [Duration; 3] = [Duration::from_secs(1), Duration::from_secs(3), Duration::from_secs(10)];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notify_urls_must_be_https_or_loopback_http_without_a_query() {
        for ok in [
            "https://atrium.example.com/api/v1/miniprogram/payment/notify/3",
            "http://127.0.0.1:8080/n",
            "http://localhost/n",
            "http://[::1]:9/n",
        ] {
            assert!(check_notify_url(ok).is_ok(), "{ok}");
        }
        for bad in ["http://atrium.example.com/n", "https://a.example.com/n?x=1", "https://a.example.com/n#f", "/n", "ftp://127.0.0.1/n"] {
            assert!(check_notify_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn out_trade_and_refund_numbers_follow_the_platforms_alphabets() {
        assert!(is_out_trade_no("T00001") && is_out_trade_no("a_b-c*d_ef") && is_out_trade_no(&"9".repeat(32)));
        assert!(!is_out_trade_no("T0001") && !is_out_trade_no(&"9".repeat(33)) && !is_out_trade_no("T0000|1"));
        assert!(is_out_refund_no("R|1*2@3_-") && !is_out_refund_no("R 1") && !is_out_refund_no(&"9".repeat(65)));
    }

    #[test]
    fn path_segments_are_percent_decoded() {
        assert_eq!(percent_decode("R%7C1%2A2%403"), "R|1*2@3");
        assert_eq!(percent_decode("100%"), "100%");
    }

    #[test]
    fn a_merchant_is_registered_once_per_mchid() {
        let sb = Sandbox::new();
        let first = sb.register_merchant("1900000109", "wx_mp").unwrap();
        assert_eq!(sb.register_merchant("1900000109", "wx_mp").unwrap(), first);
        assert!(sb.register_merchant("1900000109", "wx_other").is_err());
        assert!(sb.register_merchant("19 00", "wx_mp").is_err());
        assert_eq!(first.platform_public_key_id, sb.platform_public_key_id().unwrap());
        assert!(!format!("{first:?}").contains("PRIVATE KEY"));
        assert!(!format!("{first:?}").contains(&first.api_v3_key));
    }

    #[test]
    fn injected_pay_failures_match_exact_paths_or_starts_and_run_out() {
        let sb = Sandbox::new();
        sb.fail_next_pay_call("/v3/pay/transactions/out-trade-no/*", 500, "SYSTEM_ERROR", 2).unwrap();
        sb.lose_next_pay_answers("/v3/pay/transactions/out-trade-no/T1", 503, "LOST", 1).unwrap();
        let refused = Some(Injected { status: 500, code: "SYSTEM_ERROR".into(), after: false });
        let mut state = sb.lock();
        assert_eq!(state.pay.injected("/v3/pay/transactions/jsapi"), None);
        assert_eq!(state.pay.injected("/v3/pay/transactions/out-trade-no/T1"), refused);
        assert_eq!(state.pay.injected("/v3/pay/transactions/out-trade-no/T2/close"), refused);
        // Injections apply in the order they were made, lost answers as refusals.
        assert_eq!(
            state.pay.injected("/v3/pay/transactions/out-trade-no/T1"),
            Some(Injected { status: 503, code: "LOST".into(), after: true })
        );
        assert_eq!(state.pay.injected("/v3/pay/transactions/out-trade-no/T1"), None);
        drop(state);
        assert!(sb.fail_next_pay_call("/cgi-bin/token", 500, "X", 1).is_err());
        assert!(sb.fail_next_pay_call("/v3/x", 200, "X", 1).is_err());
        assert!(sb.lose_next_pay_answers("/cgi-bin/token", 500, "X", 1).is_err());
        assert!(sb.lose_next_pay_answers("/v3/x", 200, "X", 1).is_err());
    }

    #[test]
    fn injected_pay_delays_match_like_failures_run_out_and_are_bounded() {
        let sb = Sandbox::new();
        sb.delay_next_pay_answers("/v3/refund/domestic/refunds*", Duration::from_millis(200), 2).unwrap();
        sb.delay_next_pay_answers("/v3/pay/transactions/jsapi", MAX_PAY_DELAY, 1).unwrap();
        let mut state = sb.lock();
        assert_eq!(state.pay.delayed("/v3/pay/transactions/out-trade-no/T1"), None);
        assert_eq!(state.pay.delayed("/v3/refund/domestic/refunds"), Some(Duration::from_millis(200)));
        assert_eq!(state.pay.delayed("/v3/refund/domestic/refunds/R1"), Some(Duration::from_millis(200)));
        assert_eq!(state.pay.delayed("/v3/refund/domestic/refunds"), None);
        assert_eq!(state.pay.delayed("/v3/pay/transactions/jsapi"), Some(MAX_PAY_DELAY));
        assert_eq!(state.pay.delayed("/v3/pay/transactions/jsapi"), None);
        drop(state);
        assert!(sb.delay_next_pay_answers("/v3/x", MAX_PAY_DELAY + Duration::from_millis(1), 1).is_err());
        assert!(sb.delay_next_pay_answers("/cgi-bin/token", Duration::from_millis(1), 1).is_err());
        // Nothing to hold back: nothing pending.
        sb.delay_next_pay_answers("/v3/x", Duration::from_millis(1), 0).unwrap();
        sb.delay_next_pay_answers("/v3/x", Duration::ZERO, 3).unwrap();
        assert_eq!(sb.lock().pay.delayed("/v3/x"), None);
    }

    #[test]
    fn a_refused_call_is_not_carried_out_and_a_lost_answer_is() {
        let sb = Sandbox::new();
        let m = sb.register_merchant("1900000109", "wx_mp").unwrap();
        let order = |no: &str| {
            json!({
                "appid": "wx_mp", "mchid": "1900000109", "description": "Tea", "out_trade_no": no,
                "notify_url": "http://127.0.0.1:9/n", "amount": {"total": 100}, "payer": {"openid": "o-ann"},
            })
            .to_string()
        };
        let jsapi = "/v3/pay/transactions/jsapi";
        sb.fail_next_pay_call(jsapi, 500, "SYSTEM_ERROR", 1).unwrap();
        assert_eq!(code(&call(&sb, &m, "POST", jsapi, &order("T000001"), 0)), (500, "SYSTEM_ERROR".into()));
        assert_eq!(sb.trade_state("1900000109", "T000001"), None);

        sb.lose_next_pay_answers(jsapi, 504, "GATEWAY_TIMEOUT", 1).unwrap();
        assert_eq!(code(&call(&sb, &m, "POST", jsapi, &order("T000002"), 0)), (504, "GATEWAY_TIMEOUT".into()));
        assert_eq!(sb.trade_state("1900000109", "T000002"), Some(TradeState::NotPay));
        // The retry finds the order the lost answer was about.
        let prepay_id = sb.lock().pay.orders[&("1900000109".to_owned(), "T000002".to_owned())].prepay_id.clone();
        let retried = call(&sb, &m, "POST", jsapi, &order("T000002"), 0);
        assert_eq!(retried.body.unwrap()["prepay_id"], prepay_id.as_str());
        assert_eq!(sb.pay_calls("POST /v3/pay/transactions/jsapi"), 3);
    }

    /// Calls the pay platform as merchant `m` would, `skew` seconds off the clock.
    pub(super) fn call(sb: &Sandbox, m: &SandboxMerchant, method: &str, path_and_query: &str, body: &str, skew: i64) -> Answer {
        call_with_serial(sb, m, method, path_and_query, body, skew, None)
    }

    /// As [`call`], the request naming platform key `serial` in `Wechatpay-Serial`.
    pub(super) fn call_with_serial(
        sb: &Sandbox,
        m: &SandboxMerchant,
        method: &str,
        path_and_query: &str,
        body: &str,
        skew: i64,
        serial: Option<&str>,
    ) -> Answer {
        let ts = Utc::now().timestamp() + skew;
        let key = openssl::pkey::PKey::private_key_from_pem(m.private_key_pem.as_bytes()).unwrap();
        let message = format!("{method}\n{path_and_query}\n{ts}\nN1\n{body}\n");
        let signature = keys::sign(&key, message.as_bytes()).unwrap();
        let auth = format!(
            "{} mchid=\"{}\",nonce_str=\"N1\",timestamp=\"{ts}\",serial_no=\"{}\",signature=\"{signature}\"",
            keys::AUTH_SCHEME,
            m.mchid,
            m.merchant_serial_no
        );
        let path = path_and_query.split('?').next().unwrap();
        let headers = CallHeaders { authorization: Some(&auth), wechatpay_serial: serial };
        sb.pay_call(method, path, path_and_query, headers, body.as_bytes(), "http://h/sandbox/pay")
    }

    pub(super) fn code(a: &Answer) -> (u16, String) {
        (a.status, a.body.as_ref().and_then(|b| b["code"].as_str()).unwrap_or_default().to_owned())
    }

    #[test]
    fn only_requests_signed_by_a_registered_merchant_in_time_are_answered() {
        let sb = Sandbox::new();
        let m = sb.register_merchant("1900000109", "wx_mp").unwrap();
        let query = "/v3/pay/transactions/out-trade-no/T000001?mchid=1900000109";
        assert_eq!(code(&call(&sb, &m, "GET", query, "", 0)), (404, "ORDER_NOT_EXIST".into()));
        // On the wall clock, a second may pass between signing and checking: these stay clear
        // of the 300 s edge, which keys.rs tests to the second on a fixed clock.
        assert_eq!(code(&call(&sb, &m, "GET", query, "", -290)), (404, "ORDER_NOT_EXIST".into()));
        assert_eq!(code(&call(&sb, &m, "GET", query, "", 290)), (404, "ORDER_NOT_EXIST".into()));
        assert_eq!(code(&call(&sb, &m, "GET", query, "", -310)), (401, "SIGN_ERROR".into()));
        assert_eq!(code(&call(&sb, &m, "GET", query, "", 310)), (401, "SIGN_ERROR".into()));
        let mut other_serial = m.clone();
        other_serial.merchant_serial_no = "5157F09EFDC096DE15EBE81A47057A7232F1B8E1".into();
        assert_eq!(code(&call(&sb, &other_serial, "GET", query, "", 0)), (401, "SIGN_ERROR".into()));
        let mut unknown = m.clone();
        unknown.mchid = "1900000999".into();
        assert_eq!(code(&call(&sb, &unknown, "GET", query, "", 0)), (401, "SIGN_ERROR".into()));
        let unsigned = sb.pay_call("GET", "/v3/pay/transactions/out-trade-no/T000001", query, CallHeaders::default(), b"", "http://h");
        assert_eq!(code(&unsigned), (401, "SIGN_ERROR".into()));
        assert_eq!(code(&call(&sb, &m, "GET", "/v3/certificates", "", 0)), (404, "NOT_FOUND".into()));
    }

    #[test]
    fn a_sub_merchant_is_registered_under_one_provider() {
        let sb = Sandbox::new();
        sb.register_merchant("1900000109", "wx_sp").unwrap();
        sb.register_merchant("1900000110", "wx_sp2").unwrap();

        let sub = sb.register_sub_merchant("1900000109", "1900000200", Some("wx_sub")).unwrap();

        assert_eq!(
            sub,
            SandboxSubMerchant {
                sp_mchid: "1900000109".into(),
                sub_mchid: "1900000200".into(),
                sub_appid: Some("wx_sub".into()),
                max_ratio: 3000
            }
        );
        assert_eq!(sb.register_sub_merchant("1900000109", "1900000200", Some("wx_sub")).unwrap(), sub, "the same again is the same");
        assert_eq!(sb.sub_merchant("1900000200"), Some(sub));
        assert_eq!(sb.sub_merchant("1900000201"), None);
        let refusals = [
            sb.register_sub_merchant("1900000110", "1900000200", Some("wx_sub")),
            sb.register_sub_merchant("1900000109", "1900000200", None),
            sb.register_sub_merchant("1900000109", "1900000110", None),
            sb.register_sub_merchant("1900000999", "1900000201", None),
            sb.register_sub_merchant("1900000109", "19 00", None),
            sb.register_sub_merchant("1900000109", "1900000201", Some("wx-sub")),
        ];
        let messages: Vec<String> = refusals.into_iter().map(|r| r.unwrap_err()).collect();
        assert!(messages[0].contains("another provider"), "{}", messages[0]);
        assert!(messages[1].contains("another sub_appid"), "{}", messages[1]);
        assert!(messages[2].contains("a merchant of its own"), "{}", messages[2]);
        assert!(messages[3].contains("not a merchant registered"), "{}", messages[3]);
        assert!(sb.register_merchant("1900000200", "wx_sub").unwrap_err().contains("sub-merchant"), "a sub-merchant is not a merchant");
        let plain = sb.register_sub_merchant("1900000109", "1900000201", None).unwrap();
        assert_eq!((plain.sub_appid, plain.max_ratio), (None, DEFAULT_MAX_RATIO));
    }

    #[test]
    fn a_sub_merchants_max_ratio_is_told_to_its_provider_only() {
        let sb = Sandbox::new();
        let sp = sb.register_merchant("1900000109", "wx_sp").unwrap();
        let other_sp = sb.register_merchant("1900000110", "wx_sp2").unwrap();
        sb.register_sub_merchant("1900000109", "1900000200", None).unwrap();
        let path = "/v3/profitsharing/merchant-configs/1900000200";

        let answer = call(&sb, &sp, "GET", path, "", 0);
        assert_eq!(answer.status, 200);
        assert_eq!(answer.body, Some(json!({"sub_mchid": "1900000200", "max_ratio": DEFAULT_MAX_RATIO})));
        assert_eq!(sb.set_max_ratio("1900000200", 1500).unwrap().max_ratio, 1500);
        assert_eq!(call(&sb, &sp, "GET", path, "", 0).body.unwrap()["max_ratio"], 1500);

        assert_eq!(code(&call(&sb, &other_sp, "GET", path, "", 0)), (400, "INVALID_REQUEST".into()), "another provider's sub-merchant");
        assert!(sb.set_max_ratio("1900000200", 10_001).is_err());
        assert!(sb.set_max_ratio("1900000999", 1000).is_err(), "not a sub-merchant");
    }

    /// A partner order of `sub_mchid` placed by `sp_mchid`: the payer in `sub_appid` when given.
    pub(super) fn partner_order(sp_mchid: &str, sub_mchid: &str, sub_appid: Option<&str>, no: &str) -> Value {
        let mut order = json!({
            "sp_appid": "wx_sp", "sp_mchid": sp_mchid, "sub_mchid": sub_mchid, "description": "Tea", "out_trade_no": no,
            "notify_url": "http://127.0.0.1:9/n", "settle_info": {"profit_sharing": true}, "amount": {"total": 100, "currency": "CNY"},
            "payer": {"sp_openid": "o-sp-ann"},
        });
        if let Some(sub_appid) = sub_appid {
            order["sub_appid"] = json!(sub_appid);
            order["payer"] = json!({"sub_openid": "o-sub-ann"});
        }
        order
    }

    #[test]
    fn partner_orders_are_the_sub_merchants_and_only_its_provider_reaches_them() {
        let sb = Sandbox::new();
        let sp = sb.register_merchant("1900000109", "wx_sp").unwrap();
        let other_sp = sb.register_merchant("1900000110", "wx_sp").unwrap();
        sb.register_sub_merchant("1900000109", "1900000200", Some("wx_sub")).unwrap();
        sb.register_sub_merchant("1900000110", "1900000300", None).unwrap();
        let jsapi = "/v3/pay/partner/transactions/jsapi";
        let place = |m: &SandboxMerchant, body: &Value| call(&sb, m, "POST", jsapi, &body.to_string(), 0);

        let placed = place(&sp, &partner_order("1900000109", "1900000200", Some("wx_sub"), "T_SP_001"));

        assert_eq!(placed.status, 200);
        let order = sb.lock().pay.orders[&("1900000200".to_owned(), "T_SP_001".to_owned())].clone();
        assert_eq!(
            (order.sp_mchid.as_deref(), order.sub_appid.as_deref(), order.appid.as_str(), order.openid.as_str(), order.profit_sharing),
            (Some("1900000109"), Some("wx_sub"), "wx_sp", "o-sub-ann", true)
        );
        assert_eq!(sb.trade_state("1900000200", "T_SP_001"), Some(TradeState::NotPay));
        assert_eq!(sb.trade_state("1900000109", "T_SP_001"), None, "not the provider's own order");
        // The provider queries it on the partner endpoint, in the partner shape.
        let query = "/v3/pay/partner/transactions/out-trade-no/T_SP_001?sp_mchid=1900000109&sub_mchid=1900000200";
        let answer = call(&sb, &sp, "GET", query, "", 0).body.unwrap();
        assert_eq!(
            (&answer["sp_mchid"], &answer["sub_mchid"], &answer["sp_appid"], &answer["sub_appid"], &answer["payer"]),
            (&json!("1900000109"), &json!("1900000200"), &json!("wx_sp"), &json!("wx_sub"), &json!({"sub_openid": "o-sub-ann"}))
        );
        assert!(answer.get("mchid").is_none() && answer.get("appid").is_none(), "{answer}");

        // Refused: another provider's sub-merchant, a sp_mchid that is not the signer, a wrong
        // sub_appid or sp_appid, the payer named in the wrong app.
        let not_mine = place(&sp, &partner_order("1900000109", "1900000300", None, "T_SP_002"));
        let not_signer = place(&sp, &partner_order("1900000110", "1900000200", None, "T_SP_002"));
        let wrong_sub_app = place(&sp, &partner_order("1900000109", "1900000200", Some("wx_other"), "T_SP_002"));
        let mut wrong_sp_app = partner_order("1900000109", "1900000200", None, "T_SP_002");
        wrong_sp_app["sp_appid"] = json!("wx_other");
        let mut sub_openid_without_app = partner_order("1900000109", "1900000200", None, "T_SP_002");
        sub_openid_without_app["payer"] = json!({"sub_openid": "o-sub-ann"});
        let mut sp_openid_with_app = partner_order("1900000109", "1900000200", Some("wx_sub"), "T_SP_002");
        sp_openid_with_app["payer"] = json!({"sp_openid": "o-sp-ann"});
        let mut profit_sharing_text = partner_order("1900000109", "1900000200", None, "T_SP_002");
        profit_sharing_text["settle_info"] = json!({"profit_sharing": "yes"});
        assert_eq!(code(&not_mine), (400, "INVALID_REQUEST".into()));
        assert_eq!(code(&not_signer), (400, "PARAM_ERROR".into()));
        assert_eq!(code(&wrong_sub_app), (400, "APPID_MCHID_NOT_MATCH".into()));
        assert_eq!(code(&place(&sp, &wrong_sp_app)), (400, "APPID_MCHID_NOT_MATCH".into()));
        assert_eq!(code(&place(&sp, &sub_openid_without_app)), (400, "PARAM_ERROR".into()));
        assert_eq!(code(&place(&sp, &sp_openid_with_app)), (400, "PARAM_ERROR".into()));
        assert_eq!(code(&place(&sp, &profit_sharing_text)), (400, "PARAM_ERROR".into()));
        assert_eq!(sb.trade_state("1900000200", "T_SP_002"), None);

        // Another provider cannot query, close or refund it; the provider's direct calls do not see it.
        let foreign = "/v3/pay/partner/transactions/out-trade-no/T_SP_001?sp_mchid=1900000110&sub_mchid=1900000200";
        assert_eq!(code(&call(&sb, &other_sp, "GET", foreign, "", 0)), (400, "INVALID_REQUEST".into()));
        let close = "/v3/pay/partner/transactions/out-trade-no/T_SP_001/close";
        let foreign_close = json!({"sp_mchid": "1900000110", "sub_mchid": "1900000200"}).to_string();
        assert_eq!(code(&call(&sb, &other_sp, "POST", close, &foreign_close, 0)), (400, "INVALID_REQUEST".into()));
        let direct = "/v3/pay/transactions/out-trade-no/T_SP_001?mchid=1900000109";
        assert_eq!(code(&call(&sb, &sp, "GET", direct, "", 0)), (404, "ORDER_NOT_EXIST".into()));
        let direct_close = json!({"mchid": "1900000109"}).to_string();
        let closed_directly = call(&sb, &sp, "POST", "/v3/pay/transactions/out-trade-no/T_SP_001/close", &direct_close, 0);
        assert_eq!(code(&closed_directly), (404, "ORDER_NOT_EXIST".into()));
        let no_sub = "/v3/pay/partner/transactions/out-trade-no/T_SP_001?sp_mchid=1900000109";
        assert_eq!(code(&call(&sb, &sp, "GET", no_sub, "", 0)), (400, "PARAM_ERROR".into()));
        let own_close = json!({"sp_mchid": "1900000109", "sub_mchid": "1900000200"}).to_string();
        assert_eq!(call(&sb, &sp, "POST", close, &own_close, 0).status, 204);
        assert_eq!(sb.trade_state("1900000200", "T_SP_001"), Some(TradeState::Closed));
    }

    #[tokio::test]
    async fn a_sub_merchants_payment_refund_and_bill_are_its_own_and_notified_under_the_providers_key() {
        let sb = Sandbox::new();
        sb.set_notify_retry_delays(Vec::new());
        let sp = sb.register_merchant("1900000109", "wx_sp").unwrap();
        sb.register_sub_merchant("1900000109", "1900000200", None).unwrap();
        let order = partner_order("1900000109", "1900000200", None, "T_SP_001");
        assert_eq!(call(&sb, &sp, "POST", "/v3/pay/partner/transactions/jsapi", &order.to_string(), 0).status, 200);

        let paid = sb.pay_order(Some("1900000200"), "T_SP_001", PaymentResult::Success).await.unwrap();

        assert_eq!((paid.mchid.as_str(), paid.trade_state.as_str()), ("1900000200", "SUCCESS"));
        let notification = paid.notification.unwrap();
        assert_eq!(notification.resource["sub_mchid"], "1900000200");
        assert_eq!(notification.resource["payer"], json!({"sp_openid": "o-sp-ann"}));
        let sealed: Value = serde_json::from_str(&notification.body).unwrap();
        let r = &sealed["resource"];
        let opened = open_resource(&sp.api_v3_key, r);
        assert_eq!(opened, notification.resource, "sealed with the provider's APIv3 key");
        let replayed = sb.signed_notifications(Some("1900000200"), "T_SP_001", 1).unwrap();
        let replayed: Value = serde_json::from_str(&replayed[0].body).unwrap();
        assert_eq!(open_resource(&sp.api_v3_key, &replayed["resource"])["sub_mchid"], "1900000200", "notify-requests too");
        // notify-lose and notify-fail act on a sub-merchant's notifications as on any.
        sb.lose_next_notifications(1);
        let refund = json!({
            "sub_mchid": "1900000200", "out_trade_no": "T_SP_001", "out_refund_no": "R_SP_0", "amount": {"refund": 10, "total": 100},
        });
        assert_eq!(call(&sb, &sp, "POST", "/v3/refund/domestic/refunds", &refund.to_string(), 0).status, 200);
        let lost = sb.settle_refund(Some("1900000200"), "R_SP_0", RefundResult::Closed).await.unwrap();
        assert!(lost.notification.unwrap().lost);

        // A refund names the sub-merchant; without it, the provider's own (none) are meant.
        let refund = json!({
            "sub_mchid": "1900000200", "out_trade_no": "T_SP_001", "out_refund_no": "R_SP_1", "amount": {"refund": 30, "total": 100, "currency": "CNY"},
        });
        let accepted = call(&sb, &sp, "POST", "/v3/refund/domestic/refunds", &refund.to_string(), 0);
        assert_eq!(accepted.body.unwrap()["sub_mchid"], "1900000200");
        let mut direct_refund = refund.clone();
        direct_refund.as_object_mut().unwrap().remove("sub_mchid");
        direct_refund["out_refund_no"] = json!("R_SP_2");
        assert_eq!(
            code(&call(&sb, &sp, "POST", "/v3/refund/domestic/refunds", &direct_refund.to_string(), 0)),
            (404, "RESOURCE_NOT_EXISTS".into())
        );
        let queried = call(&sb, &sp, "GET", "/v3/refund/domestic/refunds/R_SP_1?sub_mchid=1900000200", "", 0);
        assert_eq!(queried.body.unwrap()["status"], "PROCESSING");
        assert_eq!(code(&call(&sb, &sp, "GET", "/v3/refund/domestic/refunds/R_SP_1", "", 0)), (404, "RESOURCE_NOT_EXISTS".into()));
        let settled = sb.settle_refund(Some("1900000200"), "R_SP_1", RefundResult::Success).await.unwrap();
        let resource = settled.notification.unwrap().resource;
        assert_eq!((&resource["sp_mchid"], &resource["sub_mchid"]), (&json!("1900000109"), &json!("1900000200")));
        assert!(resource.get("mchid").is_none(), "{resource}");

        // The sub-merchant's bill: the provider under 商户号, the sub-merchant under 特约商户号.
        let today = Utc::now().with_timezone(&cst()).format("%Y-%m-%d").to_string();
        let answer = call(&sb, &sp, "GET", &format!("/v3/bill/tradebill?bill_date={today}&sub_mchid=1900000200&bill_type=ALL"), "", 0);
        let url = answer.body.unwrap()["download_url"].as_str().unwrap().to_owned();
        let file = call(&sb, &sp, "GET", url.trim_start_matches("http://h/sandbox/pay"), "", 0);
        let Some(Value::String(text)) = file.body else { panic!("no bill") };
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 6, "{text}"); // header, the payment, two refunds, summary header and row
        assert!(lines[1].contains(",`wx_sp,`1900000109,`1900000200,`,`") && lines[1].contains(",`T_SP_001,`o-sp-ann,`"), "{}", lines[1]);
        let own = call(&sb, &sp, "GET", &format!("/v3/bill/tradebill?bill_date={today}&bill_type=ALL"), "", 0);
        assert_eq!(code(&own), (400, "NO_STATEMENT_EXIST".into()), "the provider's own bill has none of it");
    }

    /// Opens a notification resource as the merchant would, with `api_v3_key`.
    pub(super) fn open_resource(api_v3_key: &str, resource: &Value) -> Value {
        use base64::Engine;
        let raw = base64::engine::general_purpose::STANDARD.decode(resource["ciphertext"].as_str().unwrap()).unwrap();
        let (ciphertext, tag) = raw.split_at(raw.len() - 16);
        let plain = openssl::symm::decrypt_aead(
            openssl::symm::Cipher::aes_256_gcm(),
            api_v3_key.as_bytes(),
            Some(resource["nonce"].as_str().unwrap().as_bytes()),
            resource["associated_data"].as_str().unwrap().as_bytes(),
            ciphertext,
            tag,
        )
        .unwrap();
        serde_json::from_slice(&plain).unwrap()
    }

    #[tokio::test]
    async fn the_trade_bill_has_the_platforms_rows_and_summary() {
        let sb = Sandbox::new();
        sb.set_notify_retry_delays(Vec::new());
        let m = sb.register_merchant("1900000109", "wx_mp").unwrap();
        let order = json!({
            "appid": "wx_mp", "mchid": "1900000109", "description": "Coffee, large", "out_trade_no": "T000001",
            "notify_url": "http://127.0.0.1:9/n", "amount": {"total": 1000, "currency": "CNY"}, "payer": {"openid": "o-ann"},
        });
        assert_eq!(call(&sb, &m, "POST", "/v3/pay/transactions/jsapi", &order.to_string(), 0).status, 200);
        // Nobody listens on port 9: the notification fails and is given up, the payment stands.
        let report = sb.pay_order(None, "T000001", PaymentResult::Success).await.unwrap();
        assert_eq!(report.notification.unwrap().attempts[0].error.as_deref(), Some("could not connect"));
        let refund = json!({"out_trade_no": "T000001", "out_refund_no": "R1", "amount": {"refund": 300, "total": 1000, "currency": "CNY"}});
        assert_eq!(call(&sb, &m, "POST", "/v3/refund/domestic/refunds", &refund.to_string(), 0).status, 200);
        let today = Utc::now().with_timezone(&cst()).format("%Y-%m-%d").to_string();

        let answer = call(&sb, &m, "GET", &format!("/v3/bill/tradebill?bill_date={today}&bill_type=ALL"), "", 0);

        let body = answer.body.unwrap();
        let url = body["download_url"].as_str().unwrap();
        assert!(url.starts_with("http://h/sandbox/pay/v3/billdownload/file?token="), "{url}");
        let file = call(&sb, &m, "GET", url.trim_start_matches("http://h/sandbox/pay"), "", 0);
        let Some(Value::String(text)) = file.body else { panic!("no bill") };
        assert_eq!(body["hash_value"], hex::encode(openssl::sha::sha1(text.as_bytes())));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        assert!(lines[0].starts_with("交易时间,公众账号ID,商户号,"));
        let txid = sb.lock().pay.orders.values().next().unwrap().transaction_id.clone().unwrap();
        let success = format!(
            ",`wx_mp,`1900000109,`0,`,`{txid},`T000001,`o-ann,`JSAPI,`SUCCESS,`OTHERS,`CNY,`10.00,`0.00,`0,`0,`0.00,`0.00,`,`,`Coffee, large,`,`0.06000,`0.60%,`10.00,`0.00,`"
        );
        assert!(lines[1].ends_with(&success), "{}", lines[1]);
        assert!(
            lines[2].contains(",`REFUND,`")
                && lines[2].ends_with(",`R1,`3.00,`0.00,`ORIGINAL,`PROCESSING,`Coffee, large,`,`-0.01800,`0.60%,`10.00,`3.00,`"),
            "{}",
            lines[2]
        );
        assert_eq!(lines[3], "总交易单数,应结订单总金额,退款总金额,充值券退款总金额,手续费总金额,订单总金额,申请退款总金额");
        assert_eq!(lines[4], "`2,`10.00,`3.00,`0.00,`0.04200,`10.00,`3.00");
        let by_id = call(&sb, &m, "GET", &format!("/v3/pay/transactions/id/{txid}?mchid=1900000109"), "", 0);
        assert_eq!(by_id.body.unwrap()["trade_state"], "REFUND");
        let yesterday = (Utc::now().with_timezone(&cst()) - chrono::Duration::days(1)).format("%Y-%m-%d").to_string();
        let empty = call(&sb, &m, "GET", &format!("/v3/bill/tradebill?bill_date={yesterday}&bill_type=ALL"), "", 0);
        assert_eq!(code(&empty), (400, "NO_STATEMENT_EXIST".into()));
    }
}
