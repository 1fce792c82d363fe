//! The payroll repository: sheets, items, year-to-date sums and delivery outcomes. Every
//! write checks the sheet's version and stores its audit record in the same transaction.
//! What reads across a tenant's tax year (year to date, separately taxed bonuses, the
//! approval's checks, an employee's tax year) is in `payroll/year.rs`; what the spreadsheet
//! files read (employees by number, bank accounts) in `payroll/files.rs`.

mod files;
mod year;

use crate::audit_log::write_audit;
use crate::crypto::FieldCipher;
use crate::db::{Db, DbConn, MultiBackend, on_backend};
use crate::error::db_error;
use crate::org::tenants::{self as org_tenants, ids_of_partner};
use crate::org::{count_up_to, like_pattern, lower, nothing, page, parse_enum, searchable, total};
use crate::outbox;
use crate::schema::{employees, payroll_items, payroll_sheet_accounts, payroll_sheets};
use crate::time::{DbTime, DbTimeOpt, from_db, to_db};
use async_trait::async_trait;
use atrium_kernel::Reason;
use atrium_kernel::StrEnum;
use atrium_kernel::payroll::HousingFundRate;
use atrium_kernel::{AuditRecord, Effects, Error, Id, Money, Page, Party, Period, Result, SortOrder};
use atrium_payroll::{
    Adjustments, Approval, CalculatedLine, Channel, Delivery, DeliveryStatus, ItemsWrite, PayeeAccounts, PayrollEmployee, PayrollRepo,
    PayrollTenant, Sheet, SheetItem, SheetKind, SheetQuery, SheetSort, SheetStatus, SheetTotals, TaxYearLine, YearToDateSums,
};
use chrono::{NaiveDate, NaiveDateTime};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Nullable, Text};
use std::collections::HashMap;

/// The payroll repository over the database.
#[derive(Clone)]
pub struct PayrollStore {
    db: Db,
}

impl PayrollStore {
    pub fn new(db: Db) -> Self {
        PayrollStore { db }
    }

    /// Employees' bank accounts for the bank file, decrypted with `cipher` (the one the
    /// employees were stored with).
    pub fn payee_accounts(&self, cipher: FieldCipher) -> std::sync::Arc<dyn PayeeAccounts> {
        std::sync::Arc::new(files::AccountsStore { db: self.db.clone(), cipher })
    }
}

fn corrupt(what: &str) -> Error {
    Error::internal(format!("stored payroll {what} is unreadable"))
}

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = payroll_sheets, treat_none_as_null = true)]
struct SheetRow {
    #[diesel(skip_insertion)]
    id: i64,
    tenant_id: i64,
    period: String,
    title: String,
    status: String,
    employees: i64,
    total_gross: i64,
    total_contributions: i64,
    total_tax: i64,
    total_net_pay: i64,
    delivered: i64,
    failed: i64,
    created_by: Option<i64>,
    calculated_by: Option<i64>,
    #[diesel(deserialize_as = DbTimeOpt)]
    calculated_at: Option<NaiveDateTime>,
    approved_by: Option<i64>,
    #[diesel(deserialize_as = DbTimeOpt)]
    approved_at: Option<NaiveDateTime>,
    #[diesel(deserialize_as = DbTimeOpt)]
    sent_at: Option<NaiveDateTime>,
    #[diesel(deserialize_as = DbTimeOpt)]
    send_started_at: Option<NaiveDateTime>,
    version: i64,
    #[diesel(deserialize_as = DbTime)]
    created_at: NaiveDateTime,
    #[diesel(deserialize_as = DbTime)]
    updated_at: NaiveDateTime,
    kind: String,
    ytd_basis: Option<i64>,
}

