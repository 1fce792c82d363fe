//! Notifications: built under the lock (resource encrypted with the merchant's APIv3 key, the
//! provider's for a sub-merchant's order, refund or share), then posted to the notify URL, signed
//! with the platform key at each attempt. A failed attempt (no answer within 5 s, or not 2xx)
//! is retried in the background after each of the retry delays. `notify-fail` makes the next
//! notifications go twice and out of order: each one's copy is held back and sent right after
//! the next notification, or after [`HOLD_DUPLICATE`] when none follows.
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Value, json};
use std::time::Duration;

use super::keys::{self, ALNUM};
use super::{DEFAULT_RETRY_DELAYS, PaymentResult, RefundResult, SettleReport, platform_time, refund_json, transaction_json};
use crate::platform::{Sandbox, random_hex};
use atrium_payments::{PayParams, TradeState};

const KEEP_NOTIFICATIONS: usize = 10_000;
/// How long a duplicate waits for a next notification to overtake it.
pub const HOLD_DUPLICATE: Duration = Duration::from_secs(1);
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(5);

/// One attempt to deliver a notification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotifyAttempt {
    pub at: DateTime<Utc>,
    /// The receiver's HTTP status, if it answered.
    pub status: Option<u16>,
    /// Why there was no answer (time-out, connection refused).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A notification the sandbox sent (or is sending): `GET {prefix}/control/notifications` and
/// [`Sandbox::pay_notifications`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PayNotification {
    /// Order of creation; a duplicate has its own.
    pub seq: u64,
    /// The event id: a duplicate carries the same one.
    pub id: String,
    /// `TRANSACTION.SUCCESS`, `REFUND.SUCCESS`, `REFUND.ABNORMAL`, `REFUND.CLOSED`,
    /// `PROFITSHARING.SUCCESS` or `PROFITSHARING.CLOSED`.
    pub event_type: String,
    /// The merchant or sub-merchant whose order it is about.
    pub mchid: String,
    /// The order (the payment), also for a refund's or a share's notification.
    pub out_trade_no: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out_refund_no: Option<String>,
    /// The share request, for a `PROFITSHARING.*` notification.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out_order_no: Option<String>,
    pub notify_url: String,
    /// The held-back copy of a notification sent twice.
    pub duplicate: bool,
    /// The body as posted.
    pub body: String,
    /// The resource before encryption.
    pub resource: Value,
    pub attempts: Vec<NotifyAttempt>,
    /// Whether an attempt got a 2xx answer.
    pub delivered: bool,
    /// Never sent (`notify-lose`): a notification lost on the way.
    pub lost: bool,
    pub created_at: DateTime<Utc>,
}

/// A notification ready to post: its `Wechatpay-*` header values and body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SignedNotification {
    pub url: String,
    pub timestamp: String,
    pub nonce: String,
    pub signature: String,
    pub serial: String,
    pub body: String,
}

pub(crate) struct NotifyState {
    records: Vec<PayNotification>,
    next_seq: u64,
    fail_next: u32,
    /// How many of the next notifications are lost (never sent).
    lose_next: u32,
    /// Seqs of duplicates waiting to be sent after the next notification.
    held: Vec<u64>,
    retry_delays: Vec<Duration>,
}

impl Default for NotifyState {
    fn default() -> Self {
        NotifyState {
            records: Vec::new(),
            next_seq: 0,
            fail_next: 0,
            lose_next: 0,
            held: Vec::new(),
            retry_delays: DEFAULT_RETRY_DELAYS.to_vec(),
        }
    }
}

impl NotifyState {
    fn record(&mut self, seq: u64) -> Option<&mut PayNotification> {
        self.records.iter_mut().rev().find(|r| r.seq == seq)
    }

    pub(super) fn push(&mut self, mut record: PayNotification) -> u64 {
        self.next_seq += 1;
        record.seq = self.next_seq;
        if self.records.len() >= KEEP_NOTIFICATIONS {
            self.records.drain(..KEEP_NOTIFICATIONS / 2);
        }
        self.records.push(record);
        self.next_seq
    }
}

/// What a notification is about.
pub(super) struct Event<'a> {
    pub(super) event_type: String,
    pub(super) summary: &'static str,
    /// The resource's `original_type`, also its `associated_data`.
    pub(super) original_type: &'static str,
    pub(super) mchid: &'a str,
    pub(super) out_trade_no: &'a str,
    pub(super) out_refund_no: Option<&'a str>,
    pub(super) out_order_no: Option<&'a str>,
    pub(super) notify_url: &'a str,
    /// The resource before encryption.
    pub(super) resource: Value,
}

