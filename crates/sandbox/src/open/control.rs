//! The third-party platform's control calls — what the platform's people do: an admin
//! scanning the authorisation page (or revoking it, or many tenants' admins one after the
//! other), the reviewers deciding an audit (or the policy they decide new audits by), the
//! platform pushing a verify ticket, the component's audit quota — over HTTP and as Rust twins
//! on [`Sandbox`].
use actix_web::{HttpResponse, web};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::time::{Duration, Instant};
use url::Url;

use super::code::{AuditState, Authorizer, MiniProgramSnapshot};
use super::push::{ComponentPush, Field, Target, xml};
use super::settings::{PlatformQuota, QuotaRequest};
use super::{AUTH_CODE_EXPIRES_IN, AuthCode, CiUpload, DEFAULT_FUNC_INFO, KEEP_AUTHORIZERS, OpenState, bound, is_appid};
use crate::platform::{Sandbox, bad_control, random_hex};

/// Who the audit events come from: the platform's system account.
const PLATFORM_SENDER: &str = "o_sandbox_platform_audit";
/// How long following the page's redirect may take.
const FOLLOW_TIMEOUT: Duration = Duration::from_secs(10);
/// How much of a non-JSON callback answer is kept.
const KEEP_CALLBACK: usize = 2_000;
/// Tenants `control/authorize-many` takes at most.
pub const MAX_AUTHORIZE_MANY: usize = 5_000;
/// The longest wait the audit policy takes before deciding (a day).
const MAX_POLICY_AFTER_MS: u64 = 86_400_000;
/// Appids the audit policy rejects, at most.
const MAX_REJECT_APPIDS: usize = 10_000;

fn yes() -> bool {
    true
}

/// `POST {prefix}/control/authorize` and [`Sandbox::authorize`]: an admin scans the
/// authorisation page and grants the component. Name the page by exactly one of
/// `pre_auth_code`, `authorize_url` (the page's URL; it counts as opened) or `tenant_id`
/// (through the resolver the server set with [`Sandbox::resolve_tenant_links`]).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthorizeRequest {
    pub pre_auth_code: Option<String>,
    pub authorize_url: Option<String>,
    pub tenant_id: Option<i64>,
    /// The mini-program granting.
    pub authorizer_appid: String,
    /// Its name (default `Sandbox <appid>`).
    pub nickname: Option<String>,
    /// The permission sets granted (default [`DEFAULT_FUNC_INFO`]; without 18 code
    /// management answers 61007).
    pub func_info: Option<Vec<i64>>,
    /// Follow the page's redirect like the admin's browser, when it is known (default true).
    pub follow: Option<bool>,
    /// Push the event (default true); `false` loses it.
    pub push: Option<bool>,
    /// Push the event before following the redirect (default false: the browser comes back
    /// first and uses the code, the later event finds it used).
    pub event_first: Option<bool>,
}

/// What an authorisation did.
#[derive(Debug, Clone, Serialize)]
pub struct AuthorizeReport {
    pub pre_auth_code: String,
    pub authorizer_appid: String,
    /// Its `gh_…`, what its messages are addressed to.
    pub user_name: String,
    /// `authorized`, or `updateauthorized` when it was authorised already.
    pub info_type: String,
    /// The authorisation code (single use, 3600 s).
    pub auth_code: String,
    /// The page's redirect with the code, when the page was opened.
    pub redirect_url: Option<String>,
    /// What Atrium's callback answered, when the redirect was followed.
    pub callback_status: Option<u16>,
    pub callback_body: Option<Value>,
    pub callback_error: Option<String>,
    /// The `authorized` event, its first delivery attempt made.
    pub event: Option<ComponentPush>,
}

/// How the reviewers decide, in `control/audit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuditResult {
    /// Passed: `weapp_audit_success`.
    Passed,
    /// Rejected with a reason and screenshots: `weapp_audit_fail`.
    Rejected,
    /// Needs longer (the audit keeps running): `weapp_audit_delay`.
    Delayed,
}

/// `POST {prefix}/control/audit` and [`Sandbox::decide_audit`].
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditDecision {
    pub authorizer_appid: String,
    /// The audit; the running one when absent.
    pub auditid: Option<i64>,
    pub result: AuditResult,
    /// Why (rejected, delayed); a default is used when absent.
    pub reason: Option<String>,
    /// Media ids of screenshots (rejected), sent as `a|b`.
    #[serde(default)]
    pub screenshots: Vec<String>,
    /// Push the event (default true); `false` loses it, so only `get_auditstatus` tells.
    #[serde(default = "yes")]
    pub push: bool,
}

/// What the platform does with a new audit by itself, in `control/audit-policy`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PolicyResult {
    /// Nothing: the audit waits for `control/audit` (the default).
    #[default]
    Manual,
    /// Passes it.
    Passed,
    /// Rejects it.
    Rejected,
    /// Says it needs longer; it keeps running until `control/audit` decides it.
    Delayed,
}

/// `POST {prefix}/control/audit-policy` and [`Sandbox::set_audit_policy`]: from then on each
/// new audit is decided `after_ms` after its submit, as `control/audit` with `push: true`
/// decides it; the mini-programs of `reject_appids` are rejected whatever `result` says.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditPolicy {
    /// What happens to new audits.
    pub result: PolicyResult,
    /// How long after the submit (at most a day; default 0).
    #[serde(default)]
    pub after_ms: u64,
    /// Mini-programs whose audits are rejected.
    #[serde(default)]
    pub reject_appids: Vec<String>,
    /// The reason of a rejection or a delay; a default is used when absent.
    #[serde(default)]
    pub reason: Option<String>,
}

/// A decision the policy made at a submit, carried out after a wait.
#[derive(Debug)]
pub(crate) struct ScheduledDecision {
    after: Duration,
    decision: AuditDecision,
}

impl AuditPolicy {
    fn check(&self) -> Result<(), String> {
        if self.after_ms > MAX_POLICY_AFTER_MS {
            return Err(format!("after_ms must be at most {MAX_POLICY_AFTER_MS} (a day)"));
        }
        if self.reject_appids.len() > MAX_REJECT_APPIDS {
            return Err(format!("reject_appids may name at most {MAX_REJECT_APPIDS} mini-programs"));
        }
        if let Some(bad) = self.reject_appids.iter().find(|a| !is_appid(a)) {
            return Err(format!("reject_appids: {bad:?} is not an appid (1 to 32 letters, digits or _)"));
        }
        if let Some(r) = &self.reason {
            check_cdata("reason", r, 1_000)?;
        }
        Ok(())
    }

