//! Refunds of shared money over HTTP, on SQLite and PostgreSQL, through the sandbox's
//! profit-sharing returns: each receiver gives its part back before a refund of a shared
//! payment is sent (a partial refund, then the rest), a return the platform fails stops the
//! refund and says why, a person's part cannot be taken back, and a share closed while its
//! payment was refunded is retried for less. The sandbox refuses a sub-merchant's refund that
//! would take shared money, so a refund sent before its returns would fail these tests.
#![allow(clippy::unwrap_used)]
use atrium_e2e::pay::{
    PARTNER_MCHID, SHARING_VARS as SHARING, eventually, pay_partner_merchant, pay_tenant, platform_returns, profit_sharing, refund_tenant,
    share_summary as summary, shares_of, sharing_org, unfrozen_on_platform,
};
use atrium_e2e::serde_json::{Value, json};
use atrium_e2e::{Org, TestApp, e2e};

const SP_MCHID: &str = "1900000120";
const SUB_MCHID: &str = "1900000221";

/// An org whose partner is paid to its merchant account.
async fn org(app: &TestApp) -> Org {
    let org = sharing_org(app, SP_MCHID, SUB_MCHID, "wx_return_shop").await;
    pay_partner_merchant(app, &org).await;
    org
}

/// A payment of `fen` paid, shared and its rest unfrozen.
async fn shared(app: &TestApp, org: &Org, no: &str, fen: i64) -> Value {
    pay_tenant(app, org, no, fen).await;
    unfrozen_on_platform(app, SUB_MCHID, no).await
}

/// `(role, returned, status)` of a payment's shares, sorted.
async fn returned(app: &TestApp, token: &str, no: &str) -> Vec<(String, i64, String)> {
    let mut s: Vec<_> = shares_of(app, token, no)
        .await
        .iter()
        .map(|s| (s["role"].as_str().unwrap().to_owned(), s["returned"].as_i64().unwrap(), s["status"].as_str().unwrap().to_owned()))
        .collect();
    s.sort();
    s
}

/// What the platform holds as given back by each receiver's line, `(account, returned)`, sorted.
fn lines_returned(held: &Value) -> Vec<(String, i64)> {
    let mut lines: Vec<_> = held["orders"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["kind"] == "share")
        .flat_map(|o| o["lines"].as_array().unwrap().clone())
        .map(|l| (l["account"].as_str().unwrap().to_owned(), l["returned"].as_i64().unwrap()))
        .collect();
    lines.sort();
    lines
}

async fn settle_refund(app: &TestApp, out_refund_no: &str) {
    let settled = app.post("/sandbox/control/refund", json!({"out_refund_no": out_refund_no, "result": "SUCCESS"}), None).await;
    assert_eq!(settled.status, 200, "{}", settled.body);
}

e2e!(a_partial_then_a_full_refund_after_sharing_take_each_part_back_first, vars = SHARING, |app| {
    let org = org(app).await;
    shared(app, &org, "T_RT_10001", 10_001).await;

    // A third: floor(60 × 3,333 / 10,001) = 19 and floor(250 × 3,333 / 10,001) = 83 come back first.
    let first = refund_tenant(app, &org, "T_RT_10001", "R_RT_1", 3_333).await;
    first.expect(200);
    assert_eq!(first.data()["status"], "processing", "{}", first.body);
    let held = profit_sharing(app, SUB_MCHID, "T_RT_10001").await;
    assert_eq!(
        platform_returns(&held),
        vec![(SP_MCHID.into(), 19, "SUCCESS".into()), (PARTNER_MCHID.into(), 83, "SUCCESS".into())],
        "{held}"
    );
    assert_eq!(
        returned(app, &org.admin, "T_RT_10001").await,
        vec![("partner".into(), 83, "succeeded".into()), ("platform".into(), 19, "succeeded".into())]
    );
    settle_refund(app, "R_RT_1").await;

    // The rest: all that is left of each share.
    let rest = refund_tenant(app, &org, "T_RT_10001", "R_RT_2", 6_668).await;
    rest.expect(200);
    settle_refund(app, "R_RT_2").await;

    let held = profit_sharing(app, SUB_MCHID, "T_RT_10001").await;
    assert_eq!(
        platform_returns(&held),
        vec![
            (SP_MCHID.into(), 19, "SUCCESS".into()),
            (PARTNER_MCHID.into(), 83, "SUCCESS".into()),
            (SP_MCHID.into(), 41, "SUCCESS".into()),
            (PARTNER_MCHID.into(), 167, "SUCCESS".into()),
        ],
        "{held}"
    );
    assert_eq!(lines_returned(&held), vec![(PARTNER_MCHID.into(), 250), (SP_MCHID.into(), 60)], "every fen shared came back: {held}");
    assert_eq!(
        returned(app, &org.admin, "T_RT_10001").await,
        vec![("partner".into(), 250, "returned".into()), ("platform".into(), 60, "returned".into())],
        "the books equal the platform's"
    );
    // The partner sees its share given back; nothing more can be refunded.
    assert_eq!(returned(app, &org.p1_admin, "T_RT_10001").await.len(), 2);
    refund_tenant(app, &org, "T_RT_10001", "R_RT_3", 1).await.expect_reason(409, "refund_exceeds_paid");
});

