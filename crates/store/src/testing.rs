//! Fresh, migrated databases for tests: a temporary SQLite file always, and a new
//! PostgreSQL database on the server [`pg_admin_url`] finds — the one `ATRIUM_TEST_PG_URL`
//! names, or else a throwaway cluster this test process starts itself from the PostgreSQL
//! server binaries installed on the machine. Without either, every PostgreSQL variant says
//! on the terminal that it was skipped.
use crate::Db;
use diesel::{Connection, RunQueryDsl};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The environment variable naming a PostgreSQL server for tests, e.g.
/// `postgres://postgres@127.0.0.1:55432/postgres`; `off` skips PostgreSQL. Unset, the tests
/// start a throwaway cluster of their own when PostgreSQL's server binaries are installed.
pub const PG_URL_VAR: &str = "ATRIUM_TEST_PG_URL";

/// Where tests create their PostgreSQL databases, decided once per test process: see the
/// module documentation. `None` when PostgreSQL variants are to be skipped.
pub fn pg_admin_url() -> Option<&'static str> {
    pg_server().as_ref().ok().map(String::as_str)
}

fn pg_server() -> &'static Result<String, String> {
    static SERVER: OnceLock<Result<String, String>> = OnceLock::new();
    SERVER.get_or_init(|| match std::env::var(PG_URL_VAR).ok().filter(|u| !u.is_empty()) {
        Some(off) if off == "off" => Err(format!("{PG_URL_VAR}=off")),
        Some(url) => Ok(url),
        None => throwaway::start().map_err(|why| format!("{PG_URL_VAR} is unset and {why}")),
    })
}

/// Says, past the test harness's output capture so it shows on the terminal, that a
/// PostgreSQL variant did not run and why, with the count so far in this test binary.
pub fn skip_postgres(test: &str) {
    static SKIPPED: AtomicUsize = AtomicUsize::new(0);
    let n = SKIPPED.fetch_add(1, Ordering::Relaxed) + 1;
    let why = pg_server().as_ref().err().map(String::as_str).unwrap_or("no database");
    let _ = writeln!(std::io::stderr(), "SKIPPED on PostgreSQL ({n} in this test binary so far): {test} ({why})");
}

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

    /// A new, migrated PostgreSQL database on [`pg_admin_url`]'s server, or `None` when there
    /// is none. It is a copy of a template migrated once per server and set of migrations
    /// (see `pg_template`), which is much quicker than migrating each test's database.
    pub fn postgres() -> Option<TestDatabase> {
        let admin_url = pg_admin_url()?;
        let template = pg_template(admin_url);
        Some(Self::create_pg(admin_url, Some(&template)))
    }

    /// A new PostgreSQL database that was never migrated (for tests of migrating itself), or
    /// `None` when there is no server.
    pub fn postgres_empty() -> Option<TestDatabase> {
        Some(Self::create_pg(pg_admin_url()?, None))
    }

    fn create_pg(admin_url: &str, template: Option<&str>) -> TestDatabase {
        let name = format!("atrium_t_{}_{}", std::process::id(), unique());
        let mut conn = pg_admin(admin_url);
        let copy = template.map(|t| format!(" TEMPLATE {t}")).unwrap_or_default();
        diesel::sql_query(format!("CREATE DATABASE {name}{copy}"))
            .execute(&mut conn)
            .unwrap_or_else(|e| panic!("cannot create test database: {e}"));
        TestDatabase { url: database_url(admin_url, &name), cleanup: Cleanup::Postgres { admin_url: admin_url.to_owned(), name } }
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

fn pg_admin(admin_url: &str) -> diesel::pg::PgConnection {
    diesel::pg::PgConnection::establish(admin_url)
        .unwrap_or_else(|e| panic!("the test PostgreSQL server {} is unusable: {e}", crate::redact_url(admin_url)))
}

/// `admin_url` with its database replaced by `name` (its query string kept).
fn database_url(admin_url: &str, name: &str) -> String {
    match admin_url.rfind('/') {
        Some(i) if admin_url[..i].contains("://") && i > admin_url.find("://").unwrap_or(0) + 2 => {
            let (base, rest) = admin_url.split_at(i);
            let query = rest.find('?').map(|q| &rest[q..]).unwrap_or("");
            format!("{base}/{name}{query}")
        }
        _ => format!("{admin_url}/{name}"),
    }
}

/// The migrated database every [`TestDatabase::postgres`] copies, made once per server and
/// set of migrations: its name carries a hash of the PostgreSQL migrations, so a changed
/// migration makes a new one. Test processes may share a server (CI's, a developer's), so it
/// is built under an advisory lock, under a temporary name, and renamed only once migrated:
/// a process killed half-way leaves nothing another would copy.
fn pg_template(admin_url: &str) -> String {
    static TEMPLATE: OnceLock<String> = OnceLock::new();
    TEMPLATE
        .get_or_init(|| {
            let name = format!("atrium_template_{:016x}", postgres_migrations_hash());
            let building = format!("{name}_building");
            let mut conn = pg_admin(admin_url);
            let run = |conn: &mut diesel::pg::PgConnection, sql: &str| {
                diesel::sql_query(sql).execute(conn).unwrap_or_else(|e| panic!("test template database: {sql}: {e}"))
            };
            run(&mut conn, "SELECT pg_advisory_lock(7266870901)");
            let exists = diesel::sql_query("SELECT 1 AS one FROM pg_database WHERE datname = $1")
                .bind::<diesel::sql_types::Text, _>(&name)
                .execute(&mut conn)
                .unwrap_or_else(|e| panic!("test template database: {e}"))
                > 0;
            if !exists {
                run(&mut conn, &format!("DROP DATABASE IF EXISTS {building} WITH (FORCE)"));
                run(&mut conn, &format!("CREATE DATABASE {building}"));
                {
                    let db = Db::connect(&database_url(admin_url, &building), 1).expect("test template database opens");
                    db.migrate().expect("migrations apply to the test template database");
                }
                // The pool's connections are closed by now; a template must have none.
                run(&mut conn, &format!("ALTER DATABASE {building} RENAME TO {name}"));
            }
            run(&mut conn, "SELECT pg_advisory_unlock(7266870901)");
            name
        })
        .clone()
}

/// A hash of the PostgreSQL migrations' files as this source tree has them (names and
/// contents, in order).
fn postgres_migrations_hash() -> u64 {
    use std::hash::{Hash, Hasher};
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations/postgres");
    let mut files = Vec::new();
    let mut dirs = vec![dir.clone()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() { dirs.push(path) } else { files.push(path) }
        }
    }
    files.sort();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for f in files {
        f.strip_prefix(&dir).unwrap_or(&f).hash(&mut h);
        std::fs::read(&f).unwrap_or_default().hash(&mut h);
    }
    h.finish()
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
                    $crate::testing::skip_postgres(module_path!());
                    return;
                };
                let $db = tdb.open();
                $body
            }
        }
    };
}

