//! Resolving discrepancies over HTTP, on SQLite and PostgreSQL, through the sandbox: a payment
//! the platform reported above its amount has the excess refunded exactly once however many
//! people resolve it at once; one reported below is accepted at what was paid; a payment taken
//! twice is refunded whole while its order stays paid the other way; a share the platform
//! paid otherwise, or a return it failed, takes the platform's record. Each caller sees and resolves its own only, a
//! partner none, and every resolution is audited.
#![allow(clippy::unwrap_used)]
use super::earnings::{check_shares, pay_partner_less, today};
use atrium_e2e::pay::{
    PARTNER_MCHID, SHARING_VARS as SHARING, eventually, new_order, order, pay_online, pay_partner_merchant, pay_tenant, platform_refunds,
    profit_sharing, refund_tenant, shares_of, sharing_org, shop, unfrozen_on_platform, wait_order,
};
use atrium_e2e::serde_json::{Value, json};
use atrium_e2e::{Org, TestApp, e2e};
use atrium_kernel::JobStore;

const MCHID: &str = "1900000161";
const OPENID: &str = "o_discrepancy_payer";
const LIST: &str = "/api/v1/miniprogram/payment/discrepancies";

/// The open discrepancies `token` sees of transaction `no`, once there are `n`.
async fn open_of(app: &TestApp, token: &str, no: &str, n: usize) -> Vec<Value> {
    eventually(15, &format!("{n} open discrepancies of {no}"), async || {
        let r = app.get(&format!("{LIST}?status=open&out_trade_no={no}"), Some(token)).await;
        let items = r.data()["items"].as_array().cloned().unwrap_or_default();
        if items.len() == n { Ok(items) } else { Err(r.body.to_string()) }
    })
    .await
}

fn resolve_path(id: &Value) -> String {
    format!("{LIST}/{id}/resolve")
}

/// An order of `fen` fen the platform reports paid at `reported` fen: `(order id, number)`.
async fn misreported_order(app: &TestApp, org: &Org, fen: i64, reported: i64) -> (i64, String) {
    let t = &org.t1_admin;
    let o = new_order(app, t, fen, OPENID).await;
    let (id, no) = (o["id"].as_i64().unwrap(), o["order_no"].as_str().unwrap().to_owned());
    let params = pay_online(app, t, id).await;
    let paid = app.post("/sandbox/control/pay", json!({"pay_params": params, "result": "SUCCESS", "reported_total": reported}), None).await;
    assert_eq!(paid.status, 200, "{}", paid.body);
    wait_order(app, t, id, |o| !o["discrepancy"].is_null()).await;
    (id, no)
}

