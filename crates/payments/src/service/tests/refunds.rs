//! Refunds through the payment routes.
use super::*;

#[tokio::test]
async fn a_refund_reserves_its_amount_then_asks_the_platform() {
    // Reserved (under the lock, against what is left) before the platform hears of it, and
    // the platform's answer kept after: a sequence.
    let mut seq = Sequence::new();
    let (mut repo, _) = repo_holding(Some(config()), tx("T0000001", TradeState::Success));
    let stored: Arc<Mutex<Option<Refund>>> = Arc::new(Mutex::new(None));
    let (keep, read, write) = (stored.clone(), stored.clone(), stored.clone());
    repo.expect_reserve_refund()
        .withf(|r, rule, _| {
            (r.out_refund_no.as_str(), r.out_trade_no.as_str(), r.amount, r.status)
                == ("R1", "T0000001", Money::from_fen(300), RefundStatus::Processing)
                && *rule == RefundRule { window: Duration::days(365), max_refunds: 50 }
        })
        .times(1)
        .in_sequence(&mut seq)
        .returning(move |r, _, _| {
            *keep.lock().unwrap() = Some(r.clone());
            Ok(RefundReservation::Reserved(r))
        });
    repo.expect_get_refund().returning(move |_, _| Ok(read.lock().unwrap().clone()));
    let mut platform = MockPayPlatform::new();
    platform
        .expect_refund()
        .withf(|_, o| {
            o.out_trade_no == "T0000001"
                && o.out_refund_no == "R1"
                && o.amount == Money::from_fen(300)
                && o.total == Money::from_fen(1000)
                && o.notify_url.ends_with("/notify/3")
        })
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, o| {
            Ok(PlatformRefund {
                out_refund_no: o.out_refund_no.clone(),
                out_trade_no: Some(o.out_trade_no.clone()),
                refund_id: Some("50000000382019052709732678859".into()),
                status: RefundStatus::Processing,
                amount: Some(o.amount),
                success_time: None,
                sub_mchid: None,
            })
        });
    repo.expect_update_refund().times(1).in_sequence(&mut seq).returning(move |r, read_status, _| {
        assert_eq!(read_status, RefundStatus::Processing);
        *write.lock().unwrap() = Some(r);
        Ok(true)
    });
    let svc = svc(repo, platform);

    let view = svc.refund(&tenant_actor(), refund_request(300, Some("R1")), None).await.unwrap();

    assert_eq!((view.status, view.amount), (RefundStatus::Processing, Money::from_fen(300)));
    assert_eq!(stored.lock().unwrap().clone().unwrap().refund_id.as_deref(), Some("50000000382019052709732678859"));
}

#[tokio::test]
async fn only_a_paid_transaction_can_be_refunded() {
    for unpaid in
        [tx("T0000001", TradeState::NotPay), Transaction { discrepancy: Some("1 fen paid".into()), ..tx("T0000001", TradeState::NotPay) }]
    {
        let ledger = Ledger::holding(vec![unpaid], vec![]);
        let mut repo = ledger.repo(Some(config()));
        ledger.reservations(&mut repo, 1);
        let mut platform = MockPayPlatform::new();
        platform.expect_refund().never();
        let svc = svc(repo, platform);

        let err = svc.refund(&tenant_actor(), refund_request(100, None), None).await.unwrap_err();

        assert!(matches!(err, Error::Conflict(_, ref m) if m.contains("only a paid transaction")), "{err:?}");
        assert_eq!(ledger.refunds(), [], "nothing reserved");
    }
}

#[tokio::test]
async fn a_refund_larger_than_the_payment_is_rejected_and_a_refund_of_nothing_too() {
    let (mut repo, _) = repo_holding(Some(config()), tx("T0000001", TradeState::Success));
    repo.expect_reserve_refund().never();
    let svc = svc(repo, MockPayPlatform::new());

    let over = svc.refund(&tenant_actor(), refund_request(1001, None), None).await.unwrap_err();
    let zero = svc.refund(&tenant_actor(), refund_request(0, None), None).await.unwrap_err();

    assert_eq!(field_of(&over), ["amount"]);
    assert_eq!(field_of(&zero), ["amount"]);
}

#[tokio::test]
async fn a_refund_larger_than_remaining_amount_is_rejected() {
    let ledger = Ledger::holding(
        vec![tx("T0000001", TradeState::Refund)],
        vec![refund("R0", 500, RefundStatus::Succeeded), refund("R00", 300, RefundStatus::Processing)],
    );
    let mut repo = ledger.repo(Some(config()));
    ledger.reservations(&mut repo, 1);
    let mut platform = MockPayPlatform::new();
    platform.expect_refund().never();
    let svc = svc(repo, platform);

    let err = svc.refund(&tenant_actor(), refund_request(300, None), None).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(_, ref m) if m.contains("only 200 fen")), "{err:?}");
    assert_eq!(ledger.refunds().len(), 2, "nothing reserved");
}