    /// What the policy does with audit `auditid` of `appid`, just submitted.
    pub(crate) fn decision_for(&self, appid: &str, auditid: i64) -> Option<ScheduledDecision> {
        let result = if self.reject_appids.iter().any(|a| a == appid) {
            AuditResult::Rejected
        } else {
            match self.result {
                PolicyResult::Manual => return None,
                PolicyResult::Passed => AuditResult::Passed,
                PolicyResult::Rejected => AuditResult::Rejected,
                PolicyResult::Delayed => AuditResult::Delayed,
            }
        };
        let reason = if result == AuditResult::Passed { None } else { self.reason.clone() };
        Some(ScheduledDecision {
            after: Duration::from_millis(self.after_ms),
            decision: AuditDecision {
                authorizer_appid: appid.to_owned(),
                auditid: Some(auditid),
                result,
                reason,
                screenshots: Vec::new(),
                push: true,
            },
        })
    }
}

/// The appid `control/authorize-many` gives tenant `tenant_id`: `wxsandbox` and the id
/// zero-padded to nine digits — 18 characters like a real appid (longer for ids from 10⁹ on,
/// still within the 32 an appid may have).
pub fn tenant_appid(tenant_id: i64) -> String {
    format!("wxsandbox{tenant_id:09}")
}

/// A tenant `control/authorize-many` authorised.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuthorizedTenant {
    /// The tenant.
    pub tenant_id: i64,
    /// Its mini-program ([`tenant_appid`]).
    pub authorizer_appid: String,
}

/// A tenant `control/authorize-many` could not authorise, or whose Atrium did not take it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FailedTenant {
    /// The tenant.
    pub tenant_id: i64,
    /// Why.
    pub reason: String,
}

/// What `control/authorize-many` ([`Sandbox::authorize_many`]) did, in the order asked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AuthorizeManyReport {
    /// The tenants authorised, Atrium told (its callback answered 2xx, or it took the event).
    pub authorized: Vec<AuthorizedTenant>,
    /// The others.
    pub failed: Vec<FailedTenant>,
}

/// Why Atrium did not learn of an authorisation the platform granted, if it did not: its
/// callback failed and the `authorized` event was not taken at its first attempt.
fn atrium_missed(report: &AuthorizeReport) -> Option<String> {
    if report.event.as_ref().is_some_and(|e| e.delivered) {
        return None;
    }
    match (report.callback_status, &report.callback_error) {
        (Some(status), _) if !(200..300).contains(&status) => {
            Some(format!("authorised on the platform, but Atrium's callback answered HTTP {status} and it did not take the event"))
        }
        (None, Some(e)) => Some(format!("authorised on the platform, but Atrium's callback failed ({e}) and it did not take the event")),
        _ => None,
    }
}

/// What a decision did.
#[derive(Debug, Clone, Serialize)]
pub struct AuditReport {
    pub authorizer_appid: String,
    pub auditid: i64,
    /// `passed`, `rejected` or `delayed`.
    pub status: String,
    pub reason: Option<String>,
    pub screenshots: Vec<String>,
    /// The event (lost when `push` was false), its first delivery attempt made.
    pub event: Option<ComponentPush>,
}

/// What a revocation did.
#[derive(Debug, Clone, Serialize)]
pub struct UnauthorizeReport {
    pub authorizer_appid: String,
    pub event: Option<ComponentPush>,
}

/// Text the sandbox puts in a CDATA section: the client reads one section per field.
fn check_cdata(name: &str, value: &str, max: usize) -> Result<(), String> {
    if value.contains("]]>") {
        return Err(format!("{name} must not contain ]]>"));
    }
    if value.chars().count() > max {
        return Err(format!("{name} must be at most {max} characters"));
    }
    Ok(())
}

/// An authorisation granted under the lock, to finish outside it.
struct Granted {
    report: AuthorizeReport,
    seq: u64,
}

impl OpenState {
    fn grant(&mut self, pre_auth_code: &str, req: &AuthorizeRequest) -> Result<Granted, String> {
        let appid = req.authorizer_appid.as_str();
        if !is_appid(appid) {
            return Err("authorizer_appid must be 1 to 32 letters, digits or _".into());
        }
        if let Some(n) = &req.nickname {
            check_cdata("nickname", n, 64)?;
        }
        let func_info = req.func_info.clone().unwrap_or_else(|| DEFAULT_FUNC_INFO.to_vec());
        if func_info.is_empty() || func_info.len() > 100 || func_info.iter().any(|id| !(1..=1000).contains(id)) {
            return Err("func_info must be 1 to 100 permission set ids".into());
        }
        if !self.authorizers.contains_key(appid) && self.authorizers.len() >= KEEP_AUTHORIZERS {
            return Err(format!("the sandbox keeps at most {KEEP_AUTHORIZERS} mini-programs"));
        }
        let now = Instant::now();
        let pre = self.pre_auth.get_mut(pre_auth_code).ok_or("the pre-auth code is unknown")?;
        if pre.used {
            return Err("the pre-auth code was used already".into());
        }
        if pre.expires_at <= now {
            return Err("the pre-auth code expired".into());
        }
        pre.used = true;
        let redirect = pre.redirect_uri.clone();

        let a = self.authorizers.entry(appid.to_owned()).or_insert_with(|| Authorizer::new(appid));
        let update = a.authorized;
        a.authorized = true;
        a.refresh_token = format!("refreshtoken@@@{}", random_hex(24));
        a.func_info = func_info;
        if let Some(n) = &req.nickname {
            a.nickname.clone_from(n);
        }
        let user_name = a.user_name.clone();

        bound(&mut self.auth_codes, |c| c.expires_at, now);
        let auth_code = format!("queryauthcode@@@{}", random_hex(24));
        let expires_at = now.checked_add(Duration::from_secs(AUTH_CODE_EXPIRES_IN)).unwrap_or(now);
        self.auth_codes.insert(auth_code.clone(), AuthCode { authorizer_appid: appid.to_owned(), expires_at, used: false });

        let info_type = if update { "updateauthorized" } else { "authorized" };
        let t = self.pushes.next_create_time();
        let expired = t.saturating_add(i64::try_from(AUTH_CODE_EXPIRES_IN).unwrap_or(i64::MAX));
        let message = xml(&[
            ("AppId", Field::Text(&self.config.component_appid)),
            ("CreateTime", Field::Number(t)),
            ("InfoType", Field::Text(info_type)),
            ("AuthorizerAppid", Field::Text(appid)),
            ("AuthorizationCode", Field::Text(&auth_code)),
            ("AuthorizationCodeExpiredTime", Field::Number(expired)),
            ("PreAuthCode", Field::Text(pre_auth_code)),
        ]);
        let seq = self.new_push(info_type, Some(appid), Target::Component, t, message, !req.push.unwrap_or(true))?;
        let redirect_url = match redirect {
            Some(r) => {
                let mut url = Url::parse(&r).map_err(|_| "the redirect_uri is not a URL".to_owned())?;
                url.query_pairs_mut().append_pair("auth_code", &auth_code).append_pair("expires_in", &AUTH_CODE_EXPIRES_IN.to_string());
                Some(url.to_string())
            }
            None => None,
        };
        log::info!("sandbox platform: {appid} {info_type} the component");
        Ok(Granted {
            report: AuthorizeReport {
                pre_auth_code: pre_auth_code.to_owned(),
                authorizer_appid: appid.to_owned(),
                user_name,
                info_type: info_type.to_owned(),
                auth_code,
                redirect_url,
                callback_status: None,
                callback_body: None,
                callback_error: None,
                event: None,
            },
            seq,
        })
    }

