//! The pay platform (WeChat Pay API v3) over HTTP: [`WechatPay`] implements the mini-program
//! domain's `PayPlatform` port, [`OpensslMerchantKeys`] its `MerchantKeys` port.
//!
//! Every request is signed with the merchant key ([`sign`]); every answer that carries a
//! signature is verified over its raw bytes with the platform key its `Wechatpay-Serial`
//! names, and a 2xx answer with a body must carry one. 5xx answers, time-outs and failed
//! connections are retried a bounded number of times with a short back-off — safe because
//! each call is idempotent on the platform (an order or refund is named by our number, a close
//! of a closed order is a no-op); a 4xx is never retried. The trade bill download is unsigned
//! and checked by its SHA-1 instead ([`bill`]). Notifications are verified and decrypted by
//! [`notify`].
//!
//! An account acting for a sub-merchant (`MerchantAccount::sub_merchant`, service-provider
//! mode) goes through the platform's partner endpoints instead: orders, queries and closes
//! under `/v3/pay/partner/transactions/…` with `sp_mchid`/`sp_appid` (the account's own) and
//! `sub_mchid`/`sub_appid`; refunds, refund queries and the trade bill on the same paths as in
//! direct mode, naming `sub_mchid`. The provider signs every request (its `mchid` in
//! `Authorization`), and the provider's platform keys and APIv3 key verify and open answers and
//! notifications, which then report the sub-merchant (`sub_mchid`). Direct mode is unchanged.
//!
//! Profit sharing (分账) exists in service-provider mode only: receivers are added (`POST
//! /v3/profitsharing/receivers/add`, the receiver's name encrypted under the platform's first
//! key, RSA-OAEP, which the request names in `Wechatpay-Serial`), shares requested, queried
//! and the rest unfrozen (`/v3/profitsharing/orders`, `…/orders/{out_order_no}`,
//! `…/orders/unfreeze`), and a merchant receiver's part returned to the sub-merchant before a
//! refund (`POST /v3/profitsharing/return-orders`, answered with the return's result:
//! `PROCESSING`, `SUCCESS` or `FAILED` with its `fail_reason`; the same `out_return_no` again
//! answers that return) and a return queried (`GET
//! …/return-orders/{out_return_no}?sub_mchid=&out_order_no=`, the same answer; asking makes
//! none), each naming `sub_mchid`; `PROFITSHARING.*` notifications name the request they are
//! about. An account acting for no sub-merchant cannot make these calls.
//!
//! Keys, the APIv3 key and signatures never appear in an error, a log line or `Debug` output.

mod answers;
pub mod bill;
pub mod keys;
pub mod notify;
pub mod sign;

pub use keys::OpensslMerchantKeys;

use crate::CallRecorder;
use answers::{BillAnswer, ErrorAnswer, MaxRatioAnswer, PrepayAnswer, RefundAnswer, ReturnAnswer, ShareOrderAnswer, TransactionAnswer};
use async_trait::async_trait;
use atrium_kernel::Timestamp;
use atrium_payments::{
    BillDate, BillLine, JsapiOrder, MerchantAccount, NotificationError, NotificationRequest, PayEvent, PayParams, PayPlatform,
    PayPlatformError, PayResult, PlatformRefund, PlatformReturn, PlatformShareOrder, PlatformTransaction, ReceiverAdd, RefundOrder,
    ReturnOrder, ShareOrder, SubMerchant, UnfreezeOrder,
};
use reqwest::Method;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, USER_AGENT};
use serde::de::DeserializeOwned;
use serde_json::json;
use sign::{MerchantSigner, PlatformVerifier, SignedHeaders};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where the pay platform lives and how patient to be with it.
#[derive(Debug, Clone)]
pub struct WechatPayConfig {
    /// `https://api.mch.weixin.qq.com`, or any server speaking the same wire format.
    pub base_url: String,
    /// The limit of one attempt, connection included.
    pub timeout: Duration,
    /// Further attempts after a 5xx, a time-out or a failed connection.
    pub retries: u32,
    /// The wait before retry `n` is `n × backoff`.
    pub backoff: Duration,
}

impl WechatPayConfig {
    /// 10 s per attempt, 2 retries, 200 ms back-off.
    pub fn new(base_url: impl Into<String>) -> Self {
        WechatPayConfig { base_url: base_url.into(), timeout: Duration::from_secs(10), retries: 2, backoff: Duration::from_millis(200) }
    }
}

/// The pay platform client, shared by every tenant: each call names its merchant account.
pub struct WechatPay {
    http: reqwest::Client,
    config: WechatPayConfig,
    recorder: Option<Arc<dyn CallRecorder>>,
    signers: Kept<MerchantSigner>,
    verifiers: Kept<PlatformVerifier>,
}

