//! Every identity route over HTTP: successes and failures.
#![allow(clippy::unwrap_used)]
use atrium_e2e::serde_json::{Value, json};
use atrium_e2e::{TestApp, e2e};

async fn code_for(app: &TestApp, target: &str, purpose: &str) -> String {
    let r = app.post("/api/v1/auth/send-code", json!({"target": target, "purpose": purpose}), None).await;
    r.expect(200);
    assert_eq!(r.data()["expires_in"], 300);
    // The dev profile returns the code; the sandbox outbox got the same one.
    let code = r.data()["debug_code"].as_str().expect("dev profile shows the code").to_owned();
    let outbox = app.get(&format!("/sandbox/outbox?target={}", target.replace('+', "%2B")), None).await;
    let last = outbox.body["messages"].as_array().and_then(|m| m.last()).cloned().unwrap_or(Value::Null);
    assert_eq!(last["code"], code.as_str());
    code
}

async fn register(app: &TestApp, target: &str, password: &str) -> Value {
    let code = code_for(app, target, "register").await;
    let r = app
        .post(
            "/api/v1/auth/register",
            json!({"target": target, "code": code, "password": password, "name": "Ann", "tenant_name": "Acme Ltd"}),
            None,
        )
        .await;
    r.expect(200);
    r.data().clone()
}

fn bearer(data: &Value) -> String {
    data["access_token"].as_str().expect("access token").to_owned()
}

e2e!(password_login_returns_tokens_and_the_user, |app| {
    let data = app.login("admin", &app.admin_password).await;

    assert_eq!(data["token_type"], "Bearer");
    assert_eq!(data["expires_in"], 7200);
    assert_eq!(data["refresh_expires_in"], 7 * 24 * 3600);
    assert!(data["refresh_token"].as_str().is_some_and(|t| t.len() >= 40));
    assert_eq!(data["user"]["username"], "admin");
    assert!(data["user"].get("password_hash").is_none());
});

e2e!(me_shows_the_user_party_roles_and_permissions, |app| {
    let token = app.admin_token().await;

    let r = app.get("/api/v1/auth/me", Some(&token)).await;

    r.expect(200);
    assert_eq!(r.data()["party"], json!({"type": "platform", "id": null, "status": "active"}));
    assert_eq!(r.data()["roles"][0]["code"], "platform_admin");
    assert_eq!(r.data()["permissions"], json!(["*"]));
});

e2e!(wrong_password_and_unknown_user_get_the_same_401, |app| {
    let wrong =
        app.post("/api/v1/auth/login", json!({"method": "password", "username": "admin", "password": "not-the-password"}), None).await;
    let unknown =
        app.post("/api/v1/auth/login", json!({"method": "password", "username": "ghost", "password": "not-the-password"}), None).await;

    wrong.expect(401);
    unknown.expect(401);
    assert_eq!(wrong.body["message"], unknown.body["message"]);
});

e2e!(a_sixth_wrong_password_is_429_with_retry_after, |app| {
    for _ in 0..5 {
        app.post("/api/v1/auth/login", json!({"method": "password", "username": "admin", "password": "wrong-password"}), None)
            .await
            .expect(401);
    }

    let sixth =
        app.post("/api/v1/auth/login", json!({"method": "password", "username": "admin", "password": "wrong-password"}), None).await;
    let right =
        app.post("/api/v1/auth/login", json!({"method": "password", "username": "admin", "password": app.admin_password}), None).await;

    sixth.expect(429);
    let retry: u64 = sixth.header("retry-after").expect("Retry-After").parse().unwrap();
    assert!((850..=900).contains(&retry), "locked for about 15 minutes, got {retry}");
    right.expect(429);
});

e2e!(an_unknown_login_method_is_a_400, |app| {
    let r = app.post("/api/v1/auth/login", json!({"method": "magic", "username": "admin"}), None).await;
    r.expect(400);
});

e2e!(me_without_a_token_is_401, |app| {
    app.get("/api/v1/auth/me", None).await.expect(401);
    app.get("/api/v1/auth/me", Some("not-a-jwt")).await.expect(401);
});

e2e!(a_token_with_alg_none_is_401, |app| {
    let token = app.admin_token().await;
    let payload = token.split('.').nth(1).unwrap();
    // {"alg":"none","typ":"JWT"} in base64url
    let forged = format!("eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.{payload}.");

    app.get("/api/v1/auth/me", Some(&forged)).await.expect(401);
});

