//! The mini-program side of the platform: access tokens (`/cgi-bin/token`) and subscribe
//! messages (`/cgi-bin/message/subscribe/send`), plus the control calls tests use to steer them.

use actix_web::{HttpResponse, web};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use crate::SANDBOX_PAYSLIP_TEMPLATE_ID;
use crate::open;
use crate::platform::{Sandbox, bad_control, errcode_body, random_hex};

/// Platform paths (under `{prefix}/api`) whose answers [`Sandbox::fail_next`] can replace
/// with an error: the mini-program's, the third-party platform's and the package upload.
pub const INJECTABLE_PATHS: [&str; 29] = [
    TOKEN_PATH,
    SEND_PATH,
    open::COMPONENT_TOKEN_PATH,
    open::PREAUTHCODE_PATH,
    open::QUERY_AUTH_PATH,
    open::AUTHORIZER_TOKEN_PATH,
    open::AUTHORIZER_INFO_PATH,
    open::DRAFTS_PATH,
    open::ADD_TEMPLATE_PATH,
    open::TEMPLATES_PATH,
    open::COMMIT_PATH,
    open::SUBMIT_PATH,
    open::AUDIT_STATUS_PATH,
    open::RELEASE_PATH,
    open::GRAY_PATH,
    open::GRAY_PLAN_PATH,
    open::REVERT_GRAY_PATH,
    open::REVERT_PATH,
    open::VERSION_INFO_PATH,
    open::QRCODE_PATH,
    open::CI_UPLOAD_PATH,
    open::MODIFY_DOMAIN_PATH,
    open::WEBVIEW_DOMAIN_PATH,
    open::GET_PRIVACY_PATH,
    open::SET_PRIVACY_PATH,
    open::CATEGORY_PATH,
    open::QUOTA_PATH,
    open::SPEEDUP_PATH,
    open::UNDO_PATH,
];
const TOKEN_PATH: &str = "/cgi-bin/token";
const SEND_PATH: &str = "/cgi-bin/message/subscribe/send";

const DEFAULT_EXPIRES_IN: u64 = 7200;
const KEEP_MESSAGES: usize = 10_000;
const KEEP_SUBSCRIPTIONS: usize = 10_000;
const KEEP_FAILURES: usize = 100;

/// One `{"value": "..."}` entry of a subscribe message's `data`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TemplateValue {
    pub value: String,
}

/// A subscribe message the sandbox accepted, as it came in.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SubscribeRecord {
    /// The `msgid` the sandbox answered with.
    pub msgid: u64,
    pub touser: String,
    pub template_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<String>,
    /// Template keys (`thing1`, `amount2`, …) with their values.
    pub data: BTreeMap<String, TemplateValue>,
    /// `formal`, `trial` or `developer` (`formal` when the request left it out).
    pub miniprogram_state: String,
    /// `zh_CN` when the request left it out.
    pub lang: String,
    pub received_at: DateTime<Utc>,
}

impl SubscribeRecord {
    /// The value sent for template key `key`.
    pub fn value(&self, key: &str) -> Option<&str> {
        self.data.get(key).map(|v| v.value.as_str())
    }
}

struct IssuedToken {
    appid: String,
    /// Issue order, to keep only an app's newest tokens.
    seq: u64,
    expires_at: Instant,
}

struct InjectedFailure {
    path: String,
    errcode: i64,
    remaining: u32,
}

/// The mini-program platform's state, inside the sandbox's one lock.
#[derive(Default)]
pub(crate) struct MpState {
    tokens: HashMap<String, IssuedToken>,
    tokens_issued: u64,
    /// `expires_in` of new tokens; `None` is the platform's 7200 s.
    expires_in: Option<u64>,
    /// openid → subscriptions left; an absent openid is unlimited.
    subscriptions: HashMap<String, u32>,
    failures: Vec<InjectedFailure>,
    messages: Vec<SubscribeRecord>,
    next_msgid: u64,
}