/// Keys read once, by the SHA-256 of their PEM (a rotated key is a new entry; the PEM itself
/// is not kept here). Reading a private key, and the RSA blinding OpenSSL sets up on a key's
/// first signature, cost as much as the signature: half of an unified order's CPU when every
/// call read the merchant's key afresh. The platform's public keys are kept the same way.
struct Kept<T>(std::sync::Mutex<std::collections::HashMap<[u8; 32], Arc<T>>>);

impl<T> Default for Kept<T> {
    fn default() -> Self {
        Kept(std::sync::Mutex::default())
    }
}

/// Distinct keys (or sets of platform keys) kept at most; past that the cache starts again.
const MAX_KEPT: usize = 1024;

impl<T> Kept<T> {
    /// What `read` gives for `id`, read once; its error (why the key is unusable) is not kept.
    fn get_or_read(&self, id: [u8; 32], read: impl FnOnce() -> Result<T, String>) -> Result<Arc<T>, String> {
        if let Some(kept) = self.0.lock().ok().and_then(|kept| kept.get(&id).cloned()) {
            return Ok(kept);
        }
        let read = Arc::new(read()?);
        if let Ok(mut kept) = self.0.lock() {
            if kept.len() >= MAX_KEPT {
                kept.clear();
            }
            kept.insert(id, Arc::clone(&read));
        }
        Ok(read)
    }
}

impl Kept<MerchantSigner> {
    fn get(&self, account: &MerchantAccount) -> Result<Arc<MerchantSigner>, String> {
        let pem = account.private_key.expose();
        self.get_or_read(openssl::sha::sha256(pem.as_bytes()), || MerchantSigner::from_pem(pem))
    }
}

impl Kept<PlatformVerifier> {
    fn get(&self, account: &MerchantAccount) -> Result<Arc<PlatformVerifier>, String> {
        let mut id = openssl::sha::Sha256::new();
        for key in &account.platform_keys {
            for part in [key.id.as_bytes(), key.pem.as_bytes()] {
                id.update(&part.len().to_le_bytes());
                id.update(part);
            }
        }
        self.get_or_read(id.finish(), || PlatformVerifier::new(&account.platform_keys))
    }
}

/// What one attempt came to.
enum Attempt {
    /// A time-out, a failed connection or a 5xx: worth another try.
    Retry { why: String, code: String },
    /// An answer to decide on.
    Answer { status: u16, headers: SignedHeaders, body: Vec<u8> },
}

/// One call: what to send and how to report it.
struct Call<'a> {
    method: Method,
    /// Absolute URL.
    url: String,
    /// What the signature covers: the URL's path and query.
    path_and_query: String,
    /// The path template reported to the recorder (never ids or queries).
    endpoint: &'static str,
    body: Option<String>,
    /// `None` for the unsigned bill download.
    verifier: Option<&'a PlatformVerifier>,
    /// `Wechatpay-Serial`: the platform key the body's sensitive fields are encrypted under.
    serial: Option<String>,
}

/// Percent-encodes a path segment (our numbers may hold `|`, `*`, `@`).
fn segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A timestamp as the platform writes it: RFC 3339 in China Standard Time.
fn cst(t: Timestamp) -> String {
    t.with_timezone(&atrium_kernel::china_standard_time()).to_rfc3339_opts(chrono::SecondsFormat::Secs, false)
}

fn header(headers: &HeaderMap, name: &str) -> String {
    headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
}

fn nonce() -> String {
    atrium_kernel::secret::random_token(24)
}

fn unreadable(what: &str) -> PayPlatformError {
    PayPlatformError::Unavailable(format!("the pay platform sent an unreadable {what}"))
}

fn parse<T: DeserializeOwned>(body: &[u8], what: &str) -> PayResult<T> {
    serde_json::from_slice(body).map_err(|_| unreadable(what))
}

impl WechatPay {
    pub fn new(config: WechatPayConfig) -> anyhow::Result<Self> {
        let http = crate::http::client_builder()?.timeout(config.timeout).connect_timeout(config.timeout).build()?;
        Ok(WechatPay { http, config, recorder: None, signers: Kept::default(), verifiers: Kept::default() })
    }

    /// Reports every call to `recorder`: the endpoint template, then `0`, the platform's
    /// error code, `http_5xx`, `bad_signature` or `transport`.
    pub fn with_recorder(mut self, recorder: Arc<dyn CallRecorder>) -> Self {
        self.recorder = Some(recorder);
        self
    }

