//! The sharing job against an in-memory book of shares ([`Book`]) keeping the store's
//! contract (a sharing begun once, conditional share writes) and a scripted platform.
use super::provider::{SP_MCHID, SUB_MCHID, provider, sub_config};
use super::*;
use crate::service::SHARE;
use crate::sharing::*;

const PARTNER_OPENID: &str = "o-partner-receiver";

/// The sub-merchant's payment of `fen`, paid a day ago.
fn paid_sub(fen: i64) -> Transaction {
    Transaction {
        amount: Money::from_fen(fen),
        payer_total: Some(Money::from_fen(fen)),
        sub_mchid: Some(SUB_MCHID.into()),
        ..tx("T0000001", TradeState::Success)
    }
}

fn plan(commission_bp: u32) -> SharePlan {
    SharePlan {
        partner_id: PARTNER,
        version: 3,
        commission_bp: Some(commission_bp),
        platform_bp: Some(60),
        receiver: Receiver { kind: ReceiverType::PersonalOpenid, account: PARTNER_OPENID.into(), name: None },
        created_at: now() - Duration::days(2),
    }
}

/// What the store holds of the transaction's sharing, and the effects of each write.
#[derive(Default)]
struct Book {
    sharing: Option<Sharing>,
    shares: Vec<Share>,
    returns: Vec<ShareReturn>,
    effects: Vec<Effects>,
}

type Shared = Arc<Mutex<Book>>;

/// A repository holding `stored`, its `refunds`, the sub-merchant configuration, the provider
/// (with its name) and the partner's `plan`, and a book of shares.
fn repo_sharing(stored: Transaction, refunds: Vec<Refund>, plan: Option<SharePlan>) -> (MockPaymentRepo, Shared) {
    let (mut repo, _) = repo_holding_unshared(Some(sub_config()), stored);
    let mut p = provider();
    p.sp_name = Some("Atrium Platform Ltd".into());
    p.platform_bp = 100;
    p.default_commission_bp = 200;
    repo.expect_get_provider().returning(move || Ok(Some(p.clone())));
    repo.expect_share_plan().returning(move |_| Ok(plan.clone()));
    let made = refunds.clone();
    repo.expect_refunds_of().returning(move |_, _| Ok(refunds.clone()));
    let book: Shared = Arc::default();
    let b = book.clone();
    repo.expect_retry_share().returning(move |read, no, at, effects| {
        let mut b = b.lock().unwrap();
        let returns = b.returns.clone();
        let Some(stored) = b.shares.iter_mut().find(|x| x.id == read.id && x.status == read.status && x.out_order_no == read.out_order_no)
        else {
            return Ok(None);
        };
        *stored = read.retried(&returns, &made, no, at);
        let retried = stored.clone();
        b.effects.push(effects);
        Ok(Some(retried))
    });
    let b = book.clone();
    repo.expect_returns_of()
        .returning(move |_, no| Ok(b.lock().unwrap().returns.iter().filter(|r| r.out_refund_no == no).cloned().collect()));
    let b = book.clone();
    repo.expect_sharing().returning(move |_| {
        let b = b.lock().unwrap();
        Ok(b.sharing.clone().map(|s| (s, b.shares.clone())))
    });
    let b = book.clone();
    repo.expect_begin_sharing().returning(move |sharing, shares| {
        let mut b = b.lock().unwrap();
        if b.sharing.is_none() {
            b.sharing = Some(sharing);
            b.shares = shares.into_iter().enumerate().map(|(i, s)| Share { id: 100 + i as Id, ..s }).collect();
        }
        Ok((b.sharing.clone().unwrap(), b.shares.clone()))
    });
    let b = book.clone();
    repo.expect_update_shares().returning(move |changed, read, effects| {
        let mut b = b.lock().unwrap();
        let mut written = 0;
        for (s, (status, no)) in changed.into_iter().zip(read) {
            if let Some(stored) = b.shares.iter_mut().find(|x| x.id == s.id && x.status == status && x.out_order_no == no) {
                *stored = s;
                written += 1;
            }
        }
        if written > 0 {
            b.effects.push(effects);
        }
        Ok(written)
    });
    let b = book.clone();
    repo.expect_set_unfrozen().returning(move |_, at| {
        if let Some(s) = b.lock().unwrap().sharing.as_mut() {
            s.unfrozen_at.get_or_insert(at);
        }
        Ok(())
    });
    let b = book.clone();
    repo.expect_get_share().returning(move |scope, id| {
        let visible = matches!(scope, Party::Platform) || scope == Party::Tenant { tenant_id: TENANT, partner_id: Some(PARTNER) };
        Ok(b.lock().unwrap().shares.iter().find(|s| s.id == id && visible).cloned())
    });
    (repo, book)
}

