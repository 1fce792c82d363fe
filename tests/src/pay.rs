//! Payments set-up shared by the payment and order tests: a tenant's merchant account on the
//! sandbox pay platform.
use crate::{Resp, TestApp};
use serde_json::json;

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