e2e!(a_token_signed_with_another_key_is_401, |app| {
    use base64::Engine;
    use hmac::Mac;
    let token = app.admin_token().await;
    let (signed, _) = token.rsplit_once('.').unwrap();
    // The same header and claims, validly signed with HS256 — under a key the server does not have.
    let sign = |key: &[u8]| {
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key).unwrap();
        mac.update(signed.as_bytes());
        format!("{signed}.{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes()))
    };
    let with_server_key = sign(b"e2e-test-secret-0123456789abcdef-xyz");
    let with_other_key = sign(b"another-secret-0123456789abcdef-xyz!");

    assert_eq!(with_server_key, token, "the forgery is built exactly as the server signs");
    app.get("/api/v1/auth/me", Some(&with_server_key)).await.expect(200);
    app.get("/api/v1/auth/me", Some(&with_other_key)).await.expect(401);
});

e2e!(a_docs_token_scheme_is_refused_on_the_main_interface, |app| {
    let token = app.admin_token().await;
    let r = app.send(app.client.get(app.url("/api/v1/auth/me")).header("authorization", format!("Token {token}"))).await;
    r.expect(401);
});

e2e!(logout_ends_the_session_for_access_and_refresh_tokens, |app| {
    let data = app.login("admin", &app.admin_password).await;
    let token = bearer(&data);

    app.post("/api/v1/auth/logout", json!({}), Some(&token)).await.expect(200);

    app.get("/api/v1/auth/me", Some(&token)).await.expect(401);
    app.post("/api/v1/auth/refresh", json!({"refresh_token": data["refresh_token"]}), None).await.expect(401);
    app.post("/api/v1/auth/logout", json!({}), None).await.expect(401);
});

e2e!(refresh_rotates_and_a_replay_ends_the_session, |app| {
    let first = app.login("admin", &app.admin_password).await;

    let second = app.post("/api/v1/auth/refresh", json!({"refresh_token": first["refresh_token"]}), None).await;
    second.expect(200);
    assert_ne!(second.data()["refresh_token"], first["refresh_token"]);
    app.get("/api/v1/auth/me", Some(&bearer(second.data()))).await.expect(200);

    let replay = app.post("/api/v1/auth/refresh", json!({"refresh_token": first["refresh_token"]}), None).await;
    replay.expect(401);
    // The replay revoked the session: the newest tokens are dead too.
    app.post("/api/v1/auth/refresh", json!({"refresh_token": second.data()["refresh_token"]}), None).await.expect(401);
    app.get("/api/v1/auth/me", Some(&bearer(second.data()))).await.expect(401);
});

e2e!(a_bogus_refresh_token_is_401, |app| {
    app.post("/api/v1/auth/refresh", json!({"refresh_token": "made-up"}), None).await.expect(401);
});

e2e!(send_code_validates_target_and_purpose, |app| {
    app.post("/api/v1/auth/send-code", json!({"target": "not a target", "purpose": "login"}), None).await.expect_field_error("target");
    app.post("/api/v1/auth/send-code", json!({"target": "a@b.cn", "purpose": "spam"}), None).await.expect_field_error("purpose");
});

e2e!(a_second_code_within_a_minute_is_429, |app| {
    let first = app.post("/api/v1/auth/send-code", json!({"target": "a@example.com", "purpose": "login"}), None).await;
    first.expect(200);
    assert_eq!(first.data()["resend_after"], 60);

    let again = app.post("/api/v1/auth/send-code", json!({"target": "a@example.com", "purpose": "login"}), None).await;

    again.expect(429);
    let retry: u64 = again.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry));
});

e2e!(registration_creates_a_pending_tenant_whose_admin_logs_in_at_once, |app| {
    let reg = register(app, "+8613800138000", "tenant-pass-1").await;
    assert_eq!(reg["tenant"]["status"], "pending");

    let data = app.login("13800138000", "tenant-pass-1").await;
    let me = app.get("/api/v1/auth/me", Some(&bearer(&data))).await;

    me.expect(200);
    assert_eq!(me.data()["party"], json!({"type": "tenant", "id": reg["tenant"]["id"], "status": "pending"}));
    assert_eq!(me.data()["roles"][0]["code"], "tenant_admin");
});

