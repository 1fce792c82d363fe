//! The document interface (`/api/docs/`) and its management routes (`/api/v1/doc-*`) over
//! HTTP: every success and failure, on SQLite and PostgreSQL.
#![allow(clippy::unwrap_used)]
use atrium_e2e::serde_json::{Value, json};
use atrium_e2e::{Resp, TestApp, e2e};
use diesel::connection::SimpleConnection;

// ----- helpers ----------------------------------------------------------------------------

/// Asserts the document interface's envelope: code 0 and "success" on 200; otherwise the
/// HTTP status as code, a sentence as message and data null.
#[track_caller]
fn expect_docs(r: &Resp, status: u16) {
    assert_eq!(r.status, status, "unexpected status; body: {}", r.body);
    let message = r.body["message"].as_str().unwrap_or_else(|| panic!("no message in {}", r.body));
    if status == 200 {
        assert_eq!(r.body["code"], 0, "{}", r.body);
        assert_eq!(message, "success");
        assert!(r.body["data"].is_object(), "{}", r.body);
    } else {
        assert_eq!(r.body["code"], status, "{}", r.body);
        assert_ne!(message, "success");
        assert!(!message.is_empty());
        assert!(r.body["data"].is_null(), "data must be null on error: {}", r.body);
    }
}

fn with_token(req: reqwest::RequestBuilder, token: &str) -> reqwest::RequestBuilder {
    req.header("authorization", format!("Token {token}"))
}

async fn post_doc(app: &TestApp, token: &str, body: Value) -> Resp {
    app.send(with_token(app.client.post(app.url("/api/docs/")).json(&body), token)).await
}

async fn get_doc(app: &TestApp, token: &str, path: &str) -> Resp {
    app.send(with_token(app.client.get(app.url(path)), token)).await
}

/// Creates a project through /api/v1; returns its id.
async fn project(app: &TestApp, bearer: &str, name: &str) -> i64 {
    let r = app.post("/api/v1/doc-projects", json!({"name": name}), Some(bearer)).await;
    r.expect(200);
    r.data()["id"].as_i64().unwrap()
}

/// Issues a token through /api/v1; returns its value and id.
async fn token(app: &TestApp, bearer: &str, body: Value) -> (String, i64) {
    let r = app.post("/api/v1/doc-tokens", body, Some(bearer)).await;
    r.expect(200);
    (r.data()["token"].as_str().unwrap().to_owned(), r.data()["id"].as_i64().unwrap())
}

/// The platform admin's bearer token, one project and a token for all platform projects.
async fn platform_setup(app: &TestApp) -> (String, i64, String) {
    let admin = app.admin_token().await;
    let p = project(app, &admin, "Handbook").await;
    let (t, _) = token(app, &admin, json!({"name": "writer"})).await;
    (admin, p, t)
}

/// A self-registered tenant admin (who holds `doc:*`); returns its user id.
async fn register_tenant_admin(app: &TestApp, email: &str) -> i64 {
    let r = app.post("/api/v1/auth/send-code", json!({"target": email, "purpose": "register"}), None).await;
    r.expect(200);
    let code = r.data()["debug_code"].as_str().unwrap().to_owned();
    let r = app
        .post(
            "/api/v1/auth/register",
            json!({"target": email, "code": code, "password": "Docs-pass-2026", "name": "Ann", "tenant_name": "Acme Ltd"}),
            None,
        )
        .await;
    r.expect(200);
    r.data()["user"]["id"].as_i64().unwrap()
}

async fn login(app: &TestApp, email: &str) -> String {
    app.login(email, "Docs-pass-2026").await["access_token"].as_str().unwrap().to_owned()
}

/// Runs SQL directly on the test database (to arrange what no route offers).
fn sql(app: &TestApp, statements: &str) {
    let mut conn = app.running.db.conn().expect("connection");
    conn.batch_execute(statements).expect("SQL runs");
}

