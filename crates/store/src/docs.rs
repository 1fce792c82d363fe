//! [`DocsRepo`] over the database: projects, documents and API tokens.
use crate::audit_log::audit_created;
use crate::db::{Db, DbConn};
use crate::error::db_error;
use crate::schema::{doc_projects, doc_token_projects, doc_tokens, documents, tenants};
use crate::time::{DbTime, DbTimeOpt, from_db, to_db};
use async_trait::async_trait;
use atrium_docs::*;
use atrium_kernel::StrEnum;
use atrium_kernel::{Error, Id, Page, PageRequest, Party, PartyType, Result, Timestamp};
use chrono::NaiveDateTime;
use diesel::prelude::*;
use std::collections::HashMap;

/// [`DocsRepo`] over the database.
#[derive(Clone)]
pub struct DocsStore {
    db: Db,
}

impl DocsStore {
    pub fn new(db: Db) -> Self {
        DocsStore { db }
    }
}

/// Removes a deleted party's document projects (their documents go with them) and its API
/// tokens, so nothing it issued keeps working.
pub(crate) fn remove_party_documents(conn: &mut DbConn, party_type: PartyType, party_id: Id) -> Result<()> {
    diesel::delete(
        doc_tokens::table.filter(doc_tokens::party_type.eq(party_type.as_str())).filter(doc_tokens::party_id.eq(Some(party_id))),
    )
    .execute(conn)
    .map_err(db_error)?;
    diesel::delete(
        doc_projects::table.filter(doc_projects::party_type.eq(party_type.as_str())).filter(doc_projects::party_id.eq(Some(party_id))),
    )
    .execute(conn)
    .map_err(db_error)?;
    Ok(())
}

/// How many document projects a party owns (a plain delete of the party refuses while any do).
pub(crate) fn party_project_count(conn: &mut DbConn, party_type: PartyType, party_id: Id) -> Result<i64> {
    doc_projects::table
        .filter(doc_projects::party_type.eq(party_type.as_str()))
        .filter(doc_projects::party_id.eq(Some(party_id)))
        .count()
        .get_result(conn)
        .map_err(db_error)
}

/// Revokes the live API tokens issued by users about to be deleted: a token never outlives
/// the user who vouched for it.
pub(crate) fn revoke_tokens_issued_by(conn: &mut DbConn, user_ids: &[Id], at: Timestamp) -> Result<()> {
    if user_ids.is_empty() {
        return Ok(());
    }
    diesel::update(doc_tokens::table.filter(doc_tokens::created_by.eq_any(user_ids.to_vec())).filter(doc_tokens::revoked_at.is_null()))
        .set(doc_tokens::revoked_at.eq(Some(to_db(at))))
        .execute(conn)
        .map_err(db_error)?;
    Ok(())
}

/// Why a live token cannot be used: its owner's standing, then its issuer's.
fn suspension(conn: &mut DbConn, token: &ApiToken) -> Result<Option<String>> {
    let owner = match (token.owner.party_type(), token.owner.party_id()) {
        (PartyType::Partner, Some(partner_id)) => Party::Partner { partner_id },
        (PartyType::Tenant, Some(tenant_id)) => Party::Tenant { tenant_id, partner_id: None },
        _ => Party::Platform,
    };
    if let Some(why) = crate::standing::party_standing(conn, owner)?.refusal("this token") {
        return Ok(Some(why));
    }
    let Some(issuer) = token.created_by else { return Ok(None) };
    Ok(match crate::identity::load_user(conn, crate::identity::UserFilter::Id(issuer))? {
        None => Some("the user who issued it no longer exists".into()),
        Some(c) if c.user.status != atrium_identity::UserStatus::Active => Some("the user who issued it is disabled".into()),
        Some(c) => c.standing.refusal("the user who issued it"),
    })
}

fn owner_from_db(party_type: &str, party_id: Option<i64>, what: &str, id: i64) -> Result<Owner> {
    PartyType::parse(party_type)
        .and_then(|t| Owner::from_parts(t, party_id))
        .ok_or_else(|| Error::internal(format!("{what} {id} has an inconsistent owner ({party_type})")))
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = doc_projects)]
struct ProjectRow {
    id: i64,
    name: String,
    party_type: String,
    party_id: Option<i64>,
    #[diesel(deserialize_as = DbTime)]
    created_at: NaiveDateTime,
    #[diesel(deserialize_as = DbTime)]
    updated_at: NaiveDateTime,
}