/// A notification body: the resource sealed with `api_v3_key`.
pub(super) fn build(event: Event<'_>, api_v3_key: &str) -> Result<PayNotification, String> {
    let nonce = keys::random_chars(12, ALNUM);
    let plaintext = event.resource.to_string();
    let ciphertext = keys::encrypt_resource(api_v3_key.as_bytes(), nonce.as_bytes(), event.original_type.as_bytes(), plaintext.as_bytes())?;
    let h = random_hex(16);
    let id = format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..]);
    let now = Utc::now();
    let body = json!({
        "id": id,
        "create_time": platform_time(now),
        "resource_type": "encrypt-resource",
        "event_type": event.event_type,
        "summary": event.summary,
        "resource": {
            "original_type": event.original_type,
            "algorithm": "AEAD_AES_256_GCM",
            "ciphertext": ciphertext,
            "associated_data": event.original_type,
            "nonce": nonce,
        },
    });
    Ok(PayNotification {
        seq: 0,
        id,
        event_type: event.event_type,
        mchid: event.mchid.to_owned(),
        out_trade_no: event.out_trade_no.to_owned(),
        out_refund_no: event.out_refund_no.map(str::to_owned),
        out_order_no: event.out_order_no.map(str::to_owned),
        notify_url: event.notify_url.to_owned(),
        duplicate: false,
        body: body.to_string(),
        resource: event.resource,
        attempts: Vec::new(),
        delivered: false,
        lost: false,
        created_at: now,
    })
}

impl Sandbox {
    /// The payer pays order `out_trade_no` (of `mchid`, a merchant or a sub-merchant, needed
    /// only when several use that number): `SUCCESS` (from `NOTPAY` or `PAYERROR`) sends a
    /// `TRANSACTION.SUCCESS` notification, whose first attempt is made before this returns;
    /// `PAYERROR` sends none, as on the platform. A paid, closed or expired order cannot be paid.
    pub async fn pay_order(&self, mchid: Option<&str>, out_trade_no: &str, result: PaymentResult) -> Result<SettleReport, String> {
        self.pay_order_at(mchid, out_trade_no, result, None).await
    }

    /// As [`Sandbox::pay_order`], with the payment dated `paid_at` (now when `None`): a
    /// payment of an earlier day, for its trade bill.
    pub async fn pay_order_at(
        &self,
        mchid: Option<&str>,
        out_trade_no: &str,
        result: PaymentResult,
        paid_at: Option<DateTime<Utc>>,
    ) -> Result<SettleReport, String> {
        let (mut report, seq) = {
            let mut state = self.lock();
            let pay = &mut state.pay;
            let key = pay.find_order(mchid, out_trade_no)?;
            let id = pay.next();
            let api_v3_key = pay.api_v3_key(&key.0);
            let order = pay.orders.get_mut(&key).ok_or_else(|| format!("no order {out_trade_no}"))?;
            match order.state {
                TradeState::NotPay | TradeState::PayError | TradeState::UserPaying => {}
                TradeState::Success | TradeState::Refund => return Err(format!("order {out_trade_no} is already paid")),
                TradeState::Closed | TradeState::Revoked => return Err(format!("order {out_trade_no} is closed")),
            }
            if let Some(expired) = order.time_expire.filter(|t| *t <= Utc::now()) {
                return Err(format!("order {out_trade_no} expired at {}", platform_time(expired)));
            }
            let now = paid_at.unwrap_or_else(Utc::now);
            let event = match result {
                PaymentResult::PayError => {
                    order.state = TradeState::PayError;
                    None
                }
                PaymentResult::Success => {
                    order.state = TradeState::Success;
                    order.transaction_id = Some(format!("4200{}{id:016}", now.with_timezone(&super::cst()).format("%Y%m%d")));
                    order.success_time = Some(now);
                    Some(Event {
                        event_type: "TRANSACTION.SUCCESS".into(),
                        summary: "支付成功",
                        original_type: "transaction",
                        mchid: &key.0,
                        out_trade_no,
                        out_refund_no: None,
                        out_order_no: None,
                        notify_url: &order.notify_url,
                        resource: transaction_json(order),
                    })
                }
            };
            let report = SettleReport {
                mchid: key.0.clone(),
                out_trade_no: out_trade_no.to_owned(),
                out_refund_no: None,
                trade_state: <&str>::from(order.state).to_owned(),
                refund_status: None,
                transaction_id: order.transaction_id.clone(),
                notification: None,
            };
            let seq = match event {
                Some(event) => Some(pay.notify.push(build(event, &api_v3_key)?)),
                None => None,
            };
            log::info!("sandbox pay platform: order {out_trade_no} of {} is {}", report.mchid, report.trade_state);
            (report, seq)
        };
        if let Some(seq) = seq {
            report.notification = self.dispatch(seq).await;
        }
        Ok(report)
    }

