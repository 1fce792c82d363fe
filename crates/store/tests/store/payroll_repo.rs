//! Contract tests of the payroll repository, on SQLite and (when configured) PostgreSQL.
#![allow(clippy::unwrap_used)]
use atrium_kernel::payroll::HousingFundRate;
use atrium_kernel::{AuditRecord, Effects, Error, Money, Party, Period, Timestamp};
use atrium_org::*;
use atrium_payroll::*;
use atrium_store::{Db, FieldCipher, OrgStore, PayrollStore, store_test};
use chrono::{TimeZone, Utc};
use std::collections::HashMap;

fn t0() -> Timestamp {
    Utc.with_ymd_and_hms(2026, 5, 1, 9, 0, 0).single().expect("valid")
}

fn audit(action: &str) -> AuditRecord {
    AuditRecord::system(t0(), action, "payroll_sheet", None)
}

struct Fixture {
    payroll: PayrollStore,
    tenant: i64,
    partner: i64,
    employees: Vec<i64>,
}

async fn fixture(db: &Db) -> Fixture {
    let org = OrgStore::new(db.clone(), FieldCipher::new(&[9u8; 32]));
    let p = Partner {
        id: 0,
        name: "P".into(),
        contact_name: None,
        phone: None,
        email: None,
        status: PartnerStatus::Active,
        created_at: t0(),
        updated_at: t0(),
    };
    let partner = org.insert_partner(p, Effects::audited(AuditRecord::system(t0(), "partner.create", "partner", None))).await.unwrap().id;
    let t = Tenant::draft(Some(partner), "T", t0());
    let tenant = org.insert_tenant(t, Effects::audited(AuditRecord::system(t0(), "tenant.create", "tenant", None))).await.unwrap().id;
    let mut employees = vec![];
    for (i, status) in [EmployeeStatus::Active, EmployeeStatus::Active, EmployeeStatus::Left].into_iter().enumerate() {
        let e = Employee {
            id: 0,
            tenant_id: tenant,
            employee_no: Some(format!("E{i}")),
            name: format!("Worker {i}"),
            phone: Some(format!("+861380000000{i}")),
            email: None,
            id_card_no: None,
            bank_name: None,
            bank_account: None,
            department: None,
            position: None,
            hire_date: None,
            status,
            base_salary: Money::from_yuan(10_000),
            si_base: None,
            housing_fund_rate: HousingFundRate::MAX,
            special_deductions: vec![],
            openid: Some(format!("o{i}")),
            created_at: t0(),
            updated_at: t0(),
        };
        employees.push(
            org.insert_employee(e, Effects::audited(AuditRecord::system(t0(), "employee.create", "employee", None))).await.unwrap().id,
        );
    }
    Fixture { payroll: PayrollStore::new(db.clone()), tenant, partner, employees }
}

fn sheet(tenant_id: i64, period: &str) -> Sheet {
    Sheet::draft(tenant_id, Period::parse(period).unwrap(), format!("Payroll {period}"), SheetTotals::default(), None, t0())
}

fn item(employee_id: i64) -> SheetItem {
    SheetItem {
        id: 0,
        employee_id,
        employee_name: "W".into(),
        employee_no: None,
        adjustments: Adjustments { allowance: Money::from_yuan(100), ..Adjustments::default() },
        line: None,
        delivery: None,
    }
}

fn line(gross: i64, tax: i64) -> CalculatedLine {
    CalculatedLine {
        gross: Money::from_fen(gross),
        contributions: Money::from_fen(gross / 10),
        special_deduction: Money::from_fen(100),
        tax: Money::from_fen(tax),
        net_pay: Money::from_fen(gross - gross / 10 - tax),
        ..CalculatedLine::default()
    }
}

/// Stores a sheet for `period` with the fixture's first two employees, calculated with
/// `gross`/`tax` per item, and brings it to `status`.
async fn stored(f: &Fixture, period: &str, status: SheetStatus, gross: i64, tax: i64) -> Sheet {
    stored_as(f, SheetKind::Regular, period, status, gross, tax, vec![item(f.employees[0]), item(f.employees[1])]).await
}

