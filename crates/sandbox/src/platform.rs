use actix_web::{HttpResponse, web};
use rand::RngCore;
use serde::Deserialize;
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use url::Url;

use crate::mp::{self, MpState};
use crate::open::{self, OpenState};
use crate::outbox::SandboxOutbox;
use crate::pay::{self, PayState};
use crate::{SANDBOX_LOGIN_APPID, SANDBOX_LOGIN_SECRET, SANDBOX_MP_APPID, SANDBOX_MP_SECRET};

#[derive(Debug, Clone)]
struct IssuedCode {
    appid: String,
    openid: String,
    unionid: Option<String>,
    used: bool,
}

#[derive(Default)]
pub(crate) struct State {
    /// appid → secret of the apps the sandbox accepts.
    pub(crate) apps: HashMap<String, String>,
    codes: HashMap<String, IssuedCode>,
    /// Access tokens, subscribe messages and the controls that steer them.
    pub(crate) mp: MpState,
    /// Merchants, orders, refunds and notifications of the pay platform.
    pub(crate) pay: PayState,
    /// The third-party platform: its tokens, authorisations, template library, each
    /// mini-program's code, and its pushes.
    pub(crate) open: OpenState,
}

/// The sandbox platform. Cheap to clone; clones share state.
#[derive(Clone)]
pub struct Sandbox {
    state: Arc<Mutex<State>>,
    outbox: SandboxOutbox,
    pub(crate) http: reqwest::Client,
    /// The pay platform's key pair, made on first use (RSA generation takes a moment).
    pub(crate) pay_keys: Arc<OnceLock<Result<pay::PlatformKeyPair, String>>>,
}

impl Default for Sandbox {
    fn default() -> Self {
        Sandbox::new()
    }
}

impl Sandbox {
    /// A sandbox that knows the website-login app and the mini-program app of this crate's
    /// constants.
    pub fn new() -> Self {
        let mut state = State::default();
        state.apps.insert(SANDBOX_LOGIN_APPID.into(), SANDBOX_LOGIN_SECRET.into());
        state.apps.insert(SANDBOX_MP_APPID.into(), SANDBOX_MP_SECRET.into());
        Sandbox {
            state: Arc::new(Mutex::new(state)),
            outbox: SandboxOutbox::default(),
            http: crate::http_client(),
            pay_keys: Arc::new(OnceLock::new()),
        }
    }

    /// Accept another app id with its secret.
    pub fn register_app(&self, appid: &str, secret: &str) {
        self.lock().apps.insert(appid.into(), secret.into());
    }