#[tokio::test]
async fn the_fifty_first_refund_is_rejected() {
    let fifty = (0..50).map(|i| refund(&format!("R{i}"), 1, RefundStatus::Succeeded)).collect();
    let ledger = Ledger::holding(vec![tx("T0000001", TradeState::Refund)], fifty);
    let mut repo = ledger.repo(Some(config()));
    ledger.reservations(&mut repo, 1);
    let mut platform = MockPayPlatform::new();
    platform.expect_refund().never();
    let svc = svc(repo, platform);

    let err = svc.refund(&tenant_actor(), refund_request(1, None), None).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(_, ref m) if m.contains("50 refunds")), "{err:?}");
    assert_eq!(ledger.refunds().len(), 50, "nothing reserved");
}

#[tokio::test]
async fn no_refund_more_than_a_year_after_the_payment() {
    let old = Transaction { success_time: Some(now() - Duration::days(366)), ..tx("T0000001", TradeState::Success) };
    let ledger = Ledger::holding(vec![old], vec![]);
    let mut repo = ledger.repo(Some(config()));
    ledger.reservations(&mut repo, 1);
    let mut platform = MockPayPlatform::new();
    platform.expect_refund().never();
    let svc = svc(repo, platform);

    let err = svc.refund(&tenant_actor(), refund_request(100, None), None).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(_, ref m) if m.contains("365 days")), "{err:?}");
    assert_eq!(ledger.refunds(), [], "nothing reserved");
}

#[tokio::test]
async fn a_refund_the_platform_refuses_gives_its_amount_back() {
    let (mut repo, _) = repo_holding(Some(config()), tx("T0000001", TradeState::Success));
    // Reserved, refused, then given back: a sequence.
    let mut seq = Sequence::new();
    repo.expect_reserve_refund().times(1).in_sequence(&mut seq).returning(|r, _, _| Ok(RefundReservation::Reserved(r)));
    repo.expect_get_refund().returning(|_, no| Ok(Some(refund(&no, 300, RefundStatus::Processing))));
    let mut platform = MockPayPlatform::new();
    platform
        .expect_refund()
        .withf(|_, o| o.out_refund_no == "R1" && o.amount == Money::from_fen(300))
        .times(1)
        .in_sequence(&mut seq)
        .returning(|_, _| Err(refused(403, "NOT_ENOUGH")));
    repo.expect_update_refund().times(1).in_sequence(&mut seq).returning(|r, read_status, _| {
        assert_eq!((read_status, r.status), (RefundStatus::Processing, RefundStatus::Failed));
        Ok(true)
    });
    let svc = svc(repo, platform);

    let err = svc.refund(&tenant_actor(), refund_request(300, Some("R1")), None).await.unwrap_err();

    assert!(matches!(err, Error::Blocked(_, ref f) if f[0].field == "pay_platform" && f[0].message.starts_with("NOT_ENOUGH")), "{err:?}");
}

#[tokio::test]
async fn a_refund_lost_to_an_outage_stays_processing_and_is_a_502() {
    let (mut repo, _) = repo_holding(Some(config()), tx("T0000001", TradeState::Success));
    repo.expect_reserve_refund().times(1).returning(|r, _, _| Ok(RefundReservation::Reserved(r)));
    repo.expect_update_refund().never();
    let mut platform = MockPayPlatform::new();
    platform
        .expect_refund()
        .withf(|_, o| o.out_refund_no == "R1" && o.amount == Money::from_fen(300))
        .times(1)
        .returning(|_, _| Err(PayPlatformError::Unavailable("time-out".into())));
    let svc = svc(repo, platform);

    let err = svc.refund(&tenant_actor(), refund_request(300, Some("R1")), None).await.unwrap_err();

    assert!(matches!(err, Error::Upstream(_)), "{err:?}");
}

#[tokio::test]
async fn a_refund_number_again_is_the_same_refund_and_never_a_different_one() {
    let mut settled = refund("R1", 300, RefundStatus::Succeeded);
    settled.refund_id = Some("5000".into());
    let (mut repo, _) = repo_holding(Some(config()), tx("T0000001", TradeState::Refund));
    repo.expect_reserve_refund().times(2).returning(move |_, _, _| Ok(RefundReservation::Existing(settled.clone())));
    let mut platform = MockPayPlatform::new();
    platform.expect_refund().never();
    let svc = svc(repo, platform);

    let same = svc.refund(&tenant_actor(), refund_request(300, Some("R1")), None).await.unwrap();
    let other = svc.refund(&tenant_actor(), refund_request(200, Some("R1")), None).await.unwrap_err();

    assert_eq!((same.status, same.refund_id.as_deref()), (RefundStatus::Succeeded, Some("5000")));
    assert!(matches!(other, Error::Conflict(_, ref m) if m.contains("different refund")), "{other:?}");
}

