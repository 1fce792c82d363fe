//! Release campaigns over HTTP, on SQLite and PostgreSQL, with the sandbox deciding audits by
//! its policy and keeping the audit quota: a canary wave released gray, a rejection that
//! pauses the campaign and a retry after the fix, the quota running out (the untouched
//! tenants left `pending`), a tenant revoked half-way that fails alone, two instances sharing
//! one campaign with one submission per tenant, and bad input that changes nothing.
#![allow(clippy::unwrap_used)]
use super::releases::{counter, link_ready, new_tenant, platform_view};
use atrium_e2e::serde_json::{Value, json};
use atrium_e2e::{Resp, TestApp, e2e};
use std::time::Duration;

/// `n` new tenants, each with its mini-program authorised (`authorize-many`); their ids, in
/// order, and their appids.
async fn authorised_tenants(app: &TestApp, admin: &str, n: usize) -> Vec<(i64, String)> {
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        ids.push(new_tenant(app, admin, &format!("Shop {i}")).await);
    }
    link_ready(app, admin, ids[0]).await;
    let r = app.post("/sandbox/control/authorize-many", json!({"tenant_ids": ids}), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["failed"], json!([]), "{}", r.body);
    let authorized = r.body["authorized"].as_array().unwrap();
    assert_eq!(authorized.len(), n);
    authorized.iter().map(|a| (a["tenant_id"].as_i64().unwrap(), a["authorizer_appid"].as_str().unwrap().to_owned())).collect()
}

async fn policy(app: &TestApp, body: Value) {
    let r = app.post("/sandbox/control/audit-policy", body, None).await;
    assert_eq!(r.status, 200, "{}", r.body);
}

