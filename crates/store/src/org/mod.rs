//! Repositories of the org domain: partners, tenants, employees and the audit
//! trail. Each write stores its audit record in the same transaction.
use crate::crypto::FieldCipher;
use crate::db::{Db, DbConn, MultiBackend};
use crate::error::db_error;
use atrium_kernel::{COUNT_AHEAD, Page, PageRequest, Result};
use diesel::backend::Backend;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::sql_types::BigInt;
use diesel::{QueryResult, RunQueryDsl};

mod audit;
mod employees;
pub(crate) mod partners;
pub(crate) mod tenants;

/// The org repositories over the database; implements every org port.
#[derive(Clone)]
pub struct OrgStore {
    db: Db,
    cipher: FieldCipher,
    trigrams: std::sync::Arc<employees::TrigramCounts>,
    search_totals: std::sync::Arc<employees::SearchTotals>,
}

impl OrgStore {
    pub fn new(db: Db, cipher: FieldCipher) -> Self {
        OrgStore { db, cipher, trigrams: Default::default(), search_totals: Default::default() }
    }

    /// A write that may change what a keyword search across tenants finds (an employee, a
    /// tenant's partner): the kept search totals are dropped once it has committed, so a count
    /// begun before it is not kept as current.
    async fn write_searched<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut DbConn) -> Result<T> + Send + 'static,
    {
        let written = self.db.write(f).await;
        self.search_totals.wrote();
        written
    }
}

diesel::define_sql_function! {
    /// SQL `lower()`; both backends have it.
    fn lower(x: diesel::sql_types::Nullable<diesel::sql_types::Text>) -> diesel::sql_types::Nullable<diesel::sql_types::Text>;
}

/// Whether a list keyword may reach the database. Stored text holds no control characters
/// (the kernel refuses them in names, numbers and keywords) and a NUL breaks SQLite's
/// full-text parser and PostgreSQL's text type, so a hand-built query with one must match
/// [`nothing`] instead.
pub(crate) fn searchable(keyword: &str) -> bool {
    !keyword.chars().any(char::is_control)
}

/// A condition no row meets.
pub(crate) fn nothing() -> diesel::expression::SqlLiteral<diesel::sql_types::Bool> {
    diesel::dsl::sql("1 = 0")
}

/// `%keyword%` with LIKE's wildcards escaped (use with `.escape('\\')`). The keyword is
/// already lower-cased; columns are compared through `lower()` so both backends agree.
pub(crate) fn like_pattern(keyword: &str) -> String {
    let escaped = keyword.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_");
    format!("%{escaped}%")
}

pub(crate) fn page<T>(items: Vec<T>, total: Total, req: PageRequest) -> Page<T> {
    if total.exact { Page::new(items, total.count, req) } else { Page::at_least(items, total.count, req) }
}

/// A list's total as a page shows it: the count, and whether it is exact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Total {
    pub count: i64,
    pub exact: bool,
}

/// What a list's count closure found.
pub(crate) enum Counted {
    /// The exact number (kept by a counter, say).
    Exact(i64),
    /// The number of records found when no more than the limit given were looked at.
    UpTo(i64),
}

/// `ids`, the ids of a list read with the limit the count closure was given, as counted.
pub(crate) fn up_to(ids: diesel::QueryResult<Vec<i64>>) -> Result<Counted> {
    Ok(Counted::UpTo(ids.map_err(db_error)?.len() as i64))
}

/// The rows of `query` (a list's ids with the limit the count closure was given), counted by
/// the database: `SELECT COUNT(*) FROM (query)`, so no id crosses into Rust.
pub(crate) fn count_up_to<Q>(query: Q, conn: &mut DbConn) -> Result<Counted>
where
    Q: QueryFragment<MultiBackend> + QueryId + Query,
{
    Ok(Counted::UpTo(CountOf(query).get_result::<i64>(conn).map_err(db_error)?))
}

