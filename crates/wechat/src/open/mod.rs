//! The third-party platform (component) over HTTP: [`WechatOpen`] implements the mini-program
//! domain's `MiniProgramPlatform` port.
//!
//! - The component token comes from the newest verify ticket (`api_component_token`) and is
//!   cached until shortly before it expires.
//! - Each mini-program's authorizer token comes from its refresh token
//!   (`api_authorizer_token`), cached the same way, one cache entry per appid. A call answered
//!   40001 or 42001 (token invalid or expired) drops the token, gets a new one and is retried
//!   exactly once.
//! - Time-outs, failed connections, HTTP 5xx and errcode -1 (busy) are retried a bounded
//!   number of times with a short back-off, but only for calls that are safe to repeat (reads,
//!   token fetches, commits, setting the domains or the privacy settings, which replace them
//!   whole); a call that acts (submit, speed-up, withdrawal, release, revert, add to the
//!   library) is retried only when the connection failed before anything was sent. Any other
//!   errcode is returned as the platform's refusal.
//! - Pushes are verified and decrypted by [`crypt`] and read by [`events`].
//!
//! Tokens, the component secret, the EncodingAESKey and refresh tokens never appear in an
//! error, a log line or `Debug` output: URLs (which carry tokens) are stripped from transport
//! errors, and the platform's messages are masked.

pub mod crypt;
pub mod events;
pub mod xml;

use crate::CallRecorder;
use crate::token::{error_chain, redact, refresh_after};
use async_trait::async_trait;
use atrium_miniprogram::{
    AuditQuota, AuditStatus, AuditSubmission, AuthorizationGrant, AuthorizerAccess, AuthorizerProfile, Category, CodeCommit, EventError,
    EventRequest, EventUrl, GrayPlan, MiniProgramPlatform, PlatformAudit, PlatformError, PlatformEvent, PlatformResult, PreAuthCode,
    PrivacyItem, PrivacyOwner, PrivacySettings, Secret, ServerDomains, Template, TemplateDraft, VersionInfo, VersionRecord,
};
use crypt::MessageCrypt;
use reqwest::Method;
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;
use url::Url;

/// Errcodes that mean "this access token is no longer good": invalid, expired.
const STALE_TOKEN: [i64; 2] = [40001, 42001];
const BUSY: i64 = -1;

/// The third-party platform's credentials and where the platform lives. `Debug` hides the
/// secret, the token and the key.
#[derive(Clone)]
pub struct WechatOpenConfig {
    /// `https://api.weixin.qq.com`, or a server speaking the same wire format.
    pub api_base: String,
    /// Where the authorisation page lives: `https://mp.weixin.qq.com`.
    pub page_base: String,
    pub component_appid: String,
    pub component_secret: String,
    /// The token pushes are signed with.
    pub token: String,
    /// The 43-character EncodingAESKey pushes are encrypted with.
    pub encoding_aes_key: String,
    /// The limit of one attempt, connection included.
    pub timeout: Duration,
    /// Further attempts after a time-out, a failed connection, a 5xx or errcode -1.
    pub retries: u32,
    /// The wait before retry `n` is `n × backoff`.
    pub backoff: Duration,
}

impl WechatOpenConfig {
    /// 10 s per attempt, 2 retries, 200 ms back-off.
    pub fn new(
        api_base: impl Into<String>,
        page_base: impl Into<String>,
        component_appid: impl Into<String>,
        component_secret: impl Into<String>,
        token: impl Into<String>,
        encoding_aes_key: impl Into<String>,
    ) -> Self {
        WechatOpenConfig {
            api_base: api_base.into(),
            page_base: page_base.into(),
            component_appid: component_appid.into(),
            component_secret: component_secret.into(),
            token: token.into(),
            encoding_aes_key: encoding_aes_key.into(),
            timeout: Duration::from_secs(10),
            retries: 2,
            backoff: Duration::from_millis(200),
        }
    }
}

impl fmt::Debug for WechatOpenConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WechatOpenConfig")
            .field("api_base", &self.api_base)
            .field("page_base", &self.page_base)
            .field("component_appid", &self.component_appid)
            .field("component_secret", &"***")
            .field("token", &"***")
            .field("encoding_aes_key", &"***")
            .field("timeout", &self.timeout)
            .field("retries", &self.retries)
            .finish()
    }
}

struct Cached {
    token: String,
    refresh_at: tokio::time::Instant,
}

/// A token cache entry, locked across a refresh so concurrent callers share one fetch.
type Slot = Arc<Mutex<Option<Cached>>>;

/// The third-party platform client, shared by every tenant: each call names the mini-program
/// it acts for.
pub struct WechatOpen {
    http: reqwest::Client,
    config: WechatOpenConfig,
    crypt: MessageCrypt,
    component: Slot,
    authorizers: std::sync::Mutex<HashMap<String, Slot>>,
    recorder: Option<Arc<dyn CallRecorder>>,
}

/// Whether a call may be sent again after a time-out or a 5xx.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Repeat {
    Safe,
    /// Only when the connection failed (nothing was sent).
    OnlyUnsent,
}

