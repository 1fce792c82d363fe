//! How `Db::write` behaves under concurrency, on SQLite and PostgreSQL: many writers at once
//! all commit (on SQLite they take turns on the one writer thread, so none meets SQLite's
//! lock held by another and none waits in its busy handler), a read does not wait for a write
//! in progress, and a write that panics is rolled back without stopping the ones after it.
#![allow(clippy::unwrap_used)]
use atrium_kernel::Error;
use atrium_kernel::Reason;
use atrium_store::{Backend, Db, db_error, store_test};
use diesel::RunQueryDsl;
use diesel::connection::SimpleConnection;
use std::time::{Duration, Instant};

fn insert(conn: &mut atrium_store::DbConn, bucket: &str) -> Result<(), Error> {
    diesel::sql_query(format!("INSERT INTO rate_events (bucket, created_at) VALUES ('{bucket}', '2026-05-01 09:00:00')"))
        .execute(conn)
        .map_err(db_error)?;
    Ok(())
}

async fn count(db: &Db, like: &'static str) -> i64 {
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    db.run(move |conn| {
        let rows: Vec<Count> =
            diesel::sql_query(format!("SELECT COUNT(*) AS n FROM rate_events WHERE bucket LIKE '{like}'")).load(conn).map_err(db_error)?;
        Ok(rows.first().map(|r| r.n).unwrap_or(0))
    })
    .await
    .unwrap()
}

// As many concurrent writes as a busy server has requests, each holding the write lock a
// moment. On SQLite every pooled connection first gives up at once on a lock another
// connection holds (`busy_timeout = 0`): without the writes of the process taking turns
// before `BEGIN IMMEDIATE`, most of these fail with "database is locked".
store_test!(many_concurrent_writes_all_commit, |db| {
    if db.backend() == Backend::Sqlite {
        // Every connection of the pool (TestDatabase opens 8) at once, so each gets the pragma.
        let mut conns: Vec<_> = (0..8).map(|_| db.conn().unwrap()).collect();
        for c in &mut conns {
            c.batch_execute("PRAGMA busy_timeout = 0").unwrap();
        }
    }
    let writes: Vec<_> = (0..64)
        .map(|i| {
            let db = db.clone();
            tokio::spawn(async move {
                db.write(move |conn| {
                    insert(conn, &format!("w{i}"))?;
                    std::thread::sleep(Duration::from_millis(2));
                    Ok(())
                })
                .await
            })
        })
        .collect();
    let mut failed = Vec::new();
    for w in writes {
        if let Err(e) = w.await.unwrap() {
            failed.push(format!("{e:#}"));
        }
    }
    assert!(failed.is_empty(), "{} of 64 writes failed, e.g. {:?}", failed.len(), failed.first());
    assert_eq!(count(&db, "w%").await, 64);
});

store_test!(a_read_does_not_wait_for_a_write_in_progress, |db| {
    let (entered, in_transaction) = std::sync::mpsc::channel();
    let (release, read_done) = std::sync::mpsc::channel::<()>();
    let writing = tokio::spawn({
        let db = db.clone();
        async move {
            db.write(move |conn| {
                insert(conn, "held")?;
                entered.send(()).unwrap();
                read_done.recv_timeout(Duration::from_secs(20)).map_err(|_| Error::internal("the read waited for the write"))
            })
            .await
        }
    });
    tokio::task::spawn_blocking(move || in_transaction.recv_timeout(Duration::from_secs(20))).await.unwrap().unwrap();

    assert_eq!(count(&db, "held").await, 0, "the read sees the database as it was before the open write");
    release.send(()).unwrap();
    writing.await.unwrap().unwrap();
    assert_eq!(count(&db, "held").await, 1);
});

store_test!(a_panicking_write_is_rolled_back_and_the_writes_after_it_go_on, |db| {
    let panicked = db
        .write(|conn| -> Result<(), Error> {
            insert(conn, "panicked")?;
            panic!("a write panics inside its transaction");
        })
        .await;
    assert!(matches!(panicked, Err(Error::Internal(_))), "{panicked:?}");

    db.write(|conn| insert(conn, "after")).await.unwrap();
    db.write_blocking(|conn| insert(conn, "after blocking")).unwrap();
    assert_eq!(count(&db, "panicked").await, 0);
    assert_eq!(count(&db, "after%").await, 2);
});