    /// `count` signed `TRANSACTION.SUCCESS` notifications of paid order `out_trade_no`, each
    /// with its own event id, built and signed now but not sent: what a load test replays
    /// against the notify URL (`POST {prefix}/control/notify-requests`).
    pub fn signed_notifications(&self, mchid: Option<&str>, out_trade_no: &str, count: usize) -> Result<Vec<SignedNotification>, String> {
        let events = {
            let state = self.lock();
            let pay = &state.pay;
            let key = pay.find_order(mchid, out_trade_no)?;
            let api_v3_key = pay.api_v3_key(&key.0);
            let order = pay.orders.get(&key).ok_or_else(|| format!("no order {out_trade_no}"))?;
            if order.state != TradeState::Success {
                return Err(format!("order {out_trade_no} is not paid"));
            }
            let mut events = Vec::with_capacity(count);
            for _ in 0..count {
                events.push(build(
                    Event {
                        event_type: "TRANSACTION.SUCCESS".into(),
                        summary: "支付成功",
                        original_type: "transaction",
                        mchid: &key.0,
                        out_trade_no,
                        out_refund_no: None,
                        out_order_no: None,
                        notify_url: &order.notify_url,
                        resource: transaction_json(order),
                    },
                    &api_v3_key,
                )?);
            }
            events
        };
        let keys = self.platform_keys()?;
        let ts = Utc::now().timestamp().to_string();
        events
            .into_iter()
            .map(|n| {
                let nonce = random_hex(16).to_uppercase();
                let signature = keys.sign_answer(&ts, &nonce, n.body.as_bytes())?;
                Ok(SignedNotification { url: n.notify_url, timestamp: ts.clone(), nonce, signature, serial: keys.id.clone(), body: n.body })
            })
            .collect()
    }

    /// The payer pays with what the mini-program got for `wx.requestPayment`, checked as the
    /// payer's app checks it: the package names a known prepay id, the app id is the one the
    /// payer pays in (a sub-merchant order's `sub_appid` when it named one, else the order's
    /// appid or `sp_appid`), `signType` is `RSA` and `paySign` verifies with the certificate
    /// of the merchant that placed the order (a sub-merchant order's provider). Then as
    /// [`Sandbox::pay_order`].
    pub async fn pay_with_params(&self, params: &PayParams, result: PaymentResult) -> Result<SettleReport, String> {
        let (mchid, out_trade_no) = self.check_pay_params(params)?;
        self.pay_order(Some(&mchid), &out_trade_no, result).await
    }

    /// The order `params` pay for, if they are what the platform accepts.
    pub fn check_pay_params(&self, params: &PayParams) -> Result<(String, String), String> {
        let prepay_id = params.package.strip_prefix("prepay_id=").ok_or("package must be prepay_id=…")?;
        if params.sign_type != "RSA" {
            return Err("signType must be RSA".into());
        }
        let state = self.lock();
        let order = state.pay.orders.values().find(|o| o.prepay_id == prepay_id).ok_or("no order has this prepay_id")?;
        if order.payer_appid() != params.app_id {
            return Err("appId is not the order's".into());
        }
        // A sub-merchant's order is signed for by its provider.
        let merchant = state.pay.merchants.get(order.signer()).ok_or("the order's merchant is gone")?;
        if !keys::verify_pay_sign(
            &merchant.public_key,
            &params.app_id,
            &params.time_stamp,
            &params.nonce_str,
            &params.package,
            &params.pay_sign,
        ) {
            return Err("paySign does not verify with the merchant certificate".into());
        }
        Ok((order.mchid.clone(), order.out_trade_no.clone()))
    }