/// One request to the platform.
struct Call {
    method: Method,
    /// The path, also what the recorder and the log are told (never the query).
    path: &'static str,
    /// Query parameters besides the access token.
    query: Vec<(&'static str, String)>,
    body: Option<Value>,
    repeat: Repeat,
    /// Whether a non-JSON answer (an image) is a success.
    binary: bool,
}

impl Call {
    fn get(path: &'static str) -> Call {
        Call { method: Method::GET, path, query: Vec::new(), body: None, repeat: Repeat::Safe, binary: false }
    }

    fn post(path: &'static str, body: Value) -> Call {
        Call { method: Method::POST, path, query: Vec::new(), body: Some(body), repeat: Repeat::Safe, binary: false }
    }

    fn acting(mut self) -> Call {
        self.repeat = Repeat::OnlyUnsent;
        self
    }
}

/// A successful answer.
enum Answer {
    Json(Value),
    Binary(Vec<u8>),
}

impl Answer {
    fn json(self) -> PlatformResult<Value> {
        match self {
            Answer::Json(v) => Ok(v),
            Answer::Binary(_) => Err(PlatformError::Unavailable("the platform sent an unexpected non-JSON answer".into())),
        }
    }
}

/// What one attempt came to.
enum Attempt {
    Retry { why: String, code: &'static str, sent: bool },
    Done(PlatformResult<Answer>),
}

fn parse<T: for<'de> Deserialize<'de>>(value: Value, what: &str) -> PlatformResult<T> {
    serde_json::from_value(value).map_err(|_| PlatformError::Unavailable(format!("the platform sent an unreadable {what}")))
}

#[derive(Deserialize)]
struct ComponentToken {
    component_access_token: String,
    expires_in: u64,
}

#[derive(Deserialize)]
struct AuthorizerToken {
    authorizer_access_token: String,
    expires_in: u64,
    #[serde(default)]
    authorizer_refresh_token: Option<String>,
}

#[derive(Deserialize)]
struct PreAuthAnswer {
    pre_auth_code: String,
    #[serde(default)]
    expires_in: i64,
}

#[derive(Deserialize)]
struct FuncScope {
    funcscope_category: FuncCategory,
}

#[derive(Deserialize)]
struct FuncCategory {
    id: i64,
}

#[derive(Deserialize)]
struct AuthorizationInfo {
    authorizer_appid: String,
    #[serde(default)]
    authorizer_access_token: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
    authorizer_refresh_token: String,
    #[serde(default)]
    func_info: Vec<FuncScope>,
}

#[derive(Deserialize)]
struct QueryAuthAnswer {
    authorization_info: AuthorizationInfo,
}

#[derive(Deserialize, Default)]
struct AuthorizerInfo {
    #[serde(default)]
    nick_name: Option<String>,
    #[serde(default)]
    user_name: Option<String>,
}

#[derive(Deserialize)]
struct AuthorizerInfoAnswer {
    #[serde(default)]
    authorizer_info: AuthorizerInfo,
}

#[derive(Deserialize)]
struct DraftAnswer {
    #[serde(default)]
    draft_list: Vec<DraftItem>,
}

#[derive(Deserialize)]
struct DraftItem {
    draft_id: i64,
    #[serde(default)]
    user_version: String,
    #[serde(default)]
    user_desc: String,
    #[serde(default)]
    create_time: i64,
}

#[derive(Deserialize)]
struct TemplateAnswer {
    #[serde(default)]
    template_list: Vec<TemplateItem>,
}

#[derive(Deserialize)]
struct TemplateItem {
    template_id: i64,
    #[serde(default)]
    user_version: String,
    #[serde(default)]
    user_desc: String,
    #[serde(default)]
    create_time: i64,
}

#[derive(Deserialize)]
struct SubmitAnswer {
    auditid: i64,
}

#[derive(Deserialize)]
struct AuditAnswer {
    status: i64,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    screenshot: Option<String>,
}

#[derive(Deserialize)]
struct GrayAnswer {
    gray_release_plan: GrayItem,
}

#[derive(Deserialize)]
struct GrayItem {
    #[serde(default)]
    status: i64,
    #[serde(default)]
    gray_percentage: i64,
    #[serde(default)]
    create_timestamp: Option<i64>,
}

#[derive(Deserialize)]
struct HistoryAnswer {
    #[serde(default)]
    version_list: Vec<HistoryItem>,
}

#[derive(Deserialize)]
struct HistoryItem {
    #[serde(default)]
    app_version: Option<i64>,
    #[serde(default)]
    user_version: String,
    #[serde(default)]
    user_desc: String,
    #[serde(default)]
    commit_time: Option<i64>,
}

#[derive(Deserialize)]
struct VersionInfoAnswer {
    #[serde(default)]
    release_info: Option<ReleaseInfo>,
    #[serde(default)]
    exp_info: Option<ExpInfo>,
}

#[derive(Deserialize)]
struct ReleaseInfo {
    #[serde(default)]
    release_time: Option<i64>,
    #[serde(default)]
    release_version: String,
    #[serde(default)]
    release_desc: String,
}

#[derive(Deserialize)]
struct ExpInfo {
    #[serde(default)]
    exp_time: Option<i64>,
    #[serde(default)]
    exp_version: String,
    #[serde(default)]
    exp_desc: String,
}

/// `modify_domain` with `action: "get"`. A list the platform leaves out or sends as `null` is
/// empty.
#[derive(Deserialize)]
struct ServerDomainAnswer {
    #[serde(default)]
    requestdomain: Option<Vec<String>>,
    #[serde(default)]
    wsrequestdomain: Option<Vec<String>>,
    #[serde(default)]
    uploaddomain: Option<Vec<String>>,
    #[serde(default)]
    downloaddomain: Option<Vec<String>>,
}

/// `setwebviewdomain` with `action: "get"`.
#[derive(Deserialize)]
struct WebviewDomainAnswer {
    #[serde(default)]
    webviewdomain: Option<Vec<String>>,
}

/// `getprivacysetting`: besides these, the answer carries `privacy_list`, `update_time`,
/// `privacy_desc`, `code_exist`, `sdk_privacy_info_list`…, which are not read.
#[derive(Deserialize)]
struct PrivacyAnswer {
    #[serde(default)]
    owner_setting: Option<OwnerSetting>,
    #[serde(default)]
    setting_list: Option<Vec<PrivacyEntry>>,
}

/// The platform writes an unset contact as an empty string.
#[derive(Deserialize, Default)]
struct OwnerSetting {
    #[serde(default)]
    contact_email: Option<String>,
    #[serde(default)]
    contact_phone: Option<String>,
    #[serde(default)]
    contact_weixin: Option<String>,
    #[serde(default)]
    contact_qq: Option<String>,
    #[serde(default)]
    notice_method: Option<String>,
}

#[derive(Deserialize)]
struct PrivacyEntry {
    privacy_key: String,
    #[serde(default)]
    privacy_text: Option<String>,
}

#[derive(Deserialize)]
struct CategoryAnswer {
    #[serde(default)]
    category_list: Option<Vec<CategoryItem>>,
}

/// One category; a third level (`third_class`, `third_id`), when present, is not read.
#[derive(Deserialize)]
struct CategoryItem {
    first_id: i64,
    #[serde(default)]
    first_class: String,
    second_id: i64,
    #[serde(default)]
    second_class: String,
}

#[derive(Deserialize)]
struct QuotaAnswer {
    rest: i64,
    limit: i64,
    #[serde(default)]
    speedup_rest: i64,
    #[serde(default)]
    speedup_limit: i64,
}

/// A text the platform may send empty for "not set".
fn non_empty(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.trim().is_empty())
}

/// The body of `setprivacysetting`: unset (or empty) contacts are left out.
fn privacy_body(settings: &PrivacySettings) -> Value {
    let owner = &settings.owner_setting;
    let mut owner_setting = json!({"notice_method": owner.notice_method});
    for (key, value) in [
        ("contact_email", &owner.contact_email),
        ("contact_phone", &owner.contact_phone),
        ("contact_weixin", &owner.contact_weixin),
        ("contact_qq", &owner.contact_qq),
    ] {
        if let Some(v) = value.as_deref().filter(|v| !v.trim().is_empty()) {
            owner_setting[key] = json!(v);
        }
    }
    let setting_list: Vec<Value> =
        settings.setting_list.iter().map(|i| json!({"privacy_key": i.privacy_key, "privacy_text": i.privacy_text})).collect();
    json!({"privacy_ver": 2, "owner_setting": owner_setting, "setting_list": setting_list})
}

/// The screenshot list of an audit answer: media ids joined by `|`.
fn screenshots(raw: Option<String>) -> Vec<String> {
    raw.map(|s| s.split('|').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect()).unwrap_or_default()
}

impl WechatOpen {
    /// Fails on an EncodingAESKey that is not 43 base64 characters, or when the HTTP client
    /// cannot be built.
    pub fn new(config: WechatOpenConfig) -> anyhow::Result<Self> {
        let crypt = MessageCrypt::new(config.token.clone(), &config.encoding_aes_key, config.component_appid.clone())?;
        let http = crate::http::client_builder()?.timeout(config.timeout).connect_timeout(config.timeout).build()?;
        Ok(WechatOpen {
            http,
            config,
            crypt,
            component: Arc::new(Mutex::new(None)),
            authorizers: std::sync::Mutex::new(HashMap::new()),
            recorder: None,
        })
    }

