//! Service-provider mode over HTTP, on SQLite and PostgreSQL, through the sandbox's partner
//! endpoints: the platform's provider account, a tenant collecting as its sub-merchant (orders
//! and payment routes, notifications, refunds, close, reconciliation), the switch between
//! modes, and who may see what.
#![allow(clippy::unwrap_used)]
use atrium_e2e::pay::{configure_merchant, configure_provider, configure_sub_merchant, eventually, multipart, pay_online, wait_order};
use atrium_e2e::serde_json::{Value, json};
use atrium_e2e::{Resp, TestApp, e2e};

const SP_MCHID: &str = "1900000100";
const SUB_MCHID: &str = "1900000201";
const SUB_APPID: &str = "wx_sub_shop";
const MCHID: &str = "1900000001";

/// A tenant of the platform admin: (admin token, tenant id).
async fn tenant(app: &TestApp, name: &str) -> (String, i64) {
    let admin = app.admin_token().await;
    let tenant = app.create("/api/v1/tenants", json!({"name": name}), &admin).await["id"].as_i64().unwrap();
    (admin, tenant)
}

async fn unified_order(app: &TestApp, token: &str, tenant: i64, no: &str, amount: i64) -> Resp {
    app.post(
        "/api/v1/miniprogram/payment/unified-order",
        json!({"tenant_id": tenant, "description": "Coffee", "amount": amount, "openid": "o_sub_payer", "out_trade_no": no}),
        Some(token),
    )
    .await
}

async fn query(app: &TestApp, token: &str, tenant: i64, no: &str) -> Value {
    let q = app.post("/api/v1/miniprogram/payment/query", json!({"tenant_id": tenant, "out_trade_no": no}), Some(token)).await;
    q.expect(200);
    q.data().clone()
}

