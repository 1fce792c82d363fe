//! One ledger, over HTTP on SQLite and PostgreSQL: orders and the payment routes move the same
//! money, so neither can move it behind the other's back. Each of the first five tests is a
//! finding of the penetration and fault tests that once got through:
//! 1. an order's number taken by the payment routes for a 1-fen transaction;
//! 2. an order's transaction refunded through the payment routes behind the order;
//! 3. an order paid offline and on the platform at once;
//! 4. a refund whose platform answer was lost, sent again as a second refund on retry;
//! 5. a signed report of 1 fen paid taken as the whole order paid;
//! 6. an order's offline number taken by the payment routes, so the order could never be paid
//!    offline.
#![allow(clippy::unwrap_used)]
use atrium_e2e::pay::{new_order, order, paid_order, pay_online, platform_refunds, shop, wait_order};
use atrium_e2e::serde_json::{Value, json};
use atrium_e2e::{e2e, join_all};

const MCHID: &str = "1900000031";
const OPENID: &str = "o_ledger_payer";

fn error_text(body: &Value) -> String {
    body.to_string()
}

e2e!(an_orders_number_cannot_be_taken_by_the_payment_routes, |app| {
    let org = shop(app, MCHID).await;
    let t = &org.t1_admin;
    let pending = new_order(app, t, 10_000, OPENID).await;
    let paying = new_order(app, t, 10_000, OPENID).await;
    pay_online(app, t, paying["id"].as_i64().unwrap()).await;

    for o in [&pending, &paying] {
        let no = o["order_no"].as_str().unwrap();
        let r = app
            .post(
                "/api/v1/miniprogram/payment/unified-order",
                json!({"tenant_id": org.t1, "description": "Cheap", "amount": 1, "openid": OPENID, "out_trade_no": no}),
                Some(&org.admin),
            )
            .await;
        r.expect(409);
        assert!(error_text(&r.body).contains(&format!("order {}", o["id"])), "the answer names the order: {}", r.body);
    }
    // Nothing was placed under the pending order's number, and it still costs what it costs.
    let after = order(app, t, pending["id"].as_i64().unwrap()).await;
    assert_eq!(
        (after["status"].as_str(), after["amount"].as_i64(), after["paid_amount"].as_i64()),
        (Some("pending"), Some(10_000), Some(0))
    );
    let q = app
        .post("/api/v1/miniprogram/payment/query", json!({"tenant_id": org.t1, "out_trade_no": pending["order_no"]}), Some(&org.admin))
        .await;
    q.expect(404);
});

e2e!(an_orders_offline_number_cannot_be_taken_by_the_payment_routes, |app| {
    let org = shop(app, MCHID).await;
    let t = &org.t1_admin;
    let o = new_order(app, t, 10_000, OPENID).await;
    let (id, no) = (o["id"].as_i64().unwrap(), o["order_no"].as_str().unwrap().to_owned());
    // The numbers an offline payment was once given, and is given now: the first is any
    // transaction's of the payment routes (placed and closed), the second none of theirs.
    let squat = format!("{no}-offline");
    let placed = app
        .post(
            "/api/v1/miniprogram/payment/unified-order",
            json!({"tenant_id": org.t1, "description": "Squat", "amount": 1, "openid": OPENID, "out_trade_no": squat}),
            Some(&org.admin),
        )
        .await;
    placed.expect(200);
    // The payment route's transaction is in the tenant's audit trail.
    let trail = app.get("/api/v1/audit-logs?action=payment.unified_order", Some(&org.admin)).await;
    trail.expect(200);
    let placed_entry =
        trail.data()["items"].as_array().unwrap().iter().any(|e| e["after"]["out_trade_no"] == squat.as_str() && e["tenant_id"] == org.t1);
    assert!(placed_entry, "{}", trail.body);
    app.post("/api/v1/miniprogram/payment/close", json!({"tenant_id": org.t1, "out_trade_no": squat}), Some(&org.admin)).await.expect(200);
    let taken = app
        .post(
            "/api/v1/miniprogram/payment/unified-order",
            json!({"tenant_id": org.t1, "description": "Squat", "amount": 1, "openid": OPENID, "out_trade_no": format!("{no}:offline")}),
            Some(&org.admin),
        )
        .await;
    taken.expect_field_error("out_trade_no");
    // The order is paid offline all the same, and refunds through the ledger.
    let pay = app.post(&format!("/api/v1/orders/{id}/pay"), json!({"method": "offline", "reference": "Bank 77"}), Some(t)).await;
    pay.expect(200);
    let after = order(app, t, id).await;
    assert_eq!((after["status"].as_str(), after["paid_amount"].as_i64()), (Some("paid"), Some(10_000)), "{after}");
    // Neither number names the order's payment to the payment routes.
    let q = app.post("/api/v1/miniprogram/payment/query", json!({"tenant_id": org.t1, "out_trade_no": squat}), Some(&org.admin)).await;
    q.expect(200);
    assert_eq!((q.data()["amount"].as_i64(), q.data()["trade_state"].as_str()), (Some(1), Some("CLOSED")), "{}", q.body);
});

