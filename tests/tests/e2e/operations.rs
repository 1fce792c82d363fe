//! Operating the server: what it does when what it depends on fails, health for machines,
//! metrics, slow and stuck clients, and a graceful stop.
#![allow(clippy::unwrap_used)]
use atrium_e2e::serde_json::json;
use atrium_e2e::{Backend, Resp, TestApp, e2e, pg_admin_url, skip_postgres};
use diesel::{Connection, RunQueryDsl};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The name of the app's PostgreSQL database.
fn database_name(app: &TestApp) -> String {
    app.db.url.rsplit_once('/').unwrap().1.split('?').next().unwrap().to_owned()
}

/// Runs `sql` on the test server's administrative database.
async fn admin_sql(statements: Vec<String>) {
    let admin_url = pg_admin_url().unwrap().to_owned();
    tokio::task::spawn_blocking(move || {
        let mut conn = diesel::pg::PgConnection::establish(&admin_url).unwrap();
        for sql in statements {
            diesel::sql_query(sql).execute(&mut conn).unwrap();
        }
    })
    .await
    .unwrap();
}

/// Drops the app's database from under it, as an outage would take it away.
async fn lose_the_database(app: &TestApp) {
    admin_sql(vec![format!("DROP DATABASE {} WITH (FORCE)", database_name(app))]).await;
}

/// Takes the app's database away for a while, as a restart or failover would: every
/// connection of it is cut and new ones are refused until [`bring_back`].
async fn take_away(app: &TestApp) {
    let name = database_name(app);
    admin_sql(vec![
        format!("ALTER DATABASE {name} ALLOW_CONNECTIONS false"),
        format!("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}' AND pid <> pg_backend_pid()"),
    ])
    .await;
}

async fn bring_back(app: &TestApp) {
    admin_sql(vec![format!("ALTER DATABASE {} ALLOW_CONNECTIONS true", database_name(app))]).await;
}

#[track_caller]
fn unavailable(what: &str, r: &Resp, took: Duration) {
    assert_eq!(r.status, 503, "{what}: {}", r.body);
    assert_eq!(r.body["code"], 503, "{what}: {}", r.body);
    if what.starts_with("/api/docs") {
        assert!(r.body["data"].is_null(), "{what}: the document interface's errors carry data null: {}", r.body);
    } else {
        assert_eq!(r.body["data"], json!({"reason": "unavailable"}), "{what}: {}", r.body);
    }
    assert!(r.body["message"].as_str().unwrap().contains("temporarily unavailable"), "{what}: {}", r.body);
    assert!(r.header("retry-after").is_some_and(|s| s.parse::<u64>().is_ok()), "{what}: no Retry-After");
    assert!(took < Duration::from_secs(2), "{what} took {took:?}");
}

/// Times one request.
async fn timed<F: std::future::Future<Output = Resp>>(request: F) -> (Resp, Duration) {
    let started = Instant::now();
    let r = request.await;
    (r, started.elapsed())
}

/// With its database gone, health, the main interface and the document interface answer 503
/// with `Retry-After` within about a second, never a 500 after a long wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_database_is_a_quick_503_on_every_interface() {
    let Some(app) = TestApp::start_with(Backend::Postgres, &[("ATRIUM_DB_TIMEOUT_MS", "1000")]).await else {
        skip_postgres(module_path!());
        return;
    };
    app.get("/healthz", None).await.expect(200);

    lose_the_database(&app).await;

    let (health, took) = timed(app.get("/healthz", None)).await;
    unavailable("/healthz", &health, took);

    let login = json!({"method": "password", "username": "admin", "password": app.admin_password});
    let (login, took) = timed(app.post("/api/v1/auth/login", login, None)).await;
    unavailable("login", &login, took);

    let docs = app.client.get(app.url("/api/docs/1")).header("authorization", format!("Token atd_{}", "a".repeat(43)));
    let (docs, took) = timed(app.send(docs)).await;
    unavailable("/api/docs/1", &docs, took);
}