/// As [`stored`], of `kind` with `items`; calculated with the year to date's basis it would
/// have then, and brought to `status` without the approval's checks.
async fn stored_as(f: &Fixture, kind: SheetKind, period: &str, status: SheetStatus, gross: i64, tax: i64, items: Vec<SheetItem>) -> Sheet {
    let s = f.payroll.insert_sheet(Sheet { kind, ..sheet(f.tenant, period) }, items, Effects::audited(audit("c"))).await.unwrap();
    let items = f.payroll.sheet_items(s.id).await.unwrap();
    let lines = items.iter().map(|i| (i.id, line(gross, tax))).collect();
    let basis = f.payroll.year_to_date(f.tenant, s.period, kind).await.unwrap().basis;
    let calculated = Sheet { status: SheetStatus::Calculated, ytd_basis: Some(basis), ..s };
    let s = f.payroll.save_calculation(calculated, lines, Effects::audited(audit("calc"))).await.unwrap();
    if status == SheetStatus::Calculated {
        return s;
    }
    f.payroll.update_sheet(Sheet { status, ..s }, ItemsWrite::Keep, Effects::audited(audit("approve"))).await.unwrap()
}

/// An item of `employee_id` with an annual bonus.
fn bonus_item(employee_id: i64) -> SheetItem {
    let mut i = item(employee_id);
    i.adjustments.annual_bonus = Money::from_yuan(20_000);
    i
}

fn period(raw: &str) -> Period {
    Period::parse(raw).unwrap()
}

store_test!(a_second_sheet_for_the_same_tenant_and_period_is_a_conflict, |db| {
    let f = fixture(&db).await;
    f.payroll.insert_sheet(sheet(f.tenant, "2026-03"), vec![item(f.employees[0])], Effects::audited(audit("c"))).await.unwrap();

    let again =
        f.payroll.insert_sheet(sheet(f.tenant, "2026-03"), vec![item(f.employees[0])], Effects::audited(audit("c"))).await.unwrap_err();

    assert!(matches!(again, Error::Conflict(_, ref m) if m.contains("2026-03")), "{again:?}");
});

store_test!(items_round_trip_with_their_line_and_delivery, |db| {
    let f = fixture(&db).await;
    let s = stored(&f, "2026-01", SheetStatus::Approved, 1_000_000, 3_000).await;
    let items = f.payroll.sheet_items(s.id).await.unwrap();
    let d = Delivery { status: DeliveryStatus::Failed, channel: None, error: Some("no subscription".into()), attempts: 1, at: t0() };
    let ok = Delivery { status: DeliveryStatus::Delivered, channel: Some(Channel::Wechat), error: None, attempts: 2, at: t0() };

    let s = f
        .payroll
        .save_deliveries(
            Sheet { status: SheetStatus::Sent, ..s },
            vec![(items[0].id, d.clone()), (items[1].id, ok.clone())],
            Effects::audited(audit("d")),
        )
        .await
        .unwrap();
    let back = f.payroll.sheet_items(s.id).await.unwrap();

    assert_eq!(s.status, SheetStatus::Sent);
    assert_eq!(back[0].line, Some(line(1_000_000, 3_000)));
    assert_eq!(back[0].adjustments.allowance, Money::from_yuan(100));
    assert_eq!((back[0].delivery.clone(), back[1].delivery.clone()), (Some(d), Some(ok)));
});

