//! Creating, reading and listing orders: the amount and items rule, expiry, scope.
use super::*;
use crate::api::{ItemInput, NewOrder, OrderListParams, OrderView};
use crate::text::{Openid, Subject};
use atrium_kernel::Name;
use atrium_kernel::Reason;

fn new_order(amount: Option<i64>, items: Option<Vec<(i64, i64)>>) -> NewOrder {
    NewOrder {
        tenant_id: None,
        subject: Subject::parse("Coffee beans").unwrap(),
        amount: amount.map(Money::from_fen),
        items: items.map(|items| {
            items
                .into_iter()
                .enumerate()
                .map(|(i, (quantity, price))| ItemInput {
                    name: Name::parse(&format!("Item {i}")).unwrap(),
                    quantity,
                    unit_price: Money::from_fen(price),
                })
                .collect()
        }),
        openid: Some(Openid::parse("o-ann").unwrap()),
        expires_in: None,
    }
}

#[tokio::test]
async fn a_tenant_user_creates_a_pending_order_of_its_tenant_with_an_audit_record() {
    let db = Db::default();

    let view = svc(&db, &Ledger::default()).create(&tenant_actor(), new_order(Some(1200), None)).await.unwrap();

    assert_eq!((view.status, view.amount, view.paid_amount), (OrderStatus::Pending, Money::from_fen(1200), Money::ZERO));
    assert_eq!((view.tenant_id, view.partner_id, view.created_by), (TENANT, Some(PARTNER), Some(USER)));
    assert_eq!(view.expires_at, now() + Duration::seconds(1800), "the default expiry is 30 minutes");
    assert_eq!((view.payment, view.openid.as_deref(), view.items.len()), (None, Some("o-ann"), 0));
    assert_eq!(view.order_no.len(), 24);
    assert!(view.order_no.starts_with("20260401"));
    let audit = db.audits().pop().unwrap();
    assert_eq!((audit.action.as_str(), audit.target_type, audit.actor_user_id), ("order.create", "order", Some(USER)));
    assert_eq!((audit.tenant_id, audit.partner_id, audit.target_id), (Some(TENANT), Some(PARTNER), Some(view.id)));
    assert_eq!(audit.after.unwrap()["amount"], 1200);
}

#[tokio::test]
async fn the_amount_of_an_order_with_items_is_their_sum() {
    let db = Db::default();
    let svc = svc(&db, &Ledger::default());

    let summed = svc.create(&tenant_actor(), new_order(None, Some(vec![(2, 4400), (1, 0), (3, 1)]))).await.unwrap();
    let agreeing = svc.create(&tenant_actor(), new_order(Some(8803), Some(vec![(2, 4400), (3, 1)]))).await.unwrap();

    assert_eq!(summed.amount, Money::from_fen(8803));
    assert_eq!(summed.items.len(), 3);
    assert_eq!((summed.items[0].quantity, summed.items[0].unit_price), (2, Money::from_fen(4400)));
    assert_eq!(agreeing.amount, Money::from_fen(8803));
}

#[tokio::test]
async fn an_amount_that_disagrees_with_the_items_is_rejected_naming_the_amount() {
    let db = Db::default();

    let err = svc(&db, &Ledger::default()).create(&tenant_actor(), new_order(Some(100), Some(vec![(1, 99)]))).await.unwrap_err();

    assert_eq!(fields_of(&err), ["amount"]);
    assert!(err.to_string().contains("99 fen"), "{err}");
    assert!(db.audits().is_empty());
}

#[tokio::test]
async fn an_order_needs_a_positive_amount_or_items() {
    let svc = svc(&Db::default(), &Ledger::default());

    let neither = svc.create(&tenant_actor(), new_order(None, None)).await.unwrap_err();
    let zero = svc.create(&tenant_actor(), new_order(Some(0), None)).await.unwrap_err();
    let no_items = svc.create(&tenant_actor(), new_order(None, Some(vec![]))).await.unwrap_err();
    let free_items = svc.create(&tenant_actor(), new_order(None, Some(vec![(1, 0)]))).await.unwrap_err();

    assert_eq!(fields_of(&neither), ["amount"]);
    assert_eq!(fields_of(&zero), ["amount"]);
    assert_eq!(fields_of(&no_items), ["items"]);
    assert_eq!(fields_of(&free_items), ["items"]);
}

