//! The mini-program domain's ports: what lets us act for a tenant's mini-program
//! ([`AuthorizationRepo`]), the release pipeline's tasks ([`ReleaseTaskRepo`]), kept code
//! packages ([`PackageStore`]), the third-party platform ([`MiniProgramPlatform`]), the package
//! uploader ([`CodeUploader`]) and the package inspector ([`PackageInspector`]).
use crate::campaign::{Campaign, CampaignTenant, CampaignTenantStatus};
use crate::lifecycle::UploadStatus;
use crate::model::*;
use crate::package::{PackageError, PackageInfo, PackageLimits};
use async_trait::async_trait;
use atrium_kernel::{AuditRecord, Effects, Id, Page, Party, Result, Secret, Timestamp};
use std::path::PathBuf;

/// Storage of what lets us act for a tenant's mini-program: the tenants in a caller's scope,
/// the tenants' authorisations and the attempts that lead to them, the platform's verify
/// ticket, and the pushed events already processed.
///
/// The store encrypts [`Secret`] fields at rest (the refresh token, the verify ticket) and
/// decrypts them on read. Every write that must be atomic is one method here.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait AuthorizationRepo: Send + Sync + 'static {
    /// The tenant if it is in `scope`; `None` otherwise.
    async fn tenant(&self, scope: Party, tenant_id: Id) -> Result<Option<ReleaseTenant>>;

    /// The tenant's authorisation (authorised or revoked), with its refresh token decrypted.
    async fn get_authorization(&self, tenant_id: Id) -> Result<Option<Authorization>>;
    /// The authorisation of the mini-program `authorizer_appid`, whichever tenant holds it.
    async fn authorization_by_appid(&self, authorizer_appid: String) -> Result<Option<Authorization>>;
    /// Up to `limit` authorised mini-programs of tenants in `scope` (of partner `partner_id`
    /// too, when given), by tenant id from `after_tenant_id` on (exclusive).
    async fn authorized_in_scope(
        &self,
        scope: Party,
        partner_id: Option<Id>,
        after_tenant_id: Id,
        limit: u32,
    ) -> Result<Vec<Authorization>>;
    /// Inserts or replaces the tenant's authorisation (one per tenant) with its audit record,
    /// in one transaction. MUST return `Conflict` when another tenant's authorisation holds
    /// the same `authorizer_appid` (a unique index).
    async fn save_authorization(&self, authorization: Authorization, effects: Effects) -> Result<Authorization>;
    /// Writes an audit entry of a change that has no record of ours: a tenant's settings on
    /// the platform (its server domains, its privacy settings).
    async fn record_audit(&self, audit: AuditRecord) -> Result<()>;

    /// Stores an authorisation attempt until its state comes back or it expires.
    async fn insert_authorization_attempt(&self, attempt: AuthorizationAttempt) -> Result<()>;
    /// Removes and returns the attempt with this state hash: a state is used once.
    async fn take_authorization_attempt(&self, state_hash: String) -> Result<Option<AuthorizationAttempt>>;
    /// The attempt that handed out `pre_auth_code` (an `authorized` event names it), left in
    /// place.
    async fn authorization_attempt_by_code(&self, pre_auth_code: String) -> Result<Option<AuthorizationAttempt>>;

    /// The newest verify ticket the platform pushed, decrypted; `None` before the first.
    async fn verify_ticket(&self) -> Result<Option<VerifyTicket>>;
    /// Keeps `ticket` unless the stored one is as new or newer (by `created_at`), in one
    /// conditional write; returns whether it wrote.
    async fn save_verify_ticket(&self, ticket: VerifyTicket) -> Result<bool>;

    /// Whether the pushed event `event_id` was already processed.
    async fn event_seen(&self, event_id: String) -> Result<bool>;
    /// Records that `event_id` was processed. MUST be idempotent.
    async fn record_event(&self, event_id: String, kind: String, at: Timestamp) -> Result<()>;

    /// Deletes at most `batch` authorisation attempts that expired before
    /// `attempts_expired_before` and at most `batch` processed event ids recorded before
    /// `events_before`, and returns how many of each went. Each delete is bounded so no call
    /// holds the database for long; a caller repeats it while a full batch comes back. Rows
    /// another caller removed first are simply not counted, so purges running at once on
    /// several instances are safe, and a second purge with the same cut-offs removes nothing.
    async fn purge_authorization_records(
        &self,
        attempts_expired_before: Timestamp,
        events_before: Timestamp,
        batch: u32,
    ) -> Result<PurgedRecords>;
}