impl MpState {
    /// Takes one injected failure for `path`, if any is pending.
    pub(crate) fn injected(&mut self, path: &str) -> Option<i64> {
        let i = self.failures.iter().position(|f| f.path == path)?;
        let failure = &mut self.failures[i];
        let errcode = failure.errcode;
        failure.remaining -= 1;
        if failure.remaining == 0 {
            self.failures.remove(i);
        }
        Some(errcode)
    }
}

fn errmsg_for(errcode: i64) -> &'static str {
    match errcode {
        -1 => "system error",
        40001 => "invalid credential, access_token is invalid or not latest",
        40014 => "invalid access_token",
        42001 => "access_token expired",
        43101 => "user refuse to accept the msg",
        45009 => "reach max api daily quota limit",
        other => open::errmsg(other),
    }
}

impl Sandbox {
    /// Subscriptions `openid` has left: 0 makes the next send to it fail with 43101; `None`
    /// (the default for every openid) is unlimited. Each accepted send uses one.
    pub fn set_subscriptions(&self, openid: &str, remaining: Option<u32>) -> Result<(), String> {
        let mut state = self.lock();
        let subs = &mut state.mp.subscriptions;
        match remaining {
            None => {
                subs.remove(openid);
            }
            Some(n) => {
                if subs.len() >= KEEP_SUBSCRIPTIONS && !subs.contains_key(openid) {
                    return Err(format!("the sandbox tracks at most {KEEP_SUBSCRIPTIONS} openids"));
                }
                subs.insert(openid.to_owned(), n);
            }
        }
        Ok(())
    }

    /// Makes the next `times` calls to platform path `path` (one of [`INJECTABLE_PATHS`], e.g.
    /// `/cgi-bin/message/subscribe/send` or `/wxa/commit`) answer `errcode` instead, before any
    /// other check. Injections for a path apply in the order they were made. A stale-token
    /// errcode (40001, 42001) on an authorizer call makes the client refresh and retry.
    pub fn fail_next(&self, path: &str, errcode: i64, times: u32) -> Result<(), String> {
        if !INJECTABLE_PATHS.contains(&path) {
            return Err(format!("path must be one of {}", INJECTABLE_PATHS.join(", ")));
        }
        if errcode == 0 {
            return Err("errcode 0 is success, not a failure".into());
        }
        if times == 0 {
            return Ok(());
        }
        let mut state = self.lock();
        if state.mp.failures.len() >= KEEP_FAILURES {
            return Err(format!("at most {KEEP_FAILURES} injected failures may be pending"));
        }
        state.mp.failures.push(InjectedFailure { path: path.to_owned(), errcode, remaining: times });
        Ok(())
    }

    /// Lets every access token issued so far expire now — the mini-program's, and the third-party
    /// platform's component and authorizer tokens: the next business call with one gets 42001,
    /// as after the real two hours. Returns how many tokens were live.
    pub fn expire_access_tokens(&self) -> usize {
        let now = Instant::now();
        let mut state = self.lock();
        let mut live = state.open.expire_tokens(now);
        for token in state.mp.tokens.values_mut() {
            if token.expires_at > now {
                live += 1;
                token.expires_at = now;
            }
        }
        live
    }

    /// The `expires_in` of tokens issued from now on (the platform's is 7200 s).
    pub fn set_access_token_expires_in(&self, secs: u64) {
        self.lock().mp.expires_in = Some(secs);
    }

    /// How many access tokens `/cgi-bin/token` has issued.
    pub fn access_tokens_issued(&self) -> u64 {
        self.lock().mp.tokens_issued
    }

    /// Subscribe messages accepted for `touser` (all when `None`), oldest first.
    pub fn subscribe_messages(&self, touser: Option<&str>) -> Vec<SubscribeRecord> {
        self.lock().mp.messages.iter().filter(|m| touser.is_none_or(|t| m.touser == t)).cloned().collect()
    }

