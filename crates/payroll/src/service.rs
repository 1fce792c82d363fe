//! The payroll use cases: sheets scoped to the caller's party — a period's regular sheet and
//! its supplementary sheets — calculated by the engine with year-to-date figures from the
//! approved sheets, approved by a second pair of eyes and sent as pay slips through
//! [`PayslipNotifier`]; an employee's tax year; and sheets as spreadsheet files (export, bank
//! file, import: `service/spreadsheets.rs`).
use crate::api::{ItemInput, NewSheet, SheetPatch};
use crate::engine::{CalculatedLine, Calculator, EmployeeMonth, SheetKind, YearToDate};
use crate::events;
use crate::lifecycle::{SheetAction, SheetStatus, check_four_eyes};
use crate::model::*;
use crate::ports::{PayeeAccounts, PayrollRepo, PayslipNotifier, SheetReader, SheetWriter};
use crate::tax_year::TaxYear;
use atrium_kernel::Reason;
use atrium_kernel::StrEnum;
use atrium_kernel::{Actor, AuditRecord, Clock, Effects, Error, FieldError, Id, Money, Page, Period, Result, Timestamp};
use futures_util::StreamExt;
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// How many pay slips are in flight at once during a send.
const SEND_CONCURRENCY: usize = 8;
/// Deliveries are stored in batches of this many, so a long send keeps what it achieved.
const SEND_BATCH: usize = 500;
/// A send that started this long ago and never finished (a crash) no longer blocks another.
const SEND_LEASE_SECS: i64 = 600;
/// At most this many field errors are reported for one calculation.
const MAX_REPORTED_ERRORS: usize = 50;

/// The payroll use cases over their ports, scoped to the caller: create, edit, calculate,
/// approve (four-eyes) and send sheets, spreadsheet exports and imports, and an employee's
/// tax year.
pub struct PayrollService {
    repo: Arc<dyn PayrollRepo>,
    notifier: Arc<dyn PayslipNotifier>,
    files: FilePorts,
    clock: Arc<dyn Clock>,
}

/// The ports of the spreadsheet use cases: employees' bank accounts, and the file encoder and
/// decoder.
pub struct FilePorts {
    /// Employees' bank accounts, for the bank-transfer file.
    pub accounts: Arc<dyn PayeeAccounts>,
    /// Encodes tables as xlsx or csv files.
    pub writer: Arc<dyn SheetWriter>,
    /// Decodes uploaded xlsx or csv files.
    pub reader: Arc<dyn SheetReader>,
}

/// The audit view of a sheet: its summary, never its 10,000 items.
fn audit_json(s: &Sheet) -> serde_json::Value {
    json!({
        "tenant_id": s.tenant_id,
        "period": s.period.to_string(),
        "kind": s.kind.as_str(),
        "title": s.title,
        "status": s.status.as_str(),
        "totals": s.totals,
    })
}

fn check_adjustments(i: usize, a: &Adjustments, errors: &mut Vec<FieldError>) {
    let fields = [
        ("allowance", a.allowance),
        ("overtime", a.overtime),
        ("bonus", a.bonus),
        ("leave_deduction", a.leave_deduction),
        ("other_pre_tax_deduction", a.other_pre_tax_deduction),
        ("after_tax_deduction", a.after_tax_deduction),
        ("annual_bonus", a.annual_bonus),
    ];
    for (name, value) in fields {
        if let Err(message) = value.check_input() {
            errors.push(FieldError::new(format!("items[{i}].{name}"), message));
        }
    }
}

/// A supplementary item pays only allowance, overtime, bonus and the annual bonus, less
/// pre- and after-tax deductions: no base salary, so no leave deduction either.
fn check_supplementary(i: usize, a: &Adjustments, errors: &mut Vec<FieldError>) {
    if a.leave_deduction != Money::ZERO {
        errors.push(FieldError::new(
            format!("items[{i}].leave_deduction"),
            "a supplementary sheet pays no base salary, so it carries no leave deduction (the period's regular sheet does)",
        ));
    }
}

/// The 409 of an annual bonus that is already taxed separately this year on another sheet.
fn bonus_taken(i: usize, item: &SheetItem, year: i32, other_sheet: Id) -> FieldError {
    FieldError::new(
        format!("items[{i}].annual_bonus"),
        format!(
            "{} already has an annual one-off bonus taxed separately in {year}, on payroll sheet {other_sheet}; it may be taxed \
             separately once a tax year (pay this one as bonus instead)",
            item.employee_name
        ),
    )
}