/// The answer of a share request `no` giving each line `result`.
fn answer(no: &str, state: ShareOrderState, lines: &[(ReceiverType, &str, i64, ReceiverResult)]) -> PlatformShareOrder {
    PlatformShareOrder {
        out_order_no: no.into(),
        order_id: Some(format!("3008{no}")),
        state,
        lines: lines
            .iter()
            .map(|&(kind, account, fen, result)| PlatformShareLine {
                kind,
                account: account.into(),
                amount: Money::from_fen(fen),
                result,
                fail_reason: (result == ReceiverResult::Closed).then(|| "ACCOUNT_ABNORMAL".into()),
                finish_time: (result != ReceiverResult::Pending).then(now),
            })
            .collect(),
    }
}

fn unfrozen(no: &str) -> PlatformShareOrder {
    answer(no, ShareOrderState::Finished, &[(ReceiverType::MerchantId, SUB_MCHID, 1, ReceiverResult::Success)])
}

fn share_job() -> Job {
    job(SHARE, serde_json::json!({"out_trade_no": "T0000001"}), 1)
}

fn statuses(book: &Shared) -> Vec<(ShareRole, i64, ShareStatus, String)> {
    book.lock().unwrap().shares.iter().map(|s| (s.role, s.amount.fen(), s.status, s.out_order_no.clone())).collect()
}

#[test]
fn the_share_job_is_queued_with_a_sub_merchants_payment_only() {
    let (repo, _) = repo_holding(Some(sub_config()), paid_sub(100));
    let svc = svc(repo, MockPayPlatform::new());
    let paid_at = now() - Duration::days(1);

    let job = svc.share_job(&paid_sub(100)).expect("a sub-merchant's payment is shared");

    assert_eq!((job.kind.as_str(), job.run_at, job.dedupe_key.as_deref()), (SHARE, paid_at + Duration::seconds(120), Some("3:T0000001")));
    assert_eq!(svc.share_job(&tx("T0000001", TradeState::Success)), None, "direct mode shares nothing");
    assert_eq!(svc.share_job(&Transaction { trade_state: TradeState::NotPay, ..paid_sub(100) }), None, "unpaid");
    assert_eq!(svc.share_job(&Transaction { discrepancy: Some("1 fen".into()), ..paid_sub(100) }), None, "a discrepancy");
}

#[tokio::test]
async fn a_payment_notified_paid_queues_its_sharing_in_the_same_write() {
    let (mut repo, cell) = repo_holding(Some(sub_config()), Transaction { trade_state: TradeState::NotPay, ..paid_sub(10_001) });
    let written = conditional_writes(&mut repo, &cell, 1);
    repo.expect_notification_seen().returning(|_, _| Ok(false));
    repo.expect_record_notification().returning(|_, _, _, _| Ok(()));
    let svc = svc(repo, MockPayPlatform::new());
    let report = PlatformTransaction {
        sub_mchid: Some(SUB_MCHID.into()),
        amount: Some(Money::from_fen(10_001)),
        ..report("T0000001", TradeState::Success)
    };

    svc.handle_event(TENANT, event("EV-1", EventResource::Transaction(report))).await.unwrap();

    let effects = written.lock().unwrap()[0].clone();
    assert!(effects.jobs.iter().any(|j| j.kind == SHARE && j.dedupe_key.as_deref() == Some("3:T0000001")), "{:?}", effects.jobs);
}