    fn record(&self, endpoint: &'static str, code: &str, started: Instant) {
        if let Some(r) = &self.recorder {
            r.record(endpoint, crate::code_label(code), started.elapsed());
        }
    }

    fn base(&self) -> &str {
        self.config.base_url.trim_end_matches('/')
    }

    fn call<'a>(
        &self,
        method: Method,
        path_and_query: String,
        endpoint: &'static str,
        body: Option<String>,
        verifier: &'a PlatformVerifier,
    ) -> Call<'a> {
        Call {
            method,
            url: format!("{}{path_and_query}", self.base()),
            path_and_query,
            endpoint,
            body,
            verifier: Some(verifier),
            serial: None,
        }
    }

    /// Sends a signed request, retrying what is worth retrying; returns the verified body of
    /// a 2xx answer, or the platform's refusal.
    async fn send(&self, account: &MerchantAccount, signer: &MerchantSigner, call: Call<'_>) -> PayResult<Vec<u8>> {
        let mut attempt = 0;
        loop {
            let started = Instant::now();
            match self.attempt(account, signer, &call).await? {
                Attempt::Retry { why, code } => {
                    self.record(call.endpoint, &code, started);
                    if attempt >= self.config.retries {
                        log::warn!("pay platform {} failed after {} attempts: {why}", call.endpoint, attempt + 1);
                        return Err(PayPlatformError::Unavailable(format!("{why} (after {} attempts)", attempt + 1)));
                    }
                    attempt += 1;
                    log::info!("pay platform {}: {why}; retry {attempt} of {}", call.endpoint, self.config.retries);
                    tokio::time::sleep(self.config.backoff * attempt).await;
                }
                Attempt::Answer { status, headers, body } => {
                    let decided = self.decide(&call, status, &headers, body);
                    let code = match &decided {
                        Ok(_) => "0".to_owned(),
                        Err(PayPlatformError::Refused { code, .. }) => code.clone(),
                        Err(_) => "bad_signature".to_owned(),
                    };
                    self.record(call.endpoint, &code, started);
                    return decided;
                }
            }
        }
    }

    async fn attempt(&self, account: &MerchantAccount, signer: &MerchantSigner, call: &Call<'_>) -> PayResult<Attempt> {
        let timestamp = chrono::Utc::now().timestamp();
        let nonce = nonce();
        let body = call.body.as_deref().unwrap_or_default();
        let message = sign::request_message(call.method.as_str(), &call.path_and_query, timestamp, &nonce, body);
        let signature = signer.sign(&message).map_err(PayPlatformError::Credentials)?;
        let mut request = self
            .http
            .request(call.method.clone(), &call.url)
            .header(AUTHORIZATION, sign::authorization(&account.mchid, &account.serial_no, timestamp, &nonce, &signature))
            .header(ACCEPT, "application/json")
            .header(USER_AGENT, "atrium");
        if let Some(b) = &call.body {
            request = request.header(CONTENT_TYPE, "application/json").body(b.clone());
        }
        if let Some(serial) = &call.serial {
            request = request.header("Wechatpay-Serial", serial);
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) if e.is_timeout() || e.is_connect() => {
                let why = if e.is_timeout() { "timed out" } else { "could not connect" };
                return Ok(Attempt::Retry { why: format!("the pay platform {why}"), code: "transport".into() });
            }
            Err(e) => {
                return Err(PayPlatformError::Unavailable(format!("the request failed: {}", crate::token::error_chain(&e.without_url()))));
            }
        };
        let status = response.status().as_u16();
        let h = response.headers();
        let headers = SignedHeaders {
            timestamp: header(h, "Wechatpay-Timestamp"),
            nonce: header(h, "Wechatpay-Nonce"),
            signature: header(h, "Wechatpay-Signature"),
            serial: header(h, "Wechatpay-Serial"),
        };
        let body = match response.bytes().await {
            Ok(b) => b.to_vec(),
            Err(e) if e.is_timeout() => {
                return Ok(Attempt::Retry { why: "the pay platform's answer timed out".into(), code: "transport".into() });
            }
            Err(_) => return Err(unreadable("answer")),
        };
        if status >= 500 {
            return Ok(Attempt::Retry { why: format!("the pay platform answered HTTP {status}"), code: "http_5xx".into() });
        }
        // 408: the request was not taken (a server closing a kept-alive connection the pool
        // reused at that moment answers it, unsigned); 429: not taken yet. Neither is a refusal.
        if status == 408 || status == 429 {
            return Ok(Attempt::Retry { why: format!("the pay platform answered HTTP {status}"), code: format!("http_{status}") });
        }
        Ok(Attempt::Answer { status, headers, body })
    }

    /// Verifies an answer and turns a non-2xx into the platform's refusal.
    fn decide(&self, call: &Call<'_>, status: u16, headers: &SignedHeaders, body: Vec<u8>) -> PayResult<Vec<u8>> {
        let success = (200..300).contains(&status);
        if let Some(verifier) = call.verifier {
            if !headers.signature.is_empty() {
                verifier.verify(headers, &body, chrono::Utc::now().timestamp()).map_err(|e| {
                    log::warn!("pay platform {}: answer refused: {e}", call.endpoint);
                    PayPlatformError::Unavailable(format!("the pay platform's answer was not accepted: {e}"))
                })?;
            } else if success && !body.is_empty() {
                return Err(PayPlatformError::Unavailable("the pay platform's answer is unsigned".into()));
            }
        }
        if success {
            return Ok(body);
        }
        let error: ErrorAnswer = serde_json::from_slice(&body).unwrap_or(ErrorAnswer { code: String::new(), message: String::new() });
        let code = if error.code.is_empty() { format!("HTTP_{status}") } else { error.code };
        Err(PayPlatformError::Refused { status, code, message: error.message })
    }

    fn credentials(&self, account: &MerchantAccount) -> PayResult<(Arc<MerchantSigner>, Arc<PlatformVerifier>)> {
        let signer = self.signers.get(account).map_err(PayPlatformError::Credentials)?;
        let verifier = self.verifiers.get(account).map_err(PayPlatformError::Credentials)?;
        Ok((signer, verifier))
    }

    /// Downloads the bill at `url` (signed request, unsigned answer) and checks its SHA-1.
    async fn download_bill(&self, account: &MerchantAccount, signer: &MerchantSigner, answer: BillAnswer) -> PayResult<Vec<BillLine>> {
        if !answer.hash_type.eq_ignore_ascii_case("SHA1") {
            return Err(PayPlatformError::Unavailable(format!("unsupported bill hash {}", answer.hash_type)));
        }
        // Our signed request goes only where the platform itself lives.
        let rest = answer
            .download_url
            .strip_prefix(self.base())
            .filter(|r| r.starts_with('/'))
            .ok_or_else(|| PayPlatformError::Unavailable("the bill's download address is not on the pay platform".into()))?;
        let call = Call {
            method: Method::GET,
            url: answer.download_url.clone(),
            path_and_query: rest.to_owned(),
            endpoint: "/v3/billdownload/file",
            body: None,
            verifier: None,
            serial: None,
        };
        let bytes = self.send(account, signer, call).await?;
        if !bill::sha1_hex(&bytes).eq_ignore_ascii_case(answer.hash_value.trim()) {
            return Err(PayPlatformError::Unavailable("the downloaded bill does not match its SHA-1".into()));
        }
        let text = std::str::from_utf8(&bytes).map_err(|_| unreadable("bill"))?;
        bill::parse_trade_bill(text).map_err(|e| PayPlatformError::Unavailable(format!("the bill is unreadable: {e}")))
    }
}

