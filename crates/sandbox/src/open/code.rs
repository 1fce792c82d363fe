//! Code management: the component's template library (drafts and templates) and, per
//! authorised mini-program, the committed (trial) version, its audits, the live version, the
//! gray release plan and the versions a rollback can go to — with the platform's rules and
//! errcodes:
//!
//! - `commit`: the template must be in the library (85014), `ext_json` a JSON object in a
//!   string (85013);
//! - `submit_audit`: nothing committed → 85086; an audit still running → 85009; the
//!   component's audit quota spent → 85085 (see `settings.rs`); an accepted audit is decided
//!   by the audit policy when it is not `manual` (`control/audit-policy`);
//! - `speedupaudit` and `undocodeaudit` (withdrawn: status 3), and the settings calls
//!   (domains, privacy, categories, quota) are in `settings.rs`;
//! - `release` and `grayrelease` take the newest audit: none, or already released → 85019;
//!   not passed → 85020; a gray percentage outside 1–100 → 85081, not above the running
//!   plan's → 85082;
//! - `revertcoderelease`: while a gray release runs → 87011; nothing (or not that version) to
//!   go back to → 87012; `action=get_history_version` lists up to five earlier versions;
//! - `getgrayreleaseplan` without a live version or a plan → 85079;
//! - `get_qrcode`: nothing committed → 85086, a path with spaces, a leading `/` or over 1024
//!   bytes → 40097; otherwise the JPEG.
use chrono::Utc;
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};

use super::settings::{self, CategoryView, DomainsView, PlatformQuota, PrivacyView, Settings};
use super::{CODE_MANAGEMENT_FUNC, OpenState, Reply, err, ok, text};

const KEEP_DRAFTS: usize = 1_000;
/// The platform's cap on a component's template library.
const MAX_TEMPLATES: usize = 200;
const KEEP_AUDITS: usize = 100;
/// Earlier versions a rollback can go to.
const KEEP_HISTORY: usize = 5;

pub(crate) const GRAY_RUNNING: i64 = 1;
const GRAY_DONE: i64 = 3;
const GRAY_DELETED: i64 = 4;

#[derive(Debug, Clone)]
struct Draft {
    draft_id: i64,
    user_version: String,
    user_desc: String,
    create_time: i64,
}

#[derive(Debug, Clone)]
struct TemplateEntry {
    template_id: i64,
    draft_id: Option<i64>,
    user_version: String,
    user_desc: String,
    create_time: i64,
}

/// The component's template library.
pub(crate) struct Library {
    drafts: VecDeque<Draft>,
    templates: Vec<TemplateEntry>,
    next_draft: i64,
    next_template: i64,
}

impl Default for Library {
    /// Templates 1 and 2, no drafts.
    fn default() -> Self {
        let now = Utc::now().timestamp();
        let template = |id: i64, version: &str| TemplateEntry {
            template_id: id,
            draft_id: None,
            user_version: version.to_owned(),
            user_desc: format!("sandbox template {id}"),
            create_time: now,
        };
        Library { drafts: VecDeque::new(), templates: vec![template(1, "1.0.0"), template(2, "1.1.0")], next_draft: 1, next_template: 3 }
    }
}

impl Library {
    /// Adds a draft (an upload to the template-development mini-program); returns its id.
    pub(crate) fn add_draft(&mut self, user_version: &str, user_desc: &str) -> i64 {
        if self.drafts.len() >= KEEP_DRAFTS {
            self.drafts.pop_front();
        }
        let draft_id = self.next_draft;
        self.next_draft += 1;
        self.drafts.push_back(Draft {
            draft_id,
            user_version: user_version.to_owned(),
            user_desc: user_desc.to_owned(),
            create_time: Utc::now().timestamp(),
        });
        draft_id
    }
}

#[derive(Debug, Clone)]
struct Committed {
    template_id: i64,
    ext_json: String,
    user_version: String,
    user_desc: String,
    at: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AuditState {
    Auditing,
    Delayed,
    Passed,
    Rejected,
    /// Withdrawn by `undocodeaudit`.
    Withdrawn,
}

impl AuditState {
    /// `get_auditstatus`'s code: 0 passed, 1 rejected, 2 auditing, 3 withdrawn, 4 delayed.
    fn code(self) -> i64 {
        match self {
            AuditState::Passed => 0,
            AuditState::Rejected => 1,
            AuditState::Auditing => 2,
            AuditState::Withdrawn => 3,
            AuditState::Delayed => 4,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            AuditState::Passed => "passed",
            AuditState::Rejected => "rejected",
            AuditState::Auditing => "auditing",
            AuditState::Delayed => "delayed",
            AuditState::Withdrawn => "withdrawn",
        }
    }

