//! Exactly once under faults, over HTTP on SQLite and PostgreSQL: a failpoint makes one step
//! of paying or refunding fail as a database gone at that moment would — after the ledger
//! stored the request, after the platform answered, while its answer is recorded, while the
//! order is told — and the client retries under its `Idempotency-Key`. After each: no money
//! moved twice, the books match the platform's, nothing is left stuck.
//!
//! Failpoints are global to the process, so each test holds the failpoint scenario's lock
//! for its whole run: the tests of this file run one at a time.
#![allow(clippy::unwrap_used)]
use atrium_e2e::pay::{
    PARTNER_MCHID, SHARING_VARS, configure_provider, configure_sub_merchant, eventually, new_order, paid_order, pay_partner_merchant,
    pay_tenant, platform_refunds, platform_returns, profit_sharing, share_orders, share_summary, shares_of, sharing_org, shop,
    unfrozen_on_platform, wait_order,
};
use atrium_e2e::serde_json::{Value, json};
use atrium_e2e::{TestApp, e2e};

const MCHID: &str = "1900000041";
const OPENID: &str = "o_fault_payer";

/// Sends `body` to `path` under `key` until it is answered 200 (at most five tries), as a
/// client retries after a failure; returns every status seen and the last answer's data.
async fn until_ok(app: &TestApp, path: &str, key: &str, body: Value, token: &str) -> (Vec<u16>, Value) {
    let mut seen = Vec::new();
    for _ in 0..5 {
        let r = app.post_with_key(path, key, body.clone(), token).await;
        seen.push(r.status);
        if r.status == 200 {
            return (seen, r.data().clone());
        }
        assert!(r.status >= 500, "only a failure of ours or the platform's is retried: {}", r.body);
    }
    panic!("no success after {seen:?}");
}

/// The steps a refund passes, each failed once in its own round.
const REFUND_STEPS: [&str; 4] = ["ledger.refund.reserved", "ledger.refund.sent", "ledger.record", "orders.sync"];
/// The steps a platform payment passes.
const PAY_STEPS: [&str; 4] = ["ledger.pay.stored", "ledger.pay.placed", "ledger.record", "orders.sync"];

/// An org whose first tenant collects as sub-merchant [`SUB_MCHID`] of the platform's provider.
async fn sub_shop(app: &TestApp) -> atrium_e2e::Org {
    let org = app.org().await;
    configure_provider(app, &org.admin, SP_MCHID).await;
    configure_sub_merchant(app, &org.admin, org.t1, SP_MCHID, SUB_MCHID, Some("wx_fault_sub")).await;
    org
}

const SP_MCHID: &str = "1900000042";
const SUB_MCHID: &str = "1900000043";

e2e!(a_refund_failing_at_any_step_moves_the_money_exactly_once, |app| {
    let org = shop(app, MCHID).await;
    refund_failing_at_every_step(app, &org).await;
});

e2e!(a_sub_merchants_refund_failing_at_any_step_moves_the_money_exactly_once, |app| {
    let org = sub_shop(app).await;
    refund_failing_at_every_step(app, &org).await;
});

async fn refund_failing_at_every_step(app: &TestApp, org: &atrium_e2e::Org) {
    let t = &org.t1_admin;
    let _scenario = fail::FailScenario::setup();
    for step in REFUND_STEPS {
        let o = paid_order(app, t, 10_000, OPENID).await;
        let (id, no) = (o["id"].as_i64().unwrap(), o["order_no"].as_str().unwrap().to_owned());
        fail::cfg(step, "1*return").unwrap();

        let (seen, answer) =
            until_ok(app, &format!("/api/v1/orders/{id}/refund"), &format!("refund-{step}"), json!({"amount": 3_000}), t).await;
        fail::remove(step);

        let on_platform = platform_refunds(app, &no).await;
        assert_eq!(on_platform.len(), 1, "{step} ({seen:?}): one refund reached the platform: {on_platform:?}");
        assert_eq!(
            (on_platform[0]["amount"].as_i64(), &on_platform[0]["out_refund_no"]),
            (Some(3_000), &answer["refund"]["out_refund_no"]),
            "{step}"
        );
        let settled =
            app.post("/sandbox/control/refund", json!({"out_refund_no": on_platform[0]["out_refund_no"], "result": "SUCCESS"}), None).await;
        assert_eq!(settled.status, 200, "{}", settled.body);
        let o = wait_order(app, t, id, |o| o["refunded_amount"] == 3_000).await;
        assert_eq!(
            (o["status"].as_str(), o["refunded_amount"].as_i64()),
            (Some("partially_refunded"), Some(3_000)),
            "{step} ({seen:?}): {o}"
        );
        let refunds = o["refunds"].as_array().unwrap();
        assert_eq!(refunds.len(), 1, "{step}: the books hold one refund: {o}");
        assert_eq!(refunds[0]["status"], "succeeded", "{step}: nothing is left processing: {o}");
    }
}

