//! PayrollService against mocked ports: what it asks of storage and delivery, and what it
//! refuses before touching either.
#![allow(clippy::unwrap_used)]
use super::{FilePorts, PayrollService};
use crate::api::{ItemInput, NewSheet};
use crate::engine::{SheetKind, YearToDate};
use crate::lifecycle::SheetStatus;
use crate::model::*;
use crate::ports::{MockPayeeAccounts, MockPayrollRepo, MockPayslipNotifier, MockSheetReader, MockSheetWriter};
use atrium_kernel::payroll::{HousingFundRate, PayrollPolicy};
use atrium_kernel::{Actor, Error, FixedClock, Id, Money, Party, Period, Timestamp};
use chrono::{TimeZone, Utc};
use std::collections::HashMap;
use std::sync::Arc;

const TENANT: Id = 7;

fn now() -> Timestamp {
    Utc.with_ymd_and_hms(2026, 3, 28, 10, 0, 0).single().unwrap()
}

fn actor(user_id: Id) -> Actor {
    Actor::new(user_id, "s", Party::Tenant { tenant_id: TENANT, partner_id: None }, ["payroll:*"])
}

fn sheet(status: SheetStatus) -> Sheet {
    let march = Sheet::draft(TENANT, Period::parse("2026-03").unwrap(), "March".into(), SheetTotals::default(), Some(1), now());
    let ytd_basis = (status != SheetStatus::Draft).then_some(0);
    Sheet { id: 1, status, calculated_by: Some(1), ytd_basis, version: 3, ..march }
}

fn employee(id: Id) -> PayrollEmployee {
    PayrollEmployee {
        id,
        tenant_id: TENANT,
        name: format!("E{id}"),
        employee_no: None,
        active: true,
        base_salary: Money::from_yuan(30_000),
        si_base: None,
        housing_fund_rate: HousingFundRate::parse("0.05").unwrap(),
        hire_date: None,
        special_deductions: vec![],
        openid: Some(format!("o{id}")),
        phone: None,
        email: None,
    }
}

fn item(id: Id, employee_id: Id) -> SheetItem {
    SheetItem {
        id,
        employee_id,
        employee_name: format!("E{employee_id}"),
        employee_no: None,
        adjustments: Adjustments::default(),
        line: None,
        delivery: None,
    }
}

fn tenant(four_eyes: bool) -> PayrollTenant {
    PayrollTenant { id: TENANT, partner_id: None, policy: PayrollPolicy { four_eyes, ..PayrollPolicy::default() } }
}

fn service(repo: MockPayrollRepo, notifier: MockPayslipNotifier) -> PayrollService {
    with_files(repo, notifier, MockPayeeAccounts::new(), MockSheetWriter::new(), MockSheetReader::new())
}

/// A service whose file ports are the given mocks (each expecting nothing unless told).
fn with_files(
    repo: MockPayrollRepo,
    notifier: MockPayslipNotifier,
    accounts: MockPayeeAccounts,
    writer: MockSheetWriter,
    reader: MockSheetReader,
) -> PayrollService {
    let files = FilePorts { accounts: Arc::new(accounts), writer: Arc::new(writer), reader: Arc::new(reader) };
    PayrollService::new(Arc::new(repo), Arc::new(notifier), files, Arc::new(FixedClock::new(now())))
}

