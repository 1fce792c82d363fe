//! Writing the audit trail, inside the transaction of the change it records.
use crate::db::DbConn;
use crate::error::db_error;
use crate::schema::{audit_logs, tenants};
use crate::time::to_db;
use atrium_kernel::{AuditRecord, Id, Result};
use diesel::prelude::*;

/// The partners of the tenants a write's records belong to, each looked up once per write
/// (the audit entry and the events of one change mostly belong to one tenant).
#[derive(Default)]
pub(crate) struct Owners(Vec<(Id, Option<Id>)>);

impl Owners {
    /// The partner of a record owned by `partner` and `tenant`: `partner` when given, else
    /// the tenant's partner now (none for a record of no tenant).
    pub(crate) fn partner(&mut self, conn: &mut DbConn, partner: Option<Id>, tenant: Option<Id>) -> Result<Option<Id>> {
        let (None, Some(tenant)) = (partner, tenant) else { return Ok(partner) };
        if let Some(&(_, known)) = self.0.iter().find(|(t, _)| *t == tenant) {
            return Ok(known);
        }
        let found =
            tenants::table.find(tenant).select(tenants::partner_id).first::<Option<Id>>(conn).optional().map_err(db_error)?.flatten();
        self.0.push((tenant, found));
        Ok(found)
    }
}

/// Appends an audit record inside the caller's transaction. A record owned by a tenant gets
/// the tenant's partner here, so services need not look it up before writing.
pub(crate) fn write_audit(conn: &mut DbConn, a: &AuditRecord) -> Result<()> {
    insert_audit(conn, a, &mut Owners::default())
}

/// [`write_audit`], with the tenants' partners looked up so far in this write.
pub(crate) fn insert_audit(conn: &mut DbConn, a: &AuditRecord, owners: &mut Owners) -> Result<()> {
    let partner_id = owners.partner(conn, a.partner_id, a.tenant_id)?;
    diesel::insert_into(audit_logs::table)
        .values((
            audit_logs::at.eq(to_db(a.at)),
            audit_logs::actor_user_id.eq(a.actor_user_id),
            audit_logs::ip.eq(&a.ip),
            audit_logs::request_id.eq(&a.request_id),
            audit_logs::action.eq(&a.action),
            audit_logs::target_type.eq(a.target_type),
            audit_logs::target_id.eq(a.target_id),
            audit_logs::partner_id.eq(partner_id),
            audit_logs::tenant_id.eq(a.tenant_id),
            audit_logs::before_json.eq(a.before.as_ref().map(|v| v.to_string())),
            audit_logs::after_json.eq(a.after.as_ref().map(|v| v.to_string())),
        ))
        .execute(conn)
        .map_err(db_error)?;
    Ok(())
}

/// Audit for a create: the target id is known only after the insert.
pub(crate) fn audit_created(conn: &mut DbConn, a: AuditRecord, id: Id) -> Result<()> {
    write_audit(conn, &a.created(id))
}