/// Gives a user only the permissions listed, through a custom tenant role.
fn restrict_to(app: &TestApp, user_id: i64, permissions: &str) {
    sql(
        app,
        &format!(
            "INSERT INTO roles (code, name, party_type, builtin, permissions, created_at, updated_at) \
             VALUES ('limited_{user_id}', 'Limited', 'tenant', FALSE, '{permissions}', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP); \
             UPDATE user_roles SET role_id = (SELECT id FROM roles WHERE code = 'limited_{user_id}') WHERE user_id = {user_id};"
        ),
    );
}

// ----- POST /api/docs/ ----------------------------------------------------------------------

e2e!(creating_a_document_answers_code_0_with_id_name_and_project_id, |app| {
    let (_, p, t) = platform_setup(app).await;

    let r = post_doc(app, &t, json!({"project": p, "name": "Getting started", "content": "# Hello\n\nWorld"})).await;

    expect_docs(&r, 200);
    let data = r.data().as_object().unwrap();
    assert_eq!(data.len(), 3, "data holds exactly id, name and project_id: {}", r.body);
    assert!(data["id"].as_i64().is_some_and(|id| id > 0));
    assert_eq!(data["name"], "Getting started");
    assert_eq!(data["project_id"], p);
});

e2e!(the_route_answers_with_and_without_the_trailing_slash, |app| {
    let (_, p, t) = platform_setup(app).await;

    let without = app.send(with_token(app.client.post(app.url("/api/docs")).json(&json!({"project": p, "name": "A"})), &t)).await;
    let tree = get_doc(app, &t, &format!("/api/docs?project={p}")).await;

    expect_docs(&without, 200);
    expect_docs(&tree, 200);
    assert_eq!(tree.data()["total"], 1);
});

e2e!(a_document_reads_back_with_content_parent_sort_and_timestamps, |app| {
    let (_, p, t) = platform_setup(app).await;
    let root = post_doc(app, &t, json!({"project": p, "name": "Root"})).await.data()["id"].as_i64().unwrap();
    let child = post_doc(app, &t, json!({"project": p, "name": "Child", "content": "**bold**", "parent": root, "sort": 7})).await;
    let child_id = child.data()["id"].as_i64().unwrap();

    let r = get_doc(app, &t, &format!("/api/docs/{child_id}")).await;
    let root_doc = get_doc(app, &t, &format!("/api/docs/{root}")).await;

    expect_docs(&r, 200);
    let d = r.data();
    assert_eq!((d["id"].as_i64(), d["project_id"].as_i64()), (Some(child_id), Some(p)));
    assert_eq!(d["name"], "Child");
    assert_eq!(d["content"], "**bold**");
    assert_eq!(d["parent"], root);
    assert_eq!(d["sort"], 7);
    assert!(d["created_at"].as_str().is_some_and(|s| s.ends_with('Z')), "RFC 3339 UTC: {d}");
    assert!(d["updated_at"].is_string());
    // Defaults: no parent, sort 0, empty content.
    assert_eq!((&root_doc.data()["parent"], &root_doc.data()["sort"], &root_doc.data()["content"]), (&Value::Null, &json!(0), &json!("")));
});

e2e!(a_null_parent_makes_a_root, |app| {
    let (_, p, t) = platform_setup(app).await;

    let r = post_doc(app, &t, json!({"project": p, "name": "Root", "parent": null, "content": null, "sort": -3})).await;

    expect_docs(&r, 200);
    let d = get_doc(app, &t, &format!("/api/docs/{}", r.data()["id"])).await;
    assert_eq!(d.data()["parent"], Value::Null);
    assert_eq!(d.data()["sort"], -3);
});

