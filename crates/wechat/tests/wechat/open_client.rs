//! The third-party platform client against a small stub of the platform on loopback: token
//! caching and refreshing, the one retry on a stale token, which calls are retried, the QR
//! image against a JSON error, that no token or secret leaks into errors or metrics, and the
//! wire format of the settings calls (domains, privacy, categories, quota, speed-up, undo).
#![allow(clippy::unwrap_used)]

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use atrium_miniprogram::{
    AuditQuota, AuditStatus, AuditSubmission, AuthorizerAccess, Category, CodeCommit, MiniProgramPlatform, PlatformError, PrivacyItem,
    PrivacyOwner, PrivacySettings, Secret, ServerDomains,
};
use atrium_wechat::{CallRecorder, WechatOpen, WechatOpenConfig};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const COMPONENT: &str = "wx_component";
const SECRET: &str = "component-secret-s3cr3t";
const KEY: &str = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG";
const APPID: &str = "wx_tenant";
const JPEG: &[u8] = &[0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, b'J', b'F', b'I', b'F'];

/// How the stub behaves and what it saw.
#[derive(Default)]
struct Stub {
    hits: HashMap<String, usize>,
    component_tokens: usize,
    authorizer_tokens: usize,
    /// Authorizer tokens the stub no longer accepts.
    revoked_tokens: Vec<String>,
    /// Commits answer 42001 whatever the token.
    commit_always_expired: bool,
    /// Answers to send with HTTP 503 before the real one, per path.
    fail_first: HashMap<String, usize>,
    /// Answers to send with HTTP 408 (request not taken) before the real one, per path.
    not_taken_first: HashMap<String, usize>,
    bodies: HashMap<String, String>,
    queries: HashMap<String, String>,
}

type Shared = web::Data<Mutex<Stub>>;

fn ok(body: Value) -> HttpResponse {
    HttpResponse::Ok().content_type("application/json").body(body.to_string())
}

fn refused(errcode: i64, errmsg: &str) -> HttpResponse {
    ok(json!({"errcode": errcode, "errmsg": errmsg}))
}

