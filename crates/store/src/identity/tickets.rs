//! [`ChatTicketRepo`]: QR login tickets and the messaging-platform identities bound to users.
use super::{IdentityStore, UserFilter, load_user};
use crate::audit_log::write_audit;
use crate::error::db_error;
use crate::schema::{chat_tickets, users};
use crate::time::{from_db, to_db};
use async_trait::async_trait;
use atrium_identity::{ChatTicket, ChatTicketRepo, TicketStatus, UserCredentials};
use atrium_kernel::Reason;
use atrium_kernel::StrEnum;
use atrium_kernel::{AuditRecord, Error, Id, Result, Timestamp};
use chrono::NaiveDateTime;
use diesel::prelude::*;

fn ticket_from_row(
    row: (String, String, Option<String>, Option<i64>, NaiveDateTime, NaiveDateTime, Option<NaiveDateTime>),
) -> Result<ChatTicket> {
    Ok(ChatTicket {
        ticket: row.0,
        status: TicketStatus::parse(&row.1).ok_or_else(|| Error::internal("unknown ticket status"))?,
        chat_identity: row.2,
        user_id: row.3,
        created_at: from_db(row.4),
        expires_at: from_db(row.5),
        consumed_at: row.6.map(from_db),
    })
}

#[async_trait]
impl ChatTicketRepo for IdentityStore {
    async fn create_chat_ticket(&self, t: ChatTicket) -> Result<()> {
        self.db
            .write(move |conn| {
                // Tickets are short-lived: drop those expired a day ago as new ones come.
                let horizon = to_db(t.created_at - chrono::Duration::days(1));
                diesel::delete(chat_tickets::table.filter(chat_tickets::expires_at.lt(horizon))).execute(conn).map_err(db_error)?;
                diesel::insert_into(chat_tickets::table)
                    .values((
                        chat_tickets::ticket.eq(&t.ticket),
                        chat_tickets::status.eq(t.status.as_str()),
                        chat_tickets::created_at.eq(to_db(t.created_at)),
                        chat_tickets::expires_at.eq(to_db(t.expires_at)),
                    ))
                    .execute(conn)
                    .map_err(db_error)?;
                Ok(())
            })
            .await
    }

    async fn get_chat_ticket(&self, ticket: &str) -> Result<Option<ChatTicket>> {
        let ticket = ticket.to_owned();
        self.db
            .run(move |conn| {
                let row = chat_tickets::table
                    .find(&ticket)
                    .select((
                        chat_tickets::ticket,
                        chat_tickets::status,
                        chat_tickets::chat_identity,
                        chat_tickets::user_id,
                        chat_tickets::created_at,
                        chat_tickets::expires_at,
                        chat_tickets::consumed_at,
                    ))
                    .first(conn)
                    .optional()
                    .map_err(db_error)?;
                row.map(ticket_from_row).transpose()
            })
            .await
    }

    async fn scan_chat_ticket(&self, ticket: &str, status: TicketStatus, chat_identity: &str, user_id: Option<Id>) -> Result<bool> {
        let (ticket, identity) = (ticket.to_owned(), chat_identity.to_owned());
        self.db
            .write(move |conn| {
                let n = diesel::update(chat_tickets::table.find(&ticket).filter(chat_tickets::status.eq(TicketStatus::Pending.as_str())))
                    .set((
                        chat_tickets::status.eq(status.as_str()),
                        chat_tickets::chat_identity.eq(Some(identity)),
                        chat_tickets::user_id.eq(user_id),
                    ))
                    .execute(conn)
                    .map_err(db_error)?;
                Ok(n == 1)
            })
            .await
    }

    async fn consume_chat_ticket(&self, ticket: &str, status: TicketStatus, at: Timestamp) -> Result<bool> {
        let ticket = ticket.to_owned();
        self.db
            .write(move |conn| {
                let n = diesel::update(
                    chat_tickets::table
                        .find(&ticket)
                        .filter(chat_tickets::status.eq(status.as_str()))
                        .filter(chat_tickets::consumed_at.is_null()),
                )
                .set(chat_tickets::consumed_at.eq(Some(to_db(at))))
                .execute(conn)
                .map_err(db_error)?;
                Ok(n == 1)
            })
            .await
    }

    async fn find_user_by_chat_identity(&self, key: &str) -> Result<Option<UserCredentials>> {
        let key = key.to_owned();
        self.db.run(move |conn| load_user(conn, UserFilter::ChatIdentity(&key))).await
    }

    async fn bind_chat_identity(&self, user_id: Id, key: &str, at: Timestamp, audit: AuditRecord) -> Result<()> {
        let key = key.to_owned();
        self.db
            .write(move |conn| {
                diesel::update(users::table.find(user_id))
                    .set((users::chat_identity.eq(Some(key)), users::updated_at.eq(to_db(at))))
                    .execute(conn)
                    .map_err(|e| match db_error(e) {
                        Error::Conflict(..) => {
                            Error::conflict(Reason::Duplicate, "this messaging-platform account is bound to another user")
                        }
                        other => other,
                    })?;
                write_audit(conn, &audit)
            })
            .await
    }
}
