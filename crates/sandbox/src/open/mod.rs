//! The third-party platform (component) on the same wire: the component token from a verify
//! ticket the sandbox pushed, pre-auth codes and the authorisation page, authorisation codes
//! and authorizer tokens, the template library, code management per mini-program (commit,
//! audit, release, gray release, rollback, versions, the experience QR code), each
//! mini-program's settings (domains, privacy settings, categories) and the component's audit
//! quota, the upload endpoint standing in for `miniprogram-ci`, and encrypted pushes to
//! Atrium's event URLs. What the platform's people do (an admin scanning the page, the
//! reviewers deciding an audit) is played by control calls, or by the audit policy.

mod code;
mod control;
mod crypt;
mod push;
mod settings;
mod upload;

pub use code::{AuditView, CommittedView, GrayView, MiniProgramSnapshot, VersionView};
pub use control::{
    AuditDecision, AuditPolicy, AuditReport, AuditResult, AuthorizeManyReport, AuthorizeReport, AuthorizeRequest, AuthorizedTenant,
    FailedTenant, MAX_AUTHORIZE_MANY, PolicyResult, UnauthorizeReport, tenant_appid,
};
pub(crate) use control::{
    control_audit, control_authorize, control_ci_uploads, control_events, control_miniprogram, control_unauthorize, control_verify_ticket,
};
pub use push::{ComponentPush, PushAttempt};
pub use settings::{CategoryView, DomainsView, PlatformQuota, PrivacyItemView, PrivacyOwnerView, PrivacyView, QuotaRequest};
pub(crate) use upload::ci_upload;
pub use upload::{CiUpload, SandboxUploader};

use actix_web::{HttpRequest, HttpResponse, web};
use base64::Engine;
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};
use url::Url;

use crate::platform::{Sandbox, errcode_body, random_hex};
use crate::{SANDBOX_COMPONENT_APPID, SANDBOX_TEMPLATE_DEV_APPID};

/// A boxed future, as the tenant resolver returns (the same type as `futures`' `BoxFuture`).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Finds a tenant's newest authorisation link (the page's URL) or pre-auth code, for
/// `control/authorize` by `tenant_id`: the embedding server knows tenants, the sandbox does
/// not.
pub type TenantLinkResolver = Arc<dyn Fn(i64) -> BoxFuture<'static, Option<String>> + Send + Sync>;

/// Atrium's component event URL, under its public URL.
pub const ATRIUM_EVENTS_PATH: &str = "/api/v1/miniprogram/component/events";
/// Atrium's message URL of one mini-program, under its public URL; `{appid}` stands for it.
pub const ATRIUM_MESSAGES_PATH: &str = "/api/v1/miniprogram/component/messages/{appid}";

/// The permission sets an authorisation grants unless told otherwise: 17 account, 18 code
/// management (development), 19 customer service, 25 open platform account, 30 basic
/// information, 31 data analysis, 36 plug-ins, 37 nearby, 40 cloud development.
pub const DEFAULT_FUNC_INFO: [i64; 9] = [17, 18, 19, 25, 30, 31, 36, 37, 40];
/// The permission set code management needs; without it those calls get 61007.
pub const CODE_MANAGEMENT_FUNC: i64 = 18;

pub(crate) const COMPONENT_TOKEN_PATH: &str = "/cgi-bin/component/api_component_token";
pub(crate) const PREAUTHCODE_PATH: &str = "/cgi-bin/component/api_create_preauthcode";
pub(crate) const QUERY_AUTH_PATH: &str = "/cgi-bin/component/api_query_auth";
pub(crate) const AUTHORIZER_TOKEN_PATH: &str = "/cgi-bin/component/api_authorizer_token";
pub(crate) const AUTHORIZER_INFO_PATH: &str = "/cgi-bin/component/api_get_authorizer_info";
pub(crate) const DRAFTS_PATH: &str = "/wxa/gettemplatedraftlist";
pub(crate) const ADD_TEMPLATE_PATH: &str = "/wxa/addtotemplate";
pub(crate) const TEMPLATES_PATH: &str = "/wxa/gettemplatelist";
pub(crate) const COMMIT_PATH: &str = "/wxa/commit";
pub(crate) const SUBMIT_PATH: &str = "/wxa/submit_audit";
pub(crate) const AUDIT_STATUS_PATH: &str = "/wxa/get_auditstatus";
pub(crate) const RELEASE_PATH: &str = "/wxa/release";
pub(crate) const GRAY_PATH: &str = "/wxa/grayrelease";
pub(crate) const GRAY_PLAN_PATH: &str = "/wxa/getgrayreleaseplan";
pub(crate) const REVERT_GRAY_PATH: &str = "/wxa/revertgrayrelease";
pub(crate) const REVERT_PATH: &str = "/wxa/revertcoderelease";
pub(crate) const VERSION_INFO_PATH: &str = "/wxa/getversioninfo";
pub(crate) const QRCODE_PATH: &str = "/wxa/get_qrcode";
pub(crate) const CI_UPLOAD_PATH: &str = "/ci/upload";
pub(crate) const MODIFY_DOMAIN_PATH: &str = "/wxa/modify_domain";
pub(crate) const WEBVIEW_DOMAIN_PATH: &str = "/wxa/setwebviewdomain";
pub(crate) const GET_PRIVACY_PATH: &str = "/cgi-bin/component/getprivacysetting";
pub(crate) const SET_PRIVACY_PATH: &str = "/cgi-bin/component/setprivacysetting";
pub(crate) const CATEGORY_PATH: &str = "/wxa/get_category";
pub(crate) const QUOTA_PATH: &str = "/wxa/queryquota";
pub(crate) const SPEEDUP_PATH: &str = "/wxa/speedupaudit";
pub(crate) const UNDO_PATH: &str = "/wxa/undocodeaudit";