fn sheet_from_row(r: SheetRow) -> Result<Sheet> {
    Ok(Sheet {
        id: r.id,
        tenant_id: r.tenant_id,
        period: Period::parse(&r.period).map_err(|_| corrupt("period"))?,
        kind: parse_enum(&r.kind, SheetKind::parse, "payroll sheet kind")?,
        title: r.title,
        status: parse_enum(&r.status, SheetStatus::parse, "payroll sheet status")?,
        totals: SheetTotals {
            employees: r.employees,
            gross: Money::from_fen(r.total_gross),
            contributions: Money::from_fen(r.total_contributions),
            tax: Money::from_fen(r.total_tax),
            net_pay: Money::from_fen(r.total_net_pay),
            delivered: r.delivered,
            failed: r.failed,
        },
        created_by: r.created_by,
        calculated_by: r.calculated_by,
        calculated_at: r.calculated_at.map(from_db),
        approved_by: r.approved_by,
        approved_at: r.approved_at.map(from_db),
        sent_at: r.sent_at.map(from_db),
        send_started_at: r.send_started_at.map(from_db),
        ytd_basis: r.ytd_basis,
        version: r.version,
        created_at: from_db(r.created_at),
        updated_at: from_db(r.updated_at),
    })
}

fn sheet_row(s: &Sheet) -> SheetRow {
    SheetRow {
        id: s.id,
        tenant_id: s.tenant_id,
        period: s.period.to_string(),
        title: s.title.clone(),
        status: s.status.as_str().to_owned(),
        employees: s.totals.employees,
        total_gross: s.totals.gross.fen(),
        total_contributions: s.totals.contributions.fen(),
        total_tax: s.totals.tax.fen(),
        total_net_pay: s.totals.net_pay.fen(),
        delivered: s.totals.delivered,
        failed: s.totals.failed,
        created_by: s.created_by,
        calculated_by: s.calculated_by,
        calculated_at: s.calculated_at.map(to_db),
        approved_by: s.approved_by,
        approved_at: s.approved_at.map(to_db),
        sent_at: s.sent_at.map(to_db),
        send_started_at: s.send_started_at.map(to_db),
        version: s.version,
        created_at: to_db(s.created_at),
        updated_at: to_db(s.updated_at),
        kind: s.kind.as_str().to_owned(),
        ytd_basis: s.ytd_basis,
    }
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = payroll_items)]
struct ItemRow {
    id: i64,
    employee_id: i64,
    employee_name: String,
    employee_no: Option<String>,
    allowance: i64,
    overtime: i64,
    bonus: i64,
    leave_deduction: i64,
    other_pre_tax_deduction: i64,
    after_tax_deduction: i64,
    annual_bonus: i64,
    line: Option<String>,
    delivery_status: Option<String>,
    delivery_channel: Option<String>,
    delivery_error: Option<String>,
    delivery_attempts: i32,
    #[diesel(deserialize_as = DbTimeOpt)]
    delivered_at: Option<NaiveDateTime>,
}

fn item_from_row(r: ItemRow) -> Result<SheetItem> {
    let line: Option<CalculatedLine> = r.line.map(|j| serde_json::from_str(&j).map_err(|_| corrupt("line"))).transpose()?;
    let delivery = match (r.delivery_status, r.delivered_at) {
        (Some(status), Some(at)) => Some(Delivery {
            status: parse_enum(&status, DeliveryStatus::parse, "delivery status")?,
            channel: r.delivery_channel.as_deref().map(|c| Channel::parse(c).ok_or_else(|| corrupt("delivery channel"))).transpose()?,
            error: r.delivery_error,
            attempts: u32::try_from(r.delivery_attempts).unwrap_or(0),
            at: from_db(at),
        }),
        _ => None,
    };
    Ok(SheetItem {
        id: r.id,
        employee_id: r.employee_id,
        employee_name: r.employee_name,
        employee_no: r.employee_no,
        adjustments: Adjustments {
            allowance: Money::from_fen(r.allowance),
            overtime: Money::from_fen(r.overtime),
            bonus: Money::from_fen(r.bonus),
            leave_deduction: Money::from_fen(r.leave_deduction),
            other_pre_tax_deduction: Money::from_fen(r.other_pre_tax_deduction),
            after_tax_deduction: Money::from_fen(r.after_tax_deduction),
            annual_bonus: Money::from_fen(r.annual_bonus),
        },
        line,
        delivery,
    })
}