    /// The SMS / e-mail outbox, to wire as identity's code sender.
    pub fn outbox(&self) -> SandboxOutbox {
        self.outbox.clone()
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Mounts the sandbox's routes on `cfg` (relative paths; put it in a scope).
    pub fn configure(&self, cfg: &mut web::ServiceConfig) {
        cfg.app_data(web::Data::new(self.clone()))
            .route("/api/sns/oauth2/access_token", web::get().to(oauth2_access_token))
            .route("/open/connect/qrconnect", web::get().to(qrconnect))
            .route("/api/cgi-bin/token", web::get().to(mp::token))
            .route("/api/cgi-bin/message/subscribe/send", web::post().to(mp::subscribe_send))
            .route("/control/scan", web::post().to(control_scan))
            .route("/control/subscriptions", web::post().to(mp::control_subscriptions))
            .route("/control/fail", web::post().to(mp::control_fail))
            .route("/control/expire-tokens", web::post().to(mp::control_expire_tokens))
            .route("/messages", web::get().to(mp::messages))
            .route("/outbox", web::get().to(outbox))
            .route("/control/merchant", web::post().to(pay::control_merchant))
            .route("/control/sub-merchant", web::post().to(pay::control_sub_merchant))
            .route("/control/pay", web::post().to(pay::control_pay))
            .route("/control/refund", web::post().to(pay::control_refund))
            .route("/control/notify-fail", web::post().to(pay::control_notify_fail))
            .route("/control/notify-lose", web::post().to(pay::control_notify_lose))
            .route("/control/notify-requests", web::post().to(pay::control_notify_requests))
            .route("/control/pay-fail", web::post().to(pay::control_pay_fail))
            .route("/control/pay-delay", web::post().to(pay::control_pay_delay))
            .route("/control/notifications", web::get().to(pay::control_notifications))
            .route("/control/trade", web::get().to(pay::control_trade))
            .route("/control/profitsharing", web::get().to(pay::control_profitsharing))
            .route("/control/profitsharing/close-next", web::post().to(pay::control_share_close_next))
            .route("/control/profitsharing/return-fail-next", web::post().to(pay::control_share_return_fail_next))
            .route("/control/profitsharing/rules", web::post().to(pay::control_share_rules))
            .route("/control/profitsharing/tamper", web::post().to(pay::control_share_tamper))
            .route("/control/profitsharing/tamper-return", web::post().to(pay::control_share_tamper_return))
            .route("/api/cgi-bin/component/{name}", web::route().to(open::component_entry))
            .route("/api/wxa/{name}", web::route().to(open::wxa_entry))
            .route("/api/ci/upload", web::post().to(open::ci_upload))
            .route("/mp/cgi-bin/componentloginpage", web::get().to(open::login_page))
            .route("/control/authorize", web::post().to(open::control_authorize))
            .route("/control/unauthorize", web::post().to(open::control_unauthorize))
            .route("/control/audit", web::post().to(open::control_audit))
            .route("/control/verify-ticket", web::post().to(open::control_verify_ticket))
            .route("/control/events", web::get().to(open::control_events))
            .route("/control/miniprogram", web::get().to(open::control_miniprogram))
            .route("/control/ci-uploads", web::get().to(open::control_ci_uploads))
            .service(web::scope("/pay").default_service(web::to(pay::entry)));
        self.configure_settings_controls(cfg);
    }

    /// Plays a scan: issues a code for `openid`/`unionid` and returns the redirect URL.
    pub fn scan(&self, qr_url: &str, openid: &str, unionid: Option<&str>) -> Result<(String, String), String> {
        let url = Url::parse(qr_url.trim_end_matches("#wechat_redirect")).map_err(|_| "qr_url is not a URL".to_string())?;
        let param = |k: &str| url.query_pairs().find(|(n, _)| n == k).map(|(_, v)| v.into_owned());
        let appid = param("appid").ok_or("qr_url has no appid")?;
        let redirect = param("redirect_uri").ok_or("qr_url has no redirect_uri")?;
        let state = param("state").unwrap_or_default();
        if !self.lock().apps.contains_key(&appid) {
            return Err(format!("unknown appid {appid}"));
        }
        let code = random_hex(16);
        self.lock().codes.insert(code.clone(), IssuedCode { appid, openid: openid.into(), unionid: unionid.map(Into::into), used: false });
        let mut target = Url::parse(&redirect).map_err(|_| "redirect_uri is not a URL".to_string())?;
        target.query_pairs_mut().append_pair("code", &code).append_pair("state", &state);
        Ok((code, target.to_string()))
    }
}

pub(crate) fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    rand::rng().fill_bytes(&mut buf);
    hex::encode(buf)
}

pub(crate) fn errcode_body(code: i64, msg: &str) -> serde_json::Value {
    json!({"errcode": code, "errmsg": format!("{msg} rid: {}", random_hex(4))})
}

fn errcode(code: i64, msg: &str) -> HttpResponse {
    // The platform answers errors with HTTP 200 and an errcode.
    HttpResponse::Ok().json(errcode_body(code, msg))
}

#[derive(Deserialize)]
struct OauthQuery {
    appid: Option<String>,
    secret: Option<String>,
    code: Option<String>,
    grant_type: Option<String>,
}

