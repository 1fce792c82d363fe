//! The sharing job over HTTP, on SQLite and PostgreSQL, through the sandbox's profit-sharing
//! endpoints: a sub-merchant's payments shared by the partner's plan (awkward amounts), the rest
//! unfrozen, a closed receiver shown and retried, a refund before sharing, lost answers, two
//! instances racing, profit-sharing notifications sent twice, and who sees which shares.
#![allow(clippy::unwrap_used)]
use atrium_e2e::pay::{
    PARTNER_OPENID, SHARING_VARS as SHARING, eventually, pay_tenant, profit_sharing, share_orders, share_summary as summary, shares_of,
    sharing_org, unfrozen_on_platform,
};
use atrium_e2e::serde_json::{Value, json};
use atrium_e2e::{Org, TestApp, e2e};

const SP_MCHID: &str = "1900000110";
const SUB_MCHID: &str = "1900000211";

async fn org(app: &TestApp) -> Org {
    sharing_org(app, SP_MCHID, SUB_MCHID, "wx_share_shop").await
}

async fn paid(app: &TestApp, org: &Org, no: &str, fen: i64) {
    pay_tenant(app, org, no, fen).await;
}

async fn on_platform(app: &TestApp, no: &str) -> Value {
    profit_sharing(app, SUB_MCHID, no).await
}

async fn settled_on_platform(app: &TestApp, no: &str) -> Value {
    unfrozen_on_platform(app, SUB_MCHID, no).await
}

async fn shares(app: &TestApp, token: &str, no: &str) -> Vec<Value> {
    shares_of(app, token, no).await
}