#[tokio::test]
async fn awkward_amounts_are_floored_per_receiver_requested_once_settled_and_the_rest_unfrozen() {
    for (fen, platform_fen, partner_fen) in [(10_001_i64, 60_i64, 250_i64), (333, 1, 8)] {
        let (repo, book) = repo_sharing(paid_sub(fen), vec![], Some(plan(250)));
        let mut platform = MockPayPlatform::new();
        let added = Arc::new(Mutex::new(Vec::new()));
        let a = added.clone();
        platform.expect_add_receiver().returning(move |account, r| {
            assert_eq!(account.sub_merchant.as_ref().map(|s| s.sub_mchid.as_str()), Some(SUB_MCHID));
            a.lock().unwrap().push((r.receiver.account.clone(), r.relation, r.receiver.name.clone()));
            Ok(())
        });
        platform.expect_share().times(1).returning(move |_, order| {
            assert_eq!((order.out_order_no.as_str(), order.transaction_id.as_str(), order.unfreeze_unsplit), ("PS5", "4200000001", false));
            let lines: Vec<(ReceiverType, &str, i64)> = order.lines.iter().map(|l| (l.kind, l.account.as_str(), l.amount.fen())).collect();
            assert_eq!(
                lines,
                vec![(ReceiverType::MerchantId, SP_MCHID, platform_fen), (ReceiverType::PersonalOpenid, PARTNER_OPENID, partner_fen)]
            );
            Ok(answer("PS5", ShareOrderState::Processing, &[]))
        });
        platform.expect_query_share().times(1).returning(move |_, transaction_id, no| {
            assert_eq!((transaction_id, no), ("4200000001", "PS5"));
            Ok(answer(
                "PS5",
                ShareOrderState::Finished,
                &[
                    (ReceiverType::MerchantId, SP_MCHID, platform_fen, ReceiverResult::Success),
                    (ReceiverType::PersonalOpenid, PARTNER_OPENID, partner_fen, ReceiverResult::Success),
                ],
            ))
        });
        platform.expect_unfreeze().times(1).returning(|_, order| {
            assert_eq!((order.out_order_no.as_str(), order.transaction_id.as_str()), ("PS5-u", "4200000001"));
            Ok(unfrozen("PS5-u"))
        });
        let svc = svc(repo, platform);

        let outcome = svc.run(&share_job()).await;

        assert_eq!(outcome, JobOutcome::Done, "{fen}");
        assert_eq!(
            statuses(&book),
            vec![
                (ShareRole::Platform, platform_fen, ShareStatus::Succeeded, "PS5".into()),
                (ShareRole::Partner, partner_fen, ShareStatus::Succeeded, "PS5".into())
            ],
            "{fen}"
        );
        let b = book.lock().unwrap();
        let sharing = b.sharing.clone().unwrap();
        assert_eq!(
            (sharing.base.fen(), sharing.rates, sharing.unfrozen_at),
            (fen, Rates { platform_bp: 60, commission_bp: 250 }, Some(now()))
        );
        assert!(b.shares.iter().all(|s| s.plan_version == Some(3) && s.partner_id == Some(PARTNER) && s.settled_at == Some(now())));
        assert_eq!(
            *added.lock().unwrap(),
            vec![
                (SP_MCHID.to_owned(), Relation::ServiceProvider, Some("Atrium Platform Ltd".to_owned())),
                (PARTNER_OPENID.to_owned(), Relation::Partner, None)
            ]
        );
    }
}

#[tokio::test]
async fn one_fen_is_too_little_to_share_and_is_unfrozen_whole() {
    let (repo, book) = repo_sharing(paid_sub(1), vec![], Some(plan(250)));
    let mut platform = MockPayPlatform::new();
    platform.expect_add_receiver().never();
    platform.expect_share().never();
    platform.expect_unfreeze().times(1).returning(|_, _| Ok(unfrozen("PS5-u")));
    let svc = svc(repo, platform);

    assert_eq!(svc.run(&share_job()).await, JobOutcome::Done);

    let b = book.lock().unwrap();
    assert!(b.shares.is_empty());
    assert_eq!(b.sharing.as_ref().and_then(|s| s.unfrozen_at), Some(now()));
}

#[tokio::test]
async fn a_refund_processing_holds_the_sharing_and_a_refund_made_lowers_its_base() {
    let (repo, book) = repo_sharing(paid_sub(1000), vec![refund("R1", 300, RefundStatus::Processing)], Some(plan(250)));
    let waiting = svc(repo, MockPayPlatform::new());

    let outcome = waiting.run(&share_job()).await;

    assert!(matches!(&outcome, JobOutcome::Retry { reason, .. } if reason.contains("refund")), "{outcome:?}");
    assert!(book.lock().unwrap().sharing.is_none(), "nothing is fixed while a refund may still change the base");

    let refunds = vec![refund("R1", 300, RefundStatus::Succeeded), refund("R2", 100, RefundStatus::Failed)];
    let (repo, book) = repo_sharing(paid_sub(1000), refunds, Some(plan(250)));
    let mut platform = MockPayPlatform::new();
    platform.expect_add_receiver().returning(|_, _| Ok(()));
    platform.expect_share().returning(|_, _| Err(PayPlatformError::Unavailable("timed out".into())));
    let svc = svc(repo, platform);

    svc.run(&share_job()).await;

    assert_eq!(book.lock().unwrap().sharing.as_ref().map(|s| s.base.fen()), Some(700));
    assert_eq!(statuses(&book).iter().map(|s| s.1).collect::<Vec<_>>(), vec![4, 17], "floor(700 × 60 / 10,000), floor(700 × 250 / 10,000)");
}