/// The JSAPI order's body in direct mode: the merchant places it for itself.
fn direct_order_body(account: &MerchantAccount, order: &JsapiOrder) -> serde_json::Value {
    let mut body = json!({
        "appid": account.appid,
        "mchid": account.mchid,
        "description": order.description,
        "out_trade_no": order.out_trade_no,
        "time_expire": cst(order.time_expire),
        "notify_url": order.notify_url,
        "amount": {"total": order.amount.fen(), "currency": "CNY"},
        "payer": {"openid": order.openid},
    });
    if let Some(attach) = &order.attach {
        body["attach"] = json!(attach);
    }
    body
}

/// The JSAPI order's body in service-provider mode: the provider (`account`'s `mchid` and
/// `appid`) places it for `sub`. The payer is named in the mini-program they pay in: by
/// `sub_openid` in the sub-merchant's own, by `sp_openid` in the provider's. Profit sharing is
/// asked for, so the provider's share can be split off the payment later.
fn partner_order_body(account: &MerchantAccount, sub: &SubMerchant, order: &JsapiOrder) -> serde_json::Value {
    let payer = match &sub.sub_appid {
        Some(_) => json!({"sub_openid": order.openid}),
        None => json!({"sp_openid": order.openid}),
    };
    let mut body = json!({
        "sp_appid": account.appid,
        "sp_mchid": account.mchid,
        "sub_mchid": sub.sub_mchid,
        "description": order.description,
        "out_trade_no": order.out_trade_no,
        "time_expire": cst(order.time_expire),
        "notify_url": order.notify_url,
        "settle_info": {"profit_sharing": true},
        "amount": {"total": order.amount.fen(), "currency": "CNY"},
        "payer": payer,
    });
    if let Some(sub_appid) = &sub.sub_appid {
        body["sub_appid"] = json!(sub_appid);
    }
    if let Some(attach) = &order.attach {
        body["attach"] = json!(attach);
    }
    body
}