    /// `GET /cgi-bin/token?grant_type=client_credential&appid=&secret=`.
    pub(crate) fn issue_access_token(&self, q: &TokenQuery) -> Value {
        let mut state = self.lock();
        if let Some(errcode) = state.mp.injected(TOKEN_PATH) {
            return errcode_body(errcode, errmsg_for(errcode));
        }
        if q.grant_type.as_deref() != Some("client_credential") {
            return errcode_body(40002, "invalid grant_type");
        }
        let Some(appid) = q.appid.as_deref().filter(|a| !a.is_empty()) else { return errcode_body(41002, "appid missing") };
        let Some(secret) = q.secret.as_deref().filter(|s| !s.is_empty()) else { return errcode_body(41004, "appsecret missing") };
        match state.apps.get(appid) {
            None => return errcode_body(40013, "invalid appid"),
            Some(known) if known != secret => return errcode_body(40125, "invalid appsecret"),
            Some(_) => {}
        }
        let now = Instant::now();
        let expires_in = state.mp.expires_in.unwrap_or(DEFAULT_EXPIRES_IN);
        let mp = &mut state.mp;
        // Like the platform, an app's previous token stays valid for a while after a refresh; older
        // ones and expired ones are forgotten, which keeps memory bounded by the number of apps.
        mp.tokens.retain(|_, t| t.expires_at > now);
        let newest_previous = mp.tokens.values().filter(|t| t.appid == appid).map(|t| t.seq).max();
        mp.tokens.retain(|_, t| t.appid != appid || Some(t.seq) == newest_previous);
        mp.tokens_issued += 1;
        let token = random_hex(32);
        let expires_at = now.checked_add(Duration::from_secs(expires_in)).unwrap_or(now);
        mp.tokens.insert(token.clone(), IssuedToken { appid: appid.to_owned(), seq: mp.tokens_issued, expires_at });
        json!({"access_token": token, "expires_in": expires_in})
    }

    /// `POST /cgi-bin/message/subscribe/send?access_token=` with the raw JSON body.
    pub(crate) fn accept_subscribe_message(&self, access_token: Option<&str>, body: &[u8]) -> Value {
        let mut state = self.lock();
        let mp = &mut state.mp;
        if let Some(errcode) = mp.injected(SEND_PATH) {
            return errcode_body(errcode, errmsg_for(errcode));
        }
        let Some(token) = access_token.filter(|t| !t.is_empty()) else { return errcode_body(41001, "access_token missing") };
        match mp.tokens.get(token) {
            None => return errcode_body(40001, errmsg_for(40001)),
            Some(t) if t.expires_at <= Instant::now() => return errcode_body(42001, errmsg_for(42001)),
            Some(_) => {}
        }
        let Ok(body) = serde_json::from_slice::<Value>(body) else { return errcode_body(47001, "data format error") };
        let mut msg = match parse_message(&body) {
            Ok(msg) => msg,
            Err((code, why)) => return errcode_body(code, &why),
        };
        if let Some(left) = mp.subscriptions.get_mut(&msg.touser) {
            if *left == 0 {
                return errcode_body(43101, errmsg_for(43101));
            }
            *left -= 1;
        }
        mp.next_msgid += 1;
        msg.msgid = mp.next_msgid;
        if mp.messages.len() >= KEEP_MESSAGES {
            mp.messages.drain(..KEEP_MESSAGES / 2);
        }
        log::info!("sandbox accepted subscribe message {} for {}", msg.msgid, msg.touser);
        mp.messages.push(msg);
        json!({"errcode": 0, "errmsg": "ok", "msgid": mp.next_msgid})
    }
}

