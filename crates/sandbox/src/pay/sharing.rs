//! Profit sharing (分账) in service-provider mode: a provider adds receivers for its
//! sub-merchant, requests shares of the sub-merchant's paid transactions, queries them,
//! unfreezes the rest for the sub-merchant and has merchant receivers return their part before
//! a refund. Every call names `sub_mchid`, which must be one of the signer's sub-merchants
//! (else 400 `INVALID_REQUEST` "受理关系不存在").
//!
//! * `POST /v3/profitsharing/receivers/add` `{sub_mchid, appid, type, account, name?,
//!   relation_type, custom_relation?}`: kept per sub-merchant by (type, account); adding again
//!   updates the relation and the name. `name` is sealed under the platform key (RSA-OAEP,
//!   SHA-1, base64) and the request names that key in `Wechatpay-Serial`; otherwise, or when it
//!   does not decrypt, 400 `PARAM_ERROR`. A `MERCHANT_ID` needs a name.
//! * `POST /v3/profitsharing/orders` `{sub_mchid, appid, transaction_id, out_order_no,
//!   receivers: [{type, account, amount, description}], unfreeze_unsplit}`: a share request,
//!   answered `PROCESSING` with each line `PENDING`. One number, one request: the same
//!   `out_order_no` again answers that request as it stands, whatever the body says. The rules
//!   (400 `INVALID_REQUEST` unless said): the transaction is the sub-merchant's, paid, and was
//!   placed with `settle_info.profit_sharing`; 1 to 50 receivers, each added before and named
//!   once, each amount at least 1 fen; the transaction's sharing is not over (unfrozen); at
//!   most 50 share requests per transaction; not within a minute of the payment (429
//!   `FREQUENCY_LIMITED`, [`Sandbox::set_share_one_minute_rule`]); and the transaction's
//!   shares not closed, this one included, at most `floor(total × max_ratio / 10,000)` and at
//!   most what its refunds left of it.
//! * `GET /v3/profitsharing/orders/{out_order_no}?sub_mchid=&transaction_id=`: the request as
//!   it stands; the first query of a `PROCESSING` request finishes it. Unknown: 404
//!   `RESOURCE_NOT_EXISTS`.
//! * `POST /v3/profitsharing/orders/unfreeze` `{sub_mchid, transaction_id, out_order_no,
//!   description}`: finishes the transaction's requests still processing (as a query would),
//!   then gives the rest (total − refunds − shares paid) to the sub-merchant: `FINISHED` with
//!   one `MERCHANT_ID` line of the sub-merchant, `SUCCESS`. No share follows it. The same
//!   number again is the same request; its query answers it too.
//! * `POST /v3/profitsharing/return-orders` `{sub_mchid, out_order_no, out_return_no,
//!   return_mchid, amount, description}`: a return (分账回退), part of a receiver's line back
//!   to the sub-merchant, answered `{sub_mchid, order_id, out_order_no, out_return_no,
//!   return_id, return_mchid, amount, description, result, fail_reason?, create_time,
//!   finish_time?}`. One number, one return: the same `out_return_no` again answers that return
//!   as it stands, whatever the body says. The rules (400 `INVALID_REQUEST` unless said; a
//!   field missing or not in the platform's alphabet is 400 `PARAM_ERROR`): `out_order_no` is
//!   a share request of the sub-merchant (not an unfreeze); `return_mchid` names a
//!   `MERCHANT_ID` line of it whose result is `SUCCESS` — a `PERSONAL_OPENID` line is never
//!   returned ("不支持分账给个人的分账单回退"); the amount at least 1 fen, and the line's
//!   returns not failed, this one included, at most the line's amount; at most 50 returns per
//!   share request ([`MAX_RETURNS_PER_SHARE_ORDER`]). A return is `SUCCESS` at once, with its
//!   `finish_time`, and the money is back with the sub-merchant; or `FAILED` with the reason
//!   [`Sandbox::fail_next_return`] gave its `return_mchid`, nothing given back. While
//!   [`Sandbox::set_returns_processing`] is on a new return answers `PROCESSING` first
//!   (nothing moved, no `finish_time`), and the next call under its number finishes it, as
//!   decided when it was made.
//! * `GET /v3/profitsharing/return-orders/{out_return_no}?sub_mchid=&out_order_no=`: the
//!   return as the POST answers it under the same number, the same body signed the same way
//!   (a `PROCESSING` one finishes, as there). It never makes one: a number the sub-merchant
//!   has no return under, or whose return is of another share request, is 404
//!   `RESOURCE_NOT_EXISTS`; a query not naming `sub_mchid` or `out_order_no` is 400
//!   `PARAM_ERROR`.
//!
//! What was shared off a payment is the receivers' until returned. What a transaction has left
//! for an unfreeze is paid − refunds − (shares `SUCCESS` − returns `SUCCESS`); and a refund of
//! a sub-merchant's transaction (`POST /v3/refund/domestic/refunds` with `sub_mchid`) larger
//! than what the sub-merchant holds of it — paid − refunds not closed − (shares not closed,
//! those still pending included − returns `SUCCESS`) — is refused with 403 `NOT_ENOUGH`
//! "基本账户余额不足，请充值后重新发起", the platform's answer when the balance cannot pay it.
//! A merchant's own (direct) refunds are not concerned.
//!
//! A share request finishes once, by whichever comes first: its first query, an unfreeze of
//! its transaction, or the platform itself [`Sandbox::set_share_finish_after`] after it was
//! made (1 s by default, [`DEFAULT_SHARE_FINISH_AFTER`]). Finishing makes it `FINISHED`, each
//! line `SUCCESS`, or `CLOSED` with the reason [`Sandbox::close_next_share`] gave its account;
//! a share that asked to unfreeze the rest then finishes the transaction's others and
//! unfreezes. Each line of a finished share is then notified to the `notify_url` of the payment
//! it shares, like a payment's notification (the same envelope, sealed with the provider's
//! APIv3 key, through the same outbox, retries and `notify-fail` / `notify-lose`):
//! `PROFITSHARING.SUCCESS` or `PROFITSHARING.CLOSED`, summary `分账`, `original_type`
//! `profitsharing`, the resource `{sp_mchid, sub_mchid, transaction_id, order_id,
//! out_order_no, receiver: {type, account, amount, description}, success_time}`, each with an
//! event id of its own. An unfreeze sends none; [`Sandbox::set_share_notifications`] turns them
//! off.
//!
//! The platform's own finish is a task per share request sleeping until its time (at most
//! [`MAX_SHARE_FINISH_AFTER`]), on the Tokio runtime the request arrived on; the sandbox keeps
//! at most `KEEP_ORDERS` requests, so at most that many such tasks. Without a runtime none is
//! scheduled and the request waits for its query.
//!
//! The sandbox keeps at most `KEEP_ORDERS` returns (then 429 `FREQUENCY_LIMITED`).
//!
//! The platform's own records can be made to differ from ours, for the reconciliation to find:
//! [`Sandbox::tamper_share_line`] changes a finished request's line (result, amount,
//! fail_reason), [`Sandbox::forget_share`] makes the platform forget a request and its
//! returns (their queries 404 from then on), [`Sandbox::tamper_return`] changes a return,
//! which then stays as set. The platform's queries and sums follow its records as changed.
//!
//! [`Sandbox::profit_sharing`] (and `GET {prefix}/control/profitsharing`) tells what the
//! platform holds of one transaction's sharing, each line's `returned` and its returns.
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::Duration;

use super::notify::{Event, build};
use super::{Answer, KEEP_FAILURES, KEEP_ORDERS, Order, PayState, SandboxSubMerchant, cst, opt_str_field, platform_time, str_field};
use crate::platform::Sandbox;

/// Receivers one share request may name, as on the platform.
pub const MAX_SHARE_RECEIVERS: usize = 50;
/// Share requests one transaction may have, as on the platform.
pub const MAX_SHARE_ORDERS_PER_TRANSACTION: usize = 50;
/// Receivers the sandbox keeps, over all sub-merchants.
const KEEP_RECEIVERS: usize = 100_000;
/// Share and unfreeze requests the sandbox keeps.
const KEEP_SHARE_ORDERS: usize = KEEP_ORDERS;
/// Seconds after its payment before a transaction may be shared (the one-minute rule).
const SHARE_AFTER_SECS: i64 = 60;
/// How long after it was made the platform finishes a share request by itself, unless a query
/// or an unfreeze finishes it before ([`Sandbox::set_share_finish_after`]).
pub const DEFAULT_SHARE_FINISH_AFTER: Duration = Duration::from_secs(1);
/// The longest [`Sandbox::set_share_finish_after`] takes.
pub const MAX_SHARE_FINISH_AFTER: Duration = Duration::from_secs(60);
/// Returns the sandbox keeps, over all sub-merchants.
const KEEP_RETURNS: usize = KEEP_ORDERS;
/// Returns one share request may have, as on the platform.
pub const MAX_RETURNS_PER_SHARE_ORDER: usize = 50;
/// Why a return fails, as the platform says it ([`Sandbox::fail_next_return`]).
pub const RETURN_FAIL_REASONS: [&str; 5] =
    ["ACCOUNT_ABNORMAL", "BALANCE_NOT_ENOUGH", "TIME_OUT_CLOSED", "PAYER_ACCOUNT_ABNORMAL", "INVALID_REQUEST"];
/// The longest description and account the platform takes, in characters.
const MAX_DESCRIPTION: usize = 80;
const MAX_ACCOUNT: usize = 64;

const RECEIVER_TYPES: [&str; 2] = ["MERCHANT_ID", "PERSONAL_OPENID"];
const RELATION_TYPES: [&str; 11] =
    ["SERVICE_PROVIDER", "STORE", "STAFF", "STORE_OWNER", "PARTNER", "HEADQUARTER", "BRAND", "DISTRIBUTOR", "USER", "SUPPLIER", "CUSTOM"];

const PROCESSING: &str = "PROCESSING";
const FINISHED: &str = "FINISHED";
const PENDING: &str = "PENDING";
const SUCCESS: &str = "SUCCESS";
const CLOSED: &str = "CLOSED";
const FAILED: &str = "FAILED";

/// A receiver as added for a sub-merchant.
#[derive(Debug, Clone)]
struct KnownReceiver {
    relation_type: &'static str,
    custom_relation: Option<String>,
    /// Decrypted.
    name: Option<String>,
}

/// A share request or an unfreeze.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Share,
    Unfreeze,
}

/// What finished a share request: the first of these applies, once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trigger {
    /// The platform by itself, `finish_after` after the request.
    Timer,
    /// Its first query.
    Query,
    /// An unfreeze of its transaction.
    Unfreeze,
}

impl Trigger {
    fn as_str(self) -> &'static str {
        match self {
            Trigger::Timer => "timer",
            Trigger::Query => "query",
            Trigger::Unfreeze => "unfreeze",
        }
    }
}

#[derive(Debug, Clone)]
struct Line {
    kind: &'static str,
    account: String,
    amount: i64,
    description: String,
    /// `PENDING`, `SUCCESS` or `CLOSED`.
    result: &'static str,
    fail_reason: Option<String>,
    detail_id: String,
    finish_time: Option<DateTime<Utc>>,
    /// The reason it is to close with when it finishes ([`Sandbox::close_next_share`]), fixed
    /// when it was requested.
    close_with: Option<String>,
}

#[derive(Debug, Clone)]
struct ShareRequest {
    kind: Kind,
    sub_mchid: String,
    transaction_id: String,
    out_order_no: String,
    order_id: String,
    /// `PROCESSING` or `FINISHED`.
    state: &'static str,
    unfreeze_unsplit: bool,
    lines: Vec<Line>,
    created_at: DateTime<Utc>,
    /// When it finished; an unfreeze is made finished.
    finished_at: Option<DateTime<Utc>>,
    /// What finished it.
    finished_by: Option<Trigger>,
    /// Its returns' numbers (`out_return_no`), oldest first.
    returns: Vec<String>,
}

/// A return (`POST /v3/profitsharing/return-orders`): part of a merchant receiver's line of a
/// share request back to the sub-merchant.
#[derive(Debug, Clone)]
struct ShareReturn {
    out_order_no: String,
    /// The share request's `order_id`.
    order_id: String,
    out_return_no: String,
    return_id: String,
    return_mchid: String,
    amount: i64,
    description: String,
    /// `PROCESSING`, `SUCCESS` or `FAILED`.
    result: &'static str,
    fail_reason: Option<String>,
    created_at: DateTime<Utc>,
    finish_time: Option<DateTime<Utc>>,
    /// The reason it is to fail with when it finishes ([`Sandbox::fail_next_return`]), fixed
    /// when it was made.
    fail_with: Option<String>,
    /// Changed by [`Sandbox::tamper_return`]: it stays as set, asking again finishes nothing.
    tampered: bool,
}

/// One transaction's sharing.
#[derive(Debug, Clone, Default)]
struct TransactionSharing {
    out_trade_no: String,
    /// Its share and unfreeze requests' numbers, oldest first.
    orders: Vec<String>,
    /// The request that ended its sharing: its unfreeze, or a share asking to unfreeze the rest.
    ended_by: Option<String>,
    /// What was unfrozen for the sub-merchant: by which request, how much, when.
    unfrozen: Option<(String, i64, DateTime<Utc>)>,
}

/// The platform's profit sharing, inside the sandbox's one lock.
pub(crate) struct SharingState {
    /// sub_mchid → (type, account) → receiver.
    receivers: HashMap<String, HashMap<(&'static str, String), KnownReceiver>>,
    receiver_count: usize,
    /// (sub_mchid, out_order_no) → share or unfreeze request.
    orders: HashMap<(String, String), ShareRequest>,
    /// (sub_mchid, transaction_id) → its sharing; made with its first request.
    transactions: HashMap<(String, String), TransactionSharing>,
    /// (account, fail_reason): the next share line of each account closes with that reason.
    close_next: Vec<(String, String)>,
    /// (sub_mchid, out_return_no) → return.
    returns: HashMap<(String, String), ShareReturn>,
    /// (return_mchid, fail_reason): the next return from each merchant fails with that reason.
    fail_next_return: Vec<(String, String)>,
    /// Whether a new return answers `PROCESSING` first, finished by the next call under its
    /// number.
    returns_processing: bool,
    one_minute_rule: bool,
    /// How long after it was made a share request finishes by itself.
    finish_after: Duration,
    /// Whether finished shares send `PROFITSHARING.*` notifications.
    notify: bool,
    /// Timers that came due (whether or not they still had a request to finish): the tests'
    /// way to know every timer has run.
    #[cfg(test)]
    timers_run: usize,
}

impl Default for SharingState {
    fn default() -> Self {
        SharingState {
            receivers: HashMap::new(),
            receiver_count: 0,
            orders: HashMap::new(),
            transactions: HashMap::new(),
            close_next: Vec::new(),
            returns: HashMap::new(),
            fail_next_return: Vec::new(),
            returns_processing: false,
            one_minute_rule: true,
            finish_after: DEFAULT_SHARE_FINISH_AFTER,
            notify: true,
            #[cfg(test)]
            timers_run: 0,
        }
    }
}

/// The rules the platform's profit sharing plays by: [`Sandbox::share_rules`] and the answer
/// of `POST {prefix}/control/profitsharing/rules`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ShareRules {
    /// Whether a share within a minute of its payment is refused
    /// ([`Sandbox::set_share_one_minute_rule`]).
    pub one_minute: bool,
    /// How long after it was made a share request finishes by itself, in milliseconds
    /// ([`Sandbox::set_share_finish_after`]).
    pub finish_after_ms: u64,
    /// Whether finished shares send `PROFITSHARING.*` notifications
    /// ([`Sandbox::set_share_notifications`]).
    pub notify: bool,
    /// Whether a new return answers `PROCESSING` first, finished by the next call under its
    /// number ([`Sandbox::set_returns_processing`]).
    pub returns_processing: bool,
}

/// A change to the platform's own record of a share line ([`Sandbox::tamper_share_line`]) or
/// of a return ([`Sandbox::tamper_return`]): what is given replaces what the platform holds,
/// what is not stays.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordChange {
    /// A line's `PENDING`, `SUCCESS` or `CLOSED`; a return's `PROCESSING`, `SUCCESS` or
    /// `FAILED`.
    pub result: Option<String>,
    /// Fen, at least 0.
    pub amount: Option<i64>,
    /// Why it closed or failed: A-Z and `_`, with a `CLOSED` line or a `FAILED` return only.
    pub fail_reason: Option<String>,
}

/// What a share line and a return have alike, to change by a [`RecordChange`].
struct Record {
    result: &'static str,
    amount: i64,
    fail_reason: Option<String>,
    finish_time: Option<DateTime<Utc>>,
}

/// A line's results, the one still open first.
const LINE_RESULTS: [&str; 3] = [PENDING, SUCCESS, CLOSED];
/// A return's results, the one still open first.
const RETURN_RESULTS: [&str; 3] = [PROCESSING, SUCCESS, FAILED];

/// What a [`RecordChange`] sets, its form checked: each `None` when not given.
struct Given {
    result: Option<&'static str>,
    amount: Option<i64>,
    fail_reason: Option<String>,
}

