//! What a mini-program is set up with besides its code — its server and web-view domains, its
//! privacy settings, its service categories — and the audit quota the component shares across
//! its mini-programs, with the platform's rules and errcodes:
//!
//! - `POST /wxa/modify_domain {action, requestdomain, wsrequestdomain, uploaddomain,
//!   downloaddomain}` and `POST /wxa/setwebviewdomain {action, webviewdomain}`: `action` is
//!   `get`, `set` (replaces every list, a list left out becomes empty), `add` or `delete`
//!   (only the lists given); another action → 40097; a list that is not an array of strings →
//!   47001; an entry that is not `https://` and a host name (`wss://` too for
//!   `wsrequestdomain`; no IP address, port, path or query) → 85017, as is an `add` or
//!   `delete` naming no list; more than 200 entries in a server list (100 web-view domains) →
//!   85016. Entries are kept in lower case, each once. Every action answers the lists.
//! - `POST /cgi-bin/component/getprivacysetting {privacy_ver}` and `setprivacysetting
//!   {privacy_ver, owner_setting, setting_list}`, with the authorizer token despite their
//!   path: `privacy_ver` must be 2 (left out it is 2) → else 40097; `owner_setting` needs
//!   `notice_method` and at least one contact (`contact_email`, `contact_phone`,
//!   `contact_weixin`, `contact_qq`), `setting_list` at most 100 items of a `privacy_key`
//!   (letters and digits, each key once) and a `privacy_text`; anything else → 40097. Before
//!   any setting the answer has empty contacts and an empty list, as on the platform.
//! - `GET /wxa/get_category` → `category_list`: a new mini-program has one category, 工具 (1) >
//!   效率 (2).
//! - `GET /wxa/queryquota` → `{rest, limit, speedup_rest, speedup_limit}`, the component's
//!   quota (100 audits and 10 speed-ups to start with): each accepted `submit_audit` spends one
//!   `rest` (none left → 85085, nothing spent); `POST /wxa/speedupaudit {auditid}` needs that
//!   audit of the mini-program running (else 85021) and spends one `speedup_rest` (none left →
//!   87013); `GET /wxa/undocodeaudit` withdraws the running audit (status 3; none running →
//!   85012) and gives nothing back.
use chrono::Utc;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{err, ok};

/// Entries a server domain list holds at most.
const MAX_SERVER_DOMAINS: usize = 200;
/// Web-view domains at most.
const MAX_WEBVIEW_DOMAINS: usize = 100;
const MAX_PRIVACY_ITEMS: usize = 100;
const MAX_CONTACT_CHARS: usize = 128;
const MAX_NOTICE_CHARS: usize = 200;
const MAX_PRIVACY_TEXT_CHARS: usize = 500;
const MAX_PRIVACY_KEY_CHARS: usize = 64;
/// The largest quota `control/quota` sets.
pub(crate) const MAX_QUOTA: i64 = 1_000_000;

/// A mini-program's domains, as `control/miniprogram` shows them: `https://` (or `wss://`)
/// host names in lower case.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DomainsView {
    /// `wx.request`.
    pub requestdomain: Vec<String>,
    /// `wx.connectSocket`.
    pub wsrequestdomain: Vec<String>,
    /// `wx.uploadFile`.
    pub uploaddomain: Vec<String>,
    /// `wx.downloadFile`.
    pub downloaddomain: Vec<String>,
    /// The `web-view` component (`setwebviewdomain`).
    pub webviewdomain: Vec<String>,
}

/// The privacy contact and how users are told of changes; an unset contact is empty, as the
/// platform writes it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PrivacyOwnerView {
    /// A contact e-mail address.
    pub contact_email: String,
    /// A contact phone number.
    pub contact_phone: String,
    /// A contact Weixin id.
    pub contact_weixin: String,
    /// A contact QQ number.
    pub contact_qq: String,
    /// How users are told of changes.
    pub notice_method: String,
}