#[tokio::test]
async fn bad_items_are_rejected_naming_each_one() {
    let svc = svc(&Db::default(), &Ledger::default());
    let max = Money::MAX_INPUT.fen();

    let err = svc.create(&tenant_actor(), new_order(None, Some(vec![(0, 1), (1, 1), (-2, 1), (1_000_001, 1)]))).await.unwrap_err();
    let line_overflow = svc.create(&tenant_actor(), new_order(None, Some(vec![(1, 1), (1_000_000, max)]))).await.unwrap_err();
    let sum_too_big = svc.create(&tenant_actor(), new_order(None, Some(vec![(1, max), (1, 1)]))).await.unwrap_err();
    let bad_price = svc.create(&tenant_actor(), new_order(None, Some(vec![(1, -5)]))).await.unwrap_err();

    assert_eq!(fields_of(&err), ["items[0].quantity", "items[2].quantity", "items[3].quantity"]);
    assert_eq!(fields_of(&line_overflow), ["items"], "10^12 × 10^6 fits i64 but not the amount bound: {line_overflow}");
    assert_eq!(fields_of(&sum_too_big), ["items"]);
    assert_eq!(fields_of(&bad_price), ["items[0].unit_price"]);
}

#[tokio::test]
async fn a_line_whose_total_overflows_is_rejected_not_wrapped() {
    let settings = OrderSettings { max_quantity: i64::MAX, ..OrderSettings::default() };
    let svc = svc_with(&Db::default(), &Ledger::default(), settings);

    let err = svc.create(&tenant_actor(), new_order(None, Some(vec![(i64::MAX, 2)]))).await.unwrap_err();

    assert_eq!(fields_of(&err), ["items[0]"]);
}

#[tokio::test]
async fn the_expiry_is_bounded_and_every_problem_is_named_at_once() {
    let db = Db::default();
    let svc = svc(&db, &Ledger::default());
    let expiring = |secs| NewOrder { expires_in: Some(secs), ..new_order(Some(1), None) };

    let shortest = svc.create(&tenant_actor(), expiring(60)).await.unwrap();
    let longest = svc.create(&tenant_actor(), expiring(7 * 86_400)).await.unwrap();
    let too_short = svc.create(&tenant_actor(), expiring(59)).await.unwrap_err();
    let too_long = svc.create(&tenant_actor(), expiring(7 * 86_400 + 1)).await.unwrap_err();
    let both = svc.create(&tenant_actor(), NewOrder { amount: None, ..expiring(0) }).await.unwrap_err();

    assert_eq!(shortest.expires_at, now() + Duration::seconds(60));
    assert_eq!(longest.expires_at, now() + Duration::days(7));
    assert_eq!(fields_of(&too_short), ["expires_in"]);
    assert_eq!(fields_of(&too_long), ["expires_in"]);
    assert_eq!(fields_of(&both), ["amount", "expires_in"]);
}

#[tokio::test]
async fn a_platform_caller_names_the_tenant_and_an_unseen_tenant_is_no_such_tenant() {
    let svc = svc(&Db::default(), &Ledger::default());
    let named = |tenant_id| NewOrder { tenant_id, ..new_order(Some(1), None) };

    let unnamed = svc.create(&platform_actor(), named(None)).await.unwrap_err();
    let missing = svc.create(&platform_actor(), named(Some(404))).await.unwrap_err();
    let other_partners = svc.create(&partner_actor(PARTNER), named(Some(OTHER_TENANT))).await.unwrap_err();
    let another_tenant = svc.create(&tenant_actor(), named(Some(OTHER_TENANT))).await.unwrap_err();
    let own = svc.create(&partner_actor(PARTNER), named(Some(TENANT))).await.unwrap();

    assert!(matches!(unnamed, Error::Invalid(ref e) if e[0].field == "tenant_id"), "{unnamed:?}");
    for err in [missing, other_partners, another_tenant] {
        assert!(matches!(err, Error::NoSuch(ref e) if e.field == "tenant_id"), "{err:?}");
    }
    assert_eq!(own.tenant_id, TENANT);
}

#[tokio::test]
async fn a_taken_order_number_is_drawn_again() {
    let mut repo = MockOrderRepo::new();
    repo.expect_tenant().returning(|_, id| Ok(Some(OrderTenant { id, partner_id: Some(PARTNER) })));
    let numbers = Arc::new(Mutex::new(Vec::new()));
    let seen = numbers.clone();
    repo.expect_insert_order().times(2).returning(move |o, _| {
        let mut seen = seen.lock().unwrap();
        seen.push(o.order_no.clone());
        if seen.len() == 1 { Err(Error::conflict(Reason::Duplicate, "order no already exists")) } else { Ok(Order { id: 7, ..o }) }
    });
    let svc = OrderService::new(Arc::new(repo), Arc::new(Ledger::default()), Arc::new(FixedClock::new(now())), OrderSettings::default());

    let view = svc.create(&tenant_actor(), new_order(Some(1), None)).await.unwrap();

    let numbers = numbers.lock().unwrap().clone();
    assert_eq!(view.order_no, numbers[1]);
    assert_ne!(numbers[0], numbers[1]);
}

