use anyhow::Context;
use atrium_kernel::Error;
use diesel::connection::{AnsiTransactionManager, SimpleConnection, TransactionManager};
use diesel::prelude::*;
use diesel::r2d2::{CustomizeConnection, HandleError, HandleEvent, ManageConnection, Pool, PooledConnection, R2D2Connection};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::error::db_error;

const SQLITE_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite");
const POSTGRES_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/postgres");

/// One connection type over both backends; the variant is chosen by `DATABASE_URL`.
#[derive(diesel::MultiConnection)]
pub enum DbConn {
    Pg(diesel::pg::PgConnection),
    Sqlite(diesel::sqlite::SqliteConnection),
}

/// Runs `$body` with the inner connection bound to `$c`, for what the `MultiConnection` enum
/// cannot express (`ON CONFLICT`, `FOR UPDATE`); the body compiles once per backend.
macro_rules! on_backend {
    ($conn:expr, |$c:ident| $body:expr) => {
        match $conn {
            $crate::db::DbConn::Pg($c) => $body,
            $crate::db::DbConn::Sqlite($c) => $body,
        }
    };
}
pub(crate) use on_backend;

/// The first row of `$query` (an expression built once per backend), if any, locked until
/// the end of the write transaction: `SELECT … FOR UPDATE` on PostgreSQL; on SQLite the
/// `BEGIN IMMEDIATE` of [`Db::write`] already holds the database's one write lock. Every write
/// that must serialise with others on one row (a refund reservation) reads that row with it
/// Serialises the write transactions that take the lock named `name` until they end: an
/// advisory lock on PostgreSQL (keyed by the name's SHA-256); nothing on SQLite, where the
/// `BEGIN IMMEDIATE` of [`Db::write`] already holds the database's one write lock.
pub(crate) fn advisory_xact_lock(conn: &mut DbConn, name: &str) -> Result<(), Error> {
    if let DbConn::Pg(c) = conn {
        use diesel::RunQueryDsl;
        use sha2::Digest;
        let digest = sha2::Sha256::digest(name.as_bytes());
        let mut key = [0u8; 8];
        key.copy_from_slice(&digest[..8]);
        diesel::sql_query("SELECT pg_advisory_xact_lock($1)")
            .bind::<diesel::sql_types::BigInt, _>(i64::from_be_bytes(key))
            .execute(c)
            .map_err(crate::error::db_error)?;
    }
    Ok(())
}

/// first. Evaluates to `Result<Option<_>, diesel::result::Error>`.
macro_rules! first_for_update {
    ($conn:expr, $query:expr) => {
        match $conn {
            $crate::db::DbConn::Pg(c) => $query.for_update().first(c).optional(),
            $crate::db::DbConn::Sqlite(c) => $query.first(c).optional(),
        }
    };
}
pub(crate) use first_for_update;

/// Which database a URL names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    pub fn of_url(url: &str) -> Result<Backend, Error> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(Backend::Postgres)
        } else if url.starts_with("sqlite://") || url.starts_with("sqlite:") || url.ends_with(".db") || url == ":memory:" {
            Ok(Backend::Sqlite)
        } else {
            Err(Error::internal(format!("unsupported DATABASE_URL {:?}: use sqlite://PATH or postgres://…", redact_url(url))))
        }
    }
}

/// The file a SQLite URL names (`sqlite://atrium.db` → `atrium.db`); `None` for PostgreSQL and
/// for an in-memory database.
pub fn sqlite_path(url: &str) -> Option<std::path::PathBuf> {
    if Backend::of_url(url).ok()? != Backend::Sqlite || url == ":memory:" {
        return None;
    }
    let path = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:")).unwrap_or(url);
    let path = path.split('?').next().unwrap_or(path);
    (path != ":memory:" && !path.is_empty()).then(|| std::path::PathBuf::from(path))
}

