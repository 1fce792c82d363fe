use super::tenants::ids_of_partner;
use super::{OrgStore, audit_created, like_pattern, lower, nothing, page, parse_enum, searchable, total, write_audit};
use crate::crypto::FieldCipher;
use crate::db::{DbConn, MultiBackend};
use crate::error::db_error;
use crate::schema::{employees, tenants};
use crate::time::{from_db, to_db};
use async_trait::async_trait;
use atrium_kernel::Reason;
use atrium_kernel::StrEnum;
use atrium_kernel::payroll::HousingFundRate;
use atrium_kernel::{AuditRecord, Error, Id, Money, Page, Party, Result, SortOrder};
use atrium_org::{BankAccount, Employee, EmployeeQuery, EmployeeRepo, EmployeeSort, EmployeeStatus, IdCardNo};
use chrono::{NaiveDate, NaiveDateTime};
use diesel::dsl::sql;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Nullable, Text};

#[derive(Queryable, Selectable)]
#[diesel(table_name = employees)]
struct Row {
    id: i64,
    tenant_id: i64,
    employee_no: Option<String>,
    name: String,
    phone: Option<String>,
    email: Option<String>,
    id_card_enc: Option<String>,
    bank_name: Option<String>,
    bank_account_enc: Option<String>,
    department: Option<String>,
    position: Option<String>,
    hire_date: Option<NaiveDate>,
    status: String,
    base_salary: i64,
    si_base: Option<i64>,
    housing_fund_rate: String,
    special_deductions: String,
    openid: Option<String>,
    created_at: NaiveDateTime,
    updated_at: NaiveDateTime,
}

fn corrupt(what: &str) -> Error {
    Error::internal(format!("stored employee {what} is unreadable"))
}

fn from_row(cipher: &FieldCipher, r: Row) -> Result<Employee> {
    let id_card_no =
        r.id_card_enc.map(|c| cipher.decrypt(&c).and_then(|p| IdCardNo::parse(&p).map_err(|_| corrupt("id card")))).transpose()?;
    let bank_account = r
        .bank_account_enc
        .map(|c| cipher.decrypt(&c).and_then(|p| BankAccount::parse(&p).map_err(|_| corrupt("bank account"))))
        .transpose()?;
    Ok(Employee {
        id: r.id,
        tenant_id: r.tenant_id,
        employee_no: r.employee_no,
        name: r.name,
        phone: r.phone,
        email: r.email,
        id_card_no,
        bank_name: r.bank_name,
        bank_account,
        department: r.department,
        position: r.position,
        hire_date: r.hire_date,
        status: parse_enum(&r.status, EmployeeStatus::parse, "employee status")?,
        base_salary: Money::from_fen(r.base_salary),
        si_base: r.si_base.map(Money::from_fen),
        housing_fund_rate: HousingFundRate::parse(&r.housing_fund_rate).map_err(|_| corrupt("housing fund rate"))?,
        special_deductions: serde_json::from_str(&r.special_deductions).map_err(|_| corrupt("special deductions"))?,
        openid: r.openid,
        created_at: from_db(r.created_at),
        updated_at: from_db(r.updated_at),
    })
}

/// Employees visible to `scope`: a partner's reach through its tenants.
pub(crate) fn scoped(scope: Party) -> employees::BoxedQuery<'static, MultiBackend> {
    let q = employees::table.into_boxed();
    match scope {
        Party::Platform => q,
        Party::Partner { partner_id } => q.filter(employees::tenant_id.eq_any(ids_of_partner(partner_id))),
        Party::Tenant { tenant_id, .. } => q.filter(employees::tenant_id.eq(tenant_id)),
    }
}

/// Keywords at least this long use SQLite's trigram index (shorter ones have no trigram).
const TRIGRAM: usize = 3;