    fn decide(&mut self, d: &AuditDecision) -> Result<(AuditReport, u64), String> {
        if let Some(r) = &d.reason {
            check_cdata("reason", r, 1_000)?;
        }
        if d.screenshots.len() > 10 || d.screenshots.iter().any(|s| s.is_empty() || s.contains('|')) {
            return Err("screenshots must be at most 10 media ids, none empty or holding |".into());
        }
        for s in &d.screenshots {
            check_cdata("screenshots", s, 128)?;
        }
        let appid = d.authorizer_appid.as_str();
        let a = self.authorizers.get_mut(appid).ok_or_else(|| format!("{appid} never authorised the component"))?;
        let audit = match d.auditid {
            Some(id) => a.code.audits.iter_mut().find(|x| x.auditid == id).ok_or_else(|| format!("{appid} has no audit {id}"))?,
            None => a
                .code
                .audits
                .iter_mut()
                .rev()
                .find(|x| matches!(x.status, AuditState::Auditing | AuditState::Delayed))
                .ok_or_else(|| format!("no audit of {appid} is running"))?,
        };
        if !matches!(audit.status, AuditState::Auditing | AuditState::Delayed) {
            return Err(format!("audit {} is {} already", audit.auditid, audit.status.name()));
        }
        let t = self.pushes.next_create_time();
        let (status, event, time_field, default_reason) = match d.result {
            AuditResult::Passed => (AuditState::Passed, "weapp_audit_success", "SuccTime", None),
            AuditResult::Rejected => (AuditState::Rejected, "weapp_audit_fail", "FailTime", Some("1:sandbox: the reviewers rejected it")),
            AuditResult::Delayed => (AuditState::Delayed, "weapp_audit_delay", "DelayTime", Some("sandbox: the audit needs more time")),
        };
        audit.status = status;
        audit.reason = default_reason.map(|r| d.reason.clone().unwrap_or_else(|| r.to_owned()));
        audit.screenshots = if status == AuditState::Rejected { d.screenshots.clone() } else { Vec::new() };
        if status != AuditState::Delayed {
            audit.decided_at = Some(t);
        }
        let (auditid, reason, screenshots) = (audit.auditid, audit.reason.clone(), audit.screenshots.clone());
        let user_name = a.user_name.clone();
        let joined = screenshots.join("|");
        let mut fields = vec![
            ("ToUserName", Field::Text(&user_name)),
            ("FromUserName", Field::Text(PLATFORM_SENDER)),
            ("CreateTime", Field::Number(t)),
            ("MsgType", Field::Text("event")),
            ("Event", Field::Text(event)),
        ];
        if let Some(r) = &reason {
            fields.push(("Reason", Field::Text(r)));
        }
        fields.push((time_field, Field::Number(t)));
        if !screenshots.is_empty() {
            fields.push(("ScreenShot", Field::Text(&joined)));
        }
        let message = xml(&fields);
        let seq = self.new_push(event, Some(appid), Target::Messages { appid, user_name: &user_name }, t, message, !d.push)?;
        log::info!("sandbox platform: audit {auditid} of {appid} {}", status.name());
        let report =
            AuditReport { authorizer_appid: appid.to_owned(), auditid, status: status.name().to_owned(), reason, screenshots, event: None };
        Ok((report, seq))
    }
}

/// The pre-auth code of an authorisation page URL, which counts as opened.
fn page_code(open: &mut OpenState, authorize_url: &str) -> Result<String, String> {
    let url = Url::parse(authorize_url).map_err(|_| "authorize_url is not a URL".to_owned())?;
    let param = |k: &str| url.query_pairs().find(|(n, _)| n == k).map(|(_, v)| v.into_owned());
    let code = param("pre_auth_code").ok_or("authorize_url has no pre_auth_code")?;
    open.open_page(param("component_appid").as_deref(), Some(&code), param("redirect_uri").as_deref(), param("auth_type").as_deref())?;
    Ok(code)
}

