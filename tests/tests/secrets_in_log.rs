//! No secret reaches the log. The server runs in this process with a logger that keeps every
//! line at debug level (what an operator turns on to look into a problem): the access log, our
//! own lines and the libraries'. The flows below use every kind of secret the system handles —
//! passwords, access and refresh tokens, verification codes, QR tickets and platform codes,
//! document API tokens, the authorisation's state and code, merchant keys, the component's
//! credentials, the metrics token, the configured secrets — and none of them is in the log
//! afterwards, nor any credential-named query parameter with its value. And no one can write a
//! line of their own into the log: forged platform pushes whose XML carries a line break in an
//! entity, an element name or the appid leave no line the sender wrote.
#![allow(clippy::unwrap_used)]
use atrium_e2e::pay;
use atrium_e2e::serde_json::{Value, json};
use atrium_e2e::{Backend, TestApp, captured_log};

const JWT_SECRET: &str = "e2e-log-secret-0123456789abcdef-xyz";
const MASTER_KEY: &str = "Lq83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq8=";
const METRICS_TOKEN: &str = "metrics-token-7f3a9c2e5b1d4f60";
const COMPONENT_SECRET: &str = "componentsecret9f8e7d6c5b4a";
const COMPONENT_TOKEN: &str = "CompToken8c1e";
const COMPONENT_AES_KEY: &str = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG";

/// The values a flow used that must never be logged.
#[derive(Default)]
struct Secrets(Vec<(String, String)>);

impl Secrets {
    fn add(&mut self, what: &str, value: impl Into<String>) {
        let value = value.into();
        assert!(value.len() >= 6, "{what} is too short to look for: {value:?}");
        self.0.push((what.to_owned(), value));
    }

    fn add_json(&mut self, what: &str, value: &Value) {
        self.add(what, value.as_str().unwrap_or_else(|| panic!("{what} is not a string: {value}")));
    }
}

async fn start(backend: Backend) -> Option<TestApp> {
    captured_log::keep();
    TestApp::start_with(
        backend,
        &[
            ("ATRIUM_JWT_SECRET", JWT_SECRET),
            ("ATRIUM_MASTER_KEY", MASTER_KEY),
            ("ATRIUM_METRICS_TOKEN", METRICS_TOKEN),
            ("ATRIUM_WECHAT_COMPONENT_APPID", "wx_component_log"),
            ("ATRIUM_WECHAT_COMPONENT_SECRET", COMPONENT_SECRET),
            ("ATRIUM_WECHAT_COMPONENT_TOKEN", COMPONENT_TOKEN),
            ("ATRIUM_WECHAT_COMPONENT_AES_KEY", COMPONENT_AES_KEY),
            ("ATRIUM_JOB_POLL_MS", "50"),
        ],
    )
    .await
}

