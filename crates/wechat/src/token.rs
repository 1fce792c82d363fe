//! The mini-program's access token: fetched from `/cgi-bin/token`, cached until shortly before
//! it expires, shared by every business call, dropped and refetched when the platform says it
//! is stale.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::{CallRecorder, SubscribeError, record_call};

/// Refresh this long before the platform's `expires_in` runs out.
const REFRESH_MARGIN: Duration = Duration::from_secs(300);
/// Waits before retrying a call the platform answered with -1 (system busy).
const BUSY_BACKOFF: [Duration; 2] = [Duration::from_millis(100), Duration::from_millis(300)];
/// Errcodes that mean "this access token is no longer good": invalid, not latest, expired.
const STALE_TOKEN: [i64; 3] = [40001, 40014, 42001];
const BUSY: i64 = -1;

/// A mini-program's credentials and where the platform lives. `Debug` hides the secret.
#[derive(Clone)]
pub struct WechatAppConfig {
    /// `https://api.weixin.qq.com`, or the sandbox's `http://127.0.0.1:PORT/sandbox/api`.
    pub api_base: String,
    pub appid: String,
    pub secret: String,
}

impl fmt::Debug for WechatAppConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WechatAppConfig").field("api_base", &self.api_base).field("appid", &self.appid).field("secret", &"***").finish()
    }
}

struct Cached {
    token: String,
    refresh_at: Instant,
}

/// The access-token cache of one mini-program. Share one per app id (behind an `Arc`): each
/// fetch from the platform invalidates older tokens after a grace period, so two caches for the
/// same app would keep knocking each other's token out.
pub struct AccessTokens {
    http: reqwest::Client,
    config: WechatAppConfig,
    /// Held across a refresh, so concurrent callers wait for one fetch and share its token.
    cached: Mutex<Option<Cached>>,
    recorder: Option<Arc<dyn CallRecorder>>,
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    expires_in: u64,
}

/// How long a token with the platform's `expires_in` (seconds) is used: until five minutes
/// before it expires, but at least half its lifetime (for short-lived sandbox tokens).
pub(crate) fn refresh_after(expires_in: u64) -> Duration {
    let lifetime = Duration::from_secs(expires_in);
    lifetime.saturating_sub(REFRESH_MARGIN).max(lifetime / 2)
}

impl AccessTokens {
    /// A cache for `config`'s app; nothing is fetched until the first call.
    pub fn new(config: WechatAppConfig) -> anyhow::Result<Self> {
        let http = crate::http::client_builder()?.timeout(Duration::from_secs(10)).connect_timeout(Duration::from_secs(5)).build()?;
        Ok(AccessTokens { http, config, cached: Mutex::new(None), recorder: None })
    }

    /// Reports every platform call (token fetches and business calls) to `recorder`.
    pub fn with_recorder(mut self, recorder: Arc<dyn CallRecorder>) -> Self {
        self.recorder = Some(recorder);
        self
    }

    /// The app id these tokens are for.
    pub fn appid(&self) -> &str {
        &self.config.appid
    }

    /// A valid access token: the cached one, or a fresh one from `/cgi-bin/token`.
    pub async fn get(&self) -> Result<String, SubscribeError> {
        let mut cached = self.cached.lock().await;
        if let Some(c) = cached.as_ref().filter(|c| Instant::now() < c.refresh_at) {
            return Ok(c.token.clone());
        }
        let fresh = self.fetch().await?;
        let refresh_at = Instant::now() + refresh_after(fresh.expires_in);
        *cached = Some(Cached { token: fresh.access_token.clone(), refresh_at });
        Ok(fresh.access_token)
    }

    /// Forgets `token` if it is still the cached one (a concurrent caller may already have
    /// replaced it), so the next [`AccessTokens::get`] fetches a new one.
    pub async fn invalidate(&self, token: &str) {
        let mut cached = self.cached.lock().await;
        if cached.as_ref().is_some_and(|c| c.token == token) {
            *cached = None;
        }
    }

    async fn fetch(&self) -> Result<TokenAnswer, SubscribeError> {
        const ENDPOINT: &str = "/cgi-bin/token";
        let url = format!("{}{ENDPOINT}", self.api_base());
        let mut backoff = BUSY_BACKOFF.iter();
        loop {
            let started = std::time::Instant::now();
            let sent = self
                .http
                .get(&url)
                .query(&[
                    ("grant_type", "client_credential"),
                    ("appid", self.config.appid.as_str()),
                    ("secret", self.config.secret.as_str()),
                ])
                .send()
                .await;
            let answer = self.read_answer(sent, None).await;
            self.record(ENDPOINT, &answer, started);
            match answer {
                Ok(body) => {
                    let answer: TokenAnswer = serde_json::from_value(body)
                        .map_err(|_| SubscribeError::Transport("the token answer lacks access_token or expires_in".into()))?;
                    log::debug!("fetched an access token for {} (expires in {} s)", self.config.appid, answer.expires_in);
                    return Ok(answer);
                }
                Err(e) if e.errcode() == Some(BUSY) => match backoff.next() {
                    Some(wait) => {
                        log::warn!("token fetch for {}: platform busy, retrying in {wait:?}", self.config.appid);
                        tokio::time::sleep(*wait).await;
                    }
                    None => return Err(e),
                },
                Err(e) => {
                    log::warn!("token fetch for {} failed: {e}", self.config.appid);
                    return Err(e);
                }
            }
        }
    }

