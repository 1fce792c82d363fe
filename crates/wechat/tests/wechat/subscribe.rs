//! The subscribe-message client and the pay-slip notifier against the sandbox platform, served
//! over loopback HTTP exactly as the server mounts it.
#![allow(clippy::unwrap_used)]

use actix_web::{App, HttpServer, web};
use atrium_kernel::{Error, Money, Period};
use atrium_payroll::{Channel, Payslip, PayslipNotifier, Recipient};
use atrium_sandbox::{SANDBOX_MP_APPID, SANDBOX_MP_SECRET, SANDBOX_PAYSLIP_TEMPLATE_ID, Sandbox};
use atrium_wechat::{AccessTokens, MiniProgramState, SubscribeError, SubscribeMessage, SubscribeMessages, WechatAppConfig, WechatPayslips};
use serde_json::{Value, json};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

const SEND_PATH: &str = "/cgi-bin/message/subscribe/send";

/// The sandbox on a loopback port, mounted under `/sandbox` like the server does.
struct Platform {
    sandbox: Sandbox,
    /// `http://127.0.0.1:PORT/sandbox`
    base: String,
    handle: actix_web::dev::ServerHandle,
}

impl Platform {
    async fn start() -> Platform {
        let sandbox = Sandbox::new();
        let sb = sandbox.clone();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = HttpServer::new(move || {
            let sb = sb.clone();
            App::new().service(web::scope("/sandbox").configure(move |cfg| sb.configure(cfg)))
        })
        .workers(1)
        .disable_signals()
        .listen(listener)
        .unwrap()
        .run();
        let handle = server.handle();
        tokio::spawn(server);
        Platform { sandbox, base: format!("http://{addr}/sandbox"), handle }
    }

    fn config(&self, secret: &str) -> WechatAppConfig {
        WechatAppConfig { api_base: format!("{}/api", self.base), appid: SANDBOX_MP_APPID.into(), secret: secret.into() }
    }

    fn client(&self) -> SubscribeMessages {
        SubscribeMessages::new(Arc::new(AccessTokens::new(self.config(SANDBOX_MP_SECRET)).unwrap()))
    }

    /// A control call over HTTP; asserts it was accepted.
    async fn control(&self, path: &str, body: Value) {
        let resp = reqwest::Client::new().post(format!("{}/control/{path}", self.base)).json(&body).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 200, "control {path} refused: {}", resp.text().await.unwrap());
    }

    async fn messages_over_http(&self, touser: &str) -> Vec<Value> {
        let url = format!("{}/messages?touser={touser}", self.base);
        let body: Value = reqwest::get(url).await.unwrap().json().await.unwrap();
        body["messages"].as_array().cloned().unwrap_or_default()
    }

    async fn stop(self) {
        self.handle.stop(false).await;
    }
}

fn payslip_message(openid: &str) -> SubscribeMessage {
    SubscribeMessage::new(openid, SANDBOX_PAYSLIP_TEMPLATE_ID).field("thing1", "2026-03 工资条").field("amount2", "12345.67")
}

#[tokio::test]
async fn the_token_is_fetched_once_and_reused_across_sends() {
    let platform = Platform::start().await;
    let client = platform.client();

    for _ in 0..3 {
        client.send(&payslip_message("o-ann")).await.unwrap();
    }

    assert_eq!(platform.sandbox.access_tokens_issued(), 1);
    assert_eq!(platform.sandbox.subscribe_messages(Some("o-ann")).len(), 3);
    platform.stop().await;
}

#[tokio::test]
async fn concurrent_first_sends_share_one_token_fetch() {
    let platform = Platform::start().await;
    let client = Arc::new(platform.client());

    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move { client.send(&payslip_message(&format!("o-{i}"))).await })
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap();
    }

    assert_eq!(platform.sandbox.access_tokens_issued(), 1);
    assert_eq!(platform.sandbox.subscribe_messages(None).len(), 8);
    platform.stop().await;
}

