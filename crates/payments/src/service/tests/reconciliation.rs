//! The reconciliation against the trade bill, and how platform failures are answered.
use super::*;

// --- reconciliation -----------------------------------------------------------------------------

#[tokio::test]
async fn reconciliation_sorts_each_line_into_matched_missing_or_mismatched() {
    let mut repo = repo_with(Some(config()));
    let paid = |no: &str, fen: i64| Transaction { amount: Money::from_fen(fen), ..tx(no, TradeState::Success) };
    repo.expect_transactions_by_numbers()
        .withf(|t, nos| *t == TENANT && nos == &["T_MATCH", "T_LOST", "T_DIFF"])
        .times(1)
        .returning(move |_, _| Ok(vec![paid("T_MATCH", 1000), paid("T_DIFF", 999)]));
    // The CST day 2026-03-31 is [03-30 16:00, 03-31 16:00) UTC.
    let from = Utc.with_ymd_and_hms(2026, 3, 30, 16, 0, 0).single().unwrap();
    repo.expect_paid_between()
        .with(eq(TENANT), eq(from), eq(from + Duration::days(1)))
        .times(1)
        .returning(move |_, _, _| Ok(vec![paid("T_MATCH", 1000), paid("T_DIFF", 999), paid("T_OURS_ONLY", 500)]));
    repo.expect_refunds_by_numbers().times(1).returning(|_, _| Ok(vec![refund("R_MATCH", 300, RefundStatus::Succeeded)]));
    repo.expect_refunds_succeeded_between()
        .times(1)
        .returning(|_, _, _| Ok(vec![refund("R_MATCH", 300, RefundStatus::Succeeded), refund("R_OURS", 100, RefundStatus::Succeeded)]));
    let mut platform = MockPayPlatform::new();
    platform.expect_trade_bill().with(mockall::predicate::always(), eq(bill_day())).times(1).returning(|_, _| {
        Ok(vec![
            bill_line("T_MATCH", 1000, None),
            bill_line("T_LOST", 700, None),
            bill_line("T_DIFF", 1000, None),
            bill_line("T_MATCH", 1000, Some(("R_MATCH", 300))),
            bill_line("T_MATCH", 1000, Some(("R_LOST", 50))),
        ])
    });
    let svc = svc(repo, platform);

    let view = svc.reconcile(&tenant_actor(), None, bill_day()).await.unwrap();

    assert_eq!((view.bill_lines, view.matched), (5, 2));
    let lost: Vec<(&str, Option<&str>)> =
        view.missing_locally.iter().map(|i| (i.out_trade_no.as_str(), i.out_refund_no.as_deref())).collect();
    assert_eq!(lost, [("T_LOST", None), ("T_MATCH", Some("R_LOST"))]);
    let ours: Vec<(&str, Option<&str>)> =
        view.missing_on_platform.iter().map(|i| (i.out_trade_no.as_str(), i.out_refund_no.as_deref())).collect();
    assert_eq!(ours, [("T_OURS_ONLY", None), ("T0000001", Some("R_OURS"))]);
    assert_eq!(view.amount_mismatch.len(), 1);
    assert_eq!(
        (view.amount_mismatch[0].platform_amount, view.amount_mismatch[0].local_amount),
        (Money::from_fen(1000), Money::from_fen(999))
    );
}

/// A repository whose tenant holds `txs` (found by number and, the paid ones, by payment
/// time) and no refunds.
fn repo_with_transactions(txs: Vec<Transaction>) -> MockPaymentRepo {
    let mut repo = repo_with(Some(config()));
    let by_number = txs.clone();
    repo.expect_transactions_by_numbers()
        .returning(move |_, nos| Ok(by_number.iter().filter(|t| nos.contains(&t.out_trade_no)).cloned().collect()));
    repo.expect_paid_between().returning(move |_, _, _| Ok(txs.iter().filter(|t| t.success_time.is_some()).cloned().collect()));
    repo.expect_refunds_by_numbers().never();
    repo.expect_refunds_succeeded_between().returning(|_, _, _| Ok(vec![]));
    repo
}

/// Transactions holding a discrepancy: one reported in USD (the bill shows its amount), one
/// reported at 1 fen, and one paid later but holding the discrepancy of an earlier report;
/// and one paid as it should be.
fn with_discrepancies() -> (Vec<Transaction>, Vec<BillLine>) {
    let odd = |no: &str, state: TradeState, why: &str| Transaction {
        transaction_id: Some(format!("42{no}")),
        discrepancy: Some(why.into()),
        ..tx(no, state)
    };
    let txs = vec![
        odd("T_USD", TradeState::NotPay, "the pay platform reported 1000 fen in USD paid for a transaction of 1000 fen in CNY"),
        odd("T_ONE", TradeState::NotPay, "the pay platform reported 1 fen in CNY paid for a transaction of 1000 fen in CNY"),
        odd("T_LATE", TradeState::Success, "the pay platform reported 1 fen in CNY paid for a transaction of 1000 fen in CNY"),
        tx("T_OK", TradeState::Success),
    ];
    let lines =
        vec![bill_line("T_USD", 1000, None), bill_line("T_ONE", 1, None), bill_line("T_LATE", 1000, None), bill_line("T_OK", 1000, None)];
    (txs, lines)
}