/// Every platform path of the component and the method it takes.
const ENDPOINTS: [(&str, &str); 18] = [
    (COMPONENT_TOKEN_PATH, "POST"),
    (PREAUTHCODE_PATH, "POST"),
    (QUERY_AUTH_PATH, "POST"),
    (AUTHORIZER_TOKEN_PATH, "POST"),
    (AUTHORIZER_INFO_PATH, "POST"),
    (DRAFTS_PATH, "GET"),
    (ADD_TEMPLATE_PATH, "POST"),
    (TEMPLATES_PATH, "GET"),
    (COMMIT_PATH, "POST"),
    (SUBMIT_PATH, "POST"),
    (AUDIT_STATUS_PATH, "POST"),
    (RELEASE_PATH, "POST"),
    (GRAY_PATH, "POST"),
    (GRAY_PLAN_PATH, "GET"),
    (REVERT_GRAY_PATH, "GET"),
    (REVERT_PATH, "GET"),
    (VERSION_INFO_PATH, "POST"),
    (QRCODE_PATH, "GET"),
];

/// The settings and quota calls of a mini-program and the method each takes. They are not in
/// `INJECTABLE_PATHS` (yet), so `control/fail` does not take them.
const SETTINGS_ENDPOINTS: [(&str, &str); 8] = [
    (MODIFY_DOMAIN_PATH, "POST"),
    (WEBVIEW_DOMAIN_PATH, "POST"),
    (GET_PRIVACY_PATH, "POST"),
    (SET_PRIVACY_PATH, "POST"),
    (CATEGORY_PATH, "GET"),
    (QUOTA_PATH, "GET"),
    (SPEEDUP_PATH, "POST"),
    (UNDO_PATH, "GET"),
];

/// Paths under `/cgi-bin/component/` that belong to a mini-program: they take its authorizer
/// token as `access_token`, not the component token.
const AUTHORIZER_COMPONENT_PATHS: [&str; 2] = [GET_PRIVACY_PATH, SET_PRIVACY_PATH];

/// Lifetime of component and authorizer tokens, as on the platform.
const TOKEN_EXPIRES_IN: u64 = 7200;
const PRE_AUTH_EXPIRES_IN: u64 = 1800;
pub(crate) const AUTH_CODE_EXPIRES_IN: u64 = 3600;
/// Verify tickets the component token accepts: the newest ones pushed.
const KEEP_TICKETS: usize = 10;
const KEEP_CODES: usize = 10_000;
const KEEP_AUTHORIZERS: usize = 10_000;

/// The experience QR code: a real JPEG (see `make_experience_qr.py` beside it).
pub const EXPERIENCE_QR_JPEG: &[u8] = include_bytes!("experience_qr.jpg");

/// The platform's message for an errcode the sandbox answers.
pub(crate) fn errmsg(code: i64) -> &'static str {
    match code {
        -1 => "system error",
        40001 => "invalid credential, access_token is invalid or not latest",
        40013 => "invalid appid",
        40066 => "invalid url",
        40097 => "invalid args",
        40125 => "invalid appsecret",
        41001 => "access_token missing",
        41002 => "appid missing",
        41004 => "appsecret missing",
        42001 => "access_token expired",
        43001 => "require GET method",
        43002 => "require POST method",
        44002 => "empty post data",
        47001 => "data format error",
        47003 => "argument invalid",
        61003 => "component is not authorized by this account",
        61006 => "component ticket is invalid",
        61007 => "api is unauthorized to component",
        61009 => "code is invalid",
        61010 => "code is expired",
        61023 => "refresh_token is invalid",
        85009 => "already has one auditing version",
        85012 => "invalid audit id",
        85013 => "invalid ext_json",
        85014 => "template_id not exist",
        85016 => "domain count exceeds the limit",
        85017 => "no domain to modify or invalid domain",
        85019 => "no audit version to release",
        85020 => "audit status does not allow release",
        85021 => "audit status does not allow it",
        85044 => "code package exceeds the size limit",
        85064 => "draft not found",
        85065 => "template library is full",
        85079 => "miniprogram has no online release",
        85081 => "invalid gray percentage",
        85082 => "gray percentage must be higher than the current one",
        85085 => "submit audit reach limit",
        85086 => "must commit code first",
        87011 => "current version is in gray release, can not revert",
        87012 => "no version to revert to",
        87013 => "quota used up",
        _ => "injected error",
    }
}

/// An errcode answer.
pub(crate) fn err(code: i64) -> Value {
    errcode_body(code, errmsg(code))
}

fn ok(mut body: Value) -> Value {
    body["errcode"] = json!(0);
    body["errmsg"] = json!("ok");
    body
}

/// The sandbox's own third-party platform: its credentials, the template-development
/// mini-program packages are uploaded to, and Atrium's event URLs. `Debug` hides the secret,
/// the token and the key.
#[derive(Clone, PartialEq, Eq)]
pub struct ComponentConfig {
    pub component_appid: String,
    pub component_secret: String,
    /// The token pushes are signed with (3–32 letters and digits).
    pub token: String,
    /// The 43-character EncodingAESKey pushes are encrypted with.
    pub encoding_aes_key: String,
    /// The template-development mini-program uploads go to.
    pub template_dev_appid: String,
    /// Where component events go: `<atrium>/api/v1/miniprogram/component/events`.
    pub events_url: Option<String>,
    /// Where a mini-program's messages go, `{appid}` standing for it:
    /// `<atrium>/api/v1/miniprogram/component/messages/{appid}`.
    pub messages_url: Option<String>,
}

impl fmt::Debug for ComponentConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ComponentConfig")
            .field("component_appid", &self.component_appid)
            .field("component_secret", &"***")
            .field("token", &"***")
            .field("encoding_aes_key", &"***")
            .field("template_dev_appid", &self.template_dev_appid)
            .field("events_url", &self.events_url)
            .field("messages_url", &self.messages_url)
            .finish()
    }
}