impl TryFrom<ProjectRow> for Project {
    type Error = Error;
    fn try_from(r: ProjectRow) -> Result<Project> {
        Ok(Project {
            owner: owner_from_db(&r.party_type, r.party_id, "project", r.id)?,
            id: r.id,
            name: r.name,
            created_at: from_db(r.created_at),
            updated_at: from_db(r.updated_at),
        })
    }
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = doc_tokens)]
struct TokenRow {
    id: i64,
    name: String,
    party_type: String,
    party_id: Option<i64>,
    all_projects: bool,
    created_by: Option<i64>,
    #[diesel(deserialize_as = DbTime)]
    created_at: NaiveDateTime,
    #[diesel(deserialize_as = DbTimeOpt)]
    expires_at: Option<NaiveDateTime>,
    #[diesel(deserialize_as = DbTimeOpt)]
    revoked_at: Option<NaiveDateTime>,
    #[diesel(deserialize_as = DbTimeOpt)]
    last_used_at: Option<NaiveDateTime>,
}

impl TokenRow {
    /// `listed` are the token's rows of `doc_token_projects`, used when it is limited.
    fn into_token(self, listed: Vec<Id>) -> Result<ApiToken> {
        let projects = if self.all_projects {
            ProjectGrant::All
        } else {
            let mut ids = listed;
            ids.sort_unstable();
            ProjectGrant::Only(ids)
        };
        Ok(ApiToken {
            owner: owner_from_db(&self.party_type, self.party_id, "API token", self.id)?,
            id: self.id,
            name: self.name,
            projects,
            created_by: self.created_by,
            created_at: from_db(self.created_at),
            expires_at: self.expires_at.map(from_db),
            revoked_at: self.revoked_at.map(from_db),
            last_used_at: self.last_used_at.map(from_db),
            suspended: None,
        })
    }
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = documents)]
struct DocumentRow {
    id: i64,
    project_id: i64,
    parent_id: Option<i64>,
    name: String,
    content: String,
    sort: i64,
    depth: i32,
    author_token_id: Option<i64>,
    #[diesel(deserialize_as = DbTime)]
    created_at: NaiveDateTime,
    #[diesel(deserialize_as = DbTime)]
    updated_at: NaiveDateTime,
}

impl From<DocumentRow> for Document {
    fn from(r: DocumentRow) -> Document {
        Document {
            id: r.id,
            project_id: r.project_id,
            parent_id: r.parent_id,
            name: r.name,
            content: r.content,
            sort: r.sort,
            depth: r.depth,
            author_token_id: r.author_token_id,
            created_at: from_db(r.created_at),
            updated_at: from_db(r.updated_at),
        }
    }
}

/// The projects listed for each of `token_ids`.
fn listed_projects(conn: &mut DbConn, token_ids: &[Id]) -> Result<HashMap<Id, Vec<Id>>> {
    let mut map: HashMap<Id, Vec<Id>> = HashMap::new();
    if token_ids.is_empty() {
        return Ok(map);
    }
    let rows: Vec<(i64, i64)> = doc_token_projects::table
        .filter(doc_token_projects::token_id.eq_any(token_ids))
        .select((doc_token_projects::token_id, doc_token_projects::project_id))
        .load(conn)
        .map_err(db_error)?;
    for (token_id, project_id) in rows {
        map.entry(token_id).or_default().push(project_id);
    }
    Ok(map)
}

fn load_tokens(conn: &mut DbConn, rows: Vec<TokenRow>) -> Result<Vec<ApiToken>> {
    let limited: Vec<Id> = rows.iter().filter(|r| !r.all_projects).map(|r| r.id).collect();
    let mut listed = listed_projects(conn, &limited)?;
    rows.into_iter()
        .map(|r| {
            let ids = listed.remove(&r.id).unwrap_or_default();
            r.into_token(ids)
        })
        .collect()
}

fn load_token(conn: &mut DbConn, row: Option<TokenRow>) -> Result<Option<ApiToken>> {
    Ok(match row {
        Some(r) => load_tokens(conn, vec![r])?.pop(),
        None => None,
    })
}

#[async_trait]
impl DocsRepo for DocsStore {
    async fn create_project(&self, p: NewProject) -> Result<Project> {
        self.db
            .write(move |conn| {
                let at = to_db(p.at);
                let id: i64 = diesel::insert_into(doc_projects::table)
                    .values((
                        doc_projects::name.eq(&p.name),
                        doc_projects::party_type.eq(p.owner.party_type().as_str()),
                        doc_projects::party_id.eq(p.owner.party_id()),
                        doc_projects::created_at.eq(at),
                        doc_projects::updated_at.eq(at),
                    ))
                    .returning(doc_projects::id)
                    .get_result(conn)
                    .map_err(db_error)?;
                audit_created(conn, p.audit, id)?;
                Ok(Project { id, name: p.name, owner: p.owner, created_at: from_db(at), updated_at: from_db(at) })
            })
            .await
    }