async fn handle(req: HttpRequest, body: web::Bytes, stub: Shared) -> HttpResponse {
    let path = req.path().to_owned();
    let query: HashMap<String, String> = url::form_urlencoded::parse(req.query_string().as_bytes()).into_owned().collect();
    let body_text = String::from_utf8_lossy(&body).into_owned();
    let json_body: Value = serde_json::from_str(&body_text).unwrap_or(Value::Null);
    let mut s = stub.lock().unwrap();
    *s.hits.entry(path.clone()).or_default() += 1;
    s.bodies.insert(path.clone(), body_text.clone());
    s.queries.insert(path.clone(), req.query_string().to_owned());
    if let Some(left) = s.fail_first.get_mut(&path).filter(|n| **n > 0) {
        *left -= 1;
        return HttpResponse::ServiceUnavailable().body("busy");
    }
    if let Some(left) = s.not_taken_first.get_mut(&path).filter(|n| **n > 0) {
        *left -= 1;
        return HttpResponse::RequestTimeout().finish();
    }
    let component_token = format!("ctoken-{}", s.component_tokens);
    let token = query.get("access_token").or_else(|| query.get("component_access_token")).cloned().unwrap_or_default();
    match path.as_str() {
        "/cgi-bin/component/api_component_token" => {
            if json_body["component_appid"] != COMPONENT
                || json_body["component_appsecret"] != SECRET
                || json_body["component_verify_ticket"] != "ticket-1"
            {
                return refused(61006, "component ticket is invalid");
            }
            s.component_tokens += 1;
            ok(json!({"component_access_token": format!("ctoken-{}", s.component_tokens), "expires_in": 7200}))
        }
        // Mini-program calls despite their path: they take the authorizer token.
        "/cgi-bin/component/getprivacysetting" | "/cgi-bin/component/setprivacysetting"
            if !token.starts_with("atoken-") || s.revoked_tokens.contains(&token) =>
        {
            refused(40001, &format!("invalid credential, access_token is invalid or not latest: {token} rid: 4"))
        }
        "/cgi-bin/component/getprivacysetting" if json_body["privacy_ver"] == 2 => ok(json!({
            "errcode": 0,
            "errmsg": "ok",
            "code_exist": 1,
            "privacy_list": ["UserInfo", "Location"],
            "setting_list": [
                {"privacy_key": "UserInfo", "privacy_text": "登录", "privacy_label": "用户信息（微信昵称、头像）"},
                {"privacy_key": "Location", "privacy_text": "附近门店"},
            ],
            "update_time": 1700000000,
            "owner_setting": {
                "contact_email": "dpo@example.com",
                "contact_phone": "",
                "contact_qq": "",
                "contact_weixin": "shop_ann",
                "store_expire_timestamp": "",
                "ext_file_media_id": "",
                "notice_method": "弹窗",
            },
            "privacy_desc": {"privacy_desc_list": [{"privacy_key": "UserInfo", "privacy_desc": "用户信息（微信昵称、头像）"}]},
        })),
        "/cgi-bin/component/setprivacysetting" if json_body["privacy_ver"] == 2 => ok(json!({"errcode": 0, "errmsg": "ok"})),
        "/cgi-bin/component/getprivacysetting" | "/cgi-bin/component/setprivacysetting" => refused(40097, "invalid args"),
        p if p.starts_with("/cgi-bin/component/") && token != component_token => {
            refused(40001, &format!("invalid credential, access_token is invalid or not latest: {token} rid: 1"))
        }
        "/cgi-bin/component/api_create_preauthcode" => ok(json!({"pre_auth_code": "preauth@@@1", "expires_in": 1800})),
        "/cgi-bin/component/api_query_auth" => ok(json!({"authorization_info": {
            "authorizer_appid": APPID,
            "authorizer_access_token": "atoken-q",
            "expires_in": 7200,
            "authorizer_refresh_token": "refresh-1",
            "func_info": [{"funcscope_category": {"id": 17}}, {"funcscope_category": {"id": 18}}],
        }})),
        "/cgi-bin/component/api_get_authorizer_info" => {
            ok(json!({"authorizer_info": {"nick_name": "Ann's shop", "user_name": "gh_ann"}, "authorization_info": {}}))
        }
        "/cgi-bin/component/api_authorizer_token" => {
            if json_body["authorizer_refresh_token"] != "refresh-1" || json_body["authorizer_appid"] != APPID {
                return refused(61023, "refresh_token is invalid");
            }
            s.authorizer_tokens += 1;
            ok(
                json!({"authorizer_access_token": format!("atoken-{}", s.authorizer_tokens), "expires_in": 7200, "authorizer_refresh_token": "refresh-1"}),
            )
        }
        p if p.starts_with("/wxa/") && ["/wxa/gettemplatedraftlist", "/wxa/addtotemplate", "/wxa/gettemplatelist"].contains(&p) => {
            if token != component_token {
                return refused(40001, "invalid credential");
            }
            match p {
                "/wxa/gettemplatedraftlist" => ok(
                    json!({"errcode": 0, "draft_list": [{"create_time": 5, "user_version": "1.0.0", "user_desc": "atrium upload task 1", "draft_id": 12}]}),
                ),
                "/wxa/addtotemplate" => ok(json!({"errcode": 0})),
                _ => ok(
                    json!({"errcode": 0, "template_list": [{"create_time": 6, "user_version": "1.0.0", "user_desc": "atrium upload task 1", "template_id": 31}]}),
                ),
            }
        }
        p if p.starts_with("/wxa/") && (!token.starts_with("atoken-") || s.revoked_tokens.contains(&token)) => {
            refused(40001, &format!("invalid credential, access_token is invalid or not latest: {token} rid: 2"))
        }
        "/wxa/commit" if s.commit_always_expired => refused(42001, "access_token expired rid: 3"),
        "/wxa/commit" => ok(json!({"errcode": 0, "errmsg": "ok"})),
        "/wxa/submit_audit" => ok(json!({"errcode": 0, "auditid": 1234567})),
        "/wxa/get_auditstatus" => ok(json!({"errcode": 0, "status": 1, "reason": "bad name", "screenshot": "m1|m2"})),
        "/wxa/release" if body_text.trim() == "{}" => ok(json!({"errcode": 0})),
        "/wxa/grayrelease" => {
            let p = json_body["gray_percentage"].as_i64().unwrap_or(-1);
            if (1..=100).contains(&p) { ok(json!({"errcode": 0})) } else { refused(85081, "invalid gray percentage") }
        }
        "/wxa/getgrayreleaseplan" => {
            ok(json!({"errcode": 0, "gray_release_plan": {"status": 1, "create_timestamp": 1526540000, "gray_percentage": 20}}))
        }
        "/wxa/revertgrayrelease" => ok(json!({"errcode": 0})),
        "/wxa/revertcoderelease" if query.get("action").map(String::as_str) == Some("get_history_version") => ok(json!({
            "errcode": 0,
            "version_list": [{"commit_time": 1600000000, "user_version": "1.0.0", "user_desc": "first", "app_version": 3}],
        })),
        "/wxa/revertcoderelease" => refused(87011, "current version is in gray release"),
        "/wxa/getversioninfo" if body_text.trim() == "{}" => ok(json!({
            "errcode": 0,
            "exp_info": {"exp_time": 1700000000, "exp_version": "1.1.0", "exp_desc": "trial"},
            "release_info": {"release_time": 1690000000, "release_version": "1.0.0", "release_desc": "live"},
        })),
        "/wxa/getversioninfo" => refused(44002, "empty post data"),
        "/wxa/modify_domain" => match json_body["action"].as_str() {
            Some("get") => ok(json!({
                "errcode": 0,
                "errmsg": "ok",
                "requestdomain": ["https://api.example.com"],
                "wsrequestdomain": ["wss://ws.example.com"],
                "uploaddomain": [],
                "downloaddomain": null,
                "udpdomain": [],
                "tcpdomain": [],
            })),
            Some("set") if json_body["requestdomain"].as_array().is_some_and(|l| l.iter().any(|d| d == "https://bad domain")) => {
                refused(85017, "no domain to modify after filtered, please confirm the domain has been set in miniprogram or open")
            }
            Some("set") => ok(json!({"errcode": 0, "errmsg": "ok"})),
            _ => refused(40097, "invalid args"),
        },
        "/wxa/setwebviewdomain" => match json_body["action"].as_str() {
            Some("get") => ok(json!({"errcode": 0, "errmsg": "ok", "webviewdomain": ["https://h5.example.com"]})),
            Some("set") => ok(json!({"errcode": 0, "errmsg": "ok"})),
            _ => refused(40097, "invalid args"),
        },
        "/wxa/get_category" => ok(json!({"errcode": 0, "errmsg": "ok", "category_list": [
            {"first_class": "工具", "second_class": "效率", "first_id": 287, "second_id": 612},
            {"first_class": "教育", "second_class": "在线教育", "third_class": "课程", "first_id": 8, "second_id": 9, "third_id": 10, "audit_status": 3},
        ]})),
        "/wxa/queryquota" => ok(json!({"errcode": 0, "errmsg": "ok", "rest": 8, "limit": 10, "speedup_rest": 1, "speedup_limit": 3})),
        "/wxa/speedupaudit" if json_body["auditid"] == 1234567 => ok(json!({"errcode": 0, "errmsg": "ok"})),
        "/wxa/speedupaudit" => refused(85021, "status not allowed"),
        "/wxa/undocodeaudit" if body.is_empty() => refused(87013, "undo quota reached, try again next month"),
        "/wxa/get_qrcode" if query.get("path").map(String::as_str) == Some("pages/missing") => refused(40097, "invalid args"),
        "/wxa/get_qrcode" => HttpResponse::Ok().content_type("image/jpeg").body(JPEG.to_vec()),
        _ => refused(40066, "invalid url"),
    }
}