    /// Reports every call to `recorder`: the path, then `0`, the errcode, `http_5xx` or
    /// `transport`.
    pub fn with_recorder(mut self, recorder: Arc<dyn CallRecorder>) -> Self {
        self.recorder = Some(recorder);
        self
    }

    /// The push encryption of this component, for replies and for stand-ins of the platform.
    pub fn crypt(&self) -> &MessageCrypt {
        &self.crypt
    }

    fn record(&self, path: &'static str, code: &str, started: Instant) {
        if let Some(r) = &self.recorder {
            r.record(path, crate::code_label(code), started.elapsed());
        }
    }

    fn base(&self) -> &str {
        self.config.api_base.trim_end_matches('/')
    }

    fn mask(&self, message: String, token: &str) -> String {
        redact(message, &[token, self.config.component_secret.as_str()])
    }

    /// Sends `call` with `token` (`access_token` or `component_access_token` and its value;
    /// none for the component token's own fetch), retrying what may be retried.
    async fn send(&self, call: &Call, token: Option<(&str, &str)>) -> PlatformResult<Answer> {
        let mut attempt = 0;
        loop {
            let started = Instant::now();
            match self.attempt(call, token).await {
                Attempt::Done(r) => {
                    let code = match &r {
                        Ok(_) => "0".to_owned(),
                        Err(PlatformError::Refused { errcode, .. }) => errcode.to_string(),
                        Err(_) => "transport".to_owned(),
                    };
                    self.record(call.path, &code, started);
                    return r;
                }
                Attempt::Retry { why, code, sent } => {
                    self.record(call.path, code, started);
                    let may = call.repeat == Repeat::Safe || !sent;
                    if !may || attempt >= self.config.retries {
                        log::warn!("mini-program platform {}: {why} (after {} attempts)", call.path, attempt + 1);
                        return Err(PlatformError::Unavailable(format!("{why} (after {} attempts)", attempt + 1)));
                    }
                    attempt += 1;
                    log::info!("mini-program platform {}: {why}; retry {attempt} of {}", call.path, self.config.retries);
                    tokio::time::sleep(self.config.backoff * attempt).await;
                }
            }
        }
    }