/// One kind of user data collected, and what for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PrivacyItemView {
    /// The platform's key, e.g. `UserInfo`.
    pub privacy_key: String,
    /// What it is used for.
    pub privacy_text: String,
}

/// A mini-program's privacy settings, once set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PrivacyView {
    /// The privacy contact.
    pub owner_setting: PrivacyOwnerView,
    /// The data collected.
    pub setting_list: Vec<PrivacyItemView>,
    /// When they were set (Unix seconds).
    pub update_time: i64,
}

/// A service category set on a mini-program.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CategoryView {
    /// The first-level category's id.
    pub first_id: i64,
    /// Its name.
    pub first_class: String,
    /// The second-level category's id.
    pub second_id: i64,
    /// Its name.
    pub second_class: String,
}

/// The component's audit quota (`queryquota`, `control/quota`, [`crate::Sandbox::audit_quota`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PlatformQuota {
    /// Audits that may still be submitted.
    pub rest: i64,
    /// Audits allowed.
    pub limit: i64,
    /// Speed-ups left.
    pub speedup_rest: i64,
    /// Speed-ups allowed.
    pub speedup_limit: i64,
}

impl Default for PlatformQuota {
    /// 100 audits, 10 speed-ups.
    fn default() -> Self {
        PlatformQuota { rest: 100, limit: 100, speedup_rest: 10, speedup_limit: 10 }
    }
}

/// `POST {prefix}/control/quota` and [`crate::Sandbox::set_audit_quota`]: what is left and,
/// when given, what is allowed. A limit not given stays, or rises to what is left.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuotaRequest {
    /// Audits that may still be submitted (0 to 1,000,000).
    pub rest: i64,
    /// Audits allowed; at least `rest`.
    pub limit: Option<i64>,
    /// Speed-ups left.
    pub speedup_rest: Option<i64>,
    /// Speed-ups allowed; at least `speedup_rest`.
    pub speedup_limit: Option<i64>,
}

impl PlatformQuota {
    /// The quota after `req`, or why it is refused.
    pub(crate) fn with(self, req: QuotaRequest) -> Result<PlatformQuota, String> {
        let in_range = |name: &str, v: i64| {
            if (0..=MAX_QUOTA).contains(&v) { Ok(v) } else { Err(format!("{name} must be 0 to {MAX_QUOTA}")) }
        };
        let rest = in_range("rest", req.rest)?;
        let limit = match req.limit {
            Some(l) => in_range("limit", l)?,
            None => self.limit.max(rest),
        };
        let speedup_rest = in_range("speedup_rest", req.speedup_rest.unwrap_or(self.speedup_rest))?;
        let speedup_limit = match req.speedup_limit {
            Some(l) => in_range("speedup_limit", l)?,
            None => self.speedup_limit.max(speedup_rest),
        };
        if rest > limit {
            return Err(format!("rest ({rest}) must not exceed limit ({limit})"));
        }
        if speedup_rest > speedup_limit {
            return Err(format!("speedup_rest ({speedup_rest}) must not exceed speedup_limit ({speedup_limit})"));
        }
        Ok(PlatformQuota { rest, limit, speedup_rest, speedup_limit })
    }

    pub(crate) fn json(&self) -> Value {
        ok(json!({"rest": self.rest, "limit": self.limit, "speedup_rest": self.speedup_rest, "speedup_limit": self.speedup_limit}))
    }
}

/// What a mini-program is set up with besides its code.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) domains: DomainsView,
    pub(crate) privacy: Option<PrivacyView>,
    pub(crate) categories: Vec<CategoryView>,
}

impl Default for Settings {
    /// No domains, no privacy settings, the category 工具 > 效率.
    fn default() -> Self {
        Settings {
            domains: DomainsView::default(),
            privacy: None,
            categories: vec![CategoryView { first_id: 1, first_class: "工具".into(), second_id: 2, second_class: "效率".into() }],
        }
    }
}