/// `change` read for a record that may be one of `results`, or why its form is refused.
fn given(change: &RecordChange, results: [&'static str; 3]) -> Result<Given, String> {
    let result = match &change.result {
        None => None,
        Some(r) => Some(
            results.iter().find(|known| **known == r).copied().ok_or_else(|| format!("result must be one of {}", results.join(", ")))?,
        ),
    };
    if let Some(fen) = change.amount.filter(|fen| *fen < 0) {
        return Err(format!("amount must be at least 0 fen, not {fen}"));
    }
    if let Some(reason) = &change.fail_reason {
        check_fail_reason(reason)?;
    }
    Ok(Given { result, amount: change.amount, fail_reason: change.fail_reason.clone() })
}

/// `record` with `given` made, or why it is refused. `results` are what the record may be,
/// the open one first, and `failed` the one a `fail_reason` goes with: a record made another
/// result loses its reason; one made open loses its finish time, one made finished gets one
/// (now) unless it was finished so already.
fn changed(record: Record, given: Given, results: [&'static str; 3], failed: &'static str, now: DateTime<Utc>) -> Result<Record, String> {
    let result = given.result.unwrap_or(record.result);
    let fail_reason = match given.fail_reason {
        Some(_) if result != failed => return Err(format!("fail_reason goes with a {failed} result, not {result}")),
        Some(reason) => Some(reason),
        None if result == failed => record.fail_reason,
        None => None,
    };
    let finish_time = if result == results[0] {
        None
    } else if result == record.result {
        record.finish_time.or(Some(now))
    } else {
        Some(now)
    };
    Ok(Record { result, amount: given.amount.unwrap_or(record.amount), fail_reason, finish_time })
}

/// A reason a share line closes or a return fails: 1 to 64 of A-Z and `_`.
fn check_fail_reason(reason: &str) -> Result<(), String> {
    if reason.is_empty() || reason.len() > 64 || !reason.bytes().all(|b| b.is_ascii_uppercase() || b == b'_') {
        return Err("fail_reason must be 1 to 64 of A-Z and _, as ACCOUNT_ABNORMAL".into());
    }
    Ok(())
}

impl SharingState {
    /// The key of share request `out_order_no`: of sub-merchant `sub_mchid` when given, else of
    /// the one sub-merchant that has such a request.
    fn order_key(&self, sub_mchid: Option<&str>, out_order_no: &str) -> Result<(String, String), String> {
        let keys = self.orders.keys().filter(|(sub, no)| no == out_order_no && sub_mchid.is_none_or(|s| s == sub));
        only_key(keys, "share request", out_order_no, sub_mchid)
    }

    /// The key of return `out_return_no`, as [`SharingState::order_key`] finds a request's.
    fn return_key(&self, sub_mchid: Option<&str>, out_return_no: &str) -> Result<(String, String), String> {
        let keys = self.returns.keys().filter(|(sub, no)| no == out_return_no && sub_mchid.is_none_or(|s| s == sub));
        only_key(keys, "return", out_return_no, sub_mchid)
    }
}

/// The one key of `keys`, or why there is none: `what` `no` is unknown, or several
/// sub-merchants have one and `sub_mchid` must say whose.
fn only_key<'a>(
    mut keys: impl Iterator<Item = &'a (String, String)>,
    what: &str,
    no: &str,
    sub_mchid: Option<&str>,
) -> Result<(String, String), String> {
    match (keys.next(), keys.next()) {
        (Some(key), None) => Ok(key.clone()),
        (Some(_), Some(_)) => Err(format!("several sub-merchants have a {what} {no}: name its sub_mchid")),
        (None, _) => Err(match sub_mchid {
            Some(sub) => format!("sub-merchant {sub} has no {what} {no}"),
            None => format!("the platform has no {what} {no}"),
        }),
    }
}

/// What the platform holds of one transaction's profit sharing: [`Sandbox::profit_sharing`]
/// and `GET {prefix}/control/profitsharing`. Amounts in fen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProfitSharingView {
    pub sub_mchid: String,
    pub out_trade_no: String,
    /// The platform's id of the payment; `None` while unpaid.
    pub transaction_id: Option<String>,
    /// What was paid.
    pub total: i64,
    /// What its refunds (those not closed) give back.
    pub refunded: i64,
    /// The sub-merchant's `max_ratio` now, basis points.
    pub max_ratio: u32,
    /// Every receiver added for the sub-merchant, by type and account.
    pub receivers: Vec<ShareReceiverView>,
    /// The transaction's share and unfreeze requests, oldest first.
    pub orders: Vec<ShareOrderView>,
    /// Paid to receivers: the `SUCCESS` lines of its share requests.
    pub shared: i64,
    /// Whether its sharing is over: unfrozen, or a share asked to unfreeze the rest.
    pub finished: bool,
    /// What was unfrozen for the sub-merchant; `None` before.
    pub unfrozen: Option<UnfrozenView>,
    /// The returns of its share requests' lines, oldest first.
    pub returns: Vec<ShareReturnView>,
}

/// A receiver added for a sub-merchant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShareReceiverView {
    /// `MERCHANT_ID` or `PERSONAL_OPENID`.
    #[serde(rename = "type")]
    pub kind: String,
    pub account: String,
    pub relation_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub custom_relation: Option<String>,
    /// The name as the platform decrypted it.
    pub name: Option<String>,
}

/// A share or unfreeze request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShareOrderView {
    pub out_order_no: String,
    pub order_id: String,
    /// `share` or `unfreeze`.
    pub kind: String,
    /// `PROCESSING` or `FINISHED`.
    pub state: String,
    pub unfreeze_unsplit: bool,
    pub lines: Vec<ShareLineView>,
    pub created_at: DateTime<Utc>,
    /// When it finished; `None` while processing. An unfreeze is made finished.
    pub finished_at: Option<DateTime<Utc>>,
    /// What finished it: `timer` (the platform by itself), `query` or `unfreeze`.
    pub finished_by: Option<String>,
}

/// One receiver's line of a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShareLineView {
    #[serde(rename = "type")]
    pub kind: String,
    pub account: String,
    pub amount: i64,
    pub description: String,
    /// `PENDING`, `SUCCESS` or `CLOSED`.
    pub result: String,
    pub fail_reason: Option<String>,
    pub finish_time: Option<DateTime<Utc>>,
    /// What its `SUCCESS` returns gave back to the sub-merchant.
    pub returned: i64,
}

/// A return of part of a merchant receiver's line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShareReturnView {
    pub out_return_no: String,
    /// The share request whose line it returns.
    pub out_order_no: String,
    /// The receiver that gives it back.
    pub return_mchid: String,
    pub amount: i64,
    /// `PROCESSING`, `SUCCESS` or `FAILED`.
    pub result: String,
    pub fail_reason: Option<String>,
}

/// The rest of a payment given to its sub-merchant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnfrozenView {
    /// The request that unfroze it: an unfreeze, or a share with `unfreeze_unsplit`.
    pub out_order_no: String,
    pub amount: i64,
    pub at: DateTime<Utc>,
}

fn invalid(message: impl Into<String>) -> Answer {
    Answer::error(400, "INVALID_REQUEST", message)
}

fn is_out_order_no(s: &str) -> bool {
    (1..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'|' | b'*' | b'@'))
}

/// `out_order_no`, in the platform's alphabet.
fn out_order_no_field(body: &Value) -> Result<&str, Answer> {
    let no = str_field(body, "out_order_no")?;
    if is_out_order_no(no) { Ok(no) } else { Err(Answer::param("out_order_no", "must be 1 to 64 of 0-9 A-Z a-z _ - | * @")) }
}

/// `out_return_no`, in the platform's alphabet.
fn out_return_no_field(body: &Value) -> Result<&str, Answer> {
    let no = str_field(body, "out_return_no")?;
    if is_out_order_no(no) { Ok(no) } else { Err(Answer::param("out_return_no", "must be 1 to 64 of 0-9 A-Z a-z _ - | * @")) }
}

/// A request's `sub_mchid` and its own number (read by `number`), the sub-merchant one of the
/// signer's.
type Named<'a> = (&'a str, &'a str, SandboxSubMerchant);

/// A receiver type, as the platform's own string.
fn receiver_type(value: Option<&Value>, field: &str) -> Result<&'static str, Answer> {
    match value {
        Some(Value::String(s)) => {
            RECEIVER_TYPES.iter().find(|t| **t == s).copied().ok_or_else(|| Answer::param(field, "must be MERCHANT_ID or PERSONAL_OPENID"))
        }
        None | Some(Value::Null) => Err(Answer::param(field, "is required")),
        Some(_) => Err(Answer::param(field, "must be a string")),
    }
}

/// A non-empty string of at most `max` characters under `field`.
fn text(value: Option<&Value>, field: &str, max: usize) -> Result<String, Answer> {
    match value {
        Some(Value::String(s)) if !s.is_empty() && s.chars().count() <= max => Ok(s.clone()),
        Some(Value::String(s)) if !s.is_empty() => Err(Answer::param(field, format!("is longer than {max} characters"))),
        Some(Value::String(_)) | None | Some(Value::Null) => Err(Answer::param(field, "is required")),
        Some(_) => Err(Answer::param(field, "must be a string")),
    }
}

/// A share request's lines as asked: (type, account, amount, description).
type AskedLine = (&'static str, String, i64, String);

/// `receivers` of a share request: 1 to 50, each amount at least 1 fen, each receiver once.
fn asked_lines(body: &Value) -> Result<Vec<AskedLine>, Answer> {
    let list = match body.get("receivers") {
        Some(Value::Array(list)) => list,
        None | Some(Value::Null) => return Err(Answer::param("receivers", "is required")),
        Some(_) => return Err(Answer::param("receivers", "must be an array")),
    };
    if list.is_empty() || list.len() > MAX_SHARE_RECEIVERS {
        return Err(invalid(format!("a share names 1 to {MAX_SHARE_RECEIVERS} receivers, not {}", list.len())));
    }
    let mut lines: Vec<AskedLine> = Vec::with_capacity(list.len());
    for (i, r) in list.iter().enumerate() {
        let field = |name: &str| format!("receivers[{i}].{name}");
        if !r.is_object() {
            return Err(Answer::param(&format!("receivers[{i}]"), "must be an object"));
        }
        let kind = receiver_type(r.get("type"), &field("type"))?;
        let account = text(r.get("account"), &field("account"), MAX_ACCOUNT)?;
        let amount = r.get("amount").and_then(Value::as_i64).ok_or_else(|| Answer::param(&field("amount"), "must be an integer (fen)"))?;
        if amount < 1 {
            return Err(invalid(format!("{} must be at least 1 fen", field("amount"))));
        }
        let description = text(r.get("description"), &field("description"), MAX_DESCRIPTION)?;
        if lines.iter().any(|(k, a, _, _)| *k == kind && *a == account) {
            return Err(invalid(format!("receiver {kind} {account} is named twice")));
        }
        lines.push((kind, account, amount, description));
    }
    Ok(lines)
}

fn line_json(line: &Line, created_at: DateTime<Utc>) -> Value {
    let mut out = json!({
        "amount": line.amount,
        "description": line.description,
        "type": line.kind,
        "account": line.account,
        "result": line.result,
        "detail_id": line.detail_id,
        "create_time": platform_time(created_at),
    });
    if let Some(reason) = &line.fail_reason {
        out["fail_reason"] = json!(reason);
    }
    if let Some(at) = line.finish_time {
        out["finish_time"] = json!(platform_time(at));
    }
    out
}

/// A request as the share, query and unfreeze answers write it.
fn order_json(order: &ShareRequest) -> Value {
    json!({
        "sub_mchid": order.sub_mchid,
        "transaction_id": order.transaction_id,
        "out_order_no": order.out_order_no,
        "order_id": order.order_id,
        "state": order.state,
        "receivers": order.lines.iter().map(|l| line_json(l, order.created_at)).collect::<Vec<_>>(),
    })
}

/// A return as the return answer writes it.
fn return_json(sub_mchid: &str, r: &ShareReturn) -> Value {
    let mut out = json!({
        "sub_mchid": sub_mchid,
        "order_id": r.order_id,
        "out_order_no": r.out_order_no,
        "out_return_no": r.out_return_no,
        "return_id": r.return_id,
        "return_mchid": r.return_mchid,
        "amount": r.amount,
        "description": r.description,
        "result": r.result,
        "create_time": platform_time(r.created_at),
    });
    if let Some(reason) = &r.fail_reason {
        out["fail_reason"] = json!(reason);
    }
    if let Some(at) = r.finish_time {
        out["finish_time"] = json!(platform_time(at));
    }
    out
}

/// Finishes a return: `FAILED` with the reason it was marked with, `SUCCESS` otherwise.
fn finish_return(r: &mut ShareReturn, now: DateTime<Utc>) {
    match r.fail_with.take() {
        Some(reason) => {
            r.result = FAILED;
            r.fail_reason = Some(reason);
        }
        None => r.result = SUCCESS,
    }
    r.finish_time = Some(now);
}

/// A known return asked for again, by its number's POST or by its query: one still
/// `PROCESSING` finishes now, as decided when it was made (unless [`Sandbox::tamper_return`]
/// set it so); answered as it then stands.
fn asked_again(sub_mchid: &str, known: &mut ShareReturn, now: DateTime<Utc>) -> Answer {
    if known.result == PROCESSING && !known.tampered {
        finish_return(known, now);
        log::info!("sandbox pay platform: return {} of sub-merchant {sub_mchid} finished {}", known.out_return_no, known.result);
    }
    Answer::ok(return_json(sub_mchid, known))
}

/// Finishes a request: each line `CLOSED` with the reason it was marked with, `SUCCESS`
/// otherwise.
fn finish_lines(order: &mut ShareRequest, now: DateTime<Utc>, by: Trigger) {
    for line in &mut order.lines {
        match line.close_with.take() {
            Some(reason) => {
                line.result = CLOSED;
                line.fail_reason = Some(reason);
            }
            None => line.result = SUCCESS,
        }
        line.finish_time = Some(now);
    }
    order.state = FINISHED;
    order.finished_at = Some(now);
    order.finished_by = Some(by);
}

/// A platform id: `prefix`, the time in China Standard Time, a sequence number.
fn platform_id(prefix: &str, pay: &mut PayState, now: DateTime<Utc>) -> String {
    format!("{prefix}{}{:010}", now.with_timezone(&cst()).format("%Y%m%d%H%M%S"), pay.next())
}

impl PayState {
    /// The sub-merchant's paid transaction `transaction_id` that may be shared, or why not.
    fn shareable(&self, sub_mchid: &str, transaction_id: &str) -> Result<&Order, Answer> {
        let order = self
            .orders
            .values()
            .find(|o| o.mchid == sub_mchid && o.sp_mchid.is_some() && o.transaction_id.as_deref() == Some(transaction_id))
            .ok_or_else(|| invalid(format!("transaction {transaction_id} of sub-merchant {sub_mchid} does not exist")))?;
        if !order.state.is_paid() {
            return Err(invalid(format!("transaction {transaction_id} is not paid")));
        }
        if !order.profit_sharing {
            return Err(invalid(format!("transaction {transaction_id} was not placed for profit sharing (settle_info.profit_sharing)")));
        }
        Ok(order)
    }

    /// What the refunds of `order` (those not closed) give back.
    fn refunded(&self, order: &Order) -> i64 {
        order
            .refunds
            .iter()
            .filter_map(|no| self.refunds.get(&(order.mchid.clone(), no.clone())))
            .filter(|r| r.status != "CLOSED")
            .map(|r| r.amount)
            .sum()
    }

    /// The lines of the transaction's share requests (not its unfreeze).
    fn share_lines<'a>(&'a self, sub_mchid: &'a str, tx: &'a TransactionSharing) -> impl Iterator<Item = &'a Line> + 'a {
        tx.orders
            .iter()
            .filter_map(move |no| self.sharing.orders.get(&(sub_mchid.to_owned(), no.clone())))
            .filter(|o| o.kind == Kind::Share)
            .flat_map(|o| o.lines.iter())
    }

    /// Finishes the transaction's requests still processing; answers their numbers.
    fn finish_transaction(&mut self, sub_mchid: &str, transaction_id: &str, now: DateTime<Utc>, by: Trigger) -> Vec<String> {
        let key = (sub_mchid.to_owned(), transaction_id.to_owned());
        let numbers = self.sharing.transactions.get(&key).map(|t| t.orders.clone()).unwrap_or_default();
        let mut finished = Vec::new();
        for no in numbers {
            if let Some(order) = self.sharing.orders.get_mut(&(sub_mchid.to_owned(), no.clone())).filter(|o| o.state == PROCESSING) {
                finish_lines(order, now, by);
                finished.push(no);
            }
        }
        finished
    }

    /// The returns of the transaction's share requests, oldest first within each request.
    fn share_returns<'a>(&'a self, sub_mchid: &'a str, tx: &'a TransactionSharing) -> impl Iterator<Item = &'a ShareReturn> + 'a {
        tx.orders
            .iter()
            .filter_map(move |no| self.sharing.orders.get(&(sub_mchid.to_owned(), no.clone())))
            .filter(|o| o.kind == Kind::Share)
            .flat_map(move |o| o.returns.iter().filter_map(move |no| self.sharing.returns.get(&(sub_mchid.to_owned(), no.clone()))))
    }

    /// What the transaction's `SUCCESS` returns gave back to the sub-merchant.
    fn returned(&self, sub_mchid: &str, tx: &TransactionSharing) -> i64 {
        self.share_returns(sub_mchid, tx).filter(|r| r.result == SUCCESS).map(|r| r.amount).fold(0, i64::saturating_add)
    }

    /// What is left of the transaction for its sub-merchant: paid, less refunds and the
    /// shares paid out net of what returns gave back; never below 0.
    fn left(&self, sub_mchid: &str, transaction_id: &str) -> i64 {
        let key = (sub_mchid.to_owned(), transaction_id.to_owned());
        let Some(tx) = self.sharing.transactions.get(&key) else { return 0 };
        let Some(order) = self.orders.get(&(sub_mchid.to_owned(), tx.out_trade_no.clone())) else { return 0 };
        let shared: i64 = self.share_lines(sub_mchid, tx).filter(|l| l.result == SUCCESS).map(|l| l.amount).sum();
        (order.paid() - self.refunded(order) - (shared - self.returned(sub_mchid, tx))).max(0)
    }

    /// What the sub-merchant holds of its transaction `order`, for a refund: paid, less its
    /// refunds not closed and what its shares took, net of what returns gave back. A share
    /// still pending has taken its amount already; a closed line took nothing. `None` for a
    /// merchant's own order (no sharing) and for an unpaid one.
    pub(super) fn sub_merchant_holds(&self, order: &Order) -> Option<i64> {
        order.sp_mchid.as_ref()?;
        let transaction_id = order.transaction_id.as_ref()?;
        let refunded = self.refunded(order);
        let Some(tx) = self.sharing.transactions.get(&(order.mchid.clone(), transaction_id.clone())) else {
            return Some(order.paid() - refunded);
        };
        let taken: i64 = self.share_lines(&order.mchid, tx).filter(|l| l.result != CLOSED).map(|l| l.amount).fold(0, i64::saturating_add);
        Some(order.paid() - refunded - (taken - self.returned(&order.mchid, tx)))
    }

    /// Finishes request `out_order_no` if it is processing; a share that asked to unfreeze
    /// the rest then finishes the transaction's others and unfreezes. Answers the numbers of
    /// the requests it finished: none when that one was finished already, so whatever finishes
    /// a request (under the lock) does it once.
    fn finish(&mut self, sub_mchid: &str, out_order_no: &str, now: DateTime<Utc>, by: Trigger) -> Vec<String> {
        let Some(order) = self.sharing.orders.get_mut(&(sub_mchid.to_owned(), out_order_no.to_owned())) else { return Vec::new() };
        if order.state != PROCESSING {
            return Vec::new();
        }
        finish_lines(order, now, by);
        let mut finished = vec![out_order_no.to_owned()];
        if !order.unfreeze_unsplit {
            return finished;
        }
        let transaction_id = order.transaction_id.clone();
        finished.extend(self.finish_transaction(sub_mchid, &transaction_id, now, by));
        let left = self.left(sub_mchid, &transaction_id);
        if let Some(tx) = self.sharing.transactions.get_mut(&(sub_mchid.to_owned(), transaction_id)) {
            tx.unfrozen.get_or_insert((out_order_no.to_owned(), left, now));
        }
        finished
    }

    /// Records a `PROFITSHARING.*` notification for each line of the share requests
    /// `finished` (numbers of sub-merchant `sub_mchid`'s requests, just finished), to the
    /// `notify_url` of the payment each shares, sealed with the provider's APIv3 key; answers
    /// their seqs, to dispatch once the lock is released. None while notifications are off,
    /// none for an unfreeze.
    fn notify_finished(&mut self, sub_mchid: &str, finished: &[String]) -> Vec<u64> {
        if !self.sharing.notify || finished.is_empty() {
            return Vec::new();
        }
        let api_v3_key = self.api_v3_key(sub_mchid);
        let mut built = Vec::new();
        for no in finished {
            let Some(order) = self.sharing.orders.get(&(sub_mchid.to_owned(), no.clone())).filter(|o| o.kind == Kind::Share) else {
                continue;
            };
            let tx_key = (sub_mchid.to_owned(), order.transaction_id.clone());
            let Some(payment) =
                self.sharing.transactions.get(&tx_key).and_then(|tx| self.orders.get(&(sub_mchid.to_owned(), tx.out_trade_no.clone())))
            else {
                log::warn!("sandbox pay platform: share {no} of sub-merchant {sub_mchid} has no payment to notify");
                continue;
            };
            let sp_mchid = payment.sp_mchid.as_deref().unwrap_or_default();
            for line in &order.lines {
                let resource = json!({
                    "sp_mchid": sp_mchid,
                    "sub_mchid": sub_mchid,
                    "transaction_id": order.transaction_id,
                    "order_id": order.order_id,
                    "out_order_no": order.out_order_no,
                    "receiver": {"type": line.kind, "account": line.account, "amount": line.amount, "description": line.description},
                    "success_time": platform_time(line.finish_time.or(order.finished_at).unwrap_or_else(Utc::now)),
                });
                let event = Event {
                    event_type: format!("PROFITSHARING.{}", line.result),
                    summary: "分账",
                    original_type: "profitsharing",
                    mchid: sub_mchid,
                    out_trade_no: &payment.out_trade_no,
                    out_refund_no: None,
                    out_order_no: Some(&order.out_order_no),
                    notify_url: &payment.notify_url,
                    resource,
                };
                match build(event, &api_v3_key) {
                    Ok(notification) => built.push(notification),
                    Err(why) => log::error!("sandbox pay platform could not seal a notification of share {no}: {why}"),
                }
            }
        }
        built.into_iter().map(|n| self.notify.push(n)).collect()
    }

    /// Keeps a new request and its transaction's record of it.
    fn keep_request(&mut self, order: ShareRequest, out_trade_no: &str) {
        let tx = self.sharing.transactions.entry((order.sub_mchid.clone(), order.transaction_id.clone())).or_default();
        tx.out_trade_no = out_trade_no.to_owned();
        tx.orders.push(order.out_order_no.clone());
        if order.kind == Kind::Unfreeze || order.unfreeze_unsplit {
            tx.ended_by = Some(order.out_order_no.clone());
        }
        self.sharing.orders.insert((order.sub_mchid.clone(), order.out_order_no.clone()), order);
    }
}