#[tokio::test]
async fn a_retried_refund_the_platform_never_acknowledged_is_sent_again_with_the_same_number() {
    let (mut repo, _) = repo_holding(Some(config()), tx("T0000001", TradeState::Success));
    repo.expect_reserve_refund().times(1).returning(|_, _, _| Ok(RefundReservation::Existing(refund("R1", 300, RefundStatus::Processing))));
    repo.expect_get_refund().returning(|_, no| Ok(Some(refund(&no, 300, RefundStatus::Processing))));
    repo.expect_update_refund().times(1).returning(|_, _, _| Ok(true));
    let mut platform = MockPayPlatform::new();
    platform
        .expect_refund()
        .withf(|_, o| o.out_refund_no == "R1" && o.amount == Money::from_fen(300) && o.total == Money::from_fen(1000))
        .times(1)
        .returning(|_, o| {
            Ok(PlatformRefund {
                out_refund_no: o.out_refund_no.clone(),
                out_trade_no: None,
                refund_id: Some("5001".into()),
                status: RefundStatus::Succeeded,
                amount: Some(o.amount),
                success_time: Some(now()),
                sub_mchid: None,
            })
        });
    let svc = svc(repo, platform);

    let view = svc.refund(&tenant_actor(), refund_request(300, Some("R1")), None).await.unwrap();

    assert_eq!((view.status, view.refund_id.as_deref()), (RefundStatus::Succeeded, Some("5001")));
}

// --- an order's transaction, numbers derived from the request, outages -------------------------

#[tokio::test]
async fn refunding_an_orders_transaction_through_the_payment_routes_is_409_naming_the_order() {
    let ledger = Ledger::holding(vec![Transaction { order_id: Some(ORDER), ..tx("T0000001", TradeState::Success) }], vec![]);
    let mut repo = ledger.repo(Some(config()));
    ledger.reservations(&mut repo, 0);
    let mut platform = MockPayPlatform::new();
    platform.expect_refund().never();
    let svc = svc(repo, platform);

    let err = svc.refund(&tenant_actor(), refund_request(300, Some("R1")), None).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(_, ref m) if m.contains(&format!("belongs to order {ORDER}"))), "{err:?}");
    assert_eq!(ledger.refunds(), [], "nothing reserved");
}

#[tokio::test]
async fn a_refund_without_a_number_takes_one_derived_from_the_request_key_so_a_retry_is_the_same_refund() {
    let key = request_key("POST /api/v1/miniprogram/payment/refund", "k-1");
    let expected = key.number(32);
    let ledger = Ledger::holding(vec![tx("T0000001", TradeState::Success)], vec![]);
    let mut repo = ledger.repo(Some(config()));
    ledger.reservations(&mut repo, 2);
    ledger.refund_writes(&mut repo, 1);
    let mut platform = MockPayPlatform::new();
    let sent = expected.clone();
    platform
        .expect_refund()
        .withf(move |_, o| o.out_refund_no == sent && o.amount == Money::from_fen(300))
        .times(1)
        .returning(|_, o| Ok(PlatformRefund { out_refund_no: o.out_refund_no.clone(), ..refund_report(RefundStatus::Processing) }));
    let svc = svc(repo, platform);

    let first = svc.refund(&tenant_actor(), refund_request(300, None), Some(&key)).await.unwrap();
    let retry = svc.refund(&tenant_actor(), refund_request(300, None), Some(&key)).await.unwrap();

    assert_eq!(first.out_refund_no, expected);
    assert_eq!(retry, first, "the stored refund, as it stands");
    assert_eq!(ledger.refunds().len(), 1, "one refund");
}

#[tokio::test]
async fn a_refund_lost_to_an_outage_stays_processing_and_asking_again_sends_the_same_number() {
    let ledger = Ledger::holding(vec![tx("T0000001", TradeState::Success)], vec![]);
    let mut repo = ledger.repo(Some(config()));
    ledger.reservations(&mut repo, 2);
    ledger.refund_writes(&mut repo, 1);
    let sent = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = sent.clone();
    let mut platform = MockPayPlatform::new();
    platform.expect_refund().withf(|_, o| o.amount == Money::from_fen(300)).times(2).returning(move |_, o| {
        let mut sent = log.lock().unwrap();
        sent.push(o.out_refund_no.clone());
        if sent.len() == 1 { Err(PayPlatformError::Unavailable("time-out".into())) } else { Ok(refund_report(RefundStatus::Processing)) }
    });
    let svc = svc(repo, platform);

    let lost = svc.refund(&tenant_actor(), refund_request(300, Some("R1")), None).await.unwrap_err();
    let after_outage = ledger.refunds();
    let again = svc.refund(&tenant_actor(), refund_request(300, Some("R1")), None).await.unwrap();

    assert!(matches!(lost, Error::Upstream(_)), "{lost:?}");
    let statuses: Vec<(&str, RefundStatus)> = after_outage.iter().map(|r| (r.out_refund_no.as_str(), r.status)).collect();
    assert_eq!(statuses, [("R1", RefundStatus::Processing)], "reserved, still processing");
    assert_eq!(*sent.lock().unwrap(), ["R1", "R1"]);
    assert_eq!((again.status, again.refund_id.as_deref()), (RefundStatus::Processing, Some("50000000382019052709732678859")));
    assert_eq!(ledger.writes(), [("reserve_refund", "R1".to_owned()), ("update_refund", "R1".to_owned())], "reserved once");
}