// Items are inserted in their order, with every adjustment, and calculated lines land on
// their own items; a line for an item no longer on the sheet undoes the whole calculation.
store_test!(items_and_lines_are_written_item_by_item_or_not_at_all, |db| {
    let f = fixture(&db).await;
    let mut items: Vec<SheetItem> = f.employees.iter().map(|e| item(*e)).collect();
    for (n, i) in items.iter_mut().enumerate() {
        let n = i64::try_from(n).unwrap();
        i.employee_no = (n % 2 == 0).then(|| format!("E{n}"));
        i.adjustments = Adjustments {
            allowance: Money::from_fen(100 + n),
            overtime: Money::from_fen(200 + n),
            bonus: Money::from_fen(300 + n),
            leave_deduction: Money::from_fen(n),
            other_pre_tax_deduction: Money::from_fen(10 + n),
            after_tax_deduction: Money::from_fen(20 + n),
            annual_bonus: Money::from_fen(30 + n),
        };
    }
    let s = f.payroll.insert_sheet(sheet(f.tenant, "2026-04"), items.clone(), Effects::audited(audit("c"))).await.unwrap();
    let back = f.payroll.sheet_items(s.id).await.unwrap();
    let lines: Vec<(i64, CalculatedLine)> = back
        .iter()
        .zip(1_000_000..)
        .map(|(i, gross)| (i.id, CalculatedLine { annual_bonus_tax: Money::from_fen(7), ..line(gross, gross / 100) }))
        .collect();
    let calculated = Sheet { status: SheetStatus::Calculated, ytd_basis: Some(0), ..s.clone() };

    let mut with_a_stranger = lines.clone();
    with_a_stranger.push((i64::MAX, line(1, 0)));
    let refused = f.payroll.save_calculation(calculated.clone(), with_a_stranger, Effects::audited(audit("calc"))).await.unwrap_err();
    let untouched = f.payroll.sheet_items(s.id).await.unwrap();
    let status_after_refusal = f.payroll.get_sheet(Party::Platform, s.id).await.unwrap().unwrap().status;
    f.payroll.save_calculation(calculated, lines.clone(), Effects::audited(audit("calc"))).await.unwrap();
    let written = f.payroll.sheet_items(s.id).await.unwrap();

    assert_eq!(back.len(), items.len());
    for (stored, sent) in back.iter().zip(&items) {
        assert_eq!((stored.employee_id, &stored.employee_no, stored.adjustments), (sent.employee_id, &sent.employee_no, sent.adjustments));
    }
    assert!(back.windows(2).all(|w| w[0].id < w[1].id), "items keep their order");
    assert!(matches!(refused, Error::Conflict(..)), "{refused:?}");
    assert!(untouched.iter().all(|i| i.line.is_none()), "nothing of the refused calculation was kept");
    assert_eq!(status_after_refusal, SheetStatus::Draft);
    for (item, (id, line)) in written.iter().zip(&lines) {
        assert_eq!((item.id, item.line), (*id, Some(*line)));
    }
});

store_test!(a_write_against_a_stale_version_is_a_conflict, |db| {
    let f = fixture(&db).await;
    let s = f.payroll.insert_sheet(sheet(f.tenant, "2026-03"), vec![item(f.employees[0])], Effects::audited(audit("c"))).await.unwrap();
    f.payroll.update_sheet(Sheet { title: "first".into(), ..s.clone() }, ItemsWrite::Keep, Effects::audited(audit("u"))).await.unwrap();

    let stale = f
        .payroll
        .update_sheet(Sheet { title: "second".into(), ..s.clone() }, ItemsWrite::Keep, Effects::audited(audit("u")))
        .await
        .unwrap_err();

    assert!(matches!(stale, Error::Conflict(..)), "{stale:?}");
    assert_eq!(f.payroll.get_sheet(Party::Platform, s.id).await.unwrap().unwrap().title, "first");
});

store_test!(year_to_date_sums_only_earlier_approved_or_sent_sheets_of_the_same_year, |db| {
    let f = fixture(&db).await;
    stored(&f, "2025-12", SheetStatus::Sent, 9_000_000, 9_000).await; // last year
    stored(&f, "2026-01", SheetStatus::Sent, 1_000_000, 1_000).await;
    stored(&f, "2026-02", SheetStatus::Approved, 2_000_000, 2_000).await;
    stored(&f, "2026-03", SheetStatus::Calculated, 4_000_000, 4_000).await; // not approved
    stored(&f, "2026-05", SheetStatus::Approved, 8_000_000, 8_000).await; // later

    let sums = f.payroll.year_to_date(f.tenant, Period::parse("2026-04").unwrap(), SheetKind::Regular).await.unwrap();

    assert_eq!(sums.basis, 2);
    let ytd = sums.by_employee;
    let e = ytd[&f.employees[0]];
    assert_eq!(e.gross, Money::from_fen(3_000_000));
    assert_eq!(e.tax_withheld, Money::from_fen(3_000));
    assert_eq!(e.contributions, Money::from_fen(300_000));
    assert_eq!(e.special_deductions, Money::from_fen(200));
    assert!(!ytd.contains_key(&f.employees[2]));
});