#[derive(Default)]
struct Recorder {
    calls: Mutex<Vec<(String, String)>>,
}

impl CallRecorder for Recorder {
    fn record(&self, endpoint: &str, errcode: &str, _elapsed: Duration) {
        self.calls.lock().unwrap().push((endpoint.to_owned(), errcode.to_owned()));
    }
}

struct Platform {
    stub: Shared,
    base: String,
    handle: actix_web::dev::ServerHandle,
}

impl Platform {
    async fn start() -> Platform {
        let stub: Shared = web::Data::new(Mutex::new(Stub::default()));
        let data = stub.clone();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = HttpServer::new(move || App::new().app_data(data.clone()).default_service(web::to(handle)))
            .workers(1)
            .disable_signals()
            .listen(listener)
            .unwrap()
            .run();
        let handle = server.handle();
        tokio::spawn(server);
        Platform { stub, base: format!("http://{addr}"), handle }
    }

    fn client(&self, recorder: Arc<Recorder>) -> WechatOpen {
        let mut config = WechatOpenConfig::new(&self.base, "https://mp.example", COMPONENT, SECRET, "push-token", KEY);
        config.timeout = Duration::from_millis(800);
        config.backoff = Duration::from_millis(10);
        WechatOpen::new(config).unwrap().with_recorder(recorder)
    }

