//! Statements and reconciliation of shared money over HTTP, on SQLite and PostgreSQL, through
//! the sandbox: a partner's and the platform's earnings match what the platform paid and took
//! back (awkward amounts, a refund after sharing), by day and by tenant, each caller seeing
//! its own only; the order and transaction views show how a payment was shared; and the daily
//! check of shares finds where the platform's record differs from ours, keeps it as a
//! discrepancy and refunds nothing of that payment until a person resolves it.
#![allow(clippy::unwrap_used)]
use atrium_e2e::pay::{
    PARTNER_MCHID, SHARING_VARS as SHARING, eventually, paid_order, pay_partner_merchant, pay_tenant, profit_sharing, refund_tenant,
    shares_of, sharing_org, unfrozen_on_platform,
};
use atrium_e2e::serde_json::{Value, json};
use atrium_e2e::{Org, TestApp, e2e};
use atrium_kernel::{JobStore, NewJob};

const SP_MCHID: &str = "1900000130";
const SUB_MCHID: &str = "1900000231";

/// Today in China Standard Time, `YYYY-MM-DD`.
pub(crate) fn today() -> String {
    (chrono::Utc::now() + chrono::Duration::hours(8)).format("%Y-%m-%d").to_string()
}

async fn org(app: &TestApp) -> Org {
    let org = sharing_org(app, SP_MCHID, SUB_MCHID, "wx_earning_shop").await;
    pay_partner_merchant(app, &org).await;
    org
}

/// What the platform paid `account` and took back from it over the payments `nos`:
/// `(shared, returned)`.
async fn on_platform(app: &TestApp, nos: &[&str], account: &str) -> (i64, i64) {
    let (mut shared, mut returned) = (0, 0);
    for no in nos {
        let held = profit_sharing(app, SUB_MCHID, no).await;
        for order in held["orders"].as_array().unwrap().iter().filter(|o| o["kind"] == "share") {
            for line in order["lines"].as_array().unwrap().iter().filter(|l| l["account"] == account && l["result"] == "SUCCESS") {
                shared += line["amount"].as_i64().unwrap();
                returned += line["returned"].as_i64().unwrap();
            }
        }
    }
    (shared, returned)
}

fn sums(v: &Value) -> [i64; 7] {
    ["paid", "refunded", "shared", "returned", "pending", "failed", "net"].map(|k| v[k].as_i64().unwrap_or(i64::MIN))
}