/// `n` random letters and digits.
fn random_alnum(n: usize) -> String {
    const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut bytes = vec![0u8; n];
    rand::RngCore::fill_bytes(&mut rand::rng(), &mut bytes);
    bytes.iter().map(|b| char::from(ALNUM[usize::from(*b) % ALNUM.len()])).collect()
}

/// An appid as the platform writes them: letters, digits and `_`, at most 32.
pub(crate) fn is_appid(s: &str) -> bool {
    (1..=32).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn check_push_url(name: &str, url: &str) -> Result<(), String> {
    match Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Ok(()),
        _ => Err(format!("{name} must be an absolute http(s) URL")),
    }
}

impl ComponentConfig {
    /// The sandbox's component ([`SANDBOX_COMPONENT_APPID`]) with a fresh random secret,
    /// token and EncodingAESKey, uploading to [`SANDBOX_TEMPLATE_DEV_APPID`], pushing nowhere
    /// yet.
    pub fn generate() -> Self {
        let mut key = [0u8; 32];
        rand::RngCore::fill_bytes(&mut rand::rng(), &mut key);
        let encoding_aes_key = base64::engine::general_purpose::STANDARD_NO_PAD.encode(key);
        ComponentConfig {
            component_appid: SANDBOX_COMPONENT_APPID.to_owned(),
            component_secret: random_hex(16),
            token: random_alnum(32),
            encoding_aes_key,
            template_dev_appid: SANDBOX_TEMPLATE_DEV_APPID.to_owned(),
            events_url: None,
            messages_url: None,
        }
    }

    /// Pushes to Atrium at `atrium_base_url` (its public URL): both event URLs at their
    /// paths ([`ATRIUM_EVENTS_PATH`], [`ATRIUM_MESSAGES_PATH`]).
    pub fn pushing_to(mut self, atrium_base_url: &str) -> Self {
        let base = atrium_base_url.trim_end_matches('/');
        self.events_url = Some(format!("{base}{ATRIUM_EVENTS_PATH}"));
        self.messages_url = Some(format!("{base}{ATRIUM_MESSAGES_PATH}"));
        self
    }

    /// The message URL of mini-program `appid`.
    pub fn messages_url_for(&self, appid: &str) -> Option<String> {
        self.messages_url.as_ref().map(|u| u.replace("{appid}", appid))
    }

    fn check(&self) -> Result<(), String> {
        if !is_appid(&self.component_appid) || !is_appid(&self.template_dev_appid) {
            return Err("component_appid and template_dev_appid must be 1 to 32 letters, digits or _".into());
        }
        if self.component_secret.is_empty() {
            return Err("component_secret must not be empty".into());
        }
        if !(3..=32).contains(&self.token.len()) || !self.token.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err("the token must be 3 to 32 letters or digits".into());
        }
        crypt::decode_key(&self.encoding_aes_key)?;
        if let Some(u) = &self.events_url {
            check_push_url("events_url", u)?;
        }
        if let Some(u) = &self.messages_url {
            if !u.contains("{appid}") {
                return Err("messages_url must hold {appid}".into());
            }
            check_push_url("messages_url", &u.replace("{appid}", "wx"))?;
        }
        Ok(())
    }
}

/// Tokens of one kind (component or authorizer), by owner appid.
#[derive(Default)]
struct TokenStore {
    tokens: HashMap<String, Issued>,
    issued: u64,
}

struct Issued {
    owner: String,
    seq: u64,
    expires_at: Instant,
}

impl TokenStore {
    /// A new token for `owner`. Like the platform, the owner's previous token stays valid
    /// until it expires; older and expired ones are forgotten, which bounds memory by owners.
    fn issue(&mut self, owner: &str, now: Instant) -> String {
        self.tokens.retain(|_, t| t.expires_at > now);
        let newest_previous = self.tokens.values().filter(|t| t.owner == owner).map(|t| t.seq).max();
        self.tokens.retain(|_, t| t.owner != owner || Some(t.seq) == newest_previous);
        self.issued += 1;
        let token = random_hex(32);
        let expires_at = now.checked_add(Duration::from_secs(TOKEN_EXPIRES_IN)).unwrap_or(now);
        self.tokens.insert(token.clone(), Issued { owner: owner.to_owned(), seq: self.issued, expires_at });
        token
    }

    /// The owner of `token`, or the errcode: 41001 missing, 40001 unknown, 42001 expired.
    fn check(&self, token: Option<&String>, now: Instant) -> Result<String, i64> {
        let token = token.filter(|t| !t.is_empty()).ok_or(41001)?;
        match self.tokens.get(token) {
            None => Err(40001),
            Some(t) if t.expires_at <= now => Err(42001),
            Some(t) => Ok(t.owner.clone()),
        }
    }

    fn expire_all(&mut self, now: Instant) -> usize {
        let mut live = 0;
        for t in self.tokens.values_mut().filter(|t| t.expires_at > now) {
            live += 1;
            t.expires_at = now;
        }
        live
    }

    fn revoke(&mut self, owner: &str) {
        self.tokens.retain(|_, t| t.owner != owner);
    }
}

struct PreAuth {
    expires_at: Instant,
    /// Where the page sends the admin back, once the page was opened.
    redirect_uri: Option<String>,
    used: bool,
}

struct AuthCode {
    authorizer_appid: String,
    expires_at: Instant,
    used: bool,
}

/// The third-party platform's state, inside the sandbox's one lock.
pub(crate) struct OpenState {
    pub(crate) config: ComponentConfig,
    /// Verify tickets pushed, newest last.
    tickets: VecDeque<String>,
    component_tokens: TokenStore,
    authorizer_tokens: TokenStore,
    pre_auth: HashMap<String, PreAuth>,
    auth_codes: HashMap<String, AuthCode>,
    authorizers: HashMap<String, code::Authorizer>,
    library: code::Library,
    next_auditid: i64,
    next_app_version: i64,
    pub(crate) pushes: push::PushState,
    uploads: VecDeque<CiUpload>,
    resolver: Option<TenantLinkResolver>,
    /// The component's audit quota, shared by its mini-programs.
    quota: settings::PlatformQuota,
    /// How new audits are decided.
    policy: control::AuditPolicy,
    /// Decisions the policy made under the lock, to be scheduled once it is released.
    scheduled: Vec<control::ScheduledDecision>,
}