/// Prefixes the engine's field errors with the item they belong to.
fn item_errors(i: usize, e: Error, errors: &mut Vec<FieldError>) {
    match e {
        Error::Invalid(fields) => errors.extend(fields.into_iter().map(|f| FieldError::new(format!("items[{i}].{}", f.field), f.message))),
        other => errors.push(FieldError::new(format!("items[{i}]"), other.to_string())),
    }
}

impl PayrollService {
    /// A service over its storage, the pay-slip notifier, the file ports and a clock.
    pub fn new(repo: Arc<dyn PayrollRepo>, notifier: Arc<dyn PayslipNotifier>, files: FilePorts, clock: Arc<dyn Clock>) -> Self {
        PayrollService { repo, notifier, files, clock }
    }

    /// One page of the sheets in the caller's scope that match `query`, without their items.
    pub async fn list(&self, actor: &Actor, query: SheetQuery) -> Result<Page<Sheet>> {
        self.repo.list_sheets(actor.party, query).await
    }

    async fn sheet(&self, actor: &Actor, id: Id) -> Result<Sheet> {
        self.repo.get_sheet(actor.party, id).await?.ok_or(Error::NotFound("payroll sheet"))
    }

    /// A sheet in the caller's scope with its items; `NotFound` for any other.
    pub async fn get(&self, actor: &Actor, id: Id) -> Result<SheetDetail> {
        let sheet = self.sheet(actor, id).await?;
        self.detail(sheet).await
    }

    /// A sheet just read or written, with its items.
    async fn detail(&self, sheet: Sheet) -> Result<SheetDetail> {
        let items = self.repo.sheet_items(sheet.id).await?;
        Ok(SheetDetail { sheet, items })
    }

    async fn tenant(&self, actor: &Actor, tenant_id: Id) -> Result<PayrollTenant> {
        self.repo.tenant(actor.party, tenant_id).await?.ok_or(Error::NotFound("tenant"))
    }

    async fn employees_by_id(&self, tenant_id: Id, ids: Vec<Id>) -> Result<HashMap<Id, PayrollEmployee>> {
        Ok(self.repo.employees(tenant_id, Some(ids)).await?.into_iter().map(|e| (e.id, e)).collect())
    }

    /// Builds items from the request, or from the tenant's active employees without one (a
    /// regular sheet only: a supplementary sheet names whom it pays).
    async fn items_for(&self, tenant_id: Id, kind: SheetKind, input: Option<Vec<ItemInput>>) -> Result<Vec<SheetItem>> {
        let Some(input) = input else {
            if kind == SheetKind::Supplementary {
                return Err(Error::invalid("items", "is required: a supplementary sheet lists the employees it pays"));
            }
            let employees = self.repo.employees(tenant_id, None).await?;
            if employees.is_empty() {
                return Err(Error::conflict(Reason::NoEmployees, "the tenant has no active employees; list the employees as items"));
            }
            return Ok(employees.into_iter().map(|e| new_item(&e, Adjustments::default())).collect());
        };
        if input.is_empty() {
            return Err(Error::invalid("items", "must not be empty"));
        }
        let mut errors = Vec::new();
        let mut seen = HashSet::with_capacity(input.len());
        for (i, item) in input.iter().enumerate() {
            if !seen.insert(item.employee_id) {
                errors.push(FieldError::new(format!("items[{i}].employee_id"), "this employee is already on the sheet"));
            }
            check_adjustments(i, &item.adjustments(), &mut errors);
            if kind == SheetKind::Supplementary {
                check_supplementary(i, &item.adjustments(), &mut errors);
            }
        }
        if !errors.is_empty() {
            return Err(Error::Invalid(errors));
        }
        let employees = self.employees_by_id(tenant_id, input.iter().map(|i| i.employee_id).collect()).await?;
        let mut items = Vec::with_capacity(input.len());
        for (i, item) in input.iter().enumerate() {
            match employees.get(&item.employee_id) {
                Some(e) => items.push(new_item(e, item.adjustments())),
                None => return Err(Error::no_such(format!("items[{i}].employee_id"), "no such employee in this tenant")),
            }
        }
        Ok(items)
    }