/// Storage of the release pipeline's tasks: the upload tasks (with the versions they use),
/// the audit tasks (with the one running per tenant) and the release tasks.
///
/// Task changes are conditional writes against the state read, so racing writers never move
/// a record back; every write that must be atomic is one method here.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait ReleaseTaskRepo: Send + Sync + 'static {
    /// Records one spend in `bucket` at `at` if, in each of `windows`, the bucket holds fewer
    /// spends than the window's limit since `at` minus its period; otherwise records nothing
    /// and names the full window and when its oldest spend leaves it. Atomic against every
    /// other spend of the bucket, on every instance: calls at the same moment never pass a
    /// limit together.
    async fn spend(&self, bucket: String, at: Timestamp, windows: Vec<crate::budget::Window>) -> Result<crate::budget::Spent>;
    /// Takes back the spend recorded in `bucket` at `at` (the call it was for did not reach
    /// the platform, or the platform refused it).
    async fn give_back(&self, bucket: String, at: Timestamp) -> Result<()>;
    /// Stores a new upload task and returns it with its id. MUST return `Conflict` when the
    /// tenant already has a task with this `version` (a unique index on
    /// `(tenant_id, version)`).
    async fn insert_upload_task(&self, task: UploadTask) -> Result<UploadTask>;
    /// The task if its tenant is in `scope`.
    async fn upload_task(&self, scope: Party, id: Id) -> Result<Option<UploadTask>>;
    /// Whether the tenant already has an upload task with this version.
    async fn upload_version_used(&self, tenant_id: Id, version: String) -> Result<bool>;
    /// The tenant's most recently finished `uploaded` task: the code the platform holds.
    async fn latest_uploaded(&self, tenant_id: Id) -> Result<Option<UploadTask>>;
    /// Writes the task's mutable fields (status, template id, errcode, error, started,
    /// finished, updated) only if the stored status still equals `read_status`; returns
    /// whether it wrote.
    async fn update_upload_task(&self, task: UploadTask, read_status: UploadStatus) -> Result<bool>;
    /// Tasks whose tenant is in `scope`, filtered, newest first by default.
    async fn list_upload_tasks(&self, scope: Party, query: UploadTaskQuery) -> Result<Page<UploadTask>>;

    /// Stores a new audit task and returns it with its id. MUST return `Conflict` when the
    /// tenant already has an audit that is `auditing` or `delayed`.
    async fn insert_audit_task(&self, task: AuditTask) -> Result<AuditTask>;
    /// The task if its tenant is in `scope`.
    async fn audit_task(&self, scope: Party, id: Id) -> Result<Option<AuditTask>>;
    /// The tenant's newest audit task.
    async fn latest_audit_task(&self, tenant_id: Id) -> Result<Option<AuditTask>>;
    /// The tenant's audit that is `auditing` or `delayed`, if any.
    async fn running_audit(&self, tenant_id: Id) -> Result<Option<AuditTask>>;
    /// Writes the task's mutable fields (status, reason, screenshots, decided, release
    /// state, updated) and `effects` only if the stored status and release state still equal
    /// `read`; returns whether it wrote.
    async fn update_audit_task(&self, task: AuditTask, read: AuditState, effects: Effects) -> Result<bool>;
    /// One page of the audit tasks in `scope` that match `query`, newest first unless sorted otherwise.
    async fn list_audit_tasks(&self, scope: Party, query: AuditTaskQuery) -> Result<Page<AuditTask>>;

    /// Stores a release task and returns it with its id.
    async fn insert_release_task(&self, task: ReleaseTask) -> Result<ReleaseTask>;
    /// Records a release the platform carried out, in one transaction: writes `audit` as
    /// [`update_audit_task`](Self::update_audit_task) does (only over the state it was read
    /// in), stores `task` and writes `effects`. Returns the stored release task, or `None` when
    /// the audit task changed since it was read; then nothing is written.
    async fn record_release(&self, task: ReleaseTask, audit: AuditUpdate, effects: Effects) -> Result<Option<ReleaseTask>>;
}