    /// POSTs `body` as JSON to the business call `path` (e.g. `/cgi-bin/message/subscribe/send`)
    /// with the access token, and returns the platform's answer when its errcode is 0.
    ///
    /// A stale token (40001, 40014, 42001) is dropped and the call retried once with a fresh
    /// one; a busy platform (-1) is retried after 100 ms and again after 300 ms. Transport errors
    /// are not retried: the platform may have acted on the request.
    pub(crate) async fn post_json<B: Serialize + ?Sized>(&self, path: &'static str, body: &B) -> Result<Value, SubscribeError> {
        let url = format!("{}{path}", self.api_base());
        let mut token_retried = false;
        let mut backoff = BUSY_BACKOFF.iter();
        loop {
            let token = self.get().await?;
            let started = std::time::Instant::now();
            let sent = self.http.post(&url).query(&[("access_token", token.as_str())]).json(body).send().await;
            let answer = self.read_answer(sent, Some(&token)).await;
            self.record(path, &answer, started);
            match answer {
                Err(e) if !token_retried && e.errcode().is_some_and(|c| STALE_TOKEN.contains(&c)) => {
                    log::info!("{path}: access token refused ({e}); fetching a new one and retrying once");
                    self.invalidate(&token).await;
                    token_retried = true;
                }
                Err(e) if e.errcode() == Some(BUSY) => match backoff.next() {
                    Some(wait) => {
                        log::warn!("{path}: platform busy, retrying in {wait:?}");
                        tokio::time::sleep(*wait).await;
                    }
                    None => return Err(e),
                },
                other => return other,
            }
        }
    }

    fn record(&self, endpoint: &'static str, answer: &Result<Value, SubscribeError>, started: std::time::Instant) {
        let errcode = match answer {
            Ok(_) => Some(0),
            Err(e) => e.errcode(),
        };
        record_call(self.recorder.as_ref(), endpoint, errcode, started);
    }

    fn api_base(&self) -> &str {
        self.config.api_base.trim_end_matches('/')
    }

    /// Decides an answer by its `errcode`, never by the HTTP status alone. Every message that
    /// comes out has the secret and `token` masked.
    async fn read_answer(&self, sent: reqwest::Result<reqwest::Response>, token: Option<&str>) -> Result<Value, SubscribeError> {
        let mask = |msg: String| redact(msg, &[self.config.secret.as_str(), token.unwrap_or_default()]);
        // The URL carries the secret or the access token: keep it out of every message.
        let resp = sent.map_err(|e| SubscribeError::Transport(mask(error_chain(&e.without_url()))))?;
        if !resp.status().is_success() {
            return Err(SubscribeError::Transport(format!("the platform answered HTTP {}", resp.status().as_u16())));
        }
        let body: Value = resp.json().await.map_err(|_| SubscribeError::Transport("the platform sent an unreadable answer".into()))?;
        match body.get("errcode").and_then(Value::as_i64).unwrap_or(0) {
            0 => Ok(body),
            errcode => {
                let errmsg = mask(body.get("errmsg").and_then(Value::as_str).unwrap_or_default().to_owned());
                Err(SubscribeError::Platform { errcode, errmsg })
            }
        }
    }
}

/// An error with its causes, `a: b: c`.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cause = c.source();
    }
    out
}

/// `msg` with every occurrence of a non-empty `secrets` entry replaced by `***`.
pub(crate) fn redact(mut msg: String, secrets: &[&str]) -> String {
    for s in secrets.iter().filter(|s| !s.is_empty()) {
        if msg.contains(s) {
            msg = msg.replace(s, "***");
        }
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_platform_token_is_used_until_five_minutes_before_it_expires() {
        assert_eq!(refresh_after(7200), Duration::from_secs(6900));
    }

    #[test]
    fn a_short_lived_token_is_used_for_half_its_lifetime() {
        assert_eq!(refresh_after(400), Duration::from_secs(200));
        assert_eq!(refresh_after(2), Duration::from_secs(1));
        assert_eq!(refresh_after(0), Duration::ZERO);
    }

    #[test]
    fn redact_masks_every_secret_and_ignores_empty_ones() {
        let msg = redact("secret s3cr3t and token t0k3n, again s3cr3t".into(), &["s3cr3t", "t0k3n", ""]);
        assert_eq!(msg, "secret *** and token ***, again ***");
    }

    #[test]
    fn debug_output_of_the_config_hides_the_secret() {
        let config = WechatAppConfig { api_base: "http://x".into(), appid: "wx1".into(), secret: "s3cr3t".into() };
        let shown = format!("{config:?}");
        assert!(shown.contains("wx1") && !shown.contains("s3cr3t"), "{shown}");
    }
}
