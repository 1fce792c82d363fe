//! The pay client against a small stub of the pay platform on loopback: the stub checks each
//! request's signature with the merchant certificate and signs its answers with the platform
//! key, as the platform does.
#![allow(clippy::unwrap_used)]

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use atrium_kernel::Money;
use atrium_payments::{
    EventResource, JsapiOrder, MerchantAccount, NotificationRequest, PayPlatform, PayPlatformError, PlatformKey, Receiver, ReceiverAdd,
    ReceiverResult, ReceiverType, RefundOrder, RefundStatus, Relation, ReturnOrder, ReturnResult, Secret, ShareLine, ShareOrder,
    ShareOrderState, SubMerchant, TradeState, UnfreezeOrder,
};
use atrium_wechat::pay::sign::{MerchantSigner, request_message};
use atrium_wechat::{CallRecorder, WechatPay, WechatPayConfig};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use openssl::hash::MessageDigest;
use openssl::pkey::{PKey, Public};
use openssl::sign::Verifier;
use openssl::x509::X509;
use std::collections::HashMap;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const PLATFORM_KEY_ID: &str = "PUB_KEY_ID_0114232134912410000000000000000000";

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/fixtures/pay/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn merchant_serial() -> String {
    let v: serde_json::Value = serde_json::from_str(&fixture("vectors.json")).unwrap();
    v["merchant_serial"].as_str().unwrap().to_owned()
}

/// What the stub saw.
#[derive(Default)]
struct Seen {
    hits: HashMap<String, usize>,
    bad_auth: usize,
    bodies: Vec<String>,
    /// (method, path and query, body) of each request, in order.
    requests: Vec<(String, String, String)>,
    /// The `Wechatpay-Serial` of each request (empty when it has none), in order.
    serials: Vec<String>,
}

struct Stub {
    seen: Mutex<Seen>,
    /// Checks our requests: the merchant certificate's key.
    merchant: PKey<Public>,
    /// Signs answers as the platform.
    platform: MerchantSigner,
    base: Mutex<String>,
}

fn auth_fields(header: &str) -> Option<HashMap<String, String>> {
    let rest = header.strip_prefix("WECHATPAY2-SHA256-RSA2048 ")?;
    rest.split(',').map(|kv| kv.split_once('=').map(|(k, v)| (k.to_owned(), v.trim_matches('"').to_owned()))).collect()
}

impl Stub {
    /// Whether the request carries a valid merchant signature for this method, path and body.
    fn signed_by_merchant(&self, req: &HttpRequest, body: &str) -> bool {
        let Some(f) = req.headers().get("Authorization").and_then(|h| h.to_str().ok()).and_then(auth_fields) else { return false };
        let path_and_query = req.uri().path_and_query().map(|p| p.as_str()).unwrap_or_default();
        let (Some(ts), Some(nonce), Some(sig), Some(serial), Some(mchid)) =
            (f.get("timestamp"), f.get("nonce_str"), f.get("signature"), f.get("serial_no"), f.get("mchid"))
        else {
            return false;
        };
        let Ok(ts_num) = ts.parse::<i64>() else { return false };
        let message = request_message(req.method().as_str(), path_and_query, ts_num, nonce, body);
        let Ok(signature) = STANDARD.decode(sig) else { return false };
        let mut verifier = Verifier::new(MessageDigest::sha256(), &self.merchant).unwrap();
        verifier.update(message.as_bytes()).unwrap();
        mchid == "1900000109" && *serial == merchant_serial() && verifier.verify(&signature).unwrap_or(false)
    }

    fn answer(&self, status: u16, body: &str) -> HttpResponse {
        let ts = chrono::Utc::now().timestamp().to_string();
        let nonce = "stubnonce";
        let signature = self.platform.sign(&format!("{ts}\n{nonce}\n{body}\n")).unwrap();
        HttpResponse::build(actix_web::http::StatusCode::from_u16(status).unwrap())
            .insert_header(("Wechatpay-Timestamp", ts))
            .insert_header(("Wechatpay-Nonce", nonce))
            .insert_header(("Wechatpay-Signature", signature))
            .insert_header(("Wechatpay-Serial", PLATFORM_KEY_ID))
            .insert_header(("Content-Type", "application/json"))
            .body(body.to_owned())
    }
}

