//! The pay platform's control calls over HTTP; each has a Rust twin on [`Sandbox`].
use actix_web::{HttpResponse, web};
use atrium_payments::PayParams;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::json;
use std::time::Duration;

use super::{PaymentResult, RecordChange, RefundResult};
use crate::platform::{Sandbox, bad_control};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MerchantRequest {
    mchid: String,
    appid: String,
}

pub(crate) async fn control_merchant(sb: web::Data<Sandbox>, body: web::Json<MerchantRequest>) -> HttpResponse {
    // Key generation takes a moment: keep it off the worker's event loop.
    let sandbox = sb.get_ref().clone();
    let MerchantRequest { mchid, appid } = body.into_inner();
    match web::block(move || sandbox.register_merchant(&mchid, &appid)).await {
        Ok(Ok(merchant)) => HttpResponse::Ok().json(merchant),
        Ok(Err(msg)) => bad_control(msg),
        Err(_) => bad_control("merchant registration failed"),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SubMerchantRequest {
    sp_mchid: String,
    sub_mchid: String,
    sub_appid: Option<String>,
    max_ratio: Option<u32>,
}

/// `POST {prefix}/control/sub-merchant`: registers a sub-merchant of a registered merchant
/// ([`Sandbox::register_sub_merchant`]), and sets its `max_ratio` when one is given
/// ([`Sandbox::set_max_ratio`]).
pub(crate) async fn control_sub_merchant(sb: web::Data<Sandbox>, body: web::Bytes) -> HttpResponse {
    let takes = r#"sub-merchant takes {"sp_mchid", "sub_mchid", "sub_appid"?, "max_ratio"?}"#;
    let body: SubMerchantRequest = match control_body(&body, takes) {
        Ok(b) => b,
        Err(msg) => return bad_control(msg),
    };
    let registered = sb.register_sub_merchant(&body.sp_mchid, &body.sub_mchid, body.sub_appid.as_deref());
    let done = match (registered, body.max_ratio) {
        (Ok(_), Some(ratio)) => sb.set_max_ratio(&body.sub_mchid, ratio),
        (other, _) => other,
    };
    match done {
        Ok(sub) => HttpResponse::Ok().json(sub),
        Err(msg) => bad_control(msg),
    }
}

/// `wx.requestPayment`'s parameters as the mini-program passes them.
#[derive(Deserialize)]
pub(crate) struct PayParamsBody {
    #[serde(rename = "appId")]
    app_id: String,
    #[serde(rename = "timeStamp")]
    time_stamp: String,
    #[serde(rename = "nonceStr")]
    nonce_str: String,
    package: String,
    #[serde(rename = "signType")]
    sign_type: String,
    #[serde(rename = "paySign")]
    pay_sign: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PayRequest {
    out_trade_no: Option<String>,
    mchid: Option<String>,
    result: PaymentResult,
    pay_params: Option<PayParamsBody>,
    /// When the payment happened (RFC 3339; now when absent): a payment of an earlier day,
    /// for its trade bill.
    paid_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Fen the platform then reports paid instead of the order's amount — a misbehaving or
    /// forged answer, signed like any other, to exercise "paid means paid in full".
    reported_total: Option<i64>,
    /// The payment goes through although the order was closed: the close raced the payer on
    /// the platform's side and lost — a closed order reported paid.
    #[serde(default)]
    after_close: bool,
}

pub(crate) async fn control_pay(sb: web::Data<Sandbox>, body: web::Json<PayRequest>) -> HttpResponse {
    let body = body.into_inner();
    let (mchid, out_trade_no) = match (body.pay_params, body.out_trade_no) {
        (Some(p), named) => {
            let params = PayParams {
                app_id: p.app_id,
                time_stamp: p.time_stamp,
                nonce_str: p.nonce_str,
                package: p.package,
                sign_type: p.sign_type,
                pay_sign: p.pay_sign,
            };
            match sb.check_pay_params(&params) {
                Ok((m, no)) if named.as_ref().is_none_or(|n| *n == no) && body.mchid.as_ref().is_none_or(|w| *w == m) => (Some(m), no),
                Ok(_) => return bad_control("pay_params are for another order"),
                Err(msg) => return bad_control(msg),
            }
        }
        (None, Some(no)) => (body.mchid, no),
        (None, None) => return bad_control("name the order: out_trade_no or pay_params"),
    };
    if let Some(total) = body.reported_total {
        if total < 0 {
            return bad_control("reported_total must be at least 0");
        }
        if let Err(msg) = sb.lock().pay.report_total(mchid.as_deref(), &out_trade_no, total) {
            return bad_control(msg);
        }
    }
    if body.after_close
        && let Err(msg) = sb.lock().pay.reopen(mchid.as_deref(), &out_trade_no)
    {
        return bad_control(msg);
    }
    match sb.pay_order_at(mchid.as_deref(), &out_trade_no, body.result, body.paid_at).await {
        Ok(report) => HttpResponse::Ok().json(report),
        Err(msg) => bad_control(msg),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RefundRequest {
    out_refund_no: String,
    mchid: Option<String>,
    result: RefundResult,
}

pub(crate) async fn control_refund(sb: web::Data<Sandbox>, body: web::Json<RefundRequest>) -> HttpResponse {
    match sb.settle_refund(body.mchid.as_deref(), &body.out_refund_no, body.result).await {
        Ok(report) => HttpResponse::Ok().json(report),
        Err(msg) => bad_control(msg),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NotifyFailRequest {
    times: u32,
}

pub(crate) async fn control_notify_fail(sb: web::Data<Sandbox>, body: web::Json<NotifyFailRequest>) -> HttpResponse {
    sb.fail_next_notifications(body.times);
    HttpResponse::Ok().json(json!({"times": body.times}))
}

pub(crate) async fn control_notify_lose(sb: web::Data<Sandbox>, body: web::Json<NotifyFailRequest>) -> HttpResponse {
    sb.lose_next_notifications(body.times);
    HttpResponse::Ok().json(json!({"times": body.times}))
}

/// A control call's JSON body; read by hand so that a wrong type or an unknown field is a
/// 400 with a JSON message like every other refusal, not the framework's plain text. serde
/// does not always name the field, so the message shows what the call takes.
fn control_body<T: DeserializeOwned>(body: &[u8], takes: &str) -> Result<T, String> {
    serde_json::from_slice(body).map_err(|e| format!("{takes}: {e}"))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PayFailRequest {
    path: String,
    status: u16,
    code: Option<String>,
    times: Option<u32>,
    /// Carry the call out first, then answer the failure: the answer is lost, not the call.
    #[serde(default)]
    after: bool,
}

pub(crate) async fn control_pay_fail(sb: web::Data<Sandbox>, body: web::Bytes) -> HttpResponse {
    let takes = r#"pay-fail takes {"path", "status": 400 to 599, "code"?, "times"?: 0 to 4294967295, "after"?: bool}"#;
    let body: PayFailRequest = match control_body(&body, takes) {
        Ok(b) => b,
        Err(msg) => return bad_control(msg),
    };
    let times = body.times.unwrap_or(1);
    let code = body.code.clone().unwrap_or_else(|| if body.status >= 500 { "SYSTEM_ERROR".into() } else { "INVALID_REQUEST".into() });
    let injected = if body.after {
        sb.lose_next_pay_answers(&body.path, body.status, &code, times)
    } else {
        sb.fail_next_pay_call(&body.path, body.status, &code, times)
    };
    match injected {
        Ok(()) => {
            HttpResponse::Ok().json(json!({"path": body.path, "status": body.status, "code": code, "times": times, "after": body.after}))
        }
        Err(msg) => bad_control(msg),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PayDelayRequest {
    path: String,
    delay_ms: u64,
    times: Option<u32>,
}

pub(crate) async fn control_pay_delay(sb: web::Data<Sandbox>, body: web::Bytes) -> HttpResponse {
    let takes = r#"pay-delay takes {"path", "delay_ms": 0 to 30000, "times"?: 0 to 4294967295}"#;
    let body: PayDelayRequest = match control_body(&body, takes) {
        Ok(b) => b,
        Err(msg) => return bad_control(msg),
    };
    let times = body.times.unwrap_or(1);
    match sb.delay_next_pay_answers(&body.path, Duration::from_millis(body.delay_ms), times) {
        Ok(()) => HttpResponse::Ok().json(json!({"path": body.path, "delay_ms": body.delay_ms, "times": times})),
        Err(msg) => bad_control(msg),
    }
}

#[derive(Deserialize)]
pub(crate) struct NotificationsQuery {
    out_trade_no: Option<String>,
}

pub(crate) async fn control_notifications(sb: web::Data<Sandbox>, q: web::Query<NotificationsQuery>) -> HttpResponse {
    HttpResponse::Ok().json(json!({"notifications": sb.pay_notifications(q.out_trade_no.as_deref())}))
}

#[derive(Deserialize)]
pub(crate) struct TradeQuery {
    out_trade_no: String,
    /// The merchant or sub-merchant, when several use the number.
    mchid: Option<String>,
}

/// `GET /sandbox/control/trade?out_trade_no=&mchid=?`: what the platform holds of an order —
/// its state and total (`order` null when it never received it) and its refunds, oldest first:
/// what a test compares our books with. A sub-merchant's order also tells its `sub_mchid`,
/// `sp_mchid` and `profit_sharing`.
pub(crate) async fn control_trade(sb: web::Data<Sandbox>, q: web::Query<TradeQuery>) -> HttpResponse {
    let state = sb.lock();
    let wanted = |mchid: &str, no: &str| no == q.out_trade_no && q.mchid.as_deref().is_none_or(|m| m == mchid);
    let order = state.pay.orders.values().find(|o| wanted(&o.mchid, &o.out_trade_no)).map(|o| {
        let trade_state: &'static str = o.state.into();
        let mut order = json!({"out_trade_no": o.out_trade_no, "trade_state": trade_state, "total": o.total, "prepay_id": o.prepay_id});
        if let Some(sp_mchid) = &o.sp_mchid {
            order["sp_mchid"] = json!(sp_mchid);
            order["sub_mchid"] = json!(o.mchid);
            order["profit_sharing"] = json!(o.profit_sharing);
        }
        order
    });
    let mut refunds: Vec<&super::Refund> = state.pay.refunds.values().filter(|r| wanted(&r.mchid, &r.out_trade_no)).collect();
    refunds.sort_by_key(|r| r.created_at);
    let list: Vec<_> = refunds
        .iter()
        .map(|r| json!({"out_refund_no": r.out_refund_no, "refund_id": r.refund_id, "amount": r.amount, "status": r.status}))
        .collect();
    HttpResponse::Ok().json(json!({"order": order, "refunds": list}))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NotifyRequestsRequest {
    out_trade_no: String,
    mchid: Option<String>,
    count: usize,
}

/// At most this many notifications per call (each is signed with the platform key).
const MAX_NOTIFY_REQUESTS: usize = 50_000;

pub(crate) async fn control_notify_requests(sb: web::Data<Sandbox>, body: web::Json<NotifyRequestsRequest>) -> HttpResponse {
    if body.count > MAX_NOTIFY_REQUESTS {
        return bad_control(format!("count must be at most {MAX_NOTIFY_REQUESTS}"));
    }
    let sandbox = sb.get_ref().clone();
    let NotifyRequestsRequest { out_trade_no, mchid, count } = body.into_inner();
    match web::block(move || sandbox.signed_notifications(mchid.as_deref(), &out_trade_no, count)).await {
        Ok(Ok(list)) => HttpResponse::Ok().json(json!({"notifications": list})),
        Ok(Err(msg)) => bad_control(msg),
        Err(_) => bad_control("building the notifications failed"),
    }
}

/// `GET {prefix}/control/profitsharing?sub_mchid=&out_trade_no=`: what the platform holds of
/// the profit sharing of a sub-merchant's transaction ([`Sandbox::profit_sharing`]).
pub(crate) async fn control_profitsharing(
    sb: web::Data<Sandbox>,
    q: web::Query<std::collections::HashMap<String, String>>,
) -> HttpResponse {
    let (Some(sub_mchid), Some(out_trade_no)) = (q.get("sub_mchid"), q.get("out_trade_no")) else {
        return bad_control("profitsharing takes ?sub_mchid=&out_trade_no=");
    };
    match sb.profit_sharing(sub_mchid, out_trade_no) {
        Some(view) => HttpResponse::Ok().json(view),
        None => bad_control(format!("sub-merchant {sub_mchid} has no order {out_trade_no}")),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CloseNextShareRequest {
    account: String,
    fail_reason: String,
}

/// `POST {prefix}/control/profitsharing/close-next`: the next share line of `account` closes
/// with `fail_reason` ([`Sandbox::close_next_share`]).
pub(crate) async fn control_share_close_next(sb: web::Data<Sandbox>, body: web::Bytes) -> HttpResponse {
    let takes = r#"profitsharing/close-next takes {"account", "fail_reason"}"#;
    let body: CloseNextShareRequest = match control_body(&body, takes) {
        Ok(b) => b,
        Err(msg) => return bad_control(msg),
    };
    match sb.close_next_share(&body.account, &body.fail_reason) {
        Ok(()) => HttpResponse::Ok().json(json!({"account": body.account, "fail_reason": body.fail_reason})),
        Err(msg) => bad_control(msg),
    }
}

/// `POST {prefix}/control/profitsharing/return-fail-next`: the next return from merchant
/// `account` fails with `fail_reason` ([`Sandbox::fail_next_return`]).
pub(crate) async fn control_share_return_fail_next(sb: web::Data<Sandbox>, body: web::Bytes) -> HttpResponse {
    let takes = r#"profitsharing/return-fail-next takes {"account", "fail_reason"}"#;
    let body: CloseNextShareRequest = match control_body(&body, takes) {
        Ok(b) => b,
        Err(msg) => return bad_control(msg),
    };
    match sb.fail_next_return(&body.account, &body.fail_reason) {
        Ok(()) => HttpResponse::Ok().json(json!({"account": body.account, "fail_reason": body.fail_reason})),
        Err(msg) => bad_control(msg),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ShareTamperRequest {
    out_order_no: String,
    /// Whose request, when several sub-merchants have the number.
    sub_mchid: Option<String>,
    account: Option<String>,
    result: Option<String>,
    amount: Option<i64>,
    fail_reason: Option<String>,
    #[serde(default)]
    forget: bool,
}

/// `POST {prefix}/control/profitsharing/tamper`: `{"out_order_no", "sub_mchid"?, "account",
/// "result"?, "amount"?, "fail_reason"?}` changes the platform's record of that receiver's
/// line ([`Sandbox::tamper_share_line`]) and answers the request as its query now does;
/// `{"out_order_no", "sub_mchid"?, "forget": true}` makes the platform forget the request
/// ([`Sandbox::forget_share`]).
pub(crate) async fn control_share_tamper(sb: web::Data<Sandbox>, body: web::Bytes) -> HttpResponse {
    let takes = r#"profitsharing/tamper takes {"out_order_no", "sub_mchid"?, "account", "result"?: "PENDING" | "SUCCESS" | "CLOSED", "amount"?: fen, "fail_reason"?} or {"out_order_no", "sub_mchid"?, "forget": true}"#;
    let body: ShareTamperRequest = match control_body(&body, takes) {
        Ok(b) => b,
        Err(msg) => return bad_control(msg),
    };
    let change = RecordChange { result: body.result, amount: body.amount, fail_reason: body.fail_reason };
    let sub_mchid = body.sub_mchid.as_deref();
    let done = match (body.account, body.forget) {
        (Some(_), true) => Err("forget takes no account: it forgets the whole share request".to_owned()),
        (None, true) if change != RecordChange::default() => {
            Err("forget takes no result, amount or fail_reason: it forgets the whole share request".to_owned())
        }
        (None, true) => sb.forget_share(sub_mchid, &body.out_order_no),
        (Some(account), false) => sb.tamper_share_line(sub_mchid, &body.out_order_no, &account, &change),
        (None, false) => Err(format!("{takes}: name the line's account, or forget the request")),
    };
    match done {
        Ok(answer) => HttpResponse::Ok().json(answer),
        Err(msg) => bad_control(msg),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReturnTamperRequest {
    out_return_no: String,
    /// Whose return, when several sub-merchants have the number.
    sub_mchid: Option<String>,
    result: Option<String>,
    amount: Option<i64>,
    fail_reason: Option<String>,
}

/// `POST {prefix}/control/profitsharing/tamper-return`: `{"out_return_no", "sub_mchid"?,
/// "result"?, "amount"?, "fail_reason"?}` changes the platform's record of that return
/// ([`Sandbox::tamper_return`]) and answers it as its query now does.
pub(crate) async fn control_share_tamper_return(sb: web::Data<Sandbox>, body: web::Bytes) -> HttpResponse {
    let takes = r#"profitsharing/tamper-return takes {"out_return_no", "sub_mchid"?, "result"?: "PROCESSING" | "SUCCESS" | "FAILED", "amount"?: fen, "fail_reason"?}"#;
    let body: ReturnTamperRequest = match control_body(&body, takes) {
        Ok(b) => b,
        Err(msg) => return bad_control(msg),
    };
    let change = RecordChange { result: body.result, amount: body.amount, fail_reason: body.fail_reason };
    match sb.tamper_return(body.sub_mchid.as_deref(), &body.out_return_no, &change) {
        Ok(answer) => HttpResponse::Ok().json(answer),
        Err(msg) => bad_control(msg),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ShareRulesRequest {
    one_minute: Option<bool>,
    finish_after_ms: Option<u64>,
    notify: Option<bool>,
    returns_processing: Option<bool>,
}

/// `POST {prefix}/control/profitsharing/rules`: `{"one_minute"?, "finish_after_ms"?,
/// "notify"?, "returns_processing"?}` switches the one-minute rule
/// ([`Sandbox::set_share_one_minute_rule`]), sets how long after it was made a share request
/// finishes by itself ([`Sandbox::set_share_finish_after`]), switches the `PROFITSHARING.*`
/// notifications ([`Sandbox::set_share_notifications`]) and whether a new return answers
/// `PROCESSING` first ([`Sandbox::set_returns_processing`]); what is not given stays. Nothing
/// changes when one is refused. Answers the rules in force ([`Sandbox::share_rules`]).
pub(crate) async fn control_share_rules(sb: web::Data<Sandbox>, body: web::Bytes) -> HttpResponse {
    let takes =
        r#"profitsharing/rules takes {"one_minute"?: bool, "finish_after_ms"?: 0 to 60000, "notify"?: bool, "returns_processing"?: bool}"#;
    let body: ShareRulesRequest = match control_body(&body, takes) {
        Ok(b) => b,
        Err(msg) => return bad_control(msg),
    };
    // The one value that may be refused goes first: a refused call changes nothing.
    if let Some(ms) = body.finish_after_ms
        && let Err(msg) = sb.set_share_finish_after(Duration::from_millis(ms))
    {
        return bad_control(msg);
    }
    if let Some(on) = body.one_minute {
        sb.set_share_one_minute_rule(on);
    }
    if let Some(on) = body.notify {
        sb.set_share_notifications(on);
    }
    if let Some(on) = body.returns_processing {
        sb.set_returns_processing(on);
    }
    HttpResponse::Ok().json(sb.share_rules())
}