/// Checks a send request the way the platform does and returns the record to keep.
fn parse_message(body: &Value) -> Result<SubscribeRecord, (i64, String)> {
    let format_error = || (47001, "data format error".to_owned());
    let obj = body.as_object().ok_or_else(format_error)?;
    let optional_str = |key: &str| match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format_error()),
    };
    let touser = match obj.get("touser") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => return Err((40003, "invalid openid".into())),
    };
    match obj.get("template_id") {
        Some(Value::String(t)) if t == SANDBOX_PAYSLIP_TEMPLATE_ID => {}
        _ => return Err((40037, "invalid template_id".into())),
    }
    let page = optional_str("page")?;
    let miniprogram_state = optional_str("miniprogram_state")?.unwrap_or_else(|| "formal".into());
    if !["formal", "trial", "developer"].contains(&miniprogram_state.as_str()) {
        return Err((47003, "argument invalid! miniprogram_state must be formal, trial or developer".into()));
    }
    let lang = optional_str("lang")?.unwrap_or_else(|| "zh_CN".into());
    if !["zh_CN", "en_US", "zh_HK", "zh_TW"].contains(&lang.as_str()) {
        return Err((47003, "argument invalid! lang".into()));
    }
    let data = match obj.get("data") {
        Some(Value::Object(data)) if !data.is_empty() => data,
        _ => return Err((47003, "argument invalid! data is empty".into())),
    };
    let mut fields = BTreeMap::new();
    for (key, entry) in data {
        let value = match entry.as_object().and_then(|e| e.get("value")) {
            Some(Value::String(v)) => v.clone(),
            _ => return Err((47003, format!("argument invalid! data.{key}.value must be a string"))),
        };
        if let Err(why) = check_template_value(key, &value) {
            return Err((47003, format!("argument invalid! data.{key}.value {why}")));
        }
        fields.insert(key.clone(), TemplateValue { value });
    }
    Ok(SubscribeRecord {
        msgid: 0,
        touser,
        template_id: SANDBOX_PAYSLIP_TEMPLATE_ID.to_owned(),
        page,
        data: fields,
        miniprogram_state,
        lang,
        received_at: Utc::now(),
    })
}

/// The platform's per-type limits for the key types pay slips use: `thing` is at most 20
/// characters; `amount` is an optional currency sign, at most 10 digits, optional decimals and
/// an optional trailing 元. Other types are accepted as they come.
fn check_template_value(key: &str, value: &str) -> Result<(), &'static str> {
    if value.is_empty() {
        return Err("is empty");
    }
    let kind = key.trim_end_matches(|c: char| c.is_ascii_digit());
    match kind {
        "thing" if value.chars().count() > 20 => Err("exceeds 20 characters"),
        "amount" if !is_amount(value) => Err("is not an amount"),
        _ => Ok(()),
    }
}

fn is_amount(value: &str) -> bool {
    let v = value.strip_prefix(['¥', '￥', '$']).unwrap_or(value);
    let v = v.strip_suffix('元').unwrap_or(v);
    let (whole, fraction) = v.split_once('.').unwrap_or((v, "0"));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    digits(whole) && whole.len() <= 10 && digits(fraction) && fraction.len() <= 2
}

#[derive(Deserialize)]
pub(crate) struct TokenQuery {
    grant_type: Option<String>,
    appid: Option<String>,
    secret: Option<String>,
}

pub(crate) async fn token(sb: web::Data<Sandbox>, q: web::Query<TokenQuery>) -> HttpResponse {
    HttpResponse::Ok().json(sb.issue_access_token(&q))
}

#[derive(Deserialize)]
pub(crate) struct AccessTokenQuery {
    access_token: Option<String>,
}