    fn hits(&self, path: &str) -> usize {
        self.stub.lock().unwrap().hits.get(path).copied().unwrap_or_default()
    }

    async fn stop(self) {
        self.handle.stop(false).await;
    }
}

fn ticket() -> Secret {
    Secret::new("ticket-1")
}

fn access() -> AuthorizerAccess {
    AuthorizerAccess { verify_ticket: ticket(), authorizer_appid: APPID.into(), refresh_token: Secret::new("refresh-1") }
}

fn commit() -> CodeCommit {
    CodeCommit { template_id: 31, ext_json: r#"{"extAppid":"wx_tenant"}"#.into(), user_version: "1.0.0".into(), user_desc: "d".into() }
}

#[tokio::test]
async fn the_component_token_comes_from_the_ticket_and_is_reused() {
    let platform = Platform::start().await;
    let client = platform.client(Arc::default());

    let code = client.pre_auth_code(&ticket()).await.unwrap();
    client.pre_auth_code(&ticket()).await.unwrap();
    let grant = client.query_auth(&ticket(), &Secret::new("auth-code")).await.unwrap();
    let profile = client.authorizer_profile(&ticket(), APPID).await.unwrap();

    assert_eq!((code.code.as_str(), code.expires_in_secs), ("preauth@@@1", 1800));
    assert_eq!((grant.authorizer_appid.as_str(), grant.refresh_token.expose(), grant.func_info), (APPID, "refresh-1", vec![17, 18]));
    assert_eq!((profile.nickname.as_deref(), profile.user_name.as_deref()), (Some("Ann's shop"), Some("gh_ann")));
    assert_eq!(platform.stub.lock().unwrap().component_tokens, 1);
    platform.stop().await;
}

#[tokio::test]
async fn a_wrong_ticket_is_the_platforms_refusal() {
    let platform = Platform::start().await;
    let err = platform.client(Arc::default()).pre_auth_code(&Secret::new("stale-ticket")).await.unwrap_err();
    assert_eq!(err.errcode(), Some(61006));
    platform.stop().await;
}

#[tokio::test]
async fn the_authorizer_token_is_cached_across_calls() {
    let platform = Platform::start().await;
    let client = platform.client(Arc::default());
    client.commit(&access(), &commit()).await.unwrap();
    client.commit(&access(), &commit()).await.unwrap();
    let auditid = client
        .submit_audit(&access(), &AuditSubmission { version_desc: Some("v".into()), item_list: None, privacy_api_not_use: Some(true) })
        .await
        .unwrap();

    assert_eq!(auditid, 1234567);
    let stub = platform.stub.clone();
    platform.stop().await;
    let s = stub.lock().unwrap();
    assert_eq!((s.authorizer_tokens, s.component_tokens), (1, 1));
    let sent: Value = serde_json::from_str(&s.bodies["/wxa/commit"]).unwrap();
    assert_eq!(sent, json!({"template_id": 31, "ext_json": "{\"extAppid\":\"wx_tenant\"}", "user_version": "1.0.0", "user_desc": "d"}));
    assert!(s.queries["/wxa/commit"].starts_with("access_token=atoken-1"));
}

#[tokio::test]
async fn a_stale_authorizer_token_is_refreshed_and_the_call_retried_once() {
    let platform = Platform::start().await;
    let client = platform.client(Arc::default());
    client.commit(&access(), &commit()).await.unwrap();
    platform.stub.lock().unwrap().revoked_tokens.push("atoken-1".into());

    client.commit(&access(), &commit()).await.unwrap();

    assert_eq!(platform.hits("/wxa/commit"), 3);
    assert_eq!(platform.stub.lock().unwrap().authorizer_tokens, 2);
    platform.stop().await;
}

#[tokio::test]
async fn a_token_refused_twice_is_returned_after_exactly_one_retry_without_leaking_it() {
    let platform = Platform::start().await;
    platform.stub.lock().unwrap().commit_always_expired = true;
    let recorder = Arc::new(Recorder::default());
    let client = platform.client(recorder.clone());

    let err = client.commit(&access(), &commit()).await.unwrap_err();

    assert_eq!(err.errcode(), Some(42001));
    assert_eq!(platform.hits("/wxa/commit"), 2);
    assert_eq!(platform.stub.lock().unwrap().authorizer_tokens, 2);
    platform.stop().await;
    let calls = recorder.calls.lock().unwrap();
    assert!(calls.iter().all(|(endpoint, _)| !endpoint.contains("token=") && !endpoint.contains('?')), "{calls:?}");
    assert_eq!(calls.iter().filter(|(e, c)| e == "/wxa/commit" && c == "42001").count(), 2);
}

#[tokio::test]
async fn platform_messages_never_carry_a_token() {
    let platform = Platform::start().await;
    let client = platform.client(Arc::default());
    // The stub's refusals name the token they refused.
    client.commit(&access(), &commit()).await.unwrap();
    platform.stub.lock().unwrap().revoked_tokens.extend(["atoken-1".into(), "atoken-2".into()]);
    let err = client.commit(&access(), &commit()).await.unwrap_err();
    let shown = format!("{err} {err:?}");
    assert_eq!(err.errcode(), Some(40001));
    assert!(!shown.contains("atoken-") && !shown.contains(SECRET) && !shown.contains("refresh-1"), "{shown}");
    platform.stop().await;
}

#[tokio::test]
async fn reads_are_retried_on_5xx_and_acting_calls_are_not() {
    let platform = Platform::start().await;
    let client = platform.client(Arc::default());
    {
        let mut s = platform.stub.lock().unwrap();
        s.fail_first.insert("/wxa/get_auditstatus".into(), 2);
        s.fail_first.insert("/wxa/release".into(), 1);
    }

    let audit = client.audit_status(&access(), 1234567).await.unwrap();
    let release = client.release(&access()).await.unwrap_err();

    assert_eq!(
        (audit.status, audit.reason.as_deref(), audit.screenshots),
        (AuditStatus::Rejected, Some("bad name"), vec!["m1".to_owned(), "m2".to_owned()])
    );
    assert_eq!(platform.hits("/wxa/get_auditstatus"), 3);
    assert!(matches!(release, PlatformError::Unavailable(_)), "{release:?}");
    assert_eq!(platform.hits("/wxa/release"), 1, "a release that may have happened is not sent again");
    platform.stop().await;
}

#[tokio::test]
async fn an_acting_call_the_platform_did_not_take_408_is_sent_again() {
    let platform = Platform::start().await;
    let client = platform.client(Arc::default());
    platform.stub.lock().unwrap().not_taken_first.insert("/wxa/release".into(), 1);

    client.release(&access()).await.unwrap();

    assert_eq!(platform.hits("/wxa/release"), 2);
    platform.stop().await;
}

#[tokio::test]
async fn an_unreachable_platform_is_unavailable_after_the_retries() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let mut config = WechatOpenConfig::new(format!("http://{addr}"), "https://mp.example", COMPONENT, SECRET, "t", KEY);
    config.backoff = Duration::from_millis(5);
    let recorder = Arc::new(Recorder::default());
    let client = WechatOpen::new(config).unwrap().with_recorder(recorder.clone());
    let err = client.pre_auth_code(&ticket()).await.unwrap_err();
    assert!(matches!(err, PlatformError::Unavailable(ref m) if m.contains("3 attempts")), "{err:?}");
    assert_eq!(recorder.calls.lock().unwrap().len(), 3);
}