    pub(crate) fn running(self) -> bool {
        matches!(self, AuditState::Auditing | AuditState::Delayed)
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Audit {
    pub(crate) auditid: i64,
    pub(crate) status: AuditState,
    pub(crate) reason: Option<String>,
    pub(crate) screenshots: Vec<String>,
    version: Committed,
    submitted_at: i64,
    pub(crate) decided_at: Option<i64>,
    released: bool,
}

#[derive(Debug, Clone)]
struct Live {
    app_version: i64,
    user_version: String,
    user_desc: String,
    at: i64,
}

#[derive(Debug, Clone)]
struct Gray {
    status: i64,
    percentage: u8,
    created: i64,
    auditid: i64,
}

/// One mini-program's code on the platform.
#[derive(Debug, Default)]
pub(crate) struct CodeState {
    committed: Option<Committed>,
    pub(crate) audits: Vec<Audit>,
    live: Option<Live>,
    gray: Option<Gray>,
    /// Earlier live versions, newest first.
    history: Vec<Live>,
}

impl CodeState {
    /// The newest audit if it may be released now: 85019 none or already released, 85020
    /// not passed.
    fn releasable(&self) -> Result<usize, i64> {
        let i = self.audits.len().checked_sub(1).ok_or(85019)?;
        let audit = &self.audits[i];
        if audit.released {
            return Err(85019);
        }
        if audit.status != AuditState::Passed {
            return Err(85020);
        }
        Ok(i)
    }

    fn gray_running(&self) -> Option<&Gray> {
        self.gray.as_ref().filter(|g| g.status == GRAY_RUNNING)
    }
}

/// A mini-program authorised (or once authorised) to the component.
#[derive(Debug)]
pub(crate) struct Authorizer {
    pub(crate) appid: String,
    /// `gh_` and 12 hex digits, derived from the appid.
    pub(crate) user_name: String,
    pub(crate) nickname: String,
    pub(crate) refresh_token: String,
    pub(crate) func_info: Vec<i64>,
    /// False once the admin revoked it.
    pub(crate) authorized: bool,
    pub(crate) code: CodeState,
    /// Domains, privacy settings, categories.
    pub(crate) settings: Settings,
}

impl Authorizer {
    pub(crate) fn new(appid: &str) -> Self {
        Authorizer {
            appid: appid.to_owned(),
            user_name: format!("gh_{}", &hex::encode(openssl::sha::sha1(appid.as_bytes()))[..12]),
            nickname: format!("Sandbox {appid}"),
            refresh_token: String::new(),
            func_info: Vec::new(),
            authorized: false,
            code: CodeState::default(),
            settings: Settings::default(),
        }
    }
}

/// The committed (trial) version as the snapshot shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommittedView {
    pub template_id: i64,
    pub ext_json: String,
    pub user_version: String,
    pub user_desc: String,
    pub time: i64,
}

/// An audit as the snapshot shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditView {
    pub auditid: i64,
    /// `auditing`, `delayed`, `passed`, `rejected` or `withdrawn`.
    pub status: String,
    pub reason: Option<String>,
    pub screenshots: Vec<String>,
    pub user_version: String,
    pub submitted_at: i64,
    pub decided_at: Option<i64>,
    pub released: bool,
}

/// A live or earlier version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VersionView {
    pub app_version: i64,
    pub user_version: String,
    pub user_desc: String,
    pub time: i64,
}

/// The gray release plan: status 1 running, 3 done, 4 deleted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GrayView {
    pub status: i64,
    pub gray_percentage: u8,
    pub create_timestamp: i64,
    pub auditid: i64,
}

/// What the sandbox holds for one mini-program: `GET {prefix}/control/miniprogram?appid=` and
/// [`crate::Sandbox::miniprogram`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MiniProgramSnapshot {
    pub authorizer_appid: String,
    pub user_name: String,
    pub nickname: String,
    pub authorized: bool,
    pub func_info: Vec<i64>,
    pub committed: Option<CommittedView>,
    /// Oldest first.
    pub audits: Vec<AuditView>,
    pub live: Option<VersionView>,
    pub gray: Option<GrayView>,
    /// Newest first.
    pub history: Vec<VersionView>,
    /// Server and web-view domains.
    pub domains: DomainsView,
    /// The privacy settings, once set.
    pub privacy: Option<PrivacyView>,
    /// The service categories.
    pub categories: Vec<CategoryView>,
}

fn version_view(v: &Live) -> VersionView {
    VersionView { app_version: v.app_version, user_version: v.user_version.clone(), user_desc: v.user_desc.clone(), time: v.at }
}

impl Authorizer {
    pub(crate) fn snapshot(&self) -> MiniProgramSnapshot {
        let code = &self.code;
        MiniProgramSnapshot {
            authorizer_appid: self.appid.clone(),
            user_name: self.user_name.clone(),
            nickname: self.nickname.clone(),
            authorized: self.authorized,
            func_info: self.func_info.clone(),
            committed: code.committed.as_ref().map(|c| CommittedView {
                template_id: c.template_id,
                ext_json: c.ext_json.clone(),
                user_version: c.user_version.clone(),
                user_desc: c.user_desc.clone(),
                time: c.at,
            }),
            audits: code
                .audits
                .iter()
                .map(|a| AuditView {
                    auditid: a.auditid,
                    status: a.status.name().to_owned(),
                    reason: a.reason.clone(),
                    screenshots: a.screenshots.clone(),
                    user_version: a.version.user_version.clone(),
                    submitted_at: a.submitted_at,
                    decided_at: a.decided_at,
                    released: a.released,
                })
                .collect(),
            live: code.live.as_ref().map(version_view),
            gray: code.gray.as_ref().map(|g| GrayView {
                status: g.status,
                gray_percentage: g.percentage,
                create_timestamp: g.created,
                auditid: g.auditid,
            }),
            history: code.history.iter().map(version_view).collect(),
            domains: self.settings.domains.clone(),
            privacy: self.settings.privacy.clone(),
            categories: self.settings.categories.clone(),
        }
    }
}

