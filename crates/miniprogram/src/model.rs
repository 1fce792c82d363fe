//! Code releases: a tenant's authorisation of its mini-program to our third-party platform,
//! the upload, audit and release tasks we keep (the platform lists none of them), the
//! packages uploaded, and what the platform answers and pushes.
use crate::lifecycle::{AuditStatus, AuthorizationStatus, ReleaseKind, ReleaseStatus, UploadStatus};
use atrium_kernel::Secret;
use atrium_kernel::{Id, Timestamp};
use std::path::PathBuf;

/// What the tenant's scope check needs of a tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReleaseTenant {
    /// The tenant's id.
    pub id: Id,
    /// The tenant's partner, if it has one.
    pub partner_id: Option<Id>,
}

/// A tenant's mini-program, authorised to the platform (one per tenant).
///
/// The store encrypts `refresh_token` at rest; the rest is plain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authorization {
    /// The tenant whose mini-program it is.
    pub tenant_id: Id,
    /// `authorized` or `revoked`; a tenant without a record is `none`.
    pub status: AuthorizationStatus,
    /// The mini-program's app id, unique across tenants.
    pub authorizer_appid: String,
    /// What the authorizer access token is derived from. Encrypted at rest.
    pub refresh_token: Secret,
    /// The mini-program's name, as its profile shows it.
    pub nickname: Option<String>,
    /// The mini-program's original id (`gh_…`): what its pushed messages are addressed to.
    pub user_name: Option<String>,
    /// The permission sets (funcscope categories) granted to the platform.
    pub func_info: Vec<i64>,
    /// When it was (last) authorised.
    pub authorized_at: Timestamp,
    /// When the authorisation was revoked, if it was.
    pub revoked_at: Option<Timestamp>,
    /// When the record last changed.
    pub updated_at: Timestamp,
}

/// A pre-auth code handed out for a tenant's authorisation page, and the random `state`
/// (stored hashed) that its redirect brings back: whoever holds the state may finish that
/// tenant's authorisation, once, before `expires_at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizationAttempt {
    /// SHA-256 of the state, hex.
    pub state_hash: String,
    /// The tenant being authorised.
    pub tenant_id: Id,
    /// The platform's pre-auth code the authorisation page was opened with.
    pub pre_auth_code: String,
    /// The user who started the authorisation.
    pub created_by: Id,
    /// When it was started.
    pub created_at: Timestamp,
    /// After this the redirect is refused (the pre-auth code has expired too).
    pub expires_at: Timestamp,
}

/// How many records one purge of authorisation records removed
/// ([`AuthorizationRepo::purge_authorization_records`](crate::AuthorizationRepo::purge_authorization_records)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PurgedRecords {
    /// Authorisation attempts removed, all expired before the purge's cut-off.
    pub attempts: u64,
    /// Ids of processed pushed events removed, all recorded before the purge's cut-off.
    pub events: u64,
}

impl PurgedRecords {
    /// Whether nothing was removed.
    pub fn is_empty(&self) -> bool {
        self.attempts == 0 && self.events == 0
    }
}

/// The newest `component_verify_ticket` the platform pushed; the component token is derived
/// from it. Encrypted at rest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyTicket {
    /// The ticket.
    pub ticket: Secret,
    /// The push's `CreateTime`: an older push never replaces a newer ticket.
    pub created_at: Timestamp,
}

/// What an upload task uploads.
#[derive(Debug, Clone, PartialEq)]
pub enum UploadSource {
    /// A template of the platform's library, committed with the tenant's `ext_json` (an
    /// object).
    Template {
        /// The template to commit.
        template_id: i64,
        /// The tenant's configuration, a JSON object.
        ext_json: serde_json::Value,
    },
    /// A code package, kept by its content hash, uploaded by the uploader to the platform's
    /// template-development mini-program, added to the template library and committed.
    Package {
        /// SHA-256 of the zip, hex: its name in the package store.
        sha256: String,
        /// The zip's size in bytes.
        size: u64,
    },
}

/// An upload: recorded at once, then run as a job.
#[derive(Debug, Clone, PartialEq)]
pub struct UploadTask {
    /// 0 until stored.
    pub id: Id,
    /// The tenant whose mini-program gets the code.
    pub tenant_id: Id,
    /// A template or a package.
    pub source: UploadSource,
    /// The version users see (`user_version`), unique per tenant.
    pub version: String,
    /// The version's description users see (`user_desc`).
    pub description: String,
    /// Where the upload is.
    pub status: UploadStatus,
    /// The template the code was committed from (for a package, the one it became).
    pub template_id: Option<i64>,
    /// The platform's errcode when it refused, or the uploader's exit code.
    pub errcode: Option<i64>,
    /// Why it failed, in words.
    pub error: Option<String>,
    /// The user who asked for it.
    pub created_by: Id,
    /// When it was asked for.
    pub created_at: Timestamp,
    /// When the job started on it.
    pub started_at: Option<Timestamp>,
    /// When it committed or failed.
    pub finished_at: Option<Timestamp>,
    /// When it last changed.
    pub updated_at: Timestamp,
}

