//! `kill -9` in the middle of a platform call, with the built `atrium` binary: one process
//! plays the pay platform (its sandbox), another is the Atrium under test, paying through
//! it as through the real platform (`ATRIUM_PLATFORM=wechat`). The platform holds a call's
//! answer back; Atrium is killed while it waits, started again on the same database, and the
//! client retries. No money moves twice, the books match the platform's, nothing is left
//! stuck. On SQLite, and on PostgreSQL when a server is there (see `atrium_store::testing`).
#![allow(clippy::unwrap_used)]
use atrium_store::testing::TestDatabase;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const MCHID: &str = "1900000051";
const APPID: &str = "wx_sandbox_mp";
const OPENID: &str = "o_crash_payer";

/// A running `atrium serve`.
struct Proc {
    child: Child,
    base: String,
    admin_password: Option<String>,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A directory of its own for a test's files.
fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(&format!("atrium-crash-{name}-")).tempdir().unwrap()
}

/// A port free now, for an instance that must come back on the same address.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Starts `atrium serve` with `vars` (and the test basics), logging to `log`; returns once it
/// listens.
fn serve(vars: &[(&str, String)], log: &std::path::Path) -> Proc {
    let log = std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_atrium"))
        .arg("serve")
        .env_clear()
        .envs([
            ("ATRIUM_JWT_SECRET", "crash-test-secret-0123456789abcdef-xyz".to_owned()),
            ("ATRIUM_MASTER_KEY", "q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80=".to_owned()),
            ("ATRIUM_BCRYPT_COST", "4".to_owned()),
            ("ATRIUM_WORKERS", "2".to_owned()),
            ("ATRIUM_DB_POOL_SIZE", "4".to_owned()),
            ("ATRIUM_JOB_POLL_MS", "100".to_owned()),
            // A dead request's Idempotency-Key is taken over after 5 s (a minute by default).
            ("ATRIUM_IDEMPOTENCY_STALE_SECS", "5".to_owned()),
            ("ATRIUM_LOG", "info".to_owned()),
        ])
        .envs(vars.iter().map(|(k, v)| (*k, v.clone())))
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log))
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut admin_password = None;
    let base = loop {
        let line = lines.next().expect("the server says where it listens before it ends").unwrap();
        if let Some(p) = line.split("with password: ").nth(1) {
            admin_password = Some(p.trim().to_owned());
        }
        if let Some(rest) = line.strip_prefix("atrium is listening on http://") {
            break rest.split_whitespace().next().unwrap().to_owned();
        }
    };
    // Keep draining its output so it never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    Proc { child, base, admin_password }
}

struct Client {
    http: reqwest::Client,
}

