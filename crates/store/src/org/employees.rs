use super::tenants::ids_of_partner;
use super::{Counted, OrgStore, count_up_to, like_pattern, lower, nothing, page, parse_enum, searchable, total, up_to};
use crate::crypto::FieldCipher;
use crate::db::{DbConn, MultiBackend};
use crate::error::db_error;
use crate::ids_in::ids_in;
use crate::outbox;
use crate::schema::{employee_gaps, employees, tenants};
use crate::static_sql::{StaticSql, static_sql};
use crate::time::{DbTime, from_db, to_db};
use async_trait::async_trait;
use atrium_kernel::Reason;
use atrium_kernel::StrEnum;
use atrium_kernel::payroll::HousingFundRate;
use atrium_kernel::{Effects, Error, Id, Money, Page, Party, Result, SortOrder};
use atrium_org::{BankAccount, Employee, EmployeeQuery, EmployeeRepo, EmployeeSort, EmployeeStatus, IdCardNo};
use chrono::{NaiveDate, NaiveDateTime};
use diesel::dsl::sql;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Nullable, Text};
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

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
    #[diesel(deserialize_as = DbTime)]
    created_at: NaiveDateTime,
    #[diesel(deserialize_as = DbTime)]
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

/// How long a trigram's count of employees is trusted, and how many counts are kept.
const TRIGRAM_COUNTS_FOR: Duration = Duration::from_secs(600);
const TRIGRAM_COUNTS_KEPT: usize = 4096;
/// A trigram's employees are counted up to this many; a trigram held by more is common, and
/// which of two common trigrams is commoner does not matter.
const TRIGRAM_COUNT_CAP: i64 = 20_000;

/// Values kept under a key for `ttl`, at most `max` of them: past that the expired go, and if
/// none has, all.
struct Expiring<V> {
    entries: Mutex<HashMap<String, (V, Instant)>>,
    ttl: Duration,
    max: usize,
}