/// The refund's body; in service-provider mode it names the sub-merchant whose money goes back.
fn refund_body(account: &MerchantAccount, refund: &RefundOrder) -> serde_json::Value {
    let mut body = json!({
        "out_trade_no": refund.out_trade_no,
        "out_refund_no": refund.out_refund_no,
        "notify_url": refund.notify_url,
        "amount": {"refund": refund.amount.fen(), "total": refund.total.fen(), "currency": "CNY"},
    });
    if let Some(sub) = &account.sub_merchant {
        body["sub_mchid"] = json!(sub.sub_mchid);
    }
    if let Some(reason) = &refund.reason {
        body["reason"] = json!(reason);
    }
    body
}

/// `&sub_mchid=…` in service-provider mode, nothing in direct mode: the refund and bill
/// endpoints are shared by both modes and told apart by this parameter.
fn sub_mchid_param(account: &MerchantAccount, first: bool) -> String {
    match &account.sub_merchant {
        Some(sub) => format!("{}sub_mchid={}", if first { '?' } else { '&' }, segment(&sub.sub_mchid)),
        None => String::new(),
    }
}

/// The sub-merchant a profit-sharing call acts for: `what` belongs to one, so an account
/// acting for none cannot make the call.
fn sharing_sub<'a>(account: &'a MerchantAccount, what: &str) -> PayResult<&'a SubMerchant> {
    account
        .sub_merchant
        .as_ref()
        .ok_or_else(|| PayPlatformError::Credentials(format!("{what} belongs to a sub-merchant; the account names none")))
}

/// A share or unfreeze answer as the domain's report.
fn share_report(body: &[u8]) -> PayResult<PlatformShareOrder> {
    let answer: ShareOrderAnswer = parse(body, "profit-sharing order")?;
    answer
        .into_report()
        .map_err(|e| PayPlatformError::Unavailable(format!("the pay platform sent an unreadable profit-sharing order: {e}")))
}

/// The share request's body: the provider (`account`) asks for `sub`'s payment to be split.
fn share_body(account: &MerchantAccount, sub: &SubMerchant, order: &ShareOrder) -> serde_json::Value {
    let receivers: Vec<serde_json::Value> = order
        .lines
        .iter()
        .map(|l| {
            let kind: &'static str = l.kind.into();
            json!({"type": kind, "account": l.account, "amount": l.amount.fen(), "description": l.description})
        })
        .collect();
    json!({
        "sub_mchid": sub.sub_mchid,
        "appid": account.appid,
        "transaction_id": order.transaction_id,
        "out_order_no": order.out_order_no,
        "receivers": receivers,
        "unfreeze_unsplit": order.unfreeze_unsplit,
    })
}

/// The return's body: the provider (`account`) asks `order.return_mchid` to give part of its
/// share back to `sub`.
fn return_body(sub: &SubMerchant, order: &ReturnOrder) -> serde_json::Value {
    json!({
        "sub_mchid": sub.sub_mchid,
        "out_order_no": order.out_order_no,
        "out_return_no": order.out_return_no,
        "return_mchid": order.return_mchid,
        "amount": order.amount.fen(),
        "description": order.description,
    })
}

/// A return answer as the domain's report.
fn return_report(body: &[u8]) -> PayResult<PlatformReturn> {
    let answer: ReturnAnswer = parse(body, "profit-sharing return")?;
    answer
        .into_report()
        .map_err(|e| PayPlatformError::Unavailable(format!("the pay platform sent an unreadable profit-sharing return: {e}")))
}

#[async_trait]
impl PayPlatform for WechatPay {
    async fn jsapi_order(&self, account: &MerchantAccount, order: &JsapiOrder) -> PayResult<String> {
        let (signer, verifier) = self.credentials(account)?;
        let (path, body) = match &account.sub_merchant {
            None => ("/v3/pay/transactions/jsapi", direct_order_body(account, order)),
            Some(sub) => ("/v3/pay/partner/transactions/jsapi", partner_order_body(account, sub, order)),
        };
        let call = self.call(Method::POST, path.into(), path, Some(body.to_string()), &verifier);
        let answer: PrepayAnswer = parse(&self.send(account, &signer, call).await?, "prepay answer")?;
        Ok(answer.prepay_id)
    }