/// Sheets visible to `scope`: a partner's reach goes through its tenants.
fn scoped(scope: Party) -> payroll_sheets::BoxedQuery<'static, MultiBackend> {
    let q = payroll_sheets::table.into_boxed();
    match scope {
        Party::Platform => q,
        Party::Partner { partner_id } => q.filter(payroll_sheets::tenant_id.eq_any(ids_of_partner(partner_id))),
        Party::Tenant { tenant_id, .. } => q.filter(payroll_sheets::tenant_id.eq(tenant_id)),
    }
}

fn filtered(scope: Party, q: &SheetQuery) -> payroll_sheets::BoxedQuery<'static, MultiBackend> {
    let mut query = scoped(scope);
    if let Some(s) = q.status {
        query = query.filter(payroll_sheets::status.eq(s.as_str()));
    }
    if let Some(t) = q.tenant_id {
        query = query.filter(payroll_sheets::tenant_id.eq(t));
    }
    if let Some(p) = q.partner_id {
        query = query.filter(payroll_sheets::tenant_id.eq_any(ids_of_partner(p)));
    }
    if let Some(p) = q.period {
        query = query.filter(payroll_sheets::period.eq(p.to_string()));
    }
    if let Some(k) = q.kind {
        query = query.filter(payroll_sheets::kind.eq(k.as_str()));
    }
    if q.list.keyword.as_deref().is_some_and(|k| !searchable(k)) {
        query = query.filter(nothing());
    } else if let Some(k) = &q.list.keyword {
        query = query.filter(lower(payroll_sheets::title.nullable()).like(like_pattern(k)).escape('\\'));
    }
    query
}

fn get(conn: &mut DbConn, scope: Party, id: Id) -> Result<Option<Sheet>> {
    let row: Option<SheetRow> =
        scoped(scope).filter(payroll_sheets::id.eq(id)).select(SheetRow::as_select()).first(conn).optional().map_err(db_error)?;
    row.map(sheet_from_row).transpose()
}

/// Writes the sheet's own fields if it is still at the version read; returns it as written.
fn write_sheet(conn: &mut DbConn, sheet: &Sheet) -> Result<Sheet> {
    let mut row = sheet_row(sheet);
    row.version = sheet.version + 1;
    let n = diesel::update(payroll_sheets::table.filter(payroll_sheets::id.eq(sheet.id)).filter(payroll_sheets::version.eq(sheet.version)))
        .set(&row)
        .execute(conn)
        .map_err(db_error)?;
    if n == 0 {
        return Err(Error::conflict(Reason::TryAgain, "the payroll sheet was changed meanwhile; reload it and try again"));
    }
    Ok(Sheet { version: row.version, ..sheet.clone() })
}