e2e!(the_tree_orders_roots_and_children_by_sort_then_id, |app| {
    let (_, p, t) = platform_setup(app).await;
    let id = |r: Resp| r.data()["id"].as_i64().unwrap();
    let b = id(post_doc(app, &t, json!({"project": p, "name": "b", "sort": 2})).await);
    let a = id(post_doc(app, &t, json!({"project": p, "name": "a", "sort": 1})).await);
    let c = id(post_doc(app, &t, json!({"project": p, "name": "c", "sort": 2})).await);
    let b2 = id(post_doc(app, &t, json!({"project": p, "name": "b2", "parent": b, "sort": 5})).await);
    let b1 = id(post_doc(app, &t, json!({"project": p, "name": "b1", "parent": b, "sort": 0})).await);
    let b3 = id(post_doc(app, &t, json!({"project": p, "name": "b3", "parent": b, "sort": 5})).await);
    let b1x = id(post_doc(app, &t, json!({"project": p, "name": "b1x", "parent": b1, "content": "deep"})).await);

    let r = get_doc(app, &t, &format!("/api/docs/?project={p}")).await;

    expect_docs(&r, 200);
    assert_eq!(r.data()["project_id"], p);
    assert_eq!(r.data()["total"], 7);
    let roots = r.data()["documents"].as_array().unwrap();
    let ids = |nodes: &Value| nodes.as_array().unwrap().iter().map(|n| n["id"].as_i64().unwrap()).collect::<Vec<_>>();
    assert_eq!(ids(&r.data()["documents"]), vec![a, b, c], "roots by sort, then id");
    assert_eq!(ids(&roots[1]["children"]), vec![b1, b2, b3], "children by sort, then id");
    assert_eq!(ids(&roots[1]["children"][0]["children"]), vec![b1x]);
    assert_eq!(roots[1]["children"][0]["parent"], b);
    assert!(roots[1]["children"][0]["children"][0].get("content").is_none(), "the listing leaves content out");
    assert_eq!(roots[0]["children"], json!([]));
});

e2e!(an_unknown_project_is_404, |app| {
    let (_, _, t) = platform_setup(app).await;

    let create = post_doc(app, &t, json!({"project": 999_999, "name": "A"})).await;
    let tree = get_doc(app, &t, "/api/docs/?project=999999").await;
    let doc = get_doc(app, &t, "/api/docs/999999").await;

    expect_docs(&create, 404);
    expect_docs(&tree, 404);
    expect_docs(&doc, 404);
});

e2e!(a_parent_in_another_project_or_missing_is_404, |app| {
    let (admin, p, t) = platform_setup(app).await;
    let other = project(app, &admin, "Other").await;
    let foreign = post_doc(app, &t, json!({"project": other, "name": "Elsewhere"})).await.data()["id"].as_i64().unwrap();

    let cross = post_doc(app, &t, json!({"project": p, "name": "A", "parent": foreign})).await;
    let missing = post_doc(app, &t, json!({"project": p, "name": "A", "parent": 999_999})).await;

    // The parent a field names does not exist for this project: 404, as for a path id.
    expect_docs(&cross, 404);
    expect_docs(&missing, 404);
    assert!(cross.body["message"].as_str().unwrap().starts_with("parent:"), "{}", cross.body);
    assert_eq!(get_doc(app, &t, &format!("/api/docs/?project={p}")).await.data()["total"], 0, "nothing was created");
});

e2e!(an_empty_or_over_long_name_is_400_naming_the_field_in_the_message, |app| {
    let (_, p, t) = platform_setup(app).await;

    let longest = post_doc(app, &t, json!({"project": p, "name": "é".repeat(255)})).await;
    let too_long = post_doc(app, &t, json!({"project": p, "name": "x".repeat(256)})).await;
    let empty = post_doc(app, &t, json!({"project": p, "name": ""})).await;
    let blank = post_doc(app, &t, json!({"project": p, "name": "   "})).await;

    expect_docs(&longest, 200);
    for r in [&too_long, &empty, &blank] {
        expect_docs(r, 400);
        assert!(r.body["message"].as_str().unwrap().starts_with("name:"), "{}", r.body);
    }
});

e2e!(oversized_content_is_413, |app| {
    let (_, p, t) = platform_setup(app).await;
    const MIB: usize = 1024 * 1024;

    let at_limit = post_doc(app, &t, json!({"project": p, "name": "big", "content": "a".repeat(MIB)})).await;
    let over = post_doc(app, &t, json!({"project": p, "name": "bigger", "content": "a".repeat(MIB + 1)})).await;
    let huge = post_doc(app, &t, json!({"project": p, "name": "huge", "content": "a".repeat(3 * MIB)})).await;

    expect_docs(&at_limit, 200);
    expect_docs(&over, 413);
    expect_docs(&huge, 413);
    let back = get_doc(app, &t, &format!("/api/docs/{}", at_limit.data()["id"])).await;
    assert_eq!(back.data()["content"].as_str().map(str::len), Some(MIB));
});