store_test!(sheets_are_scoped_to_the_tenant_and_its_partner, |db| {
    let f = fixture(&db).await;
    let s = f.payroll.insert_sheet(sheet(f.tenant, "2026-03"), vec![item(f.employees[0])], Effects::audited(audit("c"))).await.unwrap();
    let own_tenant = Party::Tenant { tenant_id: f.tenant, partner_id: Some(f.partner) };
    let other_tenant = Party::Tenant { tenant_id: f.tenant + 1000, partner_id: None };
    let other_partner = Party::Partner { partner_id: f.partner + 1000 };

    assert!(f.payroll.get_sheet(own_tenant, s.id).await.unwrap().is_some());
    assert!(f.payroll.get_sheet(Party::Partner { partner_id: f.partner }, s.id).await.unwrap().is_some());
    assert!(f.payroll.get_sheet(other_tenant, s.id).await.unwrap().is_none());
    assert!(f.payroll.get_sheet(other_partner, s.id).await.unwrap().is_none());
    assert_eq!(f.payroll.list_sheets(other_partner, SheetQuery::default()).await.unwrap().total, 0);
    assert_eq!(f.payroll.list_sheets(own_tenant, SheetQuery::default()).await.unwrap().total, 1);
    assert!(f.payroll.tenant(other_partner, f.tenant).await.unwrap().is_none());
});

store_test!(employees_for_a_sheet_are_the_active_ones_or_the_named_ones_of_the_tenant, |db| {
    let f = fixture(&db).await;

    let active = f.payroll.employees(f.tenant, None).await.unwrap();
    let named = f.payroll.employees(f.tenant, Some(vec![f.employees[2], 999_999])).await.unwrap();
    let elsewhere = f.payroll.employees(f.tenant + 1000, Some(vec![f.employees[0]])).await.unwrap();

    assert_eq!(active.iter().map(|e| e.id).collect::<Vec<_>>(), vec![f.employees[0], f.employees[1]]);
    assert_eq!((named.len(), named[0].active, named[0].openid.as_deref()), (1, false, Some("o2")));
    assert!(elsewhere.is_empty());
});

store_test!(year_to_date_sums_every_kind_and_a_supplementary_sheet_also_counts_its_own_period, |db| {
    let f = fixture(&db).await;
    let both = || vec![item(f.employees[0]), item(f.employees[1])];
    stored_as(&f, SheetKind::Regular, "2026-01", SheetStatus::Sent, 1_000_000, 1_000, both()).await;
    stored_as(&f, SheetKind::Supplementary, "2026-01", SheetStatus::Approved, 500_000, 500, both()).await;
    stored_as(&f, SheetKind::Supplementary, "2026-01", SheetStatus::Calculated, 7_000_000, 7_000, both()).await; // not approved
    stored_as(&f, SheetKind::Regular, "2026-02", SheetStatus::Approved, 2_000_000, 2_000, both()).await;
    stored_as(&f, SheetKind::Supplementary, "2026-02", SheetStatus::Sent, 300_000, 300, vec![item(f.employees[0])]).await;
    stored_as(&f, SheetKind::Regular, "2026-03", SheetStatus::Calculated, 4_000_000, 4_000, both()).await; // not approved

    let ytd = |p: &'static str, kind| {
        let payroll = f.payroll.clone();
        let tenant = f.tenant;
        async move { payroll.year_to_date(tenant, period(p), kind).await.unwrap() }
    };
    let feb_regular = ytd("2026-02", SheetKind::Regular).await;
    let feb_supplementary = ytd("2026-02", SheetKind::Supplementary).await;
    let mar_regular = ytd("2026-03", SheetKind::Regular).await;
    let jan_supplementary = ytd("2026-01", SheetKind::Supplementary).await;
    let jan_regular = ytd("2026-01", SheetKind::Regular).await;

    // February's regular sheet: January's regular and approved supplementary sheets.
    let e0 = feb_regular.by_employee[&f.employees[0]];
    assert_eq!((e0.gross, e0.tax_withheld, feb_regular.basis), (Money::from_fen(1_500_000), Money::from_fen(1_500), 2));
    // A supplementary sheet of February also counts February's approved and sent sheets.
    let e0 = feb_supplementary.by_employee[&f.employees[0]];
    let e1 = feb_supplementary.by_employee[&f.employees[1]];
    assert_eq!((e0.gross, e0.tax_withheld, feb_supplementary.basis), (Money::from_fen(3_800_000), Money::from_fen(3_800), 4));
    assert_eq!(e1.gross, Money::from_fen(3_500_000));
    assert_eq!(e0.contributions, Money::from_fen(380_000));
    // March's regular sheet sees all four; January's supplementary sheets see January's two.
    assert_eq!((mar_regular.by_employee[&f.employees[0]].gross, mar_regular.basis), (Money::from_fen(3_800_000), 4));
    assert_eq!((jan_supplementary.by_employee[&f.employees[0]].gross, jan_supplementary.basis), (Money::from_fen(1_500_000), 2));
    assert_eq!((jan_regular.by_employee.len(), jan_regular.basis), (0, 0));
});