e2e!(a_payment_failing_at_any_step_places_one_platform_order_and_is_paid_once, |app| {
    let org = shop(app, MCHID).await;
    payment_failing_at_every_step(app, &org).await;
});

e2e!(a_sub_merchants_payment_failing_at_any_step_places_one_platform_order_and_is_paid_once, |app| {
    let org = sub_shop(app).await;
    payment_failing_at_every_step(app, &org).await;
});

async fn payment_failing_at_every_step(app: &TestApp, org: &atrium_e2e::Org) {
    let t = &org.t1_admin;
    let _scenario = fail::FailScenario::setup();
    for step in PAY_STEPS {
        let o = new_order(app, t, 8_800, OPENID).await;
        let (id, no) = (o["id"].as_i64().unwrap(), o["order_no"].as_str().unwrap().to_owned());
        fail::cfg(step, "1*return").unwrap();

        let (seen, answer) =
            until_ok(app, &format!("/api/v1/orders/{id}/pay"), &format!("pay-{step}"), json!({"method": "wechat_jsapi"}), t).await;
        fail::remove(step);

        let paid = app.post("/sandbox/control/pay", json!({"pay_params": answer["pay_params"], "result": "SUCCESS"}), None).await;
        assert_eq!(paid.status, 200, "{step} ({seen:?}): the pay params answered after the fault pay the order: {}", paid.body);
        let o = wait_order(app, t, id, |o| o["status"] == "paid").await;
        assert_eq!((o["status"].as_str(), o["paid_amount"].as_i64()), (Some("paid"), Some(8_800)), "{step} ({seen:?}): {o}");
        let q = app.post("/api/v1/miniprogram/payment/query", json!({"tenant_id": org.t1, "out_trade_no": no}), Some(&org.admin)).await;
        q.expect(200);
        assert_eq!((q.data()["trade_state"].as_str(), q.data()["amount"].as_i64()), (Some("SUCCESS"), Some(8_800)), "{step}");
        assert_eq!(q.data()["order_id"].as_i64(), Some(id));
        let held = app.get(&format!("/sandbox/control/trade?out_trade_no={no}"), None).await;
        assert_eq!(held.body["order"]["trade_state"], "SUCCESS", "{step}: one platform order, paid: {}", held.body);
    }
}

e2e!(an_offline_payment_failing_to_tell_the_order_is_told_by_the_ledgers_event, vars = [("ATRIUM_JOB_POLL_MS", "100")], |app| {
    let org = app.org().await;
    let t = &org.t1_admin;
    let _scenario = fail::FailScenario::setup();
    let o = new_order(app, t, 12_000, OPENID).await;
    let id = o["id"].as_i64().unwrap();
    // The request's own sync fails, and so does the event's first run.
    fail::cfg("orders.sync", "2*return").unwrap();

    let pay = app.post(&format!("/api/v1/orders/{id}/pay"), json!({"method": "offline", "reference": "Cash 77"}), Some(t)).await;
    pay.expect(200);

    let o = wait_order(app, t, id, |o| o["status"] == "paid").await;
    fail::remove("orders.sync");
    assert_eq!(
        (o["status"].as_str(), o["paid_amount"].as_i64(), o["payment"]["method"].as_str()),
        (Some("paid"), Some(12_000), Some("offline")),
        "{o}"
    );
});

/// The steps of the sharing job that talk to the platform or record what it said.
const SHARE_STEPS: [&str; 4] = ["sharing.receivers_added", "sharing.requested", "sharing.recorded", "sharing.unfrozen"];

const SHARE_SP_MCHID: &str = "1900000044";
const SHARE_SUB_MCHID: &str = "1900000045";