/// Inserts items, each backend its fastest way (as [`update_lines`]): PostgreSQL one
/// `INSERT … SELECT FROM unnest(…)` over arrays, SQLite one prepared `INSERT` per item.
fn insert_items(conn: &mut DbConn, sheet_id: Id, items: &[SheetItem]) -> Result<()> {
    match conn {
        DbConn::Pg(c) => {
            use diesel::sql_types::Array;
            let fen = |f: fn(&Adjustments) -> Money| items.iter().map(|i| f(&i.adjustments).fen()).collect::<Vec<i64>>();
            diesel::sql_query(
                "INSERT INTO payroll_items (sheet_id, employee_id, employee_name, employee_no, allowance, overtime, bonus, \
                 leave_deduction, other_pre_tax_deduction, after_tax_deduction, annual_bonus) \
                 SELECT $1, v.employee_id, v.employee_name, v.employee_no, v.allowance, v.overtime, v.bonus, v.leave_deduction, \
                        v.other_pre_tax_deduction, v.after_tax_deduction, v.annual_bonus \
                 FROM unnest($2::bigint[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[], \
                             $9::bigint[], $10::bigint[], $11::bigint[]) WITH ORDINALITY \
                      AS v(employee_id, employee_name, employee_no, allowance, overtime, bonus, leave_deduction, \
                           other_pre_tax_deduction, after_tax_deduction, annual_bonus, n) \
                 ORDER BY v.n",
            )
            .bind::<BigInt, _>(sheet_id)
            .bind::<Array<BigInt>, _>(items.iter().map(|i| i.employee_id).collect::<Vec<i64>>())
            .bind::<Array<Text>, _>(items.iter().map(|i| i.employee_name.clone()).collect::<Vec<String>>())
            .bind::<Array<Nullable<Text>>, _>(items.iter().map(|i| i.employee_no.clone()).collect::<Vec<Option<String>>>())
            .bind::<Array<BigInt>, _>(fen(|a| a.allowance))
            .bind::<Array<BigInt>, _>(fen(|a| a.overtime))
            .bind::<Array<BigInt>, _>(fen(|a| a.bonus))
            .bind::<Array<BigInt>, _>(fen(|a| a.leave_deduction))
            .bind::<Array<BigInt>, _>(fen(|a| a.other_pre_tax_deduction))
            .bind::<Array<BigInt>, _>(fen(|a| a.after_tax_deduction))
            .bind::<Array<BigInt>, _>(fen(|a| a.annual_bonus))
            .execute(c)
            .map_err(db_error)?;
        }
        DbConn::Sqlite(c) => {
            use payroll_items::dsl as i;
            for item in items {
                let a = &item.adjustments;
                diesel::insert_into(i::payroll_items)
                    .values((
                        i::sheet_id.eq(sheet_id),
                        i::employee_id.eq(item.employee_id),
                        i::employee_name.eq(&item.employee_name),
                        i::employee_no.eq(&item.employee_no),
                        i::allowance.eq(a.allowance.fen()),
                        i::overtime.eq(a.overtime.fen()),
                        i::bonus.eq(a.bonus.fen()),
                        i::leave_deduction.eq(a.leave_deduction.fen()),
                        i::other_pre_tax_deduction.eq(a.other_pre_tax_deduction.fen()),
                        i::after_tax_deduction.eq(a.after_tax_deduction.fen()),
                        i::annual_bonus.eq(a.annual_bonus.fen()),
                    ))
                    .execute(c)
                    .map_err(db_error)?;
            }
        }
    }
    Ok(())
}

