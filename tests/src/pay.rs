//! Payments set-up shared by the payment and order tests: a tenant's merchant account on the
//! sandbox pay platform.
use crate::{Org, Resp, TestApp};
use serde_json::{Value, json};
use std::time::Duration;

/// The mini-program every sandbox merchant is bound to.
pub const APPID: &str = "wx_sandbox_mp";

/// A `multipart/form-data` body of text parts: (content type, body).
pub fn multipart(parts: &[(&str, &str)]) -> (String, Vec<u8>) {
    let boundary = "atrium-test-boundary-7f3c";
    let mut body = String::new();
    for (name, value) in parts {
        body.push_str(&format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"));
    }
    body.push_str(&format!("--{boundary}--\r\n"));
    (format!("multipart/form-data; boundary={boundary}"), body.into_bytes())
}

/// `POST /miniprogram/payment/cert/upload` with these parts.
pub async fn upload(app: &TestApp, token: &str, parts: &[(&str, &str)]) -> Resp {
    let (content_type, body) = multipart(parts);
    let req = app.client.post(app.url("/api/v1/miniprogram/payment/cert/upload")).bearer_auth(token).header("content-type", content_type);
    app.send(req.body(body)).await
}

/// Gives `tenant` a complete, enabled payment configuration for sandbox merchant `mchid`
/// (registered with the sandbox here), as `admin`.
pub async fn configure_merchant(app: &TestApp, admin: &str, tenant: i64, mchid: &str) {
    let merchant = app.post("/sandbox/control/merchant", json!({"mchid": mchid, "appid": APPID}), None).await;
    assert_eq!(merchant.status, 200, "{}", merchant.body);
    let m = &merchant.body;
    let text = |k: &str| m[k].as_str().map(str::to_owned).unwrap_or_else(|| panic!("no {k} in {m}"));
    app.put(
        "/api/v1/miniprogram/payment/config",
        json!({"tenant_id": tenant, "mchid": mchid, "appid": APPID, "api_v3_key": m["api_v3_key"]}),
        Some(admin),
    )
    .await
    .expect(200);
    let tid = tenant.to_string();
    upload(
        app,
        admin,
        &[
            ("tenant_id", &tid),
            ("private_key", &text("private_key_pem")),
            ("certificate", &text("certificate_pem")),
            ("platform_public_key", &text("platform_public_key_pem")),
            ("platform_public_key_id", &text("platform_public_key_id")),
        ],
    )
    .await
    .expect(200);
    app.put(
        "/api/v1/miniprogram/payment/config",
        json!({"tenant_id": tenant, "mchid": mchid, "appid": APPID, "enabled": true}),
        Some(admin),
    )
    .await
    .expect(200);
}

/// The provider's app id every sandbox service provider is bound to.
pub const SP_APPID: &str = "wx_sandbox_sp";

/// Makes sandbox merchant `sp_mchid` (registered here) the platform's complete, enabled
/// service-provider account, as the platform user `admin`.
pub async fn configure_provider(app: &TestApp, admin: &str, sp_mchid: &str) {
    let merchant = app.post("/sandbox/control/merchant", json!({"mchid": sp_mchid, "appid": SP_APPID}), None).await;
    assert_eq!(merchant.status, 200, "{}", merchant.body);
    let m = &merchant.body;
    let text = |k: &str| m[k].as_str().map(str::to_owned).unwrap_or_else(|| panic!("no {k} in {m}"));
    let body = json!({"sp_mchid": sp_mchid, "sp_appid": SP_APPID, "sp_name": "Sandbox Platform Ltd", "api_v3_key": m["api_v3_key"]});
    app.put("/api/v1/platform/pay-provider", body, Some(admin)).await.expect(200);
    let (content_type, form) = multipart(&[
        ("private_key", &text("private_key_pem")),
        ("certificate", &text("certificate_pem")),
        ("platform_public_key", &text("platform_public_key_pem")),
        ("platform_public_key_id", &text("platform_public_key_id")),
    ]);
    let req = app.client.post(app.url("/api/v1/platform/pay-provider/cert/upload")).bearer_auth(admin).header("content-type", content_type);
    app.send(req.body(form)).await.expect(200);
    app.put("/api/v1/platform/pay-provider", json!({"sp_mchid": sp_mchid, "sp_appid": SP_APPID, "enabled": true}), Some(admin))
        .await
        .expect(200);
}

/// Registers `sub_mchid` with the sandbox under provider `sp_mchid` and makes it `tenant`'s
/// enabled sub-merchant configuration, as `admin`; payers pay in `sub_appid` when given.
pub async fn configure_sub_merchant(app: &TestApp, admin: &str, tenant: i64, sp_mchid: &str, sub_mchid: &str, sub_appid: Option<&str>) {
    let registered = app
        .post("/sandbox/control/sub-merchant", json!({"sp_mchid": sp_mchid, "sub_mchid": sub_mchid, "sub_appid": sub_appid}), None)
        .await;
    assert_eq!(registered.status, 200, "{}", registered.body);
    let body = json!({"tenant_id": tenant, "mode": "sub_merchant", "sub_mchid": sub_mchid, "sub_appid": sub_appid, "enabled": true});
    app.put("/api/v1/miniprogram/payment/config", body, Some(admin)).await.expect(200);
}

/// An org whose first tenant is paid into sandbox merchant `mchid`.
pub async fn shop(app: &TestApp, mchid: &str) -> Org {
    let org = app.org().await;
    configure_merchant(app, &org.admin, org.t1, mchid).await;
    org
}

/// A `pending` order of `amount` fen for payer `openid`, as created.
pub async fn new_order(app: &TestApp, token: &str, amount: i64, openid: &str) -> Value {
    let r = app.post("/api/v1/orders", json!({"subject": "Ledger order", "amount": amount, "openid": openid}), Some(token)).await;
    r.expect(200);
    r.data().clone()
}

/// The order as it stands.
pub async fn order(app: &TestApp, token: &str, id: i64) -> Value {
    let r = app.get(&format!("/api/v1/orders/{id}"), Some(token)).await;
    r.expect(200);
    r.data().clone()
}

/// Runs `probe` every 50 ms until it answers `Ok`, and returns that; panics once `secs`
/// seconds have passed, saying what was awaited (`what`) and what `probe` last saw (its
/// `Err`). For conditions another task brings about — a job runner, a notification — that a
/// test must not assume have happened when its own request returned.
pub async fn eventually<T>(secs: u64, what: &str, mut probe: impl AsyncFnMut() -> Result<T, String>) -> T {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        match probe().await {
            Ok(done) => return done,
            Err(seen) if tokio::time::Instant::now() >= deadline => panic!("waited {secs} s for {what}; last seen: {seen}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// Waits up to fifteen seconds for the order to satisfy `done`, and returns it as last read.
pub async fn wait_order(app: &TestApp, token: &str, id: i64, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let o = order(app, token, id).await;
        if done(&o) || tokio::time::Instant::now() > deadline {
            return o;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Starts the order's platform payment: its pay params.
pub async fn pay_online(app: &TestApp, token: &str, id: i64) -> Value {
    let pay = app.post(&format!("/api/v1/orders/{id}/pay"), json!({"method": "wechat_jsapi"}), Some(token)).await;
    pay.expect(200);
    pay.data()["pay_params"].clone()
}

/// An order of `amount` fen paid through the sandbox platform, as the order shows it.
pub async fn paid_order(app: &TestApp, token: &str, amount: i64, openid: &str) -> Value {
    let o = new_order(app, token, amount, openid).await;
    let id = o["id"].as_i64().unwrap_or_default();
    let params = pay_online(app, token, id).await;
    let paid = app.post("/sandbox/control/pay", json!({"pay_params": params, "result": "SUCCESS"}), None).await;
    assert_eq!(paid.status, 200, "{}", paid.body);
    let o = wait_order(app, token, id, |o| o["status"] == "paid").await;
    assert_eq!(o["status"], "paid", "{o}");
    o
}

/// The refunds the sandbox platform holds of `out_trade_no`, oldest first.
pub async fn platform_refunds(app: &TestApp, out_trade_no: &str) -> Vec<Value> {
    let r = app.get(&format!("/sandbox/control/trade?out_trade_no={out_trade_no}"), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["refunds"].as_array().cloned().unwrap_or_default()
}

/// The partner receiver's openid the sharing tests' plans pay.
pub const PARTNER_OPENID: &str = "o_partner_receiver";

/// The server variables of a sharing test: shared at once, retried after a second, jobs polled
/// often.
pub const SHARING_VARS: [(&str, &str); 3] =
    [("ATRIUM_SHARING_DELAY_SECS", "0"), ("ATRIUM_SHARING_RETRY_SECS", "1"), ("ATRIUM_JOB_POLL_MS", "50")];

/// An org whose t1 collects as sub-merchant `sub_mchid` (paying in `sub_appid`) of the
/// platform's provider `sp_mchid` (platform default 100 bp), its partner p1 on a plan of 60 bp
/// for the platform and 250 bp for itself, paid to [`PARTNER_OPENID`]; the sandbox's
/// one-minute rule off.
pub async fn sharing_org(app: &TestApp, sp_mchid: &str, sub_mchid: &str, sub_appid: &str) -> Org {
    let org = app.org().await;
    configure_provider(app, &org.admin, sp_mchid).await;
    let rules = app.post("/sandbox/control/profitsharing/rules", json!({"one_minute": false}), None).await;
    assert_eq!(rules.status, 200, "{}", rules.body);
    let plan = json!({"commission_bp": 250, "platform_bp": 60, "receiver": {"type": "PERSONAL_OPENID", "account": PARTNER_OPENID}});
    app.put(&format!("/api/v1/partners/{}/share-plan", org.p1), plan, Some(&org.admin)).await.expect(200);
    configure_sub_merchant(app, &org.admin, org.t1, sp_mchid, sub_mchid, Some(sub_appid)).await;
    org
}

/// The partner's merchant account the refund tests' plans pay: only a merchant's part can be
/// taken back before a refund.
pub const PARTNER_MCHID: &str = "1900000109";

/// Pays `org`'s partner p1 to its merchant account [`PARTNER_MCHID`] from now on (the same
/// rates).
pub async fn pay_partner_merchant(app: &TestApp, org: &Org) {
    let plan = json!({"commission_bp": 250, "platform_bp": 60, "receiver": {"type": "MERCHANT_ID", "account": PARTNER_MCHID, "name": "Partner Trading Co"}});
    app.put(&format!("/api/v1/partners/{}/share-plan", org.p1), plan, Some(&org.admin)).await.expect(200);
}

/// Refunds `fen` of `org`'s t1's payment `no` under `out_refund_no` through the payment routes.
pub async fn refund_tenant(app: &TestApp, org: &Org, no: &str, out_refund_no: &str, fen: i64) -> crate::Resp {
    let body = json!({"tenant_id": org.t1, "out_trade_no": no, "out_refund_no": out_refund_no, "amount": fen});
    app.post("/api/v1/miniprogram/payment/refund", body, Some(&org.admin)).await
}

/// The platform's returns of a payment, `(return_mchid, amount, result)` in the order made.
pub fn platform_returns(held: &Value) -> Vec<(String, i64, String)> {
    held["returns"]
        .as_array()
        .map(|r| {
            r.iter()
                .map(|r| {
                    (
                        r["return_mchid"].as_str().unwrap_or_default().to_owned(),
                        r["amount"].as_i64().unwrap_or_default(),
                        r["result"].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A payment of `fen` by `org`'s t1 through the payment routes, paid on the sandbox.
pub async fn pay_tenant(app: &TestApp, org: &Org, no: &str, fen: i64) {
    let body = json!({"tenant_id": org.t1, "description": "Tea", "amount": fen, "openid": "o_share_payer", "out_trade_no": no});
    let placed = app.post("/api/v1/miniprogram/payment/unified-order", body, Some(&org.admin)).await;
    placed.expect(200);
    let paid = app.post("/sandbox/control/pay", json!({"pay_params": placed.data()["pay_params"], "result": "SUCCESS"}), None).await;
    assert_eq!(paid.status, 200, "{}", paid.body);
}

/// What the sandbox platform holds of the profit sharing of sub-merchant `sub_mchid`'s payment.
pub async fn profit_sharing(app: &TestApp, sub_mchid: &str, no: &str) -> Value {
    let r = app.get(&format!("/sandbox/control/profitsharing?sub_mchid={sub_mchid}&out_trade_no={no}"), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
}

/// Waits until the platform has unfrozen the rest of the payment; returns what it holds. (A
/// run that fails three times waits 1 + 5 + 10 s with a first retry of a second.)
pub async fn unfrozen_on_platform(app: &TestApp, sub_mchid: &str, no: &str) -> Value {
    eventually(60, &format!("{no} shared and unfrozen on the platform"), async || {
        let held = profit_sharing(app, sub_mchid, no).await;
        if held["unfrozen"].is_object() { Ok(held) } else { Err(held.to_string()) }
    })
    .await
}

/// The share requests the platform holds for a payment (not its unfreeze).
pub fn share_orders(held: &Value) -> Vec<Value> {
    held["orders"].as_array().map(|o| o.iter().filter(|o| o["kind"] == "share").cloned().collect()).unwrap_or_default()
}

/// A payment's shares as `token` sees them.
pub async fn shares_of(app: &TestApp, token: &str, no: &str) -> Vec<Value> {
    let r = app.get(&format!("/api/v1/miniprogram/payment/shares?out_trade_no={no}"), Some(token)).await;
    r.expect(200);
    r.data()["items"].as_array().cloned().unwrap_or_default()
}

/// `(role, amount, status)` of each share, sorted.
pub fn share_summary(items: &[Value]) -> Vec<(String, i64, String)> {
    let mut s: Vec<_> = items
        .iter()
        .map(|s| {
            let text = |k: &str| s[k].as_str().unwrap_or_default().to_owned();
            (text("role"), s["amount"].as_i64().unwrap_or_default(), text("status"))
        })
        .collect();
    s.sort();
    s
}