impl<V: Clone> Expiring<V> {
    fn new(ttl: Duration, max: usize) -> Self {
        Expiring { entries: Mutex::default(), ttl, max }
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<String, (V, Instant)>> {
        self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn get(&self, key: &str) -> Option<V> {
        self.entries().get(key).filter(|(_, at)| at.elapsed() < self.ttl).map(|(v, _)| v.clone())
    }

    fn put(&self, key: String, value: V) {
        let mut entries = self.entries();
        if entries.len() >= self.max {
            entries.retain(|_, (_, at)| at.elapsed() < self.ttl);
            if entries.len() >= self.max {
                entries.clear();
            }
        }
        entries.insert(key, (value, Instant::now()));
    }
}

/// How many employees hold each trigram of SQLite's search index (up to [`TRIGRAM_COUNT_CAP`]),
/// kept for [`TRIGRAM_COUNTS_FOR`]. A phrase query over the trigram index reads the whole
/// list of every trigram of the keyword, and a trigram like `wor` of `worker 999` is held by
/// nearly every row; a keyword across tenants is therefore looked up by its rarest trigrams and
/// those rows compared in full. Counting a trigram reads its list once; the count is kept so
/// the next keyword with it does not.
pub(crate) struct TrigramCounts(Expiring<i64>);

impl Default for TrigramCounts {
    fn default() -> Self {
        TrigramCounts(Expiring::new(TRIGRAM_COUNTS_FOR, TRIGRAM_COUNTS_KEPT))
    }
}

#[derive(QueryableByName)]
struct VocabRow {
    #[diesel(sql_type = BigInt)]
    doc: i64,
}

impl TrigramCounts {
    /// The FTS5 query that finds the employees whose fields may contain `keyword` (at least
    /// [`TRIGRAM`] characters): its rarest trigram, and its second rarest with `AND` unless
    /// that one is common. Two lists intersect inside the index, so far fewer rows are left to
    /// compare in full: for `worker 999` at a million rows, a page compared a third as many.
    /// A third trigram narrowed no further than it cost. (The whole keyword as a phrase reads
    /// every trigram's list, `wor` included.)
    fn index_match(&self, conn: &mut DbConn, keyword: &str) -> Result<String> {
        let chars: Vec<char> = keyword.chars().collect();
        let mut held: Vec<(i64, String)> = Vec::new();
        for window in chars.windows(TRIGRAM) {
            let trigram: String = window.iter().collect();
            if held.iter().any(|(_, t)| *t == trigram) {
                continue;
            }
            held.push((self.held_by(conn, &trigram)?, trigram));
        }
        Ok(rarest_two(held, keyword))
    }

    fn held_by(&self, conn: &mut DbConn, trigram: &str) -> Result<i64> {
        if let Some(n) = self.0.get(trigram) {
            return Ok(n);
        }
        // The index folds case as the keyword does. Counting stops at the cap: past it a
        // trigram is common, however common, and reading on would only cost time (the first
        // search of `worker …` once read all million rows of `wor`).
        let n =
            diesel::sql_query("SELECT count(*) AS doc FROM (SELECT rowid FROM employees_search WHERE employees_search MATCH ? LIMIT ?)")
                .bind::<Text, _>(fts5_phrase(trigram))
                .bind::<BigInt, _>(TRIGRAM_COUNT_CAP)
                .get_result::<VocabRow>(conn)
                .map_err(db_error)?
                .doc;
        self.0.put(trigram.to_owned(), n);
        Ok(n)
    }
}

/// The FTS5 query of [`TrigramCounts::index_match`] from the keyword's trigrams and how many
/// employees hold each.
fn rarest_two(mut held: Vec<(i64, String)>, keyword: &str) -> String {
    held.sort();
    match held.as_slice() {
        [] => fts5_phrase(keyword),
        [(_, one)] => fts5_phrase(one),
        [(_, first), (n, second), ..] if *n < TRIGRAM_COUNT_CAP => format!("{} AND {}", fts5_phrase(first), fts5_phrase(second)),
        [(_, first), ..] => fts5_phrase(first),
    }
}

/// How long the total of a keyword search across tenants is kept, and how many are kept.
const SEARCH_TOTALS_FOR: Duration = Duration::from_secs(5);
const SEARCH_TOTALS_KEPT: usize = 1024;

/// The totals of keyword searches across tenants, kept for [`SEARCH_TOTALS_FOR`]. Counting such
/// a search compares every employee whose fields hold the keyword's rarest trigram (thousands,
/// for a common name), where its page compares only as many as the page needs; so the pages of
/// one search share its count for a few seconds instead of counting again for each. A write of
/// this process to employees or tenants drops every kept total; another instance's writes show
/// in a total within those seconds (its page's records are always read fresh).
pub(crate) struct SearchTotals {
    kept: Expiring<KeptTotal>,
    writes: AtomicU64,
}

impl Default for SearchTotals {
    fn default() -> Self {
        SearchTotals { kept: Expiring::new(SEARCH_TOTALS_FOR, SEARCH_TOTALS_KEPT), writes: AtomicU64::new(0) }
    }
}

#[derive(Clone, Copy)]
struct KeptTotal {
    /// Records found, looking at no more than `limit`.
    found: i64,
    limit: i64,
    /// [`SearchTotals::writes`] when the count began.
    writes: u64,
}

impl SearchTotals {
    fn key(scope: Party, q: &EmployeeQuery) -> String {
        format!("{scope:?}|{:?}|{:?}|{:?}|{:?}|{:?}", q.status, q.tenant_id, q.partner_id, q.department, q.list.keyword)
    }

    /// The records a count with `limit` would find, if a kept count tells.
    fn get(&self, key: &str, limit: i64) -> Option<i64> {
        let k = self.kept.get(key)?;
        if k.writes != self.writes.load(Ordering::Acquire) {
            return None;
        }
        // A count that stopped short of its limit found the whole list; one that reached it
        // tells only about limits up to its own.
        (k.found < k.limit || limit <= k.limit).then_some(k.found.min(limit))
    }

    fn put(&self, key: String, found: i64, limit: i64, writes: u64) {
        self.kept.put(key, KeptTotal { found, limit, writes });
    }

    /// Counts `limit` records at most with `count`, or answers from a kept count.
    fn up_to(&self, scope: Party, q: &EmployeeQuery, limit: i64, count: impl FnOnce() -> Result<Counted>) -> Result<Counted> {
        let key = Self::key(scope, q);
        if let Some(found) = self.get(&key, limit) {
            return Ok(Counted::UpTo(found));
        }
        let writes = self.writes.load(Ordering::Acquire);
        let counted = count()?;
        if let Counted::UpTo(found) = counted {
            self.put(key, found, limit, writes);
        }
        Ok(counted)
    }

    /// Employees or tenants changed: no kept total holds.
    pub(crate) fn wrote(&self) {
        self.writes.fetch_add(1, Ordering::AcqRel);
    }
}

/// Whether the list reads one tenant's employees only.
fn one_tenant(scope: Party, q: &EmployeeQuery) -> bool {
    matches!(scope, Party::Tenant { .. }) || q.tenant_id.is_some()
}

diesel::define_sql_function! {
    /// PostgreSQL's `strpos(text, substring)`: the 1-based position of `substring`, 0 if absent.
    fn strpos(x: Nullable<Text>, substring: Text) -> Nullable<diesel::sql_types::Integer>;
}

/// How a list's keyword is compared on this connection.
#[derive(Clone, Copy)]
enum Search<'a> {
    /// PostgreSQL across tenants: `lower(column) LIKE`, which its pg_trgm indexes serve.
    Lower,
    /// PostgreSQL inside one tenant: `strpos(lower(column), keyword) > 0`, the same substring
    /// test in a form the trigram indexes do not serve, so the plan reads the tenant's index
    /// (which holds the compared fields) instead of intersecting trigram lists of every tenant.
    Position,
    /// SQLite: its LIKE ignores ASCII case and its `lower()` folds only ASCII, so `column LIKE`
    /// is the same comparison without a function call per row.
    Plain,
    /// SQLite across tenants: the rows the trigram index finds for this FTS5 query (the
    /// keyword's rarest trigrams, see [`TrigramCounts::index_match`]), compared as `Plain`.
    Trigram(&'a str),
}

fn filtered<'a>(scope: Party, q: &'a EmployeeQuery, search: Search<'a>) -> employees::BoxedQuery<'a, MultiBackend> {
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
    let Some(k) = q.list.keyword.as_ref() else { return query };
    if !searchable(k) {
        return query.filter(nothing());
    }
    let p = like_pattern(k);
    let plain_like = |p: String| {
        employees::name
            .nullable()
            .like(p.clone())
            .escape('\\')
            .or(employees::phone.like(p.clone()).escape('\\'))
            .or(employees::employee_no.like(p).escape('\\'))
    };
    match search {
        Search::Lower => query.filter(
            lower(employees::name.nullable()).like(p.clone()).escape('\\').or(employees::phone.like(p.clone()).escape('\\')).or(lower(
                employees::employee_no,
            )
            .like(p)
            .escape('\\')),
        ),
        Search::Position => query.filter(
            strpos(lower(employees::name.nullable()), k.clone()).gt(0).or(strpos(employees::phone, k.clone()).gt(0)).or(strpos(
                lower(employees::employee_no),
                k.clone(),
            )
            .gt(0)),
        ),
        Search::Plain => query.filter(plain_like(p)),
        Search::Trigram(t) => query
            .filter(
                sql::<Bool>("employees.id IN (SELECT rowid FROM employees_search WHERE employees_search MATCH ")
                    .bind::<Text, _>(t.to_owned())
                    .sql(")"),
            )
            .filter(plain_like(p)),
    }
}

#[derive(QueryableByName)]
struct IdRow {
    #[diesel(sql_type = BigInt)]
    id: i64,
}

/// SQLite, a keyword across tenants, in id order (`order`; none for a count): the ids of the
/// employees the trigram index finds for `index_match` (see [`TrigramCounts::index_match`])
/// and whose fields contain `keyword`. The
/// index is read in its rowid order, which is the id order, and each of its rows joined to its
/// employee (`CROSS JOIN` keeps the index the outer loop), so a page reads only as far as its
/// last match and a count only as far as its limit, not every employee holding the trigram.
#[allow(clippy::too_many_arguments)]
fn trigram_ids(
    c: &mut diesel::sqlite::SqliteConnection,
    scope: Party,
    q: &EmployeeQuery,
    keyword: &str,
    index_match: &str,
    order: Option<SortOrder>,
    offset: i64,
    limit: i64,
) -> QueryResult<Vec<i64>> {
    let p = like_pattern(keyword);
    let mut query = diesel::sql_query(
        "SELECT employees.id AS id FROM employees_search CROSS JOIN employees ON employees.id = employees_search.rowid \
         WHERE employees_search MATCH ? \
         AND (employees.name LIKE ? ESCAPE '\\' OR employees.phone LIKE ? ESCAPE '\\' OR employees.employee_no LIKE ? ESCAPE '\\')",
    )
    .into_boxed::<diesel::sqlite::Sqlite>()
    .bind::<Text, _>(index_match.to_owned())
    .bind::<Text, _>(p.clone())
    .bind::<Text, _>(p.clone())
    .bind::<Text, _>(p);
    let of_partner = " AND employees.tenant_id IN (SELECT id FROM tenants WHERE partner_id = ?)";
    match scope {
        Party::Platform => {}
        Party::Partner { partner_id } => query = query.sql(of_partner).bind::<BigInt, _>(partner_id),
        Party::Tenant { tenant_id, .. } => query = query.sql(" AND employees.tenant_id = ?").bind::<BigInt, _>(tenant_id),
    }
    if let Some(t) = q.tenant_id {
        query = query.sql(" AND employees.tenant_id = ?").bind::<BigInt, _>(t);
    }
    if let Some(p) = q.partner_id {
        query = query.sql(of_partner).bind::<BigInt, _>(p);
    }
    if let Some(s) = q.status {
        query = query.sql(" AND employees.status = ?").bind::<Text, _>(s.as_str());
    }
    if let Some(d) = &q.department {
        query = query.sql(" AND employees.department = ?").bind::<Text, _>(d.clone());
    }
    query = match order {
        Some(SortOrder::Desc) => query.sql(" ORDER BY employees_search.rowid DESC"),
        Some(SortOrder::Asc) => query.sql(" ORDER BY employees_search.rowid ASC"),
        None => query,
    };
    let rows: Vec<IdRow> = query.sql(" LIMIT ? OFFSET ?").bind::<BigInt, _>(limit).bind::<BigInt, _>(offset).load(c)?;
    Ok(rows.into_iter().map(|r| r.id).collect())
}

/// `query` in the list's order (the id breaks ties).
fn ordered<'a>(query: employees::BoxedQuery<'a, MultiBackend>, sort: (EmployeeSort, SortOrder)) -> employees::BoxedQuery<'a, MultiBackend> {
    match sort {
        (EmployeeSort::Name, SortOrder::Asc) => query.order((employees::name.asc(), employees::id.asc())),
        (EmployeeSort::Name, SortOrder::Desc) => query.order((employees::name.desc(), employees::id.desc())),
        (EmployeeSort::EmployeeNo, SortOrder::Asc) => query.order((employees::employee_no.asc(), employees::id.asc())),
        (EmployeeSort::EmployeeNo, SortOrder::Desc) => query.order((employees::employee_no.desc(), employees::id.desc())),
        (EmployeeSort::HireDate, SortOrder::Asc) => query.order((employees::hire_date.asc(), employees::id.asc())),
        (EmployeeSort::HireDate, SortOrder::Desc) => query.order((employees::hire_date.desc(), employees::id.desc())),
        (EmployeeSort::Id | EmployeeSort::CreatedAt, SortOrder::Asc) => query.order(employees::id.asc()),
        (EmployeeSort::Id | EmployeeSort::CreatedAt, SortOrder::Desc) => query.order(employees::id.desc()),
    }
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
    let total: Option<i64> = tenants_q.select(employee_sum()).get_result(conn).map_err(db_error)?;
    Ok(Some(total.unwrap_or(0)))
}