impl Sandbox {
    /// Plays an admin scanning the authorisation page: issues an authorisation code, follows
    /// the page's redirect `redirect_uri?auth_code=…&expires_in=3600` like the browser (when
    /// the page was opened or `authorize_url` given, unless `follow` is false) and pushes
    /// the `authorized` event (`updateauthorized` when the mini-program was authorised
    /// already) — in that order unless `event_first`. Each authorisation issues a new
    /// refresh token; the previous one stops working.
    pub async fn authorize(&self, req: AuthorizeRequest) -> Result<AuthorizeReport, String> {
        let named = [req.pre_auth_code.is_some(), req.authorize_url.is_some(), req.tenant_id.is_some()];
        if named.iter().filter(|n| **n).count() != 1 {
            return Err("name the page by one of pre_auth_code, authorize_url or tenant_id".into());
        }
        let resolved =
            match req.tenant_id {
                Some(tenant_id) => {
                    let resolver =
                        self.lock().open.resolver.clone().ok_or(
                            "the sandbox cannot tell a tenant's authorisation link by itself: pass pre_auth_code or authorize_url",
                        )?;
                    Some(resolver(tenant_id).await.ok_or_else(|| format!("tenant {tenant_id} has no authorisation link"))?)
                }
                None => None,
            };
        let granted = {
            let mut state = self.lock();
            let open = &mut state.open;
            let code = match (&req.pre_auth_code, &req.authorize_url, resolved) {
                (Some(code), _, _) => code.clone(),
                (_, Some(url), _) => page_code(open, url)?,
                (_, _, Some(link)) if link.starts_with("http://") || link.starts_with("https://") => page_code(open, &link)?,
                (_, _, Some(code)) => code,
                (None, None, None) => return Err("name the page".into()),
            };
            open.grant(&code, &req)?
        };
        let Granted { mut report, seq } = granted;
        if req.event_first.unwrap_or(false) {
            report.event = self.dispatch_push(seq).await;
        }
        if let Some(url) = report.redirect_url.clone().filter(|_| req.follow.unwrap_or(true)) {
            match self.http.get(&url).timeout(FOLLOW_TIMEOUT).send().await {
                Ok(resp) => {
                    report.callback_status = Some(resp.status().as_u16());
                    let text = resp.text().await.unwrap_or_default();
                    report.callback_body =
                        Some(serde_json::from_str(&text).unwrap_or_else(|_| Value::String(text.chars().take(KEEP_CALLBACK).collect())));
                }
                Err(e) => report.callback_error = Some(if e.is_timeout() { "timed out".into() } else { "could not connect".into() }),
            }
        }
        if !req.event_first.unwrap_or(false) {
            report.event = self.dispatch_push(seq).await;
        }
        Ok(report)
    }

    /// The reviewers decide an audit: its status changes (`get_auditstatus` tells) and the
    /// `weapp_audit_*` event goes to the mini-program's message URL, addressed to its `gh_…`
    /// — or is lost when `push` is false.
    pub async fn decide_audit(&self, decision: AuditDecision) -> Result<AuditReport, String> {
        let (mut report, seq) = self.lock().open.decide(&decision)?;
        report.event = self.dispatch_push(seq).await;
        Ok(report)
    }

    /// The admin revokes the authorisation: the mini-program's tokens stop working
    /// (40001), its refresh token gets 61003, and the `unauthorized` event is pushed (unless
    /// `push` is false).
    pub async fn unauthorize(&self, authorizer_appid: &str, push: bool) -> Result<UnauthorizeReport, String> {
        let seq = {
            let mut state = self.lock();
            let open = &mut state.open;
            let a = open
                .authorizers
                .get_mut(authorizer_appid)
                .filter(|a| a.authorized)
                .ok_or_else(|| format!("{authorizer_appid} is not authorised"))?;
            a.authorized = false;
            open.authorizer_tokens.revoke(authorizer_appid);
            let t = open.pushes.next_create_time();
            let message = xml(&[
                ("AppId", Field::Text(&open.config.component_appid)),
                ("CreateTime", Field::Number(t)),
                ("InfoType", Field::Text("unauthorized")),
                ("AuthorizerAppid", Field::Text(authorizer_appid)),
            ]);
            open.new_push("unauthorized", Some(authorizer_appid), Target::Component, t, message, !push)?
        };
        log::info!("sandbox platform: {authorizer_appid} revoked the component");
        Ok(UnauthorizeReport { authorizer_appid: authorizer_appid.to_owned(), event: self.dispatch_push(seq).await })
    }

    /// What the sandbox holds for mini-program `appid`.
    pub fn miniprogram(&self, appid: &str) -> Option<MiniProgramSnapshot> {
        self.lock().open.authorizers.get(appid).map(Authorizer::snapshot)
    }

    /// The component's audit quota, as `queryquota` answers it.
    pub fn audit_quota(&self) -> PlatformQuota {
        self.lock().open.quota
    }

    /// Sets the component's audit quota; returns it.
    pub fn set_audit_quota(&self, req: QuotaRequest) -> Result<PlatformQuota, String> {
        let mut state = self.lock();
        let quota = state.open.quota.with(req)?;
        state.open.quota = quota;
        Ok(quota)
    }

    /// The audit policy in force.
    pub fn audit_policy(&self) -> AuditPolicy {
        self.lock().open.policy.clone()
    }

    /// Decides each audit submitted from now on by `policy` (audits submitted before keep the
    /// policy of their submit); returns it.
    pub fn set_audit_policy(&self, policy: AuditPolicy) -> Result<AuditPolicy, String> {
        policy.check()?;
        self.lock().open.policy = policy.clone();
        log::info!("sandbox platform: audit policy {:?} after {} ms", policy.result, policy.after_ms);
        Ok(policy)
    }