#[tokio::test]
async fn a_bill_payment_of_a_transaction_holding_a_discrepancy_is_an_amount_mismatch_not_matched_nor_missing() {
    // Arrange
    let (txs, lines) = with_discrepancies();
    let mut platform = MockPayPlatform::new();
    platform.expect_trade_bill().times(1).returning(move |_, _| Ok(lines.clone()));
    let svc = svc(repo_with_transactions(txs), platform);

    // Act
    let view = svc.reconcile(&tenant_actor(), None, bill_day()).await.unwrap();

    // Assert
    assert_eq!((view.bill_lines, view.matched), (4, 1), "only T_OK matches");
    assert!(view.missing_locally.is_empty(), "{:?}", view.missing_locally);
    assert!(view.missing_on_platform.is_empty(), "{:?}", view.missing_on_platform);
    let mismatched: Vec<(ReconciliationKind, &str, Option<&str>, Money, Money)> = view
        .amount_mismatch
        .iter()
        .map(|m| (m.kind, m.out_trade_no.as_str(), m.out_refund_no.as_deref(), m.platform_amount, m.local_amount))
        .collect();
    let fen = Money::from_fen;
    assert_eq!(
        mismatched,
        [
            (ReconciliationKind::Payment, "T_USD", None, fen(1000), fen(1000)),
            (ReconciliationKind::Payment, "T_ONE", None, fen(1), fen(1000)),
            (ReconciliationKind::Payment, "T_LATE", None, fen(1000), fen(1000)),
        ]
    );
}

#[tokio::test]
async fn the_reconciliation_job_leaves_a_transaction_holding_a_discrepancy_to_a_person() {
    // Arrange
    let (txs, lines) = with_discrepancies();
    let mut platform = MockPayPlatform::new();
    platform.expect_trade_bill().times(1).returning(move |_, _| Ok(lines.clone()));
    platform.expect_query_order().never();
    let mut repo = repo_with_transactions(txs);
    repo.expect_update_transaction().never();
    let svc = svc(repo, platform);

    // Act
    let outcome = svc.run(&job(RECONCILE, serde_json::json!({"date": "2026-03-31"}), 1)).await;

    // Assert
    assert_eq!(outcome, JobOutcome::Done);
}

#[tokio::test]
async fn reconciliation_is_for_a_past_day_within_three_months() {
    let mut platform = MockPayPlatform::new();
    platform.expect_trade_bill().never();
    let svc = svc(repo_with(Some(config())), platform);
    // now() is 2026-04-01 12:00 in China: 04-01 is today there.
    let today = NaiveDate::from_ymd_opt(2026, 4, 1).unwrap();

    let current = svc.reconcile(&tenant_actor(), None, today).await.unwrap_err();
    let ancient = svc.reconcile(&tenant_actor(), None, today - Duration::days(91)).await.unwrap_err();

    assert_eq!(field_of(&current), ["date"]);
    assert_eq!(field_of(&ancient), ["date"]);
}

// --- error mapping -------------------------------------------------------------------------------

#[test]
fn platform_failures_map_to_400_409_or_502_and_never_500() {
    assert!(
        matches!(platform_error(refused(400, "PARAM_ERROR")), Error::Invalid(ref f) if f[0].field == "pay_platform" && f[0].message.starts_with("PARAM_ERROR: "))
    );
    assert!(
        matches!(platform_error(refused(404, "ORDER_NOT_EXIST")), Error::Invalid(ref f) if f[0].message.starts_with("ORDER_NOT_EXIST"))
    );
    let blocked =
        |e: Error, code: &str| matches!(e, Error::Blocked(_, ref f) if f[0].field == "pay_platform" && f[0].message.starts_with(code));
    assert!(blocked(platform_error(refused(403, "RULE_LIMIT")), "RULE_LIMIT: "));
    assert!(blocked(platform_error(refused(429, "FREQUENCY_LIMITED")), "FREQUENCY_LIMITED: "));
    assert!(blocked(platform_error(refused(400, "ORDERPAID")), "ORDERPAID: "));
    assert!(matches!(platform_error(PayPlatformError::Unavailable("HTTP 500".into())), Error::Upstream(_)));
    assert!(matches!(platform_error(PayPlatformError::Credentials("bad PEM".into())), Error::Conflict(..)));
}
