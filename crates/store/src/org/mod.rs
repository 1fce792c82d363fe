//! Repositories of the org domain: partners, tenants, employees, users, roles and the audit
//! trail. Each write stores its audit record in the same transaction.
use crate::crypto::FieldCipher;
use crate::db::{Db, DbConn};
use crate::error::db_error;
use crate::schema::audit_logs;
use crate::time::to_db;
use atrium_kernel::{AuditRecord, Id, Page, PageRequest, Result};
use diesel::prelude::*;

mod audit;
mod employees;
mod partners;
mod roles;
mod tenants;
mod users;

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

/// `%keyword%` with LIKE's wildcards escaped (use with `.escape('\\')`). The keyword is
/// already lower-cased; columns are compared through `lower()` so both backends agree.
pub(crate) fn like_pattern(keyword: &str) -> String {
    let escaped = keyword.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_");
    format!("%{escaped}%")
}

/// Appends an audit record inside the caller's transaction.
pub(crate) fn write_audit(conn: &mut DbConn, a: &AuditRecord) -> Result<()> {
    diesel::insert_into(audit_logs::table)
        .values((
            audit_logs::at.eq(to_db(a.at)),
            audit_logs::actor_user_id.eq(a.actor_user_id),
            audit_logs::ip.eq(&a.ip),
            audit_logs::request_id.eq(&a.request_id),
            audit_logs::action.eq(&a.action),
            audit_logs::target_type.eq(a.target_type),
            audit_logs::target_id.eq(a.target_id),
            audit_logs::partner_id.eq(a.partner_id),
            audit_logs::tenant_id.eq(a.tenant_id),
            audit_logs::before_json.eq(a.before.as_ref().map(|v| v.to_string())),
            audit_logs::after_json.eq(a.after.as_ref().map(|v| v.to_string())),
        ))
        .execute(conn)
        .map_err(db_error)?;
    Ok(())
}

/// Audit for a create: the target id is known only after the insert.
pub(crate) fn audit_created(conn: &mut DbConn, mut a: AuditRecord, id: Id) -> Result<()> {
    a.target_id = Some(id);
    if a.target_type == "tenant" {
        a.tenant_id = Some(id);
    }
    if a.target_type == "partner" {
        a.partner_id = Some(id);
    }
    if let Some(serde_json::Value::Object(map)) = a.after.as_mut() {
        map.insert("id".into(), serde_json::Value::from(id));
    }
    write_audit(conn, &a)
}

pub(crate) fn page<T>(items: Vec<T>, total: i64, req: PageRequest) -> Page<T> {
    Page::new(items, total, req)
}

pub(crate) fn parse_enum<T>(raw: &str, parse: fn(&str) -> Option<T>, what: &str) -> Result<T> {
    parse(raw).ok_or_else(|| atrium_kernel::Error::internal(format!("stored {what} {raw:?} is unknown")))
}
