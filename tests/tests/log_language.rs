//! The log speaks words, and WARN means an operator has something to look at. The server runs
//! in this process with a logger that keeps every line at debug level; representative happy
//! paths — logging in, creating a partner, tenants, users and an employee, configuring a
//! merchant, an order paid through the sandbox pay platform and refunded, a transaction of the
//! mini-program payment routes paid and notified, a mini-program authorised through the
//! sandbox platform — leave no line of ours showing Rust's `Debug` (`Some(…)`, `None`, a struct
//! dump, a range) and no WARN or ERROR line of anyone's.
#![allow(clippy::unwrap_used)]
use atrium_e2e::pay;
use atrium_e2e::serde_json::json;
use atrium_e2e::{Backend, TestApp, captured_log};

async fn start(backend: Backend) -> Option<TestApp> {
    captured_log::keep();
    TestApp::start_with(
        backend,
        &[
            ("ATRIUM_WECHAT_COMPONENT_APPID", "wx_component_words"),
            ("ATRIUM_WECHAT_COMPONENT_SECRET", "componentsecret1a2b3c4d5e"),
            ("ATRIUM_WECHAT_COMPONENT_TOKEN", "WordsToken42"),
            ("ATRIUM_WECHAT_COMPONENT_AES_KEY", "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG"),
            ("ATRIUM_JOB_POLL_MS", "50"),
        ],
    )
    .await
}

/// Logging in, a partner with two tenants and their users (`org`), and an employee.
async fn org_flow(app: &TestApp) -> atrium_e2e::Org {
    let org = app.org().await;
    app.create("/api/v1/employees", json!({"name": "Ann Words", "base_salary": 800000}), &org.t1_admin).await;
    org
}

/// A merchant configured and tested, an order paid through the sandbox and refunded, and a
/// transaction of the mini-program payment routes paid, notified and queried.
async fn payment_flow(app: &TestApp, org: &atrium_e2e::Org) {
    pay::configure_merchant(app, &org.admin, org.t1, "1900000081").await;
    let test = app.post("/api/v1/miniprogram/payment/test", json!({"tenant_id": org.t1}), Some(&org.admin)).await;
    test.expect(200);
    assert_eq!(test.data()["ok"], true, "{}", test.body);

    let order = pay::paid_order(app, &org.t1_admin, 1500, "o_words_payer").await;
    let refund =
        app.post(&format!("/api/v1/orders/{}/refund", order["id"]), json!({"amount": 500, "reason": "words"}), Some(&org.t1_admin)).await;
    refund.expect(200);
    let out_refund_no = refund.data()["refund"]["out_refund_no"].as_str().unwrap().to_owned();

    let no = "WORDS0001";
    let placed = app
        .post(
            "/api/v1/miniprogram/payment/unified-order",
            json!({"description": "Coffee", "amount": 300, "openid": "o_words_payer", "out_trade_no": no}),
            Some(&org.t1_admin),
        )
        .await;
    placed.expect(200);
    // The sandbox's payer pays; the platform's notification is answered before this returns.
    let paid = app.post("/sandbox/control/pay", json!({"pay_params": placed.data()["pay_params"], "result": "SUCCESS"}), None).await;
    assert_eq!(paid.status, 200, "{}", paid.body);
    pay::eventually(15, "the transaction paid", async || {
        let q = app.post("/api/v1/miniprogram/payment/query", json!({"out_trade_no": no}), Some(&org.t1_admin)).await;
        q.expect(200);
        if q.data()["trade_state"] == "SUCCESS" { Ok(()) } else { Err(q.body.to_string()) }
    })
    .await;
    // The platform settles the order's refund and notifies it.
    let settled = app.post("/sandbox/control/refund", json!({"out_refund_no": out_refund_no, "result": "SUCCESS"}), None).await;
    assert_eq!(settled.status, 200, "{}", settled.body);
    let order_id = order["id"].as_i64().unwrap();
    pay::eventually(15, "the order's refund settled", async || {
        let o = pay::order(app, &org.t1_admin, order_id).await;
        if o["refunded_amount"] == 500 { Ok(()) } else { Err(o.to_string()) }
    })
    .await;
}