/// Writes calculated lines; `Conflict` if an item is no longer on the sheet. Each backend its
/// fastest way: PostgreSQL one `UPDATE … FROM unnest(…)` over arrays (eleven parameters
/// whatever the count), SQLite one `UPDATE … FROM json_each(…)` over a JSON array (two
/// parameters: a statement with thousands of them costs milliseconds to prepare).
fn update_lines(conn: &mut DbConn, sheet_id: Id, lines: &[(Id, CalculatedLine)]) -> Result<()> {
    let changed_meanwhile = || Error::conflict(Reason::TryAgain, "the payroll sheet's items changed meanwhile; reload it and try again");
    let json = |l: &CalculatedLine| serde_json::to_string(l).map_err(|e| Error::Internal(e.into()));
    match conn {
        DbConn::Pg(c) => {
            use diesel::sql_types::Array;
            let fen = |f: fn(&CalculatedLine) -> Money| lines.iter().map(|(_, l)| f(l).fen()).collect::<Vec<i64>>();
            let n = diesel::sql_query(
                "UPDATE payroll_items SET gross = v.gross, tax_free_income = v.tax_free_income, contributions = v.contributions, \
                 special_deduction = v.special_deduction, other_deduction = v.other_deduction, tax = v.tax, \
                 annual_bonus_tax = v.annual_bonus_tax, net_pay = v.net_pay, line = v.line \
                 FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[], \
                             $8::bigint[], $9::bigint[], $10::text[]) \
                      AS v(id, gross, tax_free_income, contributions, special_deduction, other_deduction, tax, annual_bonus_tax, net_pay, line) \
                 WHERE payroll_items.id = v.id AND payroll_items.sheet_id = $11",
            )
            .bind::<Array<BigInt>, _>(lines.iter().map(|(id, _)| *id).collect::<Vec<i64>>())
            .bind::<Array<BigInt>, _>(fen(|l| l.gross))
            .bind::<Array<BigInt>, _>(fen(|l| l.tax_free_income))
            .bind::<Array<BigInt>, _>(fen(|l| l.contributions))
            .bind::<Array<BigInt>, _>(fen(|l| l.special_deduction))
            .bind::<Array<BigInt>, _>(fen(|l| l.other_deduction))
            .bind::<Array<BigInt>, _>(fen(|l| l.tax))
            .bind::<Array<BigInt>, _>(fen(|l| l.annual_bonus_tax))
            .bind::<Array<BigInt>, _>(fen(|l| l.net_pay))
            .bind::<Array<Text>, _>(lines.iter().map(|(_, l)| json(l)).collect::<Result<Vec<String>>>()?)
            .bind::<BigInt, _>(sheet_id)
            .execute(c)
            .map_err(db_error)?;
            if n != lines.len() {
                return Err(changed_meanwhile());
            }
        }
        DbConn::Sqlite(c) => {
            // One statement over a JSON array of the lines. Diesel prepares every UPDATE
            // afresh (it caches no UPDATE), and preparing one per line cost more than the
            // updates themselves. The `+` keeps the planner off the sheet's index: it reads the
            // array and finds each item by its id, not each item's line in the array.
            let rows = lines
                .iter()
                .map(|(id, l)| {
                    Ok(serde_json::json!([
                        id,
                        l.gross.fen(),
                        l.tax_free_income.fen(),
                        l.contributions.fen(),
                        l.special_deduction.fen(),
                        l.other_deduction.fen(),
                        l.tax.fen(),
                        l.annual_bonus_tax.fen(),
                        l.net_pay.fen(),
                        json(l)?
                    ]))
                })
                .collect::<Result<Vec<_>>>()?;
            let rows = serde_json::to_string(&rows).map_err(|e| Error::Internal(e.into()))?;
            let n = diesel::sql_query(
                "UPDATE payroll_items SET gross = v.gross, tax_free_income = v.tax_free_income, contributions = v.contributions, \
                 special_deduction = v.special_deduction, other_deduction = v.other_deduction, tax = v.tax, \
                 annual_bonus_tax = v.annual_bonus_tax, net_pay = v.net_pay, line = v.line \
                 FROM (SELECT value ->> 0 AS id, value ->> 1 AS gross, value ->> 2 AS tax_free_income, value ->> 3 AS contributions, \
                              value ->> 4 AS special_deduction, value ->> 5 AS other_deduction, value ->> 6 AS tax, \
                              value ->> 7 AS annual_bonus_tax, value ->> 8 AS net_pay, value ->> 9 AS line \
                       FROM json_each(?)) AS v \
                 WHERE payroll_items.id = v.id AND +payroll_items.sheet_id = ?",
            )
            .bind::<Text, _>(rows)
            .bind::<BigInt, _>(sheet_id)
            .execute(c)
            .map_err(db_error)?;
            if n != lines.len() {
                return Err(changed_meanwhile());
            }
        }
    }
    Ok(())
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = employees)]
struct EmployeeRow {
    id: i64,
    tenant_id: i64,
    name: String,
    employee_no: Option<String>,
    status: String,
    base_salary: i64,
    si_base: Option<i64>,
    housing_fund_rate: String,
    hire_date: Option<NaiveDate>,
    special_deductions: String,
    openid: Option<String>,
    phone: Option<String>,
    email: Option<String>,
}

fn employee_from_row(r: EmployeeRow) -> Result<PayrollEmployee> {
    Ok(PayrollEmployee {
        id: r.id,
        tenant_id: r.tenant_id,
        name: r.name,
        employee_no: r.employee_no,
        active: r.status == "active",
        base_salary: Money::from_fen(r.base_salary),
        si_base: r.si_base.map(Money::from_fen),
        housing_fund_rate: HousingFundRate::parse(&r.housing_fund_rate).map_err(|_| corrupt("housing fund rate"))?,
        hire_date: r.hire_date,
        special_deductions: serde_json::from_str(&r.special_deductions).map_err(|_| corrupt("special deductions"))?,
        openid: r.openid,
        phone: r.phone,
        email: r.email,
    })
}