    fn pay_params(&self, account: &MerchantAccount, prepay_id: &str) -> PayResult<PayParams> {
        let signer = self.signers.get(account).map_err(PayPlatformError::Credentials)?;
        let time_stamp = chrono::Utc::now().timestamp().to_string();
        let nonce_str = nonce();
        let package = format!("prepay_id={prepay_id}");
        // The payer's app checks `appId` against the mini-program it runs in: the sub-merchant's
        // own when it has one; the signature is still the account's (the provider's).
        let app_id = account.payer_appid();
        let pay_sign =
            signer.sign(&sign::pay_sign_message(app_id, &time_stamp, &nonce_str, &package)).map_err(PayPlatformError::Credentials)?;
        Ok(PayParams { app_id: app_id.to_owned(), time_stamp, nonce_str, package, sign_type: "RSA".into(), pay_sign })
    }

    async fn query_order(&self, account: &MerchantAccount, out_trade_no: &str) -> PayResult<PlatformTransaction> {
        let (signer, verifier) = self.credentials(account)?;
        let (path, endpoint) = match &account.sub_merchant {
            None => (
                format!("/v3/pay/transactions/out-trade-no/{}?mchid={}", segment(out_trade_no), segment(&account.mchid)),
                "/v3/pay/transactions/out-trade-no/{out_trade_no}",
            ),
            Some(sub) => (
                format!(
                    "/v3/pay/partner/transactions/out-trade-no/{}?sp_mchid={}&sub_mchid={}",
                    segment(out_trade_no),
                    segment(&account.mchid),
                    segment(&sub.sub_mchid)
                ),
                "/v3/pay/partner/transactions/out-trade-no/{out_trade_no}",
            ),
        };
        let call = self.call(Method::GET, path, endpoint, None, &verifier);
        let answer: TransactionAnswer = parse(&self.send(account, &signer, call).await?, "transaction")?;
        answer.into_report().map_err(|e| PayPlatformError::Unavailable(format!("the pay platform sent an unreadable transaction: {e}")))
    }

    async fn close_order(&self, account: &MerchantAccount, out_trade_no: &str) -> PayResult<()> {
        let (signer, verifier) = self.credentials(account)?;
        let (path, endpoint, body) = match &account.sub_merchant {
            None => (
                format!("/v3/pay/transactions/out-trade-no/{}/close", segment(out_trade_no)),
                "/v3/pay/transactions/out-trade-no/{out_trade_no}/close",
                json!({"mchid": account.mchid}),
            ),
            Some(sub) => (
                format!("/v3/pay/partner/transactions/out-trade-no/{}/close", segment(out_trade_no)),
                "/v3/pay/partner/transactions/out-trade-no/{out_trade_no}/close",
                json!({"sp_mchid": account.mchid, "sub_mchid": sub.sub_mchid}),
            ),
        };
        let call = self.call(Method::POST, path, endpoint, Some(body.to_string()), &verifier);
        self.send(account, &signer, call).await.map(|_| ())
    }

    async fn refund(&self, account: &MerchantAccount, refund: &RefundOrder) -> PayResult<PlatformRefund> {
        let (signer, verifier) = self.credentials(account)?;
        let body = refund_body(account, refund).to_string();
        let call = self.call(Method::POST, "/v3/refund/domestic/refunds".into(), "/v3/refund/domestic/refunds", Some(body), &verifier);
        let answer: RefundAnswer = parse(&self.send(account, &signer, call).await?, "refund")?;
        answer.into_report().map_err(|e| PayPlatformError::Unavailable(format!("the pay platform sent an unreadable refund: {e}")))
    }

    async fn query_refund(&self, account: &MerchantAccount, out_refund_no: &str) -> PayResult<PlatformRefund> {
        let (signer, verifier) = self.credentials(account)?;
        let path = format!("/v3/refund/domestic/refunds/{}{}", segment(out_refund_no), sub_mchid_param(account, true));
        let call = self.call(Method::GET, path, "/v3/refund/domestic/refunds/{out_refund_no}", None, &verifier);
        let answer: RefundAnswer = parse(&self.send(account, &signer, call).await?, "refund")?;
        answer.into_report().map_err(|e| PayPlatformError::Unavailable(format!("the pay platform sent an unreadable refund: {e}")))
    }

    async fn max_ratio(&self, account: &MerchantAccount) -> PayResult<u32> {
        let sub = sharing_sub(account, "a profit-sharing ratio")?;
        let (signer, verifier) = self.credentials(account)?;
        let path = format!("/v3/profitsharing/merchant-configs/{}", segment(&sub.sub_mchid));
        let call = self.call(Method::GET, path, "/v3/profitsharing/merchant-configs/{sub_mchid}", None, &verifier);
        let answer: MaxRatioAnswer = parse(&self.send(account, &signer, call).await?, "profit-sharing configuration")?;
        Ok(answer.max_ratio)
    }

