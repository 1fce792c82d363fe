//! Before a release: a mini-program's server domains and privacy settings (a third-party
//! release does not carry them over), the platform's audit quota, and the pre-flight check of
//! everything an audit needs: [`PreflightService`].
use super::authorization::AuthorizationService;
use super::platform::{TaskRef, logged};
use crate::api::*;
use crate::model::*;
use crate::ports::{MiniProgramPlatform, PlatformError};
use atrium_kernel::{Actor, Clock, Error, FieldError, Id, Party, Reason, Result, Text, Timestamp};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long an audit quota read from the platform is taken as still true.
pub const QUOTA_CACHE: Duration = Duration::from_secs(60);
/// The funcscope category of code management ("development management"), which uploads,
/// audits and releases need.
pub const CODE_MANAGEMENT: i64 = 18;
/// At most this many entries in one domain list.
pub const MAX_DOMAINS: usize = 100;
/// The longest domain entry, scheme included: `https://` and a 253-character host.
pub const MAX_DOMAIN_CHARS: usize = 261;
/// At most this many kinds of user data in the privacy settings.
const MAX_PRIVACY_ITEMS: usize = 100;
/// The longest privacy text or notice method, in characters.
pub const MAX_PRIVACY_TEXT: usize = 200;
/// The longest privacy contact (e-mail, phone, Weixin id, QQ number), in characters: the
/// platform's limit.
pub const MAX_PRIVACY_CONTACT: usize = 128;

/// Domains, privacy settings, the audit quota and the pre-flight check of a tenant's
/// mini-program, acting through the [`AuthorizationService`]. Every platform call is logged
/// with its errcode, and its failure is a domain error, never a 500.
pub struct PreflightService {
    authorization: Arc<AuthorizationService>,
    platform: Arc<dyn MiniProgramPlatform>,
    clock: Arc<dyn Clock>,
    /// The last quota the platform reported, and when.
    quota: Mutex<Option<(Timestamp, AuditQuota)>>,
}

impl PreflightService {
    /// A service over the authorisation service, the platform and a clock.
    pub fn new(authorization: Arc<AuthorizationService>, platform: Arc<dyn MiniProgramPlatform>, clock: Arc<dyn Clock>) -> Self {
        PreflightService { authorization, platform, clock, quota: Mutex::new(None) }
    }

    /// `GET /miniprogram/domains`.
    pub async fn domains(&self, actor: &Actor, tenant_id: Option<Id>) -> Result<DomainsView> {
        let tenant = self.authorization.tenant(actor, tenant_id).await?;
        let access = self.authorization.access(tenant.id).await?;
        let r = logged(tenant.id, "modify_domain get", TaskRef::None, self.platform.domains(&access).await);
        match r {
            Ok(domains) => Ok(DomainsView { tenant_id: tenant.id, domains }),
            Err(e) => Err(self.authorization.failed(tenant.id, e).await),
        }
    }

    /// `PUT /miniprogram/domains`: checks every entry (400 naming each bad one, e.g.
    /// `requestdomain[1]`), then replaces the domains on the platform.
    pub async fn set_domains(&self, actor: &Actor, input: DomainsInput) -> Result<DomainsView> {
        let domains = input.domains();
        check_domains(&domains)?;
        let tenant = self.authorization.tenant(actor, input.tenant_id).await?;
        self.apply_domains(actor, tenant.id, &domains).await?;
        log::info!("server domains of tenant {} set by user {}", tenant.id, actor.user_id);
        Ok(DomainsView { tenant_id: tenant.id, domains })
    }

    /// Replaces the tenant's domains on the platform (already checked), by `actor`: audited
    /// (`miniprogram.domains.update`) with the domains before, as the platform told them just
    /// before the change, and after.
    pub async fn apply_domains(&self, actor: &Actor, tenant_id: Id, domains: &ServerDomains) -> Result<()> {
        let access = self.authorization.access(tenant_id).await?;
        let before = match self.platform.domains(&access).await {
            Ok(d) => serde_json::to_value(d).ok(),
            Err(e) => {
                log::warn!(
                    "tenant {tenant_id}: the server domains could not be read before their change, which is audited without them: {e}"
                );
                None
            }
        };
        let r = logged(tenant_id, "modify_domain set", TaskRef::None, self.platform.set_domains(&access, domains).await);
        match r {
            Ok(()) => {
                let after = serde_json::to_value(domains).map_err(|e| Error::internal(format!("domains as JSON: {e}")))?;
                let target = ("miniprogram_settings", tenant_id);
                self.authorization.audit(actor, tenant_id, "miniprogram.domains.update", target, before, after).await;
                Ok(())
            }
            Err(e) => Err(self.authorization.failed(tenant_id, e).await),
        }
    }