    async fn get_project(&self, id: Id) -> Result<Option<Project>> {
        self.db
            .run(move |conn| {
                let row: Option<ProjectRow> =
                    doc_projects::table.find(id).select(ProjectRow::as_select()).first(conn).optional().map_err(db_error)?;
                row.map(Project::try_from).transpose()
            })
            .await
    }

    async fn list_projects(&self, scope: Party, page: PageRequest) -> Result<Page<Project>> {
        self.db
            .run(move |conn| {
                let of_owner = || {
                    let q = doc_projects::table.into_boxed();
                    match scope {
                        Party::Platform => q,
                        Party::Partner { partner_id } => q.filter(
                            doc_projects::party_type.eq("partner").and(doc_projects::party_id.eq(partner_id)).or(doc_projects::party_type
                                .eq("tenant")
                                .and(
                                    doc_projects::party_id
                                        .eq_any(tenants::table.filter(tenants::partner_id.eq(partner_id)).select(tenants::id.nullable())),
                                )),
                        ),
                        Party::Tenant { tenant_id, .. } => {
                            q.filter(doc_projects::party_type.eq("tenant").and(doc_projects::party_id.eq(tenant_id)))
                        }
                    }
                };
                let total: i64 = of_owner().count().get_result(conn).map_err(db_error)?;
                let rows: Vec<ProjectRow> = of_owner()
                    .order(doc_projects::id)
                    .limit(page.limit())
                    .offset(page.offset())
                    .select(ProjectRow::as_select())
                    .load(conn)
                    .map_err(db_error)?;
                let items = rows.into_iter().map(Project::try_from).collect::<Result<Vec<_>>>()?;
                Ok(Page::new(items, total, page))
            })
            .await
    }

    async fn create_token(&self, t: NewToken) -> Result<ApiToken> {
        self.db
            .write(move |conn| {
                let id: i64 = diesel::insert_into(doc_tokens::table)
                    .values((
                        doc_tokens::name.eq(&t.name),
                        doc_tokens::token_hash.eq(&t.token_hash),
                        doc_tokens::party_type.eq(t.owner.party_type().as_str()),
                        doc_tokens::party_id.eq(t.owner.party_id()),
                        doc_tokens::all_projects.eq(t.projects == ProjectGrant::All),
                        doc_tokens::created_by.eq(t.created_by),
                        doc_tokens::created_at.eq(to_db(t.created_at)),
                        doc_tokens::expires_at.eq(t.expires_at.map(to_db)),
                    ))
                    .returning(doc_tokens::id)
                    .get_result(conn)
                    .map_err(db_error)?;
                // One row at a time: batch inserts do not compile through the MultiConnection.
                for project_id in t.projects.ids().unwrap_or_default() {
                    diesel::insert_into(doc_token_projects::table)
                        .values((doc_token_projects::token_id.eq(id), doc_token_projects::project_id.eq(project_id)))
                        .execute(conn)
                        .map_err(db_error)?;
                }
                audit_created(conn, t.audit, id)?;
                let row = doc_tokens::table.find(id).select(TokenRow::as_select()).first(conn).optional().map_err(db_error)?;
                load_token(conn, row)?.ok_or_else(|| Error::internal("created API token vanished"))
            })
            .await
    }

    async fn find_token_by_hash(&self, token_hash: &str) -> Result<Option<ApiToken>> {
        let hash = token_hash.to_owned();
        self.db
            .run(move |conn| {
                let row = doc_tokens::table
                    .filter(doc_tokens::token_hash.eq(&hash))
                    .select(TokenRow::as_select())
                    .first(conn)
                    .optional()
                    .map_err(db_error)?;
                let Some(mut token) = load_token(conn, row)? else { return Ok(None) };
                token.suspended = suspension(conn, &token)?;
                Ok(Some(token))
            })
            .await
    }

    async fn get_token(&self, id: Id) -> Result<Option<ApiToken>> {
        self.db
            .run(move |conn| {
                let row = doc_tokens::table.find(id).select(TokenRow::as_select()).first(conn).optional().map_err(db_error)?;
                load_token(conn, row)
            })
            .await
    }

    async fn tenant_partner(&self, tenant_id: Id) -> Result<Option<Id>> {
        self.db
            .run(move |conn| {
                let p: Option<Option<i64>> =
                    tenants::table.find(tenant_id).select(tenants::partner_id).first(conn).optional().map_err(db_error)?;
                Ok(p.flatten())
            })
            .await
    }