e2e!(malformed_json_unknown_fields_and_wrong_types_are_400_with_data_null, |app| {
    let (_, p, t) = platform_setup(app).await;
    let raw =
        |body: &'static str| with_token(app.client.post(app.url("/api/docs/")).header("content-type", "application/json").body(body), &t);

    let malformed = app.send(raw("{\"project\": 1, \"name\":")).await;
    let unknown = post_doc(app, &t, json!({"project": p, "name": "A", "author": "me"})).await;
    let wrong_type = post_doc(app, &t, json!({"project": "one", "name": "A"})).await;
    let missing = post_doc(app, &t, json!({"project": p})).await;
    let not_json = app.send(with_token(app.client.post(app.url("/api/docs/")).header("content-type", "text/plain").body("hi"), &t)).await;
    let empty = app.send(raw("")).await;

    for r in [&malformed, &unknown, &wrong_type, &missing, &not_json, &empty] {
        expect_docs(r, 400);
    }
    assert!(unknown.body["message"].as_str().unwrap().contains("author"), "{}", unknown.body);
    assert!(wrong_type.body["message"].as_str().unwrap().starts_with("project:"), "{}", wrong_type.body);
    assert!(missing.body["message"].as_str().unwrap().contains("name"), "{}", missing.body);
});

e2e!(framework_errors_on_the_docs_routes_are_docs_envelopes, |app| {
    let (_, _, t) = platform_setup(app).await;

    let wrong_method = app.send(with_token(app.client.delete(app.url("/api/docs/")), &t)).await;
    let bad_id = get_doc(app, &t, "/api/docs/abc").await;
    let no_route = get_doc(app, &t, "/api/docs/1/children").await;
    let no_project = get_doc(app, &t, "/api/docs/").await;
    let bad_project = get_doc(app, &t, "/api/docs/?project=abc").await;

    expect_docs(&wrong_method, 405);
    expect_docs(&bad_id, 404);
    expect_docs(&no_route, 404);
    expect_docs(&no_project, 400);
    expect_docs(&bad_project, 400);
});

// ----- tokens on /api/docs/ -----------------------------------------------------------------

e2e!(a_missing_unknown_or_malformed_token_is_401, |app| {
    let (_, p, t) = platform_setup(app).await;
    let body = json!({"project": p, "name": "A"});

    let none = app.send(app.client.post(app.url("/api/docs/")).json(&body)).await;
    let unknown = post_doc(app, &format!("atd_{}", "A".repeat(43)), body.clone()).await;
    let malformed = post_doc(app, "hunter2", body.clone()).await;
    let no_scheme = app.send(app.client.post(app.url("/api/docs/")).header("authorization", t.clone()).json(&body)).await;

    for r in [&none, &unknown, &malformed, &no_scheme] {
        expect_docs(r, 401);
        assert_eq!(r.header("www-authenticate"), Some("Token"));
    }
});

e2e!(a_bearer_token_is_401_on_the_docs_interface, |app| {
    let (admin, p, _) = platform_setup(app).await;

    let create = app.post("/api/docs/", json!({"project": p, "name": "A"}), Some(&admin)).await;
    let read = app.get(&format!("/api/docs/?project={p}"), Some(&admin)).await;

    expect_docs(&create, 401);
    expect_docs(&read, 401);
});

e2e!(a_docs_token_is_401_on_the_main_interface, |app| {
    let (_, _, t) = platform_setup(app).await;

    let as_token = app.send(with_token(app.client.get(app.url("/api/v1/doc-projects")), &t)).await;
    let as_bearer = app.get("/api/v1/doc-projects", Some(&t)).await;

    as_token.expect(401);
    as_bearer.expect(401);
});

