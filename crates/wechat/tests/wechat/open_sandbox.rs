//! The real third-party platform client (`WechatOpen`) against the sandbox's platform, mounted
//! as the server mounts it (`/sandbox`: API base `…/sandbox/api`, page base `…/sandbox/mp`),
//! with a small receiver on the same test server playing Atrium's event URLs and its
//! authorisation callback. Pushes are verified and decrypted with the client's own
//! `open_event`; the package upload goes through `SandboxUploader`. The settings calls
//! (domains, privacy, categories), the audit quota and the audit policy are played too.
#![allow(clippy::unwrap_used)]

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use atrium_miniprogram::{
    AuditQuota, AuditStatus, AuditSubmission, AuthorizerAccess, Category, CodeCommit, CodeUploader, EventKind, EventRequest, EventUrl,
    MiniProgramPlatform, PlatformError, PrivacyItem, PrivacyOwner, PrivacySettings, Secret, ServerDomains, StoredPackage, UploadJob,
};
use atrium_sandbox::{AuditPolicy, EXPERIENCE_QR_JPEG, PolicyResult, QuotaRequest, SANDBOX_TEMPLATE_DEV_APPID, Sandbox, SandboxUploader};
use atrium_wechat::{WechatOpen, WechatOpenConfig};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::Write;
use std::net::TcpListener;
use std::sync::Mutex;
use std::time::Duration;

/// What Atrium's URLs received.
#[derive(Default)]
struct Receiver {
    /// (URL kind, the message URL's appid, the push).
    events: Mutex<Vec<(EventUrl, Option<String>, EventRequest)>>,
    /// Query strings of the authorisation callback.
    callbacks: Mutex<Vec<HashMap<String, String>>>,
}

fn push_of(req: &HttpRequest, body: &web::Bytes) -> EventRequest {
    let q: HashMap<String, String> = url::form_urlencoded::parse(req.query_string().as_bytes()).into_owned().collect();
    let get = |k: &str| q.get(k).cloned().unwrap_or_default();
    assert_eq!(get("encrypt_type"), "aes");
    EventRequest { timestamp: get("timestamp"), nonce: get("nonce"), msg_signature: get("msg_signature"), body: body.to_vec() }
}

async fn component_events(req: HttpRequest, body: web::Bytes, rx: web::Data<Receiver>) -> HttpResponse {
    rx.events.lock().unwrap().push((EventUrl::Component, None, push_of(&req, &body)));
    HttpResponse::Ok().content_type("text/plain").body("success")
}

async fn messages(req: HttpRequest, body: web::Bytes, appid: web::Path<String>, rx: web::Data<Receiver>) -> HttpResponse {
    rx.events.lock().unwrap().push((EventUrl::Message, Some(appid.into_inner()), push_of(&req, &body)));
    HttpResponse::Ok().content_type("text/plain").body("success")
}

async fn callback(req: HttpRequest, rx: web::Data<Receiver>) -> HttpResponse {
    let q: HashMap<String, String> = url::form_urlencoded::parse(req.query_string().as_bytes()).into_owned().collect();
    rx.callbacks.lock().unwrap().push(q);
    HttpResponse::Ok().json(json!({"code": 0, "message": "authorised"}))
}

struct Env {
    sandbox: Sandbox,
    rx: web::Data<Receiver>,
    origin: String,
    http: reqwest::Client,
    client: WechatOpen,
    handle: actix_web::dev::ServerHandle,
}

impl Env {
    async fn start() -> Env {
        let sandbox = Sandbox::new();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        sandbox.push_events_to(&origin).unwrap();
        sandbox.set_push_retry_delays(vec![Duration::from_millis(50)]);
        let rx = web::Data::new(Receiver::default());
        let (sb, data) = (sandbox.clone(), rx.clone());
        let server = HttpServer::new(move || {
            let sb = sb.clone();
            App::new()
                .app_data(data.clone())
                .service(web::scope("/sandbox").configure(move |c| sb.configure(c)))
                .route("/api/v1/miniprogram/component/events", web::post().to(component_events))
                .route("/api/v1/miniprogram/component/messages/{appid}", web::post().to(messages))
                .route("/api/v1/miniprogram/authorization/callback", web::get().to(callback))
        })
        .workers(2)
        .disable_signals()
        .listen(listener)
        .unwrap()
        .run();
        let handle = server.handle();
        tokio::spawn(server);
        let c = sandbox.component();
        let mut config = WechatOpenConfig::new(
            format!("{origin}/sandbox/api"),
            format!("{origin}/sandbox/mp"),
            c.component_appid,
            c.component_secret,
            c.token,
            c.encoding_aes_key,
        );
        config.timeout = Duration::from_secs(5);
        config.backoff = Duration::from_millis(10);
        let client = WechatOpen::new(config).unwrap();
        Env { sandbox, rx, origin, http: reqwest::Client::new(), client, handle }
    }