impl Default for OpenState {
    fn default() -> Self {
        OpenState {
            config: ComponentConfig::generate(),
            tickets: VecDeque::new(),
            component_tokens: TokenStore::default(),
            authorizer_tokens: TokenStore::default(),
            pre_auth: HashMap::new(),
            auth_codes: HashMap::new(),
            authorizers: HashMap::new(),
            library: code::Library::default(),
            next_auditid: 412_000_000,
            next_app_version: 0,
            pushes: push::PushState::default(),
            uploads: VecDeque::new(),
            resolver: None,
            quota: settings::PlatformQuota::default(),
            policy: control::AuditPolicy::default(),
            scheduled: Vec::new(),
        }
    }
}

/// Keeps a code map within [`KEEP_CODES`]: expired codes go first, then the oldest half.
fn bound<V>(map: &mut HashMap<String, V>, expires: impl Fn(&V) -> Instant, now: Instant) {
    if map.len() < KEEP_CODES {
        return;
    }
    map.retain(|_, v| expires(v) > now);
    if map.len() >= KEEP_CODES {
        let mut by_expiry: Vec<(Instant, String)> = map.iter().map(|(k, v)| (expires(v), k.clone())).collect();
        by_expiry.sort();
        for (_, k) in by_expiry.into_iter().take(KEEP_CODES / 2) {
            map.remove(&k);
        }
    }
}

/// A string field of a request body, if present and not empty.
fn text<'a>(body: &'a Value, key: &str) -> Option<&'a str> {
    body.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// What a platform call answers: JSON (errors included, HTTP 200), or the QR image.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Reply {
    Json(Value),
    Jpeg,
}

impl From<Value> for Reply {
    fn from(v: Value) -> Self {
        Reply::Json(v)
    }
}

/// A POST body: empty → 44002, not a JSON object → 47001.
fn parse_body(body: &[u8]) -> Result<Value, i64> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(44002);
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(v @ Value::Object(_)) => Ok(v),
        _ => Err(47001),
    }
}

impl OpenState {
    /// One platform call of the component (`path` relative to the API base).
    fn call(&mut self, path: &str, method: &str, query: &HashMap<String, String>, raw: &[u8]) -> Reply {
        let Some((_, wanted)) = ENDPOINTS.iter().chain(SETTINGS_ENDPOINTS.iter()).find(|(p, _)| *p == path) else {
            return err(40066).into();
        };
        if !method.eq_ignore_ascii_case(wanted) {
            return err(if *wanted == "GET" { 43001 } else { 43002 }).into();
        }
        let body = if *wanted == "POST" {
            match parse_body(raw) {
                Ok(v) => v,
                Err(code) => return err(code).into(),
            }
        } else {
            Value::Null
        };
        let now = Instant::now();
        if path == COMPONENT_TOKEN_PATH {
            return self.component_token(&body, now).into();
        }
        if path.starts_with("/cgi-bin/component/") && !AUTHORIZER_COMPONENT_PATHS.contains(&path) {
            if let Err(code) = self.component_tokens.check(query.get("component_access_token"), now) {
                return err(code).into();
            }
            if text(&body, "component_appid") != Some(self.config.component_appid.as_str()) {
                return err(40013).into();
            }
            return match path {
                PREAUTHCODE_PATH => self.create_pre_auth_code(now),
                QUERY_AUTH_PATH => self.query_auth(&body, now),
                AUTHORIZER_TOKEN_PATH => self.authorizer_token(&body, now),
                _ => self.authorizer_info(&body),
            }
            .into();
        }
        if [DRAFTS_PATH, ADD_TEMPLATE_PATH, TEMPLATES_PATH].contains(&path) {
            // The template library belongs to the component: its token is the access token.
            if let Err(code) = self.component_tokens.check(query.get("access_token"), now) {
                return err(code).into();
            }
            return self.library_call(path, &body).into();
        }
        let appid = match self.authorizer_tokens.check(query.get("access_token"), now) {
            Ok(appid) => appid,
            Err(code) => return err(code).into(),
        };
        self.code_call(&appid, path, query, &body)
    }

    /// `api_component_token`: the component's credentials and a verify ticket it was pushed.
    fn component_token(&mut self, body: &Value, now: Instant) -> Value {
        let Some(appid) = text(body, "component_appid") else { return err(41002) };
        let Some(secret) = text(body, "component_appsecret") else { return err(41004) };
        if appid != self.config.component_appid {
            return err(40013);
        }
        let known = self.config.component_secret.as_bytes();
        if secret.len() != known.len() || !openssl::memcmp::eq(secret.as_bytes(), known) {
            return err(40125);
        }
        if !text(body, "component_verify_ticket").is_some_and(|t| self.tickets.iter().any(|k| k == t)) {
            return err(61006);
        }
        let token = self.component_tokens.issue(appid, now);
        json!({"component_access_token": token, "expires_in": TOKEN_EXPIRES_IN})
    }

    fn create_pre_auth_code(&mut self, now: Instant) -> Value {
        bound(&mut self.pre_auth, |p| p.expires_at, now);
        let code = format!("preauthcode@@@{}", random_hex(24));
        let expires_at = now.checked_add(Duration::from_secs(PRE_AUTH_EXPIRES_IN)).unwrap_or(now);
        self.pre_auth.insert(code.clone(), PreAuth { expires_at, redirect_uri: None, used: false });
        json!({"pre_auth_code": code, "expires_in": PRE_AUTH_EXPIRES_IN})
    }