impl Client {
    async fn send(&self, req: reqwest::RequestBuilder) -> (u16, Value) {
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    async fn post(&self, url: String, body: Value, token: Option<&str>) -> (u16, Value) {
        let mut req = self.http.post(url).json(&body);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        self.send(req).await
    }

    async fn get(&self, url: String, token: Option<&str>) -> (u16, Value) {
        let mut req = self.http.get(url);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        self.send(req).await
    }
}

/// A `multipart/form-data` body of text parts: (content type, body).
fn multipart(parts: &[(&str, &str)]) -> (String, Vec<u8>) {
    let boundary = "atrium-crash-boundary-5d1e";
    let mut body = String::new();
    for (name, value) in parts {
        body.push_str(&format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"));
    }
    body.push_str(&format!("--{boundary}--\r\n"));
    (format!("multipart/form-data; boundary={boundary}"), body.into_bytes())
}

/// The platform process, Atrium's database and the way to (re)start Atrium on it.
struct World {
    platform: Proc,
    vars: Vec<(&'static str, String)>,
    log: PathBuf,
    client: Client,
    _db: TestDatabase,
    /// Removed last, after the processes writing into it are gone.
    _dir: tempfile::TempDir,
}

impl World {
    fn new(db: TestDatabase) -> World {
        let tmp = temp_dir("world");
        let dir = tmp.path();
        let platform = serve(
            &[
                ("DATABASE_URL", format!("sqlite://{}/platform.db", dir.display())),
                ("ATRIUM_BIND", "127.0.0.1:0".to_owned()),
                ("ATRIUM_PACKAGE_DIR", dir.join("platform-packages").display().to_string()),
            ],
            &dir.join("platform.log"),
        );
        let port = free_port();
        let vars = vec![
            ("DATABASE_URL", db.url.clone()),
            ("ATRIUM_BIND", format!("127.0.0.1:{port}")),
            ("ATRIUM_PUBLIC_URL", format!("http://127.0.0.1:{port}")),
            ("ATRIUM_PLATFORM", "wechat".to_owned()),
            ("ATRIUM_WECHAT_PAY_BASE", format!("http://{}/sandbox/pay", platform.base)),
            ("ATRIUM_PACKAGE_DIR", dir.join("packages").display().to_string()),
        ];
        World { platform, vars, log: dir.join("atrium.log"), client: Client { http: reqwest::Client::new() }, _db: db, _dir: tmp }
    }

    fn start(&self) -> Proc {
        serve(&self.vars, &self.log)
    }

    fn p(&self, path: &str) -> String {
        format!("http://{}{path}", self.platform.base)
    }

    /// What the platform holds of `out_trade_no`.
    async fn trade(&self, out_trade_no: &str) -> Value {
        let (status, body) = self.client.get(self.p(&format!("/sandbox/control/trade?out_trade_no={out_trade_no}")), None).await;
        assert_eq!(status, 200, "{body}");
        body
    }

    /// Waits up to `secs` for `done` on what the platform holds of the profit sharing of the
    /// sub-merchant's payment `no`; returns what it holds last.
    async fn wait_sharing(&self, no: &str, secs: u64, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        loop {
            let url = self.p(&format!("/sandbox/control/profitsharing?sub_mchid={SUB_MCHID}&out_trade_no={no}"));
            let (status, held) = self.client.get(url, None).await;
            assert_eq!(status, 200, "{held}");
            if done(&held) || tokio::time::Instant::now() > deadline {
                return held;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits up to `secs` for `done` on what the platform holds of `out_trade_no`.
    async fn wait_trade(&self, out_trade_no: &str, secs: u64, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        loop {
            let t = self.trade(out_trade_no).await;
            if done(&t) || tokio::time::Instant::now() > deadline {
                return t;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// How the crash test's tenant collects.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Into its own merchant account.
    Direct,
    /// As a sub-merchant of the platform's service provider (the partner endpoints).
    SubMerchant,
}

const SP_MCHID: &str = "1900000052";
const SP_APPID: &str = "wx_crash_sp";
const SUB_MCHID: &str = "1900000053";

/// Atrium's admin token, a tenant paid into a merchant of the platform process, its own or a
/// sub-merchant of the provider: (token, tenant).
async fn shop(w: &World, atrium: &Proc, mode: Mode) -> (String, i64) {
    let (token, tenant) = direct_shop(w, atrium).await;
    if mode == Mode::Direct {
        return (token, tenant);
    }
    let a = |path: &str| format!("http://{}{path}", atrium.base);
    let (status, m) = w.client.post(w.p("/sandbox/control/merchant"), json!({"mchid": SP_MCHID, "appid": SP_APPID}), None).await;
    assert_eq!(status, 200, "{m}");
    let put = |body: Value| w.client.http.put(a("/api/v1/platform/pay-provider")).bearer_auth(&token).json(&body);
    let (status, body) = w.client.send(put(json!({"sp_mchid": SP_MCHID, "sp_appid": SP_APPID, "api_v3_key": m["api_v3_key"]}))).await;
    assert_eq!(status, 200, "{body}");
    upload_keys(w, &a("/api/v1/platform/pay-provider/cert/upload"), &token, &m, &[]).await;
    let (status, body) = w.client.send(put(json!({"sp_mchid": SP_MCHID, "sp_appid": SP_APPID, "enabled": true}))).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) =
        w.client.post(w.p("/sandbox/control/sub-merchant"), json!({"sp_mchid": SP_MCHID, "sub_mchid": SUB_MCHID}), None).await;
    assert_eq!(status, 200, "{body}");
    let switch = json!({"tenant_id": tenant, "mode": "sub_merchant", "sub_mchid": SUB_MCHID, "enabled": true});
    let (status, body) = w.client.send(w.client.http.put(a("/api/v1/miniprogram/payment/config")).bearer_auth(&token).json(&switch)).await;
    assert_eq!(status, 200, "{body}");
    (token, tenant)
}

/// Atrium's admin token, a tenant paid into a merchant of the platform process: (token, tenant).
async fn direct_shop(w: &World, atrium: &Proc) -> (String, i64) {
    let a = |path: &str| format!("http://{}{path}", atrium.base);
    let password = atrium.admin_password.clone().expect("a first start prints the admin password");
    let (status, login) =
        w.client.post(a("/api/v1/auth/login"), json!({"method": "password", "username": "admin", "password": password}), None).await;
    assert_eq!(status, 200, "{login}");
    let token = login["data"]["access_token"].as_str().unwrap().to_owned();
    let (status, tenant) = w.client.post(a("/api/v1/tenants"), json!({"name": "Crash Shop"}), Some(&token)).await;
    assert_eq!(status, 200, "{tenant}");
    let tenant = tenant["data"]["id"].as_i64().unwrap();
    let (status, m) = w.client.post(w.p("/sandbox/control/merchant"), json!({"mchid": MCHID, "appid": APPID}), None).await;
    assert_eq!(status, 200, "{m}");
    let put = |body: Value| w.client.http.put(a("/api/v1/miniprogram/payment/config")).bearer_auth(&token).json(&body);
    let (status, body) =
        w.client.send(put(json!({"tenant_id": tenant, "mchid": MCHID, "appid": APPID, "api_v3_key": m["api_v3_key"]}))).await;
    assert_eq!(status, 200, "{body}");
    upload_keys(w, &a("/api/v1/miniprogram/payment/cert/upload"), &token, &m, &[("tenant_id", &tenant.to_string())]).await;
    let (status, body) = w.client.send(put(json!({"tenant_id": tenant, "mchid": MCHID, "appid": APPID, "enabled": true}))).await;
    assert_eq!(status, 200, "{body}");
    (token, tenant)
}

/// Uploads the keys the platform issued merchant `m` to `url` (a tenant's or the provider's
/// upload), with the `extra` parts.
async fn upload_keys(w: &World, url: &str, token: &str, m: &Value, extra: &[(&str, &str)]) {
    let text = |k: &str| m[k].as_str().unwrap().to_owned();
    let keys = [
        ("private_key", text("private_key_pem")),
        ("certificate", text("certificate_pem")),
        ("platform_public_key", text("platform_public_key_pem")),
        ("platform_public_key_id", text("platform_public_key_id")),
    ];
    let parts: Vec<(&str, &str)> = extra.iter().copied().chain(keys.iter().map(|(k, v)| (*k, v.as_str()))).collect();
    let (content_type, form) = multipart(&parts);
    let upload = w.client.http.post(url).bearer_auth(token).header("content-type", content_type).body(form);
    let (status, body) = w.client.send(upload).await;
    assert_eq!(status, 200, "{body}");
}

async fn order(w: &World, atrium: &Proc, token: &str, id: i64) -> Value {
    let (status, body) = w.client.get(format!("http://{}/api/v1/orders/{id}", atrium.base), Some(token)).await;
    assert_eq!(status, 200, "{body}");
    body["data"].clone()
}

async fn wait_order(w: &World, atrium: &Proc, token: &str, id: i64, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let o = order(w, atrium, token, id).await;
        if done(&o) || tokio::time::Instant::now() > deadline {
            return o;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Holds the platform's next answer to `path` back for a long while (after doing the work).
async fn hold_answer(w: &World, path: &str) {
    let (status, body) =
        w.client.post(w.p("/sandbox/control/pay-delay"), json!({"path": path, "delay_ms": 30_000, "times": 1}), None).await;
    assert_eq!(status, 200, "{body}");
}

async fn killed_in_platform_calls_moves_the_money_exactly_once(db: TestDatabase, mode: Mode) {
    let w = World::new(db);
    let mut atrium = w.start();
    let (token, tenant) = shop(&w, &atrium, mode).await;
    let a = |p: &Proc, path: &str| format!("http://{}{path}", p.base);

    // 1. Killed while the platform places the order.
    let (status, created) = w
        .client
        .post(
            a(&atrium, "/api/v1/orders"),
            json!({"tenant_id": tenant, "subject": "Crash", "amount": 10_000, "openid": OPENID}),
            Some(&token),
        )
        .await;
    assert_eq!(status, 200, "{created}");
    let (id, no) = (created["data"]["id"].as_i64().unwrap(), created["data"]["order_no"].as_str().unwrap().to_owned());
    hold_answer(&w, if mode == Mode::Direct { "/v3/pay/transactions/jsapi" } else { "/v3/pay/partner/transactions/jsapi" }).await;
    let pay_url = a(&atrium, &format!("/api/v1/orders/{id}/pay"));
    let in_flight = tokio::spawn({
        let (http, token) = (w.client.http.clone(), token.clone());
        async move { http.post(pay_url).bearer_auth(token).json(&json!({"method": "wechat_jsapi"})).send().await.map(|r| r.status()) }
    });
    let placed = w.wait_trade(&no, 10, |t| !t["order"].is_null()).await;
    assert!(!placed["order"].is_null(), "the platform got the order: {placed}");
    atrium.child.kill().unwrap();
    atrium.child.wait().unwrap();
    assert!(in_flight.await.unwrap().is_err(), "the request in flight dies with the process");
    drop(atrium);

    atrium = w.start();
    let (status, pay) =
        w.client.post(a(&atrium, &format!("/api/v1/orders/{id}/pay")), json!({"method": "wechat_jsapi"}), Some(&token)).await;
    assert_eq!(status, 200, "paying again after the restart resumes the platform order: {pay}");
    assert_eq!(pay["data"]["pay_params"]["package"], format!("prepay_id={}", placed["order"]["prepay_id"].as_str().unwrap()));
    let (status, paid) =
        w.client.post(w.p("/sandbox/control/pay"), json!({"pay_params": pay["data"]["pay_params"], "result": "SUCCESS"}), None).await;
    assert_eq!(status, 200, "{paid}");
    let o = wait_order(&w, &atrium, &token, id, |o| o["status"] == "paid").await;
    assert_eq!((o["status"].as_str(), o["paid_amount"].as_i64()), (Some("paid"), Some(10_000)), "{o}");

    // 2. Killed while the platform refunds.
    hold_answer(&w, "/v3/refund/domestic/refunds").await;
    let refund_url = a(&atrium, &format!("/api/v1/orders/{id}/refund"));
    let in_flight = tokio::spawn({
        let (http, token, url) = (w.client.http.clone(), token.clone(), refund_url.clone());
        async move {
            http.post(url)
                .bearer_auth(token)
                .header("Idempotency-Key", "crash-refund-1")
                .json(&json!({"amount": 4_000}))
                .send()
                .await
                .map(|r| r.status())
        }
    });
    let refunded = w.wait_trade(&no, 10, |t| t["refunds"].as_array().is_some_and(|r| !r.is_empty())).await;
    assert_eq!(refunded["refunds"].as_array().map(Vec::len), Some(1), "the platform got the refund: {refunded}");
    atrium.child.kill().unwrap();
    atrium.child.wait().unwrap();
    assert!(in_flight.await.unwrap().is_err(), "the request in flight dies with the process");
    drop(atrium);

    atrium = w.start();
    // The client retries under its key: "in progress" until the dead request's claim is stale
    // (5 s here), then it runs again under the same refund number.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let retried = loop {
        let req = w
            .client
            .http
            .post(a(&atrium, &format!("/api/v1/orders/{id}/refund")))
            .bearer_auth(&token)
            .header("Idempotency-Key", "crash-refund-1");
        let (status, body) = w.client.send(req.json(&json!({"amount": 4_000}))).await;
        if status == 200 {
            break body;
        }
        assert_eq!(status, 409, "only 'in progress' is expected while the dead request's claim holds: {body}");
        assert!(tokio::time::Instant::now() < deadline, "the retry never ran: {body}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let on_platform = w.trade(&no).await;
    let refunds = on_platform["refunds"].as_array().unwrap();
    assert_eq!(refunds.len(), 1, "no second refund went out: {on_platform}");
    assert_eq!(retried["data"]["refund"]["out_refund_no"], refunds[0]["out_refund_no"]);
    let (status, settled) = w
        .client
        .post(w.p("/sandbox/control/refund"), json!({"out_refund_no": refunds[0]["out_refund_no"], "result": "SUCCESS"}), None)
        .await;
    assert_eq!(status, 200, "{settled}");
    let o = wait_order(&w, &atrium, &token, id, |o| o["refunded_amount"] == 4_000).await;
    assert_eq!((o["status"].as_str(), o["refunded_amount"].as_i64()), (Some("partially_refunded"), Some(4_000)), "{o}");
    let books = o["refunds"].as_array().unwrap();
    assert_eq!((books.len(), books[0]["status"].as_str()), (1, Some("succeeded")), "the books match the platform's: {o}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_in_platform_calls_on_sqlite() {
    killed_in_platform_calls_moves_the_money_exactly_once(TestDatabase::sqlite(), Mode::Direct).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_in_platform_calls_on_postgres() {
    let Some(db) = TestDatabase::postgres() else {
        atrium_store::testing::skip_postgres(module_path!());
        return;
    };
    killed_in_platform_calls_moves_the_money_exactly_once(db, Mode::Direct).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_in_a_sub_merchants_platform_calls_on_sqlite() {
    killed_in_platform_calls_moves_the_money_exactly_once(TestDatabase::sqlite(), Mode::SubMerchant).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_in_a_sub_merchants_platform_calls_on_postgres() {
    let Some(db) = TestDatabase::postgres() else {
        atrium_store::testing::skip_postgres(module_path!());
        return;
    };
    killed_in_platform_calls_moves_the_money_exactly_once(db, Mode::SubMerchant).await;
}

/// Killed while the platform holds back the answer to a share request, then to a return before
/// a refund: each is asked again under its number after the restart, nothing moves twice.
async fn killed_while_sharing_shares_exactly_once(db: TestDatabase) {
    let mut w = World::new(db);
    w.vars.extend([("ATRIUM_SHARING_DELAY_SECS", "0".to_owned()), ("ATRIUM_SHARING_RETRY_SECS", "1".to_owned())]);
    let mut atrium = w.start();
    let (token, tenant) = shop(&w, &atrium, Mode::SubMerchant).await;
    let a = |p: &Proc, path: &str| format!("http://{}{path}", p.base);
    // The provider's name (its share's receiver needs it), a partner on a plan, the tenant its.
    let (status, body) = w
        .client
        .send(w.client.http.put(a(&atrium, "/api/v1/platform/pay-provider")).bearer_auth(&token).json(&json!({
            "sp_mchid": SP_MCHID, "sp_appid": SP_APPID, "sp_name": "Crash Platform Ltd", "platform_bp": 60
        })))
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, partner) = w.client.post(a(&atrium, "/api/v1/partners"), json!({"name": "Crash Partner"}), Some(&token)).await;
    assert_eq!(status, 200, "{partner}");
    let partner = partner["data"]["id"].as_i64().unwrap();
    // Paid to a merchant: only a merchant's part can be taken back before a refund.
    let plan =
        json!({"commission_bp": 250, "receiver": {"type": "MERCHANT_ID", "account": CRASH_PARTNER_MCHID, "name": "Crash Partner Co"}});
    let put_plan = w.client.http.put(a(&atrium, &format!("/api/v1/partners/{partner}/share-plan"))).bearer_auth(&token).json(&plan);
    let (status, body) = w.client.send(put_plan).await;
    assert_eq!(status, 200, "{body}");
    let moved =
        w.client.http.put(a(&atrium, &format!("/api/v1/tenants/{tenant}"))).bearer_auth(&token).json(&json!({"partner_id": partner}));
    let (status, body) = w.client.send(moved).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = w.client.post(w.p("/sandbox/control/profitsharing/rules"), json!({"one_minute": false}), None).await;
    assert_eq!(status, 200, "{body}");

    // Paid; the platform takes the share request and holds its answer back; Atrium dies waiting.
    hold_answer(&w, "/v3/profitsharing/orders").await;
    let order =
        json!({"tenant_id": tenant, "description": "Crash tea", "amount": 10_001, "openid": OPENID, "out_trade_no": "T_CRASH_SHARE"});
    let (status, placed) = w.client.post(a(&atrium, "/api/v1/miniprogram/payment/unified-order"), order, Some(&token)).await;
    assert_eq!(status, 200, "{placed}");
    let (status, paid) =
        w.client.post(w.p("/sandbox/control/pay"), json!({"pay_params": placed["data"]["pay_params"], "result": "SUCCESS"}), None).await;
    assert_eq!(status, 200, "{paid}");
    let requested = w.wait_sharing("T_CRASH_SHARE", 20, |held| held["orders"].as_array().is_some_and(|o| !o.is_empty())).await;
    assert_eq!(requested["orders"].as_array().map(Vec::len), Some(1), "the platform got the share request: {requested}");
    atrium.child.kill().unwrap();
    atrium.child.wait().unwrap();
    drop(atrium);

    // Started again: the platform's profit-sharing notifications (retried while Atrium was down)
    // run the sharing at once; the request is asked again under its number.
    atrium = w.start();
    let held = w.wait_sharing("T_CRASH_SHARE", 60, |held| held["unfrozen"].is_object()).await;
    let shares: Vec<&Value> = held["orders"].as_array().unwrap().iter().filter(|o| o["kind"] == "share").collect();
    assert_eq!(shares.len(), 1, "one share request, never a second: {held}");
    assert_eq!((held["shared"].as_i64(), held["unfrozen"]["amount"].as_i64()), (Some(310), Some(10_001 - 310)), "{held}");
    let (status, ours) = w.client.get(a(&atrium, "/api/v1/miniprogram/payment/shares?out_trade_no=T_CRASH_SHARE"), Some(&token)).await;
    assert_eq!(status, 200, "{ours}");
    let mut books: Vec<(i64, &str)> =
        ours["data"]["items"].as_array().unwrap().iter().map(|s| (s["amount"].as_i64().unwrap(), s["status"].as_str().unwrap())).collect();
    books.sort();
    assert_eq!(books, [(60, "succeeded"), (250, "succeeded")], "the books match the platform's: {ours}");

    // A refund of a third: the platform takes the first part back and holds its answer; Atrium
    // dies waiting, before the second part and the refund.
    hold_answer(&w, "/v3/profitsharing/return-orders").await;
    let refund_url = a(&atrium, "/api/v1/miniprogram/payment/refund");
    let refund = json!({"tenant_id": tenant, "out_trade_no": "T_CRASH_SHARE", "out_refund_no": "R_CRASH_SHARE", "amount": 3_333});
    let in_flight = tokio::spawn({
        let (http, token, url, body) = (w.client.http.clone(), token.clone(), refund_url.clone(), refund.clone());
        async move { http.post(url).bearer_auth(token).json(&body).send().await.map(|r| r.status()) }
    });
    let asked = w.wait_sharing("T_CRASH_SHARE", 20, |held| held["returns"].as_array().is_some_and(|r| !r.is_empty())).await;
    assert_eq!(asked["returns"].as_array().map(Vec::len), Some(1), "the platform took the first part back: {asked}");
    atrium.child.kill().unwrap();
    atrium.child.wait().unwrap();
    assert!(in_flight.await.unwrap().is_err(), "the request in flight dies with the process");
    drop(atrium);

    // Asked again after the restart: the first return again under its number (the platform's
    // answer is the one it made), the second, then the refund; nothing taken back twice.
    atrium = w.start();
    let (status, body) = w.client.post(a(&atrium, "/api/v1/miniprogram/payment/refund"), refund, Some(&token)).await;
    assert_eq!(status, 200, "{body}");
    let held = w.wait_sharing("T_CRASH_SHARE", 10, |held| held["returns"].as_array().is_some_and(|r| r.len() >= 2)).await;
    let returns: Vec<(&str, i64, &str)> = held["returns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["return_mchid"].as_str().unwrap(), r["amount"].as_i64().unwrap(), r["result"].as_str().unwrap()))
        .collect();
    assert_eq!(returns, [(SP_MCHID, 19, "SUCCESS"), (CRASH_PARTNER_MCHID, 83, "SUCCESS")], "each part once: {held}");
    let refunds = w.trade("T_CRASH_SHARE").await["refunds"].as_array().cloned().unwrap();
    assert_eq!((refunds.len(), refunds[0]["amount"].as_i64()), (1, Some(3_333)), "one refund, after the returns: {refunds:?}");
    let (status, ours) = w.client.get(a(&atrium, "/api/v1/miniprogram/payment/shares?out_trade_no=T_CRASH_SHARE"), Some(&token)).await;
    assert_eq!(status, 200, "{ours}");
    let mut books: Vec<i64> = ours["data"]["items"].as_array().unwrap().iter().map(|s| s["returned"].as_i64().unwrap()).collect();
    books.sort();
    assert_eq!(books, [19, 83], "the books match the platform's: {ours}");
}

/// The partner's merchant account in the crash test's share plan.
const CRASH_PARTNER_MCHID: &str = "1900000190";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_while_sharing_on_sqlite() {
    killed_while_sharing_shares_exactly_once(TestDatabase::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_while_sharing_on_postgres() {
    let Some(db) = TestDatabase::postgres() else {
        atrium_store::testing::skip_postgres(module_path!());
        return;
    };
    killed_while_sharing_shares_exactly_once(db).await;
}
