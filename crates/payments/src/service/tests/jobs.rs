//! The settle, sweep and reconciliation jobs.
use super::*;
use crate::service::{RECONCILE_SHARES, SWEEP, SWEEP_EVERY_SECS};

#[tokio::test]
async fn a_new_transaction_is_stored_with_its_settling_due_at_its_expiry_once() {
    let ledger = Ledger::default();
    let mut repo = ledger.repo(Some(config()));
    ledger.inserts(&mut repo, 1);
    ledger.tx_writes(&mut repo, 1);
    let mut platform = MockPayPlatform::new();
    platform.expect_jsapi_order().times(1).returning(|_, _| Ok("wx_prepay".into()));
    platform.expect_pay_params().returning(|_, p| Ok(pay_params(p)));
    let svc = with_jobs(repo, platform, MockMerchantKeys::new(), no_queued_jobs());

    svc.unified_order(&tenant_actor(), order_request(Some("T0000001")), None).await.unwrap();
    svc.unified_order(&tenant_actor(), order_request(Some("T0000001")), None).await.unwrap();

    let written = ledger.written();
    assert_eq!(ledger.writes(), [("insert_transaction", "T0000001".to_owned()), ("update_transaction", "T0000001".to_owned())]);
    assert_eq!(written[0].effects.jobs, vec![settle_transaction_job("T0000001", now() + Duration::hours(2))], "due at the default expiry");
    // The transaction is audited with its placing, by the caller, for the tenant.
    let audit = written[0].effects.audit.as_ref().expect("audited");
    assert_eq!(
        (audit.action.as_str(), audit.actor_user_id, audit.tenant_id),
        ("payment.unified_order", Some(tenant_actor().user_id), Some(3))
    );
    assert_eq!(audit.after.as_ref().map(|a| a["out_trade_no"].clone()), Some(serde_json::json!("T0000001")));
    assert_eq!(written[1].effects, Effects::default(), "keeping the prepay id queues nothing");
}

#[tokio::test]
async fn a_settle_job_closes_a_transaction_still_unpaid_after_its_expiry() {
    let (mut repo, cell) = repo_holding(Some(config()), expired(TradeState::NotPay));
    conditional_writes(&mut repo, &cell, 1);
    // Closed only once the platform said it is still unpaid: a sequence.
    let mut seq = Sequence::new();
    let mut platform = MockPayPlatform::new();
    platform
        .expect_query_order()
        .withf(|_, no| no == "T0000001")
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, no| Ok(report(no, TradeState::NotPay)));
    platform.expect_close_order().withf(|_, no| no == "T0000001").times(1).in_sequence(&mut seq).returning(|_, _| Ok(()));
    let svc = svc(repo, platform);

    assert_eq!(svc.run(&settle_tx_job(1)).await, JobOutcome::Done);
    assert_eq!(cell.lock().unwrap().trade_state, TradeState::Closed);
}

#[tokio::test]
async fn a_settle_job_of_a_tenant_whose_configuration_was_removed_fails_for_good() {
    let (repo, _) = repo_holding(None, expired(TradeState::NotPay));
    let mut platform = MockPayPlatform::new();
    platform.expect_query_order().never();
    platform.expect_close_order().never();

    let outcome = svc(repo, platform).run(&settle_tx_job(1)).await;

    assert!(matches!(outcome, JobOutcome::Failed(ref m) if m.contains("payment configuration not found")), "{outcome:?}");
}

#[tokio::test]
async fn a_settle_job_records_a_payment_whose_notification_was_lost() {
    let (mut repo, cell) = repo_holding(Some(config()), expired(TradeState::NotPay));
    conditional_writes(&mut repo, &cell, 1);
    let mut platform = MockPayPlatform::new();
    platform.expect_query_order().withf(|_, no| no == "T0000001").times(1).returning(|_, no| Ok(report(no, TradeState::Success)));
    platform.expect_close_order().never();
    let svc = svc(repo, platform);

    assert_eq!(svc.run(&settle_tx_job(1)).await, JobOutcome::Done);
    let stored = cell.lock().unwrap().clone();
    assert_eq!((stored.trade_state, stored.transaction_id.as_deref()), (TradeState::Success, Some("4200000001")));
}