/// `keyword` as one FTS5 string: in double quotes, each quote doubled, so that operators
/// (`OR`, `NEAR(`, `*`, `^`, `:`) and quotes are literal text. With the trigram tokenizer the
/// phrase is a case-insensitive substring match on any of the indexed fields.
fn fts5_phrase(keyword: &str) -> String {
    format!("\"{}\"", keyword.replace('"', "\"\""))
}

/// `fts`: the connection is SQLite, whose `employees_search` trigram index answers keywords.
/// On PostgreSQL the LIKE below is served by the pg_trgm indexes where installed.
fn filtered<'a>(scope: Party, q: &'a EmployeeQuery, fts: bool) -> employees::BoxedQuery<'a, MultiBackend> {
    let mut query = scoped(scope);
    if let Some(s) = q.status {
        query = query.filter(employees::status.eq(s.as_str()));
    }
    if let Some(t) = q.tenant_id {
        query = query.filter(employees::tenant_id.eq(t));
    }
    if let Some(p) = q.partner_id {
        query = query.filter(employees::tenant_id.eq_any(ids_of_partner(p)));
    }
    if let Some(d) = &q.department {
        query = query.filter(employees::department.eq(d));
    }
    // Within one tenant a LIKE over its rows is cheaper than intersecting trigram lists that
    // may span every tenant; across tenants the index saves a scan of the whole table.
    let one_tenant = matches!(scope, Party::Tenant { .. }) || q.tenant_id.is_some();
    if q.list.keyword.as_deref().is_some_and(|k| !searchable(k)) {
        query = query.filter(nothing());
    } else if let Some(k) = q.list.keyword.as_ref().filter(|k| fts && !one_tenant && k.chars().count() >= TRIGRAM) {
        query = query.filter(
            sql::<Bool>("employees.id IN (SELECT rowid FROM employees_search WHERE employees_search MATCH ")
                .bind::<Text, _>(fts5_phrase(k))
                .sql(")"),
        );
    } else if let Some(k) = &q.list.keyword {
        let p = like_pattern(k);
        query = query.filter(
            lower(employees::name.nullable()).like(p.clone()).escape('\\').or(employees::phone.like(p.clone()).escape('\\')).or(lower(
                employees::employee_no,
            )
            .like(p)
            .escape('\\')),
        );
    }
    query
}

/// The total of a list that narrows only by tenant (scope, `tenant_id`, `partner_id`): the sum of
/// the tenants' trigger-kept `employee_count`, so a million-row list does not count its rows.
/// `None` when other filters apply.
fn counted_total(conn: &mut DbConn, scope: Party, q: &EmployeeQuery) -> Result<Option<i64>> {
    if q.status.is_some() || q.department.is_some() || q.list.keyword.is_some() {
        return Ok(None);
    }
    let mut tenants_q = tenants::table.into_boxed::<MultiBackend>();
    match scope {
        Party::Platform => {}
        Party::Partner { partner_id } => tenants_q = tenants_q.filter(tenants::partner_id.eq(partner_id)),
        Party::Tenant { tenant_id, .. } => tenants_q = tenants_q.filter(tenants::id.eq(tenant_id)),
    }
    if let Some(t) = q.tenant_id {
        tenants_q = tenants_q.filter(tenants::id.eq(t));
    }
    if let Some(p) = q.partner_id {
        tenants_q = tenants_q.filter(tenants::partner_id.eq(p));
    }
    let total: Option<i64> =
        tenants_q.select(sql::<Nullable<BigInt>>("CAST(SUM(employee_count) AS BIGINT)")).get_result(conn).map_err(db_error)?;
    Ok(Some(total.unwrap_or(0)))
}

fn get(conn: &mut DbConn, cipher: &FieldCipher, scope: Party, id: Id) -> Result<Option<Employee>> {
    // Static (unboxed) queries per scope: their prepared statements stay in Diesel's cache.
    let by_id = employees::table.filter(employees::id.eq(id)).select(Row::as_select());
    let row: Option<Row> = match scope {
        Party::Platform => by_id.first(conn),
        Party::Partner { partner_id } => by_id.filter(employees::tenant_id.eq_any(ids_of_partner(partner_id))).first(conn),
        Party::Tenant { tenant_id, .. } => by_id.filter(employees::tenant_id.eq(tenant_id)).first(conn),
    }
    .optional()
    .map_err(db_error)?;
    row.map(|r| from_row(cipher, r)).transpose()
}

