//! Supplementary sheets, the once-a-year separately taxed bonus and the tax year, against
//! mocked ports: what is refused (400 naming the field, 409 naming why) before anything is
//! written, and what the service hands storage.
use super::*;
use crate::engine::CalculatedLine;

fn supplementary(status: SheetStatus, period: &str) -> Sheet {
    Sheet { kind: SheetKind::Supplementary, period: Period::parse(period).unwrap(), title: "Extra".into(), ..sheet(status) }
}

fn new_supplementary(items: Option<Vec<ItemInput>>) -> NewSheet {
    NewSheet { tenant_id: None, period: Period::parse("2026-01").unwrap(), kind: SheetKind::Supplementary, title: None, items }
}

fn pays(employee_id: Id, adjust: impl FnOnce(&mut ItemInput)) -> ItemInput {
    let mut input = ItemInput { employee_id, bonus: Money::from_yuan(1_000), ..ItemInput::default() };
    adjust(&mut input);
    input
}

fn with_bonus(mut item: SheetItem, yuan: i64) -> SheetItem {
    item.adjustments.annual_bonus = Money::from_yuan(yuan);
    item
}

fn fields(err: &Error) -> Vec<String> {
    match err {
        Error::Invalid(f) | Error::Blocked(_, f) => f.iter().map(|f| f.field.clone()).collect(),
        other => panic!("expected field errors, got {other:?}"),
    }
}

#[tokio::test]
async fn a_supplementary_sheet_needs_its_periods_regular_sheet_approved_and_says_which_one_is_not() {
    let mut repo = MockPayrollRepo::new();
    repo.expect_tenant().returning(|_, _| Ok(Some(tenant(true))));
    repo.expect_employees().returning(|_, _| Ok(vec![employee(100)]));
    let mut answers = vec![None, Some(Sheet { id: 31, ..sheet(SheetStatus::Calculated) })].into_iter();
    repo.expect_regular_sheet()
        .withf(|tenant, period| *tenant == TENANT && period.to_string() == "2026-01")
        .times(2)
        .returning(move |_, _| Ok(answers.next().flatten()));
    repo.expect_insert_sheet().never();
    let svc = service(repo, MockPayslipNotifier::new());

    let none = svc.create(&actor(1), new_supplementary(Some(vec![pays(100, |_| {})]))).await.unwrap_err();
    let calculated = svc.create(&actor(1), new_supplementary(Some(vec![pays(100, |_| {})]))).await.unwrap_err();

    assert!(matches!(none, Error::Conflict(_, ref m) if m.contains("no regular sheet for 2026-01")), "{none:?}");
    assert!(
        matches!(calculated, Error::Conflict(_, ref m) if m.contains("(id 31) is calculated") && m.contains("approve it first")),
        "{calculated:?}"
    );
}

#[tokio::test]
async fn a_supplementary_sheet_for_an_approved_period_is_stored_as_supplementary() {
    let mut repo = MockPayrollRepo::new();
    repo.expect_tenant().returning(|_, _| Ok(Some(tenant(true))));
    repo.expect_employees().returning(|_, _| Ok(vec![employee(100)]));
    repo.expect_regular_sheet().returning(|_, _| Ok(Some(sheet(SheetStatus::Sent))));
    repo.expect_insert_sheet()
        .withf(|s, items, _| {
            s.kind == SheetKind::Supplementary
                && s.title == "Supplementary payroll 2026-01"
                && s.ytd_basis.is_none()
                && items.len() == 1
                && items[0].adjustments.bonus == Money::from_yuan(1_000)
        })
        .times(1)
        .returning(|s, _, _| Ok(Sheet { id: 40, ..s }));
    repo.expect_sheet_items().returning(|_| Ok(vec![]));

    let detail =
        service(repo, MockPayslipNotifier::new()).create(&actor(1), new_supplementary(Some(vec![pays(100, |_| {})]))).await.unwrap();

    assert_eq!((detail.sheet.id, detail.sheet.kind), (40, SheetKind::Supplementary));
}

#[tokio::test]
async fn a_leave_deduction_on_a_supplementary_item_is_a_400_naming_it_before_anything_is_read() {
    let mut repo = MockPayrollRepo::new();
    repo.expect_tenant().returning(|_, _| Ok(Some(tenant(true))));
    repo.expect_employees().never();
    repo.expect_regular_sheet().never();
    repo.expect_insert_sheet().never();
    let items = vec![pays(100, |_| {}), pays(200, |i| i.leave_deduction = Money::from_yuan(10))];

    let err = service(repo, MockPayslipNotifier::new()).create(&actor(1), new_supplementary(Some(items))).await.unwrap_err();

    assert_eq!(fields(&err), ["items[1].leave_deduction"]);
    assert!(matches!(err, Error::Invalid(ref f) if f[0].message.contains("no base salary")), "{err:?}");
}