e2e!(a_return_the_platform_fails_stops_the_refund_which_says_why_and_nothing_comes_back_twice, vars = SHARING, |app| {
    let org = org(app).await;
    shared(app, &org, "T_RT_FAIL", 10_001).await;
    let failing = app
        .post(
            "/sandbox/control/profitsharing/return-fail-next",
            json!({"account": PARTNER_MCHID, "fail_reason": "BALANCE_NOT_ENOUGH"}),
            None,
        )
        .await;
    assert_eq!(failing.status, 200, "{}", failing.body);

    let refused = refund_tenant(app, &org, "T_RT_FAIL", "R_RT_F1", 10_001).await;
    refused.expect_reason(409, "return_failed");
    assert_eq!(refused.body["data"]["fail_reason"], "BALANCE_NOT_ENOUGH", "{}", refused.body);
    // The same refund again is answered the same: it was never sent.
    let again = refund_tenant(app, &org, "T_RT_FAIL", "R_RT_F1", 10_001).await;
    again.expect_reason(409, "return_failed");
    let trade = app.get("/sandbox/control/trade?out_trade_no=T_RT_FAIL", None).await;
    assert_eq!(trade.body["refunds"], json!([]), "no refund reached the platform: {}", trade.body);

    // A new refund takes back only what is not back yet: the platform's 60 fen came back once.
    let retried = refund_tenant(app, &org, "T_RT_FAIL", "R_RT_F2", 10_001).await;
    retried.expect(200);
    let held = profit_sharing(app, SUB_MCHID, "T_RT_FAIL").await;
    assert_eq!(
        platform_returns(&held),
        vec![
            (SP_MCHID.into(), 60, "SUCCESS".into()),
            (PARTNER_MCHID.into(), 250, "FAILED".into()),
            (PARTNER_MCHID.into(), 250, "SUCCESS".into()),
        ],
        "{held}"
    );
    assert_eq!(lines_returned(&held), vec![(PARTNER_MCHID.into(), 250), (SP_MCHID.into(), 60)]);
    assert_eq!(
        returned(app, &org.admin, "T_RT_FAIL").await,
        vec![("partner".into(), 250, "returned".into()), ("platform".into(), 60, "returned".into())]
    );
});

e2e!(a_persons_part_cannot_be_taken_back_so_a_refund_needing_it_is_refused_before_anything_moves, vars = SHARING, |app| {
    // The partner is paid to a person's openid (the org's own plan).
    let org = sharing_org(app, SP_MCHID, SUB_MCHID, "wx_return_shop").await;
    shared(app, &org, "T_RT_PERSON", 10_001).await;

    let refused = refund_tenant(app, &org, "T_RT_PERSON", "R_RT_P1", 5_000).await;
    refused.expect_reason(409, "return_failed");
    let message = refused.body["message"].as_str().unwrap();
    assert!(message.contains("person"), "{message}");
    assert_eq!(platform_returns(&profit_sharing(app, SUB_MCHID, "T_RT_PERSON").await), vec![], "nothing was asked back");
    // A refund too small to take any of a share needs no return.
    refund_tenant(app, &org, "T_RT_PERSON", "R_RT_P2", 30).await.expect(200);
});