/// The stored columns of an employee, sensitive ones encrypted; one shape for insert and update.
#[derive(Insertable, AsChangeset)]
#[diesel(table_name = employees, treat_none_as_null = true)]
struct Record<'a> {
    tenant_id: i64,
    employee_no: Option<&'a str>,
    name: &'a str,
    phone: Option<&'a str>,
    email: Option<&'a str>,
    id_card_enc: Option<String>,
    id_card_hash: Option<String>,
    bank_name: Option<&'a str>,
    bank_account_enc: Option<String>,
    department: Option<&'a str>,
    position: Option<&'a str>,
    hire_date: Option<NaiveDate>,
    status: &'a str,
    base_salary: i64,
    si_base: Option<i64>,
    housing_fund_rate: String,
    special_deductions: String,
    openid: Option<&'a str>,
    created_at: NaiveDateTime,
    updated_at: NaiveDateTime,
}

fn record<'a>(cipher: &FieldCipher, e: &'a Employee) -> Result<Record<'a>> {
    Ok(Record {
        tenant_id: e.tenant_id,
        employee_no: e.employee_no.as_deref(),
        name: &e.name,
        phone: e.phone.as_deref(),
        email: e.email.as_deref(),
        id_card_enc: e.id_card_no.as_ref().map(|v| cipher.encrypt(v.as_str())).transpose()?,
        id_card_hash: e.id_card_no.as_ref().map(|v| cipher.blind_index(v.as_str())),
        bank_name: e.bank_name.as_deref(),
        bank_account_enc: e.bank_account.as_ref().map(|v| cipher.encrypt(v.as_str())).transpose()?,
        department: e.department.as_deref(),
        position: e.position.as_deref(),
        hire_date: e.hire_date,
        status: e.status.as_str(),
        base_salary: e.base_salary.fen(),
        si_base: e.si_base.map(Money::fen),
        housing_fund_rate: e.housing_fund_rate.to_string(),
        special_deductions: serde_json::to_string(&e.special_deductions).map_err(|e| Error::Internal(e.into()))?,
        openid: e.openid.as_deref(),
        created_at: to_db(e.created_at),
        updated_at: to_db(e.updated_at),
    })
}

fn conflict_message(e: diesel::result::Error) -> Error {
    match db_error(e) {
        Error::Conflict(_, m) if m.contains("id card") => {
            Error::conflict(Reason::Duplicate, "another employee of this tenant has this id card number")
        }
        Error::Conflict(_, m) if m.contains("employee no") || m.contains("employee_no") => {
            Error::conflict(Reason::Duplicate, "another employee of this tenant has this employee number")
        }
        Error::Conflict(..) => {
            Error::conflict(Reason::Duplicate, "another employee of this tenant has this employee number or id card number")
        }
        other => other,
    }
}