#[tokio::test]
async fn a_lost_answer_is_asked_again_as_the_same_request_and_nothing_is_shared_twice() {
    let (repo, book) = repo_sharing(paid_sub(10_001), vec![], Some(plan(250)));
    let mut platform = MockPayPlatform::new();
    platform.expect_add_receiver().returning(|_, _| Ok(()));
    let numbers = Arc::new(Mutex::new(Vec::new()));
    let n = numbers.clone();
    let mut seq = Sequence::new();
    platform.expect_share().times(1).in_sequence(&mut seq).returning(move |_, o| {
        n.lock().unwrap().push(o.out_order_no.clone());
        Err(PayPlatformError::Unavailable("the answer was lost".into()))
    });
    let n = numbers.clone();
    platform.expect_share().times(1).in_sequence(&mut seq).returning(move |_, o| {
        n.lock().unwrap().push(o.out_order_no.clone());
        Ok(answer(&o.out_order_no, ShareOrderState::Processing, &[]))
    });
    platform.expect_query_share().returning(|_, _, no| {
        Ok(answer(
            no,
            ShareOrderState::Finished,
            &[
                (ReceiverType::MerchantId, SP_MCHID, 60, ReceiverResult::Success),
                (ReceiverType::PersonalOpenid, PARTNER_OPENID, 250, ReceiverResult::Success),
            ],
        ))
    });
    platform.expect_unfreeze().times(1).returning(|_, _| Ok(unfrozen("PS5-u")));
    let svc = svc(repo, platform);

    let first = svc.run(&share_job()).await;
    let second = svc.run(&share_job()).await;

    assert!(matches!(first, JobOutcome::Retry { .. }), "{first:?}");
    assert_eq!(second, JobOutcome::Done);
    assert_eq!(*numbers.lock().unwrap(), vec!["PS5".to_owned(), "PS5".to_owned()], "the same number both times");
    assert!(statuses(&book).iter().all(|s| s.2 == ShareStatus::Succeeded));
}

#[tokio::test]
async fn a_closed_receiver_is_kept_with_its_reason_the_rest_stays_frozen_and_a_retry_sends_it_anew() {
    let (repo, book) = repo_sharing(paid_sub(10_001), vec![], Some(plan(250)));
    let mut platform = MockPayPlatform::new();
    let adds = Arc::new(Mutex::new(0));
    let a = adds.clone();
    platform.expect_add_receiver().returning(move |_, _| {
        *a.lock().unwrap() += 1;
        Ok(())
    });
    platform.expect_share().returning(|_, o| Ok(answer(&o.out_order_no, ShareOrderState::Processing, &[])));
    let mut seq = Sequence::new();
    platform.expect_query_share().times(1).in_sequence(&mut seq).returning(|_, _, no| {
        Ok(answer(
            no,
            ShareOrderState::Finished,
            &[
                (ReceiverType::MerchantId, SP_MCHID, 60, ReceiverResult::Success),
                (ReceiverType::PersonalOpenid, PARTNER_OPENID, 250, ReceiverResult::Closed),
            ],
        ))
    });
    platform.expect_query_share().times(1).in_sequence(&mut seq).returning(|_, _, no| {
        assert_eq!(no, "PS5-r1-101");
        Ok(answer(no, ShareOrderState::Finished, &[(ReceiverType::PersonalOpenid, PARTNER_OPENID, 250, ReceiverResult::Success)]))
    });
    platform.expect_unfreeze().times(1).returning(|_, _| Ok(unfrozen("PS5-u")));
    let (jobs, queued) = recording_jobs();
    let svc = with_jobs(repo, platform, MockMerchantKeys::new(), jobs);

    assert_eq!(svc.run(&share_job()).await, JobOutcome::Done, "nothing to do until an operator retries");
    let closed = book.lock().unwrap().shares[1].clone();
    assert_eq!((closed.status, closed.fail_reason.as_deref()), (ShareStatus::Closed, Some("ACCOUNT_ABNORMAL")));
    assert_eq!(book.lock().unwrap().sharing.as_ref().and_then(|s| s.unfrozen_at), None, "the rest stays frozen");

    let succeeded = book.lock().unwrap().shares[0].id;
    let refused = svc.retry_share(&platform_actor(), succeeded).await.unwrap_err();
    assert!(matches!(refused, Error::Conflict(Reason::State, _)), "{refused:?}");
    let hidden = svc.retry_share(&partner_of_another(), closed.id).await.unwrap_err();
    assert!(matches!(hidden, Error::NotFound(_)), "{hidden:?}");

    let retried = svc.retry_share(&tenant_actor(), closed.id).await.unwrap();

    assert_eq!((retried.status, retried.out_order_no.as_str()), (ShareStatus::Pending, "PS5-r1-101"));
    let effects = book.lock().unwrap().effects.last().cloned().unwrap();
    assert_eq!(effects.audit.as_ref().map(|a| a.action.as_str()), Some("share.retry"));
    assert!(effects.jobs.iter().any(|j| j.kind == SHARE && j.run_at == now()), "{:?}", effects.jobs);
    let again = svc.retry_share(&tenant_actor(), closed.id).await.unwrap_err();
    assert!(matches!(again, Error::Conflict(Reason::State, _)), "a retry is pending: {again:?}");

    let adds_before = *adds.lock().unwrap();
    assert_eq!(svc.run(&share_job()).await, JobOutcome::Done);

    assert_eq!(*adds.lock().unwrap(), adds_before + 1, "the retried receiver is added afresh");
    assert!(statuses(&book).iter().all(|s| s.2 == ShareStatus::Succeeded), "{:?}", statuses(&book));
    assert_eq!(book.lock().unwrap().sharing.as_ref().and_then(|s| s.unfrozen_at), Some(now()));
    assert!(queued.lock().unwrap().is_empty(), "the retry's job is written with the retry");
}