    /// Carries out the policy's decisions, each in a task of its own after its wait, as
    /// [`Sandbox::decide_audit`] does. An audit no longer running by then (decided or
    /// withdrawn meanwhile) is left as it is. Without a Tokio runtime nothing is scheduled.
    pub(crate) fn schedule_decisions(&self, due: Vec<ScheduledDecision>) {
        if due.is_empty() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            log::warn!("sandbox platform: no runtime to decide {} audit(s) by the policy; they wait for control/audit", due.len());
            return;
        };
        for ScheduledDecision { after, decision } in due {
            let sb = self.clone();
            runtime.spawn(async move {
                if !after.is_zero() {
                    tokio::time::sleep(after).await;
                }
                let (appid, auditid) = (decision.authorizer_appid.clone(), decision.auditid.unwrap_or_default());
                match sb.decide_audit(decision).await {
                    Ok(report) => log::info!("sandbox platform: the audit policy decided audit {auditid} of {appid}: {}", report.status),
                    Err(why) => log::info!("sandbox platform: the audit policy left audit {auditid} of {appid}: {why}"),
                }
            });
        }
    }

    /// Authorises each tenant's mini-program ([`tenant_appid`]) as `control/authorize` with
    /// `tenant_id` does, one after the other. Refused without the server's resolver
    /// ([`Sandbox::resolve_tenant_links`]), for an empty list or one over
    /// [`MAX_AUTHORIZE_MANY`], and for an id that is not positive or named twice.
    pub async fn authorize_many(&self, tenant_ids: &[i64]) -> Result<AuthorizeManyReport, String> {
        if tenant_ids.is_empty() || tenant_ids.len() > MAX_AUTHORIZE_MANY {
            return Err(format!("tenant_ids must name 1 to {MAX_AUTHORIZE_MANY} tenants, not {}", tenant_ids.len()));
        }
        if let Some(id) = tenant_ids.iter().find(|id| **id <= 0) {
            return Err(format!("tenant ids are positive; {id} is not"));
        }
        let mut seen = HashSet::with_capacity(tenant_ids.len());
        if let Some(id) = tenant_ids.iter().find(|id| !seen.insert(**id)) {
            return Err(format!("tenant {id} is named twice"));
        }
        if self.lock().open.resolver.is_none() {
            return Err("the sandbox cannot tell a tenant's authorisation link by itself: it needs the server's resolver".into());
        }
        let mut report = AuthorizeManyReport::default();
        for &tenant_id in tenant_ids {
            let authorizer_appid = tenant_appid(tenant_id);
            let req = AuthorizeRequest { tenant_id: Some(tenant_id), authorizer_appid: authorizer_appid.clone(), ..Default::default() };
            match self.authorize(req).await.map(|r| atrium_missed(&r)) {
                Ok(None) => report.authorized.push(AuthorizedTenant { tenant_id, authorizer_appid }),
                Ok(Some(reason)) | Err(reason) => report.failed.push(FailedTenant { tenant_id, reason }),
            }
        }
        log::info!("sandbox platform: authorised {} tenants, {} failed", report.authorized.len(), report.failed.len());
        Ok(report)
    }

    /// Mounts the control calls of the audit quota, the audit policy and many tenants'
    /// authorisation on `cfg` — `POST control/quota`, `control/audit-policy` and
    /// `control/authorize-many` — where [`Sandbox::configure`] mounts the others.
    pub fn configure_settings_controls(&self, cfg: &mut web::ServiceConfig) {
        cfg.app_data(web::Data::new(self.clone()))
            .route("/control/quota", web::post().to(control_quota))
            .route("/control/audit-policy", web::post().to(control_audit_policy))
            .route("/control/authorize-many", web::post().to(control_authorize_many));
    }
}

/// A control call's JSON body, or a message naming what the call takes.
fn control_body<T: DeserializeOwned>(body: &[u8], takes: &str) -> Result<T, String> {
    serde_json::from_slice(body).map_err(|e| format!("{takes}: {e}"))
}

pub(crate) async fn control_quota(sb: web::Data<Sandbox>, body: web::Bytes) -> HttpResponse {
    let takes = r#"quota takes {"rest": 0 to 1000000, "limit"?, "speedup_rest"?, "speedup_limit"?}"#;
    match control_body::<QuotaRequest>(&body, takes).and_then(|req| sb.set_audit_quota(req)) {
        Ok(quota) => HttpResponse::Ok().json(quota),
        Err(msg) => bad_control(msg),
    }
}