    /// Refund `out_refund_no` (of `mchid`, a merchant or a sub-merchant, needed only when
    /// several use that number) settles from `PROCESSING`; a `REFUND.SUCCESS`,
    /// `REFUND.ABNORMAL` or `REFUND.CLOSED` notification follows, its first attempt made before
    /// this returns. A closed refund frees
    /// its amount for other refunds.
    pub async fn settle_refund(&self, mchid: Option<&str>, out_refund_no: &str, result: RefundResult) -> Result<SettleReport, String> {
        let (mut report, seq) = {
            let mut state = self.lock();
            let pay = &mut state.pay;
            let key = pay.find_refund(mchid, out_refund_no)?;
            let api_v3_key = pay.api_v3_key(&key.0);
            let refund = pay.refunds.get_mut(&key).ok_or_else(|| format!("no refund {out_refund_no}"))?;
            if refund.status != "PROCESSING" {
                return Err(format!("refund {out_refund_no} is already {}", refund.status));
            }
            refund.status = result.status();
            if result == RefundResult::Success {
                refund.success_time = Some(Utc::now());
            }
            let refund = refund.clone();
            let order = pay.orders.get(&(key.0.clone(), refund.out_trade_no.clone())).ok_or("the refund's order is gone")?;
            let full = refund_json(&refund, order);
            let mut resource = json!({
                "mchid": refund.mchid,
                "out_trade_no": refund.out_trade_no,
                "transaction_id": full["transaction_id"],
                "out_refund_no": refund.out_refund_no,
                "refund_id": refund.refund_id,
                "refund_status": refund.status,
                "user_received_account": full["user_received_account"],
                "amount": {"total": order.paid(), "refund": refund.amount, "payer_total": order.paid(), "payer_refund": refund.amount},
            });
            if let Some(at) = refund.success_time {
                resource["success_time"] = json!(platform_time(at));
            }
            if let (Some(sp_mchid), Some(map)) = (&order.sp_mchid, resource.as_object_mut()) {
                // The partner shape: the provider and the sub-merchant instead of `mchid`.
                map.remove("mchid");
                map.insert("sp_mchid".into(), json!(sp_mchid));
                map.insert("sub_mchid".into(), json!(order.mchid));
            }
            let event = Event {
                event_type: format!("REFUND.{}", refund.status),
                summary: match result {
                    RefundResult::Success => "退款成功",
                    RefundResult::Abnormal => "退款异常",
                    RefundResult::Closed => "退款关闭",
                },
                original_type: "refund",
                mchid: &key.0,
                out_trade_no: &refund.out_trade_no,
                out_refund_no: Some(out_refund_no),
                out_order_no: None,
                notify_url: &refund.notify_url,
                resource,
            };
            let notification = build(event, &api_v3_key)?;
            let report = SettleReport {
                mchid: key.0.clone(),
                out_trade_no: refund.out_trade_no.clone(),
                out_refund_no: Some(out_refund_no.to_owned()),
                trade_state: <&str>::from(order.state).to_owned(),
                refund_status: Some(refund.status.to_owned()),
                transaction_id: order.transaction_id.clone(),
                notification: None,
            };
            log::info!("sandbox pay platform: refund {out_refund_no} of {} is {}", report.mchid, refund.status);
            (report, pay.notify.push(notification))
        };
        report.notification = self.dispatch(seq).await;
        Ok(report)
    }

    /// The next `times` notifications are each sent twice, the copy out of order (after the
    /// notification that follows, or [`HOLD_DUPLICATE`] later).
    pub fn fail_next_notifications(&self, times: u32) {
        self.lock().pay.notify.fail_next = times;
    }

    /// The next `times` notifications are lost: recorded (`lost: true`) but never sent, so
    /// only a query or the reconciliation can tell the merchant about them.
    pub fn lose_next_notifications(&self, times: u32) {
        self.lock().pay.notify.lose_next = times;
    }

    /// The waits before the retries of a failed notification attempt (default 1 s, 3 s, 10 s:
    /// three retries).
    pub fn set_notify_retry_delays(&self, delays: Vec<Duration>) {
        self.lock().pay.notify.retry_delays = delays;
    }

    /// Notifications sent or being sent for order `out_trade_no` (all when `None`), oldest
    /// first, duplicates included.
    pub fn pay_notifications(&self, out_trade_no: Option<&str>) -> Vec<PayNotification> {
        let state = self.lock();
        state.pay.notify.records.iter().filter(|r| out_trade_no.is_none_or(|no| r.out_trade_no == no)).cloned().collect()
    }