/// Where kept code packages live, each under its content hash (SHA-256, lower-case hex): a
/// record of it (size, project root, first uploader and time) and its content.
///
/// The adapter decides where the content is: the default keeps one file per package in a
/// directory every instance shares (`ATRIUM_PACKAGE_DIR`); one keeping packages in the
/// database or an object store fits the same port, as the content is reached only through
/// [`put`](Self::put) and [`open`](Self::open). The same content uploaded twice, by any
/// tenants, is kept once.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait PackageStore: Send + Sync + 'static {
    /// Takes the checked package file at `file` into keeping under `info.sha256` and records
    /// it, the first keeping naming `tenant_id`. The file is consumed: moved into keeping, or
    /// removed when the same content is kept already (whose first record is kept too).
    /// Returns the kept package.
    async fn put(&self, tenant_id: Id, info: PackageInfo, file: PathBuf) -> Result<StoredPackage>;
    /// The record of the kept package with this SHA-256, if any.
    async fn get(&self, sha256: String) -> Result<Option<StoredPackage>>;
    /// Whether the package with this SHA-256 is kept: its record and its content.
    async fn exists(&self, sha256: String) -> Result<bool>;
    /// The kept package opened for reading: its record and a local file of its content,
    /// readable while the handle lives; `None` when no package with this SHA-256 is
    /// recorded.
    async fn open(&self, sha256: String) -> Result<Option<PackageFile>>;
    /// Removes the package with this SHA-256, its record and its content; returns whether it
    /// was kept. MUST return `Conflict` while an upload task refers to it.
    async fn delete(&self, sha256: String) -> Result<bool>;
}

/// Storage of release campaigns and their tenants. Every write of a campaign or of a tenant's
/// progress is conditional on the revision it read (`false` when it changed since), so
/// instances working on one campaign never both take a step.
///
/// While a campaign is running or paused its tenants are *active*: a tenant is active in one
/// campaign at most, which the store enforces (a unique index), so two campaigns naming one
/// tenant cannot both start, even at the same moment on two instances.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait CampaignRepo: Send + Sync + 'static {
    /// Stores a new campaign and its tenants (all `pending`, in no wave) in one transaction,
    /// with its effects. `Conflict` (`tenant_in_campaign`) naming the first tenant that
    /// is active in another campaign.
    async fn insert_campaign(&self, campaign: Campaign, tenants: Vec<CampaignTenant>, effects: Effects) -> Result<Campaign>;
    /// The campaign, if the scope sees it: the platform sees every campaign, a partner its
    /// own, a tenant none.
    async fn campaign(&self, scope: Party, id: Id) -> Result<Option<Campaign>>;
    /// The campaigns the scope sees.
    async fn list_campaigns(&self, scope: Party, query: crate::campaign::CampaignQuery) -> Result<Page<Campaign>>;
    /// Writes the campaign if its revision is still `read_revision` (storing
    /// `read_revision + 1`), with `effects`; its tenants become active when it is
    /// running or paused and inactive otherwise, in the same transaction. `Conflict`
    /// (`tenant_in_campaign`) when one of its tenants is active in another campaign.
    async fn update_campaign(&self, campaign: Campaign, read_revision: i64, effects: Effects) -> Result<bool>;
    /// A page of the campaign's tenants that are in `scope` now: the platform sees every one,
    /// a partner those that are its tenants today (not one that has moved to another partner
    /// since the campaign was created).
    async fn campaign_tenants(
        &self,
        scope: Party,
        campaign_id: Id,
        query: crate::campaign::CampaignTenantQuery,
    ) -> Result<Page<CampaignTenant>>;
    /// Up to `limit` of the campaign's tenants (of one wave when given) that are *not* in
    /// `scope` now, by tenant id: for a partner, those that have moved to another partner or
    /// to none since the campaign was created; for the platform, none.
    async fn tenants_outside(&self, scope: Party, campaign_id: Id, wave: Option<u32>, limit: u32) -> Result<Vec<Id>>;
    /// Every tenant of one wave of the campaign, by tenant id.
    async fn wave_tenants(&self, campaign_id: Id, wave: u32) -> Result<Vec<CampaignTenant>>;
    /// Puts up to `limit` tenants of the campaign that are in no wave yet (by tenant id) into
    /// `wave`; returns how many.
    async fn assign_wave(&self, campaign_id: Id, wave: u32, limit: u32) -> Result<u32>;
    /// Writes the tenant's progress if its revision is still `read_revision` (storing
    /// `read_revision + 1`).
    async fn update_campaign_tenant(&self, tenant: CampaignTenant, read_revision: i64) -> Result<bool>;
    /// How many of the campaign's tenants in `scope` (as [`CampaignRepo::campaign_tenants`]
    /// counts them) are in each status (statuses with none left out), of one wave when given.
    async fn campaign_counts(&self, scope: Party, campaign_id: Id, wave: Option<u32>) -> Result<Vec<(CampaignTenantStatus, u32)>>;
    /// Sets the campaign's retryable tenants (`failed`, `rejected`, `preflight_failed`) of
    /// waves up to `up_to_wave` — only those in `tenant_ids` when given — back to `pending`,
    /// their reason, errcode and attempts cleared; returns how many.
    async fn retry_tenants(&self, campaign_id: Id, up_to_wave: u32, tenant_ids: Option<Vec<Id>>, at: Timestamp) -> Result<u32>;
    /// Marks the campaign's tenants that have not started (`pending`) `skipped`; returns how
    /// many.
    async fn skip_pending(&self, campaign_id: Id, at: Timestamp) -> Result<u32>;
}