pub(crate) async fn subscribe_send(sb: web::Data<Sandbox>, q: web::Query<AccessTokenQuery>, body: web::Bytes) -> HttpResponse {
    // The platform answers every outcome, errors included, with HTTP 200.
    HttpResponse::Ok().json(sb.accept_subscribe_message(q.access_token.as_deref(), &body))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SubscriptionsRequest {
    openid: String,
    remaining: Option<u32>,
}

pub(crate) async fn control_subscriptions(sb: web::Data<Sandbox>, body: web::Json<SubscriptionsRequest>) -> HttpResponse {
    match sb.set_subscriptions(&body.openid, body.remaining) {
        Ok(()) => HttpResponse::Ok().json(json!({"openid": body.openid, "remaining": body.remaining})),
        Err(msg) => bad_control(msg),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FailRequest {
    path: String,
    errcode: i64,
    times: Option<u32>,
}

pub(crate) async fn control_fail(sb: web::Data<Sandbox>, body: web::Json<FailRequest>) -> HttpResponse {
    let times = body.times.unwrap_or(1);
    match sb.fail_next(&body.path, body.errcode, times) {
        Ok(()) => HttpResponse::Ok().json(json!({"path": body.path, "errcode": body.errcode, "times": times})),
        Err(msg) => bad_control(msg),
    }
}

pub(crate) async fn control_expire_tokens(sb: web::Data<Sandbox>) -> HttpResponse {
    HttpResponse::Ok().json(json!({"expired": sb.expire_access_tokens()}))
}

#[derive(Deserialize)]
pub(crate) struct MessagesQuery {
    touser: Option<String>,
}

pub(crate) async fn messages(sb: web::Data<Sandbox>, q: web::Query<MessagesQuery>) -> HttpResponse {
    HttpResponse::Ok().json(json!({"messages": sb.subscribe_messages(q.touser.as_deref())}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{SANDBOX_MP_APPID, SANDBOX_MP_SECRET};

    fn query(grant_type: &str, appid: &str, secret: &str) -> TokenQuery {
        let some = |s: &str| (!s.is_empty()).then(|| s.to_owned());
        TokenQuery { grant_type: some(grant_type), appid: some(appid), secret: some(secret) }
    }

    fn token_for(sb: &Sandbox) -> String {
        let answer = sb.issue_access_token(&query("client_credential", SANDBOX_MP_APPID, SANDBOX_MP_SECRET));
        answer["access_token"].as_str().expect("a token").to_owned()
    }

    fn payslip_body(touser: &str) -> Value {
        json!({
            "touser": touser,
            "template_id": SANDBOX_PAYSLIP_TEMPLATE_ID,
            "page": "pages/payslip/index",
            "data": {"thing1": {"value": "2026-03 工资条"}, "amount2": {"value": "12345.67"}},
            "miniprogram_state": "trial",
            "lang": "zh_CN",
        })
    }

    fn send(sb: &Sandbox, token: &str, body: &Value) -> Value {
        sb.accept_subscribe_message(Some(token), body.to_string().as_bytes())
    }

    #[test]
    fn a_token_is_issued_for_the_mini_program_app_with_the_platform_lifetime() {
        let sb = Sandbox::new();
        let answer = sb.issue_access_token(&query("client_credential", SANDBOX_MP_APPID, SANDBOX_MP_SECRET));
        assert!(answer["access_token"].as_str().is_some_and(|t| t.len() == 64), "{answer}");
        assert_eq!(answer["expires_in"], 7200);
        assert!(answer.get("errcode").is_none());
        assert_eq!(sb.access_tokens_issued(), 1);
    }

    #[test]
    fn a_token_request_with_a_wrong_grant_type_gets_40002() {
        let answer = Sandbox::new().issue_access_token(&query("authorization_code", SANDBOX_MP_APPID, SANDBOX_MP_SECRET));
        assert_eq!(answer["errcode"], 40002);
    }

    #[test]
    fn a_token_request_for_an_unknown_app_gets_40013() {
        let answer = Sandbox::new().issue_access_token(&query("client_credential", "wx_nobody", SANDBOX_MP_SECRET));
        assert_eq!(answer["errcode"], 40013);
    }

    #[test]
    fn a_token_request_with_a_wrong_secret_gets_40125_without_echoing_it() {
        let answer = Sandbox::new().issue_access_token(&query("client_credential", SANDBOX_MP_APPID, "not-the-secret"));
        assert_eq!(answer["errcode"], 40125);
        assert!(!answer.to_string().contains("not-the-secret"));
    }

    #[test]
    fn a_token_request_without_appid_or_secret_gets_41002_or_41004() {
        let sb = Sandbox::new();
        assert_eq!(sb.issue_access_token(&query("client_credential", "", SANDBOX_MP_SECRET))["errcode"], 41002);
        assert_eq!(sb.issue_access_token(&query("client_credential", SANDBOX_MP_APPID, ""))["errcode"], 41004);
        assert_eq!(sb.access_tokens_issued(), 0);
    }

    #[test]
    fn only_an_apps_two_newest_tokens_stay_valid() {
        let sb = Sandbox::new();
        let first = token_for(&sb);
        let second = token_for(&sb);
        let third = token_for(&sb);
        assert_eq!(send(&sb, &first, &payslip_body("o1"))["errcode"], 40001);
        assert_eq!(send(&sb, &second, &payslip_body("o1"))["errcode"], 0);
        assert_eq!(send(&sb, &third, &payslip_body("o1"))["errcode"], 0);
    }

    #[test]
    fn a_valid_message_is_recorded_and_answered_with_a_msgid() {
        let sb = Sandbox::new();
        let token = token_for(&sb);
        let answer = send(&sb, &token, &payslip_body("o1"));
        assert_eq!((answer["errcode"].as_i64(), answer["errmsg"].as_str(), answer["msgid"].as_u64()), (Some(0), Some("ok"), Some(1)));
        let got = sb.subscribe_messages(Some("o1"));
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].value("thing1"), Some("2026-03 工资条"));
        assert_eq!(got[0].value("amount2"), Some("12345.67"));
        assert_eq!(
            (got[0].page.as_deref(), got[0].miniprogram_state.as_str(), got[0].lang.as_str()),
            (Some("pages/payslip/index"), "trial", "zh_CN")
        );
        assert!(sb.subscribe_messages(Some("o2")).is_empty());
    }

    #[test]
    fn state_and_lang_default_to_formal_and_zh_cn() {
        let sb = Sandbox::new();
        let token = token_for(&sb);
        let mut body = payslip_body("o1");
        body.as_object_mut().expect("an object").retain(|k, _| k != "miniprogram_state" && k != "lang" && k != "page");
        assert_eq!(send(&sb, &token, &body)["errcode"], 0);
        let got = &sb.subscribe_messages(None)[0];
        assert_eq!((got.page.as_deref(), got.miniprogram_state.as_str(), got.lang.as_str()), (None, "formal", "zh_CN"));
    }

    #[test]
    fn a_send_without_a_token_gets_41001_and_with_an_unknown_one_40001() {
        let sb = Sandbox::new();
        let body = payslip_body("o1").to_string();
        assert_eq!(sb.accept_subscribe_message(None, body.as_bytes())["errcode"], 41001);
        assert_eq!(sb.accept_subscribe_message(Some("forged"), body.as_bytes())["errcode"], 40001);
        assert!(sb.subscribe_messages(None).is_empty());
    }

    #[test]
    fn a_send_with_an_expired_token_gets_42001() {
        let sb = Sandbox::new();
        let token = token_for(&sb);
        assert_eq!(sb.expire_access_tokens(), 1);
        assert_eq!(send(&sb, &token, &payslip_body("o1"))["errcode"], 42001);
    }

    #[test]
    fn a_send_with_an_empty_touser_gets_40003() {
        let sb = Sandbox::new();
        let token = token_for(&sb);
        assert_eq!(send(&sb, &token, &payslip_body(""))["errcode"], 40003);
        let mut body = payslip_body("o1");
        body.as_object_mut().expect("an object").remove("touser");
        assert_eq!(send(&sb, &token, &body)["errcode"], 40003);
    }

    #[test]
    fn a_send_with_another_template_id_gets_40037() {
        let sb = Sandbox::new();
        let token = token_for(&sb);
        let mut body = payslip_body("o1");
        body["template_id"] = json!("someone-elses-template");
        assert_eq!(send(&sb, &token, &body)["errcode"], 40037);
    }

    #[test]
    fn a_send_with_missing_or_malformed_data_gets_47003() {
        let sb = Sandbox::new();
        let token = token_for(&sb);
        let cases = [
            None,
            Some(json!({})),
            Some(json!({"thing1": "bare string"})),
            Some(json!({"thing1": {"value": 5}})),
            Some(json!({"thing1": {"text": "x"}})),
            Some(json!({"thing1": {"value": "一二三四五六七八九十一二三四五六七八九十一"}})),
            Some(json!({"amount2": {"value": "12,345.67"}})),
            Some(json!({"amount2": {"value": "-3.00"}})),
        ];
        for data in cases {
            let mut body = payslip_body("o1");
            match &data {
                Some(d) => body["data"] = d.clone(),
                None => {
                    body.as_object_mut().expect("an object").remove("data");
                }
            }
            assert_eq!(send(&sb, &token, &body)["errcode"], 47003, "data {data:?}");
        }
        assert!(sb.subscribe_messages(None).is_empty());
    }

    #[test]
    fn amounts_follow_the_platforms_format() {
        for ok in ["0", "12345.67", "¥12.5", "100元", "9999999999.99"] {
            assert!(is_amount(ok), "{ok}");
        }
        for bad in ["", "12,345.67", "-1", "1.234", "12345678901", "abc", "1."] {
            assert!(!is_amount(bad), "{bad}");
        }
    }

    #[test]
    fn a_body_that_is_not_json_gets_47001() {
        let sb = Sandbox::new();
        let token = token_for(&sb);
        assert_eq!(sb.accept_subscribe_message(Some(&token), b"{not json")["errcode"], 47001);
    }

    #[test]
    fn an_openid_without_subscriptions_left_gets_43101_and_the_limit_counts_down() {
        let sb = Sandbox::new();
        let token = token_for(&sb);
        sb.set_subscriptions("o1", Some(1)).expect("accepted");
        assert_eq!(send(&sb, &token, &payslip_body("o1"))["errcode"], 0);
        assert_eq!(send(&sb, &token, &payslip_body("o1"))["errcode"], 43101);
        assert_eq!(send(&sb, &token, &payslip_body("o2"))["errcode"], 0, "other openids are unlimited");
        sb.set_subscriptions("o1", None).expect("accepted");
        assert_eq!(send(&sb, &token, &payslip_body("o1"))["errcode"], 0);
        assert_eq!(sb.subscribe_messages(Some("o1")).len(), 2);
    }

    #[test]
    fn injected_failures_answer_in_order_then_stop() {
        let sb = Sandbox::new();
        let token = token_for(&sb);
        sb.fail_next(SEND_PATH, -1, 2).expect("accepted");
        sb.fail_next(SEND_PATH, 42001, 1).expect("accepted");
        let codes: Vec<Value> = (0..4).map(|_| send(&sb, &token, &payslip_body("o1"))["errcode"].clone()).collect();
        assert_eq!(codes, vec![json!(-1), json!(-1), json!(42001), json!(0)]);
    }

    #[test]
    fn an_injected_failure_on_the_token_path_answers_there_only() {
        let sb = Sandbox::new();
        sb.fail_next(TOKEN_PATH, -1, 1).expect("accepted");
        assert_eq!(sb.issue_access_token(&query("client_credential", SANDBOX_MP_APPID, SANDBOX_MP_SECRET))["errcode"], -1);
        let token = token_for(&sb);
        assert_eq!(send(&sb, &token, &payslip_body("o1"))["errcode"], 0);
    }

    #[test]
    fn failures_can_only_be_injected_on_known_paths_with_a_nonzero_errcode() {
        let sb = Sandbox::new();
        assert!(sb.fail_next("/cgi-bin/unknown", -1, 1).is_err());
        assert!(sb.fail_next(SEND_PATH, 0, 1).is_err());
    }

    #[test]
    fn the_message_log_stays_bounded() {
        let sb = Sandbox::new();
        let token = token_for(&sb);
        for _ in 0..=KEEP_MESSAGES {
            assert_eq!(send(&sb, &token, &payslip_body("o1"))["errcode"], 0);
        }
        assert_eq!(sb.subscribe_messages(None).len(), KEEP_MESSAGES / 2 + 1);
    }
}
