use super::{OrgStore, count_up_to, page, total};
use crate::db::MultiBackend;
use crate::error::db_error;
use crate::schema::audit_logs;
use crate::time::{from_db, to_db};
use async_trait::async_trait;
use atrium_kernel::{Page, Party, Result};
use atrium_org::{AuditEntry, AuditQuery, AuditRepo};
use chrono::NaiveDateTime;
use diesel::prelude::*;

type Row = (
    i64,
    NaiveDateTime,
    Option<i64>,
    Option<String>,
    Option<String>,
    String,
    String,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<String>,
    Option<String>,
);

fn filtered(scope: Party, q: &AuditQuery) -> audit_logs::BoxedQuery<'static, MultiBackend> {
    let mut query = audit_logs::table.into_boxed();
    query = match scope {
        Party::Platform => query,
        Party::Partner { partner_id } => query.filter(audit_logs::partner_id.eq(partner_id)),
        Party::Tenant { tenant_id, .. } => query.filter(audit_logs::tenant_id.eq(tenant_id)),
    };
    if let Some(a) = q.actor_user_id {
        query = query.filter(audit_logs::actor_user_id.eq(a));
    }
    if let Some(t) = &q.target_type {
        query = query.filter(audit_logs::target_type.eq(t.clone()));
    }
    if let Some(t) = q.target_id {
        query = query.filter(audit_logs::target_id.eq(t));
    }
    if let Some(a) = &q.action {
        query = query.filter(audit_logs::action.eq(a.clone()));
    }
    if let Some(f) = q.from {
        query = query.filter(audit_logs::at.ge(to_db(f)));
    }
    if let Some(t) = q.to {
        query = query.filter(audit_logs::at.lt(to_db(t)));
    }
    query
}

fn json(raw: Option<String>) -> Option<serde_json::Value> {
    raw.and_then(|s| serde_json::from_str(&s).ok())
}

#[async_trait]
impl AuditRepo for OrgStore {
    async fn list_audit(&self, scope: Party, q: AuditQuery) -> Result<Page<AuditEntry>> {
        self.db
            .run(move |conn| {
                let rows: Vec<Row> = filtered(scope, &q)
                    .select((
                        audit_logs::id,
                        audit_logs::at,
                        audit_logs::actor_user_id,
                        audit_logs::ip,
                        audit_logs::request_id,
                        audit_logs::action,
                        audit_logs::target_type,
                        audit_logs::target_id,
                        audit_logs::partner_id,
                        audit_logs::tenant_id,
                        audit_logs::before_json,
                        audit_logs::after_json,
                    ))
                    .order(audit_logs::id.desc())
                    .offset(q.page.offset())
                    .limit(q.page.limit())
                    .load(conn)
                    .map_err(db_error)?;
                let total = total(q.page, rows.len(), |n| count_up_to(filtered(scope, &q).select(audit_logs::id).limit(n), conn))?;
                let items = rows
                    .into_iter()
                    .map(|r| AuditEntry {
                        id: r.0,
                        at: from_db(r.1),
                        actor_user_id: r.2,
                        ip: r.3,
                        request_id: r.4,
                        action: r.5,
                        target_type: r.6,
                        target_id: r.7,
                        partner_id: r.8,
                        tenant_id: r.9,
                        before: json(r.10),
                        after: json(r.11),
                        redacted: false,
                    })
                    .collect();
                Ok(page(items, total, q.page))
            })
            .await
    }
}