    /// Creates a `draft` sheet for the caller's tenant (or one in its scope): with the given
    /// items, or, for a regular sheet without items, one item per active employee. A second regular
    /// sheet of the period is a `Conflict`; so is a supplementary sheet before its period's regular
    /// sheet is approved or sent.
    pub async fn create(&self, actor: &Actor, input: NewSheet) -> Result<SheetDetail> {
        let tenant_id = actor.party.tenant_for_new(input.tenant_id)?;
        let tenant = self.repo.tenant(actor.party, tenant_id).await?.ok_or_else(|| Error::no_such("tenant_id", "no such tenant"))?;
        let items = self.items_for(tenant_id, input.kind, input.items).await?;
        if input.kind == SheetKind::Supplementary {
            self.check_regular_settled(tenant_id, input.period).await?;
        }
        let now = self.clock.now();
        let title = input.title.map(|t| t.into_string()).unwrap_or_else(|| match input.kind {
            SheetKind::Regular => format!("Payroll {}", input.period),
            SheetKind::Supplementary => format!("Supplementary payroll {}", input.period),
        });
        let draft = Sheet::draft(tenant_id, input.period, title, SheetTotals::of(&items)?, Some(actor.user_id), now);
        let sheet = Sheet { kind: input.kind, ..draft };
        let audit = AuditRecord::by(actor, now, "payroll_sheet.create", "payroll_sheet", None)
            .owned_by(tenant.partner_id, Some(tenant_id))
            .change(None, Some(&audit_json(&sheet)));
        let sheet = self.repo.insert_sheet(sheet, items, Effects::audited(audit)).await?;
        self.detail(sheet).await
    }

    /// A supplementary sheet of `period` needs the period's regular sheet approved or sent:
    /// it pays on top of it. 409 naming why otherwise.
    async fn check_regular_settled(&self, tenant_id: Id, period: Period) -> Result<()> {
        match self.repo.regular_sheet(tenant_id, period).await? {
            Some(regular) if matches!(regular.status, SheetStatus::Approved | SheetStatus::Sent) => Ok(()),
            Some(regular) => Err(Error::conflict(
                Reason::RegularSheetFirst,
                format!(
                    "a supplementary sheet pays on top of its period's regular sheet, and the regular sheet of {period} (id {}) is {}; \
                 approve it first",
                    regular.id,
                    regular.status.as_str()
                ),
            )),
            None => Err(Error::conflict(
                Reason::RegularSheetFirst,
                format!(
                    "a supplementary sheet pays on top of its period's regular sheet, and the tenant has no regular sheet for {period}; \
                 create, calculate and approve it first"
                ),
            )),
        }
    }

    /// Changes a draft or calculated sheet's title and items; the sheet goes back to `draft` and
    /// loses its calculated figures. An approved or sent sheet is a `Conflict`.
    pub async fn update(&self, actor: &Actor, id: Id, patch: SheetPatch) -> Result<SheetDetail> {
        let before = self.sheet(actor, id).await?;
        let status = before.status.after(SheetAction::Edit)?;
        let tenant = self.tenant(actor, before.tenant_id).await?;
        let items = match patch.items {
            Some(input) => Some(self.items_for(before.tenant_id, before.kind, Some(input)).await?),
            None => None,
        };
        let now = self.clock.now();
        let mut after = before.clone();
        if let Some(t) = patch.title {
            after.title = t.into_string();
        }
        // An edit invalidates the calculation: the items keep their adjustments only.
        let totals = match &items {
            Some(items) => SheetTotals::of(items)?,
            None => SheetTotals { employees: before.totals.employees, ..SheetTotals::default() },
        };
        after.status = status;
        after.totals = totals;
        after.calculated_by = None;
        after.calculated_at = None;
        after.ytd_basis = None;
        after.updated_at = now;
        let audit = AuditRecord::by(actor, now, "payroll_sheet.update", "payroll_sheet", Some(id))
            .owned_by(tenant.partner_id, Some(tenant.id))
            .change(Some(&audit_json(&before)), Some(&audit_json(&after)));
        let saved =
            self.repo.update_sheet(after, items.map_or(ItemsWrite::ClearFigures, ItemsWrite::Replace), Effects::audited(audit)).await?;
        self.detail(saved).await
    }

