//! How the server behaves when what it depends on fails.
#![allow(clippy::unwrap_used)]
use atrium_e2e::serde_json::json;
use atrium_e2e::{Backend, Resp, TestApp};
use diesel::{Connection, RunQueryDsl};
use std::time::{Duration, Instant};

/// Drops the app's database from under it, as an outage would take it away.
async fn lose_the_database(app: &TestApp) {
    let name = app.db.url.rsplit_once('/').unwrap().1.split('?').next().unwrap().to_owned();
    let admin_url = std::env::var("ATRIUM_TEST_PG_URL").unwrap();
    tokio::task::spawn_blocking(move || {
        let mut conn = diesel::pg::PgConnection::establish(&admin_url).unwrap();
        diesel::sql_query(format!("DROP DATABASE {name} WITH (FORCE)")).execute(&mut conn).unwrap();
    })
    .await
    .unwrap();
}

#[track_caller]
fn unavailable(what: &str, r: &Resp, took: Duration) {
    assert_eq!(r.status, 503, "{what}: {}", r.body);
    assert_eq!(r.body["code"], 503, "{what}: {}", r.body);
    assert!(r.body["data"].is_null(), "{what}: {}", r.body);
    assert!(r.body["message"].as_str().unwrap().contains("temporarily unavailable"), "{what}: {}", r.body);
    assert!(r.header("retry-after").is_some_and(|s| s.parse::<u64>().is_ok()), "{what}: no Retry-After");
    assert!(took < Duration::from_secs(3), "{what} took {took:?}");
}

/// With its database gone, health, the main interface and the document interface answer 503
/// with `Retry-After` within about a second, never a 500 after a long wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_database_is_a_quick_503_on_every_interface() {
    let Some(app) = TestApp::start_with(Backend::Postgres, &[("ATRIUM_DB_TIMEOUT_MS", "1000")]).await else {
        eprintln!("postgres variant skipped: ATRIUM_TEST_PG_URL is not set");
        return;
    };
    app.get("/healthz", None).await.expect(200);

    lose_the_database(&app).await;

    let started = Instant::now();
    let health = app.get("/healthz", None).await;
    unavailable("/healthz", &health, started.elapsed());

    let started = Instant::now();
    let login =
        app.post("/api/v1/auth/login", json!({"method": "password", "username": "admin", "password": app.admin_password}), None).await;
    unavailable("login", &login, started.elapsed());

    let started = Instant::now();
    let docs = app.send(app.client.get(app.url("/api/docs/1")).header("authorization", format!("Token atd_{}", "a".repeat(43)))).await;
    unavailable("/api/docs/1", &docs, started.elapsed());
}
