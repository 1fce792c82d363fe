//! Reads across a tenant's tax year: the year-to-date sums a sheet is calculated with, the
//! annual bonuses already taxed separately, the approval's checks and an employee's tax year.
//!
//! A sheet's year to date is the tenant's approved or sent sheets of every kind in its year:
//! for a regular sheet of period P those of the periods before P, for a supplementary sheet of
//! P also those of P. Approved and sent sheets never change and are never removed, so the
//! number of them a calculation summed (its basis) says whether its figures are still current.
use super::corrupt;
use crate::db::DbConn;
use crate::error::db_error;
use crate::schema::{payroll_items, payroll_sheets};
use crate::time::from_db;
use atrium_kernel::StrEnum;
use atrium_kernel::{Error, Id, Money, Period, Result};
use atrium_payroll::{CalculatedLine, Sheet, SheetKind, SheetStatus, TaxYearLine, YearToDate, YearToDateSums};
use chrono::NaiveDateTime;
use diesel::dsl::sql;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Nullable};
use std::collections::HashMap;

/// The statuses whose figures count: final ones.
const SETTLED: [&str; 2] = ["approved", "sent"];
/// Ids per `IN (…)` list: well under both backends' bind-parameter limits.
const CHUNK: usize = 500;

/// January and December of `year`, or `Invalid` naming `year`.
fn year_bounds(year: i32) -> Result<(String, String)> {
    let first = Period::new(year, 1).map_err(|m| Error::invalid("year", m))?;
    let last = Period::new(year, 12).map_err(|m| Error::invalid("year", m))?;
    Ok((first.to_string(), last.to_string()))
}

/// The ids of the tenant's approved or sent sheets a sheet of `kind` and `period` counts in
/// its year to date, in id order.
pub(super) fn ytd_sheet_ids(conn: &mut DbConn, tenant_id: Id, period: Period, kind: SheetKind) -> Result<Vec<i64>> {
    let q = payroll_sheets::table
        .filter(payroll_sheets::tenant_id.eq(tenant_id))
        .filter(payroll_sheets::status.eq_any(SETTLED))
        .filter(payroll_sheets::period.ge(period.year_start().to_string()))
        .into_boxed();
    let q = match kind {
        SheetKind::Regular => q.filter(payroll_sheets::period.lt(period.to_string())),
        SheetKind::Supplementary => q.filter(payroll_sheets::period.le(period.to_string())),
    };
    q.select(payroll_sheets::id).order(payroll_sheets::id.asc()).load(conn).map_err(db_error)
}

fn too_large(employee_id: Id) -> Error {
    Error::internal(format!("the year-to-date sums of employee {employee_id} are too large to add up"))
}

/// `a + b`, field by field, checked.
fn plus(a: YearToDate, b: YearToDate) -> Option<YearToDate> {
    Some(YearToDate {
        gross: a.gross.checked_add(b.gross).ok()?,
        tax_free_income: a.tax_free_income.checked_add(b.tax_free_income).ok()?,
        contributions: a.contributions.checked_add(b.contributions).ok()?,
        special_deductions: a.special_deductions.checked_add(b.special_deductions).ok()?,
        other_deductions: a.other_deductions.checked_add(b.other_deductions).ok()?,
        tax_withheld: a.tax_withheld.checked_add(b.tax_withheld).ok()?,
    })
}

/// The sums of each employee's items on the sheets a sheet of `kind` and `period` counts, and
/// how many sheets they are: the sums are taken over exactly the ids read first, so the two
/// agree whatever is approved meanwhile.
pub(super) fn year_to_date(conn: &mut DbConn, tenant_id: Id, period: Period, kind: SheetKind) -> Result<YearToDateSums> {
    let ids = ytd_sheet_ids(conn, tenant_id, period, kind)?;
    let sum = |col: &str| sql::<Nullable<BigInt>>(&format!("CAST(SUM(payroll_items.{col}) AS BIGINT)"));
    let fen = |v: Option<i64>| Money::from_fen(v.unwrap_or(0));
    type Sums = (i64, Option<i64>, Option<i64>, Option<i64>, Option<i64>, Option<i64>, Option<i64>);
    let mut by_employee: HashMap<Id, YearToDate> = HashMap::new();
    for chunk in ids.chunks(CHUNK) {
        let rows: Vec<Sums> = payroll_items::table
            .filter(payroll_items::sheet_id.eq_any(chunk))
            .group_by(payroll_items::employee_id)
            .select((
                payroll_items::employee_id,
                sum("gross"),
                sum("tax_free_income"),
                sum("contributions"),
                sum("special_deduction"),
                sum("other_deduction"),
                sum("tax"),
            ))
            .load(conn)
            .map_err(db_error)?;
        for (id, gross, free, contributions, special, other, tax) in rows {
            let part = YearToDate {
                gross: fen(gross),
                tax_free_income: fen(free),
                contributions: fen(contributions),
                special_deductions: fen(special),
                other_deductions: fen(other),
                tax_withheld: fen(tax),
            };
            let total = match by_employee.get(&id) {
                Some(before) => plus(*before, part).ok_or_else(|| too_large(id))?,
                None => part,
            };
            by_employee.insert(id, total);
        }
    }
    let basis = i64::try_from(ids.len()).map_err(|_| Error::internal("too many payroll sheets in a year"))?;
    Ok(YearToDateSums { by_employee, basis })
}