    /// Calculates every item with the engine, the tenant's policy and each employee's year to date
    /// from the approved and sent sheets; the sheet becomes `calculated`. Items that cannot be
    /// calculated (or an invalid policy) block it with a 409 naming each, and nothing is written.
    pub async fn calculate(&self, actor: &Actor, id: Id) -> Result<SheetDetail> {
        let before = self.sheet(actor, id).await?;
        let status = before.status.after(SheetAction::Calculate)?;
        let tenant = self.tenant(actor, before.tenant_id).await?;
        // What stops a calculation is in the stored sheet, employees and policy, not in this
        // request: 409 naming each problem.
        let calculator = Calculator::new(tenant.policy, before.period).map_err(|e| match e {
            Error::Invalid(fields) => Error::Blocked(
                Reason::PayrollPolicy,
                fields.into_iter().map(|f| FieldError::new(format!("tenant.payroll_policy.{}", f.field), f.message)).collect(),
            ),
            other => other,
        })?;
        // The year to date does not depend on the items: read it while the items are read.
        let ((mut items, employees, taken), ytd) = futures_util::future::try_join(
            async {
                let items = self.repo.sheet_items(id).await?;
                let employees = self.employees_by_id(before.tenant_id, items.iter().map(|i| i.employee_id).collect()).await?;
                let taken =
                    self.bonuses_taken(&before, &items, &[SheetStatus::Calculated, SheetStatus::Approved, SheetStatus::Sent]).await?;
                Ok::<_, Error>((items, employees, taken))
            },
            self.repo.year_to_date(before.tenant_id, before.period, before.kind),
        )
        .await?;
        let supplementary = before.kind == SheetKind::Supplementary;

        let mut lines: Vec<(Id, CalculatedLine)> = Vec::with_capacity(items.len());
        let mut errors = Vec::new();
        for (i, item) in items.iter_mut().enumerate() {
            if let Some(&other) = taken.get(&item.employee_id) {
                if errors.len() < MAX_REPORTED_ERRORS {
                    errors.push(bonus_taken(i, item, before.period.year(), other));
                }
                continue;
            }
            let Some(e) = employees.get(&item.employee_id) else {
                errors.push(FieldError::new(format!("items[{i}].employee_id"), "this employee no longer exists"));
                continue;
            };
            let a = item.adjustments;
            // A supplementary item pays no salary and no contributions: the engine's
            // supplementary mode, over a year to date that holds the period's regular sheet.
            let (kind, base_salary, si_base) =
                if supplementary { (SheetKind::Supplementary, Money::ZERO, None) } else { (SheetKind::Regular, e.base_salary, e.si_base) };
            let input = EmployeeMonth {
                kind,
                base_salary,
                allowance: a.allowance,
                overtime: a.overtime,
                bonus: a.bonus,
                leave_deduction: a.leave_deduction,
                other_pre_tax_deduction: a.other_pre_tax_deduction,
                after_tax_deduction: a.after_tax_deduction,
                annual_bonus: a.annual_bonus,
                tax_free_income: Money::ZERO,
                si_base,
                housing_fund_rate: e.housing_fund_rate,
                hire_date: e.hire_date,
                special_deductions: &e.special_deductions,
            };
            match calculator.calculate(&input, ytd.by_employee.get(&e.id).unwrap_or(&YearToDate::ZERO)) {
                Ok(line) => {
                    item.line = Some(line);
                    lines.push((item.id, line));
                }
                Err(err) if errors.len() < MAX_REPORTED_ERRORS => item_errors(i, err, &mut errors),
                Err(_) => {}
            }
        }
        if !errors.is_empty() {
            return Err(Error::Blocked(Reason::SheetItems, errors));
        }

        let now = self.clock.now();
        let mut after = before.clone();
        after.status = status;
        after.totals = SheetTotals::of(&items)?;
        after.calculated_by = Some(actor.user_id);
        after.calculated_at = Some(now);
        after.ytd_basis = Some(ytd.basis);
        after.updated_at = now;
        let audit = AuditRecord::by(actor, now, "payroll_sheet.calculate", "payroll_sheet", Some(id))
            .owned_by(tenant.partner_id, Some(tenant.id))
            .change(Some(&audit_json(&before)), Some(&audit_json(&after)));
        let sheet = self.repo.save_calculation(after, lines, Effects::audited(audit)).await?;
        Ok(SheetDetail { sheet, items })
    }

