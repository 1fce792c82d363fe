//! The HTTP shell: health, request ids, and envelopes for every framework error.
#![allow(clippy::unwrap_used)]
use atrium_e2e::e2e;
use atrium_e2e::serde_json::json;

e2e!(health_reports_ok_once_the_database_answers, |app| {
    let r = app.get("/healthz", None).await;
    r.expect(200);
    assert_eq!(r.data()["status"], "ok");
});

e2e!(swagger_ui_without_its_slash_redirects_to_it, |app| {
    let no_redirects = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let r = no_redirects.get(app.url("/swagger-ui")).send().await.unwrap();
    assert!(matches!(r.status().as_u16(), 301 | 308), "{}", r.status());
    assert_eq!(r.headers().get("location").and_then(|v| v.to_str().ok()), Some("/swagger-ui/"));

    let followed = app.client.get(app.url("/swagger-ui")).send().await.unwrap();
    assert_eq!(followed.status().as_u16(), 200);
    assert!(followed.url().path().starts_with("/swagger-ui/"), "{}", followed.url());
    assert!(followed.text().await.unwrap().contains("swagger"), "not the Swagger UI");
});

e2e!(an_unknown_route_is_an_envelope_404, |app| {
    let r = app.get("/api/v1/nope", None).await;
    r.expect_reason(404, "not_found");
    assert_eq!(r.body["data"], json!({"reason": "not_found"}), "nothing but the reason: {}", r.body);
});

e2e!(a_wrong_method_is_an_envelope_405, |app| {
    let r = app.send(app.client.delete(app.url("/api/v1/auth/login"))).await;
    r.expect(405);
});

e2e!(malformed_json_is_an_envelope_400, |app| {
    let r = app.send(app.client.post(app.url("/api/v1/auth/login")).header("content-type", "application/json").body("{\"method\":")).await;
    r.expect(400);
    assert!(r.body["message"].as_str().unwrap().contains("malformed JSON"));
});

e2e!(a_wrong_type_names_the_field, |app| {
    let r = app.post("/api/v1/auth/login", json!({"method": "password", "username": 5, "password": "x"}), None).await;
    r.expect_field_error("username");
});

e2e!(an_unknown_field_names_the_field, |app| {
    let r = app.post("/api/v1/auth/refresh", json!({"refresh_token": "x", "is_admin": true}), None).await;
    r.expect_field_error("is_admin");
});

e2e!(a_missing_field_names_the_field, |app| {
    let r = app.post("/api/v1/auth/send-code", json!({"target": "a@b.cn"}), None).await;
    r.expect_field_error("purpose");
});

e2e!(a_body_over_the_limit_is_an_envelope_413, |app| {
    let big = format!("{{\"refresh_token\":\"{}\"}}", "x".repeat(1024 * 1024 + 10));
    let r = app.send(app.client.post(app.url("/api/v1/auth/refresh")).header("content-type", "application/json").body(big)).await;
    r.expect(413);
});

e2e!(a_body_that_is_not_json_is_refused, |app| {
    let r = app.send(app.client.post(app.url("/api/v1/auth/refresh")).header("content-type", "text/plain").body("hello")).await;
    r.expect(400);
});

e2e!(a_bad_query_parameter_is_an_envelope_400, |app| {
    let r = app.get("/api/v1/auth/chat-qr/status", None).await;
    r.expect(400);
});

// The document types numeric parameters as JSON Schema `integer`, which `2.0` and `2e0` are;
// clients that format every number as a float send them. A fraction is refused by name.
e2e!(an_integer_query_parameter_may_be_written_as_a_number_without_a_fraction, |app| {
    let org = app.org().await;
    let plain = app.get(&format!("/api/v1/employees?tenant_id={}&page=1&page_size=20", org.t1), Some(&org.admin)).await;
    let floats = app.get(&format!("/api/v1/employees?tenant_id={}.0&page=1.0&page_size=2e1", org.t1), Some(&org.admin)).await;
    plain.expect(200);
    floats.expect(200);
    assert_eq!(floats.body, plain.body);

    let half = app.get(&format!("/api/v1/employees?tenant_id={}.5", org.t1), Some(&org.admin)).await;
    half.expect_reason(400, "invalid_input");
    assert_eq!(half.body["message"], "invalid query parameter: `tenant_id` must be an integer");
    let huge = app.get("/api/v1/employees?page=1e30", Some(&org.admin)).await;
    huge.expect_reason(400, "invalid_input");
    assert_eq!(huge.body["message"], "invalid query parameter: `page` is out of range");
});

e2e!(every_response_carries_a_request_id_and_echoes_the_clients, |app| {
    let generated = app.get("/healthz", None).await;
    let echoed = app.send(app.client.get(app.url("/api/v1/nope")).header("x-request-id", "trace-123")).await;

    assert!(generated.header("x-request-id").is_some_and(|v| v.len() >= 8));
    assert_eq!(echoed.header("x-request-id"), Some("trace-123"));
});

e2e!(the_openapi_document_lists_every_auth_route, |app| {
    let r = app.get("/api/v1/openapi.json", None).await;
    assert_eq!(r.status, 200);
    let paths = r.body["paths"].as_object().expect("paths");
    for p in [
        "/api/v1/auth/login",
        "/api/v1/auth/logout",
        "/api/v1/auth/me",
        "/api/v1/auth/send-code",
        "/api/v1/auth/chat-qr",
        "/api/v1/auth/refresh",
        "/api/v1/auth/register",
        "/api/v1/auth/reset-password",
        "/api/v1/auth/chat-qr/status",
        "/api/v1/auth/chat-qr/callback",
        "/api/v1/auth/chat-bind",
    ] {
        assert!(paths.contains_key(p), "{p} missing from the OpenAPI document");
    }
});

e2e!(the_swagger_page_is_served_without_internet, |app| {
    let page = app.send(app.client.get(app.url("/swagger-ui/"))).await;
    let script = app.send(app.client.get(app.url("/swagger-ui/swagger-ui-bundle.js"))).await;

    assert_eq!(page.status, 200);
    assert_eq!(script.status, 200, "the UI's assets are vendored into the binary");
});

e2e!(a_login_missing_a_field_of_its_method_names_it, |app| {
    let r = app.post("/api/v1/auth/login", json!({"method": "password", "username": "admin"}), None).await;
    r.expect_field_error("password");
});
