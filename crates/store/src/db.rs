use anyhow::Context;
use atrium_kernel::Error;
use diesel::connection::{AnsiTransactionManager, SimpleConnection, TransactionManager};
use diesel::prelude::*;
use diesel::r2d2::{ConnectionManager, CustomizeConnection, Pool, PooledConnection};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};
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

/// The database: a pool of connections and the way to use them off the async workers.
#[derive(Clone)]
pub struct Db {
    pool: Pool<ConnectionManager<DbConn>>,
    backend: Backend,
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
        let manager = ConnectionManager::<DbConn>::new(conn_url);
        let pool = Pool::builder()
            // A local SQLite file cannot drop a connection; testing each checkout would cost a
            // statement per request. PostgreSQL connections are tested, as a server may restart.
            .test_on_check_out(backend == Backend::Postgres)
            .max_size(max_connections.max(1))
            .min_idle(Some(max_connections.clamp(1, 2)))
            .connection_timeout(checkout_timeout)
            .connection_customizer(Box::new(SqlitePragmas))
            .build(manager)
            .context("cannot build the connection pool")?;
        Ok(Db { pool, backend })
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Applies pending migrations of this backend; returns how many ran.
    pub fn migrate(&self) -> anyhow::Result<usize> {
        let mut conn = self.pool.get().context("no database connection for migrations")?;
        let source = match self.backend {
            Backend::Sqlite => SQLITE_MIGRATIONS,
            Backend::Postgres => POSTGRES_MIGRATIONS,
        };
        let ran = conn.run_pending_migrations(source).map_err(|e| anyhow::anyhow!("migration failed: {e}"))?;
        Ok(ran.len())
    }

    /// Runs `f` with a pooled connection on the blocking pool.
    pub async fn run<T, F>(&self, f: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(&mut DbConn) -> Result<T, Error> + Send + 'static,
    {
        let pool = self.pool.clone();
        tokio::task::spawn_blocking(move || {
            let mut conn = checkout(&pool)?;
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
    pub fn conn(&self) -> Result<PooledConnection<ConnectionManager<DbConn>>, Error> {
        checkout(&self.pool)
    }

    /// Whether the database answers.
    pub async fn ping(&self) -> Result<(), Error> {
        self.run(|conn| conn.batch_execute("SELECT 1").map_err(db_error)).await
    }
}

fn checkout(pool: &Pool<ConnectionManager<DbConn>>) -> Result<PooledConnection<ConnectionManager<DbConn>>, Error> {
    pool.get().map_err(|e| {
        log::warn!("no database connection within the checkout timeout: {e}");
        crate::error::unavailable()
    })
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