#[tokio::test]
async fn a_settle_job_leaves_a_settled_transaction_alone() {
    for state in [TradeState::Success, TradeState::Closed, TradeState::Refund] {
        let (repo, _) = repo_holding(Some(config()), expired(state));
        let mut platform = MockPayPlatform::new();
        platform.expect_query_order().never();
        assert_eq!(svc(repo, platform).run(&settle_tx_job(1)).await, JobOutcome::Done, "{state:?}");
    }
}

#[tokio::test]
async fn a_settle_job_backs_off_while_the_payer_pays_or_the_platform_is_down_then_gives_up() {
    let cases = [
        (1, Duration::minutes(1)),
        (2, Duration::minutes(5)),
        (3, Duration::minutes(10)),
        (4, Duration::minutes(30)),
        (9, Duration::minutes(30)),
    ];
    for (attempts, wait) in cases {
        let (mut repo, cell) = repo_holding(Some(config()), expired(TradeState::NotPay));
        conditional_writes(&mut repo, &cell, 1);
        let mut platform = MockPayPlatform::new();
        platform.expect_query_order().returning(|_, no| Ok(report(no, TradeState::UserPaying)));
        platform.expect_close_order().never();
        let outcome = svc(repo, platform).run(&settle_tx_job(attempts)).await;
        assert!(
            matches!(outcome, JobOutcome::Retry { at, ref reason } if at == now() + wait && reason.contains("still paying")),
            "{attempts}: {outcome:?}"
        );
    }
    let (repo, _) = repo_holding(Some(config()), expired(TradeState::NotPay));
    let mut platform = MockPayPlatform::new();
    platform.expect_query_order().returning(|_, _| Err(PayPlatformError::Unavailable("HTTP 503".into())));
    let svc = svc(repo, platform);
    let outcome = svc.run(&settle_tx_job(1)).await;
    assert!(matches!(outcome, JobOutcome::Retry { ref reason, .. } if reason.contains("HTTP 503")), "{outcome:?}");
    let outcome = svc.run(&settle_tx_job(MAX_ATTEMPTS)).await;
    assert!(matches!(outcome, JobOutcome::Failed(ref m) if m.contains("given up") && m.contains("HTTP 503")), "{outcome:?}");
}

#[tokio::test]
async fn a_settle_job_closes_locally_an_order_the_platform_never_got() {
    let (mut repo, cell) = repo_holding(Some(config()), expired(TradeState::NotPay));
    conditional_writes(&mut repo, &cell, 1);
    let mut platform = MockPayPlatform::new();
    platform.expect_query_order().returning(|_, _| Err(refused(404, "ORDER_NOT_EXIST")));
    platform.expect_close_order().never();

    assert_eq!(svc(repo, platform).run(&settle_tx_job(1)).await, JobOutcome::Done);
    assert_eq!(cell.lock().unwrap().trade_state, TradeState::Closed);
}

#[tokio::test]
async fn a_settle_job_paid_at_the_last_moment_tries_again() {
    let (mut repo, cell) = repo_holding(Some(config()), expired(TradeState::NotPay));
    conditional_writes(&mut repo, &cell, 0);
    let mut platform = MockPayPlatform::new();
    platform.expect_query_order().returning(|_, no| Ok(report(no, TradeState::NotPay)));
    platform.expect_close_order().returning(|_, _| Err(refused(400, "ORDERPAID")));

    let outcome = svc(repo, platform).run(&settle_tx_job(1)).await;
    assert!(matches!(outcome, JobOutcome::Retry { ref reason, .. } if reason.contains("paid meanwhile")), "{outcome:?}");
    assert_eq!(cell.lock().unwrap().trade_state, TradeState::NotPay, "the next query records the payment");
}

