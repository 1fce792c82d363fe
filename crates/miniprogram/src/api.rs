//! What clients send and receive for code releases: the authorisation, uploads, audits and
//! releases, and their views. No view carries a token.
use crate::lifecycle::{AuditStatus, AuthorizationStatus, ReleaseKind, ReleaseStatus, UploadStatus};
use crate::model::*;
use atrium_kernel::ByteText;
use atrium_kernel::{Error, Id, ListQuery};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::PathBuf;

/// A version as users see it (`user_version`): 1–64 characters of `[0-9A-Za-z._+-]`, unique
/// per tenant.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Version(String);

impl Version {
    /// Checks a version as sent; the error says what is wrong.
    pub fn parse(raw: &str) -> Result<Self, String> {
        if raw.is_empty() || raw.len() > 64 {
            return Err("must be 1 to 64 characters".into());
        }
        if let Some(bad) = raw.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-'))) {
            return Err(format!("must consist of letters, digits and \"._+-\" only, not {bad:?}"));
        }
        Ok(Version(raw.to_owned()))
    }

    /// The version.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The version, owned.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl TryFrom<String> for Version {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        Version::parse(&s)
    }
}

impl From<Version> for String {
    fn from(v: Version) -> String {
        v.0
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

atrium_kernel::string_schemas!(
    Version => atrium_kernel::schema::string_schema("1 to 64 characters of [0-9A-Za-z._+-]", Some("^[0-9A-Za-z._+\\-]{1,64}$"), None, None)
);

/// A version's description (`user_desc`), up to 512 bytes.
pub type VersionDescription = ByteText<512, true>;
/// A mini-program page path with its query, as the QR code opens it
/// (`pages/index/index?from=qr`): at most 1024 bytes, no space or control character, and no
/// leading `/` (the platform refuses both with 40097); empty for the home page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct PagePath(String);

impl PagePath {
    /// Checks `raw`, saying what is wrong.
    pub fn parse(raw: &str) -> Result<Self, String> {
        if raw.len() > 1024 {
            return Err("must be at most 1024 bytes (UTF-8)".into());
        }
        if raw.starts_with('/') {
            return Err("must not start with / (pages/index/index, not /pages/index/index)".into());
        }
        if raw.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err("must not contain spaces or control characters".into());
        }
        Ok(PagePath(raw.to_owned()))
    }

    /// The path, owned.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl TryFrom<String> for PagePath {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        PagePath::parse(&s)
    }
}

impl From<PagePath> for String {
    fn from(p: PagePath) -> String {
        p.0
    }
}

atrium_kernel::string_schemas!(
    PagePath => atrium_kernel::schema::string_schema(
        "A page path with its query, at most 1024 bytes of UTF-8: no space or control character, no leading /; empty for the home page",
        // What `char::is_whitespace` and `char::is_control` hold, spelled out: the patterns'
        // dialects disagree on what `\\s` is.
        Some(concat!(
            "^([^/\\u0000-\\u0020\\u007f-\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]",
            "[^\\u0000-\\u0020\\u007f-\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]*)?$"
        )),
        None,
        Some(1024)
    )
);

/// `POST /miniprogram/upload` (JSON): commit a template of the library with the tenant's
/// configuration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"tenant_id": 1, "template_id": 1, "ext_json": {"extAppid": "wx8888888888888888", "ext": {"shop": "Ann's"}}, "version": "1.0.0", "description": "First release"})))]
pub struct TemplateUpload {
    /// Platform and partner callers must name it; a tenant caller may leave it out.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>, minimum = 1))]
    pub tenant_id: Option<Id>,
    /// The template of the platform's library to commit (`GET /miniprogram/templates`).
    #[cfg_attr(feature = "openapi", schema(minimum = 0))]
    pub template_id: i64,
    /// The tenant's configuration of the template, an object (sent to the platform as a JSON
    /// string).
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub ext_json: serde_json::Map<String, serde_json::Value>,
    /// The version users see, unique per tenant.
    pub version: Version,
    /// The version's description users see.
    pub description: VersionDescription,
}