/// Why a call to the mini-program platform failed. Messages never carry a token or secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlatformError {
    /// The platform answered with a non-zero `errcode`. A stale authorizer token
    /// (40001/42001) is refreshed and retried once by the adapter before this is returned.
    #[error("the mini-program platform refused the call (errcode {errcode}): {errmsg}")]
    Refused {
        /// The platform's error code.
        errcode: i64,
        /// The platform's error message.
        errmsg: String,
    },
    /// No answer (time-out, connection) after the bounded retries, an HTTP error, or an
    /// unreadable answer.
    #[error("the mini-program platform is unavailable: {0}")]
    Unavailable(String),
    /// Nothing to call with yet: no verify ticket has arrived.
    #[error("the third-party platform has no verify ticket yet; it pushes one every 10 minutes")]
    NoTicket,
}

impl PlatformError {
    /// The platform's errcode, for a refusal.
    pub fn errcode(&self) -> Option<i64> {
        match self {
            PlatformError::Refused { errcode, .. } => Some(*errcode),
            _ => None,
        }
    }
}

/// What a mini-program platform call returns.
pub type PlatformResult<T> = std::result::Result<T, PlatformError>;

/// The mini-program platform as a third-party platform sees it: the component's own calls
/// (pre-auth codes, authorisations, the template library) and code management of one
/// authorised mini-program, in domain words.
///
/// The adapter derives the component token from the verify ticket it is given and caches it
/// until shortly before it expires; it caches each mini-program's authorizer token the same
/// way, and on 40001/42001 refreshes it and retries the call exactly once.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait MiniProgramPlatform: Send + Sync + 'static {
    /// A pre-auth code for the authorisation page.
    async fn pre_auth_code(&self, verify_ticket: &Secret) -> PlatformResult<PreAuthCode>;
    /// The platform's authorisation page for `pre_auth_code`, redirecting to `redirect_uri`.
    fn authorize_url(&self, pre_auth_code: &str, redirect_uri: &str) -> String;
    /// What an authorisation code grants (`api_query_auth`).
    async fn query_auth(&self, verify_ticket: &Secret, authorization_code: &Secret) -> PlatformResult<AuthorizationGrant>;
    /// The mini-program's public profile: its name and original id.
    async fn authorizer_profile(&self, verify_ticket: &Secret, authorizer_appid: &str) -> PlatformResult<AuthorizerProfile>;

    /// The drafts in the template-development mini-program.
    async fn template_drafts(&self, verify_ticket: &Secret) -> PlatformResult<Vec<TemplateDraft>>;
    /// Adds a draft to the template library.
    async fn add_to_template(&self, verify_ticket: &Secret, draft_id: i64) -> PlatformResult<()>;
    /// The templates of the library.
    async fn templates(&self, verify_ticket: &Secret) -> PlatformResult<Vec<Template>>;

    /// Commits template code to the tenant's mini-program (its trial version).
    async fn commit(&self, access: &AuthorizerAccess, commit: &CodeCommit) -> PlatformResult<()>;
    /// Submits the committed code for audit; returns the `auditid`.
    async fn submit_audit(&self, access: &AuthorizerAccess, submission: &AuditSubmission) -> PlatformResult<i64>;
    /// The audit's state on the platform.
    async fn audit_status(&self, access: &AuthorizerAccess, auditid: i64) -> PlatformResult<PlatformAudit>;
    /// Releases the passed audit to every user.
    async fn release(&self, access: &AuthorizerAccess) -> PlatformResult<()>;
    /// Releases the passed audit to `percentage` % of users (a higher percentage than before).
    async fn gray_release(&self, access: &AuthorizerAccess, percentage: u8) -> PlatformResult<()>;
    /// The current gray release plan.
    async fn gray_plan(&self, access: &AuthorizerAccess) -> PlatformResult<GrayPlan>;
    /// Stops a gray release: every user keeps the previous version.
    async fn revert_gray_release(&self, access: &AuthorizerAccess) -> PlatformResult<()>;
    /// Back to `app_version`, or to the previous version.
    async fn revert_release(&self, access: &AuthorizerAccess, app_version: Option<i64>) -> PlatformResult<()>;
    /// Up to five earlier versions a rollback can go to.
    async fn history_versions(&self, access: &AuthorizerAccess) -> PlatformResult<Vec<VersionRecord>>;
    /// The live and trial versions.
    async fn version_info(&self, access: &AuthorizerAccess) -> PlatformResult<VersionInfo>;
    /// The trial version's QR code, a JPEG, opening `path` when given.
    async fn experience_qr(&self, access: &AuthorizerAccess, path: Option<String>) -> PlatformResult<Vec<u8>>;

    /// The server and web-view domains set on the mini-program (`modify_domain` and
    /// `setwebviewdomain` with `action: "get"`).
    async fn domains(&self, access: &AuthorizerAccess) -> PlatformResult<ServerDomains>;
    /// Replaces the server and web-view domains (`action: "set"`).
    async fn set_domains(&self, access: &AuthorizerAccess, domains: &ServerDomains) -> PlatformResult<()>;
    /// The privacy settings (`getprivacysetting`, `privacy_ver` 2); empty when none are set.
    async fn privacy(&self, access: &AuthorizerAccess) -> PlatformResult<PrivacySettings>;
    /// Replaces the privacy settings (`setprivacysetting`, `privacy_ver` 2).
    async fn set_privacy(&self, access: &AuthorizerAccess, settings: &PrivacySettings) -> PlatformResult<()>;
    /// The service categories set on the mini-program (`get_category`).
    async fn categories(&self, access: &AuthorizerAccess) -> PlatformResult<Vec<Category>>;
    /// The third-party platform's audit quota (`queryquota`), asked with any authorised
    /// mini-program's token: the quota is the platform's, not the mini-program's.
    async fn audit_quota(&self, access: &AuthorizerAccess) -> PlatformResult<AuditQuota>;
    /// Asks the reviewers to hurry the audit `auditid` (`speedupaudit`; spends a speed-up).
    async fn speedup_audit(&self, access: &AuthorizerAccess, auditid: i64) -> PlatformResult<()>;
    /// Withdraws the mini-program's running audit (`undocodeaudit`; the quota unit is not
    /// given back).
    async fn undo_audit(&self, access: &AuthorizerAccess) -> PlatformResult<()>;

    /// Verifies a push's `msg_signature`, decrypts it, checks that it is addressed to our
    /// component, and reads it.
    fn open_event(&self, url: EventUrl, request: &EventRequest) -> std::result::Result<PlatformEvent, EventError>;
}