#[tokio::test]
async fn a_refund_is_reserved_with_its_settling_a_minute_later() {
    // Reserved with its settle job before the platform is asked (a crash in between leaves
    // the job to find out), then the answer kept: a sequence.
    let mut seq = Sequence::new();
    let ledger = Ledger::holding(vec![tx("T0000001", TradeState::Success)], vec![]);
    let mut repo = ledger.repo(Some(config()));
    ledger.reservations(&mut repo, 1).in_sequence(&mut seq);
    let mut platform = MockPayPlatform::new();
    platform
        .expect_refund()
        .withf(|_, o| o.out_refund_no == "R1" && o.amount == Money::from_fen(300))
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, _| Ok(refund_report(RefundStatus::Processing)));
    ledger.refund_writes(&mut repo, 1).in_sequence(&mut seq);
    let svc = with_jobs(repo, platform, MockMerchantKeys::new(), no_queued_jobs());

    svc.refund(&tenant_actor(), refund_request(300, Some("R1")), None).await.unwrap();

    let written = ledger.written();
    assert_eq!(ledger.writes(), [("reserve_refund", "R1".to_owned()), ("update_refund", "R1".to_owned())]);
    assert_eq!(written[0].effects.jobs, vec![settle_refund_job_for("R1")]);
    let audit = written[0].effects.audit.as_ref().expect("the refund is audited with its reservation");
    assert_eq!((audit.action.as_str(), audit.tenant_id), ("payment.refund", Some(3)));
    assert_eq!(
        audit.after.as_ref().map(|a| (a["out_refund_no"].clone(), a["amount"].clone())),
        Some((serde_json::json!("R1"), serde_json::json!(300)))
    );
    assert_eq!(written[1].effects, Effects::default(), "the refund id changes no status");
}

#[tokio::test]
async fn a_refund_settle_job_queries_until_the_refund_settles() {
    let (repo, cell) = repo_with_refund(RefundStatus::Processing);
    let mut platform = MockPayPlatform::new();
    platform.expect_query_refund().withf(|_, no| no == "R1").times(1).returning(|_, _| Ok(refund_report(RefundStatus::Processing)));
    let outcome = svc(repo, platform).run(&settle_refund_job(2)).await;
    assert!(matches!(outcome, JobOutcome::Retry { at, .. } if at == now() + Duration::minutes(5)), "{outcome:?}");
    assert_eq!(cell.lock().unwrap().status, RefundStatus::Processing);

    let (repo, cell) = repo_with_refund(RefundStatus::Processing);
    let mut platform = MockPayPlatform::new();
    platform.expect_query_refund().withf(|_, no| no == "R1").times(1).returning(|_, _| Ok(refund_report(RefundStatus::Succeeded)));
    assert_eq!(svc(repo, platform).run(&settle_refund_job(3)).await, JobOutcome::Done);
    assert_eq!(cell.lock().unwrap().status, RefundStatus::Succeeded);

    let (repo, _) = repo_with_refund(RefundStatus::Failed);
    let mut platform = MockPayPlatform::new();
    platform.expect_query_refund().never();
    assert_eq!(svc(repo, platform).run(&settle_refund_job(1)).await, JobOutcome::Done);
}