    async fn add_receiver(&self, account: &MerchantAccount, receiver: &ReceiverAdd) -> PayResult<()> {
        let sub = sharing_sub(account, "a profit-sharing receiver")?;
        let (signer, verifier) = self.credentials(account)?;
        let kind: &'static str = receiver.receiver.kind.into();
        let relation: &'static str = receiver.relation.into();
        let mut body = json!({
            "sub_mchid": sub.sub_mchid,
            "appid": account.appid,
            "type": kind,
            "account": receiver.receiver.account,
            "relation_type": relation,
        });
        // The name goes encrypted under the platform's (first) key, which the request names.
        let mut serial = None;
        if let Some(name) = &receiver.receiver.name {
            let platform = account
                .platform_keys
                .first()
                .ok_or_else(|| PayPlatformError::Credentials("no platform key to encrypt the receiver's name under".into()))?;
            let key = verifier
                .key(&platform.id)
                .ok_or_else(|| PayPlatformError::Credentials(format!("platform key {} is not readable", platform.id)))?;
            body["name"] = json!(sign::encrypt_sensitive(key, name).map_err(PayPlatformError::Credentials)?);
            serial = Some(platform.id.clone());
        }
        let path = "/v3/profitsharing/receivers/add";
        let mut call = self.call(Method::POST, path.into(), path, Some(body.to_string()), &verifier);
        call.serial = serial;
        self.send(account, &signer, call).await.map(|_| ())
    }

    async fn share(&self, account: &MerchantAccount, order: &ShareOrder) -> PayResult<PlatformShareOrder> {
        let sub = sharing_sub(account, "a profit-sharing request")?;
        let (signer, verifier) = self.credentials(account)?;
        let body = share_body(account, sub, order).to_string();
        let call = self.call(Method::POST, "/v3/profitsharing/orders".into(), "/v3/profitsharing/orders", Some(body), &verifier);
        share_report(&self.send(account, &signer, call).await?)
    }

    async fn query_share(&self, account: &MerchantAccount, transaction_id: &str, out_order_no: &str) -> PayResult<PlatformShareOrder> {
        let sub = sharing_sub(account, "a profit-sharing request")?;
        let (signer, verifier) = self.credentials(account)?;
        let path = format!(
            "/v3/profitsharing/orders/{}?sub_mchid={}&transaction_id={}",
            segment(out_order_no),
            segment(&sub.sub_mchid),
            segment(transaction_id)
        );
        let call = self.call(Method::GET, path, "/v3/profitsharing/orders/{out_order_no}", None, &verifier);
        share_report(&self.send(account, &signer, call).await?)
    }

    async fn unfreeze(&self, account: &MerchantAccount, order: &UnfreezeOrder) -> PayResult<PlatformShareOrder> {
        let sub = sharing_sub(account, "an unfreeze request")?;
        let (signer, verifier) = self.credentials(account)?;
        let body = json!({
            "sub_mchid": sub.sub_mchid,
            "transaction_id": order.transaction_id,
            "out_order_no": order.out_order_no,
            "description": order.description,
        })
        .to_string();
        let path = "/v3/profitsharing/orders/unfreeze";
        let call = self.call(Method::POST, path.into(), path, Some(body), &verifier);
        share_report(&self.send(account, &signer, call).await?)
    }

    async fn return_share(&self, account: &MerchantAccount, order: &ReturnOrder) -> PayResult<PlatformReturn> {
        let sub = sharing_sub(account, "a profit-sharing return")?;
        let (signer, verifier) = self.credentials(account)?;
        let body = return_body(sub, order).to_string();
        let path = "/v3/profitsharing/return-orders";
        let call = self.call(Method::POST, path.into(), path, Some(body), &verifier);
        return_report(&self.send(account, &signer, call).await?)
    }

    async fn query_return(&self, account: &MerchantAccount, out_order_no: &str, out_return_no: &str) -> PayResult<PlatformReturn> {
        let sub = sharing_sub(account, "a profit-sharing return")?;
        let (signer, verifier) = self.credentials(account)?;
        let path = format!(
            "/v3/profitsharing/return-orders/{}?sub_mchid={}&out_order_no={}",
            segment(out_return_no),
            segment(&sub.sub_mchid),
            segment(out_order_no)
        );
        let call = self.call(Method::GET, path, "/v3/profitsharing/return-orders/{out_return_no}", None, &verifier);
        return_report(&self.send(account, &signer, call).await?)
    }