#[tokio::test]
async fn a_share_the_platform_refuses_is_closed_with_its_reason_and_nothing_is_unfrozen() {
    let (repo, book) = repo_sharing(paid_sub(10_001), vec![], Some(plan(250)));
    let mut platform = MockPayPlatform::new();
    platform.expect_add_receiver().returning(|_, _| Ok(()));
    platform.expect_share().times(1).returning(|_, _| {
        Err(PayPlatformError::Refused { status: 400, code: "INVALID_REQUEST".into(), message: "over the max ratio".into() })
    });
    platform.expect_unfreeze().never();
    let svc = svc(repo, platform);

    assert_eq!(svc.run(&share_job()).await, JobOutcome::Done);

    let b = book.lock().unwrap();
    assert!(
        b.shares.iter().all(|s| s.status == ShareStatus::Closed && s.fail_reason.as_deref() == Some("INVALID_REQUEST: over the max ratio"))
    );
}

#[tokio::test]
async fn without_a_partner_plan_only_the_platform_shares() {
    let (repo, book) = repo_sharing(paid_sub(10_000), vec![], None);
    let mut platform = MockPayPlatform::new();
    platform.expect_add_receiver().times(1).returning(|_, _| Ok(()));
    platform.expect_share().returning(|_, o| {
        assert_eq!(o.lines.len(), 1);
        Ok(answer(&o.out_order_no, ShareOrderState::Finished, &[(ReceiverType::MerchantId, SP_MCHID, 100, ReceiverResult::Success)]))
    });
    platform.expect_unfreeze().returning(|_, _| Ok(unfrozen("PS5-u")));
    let svc = svc(repo, platform);

    assert_eq!(svc.run(&share_job()).await, JobOutcome::Done);

    assert_eq!(
        statuses(&book),
        vec![(ShareRole::Platform, 100, ShareStatus::Succeeded, "PS5".into())],
        "the provider's platform_bp of 100"
    );
}

fn partner_of_another() -> Actor {
    Actor::new(21, "s", Party::Partner { partner_id: PARTNER + 1 }, ["*"])
}

#[tokio::test]
async fn a_profit_sharing_notification_runs_its_payments_sharing_now() {
    let (mut repo, _) = repo_sharing(paid_sub(10_001), vec![], Some(plan(250)));
    let shares = vec![Share {
        id: 100,
        tenant_id: TENANT,
        payment_id: 5,
        out_trade_no: "T0000001".into(),
        partner_id: Some(PARTNER),
        role: ShareRole::Partner,
        receiver: plan(250).receiver,
        amount: Money::from_fen(250),
        returned: Money::ZERO,
        withheld: Money::ZERO,
        status: ShareStatus::Processing,
        fail_reason: None,
        out_order_no: "PS5".into(),
        retries: 0,
        plan_version: Some(3),
        created_at: now(),
        settled_at: None,
        updated_at: now(),
        discrepancy: None,
    }];
    repo.expect_shares_in_order().returning(move |_, no| Ok(if no == "PS5" { shares.clone() } else { vec![] }));
    repo.expect_notification_seen().returning(|_, _| Ok(false));
    repo.expect_record_notification().times(2).returning(|_, _, _, _| Ok(()));
    let (jobs, queued) = recording_jobs();
    let svc = with_jobs(repo, MockPayPlatform::new(), MockMerchantKeys::new(), jobs);
    let notice = |no: &str| PayEvent {
        id: format!("EV-{no}"),
        event_type: "PROFITSHARING.SUCCESS".into(),
        resource: EventResource::Share { out_order_no: no.into(), transaction_id: "4200000001".into() },
    };

    let known = svc.handle_event(TENANT, notice("PS5")).await.unwrap();
    let unknown = svc.handle_event(TENANT, notice("PS404")).await.unwrap();

    assert_eq!((known, unknown), (NotifyOutcome::Applied, NotifyOutcome::Unknown));
    let queued = queued.lock().unwrap().clone();
    assert_eq!(queued.len(), 1, "{queued:?}");
    assert_eq!((queued[0].kind.as_str(), queued[0].run_at), (SHARE, now()));
    assert_eq!(queued[0].payload, serde_json::json!({"out_trade_no": "T0000001"}));
    assert_eq!(queued[0].dedupe_key.as_deref(), Some("3:T0000001:notified:PS5"));
}