/// A database that goes away and comes back: meanwhile every request is a quick 503, the
/// instance is not ready but alive; afterwards it serves again without a restart, and a write
/// made then is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_resumes_by_itself_when_the_database_comes_back() {
    let Some(app) = TestApp::start_with(Backend::Postgres, &[("ATRIUM_DB_TIMEOUT_MS", "1000")]).await else {
        skip_postgres(module_path!());
        return;
    };
    let admin = app.admin_token().await;
    let before = app.create("/api/v1/tenants", json!({"name": "Before the outage"}), &admin).await["id"].as_i64().unwrap();

    take_away(&app).await;

    let mut slowest = Duration::ZERO;
    for _ in 0..3 {
        let (ready, took) = timed(app.get("/healthz/ready", None)).await;
        unavailable("/healthz/ready", &ready, took);
        slowest = slowest.max(took);
        let (live, took) = timed(app.get("/healthz/live", None)).await;
        live.expect(200);
        assert!(took < Duration::from_millis(500), "/healthz/live took {took:?}");
        let (write, took) = timed(app.post("/api/v1/tenants", json!({"name": "During the outage"}), Some(&admin))).await;
        unavailable("POST /api/v1/tenants", &write, took);
        slowest = slowest.max(took);
        let (read, took) = timed(app.get(&format!("/api/v1/tenants/{before}"), Some(&admin))).await;
        unavailable("GET /api/v1/tenants/{id}", &read, took);
        slowest = slowest.max(took);
    }

    bring_back(&app).await;
    let back = Instant::now();

    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let ready = app.get("/healthz/ready", None).await;
        if ready.status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "not ready 20 s after the database came back: {}", ready.body);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!("outage: slowest 503 took {slowest:?}; ready again {:?} after the database came back", back.elapsed());
    let after = app.create("/api/v1/tenants", json!({"name": "After the outage"}), &admin).await["id"].as_i64().unwrap();
    let listed = app.get("/api/v1/tenants?page_size=100", Some(&admin)).await;
    listed.expect(200);
    let names: Vec<&str> = listed.data()["items"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"Before the outage") && names.contains(&"After the outage"), "{names:?}");
    assert!(!names.contains(&"During the outage"), "{names:?}");
    app.get(&format!("/api/v1/tenants/{after}"), Some(&admin)).await.expect(200);
    assert!(app.running.metrics.render().contains("atrium_db_pool_timeouts_total"), "timeouts are counted");
}

e2e!(liveness_and_readiness_answer_ok_and_are_documented, |app| {
    let live = app.get("/healthz/live", None).await;
    let ready = app.get("/healthz/ready", None).await;
    let openapi = app.get("/api/v1/openapi.json", None).await;

    live.expect(200);
    assert_eq!(live.data()["status"], "ok");
    ready.expect(200);
    assert_eq!(ready.data()["status"], "ok");
    for path in ["/healthz", "/healthz/live", "/healthz/ready"] {
        assert!(openapi.body["paths"][path]["get"].is_object(), "{path} missing from the OpenAPI document");
    }
});

/// The value of the sample `series` (name and labels exactly as exposed), if present.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(series).and_then(|rest| rest.strip_prefix(' ')).and_then(|v| v.trim().parse().ok()))
}

