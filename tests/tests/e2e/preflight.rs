//! Before a release, over HTTP on SQLite and PostgreSQL with the sandbox playing the
//! platform: a mini-program's server domains and privacy settings (checked, then sent), the
//! platform's audit quota, an audit sped up and withdrawn, and the pre-flight check that
//! names what is missing. Tenants see and set their own only.
#![allow(clippy::unwrap_used)]
use super::releases::{APPID, OTHER_APPID, authorise, expect_blocked, new_tenant, running_audit, submit, uploaded_template};
use atrium_e2e::serde_json::{Value, json};
use atrium_e2e::{Resp, TestApp, e2e};

async fn preflight(app: &TestApp, token: &str, tenant: i64) -> Value {
    let r = app.get(&format!("/api/v1/miniprogram/preflight?tenant_id={tenant}"), Some(token)).await;
    r.expect(200);
    r.data().clone()
}

/// The names of the checks that passed (`ok`) or failed.
fn checks(view: &Value, ok: bool) -> Vec<String> {
    view["checks"].as_array().unwrap().iter().filter(|c| c["ok"] == ok).map(|c| c["name"].as_str().unwrap().to_owned()).collect()
}

async fn quota(app: &TestApp, token: &str) -> Value {
    let r = app.get("/api/v1/miniprogram/audit/quota", Some(token)).await;
    r.expect(200);
    r.data().clone()
}