#[async_trait]
impl EmployeeRepo for OrgStore {
    async fn list_employees(&self, scope: Party, q: EmployeeQuery) -> Result<Page<Employee>> {
        let cipher = self.cipher.clone();
        self.db
            .run(move |conn| {
                let fts = matches!(conn, DbConn::Sqlite(_));
                let mut query = filtered(scope, &q, fts).select(Row::as_select());
                query = match q.list.sort.unwrap_or((EmployeeSort::Id, SortOrder::Desc)) {
                    (EmployeeSort::Name, SortOrder::Asc) => query.order((employees::name.asc(), employees::id.asc())),
                    (EmployeeSort::Name, SortOrder::Desc) => query.order((employees::name.desc(), employees::id.desc())),
                    (EmployeeSort::EmployeeNo, SortOrder::Asc) => query.order((employees::employee_no.asc(), employees::id.asc())),
                    (EmployeeSort::EmployeeNo, SortOrder::Desc) => query.order((employees::employee_no.desc(), employees::id.desc())),
                    (EmployeeSort::HireDate, SortOrder::Asc) => query.order((employees::hire_date.asc(), employees::id.asc())),
                    (EmployeeSort::HireDate, SortOrder::Desc) => query.order((employees::hire_date.desc(), employees::id.desc())),
                    (EmployeeSort::Id | EmployeeSort::CreatedAt, SortOrder::Asc) => query.order(employees::id.asc()),
                    (EmployeeSort::Id | EmployeeSort::CreatedAt, SortOrder::Desc) => query.order(employees::id.desc()),
                };
                let rows: Vec<Row> = query.offset(q.list.page.offset()).limit(q.list.page.limit()).load(conn).map_err(db_error)?;
                let total = total(q.list.page, rows.len(), || match counted_total(conn, scope, &q)? {
                    Some(total) => Ok(total),
                    None => filtered(scope, &q, fts).count().get_result(conn).map_err(db_error),
                })?;
                Ok(page(rows.into_iter().map(|r| from_row(&cipher, r)).collect::<Result<_>>()?, total, q.list.page))
            })
            .await
    }

    async fn get_employee(&self, scope: Party, id: Id) -> Result<Option<Employee>> {
        let cipher = self.cipher.clone();
        self.db.run(move |conn| get(conn, &cipher, scope, id)).await
    }

    async fn tenant_partner(&self, scope: Party, tenant_id: Id) -> Result<Option<Id>> {
        self.db.run(move |conn| super::tenants::tenant_partner(conn, scope, tenant_id)).await
    }

    async fn insert_employee(&self, e: Employee, audit: AuditRecord) -> Result<Employee> {
        let cipher = self.cipher.clone();
        self.db
            .write(move |conn| {
                let id: i64 = diesel::insert_into(employees::table)
                    .values(record(&cipher, &e)?)
                    .returning(employees::id)
                    .get_result(conn)
                    .map_err(conflict_message)?;
                audit_created(conn, audit, id)?;
                Ok(Employee { id, ..e })
            })
            .await
    }

    async fn update_employee(&self, e: Employee, audit: AuditRecord) -> Result<Employee> {
        let cipher = self.cipher.clone();
        self.db
            .write(move |conn| {
                // The tenant and creation time never change; the record carries them unchanged.
                let n = diesel::update(employees::table.find(e.id).filter(employees::tenant_id.eq(e.tenant_id)))
                    .set(record(&cipher, &e)?)
                    .execute(conn)
                    .map_err(conflict_message)?;
                if n == 0 {
                    return Err(Error::NotFound("employee"));
                }
                write_audit(conn, &audit)?;
                Ok(e)
            })
            .await
    }

    async fn delete_employee(&self, id: Id, audit: AuditRecord) -> Result<()> {
        self.db
            .write(move |conn| {
                let n = diesel::delete(employees::table.find(id)).execute(conn).map_err(|e| match db_error(e) {
                    Error::Conflict(..) => {
                        Error::conflict(Reason::InUse, "payroll records refer to this employee; set its status to left instead")
                    }
                    other => other,
                })?;
                if n == 0 {
                    return Err(Error::NotFound("employee"));
                }
                write_audit(conn, &audit)
            })
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::fts5_phrase;

    #[test]
    fn an_fts5_phrase_is_quoted_with_inner_quotes_doubled() {
        assert_eq!(fts5_phrase("abc"), "\"abc\"");
        assert_eq!(fts5_phrase("a\"b"), "\"a\"\"b\"");
        assert_eq!(fts5_phrase("\"\""), "\"\"\"\"\"\"");
        assert_eq!(fts5_phrase("x OR near(* \\"), "\"x OR near(* \\\"");
    }
}