#[tokio::test]
async fn a_supplementary_sheet_lists_whom_it_pays() {
    let mut repo = MockPayrollRepo::new();
    repo.expect_tenant().returning(|_, _| Ok(Some(tenant(true))));
    repo.expect_employees().never();
    repo.expect_insert_sheet().never();

    let err = service(repo, MockPayslipNotifier::new()).create(&actor(1), new_supplementary(None)).await.unwrap_err();

    assert_eq!(fields(&err), ["items"]);
}

#[tokio::test]
async fn editing_a_supplementary_sheet_refuses_a_leave_deduction_the_same_way() {
    let mut repo = MockPayrollRepo::new();
    repo.expect_get_sheet().returning(|_, _| Ok(Some(supplementary(SheetStatus::Calculated, "2026-01"))));
    repo.expect_tenant().returning(|_, _| Ok(Some(tenant(true))));
    repo.expect_employees().never();
    repo.expect_update_sheet().never();
    let patch = crate::api::SheetPatch { title: None, items: Some(vec![pays(100, |i| i.leave_deduction = Money::from_fen(1))]) };

    let err = service(repo, MockPayslipNotifier::new()).update(&actor(1), 1, patch).await.unwrap_err();

    assert_eq!(fields(&err), ["items[0].leave_deduction"]);
}

#[tokio::test]
async fn a_supplementary_sheet_is_calculated_without_salary_or_contributions_over_its_periods_regular_sheet() {
    // The worked example: January's regular sheet paid 20,000 with 3,000 contributions and
    // withheld 360. A supplementary bonus of 10,000: 30,000 − 5,000 − 3,000 = 22,000 → 660,
    // less 360 → 300. (The employee's 30,000 base salary and the tenant's policy play no part.)
    let mut repo = MockPayrollRepo::new();
    repo.expect_get_sheet().returning(|_, _| Ok(Some(supplementary(SheetStatus::Draft, "2026-01"))));
    repo.expect_tenant().returning(|_, _| Ok(Some(tenant(true))));
    repo.expect_sheet_items().returning(|_| {
        let mut i = item(11, 100);
        i.adjustments.bonus = Money::from_yuan(10_000);
        Ok(vec![i])
    });
    repo.expect_employees().returning(|_, _| Ok(vec![employee(100)]));
    repo.expect_year_to_date()
        .withf(|_, period, kind| period.to_string() == "2026-01" && *kind == SheetKind::Supplementary)
        .times(1)
        .returning(|_, _, _| {
            let january = YearToDate {
                gross: Money::from_yuan(20_000),
                contributions: Money::from_yuan(3_000),
                tax_withheld: Money::from_yuan(360),
                ..YearToDate::ZERO
            };
            Ok(YearToDateSums { by_employee: HashMap::from([(100, january)]), basis: 1 })
        });
    repo.expect_separate_bonuses().never();
    repo.expect_save_calculation()
        .withf(|s, lines, _| s.kind == SheetKind::Supplementary && s.ytd_basis == Some(1) && lines.len() == 1)
        .times(1)
        .returning(|s, _, _| Ok(s));

    let detail = service(repo, MockPayslipNotifier::new()).calculate(&actor(9), 1).await.unwrap();

    let line = detail.items[0].line.unwrap();
    assert_eq!((line.gross, line.contributions, line.si_base), (Money::from_yuan(10_000), Money::ZERO, Money::ZERO));
    assert_eq!(
        (line.cumulative_taxable, line.cumulative_tax, line.tax),
        (Money::from_yuan(22_000), Money::from_yuan(660), Money::from_yuan(300))
    );
    assert_eq!(line.net_pay, Money::from_yuan(9_700));
}

#[tokio::test]
async fn a_second_separately_taxed_bonus_in_a_year_blocks_the_calculation_naming_the_item() {
    let mut repo = MockPayrollRepo::new();
    repo.expect_get_sheet().returning(|_, _| Ok(Some(sheet(SheetStatus::Draft))));
    repo.expect_tenant().returning(|_, _| Ok(Some(tenant(true))));
    repo.expect_sheet_items().returning(|_| Ok(vec![item(11, 100), with_bonus(item(12, 200), 20_000)]));
    repo.expect_employees().returning(|_, _| Ok(vec![employee(100), employee(200)]));
    repo.expect_year_to_date().returning(|_, _, _| Ok(YearToDateSums::default()));
    // Only employees with a bonus are asked about, against calculated, approved and sent sheets.
    repo.expect_separate_bonuses()
        .withf(|tenant, year, except, statuses, ids| {
            *tenant == TENANT
                && *year == 2026
                && *except == 1
                && statuses == &[SheetStatus::Calculated, SheetStatus::Approved, SheetStatus::Sent]
                && ids == &[200]
        })
        .times(1)
        .returning(|_, _, _, _, _| Ok(HashMap::from([(200, 44)])));
    repo.expect_save_calculation().never();

    let err = service(repo, MockPayslipNotifier::new()).calculate(&actor(9), 1).await.unwrap_err();

    assert_eq!(fields(&err), ["items[1].annual_bonus"]);
    assert!(
        matches!(err, Error::Blocked(_, ref f) if f[0].message.contains("sheet 44") && f[0].message.contains("once a tax year")),
        "{err:?}"
    );
}