store_test!(only_regular_sheets_are_one_per_period_and_supplementary_ones_are_listed_by_kind, |db| {
    let f = fixture(&db).await;
    let regular =
        f.payroll.insert_sheet(sheet(f.tenant, "2026-03"), vec![item(f.employees[0])], Effects::audited(audit("c"))).await.unwrap();
    let extra = || Sheet { kind: SheetKind::Supplementary, ..sheet(f.tenant, "2026-03") };

    let first = f.payroll.insert_sheet(extra(), vec![item(f.employees[0])], Effects::audited(audit("c"))).await.unwrap();
    let second = f.payroll.insert_sheet(extra(), vec![item(f.employees[0])], Effects::audited(audit("c"))).await.unwrap();
    let again =
        f.payroll.insert_sheet(sheet(f.tenant, "2026-03"), vec![item(f.employees[0])], Effects::audited(audit("c"))).await.unwrap_err();

    assert!(matches!(again, Error::Conflict(_, ref m) if m.contains("regular payroll sheet for 2026-03")), "{again:?}");
    assert_eq!(
        f.payroll.regular_sheet(f.tenant, period("2026-03")).await.unwrap().map(|s| (s.id, s.kind)),
        Some((regular.id, SheetKind::Regular))
    );
    assert_eq!(f.payroll.regular_sheet(f.tenant, period("2026-04")).await.unwrap(), None);
    let back = f.payroll.get_sheet(Party::Platform, first.id).await.unwrap().unwrap();
    assert_eq!((back.kind, back.ytd_basis), (SheetKind::Supplementary, None));
    let query = SheetQuery { kind: Some(SheetKind::Supplementary), ..SheetQuery::default() };
    let listed: Vec<i64> = f.payroll.list_sheets(Party::Platform, query).await.unwrap().items.iter().map(|s| s.id).collect();
    assert_eq!(listed, vec![second.id, first.id]);
});