e2e!(a_revoked_token_is_401_from_the_next_request_on, |app| {
    let (admin, p, _) = platform_setup(app).await;
    let (t, id) = token(app, &admin, json!({"name": "short-lived"})).await;
    expect_docs(&post_doc(app, &t, json!({"project": p, "name": "before"})).await, 200);

    let revoked = app.delete(&format!("/api/v1/doc-tokens/{id}"), Some(&admin)).await;
    let after = post_doc(app, &t, json!({"project": p, "name": "after"})).await;
    let read_after = get_doc(app, &t, &format!("/api/docs/?project={p}")).await;

    revoked.expect(200);
    assert_eq!(revoked.data()["status"], "revoked");
    assert!(revoked.data()["revoked_at"].is_string());
    expect_docs(&after, 401);
    expect_docs(&read_after, 401);
    assert!(after.body["message"].as_str().unwrap().contains("revoked"));
    // The issue and the revocation are in the audit trail, by the admin; the value is not.
    let trail = app.get(&format!("/api/v1/audit-logs?target_type=doc_token&target_id={id}"), Some(&admin)).await;
    trail.expect(200);
    let actions: Vec<&str> = trail.data()["items"].as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert_eq!(actions, ["doc_token.revoke", "doc_token.create"], "{}", trail.body);
    assert_eq!(trail.data()["items"][1]["after"]["name"], "short-lived");
    assert!(!trail.body.to_string().contains(&t), "the token's value is not in the trail");
    let projects =
        app.get(&format!("/api/v1/audit-logs?target_type=doc_project&target_id={p}&action=doc_project.create"), Some(&admin)).await;
    projects.expect(200);
    assert_eq!(projects.data()["items"].as_array().unwrap().len(), 1, "{}", projects.body);
});

e2e!(an_expired_token_is_401, |app| {
    let (admin, p, _) = platform_setup(app).await;
    let expires = chrono::Utc::now() + chrono::Duration::seconds(3);
    let (t, _) = token(app, &admin, json!({"name": "brief", "expires_at": expires.to_rfc3339()})).await;
    expect_docs(&post_doc(app, &t, json!({"project": p, "name": "in time"})).await, 200);

    // Time must pass for this one: wait until the expiry, then until the server refuses the
    // token (it may keep the expiry to the second).
    tokio::time::sleep((expires - chrono::Utc::now()).to_std().unwrap_or_default()).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let read = get_doc(app, &t, &format!("/api/docs/?project={p}")).await;
        if read.status == 401 {
            break;
        }
        expect_docs(&read, 200);
        assert!(std::time::Instant::now() < deadline, "the token still works 5 s after it expired");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let late = post_doc(app, &t, json!({"project": p, "name": "too late"})).await;

    expect_docs(&late, 401);
    assert!(late.body["message"].as_str().unwrap().contains("expired"));
    let listed = app.get("/api/v1/doc-tokens", Some(&admin)).await;
    assert!(listed.data()["items"].as_array().unwrap().iter().any(|t| t["name"] == "brief" && t["status"] == "expired"));
});

e2e!(a_token_limited_to_another_project_is_403, |app| {
    let (admin, p, open) = platform_setup(app).await;
    let other = project(app, &admin, "Other").await;
    let (limited, _) = token(app, &admin, json!({"name": "only-other", "project_ids": [other]})).await;
    let in_p = post_doc(app, &open, json!({"project": p, "name": "Existing"})).await.data()["id"].as_i64().unwrap();

    let create = post_doc(app, &limited, json!({"project": p, "name": "A"})).await;
    let read = get_doc(app, &limited, &format!("/api/docs/{in_p}")).await;
    let tree = get_doc(app, &limited, &format!("/api/docs/?project={p}")).await;
    let allowed = post_doc(app, &limited, json!({"project": other, "name": "B"})).await;

    expect_docs(&create, 403);
    expect_docs(&read, 403);
    expect_docs(&tree, 403);
    expect_docs(&allowed, 200);
});