#[tokio::test]
async fn an_order_out_of_scope_is_not_found() {
    let db = Db::with(vec![order(1, OrderStatus::Pending)]);
    let svc = svc(&db, &Ledger::default());

    for actor in [other_tenant_actor(), partner_actor(OTHER_PARTNER)] {
        let err = svc.get(&actor, 1).await.unwrap_err();
        assert!(matches!(err, Error::NotFound("order")), "{err:?}");
    }
    assert!(matches!(svc.get(&tenant_actor(), 2).await, Err(Error::NotFound("order"))));
    for actor in [tenant_actor(), partner_actor(PARTNER), platform_actor()] {
        assert_eq!(svc.get(&actor, 1).await.unwrap().id, 1);
    }
}

#[tokio::test]
async fn a_list_is_the_callers_scope_as_views() {
    let mut theirs = order(2, OrderStatus::Pending);
    theirs.tenant_id = OTHER_TENANT;
    theirs.partner_id = Some(OTHER_PARTNER);
    let db = Db::with(vec![order(1, OrderStatus::Pending), theirs, paid(3, PaymentMethod::Offline)]);
    let svc = svc(&db, &Ledger::default());
    let query = |status: Option<OrderStatus>| OrderQuery::try_from(OrderListParams { status, ..Default::default() }).unwrap();

    let mine = svc.list(&tenant_actor(), query(None)).await.unwrap();
    let all = svc.list(&platform_actor(), query(None)).await.unwrap();
    let paid_only = svc.list(&partner_actor(PARTNER), query(Some(OrderStatus::Paid))).await.unwrap();

    assert_eq!(mine.items.iter().map(|o| o.id).collect::<Vec<_>>(), [1, 3]);
    assert_eq!((all.total, all.page, all.page_size), (3, 1, 20));
    assert_eq!(paid_only.items.iter().map(|o| o.id).collect::<Vec<_>>(), [3]);
    assert_eq!(paid_only.items[0].payment.as_ref().map(|p| p.method), Some(PaymentMethod::Offline));
}

#[tokio::test]
async fn an_order_of_another_tenant_is_not_found_for_every_use_case() {
    let db = Db::with(vec![order(1, OrderStatus::Pending), paid(2, PaymentMethod::WechatJsapi)]);
    let ledger = Ledger::default();
    ledger.set(2, Some(online_paid(&db.order(2))), Vec::new());
    let svc = svc(&db, &ledger);
    let jsapi = || crate::api::PayOrder::WechatJsapi { openid: None };
    let cash = || crate::api::PayOrder::Offline { reference: crate::api::PaymentReference::parse("CASH-1").unwrap() };
    let refund = || crate::api::NewRefund { amount: Money::from_fen(1), reason: None };

    for actor in [other_tenant_actor(), partner_actor(OTHER_PARTNER)] {
        let errors = [
            svc.get(&actor, 1).await.unwrap_err(),
            svc.pay(&actor, 1, jsapi()).await.unwrap_err(),
            svc.pay(&actor, 1, cash()).await.unwrap_err(),
            svc.refund(&actor, 2, refund(), None).await.unwrap_err(),
        ];
        for err in errors {
            assert!(matches!(err, Error::NotFound("order")), "{err:?}");
        }
    }
    assert_eq!(svc.sync(OTHER_TENANT, 2).await.unwrap(), crate::service::EventOutcome::Unknown);

    assert!(ledger.calls().is_empty(), "the ledger is never asked: {:?}", ledger.calls());
    assert_eq!((db.order(1).status, db.order(2).status), (OrderStatus::Pending, OrderStatus::Paid));
    assert!(db.audits().is_empty());
}