/// `POST /miniprogram/upload` (multipart): a package the HTTP layer streamed to `file`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageUpload {
    /// The tenant whose mini-program gets the code; platform and partner callers must name it.
    pub tenant_id: Option<Id>,
    /// The zip, on disk. The service takes it into keeping when it is accepted; otherwise it
    /// is left where it is for the caller to delete.
    pub file: PathBuf,
    /// The version users see, unique per tenant.
    pub version: Version,
    /// The version's description users see.
    pub description: VersionDescription,
}

/// The parts of `POST /miniprogram/upload` (`multipart/form-data`), as the document shows them.
#[cfg(feature = "openapi")]
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
#[schema(example = json!({"tenant_id": 1, "version": "1.0.1", "description": "Adds the shop page"}))]
pub struct PackageUploadForm {
    /// Platform and partner callers must name it; a tenant caller may leave it out.
    // A form part is text: never null, only absent.
    #[schema(value_type = i64, required = false, minimum = 1)]
    pub tenant_id: Option<Id>,
    /// A zip of the mini-program project: `project.config.json` and `app.json` at its root
    /// (or in one top directory), nothing outside it; at most 20 MiB (413 above).
    #[schema(value_type = String, format = Binary)]
    pub package: Vec<u8>,
    /// The version users see, unique per tenant.
    pub version: Version,
    /// The version's description users see.
    #[schema(value_type = VersionDescription)]
    pub description: String,
}

/// `POST /miniprogram/audit/submit`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"upload_task_id": 12, "version_desc": "Adds the shop page"})))]
pub struct AuditSubmit {
    /// An `uploaded` task: the tenant's latest (the platform audits the code it last
    /// committed).
    pub upload_task_id: Id,
    /// A note for the platform's reviewers.
    pub version_desc: Option<VersionDescription>,
    /// The platform's `item_list` (pages, tags, categories), passed through.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<Object>>))]
    pub item_list: Option<Vec<serde_json::Map<String, serde_json::Value>>>,
    /// Whether the code uses no privacy interface (passed through to the platform).
    pub privacy_api_not_use: Option<bool>,
}

/// `GET /miniprogram/audit/status`: one audit task, or the tenant's latest.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct AuditStatusParams {
    /// The audit task; the tenant's latest when absent.
    pub audit_task_id: Option<Id>,
    /// Whose latest audit, without `audit_task_id` (with it, the task's tenant). Required for
    /// platform and partner callers without `audit_task_id`; a tenant caller's own otherwise.
    #[cfg_attr(feature = "openapi", param(value_type = Option<i64>, minimum = 1))]
    pub tenant_id: Option<Id>,
}

/// How to publish.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum PublishMode {
    /// To every user.
    Full,
    /// To a percentage of users (`gray_percentage`).
    Gray,
}

/// `POST /miniprogram/publish`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"audit_task_id": 4, "mode": "gray", "gray_percentage": 10})))]
pub struct PublishRequest {
    /// The passed audit to release.
    pub audit_task_id: Id,
    /// `full` or `gray`.
    pub mode: PublishMode,
    /// With `gray`: 1–100, higher than the last gray step.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 100))]
    pub gray_percentage: Option<i64>,
}

impl PublishRequest {
    /// The release mode asked for; a gray release needs a percentage of 1–100, a full one
    /// takes none.
    pub fn release_mode(&self) -> Result<ReleaseMode, Error> {
        match (self.mode, self.gray_percentage) {
            (PublishMode::Full, None) => Ok(ReleaseMode::Full),
            (PublishMode::Full, Some(_)) => Err(Error::invalid("gray_percentage", "is only for a gray release")),
            (PublishMode::Gray, None) => Err(Error::invalid("gray_percentage", "is required for a gray release")),
            (PublishMode::Gray, Some(p)) => match u8::try_from(p) {
                Ok(p) if (1..=100).contains(&p) => Ok(ReleaseMode::Gray(p)),
                _ => Err(Error::invalid("gray_percentage", "must be between 1 and 100")),
            },
        }
    }
}

/// `POST /miniprogram/rollback`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"tenant_id": 1})))]
pub struct RollbackRequest {
    /// The tenant whose mini-program to roll back; required for platform and partner callers.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>, minimum = 1))]
    pub tenant_id: Option<Id>,
    /// A version of `GET /miniprogram/versions`' history; the previous version when absent.
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub app_version: Option<i64>,
}