/// Whether `host` is a host name: dot-separated labels of letters, digits and `-` (not at
/// either end), at least two, the last holding a letter (so no IP address).
fn is_host_name(host: &str) -> bool {
    let labels: Vec<&str> = host.split('.').collect();
    host.len() <= 253
        && labels.len() >= 2
        && labels.iter().all(|l| {
            (1..=63).contains(&l.len())
                && l.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
        && labels.last().is_some_and(|l| l.bytes().any(|b| b.is_ascii_lowercase()))
}

/// The entry in lower case if it is `https://` and a host name (or `wss://` when `ws`).
fn domain_entry(entry: &str, ws: bool) -> Option<String> {
    let lower = entry.to_ascii_lowercase();
    let host = lower.strip_prefix("https://").or_else(|| if ws { lower.strip_prefix("wss://") } else { None })?;
    is_host_name(host).then_some(lower)
}

/// A domain list of a request: `None` when left out; 47001 when not an array of strings,
/// 85017 for an entry that is not a domain. Each entry once, in the order given.
fn domain_list(body: &Value, key: &str, ws: bool) -> Result<Option<Vec<String>>, i64> {
    let items = match body.get(key) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(47001),
    };
    let mut out: Vec<String> = Vec::with_capacity(items.len().min(MAX_SERVER_DOMAINS));
    for item in items {
        let entry = item.as_str().ok_or(47001)?;
        let domain = domain_entry(entry, ws).ok_or(85017)?;
        if !out.contains(&domain) {
            out.push(domain);
        }
    }
    Ok(Some(out))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum DomainAction {
    Get,
    Set,
    Add,
    Delete,
}

fn domain_action(body: &Value) -> Result<DomainAction, i64> {
    match body.get("action").and_then(Value::as_str) {
        Some("get") => Ok(DomainAction::Get),
        Some("set") => Ok(DomainAction::Set),
        Some("add") => Ok(DomainAction::Add),
        Some("delete") => Ok(DomainAction::Delete),
        _ => Err(40097),
    }
}

/// `current` after `action` with `given`.
fn apply(action: DomainAction, current: &[String], given: Option<Vec<String>>) -> Vec<String> {
    match (action, given) {
        (DomainAction::Set, given) => given.unwrap_or_default(),
        (DomainAction::Add, Some(given)) => {
            let mut out = current.to_vec();
            for d in given {
                if !out.contains(&d) {
                    out.push(d);
                }
            }
            out
        }
        (DomainAction::Delete, Some(given)) => current.iter().filter(|d| !given.contains(d)).cloned().collect(),
        (_, _) => current.to_vec(),
    }
}

fn server_lists(d: &DomainsView) -> Value {
    ok(json!({
        "requestdomain": d.requestdomain,
        "wsrequestdomain": d.wsrequestdomain,
        "uploaddomain": d.uploaddomain,
        "downloaddomain": d.downloaddomain,
    }))
}

/// `modify_domain`.
pub(crate) fn modify_domain(d: &mut DomainsView, body: &Value) -> Value {
    let action = match domain_action(body) {
        Ok(a) => a,
        Err(code) => return err(code),
    };
    if action == DomainAction::Get {
        return server_lists(d);
    }
    let mut given = Vec::with_capacity(4);
    for (key, ws) in [("requestdomain", false), ("wsrequestdomain", true), ("uploaddomain", false), ("downloaddomain", false)] {
        match domain_list(body, key, ws) {
            Ok(list) => given.push(list),
            Err(code) => return err(code),
        }
    }
    if action != DomainAction::Set && given.iter().all(Option::is_none) {
        return err(85017);
    }
    let mut lists = given.into_iter();
    let mut next = |current: &[String]| apply(action, current, lists.next().flatten());
    let new = DomainsView {
        requestdomain: next(&d.requestdomain),
        wsrequestdomain: next(&d.wsrequestdomain),
        uploaddomain: next(&d.uploaddomain),
        downloaddomain: next(&d.downloaddomain),
        webviewdomain: d.webviewdomain.clone(),
    };
    if [&new.requestdomain, &new.wsrequestdomain, &new.uploaddomain, &new.downloaddomain].iter().any(|l| l.len() > MAX_SERVER_DOMAINS) {
        return err(85016);
    }
    *d = new;
    server_lists(d)
}

/// `setwebviewdomain`.
pub(crate) fn webview_domain(d: &mut DomainsView, body: &Value) -> Value {
    let action = match domain_action(body) {
        Ok(a) => a,
        Err(code) => return err(code),
    };
    if action != DomainAction::Get {
        let given = match domain_list(body, "webviewdomain", false) {
            Ok(g) => g,
            Err(code) => return err(code),
        };
        if action != DomainAction::Set && given.is_none() {
            return err(85017);
        }
        let new = apply(action, &d.webviewdomain, given);
        if new.len() > MAX_WEBVIEW_DOMAINS {
            return err(85016);
        }
        d.webviewdomain = new;
    }
    ok(json!({"webviewdomain": d.webviewdomain}))
}

/// `privacy_ver`: left out it is 2; anything but 2 → 40097.
fn privacy_ver(body: &Value) -> Result<(), i64> {
    match body.get("privacy_ver") {
        None | Some(Value::Null) => Ok(()),
        Some(v) if v.as_i64() == Some(2) => Ok(()),
        Some(_) => Err(40097),
    }
}

/// What the platform calls each privacy key, for the keys it lists.
fn privacy_label(key: &str) -> &str {
    match key {
        "UserInfo" => "用户信息（微信昵称、头像）",
        "Location" => "位置信息",
        "Address" => "地址",
        "Invoice" => "发票信息",
        "RunData" => "微信运动数据",
        "Record" => "麦克风",
        "Album" => "选中的照片或视频信息",
        "Camera" => "摄像头",
        "PhoneNumber" => "手机号码",
        "Contact" => "通讯录（仅写入）权限",
        "DeviceInfo" => "设备信息",
        "EXIDNumber" => "身份证号码",
        "EXOrderInfo" => "订单信息",
        "EXUserPublishContent" => "发布内容",
        "EXUserFollowAcct" => "所关注账号",
        "EXUserOpLog" => "操作日志",
        "AlbumWriteOnly" => "相册（仅写入）权限",
        "LicensePlate" => "车牌号",
        "BlueTooth" => "蓝牙",
        "CalendarWriteOnly" => "日历（仅写入）权限",
        "Email" => "邮箱",
        "MessageFile" => "选中的文件",
        "ChooseLocation" => "选择的位置信息",
        "Clipboard" => "剪切板",
        other => other,
    }
}

/// `getprivacysetting`; `code_exist` tells whether code was committed.
pub(crate) fn get_privacy(s: &Settings, code_exist: bool, body: &Value) -> Value {
    if let Err(code) = privacy_ver(body) {
        return err(code);
    }
    let empty = PrivacyView { owner_setting: PrivacyOwnerView::default(), setting_list: Vec::new(), update_time: 0 };
    let p = s.privacy.as_ref().unwrap_or(&empty);
    let o = &p.owner_setting;
    let list: Vec<Value> = p
        .setting_list
        .iter()
        .map(|i| json!({"privacy_key": i.privacy_key, "privacy_text": i.privacy_text, "privacy_label": privacy_label(&i.privacy_key)}))
        .collect();
    let desc: Vec<Value> =
        p.setting_list.iter().map(|i| json!({"privacy_key": i.privacy_key, "privacy_desc": privacy_label(&i.privacy_key)})).collect();
    ok(json!({
        "code_exist": i32::from(code_exist),
        "privacy_list": p.setting_list.iter().map(|i| i.privacy_key.as_str()).collect::<Vec<_>>(),
        "setting_list": list,
        "update_time": p.update_time,
        "owner_setting": {
            "contact_email": o.contact_email,
            "contact_phone": o.contact_phone,
            "contact_qq": o.contact_qq,
            "contact_weixin": o.contact_weixin,
            "store_expire_timestamp": "",
            "ext_file_media_id": "",
            "notice_method": o.notice_method,
        },
        "privacy_desc": {"privacy_desc_list": desc},
    }))
}

/// A string field of at most `max` characters: left out or null → empty.
fn short_text(obj: &Value, key: &str, max: usize) -> Result<String, i64> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) if s.chars().count() <= max => Ok(s.trim().to_owned()),
        Some(_) => Err(40097),
    }
}

