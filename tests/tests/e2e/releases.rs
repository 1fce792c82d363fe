//! Mini-program code releases over HTTP, on SQLite and PostgreSQL, with the in-process sandbox
//! playing the WeChat third-party platform: the authorisation, template and package uploads,
//! audits passed, rejected and lost (found by asking and by the poll job), gray and full
//! releases, rollback, the platform's errcodes, bad packages and events that change nothing,
//! tenant scope, whose templates a tenant may commit, and work that must happen exactly once
//! (concurrent submissions, upload jobs on two instances).
#![allow(clippy::unwrap_used)]
use atrium_e2e::serde_json::{Value, json};
use atrium_e2e::{DbJobStore, Resp, TestApp, e2e, join_all};
use atrium_kernel::JobStore;
use std::io::Write;
use std::time::Duration;

/// The tenant's mini-program.
pub(super) const APPID: &str = "wx_e2e_shop_one";
/// Another tenant's mini-program.
pub(super) const OTHER_APPID: &str = "wx_e2e_shop_two";
const AUDIT_POLL_JOB: &str = "miniprogram.audit_poll";

// ---- The tenant, its authorisation and its uploads ----

pub(super) async fn new_tenant(app: &TestApp, admin: &str, name: &str) -> i64 {
    app.create("/api/v1/tenants", json!({"name": name}), admin).await["id"].as_i64().unwrap()
}

async fn authorization(app: &TestApp, token: &str, tenant: i64) -> Resp {
    app.get(&format!("/api/v1/miniprogram/authorization?tenant_id={tenant}"), Some(token)).await
}