/// `GET /miniprogram/authorization/callback`: where the platform's page sends the admin back.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
pub struct AuthorizationCallback {
    /// The platform's authorisation code.
    #[cfg_attr(feature = "openapi", param(min_length = 1, max_length = 512))]
    pub auth_code: String,
    /// How long the code is valid, in seconds (unused).
    pub expires_in: Option<i64>,
    /// The single-use state of the link `GET /miniprogram/authorization` handed out.
    #[cfg_attr(feature = "openapi", param(min_length = 1, max_length = 128))]
    pub state: String,
}

/// `GET /miniprogram/experience-qr`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct ExperienceQrParams {
    /// Required for platform and partner callers; a tenant caller's own tenant otherwise.
    #[cfg_attr(feature = "openapi", param(value_type = Option<i64>, minimum = 1))]
    pub tenant_id: Option<Id>,
    /// The page the QR code opens, e.g. `pages/index/index?from=qr`.
    #[cfg_attr(feature = "openapi", param(inline, value_type = Option<PagePath>))]
    pub path: Option<PagePath>,
}

/// List parameters of `GET /miniprogram/upload-tasks`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct UploadTaskListParams {
    /// 1-based page number; default 1.
    pub page: Option<i64>,
    /// Tasks per page; default 20, at most 100.
    pub page_size: Option<i64>,
    /// Only uploads in this status.
    pub status: Option<UploadStatus>,
    /// Only this tenant's uploads (platform and partner users).
    pub tenant_id: Option<Id>,
    /// `id` or `created_at`, `-` for descending; default `-id`.
    #[cfg_attr(feature = "openapi", param(schema_with = atrium_kernel::schema::sort::<crate::model::TaskSort>))]
    pub sort: Option<String>,
}

impl TryFrom<UploadTaskListParams> for UploadTaskQuery {
    type Error = Error;
    fn try_from(p: UploadTaskListParams) -> Result<Self, Error> {
        Ok(UploadTaskQuery {
            list: ListQuery::parse(p.page, p.page_size, None, p.sort.as_deref())?,
            status: p.status,
            tenant_id: p.tenant_id,
        })
    }
}

/// List parameters of `GET /miniprogram/audit-tasks`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct AuditTaskListParams {
    /// 1-based page number; default 1.
    pub page: Option<i64>,
    /// Tasks per page; default 20, at most 100.
    pub page_size: Option<i64>,
    /// Only audits in this status.
    pub status: Option<AuditStatus>,
    /// Only this tenant's audits (platform and partner users).
    pub tenant_id: Option<Id>,
    /// `id` or `created_at`, `-` for descending; default `-id`.
    #[cfg_attr(feature = "openapi", param(schema_with = atrium_kernel::schema::sort::<crate::model::TaskSort>))]
    pub sort: Option<String>,
}

impl TryFrom<AuditTaskListParams> for AuditTaskQuery {
    type Error = Error;
    fn try_from(p: AuditTaskListParams) -> Result<Self, Error> {
        Ok(AuditTaskQuery {
            list: ListQuery::parse(p.page, p.page_size, None, p.sort.as_deref())?,
            status: p.status,
            tenant_id: p.tenant_id,
        })
    }
}

/// A tenant's authorisation as shown; never a token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuthorizationView {
    /// The tenant.
    pub tenant_id: Id,
    /// `none`, `authorized` or `revoked`.
    pub status: AuthorizationStatus,
    /// The mini-program's app id, once authorised.
    pub authorizer_appid: Option<String>,
    /// The mini-program's name.
    pub nickname: Option<String>,
    /// The permission sets (funcscope categories) granted to the platform.
    pub func_info: Vec<i64>,
    /// When it was (last) authorised.
    pub authorized_at: Option<DateTime<Utc>>,
    /// The platform's authorisation page with a fresh pre-auth code.
    pub authorize_url: Option<String>,
}