e2e!(another_partys_project_and_documents_are_404, |app| {
    let (_, platform_project, platform_token) = platform_setup(app).await;
    let platform_doc = post_doc(app, &platform_token, json!({"project": platform_project, "name": "P"})).await.data()["id"].clone();
    register_tenant_admin(app, "ann@acme.test").await;
    let tenant = login(app, "ann@acme.test").await;
    let tenant_project = project(app, &tenant, "Acme docs").await;
    let (tenant_token, _) = token(app, &tenant, json!({"name": "acme"})).await;

    let platform_into_tenant = post_doc(app, &platform_token, json!({"project": tenant_project, "name": "X"})).await;
    let tenant_into_platform = post_doc(app, &tenant_token, json!({"project": platform_project, "name": "X"})).await;
    let tenant_reads_platform_doc = get_doc(app, &tenant_token, &format!("/api/docs/{platform_doc}")).await;
    let tenant_reads_platform_tree = get_doc(app, &tenant_token, &format!("/api/docs/?project={platform_project}")).await;
    let own = post_doc(app, &tenant_token, json!({"project": tenant_project, "name": "Mine"})).await;

    for r in [&platform_into_tenant, &tenant_into_platform, &tenant_reads_platform_doc, &tenant_reads_platform_tree] {
        expect_docs(r, 404);
    }
    expect_docs(&own, 200);
    assert_eq!(
        platform_into_tenant.body["message"],
        post_doc(app, &platform_token, json!({"project": 999_999, "name": "X"})).await.body["message"],
        "another party's project answers exactly like a missing one"
    );
});

// ----- /api/v1 management -------------------------------------------------------------------

e2e!(projects_are_created_listed_paginated_and_read, |app| {
    let admin = app.admin_token().await;
    let ids: Vec<i64> = {
        let mut v = Vec::new();
        for n in 0..3 {
            v.push(project(app, &admin, &format!("Project {n}")).await);
        }
        v
    };

    let first = app.get("/api/v1/doc-projects?page=1&page_size=2", Some(&admin)).await;
    let second = app.get("/api/v1/doc-projects?page=2&page_size=2", Some(&admin)).await;
    let one = app.get(&format!("/api/v1/doc-projects/{}", ids[1]), Some(&admin)).await;
    let missing = app.get("/api/v1/doc-projects/999999", Some(&admin)).await;
    let too_big = app.get("/api/v1/doc-projects?page_size=101", Some(&admin)).await;
    let bad_name = app.post("/api/v1/doc-projects", json!({"name": " "}), Some(&admin)).await;

    first.expect(200);
    assert_eq!(
        (first.data()["total"].as_i64(), first.data()["page"].as_i64(), first.data()["page_size"].as_i64()),
        (Some(3), Some(1), Some(2))
    );
    assert_eq!(first.data()["items"][0]["id"], ids[0]);
    assert_eq!(first.data()["items"][0]["party"], json!({"type": "platform", "id": null}));
    assert_eq!(second.data()["items"].as_array().unwrap().len(), 1);
    one.expect(200);
    assert_eq!(one.data()["name"], "Project 1");
    missing.expect(404);
    too_big.expect_field_error("page_size");
    bad_name.expect_field_error("name");
});

e2e!(a_token_is_shown_once_and_never_listed, |app| {
    let admin = app.admin_token().await;
    let p = project(app, &admin, "Handbook").await;

    let created = app.post("/api/v1/doc-tokens", json!({"name": "ci", "project_ids": [p]}), Some(&admin)).await;
    let listed = app.get("/api/v1/doc-tokens", Some(&admin)).await;

    created.expect(200);
    let value = created.data()["token"].as_str().unwrap();
    assert!(value.starts_with("atd_") && value.len() >= 47, "{value}");
    assert_eq!(created.data()["project_ids"], json!([p]));
    assert_eq!(created.data()["status"], "active");
    assert_eq!(created.data()["expires_at"], Value::Null);
    listed.expect(200);
    assert_eq!(listed.data()["total"], 1);
    assert_eq!(listed.data()["items"][0]["name"], "ci");
    assert!(listed.data()["items"][0].get("token").is_none());
    assert!(!listed.body.to_string().contains(value), "a listing never shows a token value");
});