/// Keeps, with the sheet's approval, the bank account that each employee it pays (net pay
/// above 0) has now: copied as the employee record holds it, encrypted.
fn keep_accounts(conn: &mut DbConn, sheet: &Sheet) -> Result<()> {
    diesel::delete(payroll_sheet_accounts::table.filter(payroll_sheet_accounts::sheet_id.eq(sheet.id))).execute(conn).map_err(db_error)?;
    let paid = payroll_items::table
        .filter(payroll_items::sheet_id.eq(sheet.id))
        .filter(payroll_items::net_pay.gt(0))
        .select(payroll_items::employee_id);
    let rows: Vec<(Id, String, Option<String>, Option<String>)> = employees::table
        .filter(employees::tenant_id.eq(sheet.tenant_id))
        .filter(employees::id.eq_any(paid))
        .filter(employees::bank_account_enc.is_not_null())
        .select((employees::id, employees::name, employees::bank_name, employees::bank_account_enc))
        .load(conn)
        .map_err(db_error)?;
    let kept: Vec<_> = rows
        .into_iter()
        .filter_map(|(employee_id, name, bank_name, enc)| {
            enc.map(|enc| {
                (
                    payroll_sheet_accounts::sheet_id.eq(sheet.id),
                    payroll_sheet_accounts::employee_id.eq(employee_id),
                    payroll_sheet_accounts::name.eq(name),
                    payroll_sheet_accounts::bank_name.eq(bank_name),
                    payroll_sheet_accounts::bank_account_enc.eq(enc),
                )
            })
        })
        .collect();
    // Five values a row: a chunk stays well within either backend's bind parameters.
    for chunk in kept.chunks(1000) {
        on_backend!(conn, |c| diesel::insert_into(payroll_sheet_accounts::table).values(chunk.to_vec()).execute(c)).map_err(db_error)?;
    }
    diesel::update(payroll_sheets::table.find(sheet.id)).set(payroll_sheets::accounts_kept.eq(true)).execute(conn).map_err(db_error)?;
    Ok(())
}

#[async_trait]
impl PayrollRepo for PayrollStore {
    async fn list_sheets(&self, scope: Party, q: SheetQuery) -> Result<Page<Sheet>> {
        self.db
            .run(move |conn| {
                let mut query = filtered(scope, &q).select(SheetRow::as_select());
                query = match q.list.sort.unwrap_or((SheetSort::Id, SortOrder::Desc)) {
                    (SheetSort::Period, SortOrder::Asc) => query.order((payroll_sheets::period.asc(), payroll_sheets::id.asc())),
                    (SheetSort::Period, SortOrder::Desc) => query.order((payroll_sheets::period.desc(), payroll_sheets::id.desc())),
                    (SheetSort::Id | SheetSort::CreatedAt, SortOrder::Asc) => query.order(payroll_sheets::id.asc()),
                    (SheetSort::Id | SheetSort::CreatedAt, SortOrder::Desc) => query.order(payroll_sheets::id.desc()),
                };
                let rows: Vec<SheetRow> = query.offset(q.list.page.offset()).limit(q.list.page.limit()).load(conn).map_err(db_error)?;
                let total = total(q.list.page, rows.len(), |n| count_up_to(filtered(scope, &q).select(payroll_sheets::id).limit(n), conn))?;
                Ok(page(rows.into_iter().map(sheet_from_row).collect::<Result<_>>()?, total, q.list.page))
            })
            .await
    }

    async fn get_sheet(&self, scope: Party, id: Id) -> Result<Option<Sheet>> {
        self.db.run(move |conn| get(conn, scope, id)).await
    }

    async fn sheet_items(&self, sheet_id: Id) -> Result<Vec<SheetItem>> {
        self.db
            .run(move |conn| {
                let rows: Vec<ItemRow> = payroll_items::table
                    .filter(payroll_items::sheet_id.eq(sheet_id))
                    .order(payroll_items::id.asc())
                    .select(ItemRow::as_select())
                    .load(conn)
                    .map_err(db_error)?;
                rows.into_iter().map(item_from_row).collect()
            })
            .await
    }

    async fn tenant(&self, scope: Party, tenant_id: Id) -> Result<Option<PayrollTenant>> {
        self.db
            .run(move |conn| {
                Ok(org_tenants::get(conn, scope, tenant_id)?.map(|t| PayrollTenant {
                    id: t.id,
                    partner_id: t.partner_id,
                    policy: t.payroll_policy,
                }))
            })
            .await
    }