#[tokio::test]
async fn calculate_uses_year_to_date_and_saves_every_line_with_the_calculator() {
    let mut repo = MockPayrollRepo::new();
    repo.expect_get_sheet().returning(|_, _| Ok(Some(sheet(SheetStatus::Draft))));
    repo.expect_tenant().returning(|_, _| Ok(Some(tenant(true))));
    repo.expect_sheet_items().returning(|_| Ok(vec![item(11, 100), item(12, 200)]));
    repo.expect_employees().returning(|_, _| Ok(vec![employee(100), employee(200)]));
    // Employee 100 already had 2 months: 60,000 gross, 9,000 contributions, 4,000 special, 1,180 tax.
    repo.expect_year_to_date().withf(|_, _, kind| *kind == SheetKind::Regular).returning(|_, _, _| {
        let ytd = YearToDate {
            gross: Money::from_yuan(60_000),
            contributions: Money::from_yuan(9_000),
            special_deductions: Money::from_yuan(4_000),
            tax_withheld: Money::from_yuan(1_180),
            ..YearToDate::ZERO
        };
        Ok(YearToDateSums { by_employee: HashMap::from([(100, ytd)]), basis: 2 })
    });
    repo.expect_save_calculation()
        .withf(|s, lines, effects| {
            s.status == SheetStatus::Calculated
                && s.calculated_by == Some(9)
                && s.ytd_basis == Some(2)
                && lines.len() == 2
                && effects.audit.as_ref().is_some_and(|a| a.action == "payroll_sheet.calculate")
                && effects.events.is_empty()
        })
        .times(1)
        .returning(|s, _, _| Ok(s));

    let detail = service(repo, MockPayslipNotifier::new()).calculate(&actor(9), 1).await.unwrap();

    let with_history = detail.items[0].line.unwrap();
    let first_month = detail.items[1].line.unwrap();
    // Contributions here use the Beijing default policy, so only the year-to-date effect is
    // compared: the same month costs more tax on top of two earlier months.
    assert_eq!(with_history.gross, first_month.gross);
    assert!(with_history.cumulative_taxable > first_month.cumulative_taxable);
    assert_eq!(with_history.cumulative_tax.checked_sub(Money::from_yuan(1_180)), Ok(with_history.tax));
    assert_eq!(detail.sheet.totals.employees, 2);
    assert_eq!(Ok(detail.sheet.totals.net_pay), with_history.net_pay.checked_add(first_month.net_pay));
}

#[tokio::test]
async fn calculating_an_approved_sheet_is_a_conflict_and_touches_nothing() {
    let mut repo = MockPayrollRepo::new();
    repo.expect_get_sheet().returning(|_, _| Ok(Some(sheet(SheetStatus::Approved))));
    repo.expect_save_calculation().never();

    let err = service(repo, MockPayslipNotifier::new()).calculate(&actor(9), 1).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(..)), "{err:?}");
}

#[tokio::test]
async fn the_calculator_cannot_approve_under_four_eyes() {
    let mut repo = MockPayrollRepo::new();
    repo.expect_get_sheet().returning(|_, _| Ok(Some(sheet(SheetStatus::Calculated))));
    repo.expect_tenant().returning(|_, _| Ok(Some(tenant(true))));
    repo.expect_approve_sheet().never();
    repo.expect_update_sheet().never();

    let err = service(repo, MockPayslipNotifier::new()).approve(&actor(1), 1).await.unwrap_err();

    assert!(matches!(err, Error::Forbidden(..)), "{err:?}");
}

#[tokio::test]
async fn another_user_approves_and_the_approval_is_recorded() {
    let mut repo = MockPayrollRepo::new();
    repo.expect_get_sheet().returning(|_, _| Ok(Some(sheet(SheetStatus::Calculated))));
    repo.expect_tenant().returning(|_, _| Ok(Some(tenant(true))));
    // The approval and its checks are one repository call (one transaction).
    repo.expect_approve_sheet()
        .withf(|s, effects| {
            s.status == SheetStatus::Approved
                && s.approved_by == Some(2)
                && s.approved_at == Some(now())
                && s.ytd_basis == Some(0)
                && effects.audit.as_ref().is_some_and(|a| a.action == "payroll_sheet.approve")
                && effects.events.iter().map(|e| (e.kind, e.subject, e.data["status"].as_str(), e.data["approved_by"].as_i64())).eq([(
                    crate::events::SHEET_APPROVED,
                    Some(s.id),
                    Some("approved"),
                    Some(2),
                )])
        })
        .times(1)
        .returning(|s, _| Ok(Approval::Approved(Box::new(s))));
    repo.expect_update_sheet().never();
    repo.expect_sheet_items().returning(|_| Ok(vec![]));

    service(repo, MockPayslipNotifier::new()).approve(&actor(2), 1).await.unwrap();
}

