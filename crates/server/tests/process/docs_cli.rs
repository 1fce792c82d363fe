//! `atrium docs …` run as a user would: the built binary on a temporary SQLite database.
#![allow(clippy::unwrap_used)]
use atrium_server::Config;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Command, Output};

/// A temporary directory holding the database and the dev secrets; removed when dropped.
struct Workdir(PathBuf);

impl Workdir {
    /// A directory with a migrated database, as `atrium migrate` leaves it.
    fn new() -> Workdir {
        let w = Workdir::empty();
        w.ok(&["migrate"]);
        w
    }

    /// A directory with nothing in it.
    fn empty() -> Workdir {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        let dir = std::env::temp_dir().join(format!("atrium-cli-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Workdir(dir)
    }

    fn files(&self) -> Vec<String> {
        std::fs::read_dir(&self.0).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
    }

    fn database_url(&self) -> String {
        format!("sqlite://{}/atrium.db", self.0.display())
    }

    fn vars(&self) -> Vec<(&'static str, String)> {
        vec![
            ("DATABASE_URL", self.database_url()),
            ("ATRIUM_SECRETS_FILE", self.0.join("secrets.json").display().to_string()),
            ("ATRIUM_PROFILE", "dev".into()),
            ("ATRIUM_LOG", "warn".into()),
        ]
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_atrium"));
        command.args(args).env_clear().envs(self.vars());
        command
    }

    fn atrium(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("atrium runs")
    }

    /// Runs a command that must succeed; returns its standard output.
    #[track_caller]
    fn ok(&self, args: &[&str]) -> String {
        let out = self.atrium(args);
        assert!(out.status.success(), "atrium {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }
}

impl Drop for Workdir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn last_line(out: &str) -> &str {
    out.lines().last().unwrap_or_default().trim()
}

/// The id in "created API token <id> …".
fn token_id(create_output: &str) -> String {
    create_output.lines().find_map(|l| l.strip_prefix("created API token ")).and_then(|r| r.split_whitespace().next()).unwrap().to_owned()
}

/// Run where no database is (the default `sqlite://atrium.db` of the working directory): every
/// command but `serve` and `migrate` refuses, names the file it looked for, and creates
/// neither the database nor the dev secrets.
#[test]
fn a_command_run_in_another_directory_refuses_and_creates_nothing() {
    let w = Workdir::empty();
    for args in [
        &["docs", "project", "list"][..],
        &["docs", "token", "create", "--name", "ci"],
        &["seed", "--tenants", "1", "--employees-per-tenant", "1"],
        &["admin", "create", "--username", "ops", "--password", "Ops-pass-123"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_atrium")).args(args).current_dir(&w.0).env_clear().output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "atrium {args:?}: {stderr}");
        let expected = format!("no database at {}", w.0.join("atrium.db").display());
        assert!(stderr.contains(&expected), "atrium {args:?} must name the file it looked for: {stderr}");
        assert!(String::from_utf8_lossy(&out.stdout).is_empty(), "atrium {args:?} printed a result");
        assert_eq!(w.files(), Vec::<String>::new(), "atrium {args:?} created files");
    }
}

/// A database set up without the dev secrets the command would read: refused, nothing created,
/// as a token signed with made-up secrets would not be the server's.
#[test]
fn a_database_without_its_dev_secrets_is_refused() {
    let w = Workdir::new();
    let missing = w.0.join("elsewhere.secrets.json");
    let out = w.command(&["docs", "token", "create", "--name", "ci"]).env("ATRIUM_SECRETS_FILE", &missing).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("no dev secrets at {}", missing.display())), "{stderr}");
    assert!(!missing.exists());
}

/// Every command on an existing database says which one it opened.
#[test]
fn a_command_says_which_database_it_opened() {
    let w = Workdir::new();
    let out = w.atrium(&["docs", "project", "list"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("using the SQLite database {}", w.0.join("atrium.db").display())), "{stderr}");
}

/// On PostgreSQL the database exists once created; one no `migrate` or `serve` set up is
/// refused, and is left without tables.
#[test]
fn a_postgres_database_never_migrated_is_refused_and_left_empty() {
    let Some(db) = atrium_store::testing::TestDatabase::postgres_empty() else {
        atrium_store::testing::skip_postgres("a_postgres_database_never_migrated_is_refused_and_left_empty");
        return;
    };
    let w = Workdir::empty();
    let out = w
        .command(&["docs", "project", "list"])
        .env("DATABASE_URL", &db.url)
        .env("ATRIUM_JWT_SECRET", "cli-test-secret-0123456789abcdef-xyz")
        .env("ATRIUM_MASTER_KEY", "q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80=")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("has no Atrium tables"), "{stderr}");
    assert!(!stderr.contains("password="), "{stderr}");
    let conn = atrium_store::Db::connect(&db.url, 1).unwrap();
    assert!(!conn.is_initialised().unwrap(), "the refused command created tables");
}

#[test]
fn project_create_prints_the_new_id_as_its_last_line() {
    let w = Workdir::new();

    let first = w.ok(&["docs", "project", "create", "--name", "Handbook"]);
    let second = w.ok(&["docs", "project", "create", "--name", "Runbooks"]);
    let list = w.ok(&["docs", "project", "list"]);

    let (a, b): (i64, i64) = (last_line(&first).parse().unwrap(), last_line(&second).parse().unwrap());
    assert!(b > a && a > 0, "{first} / {second}");
    assert!(list.lines().any(|l| l.trim_start().starts_with(&a.to_string()) && l.ends_with("Handbook")), "{list}");
    assert!(list.lines().any(|l| l.trim_start().starts_with(&b.to_string()) && l.ends_with("Runbooks")), "{list}");
}

#[test]
fn token_create_prints_the_token_as_its_last_line_and_list_never_shows_it() {
    let w = Workdir::new();
    let project = last_line(&w.ok(&["docs", "project", "create", "--name", "Handbook"])).to_owned();

    let created = w.ok(&["docs", "token", "create", "--name", "ci", "--project", &project, "--expires-in-days", "30"]);
    let list = w.ok(&["docs", "token", "list"]);

    let token = last_line(&created);
    assert!(token.starts_with("atd_") && token.len() == 47, "{created}");
    assert_eq!(created.matches(token).count(), 1, "the value is printed once: {created}");
    assert!(created.contains(&format!("projects {project}")), "{created}");
    assert!(!list.contains(token), "{list}");
    let row = list.lines().find(|l| l.ends_with(" ci")).unwrap_or_else(|| panic!("{list}"));
    assert!(row.contains("active") && row.contains(&format!("projects {project}")), "{row}");
}

#[test]
fn token_revoke_marks_the_token_revoked_and_refuses_unknown_ids() {
    let w = Workdir::new();
    let created = w.ok(&["docs", "token", "create", "--name", "ci"]);
    let id = token_id(&created);

    let revoked = w.ok(&["docs", "token", "revoke", &id]);
    let list = w.ok(&["docs", "token", "list"]);
    let unknown = w.atrium(&["docs", "token", "revoke", "999999"]);

    assert!(revoked.contains(&format!("revoked API token {id}")), "{revoked}");
    let row = list.lines().find(|l| l.trim_start().starts_with(&format!("{id} "))).unwrap_or_else(|| panic!("{list}"));
    assert!(row.contains("revoked"), "{row}");
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("API token not found"));
}

#[test]
fn token_create_refuses_unknown_projects_and_bad_expiry() {
    let w = Workdir::new();

    let unknown_project = w.atrium(&["docs", "token", "create", "--name", "ci", "--project", "424242"]);
    let zero_days = w.atrium(&["docs", "token", "create", "--name", "ci", "--expires-in-days", "0"]);
    let list = w.ok(&["docs", "token", "list"]);

    assert!(!unknown_project.status.success());
    assert!(String::from_utf8_lossy(&unknown_project.stderr).contains("project not found"));
    assert!(!zero_days.status.success());
    let refusal = String::from_utf8_lossy(&zero_days.stderr);
    assert!(refusal.contains("must be a whole number between 1 and 36500") && !refusal.contains("..="), "{refusal}");
    assert_eq!(list.lines().count(), 1, "only the header; nothing was created: {list}");
}

/// `atrium --help` works with no variable set, and names the variables, `DATABASE_URL` first.
#[test]
fn the_help_names_the_environment_variables() {
    let out = Command::new(env!("CARGO_BIN_EXE_atrium")).arg("--help").env_clear().output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for name in ["DATABASE_URL", "ATRIUM_PROFILE", "ATRIUM_BIND", "ATRIUM_JWT_SECRET", "ATRIUM_MASTER_KEY", "docs/configuration.md"] {
        assert!(help.contains(name), "atrium --help does not name {name}:\n{help}");
    }
}

/// `atrium seed` says what it made in words: a range of tenants is `tenants 4 to 6`.
#[test]
fn seed_says_which_tenants_it_made_in_words() {
    let w = Workdir::new();
    let three = w.ok(&["seed", "--tenants", "3", "--employees-per-tenant", "2", "--orders-per-tenant", "1"]);
    let one = w.ok(&["seed", "--tenants", "1", "--employees-per-tenant", "1"]);

    let three = three.trim();
    let (first, last) = three
        .strip_prefix("seeded tenants ")
        .and_then(|r| r.split_once(" with "))
        .and_then(|(range, _)| range.split_once(" to "))
        .unwrap_or_else(|| panic!("{three}"));
    let (first, last): (i64, i64) = (first.parse().unwrap(), last.parse().unwrap());
    assert_eq!(last - first, 2, "{three}");
    assert!(three.contains("with 2 employees each and 3 orders in "), "{three}");
    assert!(one.trim().starts_with(&format!("seeded tenant {} with 1 employee each and 0 orders in ", last + 1)), "{one}");
    assert!(!three.contains("..") && !one.contains(".."), "{three} / {one}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_from_the_cli_creates_documents_over_http() {
    let w = Workdir::new();
    let project: i64 = last_line(&w.ok(&["docs", "project", "create", "--name", "Handbook"])).parse().unwrap();
    let token = last_line(&w.ok(&["docs", "token", "create", "--name", "ci", "--project", &project.to_string()])).to_owned();
    let mut vars = w.vars();
    vars.extend([("ATRIUM_BIND", "127.0.0.1:0".into()), ("ATRIUM_BCRYPT_COST", "4".into()), ("ATRIUM_BOOTSTRAP_ADMIN", "false".into())]);
    let config = Config::from_vars(|k| vars.iter().find(|(name, _)| *name == k).map(|(_, v)| v.clone())).unwrap();
    let running = atrium_server::start(config).await.unwrap();

    let resp = reqwest::Client::new()
        .post(format!("http://{}/api/docs/", running.addr))
        .header("authorization", format!("Token {token}"))
        .json(&json!({"project": project, "name": "From the CLI token", "content": "# Hi"}))
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let body: Value = resp.json().await.unwrap();
    running.stop(true).await;

    assert_eq!(status, 200, "{body}");
    assert_eq!(body["code"], 0);
    assert_eq!(body["data"]["project_id"], project);
    assert_eq!(body["data"]["name"], "From the CLI token");
}

/// The lists show every party's projects and tokens, so each row names its owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_name_the_owning_party_of_each_project_and_token() {
    let w = Workdir::new();
    w.ok(&["docs", "project", "create", "--name", "Handbook"]);
    w.ok(&["docs", "token", "create", "--name", "ci"]);
    let mut vars = w.vars();
    vars.extend([("ATRIUM_BIND", "127.0.0.1:0".into()), ("ATRIUM_BCRYPT_COST", "4".into())]);
    let config = Config::from_vars(|k| vars.iter().find(|(name, _)| *name == k).map(|(_, v)| v.clone())).unwrap();
    let running = atrium_server::start(config).await.unwrap();
    let base = format!("http://{}/api/v1", running.addr);
    let http = reqwest::Client::new();
    let call = |method: reqwest::Method, path: &str, token: Option<&str>, body: Value| {
        let mut req = http.request(method, format!("{base}{path}")).json(&body);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        async move {
            let resp = req.send().await.unwrap();
            let body: Value = resp.json().await.unwrap();
            assert_eq!(body["code"], 200, "{body}");
            body["data"].clone()
        }
    };
    let login = |username: &str, password: &str| {
        call(reqwest::Method::POST, "/auth/login", None, json!({"method": "password", "username": username, "password": password}))
    };
    let admin = login("admin", running.bootstrap_password.as_deref().unwrap()).await["access_token"].as_str().unwrap().to_owned();
    let tenant = call(reqwest::Method::POST, "/tenants", Some(&admin), json!({"name": "Acme"})).await["id"].as_i64().unwrap();
    let user = json!({"username": "acme-admin", "password": "user-pass-123", "name": "Ann", "tenant_id": tenant, "role_ids": [3]});
    call(reqwest::Method::POST, "/users", Some(&admin), user).await;
    let ann = login("acme-admin", "user-pass-123").await["access_token"].as_str().unwrap().to_owned();
    call(reqwest::Method::POST, "/doc-projects", Some(&ann), json!({"name": "Acme docs"})).await;
    call(reqwest::Method::POST, "/doc-tokens", Some(&ann), json!({"name": "acme"})).await;
    running.stop(true).await;

    let projects = w.ok(&["docs", "project", "list"]);
    let tokens = w.ok(&["docs", "token", "list"]);

    let row = |list: &str, name: &str| list.lines().find(|l| l.ends_with(name)).unwrap_or_else(|| panic!("no {name} in {list}")).to_owned();
    assert!(projects.lines().next().unwrap().contains("OWNER"), "{projects}");
    assert!(row(&projects, "Handbook").contains(" platform "), "{projects}");
    assert!(row(&projects, "Acme docs").contains(&format!(" tenant {tenant} ")), "{projects}");
    assert!(tokens.lines().next().unwrap().contains("OWNER"), "{tokens}");
    assert!(row(&tokens, " ci").contains(" platform "), "{tokens}");
    assert!(row(&tokens, " acme").contains(&format!(" tenant {tenant} ")), "{tokens}");
}