#[tokio::test]
async fn a_refund_the_platform_never_got_is_asked_again_under_its_number() {
    // Asked again only after the platform said it never got it: a sequence.
    let mut seq = Sequence::new();
    let (repo, cell) = repo_with_refund(RefundStatus::Processing);
    let mut platform = MockPayPlatform::new();
    platform
        .expect_query_refund()
        .withf(|_, no| no == "R1")
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, _| Err(refused(404, "RESOURCE_NOT_EXISTS")));
    platform
        .expect_refund()
        .withf(|_, r| r.out_refund_no == "R1" && r.amount == Money::from_fen(300) && r.total == Money::from_fen(1000))
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, _| Ok(refund_report(RefundStatus::Processing)));
    let outcome = svc(repo, platform).run(&settle_refund_job(1)).await;
    assert!(matches!(outcome, JobOutcome::Retry { .. }), "{outcome:?}");
    assert_eq!(cell.lock().unwrap().refund_id.as_deref(), Some("50000000382019052709732678859"));

    // Refused outright: the refund failed and its amount is free again.
    let (repo, cell) = repo_with_refund(RefundStatus::Processing);
    let mut platform = MockPayPlatform::new();
    platform.expect_query_refund().returning(|_, _| Err(refused(404, "RESOURCE_NOT_EXISTS")));
    platform
        .expect_refund()
        .withf(|_, r| r.out_refund_no == "R1" && r.amount == Money::from_fen(300))
        .times(1)
        .returning(|_, _| Err(refused(403, "NOT_ENOUGH")));
    assert_eq!(svc(repo, platform).run(&settle_refund_job(1)).await, JobOutcome::Done);
    assert_eq!(cell.lock().unwrap().status, RefundStatus::Failed);
}

#[tokio::test]
async fn the_daily_job_queues_each_active_tenants_reconciliation_and_the_next_day() {
    let mut repo = MockPaymentRepo::new();
    // The CST day 2026-03-31 is [03-30 16:00, 03-31 16:00) UTC.
    let from = Utc.with_ymd_and_hms(2026, 3, 30, 16, 0, 0).single().unwrap();
    repo.expect_tenants_with_activity().with(eq(from), eq(from + Duration::days(1))).times(1).returning(|_, _| Ok(vec![3, 4]));
    let (jobs, queued) = recording_jobs();
    let svc = with_jobs(repo, MockPayPlatform::new(), MockMerchantKeys::new(), jobs);
    let mut day = job(RECONCILE_DAY, serde_json::json!({"date": "2026-03-31"}), 1);
    day.tenant_id = None;

    assert_eq!(svc.run(&day).await, JobOutcome::Done);

    let queued = queued.lock().unwrap().clone();
    let summary: Vec<(&str, Option<Id>, Option<&str>)> =
        queued.iter().map(|j| (j.kind.as_str(), j.tenant_id, j.dedupe_key.as_deref())).collect();
    assert_eq!(
        summary,
        [
            (RECONCILE, Some(3), Some("3:2026-03-31")),
            (RECONCILE_SHARES, Some(3), Some("3:2026-03-31:0:0")),
            (RECONCILE, Some(4), Some("4:2026-03-31")),
            (RECONCILE_SHARES, Some(4), Some("4:2026-03-31:0:0")),
            (RECONCILE_DAY, None, Some("2026-04-01"))
        ]
    );
    assert_eq!(queued[1].payload, serde_json::json!({"date": "2026-03-31", "after_payment": 0, "after_return": 0}));
    // The next day's run: 2026-04-02 10:30 CST.
    assert_eq!(queued[4].run_at, Utc.with_ymd_and_hms(2026, 4, 2, 2, 30, 0).single().unwrap());
    assert_eq!(queued[4].payload, serde_json::json!({"date": "2026-04-01"}));
}

#[tokio::test]
async fn scheduling_queues_the_first_morning_run_still_ahead() {
    // now() is 2026-04-01 12:00 CST, after this morning's run: tomorrow's reconciles today.
    let (jobs, queued) = recording_jobs();
    with_jobs(MockPaymentRepo::new(), MockPayPlatform::new(), MockMerchantKeys::new(), jobs).schedule_reconciliation().await.unwrap();
    let queued = queued.lock().unwrap().clone();
    assert_eq!((queued[0].kind.as_str(), queued[0].dedupe_key.as_deref()), (RECONCILE_DAY, Some("2026-04-01")));
    assert_eq!(queued[0].run_at, Utc.with_ymd_and_hms(2026, 4, 2, 2, 30, 0).single().unwrap());
}

