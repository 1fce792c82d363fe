//! Partners' share plans over HTTP, on SQLite and PostgreSQL: the platform sets them, the
//! partner reads its own, nobody else sees one; versions; and the `max_ratio` of each
//! sub-merchant, asked of the sandbox pay platform, when a plan is set, a tenant becomes a
//! sub-merchant and the provider's default rate rises.
#![allow(clippy::unwrap_used)]
use atrium_e2e::pay::{configure_provider, configure_sub_merchant};
use atrium_e2e::serde_json::{Value, json};
use atrium_e2e::{Resp, e2e};

const SP_MCHID: &str = "1900000100";

fn plan_path(partner: i64) -> String {
    format!("/api/v1/partners/{partner}/share-plan")
}

fn merchant_plan(commission_bp: i64) -> Value {
    json!({"commission_bp": commission_bp, "receiver": {"type": "MERCHANT_ID", "account": "1900000301", "name": "Harbour Agency Ltd"}})
}

/// The messages of a refusal's `data.errors` naming `field`.
fn messages(r: &Resp, field: &str) -> Vec<String> {
    let errors = r.body["data"]["errors"].as_array().cloned().unwrap_or_default();
    errors.iter().filter(|e| e["field"] == field).map(|e| e["message"].as_str().unwrap_or_default().to_owned()).collect()
}

e2e!(a_share_plan_is_set_by_the_platform_read_by_its_partner_and_versioned, |app| {
    let org = app.org().await;
    let path = plan_path(org.p1);
    app.get(&path, Some(&org.admin)).await.expect(404);

    let first = app.put(&path, merchant_plan(500), Some(&org.admin)).await;
    first.expect(200);
    let second = app.put(&path, merchant_plan(600), Some(&org.admin)).await;
    second.expect(200);

    assert_eq!((first.data()["version"].as_i64(), second.data()["version"].as_i64()), (Some(1), Some(2)));
    let read = app.get(&path, Some(&org.p1_admin)).await;
    read.expect(200);
    assert_eq!(read.data(), second.data(), "the partner reads what the platform set");
    assert_eq!(read.data()["commission_bp"], 600);
    assert_eq!(read.data()["receiver"], json!({"type": "MERCHANT_ID", "account": "19******01", "name": "Harbour Agency Ltd"}));
    assert_eq!((read.data()["platform_bp"].as_i64(), read.data()["platform_bp_default"].as_bool()), (Some(0), Some(true)));

    // Nobody else reads it; the partner never sets it.
    app.get(&path, Some(&org.p2_admin)).await.expect(404);
    app.get(&plan_path(org.p2), Some(&org.p1_admin)).await.expect(404);
    app.get(&path, Some(&org.t1_admin)).await.expect(403);
    app.put(&path, merchant_plan(9000), Some(&org.p1_admin)).await.expect_reason(403, "party_not_allowed");
    app.put(&plan_path(org.p2), merchant_plan(9000), Some(&org.p1_admin)).await.expect_reason(403, "party_not_allowed");
    app.get(&plan_path(org.p2 + 1000), Some(&org.admin)).await.expect(404);
    app.put(&plan_path(org.p2 + 1000), merchant_plan(1), Some(&org.admin)).await.expect(404);
    assert_eq!(app.get(&path, Some(&org.admin)).await.data()["commission_bp"], 600, "nothing changed");

    // Bad input names its field.
    app.put(&path, merchant_plan(10_001), Some(&org.admin)).await.expect_field_error("commission_bp");
    let unnamed = json!({"commission_bp": 1, "platform_bp": -1, "receiver": {"type": "MERCHANT_ID", "account": "o-ann"}});
    let r = app.put(&path, unnamed, Some(&org.admin)).await;
    r.expect_field_error("platform_bp").expect_field_error("receiver.account").expect_field_error("receiver.name");
    let person = json!({"receiver": {"type": "PERSONAL_OPENID", "account": "oUpF8uMuAJO_M2pxb1Q9zNjWeS6o"}});
    let third = app.put(&path, person, Some(&org.admin)).await;
    third.expect(200);
    assert_eq!(
        (third.data()["version"].as_i64(), third.data()["commission_bp_default"].as_bool(), third.data()["receiver"]["account"].as_str()),
        (Some(3), Some(true), Some("oUpF********************eS6o"))
    );

    // Each version is audited on the partner, readable by it.
    let audit = app.get(&format!("/api/v1/audit-logs?target_type=share_plan&target_id={}", org.p1), Some(&org.p1_admin)).await;
    audit.expect(200);
    let actions: Vec<&str> = audit.data()["items"].as_array().unwrap().iter().filter_map(|e| e["action"].as_str()).collect();
    assert_eq!(actions, ["share_plan.update", "share_plan.update", "share_plan.create"], "{}", audit.body);
    let newest = &audit.data()["items"][0];
    assert_eq!(newest["after"]["receiver"]["account"], "oUpF********************eS6o", "the audit shows accounts masked: {}", audit.body);
    assert!(!audit.body.to_string().contains("oUpF8uMuAJO"), "{}", audit.body);
});