#[tokio::test]
async fn a_token_is_refreshed_once_its_cache_time_has_passed() {
    let platform = Platform::start().await;
    // A 2 s token is used for 1 s (half its lifetime; a real one until 5 minutes before expiry).
    platform.sandbox.set_access_token_expires_in(2);
    let client = platform.client();

    client.send(&payslip_message("o-ann")).await.unwrap();
    client.send(&payslip_message("o-ann")).await.unwrap();
    assert_eq!(platform.sandbox.access_tokens_issued(), 1);
    // Time must pass here: wait out the second the token is used for, then send until a send
    // fetches a new token.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        client.send(&payslip_message("o-ann")).await.unwrap();
        if platform.sandbox.access_tokens_issued() > 1 {
            break;
        }
        assert!(Instant::now() < deadline, "the token was still used 5 s after its cache time");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    assert_eq!(platform.sandbox.access_tokens_issued(), 2);
    platform.stop().await;
}

#[tokio::test]
async fn an_expired_token_is_dropped_and_the_send_retried_once() {
    let platform = Platform::start().await;
    let client = platform.client();
    client.send(&payslip_message("o-ann")).await.unwrap();

    // The platform expires the cached token early (it answers 42001), the client does not know.
    platform.control("expire-tokens", json!({})).await;
    client.send(&payslip_message("o-ann")).await.unwrap();

    assert_eq!(platform.sandbox.access_tokens_issued(), 2);
    assert_eq!(platform.sandbox.subscribe_messages(Some("o-ann")).len(), 2);
    platform.stop().await;
}

#[tokio::test]
async fn each_stale_token_errcode_triggers_a_refetch_and_one_retry() {
    let platform = Platform::start().await;
    let client = platform.client();

    for (n, errcode) in [40001, 40014, 42001].into_iter().enumerate() {
        platform.control("fail", json!({"path": SEND_PATH, "errcode": errcode, "times": 1})).await;
        client.send(&payslip_message("o-ann")).await.unwrap();
        assert_eq!(platform.sandbox.access_tokens_issued(), n as u64 + 2, "after errcode {errcode}");
    }

    assert_eq!(platform.sandbox.subscribe_messages(Some("o-ann")).len(), 3);
    platform.stop().await;
}

#[tokio::test]
async fn a_token_refused_twice_in_a_row_is_returned_not_retried_again() {
    let platform = Platform::start().await;
    let client = platform.client();
    platform.control("fail", json!({"path": SEND_PATH, "errcode": 40001, "times": 2})).await;

    let err = client.send(&payslip_message("o-ann")).await.unwrap_err();

    assert_eq!(err.errcode(), Some(40001), "{err:?}");
    assert_eq!(platform.sandbox.access_tokens_issued(), 2);
    assert!(platform.sandbox.subscribe_messages(None).is_empty());
    platform.stop().await;
}

#[tokio::test]
async fn a_busy_platform_is_retried_with_backoff() {
    let platform = Platform::start().await;
    let client = platform.client();
    platform.control("fail", json!({"path": SEND_PATH, "errcode": -1, "times": 2})).await;

    let started = std::time::Instant::now();
    client.send(&payslip_message("o-ann")).await.unwrap();

    assert!(started.elapsed() >= Duration::from_millis(400), "waited {:?}", started.elapsed());
    assert_eq!(platform.sandbox.subscribe_messages(Some("o-ann")).len(), 1);
    assert_eq!(platform.sandbox.access_tokens_issued(), 1);
    platform.stop().await;
}

#[tokio::test]
async fn a_platform_still_busy_after_the_retries_is_an_upstream_error() {
    let platform = Platform::start().await;
    let client = platform.client();
    platform.control("fail", json!({"path": SEND_PATH, "errcode": -1, "times": 3})).await;

    let err = client.send(&payslip_message("o-ann")).await.unwrap_err();

    assert_eq!(err.errcode(), Some(-1));
    assert!(matches!(Error::from(err), Error::Upstream(m) if m.contains("errcode -1")));
    assert!(platform.sandbox.subscribe_messages(None).is_empty());
    platform.stop().await;
}

#[tokio::test]
async fn a_busy_token_endpoint_is_retried_too() {
    let platform = Platform::start().await;
    let client = platform.client();
    platform.control("fail", json!({"path": "/cgi-bin/token", "errcode": -1, "times": 1})).await;

    client.send(&payslip_message("o-ann")).await.unwrap();

    assert_eq!(platform.sandbox.access_tokens_issued(), 1);
    platform.stop().await;
}