    /// `GET /miniprogram/privacy`.
    pub async fn privacy(&self, actor: &Actor, tenant_id: Option<Id>) -> Result<PrivacyView> {
        let tenant = self.authorization.tenant(actor, tenant_id).await?;
        let access = self.authorization.access(tenant.id).await?;
        let r = logged(tenant.id, "getprivacysetting", TaskRef::None, self.platform.privacy(&access).await);
        match r {
            Ok(settings) => Ok(PrivacyView { tenant_id: tenant.id, settings }),
            Err(e) => Err(self.authorization.failed(tenant.id, e).await),
        }
    }

    /// `PUT /miniprogram/privacy`: checks the settings (400 naming each bad field), then
    /// replaces them on the platform.
    pub async fn set_privacy(&self, actor: &Actor, input: PrivacyInput) -> Result<PrivacyView> {
        let settings = PrivacySettings { owner_setting: input.owner_setting, setting_list: input.setting_list };
        check_privacy(&settings)?;
        let tenant = self.authorization.tenant(actor, input.tenant_id).await?;
        self.apply_privacy(actor, tenant.id, &settings).await?;
        log::info!("privacy settings of tenant {} set by user {}", tenant.id, actor.user_id);
        Ok(PrivacyView { tenant_id: tenant.id, settings })
    }

    /// Replaces the tenant's privacy settings on the platform (already checked), by `actor`:
    /// audited (`miniprogram.privacy.update`) with the settings before, as the platform told
    /// them just before the change, and after.
    pub async fn apply_privacy(&self, actor: &Actor, tenant_id: Id, settings: &PrivacySettings) -> Result<()> {
        let access = self.authorization.access(tenant_id).await?;
        let before = match self.platform.privacy(&access).await {
            Ok(p) => serde_json::to_value(p).ok(),
            Err(e) => {
                log::warn!(
                    "tenant {tenant_id}: the privacy settings could not be read before their change, which is audited without them: {e}"
                );
                None
            }
        };
        let r = logged(tenant_id, "setprivacysetting", TaskRef::None, self.platform.set_privacy(&access, settings).await);
        match r {
            Ok(()) => {
                let after = serde_json::to_value(settings).map_err(|e| Error::internal(format!("privacy settings as JSON: {e}")))?;
                let target = ("miniprogram_settings", tenant_id);
                self.authorization.audit(actor, tenant_id, "miniprogram.privacy.update", target, before, after).await;
                Ok(())
            }
            Err(e) => Err(self.authorization.failed(tenant_id, e).await),
        }
    }

    /// `GET /miniprogram/audit/quota`: the platform's audit quota, asked now. The quota is the
    /// third-party platform's, shared by every mini-program; it is asked with the named
    /// tenant's mini-program (a tenant caller's own), or else with any authorised one in the
    /// caller's scope (409 when there is none).
    pub async fn audit_quota(&self, actor: &Actor, tenant_id: Option<Id>) -> Result<AuditQuota> {
        let (tenant_id, access) = match (actor.party, tenant_id) {
            (Party::Tenant { .. }, _) | (_, Some(_)) => {
                let tenant = self.authorization.tenant(actor, tenant_id).await?;
                (tenant.id, self.authorization.access(tenant.id).await?)
            }
            (_, None) => {
                let some = self.authorization.authorized_in_scope(actor, None, 0, 1).await?.into_iter().next().ok_or_else(|| {
                    Error::blocked(
                        Reason::MiniprogramAuthorization,
                        "tenant_id",
                        "no mini-program in your scope is authorised to the platform, and the quota is asked with one",
                    )
                })?;
                (some.tenant_id, self.authorization.access_of(some).await?)
            }
        };
        self.fresh_quota(tenant_id, &access).await
    }

    /// The platform's audit quota asked now with the tenant's mini-program, and kept as the
    /// latest.
    async fn fresh_quota(&self, tenant_id: Id, access: &AuthorizerAccess) -> Result<AuditQuota> {
        let r = logged(tenant_id, "queryquota", TaskRef::None, self.platform.audit_quota(access).await);
        match r {
            Ok(quota) => {
                *self.quota.lock().unwrap_or_else(|p| p.into_inner()) = Some((self.clock.now(), quota));
                Ok(quota)
            }
            Err(e) => Err(self.authorization.failed(tenant_id, e).await),
        }
    }