e2e!(registering_a_taken_phone_is_409, vars = [("ATRIUM_CODE_RESEND_SECS", "0")], |app| {
    register(app, "+8613800138002", "tenant-pass-1").await;
    let code = code_for(app, "+8613800138002", "register").await;

    let r = app
        .post(
            "/api/v1/auth/register",
            json!({"target": "+8613800138002", "code": code, "password": "tenant-pass-1", "name": "B", "tenant_name": "B"}),
            None,
        )
        .await;

    r.expect(409);
});

e2e!(a_used_register_code_cannot_register_again, |app| {
    let code = code_for(app, "+8613800138003", "register").await;
    let body = json!({"target": "+8613800138003", "code": code, "password": "tenant-pass-1", "name": "B", "tenant_name": "B"});

    app.post("/api/v1/auth/register", body.clone(), None).await.expect(200);
    let again = app.post("/api/v1/auth/register", body, None).await;
    again.expect(401);
    assert_eq!(again.body["message"], "the code is wrong or expired");
});

e2e!(registration_refuses_weak_passwords_and_wrong_codes, |app| {
    let code = code_for(app, "weak@example.com", "register").await;
    app.post(
        "/api/v1/auth/register",
        json!({"target": "weak@example.com", "code": code, "password": "password123", "name": "W", "tenant_name": "W"}),
        None,
    )
    .await
    .expect_field_error("password");
    app.post(
        "/api/v1/auth/register",
        json!({"target": "weak@example.com", "code": "999999x", "password": "good-password-1", "name": "W", "tenant_name": "W"}),
        None,
    )
    .await
    .expect(401);
    // Neither attempt registered anything: the code still works.
    app.post(
        "/api/v1/auth/register",
        json!({"target": "weak@example.com", "code": code, "password": "good-password-1", "name": "W", "tenant_name": "W"}),
        None,
    )
    .await
    .expect(200);
});

e2e!(code_login_works_once, |app| {
    register(app, "c@example.com", "tenant-pass-2").await;
    let code = code_for(app, "c@example.com", "login").await;

    let first = app.post("/api/v1/auth/login", json!({"method": "code", "target": "C@Example.com", "code": code}), None).await;
    let second = app.post("/api/v1/auth/login", json!({"method": "code", "target": "c@example.com", "code": code}), None).await;

    first.expect(200);
    assert_eq!(first.data()["user"]["email"], "c@example.com");
    second.expect(401);
});

e2e!(a_wrong_code_is_401, |app| {
    register(app, "d@example.com", "tenant-pass-3").await;
    let code = code_for(app, "d@example.com", "login").await;
    let wrong = if code == "000000" { "000001" } else { "000000" };

    app.post("/api/v1/auth/login", json!({"method": "code", "target": "d@example.com", "code": wrong}), None).await.expect(401);
});

e2e!(reset_password_ends_every_session_and_swaps_the_password, |app| {
    register(app, "e@example.com", "tenant-pass-4").await;
    let old = bearer(&app.login("e@example.com", "tenant-pass-4").await);
    let code = code_for(app, "e@example.com", "reset_password").await;

    app.post("/api/v1/auth/reset-password", json!({"target": "e@example.com", "code": code, "new_password": "brand-new-pass-5"}), None)
        .await
        .expect(200);

    app.get("/api/v1/auth/me", Some(&old)).await.expect(401);
    app.post("/api/v1/auth/login", json!({"method": "password", "username": "e@example.com", "password": "tenant-pass-4"}), None)
        .await
        .expect(401);
    app.login("e@example.com", "brand-new-pass-5").await;
});

e2e!(an_address_with_a_hundred_failed_logins_is_refused_for_the_hour, |app| {
    for i in 0..100 {
        app.post("/api/v1/auth/login", json!({"method": "password", "username": format!("ghost{i}"), "password": "whatever-pass"}), None)
            .await
            .expect(401);
    }

    let r = app.post("/api/v1/auth/login", json!({"method": "password", "username": "admin", "password": app.admin_password}), None).await;

    r.expect(429);
    assert!(r.header("retry-after").is_some());
});