    async fn employees(&self, tenant_id: Id, ids: Option<Vec<Id>>) -> Result<Vec<PayrollEmployee>> {
        self.db
            .run(move |conn| {
                let base = employees::table.filter(employees::tenant_id.eq(tenant_id)).select(EmployeeRow::as_select());
                let rows: Vec<EmployeeRow> = match ids {
                    None => base.filter(employees::status.eq("active")).order(employees::id.asc()).load(conn).map_err(db_error)?,
                    Some(ids) => {
                        // PostgreSQL takes the ids as one array parameter; SQLite's `IN (?, …)`
                        // costs its parse per parameter, so it reads them in chunks.
                        let chunk = if matches!(conn, DbConn::Pg(_)) { ids.len().max(1) } else { 500 };
                        let mut rows = Vec::with_capacity(ids.len());
                        for chunk in ids.chunks(chunk) {
                            rows.extend(base.filter(employees::id.eq_any(chunk)).load::<EmployeeRow>(conn).map_err(db_error)?);
                        }
                        rows
                    }
                };
                rows.into_iter().map(employee_from_row).collect()
            })
            .await
    }

    async fn regular_sheet(&self, tenant_id: Id, period: Period) -> Result<Option<Sheet>> {
        self.db
            .run(move |conn| {
                let row: Option<SheetRow> = payroll_sheets::table
                    .filter(payroll_sheets::tenant_id.eq(tenant_id))
                    .filter(payroll_sheets::period.eq(period.to_string()))
                    .filter(payroll_sheets::kind.eq(SheetKind::Regular.as_str()))
                    .select(SheetRow::as_select())
                    .first(conn)
                    .optional()
                    .map_err(db_error)?;
                row.map(sheet_from_row).transpose()
            })
            .await
    }

    async fn year_to_date(&self, tenant_id: Id, period: Period, kind: SheetKind) -> Result<YearToDateSums> {
        self.db.run(move |conn| year::year_to_date(conn, tenant_id, period, kind)).await
    }

    async fn separate_bonuses(
        &self,
        tenant_id: Id,
        year: i32,
        except_sheet: Id,
        statuses: Vec<SheetStatus>,
        employee_ids: Vec<Id>,
    ) -> Result<HashMap<Id, Id>> {
        self.db.run(move |conn| year::separate_bonuses(conn, tenant_id, year, except_sheet, &statuses, &employee_ids)).await
    }

    async fn employee(&self, scope: Party, id: Id) -> Result<Option<PayrollEmployee>> {
        self.db
            .run(move |conn| {
                let in_scope = employees::table.into_boxed::<MultiBackend>();
                let in_scope = match scope {
                    Party::Platform => in_scope,
                    Party::Partner { partner_id } => in_scope.filter(employees::tenant_id.eq_any(ids_of_partner(partner_id))),
                    Party::Tenant { tenant_id, .. } => in_scope.filter(employees::tenant_id.eq(tenant_id)),
                };
                let row: Option<EmployeeRow> =
                    in_scope.filter(employees::id.eq(id)).select(EmployeeRow::as_select()).first(conn).optional().map_err(db_error)?;
                row.map(employee_from_row).transpose()
            })
            .await
    }

    async fn tax_year(&self, tenant_id: Id, employee_id: Id, year: i32) -> Result<Vec<TaxYearLine>> {
        self.db.run(move |conn| year::tax_year(conn, tenant_id, employee_id, year)).await
    }

    async fn employee_count(&self, tenant_id: Id) -> Result<i64> {
        self.db.run(move |conn| files::employee_count(conn, tenant_id)).await
    }

    async fn employees_by_no(&self, tenant_id: Id, numbers: Vec<String>) -> Result<Vec<PayrollEmployee>> {
        self.db.run(move |conn| files::employees_by_no(conn, tenant_id, &numbers)).await
    }

    async fn record_audit(&self, audit: AuditRecord) -> Result<()> {
        self.db.write(move |conn| write_audit(conn, &audit)).await
    }

