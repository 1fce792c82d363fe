//! A fixed piece of SQL as an expression that keeps its statement prepared.
//!
//! `diesel::dsl::sql` marks every statement it appears in as not to be cached, since its text
//! could differ from one call to the next; a statement with it is prepared anew each time.
//! [`static_sql`] takes only a `&'static str`, whose text never changes, so its statements
//! stay in Diesel's prepared-statement cache like any other. [`sql_per_backend`] is the same
//! with one text for PostgreSQL and another for SQLite.
use crate::db::MultiBackend;
use diesel::QueryResult;
use diesel::expression::{AppearsOnTable, Expression, SelectableExpression, TypedExpressionType, ValidGrouping, is_aggregate};
use diesel::pg::Pg;
use diesel::query_builder::{AstPass, QueryFragment, QueryId};
use diesel::sql_types::SqlType;
use diesel::sqlite::Sqlite;
use std::marker::PhantomData;

/// `sql`, an expression of SQL type `ST` (see the module documentation). It is taken as
/// neither an aggregate nor a column of any table: use it where `diesel::dsl::sql` would go.
pub(crate) fn static_sql<ST>(sql: &'static str) -> StaticSql<ST> {
    sql_per_backend(sql, sql)
}

/// `pg` on PostgreSQL and `sqlite` on SQLite: [`static_sql`] written differently per backend.
pub(crate) fn sql_per_backend<ST>(pg: &'static str, sqlite: &'static str) -> StaticSql<ST> {
    StaticSql { pg, sqlite, sql_type: PhantomData }
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct StaticSql<ST> {
    pg: &'static str,
    sqlite: &'static str,
    sql_type: PhantomData<ST>,
}

impl<ST> QueryId for StaticSql<ST> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<ST: SqlType + TypedExpressionType> Expression for StaticSql<ST> {
    type SqlType = ST;
}

impl<ST, QS: ?Sized> AppearsOnTable<QS> for StaticSql<ST> where Self: Expression {}

impl<ST, QS: ?Sized> SelectableExpression<QS> for StaticSql<ST> where Self: Expression {}

impl<ST, GB> ValidGrouping<GB> for StaticSql<ST> {
    type IsAggregate = is_aggregate::Never;
}

impl<ST> QueryFragment<MultiBackend> for StaticSql<ST> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, MultiBackend>) -> QueryResult<()> {
        let sql = match out.backend() {
            MultiBackend::Pg(_) => self.pg,
            MultiBackend::Sqlite(_) => self.sqlite,
        };
        out.push_sql(sql);
        Ok(())
    }
}

impl<ST> QueryFragment<Sqlite> for StaticSql<ST> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Sqlite>) -> QueryResult<()> {
        out.push_sql(self.sqlite);
        Ok(())
    }
}

impl<ST> QueryFragment<Pg> for StaticSql<ST> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql(self.pg);
        Ok(())
    }
}