store_test!(approval_refuses_a_sheet_whose_year_to_date_changed_and_writes_nothing, |db| {
    let f = fixture(&db).await;
    stored(&f, "2026-01", SheetStatus::Approved, 1_000_000, 1_000).await;
    // Two supplementary sheets of January calculated side by side: each over January's regular sheet.
    let one = || vec![item(f.employees[0])];
    let a = stored_as(&f, SheetKind::Supplementary, "2026-01", SheetStatus::Calculated, 100_000, 100, one()).await;
    let b = stored_as(&f, SheetKind::Supplementary, "2026-01", SheetStatus::Calculated, 200_000, 200, one()).await;
    // February's regular sheet was calculated before either was approved.
    let feb = stored(&f, "2026-02", SheetStatus::Calculated, 1_000_000, 1_000).await;
    assert_eq!((a.ytd_basis, b.ytd_basis, feb.ytd_basis), (Some(1), Some(1), Some(1)));
    let approve = |s: &Sheet| Sheet { status: SheetStatus::Approved, ..s.clone() };

    let first = f.payroll.approve_sheet(approve(&a), Effects::audited(audit("approve"))).await.unwrap();
    let second = f.payroll.approve_sheet(approve(&b), Effects::audited(audit("approve"))).await.unwrap();
    let later_month = f.payroll.approve_sheet(approve(&feb), Effects::audited(audit("approve"))).await.unwrap();
    let never_calculated =
        f.payroll.approve_sheet(Sheet { ytd_basis: None, ..approve(&b) }, Effects::audited(audit("approve"))).await.unwrap();

    assert!(matches!(first, Approval::Approved(ref s) if s.status == SheetStatus::Approved && s.version == a.version + 1), "{first:?}");
    assert_eq!(second, Approval::StaleYearToDate);
    assert_eq!(later_month, Approval::StaleYearToDate);
    assert_eq!(never_calculated, Approval::StaleYearToDate);
    let b_now = f.payroll.get_sheet(Party::Platform, b.id).await.unwrap().unwrap();
    assert_eq!((b_now.status, b_now.version), (SheetStatus::Calculated, b.version));
    // Recalculated (its basis now counts the first), it is approved.
    let basis = f.payroll.year_to_date(f.tenant, b.period, SheetKind::Supplementary).await.unwrap().basis;
    assert_eq!(basis, 2);
    let recalculated =
        f.payroll.save_calculation(Sheet { ytd_basis: Some(basis), ..b_now }, vec![], Effects::audited(audit("calc"))).await.unwrap();
    assert!(matches!(
        f.payroll.approve_sheet(approve(&recalculated), Effects::audited(audit("approve"))).await.unwrap(),
        Approval::Approved(_)
    ));
});

store_test!(an_annual_bonus_is_taxed_separately_once_a_year_whatever_sheet_carries_it, |db| {
    let f = fixture(&db).await;
    let (e0, e1) = (f.employees[0], f.employees[1]);
    stored(&f, "2025-12", SheetStatus::Approved, 1_000_000, 1_000).await;
    let last_year = stored_as(&f, SheetKind::Supplementary, "2025-12", SheetStatus::Sent, 0, 0, vec![bonus_item(e0)]).await;
    stored(&f, "2026-01", SheetStatus::Approved, 1_000_000, 1_000).await;
    let approved = stored_as(&f, SheetKind::Supplementary, "2026-01", SheetStatus::Approved, 0, 0, vec![bonus_item(e0)]).await;
    let calculated = stored_as(&f, SheetKind::Supplementary, "2026-01", SheetStatus::Calculated, 0, 0, vec![bonus_item(e1)]).await;
    let feb = stored_as(&f, SheetKind::Regular, "2026-02", SheetStatus::Calculated, 0, 0, vec![bonus_item(e0), bonus_item(e1)]).await;
    let settled = vec![SheetStatus::Approved, SheetStatus::Sent];
    let all = vec![SheetStatus::Calculated, SheetStatus::Approved, SheetStatus::Sent];

    let against_settled = f.payroll.separate_bonuses(f.tenant, 2026, feb.id, settled.clone(), vec![e0, e1]).await.unwrap();
    let against_all = f.payroll.separate_bonuses(f.tenant, 2026, feb.id, all, vec![e0, e1]).await.unwrap();
    let of_its_own = f.payroll.separate_bonuses(f.tenant, 2026, approved.id, settled.clone(), vec![e0]).await.unwrap();
    let in_2025 = f.payroll.separate_bonuses(f.tenant, 2025, 0, settled, vec![e0, e1]).await.unwrap();
    let refused =
        f.payroll.approve_sheet(Sheet { status: SheetStatus::Approved, ..feb.clone() }, Effects::audited(audit("approve"))).await.unwrap();

    assert_eq!(against_settled, HashMap::from([(e0, approved.id)]));
    assert_eq!(against_all, HashMap::from([(e0, approved.id), (e1, calculated.id)]));
    assert!(of_its_own.is_empty(), "a sheet's own bonus is not a second one");
    assert_eq!(in_2025, HashMap::from([(e0, last_year.id)]));
    // At approval only approved and sent sheets count: e0's bonus is refused, nothing written.
    assert_eq!(refused, Approval::AnnualBonusTaken(vec![(e0, approved.id)]));
    assert_eq!(f.payroll.get_sheet(Party::Platform, feb.id).await.unwrap().unwrap().status, SheetStatus::Calculated);
});

