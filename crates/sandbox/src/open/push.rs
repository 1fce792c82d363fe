//! Pushes to Atrium's two event URLs: built and sealed under the lock, then posted as the
//! platform posts them — `POST <url>?signature=…&timestamp=…&nonce=…&encrypt_type=aes&
//! msg_signature=…` with the XML body. An attempt counts when Atrium answers 2xx with the
//! body `success` (or nothing), which is what the platform waits for; otherwise (no answer
//! within 5 s, another status or body) it is retried in the background after each of the
//! retry delays, then given up. Every attempt is recorded with Atrium's answer, so tests can
//! see what was answered.
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::collections::VecDeque;
use std::time::Duration;

use super::OpenState;
use super::crypt::PushCrypt;
use crate::platform::{Sandbox, random_hex};

const KEEP_PUSHES: usize = 10_000;
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(5);
/// How much of Atrium's answer an attempt keeps.
const KEEP_ANSWER: usize = 500;
/// Delays before the retries of a failed push: a few seconds, not the platform's minutes.
const DEFAULT_RETRY_DELAYS: [Duration; 3] = [Duration::from_secs(1), Duration::from_secs(3), Duration::from_secs(10)];

/// One attempt to deliver a push.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PushAttempt {
    pub at: DateTime<Utc>,
    /// Atrium's HTTP status, if it answered.
    pub status: Option<u16>,
    /// Atrium's answer body (at most 500 characters), if it answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Why there was no answer (time-out, connection refused).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A push the sandbox sent, is sending or lost: `GET {prefix}/control/events` and
/// [`Sandbox::component_pushes`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ComponentPush {
    /// Order of creation.
    pub seq: u64,
    /// `component_verify_ticket`, `authorized`, `updateauthorized`, `unauthorized`,
    /// `weapp_audit_success`, `weapp_audit_fail` or `weapp_audit_delay`.
    pub kind: String,
    /// The mini-program it is about (none for a verify ticket).
    pub authorizer_appid: Option<String>,
    /// Where it goes; `None` when that URL is not configured, so it is never sent.
    pub url: Option<String>,
    /// The message's `CreateTime`: strictly increasing across pushes, so no two pushes share
    /// the event id Atrium de-duplicates by.
    pub create_time: i64,
    /// The message before encryption (flat XML).
    pub message: String,
    /// The body as posted.
    pub body: String,
    pub timestamp: String,
    pub nonce: String,
    pub msg_signature: String,
    /// SHA-1 of the sorted token, timestamp and nonce (the plain-mode signature, sent too).
    pub signature: String,
    pub attempts: Vec<PushAttempt>,
    /// Whether an attempt got 2xx with `success` (or an empty body).
    pub delivered: bool,
    /// Never sent (`"push": false`): a push lost on the way.
    pub lost: bool,
    pub created_at: DateTime<Utc>,
}

/// Where a push goes.
pub(crate) enum Target<'a> {
    /// The component event URL, addressed `AppId` = the component.
    Component,
    /// A mini-program's message URL, addressed `ToUserName` = its `gh_…`.
    Messages { appid: &'a str, user_name: &'a str },
}

pub(crate) struct PushState {
    records: VecDeque<ComponentPush>,
    next_seq: u64,
    last_create_time: i64,
    pub(crate) retry_delays: Vec<Duration>,
}

impl Default for PushState {
    fn default() -> Self {
        PushState { records: VecDeque::new(), next_seq: 0, last_create_time: 0, retry_delays: DEFAULT_RETRY_DELAYS.to_vec() }
    }
}

impl PushState {
    /// A `CreateTime` for a new message: now, but always after the previous one, since
    /// Atrium treats two pushes of one kind and second as one.
    pub(crate) fn next_create_time(&mut self) -> i64 {
        self.last_create_time = Utc::now().timestamp().max(self.last_create_time + 1);
        self.last_create_time
    }

    fn record(&mut self, seq: u64) -> Option<&mut ComponentPush> {
        self.records.iter_mut().rev().find(|r| r.seq == seq)
    }

    pub(crate) fn list(&self, kind: Option<&str>, authorizer_appid: Option<&str>) -> Vec<ComponentPush> {
        self.records
            .iter()
            .filter(|r| kind.is_none_or(|k| r.kind == k) && authorizer_appid.is_none_or(|a| r.authorizer_appid.as_deref() == Some(a)))
            .cloned()
            .collect()
    }
}

/// A flat XML message: each field a CDATA text or a number.
pub(crate) enum Field<'a> {
    Text(&'a str),
    Number(i64),
}