/// An optional string field: absent or null → `None`; not a string → 47003.
fn opt_text<'a>(body: &'a Value, key: &str) -> Result<Option<&'a str>, i64> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(47003),
    }
}

impl OpenState {
    /// The template library, called with the component token.
    pub(super) fn library_call(&mut self, path: &str, body: &Value) -> Value {
        let lib = &mut self.library;
        match path {
            super::DRAFTS_PATH => {
                let list: Vec<Value> = lib
                    .drafts
                    .iter()
                    .map(|d| {
                        json!({"create_time": d.create_time, "user_version": d.user_version, "user_desc": d.user_desc, "draft_id": d.draft_id})
                    })
                    .collect();
                ok(json!({"draft_list": list}))
            }
            super::ADD_TEMPLATE_PATH => {
                let Some(draft_id) = body.get("draft_id").and_then(Value::as_i64) else { return err(47001) };
                if body.get("template_type").is_some_and(|t| !matches!(t.as_i64(), Some(0 | 1))) {
                    return err(47003);
                }
                let Some(draft) = lib.drafts.iter().find(|d| d.draft_id == draft_id).cloned() else { return err(85064) };
                if lib.templates.len() >= MAX_TEMPLATES {
                    return err(85065);
                }
                let template_id = lib.next_template;
                lib.next_template += 1;
                lib.templates.push(TemplateEntry {
                    template_id,
                    draft_id: Some(draft_id),
                    user_version: draft.user_version,
                    user_desc: draft.user_desc,
                    create_time: Utc::now().timestamp(),
                });
                ok(json!({}))
            }
            _ => {
                let dev = self.config.template_dev_appid.clone();
                let list: Vec<Value> = lib
                    .templates
                    .iter()
                    .map(|t| {
                        json!({
                            "create_time": t.create_time,
                            "user_version": t.user_version,
                            "user_desc": t.user_desc,
                            "template_id": t.template_id,
                            "draft_id": t.draft_id,
                            "template_type": 0,
                            "source_miniprogram_appid": dev,
                            "source_miniprogram": "Sandbox template development",
                            "developer": "sandbox",
                            "category_list": [],
                        })
                    })
                    .collect();
                ok(json!({"template_list": list}))
            }
        }
    }

    /// Code management of mini-program `appid`, called with its authorizer token.
    pub(super) fn code_call(&mut self, appid: &str, path: &str, query: &HashMap<String, String>, body: &Value) -> Reply {
        let OpenState { authorizers, library, next_auditid, next_app_version, quota, policy, scheduled, .. } = self;
        let Some(a) = authorizers.get_mut(appid).filter(|a| a.authorized) else { return err(61003).into() };
        if !a.func_info.contains(&CODE_MANAGEMENT_FUNC) {
            return err(61007).into();
        }
        let now = Utc::now().timestamp();
        let code = &mut a.code;
        let answer = match path {
            super::COMMIT_PATH => commit(code, library, body, now),
            super::SUBMIT_PATH => {
                let answer = submit(code, body, now, next_auditid, quota);
                if let Some(decision) = answer.get("auditid").and_then(Value::as_i64).and_then(|id| policy.decision_for(appid, id)) {
                    scheduled.push(decision);
                }
                answer
            }
            super::SPEEDUP_PATH => speedup(code, body, quota),
            super::UNDO_PATH => undo(code, now),
            super::QUOTA_PATH => quota.json(),
            super::MODIFY_DOMAIN_PATH => settings::modify_domain(&mut a.settings.domains, body),
            super::WEBVIEW_DOMAIN_PATH => settings::webview_domain(&mut a.settings.domains, body),
            super::GET_PRIVACY_PATH => settings::get_privacy(&a.settings, code.committed.is_some(), body),
            super::SET_PRIVACY_PATH => settings::set_privacy(&mut a.settings, body),
            super::CATEGORY_PATH => settings::categories(&a.settings),
            super::AUDIT_STATUS_PATH => audit_status(code, body),
            super::RELEASE_PATH => match code.releasable() {
                Ok(i) => {
                    *next_app_version += 1;
                    release(code, i, *next_app_version, now);
                    ok(json!({}))
                }
                Err(e) => err(e),
            },
            super::GRAY_PATH => gray_release(code, body, now),
            super::GRAY_PLAN_PATH => match (&code.gray, &code.live) {
                (Some(g), _) => ok(json!({"gray_release_plan": {
                    "status": g.status,
                    "create_timestamp": g.created,
                    "gray_percentage": g.percentage,
                    "support_experiencer_first": false,
                    "support_debuger_first": false,
                }})),
                (None, Some(_)) => ok(json!({"gray_release_plan": {"status": 0, "create_timestamp": 0, "gray_percentage": 0}})),
                (None, None) => err(85079),
            },
            super::REVERT_GRAY_PATH => match code.gray.as_mut().filter(|g| g.status == GRAY_RUNNING) {
                Some(g) => {
                    g.status = GRAY_DELETED;
                    g.percentage = 0;
                    ok(json!({}))
                }
                None => err(87012),
            },
            super::REVERT_PATH => revert(code, query),
            super::VERSION_INFO_PATH => {
                let mut answer = ok(json!({}));
                if let Some(c) = &code.committed {
                    answer["exp_info"] = json!({"exp_time": c.at, "exp_version": c.user_version, "exp_desc": c.user_desc});
                }
                if let Some(l) = &code.live {
                    answer["release_info"] = json!({"release_time": l.at, "release_version": l.user_version, "release_desc": l.user_desc});
                }
                answer
            }
            _ => {
                if code.committed.is_none() {
                    return err(85086).into();
                }
                let bad_path = query.get("path").is_some_and(|p| p.len() > 1024 || p.starts_with('/') || p.contains(char::is_whitespace));
                if bad_path {
                    return err(40097).into();
                }
                return Reply::Jpeg;
            }
        };
        answer.into()
    }
}