#[tokio::test]
async fn release_steps_send_what_the_platform_expects() {
    let platform = Platform::start().await;
    let client = platform.client(Arc::default());

    client.release(&access()).await.unwrap();
    client.gray_release(&access(), 20).await.unwrap();
    let plan = client.gray_plan(&access()).await.unwrap();
    client.revert_gray_release(&access()).await.unwrap();
    let revert = client.revert_release(&access(), Some(3)).await.unwrap_err();
    let history = client.history_versions(&access()).await.unwrap();
    let info = client.version_info(&access()).await.unwrap();

    assert_eq!((plan.status, plan.gray_percentage), (1, 20));
    assert_eq!(revert.errcode(), Some(87011));
    assert_eq!((history[0].app_version, history[0].user_version.as_str()), (Some(3), "1.0.0"));
    assert_eq!(info.release.map(|r| r.user_version).as_deref(), Some("1.0.0"));
    assert_eq!(info.experience.map(|r| r.user_version).as_deref(), Some("1.1.0"));
    let stub = platform.stub.clone();
    platform.stop().await;
    let s = stub.lock().unwrap();
    let gray: Value = serde_json::from_str(&s.bodies["/wxa/grayrelease"]).unwrap();
    assert_eq!(gray["gray_percentage"], 20);
    assert!(s.queries["/wxa/revertcoderelease"].contains("action=get_history_version"));
}