    /// Approves a calculated sheet: its figures become final. Under four-eyes the user who
    /// calculated it may not approve it (`Forbidden`); a sheet whose year to date changed since its
    /// calculation (another sheet approved meanwhile) must be recalculated first (`Conflict`).
    pub async fn approve(&self, actor: &Actor, id: Id) -> Result<SheetDetail> {
        let before = self.sheet(actor, id).await?;
        let status = before.status.after(SheetAction::Approve)?;
        let tenant = self.tenant(actor, before.tenant_id).await?;
        let approver = actor.user_id;
        check_four_eyes(tenant.policy.four_eyes, before.calculated_by, approver)?;
        if before.ytd_basis.is_none() {
            // Calculated before calculations recorded what their year to date summed.
            return Err(Error::conflict(
                Reason::StaleYearToDate,
                "this sheet's calculation did not record its year-to-date basis; recalculate it, then approve it",
            ));
        }
        let now = self.clock.now();
        let mut after = before.clone();
        after.status = status;
        after.approved_by = Some(approver);
        after.approved_at = Some(now);
        after.updated_at = now;
        let audit = AuditRecord::by(actor, now, "payroll_sheet.approve", "payroll_sheet", Some(id))
            .owned_by(tenant.partner_id, Some(tenant.id))
            .change(Some(&audit_json(&before)), Some(&audit_json(&after)));
        let effects = Effects::audited(audit).with_event(events::sheet_approved(&after, now));
        match self.repo.approve_sheet(after, effects).await? {
            Approval::Approved(saved) => self.detail(*saved).await,
            Approval::StaleYearToDate => Err(Error::conflict(
                Reason::StaleYearToDate,
                format!(
                    "another payroll sheet of {} was approved after this one was calculated, so its year-to-date figures are out of \
                 date; recalculate it, then approve it",
                    before.period.year()
                ),
            )),
            Approval::AnnualBonusTaken(taken) => {
                let items = self.repo.sheet_items(id).await?;
                let taken: HashMap<Id, Id> = taken.into_iter().collect();
                let errors = items
                    .iter()
                    .enumerate()
                    .filter_map(|(i, item)| taken.get(&item.employee_id).map(|&other| bonus_taken(i, item, before.period.year(), other)))
                    .take(MAX_REPORTED_ERRORS)
                    .collect();
                Err(Error::Blocked(Reason::SheetItems, errors))
            }
        }
    }

    /// Employees with an annual bonus on `sheet` that already have one on another sheet of
    /// the tax year in one of `statuses`: employee id → that sheet's id.
    async fn bonuses_taken(&self, sheet: &Sheet, items: &[SheetItem], statuses: &[SheetStatus]) -> Result<HashMap<Id, Id>> {
        let with_bonus: Vec<Id> = items.iter().filter(|i| i.adjustments.annual_bonus > Money::ZERO).map(|i| i.employee_id).collect();
        if with_bonus.is_empty() {
            return Ok(HashMap::new());
        }
        self.repo.separate_bonuses(sheet.tenant_id, sheet.period.year(), sheet.id, statuses.to_vec(), with_bonus).await
    }

    /// The employee's tax year `year` at their tenant, from the approved and sent sheets of
    /// every kind; 404 for an employee outside the caller's scope.
    pub async fn tax_year(&self, actor: &Actor, employee_id: Id, year: i32) -> Result<TaxYear> {
        let employee = self.repo.employee(actor.party, employee_id).await?.ok_or(Error::NotFound("employee"))?;
        let lines = self.repo.tax_year(employee.tenant_id, employee.id, year).await?;
        TaxYear::of(&employee, year, &lines)
    }