/// A PostgreSQL cluster of this test process: initdb into a temporary directory, started on a
/// free loopback port, stopped and removed by a watcher shell once the process has exited.
/// initdb refuses to run as root; as root the cluster runs as the `postgres` user, as
/// `scripts/pg-throwaway.sh` does.
mod throwaway {
    use super::*;

    const DIR_PREFIX: &str = "atrium-testpg-";

    pub(super) fn start() -> Result<String, String> {
        let bin = server_binaries().ok_or_else(|| {
            "no PostgreSQL server binaries were found (initdb and pg_ctl under /usr/lib/postgresql/*/bin or on PATH; \
             e.g. apt-get install postgresql)"
                .to_owned()
        })?;
        let root = is_root();
        if root && !user_exists("postgres") {
            return Err("initdb cannot run as root and there is no postgres user to run it as".into());
        }
        remove_stale_clusters(&bin, root);
        let dir = cluster_parent().join(format!("{DIR_PREFIX}{}-{}", std::process::id(), unique()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        // Watch before anything can fail, so the directory goes whatever happens next.
        watch_until_exit(&bin, &dir, root)?;
        if root {
            run(Command::new("chown").arg("postgres").arg(&dir), "chown")?;
        }
        let d = dir.display();
        as_cluster_user(&format!("{}/initdb -D {d}/data -A trust -U postgres -E UTF8 --no-sync >{d}/initdb.log 2>&1", bin.display()), root)
            .map_err(|e| format!("initdb failed ({e}); see {d}/initdb.log"))?;
        let mut last = String::new();
        for _ in 0..3 {
            let port = free_port()?;
            let options = format!(
                "-p {port} -k {d} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off \
                 -c full_page_writes=off -c max_connections=400"
            );
            let started = as_cluster_user(
                &format!("{}/pg_ctl -D {d}/data -l {d}/server.log -w -o '{options}' start >/dev/null 2>&1", bin.display()),
                root,
            );
            match started {
                Ok(()) => {
                    let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
                    let _ = writeln!(
                        std::io::stderr(),
                        "PostgreSQL tests: started a throwaway cluster with {} at {url} ({PG_URL_VAR} is unset)",
                        bin.display()
                    );
                    return Ok(url);
                }
                Err(e) => last = e,
            }
        }
        Err(format!("the throwaway cluster did not start ({last}); see {d}/server.log"))
    }

    /// The newest `/usr/lib/postgresql/<version>/bin`, else a PATH entry with initdb and pg_ctl.
    fn server_binaries() -> Option<PathBuf> {
        let has_both = |d: &Path| d.join("initdb").is_file() && d.join("pg_ctl").is_file();
        let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| Some((e.file_name().to_str()?.parse::<u32>().ok()?, e.path().join("bin"))))
            .filter(|(_, bin)| has_both(bin))
            .collect();
        versions.sort();
        versions
            .pop()
            .map(|(_, bin)| bin)
            .or_else(|| std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).find(|d| has_both(d))))
    }

    fn is_root() -> bool {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata("/proc/self").map(|m| m.uid() == 0).unwrap_or(false)
    }

    fn user_exists(name: &str) -> bool {
        Command::new("id").arg("-u").arg(name).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
    }

    fn free_port() -> Result<u16, String> {
        std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).map_err(|e| format!("no free port: {e}"))
    }

    fn run(cmd: &mut Command, what: &str) -> Result<(), String> {
        match cmd.stdin(Stdio::null()).status() {
            Ok(s) if s.success() => Ok(()),
            Ok(s) => Err(format!("{what} exited with {s}")),
            Err(e) => Err(format!("cannot run {what}: {e}")),
        }
    }

    fn as_cluster_user(script: &str, root: bool) -> Result<(), String> {
        if root {
            run(Command::new("su").args(["postgres", "-s", "/bin/sh", "-c", script]), "su postgres")
        } else {
            run(Command::new("sh").args(["-c", script]), "sh")
        }
    }

    fn stop_script(bin: &Path, dir: &Path, root: bool) -> String {
        let stop = format!("{}/pg_ctl -D {}/data -m immediate stop", bin.display(), dir.display());
        let stop = if root { format!("su postgres -s /bin/sh -c '{stop}'") } else { stop };
        format!("{stop} >/dev/null 2>&1; rm -rf {}", dir.display())
    }

    /// A detached shell that waits for this process to end, then stops the cluster and
    /// removes its directory.
    fn watch_until_exit(bin: &Path, dir: &Path, root: bool) -> Result<(), String> {
        let script = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 1; done; {stop}",
            pid = std::process::id(),
            stop = stop_script(bin, dir, root)
        );
        Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map(drop)
            .map_err(|e| format!("cannot start the cluster's watcher: {e}"))
    }

    /// Where clusters live: in memory (`/dev/shm`) when it can be written, as every test
    /// creates and drops a database and on a disk that file work costs about 120 ms each even
    /// with fsync off; the temp directory otherwise.
    fn cluster_parent() -> PathBuf {
        let shm = Path::new("/dev/shm");
        let writable = shm.is_dir() && std::fs::metadata(shm).map(|m| !m.permissions().readonly()).unwrap_or(false);
        if writable { shm.to_path_buf() } else { std::env::temp_dir() }
    }

    /// Clusters left by test processes that are gone (killed before their watcher ran).
    fn remove_stale_clusters(bin: &Path, root: bool) {
        let parents = [cluster_parent(), std::env::temp_dir()];
        for entry in parents.iter().flat_map(|p| std::fs::read_dir(p).into_iter().flatten().flatten()) {
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(|n| n.strip_prefix(DIR_PREFIX)).and_then(|r| r.split('-').next()) else {
                continue;
            };
            if !Path::new("/proc").join(pid).exists() {
                let _ = Command::new("sh").args(["-c", &stop_script(bin, &entry.path(), root)]).stdin(Stdio::null()).status();
            }
        }
    }
}

/// A statement summed from the ledger itself, payment by payment, over payments that succeeded
/// in `[from, to)`: what [`atrium_payments::PaymentRepo::earnings`] reads from the sums kept by
/// day must always equal it.
pub fn earnings_from_ledger(
    db: &crate::Db,
    earner: atrium_payments::Earner,
    from: atrium_kernel::Timestamp,
    to: atrium_kernel::Timestamp,
    group: atrium_payments::EarningsGroup,
) -> Result<Vec<atrium_payments::EarningsRow>, atrium_kernel::Error> {
    let mut conn = db.conn()?;
    crate::earnings::from_ledger(&mut conn, earner, from, to, group)
}