#[tokio::test]
async fn the_template_library_is_used_with_the_component_token() {
    let platform = Platform::start().await;
    let client = platform.client(Arc::default());
    let drafts = client.template_drafts(&ticket()).await.unwrap();
    client.add_to_template(&ticket(), drafts[0].draft_id).await.unwrap();
    let templates = client.templates(&ticket()).await.unwrap();
    assert_eq!((drafts[0].draft_id, templates[0].template_id), (12, 31));
    let stub = platform.stub.clone();
    platform.stop().await;
    let s = stub.lock().unwrap();
    assert_eq!(serde_json::from_str::<Value>(&s.bodies["/wxa/addtotemplate"]).unwrap(), json!({"draft_id": 12, "template_type": 0}));
    assert_eq!(s.component_tokens, 1);
}

#[tokio::test]
async fn the_qr_code_is_the_image_and_a_json_answer_is_the_error() {
    let platform = Platform::start().await;
    let client = platform.client(Arc::default());

    let image = client.experience_qr(&access(), Some("pages/index/index?a=1&b=2".into())).await.unwrap();
    let path_sent = platform.stub.lock().unwrap().queries["/wxa/get_qrcode"].clone();
    let err = client.experience_qr(&access(), Some("pages/missing".into())).await.unwrap_err();

    assert_eq!(image, JPEG);
    assert!(path_sent.contains("path=pages%2Findex%2Findex%3Fa%3D1%26b%3D2"), "{path_sent}");
    assert_eq!(err.errcode(), Some(40097));
    platform.stop().await;
}

fn sent(platform: &Platform, path: &str) -> (Value, String) {
    let s = platform.stub.lock().unwrap();
    let body = s.bodies.get(path).map(|b| serde_json::from_str(b).unwrap_or(Value::Null)).unwrap_or(Value::Null);
    (body, s.queries.get(path).cloned().unwrap_or_default())
}

#[tokio::test]
async fn domains_are_read_from_both_calls_and_set_with_both() {
    let platform = Platform::start().await;
    let client = platform.client(Arc::default());

    let domains = client.domains(&access()).await.unwrap();

    assert_eq!(
        domains,
        ServerDomains {
            requestdomain: vec!["https://api.example.com".into()],
            wsrequestdomain: vec!["wss://ws.example.com".into()],
            uploaddomain: Vec::new(),
            downloaddomain: Vec::new(),
            webviewdomain: vec!["https://h5.example.com".into()],
        }
    );
    let (server, query) = sent(&platform, "/wxa/modify_domain");
    assert_eq!(server, json!({"action": "get"}));
    assert!(query.starts_with("access_token=atoken-1"), "{query}");
    assert_eq!(sent(&platform, "/wxa/setwebviewdomain").0, json!({"action": "get"}));

    let wanted = ServerDomains {
        requestdomain: vec!["https://api.example.com".into(), "https://pay.example.com".into()],
        wsrequestdomain: Vec::new(),
        uploaddomain: vec!["https://up.example.com".into()],
        downloaddomain: vec!["https://cdn.example.com".into()],
        webviewdomain: vec!["https://h5.example.com".into()],
    };
    client.set_domains(&access(), &wanted).await.unwrap();
    assert_eq!(
        sent(&platform, "/wxa/modify_domain").0,
        json!({
            "action": "set",
            "requestdomain": ["https://api.example.com", "https://pay.example.com"],
            "wsrequestdomain": [],
            "uploaddomain": ["https://up.example.com"],
            "downloaddomain": ["https://cdn.example.com"],
        })
    );
    assert_eq!(sent(&platform, "/wxa/setwebviewdomain").0, json!({"action": "set", "webviewdomain": ["https://h5.example.com"]}));

    // A refused entry is the platform's refusal, and the web-view domains are left alone.
    let webview_calls = platform.hits("/wxa/setwebviewdomain");
    let bad = ServerDomains { requestdomain: vec!["https://bad domain".into()], ..wanted };
    let err = client.set_domains(&access(), &bad).await.unwrap_err();
    assert!(matches!(err, PlatformError::Refused { errcode: 85017, ref errmsg } if errmsg.contains("no domain to modify")), "{err:?}");
    assert_eq!(platform.hits("/wxa/setwebviewdomain"), webview_calls);
    platform.stop().await;
}