    /// Sends the pay slips not yet delivered; a sheet already sent retries its failed ones.
    pub async fn send(&self, actor: &Actor, id: Id) -> Result<SheetDetail> {
        let before = self.sheet(actor, id).await?;
        let status = before.status.after(SheetAction::Send)?;
        let now = self.clock.now();
        if before.send_started_at.is_some_and(|t| (now - t).num_seconds() < SEND_LEASE_SECS) {
            return Err(Error::conflict(Reason::TryAgain, "a send of this sheet is in progress; try again when it has finished"));
        }
        let tenant = self.tenant(actor, before.tenant_id).await?;
        let items = self.repo.sheet_items(id).await?;
        let pending: Vec<&SheetItem> =
            items.iter().filter(|i| i.delivery.as_ref().is_none_or(|d| d.status == DeliveryStatus::Failed)).collect();
        if pending.is_empty() {
            return Ok(SheetDetail { sheet: before, items });
        }

        // Claim the send first, so a concurrent send answers 409 instead of sending twice.
        let mut sheet = before.clone();
        sheet.status = status;
        sheet.send_started_at = Some(now);
        sheet.updated_at = now;
        let audit = AuditRecord::by(actor, now, "payroll_sheet.send", "payroll_sheet", Some(id))
            .owned_by(tenant.partner_id, Some(tenant.id))
            .change(Some(&audit_json(&before)), Some(&json!({"status": status.as_str(), "pending": pending.len()})));
        sheet = self.repo.update_sheet(sheet, ItemsWrite::Keep, Effects::audited(audit)).await?;

        let recipients = self.employees_by_id(sheet.tenant_id, pending.iter().map(|i| i.employee_id).collect()).await?;
        let mut outcomes: HashMap<Id, Delivery> = HashMap::with_capacity(pending.len());
        for chunk in pending.chunks(SEND_BATCH) {
            let results: Vec<(Id, Delivery)> = futures_util::stream::iter(chunk.iter().copied())
                .map(|item| self.deliver(&sheet, item, recipients.get(&item.employee_id)))
                .buffer_unordered(SEND_CONCURRENCY)
                .collect()
                .await;
            let last = outcomes.len() + results.len() == pending.len();
            outcomes.extend(results.iter().cloned());
            let at = self.clock.now();
            let mut next = sheet.clone();
            next.totals = SheetTotals::of(&merge(&items, &outcomes))?;
            next.sent_at = next.sent_at.or(Some(at));
            next.updated_at = at;
            if last {
                next.send_started_at = None;
            }
            let audit = AuditRecord::by(actor, at, "payroll_sheet.deliver", "payroll_sheet", Some(id))
                .owned_by(tenant.partner_id, Some(tenant.id))
                .with_after(json!({
                    "delivered": results.iter().filter(|(_, d)| d.status == DeliveryStatus::Delivered).count(),
                    "failed": results.iter().filter(|(_, d)| d.status == DeliveryStatus::Failed).count(),
                }));
            // The send finished with this batch: its totals count every delivery.
            let sent = last.then(|| events::sheet_sent(&next, at));
            sheet = self.repo.save_deliveries(next, results, Effects::audited(audit).with_events(sent)).await?;
        }
        Ok(SheetDetail { sheet, items: merge(&items, &outcomes) })
    }

    async fn deliver(&self, sheet: &Sheet, item: &SheetItem, employee: Option<&PayrollEmployee>) -> (Id, Delivery) {
        let attempts = item.delivery.as_ref().map_or(0, |d| d.attempts) + 1;
        let outcome = match (employee, &item.line) {
            (None, _) => Err(Error::BadRequest("the employee no longer exists".into())),
            (_, None) => Err(Error::BadRequest("the item has not been calculated".into())),
            (Some(e), Some(line)) => match line.tax.checked_add(line.annual_bonus_tax) {
                Err(_) => Err(Error::BadRequest("the item's tax is too large to show".into())),
                Ok(tax) => {
                    let slip = Payslip {
                        sheet_id: sheet.id,
                        tenant_id: sheet.tenant_id,
                        period: sheet.period,
                        employee_id: e.id,
                        employee_name: e.name.clone(),
                        gross: line.gross,
                        contributions: line.contributions,
                        tax,
                        net_pay: line.net_pay,
                    };
                    let to = Recipient { openid: e.openid.clone(), phone: e.phone.clone(), email: e.email.clone() };
                    self.notifier.send(&slip, &to).await
                }
            },
        };
        let at: Timestamp = self.clock.now();
        let delivery = match outcome {
            Ok(channel) => Delivery { status: DeliveryStatus::Delivered, channel: Some(channel), error: None, attempts, at },
            Err(e) => {
                log::warn!("pay slip of sheet {} for employee {} not delivered: {e}", sheet.id, item.employee_id);
                Delivery { status: DeliveryStatus::Failed, channel: None, error: Some(e.to_string()), attempts, at }
            }
        };
        (item.id, delivery)
    }
}

fn new_item(e: &PayrollEmployee, adjustments: Adjustments) -> SheetItem {
    SheetItem {
        id: 0,
        employee_id: e.id,
        employee_name: e.name.clone(),
        employee_no: e.employee_no.clone(),
        adjustments,
        line: None,
        delivery: None,
    }
}

/// `items` with the given delivery outcomes applied.
fn merge(items: &[SheetItem], outcomes: &HashMap<Id, Delivery>) -> Vec<SheetItem> {
    items
        .iter()
        .map(|i| match outcomes.get(&i.id) {
            Some(d) => SheetItem { delivery: Some(d.clone()), ..i.clone() },
            None => i.clone(),
        })
        .collect()
}

mod spreadsheets;

#[cfg(test)]
mod tests;