e2e!(a_plan_over_a_sub_merchants_max_ratio_is_refused_when_set_on_switching_and_when_a_default_rises, |app| {
    let org = app.org().await;
    configure_provider(app, &org.admin, SP_MCHID).await;
    app.put(
        "/api/v1/platform/pay-provider",
        json!({"sp_mchid": SP_MCHID, "sp_appid": atrium_e2e::pay::SP_APPID, "platform_bp": 100}),
        Some(&org.admin),
    )
    .await
    .expect(200);
    // t1 (of p1) collects as sub-merchant 1900000201, which allows the platform's default 30 %.
    configure_sub_merchant(app, &org.admin, org.t1, SP_MCHID, "1900000201", None).await;
    let path = plan_path(org.p1);

    let over = app.put(&path, merchant_plan(2950), Some(&org.admin)).await;
    over.expect_reason(409, "over_max_ratio");
    let said = messages(&over, "commission_bp");
    assert!(said.len() == 1 && said[0].contains("3050 bp") && said[0].contains("1900000201") && said[0].contains("3000 bp"), "{said:?}");
    app.get(&path, Some(&org.admin)).await.expect(404);
    app.put(&path, merchant_plan(2900), Some(&org.admin)).await.expect(200);

    // Another tenant of p1 whose sub-merchant allows 20 % cannot switch; one allowing 30 % can.
    let t3 = app.create("/api/v1/tenants", json!({"name": "Tenant Three", "partner_id": org.p1}), &org.admin).await["id"].as_i64().unwrap();
    let narrow = json!({"sp_mchid": SP_MCHID, "sub_mchid": "1900000202", "max_ratio": 2000});
    assert_eq!(app.post("/sandbox/control/sub-merchant", narrow, None).await.status, 200);
    let switch = |sub: &str| json!({"tenant_id": t3, "mode": "sub_merchant", "sub_mchid": sub, "enabled": true});
    let refused = app.put("/api/v1/miniprogram/payment/config", switch("1900000202"), Some(&org.admin)).await;
    refused.expect_reason(409, "over_max_ratio");
    assert!(messages(&refused, "sub_mchid")[0].contains("2000 bp"), "{}", refused.body);
    app.get(&format!("/api/v1/miniprogram/payment/config?tenant_id={t3}"), Some(&org.admin)).await.expect(404);
    // A sub-merchant the provider does not have is the platform's refusal, naming it.
    let unknown = app.put("/api/v1/miniprogram/payment/config", switch("1900000299"), Some(&org.admin)).await;
    unknown.expect_reason(409, "platform_state");
    assert_eq!(messages(&unknown, "sub_mchid").len(), 1, "{}", unknown.body);
    configure_sub_merchant(app, &org.admin, t3, SP_MCHID, "1900000203", None).await;

    // Raising the platform's default takes t1 and t3 over 30 %: refused, naming both.
    let raise = json!({"sp_mchid": SP_MCHID, "sp_appid": atrium_e2e::pay::SP_APPID, "platform_bp": 200});
    let raised = app.put("/api/v1/platform/pay-provider", raise, Some(&org.admin)).await;
    raised.expect_reason(409, "over_max_ratio");
    assert_eq!(messages(&raised, "platform_bp").len(), 2, "{}", raised.body);
    assert_eq!(app.get("/api/v1/platform/pay-provider", Some(&org.admin)).await.data()["platform_bp"], 100, "nothing changed");

    // Lowering is never refused, and makes room for the raise.
    app.put(&path, merchant_plan(2000), Some(&org.admin)).await.expect(200);
    let raise = json!({"sp_mchid": SP_MCHID, "sp_appid": atrium_e2e::pay::SP_APPID, "platform_bp": 200});
    app.put("/api/v1/platform/pay-provider", raise, Some(&org.admin)).await.expect(200);
    let plan = app.get(&path, Some(&org.p1_admin)).await;
    assert_eq!((plan.data()["platform_bp"].as_i64(), plan.data()["commission_bp"].as_i64()), (Some(200), Some(2000)));

    // The platform failing past the client's two retries: a 502, nothing stored; then it works.
    let fail = json!({"path": "/v3/profitsharing/merchant-configs/*", "status": 500, "code": "SYSTEM_ERROR", "times": 3});
    assert_eq!(app.post("/sandbox/control/pay-fail", fail, None).await.status, 200);
    app.put(&path, merchant_plan(2100), Some(&org.admin)).await.expect_reason(502, "platform_unavailable");
    assert_eq!(app.get(&path, Some(&org.admin)).await.data()["version"], 2, "nothing stored");
    app.put(&path, merchant_plan(2100), Some(&org.admin)).await.expect(200);
});