impl PayState {
    /// Whether `appid` may be named in sub-merchant `sub_mchid`'s sharing by provider
    /// `signer`: the provider's app, or the sub-merchant's own.
    fn sharing_appid_matches(&self, signer: &str, sub_mchid: &str, appid: &str) -> bool {
        let provider_app = self.merchants.get(signer).is_some_and(|m| m.issued.appid == appid);
        provider_app || self.sub_merchants.get(sub_mchid).and_then(|s| s.sub_appid.as_deref()) == Some(appid)
    }
}

/// Refused: `appid` is neither the provider's app nor the sub-merchant's.
fn appid_mismatch() -> Answer {
    Answer::error(400, "APPID_MCHID_NOT_MATCH", "appid is neither the provider's nor the sub-merchant's app")
}

impl Sandbox {
    /// `POST /v3/profitsharing/receivers/add`.
    pub(super) fn add_share_receiver(&self, signer: &str, body: &Value, serial: Option<&str>) -> Answer {
        let parsed = (|| {
            let sub_mchid = str_field(body, "sub_mchid")?;
            let appid = str_field(body, "appid")?;
            let kind = receiver_type(body.get("type"), "type")?;
            let account = text(body.get("account"), "account", MAX_ACCOUNT)?;
            let relation = str_field(body, "relation_type")?;
            let relation = RELATION_TYPES
                .iter()
                .find(|r| **r == relation)
                .copied()
                .ok_or_else(|| Answer::param("relation_type", format!("must be one of {}", RELATION_TYPES.join(", "))))?;
            let custom = opt_str_field(body, "custom_relation")?.filter(|c| !c.is_empty());
            if relation == "CUSTOM" && custom.is_none() {
                return Err(Answer::param("custom_relation", "is required with relation_type CUSTOM"));
            }
            Ok((sub_mchid, appid, kind, account, relation, custom, opt_str_field(body, "name")?))
        })();
        let (sub_mchid, appid, kind, account, relation, custom, sealed) = match parsed {
            Ok(p) => p,
            Err(refusal) => return refusal,
        };
        if let Err(refusal) = self.sub_merchant_of(signer, sub_mchid) {
            return refusal;
        }
        if !self.lock().pay.sharing_appid_matches(signer, sub_mchid, appid) {
            return appid_mismatch();
        }
        let name = match sealed {
            None if kind == "MERCHANT_ID" => return Answer::param("name", "is required for a MERCHANT_ID receiver"),
            None => None,
            Some(sealed) => {
                let platform = match self.platform_keys() {
                    Ok(keys) => keys,
                    Err(why) => return Answer::error(500, "SYSTEM_ERROR", why),
                };
                if serial != Some(platform.id.as_str()) {
                    return Answer::param("name", "is encrypted, but the Wechatpay-Serial header does not name the platform key");
                }
                match platform.decrypt_sensitive(sealed).filter(|n| !n.is_empty()) {
                    Some(name) => Some(name),
                    None => return Answer::param("name", "does not decrypt with the platform key (RSA-OAEP, base64)"),
                }
            }
        };
        let mut state = self.lock();
        let sharing = &mut state.pay.sharing;
        let known = sharing.receivers.get(sub_mchid).is_some_and(|r| r.contains_key(&(kind, account.clone())));
        if !known {
            if sharing.receiver_count >= KEEP_RECEIVERS {
                return Answer::error(429, "FREQUENCY_LIMITED", format!("the sandbox keeps at most {KEEP_RECEIVERS} receivers"));
            }
            sharing.receiver_count += 1;
        }
        let receiver = KnownReceiver { relation_type: relation, custom_relation: custom.map(str::to_owned), name };
        sharing.receivers.entry(sub_mchid.to_owned()).or_default().insert((kind, account.clone()), receiver);
        log::info!("sandbox pay platform: receiver {kind} {account} added for sub-merchant {sub_mchid} ({relation})");
        let mut answer = json!({"sub_mchid": sub_mchid, "type": kind, "account": account, "relation_type": relation});
        if let Some(sealed) = sealed {
            answer["name"] = json!(sealed);
        }
        if let Some(custom) = custom {
            answer["custom_relation"] = json!(custom);
        }
        Answer::ok(answer)
    }