#[tokio::test]
async fn the_reconciliation_job_settles_what_the_bill_proves() {
    let (mut repo, cell) = repo_holding(Some(config()), tx("T_LOST", TradeState::NotPay));
    conditional_writes(&mut repo, &cell, 1);
    repo.expect_transactions_by_numbers().returning(|_, _| Ok(vec![tx("T_LOST", TradeState::NotPay)]));
    repo.expect_paid_between().returning(|_, _, _| Ok(vec![]));
    repo.expect_refunds_succeeded_between().returning(|_, _, _| Ok(vec![]));
    let mut platform = MockPayPlatform::new();
    platform.expect_trade_bill().times(1).returning(|_, _| Ok(vec![bill_line("T_LOST", 1000, None), bill_line("T_UNKNOWN", 500, None)]));
    platform.expect_query_order().withf(|_, no| no == "T_LOST").times(1).returning(|_, no| Ok(report(no, TradeState::Success)));
    let svc = svc(repo, platform);

    assert_eq!(svc.run(&job(RECONCILE, serde_json::json!({"date": "2026-03-31"}), 1)).await, JobOutcome::Done);
    assert_eq!(cell.lock().unwrap().trade_state, TradeState::Success);
}

#[tokio::test]
async fn a_reconciliation_the_platform_cannot_serve_runs_again() {
    let mut repo = repo_with(Some(config()));
    repo.expect_transactions_by_numbers().never();
    let mut platform = MockPayPlatform::new();
    platform.expect_trade_bill().returning(|_, _| Err(PayPlatformError::Unavailable("timed out".into())));
    let outcome = svc(repo, platform).run(&job(RECONCILE, serde_json::json!({"date": "2026-03-31"}), 1)).await;
    assert!(matches!(outcome, JobOutcome::Retry { ref reason, .. } if reason.contains("timed out")), "{outcome:?}");
}

#[tokio::test]
async fn an_unreadable_job_fails_for_good() {
    let svc = svc(MockPaymentRepo::new(), MockPayPlatform::new());
    let outcome = svc.run(&job(SETTLE_TRANSACTION, serde_json::json!({"nope": 1}), 1)).await;
    assert!(matches!(outcome, JobOutcome::Failed(ref m) if m.contains("unreadable")), "{outcome:?}");
    let outcome = svc.run(&job("payment.unknown", serde_json::json!({}), 1)).await;
    assert!(matches!(outcome, JobOutcome::Failed(_)), "{outcome:?}");
}

#[tokio::test]
async fn a_settle_job_whose_query_reports_another_amount_keeps_the_discrepancy_and_stops() {
    let (mut repo, cell) = repo_holding(Some(config()), expired(TradeState::NotPay));
    let effects = conditional_writes(&mut repo, &cell, 1);
    let mut platform = MockPayPlatform::new();
    platform
        .expect_query_order()
        .times(1)
        .returning(|_, no| Ok(PlatformTransaction { amount: Some(Money::from_fen(1)), ..report(no, TradeState::Success) }));
    platform.expect_close_order().never();

    let outcome = svc(repo, platform).run(&settle_tx_job(1)).await;

    assert_eq!(outcome, JobOutcome::Done);
    let stored = cell.lock().unwrap().clone();
    assert_eq!(stored.trade_state, TradeState::NotPay);
    assert!(stored.discrepancy.is_some() && !stored.is_paid());
    let effects = effects.lock().unwrap().clone();
    assert_eq!(effects.len(), 1);
    assert_eq!(effects[0].audit.as_ref().map(|a| a.action.as_str()), Some("payment.discrepancy"));
    assert_eq!(effects[0].jobs, [], "a transaction of the payment routes has no order to tell");
}

