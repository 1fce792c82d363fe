//! What a checkout costs. On PostgreSQL, a connection that has just done a request's work is
//! handed out again without asking the server whether it is still there; one whose work
//! failed is asked first, and replaced when its server connection is gone. SQLite never asks.
#![allow(clippy::unwrap_used)]
use atrium_kernel::Error;
use atrium_store::testing::{TestDatabase, skip_postgres};
use atrium_store::{Backend, Db, db_error};
use diesel::{Connection, QueryableByName, RunQueryDsl};

#[derive(QueryableByName)]
struct Pid {
    #[diesel(sql_type = diesel::sql_types::Integer)]
    pid: i32,
}

async fn backend_pid(db: &Db) -> Result<i32, Error> {
    db.run(|conn| diesel::sql_query("SELECT pg_backend_pid() AS pid").get_result::<Pid>(conn).map(|p| p.pid).map_err(db_error)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_just_worked_is_reused_without_a_round_trip_and_a_dead_one_is_replaced_on_postgres() {
    let Some(tdb) = TestDatabase::postgres() else {
        skip_postgres(module_path!());
        return;
    };
    // One connection, so every checkout gets the same one until it is replaced.
    let db = Db::connect(&tdb.url, 1).unwrap();
    let checks = || db.pool_stats().liveness_checks;
    let pid = backend_pid(&db).await.unwrap();
    let before = checks();
    for _ in 0..20 {
        assert_eq!(backend_pid(&db).await.unwrap(), pid);
    }
    // Asking every checkout made 20; a stall of the machine longer than the second a
    // connection counts as proven may make one or two.
    assert!(checks() - before < 5, "a connection that just worked was asked again: {} times in 20", checks() - before);

    // Work that fails leaves the connection to be asked at its next checkout.
    let failed = db.run(|conn| diesel::sql_query("SELECT * FROM no_such_table").execute(conn).map_err(db_error)).await;
    assert!(failed.is_err());
    let before = checks();
    assert_eq!(backend_pid(&db).await.unwrap(), pid);
    assert_eq!(checks(), before + 1, "a connection whose work failed was not asked");

    // The server ends the connection (as a restart would): the next request on it fails,
    // once, and the one after gets a new connection.
    let mut admin = diesel::pg::PgConnection::establish(&tdb.url).unwrap();
    diesel::sql_query(format!("SELECT pg_terminate_backend({pid})")).execute(&mut admin).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut failures = 0;
    let replaced = loop {
        match backend_pid(&db).await {
            Ok(p) => break p,
            Err(_) => failures += 1,
        }
        assert!(std::time::Instant::now() < deadline, "no new connection after {failures} failures");
    };
    assert_ne!(replaced, pid);
    assert!(failures <= 1, "{failures} requests failed on a connection the server had ended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_checkouts_never_ask() {
    let tdb = TestDatabase::sqlite();
    let db = tdb.open();
    assert_eq!(db.backend(), Backend::Sqlite);
    for _ in 0..5 {
        db.run(|conn| diesel::sql_query("SELECT 1").execute(conn).map_err(db_error)).await.unwrap();
    }
    let _ = db.run(|conn| diesel::sql_query("SELECT * FROM no_such_table").execute(conn).map_err(db_error)).await;
    db.run(|conn| diesel::sql_query("SELECT 1").execute(conn).map_err(db_error)).await.unwrap();
    assert_eq!(db.pool_stats().liveness_checks, 0);
}

/// The bundled SQLite is compiled as `.cargo/config.toml` says: without the process-wide
/// mutexes (a shared page cache, memory statistics, a mutex per connection call) that
/// concurrent reads queued on, and with query-planner stability for the statement cache.
#[test]
fn the_bundled_sqlite_is_compiled_for_a_pool_of_connections() {
    #[derive(QueryableByName)]
    struct CompileOption {
        #[diesel(sql_type = diesel::sql_types::Text)]
        compile_options: String,
    }
    let mut conn = diesel::sqlite::SqliteConnection::establish(":memory:").unwrap();
    let options: Vec<String> = diesel::sql_query("PRAGMA compile_options")
        .load::<CompileOption>(&mut conn)
        .unwrap()
        .into_iter()
        .map(|o| o.compile_options)
        .collect();
    for wanted in ["THREADSAFE=2", "ENABLE_QPSG", "DEFAULT_MEMSTATUS=0"] {
        assert!(options.iter().any(|o| o == wanted), "{wanted} missing from {options:?}");
    }
    assert!(!options.iter().any(|o| o.starts_with("ENABLE_MEMORY_MANAGEMENT")), "{options:?}");
}