#[tokio::test]
async fn privacy_settings_are_read_without_empty_contacts_and_written_back_in_the_platforms_shape() {
    let platform = Platform::start().await;
    let client = platform.client(Arc::default());

    let settings = client.privacy(&access()).await.unwrap();

    let expected = PrivacySettings {
        owner_setting: PrivacyOwner {
            contact_email: Some("dpo@example.com".into()),
            contact_phone: None,
            contact_weixin: Some("shop_ann".into()),
            contact_qq: None,
            notice_method: "弹窗".into(),
        },
        setting_list: vec![
            PrivacyItem { privacy_key: "UserInfo".into(), privacy_text: "登录".into() },
            PrivacyItem { privacy_key: "Location".into(), privacy_text: "附近门店".into() },
        ],
    };
    assert_eq!(settings, expected);
    let (body, query) = sent(&platform, "/cgi-bin/component/getprivacysetting");
    assert_eq!(body, json!({"privacy_ver": 2}));
    assert!(query.starts_with("access_token=atoken-1"), "the authorizer token, not the component's: {query}");

    client.set_privacy(&access(), &settings).await.unwrap();
    assert_eq!(
        sent(&platform, "/cgi-bin/component/setprivacysetting").0,
        json!({
            "privacy_ver": 2,
            "owner_setting": {"contact_email": "dpo@example.com", "contact_weixin": "shop_ann", "notice_method": "弹窗"},
            "setting_list": [
                {"privacy_key": "UserInfo", "privacy_text": "登录"},
                {"privacy_key": "Location", "privacy_text": "附近门店"},
            ],
        })
    );

    // A stale authorizer token on these paths is refreshed and the call retried once, too.
    platform.stub.lock().unwrap().revoked_tokens.push("atoken-1".into());
    assert_eq!(client.privacy(&access()).await.unwrap(), expected);
    assert_eq!(platform.hits("/cgi-bin/component/getprivacysetting"), 3);
    assert_eq!(platform.stub.lock().unwrap().authorizer_tokens, 2);
    platform.stop().await;
}

#[tokio::test]
async fn categories_quota_speed_up_and_undo_speak_the_platforms_format() {
    let platform = Platform::start().await;
    let client = platform.client(Arc::default());

    let categories = client.categories(&access()).await.unwrap();
    let quota = client.audit_quota(&access()).await.unwrap();
    client.speedup_audit(&access(), 1234567).await.unwrap();
    let (speedup, _) = sent(&platform, "/wxa/speedupaudit");
    let unknown = client.speedup_audit(&access(), 1).await.unwrap_err();
    let undo = client.undo_audit(&access()).await.unwrap_err();

    assert_eq!(
        categories,
        [
            Category { first_id: 287, first_class: "工具".into(), second_id: 612, second_class: "效率".into() },
            Category { first_id: 8, first_class: "教育".into(), second_id: 9, second_class: "在线教育".into() },
        ]
    );
    assert_eq!(quota, AuditQuota { rest: 8, limit: 10, speedup_rest: 1, speedup_limit: 3 });
    assert_eq!(speedup, json!({"auditid": 1234567}));
    assert_eq!(unknown.errcode(), Some(85021));
    assert!(matches!(undo, PlatformError::Refused { errcode: 87013, ref errmsg } if errmsg.contains("undo quota")), "{undo:?}");
    assert!(sent(&platform, "/wxa/undocodeaudit").1.starts_with("access_token=atoken-1"));

    // A speed-up or a withdrawal that may have arrived is not sent again.
    {
        let mut s = platform.stub.lock().unwrap();
        s.fail_first.insert("/wxa/undocodeaudit".into(), 1);
        s.fail_first.insert("/wxa/speedupaudit".into(), 1);
    }
    let (undo_calls, speedup_calls) = (platform.hits("/wxa/undocodeaudit"), platform.hits("/wxa/speedupaudit"));
    assert!(matches!(client.undo_audit(&access()).await, Err(PlatformError::Unavailable(_))));
    assert!(matches!(client.speedup_audit(&access(), 1234567).await, Err(PlatformError::Unavailable(_))));
    assert_eq!((platform.hits("/wxa/undocodeaudit"), platform.hits("/wxa/speedupaudit")), (undo_calls + 1, speedup_calls + 1));
    platform.stop().await;
}
