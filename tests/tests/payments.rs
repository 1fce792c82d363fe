//! Payments through the sandbox pay platform, over HTTP, on SQLite and PostgreSQL: the
//! configuration and keys, an order paid by the sandbox's payer and notified, refunds, close,
//! idempotency, concurrency and tampered notifications.
#![allow(clippy::unwrap_used)]
use atrium_e2e::serde_json::{Value, json};
use atrium_e2e::{Resp, TestApp, e2e, join_all};

const MCHID: &str = "1900000001";
const APPID: &str = "wx_sandbox_mp";

/// A `multipart/form-data` body of text parts: (content type, body).
fn multipart(parts: &[(&str, &str)]) -> (String, Vec<u8>) {
    let boundary = "atrium-test-boundary-7f3c";
    let mut body = String::new();
    for (name, value) in parts {
        body.push_str(&format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"));
    }
    body.push_str(&format!("--{boundary}--\r\n"));
    (format!("multipart/form-data; boundary={boundary}"), body.into_bytes())
}

async fn upload(app: &TestApp, token: &str, parts: &[(&str, &str)]) -> Resp {
    let (content_type, body) = multipart(parts);
    let req = app.client.post(app.url("/api/v1/miniprogram/payment/cert/upload")).bearer_auth(token).header("content-type", content_type);
    app.send(req.body(body)).await
}

async fn post_key(app: &TestApp, path: &str, key: &str, body: Value, token: &str) -> Resp {
    app.send(app.client.post(app.url(path)).bearer_auth(token).header("Idempotency-Key", key).json(&body)).await
}

/// A tenant with a complete, enabled configuration for a sandbox merchant: (admin token, tenant id).
async fn configured_tenant(app: &TestApp) -> (String, i64) {
    let admin = app.admin_token().await;
    let tenant = app.create("/api/v1/tenants", json!({"name": "Shop"}), &admin).await["id"].as_i64().unwrap();
    let merchant = app.post("/sandbox/control/merchant", json!({"mchid": MCHID, "appid": APPID}), None).await;
    assert_eq!(merchant.status, 200, "{}", merchant.body);
    let m = &merchant.body;
    app.put(
        "/api/v1/miniprogram/payment/config",
        json!({"tenant_id": tenant, "mchid": MCHID, "appid": APPID, "api_v3_key": m["api_v3_key"]}),
        Some(&admin),
    )
    .await
    .expect(200);
    let tid = tenant.to_string();
    upload(
        app,
        &admin,
        &[
            ("tenant_id", &tid),
            ("private_key", m["private_key_pem"].as_str().unwrap()),
            ("certificate", m["certificate_pem"].as_str().unwrap()),
            ("platform_public_key", m["platform_public_key_pem"].as_str().unwrap()),
            ("platform_public_key_id", m["platform_public_key_id"].as_str().unwrap()),
        ],
    )
    .await
    .expect(200);
    app.put(
        "/api/v1/miniprogram/payment/config",
        json!({"tenant_id": tenant, "mchid": MCHID, "appid": APPID, "enabled": true}),
        Some(&admin),
    )
    .await
    .expect(200);
    (admin, tenant)
}

async fn order(app: &TestApp, token: &str, tenant: i64, no: &str, amount: i64) -> Resp {
    app.post(
        "/api/v1/miniprogram/payment/unified-order",
        json!({"tenant_id": tenant, "description": "Coffee", "amount": amount, "openid": "o_payer_1", "out_trade_no": no}),
        Some(token),
    )
    .await
}

async fn trade_state(app: &TestApp, token: &str, tenant: i64, no: &str) -> String {
    let q = app.post("/api/v1/miniprogram/payment/query", json!({"tenant_id": tenant, "out_trade_no": no}), Some(token)).await;
    q.expect(200);
    q.data()["trade_state"].as_str().unwrap().to_owned()
}

/// Waits (briefly) for the sandbox's notification to have been applied.
async fn wait_for_state(app: &TestApp, token: &str, tenant: i64, no: &str, want: &str) -> String {
    let mut state = String::new();
    for _ in 0..50 {
        state = trade_state(app, token, tenant, no).await;
        if state == want {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    state
}

e2e!(a_payment_runs_from_configuration_to_refund_and_close, |app| {
    let (admin, tenant) = configured_tenant(app).await;

    let config = app.get(&format!("/api/v1/miniprogram/payment/config?tenant_id={tenant}"), Some(&admin)).await;
    config.expect(200);
    assert_eq!(config.data()["api_v3_key_set"], true);
    let shown = config.body.to_string();
    assert!(!shown.contains("PRIVATE KEY") && !shown.contains("CERTIFICATE"), "a key or certificate leaks: {shown}");

    let test = app.post("/api/v1/miniprogram/payment/test", json!({"tenant_id": tenant}), Some(&admin)).await;
    test.expect(200);
    assert_eq!(test.data()["ok"], true, "{}", test.body);

    let placed = order(app, &admin, tenant, "T20261123001", 100).await;
    placed.expect(200);
    assert_eq!(placed.data()["pay_params"]["signType"], "RSA");
    assert!(placed.data()["pay_params"]["package"].as_str().unwrap().starts_with("prepay_id="));
    assert_eq!(trade_state(app, &admin, tenant, "T20261123001").await, "NOTPAY");

    app.post("/sandbox/control/pay", json!({"out_trade_no": "T20261123001", "result": "SUCCESS"}), None).await;
    assert_eq!(wait_for_state(app, &admin, tenant, "T20261123001", "SUCCESS").await, "SUCCESS");

    let refund = app
        .post(
            "/api/v1/miniprogram/payment/refund",
            json!({"tenant_id": tenant, "out_trade_no": "T20261123001", "amount": 40, "out_refund_no": "R20261123001"}),
            Some(&admin),
        )
        .await;
    refund.expect(200);
    assert_eq!(refund.data()["status"], "processing");
    app.post("/sandbox/control/refund", json!({"out_refund_no": "R20261123001", "result": "SUCCESS"}), None).await;

    // More than what is left is refused; exactly what is left is not.
    let too_much = app
        .post(
            "/api/v1/miniprogram/payment/refund",
            json!({"tenant_id": tenant, "out_trade_no": "T20261123001", "amount": 61}),
            Some(&admin),
        )
        .await;
    too_much.expect(409);

    // A paid transaction cannot be closed; an unpaid one can.
    app.post("/api/v1/miniprogram/payment/close", json!({"tenant_id": tenant, "out_trade_no": "T20261123001"}), Some(&admin))
        .await
        .expect(409);
    order(app, &admin, tenant, "T20261123002", 200).await.expect(200);
    let closed =
        app.post("/api/v1/miniprogram/payment/close", json!({"tenant_id": tenant, "out_trade_no": "T20261123002"}), Some(&admin)).await;
    closed.expect(200);
    assert_eq!(closed.data()["trade_state"], "CLOSED");
});

e2e!(an_idempotency_key_replays_the_first_answer_and_refuses_another_body, |app| {
    let (admin, tenant) = configured_tenant(app).await;
    let body = json!({"tenant_id": tenant, "description": "Tea", "amount": 300, "openid": "o_payer_2", "out_trade_no": "T20261123010"});

    let first = post_key(app, "/api/v1/miniprogram/payment/unified-order", "key-1", body.clone(), &admin).await;
    let again = post_key(app, "/api/v1/miniprogram/payment/unified-order", "key-1", body.clone(), &admin).await;
    let other = post_key(
        app,
        "/api/v1/miniprogram/payment/unified-order",
        "key-1",
        json!({"tenant_id": tenant, "description": "Tea", "amount": 301, "openid": "o_payer_2"}),
        &admin,
    )
    .await;
    let bad_key = post_key(app, "/api/v1/miniprogram/payment/unified-order", "", body.clone(), &admin).await;

    first.expect(200);
    assert_eq!(first.header("idempotent-replayed"), None);
    again.expect(200);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.body, first.body);
    other.expect(409);
    bad_key.expect(400);

    // Invalid input stores nothing: the same key then works for a valid body.
    let invalid =
        post_key(app, "/api/v1/miniprogram/payment/unified-order", "key-2", json!({"tenant_id": tenant, "amount": 0}), &admin).await;
    invalid.expect(400);
    let valid = json!({"tenant_id": tenant, "description": "Cake", "amount": 500, "openid": "o_payer_2", "out_trade_no": "T20261123011"});
    post_key(app, "/api/v1/miniprogram/payment/unified-order", "key-2", valid, &admin).await.expect(200);
});

e2e!(concurrent_requests_with_one_key_place_one_order, |app| {
    let (admin, tenant) = configured_tenant(app).await;
    let body = json!({"tenant_id": tenant, "description": "Tea", "amount": 300, "openid": "o_payer_3"});
    let calls = (0..10).map(|_| post_key(app, "/api/v1/miniprogram/payment/unified-order", "same-key", body.clone(), &admin));
    let answers = join_all(calls).await;

    let ok: Vec<&Resp> = answers.iter().filter(|r| r.status == 200).collect();
    assert!(answers.iter().all(|r| r.status == 200 || r.status == 409), "{:?}", answers.iter().map(|r| r.status).collect::<Vec<_>>());
    assert!(!ok.is_empty());
    let numbers: std::collections::BTreeSet<&str> = ok.iter().map(|r| r.data()["out_trade_no"].as_str().unwrap()).collect();
    assert_eq!(numbers.len(), 1, "one key placed several orders: {numbers:?}");
});

e2e!(fifty_concurrent_refunds_never_exceed_what_was_paid, |app| {
    let (admin, tenant) = configured_tenant(app).await;
    order(app, &admin, tenant, "T20261123020", 100).await.expect(200);
    app.post("/sandbox/control/pay", json!({"out_trade_no": "T20261123020", "result": "SUCCESS"}), None).await;
    assert_eq!(wait_for_state(app, &admin, tenant, "T20261123020", "SUCCESS").await, "SUCCESS");

    let calls = (0..50).map(|i| {
        app.post(
            "/api/v1/miniprogram/payment/refund",
            json!({"tenant_id": tenant, "out_trade_no": "T20261123020", "amount": 3, "out_refund_no": format!("R2026112302{i:02}")}),
            Some(&admin),
        )
    });
    let answers = join_all(calls).await;
    let accepted: i64 = answers.iter().filter(|r| r.status == 200).map(|r| r.data()["amount"].as_i64().unwrap()).sum();
    assert!(
        answers.iter().all(|r| r.status == 200 || r.status == 409),
        "{:?}",
        answers.iter().map(|r| (r.status, r.body.to_string())).collect::<Vec<_>>()
    );
    assert!(accepted <= 100, "refunded {accepted} of 100");
    assert!(accepted >= 90, "only {accepted} fen of refunds were accepted");
    // What the store holds is exactly what was accepted: one fen more than what is left is
    // refused, exactly what is left is not.
    let left = 100 - accepted;
    let refund = |amount: i64, no: &'static str| {
        app.post(
            "/api/v1/miniprogram/payment/refund",
            json!({"tenant_id": tenant, "out_trade_no": "T20261123020", "amount": amount, "out_refund_no": no}),
            Some(&admin),
        )
    };
    refund(left + 1, "R20261123099").await.expect(409);
    if left > 0 {
        refund(left, "R20261123098").await.expect(200);
    }
});

e2e!(a_tampered_or_unsigned_notification_changes_nothing, |app| {
    let (admin, tenant) = configured_tenant(app).await;
    order(app, &admin, tenant, "T20261123030", 100).await.expect(200);
    let path = format!("/api/v1/miniprogram/payment/notify/{tenant}");

    let unsigned = app.send(app.client.post(app.url(&path)).header("content-type", "application/json").body("{}")).await;
    assert!(unsigned.status == 400 || unsigned.status == 401, "{}", unsigned.status);
    assert_eq!(unsigned.body["code"], "FAIL");
    let forged = app
        .send(
            app.client
                .post(app.url(&path))
                .header("content-type", "application/json")
                .header("Wechatpay-Timestamp", chrono_now())
                .header("Wechatpay-Nonce", "n0nce")
                .header("Wechatpay-Serial", "PUB_KEY_ID_UNKNOWN")
                .header("Wechatpay-Signature", "WECHATPAY/SIGNTEST/abc")
                .body(r#"{"id":"evt-1","event_type":"TRANSACTION.SUCCESS","resource":{}}"#),
        )
        .await;
    assert_eq!(forged.status, 401, "{}", forged.body);
    assert_eq!(forged.body["code"], "FAIL");
    assert_eq!(trade_state(app, &admin, tenant, "T20261123030").await, "NOTPAY");
});

e2e!(another_partners_tenant_is_not_found_by_name, |app| {
    let org = app.org().await;
    let r = app.get(&format!("/api/v1/miniprogram/payment/config?tenant_id={}", org.t2), Some(&org.p1_admin)).await;
    r.expect(404);
    let r = order(app, &org.p1_admin, org.t2, "T20261123040", 100).await;
    r.expect_no_such("tenant_id");
});

fn chrono_now() -> String {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs().to_string()
}