e2e!(a_token_records_when_it_was_last_used, |app| {
    let (admin, p, t) = platform_setup(app).await;
    let before = app.get("/api/v1/doc-tokens", Some(&admin)).await;

    post_doc(app, &t, json!({"project": p, "name": "A"})).await;
    let after = app.get("/api/v1/doc-tokens", Some(&admin)).await;

    assert_eq!(before.data()["items"][0]["last_used_at"], Value::Null);
    assert!(after.data()["items"][0]["last_used_at"].is_string(), "{}", after.body);
});

e2e!(a_token_can_only_be_limited_to_existing_projects_of_its_party, |app| {
    let admin = app.admin_token().await;
    let platform_project = project(app, &admin, "Platform").await;
    register_tenant_admin(app, "ann@acme.test").await;
    let tenant = login(app, "ann@acme.test").await;

    let foreign = app.post("/api/v1/doc-tokens", json!({"name": "x", "project_ids": [platform_project]}), Some(&tenant)).await;
    let missing = app.post("/api/v1/doc-tokens", json!({"name": "x", "project_ids": [999_999]}), Some(&admin)).await;
    let empty = app.post("/api/v1/doc-tokens", json!({"name": "x", "project_ids": []}), Some(&admin)).await;
    let past = app.post("/api/v1/doc-tokens", json!({"name": "x", "expires_at": "2001-01-01T00:00:00Z"}), Some(&admin)).await;
    let unknown_field = app.post("/api/v1/doc-tokens", json!({"name": "x", "scopes": ["all"]}), Some(&admin)).await;

    foreign.expect(404);
    missing.expect(404);
    empty.expect_field_error("project_ids");
    past.expect_field_error("expires_at");
    unknown_field.expect_field_error("scopes");
});

e2e!(each_party_sees_the_projects_and_tokens_of_its_scope, |app| {
    let (admin, platform_project, _) = platform_setup(app).await;
    let (_, platform_token_id) = token(app, &admin, json!({"name": "platform-2"})).await;
    register_tenant_admin(app, "ann@acme.test").await;
    let tenant = login(app, "ann@acme.test").await;
    let tenant_project = project(app, &tenant, "Acme docs").await;
    token(app, &tenant, json!({"name": "acme"})).await;

    let tenant_projects = app.get("/api/v1/doc-projects", Some(&tenant)).await;
    let tenant_tokens = app.get("/api/v1/doc-tokens", Some(&tenant)).await;
    let platform_projects = app.get("/api/v1/doc-projects", Some(&admin)).await;
    let peek = app.get(&format!("/api/v1/doc-projects/{platform_project}"), Some(&tenant)).await;
    let revoke_foreign = app.delete(&format!("/api/v1/doc-tokens/{platform_token_id}"), Some(&tenant)).await;

    tenant_projects.expect(200);
    assert_eq!(tenant_projects.data()["total"], 1);
    assert_eq!(tenant_projects.data()["items"][0]["id"], tenant_project);
    assert_eq!(tenant_projects.data()["items"][0]["party"]["type"], "tenant");
    assert_eq!(tenant_tokens.data()["total"], 1);
    assert_eq!(tenant_tokens.data()["items"][0]["name"], "acme");
    assert_eq!(platform_projects.data()["total"], 2, "platform users see every party's projects (docs/documents-api.md)");
    peek.expect(404);
    revoke_foreign.expect(404);
});