/// The sum of the selected tenants' employee counters.
fn employee_sum() -> StaticSql<Nullable<BigInt>> {
    static_sql("CAST(SUM(employee_count) AS BIGINT)")
}

/// How deep a page of every employee in id order is before [`deep_page`] finds where it
/// starts: from here on, stepping over the rows before the page costs more than its lookups.
const DEEP_PAGE: i64 = 1_000;

/// How many deleted ids [`id_at_offset`] reads at most: past that, counting them costs about what
/// stepping over a deep page's rows does, and the page is read with OFFSET.
const MAX_GAPS: i64 = 5_000;

/// How many guesses [`id_at_offset`] makes before it walks the rest of the way.
const GUESSES: usize = 4;

/// SQLite, a deep page of every employee in id order (no filter, no keyword): the id the page
/// starts at (its rows are that id and the ones after it, in the list's order), with the
/// list's exact total, both read in one transaction. `None` for any other list, on PostgreSQL,
/// for a shallow page, or when [`id_at_offset`] cannot tell: the page is read with OFFSET then.
fn deep_page(
    conn: &mut DbConn,
    scope: Party,
    q: &EmployeeQuery,
    sort: (EmployeeSort, SortOrder),
    offset: i64,
) -> Result<Option<(i64, i64)>> {
    let every_employee = matches!(scope, Party::Platform)
        && q.status.is_none()
        && q.tenant_id.is_none()
        && q.partner_id.is_none()
        && q.department.is_none()
        && q.list.keyword.is_none();
    if offset < DEEP_PAGE || !every_employee || !matches!(sort.0, EmployeeSort::Id | EmployeeSort::CreatedAt) {
        return Ok(None);
    }
    let DbConn::Sqlite(c) = conn else { return Ok(None) };
    c.transaction(|c| {
        // The list's total, as `counted_total` reads it for every employee.
        let total = tenants::table.select(employee_sum()).get_result::<Option<i64>>(c)?.unwrap_or(0);
        Ok(id_at_offset(c, total, sort.1, offset)?.map(|start| (start, total)))
    })
    .map_err(db_error)
}