    /// The audit quota, as read less than [`QUOTA_CACHE`] ago, or asked now with the tenant's
    /// mini-program.
    pub async fn cached_quota(&self, tenant_id: Id) -> Result<AuditQuota> {
        let now = self.clock.now();
        let cached = *self.quota.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((at, quota)) = cached
            && now.signed_duration_since(at).to_std().is_ok_and(|age| age < QUOTA_CACHE)
        {
            return Ok(quota);
        }
        let access = self.authorization.access(tenant_id).await?;
        self.fresh_quota(tenant_id, &access).await
    }

    /// Forgets the cached audit quota, so the next [`cached_quota`](Self::cached_quota) asks
    /// the platform (a campaign paused for the quota resumes).
    pub fn forget_quota(&self) {
        *self.quota.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// Counts one audit submitted since the quota was read, so the cached figure does not
    /// overstate what is left.
    pub fn spend_cached_quota(&self) {
        if let Some((_, quota)) = self.quota.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            quota.rest = (quota.rest - 1).max(0);
        }
    }

    /// `GET /miniprogram/preflight`: whether the tenant's mini-program is ready for a release.
    pub async fn preflight(&self, actor: &Actor, tenant_id: Option<Id>) -> Result<PreflightView> {
        let tenant = self.authorization.tenant(actor, tenant_id).await?;
        Ok(self.check(tenant.id).await)
    }

    /// The pre-flight checks of the tenant's mini-program: authorised; code management
    /// granted; server domains set; privacy settings set; a category set; audit quota left.
    /// Each failing check says why; a platform failure fails the check it belongs to. Later
    /// checks that need the authorisation fail as not checked without it.
    pub async fn check(&self, tenant_id: Id) -> PreflightView {
        self.checks(tenant_id, true).await
    }

    /// The pre-flight checks, the audit quota among them only when `with_quota` (a campaign
    /// checks the quota itself, before each submission, and pauses when it is used up rather
    /// than failing tenants).
    pub async fn checks(&self, tenant_id: Id, with_quota: bool) -> PreflightView {
        let mut checks = Vec::with_capacity(6);
        let mut push = |name: &str, ok: bool, detail: String| checks.push(PreflightCheck { name: name.into(), ok, detail });
        let later: &[&str] = if with_quota {
            &["code_management", "domains", "privacy", "category", "audit_quota"]
        } else {
            &["code_management", "domains", "privacy", "category"]
        };
        let authorization = match self.authorization.authorized(tenant_id).await {
            Ok(a) => a,
            Err(e) => {
                push("authorized", false, e.to_string());
                for name in later {
                    push(name, false, "not checked: the mini-program is not authorised".into());
                }
                return PreflightView { tenant_id, ok: false, checks };
            }
        };
        push("authorized", true, format!("mini-program {} is authorised", authorization.authorizer_appid));
        let granted = authorization.func_info.contains(&CODE_MANAGEMENT);
        push(
            "code_management",
            granted,
            if granted {
                "code management is granted to the platform".into()
            } else {
                "code management (development management) is not granted; the admin must authorise again granting it".into()
            },
        );
        let access = match self.authorization.access_of(authorization).await {
            Ok(a) => a,
            Err(e) => {
                for name in &later[1..] {
                    push(name, false, format!("not checked: {e}"));
                }
                return PreflightView { tenant_id, ok: false, checks };
            }
        };
        let failed = |e: &PlatformError| format!("the platform did not answer: {e}");
        match logged(tenant_id, "modify_domain get", TaskRef::None, self.platform.domains(&access).await) {
            Ok(d) if !d.requestdomain.is_empty() => push("domains", true, format!("{} request domain(s) set", d.requestdomain.len())),
            Ok(_) => push("domains", false, "no request domain is set; set them with PUT /miniprogram/domains".into()),
            Err(e) => {
                self.authorization.note_revoked(tenant_id, &e).await;
                push("domains", false, failed(&e));
            }
        }
        match logged(tenant_id, "getprivacysetting", TaskRef::None, self.platform.privacy(&access).await) {
            Ok(p) if has_contact(&p.owner_setting) && !p.setting_list.is_empty() => {
                push("privacy", true, format!("{} kind(s) of user data declared", p.setting_list.len()))
            }
            Ok(_) => push("privacy", false, "no privacy settings are set; set them with PUT /miniprogram/privacy".into()),
            Err(e) => push("privacy", false, failed(&e)),
        }
        match logged(tenant_id, "get_category", TaskRef::None, self.platform.categories(&access).await) {
            Ok(c) if !c.is_empty() => push("category", true, format!("{} categor(ies) set", c.len())),
            Ok(_) => push("category", false, "no service category is set on the mini-program; its admin sets one".into()),
            Err(e) => push("category", false, failed(&e)),
        }
        if with_quota {
            match self.fresh_quota(tenant_id, &access).await {
                Ok(q) if q.rest > 0 => push("audit_quota", true, format!("{} of {} audits left this month", q.rest, q.limit)),
                Ok(q) => push("audit_quota", false, format!("the platform's audit quota is used up (0 of {} left)", q.limit)),
                Err(e) => push("audit_quota", false, e.to_string()),
            }
        }
        let ok = checks.iter().all(|c| c.ok);
        PreflightView { tenant_id, ok, checks }
    }
}

