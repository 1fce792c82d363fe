//! Orders over HTTP on SQLite and PostgreSQL, paid through the sandbox pay platform or
//! offline: the lifecycle, refunds, expiry, the scope matrix, idempotency and concurrency.
#![allow(clippy::unwrap_used)]
use atrium_e2e::pay::configure_merchant;
use atrium_e2e::serde_json::{Value, json};
use atrium_e2e::{Org, TestApp, e2e, join_all};
use std::time::Duration;

const MCHID: &str = "1900000011";
const OPENID: &str = "o_orders_payer";

/// An org whose tenant one is paid into a sandbox merchant.
async fn shop(app: &TestApp) -> Org {
    let org = app.org().await;
    configure_merchant(app, &org.admin, org.t1, MCHID).await;
    org
}

async fn new_order(app: &TestApp, token: &str, body: Value) -> Value {
    let r = app.post("/api/v1/orders", body, Some(token)).await;
    r.expect(200);
    r.data().clone()
}

async fn order(app: &TestApp, token: &str, id: i64) -> Value {
    let r = app.get(&format!("/api/v1/orders/{id}"), Some(token)).await;
    r.expect(200);
    r.data().clone()
}

/// Waits up to `secs` for the order to satisfy `done`.
async fn wait_order(app: &TestApp, token: &str, id: i64, secs: u64, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let o = order(app, token, id).await;
        if done(&o) || tokio::time::Instant::now() > deadline {
            return o;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Creates, pays through the sandbox and waits for `paid`.
async fn paid_order(app: &TestApp, token: &str, amount: i64) -> Value {
    let o = new_order(app, token, json!({"subject": "Paid order", "amount": amount, "openid": OPENID})).await;
    let id = o["id"].as_i64().unwrap();
    let pay = app.post(&format!("/api/v1/orders/{id}/pay"), json!({"method": "wechat_jsapi"}), Some(token)).await;
    pay.expect(200);
    let paid = app.post("/sandbox/control/pay", json!({"pay_params": pay.data()["pay_params"], "result": "SUCCESS"}), None).await;
    assert_eq!(paid.status, 200, "{}", paid.body);
    let o = wait_order(app, token, id, 10, |o| o["status"] == "paid").await;
    assert_eq!(o["status"], "paid", "{o}");
    o
}

e2e!(an_order_is_paid_through_the_platform_and_refunded_in_two_parts, |app| {
    let org = shop(app).await;
    let t = &org.t1_admin;
    let created = new_order(
        app,
        t,
        json!({"subject": "Coffee beans", "items": [{"name": "Beans 500 g", "quantity": 2, "unit_price": 4400}, {"name": "Filter", "quantity": 1, "unit_price": 1200}], "openid": OPENID}),
    )
    .await;
    assert_eq!((created["status"].as_str(), created["amount"].as_i64()), (Some("pending"), Some(10_000)));
    assert_eq!(created["tenant_id"], org.t1);
    let id = created["id"].as_i64().unwrap();

    let pay = app.post(&format!("/api/v1/orders/{id}/pay"), json!({"method": "wechat_jsapi"}), Some(t)).await;
    pay.expect(200);
    assert_eq!(pay.data()["order"]["status"], "paying");
    let params = pay.data()["pay_params"].clone();
    assert_eq!(params["signType"], "RSA");
    let again = app.post(&format!("/api/v1/orders/{id}/pay"), json!({"method": "wechat_jsapi"}), Some(t)).await;
    again.expect(200);
    assert_eq!(again.data()["pay_params"]["package"], params["package"], "paying again returns the same prepay");

    let paid = app.post("/sandbox/control/pay", json!({"pay_params": params, "result": "SUCCESS"}), None).await;
    assert_eq!(paid.status, 200, "{}", paid.body);
    let o = wait_order(app, t, id, 10, |o| o["status"] == "paid").await;
    assert_eq!(o["status"], "paid", "{o}");
    assert_eq!(o["paid_amount"], 10_000);
    assert!(o["payment"]["transaction_id"].is_string() && o["payment"]["paid_at"].is_string(), "{o}");
    assert_eq!(o["payment"]["method"], "wechat_jsapi");

    // A refund above what was paid depends on the order's state: a 409 naming the amount.
    let over = app.post(&format!("/api/v1/orders/{id}/refund"), json!({"amount": 10_001}), Some(t)).await;
    over.expect_reason(409, "refund_exceeds_paid");
    assert_eq!(over.body["data"]["errors"][0]["field"], "amount", "{}", over.body);
    // Two partial refunds, each settled by the platform.
    let mut refunded = 0;
    for (amount, status) in [(3_000, "partially_refunded"), (7_000, "refunded")] {
        let r = app.post(&format!("/api/v1/orders/{id}/refund"), json!({"amount": amount, "reason": "Returned"}), Some(t)).await;
        r.expect(200);
        assert_eq!(r.data()["refund"]["status"], "processing", "{}", r.body);
        let no = r.data()["refund"]["out_refund_no"].as_str().unwrap().to_owned();
        let settled = app.post("/sandbox/control/refund", json!({"out_refund_no": no, "result": "SUCCESS"}), None).await;
        assert_eq!(settled.status, 200, "{}", settled.body);
        refunded += amount;
        let o = wait_order(app, t, id, 10, |o| o["status"] == status).await;
        assert_eq!((o["status"].as_str(), o["refunded_amount"].as_i64()), (Some(status), Some(refunded)), "{o}");
    }
    // The order and a page of orders show both refunds as the ledger holds them: who asked,
    // when each settled.
    let me = app.get("/api/v1/auth/me", Some(t)).await;
    me.expect(200);
    let one = app.get(&format!("/api/v1/orders/{id}"), Some(t)).await;
    one.expect(200);
    let shown = one.data()["refunds"].as_array().unwrap().clone();
    assert_eq!(shown.len(), 2, "{}", one.body);
    for r in &shown {
        assert_eq!((&r["status"], &r["requested_by"]), (&json!("succeeded"), &me.data()["user"]["id"]), "{r}");
        assert!(r["settled_at"].is_string(), "{r}");
    }
    let page = app.get("/api/v1/orders?page_size=100", Some(t)).await;
    page.expect(200);
    let listed = page.data()["items"].as_array().unwrap().iter().find(|o| o["id"] == id).cloned().unwrap();
    assert_eq!(listed["refunds"], json!(shown), "a page shows the same refunds");
    // Nothing is left to refund; an unpaid order cannot be refunded.
    app.post(&format!("/api/v1/orders/{id}/refund"), json!({"amount": 1}), Some(t)).await.expect_reason(409, "state");
    let pending = new_order(app, t, json!({"subject": "Unpaid", "amount": 500})).await;
    app.post(&format!("/api/v1/orders/{}/refund", pending["id"]), json!({"amount": 1}), Some(t)).await.expect_reason(409, "state");
    // The trail has each step.
    let audit = app.get(&format!("/api/v1/audit-logs?target_type=order&target_id={id}&page_size=50"), Some(&org.admin)).await;
    audit.expect(200);
    let actions: Vec<&str> = audit.data()["items"].as_array().unwrap().iter().filter_map(|a| a["action"].as_str()).collect();
    for want in ["order.create", "order.pay", "order.paid", "order.refund", "order.refund_settled"] {
        assert!(actions.contains(&want), "no {want} in {actions:?}");
    }
});

e2e!(an_order_paid_offline_records_who_and_refunds_at_once, |app| {
    let org = app.org().await;
    let t = &org.t1_admin;
    let o = new_order(app, t, json!({"subject": "Invoice 17", "amount": 25_000})).await;
    let id = o["id"].as_i64().unwrap();
    let pay = app.post(&format!("/api/v1/orders/{id}/pay"), json!({"method": "offline", "reference": "Bank transfer 8841"}), Some(t)).await;
    pay.expect(200);
    let o = &pay.data()["order"];
    assert_eq!((o["status"].as_str(), o["paid_amount"].as_i64()), (Some("paid"), Some(25_000)));
    assert_eq!(o["payment"]["method"], "offline");
    assert_eq!(o["payment"]["reference"], "Bank transfer 8841");
    assert_eq!(o["payment"]["paid_by"], org.t1_admin_id);
    assert!(pay.data()["pay_params"].is_null());
    // Paying twice is a 409.
    app.post(&format!("/api/v1/orders/{id}/pay"), json!({"method": "offline", "reference": "again"}), Some(t)).await.expect(409);

    let r = app.post(&format!("/api/v1/orders/{id}/refund"), json!({"amount": 25_000}), Some(t)).await;
    r.expect(200);
    assert_eq!(r.data()["refund"]["status"], "succeeded");
    assert_eq!((r.data()["order"]["status"].as_str(), r.data()["order"]["refunded_amount"].as_i64()), (Some("refunded"), Some(25_000)));
});

e2e!(bad_orders_are_refused_and_store_nothing, |app| {
    let org = app.org().await;
    let t = &org.t1_admin;
    let cases = [
        (json!({"subject": "x", "amount": 0}), "amount"),
        (json!({"subject": "x", "amount": 100, "items": [{"name": "a", "quantity": 1, "unit_price": 50}]}), "amount"),
        (json!({"subject": "", "amount": 100}), "subject"),
        (json!({"subject": "x", "amount": 100, "expires_in": 5}), "expires_in"),
        (json!({"subject": "x", "items": [{"name": "a", "quantity": 0, "unit_price": 50}]}), "items"),
    ];
    for (body, field) in cases {
        let r = app.post("/api/v1/orders", body.clone(), Some(t)).await;
        assert_eq!(r.status, 400, "{body}: {}", r.body);
        let errors = r.body["data"]["errors"].as_array().cloned().unwrap_or_default();
        assert!(errors.iter().any(|e| e["field"].as_str().is_some_and(|f| f.starts_with(field))), "{body}: {}", r.body);
    }
    let list = app.get("/api/v1/orders", Some(t)).await;
    assert_eq!(list.data()["total"], 0, "{}", list.body);
    // Paying online without an openid, or without payments configured, is refused too.
    let o = new_order(app, t, json!({"subject": "No openid", "amount": 100})).await;
    let r = app.post(&format!("/api/v1/orders/{}/pay", o["id"]), json!({"method": "wechat_jsapi"}), Some(t)).await;
    // Without an openid on the order or in the request: the order's state, a 409 naming it.
    r.expect_reason(409, "payer_openid_missing");
    assert_eq!(r.body["data"]["errors"][0]["field"], "openid", "{}", r.body);
    let r = app.post(&format!("/api/v1/orders/{}/pay", o["id"]), json!({"method": "wechat_jsapi", "openid": OPENID}), Some(t)).await;
    // The order is there to see: what stops it is the tenant's state, a 409, not a 404.
    r.expect_reason(409, "payments_not_ready");
    assert!(r.body["message"].as_str().unwrap().contains("not configured"), "no payment configuration: {}", r.body);
    assert_eq!(order(app, t, o["id"].as_i64().unwrap()).await["status"], "pending");
});

e2e!(orders_are_scoped_like_every_record, |app| {
    let org = shop(app).await;
    let o = new_order(app, &org.t1_admin, json!({"subject": "Mine", "amount": 100, "openid": OPENID})).await;
    let id = o["id"].as_i64().unwrap();
    let path = format!("/api/v1/orders/{id}");
    // Its tenant, its partner and the platform see it.
    for token in [&org.t1_admin, &org.p1_admin, &org.admin] {
        app.get(&path, Some(token)).await.expect(200);
    }
    // Another tenant and a foreign partner do not, and cannot pay or refund it.
    for token in [&org.t2_admin, &org.p2_admin] {
        app.get(&path, Some(token)).await.expect(404);
        app.post(&format!("{path}/pay"), json!({"method": "offline", "reference": "x"}), Some(token)).await.expect(404);
        app.post(&format!("{path}/refund"), json!({"amount": 1}), Some(token)).await.expect(404);
        let list = app.get("/api/v1/orders", Some(token)).await;
        assert!(list.data()["items"].as_array().unwrap().iter().all(|o| o["id"] != id), "{}", list.body);
    }
    // A foreign partner cannot create one for that tenant; the platform must name a tenant.
    app.post("/api/v1/orders", json!({"tenant_id": org.t1, "subject": "x", "amount": 1}), Some(&org.p2_admin))
        .await
        .expect_no_such("tenant_id");
    app.post("/api/v1/orders", json!({"subject": "x", "amount": 1}), Some(&org.admin)).await.expect_field_error("tenant_id");
    let theirs = new_order(app, &org.p1_admin, json!({"tenant_id": org.t1, "subject": "By partner", "amount": 1})).await;
    assert_eq!(theirs["tenant_id"], org.t1);
    // Filters: the platform lists one tenant's, by status and keyword.
    let list = app.get(&format!("/api/v1/orders?tenant_id={}&status=pending&keyword=partner", org.t1), Some(&org.admin)).await;
    list.expect(200);
    assert_eq!(list.data()["total"], 1, "{}", list.body);
    assert_eq!(list.data()["items"][0]["subject"], "By partner");
});

e2e!(ten_concurrent_creates_with_one_key_make_one_order, |app| {
    let org = app.org().await;
    let body = json!({"subject": "Once", "amount": 700});
    let answers = join_all((0..10).map(|_| app.post_with_key("/api/v1/orders", "create-once-1", body.clone(), &org.t1_admin))).await;
    let mut ids = std::collections::HashSet::new();
    for a in &answers {
        match a.status {
            200 => {
                ids.insert(a.data()["id"].as_i64().unwrap());
            }
            409 => assert!(a.body["message"].as_str().unwrap().contains("in progress"), "{}", a.body),
            other => panic!("unexpected {other}: {}", a.body),
        }
    }
    assert_eq!(ids.len(), 1, "{answers:?}");
    let list = app.get("/api/v1/orders", Some(&org.t1_admin)).await;
    assert_eq!(list.data()["total"], 1);
    // A retry replays; another body with the key is a 409.
    let replay = app.post_with_key("/api/v1/orders", "create-once-1", body, &org.t1_admin).await;
    replay.expect(200);
    assert_eq!(replay.header("Idempotent-Replayed"), Some("true"));
    app.post_with_key("/api/v1/orders", "create-once-1", json!({"subject": "Other", "amount": 700}), &org.t1_admin).await.expect(409);
    // Nothing is stored for a refused request: the key is free again.
    app.post_with_key("/api/v1/orders", "create-once-2", json!({"subject": "x", "amount": 0}), &org.t1_admin).await.expect(400);
    app.post_with_key("/api/v1/orders", "create-once-2", json!({"subject": "x", "amount": 5}), &org.t1_admin).await.expect(200);
});

e2e!(fifty_concurrent_refunds_never_exceed_what_was_paid, |app| {
    let org = shop(app).await;
    let t = &org.t1_admin;
    let o = paid_order(app, t, 100).await;
    let id = o["id"].as_i64().unwrap();
    let path = format!("/api/v1/orders/{id}/refund");
    let keys: Vec<String> = (0..50).map(|i| format!("refund-{i}")).collect();
    let answers = join_all(keys.iter().map(|k| app.post_with_key(&path, k, json!({"amount": 3}), t))).await;
    let accepted: i64 = answers.iter().filter(|a| a.status == 200).map(|a| a.data()["refund"]["amount"].as_i64().unwrap()).sum();
    for a in answers.iter().filter(|a| a.status != 200) {
        assert_eq!(a.status, 409, "{}", a.body);
    }
    assert_eq!(accepted, 99, "33 refunds of 3 fen fit in 100");
    let o = order(app, t, id).await;
    let held: i64 = o["refunds"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["status"] == "processing" || r["status"] == "succeeded")
        .map(|r| r["amount"].as_i64().unwrap())
        .sum();
    assert_eq!(held, accepted, "the accepted refunds are exactly what the order shows: {o}");
    // Only the accepted ones reached the pay platform.
    assert_eq!(app.running.sandbox.as_ref().unwrap().pay_calls("POST /v3/refund/domestic/refunds"), 33);
});

// Without job runners the order's projection is not told of the payment by the ledger's event;
// a refund asked a moment after the payment still finds the order paid, from the ledger.
e2e!(an_order_paid_a_moment_ago_is_refunded_before_its_projection_catches_up, vars = [("ATRIUM_JOBS", "false")], |app| {
    let org = shop(app).await;
    let t = &org.t1_admin;
    let id = new_order(app, t, json!({"subject": "Quick", "amount": 5_000, "openid": OPENID})).await["id"].as_i64().unwrap();
    let pay = app.post(&format!("/api/v1/orders/{id}/pay"), json!({"method": "wechat_jsapi"}), Some(t)).await;
    pay.expect(200);
    let paid = app.post("/sandbox/control/pay", json!({"pay_params": pay.data()["pay_params"], "result": "SUCCESS"}), None).await;
    assert_eq!(paid.status, 200, "{}", paid.body);
    assert_eq!(order(app, t, id).await["status"], "paying", "the projection has not caught up (no job runs)");

    let refund = app.post(&format!("/api/v1/orders/{id}/refund"), json!({"amount": 1_000}), Some(t)).await;

    refund.expect(200);
    let o = &refund.data()["order"];
    assert_eq!((o["status"].as_str(), o["paid_amount"].as_i64()), (Some("paid"), Some(5_000)), "{o}");
    assert_eq!(refund.data()["refund"]["status"], "processing", "{}", refund.body);
});

// The sweep runs every second here (a minute by default) and orders may expire after one.
e2e!(
    expired_orders_are_closed_with_their_platform_orders,
    vars = [("ATRIUM_JOB_POLL_MS", "100"), ("ATRIUM_ORDER_SWEEP_SECS", "1"), ("ATRIUM_ORDER_MIN_EXPIRES_IN", "1")],
    |app| {
        let org = shop(app).await;
        let t = &org.t1_admin;
        let fresh = new_order(app, t, json!({"subject": "Fresh", "amount": 300, "expires_in": 3600})).await;
        let pending = new_order(app, t, json!({"subject": "Forgotten", "amount": 100, "expires_in": 2})).await;
        let paying = new_order(app, t, json!({"subject": "Abandoned", "amount": 200, "openid": OPENID, "expires_in": 2})).await;
        let pay = app.post(&format!("/api/v1/orders/{}/pay", paying["id"]), json!({"method": "wechat_jsapi"}), Some(t)).await;
        pay.expect(200);
        for o in [&pending, &paying] {
            let closed = wait_order(app, t, o["id"].as_i64().unwrap(), 30, |o| o["status"] == "closed").await;
            assert_eq!(closed["status"], "closed", "{closed}");
        }
        let no = paying["order_no"].as_str().unwrap();
        assert_eq!(app.running.sandbox.as_ref().unwrap().trade_state(MCHID, no).map(<&str>::from), Some("CLOSED"));
        // The sweeps that closed them left an order not yet due alone.
        assert_eq!(order(app, t, fresh["id"].as_i64().unwrap()).await["status"], "pending");
        // A closed order cannot be paid.
        app.post(&format!("/api/v1/orders/{}/pay", pending["id"]), json!({"method": "offline", "reference": "late"}), Some(t))
            .await
            .expect(409);
    }
);

e2e!(one_key_holds_across_two_instances, |app| {
    let second = app.second_instance().await;
    let org = app.org().await;
    let body = json!({"subject": "Across", "amount": 900});
    let answers = join_all((0..10).map(|i| {
        let target = if i % 2 == 0 { app } else { &second };
        target.post_with_key("/api/v1/orders", "across-1", body.clone(), &org.t1_admin)
    }))
    .await;
    let ids: std::collections::HashSet<i64> =
        answers.iter().filter(|a| a.status == 200).map(|a| a.data()["id"].as_i64().unwrap()).collect();
    assert!(answers.iter().all(|a| a.status == 200 || a.status == 409), "{answers:?}");
    assert_eq!(ids.len(), 1, "{answers:?}");
    assert_eq!(app.get("/api/v1/orders", Some(&org.t1_admin)).await.data()["total"], 1);
    second.stop().await;
});