    /// `api_query_auth`: an authorisation code, once, for the authorizer's tokens.
    fn query_auth(&mut self, body: &Value, now: Instant) -> Value {
        let Some(code) = text(body, "authorization_code") else { return err(61009) };
        let Some(issued) = self.auth_codes.get_mut(code) else { return err(61009) };
        if issued.used {
            return err(61009);
        }
        if issued.expires_at <= now {
            return err(61010);
        }
        issued.used = true;
        let appid = issued.authorizer_appid.clone();
        let Some(a) = self.authorizers.get(&appid).filter(|a| a.authorized) else { return err(61003) };
        let info = json!({
            "authorizer_appid": appid,
            "authorizer_refresh_token": a.refresh_token,
            "func_info": func_info_json(&a.func_info),
        });
        let token = self.authorizer_tokens.issue(&appid, now);
        let mut info = info;
        info["authorizer_access_token"] = json!(token);
        info["expires_in"] = json!(TOKEN_EXPIRES_IN);
        json!({"authorization_info": info})
    }

    /// `api_authorizer_token`: a new authorizer token from the refresh token.
    fn authorizer_token(&mut self, body: &Value, now: Instant) -> Value {
        let Some(appid) = text(body, "authorizer_appid") else { return err(41002) };
        let Some(a) = self.authorizers.get(appid).filter(|a| a.authorized) else { return err(61003) };
        if text(body, "authorizer_refresh_token") != Some(a.refresh_token.as_str()) {
            return err(61023);
        }
        let refresh = a.refresh_token.clone();
        let token = self.authorizer_tokens.issue(appid, now);
        json!({"authorizer_access_token": token, "expires_in": TOKEN_EXPIRES_IN, "authorizer_refresh_token": refresh})
    }

    fn authorizer_info(&self, body: &Value) -> Value {
        let Some(appid) = text(body, "authorizer_appid") else { return err(41002) };
        let Some(a) = self.authorizers.get(appid) else { return err(61003) };
        let granted: &[i64] = if a.authorized { &a.func_info } else { &[] };
        json!({
            "authorizer_info": {
                "nick_name": a.nickname,
                "head_img": "",
                "service_type_info": {"id": 0},
                "verify_type_info": {"id": -1},
                "user_name": a.user_name,
                "principal_name": "Sandbox",
                "alias": "",
                "qrcode_url": "",
                "business_info": {"open_pay": 0, "open_shake": 0, "open_scan": 0, "open_card": 0, "open_store": 0},
                "MiniProgramInfo": {"network": {}, "categories": [], "visit_status": 0},
            },
            "authorization_info": {"authorizer_appid": appid, "func_info": func_info_json(granted)},
        })
    }

    /// The page was opened (or its URL handed to `control/authorize`): remembers where it
    /// sends the admin back.
    fn open_page(
        &mut self,
        component_appid: Option<&str>,
        code: Option<&str>,
        redirect_uri: Option<&str>,
        auth_type: Option<&str>,
    ) -> Result<(), String> {
        if component_appid != Some(self.config.component_appid.as_str()) {
            return Err("component_appid is not the sandbox's component".into());
        }
        if auth_type.is_some_and(|t| !["1", "2", "3"].contains(&t)) {
            return Err("auth_type must be 1, 2 or 3".into());
        }
        let redirect = redirect_uri.ok_or("redirect_uri is missing")?;
        match Url::parse(redirect) {
            Ok(u) if matches!(u.scheme(), "http" | "https") => {}
            _ => return Err("redirect_uri must be an absolute http(s) URL".into()),
        }
        let code = code.ok_or("pre_auth_code is missing")?;
        let pre = self.pre_auth.get_mut(code).ok_or("the pre-auth code is unknown")?;
        if pre.used {
            return Err("the pre-auth code was used".into());
        }
        if pre.expires_at <= Instant::now() {
            return Err("the pre-auth code expired".into());
        }
        pre.redirect_uri = Some(redirect.to_owned());
        Ok(())
    }

    /// Expires every component and authorizer token; how many were live.
    pub(crate) fn expire_tokens(&mut self, now: Instant) -> usize {
        self.component_tokens.expire_all(now) + self.authorizer_tokens.expire_all(now)
    }
}

fn func_info_json(ids: &[i64]) -> Value {
    Value::Array(ids.iter().map(|id| json!({"funcscope_category": {"id": id}})).collect())
}

impl Sandbox {
    /// The third-party platform's configuration: what Atrium's `WechatOpenConfig` needs
    /// (appid, secret, token, EncodingAESKey) and where pushes go.
    pub fn component(&self) -> ComponentConfig {
        self.lock().open.config.clone()
    }

    /// Replaces the third-party platform's configuration (e.g. with the credentials Atrium
    /// is configured with). A new appid or secret voids the tickets and component tokens
    /// issued so far.
    pub fn set_component(&self, config: ComponentConfig) -> Result<(), String> {
        config.check()?;
        let mut state = self.lock();
        let open = &mut state.open;
        if open.config.component_appid != config.component_appid || open.config.component_secret != config.component_secret {
            open.tickets.clear();
            open.component_tokens = TokenStore::default();
        }
        open.config = config;
        Ok(())
    }

    /// Pushes events to Atrium at `atrium_base_url` (its public URL), at the standard paths.
    pub fn push_events_to(&self, atrium_base_url: &str) -> Result<(), String> {
        let config = self.component().pushing_to(atrium_base_url);
        self.set_component(config)
    }

    /// How `control/authorize` finds a tenant's authorisation link by `tenant_id`.
    pub fn resolve_tenant_links(&self, resolver: TenantLinkResolver) {
        self.lock().open.resolver = Some(resolver);
    }

    /// How many component tokens `api_component_token` has issued.
    pub fn component_tokens_issued(&self) -> u64 {
        self.lock().open.component_tokens.issued
    }