/// Waits for the sandbox's first verify ticket to have arrived: until the authorisation link
/// appears (asking the sandbox for another ticket if it is slow).
pub(super) async fn link_ready(app: &TestApp, token: &str, tenant: i64) {
    for i in 0..100 {
        let r = authorization(app, token, tenant).await;
        r.expect(200);
        if r.data()["authorize_url"].is_string() {
            return;
        }
        if i == 30 {
            app.post("/sandbox/control/verify-ticket", json!({}), None).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no authorisation link for tenant {tenant}: no verify ticket arrived");
}

/// The mini-program's admin authorises `appid` for `tenant` on the platform's page (the
/// sandbox follows the redirect to our callback); returns the sandbox's report.
pub(super) async fn authorise(app: &TestApp, token: &str, tenant: i64, appid: &str) -> Value {
    link_ready(app, token, tenant).await;
    let r = app.post("/sandbox/control/authorize", json!({"tenant_id": tenant, "authorizer_appid": appid}), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["callback_status"], 200, "the callback answered: {}", r.body);
    r.body
}

/// `POST /miniprogram/upload` of template 1 as `version`.
async fn template_upload(app: &TestApp, token: &str, tenant: Option<i64>, version: &str) -> Resp {
    template_upload_of(app, token, tenant, 1, version).await
}

/// `POST /miniprogram/upload` of template `template_id` as `version`.
async fn template_upload_of(app: &TestApp, token: &str, tenant: Option<i64>, template_id: i64, version: &str) -> Resp {
    let mut body = json!({
        "template_id": template_id,
        "ext_json": {"extEnable": true, "ext": {"shop": "Shop"}},
        "version": version,
        "description": format!("Version {version}"),
    });
    if let Some(t) = tenant {
        body["tenant_id"] = json!(t);
    }
    app.post("/api/v1/miniprogram/upload", body, Some(token)).await
}

/// A `multipart/form-data` package upload: (content type, body).
fn package_form(tenant: Option<i64>, version: &str, zip: &[u8]) -> (String, Vec<u8>) {
    let boundary = "atrium-release-boundary-5d1e";
    let mut body = Vec::new();
    let mut text = |name: &str, value: &str| {
        body.extend_from_slice(format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n").as_bytes());
    };
    if let Some(t) = tenant {
        text("tenant_id", &t.to_string());
    }
    text("version", version);
    text("description", &format!("Package {version}"));
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"package\"; filename=\"shop.zip\"\r\nContent-Type: application/zip\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(zip);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

async fn package_upload(app: &TestApp, token: &str, tenant: Option<i64>, version: &str, zip: &[u8]) -> Resp {
    let (content_type, body) = package_form(tenant, version, zip);
    let req = app.client.post(app.url("/api/v1/miniprogram/upload")).bearer_auth(token).header("content-type", content_type);
    app.send(req.body(body)).await
}

/// Waits until upload task `id` has finished (`uploaded` or `failed`); returns it.
async fn finished_upload(app: &TestApp, token: &str, id: i64) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let r = app.get(&format!("/api/v1/miniprogram/upload-tasks/{id}"), Some(token)).await;
        r.expect(200);
        let task = r.data().clone();
        if matches!(task["status"].as_str(), Some("uploaded" | "failed")) || tokio::time::Instant::now() > deadline {
            return task;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A template upload of `version`, run to `uploaded`; returns the task's id.
pub(super) async fn uploaded_template(app: &TestApp, token: &str, tenant: i64, version: &str) -> i64 {
    let r = template_upload(app, token, Some(tenant), version).await;
    r.expect(200);
    let id = r.data()["id"].as_i64().unwrap();
    let task = finished_upload(app, token, id).await;
    assert_eq!(task["status"], "uploaded", "{task}");
    id
}

pub(super) async fn submit(app: &TestApp, token: &str, upload: i64) -> Resp {
    app.post("/api/v1/miniprogram/audit/submit", json!({"upload_task_id": upload}), Some(token)).await
}

/// An uploaded template version submitted for audit: the audit task's id.
pub(super) async fn running_audit(app: &TestApp, token: &str, tenant: i64, version: &str) -> i64 {
    let upload = uploaded_template(app, token, tenant, version).await;
    let s = submit(app, token, upload).await;
    s.expect(200);
    s.data()["id"].as_i64().unwrap()
}

/// The reviewers decide `appid`'s running audit (`decision` holds `result` and the rest);
/// returns the sandbox's report.
async fn decide(app: &TestApp, appid: &str, mut decision: Value) -> Value {
    decision["authorizer_appid"] = json!(appid);
    let r = app.post("/sandbox/control/audit", decision, None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
}

/// A page of a task list, as stored (the lists never ask the platform).
async fn list(app: &TestApp, token: &str, path: &str) -> Value {
    let sep = if path.contains('?') { '&' } else { '?' };
    let r = app.get(&format!("/api/v1/miniprogram/{path}{sep}page_size=100"), Some(token)).await;
    r.expect(200);
    r.data().clone()
}

async fn upload_total(app: &TestApp, token: &str, tenant: i64) -> i64 {
    list(app, token, &format!("upload-tasks?tenant_id={tenant}")).await["total"].as_i64().unwrap()
}

async fn audit_total(app: &TestApp, token: &str, tenant: i64) -> i64 {
    list(app, token, &format!("audit-tasks?tenant_id={tenant}")).await["total"].as_i64().unwrap()
}

/// Audit task `id` as stored, without asking the platform.
async fn stored_audit(app: &TestApp, token: &str, tenant: i64, id: i64) -> Value {
    let page = list(app, token, &format!("audit-tasks?tenant_id={tenant}")).await;
    page["items"].as_array().unwrap().iter().find(|a| a["id"] == id).cloned().unwrap_or_else(|| panic!("no audit task {id} in {page}"))
}

/// Waits up to `secs` for stored audit task `id` to be `status`; returns it.
async fn wait_audit(app: &TestApp, token: &str, tenant: i64, id: i64, status: &str, secs: u64) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let audit = stored_audit(app, token, tenant, id).await;
        if audit["status"] == status || tokio::time::Instant::now() > deadline {
            return audit;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// An uploaded template version submitted for audit and passed by the reviewers, the result
/// pushed: (upload task id, audit task id).
async fn passed_audit(app: &TestApp, token: &str, tenant: i64, appid: &str, version: &str) -> (i64, i64) {
    let upload = uploaded_template(app, token, tenant, version).await;
    let r = submit(app, token, upload).await;
    r.expect(200);
    let audit = r.data()["id"].as_i64().unwrap();
    decide(app, appid, json!({"auditid": r.data()["auditid"], "result": "passed"})).await;
    assert_eq!(wait_audit(app, token, tenant, audit, "passed", 10).await["status"], "passed");
    (upload, audit)
}

async fn publish(app: &TestApp, token: &str, audit: i64, mode: Value) -> Resp {
    let mut body = mode;
    body["audit_task_id"] = json!(audit);
    app.post("/api/v1/miniprogram/publish", body, Some(token)).await
}

async fn versions(app: &TestApp, token: &str, tenant: i64) -> Resp {
    app.get(&format!("/api/v1/miniprogram/versions?tenant_id={tenant}"), Some(token)).await
}

/// The next `times` platform calls to `path` answer `errcode`.
async fn fail_next(app: &TestApp, path: &str, errcode: i64, times: u32) {
    let r = app.post("/sandbox/control/fail", json!({"path": path, "errcode": errcode, "times": times}), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
}

/// The mini-program as the platform holds it.
pub(super) async fn platform_view(app: &TestApp, appid: &str) -> Value {
    let r = app.get(&format!("/sandbox/control/miniprogram?appid={appid}"), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
}

async fn ci_uploads(app: &TestApp) -> Vec<Value> {
    app.get("/sandbox/control/ci-uploads", None).await.body["uploads"].as_array().unwrap().clone()
}

/// A 409 whose `data.errors` names `field`; returns its messages.
#[track_caller]
pub(super) fn expect_blocked(r: &Resp, field: &str) -> String {
    r.expect(409);
    let errors = r.body["data"]["errors"].as_array().unwrap_or_else(|| panic!("no data.errors in {}", r.body));
    let named: Vec<&str> = errors.iter().filter(|e| e["field"] == field).filter_map(|e| e["message"].as_str()).collect();
    assert!(!named.is_empty(), "no error for {field}: {}", r.body);
    named.join("; ")
}

// ---- Packages ----

/// A zip of these entries, deflated.
fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for (name, data) in entries {
        zip.start_file(*name, options).unwrap();
        zip.write_all(data).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

const PROJECT_CONFIG: &[u8] = br#"{"miniprogramRoot": "./", "compileType": "miniprogram"}"#;
const APP_JSON: &[u8] = br#"{"pages": ["pages/index/index"]}"#;

/// A minimal project with `extra` entries.
fn project_zip(extra: &[(&str, &[u8])]) -> Vec<u8> {
    let mut entries: Vec<(&str, &[u8])> = vec![
        ("project.config.json", PROJECT_CONFIG),
        ("app.json", APP_JSON),
        ("pages/index/index.js", b"Page({})"),
        ("pages/index/index.wxml", b"<view>Shop</view>"),
    ];
    entries.extend_from_slice(extra);
    zip_of(&entries)
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("{:x}", sha2::Sha256::digest(bytes))
}

/// The kept packages (`<sha256>.zip`) and the files left in `incoming` in the package
/// directory of `app`'s database.
fn package_files(app: &TestApp) -> (Vec<String>, usize) {
    let dir = atrium_e2e::package_dir(&app.db.url);
    let names = |d: &std::path::Path| -> Vec<String> {
        std::fs::read_dir(d)
            .map(|entries| {
                entries.filter_map(|e| e.ok()).filter(|e| e.path().is_file()).filter_map(|e| e.file_name().into_string().ok()).collect()
            })
            .unwrap_or_default()
    };
    let mut kept = names(&dir);
    kept.sort();
    (kept, names(&dir.join("incoming")).len())
}

// ---- Events ----

/// The sandbox's pushes of `kind` about `appid`, oldest first.
async fn pushes(app: &TestApp, kind: &str, appid: &str) -> Vec<Value> {
    let r = app.get(&format!("/sandbox/control/events?kind={kind}&authorizer_appid={appid}"), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["events"].as_array().unwrap().clone()
}

/// Posts a recorded push to `url` as the platform posts it, with `msg_signature`: (status,
/// answer).
async fn deliver(app: &TestApp, url: &str, push: &Value, msg_signature: &str) -> (u16, String) {
    let s = |k: &str| push[k].as_str().unwrap().to_owned();
    let resp = app
        .client
        .post(url)
        .query(&[
            ("signature", s("signature")),
            ("timestamp", s("timestamp")),
            ("nonce", s("nonce")),
            ("encrypt_type", "aes".to_owned()),
            ("msg_signature", msg_signature.to_owned()),
        ])
        .header("content-type", "text/xml; charset=utf-8")
        .body(s("body"))
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.text().await.unwrap())
}

// ---- Jobs ----

/// The value of a counter series in a metrics text (0 when absent).
pub(super) fn counter(metrics: &str, series: &str) -> u64 {
    metrics.lines().find_map(|l| l.strip_prefix(series).and_then(|v| v.trim().parse().ok())).unwrap_or(0)
}

/// The calls `app` made to the platform's `endpoint`, whatever they were answered: every
/// attempt is counted, once it has an answer (or none).
fn platform_calls(app: &TestApp, endpoint: &str) -> u64 {
    let prefix = format!("atrium_platform_calls_total{{endpoint=\"{endpoint}\",");
    let metrics = app.running.metrics.render();
    metrics.lines().filter_map(|l| l.strip_prefix(prefix.as_str())).filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok()).sum()
}

/// `AUDIT_POLL_JOB`s still queued (also those due later), waited for up to `secs` to be
/// `want`: a runner counts a job completed just before it removes it.
async fn wait_audit_polls_queued(app: &TestApp, want: u64, secs: u64) -> u64 {
    let jobs = DbJobStore::new(app.running.db.clone());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let queued = jobs.depth(AUDIT_POLL_JOB.into(), chrono::Utc::now() + chrono::Duration::days(30)).await.unwrap();
        if queued == want || tokio::time::Instant::now() > deadline {
            return queued;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Makes every queued audit poll due now, as if the half hour after submission had passed:
/// each is claimed as a runner would claim it 31 minutes from now (leased, so the next claim
/// passes it by), then handed back due now. Returns the audit task ids they poll.
async fn audit_polls_due_now(app: &TestApp) -> Vec<i64> {
    let jobs = DbJobStore::new(app.running.db.clone());
    let now = chrono::Utc::now();
    assert_eq!(jobs.depth(AUDIT_POLL_JOB.into(), now).await.unwrap(), 0, "an audit poll is due before its half hour");
    let later = now + chrono::Duration::minutes(31);
    let mut claimed = Vec::new();
    while let Some(job) = jobs.claim(vec![AUDIT_POLL_JOB.into()], later, 3600).await.unwrap() {
        assert!(job.run_at > now + chrono::Duration::minutes(29), "the poll was due at {}, before its half hour", job.run_at);
        claimed.push(job);
    }
    for job in &claimed {
        jobs.retry(job.id, chrono::Utc::now(), "made due by the test".into()).await.unwrap();
    }
    claimed.iter().map(|j| j.payload["audit_task_id"].as_i64().unwrap()).collect()
}

// ---- The whole flow ----

e2e!(a_release_runs_from_authorisation_through_gray_and_full_to_rollback, vars = [("ATRIUM_JOB_POLL_MS", "50")], |app| {
    let admin = app.admin_token().await;
    let tenant = new_tenant(app, &admin, "Shop").await;

    // Before the authorisation, nothing can be uploaded.
    let none = authorization(app, &admin, tenant).await;
    none.expect(200);
    assert_eq!((none.data()["status"].as_str(), &none.data()["authorizer_appid"]), (Some("none"), &Value::Null), "{}", none.body);
    expect_blocked(&template_upload(app, &admin, Some(tenant), "0.9.0").await, "authorization");

    let report = authorise(app, &admin, tenant, APPID).await;
    assert_eq!(report["info_type"], "authorized");
    let auth = authorization(app, &admin, tenant).await;
    auth.expect(200);
    let a = auth.data();
    assert_eq!((a["status"].as_str(), a["authorizer_appid"].as_str()), (Some("authorized"), Some(APPID)), "{}", auth.body);
    assert!(a["func_info"].as_array().unwrap().contains(&json!(18)), "{}", auth.body);
    assert!(a["authorized_at"].is_string());
    let shown = auth.body.to_string();
    for secret in ["refresh", "refreshtoken@@@", "queryauthcode@@@", "access_token", "ticket"] {
        assert!(!shown.contains(secret), "the authorisation shows {secret}: {shown}");
    }

    // 1.0.0 from template 1 of the library.
    let t = template_upload(app, &admin, Some(tenant), "1.0.0").await;
    t.expect(200);
    assert_eq!(
        (t.data()["status"].as_str(), t.data()["kind"].as_str(), t.data()["template_id"].as_i64()),
        (Some("queued"), Some("template"), Some(1))
    );
    let template_task = t.data()["id"].as_i64().unwrap();
    let done = finished_upload(app, &admin, template_task).await;
    assert_eq!(done["status"], "uploaded", "{done}");
    assert!(done["errcode"].is_null() && done["started_at"].is_string() && done["finished_at"].is_string(), "{done}");
    let committed = &platform_view(app, APPID).await["committed"];
    assert_eq!((committed["user_version"].as_str(), committed["template_id"].as_i64()), (Some("1.0.0"), Some(1)), "{committed}");

    // 1.1.0 as a package: kept by its hash, uploaded to the template-development mini-program,
    // added to the library and committed from there.
    let zip = project_zip(&[]);
    let sha = sha256_hex(&zip);
    let p = package_upload(app, &admin, Some(tenant), "1.1.0", &zip).await;
    p.expect(200);
    let d = p.data();
    assert_eq!((d["status"].as_str(), d["kind"].as_str()), (Some("queued"), Some("package")), "{}", p.body);
    assert_eq!((d["package_sha256"].as_str(), d["package_size"].as_u64()), (Some(sha.as_str()), Some(zip.len() as u64)));
    let package_task = d["id"].as_i64().unwrap();
    assert_eq!(package_files(app), (vec![format!("{sha}.zip")], 0), "kept once by its hash, nothing left incoming");
    let done = finished_upload(app, &admin, package_task).await;
    assert_eq!(done["status"], "uploaded", "{done}");
    let new_template = done["template_id"].as_i64().unwrap();
    assert!(new_template > 2, "a new template of the library: {done}");
    let uploads = ci_uploads(app).await;
    assert_eq!(uploads.len(), 1, "{uploads:?}");
    assert_eq!((uploads[0]["sha256"].as_str(), uploads[0]["size"].as_u64()), (Some(sha.as_str()), Some(zip.len() as u64)));
    assert_eq!(
        (uploads[0]["version"].as_str(), uploads[0]["desc"].as_str()),
        (Some("1.1.0"), Some(format!("atrium upload task {package_task}").as_str()))
    );
    let committed = &platform_view(app, APPID).await["committed"];
    assert_eq!((committed["user_version"].as_str(), committed["template_id"].as_i64()), (Some("1.1.0"), Some(new_template)));
    let listed = list(app, &admin, &format!("upload-tasks?tenant_id={tenant}")).await;
    let listed: Vec<&str> = listed["items"].as_array().unwrap().iter().map(|t| t["version"].as_str().unwrap()).collect();
    assert_eq!(listed, ["1.1.0", "1.0.0"], "newest first");

    // Only the latest upload can be audited; the reviewers pass it and the result is pushed.
    expect_blocked(&submit(app, &admin, template_task).await, "upload_task_id");
    let s = submit(app, &admin, package_task).await;
    s.expect(200);
    assert_eq!((s.data()["status"].as_str(), s.data()["version"].as_str()), (Some("auditing"), Some("1.1.0")), "{}", s.body);
    let audit = s.data()["id"].as_i64().unwrap();
    let decided = decide(app, APPID, json!({"auditid": s.data()["auditid"], "result": "passed"})).await;
    assert_eq!(decided["event"]["delivered"], true, "{decided}");
    assert_eq!(decided["event"]["attempts"][0]["answer"], "success", "{decided}");
    let stored = stored_audit(app, &admin, tenant, audit).await;
    assert_eq!(stored["status"], "passed", "the pushed result was applied: {stored}");
    assert!(stored["decided_at"].is_string());
    let status = app.get(&format!("/api/v1/miniprogram/audit/status?audit_task_id={audit}"), Some(&admin)).await;
    status.expect(200);
    assert_eq!(status.data()["status"], "passed");

    // Gray to 10 %, then 50 %; a step that does not rise, or out of 1–100, changes nothing.
    for pct in [10, 50] {
        let r = publish(app, &admin, audit, json!({"mode": "gray", "gray_percentage": pct})).await;
        r.expect(200);
        let d = r.data();
        assert_eq!(
            (d["kind"].as_str(), d["gray_percentage"].as_i64(), d["status"].as_str()),
            (Some("gray"), Some(pct), Some("succeeded")),
            "{}",
            r.body
        );
        assert_eq!(d["version"], "1.1.0");
    }
    for pct in [50, 30] {
        expect_blocked(&publish(app, &admin, audit, json!({"mode": "gray", "gray_percentage": pct})).await, "gray_percentage");
    }
    for bad in [
        json!({"mode": "gray", "gray_percentage": 0}),
        json!({"mode": "gray", "gray_percentage": 101}),
        json!({"mode": "gray"}),
        json!({"mode": "full", "gray_percentage": 60}),
    ] {
        publish(app, &admin, audit, bad).await.expect_field_error("gray_percentage");
    }
    assert_eq!(platform_view(app, APPID).await["gray"]["gray_percentage"], 50);
    assert_eq!(stored_audit(app, &admin, tenant, audit).await["gray_percentage"], 50);
    let v = versions(app, &admin, tenant).await;
    v.expect(200);
    assert_eq!(
        (v.data()["gray_plan"]["status"].as_i64(), v.data()["gray_plan"]["gray_percentage"].as_i64()),
        (Some(1), Some(50)),
        "{}",
        v.body
    );

    // Everyone.
    let full = publish(app, &admin, audit, json!({"mode": "full"})).await;
    full.expect(200);
    assert_eq!((full.data()["kind"].as_str(), full.data()["status"].as_str()), (Some("full"), Some("succeeded")));
    expect_blocked(&publish(app, &admin, audit, json!({"mode": "full"})).await, "audit_task_id");
    expect_blocked(&publish(app, &admin, audit, json!({"mode": "gray", "gray_percentage": 90})).await, "audit_task_id");
    let v = versions(app, &admin, tenant).await;
    v.expect(200);
    assert_eq!(v.data()["release"]["user_version"], "1.1.0", "{}", v.body);
    assert_eq!(v.data()["experience"]["user_version"], "1.1.0");
    assert_eq!(v.data()["history"], json!([]));
    assert!(stored_audit(app, &admin, tenant, audit).await["released_at"].is_string());
    let qr = app
        .send(
            app.client
                .get(app.url(&format!("/api/v1/miniprogram/experience-qr?tenant_id={tenant}&path=pages/index/index?from=qr")))
                .bearer_auth(&admin),
        )
        .await;
    assert_eq!((qr.status, qr.header("content-type")), (200, Some("image/jpeg")));
    // A path the platform would refuse (a leading /, a space) is a 400 saying why, not the
    // platform's 40097 as a 502.
    for (bad, why) in [("/pages/index/index", "must not start with /"), ("pages/a%20b", "must not contain spaces")] {
        let r = app.get(&format!("/api/v1/miniprogram/experience-qr?tenant_id={tenant}&path={bad}"), Some(&admin)).await;
        r.expect(400);
        assert!(r.body["message"].as_str().unwrap().contains(why), "{}", r.body);
    }

    // A second version goes live, then the rollback goes back to 1.1.0.
    let (_, second) = passed_audit(app, &admin, tenant, APPID, "1.2.0").await;
    publish(app, &admin, second, json!({"mode": "full"})).await.expect(200);
    let v = versions(app, &admin, tenant).await;
    v.expect(200);
    assert_eq!(v.data()["release"]["user_version"], "1.2.0", "{}", v.body);
    assert_eq!(v.data()["history"][0]["user_version"], "1.1.0", "{}", v.body);
    assert!(v.data()["history"][0]["app_version"].is_i64());
    let back = app.post("/api/v1/miniprogram/rollback", json!({"tenant_id": tenant}), Some(&admin)).await;
    back.expect(200);
    assert_eq!((back.data()["kind"].as_str(), back.data()["status"].as_str()), (Some("rollback"), Some("succeeded")), "{}", back.body);
    let v = versions(app, &admin, tenant).await;
    v.expect(200);
    assert_eq!(v.data()["release"]["user_version"], "1.1.0", "{}", v.body);
    assert_eq!(v.data()["history"], json!([]), "a version rolled back from is not gone back to");
    // Nothing earlier is left: the platform's 87012 is a 409.
    let again = app.post("/api/v1/miniprogram/rollback", json!({"tenant_id": tenant}), Some(&admin)).await;
    assert!(expect_blocked(&again, "platform").contains("87012"), "{}", again.body);
    app.post("/api/v1/miniprogram/rollback", json!({"tenant_id": tenant, "app_version": 0}), Some(&admin))
        .await
        .expect_field_error("app_version");
    assert_eq!((upload_total(app, &admin, tenant).await, audit_total(app, &admin, tenant).await), (3, 2));
});

// ---- Audit results: rejected, lost ----

e2e!(a_rejected_audit_carries_its_reason_and_screenshots, vars = [("ATRIUM_JOB_POLL_MS", "50")], |app| {
    let admin = app.admin_token().await;
    let tenant = new_tenant(app, &admin, "Shop").await;
    authorise(app, &admin, tenant, APPID).await;
    let audit = running_audit(app, &admin, tenant, "1.0.0").await;
    // The reviewers need longer first: still running, not publishable.
    let delayed = decide(app, APPID, json!({"result": "delayed", "reason": "Needs a closer look"})).await;
    assert_eq!(delayed["event"]["delivered"], true, "{delayed}");
    assert_eq!(wait_audit(app, &admin, tenant, audit, "delayed", 5).await["status"], "delayed");
    expect_blocked(&publish(app, &admin, audit, json!({"mode": "full"})).await, "audit_task_id");
    let decided = decide(
        app,
        APPID,
        json!({"result": "rejected", "reason": "1:The shop page is empty", "screenshots": ["media_1", "media_2"], "push": true}),
    )
    .await;
    assert_eq!(decided["event"]["delivered"], true, "{decided}");

    // The pushed result, as stored (no platform call), and as the status route shows it.
    let stored = wait_audit(app, &admin, tenant, audit, "rejected", 5).await;
    assert_eq!(stored["status"], "rejected", "{stored}");
    assert_eq!(stored["reason"], "1:The shop page is empty");
    assert_eq!(stored["screenshots"], json!(["media_1", "media_2"]));
    assert!(stored["decided_at"].is_string());
    let status = app.get(&format!("/api/v1/miniprogram/audit/status?audit_task_id={audit}"), Some(&admin)).await;
    status.expect(200);
    assert_eq!(status.data(), &stored);
    let latest = app.get(&format!("/api/v1/miniprogram/audit/status?tenant_id={tenant}"), Some(&admin)).await;
    latest.expect(200);
    assert_eq!(latest.data()["id"], audit);

    // A rejected audit is not published; the fixed version is audited anew.
    let r = publish(app, &admin, audit, json!({"mode": "full"})).await;
    assert!(expect_blocked(&r, "audit_task_id").contains("rejected"), "{}", r.body);
    let fixed = uploaded_template(app, &admin, tenant, "1.0.1").await;
    submit(app, &admin, fixed).await.expect(200);
    assert_eq!(audit_total(app, &admin, tenant).await, 2);
});

e2e!(a_lost_audit_result_is_found_by_asking_and_by_the_poll_job, vars = [("ATRIUM_JOB_POLL_MS", "50")], |app| {
    let admin = app.admin_token().await;
    let tenant = new_tenant(app, &admin, "Shop").await;
    authorise(app, &admin, tenant, APPID).await;

    // Passed, but the event never arrives: asking for the status asks the platform.
    let first = running_audit(app, &admin, tenant, "1.0.0").await;
    let decided = decide(app, APPID, json!({"result": "passed", "push": false})).await;
    assert_eq!(
        (decided["event"]["lost"].as_bool(), decided["event"]["attempts"].as_array().map(Vec::len)),
        (Some(true), Some(0)),
        "{decided}"
    );
    // Nothing can tell Atrium now: the event was never sent, and its poll is not due for half
    // an hour.
    nothing_tells(app, APPID).await;
    assert_eq!(stored_audit(app, &admin, tenant, first).await["status"], "auditing", "nothing told us yet");
    let status = app.get(&format!("/api/v1/miniprogram/audit/status?audit_task_id={first}"), Some(&admin)).await;
    status.expect(200);
    assert_eq!(status.data()["status"], "passed", "{}", status.body);
    assert_eq!(stored_audit(app, &admin, tenant, first).await["status"], "passed", "the answer is kept");
    publish(app, &admin, first, json!({"mode": "full"})).await.expect(200);

    // Rejected, the event lost, and nobody asks: the poll job, due half an hour after the
    // submission, finds it.
    let second = running_audit(app, &admin, tenant, "1.1.0").await;
    let decided =
        decide(app, APPID, json!({"result": "rejected", "reason": "1:Lost on the way", "screenshots": ["media_9"], "push": false})).await;
    assert_eq!(decided["event"]["lost"], true, "{decided}");
    nothing_tells(app, APPID).await;
    assert_eq!(stored_audit(app, &admin, tenant, second).await["status"], "auditing");
    let mut polled = audit_polls_due_now(app).await;
    polled.sort();
    assert_eq!(polled, [first, second], "one poll queued per audit");
    let found = wait_audit(app, &admin, tenant, second, "rejected", 15).await;
    assert_eq!(found["status"], "rejected", "the poll job found the result: {found}");
    assert_eq!((found["reason"].as_str(), &found["screenshots"]), (Some("1:Lost on the way"), &json!(["media_9"])));

    // Both polls ran once and are done (the first found its audit decided already).
    let series = "atrium_jobs_completed_total{kind=\"miniprogram.audit_poll\"}";
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while counter(&app.running.metrics.render(), series) < 2 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(counter(&app.running.metrics.render(), series), 2);
    assert_eq!(wait_audit_polls_queued(app, 0, 10).await, 0, "no poll is left");
    assert_eq!(counter(&app.running.metrics.render(), series), 2, "and none ran again");
    assert_eq!(
        platform_calls(app, "/wxa/get_auditstatus"),
        2,
        "one status call asked, one poll; the poll of the decided audit asked nothing"
    );
});

/// Asserts that nothing is on its way to tell Atrium about `appid`'s audit: no push of an
/// audit result was attempted but not yet answered (so none can still arrive), and no audit
/// poll is due.
async fn nothing_tells(app: &TestApp, appid: &str) {
    for kind in ["weapp_audit_success", "weapp_audit_fail", "weapp_audit_delay"] {
        for push in pushes(app, kind, appid).await {
            assert!(push["lost"] == true || push["delivered"] == true, "a push may still arrive: {push}");
        }
    }
    let jobs = DbJobStore::new(app.running.db.clone());
    assert_eq!(jobs.depth(AUDIT_POLL_JOB.into(), chrono::Utc::now()).await.unwrap(), 0, "an audit poll is due");
}

// ---- The platform's errcodes ----

e2e!(platform_errcodes_become_409_429_403_or_502_and_never_500, vars = [("ATRIUM_JOB_POLL_MS", "50")], |app| {
    let admin = app.admin_token().await;
    let tenant = new_tenant(app, &admin, "Shop").await;
    authorise(app, &admin, tenant, APPID).await;
    let upload = uploaded_template(app, &admin, tenant, "1.0.0").await;

    // Submissions the platform refuses record nothing.
    fail_next(app, "/wxa/submit_audit", 85009, 1).await;
    let r = submit(app, &admin, upload).await;
    assert!(expect_blocked(&r, "platform").contains("errcode 85009"), "{}", r.body);
    fail_next(app, "/wxa/submit_audit", 85085, 1).await;
    let r = submit(app, &admin, upload).await;
    r.expect(429);
    assert_eq!(r.header("retry-after"), Some("3600"));
    fail_next(app, "/wxa/submit_audit", 61007, 1).await;
    let r = submit(app, &admin, upload).await;
    r.expect(403);
    assert!(r.body["message"].as_str().unwrap().contains("61007"), "{}", r.body);
    assert_eq!(audit_total(app, &admin, tenant).await, 0);
    assert_eq!(platform_view(app, APPID).await["audits"], json!([]));
    assert_eq!(authorization(app, &admin, tenant).await.data()["status"], "authorized", "61007 revokes nothing");

    // An errcode without a meaning here: 502 with the platform's words.
    fail_next(app, "/wxa/getversioninfo", 89999, 1).await;
    let r = versions(app, &admin, tenant).await;
    r.expect(502);
    assert_eq!(r.data()["errcode"], 89999, "{}", r.body);
    assert!(r.data()["errmsg"].is_string(), "{}", r.body);

    // A failed commit fails its upload task with the errcode.
    fail_next(app, "/wxa/commit", 85014, 1).await;
    let r = template_upload(app, &admin, Some(tenant), "1.0.1").await;
    r.expect(200);
    let failed = finished_upload(app, &admin, r.data()["id"].as_i64().unwrap()).await;
    assert_eq!((failed["status"].as_str(), failed["errcode"].as_i64()), (Some("failed"), Some(85014)), "{failed}");

    // Live, then a rollback the platform refuses (a gray release running): 409.
    let (_, audit) = passed_audit(app, &admin, tenant, APPID, "1.0.2").await;
    publish(app, &admin, audit, json!({"mode": "full"})).await.expect(200);
    fail_next(app, "/wxa/revertcoderelease", 87011, 1).await;
    let r = app.post("/api/v1/miniprogram/rollback", json!({"tenant_id": tenant}), Some(&admin)).await;
    assert!(expect_blocked(&r, "platform").contains("errcode 87011"), "{}", r.body);
    versions(app, &admin, tenant).await.expect(200);
    assert_eq!(versions(app, &admin, tenant).await.data()["release"]["user_version"], "1.0.2");

    // 61003: the authorisation was withdrawn; it is recorded revoked, and the next calls
    // answer 409 until the admin authorises again.
    fail_next(app, "/wxa/getversioninfo", 61003, 1).await;
    let r = versions(app, &admin, tenant).await;
    r.expect(403);
    assert!(r.body["message"].as_str().unwrap().contains("61003"), "{}", r.body);
    let auth = authorization(app, &admin, tenant).await;
    assert_eq!((auth.data()["status"].as_str(), auth.data()["authorizer_appid"].as_str()), (Some("revoked"), Some(APPID)), "{}", auth.body);
    expect_blocked(&versions(app, &admin, tenant).await, "authorization");
    expect_blocked(&template_upload(app, &admin, Some(tenant), "1.0.3").await, "authorization");
    let report = authorise(app, &admin, tenant, APPID).await;
    assert_eq!(report["info_type"], "updateauthorized");
    assert_eq!(authorization(app, &admin, tenant).await.data()["status"], "authorized");
    versions(app, &admin, tenant).await.expect(200);
});

// ---- Bad input changes nothing ----

e2e!(bad_packages_and_used_versions_are_refused_and_keep_nothing, vars = [("ATRIUM_JOB_POLL_MS", "50")], |app| {
    let admin = app.admin_token().await;
    let tenant = new_tenant(app, &admin, "Shop").await;
    authorise(app, &admin, tenant, APPID).await;
    let good = project_zip(&[]);
    let r = package_upload(app, &admin, Some(tenant), "1.0.0", &good).await;
    r.expect(200);
    assert_eq!(finished_upload(app, &admin, r.data()["id"].as_i64().unwrap()).await["status"], "uploaded");
    let files = package_files(app);
    assert_eq!((files.0.len(), files.1), (1, 0));
    let ci = ci_uploads(app).await.len();

    let zeros = vec![0u8; 16 * 1024 * 1024];
    let bomb = project_zip(&[("pages/zeros.bin", &zeros)]);
    assert!(bomb.len() < 64 * 1024, "16 MiB of zeros pack small: {}", bomb.len());
    let cases: [(&str, Vec<u8>, &str); 6] = [
        ("not a zip", b"PK but not a zip at all; ".repeat(64), "not a zip"),
        ("no project.config.json", zip_of(&[("app.json", APP_JSON), ("pages/index/index.js", b"Page({})")]), "project.config.json"),
        ("no app.json", zip_of(&[("project.config.json", PROJECT_CONFIG), ("pages/index/index.js", b"Page({})")]), "app.json"),
        ("an entry climbing out", project_zip(&[("../evil.js", b"evil()")]), "outside"),
        ("an absolute entry", project_zip(&[("/etc/evil.js", b"evil()")]), "outside"),
        ("a zip bomb", bomb, "zip bomb"),
    ];
    for (i, (what, zip, says)) in cases.iter().enumerate() {
        let r = package_upload(app, &admin, Some(tenant), &format!("2.0.{i}"), zip).await;
        r.expect_field_error("package");
        let message = r.body["data"]["errors"][0]["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{what}: {}", r.body);
        assert_eq!(upload_total(app, &admin, tenant).await, 1, "{what}: no task recorded");
        assert_eq!(package_files(app), files, "{what}: nothing kept, nothing left incoming");
    }

    // Over 20 MiB: by the declared length, and while streaming (within the form's allowance).
    for size in [21 * 1024 * 1024, 20 * 1024 * 1024 + 1] {
        let big = vec![7u8; size];
        let r = package_upload(app, &admin, Some(tenant), "3.0.0", &big).await;
        r.expect(413);
        assert!(r.body["message"].as_str().unwrap().contains("package"), "{}", r.body);
        assert_eq!(upload_total(app, &admin, tenant).await, 1);
        assert_eq!(package_files(app), files, "{size} bytes: nothing kept, nothing left incoming");
    }

    // Versions are used once per tenant, by either kind of upload, and also by a failed one.
    let r = package_upload(app, &admin, Some(tenant), "1.0.0", &good).await;
    assert!(expect_blocked(&r, "version").contains("1.0.0"), "{}", r.body);
    expect_blocked(&template_upload(app, &admin, Some(tenant), "1.0.0").await, "version");
    fail_next(app, "/wxa/commit", 85014, 1).await;
    let r = template_upload(app, &admin, Some(tenant), "4.0.0").await;
    r.expect(200);
    assert_eq!(finished_upload(app, &admin, r.data()["id"].as_i64().unwrap()).await["status"], "failed");
    expect_blocked(&template_upload(app, &admin, Some(tenant), "4.0.0").await, "version");
    package_upload(app, &admin, Some(tenant), "1 0", &good).await.expect_field_error("version");
    template_upload(app, &admin, Some(tenant), "1/0").await.expect_field_error("version");
    assert_eq!(upload_total(app, &admin, tenant).await, 2);

    // A refused upload did not use its version; the same zip again is kept once.
    let r = package_upload(app, &admin, Some(tenant), "2.0.0", &good).await;
    r.expect(200);
    assert_eq!(finished_upload(app, &admin, r.data()["id"].as_i64().unwrap()).await["status"], "uploaded");
    assert_eq!(package_files(app), files, "one file per content");
    assert_eq!(ci_uploads(app).await.len(), ci + 1, "only accepted packages reached the platform");
});

e2e!(forged_foreign_and_repeated_events_change_nothing, vars = [("ATRIUM_JOB_POLL_MS", "50")], |app| {
    let admin = app.admin_token().await;
    let tenant = new_tenant(app, &admin, "Shop").await;
    let other = new_tenant(app, &admin, "Other shop").await;
    authorise(app, &admin, tenant, APPID).await;
    authorise(app, &admin, other, OTHER_APPID).await;
    passed_audit(app, &admin, tenant, APPID, "1.0.0").await;
    let event = pushes(app, "weapp_audit_success", APPID).await.pop().unwrap();
    assert_eq!(event["delivered"], true, "{event}");
    let url = event["url"].as_str().unwrap().to_owned();
    assert!(url.ends_with(&format!("/api/v1/miniprogram/component/messages/{APPID}")), "{url}");
    let signature = event["msg_signature"].as_str().unwrap().to_owned();

    // A new audit is running when the old result comes again, in each form.
    let running = running_audit(app, &admin, tenant, "1.1.0").await;
    let before = stored_audit(app, &admin, tenant, running).await;

    let forged: String = signature.chars().map(|c| if c == '0' { '1' } else { '0' }).collect();
    assert_eq!(deliver(app, &url, &event, &forged).await.0, 401, "a bad msg_signature");
    assert_eq!(deliver(app, &url, &event, "").await.0, 401, "no msg_signature");
    let foreign = url.replace(APPID, OTHER_APPID);
    assert_eq!(deliver(app, &foreign, &event, &signature).await.0, 401, "addressed to another tenant's mini-program");
    let stranger = url.replace(APPID, "wx_never_authorised");
    assert_eq!(deliver(app, &stranger, &event, &signature).await.0, 401, "a mini-program never authorised here");
    let (status, answer) = deliver(app, &url, &event, &signature).await;
    assert_eq!((status, answer.as_str()), (200, "success"), "an event seen before is acknowledged");
    assert_eq!(stored_audit(app, &admin, tenant, running).await, before, "and changes nothing");

    // The component's events too: a verify ticket with a bad signature.
    let ticket = app.get("/sandbox/control/events?kind=component_verify_ticket", None).await.body["events"][0].clone();
    let events_url = ticket["url"].as_str().unwrap().to_owned();
    assert_eq!(deliver(app, &events_url, &ticket, &forged).await.0, 401);
    let (status, answer) = deliver(app, &events_url, &ticket, ticket["msg_signature"].as_str().unwrap()).await;
    assert_eq!((status, answer.as_str()), (200, "success"), "a ticket seen before");
    // Still working: the running audit passes.
    decide(app, APPID, json!({"result": "passed"})).await;
    assert_eq!(wait_audit(app, &admin, tenant, running, "passed", 5).await["status"], "passed");
});

// The platform's audit events name no audit: a rejection of an earlier audit delivered late,
// while a newer one runs, must not decide the newer one.
e2e!(a_late_result_of_an_earlier_audit_does_not_decide_the_running_one, vars = [("ATRIUM_JOB_POLL_MS", "50")], |app| {
    let admin = app.admin_token().await;
    let tenant = new_tenant(app, &admin, "Shop").await;
    authorise(app, &admin, tenant, APPID).await;
    let earlier = running_audit(app, &admin, tenant, "1.0.0").await;
    decide(app, APPID, json!({"result": "rejected", "reason": "Blurry icon", "push": false})).await;
    let status = app.get(&format!("/api/v1/miniprogram/audit/status?audit_task_id={earlier}"), Some(&admin)).await;
    status.expect(200);
    assert_eq!(status.data()["status"], "rejected");
    let late = pushes(app, "weapp_audit_fail", APPID).await.pop().unwrap();
    assert_eq!(late["delivered"], false, "{late}");

    let running = running_audit(app, &admin, tenant, "1.0.1").await;
    let (code, answer) = deliver(app, late["url"].as_str().unwrap(), &late, late["msg_signature"].as_str().unwrap()).await;
    assert_eq!((code, answer.as_str()), (200, "success"));
    let audit = stored_audit(app, &admin, tenant, running).await;
    assert_eq!((audit["status"].as_str(), audit["reason"].as_str()), (Some("auditing"), None), "{audit}");

    // Its own result still decides it.
    decide(app, APPID, json!({"result": "passed"})).await;
    assert_eq!(wait_audit(app, &admin, tenant, running, "passed", 5).await["status"], "passed");
    publish(app, &admin, running, json!({"mode": "full"})).await.expect(200);
});

// ---- Tenant scope ----

e2e!(a_tenant_sees_and_acts_on_its_own_releases_only, vars = [("ATRIUM_JOB_POLL_MS", "50")], |app| {
    let org = app.org().await;
    authorise(app, &org.admin, org.t1, APPID).await;
    authorise(app, &org.admin, org.t2, OTHER_APPID).await;

    // Tenant 1's admin uploads and submits without naming its tenant.
    let r = template_upload(app, &org.t1_admin, None, "1.0.0").await;
    r.expect(200);
    assert_eq!(r.data()["tenant_id"], org.t1);
    let upload = r.data()["id"].as_i64().unwrap();
    assert_eq!(finished_upload(app, &org.t1_admin, upload).await["status"], "uploaded");
    let s = submit(app, &org.t1_admin, upload).await;
    s.expect(200);
    let audit = s.data()["id"].as_i64().unwrap();
    decide(app, APPID, json!({"result": "passed"})).await;
    assert_eq!(wait_audit(app, &org.t1_admin, org.t1, audit, "passed", 5).await["status"], "passed");
    let t2_upload = uploaded_template(app, &org.t2_admin, org.t2, "9.0.0").await;

    // Tenant 2's admin and partner 2's admin see none of it and act on none of it.
    for (who, token) in [("t2 admin", &org.t2_admin), ("p2 admin", &org.p2_admin)] {
        app.get(&format!("/api/v1/miniprogram/upload-tasks/{upload}"), Some(token)).await.expect(404);
        submit(app, token, upload).await.expect_no_such("upload_task_id");
        app.get(&format!("/api/v1/miniprogram/audit/status?audit_task_id={audit}"), Some(token)).await.expect_no_such("audit_task_id");
        publish(app, token, audit, json!({"mode": "full"})).await.expect_no_such("audit_task_id");
        for path in ["authorization", "versions", "experience-qr", "audit/status"] {
            let r = app.get(&format!("/api/v1/miniprogram/{path}?tenant_id={}", org.t1), Some(token)).await;
            assert_eq!(r.status, 404, "{who}: {path}: {}", r.body);
        }
        app.post("/api/v1/miniprogram/rollback", json!({"tenant_id": org.t1}), Some(token)).await.expect_no_such("tenant_id");
        template_upload(app, token, Some(org.t1), "6.6.6").await.expect_no_such("tenant_id");
        package_upload(app, token, Some(org.t1), "6.6.7", &project_zip(&[])).await.expect_no_such("tenant_id");
        for path in ["upload-tasks", "audit-tasks"] {
            let all = list(app, token, path).await;
            assert!(all["items"].as_array().unwrap().iter().all(|t| t["tenant_id"] == org.t2), "{who}: {path}: {all}");
            let filtered = list(app, token, &format!("{path}?tenant_id={}", org.t1)).await;
            assert_eq!(filtered["total"], 0, "{who}: {path} of tenant 1: {filtered}");
        }
        let own = list(app, token, "upload-tasks").await;
        assert_eq!(own["items"][0]["id"], t2_upload, "{who}: {own}");
    }
    // A tenant caller's list holds its own only; partner 1 and the platform see tenant 1's.
    let t1_list = list(app, &org.t1_admin, "upload-tasks").await;
    assert_eq!(t1_list["total"], 1, "{t1_list}");
    app.get(&format!("/api/v1/miniprogram/upload-tasks/{upload}"), Some(&org.p1_admin)).await.expect(200);
    assert_eq!(list(app, &org.admin, "upload-tasks").await["total"], 2);
    // Without a miniprogram permission: 403.
    app.get("/api/v1/miniprogram/upload-tasks", Some(&org.t1_clerk)).await.expect(403);

    // Nothing was released or changed on tenant 1's mini-program.
    let view = platform_view(app, APPID).await;
    assert!(view["live"].is_null() && view["gray"].is_null(), "{view}");
    assert_eq!(view["audits"].as_array().unwrap().len(), 1);
    assert_eq!(stored_audit(app, &org.admin, org.t1, audit).await["released_at"], Value::Null);
    assert_eq!(upload_total(app, &org.admin, org.t1).await, 1);
});

// ---- Whose templates ----

// A template made from a tenant's package is that tenant's: another tenant naming it (template
// ids count up, so they can be guessed) gets what a template in no library gets, and nothing
// reaches its mini-program. The templates the platform added are everyone's.
e2e!(a_template_made_from_a_tenants_package_is_that_tenants_alone, vars = [("ATRIUM_JOB_POLL_MS", "50")], |app| {
    let org = app.org().await;
    authorise(app, &org.admin, org.t1, APPID).await;
    authorise(app, &org.admin, org.t2, OTHER_APPID).await;

    // Tenant 1's own code becomes a template of the library.
    let zip = project_zip(&[("pages/index/secret.js", b"const recipe = 'tenant one only';")]);
    let r = package_upload(app, &org.t1_admin, None, "1.0.0", &zip).await;
    r.expect(200);
    let made = finished_upload(app, &org.t1_admin, r.data()["id"].as_i64().unwrap()).await;
    assert_eq!(made["status"], "uploaded", "{made}");
    let template = made["template_id"].as_i64().unwrap();
    assert_eq!(platform_view(app, APPID).await["committed"]["template_id"], template);

    // Tenant 2 names it, and then a template in no library: both are accepted as queued
    // (nothing is asked at this point), and both tasks fail alike.
    let mut tasks = Vec::new();
    for (version, template_id) in [("2.0.0", template), ("2.0.1", template + 1000)] {
        let r = template_upload_of(app, &org.t2_admin, None, template_id, version).await;
        r.expect(200);
        assert_eq!((r.data()["status"].as_str(), r.data()["template_id"].as_i64()), (Some("queued"), Some(template_id)), "{}", r.body);
        let task = finished_upload(app, &org.t2_admin, r.data()["id"].as_i64().unwrap()).await;
        assert_eq!((task["status"].as_str(), task["errcode"].as_i64()), (Some("failed"), Some(85014)), "template {template_id}: {task}");
        tasks.push(task);
    }
    let answer = |t: &Value| (t["status"].clone(), t["errcode"].clone(), t["error"].clone());
    assert_eq!(answer(&tasks[0]), answer(&tasks[1]), "another tenant's template answers as one that does not exist");
    let foreign = app.get(&format!("/api/v1/miniprogram/upload-tasks/{}", tasks[0]["id"]), Some(&org.t2_admin)).await;
    foreign.expect(200);
    assert!(!foreign.body.to_string().contains(&format!("upload task {}", made["id"])), "nothing names tenant 1's task: {}", foreign.body);
    let view = platform_view(app, OTHER_APPID).await;
    assert!(view["committed"].is_null(), "nothing was committed to tenant 2's mini-program: {view}");
    assert_eq!(platform_calls(app, "/wxa/commit"), 1, "the platform was asked to commit tenant 1's package only");

    // A template the platform added is shared: tenant 2 commits template 1.
    let r = template_upload_of(app, &org.t2_admin, None, 1, "2.1.0").await;
    r.expect(200);
    let shared = finished_upload(app, &org.t2_admin, r.data()["id"].as_i64().unwrap()).await;
    assert_eq!((shared["status"].as_str(), shared["errcode"].as_i64()), (Some("uploaded"), None), "{shared}");
    let committed = &platform_view(app, OTHER_APPID).await["committed"];
    assert_eq!((committed["template_id"].as_i64(), committed["user_version"].as_str()), (Some(1), Some("2.1.0")), "{committed}");

    // Tenant 1 may commit its own template again.
    let r = template_upload_of(app, &org.t1_admin, None, template, "1.0.1").await;
    r.expect(200);
    let again = finished_upload(app, &org.t1_admin, r.data()["id"].as_i64().unwrap()).await;
    assert_eq!(again["status"], "uploaded", "{again}");
    let committed = &platform_view(app, APPID).await["committed"];
    assert_eq!((committed["template_id"].as_i64(), committed["user_version"].as_str()), (Some(template), Some("1.0.1")), "{committed}");
});

// ---- Exactly once ----

e2e!(concurrent_audit_submissions_make_exactly_one_audit, vars = [("ATRIUM_JOB_POLL_MS", "50")], |app| {
    let admin = app.admin_token().await;
    let tenant = new_tenant(app, &admin, "Shop").await;
    authorise(app, &admin, tenant, APPID).await;
    let upload = uploaded_template(app, &admin, tenant, "1.0.0").await;
    assert_eq!(platform_calls(app, "/wxa/submit_audit"), 0);
    let answers = join_all((0..4).map(|_| submit(app, &admin, upload))).await;
    let mut statuses: Vec<u16> = answers.iter().map(|r| r.status).collect();
    statuses.sort();
    assert_eq!(statuses, [200, 409, 409, 409], "{:?}", answers.iter().map(|r| &r.body).collect::<Vec<_>>());
    for r in answers.iter().filter(|r| r.status == 409) {
        assert!(expect_blocked(r, "upload_task_id").contains("85009"), "{}", r.body);
    }
    assert_eq!(audit_total(app, &admin, tenant).await, 1);
    // Atrium's own guard, not the platform's 85009: the platform was asked once. (Every call
    // is counted when its answer is in, and all four answers are in.)
    assert_eq!(platform_calls(app, "/wxa/submit_audit"), 1, "Atrium sent one submission to the platform");
    assert_eq!(platform_view(app, APPID).await["audits"].as_array().unwrap().len(), 1, "the platform runs one audit");
    // The one audit runs: it cannot be published yet.
    let audit = answers.iter().find(|r| r.status == 200).unwrap().data()["id"].as_i64().unwrap();
    expect_blocked(&publish(app, &admin, audit, json!({"mode": "full"})).await, "audit_task_id");
});

/// Credentials both instances give the sandbox, so either can talk to the first one's.
const COMPONENT: [(&str, &str); 4] = [
    ("ATRIUM_WECHAT_COMPONENT_APPID", "wx_e2e_component"),
    ("ATRIUM_WECHAT_COMPONENT_SECRET", "e2e-component-secret"),
    ("ATRIUM_WECHAT_COMPONENT_TOKEN", "e2eToken123"),
    ("ATRIUM_WECHAT_COMPONENT_AES_KEY", "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFA"),
];

e2e!(
    two_instances_run_each_upload_job_exactly_once,
    vars = [
        ("ATRIUM_JOB_POLL_MS", "20"),
        ("ATRIUM_WECHAT_COMPONENT_APPID", "wx_e2e_component"),
        ("ATRIUM_WECHAT_COMPONENT_SECRET", "e2e-component-secret"),
        ("ATRIUM_WECHAT_COMPONENT_TOKEN", "e2eToken123"),
        ("ATRIUM_WECHAT_COMPONENT_AES_KEY", "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFA"),
    ],
    |app| {
        // The second instance reaches the first one's sandbox (each instance mounts its own).
        let mut vars = vec![("ATRIUM_JOB_POLL_MS", "20"), ("ATRIUM_PUBLIC_URL", app.base.as_str())];
        vars.extend(COMPONENT);
        let second = app.second_instance_with(&vars).await;
        // Its own sandbox pushed a verify ticket the first one never issued: once it has
        // arrived, the first sandbox pushes newer ones.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let events = second.get("/sandbox/control/events?kind=component_verify_ticket", None).await.body["events"].clone();
            if events[0]["delivered"] == true || tokio::time::Instant::now() > deadline {
                assert_eq!(events[0]["delivered"], true, "{events}");
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        for _ in 0..2 {
            let r = app.post("/sandbox/control/verify-ticket", json!({}), None).await;
            assert_eq!(r.status, 200, "{}", r.body);
        }
        let admin = app.admin_token().await;
        let tenant = new_tenant(app, &admin, "Shop").await;
        authorise(app, &admin, tenant, APPID).await;

        // Six uploads at once, half through each instance, so six jobs are due together and
        // both runners compete for them; each job may run on either.
        let versions: Vec<String> = (0..6).map(|i| format!("1.0.{i}")).collect();
        let zips: Vec<Vec<u8>> = versions.iter().map(|v| project_zip(&[("version.txt", v.as_bytes())])).collect();
        let answers = join_all(versions.iter().zip(&zips).enumerate().map(|(i, (v, zip))| {
            let via = if i % 2 == 0 { app } else { &second };
            package_upload(via, &admin, Some(tenant), v, zip)
        }))
        .await;
        let mut ids = Vec::new();
        for r in &answers {
            r.expect(200);
            ids.push(r.data()["id"].as_i64().unwrap());
        }
        for id in &ids {
            assert_eq!(finished_upload(app, &admin, *id).await["status"], "uploaded", "task {id}");
        }
        let uploads = ci_uploads(app).await;
        let mut descs: Vec<String> = uploads.iter().map(|u| u["desc"].as_str().unwrap().to_owned()).collect();
        descs.sort();
        let mut want: Vec<String> = ids.iter().map(|id| format!("atrium upload task {id}")).collect();
        want.sort();
        assert_eq!(descs, want, "each package went to the platform once");
        assert!(ci_uploads(&second).await.is_empty(), "the second sandbox played no part");
        // A runner counts a job completed after its task is written, so wait for the counts.
        let series = "atrium_jobs_completed_total{kind=\"miniprogram.upload\"}";
        let runs = || (counter(&app.running.metrics.render(), series), counter(&second.running.metrics.render(), series));
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while runs().0 + runs().1 < 6 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let (one, two) = runs();
        assert!(one > 0 && two > 0, "both instances claimed upload jobs: {one} on the first, {two} on the second");
        assert_eq!(one + two, 6, "each job ran once: {one} on the first instance, {two} on the second");
        let jobs = DbJobStore::new(app.running.db.clone());
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while jobs.depth("miniprogram.upload".into(), chrono::Utc::now()).await.unwrap() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(jobs.depth("miniprogram.upload".into(), chrono::Utc::now()).await.unwrap(), 0, "no upload job is left");
        assert_eq!(runs(), (one, two), "and none ran again");
        second.stop().await;
    }
);
