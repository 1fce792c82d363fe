//! The pay platform's notifications.
use super::*;

#[tokio::test]
async fn the_same_event_twice_changes_nothing_the_second_time() {
    let (mut repo, cell) = repo_holding(Some(config()), tx("T0000001", TradeState::NotPay));
    conditional_writes(&mut repo, &cell, 1);
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let (check, record) = (seen.clone(), seen.clone());
    repo.expect_notification_seen().times(2).returning(move |_, id| Ok(check.lock().unwrap().contains(&id)));
    repo.expect_record_notification().times(1).returning(move |_, id, _, _| {
        record.lock().unwrap().push(id);
        Ok(())
    });
    let svc = svc(repo, MockPayPlatform::new());
    let paid = event("EV-1", EventResource::Transaction(report("T0000001", TradeState::Success)));

    let first = svc.handle_event(TENANT, paid.clone()).await.unwrap();
    let second = svc.handle_event(TENANT, paid).await.unwrap();

    assert_eq!((first, second), (NotifyOutcome::Applied, NotifyOutcome::Duplicate));
    assert_eq!(cell.lock().unwrap().trade_state, TradeState::Success);
}

#[tokio::test]
async fn a_late_closed_event_after_success_is_acknowledged_and_ignored() {
    let (mut repo, cell) = repo_holding(Some(config()), tx("T0000001", TradeState::Success));
    repo.expect_update_transaction().never();
    repo.expect_notification_seen().times(1).returning(|_, _| Ok(false));
    repo.expect_record_notification().times(1).returning(|_, _, _, _| Ok(()));
    let svc = svc(repo, MockPayPlatform::new());

    let outcome =
        svc.handle_event(TENANT, event("EV-2", EventResource::Transaction(report("T0000001", TradeState::Closed)))).await.unwrap();

    assert_eq!(outcome, NotifyOutcome::Stale);
    assert_eq!(cell.lock().unwrap().trade_state, TradeState::Success);
}

#[tokio::test]
async fn an_event_for_an_unknown_transaction_is_acknowledged() {
    let (mut repo, _) = repo_holding(Some(config()), tx("T0000001", TradeState::NotPay));
    repo.expect_update_transaction().never();
    repo.expect_notification_seen().times(1).returning(|_, _| Ok(false));
    repo.expect_record_notification().times(1).returning(|_, _, _, _| Ok(()));
    let svc = svc(repo, MockPayPlatform::new());

    let outcome =
        svc.handle_event(TENANT, event("EV-3", EventResource::Transaction(report("T_ELSEWHERE", TradeState::Success)))).await.unwrap();

    assert_eq!(outcome, NotifyOutcome::Unknown);
}

#[tokio::test]
async fn a_refund_success_event_settles_a_processing_refund() {
    let mut repo = repo_with(Some(config()));
    repo.expect_notification_seen().times(1).returning(|_, _| Ok(false));
    repo.expect_get_refund().returning(|_, no| Ok(Some(refund(&no, 300, RefundStatus::Processing))));
    repo.expect_update_refund().times(1).returning(|r, read_status, _| {
        assert_eq!(read_status, RefundStatus::Processing);
        assert_eq!((r.status, r.succeeded_at, r.refund_id.as_deref()), (RefundStatus::Succeeded, Some(now()), Some("5002")));
        Ok(true)
    });
    repo.expect_record_notification()
        .with(eq(TENANT), eq("EV-4".to_owned()), eq("REFUND.SUCCESS".to_owned()), eq(now()))
        .times(1)
        .returning(|_, _, _, _| Ok(()));
    let svc = svc(repo, MockPayPlatform::new());
    let settled = PlatformRefund {
        out_refund_no: "R1".into(),
        out_trade_no: Some("T0000001".into()),
        refund_id: Some("5002".into()),
        status: RefundStatus::Succeeded,
        amount: Some(Money::from_fen(300)),
        success_time: Some(now()),
        sub_mchid: None,
    };

    let outcome = svc
        .handle_event(TENANT, PayEvent { id: "EV-4".into(), event_type: "REFUND.SUCCESS".into(), resource: EventResource::Refund(settled) })
        .await
        .unwrap();

    assert_eq!(outcome, NotifyOutcome::Applied);
}

fn notification() -> NotificationRequest {
    NotificationRequest {
        timestamp: "1775016000".into(),
        nonce: "n".into(),
        signature: "sig".into(),
        serial: "PUB_KEY_ID_1".into(),
        body: b"{}".to_vec(),
    }
}