store_test!(an_employees_tax_year_is_their_lines_on_approved_and_sent_sheets_of_the_year, |db| {
    let f = fixture(&db).await;
    let e0 = f.employees[0];
    stored(&f, "2025-12", SheetStatus::Sent, 9_000_000, 9_000).await; // last year
    let jan = stored(&f, "2026-01", SheetStatus::Sent, 1_000_000, 1_000).await;
    let jan_extra = stored_as(&f, SheetKind::Supplementary, "2026-01", SheetStatus::Approved, 500_000, 500, vec![item(e0)]).await;
    stored_as(&f, SheetKind::Supplementary, "2026-01", SheetStatus::Calculated, 7_000_000, 7_000, vec![item(e0)]).await; // not approved
    stored_as(&f, SheetKind::Supplementary, "2026-01", SheetStatus::Approved, 8_000_000, 8_000, vec![item(f.employees[1])]).await; // another employee
    let feb = stored(&f, "2026-02", SheetStatus::Approved, 2_000_000, 2_000).await;

    let lines = f.payroll.tax_year(f.tenant, e0, 2026).await.unwrap();
    let elsewhere = f.payroll.tax_year(f.tenant + 1000, e0, 2026).await.unwrap();

    let seen: Vec<(i64, SheetKind, String, i64)> =
        lines.iter().map(|l| (l.sheet_id, l.kind, l.period.to_string(), l.line.gross.fen())).collect();
    assert_eq!(
        seen,
        vec![
            (jan.id, SheetKind::Regular, "2026-01".into(), 1_000_000),
            (jan_extra.id, SheetKind::Supplementary, "2026-01".into(), 500_000),
            (feb.id, SheetKind::Regular, "2026-02".into(), 2_000_000),
        ]
    );
    assert_eq!(lines[2].line, line(2_000_000, 2_000));
    assert!(elsewhere.is_empty());
});

store_test!(an_employee_is_found_for_the_tax_year_only_in_scope, |db| {
    let f = fixture(&db).await;
    let e = f.employees[0];

    let platform = f.payroll.employee(Party::Platform, e).await.unwrap();
    let partner = f.payroll.employee(Party::Partner { partner_id: f.partner }, e).await.unwrap();
    let own = f.payroll.employee(Party::Tenant { tenant_id: f.tenant, partner_id: Some(f.partner) }, e).await.unwrap();
    let other_partner = f.payroll.employee(Party::Partner { partner_id: f.partner + 1000 }, e).await.unwrap();
    let other_tenant = f.payroll.employee(Party::Tenant { tenant_id: f.tenant + 1000, partner_id: None }, e).await.unwrap();

    assert_eq!(platform.as_ref().map(|x| (x.id, x.tenant_id, x.name.as_str())), Some((e, f.tenant, "Worker 0")));
    assert!(partner.is_some() && own.is_some());
    assert!(other_partner.is_none() && other_tenant.is_none());
});

store_test!(of_two_sheets_approved_at_once_over_the_same_year_to_date_exactly_one_is_approved, |db| {
    let f = fixture(&db).await;
    stored(&f, "2026-01", SheetStatus::Approved, 1_000_000, 1_000).await;
    for round in 0..5 {
        let one = || vec![item(f.employees[0])];
        let a = stored_as(&f, SheetKind::Supplementary, "2026-01", SheetStatus::Calculated, 100_000, 100, one()).await;
        let b = stored_as(&f, SheetKind::Supplementary, "2026-01", SheetStatus::Calculated, 100_000, 100, one()).await;
        assert_eq!(a.ytd_basis, b.ytd_basis);

        let (x, y) = tokio::join!(
            f.payroll.approve_sheet(Sheet { status: SheetStatus::Approved, ..a }, Effects::audited(audit("approve"))),
            f.payroll.approve_sheet(Sheet { status: SheetStatus::Approved, ..b }, Effects::audited(audit("approve"))),
        );

        let outcomes = [x.unwrap(), y.unwrap()];
        let approved = outcomes.iter().filter(|o| matches!(o, Approval::Approved(_))).count();
        let stale = outcomes.iter().filter(|o| **o == Approval::StaleYearToDate).count();
        assert_eq!((approved, stale), (1, 1), "round {round}: {outcomes:?}");
    }
});