#[tokio::test]
async fn send_records_each_outcome_and_a_resend_only_retries_failures() {
    let calculated = |mut i: SheetItem| {
        i.line = Some(crate::engine::CalculatedLine { net_pay: Money::from_yuan(100), ..Default::default() });
        i
    };
    let delivered = Delivery { status: DeliveryStatus::Delivered, channel: Some(Channel::Sms), error: None, attempts: 1, at: now() };
    let items = vec![calculated(item(11, 100)), SheetItem { delivery: Some(delivered), ..calculated(item(12, 200)) }];
    let mut repo = MockPayrollRepo::new();
    repo.expect_get_sheet().returning(|_, _| Ok(Some(sheet(SheetStatus::Sent))));
    repo.expect_tenant().returning(|_, _| Ok(Some(tenant(true))));
    repo.expect_sheet_items().returning(move |_| Ok(items.clone()));
    // The claim of the send, then the outcomes.
    repo.expect_update_sheet()
        .withf(|s, items, _| s.send_started_at == Some(now()) && *items == ItemsWrite::Keep)
        .times(1)
        .returning(|s, _, _| Ok(s));
    repo.expect_employees().withf(|_, ids| ids.as_deref() == Some(&[100][..])).returning(|_, _| Ok(vec![employee(100)]));
    repo.expect_save_deliveries()
        .withf(|s, d, effects| {
            d.len() == 1
                && d[0].0 == 11
                && d[0].1.status == DeliveryStatus::Failed
                && d[0].1.attempts == 1
                && s.send_started_at.is_none()
                // The send finished with this batch: the sheet was sent, its totals count the failure.
                && effects
                    .events
                    .iter()
                    .map(|e| (e.kind, e.data["totals"]["failed"].as_i64()))
                    .eq([(crate::events::SHEET_SENT, Some(1))])
        })
        .times(1)
        .returning(|s, _, _| Ok(s));
    let mut notifier = MockPayslipNotifier::new();
    notifier
        .expect_send()
        .withf(|slip, to| slip.employee_id == 100 && slip.net_pay == Money::from_yuan(100) && to.openid.as_deref() == Some("o100"))
        .times(1)
        .returning(|_, _| Err(Error::Upstream("platform refused: 43101".into())));

    let detail = service(repo, notifier).send(&actor(2), 1).await.unwrap();

    assert_eq!(detail.items[0].delivery.as_ref().unwrap().error.as_deref(), Some("platform refused: 43101"));
    assert_eq!((detail.sheet.totals.delivered, detail.sheet.totals.failed), (1, 1));
}

#[tokio::test]
async fn a_send_in_progress_refuses_a_second_one() {
    let mut repo = MockPayrollRepo::new();
    repo.expect_get_sheet().returning(|_, _| Ok(Some(Sheet { send_started_at: Some(now()), ..sheet(SheetStatus::Approved) })));
    let mut notifier = MockPayslipNotifier::new();
    notifier.expect_send().never();

    let err = service(repo, notifier).send(&actor(2), 1).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(_, ref m) if m.contains("in progress")), "{err:?}");
}

#[tokio::test]
async fn create_names_unknown_and_duplicate_employees() {
    let mut repo = MockPayrollRepo::new();
    repo.expect_tenant().returning(|_, _| Ok(Some(tenant(true))));
    repo.expect_employees().returning(|_, _| Ok(vec![employee(100)]));
    repo.expect_insert_sheet().never();
    let input = |ids: &[Id]| NewSheet {
        tenant_id: None,
        period: Period::parse("2026-03").unwrap(),
        kind: SheetKind::Regular,
        title: None,
        items: Some(ids.iter().map(|&employee_id| ItemInput { employee_id, ..ItemInput::default() }).collect()),
    };
    let svc = service(repo, MockPayslipNotifier::new());

    let unknown = svc.create(&actor(1), input(&[100, 555])).await.unwrap_err();
    let twice = svc.create(&actor(1), input(&[100, 100])).await.unwrap_err();

    assert!(matches!(unknown, Error::NoSuch(ref f) if f.field == "items[1].employee_id"), "{unknown:?}");
    assert!(matches!(twice, Error::Invalid(ref f) if f[0].field == "items[1].employee_id"), "{twice:?}");
}

mod supplementary;

mod files;