async fn quota(app: &TestApp, rest: i64) {
    let r = app.post("/sandbox/control/quota", json!({"rest": rest, "limit": 1000}), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
}

async fn create(app: &TestApp, token: &str, body: Value) -> Resp {
    app.post("/api/v1/miniprogram/campaigns", body, Some(token)).await
}

fn campaign_body(tenants: Value, waves: Value) -> Value {
    json!({
        "name": "Spring release",
        "template_id": 1,
        "version": "2.0.0",
        "description": "Spring release",
        "ext_json": {"extAppid": "{authorizer_appid}", "ext": {"tenant": "{tenant_id}"}},
        "tenants": tenants,
        "waves": waves,
        "max_rejections": 0,
        "domains": settings()["domains"],
        "privacy": settings()["privacy"],
    })
}

/// Domains and privacy settings each tenant gets in its pre-flight (the sandbox's
/// mini-programs start without them, and the pre-flight requires them).
fn settings() -> Value {
    json!({
        "domains": {"requestdomain": ["https://api.example.com"]},
        "privacy": {
            "owner_setting": {"contact_email": "privacy@example.com", "notice_method": "In the app"},
            "setting_list": [{"privacy_key": "PhoneNumber", "privacy_text": "to confirm orders"}]
        }
    })
}

async fn act(app: &TestApp, token: &str, id: i64, action: &str) -> Resp {
    app.post(&format!("/api/v1/miniprogram/campaigns/{id}/{action}"), json!({}), Some(token)).await
}

async fn campaign(app: &TestApp, token: &str, id: i64) -> Value {
    let r = app.get(&format!("/api/v1/miniprogram/campaigns/{id}"), Some(token)).await;
    r.expect(200);
    r.data().clone()
}

/// Waits up to `secs` for `done` to hold of the campaign; returns it.
async fn wait_campaign(app: &TestApp, token: &str, id: i64, secs: u64, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let c = campaign(app, token, id).await;
        if done(&c) {
            return c;
        }
        if tokio::time::Instant::now() > deadline {
            let unfinished: Vec<Value> =
                tenants(app, token, id, "").await.into_iter().filter(|t| t["status"] != "released" && t["status"] != "pending").collect();
            panic!("the campaign did not get there in {secs} s: {c}\nits unfinished tenants: {unfinished:#?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Every tenant of the campaign (of `query`, e.g. `wave=0`), paging through.
async fn tenants(app: &TestApp, token: &str, id: i64, query: &str) -> Vec<Value> {
    let mut all = Vec::new();
    for page in 1.. {
        let r = app.get(&format!("/api/v1/miniprogram/campaigns/{id}/tenants?page={page}&page_size=100&{query}"), Some(token)).await;
        r.expect(200);
        let items = r.data()["items"].as_array().unwrap().clone();
        let done = items.len() < 100;
        all.extend(items);
        if done {
            break;
        }
    }
    all
}

fn count(c: &Value, status: &str) -> u64 {
    c["counts"][status].as_u64().unwrap_or(0)
}

/// How many audits the platform holds of `appid`: one per submission.
async fn submissions(app: &TestApp, appid: &str) -> usize {
    platform_view(app, appid).await["audits"].as_array().map(Vec::len).unwrap_or(0)
}

e2e!(
    a_campaign_runs_a_gray_canary_pauses_on_a_rejection_and_finishes_after_a_retry,
    vars = [("ATRIUM_JOB_POLL_MS", "20"), ("ATRIUM_CAMPAIGN_TICK_MS", "50")],
    |app| {
        let admin = app.admin_token().await;
        let all = authorised_tenants(app, &admin, 50).await;
        let canary_reject = all[2].1.clone();
        policy(app, json!({"result": "passed", "after_ms": 200, "reject_appids": [canary_reject], "reason": "1:The shop page is empty"}))
            .await;

        let waves = json!([{"count": 5, "release": {"gray": 10}}, {"percent": 100, "release": "full"}]);
        let r = create(app, &admin, campaign_body(json!({"all": true}), waves)).await;
        r.expect(200);
        let c = r.data().clone();
        let id = c["id"].as_i64().unwrap();
        assert_eq!((c["status"].as_str(), c["tenant_total"].as_u64(), count(&c, "pending")), (Some("draft"), Some(50), 50), "{c}");
        // A draft has no wave to advance.
        act(app, &admin, id, "advance").await.expect_reason(409, "state");

        act(app, &admin, id, "start").await.expect(200);
        act(app, &admin, id, "start").await.expect_reason(409, "state");
        // The canary has not settled (nor, perhaps, started): no advancing yet.
        act(app, &admin, id, "advance").await.expect_reason(409, "state");

        // The canary: five tenants, one rejected → paused for rejections (max_rejections 0).
        let c = wait_campaign(app, &admin, id, 60, |c| c["status"] == "paused").await;
        assert_eq!(c["paused_reason"], "rejections", "{c}");
        let canary = tenants(app, &admin, id, "wave=0").await;
        assert_eq!(canary.len(), 5);
        let ids: Vec<i64> = canary.iter().map(|t| t["tenant_id"].as_i64().unwrap()).collect();
        assert_eq!(ids, all[..5].iter().map(|t| t.0).collect::<Vec<_>>(), "the first five by id");
        // Canary tenants already submitted finish while paused; those not yet submitted wait.
        let rejected = tenants(app, &admin, id, "status=rejected").await;
        assert_eq!(rejected.len(), 1, "{c}");
        assert_eq!(rejected[0]["authorizer_appid"], canary_reject.as_str());
        assert!(rejected[0]["reason"].as_str().unwrap().contains("shop page is empty"), "{}", rejected[0]);
        assert_eq!(count(&c, "pending"), 45, "the next wave is untouched: {c}");

        // The fix: the reviewers pass everything; a retry resubmits the rejected tenant.
        policy(app, json!({"result": "passed", "after_ms": 200})).await;
        let r = app.post(&format!("/api/v1/miniprogram/campaigns/{id}/retry"), json!({}), Some(&admin)).await;
        r.expect(200);
        assert_eq!(r.data()["status"], "running");
        let c = wait_campaign(app, &admin, id, 60, |c| count(c, "released") == 5).await;
        assert_eq!(c["current_wave"], 0);
        assert_eq!(submissions(app, &canary_reject).await, 2, "rejected once, passed after the retry");
        for t in tenants(app, &admin, id, "wave=0").await {
            // Released gray at 10 %: the single-tenant release task says so.
            let r = app.get(&format!("/api/v1/miniprogram/versions?tenant_id={}", t["tenant_id"]), Some(&admin)).await;
            r.expect(200);
            assert_eq!(r.data()["gray_plan"]["gray_percentage"], 10, "{}", r.body);
        }

        // The canary settled: the rest, in full.
        act(app, &admin, id, "advance").await.expect(200);
        let c = wait_campaign(app, &admin, id, 120, |c| c["status"] == "completed").await;
        assert_eq!(count(&c, "released"), 50, "{c}");
        assert_eq!(c["waves"][1]["tenants"], 45);
        assert!(c["finished_at"].is_string());
        for (_, appid) in &all {
            let expected = if *appid == canary_reject { 2 } else { 1 };
            assert_eq!(submissions(app, appid).await, expected, "{appid}");
        }
        // Finished: nothing more to start, pause or advance.
        act(app, &admin, id, "pause").await.expect_reason(409, "state");
        act(app, &admin, id, "advance").await.expect_reason(409, "state");
    }
);

e2e!(
    the_quota_pauses_a_campaign_and_a_revoked_tenant_fails_alone,
    vars = [("ATRIUM_JOB_POLL_MS", "20"), ("ATRIUM_CAMPAIGN_TICK_MS", "50")],
    |app| {
        let admin = app.admin_token().await;
        let all = authorised_tenants(app, &admin, 12).await;
        policy(app, json!({"result": "passed", "after_ms": 200})).await;
        quota(app, 3).await;
        let body = json!({
            "name": "Quota", "template_id": 1, "version": "3.0.0", "description": "Quota",
            "tenants": {"tenant_ids": all.iter().map(|t| t.0).collect::<Vec<_>>()},
            "waves": [{"percent": 100, "release": "full"}],
            "domains": settings()["domains"], "privacy": settings()["privacy"],
        });
        let r = create(app, &admin, body).await;
        r.expect(200);
        let id = r.data()["id"].as_i64().unwrap();
        act(app, &admin, id, "start").await.expect(200);

        let c = wait_campaign(app, &admin, id, 60, |c| c["status"] == "paused").await;
        assert_eq!(c["paused_reason"], "quota", "{c}");
        let c = wait_campaign(app, &admin, id, 30, |c| count(c, "released") == 3).await;
        assert!(count(&c, "pending") > 0, "untouched tenants stay pending: {c}");
        assert_eq!(count(&c, "failed") + count(&c, "rejected") + count(&c, "preflight_failed"), 0, "{c}");

        // One tenant that has not started loses its authorisation; the quota comes back.
        let pending = tenants(app, &admin, id, "status=pending").await;
        let revoked = pending.last().unwrap()["authorizer_appid"].as_str().unwrap().to_owned();
        let r = app.post("/sandbox/control/unauthorize", json!({"authorizer_appid": revoked}), None).await;
        assert_eq!(r.status, 200, "{}", r.body);
        quota(app, 100).await;
        act(app, &admin, id, "resume").await.expect(200);
        let c = wait_campaign(app, &admin, id, 60, |c| c["status"] == "completed").await;
        assert_eq!((count(&c, "released"), count(&c, "failed")), (11, 1), "{c}");
        let failed = tenants(app, &admin, id, "status=failed").await;
        assert_eq!(failed[0]["authorizer_appid"], revoked.as_str());
        assert!(failed[0]["reason"].as_str().unwrap().contains("revoked"), "{}", failed[0]);
    }
);

e2e!(bad_campaigns_are_refused_and_change_nothing, vars = [("ATRIUM_JOB_POLL_MS", "20"), ("ATRIUM_CAMPAIGN_TICK_MS", "50")], |app| {
    let org = app.org().await;
    let all = authorised_tenants(app, &org.admin, 2).await;
    let list = || json!({"tenant_ids": [all[0].0, all[1].0]});
    let bad = [
        (json!({"tenant_ids": []}), json!(null), "tenants.tenant_ids"),
        (json!({"all": true, "partner_id": 1}), json!(null), "tenants"),
        (list(), json!([{"percent": 50, "release": "full"}, {"percent": 40, "release": "full"}]), "waves[1].percent"),
        (list(), json!([{"percent": 120, "release": "full"}]), "waves[0].percent"),
        (list(), json!([{"count": 1, "release": {"gray": 0}}, {"percent": 100, "release": "full"}]), "waves[0].release.gray"),
        (list(), json!([{"count": 1, "percent": 10, "release": "full"}]), "waves[0]"),
    ];
    for (tenants, waves, field) in bad {
        let mut body = campaign_body(tenants, waves.clone());
        if waves.is_null() {
            body.as_object_mut().unwrap().remove("waves");
        }
        create(app, &org.admin, body).await.expect_field_error(field);
    }
    let mut body = campaign_body(list(), json!(null));
    body.as_object_mut().unwrap().remove("waves");
    body["domains"] = json!({"requestdomain": ["http://plain.example.com"]});
    create(app, &org.admin, body).await.expect_field_error("domains.requestdomain[0]");
    // A template that is not in the library.
    let mut body = campaign_body(list(), json!([{"percent": 100, "release": "full"}]));
    body["template_id"] = json!(999);
    create(app, &org.admin, body).await.expect_no_such("template_id");
    // Tenants out of scope: a partner names another partner's tenant.
    let body = campaign_body(json!({"tenant_ids": [org.t2]}), json!([{"percent": 100, "release": "full"}]));
    create(app, &org.p1_admin, body).await.expect_no_such("tenants.tenant_ids[0]");
    // A tenant caller runs no campaign.
    let body = campaign_body(json!({"all": true}), json!([{"percent": 100, "release": "full"}]));
    create(app, &org.t1_admin, body).await.expect(403);
    let listed = app.get("/api/v1/miniprogram/campaigns", Some(&org.admin)).await;
    listed.expect(200);
    assert_eq!(listed.data()["total"], 0, "nothing was created: {}", listed.body);

    // A tenant in a running campaign cannot be in a second one that starts, nor created.
    policy(app, json!({"result": "manual"})).await;
    let first = create(app, &org.admin, campaign_body(list(), json!([{"percent": 100, "release": "full"}]))).await;
    first.expect(200);
    let second = create(app, &org.admin, campaign_body(list(), json!([{"percent": 100, "release": "full"}]))).await;
    second.expect(200);
    act(app, &org.admin, first.data()["id"].as_i64().unwrap(), "start").await.expect(200);
    act(app, &org.admin, second.data()["id"].as_i64().unwrap(), "start").await.expect_reason(409, "tenant_in_campaign");
    create(app, &org.admin, campaign_body(list(), json!([{"percent": 100, "release": "full"}])))
        .await
        .expect_reason(409, "tenant_in_campaign");
    let c = campaign(app, &org.admin, second.data()["id"].as_i64().unwrap()).await;
    assert_eq!(c["status"], "draft");
    // Partner 2 does not see platform campaigns.
    app.get(&format!("/api/v1/miniprogram/campaigns/{}", first.data()["id"]), Some(&org.p2_admin)).await.expect(404);
    // Cancelling frees its tenants.
    act(app, &org.admin, first.data()["id"].as_i64().unwrap(), "cancel").await.expect(200);
    act(app, &org.admin, second.data()["id"].as_i64().unwrap(), "start").await.expect(200);
});

e2e!(
    two_instances_share_a_campaign_and_submit_each_tenant_once,
    vars = [
        ("ATRIUM_JOB_POLL_MS", "20"),
        ("ATRIUM_CAMPAIGN_TICK_MS", "20"),
        ("ATRIUM_CAMPAIGN_PARALLELISM", "4"),
        ("ATRIUM_WECHAT_COMPONENT_APPID", "wx_e2e_component"),
        ("ATRIUM_WECHAT_COMPONENT_SECRET", "e2e-component-secret"),
        ("ATRIUM_WECHAT_COMPONENT_TOKEN", "e2eToken123"),
        ("ATRIUM_WECHAT_COMPONENT_AES_KEY", "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFA"),
    ],
    |app| {
        // The second instance plays against the first one's sandbox.
        let second = app
            .second_instance_with(&[
                ("ATRIUM_JOB_POLL_MS", "20"),
                ("ATRIUM_CAMPAIGN_TICK_MS", "20"),
                ("ATRIUM_CAMPAIGN_PARALLELISM", "4"),
                ("ATRIUM_PUBLIC_URL", app.base.as_str()),
                ("ATRIUM_WECHAT_COMPONENT_APPID", "wx_e2e_component"),
                ("ATRIUM_WECHAT_COMPONENT_SECRET", "e2e-component-secret"),
                ("ATRIUM_WECHAT_COMPONENT_TOKEN", "e2eToken123"),
                ("ATRIUM_WECHAT_COMPONENT_AES_KEY", "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFA"),
            ])
            .await;
        let admin = app.admin_token().await;
        let all = authorised_tenants(app, &admin, 16).await;
        policy(app, json!({"result": "passed", "after_ms": 200})).await;
        let body = json!({
            "name": "Shared", "template_id": 1, "version": "4.0.0", "description": "Shared",
            "tenants": {"all": true}, "waves": [{"percent": 100, "release": "full"}],
            "domains": settings()["domains"], "privacy": settings()["privacy"],
        });
        let r = create(&second, &admin, body).await;
        r.expect(200);
        let id = r.data()["id"].as_i64().unwrap();
        act(&second, &admin, id, "start").await.expect(200);
        let c = wait_campaign(app, &admin, id, 120, |c| c["status"] == "completed").await;
        assert_eq!(count(&c, "released"), 16, "{c}");
        for (_, appid) in &all {
            assert_eq!(submissions(app, appid).await, 1, "{appid} was submitted once");
        }
        // The tenants' uploads ran as jobs on both instances, each once.
        let series = "atrium_jobs_completed_total{kind=\"miniprogram.upload\"}";
        let runs = || (counter(&app.running.metrics.render(), series), counter(&second.running.metrics.render(), series));
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while runs().0 + runs().1 < 16 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let (one, two) = runs();
        assert_eq!(one + two, 16, "each upload ran once: {one} on the first instance, {two} on the second");
        assert!(one > 0 && two > 0, "both instances took part: {one} and {two}");
    }
);

e2e!(
    a_partners_campaign_never_acts_on_a_tenant_that_left_its_scope,
    vars = [("ATRIUM_JOB_POLL_MS", "20"), ("ATRIUM_CAMPAIGN_TICK_MS", "50")],
    |app| {
        let org = app.org().await;
        let mut ids = Vec::new();
        for name in ["P1 shop A", "P1 shop B", "P1 shop C"] {
            ids.push(app.create("/api/v1/tenants", json!({"name": name, "partner_id": org.p1}), &org.admin).await["id"].as_i64().unwrap());
        }
        link_ready(app, &org.admin, ids[0]).await;
        let r = app.post("/sandbox/control/authorize-many", json!({"tenant_ids": ids}), None).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let appid = |i: usize| r.body["authorized"][i]["authorizer_appid"].as_str().unwrap().to_owned();
        let (a, b, c, c_appid) = (ids[0], ids[1], ids[2], appid(2));
        policy(app, json!({"result": "passed", "after_ms": 100})).await;
        let move_to = |tenant: i64, partner: i64| {
            let admin = org.admin.clone();
            async move {
                app.put(&format!("/api/v1/tenants/{tenant}"), json!({"partner_id": partner}), Some(&admin)).await.expect(200);
            }
        };
        let listed = |token: String, id: i64| async move {
            let mut ids: Vec<i64> = tenants(app, &token, id, "").await.iter().map(|t| t["tenant_id"].as_i64().unwrap()).collect();
            ids.sort_unstable();
            ids
        };

        // Drafted by partner 1 over its three tenants; the platform moves C to partner 2.
        let waves = json!([{"count": 1, "release": "full"}, {"percent": 100, "release": "full"}]);
        let r = create(app, &org.p1_admin, campaign_body(json!({"tenant_ids": ids}), waves)).await;
        r.expect(200);
        let id = r.data()["id"].as_i64().unwrap();
        move_to(c, org.p2).await;
        // The start is refused, naming C; partner 1 no longer sees C in its campaign.
        let refused = act(app, &org.p1_admin, id, "start").await;
        refused.expect_reason(409, "tenant_out_of_scope");
        assert!(refused.body["message"].as_str().unwrap().contains(&c.to_string()), "{}", refused.body);
        assert_eq!(campaign(app, &org.p1_admin, id).await["status"], "draft");
        assert_eq!(listed(org.p1_admin.clone(), id).await, [a, b]);
        assert_eq!(count(&campaign(app, &org.p1_admin, id).await, "pending"), 2);
        assert_eq!(listed(org.admin.clone(), id).await, [a, b, c], "the platform sees every tenant");

        // C comes back; the campaign starts, and C leaves again while the first wave runs.
        move_to(c, org.p1).await;
        act(app, &org.p1_admin, id, "start").await.expect(200);
        wait_campaign(app, &org.p1_admin, id, 60, |c| count(c, "released") == 1).await;
        move_to(c, org.p2).await;
        act(app, &org.p1_admin, id, "advance").await.expect(200);
        let done = wait_campaign(app, &org.admin, id, 60, |c| c["status"] == "completed").await;
        assert_eq!((count(&done, "released"), count(&done, "failed")), (2, 1), "{done}");
        let failed = tenants(app, &org.admin, id, "status=failed").await;
        assert_eq!(failed.len(), 1);
        assert_eq!(failed[0]["tenant_id"], c);
        assert!(failed[0]["reason"].as_str().unwrap().contains("no longer in the scope"), "{}", failed[0]);
        // Nothing was done to C's mini-program: no upload, no audit, no domains, no privacy.
        let view = platform_view(app, &c_appid).await;
        assert_eq!(view["audits"].as_array().map(Vec::len).unwrap_or(0), 0, "{view}");
        assert!(view["committed"].is_null(), "{view}");
        assert!(view["privacy"].is_null(), "{view}");
        assert!(!view["domains"].to_string().contains("api.example.com"), "{view}");
        // The campaign's changes of A's and B's settings are in their trails, by the
        // campaign; C's trail has none.
        for (tenant, expected) in [(a, 1), (b, 1), (c, 0)] {
            let r = app
                .get(
                    &format!("/api/v1/audit-logs?target_type=miniprogram_settings&target_id={tenant}&action=miniprogram.domains.update"),
                    Some(&org.admin),
                )
                .await;
            r.expect(200);
            let items = r.data()["items"].as_array().unwrap();
            assert_eq!(items.len(), expected, "tenant {tenant}: {items:?}");
            if let Some(entry) = items.first() {
                assert_eq!(entry["request_id"], format!("campaign:{id}"), "{entry}");
                assert!(entry["after"].to_string().contains("api.example.com"), "{entry}");
            }
        }
        // Partner 1 sees its own two, released, and nothing of C.
        assert_eq!(listed(org.p1_admin.clone(), id).await, [a, b]);
        let seen = campaign(app, &org.p1_admin, id).await;
        assert_eq!((count(&seen, "released"), count(&seen, "failed")), (2, 0), "{seen}");
        assert!(tenants(app, &org.p1_admin, id, "status=failed").await.is_empty());
    }
);

e2e!(a_wave_beyond_any_campaigns_is_a_400_naming_it, vars = [("ATRIUM_JOB_POLL_MS", "20")], |app| {
    let admin = app.admin_token().await;
    let all = authorised_tenants(app, &admin, 1).await;
    let r = create(app, &admin, campaign_body(json!({"tenant_ids": [all[0].0]}), json!([{"percent": 100, "release": "full"}]))).await;
    r.expect(200);
    let id = r.data()["id"].as_i64().unwrap();
    for wave in ["20", "2147483647", "2147483648", "4294967295"] {
        app.get(&format!("/api/v1/miniprogram/campaigns/{id}/tenants?wave={wave}"), Some(&admin)).await.expect_field_error("wave");
    }
    for wave in ["4294967296", "-1", "x"] {
        app.get(&format!("/api/v1/miniprogram/campaigns/{id}/tenants?wave={wave}"), Some(&admin)).await.expect(400);
    }
    let r = app.get(&format!("/api/v1/miniprogram/campaigns/{id}/tenants?wave=19"), Some(&admin)).await;
    r.expect(200);
    assert_eq!(r.data()["total"], 0);
    let r = app.get(&format!("/api/v1/miniprogram/campaigns/{id}/tenants?wave=0"), Some(&admin)).await;
    r.expect(200);
});