    async fn insert_sheet(&self, sheet: Sheet, items: Vec<SheetItem>, effects: Effects) -> Result<Sheet> {
        self.db
            .write(move |conn| {
                let id: i64 = diesel::insert_into(payroll_sheets::table)
                    .values(sheet_row(&sheet))
                    .returning(payroll_sheets::id)
                    .get_result(conn)
                    .map_err(|e| match db_error(e) {
                        Error::Conflict(..) => Error::conflict(
                            Reason::Duplicate,
                            format!("the tenant already has a regular payroll sheet for {}", sheet.period),
                        ),
                        other => other,
                    })?;
                insert_items(conn, id, &items)?;
                outbox::write_created(conn, effects, id)?;
                Ok(Sheet { id, ..sheet })
            })
            .await
    }

    async fn update_sheet(&self, sheet: Sheet, items: ItemsWrite, effects: Effects) -> Result<Sheet> {
        self.db
            .write(move |conn| {
                let saved = write_sheet(conn, &sheet)?;
                let of_sheet = payroll_items::table.filter(payroll_items::sheet_id.eq(sheet.id));
                match items {
                    ItemsWrite::Keep => {}
                    ItemsWrite::Replace(items) => {
                        diesel::delete(of_sheet).execute(conn).map_err(db_error)?;
                        insert_items(conn, sheet.id, &items)?;
                    }
                    ItemsWrite::ClearFigures => {
                        diesel::update(of_sheet)
                            .set((
                                payroll_items::gross.eq(None::<i64>),
                                payroll_items::tax_free_income.eq(None::<i64>),
                                payroll_items::contributions.eq(None::<i64>),
                                payroll_items::special_deduction.eq(None::<i64>),
                                payroll_items::other_deduction.eq(None::<i64>),
                                payroll_items::tax.eq(None::<i64>),
                                payroll_items::annual_bonus_tax.eq(None::<i64>),
                                payroll_items::net_pay.eq(None::<i64>),
                                payroll_items::line.eq(None::<String>),
                            ))
                            .execute(conn)
                            .map_err(db_error)?;
                    }
                }
                outbox::write(conn, &effects)?;
                Ok(saved)
            })
            .await
    }

    async fn approve_sheet(&self, sheet: Sheet, effects: Effects) -> Result<Approval> {
        self.db
            .write(move |conn| {
                year::lock_tax_year(conn, sheet.tenant_id, sheet.period.year())?;
                let basis = year::ytd_sheet_ids(conn, sheet.tenant_id, sheet.period, sheet.kind)?.len();
                if sheet.ytd_basis != i64::try_from(basis).ok() {
                    return Ok(Approval::StaleYearToDate);
                }
                let taken = year::bonuses_taken_by_sheet(conn, &sheet)?;
                if !taken.is_empty() {
                    return Ok(Approval::AnnualBonusTaken(taken));
                }
                let saved = write_sheet(conn, &sheet)?;
                keep_accounts(conn, &sheet)?;
                outbox::write(conn, &effects)?;
                Ok(Approval::Approved(Box::new(saved)))
            })
            .await
    }

    async fn save_calculation(&self, sheet: Sheet, lines: Vec<(Id, CalculatedLine)>, effects: Effects) -> Result<Sheet> {
        self.db
            .write(move |conn| {
                let saved = write_sheet(conn, &sheet)?;
                update_lines(conn, sheet.id, &lines)?;
                outbox::write(conn, &effects)?;
                Ok(saved)
            })
            .await
    }

    async fn save_deliveries(&self, sheet: Sheet, deliveries: Vec<(Id, Delivery)>, effects: Effects) -> Result<Sheet> {
        self.db
            .write(move |conn| {
                let saved = write_sheet(conn, &sheet)?;
                for (item_id, d) in &deliveries {
                    diesel::update(payroll_items::table.filter(payroll_items::id.eq(item_id)).filter(payroll_items::sheet_id.eq(sheet.id)))
                        .set((
                            payroll_items::delivery_status.eq(Some(d.status.as_str())),
                            payroll_items::delivery_channel.eq(d.channel.map(Channel::as_str)),
                            payroll_items::delivery_error.eq(d.error.as_deref()),
                            payroll_items::delivery_attempts.eq(i32::try_from(d.attempts).unwrap_or(i32::MAX)),
                            payroll_items::delivered_at.eq(Some(to_db(d.at))),
                        ))
                        .execute(conn)
                        .map_err(db_error)?;
                }
                outbox::write(conn, &effects)?;
                Ok(saved)
            })
            .await
    }
}