/// SQLite: the id at which the rows of every employee in id `order`, `offset` rows in, start,
/// found without stepping over those rows; `None` when the ids are not laid out as this needs.
///
/// SQLite hands out employee ids 1, 2, 3, … and never reuses one, and `employee_gaps` (kept by
/// triggers) holds the deleted ones, so every id up to the largest is an employee or a gap: in
/// ascending order, the employees up to an id `t` number `t` less the gaps up to `t`. The row
/// wanted is the `offset + 1`-th; guessing `t = offset + 1` and moving it on by how many
/// employees it is short gets within a few rows of it in a guess or two, and the rest of the
/// way is walked in the employees' own index (which has no gaps to step over). Descending
/// order is the mirror image, from the largest id. The layout is checked first against the
/// exact `total` of employees: an id given by hand, or rows changed past the triggers, make
/// the check fail, and so do more than [`MAX_GAPS`] deleted ids.
pub(crate) fn id_at_offset(conn: &mut diesel::SqliteConnection, total: i64, order: SortOrder, offset: i64) -> QueryResult<Option<i64>> {
    use diesel::dsl::{max, min};
    let (Some(lowest), Some(highest)) = (
        employees::table.select(min(employees::id)).get_result::<Option<i64>>(conn)?,
        employees::table.select(max(employees::id)).get_result::<Option<i64>>(conn)?,
    ) else {
        return Ok(None);
    };
    let gaps = |conn: &mut diesel::SqliteConnection, from: i64, to: i64| {
        let within = employee_gaps::table.filter(employee_gaps::id.ge(from).and(employee_gaps::id.le(to))).select(employee_gaps::id);
        super::CountOf(within.limit(MAX_GAPS + 1)).get_result::<i64>(conn)
    };
    let all_gaps = gaps(conn, 1, highest)?;
    if lowest < 1 || all_gaps > MAX_GAPS || total + all_gaps != highest {
        return Ok(None);
    }
    if offset >= total {
        // Past the last row: a start no row reaches.
        return Ok(Some(match order {
            SortOrder::Asc => highest + 1,
            SortOrder::Desc => 0,
        }));
    }
    // Ranks count from the list's first id (1 ascending, the largest descending) `toward`
    // the other end; `reached(t)` is how many employees lie from the first id through `t`.
    let (first, toward) = match order {
        SortOrder::Asc => (1, 1),
        SortOrder::Desc => (highest, -1),
    };
    let reached = |conn: &mut diesel::SqliteConnection, t: i64| -> QueryResult<i64> {
        let (from, to) = (first.min(t), first.max(t));
        Ok(to - from + 1 - gaps(conn, from, to)?)
    };
    // The page's first row is the `rank`-th; the employees through `t` fall short of it by
    // `short`, never below zero (an id range holds at most as many employees as ids).
    let rank = offset + 1;
    let mut t = first + toward * offset;
    let mut short = rank - reached(conn, t)?;
    for _ in 1..GUESSES {
        if short <= 1 {
            break;
        }
        t += toward * short;
        short = rank - reached(conn, t)?;
    }
    match (order, short) {
        // `t` reaches the rank: the page starts at the last employee up to it.
        (SortOrder::Asc, 0) => employees::table.filter(employees::id.le(t)).select(max(employees::id)).get_result(conn),
        (SortOrder::Desc, 0) => employees::table.filter(employees::id.ge(t)).select(min(employees::id)).get_result(conn),
        // The rest of the way, walked in the id index.
        (SortOrder::Asc, _) => employees::table
            .filter(employees::id.gt(t))
            .select(employees::id)
            .order(employees::id.asc())
            .offset(short - 1)
            .first(conn)
            .optional(),
        (SortOrder::Desc, _) => employees::table
            .filter(employees::id.lt(t))
            .select(employees::id)
            .order(employees::id.desc())
            .offset(short - 1)
            .first(conn)
            .optional(),
    }
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
        let trigrams = self.trigrams.clone();
        let totals = self.search_totals.clone();
        self.db
            .run(move |conn| {
                let trigram = match (&*conn, q.list.keyword.as_deref()) {
                    // Within one tenant comparing its rows (read from an index holding the
                    // compared fields) is cheaper than a trigram's rows across every tenant.
                    (DbConn::Sqlite(_), Some(k)) if searchable(k) && k.chars().count() >= TRIGRAM && !one_tenant(scope, &q) => {
                        Some(trigrams.index_match(conn, k)?)
                    }
                    _ => None,
                };
                let search = match (&*conn, trigram.as_deref()) {
                    (DbConn::Sqlite(_), Some(t)) => Search::Trigram(t),
                    (DbConn::Sqlite(_), None) => Search::Plain,
                    (DbConn::Pg(_), _) if one_tenant(scope, &q) => Search::Position,
                    (DbConn::Pg(_), _) => Search::Lower,
                };
                let sort = q.list.sort.unwrap_or((EmployeeSort::Id, SortOrder::Desc));
                let (offset, limit) = (q.list.page.offset(), q.list.page.limit());
                // A keyword's trigram in id order: read from the trigram index as it runs.
                let streamed = match (search, sort, q.list.keyword.as_deref()) {
                    (Search::Trigram(t), (EmployeeSort::Id | EmployeeSort::CreatedAt, order), Some(k)) => Some((k, t, order)),
                    _ => None,
                };
                let mut known_total = None;
                let rows: Vec<Row> = if q.list.keyword.is_some() {
                    // A keyword is compared on every row of the scope: the page's ids first,
                    // from the index that holds the compared fields (an index-only scan on
                    // PostgreSQL), then only those rows, so the rows passed over are not read.
                    let ids: Vec<i64> = match (&mut *conn, streamed) {
                        (DbConn::Sqlite(c), Some((k, t, order))) => trigram_ids(c, scope, &q, k, t, Some(order), offset, limit),
                        (conn, _) => {
                            ordered(filtered(scope, &q, search), sort).select(employees::id).offset(offset).limit(limit).load(conn)
                        }
                    }
                    .map_err(db_error)?;
                    let mut rows: Vec<Row> =
                        employees::table.filter(ids_in(conn, employees::id, &ids)).select(Row::as_select()).load(conn).map_err(db_error)?;
                    let at: HashMap<i64, usize> = ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
                    rows.sort_by_key(|r| at.get(&r.id).copied().unwrap_or(usize::MAX));
                    rows
                } else if let Some((start, total)) = deep_page(conn, scope, &q, sort, offset)? {
                    known_total = Some(total);
                    let from = match sort.1 {
                        SortOrder::Desc => filtered(scope, &q, search).filter(employees::id.le(start)),
                        SortOrder::Asc => filtered(scope, &q, search).filter(employees::id.ge(start)),
                    };
                    ordered(from, sort).select(Row::as_select()).limit(limit).load(conn).map_err(db_error)?
                } else {
                    ordered(filtered(scope, &q, search), sort)
                        .select(Row::as_select())
                        .offset(offset)
                        .limit(limit)
                        .load(conn)
                        .map_err(db_error)?
                };
                let counted = |conn: &mut DbConn| match known_total {
                    Some(total) => Ok(Some(total)),
                    None => counted_total(conn, scope, &q),
                };
                let total = total(q.list.page, rows.len(), |n| match counted(conn)? {
                    Some(total) => Ok(Counted::Exact(total)),
                    None => {
                        let mut count = || match (&mut *conn, streamed) {
                            (DbConn::Sqlite(c), Some((k, t, _))) => up_to(trigram_ids(c, scope, &q, k, t, None, 0, n)),
                            (conn, _) => count_up_to(filtered(scope, &q, search).select(employees::id).limit(n), conn),
                        };
                        if q.list.keyword.is_some() && !one_tenant(scope, &q) { totals.up_to(scope, &q, n, count) } else { count() }
                    }
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

    async fn insert_employee(&self, e: Employee, effects: Effects) -> Result<Employee> {
        let cipher = self.cipher.clone();
        self.write_searched(move |conn| {
            let id: i64 = diesel::insert_into(employees::table)
                .values(record(&cipher, &e)?)
                .returning(employees::id)
                .get_result(conn)
                .map_err(conflict_message)?;
            outbox::write_created(conn, effects, id)?;
            Ok(Employee { id, ..e })
        })
        .await
    }

    async fn update_employee(&self, e: Employee, effects: Effects) -> Result<Employee> {
        let cipher = self.cipher.clone();
        self.write_searched(move |conn| {
            // The tenant and creation time never change; the record carries them unchanged.
            let n = diesel::update(employees::table.find(e.id).filter(employees::tenant_id.eq(e.tenant_id)))
                .set(record(&cipher, &e)?)
                .execute(conn)
                .map_err(conflict_message)?;
            if n == 0 {
                return Err(Error::NotFound("employee"));
            }
            outbox::write(conn, &effects)?;
            Ok(e)
        })
        .await
    }

    async fn delete_employee(&self, id: Id, effects: Effects) -> Result<()> {
        self.write_searched(move |conn| {
            let n = diesel::delete(employees::table.find(id)).execute(conn).map_err(|e| match db_error(e) {
                Error::Conflict(..) => {
                    Error::conflict(Reason::InUse, "payroll records refer to this employee; set its status to left instead")
                }
                other => other,
            })?;
            if n == 0 {
                return Err(Error::NotFound("employee"));
            }
            outbox::write(conn, &effects)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::{SearchTotals, fts5_phrase, id_at_offset, rarest_two};
    use crate::db::DbConn;
    use atrium_kernel::SortOrder;
    use diesel::prelude::*;

    #[test]
    #[allow(clippy::unwrap_used)]
    fn where_a_page_starts_is_where_offset_would_reach_while_the_ids_are_laid_out_densely() {
        let tdb = crate::testing::TestDatabase::sqlite();
        let db = tdb.open();
        crate::seed::seed_org(&db, 2, 40).unwrap();
        let mut conn = db.conn().unwrap();
        let DbConn::Sqlite(c) = &mut *conn else { unreachable!("a SQLite test database") };
        // Deleted: the oldest, a run, scattered ones, and the newest (above the largest id left).
        diesel::sql_query("DELETE FROM employees WHERE id IN (1, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 30, 41, 43, 45, 79, 80)")
            .execute(c)
            .unwrap();
        let pages = |c: &mut diesel::SqliteConnection, expect_found: bool| {
            let all: Vec<i64> = crate::schema::employees::table
                .select(crate::schema::employees::id)
                .order(crate::schema::employees::id.asc())
                .load(c)
                .unwrap();
            let total = all.len() as i64;
            for order in [SortOrder::Asc, SortOrder::Desc] {
                let mut want = all.clone();
                if order == SortOrder::Desc {
                    want.reverse();
                }
                for offset in 0..=total + 2 {
                    let start = id_at_offset(c, total, order, offset).unwrap();
                    assert_eq!(start.is_some(), expect_found, "{order:?} from {offset}");
                    let Some(start) = start else { continue };
                    let from: Vec<i64> = match order {
                        SortOrder::Asc => all.iter().copied().filter(|id| *id >= start).take(3).collect(),
                        SortOrder::Desc => all.iter().rev().copied().filter(|id| *id <= start).take(3).collect(),
                    };
                    let expected: Vec<i64> = want.iter().skip(offset as usize).take(3).copied().collect();
                    assert_eq!(from, expected, "{order:?} from {offset}");
                }
            }
        };
        pages(c, true);
        // Giving back a deleted id by hand is still dense: the insert takes it off the gaps.
        diesel::sql_query(
            "INSERT INTO employees (id, tenant_id, name, status, base_salary, housing_fund_rate, special_deductions, created_at, updated_at) \
             SELECT 9, tenant_id, name, status, base_salary, housing_fund_rate, special_deductions, created_at, updated_at FROM employees WHERE id = 2",
        )
        .execute(c)
        .unwrap();
        pages(c, true);
        // An id given far past the others leaves numbers that are neither: no answer, OFFSET.
        diesel::sql_query(
            "INSERT INTO employees (id, tenant_id, name, status, base_salary, housing_fund_rate, special_deductions, created_at, updated_at) \
             SELECT 500, tenant_id, name, status, base_salary, housing_fund_rate, special_deductions, created_at, updated_at FROM employees WHERE id = 2",
        )
        .execute(c)
        .unwrap();
        pages(c, false);
        diesel::sql_query("DELETE FROM employees WHERE id = 500").execute(c).unwrap();
        pages(c, true);
        // More deleted ids than are worth counting: OFFSET.
        drop(conn);
        crate::seed::seed_org(&db, 1, super::MAX_GAPS + 100).unwrap();
        let mut conn = db.conn().unwrap();
        let DbConn::Sqlite(c) = &mut *conn else { unreachable!("a SQLite test database") };
        diesel::sql_query(format!("DELETE FROM employees WHERE id > 100 AND id <= {}", 100 + super::MAX_GAPS)).execute(c).unwrap();
        pages(c, false);
    }

    #[test]
    fn a_kept_total_answers_the_limits_it_tells_about_until_a_write() {
        let totals = SearchTotals::default();
        let writes = totals.writes.load(super::Ordering::Acquire);
        // Page 1 of 20 counted to its limit of 1,021 and found 1,000: the whole list.
        totals.put("a".into(), 1_000, 1_021, writes);
        assert_eq!(totals.get("a", 1_041), Some(1_000)); // page 2's limit
        assert_eq!(totals.get("a", 41), Some(41)); // a smaller limit is reached
        assert_eq!(totals.get("b", 41), None);
        // A count that reached its limit tells nothing of a larger one.
        totals.put("c".into(), 1_021, 1_021, writes);
        assert_eq!(totals.get("c", 1_021), Some(1_021));
        assert_eq!(totals.get("c", 1_041), None);
        // A count begun before a write is not current after it.
        totals.wrote();
        assert_eq!(totals.get("a", 1_041), None);
        totals.put("d".into(), 5, 41, writes);
        assert_eq!(totals.get("d", 41), None);
    }

    #[test]
    fn an_fts5_phrase_is_quoted_with_inner_quotes_doubled() {
        assert_eq!(fts5_phrase("abc"), "\"abc\"");
        assert_eq!(fts5_phrase("a\"b"), "\"a\"\"b\"");
        assert_eq!(fts5_phrase("\"\""), "\"\"\"\"\"\"");
        assert_eq!(fts5_phrase("x OR near(* \\"), "\"x OR near(* \\\"");
    }

    #[test]
    fn a_keyword_is_looked_up_by_its_two_rarest_trigrams_unless_the_second_is_common() {
        let held = |v: &[(i64, &str)]| v.iter().map(|(n, t)| (*n, t.to_string())).collect::<Vec<_>>();
        let worker = held(&[(20_000, "wor"), (20_000, "ork"), (11_000, " 99"), (3_700, "999"), (20_000, "r 9")]);
        assert_eq!(rarest_two(worker, "worker 999"), "\"999\" AND \" 99\"");
        assert_eq!(rarest_two(held(&[(20_000, "wor"), (12, "rke")]), "worke"), "\"rke\"");
        assert_eq!(rarest_two(held(&[(5, "a\"b")]), "a\"b"), "\"a\"\"b\"");
        assert_eq!(rarest_two(vec![], "ab"), "\"ab\"");
    }
}