    /// How many authorizer tokens `api_query_auth` and `api_authorizer_token` have issued.
    pub fn authorizer_tokens_issued(&self) -> u64 {
        self.lock().open.authorizer_tokens.issued
    }

    /// Pushes a new `component_verify_ticket` to the component event URL now (the platform
    /// does every 10 minutes); the component token accepts it and the nine before it. The
    /// first delivery attempt is made before this returns.
    pub async fn push_verify_ticket(&self) -> Result<ComponentPush, String> {
        let seq = {
            let mut state = self.lock();
            let open = &mut state.open;
            let ticket = format!("ticket@@@{}", random_alnum(43));
            if open.tickets.len() >= KEEP_TICKETS {
                open.tickets.pop_front();
            }
            open.tickets.push_back(ticket.clone());
            let t = open.pushes.next_create_time();
            let message = push::xml(&[
                ("AppId", push::Field::Text(&open.config.component_appid)),
                ("CreateTime", push::Field::Number(t)),
                ("InfoType", push::Field::Text("component_verify_ticket")),
                ("ComponentVerifyTicket", push::Field::Text(&ticket)),
            ]);
            open.new_push("component_verify_ticket", None, push::Target::Component, t, message, false)?
        };
        self.dispatch_push(seq).await.ok_or_else(|| "the push was dropped".to_owned())
    }

    /// Pushes a verify ticket now and then every `every`, as the platform does, until the
    /// handle is aborted. Call it once the event URL answers (after the server started); a
    /// push that finds it not answering yet is retried.
    pub fn spawn_verify_ticket_pushes(&self, every: Duration) -> tokio::task::JoinHandle<()> {
        let sb = self.clone();
        tokio::spawn(async move {
            loop {
                if let Err(e) = sb.push_verify_ticket().await {
                    log::warn!("sandbox platform could not push a verify ticket: {e}");
                }
                tokio::time::sleep(every).await;
            }
        })
    }

    /// A component call (`path` relative to `{prefix}/api`), as the HTTP entry makes it.
    /// Decisions the audit policy made during the call are scheduled once the lock is
    /// released.
    pub(crate) fn open_call(&self, path: &str, method: &str, query: &str, body: &[u8]) -> Reply {
        let query: HashMap<String, String> = url::form_urlencoded::parse(query.as_bytes()).into_owned().collect();
        let (reply, due) = {
            let mut state = self.lock();
            if let Some(code) = state.mp.injected(path) {
                return err(code).into();
            }
            let reply = state.open.call(path, method, &query, body);
            (reply, std::mem::take(&mut state.open.scheduled))
        };
        self.schedule_decisions(due);
        reply
    }
}

fn reply(r: Reply) -> HttpResponse {
    match r {
        // The platform answers every outcome, errors included, with HTTP 200.
        Reply::Json(v) => HttpResponse::Ok().json(v),
        Reply::Jpeg => HttpResponse::Ok().content_type("image/jpeg").body(EXPERIENCE_QR_JPEG),
    }
}

/// `{prefix}/api/cgi-bin/component/{name}`.
pub(crate) async fn component_entry(sb: web::Data<Sandbox>, req: HttpRequest, body: web::Bytes) -> HttpResponse {
    let path = format!("/cgi-bin/component/{}", req.match_info().get("name").unwrap_or_default());
    reply(sb.open_call(&path, req.method().as_str(), req.query_string(), &body))
}

/// `{prefix}/api/wxa/{name}`.
pub(crate) async fn wxa_entry(sb: web::Data<Sandbox>, req: HttpRequest, body: web::Bytes) -> HttpResponse {
    let path = format!("/wxa/{}", req.match_info().get("name").unwrap_or_default());
    reply(sb.open_call(&path, req.method().as_str(), req.query_string(), &body))
}

