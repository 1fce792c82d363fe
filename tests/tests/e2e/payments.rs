//! Payments through the sandbox pay platform, over HTTP, on SQLite and PostgreSQL: the
//! configuration and keys, an order paid by the sandbox's payer and notified, refunds, close,
//! idempotency, concurrency and tampered notifications.
#![allow(clippy::unwrap_used)]
use atrium_e2e::pay::{configure_merchant, eventually, platform_refunds};
use atrium_e2e::serde_json::{Value, json};
use atrium_e2e::{Resp, TestApp, e2e, join_all};

const MCHID: &str = "1900000001";

/// A tenant with a complete, enabled configuration for a sandbox merchant: (admin token, tenant id).
async fn configured_tenant(app: &TestApp) -> (String, i64) {
    let admin = app.admin_token().await;
    let tenant = app.create("/api/v1/tenants", json!({"name": "Shop"}), &admin).await["id"].as_i64().unwrap();
    configure_merchant(app, &admin, tenant, MCHID).await;
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

/// `POST /miniprogram/payment/refund` of `amount` fen of `no`, numbered `out_refund_no` if given.
async fn refund(app: &TestApp, token: &str, tenant: i64, no: &str, amount: i64, out_refund_no: Option<&str>) -> Resp {
    let mut body = json!({"tenant_id": tenant, "out_trade_no": no, "amount": amount});
    if let Some(r) = out_refund_no {
        body["out_refund_no"] = json!(r);
    }
    app.post("/api/v1/miniprogram/payment/refund", body, Some(token)).await
}

/// Asserts a 409 of the refund rule saying that exactly `left` fen are left to refund.
#[track_caller]
fn expect_left(r: &Resp, left: i64) {
    r.expect(409);
    let message = r.body["message"].as_str().unwrap_or_default();
    assert!(message.contains(&format!("only {left} fen are left to refund")), "{}", r.body);
}

async fn trade_state(app: &TestApp, token: &str, tenant: i64, no: &str) -> String {
    let q = app.post("/api/v1/miniprogram/payment/query", json!({"tenant_id": tenant, "out_trade_no": no}), Some(token)).await;
    q.expect(200);
    q.data()["trade_state"].as_str().unwrap().to_owned()
}

/// Waits up to five seconds for the sandbox's notification to have been applied, as a
/// query shows it; panics if it was not.
async fn wait_for_state(app: &TestApp, token: &str, tenant: i64, no: &str, want: &str) -> String {
    eventually(5, &format!("{no} reported {want}"), async || {
        let state = trade_state(app, token, tenant, no).await;
        if state == want { Ok(state) } else { Err(state) }
    })
    .await
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

    let first = refund(app, &admin, tenant, "T20261123001", 40, Some("R20261123001")).await;
    first.expect(200);
    assert_eq!(first.data()["status"], "processing");
    let settled = app.post("/sandbox/control/refund", json!({"out_refund_no": "R20261123001", "result": "SUCCESS"}), None).await;
    assert_eq!(settled.status, 200, "{}", settled.body);
    // Seen settled through the API: the same refund number again answers the refund as it
    // stands (a refund the platform acknowledged is not sent again).
    let seen = eventually(10, "refund R20261123001 seen succeeded", async || {
        let r = refund(app, &admin, tenant, "T20261123001", 40, Some("R20261123001")).await;
        r.expect(200);
        if r.data()["status"] == "succeeded" { Ok(r.data().clone()) } else { Err(r.body.to_string()) }
    })
    .await;
    assert!(seen["succeeded_at"].is_string() && seen["refund_id"].is_string(), "{seen}");

    // 60 fen are left: one fen more is refused, exactly 60 is accepted, then nothing is left.
    expect_left(&refund(app, &admin, tenant, "T20261123001", 61, None).await, 60);
    let rest = refund(app, &admin, tenant, "T20261123001", 60, Some("R20261123002")).await;
    rest.expect(200);
    assert_eq!((rest.data()["status"].as_str(), rest.data()["amount"].as_i64()), (Some("processing"), Some(60)), "{}", rest.body);
    expect_left(&refund(app, &admin, tenant, "T20261123001", 1, None).await, 0);
    // The platform holds exactly these two refunds.
    let held: Vec<(String, i64, String)> = platform_refunds(app, "T20261123001")
        .await
        .iter()
        .map(|r| (r["out_refund_no"].as_str().unwrap().to_owned(), r["amount"].as_i64().unwrap(), r["status"].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(held, [("R20261123001".to_owned(), 40, "SUCCESS".to_owned()), ("R20261123002".to_owned(), 60, "PROCESSING".to_owned())]);

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

    let first = app.post_with_key("/api/v1/miniprogram/payment/unified-order", "key-1", body.clone(), &admin).await;
    let again = app.post_with_key("/api/v1/miniprogram/payment/unified-order", "key-1", body.clone(), &admin).await;
    let other = app
        .post_with_key(
            "/api/v1/miniprogram/payment/unified-order",
            "key-1",
            json!({"tenant_id": tenant, "description": "Tea", "amount": 301, "openid": "o_payer_2"}),
            &admin,
        )
        .await;
    let bad_key = app.post_with_key("/api/v1/miniprogram/payment/unified-order", "", body.clone(), &admin).await;

    first.expect(200);
    assert_eq!(first.header("idempotent-replayed"), None);
    again.expect(200);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.body, first.body);
    other.expect(409);
    bad_key.expect(400);

    // Invalid input stores nothing: the same key then works for a valid body.
    let invalid =
        app.post_with_key("/api/v1/miniprogram/payment/unified-order", "key-2", json!({"tenant_id": tenant, "amount": 0}), &admin).await;
    invalid.expect(400);
    let valid = json!({"tenant_id": tenant, "description": "Cake", "amount": 500, "openid": "o_payer_2", "out_trade_no": "T20261123011"});
    app.post_with_key("/api/v1/miniprogram/payment/unified-order", "key-2", valid, &admin).await.expect(200);
});

e2e!(concurrent_requests_with_one_key_place_one_order, |app| {
    let (admin, tenant) = configured_tenant(app).await;
    let body = json!({"tenant_id": tenant, "description": "Tea", "amount": 300, "openid": "o_payer_3"});
    let calls = (0..10).map(|_| app.post_with_key("/api/v1/miniprogram/payment/unified-order", "same-key", body.clone(), &admin));
    let answers = join_all(calls).await;

    let ok: Vec<&Resp> = answers.iter().filter(|r| r.status == 200).collect();
    assert!(answers.iter().all(|r| r.status == 200 || r.status == 409), "{:?}", answers.iter().map(|r| r.status).collect::<Vec<_>>());
    assert!(!ok.is_empty());
    let numbers: std::collections::BTreeSet<&str> = ok.iter().map(|r| r.data()["out_trade_no"].as_str().unwrap()).collect();
    assert_eq!(numbers.len(), 1, "one key placed several orders: {numbers:?}");
    // And the pay platform was asked to place one order.
    assert_eq!(app.running.sandbox.as_ref().unwrap().pay_calls("POST /v3/pay/transactions/jsapi"), 1);
});

e2e!(fifty_concurrent_refunds_never_exceed_what_was_paid, |app| {
    let (admin, tenant) = configured_tenant(app).await;
    order(app, &admin, tenant, "T20261123020", 100).await.expect(200);
    app.post("/sandbox/control/pay", json!({"out_trade_no": "T20261123020", "result": "SUCCESS"}), None).await;
    assert_eq!(wait_for_state(app, &admin, tenant, "T20261123020", "SUCCESS").await, "SUCCESS");

    let numbers: Vec<String> = (0..50).map(|i| format!("R2026112302{i:02}")).collect();
    let answers = join_all(numbers.iter().map(|no| refund(app, &admin, tenant, "T20261123020", 3, Some(no)))).await;
    let accepted: i64 = answers.iter().filter(|r| r.status == 200).map(|r| r.data()["amount"].as_i64().unwrap()).sum();
    for refused in answers.iter().filter(|r| r.status != 200) {
        refused.expect(409);
        assert!(refused.body["message"].as_str().unwrap().contains("fen are left to refund"), "{}", refused.body);
    }
    assert_eq!(accepted, 99, "33 refunds of 3 fen fit in 100");
    // 1 fen is left: 2 are refused, exactly 1 is accepted, then nothing is left.
    expect_left(&refund(app, &admin, tenant, "T20261123020", 2, Some("R20261123099")).await, 1);
    refund(app, &admin, tenant, "T20261123020", 1, Some("R20261123098")).await.expect(200);
    expect_left(&refund(app, &admin, tenant, "T20261123020", 1, Some("R20261123097")).await, 0);
    // Only the accepted refunds reached the pay platform: 33 of 3 fen and the last fen.
    let held: Vec<i64> = platform_refunds(app, "T20261123020").await.iter().map(|r| r["amount"].as_i64().unwrap()).collect();
    assert_eq!((held.len(), held.iter().sum::<i64>()), (34, 100), "{held:?}");
});

/// Delivers a notification the sandbox signed (`POST /sandbox/control/notify-requests`) with
/// `body` and `signature` in place of its own.
async fn deliver(app: &TestApp, n: &Value, body: &str, signature: &str) -> Resp {
    let text = |k: &str| n[k].as_str().unwrap_or_else(|| panic!("no {k} in {n}")).to_owned();
    app.send(
        app.client
            .post(text("url"))
            .header("content-type", "application/json")
            .header("Wechatpay-Timestamp", text("timestamp"))
            .header("Wechatpay-Nonce", text("nonce"))
            .header("Wechatpay-Signature", signature)
            .header("Wechatpay-Serial", text("serial"))
            .body(body.to_owned()),
    )
    .await
}

/// Whether the tenant's notification `id` was recorded as processed.
async fn seen(app: &TestApp, tenant: i64, id: &str) -> bool {
    store(app).notification_seen(tenant, id.to_owned()).await.unwrap()
}

e2e!(a_tampered_notification_is_refused_and_its_event_stays_unprocessed, |app| {
    let (admin, tenant) = configured_tenant(app).await;
    order(app, &admin, tenant, "T20261123030", 100).await.expect(200);
    // Paid on the platform, its notification lost: only a notification can tell us now.
    assert_eq!(app.post("/sandbox/control/notify-lose", json!({"times": 1}), None).await.status, 200);
    app.post("/sandbox/control/pay", json!({"out_trade_no": "T20261123030", "result": "SUCCESS"}), None).await;
    assert_eq!(local(app, tenant, "T20261123030").await.trade_state.as_str(), "NOTPAY");
    // Two genuine notifications of the payment, signed by the platform as it sends them.
    let signed = app.post("/sandbox/control/notify-requests", json!({"out_trade_no": "T20261123030", "count": 2}), None).await;
    assert_eq!(signed.status, 200, "{}", signed.body);
    let (genuine, other) = (&signed.body["notifications"][0], &signed.body["notifications"][1]);
    let body = genuine["body"].as_str().unwrap();
    let signature = genuine["signature"].as_str().unwrap();
    let id = serde_json_id(body);

    // The body changed after signing (one character of the encrypted resource), the same
    // event id kept; and the genuine body under the platform's signature of another body.
    let mut envelope: Value = atrium_e2e::serde_json::from_str(body).unwrap();
    let ciphertext = envelope["resource"]["ciphertext"].as_str().unwrap().to_owned();
    let flipped = if ciphertext.starts_with('A') { "B" } else { "A" };
    envelope["resource"]["ciphertext"] = json!(format!("{flipped}{}", &ciphertext[1..]));
    let tampered = envelope.to_string();
    assert_eq!(serde_json_id(&tampered), id);
    for (what, refused) in [
        ("tampered body", deliver(app, genuine, &tampered, signature).await),
        ("another body's signature", deliver(app, genuine, body, other["signature"].as_str().unwrap()).await),
    ] {
        assert_eq!(refused.status, 401, "{what}: {}", refused.body);
        assert_eq!(refused.body["code"], "FAIL", "{what}: {}", refused.body);
        assert!(!seen(app, tenant, &id).await, "{what}: the event id was recorded");
        assert_eq!(local(app, tenant, "T20261123030").await.trade_state.as_str(), "NOTPAY", "{what} changed the transaction");
    }

    // The genuine delivery of that same event is then processed, once.
    assert_eq!(deliver(app, genuine, body, signature).await.status, 204);
    let paid = local(app, tenant, "T20261123030").await;
    assert_eq!(paid.trade_state.as_str(), "SUCCESS");
    assert!(paid.transaction_id.is_some(), "{paid:?}");
    assert!(seen(app, tenant, &id).await);
    assert_eq!(deliver(app, genuine, body, signature).await.status, 204, "a duplicate is acknowledged");
    assert_eq!(local(app, tenant, "T20261123030").await, paid, "and changes nothing");
});

e2e!(an_unsigned_or_probing_notification_is_unauthenticated_and_changes_nothing, |app| {
    let (admin, tenant) = configured_tenant(app).await;
    order(app, &admin, tenant, "T20261123031", 100).await.expect(200);
    let path = format!("/api/v1/miniprogram/payment/notify/{tenant}");

    // No Wechatpay headers at all: no credential, so 401 (docs/api-guide.md), not a 400.
    let unsigned = app.send(app.client.post(app.url(&path)).header("content-type", "application/json").body("{}")).await;
    assert_eq!(unsigned.status, 401, "{}", unsigned.body);
    assert_eq!(unsigned.body["code"], "FAIL");
    // The platform's signature probe is refused as a bad signature.
    let probe = app
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
    assert_eq!(probe.status, 401, "{}", probe.body);
    assert_eq!(probe.body["code"], "FAIL");
    assert!(!seen(app, tenant, "evt-1").await);
    assert_eq!(local(app, tenant, "T20261123031").await.trade_state.as_str(), "NOTPAY");
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

// ---- Notifications out of order, lost notifications, and the jobs that settle them ----

use atrium_kernel::{JobStore, NewJob, StrEnum};
use atrium_payments::{PaymentRepo, Transaction};
use std::time::Duration;

/// The test master key (see the harness's base variables).
fn store(app: &TestApp) -> atrium_e2e::PaymentStore {
    use base64::Engine;
    let key: [u8; 32] =
        base64::engine::general_purpose::STANDARD.decode("q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80=").unwrap().try_into().unwrap();
    atrium_e2e::PaymentStore::new(app.running.db.clone(), atrium_e2e::FieldCipher::new(&key))
}

/// The transaction as stored here (no platform query).
async fn local(app: &TestApp, tenant: i64, no: &str) -> Transaction {
    store(app).get_transaction(tenant, no.into()).await.unwrap().unwrap()
}

/// Waits up to `secs` for the stored transaction to reach `want`, and returns it; panics if
/// it does not.
async fn wait_local(app: &TestApp, tenant: i64, no: &str, want: &str, secs: u64) -> Transaction {
    eventually(secs, &format!("{no} stored as {want}"), async || {
        let tx = local(app, tenant, no).await;
        if tx.trade_state.as_str() == want { Ok(tx) } else { Err(format!("{tx:?}")) }
    })
    .await
}

/// The sandbox's notifications for `no`, once every one of them was answered.
async fn settled_notifications(app: &TestApp, no: &str, count: usize) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let list = app.get(&format!("/sandbox/control/notifications?out_trade_no={no}"), None).await.body["notifications"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let answered = list.iter().filter(|n| !n["attempts"].as_array().unwrap().is_empty()).count();
        if (list.len() == count && answered == count) || tokio::time::Instant::now() > deadline {
            return list;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn rfc3339(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

e2e!(duplicate_and_out_of_order_notifications_change_nothing, |app| {
    let (admin, tenant) = configured_tenant(app).await;
    order(app, &admin, tenant, "T_DUP_A", 100).await.expect(200);
    order(app, &admin, tenant, "T_DUP_B", 200).await.expect(200);
    app.post("/sandbox/control/notify-fail", json!({"times": 2}), None).await;

    // A's notification, then B's, then A's copy (out of order), then B's copy.
    app.post("/sandbox/control/pay", json!({"out_trade_no": "T_DUP_A", "result": "SUCCESS"}), None).await;
    let a = wait_local(app, tenant, "T_DUP_A", "SUCCESS", 5).await;
    app.post("/sandbox/control/pay", json!({"out_trade_no": "T_DUP_B", "result": "SUCCESS"}), None).await;
    let b = wait_local(app, tenant, "T_DUP_B", "SUCCESS", 5).await;
    assert!(a.transaction_id.is_some() && b.transaction_id.is_some());

    for no in ["T_DUP_A", "T_DUP_B"] {
        let sent = settled_notifications(app, no, 2).await;
        assert_eq!(sent.len(), 2, "{no}: sent twice: {sent:?}");
        assert_eq!(sent[0]["id"], sent[1]["id"], "the copy carries the same event id");
        assert_eq!(sent[1]["duplicate"], true);
        for n in &sent {
            assert_eq!(n["attempts"][0]["status"], 204, "a duplicate is acknowledged: {n}");
        }
    }
    // The copies changed nothing, not even the time of the last change.
    assert_eq!(local(app, tenant, "T_DUP_A").await, a);
    assert_eq!(local(app, tenant, "T_DUP_B").await, b);
});

e2e!(a_lost_notification_is_found_by_the_settle_job_and_an_unpaid_order_closed, vars = [("ATRIUM_JOB_POLL_MS", "100")], |app| {
    let (admin, tenant) = configured_tenant(app).await;
    // Five seconds leave the checks below well before the settle jobs are due.
    let expire = rfc3339(chrono::Utc::now() + chrono::Duration::seconds(5));
    for no in ["T_LOST_1", "T_UNPAID_1"] {
        app.post(
            "/api/v1/miniprogram/payment/unified-order",
            json!({"tenant_id": tenant, "description": "Tea", "amount": 300, "openid": "o_payer_1", "out_trade_no": no, "time_expire": expire}),
            Some(&admin),
        )
        .await
        .expect(200);
    }
    assert_eq!(app.post("/sandbox/control/notify-lose", json!({"times": 1}), None).await.status, 200);
    app.post("/sandbox/control/pay", json!({"out_trade_no": "T_LOST_1", "result": "SUCCESS"}), None).await;
    let sent = app.get("/sandbox/control/notifications?out_trade_no=T_LOST_1", None).await;
    assert_eq!(sent.body["notifications"][0]["lost"], true, "{}", sent.body);
    assert_eq!(sent.body["notifications"][0]["attempts"], json!([]), "never delivered: {}", sent.body);
    // Nothing told us: the notification was never sent, and the settle job is not due for
    // seconds yet (the sandbox sends a notification's first attempt before its pay returns).
    assert_eq!(local(app, tenant, "T_LOST_1").await.trade_state.as_str(), "NOTPAY", "nothing told us yet");

    // Past the expiry, the settle job queries: the paid one is paid, the other closed. (A
    // first run that meets a passing failure runs again a minute later: the waits allow it.)
    let paid = wait_local(app, tenant, "T_LOST_1", "SUCCESS", SETTLE_WAIT_SECS).await;
    assert!(paid.transaction_id.is_some() && paid.success_time.is_some(), "{paid:?}");
    wait_local(app, tenant, "T_UNPAID_1", "CLOSED", SETTLE_WAIT_SECS).await;
    assert_eq!(app.running.sandbox.as_ref().unwrap().trade_state(MCHID, "T_UNPAID_1").map(<&str>::from), Some("CLOSED"));
    assert_eq!(settle_runs(&[app], 2).await, [2], "each settle job ran once");
});

e2e!(reconciliation_finds_a_payment_whose_notification_was_lost_and_its_job_settles_it, vars = [("ATRIUM_JOB_POLL_MS", "100")], |app| {
    let (admin, tenant) = configured_tenant(app).await;
    order(app, &admin, tenant, "T_RECON_LOST", 500).await.expect(200);
    order(app, &admin, tenant, "T_RECON_OK", 700).await.expect(200);
    // Yesterday in China Standard Time, when both were paid; one notification was lost.
    let yesterday = chrono::Utc::now() - chrono::Duration::days(1);
    let date = (yesterday + chrono::Duration::hours(8)).date_naive().to_string();
    app.post("/sandbox/control/pay", json!({"out_trade_no": "T_RECON_OK", "result": "SUCCESS", "paid_at": rfc3339(yesterday)}), None).await;
    wait_local(app, tenant, "T_RECON_OK", "SUCCESS", 10).await;
    app.post("/sandbox/control/notify-lose", json!({"times": 1}), None).await;
    app.post("/sandbox/control/pay", json!({"out_trade_no": "T_RECON_LOST", "result": "SUCCESS", "paid_at": rfc3339(yesterday)}), None)
        .await;

    let path = format!("/api/v1/miniprogram/payment/reconciliation?date={date}&tenant_id={tenant}");
    let r = app.get(&path, Some(&admin)).await;
    r.expect(200);
    assert_eq!(r.data()["bill_lines"], 2, "{}", r.body);
    assert_eq!(r.data()["matched"], 1);
    assert_eq!(r.data()["missing_locally"][0]["out_trade_no"], "T_RECON_LOST", "{}", r.body);
    assert_eq!(r.data()["missing_locally"][0]["amount"], 500);
    assert_eq!(local(app, tenant, "T_RECON_LOST").await.trade_state.as_str(), "NOTPAY", "the route only compares");

    // The morning job settles what the bill proves.
    let jobs = atrium_e2e::DbJobStore::new(app.running.db.clone());
    let queued = jobs
        .enqueue(NewJob {
            kind: "payment.reconcile".into(),
            tenant_id: Some(tenant),
            payload: json!({"date": date}),
            run_at: chrono::Utc::now(),
            dedupe_key: Some(format!("{tenant}:{date}")),
        })
        .await
        .unwrap();
    assert!(queued.is_some());
    let settled = wait_local(app, tenant, "T_RECON_LOST", "SUCCESS", 15).await;
    assert_eq!(settled.trade_state.as_str(), "SUCCESS");
    let r = app.get(&path, Some(&admin)).await;
    assert_eq!((r.data()["matched"].as_i64(), r.data()["missing_locally"].as_array().map(Vec::len)), (Some(2), Some(0)), "{}", r.body);
});

/// The value of a counter series in a metrics text (0 when absent).
fn counter(metrics: &str, series: &str) -> u64 {
    metrics.lines().find_map(|l| l.strip_prefix(series).and_then(|v| v.trim().parse().ok())).unwrap_or(0)
}

const SETTLE_TRANSACTION: &str = "payment.settle_transaction";
/// How long a test waits for a settle job's work: its run when due, or the run a minute later
/// when the first one met a passing failure (the job's first back-off step).
const SETTLE_WAIT_SECS: u64 = 80;

/// The settle-job runs each of `instances` (sharing one database) counted, once no settle job
/// is left in the queue and they add up to at least `want`. A runner counts a run after the
/// job returns and before it leaves the queue, so an empty queue means the counts are final.
async fn settle_runs(instances: &[&TestApp], want: u64) -> Vec<u64> {
    let series = format!("atrium_jobs_completed_total{{kind=\"{SETTLE_TRANSACTION}\"}}");
    let jobs = atrium_e2e::DbJobStore::new(instances[0].running.db.clone());
    eventually(30, &format!("{want} settle jobs run and none queued"), async || {
        let runs: Vec<u64> = instances.iter().map(|i| counter(&i.running.metrics.render(), &series)).collect();
        let queued =
            jobs.depth(SETTLE_TRANSACTION.into(), chrono::Utc::now() + chrono::Duration::days(1)).await.map_err(|e| e.to_string())?;
        if queued == 0 && runs.iter().sum::<u64>() >= want { Ok(runs) } else { Err(format!("runs {runs:?}, {queued} queued")) }
    })
    .await
}

e2e!(two_instances_run_each_settle_job_exactly_once, vars = [("ATRIUM_JOB_POLL_MS", "20")], |app| {
    // The second instance reaches the first one's sandbox (each instance mounts its own).
    let second = app.second_instance_with(&[("ATRIUM_JOB_POLL_MS", "20"), ("ATRIUM_PUBLIC_URL", &app.base)]).await;
    let (admin, tenant) = configured_tenant(app).await;
    let expire = rfc3339(chrono::Utc::now() + chrono::Duration::seconds(4));
    let numbers: Vec<String> = (0..30).map(|i| format!("T_TWO_{i:03}")).collect();
    for no in &numbers {
        app.post(
            "/api/v1/miniprogram/payment/unified-order",
            json!({"tenant_id": tenant, "description": "Cake", "amount": 100, "openid": "o_payer_1", "out_trade_no": no, "time_expire": expire}),
            Some(&admin),
        )
        .await
        .expect(200);
    }
    for no in &numbers {
        wait_local(app, tenant, no, "CLOSED", SETTLE_WAIT_SECS).await;
    }
    let runs = settle_runs(&[app, &second], 30).await;
    let (one, two) = (runs[0], runs[1]);
    assert_eq!(one + two, 30, "each job ran once: {one} on the first instance, {two} on the second");
    assert!(one > 0 && two > 0, "both instances claimed work: {one} on the first instance, {two} on the second");
    // And the pay platform was asked to close each order once.
    let closes: usize = numbers
        .iter()
        .map(|no| app.running.sandbox.as_ref().unwrap().pay_calls(&format!("POST /v3/pay/transactions/out-trade-no/{no}/close")))
        .sum();
    assert_eq!(closes, 30);
    second.stop().await;
});

e2e!(signed_notification_requests_from_the_sandbox_are_accepted_and_change_nothing_more, |app| {
    let (admin, tenant) = configured_tenant(app).await;
    order(app, &admin, tenant, "T_NR_1", 100).await.expect(200);
    app.post("/sandbox/control/pay", json!({"out_trade_no": "T_NR_1", "result": "SUCCESS"}), None).await;
    let paid = wait_local(app, tenant, "T_NR_1", "SUCCESS", 5).await;
    let list = app.post("/sandbox/control/notify-requests", json!({"out_trade_no": "T_NR_1", "count": 3}), None).await;
    assert_eq!(list.status, 200, "{}", list.body);
    let list = list.body["notifications"].as_array().unwrap().clone();
    assert_eq!(list.len(), 3);
    let ids: std::collections::HashSet<String> = list.iter().map(|n| serde_json_id(n["body"].as_str().unwrap())).collect();
    assert_eq!(ids.len(), 3, "each has its own event id");
    for n in list.iter().chain(list.first()) {
        let req = app
            .client
            .post(n["url"].as_str().unwrap())
            .header("content-type", "application/json")
            .header("Wechatpay-Timestamp", n["timestamp"].as_str().unwrap())
            .header("Wechatpay-Nonce", n["nonce"].as_str().unwrap())
            .header("Wechatpay-Signature", n["signature"].as_str().unwrap())
            .header("Wechatpay-Serial", n["serial"].as_str().unwrap())
            .body(n["body"].as_str().unwrap().to_owned());
        assert_eq!(req.send().await.unwrap().status().as_u16(), 204);
    }
    assert_eq!(local(app, tenant, "T_NR_1").await, paid, "a paid transaction stays as it was");
    let unpaid = app.post("/sandbox/control/notify-requests", json!({"out_trade_no": "T_NOPE", "count": 1}), None).await;
    assert_eq!(unpaid.status, 400);
});

fn serde_json_id(body: &str) -> String {
    atrium_e2e::serde_json::from_str::<Value>(body).unwrap()["id"].as_str().unwrap().to_owned()
}