    async fn attempt(&self, call: &Call, token: Option<(&str, &str)>) -> Attempt {
        let url = format!("{}{}", self.base(), call.path);
        let mut request = self.http.request(call.method.clone(), &url);
        if let Some(pair) = token {
            request = request.query(&[pair]);
        }
        let token = token.map_or("", |(_, t)| t);
        if !call.query.is_empty() {
            request = request.query(&call.query);
        }
        if let Some(body) = &call.body {
            request = request.json(body);
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) if e.is_connect() => return Attempt::Retry { why: "could not connect".into(), code: "transport", sent: false },
            Err(e) if e.is_timeout() => return Attempt::Retry { why: "timed out".into(), code: "transport", sent: true },
            Err(e) => {
                let why = self.mask(error_chain(&e.without_url()), token);
                return Attempt::Done(Err(PlatformError::Unavailable(format!("the request failed: {why}"))));
            }
        };
        let status = response.status();
        if status.is_server_error() {
            return Attempt::Retry { why: format!("HTTP {}", status.as_u16()), code: "http_5xx", sent: true };
        }
        // 408 (a kept-alive connection closed for idleness as the pool reused it) and 429: the
        // request was not taken, so even an acting call may be sent again.
        if status.as_u16() == 408 || status.as_u16() == 429 {
            let code = if status.as_u16() == 408 { "http_408" } else { "http_429" };
            return Attempt::Retry { why: format!("HTTP {}", status.as_u16()), code, sent: false };
        }
        if !status.is_success() {
            return Attempt::Done(Err(PlatformError::Unavailable(format!("the platform answered HTTP {}", status.as_u16()))));
        }
        let is_json = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_none_or(|v| v.contains("json") || v.starts_with("text/"));
        let bytes = match response.bytes().await {
            Ok(b) => b,
            Err(e) if e.is_timeout() => return Attempt::Retry { why: "the answer timed out".into(), code: "transport", sent: true },
            Err(_) => return Attempt::Done(Err(PlatformError::Unavailable("the platform's answer was cut off".into()))),
        };
        if call.binary && !is_json {
            return Attempt::Done(Ok(Answer::Binary(bytes.to_vec())));
        }
        let Ok(body) = serde_json::from_slice::<Value>(&bytes) else {
            return Attempt::Done(Err(PlatformError::Unavailable("the platform sent an unreadable answer".into())));
        };
        match body.get("errcode").and_then(Value::as_i64).unwrap_or(0) {
            0 => Attempt::Done(Ok(Answer::Json(body))),
            BUSY if call.repeat == Repeat::Safe => {
                Attempt::Retry { why: "the platform is busy (errcode -1)".into(), code: "-1", sent: true }
            }
            errcode => {
                let errmsg = self.mask(body.get("errmsg").and_then(Value::as_str).unwrap_or_default().to_owned(), token);
                Attempt::Done(Err(PlatformError::Refused { errcode, errmsg }))
            }
        }
    }

    // --- tokens --------------------------------------------------------------------------

    /// The component token: cached, or fetched with `ticket`.
    async fn component_token(&self, ticket: &Secret) -> PlatformResult<String> {
        let mut cached = self.component.lock().await;
        if let Some(c) = cached.as_ref().filter(|c| tokio::time::Instant::now() < c.refresh_at) {
            return Ok(c.token.clone());
        }
        let body = json!({
            "component_appid": self.config.component_appid,
            "component_appsecret": self.config.component_secret,
            "component_verify_ticket": ticket.expose(),
        });
        let call = Call::post("/cgi-bin/component/api_component_token", body);
        // This call carries its credentials in the body; no token in the query.
        let answer: ComponentToken = parse(self.send(&call, None).await?.json()?, "component token")?;
        log::debug!("fetched a component token (expires in {} s)", answer.expires_in);
        *cached = Some(Cached {
            token: answer.component_access_token.clone(),
            refresh_at: tokio::time::Instant::now() + refresh_after(answer.expires_in),
        });
        Ok(answer.component_access_token)
    }

    async fn drop_component_token(&self, token: &str) {
        let mut cached = self.component.lock().await;
        if cached.as_ref().is_some_and(|c| c.token == token) {
            *cached = None;
        }
    }