impl AuthorizationView {
    /// The view of tenant `tenant_id`'s authorisation `a` (`none` without one).
    pub fn new(tenant_id: Id, a: Option<&Authorization>, authorize_url: Option<String>) -> Self {
        AuthorizationView {
            tenant_id,
            status: a.map_or(AuthorizationStatus::None, |a| a.status),
            authorizer_appid: a.map(|a| a.authorizer_appid.clone()),
            nickname: a.and_then(|a| a.nickname.clone()),
            func_info: a.map(|a| a.func_info.clone()).unwrap_or_default(),
            authorized_at: a.map(|a| a.authorized_at),
            authorize_url,
        }
    }
}

/// Where an upload task's code comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum UploadKind {
    /// A template of the platform's library.
    Template,
    /// An uploaded code package.
    Package,
}

/// An upload task.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UploadTaskView {
    /// The task's id.
    pub id: Id,
    /// The tenant whose mini-program gets the code.
    pub tenant_id: Id,
    /// `template` or `package`.
    pub kind: UploadKind,
    /// The template committed (for a package, the one it became).
    pub template_id: Option<i64>,
    /// For a package: its SHA-256 and size.
    pub package_sha256: Option<String>,
    /// For a package: its size in bytes.
    pub package_size: Option<u64>,
    /// The version users see.
    pub version: String,
    /// The version's description.
    pub description: String,
    /// Where the upload is.
    pub status: UploadStatus,
    /// The platform's errcode when it refused, or the uploader's exit code.
    pub errcode: Option<i64>,
    /// Why it failed.
    pub error: Option<String>,
    /// The user who asked for it.
    pub created_by: Id,
    /// When it was asked for.
    pub created_at: DateTime<Utc>,
    /// When the job started on it.
    pub started_at: Option<DateTime<Utc>>,
    /// When it committed or failed.
    pub finished_at: Option<DateTime<Utc>>,
}

impl From<UploadTask> for UploadTaskView {
    fn from(t: UploadTask) -> Self {
        let (kind, template_id, package_sha256, package_size) = match t.source {
            UploadSource::Template { template_id, .. } => (UploadKind::Template, Some(template_id), None, None),
            UploadSource::Package { sha256, size } => (UploadKind::Package, t.template_id, Some(sha256), Some(size)),
        };
        UploadTaskView {
            id: t.id,
            tenant_id: t.tenant_id,
            kind,
            template_id,
            package_sha256,
            package_size,
            version: t.version,
            description: t.description,
            status: t.status,
            errcode: t.errcode,
            error: t.error,
            created_by: t.created_by,
            created_at: t.created_at,
            started_at: t.started_at,
            finished_at: t.finished_at,
        }
    }
}

/// An audit task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuditTaskView {
    /// The task's id.
    pub id: Id,
    /// The tenant whose mini-program is audited.
    pub tenant_id: Id,
    /// The upload audited.
    pub upload_task_id: Id,
    /// The version audited.
    pub version: String,
    /// The platform's audit id.
    pub auditid: i64,
    /// Where the audit is.
    pub status: AuditStatus,
    /// Why it was rejected or delayed.
    pub reason: Option<String>,
    /// Media ids of the screenshots a rejection comes with.
    pub screenshots: Vec<String>,
    /// When it was submitted.
    pub submitted_at: DateTime<Utc>,
    /// When the platform decided it.
    pub decided_at: Option<DateTime<Utc>>,
    /// The highest gray percentage released so far.
    pub gray_percentage: Option<u8>,
    /// When it was released to every user.
    pub released_at: Option<DateTime<Utc>>,
}

impl From<AuditTask> for AuditTaskView {
    fn from(t: AuditTask) -> Self {
        AuditTaskView {
            id: t.id,
            tenant_id: t.tenant_id,
            upload_task_id: t.upload_task_id,
            version: t.version,
            auditid: t.auditid,
            status: t.status,
            reason: t.reason,
            screenshots: t.screenshots,
            submitted_at: t.submitted_at,
            decided_at: t.decided_at,
            gray_percentage: t.release.gray_percentage,
            released_at: t.release.released_at,
        }
    }
}