// --- the sweep -----------------------------------------------------------------------------------

/// The service with its clock at `at`, over `repo` and `jobs` (the sweep needs no platform).
fn sweeping_at(at: Timestamp, repo: MockPaymentRepo, jobs: MockJobStore) -> PaymentService {
    PaymentService::new(
        Arc::new(repo),
        Arc::new(MockPayPlatform::new()),
        Arc::new(MockMerchantKeys::new()),
        Arc::new(jobs),
        Arc::new(FixedClock::new(at)),
        PaymentSettings::new("https://atrium.example.com"),
    )
}

/// The sweep job as the queue hands it out: no tenant, an empty payload.
fn sweep_job(attempts: i32) -> Job {
    Job { tenant_id: None, ..job(SWEEP, serde_json::json!({}), attempts) }
}

/// The next sweep, due at `at` and keyed by it.
fn next_sweep(at: Timestamp) -> NewJob {
    NewJob { kind: SWEEP.into(), tenant_id: None, payload: serde_json::json!({}), run_at: at, dedupe_key: Some(at.to_rfc3339()) }
}

#[tokio::test]
async fn the_sweep_requeues_a_settle_job_for_each_unsettled_transaction_and_refund_and_queues_the_next_sweep() {
    // Arrange: 04:07:30, between two ten-minute boundaries; the repository finds two
    // transactions (one of another tenant) and two refunds.
    let at = now() + Duration::seconds(450);
    let mut repo = MockPaymentRepo::new();
    let found = Unsettled {
        transactions: vec![
            (TENANT, "T_OLD".into(), at - Duration::hours(3)),
            (4, "T_OTHER".into(), at - Duration::minutes(11)),
            // Not yet expired (the repository would not find it, but whatever it says): the
            // settle job is due at the expiry, never earlier.
            (TENANT, "T_AHEAD".into(), at + Duration::minutes(5)),
        ],
        refunds: vec![(TENANT, "R1".into()), (4, "R2".into())],
    };
    repo.expect_unsettled().with(eq(at - Duration::seconds(SWEEP_EVERY_SECS)), eq(500)).times(1).returning(move |_, _| Ok(found.clone()));
    let (jobs, queued) = recording_jobs();
    let svc = sweeping_at(at, repo, jobs);

    // Act
    let outcome = svc.run(&sweep_job(1)).await;

    // Assert
    assert_eq!(outcome, JobOutcome::Done);
    let settle_tx = |tenant: Id, no: &str, run_at: Timestamp| NewJob {
        kind: SETTLE_TRANSACTION.into(),
        tenant_id: Some(tenant),
        payload: serde_json::json!({ "out_trade_no": no }),
        run_at,
        dedupe_key: Some(format!("{tenant}:{no}")),
    };
    let settle_refund = |tenant: Id, no: &str| NewJob {
        kind: SETTLE_REFUND.into(),
        tenant_id: Some(tenant),
        payload: serde_json::json!({ "out_refund_no": no }),
        run_at: at,
        dedupe_key: Some(format!("{tenant}:{no}")),
    };
    let ten_past = Utc.with_ymd_and_hms(2026, 4, 1, 4, 10, 0).single().unwrap();
    assert_eq!(
        *queued.lock().unwrap(),
        [
            settle_tx(TENANT, "T_OLD", at),
            settle_tx(4, "T_OTHER", at),
            settle_tx(TENANT, "T_AHEAD", at + Duration::minutes(5)),
            settle_refund(TENANT, "R1"),
            settle_refund(4, "R2"),
            next_sweep(ten_past),
        ]
    );
    // The dedupe keys are those the settle jobs were first queued with, so a pending one is
    // not doubled.
    let first = svc.settle_transaction_job(TENANT, "T_OLD", at);
    assert_eq!(first.dedupe_key, queued.lock().unwrap()[0].dedupe_key);
    assert_eq!(svc.settle_refund_job(TENANT, "R1").dedupe_key, queued.lock().unwrap()[3].dedupe_key);
}