e2e!(an_excess_payment_is_refunded_once_however_many_resolve_it_and_the_order_is_paid, |app| {
    let org = shop(app, MCHID).await;
    let t = &org.t1_admin;
    let (id, no) = misreported_order(app, &org, 10_000, 10_500).await;
    let found = open_of(app, t, &no, 1).await.remove(0);
    assert_eq!((found["kind"].as_str(), found["tenant_id"].as_i64()), (Some("amount"), Some(org.t1)), "{found}");
    assert!(found["description"].as_str().unwrap().contains("10500"), "{found}");
    let path = resolve_path(&found["id"]);

    // Another tenant neither sees it nor resolves it; a partner resolves none.
    let theirs = app.get(&format!("{LIST}?out_trade_no={no}"), Some(&org.t2_admin)).await;
    assert_eq!(theirs.data()["items"], json!([]), "{}", theirs.body);
    app.get(&format!("{LIST}/{}", found["id"]), Some(&org.t2_admin)).await.expect(404);
    let body = json!({"action": "refund_excess", "note": "Charged 5 yuan too much"});
    app.post(&path, body.clone(), Some(&org.t2_admin)).await.expect(404);
    app.post(&path, body.clone(), Some(&org.p1_admin)).await.expect_reason(403, "party_not_allowed");
    // Bad input changes nothing.
    app.post(&path, json!({"action": "refund_all", "note": "x"}), Some(t)).await.expect(400);
    app.post(&path, json!({"action": "accept", "note": "   "}), Some(t)).await.expect_field_error("note");
    app.post(&path, json!({"action": "accept"}), Some(t)).await.expect(400);
    app.post(&path, json!({"action": "accept", "note": "x".repeat(501)}), Some(t)).await.expect_field_error("note");
    app.post(&format!("{LIST}/0/resolve"), body.clone(), Some(t)).await.expect(404);
    assert_eq!(platform_refunds(app, &no).await, Vec::<Value>::new());

    // Six people resolve it at once: one does, the others are told it was done.
    let racing: Vec<_> = (0..6).map(|_| app.post(&path, body.clone(), Some(t))).collect();
    let answers = atrium_e2e::join_all(racing).await;
    let mut statuses: Vec<u16> = answers.iter().map(|r| r.status).collect();
    statuses.sort();
    assert_eq!(statuses, [200, 409, 409, 409, 409, 409], "{:?}", answers.iter().map(|r| &r.body).collect::<Vec<_>>());
    let done = answers.iter().find(|r| r.status == 200).unwrap().data().clone();
    assert!(answers.iter().filter(|r| r.status == 409).all(|r| r.data()["reason"] == "state"), "resolved already");
    assert_eq!(
        (done["status"].as_str(), done["action"].as_str(), done["note"].as_str(), done["resolved_by"].as_i64()),
        (Some("resolved"), Some("refund_excess"), Some("Charged 5 yuan too much"), Some(org.t1_admin_id)),
        "{done}"
    );

    // The platform refunded the 500 fen once, under the number the resolution names.
    let refunds = platform_refunds(app, &no).await;
    assert_eq!(refunds.len(), 1, "{refunds:?}");
    assert_eq!((refunds[0]["amount"].as_i64(), &refunds[0]["out_refund_no"]), (Some(500), &done["out_refund_no"]));
    let settled = app.post("/sandbox/control/refund", json!({"out_refund_no": done["out_refund_no"], "result": "SUCCESS"}), None).await;
    assert_eq!(settled.status, 200, "{}", settled.body);
    let o = wait_order(app, t, id, |o| o["refunded_amount"] == 500).await;
    assert_eq!(
        (o["status"].as_str(), o["paid_amount"].as_i64(), o["refunded_amount"].as_i64(), &o["discrepancy"]),
        (Some("partially_refunded"), Some(10_500), Some(500), &Value::Null),
        "paid what the platform took, the excess back: {o}"
    );
    // The 10,000 asked for stay refundable, and not a fen more.
    app.post(&format!("/api/v1/orders/{id}/refund"), json!({"amount": 10_001}), Some(t)).await.expect_reason(409, "refund_exceeds_paid");

    let again = app.post(&path, json!({"action": "accept", "note": "again"}), Some(t)).await;
    again.expect_reason(409, "state");
    let audit = app.get("/api/v1/audit-logs?action=payment.discrepancy_resolved", Some(&org.admin)).await;
    assert_eq!(audit.data()["total"], 1, "audited once: {}", audit.body);
    let listed = app.get(&format!("{LIST}?status=resolved&kind=amount"), Some(t)).await;
    assert_eq!(listed.data()["items"][0]["id"], found["id"], "{}", listed.body);
    let metrics = app.client.get(app.url("/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("atrium_payment_discrepancies 0"), "nothing left open: {metrics}");
});

e2e!(a_payment_reported_below_its_amount_is_accepted_at_what_was_paid_and_has_no_excess, |app| {
    let org = shop(app, MCHID).await;
    let t = &org.t1_admin;
    let (id, no) = misreported_order(app, &org, 10_000, 9_000).await;
    let found = open_of(app, &org.admin, &no, 1).await.remove(0);
    let path = resolve_path(&found["id"]);

    let refused = app.post(&path, json!({"action": "refund_excess", "note": "refund it"}), Some(&org.admin)).await;
    refused.expect_reason(409, "state");
    assert!(refused.body["message"].as_str().unwrap().contains("nothing was paid in excess"), "{}", refused.body);
    let accepted = app.post(&path, json!({"action": "accept", "note": "Coupon agreed with the payer"}), Some(&org.admin)).await;
    accepted.expect(200);
    assert_eq!((accepted.data()["action"].as_str(), &accepted.data()["out_refund_no"]), (Some("accept"), &Value::Null));

    let o = wait_order(app, t, id, |o| o["status"] == "paid").await;
    assert_eq!((o["status"].as_str(), o["paid_amount"].as_i64(), &o["discrepancy"]), (Some("paid"), Some(9_000), &Value::Null), "{o}");
    assert_eq!(platform_refunds(app, &no).await, Vec::<Value>::new(), "nothing refunded");
    app.post(&format!("/api/v1/orders/{id}/refund"), json!({"amount": 9_001}), Some(t)).await.expect_reason(409, "refund_exceeds_paid");
    app.post(&format!("/api/v1/orders/{id}/refund"), json!({"amount": 9_000}), Some(t)).await.expect(200);
});

e2e!(a_payment_taken_twice_is_refunded_whole_and_its_order_stays_paid_the_other_way, |app| {
    let org = shop(app, MCHID).await;
    let t = &org.t1_admin;
    let o = new_order(app, t, 3_000, OPENID).await;
    let (id, no) = (o["id"].as_i64().unwrap(), o["order_no"].as_str().unwrap().to_owned());
    pay_online(app, t, id).await;
    let offline = app.post(&format!("/api/v1/orders/{id}/pay"), json!({"method": "offline", "reference": "Cash 17"}), Some(t)).await;
    offline.expect(200);
    // The platform's close lost a race with the payer: it reports the closed order paid.
    let paid = app.post("/sandbox/control/pay", json!({"out_trade_no": no, "result": "SUCCESS", "after_close": true}), None).await;
    assert_eq!(paid.status, 200, "{}", paid.body);

    let found = open_of(app, t, &no, 1).await.remove(0);
    assert_eq!(found["kind"], "paid_twice", "{found}");
    let done = app.post(&resolve_path(&found["id"]), json!({"action": "refund_excess", "note": "Paid cash too"}), Some(t)).await;
    done.expect(200);
    let refunds = platform_refunds(app, &no).await;
    assert_eq!(refunds.len(), 1, "{refunds:?}");
    assert_eq!((refunds[0]["amount"].as_i64(), &refunds[0]["out_refund_no"]), (Some(3_000), &done.data()["out_refund_no"]));
    let settled =
        app.post("/sandbox/control/refund", json!({"out_refund_no": done.data()["out_refund_no"], "result": "SUCCESS"}), None).await;
    assert_eq!(settled.status, 200, "{}", settled.body);
    let seen = eventually(15, "the refund of the platform payment settled", async || {
        let d = app.get(&format!("{LIST}/{}", found["id"]), Some(t)).await;
        if d.data()["refund"]["status"] == "succeeded" { Ok(d.data().clone()) } else { Err(d.body.to_string()) }
    })
    .await;
    assert_eq!((seen["refund"]["amount"].as_i64(), seen["refund"]["order_id"].as_i64()), (Some(3_000), None), "{seen}");
    let q = app.post("/api/v1/miniprogram/payment/query", json!({"tenant_id": org.t1, "out_trade_no": no}), Some(&org.admin)).await;
    // Asked again, the platform reports it (refunded): not a new discrepancy.
    assert_eq!((&q.data()["discrepancy"], q.data()["trade_state"].as_str()), (&Value::Null, Some("CLOSED")), "{}", q.body);
    let open = app.get(&format!("{LIST}?status=open&out_trade_no={no}"), Some(t)).await;
    assert_eq!(open.data()["total"], 0, "{}", open.body);
    let o = order(app, t, id).await;
    assert_eq!(
        (o["status"].as_str(), o["paid_amount"].as_i64(), o["refunded_amount"].as_i64()),
        (Some("paid"), Some(3_000), Some(0)),
        "paid offline; the platform payment's refund is not the order's: {o}"
    );
});

const SP_MCHID: &str = "1900000162";
const SUB_MCHID: &str = "1900000263";

e2e!(a_share_the_platform_paid_otherwise_takes_the_platforms_record_and_frees_its_payment, vars = SHARING, |app| {
    let org = sharing_org(app, SP_MCHID, SUB_MCHID, "wx_discrepancy_shop").await;
    pay_partner_merchant(app, &org).await;
    let no = "T_DISC_SHARE";
    pay_tenant(app, &org, no, 10_001).await;
    unfrozen_on_platform(app, SUB_MCHID, no).await;
    let partner = shares_of(app, &org.admin, no).await.into_iter().find(|s| s["role"] == "partner").unwrap();
    assert_eq!(partner["amount"], 250);
    pay_partner_less(app, &partner["out_order_no"], 200).await;
    check_shares(app, org.t1, &today(), "resolve").await;
    let found = open_of(app, &org.admin, no, 1).await.remove(0);
    assert_eq!((found["kind"].as_str(), &found["share_id"]), (Some("share"), &partner["id"]), "{found}");
    refund_tenant(app, &org, no, "R_DISC_HELD", 100).await.expect_reason(409, "discrepancy");
    let path = resolve_path(&found["id"]);

    let refused = app.post(&path, json!({"action": "refund_excess", "note": "x"}), Some(&org.admin)).await;
    refused.expect_reason(409, "state");
    app.post(&path, json!({"action": "accept", "note": "ours"}), Some(&org.p1_admin)).await.expect_reason(403, "party_not_allowed");
    let done =
        app.post(&path, json!({"action": "accept", "note": "The platform paid 200; settled with the partner"}), Some(&org.t1_admin)).await;
    done.expect(200);

    let now = shares_of(app, &org.admin, no).await.into_iter().find(|s| s["role"] == "partner").unwrap();
    assert_eq!(
        (now["amount"].as_i64(), now["status"].as_str(), &now["discrepancy"]),
        (Some(200), Some("succeeded"), &Value::Null),
        "the books take the platform's record: {now}"
    );
    // The payment is refundable again.
    refund_tenant(app, &org, no, "R_DISC_FREE", 100).await.expect(200);
    let audit = app.get("/api/v1/audit-logs?action=payment.discrepancy_resolved", Some(&org.admin)).await;
    assert_eq!(audit.data()["total"], 1, "{}", audit.body);
});

const RET_SP_MCHID: &str = "1900000164";
const RET_SUB_MCHID: &str = "1900000265";

e2e!(a_return_the_platform_failed_is_accepted_and_its_share_holds_what_was_not_given_back, vars = SHARING, |app| {
    let org = sharing_org(app, RET_SP_MCHID, RET_SUB_MCHID, "wx_discrepancy_return").await;
    pay_partner_merchant(app, &org).await;
    let no = "T_DISC_RETURN";
    pay_tenant(app, &org, no, 10_001).await;
    unfrozen_on_platform(app, RET_SUB_MCHID, no).await;
    // A third refunded: 83 of the partner's 250 and 19 of the platform's 60 come back first.
    refund_tenant(app, &org, no, "R_DISC_RETURN", 3_333).await.expect(200);
    let held = profit_sharing(app, RET_SUB_MCHID, no).await;
    let partners = held["returns"].as_array().unwrap().iter().find(|r| r["return_mchid"] == PARTNER_MCHID).unwrap().clone();
    assert_eq!((partners["amount"].as_i64(), partners["result"].as_str()), (Some(83), Some("SUCCESS")), "{held}");
    // The platform's books now say that return failed: the partner kept its 83.
    let tampered = app
        .post(
            "/sandbox/control/profitsharing/tamper-return",
            json!({"out_return_no": partners["out_return_no"], "result": "FAILED", "fail_reason": "BALANCE_NOT_ENOUGH"}),
            None,
        )
        .await;
    assert_eq!(tampered.status, 200, "{}", tampered.body);
    check_shares(app, org.t1, &today(), "return").await;
    let found = open_of(app, &org.admin, no, 1).await.remove(0);
    assert_eq!(found["kind"], "return", "{found}");
    assert!(found["return_id"].is_i64(), "{found}");

    let done = app
        .post(&resolve_path(&found["id"]), json!({"action": "accept", "note": "The partner keeps it; invoiced"}), Some(&org.admin))
        .await;
    done.expect(200);
    let mut books: Vec<(String, i64, String)> = shares_of(app, &org.admin, no)
        .await
        .iter()
        .map(|s| (s["role"].as_str().unwrap().to_owned(), s["returned"].as_i64().unwrap(), s["status"].as_str().unwrap().to_owned()))
        .collect();
    books.sort();
    assert_eq!(
        books,
        [("partner".to_owned(), 0, "succeeded".to_owned()), ("platform".to_owned(), 19, "succeeded".to_owned())],
        "the partner's share holds what the platform says it kept"
    );
    assert!(shares_of(app, &org.admin, no).await.iter().all(|s| s["discrepancy"].is_null()));
    // Checked again, it agrees now: nothing new to resolve.
    check_shares(app, org.t1, &today(), "return-again").await;
    eventually(15, "the second check done", async || {
        let queued = atrium_e2e::DbJobStore::new(app.running.db.clone())
            .depth("payment.reconcile_shares".into(), chrono::Utc::now() + chrono::Duration::days(1))
            .await
            .map_err(|e| e.to_string())?;
        if queued == 0 { Ok(()) } else { Err(format!("{queued} checks queued")) }
    })
    .await;
    let open = app.get(&format!("{LIST}?status=open"), Some(&org.admin)).await;
    assert_eq!(open.data()["total"], 0, "{}", open.body);
});