    async fn control(&self, path: &str, body: Value) -> (u16, Value) {
        let resp = self.http.post(format!("{}/sandbox/control/{path}", self.origin)).json(&body).send().await.unwrap();
        (resp.status().as_u16(), resp.json().await.unwrap_or(Value::Null))
    }

    fn events(&self) -> Vec<(EventUrl, Option<String>, EventRequest)> {
        self.rx.events.lock().unwrap().clone()
    }

    /// The newest push received, opened by the client.
    fn last_event(&self) -> (Option<String>, EventKind) {
        let (url, appid, request) = self.events().pop().expect("a push");
        (appid, self.client.open_event(url, &request).unwrap().kind)
    }

    /// A verify ticket pushed through `control/verify-ticket`, as Atrium reads it.
    async fn ticket(&self) -> Secret {
        let (status, push) = self.control("verify-ticket", json!({})).await;
        assert_eq!(status, 200, "{push}");
        assert_eq!(push["delivered"], true, "{push}");
        match self.last_event().1 {
            EventKind::VerifyTicket { ticket } => ticket,
            other => panic!("{other:?}"),
        }
    }

    /// `appid` authorised through the page, the callback and `api_query_auth`.
    async fn authorised(&self, appid: &str) -> (AuthorizerAccess, String) {
        let ticket = self.ticket().await;
        let code = self.client.pre_auth_code(&ticket).await.unwrap();
        let page = self.client.authorize_url(&code.code, &format!("{}/api/v1/miniprogram/authorization/callback?state=s1", self.origin));
        let (status, report) = self.control("authorize", json!({"authorize_url": page, "authorizer_appid": appid})).await;
        assert_eq!((status, report["callback_status"].as_u64()), (200, Some(200)), "{report}");
        let auth_code = self.rx.callbacks.lock().unwrap().last().unwrap()["auth_code"].clone();
        let grant = self.client.query_auth(&ticket, &Secret::new(auth_code)).await.unwrap();
        let access =
            AuthorizerAccess { verify_ticket: ticket, authorizer_appid: grant.authorizer_appid, refresh_token: grant.refresh_token };
        (access, report["user_name"].as_str().unwrap().to_owned())
    }

    async fn stop(self) {
        self.handle.stop(false).await;
    }
}

fn commit(version: &str) -> CodeCommit {
    commit_of(1, version)
}

fn commit_of(template_id: i64, version: &str) -> CodeCommit {
    CodeCommit {
        template_id,
        ext_json: r#"{"extEnable":true,"extAppid":"wx_tenant_a"}"#.into(),
        user_version: version.into(),
        user_desc: format!("version {version}"),
    }
}

fn submission() -> AuditSubmission {
    AuditSubmission { version_desc: Some("sandbox".into()), item_list: None, privacy_api_not_use: Some(true) }
}