#[tokio::test]
async fn a_user_without_subscription_left_is_a_typed_error() {
    let platform = Platform::start().await;
    let client = platform.client();
    platform.control("subscriptions", json!({"openid": "o-ann", "remaining": 0})).await;

    let err = client.send(&payslip_message("o-ann")).await.unwrap_err();

    assert_eq!(err, SubscribeError::NoSubscription);
    assert!(matches!(Error::from(err), Error::Upstream(m) if m.contains("43101")));
    client.send(&payslip_message("o-bob")).await.unwrap();
    platform.stop().await;
}

#[tokio::test]
async fn an_empty_openid_and_bad_template_data_are_typed_errors() {
    let platform = Platform::start().await;
    let client = platform.client();

    let no_openid = client.send(&payslip_message("")).await.unwrap_err();
    let too_long = client.send(&payslip_message("o-ann").field("thing3", "x".repeat(21))).await.unwrap_err();
    let wrong_template = client.send(&SubscribeMessage::new("o-ann", "another-template").field("thing1", "x")).await.unwrap_err();

    assert_eq!(no_openid, SubscribeError::InvalidOpenid);
    assert!(matches!(&too_long, SubscribeError::BadTemplateData { errmsg } if errmsg.contains("thing3")), "{too_long:?}");
    assert_eq!(wrong_template.errcode(), Some(40037));
    assert!(matches!(Error::from(no_openid), Error::BadRequest(_)));
    platform.stop().await;
}

#[tokio::test]
async fn a_wrong_secret_fails_without_the_secret_in_any_message() {
    let platform = Platform::start().await;
    let secret = "wrong-secret-9f8e7d6c";
    let client = SubscribeMessages::new(Arc::new(AccessTokens::new(platform.config(secret)).unwrap()));

    let err = client.send(&payslip_message("o-ann")).await.unwrap_err();

    assert_eq!(err.errcode(), Some(40125));
    let shown = format!("{err} {err:?} {}", Error::from(err.clone()));
    assert!(!shown.contains(secret), "{shown}");
    assert_eq!(platform.sandbox.access_tokens_issued(), 0);
    platform.stop().await;
}

#[tokio::test]
async fn an_unreachable_platform_is_a_transport_error_without_the_secret() {
    let secret = "unreachable-secret-1a2b3c";
    let config =
        WechatAppConfig { api_base: "http://127.0.0.1:1/sandbox/api".into(), appid: SANDBOX_MP_APPID.into(), secret: secret.into() };
    let client = SubscribeMessages::new(Arc::new(AccessTokens::new(config).unwrap()));

    let err = client.send(&payslip_message("o-ann")).await.unwrap_err();

    assert!(matches!(err, SubscribeError::Transport(_)), "{err:?}");
    let shown = format!("{err} {err:?} {}", Error::from(err.clone()));
    assert!(!shown.contains(secret) && !shown.contains("127.0.0.1:1"), "{shown}");
}

#[tokio::test]
async fn errors_after_a_token_was_issued_never_carry_it() {
    let platform = Platform::start().await;
    let client = platform.client();
    let token = client.tokens().get().await.unwrap();
    platform.control("subscriptions", json!({"openid": "o-ann", "remaining": 0})).await;
    platform.control("fail", json!({"path": SEND_PATH, "errcode": -1, "times": 3})).await;

    let busy = client.send(&payslip_message("o-bob")).await.unwrap_err();
    let refused = client.send(&payslip_message("o-ann")).await.unwrap_err();

    for err in [busy, refused] {
        let shown = format!("{err} {err:?} {}", Error::from(err.clone()));
        assert!(!shown.contains(&token) && !shown.contains(SANDBOX_MP_SECRET), "{shown}");
    }
    platform.stop().await;
}

fn slip() -> Payslip {
    Payslip {
        sheet_id: 7,
        tenant_id: 3,
        period: Period::parse("2026-03").unwrap(),
        employee_id: 42,
        employee_name: "欧阳娜娜".into(),
        gross: Money::from_fen(1_500_000),
        contributions: Money::from_fen(157_500),
        tax: Money::from_fen(97_433),
        net_pay: Money::from_fen(1_245_067),
    }
}

fn payslips(platform: &Platform) -> WechatPayslips {
    WechatPayslips {
        messages: Arc::new(platform.client()),
        template_id: SANDBOX_PAYSLIP_TEMPLATE_ID.into(),
        page: Some("pages/payslip/index".into()),
        miniprogram_state: MiniProgramState::Trial,
    }
}