e2e!(metrics_count_requests_by_route_template_and_show_the_pool_and_jobs, |app| {
    let admin = app.admin_token().await;
    let tenant = app.create("/api/v1/tenants", json!({"name": "Metered"}), &admin).await["id"].as_i64().unwrap();
    for _ in 0..3 {
        app.get(&format!("/api/v1/tenants/{tenant}"), Some(&admin)).await.expect(200);
    }
    app.get("/api/v1/tenants/999999", Some(&admin)).await.expect(404);
    app.get("/no/such/route/42", None).await.expect(404);

    let resp = app.client.get(app.url("/metrics")).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let content_type = resp.headers()["content-type"].to_str().unwrap().to_owned();
    let text = resp.text().await.unwrap();

    assert!(content_type.starts_with("application/openmetrics-text"), "{content_type}");
    let route = r#"route="/api/v1/tenants/{id}""#;
    assert_eq!(sample(&text, &format!(r#"atrium_http_requests_total{{method="GET",{route},status="200"}}"#)), Some(3.0), "{text}");
    assert_eq!(sample(&text, &format!(r#"atrium_http_requests_total{{method="GET",{route},status="404"}}"#)), Some(1.0), "{text}");
    assert!(text.contains(r#"route="unmatched",status="404""#), "{text}");
    assert!(!text.contains(&format!("/api/v1/tenants/{tenant}")) && !text.contains("/no/such/route"), "raw paths leak: {text}");
    assert!(sample(&text, &format!(r#"atrium_http_request_duration_seconds_count{{method="GET",{route}}}"#)).is_some(), "{text}");
    assert!(sample(&text, r#"atrium_db_pool_connections{state="idle"}"#).is_some(), "{text}");
    assert!(sample(&text, r#"atrium_db_pool_connections{state="in_use"}"#).is_some(), "{text}");
    assert_eq!(sample(&text, "atrium_db_pool_max_connections"), Some(4.0), "{text}");
    assert!(sample(&text, "atrium_db_pool_checkouts_total").is_some_and(|n| n >= 5.0), "{text}");
    assert!(sample(&text, "atrium_db_pool_timeouts_total").is_some(), "{text}");
    for family in ["atrium_jobs_queued gauge", "atrium_jobs_failed counter", "atrium_platform_calls counter"] {
        assert!(text.contains(&format!("# TYPE {family}")), "{family} not registered: {text}");
    }
});

// Each runner by its name, each job kind by its kind: never one label for both.
e2e!(metrics_label_job_runners_by_name_and_jobs_by_kind, |app| {
    let kinds = [
        "payment.settle_transaction",
        "payment.sweep",
        "ledger.order_changed",
        "order.expire",
        "miniprogram.upload",
        "idempotency.purge",
        "miniprogram.purge",
    ];
    let text = atrium_e2e::pay::eventually(10, "the series of every job kind", async || {
        let text = app.client.get(app.url("/metrics")).send().await.unwrap().text().await.unwrap();
        let all = kinds.iter().all(|k| sample(&text, &format!(r#"atrium_jobs_failed_total{{kind="{k}"}}"#)).is_some());
        if all { Ok(text) } else { Err(text) }
    })
    .await;
    for runner in ["payments", "ledger", "orders", "releases", "idempotency", "release_purge"] {
        assert_eq!(sample(&text, &format!(r#"atrium_job_runners{{runner="{runner}"}}"#)), Some(1.0), "{text}");
        assert!(!text.contains(&format!(r#"kind="{runner}""#)), "the runner {runner} is labelled as a job kind: {text}");
    }
    for kind in kinds {
        assert!(sample(&text, &format!(r#"atrium_jobs_queued{{kind="{kind}"}}"#)).is_some(), "{text}");
        assert!(sample(&text, &format!(r#"atrium_jobs_completed_total{{kind="{kind}"}}"#)).is_some(), "{text}");
    }
    assert!(!text.contains("atrium_job_runners{kind="), "{text}");
});

e2e!(
    the_prod_profile_serves_no_metrics_without_a_token,
    vars = [("ATRIUM_PROFILE", "prod"), ("ATRIUM_BCRYPT_COST", "10"), ("ATRIUM_BOOTSTRAP_ADMIN", "false"),],
    |app| {
        let r = app.get("/metrics", None).await;
        r.expect(404);
    }
);

e2e!(
    metrics_behind_a_token_need_it,
    vars = [
        ("ATRIUM_PROFILE", "prod"),
        ("ATRIUM_BCRYPT_COST", "10"),
        ("ATRIUM_BOOTSTRAP_ADMIN", "false"),
        ("ATRIUM_METRICS_TOKEN", "scrape-me-0123456789abcdef"),
    ],
    |app| {
        let none = app.send(app.client.get(app.url("/metrics"))).await;
        let wrong = app.send(app.client.get(app.url("/metrics")).bearer_auth("scrape-me-0123456789abcdeX")).await;
        let right = app.client.get(app.url("/metrics")).bearer_auth("scrape-me-0123456789abcdef").send().await.unwrap();

        none.expect(401);
        assert_eq!(none.header("www-authenticate"), Some("Bearer"));
        wrong.expect(401);
        assert_eq!(right.status().as_u16(), 200);
        assert!(right.text().await.unwrap().contains("# TYPE atrium_http_requests counter"));
    }
);

/// What came back on a raw connection until the server closed it.
struct Closed {
    answer: String,
    /// When the first byte of the answer arrived.
    answered_at: Option<Instant>,
    closed_at: Instant,
}

/// Reads from `conn` until the server closes it (or resets it), or `None` if it was still
/// open after `limit`.
async fn read_until_closed(conn: &mut tokio::net::tcp::OwnedReadHalf, limit: Duration) -> Option<Closed> {
    let mut got = Vec::new();
    let mut answered_at = None;
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, conn.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => {
                return Some(Closed { answer: String::from_utf8_lossy(&got).into_owned(), answered_at, closed_at: Instant::now() });
            }
            Ok(Ok(n)) => {
                answered_at.get_or_insert_with(Instant::now);
                got.extend_from_slice(&buf[..n]);
            }
        }
    }
}

/// Sends `bytes` one at a time, `every` apart, until done or the server has closed.
fn trickle(mut w: tokio::net::tcp::OwnedWriteHalf, bytes: Vec<u8>, every: Duration) -> tokio::task::JoinHandle<bool> {
    tokio::spawn(async move {
        for b in bytes {
            if w.write_all(&[b]).await.is_err() {
                return false;
            }
            tokio::time::sleep(every).await;
        }
        true
    })
}

/// Other clients are served promptly while a slow one is connected.
async fn others_are_served(app: &TestApp) {
    for _ in 0..5 {
        let (live, took) = timed(app.get("/healthz/live", None)).await;
        live.expect(200);
        assert!(took < Duration::from_millis(1000), "a request took {took:?} beside a slow client");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A second for the head and for the body, and a quarter for a closing client to go.
const SLOW: [(&str, &str); 3] = [
    ("ATRIUM_CLIENT_REQUEST_TIMEOUT_MS", "1000"),
    ("ATRIUM_CLIENT_BODY_TIMEOUT_MS", "1000"),
    ("ATRIUM_CLIENT_DISCONNECT_TIMEOUT_MS", "250"),
];

/// A client that sends its request head a byte at a time is cut off at the request timeout
/// (408, connection closed) and holds nothing up meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_request_head_is_cut_off_at_the_request_timeout() {
    let app = TestApp::start_with(Backend::Sqlite, &SLOW).await.unwrap();
    let (mut r, w) = TcpStream::connect(app.running.addr).await.unwrap().into_split();
    let started = Instant::now();
    let head = "GET /healthz/live HTTP/1.1\r\nHost: atrium\r\nX-Slow: ".to_owned() + &"z".repeat(100);
    let sender = trickle(w, head.into_bytes(), Duration::from_millis(50));

    let (closed, ()) = tokio::join!(read_until_closed(&mut r, Duration::from_secs(4)), others_are_served(&app));

    let closed = closed.expect("the server kept the slow connection open");
    let took = closed.closed_at - started;
    assert!(took < Duration::from_millis(2500), "closed after {took:?}");
    assert!(closed.answer.is_empty() || closed.answer.starts_with("HTTP/1.1 408"), "{}", closed.answer);
    assert!(!sender.await.unwrap(), "the whole head went through");
    eprintln!("slow head: connection closed after {took:?}");
    app.stop().await;
}

/// A client that sends its head, then its body a byte at a time, gets 408 at the body timeout
/// and the connection is closed; others are served meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_request_body_is_cut_off_at_the_body_timeout() {
    let app = TestApp::start_with(Backend::Sqlite, &SLOW).await.unwrap();
    let (mut r, mut w) = TcpStream::connect(app.running.addr).await.unwrap().into_split();
    let body = json!({"method": "password", "username": "admin", "password": "x".repeat(200)}).to_string();
    let head = format!(
        "POST /api/v1/auth/login HTTP/1.1\r\nHost: atrium\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    w.write_all(head.as_bytes()).await.unwrap();
    let started = Instant::now();
    let sender = trickle(w, body.into_bytes(), Duration::from_millis(50));

    let (closed, ()) = tokio::join!(read_until_closed(&mut r, Duration::from_secs(4)), others_are_served(&app));

    let closed = closed.expect("the server kept the slow connection open");
    let (answered, took) = (closed.answered_at.map(|at| at - started), closed.closed_at - started);
    assert!(answered.is_some_and(|t| t < Duration::from_millis(2000)), "answered after {answered:?}");
    assert!(took < Duration::from_millis(2500), "closed after {took:?}");
    assert!(closed.answer.starts_with("HTTP/1.1 408"), "{}", closed.answer);
    assert!(closed.answer.contains(r#""code":408"#), "{}", closed.answer);
    assert!(!sender.await.unwrap(), "the whole body went through");
    eprintln!("slow body: 408 after {answered:?}, connection closed after {took:?}");
    app.stop().await;
}

/// A body declared over the limit is refused from its Content-Length, before any of it is
/// sent, and the connection is closed rather than read to the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_content_length_is_a_413_before_the_body_is_sent() {
    let app = TestApp::start_with(Backend::Sqlite, &[]).await.unwrap();
    for path in ["/api/v1/auth/login", "/api/docs/", "/healthz/live"] {
        let (mut r, mut w) = TcpStream::connect(app.running.addr).await.unwrap().into_split();
        let method = if path == "/healthz/live" { "GET" } else { "POST" };
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: atrium\r\nContent-Type: application/json\r\nAuthorization: Token atd_{}\r\nContent-Length: 50000000\r\n\r\n{{",
            "a".repeat(43)
        );
        w.write_all(head.as_bytes()).await.unwrap();
        let started = Instant::now();

        let closed = read_until_closed(&mut r, Duration::from_secs(3)).await.expect("the connection stayed open for the body");

        let took = closed.closed_at - started;
        assert!(took < Duration::from_secs(2), "{path}: took {took:?}");
        let expected = if method == "POST" { "HTTP/1.1 413" } else { "HTTP/1.1 200" };
        assert!(closed.answer.starts_with(expected), "{path}: {}", closed.answer);
        let answered = closed.answered_at.map(|at| at - started);
        eprintln!("{path} with Content-Length 50000000: {} after {answered:?}, closed after {took:?}", &closed.answer[..12]);
        drop(w);
    }
    app.stop().await;
}

/// Reads an interim answer (`100 Continue`) up to its blank line: nothing else comes before the
/// body is whole, so this reads no more.
async fn read_interim(conn: &mut tokio::net::tcp::OwnedReadHalf) -> String {
    let mut got = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !got.ends_with(b"\r\n\r\n") {
        match tokio::time::timeout_at(deadline, conn.read_u8()).await {
            Ok(Ok(byte)) => got.push(byte),
            other => panic!("no interim answer ({other:?}): {:?}", String::from_utf8_lossy(&got)),
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// Waits until a new connection to `addr` is refused: the listener has closed.
async fn wait_until_refused(addr: std::net::SocketAddr, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        match TcpStream::connect(addr).await {
            Err(_) => return true,
            Ok(accepted) => drop(accepted),
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

/// A graceful stop (what SIGINT and SIGTERM do) lets a request in flight finish: its client
/// gets the whole answer, while new connections are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_stop_finishes_the_request_in_flight() {
    let app = TestApp::start_with(Backend::Sqlite, &[]).await.unwrap();
    let addr = app.running.addr;
    let (mut r, mut w) = TcpStream::connect(addr).await.unwrap().into_split();
    // The request in flight: its head, asking to be told to go on; the server's `100 Continue`
    // says it has taken up the connection and has the request in hand (a connection still in
    // the listen queue, or idle between requests, would be closed by the stop); then half of
    // its body.
    let body = json!({"method": "password", "username": "admin", "password": "not-the-password"}).to_string();
    let (first, rest) = body.split_at(body.len() / 2);
    let head = format!(
        "POST /api/v1/auth/login HTTP/1.1\r\nHost: atrium\r\nConnection: close\r\nExpect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    w.write_all(head.as_bytes()).await.unwrap();
    let interim = read_interim(&mut r).await;
    assert!(interim.to_ascii_uppercase().starts_with("HTTP/1.1 100 CONTINUE"), "{interim}");
    w.write_all(first.as_bytes()).await.unwrap();

    let client = async {
        // The rest of the body goes once the stop is under way: new connections are refused.
        let refused = wait_until_refused(addr, Duration::from_secs(10)).await;
        let sent = w.write_all(rest.as_bytes()).await;
        let answer = read_until_closed(&mut r, Duration::from_secs(10)).await;
        (refused, sent, answer)
    };
    let stop = async {
        let started = Instant::now();
        app.running.stop(true).await;
        started.elapsed()
    };
    let ((refused, sent, answer), stopped_after) = tokio::join!(client, stop);

    assert!(refused, "new connections were still accepted 10 s into the stop");
    assert!(sent.is_ok(), "the connection was closed before the body was whole: {sent:?}");
    let answer = answer.expect("the connection stayed open").answer;
    assert!(answer.starts_with("HTTP/1.1 401"), "the request in flight got no answer: {answer:?}");
    assert!(answer.contains(r#""code":401"#), "{answer}");
    assert!(stopped_after < Duration::from_secs(10), "{stopped_after:?}");
}