    /// A call of the component itself, retried once with a new component token when the
    /// platform calls it stale.
    async fn component_call(&self, ticket: &Secret, call: Call) -> PlatformResult<Answer> {
        let mut retried = false;
        loop {
            let token = self.component_token(ticket).await?;
            match self.send(&call, Some(("component_access_token", &token))).await {
                Err(PlatformError::Refused { errcode, .. }) if !retried && STALE_TOKEN.contains(&errcode) => {
                    log::info!("{}: component token refused (errcode {errcode}); fetching a new one and retrying once", call.path);
                    self.drop_component_token(&token).await;
                    retried = true;
                }
                other => return other,
            }
        }
    }

    fn slot(&self, appid: &str) -> Slot {
        let mut slots = self.authorizers.lock().unwrap_or_else(|p| p.into_inner());
        slots.entry(appid.to_owned()).or_default().clone()
    }

    /// The mini-program's authorizer token: cached, or fetched with its refresh token.
    async fn authorizer_token(&self, access: &AuthorizerAccess) -> PlatformResult<String> {
        let slot = self.slot(&access.authorizer_appid);
        let mut cached = slot.lock().await;
        if let Some(c) = cached.as_ref().filter(|c| tokio::time::Instant::now() < c.refresh_at) {
            return Ok(c.token.clone());
        }
        let body = json!({
            "component_appid": self.config.component_appid,
            "authorizer_appid": access.authorizer_appid,
            "authorizer_refresh_token": access.refresh_token.expose(),
        });
        let call = Call::post("/cgi-bin/component/api_authorizer_token", body);
        let answer: AuthorizerToken = parse(self.component_call(&access.verify_ticket, call).await?.json()?, "authorizer token")?;
        if answer.authorizer_refresh_token.as_deref().is_some_and(|r| !r.is_empty() && r != access.refresh_token.expose()) {
            log::warn!(
                "the platform handed {} a new refresh token; the stored one keeps working until it is replaced",
                access.authorizer_appid
            );
        }
        *cached = Some(Cached {
            token: answer.authorizer_access_token.clone(),
            refresh_at: tokio::time::Instant::now() + refresh_after(answer.expires_in),
        });
        Ok(answer.authorizer_access_token)
    }

    async fn drop_authorizer_token(&self, appid: &str, token: &str) {
        let slot = self.slot(appid);
        let mut cached = slot.lock().await;
        if cached.as_ref().is_some_and(|c| c.token == token) {
            *cached = None;
        }
    }

    /// A call for one mini-program, retried once with a new authorizer token when the
    /// platform calls the token stale (40001, 42001).
    async fn authorizer_call(&self, access: &AuthorizerAccess, call: Call) -> PlatformResult<Answer> {
        let mut retried = false;
        loop {
            let token = self.authorizer_token(access).await?;
            match self.send(&call, Some(("access_token", &token))).await {
                Err(PlatformError::Refused { errcode, .. }) if !retried && STALE_TOKEN.contains(&errcode) => {
                    log::info!(
                        "{} for {}: authorizer token refused (errcode {errcode}); refreshing it and retrying once",
                        call.path,
                        access.authorizer_appid
                    );
                    self.drop_authorizer_token(&access.authorizer_appid, &token).await;
                    retried = true;
                }
                other => return other,
            }
        }
    }

    async fn authorizer_json(&self, access: &AuthorizerAccess, call: Call) -> PlatformResult<Value> {
        self.authorizer_call(access, call).await?.json()
    }
}

#[async_trait]
impl MiniProgramPlatform for WechatOpen {
    async fn pre_auth_code(&self, verify_ticket: &Secret) -> PlatformResult<PreAuthCode> {
        let call = Call::post("/cgi-bin/component/api_create_preauthcode", json!({"component_appid": self.config.component_appid}));
        let answer: PreAuthAnswer = parse(self.component_call(verify_ticket, call).await?.json()?, "pre-auth code")?;
        Ok(PreAuthCode { code: answer.pre_auth_code, expires_in_secs: if answer.expires_in > 0 { answer.expires_in } else { 1800 } })
    }

    fn authorize_url(&self, pre_auth_code: &str, redirect_uri: &str) -> String {
        let base = format!("{}/cgi-bin/componentloginpage", self.config.page_base.trim_end_matches('/'));
        let Ok(mut url) = Url::parse(&base) else { return base };
        url.query_pairs_mut()
            .append_pair("component_appid", &self.config.component_appid)
            .append_pair("pre_auth_code", pre_auth_code)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("auth_type", "2");
        url.to_string()
    }

    async fn query_auth(&self, verify_ticket: &Secret, authorization_code: &Secret) -> PlatformResult<AuthorizationGrant> {
        let body = json!({"component_appid": self.config.component_appid, "authorization_code": authorization_code.expose()});
        let call = Call::post("/cgi-bin/component/api_query_auth", body).acting();
        let answer: QueryAuthAnswer = parse(self.component_call(verify_ticket, call).await?.json()?, "authorisation")?;
        let info = answer.authorization_info;
        // The answer brings a first authorizer token: keep it.
        if let (Some(token), Some(expires_in)) = (info.authorizer_access_token.filter(|t| !t.is_empty()), info.expires_in) {
            let slot = self.slot(&info.authorizer_appid);
            *slot.lock().await = Some(Cached { token, refresh_at: tokio::time::Instant::now() + refresh_after(expires_in) });
        }
        Ok(AuthorizationGrant {
            authorizer_appid: info.authorizer_appid,
            refresh_token: Secret::new(info.authorizer_refresh_token),
            func_info: info.func_info.into_iter().map(|f| f.funcscope_category.id).collect(),
        })
    }

