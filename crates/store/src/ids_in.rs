//! `column IN (ids)` that SQLite keeps prepared.
//!
//! Diesel writes `eq_any` as one placeholder per value and never keeps such a statement in its
//! cache, so on SQLite every list's items, refunds or rows-by-id were prepared anew on every
//! request. [`ids_in`] sends SQLite the ids as one JSON array instead
//! (`column IN (SELECT value FROM json_each(?))`): one statement for any number of ids, kept
//! prepared, and SQLite still looks each id up in the column's index. PostgreSQL parses an
//! unnamed statement in the same round trip as it runs it, so there the list stays as it was.
use crate::db::DbConn;
use diesel::QueryResult;
use diesel::backend::Backend;
use diesel::expression::{AppearsOnTable, Expression, SelectableExpression, ValidGrouping, is_aggregate};
use diesel::query_builder::{AstPass, QueryFragment, QueryId};
use diesel::serialize::ToSql;
use diesel::sql_types::{BigInt, Bool, HasSqlType, Text};

/// Values per `IN (…)` list where a caller splits a long list (a day's trade bill may name
/// thousands): well under both backends' bind-parameter limits.
pub(crate) const IN_LIST: usize = 500;

/// `column IN (ids)` for `conn`'s backend (see the module documentation).
pub(crate) fn ids_in<C>(conn: &DbConn, column: C, ids: &[i64]) -> IdsIn<C> {
    let form = match conn {
        DbConn::Sqlite(_) => Form::Json(json_array(ids)),
        DbConn::Pg(_) => Form::List(ids.to_vec()),
    };
    IdsIn { column, form }
}

fn json_array(ids: &[i64]) -> String {
    let mut json = String::with_capacity(2 + ids.len() * 8);
    json.push('[');
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            json.push(',');
        }
        json.push_str(&id.to_string());
    }
    json.push(']');
    json
}

#[derive(Debug, Clone)]
pub(crate) struct IdsIn<C> {
    column: C,
    form: Form,
}

#[derive(Debug, Clone)]
enum Form {
    Json(String),
    List(Vec<i64>),
}

/// The query's identity for the prepared-statement cache. On SQLite the text is the same for
/// any ids (one JSON bind), so a query holding an `IdsIn` is found in the cache by its type,
/// without writing its SQL out again on every call. The PostgreSQL forms are never cached
/// (see `walk_ast`), so the one identity for both forms cannot hand out the wrong statement.
impl<C: QueryId> QueryId for IdsIn<C> {
    type QueryId = IdsIn<C::QueryId>;
    const HAS_STATIC_QUERY_ID: bool = C::HAS_STATIC_QUERY_ID;
}

impl<C: Expression> Expression for IdsIn<C> {
    type SqlType = Bool;
}

impl<C: AppearsOnTable<QS>, QS: ?Sized> AppearsOnTable<QS> for IdsIn<C> {}

impl<C: SelectableExpression<QS>, QS: ?Sized> SelectableExpression<QS> for IdsIn<C> {}

impl<C, GB> ValidGrouping<GB> for IdsIn<C> {
    type IsAggregate = is_aggregate::Never;
}

impl<C, DB> QueryFragment<DB> for IdsIn<C>
where
    C: QueryFragment<DB>,
    DB: Backend + HasSqlType<Text> + HasSqlType<BigInt>,
    String: ToSql<Text, DB>,
    i64: ToSql<BigInt, DB>,
{
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        match &self.form {
            Form::Json(json) => {
                self.column.walk_ast(out.reborrow())?;
                out.push_sql(" IN (SELECT value FROM json_each(");
                out.push_bind_param::<Text, String>(json)?;
                out.push_sql("))");
            }
            // No ids: a condition that holds for no row, as `IN ()` would.
            Form::List(ids) if ids.is_empty() => {
                out.unsafe_to_cache_prepared();
                out.push_sql("1 = 0")
            }
            Form::List(ids) => {
                out.unsafe_to_cache_prepared();
                self.column.walk_ast(out.reborrow())?;
                out.push_sql(" IN (");
                for (i, id) in ids.iter().enumerate() {
                    if i > 0 {
                        out.push_sql(", ");
                    }
                    out.push_bind_param::<BigInt, i64>(id)?;
                }
                out.push_sql(")");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::json_array;

    #[test]
    fn ids_are_a_json_array_of_integers() {
        assert_eq!(json_array(&[]), "[]");
        assert_eq!(json_array(&[7]), "[7]");
        assert_eq!(json_array(&[1, -2, i64::MAX]), format!("[1,-2,{}]", i64::MAX));
    }
}