fn read_privacy(body: &Value) -> Result<PrivacyView, i64> {
    privacy_ver(body)?;
    let owner = body.get("owner_setting").filter(|o| o.is_object()).ok_or(40097)?;
    let owner_setting = PrivacyOwnerView {
        contact_email: short_text(owner, "contact_email", MAX_CONTACT_CHARS)?,
        contact_phone: short_text(owner, "contact_phone", MAX_CONTACT_CHARS)?,
        contact_weixin: short_text(owner, "contact_weixin", MAX_CONTACT_CHARS)?,
        contact_qq: short_text(owner, "contact_qq", MAX_CONTACT_CHARS)?,
        notice_method: short_text(owner, "notice_method", MAX_NOTICE_CHARS)?,
    };
    let o = &owner_setting;
    let contacts = [&o.contact_email, &o.contact_phone, &o.contact_weixin, &o.contact_qq];
    if o.notice_method.is_empty() || contacts.iter().all(|c| c.is_empty()) {
        return Err(40097);
    }
    let items = match body.get("setting_list") {
        None | Some(Value::Null) => &Vec::new(),
        Some(Value::Array(items)) if items.len() <= MAX_PRIVACY_ITEMS => items,
        Some(_) => return Err(40097),
    };
    let mut setting_list: Vec<PrivacyItemView> = Vec::with_capacity(items.len());
    for item in items {
        let key = short_text(item, "privacy_key", MAX_PRIVACY_KEY_CHARS)?;
        let text = short_text(item, "privacy_text", MAX_PRIVACY_TEXT_CHARS)?;
        let key_ok = !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric());
        if !key_ok || text.is_empty() || setting_list.iter().any(|i| i.privacy_key == key) {
            return Err(40097);
        }
        setting_list.push(PrivacyItemView { privacy_key: key, privacy_text: text });
    }
    Ok(PrivacyView { owner_setting, setting_list, update_time: Utc::now().timestamp() })
}

