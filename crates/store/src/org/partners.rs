use super::{OrgStore, count_up_to, like_pattern, lower, nothing, page, parse_enum, searchable, total};
use crate::db::DbConn;
use crate::error::db_error;
use crate::outbox;
use crate::schema::{partners, tenants, users};
use crate::time::{DbTime, from_db, to_db};
use async_trait::async_trait;
use atrium_kernel::Reason;
use atrium_kernel::StrEnum;
use atrium_kernel::{Effects, Error, Id, Page, Party, PartyType, Result, SortOrder};
use atrium_org::{Partner, PartnerQuery, PartnerRepo, PartnerSort, PartnerStatus};
use chrono::NaiveDateTime;
use diesel::prelude::*;

/// A `partners` row.
#[derive(Queryable, Selectable)]
#[diesel(table_name = partners)]
struct Row {
    id: i64,
    name: String,
    contact_name: Option<String>,
    phone: Option<String>,
    email: Option<String>,
    status: String,
    #[diesel(deserialize_as = DbTime)]
    created_at: NaiveDateTime,
    #[diesel(deserialize_as = DbTime)]
    updated_at: NaiveDateTime,
}

fn from_row(r: Row) -> Result<Partner> {
    Ok(Partner {
        id: r.id,
        name: r.name,
        contact_name: r.contact_name,
        phone: r.phone,
        email: r.email,
        status: parse_enum(&r.status, PartnerStatus::parse, "partner status")?,
        created_at: from_db(r.created_at),
        updated_at: from_db(r.updated_at),
    })
}

fn filtered<'a>(scope: Party, q: &'a PartnerQuery) -> partners::BoxedQuery<'a, crate::db::MultiBackend> {
    let mut query = partners::table.into_boxed();
    match scope {
        Party::Platform => {}
        Party::Partner { partner_id } => query = query.filter(partners::id.eq(partner_id)),
        // Fail closed: tenant users see no partners.
        Party::Tenant { .. } => query = query.filter(partners::id.eq(-1)),
    }
    if let Some(s) = q.status {
        query = query.filter(partners::status.eq(s.as_str()));
    }
    if q.list.keyword.as_deref().is_some_and(|k| !searchable(k)) {
        query = query.filter(nothing());
    } else if let Some(k) = &q.list.keyword {
        let p = like_pattern(k);
        query = query.filter(
            lower(partners::name.nullable())
                .like(p.clone())
                .escape('\\')
                .or(lower(partners::contact_name).like(p.clone()).escape('\\'))
                .or(partners::phone.like(p).escape('\\')),
        );
    }
    query
}

/// The partner if it is in `scope` (the platform sees every partner, a partner itself only,
/// a tenant none).
pub(crate) fn get(conn: &mut DbConn, scope: Party, id: Id) -> Result<Option<Partner>> {
    let q = PartnerQuery::default();
    let row: Option<Row> =
        filtered(scope, &q).filter(partners::id.eq(id)).select(Row::as_select()).first(conn).optional().map_err(db_error)?;
    row.map(from_row).transpose()
}

#[async_trait]
impl PartnerRepo for OrgStore {
    async fn list_partners(&self, scope: Party, q: PartnerQuery) -> Result<Page<Partner>> {
        self.db
            .run(move |conn| {
                let mut query = filtered(scope, &q).select(Row::as_select());
                query = match q.list.sort.unwrap_or((PartnerSort::Id, SortOrder::Desc)) {
                    (PartnerSort::Name, SortOrder::Asc) => query.order((partners::name.asc(), partners::id.asc())),
                    (PartnerSort::Name, SortOrder::Desc) => query.order((partners::name.desc(), partners::id.desc())),
                    (PartnerSort::Id | PartnerSort::CreatedAt, SortOrder::Asc) => query.order(partners::id.asc()),
                    (PartnerSort::Id | PartnerSort::CreatedAt, SortOrder::Desc) => query.order(partners::id.desc()),
                };
                let rows: Vec<Row> = query.offset(q.list.page.offset()).limit(q.list.page.limit()).load(conn).map_err(db_error)?;
                let total = total(q.list.page, rows.len(), |n| count_up_to(filtered(scope, &q).select(partners::id).limit(n), conn))?;
                Ok(page(rows.into_iter().map(from_row).collect::<Result<_>>()?, total, q.list.page))
            })
            .await
    }