e2e!(a_share_failing_at_any_step_is_shared_and_unfrozen_exactly_once, vars = SHARING_VARS, |app| {
    atrium_e2e::captured_log::keep();
    let org = sharing_org(app, SHARE_SP_MCHID, SHARE_SUB_MCHID, "wx_fault_share").await;
    let _scenario = fail::FailScenario::setup();
    for step in SHARE_STEPS {
        let no = format!("T_FAULT_{}", step.replace('.', "_").to_uppercase());
        fail::cfg(step, "1*return").unwrap();

        pay_tenant(app, &org, &no, 10_001).await;
        let held = unfrozen_on_platform(app, SHARE_SUB_MCHID, &no).await;
        fail::remove(step);

        assert_eq!(share_orders(&held).len(), 1, "{step}: one share request reached the platform: {held}");
        assert_eq!(
            (held["shared"].as_i64(), held["unfrozen"]["amount"].as_i64()),
            (Some(310), Some(10_001 - 310)),
            "{step}: shared once, the rest unfrozen once: {held}"
        );
        let unfreezes = held["orders"].as_array().unwrap().iter().filter(|o| o["kind"] == "unfreeze").count();
        assert_eq!(unfreezes, 1, "{step}: {held}");
        let ours = eventually(10, &format!("{step}: the books settled"), async || {
            let items = shares_of(app, &org.admin, &no).await;
            let done = share_summary(&items) == [("partner".into(), 250, "succeeded".into()), ("platform".into(), 60, "succeeded".into())];
            if done { Ok(items) } else { Err(format!("{items:?}")) }
        })
        .await;
        assert!(ours.iter().all(|s| s["out_order_no"] == share_orders(&held)[0]["out_order_no"]), "{step}: the books match the platform's");
        let fired = format!("failpoint {step} fired");
        assert!(
            atrium_e2e::captured_log::lines().iter().any(|l| l.message.contains("(payment.share, try") && l.message.contains(&fired)),
            "{step}: the fault happened and the job ran again after it"
        );
    }
});

/// The steps a refund of a shared payment passes: reserved with its returns, each return
/// answered, each recorded, the refund sent, its answer recorded.
const RETURN_STEPS: [&str; 5] =
    ["ledger.refund.reserved", "ledger.return.sent", "ledger.return.recorded", "ledger.refund.sent", "ledger.record"];

const RETURN_SP_MCHID: &str = "1900000046";
const RETURN_SUB_MCHID: &str = "1900000047";

e2e!(a_shared_payments_refund_failing_at_any_step_takes_each_part_back_once_and_refunds_once, vars = SHARING_VARS, |app| {
    let org = sharing_org(app, RETURN_SP_MCHID, RETURN_SUB_MCHID, "wx_fault_return").await;
    pay_partner_merchant(app, &org).await;
    let _scenario = fail::FailScenario::setup();
    for (i, step) in RETURN_STEPS.into_iter().enumerate() {
        let no = format!("T_FAULT_RET_{i}");
        pay_tenant(app, &org, &no, 10_001).await;
        unfrozen_on_platform(app, RETURN_SUB_MCHID, &no).await;
        fail::cfg(step, "1*return").unwrap();

        let body = json!({"tenant_id": org.t1, "out_trade_no": no, "amount": 3_333});
        let (seen, answer) = until_ok(app, "/api/v1/miniprogram/payment/refund", &format!("return-{step}"), body, &org.admin).await;
        fail::remove(step);
        assert!(seen.len() >= 2 && seen[0] >= 500, "{step}: the fault happened on the request and its retry succeeded: {seen:?}");

        let held = profit_sharing(app, RETURN_SUB_MCHID, &no).await;
        assert_eq!(
            platform_returns(&held),
            vec![(RETURN_SP_MCHID.into(), 19, "SUCCESS".into()), (PARTNER_MCHID.into(), 83, "SUCCESS".into())],
            "{step} ({seen:?}): each part taken back once: {held}"
        );
        let refunds = platform_refunds(app, &no).await;
        assert_eq!(refunds.len(), 1, "{step} ({seen:?}): one refund reached the platform: {refunds:?}");
        assert_eq!((refunds[0]["amount"].as_i64(), &refunds[0]["out_refund_no"]), (Some(3_333), &answer["out_refund_no"]), "{step}");
        let ours = shares_of(app, &org.admin, &no).await;
        let mut books: Vec<(i64, &str)> = ours.iter().map(|s| (s["returned"].as_i64().unwrap(), s["status"].as_str().unwrap())).collect();
        books.sort();
        assert_eq!(books, vec![(19, "succeeded"), (83, "succeeded")], "{step}: the books equal the platform's");
    }
});

/// The steps of resolving a discrepancy by refunding the excess: resolved (the refund stored
/// with it), the refund sent, its answer recorded; and the platform's answer lost after it
/// refunded.
const EXCESS_STEPS: [&str; 5] =
    ["ledger.discrepancy.resolved", "ledger.refund.reserved", "ledger.refund.sent", "ledger.record", "lost answer"];