/// Passwords, tokens, verification codes and their sessions.
async fn identity_flows(app: &TestApp, s: &mut Secrets) {
    s.add("the bootstrap password", app.admin_password.clone());
    let login = app.login("admin", &app.admin_password).await;
    s.add_json("an access token", &login["access_token"]);
    s.add_json("a refresh token", &login["refresh_token"]);
    let admin = login["access_token"].as_str().unwrap().to_owned();
    let refreshed = app.post("/api/v1/auth/refresh", json!({"refresh_token": login["refresh_token"]}), None).await;
    refreshed.expect(200);
    s.add_json("a rotated refresh token", &refreshed.data()["refresh_token"]);

    // A user made with a password, which it then changes.
    let (first, second) = ("Log-first-pass-41x", "Log-second-pass-97q");
    s.add("a user's password", first);
    s.add("a user's new password", second);
    let user = app.create("/api/v1/users", json!({"username": "ops-log", "password": first, "name": "Ops", "role_ids": [1]}), &admin).await;
    let ops = app.login("ops-log", first).await;
    s.add_json("a user's access token", &ops["access_token"]);
    app.put(&format!("/api/v1/users/{}", user["id"]), json!({"password": second}), Some(&admin)).await.expect(200);
    app.login("ops-log", second).await;
    app.post("/api/v1/auth/login", json!({"method": "password", "username": "ops-log", "password": first}), None).await.expect(401);

    // Registration and login by verification code.
    let target = "log-owner@example.com";
    let code = app.post("/api/v1/auth/send-code", json!({"target": target, "purpose": "register"}), None).await;
    code.expect(200);
    s.add_json("a registration code", &code.data()["debug_code"]);
    let password = "Log-owner-pass-55k";
    s.add("a registering owner's password", password);
    app.post(
        "/api/v1/auth/register",
        json!({"target": target, "code": code.data()["debug_code"], "password": password, "name": "Owner", "tenant_name": "Log Ltd"}),
        None,
    )
    .await
    .expect(200);
    let code = app.post("/api/v1/auth/send-code", json!({"target": target, "purpose": "login"}), None).await;
    code.expect(200);
    s.add_json("a login code", &code.data()["debug_code"]);
    let by_code =
        app.post("/api/v1/auth/login", json!({"method": "code", "target": target, "code": code.data()["debug_code"]}), None).await;
    by_code.expect(200);
    s.add_json("a code login's access token", &by_code.data()["access_token"]);

    // A QR login: the ticket and the platform's one-time code travel in query strings.
    let qr = app.get("/api/v1/auth/chat-qr", None).await;
    qr.expect(200);
    s.add_json("a QR ticket", &qr.data()["ticket"]);
    let ticket = qr.data()["ticket"].as_str().unwrap().to_owned();
    app.get(&format!("/api/v1/auth/chat-qr/status?ticket={ticket}"), None).await.expect(200);
    let scanned =
        app.post("/sandbox/control/scan", json!({"qr_url": qr.data()["qr_url"], "openid": "o-log", "unionid": "u-log"}), None).await;
    assert_eq!(scanned.status, 200, "{}", scanned.body);
    s.add_json("the platform's scan code", &scanned.body["code"]);
    app.post("/api/v1/auth/chat-bind", json!({"ticket": ticket}), Some(&admin)).await.expect(200);

    // A document API token, used.
    let project = app.create("/api/v1/doc-projects", json!({"name": "Log handbook"}), &admin).await;
    let token = app.create("/api/v1/doc-tokens", json!({"name": "log"}), &admin).await["token"].clone();
    s.add_json("a document API token", &token);
    let doc = app
        .send(
            app.client
                .post(app.url("/api/docs/"))
                .header("authorization", format!("Token {}", token.as_str().unwrap()))
                .json(&json!({"project": project["id"], "name": "Hello", "content": "# Hi"})),
        )
        .await;
    assert_eq!(doc.status, 200, "{}", doc.body);

    // The metrics, with their token.
    let metrics = app.client.get(app.url("/metrics")).bearer_auth(METRICS_TOKEN).send().await.unwrap();
    assert_eq!(metrics.status().as_u16(), 200);
}