e2e!(management_routes_need_doc_read_and_doc_manage, |app| {
    let admin = app.admin_token().await;
    let reader_id = register_tenant_admin(app, "reader@acme.test").await;
    restrict_to(app, reader_id, r#"["doc:read"]"#);
    let reader = login(app, "reader@acme.test").await;
    let viewer_id = register_tenant_admin(app, "viewer@acme.test").await;
    restrict_to(app, viewer_id, r#"["user:read"]"#);
    let viewer = login(app, "viewer@acme.test").await;
    let (_, token_id) = token(app, &admin, json!({"name": "x"})).await;

    let reader_lists = app.get("/api/v1/doc-projects", Some(&reader)).await;
    let reader_lists_tokens = app.get("/api/v1/doc-tokens", Some(&reader)).await;
    let reader_creates = app.post("/api/v1/doc-projects", json!({"name": "P"}), Some(&reader)).await;
    let reader_issues = app.post("/api/v1/doc-tokens", json!({"name": "t"}), Some(&reader)).await;
    let reader_revokes = app.delete(&format!("/api/v1/doc-tokens/{token_id}"), Some(&reader)).await;
    let viewer_lists = app.get("/api/v1/doc-projects", Some(&viewer)).await;
    let viewer_reads = app.get("/api/v1/doc-projects/1", Some(&viewer)).await;
    let anonymous = app.get("/api/v1/doc-projects", None).await;

    reader_lists.expect(200);
    reader_lists_tokens.expect(200);
    reader_creates.expect(403);
    reader_issues.expect(403);
    reader_revokes.expect(403);
    viewer_lists.expect(403);
    viewer_reads.expect(403);
    anonymous.expect(401);
});

e2e!(revoking_twice_keeps_the_first_revocation, |app| {
    let admin = app.admin_token().await;
    let (_, id) = token(app, &admin, json!({"name": "x"})).await;

    let first = app.delete(&format!("/api/v1/doc-tokens/{id}"), Some(&admin)).await;
    let second = app.delete(&format!("/api/v1/doc-tokens/{id}"), Some(&admin)).await;
    let missing = app.delete("/api/v1/doc-tokens/999999", Some(&admin)).await;

    first.expect(200);
    second.expect(200);
    assert_eq!(first.data()["revoked_at"], second.data()["revoked_at"]);
    missing.expect(404);
});

e2e!(the_openapi_document_describes_the_document_routes, |app| {
    let r = app.get("/api/v1/openapi.json", None).await;

    assert_eq!(r.status, 200);
    let paths = &r.body["paths"];
    for (path, method) in [
        ("/api/docs/", "post"),
        ("/api/docs/", "get"),
        ("/api/docs/{id}", "get"),
        ("/api/v1/doc-projects", "get"),
        ("/api/v1/doc-projects", "post"),
        ("/api/v1/doc-projects/{id}", "get"),
        ("/api/v1/doc-tokens", "get"),
        ("/api/v1/doc-tokens", "post"),
        ("/api/v1/doc-tokens/{id}", "delete"),
    ] {
        assert!(paths[path][method].is_object(), "{method} {path} missing from the OpenAPI document");
    }
    assert_eq!(paths["/api/docs/"]["post"]["security"], json!([{"docs_token": []}]));
    assert_eq!(paths["/api/v1/doc-tokens"]["post"]["security"], json!([{"bearer": ["doc:manage"]}]));
    assert_eq!(paths["/api/v1/doc-tokens"]["post"]["x-permission"], "doc:manage");
    assert!(r.body["components"]["securitySchemes"]["docs_token"].is_object());
});

e2e!(a_partner_sees_its_tenants_projects_and_another_partner_does_not, |app| {
    let org = app.org().await;
    let tenant_project = project(app, &org.t1_admin, "T1 docs").await;
    let (_, tenant_token) = token(app, &org.t1_admin, json!({"name": "t1"})).await;

    let p1_sees = app.get(&format!("/api/v1/doc-projects/{tenant_project}"), Some(&org.p1_admin)).await;
    let p1_list = app.get("/api/v1/doc-tokens", Some(&org.p1_admin)).await;
    let p2_sees = app.get(&format!("/api/v1/doc-projects/{tenant_project}"), Some(&org.p2_admin)).await;
    let p2_revokes = app.delete(&format!("/api/v1/doc-tokens/{tenant_token}"), Some(&org.p2_admin)).await;
    let t2_list = app.get("/api/v1/doc-projects", Some(&org.t2_admin)).await;

    p1_sees.expect(200);
    assert_eq!(p1_list.data()["total"], 1);
    p2_sees.expect(404);
    p2_revokes.expect(404);
    assert_eq!(t2_list.data()["total"], 0);
});
