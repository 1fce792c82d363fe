//! The real pay client against the sandbox's pay platform, mounted as the server mounts it
//! (`/sandbox`, so the client's base URL is `…/sandbox/pay`), with a loopback notify receiver
//! on the same test server playing our notification endpoint.
#![allow(clippy::unwrap_used)]

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use atrium_kernel::Money;
use atrium_payments::{
    BillTradeState, EventResource, JsapiOrder, MerchantAccount, NotificationRequest, PayPlatform, PayPlatformError, PlatformKey,
    PlatformShareOrder, ReceiverAdd, ReceiverResult, ReceiverType, RefundOrder, RefundStatus, Relation, ReturnOrder, ReturnResult, Secret,
    ShareLine, ShareOrder, ShareOrderState, SubMerchant, TradeState, UnfreezeOrder,
};
use atrium_sandbox::Sandbox;
use atrium_wechat::pay::sign::{MerchantSigner, PlatformVerifier, SignedHeaders, authorization, request_message};
use atrium_wechat::{CallRecorder, WechatPay, WechatPayConfig};
use serde_json::{Value, json};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const MCHID: &str = "1900000109";
const APPID: &str = "wx_sandbox_mp";
/// The test client's retries after a 5xx or a time-out.
const RETRIES: u32 = 2;
/// So each call reaches the platform this often when every attempt fails.
const ATTEMPTS: u32 = RETRIES + 1;

/// Our notification endpoint's stand-in: keeps what arrives, answers 500 while `fail` lasts.
#[derive(Default)]
struct Receiver {
    got: Mutex<Vec<NotificationRequest>>,
    fail: AtomicU32,
}

async fn receive(req: HttpRequest, body: web::Bytes, receiver: web::Data<Receiver>) -> HttpResponse {
    let h = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    if receiver.fail.load(Ordering::SeqCst) > 0 {
        receiver.fail.fetch_sub(1, Ordering::SeqCst);
        return HttpResponse::InternalServerError().json(json!({"code": "FAIL", "message": "try later"}));
    }
    receiver.got.lock().unwrap().push(NotificationRequest {
        timestamp: h("Wechatpay-Timestamp"),
        nonce: h("Wechatpay-Nonce"),
        signature: h("Wechatpay-Signature"),
        serial: h("Wechatpay-Serial"),
        body: body.to_vec(),
    });
    HttpResponse::NoContent().finish()
}

struct Env {
    sandbox: Sandbox,
    receiver: web::Data<Receiver>,
    /// `http://127.0.0.1:port`
    origin: String,
    http: reqwest::Client,
    handle: actix_web::dev::ServerHandle,
}

#[derive(Default)]
struct Recorder(Mutex<Vec<String>>);

impl CallRecorder for Recorder {
    fn record(&self, _endpoint: &str, errcode: &str, _elapsed: Duration) {
        self.0.lock().unwrap().push(errcode.to_owned());
    }
}

impl Env {
    async fn start() -> Env {
        let sandbox = Sandbox::new();
        let receiver = web::Data::new(Receiver::default());
        let (sb, rx) = (sandbox.clone(), receiver.clone());
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = HttpServer::new(move || {
            let sb = sb.clone();
            App::new()
                .app_data(rx.clone())
                .service(web::scope("/sandbox").configure(move |c| sb.configure(c)))
                .route("/api/v1/miniprogram/payment/notify/{tenant}", web::post().to(receive))
        })
        .workers(2)
        .disable_signals()
        .listen(listener)
        .unwrap()
        .run();
        let handle = server.handle();
        tokio::spawn(server);
        Env { sandbox, receiver, origin: format!("http://{addr}"), http: reqwest::Client::new(), handle }
    }

    fn client(&self) -> WechatPay {
        self.client_recording(Arc::new(Recorder::default()))
    }

    fn client_recording(&self, recorder: Arc<Recorder>) -> WechatPay {
        self.client_with_timeout(Duration::from_secs(5), recorder)
    }

    fn client_with_timeout(&self, timeout: Duration, recorder: Arc<Recorder>) -> WechatPay {
        let config = WechatPayConfig {
            base_url: format!("{}/sandbox/pay", self.origin),
            timeout,
            retries: RETRIES,
            backoff: Duration::from_millis(20),
        };
        WechatPay::new(config).unwrap().with_recorder(recorder)
    }

    fn notify_url(&self) -> String {
        format!("{}/api/v1/miniprogram/payment/notify/3", self.origin)
    }

    async fn control_get(&self, path: &str) -> (u16, Value) {
        let resp = self.http.get(format!("{}/sandbox/control/{path}", self.origin)).send().await.unwrap();
        (resp.status().as_u16(), resp.json().await.unwrap_or(Value::Null))
    }

    async fn control(&self, path: &str, body: Value) -> (u16, Value) {
        let resp = self.http.post(format!("{}/sandbox/control/{path}", self.origin)).json(&body).send().await.unwrap();
        (resp.status().as_u16(), resp.json().await.unwrap_or(Value::Null))
    }

    /// The one documented call: what a tenant uploads, as the merchant account it becomes.
    async fn register(&self) -> MerchantAccount {
        self.register_as(MCHID, APPID).await
    }

    async fn register_as(&self, mchid: &str, appid: &str) -> MerchantAccount {
        let (status, m) = self.control("merchant", json!({"mchid": mchid, "appid": appid})).await;
        assert_eq!(status, 200, "{m}");
        let s = |k: &str| m[k].as_str().unwrap_or_else(|| panic!("{k} missing in {m}")).to_owned();
        assert!(s("platform_public_key_id").starts_with("PUB_KEY_ID_"));
        assert_eq!(s("api_v3_key").len(), 32);
        MerchantAccount {
            mchid: s("mchid"),
            appid: s("appid"),
            serial_no: s("merchant_serial_no"),
            private_key: Secret::new(s("private_key_pem")),
            api_v3_key: Secret::new(s("api_v3_key")),
            platform_keys: vec![PlatformKey { id: s("platform_public_key_id"), pem: s("platform_public_key_pem") }],
            sub_merchant: None,
        }
    }

    fn order(&self, out_trade_no: &str, fen: i64) -> JsapiOrder {
        JsapiOrder {
            out_trade_no: out_trade_no.into(),
            description: "Atrium 咖啡".into(),
            amount: Money::from_fen(fen),
            openid: "o-ann".into(),
            attach: None,
            time_expire: chrono::Utc::now() + chrono::Duration::hours(2),
            notify_url: self.notify_url(),
        }
    }

    fn refund(&self, out_trade_no: &str, out_refund_no: &str, fen: i64, total: i64) -> RefundOrder {
        RefundOrder {
            out_trade_no: out_trade_no.into(),
            out_refund_no: out_refund_no.into(),
            reason: Some("broken cup".into()),
            amount: Money::from_fen(fen),
            total: Money::from_fen(total),
            notify_url: self.notify_url(),
        }
    }

    fn received(&self) -> Vec<NotificationRequest> {
        self.receiver.got.lock().unwrap().clone()
    }