fn commit(code: &mut CodeState, library: &Library, body: &Value, now: i64) -> Value {
    let Some(template_id) = body.get("template_id").and_then(Value::as_i64) else { return err(47001) };
    if !library.templates.iter().any(|t| t.template_id == template_id) {
        return err(85014);
    }
    let ext_json = match body.get("ext_json") {
        None | Some(Value::Null) => "{}".to_owned(),
        Some(Value::String(s)) if serde_json::from_str::<Value>(s).is_ok_and(|v| v.is_object()) => s.clone(),
        Some(_) => return err(85013),
    };
    let user_version = match text(body, "user_version") {
        Some(v) if v.chars().count() <= 64 => v.to_owned(),
        _ => return err(47003),
    };
    let user_desc = match opt_text(body, "user_desc") {
        Ok(d) if d.is_none_or(|d| d.chars().count() <= 1024) => d.unwrap_or_default().to_owned(),
        _ => return err(47003),
    };
    code.committed = Some(Committed { template_id, ext_json, user_version, user_desc, at: now });
    ok(json!({}))
}

fn submit(code: &mut CodeState, body: &Value, now: i64, next_auditid: &mut i64, quota: &mut PlatformQuota) -> Value {
    let well_formed = opt_text(body, "version_desc").is_ok_and(|d| d.is_none_or(|d| d.chars().count() <= 200))
        && match body.get("item_list") {
            None | Some(Value::Null) => true,
            Some(Value::Array(items)) => items.len() <= 5 && items.iter().all(Value::is_object),
            Some(_) => false,
        }
        && body.get("privacy_api_not_use").is_none_or(|p| p.is_boolean() || p.is_null());
    if !well_formed {
        return err(47003);
    }
    if code.audits.iter().any(|a| a.status.running()) {
        return err(85009);
    }
    let Some(version) = code.committed.clone() else { return err(85086) };
    if quota.rest <= 0 {
        return err(85085);
    }
    quota.rest -= 1;
    if code.audits.len() >= KEEP_AUDITS {
        code.audits.remove(0);
    }
    *next_auditid += 1;
    let auditid = *next_auditid;
    code.audits.push(Audit {
        auditid,
        status: AuditState::Auditing,
        reason: None,
        screenshots: Vec::new(),
        version,
        submitted_at: now,
        decided_at: None,
        released: false,
    });
    ok(json!({"auditid": auditid}))
}

/// `speedupaudit`: the audit must be the mini-program's and running (85021); spends a
/// speed-up (none left: 87013).
fn speedup(code: &CodeState, body: &Value, quota: &mut PlatformQuota) -> Value {
    let Some(auditid) = body.get("auditid").and_then(Value::as_i64) else { return err(47001) };
    if !code.audits.iter().any(|a| a.auditid == auditid && a.status.running()) {
        return err(85021);
    }
    if quota.speedup_rest <= 0 {
        return err(87013);
    }
    quota.speedup_rest -= 1;
    ok(json!({}))
}

/// `undocodeaudit`: withdraws the running audit (none: 85012); the quota unit it spent is
/// not given back.
fn undo(code: &mut CodeState, now: i64) -> Value {
    let Some(audit) = code.audits.iter_mut().rev().find(|a| a.status.running()) else { return err(85012) };
    audit.status = AuditState::Withdrawn;
    audit.reason = None;
    audit.decided_at = Some(now);
    ok(json!({}))
}

