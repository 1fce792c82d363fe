//! Fresh, migrated databases for tests: a temporary SQLite file always, and a new
//! PostgreSQL database whenever `ATRIUM_TEST_PG_URL` names a server to create it on.
use crate::Db;
use diesel::{Connection, RunQueryDsl};
use std::path::PathBuf;

/// The environment variable naming a PostgreSQL server for tests, e.g.
/// `postgres://postgres@127.0.0.1:55432/postgres`. CI always sets it.
pub const PG_URL_VAR: &str = "ATRIUM_TEST_PG_URL";

/// A database created for one test; removed when dropped.
pub struct TestDatabase {
    pub url: String,
    cleanup: Cleanup,
}

/// Shares the database of another [`TestDatabase`] without owning its cleanup.
impl TestDatabase {
    pub fn share(&self) -> TestDatabase {
        TestDatabase { url: self.url.clone(), cleanup: Cleanup::None }
    }
}

enum Cleanup {
    None,
    File(PathBuf),
    Postgres { admin_url: String, name: String },
}

impl TestDatabase {
    /// A new SQLite file in the temp directory.
    pub fn sqlite() -> TestDatabase {
        let dir = std::env::temp_dir().join("atrium-tests");
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join(format!("t-{}-{}.db", std::process::id(), unique()));
        TestDatabase { url: format!("sqlite://{}", path.display()), cleanup: Cleanup::File(path) }
    }

    /// A new PostgreSQL database, or `None` when `ATRIUM_TEST_PG_URL` is unset.
    pub fn postgres() -> Option<TestDatabase> {
        let admin_url = std::env::var(PG_URL_VAR).ok().filter(|u| !u.is_empty())?;
        let name = format!("atrium_t_{}_{}", std::process::id(), unique());
        let mut conn = diesel::pg::PgConnection::establish(&admin_url).unwrap_or_else(|e| panic!("{PG_URL_VAR} is set but unusable: {e}"));
        diesel::sql_query(format!("CREATE DATABASE {name}"))
            .execute(&mut conn)
            .unwrap_or_else(|e| panic!("cannot create test database: {e}"));
        let url = match admin_url.rfind('/') {
            Some(i) if admin_url[..i].contains("://") && i > admin_url.find("://").unwrap_or(0) + 2 => {
                let (base, rest) = admin_url.split_at(i);
                let query = rest.find('?').map(|q| &rest[q..]).unwrap_or("");
                format!("{base}/{name}{query}")
            }
            _ => format!("{admin_url}/{name}"),
        };
        Some(TestDatabase { url, cleanup: Cleanup::Postgres { admin_url, name } })
    }

    /// Connects and migrates.
    pub fn open(&self) -> Db {
        let db = Db::connect(&self.url, 8).expect("test database opens");
        db.migrate().expect("migrations apply");
        db
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        match &self.cleanup {
            Cleanup::None => {}
            Cleanup::File(path) => {
                for suffix in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
                }
            }
            Cleanup::Postgres { admin_url, name } => {
                if let Ok(mut conn) = diesel::pg::PgConnection::establish(admin_url) {
                    let _ = diesel::sql_query(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).execute(&mut conn);
                }
            }
        }
    }
}

fn unique() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    format!("{}{:x}", N.fetch_add(1, Ordering::Relaxed), nanos)
}

/// Runs `$body` once per available backend: `sqlite` always, `postgres` when configured.
/// Generates `mod $name { fn sqlite(); fn postgres(); }` as `#[tokio::test]`s taking a `Db`.
#[macro_export]
macro_rules! store_test {
    ($name:ident, |$db:ident| $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let tdb = $crate::testing::TestDatabase::sqlite();
                let $db = tdb.open();
                $body
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                let Some(tdb) = $crate::testing::TestDatabase::postgres() else {
                    eprintln!("postgres variant skipped: {} is not set", $crate::testing::PG_URL_VAR);
                    return;
                };
                let $db = tdb.open();
                $body
            }
        }
    };
}