#[tokio::test]
async fn wechat_payslips_sends_the_slip_as_template_data() {
    let platform = Platform::start().await;
    let notifier = payslips(&platform);
    let to = Recipient { openid: Some("o-nana".into()), phone: Some("+8613800138000".into()), email: None };

    let channel = notifier.send(&slip(), &to).await.unwrap();

    assert_eq!(channel, Channel::Wechat);
    let sent = platform.messages_over_http("o-nana").await;
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0]["data"],
        json!({
            "thing1": {"value": "2026-03 工资条"},
            "amount2": {"value": "12450.67"},
            "thing3": {"value": "欧阳娜娜"},
            "amount4": {"value": "15000.00"},
            "amount5": {"value": "974.33"},
        })
    );
    assert_eq!(sent[0]["template_id"], SANDBOX_PAYSLIP_TEMPLATE_ID);
    assert_eq!(sent[0]["page"], "pages/payslip/index");
    assert_eq!(sent[0]["miniprogram_state"], "trial");
    assert_eq!(sent[0]["lang"], "zh_CN");
    platform.stop().await;
}

#[tokio::test]
async fn wechat_payslips_cuts_a_long_name_to_the_platforms_limit() {
    let platform = Platform::start().await;
    let notifier = payslips(&platform);
    let mut slip = slip();
    slip.employee_name = "Maximilian Alexander von Hohenberg-Schwarzenstein".into();

    notifier.send(&slip, &Recipient { openid: Some("o-max".into()), ..Recipient::default() }).await.unwrap();

    let sent = platform.sandbox.subscribe_messages(Some("o-max"));
    assert_eq!(sent[0].value("thing3"), Some("Maximilian Alexande…"));
    platform.stop().await;
}

#[tokio::test]
async fn wechat_payslips_refuses_a_recipient_without_openid() {
    let platform = Platform::start().await;
    let notifier = payslips(&platform);

    for openid in [None, Some(" ".to_owned())] {
        let to = Recipient { openid, phone: Some("+8613800138000".into()), email: None };
        let err = notifier.send(&slip(), &to).await.unwrap_err();
        assert!(matches!(&err, Error::BadRequest(m) if m.contains("openid")), "{err:?}");
    }

    assert!(platform.sandbox.subscribe_messages(None).is_empty());
    assert_eq!(platform.sandbox.access_tokens_issued(), 0);
    platform.stop().await;
}

#[tokio::test]
async fn wechat_payslips_reports_a_used_up_subscription_as_an_upstream_error() {
    let platform = Platform::start().await;
    let notifier = payslips(&platform);
    platform.sandbox.set_subscriptions("o-nana", Some(0)).unwrap();

    let err = notifier.send(&slip(), &Recipient { openid: Some("o-nana".into()), ..Recipient::default() }).await.unwrap_err();

    assert!(matches!(&err, Error::Upstream(m) if m.contains("43101")), "{err:?}");
    platform.stop().await;
}

/// Records calls as `endpoint errcode`, for the metrics hook.
#[derive(Default)]
struct Calls(std::sync::Mutex<Vec<String>>);

impl atrium_wechat::CallRecorder for Calls {
    fn record(&self, endpoint: &str, errcode: &str, _elapsed: Duration) {
        self.0.lock().unwrap().push(format!("{endpoint} {errcode}"));
    }
}

#[tokio::test]
async fn every_call_is_reported_with_its_endpoint_and_errcode_and_no_secret() {
    let platform = Platform::start().await;
    let calls = Arc::new(Calls::default());
    let tokens = AccessTokens::new(platform.config(SANDBOX_MP_SECRET)).unwrap().with_recorder(calls.clone());
    let client = SubscribeMessages::new(Arc::new(tokens));
    platform.control("fail", json!({"path": SEND_PATH, "errcode": 40001, "times": 1})).await;

    client.send(&payslip_message("o-ann")).await.unwrap();

    let seen = calls.0.lock().unwrap().clone();
    assert_eq!(
        seen,
        ["/cgi-bin/token 0".to_owned(), format!("{SEND_PATH} 40001"), "/cgi-bin/token 0".to_owned(), format!("{SEND_PATH} 0"),]
    );
    assert!(seen.iter().all(|c| !c.contains(SANDBOX_MP_SECRET)));
    platform.stop().await;
}