#[tokio::test]
async fn an_order_and_a_page_show_the_refunds_each_order_synced_without_asking_the_ledger() {
    // Orders of two tenants, two of them refunded in the ledger.
    let mut theirs = paid(2, PaymentMethod::WechatJsapi);
    theirs.tenant_id = OTHER_TENANT;
    theirs.partner_id = Some(OTHER_PARTNER);
    let (mine, other_paid) = (paid(1, PaymentMethod::WechatJsapi), paid(3, PaymentMethod::Offline));
    let unpaid = order(4, OrderStatus::Paying);
    let db = Db::with(vec![mine.clone(), theirs.clone(), other_paid.clone(), unpaid]);
    let ledger = Ledger::default();
    ledger.set(
        1,
        Some(online_paid(&mine)),
        vec![refund(&mine, 11, 100, RefundStatus::Succeeded), refund(&mine, 12, 50, RefundStatus::Processing)],
    );
    ledger.set(3, Some(offline_paid(&other_paid)), Vec::new());
    ledger.money.lock().unwrap().insert(
        (OTHER_TENANT, 2),
        OrderMoney { payment: Some(online_paid(&theirs)), refunds: vec![refund(&theirs, 21, 300, RefundStatus::Succeeded)] },
    );
    let svc = svc(&db, &ledger);
    for (tenant, id) in [(TENANT, 1), (OTHER_TENANT, 2), (TENANT, 3)] {
        svc.sync(tenant, id).await.unwrap();
    }
    let synced = ledger.calls().len();

    let page = svc.list(&platform_actor(), OrderQuery::try_from(OrderListParams::default()).unwrap()).await.unwrap();
    let one = svc.get(&tenant_actor(), 1).await.unwrap();

    let shown = |o: &OrderView| o.refunds.iter().map(|r| (r.id, r.amount.fen(), r.requested_by)).collect::<Vec<_>>();
    let by_id = |id: Id| page.items.iter().find(|o| o.id == id).unwrap();
    assert_eq!(shown(by_id(1)), [(11, 100, Some(USER)), (12, 50, Some(USER))], "oldest first, who asked shown");
    assert_eq!(shown(by_id(2)), [(21, 300, Some(USER))], "another tenant's order shows its own");
    assert!(by_id(3).refunds.is_empty() && by_id(4).refunds.is_empty());
    assert_eq!(shown(&one), shown(by_id(1)));
    assert!(svc.get(&tenant_actor(), 4).await.unwrap().refunds.is_empty());
    assert_eq!(one.refunds[0].settled_at, Some(now()), "a settled refund says when");
    assert_eq!(one.refunds[1].settled_at, None);
    assert_eq!(ledger.calls()[synced..], [], "reading orders asks the ledger nothing");
}

#[tokio::test]
async fn only_a_sub_merchants_paid_orders_ask_the_ledger_for_shares() {
    let direct = paid(1, PaymentMethod::WechatJsapi);
    let mut shared = paid(2, PaymentMethod::WechatJsapi);
    if let Some(p) = shared.payment.as_mut() {
        p.sub_merchant = true;
    }
    let offline = paid(3, PaymentMethod::Offline);
    let db = Db::with(vec![direct.clone(), shared.clone(), offline.clone(), order(4, OrderStatus::Paying)]);
    let ledger = Ledger::default();
    ledger.set(1, Some(online_paid(&direct)), Vec::new());
    ledger.set(2, Some(LedgerPayment { sub_merchant: true, ..online_paid(&shared) }), Vec::new());
    ledger.set(3, Some(offline_paid(&offline)), Vec::new());
    let svc = svc(&db, &ledger);

    svc.list(&tenant_actor(), OrderQuery::try_from(OrderListParams::default()).unwrap()).await.unwrap();
    for id in 1..=4 {
        svc.get(&tenant_actor(), id).await.unwrap();
    }

    let asked: Vec<Vec<(Id, Id)>> =
        ledger.calls().into_iter().filter_map(|c| if let Call::Shares(of) = c { Some(of) } else { None }).collect();
    assert_eq!(
        asked,
        [vec![(TENANT, 2)], vec![(TENANT, 2)]],
        "the page and the order asked only for the sub-merchant's payment; a direct merchant's, an offline or an unpaid one asks nothing"
    );
}

#[tokio::test]
async fn a_page_and_an_order_are_read_while_the_ledger_is_down() {
    let o = paid(1, PaymentMethod::Offline);
    let db = Db::with(vec![o.clone()]);
    let ledger = Ledger::default();
    ledger.set(1, Some(offline_paid(&o)), vec![refund(&o, 11, 100, RefundStatus::Succeeded)]);
    let svc = svc(&db, &ledger);
    svc.sync(TENANT, 1).await.unwrap();
    for call in ["money", "refunds", "shares"] {
        ledger.fail(call, || Error::Unavailable { message: "the database is busy".into(), retry_after_secs: 1 });
    }

    let listed = svc.list(&tenant_actor(), OrderQuery::try_from(OrderListParams::default()).unwrap()).await.unwrap();
    let got = svc.get(&tenant_actor(), 1).await.unwrap();

    assert_eq!(listed.items[0].refunds.iter().map(|r| r.id).collect::<Vec<_>>(), [11]);
    assert_eq!(got.refunds.iter().map(|r| r.id).collect::<Vec<_>>(), [11], "the refunds the order synced");
}