/// Hides a password in a URL for messages and logs.
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let creds = &url[s + 3..at];
            match creds.split_once(':') {
                Some((user, _)) => format!("{}{}:***{}", &url[..s + 3], user, &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

/// How long a SQLite statement waits for a write lock held by another connection: another
/// process on the file (the CLI), or another [`Db`] opened on it. This process's own writes
/// never wait here, as they queue for [`SqliteWriter`] instead.
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a write may wait in [`SqliteWriter`]'s queue before it is answered
/// `Unavailable` (503) instead of run: as long as a statement waits for another process's
/// lock.
const SQLITE_WRITE_QUEUE_TIMEOUT: Duration = SQLITE_BUSY_TIMEOUT;

/// How often [`checkpoint_loop`] checkpoints the WAL while there are writes.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(100);

/// The size of the WAL, in pages, at which a commit checkpoints it itself: a backstop for
/// [`checkpoint_loop`], well above what the WAL grows to between two of its checkpoints.
const WAL_AUTOCHECKPOINT_PAGES: u32 = 10_000;

/// SQLite settings for concurrent use, applied to every pooled connection.
#[derive(Debug)]
struct SqlitePragmas;

impl CustomizeConnection<PoolConn, diesel::r2d2::Error> for SqlitePragmas {
    fn on_acquire(&self, conn: &mut PoolConn) -> Result<(), diesel::r2d2::Error> {
        if let DbConn::Sqlite(c) = &mut conn.conn {
            c.batch_execute(&format!(
                "PRAGMA busy_timeout = {}; PRAGMA foreign_keys = ON; \
                 PRAGMA synchronous = NORMAL; PRAGMA cache_size = -16000; PRAGMA temp_store = MEMORY; PRAGMA mmap_size = 268435456; \
                 PRAGMA wal_autocheckpoint = {};",
                SQLITE_BUSY_TIMEOUT.as_millis(),
                WAL_AUTOCHECKPOINT_PAGES
            ))
            .map_err(diesel::r2d2::Error::QueryError)?;
        }
        Ok(())
    }
}

/// Opens connections of the one backend the URL names. (Diesel's generic manager goes through
/// `MultiConnection::establish`, which tries every backend in turn and so reports a refused
/// PostgreSQL connection as "Invalid connection url for multiconnection".)
#[derive(Debug)]
pub struct DbManager {
    url: String,
    backend: Backend,
    counters: Arc<PoolCounters>,
}

impl ManageConnection for DbManager {
    type Connection = PoolConn;
    type Error = diesel::r2d2::Error;

    fn connect(&self) -> Result<PoolConn, Self::Error> {
        match self.backend {
            Backend::Postgres => diesel::pg::PgConnection::establish(&self.url).map(DbConn::Pg),
            Backend::Sqlite => diesel::sqlite::SqliteConnection::establish(&self.url).map(DbConn::Sqlite),
        }
        .map(|conn| PoolConn { conn, proven: None })
        .map_err(diesel::r2d2::Error::ConnectionError)
    }

    /// Asks the server (a round trip) unless the connection finished a request's work without
    /// an error within the last second (see [`PoolConn`]).
    fn is_valid(&self, conn: &mut PoolConn) -> Result<(), Self::Error> {
        if conn.proven.is_some_and(|at| at.elapsed() < PROVEN_FOR) {
            return Ok(());
        }
        self.counters.liveness_checks.fetch_add(1, Ordering::Relaxed);
        conn.conn.ping().map_err(diesel::r2d2::Error::QueryError)
    }

    fn has_broken(&self, conn: &mut PoolConn) -> bool {
        std::thread::panicking() || conn.conn.is_broken()
    }
}

/// How long after a connection last did a request's work without an error it is handed out
/// again without asking the server whether it is still there. Under load every connection is
/// reused well within it, so checkouts cost no round trip; one idle for longer (a server may
/// have restarted meanwhile) is asked first.
const PROVEN_FOR: Duration = Duration::from_secs(1);

/// A pooled connection, and when it last finished a request's work without an error.
///
/// On PostgreSQL a checkout asks the server whether the connection is alive (`SELECT 1`),
/// since a server may restart under a pool; that round trip was about an eighth of an order
/// create's work. A connection that has just worked needs no asking: [`Db::run`] marks it
/// proven when its work succeeds, and unproven when it fails, so a connection whose server
/// went away is asked (and replaced) at its next checkout.
pub struct PoolConn {
    conn: DbConn,
    proven: Option<Instant>,
}

/// A connection checked out by [`Db::conn`], returned to the pool when dropped.
struct Checkout(PooledConnection<DbManager>);

impl std::ops::Deref for Checkout {
    type Target = DbConn;
    fn deref(&self) -> &DbConn {
        &self.0.conn
    }
}

impl std::ops::DerefMut for Checkout {
    fn deref_mut(&mut self) -> &mut DbConn {
        &mut self.0.conn
    }
}

impl std::ops::Deref for PoolConn {
    type Target = DbConn;
    fn deref(&self) -> &DbConn {
        &self.conn
    }
}

impl std::ops::DerefMut for PoolConn {
    fn deref_mut(&mut self) -> &mut DbConn {
        &mut self.conn
    }
}

/// A connection the pool could not open (database down, restarting, refusing): a warning,
/// since requests meanwhile get a 503 and the pool keeps trying; never the URL's password.
#[derive(Debug)]
struct WarnOnConnectError;

impl HandleError<diesel::r2d2::Error> for WarnOnConnectError {
    fn handle_error(&self, error: diesel::r2d2::Error) {
        log::warn!("database connection failed: {}", error.to_string().trim_end());
    }
}

/// Counts what the pool does, for the metrics.
#[derive(Debug, Default)]
struct PoolCounters {
    checkouts: AtomicU64,
    wait_micros: AtomicU64,
    timeouts: AtomicU64,
    waiting: AtomicU64,
    /// Writes in [`SqliteWriter`]'s queue now.
    queued_writes: AtomicU64,
    /// Checkouts that asked the server whether the connection is alive (see [`PoolConn`]).
    liveness_checks: AtomicU64,
}

#[derive(Debug)]
struct PoolEvents(Arc<PoolCounters>);

impl HandleEvent for PoolEvents {
    fn handle_checkout(&self, event: diesel::r2d2::event::CheckoutEvent) {
        self.0.checkouts.fetch_add(1, Ordering::Relaxed);
        self.0.wait_micros.fetch_add(u64::try_from(event.duration().as_micros()).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    fn handle_timeout(&self, _event: diesel::r2d2::event::TimeoutEvent) {
        self.0.timeouts.fetch_add(1, Ordering::Relaxed);
    }
}

/// The connection pool now and since it opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    /// The most connections the pool opens.
    pub max_size: u32,
    /// Connections open now (idle and in use).
    pub connections: u32,
    pub idle: u32,
    /// Callers waiting for a connection now; on SQLite, with the writes queued for the one
    /// writer.
    pub waiting: u64,
    /// Connections handed out since the pool opened.
    pub checkouts: u64,
    /// Time callers spent waiting for those connections, in total.
    pub wait_time: Duration,
    /// Callers that got no connection within the checkout timeout (each answered 503).
    pub timeouts: u64,
    /// Checkouts that asked the server whether their connection was still there: those of
    /// connections idle for a while, or whose last work failed (PostgreSQL only).
    pub liveness_checks: u64,
}

impl PoolStats {
    pub fn in_use(&self) -> u32 {
        self.connections.saturating_sub(self.idle)
    }
}

/// The database: a pool of connections and the way to use them off the async workers.
#[derive(Clone)]
pub struct Db {
    pool: Pool<DbManager>,
    backend: Backend,
    counters: Arc<PoolCounters>,
    /// SQLite's one writer of this process; `None` on PostgreSQL.
    writer: Option<Arc<SqliteWriter>>,
}

impl Db {
    /// Opens a pool for `url` and checks one connection, so a bad URL fails here with a
    /// useful message rather than at the first request.
    pub fn connect(url: &str, max_connections: u32) -> anyhow::Result<Db> {
        Db::connect_with(url, max_connections, Db::CHECKOUT_TIMEOUT)
    }

    /// How long a request waits for a pooled connection before it is told the database is
    /// unavailable (503): long enough for a busy pool, short enough that a dead database
    /// does not hold every worker.
    pub const CHECKOUT_TIMEOUT: Duration = Duration::from_secs(1);

    /// As [`connect`](Self::connect), with the checkout timeout.
    pub fn connect_with(url: &str, max_connections: u32, checkout_timeout: Duration) -> anyhow::Result<Db> {
        let backend = Backend::of_url(url).map_err(|e| anyhow::anyhow!("{e}"))?;
        let conn_url = match backend {
            Backend::Sqlite => url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:")).unwrap_or(url).to_owned(),
            Backend::Postgres => url.to_owned(),
        };
        // MultiConnection::establish swallows each backend's error: try the concrete one once.
        match backend {
            Backend::Sqlite => {
                let mut first = diesel::sqlite::SqliteConnection::establish(&conn_url)
                    .with_context(|| format!("cannot open SQLite database {conn_url}"))?;
                // WAL is a property of the file: set it once here, before the pool opens its
                // connections at the same time — switching a new file's journal mode from
                // several connections at once fails with "database is locked".
                first
                    .batch_execute("PRAGMA busy_timeout = 5000; PRAGMA journal_mode = WAL;")
                    .with_context(|| format!("cannot switch SQLite database {conn_url} to WAL"))?;
            }
            Backend::Postgres => {
                diesel::pg::PgConnection::establish(&conn_url)
                    .with_context(|| format!("cannot connect to PostgreSQL at {}", redact_url(url)))?;
            }
        }
        let counters = Arc::new(PoolCounters::default());
        let manager = DbManager { url: conn_url.clone(), backend, counters: counters.clone() };
        let pool = Pool::builder()
            // A local SQLite file cannot drop a connection; testing each checkout would cost a
            // statement per request. PostgreSQL connections are tested, as a server may restart.
            .test_on_check_out(backend == Backend::Postgres)
            .max_size(max_connections.max(1))
            .min_idle(Some(max_connections.clamp(1, 2)))
            .connection_timeout(checkout_timeout)
            .connection_customizer(Box::new(SqlitePragmas))
            .error_handler(Box::new(WarnOnConnectError))
            .event_handler(Box::new(PoolEvents(counters.clone())))
            .build(manager)
            .context("cannot build the connection pool")?;
        let writer = match backend {
            Backend::Sqlite => {
                let checkpoints = DbManager { url: conn_url, backend, counters: counters.clone() };
                Some(Arc::new(SqliteWriter::start(pool.clone(), counters.clone(), checkpoints)?))
            }
            Backend::Postgres => None,
        };
        Ok(Db { pool, backend, counters, writer })
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Applies pending migrations of this backend; returns how many ran. On SQLite they run
    /// as one of the process's writes (see [`write`](Self::write)).
    pub fn migrate(&self) -> anyhow::Result<usize> {
        let source = self.migrations();
        if let Some(writer) = &self.writer {
            let ran = writer.run_blocking(false, move |conn| {
                conn.run_pending_migrations(source)
                    .map(|done| done.len())
                    .map_err(|e| Error::Internal(anyhow::anyhow!("migration failed: {e}")))
            });
            return ran.map_err(|e| anyhow::anyhow!("{e}"));
        }
        let mut conn = self.pool.get().context("no database connection for migrations")?;
        let ran = conn.run_pending_migrations(source).map_err(|e| anyhow::anyhow!("migration failed: {e}"))?.len();
        if self.backend == Backend::Postgres {
            warn_without_pg_trgm(&mut conn);
        }
        Ok(ran)
    }

    /// Applies the pending migrations whose version is at most `version` (e.g.
    /// `2026-11-25-000060`), one by one, and no later one: for tests of an upgrade, which
    /// fill a database as an older release left it and then migrate it. Returns how many ran.
    #[doc(hidden)]
    pub fn migrate_until(&self, version: &str) -> anyhow::Result<usize> {
        let source = self.migrations();
        let upto = version.replace('-', "");
        let step = move |conn: &mut DbConn| -> Result<usize, Error> {
            let pending = conn.pending_migrations(source).map_err(|e| Error::Internal(anyhow::anyhow!("{e}")))?;
            let mut ran = 0;
            for m in pending.iter().filter(|m| m.name().version().to_string().replace('-', "") <= upto) {
                conn.run_migration(&**m).map_err(|e| Error::Internal(anyhow::anyhow!("migration failed: {e}")))?;
                ran += 1;
            }
            Ok(ran)
        };
        if let Some(writer) = &self.writer {
            return writer.run_blocking(false, step).map_err(|e| anyhow::anyhow!("{e}"));
        }
        let mut conn = self.pool.get().context("no database connection for migrations")?;
        step(&mut conn).map_err(|e| anyhow::anyhow!("{e}"))
    }

    fn migrations(&self) -> EmbeddedMigrations {
        match self.backend {
            Backend::Sqlite => SQLITE_MIGRATIONS,
            Backend::Postgres => POSTGRES_MIGRATIONS,
        }
    }

    /// Whether the database answers and every migration of this binary is applied: the
    /// readiness of an instance. An unreachable database or a pending migration is
    /// `Unavailable` (503).
    pub async fn ready(&self) -> Result<(), Error> {
        let source = self.migrations();
        let pending = self
            .run(move |conn| {
                conn.has_pending_migration(source).map_err(|e| {
                    log::warn!("cannot read the applied migrations: {e}");
                    crate::error::unavailable()
                })
            })
            .await?;
        if pending {
            return Err(Error::Unavailable {
                message: "database migrations are pending: run `atrium migrate` or restart".into(),
                retry_after_secs: 5,
            });
        }
        Ok(())
    }

    /// The pool now: open, idle and waiting connections, checkouts and timeouts so far.
    pub fn pool_stats(&self) -> PoolStats {
        let state = self.pool.state();
        let c = &self.counters;
        PoolStats {
            max_size: self.pool.max_size(),
            connections: state.connections,
            idle: state.idle_connections,
            waiting: c.waiting.load(Ordering::Relaxed) + c.queued_writes.load(Ordering::Relaxed),
            checkouts: c.checkouts.load(Ordering::Relaxed),
            wait_time: Duration::from_micros(c.wait_micros.load(Ordering::Relaxed)),
            timeouts: c.timeouts.load(Ordering::Relaxed),
            liveness_checks: c.liveness_checks.load(Ordering::Relaxed),
        }
    }

    /// Runs `f` with a pooled connection on the blocking pool.
    pub async fn run<T, F>(&self, f: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(&mut DbConn) -> Result<T, Error> + Send + 'static,
    {
        let db = self.clone();
        tokio::task::spawn_blocking(move || {
            let mut conn = db.checkout()?;
            let done = f(&mut conn);
            conn.proven = done.is_ok().then(Instant::now);
            done
        })
        .await
        .map_err(|e| Error::Internal(anyhow::anyhow!("database task failed: {e}")))?
    }

    /// Runs `f` inside a write transaction: its work is kept if it returns `Ok`, and undone
    /// if it returns `Err` (or panics).
    ///
    /// On SQLite, which has one write lock per database, the writes of this process take
    /// turns, first come first served, on one thread of their own (`SqliteWriter`), which
    /// holds the lock (`BEGIN IMMEDIATE`) for them: no write of this process meets another
    /// holding it, and a waiting write holds no thread, no pooled connection and no lock.
    /// (Left to SQLite, concurrent writers wait in its busy handler, which sleeps up to 100 ms
    /// between tries.) The writes queued together commit together, each in a savepoint of
    /// its own, and `write` returns once the commit is done. Reads ([`run`](Self::run)) do
    /// not queue: WAL lets them go on beside the writer. On PostgreSQL `f` runs on the
    /// blocking pool in a transaction of its own.
    pub async fn write<T, F>(&self, f: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(&mut DbConn) -> Result<T, Error> + Send + 'static,
    {
        match &self.writer {
            Some(writer) => writer.write(f).await,
            None => self.run(move |conn| write_tx(conn, f)).await,
        }
    }

    /// [`write`](Self::write) for synchronous callers (CLI, seeding); it blocks the thread
    /// until the transaction is done.
    pub fn write_blocking<T, F>(&self, f: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(&mut DbConn) -> Result<T, Error> + Send + 'static,
    {
        match &self.writer {
            Some(writer) => writer.run_blocking(true, f),
            None => write_tx(&mut *self.checkout()?, f),
        }
    }

    /// A connection for synchronous callers (CLI, benches, tests). On SQLite, a write through
    /// it does not take its turn with [`write`](Self::write)'s and may wait for their lock
    /// (up to the busy timeout): write with [`write_blocking`](Self::write_blocking).
    pub fn conn(&self) -> Result<impl std::ops::DerefMut<Target = DbConn>, Error> {
        Ok(Checkout(self.checkout()?))
    }

    /// Whether `atrium migrate` (or `serve`) has ever run on this database: its migrations
    /// table exists. Creates nothing.
    pub fn is_initialised(&self) -> anyhow::Result<bool> {
        #[derive(QueryableByName)]
        struct Present {
            #[diesel(sql_type = diesel::sql_types::Bool)]
            present: bool,
        }
        let query = match self.backend {
            Backend::Sqlite => {
                "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '__diesel_schema_migrations') AS present"
            }
            Backend::Postgres => {
                "SELECT EXISTS (SELECT 1 FROM information_schema.tables \
                 WHERE table_schema = current_schema() AND table_name = '__diesel_schema_migrations') AS present"
            }
        };
        let mut conn = self.checkout().map_err(|e| anyhow::anyhow!("{e}"))?;
        let found = diesel::sql_query(query).get_result::<Present>(&mut **conn).context("cannot read the database's tables")?;
        Ok(found.present)
    }

    /// Whether the database answers.
    pub async fn ping(&self) -> Result<(), Error> {
        self.run(|conn| conn.batch_execute("SELECT 1").map_err(db_error)).await
    }

    fn checkout(&self) -> Result<PooledConnection<DbManager>, Error> {
        checkout(&self.pool, &self.counters)
    }
}

/// A pooled connection within the checkout timeout, else `Unavailable`.
fn checkout(pool: &Pool<DbManager>, counters: &PoolCounters) -> Result<PooledConnection<DbManager>, Error> {
    counters.waiting.fetch_add(1, Ordering::Relaxed);
    let got = pool.get();
    counters.waiting.fetch_sub(1, Ordering::Relaxed);
    got.map_err(|e| {
        log::warn!("no database connection within the checkout timeout: {e}");
        crate::error::unavailable()
    })
}

/// The employee search indexes need `pg_trgm`; a role that may not create extensions gets
/// none, and the migration only raises a notice the driver does not show. Say it in the log.
fn warn_without_pg_trgm(conn: &mut DbConn) {
    #[derive(QueryableByName)]
    struct Present {
        #[diesel(sql_type = diesel::sql_types::Bool)]
        present: bool,
    }
    let found =
        diesel::sql_query("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') AS present").get_result::<Present>(conn);
    match found {
        Ok(Present { present: true }) => {}
        Ok(Present { present: false }) => log::warn!(
            "the pg_trgm extension is not installed (the database role may not create extensions): employee keyword \
             search scans the table; as a superuser run CREATE EXTENSION pg_trgm and the index statements of the \
             employee_search migration (see docs/postgresql.md)"
        ),
        Err(e) => log::warn!("cannot tell whether pg_trgm is installed: {e}"),
    }
}

/// One write transaction around `f`; see [`Db::write`].
fn write_tx<T, F>(conn: &mut DbConn, f: F) -> Result<T, Error>
where
    F: FnOnce(&mut DbConn) -> Result<T, Error>,
{
    match conn {
        DbConn::Sqlite(inner) => AnsiTransactionManager::begin_transaction_sql(inner, "BEGIN IMMEDIATE").map_err(db_error)?,
        DbConn::Pg(inner) => {
            <AnsiTransactionManager as TransactionManager<diesel::pg::PgConnection>>::begin_transaction(inner).map_err(db_error)?
        }
    }
    match f(conn) {
        Ok(value) => {
            <DbConn as Connection>::TransactionManager::commit_transaction(conn).map_err(db_error)?;
            Ok(value)
        }
        Err(e) => {
            if let Err(rollback) = <DbConn as Connection>::TransactionManager::rollback_transaction(conn) {
                log::error!("rollback failed: {rollback}");
            }
            Err(e)
        }
    }
}

/// How many queued writes [`SqliteWriter`] commits together at most: enough to share one
/// commit among every request of a busy server, few enough that the first of them does not
/// wait long for the last.
const SQLITE_MAX_BATCH: usize = 32;

/// A write queued for [`SqliteWriter`]: the work, and where its answer goes.
trait QueuedWork: Send {
    /// Does the work on `conn`; whether it succeeded (to be kept). Runs at most once.
    fn run(&mut self, conn: &mut DbConn) -> bool;
    /// Sends the answer: the work's own, unless `instead` says why it was not kept (its batch
    /// did not commit) or never ran.
    fn answer(self: Box<Self>, instead: Option<Error>);
}

/// The answer channel of a write: a task awaiting it, or a thread blocked on it.
enum Reply<T> {
    Async(tokio::sync::oneshot::Sender<Result<T, Error>>),
    Blocking(mpsc::SyncSender<Result<T, Error>>),
}

struct Work<T, F> {
    f: Option<F>,
    result: Option<Result<T, Error>>,
    reply: Reply<T>,
}

impl<T, F> QueuedWork for Work<T, F>
where
    T: Send + 'static,
    F: FnOnce(&mut DbConn) -> Result<T, Error> + Send + 'static,
{
    fn run(&mut self, conn: &mut DbConn) -> bool {
        let Some(f) = self.f.take() else { return false };
        let result = f(conn);
        let ok = result.is_ok();
        self.result = Some(result);
        ok
    }

    fn answer(self: Box<Self>, instead: Option<Error>) {
        let answer = match (self.result, instead) {
            (Some(Err(e)), _) => Err(e),
            (_, Some(e)) => Err(e),
            (Some(Ok(value)), None) => Ok(value),
            (None, None) => Err(Error::internal("a database write was answered before it ran")),
        };
        // The caller may have gone (its request was dropped); the write stands all the same.
        match self.reply {
            Reply::Async(reply) => drop(reply.send(answer)),
            Reply::Blocking(reply) => drop(reply.send(answer)),
        }
    }
}

struct QueuedWrite {
    queued_at: Instant,
    /// Whether the work runs in the writer's transaction (every write but migrations, which
    /// make their own).
    in_transaction: bool,
    work: Box<dyn QueuedWork>,
}

/// The one thread that writes to a SQLite database for this process.
///
/// Writes queue on a channel in the order they come. The thread takes what is queued (up to
/// [`SQLITE_MAX_BATCH`]) and runs it in one `BEGIN IMMEDIATE` transaction on a pooled
/// connection (so an in-memory database of one connection stays one database), each write in
/// a savepoint of its own: a write that fails or panics is rolled back to its savepoint alone,
/// and answered at once. The others are answered when the transaction has committed, all with
/// their results or, if the commit fails, all with its error: a group commit, which writes
/// the pages they share (the tables' and indexes' last pages) to the WAL once, where separate
/// transactions write each of them again. Answers never come before the commit, so a
/// write's durability is that of a transaction of its own (WAL, `synchronous = NORMAL`).
/// The thread ends when the last [`Db`] handle is dropped.
struct SqliteWriter {
    queue: mpsc::Sender<QueuedWrite>,
    counters: Arc<PoolCounters>,
}

impl SqliteWriter {
    fn start(pool: Pool<DbManager>, counters: Arc<PoolCounters>, checkpoints: DbManager) -> anyhow::Result<SqliteWriter> {
        let (queue, jobs) = mpsc::channel::<QueuedWrite>();
        let wal_written = Arc::new(AtomicBool::new(false));
        let written = Arc::downgrade(&wal_written);
        let writer = WriterThread { pool, counters: counters.clone(), wal_written };
        std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || writer.serve(&jobs))
            .context("cannot start the SQLite writer thread")?;
        std::thread::Builder::new()
            .name("sqlite-checkpoint".into())
            .spawn(move || checkpoint_loop(&checkpoints, &written))
            .context("cannot start the SQLite checkpoint thread")?;
        Ok(SqliteWriter { queue, counters })
    }

    fn enqueue<T, F>(&self, in_transaction: bool, f: F, reply: Reply<T>) -> Result<(), Error>
    where
        T: Send + 'static,
        F: FnOnce(&mut DbConn) -> Result<T, Error> + Send + 'static,
    {
        let work = Box::new(Work { f: Some(f), result: None, reply });
        self.counters.queued_writes.fetch_add(1, Ordering::Relaxed);
        self.queue.send(QueuedWrite { queued_at: Instant::now(), in_transaction, work }).map_err(|_| {
            self.counters.queued_writes.fetch_sub(1, Ordering::Relaxed);
            Error::internal("the SQLite writer thread has stopped")
        })
    }

    /// Runs `f` in a write transaction in its turn, and waits for the commit without holding
    /// a thread.
    async fn write<T, F>(&self, f: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(&mut DbConn) -> Result<T, Error> + Send + 'static,
    {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.enqueue(true, f, Reply::Async(reply))?;
        answer.await.map_err(|_| Error::internal("the SQLite writer thread has stopped"))?
    }

    /// Runs `f` in its turn — in a write transaction if `in_transaction`, else as it is — and
    /// blocks this thread until it is done.
    fn run_blocking<T, F>(&self, in_transaction: bool, f: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(&mut DbConn) -> Result<T, Error> + Send + 'static,
    {
        let (reply, answer) = mpsc::sync_channel(1);
        self.enqueue(in_transaction, f, Reply::Blocking(reply))?;
        answer.recv().map_err(|_| Error::internal("the SQLite writer thread has stopped"))?
    }
}

/// What the writer thread holds.
struct WriterThread {
    pool: Pool<DbManager>,
    counters: Arc<PoolCounters>,
    /// Set when a transaction has committed, for [`checkpoint_loop`]; gone when the thread
    /// ends.
    wal_written: Arc<AtomicBool>,
}

impl WriterThread {
    /// Batches of queued writes until every sender is gone.
    fn serve(&self, jobs: &mpsc::Receiver<QueuedWrite>) {
        let counters = &self.counters;
        let mut carried: Option<QueuedWrite> = None;
        loop {
            let mut next = match carried.take() {
                Some(job) => Some(job),
                None => match jobs.recv() {
                    Ok(job) => Some(job),
                    Err(_) => return,
                },
            };
            let mut batch = Vec::new();
            while let Some(job) = next.take() {
                counters.queued_writes.fetch_sub(1, Ordering::Relaxed);
                if job.queued_at.elapsed() > SQLITE_WRITE_QUEUE_TIMEOUT {
                    log::warn!("a database write waited {:?} for its turn; it was not run", job.queued_at.elapsed());
                    job.work.answer(Some(crate::error::unavailable()));
                } else if !job.in_transaction {
                    if batch.is_empty() {
                        self.run_alone(job.work);
                        break;
                    }
                    // Runs after the batch before it.
                    counters.queued_writes.fetch_add(1, Ordering::Relaxed);
                    carried = Some(job);
                    break;
                } else {
                    batch.push(job.work);
                }
                if batch.len() < SQLITE_MAX_BATCH {
                    next = jobs.try_recv().ok();
                }
            }
            if !batch.is_empty() {
                self.run_batch(batch);
            }
        }
    }

    /// Runs work that makes its own transactions (migrations) with a connection of its own.
    fn run_alone(&self, mut work: Box<dyn QueuedWork>) {
        let mut conn = match checkout(&self.pool, &self.counters) {
            Ok(conn) => conn,
            Err(e) => return work.answer(Some(e)),
        };
        // A panic drops the connection while unwinding, so the pool discards it.
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            work.run(&mut conn);
        }));
        self.wal_written.store(true, Ordering::Relaxed);
        match ran {
            Ok(()) => work.answer(None),
            Err(_) => work.answer(Some(Error::internal("a database write panicked"))),
        }
    }

    /// Runs `batch` in one transaction, each write in a savepoint; see [`SqliteWriter`].
    fn run_batch(&self, batch: Vec<Box<dyn QueuedWork>>) {
        let mut pooled = match checkout(&self.pool, &self.counters) {
            Ok(conn) => conn,
            Err(e) => return answer_all(batch, &e),
        };
        let conn: &mut DbConn = &mut pooled;
        let begun = match conn {
            DbConn::Sqlite(inner) => AnsiTransactionManager::begin_transaction_sql(inner, "BEGIN IMMEDIATE").map_err(db_error),
            DbConn::Pg(_) => Err(Error::internal("the SQLite writer was given a PostgreSQL connection")),
        };
        if let Err(e) = begun {
            return answer_all(batch, &e);
        }
        let mut kept: Vec<Box<dyn QueuedWork>> = Vec::with_capacity(batch.len());
        let mut rest = batch.into_iter();
        while let Some(mut work) = rest.next() {
            if let Err(e) = <DbConn as Connection>::TransactionManager::begin_transaction(conn).map_err(db_error) {
                log::error!("cannot open a savepoint for a database write: {e}");
                return abandon(conn, kept, work, rest.collect(), &e);
            }
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work.run(conn)));
            let outcome = match ran {
                Ok(true) => <DbConn as Connection>::TransactionManager::commit_transaction(conn),
                Ok(false) | Err(_) => rollback_to_savepoint(conn),
            };
            if let Err(e) = outcome.map_err(db_error) {
                log::error!("cannot end the savepoint of a database write: {e}");
                return abandon(conn, kept, work, rest.collect(), &e);
            }
            match ran {
                Ok(true) => kept.push(work),
                Ok(false) => work.answer(None),
                Err(_) => {
                    log::error!("a database write panicked; it was rolled back");
                    work.answer(Some(Error::internal("a database write panicked")));
                }
            }
        }
        match <DbConn as Connection>::TransactionManager::commit_transaction(conn).map_err(db_error) {
            Ok(()) => {
                self.wal_written.store(true, Ordering::Relaxed);
                for work in kept {
                    work.answer(None);
                }
            }
            Err(e) => {
                log::error!("a batch of {} database writes did not commit: {e}", kept.len());
                answer_all(kept, &e);
            }
        }
    }
}

/// Copies the WAL's committed pages back into the database file (a `PASSIVE` checkpoint,
/// which waits for no reader and no writer) every [`CHECKPOINT_EVERY`] while there are new
/// ones, on a thread and a connection of its own: the writer's commits then only append to the
/// WAL, where SQLite's automatic checkpoint would copy and sync in the commit that passes
/// 1,000 pages, holding every queued write meanwhile. The automatic checkpoint stays as a
/// backstop at [`WAL_AUTOCHECKPOINT_PAGES`], should this one fall behind. Ends when the writer
/// thread has.
fn checkpoint_loop(manager: &DbManager, wal_written: &std::sync::Weak<AtomicBool>) {
    let mut conn: Option<PoolConn> = None;
    loop {
        std::thread::sleep(CHECKPOINT_EVERY);
        let Some(written) = wal_written.upgrade() else { return };
        if !written.swap(false, Ordering::Relaxed) {
            continue;
        }
        drop(written);
        if conn.is_none() {
            let opened = manager.connect().and_then(|mut c| SqlitePragmas.on_acquire(&mut c).map(|()| c));
            conn = match opened {
                Ok(c) => Some(c),
                Err(e) => {
                    log::warn!("cannot open a connection to checkpoint the SQLite WAL: {e}");
                    continue;
                }
            };
        }
        if let Some(c) = conn.as_mut()
            && let Err(e) = c.batch_execute("PRAGMA wal_checkpoint(PASSIVE)")
        {
            log::warn!("checkpointing the SQLite WAL failed: {e}");
            conn = None;
        }
    }
}

/// Rolls back to the savepoint of the write that just ran, whatever it left open inside.
fn rollback_to_savepoint(conn: &mut DbConn) -> diesel::QueryResult<()> {
    loop {
        let depth = <DbConn as Connection>::TransactionManager::transaction_manager_status_mut(conn).transaction_depth()?;
        match depth.map(std::num::NonZeroU32::get) {
            Some(d) if d >= 2 => <DbConn as Connection>::TransactionManager::rollback_transaction(conn)?,
            // The savepoint is gone: the failure ended the whole transaction.
            _ => return Err(diesel::result::Error::NotInTransaction),
        }
        if <DbConn as Connection>::TransactionManager::transaction_manager_status_mut(conn)
            .transaction_depth()?
            .map(std::num::NonZeroU32::get)
            == Some(1)
        {
            return Ok(());
        }
    }
}

/// The batch's transaction cannot go on: rolls it back and answers every write of it with
/// `error` (those that ran lost their work; those after never ran).
fn abandon(
    conn: &mut DbConn,
    kept: Vec<Box<dyn QueuedWork>>,
    current: Box<dyn QueuedWork>,
    after: Vec<Box<dyn QueuedWork>>,
    error: &Error,
) {
    while let Ok(Some(_)) = <DbConn as Connection>::TransactionManager::transaction_manager_status_mut(conn).transaction_depth() {
        if <DbConn as Connection>::TransactionManager::rollback_transaction(conn).is_err() {
            // The pool discards a connection whose transaction state is broken.
            <DbConn as Connection>::TransactionManager::transaction_manager_status_mut(conn).set_in_error();
            break;
        }
    }
    answer_all(kept.into_iter().chain(std::iter::once(current)).chain(after).collect(), error);
}

/// Answers each of `works` with a copy of `error`.
fn answer_all(works: Vec<Box<dyn QueuedWork>>, error: &Error) {
    for work in works {
        let copy = match error {
            Error::Unavailable { .. } => crate::error::unavailable(),
            other => Error::Internal(anyhow::anyhow!("the database transaction of this write failed: {other:#}")),
        };
        work.answer(Some(copy));
    }
}