    async fn list_tokens(&self, scope: Party, page: PageRequest) -> Result<Page<ApiToken>> {
        self.db
            .run(move |conn| {
                let of_owner = || {
                    let q = doc_tokens::table.into_boxed();
                    match scope {
                        Party::Platform => q,
                        Party::Partner { partner_id } => q.filter(
                            doc_tokens::party_type.eq("partner").and(doc_tokens::party_id.eq(partner_id)).or(doc_tokens::party_type
                                .eq("tenant")
                                .and(
                                    doc_tokens::party_id
                                        .eq_any(tenants::table.filter(tenants::partner_id.eq(partner_id)).select(tenants::id.nullable())),
                                )),
                        ),
                        Party::Tenant { tenant_id, .. } => {
                            q.filter(doc_tokens::party_type.eq("tenant").and(doc_tokens::party_id.eq(tenant_id)))
                        }
                    }
                };
                let total: i64 = of_owner().count().get_result(conn).map_err(db_error)?;
                let rows: Vec<TokenRow> = of_owner()
                    .order(doc_tokens::id)
                    .limit(page.limit())
                    .offset(page.offset())
                    .select(TokenRow::as_select())
                    .load(conn)
                    .map_err(db_error)?;
                Ok(Page::new(load_tokens(conn, rows)?, total, page))
            })
            .await
    }

    async fn revoke_token(&self, id: Id, at: Timestamp, effects: atrium_kernel::Effects) -> Result<()> {
        self.db
            .write(move |conn| {
                let revoked = diesel::update(doc_tokens::table.find(id).filter(doc_tokens::revoked_at.is_null()))
                    .set(doc_tokens::revoked_at.eq(Some(to_db(at))))
                    .execute(conn)
                    .map_err(db_error)?;
                if revoked > 0 {
                    crate::outbox::write(conn, &effects)?;
                }
                Ok(())
            })
            .await
    }

    async fn touch_token(&self, id: Id, at: Timestamp, stale_before: Timestamp) -> Result<bool> {
        self.db
            .write(move |conn| {
                let n = diesel::update(
                    doc_tokens::table
                        .find(id)
                        .filter(doc_tokens::last_used_at.is_null().or(doc_tokens::last_used_at.le(to_db(stale_before)))),
                )
                .set(doc_tokens::last_used_at.eq(Some(to_db(at))))
                .execute(conn)
                .map_err(db_error)?;
                Ok(n == 1)
            })
            .await
    }

    async fn get_document(&self, id: Id) -> Result<Option<Document>> {
        self.db
            .run(move |conn| {
                let row: Option<DocumentRow> =
                    documents::table.find(id).select(DocumentRow::as_select()).first(conn).optional().map_err(db_error)?;
                Ok(row.map(Document::from))
            })
            .await
    }

    async fn document_depth(&self, project_id: Id, id: Id) -> Result<Option<i32>> {
        self.db
            .run(move |conn| {
                documents::table
                    .filter(documents::project_id.eq(project_id))
                    .filter(documents::id.eq(id))
                    .select(documents::depth)
                    .first(conn)
                    .optional()
                    .map_err(db_error)
            })
            .await
    }

    async fn insert_document(&self, d: NewDocument) -> Result<Document> {
        self.db
            .write(move |conn| {
                let at = to_db(d.at);
                let id: i64 = diesel::insert_into(documents::table)
                    .values((
                        documents::project_id.eq(d.project_id),
                        documents::parent_id.eq(d.parent_id),
                        documents::name.eq(&d.name),
                        documents::content.eq(&d.content),
                        documents::sort.eq(d.sort),
                        documents::depth.eq(d.depth),
                        documents::author_token_id.eq(d.author_token_id),
                        documents::created_at.eq(at),
                        documents::updated_at.eq(at),
                    ))
                    .returning(documents::id)
                    .get_result(conn)
                    .map_err(db_error)?;
                Ok(Document {
                    id,
                    project_id: d.project_id,
                    parent_id: d.parent_id,
                    name: d.name,
                    content: d.content,
                    sort: d.sort,
                    depth: d.depth,
                    author_token_id: d.author_token_id,
                    created_at: from_db(at),
                    updated_at: from_db(at),
                })
            })
            .await
    }

    async fn list_documents(&self, project_id: Id) -> Result<Vec<DocumentSummary>> {
        self.db
            .run(move |conn| {
                let rows: Vec<(i64, Option<i64>, String, i64, i32, NaiveDateTime, NaiveDateTime)> = documents::table
                    .filter(documents::project_id.eq(project_id))
                    .order(documents::id)
                    .select((
                        documents::id,
                        documents::parent_id,
                        documents::name,
                        documents::sort,
                        documents::depth,
                        documents::created_at,
                        documents::updated_at,
                    ))
                    .load(conn)
                    .map_err(db_error)?;
                Ok(rows
                    .into_iter()
                    .map(|r| DocumentSummary {
                        id: r.0,
                        parent_id: r.1,
                        name: r.2,
                        sort: r.3,
                        depth: r.4,
                        created_at: from_db(r.5),
                        updated_at: from_db(r.6),
                    })
                    .collect())
            })
            .await
    }
}
