use anyhow::Context;
use atrium_kernel::Error;
use diesel::connection::{AnsiTransactionManager, SimpleConnection, TransactionManager};
use diesel::prelude::*;
use diesel::r2d2::{CustomizeConnection, HandleError, HandleEvent, ManageConnection, Pool, PooledConnection, R2D2Connection};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

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

/// SQLite settings for concurrent use, applied to every pooled connection.
#[derive(Debug)]
struct SqlitePragmas;

impl CustomizeConnection<DbConn, diesel::r2d2::Error> for SqlitePragmas {
    fn on_acquire(&self, conn: &mut DbConn) -> Result<(), diesel::r2d2::Error> {
        if let DbConn::Sqlite(c) = conn {
            c.batch_execute(
                "PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON; \
                 PRAGMA synchronous = NORMAL; PRAGMA cache_size = -16000; PRAGMA temp_store = MEMORY; PRAGMA mmap_size = 268435456;",
            )
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
    /// Callers waiting for a connection now.
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
        Ok(Db { pool, backend, counters })
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Applies pending migrations of this backend; returns how many ran.
    pub fn migrate(&self) -> anyhow::Result<usize> {
        let mut conn = self.pool.get().context("no database connection for migrations")?;
        let source = self.migrations();
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
            waiting: c.waiting.load(Ordering::Relaxed),
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

    /// Runs `f` inside one write transaction (`BEGIN IMMEDIATE` on SQLite, so concurrent
    /// writers queue on the lock instead of failing), committed if `f` returns `Ok`.
    pub async fn write<T, F>(&self, f: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(&mut DbConn) -> Result<T, Error> + Send + 'static,
    {
        self.run(move |conn| write_tx(conn, f)).await
    }

    /// A connection for synchronous callers (CLI, benches, seeding).
    pub fn conn(&self) -> Result<PooledConnection<DbManager>, Error> {
        self.checkout()
    }

    /// Whether the database answers.
    pub async fn ping(&self) -> Result<(), Error> {
        self.run(|conn| conn.batch_execute("SELECT 1").map_err(db_error)).await
    }

    fn checkout(&self) -> Result<PooledConnection<DbManager>, Error> {
        self.counters.waiting.fetch_add(1, Ordering::Relaxed);
        let got = self.pool.get();
        self.counters.waiting.fetch_sub(1, Ordering::Relaxed);
        got.map_err(|e| {
            log::warn!("no database connection within the checkout timeout: {e}");
            crate::error::unavailable()
        })
    }
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
pub fn write_tx<T, F>(conn: &mut DbConn, f: F) -> Result<T, Error>
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