/// A release task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReleaseTaskView {
    /// The task's id.
    pub id: Id,
    /// The tenant whose mini-program is released.
    pub tenant_id: Id,
    /// The released audit; null for a rollback.
    pub audit_task_id: Option<Id>,
    /// `full`, `gray` or `rollback`.
    pub kind: ReleaseKind,
    /// The released version; for a rollback, the `app_version` asked for, if any.
    pub version: Option<String>,
    /// For a gray release, the percentage of users.
    pub gray_percentage: Option<u8>,
    /// Whether the platform carried it out.
    pub status: ReleaseStatus,
    /// The platform's errcode when it refused.
    pub errcode: Option<i64>,
    /// The user who asked for it.
    pub created_by: Id,
    /// When it was asked for.
    pub created_at: DateTime<Utc>,
}

impl From<ReleaseTask> for ReleaseTaskView {
    fn from(t: ReleaseTask) -> Self {
        ReleaseTaskView {
            id: t.id,
            tenant_id: t.tenant_id,
            audit_task_id: t.audit_task_id,
            kind: t.kind,
            version: t.version,
            gray_percentage: t.gray_percentage,
            status: t.status,
            errcode: t.errcode,
            created_by: t.created_by,
            created_at: t.created_at,
        }
    }
}

/// `GET /miniprogram/versions`: the live and trial versions, the gray plan, and the versions
/// a rollback can go to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct VersionsView {
    /// The live version, if any.
    pub release: Option<VersionRecord>,
    /// The trial version, if any.
    pub experience: Option<VersionRecord>,
    /// The gray release plan, if one runs.
    pub gray_plan: Option<GrayPlan>,
    /// Earlier versions a rollback can go to.
    pub history: Vec<VersionRecord>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use atrium_kernel::Secret;

    #[test]
    fn a_version_is_1_to_64_of_the_allowed_characters() {
        for good in ["1.0.0", "v2_rc-1+b7", &"9".repeat(64)] {
            assert!(Version::parse(good).is_ok(), "{good}");
        }
        for bad in ["", "1.0 beta", "版本1", &"9".repeat(65), "1/2"] {
            assert!(Version::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_publish_request_names_a_mode_with_a_fitting_percentage() {
        let req = |mode, gray_percentage| PublishRequest { audit_task_id: 1, mode, gray_percentage };
        assert_eq!(req(PublishMode::Full, None).release_mode().unwrap(), ReleaseMode::Full);
        assert_eq!(req(PublishMode::Gray, Some(10)).release_mode().unwrap(), ReleaseMode::Gray(10));
        assert_eq!(req(PublishMode::Gray, Some(100)).release_mode().unwrap(), ReleaseMode::Gray(100));
        for bad in [
            req(PublishMode::Gray, None),
            req(PublishMode::Gray, Some(0)),
            req(PublishMode::Gray, Some(101)),
            req(PublishMode::Gray, Some(-5)),
            req(PublishMode::Full, Some(50)),
        ] {
            assert!(matches!(bad.release_mode(), Err(Error::Invalid(ref f)) if f[0].field == "gray_percentage"), "{bad:?}");
        }
    }

    #[test]
    fn a_template_upload_needs_an_object_for_ext_json() {
        let ok = serde_json::json!({"template_id": 1, "ext_json": {"a": 1}, "version": "1.0.0", "description": "d"});
        assert!(serde_json::from_value::<TemplateUpload>(ok).is_ok());
        let not_object = serde_json::json!({"template_id": 1, "ext_json": "{}", "version": "1.0.0", "description": "d"});
        assert!(serde_json::from_value::<TemplateUpload>(not_object).is_err());
        let bad_version = serde_json::json!({"template_id": 1, "ext_json": {}, "version": "1 0", "description": "d"});
        assert!(serde_json::from_value::<TemplateUpload>(bad_version).is_err());
    }

    #[test]
    fn the_authorization_view_never_carries_the_refresh_token() {
        let now = chrono::DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        let a = Authorization {
            tenant_id: 3,
            status: AuthorizationStatus::Authorized,
            authorizer_appid: "wx_mp".into(),
            refresh_token: Secret::new("REFRESH-SECRET"),
            nickname: Some("Shop".into()),
            user_name: Some("gh_1".into()),
            func_info: vec![18],
            authorized_at: now,
            revoked_at: None,
            updated_at: now,
        };
        let shown = serde_json::to_string(&AuthorizationView::new(3, Some(&a), None)).unwrap();
        assert!(!shown.contains("REFRESH-SECRET"), "{shown}");
        assert!(!format!("{a:?}").contains("REFRESH-SECRET"));
        let none = AuthorizationView::new(4, None, Some("https://x".into()));
        assert_eq!(none.status, AuthorizationStatus::None);
    }
}

/// `PUT /miniprogram/domains`: replaces the mini-program's server and web-view domains. Each
/// list holds `https://` host names (`wss://` also for `wsrequestdomain`), with no IP address,
/// port or path; a list left out is set empty.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"tenant_id": 1, "requestdomain": ["https://api.example.com"], "wsrequestdomain": ["wss://ws.example.com"], "uploaddomain": ["https://upload.example.com"], "downloaddomain": ["https://cdn.example.com"], "webviewdomain": ["https://www.example.com"]})))]
pub struct DomainsInput {
    /// Platform and partner callers must name it; a tenant caller may leave it out.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>, minimum = 1))]
    pub tenant_id: Option<Id>,
    /// Hosts `wx.request` may call.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::schemas::https_hosts))]
    pub requestdomain: Vec<String>,
    /// Hosts `wx.connectSocket` may open.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::schemas::socket_hosts))]
    pub wsrequestdomain: Vec<String>,
    /// Hosts `wx.uploadFile` may post to.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::schemas::https_hosts))]
    pub uploaddomain: Vec<String>,
    /// Hosts `wx.downloadFile` may fetch from.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::schemas::https_hosts))]
    pub downloaddomain: Vec<String>,
    /// Hosts the `web-view` component may open.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::schemas::https_hosts))]
    pub webviewdomain: Vec<String>,
}

impl DomainsInput {
    /// The domains, without the tenant.
    pub fn domains(&self) -> ServerDomains {
        ServerDomains {
            requestdomain: self.requestdomain.clone(),
            wsrequestdomain: self.wsrequestdomain.clone(),
            uploaddomain: self.uploaddomain.clone(),
            downloaddomain: self.downloaddomain.clone(),
            webviewdomain: self.webviewdomain.clone(),
        }
    }
}

/// A tenant's mini-program's server and web-view domains, as the platform has them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DomainsView {
    /// The tenant.
    pub tenant_id: Id,
    /// The domains.
    #[serde(flatten)]
    pub domains: ServerDomains,
}

/// `PUT /miniprogram/privacy`: replaces the mini-program's privacy settings.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"tenant_id": 1, "owner_setting": {"contact_email": "privacy@example.com", "notice_method": "A notice in the mini-program"}, "setting_list": [{"privacy_key": "PhoneNumber", "privacy_text": "to confirm orders"}]})))]
pub struct PrivacyInput {
    /// Platform and partner callers must name it; a tenant caller may leave it out.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>, minimum = 1))]
    pub tenant_id: Option<Id>,
    /// The privacy contact (at least one of e-mail, phone, Weixin or QQ) and how users are
    /// told of changes.
    pub owner_setting: PrivacyOwner,
    /// The user data the mini-program collects, and what for (keys unique).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_items = 100))]
    pub setting_list: Vec<PrivacyItem>,
}

/// A tenant's mini-program's privacy settings, as the platform has them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PrivacyView {
    /// The tenant.
    pub tenant_id: Id,
    /// The settings.
    #[serde(flatten)]
    pub settings: PrivacySettings,
}

/// `POST /miniprogram/audit/speedup` and `/audit/undo`: the running audit to act on.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"audit_task_id": 1})))]
pub struct AuditTaskRef {
    /// The audit task (`GET /miniprogram/audit-tasks`).
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub audit_task_id: Id,
}

/// One check of a mini-program's readiness for a release.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PreflightCheck {
    /// `authorized`, `code_management`, `domains`, `privacy`, `category` or `audit_quota`.
    pub name: String,
    /// Whether it passed.
    pub ok: bool,
    /// What was found, and what to do when it failed.
    pub detail: String,
}

/// `GET /miniprogram/preflight`: whether a tenant's mini-program is ready for a release. A
/// failing check is an answer, not an error: `ok` is false and the check says why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PreflightView {
    /// The tenant.
    pub tenant_id: Id,
    /// Whether every check passed.
    pub ok: bool,
    /// The checks, in the order they were made.
    pub checks: Vec<PreflightCheck>,
}