pub(crate) async fn control_audit_policy(sb: web::Data<Sandbox>, body: web::Bytes) -> HttpResponse {
    let takes = r#"audit-policy takes {"result": "passed" | "rejected" | "delayed" | "manual", "after_ms"?: 0 to 86400000, "reject_appids"?: ["wx…"], "reason"?}"#;
    match control_body::<AuditPolicy>(&body, takes).and_then(|policy| sb.set_audit_policy(policy)) {
        Ok(policy) => HttpResponse::Ok().json(policy),
        Err(msg) => bad_control(msg),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AuthorizeManyRequest {
    tenant_ids: Vec<i64>,
}

pub(crate) async fn control_authorize_many(sb: web::Data<Sandbox>, body: web::Bytes) -> HttpResponse {
    let takes = r#"authorize-many takes {"tenant_ids": [1 to 5000 positive tenant ids]}"#;
    let req = match control_body::<AuthorizeManyRequest>(&body, takes) {
        Ok(r) => r,
        Err(msg) => return bad_control(msg),
    };
    match sb.authorize_many(&req.tenant_ids).await {
        Ok(report) => HttpResponse::Ok().json(report),
        Err(msg) => bad_control(msg),
    }
}

pub(crate) async fn control_authorize(sb: web::Data<Sandbox>, body: web::Json<AuthorizeRequest>) -> HttpResponse {
    match sb.authorize(body.into_inner()).await {
        Ok(report) => HttpResponse::Ok().json(report),
        Err(msg) => bad_control(msg),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct UnauthorizeRequest {
    authorizer_appid: String,
    #[serde(default = "yes")]
    push: bool,
}

pub(crate) async fn control_unauthorize(sb: web::Data<Sandbox>, body: web::Json<UnauthorizeRequest>) -> HttpResponse {
    match sb.unauthorize(&body.authorizer_appid, body.push).await {
        Ok(report) => HttpResponse::Ok().json(report),
        Err(msg) => bad_control(msg),
    }
}

pub(crate) async fn control_audit(sb: web::Data<Sandbox>, body: web::Json<AuditDecision>) -> HttpResponse {
    match sb.decide_audit(body.into_inner()).await {
        Ok(report) => HttpResponse::Ok().json(report),
        Err(msg) => bad_control(msg),
    }
}

pub(crate) async fn control_verify_ticket(sb: web::Data<Sandbox>) -> HttpResponse {
    match sb.push_verify_ticket().await {
        Ok(push) => HttpResponse::Ok().json(push),
        Err(msg) => bad_control(msg),
    }
}

#[derive(Deserialize)]
pub(crate) struct EventsQuery {
    kind: Option<String>,
    authorizer_appid: Option<String>,
}

pub(crate) async fn control_events(sb: web::Data<Sandbox>, q: web::Query<EventsQuery>) -> HttpResponse {
    HttpResponse::Ok().json(json!({"events": sb.component_pushes(q.kind.as_deref(), q.authorizer_appid.as_deref())}))
}

#[derive(Deserialize)]
pub(crate) struct MiniProgramQuery {
    appid: String,
}

pub(crate) async fn control_miniprogram(sb: web::Data<Sandbox>, q: web::Query<MiniProgramQuery>) -> HttpResponse {
    match sb.miniprogram(&q.appid) {
        Some(snapshot) => HttpResponse::Ok().json(snapshot),
        None => bad_control(format!("{} never authorised the component", q.appid)),
    }
}

pub(crate) async fn control_ci_uploads(sb: web::Data<Sandbox>) -> HttpResponse {
    let uploads: Vec<CiUpload> = sb.ci_uploads();
    HttpResponse::Ok().json(json!({"uploads": uploads}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pre_auth(sb: &Sandbox) -> String {
        let mut state = sb.lock();
        let v = state.open.create_pre_auth_code(Instant::now());
        v["pre_auth_code"].as_str().unwrap().to_owned()
    }

    fn request(code: &str) -> AuthorizeRequest {
        AuthorizeRequest { pre_auth_code: Some(code.into()), authorizer_appid: "wx_tenant1".into(), ..Default::default() }
    }

    #[tokio::test]
    async fn an_authorisation_uses_the_pre_auth_code_once_and_records_its_event() {
        let sb = Sandbox::new();
        let code = pre_auth(&sb);
        let report = sb.authorize(request(&code)).await.unwrap();
        assert_eq!((report.info_type.as_str(), report.redirect_url.as_deref()), ("authorized", None));
        assert!(report.user_name.starts_with("gh_") && report.user_name.len() == 15, "{}", report.user_name);
        let event = report.event.unwrap();
        assert_eq!(event.url, None, "no events URL configured: recorded, not sent");
        assert!(event.message.contains(&format!("<AuthorizationCode><![CDATA[{}]]>", report.auth_code)), "{}", event.message);
        assert!(event.message.contains(&format!("<PreAuthCode><![CDATA[{code}]]>")));
        assert!(sb.authorize(request(&code)).await.unwrap_err().contains("used"));

        let again = sb.authorize(request(&pre_auth(&sb))).await.unwrap();
        assert_eq!(again.info_type, "updateauthorized");
    }

    #[tokio::test]
    async fn the_page_must_be_named_once_and_a_tenant_needs_the_resolver() {
        let sb = Sandbox::new();
        let none = AuthorizeRequest { authorizer_appid: "wx1".into(), ..Default::default() };
        assert!(sb.authorize(none).await.is_err());
        let two = AuthorizeRequest { pre_auth_code: Some("a".into()), tenant_id: Some(3), ..request("a") };
        assert!(sb.authorize(two).await.is_err());
        let by_tenant = AuthorizeRequest { pre_auth_code: None, tenant_id: Some(3), ..request("") };
        assert!(sb.authorize(by_tenant.clone()).await.unwrap_err().contains("pass pre_auth_code or authorize_url"));

        let code = pre_auth(&sb);
        let config = sb.component();
        let link = format!(
            "http://h/sandbox/mp/cgi-bin/componentloginpage?component_appid={}&pre_auth_code={}&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcb%3Fstate%3Ds1&auth_type=2",
            config.component_appid,
            url::form_urlencoded::byte_serialize(code.as_bytes()).collect::<String>()
        );
        sb.resolve_tenant_links(std::sync::Arc::new(move |tenant| {
            let link = link.clone();
            Box::pin(async move { (tenant == 3).then_some(link) })
        }));
        let report = sb.authorize(AuthorizeRequest { follow: Some(false), ..by_tenant.clone() }).await.unwrap();
        let redirect = report.redirect_url.unwrap();
        assert!(redirect.starts_with("http://127.0.0.1:9/cb?state=s1&auth_code=queryauthcode%40%40%40"), "{redirect}");
        assert!(redirect.ends_with("&expires_in=3600"));
        assert_eq!(report.callback_status, None);
        let other = AuthorizeRequest { tenant_id: Some(4), ..by_tenant };
        assert!(sb.authorize(other).await.unwrap_err().contains("tenant 4"));
    }

    #[tokio::test]
    async fn a_page_for_another_component_or_with_a_bad_redirect_is_refused() {
        let sb = Sandbox::new();
        let code = pre_auth(&sb);
        let mut state = sb.lock();
        assert!(state.open.open_page(Some("wx_other"), Some(&code), Some("http://a/cb"), Some("2")).is_err());
        assert!(state.open.open_page(Some(crate::SANDBOX_COMPONENT_APPID), Some(&code), Some("/cb"), Some("2")).is_err());
        assert!(state.open.open_page(Some(crate::SANDBOX_COMPONENT_APPID), Some(&code), Some("http://a/cb"), Some("9")).is_err());
        assert!(state.open.open_page(Some(crate::SANDBOX_COMPONENT_APPID), Some("nope"), Some("http://a/cb"), None).is_err());
        assert!(state.open.open_page(Some(crate::SANDBOX_COMPONENT_APPID), Some(&code), Some("http://a/cb"), Some("2")).is_ok());
    }

    #[tokio::test]
    async fn audit_decisions_need_a_running_audit_and_build_the_platforms_message() {
        let sb = Sandbox::new();
        sb.authorize(request(&pre_auth(&sb))).await.unwrap();
        let decision = |result, push| AuditDecision {
            authorizer_appid: "wx_tenant1".into(),
            auditid: None,
            result,
            reason: Some("1:名称不符".into()),
            screenshots: vec!["m1".into(), "m2".into()],
            push,
        };
        assert!(sb.decide_audit(decision(AuditResult::Passed, true)).await.unwrap_err().contains("no audit"));
        {
            let mut state = sb.lock();
            let a = state.open.authorizers.get_mut("wx_tenant1").unwrap();
            a.code.audits.push(super::super::code::tests_support::audit(7));
        }
        let delayed = sb.decide_audit(decision(AuditResult::Delayed, true)).await.unwrap();
        assert_eq!((delayed.status.as_str(), delayed.screenshots.len()), ("delayed", 0));
        let rejected = sb.decide_audit(decision(AuditResult::Rejected, false)).await.unwrap();
        let event = rejected.event.unwrap();
        assert!(event.lost);
        assert!(
            event.message.contains("<Event><![CDATA[weapp_audit_fail]]></Event><Reason><![CDATA[1:名称不符]]></Reason><FailTime>"),
            "{}",
            event.message
        );
        assert!(event.message.contains("<ScreenShot><![CDATA[m1|m2]]></ScreenShot>"), "{}", event.message);
        assert!(sb.decide_audit(decision(AuditResult::Passed, true)).await.is_err(), "decided already");
        let mut bad = decision(AuditResult::Rejected, true);
        bad.reason = Some("x]]>y".into());
        assert!(sb.decide_audit(bad).await.unwrap_err().contains("]]>"));
    }
}

#[cfg(test)]
mod settings_tests {
    use super::super::{Reply, serve};
    use super::*;
    use actix_web::HttpRequest;
    use std::sync::Mutex;

    fn pre_auth(sb: &Sandbox) -> String {
        let v = sb.lock().open.create_pre_auth_code(Instant::now());
        v["pre_auth_code"].as_str().unwrap().to_owned()
    }

    /// `appid` authorised; an authorizer token of it.
    async fn authorised(sb: &Sandbox, appid: &str) -> String {
        let req = AuthorizeRequest { pre_auth_code: Some(pre_auth(sb)), authorizer_appid: appid.into(), ..Default::default() };
        sb.authorize(req).await.unwrap();
        sb.lock().open.authorizer_tokens.issue(appid, Instant::now())
    }

    fn wxa(sb: &Sandbox, path: &str, token: &str, body: Value) -> Value {
        let method = if body.is_null() { "GET" } else { "POST" };
        let raw = if body.is_null() { String::new() } else { body.to_string() };
        match sb.open_call(path, method, &format!("access_token={token}"), raw.as_bytes()) {
            Reply::Json(v) => v,
            Reply::Jpeg => panic!("a JPEG from {path}"),
        }
    }

    /// Commits `version` and submits it; the audit id.
    fn submitted(sb: &Sandbox, token: &str, version: &str) -> i64 {
        let commit = json!({"template_id": 1, "ext_json": "{}", "user_version": version, "user_desc": "d"});
        assert_eq!(wxa(sb, super::super::COMMIT_PATH, token, commit)["errcode"], 0);
        let v = wxa(sb, super::super::SUBMIT_PATH, token, json!({}));
        v["auditid"].as_i64().unwrap_or_else(|| panic!("{v}"))
    }

    /// Waits until `cond` holds, at most 10 s.
    async fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !cond() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    fn status(sb: &Sandbox, appid: &str, auditid: i64) -> String {
        sb.miniprogram(appid).and_then(|m| m.audits.into_iter().find(|a| a.auditid == auditid)).map(|a| a.status).unwrap_or_default()
    }

    fn delivered(sb: &Sandbox, kind: &str, appid: &str) -> Option<ComponentPush> {
        sb.component_pushes(Some(kind), Some(appid)).into_iter().find(|p| p.delivered)
    }

    /// Atrium's URLs: every push taken; the message URL records which mini-program it was for.
    async fn taken(req: HttpRequest, seen: web::Data<Mutex<Vec<String>>>) -> HttpResponse {
        seen.lock().unwrap().push(req.match_info().get("appid").unwrap_or("component").to_owned());
        HttpResponse::Ok().body("success")
    }

    #[tokio::test]
    async fn the_policy_decides_new_audits_after_its_wait_and_pushes_their_events() {
        let sb = Sandbox::new();
        let seen = web::Data::new(Mutex::new(Vec::<String>::new()));
        let s = seen.clone();
        let served = serve::start(&sb, move |c| {
            c.app_data(s.clone())
                .route(super::super::ATRIUM_EVENTS_PATH, web::post().to(taken))
                .route("/api/v1/miniprogram/component/messages/{appid}", web::post().to(taken));
        });
        sb.push_events_to(&served.origin).unwrap();
        sb.set_push_retry_delays(Vec::new());
        let (a, b) = (authorised(&sb, "wx_tenant1").await, authorised(&sb, "wx_tenant2").await);
        let policy = AuditPolicy {
            result: PolicyResult::Passed,
            after_ms: 150,
            reject_appids: vec!["wx_tenant2".into()],
            reason: Some("1:名称不符".into()),
        };
        assert_eq!(sb.set_audit_policy(policy.clone()), Ok(policy));

        let (first, second) = (submitted(&sb, &a, "1.0.0"), submitted(&sb, &b, "1.0.0"));

        assert_eq!(status(&sb, "wx_tenant1", first), "auditing", "not before its wait");
        wait_for("both audits decided", || status(&sb, "wx_tenant1", first) == "passed" && status(&sb, "wx_tenant2", second) == "rejected")
            .await;
        wait_for("both events taken", || {
            delivered(&sb, "weapp_audit_success", "wx_tenant1").is_some() && delivered(&sb, "weapp_audit_fail", "wx_tenant2").is_some()
        })
        .await;
        let fail = delivered(&sb, "weapp_audit_fail", "wx_tenant2").unwrap();
        assert!(fail.message.contains("<Reason><![CDATA[1:名称不符]]></Reason>"), "{}", fail.message);
        let messages: Vec<String> = seen.lock().unwrap().iter().filter(|s| s.starts_with("wx_")).cloned().collect();
        assert_eq!(messages.len(), 2, "{messages:?}");
        let audit = sb.miniprogram("wx_tenant2").unwrap().audits.remove(0);
        assert_eq!(audit.reason.as_deref(), Some("1:名称不符"));
        served.stop().await;
    }

    #[tokio::test]
    async fn a_policy_decision_needs_no_listening_atrium_and_spares_a_withdrawn_audit() {
        let sb = Sandbox::new();
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let origin = format!("http://{}", closed.local_addr().unwrap());
        drop(closed);
        let token = authorised(&sb, "wx_tenant1").await;
        sb.push_events_to(&origin).unwrap();
        sb.set_push_retry_delays(Vec::new());
        sb.set_audit_policy(AuditPolicy { result: PolicyResult::Passed, ..Default::default() }).unwrap();

        let auditid = submitted(&sb, &token, "1.0.0");

        wait_for("the audit passed", || status(&sb, "wx_tenant1", auditid) == "passed").await;
        wait_for("the push tried", || {
            sb.component_pushes(Some("weapp_audit_success"), Some("wx_tenant1")).first().is_some_and(|p| !p.attempts.is_empty())
        })
        .await;
        let push = sb.component_pushes(Some("weapp_audit_success"), Some("wx_tenant1")).remove(0);
        assert_eq!((push.delivered, push.attempts[0].error.as_deref()), (false, Some("could not connect")));

        // Withdrawn before its time: the policy leaves it withdrawn.
        sb.set_audit_policy(AuditPolicy { result: PolicyResult::Rejected, after_ms: 50, ..Default::default() }).unwrap();
        let later = submitted(&sb, &token, "1.0.1");
        assert_eq!(wxa(&sb, super::super::UNDO_PATH, &token, Value::Null)["errcode"], 0);
        let third = submitted(&sb, &token, "1.0.2");
        wait_for("the next audit rejected", || status(&sb, "wx_tenant1", third) == "rejected").await;
        assert_eq!(status(&sb, "wx_tenant1", later), "withdrawn");
        assert_eq!(sb.audit_quota().rest, 97, "three audits spent, the withdrawal gave none back");
    }

    #[test]
    fn policies_are_checked_and_reject_appids_win_even_over_manual() {
        let manual = AuditPolicy { reject_appids: vec!["wx_bad".into()], reason: Some("why".into()), ..Default::default() };
        assert!(manual.decision_for("wx_good", 1).is_none());
        let rejected = manual.decision_for("wx_bad", 7).unwrap();
        assert_eq!(
            (rejected.decision.result, rejected.decision.auditid, rejected.decision.reason.as_deref(), rejected.decision.push),
            (AuditResult::Rejected, Some(7), Some("why"), true)
        );
        let passed = AuditPolicy { result: PolicyResult::Passed, after_ms: 20, ..manual.clone() }.decision_for("wx_good", 2).unwrap();
        assert_eq!((passed.decision.result, passed.decision.reason, passed.after), (AuditResult::Passed, None, Duration::from_millis(20)));

        let sb = Sandbox::new();
        assert_eq!(sb.audit_policy(), AuditPolicy::default());
        for bad in [
            AuditPolicy { after_ms: MAX_POLICY_AFTER_MS + 1, ..Default::default() },
            AuditPolicy { reject_appids: vec!["wx bad".into()], ..Default::default() },
            AuditPolicy { reason: Some("a]]>b".into()), ..Default::default() },
        ] {
            assert!(sb.set_audit_policy(bad).is_err());
        }
        assert_eq!(sb.audit_policy(), AuditPolicy::default());
    }

    #[tokio::test]
    async fn many_tenants_are_authorised_in_turn_and_the_list_is_checked() {
        let sb = Sandbox::new();
        assert!(sb.authorize_many(&[]).await.unwrap_err().contains("1 to 5000"));
        let too_many: Vec<i64> = (1..=i64::try_from(MAX_AUTHORIZE_MANY).unwrap() + 1).collect();
        assert!(sb.authorize_many(&too_many).await.unwrap_err().contains("not 5001"));
        assert!(sb.authorize_many(&[1, 0]).await.unwrap_err().contains("0 is not"));
        assert!(sb.authorize_many(&[1, -3]).await.unwrap_err().contains("-3 is not"));
        assert!(sb.authorize_many(&[1, 2, 1]).await.unwrap_err().contains("tenant 1 is named twice"));
        assert!(sb.authorize_many(&[1]).await.unwrap_err().contains("resolver"));

        let codes: std::collections::HashMap<i64, String> = [(1, pre_auth(&sb)), (2, pre_auth(&sb))].into();
        sb.resolve_tenant_links(std::sync::Arc::new(move |tenant| {
            let code = codes.get(&tenant).cloned();
            Box::pin(async move { code })
        }));
        let report = sb.authorize_many(&[2, 3, 1]).await.unwrap();

        assert_eq!(
            report.authorized,
            [
                AuthorizedTenant { tenant_id: 2, authorizer_appid: "wxsandbox000000002".into() },
                AuthorizedTenant { tenant_id: 1, authorizer_appid: "wxsandbox000000001".into() },
            ]
        );
        assert_eq!(report.failed.len(), 1);
        assert_eq!(report.failed[0].tenant_id, 3);
        assert!(report.failed[0].reason.contains("tenant 3 has no authorisation link"), "{:?}", report.failed);
        assert!(sb.miniprogram("wxsandbox000000001").is_some_and(|m| m.authorized));
        assert_eq!(tenant_appid(42).len(), 18);
        assert!(super::super::is_appid(&tenant_appid(i64::MAX)));
        // Each link is used once: the same tenants again fail, one by one.
        let again = sb.authorize_many(&[1, 2]).await.unwrap();
        assert_eq!((again.authorized.len(), again.failed.len()), (0, 2));
    }

    #[tokio::test]
    async fn the_control_routes_answer_400_with_a_message_for_bad_input() {
        let sb = Sandbox::new();
        let sbc = sb.clone();
        let served = serve::start(&sb, move |c| {
            let sb = sbc.clone();
            c.service(web::scope("/settings").configure(move |c| sb.configure_settings_controls(c)));
        });
        let http = reqwest::Client::new();
        let post = |path: &str, body: &str| {
            http.post(format!("{}/settings/control/{path}", served.origin))
                .header("Content-Type", "application/json")
                .body(body.to_owned())
                .send()
        };
        let answer = |r: reqwest::Response| async move { (r.status().as_u16(), r.json::<Value>().await.unwrap_or(Value::Null)) };

        let (status, quota) = answer(post("quota", r#"{"rest": 0, "speedup_rest": 1}"#).await.unwrap()).await;
        assert_eq!((status, quota), (200, json!({"rest": 0, "limit": 100, "speedup_rest": 1, "speedup_limit": 10})));
        assert_eq!(sb.audit_quota().rest, 0);
        let (status, policy) = answer(post("audit-policy", r#"{"result": "delayed", "after_ms": 5}"#).await.unwrap()).await;
        assert_eq!((status, policy), (200, json!({"result": "delayed", "after_ms": 5, "reject_appids": [], "reason": null})));
        for (path, body, says) in [
            ("quota", r#"{"rest": -1}"#, "rest must be 0 to"),
            ("quota", r#"{"rest": "x"}"#, "quota takes"),
            ("quota", r#"{"rest": 1, "limt": 2}"#, "unknown field"),
            ("quota", "", "quota takes"),
            ("audit-policy", r#"{"result": "maybe"}"#, "unknown variant"),
            ("audit-policy", r#"{"after_ms": 5}"#, "missing field `result`"),
            ("audit-policy", r#"{"result": "passed", "after_ms": -5}"#, "audit-policy takes"),
            ("authorize-many", r#"{"tenant_ids": []}"#, "1 to 5000"),
            ("authorize-many", r#"{"tenant_ids": [1, 1]}"#, "named twice"),
            ("authorize-many", r#"{"tenant_ids": [1]}"#, "resolver"),
            ("authorize-many", r#"{"tenant_ids": "1"}"#, "authorize-many takes"),
            ("authorize-many", "[1]", "authorize-many takes"),
        ] {
            let (status, body) = answer(post(path, body).await.unwrap()).await;
            assert_eq!(status, 400, "{path} {body}");
            assert!(body["message"].as_str().is_some_and(|m| m.contains(says)), "{path}: {body}");
        }
        assert_eq!(sb.audit_policy().result, PolicyResult::Delayed, "a refused policy changes nothing");
        served.stop().await;
    }
}