// Writes queued behind a long one run together on SQLite (one transaction, a savepoint each):
// each that fails — its own error, a statement the database refuses, a panic — is undone
// alone, with its own answer, and the others commit.
store_test!(a_write_that_fails_among_queued_ones_is_undone_alone, |db| {
    let (entered, in_transaction) = std::sync::mpsc::channel();
    let (release, go) = std::sync::mpsc::channel::<()>();
    let first = tokio::spawn({
        let db = db.clone();
        async move {
            db.write(move |conn| {
                insert(conn, "ok-first")?;
                entered.send(()).unwrap();
                go.recv_timeout(Duration::from_secs(20)).map_err(|_| Error::internal("never released"))
            })
            .await
        }
    });
    // The first holds the writer before the others come.
    tokio::task::spawn_blocking(move || in_transaction.recv_timeout(Duration::from_secs(20))).await.unwrap().unwrap();
    let writes: Vec<_> = (0..40)
        .map(|i| {
            let db = db.clone();
            tokio::spawn(async move {
                db.write(move |conn| {
                    insert(conn, &format!("{}-{i}", if i % 4 == 0 { "ok" } else { "undone" }))?;
                    match i % 4 {
                        0 => Ok(()),
                        1 => Err(Error::conflict(Reason::State, "refused by the write itself")),
                        2 => diesel::sql_query("INSERT INTO no_such_table VALUES (1)").execute(conn).map(drop).map_err(db_error),
                        _ => panic!("write {i} panics"),
                    }
                })
                .await
            })
        })
        .collect();
    // On SQLite they queue behind the first, all 40; on PostgreSQL each runs in a transaction
    // of its own and none waits for the first. Then let the first finish.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let ready = match db.backend() {
            Backend::Sqlite => db.pool_stats().waiting >= 40,
            Backend::Postgres => writes.iter().all(|w| w.is_finished()),
        };
        if ready {
            break;
        }
        assert!(Instant::now() < deadline, "the writes neither queued nor ran: {:?}", db.pool_stats());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    release.send(()).unwrap();
    first.await.unwrap().unwrap();
    for (i, w) in writes.into_iter().enumerate() {
        let got = w.await.unwrap();
        match i % 4 {
            0 => assert!(got.is_ok(), "write {i}: {got:?}"),
            1 => assert!(matches!(got, Err(Error::Conflict(..))), "write {i}: {got:?}"),
            _ => assert!(matches!(got, Err(Error::Internal(_))), "write {i}: {got:?}"),
        }
    }
    assert_eq!(count(&db, "ok%").await, 11, "the first and every fourth");
    assert_eq!(count(&db, "undone%").await, 0);
});

/// Copies the whole WAL into the database file; `false` when a reader or writer kept part of it
/// there (the checkpoint was busy or partial).
fn checkpoint_all(conn: &mut atrium_store::DbConn) -> Result<bool, Error> {
    #[derive(diesel::QueryableByName)]
    struct Checkpoint {
        #[diesel(sql_type = diesel::sql_types::Integer)]
        busy: i32,
        #[diesel(sql_type = diesel::sql_types::Integer)]
        log: i32,
        #[diesel(sql_type = diesel::sql_types::Integer)]
        checkpointed: i32,
    }
    let rows: Vec<Checkpoint> = diesel::sql_query("PRAGMA wal_checkpoint(TRUNCATE)").load(conn).map_err(db_error)?;
    Ok(rows.first().is_some_and(|c| c.busy == 0 && c.log == c.checkpointed))
}

// The WAL is copied back into the database file by a thread of its own, well before the
// 10,000 pages at which a commit would do it itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_checkpoints_the_wal_in_the_background() {
    let tdb = atrium_store::testing::TestDatabase::sqlite();
    let db = tdb.open();
    let file = tdb.url.strip_prefix("sqlite://").unwrap().to_owned();
    let size = || std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
    // What the migrations left in the WAL goes into the file first, so that only the rows
    // below can grow it.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !db.run(checkpoint_all).await.unwrap() {
        assert!(Instant::now() < deadline, "the migrations' WAL could not be checkpointed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let before = size();

    // About 400 pages of rows, in the WAL once committed.
    for batch in 0..10 {
        db.write(move |conn| {
            for i in 0..40 {
                insert(conn, &format!("{batch}-{i}-{}", "x".repeat(4000)))?;
            }
            Ok(())
        })
        .await
        .unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while size() < before + 1_000_000 {
        assert!(Instant::now() < deadline, "the database file stayed at {} bytes (from {before})", size());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