/// Of `employee_ids`, those with an annual bonus on a sheet of the tenant in `year` other than
/// `except_sheet` in one of `statuses`: employee id → that sheet's id (the lowest, if several).
pub(super) fn separate_bonuses(
    conn: &mut DbConn,
    tenant_id: Id,
    year: i32,
    except_sheet: Id,
    statuses: &[SheetStatus],
    employee_ids: &[Id],
) -> Result<HashMap<Id, Id>> {
    let (first, last) = year_bounds(year)?;
    let statuses: Vec<&'static str> = statuses.iter().map(|s| s.as_str()).collect();
    let mut taken = HashMap::new();
    for chunk in employee_ids.chunks(CHUNK) {
        let sheets = payroll_sheets::table
            .filter(payroll_sheets::tenant_id.eq(tenant_id))
            .filter(payroll_sheets::period.ge(first.clone()))
            .filter(payroll_sheets::period.le(last.clone()))
            .filter(payroll_sheets::status.eq_any(statuses.clone()))
            .filter(payroll_sheets::id.ne(except_sheet))
            .select(payroll_sheets::id);
        let rows: Vec<(i64, i64)> = payroll_items::table
            .filter(payroll_items::sheet_id.eq_any(sheets))
            .filter(payroll_items::employee_id.eq_any(chunk))
            .filter(payroll_items::annual_bonus.gt(0))
            .select((payroll_items::employee_id, payroll_items::sheet_id))
            .order(payroll_items::sheet_id.asc())
            .load(conn)
            .map_err(db_error)?;
        for (employee_id, sheet_id) in rows {
            taken.entry(employee_id).or_insert(sheet_id);
        }
    }
    Ok(taken)
}

/// The employees with an annual bonus on `sheet` who already have one on another approved or
/// sent sheet of the tenant's tax year: `(employee id, that sheet's id)`, by employee id.
pub(super) fn bonuses_taken_by_sheet(conn: &mut DbConn, sheet: &Sheet) -> Result<Vec<(Id, Id)>> {
    let with_bonus: Vec<i64> = payroll_items::table
        .filter(payroll_items::sheet_id.eq(sheet.id))
        .filter(payroll_items::annual_bonus.gt(0))
        .select(payroll_items::employee_id)
        .load(conn)
        .map_err(db_error)?;
    if with_bonus.is_empty() {
        return Ok(Vec::new());
    }
    let settled = [SheetStatus::Approved, SheetStatus::Sent];
    let mut taken: Vec<(Id, Id)> =
        separate_bonuses(conn, sheet.tenant_id, sheet.period.year(), sheet.id, &settled, &with_bonus)?.into_iter().collect();
    taken.sort_unstable();
    Ok(taken)
}

/// Serialises, until the end of the write transaction, the approvals of the tenant's sheets
/// of `year`, so that each one's checks see every approval committed before it (a PostgreSQL
/// transaction-level advisory lock on a hash of both; SQLite's one writer already serialises
/// them).
pub(super) fn lock_tax_year(conn: &mut DbConn, tenant_id: Id, year: i32) -> Result<()> {
    crate::db::advisory_xact_lock(conn, &format!("payroll-tax-year:{tenant_id}:{year}"))
}

/// The employee's calculated items on the tenant's approved or sent sheets of `year`, by
/// period, then in the order the sheets were approved.
pub(super) fn tax_year(conn: &mut DbConn, tenant_id: Id, employee_id: Id, year: i32) -> Result<Vec<TaxYearLine>> {
    let (first, last) = year_bounds(year)?;
    type Row = (i64, String, String, Option<NaiveDateTime>, Option<String>);
    let rows: Vec<Row> = payroll_items::table
        .inner_join(payroll_sheets::table)
        .filter(payroll_items::employee_id.eq(employee_id))
        .filter(payroll_sheets::tenant_id.eq(tenant_id))
        .filter(payroll_sheets::status.eq_any(SETTLED))
        .filter(payroll_sheets::period.ge(first))
        .filter(payroll_sheets::period.le(last))
        .select((payroll_sheets::id, payroll_sheets::kind, payroll_sheets::period, payroll_sheets::approved_at, payroll_items::line))
        .order((payroll_sheets::period.asc(), payroll_sheets::approved_at.asc(), payroll_sheets::id.asc()))
        .load(conn)
        .map_err(db_error)?;
    rows.into_iter()
        .map(|(sheet_id, kind, period, approved_at, line)| {
            // An approved sheet was calculated: every item has its line.
            let line: CalculatedLine =
                serde_json::from_str(line.as_deref().ok_or_else(|| corrupt("line"))?).map_err(|_| corrupt("line"))?;
            Ok(TaxYearLine {
                sheet_id,
                kind: SheetKind::parse(&kind).ok_or_else(|| corrupt("sheet kind"))?,
                period: Period::parse(&period).map_err(|_| corrupt("period"))?,
                approved_at: approved_at.map(from_db),
                line,
            })
        })
        .collect()
}