e2e!(earnings_match_what_the_platform_paid_and_took_back_by_day_and_by_tenant, vars = SHARING, |app| {
    let org = org(app).await;
    let nos = ["T_EARN_1", "T_EARN_333", "T_EARN_10001"];
    for (no, fen) in nos.iter().zip([1, 333, 10_001]) {
        pay_tenant(app, &org, no, fen).await;
    }
    for no in &nos[1..] {
        unfrozen_on_platform(app, SUB_MCHID, no).await;
    }
    // A third of the big one refunded after sharing: 19 and 83 come back first.
    refund_tenant(app, &org, "T_EARN_10001", "R_EARN_1", 3_333).await.expect(200);
    let settled = app.post("/sandbox/control/refund", json!({"out_refund_no": "R_EARN_1", "result": "SUCCESS"}), None).await;
    assert_eq!(settled.status, 200, "{}", settled.body);
    eventually(15, "the refund recorded succeeded", async || {
        let q = app
            .post("/api/v1/miniprogram/payment/query", json!({"tenant_id": org.t1, "out_trade_no": "T_EARN_10001"}), Some(&org.admin))
            .await;
        let shares = q.data()["shares"].as_array().cloned().unwrap_or_default();
        let earned = app.get(&format!("/api/v1/partners/{}/earnings?from={}&to={}", org.p1, today(), today()), Some(&org.admin)).await;
        if earned.data()["totals"]["refunded"] == 3_333 && shares.len() == 2 {
            Ok(())
        } else {
            Err(format!("{} / {}", earned.body, q.body))
        }
    })
    .await;

    let day = format!("from={}&to={}", today(), today());
    let (partner_shared, partner_returned) = on_platform(app, &nos, PARTNER_MCHID).await;
    let (platform_shared, platform_returned) = on_platform(app, &nos, SP_MCHID).await;
    // 333 → 8 and 1; 10,001 → 250 and 60; 1 fen is too small to share.
    assert_eq!((partner_shared, partner_returned, platform_shared, platform_returned), (258, 83, 61, 19));

    for token in [&org.admin, &org.p1_admin] {
        let by_day = app.get(&format!("/api/v1/partners/{}/earnings?{day}&group=day", org.p1), Some(token)).await;
        by_day.expect(200);
        let rows = by_day.data()["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 1, "{}", by_day.body);
        assert_eq!(rows[0]["date"], today().as_str());
        assert_eq!(
            sums(&rows[0]),
            [10_335, 3_333, partner_shared, partner_returned, 0, 0, partner_shared - partner_returned],
            "{}",
            by_day.body
        );
        assert_eq!(
            by_day.data()["totals"],
            rows[0]
                .as_object()
                .map(|r| {
                    let mut r = r.clone();
                    r.remove("date");
                    Value::Object(r)
                })
                .unwrap()
        );
        let by_tenant = app.get(&format!("/api/v1/partners/{}/earnings?{day}&group=tenant", org.p1), Some(token)).await;
        by_tenant.expect(200);
        assert_eq!(by_tenant.data()["rows"][0]["tenant_id"], org.t1, "{}", by_tenant.body);
        assert_eq!(sums(&by_tenant.data()["rows"][0]), sums(&rows[0]));
    }
    let platform = app.get(&format!("/api/v1/platform/earnings?{day}&group=tenant"), Some(&org.admin)).await;
    platform.expect(200);
    let mine = platform.data()["rows"].as_array().unwrap().iter().find(|r| r["tenant_id"] == org.t1).cloned().unwrap();
    assert_eq!(
        sums(&mine),
        [10_335, 3_333, platform_shared, platform_returned, 0, 0, platform_shared - platform_returned],
        "{}",
        platform.body
    );

    // Before the payments: nothing.
    let before = app.get(&format!("/api/v1/partners/{}/earnings?from=2026-01-01&to=2026-01-31", org.p1), Some(&org.admin)).await;
    assert_eq!((before.data()["rows"].as_array().map(Vec::len), sums(&before.data()["totals"])), (Some(0), [0; 7]), "{}", before.body);
});

e2e!(a_statement_is_its_earners_alone_and_bad_periods_are_refused, vars = SHARING, |app| {
    let org = org(app).await;
    let day = format!("from={}&to={}", today(), today());
    let path = format!("/api/v1/partners/{}/earnings?{day}", org.p1);

    app.get(&format!("/api/v1/partners/{}/earnings?{day}", org.p2), Some(&org.p1_admin)).await.expect(404);
    app.get(&path, Some(&org.p2_admin)).await.expect(404);
    app.get(&format!("/api/v1/partners/999999/earnings?{day}"), Some(&org.admin)).await.expect(404);
    app.get(&path, Some(&org.t1_admin)).await.expect(403);
    app.get(&format!("/api/v1/platform/earnings?{day}"), Some(&org.p1_admin)).await.expect_reason(403, "party_not_allowed");
    app.get(&format!("/api/v1/platform/earnings?{day}"), Some(&org.t1_admin)).await.expect(403);

    for bad in [
        "to=2026-03-31".to_owned(),
        "from=2026-03-01".to_owned(),
        "from=2026-02-30&to=2026-03-31".to_owned(),
        "from=2026-03-31&to=2026-03-01".to_owned(),
        "from=2025-01-01&to=2026-01-02".to_owned(),
        "from=2026-03-01&to=2026-03-31&group=week".to_owned(),
        "from=2026-03-01&to=2026-03-31&tenant=1".to_owned(),
    ] {
        let r = app.get(&format!("/api/v1/partners/{}/earnings?{bad}", org.p1), Some(&org.admin)).await;
        r.expect(400);
        assert_eq!(r.body["code"], 400, "{bad}: {}", r.body);
        assert!(r.body["message"].is_string(), "{bad}: {}", r.body);
    }
    // A year to the day is allowed.
    app.get(&format!("/api/v1/partners/{}/earnings?from=2025-01-01&to=2026-01-01", org.p1), Some(&org.admin)).await.expect(200);
});

e2e!(an_orders_and_a_transactions_views_show_how_the_payment_was_shared, vars = SHARING, |app| {
    let org = org(app).await;
    let o = paid_order(app, &org.t1_admin, 10_001, "o_earning_payer").await;
    let no = o["order_no"].as_str().unwrap().to_owned();
    unfrozen_on_platform(app, SUB_MCHID, &no).await;

    let shown = eventually(15, "the order showing its two shares", async || {
        let o = app.get(&format!("/api/v1/orders/{}", o["id"]), Some(&org.t1_admin)).await;
        let shares = o.data()["shares"].as_array().cloned().unwrap_or_default();
        if shares.iter().filter(|s| s["status"] == "succeeded").count() == 2 { Ok(shares) } else { Err(o.body.to_string()) }
    })
    .await;
    let mut parts: Vec<(String, i64)> =
        shown.iter().map(|s| (s["role"].as_str().unwrap().to_owned(), s["amount"].as_i64().unwrap())).collect();
    parts.sort();
    assert_eq!(parts, [("partner".to_owned(), 250), ("platform".to_owned(), 60)]);
    assert!(shown.iter().all(|s| s["receiver"]["account"].as_str().unwrap().contains('*')), "accounts are masked: {shown:?}");
    let listed = app.get("/api/v1/orders", Some(&org.t1_admin)).await;
    let in_list = listed.data()["items"].as_array().unwrap().iter().find(|i| i["id"] == o["id"]).cloned().unwrap();
    assert_eq!(in_list["shares"], Value::Array(shown.clone()), "the list shows what the order shows");

    let q = app.post("/api/v1/miniprogram/payment/query", json!({"tenant_id": org.t1, "out_trade_no": no}), Some(&org.admin)).await;
    q.expect(200);
    assert_eq!(q.data()["shares"].as_array().map(Vec::len), Some(2), "{}", q.body);
    // Another tenant's admin sees neither.
    app.get(&format!("/api/v1/orders/{}", o["id"]), Some(&org.t2_admin)).await.expect(404);

    // A refund the partner's part could not be taken back for shows why on the order.
    let failing = app
        .post(
            "/sandbox/control/profitsharing/return-fail-next",
            json!({"account": PARTNER_MCHID, "fail_reason": "BALANCE_NOT_ENOUGH"}),
            None,
        )
        .await;
    assert_eq!(failing.status, 200, "{}", failing.body);
    let refused = app.post(&format!("/api/v1/orders/{}/refund", o["id"]), json!({"amount": 5_000}), Some(&org.t1_admin)).await;
    refused.expect_reason(409, "return_failed");
    let after = app.get(&format!("/api/v1/orders/{}", o["id"]), Some(&org.t1_admin)).await;
    let refunds = after.data()["refunds"].as_array().cloned().unwrap_or_default();
    assert_eq!(refunds.len(), 1, "{}", after.body);
    assert_eq!(
        (refunds[0]["status"].as_str(), refunds[0]["fail_reason"].as_str()),
        (Some("failed"), Some("BALANCE_NOT_ENOUGH")),
        "{}",
        after.body
    );
});

/// Makes the platform's record of share request `out_order_no` say it paid the partner's
/// merchant account `fen` (our books say otherwise: what the daily check must find).
pub(crate) async fn pay_partner_less(app: &TestApp, out_order_no: &Value, fen: i64) {
    let tampered = app
        .post("/sandbox/control/profitsharing/tamper", json!({"out_order_no": out_order_no, "account": PARTNER_MCHID, "amount": fen}), None)
        .await;
    assert_eq!(tampered.status, 200, "{}", tampered.body);
}

/// Queues the share check of `date` for the tenant now.
pub(crate) async fn check_shares(app: &TestApp, tenant: i64, date: &str, tag: &str) {
    let jobs = atrium_e2e::DbJobStore::new(app.running.db.clone());
    let queued = jobs
        .enqueue(NewJob {
            kind: "payment.reconcile_shares".into(),
            tenant_id: Some(tenant),
            payload: json!({"date": date}),
            run_at: chrono::Utc::now(),
            dedupe_key: Some(format!("{tenant}:{date}:{tag}")),
        })
        .await
        .unwrap();
    assert!(queued.is_some());
}

e2e!(the_daily_check_keeps_a_share_the_platform_records_otherwise_as_a_discrepancy_and_refunds_nothing_of_it, vars = SHARING, |app| {
    let org = org(app).await;
    for no in ["T_REC_OK", "T_REC_ODD"] {
        pay_tenant(app, &org, no, 10_001).await;
        unfrozen_on_platform(app, SUB_MCHID, no).await;
    }
    let odd = shares_of(app, &org.admin, "T_REC_ODD").await;
    let partner = odd.iter().find(|s| s["role"] == "partner").unwrap().clone();
    // The platform's books now say it paid the partner 200 fen, not 250.
    pay_partner_less(app, &partner["out_order_no"], 200).await;

    check_shares(app, org.t1, &today(), "first").await;
    let found = eventually(15, "the discrepancy kept", async || {
        let held = app.get("/api/v1/miniprogram/payment/shares?discrepancy=true", Some(&org.admin)).await;
        let items = held.data()["items"].as_array().cloned().unwrap_or_default();
        if items.len() == 1 { Ok(items[0].clone()) } else { Err(held.body.to_string()) }
    })
    .await;
    assert_eq!(found["id"], partner["id"]);
    let why = found["discrepancy"].as_str().unwrap();
    assert!(why.contains("200") && why.contains("250"), "{why}");
    // The tenant sees it on its own shares too; the agreeing payment holds none.
    let own = app.get("/api/v1/miniprogram/payment/shares?discrepancy=true", Some(&org.t1_admin)).await;
    assert_eq!(own.data()["total"], 1, "{}", own.body);
    assert!(shares_of(app, &org.admin, "T_REC_OK").await.iter().all(|s| s["discrepancy"].is_null()));

    // Nothing of that payment is refunded until it is resolved; the other is refunded.
    refund_tenant(app, &org, "T_REC_ODD", "R_REC_ODD", 100).await.expect_reason(409, "discrepancy");
    refund_tenant(app, &org, "T_REC_OK", "R_REC_OK", 100).await.expect(200);
    let trade = app.get("/sandbox/control/trade?out_trade_no=T_REC_ODD", None).await;
    assert_eq!(trade.body["refunds"], json!([]), "nothing reached the platform: {}", trade.body);
    let metrics = app.client.get(app.url("/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("atrium_payment_discrepancies 1"), "the share's discrepancy is counted: {metrics}");

    // Checked again, it is kept once (audited once).
    check_shares(app, org.t1, &today(), "again").await;
    let audits = eventually(15, "the second check done", async || {
        let log = app.get("/api/v1/audit-logs?action=share.discrepancy", Some(&org.admin)).await;
        let queued = atrium_e2e::DbJobStore::new(app.running.db.clone())
            .depth("payment.reconcile_shares".into(), chrono::Utc::now() + chrono::Duration::days(1))
            .await
            .map_err(|e| e.to_string())?;
        if queued == 0 { Ok(log) } else { Err(format!("{queued} checks queued")) }
    })
    .await;
    assert_eq!(audits.data()["total"], 1, "{}", audits.body);
});