e2e!(an_orders_transaction_is_refunded_and_closed_through_the_order_only, |app| {
    let org = shop(app, MCHID).await;
    let t = &org.t1_admin;
    let o = paid_order(app, t, 10_000, OPENID).await;
    let (id, no) = (o["id"].as_i64().unwrap(), o["order_no"].as_str().unwrap().to_owned());

    let refund = app
        .post(
            "/api/v1/miniprogram/payment/refund",
            json!({"tenant_id": org.t1, "out_trade_no": no, "amount": 10_000, "out_refund_no": "RBEHIND1"}),
            Some(&org.admin),
        )
        .await;
    refund.expect(409);
    assert!(error_text(&refund.body).contains(&format!("order {id}")), "{}", refund.body);
    let close = app.post("/api/v1/miniprogram/payment/close", json!({"tenant_id": org.t1, "out_trade_no": no}), Some(&org.admin)).await;
    close.expect(409);
    assert!(platform_refunds(app, &no).await.is_empty(), "no money went back behind the order");

    // The transaction is visible as the order's, and the order's own refund takes it all.
    let q = app.post("/api/v1/miniprogram/payment/query", json!({"tenant_id": org.t1, "out_trade_no": no}), Some(&org.admin)).await;
    q.expect(200);
    assert_eq!((q.data()["order_id"].as_i64(), q.data()["trade_state"].as_str()), (Some(id), Some("SUCCESS")));
    let r = app.post(&format!("/api/v1/orders/{id}/refund"), json!({"amount": 10_000}), Some(t)).await;
    r.expect(200);
    let out_refund_no = r.data()["refund"]["out_refund_no"].as_str().unwrap().to_owned();
    assert_eq!(app.post("/sandbox/control/refund", json!({"out_refund_no": out_refund_no, "result": "SUCCESS"}), None).await.status, 200);
    let o = wait_order(app, t, id, |o| o["status"] == "refunded").await;
    assert_eq!((o["status"].as_str(), o["refunded_amount"].as_i64()), (Some("refunded"), Some(10_000)), "{o}");
    assert_eq!(platform_refunds(app, &no).await.len(), 1);
});

e2e!(offline_and_platform_payment_of_one_order_exclude_each_other, |app| {
    let org = shop(app, MCHID).await;
    let t = &org.t1_admin;
    for round in 0..8 {
        let o = new_order(app, t, 10_000, OPENID).await;
        let id = o["id"].as_i64().unwrap();
        let path = format!("/api/v1/orders/{id}/pay");
        let reference = format!("BANK-{round}");
        let (online, offline) = tokio::join!(
            app.post(&path, json!({"method": "wechat_jsapi"}), Some(t)),
            app.post(&path, json!({"method": "offline", "reference": reference}), Some(t)),
        );
        assert!([200, 409].contains(&online.status) && [200, 409].contains(&offline.status), "{} / {}", online.body, offline.body);
        assert!(online.status == 200 || offline.status == 200, "one of them wins: {} / {}", online.body, offline.body);
        if online.status == 200 {
            // The payer holds live pay params: paying them must be impossible if the order was
            // paid offline, and is the order's only payment otherwise.
            let paid =
                app.post("/sandbox/control/pay", json!({"pay_params": online.data()["pay_params"], "result": "SUCCESS"}), None).await;
            if offline.status == 200 {
                assert_ne!(paid.status, 200, "round {round}: paid offline, yet the platform order could still be paid: {}", paid.body);
            } else {
                assert_eq!(paid.status, 200, "{}", paid.body);
            }
        }
        let method = if offline.status == 200 { "offline" } else { "wechat_jsapi" };
        let o = wait_order(app, t, id, |o| o["status"] == "paid").await;
        assert_eq!((o["status"].as_str(), o["payment"]["method"].as_str()), (Some("paid"), Some(method)), "round {round}: {o}");
        assert_eq!(o["paid_amount"], 10_000);
    }
});