    async fn trade_bill(&self, account: &MerchantAccount, date: BillDate) -> PayResult<Vec<BillLine>> {
        let (signer, verifier) = self.credentials(account)?;
        let path = format!("/v3/bill/tradebill?bill_date={}{}&bill_type=ALL", date.format("%Y-%m-%d"), sub_mchid_param(account, false));
        let call = self.call(Method::GET, path, "/v3/bill/tradebill", None, &verifier);
        let answer: BillAnswer = match self.send(account, &signer, call).await {
            Ok(body) => parse(&body, "bill answer")?,
            Err(PayPlatformError::Refused { code, .. }) if code == "NO_STATEMENT_EXIST" => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        self.download_bill(account, &signer, answer).await
    }

    fn open_notification(
        &self,
        account: &MerchantAccount,
        request: &NotificationRequest,
        now: Timestamp,
    ) -> Result<PayEvent, NotificationError> {
        let verifier = self.verifiers.get(account).map_err(|why| notify::not_configured(account, &why))?;
        notify::open_with(&verifier, account, request, now.timestamp())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_numbers_are_percent_encoded_in_paths() {
        assert_eq!(segment("R|1*2@3_-.~"), "R%7C1%2A2%403_-.~");
        assert_eq!(segment("T0000001"), "T0000001");
    }

    fn account_with(private_key: String) -> MerchantAccount {
        MerchantAccount {
            mchid: "1900000109".into(),
            appid: "wx_mp".into(),
            serial_no: "SERIAL".into(),
            private_key: atrium_kernel::Secret::new(private_key),
            api_v3_key: atrium_kernel::Secret::new("k".repeat(32)),
            platform_keys: vec![],
            sub_merchant: None,
        }
    }

    #[test]
    fn a_merchant_key_is_read_once_and_a_rotated_key_is_read_anew() {
        let signers = Kept::<MerchantSigner>::default();
        let pem = include_str!("../../tests/fixtures/pay/merchant_key.pem").to_owned();
        let rotated = openssl::rsa::Rsa::generate(2048).and_then(|k| k.private_key_to_pem()).map(String::from_utf8).unwrap().unwrap();

        let first = signers.get(&account_with(pem.clone())).unwrap();
        let again = signers.get(&account_with(pem.clone())).unwrap();
        let other = signers.get(&account_with(rotated)).unwrap();
        let broken = signers.get(&account_with("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----".into()));

        assert!(Arc::ptr_eq(&first, &again), "the same key is read once");
        assert!(!Arc::ptr_eq(&first, &other), "a rotated key is a key of its own");
        assert_ne!(first.sign("message").unwrap(), other.sign("message").unwrap());
        assert_eq!(first.sign("message").unwrap(), MerchantSigner::from_pem(&pem).unwrap().sign("message").unwrap());
        assert_eq!(broken.err().as_deref(), Some("the merchant private key is not a readable PEM key"), "still refused, and not kept");
        assert_eq!(signers.0.lock().unwrap().len(), 2);
    }

    #[test]
    fn the_platform_keys_are_read_once_per_set() {
        let verifiers = Kept::<PlatformVerifier>::default();
        let public = include_str!("../../tests/fixtures/pay/platform_public.pem").to_owned();
        let key = |id: &str, pem: &str| atrium_payments::PlatformKey { id: id.into(), pem: pem.into() };
        let with = |keys: Vec<atrium_payments::PlatformKey>| MerchantAccount { platform_keys: keys, ..account_with(String::new()) };

        let first = verifiers.get(&with(vec![key("PUB_KEY_ID_1", &public)])).unwrap();
        let again = verifiers.get(&with(vec![key("PUB_KEY_ID_1", &public)])).unwrap();
        let renamed = verifiers.get(&with(vec![key("PUB_KEY_ID_2", &public)])).unwrap();
        let two = verifiers.get(&with(vec![key("PUB_KEY_ID_1", &public), key("PUB_KEY_ID_2", &public)])).unwrap();
        let broken = verifiers.get(&with(vec![key("PUB_KEY_ID_1", "not a key")]));

        assert!(Arc::ptr_eq(&first, &again), "the same keys are read once");
        assert!(!Arc::ptr_eq(&first, &renamed) && !Arc::ptr_eq(&first, &two), "another set of keys is read anew");
        assert_eq!(
            broken.err().as_deref(),
            Some("platform key PUB_KEY_ID_1 is not a readable PEM key or certificate"),
            "still refused, and not kept"
        );
        assert_eq!(verifiers.0.lock().unwrap().len(), 3);
    }

    #[test]
    fn time_expire_is_written_in_china_standard_time() {
        let t = chrono::DateTime::from_timestamp(1_775_016_000, 0).unwrap();
        assert_eq!(cst(t), "2026-04-01T12:00:00+08:00");
    }
}