    async fn authorizer_profile(&self, verify_ticket: &Secret, authorizer_appid: &str) -> PlatformResult<AuthorizerProfile> {
        let body = json!({"component_appid": self.config.component_appid, "authorizer_appid": authorizer_appid});
        let call = Call::post("/cgi-bin/component/api_get_authorizer_info", body);
        let answer: AuthorizerInfoAnswer = parse(self.component_call(verify_ticket, call).await?.json()?, "authorizer profile")?;
        Ok(AuthorizerProfile { nickname: answer.authorizer_info.nick_name, user_name: answer.authorizer_info.user_name })
    }

    async fn template_drafts(&self, verify_ticket: &Secret) -> PlatformResult<Vec<TemplateDraft>> {
        let answer = self.component_call_as_access(verify_ticket, Call::get("/wxa/gettemplatedraftlist")).await?;
        let answer: DraftAnswer = parse(answer, "draft list")?;
        Ok(answer
            .draft_list
            .into_iter()
            .map(|d| TemplateDraft {
                draft_id: d.draft_id,
                user_version: d.user_version,
                user_desc: d.user_desc,
                create_time: d.create_time,
            })
            .collect())
    }

    async fn add_to_template(&self, verify_ticket: &Secret, draft_id: i64) -> PlatformResult<()> {
        let call = Call::post("/wxa/addtotemplate", json!({"draft_id": draft_id, "template_type": 0})).acting();
        self.component_call_as_access(verify_ticket, call).await.map(|_| ())
    }

    async fn templates(&self, verify_ticket: &Secret) -> PlatformResult<Vec<Template>> {
        let mut call = Call::get("/wxa/gettemplatelist");
        call.query.push(("template_type", "0".into()));
        let answer: TemplateAnswer = parse(self.component_call_as_access(verify_ticket, call).await?, "template list")?;
        Ok(answer
            .template_list
            .into_iter()
            .map(|t| Template {
                template_id: t.template_id,
                user_version: t.user_version,
                user_desc: t.user_desc,
                create_time: t.create_time,
            })
            .collect())
    }

    async fn commit(&self, access: &AuthorizerAccess, commit: &CodeCommit) -> PlatformResult<()> {
        let body = json!({
            "template_id": commit.template_id,
            "ext_json": commit.ext_json,
            "user_version": commit.user_version,
            "user_desc": commit.user_desc,
        });
        self.authorizer_json(access, Call::post("/wxa/commit", body)).await.map(|_| ())
    }

    async fn submit_audit(&self, access: &AuthorizerAccess, submission: &AuditSubmission) -> PlatformResult<i64> {
        let mut body = json!({});
        if let Some(d) = &submission.version_desc {
            body["version_desc"] = json!(d);
        }
        if let Some(items) = &submission.item_list {
            body["item_list"] = json!(items);
        }
        if let Some(p) = submission.privacy_api_not_use {
            body["privacy_api_not_use"] = json!(p);
        }
        let answer: SubmitAnswer = parse(self.authorizer_json(access, Call::post("/wxa/submit_audit", body).acting()).await?, "audit id")?;
        Ok(answer.auditid)
    }

    async fn audit_status(&self, access: &AuthorizerAccess, auditid: i64) -> PlatformResult<PlatformAudit> {
        let answer: AuditAnswer =
            parse(self.authorizer_json(access, Call::post("/wxa/get_auditstatus", json!({"auditid": auditid}))).await?, "audit status")?;
        let status = AuditStatus::from_platform_code(answer.status)
            .ok_or_else(|| PlatformError::Unavailable(format!("the platform reported an unknown audit status {}", answer.status)))?;
        Ok(PlatformAudit { status, reason: answer.reason.filter(|r| !r.is_empty()), screenshots: screenshots(answer.screenshot), at: None })
    }

    async fn release(&self, access: &AuthorizerAccess) -> PlatformResult<()> {
        self.authorizer_json(access, Call::post("/wxa/release", json!({})).acting()).await.map(|_| ())
    }

    async fn gray_release(&self, access: &AuthorizerAccess, percentage: u8) -> PlatformResult<()> {
        let body = json!({"gray_percentage": percentage, "support_debuger_first": false, "support_experiencer_first": false});
        self.authorizer_json(access, Call::post("/wxa/grayrelease", body).acting()).await.map(|_| ())
    }

    async fn gray_plan(&self, access: &AuthorizerAccess) -> PlatformResult<GrayPlan> {
        let answer: GrayAnswer = parse(self.authorizer_json(access, Call::get("/wxa/getgrayreleaseplan")).await?, "gray plan")?;
        let plan = answer.gray_release_plan;
        Ok(GrayPlan {
            status: plan.status,
            gray_percentage: u8::try_from(plan.gray_percentage.clamp(0, 100)).unwrap_or(0),
            create_timestamp: plan.create_timestamp,
        })
    }