    async fn wait_for_notifications(&self, n: usize) -> Vec<NotificationRequest> {
        for _ in 0..100 {
            if self.received().len() >= n {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.received()
    }

    /// Registers `sub_mchid` under the provider `provider` and answers the provider's account
    /// acting for it.
    async fn register_sub(&self, provider: &MerchantAccount, sub_mchid: &str, sub_appid: Option<&str>) -> MerchantAccount {
        let (status, sub) =
            self.control("sub-merchant", json!({"sp_mchid": provider.mchid, "sub_mchid": sub_mchid, "sub_appid": sub_appid})).await;
        assert_eq!(status, 200, "{sub}");
        assert_eq!(sub, json!({"sp_mchid": provider.mchid, "sub_mchid": sub_mchid, "sub_appid": sub_appid, "max_ratio": 3000}));
        MerchantAccount {
            sub_merchant: Some(SubMerchant { sub_mchid: sub_mchid.into(), sub_appid: sub_appid.map(str::to_owned) }),
            ..provider.clone()
        }
    }

    async fn stop(self) {
        self.handle.stop(false).await;
    }
}

fn refused(err: &PayPlatformError) -> (u16, &str) {
    match err {
        PayPlatformError::Refused { status, code, .. } => (*status, code.as_str()),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn an_order_is_paid_notified_refunded_closed_and_billed_through_the_real_client() {
    let env = Env::start().await;
    let account = env.register().await;
    let client = env.client();

    // Order, and what the mini-program gets for wx.requestPayment, checked by the sandbox.
    let prepay_id = client.jsapi_order(&account, &env.order("T_SBX_0001", 1000)).await.unwrap();
    assert_eq!(client.jsapi_order(&account, &env.order("T_SBX_0001", 1000)).await.unwrap(), prepay_id, "same details, same prepay_id");
    let params = client.pay_params(&account, &prepay_id).unwrap();
    assert_eq!(client.query_order(&account, "T_SBX_0001").await.unwrap().trade_state, TradeState::NotPay);
    let (status, paid) = env.control("pay", json!({"pay_params": params, "result": "SUCCESS"})).await;
    assert_eq!(status, 200, "{paid}");
    assert_eq!((paid["trade_state"].as_str(), paid["notification"]["delivered"].as_bool()), (Some("SUCCESS"), Some(true)), "{paid}");

    // The notification verifies and decrypts with our client.
    let got = env.wait_for_notifications(1).await;
    let event = client.open_notification(&account, &got[0], chrono::Utc::now()).unwrap();
    assert_eq!(event.event_type, "TRANSACTION.SUCCESS");
    let EventResource::Transaction(tx) = event.resource else { panic!("{event:?}") };
    assert_eq!((tx.out_trade_no.as_str(), tx.trade_state, tx.amount), ("T_SBX_0001", TradeState::Success, Some(Money::from_fen(1000))));
    let queried = client.query_order(&account, "T_SBX_0001").await.unwrap();
    assert_eq!((queried.trade_state, queried.payer_total), (TradeState::Success, Some(Money::from_fen(1000))));
    assert_eq!(queried.transaction_id, tx.transaction_id);
    assert!(queried.success_time.is_some());

    // A partial refund (a number the client must percent-encode), then the platform settles it.
    let accepted = client.refund(&account, &env.refund("T_SBX_0001", "R|0001", 300, 1000)).await.unwrap();
    assert_eq!((accepted.status, accepted.amount), (RefundStatus::Processing, Some(Money::from_fen(300))));
    assert_eq!(client.refund(&account, &env.refund("T_SBX_0001", "R|0001", 300, 1000)).await.unwrap().refund_id, accepted.refund_id);
    assert_eq!(client.query_order(&account, "T_SBX_0001").await.unwrap().trade_state, TradeState::Refund);
    let (status, settled) = env.control("refund", json!({"out_refund_no": "R|0001", "result": "SUCCESS"})).await;
    assert_eq!(status, 200, "{settled}");
    let got = env.wait_for_notifications(2).await;
    let event = client.open_notification(&account, &got[1], chrono::Utc::now()).unwrap();
    assert_eq!(event.event_type, "REFUND.SUCCESS");
    let EventResource::Refund(refund) = event.resource else { panic!("{event:?}") };
    assert_eq!(
        (refund.out_refund_no.as_str(), refund.status, refund.amount),
        ("R|0001", RefundStatus::Succeeded, Some(Money::from_fen(300)))
    );
    let queried = client.query_refund(&account, "R|0001").await.unwrap();
    assert_eq!(
        (queried.status, queried.refund_id.clone(), queried.success_time.is_some()),
        (RefundStatus::Succeeded, accepted.refund_id, true)
    );

    // Another order is closed; closing again is a no-op; a closed order cannot be paid.
    client.jsapi_order(&account, &env.order("T_SBX_0002", 50)).await.unwrap();
    client.close_order(&account, "T_SBX_0002").await.unwrap();
    client.close_order(&account, "T_SBX_0002").await.unwrap();
    assert_eq!(client.query_order(&account, "T_SBX_0002").await.unwrap().trade_state, TradeState::Closed);
    assert_eq!(env.control("pay", json!({"out_trade_no": "T_SBX_0002", "result": "SUCCESS"})).await.0, 400);
    let paid_close = client.close_order(&account, "T_SBX_0001").await.unwrap_err();
    assert_eq!(refused(&paid_close), (400, "ORDERPAID"));

    // Today's bill: the payment and the refund; an empty day is no bill.
    let today = chrono::Utc::now().with_timezone(&chrono::FixedOffset::east_opt(8 * 3600).unwrap()).date_naive();
    let lines = client.trade_bill(&account, today).await.unwrap();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(
        (lines[0].out_trade_no.as_str(), lines[0].trade_state, lines[0].amount),
        ("T_SBX_0001", BillTradeState::Success, Money::from_fen(1000))
    );
    assert_eq!(Some(lines[0].transaction_id.clone()), tx.transaction_id);
    assert_eq!(lines[1].trade_state, BillTradeState::Refund);
    let bill_refund = lines[1].refund.clone().unwrap();
    assert_eq!(
        (bill_refund.out_refund_no.as_str(), bill_refund.amount, bill_refund.status.as_str()),
        ("R|0001", Money::from_fen(300), "SUCCESS")
    );
    assert!(client.trade_bill(&account, today - chrono::Days::new(1)).await.unwrap().is_empty());
    env.stop().await;
}

#[tokio::test]
async fn the_sandbox_refuses_what_the_platform_refuses() {
    let env = Env::start().await;
    let account = env.register().await;
    let client = env.client();
    client.jsapi_order(&account, &env.order("T_SBX_0101", 1000)).await.unwrap();

    let mut other = env.order("T_SBX_0101", 999);
    let reused = client.jsapi_order(&account, &other).await.unwrap_err();
    other.out_trade_no = "T_SBX_0102".into();
    other.notify_url = "http://atrium.example.com/notify".into();
    let plain_http = client.jsapi_order(&account, &other).await.unwrap_err();
    other.notify_url = format!("{}?tenant=3", env.notify_url());
    let with_query = client.jsapi_order(&account, &other).await.unwrap_err();
    other.notify_url = env.notify_url();
    other.amount = Money::from_fen(0);
    let zero = client.jsapi_order(&account, &other).await.unwrap_err();
    other.amount = Money::from_fen(1);
    other.description = "咖".repeat(43);
    let long = client.jsapi_order(&account, &other).await.unwrap_err();
    let missing = client.query_order(&account, "T_NOWHERE").await.unwrap_err();
    let unpaid_refund = client.refund(&account, &env.refund("T_SBX_0101", "R_0101", 100, 1000)).await.unwrap_err();

    assert_eq!(refused(&reused), (400, "INVALID_REQUEST"));
    assert_eq!(refused(&plain_http), (400, "PARAM_ERROR"));
    assert_eq!(refused(&with_query), (400, "PARAM_ERROR"));
    assert_eq!(refused(&zero), (400, "PARAM_ERROR"));
    assert_eq!(refused(&long), (400, "PARAM_ERROR"));
    assert_eq!(refused(&missing), (404, "ORDER_NOT_EXIST"));
    assert_eq!(refused(&unpaid_refund), (400, "INVALID_REQUEST"));

    env.sandbox.pay_order(None, "T_SBX_0101", atrium_sandbox::PaymentResult::Success).await.unwrap();
    client.refund(&account, &env.refund("T_SBX_0101", "R_0101", 600, 1000)).await.unwrap();
    let too_much = client.refund(&account, &env.refund("T_SBX_0101", "R_0102", 401, 1000)).await.unwrap_err();
    let reused_refund = client.refund(&account, &env.refund("T_SBX_0101", "R_0101", 500, 1000)).await.unwrap_err();
    assert_eq!(refused(&too_much), (400, "INVALID_REQUEST"));
    assert_eq!(refused(&reused_refund), (400, "INVALID_REQUEST"));
    // A closed refund frees its amount.
    env.sandbox.settle_refund(None, "R_0101", atrium_sandbox::RefundResult::Closed).await.unwrap();
    assert_eq!(client.query_refund(&account, "R_0101").await.unwrap().status, RefundStatus::Closed);
    client.refund(&account, &env.refund("T_SBX_0101", "R_0102", 1000, 1000)).await.unwrap();
    env.stop().await;
}

#[tokio::test]
async fn a_tampered_request_signature_gets_sign_error() {
    let env = Env::start().await;
    let account = env.register().await;

    // Signed for one body, sent with another.
    let path = "/v3/pay/transactions/jsapi";
    let ts = chrono::Utc::now().timestamp();
    let signer = MerchantSigner::from_pem(account.private_key.expose()).unwrap();
    let signature = signer.sign(&request_message("POST", path, ts, "N1", r#"{"a":1}"#)).unwrap();
    let resp = env
        .http
        .post(format!("{}/sandbox/pay{path}", env.origin))
        .header("Authorization", authorization(MCHID, &account.serial_no, ts, "N1", &signature))
        .header("Content-Type", "application/json")
        .body(r#"{"a":2}"#)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let h = |name: &str| resp.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let headers = SignedHeaders {
        timestamp: h("Wechatpay-Timestamp"),
        nonce: h("Wechatpay-Nonce"),
        signature: h("Wechatpay-Signature"),
        serial: h("Wechatpay-Serial"),
    };
    let body = resp.bytes().await.unwrap();
    assert_eq!(status, 401);
    assert_eq!(serde_json::from_slice::<Value>(&body).unwrap()["code"], "SIGN_ERROR");
    // Even the refusal is signed by the platform.
    PlatformVerifier::new(&account.platform_keys).unwrap().verify(&headers, &body, chrono::Utc::now().timestamp()).unwrap();

    // Our client with a key that is not the certificate's.
    let mut wrong = account.clone();
    wrong.private_key =
        Secret::new(std::fs::read_to_string(format!("{}/tests/fixtures/pay/other_key.pem", env!("CARGO_MANIFEST_DIR"))).unwrap());
    let err = env.client().query_order(&wrong, "T_SBX_0201").await.unwrap_err();
    assert_eq!(refused(&err), (401, "SIGN_ERROR"));
    env.stop().await;
}

#[tokio::test]
async fn an_injected_500_is_retried_by_the_client_and_then_succeeds() {
    let env = Env::start().await;
    let account = env.register().await;
    let recorder = Arc::new(Recorder::default());
    let client = env.client_recording(recorder.clone());
    client.jsapi_order(&account, &env.order("T_SBX_0301", 100)).await.unwrap();
    let (status, answer) =
        env.control("pay-fail", json!({"path": "/v3/pay/transactions/out-trade-no/T_SBX_0301", "status": 500, "times": 1})).await;
    assert_eq!(status, 200, "{answer}");

    let tx = client.query_order(&account, "T_SBX_0301").await.unwrap();

    assert_eq!(tx.trade_state, TradeState::NotPay);
    assert_eq!(recorder.0.lock().unwrap().clone(), ["0", "http_5xx", "0"]);
    env.stop().await;
}

#[tokio::test]
async fn a_refused_notification_is_retried_until_accepted() {
    let env = Env::start().await;
    let account = env.register().await;
    let client = env.client();
    env.sandbox.set_notify_retry_delays(vec![Duration::from_millis(50), Duration::from_millis(50), Duration::from_millis(50)]);
    env.receiver.fail.store(2, Ordering::SeqCst);
    client.jsapi_order(&account, &env.order("T_SBX_0401", 100)).await.unwrap();

    let report = env.sandbox.pay_order(None, "T_SBX_0401", atrium_sandbox::PaymentResult::Success).await.unwrap();

    let first = report.notification.unwrap();
    assert_eq!((first.attempts[0].status, first.delivered), (Some(500), false));
    let got = env.wait_for_notifications(1).await;
    assert_eq!(got.len(), 1);
    // The receiver keeps the notification before it answers: wait for the sandbox to record the answer.
    let mut record = env.sandbox.pay_notifications(Some("T_SBX_0401")).remove(0);
    for _ in 0..100 {
        if record.delivered {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        record = env.sandbox.pay_notifications(Some("T_SBX_0401")).remove(0);
    }
    let statuses: Vec<Option<u16>> = record.attempts.iter().map(|a| a.status).collect();
    assert_eq!(statuses, [Some(500), Some(500), Some(204)]);
    assert!(record.delivered);
    assert_eq!(client.open_notification(&account, &got[0], chrono::Utc::now()).unwrap().id, record.id);
    env.stop().await;
}

#[tokio::test]
async fn notify_fail_sends_notifications_twice_and_out_of_order() {
    let env = Env::start().await;
    let account = env.register().await;
    let client = env.client();
    client.jsapi_order(&account, &env.order("T_SBX_0501", 1000)).await.unwrap();
    assert_eq!(env.control("notify-fail", json!({"times": 1})).await.0, 200);

    env.control("pay", json!({"out_trade_no": "T_SBX_0501", "result": "SUCCESS"})).await;
    client.refund(&account, &env.refund("T_SBX_0501", "R_0501", 1000, 1000)).await.unwrap();
    env.control("refund", json!({"out_refund_no": "R_0501", "result": "ABNORMAL"})).await;

    let got = env.wait_for_notifications(3).await;
    let events: Vec<(String, String)> = got
        .iter()
        .map(|n| {
            let e = client.open_notification(&account, n, chrono::Utc::now()).unwrap();
            (e.id, e.event_type)
        })
        .collect();
    let types: Vec<&str> = events.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(types, ["TRANSACTION.SUCCESS", "REFUND.ABNORMAL", "TRANSACTION.SUCCESS"]);
    assert_eq!(events[0].0, events[2].0, "the duplicate carries the same event id");
    let (_, listed) = {
        let resp = env.http.get(format!("{}/sandbox/control/notifications?out_trade_no=T_SBX_0501", env.origin)).send().await.unwrap();
        (resp.status(), resp.json::<Value>().await.unwrap())
    };
    let dupes: Vec<bool> = listed["notifications"].as_array().unwrap().iter().map(|n| n["duplicate"].as_bool().unwrap()).collect();
    assert_eq!(dupes, [false, true, false]);
    env.stop().await;
}

#[tokio::test]
async fn a_lone_duplicate_follows_after_a_moment() {
    let env = Env::start().await;
    let account = env.register().await;
    env.client().jsapi_order(&account, &env.order("T_SBX_0601", 100)).await.unwrap();
    env.sandbox.fail_next_notifications(1);

    env.sandbox.pay_order(None, "T_SBX_0601", atrium_sandbox::PaymentResult::Success).await.unwrap();
    assert_eq!(env.received().len(), 1);

    // The copy is held back (for `HOLD_DUPLICATE` when no other notification follows).
    let got = env.wait_for_notifications(2).await;
    assert_eq!(got.len(), 2, "the duplicate never came");
    assert_eq!(got[0].body, got[1].body);
    env.stop().await;
}

#[tokio::test]
async fn a_refund_whose_answer_is_lost_was_still_made() {
    let env = Env::start().await;
    let account = env.register().await;
    let recorder = Arc::new(Recorder::default());
    let client = env.client_recording(recorder.clone());
    client.jsapi_order(&account, &env.order("T_SBX_0701", 1000)).await.unwrap();
    env.sandbox.pay_order(None, "T_SBX_0701", atrium_sandbox::PaymentResult::Success).await.unwrap();
    // Every attempt, the client's retries included, is carried out and its answer lost.
    let path = "/v3/refund/domestic/refunds";
    let (status, answer) = env.control("pay-fail", json!({"path": path, "status": 500, "times": ATTEMPTS, "after": true})).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer, json!({"path": path, "status": 500, "code": "SYSTEM_ERROR", "times": ATTEMPTS, "after": true}));

    let lost = client.refund(&account, &env.refund("T_SBX_0701", "R_0701", 300, 1000)).await.unwrap_err();

    assert!(matches!(&lost, PayPlatformError::Unavailable(why) if why.contains("HTTP 500")), "{lost:?}");
    assert_eq!(env.sandbox.pay_calls(&format!("POST {path}")), ATTEMPTS as usize);
    let found = client.query_refund(&account, "R_0701").await.unwrap();
    assert_eq!((found.status, found.amount), (RefundStatus::Processing, Some(Money::from_fen(300))));
    assert_eq!(client.query_order(&account, "T_SBX_0701").await.unwrap().trade_state, TradeState::Refund);
    // One lost answer is made good by the client's own retry: the same refund, not a second.
    env.sandbox.lose_next_pay_answers(path, 500, "SYSTEM_ERROR", 1).unwrap();
    recorder.0.lock().unwrap().clear();
    let again = client.refund(&account, &env.refund("T_SBX_0701", "R_0701", 300, 1000)).await.unwrap();
    assert_eq!(recorder.0.lock().unwrap().clone(), ["http_5xx", "0"]);
    assert_eq!((again.refund_id, again.amount), (found.refund_id, Some(Money::from_fen(300))));
    let more = client.refund(&account, &env.refund("T_SBX_0701", "R_0702", 701, 1000)).await.unwrap_err();
    assert_eq!(refused(&more), (400, "INVALID_REQUEST"), "only 700 fen are left to refund");
    env.stop().await;
}

#[tokio::test]
async fn an_order_whose_answer_is_lost_was_still_placed() {
    let env = Env::start().await;
    let account = env.register().await;
    let client = env.client();
    let path = "/v3/pay/transactions/jsapi";
    let (status, answer) = env.control("pay-fail", json!({"path": path, "status": 502, "times": ATTEMPTS, "after": true})).await;
    assert_eq!(status, 200, "{answer}");

    let lost = client.jsapi_order(&account, &env.order("T_SBX_0801", 100)).await.unwrap_err();

    assert!(matches!(&lost, PayPlatformError::Unavailable(why) if why.contains("HTTP 502")), "{lost:?}");
    assert_eq!(env.sandbox.pay_calls(&format!("POST {path}")), ATTEMPTS as usize);
    let found = client.query_order(&account, "T_SBX_0801").await.unwrap();
    assert_eq!((found.trade_state, found.amount), (TradeState::NotPay, Some(Money::from_fen(100))));
    // Ordering again with the same number gets that order, which the payer can pay.
    let prepay_id = client.jsapi_order(&account, &env.order("T_SBX_0801", 100)).await.unwrap();
    let params = client.pay_params(&account, &prepay_id).unwrap();
    let (status, paid) = env.control("pay", json!({"pay_params": params, "result": "SUCCESS"})).await;
    assert_eq!(status, 200, "{paid}");
    assert_eq!(client.query_order(&account, "T_SBX_0801").await.unwrap().trade_state, TradeState::Success);
    env.stop().await;
}

#[tokio::test]
async fn a_delayed_answer_arrives_after_the_delay() {
    let env = Env::start().await;
    let account = env.register().await;
    let recorder = Arc::new(Recorder::default());
    let client = env.client_recording(recorder.clone());
    client.jsapi_order(&account, &env.order("T_SBX_0901", 100)).await.unwrap();
    let path = "/v3/pay/transactions/out-trade-no/*";
    let (status, answer) = env.control("pay-delay", json!({"path": path, "delay_ms": 200, "times": 1})).await;
    assert_eq!((status, answer), (200, json!({"path": path, "delay_ms": 200, "times": 1})));

    let started = Instant::now();
    let tx = client.query_order(&account, "T_SBX_0901").await.unwrap();

    assert!(started.elapsed() >= Duration::from_millis(200), "{:?}", started.elapsed());
    assert_eq!(tx.trade_state, TradeState::NotPay);
    assert_eq!(recorder.0.lock().unwrap().clone(), ["0", "0"], "one attempt, answered");
    env.stop().await;
}

#[tokio::test]
async fn an_answer_delayed_past_the_clients_time_out_comes_after_the_close_was_made() {
    let env = Env::start().await;
    let account = env.register().await;
    let recorder = Arc::new(Recorder::default());
    let client = env.client_with_timeout(Duration::from_millis(300), recorder.clone());
    client.jsapi_order(&account, &env.order("T_SBX_1001", 100)).await.unwrap();
    let path = "/v3/pay/transactions/out-trade-no/T_SBX_1001/close";
    let (status, answer) = env.control("pay-delay", json!({"path": path, "delay_ms": 2000, "times": ATTEMPTS})).await;
    assert_eq!(status, 200, "{answer}");

    let timed_out = client.close_order(&account, "T_SBX_1001").await.unwrap_err();

    assert!(matches!(&timed_out, PayPlatformError::Unavailable(why) if why.contains("timed out")), "{timed_out:?}");
    assert_eq!(recorder.0.lock().unwrap()[1..], ["transport"; ATTEMPTS as usize]);
    assert_eq!(env.sandbox.trade_state(MCHID, "T_SBX_1001"), Some(TradeState::Closed));
    env.stop().await;
}

#[tokio::test]
async fn pay_fail_and_pay_delay_refuse_what_they_cannot_do_with_a_json_message() {
    let env = Env::start().await;
    let path = "/v3/pay/transactions/jsapi";
    for (call, body, says) in [
        ("pay-delay", json!({"path": path, "delay_ms": 30_001}), "delay_ms must be at most 30000"),
        ("pay-delay", json!({"path": path, "delay_ms": -1}), "invalid value: integer `-1`"),
        ("pay-delay", json!({"path": path, "delay_ms": 10, "times": 1.5}), "invalid type: floating point `1.5`"),
        ("pay-delay", json!({"path": "/cgi-bin/token", "delay_ms": 10}), "path must start with /v3/"),
        ("pay-delay", json!({"path": path}), "missing field `delay_ms`"),
        ("pay-delay", json!({"path": path, "delay_ms": 10, "after": true}), "unknown field `after`"),
        ("pay-fail", json!({"path": path, "status": 500, "after": "yes"}), "invalid type: string \"yes\", expected a boolean"),
        ("pay-fail", json!({"path": path, "status": 200, "after": true}), "status must be 400 to 599"),
    ] {
        let (status, answer) = env.control(call, body.clone()).await;
        assert_eq!(status, 400, "{call} {body}: {answer}");
        let message = answer["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{call} {body}: {answer}");
    }
    // 30 s is allowed; nothing is delayed that is not called.
    assert_eq!(env.control("pay-delay", json!({"path": path, "delay_ms": 30_000})).await.0, 200);
    env.stop().await;
}

// --- service-provider mode -------------------------------------------------------------------

const SUB_MCHID: &str = "1900000200";
const SUB_APPID: &str = "wx_sub_mp";

fn today() -> chrono::NaiveDate {
    chrono::Utc::now().with_timezone(&chrono::FixedOffset::east_opt(8 * 3600).unwrap()).date_naive()
}

#[tokio::test]
async fn a_sub_merchant_order_in_its_own_app_is_paid_notified_refunded_closed_and_billed_through_the_real_client() {
    let env = Env::start().await;
    let provider = env.register().await;
    let account = env.register_sub(&provider, SUB_MCHID, Some(SUB_APPID)).await;
    let client = env.client();

    // Ordered on the partner endpoint; the payer pays in the sub-merchant's app.
    let prepay_id = client.jsapi_order(&account, &env.order("T_SP_0001", 1000)).await.unwrap();
    assert_eq!(client.jsapi_order(&account, &env.order("T_SP_0001", 1000)).await.unwrap(), prepay_id, "same details, same prepay_id");
    assert_eq!(env.sandbox.pay_calls("POST /v3/pay/partner/transactions/jsapi"), 2);
    let params = client.pay_params(&account, &prepay_id).unwrap();
    assert_eq!(params.app_id, SUB_APPID);
    let unpaid = client.query_order(&account, "T_SP_0001").await.unwrap();
    assert_eq!((unpaid.trade_state, unpaid.sub_mchid.as_deref()), (TradeState::NotPay, Some(SUB_MCHID)));
    let (status, paid) = env.control("pay", json!({"pay_params": params, "result": "SUCCESS"})).await;
    assert_eq!(status, 200, "{paid}");
    assert_eq!((paid["mchid"].as_str(), paid["notification"]["delivered"].as_bool()), (Some(SUB_MCHID), Some(true)), "{paid}");
    let (_, trade) = env.control_get(&format!("trade?out_trade_no=T_SP_0001&mchid={SUB_MCHID}")).await;
    assert_eq!((&trade["order"]["sp_mchid"], &trade["order"]["profit_sharing"]), (&json!(MCHID), &json!(true)), "{trade}");

    // The notification opens with the provider's account and names the sub-merchant.
    let got = env.wait_for_notifications(1).await;
    let event = client.open_notification(&account, &got[0], chrono::Utc::now()).unwrap();
    let EventResource::Transaction(tx) = event.resource else { panic!("{event:?}") };
    assert_eq!((tx.trade_state, tx.amount, tx.sub_mchid.as_deref()), (TradeState::Success, Some(Money::from_fen(1000)), Some(SUB_MCHID)));
    let sent = env.sandbox.pay_notifications(Some("T_SP_0001")).remove(0);
    assert_eq!((&sent.resource["sub_appid"], &sent.resource["payer"]), (&json!(SUB_APPID), &json!({"sub_openid": "o-ann"})));
    let queried = client.query_order(&account, "T_SP_0001").await.unwrap();
    assert_eq!(
        (queried.trade_state, queried.transaction_id.clone(), queried.sub_mchid.as_deref()),
        (TradeState::Success, tx.transaction_id.clone(), Some(SUB_MCHID))
    );

    // Refunded, settled through control/refund naming the sub-merchant, queried.
    let accepted = client.refund(&account, &env.refund("T_SP_0001", "R_SP_0001", 300, 1000)).await.unwrap();
    assert_eq!((accepted.status, accepted.sub_mchid.as_deref()), (RefundStatus::Processing, Some(SUB_MCHID)));
    let (status, settled) = env.control("refund", json!({"out_refund_no": "R_SP_0001", "mchid": SUB_MCHID, "result": "SUCCESS"})).await;
    assert_eq!(status, 200, "{settled}");
    let got = env.wait_for_notifications(2).await;
    let event = client.open_notification(&account, &got[1], chrono::Utc::now()).unwrap();
    let EventResource::Refund(refund) = event.resource else { panic!("{event:?}") };
    assert_eq!((refund.status, refund.sub_mchid.as_deref()), (RefundStatus::Succeeded, Some(SUB_MCHID)));
    let queried = client.query_refund(&account, "R_SP_0001").await.unwrap();
    assert_eq!(
        (queried.status, queried.refund_id, queried.sub_mchid.as_deref()),
        (RefundStatus::Succeeded, accepted.refund_id, Some(SUB_MCHID))
    );

    // Another order is closed on the partner endpoint.
    client.jsapi_order(&account, &env.order("T_SP_0002", 50)).await.unwrap();
    client.close_order(&account, "T_SP_0002").await.unwrap();
    assert_eq!(client.query_order(&account, "T_SP_0002").await.unwrap().trade_state, TradeState::Closed);
    assert_eq!(env.sandbox.trade_state(SUB_MCHID, "T_SP_0002"), Some(TradeState::Closed));
    assert_eq!(refused(&client.close_order(&account, "T_SP_0001").await.unwrap_err()), (400, "ORDERPAID"));

    // The sub-merchant's bill: its payment and its refund.
    let lines = client.trade_bill(&account, today()).await.unwrap();
    let summary: Vec<(&str, BillTradeState)> = lines.iter().map(|l| (l.out_trade_no.as_str(), l.trade_state)).collect();
    assert_eq!(summary, [("T_SP_0001", BillTradeState::Success), ("T_SP_0001", BillTradeState::Refund)]);
    assert!(client.trade_bill(&provider, today()).await.unwrap().is_empty(), "the provider's own bill has none of it");
    env.stop().await;
}

#[tokio::test]
async fn a_sub_merchant_order_in_the_providers_app_is_paid_through_control_pay_and_named_by_sp_openid() {
    let env = Env::start().await;
    let provider = env.register().await;
    let account = env.register_sub(&provider, SUB_MCHID, None).await;
    let client = env.client();
    let recorder = Arc::new(Recorder::default());
    let recording = env.client_recording(recorder.clone());

    let prepay_id = recording.jsapi_order(&account, &env.order("T_SP_0101", 500)).await.unwrap();
    let params = client.pay_params(&account, &prepay_id).unwrap();
    assert_eq!(params.app_id, APPID, "the payer pays in the provider's app");
    // Signed by the provider for its own app: the payer's app takes them.
    let (status, paid) = env.control("pay", json!({"pay_params": params, "result": "SUCCESS"})).await;
    assert_eq!(status, 200, "{paid}");
    assert_eq!(env.control("pay", json!({"pay_params": params, "result": "SUCCESS"})).await.0, 400, "already paid");

    let got = env.wait_for_notifications(1).await;
    let event = client.open_notification(&account, &got[0], chrono::Utc::now()).unwrap();
    let EventResource::Transaction(tx) = event.resource else { panic!("{event:?}") };
    assert_eq!((tx.out_trade_no.as_str(), tx.sub_mchid.as_deref()), ("T_SP_0101", Some(SUB_MCHID)));
    let sent = env.sandbox.pay_notifications(Some("T_SP_0101")).remove(0);
    assert_eq!((sent.resource.get("sub_appid"), &sent.resource["payer"]), (None, &json!({"sp_openid": "o-ann"})));
    assert_eq!(recorder.0.lock().unwrap().clone(), ["0"]);

    // control/pay by number takes the sub-merchant as its mchid.
    client.jsapi_order(&account, &env.order("T_SP_0102", 500)).await.unwrap();
    let (status, paid) = env.control("pay", json!({"out_trade_no": "T_SP_0102", "mchid": SUB_MCHID, "result": "SUCCESS"})).await;
    assert_eq!((status, paid["mchid"].as_str()), (200, Some(SUB_MCHID)), "{paid}");
    assert_eq!(env.control("pay", json!({"out_trade_no": "T_SP_0102", "mchid": MCHID, "result": "SUCCESS"})).await.0, 400);

    // An injected failure on a partner path, retried by the client.
    let path = "/v3/pay/partner/transactions/out-trade-no/T_SP_0101";
    assert_eq!(env.control("pay-fail", json!({"path": path, "status": 500, "times": 1})).await.0, 200);
    assert_eq!(recording.query_order(&account, "T_SP_0101").await.unwrap().trade_state, TradeState::Success);
    assert_eq!(recorder.0.lock().unwrap().clone(), ["0", "http_5xx", "0"]);
    env.stop().await;
}

#[tokio::test]
async fn the_sandbox_keeps_sub_merchants_to_their_provider_and_apart_from_direct_orders() {
    let env = Env::start().await;
    let provider = env.register().await;
    let other_provider = env.register_as("1900000110", "wx_other_sp").await;
    let account = env.register_sub(&provider, SUB_MCHID, Some(SUB_APPID)).await;
    let others_sub = env.register_sub(&other_provider, "1900000300", None).await;
    let client = env.client();
    client.jsapi_order(&account, &env.order("T_SP_0201", 100)).await.unwrap();
    client.jsapi_order(&provider, &env.order("T_SP_0202", 100)).await.unwrap();

    // A sub-merchant not registered under the signer.
    let not_mine = MerchantAccount { sub_merchant: others_sub.sub_merchant.clone(), ..provider.clone() };
    let placed = client.jsapi_order(&not_mine, &env.order("T_SP_0203", 100)).await.unwrap_err();
    let unregistered =
        MerchantAccount { sub_merchant: Some(SubMerchant { sub_mchid: "1900000999".into(), sub_appid: None }), ..provider.clone() };
    let placed_unregistered = client.jsapi_order(&unregistered, &env.order("T_SP_0203", 100)).await.unwrap_err();
    // Another provider asking about this provider's sub-merchant.
    let foreign = MerchantAccount { sub_merchant: account.sub_merchant.clone(), ..other_provider.clone() };
    let queried_by_other = client.query_order(&foreign, "T_SP_0201").await.unwrap_err();
    let billed_by_other = client.trade_bill(&foreign, today()).await.unwrap_err();
    // The provider's direct calls do not see its sub-merchant's orders, nor the other way round.
    let direct = client.query_order(&provider, "T_SP_0201").await.unwrap_err();
    let partner = client.query_order(&account, "T_SP_0202").await.unwrap_err();
    // The sub_appid the sub-merchant was not registered with.
    let wrong_app = MerchantAccount {
        sub_merchant: Some(SubMerchant { sub_mchid: SUB_MCHID.into(), sub_appid: Some("wx_else".into()) }),
        ..provider.clone()
    };
    let placed_wrong_app = client.jsapi_order(&wrong_app, &env.order("T_SP_0204", 100)).await.unwrap_err();

    assert_eq!(refused(&placed), (400, "INVALID_REQUEST"));
    assert_eq!(refused(&placed_unregistered), (400, "INVALID_REQUEST"));
    assert_eq!(refused(&queried_by_other), (400, "INVALID_REQUEST"));
    assert_eq!(refused(&billed_by_other), (400, "INVALID_REQUEST"));
    assert_eq!(refused(&direct), (404, "ORDER_NOT_EXIST"));
    assert_eq!(refused(&partner), (404, "ORDER_NOT_EXIST"));
    assert_eq!(refused(&placed_wrong_app), (400, "APPID_MCHID_NOT_MATCH"));
    assert_eq!(env.sandbox.trade_state(SUB_MCHID, "T_SP_0201"), Some(TradeState::NotPay));
    assert_eq!(env.sandbox.trade_state(MCHID, "T_SP_0201"), None);
    env.stop().await;
}

#[tokio::test]
async fn control_sub_merchant_refuses_bad_input_with_a_json_message() {
    let env = Env::start().await;
    let provider = env.register().await;
    env.register_sub(&provider, SUB_MCHID, None).await;
    for (body, says) in [
        (json!({"sp_mchid": MCHID, "sub_mchid": "1900000201", "extra": 1}), "unknown field `extra`"),
        (json!({"sp_mchid": MCHID}), "missing field `sub_mchid`"),
        (json!({"sp_mchid": "1900000999", "sub_mchid": "1900000201"}), "not a merchant registered"),
        (json!({"sp_mchid": MCHID, "sub_mchid": MCHID}), "a merchant of its own"),
        (json!({"sp_mchid": MCHID, "sub_mchid": SUB_MCHID, "sub_appid": SUB_APPID}), "another sub_appid"),
    ] {
        let (status, answer) = env.control("sub-merchant", body.clone()).await;
        assert_eq!(status, 400, "{body}: {answer}");
        assert!(answer["message"].as_str().unwrap_or_default().contains(says), "{body}: {answer}");
    }
    let other = env.register_as("1900000110", "wx_other_sp").await;
    let (status, answer) = env.control("sub-merchant", json!({"sp_mchid": other.mchid, "sub_mchid": SUB_MCHID})).await;
    assert_eq!(status, 400, "{answer}");
    assert!(answer["message"].as_str().unwrap_or_default().contains("another provider"), "{answer}");
    assert_eq!(env.sandbox.sub_merchant(SUB_MCHID).unwrap().sp_mchid, MCHID);
    env.stop().await;
}

// --- profit sharing ---------------------------------------------------------------------------

/// The partner's openid in the provider's app, receiving its commission.
const PARTNER_OPENID: &str = "o-partner-7";

impl Env {
    /// A sub-merchant's order of `fen` placed through `client` and paid two minutes ago (past
    /// the one-minute rule); answers its transaction id.
    async fn paid_for_sharing(&self, client: &WechatPay, account: &MerchantAccount, out_trade_no: &str, fen: i64) -> String {
        client.jsapi_order(account, &self.order(out_trade_no, fen)).await.unwrap();
        let paid_at = (chrono::Utc::now() - chrono::Duration::minutes(2)).to_rfc3339();
        let (status, paid) =
            self.control("pay", json!({"out_trade_no": out_trade_no, "mchid": SUB_MCHID, "result": "SUCCESS", "paid_at": paid_at})).await;
        assert_eq!(status, 200, "{paid}");
        paid["transaction_id"].as_str().unwrap().to_owned()
    }

    /// What the sandbox holds of the transaction's sharing (`GET control/profitsharing`).
    async fn sharing(&self, out_trade_no: &str) -> Value {
        let (status, view) = self.control_get(&format!("profitsharing?sub_mchid={SUB_MCHID}&out_trade_no={out_trade_no}")).await;
        assert_eq!(status, 200, "{view}");
        view
    }
}

fn platform_receiver(provider: &MerchantAccount) -> ReceiverAdd {
    ReceiverAdd {
        receiver: atrium_payments::Receiver {
            kind: ReceiverType::MerchantId,
            account: provider.mchid.clone(),
            name: Some("Atrium 平台有限公司".into()),
        },
        relation: Relation::ServiceProvider,
    }
}

fn partner_receiver() -> ReceiverAdd {
    ReceiverAdd {
        receiver: atrium_payments::Receiver { kind: ReceiverType::PersonalOpenid, account: PARTNER_OPENID.into(), name: None },
        relation: Relation::Partner,
    }
}

fn share_line(kind: ReceiverType, account: &str, fen: i64) -> ShareLine {
    ShareLine { kind, account: account.into(), amount: Money::from_fen(fen), description: "Atrium share".into() }
}

fn share_order(transaction_id: &str, out_order_no: &str, lines: Vec<ShareLine>) -> ShareOrder {
    ShareOrder { transaction_id: transaction_id.into(), out_order_no: out_order_no.into(), lines, unfreeze_unsplit: false }
}

/// (account, fen, result, fail reason) of each line.
fn results(order: &PlatformShareOrder) -> Vec<(String, i64, ReceiverResult, Option<String>)> {
    order.lines.iter().map(|l| (l.account.clone(), l.amount.fen(), l.result, l.fail_reason.clone())).collect()
}

#[tokio::test]
async fn a_payment_is_shared_queried_closed_for_one_receiver_and_unfrozen_through_the_real_client() {
    let env = Env::start().await;
    let provider = env.register().await;
    let account = env.register_sub(&provider, SUB_MCHID, None).await;
    let client = env.client();
    let tx = env.paid_for_sharing(&client, &account, "T_PS_0001", 1000).await;

    // Receivers: the platform by merchant id with its name (encrypted on the way), the partner
    // by openid; the sandbox decrypted the name with its platform key.
    client.add_receiver(&account, &platform_receiver(&provider)).await.unwrap();
    client.add_receiver(&account, &partner_receiver()).await.unwrap();
    client.add_receiver(&account, &partner_receiver()).await.unwrap();
    let view = env.sharing("T_PS_0001").await;
    assert_eq!(
        view["receivers"],
        json!([
            {"type": "MERCHANT_ID", "account": MCHID, "relation_type": "SERVICE_PROVIDER", "name": "Atrium 平台有限公司"},
            {"type": "PERSONAL_OPENID", "account": PARTNER_OPENID, "relation_type": "PARTNER", "name": null},
        ])
    );

    // A share: processing, each line pending; the query finishes it.
    let lines = vec![share_line(ReceiverType::MerchantId, MCHID, 200), share_line(ReceiverType::PersonalOpenid, PARTNER_OPENID, 50)];
    let accepted = client.share(&account, &share_order(&tx, "PS1", lines)).await.unwrap();
    assert_eq!(accepted.state, ShareOrderState::Processing);
    assert_eq!(
        results(&accepted),
        [(MCHID.to_owned(), 200, ReceiverResult::Pending, None), (PARTNER_OPENID.to_owned(), 50, ReceiverResult::Pending, None)]
    );
    assert!(accepted.lines.iter().all(|l| l.finish_time.is_none()));
    let finished = client.query_share(&account, &tx, "PS1").await.unwrap();
    assert_eq!((finished.state, finished.order_id.clone()), (ShareOrderState::Finished, accepted.order_id.clone()));
    assert_eq!(
        results(&finished),
        [(MCHID.to_owned(), 200, ReceiverResult::Success, None), (PARTNER_OPENID.to_owned(), 50, ReceiverResult::Success, None)]
    );
    assert!(finished.lines.iter().all(|l| l.finish_time.is_some()));

    // The partner's next line is closed by the platform: ACCOUNT_ABNORMAL.
    let (status, marked) =
        env.control("profitsharing/close-next", json!({"account": PARTNER_OPENID, "fail_reason": "ACCOUNT_ABNORMAL"})).await;
    assert_eq!((status, marked), (200, json!({"account": PARTNER_OPENID, "fail_reason": "ACCOUNT_ABNORMAL"})));
    let retry = vec![share_line(ReceiverType::PersonalOpenid, PARTNER_OPENID, 50)];
    assert_eq!(client.share(&account, &share_order(&tx, "PS1-r1", retry)).await.unwrap().state, ShareOrderState::Processing);
    let closed = client.query_share(&account, &tx, "PS1-r1").await.unwrap();
    assert_eq!(results(&closed), [(PARTNER_OPENID.to_owned(), 50, ReceiverResult::Closed, Some("ACCOUNT_ABNORMAL".to_owned()))]);

    // The rest goes to the sub-merchant: 1000 − 250 shared (the closed 50 was not).
    let unfreeze = UnfreezeOrder { transaction_id: tx.clone(), out_order_no: "PS1-u".into(), description: "rest to the tenant".into() };
    let unfrozen = client.unfreeze(&account, &unfreeze).await.unwrap();
    assert_eq!(unfrozen.state, ShareOrderState::Finished);
    let own: Vec<_> = unfrozen.lines.iter().map(|l| (l.kind, l.account.as_str(), l.amount.fen(), l.result)).collect();
    assert_eq!(own, [(ReceiverType::MerchantId, SUB_MCHID, 750, ReceiverResult::Success)]);
    assert_eq!(client.query_share(&account, &tx, "PS1-u").await.unwrap(), unfrozen, "the unfreeze is queried like a share");
    assert_eq!(client.unfreeze(&account, &unfreeze).await.unwrap(), unfrozen, "the same number is the same request");
    let after = client.share(&account, &share_order(&tx, "PS2", vec![share_line(ReceiverType::PersonalOpenid, PARTNER_OPENID, 1)])).await;
    assert_eq!(refused(&after.unwrap_err()), (400, "INVALID_REQUEST"), "nothing is shared after the unfreeze");

    let view = env.sharing("T_PS_0001").await;
    assert_eq!((&view["shared"], &view["finished"], &view["unfrozen"]["amount"]), (&json!(250), &json!(true), &json!(750)), "{view}");
    let states: Vec<_> =
        view["orders"].as_array().unwrap().iter().map(|o| (o["out_order_no"].clone(), o["kind"].clone(), o["state"].clone())).collect();
    assert_eq!(
        states,
        [
            (json!("PS1"), json!("share"), json!("FINISHED")),
            (json!("PS1-r1"), json!("share"), json!("FINISHED")),
            (json!("PS1-u"), json!("unfreeze"), json!("FINISHED")),
        ]
    );
    env.stop().await;
}

#[tokio::test]
async fn a_lost_share_answer_retried_with_the_same_number_gets_the_same_order() {
    let env = Env::start().await;
    let provider = env.register().await;
    let account = env.register_sub(&provider, SUB_MCHID, None).await;
    let recorder = Arc::new(Recorder::default());
    let client = env.client_recording(recorder.clone());
    let tx = env.paid_for_sharing(&client, &account, "T_PS_0002", 1000).await;
    // The request stays pending all along: the platform would finish it by itself after a minute.
    assert_eq!(env.control("profitsharing/rules", json!({"finish_after_ms": 60_000})).await.0, 200);
    client.add_receiver(&account, &partner_receiver()).await.unwrap();
    let order = share_order(&tx, "PS1", vec![share_line(ReceiverType::PersonalOpenid, PARTNER_OPENID, 300)]);

    // Every answer lost: the client gives up, but the platform made the request.
    let path = "/v3/profitsharing/orders";
    assert_eq!(env.control("pay-fail", json!({"path": path, "status": 500, "times": ATTEMPTS, "after": true})).await.0, 200);
    let lost = client.share(&account, &order).await.unwrap_err();
    assert!(matches!(lost, PayPlatformError::Unavailable(_)), "{lost:?}");
    // Asked again later with the same number: that request, not a second one (which the 30 %
    // limit would refuse, the first holding all of it).
    let again = client.share(&account, &order).await.unwrap();
    // One lost answer: the client's own retry gets the request.
    assert_eq!(env.control("pay-fail", json!({"path": path, "status": 500, "times": 1, "after": true})).await.0, 200);
    let retried = client.share(&account, &order).await.unwrap();

    assert_eq!(results(&again), [(PARTNER_OPENID.to_owned(), 300, ReceiverResult::Pending, None)]);
    assert_eq!(retried, again);
    assert_eq!(env.sandbox.pay_calls("POST /v3/profitsharing/orders"), (ATTEMPTS + 3) as usize);
    let view = env.sandbox.profit_sharing(SUB_MCHID, "T_PS_0002").unwrap();
    assert_eq!((view.orders.len(), view.orders[0].order_id.as_str()), (1, again.order_id.as_deref().unwrap()));
    let codes = recorder.0.lock().unwrap().clone();
    assert_eq!(&codes[codes.len() - 6..], ["http_5xx", "http_5xx", "http_5xx", "0", "http_5xx", "0"]);
    env.stop().await;
}

#[tokio::test]
async fn the_ratio_and_the_one_minute_rule_refuse_shares_the_platform_refuses() {
    let env = Env::start().await;
    let provider = env.register().await;
    let account = env.register_sub(&provider, SUB_MCHID, None).await;
    let (status, sub) = env.control("sub-merchant", json!({"sp_mchid": MCHID, "sub_mchid": SUB_MCHID, "max_ratio": 1000})).await;
    assert_eq!((status, &sub["max_ratio"]), (200, &json!(1000)), "{sub}");
    let recorder = Arc::new(Recorder::default());
    let client = env.client_recording(recorder.clone());
    let tx = env.paid_for_sharing(&client, &account, "T_PS_0003", 1000).await;
    client.add_receiver(&account, &partner_receiver()).await.unwrap();
    let of = |no: &str, fen: i64| share_order(&tx, no, vec![share_line(ReceiverType::PersonalOpenid, PARTNER_OPENID, fen)]);

    // 10 % of 1000 fen: 100.
    let over = client.share(&account, &of("PS1", 101)).await.unwrap_err();
    assert_eq!(refused(&over), (400, "INVALID_REQUEST"));
    assert!(over.to_string().contains("max_ratio"), "{over}");
    client.share(&account, &of("PS1", 100)).await.unwrap();
    assert_eq!(refused(&client.share(&account, &of("PS2", 1)).await.unwrap_err()), (400, "INVALID_REQUEST"));

    // Paid just now: within the minute the platform answers 429, retried, then given up.
    client.jsapi_order(&account, &env.order("T_PS_0004", 1000)).await.unwrap();
    let (_, paid) = env.control("pay", json!({"out_trade_no": "T_PS_0004", "mchid": SUB_MCHID, "result": "SUCCESS"})).await;
    let fresh = paid["transaction_id"].as_str().unwrap().to_owned();
    recorder.0.lock().unwrap().clear();
    let early =
        client.share(&account, &share_order(&fresh, "PS3", vec![share_line(ReceiverType::PersonalOpenid, PARTNER_OPENID, 10)])).await;
    assert!(matches!(early, Err(PayPlatformError::Unavailable(_))), "{early:?}");
    assert_eq!(recorder.0.lock().unwrap().clone(), ["http_429", "http_429", "http_429"]);
    let (status, rules) = env.control("profitsharing/rules", json!({"one_minute": false})).await;
    assert_eq!((status, rules), (200, json!({"one_minute": false, "finish_after_ms": 1000, "notify": true, "returns_processing": false})));
    let allowed =
        client.share(&account, &share_order(&fresh, "PS3", vec![share_line(ReceiverType::PersonalOpenid, PARTNER_OPENID, 10)])).await;
    assert_eq!(allowed.unwrap().state, ShareOrderState::Processing);
    env.stop().await;
}

#[tokio::test]
async fn a_share_the_platform_finishes_by_itself_is_notified_line_by_line_and_the_client_opens_each() {
    let env = Env::start().await;
    let provider = env.register().await;
    let account = env.register_sub(&provider, SUB_MCHID, None).await;
    let client = env.client();
    let tx = env.paid_for_sharing(&client, &account, "T_PS_0005", 1000).await;
    assert_eq!(env.wait_for_notifications(1).await.len(), 1, "the payment's");
    let (status, rules) = env.control("profitsharing/rules", json!({"finish_after_ms": 100})).await;
    assert_eq!((status, rules), (200, json!({"one_minute": true, "finish_after_ms": 100, "notify": true, "returns_processing": false})));
    client.add_receiver(&account, &platform_receiver(&provider)).await.unwrap();
    client.add_receiver(&account, &partner_receiver()).await.unwrap();
    let (status, _) = env.control("profitsharing/close-next", json!({"account": PARTNER_OPENID, "fail_reason": "NO_RELATION"})).await;
    assert_eq!(status, 200);
    let lines = vec![share_line(ReceiverType::MerchantId, MCHID, 200), share_line(ReceiverType::PersonalOpenid, PARTNER_OPENID, 50)];
    assert_eq!(client.share(&account, &share_order(&tx, "PS1", lines)).await.unwrap().state, ShareOrderState::Processing);

    // Never queried: the platform finishes it and notifies each line to the payment's notify URL.
    let got = env.wait_for_notifications(3).await;

    assert_eq!(got.len(), 3);
    let events: Vec<_> = got[1..].iter().map(|n| client.open_notification(&account, n, chrono::Utc::now()).unwrap()).collect();
    let share = EventResource::Share { out_order_no: "PS1".into(), transaction_id: tx.clone() };
    let opened: Vec<_> = events.iter().map(|e| (e.event_type.as_str(), &e.resource)).collect();
    assert_eq!(opened, [("PROFITSHARING.SUCCESS", &share), ("PROFITSHARING.CLOSED", &share)]);
    assert_ne!(events[0].id, events[1].id, "each line its own event");
    let view = env.sharing("T_PS_0005").await;
    assert_eq!((&view["orders"][0]["state"], &view["orders"][0]["finished_by"]), (&json!("FINISHED"), &json!("timer")), "{view}");
    assert!(view["orders"][0]["finished_at"].is_string(), "{view}");
    // Its query answers it as finished and sends nothing more.
    let queried = client.query_share(&account, &tx, "PS1").await.unwrap();
    assert_eq!(
        results(&queried),
        [
            (MCHID.to_owned(), 200, ReceiverResult::Success, None),
            (PARTNER_OPENID.to_owned(), 50, ReceiverResult::Closed, Some("NO_RELATION".to_owned()))
        ]
    );
    assert_eq!(env.sandbox.pay_notifications(Some("T_PS_0005")).len(), 3);
    env.stop().await;
}

#[tokio::test]
async fn the_profitsharing_controls_refuse_bad_input_with_a_json_message() {
    let env = Env::start().await;
    let provider = env.register().await;
    env.register_sub(&provider, SUB_MCHID, None).await;
    for (path, body, says) in [
        ("profitsharing/close-next", json!({"account": PARTNER_OPENID}), "missing field `fail_reason`"),
        ("profitsharing/close-next", json!({"account": PARTNER_OPENID, "fail_reason": "bad reason"}), "fail_reason must be"),
        ("profitsharing/close-next", json!({"account": "", "fail_reason": "ACCOUNT_ABNORMAL"}), "account must be"),
        ("profitsharing/rules", json!({"one_minute": "no"}), "one_minute"),
        ("profitsharing/rules", json!({"one_minute": true, "ratio": 1}), "unknown field `ratio`"),
        ("profitsharing/rules", json!({"finish_after_ms": 60_001, "one_minute": false}), "at most 60000"),
        ("profitsharing/rules", json!({"finish_after_ms": -1}), "finish_after_ms"),
        ("profitsharing/rules", json!({"notify": "off"}), "notify"),
        ("profitsharing/rules", json!({"returns_processing": "yes"}), "returns_processing"),
        ("profitsharing/return-fail-next", json!({"account": MCHID}), "missing field `fail_reason`"),
        ("profitsharing/return-fail-next", json!({"account": MCHID, "fail_reason": "NO_RELATION"}), "fail_reason must be one of"),
        ("profitsharing/return-fail-next", json!({"account": "", "fail_reason": "BALANCE_NOT_ENOUGH"}), "account must be"),
        ("profitsharing/tamper", json!({"out_order_no": "PS_NONE", "forget": true}), "no share request PS_NONE"),
        ("profitsharing/tamper", json!({"out_order_no": "PS_NONE"}), "name the line's account, or forget"),
        ("profitsharing/tamper-return", json!({"out_return_no": "PR_NONE", "result": "FAILED"}), "no return PR_NONE"),
        ("profitsharing/tamper-return", json!({"out_return_no": "PR_NONE", "result": "LOST"}), "result must be one of"),
    ] {
        let (status, answer) = env.control(path, body.clone()).await;
        assert_eq!(status, 400, "{body}: {answer}");
        assert!(answer["message"].as_str().unwrap_or_default().contains(says), "{body}: {answer}");
    }
    // Nothing of a refused call applies.
    assert_eq!(
        env.control("profitsharing/rules", json!({})).await,
        (200, json!({"one_minute": true, "finish_after_ms": 1000, "notify": true, "returns_processing": false}))
    );
    for (query, says) in [
        ("profitsharing?sub_mchid=1900000200", "takes ?sub_mchid="),
        ("profitsharing?sub_mchid=1900000200&out_trade_no=T_NONE", "has no order"),
    ] {
        let (status, answer) = env.control_get(query).await;
        assert_eq!(status, 400, "{query}: {answer}");
        assert!(answer["message"].as_str().unwrap_or_default().contains(says), "{query}: {answer}");
    }
    env.stop().await;
}

fn return_order(out_return_no: &str, fen: i64, return_mchid: &str) -> ReturnOrder {
    ReturnOrder {
        out_order_no: "PS1".into(),
        out_return_no: out_return_no.into(),
        return_mchid: return_mchid.into(),
        amount: Money::from_fen(fen),
        description: "before a refund".into(),
    }
}

#[tokio::test]
async fn a_shared_payment_is_refunded_past_its_rest_only_once_the_merchant_receiver_returned_its_part() {
    let env = Env::start().await;
    let provider = env.register().await;
    let account = env.register_sub(&provider, SUB_MCHID, None).await;
    let client = env.client();
    let tx = env.paid_for_sharing(&client, &account, "T_PS_0006", 1000).await;
    client.add_receiver(&account, &platform_receiver(&provider)).await.unwrap();
    client.add_receiver(&account, &partner_receiver()).await.unwrap();
    let lines = vec![share_line(ReceiverType::MerchantId, MCHID, 200), share_line(ReceiverType::PersonalOpenid, PARTNER_OPENID, 50)];
    client.share(&account, &share_order(&tx, "PS1", lines)).await.unwrap();
    client.query_share(&account, &tx, "PS1").await.unwrap();

    // 1000 paid, 250 shared: the sub-merchant holds 750 of it.
    let early = client.refund(&account, &env.refund("T_PS_0006", "R_PS_1", 900, 1000)).await.unwrap_err();
    assert_eq!(refused(&early), (403, "NOT_ENOUGH"));
    assert!(early.to_string().contains("基本账户余额不足"), "{early}");
    // A person gives nothing back.
    let person = client.return_share(&account, &return_order("PR0", 50, PARTNER_OPENID)).await.unwrap_err();
    assert_eq!(refused(&person), (400, "INVALID_REQUEST"));
    // The platform's merchant account cannot pay it back, once.
    let (status, marked) =
        env.control("profitsharing/return-fail-next", json!({"account": MCHID, "fail_reason": "BALANCE_NOT_ENOUGH"})).await;
    assert_eq!((status, marked), (200, json!({"account": MCHID, "fail_reason": "BALANCE_NOT_ENOUGH"})));
    let failed = client.return_share(&account, &return_order("PR1", 200, MCHID)).await.unwrap();
    assert_eq!((failed.result, failed.fail_reason.as_deref()), (ReturnResult::Failed, Some("BALANCE_NOT_ENOUGH")));
    // Processing first: nothing has moved until the same number is asked again.
    let (status, rules) = env.control("profitsharing/rules", json!({"returns_processing": true})).await;
    assert_eq!((status, &rules["returns_processing"]), (200, &json!(true)), "{rules}");
    let processing = client.return_share(&account, &return_order("PR2", 200, MCHID)).await.unwrap();
    assert_eq!((processing.result, processing.finish_time), (ReturnResult::Processing, None));
    let still = client.refund(&account, &env.refund("T_PS_0006", "R_PS_1", 900, 1000)).await.unwrap_err();
    assert_eq!(refused(&still), (403, "NOT_ENOUGH"));
    let returned = client.return_share(&account, &return_order("PR2", 200, MCHID)).await.unwrap();
    assert_eq!(
        (returned.result, returned.return_id.clone(), returned.amount),
        (ReturnResult::Success, processing.return_id, Some(Money::from_fen(200)))
    );
    assert!(returned.finish_time.is_some());

    // 1000 − (250 − 200): 950 the sub-merchant holds.
    let refund = client.refund(&account, &env.refund("T_PS_0006", "R_PS_1", 900, 1000)).await.unwrap();
    assert_eq!(refund.status, RefundStatus::Processing);
    let view = env.sharing("T_PS_0006").await;
    assert_eq!(
        (&view["orders"][0]["lines"][0]["returned"], &view["orders"][0]["lines"][1]["returned"]),
        (&json!(200), &json!(0)),
        "{view}"
    );
    assert_eq!(
        view["returns"],
        json!([
            {"out_return_no": "PR1", "out_order_no": "PS1", "return_mchid": MCHID, "amount": 200, "result": "FAILED", "fail_reason": "BALANCE_NOT_ENOUGH"},
            {"out_return_no": "PR2", "out_order_no": "PS1", "return_mchid": MCHID, "amount": 200, "result": "SUCCESS", "fail_reason": null},
        ])
    );
    env.stop().await;
}

#[tokio::test]
async fn a_return_is_queried_through_the_real_client_and_the_platforms_books_can_be_made_to_differ_from_ours() {
    let env = Env::start().await;
    let provider = env.register().await;
    let account = env.register_sub(&provider, SUB_MCHID, None).await;
    let client = env.client();
    let tx = env.paid_for_sharing(&client, &account, "T_PS_0007", 1000).await;
    client.add_receiver(&account, &platform_receiver(&provider)).await.unwrap();
    client.add_receiver(&account, &partner_receiver()).await.unwrap();
    let lines = vec![share_line(ReceiverType::MerchantId, MCHID, 200), share_line(ReceiverType::PersonalOpenid, PARTNER_OPENID, 50)];
    client.share(&account, &share_order(&tx, "PS1", lines)).await.unwrap();
    client.query_share(&account, &tx, "PS1").await.unwrap();
    assert_eq!(env.control("profitsharing/rules", json!({"returns_processing": true})).await.0, 200);

    // The query finishes a return processing, as its number's POST would, and answers the same.
    let processing = client.return_share(&account, &return_order("PR1", 200, MCHID)).await.unwrap();
    let returned = client.query_return(&account, "PS1", "PR1").await.unwrap();
    let unknown = client.query_return(&account, "PS1", "PR9").await.unwrap_err();

    assert_eq!(processing.result, ReturnResult::Processing);
    assert_eq!(
        (returned.result, returned.return_id.clone(), returned.amount),
        (ReturnResult::Success, processing.return_id.clone(), Some(Money::from_fen(200)))
    );
    assert_eq!(client.return_share(&account, &return_order("PR1", 200, MCHID)).await.unwrap(), returned, "the POST answers the same");
    assert_eq!(refused(&unknown), (404, "RESOURCE_NOT_EXISTS"));
    assert_eq!(env.sharing("T_PS_0007").await["returns"].as_array().map(Vec::len), Some(1), "asking made none");

    // The platform's books made to differ: its answers follow.
    let failed = json!({"out_return_no": "PR1", "result": "FAILED", "fail_reason": "BALANCE_NOT_ENOUGH"});
    let (status, answer) = env.control("profitsharing/tamper-return", failed).await;
    assert_eq!((status, &answer["result"]), (200, &json!("FAILED")), "{answer}");
    let queried = client.query_return(&account, "PS1", "PR1").await.unwrap();
    assert_eq!((queried.result, queried.fail_reason.as_deref()), (ReturnResult::Failed, Some("BALANCE_NOT_ENOUGH")));
    let closed =
        json!({"out_order_no": "PS1", "account": PARTNER_OPENID, "result": "CLOSED", "amount": 40, "fail_reason": "ACCOUNT_ABNORMAL"});
    let (status, answer) = env.control("profitsharing/tamper", closed).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        results(&client.query_share(&account, &tx, "PS1").await.unwrap()),
        [
            (MCHID.to_owned(), 200, ReceiverResult::Success, None),
            (PARTNER_OPENID.to_owned(), 40, ReceiverResult::Closed, Some("ACCOUNT_ABNORMAL".to_owned()))
        ]
    );
    let (status, forgotten) = env.control("profitsharing/tamper", json!({"out_order_no": "PS1", "forget": true})).await;
    assert_eq!((status, forgotten), (200, json!({"sub_mchid": SUB_MCHID, "out_order_no": "PS1", "forgotten": true, "returns": ["PR1"]})));
    assert_eq!(refused(&client.query_share(&account, &tx, "PS1").await.unwrap_err()), (404, "RESOURCE_NOT_EXISTS"));
    assert_eq!(refused(&client.query_return(&account, "PS1", "PR1").await.unwrap_err()), (404, "RESOURCE_NOT_EXISTS"));
    env.stop().await;
}