/// What the sandbox platform holds of order `no` (of merchant or sub-merchant `mchid`).
async fn platform_trade(app: &TestApp, no: &str, mchid: &str) -> Value {
    let r = app.get(&format!("/sandbox/control/trade?out_trade_no={no}&mchid={mchid}"), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
}

e2e!(a_sub_merchant_collects_through_the_provider_from_order_to_refund_and_close, |app| {
    let (admin, tenant) = tenant(app, "Sub shop").await;
    configure_provider(app, &admin, SP_MCHID).await;
    let provider = app.get("/api/v1/platform/pay-provider", Some(&admin)).await;
    provider.expect(200);
    assert_eq!((provider.data()["sp_mchid"].as_str(), provider.data()["enabled"].as_bool()), (Some(SP_MCHID), Some(true)));
    let shown = provider.body.to_string();
    assert!(!shown.contains("PRIVATE KEY") && provider.data()["api_v3_key_set"] == true, "{shown}");
    let test = app.post("/api/v1/platform/pay-provider/test", json!({}), Some(&admin)).await;
    assert_eq!(test.data()["ok"], true, "{}", test.body);

    configure_sub_merchant(app, &admin, tenant, SP_MCHID, SUB_MCHID, Some(SUB_APPID)).await;
    let config = app.get(&format!("/api/v1/miniprogram/payment/config?tenant_id={tenant}"), Some(&admin)).await;
    config.expect(200);
    assert_eq!((config.data()["mode"].as_str(), config.data()["sub_mchid"].as_str()), (Some("sub_merchant"), Some(SUB_MCHID)));
    let test = app.post("/api/v1/miniprogram/payment/test", json!({"tenant_id": tenant}), Some(&admin)).await;
    assert_eq!(test.data()["ok"], true, "a sub-merchant is tested through the provider: {}", test.body);

    // The payment routes: placed for the sub-merchant with profit sharing, paid in its own app.
    let placed = unified_order(app, &admin, tenant, "T_SUB_001", 333).await;
    placed.expect(200);
    assert_eq!(placed.data()["pay_params"]["appId"], SUB_APPID, "{}", placed.body);
    let held = platform_trade(app, "T_SUB_001", SUB_MCHID).await;
    assert_eq!(
        (held["order"]["sub_mchid"].as_str(), held["order"]["sp_mchid"].as_str(), held["order"]["profit_sharing"].as_bool()),
        (Some(SUB_MCHID), Some(SP_MCHID), Some(true)),
        "{held}"
    );
    let paid = app.post("/sandbox/control/pay", json!({"pay_params": placed.data()["pay_params"], "result": "SUCCESS"}), None).await;
    assert_eq!(paid.status, 200, "{}", paid.body);
    let seen = eventually(10, "T_SUB_001 notified paid", async || {
        let t = query(app, &admin, tenant, "T_SUB_001").await;
        if t["trade_state"] == "SUCCESS" { Ok(t) } else { Err(t.to_string()) }
    })
    .await;
    assert_eq!(seen["amount"], 333);

    let refund = app
        .post(
            "/api/v1/miniprogram/payment/refund",
            json!({"tenant_id": tenant, "out_trade_no": "T_SUB_001", "amount": 33, "out_refund_no": "R_SUB_001"}),
            Some(&admin),
        )
        .await;
    refund.expect(200);
    let held = platform_trade(app, "T_SUB_001", SUB_MCHID).await;
    assert_eq!(held["refunds"][0]["amount"], 33, "the refund went to the sub-merchant: {held}");
    let settled = app.post("/sandbox/control/refund", json!({"out_refund_no": "R_SUB_001", "result": "SUCCESS"}), None).await;
    assert_eq!(settled.status, 200, "{}", settled.body);

    unified_order(app, &admin, tenant, "T_SUB_002", 100).await.expect(200);
    let closed =
        app.post("/api/v1/miniprogram/payment/close", json!({"tenant_id": tenant, "out_trade_no": "T_SUB_002"}), Some(&admin)).await;
    closed.expect(200);
    assert_eq!(platform_trade(app, "T_SUB_002", SUB_MCHID).await["order"]["trade_state"], "CLOSED");

    // An order of the tenant, paid in the sub-merchant's app and told by the notification.
    let order = app
        .post(
            "/api/v1/orders",
            json!({"tenant_id": tenant, "subject": "Sub order", "amount": 10_001, "openid": "o_sub_payer"}),
            Some(&admin),
        )
        .await;
    order.expect(200);
    let id = order.data()["id"].as_i64().unwrap();
    let params = pay_online(app, &admin, id).await;
    assert_eq!(params["appId"], SUB_APPID);
    app.post("/sandbox/control/pay", json!({"pay_params": params, "result": "SUCCESS"}), None).await;
    let o = wait_order(app, &admin, id, |o| o["status"] == "paid").await;
    assert_eq!((o["status"].as_str(), o["paid_amount"].as_i64()), (Some("paid"), Some(10_001)), "{o}");
    // Refunded through the order, from the sub-merchant.
    let no = o["order_no"].as_str().unwrap().to_owned();
    app.post(&format!("/api/v1/orders/{id}/refund"), json!({"amount": 1}), Some(&admin)).await.expect(200);
    let held = platform_trade(app, &no, SUB_MCHID).await;
    assert_eq!(held["refunds"].as_array().map(Vec::len), Some(1), "{held}");
    let out_refund_no = held["refunds"][0]["out_refund_no"].as_str().unwrap().to_owned();
    app.post("/sandbox/control/refund", json!({"out_refund_no": out_refund_no, "result": "SUCCESS"}), None).await;
    let o = wait_order(app, &admin, id, |o| o["refunded_amount"] == 1).await;
    assert_eq!((o["status"].as_str(), o["refunded_amount"].as_i64()), (Some("partially_refunded"), Some(1)), "{o}");
});

e2e!(a_sub_merchant_without_its_own_app_pays_in_the_providers, |app| {
    let (admin, tenant) = tenant(app, "Sub shop").await;
    configure_provider(app, &admin, SP_MCHID).await;
    configure_sub_merchant(app, &admin, tenant, SP_MCHID, SUB_MCHID, None).await;

    let placed = unified_order(app, &admin, tenant, "T_SUB_SP_1", 1).await;

    placed.expect(200);
    assert_eq!(placed.data()["pay_params"]["appId"], atrium_e2e::pay::SP_APPID, "{}", placed.body);
    app.post("/sandbox/control/pay", json!({"pay_params": placed.data()["pay_params"], "result": "SUCCESS"}), None).await;
    eventually(10, "T_SUB_SP_1 notified paid", async || {
        let t = query(app, &admin, tenant, "T_SUB_SP_1").await;
        if t["trade_state"] == "SUCCESS" { Ok(()) } else { Err(t.to_string()) }
    })
    .await;
});

e2e!(switching_mode_waits_for_payments_in_flight_and_earlier_payments_settle_where_they_were_made, |app| {
    let (admin, tenant) = tenant(app, "Switching shop").await;
    configure_merchant(app, &admin, tenant, MCHID).await;
    configure_provider(app, &admin, SP_MCHID).await;
    app.post("/sandbox/control/sub-merchant", json!({"sp_mchid": SP_MCHID, "sub_mchid": SUB_MCHID}), None).await;
    unified_order(app, &admin, tenant, "T_DIRECT_1", 500).await.expect(200);
    let switch = json!({"tenant_id": tenant, "mode": "sub_merchant", "sub_mchid": SUB_MCHID});

    let refused = app.put("/api/v1/miniprogram/payment/config", switch.clone(), Some(&admin)).await;

    refused.expect_reason(409, "state");
    assert!(refused.body["message"].as_str().unwrap().contains("not final"), "{}", refused.body);
    app.post("/sandbox/control/pay", json!({"out_trade_no": "T_DIRECT_1", "mchid": MCHID, "result": "SUCCESS"}), None).await;
    eventually(10, "T_DIRECT_1 paid", async || {
        let t = query(app, &admin, tenant, "T_DIRECT_1").await;
        if t["trade_state"] == "SUCCESS" { Ok(()) } else { Err(t.to_string()) }
    })
    .await;
    let switched = app.put("/api/v1/miniprogram/payment/config", switch, Some(&admin)).await;
    switched.expect(200);
    assert_eq!((switched.data()["mode"].as_str(), switched.data()["mchid"].as_str()), (Some("sub_merchant"), Some(MCHID)));

    // The direct payment is refunded from the tenant's own merchant; a new one is the sub-merchant's.
    app.post(
        "/api/v1/miniprogram/payment/refund",
        json!({"tenant_id": tenant, "out_trade_no": "T_DIRECT_1", "amount": 500, "out_refund_no": "R_DIRECT_1"}),
        Some(&admin),
    )
    .await
    .expect(200);
    assert_eq!(platform_trade(app, "T_DIRECT_1", MCHID).await["refunds"][0]["amount"], 500);
    unified_order(app, &admin, tenant, "T_AFTER_1", 200).await.expect(200);
    assert_eq!(platform_trade(app, "T_AFTER_1", SUB_MCHID).await["order"]["total"], 200);
    assert!(platform_trade(app, "T_AFTER_1", MCHID).await["order"].is_null(), "not placed with the direct merchant");
    // The direct refund's notification is opened with the direct keys though the tenant is a sub-merchant now.
    app.post("/sandbox/control/refund", json!({"out_refund_no": "R_DIRECT_1", "mchid": MCHID, "result": "SUCCESS"}), None).await;
    eventually(10, "R_DIRECT_1 settled by its notification", async || {
        let r = app
            .post(
                "/api/v1/miniprogram/payment/refund",
                json!({"tenant_id": tenant, "out_trade_no": "T_DIRECT_1", "amount": 500, "out_refund_no": "R_DIRECT_1"}),
                Some(&admin),
            )
            .await;
        if r.data()["status"] == "succeeded" { Ok(()) } else { Err(r.body.to_string()) }
    })
    .await;
});

e2e!(a_sub_merchants_reconciliation_reads_its_bill_through_the_provider, |app| {
    let (admin, tenant) = tenant(app, "Reconciled shop").await;
    configure_provider(app, &admin, SP_MCHID).await;
    configure_sub_merchant(app, &admin, tenant, SP_MCHID, SUB_MCHID, Some(SUB_APPID)).await;
    unified_order(app, &admin, tenant, "T_SUB_REC", 1_234).await.expect(200);
    let yesterday = chrono::Utc::now() - chrono::Duration::days(1);
    let date = (yesterday + chrono::Duration::hours(8)).date_naive().to_string();
    let paid_at = yesterday.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    app.post("/sandbox/control/pay", json!({"out_trade_no": "T_SUB_REC", "result": "SUCCESS", "paid_at": paid_at}), None).await;
    eventually(10, "T_SUB_REC paid", async || {
        let t = query(app, &admin, tenant, "T_SUB_REC").await;
        if t["trade_state"] == "SUCCESS" { Ok(()) } else { Err(t.to_string()) }
    })
    .await;

    let r = app.get(&format!("/api/v1/miniprogram/payment/reconciliation?date={date}&tenant_id={tenant}"), Some(&admin)).await;

    r.expect(200);
    assert_eq!((r.data()["bill_lines"].as_i64(), r.data()["matched"].as_i64()), (Some(1), Some(1)), "{}", r.body);
    assert_eq!(r.data()["missing_on_platform"], json!([]), "{}", r.body);
});

e2e!(a_lost_answer_of_the_partner_endpoint_is_asked_again_under_the_same_number, |app| {
    let (admin, tenant) = tenant(app, "Faulty shop").await;
    configure_provider(app, &admin, SP_MCHID).await;
    configure_sub_merchant(app, &admin, tenant, SP_MCHID, SUB_MCHID, Some(SUB_APPID)).await;
    let lose = json!({"path": "/v3/pay/partner/transactions/jsapi", "status": 500, "times": 3, "after": true});
    assert_eq!(app.post("/sandbox/control/pay-fail", lose, None).await.status, 200);
    let send = async || {
        let req = app
            .client
            .post(app.url("/api/v1/miniprogram/payment/unified-order"))
            .bearer_auth(&admin)
            .header("Idempotency-Key", "sub-lost-1")
            .json(&json!({"tenant_id": tenant, "description": "Coffee", "amount": 500, "openid": "o_sub_payer"}));
        app.send(req).await
    };

    let lost = send().await;
    let again = send().await;

    lost.expect(502);
    again.expect(200);
    let no = again.data()["out_trade_no"].as_str().unwrap().to_owned();
    let held = platform_trade(app, &no, SUB_MCHID).await;
    assert_eq!((held["order"]["total"].as_i64(), held["order"]["prepay_id"].as_str()), (Some(500), again.data()["prepay_id"].as_str()));
});

e2e!(a_lost_refund_answer_of_a_sub_merchant_is_asked_again_under_the_same_number, |app| {
    let (admin, tenant) = tenant(app, "Faulty shop").await;
    configure_provider(app, &admin, SP_MCHID).await;
    configure_sub_merchant(app, &admin, tenant, SP_MCHID, SUB_MCHID, Some(SUB_APPID)).await;
    unified_order(app, &admin, tenant, "T_SUB_LOST_R", 900).await.expect(200);
    app.post("/sandbox/control/pay", json!({"out_trade_no": "T_SUB_LOST_R", "result": "SUCCESS"}), None).await;
    eventually(10, "T_SUB_LOST_R paid", async || {
        let t = query(app, &admin, tenant, "T_SUB_LOST_R").await;
        if t["trade_state"] == "SUCCESS" { Ok(()) } else { Err(t.to_string()) }
    })
    .await;
    let lose = json!({"path": "/v3/refund/domestic/refunds", "status": 500, "times": 3, "after": true});
    assert_eq!(app.post("/sandbox/control/pay-fail", lose, None).await.status, 200);
    let refund = async || {
        let req = app
            .client
            .post(app.url("/api/v1/miniprogram/payment/refund"))
            .bearer_auth(&admin)
            .header("Idempotency-Key", "sub-refund-lost-1")
            .json(&json!({"tenant_id": tenant, "out_trade_no": "T_SUB_LOST_R", "amount": 300}));
        app.send(req).await
    };

    let lost = refund().await;
    let again = refund().await;

    lost.expect(502);
    again.expect(200);
    let held = platform_trade(app, "T_SUB_LOST_R", SUB_MCHID).await;
    let refunds = held["refunds"].as_array().unwrap();
    assert_eq!(refunds.len(), 1, "one refund on the platform: {held}");
    assert_eq!((refunds[0]["amount"].as_i64(), refunds[0]["out_refund_no"].as_str()), (Some(300), again.data()["out_refund_no"].as_str()));
});

e2e!(only_platform_users_reach_the_provider_account_and_rates_are_checked, |app| {
    let org = app.org().await;
    configure_provider(app, &org.admin, SP_MCHID).await;
    let body = json!({"sp_mchid": SP_MCHID, "sp_appid": "wx_sp"});
    let (content_type, form) = multipart(&[("platform_public_key_id", "PUB_KEY_ID_1")]);

    for token in [&org.p1_admin, &org.t1_admin] {
        app.get("/api/v1/platform/pay-provider", Some(token)).await.expect(403);
        app.put("/api/v1/platform/pay-provider", body.clone(), Some(token)).await.expect(403);
        app.post("/api/v1/platform/pay-provider/test", json!({}), Some(token)).await.expect(403);
        let req = app.client.post(app.url("/api/v1/platform/pay-provider/cert/upload")).bearer_auth(token);
        app.send(req.header("content-type", content_type.clone()).body(form.clone())).await.expect(403);
    }
    let over = app
        .put("/api/v1/platform/pay-provider", json!({"sp_mchid": SP_MCHID, "sp_appid": "wx_sp", "platform_bp": 10_001}), Some(&org.admin))
        .await;
    over.expect_field_error("platform_bp");
    let unchanged = app.get("/api/v1/platform/pay-provider", Some(&org.admin)).await;
    assert_eq!(
        (unchanged.data()["platform_bp"].as_i64(), unchanged.data()["sp_appid"].as_str()),
        (Some(0), Some(atrium_e2e::pay::SP_APPID))
    );
});

e2e!(one_sub_merchant_collects_for_one_tenant_only, |app| {
    let org = app.org().await;
    configure_provider(app, &org.admin, SP_MCHID).await;
    configure_sub_merchant(app, &org.admin, org.t1, SP_MCHID, SUB_MCHID, None).await;

    let taken = app
        .put(
            "/api/v1/miniprogram/payment/config",
            json!({"tenant_id": org.t2, "mode": "sub_merchant", "sub_mchid": SUB_MCHID}),
            Some(&org.admin),
        )
        .await;
    let keys_in_sub_mode = app
        .put(
            "/api/v1/miniprogram/payment/config",
            json!({"tenant_id": org.t2, "mode": "sub_merchant", "sub_mchid": "1900000299", "mchid": MCHID}),
            Some(&org.admin),
        )
        .await;

    taken.expect_reason(409, "duplicate");
    keys_in_sub_mode.expect_field_error("mchid");
    // The partner of t1 sees its tenant's configuration; the other partner does not.
    app.get(&format!("/api/v1/miniprogram/payment/config?tenant_id={}", org.t1), Some(&org.p1_admin)).await.expect(200);
    app.get(&format!("/api/v1/miniprogram/payment/config?tenant_id={}", org.t1), Some(&org.p2_admin)).await.expect(404);
});