e2e!(a_share_closed_while_its_payment_was_refunded_is_retried_for_less, vars = SHARING, |app| {
    let org = org(app).await;
    let closing = app
        .post("/sandbox/control/profitsharing/close-next", json!({"account": PARTNER_MCHID, "fail_reason": "ACCOUNT_ABNORMAL"}), None)
        .await;
    assert_eq!(closing.status, 200, "{}", closing.body);
    pay_tenant(app, &org, "T_RT_CLOSED", 10_001).await;
    let closed = eventually(30, "the partner's share closed", async || {
        let items = shares_of(app, &org.admin, "T_RT_CLOSED").await;
        let done = summary(&items) == [("partner".into(), 250, "closed".into()), ("platform".into(), 60, "succeeded".into())];
        if done { Ok(items.into_iter().find(|s| s["role"] == "partner").unwrap()) } else { Err(format!("{items:?}")) }
    })
    .await;

    // Half refunded while the partner's share is closed: the platform gives its part back; the
    // partner's never left the sub-merchant, so it is kept back from the retry instead.
    refund_tenant(app, &org, "T_RT_CLOSED", "R_RT_C1", 5_000).await.expect(200);
    let held = profit_sharing(app, SUB_MCHID, "T_RT_CLOSED").await;
    assert_eq!(platform_returns(&held), vec![(SP_MCHID.into(), 29, "SUCCESS".into())], "{held}");
    let id = closed["id"].as_i64().unwrap();
    let early = app.post(&format!("/api/v1/miniprogram/payment/shares/{id}/retry"), json!({}), Some(&org.admin)).await;
    early.expect_reason(409, "try_again");
    settle_refund(app, "R_RT_C1").await;

    let retried = app.post(&format!("/api/v1/miniprogram/payment/shares/{id}/retry"), json!({}), Some(&org.admin)).await;
    retried.expect(200);
    // floor(250 × 5,000 / 10,001) = 124 kept back: 126 paid.
    assert_eq!((retried.data()["amount"].as_i64(), retried.data()["withheld"].as_i64()), (Some(250), Some(124)), "{}", retried.body);

    let held = unfrozen_on_platform(app, SUB_MCHID, "T_RT_CLOSED").await;
    let retry_no = retried.data()["out_order_no"].as_str().unwrap().to_owned();
    let retry = held["orders"].as_array().unwrap().iter().find(|o| o["out_order_no"] == retry_no.as_str()).cloned().unwrap();
    assert_eq!(retry["lines"][0]["amount"], 126, "{held}");
    assert_eq!(held["unfrozen"]["amount"], 10_001 - 5_000 - (60 - 29) - 126, "the rest is the tenant's, to the fen: {held}");
});

e2e!(lost_return_answers_are_asked_again_under_the_same_numbers_and_nothing_comes_back_twice, vars = SHARING, |app| {
    let org = org(app).await;
    shared(app, &org, "T_RT_LOST", 10_001).await;
    let sandbox = app.running.sandbox.as_ref().unwrap();
    // The platform takes each part back, and its answers are lost: more than the client's own
    // retries, so the refund's first request fails and the caller asks again.
    sandbox.lose_next_pay_answers("/v3/profitsharing/return-orders", 500, "SYSTEM_ERROR", 6).unwrap();

    let mut statuses = Vec::new();
    for _ in 0..8 {
        let r = refund_tenant(app, &org, "T_RT_LOST", "R_RT_L1", 3_333).await;
        statuses.push(r.status);
        if r.status == 200 {
            break;
        }
        assert_eq!(r.status, 502, "{}", r.body);
    }

    assert_eq!(statuses.last(), Some(&200), "{statuses:?}");
    assert!(statuses.len() > 1, "the lost answers failed a request first: {statuses:?}");
    let held = profit_sharing(app, SUB_MCHID, "T_RT_LOST").await;
    assert_eq!(
        platform_returns(&held),
        vec![(SP_MCHID.into(), 19, "SUCCESS".into()), (PARTNER_MCHID.into(), 83, "SUCCESS".into())],
        "one return a part, asked again under its number: {held}"
    );
    assert_eq!(app.get("/sandbox/control/trade?out_trade_no=T_RT_LOST", None).await.body["refunds"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        returned(app, &org.admin, "T_RT_LOST").await,
        vec![("partner".into(), 83, "succeeded".into()), ("platform".into(), 19, "succeeded".into())]
    );
});

e2e!(racing_refunds_of_a_shared_payment_take_every_part_back_once_and_never_more_than_was_paid, vars = SHARING, |app| {
    let org = org(app).await;
    shared(app, &org, "T_RT_RACE", 10_000).await;

    // Nine refunds of 1,250 fen at once on 10,000: eight fit, together the whole payment.
    let racing = (0..9).map(|i| {
        let org = &org;
        async move { refund_tenant(app, org, "T_RT_RACE", &format!("R_RT_RACE_{i}"), 1_250).await }
    });
    let answers = atrium_e2e::join_all(racing).await;

    let ok = answers.iter().filter(|r| r.status == 200).count();
    assert_eq!(ok, 8, "{:?}", answers.iter().map(|r| (r.status, r.body.clone())).collect::<Vec<_>>());
    for r in answers.iter().filter(|r| r.status != 200) {
        r.expect_reason(409, "refund_exceeds_paid");
    }
    let trade = app.get("/sandbox/control/trade?out_trade_no=T_RT_RACE", None).await;
    let refunded: i64 = trade.body["refunds"].as_array().unwrap().iter().map(|r| r["amount"].as_i64().unwrap()).sum();
    assert_eq!(refunded, 10_000, "{}", trade.body);
    let held = profit_sharing(app, SUB_MCHID, "T_RT_RACE").await;
    assert_eq!(lines_returned(&held), vec![(PARTNER_MCHID.into(), 250), (SP_MCHID.into(), 60)], "every fen shared back, once: {held}");
    assert!(platform_returns(&held).iter().all(|r| r.2 == "SUCCESS"), "{held}");
    assert_eq!(
        returned(app, &org.admin, "T_RT_RACE").await,
        vec![("partner".into(), 250, "returned".into()), ("platform".into(), 60, "returned".into())]
    );
});