fn audit_status(code: &CodeState, body: &Value) -> Value {
    let Some(auditid) = body.get("auditid").and_then(Value::as_i64) else { return err(47001) };
    let Some(a) = code.audits.iter().find(|a| a.auditid == auditid) else { return err(85012) };
    let mut answer = ok(json!({
        "status": a.status.code(),
        "user_version": a.version.user_version,
        "user_desc": a.version.user_desc,
        "submit_audit_time": a.submitted_at,
    }));
    if let Some(r) = &a.reason {
        answer["reason"] = json!(r);
    }
    if !a.screenshots.is_empty() {
        answer["screenshot"] = json!(a.screenshots.join("|"));
    }
    answer
}

/// Releases audit `i` to everyone: the live version moves to the history, a running gray
/// plan is done.
fn release(code: &mut CodeState, i: usize, app_version: i64, now: i64) {
    let audit = &mut code.audits[i];
    audit.released = true;
    let v = audit.version.clone();
    if let Some(previous) = code.live.take() {
        code.history.insert(0, previous);
        code.history.truncate(KEEP_HISTORY);
    }
    code.live = Some(Live { app_version, user_version: v.user_version, user_desc: v.user_desc, at: now });
    if let Some(g) = code.gray.as_mut().filter(|g| g.status == GRAY_RUNNING) {
        g.status = GRAY_DONE;
        g.percentage = 100;
    }
}

fn gray_release(code: &mut CodeState, body: &Value, now: i64) -> Value {
    let Some(percentage) = body.get("gray_percentage").and_then(Value::as_i64).filter(|p| (1..=100).contains(p)) else {
        return err(85081);
    };
    let percentage = u8::try_from(percentage).unwrap_or(100);
    let i = match code.releasable() {
        Ok(i) => i,
        Err(e) => return err(e),
    };
    let auditid = code.audits[i].auditid;
    match code.gray.as_mut().filter(|g| g.status == GRAY_RUNNING && g.auditid == auditid) {
        Some(g) if percentage <= g.percentage => return err(85082),
        Some(g) => g.percentage = percentage,
        None => code.gray = Some(Gray { status: GRAY_RUNNING, percentage, created: now, auditid }),
    }
    ok(json!({}))
}

fn revert(code: &mut CodeState, query: &HashMap<String, String>) -> Value {
    if query.get("action").is_some_and(|a| a == "get_history_version") {
        let list: Vec<Value> = code
            .history
            .iter()
            .map(|v| json!({"app_version": v.app_version, "user_version": v.user_version, "user_desc": v.user_desc, "commit_time": v.at}))
            .collect();
        return ok(json!({"version_list": list}));
    }
    if code.gray_running().is_some() {
        return err(87011);
    }
    let wanted = match query.get("app_version").filter(|v| !v.is_empty()) {
        None => None,
        Some(v) => match v.parse::<i64>() {
            Ok(n) => Some(n),
            Err(_) => return err(47003),
        },
    };
    let i = match wanted {
        None if code.history.is_empty() => return err(87012),
        None => 0,
        Some(n) => match code.history.iter().position(|v| v.app_version == n) {
            Some(i) => i,
            None => return err(87012),
        },
    };
    // The versions newer than the target, and the live one, cannot be gone back to: a
    // reverted version is not rolled back to again.
    let target = code.history.remove(i);
    code.history.drain(..i);
    code.live = Some(target);
    ok(json!({}))
}

