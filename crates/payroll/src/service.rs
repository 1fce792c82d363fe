//! The payroll use cases: sheets scoped to the caller's party, calculated by the engine with
//! year-to-date figures from earlier approved sheets, approved by a second pair of eyes and
//! sent as pay slips through [`PayslipNotifier`].
use crate::api::{ItemInput, NewSheet, SheetPatch};
use crate::engine::{CalculatedLine, Calculator, EmployeeMonth, YearToDate};
use crate::lifecycle::{SheetAction, check_four_eyes};
use crate::model::*;
use crate::ports::{PayrollRepo, PayslipNotifier};
use atrium_kernel::StrEnum;
use atrium_kernel::{Actor, AuditRecord, Clock, Error, FieldError, Id, Money, Page, Result, Timestamp};
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

pub struct PayrollService {
    repo: Arc<dyn PayrollRepo>,
    notifier: Arc<dyn PayslipNotifier>,
    clock: Arc<dyn Clock>,
}

/// The audit view of a sheet: its summary, never its 10,000 items.
fn audit_json(s: &Sheet) -> serde_json::Value {
    json!({
        "tenant_id": s.tenant_id,
        "period": s.period.to_string(),
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

/// Prefixes the engine's field errors with the item they belong to.
fn item_errors(i: usize, e: Error, errors: &mut Vec<FieldError>) {
    match e {
        Error::Invalid(fields) => errors.extend(fields.into_iter().map(|f| FieldError::new(format!("items[{i}].{}", f.field), f.message))),
        other => errors.push(FieldError::new(format!("items[{i}]"), other.to_string())),
    }
}

impl PayrollService {
    pub fn new(repo: Arc<dyn PayrollRepo>, notifier: Arc<dyn PayslipNotifier>, clock: Arc<dyn Clock>) -> Self {
        PayrollService { repo, notifier, clock }
    }

    pub async fn list(&self, actor: &Actor, query: SheetQuery) -> Result<Page<Sheet>> {
        self.repo.list_sheets(actor.party, query).await
    }

    async fn sheet(&self, actor: &Actor, id: Id) -> Result<Sheet> {
        self.repo.get_sheet(actor.party, id).await?.ok_or(Error::NotFound("payroll sheet"))
    }

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

    /// Builds items from the request, or from the tenant's active employees without one.
    async fn items_for(&self, tenant_id: Id, input: Option<Vec<ItemInput>>) -> Result<Vec<SheetItem>> {
        let Some(input) = input else {
            let employees = self.repo.employees(tenant_id, None).await?;
            if employees.is_empty() {
                return Err(Error::conflict("the tenant has no active employees; list the employees as items"));
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

    pub async fn create(&self, actor: &Actor, input: NewSheet) -> Result<SheetDetail> {
        let tenant_id = actor.party.tenant_for_new(input.tenant_id)?;
        let tenant = self.repo.tenant(actor.party, tenant_id).await?.ok_or_else(|| Error::no_such("tenant_id", "no such tenant"))?;
        let items = self.items_for(tenant_id, input.items).await?;
        let now = self.clock.now();
        let title = input.title.map(|t| t.into_string()).unwrap_or_else(|| format!("Payroll {}", input.period));
        let sheet = Sheet::draft(tenant_id, input.period, title, SheetTotals::of(&items)?, Some(actor.user_id), now);
        let audit = AuditRecord::by(actor, now, "payroll_sheet.create", "payroll_sheet", None)
            .owned_by(tenant.partner_id, Some(tenant_id))
            .change(None, Some(&audit_json(&sheet)));
        let sheet = self.repo.insert_sheet(sheet, items, audit).await?;
        self.detail(sheet).await
    }

    pub async fn update(&self, actor: &Actor, id: Id, patch: SheetPatch) -> Result<SheetDetail> {
        let before = self.sheet(actor, id).await?;
        let status = before.status.after(SheetAction::Edit)?;
        let tenant = self.tenant(actor, before.tenant_id).await?;
        let items = match patch.items {
            Some(input) => Some(self.items_for(before.tenant_id, Some(input)).await?),
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
        after.updated_at = now;
        let audit = AuditRecord::by(actor, now, "payroll_sheet.update", "payroll_sheet", Some(id))
            .owned_by(tenant.partner_id, Some(tenant.id))
            .change(Some(&audit_json(&before)), Some(&audit_json(&after)));
        let saved = self.repo.update_sheet(after, items.map_or(ItemsWrite::ClearFigures, ItemsWrite::Replace), audit).await?;
        self.detail(saved).await
    }

    pub async fn calculate(&self, actor: &Actor, id: Id) -> Result<SheetDetail> {
        let before = self.sheet(actor, id).await?;
        let status = before.status.after(SheetAction::Calculate)?;
        let tenant = self.tenant(actor, before.tenant_id).await?;
        // What stops a calculation is in the stored sheet, employees and policy, not in this
        // request: 409 naming each problem.
        let calculator = Calculator::new(tenant.policy, before.period).map_err(|e| match e {
            Error::Invalid(fields) => Error::Blocked(
                fields.into_iter().map(|f| FieldError::new(format!("tenant.payroll_policy.{}", f.field), f.message)).collect(),
            ),
            other => other,
        })?;
        let mut items = self.repo.sheet_items(id).await?;
        let employees = self.employees_by_id(before.tenant_id, items.iter().map(|i| i.employee_id).collect()).await?;
        let ytd = self.repo.year_to_date(before.tenant_id, before.period).await?;

        let mut lines: Vec<(Id, CalculatedLine)> = Vec::with_capacity(items.len());
        let mut errors = Vec::new();
        for (i, item) in items.iter_mut().enumerate() {
            let Some(e) = employees.get(&item.employee_id) else {
                errors.push(FieldError::new(format!("items[{i}].employee_id"), "this employee no longer exists"));
                continue;
            };
            let a = item.adjustments;
            let input = EmployeeMonth {
                base_salary: e.base_salary,
                allowance: a.allowance,
                overtime: a.overtime,
                bonus: a.bonus,
                leave_deduction: a.leave_deduction,
                other_pre_tax_deduction: a.other_pre_tax_deduction,
                after_tax_deduction: a.after_tax_deduction,
                annual_bonus: a.annual_bonus,
                tax_free_income: Money::ZERO,
                si_base: e.si_base,
                housing_fund_rate: e.housing_fund_rate,
                hire_date: e.hire_date,
                special_deductions: &e.special_deductions,
            };
            match calculator.calculate(&input, ytd.get(&e.id).unwrap_or(&YearToDate::ZERO)) {
                Ok(line) => {
                    item.line = Some(line);
                    lines.push((item.id, line));
                }
                Err(err) if errors.len() < MAX_REPORTED_ERRORS => item_errors(i, err, &mut errors),
                Err(_) => {}
            }
        }
        if !errors.is_empty() {
            return Err(Error::Blocked(errors));
        }

        let now = self.clock.now();
        let mut after = before.clone();
        after.status = status;
        after.totals = SheetTotals::of(&items)?;
        after.calculated_by = Some(actor.user_id);
        after.calculated_at = Some(now);
        after.updated_at = now;
        let audit = AuditRecord::by(actor, now, "payroll_sheet.calculate", "payroll_sheet", Some(id))
            .owned_by(tenant.partner_id, Some(tenant.id))
            .change(Some(&audit_json(&before)), Some(&audit_json(&after)));
        let sheet = self.repo.save_calculation(after, lines, audit).await?;
        Ok(SheetDetail { sheet, items })
    }

    pub async fn approve(&self, actor: &Actor, id: Id) -> Result<SheetDetail> {
        let before = self.sheet(actor, id).await?;
        let status = before.status.after(SheetAction::Approve)?;
        let tenant = self.tenant(actor, before.tenant_id).await?;
        let approver = actor.user_id;
        check_four_eyes(tenant.policy.four_eyes, before.calculated_by, approver)?;
        let now = self.clock.now();
        let mut after = before.clone();
        after.status = status;
        after.approved_by = Some(approver);
        after.approved_at = Some(now);
        after.updated_at = now;
        let audit = AuditRecord::by(actor, now, "payroll_sheet.approve", "payroll_sheet", Some(id))
            .owned_by(tenant.partner_id, Some(tenant.id))
            .change(Some(&audit_json(&before)), Some(&audit_json(&after)));
        let saved = self.repo.update_sheet(after, ItemsWrite::Keep, audit).await?;
        self.detail(saved).await
    }

    /// Sends the pay slips not yet delivered; a sheet already sent retries its failed ones.
    pub async fn send(&self, actor: &Actor, id: Id) -> Result<SheetDetail> {
        let before = self.sheet(actor, id).await?;
        let status = before.status.after(SheetAction::Send)?;
        let now = self.clock.now();
        if before.send_started_at.is_some_and(|t| (now - t).num_seconds() < SEND_LEASE_SECS) {
            return Err(Error::conflict("a send of this sheet is in progress; try again when it has finished"));
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
        sheet = self.repo.update_sheet(sheet, ItemsWrite::Keep, audit).await?;

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
            sheet = self.repo.save_deliveries(next, results, audit).await?;
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

#[cfg(test)]
mod tests;