/// A tenant's mini-program authorised through the sandbox platform: the single-use state and
/// the authorisation code pass through the callback's query string.
async fn authorisation_flow(app: &TestApp, s: &mut Secrets) {
    let admin = app.admin_token().await;
    let tenant = app.create("/api/v1/tenants", json!({"name": "Log shop"}), &admin).await["id"].as_i64().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let link = loop {
        let r = app.get(&format!("/api/v1/miniprogram/authorization?tenant_id={tenant}"), Some(&admin)).await;
        r.expect(200);
        if let Some(link) = r.data()["authorize_url"].as_str() {
            break link.to_owned();
        }
        assert!(std::time::Instant::now() < deadline, "no authorisation link: no verify ticket arrived");
        app.post("/sandbox/control/verify-ticket", json!({}), None).await;
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    let state = link.split("state%3D").nth(1).or_else(|| link.split("state=").nth(1)).unwrap();
    let state: String = state.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-').collect();
    s.add("an authorisation state", state);
    let r = app.post("/sandbox/control/authorize", json!({"tenant_id": tenant, "authorizer_appid": "wx_log_app"}), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["callback_status"], 200, "{}", r.body);
    s.add_json("an authorisation code", &r.body["auth_code"]);
    s.add_json("a pre-authorisation code", &r.body["pre_auth_code"]);
}

/// A merchant configured with its keys, an order paid (the platform's notification decrypted
/// with the APIv3 key) and refunded.
async fn payment_flow(app: &TestApp, s: &mut Secrets) {
    let merchant = app.post("/sandbox/control/merchant", json!({"mchid": "1900000071", "appid": pay::APPID}), None).await;
    assert_eq!(merchant.status, 200, "{}", merchant.body);
    s.add_json("a merchant's APIv3 key", &merchant.body["api_v3_key"]);
    let pem = merchant.body["private_key_pem"].as_str().unwrap();
    // The key's body lines, each long enough to be recognised alone.
    for line in pem.lines().filter(|l| !l.starts_with("-----") && l.len() >= 40) {
        s.add("a line of a merchant's private key", line);
    }
    let org = pay::shop(app, "1900000071").await;
    let order = pay::paid_order(app, &org.t1_admin, 1200, "o_log_payer").await;
    let refund =
        app.post(&format!("/api/v1/orders/{}/refund", order["id"]), json!({"amount": 200, "reason": "log"}), Some(&org.t1_admin)).await;
    refund.expect(200);
}

/// The platform's service-provider account and a sub-merchant's paid and refunded order: the
/// provider's keys travel the same paths as a merchant's.
async fn provider_flow(app: &TestApp, s: &mut Secrets) {
    let admin = app.admin_token().await;
    pay::configure_provider(app, &admin, "1900000072").await;
    // Registering again answers the same material.
    let provider = app.post("/sandbox/control/merchant", json!({"mchid": "1900000072", "appid": pay::SP_APPID}), None).await.body;
    s.add_json("the provider's APIv3 key", &provider["api_v3_key"]);
    for line in provider["private_key_pem"].as_str().unwrap().lines().filter(|l| !l.starts_with("-----") && l.len() >= 40) {
        s.add("a line of the provider's private key", line);
    }
    let tenant = app.create("/api/v1/tenants", json!({"name": "Sub shop"}), &admin).await["id"].as_i64().unwrap();
    pay::configure_sub_merchant(app, &admin, tenant, "1900000072", "1900000273", None).await;
    let order =
        json!({"tenant_id": tenant, "description": "Tea", "amount": 1300, "openid": "o_log_sub_payer", "out_trade_no": "T_LOG_SUB_1"});
    app.post("/api/v1/miniprogram/payment/unified-order", order, Some(&admin)).await.expect(200);
    app.post("/sandbox/control/pay", json!({"out_trade_no": "T_LOG_SUB_1", "result": "SUCCESS"}), None).await;
    pay::eventually(10, "T_LOG_SUB_1 paid", async || {
        let q =
            app.post("/api/v1/miniprogram/payment/query", json!({"tenant_id": tenant, "out_trade_no": "T_LOG_SUB_1"}), Some(&admin)).await;
        if q.data()["trade_state"] == "SUCCESS" { Ok(()) } else { Err(q.body.to_string()) }
    })
    .await;
    let refund = json!({"tenant_id": tenant, "out_trade_no": "T_LOG_SUB_1", "amount": 300});
    app.post("/api/v1/miniprogram/payment/refund", refund, Some(&admin)).await.expect(200);
}

/// The log after the flows, checked for every secret and for credential-named query
/// parameters that kept their value.
fn check_the_log(secrets: &Secrets) {
    let log = captured_log::text();
    assert!(log.contains("POST /api/v1/auth/login"), "the access log was not captured");
    assert!(log.contains("GET /api/v1/miniprogram/authorization/callback?"), "the authorisation callback was not logged");
    for (what, value) in secrets.0.iter().chain(
        [
            ("the JWT secret", JWT_SECRET),
            ("the master key", MASTER_KEY),
            ("the metrics token", METRICS_TOKEN),
            ("the component secret", COMPONENT_SECRET),
            ("the component token", COMPONENT_TOKEN),
            ("the component's AES key", COMPONENT_AES_KEY),
        ]
        .iter()
        .map(|(w, v)| (w.to_string(), v.to_string()))
        .collect::<Vec<_>>()
        .iter(),
    ) {
        let line = log.lines().find(|l| l.contains(value.as_str()));
        assert!(line.is_none(), "{what} is in the log: {}", line.unwrap_or_default());
    }
    for name in ["access_token=", "component_access_token=", "secret=", "auth_code=", "code=", "state=", "ticket=", "password="] {
        for (i, _) in log.match_indices(name) {
            let before = log[..i].chars().last();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                continue; // part of a longer name, checked under its own
            }
            let after = &log[i + name.len()..];
            assert!(
                after.starts_with("[redacted]") || after.starts_with('&') || after.starts_with(' ') || after.starts_with('"'),
                "a {name} query parameter kept its value: …{}…",
                &log[i.saturating_sub(80)..(i + name.len() + 40).min(log.len())]
            );
        }
    }
}