#[tokio::test]
async fn a_refund_reserved_while_the_shares_are_computed_makes_the_job_read_again() {
    let (mut repo, _) = repo_holding(Some(sub_config()), paid_sub(10_001));
    let mut p = provider();
    p.sp_name = Some("Atrium Platform Ltd".into());
    repo.expect_get_provider().returning(move || Ok(Some(p.clone())));
    repo.expect_share_plan().returning(|_| Ok(Some(plan(250))));
    repo.expect_refunds_of().returning(|_, _| Ok(vec![]));
    repo.expect_sharing().returning(|_| Ok(None));
    repo.expect_begin_sharing().times(1).returning(|_, _| Err(Error::conflict(Reason::TryAgain, "a refund of the payment is processing")));
    let mut platform = MockPayPlatform::new();
    platform.expect_share().never();
    let svc = svc(repo, platform);

    let outcome = svc.run(&share_job()).await;

    assert!(
        matches!(&outcome, JobOutcome::Retry { reason, at } if reason.contains("refund") && *at == now() + Duration::seconds(60)),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn shares_another_runner_settled_meanwhile_are_read_again_not_queried() {
    let (repo, book) = repo_sharing(paid_sub(10_001), vec![], Some(plan(250)));
    let mut platform = MockPayPlatform::new();
    platform.expect_add_receiver().returning(|_, _| Ok(()));
    let other = book.clone();
    platform.expect_share().times(1).returning(move |_, o| {
        // Another runner records the request's result while this one waits for its answer.
        for s in other.lock().unwrap().shares.iter_mut() {
            s.status = ShareStatus::Succeeded;
            s.settled_at = Some(now());
        }
        Ok(answer(&o.out_order_no, ShareOrderState::Processing, &[]))
    });
    platform.expect_query_share().never();
    platform.expect_unfreeze().times(1).returning(|_, _| Ok(unfrozen("PS5-u")));
    let svc = svc(repo, platform);

    assert_eq!(svc.run(&share_job()).await, JobOutcome::Done);

    assert!(statuses(&book).iter().all(|s| s.2 == ShareStatus::Succeeded), "its stale answer wrote nothing: {:?}", statuses(&book));
    assert_eq!(book.lock().unwrap().sharing.as_ref().and_then(|s| s.unfrozen_at), Some(now()));
}

// --- Refunds of shared money -----------------------------------------------------------------

const PARTNER_MCHID: &str = "1900000109";

/// A payment of 10,001 fen shared (60 to the platform, 250 to the partner's merchant account,
/// both succeeded), with the store's refund reservation (the rule, then the returns planned
/// under the lock), its refunds and returns in the book.
fn shared_payment() -> (MockPaymentRepo, Shared, Arc<Mutex<Vec<Refund>>>) {
    let merchant_plan = SharePlan {
        receiver: Receiver { kind: ReceiverType::MerchantId, account: PARTNER_MCHID.into(), name: Some("P".into()) },
        ..plan(250)
    };
    let (mut repo, book) = repo_sharing(paid_sub(10_001), vec![], Some(merchant_plan.clone()));
    {
        let mut b = book.lock().unwrap();
        b.sharing = Some(Sharing {
            payment_id: 5,
            tenant_id: TENANT,
            base: Money::from_fen(10_001),
            rates: Rates { platform_bp: 60, commission_bp: 250 },
            unfrozen_at: Some(now()),
            created_at: now(),
        });
        let share = |id, role, receiver: Receiver, fen| Share {
            id,
            tenant_id: TENANT,
            payment_id: 5,
            out_trade_no: "T0000001".into(),
            partner_id: Some(PARTNER),
            role,
            receiver,
            amount: Money::from_fen(fen),
            returned: Money::ZERO,
            withheld: Money::ZERO,
            status: ShareStatus::Succeeded,
            fail_reason: None,
            out_order_no: "PS5".into(),
            retries: 0,
            plan_version: Some(3),
            created_at: now(),
            settled_at: Some(now()),
            updated_at: now(),
            discrepancy: None,
        };
        let platform = Receiver { kind: ReceiverType::MerchantId, account: SP_MCHID.into(), name: None };
        b.shares = vec![share(100, ShareRole::Platform, platform, 60), share(101, ShareRole::Partner, merchant_plan.receiver, 250)];
    }
    let refunds: Arc<Mutex<Vec<Refund>>> = Arc::default();
    let (b, made) = (book.clone(), refunds.clone());
    repo.expect_reserve_refund().returning(move |wanted, rule, _| {
        let mut made = made.lock().unwrap();
        if let Some(r) = made.iter().find(|r| r.out_refund_no == wanted.out_refund_no) {
            return Ok(RefundReservation::Existing(r.clone()));
        }
        if let Err(why) = rule.check(&paid_sub(10_001), &made, &wanted) {
            return Ok(RefundReservation::Refused(why));
        }
        let mut b = b.lock().unwrap();
        let planned = match plan_returns(Money::from_fen(10_001), b.sharing.as_ref().unwrap(), &b.shares, &b.returns, &made, &wanted) {
            Ok(planned) => planned,
            Err(why) => return Ok(RefundReservation::Refused(why)),
        };
        let next = b.returns.len() as Id;
        b.returns.extend(planned.into_iter().enumerate().map(|(i, r)| ShareReturn { id: next + i as Id + 1, ..r }));
        made.push(wanted.clone());
        Ok(RefundReservation::Reserved(wanted))
    });
    let made = refunds.clone();
    repo.expect_get_refund().returning(move |_, no| Ok(made.lock().unwrap().iter().find(|r| r.out_refund_no == no).cloned()));
    let made = refunds.clone();
    repo.expect_update_refund().returning(move |r, read, _| {
        let mut made = made.lock().unwrap();
        match made.iter_mut().find(|x| x.out_refund_no == r.out_refund_no && x.status == read) {
            Some(stored) => {
                *stored = r;
                Ok(true)
            }
            None => Ok(false),
        }
    });
    let b = book.clone();
    repo.expect_settle_return().returning(move |ret, read| {
        let mut b = b.lock().unwrap();
        let Some(stored) = b.returns.iter_mut().find(|x| x.id == ret.id && x.status == read) else { return Ok(false) };
        *stored = ret.clone();
        if ret.status == ReturnStatus::Succeeded {
            let share = b.shares.iter_mut().find(|s| s.id == ret.share_id).unwrap();
            share.returned = share.returned.checked_add(ret.amount).unwrap();
            if share.returned >= share.to_pay() {
                share.status = ShareStatus::Returned;
            }
        }
        Ok(true)
    });
    (repo, book, refunds)
}

fn return_answer(o: &ReturnOrder, result: ReturnResult, fail_reason: Option<&str>) -> PlatformReturn {
    PlatformReturn {
        out_return_no: o.out_return_no.clone(),
        return_id: Some(format!("RT{}", o.out_return_no)),
        result,
        fail_reason: fail_reason.map(Into::into),
        amount: Some(o.amount),
        finish_time: (result != ReturnResult::Processing).then(now),
    }
}

fn sub_refund_request(amount: i64, no: &str) -> RefundRequest {
    refund_request(amount, Some(no))
}

fn returned(book: &Shared) -> Vec<(i64, ShareStatus)> {
    book.lock().unwrap().shares.iter().map(|s| (s.returned.fen(), s.status)).collect()
}

#[tokio::test]
async fn a_refund_after_the_sharing_takes_each_part_back_first_then_is_sent() {
    let (repo, book, _) = shared_payment();
    let mut seq = Sequence::new();
    let mut platform = MockPayPlatform::new();
    for (no, mchid, fen) in [("PR100-1", SP_MCHID, 19), ("PR101-1", PARTNER_MCHID, 83)] {
        platform
            .expect_return_share()
            .withf(move |_, o| {
                (o.out_order_no.as_str(), o.out_return_no.as_str(), o.return_mchid.as_str(), o.amount.fen()) == ("PS5", no, mchid, fen)
            })
            .times(1)
            .in_sequence(&mut seq)
            .returning(|_, o| Ok(return_answer(o, ReturnResult::Success, None)));
    }
    platform.expect_refund().times(1).in_sequence(&mut seq).returning(|_, o| {
        assert_eq!((o.out_refund_no.as_str(), o.amount.fen()), ("R1", 3_333));
        Ok(refund_report(RefundStatus::Processing))
    });
    let svc = svc(repo, platform);

    let view = svc.refund(&tenant_actor(), sub_refund_request(3_333, "R1"), None).await.unwrap();

    assert_eq!(view.status, RefundStatus::Processing);
    assert_eq!(returned(&book), vec![(19, ShareStatus::Succeeded), (83, ShareStatus::Succeeded)]);
}

#[tokio::test]
async fn a_return_that_fails_stops_the_refund_which_says_why_and_says_it_again_under_its_number() {
    let (repo, book, refunds) = shared_payment();
    let mut platform = MockPayPlatform::new();
    platform.expect_return_share().times(2).returning(|_, o| {
        Ok(if o.return_mchid == PARTNER_MCHID {
            return_answer(o, ReturnResult::Failed, Some("BALANCE_NOT_ENOUGH"))
        } else {
            return_answer(o, ReturnResult::Success, None)
        })
    });
    platform.expect_refund().never();
    let svc = svc(repo, platform);

    for _ in 0..2 {
        let err = svc.refund(&tenant_actor(), sub_refund_request(10_001, "R1"), None).await.unwrap_err();
        match err {
            Error::PlatformFailed { reason, fail_reason, message } => {
                assert_eq!((reason, fail_reason.as_str()), (Reason::ReturnFailed, "BALANCE_NOT_ENOUGH"));
                assert!(message.contains("share 101"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
    let r = refunds.lock().unwrap()[0].clone();
    assert_eq!((r.status, r.fail_reason.as_deref()), (RefundStatus::Failed, Some("BALANCE_NOT_ENOUGH")));
    assert_eq!(returned(&book), vec![(60, ShareStatus::Returned), (0, ShareStatus::Succeeded)]);
}

#[tokio::test]
async fn a_refund_after_a_failed_one_asks_only_what_is_not_back_yet() {
    let (repo, book, _) = shared_payment();
    let mut platform = MockPayPlatform::new();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let a = asked.clone();
    let mut fail_partner = true;
    platform.expect_return_share().returning(move |_, o| {
        a.lock().unwrap().push((o.out_return_no.clone(), o.amount.fen()));
        if o.return_mchid == PARTNER_MCHID && std::mem::take(&mut fail_partner) {
            return Ok(return_answer(o, ReturnResult::Failed, Some("ACCOUNT_ABNORMAL")));
        }
        Ok(return_answer(o, ReturnResult::Success, None))
    });
    platform.expect_refund().times(1).returning(|_, _| Ok(refund_report(RefundStatus::Processing)));
    let svc = svc(repo, platform);

    svc.refund(&tenant_actor(), sub_refund_request(10_001, "R1"), None).await.unwrap_err();
    svc.refund(&tenant_actor(), sub_refund_request(10_001, "R2"), None).await.unwrap();

    assert_eq!(
        *asked.lock().unwrap(),
        vec![("PR100-1".into(), 60), ("PR101-1".into(), 250), ("PR101-2".into(), 250)],
        "the platform's 60 fen once"
    );
    assert_eq!(returned(&book), vec![(60, ShareStatus::Returned), (250, ShareStatus::Returned)]);
}

#[tokio::test]
async fn a_return_processing_or_lost_holds_the_refund_until_its_job_finds_every_part_back() {
    let (repo, book, refunds) = shared_payment();
    let mut platform = MockPayPlatform::new();
    let calls = Arc::new(Mutex::new(0));
    let c = calls.clone();
    platform.expect_return_share().returning(move |_, o| {
        let mut n = c.lock().unwrap();
        *n += 1;
        match *n {
            // The first answer is lost; the same number again is processing; then done.
            1 => Err(PayPlatformError::Unavailable("timed out".into())),
            2..=4 => Ok(return_answer(o, ReturnResult::Processing, None)),
            _ => Ok(return_answer(o, ReturnResult::Success, None)),
        }
    });
    platform.expect_query_refund().times(1).returning(|_, _| Err(refused(404, "RESOURCE_NOT_EXISTS")));
    platform.expect_refund().times(1).returning(|_, o| {
        assert_eq!(o.out_refund_no, "R1");
        Ok(refund_report(RefundStatus::Processing))
    });
    let svc = svc(repo, platform);

    let lost = svc.refund(&tenant_actor(), sub_refund_request(5_000, "R1"), None).await.unwrap_err();
    assert!(matches!(lost, Error::Upstream(_)), "{lost:?}");
    let held = svc.refund(&tenant_actor(), sub_refund_request(5_000, "R1"), None).await.unwrap();
    assert_eq!(held.status, RefundStatus::Processing, "not sent while a part is still coming back");
    let waiting = svc.run(&settle_refund_job(1)).await;
    assert!(matches!(&waiting, JobOutcome::Retry { reason, .. } if reason.contains("PR10")), "{waiting:?}");

    let sent = svc.run(&settle_refund_job(2)).await;
    assert!(matches!(&sent, JobOutcome::Retry { reason, .. } if reason == "the refund is still processing"), "{sent:?}");

    let b = book.lock().unwrap();
    assert!(b.returns.iter().all(|r| r.status == ReturnStatus::Succeeded));
    assert_eq!(b.shares.iter().map(|s| s.returned.fen()).collect::<Vec<_>>(), vec![29, 124]);
    assert_eq!(refunds.lock().unwrap()[0].status, RefundStatus::Processing);
}