/// Why the uploader failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UploaderError {
    /// It ran and refused: its error code (e.g. -10008, IP not allowed) and message.
    #[error("the uploader refused the package ({}): {message}", code.map_or("no error code".to_owned(), |c| format!("code {c}")))]
    Rejected {
        /// Its error code, if it gave one.
        code: Option<i64>,
        /// Its error message.
        message: String,
    },
    /// It ran longer than allowed and was stopped.
    #[error("the uploader did not finish within {0} s and was stopped")]
    TimedOut(u64),
    /// It could not be run, or the package could not be prepared for it.
    #[error("the uploader could not run: {0}")]
    Failed(String),
}

/// Uploads a kept package to the platform's template-development mini-program (in
/// production `miniprogram-ci`, run as a child process with a time-out).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait CodeUploader: Send + Sync + 'static {
    /// Unpacks and uploads the package as `job.version`; what the uploader reports of it.
    async fn upload(&self, job: &UploadJob) -> std::result::Result<UploadReport, UploaderError>;
}

/// Checks a package file against [`PackageLimits`] with [`crate::package::inspect`], off the
/// async workers (it reads and decompresses the whole file).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait PackageInspector: Send + Sync + 'static {
    /// Checks the package file at `file`; what it holds, or why it is not acceptable.
    async fn inspect(&self, file: PathBuf, limits: PackageLimits) -> std::result::Result<PackageInfo, PackageError>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::UploadReport;

    #[test]
    fn uploader_outcomes_are_told_in_words() {
        let with = UploaderError::Rejected { code: Some(-10008), message: "invalid ip".into() };
        let without = UploaderError::Rejected { code: None, message: "refused".into() };
        assert_eq!(with.to_string(), "the uploader refused the package (code -10008): invalid ip");
        assert_eq!(without.to_string(), "the uploader refused the package (no error code): refused");
        let report = UploadReport { package_sizes: vec![("__FULL__".into(), 1200), ("__APP__".into(), 800)] };
        assert_eq!(report.sizes(), "__FULL__ 1200 bytes, __APP__ 800 bytes");
        assert_eq!(UploadReport::default().sizes(), "no package sizes");
    }
}