/// Makes the queued jobs of `kind` due now, as their time would (a refund's first settling
/// query waits a minute).
fn due_now(app: &TestApp, kind: &str) {
    use atrium_store::schema::jobs;
    use diesel::prelude::*;
    let long_ago = chrono::NaiveDate::from_ymd_opt(2020, 1, 1).unwrap().and_hms_opt(0, 0, 0).unwrap();
    diesel::update(jobs::table.filter(jobs::kind.eq(kind)))
        .set(jobs::run_at.eq(long_ago))
        .execute(&mut *app.running.db.conn().unwrap())
        .unwrap();
}

e2e!(an_excess_refund_failing_at_any_step_goes_out_exactly_once, vars = [("ATRIUM_JOB_POLL_MS", "50")], |app| {
    atrium_e2e::captured_log::keep();
    let org = shop(app, "1900000048").await;
    let t = &org.t1_admin;
    let _scenario = fail::FailScenario::setup();
    for step in EXCESS_STEPS {
        let o = new_order(app, t, 10_000, OPENID).await;
        let (id, no) = (o["id"].as_i64().unwrap(), o["order_no"].as_str().unwrap().to_owned());
        let params = atrium_e2e::pay::pay_online(app, t, id).await;
        let paid =
            app.post("/sandbox/control/pay", json!({"pay_params": params, "result": "SUCCESS", "reported_total": 10_700}), None).await;
        assert_eq!(paid.status, 200, "{}", paid.body);
        let found = eventually(15, "the discrepancy recorded", async || {
            let r = app.get(&format!("/api/v1/miniprogram/payment/discrepancies?status=open&out_trade_no={no}"), Some(t)).await;
            r.data()["items"].as_array().and_then(|i| i.first().cloned()).ok_or_else(|| r.body.to_string())
        })
        .await;
        if step == "lost answer" {
            let lose = json!({"path": "/v3/refund/domestic/refunds", "status": 500, "times": 3, "after": true});
            assert_eq!(app.post("/sandbox/control/pay-fail", lose, None).await.status, 200);
        } else {
            fail::cfg(step, "1*return").unwrap();
        }

        let path = format!("/api/v1/miniprogram/payment/discrepancies/{}/resolve", found["id"]);
        let first = app.post(&path, json!({"action": "refund_excess", "note": format!("fault at {step}")}), Some(t)).await;
        fail::remove(step);
        if step == "ledger.discrepancy.resolved" {
            assert_eq!(first.status, 503, "{step}: the resolution was stored, the request failed: {}", first.body);
        } else {
            // Resolved; the refund is sent after, and its failure is the settle job's to mend.
            first.expect(200);
            let refund_no = first.data()["out_refund_no"].as_str().unwrap().to_owned();
            let said = format!("refund {refund_no} of the excess");
            let fault =
                if step == "lost answer" { "the pay platform is unavailable".to_owned() } else { format!("failpoint {step} fired") };
            assert!(
                atrium_e2e::captured_log::lines().iter().any(|l| l.message.contains(&said) && l.message.contains(&fault)),
                "{step}: the fault happened after the resolution"
            );
        }
        // Asked again, it is resolved already: nothing more goes out.
        app.post(&path, json!({"action": "refund_excess", "note": "again"}), Some(t)).await.expect_reason(409, "state");

        due_now(app, "payment.settle_refund");
        let on_platform = eventually(15, &format!("{step}: the excess refunded on the platform"), async || {
            let refunds = platform_refunds(app, &no).await;
            if refunds.is_empty() { Err("none yet".into()) } else { Ok(refunds) }
        })
        .await;
        assert_eq!(on_platform.len(), 1, "{step}: one refund reached the platform: {on_platform:?}");
        assert_eq!(on_platform[0]["amount"], 700, "{step}");
        let settled =
            app.post("/sandbox/control/refund", json!({"out_refund_no": on_platform[0]["out_refund_no"], "result": "SUCCESS"}), None).await;
        assert_eq!(settled.status, 200, "{}", settled.body);
        let o = wait_order(app, t, id, |o| o["refunded_amount"] == 700).await;
        assert_eq!(
            (o["status"].as_str(), o["paid_amount"].as_i64(), o["refunded_amount"].as_i64()),
            (Some("partially_refunded"), Some(10_700), Some(700)),
            "{step}: the books equal the platform's: {o}"
        );
        let refunds = o["refunds"].as_array().unwrap();
        assert_eq!(refunds.len(), 1, "{step}: the books hold one refund: {o}");
        assert_eq!(refunds[0]["out_refund_no"], on_platform[0]["out_refund_no"], "{step}");
        assert_eq!(platform_refunds(app, &no).await.len(), 1, "{step}: still one");
    }
});