/// An audit of a committed upload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditTask {
    /// 0 until stored.
    pub id: Id,
    /// The tenant whose mini-program is audited.
    pub tenant_id: Id,
    /// The upload whose committed code is audited.
    pub upload_task_id: Id,
    /// The version audited (`user_version`).
    pub version: String,
    /// The platform's audit id.
    pub auditid: i64,
    /// Where the audit is.
    pub status: AuditStatus,
    /// Why it was rejected or delayed.
    pub reason: Option<String>,
    /// Media ids of the screenshots a rejection comes with.
    pub screenshots: Vec<String>,
    /// When it was submitted to the platform.
    pub submitted_at: Timestamp,
    /// When the platform decided it.
    pub decided_at: Option<Timestamp>,
    /// How much of it was released (gray steps, full release).
    pub release: ReleaseState,
    /// The user who submitted it.
    pub created_by: Id,
    /// When it last changed.
    pub updated_at: Timestamp,
}

impl AuditTask {
    /// What a conditional write compares: the audit's status and release state as read.
    pub fn state(&self) -> AuditState {
        AuditState { status: self.status, release: self.release.clone() }
    }

    /// Takes in what the platform reported: the status only moves forward, and a decision
    /// brings its reason and screenshots. Returns whether anything changed.
    pub fn apply(&mut self, report: &PlatformAudit, now: Timestamp) -> bool {
        let Some(next) = self.status.advance(report.status) else { return false };
        self.status = next;
        if report.reason.is_some() {
            self.reason.clone_from(&report.reason);
        }
        if !report.screenshots.is_empty() {
            self.screenshots.clone_from(&report.screenshots);
        }
        if !next.is_running() {
            self.decided_at = Some(report.at.unwrap_or(now));
        }
        self.updated_at = now;
        true
    }
}

/// How much of a passed audit was released.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReleaseState {
    /// The highest gray percentage released so far.
    pub gray_percentage: Option<u8>,
    /// When the full release happened.
    pub released_at: Option<Timestamp>,
}

/// An audit task's state as read, for a conditional write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditState {
    /// The status read.
    pub status: AuditStatus,
    /// The release state read.
    pub release: ReleaseState,
}

/// An audit task to write back over the state it was read in (see
/// [`ReleaseTaskRepo::update_audit_task`](crate::ReleaseTaskRepo::update_audit_task)).
#[derive(Debug, Clone, PartialEq)]
pub struct AuditUpdate {
    /// The task as it is to be stored.
    pub task: AuditTask,
    /// Its status and release state as they were read; the write applies only over these.
    pub read: AuditState,
}

/// How to release a passed audit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseMode {
    /// To every user.
    Full,
    /// To this percentage of users.
    Gray(u8),
}

/// One release step (full, gray or rollback), recorded whether or not the platform carried it
/// out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseTask {
    /// 0 until stored.
    pub id: Id,
    /// The tenant whose mini-program is released.
    pub tenant_id: Id,
    /// The released audit; `None` for a rollback.
    pub audit_task_id: Option<Id>,
    /// Full, gray or rollback.
    pub kind: ReleaseKind,
    /// The released version; for a rollback, the `app_version` asked for, if any.
    pub version: Option<String>,
    /// For a gray release, the percentage of users.
    pub gray_percentage: Option<u8>,
    /// Whether the platform carried it out.
    pub status: ReleaseStatus,
    /// The platform's errcode when it refused.
    pub errcode: Option<i64>,
    /// The platform's errmsg when it refused.
    pub errmsg: Option<String>,
    /// The user who asked for it.
    pub created_by: Id,
    /// When it was asked for.
    pub created_at: Timestamp,
}

/// A package kept by its content hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredPackage {
    /// SHA-256 of the zip, hex: its name in the package store.
    pub sha256: String,
    /// The zip's size in bytes.
    pub size: u64,
    /// The project directory inside the zip (see `PackageInfo::project_root`).
    pub project_root: String,
    /// Where the zip can be read on this machine: the kept file, for a store that keeps
    /// packages in a directory; for a package opened from another store, its local copy.
    pub path: PathBuf,
    /// When it was first stored.
    pub created_at: Timestamp,
}