e2e!(awkward_amounts_are_shared_floored_per_receiver_and_the_rest_unfrozen_for_the_tenant, vars = SHARING, |app| {
    let org = org(app).await;
    for (no, fen, platform, partner) in [("T_SH_1", 1_i64, 0_i64, 0_i64), ("T_SH_333", 333, 1, 8), ("T_SH_10001", 10_001, 60, 250)] {
        paid(app, &org, no, fen).await;

        let held = settled_on_platform(app, no).await;

        let ours = shares(app, &org.admin, no).await;
        let mut want = Vec::new();
        if platform > 0 {
            want.push(("partner".to_owned(), partner, "succeeded".to_owned()));
            want.push(("platform".to_owned(), platform, "succeeded".to_owned()));
        }
        assert_eq!(summary(&ours), want, "{no}");
        assert_eq!(held["shared"], platform + partner, "{no}: {held}");
        assert_eq!(held["unfrozen"]["amount"], fen - platform - partner, "{no}: the rest is the tenant's, to the fen: {held}");
        let orders = share_orders(&held);
        assert_eq!(orders.len(), usize::from(platform > 0), "{no}: one request at most: {held}");
        for s in &ours {
            assert_eq!(
                (s["plan_version"].as_i64(), s["partner_id"].as_i64(), s["tenant_id"].as_i64()),
                (Some(1), Some(org.p1), Some(org.t1))
            );
            assert_eq!(s["out_order_no"], orders[0]["out_order_no"]);
            assert!(s["settled_at"].is_string() && s["fail_reason"].is_null(), "{s}");
        }
        if platform > 0 {
            let receivers: Vec<(&str, &str)> = held["receivers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| (r["account"].as_str().unwrap(), r["relation_type"].as_str().unwrap()))
                .collect();
            assert!(receivers.contains(&(SP_MCHID, "SERVICE_PROVIDER")) && receivers.contains(&(PARTNER_OPENID, "PARTNER")), "{held}");
            let platform_receiver = held["receivers"].as_array().unwrap().iter().find(|r| r["account"] == SP_MCHID).unwrap().clone();
            assert_eq!(platform_receiver["name"], "Sandbox Platform Ltd", "the name reached the platform encrypted and was read there");
            assert_eq!(orders[0]["unfreeze_unsplit"], false);
        }
    }
});

e2e!(a_closed_receiver_is_shown_keeps_the_rest_frozen_and_is_retried_once_fixed, vars = SHARING, |app| {
    let org = org(app).await;
    let closing = app
        .post("/sandbox/control/profitsharing/close-next", json!({"account": PARTNER_OPENID, "fail_reason": "ACCOUNT_ABNORMAL"}), None)
        .await;
    assert_eq!(closing.status, 200, "{}", closing.body);
    paid(app, &org, "T_SH_CLOSED", 10_001).await;

    let closed = eventually(30, "the partner's share closed", async || {
        let items = shares(app, &org.admin, "T_SH_CLOSED").await;
        let done = summary(&items) == [("partner".into(), 250, "closed".into()), ("platform".into(), 60, "succeeded".into())];
        if done { Ok(items.into_iter().find(|s| s["role"] == "partner").unwrap()) } else { Err(format!("{items:?}")) }
    })
    .await;
    assert_eq!(closed["fail_reason"], "ACCOUNT_ABNORMAL");
    assert_eq!(closed["receiver"], json!({"type": "PERSONAL_OPENID", "account": "o_pa**********iver"}), "{closed}");
    let held = on_platform(app, "T_SH_CLOSED").await;
    assert!(held["unfrozen"].is_null(), "the rest stays frozen while a share is closed: {held}");

    // Closed shares are listed as such, in scope.
    let listed = app.get("/api/v1/miniprogram/payment/shares?status=closed", Some(&org.p1_admin)).await;
    listed.expect(200);
    assert_eq!(listed.data()["items"].as_array().unwrap().len(), 1);
    assert_eq!(listed.data()["items"][0]["id"], closed["id"]);
    let other = app.get("/api/v1/miniprogram/payment/shares?status=closed", Some(&org.p2_admin)).await;
    assert_eq!(other.data()["items"], json!([]), "another partner sees none of them");
    assert_eq!(shares(app, &org.t2_admin, "T_SH_CLOSED").await, Vec::<Value>::new(), "another tenant sees none of them");
    assert_eq!(shares(app, &org.t1_admin, "T_SH_CLOSED").await.len(), 2, "the tenant sees its own");
    app.get("/api/v1/miniprogram/payment/shares?status=lost", Some(&org.admin)).await.expect(400);
    app.get("/api/v1/miniprogram/payment/shares?tenant_id=0&partner_id=-1", Some(&org.admin))
        .await
        .expect_field_error("tenant_id")
        .expect_field_error("partner_id");

    // Retried by the operator: a new number, the receiver added afresh, then shared.
    let id = closed["id"].as_i64().unwrap();
    app.post(&format!("/api/v1/miniprogram/payment/shares/{id}/retry"), json!({}), Some(&org.t2_admin)).await.expect(404);
    app.post(&format!("/api/v1/miniprogram/payment/shares/{}/retry", id + 1000), json!({}), Some(&org.admin)).await.expect(404);
    let retried = app.post(&format!("/api/v1/miniprogram/payment/shares/{id}/retry"), json!({}), Some(&org.admin)).await;
    retried.expect(200);
    let first_no = closed["out_order_no"].as_str().unwrap();
    assert_eq!(retried.data()["out_order_no"], format!("{first_no}-r1-{id}"));
    app.post(&format!("/api/v1/miniprogram/payment/shares/{id}/retry"), json!({}), Some(&org.admin)).await.expect_reason(409, "state");

    let held = settled_on_platform(app, "T_SH_CLOSED").await;
    assert_eq!(
        summary(&shares(app, &org.admin, "T_SH_CLOSED").await),
        [("partner".into(), 250, "succeeded".into()), ("platform".into(), 60, "succeeded".into())]
    );
    assert_eq!((held["shared"].as_i64(), held["unfrozen"]["amount"].as_i64()), (Some(310), Some(10_001 - 310)), "{held}");
    assert_eq!(share_orders(&held).len(), 2, "the first request and the retry: {held}");
    let audit = app.get("/api/v1/audit-logs?action=share.retry", Some(&org.admin)).await;
    audit.expect(200);
    assert_eq!(audit.data()["items"].as_array().map(Vec::len), Some(1), "{}", audit.body);
});

e2e!(
    a_refund_before_sharing_lowers_the_base,
    vars = [("ATRIUM_SHARING_DELAY_SECS", "10"), ("ATRIUM_SHARING_RETRY_SECS", "1"), ("ATRIUM_JOB_POLL_MS", "50")],
    |app| {
        let org = org(app).await;
        paid(app, &org, "T_SH_REFUNDED", 10_000).await;
        eventually(10, "the payment known paid", async || {
            let q = app
                .post("/api/v1/miniprogram/payment/query", json!({"tenant_id": org.t1, "out_trade_no": "T_SH_REFUNDED"}), Some(&org.admin))
                .await;
            if q.data()["trade_state"] == "SUCCESS" { Ok(()) } else { Err(q.body.to_string()) }
        })
        .await;
        let body = json!({"tenant_id": org.t1, "out_trade_no": "T_SH_REFUNDED", "out_refund_no": "R_SH_1", "amount": 4_000});
        app.post("/api/v1/miniprogram/payment/refund", body, Some(&org.admin)).await.expect(200);
        assert!(shares(app, &org.admin, "T_SH_REFUNDED").await.is_empty(), "not shared within the delay");
        // The share waits while the refund is processing; it is settled later.
        let settled = app.post("/sandbox/control/refund", json!({"out_refund_no": "R_SH_1", "result": "SUCCESS"}), None).await;
        assert_eq!(settled.status, 200, "{}", settled.body);

        let held = settled_on_platform(app, "T_SH_REFUNDED").await;

        assert_eq!(
            summary(&shares(app, &org.admin, "T_SH_REFUNDED").await),
            [("partner".into(), 150, "succeeded".into()), ("platform".into(), 36, "succeeded".into())],
            "shared on 6,000 fen"
        );
        assert_eq!((held["shared"].as_i64(), held["unfrozen"]["amount"].as_i64()), (Some(186), Some(6_000 - 186)), "{held}");
    }
);

e2e!(lost_answers_are_asked_again_under_the_same_numbers_and_nothing_is_shared_twice, vars = SHARING, |app| {
    let org = org(app).await;
    let sandbox = app.running.sandbox.as_ref().unwrap();
    for path in ["/v3/profitsharing/receivers/add", "/v3/profitsharing/orders", "/v3/profitsharing/orders/unfreeze"] {
        sandbox.lose_next_pay_answers(path, 500, "SYSTEM_ERROR", 3).unwrap();
    }
    paid(app, &org, "T_SH_LOST", 10_001).await;

    let held = settled_on_platform(app, "T_SH_LOST").await;

    assert_eq!(share_orders(&held).len(), 1, "one request, asked again under its number: {held}");
    assert_eq!((held["shared"].as_i64(), held["unfrozen"]["amount"].as_i64()), (Some(310), Some(10_001 - 310)), "{held}");
    assert!(sandbox.pay_calls("POST /v3/profitsharing/orders") >= 4, "the lost answers were asked again");
    assert_eq!(
        summary(&shares(app, &org.admin, "T_SH_LOST").await),
        [("partner".into(), 250, "succeeded".into()), ("platform".into(), 60, "succeeded".into())]
    );
});

e2e!(
    two_instances_share_each_payment_once,
    vars = [("ATRIUM_SHARING_DELAY_SECS", "0"), ("ATRIUM_SHARING_RETRY_SECS", "1"), ("ATRIUM_JOB_POLL_MS", "20")],
    |app| {
        let second = app
            .second_instance_with(&[
                ("ATRIUM_SHARING_DELAY_SECS", "0"),
                ("ATRIUM_SHARING_RETRY_SECS", "1"),
                ("ATRIUM_JOB_POLL_MS", "20"),
                ("ATRIUM_PUBLIC_URL", &app.base),
            ])
            .await;
        let org = org(app).await;
        let numbers: Vec<String> = (0..16).map(|i| format!("T_SH_TWO_{i:02}")).collect();
        for no in &numbers {
            paid(app, &org, no, 10_001).await;
        }

        for no in &numbers {
            let held = settled_on_platform(app, no).await;
            assert_eq!(share_orders(&held).len(), 1, "{no}: {held}");
            assert_eq!((held["shared"].as_i64(), held["unfrozen"]["amount"].as_i64()), (Some(310), Some(10_001 - 310)), "{no}: {held}");
        }
        let all = app.get("/api/v1/miniprogram/payment/shares?page_size=100&status=succeeded", Some(&org.admin)).await;
        assert_eq!(all.data()["total"], 32, "two shares a payment, each stored once");
        second.stop().await;
    }
);

e2e!(profit_sharing_notifications_sent_twice_and_out_of_order_share_nothing_twice, vars = SHARING, |app| {
    let org = org(app).await;
    let sandbox = app.running.sandbox.as_ref().unwrap();
    // The payment's notification and each share line's are sent twice, the copy after the next.
    sandbox.fail_next_notifications(3);
    paid(app, &org, "T_SH_TWICE", 10_001).await;

    let held = settled_on_platform(app, "T_SH_TWICE").await;
    eventually(20, "each profit-sharing notification delivered twice", async || {
        let sent: Vec<_> =
            sandbox.pay_notifications(Some("T_SH_TWICE")).into_iter().filter(|n| n.event_type.starts_with("PROFITSHARING.")).collect();
        let answered = sent.iter().filter(|n| n.delivered).count();
        let copies = sent.iter().filter(|n| n.duplicate).count();
        if (sent.len(), answered, copies) == (4, 4, 2) { Ok(()) } else { Err(format!("{sent:?}")) }
    })
    .await;

    assert_eq!(share_orders(&held).len(), 1, "one share request: {held}");
    let held = on_platform(app, "T_SH_TWICE").await;
    let unfreezes = held["orders"].as_array().unwrap().iter().filter(|o| o["kind"] == "unfreeze").count();
    assert_eq!(unfreezes, 1, "unfrozen once: {held}");
    assert_eq!((held["shared"].as_i64(), held["unfrozen"]["amount"].as_i64()), (Some(310), Some(10_001 - 310)), "{held}");
    let ours = shares(app, &org.admin, "T_SH_TWICE").await;
    assert_eq!(summary(&ours), [("partner".into(), 250, "succeeded".into()), ("platform".into(), 60, "succeeded".into())]);
    assert!(ours.iter().all(|s| s["out_order_no"] == share_orders(&held)[0]["out_order_no"]), "the books match the platform's: {ours:?}");
});