e2e!(a_refund_whose_answer_was_lost_is_asked_again_under_its_number_on_retry, |app| {
    let org = shop(app, MCHID).await;
    let t = &org.t1_admin;
    let o = paid_order(app, t, 10_000, OPENID).await;
    let (id, no) = (o["id"].as_i64().unwrap(), o["order_no"].as_str().unwrap().to_owned());
    // The platform refunds, and every answer (the client's retries included) is lost.
    let lose = json!({"path": "/v3/refund/domestic/refunds", "status": 500, "times": 3, "after": true});
    assert_eq!(app.post("/sandbox/control/pay-fail", lose, None).await.status, 200);

    let path = format!("/api/v1/orders/{id}/refund");
    let first = app.post_with_key(&path, "refund-lost-1", json!({"amount": 4_000}), t).await;
    first.expect(502);
    assert_eq!(platform_refunds(app, &no).await.len(), 1, "the platform did refund");

    let retry = app.post_with_key(&path, "refund-lost-1", json!({"amount": 4_000}), t).await;
    retry.expect(200);
    assert_eq!(retry.header("idempotent-replayed"), None, "the retry ran again rather than replaying the 502");
    let on_platform = platform_refunds(app, &no).await;
    assert_eq!(on_platform.len(), 1, "no second refund went out: {on_platform:?}");
    assert_eq!(retry.data()["refund"]["out_refund_no"], on_platform[0]["out_refund_no"]);
    assert_eq!(retry.data()["order"]["refunds"].as_array().unwrap().len(), 1);

    // Another body under the key is refused; a third try replays the answer.
    app.post_with_key(&path, "refund-lost-1", json!({"amount": 5_000}), t).await.expect(409);
    let third = app.post_with_key(&path, "refund-lost-1", json!({"amount": 4_000}), t).await;
    third.expect(200);
    assert_eq!(third.header("idempotent-replayed"), Some("true"));
    assert_eq!(platform_refunds(app, &no).await.len(), 1);
});

e2e!(a_payment_of_another_amount_is_a_discrepancy_never_paid, |app| {
    let org = shop(app, MCHID).await;
    let t = &org.t1_admin;
    let o = new_order(app, t, 10_000, OPENID).await;
    let (id, no) = (o["id"].as_i64().unwrap(), o["order_no"].as_str().unwrap().to_owned());
    let params = pay_online(app, t, id).await;

    // The platform reports, correctly signed, 1 fen paid for the 10,000-fen order.
    let paid = app.post("/sandbox/control/pay", json!({"pay_params": params, "result": "SUCCESS", "reported_total": 1}), None).await;
    assert_eq!(paid.status, 200, "{}", paid.body);

    let o = wait_order(app, t, id, |o| !o["discrepancy"].is_null()).await;
    assert!(o["discrepancy"].as_str().is_some_and(|d| d.contains("1 fen")), "{o}");
    assert_eq!((o["status"].as_str(), o["paid_amount"].as_i64()), (Some("paying"), Some(0)), "{o}");
    let q = app.post("/api/v1/miniprogram/payment/query", json!({"tenant_id": org.t1, "out_trade_no": no}), Some(&org.admin)).await;
    q.expect(200);
    assert!(q.data()["discrepancy"].is_string(), "{}", q.body);
    assert_ne!(q.data()["trade_state"], "SUCCESS", "{}", q.body);
    // Not paid, so nothing can be refunded through the order, and the trail says why.
    app.post(&format!("/api/v1/orders/{id}/refund"), json!({"amount": 1}), Some(t)).await.expect(409);
    let audit = app.get("/api/v1/audit-logs?action=payment.discrepancy&page_size=10", Some(&org.admin)).await;
    audit.expect(200);
    assert!(!audit.data()["items"].as_array().unwrap().is_empty(), "{}", audit.body);
    // And it is counted where operators look.
    let metrics = app.client.get(app.url("/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("atrium_payment_discrepancies 1"), "no discrepancy in /metrics: {metrics}");
});

e2e!(an_offline_order_refunds_through_the_ledger_at_once, |app| {
    let org = app.org().await;
    let t = &org.t1_admin;
    let o = new_order(app, t, 25_000, OPENID).await;
    let id = o["id"].as_i64().unwrap();
    let pay = app.post(&format!("/api/v1/orders/{id}/pay"), json!({"method": "offline", "reference": "Bank transfer 8841"}), Some(t)).await;
    pay.expect(200);
    assert_eq!(pay.data()["order"]["status"], "paid");

    let path = format!("/api/v1/orders/{id}/refund");
    let keys: Vec<String> = (0..6).map(|i| format!("off-{i}")).collect();
    let answers = join_all(keys.iter().map(|k| app.post_with_key(&path, k, json!({"amount": 5_000}), t))).await;
    let ok = answers.iter().filter(|a| a.status == 200).count();
    assert_eq!(ok, 5, "25,000 fen refund in five parts of 5,000, never six: {:?}", answers.iter().map(|a| a.status).collect::<Vec<_>>());
    for a in answers.iter().filter(|a| a.status != 200) {
        a.expect(409);
    }
    let o = order(app, t, id).await;
    assert_eq!((o["status"].as_str(), o["refunded_amount"].as_i64()), (Some("refunded"), Some(25_000)), "{o}");
    assert!(o["refunds"].as_array().unwrap().iter().all(|r| r["status"] == "succeeded"), "{o}");
});