    /// The `sub_mchid` a request names and its number (read by `number`), the sub-merchant
    /// checked as one of the signer's.
    fn named<'a>(&self, signer: &str, body: &'a Value, number: fn(&Value) -> Result<&str, Answer>) -> Result<Named<'a>, Answer> {
        let sub_mchid = str_field(body, "sub_mchid")?;
        let no = number(body)?;
        let sub = self.sub_merchant_of(signer, sub_mchid)?;
        Ok((sub_mchid, no, sub))
    }

    /// `POST /v3/profitsharing/orders`.
    pub(super) fn share(&self, signer: &str, body: &Value) -> Answer {
        let (sub_mchid, out_order_no, sub) = match self.named(signer, body, out_order_no_field) {
            Ok(n) => n,
            Err(refusal) => return refusal,
        };
        let now = Utc::now();
        let mut state = self.lock();
        let pay = &mut state.pay;
        let key = (sub_mchid.to_owned(), out_order_no.to_owned());
        if let Some(known) = pay.sharing.orders.get(&key) {
            // One number, one request: a retry gets it as it stands.
            return Answer::ok(order_json(known));
        }
        let parsed = (|| {
            if !pay.sharing_appid_matches(signer, sub_mchid, str_field(body, "appid")?) {
                return Err(appid_mismatch());
            }
            let transaction_id = str_field(body, "transaction_id")?;
            let lines = asked_lines(body)?;
            let unsplit = match body.get("unfreeze_unsplit") {
                Some(Value::Bool(b)) => *b,
                None | Some(Value::Null) => return Err(Answer::param("unfreeze_unsplit", "is required")),
                Some(_) => return Err(Answer::param("unfreeze_unsplit", "must be a boolean")),
            };
            Ok((transaction_id, lines, unsplit))
        })();
        let (transaction_id, lines, unfreeze_unsplit) = match parsed {
            Ok(p) => p,
            Err(refusal) => return refusal,
        };
        let (total, refunded, out_trade_no, paid_at) = match pay.shareable(sub_mchid, transaction_id) {
            Ok(order) => (order.paid(), pay.refunded(order), order.out_trade_no.clone(), order.success_time),
            Err(refusal) => return refusal,
        };
        let added = pay.sharing.receivers.get(sub_mchid);
        if let Some((kind, account, _, _)) = lines.iter().find(|(k, a, _, _)| added.is_none_or(|r| !r.contains_key(&(*k, a.clone())))) {
            return invalid(format!("receiver {kind} {account} is not added for sub-merchant {sub_mchid}"));
        }
        let tx_key = (sub_mchid.to_owned(), transaction_id.to_owned());
        let empty = TransactionSharing::default();
        let tx = pay.sharing.transactions.get(&tx_key).unwrap_or(&empty);
        if let Some(ended) = &tx.ended_by {
            return invalid(format!("the profit sharing of transaction {transaction_id} is finished: {ended} unfroze the rest"));
        }
        let shares = tx
            .orders
            .iter()
            .filter(|no| pay.sharing.orders.get(&(sub_mchid.to_owned(), (*no).clone())).is_some_and(|o| o.kind == Kind::Share));
        if shares.count() >= MAX_SHARE_ORDERS_PER_TRANSACTION {
            return invalid(format!(
                "transaction {transaction_id} has {MAX_SHARE_ORDERS_PER_TRANSACTION} share requests, the most it may have"
            ));
        }
        if pay.sharing.one_minute_rule && paid_at.is_some_and(|at| (now - at).num_seconds() < SHARE_AFTER_SECS) {
            return Answer::error(
                429,
                "FREQUENCY_LIMITED",
                format!("a payment may be shared one minute after it was paid at the earliest (transaction {transaction_id})"),
            );
        }
        let held: i64 = pay.share_lines(sub_mchid, tx).filter(|l| l.result != CLOSED).map(|l| l.amount).fold(0, i64::saturating_add);
        let asked = lines.iter().map(|(_, _, amount, _)| *amount).fold(0, i64::saturating_add);
        let after = held.saturating_add(asked);
        let ratio_limit = i64::try_from(i128::from(total) * i128::from(sub.max_ratio) / 10_000).unwrap_or(i64::MAX);
        if after > ratio_limit {
            return invalid(format!(
                "the shares of transaction {transaction_id} would come to {after} fen, more than the {ratio_limit} fen the sub-merchant's \
                 max_ratio of {} bp allows",
                sub.max_ratio
            ));
        }
        if after > total - refunded {
            return invalid(format!(
                "the shares of transaction {transaction_id} would come to {after} fen, more than the {} fen its refunds left",
                total - refunded
            ));
        }
        if pay.sharing.orders.len() >= KEEP_SHARE_ORDERS {
            return Answer::error(429, "FREQUENCY_LIMITED", format!("the sandbox keeps at most {KEEP_SHARE_ORDERS} share requests"));
        }
        let mut kept = Vec::with_capacity(lines.len());
        for (kind, account, amount, description) in lines {
            let close_with = pay.sharing.close_next.iter().position(|(a, _)| *a == account).map(|i| pay.sharing.close_next.remove(i).1);
            let detail_id = platform_id("36", pay, now);
            kept.push(Line {
                kind,
                account,
                amount,
                description,
                result: PENDING,
                fail_reason: None,
                detail_id,
                finish_time: None,
                close_with,
            });
        }
        let order = ShareRequest {
            kind: Kind::Share,
            sub_mchid: sub_mchid.to_owned(),
            transaction_id: transaction_id.to_owned(),
            out_order_no: out_order_no.to_owned(),
            order_id: platform_id("30", pay, now),
            state: PROCESSING,
            unfreeze_unsplit,
            lines: kept,
            created_at: now,
            finished_at: None,
            finished_by: None,
            returns: Vec::new(),
        };
        let answer = Answer::ok(order_json(&order));
        log::info!("sandbox pay platform: share {out_order_no} of transaction {transaction_id} ({asked} fen) processing");
        let finish_after = pay.sharing.finish_after;
        pay.keep_request(order, &out_trade_no);
        drop(state);
        self.schedule_share_finish(sub_mchid, out_order_no, finish_after);
        answer
    }

    /// `GET /v3/profitsharing/orders/{out_order_no}?sub_mchid=&transaction_id=`; the first
    /// query of a processing request finishes it, and its notifications are sent in the
    /// background.
    pub(super) fn query_share(&self, signer: &str, query: &HashMap<String, String>, out_order_no: &str) -> Answer {
        let Some(sub_mchid) = query.get("sub_mchid") else {
            return Answer::error(400, "PARAM_ERROR", "the query must name sub_mchid");
        };
        let Some(transaction_id) = query.get("transaction_id") else {
            return Answer::error(400, "PARAM_ERROR", "the query must name transaction_id");
        };
        if let Err(refusal) = self.sub_merchant_of(signer, sub_mchid) {
            return refusal;
        }
        let mut state = self.lock();
        let pay = &mut state.pay;
        let key = (sub_mchid.clone(), out_order_no.to_owned());
        if pay.sharing.orders.get(&key).is_none_or(|o| o.transaction_id != *transaction_id) {
            return Answer::error(404, "RESOURCE_NOT_EXISTS", "the profit-sharing order does not exist");
        }
        let finished = pay.finish(sub_mchid, out_order_no, Utc::now(), Trigger::Query);
        let notifications = pay.notify_finished(sub_mchid, &finished);
        let answer = match pay.sharing.orders.get(&key) {
            Some(order) => Answer::ok(order_json(order)),
            None => Answer::error(404, "RESOURCE_NOT_EXISTS", "the profit-sharing order does not exist"),
        };
        drop(state);
        self.send_share_notifications(notifications);
        answer
    }

    /// `POST /v3/profitsharing/orders/unfreeze`.
    pub(super) fn unfreeze(&self, signer: &str, body: &Value) -> Answer {
        let (sub_mchid, out_order_no, _) = match self.named(signer, body, out_order_no_field) {
            Ok(n) => n,
            Err(refusal) => return refusal,
        };
        let now = Utc::now();
        let mut state = self.lock();
        let pay = &mut state.pay;
        let key = (sub_mchid.to_owned(), out_order_no.to_owned());
        if let Some(known) = pay.sharing.orders.get(&key) {
            return Answer::ok(order_json(known));
        }
        let parsed = (|| Ok((str_field(body, "transaction_id")?, text(body.get("description"), "description", MAX_DESCRIPTION)?)))();
        let (transaction_id, description) = match parsed {
            Ok(p) => p,
            Err(refusal) => return refusal,
        };
        let out_trade_no = match pay.shareable(sub_mchid, transaction_id) {
            Ok(order) => order.out_trade_no.clone(),
            Err(refusal) => return refusal,
        };
        let tx_key = (sub_mchid.to_owned(), transaction_id.to_owned());
        if let Some(ended) = pay.sharing.transactions.get(&tx_key).and_then(|t| t.ended_by.as_ref()) {
            return invalid(format!("the profit sharing of transaction {transaction_id} is finished: {ended} unfroze the rest"));
        }
        if pay.sharing.orders.len() >= KEEP_SHARE_ORDERS {
            return Answer::error(429, "FREQUENCY_LIMITED", format!("the sandbox keeps at most {KEEP_SHARE_ORDERS} share requests"));
        }
        let finished = pay.finish_transaction(sub_mchid, transaction_id, now, Trigger::Unfreeze);
        let notifications = pay.notify_finished(sub_mchid, &finished);
        // `left` reads the transaction's record: make it first.
        pay.sharing.transactions.entry(tx_key.clone()).or_default().out_trade_no = out_trade_no.clone();
        let left = pay.left(sub_mchid, transaction_id);
        let line = Line {
            kind: "MERCHANT_ID",
            account: sub_mchid.to_owned(),
            amount: left,
            description,
            result: SUCCESS,
            fail_reason: None,
            detail_id: platform_id("36", pay, now),
            finish_time: Some(now),
            close_with: None,
        };
        let order = ShareRequest {
            kind: Kind::Unfreeze,
            sub_mchid: sub_mchid.to_owned(),
            transaction_id: transaction_id.to_owned(),
            out_order_no: out_order_no.to_owned(),
            order_id: platform_id("30", pay, now),
            state: FINISHED,
            unfreeze_unsplit: false,
            lines: vec![line],
            created_at: now,
            finished_at: Some(now),
            finished_by: Some(Trigger::Unfreeze),
            returns: Vec::new(),
        };
        let answer = Answer::ok(order_json(&order));
        log::info!("sandbox pay platform: transaction {transaction_id} unfrozen by {out_order_no}: {left} fen to {sub_mchid}");
        pay.keep_request(order, &out_trade_no);
        if let Some(tx) = pay.sharing.transactions.get_mut(&tx_key) {
            tx.unfrozen = Some((out_order_no.to_owned(), left, now));
        }
        drop(state);
        self.send_share_notifications(notifications);
        answer
    }

    /// `POST /v3/profitsharing/return-orders`: part of a merchant receiver's `SUCCESS` line of
    /// a share request back to the sub-merchant. `SUCCESS` at once, or `PROCESSING` first while
    /// [`Sandbox::set_returns_processing`] is on, finished by the next call under its number.
    pub(super) fn return_share(&self, signer: &str, body: &Value) -> Answer {
        let (sub_mchid, out_return_no, _) = match self.named(signer, body, out_return_no_field) {
            Ok(n) => n,
            Err(refusal) => return refusal,
        };
        let now = Utc::now();
        let mut state = self.lock();
        let pay = &mut state.pay;
        let key = (sub_mchid.to_owned(), out_return_no.to_owned());
        if let Some(known) = pay.sharing.returns.get_mut(&key) {
            // One number, one return: a retry gets it as it stands, and finishes it when it
            // was processing.
            return asked_again(sub_mchid, known, now);
        }
        let parsed = (|| {
            let out_order_no = out_order_no_field(body)?;
            let return_mchid = text(body.get("return_mchid"), "return_mchid", MAX_ACCOUNT)?;
            let amount = body.get("amount").and_then(Value::as_i64).ok_or_else(|| Answer::param("amount", "must be an integer (fen)"))?;
            let description = text(body.get("description"), "description", MAX_DESCRIPTION)?;
            Ok((out_order_no, return_mchid, amount, description))
        })();
        let (out_order_no, return_mchid, amount, description) = match parsed {
            Ok(p) => p,
            Err(refusal) => return refusal,
        };
        let order_key = (sub_mchid.to_owned(), out_order_no.to_owned());
        let Some(order) = pay.sharing.orders.get(&order_key).filter(|o| o.kind == Kind::Share) else {
            return invalid(format!("分账单不存在: sub-merchant {sub_mchid} has no share request {out_order_no}"));
        };
        let Some(line) = order.lines.iter().find(|l| l.account == return_mchid) else {
            return invalid(format!("share request {out_order_no} paid nothing to {return_mchid}"));
        };
        if line.kind != "MERCHANT_ID" {
            return invalid(format!("不支持分账给个人的分账单回退: the line of {return_mchid} in {out_order_no} is a person's"));
        }
        if line.result != SUCCESS {
            return invalid(format!("the line of {return_mchid} in share request {out_order_no} is {}, not SUCCESS", line.result));
        }
        if amount < 1 {
            return invalid("amount must be at least 1 fen");
        }
        if order.returns.len() >= MAX_RETURNS_PER_SHARE_ORDER {
            return invalid(format!("share request {out_order_no} has {MAX_RETURNS_PER_SHARE_ORDER} returns, the most it may have"));
        }
        let returning: i64 = order
            .returns
            .iter()
            .filter_map(|no| pay.sharing.returns.get(&(sub_mchid.to_owned(), no.clone())))
            .filter(|r| r.return_mchid == return_mchid && r.result != FAILED)
            .map(|r| r.amount)
            .fold(0, i64::saturating_add);
        let after = returning.saturating_add(amount);
        if after > line.amount {
            return invalid(format!(
                "回退金额超过分账金额: the returns of {return_mchid} in {out_order_no} would come to {after} fen, more than the {} fen \
                 it was paid",
                line.amount
            ));
        }
        if pay.sharing.returns.len() >= KEEP_RETURNS {
            return Answer::error(429, "FREQUENCY_LIMITED", format!("the sandbox keeps at most {KEEP_RETURNS} returns"));
        }
        let order_id = order.order_id.clone();
        let fail_with =
            pay.sharing.fail_next_return.iter().position(|(a, _)| *a == return_mchid).map(|i| pay.sharing.fail_next_return.remove(i).1);
        let mut made = ShareReturn {
            out_order_no: out_order_no.to_owned(),
            order_id,
            out_return_no: out_return_no.to_owned(),
            return_id: platform_id("30", pay, now),
            return_mchid,
            amount,
            description,
            result: PROCESSING,
            fail_reason: None,
            created_at: now,
            finish_time: None,
            fail_with,
            tampered: false,
        };
        if !pay.sharing.returns_processing {
            finish_return(&mut made, now);
        }
        log::info!(
            "sandbox pay platform: return {out_return_no} of share {out_order_no} ({amount} fen from {}) {}",
            made.return_mchid,
            made.result
        );
        let answer = Answer::ok(return_json(sub_mchid, &made));
        if let Some(order) = pay.sharing.orders.get_mut(&order_key) {
            order.returns.push(out_return_no.to_owned());
        }
        pay.sharing.returns.insert(key, made);
        answer
    }

    /// `GET /v3/profitsharing/return-orders/{out_return_no}?sub_mchid=&out_order_no=`: the
    /// return as `POST /v3/profitsharing/return-orders` answers it under the same number (one
    /// still processing finishes, as there). Never makes one: a number the sub-merchant has no
    /// return under, or whose return is of another share request, is 404 `RESOURCE_NOT_EXISTS`.
    pub(super) fn query_return(&self, signer: &str, query: &HashMap<String, String>, out_return_no: &str) -> Answer {
        let Some(sub_mchid) = query.get("sub_mchid") else {
            return Answer::error(400, "PARAM_ERROR", "the query must name sub_mchid");
        };
        let Some(out_order_no) = query.get("out_order_no") else {
            return Answer::error(400, "PARAM_ERROR", "the query must name out_order_no");
        };
        if let Err(refusal) = self.sub_merchant_of(signer, sub_mchid) {
            return refusal;
        }
        let mut state = self.lock();
        let key = (sub_mchid.clone(), out_return_no.to_owned());
        match state.pay.sharing.returns.get_mut(&key).filter(|r| r.out_order_no == *out_order_no) {
            Some(known) => asked_again(sub_mchid, known, Utc::now()),
            None => Answer::error(404, "RESOURCE_NOT_EXISTS", "the profit-sharing return does not exist"),
        }
    }

    /// Finishes share request `out_order_no` of `sub_mchid` `after` from now, unless its query
    /// or an unfreeze finished it before, then sends its notifications: a task on the current
    /// Tokio runtime, asleep until then. Without a runtime nothing is scheduled and the request
    /// waits for its query.
    fn schedule_share_finish(&self, sub_mchid: &str, out_order_no: &str, after: Duration) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            log::warn!("sandbox pay platform: no runtime to finish share {out_order_no} by itself; it waits for its query");
            return;
        };
        let (sb, sub_mchid, out_order_no) = (self.clone(), sub_mchid.to_owned(), out_order_no.to_owned());
        runtime.spawn(async move {
            tokio::time::sleep(after).await;
            let notifications = {
                let mut state = sb.lock();
                let pay = &mut state.pay;
                #[cfg(test)]
                {
                    pay.sharing.timers_run += 1;
                }
                let finished = pay.finish(&sub_mchid, &out_order_no, Utc::now(), Trigger::Timer);
                if !finished.is_empty() {
                    log::info!("sandbox pay platform: share {out_order_no} of sub-merchant {sub_mchid} finished by itself");
                }
                pay.notify_finished(&sub_mchid, &finished)
            };
            for seq in notifications {
                sb.dispatch(seq).await;
            }
        });
    }

    /// Sends notifications `seqs`, one after the other, in a task of their own: they stay
    /// recorded, unsent, when there is no Tokio runtime.
    fn send_share_notifications(&self, seqs: Vec<u64>) {
        if seqs.is_empty() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            log::warn!("sandbox pay platform: no runtime to send {} profit-sharing notification(s)", seqs.len());
            return;
        };
        let sb = self.clone();
        runtime.spawn(async move {
            for seq in seqs {
                sb.dispatch(seq).await;
            }
        });
    }

    /// What the platform holds of the profit sharing of sub-merchant `sub_mchid`'s transaction
    /// `out_trade_no`: the receivers added for the sub-merchant, the transaction's share and
    /// unfreeze requests with their lines, what was paid out and unfrozen. `None` when the
    /// sandbox has no such order of a sub-merchant.
    pub fn profit_sharing(&self, sub_mchid: &str, out_trade_no: &str) -> Option<ProfitSharingView> {
        let state = self.lock();
        let pay = &state.pay;
        let order = pay.orders.get(&(sub_mchid.to_owned(), out_trade_no.to_owned())).filter(|o| o.sp_mchid.is_some())?;
        let mut receivers: Vec<ShareReceiverView> = pay
            .sharing
            .receivers
            .get(sub_mchid)
            .into_iter()
            .flatten()
            .map(|((kind, account), r)| ShareReceiverView {
                kind: (*kind).to_owned(),
                account: account.clone(),
                relation_type: r.relation_type.to_owned(),
                custom_relation: r.custom_relation.clone(),
                name: r.name.clone(),
            })
            .collect();
        receivers.sort_by(|a, b| (&a.kind, &a.account).cmp(&(&b.kind, &b.account)));
        let tx = order.transaction_id.as_ref().and_then(|t| pay.sharing.transactions.get(&(sub_mchid.to_owned(), t.clone())));
        let orders: Vec<ShareOrderView> = tx
            .into_iter()
            .flat_map(|t| t.orders.iter())
            .filter_map(|no| pay.sharing.orders.get(&(sub_mchid.to_owned(), no.clone())))
            .map(|o| ShareOrderView {
                out_order_no: o.out_order_no.clone(),
                order_id: o.order_id.clone(),
                kind: match o.kind {
                    Kind::Share => "share".to_owned(),
                    Kind::Unfreeze => "unfreeze".to_owned(),
                },
                state: o.state.to_owned(),
                unfreeze_unsplit: o.unfreeze_unsplit,
                lines: o
                    .lines
                    .iter()
                    .map(|l| ShareLineView {
                        kind: l.kind.to_owned(),
                        account: l.account.clone(),
                        amount: l.amount,
                        description: l.description.clone(),
                        result: l.result.to_owned(),
                        fail_reason: l.fail_reason.clone(),
                        finish_time: l.finish_time,
                        returned: o
                            .returns
                            .iter()
                            .filter_map(|no| pay.sharing.returns.get(&(sub_mchid.to_owned(), no.clone())))
                            .filter(|r| r.return_mchid == l.account && r.result == SUCCESS)
                            .map(|r| r.amount)
                            .sum(),
                    })
                    .collect(),
                created_at: o.created_at,
                finished_at: o.finished_at,
                finished_by: o.finished_by.map(|by| by.as_str().to_owned()),
            })
            .collect();
        let shared = tx.map_or(0, |t| pay.share_lines(sub_mchid, t).filter(|l| l.result == SUCCESS).map(|l| l.amount).sum());
        let mut returns: Vec<&ShareReturn> = tx.into_iter().flat_map(|t| pay.share_returns(sub_mchid, t)).collect();
        returns.sort_by_key(|r| r.created_at);
        let returns = returns
            .into_iter()
            .map(|r| ShareReturnView {
                out_return_no: r.out_return_no.clone(),
                out_order_no: r.out_order_no.clone(),
                return_mchid: r.return_mchid.clone(),
                amount: r.amount,
                result: r.result.to_owned(),
                fail_reason: r.fail_reason.clone(),
            })
            .collect();
        Some(ProfitSharingView {
            sub_mchid: sub_mchid.to_owned(),
            out_trade_no: out_trade_no.to_owned(),
            transaction_id: order.transaction_id.clone(),
            total: order.paid(),
            refunded: pay.refunded(order),
            max_ratio: pay.sub_merchants.get(sub_mchid).map_or(0, |s| s.max_ratio),
            receivers,
            orders,
            shared,
            finished: tx.is_some_and(|t| t.ended_by.is_some()),
            unfrozen: tx.and_then(|t| t.unfrozen.as_ref()).map(|(no, amount, at)| UnfrozenView {
                out_order_no: no.clone(),
                amount: *amount,
                at: *at,
            }),
            returns,
        })
    }

    /// Makes the next share line for `account` (a merchant id or an openid, of any
    /// sub-merchant's request) end `CLOSED` with `fail_reason` (`ACCOUNT_ABNORMAL`,
    /// `NO_RELATION`, …) when its request finishes: the platform could not pay that receiver.
    /// Marks for one account apply in the order they were made.
    pub fn close_next_share(&self, account: &str, fail_reason: &str) -> Result<(), String> {
        if account.is_empty() || account.chars().count() > MAX_ACCOUNT {
            return Err(format!("account must be 1 to {MAX_ACCOUNT} characters"));
        }
        check_fail_reason(fail_reason)?;
        let mut state = self.lock();
        let close_next = &mut state.pay.sharing.close_next;
        if close_next.len() >= KEEP_FAILURES {
            return Err(format!("at most {KEEP_FAILURES} receivers may be marked to close"));
        }
        close_next.push((account.to_owned(), fail_reason.to_owned()));
        Ok(())
    }

    /// Makes the next return from merchant `account` (the `return_mchid` of any sub-merchant's
    /// return) fail with `fail_reason`, one of [`RETURN_FAIL_REASONS`]: answered `FAILED`,
    /// nothing given back. Decided when the return is made, shown when it finishes (at once,
    /// or at the next call under its number while [`Sandbox::set_returns_processing`] is on).
    /// Marks for one account apply in the order they were made.
    pub fn fail_next_return(&self, account: &str, fail_reason: &str) -> Result<(), String> {
        if account.is_empty() || account.chars().count() > MAX_ACCOUNT {
            return Err(format!("account must be 1 to {MAX_ACCOUNT} characters"));
        }
        if !RETURN_FAIL_REASONS.contains(&fail_reason) {
            return Err(format!("fail_reason must be one of {}", RETURN_FAIL_REASONS.join(", ")));
        }
        let mut state = self.lock();
        let marks = &mut state.pay.sharing.fail_next_return;
        if marks.len() >= KEEP_FAILURES {
            return Err(format!("at most {KEEP_FAILURES} returns may be marked to fail"));
        }
        marks.push((account.to_owned(), fail_reason.to_owned()));
        Ok(())
    }

    /// Switches whether a new return answers `PROCESSING` first (off by default): nothing is
    /// given back yet, and the next call under its number finishes it, `SUCCESS` or `FAILED`.
    pub fn set_returns_processing(&self, on: bool) {
        self.lock().pay.sharing.returns_processing = on;
    }

    /// Switches the one-minute rule (on by default): while on, a share requested within a
    /// minute of its payment is refused with 429 `FREQUENCY_LIMITED`, as on the platform.
    pub fn set_share_one_minute_rule(&self, on: bool) {
        self.lock().pay.sharing.one_minute_rule = on;
    }

    /// How long after it was made the platform finishes a share request by itself (1 s by
    /// default, at most [`MAX_SHARE_FINISH_AFTER`]), unless its query or an unfreeze finishes
    /// it first; for the requests made from now on.
    pub fn set_share_finish_after(&self, after: Duration) -> Result<(), String> {
        if after > MAX_SHARE_FINISH_AFTER {
            return Err(format!("finish_after_ms must be at most {}", MAX_SHARE_FINISH_AFTER.as_millis()));
        }
        self.lock().pay.sharing.finish_after = after;
        Ok(())
    }

    /// Switches the `PROFITSHARING.*` notifications of finished shares (on by default): off,
    /// a share is settled by its query only, as far as the merchant can tell.
    pub fn set_share_notifications(&self, on: bool) {
        self.lock().pay.sharing.notify = on;
    }

    /// Changes the platform's own record of the line of `account` in share (or unfreeze)
    /// request `out_order_no` — of sub-merchant `sub_mchid`, which may be left out when one
    /// sub-merchant only has that number — so that our books and the platform's disagree: from
    /// then on its query answers, [`Sandbox::profit_sharing`] and what the platform counts
    /// (what a sub-merchant holds for a refund, what a return may take back) follow the line as
    /// changed. The request must have finished (a `PROCESSING` one would overwrite its lines
    /// when it finishes); its `state` stays. Answers the request as its query now answers it.
    pub fn tamper_share_line(
        &self,
        sub_mchid: Option<&str>,
        out_order_no: &str,
        account: &str,
        change: &RecordChange,
    ) -> Result<Value, String> {
        let given = given(change, LINE_RESULTS)?;
        let now = Utc::now();
        let mut state = self.lock();
        let sharing = &mut state.pay.sharing;
        let key = sharing.order_key(sub_mchid, out_order_no)?;
        let order = sharing.orders.get_mut(&key).ok_or_else(|| format!("the platform has no share request {out_order_no}"))?;
        if order.state == PROCESSING {
            return Err(format!(
                "share request {out_order_no} is still PROCESSING: change its lines once it has finished (its query finishes it)"
            ));
        }
        let line = order
            .lines
            .iter_mut()
            .find(|l| l.account == account)
            .ok_or_else(|| format!("share request {out_order_no} has no line of {account}"))?;
        let was = Record { result: line.result, amount: line.amount, fail_reason: line.fail_reason.clone(), finish_time: line.finish_time };
        let now_is = changed(was, given, LINE_RESULTS, CLOSED, now)?;
        (line.result, line.amount, line.fail_reason, line.finish_time) =
            (now_is.result, now_is.amount, now_is.fail_reason, now_is.finish_time);
        log::info!(
            "sandbox pay platform: the line of {account} in share {out_order_no} of sub-merchant {} tampered with: {} fen, {}",
            key.0,
            line.amount,
            line.result
        );
        Ok(order_json(order))
    }

    /// Makes the platform forget share (or unfreeze) request `out_order_no` — of sub-merchant
    /// `sub_mchid`, which may be left out when one sub-merchant only has that number — and the
    /// returns of its lines: their queries answer 404 `RESOURCE_NOT_EXISTS`, and the number may
    /// be used again. A request that ended its transaction's sharing (an unfreeze, or a share
    /// that asked to unfreeze the rest) no longer ends it. Answers `{sub_mchid, out_order_no,
    /// forgotten: true, returns}`, `returns` the numbers of the returns forgotten with it.
    pub fn forget_share(&self, sub_mchid: Option<&str>, out_order_no: &str) -> Result<Value, String> {
        let mut state = self.lock();
        let sharing = &mut state.pay.sharing;
        let key = sharing.order_key(sub_mchid, out_order_no)?;
        let order = sharing.orders.remove(&key).ok_or_else(|| format!("the platform has no share request {out_order_no}"))?;
        let (sub, no) = key;
        for return_no in &order.returns {
            sharing.returns.remove(&(sub.clone(), return_no.clone()));
        }
        if let Some(tx) = sharing.transactions.get_mut(&(sub.clone(), order.transaction_id.clone())) {
            tx.orders.retain(|n| *n != no);
            if tx.ended_by.as_ref() == Some(&no) {
                tx.ended_by = None;
            }
            if tx.unfrozen.as_ref().is_some_and(|(n, _, _)| *n == no) {
                tx.unfrozen = None;
            }
        }
        log::info!("sandbox pay platform: share {no} of sub-merchant {sub} forgotten, with {} return(s)", order.returns.len());
        Ok(json!({"sub_mchid": sub, "out_order_no": no, "forgotten": true, "returns": order.returns}))
    }

    /// Changes the platform's own record of return `out_return_no` — of sub-merchant
    /// `sub_mchid`, which may be left out when one sub-merchant only has that number — so that
    /// our books and the platform's disagree: from then on its query and its number's POST
    /// answer it as changed, and the platform counts it so. It stays as set: one left
    /// `PROCESSING` is not finished by asking again. Answers the return as its query now
    /// answers it.
    pub fn tamper_return(&self, sub_mchid: Option<&str>, out_return_no: &str, change: &RecordChange) -> Result<Value, String> {
        let given = given(change, RETURN_RESULTS)?;
        let now = Utc::now();
        let mut state = self.lock();
        let sharing = &mut state.pay.sharing;
        let key = sharing.return_key(sub_mchid, out_return_no)?;
        let r = sharing.returns.get_mut(&key).ok_or_else(|| format!("the platform has no return {out_return_no}"))?;
        let was = Record { result: r.result, amount: r.amount, fail_reason: r.fail_reason.clone(), finish_time: r.finish_time };
        let now_is = changed(was, given, RETURN_RESULTS, FAILED, now)?;
        (r.result, r.amount, r.fail_reason, r.finish_time) = (now_is.result, now_is.amount, now_is.fail_reason, now_is.finish_time);
        r.fail_with = None;
        r.tampered = true;
        log::info!("sandbox pay platform: return {out_return_no} of sub-merchant {} tampered with: {} fen, {}", key.0, r.amount, r.result);
        Ok(return_json(&key.0, r))
    }

    /// The rules the platform's profit sharing plays by now.
    pub fn share_rules(&self) -> ShareRules {
        let state = self.lock();
        let sharing = &state.pay.sharing;
        ShareRules {
            one_minute: sharing.one_minute_rule,
            finish_after_ms: u64::try_from(sharing.finish_after.as_millis()).unwrap_or(u64::MAX),
            notify: sharing.notify,
            returns_processing: sharing.returns_processing,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{call, call_with_serial, code, open_resource, partner_order};
    use super::super::{PayNotification, PaymentResult, SandboxMerchant};
    use super::*;
    use std::time::Instant;

    const SP: &str = "1900000109";
    const SUB: &str = "1900000200";
    /// The provider's own merchant account, receiving the platform's share.
    const PLATFORM_RECEIVER: &str = "1900000109";
    const PARTNER: &str = "o-partner-7";

    /// A sandbox with provider `SP`, its sub-merchant `SUB` (max_ratio `ratio`) and a paid
    /// order `no` of 100 fen, paid two minutes ago; the receivers are added. Answers the
    /// provider and the order's transaction id. Share requests finish by their query (or an
    /// unfreeze): the platform's own finish waits a minute unless a test says otherwise.
    async fn paid(ratio: u32, nos: &[&str]) -> (Sandbox, SandboxMerchant, Vec<String>) {
        let sb = Sandbox::new();
        sb.set_notify_retry_delays(Vec::new());
        sb.set_share_finish_after(MAX_SHARE_FINISH_AFTER).unwrap();
        let sp = sb.register_merchant(SP, "wx_sp").unwrap();
        sb.register_sub_merchant(SP, SUB, None).unwrap();
        sb.set_max_ratio(SUB, ratio).unwrap();
        let mut ids = Vec::new();
        for no in nos {
            let order = partner_order(SP, SUB, None, no);
            assert_eq!(call(&sb, &sp, "POST", "/v3/pay/partner/transactions/jsapi", &order.to_string(), 0).status, 200);
            let two_minutes_ago = Utc::now() - chrono::Duration::minutes(2);
            let report = sb.pay_order_at(Some(SUB), no, PaymentResult::Success, Some(two_minutes_ago)).await.unwrap();
            ids.push(report.transaction_id.unwrap());
        }
        add(&sb, &sp, json!({"type": "MERCHANT_ID", "account": PLATFORM_RECEIVER, "relation_type": "SERVICE_PROVIDER"}), Some("示例平台"));
        add(&sb, &sp, json!({"type": "PERSONAL_OPENID", "account": PARTNER, "relation_type": "PARTNER"}), None);
        (sb, sp, ids)
    }

    /// Adds a receiver for `SUB`, its name sealed under the platform key.
    fn add(sb: &Sandbox, sp: &SandboxMerchant, mut receiver: Value, name: Option<&str>) -> Answer {
        receiver["sub_mchid"] = json!(SUB);
        receiver["appid"] = json!("wx_sp");
        let platform = sb.platform_keys().unwrap();
        if let Some(name) = name {
            receiver["name"] = json!(platform.encrypt_sensitive(name));
        }
        let serial = name.map(|_| platform.id.as_str());
        call_with_serial(sb, sp, "POST", "/v3/profitsharing/receivers/add", &receiver.to_string(), 0, serial)
    }

    fn share_body(tx: &str, no: &str, lines: &[(&str, &str, i64)]) -> String {
        let receivers: Vec<Value> = lines
            .iter()
            .map(|(kind, account, amount)| json!({"type": kind, "account": account, "amount": amount, "description": "share"}))
            .collect();
        json!({"sub_mchid": SUB, "appid": "wx_sp", "transaction_id": tx, "out_order_no": no, "receivers": receivers, "unfreeze_unsplit": false})
            .to_string()
    }

    fn share(sb: &Sandbox, sp: &SandboxMerchant, tx: &str, no: &str, lines: &[(&str, &str, i64)]) -> Answer {
        call(sb, sp, "POST", "/v3/profitsharing/orders", &share_body(tx, no, lines), 0)
    }

    fn query(sb: &Sandbox, sp: &SandboxMerchant, tx: &str, no: &str) -> Answer {
        call(sb, sp, "GET", &format!("/v3/profitsharing/orders/{no}?sub_mchid={SUB}&transaction_id={tx}"), "", 0)
    }

    fn unfreeze(sb: &Sandbox, sp: &SandboxMerchant, tx: &str, no: &str) -> Answer {
        let body = json!({"sub_mchid": SUB, "transaction_id": tx, "out_order_no": no, "description": "rest to the tenant"});
        call(sb, sp, "POST", "/v3/profitsharing/orders/unfreeze", &body.to_string(), 0)
    }

    /// (type, account, amount, result) of each line of an answer.
    fn lines(answer: &Answer) -> Vec<(String, String, i64, String)> {
        let body = answer.body.as_ref().unwrap();
        body["receivers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                let s = |k: &str| l[k].as_str().unwrap().to_owned();
                (s("type"), s("account"), l["amount"].as_i64().unwrap(), s("result"))
            })
            .collect()
    }

    fn line(kind: &str, account: &str, amount: i64, result: &str) -> (String, String, i64, String) {
        (kind.to_owned(), account.to_owned(), amount, result.to_owned())
    }

    /// Waits until `cond` holds, at most 10 s.
    async fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !cond() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// The `PROFITSHARING.*` notifications of share request `no`, oldest first.
    fn share_notifications(sb: &Sandbox, no: &str) -> Vec<PayNotification> {
        sb.pay_notifications(None).into_iter().filter(|n| n.out_order_no.as_deref() == Some(no)).collect()
    }

    /// The request `no` of `SUB`'s order `T_PS_0001` as the platform holds it.
    fn held(sb: &Sandbox, no: &str) -> ShareOrderView {
        let view = sb.profit_sharing(SUB, "T_PS_0001").unwrap();
        view.orders.into_iter().find(|o| o.out_order_no == no).unwrap()
    }

    fn timers_run(sb: &Sandbox) -> usize {
        sb.lock().pay.sharing.timers_run
    }

    #[tokio::test]
    async fn a_share_finishes_by_itself_after_finish_after_and_each_line_is_notified_once() {
        let (sb, sp, ids) = paid(3000, &["T_PS_0001"]).await;
        sb.set_share_finish_after(Duration::from_millis(50)).unwrap();
        sb.close_next_share(PARTNER, "ACCOUNT_ABNORMAL").unwrap();
        let accepted = share(&sb, &sp, &ids[0], "PS1", &[("MERCHANT_ID", PLATFORM_RECEIVER, 20), ("PERSONAL_OPENID", PARTNER, 10)]);
        assert_eq!(
            lines(&accepted),
            [line("MERCHANT_ID", PLATFORM_RECEIVER, 20, "PENDING"), line("PERSONAL_OPENID", PARTNER, 10, "PENDING")]
        );

        wait_for("PS1 finished by the platform", || held(&sb, "PS1").state == "FINISHED").await;

        let order = held(&sb, "PS1");
        assert_eq!(order.finished_by.as_deref(), Some("timer"));
        let finished_at = order.finished_at.unwrap();
        assert!(finished_at >= order.created_at + chrono::Duration::milliseconds(50), "not before its time");
        let results: Vec<_> = order.lines.iter().map(|l| (l.result.as_str(), l.fail_reason.as_deref(), l.finish_time)).collect();
        assert_eq!(results, [("SUCCESS", None, Some(finished_at)), ("CLOSED", Some("ACCOUNT_ABNORMAL"), Some(finished_at))]);
        let sent = share_notifications(&sb, "PS1");
        let types: Vec<_> = sent.iter().map(|n| n.event_type.as_str()).collect();
        assert_eq!(types, ["PROFITSHARING.SUCCESS", "PROFITSHARING.CLOSED"]);
        assert_ne!(sent[0].id, sent[1].id, "each line its own event");
        let receivers = [
            json!({"type": "MERCHANT_ID", "account": PLATFORM_RECEIVER, "amount": 20, "description": "share"}),
            json!({
                "type": "PERSONAL_OPENID", "account": PARTNER, "amount": 10, "description": "share"
            }),
        ];
        for (n, receiver) in sent.iter().zip(receivers) {
            assert_eq!((n.mchid.as_str(), n.out_trade_no.as_str(), n.notify_url.as_str()), (SUB, "T_PS_0001", "http://127.0.0.1:9/n"));
            let body: Value = serde_json::from_str(&n.body).unwrap();
            assert_eq!(
                (&body["id"], &body["event_type"], &body["resource_type"], &body["summary"]),
                (&json!(n.id), &json!(n.event_type), &json!("encrypt-resource"), &json!("分账"))
            );
            assert_eq!(
                (&body["resource"]["original_type"], &body["resource"]["algorithm"]),
                (&json!("profitsharing"), &json!("AEAD_AES_256_GCM"))
            );
            let opened = open_resource(&sp.api_v3_key, &body["resource"]);
            assert_eq!(
                opened,
                json!({
                    "sp_mchid": SP, "sub_mchid": SUB, "transaction_id": ids[0], "order_id": order.order_id, "out_order_no": "PS1",
                    "receiver": receiver, "success_time": platform_time(finished_at),
                }),
                "sealed with the provider's APIv3 key"
            );
            assert!(opened["success_time"].as_str().unwrap().ends_with("+08:00"));
        }
        // Sent through the outbox: nobody listens on port 9.
        wait_for("both attempted", || share_notifications(&sb, "PS1").iter().all(|n| !n.attempts.is_empty())).await;
        assert_eq!(share_notifications(&sb, "PS1")[0].attempts[0].error.as_deref(), Some("could not connect"));

        // A query now answers it as finished and finishes nothing again.
        let queried = query(&sb, &sp, &ids[0], "PS1");
        assert_eq!(queried.body.unwrap()["state"], "FINISHED");
        assert_eq!(share_notifications(&sb, "PS1").len(), 2);
        assert_eq!(held(&sb, "PS1"), order);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn whichever_of_the_timer_and_a_query_comes_first_finishes_a_share_once() {
        let (sb, sp, ids) = paid(10_000, &["T_PS_0001"]).await;
        let tx = &ids[0];
        // The query well before the timer: the timer then finds it finished.
        sb.set_share_finish_after(Duration::from_millis(100)).unwrap();
        share(&sb, &sp, tx, "PS1", &[("MERCHANT_ID", PLATFORM_RECEIVER, 20), ("PERSONAL_OPENID", PARTNER, 10)]);
        let queried = query(&sb, &sp, tx, "PS1");
        assert_eq!(queried.body.unwrap()["state"], "FINISHED");
        let by_query = held(&sb, "PS1");
        assert_eq!(by_query.finished_by.as_deref(), Some("query"));
        wait_for("the timer of PS1", || timers_run(&sb) == 1).await;
        assert_eq!(held(&sb, "PS1"), by_query, "the timer changed nothing");
        assert_eq!(share_notifications(&sb, "PS1").len(), 2);

        // The timer due at once on another thread, the query right away: either wins, once.
        sb.set_share_finish_after(Duration::ZERO).unwrap();
        let racing = 20;
        for n in 0..racing {
            let no = format!("PS_R{n}");
            share(&sb, &sp, tx, &no, &[("PERSONAL_OPENID", PARTNER, 1)]);
            let queried = query(&sb, &sp, tx, &no);
            assert_eq!(lines(&queried), [line("PERSONAL_OPENID", PARTNER, 1, "SUCCESS")]);
        }
        wait_for("every timer", || timers_run(&sb) == 1 + racing).await;

        for n in 0..racing {
            let no = format!("PS_R{n}");
            let order = held(&sb, &no);
            assert!(matches!(order.finished_by.as_deref(), Some("timer" | "query")), "{order:?}");
            let sent = share_notifications(&sb, &no);
            assert_eq!(sent.len(), 1, "{no}: {sent:?}");
            assert_eq!(sent[0].resource["success_time"], json!(platform_time(order.finished_at.unwrap())));
        }
        assert_eq!(sb.profit_sharing(SUB, "T_PS_0001").unwrap().shared, 30 + racing as i64);
    }

    #[tokio::test]
    async fn with_notifications_off_a_share_finishes_by_itself_unnotified() {
        let (sb, sp, ids) = paid(10_000, &["T_PS_0001"]).await;
        sb.set_share_notifications(false);
        sb.set_share_finish_after(Duration::ZERO).unwrap();
        assert_eq!(sb.share_rules(), ShareRules { one_minute: true, finish_after_ms: 0, notify: false, returns_processing: false });

        share(&sb, &sp, &ids[0], "PS1", &[("MERCHANT_ID", PLATFORM_RECEIVER, 20), ("PERSONAL_OPENID", PARTNER, 10)]);
        wait_for("the timer of PS1", || timers_run(&sb) == 1).await;

        assert_eq!((held(&sb, "PS1").state.as_str(), held(&sb, "PS1").finished_by.as_deref()), ("FINISHED", Some("timer")));
        assert!(share_notifications(&sb, "PS1").is_empty());
        // On again: the next finish notifies (by query here).
        sb.set_share_notifications(true);
        sb.set_share_finish_after(MAX_SHARE_FINISH_AFTER).unwrap();
        assert_eq!(share(&sb, &sp, &ids[0], "PS2", &[("PERSONAL_OPENID", PARTNER, 5)]).status, 200);
        assert_eq!(query(&sb, &sp, &ids[0], "PS2").status, 200);
        assert_eq!(share_notifications(&sb, "PS2").len(), 1);
        assert!(sb.set_share_finish_after(MAX_SHARE_FINISH_AFTER + Duration::from_millis(1)).is_err());
        assert_eq!(sb.share_rules(), ShareRules { one_minute: true, finish_after_ms: 60_000, notify: true, returns_processing: false });
    }

    #[tokio::test]
    async fn an_unfreeze_notifies_the_shares_it_finishes_but_not_itself_through_the_outboxs_faults() {
        let (sb, sp, ids) = paid(3000, &["T_PS_0001"]).await;
        share(&sb, &sp, &ids[0], "PS1", &[("MERCHANT_ID", PLATFORM_RECEIVER, 20), ("PERSONAL_OPENID", PARTNER, 10)]);
        sb.lose_next_notifications(1);

        let unfrozen = unfreeze(&sb, &sp, &ids[0], "PS1-u");

        assert_eq!(unfrozen.status, 200);
        assert_eq!(held(&sb, "PS1").finished_by.as_deref(), Some("unfreeze"));
        assert_eq!((held(&sb, "PS1-u").finished_by.as_deref(), held(&sb, "PS1-u").finished_at.is_some()), (Some("unfreeze"), true));
        let types: Vec<_> = share_notifications(&sb, "PS1").into_iter().map(|n| n.event_type).collect();
        assert_eq!(types, ["PROFITSHARING.SUCCESS", "PROFITSHARING.SUCCESS"]);
        assert!(share_notifications(&sb, "PS1-u").is_empty(), "an unfreeze sends none");
        // notify-lose takes the first; the second is attempted.
        wait_for("both dispatched", || {
            let sent = share_notifications(&sb, "PS1");
            sent[0].lost && !sent[1].attempts.is_empty()
        })
        .await;
        assert!(share_notifications(&sb, "PS1")[0].attempts.is_empty(), "lost: never sent");
    }

    #[tokio::test]
    async fn a_receiver_is_added_with_its_name_decrypted_and_added_again_updated() {
        let (sb, sp, _) = paid(3000, &["T_PS_0001"]).await;

        let again = add(&sb, &sp, json!({"type": "PERSONAL_OPENID", "account": PARTNER, "relation_type": "DISTRIBUTOR"}), Some("张三"));

        assert_eq!(again.status, 200);
        let answer = again.body.unwrap();
        assert_eq!((&answer["sub_mchid"], &answer["relation_type"]), (&json!(SUB), &json!("DISTRIBUTOR")));
        assert_ne!(answer["name"], json!("张三"), "the answer never carries the name in clear");
        let view = sb.profit_sharing(SUB, "T_PS_0001").unwrap();
        let known: Vec<_> =
            view.receivers.iter().map(|r| (r.kind.as_str(), r.account.as_str(), r.relation_type.as_str(), r.name.as_deref())).collect();
        assert_eq!(
            known,
            [
                ("MERCHANT_ID", PLATFORM_RECEIVER, "SERVICE_PROVIDER", Some("示例平台")),
                ("PERSONAL_OPENID", PARTNER, "DISTRIBUTOR", Some("张三"))
            ]
        );
    }

    #[tokio::test]
    async fn a_name_needs_the_platform_key_named_and_a_merchant_needs_a_name() {
        let (sb, sp, _) = paid(3000, &["T_PS_0001"]).await;
        let platform = sb.platform_keys().unwrap();
        let body = |name: &str| {
            json!({"sub_mchid": SUB, "appid": "wx_sp", "type": "PERSONAL_OPENID", "account": "o-ann", "relation_type": "USER", "name": name})
                .to_string()
        };
        let sealed = platform.encrypt_sensitive("Ann");
        let path = "/v3/profitsharing/receivers/add";

        let no_serial = call(&sb, &sp, "POST", path, &body(&sealed), 0);
        let other_serial = call_with_serial(&sb, &sp, "POST", path, &body(&sealed), 0, Some("PUB_KEY_ID_0000"));
        let clear = call_with_serial(&sb, &sp, "POST", path, &body("Ann"), 0, Some(&platform.id));
        let nameless_merchant = add(&sb, &sp, json!({"type": "MERCHANT_ID", "account": "1900000300", "relation_type": "PARTNER"}), None);
        let bad_relation = add(&sb, &sp, json!({"type": "PERSONAL_OPENID", "account": "o-ann", "relation_type": "FRIEND"}), None);
        let bad_type = add(&sb, &sp, json!({"type": "PERSONAL_SUB_OPENID", "account": "o-ann", "relation_type": "USER"}), None);

        for refused in [&no_serial, &other_serial, &clear, &nameless_merchant, &bad_relation, &bad_type] {
            assert_eq!(code(refused), (400, "PARAM_ERROR".into()), "{:?}", refused.body);
        }
        assert!(no_serial.body.unwrap()["message"].as_str().unwrap().contains("Wechatpay-Serial"));
        assert_eq!(sb.profit_sharing(SUB, "T_PS_0001").unwrap().receivers.len(), 2, "nothing was added");
        let named = call_with_serial(&sb, &sp, "POST", path, &body(&sealed), 0, Some(&platform.id));
        assert_eq!(named.status, 200);
    }

    #[tokio::test]
    async fn a_share_is_processing_until_queried_then_finished_and_the_same_number_is_the_same_request() {
        let (sb, sp, ids) = paid(3000, &["T_PS_0001"]).await;
        let tx = &ids[0];

        let accepted = share(&sb, &sp, tx, "PS1", &[("MERCHANT_ID", PLATFORM_RECEIVER, 20), ("PERSONAL_OPENID", PARTNER, 10)]);

        assert_eq!(accepted.status, 200, "{:?}", accepted.body);
        let body = accepted.body.clone().unwrap();
        assert_eq!((&body["state"], &body["out_order_no"], &body["transaction_id"]), (&json!("PROCESSING"), &json!("PS1"), &json!(tx)));
        assert_eq!(
            lines(&accepted),
            [line("MERCHANT_ID", PLATFORM_RECEIVER, 20, "PENDING"), line("PERSONAL_OPENID", PARTNER, 10, "PENDING")]
        );
        // The same number with another body: that request as it stands.
        let again = share(&sb, &sp, tx, "PS1", &[("PERSONAL_OPENID", PARTNER, 99)]);
        assert_eq!(again.body, accepted.body);

        let finished = query(&sb, &sp, tx, "PS1");

        let body = finished.body.clone().unwrap();
        assert_eq!((&body["state"], &body["order_id"]), (&json!("FINISHED"), &accepted.body.as_ref().unwrap()["order_id"]));
        assert_eq!(
            lines(&finished),
            [line("MERCHANT_ID", PLATFORM_RECEIVER, 20, "SUCCESS"), line("PERSONAL_OPENID", PARTNER, 10, "SUCCESS")]
        );
        assert!(body["receivers"][0]["finish_time"].is_string());
        assert_eq!(share(&sb, &sp, tx, "PS1", &[]).body, finished.body, "a retry now gets it finished");
        let view = sb.profit_sharing(SUB, "T_PS_0001").unwrap();
        assert_eq!((view.shared, view.orders.len(), view.finished), (30, 1, false));
        assert_eq!(code(&query(&sb, &sp, tx, "PS_NONE")), (404, "RESOURCE_NOT_EXISTS".into()));
        assert_eq!(code(&query(&sb, &sp, "4200000000000000000", "PS1")), (404, "RESOURCE_NOT_EXISTS".into()), "another transaction");
    }

    #[tokio::test]
    async fn the_shares_may_not_exceed_the_max_ratio_nor_what_refunds_left() {
        let (sb, sp, ids) = paid(3000, &["T_PS_0001", "T_PS_0002"]).await;

        // 30 % of 100 fen: 30 fen over all requests not closed.
        assert_eq!(share(&sb, &sp, &ids[0], "PS1", &[("MERCHANT_ID", PLATFORM_RECEIVER, 20)]).status, 200);
        let over = share(&sb, &sp, &ids[0], "PS2", &[("PERSONAL_OPENID", PARTNER, 11)]);
        assert_eq!(code(&over), (400, "INVALID_REQUEST".into()));
        assert!(over.body.unwrap()["message"].as_str().unwrap().contains("max_ratio"));
        assert_eq!(share(&sb, &sp, &ids[0], "PS2", &[("PERSONAL_OPENID", PARTNER, 10)]).status, 200, "exactly the limit");
        // A closed line gives its amount back.
        sb.set_max_ratio(SUB, 10_000).unwrap();
        sb.close_next_share(PARTNER, "ACCOUNT_ABNORMAL").unwrap();
        assert_eq!(share(&sb, &sp, &ids[0], "PS3", &[("PERSONAL_OPENID", PARTNER, 70)]).status, 200);
        assert_eq!(lines(&query(&sb, &sp, &ids[0], "PS3")), [line("PERSONAL_OPENID", PARTNER, 70, "CLOSED")]);
        assert_eq!(share(&sb, &sp, &ids[0], "PS4", &[("PERSONAL_OPENID", PARTNER, 70)]).status, 200);
        assert_eq!(
            code(&share(&sb, &sp, &ids[0], "PS5", &[("PERSONAL_OPENID", PARTNER, 1)])),
            (400, "INVALID_REQUEST".into()),
            "all 100 fen"
        );

        // A refund of 60 leaves 40 of the second payment to share, whatever max_ratio allows.
        let refund =
            json!({"sub_mchid": SUB, "out_trade_no": "T_PS_0002", "out_refund_no": "R_PS_1", "amount": {"refund": 60, "total": 100}});
        assert_eq!(call(&sb, &sp, "POST", "/v3/refund/domestic/refunds", &refund.to_string(), 0).status, 200);
        let over_refunds = share(&sb, &sp, &ids[1], "PS6", &[("PERSONAL_OPENID", PARTNER, 41)]);
        assert_eq!(code(&over_refunds), (400, "INVALID_REQUEST".into()));
        assert!(over_refunds.body.unwrap()["message"].as_str().unwrap().contains("refunds left"));
        assert_eq!(share(&sb, &sp, &ids[1], "PS6", &[("PERSONAL_OPENID", PARTNER, 40)]).status, 200);
        let view = sb.profit_sharing(SUB, "T_PS_0002").unwrap();
        assert_eq!((view.refunded, view.orders.len()), (60, 1));
    }

    #[tokio::test]
    async fn a_share_within_a_minute_of_the_payment_is_frequency_limited_unless_the_rule_is_off() {
        let (sb, sp, _) = paid(3000, &[]).await;
        let order = partner_order(SP, SUB, None, "T_PS_0009");
        assert_eq!(call(&sb, &sp, "POST", "/v3/pay/partner/transactions/jsapi", &order.to_string(), 0).status, 200);
        let tx = sb.pay_order(Some(SUB), "T_PS_0009", PaymentResult::Success).await.unwrap().transaction_id.unwrap();

        let early = share(&sb, &sp, &tx, "PS1", &[("PERSONAL_OPENID", PARTNER, 10)]);
        sb.set_share_one_minute_rule(false);
        let allowed = share(&sb, &sp, &tx, "PS1", &[("PERSONAL_OPENID", PARTNER, 10)]);

        assert_eq!(code(&early), (429, "FREQUENCY_LIMITED".into()));
        assert_eq!(allowed.status, 200, "{:?}", allowed.body);
        assert_eq!(sb.profit_sharing(SUB, "T_PS_0009").unwrap().orders.len(), 1, "the refused one was not kept");
    }

    #[tokio::test]
    async fn a_share_is_refused_for_what_the_platform_refuses() {
        let (sb, sp, ids) = paid(3000, &["T_PS_0001"]).await;
        let tx = &ids[0];
        // A paid order not placed for profit sharing.
        let mut plain = partner_order(SP, SUB, None, "T_PS_0003");
        plain["settle_info"] = json!({"profit_sharing": false});
        assert_eq!(call(&sb, &sp, "POST", "/v3/pay/partner/transactions/jsapi", &plain.to_string(), 0).status, 200);
        let earlier = Some(Utc::now() - chrono::Duration::minutes(2));
        let plain_tx = sb.pay_order_at(Some(SUB), "T_PS_0003", PaymentResult::Success, earlier).await.unwrap().transaction_id.unwrap();
        let too_many: Vec<(&str, &str, i64)> = (0..51).map(|_| ("PERSONAL_OPENID", PARTNER, 0)).collect();

        for (why, answer) in [
            ("no such transaction", share(&sb, &sp, "4200000000000000000", "PS1", &[("PERSONAL_OPENID", PARTNER, 1)])),
            ("not for profit sharing", share(&sb, &sp, &plain_tx, "PS1", &[("PERSONAL_OPENID", PARTNER, 1)])),
            ("no receivers", share(&sb, &sp, tx, "PS1", &[])),
            ("51 receivers", share(&sb, &sp, tx, "PS1", &too_many)),
            ("0 fen", share(&sb, &sp, tx, "PS1", &[("PERSONAL_OPENID", PARTNER, 0)])),
            ("not added", share(&sb, &sp, tx, "PS1", &[("PERSONAL_OPENID", "o-stranger", 1)])),
            ("named twice", share(&sb, &sp, tx, "PS1", &[("PERSONAL_OPENID", PARTNER, 1), ("PERSONAL_OPENID", PARTNER, 1)])),
        ] {
            assert_eq!(code(&answer), (400, "INVALID_REQUEST".into()), "{why}: {:?}", answer.body);
        }
        let mut other_app: Value = serde_json::from_str(&share_body(tx, "PS1", &[("PERSONAL_OPENID", PARTNER, 1)])).unwrap();
        other_app["appid"] = json!("wx_other");
        let other_app = call(&sb, &sp, "POST", "/v3/profitsharing/orders", &other_app.to_string(), 0);
        assert_eq!(code(&other_app), (400, "APPID_MCHID_NOT_MATCH".into()));
        let not_added = share(&sb, &sp, tx, "PS1", &[("PERSONAL_OPENID", "o-stranger", 1)]);
        assert!(not_added.body.unwrap()["message"].as_str().unwrap().contains("is not added"));
        assert!(sb.profit_sharing(SUB, "T_PS_0001").unwrap().orders.is_empty());
        // 50 requests at most per transaction.
        sb.set_max_ratio(SUB, 10_000).unwrap();
        for n in 0..MAX_SHARE_ORDERS_PER_TRANSACTION {
            assert_eq!(share(&sb, &sp, tx, &format!("PS_N{n}"), &[("PERSONAL_OPENID", PARTNER, 1)]).status, 200);
        }
        assert_eq!(code(&share(&sb, &sp, tx, "PS_N50", &[("PERSONAL_OPENID", PARTNER, 1)])), (400, "INVALID_REQUEST".into()));
    }

    #[tokio::test]
    async fn unfreezing_finishes_the_requests_processing_gives_the_rest_and_ends_the_sharing() {
        let (sb, sp, ids) = paid(3000, &["T_PS_0001"]).await;
        let tx = &ids[0];
        let refund =
            json!({"sub_mchid": SUB, "out_trade_no": "T_PS_0001", "out_refund_no": "R_PS_1", "amount": {"refund": 10, "total": 100}});
        assert_eq!(call(&sb, &sp, "POST", "/v3/refund/domestic/refunds", &refund.to_string(), 0).status, 200);
        sb.close_next_share(PARTNER, "NO_RELATION").unwrap();
        assert_eq!(share(&sb, &sp, tx, "PS1", &[("MERCHANT_ID", PLATFORM_RECEIVER, 20), ("PERSONAL_OPENID", PARTNER, 5)]).status, 200);

        let unfrozen = unfreeze(&sb, &sp, tx, "PS1-u");

        // 100 paid − 10 refunded − 20 shared (the 5 closed): 70 for the sub-merchant.
        let body = unfrozen.body.clone().unwrap();
        assert_eq!((&body["state"], &body["receivers"][0]["description"]), (&json!("FINISHED"), &json!("rest to the tenant")));
        assert_eq!(lines(&unfrozen), [line("MERCHANT_ID", SUB, 70, "SUCCESS")]);
        let finished = query(&sb, &sp, tx, "PS1");
        assert_eq!(
            lines(&finished),
            [line("MERCHANT_ID", PLATFORM_RECEIVER, 20, "SUCCESS"), line("PERSONAL_OPENID", PARTNER, 5, "CLOSED")]
        );
        assert_eq!(finished.body.unwrap()["receivers"][1]["fail_reason"], "NO_RELATION");
        assert_eq!(query(&sb, &sp, tx, "PS1-u").body, unfrozen.body, "its query answers it");
        assert_eq!(unfreeze(&sb, &sp, tx, "PS1-u").body, unfrozen.body, "the same number is the same request");
        assert_eq!(code(&unfreeze(&sb, &sp, tx, "PS1-u2")), (400, "INVALID_REQUEST".into()), "unfrozen once");
        let after = share(&sb, &sp, tx, "PS2", &[("PERSONAL_OPENID", PARTNER, 1)]);
        assert_eq!(code(&after), (400, "INVALID_REQUEST".into()), "no share after it");
        let view = sb.profit_sharing(SUB, "T_PS_0001").unwrap();
        assert_eq!((view.shared, view.finished, view.orders.len()), (20, true, 2));
        assert_eq!(view.unfrozen.map(|u| (u.out_order_no, u.amount)), Some(("PS1-u".to_owned(), 70)));
        assert_eq!(view.orders[1].kind, "unfreeze");
    }

    #[tokio::test]
    async fn a_share_asking_to_unfreeze_the_rest_unfreezes_it_when_it_finishes() {
        let (sb, sp, ids) = paid(3000, &["T_PS_0001"]).await;
        let mut body: Value = serde_json::from_str(&share_body(&ids[0], "PS1", &[("PERSONAL_OPENID", PARTNER, 30)])).unwrap();
        body["unfreeze_unsplit"] = json!(true);
        assert_eq!(call(&sb, &sp, "POST", "/v3/profitsharing/orders", &body.to_string(), 0).status, 200);
        assert_eq!(code(&share(&sb, &sp, &ids[0], "PS2", &[("PERSONAL_OPENID", PARTNER, 1)])), (400, "INVALID_REQUEST".into()));
        assert_eq!(sb.profit_sharing(SUB, "T_PS_0001").unwrap().unfrozen, None, "not before it finishes");

        query(&sb, &sp, &ids[0], "PS1");

        let view = sb.profit_sharing(SUB, "T_PS_0001").unwrap();
        assert_eq!((view.shared, view.finished), (30, true));
        assert_eq!(view.unfrozen.map(|u| (u.out_order_no, u.amount)), Some(("PS1".to_owned(), 70)));
    }

    #[tokio::test]
    async fn only_the_sub_merchants_provider_reaches_its_receivers_and_requests() {
        let (sb, sp, ids) = paid(3000, &["T_PS_0001"]).await;
        let other = sb.register_merchant("1900000110", "wx_other").unwrap();
        assert_eq!(share(&sb, &sp, &ids[0], "PS1", &[("PERSONAL_OPENID", PARTNER, 10)]).status, 200);
        let receiver = json!({"sub_mchid": SUB, "appid": "wx_other", "type": "PERSONAL_OPENID", "account": "o-x", "relation_type": "USER"});

        let added = call(&sb, &other, "POST", "/v3/profitsharing/receivers/add", &receiver.to_string(), 0);
        let shared =
            call(&sb, &other, "POST", "/v3/profitsharing/orders", &share_body(&ids[0], "PS2", &[("PERSONAL_OPENID", PARTNER, 1)]), 0);
        let repeated = call(&sb, &other, "POST", "/v3/profitsharing/orders", &share_body(&ids[0], "PS1", &[]), 0);
        let queried = query(&sb, &other, &ids[0], "PS1");
        let unfrozen = unfreeze(&sb, &other, &ids[0], "PS1-u");

        for answer in [&added, &shared, &repeated, &queried, &unfrozen] {
            assert_eq!(code(answer), (400, "INVALID_REQUEST".into()), "{:?}", answer.body);
            assert!(answer.body.as_ref().unwrap()["message"].as_str().unwrap().contains("受理关系不存在"));
        }
        // The provider's appid must be its own (or the sub-merchant's).
        let wrong_app =
            json!({"sub_mchid": SUB, "appid": "wx_other", "type": "PERSONAL_OPENID", "account": "o-x", "relation_type": "USER"});
        assert_eq!(
            code(&call(&sb, &sp, "POST", "/v3/profitsharing/receivers/add", &wrong_app.to_string(), 0)),
            (400, "APPID_MCHID_NOT_MATCH".into())
        );
        let view = sb.profit_sharing(SUB, "T_PS_0001").unwrap();
        assert_eq!((view.receivers.len(), view.orders.len(), view.orders[0].state.as_str()), (2, 1, "PROCESSING"));
        assert_eq!(sb.profit_sharing(SP, "T_PS_0001"), None, "not the provider's own order");
    }

    #[tokio::test]
    async fn a_lost_share_answer_was_still_made_and_the_retry_gets_it() {
        let (sb, sp, ids) = paid(3000, &["T_PS_0001"]).await;
        sb.lose_next_pay_answers("/v3/profitsharing/orders", 500, "SYSTEM_ERROR", 1).unwrap();

        let lost = share(&sb, &sp, &ids[0], "PS1", &[("PERSONAL_OPENID", PARTNER, 30)]);
        let retried = share(&sb, &sp, &ids[0], "PS1", &[("PERSONAL_OPENID", PARTNER, 30)]);

        assert_eq!(code(&lost), (500, "SYSTEM_ERROR".into()));
        assert_eq!(retried.status, 200, "not refused by the ratio its own first attempt used up");
        assert_eq!(lines(&retried), [line("PERSONAL_OPENID", PARTNER, 30, "PENDING")]);
        assert_eq!(sb.profit_sharing(SUB, "T_PS_0001").unwrap().orders.len(), 1);
        assert_eq!(sb.pay_calls("POST /v3/profitsharing/orders"), 2);
    }

    fn return_body(no: &str, out_order_no: &str, return_mchid: &str, amount: i64) -> String {
        json!({
            "sub_mchid": SUB, "out_order_no": out_order_no, "out_return_no": no, "return_mchid": return_mchid, "amount": amount,
            "description": "before a refund",
        })
        .to_string()
    }

    fn give_back(sb: &Sandbox, sp: &SandboxMerchant, no: &str, out_order_no: &str, return_mchid: &str, amount: i64) -> Answer {
        call(sb, sp, "POST", "/v3/profitsharing/return-orders", &return_body(no, out_order_no, return_mchid, amount), 0)
    }

    fn refund(sb: &Sandbox, sp: &SandboxMerchant, out_trade_no: &str, no: &str, amount: i64) -> Answer {
        let body = json!({"sub_mchid": SUB, "out_trade_no": out_trade_no, "out_refund_no": no, "amount": {"refund": amount, "total": 100}});
        call(sb, sp, "POST", "/v3/refund/domestic/refunds", &body.to_string(), 0)
    }

    /// `T_PS_0001` paid (100 fen) and shared by `PS1`, finished: 20 to the platform's merchant
    /// account, 10 to the partner.
    async fn shared() -> (Sandbox, SandboxMerchant, String) {
        let (sb, sp, ids) = paid(3000, &["T_PS_0001"]).await;
        share(&sb, &sp, &ids[0], "PS1", &[("MERCHANT_ID", PLATFORM_RECEIVER, 20), ("PERSONAL_OPENID", PARTNER, 10)]);
        assert_eq!(query(&sb, &sp, &ids[0], "PS1").body.unwrap()["state"], "FINISHED");
        let tx = ids[0].clone();
        (sb, sp, tx)
    }

    /// (result, fail_reason) of a return answer.
    fn outcome(answer: &Answer) -> (String, Option<String>) {
        let body = answer.body.as_ref().unwrap();
        (body["result"].as_str().unwrap().to_owned(), body["fail_reason"].as_str().map(str::to_owned))
    }

    #[tokio::test]
    async fn a_return_succeeds_at_once_and_the_same_number_answers_the_same_return() {
        let (sb, sp, _) = shared().await;

        let returned = give_back(&sb, &sp, "PR1", "PS1", PLATFORM_RECEIVER, 15);

        assert_eq!(returned.status, 200, "{:?}", returned.body);
        let body = returned.body.clone().unwrap();
        let order_id = held(&sb, "PS1").order_id;
        assert_eq!(
            (&body["sub_mchid"], &body["order_id"], &body["out_order_no"], &body["out_return_no"], &body["return_mchid"]),
            (&json!(SUB), &json!(order_id), &json!("PS1"), &json!("PR1"), &json!(PLATFORM_RECEIVER))
        );
        assert_eq!((&body["amount"], &body["description"], &body["result"]), (&json!(15), &json!("before a refund"), &json!("SUCCESS")));
        assert!(body["return_id"].as_str().is_some_and(|id| !id.is_empty()));
        assert!(body["create_time"].as_str().unwrap().ends_with("+08:00"));
        assert!(body["finish_time"].as_str().unwrap().ends_with("+08:00"));
        assert!(body.get("fail_reason").is_none());
        // The same number with another body: that return as it stands, nothing more returned.
        let again = give_back(&sb, &sp, "PR1", "PS1", PLATFORM_RECEIVER, 5);
        assert_eq!(again.body, returned.body);
        let view = sb.profit_sharing(SUB, "T_PS_0001").unwrap();
        let returned_by_line: Vec<_> = view.orders[0].lines.iter().map(|l| (l.account.as_str(), l.returned)).collect();
        assert_eq!(returned_by_line, [(PLATFORM_RECEIVER, 15), (PARTNER, 0)]);
        assert_eq!(
            view.returns,
            [ShareReturnView {
                out_return_no: "PR1".into(),
                out_order_no: "PS1".into(),
                return_mchid: PLATFORM_RECEIVER.into(),
                amount: 15,
                result: "SUCCESS".into(),
                fail_reason: None,
            }]
        );
        assert_eq!(view.shared, 30, "what was paid out stays told as paid");
        // Only the sub-merchant's provider reaches it.
        let other = sb.register_merchant("1900000110", "wx_other").unwrap();
        let foreign = give_back(&sb, &other, "PR1", "PS1", PLATFORM_RECEIVER, 15);
        assert_eq!(code(&foreign), (400, "INVALID_REQUEST".into()));
        assert!(foreign.body.unwrap()["message"].as_str().unwrap().contains("受理关系不存在"));
    }

    #[tokio::test]
    async fn a_line_returns_at_most_what_it_was_paid_and_a_failed_return_takes_nothing() {
        let (sb, sp, _) = shared().await;
        assert_eq!(give_back(&sb, &sp, "PR1", "PS1", PLATFORM_RECEIVER, 12).status, 200);

        let over = give_back(&sb, &sp, "PR2", "PS1", PLATFORM_RECEIVER, 9);

        assert_eq!(code(&over), (400, "INVALID_REQUEST".into()));
        assert!(over.body.unwrap()["message"].as_str().unwrap().contains("more than the 20 fen"));
        sb.fail_next_return(PLATFORM_RECEIVER, "BALANCE_NOT_ENOUGH").unwrap();
        assert_eq!(outcome(&give_back(&sb, &sp, "PR3", "PS1", PLATFORM_RECEIVER, 8)).0, "FAILED");
        assert_eq!(
            outcome(&give_back(&sb, &sp, "PR4", "PS1", PLATFORM_RECEIVER, 8)).0,
            "SUCCESS",
            "exactly the rest, the failed one not counted"
        );
        assert_eq!(code(&give_back(&sb, &sp, "PR5", "PS1", PLATFORM_RECEIVER, 1)), (400, "INVALID_REQUEST".into()), "all 20 returned");
        assert_eq!(
            code(&give_back(&sb, &sp, "PR2", "PS1", PLATFORM_RECEIVER, 1)),
            (400, "INVALID_REQUEST".into()),
            "a refused number was not kept"
        );
        let view = sb.profit_sharing(SUB, "T_PS_0001").unwrap();
        assert_eq!((view.orders[0].lines[0].returned, view.returns.len()), (20, 3));
    }

    #[tokio::test]
    async fn a_return_is_refused_for_what_the_platform_refuses() {
        let (sb, sp, tx) = shared().await;
        // A share still pending, and an unfreeze.
        sb.set_max_ratio(SUB, 10_000).unwrap();
        share(&sb, &sp, &tx, "PS2", &[("MERCHANT_ID", PLATFORM_RECEIVER, 5)]);
        sb.close_next_share(PLATFORM_RECEIVER, "ACCOUNT_ABNORMAL").unwrap();
        share(&sb, &sp, &tx, "PS3", &[("MERCHANT_ID", PLATFORM_RECEIVER, 5)]);
        query(&sb, &sp, &tx, "PS3");
        let (sb2, sp2, ids2) = paid(3000, &["T_PS_0001"]).await;
        assert_eq!(unfreeze(&sb2, &sp2, &ids2[0], "PS1-u").status, 200);

        for (why, answer) in [
            ("a person's line", give_back(&sb, &sp, "PR1", "PS1", PARTNER, 5)),
            ("no such request", give_back(&sb, &sp, "PR1", "PS_NONE", PLATFORM_RECEIVER, 5)),
            ("no line of that receiver", give_back(&sb, &sp, "PR1", "PS1", "1900000300", 5)),
            ("a line pending", give_back(&sb, &sp, "PR1", "PS2", PLATFORM_RECEIVER, 5)),
            ("a line closed", give_back(&sb, &sp, "PR1", "PS3", PLATFORM_RECEIVER, 5)),
            ("0 fen", give_back(&sb, &sp, "PR1", "PS1", PLATFORM_RECEIVER, 0)),
            ("an unfreeze", give_back(&sb2, &sp2, "PR1", "PS1-u", SUB, 5)),
        ] {
            assert_eq!(code(&answer), (400, "INVALID_REQUEST".into()), "{why}: {:?}", answer.body);
        }
        let person = give_back(&sb, &sp, "PR1", "PS1", PARTNER, 5);
        assert!(person.body.unwrap()["message"].as_str().unwrap().contains("不支持分账给个人的分账单回退"));
        let long = "R".repeat(65);
        for bad in ["", "PR 1", long.as_str()] {
            assert_eq!(code(&give_back(&sb, &sp, bad, "PS1", PLATFORM_RECEIVER, 5)), (400, "PARAM_ERROR".into()), "{bad:?}");
        }
        let mut no_description: Value = serde_json::from_str(&return_body("PR1", "PS1", PLATFORM_RECEIVER, 5)).unwrap();
        no_description.as_object_mut().unwrap().remove("description");
        let answer = call(&sb, &sp, "POST", "/v3/profitsharing/return-orders", &no_description.to_string(), 0);
        assert_eq!(code(&answer), (400, "PARAM_ERROR".into()));
        assert!(sb.profit_sharing(SUB, "T_PS_0001").unwrap().returns.is_empty(), "none was kept");
        // 50 returns at most per share request.
        for n in 0..MAX_RETURNS_PER_SHARE_ORDER {
            sb.fail_next_return(PLATFORM_RECEIVER, "ACCOUNT_ABNORMAL").unwrap();
            assert_eq!(outcome(&give_back(&sb, &sp, &format!("PR_N{n}"), "PS1", PLATFORM_RECEIVER, 1)).0, "FAILED");
        }
        assert_eq!(code(&give_back(&sb, &sp, "PR_N50", "PS1", PLATFORM_RECEIVER, 1)), (400, "INVALID_REQUEST".into()));
    }

    #[tokio::test]
    async fn fail_next_makes_the_next_return_of_that_merchant_fail_once() {
        let (sb, sp, _) = shared().await;
        sb.fail_next_return("1900000300", "ACCOUNT_ABNORMAL").unwrap();
        sb.fail_next_return(PLATFORM_RECEIVER, "TIME_OUT_CLOSED").unwrap();

        let failed = give_back(&sb, &sp, "PR1", "PS1", PLATFORM_RECEIVER, 5);
        let next = give_back(&sb, &sp, "PR2", "PS1", PLATFORM_RECEIVER, 5);

        assert_eq!(outcome(&failed), ("FAILED".into(), Some("TIME_OUT_CLOSED".into())));
        assert!(failed.body.as_ref().unwrap()["finish_time"].is_string());
        assert_eq!(give_back(&sb, &sp, "PR1", "PS1", PLATFORM_RECEIVER, 5).body, failed.body, "failed it stays");
        assert_eq!(outcome(&next), ("SUCCESS".into(), None), "once");
        let view = sb.profit_sharing(SUB, "T_PS_0001").unwrap();
        assert_eq!(view.orders[0].lines[0].returned, 5, "the failed one gave nothing back");
        assert_eq!(view.returns[0].fail_reason.as_deref(), Some("TIME_OUT_CLOSED"));
        assert_eq!(
            sb.lock().pay.sharing.fail_next_return,
            [("1900000300".to_owned(), "ACCOUNT_ABNORMAL".to_owned())],
            "another's mark stays"
        );
    }

    #[tokio::test]
    async fn with_returns_processing_a_return_is_finished_by_the_next_call_of_its_number_as_decided_when_made() {
        let (sb, sp, _) = shared().await;
        sb.set_returns_processing(true);
        assert!(sb.share_rules().returns_processing);
        sb.fail_next_return(PLATFORM_RECEIVER, "ACCOUNT_ABNORMAL").unwrap();

        let will_fail = give_back(&sb, &sp, "PR1", "PS1", PLATFORM_RECEIVER, 10);
        let will_succeed = give_back(&sb, &sp, "PR2", "PS1", PLATFORM_RECEIVER, 10);

        for processing in [&will_fail, &will_succeed] {
            assert_eq!(outcome(processing), ("PROCESSING".into(), None));
            assert!(processing.body.as_ref().unwrap().get("finish_time").is_none());
        }
        let view = sb.profit_sharing(SUB, "T_PS_0001").unwrap();
        assert_eq!(view.orders[0].lines[0].returned, 0, "nothing moved yet");
        // Both processing hold the line's 20 (the first will fail, but is not failed yet).
        assert_eq!(code(&give_back(&sb, &sp, "PR3", "PS1", PLATFORM_RECEIVER, 1)), (400, "INVALID_REQUEST".into()));
        // Switched off meanwhile: the mark and the processing still apply.
        sb.set_returns_processing(false);

        let failed = give_back(&sb, &sp, "PR1", "PS1", PLATFORM_RECEIVER, 10);
        let succeeded = give_back(&sb, &sp, "PR2", "PS1", PLATFORM_RECEIVER, 10);

        assert_eq!(outcome(&failed), ("FAILED".into(), Some("ACCOUNT_ABNORMAL".into())));
        assert_eq!(outcome(&succeeded), ("SUCCESS".into(), None));
        assert!(succeeded.body.as_ref().unwrap()["finish_time"].is_string());
        assert_eq!(succeeded.body.as_ref().unwrap()["return_id"], will_succeed.body.as_ref().unwrap()["return_id"]);
        assert_eq!(give_back(&sb, &sp, "PR2", "PS1", PLATFORM_RECEIVER, 10).body, succeeded.body, "finished once");
        assert_eq!(sb.profit_sharing(SUB, "T_PS_0001").unwrap().orders[0].lines[0].returned, 10);
    }

    #[tokio::test]
    async fn a_refund_that_would_take_shared_money_is_not_enough_until_the_return_is_made() {
        let (sb, sp, tx) = shared().await;
        // 100 paid, 30 shared: the sub-merchant holds 70.
        let taking = refund(&sb, &sp, "T_PS_0001", "R_PS_1", 80);
        assert_eq!(code(&taking), (403, "NOT_ENOUGH".into()));
        assert_eq!(taking.body.unwrap()["message"], "基本账户余额不足，请充值后重新发起");
        assert_eq!(sb.profit_sharing(SUB, "T_PS_0001").unwrap().refunded, 0, "nothing refunded");
        // A share still pending holds its amount too (this one will close).
        sb.set_max_ratio(SUB, 10_000).unwrap();
        sb.close_next_share(PLATFORM_RECEIVER, "ACCOUNT_ABNORMAL").unwrap();
        assert_eq!(share(&sb, &sp, &tx, "PS2", &[("MERCHANT_ID", PLATFORM_RECEIVER, 1)]).status, 200);
        assert_eq!(code(&refund(&sb, &sp, "T_PS_0001", "R_PS_1", 70)), (403, "NOT_ENOUGH".into()), "69 held");

        assert_eq!(outcome(&give_back(&sb, &sp, "PR1", "PS1", PLATFORM_RECEIVER, 11)).0, "SUCCESS");

        // 100 − (31 − 11): 80.
        let refunded = refund(&sb, &sp, "T_PS_0001", "R_PS_1", 80);
        assert_eq!(refunded.status, 200, "{:?}", refunded.body);
        assert_eq!(code(&refund(&sb, &sp, "T_PS_0001", "R_PS_2", 1)), (403, "NOT_ENOUGH".into()), "nothing more held");
        // A closed share gives its amount back to the sub-merchant.
        query(&sb, &sp, &tx, "PS2");
        assert_eq!(refund(&sb, &sp, "T_PS_0001", "R_PS_2", 1).status, 200);
        // What an unfreeze gives counts the return as the sub-merchant's: 100 − 81 − (30 − 11).
        let unfrozen = unfreeze(&sb, &sp, &tx, "PS1-u");
        assert_eq!(lines(&unfrozen), [line("MERCHANT_ID", SUB, 0, "SUCCESS")]);
    }

    #[tokio::test]
    async fn a_merchants_own_refund_is_not_concerned_by_sharing() {
        let (sb, _, _) = paid(3000, &[]).await;
        let m = sb.register_merchant("1900000120", "wx_own").unwrap();
        let order = json!({
            "appid": "wx_own", "mchid": "1900000120", "description": "cup", "out_trade_no": "T_OWN_1",
            "notify_url": "http://127.0.0.1:9/n", "amount": {"total": 100, "currency": "CNY"}, "payer": {"openid": "o-ann"},
        });
        assert_eq!(call(&sb, &m, "POST", "/v3/pay/transactions/jsapi", &order.to_string(), 0).status, 200);
        sb.pay_order(Some("1900000120"), "T_OWN_1", PaymentResult::Success).await.unwrap();
        let body = json!({"out_trade_no": "T_OWN_1", "out_refund_no": "R_OWN_1", "amount": {"refund": 100, "total": 100}});
        assert_eq!(call(&sb, &m, "POST", "/v3/refund/domestic/refunds", &body.to_string(), 0).status, 200);
    }

    #[test]
    fn return_fail_marks_take_the_platforms_reasons_and_are_bounded() {
        let sb = Sandbox::new();
        assert!(sb.fail_next_return("", "ACCOUNT_ABNORMAL").is_err());
        assert!(sb.fail_next_return(PLATFORM_RECEIVER, "NO_RELATION").is_err());
        for reason in RETURN_FAIL_REASONS {
            sb.fail_next_return(PLATFORM_RECEIVER, reason).unwrap();
        }
        for _ in RETURN_FAIL_REASONS.len()..KEEP_FAILURES {
            sb.fail_next_return(PLATFORM_RECEIVER, "ACCOUNT_ABNORMAL").unwrap();
        }
        assert!(sb.fail_next_return(PLATFORM_RECEIVER, "ACCOUNT_ABNORMAL").is_err(), "bounded");
    }

    fn query_return(sb: &Sandbox, sp: &SandboxMerchant, no: &str, out_order_no: &str) -> Answer {
        call(sb, sp, "GET", &format!("/v3/profitsharing/return-orders/{no}?sub_mchid={SUB}&out_order_no={out_order_no}"), "", 0)
    }

    /// A control call over HTTP, its handler called as the router would: (status, JSON body).
    async fn control(sb: &Sandbox, path: &str, body: &str) -> (u16, Value) {
        let data = actix_web::web::Data::new(sb.clone());
        let body = actix_web::web::Bytes::from(body.to_owned());
        let response = match path {
            "profitsharing/tamper" => super::super::control_share_tamper(data, body).await,
            "profitsharing/tamper-return" => super::super::control_share_tamper_return(data, body).await,
            other => panic!("no control {other} here"),
        };
        let status = response.status().as_u16();
        let bytes = actix_web::body::to_bytes(response.into_body()).await.unwrap();
        (status, serde_json::from_slice(&bytes).unwrap())
    }

    #[tokio::test]
    async fn a_return_query_answers_a_known_return_as_its_post_does_and_never_makes_one() {
        let (sb, sp, _) = shared().await;
        let made = give_back(&sb, &sp, "PR1", "PS1", PLATFORM_RECEIVER, 15);

        let queried = query_return(&sb, &sp, "PR1", "PS1");

        assert_eq!(queried.status, 200, "{:?}", queried.body);
        assert_eq!(queried.body, made.body, "the same body as the POST");
        assert_eq!(queried.body, give_back(&sb, &sp, "PR1", "PS1", PLATFORM_RECEIVER, 15).body);
        // A return processing is finished by its query, as by its number's POST, once.
        sb.set_returns_processing(true);
        let processing = give_back(&sb, &sp, "PR2", "PS1", PLATFORM_RECEIVER, 4);
        assert_eq!(outcome(&processing), ("PROCESSING".into(), None));
        let finished = query_return(&sb, &sp, "PR2", "PS1");
        assert_eq!(outcome(&finished), ("SUCCESS".into(), None));
        assert_eq!(finished.body.as_ref().unwrap()["return_id"], processing.body.as_ref().unwrap()["return_id"]);
        assert!(finished.body.as_ref().unwrap()["finish_time"].is_string());
        assert_eq!(give_back(&sb, &sp, "PR2", "PS1", PLATFORM_RECEIVER, 4).body, finished.body);
        assert_eq!(query_return(&sb, &sp, "PR2", "PS1").body, finished.body);
        assert_eq!(sb.profit_sharing(SUB, "T_PS_0001").unwrap().orders[0].lines[0].returned, 19);
        sb.set_returns_processing(false);

        // Unknown, or of another share request: 404, and nothing is made.
        for (no, out_order_no) in [("PR9", "PS1"), ("PR1", "PS_OTHER"), ("PR1", "PS2")] {
            let unknown = query_return(&sb, &sp, no, out_order_no);
            assert_eq!(code(&unknown), (404, "RESOURCE_NOT_EXISTS".into()), "{no} of {out_order_no}");
        }
        assert_eq!(sb.profit_sharing(SUB, "T_PS_0001").unwrap().returns.len(), 2, "no return was made");
        assert_eq!(code(&query_return(&sb, &sp, "PR9", "PS1")), (404, "RESOURCE_NOT_EXISTS".into()), "still unknown");
        // Another sub-merchant of the same provider has none of them.
        sb.register_sub_merchant(SP, "1900000201", None).unwrap();
        let path = "/v3/profitsharing/return-orders/PR1?sub_mchid=1900000201&out_order_no=PS1";
        assert_eq!(code(&call(&sb, &sp, "GET", path, "", 0)), (404, "RESOURCE_NOT_EXISTS".into()));
        // Only the sub-merchant's provider asks, naming both.
        let other = sb.register_merchant("1900000110", "wx_other").unwrap();
        assert_eq!(code(&query_return(&sb, &other, "PR1", "PS1")), (400, "INVALID_REQUEST".into()));
        for path in ["/v3/profitsharing/return-orders/PR1?sub_mchid=1900000200", "/v3/profitsharing/return-orders/PR1?out_order_no=PS1"] {
            assert_eq!(code(&call(&sb, &sp, "GET", path, "", 0)), (400, "PARAM_ERROR".into()), "{path}");
        }
        // Its number stays free: the return is made by its POST.
        assert_eq!(outcome(&give_back(&sb, &sp, "PR9", "PS1", PLATFORM_RECEIVER, 1)), ("SUCCESS".into(), None));
        assert_eq!(query_return(&sb, &sp, "PR9", "PS1").status, 200);
        assert_eq!(sb.profit_sharing(SUB, "T_PS_0001").unwrap().returns.len(), 3);
    }

    #[tokio::test]
    async fn tamper_changes_a_lines_result_and_amount_as_the_platform_answers_and_counts_it() {
        let (sb, sp, tx) = shared().await;

        let (status, answer) = control(
            &sb,
            "profitsharing/tamper",
            r#"{"out_order_no": "PS1", "account": "o-partner-7", "result": "CLOSED", "amount": 7, "fail_reason": "ACCOUNT_ABNORMAL"}"#,
        )
        .await;

        assert_eq!(status, 200, "{answer}");
        let queried = query(&sb, &sp, &tx, "PS1");
        assert_eq!(queried.body.as_ref(), Some(&answer), "the request as its query now answers it");
        assert_eq!(lines(&queried), [line("MERCHANT_ID", PLATFORM_RECEIVER, 20, "SUCCESS"), line("PERSONAL_OPENID", PARTNER, 7, "CLOSED")]);
        assert_eq!((&answer["state"], &answer["receivers"][1]["fail_reason"]), (&json!("FINISHED"), &json!("ACCOUNT_ABNORMAL")));
        assert!(answer["receivers"][1]["finish_time"].is_string());
        let view = sb.profit_sharing(SUB, "T_PS_0001").unwrap();
        assert_eq!(
            (view.orders[0].lines[1].result.as_str(), view.orders[0].lines[1].amount, view.shared),
            ("CLOSED", 7, 20),
            "the platform's view and sums follow"
        );

        // Back to SUCCESS: the reason goes. The platform's line made PENDING stays so, the
        // request still finished, its queries finishing nothing.
        let (status, answer) =
            control(&sb, "profitsharing/tamper", r#"{"out_order_no": "PS1", "account": "o-partner-7", "result": "SUCCESS"}"#).await;
        assert_eq!((status, answer["receivers"][1].get("fail_reason")), (200, None), "{answer}");
        let (status, answer) =
            control(&sb, "profitsharing/tamper", r#"{"out_order_no": "PS1", "account": "1900000109", "result": "PENDING", "amount": 0}"#)
                .await;
        assert_eq!(status, 200, "{answer}");
        assert!(answer["receivers"][0].get("finish_time").is_none(), "a pending line has not finished: {answer}");
        query(&sb, &sp, &tx, "PS1");
        let queried = query(&sb, &sp, &tx, "PS1");
        assert_eq!(lines(&queried), [line("MERCHANT_ID", PLATFORM_RECEIVER, 0, "PENDING"), line("PERSONAL_OPENID", PARTNER, 7, "SUCCESS")]);
        assert_eq!(queried.body.as_ref().unwrap()["state"], "FINISHED");
        assert_eq!(code(&give_back(&sb, &sp, "PR1", "PS1", PLATFORM_RECEIVER, 1)), (400, "INVALID_REQUEST".into()), "nothing to return");
    }

    #[tokio::test]
    async fn forget_makes_the_platform_answer_404_for_the_share_and_its_returns() {
        let (sb, sp, tx) = shared().await;
        assert_eq!(outcome(&give_back(&sb, &sp, "PR1", "PS1", PLATFORM_RECEIVER, 5)).0, "SUCCESS");

        let (status, answer) = control(&sb, "profitsharing/tamper", r#"{"out_order_no": "PS1", "forget": true}"#).await;

        assert_eq!((status, answer), (200, json!({"sub_mchid": SUB, "out_order_no": "PS1", "forgotten": true, "returns": ["PR1"]})));
        assert_eq!(code(&query(&sb, &sp, &tx, "PS1")), (404, "RESOURCE_NOT_EXISTS".into()));
        assert_eq!(code(&query_return(&sb, &sp, "PR1", "PS1")), (404, "RESOURCE_NOT_EXISTS".into()));
        let view = sb.profit_sharing(SUB, "T_PS_0001").unwrap();
        assert_eq!((view.orders.len(), view.returns.len(), view.shared), (0, 0, 0));
        let (status, again) = control(&sb, "profitsharing/tamper", r#"{"out_order_no": "PS1", "forget": true}"#).await;
        assert_eq!(status, 400, "{again}");
        assert!(again["message"].as_str().unwrap().contains("no share request PS1"), "{again}");
    }

    #[tokio::test]
    async fn tamper_return_changes_what_the_return_query_answers_and_the_return_stays_so() {
        let (sb, sp, _) = shared().await;
        give_back(&sb, &sp, "PR1", "PS1", PLATFORM_RECEIVER, 15);

        let (status, answer) = control(
            &sb,
            "profitsharing/tamper-return",
            r#"{"out_return_no": "PR1", "result": "FAILED", "amount": 14, "fail_reason": "BALANCE_NOT_ENOUGH"}"#,
        )
        .await;

        assert_eq!(status, 200, "{answer}");
        let queried = query_return(&sb, &sp, "PR1", "PS1");
        assert_eq!(queried.body.as_ref(), Some(&answer), "the return as its query now answers it");
        assert_eq!(outcome(&queried), ("FAILED".into(), Some("BALANCE_NOT_ENOUGH".into())));
        assert_eq!(answer["amount"], 14);
        assert_eq!(give_back(&sb, &sp, "PR1", "PS1", PLATFORM_RECEIVER, 15).body, queried.body, "its POST answers the same");
        let view = sb.profit_sharing(SUB, "T_PS_0001").unwrap();
        assert_eq!((view.orders[0].lines[0].returned, view.returns[0].result.as_str()), (0, "FAILED"), "counted as failed");

        // Made PROCESSING it stays so: asking again finishes nothing.
        let (status, answer) = control(&sb, "profitsharing/tamper-return", r#"{"out_return_no": "PR1", "result": "PROCESSING"}"#).await;
        assert_eq!((status, answer.get("fail_reason"), answer.get("finish_time")), (200, None, None), "{answer}");
        assert_eq!(outcome(&query_return(&sb, &sp, "PR1", "PS1")), ("PROCESSING".into(), None));
        assert_eq!(outcome(&give_back(&sb, &sp, "PR1", "PS1", PLATFORM_RECEIVER, 15)), ("PROCESSING".into(), None));
        assert_eq!(query_return(&sb, &sp, "PR1", "PS1").body.as_ref(), Some(&answer));
    }

    #[tokio::test]
    async fn the_tamper_controls_refuse_bad_bodies_with_a_json_message_and_change_nothing() {
        let (sb, sp, tx) = shared().await;
        give_back(&sb, &sp, "PR1", "PS1", PLATFORM_RECEIVER, 15);
        sb.set_max_ratio(SUB, 10_000).unwrap();
        share(&sb, &sp, &tx, "PS2", &[("MERCHANT_ID", PLATFORM_RECEIVER, 5)]);
        let share_before = sb.profit_sharing(SUB, "T_PS_0001").unwrap();

        for (path, body, says) in [
            ("profitsharing/tamper", "nope", "profitsharing/tamper takes"),
            ("profitsharing/tamper", r#"{"account": "o-partner-7"}"#, "missing field `out_order_no`"),
            ("profitsharing/tamper", r#"{"out_order_no": "PS1", "account": "o-partner-7", "colour": "red"}"#, "unknown field `colour`"),
            ("profitsharing/tamper", r#"{"out_order_no": "PS1"}"#, "name the line's account, or forget"),
            ("profitsharing/tamper", r#"{"out_order_no": "PS_NONE", "account": "o-partner-7"}"#, "no share request PS_NONE"),
            ("profitsharing/tamper", r#"{"out_order_no": "PS1", "account": "o-nobody"}"#, "has no line of o-nobody"),
            ("profitsharing/tamper", r#"{"out_order_no": "PS2", "account": "1900000109", "amount": 1}"#, "still PROCESSING"),
            (
                "profitsharing/tamper",
                r#"{"out_order_no": "PS1", "account": "o-partner-7", "result": "FAILED"}"#,
                "result must be one of PENDING, SUCCESS, CLOSED",
            ),
            ("profitsharing/tamper", r#"{"out_order_no": "PS1", "account": "o-partner-7", "amount": -1}"#, "at least 0 fen"),
            ("profitsharing/tamper", r#"{"out_order_no": "PS1", "account": "o-partner-7", "amount": 1.5}"#, "amount"),
            ("profitsharing/tamper", r#"{"out_order_no": "PS1", "account": "o-partner-7", "amount": "10"}"#, "amount"),
            (
                "profitsharing/tamper",
                r#"{"out_order_no": "PS1", "account": "o-partner-7", "fail_reason": "ACCOUNT_ABNORMAL"}"#,
                "fail_reason goes with a CLOSED result, not SUCCESS",
            ),
            (
                "profitsharing/tamper",
                r#"{"out_order_no": "PS1", "account": "o-partner-7", "result": "CLOSED", "fail_reason": "bad reason"}"#,
                "fail_reason must be 1 to 64 of A-Z and _",
            ),
            ("profitsharing/tamper", r#"{"out_order_no": "PS1", "account": "o-partner-7", "forget": true}"#, "forget takes no account"),
            ("profitsharing/tamper", r#"{"out_order_no": "PS1", "forget": true, "result": "CLOSED"}"#, "forget takes no result"),
            ("profitsharing/tamper", r#"{"out_order_no": "PS1", "forget": "yes"}"#, "forget"),
            ("profitsharing/tamper", r#"{"out_order_no": "PS_NONE", "forget": true}"#, "no share request PS_NONE"),
            (
                "profitsharing/tamper",
                r#"{"out_order_no": "PS1", "sub_mchid": "1900000299", "forget": true}"#,
                "sub-merchant 1900000299 has no",
            ),
            ("profitsharing/tamper-return", r#"{"result": "FAILED"}"#, "missing field `out_return_no`"),
            ("profitsharing/tamper-return", r#"{"out_return_no": "PR1", "account": "1900000109"}"#, "unknown field `account`"),
            ("profitsharing/tamper-return", r#"{"out_return_no": "PR_NONE", "result": "FAILED"}"#, "no return PR_NONE"),
            (
                "profitsharing/tamper-return",
                r#"{"out_return_no": "PR1", "result": "CLOSED"}"#,
                "result must be one of PROCESSING, SUCCESS, FAILED",
            ),
            ("profitsharing/tamper-return", r#"{"out_return_no": "PR1", "amount": -5}"#, "at least 0 fen"),
            (
                "profitsharing/tamper-return",
                r#"{"out_return_no": "PR1", "fail_reason": "BALANCE_NOT_ENOUGH"}"#,
                "fail_reason goes with a FAILED result, not SUCCESS",
            ),
            ("profitsharing/tamper-return", "[]", "profitsharing/tamper-return takes"),
        ] {
            let (status, answer) = control(&sb, path, body).await;
            assert_eq!(status, 400, "{path} {body}: {answer}");
            assert!(answer["message"].as_str().unwrap_or_default().contains(says), "{path} {body}: {answer}");
        }
        assert_eq!(sb.profit_sharing(SUB, "T_PS_0001").unwrap(), share_before, "nothing of a refused call applies");
        assert_eq!(outcome(&query_return(&sb, &sp, "PR1", "PS1")), ("SUCCESS".into(), None));
    }

    #[test]
    fn a_number_several_sub_merchants_have_needs_its_sub_mchid() {
        let keys = [("1900000200".to_owned(), "PS1".to_owned()), ("1900000201".to_owned(), "PS1".to_owned())];

        let both = only_key(keys.iter(), "share request", "PS1", None);
        let one = only_key(keys.iter().filter(|(sub, _)| sub == "1900000201"), "share request", "PS1", Some("1900000201"));
        let none = only_key(keys.iter().take(0), "return", "PR1", None);

        assert_eq!(both, Err("several sub-merchants have a share request PS1: name its sub_mchid".into()));
        assert_eq!(one, Ok(keys[1].clone()));
        assert_eq!(none, Err("the platform has no return PR1".into()));
    }

    #[test]
    fn close_marks_and_their_bounds() {
        let sb = Sandbox::new();
        assert!(sb.close_next_share("", "ACCOUNT_ABNORMAL").is_err());
        assert!(sb.close_next_share(PARTNER, "account abnormal").is_err());
        for _ in 0..KEEP_FAILURES {
            sb.close_next_share(PARTNER, "ACCOUNT_ABNORMAL").unwrap();
        }
        assert!(sb.close_next_share(PARTNER, "ACCOUNT_ABNORMAL").is_err(), "bounded");
    }
}