/// A kept package opened for reading ([`PackageStore::open`](crate::PackageStore::open)):
/// its record, whose `path` is a local file of its content for as long as the handle lives.
///
/// A store that keeps packages in a directory on this machine hands out the kept file itself
/// ([`PackageFile::kept`]). One that keeps them elsewhere (a database, an object store) writes a
/// local copy and gives the handle what removes it ([`PackageFile::copy`]), which runs when the
/// handle is dropped.
pub struct PackageFile {
    package: StoredPackage,
    cleanup: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl PackageFile {
    /// The kept file itself, at `package.path`: nothing to remove afterwards.
    pub fn kept(package: StoredPackage) -> Self {
        PackageFile { package, cleanup: None }
    }

    /// A local copy at `package.path`; `cleanup` removes it when the handle is dropped.
    pub fn copy(package: StoredPackage, cleanup: impl FnOnce() + Send + Sync + 'static) -> Self {
        PackageFile { package, cleanup: Some(Box::new(cleanup)) }
    }

    /// The package's record; its `path` is the local file.
    pub fn package(&self) -> &StoredPackage {
        &self.package
    }

    /// The local file of the package's content.
    pub fn path(&self) -> &std::path::Path {
        &self.package.path
    }

    /// The package's content, opened for reading.
    pub fn reader(&self) -> std::io::Result<std::fs::File> {
        std::fs::File::open(&self.package.path)
    }
}

impl std::fmt::Debug for PackageFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PackageFile").field("package", &self.package).field("copy", &self.cleanup.is_some()).finish()
    }
}

impl Drop for PackageFile {
    fn drop(&mut self) {
        if let Some(cleanup) = self.cleanup.take() {
            cleanup();
        }
    }
}

/// Filters of the upload task list.
#[derive(Debug, Clone, Default)]
pub struct UploadTaskQuery {
    /// Paging and sort.
    pub list: atrium_kernel::ListQuery<TaskSort>,
    /// Only uploads in this status.
    pub status: Option<UploadStatus>,
    /// Only this tenant's uploads.
    pub tenant_id: Option<Id>,
}

/// Filters of the audit task list.
#[derive(Debug, Clone, Default)]
pub struct AuditTaskQuery {
    /// Paging and sort.
    pub list: atrium_kernel::ListQuery<TaskSort>,
    /// Only audits in this status.
    pub status: Option<AuditStatus>,
    /// Only this tenant's audits.
    pub tenant_id: Option<Id>,
}

/// What the task lists may be sorted by; default newest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::EnumString, strum::IntoStaticStr, strum::VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum TaskSort {
    /// By id, which is creation order (the default, newest first).
    Id,
    /// By creation time.
    CreatedAt,
}

// --- what the platform is asked and answers, in domain words --------------------------------

/// What a call for one tenant's mini-program needs: the component's current verify ticket
/// (the component token comes from it) and the tenant's authorisation. `Debug` hides the
/// secrets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizerAccess {
    /// The component's current verify ticket.
    pub verify_ticket: Secret,
    /// The tenant's mini-program.
    pub authorizer_appid: String,
    /// The authorizer refresh token the access token is derived from.
    pub refresh_token: Secret,
}

/// A pre-auth code for the authorisation page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreAuthCode {
    /// The code, put in the authorisation page's link.
    pub code: String,
    /// How long the code is valid, in seconds.
    pub expires_in_secs: i64,
}

/// What an authorisation grants (`api_query_auth`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizationGrant {
    /// The mini-program authorised.
    pub authorizer_appid: String,
    /// Its authorizer refresh token.
    pub refresh_token: Secret,
    /// The permission sets (funcscope categories) granted.
    pub func_info: Vec<i64>,
}

/// A mini-program's public profile (`api_get_authorizer_info`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AuthorizerProfile {
    /// The mini-program's name.
    pub nickname: Option<String>,
    /// `gh_…`
    pub user_name: Option<String>,
}

/// A commit of template code to a tenant's mini-program (`/wxa/commit`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeCommit {
    /// The template to commit.
    pub template_id: i64,
    /// The tenant's configuration, a JSON object serialised as a string.
    pub ext_json: String,
    /// The version users see.
    pub user_version: String,
    /// The version's description users see.
    pub user_desc: String,
}

