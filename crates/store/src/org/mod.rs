//! Repositories of the org domain: partners, tenants, employees and the audit
//! trail. Each write stores its audit record in the same transaction.
pub(crate) use crate::audit_log::{audit_created, write_audit};
use crate::crypto::FieldCipher;
use crate::db::Db;
use atrium_kernel::{Page, PageRequest, Result};

mod audit;
mod employees;
mod partners;
pub(crate) mod tenants;

/// The org repositories over the database; implements every org port.
#[derive(Clone)]
pub struct OrgStore {
    db: Db,
    cipher: FieldCipher,
}

impl OrgStore {
    pub fn new(db: Db, cipher: FieldCipher) -> Self {
        OrgStore { db, cipher }
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

pub(crate) fn page<T>(items: Vec<T>, total: i64, req: PageRequest) -> Page<T> {
    Page::new(items, total, req)
}

/// A list's total: `on_page` when page 1 already holds the whole result, else `count()`.
/// Load the page first, then ask for the total.
pub(crate) fn total(req: PageRequest, on_page: usize, count: impl FnOnce() -> Result<i64>) -> Result<i64> {
    if req.offset() == 0 && (on_page as i64) < req.limit() { Ok(on_page as i64) } else { count() }
}

pub(crate) fn parse_enum<T>(raw: &str, parse: fn(&str) -> Option<T>, what: &str) -> Result<T> {
    parse(raw).ok_or_else(|| atrium_kernel::Error::internal(format!("stored {what} {raw:?} is unknown")))
}