#[tokio::test]
async fn approving_a_sheet_whose_year_to_date_changed_since_its_calculation_asks_for_a_recalculation() {
    let mut repo = MockPayrollRepo::new();
    repo.expect_get_sheet().returning(|_, _| Ok(Some(supplementary(SheetStatus::Calculated, "2026-01"))));
    repo.expect_tenant().returning(|_, _| Ok(Some(tenant(true))));
    repo.expect_approve_sheet().times(1).returning(|_, _| Ok(Approval::StaleYearToDate));

    let err = service(repo, MockPayslipNotifier::new()).approve(&actor(2), 1).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(_, ref m) if m.contains("recalculate")), "{err:?}");
}

#[tokio::test]
async fn a_sheet_calculated_before_bases_were_recorded_is_recalculated_before_approval() {
    let mut repo = MockPayrollRepo::new();
    repo.expect_get_sheet().returning(|_, _| Ok(Some(Sheet { ytd_basis: None, ..sheet(SheetStatus::Calculated) })));
    repo.expect_tenant().returning(|_, _| Ok(Some(tenant(true))));
    repo.expect_approve_sheet().never();

    let err = service(repo, MockPayslipNotifier::new()).approve(&actor(2), 1).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(_, ref m) if m.contains("recalculate")), "{err:?}");
}

#[tokio::test]
async fn approving_a_second_separately_taxed_bonus_is_blocked_naming_the_item() {
    let mut repo = MockPayrollRepo::new();
    repo.expect_get_sheet().returning(|_, _| Ok(Some(sheet(SheetStatus::Calculated))));
    repo.expect_tenant().returning(|_, _| Ok(Some(tenant(true))));
    repo.expect_approve_sheet().times(1).returning(|_, _| Ok(Approval::AnnualBonusTaken(vec![(300, 51)])));
    repo.expect_sheet_items().returning(|_| Ok(vec![item(11, 100), item(12, 200), with_bonus(item(13, 300), 5_000)]));

    let err = service(repo, MockPayslipNotifier::new()).approve(&actor(2), 1).await.unwrap_err();

    assert_eq!(fields(&err), ["items[2].annual_bonus"]);
    assert!(matches!(err, Error::Blocked(_, ref f) if f[0].message.contains("E300") && f[0].message.contains("sheet 51")), "{err:?}");
}

#[tokio::test]
async fn the_tax_year_of_an_employee_outside_the_callers_scope_is_not_found() {
    let mut repo = MockPayrollRepo::new();
    repo.expect_employee().withf(|scope, id| *scope == actor(1).party && *id == 555).returning(|_, _| Ok(None));
    repo.expect_tax_year().never();

    let err = service(repo, MockPayslipNotifier::new()).tax_year(&actor(1), 555, 2026).await.unwrap_err();

    assert!(matches!(err, Error::NotFound("employee")), "{err:?}");
}

#[tokio::test]
async fn the_tax_year_reads_the_employees_lines_of_that_year_at_their_tenant() {
    let mut repo = MockPayrollRepo::new();
    repo.expect_employee().returning(|_, _| Ok(Some(employee(100))));
    repo.expect_tax_year().withf(|tenant, employee, year| (*tenant, *employee, *year) == (TENANT, 100, 2026)).times(1).returning(
        |_, _, _| {
            let line = CalculatedLine { gross: Money::from_yuan(20_000), tax: Money::from_yuan(360), ..CalculatedLine::default() };
            Ok(vec![TaxYearLine {
                sheet_id: 3,
                kind: SheetKind::Regular,
                period: Period::parse("2026-01").unwrap(),
                approved_at: Some(now()),
                line,
            }])
        },
    );

    let year = service(repo, MockPayslipNotifier::new()).tax_year(&actor(1), 100, 2026).await.unwrap();

    assert_eq!((year.employee_id, year.year, year.months.len()), (100, 2026, 1));
    assert_eq!((year.totals.gross, year.totals.tax_withheld), (Money::from_yuan(20_000), Money::from_yuan(360)));
    // 20,000 − 60,000 < 0: nothing is due, and the 360 withheld would come back.
    assert_eq!((year.settlement.to_pay, year.settlement.to_refund), (Money::ZERO, Money::from_yuan(360)));
}