#[tokio::test]
async fn a_sweep_that_finds_nothing_queues_only_the_next_sweep() {
    // Arrange: exactly on a boundary (04:00:00): the next sweep is the one ten minutes on.
    let mut repo = MockPaymentRepo::new();
    repo.expect_unsettled().times(1).returning(|_, _| Ok(Unsettled::default()));
    let (jobs, queued) = recording_jobs();
    let svc = sweeping_at(now(), repo, jobs);

    // Act
    let outcome = svc.run(&sweep_job(1)).await;

    // Assert
    assert_eq!(outcome, JobOutcome::Done);
    assert_eq!(*queued.lock().unwrap(), [next_sweep(now() + Duration::minutes(10))]);
}

#[tokio::test]
async fn a_sweep_the_repository_fails_retries_without_queuing_anything() {
    // Arrange
    let mut repo = MockPaymentRepo::new();
    repo.expect_unsettled().times(1).returning(|_, _| Err(Error::internal("connection reset")));
    let svc = sweeping_at(now(), repo, no_queued_jobs());

    // Act
    let outcome = svc.run(&sweep_job(2)).await;

    // Assert: the same sweep runs again (and queues the next one then).
    assert!(
        matches!(outcome, JobOutcome::Retry { at, ref reason } if at == now() + Duration::minutes(5) && reason.contains("connection reset")),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn a_sweep_never_gives_up_or_its_chain_would_end() {
    // Arrange: far past the tries after which a settle job is kept as failed.
    let mut repo = MockPaymentRepo::new();
    repo.expect_unsettled().times(1).returning(|_, _| Err(Error::internal("connection reset")));
    let svc = sweeping_at(now(), repo, no_queued_jobs());

    // Act
    let outcome = svc.run(&sweep_job(crate::MAX_ATTEMPTS + 10)).await;

    // Assert: it waits the longest step and tries again.
    assert!(matches!(outcome, JobOutcome::Retry { at, .. } if at == now() + Duration::minutes(30)), "{outcome:?}");
}

#[tokio::test]
async fn a_sweep_whose_queuing_fails_retries() {
    // Arrange
    let mut repo = MockPaymentRepo::new();
    repo.expect_unsettled().returning(|_, _| Ok(Unsettled { transactions: vec![], refunds: vec![(TENANT, "R1".into())] }));
    let mut jobs = MockJobStore::new();
    jobs.expect_enqueue().times(1).returning(|_| Err(Error::internal("database is locked")));
    let svc = sweeping_at(now(), repo, jobs);

    // Act
    let outcome = svc.run(&sweep_job(1)).await;

    // Assert
    assert!(matches!(outcome, JobOutcome::Retry { ref reason, .. } if reason.contains("database is locked")), "{outcome:?}");
}

#[tokio::test]
async fn scheduling_the_sweep_queues_it_at_the_next_ten_minute_boundary_keyed_by_its_time() {
    // Arrange: 04:00:01 and 04:09:59 both wait for 04:10:00.
    for offset in [1, 599] {
        let (jobs, queued) = recording_jobs();
        let svc = sweeping_at(now() + Duration::seconds(offset), MockPaymentRepo::new(), jobs);

        // Act
        svc.schedule_sweep().await.unwrap();

        // Assert
        assert_eq!(*queued.lock().unwrap(), [next_sweep(now() + Duration::minutes(10))], "{offset}");
    }
}

#[tokio::test]
async fn open_discrepancies_are_the_repositorys_count() {
    let mut repo = MockPaymentRepo::new();
    repo.expect_open_discrepancies().times(1).returning(|| Ok(2));

    assert_eq!(svc(repo, MockPayPlatform::new()).open_discrepancies().await.unwrap(), 2);
}