async fn set_quota(app: &TestApp, rest: i64) {
    let r = app.post("/sandbox/control/quota", json!({"rest": rest}), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
}

fn privacy() -> Value {
    json!({
        "owner_setting": {"contact_email": "privacy@example.com", "notice_method": "A notice in the mini-program"},
        "setting_list": [{"privacy_key": "PhoneNumber", "privacy_text": "to confirm orders"}]
    })
}

fn domains() -> Value {
    json!({"requestdomain": ["https://api.example.com"], "wsrequestdomain": ["wss://ws.example.com"], "webviewdomain": ["https://www.example.com"]})
}

fn with_tenant(mut body: Value, tenant: i64) -> Value {
    body["tenant_id"] = json!(tenant);
    body
}

e2e!(domains_and_privacy_are_checked_set_and_then_pass_the_preflight, |app| {
    let admin = app.admin_token().await;
    let tenant = new_tenant(app, &admin, "Shop").await;

    // Not authorised: every check fails, as an answer, not an error.
    let view = preflight(app, &admin, tenant).await;
    assert_eq!(view["ok"], false);
    assert_eq!(checks(&view, true), Vec::<String>::new());
    app.get(&format!("/api/v1/miniprogram/domains?tenant_id={tenant}"), Some(&admin)).await.expect_reason(409, "miniprogram_authorization");

    authorise(app, &admin, tenant, APPID).await;
    let view = preflight(app, &admin, tenant).await;
    assert_eq!(view["ok"], false, "{view}");
    assert_eq!(checks(&view, true), ["authorized", "code_management", "category", "audit_quota"], "{view}");
    assert_eq!(checks(&view, false), ["domains", "privacy"], "{view}");

    // Bad domains: each named, nothing sent.
    let bad = json!({"tenant_id": tenant, "requestdomain": ["https://api.example.com", "http://plain.example.com", "https://10.1.2.3"], "uploaddomain": ["https://up.example.com:8443/x"]});
    let r = app.put("/api/v1/miniprogram/domains", bad, Some(&admin)).await;
    r.expect_field_error("requestdomain[1]").expect_field_error("requestdomain[2]").expect_field_error("uploaddomain[0]");
    let now = app.get(&format!("/api/v1/miniprogram/domains?tenant_id={tenant}"), Some(&admin)).await;
    now.expect(200);
    assert_eq!(now.data()["requestdomain"], json!([]), "{}", now.body);

    let r = app.put("/api/v1/miniprogram/domains", with_tenant(domains(), tenant), Some(&admin)).await;
    r.expect(200);
    let now = app.get(&format!("/api/v1/miniprogram/domains?tenant_id={tenant}"), Some(&admin)).await;
    now.expect(200);
    for list in ["requestdomain", "wsrequestdomain", "webviewdomain"] {
        assert_eq!(now.data()[list], domains()[list], "{list}: {}", now.body);
    }
    assert_eq!(now.data()["uploaddomain"], json!([]));

    // Privacy: a contact is required; then set and read back.
    let no_contact = json!({"tenant_id": tenant, "owner_setting": {"notice_method": "x"}, "setting_list": []});
    app.put("/api/v1/miniprogram/privacy", no_contact, Some(&admin)).await.expect_field_error("owner_setting");
    app.put("/api/v1/miniprogram/privacy", with_tenant(privacy(), tenant), Some(&admin)).await.expect(200);
    let now = app.get(&format!("/api/v1/miniprogram/privacy?tenant_id={tenant}"), Some(&admin)).await;
    now.expect(200);
    assert_eq!(now.data()["owner_setting"]["contact_email"], "privacy@example.com");
    assert_eq!(now.data()["setting_list"], privacy()["setting_list"]);

    let view = preflight(app, &admin, tenant).await;
    assert_eq!(view["ok"], true, "{view}");

    // Each change is in the audit trail, by its user, with the settings before and after; the
    // refused ones (nothing sent) are not.
    let trail = |action: &str| {
        let path = format!("/api/v1/audit-logs?target_type=miniprogram_settings&target_id={tenant}&action={action}");
        let admin = admin.clone();
        async move {
            let r = app.get(&path, Some(&admin)).await;
            r.expect(200);
            r.data()["items"].as_array().unwrap().clone()
        }
    };
    // The bootstrap admin is user 1.
    let me = json!(1);
    let domains_trail = trail("miniprogram.domains.update").await;
    assert_eq!(domains_trail.len(), 1, "{domains_trail:?}");
    let entry = &domains_trail[0];
    assert_eq!((entry["actor_user_id"].clone(), entry["tenant_id"].as_i64()), (me.clone(), Some(tenant)), "{entry}");
    assert_eq!(entry["before"]["requestdomain"], json!([]), "{entry}");
    assert_eq!(entry["after"]["requestdomain"], domains()["requestdomain"], "{entry}");
    let privacy_trail = trail("miniprogram.privacy.update").await;
    assert_eq!(privacy_trail.len(), 1, "{privacy_trail:?}");
    assert_eq!(privacy_trail[0]["after"]["setting_list"], privacy()["setting_list"], "{}", privacy_trail[0]);
    assert_eq!(privacy_trail[0]["actor_user_id"], me);
});

e2e!(the_quota_is_spent_by_each_audit_and_undo_does_not_give_it_back, vars = [("ATRIUM_JOB_POLL_MS", "50")], |app| {
    let admin = app.admin_token().await;
    let tenant = new_tenant(app, &admin, "Shop").await;
    let other = new_tenant(app, &admin, "Other").await;
    // The platform caller asks with any authorised mini-program; none yet.
    app.get("/api/v1/miniprogram/audit/quota", Some(&admin)).await.expect_reason(409, "miniprogram_authorization");
    authorise(app, &admin, tenant, APPID).await;
    authorise(app, &admin, other, OTHER_APPID).await;

    set_quota(app, 1).await;
    assert_eq!(quota(app, &admin).await["rest"], 1);
    let audit = running_audit(app, &admin, tenant, "1.0.0").await;
    assert_eq!(quota(app, &admin).await["rest"], 0, "the submit spent one");
    let view = preflight(app, &admin, other).await;
    assert_eq!(checks(&view, false), ["domains", "privacy", "audit_quota"], "{view}");

    // The other tenant's submit meets the used-up quota: 429, nothing recorded.
    let upload = uploaded_template(app, &admin, other, "1.0.0").await;
    let r = submit(app, &admin, upload).await;
    r.expect(429);

    // A speed-up of the running audit; then it is withdrawn, and the quota stays at 0.
    let r = app.post("/api/v1/miniprogram/audit/speedup", json!({"audit_task_id": audit}), Some(&admin)).await;
    r.expect(200);
    assert_eq!(r.data()["status"], "auditing");
    let r = app.post("/api/v1/miniprogram/audit/undo", json!({"audit_task_id": audit}), Some(&admin)).await;
    r.expect(200);
    assert_eq!(r.data()["status"], "withdrawn");
    assert_eq!(quota(app, &admin).await["rest"], 0);
    // A decided audit is neither sped up nor withdrawn again.
    let again = app.post("/api/v1/miniprogram/audit/undo", json!({"audit_task_id": audit}), Some(&admin)).await;
    assert!(expect_blocked(&again, "audit_task_id").contains("withdrawn"), "{}", again.body);
    let again = app.post("/api/v1/miniprogram/audit/speedup", json!({"audit_task_id": audit}), Some(&admin)).await;
    expect_blocked(&again, "audit_task_id");
    // Nothing runs on the platform any more: the reviewers have nothing to decide.
    let r = app.post("/sandbox/control/audit", json!({"authorizer_appid": APPID, "result": "passed"}), None).await;
    assert_eq!(r.status, 400, "{}", r.body);
});

e2e!(a_tenant_sets_and_reads_only_its_own_settings, |app| {
    let org = app.org().await;
    authorise(app, &org.admin, org.t1, APPID).await;
    authorise(app, &org.admin, org.t2, OTHER_APPID).await;

    // Tenant 1's admin, without naming its tenant.
    let r: Resp = app.put("/api/v1/miniprogram/domains", domains(), Some(&org.t1_admin)).await;
    r.expect(200);
    assert_eq!(r.data()["tenant_id"], org.t1);
    app.put("/api/v1/miniprogram/privacy", privacy(), Some(&org.t1_admin)).await.expect(200);
    assert_eq!(app.get("/api/v1/miniprogram/preflight", Some(&org.t1_admin)).await.data()["tenant_id"], org.t1);

    // Another tenant's admin and another partner's admin reach none of it.
    for token in [&org.t2_admin, &org.p2_admin] {
        for path in ["domains", "privacy", "preflight"] {
            app.get(&format!("/api/v1/miniprogram/{path}?tenant_id={}", org.t1), Some(token)).await.expect_no_such("tenant_id");
        }
        app.put("/api/v1/miniprogram/domains", with_tenant(domains(), org.t1), Some(token)).await.expect_no_such("tenant_id");
        app.put("/api/v1/miniprogram/privacy", with_tenant(privacy(), org.t1), Some(token)).await.expect_no_such("tenant_id");
    }
    // A payroll clerk holds no mini-program permission.
    app.put("/api/v1/miniprogram/domains", with_tenant(domains(), org.t1), Some(&org.t1_clerk)).await.expect(403);
});

/// Budgets small enough to meet in a test; the reserve as the default.
const BUDGETS: [(&str, &str); 5] = [
    ("ATRIUM_JOB_POLL_MS", "50"),
    ("ATRIUM_MINIPROGRAM_SUBMIT_BUDGET", "2/1h,10/30d"),
    ("ATRIUM_MINIPROGRAM_SPEEDUP_BUDGET", "1/1h"),
    ("ATRIUM_MINIPROGRAM_UNDO_BUDGET", "2/1h"),
    ("ATRIUM_MINIPROGRAM_QUOTA_RESERVE", "20"),
];

e2e!(one_tenant_cannot_spend_the_quota_every_tenant_shares, vars = BUDGETS, |app| {
    let org = app.org().await;
    authorise(app, &org.admin, org.t1, APPID).await;
    authorise(app, &org.admin, org.t2, OTHER_APPID).await;
    let r = app.post("/sandbox/control/quota", json!({"rest": 100, "limit": 100, "speedup_rest": 10, "speedup_limit": 10}), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let t1 = &org.t1_admin;
    let speedup = |audit: i64| app.post("/api/v1/miniprogram/audit/speedup", json!({"audit_task_id": audit}), Some(t1));
    let undo = |audit: i64| app.post("/api/v1/miniprogram/audit/undo", json!({"audit_task_id": audit}), Some(t1));

    // The pen test's loop: submit, speed up, withdraw, again.
    let first = running_audit(app, t1, org.t1, "1.0.0").await;
    speedup(first).await.expect(200);
    undo(first).await.expect(200);
    let second = running_audit(app, t1, org.t1, "1.0.1").await;
    let refused = speedup(second).await;
    refused.expect_reason(429, "rate_limited");
    assert!(refused.body["message"].as_str().unwrap().contains("speed-ups (1 in 1 hour(s))"), "{}", refused.body);
    let retry: u64 = refused.header("retry-after").expect("Retry-After").parse().unwrap();
    assert!((3000..=3600).contains(&retry), "{retry}");
    undo(second).await.expect(200);
    let third = uploaded_template(app, t1, org.t1, "1.0.2").await;
    let refused = submit(app, t1, third).await;
    refused.expect_reason(429, "rate_limited");
    assert!(refused.body["message"].as_str().unwrap().contains("audit submissions (2 in 1 hour(s))"), "{}", refused.body);
    // What the loop took of the platform: two submissions and one speed-up, no more.
    let q = quota(app, &org.admin).await;
    assert_eq!((q["rest"].as_i64(), q["speedup_rest"].as_i64()), (Some(98), Some(9)), "{q}");

    // Another tenant submits and speeds up as before.
    let theirs = running_audit(app, &org.t2_admin, org.t2, "1.0.0").await;
    app.post("/api/v1/miniprogram/audit/speedup", json!({"audit_task_id": theirs}), Some(&org.t2_admin)).await.expect(200);
    app.post("/api/v1/miniprogram/audit/undo", json!({"audit_task_id": theirs}), Some(&org.t2_admin)).await.expect(200);

    // Down to the platform's reserve, tenants stop and the platform goes on.
    let r = app.post("/sandbox/control/quota", json!({"rest": 20, "limit": 100}), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let upload = uploaded_template(app, &org.t2_admin, org.t2, "1.0.1").await;
    let refused = submit(app, &org.t2_admin, upload).await;
    refused.expect_reason(429, "rate_limited");
    assert!(refused.body["message"].as_str().unwrap().contains("keeps the last 20 %"), "{}", refused.body);
    submit(app, &org.admin, third).await.expect(200);
    assert_eq!(quota(app, &org.admin).await["rest"], 19, "the platform's own submission used the reserve");

    // Every step that went through is in the tenant's audit trail; the refused ones are
    // not. (The platform's submission of the third upload is the tenant's too.)
    for (action, t1_count) in
        [("miniprogram.upload", 3), ("miniprogram.audit.submit", 3), ("miniprogram.audit.speedup", 1), ("miniprogram.audit.undo", 2)]
    {
        let r = app.get(&format!("/api/v1/audit-logs?action={action}&page_size=100"), Some(&org.admin)).await;
        r.expect(200);
        let of_t1: Vec<&Value> = r.data()["items"].as_array().unwrap().iter().filter(|e| e["tenant_id"] == org.t1).collect();
        assert_eq!(of_t1.len(), t1_count, "{action}: {of_t1:?}");
        assert!(of_t1.iter().all(|e| e["partner_id"] == org.p1), "{action}: {of_t1:?}");
    }
});

e2e!(speed_ups_at_once_never_pass_the_tenants_budget, vars = BUDGETS, |app| {
    let org = app.org().await;
    authorise(app, &org.admin, org.t1, APPID).await;
    let r = app.post("/sandbox/control/quota", json!({"rest": 100, "limit": 100, "speedup_rest": 10, "speedup_limit": 10}), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let audit = running_audit(app, &org.t1_admin, org.t1, "1.0.0").await;
    let calls = (0..8).map(|_| app.post("/api/v1/miniprogram/audit/speedup", json!({"audit_task_id": audit}), Some(&org.t1_admin)));
    let answers = atrium_e2e::join_all(calls).await;
    let statuses: Vec<u16> = answers.iter().map(|r| r.status).collect();
    assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 1, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == 429).count(), 7, "{statuses:?}");
    assert_eq!(quota(app, &org.admin).await["speedup_rest"], 9, "one speed-up reached the platform");
});
