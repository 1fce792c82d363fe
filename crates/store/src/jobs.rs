//! [`JobStore`] over the `jobs` table: a durable queue shared by every instance on the
//! database. A claim leases the due job with the earliest `run_at` (`FOR UPDATE SKIP LOCKED`
//! on PostgreSQL, so concurrent claimers pass each other by; SQLite's `BEGIN IMMEDIATE`
//! serialises them). Done jobs are deleted; failed ones stay, with their error.
use crate::db::{Db, DbConn, MultiBackend};
use crate::error::db_error;
use crate::schema::jobs;
use crate::time::{DbTime, from_db, to_db};
use async_trait::async_trait;
use atrium_kernel::{Error, Id, Job, JobStore, NewJob, Result, Timestamp};
use chrono::NaiveDateTime;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer, Nullable, Text, Timestamp as SqlTimestamp};

const PENDING: &str = "pending";
const FAILED: &str = "failed";

/// The job queue in the database.
#[derive(Clone)]
pub struct DbJobStore {
    db: Db,
}

impl DbJobStore {
    pub fn new(db: Db) -> Self {
        DbJobStore { db }
    }
}

#[derive(QueryableByName)]
struct Claimed {
    #[diesel(sql_type = BigInt)]
    id: i64,
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = Nullable<BigInt>)]
    tenant_id: Option<i64>,
    #[diesel(sql_type = Text)]
    payload: String,
    #[diesel(sql_type = Integer)]
    attempts: i32,
    #[diesel(sql_type = SqlTimestamp)]
    #[diesel(deserialize_as = DbTime)]
    run_at: NaiveDateTime,
}

/// The claim statement for `kinds` kinds: parameter 1 is now, 2 the lease's end, 3… the kinds.
fn claim_sql(conn: &DbConn, kinds: usize) -> String {
    let pg = matches!(conn, DbConn::Pg(_));
    // PostgreSQL numbers parameters `$n`, SQLite `?n`; both may repeat one.
    let p = |n: usize| if pg { format!("${n}") } else { format!("?{n}") };
    let kinds: Vec<String> = (0..kinds).map(|i| p(3 + i)).collect();
    format!(
        "UPDATE jobs SET locked_until = {lease}, attempts = attempts + 1, updated_at = {now} \
         WHERE id = (SELECT id FROM jobs WHERE status = '{PENDING}' AND kind IN ({kinds}) AND run_at <= {now} \
                     AND (locked_until IS NULL OR locked_until <= {now}) \
                     ORDER BY run_at, id LIMIT 1{lock}) \
         RETURNING id, kind, tenant_id, payload, attempts, run_at",
        now = p(1),
        lease = p(2),
        kinds = kinds.join(", "),
        lock = if pg { " FOR UPDATE SKIP LOCKED" } else { "" },
    )
}

fn claim(conn: &mut DbConn, kinds: &[String], now: Timestamp, lease_secs: i64) -> Result<Option<Job>> {
    let mut q = diesel::sql_query(claim_sql(conn, kinds.len()))
        .into_boxed::<MultiBackend>()
        .bind::<SqlTimestamp, _>(to_db(now))
        .bind::<SqlTimestamp, _>(to_db(now + chrono::Duration::seconds(lease_secs)));
    for kind in kinds {
        q = q.bind::<Text, _>(kind.clone());
    }
    let Some(row) = q.get_result::<Claimed>(conn).optional().map_err(db_error)? else {
        return Ok(None);
    };
    let payload = serde_json::from_str(&row.payload)
        .map_err(|e| Error::Internal(anyhow::Error::new(e).context(format!("stored payload of job {} is unreadable", row.id))))?;
    Ok(Some(Job { id: row.id, kind: row.kind, tenant_id: row.tenant_id, payload, attempts: row.attempts, run_at: from_db(row.run_at) }))
}

/// Updates a job that must exist; `NotFound` otherwise.
fn found(n: usize) -> Result<()> {
    if n == 0 { Err(Error::NotFound("job")) } else { Ok(()) }
}

/// Queues `job` within the caller's database transaction: a change and the job that follows
/// from it are written together or not at all (the outbox). `None` when a pending job of the
/// same kind has the same dedupe key.
pub(crate) fn enqueue_in(conn: &mut DbConn, job: &NewJob) -> Result<Option<Id>> {
    let payload = serde_json::to_string(&job.payload).map_err(|e| Error::Internal(e.into()))?;
    let now = to_db(chrono::Utc::now());
    let values = (
        jobs::kind.eq(&job.kind),
        jobs::tenant_id.eq(job.tenant_id),
        jobs::payload.eq(&payload),
        jobs::status.eq(PENDING),
        jobs::dedupe_key.eq(&job.dedupe_key),
        jobs::run_at.eq(to_db(job.run_at)),
        jobs::created_at.eq(now),
        jobs::updated_at.eq(now),
    );
    // A pending job with the same kind and dedupe key trips the partial unique index: nothing
    // is inserted, nothing returned.
    match conn {
        DbConn::Pg(c) => {
            diesel::insert_into(jobs::table).values(values).on_conflict_do_nothing().returning(jobs::id).get_result(c).optional()
        }
        DbConn::Sqlite(c) => {
            diesel::insert_into(jobs::table).values(values).on_conflict_do_nothing().returning(jobs::id).get_result(c).optional()
        }
    }
    .map_err(db_error)
}

#[async_trait]
impl JobStore for DbJobStore {
    async fn enqueue(&self, job: NewJob) -> Result<Option<Id>> {
        self.db.write(move |conn| enqueue_in(conn, &job)).await
    }

    async fn claim(&self, kinds: Vec<String>, now: Timestamp, lease_secs: i64) -> Result<Option<Job>> {
        if kinds.is_empty() {
            return Ok(None);
        }
        self.db.write(move |conn| claim(conn, &kinds, now, lease_secs)).await
    }

    async fn complete(&self, id: Id) -> Result<()> {
        self.db.write(move |conn| found(diesel::delete(jobs::table.find(id)).execute(conn).map_err(db_error)?)).await
    }

    async fn retry(&self, id: Id, run_at: Timestamp, error: String) -> Result<()> {
        self.db
            .write(move |conn| {
                let n = diesel::update(jobs::table.find(id).filter(jobs::status.eq(PENDING)))
                    .set((
                        jobs::run_at.eq(to_db(run_at)),
                        jobs::locked_until.eq(None::<NaiveDateTime>),
                        jobs::last_error.eq(Some(error)),
                        jobs::updated_at.eq(to_db(chrono::Utc::now())),
                    ))
                    .execute(conn)
                    .map_err(db_error)?;
                found(n)
            })
            .await
    }

    async fn fail(&self, id: Id, error: String) -> Result<()> {
        self.db
            .write(move |conn| {
                let n = diesel::update(jobs::table.find(id))
                    .set((
                        jobs::status.eq(FAILED),
                        jobs::locked_until.eq(None::<NaiveDateTime>),
                        jobs::last_error.eq(Some(error)),
                        jobs::updated_at.eq(to_db(chrono::Utc::now())),
                    ))
                    .execute(conn)
                    .map_err(db_error)?;
                found(n)
            })
            .await
    }

    async fn depth(&self, kind: String, now: Timestamp) -> Result<u64> {
        self.db
            .run(move |conn| {
                let n: i64 = jobs::table
                    .filter(jobs::kind.eq(&kind))
                    .filter(jobs::status.eq(PENDING))
                    .filter(jobs::run_at.le(to_db(now)))
                    .count()
                    .get_result(conn)
                    .map_err(db_error)?;
                Ok(n as u64)
            })
            .await
    }
}