    async fn revert_gray_release(&self, access: &AuthorizerAccess) -> PlatformResult<()> {
        self.authorizer_json(access, Call::get("/wxa/revertgrayrelease").acting()).await.map(|_| ())
    }

    async fn revert_release(&self, access: &AuthorizerAccess, app_version: Option<i64>) -> PlatformResult<()> {
        let mut call = Call::get("/wxa/revertcoderelease").acting();
        if let Some(v) = app_version {
            call.query.push(("app_version", v.to_string()));
        }
        self.authorizer_json(access, call).await.map(|_| ())
    }

    async fn history_versions(&self, access: &AuthorizerAccess) -> PlatformResult<Vec<VersionRecord>> {
        let mut call = Call::get("/wxa/revertcoderelease");
        call.query.push(("action", "get_history_version".into()));
        let answer: HistoryAnswer = parse(self.authorizer_json(access, call).await?, "version history")?;
        Ok(answer
            .version_list
            .into_iter()
            .map(|v| VersionRecord {
                app_version: v.app_version,
                user_version: v.user_version,
                user_desc: v.user_desc,
                time: v.commit_time,
            })
            .collect())
    }

    async fn version_info(&self, access: &AuthorizerAccess) -> PlatformResult<VersionInfo> {
        // The empty object is required: without a body the platform refuses the call.
        let answer: VersionInfoAnswer =
            parse(self.authorizer_json(access, Call::post("/wxa/getversioninfo", json!({}))).await?, "version info")?;
        Ok(VersionInfo {
            release: answer.release_info.filter(|r| !r.release_version.is_empty()).map(|r| VersionRecord {
                app_version: None,
                user_version: r.release_version,
                user_desc: r.release_desc,
                time: r.release_time,
            }),
            experience: answer.exp_info.filter(|e| !e.exp_version.is_empty()).map(|e| VersionRecord {
                app_version: None,
                user_version: e.exp_version,
                user_desc: e.exp_desc,
                time: e.exp_time,
            }),
        })
    }

    async fn experience_qr(&self, access: &AuthorizerAccess, path: Option<String>) -> PlatformResult<Vec<u8>> {
        let mut call = Call::get("/wxa/get_qrcode");
        call.binary = true;
        if let Some(p) = path {
            call.query.push(("path", p));
        }
        match self.authorizer_call(access, call).await? {
            Answer::Binary(image) if !image.is_empty() => Ok(image),
            Answer::Binary(_) => Err(PlatformError::Unavailable("the platform sent an empty QR code".into())),
            Answer::Json(_) => Err(PlatformError::Unavailable("the platform sent JSON without an errcode instead of the QR code".into())),
        }
    }

    async fn domains(&self, access: &AuthorizerAccess) -> PlatformResult<ServerDomains> {
        let server: ServerDomainAnswer =
            parse(self.authorizer_json(access, Call::post("/wxa/modify_domain", json!({"action": "get"}))).await?, "domain list")?;
        let webview: WebviewDomainAnswer = parse(
            self.authorizer_json(access, Call::post("/wxa/setwebviewdomain", json!({"action": "get"}))).await?,
            "web-view domain list",
        )?;
        Ok(ServerDomains {
            requestdomain: server.requestdomain.unwrap_or_default(),
            wsrequestdomain: server.wsrequestdomain.unwrap_or_default(),
            uploaddomain: server.uploaddomain.unwrap_or_default(),
            downloaddomain: server.downloaddomain.unwrap_or_default(),
            webviewdomain: webview.webviewdomain.unwrap_or_default(),
        })
    }

    async fn set_domains(&self, access: &AuthorizerAccess, domains: &ServerDomains) -> PlatformResult<()> {
        // Both calls replace a whole list, so sending one again is harmless.
        let server = json!({
            "action": "set",
            "requestdomain": domains.requestdomain,
            "wsrequestdomain": domains.wsrequestdomain,
            "uploaddomain": domains.uploaddomain,
            "downloaddomain": domains.downloaddomain,
        });
        self.authorizer_json(access, Call::post("/wxa/modify_domain", server)).await?;
        let webview = json!({"action": "set", "webviewdomain": domains.webviewdomain});
        self.authorizer_json(access, Call::post("/wxa/setwebviewdomain", webview)).await.map(|_| ())
    }

    async fn privacy(&self, access: &AuthorizerAccess) -> PlatformResult<PrivacySettings> {
        // A mini-program's call despite its path: it takes the authorizer token.
        let call = Call::post("/cgi-bin/component/getprivacysetting", json!({"privacy_ver": 2}));
        let answer: PrivacyAnswer = parse(self.authorizer_json(access, call).await?, "privacy settings")?;
        let owner = answer.owner_setting.unwrap_or_default();
        Ok(PrivacySettings {
            owner_setting: PrivacyOwner {
                contact_email: non_empty(owner.contact_email),
                contact_phone: non_empty(owner.contact_phone),
                contact_weixin: non_empty(owner.contact_weixin),
                contact_qq: non_empty(owner.contact_qq),
                notice_method: owner.notice_method.unwrap_or_default(),
            },
            setting_list: answer
                .setting_list
                .unwrap_or_default()
                .into_iter()
                .filter(|i| !i.privacy_key.is_empty())
                .map(|i| PrivacyItem { privacy_key: i.privacy_key, privacy_text: i.privacy_text.unwrap_or_default() })
                .collect(),
        })
    }