async fn handle(req: HttpRequest, body: web::Bytes, stub: web::Data<Stub>) -> HttpResponse {
    let body = String::from_utf8(body.to_vec()).unwrap();
    let path = req.path().to_owned();
    let hits = {
        let mut seen = stub.seen.lock().unwrap();
        *seen.hits.entry(path.clone()).or_default() += 1;
        seen.bodies.push(body.clone());
        let path_and_query = req.uri().path_and_query().map(|p| p.as_str().to_owned()).unwrap_or_default();
        seen.requests.push((req.method().to_string(), path_and_query, body.clone()));
        let serial = req.headers().get("Wechatpay-Serial").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
        seen.serials.push(serial);
        seen.hits[&path]
    };
    if !stub.signed_by_merchant(&req, &body) {
        stub.seen.lock().unwrap().bad_auth += 1;
        return stub.answer(401, r#"{"code":"SIGN_ERROR","message":"bad signature"}"#);
    }
    match (req.method().as_str(), path.as_str()) {
        ("POST", "/v3/pay/transactions/jsapi") => stub.answer(200, r#"{"prepay_id": "wx-prepay-1"}"#),
        ("POST", "/v3/pay/partner/transactions/jsapi") => stub.answer(200, r#"{"prepay_id": "wx-prepay-sp"}"#),
        ("GET", "/v3/pay/partner/transactions/out-trade-no/T_SP_0001") => stub.answer(200, PARTNER_TRANSACTION),
        ("GET", "/v3/refund/domestic/refunds/R_SP_0001") => stub.answer(200, PARTNER_REFUND),
        ("GET", p) if p.starts_with("/v3/refund/domestic/refunds/") => stub.answer(
            200,
            r#"{"refund_id":"5000","out_refund_no":"R1","out_trade_no":"T1","status":"SUCCESS","amount":{"refund":300,"total":1000}}"#,
        ),
        ("GET", "/v3/pay/transactions/out-trade-no/T_FLAKY") if hits <= 2 => HttpResponse::ServiceUnavailable().body("busy"),
        ("GET", "/v3/pay/transactions/out-trade-no/T_FLAKY") => stub.answer(
            200,
            r#"{"out_trade_no":"T_FLAKY","trade_state":"SUCCESS","transaction_id":"4200","success_time":"2026-04-01T12:00:00+08:00","amount":{"total":1000,"payer_total":900,"currency":"CNY"}}"#,
        ),
        ("GET", "/v3/pay/transactions/out-trade-no/T_SLOW") => {
            tokio::time::sleep(Duration::from_secs(3)).await;
            stub.answer(200, "{}")
        }
        ("GET", "/v3/pay/transactions/out-trade-no/T_FORGED") => {
            // Signed for one body, sent with another.
            let signed = stub.answer(200, r#"{"out_trade_no":"T_FORGED","trade_state":"NOTPAY"}"#);
            signed.set_body(actix_web::body::BoxBody::new(r#"{"out_trade_no":"T_FORGED","trade_state":"SUCCESS"}"#))
        }
        ("GET", "/v3/pay/transactions/out-trade-no/T_UNSIGNED") => HttpResponse::Ok().body(r#"{"out_trade_no":"T_UNSIGNED","trade_state":"SUCCESS"}"#),
        ("GET", p) if p.starts_with("/v3/pay/transactions/out-trade-no/") => {
            stub.answer(404, r#"{"code":"ORDER_NOT_EXIST","message":"order does not exist"}"#)
        }
        ("POST", p) if p.ends_with("/close") => {
            let ts = chrono::Utc::now().timestamp().to_string();
            let signature = stub.platform.sign(&format!("{ts}\nn\n\n")).unwrap();
            HttpResponse::NoContent()
                .insert_header(("Wechatpay-Timestamp", ts))
                .insert_header(("Wechatpay-Nonce", "n"))
                .insert_header(("Wechatpay-Signature", signature))
                .insert_header(("Wechatpay-Serial", PLATFORM_KEY_ID))
                .finish()
        }
        // A connection closed for idleness answers 408, unsigned and with no body; then busy.
        ("POST", "/v3/refund/domestic/refunds") if body.contains("R_NOT_TAKEN") && hits == 1 => HttpResponse::RequestTimeout().finish(),
        ("POST", "/v3/refund/domestic/refunds") if body.contains("R_NOT_TAKEN") && hits == 2 => HttpResponse::TooManyRequests().finish(),
        ("POST", "/v3/refund/domestic/refunds") if body.contains("R_REFUSED") => {
            stub.answer(400, r#"{"code":"PARAM_ERROR","message":"invalid out_refund_no"}"#)
        }
        ("POST", "/v3/refund/domestic/refunds") if body.contains(r#""sub_mchid""#) => stub.answer(200, PARTNER_REFUND),
        ("POST", "/v3/refund/domestic/refunds") => stub.answer(
            200,
            r#"{"refund_id":"5000","out_refund_no":"R1","out_trade_no":"T1","status":"PROCESSING","amount":{"refund":300,"total":1000}}"#,
        ),
        ("POST", "/v3/profitsharing/receivers/add") => {
            let mut echo: serde_json::Value = serde_json::from_str(&body).unwrap();
            echo.as_object_mut().unwrap().remove("appid");
            stub.answer(200, &echo.to_string())
        }
        ("POST", "/v3/profitsharing/orders") if body.contains("PS_ODD_STATE") => stub.answer(200, &SHARE_PROCESSING.replace("PROCESSING", "PAUSED")),
        ("POST", "/v3/profitsharing/orders") if body.contains("PS_ODD_TYPE") => stub.answer(200, &SHARE_PROCESSING.replace("PERSONAL_OPENID", "PERSONAL_SUB_OPENID")),
        ("POST", "/v3/profitsharing/orders") if body.contains("PS_ODD_RESULT") => stub.answer(200, &SHARE_PROCESSING.replace("PENDING", "WAITING")),
        ("POST", "/v3/profitsharing/orders") if body.contains("PS_USED") => {
            stub.answer(400, r#"{"code":"INVALID_REQUEST","message":"the ratio is exceeded"}"#)
        }
        ("POST", "/v3/profitsharing/orders") => stub.answer(200, SHARE_PROCESSING),
        ("POST", "/v3/profitsharing/orders/unfreeze") => stub.answer(200, SHARE_UNFROZEN),
        // A 5xx first: the retry carries the same body.
        ("POST", "/v3/profitsharing/return-orders") if body.contains("PR_FLAKY") && hits == 1 => HttpResponse::ServiceUnavailable().body("busy"),
        ("POST", "/v3/profitsharing/return-orders") if body.contains("PR_FAILED") => stub.answer(200, RETURN_FAILED),
        ("POST", "/v3/profitsharing/return-orders") if body.contains("PR_PROCESSING") => stub.answer(200, RETURN_PROCESSING),
        ("POST", "/v3/profitsharing/return-orders") if body.contains("PR_ODD_RESULT") => stub.answer(200, &RETURN_PROCESSING.replace("PROCESSING", "DONE")),
        ("POST", "/v3/profitsharing/return-orders") if body.contains("PR_PERSON") => {
            stub.answer(400, r#"{"code":"INVALID_REQUEST","message":"不支持分账给个人的分账单回退"}"#)
        }
        ("POST", "/v3/profitsharing/return-orders") => stub.answer(200, RETURN_SUCCESS),
        ("GET", "/v3/profitsharing/return-orders/PR_UNKNOWN") => {
            stub.answer(404, r#"{"code":"RESOURCE_NOT_EXISTS","message":"no such return"}"#)
        }
        ("GET", "/v3/profitsharing/return-orders/PR_ODD_RESULT") => stub.answer(200, &RETURN_PROCESSING.replace("PROCESSING", "DONE")),
        ("GET", p) if p.starts_with("/v3/profitsharing/return-orders/") => stub.answer(200, RETURN_FAILED),
        ("GET", "/v3/profitsharing/orders/PS_UNKNOWN") => stub.answer(404, r#"{"code":"RESOURCE_NOT_EXISTS","message":"no such order"}"#),
        ("GET", p) if p.starts_with("/v3/profitsharing/orders/") => stub.answer(200, SHARE_FINISHED),
        ("GET", "/v3/bill/tradebill") => {
            let query = req.query_string();
            if query.contains("2026-03-30") {
                return stub.answer(400, r#"{"code":"NO_STATEMENT_EXIST","message":"no statement"}"#);
            }
            let hash = if query.contains("2026-03-29") { "0".repeat(40) } else { atrium_wechat::pay::bill::sha1_hex(fixture("tradebill.csv").as_bytes()) };
            let url = format!("{}/v3/billdownload/file?token=t1", stub.base.lock().unwrap());
            stub.answer(200, &serde_json::json!({"hash_type": "SHA1", "hash_value": hash, "download_url": url}).to_string())
        }
        ("GET", "/v3/billdownload/file") => HttpResponse::Ok().body(fixture("tradebill.csv")),
        _ => HttpResponse::NotFound().finish(),
    }
}

/// A transaction as the partner query answers it: the provider's and the sub-merchant's ids.
const PARTNER_TRANSACTION: &str = r#"{"sp_appid":"wx_mp","sp_mchid":"1900000109","sub_appid":"wx_sub_mp","sub_mchid":"1900000200","out_trade_no":"T_SP_0001","trade_type":"JSAPI","trade_state":"SUCCESS","transaction_id":"4201","success_time":"2026-04-01T12:00:00+08:00","payer":{"sp_openid":"o-sp-ann","sub_openid":"o-sub-ann"},"amount":{"total":1000,"payer_total":1000,"currency":"CNY"}}"#;

/// A sub-merchant's refund as the refund endpoints answer it.
const PARTNER_REFUND: &str = r#"{"sub_mchid":"1900000200","refund_id":"5001","out_refund_no":"R_SP_0001","out_trade_no":"T_SP_0001","status":"PROCESSING","amount":{"refund":300,"total":1000}}"#;

/// A share request as the platform accepts it: processing, each line pending (the pending
/// line's `finish_time` is a placeholder the client must not take for a finish).
const SHARE_PROCESSING: &str = r#"{"sub_mchid":"1900000200","transaction_id":"4201","out_order_no":"PS17","order_id":"3008450740201411110007820472","state":"PROCESSING","receivers":[{"amount":30,"description":"platform share","type":"MERCHANT_ID","account":"1900000109","result":"PENDING","detail_id":"36011111111111111111111","create_time":"2026-04-01T12:01:00+08:00","finish_time":"1970-01-01T08:00:00+08:00"},{"amount":20,"description":"partner commission","type":"PERSONAL_OPENID","account":"o-partner-7","result":"PENDING","detail_id":"36011111111111111111112","create_time":"2026-04-01T12:01:00+08:00"}]}"#;

/// The same request finished: one line paid, one closed.
const SHARE_FINISHED: &str = r#"{"sub_mchid":"1900000200","transaction_id":"4201","out_order_no":"PS17","order_id":"3008450740201411110007820472","state":"FINISHED","receivers":[{"amount":30,"description":"platform share","type":"MERCHANT_ID","account":"1900000109","result":"SUCCESS","detail_id":"36011111111111111111111","create_time":"2026-04-01T12:01:00+08:00","finish_time":"2026-04-01T12:02:00+08:00"},{"amount":20,"description":"partner commission","type":"PERSONAL_OPENID","account":"o-partner-7","result":"CLOSED","fail_reason":"ACCOUNT_ABNORMAL","detail_id":"36011111111111111111112","create_time":"2026-04-01T12:01:00+08:00","finish_time":"2026-04-01T12:02:00+08:00"}]}"#;

/// An unfreeze: the sub-merchant's own line.
const SHARE_UNFROZEN: &str = r#"{"sub_mchid":"1900000200","transaction_id":"4201","out_order_no":"PS17-u","order_id":"3008450740201411110007820473","state":"FINISHED","receivers":[{"amount":950,"description":"rest to the tenant","type":"MERCHANT_ID","account":"1900000200","result":"SUCCESS","detail_id":"36011111111111111111113","create_time":"2026-04-01T12:03:00+08:00","finish_time":"2026-04-01T12:03:00+08:00"}]}"#;

/// A return carried out at once: the receiver's 30 fen are back with the sub-merchant.
const RETURN_SUCCESS: &str = r#"{"sub_mchid":"1900000200","order_id":"3008450740201411110007820472","out_order_no":"PS17","out_return_no":"PR17","return_id":"3008450740201411110007820480","return_mchid":"1900000109","amount":30,"description":"before a refund","result":"SUCCESS","create_time":"2026-04-02T09:00:00+08:00","finish_time":"2026-04-02T09:00:01+08:00"}"#;

/// A return still being carried out (its `finish_time` a placeholder the client must not take
/// for a finish).
const RETURN_PROCESSING: &str = r#"{"sub_mchid":"1900000200","order_id":"3008450740201411110007820472","out_order_no":"PS17","out_return_no":"PR_PROCESSING","return_id":"3008450740201411110007820481","return_mchid":"1900000109","amount":30,"description":"before a refund","result":"PROCESSING","create_time":"2026-04-02T09:00:00+08:00","finish_time":"1970-01-01T08:00:00+08:00"}"#;

/// A return the receiver could not make.
const RETURN_FAILED: &str = r#"{"sub_mchid":"1900000200","order_id":"3008450740201411110007820472","out_order_no":"PS17","out_return_no":"PR_FAILED","return_id":"3008450740201411110007820482","return_mchid":"1900000109","amount":30,"description":"before a refund","result":"FAILED","fail_reason":"BALANCE_NOT_ENOUGH","create_time":"2026-04-02T09:00:00+08:00","finish_time":"2026-04-02T09:00:02+08:00"}"#;

struct Platform {
    stub: web::Data<Stub>,
    base: String,
    handle: actix_web::dev::ServerHandle,
}

impl Platform {
    async fn start() -> Platform {
        let stub = web::Data::new(Stub {
            seen: Mutex::new(Seen::default()),
            merchant: X509::from_pem(fixture("merchant_cert.pem").as_bytes()).unwrap().public_key().unwrap(),
            platform: MerchantSigner::from_pem(&fixture("platform_key.pem")).unwrap(),
            base: Mutex::new(String::new()),
        });
        let data = stub.clone();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = HttpServer::new(move || App::new().app_data(data.clone()).default_service(web::to(handle)))
            .workers(2)
            .disable_signals()
            .listen(listener)
            .unwrap()
            .run();
        let handle = server.handle();
        tokio::spawn(server);
        let base = format!("http://{addr}");
        *stub.base.lock().unwrap() = base.clone();
        Platform { stub, base, handle }
    }

    fn client(&self, recorder: Arc<Recorder>) -> WechatPay {
        let config = WechatPayConfig {
            base_url: self.base.clone(),
            timeout: Duration::from_millis(500),
            retries: 2,
            backoff: Duration::from_millis(20),
        };
        WechatPay::new(config).unwrap().with_recorder(recorder)
    }

    /// (method, path and query, body as JSON or `null`) of each request, in order.
    fn requests(&self) -> Vec<(String, String, serde_json::Value)> {
        let seen = self.stub.seen.lock().unwrap();
        seen.requests.iter().map(|(m, p, b)| (m.clone(), p.clone(), serde_json::from_str(b).unwrap_or_default())).collect()
    }

    fn serials(&self) -> Vec<String> {
        self.stub.seen.lock().unwrap().serials.clone()
    }

    fn hits(&self, path: &str) -> usize {
        self.stub.seen.lock().unwrap().hits.get(path).copied().unwrap_or_default()
    }

    async fn stop(self) {
        assert_eq!(self.stub.seen.lock().unwrap().bad_auth, 0, "every request carried a valid merchant signature");
        self.handle.stop(false).await;
    }
}

#[derive(Default)]
struct Recorder(Mutex<Vec<(String, String)>>);

impl CallRecorder for Recorder {
    fn record(&self, endpoint: &str, errcode: &str, _elapsed: Duration) {
        self.0.lock().unwrap().push((endpoint.to_owned(), errcode.to_owned()));
    }
}

impl Recorder {
    fn codes(&self) -> Vec<String> {
        self.0.lock().unwrap().iter().map(|(_, c)| c.clone()).collect()
    }

    fn endpoints(&self) -> Vec<String> {
        self.0.lock().unwrap().iter().map(|(e, _)| e.clone()).collect()
    }
}

fn account() -> MerchantAccount {
    let v: serde_json::Value = serde_json::from_str(&fixture("vectors.json")).unwrap();
    MerchantAccount {
        mchid: "1900000109".into(),
        appid: "wx_mp".into(),
        serial_no: merchant_serial(),
        private_key: Secret::new(fixture("merchant_key.pem")),
        api_v3_key: Secret::new(v["notification"]["api_v3_key"].as_str().unwrap()),
        platform_keys: vec![PlatformKey { id: PLATFORM_KEY_ID.into(), pem: fixture("platform_public.pem") }],
        sub_merchant: None,
    }
}

#[tokio::test]
async fn a_signed_order_is_accepted_and_its_signed_answer_verified() {
    let platform = Platform::start().await;
    let recorder = Arc::new(Recorder::default());
    let client = platform.client(recorder.clone());
    let order = JsapiOrder {
        out_trade_no: "T0000001".into(),
        description: "Coffee".into(),
        amount: Money::from_fen(1000),
        openid: "o-ann".into(),
        attach: None,
        time_expire: chrono::DateTime::from_timestamp(1_775_016_000, 0).unwrap(),
        notify_url: "https://atrium.example.com/api/v1/miniprogram/payment/notify/3".into(),
    };

    let prepay_id = client.jsapi_order(&account(), &order).await.unwrap();

    assert_eq!(prepay_id, "wx-prepay-1");
    let body: serde_json::Value = serde_json::from_str(&platform.stub.seen.lock().unwrap().bodies[0]).unwrap();
    assert_eq!(body["amount"], serde_json::json!({"total": 1000, "currency": "CNY"}));
    assert_eq!(body["time_expire"], "2026-04-01T12:00:00+08:00");
    assert_eq!(body["payer"]["openid"], "o-ann");
    assert_eq!(recorder.0.lock().unwrap().clone(), [("/v3/pay/transactions/jsapi".to_owned(), "0".to_owned())]);
    platform.stop().await;
}

#[tokio::test]
async fn a_5xx_is_retried_until_the_platform_answers() {
    let platform = Platform::start().await;
    let recorder = Arc::new(Recorder::default());

    let tx = platform.client(recorder.clone()).query_order(&account(), "T_FLAKY").await.unwrap();

    assert_eq!((tx.trade_state, tx.payer_total), (TradeState::Success, Some(Money::from_fen(900))));
    assert_eq!(platform.hits("/v3/pay/transactions/out-trade-no/T_FLAKY"), 3);
    assert_eq!(recorder.codes(), ["http_5xx", "http_5xx", "0"]);
    platform.stop().await;
}

#[tokio::test]
async fn a_408_or_429_is_not_a_refusal_and_is_retried() {
    let platform = Platform::start().await;
    let recorder = Arc::new(Recorder::default());
    let refund = RefundOrder {
        out_trade_no: "T1".into(),
        out_refund_no: "R_NOT_TAKEN".into(),
        reason: None,
        amount: Money::from_fen(300),
        total: Money::from_fen(1000),
        notify_url: "https://atrium.example.com/n".into(),
    };

    let answer = platform.client(recorder.clone()).refund(&account(), &refund).await.unwrap();

    assert_eq!(answer.status, RefundStatus::Processing);
    assert_eq!(platform.hits("/v3/refund/domestic/refunds"), 3);
    assert_eq!(recorder.codes(), ["http_408", "http_429", "0"]);
    platform.stop().await;
}

#[tokio::test]
async fn a_4xx_is_not_retried_and_keeps_the_platform_code() {
    let platform = Platform::start().await;
    let recorder = Arc::new(Recorder::default());
    let client = platform.client(recorder.clone());
    let refund = RefundOrder {
        out_trade_no: "T1".into(),
        out_refund_no: "R_REFUSED".into(),
        reason: None,
        amount: Money::from_fen(300),
        total: Money::from_fen(1000),
        notify_url: "https://atrium.example.com/n".into(),
    };

    let missing = client.query_order(&account(), "T_NOWHERE").await.unwrap_err();
    let refused = client.refund(&account(), &refund).await.unwrap_err();

    assert!(matches!(missing, PayPlatformError::Refused { status: 404, ref code, .. } if code == "ORDER_NOT_EXIST"), "{missing:?}");
    assert!(matches!(refused, PayPlatformError::Refused { status: 400, ref code, .. } if code == "PARAM_ERROR"), "{refused:?}");
    assert_eq!(platform.hits("/v3/refund/domestic/refunds"), 1);
    assert_eq!(recorder.codes(), ["ORDER_NOT_EXIST", "PARAM_ERROR"]);
    platform.stop().await;
}

#[tokio::test]
async fn a_platform_that_does_not_answer_costs_a_bounded_time() {
    let platform = Platform::start().await;
    let recorder = Arc::new(Recorder::default());
    let started = Instant::now();

    let err = platform.client(recorder.clone()).query_order(&account(), "T_SLOW").await.unwrap_err();

    // Three attempts of 500 ms and two short back-offs, far less than the stub's 3 s sleep.
    assert!(started.elapsed() < Duration::from_millis(2500), "{:?}", started.elapsed());
    assert!(matches!(err, PayPlatformError::Unavailable(ref m) if m.contains("timed out") && m.contains("3 attempts")), "{err:?}");
    assert_eq!(recorder.codes(), ["transport", "transport", "transport"]);
    platform.stop().await;
}

#[tokio::test]
async fn a_forged_or_unsigned_answer_is_not_believed() {
    let platform = Platform::start().await;
    let client = platform.client(Arc::new(Recorder::default()));

    let forged = client.query_order(&account(), "T_FORGED").await.unwrap_err();
    let unsigned = client.query_order(&account(), "T_UNSIGNED").await.unwrap_err();

    assert!(matches!(forged, PayPlatformError::Unavailable(ref m) if m.contains("does not verify")), "{forged:?}");
    assert!(matches!(unsigned, PayPlatformError::Unavailable(ref m) if m.contains("unsigned")), "{unsigned:?}");
    platform.stop().await;
}

#[tokio::test]
async fn close_refund_and_pay_params_work_end_to_end() {
    let platform = Platform::start().await;
    let client = platform.client(Arc::new(Recorder::default()));
    let refund = RefundOrder {
        out_trade_no: "T1".into(),
        out_refund_no: "R1".into(),
        reason: Some("broken cup".into()),
        amount: Money::from_fen(300),
        total: Money::from_fen(1000),
        notify_url: "https://atrium.example.com/n".into(),
    };

    client.close_order(&account(), "T0000001").await.unwrap();
    let accepted = client.refund(&account(), &refund).await.unwrap();
    let params = client.pay_params(&account(), "wx-prepay-1").unwrap();

    assert_eq!(
        (accepted.status, accepted.refund_id.as_deref(), accepted.amount),
        (RefundStatus::Processing, Some("5000"), Some(Money::from_fen(300)))
    );
    assert_eq!(platform.hits("/v3/pay/transactions/out-trade-no/T0000001/close"), 1);
    assert_eq!((params.package.as_str(), params.sign_type.as_str(), params.app_id.as_str()), ("prepay_id=wx-prepay-1", "RSA", "wx_mp"));
    let message = atrium_wechat::pay::sign::pay_sign_message(&params.app_id, &params.time_stamp, &params.nonce_str, &params.package);
    assert_eq!(params.pay_sign, MerchantSigner::from_pem(&fixture("merchant_key.pem")).unwrap().sign(&message).unwrap());
    platform.stop().await;
}

#[tokio::test]
async fn the_trade_bill_is_downloaded_checked_and_parsed() {
    let platform = Platform::start().await;
    let client = platform.client(Arc::new(Recorder::default()));
    let day = |d| chrono::NaiveDate::from_ymd_opt(2026, 3, d).unwrap();

    let lines = client.trade_bill(&account(), day(31)).await.unwrap();
    let empty = client.trade_bill(&account(), day(30)).await.unwrap();
    let corrupt = client.trade_bill(&account(), day(29)).await.unwrap_err();

    assert_eq!(lines.len(), 4);
    assert_eq!(lines[3].amount, Money::from_fen(1_234_567_890));
    assert!(empty.is_empty(), "NO_STATEMENT_EXIST is an empty day");
    assert!(matches!(corrupt, PayPlatformError::Unavailable(ref m) if m.contains("SHA-1")), "{corrupt:?}");
    platform.stop().await;
}

// --- service-provider mode -------------------------------------------------------------------

/// The provider's account (the fixtures' merchant) acting for sub-merchant 1900000200, which
/// pays in its own mini-program when `sub_appid` is given.
fn partner_account(sub_appid: Option<&str>) -> MerchantAccount {
    MerchantAccount {
        sub_merchant: Some(SubMerchant { sub_mchid: "1900000200".into(), sub_appid: sub_appid.map(str::to_owned) }),
        ..account()
    }
}

fn jsapi_order(out_trade_no: &str) -> JsapiOrder {
    JsapiOrder {
        out_trade_no: out_trade_no.into(),
        description: "Coffee".into(),
        amount: Money::from_fen(1000),
        openid: "o-ann".into(),
        attach: Some("table 7".into()),
        time_expire: chrono::DateTime::from_timestamp(1_775_016_000, 0).unwrap(),
        notify_url: "https://atrium.example.com/api/v1/miniprogram/payment/notify/3".into(),
    }
}

fn refund_order(out_trade_no: &str, out_refund_no: &str) -> RefundOrder {
    RefundOrder {
        out_trade_no: out_trade_no.into(),
        out_refund_no: out_refund_no.into(),
        reason: Some("broken cup".into()),
        amount: Money::from_fen(300),
        total: Money::from_fen(1000),
        notify_url: "https://atrium.example.com/n".into(),
    }
}

#[tokio::test]
async fn a_sub_merchant_order_goes_to_the_partner_endpoint_with_the_partner_body() {
    let platform = Platform::start().await;
    let recorder = Arc::new(Recorder::default());
    let client = platform.client(recorder.clone());

    let own_app = client.jsapi_order(&partner_account(Some("wx_sub_mp")), &jsapi_order("T_SP_0001")).await.unwrap();
    let provider_app = client.jsapi_order(&partner_account(None), &jsapi_order("T_SP_0002")).await.unwrap();

    assert_eq!((own_app.as_str(), provider_app.as_str()), ("wx-prepay-sp", "wx-prepay-sp"));
    let common = serde_json::json!({
        "sp_appid": "wx_mp",
        "sp_mchid": "1900000109",
        "sub_mchid": "1900000200",
        "description": "Coffee",
        "time_expire": "2026-04-01T12:00:00+08:00",
        "notify_url": "https://atrium.example.com/api/v1/miniprogram/payment/notify/3",
        "attach": "table 7",
        "settle_info": {"profit_sharing": true},
        "amount": {"total": 1000, "currency": "CNY"},
    });
    let with = |extra: serde_json::Value| {
        let mut body = common.clone();
        body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        body
    };
    let requests = platform.requests();
    let jsapi = "/v3/pay/partner/transactions/jsapi".to_owned();
    assert_eq!(
        requests[0],
        (
            "POST".to_owned(),
            jsapi.clone(),
            with(serde_json::json!({"out_trade_no": "T_SP_0001", "sub_appid": "wx_sub_mp", "payer": {"sub_openid": "o-ann"}}))
        )
    );
    assert_eq!(
        requests[1],
        ("POST".to_owned(), jsapi.clone(), with(serde_json::json!({"out_trade_no": "T_SP_0002", "payer": {"sp_openid": "o-ann"}})))
    );
    assert_eq!(recorder.endpoints(), [jsapi.clone(), jsapi]);
    platform.stop().await;
}

#[tokio::test]
async fn pay_params_of_a_sub_merchant_name_the_app_the_payer_pays_in_signed_by_the_provider() {
    let platform = Platform::start().await;
    let client = platform.client(Arc::new(Recorder::default()));
    let provider_key = MerchantSigner::from_pem(&fixture("merchant_key.pem")).unwrap();

    for (account, app_id) in [(partner_account(Some("wx_sub_mp")), "wx_sub_mp"), (partner_account(None), "wx_mp")] {
        let params = client.pay_params(&account, "wx-prepay-sp").unwrap();

        assert_eq!((params.app_id.as_str(), params.package.as_str()), (app_id, "prepay_id=wx-prepay-sp"));
        let message = atrium_wechat::pay::sign::pay_sign_message(app_id, &params.time_stamp, &params.nonce_str, &params.package);
        assert_eq!(params.pay_sign, provider_key.sign(&message).unwrap());
    }
    platform.stop().await;
}

#[tokio::test]
async fn a_sub_merchant_order_is_queried_and_closed_on_the_partner_endpoints() {
    let platform = Platform::start().await;
    let recorder = Arc::new(Recorder::default());
    let client = platform.client(recorder.clone());
    let account = partner_account(Some("wx_sub_mp"));

    let tx = client.query_order(&account, "T_SP_0001").await.unwrap();
    client.close_order(&account, "T_SP_0002").await.unwrap();

    assert_eq!(
        (tx.out_trade_no.as_str(), tx.trade_state, tx.transaction_id.as_deref(), tx.amount, tx.sub_mchid.as_deref()),
        ("T_SP_0001", TradeState::Success, Some("4201"), Some(Money::from_fen(1000)), Some("1900000200"))
    );
    let requests = platform.requests();
    assert_eq!(
        (requests[0].0.as_str(), requests[0].1.as_str()),
        ("GET", "/v3/pay/partner/transactions/out-trade-no/T_SP_0001?sp_mchid=1900000109&sub_mchid=1900000200")
    );
    assert_eq!(
        requests[1],
        (
            "POST".to_owned(),
            "/v3/pay/partner/transactions/out-trade-no/T_SP_0002/close".to_owned(),
            serde_json::json!({"sp_mchid": "1900000109", "sub_mchid": "1900000200"})
        )
    );
    assert_eq!(
        recorder.endpoints(),
        ["/v3/pay/partner/transactions/out-trade-no/{out_trade_no}", "/v3/pay/partner/transactions/out-trade-no/{out_trade_no}/close"]
    );
    platform.stop().await;
}

#[tokio::test]
async fn a_sub_merchant_refund_its_query_and_its_trade_bill_name_the_sub_merchant() {
    let platform = Platform::start().await;
    let client = platform.client(Arc::new(Recorder::default()));
    let account = partner_account(None);
    let day = chrono::NaiveDate::from_ymd_opt(2026, 3, 31).unwrap();

    let accepted = client.refund(&account, &refund_order("T_SP_0001", "R_SP_0001")).await.unwrap();
    let queried = client.query_refund(&account, "R_SP_0001").await.unwrap();
    let lines = client.trade_bill(&account, day).await.unwrap();

    assert_eq!(
        (accepted.status, accepted.refund_id.as_deref(), accepted.sub_mchid.as_deref()),
        (RefundStatus::Processing, Some("5001"), Some("1900000200"))
    );
    assert_eq!(queried.sub_mchid.as_deref(), Some("1900000200"));
    assert_eq!(lines.len(), 4);
    let requests = platform.requests();
    assert_eq!(
        requests[0],
        (
            "POST".to_owned(),
            "/v3/refund/domestic/refunds".to_owned(),
            serde_json::json!({
                "sub_mchid": "1900000200",
                "out_trade_no": "T_SP_0001",
                "out_refund_no": "R_SP_0001",
                "reason": "broken cup",
                "notify_url": "https://atrium.example.com/n",
                "amount": {"refund": 300, "total": 1000, "currency": "CNY"},
            })
        )
    );
    assert_eq!(requests[1].1, "/v3/refund/domestic/refunds/R_SP_0001?sub_mchid=1900000200");
    assert_eq!(requests[2].1, "/v3/bill/tradebill?bill_date=2026-03-31&sub_mchid=1900000200&bill_type=ALL");
    assert_eq!(requests[3].1, "/v3/billdownload/file?token=t1", "the download address is the platform's, as given");
    platform.stop().await;
}

#[tokio::test]
async fn a_direct_account_still_sends_the_direct_paths_and_bodies() {
    let platform = Platform::start().await;
    let recorder = Arc::new(Recorder::default());
    let client = platform.client(recorder.clone());
    let account = account();
    let day = chrono::NaiveDate::from_ymd_opt(2026, 3, 31).unwrap();

    client.jsapi_order(&account, &jsapi_order("T0000001")).await.unwrap();
    client.query_order(&account, "T_FLAKY").await.unwrap();
    client.close_order(&account, "T0000001").await.unwrap();
    client.refund(&account, &refund_order("T0000001", "R1")).await.unwrap();
    client.query_refund(&account, "R1").await.unwrap();
    client.trade_bill(&account, day).await.unwrap();
    let params = client.pay_params(&account, "wx-prepay-1").unwrap();

    let sent: Vec<(String, String)> = platform.requests().into_iter().map(|(m, p, _)| (m, p)).collect();
    let expected = [
        ("POST", "/v3/pay/transactions/jsapi"),
        // T_FLAKY answers 503 twice before it answers.
        ("GET", "/v3/pay/transactions/out-trade-no/T_FLAKY?mchid=1900000109"),
        ("GET", "/v3/pay/transactions/out-trade-no/T_FLAKY?mchid=1900000109"),
        ("GET", "/v3/pay/transactions/out-trade-no/T_FLAKY?mchid=1900000109"),
        ("POST", "/v3/pay/transactions/out-trade-no/T0000001/close"),
        ("POST", "/v3/refund/domestic/refunds"),
        ("GET", "/v3/refund/domestic/refunds/R1"),
        ("GET", "/v3/bill/tradebill?bill_date=2026-03-31&bill_type=ALL"),
        ("GET", "/v3/billdownload/file?token=t1"),
    ];
    assert_eq!(sent, expected.map(|(m, p)| (m.to_owned(), p.to_owned())));
    let bodies = platform.stub.seen.lock().unwrap().bodies.clone();
    assert_eq!(
        bodies[0],
        serde_json::json!({
            "appid": "wx_mp",
            "mchid": "1900000109",
            "description": "Coffee",
            "out_trade_no": "T0000001",
            "time_expire": "2026-04-01T12:00:00+08:00",
            "notify_url": "https://atrium.example.com/api/v1/miniprogram/payment/notify/3",
            "amount": {"total": 1000, "currency": "CNY"},
            "payer": {"openid": "o-ann"},
            "attach": "table 7",
        })
        .to_string(),
        "the direct order's body, byte for byte"
    );
    assert_eq!(bodies[4], r#"{"mchid":"1900000109"}"#);
    assert_eq!(
        bodies[5],
        serde_json::json!({
            "out_trade_no": "T0000001",
            "out_refund_no": "R1",
            "notify_url": "https://atrium.example.com/n",
            "amount": {"refund": 300, "total": 1000, "currency": "CNY"},
            "reason": "broken cup",
        })
        .to_string()
    );
    assert_eq!(params.app_id, "wx_mp");
    assert!(!recorder.endpoints().iter().any(|e| e.contains("partner")));
    platform.stop().await;
}

/// A notification as the platform sends it: `resource` sealed with the fixtures' APIv3 key,
/// the body signed with the platform key.
fn sealed_notification(event_type: &str, original_type: &str, resource: &serde_json::Value) -> NotificationRequest {
    let v: serde_json::Value = serde_json::from_str(&fixture("vectors.json")).unwrap();
    let api_v3_key = v["notification"]["api_v3_key"].as_str().unwrap().to_owned();
    let platform_key = MerchantSigner::from_pem(&fixture("platform_key.pem")).unwrap();
    let nonce = "sp0123456789";
    let mut tag = [0u8; 16];
    let ciphertext = openssl::symm::encrypt_aead(
        openssl::symm::Cipher::aes_256_gcm(),
        api_v3_key.as_bytes(),
        Some(nonce.as_bytes()),
        original_type.as_bytes(),
        resource.to_string().as_bytes(),
        &mut tag,
    )
    .unwrap();
    let sealed = STANDARD.encode([ciphertext, tag.to_vec()].concat());
    let body = serde_json::json!({
        "id": format!("EV-{original_type}"),
        "create_time": "2026-04-01T12:00:00+08:00",
        "resource_type": "encrypt-resource",
        "event_type": event_type,
        "summary": "",
        "resource": {
            "original_type": original_type, "algorithm": "AEAD_AES_256_GCM", "ciphertext": sealed,
            "associated_data": original_type, "nonce": nonce,
        },
    })
    .to_string();
    let ts = chrono::Utc::now().timestamp().to_string();
    let signature = platform_key.sign(&format!("{ts}\nN\n{body}\n")).unwrap();
    NotificationRequest { timestamp: ts, nonce: "N".into(), signature, serial: PLATFORM_KEY_ID.into(), body: body.into_bytes() }
}

#[test]
fn a_partner_notification_opens_with_the_providers_keys_and_reports_the_sub_merchant() {
    let transaction: serde_json::Value = serde_json::from_str(PARTNER_TRANSACTION).unwrap();
    let refund = serde_json::json!({
        "sp_mchid": "1900000109", "sub_mchid": "1900000200", "out_trade_no": "T_SP_0001", "transaction_id": "4201",
        "out_refund_no": "R_SP_0001", "refund_id": "5001", "refund_status": "SUCCESS", "success_time": "2026-04-01T12:30:00+08:00",
        "amount": {"total": 1000, "refund": 300, "payer_total": 1000, "payer_refund": 300},
    });
    let client = WechatPay::new(WechatPayConfig::new("http://127.0.0.1:9")).unwrap();
    let account = partner_account(Some("wx_sub_mp"));

    let paid =
        client.open_notification(&account, &sealed_notification("TRANSACTION.SUCCESS", "transaction", &transaction), chrono::Utc::now());
    let refunded = client.open_notification(&account, &sealed_notification("REFUND.SUCCESS", "refund", &refund), chrono::Utc::now());

    let EventResource::Transaction(tx) = paid.unwrap().resource else { panic!("not a transaction") };
    assert_eq!((tx.trade_state, tx.sub_mchid.as_deref()), (TradeState::Success, Some("1900000200")));
    let EventResource::Refund(r) = refunded.unwrap().resource else { panic!("not a refund") };
    assert_eq!((r.status, r.amount, r.sub_mchid.as_deref()), (RefundStatus::Succeeded, Some(Money::from_fen(300)), Some("1900000200")));
}

// --- profit sharing ---------------------------------------------------------------------------

/// Decrypts a sensitive field as the platform does: RSA-OAEP (SHA-1) with its private key.
fn platform_decrypt(sealed: &str) -> String {
    let key = PKey::private_key_from_pem(fixture("platform_key.pem").as_bytes()).unwrap();
    let data = STANDARD.decode(sealed).unwrap();
    let mut decrypter = openssl::encrypt::Decrypter::new(&key).unwrap();
    decrypter.set_rsa_padding(openssl::rsa::Padding::PKCS1_OAEP).unwrap();
    let mut out = vec![0u8; decrypter.decrypt_len(&data).unwrap()];
    let len = decrypter.decrypt(&data, &mut out).unwrap();
    out.truncate(len);
    String::from_utf8(out).unwrap()
}

#[tokio::test]
async fn a_receiver_is_added_with_its_name_encrypted_under_the_platform_key_the_request_names() {
    let platform = Platform::start().await;
    let recorder = Arc::new(Recorder::default());
    let client = platform.client(recorder.clone());
    let account = partner_account(Some("wx_sub_mp"));
    let merchant = ReceiverAdd {
        receiver: Receiver { kind: ReceiverType::MerchantId, account: "1900000109".into(), name: Some("示例平台有限公司".into()) },
        relation: Relation::ServiceProvider,
    };
    let person = ReceiverAdd {
        receiver: Receiver { kind: ReceiverType::PersonalOpenid, account: "o-partner-7".into(), name: None },
        relation: Relation::Partner,
    };

    client.add_receiver(&account, &merchant).await.unwrap();
    client.add_receiver(&account, &person).await.unwrap();

    let requests = platform.requests();
    let (method, path, body) = &requests[0];
    assert_eq!((method.as_str(), path.as_str()), ("POST", "/v3/profitsharing/receivers/add"));
    let name = body["name"].as_str().unwrap();
    assert!(!name.contains("示例"), "the name goes encrypted");
    assert_eq!(platform_decrypt(name), "示例平台有限公司");
    let mut without_name = body.clone();
    without_name.as_object_mut().unwrap().remove("name");
    assert_eq!(
        without_name,
        serde_json::json!({"sub_mchid": "1900000200", "appid": "wx_mp", "type": "MERCHANT_ID", "account": "1900000109", "relation_type": "SERVICE_PROVIDER"})
    );
    assert_eq!(
        requests[1].2,
        serde_json::json!({"sub_mchid": "1900000200", "appid": "wx_mp", "type": "PERSONAL_OPENID", "account": "o-partner-7", "relation_type": "PARTNER"})
    );
    assert_eq!(platform.serials(), [PLATFORM_KEY_ID, ""], "only a request with an encrypted field names the key");
    assert_eq!(recorder.endpoints(), ["/v3/profitsharing/receivers/add", "/v3/profitsharing/receivers/add"]);

    // No platform key to encrypt under: nothing is sent.
    let keyless = MerchantAccount { platform_keys: vec![], ..account.clone() };
    let refused = client.add_receiver(&keyless, &merchant).await.unwrap_err();
    assert!(matches!(&refused, PayPlatformError::Credentials(m) if m.contains("no platform key")), "{refused:?}");
    assert_eq!(platform.requests().len(), 2);
    platform.stop().await;
}

#[tokio::test]
async fn a_share_its_query_and_the_unfreeze_name_the_sub_merchant_and_read_the_platforms_answers() {
    let platform = Platform::start().await;
    let recorder = Arc::new(Recorder::default());
    let client = platform.client(recorder.clone());
    let account = partner_account(None);
    let order = ShareOrder {
        transaction_id: "4201".into(),
        out_order_no: "PS17".into(),
        lines: vec![
            ShareLine {
                kind: ReceiverType::MerchantId,
                account: "1900000109".into(),
                amount: Money::from_fen(30),
                description: "platform share".into(),
            },
            ShareLine {
                kind: ReceiverType::PersonalOpenid,
                account: "o-partner-7".into(),
                amount: Money::from_fen(20),
                description: "partner commission".into(),
            },
        ],
        unfreeze_unsplit: false,
    };

    let accepted = client.share(&account, &order).await.unwrap();
    let finished = client.query_share(&account, "4201", "PS17").await.unwrap();
    let unfrozen = client
        .unfreeze(
            &account,
            &UnfreezeOrder { transaction_id: "4201".into(), out_order_no: "PS17-u".into(), description: "rest to the tenant".into() },
        )
        .await
        .unwrap();

    let requests = platform.requests();
    assert_eq!(
        requests[0],
        (
            "POST".to_owned(),
            "/v3/profitsharing/orders".to_owned(),
            serde_json::json!({
                "sub_mchid": "1900000200", "appid": "wx_mp", "transaction_id": "4201", "out_order_no": "PS17",
                "receivers": [
                    {"type": "MERCHANT_ID", "account": "1900000109", "amount": 30, "description": "platform share"},
                    {"type": "PERSONAL_OPENID", "account": "o-partner-7", "amount": 20, "description": "partner commission"},
                ],
                "unfreeze_unsplit": false,
            })
        )
    );
    assert_eq!(
        (requests[1].0.as_str(), requests[1].1.as_str()),
        ("GET", "/v3/profitsharing/orders/PS17?sub_mchid=1900000200&transaction_id=4201")
    );
    assert_eq!(
        requests[2],
        (
            "POST".to_owned(),
            "/v3/profitsharing/orders/unfreeze".to_owned(),
            serde_json::json!({"sub_mchid": "1900000200", "transaction_id": "4201", "out_order_no": "PS17-u", "description": "rest to the tenant"})
        )
    );
    assert_eq!(
        recorder.endpoints(),
        ["/v3/profitsharing/orders", "/v3/profitsharing/orders/{out_order_no}", "/v3/profitsharing/orders/unfreeze"]
    );

    assert_eq!(
        (accepted.out_order_no.as_str(), accepted.order_id.as_deref(), accepted.state),
        ("PS17", Some("3008450740201411110007820472"), ShareOrderState::Processing)
    );
    let pending: Vec<_> = accepted.lines.iter().map(|l| (l.kind, l.account.as_str(), l.amount.fen(), l.result, l.finish_time)).collect();
    assert_eq!(
        pending,
        [
            (ReceiverType::MerchantId, "1900000109", 30, ReceiverResult::Pending, None),
            (ReceiverType::PersonalOpenid, "o-partner-7", 20, ReceiverResult::Pending, None),
        ],
        "a pending line has no finish time"
    );
    let at = chrono::DateTime::parse_from_rfc3339("2026-04-01T12:02:00+08:00").unwrap().to_utc();
    assert_eq!(finished.state, ShareOrderState::Finished);
    let partner = Receiver { kind: ReceiverType::PersonalOpenid, account: "o-partner-7".into(), name: None };
    let closed = finished.line_of(&partner).unwrap();
    assert_eq!(
        (closed.result, closed.fail_reason.as_deref(), closed.finish_time),
        (ReceiverResult::Closed, Some("ACCOUNT_ABNORMAL"), Some(at))
    );
    assert_eq!((finished.lines[0].result, finished.lines[0].fail_reason.as_deref()), (ReceiverResult::Success, None));
    assert_eq!((unfrozen.out_order_no.as_str(), unfrozen.state), ("PS17-u", ShareOrderState::Finished));
    let own: Vec<_> = unfrozen.lines.iter().map(|l| (l.kind, l.account.as_str(), l.amount.fen(), l.result)).collect();
    assert_eq!(own, [(ReceiverType::MerchantId, "1900000200", 950, ReceiverResult::Success)]);
    platform.stop().await;
}

#[tokio::test]
async fn an_unreadable_share_answer_is_unavailable_and_a_refusal_keeps_its_code() {
    let platform = Platform::start().await;
    let recorder = Arc::new(Recorder::default());
    let client = platform.client(recorder.clone());
    let account = partner_account(None);
    let order = |no: &str| ShareOrder {
        transaction_id: "4201".into(),
        out_order_no: no.into(),
        lines: vec![ShareLine {
            kind: ReceiverType::MerchantId,
            account: "1900000109".into(),
            amount: Money::from_fen(30),
            description: "share".into(),
        }],
        unfreeze_unsplit: false,
    };

    for no in ["PS_ODD_STATE", "PS_ODD_TYPE", "PS_ODD_RESULT"] {
        let err = client.share(&account, &order(no)).await.unwrap_err();
        assert!(matches!(&err, PayPlatformError::Unavailable(m) if m.contains("unreadable profit-sharing order")), "{no}: {err:?}");
    }
    let used = client.share(&account, &order("PS_USED")).await.unwrap_err();
    let unknown = client.query_share(&account, "4201", "PS_UNKNOWN").await.unwrap_err();

    assert!(matches!(&used, PayPlatformError::Refused { status: 400, code, .. } if code == "INVALID_REQUEST"), "{used:?}");
    assert!(matches!(&unknown, PayPlatformError::Refused { status: 404, code, .. } if code == "RESOURCE_NOT_EXISTS"), "{unknown:?}");
    assert_eq!(platform.hits("/v3/profitsharing/orders"), 4, "a refusal is not retried");
    platform.stop().await;
}

fn return_order(out_return_no: &str) -> ReturnOrder {
    ReturnOrder {
        out_order_no: "PS17".into(),
        out_return_no: out_return_no.into(),
        return_mchid: "1900000109".into(),
        amount: Money::from_fen(30),
        description: "before a refund".into(),
    }
}

#[tokio::test]
async fn a_return_names_the_sub_merchant_and_the_receiver_and_reads_the_platforms_answer() {
    let platform = Platform::start().await;
    let recorder = Arc::new(Recorder::default());
    let client = platform.client(recorder.clone());
    let account = partner_account(Some("wx_sub_mp"));

    let returned = client.return_share(&account, &return_order("PR17")).await.unwrap();

    assert_eq!(
        platform.requests(),
        [(
            "POST".to_owned(),
            "/v3/profitsharing/return-orders".to_owned(),
            serde_json::json!({
                "sub_mchid": "1900000200", "out_order_no": "PS17", "out_return_no": "PR17", "return_mchid": "1900000109",
                "amount": 30, "description": "before a refund",
            })
        )],
        "no appid: a return names the sub-merchant and the receiver only"
    );
    assert_eq!(recorder.endpoints(), ["/v3/profitsharing/return-orders"]);
    assert_eq!(recorder.codes(), ["0"]);
    let at = chrono::DateTime::parse_from_rfc3339("2026-04-02T09:00:01+08:00").unwrap().to_utc();
    assert_eq!(
        returned,
        atrium_payments::PlatformReturn {
            out_return_no: "PR17".into(),
            return_id: Some("3008450740201411110007820480".into()),
            result: ReturnResult::Success,
            fail_reason: None,
            amount: Some(Money::from_fen(30)),
            finish_time: Some(at),
        }
    );
    platform.stop().await;
}

#[tokio::test]
async fn a_return_failed_or_processing_is_read_as_such_and_an_odd_or_refused_one_is_not_believed_or_retried() {
    let platform = Platform::start().await;
    let recorder = Arc::new(Recorder::default());
    let client = platform.client(recorder.clone());
    let account = partner_account(None);

    // A 5xx is retried with the same body; the retry is read.
    let flaky = client.return_share(&account, &return_order("PR_FLAKY")).await.unwrap();
    let failed = client.return_share(&account, &return_order("PR_FAILED")).await.unwrap();
    let processing = client.return_share(&account, &return_order("PR_PROCESSING")).await.unwrap();
    let odd = client.return_share(&account, &return_order("PR_ODD_RESULT")).await.unwrap_err();
    let person = client.return_share(&account, &return_order("PR_PERSON")).await.unwrap_err();

    assert_eq!(flaky.result, ReturnResult::Success);
    let bodies: Vec<_> = platform.requests().into_iter().take(2).map(|(_, _, body)| body).collect();
    assert_eq!(bodies[0], bodies[1], "the retry is the same request");
    assert_eq!(
        (failed.result, failed.fail_reason.as_deref(), failed.return_id.as_deref()),
        (ReturnResult::Failed, Some("BALANCE_NOT_ENOUGH"), Some("3008450740201411110007820482"))
    );
    assert_eq!(failed.finish_time, Some(chrono::DateTime::parse_from_rfc3339("2026-04-02T09:00:02+08:00").unwrap().to_utc()));
    assert_eq!(
        (processing.out_return_no.as_str(), processing.result, processing.fail_reason, processing.finish_time),
        ("PR_PROCESSING", ReturnResult::Processing, None, None),
        "a return processing has no finish time"
    );
    assert!(matches!(&odd, PayPlatformError::Unavailable(m) if m.contains("unreadable profit-sharing return")), "{odd:?}");
    assert!(
        matches!(&person, PayPlatformError::Refused { status: 400, code, message } if code == "INVALID_REQUEST" && message.contains("个人")),
        "{person:?}"
    );
    // 2 for the flaky one, then one each: the refusal is not retried.
    assert_eq!(platform.hits("/v3/profitsharing/return-orders"), 6);
    assert_eq!(recorder.codes(), ["http_5xx", "0", "0", "0", "0", "INVALID_REQUEST"]);
    platform.stop().await;
}

#[tokio::test]
async fn a_return_query_names_the_return_its_share_request_and_the_sub_merchant_and_reads_the_answer_like_a_return() {
    let platform = Platform::start().await;
    let recorder = Arc::new(Recorder::default());
    let client = platform.client(recorder.clone());
    let account = partner_account(Some("wx_sub_mp"));

    let queried = client.query_return(&account, "PS|17", "PR|17").await.unwrap();
    let unknown = client.query_return(&account, "PS17", "PR_UNKNOWN").await.unwrap_err();
    let odd = client.query_return(&account, "PS17", "PR_ODD_RESULT").await.unwrap_err();

    assert_eq!(
        platform.requests()[0],
        (
            "GET".to_owned(),
            "/v3/profitsharing/return-orders/PR%7C17?sub_mchid=1900000200&out_order_no=PS%7C17".to_owned(),
            serde_json::Value::Null
        ),
        "our numbers percent-encoded, no body"
    );
    assert_eq!(recorder.endpoints(), ["/v3/profitsharing/return-orders/{out_return_no}"; 3], "no number in the endpoint reported");
    assert_eq!(recorder.codes(), ["0", "RESOURCE_NOT_EXISTS", "0"]);
    let at = chrono::DateTime::parse_from_rfc3339("2026-04-02T09:00:02+08:00").unwrap().to_utc();
    assert_eq!(
        queried,
        atrium_payments::PlatformReturn {
            out_return_no: "PR_FAILED".into(),
            return_id: Some("3008450740201411110007820482".into()),
            result: ReturnResult::Failed,
            fail_reason: Some("BALANCE_NOT_ENOUGH".into()),
            amount: Some(Money::from_fen(30)),
            finish_time: Some(at),
        },
        "read as the return's answer"
    );
    assert!(matches!(&unknown, PayPlatformError::Refused { status: 404, code, .. } if code == "RESOURCE_NOT_EXISTS"), "{unknown:?}");
    assert!(matches!(&odd, PayPlatformError::Unavailable(m) if m.contains("unreadable profit-sharing return")), "{odd:?}");
    assert_eq!(platform.hits("/v3/profitsharing/return-orders/PR_UNKNOWN"), 1, "a refusal is not retried");
    platform.stop().await;
}

#[tokio::test]
async fn profit_sharing_calls_need_an_account_acting_for_a_sub_merchant() {
    let platform = Platform::start().await;
    let client = platform.client(Arc::new(Recorder::default()));
    let direct = account();
    let receiver = ReceiverAdd {
        receiver: Receiver { kind: ReceiverType::PersonalOpenid, account: "o-partner-7".into(), name: None },
        relation: Relation::Partner,
    };
    let order = ShareOrder { transaction_id: "4201".into(), out_order_no: "PS17".into(), lines: vec![], unfreeze_unsplit: false };
    let unfreeze = UnfreezeOrder { transaction_id: "4201".into(), out_order_no: "PS17-u".into(), description: "rest".into() };
    let give_back = return_order("PR17");

    let refusals = [
        client.add_receiver(&direct, &receiver).await.unwrap_err(),
        client.share(&direct, &order).await.unwrap_err(),
        client.query_share(&direct, "4201", "PS17").await.unwrap_err(),
        client.unfreeze(&direct, &unfreeze).await.unwrap_err(),
        client.return_share(&direct, &give_back).await.unwrap_err(),
        client.query_return(&direct, "PS17", "PR17").await.unwrap_err(),
        client.max_ratio(&direct).await.unwrap_err(),
    ];

    for refusal in refusals {
        assert!(matches!(&refusal, PayPlatformError::Credentials(m) if m.contains("belongs to a sub-merchant")), "{refusal:?}");
    }
    assert!(platform.requests().is_empty(), "nothing was sent");
    platform.stop().await;
}

#[test]
fn a_profitsharing_notification_names_the_share_request() {
    let resource = serde_json::json!({
        "sp_mchid": "1900000109", "sub_mchid": "1900000200", "transaction_id": "4201", "order_id": "3008450740201411110007820472",
        "out_order_no": "PS17", "receiver": {"type": "PERSONAL_OPENID", "account": "o-partner-7", "amount": 20, "description": "partner commission"},
        "success_time": "2026-04-01T12:02:00+08:00",
    });
    let client = WechatPay::new(WechatPayConfig::new("http://127.0.0.1:9")).unwrap();
    let account = partner_account(None);

    let success =
        client.open_notification(&account, &sealed_notification("PROFITSHARING.SUCCESS", "profitsharing", &resource), chrono::Utc::now());
    let closed =
        client.open_notification(&account, &sealed_notification("PROFITSHARING.CLOSED", "profitsharing", &resource), chrono::Utc::now());
    let garbled = client.open_notification(
        &account,
        &sealed_notification("PROFITSHARING.SUCCESS", "profitsharing", &serde_json::json!({"x": 1})),
        chrono::Utc::now(),
    );

    let expected = EventResource::Share { out_order_no: "PS17".into(), transaction_id: "4201".into() };
    let success = success.unwrap();
    assert_eq!((success.event_type.as_str(), &success.resource), ("PROFITSHARING.SUCCESS", &expected));
    assert_eq!(closed.unwrap().resource, expected);
    assert_eq!(garbled.unwrap_err(), atrium_payments::NotificationError::NotJson);
}