async fn oauth2_access_token(sb: web::Data<Sandbox>, q: web::Query<OauthQuery>) -> HttpResponse {
    let (Some(appid), Some(secret), Some(code)) = (&q.appid, &q.secret, &q.code) else {
        return errcode(41002, "appid, secret or code missing");
    };
    if q.grant_type.as_deref() != Some("authorization_code") {
        return errcode(40002, "invalid grant_type");
    }
    let mut state = sb.lock();
    if state.apps.get(appid) != Some(secret) {
        return errcode(40125, "invalid appsecret");
    }
    let Some(issued) = state.codes.get_mut(code) else { return errcode(40029, "invalid code") };
    if issued.appid != *appid {
        return errcode(40029, "invalid code");
    }
    if issued.used {
        return errcode(40163, "code been used");
    }
    issued.used = true;
    let mut body = json!({
        "access_token": random_hex(24),
        "expires_in": 7200,
        "refresh_token": random_hex(24),
        "openid": issued.openid,
        "scope": "snsapi_login",
    });
    if let Some(u) = &issued.unionid {
        body["unionid"] = json!(u);
    }
    HttpResponse::Ok().json(body)
}

async fn qrconnect(q: web::Query<HashMap<String, String>>) -> HttpResponse {
    let state = q.get("state").cloned().unwrap_or_default();
    let page = format!(
        "<!doctype html><meta charset=utf-8><title>Sandbox QR login</title>\
         <h1>Sandbox QR login</h1><p>This page stands in for the messaging platform's QR code.</p>\
         <p>Ticket: <code>{}</code></p><p>Play a scan with <code>POST /sandbox/control/scan</code> \
         and this page's URL as <code>qr_url</code>.</p>",
        html_escape(&state)
    );
    HttpResponse::Ok().content_type("text/html; charset=utf-8").body(page)
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScanRequest {
    qr_url: String,
    openid: String,
    unionid: Option<String>,
    follow: Option<bool>,
}

pub(crate) fn bad_control(message: impl Into<String>) -> HttpResponse {
    HttpResponse::BadRequest().json(json!({"code": 400, "message": message.into(), "data": null}))
}

async fn control_scan(sb: web::Data<Sandbox>, body: web::Json<ScanRequest>) -> HttpResponse {
    let (code, redirect_url) = match sb.scan(&body.qr_url, &body.openid, body.unionid.as_deref()) {
        Ok(v) => v,
        Err(msg) => return bad_control(msg),
    };
    let mut out = json!({"code": code, "redirect_url": redirect_url});
    if body.follow.unwrap_or(true) {
        match sb.http.get(&redirect_url).send().await {
            Ok(resp) => {
                out["callback_status"] = json!(resp.status().as_u16());
                out["callback_body"] = resp.json::<serde_json::Value>().await.unwrap_or(serde_json::Value::Null);
            }
            Err(e) => {
                out["callback_status"] = json!(null);
                out["callback_error"] = json!(e.to_string());
            }
        }
    }
    HttpResponse::Ok().json(out)
}

#[derive(Deserialize)]
struct OutboxQuery {
    target: Option<String>,
}

async fn outbox(sb: web::Data<Sandbox>, q: web::Query<OutboxQuery>) -> HttpResponse {
    HttpResponse::Ok().json(json!({"messages": sb.outbox.messages(q.target.as_deref())}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scan_issues_a_code_and_a_redirect_to_the_callback() {
        let sb = Sandbox::new();
        let qr = "http://h/open/connect/qrconnect?appid=wx_sandbox_login&redirect_uri=http%3A%2F%2Fa%2Fcb&response_type=code&scope=snsapi_login&state=T1#wechat_redirect";
        let (code, redirect) = sb.scan(qr, "o1", Some("u1")).unwrap();
        assert_eq!(redirect, format!("http://a/cb?code={code}&state=T1"));
    }

    #[test]
    fn a_scan_for_an_unknown_app_is_refused() {
        let sb = Sandbox::new();
        assert!(sb.scan("http://h/x?appid=nope&redirect_uri=http%3A%2F%2Fa&state=s", "o", None).is_err());
    }
}