async fn scan(app: &TestApp, qr_url: &str, unionid: &str) -> Value {
    let r = app.post("/sandbox/control/scan", json!({"qr_url": qr_url, "openid": format!("o-{unionid}"), "unionid": unionid}), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body.clone()
}

e2e!(qr_login_runs_through_the_sandbox_platform, |app| {
    let admin = app.admin_token().await;

    // 1. An unbound account scans: the ticket is left unbound and cannot log in.
    let qr = app.get("/api/v1/auth/chat-qr", None).await;
    qr.expect(200);
    let ticket = qr.data()["ticket"].as_str().unwrap().to_owned();
    let qr_url = qr.data()["qr_url"].as_str().unwrap().to_owned();
    assert!(qr_url.contains("/connect/qrconnect?appid="));
    assert_eq!(app.get(&format!("/api/v1/auth/chat-qr/status?ticket={ticket}"), None).await.data()["status"], "pending");
    let scanned = scan(app, &qr_url, "union-1").await;
    assert_eq!(scanned["callback_body"]["data"]["status"], "unbound");
    app.post("/api/v1/auth/login", json!({"method": "qr", "ticket": ticket}), None).await.expect(401);

    // 2. The logged-in admin binds that account with the ticket.
    app.post("/api/v1/auth/chat-bind", json!({"ticket": ticket}), Some(&admin)).await.expect(200);
    app.post("/api/v1/auth/chat-bind", json!({"ticket": ticket}), Some(&admin)).await.expect(409);

    // 3. A new scan by the bound account confirms, and the ticket logs in once.
    let qr = app.get("/api/v1/auth/chat-qr", None).await;
    let ticket = qr.data()["ticket"].as_str().unwrap().to_owned();
    let scanned = scan(app, qr.data()["qr_url"].as_str().unwrap(), "union-1").await;
    assert_eq!(scanned["callback_body"]["data"]["status"], "confirmed");
    let login = app.post("/api/v1/auth/login", json!({"method": "qr", "ticket": ticket}), None).await;
    login.expect(200);
    assert_eq!(login.data()["user"]["username"], "admin");
    assert_eq!(login.data()["user"]["chat_bound"], true);
    app.post("/api/v1/auth/login", json!({"method": "qr", "ticket": ticket}), None).await.expect(401);
    assert_eq!(app.get(&format!("/api/v1/auth/chat-qr/status?ticket={ticket}"), None).await.data()["status"], "expired");
});

e2e!(a_replayed_platform_code_or_second_scan_is_refused, |app| {
    let qr = app.get("/api/v1/auth/chat-qr", None).await;
    let ticket = qr.data()["ticket"].as_str().unwrap().to_owned();
    let scanned = scan(app, qr.data()["qr_url"].as_str().unwrap(), "union-2").await;
    let code = scanned["code"].as_str().unwrap();

    let replay = app.get(&format!("/api/v1/auth/chat-qr/callback?code={code}&state={ticket}"), None).await;
    replay.expect(409);
    // A second account scanning the same ticket is refused too, and the ticket keeps its first scan.
    let second = scan(app, qr.data()["qr_url"].as_str().unwrap(), "union-3").await;
    assert_eq!(second["callback_body"]["code"], 409, "{second}");
    assert_eq!(app.get(&format!("/api/v1/auth/chat-qr/status?ticket={ticket}"), None).await.data()["status"], "unbound");
    let bad_code = app
        .get(
            &format!(
                "/api/v1/auth/chat-qr/callback?code=nope&state={}",
                app.get("/api/v1/auth/chat-qr", None).await.data()["ticket"].as_str().unwrap()
            ),
            None,
        )
        .await;
    bad_code.expect(401);
    app.get("/api/v1/auth/chat-qr/status?ticket=unknown", None).await.expect(404);
});

// Each instance serves a session from its cache for a while (ATRIUM_PRINCIPAL_CACHE_MS, at most
// a second): a logout on one is refused by the other within that second. Every request sent a
// second or more after the logout must be refused; those sent before may still be served.
e2e!(a_logout_on_one_instance_is_refused_by_another_within_a_second, |a| {
    use std::time::{Duration, Instant};
    let b = a.second_instance().await;
    let token = a.admin_token().await;
    // Warm the other instance's cache with the live session.
    b.get("/api/v1/auth/me", Some(&token)).await.expect(200);

    a.post("/api/v1/auth/logout", json!({}), Some(&token)).await.expect(200);
    let logged_out = Instant::now();

    loop {
        let sent = logged_out.elapsed();
        let r = b.get("/api/v1/auth/me", Some(&token)).await;
        if r.status == 401 {
            r.expect(401);
            break;
        }
        r.expect(200);
        assert!(sent < Duration::from_secs(1), "the other instance still served the session {sent:?} after the logout");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // And it stays refused.
    b.get("/api/v1/auth/me", Some(&token)).await.expect(401);
    b.stop().await;
});
