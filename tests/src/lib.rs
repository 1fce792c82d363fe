//! Harness for black-box tests: start the real server on port 0 with a fresh database
//! (SQLite always; PostgreSQL on `ATRIUM_TEST_PG_URL`'s server or, unset, on a throwaway
//! cluster the test process starts itself — see `atrium_store::testing`) and the in-process
//! sandbox, then drive it over HTTP as a client would.

pub mod captured_log;
pub mod pay;

use atrium_server::{Config, Running};
use atrium_store::testing::TestDatabase;
use serde_json::{Value, json};

pub use atrium_store::testing::{pg_admin_url, skip_postgres};
pub use atrium_store::{DbJobStore, FieldCipher, PaymentStore};
/// Runs futures concurrently (they may borrow the app, so they are polled together rather than
/// spawned) and returns their outputs in order.
pub use futures_util::future::join_all;
pub use serde_json;

/// Which database a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A running server with its own database and an HTTP client.
pub struct TestApp {
    pub base: String,
    pub client: reqwest::Client,
    /// The one-time password printed for `admin` on first start.
    pub admin_password: String,
    pub running: Running,
    pub db: TestDatabase,
}

/// A response: status, headers and the JSON body (`Value::Null` if not JSON).
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// `data` of the envelope.
    pub fn data(&self) -> &Value {
        &self.body["data"]
    }

    /// Asserts the envelope shape and status: `code` equals the HTTP status, `message` is
    /// "success" exactly on 200.
    #[track_caller]
    pub fn expect(&self, status: u16) -> &Self {
        assert_eq!(self.status, status, "unexpected status; body: {}", self.body);
        assert_eq!(self.body["code"], json!(status), "envelope code differs from status: {}", self.body);
        assert!(self.body["message"].is_string(), "envelope without message: {}", self.body);
        if status == 200 {
            assert_eq!(self.body["message"], "success");
        } else {
            assert_ne!(self.body["message"], "success");
        }
        self
    }

    /// Asserts an error with `status` whose `data.reason` is `reason`.
    #[track_caller]
    pub fn expect_reason(&self, status: u16, reason: &str) -> &Self {
        self.expect(status);
        assert_eq!(self.body["data"]["reason"], reason, "unexpected reason: {}", self.body);
        self
    }

    /// A 404 naming `field`: the record it names does not exist for the caller.
    #[track_caller]
    pub fn expect_no_such(&self, field: &str) -> &Self {
        self.expect(404);
        // No closure here: a panic inside one would point into this file, not at the test.
        let Some(errors) = self.body["data"]["errors"].as_array() else { panic!("no data.errors in {}", self.body) };
        assert!(errors.iter().any(|e| e["field"] == field), "no error for field {field}: {}", self.body);
        self
    }

    /// Asserts a 400 whose `data.errors` names `field`.
    #[track_caller]
    pub fn expect_field_error(&self, field: &str) -> &Self {
        self.expect(400);
        // No closure here: a panic inside one would point into this file, not at the test.
        let Some(errors) = self.body["data"]["errors"].as_array() else { panic!("no data.errors in {}", self.body) };
        assert!(errors.iter().any(|e| e["field"] == field), "no error for field {field}: {}", self.body);
        self
    }
}

/// The operation of the OpenAPI document that serves `method` on `path` (a concrete path:
/// `/api/v1/orders/7/pay` is `/api/v1/orders/{id}/pay`).
fn operation_of<'a>(doc: &'a Value, method: &str, path: &str) -> Option<&'a Value> {
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    let paths = doc["paths"].as_object()?;
    // A literal segment beats a parameter (`/orders/{id}` must not take `/orders/export`).
    let mut best: Option<(usize, &Value)> = None;
    for (template, item) in paths {
        let parts: Vec<&str> = template.trim_end_matches('/').split('/').collect();
        if parts.len() != segments.len() {
            continue;
        }
        let fits = parts.iter().zip(&segments).all(|(t, s)| t == s || (t.starts_with('{') && t.ends_with('}')));
        let literal = parts.iter().filter(|t| !t.starts_with('{')).count();
        if fits
            && let Some(op) = item.get(method)
            && best.is_none_or(|(n, _)| literal > n)
        {
            best = Some((literal, op));
        }
    }
    best.map(|(_, op)| op)
}

