//! The outbox: what a write leaves behind ([`Effects`]: its audit entry, its jobs, its events),
//! stored by one function in the caller's database transaction, so the change and its effects
//! commit together or not at all. Every repository's write goes through [`write`] (or
//! [`write_created`] for a create, whose id is known only after the insert).
use crate::audit_log::{Owners, insert_audit};
use crate::db::DbConn;
use crate::error::db_error;
use crate::jobs::enqueue_in;
use crate::schema::events;
use crate::time::to_db;
use atrium_kernel::{Effects, Event, Id, Result};
use diesel::prelude::*;

/// Stores `effects` within the caller's transaction.
pub(crate) fn write(conn: &mut DbConn, effects: &Effects) -> Result<()> {
    let mut owners = Owners::default();
    if let Some(audit) = &effects.audit {
        insert_audit(conn, audit, &mut owners)?;
    }
    for event in &effects.events {
        write_event(conn, event, &mut owners)?;
    }
    for job in &effects.jobs {
        enqueue_in(conn, job)?;
    }
    Ok(())
}

/// Stores the effects of a create of record `id` within the caller's transaction
/// ([`Effects::created`]).
pub(crate) fn write_created(conn: &mut DbConn, effects: Effects, id: Id) -> Result<()> {
    write(conn, &effects.created(id))
}

/// Stores one event; its partner, when not given, is its tenant's partner now.
fn write_event(conn: &mut DbConn, e: &Event, owners: &mut Owners) -> Result<()> {
    let partner_id = owners.partner(conn, e.partner_id, e.tenant_id)?;
    let values = (
        events::kind.eq(e.kind),
        events::tenant_id.eq(e.tenant_id),
        events::partner_id.eq(partner_id),
        events::subject_id.eq(e.subject),
        events::data.eq(e.data.to_string()),
        events::occurred_at.eq(to_db(e.at)),
        events::created_at.eq(to_db(chrono::Utc::now())),
    );
    diesel::insert_into(events::table).values(values).execute(conn).map_err(db_error)?;
    Ok(())
}