fn has_contact(owner: &PrivacyOwner) -> bool {
    [&owner.contact_email, &owner.contact_phone, &owner.contact_weixin, &owner.contact_qq].iter().any(|c| c.is_some())
}

/// Checks every domain list; 400 naming each bad entry (`requestdomain[1]`).
pub fn check_domains(d: &ServerDomains) -> Result<()> {
    let lists = [
        ("requestdomain", &d.requestdomain, false),
        ("wsrequestdomain", &d.wsrequestdomain, true),
        ("uploaddomain", &d.uploaddomain, false),
        ("downloaddomain", &d.downloaddomain, false),
        ("webviewdomain", &d.webviewdomain, false),
    ];
    let mut errors = Vec::new();
    for (name, list, ws) in lists {
        if list.len() > MAX_DOMAINS {
            errors.push(FieldError::new(name, format!("at most {MAX_DOMAINS} entries")));
            continue;
        }
        for (i, entry) in list.iter().enumerate() {
            if let Err(m) = check_domain(entry, ws) {
                errors.push(FieldError::new(format!("{name}[{i}]"), m));
            } else if list[..i].contains(entry) {
                errors.push(FieldError::new(format!("{name}[{i}]"), format!("{entry} is listed twice")));
            }
        }
    }
    if errors.is_empty() { Ok(()) } else { Err(Error::Invalid(errors)) }
}

/// One domain entry: `https://` (or `wss://` for sockets) and a host name, at most
/// [`MAX_DOMAIN_CHARS`] in all: labels of lower-case letters, digits and inner hyphens (1–63
/// characters), at least two, the last starting with a letter (so no IP address); no port,
/// path, query or user.
fn check_domain(entry: &str, ws: bool) -> std::result::Result<(), String> {
    let host = entry
        .strip_prefix("https://")
        .or_else(|| if ws { entry.strip_prefix("wss://") } else { None })
        .ok_or_else(|| if ws { "must start with https:// or wss://".to_owned() } else { "must start with https://".to_owned() })?;
    if host.is_empty() || entry.chars().count() > MAX_DOMAIN_CHARS {
        return Err(format!("must name a host, in at most {MAX_DOMAIN_CHARS} characters with the scheme"));
    }
    if let Some(bad) = host.chars().find(|c| matches!(c, ':' | '/' | '?' | '#' | '@')) {
        return Err(format!("must be a host name only, without {bad:?} (no port, path, query or user)"));
    }
    let labels: Vec<&str> = host.split('.').collect();
    if labels.len() < 2 {
        return Err("must be a full host name such as api.example.com".into());
    }
    for label in &labels {
        let fine = !label.is_empty()
            && label.len() <= 63
            && label.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !label.starts_with('-')
            && !label.ends_with('-');
        if !fine {
            return Err(format!("{label:?} is not a host name label (1 to 63 lower-case letters, digits and inner hyphens)"));
        }
    }
    if !labels.last().is_some_and(|tld| tld.starts_with(|c: char| c.is_ascii_lowercase())) {
        return Err("must be a host name whose last label starts with a letter, not an IP address".into());
    }
    Ok(())
}