fn refused(r: Result<impl std::fmt::Debug, PlatformError>) -> i64 {
    match r {
        Err(PlatformError::Refused { errcode, .. }) => errcode,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn a_verify_ticket_an_authorisation_page_and_its_events_reach_atrium() {
    let env = Env::start().await;
    let ticket = env.ticket().await;
    let code = env.client.pre_auth_code(&ticket).await.unwrap();
    assert_eq!(code.expires_in_secs, 1800);
    let redirect = format!("{}/api/v1/miniprogram/authorization/callback?state=s1", env.origin);
    let page_url = env.client.authorize_url(&code.code, &redirect);
    assert!(page_url.starts_with(&format!("{}/sandbox/mp/cgi-bin/componentloginpage?", env.origin)), "{page_url}");

    // The admin opens the page, then scans it.
    let page = env.http.get(&page_url).send().await.unwrap();
    assert_eq!(page.status().as_u16(), 200);
    assert!(page.text().await.unwrap().contains(&code.code));
    let (status, report) = env.control("authorize", json!({"pre_auth_code": code.code, "authorizer_appid": "wx_tenant_a"})).await;

    assert_eq!(status, 200, "{report}");
    assert_eq!((report["info_type"].as_str(), report["callback_status"].as_u64()), (Some("authorized"), Some(200)), "{report}");
    assert_eq!(report["callback_body"]["message"], "authorised");
    assert_eq!(report["event"]["delivered"], true);
    let callback = env.rx.callbacks.lock().unwrap()[0].clone();
    assert_eq!((callback["state"].as_str(), callback["expires_in"].as_str()), ("s1", "3600"));
    match env.last_event() {
        (None, EventKind::Authorized { authorizer_appid, authorization_code, pre_auth_code, update }) => {
            assert_eq!(
                (authorizer_appid.as_str(), authorization_code.expose(), pre_auth_code.as_deref(), update),
                ("wx_tenant_a", callback["auth_code"].as_str(), Some(code.code.as_str()), false)
            );
        }
        other => panic!("{other:?}"),
    }

    // The code is good once: the callback's use wins, the event's second use is refused.
    let code_secret = Secret::new(callback["auth_code"].clone());
    let grant = env.client.query_auth(&ticket, &code_secret).await.unwrap();
    assert_eq!(grant.authorizer_appid, "wx_tenant_a");
    assert!(grant.func_info.contains(&18), "{:?}", grant.func_info);
    assert_eq!(refused(env.client.query_auth(&ticket, &code_secret).await), 61009);
    let profile = env.client.authorizer_profile(&ticket, "wx_tenant_a").await.unwrap();
    assert_eq!(profile.user_name.as_deref(), report["user_name"].as_str());
    assert!(profile.user_name.unwrap().starts_with("gh_"));

    // A used pre-auth code cannot be scanned again; a stale ticket gets no token.
    let (status, again) = env.control("authorize", json!({"pre_auth_code": code.code, "authorizer_appid": "wx_tenant_a"})).await;
    assert_eq!(status, 400, "{again}");
    let stale = WechatOpen::new(WechatOpenConfig::new(
        format!("{}/sandbox/api", env.origin),
        "x",
        env.sandbox.component().component_appid,
        env.sandbox.component().component_secret,
        env.sandbox.component().token,
        env.sandbox.component().encoding_aes_key,
    ))
    .unwrap();
    assert_eq!(refused(stale.pre_auth_code(&Secret::new("ticket@@@forged")).await), 61006);
    env.stop().await;
}

#[tokio::test]
async fn a_tenant_link_is_found_through_the_servers_resolver() {
    let env = Env::start().await;
    let (status, answer) = env.control("authorize", json!({"tenant_id": 3, "authorizer_appid": "wx_tenant_b"})).await;
    assert_eq!(status, 400);
    assert!(answer["message"].as_str().unwrap().contains("pass pre_auth_code or authorize_url"), "{answer}");

    let ticket = env.ticket().await;
    let code = env.client.pre_auth_code(&ticket).await.unwrap();
    let link = env.client.authorize_url(&code.code, &format!("{}/api/v1/miniprogram/authorization/callback?state=t3", env.origin));
    env.sandbox.resolve_tenant_links(std::sync::Arc::new(move |tenant| {
        let link = link.clone();
        Box::pin(async move { (tenant == 3).then_some(link) })
    }));
    let (status, report) = env.control("authorize", json!({"tenant_id": 3, "authorizer_appid": "wx_tenant_b"})).await;

    assert_eq!((status, report["callback_status"].as_u64()), (200, Some(200)), "{report}");
    assert_eq!(env.rx.callbacks.lock().unwrap()[0]["state"], "t3");
    env.stop().await;
}

#[tokio::test]
async fn audit_results_are_pushed_to_the_mini_programs_message_url_or_lost() {
    let env = Env::start().await;
    let (access, user_name) = env.authorised("wx_tenant_a").await;
    let client = &env.client;

    client.commit(&access, &commit("1.0.0")).await.unwrap();
    let first = client.submit_audit(&access, &submission()).await.unwrap();
    assert_eq!(refused(client.submit_audit(&access, &submission()).await), 85009);
    assert_eq!(client.audit_status(&access, first).await.unwrap().status, AuditStatus::Auditing);

    // Passed, pushed.
    let (status, report) =
        env.control("audit", json!({"authorizer_appid": "wx_tenant_a", "auditid": first, "result": "passed", "push": true})).await;
    assert_eq!((status, report["event"]["delivered"].as_bool()), (200, Some(true)), "{report}");
    match env.last_event() {
        (Some(appid), EventKind::Audit { to_user, result }) => {
            assert_eq!((appid.as_str(), to_user.as_str(), result.status), ("wx_tenant_a", user_name.as_str(), AuditStatus::Passed));
            assert!(result.at.is_some());
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(client.audit_status(&access, first).await.unwrap().status, AuditStatus::Passed);

    // Rejected with a reason and screenshots.
    client.commit(&access, &commit("1.0.1")).await.unwrap();
    let second = client.submit_audit(&access, &submission()).await.unwrap();
    let decision = json!({"authorizer_appid": "wx_tenant_a", "result": "rejected", "reason": "1:名称与内容不符", "screenshots": ["mediaA", "mediaB"], "push": true});
    assert_eq!(env.control("audit", decision).await.0, 200);
    match env.last_event() {
        (_, EventKind::Audit { result, .. }) => {
            assert_eq!(result.status, AuditStatus::Rejected);
            assert_eq!(result.reason.as_deref(), Some("1:名称与内容不符"));
            assert_eq!(result.screenshots, ["mediaA", "mediaB"]);
        }
        other => panic!("{other:?}"),
    }
    let audit = client.audit_status(&access, second).await.unwrap();
    assert_eq!((audit.status, audit.screenshots.len()), (AuditStatus::Rejected, 2));

    // Delayed, then decided with the event lost: only the status query tells.
    client.commit(&access, &commit("1.0.2")).await.unwrap();
    let third = client.submit_audit(&access, &submission()).await.unwrap();
    env.control("audit", json!({"authorizer_appid": "wx_tenant_a", "result": "delayed", "push": true})).await;
    assert!(matches!(env.last_event().1, EventKind::Audit { ref result, .. } if result.status == AuditStatus::Delayed));
    assert_eq!(client.audit_status(&access, third).await.unwrap().status, AuditStatus::Delayed);
    let pushes_before = env.events().len();
    let (status, report) = env.control("audit", json!({"authorizer_appid": "wx_tenant_a", "result": "rejected", "push": false})).await;
    assert_eq!((status, report["event"]["lost"].as_bool()), (200, Some(true)), "{report}");
    assert_eq!(env.events().len(), pushes_before, "a lost event never arrives");
    let audit = client.audit_status(&access, third).await.unwrap();
    assert_eq!(audit.status, AuditStatus::Rejected);
    assert!(audit.reason.is_some());
    env.stop().await;
}

/// Commits, audits, passes (the event lost) and returns the audit of `version`.
async fn passed(env: &Env, access: &AuthorizerAccess, version: &str) {
    env.client.commit(access, &commit(version)).await.unwrap();
    env.client.submit_audit(access, &submission()).await.unwrap();
    let (status, report) =
        env.control("audit", json!({"authorizer_appid": access.authorizer_appid, "result": "passed", "push": false})).await;
    assert_eq!(status, 200, "{report}");
}

#[tokio::test]
async fn gray_steps_rise_a_full_release_follows_and_a_rollback_goes_back() {
    let env = Env::start().await;
    let (access, _) = env.authorised("wx_tenant_a").await;
    let client = &env.client;
    assert_eq!(refused(client.release(&access).await), 85019);
    passed(&env, &access, "1.0.0").await;
    client.release(&access).await.unwrap();
    assert_eq!(refused(client.revert_release(&access, None).await), 87012, "nothing before the first version");

    client.commit(&access, &commit("1.1.0")).await.unwrap();
    client.submit_audit(&access, &submission()).await.unwrap();
    assert_eq!(refused(client.gray_release(&access, 10).await), 85020, "not passed yet");
    env.control("audit", json!({"authorizer_appid": "wx_tenant_a", "result": "passed", "push": false})).await;
    client.gray_release(&access, 10).await.unwrap();
    client.gray_release(&access, 50).await.unwrap();
    assert_eq!(refused(client.gray_release(&access, 20).await), 85082);
    assert_eq!(refused(client.gray_release(&access, 0).await), 85081);
    let plan = client.gray_plan(&access).await.unwrap();
    assert_eq!((plan.status, plan.gray_percentage), (1, 50));
    assert_eq!(refused(client.revert_release(&access, None).await), 87011, "no rollback during a gray release");
    assert_eq!(client.version_info(&access).await.unwrap().release.unwrap().user_version, "1.0.0", "gray is not live yet");

    client.release(&access).await.unwrap();
    let info = client.version_info(&access).await.unwrap();
    assert_eq!(info.release.unwrap().user_version, "1.1.0");
    assert_eq!(info.experience.unwrap().user_version, "1.1.0");
    assert_eq!(client.gray_plan(&access).await.unwrap().status, 3);
    let history = client.history_versions(&access).await.unwrap();
    assert_eq!(history.iter().map(|v| v.user_version.as_str()).collect::<Vec<_>>(), ["1.0.0"]);

    client.revert_release(&access, history[0].app_version).await.unwrap();
    assert_eq!(client.version_info(&access).await.unwrap().release.unwrap().user_version, "1.0.0");
    assert!(client.history_versions(&access).await.unwrap().is_empty());
    assert_eq!(refused(client.revert_release(&access, None).await), 87012);
    let snapshot = env.sandbox.miniprogram("wx_tenant_a").unwrap();
    assert_eq!(snapshot.live.unwrap().user_version, "1.0.0");
    env.stop().await;
}

#[tokio::test]
async fn injected_errcodes_are_refusals_and_stale_tokens_are_refreshed_once() {
    let env = Env::start().await;
    let (access, _) = env.authorised("wx_tenant_a").await;
    let client = &env.client;

    let (status, _) = env.control("fail", json!({"path": "/wxa/commit", "errcode": 85013, "times": 1})).await;
    assert_eq!(status, 200);
    assert_eq!(refused(client.commit(&access, &commit("1.0.0")).await), 85013);
    let (status, _) = env.control("fail", json!({"path": "/wxa/no_such_call", "errcode": 1, "times": 1})).await;
    assert_eq!(status, 400);

    // A stale-token errcode on one call: a new authorizer token, the call retried once.
    let authorizer_tokens = env.sandbox.authorizer_tokens_issued();
    env.control("fail", json!({"path": "/wxa/commit", "errcode": 40001, "times": 1})).await;
    client.commit(&access, &commit("1.0.0")).await.unwrap();
    assert_eq!(env.sandbox.authorizer_tokens_issued(), authorizer_tokens + 1);

    // Every token expires: the authorizer token and, while refreshing it, the component
    // token are each fetched once more.
    let (component_tokens, authorizer_tokens) = (env.sandbox.component_tokens_issued(), env.sandbox.authorizer_tokens_issued());
    let (status, expired) = env.control("expire-tokens", json!({})).await;
    assert_eq!(status, 200);
    assert!(expired["expired"].as_u64().unwrap() >= 2, "{expired}");
    client.commit(&access, &commit("1.0.1")).await.unwrap();
    client.submit_audit(&access, &submission()).await.unwrap();
    assert_eq!(env.sandbox.component_tokens_issued(), component_tokens + 1);
    assert_eq!(env.sandbox.authorizer_tokens_issued(), authorizer_tokens + 1);

    // The template library, on the component token, recovers the same way.
    let component_tokens = env.sandbox.component_tokens_issued();
    env.control("expire-tokens", json!({})).await;
    assert_eq!(client.templates(&access.verify_ticket).await.unwrap().len(), 2);
    assert_eq!(env.sandbox.component_tokens_issued(), component_tokens + 1);

    // Revoked: the stale token is refreshed, and the refresh says the mini-program left.
    let (status, report) = env.control("unauthorize", json!({"authorizer_appid": "wx_tenant_a"})).await;
    assert_eq!((status, report["event"]["delivered"].as_bool()), (200, Some(true)), "{report}");
    assert!(matches!(env.last_event().1, EventKind::Unauthorized { ref authorizer_appid } if authorizer_appid == "wx_tenant_a"));
    assert_eq!(refused(client.commit(&access, &commit("1.0.2")).await), 61003);
    env.stop().await;
}

#[tokio::test]
async fn the_experience_qr_code_is_a_jpeg() {
    let env = Env::start().await;
    let (access, _) = env.authorised("wx_tenant_a").await;
    assert_eq!(refused(env.client.experience_qr(&access, None).await), 85086, "nothing committed yet");
    env.client.commit(&access, &commit("1.0.0")).await.unwrap();

    let image = env.client.experience_qr(&access, Some("pages/index/index?from=atrium".into())).await.unwrap();

    assert_eq!(image, EXPERIENCE_QR_JPEG);
    assert!(image.starts_with(&[0xFF, 0xD8, 0xFF]) && image.ends_with(&[0xFF, 0xD9]));
    assert_eq!(refused(env.client.experience_qr(&access, Some("/pages/index".into())).await), 40097);
    env.stop().await;
}

#[tokio::test]
async fn an_uploaded_package_becomes_a_draft_then_a_template_to_commit() {
    let env = Env::start().await;
    let (access, _) = env.authorised("wx_tenant_a").await;
    let ticket = access.verify_ticket.clone();
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let path = std::env::temp_dir().join(format!("atrium-open-sandbox-{}-{nanos}.zip", std::process::id()));
    {
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
        for (name, data) in [
            ("shop/project.config.json", &br#"{"appid": "wx_sandbox_tpl_dev"}"#[..]),
            ("shop/app.json", br#"{"pages": ["pages/index/index"]}"#),
            ("shop/pages/index/index.js", b"Page({})"),
        ] {
            zip.start_file(name, zip::write::SimpleFileOptions::default()).unwrap();
            zip.write_all(data).unwrap();
        }
        zip.finish().unwrap();
    }
    let bytes = std::fs::read(&path).unwrap();
    let package = StoredPackage {
        sha256: hex::encode(openssl::sha::sha256(&bytes)),
        size: bytes.len() as u64,
        project_root: "shop/".into(),
        path: path.clone(),
        created_at: chrono::Utc::now(),
    };
    let job = UploadJob { package, version: "2.0.0".into(), description: "atrium upload task 42".into() };
    let uploader = SandboxUploader::new(format!("{}/sandbox/api", env.origin), SANDBOX_TEMPLATE_DEV_APPID);

    let report = uploader.upload(&job).await;
    let _ = std::fs::remove_file(&path);

    assert_eq!(report.unwrap().package_sizes, [("__FULL__".to_owned(), bytes.len() as u64)]);
    assert_eq!(env.sandbox.ci_uploads()[0].sha256, job.package.sha256);
    let drafts = env.client.template_drafts(&ticket).await.unwrap();
    let draft = drafts.iter().find(|d| d.user_desc == "atrium upload task 42").unwrap();
    assert_eq!(draft.user_version, "2.0.0");
    env.client.add_to_template(&ticket, draft.draft_id).await.unwrap();
    assert_eq!(refused(env.client.add_to_template(&ticket, 9999).await), 85064);
    let templates = env.client.templates(&ticket).await.unwrap();
    let template = templates.iter().find(|t| t.user_desc == "atrium upload task 42").unwrap();
    assert_eq!((template.template_id, template.user_version.as_str()), (3, "2.0.0"));
    env.client.commit(&access, &commit_of(template.template_id, "2.0.0")).await.unwrap();
    assert_eq!(refused(env.client.commit(&access, &commit_of(77, "2.0.1")).await), 85014);
    assert_eq!(env.sandbox.miniprogram("wx_tenant_a").unwrap().committed.unwrap().template_id, 3);
    env.stop().await;
}

#[tokio::test]
async fn domains_privacy_and_categories_round_trip_through_the_sandbox() {
    let env = Env::start().await;
    let (access, _) = env.authorised("wx_tenant_a").await;
    let client = &env.client;

    assert_eq!(client.domains(&access).await.unwrap(), ServerDomains::default());
    let wanted = ServerDomains {
        requestdomain: vec!["https://api.example.com".into(), "https://pay.example.com".into()],
        wsrequestdomain: vec!["wss://ws.example.com".into()],
        uploaddomain: Vec::new(),
        downloaddomain: vec!["https://cdn.example.com".into()],
        webviewdomain: vec!["https://h5.example.com".into()],
    };
    client.set_domains(&access, &wanted).await.unwrap();
    assert_eq!(client.domains(&access).await.unwrap(), wanted);
    let bad = ServerDomains { requestdomain: vec!["http://api.example.com".into()], ..wanted.clone() };
    assert_eq!(refused(client.set_domains(&access, &bad).await), 85017);
    assert_eq!(client.domains(&access).await.unwrap(), wanted, "a refused set changes nothing");

    assert_eq!(client.privacy(&access).await.unwrap(), PrivacySettings::default(), "nothing set yet");
    let settings = PrivacySettings {
        owner_setting: PrivacyOwner { contact_email: Some("dpo@example.com".into()), notice_method: "弹窗".into(), ..Default::default() },
        setting_list: vec![
            PrivacyItem { privacy_key: "UserInfo".into(), privacy_text: "登录".into() },
            PrivacyItem { privacy_key: "Location".into(), privacy_text: "附近门店".into() },
        ],
    };
    client.set_privacy(&access, &settings).await.unwrap();
    assert_eq!(client.privacy(&access).await.unwrap(), settings);
    let no_contact =
        PrivacySettings { owner_setting: PrivacyOwner { notice_method: "弹窗".into(), ..Default::default() }, setting_list: Vec::new() };
    assert_eq!(refused(client.set_privacy(&access, &no_contact).await), 40097);

    assert_eq!(
        client.categories(&access).await.unwrap(),
        [Category { first_id: 1, first_class: "工具".into(), second_id: 2, second_class: "效率".into() }]
    );
    let snapshot = env.sandbox.miniprogram("wx_tenant_a").unwrap();
    assert_eq!(snapshot.domains.webviewdomain, ["https://h5.example.com"]);
    assert_eq!(snapshot.privacy.unwrap().setting_list.len(), 2);
    env.stop().await;
}

#[tokio::test]
async fn the_audit_quota_is_spent_by_submits_and_speed_ups_and_not_given_back_by_a_withdrawal() {
    let env = Env::start().await;
    let (access, _) = env.authorised("wx_tenant_a").await;
    let client = &env.client;
    env.sandbox.set_audit_quota(QuotaRequest { rest: 1, speedup_rest: Some(1), ..Default::default() }).unwrap();

    client.commit(&access, &commit("1.0.0")).await.unwrap();
    let auditid = client.submit_audit(&access, &submission()).await.unwrap();
    assert_eq!(client.audit_quota(&access).await.unwrap(), AuditQuota { rest: 0, limit: 100, speedup_rest: 1, speedup_limit: 10 });
    assert_eq!(refused(client.speedup_audit(&access, auditid + 1).await), 85021);
    client.speedup_audit(&access, auditid).await.unwrap();
    assert_eq!(refused(client.speedup_audit(&access, auditid).await), 87013);

    client.undo_audit(&access).await.unwrap();
    assert_eq!(client.audit_status(&access, auditid).await.unwrap().status, AuditStatus::Withdrawn);
    assert_eq!(refused(client.undo_audit(&access).await), 85012);
    assert_eq!(refused(client.submit_audit(&access, &submission()).await), 85085);
    assert_eq!(client.audit_quota(&access).await.unwrap(), AuditQuota { rest: 0, limit: 100, speedup_rest: 0, speedup_limit: 10 });
    env.stop().await;
}

#[tokio::test]
async fn the_audit_policy_decides_a_new_audit_and_pushes_its_event() {
    let env = Env::start().await;
    let (access, user_name) = env.authorised("wx_tenant_a").await;
    let policy = AuditPolicy { result: PolicyResult::Passed, after_ms: 30, ..Default::default() };
    env.sandbox.set_audit_policy(policy).unwrap();
    let pushes_before = env.events().len();

    env.client.commit(&access, &commit("1.0.0")).await.unwrap();
    let auditid = env.client.submit_audit(&access, &submission()).await.unwrap();

    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while env.events().len() == pushes_before {
        assert!(std::time::Instant::now() < deadline, "no audit event arrived");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    match env.last_event() {
        (Some(appid), EventKind::Audit { to_user, result }) => {
            assert_eq!((appid.as_str(), to_user.as_str(), result.status), ("wx_tenant_a", user_name.as_str(), AuditStatus::Passed));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(env.client.audit_status(&access, auditid).await.unwrap().status, AuditStatus::Passed);
    env.stop().await;
}
