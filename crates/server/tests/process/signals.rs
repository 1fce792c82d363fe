//! The built `atrium` binary stops gracefully on SIGINT (Ctrl-C) as on SIGTERM: a request in
//! flight gets its whole answer, then the process exits 0. Its access log names each
//! request's id.
#![allow(clippy::unwrap_used)]
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Server {
    child: Child,
    addr: String,
    dir: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `atrium serve` on a temporary SQLite database and a free port.
fn serve() -> Server {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let dir = std::env::temp_dir().join(format!("atrium-sig-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_atrium"))
        .arg("serve")
        .env_clear()
        .envs([
            ("DATABASE_URL", format!("sqlite://{}/atrium.db", dir.display())),
            ("ATRIUM_SECRETS_FILE", dir.join("secrets.json").display().to_string()),
            ("ATRIUM_BIND", "127.0.0.1:0".into()),
            ("ATRIUM_BCRYPT_COST", "4".into()),
            ("ATRIUM_WORKERS", "2".into()),
            ("ATRIUM_LOG", "info".into()),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let addr = stdout
        .lines()
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("atrium is listening on http://").and_then(|r| r.split_whitespace().next()).map(str::to_owned))
        .expect("the server says where it listens");
    Server { child, addr, dir }
}

fn signal(server: &Server, name: &str) {
    let status = Command::new("kill").arg(format!("-{name}")).arg(server.child.id().to_string()).status().unwrap();
    assert!(status.success());
}

/// Sends a login request's head asking to be told to go on (`Expect: 100-continue`), waits for
/// the server's `100 Continue` — it has taken up the connection and has the request in hand —
/// and sends the first half of the body; returns the connection and the rest of the body.
fn start_request(addr: &str) -> (TcpStream, String) {
    let body = r#"{"method":"password","username":"admin","password":"not-the-password"}"#;
    let (first, rest) = body.split_at(body.len() / 2);
    let mut conn = TcpStream::connect(addr).unwrap();
    write!(
        conn,
        "POST /api/v1/auth/login HTTP/1.1\r\nHost: atrium\r\nX-Request-Id: trace-sig-1\r\nConnection: close\r\nExpect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .unwrap();
    // Nothing else comes before the body is whole, so reading up to the blank line reads no more.
    conn.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut interim = Vec::new();
    let mut byte = [0u8; 1];
    while !interim.ends_with(b"\r\n\r\n") {
        match conn.read(&mut byte) {
            Ok(1) => interim.push(byte[0]),
            other => panic!("no 100 Continue ({other:?}): {:?}", String::from_utf8_lossy(&interim)),
        }
    }
    let interim = String::from_utf8_lossy(&interim);
    assert!(interim.to_ascii_uppercase().starts_with("HTTP/1.1 100 CONTINUE"), "{interim}");
    conn.write_all(first.as_bytes()).unwrap();
    (conn, rest.to_owned())
}

/// Waits up to `limit` until a new connection to `addr` is refused: the listener has closed.
fn wait_until_refused(addr: &str, limit: Duration) -> bool {
    let addr: std::net::SocketAddr = addr.parse().unwrap();
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

fn stops_gracefully_on(name: &str) {
    let mut server = serve();
    let (mut conn, rest) = start_request(&server.addr);

    signal(&server, name);
    // The rest of the body goes once the stop is under way.
    let refused = wait_until_refused(&server.addr, Duration::from_secs(10));
    let sent = conn.write_all(rest.as_bytes());
    let mut answer = String::new();
    let _ = conn.read_to_string(&mut answer);

    let started = Instant::now();
    let status = loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "still running after {name}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut log = String::new();
    server.child.stderr.take().unwrap().read_to_string(&mut log).unwrap();

    assert!(refused, "new connections were still accepted 10 s after {name}\n{log}");
    assert!(sent.is_ok(), "the connection was closed before the body was whole ({sent:?})\n{log}");
    assert!(answer.starts_with("HTTP/1.1 401"), "the request in flight was dropped on {name}: {answer:?}\n{log}");
    assert!(status.success(), "{name}: exit {status}\n{log}");
    assert!(log.contains(&format!("{name}: shutting down: finishing in-flight requests")), "{log}");
    assert!(!log.contains("forced shutdown"), "{log}");
    assert!(
        log.contains(r#""POST /api/v1/auth/login HTTP/1.1" 401"#) && log.contains("rid=trace-sig-1"),
        "the access log names the request id:\n{log}"
    );
    assert!(!log.contains("ERROR"), "{log}");
}

#[test]
fn sigint_finishes_the_request_in_flight() {
    stops_gracefully_on("INT");
}

#[test]
fn sigterm_finishes_the_request_in_flight() {
    stops_gracefully_on("TERM");
}
