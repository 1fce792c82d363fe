use anyhow::Context;
use atrium_kernel::Error;
use diesel::connection::{AnsiTransactionManager, SimpleConnection, TransactionManager};
use diesel::prelude::*;
use diesel::r2d2::{CustomizeConnection, HandleError, HandleEvent, ManageConnection, Pool, PooledConnection, R2D2Connection};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
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

/// SQLite settings for concurrent use, applied to every pooled connection.
#[derive(Debug)]
struct SqlitePragmas;

impl CustomizeConnection<DbConn, diesel::r2d2::Error> for SqlitePragmas {
    fn on_acquire(&self, conn: &mut DbConn) -> Result<(), diesel::r2d2::Error> {
        if let DbConn::Sqlite(c) = conn {
            c.batch_execute(&format!(
                "PRAGMA busy_timeout = {}; PRAGMA foreign_keys = ON; \
                 PRAGMA synchronous = NORMAL; PRAGMA cache_size = -16000; PRAGMA temp_store = MEMORY; PRAGMA mmap_size = 268435456;",
                SQLITE_BUSY_TIMEOUT.as_millis()
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
}

impl ManageConnection for DbManager {
    type Connection = DbConn;
    type Error = diesel::r2d2::Error;

    fn connect(&self) -> Result<DbConn, Self::Error> {
        match self.backend {
            Backend::Postgres => diesel::pg::PgConnection::establish(&self.url).map(DbConn::Pg),
            Backend::Sqlite => diesel::sqlite::SqliteConnection::establish(&self.url).map(DbConn::Sqlite),
        }
        .map_err(diesel::r2d2::Error::ConnectionError)
    }

    fn is_valid(&self, conn: &mut DbConn) -> Result<(), Self::Error> {
        conn.ping().map_err(diesel::r2d2::Error::QueryError)
    }

    fn has_broken(&self, conn: &mut DbConn) -> bool {
        std::thread::panicking() || conn.is_broken()
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
        let manager = DbManager { url: conn_url, backend };
        let counters = Arc::new(PoolCounters::default());
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
            Backend::Sqlite => Some(Arc::new(SqliteWriter::start(pool.clone(), counters.clone())?)),
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
            let ran = writer.run_blocking(move |conn| {
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
            f(&mut conn)
        })
        .await
        .map_err(|e| Error::Internal(anyhow::anyhow!("database task failed: {e}")))?
    }

    /// Runs `f` inside one write transaction, committed if `f` returns `Ok`.
    ///
    /// On SQLite, which has one write lock per database, the writes of this process take
    /// turns, first come first served, on one thread of their own ([`SqliteWriter`]): each
    /// runs in `BEGIN IMMEDIATE` there, so it never meets another of this process's writers
    /// holding the lock, and a waiting write holds no thread, no pooled connection and no
    /// lock. (Left to SQLite, concurrent writers wait in its busy handler, which sleeps up to
    /// 100 ms between tries.) Reads ([`run`](Self::run)) do not queue: WAL lets them go on
    /// beside the writer. On PostgreSQL `f` runs on the blocking pool in a transaction of
    /// its own.
    pub async fn write<T, F>(&self, f: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(&mut DbConn) -> Result<T, Error> + Send + 'static,
    {
        match &self.writer {
            Some(writer) => writer.run(move |conn| write_tx(conn, f)).await,
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
            Some(writer) => writer.run_blocking(move |conn| write_tx(conn, f)),
            None => write_tx(&mut *self.checkout()?, f),
        }
    }

    /// A connection for synchronous callers (CLI, benches, tests). On SQLite, a write through
    /// it does not take its turn with [`write`](Self::write)'s and may wait for their lock
    /// (up to the busy timeout): write with [`write_blocking`](Self::write_blocking).
    pub fn conn(&self) -> Result<PooledConnection<DbManager>, Error> {
        self.checkout()
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

/// A write for [`SqliteWriter`]'s thread: given a pooled connection, or the error that stands
/// for one (the pool's checkout timeout, the queue's timeout), it runs and sends its result.
type WriteJob = Box<dyn FnOnce(Result<&mut DbConn, Error>) + Send>;

struct QueuedWrite {
    queued_at: Instant,
    job: WriteJob,
}

/// The one thread that writes to a SQLite database for this process. Writes queue on a
/// channel in the order they come and run one at a time, each with a connection of the pool
/// (so an in-memory database of one connection stays one database); the thread ends when the
/// last [`Db`] handle is dropped.
struct SqliteWriter {
    queue: mpsc::Sender<QueuedWrite>,
    counters: Arc<PoolCounters>,
}

impl SqliteWriter {
    fn start(pool: Pool<DbManager>, counters: Arc<PoolCounters>) -> anyhow::Result<SqliteWriter> {
        let (queue, jobs) = mpsc::channel::<QueuedWrite>();
        let thread_counters = counters.clone();
        std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || {
                for QueuedWrite { queued_at, job } in jobs {
                    thread_counters.queued_writes.fetch_sub(1, Ordering::Relaxed);
                    if queued_at.elapsed() > SQLITE_WRITE_QUEUE_TIMEOUT {
                        log::warn!("a database write waited {:?} for its turn; it was not run", queued_at.elapsed());
                        job(Err(crate::error::unavailable()));
                        continue;
                    }
                    // A panicking write must not end the thread. The connection is checked out
                    // inside, so a panic drops it while unwinding, and the pool discards it
                    // (with its open transaction) rather than reuse it; the caller's reply
                    // channel goes with it.
                    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        let checkout = checkout(&pool, &thread_counters);
                        match checkout {
                            Ok(mut conn) => job(Ok(&mut conn)),
                            Err(e) => job(Err(e)),
                        }
                    }));
                    if ran.is_err() {
                        log::error!("a database write panicked; its transaction was rolled back");
                    }
                }
            })
            .context("cannot start the SQLite writer thread")?;
        Ok(SqliteWriter { queue, counters })
    }

    fn enqueue(&self, job: WriteJob) -> Result<(), Error> {
        self.counters.queued_writes.fetch_add(1, Ordering::Relaxed);
        self.queue.send(QueuedWrite { queued_at: Instant::now(), job }).map_err(|_| {
            self.counters.queued_writes.fetch_sub(1, Ordering::Relaxed);
            Error::internal("the SQLite writer thread has stopped")
        })
    }

    /// Runs `f` in its turn and waits for it without holding a thread.
    async fn run<T, F>(&self, f: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(&mut DbConn) -> Result<T, Error> + Send + 'static,
    {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.enqueue(Box::new(move |conn| {
            let _ = reply.send(conn.and_then(f));
        }))?;
        answer.await.map_err(|_| Error::Internal(anyhow::anyhow!("database task failed: the write panicked")))?
    }

    /// Runs `f` in its turn, blocking this thread until it is done.
    fn run_blocking<T, F>(&self, f: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(&mut DbConn) -> Result<T, Error> + Send + 'static,
    {
        let (reply, answer) = mpsc::sync_channel(1);
        self.enqueue(Box::new(move |conn| {
            let _ = reply.send(conn.and_then(f));
        }))?;
        answer.recv().map_err(|_| Error::Internal(anyhow::anyhow!("database task failed: the write panicked")))?
    }
}