    async fn set_privacy(&self, access: &AuthorizerAccess, settings: &PrivacySettings) -> PlatformResult<()> {
        let call = Call::post("/cgi-bin/component/setprivacysetting", privacy_body(settings));
        self.authorizer_json(access, call).await.map(|_| ())
    }

    async fn categories(&self, access: &AuthorizerAccess) -> PlatformResult<Vec<Category>> {
        let answer: CategoryAnswer = parse(self.authorizer_json(access, Call::get("/wxa/get_category")).await?, "category list")?;
        Ok(answer
            .category_list
            .unwrap_or_default()
            .into_iter()
            .map(|c| Category { first_id: c.first_id, first_class: c.first_class, second_id: c.second_id, second_class: c.second_class })
            .collect())
    }

    async fn audit_quota(&self, access: &AuthorizerAccess) -> PlatformResult<AuditQuota> {
        let answer: QuotaAnswer = parse(self.authorizer_json(access, Call::get("/wxa/queryquota")).await?, "audit quota")?;
        Ok(AuditQuota { rest: answer.rest, limit: answer.limit, speedup_rest: answer.speedup_rest, speedup_limit: answer.speedup_limit })
    }

    async fn speedup_audit(&self, access: &AuthorizerAccess, auditid: i64) -> PlatformResult<()> {
        // Spends a speed-up: not sent again once it may have arrived.
        let call = Call::post("/wxa/speedupaudit", json!({"auditid": auditid})).acting();
        self.authorizer_json(access, call).await.map(|_| ())
    }

    async fn undo_audit(&self, access: &AuthorizerAccess) -> PlatformResult<()> {
        // Spends one of the few withdrawals allowed (87013 when none is left).
        self.authorizer_json(access, Call::get("/wxa/undocodeaudit").acting()).await.map(|_| ())
    }

    fn open_event(&self, url: EventUrl, request: &EventRequest) -> Result<PlatformEvent, EventError> {
        events::open_event(&self.crypt, url, request)
    }
}

impl WechatOpen {
    /// Template-library calls take the component token as `access_token`.
    async fn component_call_as_access(&self, ticket: &Secret, call: Call) -> PlatformResult<Value> {
        let mut retried = false;
        loop {
            let token = self.component_token(ticket).await?;
            match self.send(&call, Some(("access_token", &token))).await {
                Err(PlatformError::Refused { errcode, .. }) if !retried && STALE_TOKEN.contains(&errcode) => {
                    self.drop_component_token(&token).await;
                    retried = true;
                }
                other => return other?.json(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client() -> WechatOpen {
        let config = WechatOpenConfig::new(
            "http://127.0.0.1:1",
            "https://mp.example/",
            "wx_component",
            "component-secret",
            "tok",
            "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG",
        );
        WechatOpen::new(config).unwrap()
    }

    #[test]
    fn the_authorisation_page_carries_the_code_and_the_encoded_redirect() {
        let url = client().authorize_url("pre-1", "https://a.example/api/v1/miniprogram/authorization/callback?state=s1");
        assert_eq!(
            url,
            "https://mp.example/cgi-bin/componentloginpage?component_appid=wx_component&pre_auth_code=pre-1\
             &redirect_uri=https%3A%2F%2Fa.example%2Fapi%2Fv1%2Fminiprogram%2Fauthorization%2Fcallback%3Fstate%3Ds1&auth_type=2"
        );
    }

    #[test]
    fn the_config_debug_hides_every_secret() {
        let config = WechatOpenConfig::new("a", "b", "wx_c", "sec-ret", "tok-en", "k".repeat(43));
        let shown = format!("{config:?}");
        assert!(!shown.contains("sec-ret") && !shown.contains("tok-en") && !shown.contains(&"k".repeat(43)), "{shown}");
    }

    #[test]
    fn a_bad_encoding_aes_key_is_refused_at_construction() {
        let config = WechatOpenConfig::new("a", "b", "wx_c", "s", "t", "too-short");
        assert!(WechatOpen::new(config).is_err());
    }

    #[test]
    fn privacy_settings_leave_unset_contacts_out() {
        let settings = PrivacySettings {
            owner_setting: PrivacyOwner {
                contact_email: Some("dpo@example.com".into()),
                contact_phone: Some(" ".into()),
                contact_weixin: None,
                contact_qq: None,
                notice_method: "弹窗".into(),
            },
            setting_list: vec![PrivacyItem { privacy_key: "UserInfo".into(), privacy_text: "登录".into() }],
        };
        assert_eq!(
            privacy_body(&settings),
            json!({
                "privacy_ver": 2,
                "owner_setting": {"contact_email": "dpo@example.com", "notice_method": "弹窗"},
                "setting_list": [{"privacy_key": "UserInfo", "privacy_text": "登录"}],
            })
        );
        assert_eq!(non_empty(Some(String::new())), None);
    }

    #[test]
    fn screenshot_lists_are_split_on_bars() {
        assert_eq!(screenshots(Some("a|b||c ".into())), ["a", "b", "c"]);
        assert!(screenshots(None).is_empty());
    }
}