    /// Sends notification `seq` (first attempt awaited, retries in the background), then the
    /// duplicates held before it; holds its own copy if it is one of the "sent twice" ones.
    pub(super) async fn dispatch(&self, seq: u64) -> Option<PayNotification> {
        {
            let mut state = self.lock();
            let notify = &mut state.pay.notify;
            if notify.lose_next > 0 {
                notify.lose_next -= 1;
                let record = notify.record(seq)?;
                record.lost = true;
                log::info!("sandbox pay platform: notification {} is lost (notify-lose)", record.id);
                return Some(record.clone());
            }
        }
        let (held_before, copy) = {
            let mut state = self.lock();
            let notify = &mut state.pay.notify;
            let held_before = std::mem::take(&mut notify.held);
            let copy = if notify.fail_next > 0 {
                notify.fail_next -= 1;
                notify.record(seq).cloned().map(|mut r| {
                    r.duplicate = true;
                    r.attempts.clear();
                    r.delivered = false;
                    r.created_at = Utc::now();
                    notify.push(r)
                })
            } else {
                None
            };
            (held_before, copy)
        };
        self.deliver(seq).await;
        if let Some(copy) = copy {
            self.lock().pay.notify.held.push(copy);
            let sb = self.clone();
            tokio::spawn(async move {
                tokio::time::sleep(HOLD_DUPLICATE).await;
                let still_held = {
                    let mut state = sb.lock();
                    let held = &mut state.pay.notify.held;
                    let before = held.len();
                    held.retain(|s| *s != copy);
                    held.len() != before
                };
                if still_held {
                    sb.deliver(copy).await;
                }
            });
        }
        for held in held_before {
            self.deliver(held).await;
        }
        self.lock().pay.notify.record(seq).cloned()
    }

    /// One attempt now; if it fails, the retries in the background.
    async fn deliver(&self, seq: u64) {
        if self.attempt(seq).await {
            return;
        }
        let sb = self.clone();
        tokio::spawn(async move {
            let delays = sb.lock().pay.notify.retry_delays.clone();
            for delay in delays {
                tokio::time::sleep(delay).await;
                if sb.attempt(seq).await {
                    return;
                }
            }
            log::warn!("sandbox pay platform gave up notification {seq}");
        });
    }

    /// Posts notification `seq`, freshly signed; records the attempt; whether it got a 2xx.
    async fn attempt(&self, seq: u64) -> bool {
        let Some((url, body)) = self.lock().pay.notify.record(seq).map(|r| (r.notify_url.clone(), r.body.clone())) else { return false };
        let ts = Utc::now().timestamp().to_string();
        let nonce = random_hex(16).to_uppercase();
        let outcome = match self.platform_keys().and_then(|k| Ok((k.sign_answer(&ts, &nonce, body.as_bytes())?, k.id.clone()))) {
            Err(e) => Err(e),
            Ok((signature, serial)) => self
                .http
                .post(&url)
                .timeout(ATTEMPT_TIMEOUT)
                .header("Content-Type", "application/json")
                .header("Wechatpay-Timestamp", ts)
                .header("Wechatpay-Nonce", nonce)
                .header("Wechatpay-Signature", signature)
                .header("Wechatpay-Serial", serial)
                .header("Wechatpay-Signature-Type", "WECHATPAY2-SHA256-RSA2048")
                .body(body)
                .send()
                .await
                .map(|r| r.status().as_u16())
                .map_err(|e| if e.is_timeout() { "timed out after 5 s".to_owned() } else { "could not connect".to_owned() }),
        };
        let ok = matches!(outcome, Ok(s) if (200..300).contains(&s));
        let mut state = self.lock();
        if let Some(record) = state.pay.notify.record(seq) {
            let (status, error) = match outcome {
                Ok(s) => (Some(s), None),
                Err(e) => (None, Some(e)),
            };
            let answered = match (status, &error) {
                (Some(s), _) => format!("answered {s}"),
                (None, Some(e)) => e.clone(),
                (None, None) => "no answer".to_owned(),
            };
            log::info!("sandbox pay platform notification {} {} to {}: {answered}", record.id, record.event_type, record.notify_url);
            record.attempts.push(NotifyAttempt { at: Utc::now(), status, error });
            record.delivered |= ok;
        }
        ok
    }
}