/// `setprivacysetting`: replaces the settings, or leaves them when refused.
pub(crate) fn set_privacy(s: &mut Settings, body: &Value) -> Value {
    match read_privacy(body) {
        Ok(p) => {
            s.privacy = Some(p);
            ok(json!({}))
        }
        Err(code) => err(code),
    }
}

/// `get_category`.
pub(crate) fn categories(s: &Settings) -> Value {
    let list: Vec<Value> = s
        .categories
        .iter()
        .map(|c| json!({"first_class": c.first_class, "second_class": c.second_class, "first_id": c.first_id, "second_id": c.second_id}))
        .collect();
    ok(json!({"category_list": list}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(v: &Value) -> i64 {
        v["errcode"].as_i64().unwrap_or(0)
    }

    #[test]
    fn domain_entries_are_https_host_names_and_wss_for_sockets() {
        for good in ["https://api.example.com", "HTTPS://API.Example.com", "https://a-1.b2.cn"] {
            assert!(domain_entry(good, false).is_some(), "{good}");
        }
        assert_eq!(domain_entry("https://API.example.com", false).as_deref(), Some("https://api.example.com"));
        assert!(domain_entry("wss://ws.example.com", true).is_some());
        for bad in [
            "wss://ws.example.com",
            "http://api.example.com",
            "api.example.com",
            "https://",
            "https://localhost",
            "https://10.0.0.1",
            "https://api.example.com:8443",
            "https://api.example.com/v1",
            "https://api.example.com?a=1",
            "https://-a.example.com",
            "https://a..example.com",
            "https://api.example.com.",
            "https://a b.com",
        ] {
            assert!(domain_entry(bad, false).is_none(), "{bad}");
        }
    }

    #[test]
    fn domains_are_got_set_added_and_deleted() {
        let mut d = DomainsView::default();
        let set = json!({"action": "set", "requestdomain": ["https://a.example.com", "https://A.example.com"], "wsrequestdomain": ["wss://ws.example.com"]});
        assert_eq!(code(&modify_domain(&mut d, &set)), 0);
        assert_eq!(d.requestdomain, ["https://a.example.com"], "kept once, in lower case");
        let add = json!({"action": "add", "requestdomain": ["https://b.example.com"], "uploaddomain": ["https://up.example.com"]});
        let answer = modify_domain(&mut d, &add);
        assert_eq!(answer["requestdomain"], json!(["https://a.example.com", "https://b.example.com"]));
        assert_eq!(answer["wsrequestdomain"], json!(["wss://ws.example.com"]), "a list left out of an add stays");
        let delete = json!({"action": "delete", "requestdomain": ["https://a.example.com", "https://never.example.com"]});
        assert_eq!(modify_domain(&mut d, &delete)["requestdomain"], json!(["https://b.example.com"]));
        let got = modify_domain(&mut d, &json!({"action": "get"}));
        assert_eq!(got["uploaddomain"], json!(["https://up.example.com"]));
        assert_eq!(got["downloaddomain"], json!([]));

        let before = d.clone();
        assert_eq!(
            code(&modify_domain(&mut d, &json!({"action": "set", "requestdomain": ["https://ok.example.com", "ftp://x.com"]}))),
            85017
        );
        assert_eq!(code(&modify_domain(&mut d, &json!({"action": "add"}))), 85017);
        assert_eq!(code(&modify_domain(&mut d, &json!({"action": "set", "requestdomain": "https://a.example.com"}))), 47001);
        assert_eq!(code(&modify_domain(&mut d, &json!({"action": "set", "requestdomain": [1]}))), 47001);
        assert_eq!(code(&modify_domain(&mut d, &json!({"action": "replace"}))), 40097);
        assert_eq!(code(&modify_domain(&mut d, &json!({}))), 40097);
        let many: Vec<String> = (0..=MAX_SERVER_DOMAINS).map(|i| format!("https://h{i}.example.com")).collect();
        assert_eq!(code(&modify_domain(&mut d, &json!({"action": "set", "requestdomain": many}))), 85016);
        assert_eq!(d, before, "a refused call changes nothing");

        assert_eq!(code(&modify_domain(&mut d, &json!({"action": "set"}))), 0);
        assert_eq!(d.requestdomain.len() + d.wsrequestdomain.len() + d.uploaddomain.len(), 0, "set replaces every list");
    }

    #[test]
    fn web_view_domains_take_https_only() {
        let mut d = DomainsView::default();
        let set = json!({"action": "set", "webviewdomain": ["https://h5.example.com"]});
        assert_eq!(webview_domain(&mut d, &set)["webviewdomain"], json!(["https://h5.example.com"]));
        assert_eq!(code(&webview_domain(&mut d, &json!({"action": "add", "webviewdomain": ["wss://h5.example.com"]}))), 85017);
        assert_eq!(code(&webview_domain(&mut d, &json!({"action": "add", "webviewdomain": ["https://m.example.com"]}))), 0);
        assert_eq!(code(&webview_domain(&mut d, &json!({"action": "delete", "webviewdomain": ["https://h5.example.com"]}))), 0);
        assert_eq!(webview_domain(&mut d, &json!({"action": "get"}))["webviewdomain"], json!(["https://m.example.com"]));
        assert_eq!(code(&webview_domain(&mut d, &json!({"action": "nope"}))), 40097);
        assert!(d.requestdomain.is_empty());
    }

    #[test]
    fn privacy_settings_round_trip_and_need_version_2_a_contact_and_a_notice_method() {
        let mut s = Settings::default();
        let empty = get_privacy(&s, false, &json!({"privacy_ver": 2}));
        assert_eq!((empty["owner_setting"]["contact_email"].as_str(), empty["setting_list"].as_array().map(Vec::len)), (Some(""), Some(0)));
        let body = json!({
            "privacy_ver": 2,
            "owner_setting": {"contact_email": "dpo@example.com", "notice_method": "弹窗", "ext_file_media_id": ""},
            "setting_list": [{"privacy_key": "UserInfo", "privacy_text": "登录"}, {"privacy_key": "Location", "privacy_text": "附近门店"}],
        });
        assert_eq!(code(&set_privacy(&mut s, &body)), 0);
        let got = get_privacy(&s, true, &json!({"privacy_ver": 2}));
        assert_eq!(got["owner_setting"]["contact_email"], "dpo@example.com");
        assert_eq!(got["owner_setting"]["contact_phone"], "");
        assert_eq!(got["owner_setting"]["notice_method"], "弹窗");
        assert_eq!(
            got["setting_list"][0],
            json!({"privacy_key": "UserInfo", "privacy_text": "登录", "privacy_label": "用户信息（微信昵称、头像）"})
        );
        assert_eq!((got["code_exist"].as_i64(), got["privacy_list"][1].as_str()), (Some(1), Some("Location")));
        assert_eq!(code(&get_privacy(&s, true, &json!({}))), 0, "privacy_ver defaults to 2");

        let with = |k: &str, v: Value| {
            let mut b = body.clone();
            b[k] = v;
            b
        };
        let refused = [
            with("privacy_ver", json!(1)),
            with("privacy_ver", json!("2")),
            with("owner_setting", json!({"notice_method": "弹窗"})),
            with("owner_setting", json!({"contact_qq": "12345"})),
            with("owner_setting", json!("x")),
            with("setting_list", json!([{"privacy_key": "UserInfo"}])),
            with("setting_list", json!([{"privacy_key": "User Info", "privacy_text": "t"}])),
            with("setting_list", json!([{"privacy_key": "A", "privacy_text": "t"}, {"privacy_key": "A", "privacy_text": "u"}])),
            with("setting_list", json!({"privacy_key": "A"})),
        ];
        let kept = s.privacy.clone();
        for b in refused {
            assert_eq!(code(&set_privacy(&mut s, &b)), 40097, "{b}");
        }
        assert_eq!(s.privacy, kept);
        assert_eq!(code(&get_privacy(&s, true, &json!({"privacy_ver": 1}))), 40097);
    }

    #[test]
    fn a_new_mini_program_has_one_category_and_quotas_are_checked() {
        let list = categories(&Settings::default());
        assert_eq!(list["category_list"], json!([{"first_class": "工具", "second_class": "效率", "first_id": 1, "second_id": 2}]));

        let q = PlatformQuota::default();
        assert_eq!(q.with(QuotaRequest { rest: 3, ..Default::default() }), Ok(PlatformQuota { rest: 3, ..q }));
        assert_eq!(q.with(QuotaRequest { rest: 500, ..Default::default() }).map(|q| q.limit), Ok(500), "the limit rises to rest");
        assert!(q.with(QuotaRequest { rest: 5, limit: Some(4), ..Default::default() }).unwrap_err().contains("must not exceed"));
        assert!(q.with(QuotaRequest { rest: -1, ..Default::default() }).unwrap_err().contains("rest must be 0 to"));
        assert!(q.with(QuotaRequest { rest: 1, speedup_rest: Some(MAX_QUOTA + 1), ..Default::default() }).is_err());
        let speedups = q.with(QuotaRequest { rest: 1, speedup_rest: Some(20), ..Default::default() }).unwrap();
        assert_eq!((speedups.speedup_rest, speedups.speedup_limit), (20, 20));
    }
}