/// An audit submission (`/wxa/submit_audit`).
#[derive(Debug, Clone, PartialEq)]
pub struct AuditSubmission {
    /// A note for the reviewers.
    pub version_desc: Option<String>,
    /// The platform's `item_list` (pages with their categories), passed through.
    pub item_list: Option<Vec<serde_json::Value>>,
    /// Whether the code uses no privacy interface (passed through).
    pub privacy_api_not_use: Option<bool>,
}

/// An audit's state as the platform reports it (`get_auditstatus` or a pushed event).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlatformAudit {
    /// The audit's state.
    pub status: AuditStatus,
    /// Why it was rejected or delayed.
    pub reason: Option<String>,
    /// Media ids of the screenshots a rejection comes with.
    pub screenshots: Vec<String>,
    /// When it was decided, when the platform says.
    pub at: Option<Timestamp>,
}

/// The gray release plan (`getgrayreleaseplan`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GrayPlan {
    /// 0 init, 1 running, 2 paused, 3 done, 4 deleted.
    pub status: i64,
    /// The percentage of users it reaches.
    pub gray_percentage: u8,
    /// When it was created, Unix seconds.
    pub create_timestamp: Option<i64>,
}

/// One version as `getversioninfo` or `get_history_version` report it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct VersionRecord {
    /// The platform's version number (`app_version`), where reported: what a rollback names.
    pub app_version: Option<i64>,
    /// The version users see.
    pub user_version: String,
    /// The version's description.
    pub user_desc: String,
    /// Unix seconds.
    pub time: Option<i64>,
}

/// The live and trial versions (`getversioninfo`).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct VersionInfo {
    /// The live version, if any.
    pub release: Option<VersionRecord>,
    /// The trial version, if any.
    pub experience: Option<VersionRecord>,
}

/// A draft in the template-development mini-program (`gettemplatedraftlist`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateDraft {
    /// The draft's id, which adding it to the template library takes.
    pub draft_id: i64,
    /// The version it was uploaded as.
    pub user_version: String,
    /// Its description.
    pub user_desc: String,
    /// When it was uploaded, Unix seconds.
    pub create_time: i64,
}

/// A template of the library (`gettemplatelist`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    /// The template's id, which a commit takes.
    pub template_id: i64,
    /// The version it was uploaded as.
    pub user_version: String,
    /// Its description.
    pub user_desc: String,
    /// When it was added, Unix seconds.
    pub create_time: i64,
}

/// The uploader's work: a kept package, unpacked by the uploader and uploaded as `version` to
/// the platform's template-development mini-program (which the uploader is configured for).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadJob {
    /// The package to upload.
    pub package: StoredPackage,
    /// The version to upload it as.
    pub version: String,
    /// What the draft is described as; it names the upload task, so the draft can be found.
    pub description: String,
}

/// What the uploader reports on success.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UploadReport {
    /// The code package sizes it reports, in bytes, by package name (`__FULL__`,
    /// `__APP__`, sub-packages).
    pub package_sizes: Vec<(String, u64)>,
}

impl UploadReport {
    /// The sizes for a log line: `__FULL__ 1200 bytes, __APP__ 800 bytes`, or `no package sizes`.
    pub fn sizes(&self) -> String {
        if self.package_sizes.is_empty() {
            return "no package sizes".to_owned();
        }
        self.package_sizes.iter().map(|(name, bytes)| format!("{name} {bytes} bytes")).collect::<Vec<_>>().join(", ")
    }
}

// --- events the platform pushes ---------------------------------------------------------------

/// Which of the two event URLs a push came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventUrl {
    /// `/component/events`: authorisation events, addressed to the component.
    Component,
    /// `/component/messages/{appid}`: messages and events of one authorised mini-program.
    Message,
}

/// A pushed event as received: the query parameters and the raw body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRequest {
    /// The `timestamp` query parameter.
    pub timestamp: String,
    /// The `nonce` query parameter.
    pub nonce: String,
    /// The `msg_signature` query parameter, over the timestamp, nonce and encrypted message.
    pub msg_signature: String,
    /// The raw body, exactly as received.
    pub body: Vec<u8>,
}

/// A pushed event, verified and decrypted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlatformEvent {
    /// Stable across re-deliveries (sender, `CreateTime` and kind), for de-duplication.
    pub id: String,
    /// `CreateTime`.
    pub created_at: Timestamp,
    /// What it says.
    pub kind: EventKind,
}