    async fn get_partner(&self, scope: Party, id: Id) -> Result<Option<Partner>> {
        self.db.run(move |conn| get(conn, scope, id)).await
    }

    async fn insert_partner(&self, p: Partner, effects: Effects) -> Result<Partner> {
        self.db
            .write(move |conn| {
                let id: i64 = diesel::insert_into(partners::table)
                    .values((
                        partners::name.eq(&p.name),
                        partners::contact_name.eq(&p.contact_name),
                        partners::phone.eq(&p.phone),
                        partners::email.eq(&p.email),
                        partners::status.eq(p.status.as_str()),
                        partners::created_at.eq(to_db(p.created_at)),
                        partners::updated_at.eq(to_db(p.updated_at)),
                    ))
                    .returning(partners::id)
                    .get_result(conn)
                    .map_err(db_error)?;
                outbox::write_created(conn, effects, id)?;
                Ok(Partner { id, ..p })
            })
            .await
    }

    async fn update_partner(&self, p: Partner, effects: Effects) -> Result<Partner> {
        self.db
            .write(move |conn| {
                let n = diesel::update(partners::table.find(p.id))
                    .set((
                        partners::name.eq(&p.name),
                        partners::contact_name.eq(&p.contact_name),
                        partners::phone.eq(&p.phone),
                        partners::email.eq(&p.email),
                        partners::status.eq(p.status.as_str()),
                        partners::updated_at.eq(to_db(p.updated_at)),
                    ))
                    .execute(conn)
                    .map_err(db_error)?;
                if n == 0 {
                    return Err(Error::NotFound("partner"));
                }
                outbox::write(conn, &effects)?;
                Ok(p)
            })
            .await
    }

    async fn delete_partner(&self, id: Id, cascade: bool, effects: Effects) -> Result<Vec<Id>> {
        // Tokens the deletion revokes are revoked as of the deletion.
        let at = effects.audit.as_ref().map_or_else(chrono::Utc::now, |a| a.at);
        self.db
            .write(move |conn| {
                let tenant_ids: Vec<i64> =
                    tenants::table.filter(tenants::partner_id.eq(id)).select(tenants::id).load(conn).map_err(db_error)?;
                let partner_users: Vec<i64> =
                    users::table.filter(users::partner_id.eq(id)).select(users::id).load(conn).map_err(db_error)?;
                let projects = crate::docs::party_project_count(conn, PartyType::Partner, id)?;
                if !cascade && (!tenant_ids.is_empty() || !partner_users.is_empty() || projects > 0) {
                    return Err(Error::conflict(
                        Reason::InUse,
                        format!(
                            "the partner still has {} tenant(s), {} user(s) and {projects} document project(s); \
                         delete them first or pass cascade=true",
                            tenant_ids.len(),
                            partner_users.len()
                        ),
                    ));
                }
                let mut removed = Vec::new();
                for t in tenant_ids {
                    removed.extend(super::tenants::delete_cascade(conn, t, at)?);
                }
                crate::docs::revoke_tokens_issued_by(conn, &partner_users, at)?;
                crate::docs::remove_party_documents(conn, PartyType::Partner, id)?;
                diesel::delete(users::table.filter(users::partner_id.eq(id))).execute(conn).map_err(db_error)?;
                removed.extend(partner_users);
                diesel::delete(crate::schema::roles::table.filter(crate::schema::roles::owner_partner_id.eq(id)))
                    .execute(conn)
                    .map_err(db_error)?;
                let n = diesel::delete(partners::table.find(id)).execute(conn).map_err(db_error)?;
                if n == 0 {
                    return Err(Error::NotFound("partner"));
                }
                outbox::write(conn, &effects)?;
                Ok(removed)
            })
            .await
    }
}