/// A tenant's mini-program authorised through the sandbox platform: the admin's browser comes
/// back through the callback and the platform pushes the `authorized` event, each with the code.
async fn authorisation_flow(app: &TestApp, org: &atrium_e2e::Org) {
    pay::eventually(30, "an authorisation link (a verify ticket)", async || {
        let r = app.get(&format!("/api/v1/miniprogram/authorization?tenant_id={}", org.t2), Some(&org.admin)).await;
        r.expect(200);
        if r.data()["authorize_url"].is_string() {
            return Ok(());
        }
        app.post("/sandbox/control/verify-ticket", json!({}), None).await;
        Err(r.body.to_string())
    })
    .await;
    let r = app.post("/sandbox/control/authorize", json!({"tenant_id": org.t2, "authorizer_appid": "wx_words_app"}), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["callback_status"], 200, "{}", r.body);
    let shown = app.get(&format!("/api/v1/miniprogram/authorization?tenant_id={}", org.t2), Some(&org.admin)).await;
    shown.expect(200);
    assert_eq!(shown.data()["status"], "authorized", "{}", shown.body);
}

/// What in `message` is Rust's `Debug` rather than words, if anything.
fn rust_in(message: &str) -> Option<&'static str> {
    if message.contains("Some(") {
        return Some("an Option's Some(…)");
    }
    let words = message.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
    if words.clone().any(|w| w == "None") {
        return Some("an Option's None");
    }
    if message.contains("..=") {
        return Some("a range");
    }
    // `Owner { party_type: …`: an identifier, then ` { `.
    for (i, _) in message.match_indices(" { ") {
        if message[..i].chars().last().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Some("a struct dump");
        }
    }
    None
}

fn check_the_log() {
    let log: Vec<(log::Level, String, String)> = captured_log::lines().into_iter().map(|l| (l.level, l.target, l.message)).collect();
    let ours = |target: &str| target.starts_with("atrium") || target.starts_with("actix_web::middleware::logger");
    assert!(log.iter().any(|(_, _, m)| m.contains("POST /api/v1/auth/login")), "the access log was not captured");
    assert!(log.iter().any(|(_, t, _)| t.starts_with("atrium_sandbox")), "the sandbox's lines were not captured");
    let mut bad = vec![];
    for (level, target, message) in &log {
        if let Some(what) = rust_in(message).filter(|_| ours(target)) {
            bad.push(format!("{what}: {level} {target} {message}"));
        }
        if *level <= log::Level::Warn {
            bad.push(format!("{level} on a happy path: {target} {message}"));
        }
    }
    assert!(bad.is_empty(), "{} line(s) to fix:\n{}", bad.len(), bad.join("\n"));
}

async fn every_flow(app: &TestApp) {
    let org = org_flow(app).await;
    payment_flow(app, &org).await;
    authorisation_flow(app, &org).await;
}

#[test]
fn the_checks_see_what_they_look_for() {
    for (line, what) in [
        ("sandbox platform push 3 (authorized) to http://x/events: Some(200) None", "an Option's Some(…)"),
        ("mini-program platform api_query_auth for tenant 2 (no task): errcode None: …", "an Option's None"),
        ("API token 4 issued for Owner { party_type: Platform, party_id: None }", "an Option's None"),
        ("API token 4 issued for Owner { party_type: Platform }", "a struct dump"),
        ("seeded tenants 1..=3", "a range"),
    ] {
        assert_eq!(rust_in(line), Some(what), "{line}");
    }
    for line in ["API token 4 issued for the platform", "seeded tenants 1 to 3", "no errcode", "Nonetheless", "fn x() { }"] {
        assert_eq!(rust_in(line), None, "{line}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_of_the_happy_paths_speaks_words_and_warns_of_nothing_on_sqlite() {
    let app = start(Backend::Sqlite).await.unwrap();
    every_flow(&app).await;
    app.stop().await;
    check_the_log();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_of_the_happy_paths_speaks_words_and_warns_of_nothing_on_postgres() {
    let Some(app) = start(Backend::Postgres).await else {
        atrium_e2e::skip_postgres("the_log_of_the_happy_paths_speaks_words_and_warns_of_nothing_on_postgres");
        return;
    };
    every_flow(&app).await;
    app.stop().await;
    check_the_log();
}
