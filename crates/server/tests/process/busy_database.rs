//! A database that cannot serve for a moment — SQLite's file locked by another process (an
//! `atrium seed`, a backup), PostgreSQL not reachable yet — neither stops the server at
//! start-up nor becomes a 500 while it runs: start-up waits it out (bounded, with a log line)
//! and a request meets a 503 with `Retry-After`.
#![allow(clippy::unwrap_used)]
use atrium_server::Config;
use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const SECRETS: [(&str, &str); 2] =
    [("ATRIUM_JWT_SECRET", "busy-test-secret-0123456789abcdef-xyz"), ("ATRIUM_MASTER_KEY", "q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80=")];

fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(&format!("atrium-busy-{name}-")).tempdir().unwrap()
}

/// A running `atrium serve`, killed when dropped.
struct Server {
    child: Child,
    /// Lines of its standard output, as they come.
    stdout: mpsc::Receiver<String>,
    log: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(database_url: &str, dir: &Path) -> Server {
        let log = dir.join("server.log");
        let mut child = Command::new(env!("CARGO_BIN_EXE_atrium"))
            .arg("serve")
            .env_clear()
            .envs(SECRETS)
            .envs([
                ("DATABASE_URL", database_url),
                ("ATRIUM_BIND", "127.0.0.1:0"),
                ("ATRIUM_BCRYPT_COST", "4"),
                ("ATRIUM_WORKERS", "1"),
                ("ATRIUM_DB_POOL_SIZE", "2"),
                ("ATRIUM_DB_START_WAIT_SECS", "120"),
                ("ATRIUM_LOG", "info"),
            ])
            .env("ATRIUM_PACKAGE_DIR", dir.join("packages"))
            .stdout(Stdio::piped())
            .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
            .spawn()
            .unwrap();
        let (tx, stdout) = mpsc::channel();
        let out = BufReader::new(child.stdout.take().unwrap());
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Server { child, stdout, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until the log holds `text`, the process still running; panics after `within`.
    fn wait_for_log(&mut self, text: &str, within: Duration) {
        let deadline = Instant::now() + within;
        while !self.log().contains(text) {
            assert!(self.child.try_wait().unwrap().is_none(), "the server exited while the database was busy:\n{}", self.log());
            assert!(Instant::now() < deadline, "no {text:?} in the log within {within:?}:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until the server says where it listens; its address.
    fn wait_listening(&mut self, within: Duration) -> String {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stdout.recv_timeout(left.min(Duration::from_millis(200))) {
                Ok(line) => {
                    if let Some(rest) = line.strip_prefix("atrium is listening on http://") {
                        return rest.split_whitespace().next().unwrap().to_owned();
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    assert!(self.child.try_wait().unwrap().is_none(), "the server exited:\n{}", self.log());
                    assert!(Instant::now() < deadline, "not listening within {within:?}:\n{}", self.log());
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => panic!("the server exited:\n{}", self.log()),
            }
        }
    }
}

/// `GET /healthz/ready` of the server at `addr`, by hand (no client runtime needed).
fn ready_status(addr: &str) -> u16 {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET /healthz/ready HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    answer.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0)
}

fn migrate(database_url: &str) {
    let out = Command::new(env!("CARGO_BIN_EXE_atrium"))
        .arg("migrate")
        .env_clear()
        .envs(SECRETS)
        .env("DATABASE_URL", database_url)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Started while another process holds SQLite's write lock (as `atrium seed` does), the server
/// waits, says so, and serves once the lock is released.
#[test]
fn start_up_waits_for_a_sqlite_file_another_process_holds() {
    let tmp = temp_dir("sqlite");
    let dir = tmp.path();
    let path = dir.join("atrium.db");
    let url = format!("sqlite://{}", path.display());
    migrate(&url);
    let mut other = SqliteConnection::establish(path.to_str().unwrap()).unwrap();
    other.batch_execute("BEGIN IMMEDIATE; CREATE TABLE held_by_another_process (x INTEGER)").unwrap();

    let mut server = Server::start(&url, dir);
    server.wait_for_log("the database cannot serve yet", Duration::from_secs(60));
    other.batch_execute("COMMIT").unwrap();
    let addr = server.wait_listening(Duration::from_secs(60));

    assert_eq!(ready_status(&addr), 200, "{}", server.log());
}

/// Started while PostgreSQL is not reachable yet (a port nothing listens on, then a proxy to
/// the server appears there), the server waits, says so, and serves once it is reachable.
#[test]
fn start_up_waits_for_postgres_to_become_reachable() {
    let Some(db) = atrium_store::testing::TestDatabase::postgres() else {
        atrium_store::testing::skip_postgres("start_up_waits_for_postgres_to_become_reachable");
        return;
    };
    let (scheme_and_user, rest) = db.url.rsplit_once('@').unwrap();
    let (real_addr, database) = rest.split_once('/').unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("{scheme_and_user}@127.0.0.1:{port}/{database}");
    let tmp = temp_dir("postgres");
    let dir = tmp.path();

    let mut server = Server::start(&url, dir);
    server.wait_for_log("the database cannot serve yet", Duration::from_secs(60));
    proxy(&format!("127.0.0.1:{port}"), real_addr.to_owned());
    let addr = server.wait_listening(Duration::from_secs(60));

    assert_eq!(ready_status(&addr), 200, "{}", server.log());
}

/// Forwards every connection to `listen` to `target`, from now on (threads end with the test).
fn proxy(listen: &str, target: String) {
    let listener = std::net::TcpListener::bind(listen).unwrap();
    std::thread::spawn(move || {
        for client in listener.incoming().map_while(Result::ok) {
            let Ok(server) = std::net::TcpStream::connect(&target) else { continue };
            let (mut c2, mut s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            let (mut c, mut s) = (client, server);
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut c, &mut s);
                let _ = s.shutdown(std::net::Shutdown::Write);
            });
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut s2, &mut c2);
                let _ = c2.shutdown(std::net::Shutdown::Write);
            });
        }
    });
}

/// While the server runs, a write that meets SQLite's file held by another process past the
/// busy timeout is a 503 with `Retry-After` — the database cannot serve for a moment — and the
/// same request succeeds once the lock is released.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_meeting_another_process_lock_is_a_503_with_retry_after() {
    let tmp = temp_dir("runtime");
    let dir = tmp.path();
    let path = dir.join("atrium.db");
    let url = format!("sqlite://{}", path.display());
    let package_dir = dir.join("packages").display().to_string();
    let vars: Vec<(&str, &str)> = SECRETS
        .into_iter()
        .chain([
            ("DATABASE_URL", url.as_str()),
            ("ATRIUM_BIND", "127.0.0.1:0"),
            ("ATRIUM_BCRYPT_COST", "4"),
            ("ATRIUM_JOBS", "false"),
            ("ATRIUM_PACKAGE_DIR", package_dir.as_str()),
        ])
        .collect();
    let config = Config::from_vars(|k| vars.iter().find(|(name, _)| *name == k).map(|(_, v)| (*v).to_owned())).unwrap();
    let running = atrium_server::start(config).await.unwrap();
    let base = format!("http://{}/api/v1", running.addr);
    let http = reqwest::Client::new();
    let password = running.bootstrap_password.clone().unwrap();
    let login = http
        .post(format!("{base}/auth/login"))
        .json(&serde_json::json!({"method": "password", "username": "admin", "password": password}))
        .send()
        .await
        .unwrap();
    let login: serde_json::Value = login.json().await.unwrap();
    let token = login["data"]["access_token"].as_str().unwrap().to_owned();
    let create = || http.post(format!("{base}/partners")).bearer_auth(&token).json(&serde_json::json!({"name": "Held"})).send();

    let mut other = SqliteConnection::establish(path.to_str().unwrap()).unwrap();
    other.batch_execute("BEGIN IMMEDIATE; CREATE TABLE held_by_another_process (x INTEGER)").unwrap();
    let busy = create().await.unwrap();
    let (status, retry_after) = (busy.status().as_u16(), busy.headers().get("retry-after").cloned());
    let body: serde_json::Value = busy.json().await.unwrap();
    other.batch_execute("ROLLBACK").unwrap();
    let after = create().await.unwrap();
    let after_status = after.status().as_u16();
    running.stop(true).await;

    assert_eq!(status, 503, "{body}");
    assert_eq!(body["code"], 503, "{body}");
    assert!(retry_after.is_some_and(|v| v.to_str().unwrap().parse::<u64>().is_ok()), "no Retry-After: {body}");
    assert_eq!(after_status, 200, "the same request once the lock is gone");
}