/// What other modules' tests need to build.
#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;

    /// A running audit of version 1.0.0.
    pub(crate) fn audit(auditid: i64) -> Audit {
        let version = Committed { template_id: 1, ext_json: "{}".into(), user_version: "1.0.0".into(), user_desc: String::new(), at: 0 };
        Audit {
            auditid,
            status: AuditState::Auditing,
            reason: None,
            screenshots: Vec::new(),
            version,
            submitted_at: 0,
            decided_at: None,
            released: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state_with(appid: &str) -> OpenState {
        let mut s = OpenState::default();
        let mut a = Authorizer::new(appid);
        a.authorized = true;
        a.func_info = super::super::DEFAULT_FUNC_INFO.to_vec();
        s.authorizers.insert(appid.to_owned(), a);
        s
    }

    fn call(s: &mut OpenState, path: &str, body: Value) -> Value {
        call_q(s, path, body, &[])
    }

    fn call_q(s: &mut OpenState, path: &str, body: Value, q: &[(&str, &str)]) -> Value {
        let query: HashMap<String, String> = q.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        match s.code_call("wx1", path, &query, &body) {
            Reply::Json(v) => v,
            Reply::Jpeg => json!({"errcode": 0, "jpeg": true}),
        }
    }

    fn code(v: &Value) -> i64 {
        v["errcode"].as_i64().unwrap_or(0)
    }

    fn commit_v(s: &mut OpenState, version: &str) -> Value {
        call(
            s,
            super::super::COMMIT_PATH,
            json!({"template_id": 1, "ext_json": "{\"extAppid\":\"wx1\"}", "user_version": version, "user_desc": "d"}),
        )
    }

    fn submit_v(s: &mut OpenState) -> i64 {
        let v = call(s, super::super::SUBMIT_PATH, json!({}));
        v["auditid"].as_i64().unwrap_or_else(|| panic!("{v}"))
    }

    fn decide(s: &mut OpenState, status: AuditState) {
        let a = s.authorizers.get_mut("wx1").unwrap();
        a.code.audits.last_mut().unwrap().status = status;
    }

    /// Commit, audit, pass and release `version`.
    fn live(s: &mut OpenState, version: &str) {
        assert_eq!(code(&commit_v(s, version)), 0);
        submit_v(s);
        decide(s, AuditState::Passed);
        assert_eq!(code(&call(s, super::super::RELEASE_PATH, json!({}))), 0);
    }

    #[test]
    fn a_commit_needs_a_library_template_and_an_object_ext_json() {
        let mut s = state_with("wx1");
        let body = |t: i64, ext: Value| json!({"template_id": t, "ext_json": ext, "user_version": "1.0.0", "user_desc": "d"});
        assert_eq!(code(&call(&mut s, super::super::COMMIT_PATH, body(99, json!("{}")))), 85014);
        assert_eq!(code(&call(&mut s, super::super::COMMIT_PATH, body(1, json!("[1]")))), 85013);
        assert_eq!(code(&call(&mut s, super::super::COMMIT_PATH, body(1, json!("{not json")))), 85013);
        assert_eq!(code(&call(&mut s, super::super::COMMIT_PATH, body(1, json!({"a": 1})))), 85013);
        assert_eq!(code(&call(&mut s, super::super::COMMIT_PATH, json!({"template_id": 2, "user_version": ""}))), 47003);
        assert_eq!(code(&call(&mut s, super::super::COMMIT_PATH, body(2, json!("{\"a\":1}")))), 0);
        assert_eq!(s.authorizers["wx1"].snapshot().committed.unwrap().template_id, 2);
    }

    #[test]
    fn one_audit_at_a_time_and_only_of_committed_code() {
        let mut s = state_with("wx1");
        assert_eq!(code(&call(&mut s, super::super::SUBMIT_PATH, json!({}))), 85086);
        commit_v(&mut s, "1.0.0");
        let auditid = submit_v(&mut s);
        assert_eq!(code(&call(&mut s, super::super::SUBMIT_PATH, json!({}))), 85009);
        decide(&mut s, AuditState::Delayed);
        assert_eq!(code(&call(&mut s, super::super::SUBMIT_PATH, json!({}))), 85009, "a delayed audit still runs");
        let status = call(&mut s, super::super::AUDIT_STATUS_PATH, json!({"auditid": auditid}));
        assert_eq!(status["status"], 4);
        assert_eq!(code(&call(&mut s, super::super::AUDIT_STATUS_PATH, json!({"auditid": 1}))), 85012);
        decide(&mut s, AuditState::Rejected);
        assert!(submit_v(&mut s) > auditid);
        assert_eq!(code(&call(&mut s, super::super::SUBMIT_PATH, json!({"item_list": "x"}))), 47003);
    }

    #[test]
    fn release_needs_the_newest_audit_passed_and_unreleased() {
        let mut s = state_with("wx1");
        assert_eq!(code(&call(&mut s, super::super::RELEASE_PATH, json!({}))), 85019);
        commit_v(&mut s, "1.0.0");
        submit_v(&mut s);
        assert_eq!(code(&call(&mut s, super::super::RELEASE_PATH, json!({}))), 85020);
        decide(&mut s, AuditState::Passed);
        assert_eq!(code(&call(&mut s, super::super::RELEASE_PATH, json!({}))), 0);
        assert_eq!(code(&call(&mut s, super::super::RELEASE_PATH, json!({}))), 85019, "released already");
        let info = call(&mut s, super::super::VERSION_INFO_PATH, json!({}));
        assert_eq!(
            (info["release_info"]["release_version"].as_str(), info["exp_info"]["exp_version"].as_str()),
            (Some("1.0.0"), Some("1.0.0"))
        );
    }

    #[test]
    fn gray_percentages_are_1_to_100_and_only_rise_then_a_full_release_finishes_the_plan() {
        let mut s = state_with("wx1");
        assert_eq!(code(&call_q(&mut s, super::super::GRAY_PLAN_PATH, Value::Null, &[])), 85079);
        commit_v(&mut s, "1.0.0");
        submit_v(&mut s);
        assert_eq!(code(&call(&mut s, super::super::GRAY_PATH, json!({"gray_percentage": 10}))), 85020);
        decide(&mut s, AuditState::Passed);
        for bad in [json!(0), json!(101), json!("10"), json!(null)] {
            assert_eq!(code(&call(&mut s, super::super::GRAY_PATH, json!({"gray_percentage": bad}))), 85081, "{bad}");
        }
        assert_eq!(code(&call(&mut s, super::super::GRAY_PATH, json!({"gray_percentage": 10}))), 0);
        assert_eq!(code(&call(&mut s, super::super::GRAY_PATH, json!({"gray_percentage": 50}))), 0);
        assert_eq!(code(&call(&mut s, super::super::GRAY_PATH, json!({"gray_percentage": 20}))), 85082);
        assert_eq!(code(&call(&mut s, super::super::GRAY_PATH, json!({"gray_percentage": 50}))), 85082);
        let plan = call(&mut s, super::super::GRAY_PLAN_PATH, Value::Null);
        assert_eq!(
            (plan["gray_release_plan"]["status"].as_i64(), plan["gray_release_plan"]["gray_percentage"].as_i64()),
            (Some(1), Some(50))
        );
        assert_eq!(code(&call(&mut s, super::super::RELEASE_PATH, json!({}))), 0);
        let plan = call(&mut s, super::super::GRAY_PLAN_PATH, Value::Null);
        assert_eq!(plan["gray_release_plan"]["status"], 3);
    }

    #[test]
    fn a_reverted_gray_plan_may_start_again_lower() {
        let mut s = state_with("wx1");
        assert_eq!(code(&call(&mut s, super::super::REVERT_GRAY_PATH, Value::Null)), 87012);
        commit_v(&mut s, "1.0.0");
        submit_v(&mut s);
        decide(&mut s, AuditState::Passed);
        assert_eq!(code(&call(&mut s, super::super::GRAY_PATH, json!({"gray_percentage": 30}))), 0);
        assert_eq!(code(&call(&mut s, super::super::REVERT_GRAY_PATH, Value::Null)), 0);
        assert_eq!(s.authorizers["wx1"].snapshot().gray.unwrap().status, 4);
        assert_eq!(code(&call(&mut s, super::super::GRAY_PATH, json!({"gray_percentage": 5}))), 0);
    }

    #[test]
    fn rollbacks_go_to_earlier_versions_never_during_a_gray_release() {
        let mut s = state_with("wx1");
        assert_eq!(code(&call(&mut s, super::super::REVERT_PATH, Value::Null)), 87012);
        live(&mut s, "1.0.0");
        assert_eq!(code(&call(&mut s, super::super::REVERT_PATH, Value::Null)), 87012, "nothing before the first version");
        live(&mut s, "1.1.0");
        live(&mut s, "1.2.0");
        let history = call_q(&mut s, super::super::REVERT_PATH, Value::Null, &[("action", "get_history_version")]);
        let versions: Vec<&str> = history["version_list"].as_array().unwrap().iter().map(|v| v["user_version"].as_str().unwrap()).collect();
        assert_eq!(versions, ["1.1.0", "1.0.0"]);
        let first = history["version_list"][1]["app_version"].as_i64().unwrap();

        commit_v(&mut s, "1.3.0");
        submit_v(&mut s);
        decide(&mut s, AuditState::Passed);
        assert_eq!(code(&call(&mut s, super::super::GRAY_PATH, json!({"gray_percentage": 10}))), 0);
        assert_eq!(code(&call(&mut s, super::super::REVERT_PATH, Value::Null)), 87011);
        assert_eq!(code(&call(&mut s, super::super::REVERT_GRAY_PATH, Value::Null)), 0);

        assert_eq!(code(&call_q(&mut s, super::super::REVERT_PATH, Value::Null, &[("app_version", "999")])), 87012);
        assert_eq!(code(&call_q(&mut s, super::super::REVERT_PATH, Value::Null, &[("app_version", &first.to_string())])), 0);
        let snap = s.authorizers["wx1"].snapshot();
        assert_eq!(snap.live.unwrap().user_version, "1.0.0");
        assert!(snap.history.is_empty(), "{:?}", snap.history);
    }

    #[test]
    fn the_history_keeps_five_versions() {
        let mut s = state_with("wx1");
        for i in 0..8 {
            live(&mut s, &format!("1.{i}.0"));
        }
        assert_eq!(s.authorizers["wx1"].snapshot().history.len(), KEEP_HISTORY);
    }

    #[test]
    fn the_qr_code_needs_committed_code_and_a_sane_path() {
        let mut s = state_with("wx1");
        assert_eq!(code(&call(&mut s, super::super::QRCODE_PATH, Value::Null)), 85086);
        commit_v(&mut s, "1.0.0");
        assert_eq!(call_q(&mut s, super::super::QRCODE_PATH, Value::Null, &[("path", "pages/index/index?a=1")])["jpeg"], true);
        for bad in ["/pages/index", "pages/a b", &"p".repeat(1025)] {
            assert_eq!(code(&call_q(&mut s, super::super::QRCODE_PATH, Value::Null, &[("path", bad)])), 40097, "{bad}");
        }
    }

    #[test]
    fn code_management_needs_the_permission_and_a_live_authorisation() {
        let mut s = state_with("wx1");
        s.authorizers.get_mut("wx1").unwrap().func_info = vec![17];
        assert_eq!(code(&commit_v(&mut s, "1.0.0")), 61007);
        s.authorizers.get_mut("wx1").unwrap().authorized = false;
        assert_eq!(code(&commit_v(&mut s, "1.0.0")), 61003);
    }

    #[test]
    fn each_accepted_audit_spends_the_quota_and_a_withdrawal_gives_nothing_back() {
        let mut s = state_with("wx1");
        s.quota = PlatformQuota { rest: 2, limit: 10, speedup_rest: 1, speedup_limit: 3 };
        assert_eq!(code(&call(&mut s, super::super::SUBMIT_PATH, json!({}))), 85086);
        assert_eq!(s.quota.rest, 2, "a refused submit spends nothing");
        commit_v(&mut s, "1.0.0");
        let first = submit_v(&mut s);
        assert_eq!(code(&call(&mut s, super::super::SUBMIT_PATH, json!({}))), 85009);
        let quota = call(&mut s, super::super::QUOTA_PATH, Value::Null);
        assert_eq!((quota["rest"].as_i64(), quota["limit"].as_i64(), quota["speedup_rest"].as_i64()), (Some(1), Some(10), Some(1)));

        assert_eq!(code(&call(&mut s, super::super::SPEEDUP_PATH, json!({"auditid": 1}))), 85021);
        assert_eq!(code(&call(&mut s, super::super::SPEEDUP_PATH, json!({}))), 47001);
        assert_eq!(code(&call(&mut s, super::super::SPEEDUP_PATH, json!({"auditid": first}))), 0);
        assert_eq!(code(&call(&mut s, super::super::SPEEDUP_PATH, json!({"auditid": first}))), 87013, "no speed-up left");
        assert_eq!(s.quota.speedup_rest, 0);

        assert_eq!(code(&call(&mut s, super::super::UNDO_PATH, Value::Null)), 0);
        assert_eq!(call(&mut s, super::super::AUDIT_STATUS_PATH, json!({"auditid": first}))["status"], 3);
        assert_eq!(code(&call(&mut s, super::super::UNDO_PATH, Value::Null)), 85012, "nothing running");
        assert_eq!(code(&call(&mut s, super::super::SPEEDUP_PATH, json!({"auditid": first}))), 85021, "withdrawn");
        assert_eq!(code(&call(&mut s, super::super::RELEASE_PATH, json!({}))), 85020);
        assert_eq!(s.quota.rest, 1, "the withdrawal gave nothing back");

        let second = submit_v(&mut s);
        assert!(second > first);
        assert_eq!(s.quota.rest, 0);
        decide(&mut s, AuditState::Rejected);
        assert_eq!(code(&call(&mut s, super::super::SUBMIT_PATH, json!({}))), 85085);
        assert_eq!((s.quota.rest, s.authorizers["wx1"].code.audits.len()), (0, 2), "refused at 0: nothing spent, no audit");
        let snap = s.authorizers["wx1"].snapshot();
        assert_eq!(snap.audits[0].status, "withdrawn");
    }

    #[test]
    fn settings_calls_answer_per_mini_program() {
        let mut s = state_with("wx1");
        let set = json!({"action": "set", "requestdomain": ["https://api.example.com"]});
        assert_eq!(code(&call(&mut s, super::super::MODIFY_DOMAIN_PATH, set)), 0);
        let web = json!({"action": "set", "webviewdomain": ["https://h5.example.com"]});
        assert_eq!(code(&call(&mut s, super::super::WEBVIEW_DOMAIN_PATH, web)), 0);
        let privacy = json!({"privacy_ver": 2, "owner_setting": {"contact_phone": "13800000000", "notice_method": "弹窗"}});
        assert_eq!(code(&call(&mut s, super::super::SET_PRIVACY_PATH, privacy)), 0);
        let got = call(&mut s, super::super::GET_PRIVACY_PATH, json!({"privacy_ver": 2}));
        assert_eq!((got["owner_setting"]["contact_phone"].as_str(), got["code_exist"].as_i64()), (Some("13800000000"), Some(0)));
        assert_eq!(call(&mut s, super::super::CATEGORY_PATH, Value::Null)["category_list"][0]["second_class"], "效率");
        let snap = s.authorizers["wx1"].snapshot();
        assert_eq!((snap.domains.requestdomain.len(), snap.domains.webviewdomain.len()), (1, 1));
        assert_eq!(snap.privacy.map(|p| p.owner_setting.notice_method).as_deref(), Some("弹窗"));
        assert_eq!(snap.categories.len(), 1);
        s.authorizers.get_mut("wx1").unwrap().func_info = vec![17];
        assert_eq!(code(&call(&mut s, super::super::CATEGORY_PATH, Value::Null)), 61007);
    }

    #[test]
    fn drafts_become_templates() {
        let mut s = OpenState::default();
        let draft = s.library.add_draft("2.0.0", "atrium upload task 9");
        assert_eq!(code(&s.library_call(super::super::ADD_TEMPLATE_PATH, &json!({"draft_id": 777}))), 85064);
        assert_eq!(code(&s.library_call(super::super::ADD_TEMPLATE_PATH, &json!({"draft_id": draft, "template_type": 0}))), 0);
        let list = s.library_call(super::super::TEMPLATES_PATH, &Value::Null);
        let ids: Vec<i64> = list["template_list"].as_array().unwrap().iter().map(|t| t["template_id"].as_i64().unwrap()).collect();
        assert_eq!(ids, [1, 2, 3]);
        assert_eq!(list["template_list"][2]["user_desc"], "atrium upload task 9");
        let drafts = s.library_call(super::super::DRAFTS_PATH, &Value::Null);
        assert_eq!(drafts["draft_list"][0]["draft_id"], draft);
    }
}