/// An error answer of `/api/v1` names a reason its operation lists for its status. Statuses
/// an operation does not declare (a 405, say) and other interfaces are not checked here.
#[track_caller]
fn check_reason(method: &str, path: &str, status: u16, body: &Value) {
    static DOCUMENT: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    if status < 400 || !path.starts_with("/api/v1/") || path.contains("/payment/notify/") {
        return;
    }
    let doc = DOCUMENT.get_or_init(atrium_api::openapi_document);
    let Some(declared) = operation_of(doc, method, path).and_then(|op| op["responses"].get(status.to_string())) else { return };
    let reason = body["data"]["reason"].as_str().unwrap_or_else(|| panic!("{method} {path} answered {status} without data.reason: {body}"));
    let listed = declared["x-reasons"].as_array().is_some_and(|l| l.iter().any(|r| r == reason));
    assert!(listed, "{method} {path} answered {status} with reason {reason}, which the OpenAPI document does not list for it: {body}");
}

/// Config variables every test server gets; tests may add or override.
fn base_vars(database_url: &str) -> Vec<(String, String)> {
    [
        ("DATABASE_URL", database_url),
        ("ATRIUM_BIND", "127.0.0.1:0"),
        ("ATRIUM_PROFILE", "dev"),
        ("ATRIUM_JWT_SECRET", "e2e-test-secret-0123456789abcdef-xyz"),
        ("ATRIUM_MASTER_KEY", "q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80="),
        ("ATRIUM_BCRYPT_COST", "4"),
        ("ATRIUM_WORKERS", "2"),
        ("ATRIUM_DB_POOL_SIZE", "4"),
        // Tests run many servers at once on two cores: give a busy pool time (the outage
        // test sets the production default).
        ("ATRIUM_DB_TIMEOUT_MS", "10000"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .chain(std::iter::once(("ATRIUM_PACKAGE_DIR".to_owned(), package_dir(database_url).display().to_string())))
    .collect()
}

/// Kept packages of the test database at `database_url`, in the temporary directory: one per
/// database, so instances sharing a database share it, as deployments must.
pub fn package_dir(database_url: &str) -> std::path::PathBuf {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    database_url.hash(&mut h);
    std::env::temp_dir().join("atrium-tests").join(format!("packages-{:016x}", h.finish()))
}

impl TestApp {
    /// A server on a fresh database of `backend`; `None` for PostgreSQL when there is no
    /// server to test on (see [`pg_admin_url`]).
    pub async fn start(backend: Backend) -> Option<TestApp> {
        TestApp::start_with(backend, &[]).await
    }

    /// As [`start`](Self::start), with extra configuration variables.
    pub async fn start_with(backend: Backend, vars: &[(&str, &str)]) -> Option<TestApp> {
        let db = match backend {
            Backend::Sqlite => TestDatabase::sqlite(),
            Backend::Postgres => TestDatabase::postgres()?,
        };
        let app = TestApp::start_on(db, vars).await;
        Some(app)
    }

    /// A server on an existing test database (to run several instances on one database).
    pub async fn start_on(db: TestDatabase, vars: &[(&str, &str)]) -> TestApp {
        let mut all = base_vars(&db.url);
        for (k, v) in vars {
            all.retain(|(name, _)| name != k);
            all.push((k.to_string(), v.to_string()));
        }
        let config = Config::from_vars(|k| all.iter().find(|(name, _)| name == k).map(|(_, v)| v.clone())).expect("test config is valid");
        let running = atrium_server::start(config).await.expect("server starts");
        let base = format!("http://{}", running.addr);
        let admin_password = running.bootstrap_password.clone().unwrap_or_default();
        let client = atrium_wechat::http::client_builder().expect("TLS context").build().expect("client");
        TestApp { base, client, admin_password, running, db }
    }

    /// A second instance on the same database (same secrets), as a horizontally scaled
    /// deployment would run it.
    pub async fn second_instance(&self) -> TestApp {
        let db = self.db.share();
        TestApp::start_on(db, &[]).await
    }

    /// As [`second_instance`](Self::second_instance), with extra configuration variables.
    pub async fn second_instance_with(&self, vars: &[(&str, &str)]) -> TestApp {
        TestApp::start_on(self.db.share(), vars).await
    }

    /// Stops the server and its background jobs, waiting for in-flight requests. (Stopping
    /// only the HTTP server would leave the job runners polling a database the test then
    /// drops, each waiting out the pool's checkout timeout.)
    pub async fn stop(self) {
        self.running.stop(true).await;
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// Sends the request. An error answer of the main interface must carry a `data.reason`
    /// that the OpenAPI document lists for its operation and status: every test that meets
    /// an error checks the document's lists as it goes.
    pub async fn send(&self, req: reqwest::RequestBuilder) -> Resp {
        let (client, request) = req.build_split();
        let request = request.expect("request is built");
        let (method, path) = (request.method().as_str().to_lowercase(), request.url().path().to_owned());
        let resp = client.execute(request).await.expect("request is sent");
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let bytes = resp.bytes().await.expect("body is read");
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        check_reason(&method, &path, status, &body);
        Resp { status, headers, body }
    }

    fn with_token(req: reqwest::RequestBuilder, token: Option<&str>) -> reqwest::RequestBuilder {
        match token {
            Some(t) => req.bearer_auth(t),
            None => req,
        }
    }

    pub async fn get(&self, path: &str, token: Option<&str>) -> Resp {
        self.send(Self::with_token(self.client.get(self.url(path)), token)).await
    }

    pub async fn post(&self, path: &str, body: Value, token: Option<&str>) -> Resp {
        self.send(Self::with_token(self.client.post(self.url(path)).json(&body), token)).await
    }

    /// A POST with an `Idempotency-Key` header.
    pub async fn post_with_key(&self, path: &str, key: &str, body: Value, token: &str) -> Resp {
        self.send(self.client.post(self.url(path)).bearer_auth(token).header("Idempotency-Key", key).json(&body)).await
    }

    pub async fn put(&self, path: &str, body: Value, token: Option<&str>) -> Resp {
        self.send(Self::with_token(self.client.put(self.url(path)).json(&body), token)).await
    }

    pub async fn delete(&self, path: &str, token: Option<&str>) -> Resp {
        self.send(Self::with_token(self.client.delete(self.url(path)), token)).await
    }

    /// Password login; panics unless it succeeds. Returns `data`.
    pub async fn login(&self, username: &str, password: &str) -> Value {
        let r = self.post("/api/v1/auth/login", json!({"method": "password", "username": username, "password": password}), None).await;
        r.expect(200);
        r.body["data"].clone()
    }

    /// An access token of the bootstrap `admin`.
    pub async fn admin_token(&self) -> String {
        let data = self.login("admin", &self.admin_password).await;
        data["access_token"].as_str().expect("access token").to_owned()
    }
}

/// Defines an end-to-end test run once per backend: `mod $name { sqlite, postgres }`.
/// The body gets `app: &TestApp`; the server is stopped afterwards.
#[macro_export]
macro_rules! e2e {
    ($name:ident, |$app:ident| $body:block) => {
        $crate::e2e!(@with $name, [], |$app| $body);
    };
    ($name:ident, vars = [$(($k:expr, $v:expr)),* $(,)?], |$app:ident| $body:block) => {
        $crate::e2e!(@with $name, [$(($k, $v)),*], |$app| $body);
    };
    // Variables shared by several tests: a `const` array of `(name, value)`.
    ($name:ident, vars = $vars:ident, |$app:ident| $body:block) => {
        $crate::e2e!(@with $name, $vars, |$app| $body);
    };
    (@with $name:ident, $vars:expr, |$app:ident| $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            async fn run($app: &$crate::TestApp) $body

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let app = $crate::TestApp::start_with($crate::Backend::Sqlite, &$vars).await.expect("sqlite always runs");
                run(&app).await;
                app.stop().await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                let Some(app) = $crate::TestApp::start_with($crate::Backend::Postgres, &$vars).await else {
                    $crate::skip_postgres(module_path!());
                    return;
                };
                run(&app).await;
                app.stop().await;
            }
        }
    };
}

/// A populated org for scope tests: two partners, three tenants, and a user per party.
pub struct Org {
    pub admin: String,
    pub p1: i64,
    pub p2: i64,
    /// Tenant of partner 1.
    pub t1: i64,
    /// Tenant of partner 2.
    pub t2: i64,
    /// Partner admin of p1.
    pub p1_admin: String,
    /// Partner admin of p2.
    pub p2_admin: String,
    /// Tenant admins.
    pub t1_admin: String,
    pub t2_admin: String,
    /// A payroll clerk of t1 (employee:read only among org permissions).
    pub t1_clerk: String,
    pub t1_admin_id: i64,
}

/// Built-in role ids (seeded by migration).
pub const PARTNER_ADMIN: i64 = 2;
pub const TENANT_ADMIN: i64 = 3;
pub const PAYROLL_CLERK: i64 = 4;

impl TestApp {
    /// POST that must succeed; returns `data`.
    pub async fn create(&self, path: &str, body: Value, token: &str) -> Value {
        let r = self.post(path, body, Some(token)).await;
        assert_eq!(r.status, 200, "POST {path} failed: {}", r.body);
        r.body["data"].clone()
    }

    /// Creates a user and returns its access token.
    pub async fn user_token(&self, creator: &str, username: &str, extra: Value) -> (i64, String) {
        let mut body = json!({"username": username, "password": "user-pass-123", "name": username});
        if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                b.insert(k.clone(), v.clone());
            }
        }
        let user = self.create("/api/v1/users", body, creator).await;
        let data = self.login(username, "user-pass-123").await;
        (user["id"].as_i64().expect("user id"), data["access_token"].as_str().expect("token").to_owned())
    }

    /// Two partners with a tenant each, admins for all four, and a clerk in t1.
    pub async fn org(&self) -> Org {
        let admin = self.admin_token().await;
        let p1 = self.create("/api/v1/partners", json!({"name": "Partner One"}), &admin).await["id"].as_i64().expect("id");
        let p2 = self.create("/api/v1/partners", json!({"name": "Partner Two"}), &admin).await["id"].as_i64().expect("id");
        let t1 = self.create("/api/v1/tenants", json!({"name": "Tenant One", "partner_id": p1}), &admin).await["id"].as_i64().expect("id");
        let t2 = self.create("/api/v1/tenants", json!({"name": "Tenant Two", "partner_id": p2}), &admin).await["id"].as_i64().expect("id");
        let (_, p1_admin) = self.user_token(&admin, "p1admin", json!({"partner_id": p1, "role_ids": [PARTNER_ADMIN]})).await;
        let (_, p2_admin) = self.user_token(&admin, "p2admin", json!({"partner_id": p2, "role_ids": [PARTNER_ADMIN]})).await;
        let (t1_admin_id, t1_admin) = self.user_token(&admin, "t1admin", json!({"tenant_id": t1, "role_ids": [TENANT_ADMIN]})).await;
        let (_, t2_admin) = self.user_token(&admin, "t2admin", json!({"tenant_id": t2, "role_ids": [TENANT_ADMIN]})).await;
        let (_, t1_clerk) = self.user_token(&admin, "t1clerk", json!({"tenant_id": t1, "role_ids": [PAYROLL_CLERK]})).await;
        Org { admin, p1, p2, t1, t2, p1_admin, p2_admin, t1_admin, t2_admin, t1_clerk, t1_admin_id }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_concrete_path_finds_its_operation_literal_segments_first() {
        let doc = atrium_api::openapi_document();
        let id = |method: &str, path: &str| operation_of(&doc, method, path).map(|op| op["operationId"].clone());
        assert_eq!(id("post", "/api/v1/orders/7/pay"), Some(json!("orders_pay")));
        assert_eq!(id("get", "/api/v1/payroll-sheets/3/bank-file"), Some(json!("payroll_bank_file")));
        assert_eq!(id("get", "/api/v1/roles/permissions"), Some(json!("roles_permissions")));
        assert_eq!(id("get", "/api/v1/roles/4"), Some(json!("roles_get")));
        assert_eq!(id("patch", "/api/v1/roles/4"), None);
    }

    #[test]
    fn an_error_with_a_listed_reason_passes() {
        check_reason("post", "/api/v1/payroll-sheets/3/approve", 403, &json!({"data": {"reason": "four_eyes"}}));
        check_reason("post", "/api/v1/orders/3/refund", 409, &json!({"data": {"reason": "refund_exceeds_paid"}}));
        // Not the main interface, or not an error: nothing to check.
        check_reason("get", "/api/docs/3", 403, &json!({"data": null}));
        check_reason("get", "/api/v1/orders/3", 200, &json!({"data": {}}));
    }

    #[test]
    #[should_panic(expected = "does not list")]
    fn an_error_with_a_reason_its_operation_does_not_list_fails() {
        check_reason("post", "/api/v1/orders", 409, &json!({"data": {"reason": "four_eyes"}}));
    }

    #[test]
    #[should_panic(expected = "without data.reason")]
    fn an_error_without_a_reason_fails() {
        check_reason("post", "/api/v1/orders/3/refund", 409, &json!({"data": null}));
    }
}