pub(crate) fn xml(fields: &[(&str, Field<'_>)]) -> String {
    let mut out = String::from("<xml>");
    for (name, value) in fields {
        match value {
            Field::Text(t) => out.push_str(&format!("<{name}><![CDATA[{t}]]></{name}>")),
            Field::Number(n) => out.push_str(&format!("<{name}>{n}</{name}>")),
        }
    }
    out.push_str("</xml>");
    out
}

impl OpenState {
    /// Seals `message` for `target` and records it; returns its seq. A `lost` push is
    /// recorded but never sent.
    pub(crate) fn new_push(
        &mut self,
        kind: &str,
        authorizer_appid: Option<&str>,
        target: Target<'_>,
        create_time: i64,
        message: String,
        lost: bool,
    ) -> Result<u64, String> {
        let config = &self.config;
        let crypt = PushCrypt::new(&config.token, &config.encoding_aes_key, &config.component_appid)?;
        let (url, to) = match target {
            Target::Component => (config.events_url.clone(), ("AppId", config.component_appid.as_str())),
            Target::Messages { appid, user_name } => (config.messages_url_for(appid), ("ToUserName", user_name)),
        };
        let timestamp = Utc::now().timestamp().to_string();
        let nonce = u64::from_str_radix(&random_hex(4), 16).unwrap_or(0).to_string();
        let sealed = crypt.seal(&message, to, &timestamp, &nonce)?;
        let pushes = &mut self.pushes;
        pushes.next_seq += 1;
        if pushes.records.len() >= KEEP_PUSHES {
            pushes.records.drain(..KEEP_PUSHES / 2);
        }
        pushes.records.push_back(ComponentPush {
            seq: pushes.next_seq,
            kind: kind.to_owned(),
            authorizer_appid: authorizer_appid.map(str::to_owned),
            url,
            create_time,
            message,
            body: sealed.body,
            timestamp,
            nonce,
            msg_signature: sealed.msg_signature,
            signature: sealed.signature,
            attempts: Vec::new(),
            delivered: false,
            lost,
            created_at: Utc::now(),
        });
        Ok(pushes.next_seq)
    }
}

impl Sandbox {
    /// The waits before the retries of a failed push (default 1 s, 3 s, 10 s: three retries).
    pub fn set_push_retry_delays(&self, delays: Vec<Duration>) {
        self.lock().open.pushes.retry_delays = delays;
    }

    /// Pushes of `kind` (all when `None`) about `authorizer_appid` (all when `None`), oldest
    /// first.
    pub fn component_pushes(&self, kind: Option<&str>, authorizer_appid: Option<&str>) -> Vec<ComponentPush> {
        self.lock().open.pushes.list(kind, authorizer_appid)
    }

    /// Sends push `seq`: the first attempt awaited, the retries in the background. A lost
    /// push, or one without a URL, is not sent.
    pub(crate) async fn dispatch_push(&self, seq: u64) -> Option<ComponentPush> {
        let sendable = self.lock().open.pushes.record(seq).map(|r| !r.lost && r.url.is_some())?;
        if sendable && !self.push_attempt(seq).await {
            let sb = self.clone();
            tokio::spawn(async move {
                let delays = sb.lock().open.pushes.retry_delays.clone();
                for delay in delays {
                    tokio::time::sleep(delay).await;
                    if sb.push_attempt(seq).await {
                        return;
                    }
                }
                log::warn!("sandbox platform gave up push {seq}");
            });
        }
        self.lock().open.pushes.record(seq).cloned()
    }

    /// Posts push `seq`; records the attempt; whether Atrium took it.
    async fn push_attempt(&self, seq: u64) -> bool {
        let Some((url, query, body)) = self.lock().open.pushes.record(seq).and_then(|r| {
            let query = [
                ("signature", r.signature.clone()),
                ("timestamp", r.timestamp.clone()),
                ("nonce", r.nonce.clone()),
                ("encrypt_type", "aes".to_owned()),
                ("msg_signature", r.msg_signature.clone()),
            ];
            r.url.clone().map(|u| (u, query, r.body.clone()))
        }) else {
            return false;
        };
        let sent = self
            .http
            .post(&url)
            .query(&query)
            .timeout(ATTEMPT_TIMEOUT)
            .header("Content-Type", "text/xml; charset=utf-8")
            .body(body)
            .send()
            .await;
        let outcome = match sent {
            Ok(resp) => {
                let status = resp.status().as_u16();
                match resp.text().await {
                    Ok(text) => Ok((status, text.chars().take(KEEP_ANSWER).collect::<String>())),
                    Err(_) => Err("the answer was cut off".to_owned()),
                }
            }
            Err(e) if e.is_timeout() => Err("timed out after 5 s".to_owned()),
            Err(e) if e.is_connect() => Err("could not connect".to_owned()),
            Err(_) => Err("the request failed".to_owned()),
        };
        let ok = matches!(&outcome, Ok((s, text)) if (200..300).contains(s) && matches!(text.trim(), "success" | ""));
        let mut state = self.lock();
        if let Some(record) = state.open.pushes.record(seq) {
            let (status, answer, error) = match outcome {
                Ok((s, text)) => (Some(s), Some(text), None),
                Err(e) => (None, None, Some(e)),
            };
            let answered = match (status, &error) {
                (Some(s), _) => format!("answered {s}"),
                (None, Some(e)) => e.clone(),
                (None, None) => "no answer".to_owned(),
            };
            // The message carries tickets and codes: only its kind and the outcome are logged.
            log::info!("sandbox platform push {seq} ({}) to {url}: {answered}", record.kind);
            record.attempts.push(PushAttempt { at: Utc::now(), status, answer, error });
            record.delivered |= ok;
        }
        ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_times_always_rise() {
        let mut p = PushState::default();
        let a = p.next_create_time();
        let b = p.next_create_time();
        let c = p.next_create_time();
        assert!(a < b && b < c, "{a} {b} {c}");
    }

    #[test]
    fn messages_are_flat_xml_with_cdata_texts_and_bare_numbers() {
        let m = xml(&[("AppId", Field::Text("wx1")), ("CreateTime", Field::Number(5))]);
        assert_eq!(m, "<xml><AppId><![CDATA[wx1]]></AppId><CreateTime>5</CreateTime></xml>");
    }
}

#[cfg(test)]
mod delivery_tests {
    use super::super::serve;
    use super::*;
    use actix_web::{HttpResponse, web};
    use std::sync::atomic::{AtomicU32, Ordering};

    /// Atrium's event URL: answers 500 while `fail` lasts, then `success`.
    async fn events(fail: web::Data<AtomicU32>, query: web::Query<std::collections::HashMap<String, String>>) -> HttpResponse {
        assert_eq!(query.get("encrypt_type").map(String::as_str), Some("aes"));
        if fail.load(Ordering::SeqCst) > 0 {
            fail.fetch_sub(1, Ordering::SeqCst);
            return HttpResponse::InternalServerError().body("busy");
        }
        HttpResponse::Ok().body("success")
    }

    async fn json_answer() -> HttpResponse {
        HttpResponse::Ok().json(serde_json::json!({"code": 0}))
    }

    #[tokio::test]
    async fn a_refused_push_is_retried_until_atrium_answers_success() {
        let sb = Sandbox::new();
        let fail = web::Data::new(AtomicU32::new(2));
        let f = fail.clone();
        let served = serve::start(&sb, move |c| {
            c.app_data(f.clone())
                .route(super::super::ATRIUM_EVENTS_PATH, web::post().to(events))
                .route("/api/v1/miniprogram/component/messages/{appid}", web::post().to(json_answer));
        });
        sb.push_events_to(&served.origin).unwrap();
        sb.set_push_retry_delays(vec![Duration::from_millis(30); 3]);

        let first = sb.push_verify_ticket().await.unwrap();

        assert_eq!((first.attempts[0].status, first.delivered), (Some(500), false));
        let mut record = first;
        for _ in 0..100 {
            if record.delivered {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            record = sb.component_pushes(Some("component_verify_ticket"), None).remove(0);
        }
        let answers: Vec<(Option<u16>, Option<String>)> = record.attempts.iter().map(|a| (a.status, a.answer.clone())).collect();
        assert_eq!(answers, [(Some(500), Some("busy".into())), (Some(500), Some("busy".into())), (Some(200), Some("success".into()))]);
        served.stop().await;
    }

    #[tokio::test]
    async fn a_2xx_without_success_is_not_taken_and_a_lost_push_is_never_sent() {
        let sb = Sandbox::new();
        let served = serve::start(&sb, |c| {
            c.route("/api/v1/miniprogram/component/messages/{appid}", web::post().to(json_answer));
        });
        sb.push_events_to(&served.origin).unwrap();
        sb.set_push_retry_delays(Vec::new());
        let appid = "wx_t1";
        {
            let mut state = sb.lock();
            let mut a = super::super::code::Authorizer::new(appid);
            a.authorized = true;
            a.code.audits.push(super::super::code::tests_support::audit(1));
            a.code.audits.push(super::super::code::tests_support::audit(2));
            state.open.authorizers.insert(appid.to_owned(), a);
        }
        let decision = |auditid, push| super::super::AuditDecision {
            authorizer_appid: appid.into(),
            auditid: Some(auditid),
            result: super::super::AuditResult::Passed,
            reason: None,
            screenshots: Vec::new(),
            push,
        };

        let pushed = sb.decide_audit(decision(1, true)).await.unwrap().event.unwrap();
        let lost = sb.decide_audit(decision(2, false)).await.unwrap().event.unwrap();

        assert_eq!(pushed.url, Some(format!("{}/api/v1/miniprogram/component/messages/{appid}", served.origin)));
        assert_eq!((pushed.attempts.len(), pushed.attempts[0].status, pushed.delivered), (1, Some(200), false));
        assert!(pushed.body.starts_with("<xml><ToUserName><![CDATA[gh_"), "{}", pushed.body);
        assert!((lost.lost, lost.attempts.len(), lost.delivered) == (true, 0, false));
        assert_eq!(sb.miniprogram(appid).unwrap().audits[1].status, "passed", "a lost push still decides the audit");
        served.stop().await;
    }
}