/// `SELECT COUNT(*) FROM (query) AS counted`.
#[derive(Debug, Clone, Copy, QueryId)]
pub(crate) struct CountOf<Q>(Q);

impl<Q: Query> Query for CountOf<Q> {
    type SqlType = BigInt;
}

impl<Q, Conn> RunQueryDsl<Conn> for CountOf<Q> {}

impl<Q: QueryFragment<DB>, DB: Backend> QueryFragment<DB> for CountOf<Q> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        out.push_sql("SELECT COUNT(*) FROM (");
        self.0.walk_ast(out.reborrow())?;
        out.push_sql(") AS counted");
        Ok(())
    }
}

/// A list's total, counted at most [`COUNT_AHEAD`] records past the end of the page asked for,
/// so a page of a million-row list costs the page, not the list. Load the page first: a page
/// that holds records but is not full ends the list, and needs no count. Otherwise
/// `count(limit)` counts the list looking at no more than `limit` records (a `LIMIT` on the
/// ids); past the bound the total is the bound, marked inexact.
pub(crate) fn total(req: PageRequest, on_page: usize, count: impl FnOnce(i64) -> Result<Counted>) -> Result<Total> {
    let on_page = on_page as i64;
    if (on_page > 0 || req.offset() == 0) && on_page < req.limit() {
        return Ok(Total { count: req.offset() + on_page, exact: true });
    }
    let bound = req.offset() + req.limit() + COUNT_AHEAD;
    Ok(match count(bound + 1)? {
        Counted::Exact(n) => Total { count: n, exact: true },
        Counted::UpTo(n) if n > bound => Total { count: bound, exact: false },
        Counted::UpTo(n) => Total { count: n, exact: true },
    })
}

pub(crate) fn parse_enum<T>(raw: &str, parse: fn(&str) -> Option<T>, what: &str) -> Result<T> {
    parse(raw).ok_or_else(|| atrium_kernel::Error::internal(format!("stored {what} {raw:?} is unknown")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(page: i64, size: i64) -> PageRequest {
        PageRequest::new(Some(page), Some(size)).unwrap()
    }

    fn never(_: i64) -> Result<Counted> {
        panic!("a page that ends the list needs no count")
    }

    #[test]
    fn a_page_that_is_not_full_ends_the_list_without_a_count() {
        assert_eq!(total(req(1, 20), 7, never).unwrap(), Total { count: 7, exact: true });
        assert_eq!(total(req(3, 20), 5, never).unwrap(), Total { count: 45, exact: true });
        assert_eq!(total(req(1, 20), 0, never).unwrap(), Total { count: 0, exact: true });
    }

    #[test]
    fn a_full_or_empty_later_page_counts_up_to_the_bound_past_it() {
        // Page 2 of 20: the bound is 40 + 1,000 records, and one more is looked for.
        let mut asked = 0;
        let t = total(req(2, 20), 20, |limit| {
            asked = limit;
            Ok(Counted::UpTo(limit))
        })
        .unwrap();
        assert_eq!(asked, 40 + COUNT_AHEAD + 1);
        assert_eq!(t, Total { count: 40 + COUNT_AHEAD, exact: false });
        // Fewer than the bound: exact, also for an empty page past the end.
        assert_eq!(total(req(2, 20), 20, |_| Ok(Counted::UpTo(57))).unwrap(), Total { count: 57, exact: true });
        assert_eq!(total(req(9, 20), 0, |_| Ok(Counted::UpTo(57))).unwrap(), Total { count: 57, exact: true });
        // Exactly the bound is still exact.
        let bound = 20 + COUNT_AHEAD;
        assert_eq!(total(req(1, 20), 20, |_| Ok(Counted::UpTo(bound))).unwrap(), Total { count: bound, exact: true });
    }

    #[test]
    fn a_counter_kept_total_is_exact_past_any_bound() {
        assert_eq!(total(req(1, 20), 20, |_| Ok(Counted::Exact(1_000_000))).unwrap(), Total { count: 1_000_000, exact: true });
    }
}