/// What a stranger starts a forged line with.
const FORGED: &str = "ERROR forged by a stranger";

/// Anonymous pushes to both platform URLs whose unsigned XML carries line breaks where the
/// parser would quote it: an unknown entity, an element name, the Encrypt itself, the appid.
async fn forged_pushes(app: &TestApp) {
    let query = "timestamp=1700000000&nonce=n&encrypt_type=aes&msg_signature=0000000000000000000000000000000000000000";
    let bodies = [
        format!("<xml><AppId>&x\r\n{FORGED};</AppId><Encrypt><![CDATA[AAAA]]></Encrypt></xml>"),
        format!("<xml><ToUserName>&x\n{FORGED};</ToUserName><Encrypt>&y\r\n{FORGED};</Encrypt></xml>"),
        format!("<xml><A\n{FORGED}>1</A\n{FORGED}></xml>"),
        format!("<xml><Encrypt>&\r\n{FORGED};</Encrypt></xml>"),
    ];
    for path in
        ["/api/v1/miniprogram/component/events".to_owned(), "/api/v1/miniprogram/component/messages/wx%0D%0AERROR%20forged".to_owned()]
    {
        for body in &bodies {
            let r =
                app.send(app.client.post(app.url(&format!("{path}?{query}"))).header("content-type", "text/xml").body(body.clone())).await;
            assert!(r.status == 400 || r.status == 401, "{path}: {} {}", r.status, r.body);
            let message = r.body["message"].as_str().unwrap_or_default();
            assert!(!message.contains('\n') && !message.contains('\r'), "{path}: the answer quotes the line break: {message:?}");
        }
    }
}

/// No line of the log is one a sender wrote, and no message of ours carries their line break.
fn check_no_forged_line() {
    let lines = captured_log::lines();
    for l in &lines {
        assert!(!(l.message.contains("forged") && (l.message.contains('\n') || l.message.contains('\r'))), "a forged line break: {l:?}");
    }
    let text = captured_log::text();
    let forged = text.lines().find(|l| l.trim_start().starts_with(FORGED));
    assert!(forged.is_none(), "a line of the sender's: {forged:?}");
}

async fn every_flow(app: &TestApp) {
    let mut secrets = Secrets::default();
    identity_flows(app, &mut secrets).await;
    authorisation_flow(app, &mut secrets).await;
    payment_flow(app, &mut secrets).await;
    provider_flow(app, &mut secrets).await;
    forged_pushes(app).await;
    check_the_log(&secrets);
    check_no_forged_line();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_used_by_the_flows_is_in_the_log_on_sqlite() {
    let app = start(Backend::Sqlite).await.unwrap();
    every_flow(&app).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_used_by_the_flows_is_in_the_log_on_postgres() {
    let Some(app) = start(Backend::Postgres).await else {
        atrium_e2e::skip_postgres("no_secret_used_by_the_flows_is_in_the_log_on_postgres");
        return;
    };
    every_flow(&app).await;
    app.stop().await;
}