/// Checks privacy settings; 400 naming each bad field.
pub fn check_privacy(p: &PrivacySettings) -> Result<()> {
    let mut errors = Vec::new();
    let o = &p.owner_setting;
    if !has_contact(o) {
        errors.push(FieldError::new("owner_setting", "needs at least one of contact_email, contact_phone, contact_weixin or contact_qq"));
    }
    let contacts: [Contact; 4] = [
        ("owner_setting.contact_email", o.contact_email.as_deref(), is_email, "must be an e-mail address"),
        (
            "owner_setting.contact_phone",
            o.contact_phone.as_deref(),
            |v| v.chars().all(|c| c.is_ascii_digit() || c == '+' || c == '-'),
            "must be digits, with + and - allowed",
        ),
        (
            "owner_setting.contact_weixin",
            o.contact_weixin.as_deref(),
            |v| Text::<MAX_PRIVACY_CONTACT>::parse(v).is_ok(),
            "must be text without control or invisible characters",
        ),
        ("owner_setting.contact_qq", o.contact_qq.as_deref(), |v| v.chars().all(|c| c.is_ascii_digit()), "must be digits"),
    ];
    for (name, value, fine, what) in contacts {
        let Some(v) = value else { continue };
        if v.is_empty() || v.chars().count() > MAX_PRIVACY_CONTACT {
            errors.push(FieldError::new(name, format!("must be 1 to {MAX_PRIVACY_CONTACT} characters; leave it out when there is none")));
        } else if !fine(v) {
            errors.push(FieldError::new(name, what));
        }
    }
    if let Err(m) = Text::<MAX_PRIVACY_TEXT>::parse(&o.notice_method) {
        errors.push(FieldError::new("owner_setting.notice_method", m));
    }
    if p.setting_list.len() > MAX_PRIVACY_ITEMS {
        errors.push(FieldError::new("setting_list", format!("at most {MAX_PRIVACY_ITEMS} entries")));
    } else {
        for (i, item) in p.setting_list.iter().enumerate() {
            let key = &item.privacy_key;
            // The platform's keys are letters and digits (`UserInfo`, `PhoneNumber`).
            if key.is_empty() || key.len() > 64 || !key.chars().all(|c| c.is_ascii_alphanumeric()) {
                errors.push(FieldError::new(format!("setting_list[{i}].privacy_key"), "must be 1 to 64 letters or digits"));
            } else if p.setting_list[..i].iter().any(|other| &other.privacy_key == key) {
                errors.push(FieldError::new(format!("setting_list[{i}].privacy_key"), format!("{key} is listed twice")));
            }
            if let Err(m) = Text::<MAX_PRIVACY_TEXT>::parse(&item.privacy_text) {
                errors.push(FieldError::new(format!("setting_list[{i}].privacy_text"), m));
            }
        }
    }
    if errors.is_empty() { Ok(()) } else { Err(Error::Invalid(errors)) }
}

/// A contact field of the privacy settings: its name, its value, its check and what the
/// check wants.
type Contact<'a> = (&'static str, Option<&'a str>, fn(&str) -> bool, &'static str);

/// An e-mail address as the privacy settings take it: something, `@`, and a host with a dot,
/// without control characters.
fn is_email(v: &str) -> bool {
    !v.chars().any(char::is_control) && v.split_once('@').is_some_and(|(user, host)| !user.is_empty() && host.contains('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domains_are_https_host_names_only() {
        assert!(check_domain("https://api.example.com", false).is_ok());
        assert!(check_domain("wss://ws.example.com", true).is_ok());
        for bad in [
            "http://api.example.com",
            "wss://ws.example.com",
            "https://",
            "https://localhost",
            "https://10.0.0.1",
            "https://example.1a",
            "https://api.example.com:8443",
            "https://api.example.com/v1",
            "https://API.example.com",
            "https://-a.example.com",
            "https://a..example.com",
            "https://user@example.com",
        ] {
            assert!(check_domain(bad, false).is_err(), "{bad} passed");
        }
    }

    #[test]
    fn every_bad_domain_is_named_by_list_and_index() {
        let d = ServerDomains {
            requestdomain: vec!["https://a.example.com".into(), "http://b.example.com".into()],
            webviewdomain: vec!["https://w.example.com".into(), "https://w.example.com".into()],
            ..Default::default()
        };
        let Err(Error::Invalid(errors)) = check_domains(&d) else { panic!("bad domains passed") };
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["requestdomain[1]", "webviewdomain[1]"]);
    }

    #[test]
    fn privacy_needs_a_contact_a_notice_and_unique_keys() {
        let item = |k: &str| PrivacyItem { privacy_key: k.into(), privacy_text: "to ship orders".into() };
        let fine = PrivacySettings {
            owner_setting: PrivacyOwner {
                contact_email: Some("p@example.com".into()),
                notice_method: "in the app".into(),
                ..Default::default()
            },
            setting_list: vec![item("PhoneNumber"), item("Location")],
        };
        assert!(check_privacy(&fine).is_ok());
        let bad = PrivacySettings {
            owner_setting: PrivacyOwner { contact_qq: Some("12a".into()), notice_method: " ".into(), ..Default::default() },
            setting_list: vec![item("PhoneNumber"), item("PhoneNumber"), item("bad key")],
        };
        let Err(Error::Invalid(errors)) = check_privacy(&bad) else { panic!("bad settings passed") };
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            ["owner_setting.contact_qq", "owner_setting.notice_method", "setting_list[1].privacy_key", "setting_list[2].privacy_key"]
        );
    }
}