#[tokio::test]
async fn a_notification_that_fails_verification_changes_nothing() {
    let mut repo = repo_with(Some(config()));
    repo.expect_notification_seen().never();
    repo.expect_record_notification().never();
    let mut platform = MockPayPlatform::new();
    platform
        .expect_open_notification()
        .with(mockall::predicate::always(), eq(notification()), eq(now()))
        .times(1)
        .returning(|_, _, _| Err(NotificationError::BadSignature));
    let svc = svc(repo, platform);

    let err = svc.receive_notification(TENANT, notification()).await.unwrap_err();

    assert_eq!(err, NotificationError::BadSignature);
}

#[tokio::test]
async fn a_notification_for_a_tenant_without_keys_is_refused() {
    let mut platform = MockPayPlatform::new();
    platform.expect_open_notification().never();
    let svc = svc(repo_with(None), platform);

    let err = svc.receive_notification(TENANT, notification()).await.unwrap_err();

    assert_eq!(err, NotificationError::NotConfigured);
}

#[tokio::test]
async fn a_verified_notification_whose_effect_cannot_be_stored_asks_for_a_retry() {
    let mut repo = repo_with(Some(config()));
    repo.expect_notification_seen().times(1).returning(|_, _| Err(Error::Unavailable { message: "db".into(), retry_after_secs: 1 }));
    repo.expect_record_notification().never();
    let mut platform = MockPayPlatform::new();
    platform.expect_open_notification().times(1).returning(|_, _, _| Ok(event("EV-5", EventResource::Other)));
    let svc = svc(repo, platform);

    let err = svc.receive_notification(TENANT, notification()).await.unwrap_err();

    assert_eq!(err, NotificationError::Unavailable);
}

#[tokio::test]
async fn a_payment_of_one_fen_for_ten_thousand_is_kept_as_an_audited_discrepancy_and_its_settling_stops() {
    let due = Transaction { amount: Money::from_fen(10_000), expires_at: now() - Duration::minutes(1), ..order_tx(TradeState::NotPay) };
    let ledger = Ledger::holding(vec![due], vec![]);
    let mut repo = ledger.repo(Some(config()));
    ledger.tx_writes(&mut repo, 1);
    repo.expect_notification_seen().returning(|_, _| Ok(false));
    repo.expect_record_notification().times(2).returning(|_, _, _, _| Ok(()));
    let mut platform = MockPayPlatform::new();
    platform.expect_query_order().never();
    platform.expect_close_order().never();
    let svc = svc(repo, platform);
    let one_fen = PlatformTransaction { amount: Some(Money::from_fen(1)), ..report(ORDER_NO, TradeState::Success) };
    let two_fen = PlatformTransaction { amount: Some(Money::from_fen(2)), ..one_fen.clone() };

    let noticed = svc.handle_event(TENANT, event("EV-1", EventResource::Transaction(one_fen))).await.unwrap();
    let again = svc.handle_event(TENANT, event("EV-2", EventResource::Transaction(two_fen))).await.unwrap();
    let settled = svc.run(&job(SETTLE_TRANSACTION, serde_json::json!({ "out_trade_no": ORDER_NO }), 1)).await;

    assert_eq!((noticed, again), (NotifyOutcome::Applied, NotifyOutcome::Stale), "recorded once");
    let stored = ledger.tx(ORDER_NO).unwrap();
    assert!(!stored.is_paid());
    assert_eq!(stored.trade_state, TradeState::NotPay, "not paid, and not closed by the settle job");
    let why = stored.discrepancy.clone().unwrap();
    assert!(why.contains("1 fen") && why.contains("10000 fen"), "{why}");
    assert_eq!(settled, JobOutcome::Done, "a person resolves a discrepancy, not the settle job");
    let written = ledger.written();
    assert_eq!(written.len(), 1);
    assert_jobs(&written[0].effects, &[order_changed(ORDER)]);
    let audit = written[0].effects.audit.clone().unwrap();
    assert_eq!(
        (audit.action.as_str(), audit.target_type, audit.target_id, audit.tenant_id, audit.actor_user_id),
        ("payment.discrepancy", "payment_transaction", Some(5), Some(TENANT), None)
    );
    assert_eq!(
        audit.after,
        Some(serde_json::json!({ "out_trade_no": ORDER_NO, "order_id": ORDER, "discrepancy": why })),
        "the record says what was reported"
    );
}