/// What a pushed event says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventKind {
    /// A new `component_verify_ticket` (pushed every ten minutes).
    VerifyTicket {
        /// The ticket.
        ticket: Secret,
    },
    /// A mini-program was authorised (`authorized`), or its grants changed
    /// (`updateauthorized`).
    Authorized {
        /// The mini-program authorised.
        authorizer_appid: String,
        /// The code that `api_query_auth` exchanges for the authorisation.
        authorization_code: Secret,
        /// The pre-auth code the authorisation page was opened with.
        pre_auth_code: Option<String>,
        /// Whether its grants changed (`updateauthorized`) rather than a new authorisation.
        update: bool,
    },
    /// A mini-program revoked its authorisation (`unauthorized`).
    Unauthorized {
        /// The mini-program.
        authorizer_appid: String,
    },
    /// An audit result for the mini-program the message URL names; `to_user` is its `gh_…`.
    Audit {
        /// The mini-program's original id (`gh_…`).
        to_user: String,
        /// The audit's outcome.
        result: PlatformAudit,
    },
    /// An event or message we do not act on; acknowledged.
    Other {
        /// The event's or message's name, for the log.
        name: String,
    },
}

/// Why a push was not accepted; nothing changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    /// `msg_signature` does not match: answered 401.
    #[error("the msg_signature does not verify")]
    BadSignature,
    /// The decrypted message names another app than our component, or the message URL's
    /// mini-program is not one authorised here: answered 401.
    #[error("the message is not addressed to this platform")]
    ForeignAppid,
    /// Not the expected XML, or not decryptable: answered 400.
    #[error("the event is malformed: {0}")]
    Malformed(String),
    /// The component credentials are not configured.
    #[error("the third-party platform is not configured")]
    NotConfigured,
    /// The event was valid but storing its effect failed; the platform retries.
    #[error("the event could not be processed now")]
    Unavailable,
}

/// What a push did; every outcome is answered `success`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventOutcome {
    /// The event changed what we keep.
    Applied,
    /// Seen before: nothing changed.
    Duplicate,
    /// Valid but said nothing new (an older ticket, a stale audit result).
    Stale,
    /// About something we do not know (an audit with none running); logged.
    Unknown,
    /// An event we do not act on.
    Ignored,
}

/// A mini-program's server domains (`/wxa/modify_domain`) and web-view domains
/// (`/wxa/setwebviewdomain`): each list holds `https://` host names (`wss://` too for
/// sockets), with no IP address, port or path. A third-party release does not carry them over,
/// so they are set on each mini-program before its first release.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ServerDomains {
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

/// Who answers users' privacy questions, and how they are told of changes
/// (`owner_setting` of `setprivacysetting`). At least one contact is required.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PrivacyOwner {
    /// A contact e-mail address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::schemas::email_or_null))]
    pub contact_email: Option<String>,
    /// A contact phone number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::schemas::phone_or_null))]
    pub contact_phone: Option<String>,
    /// A contact Weixin id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::schemas::contact_text_or_null))]
    pub contact_weixin: Option<String>,
    /// A contact QQ number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::schemas::qq_or_null))]
    pub contact_qq: Option<String>,
    /// How users are told of changes to the privacy notice.
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::schemas::short_text))]
    pub notice_method: String,
}

/// One kind of user data the mini-program collects, and what for.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PrivacyItem {
    /// The platform's key for the data, e.g. `UserInfo`, `Location`, `PhoneNumber`.
    #[cfg_attr(feature = "openapi", schema(pattern = "^[A-Za-z0-9]{1,64}$"))]
    pub privacy_key: String,
    /// What the mini-program uses it for.
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::schemas::short_text))]
    pub privacy_text: String,
}

/// A mini-program's privacy settings (`setprivacysetting` / `getprivacysetting`, `privacy_ver`
/// 2), which the platform requires before an audit.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PrivacySettings {
    /// The privacy contact.
    pub owner_setting: PrivacyOwner,
    /// The user data collected (keys unique).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_items = 100))]
    pub setting_list: Vec<PrivacyItem>,
}

/// The audit quota shared by every mini-program of the third-party platform
/// (`/wxa/queryquota`): each submitted audit spends one unit of `rest`, even if it is rejected
/// or withdrawn; a speed-up spends one of `speedup_rest`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuditQuota {
    /// Audits that may still be submitted this month.
    pub rest: i64,
    /// Audits allowed per month.
    pub limit: i64,
    /// Speed-ups left.
    pub speedup_rest: i64,
    /// Speed-ups allowed.
    pub speedup_limit: i64,
}

/// A service category set on the mini-program (`/wxa/get_category`); an audit needs one.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Category {
    /// The first-level category's id.
    pub first_id: i64,
    /// The first-level category's name.
    pub first_class: String,
    /// The second-level category's id.
    pub second_id: i64,
    /// The second-level category's name.
    pub second_class: String,
}