/// `GET {prefix}/mp/cgi-bin/componentloginpage`: the authorisation page an admin scans.
pub(crate) async fn login_page(sb: web::Data<Sandbox>, req: HttpRequest) -> HttpResponse {
    let q: HashMap<String, String> = url::form_urlencoded::parse(req.query_string().as_bytes()).into_owned().collect();
    let get = |k: &str| q.get(k).map(String::as_str);
    let opened = sb.lock().open.open_page(get("component_appid"), get("pre_auth_code"), get("redirect_uri"), get("auth_type"));
    let page = |title: &str, body: String| format!("<!doctype html><meta charset=utf-8><title>{title}</title><h1>{title}</h1>{body}");
    match opened {
        Ok(()) => {
            let code = html_escape(get("pre_auth_code").unwrap_or_default());
            let body = format!(
                "<p>This page stands in for the platform's authorisation page: a mini-program's admin \
                 would scan it and grant this third-party platform its permissions.</p>\
                 <p>Pre-auth code: <code>{code}</code></p>\
                 <p>Play the scan with <code>POST /sandbox/control/authorize</code> and \
                 <code>{{\"pre_auth_code\": \"{code}\", \"authorizer_appid\": \"wx…\"}}</code>: the sandbox \
                 pushes the <code>authorized</code> event and sends the browser back to the redirect URI.</p>"
            );
            HttpResponse::Ok().content_type("text/html; charset=utf-8").body(page("Sandbox authorisation", body))
        }
        Err(why) => HttpResponse::BadRequest()
            .content_type("text/html; charset=utf-8")
            .body(page("Sandbox authorisation failed", format!("<p>{}</p>", html_escape(&why)))),
    }
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(sb: &Sandbox, path: &str, method: &str, query: &str, body: Value) -> Value {
        let raw = if body.is_null() { String::new() } else { body.to_string() };
        match sb.open_call(path, method, query, raw.as_bytes()) {
            Reply::Json(v) => v,
            Reply::Jpeg => json!({"jpeg": true}),
        }
    }

    fn code(v: &Value) -> i64 {
        v["errcode"].as_i64().unwrap_or(0)
    }

    /// A ticket the sandbox pushed (to nowhere: no URL is configured).
    async fn pushed_ticket(sb: &Sandbox) -> String {
        let push = sb.push_verify_ticket().await.unwrap();
        assert_eq!((push.url.as_deref(), push.attempts.len()), (None, 0));
        let start = push.message.find("<ComponentVerifyTicket><![CDATA[").unwrap() + 32;
        push.message[start..].split("]]>").next().unwrap().to_owned()
    }

    fn token_body(sb: &Sandbox, ticket: &str) -> Value {
        let c = sb.component();
        json!({"component_appid": c.component_appid, "component_appsecret": c.component_secret, "component_verify_ticket": ticket})
    }

    fn component_token(sb: &Sandbox, ticket: &str) -> String {
        let v = call(sb, COMPONENT_TOKEN_PATH, "POST", "", token_body(sb, ticket));
        assert_eq!(v["expires_in"], 7200, "{v}");
        v["component_access_token"].as_str().unwrap().to_owned()
    }

    #[tokio::test]
    async fn the_component_token_needs_the_credentials_and_a_pushed_ticket() {
        let sb = Sandbox::new();
        let ticket = pushed_ticket(&sb).await;
        let c = sb.component();
        let with = |k: &str, v: &str| {
            let mut b = token_body(&sb, &ticket);
            b[k] = json!(v);
            call(&sb, COMPONENT_TOKEN_PATH, "POST", "", b)
        };
        assert_eq!(code(&with("component_appid", "wx_other")), 40013);
        assert_eq!(code(&with("component_appsecret", "wrong")), 40125);
        assert!(!with("component_appsecret", "wrong").to_string().contains(&c.component_secret));
        assert_eq!(code(&with("component_verify_ticket", "ticket@@@forged")), 61006);
        assert_eq!(code(&with("component_appid", "")), 41002);
        assert_eq!(code(&call(&sb, COMPONENT_TOKEN_PATH, "GET", "", Value::Null)), 43002);
        assert_eq!(code(&call(&sb, COMPONENT_TOKEN_PATH, "POST", "", Value::Null)), 44002);
        assert_eq!(code(&call(&sb, COMPONENT_TOKEN_PATH, "POST", "", json!([1]))), 47001);
        assert_eq!(sb.component_tokens_issued(), 0);
        component_token(&sb, &ticket);
        // A newer ticket does not void the older ones at once.
        let newer = pushed_ticket(&sb).await;
        component_token(&sb, &newer);
        component_token(&sb, &ticket);
        assert_eq!(sb.component_tokens_issued(), 3);
    }

    #[tokio::test]
    async fn pre_auth_codes_last_1800_s_and_component_calls_check_token_and_appid() {
        let sb = Sandbox::new();
        let token = component_token(&sb, &pushed_ticket(&sb).await);
        let appid = json!({"component_appid": SANDBOX_COMPONENT_APPID});
        let q = format!("component_access_token={token}");
        let v = call(&sb, PREAUTHCODE_PATH, "POST", &q, appid.clone());
        assert!(v["pre_auth_code"].as_str().unwrap().starts_with("preauthcode@@@"), "{v}");
        assert_eq!(v["expires_in"], 1800);
        assert_eq!(code(&call(&sb, PREAUTHCODE_PATH, "POST", "", appid.clone())), 41001);
        assert_eq!(code(&call(&sb, PREAUTHCODE_PATH, "POST", "component_access_token=forged", appid.clone())), 40001);
        assert_eq!(code(&call(&sb, PREAUTHCODE_PATH, "POST", &q, json!({"component_appid": "wx_other"}))), 40013);
        assert!(sb.expire_access_tokens() >= 1);
        assert_eq!(code(&call(&sb, PREAUTHCODE_PATH, "POST", &q, appid)), 42001);
        assert_eq!(code(&call(&sb, "/wxa/nothing_here", "POST", &q, json!({}))), 40066);
    }

    #[tokio::test]
    async fn an_auth_code_is_good_once_and_the_refresh_token_gives_authorizer_tokens() {
        let sb = Sandbox::new();
        let token = component_token(&sb, &pushed_ticket(&sb).await);
        let q = format!("component_access_token={token}");
        let pre = call(&sb, PREAUTHCODE_PATH, "POST", &q, json!({"component_appid": SANDBOX_COMPONENT_APPID}));
        let report = sb
            .authorize(AuthorizeRequest {
                pre_auth_code: pre["pre_auth_code"].as_str().map(str::to_owned),
                authorizer_appid: "wx_t1".into(),
                ..Default::default()
            })
            .await
            .unwrap();
        let query = json!({"component_appid": SANDBOX_COMPONENT_APPID, "authorization_code": report.auth_code});
        let grant = call(&sb, QUERY_AUTH_PATH, "POST", &q, query.clone());
        let info = &grant["authorization_info"];
        assert_eq!((info["authorizer_appid"].as_str(), info["expires_in"].as_i64()), (Some("wx_t1"), Some(7200)), "{grant}");
        assert_eq!(info["func_info"][1]["funcscope_category"]["id"], 18);
        assert_eq!(code(&call(&sb, QUERY_AUTH_PATH, "POST", &q, query)), 61009, "single use");
        let refresh = info["authorizer_refresh_token"].as_str().unwrap();

        let body =
            |r: &str| json!({"component_appid": SANDBOX_COMPONENT_APPID, "authorizer_appid": "wx_t1", "authorizer_refresh_token": r});
        let fresh = call(&sb, AUTHORIZER_TOKEN_PATH, "POST", &q, body(refresh));
        assert_eq!(fresh["authorizer_refresh_token"], refresh);
        assert_eq!(code(&call(&sb, AUTHORIZER_TOKEN_PATH, "POST", &q, body("refreshtoken@@@forged"))), 61023);
        assert_eq!(sb.authorizer_tokens_issued(), 2);
        let profile =
            call(&sb, AUTHORIZER_INFO_PATH, "POST", &q, json!({"component_appid": SANDBOX_COMPONENT_APPID, "authorizer_appid": "wx_t1"}));
        assert_eq!(profile["authorizer_info"]["user_name"], report.user_name);
        assert_eq!(profile["authorizer_info"]["nick_name"], "Sandbox wx_t1");

        let access = format!("access_token={}", fresh["authorizer_access_token"].as_str().unwrap());
        let commit = json!({"template_id": 1, "ext_json": "{}", "user_version": "1.0.0", "user_desc": "d"});
        assert_eq!(code(&call(&sb, COMMIT_PATH, "POST", &access, commit.clone())), 0);
        assert_eq!(code(&call(&sb, COMMIT_PATH, "GET", &access, Value::Null)), 43002);
        assert_eq!(code(&call(&sb, VERSION_INFO_PATH, "POST", &access, Value::Null)), 44002);
        assert_eq!(call(&sb, QRCODE_PATH, "GET", &access, Value::Null), json!({"jpeg": true}));
        // The component token is not an authorizer token, nor the other way round.
        assert_eq!(code(&call(&sb, COMMIT_PATH, "POST", &format!("access_token={token}"), commit.clone())), 40001);
        assert_eq!(code(&call(&sb, TEMPLATES_PATH, "GET", &access, Value::Null)), 40001);

        sb.unauthorize("wx_t1", false).await.unwrap();
        assert_eq!(code(&call(&sb, COMMIT_PATH, "POST", &access, commit)), 40001);
        assert_eq!(code(&call(&sb, AUTHORIZER_TOKEN_PATH, "POST", &q, body(refresh))), 61003);
    }

    #[tokio::test]
    async fn injected_errcodes_answer_any_component_path_first() {
        let sb = Sandbox::new();
        let ticket = pushed_ticket(&sb).await;
        sb.fail_next(COMPONENT_TOKEN_PATH, -1, 1).unwrap();
        sb.fail_next(COMMIT_PATH, 85013, 1).unwrap();
        assert_eq!(code(&call(&sb, COMPONENT_TOKEN_PATH, "POST", "", token_body(&sb, &ticket))), -1);
        assert_eq!(code(&call(&sb, COMMIT_PATH, "POST", "", json!({}))), 85013, "before the token check");
        assert_eq!(code(&call(&sb, COMMIT_PATH, "POST", "", json!({}))), 41001);
        component_token(&sb, &ticket);
        for (path, _) in ENDPOINTS {
            assert!(crate::INJECTABLE_PATHS.contains(&path), "{path}");
        }
        assert!(crate::INJECTABLE_PATHS.contains(&CI_UPLOAD_PATH));
    }

    #[test]
    fn configurations_are_checked_and_debug_hides_the_secrets() {
        let sb = Sandbox::new();
        let generated = sb.component();
        assert_eq!(crypt::decode_key(&generated.encoding_aes_key).map(|k| k.len()), Ok(32));
        let shown = format!("{generated:?}");
        assert!(
            !shown.contains(&generated.component_secret)
                && !shown.contains(&generated.token)
                && !shown.contains(&generated.encoding_aes_key)
        );
        let pushing = generated.clone().pushing_to("http://127.0.0.1:8080/");
        assert_eq!(pushing.events_url.as_deref(), Some("http://127.0.0.1:8080/api/v1/miniprogram/component/events"));
        assert_eq!(pushing.messages_url_for("wx1").as_deref(), Some("http://127.0.0.1:8080/api/v1/miniprogram/component/messages/wx1"));
        sb.set_component(pushing.clone()).unwrap();
        assert_eq!(sb.component(), pushing);
        for bad in [
            ComponentConfig { token: "t!".into(), ..generated.clone() },
            ComponentConfig { encoding_aes_key: "short".into(), ..generated.clone() },
            ComponentConfig { component_appid: String::new(), ..generated.clone() },
            ComponentConfig { messages_url: Some("http://a/messages".into()), ..generated.clone() },
            ComponentConfig { events_url: Some("/events".into()), ..generated.clone() },
        ] {
            assert!(sb.set_component(bad).is_err());
        }
    }

    #[tokio::test]
    async fn new_credentials_void_the_tickets_pushed_before() {
        let sb = Sandbox::new();
        let ticket = pushed_ticket(&sb).await;
        let mut config = ComponentConfig::generate();
        config.component_appid = "wx_atrium_component".into();
        sb.set_component(config.clone()).unwrap();
        let body = json!({"component_appid": config.component_appid, "component_appsecret": config.component_secret, "component_verify_ticket": ticket});
        assert_eq!(code(&call(&sb, COMPONENT_TOKEN_PATH, "POST", "", body)), 61006);
    }
}

/// A sandbox served on loopback for the HTTP tests, mounted at `/sandbox` as the server
/// mounts it, with `extra` routes beside it (a receiver playing Atrium).
#[cfg(test)]
pub(crate) mod serve {
    use super::*;
    use actix_web::{App, HttpServer};

    pub(crate) struct Served {
        /// `http://127.0.0.1:port`
        pub(crate) origin: String,
        handle: actix_web::dev::ServerHandle,
    }

    impl Served {
        pub(crate) async fn stop(self) {
            self.handle.stop(false).await;
        }
    }

    pub(crate) fn start(sb: &Sandbox, extra: impl Fn(&mut web::ServiceConfig) + Clone + Send + 'static) -> Served {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let sb = sb.clone();
        let server = HttpServer::new(move || {
            let (sb, extra) = (sb.clone(), extra.clone());
            App::new().service(web::scope("/sandbox").configure(move |c| sb.configure(c))).configure(extra)
        })
        .workers(1)
        .disable_signals()
        .listen(listener)
        .unwrap()
        .run();
        let handle = server.handle();
        tokio::spawn(server);
        Served { origin: format!("http://{addr}"), handle }
    }
}
