//! Contract tests of the payroll repository, on SQLite and (when configured) PostgreSQL.
#![allow(clippy::unwrap_used)]
use atrium_kernel::payroll::HousingFundRate;
use atrium_kernel::{AuditRecord, Error, Money, Party, Period, Timestamp};
use atrium_org::*;
use atrium_payroll::*;
use atrium_store::{Db, FieldCipher, OrgStore, PayrollStore, store_test};
use chrono::{TimeZone, Utc};

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
    let partner = org.insert_partner(p, AuditRecord::system(t0(), "partner.create", "partner", None)).await.unwrap().id;
    let t = Tenant::draft(Some(partner), "T", t0());
    let tenant = org.insert_tenant(t, AuditRecord::system(t0(), "tenant.create", "tenant", None)).await.unwrap().id;
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
        employees.push(org.insert_employee(e, AuditRecord::system(t0(), "employee.create", "employee", None)).await.unwrap().id);
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
    let s = f.payroll.insert_sheet(sheet(f.tenant, period), vec![item(f.employees[0]), item(f.employees[1])], audit("c")).await.unwrap();
    let items = f.payroll.sheet_items(s.id).await.unwrap();
    let lines = items.iter().map(|i| (i.id, line(gross, tax))).collect();
    let s = f.payroll.save_calculation(Sheet { status: SheetStatus::Calculated, ..s }, lines, audit("calc")).await.unwrap();
    if status == SheetStatus::Calculated {
        return s;
    }
    f.payroll.update_sheet(Sheet { status, ..s }, ItemsWrite::Keep, audit("approve")).await.unwrap()
}

store_test!(a_second_sheet_for_the_same_tenant_and_period_is_a_conflict, |db| {
    let f = fixture(&db).await;
    f.payroll.insert_sheet(sheet(f.tenant, "2026-03"), vec![item(f.employees[0])], audit("c")).await.unwrap();

    let again = f.payroll.insert_sheet(sheet(f.tenant, "2026-03"), vec![item(f.employees[0])], audit("c")).await.unwrap_err();

    assert!(matches!(again, Error::Conflict(ref m) if m.contains("2026-03")), "{again:?}");
});

store_test!(items_round_trip_with_their_line_and_delivery, |db| {
    let f = fixture(&db).await;
    let s = stored(&f, "2026-01", SheetStatus::Approved, 1_000_000, 3_000).await;
    let items = f.payroll.sheet_items(s.id).await.unwrap();
    let d = Delivery { status: DeliveryStatus::Failed, channel: None, error: Some("no subscription".into()), attempts: 1, at: t0() };
    let ok = Delivery { status: DeliveryStatus::Delivered, channel: Some(Channel::Wechat), error: None, attempts: 2, at: t0() };

    let s = f
        .payroll
        .save_deliveries(Sheet { status: SheetStatus::Sent, ..s }, vec![(items[0].id, d.clone()), (items[1].id, ok.clone())], audit("d"))
        .await
        .unwrap();
    let back = f.payroll.sheet_items(s.id).await.unwrap();

    assert_eq!(s.status, SheetStatus::Sent);
    assert_eq!(back[0].line, Some(line(1_000_000, 3_000)));
    assert_eq!(back[0].adjustments.allowance, Money::from_yuan(100));
    assert_eq!((back[0].delivery.clone(), back[1].delivery.clone()), (Some(d), Some(ok)));
});

store_test!(a_write_against_a_stale_version_is_a_conflict, |db| {
    let f = fixture(&db).await;
    let s = f.payroll.insert_sheet(sheet(f.tenant, "2026-03"), vec![item(f.employees[0])], audit("c")).await.unwrap();
    f.payroll.update_sheet(Sheet { title: "first".into(), ..s.clone() }, ItemsWrite::Keep, audit("u")).await.unwrap();

    let stale = f.payroll.update_sheet(Sheet { title: "second".into(), ..s.clone() }, ItemsWrite::Keep, audit("u")).await.unwrap_err();

    assert!(matches!(stale, Error::Conflict(_)), "{stale:?}");
    assert_eq!(f.payroll.get_sheet(Party::Platform, s.id).await.unwrap().unwrap().title, "first");
});

store_test!(year_to_date_sums_only_earlier_approved_or_sent_sheets_of_the_same_year, |db| {
    let f = fixture(&db).await;
    stored(&f, "2025-12", SheetStatus::Sent, 9_000_000, 9_000).await; // last year
    stored(&f, "2026-01", SheetStatus::Sent, 1_000_000, 1_000).await;
    stored(&f, "2026-02", SheetStatus::Approved, 2_000_000, 2_000).await;
    stored(&f, "2026-03", SheetStatus::Calculated, 4_000_000, 4_000).await; // not approved
    stored(&f, "2026-05", SheetStatus::Approved, 8_000_000, 8_000).await; // later

    let ytd = f.payroll.year_to_date(f.tenant, Period::parse("2026-04").unwrap()).await.unwrap();

    let e = ytd[&f.employees[0]];
    assert_eq!(e.gross, Money::from_fen(3_000_000));
    assert_eq!(e.tax_withheld, Money::from_fen(3_000));
    assert_eq!(e.contributions, Money::from_fen(300_000));
    assert_eq!(e.special_deductions, Money::from_fen(200));
    assert!(!ytd.contains_key(&f.employees[2]));
});

store_test!(sheets_are_scoped_to_the_tenant_and_its_partner, |db| {
    let f = fixture(&db).await;
    let s = f.payroll.insert_sheet(sheet(f.tenant, "2026-03"), vec![item(f.employees[0])], audit("c")).await.unwrap();
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
