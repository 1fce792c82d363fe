//! The release pipeline of a tenant's mini-program, through our third-party platform: code
//! uploads (a template of the library, or a package), audits, releases and rollbacks, the
//! consoles' extras, and the audit results the platform pushes: [`PipelineService`].
//!
//! The platform lists none of the uploads, audits or releases, so each is a task we record
//! and reconcile with the platform's status calls. Uploads run as jobs; an audit still running
//! after a while is polled by a job, so a lost event costs time, not correctness. Records only
//! move forward (see `lifecycle`): every write of a task is a conditional update against the
//! state it was read in, retried after a lost race.
//!
//! A template made from a tenant's package is that tenant's: a template upload commits only a
//! template the platform added to the library or one made from the tenant's own package, and
//! anything else fails as a template not in the library (85014), whether or not it exists.
//!
//! Which tenant a caller acts on, whether that tenant's mini-program is authorised, and what a
//! call for it needs are the [`AuthorizationService`]'s; a platform errcode never becomes a
//! 500 (see [`release_platform_error`](super::release_platform_error)), and every platform
//! call is logged with its errcode and the task it belongs to, never with a token.
use super::authorization::{AUDIT_EVENT, AuthorizationService};
use super::platform::{TaskRef, logged};
use crate::api::*;
use crate::budget::{AuditBudgets, Share, Spend, Spent};
use crate::config::ReleaseSettings;
use crate::events;
use crate::lifecycle::{AuditStatus, ReleaseKind, ReleaseStatus, UploadStatus, check_release};
use crate::model::*;
use crate::ports::{
    CodeUploader, MiniProgramPlatform, PackageInspector, PackageStore, PlatformError, PlatformResult, ReleaseTaskRepo, UploaderError,
};
use atrium_kernel::Reason;
use atrium_kernel::{Actor, Clock, Effects, Error, Id, JobStore, NewJob, Page, Party, Result, Secret, StrEnum, Timestamp};
use serde_json::json;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// The job that runs an upload task; payload `{"upload_task_id": N}`.
pub const UPLOAD_JOB: &str = "miniprogram.upload";
/// The job that asks the platform about a running audit; payload `{"audit_task_id": N}`.
pub const AUDIT_POLL_JOB: &str = "miniprogram.audit_poll";

/// How often a conditional write is tried before giving up on a record that keeps changing.
const WRITE_ATTEMPTS: usize = 3;
/// The template is not in the library.
const NO_SUCH_TEMPLATE: i64 = 85014;
/// What a package's upload carries as its description to the template-development
/// mini-program, followed by the upload task's id; its draft and its template carry it too.
const UPLOAD_MARKER: &str = "atrium upload task ";

/// Why a step of an upload run failed.
enum StepError {
    /// Worth another attempt: the platform or the uploader was unavailable.
    Transient(String),
    /// Final: the platform or the uploader refused, or the task cannot run.
    Final { errcode: Option<i64>, message: String },
}

impl From<PlatformError> for StepError {
    fn from(e: PlatformError) -> Self {
        match e {
            PlatformError::Refused { errcode, errmsg } => {
                StepError::Final { errcode: Some(errcode), message: format!("the platform refused (errcode {errcode}): {errmsg}") }
            }
            e => StepError::Transient(e.to_string()),
        }
    }
}

impl From<UploaderError> for StepError {
    fn from(e: UploaderError) -> Self {
        match e {
            UploaderError::Rejected { code, .. } => StepError::Final { errcode: code, message: e.to_string() },
            e @ (UploaderError::TimedOut(_) | UploaderError::Failed(_)) => StepError::Transient(e.to_string()),
        }
    }
}

/// The ports the release pipeline works through, besides the authorisation service.
pub struct PipelinePorts {
    /// Upload, audit and release tasks.
    pub tasks: Arc<dyn ReleaseTaskRepo>,
    /// Kept code packages.
    pub packages: Arc<dyn PackageStore>,
    /// The third-party platform.
    pub platform: Arc<dyn MiniProgramPlatform>,
    /// Checks uploaded packages off the async workers.
    pub inspector: Arc<dyn PackageInspector>,
    /// Uploads kept packages to the template-development mini-program.
    pub uploader: Arc<dyn CodeUploader>,
    /// The durable job queue the upload and audit-poll jobs run from.
    pub jobs: Arc<dyn JobStore>,
}

/// The release pipeline over its ports: template and package uploads, audits, releases and
/// rollbacks, the versions and the experience QR code, the audit results the platform pushes,
/// and the jobs that run uploads and poll audits. It acts on a tenant's mini-program through
/// the [`AuthorizationService`].
pub struct PipelineService {
    authorization: Arc<AuthorizationService>,
    tasks: Arc<dyn ReleaseTaskRepo>,
    packages: Arc<dyn PackageStore>,
    platform: Arc<dyn MiniProgramPlatform>,
    inspector: Arc<dyn PackageInspector>,
    uploader: Arc<dyn CodeUploader>,
    jobs: Arc<dyn JobStore>,
    clock: Arc<dyn Clock>,
    settings: ReleaseSettings,
    /// Tenants whose audit submission this instance is sending to the platform now.
    submitting: Mutex<HashSet<Id>>,
}

/// A tenant's audit submission on its way to the platform: while it lives, no other
/// submission of the tenant leaves this instance. Dropping it (also with the request's future)
/// lets the next one go.
pub(super) struct Submitting<'a> {
    tenants: &'a Mutex<HashSet<Id>>,
    tenant_id: Id,
}

impl Drop for Submitting<'_> {
    fn drop(&mut self) {
        self.tenants.lock().unwrap_or_else(|p| p.into_inner()).remove(&self.tenant_id);
    }
}

impl PipelineService {
    /// A pipeline acting through `authorization`, over its ports, a clock and its settings.
    pub fn new(authorization: Arc<AuthorizationService>, ports: PipelinePorts, clock: Arc<dyn Clock>, settings: ReleaseSettings) -> Self {
        let PipelinePorts { tasks, packages, platform, inspector, uploader, jobs } = ports;
        PipelineService {
            authorization,
            tasks,
            packages,
            platform,
            inspector,
            uploader,
            jobs,
            clock,
            settings,
            submitting: Mutex::new(HashSet::new()),
        }
    }

    /// The authorisation service the pipeline acts through.
    pub fn authorization(&self) -> &Arc<AuthorizationService> {
        &self.authorization
    }

    // --- uploads ---------------------------------------------------------------------------

    /// 409 naming `version` when the tenant used it before.
    async fn version_free(&self, tenant_id: Id, version: &Version) -> Result<()> {
        if self.tasks.upload_version_used(tenant_id, version.as_str().to_owned()).await? {
            return Err(version_used(version.as_str()));
        }
        Ok(())
    }

    /// `POST /miniprogram/upload` (JSON): records an upload task committing a template with
    /// the tenant's `ext_json`, and queues its job.
    pub async fn upload_template(&self, actor: &Actor, input: TemplateUpload) -> Result<UploadTaskView> {
        let tenant = self.authorization.tenant(actor, input.tenant_id).await?;
        if input.template_id < 0 {
            return Err(Error::invalid("template_id", "must not be negative"));
        }
        self.authorization.authorized(tenant.id).await?;
        self.version_free(tenant.id, &input.version).await?;
        let source = UploadSource::Template { template_id: input.template_id, ext_json: serde_json::Value::Object(input.ext_json) };
        self.record_upload(actor, tenant.id, source, input.version, input.description).await
    }

    /// `POST /miniprogram/upload` (multipart): checks the package the HTTP layer streamed to
    /// disk, keeps it by its content hash, records an upload task and queues its job. A bad
    /// package is a 400 (413 when too large) and changes nothing.
    pub async fn upload_package(&self, actor: &Actor, input: PackageUpload) -> Result<UploadTaskView> {
        let tenant = self.authorization.tenant(actor, input.tenant_id).await?;
        self.authorization.authorized(tenant.id).await?;
        self.version_free(tenant.id, &input.version).await?;
        let info = self.inspector.inspect(input.file.clone(), self.settings.package_limits).await?;
        let kept = self.packages.put(tenant.id, info, input.file).await?;
        let source = UploadSource::Package { sha256: kept.sha256, size: kept.size };
        self.record_upload(actor, tenant.id, source, input.version, input.description).await
    }

    async fn record_upload(
        &self,
        actor: &Actor,
        tenant_id: Id,
        source: UploadSource,
        version: Version,
        description: VersionDescription,
    ) -> Result<UploadTaskView> {
        let now = self.clock.now();
        let version = version.into_string();
        let task = UploadTask {
            id: 0,
            tenant_id,
            source,
            version: version.clone(),
            description: description.into_string(),
            status: UploadStatus::Queued,
            template_id: None,
            errcode: None,
            error: None,
            created_by: actor.user_id,
            created_at: now,
            started_at: None,
            finished_at: None,
            updated_at: now,
        };
        let stored = match self.tasks.insert_upload_task(task).await {
            Err(Error::Conflict(..)) => return Err(version_used(&version)),
            other => other?,
        };
        let job = NewJob {
            kind: UPLOAD_JOB.into(),
            tenant_id: Some(tenant_id),
            payload: json!({"upload_task_id": stored.id}),
            run_at: now,
            dedupe_key: Some(format!("upload:{}", stored.id)),
        };
        if let Err(e) = self.jobs.enqueue(job).await {
            // A task no job will run must not look queued.
            let mut failed = stored.clone();
            failed.status = UploadStatus::Failed;
            failed.error = Some("the upload could not be queued; upload again with a new version".into());
            failed.finished_at = Some(now);
            if let Err(store) = self.tasks.update_upload_task(failed, UploadStatus::Queued).await {
                log::error!("upload task {}: marking it failed after the queue refused it failed too: {store}", stored.id);
            }
            return Err(e);
        }
        log::info!("upload task {} of tenant {tenant_id} queued (version {})", stored.id, stored.version);
        let source = match &stored.source {
            UploadSource::Template { template_id, .. } => json!({"template_id": template_id}),
            UploadSource::Package { sha256, size } => json!({"package_sha256": sha256, "package_size": size}),
        };
        let after = json!({"version": stored.version, "description": stored.description, "source": source});
        self.authorization.audit(actor, tenant_id, "miniprogram.upload", ("miniprogram_upload_task", stored.id), None, after).await;
        Ok(stored.into())
    }

    /// `GET /miniprogram/upload-tasks/{id}`.
    pub async fn upload_task(&self, actor: &Actor, id: Id) -> Result<UploadTaskView> {
        Ok(self.tasks.upload_task(actor.party, id).await?.ok_or(Error::NotFound("upload task"))?.into())
    }

    /// One audit task as recorded, without asking the platform.
    pub async fn audit_task(&self, actor: &Actor, id: Id) -> Result<AuditTaskView> {
        Ok(self.tasks.audit_task(actor.party, id).await?.ok_or(Error::NotFound("audit task"))?.into())
    }

    /// `GET /miniprogram/upload-tasks`.
    pub async fn list_upload_tasks(&self, actor: &Actor, params: UploadTaskListParams) -> Result<Page<UploadTaskView>> {
        let query = UploadTaskQuery::try_from(params)?;
        Ok(self.tasks.list_upload_tasks(actor.party, query).await?.map(UploadTaskView::from))
    }

    /// The upload job: runs task `id` (its `attempt`-th run, counting from 1). A finished task
    /// is left alone. When the platform or the uploader is unavailable and attempts are left,
    /// the task stays `running` and this returns `Upstream` so the job is retried; otherwise
    /// the task ends `uploaded` or `failed` (with the errcode) and this returns it.
    pub async fn run_upload(&self, id: Id, attempt: u32) -> Result<UploadTaskView> {
        let mut task = self.tasks.upload_task(Party::Platform, id).await?.ok_or(Error::NotFound("upload task"))?;
        if task.status.start().is_none() {
            return Ok(task.into());
        }
        if task.status == UploadStatus::Queued {
            let read = task.status;
            let now = self.clock.now();
            task.status = UploadStatus::Running;
            task.started_at = Some(now);
            task.updated_at = now;
            if !self.tasks.update_upload_task(task.clone(), read).await? {
                // Another run took it.
                return Ok(self.tasks.upload_task(Party::Platform, id).await?.ok_or(Error::NotFound("upload task"))?.into());
            }
        }
        let outcome = self.upload_steps(&task).await;
        let now = self.clock.now();
        match outcome {
            Ok(template_id) => {
                task.status = UploadStatus::Uploaded;
                task.template_id = Some(template_id);
                task.errcode = None;
                task.error = None;
            }
            Err(StepError::Transient(why)) if attempt < self.settings.upload_attempts => {
                log::warn!("upload task {id}, attempt {attempt}: {why}; it will be retried");
                return Err(Error::Upstream(why));
            }
            Err(StepError::Transient(why)) => {
                task.status = UploadStatus::Failed;
                task.error = Some(format!("{why} (after {attempt} attempts)"));
            }
            Err(StepError::Final { errcode, message }) => {
                task.status = UploadStatus::Failed;
                task.errcode = errcode;
                task.error = Some(message);
            }
        }
        task.finished_at = Some(now);
        task.updated_at = now;
        if !self.tasks.update_upload_task(task.clone(), UploadStatus::Running).await? {
            return Ok(self.tasks.upload_task(Party::Platform, id).await?.ok_or(Error::NotFound("upload task"))?.into());
        }
        log::info!("upload task {id} of tenant {}: {}", task.tenant_id, task.status.as_str());
        Ok(task.into())
    }

    /// Commits the task's code to the tenant's mini-program; returns the template used.
    async fn upload_steps(&self, task: &UploadTask) -> std::result::Result<i64, StepError> {
        let tenant_id = task.tenant_id;
        let here = TaskRef::Upload(task.id);
        let access = self.authorization.access(tenant_id).await.map_err(|e| match e {
            e @ Error::Upstream(_) => StepError::Transient(e.to_string()),
            e => StepError::Final { errcode: None, message: e.to_string() },
        })?;
        let (template_id, ext_json) = match &task.source {
            UploadSource::Template { template_id, ext_json } => {
                self.template_usable(task, *template_id, &access.verify_ticket).await?;
                (*template_id, ext_json.to_string())
            }
            UploadSource::Package { sha256, .. } => {
                let template_id = self.package_to_template(task, sha256, &access.verify_ticket).await?;
                (template_id, json!({"extEnable": true, "extAppid": access.authorizer_appid}).to_string())
            }
        };
        let commit = CodeCommit { template_id, ext_json, user_version: task.version.clone(), user_desc: task.description.clone() };
        let r = self.platform.commit(&access, &commit).await;
        if let Err(e) = logged(tenant_id, "commit", here, r) {
            self.authorization.note_revoked(tenant_id, &e).await;
            return Err(e.into());
        }
        Ok(template_id)
    }

    /// Whether a template upload may commit `template_id`: a template the platform added to
    /// the library is shared, and a template made from a package belongs to the tenant whose
    /// upload task made it (its description is that task's marker). A template that is not in
    /// the library, or is another tenant's, ends the task with the same 85014 and the same
    /// message, so template ids cannot be probed for other tenants' code. Asked just before
    /// the commit, so a template being made from another tenant's package right now is seen
    /// as theirs too.
    async fn template_usable(&self, task: &UploadTask, template_id: i64, ticket: &Secret) -> std::result::Result<(), StepError> {
        let templates = self.platform.templates(ticket).await;
        let templates = logged(task.tenant_id, "gettemplatelist", TaskRef::Upload(task.id), templates)?;
        let refused = || StepError::Final {
            errcode: Some(NO_SUCH_TEMPLATE),
            message: format!("the template is not in the template library (errcode {NO_SUCH_TEMPLATE})"),
        };
        let Some(template) = templates.iter().find(|t| t.template_id == template_id) else { return Err(refused()) };
        let Some(maker) = template.user_desc.strip_prefix(UPLOAD_MARKER) else { return Ok(()) };
        // A marker naming no task of ours is nobody's to share either.
        let owner = match maker.parse::<Id>() {
            Ok(id) => self
                .tasks
                .upload_task(Party::Platform, id)
                .await
                .map_err(|e| StepError::Transient(e.to_string()))?
                .map(|maker| maker.tenant_id),
            Err(_) => None,
        };
        if owner == Some(task.tenant_id) {
            return Ok(());
        }
        log::warn!(
            "upload task {} of tenant {} named template {template_id}, made from a package of {}: refused as not in the library",
            task.id,
            task.tenant_id,
            owner.map_or_else(|| "no known tenant".to_owned(), |t| format!("tenant {t}"))
        );
        Err(refused())
    }

    /// Uploads a kept package to the template-development mini-program, adds its draft to
    /// the template library and returns the new template's id. The draft and the template
    /// are found by a description naming the task, as versions of different tenants may be
    /// equal.
    async fn package_to_template(&self, task: &UploadTask, sha256: &str, ticket: &Secret) -> std::result::Result<i64, StepError> {
        let (tenant_id, here) = (task.tenant_id, TaskRef::Upload(task.id));
        let file = self
            .packages
            .open(sha256.to_owned())
            .await
            .map_err(|e| StepError::Transient(e.to_string()))?
            .ok_or_else(|| StepError::Final { errcode: None, message: format!("package {sha256} is no longer kept") })?;
        let marker = upload_marker(task);
        let job = UploadJob { package: file.package().clone(), version: task.version.clone(), description: marker.clone() };
        let report = self.uploader.upload(&job).await.inspect_err(|e| log::warn!("upload task {}: {e}", task.id))?;
        // The package's local file is no longer needed (a copy of a store elsewhere goes now).
        drop(file);
        log::info!("upload task {}: the uploader reported {}", task.id, report.sizes());

        let drafts = self.platform.template_drafts(ticket).await;
        let drafts = logged(tenant_id, "gettemplatedraftlist", here, drafts)?;
        let draft = drafts
            .into_iter()
            .filter(|d| d.user_desc == marker)
            .max_by_key(|d| (d.create_time, d.draft_id))
            .ok_or_else(|| StepError::Transient("the uploaded draft is not listed by the platform yet".into()))?;
        let added = self.platform.add_to_template(ticket, draft.draft_id).await;
        logged(tenant_id, "addtotemplate", here, added)?;
        let templates = self.platform.templates(ticket).await;
        let templates = logged(tenant_id, "gettemplatelist", here, templates)?;
        templates
            .into_iter()
            .filter(|t| t.user_desc == marker)
            .max_by_key(|t| (t.create_time, t.template_id))
            .map(|t| t.template_id)
            .ok_or_else(|| StepError::Transient("the new template is not listed by the platform yet".into()))
    }

    // --- audits ----------------------------------------------------------------------------

    // --- what tenants spend of the platform's audit resources (see `crate::budget`) --------

    /// Spends one `spend` of the tenant's budget when `share` is the tenant's (nothing for the
    /// platform's, or a kind without a budget); 429 when one of its windows is full. What was
    /// recorded, to give back when the call does not go through.
    async fn spend(&self, share: Share, tenant_id: Id, spend: Spend) -> Result<Option<(String, Timestamp)>> {
        let windows = self.settings.budgets.windows(spend).to_vec();
        if share == Share::Platform || windows.is_empty() {
            return Ok(None);
        }
        let bucket = spend.bucket(tenant_id);
        let at = self.clock.now();
        match self.tasks.spend(bucket.clone(), at, windows).await? {
            Spent::Recorded => Ok(Some((bucket, at))),
            Spent::Refused { window, retry_after } => {
                log::warn!(
                    "tenant {tenant_id}: {} refused, its budget of {} in {} s is used",
                    spend.as_str(),
                    window.limit,
                    window.period.num_seconds()
                );
                Err(AuditBudgets::refusal(spend, window, retry_after))
            }
        }
    }

    /// Gives a spend back: its call did not go through.
    async fn give_back(&self, spent: Option<(String, Timestamp)>) {
        if let Some((bucket, at)) = spent
            && let Err(e) = self.tasks.give_back(bucket.clone(), at).await
        {
            log::warn!("{bucket}: a spend whose call failed could not be given back: {e}");
        }
    }

    /// For a call on the tenant's share: 429 while what the platform has left of the resource
    /// (the audit quota, the speed-ups) is within the platform's reserve. When the platform
    /// cannot be asked, the tenant's budget alone applies.
    async fn leaves_reserve(&self, share: Share, tenant_id: Id, access: &AuthorizerAccess, spend: Spend) -> Result<()> {
        let budgets = &self.settings.budgets;
        if share == Share::Platform || budgets.reserve_percent == 0 || spend == Spend::Undo {
            return Ok(());
        }
        let quota = match logged(tenant_id, "queryquota", TaskRef::None, self.platform.audit_quota(access).await) {
            Ok(q) => q,
            Err(e) => {
                log::warn!(
                    "tenant {tenant_id}: the audit quota could not be asked before a {}; its budget alone applies: {e}",
                    spend.as_str()
                );
                return Ok(());
            }
        };
        let (rest, limit, what) = match spend {
            Spend::Speedup => (quota.speedup_rest, quota.speedup_limit, "speed-ups"),
            _ => (quota.rest, quota.limit, "audit quota"),
        };
        if budgets.leaves_reserve(rest, limit) {
            return Ok(());
        }
        Err(Error::RateLimited {
            message: format!(
                "the platform keeps the last {} % of its {what} ({rest} of {limit} left) for its own releases; try again when it renews",
                budgets.reserve_percent
            ),
            retry_after_secs: 3_600,
        })
    }

    /// `POST /miniprogram/audit/submit`: submits the tenant's latest uploaded code for audit.
    /// 409 when the upload is not `uploaded`, was followed by another upload, or another
    /// audit of the tenant is running (85009). A tenant's or partner's submission spends the
    /// tenant's budget and leaves the platform's reserve (429 otherwise).
    pub async fn submit_audit(&self, actor: &Actor, input: AuditSubmit) -> Result<AuditTaskView> {
        self.submit(actor, input, Share::of(actor.party)).await
    }

    /// A release campaign's submission: on the platform's share (no tenant budget; the
    /// reserve is the platform's).
    pub async fn submit_audit_for_campaign(&self, actor: &Actor, input: AuditSubmit) -> Result<AuditTaskView> {
        self.submit(actor, input, Share::Platform).await
    }

    async fn submit(&self, actor: &Actor, input: AuditSubmit, share: Share) -> Result<AuditTaskView> {
        let upload = self
            .tasks
            .upload_task(actor.party, input.upload_task_id)
            .await?
            .ok_or_else(|| Error::no_such("upload_task_id", "no such upload task"))?;
        let blocked = |reason: Reason, m: String| Error::blocked(reason, "upload_task_id", m);
        if upload.status != UploadStatus::Uploaded {
            return Err(blocked(
                Reason::State,
                format!("the upload is {}; only an uploaded version can be submitted", upload.status.as_str()),
            ));
        }
        if let Some(latest) = self.tasks.latest_uploaded(upload.tenant_id).await?.filter(|l| l.id != upload.id) {
            return Err(blocked(
                Reason::Superseded,
                format!("version {} was uploaded after this one, and the platform audits the latest upload", latest.version),
            ));
        }
        // From here to the audit task's insert, one submission per tenant at a time: the
        // platform runs one audit per mini-program, and a second submission sent beside the
        // first would leave it auditing code we have no task for.
        let _submitting = self.start_submission(upload.tenant_id).ok_or_else(|| {
            blocked(Reason::AuditRunning, "another audit submission of the tenant is on its way to the platform (errcode 85009)".into())
        })?;
        if let Some(running) = self.tasks.running_audit(upload.tenant_id).await? {
            return Err(blocked(
                Reason::AuditRunning,
                format!("audit task {} of version {} is still running (errcode 85009)", running.id, running.version),
            ));
        }
        let access = self.authorization.access(upload.tenant_id).await?;
        self.leaves_reserve(share, upload.tenant_id, &access, Spend::Submit).await?;
        let spent = self.spend(share, upload.tenant_id, Spend::Submit).await?;
        let submission = AuditSubmission {
            version_desc: input.version_desc.map(VersionDescription::into_string).filter(|d| !d.is_empty()),
            item_list: input.item_list.map(|items| items.into_iter().map(serde_json::Value::Object).collect()),
            privacy_api_not_use: input.privacy_api_not_use,
        };
        let r = self.platform.submit_audit(&access, &submission).await;
        let auditid = match logged(upload.tenant_id, "submit_audit", TaskRef::Upload(upload.id), r) {
            Ok(id) => id,
            Err(e) => {
                self.give_back(spent).await;
                return Err(self.authorization.failed(upload.tenant_id, e).await);
            }
        };
        let now = self.clock.now();
        let task = AuditTask {
            id: 0,
            tenant_id: upload.tenant_id,
            upload_task_id: upload.id,
            version: upload.version.clone(),
            auditid,
            status: AuditStatus::Auditing,
            reason: None,
            screenshots: Vec::new(),
            submitted_at: now,
            decided_at: None,
            release: ReleaseState::default(),
            created_by: actor.user_id,
            updated_at: now,
        };
        let stored = match self.tasks.insert_audit_task(task).await {
            Err(Error::Conflict(..)) => {
                return Err(blocked(Reason::AuditRunning, "another audit of the tenant is running (errcode 85009)".into()));
            }
            other => other?,
        };
        log::info!("audit task {} (auditid {auditid}) of tenant {} submitted", stored.id, stored.tenant_id);
        let after = json!({"upload_task_id": stored.upload_task_id, "version": stored.version, "auditid": auditid});
        self.authorization
            .audit(actor, stored.tenant_id, "miniprogram.audit.submit", ("miniprogram_audit_task", stored.id), None, after)
            .await;
        self.schedule_poll(&stored).await;
        Ok(stored.into())
    }

    /// Marks the tenant's submission as on its way; `None` while another one is.
    pub(super) fn start_submission(&self, tenant_id: Id) -> Option<Submitting<'_>> {
        let fresh = self.submitting.lock().unwrap_or_else(|p| p.into_inner()).insert(tenant_id);
        // Lazily: a guard made and dropped for a refused start would free the tenant.
        fresh.then(|| Submitting { tenants: &self.submitting, tenant_id })
    }

    /// Queues a poll of a running audit. A failure is logged: the audit is recorded, and
    /// asking for its status polls it too.
    async fn schedule_poll(&self, task: &AuditTask) {
        let job = NewJob {
            kind: AUDIT_POLL_JOB.into(),
            tenant_id: Some(task.tenant_id),
            payload: json!({"audit_task_id": task.id}),
            run_at: self.clock.now() + self.settings.audit_poll_after,
            dedupe_key: Some(format!("audit:{}", task.id)),
        };
        if let Err(e) = self.jobs.enqueue(job).await {
            log::error!("audit task {}: queueing its poll failed: {e}", task.id);
        }
    }

    /// `GET /miniprogram/audit/status`: the audit task (or the tenant's latest); while it is
    /// running, the platform is asked and its answer kept.
    pub async fn audit_status(&self, actor: &Actor, params: AuditStatusParams) -> Result<AuditTaskView> {
        let task = match params.audit_task_id {
            Some(id) => {
                let task = self.tasks.audit_task(actor.party, id).await?;
                // A tenant named beside the task must be the task's.
                task.filter(|t| params.tenant_id.is_none_or(|tenant| tenant == t.tenant_id))
                    .ok_or_else(|| Error::no_such("audit_task_id", "no such audit task"))?
            }
            None => {
                let tenant = self.authorization.tenant(actor, params.tenant_id).await?;
                self.tasks.latest_audit_task(tenant.id).await?.ok_or(Error::NotFound("audit task"))?
            }
        };
        if !task.status.is_running() {
            return Ok(task.into());
        }
        Ok(self.refresh_audit(&task).await?.into())
    }

    /// Asks the platform about a running audit and keeps the answer.
    async fn refresh_audit(&self, task: &AuditTask) -> Result<AuditTask> {
        let access = self.authorization.access(task.tenant_id).await?;
        let r = self.platform.audit_status(&access, task.auditid).await;
        match logged(task.tenant_id, "get_auditstatus", TaskRef::Audit(task.id), r) {
            Ok(report) => self.apply_audit_report(task.id, &report).await,
            Err(e) => Err(self.authorization.failed(task.tenant_id, e).await),
        }
    }

    /// The audit poll job's work: asks the platform about audit task `id` while it runs and
    /// keeps the answer. The job runs again later while the audit still runs (see
    /// `release_jobs`); errors leave it to be retried.
    pub async fn poll_audit(&self, id: Id) -> Result<AuditTaskView> {
        let task = self.tasks.audit_task(Party::Platform, id).await?.ok_or(Error::NotFound("audit task"))?;
        if !task.status.is_running() {
            return Ok(task.into());
        }
        Ok(self.refresh_audit(&task).await?.into())
    }

    /// A running audit task of the caller's scope: 404 naming `audit_task_id` when there is
    /// none, 409 when it is decided.
    async fn running_task(&self, actor: &Actor, id: Id) -> Result<AuditTask> {
        let task = self.tasks.audit_task(actor.party, id).await?.ok_or_else(|| Error::no_such("audit_task_id", "no such audit task"))?;
        if !task.status.is_running() {
            return Err(Error::blocked(
                Reason::State,
                "audit_task_id",
                format!("the audit is {}; only a running audit can be sped up or withdrawn", task.status.as_str()),
            ));
        }
        Ok(task)
    }

    /// `POST /miniprogram/audit/speedup`: asks the reviewers to hurry a running audit
    /// (`speedupaudit`; spends one of the platform's speed-ups, 429 when none is left). A
    /// tenant's or partner's speed-up spends the tenant's budget and leaves the platform's
    /// reserve (429 otherwise).
    pub async fn speedup_audit(&self, actor: &Actor, input: AuditTaskRef) -> Result<AuditTaskView> {
        let task = self.running_task(actor, input.audit_task_id).await?;
        let access = self.authorization.access(task.tenant_id).await?;
        let share = Share::of(actor.party);
        self.leaves_reserve(share, task.tenant_id, &access, Spend::Speedup).await?;
        let spent = self.spend(share, task.tenant_id, Spend::Speedup).await?;
        let r = self.platform.speedup_audit(&access, task.auditid).await;
        if let Err(e) = logged(task.tenant_id, "speedupaudit", TaskRef::Audit(task.id), r) {
            self.give_back(spent).await;
            return Err(self.authorization.failed(task.tenant_id, e).await);
        }
        log::info!("audit task {} of tenant {}: speed-up asked by user {}", task.id, task.tenant_id, actor.user_id);
        let after = json!({"speedup": true});
        self.authorization
            .audit(actor, task.tenant_id, "miniprogram.audit.speedup", ("miniprogram_audit_task", task.id), None, after)
            .await;
        Ok(task.into())
    }

    /// `POST /miniprogram/audit/undo`: withdraws a running audit (`undocodeaudit`); the task
    /// becomes `withdrawn`. The platform does not give the audit's quota unit back. A tenant's
    /// or partner's undo spends the tenant's budget (429 when it is used).
    pub async fn undo_audit(&self, actor: &Actor, input: AuditTaskRef) -> Result<AuditTaskView> {
        let task = self.running_task(actor, input.audit_task_id).await?;
        let access = self.authorization.access(task.tenant_id).await?;
        let spent = self.spend(Share::of(actor.party), task.tenant_id, Spend::Undo).await?;
        let r = self.platform.undo_audit(&access).await;
        if let Err(e) = logged(task.tenant_id, "undocodeaudit", TaskRef::Audit(task.id), r) {
            self.give_back(spent).await;
            return Err(self.authorization.failed(task.tenant_id, e).await);
        }
        let withdrawn = PlatformAudit { status: AuditStatus::Withdrawn, reason: None, screenshots: Vec::new(), at: None };
        let saved = self.apply_audit_report(task.id, &withdrawn).await?;
        log::info!("audit task {} of tenant {} withdrawn by user {}", task.id, task.tenant_id, actor.user_id);
        let (before, after) = (json!({"status": task.status.as_str()}), json!({"status": saved.status.as_str()}));
        self.authorization
            .audit(actor, task.tenant_id, "miniprogram.audit.undo", ("miniprogram_audit_task", task.id), Some(before), after)
            .await;
        Ok(saved.into())
    }

    pub(super) fn clock(&self) -> &dyn Clock {
        self.clock.as_ref()
    }

    /// Whether `template_id` is a template of the platform's library that any tenant may
    /// commit (not one made from a tenant's package). A platform failure is a domain error.
    pub async fn library_template(&self, template_id: i64) -> Result<bool> {
        let ticket = self.authorization.ticket().await?;
        let r = self.platform.templates(&ticket).await;
        match logged(0, "gettemplatelist", TaskRef::None, r) {
            Ok(templates) => Ok(templates.iter().any(|t| t.template_id == template_id && !t.user_desc.starts_with(UPLOAD_MARKER))),
            Err(e) => Err(super::release_platform_error(e)),
        }
    }

    /// The third-party platform the pipeline calls.
    pub fn platform(&self) -> &Arc<dyn MiniProgramPlatform> {
        &self.platform
    }

    /// How code releases behave (package limits, poll interval).
    pub fn settings(&self) -> &ReleaseSettings {
        &self.settings
    }

    /// Takes in a platform report about an audit, forward only, with conditional writes.
    async fn apply_audit_report(&self, id: Id, report: &PlatformAudit) -> Result<AuditTask> {
        self.save_audit(id, |t, now| t.apply(report, now)).await
    }

    /// Reads the audit task, lets `change` edit it (returning whether it did) and writes it
    /// back conditionally on the state it was read in; after a lost race, reads and tries
    /// again.
    async fn save_audit(&self, id: Id, change: impl Fn(&mut AuditTask, atrium_kernel::Timestamp) -> bool) -> Result<AuditTask> {
        for _ in 0..WRITE_ATTEMPTS {
            let mut task = self.tasks.audit_task(Party::Platform, id).await?.ok_or(Error::NotFound("audit task"))?;
            let read = task.state();
            let now = self.clock.now();
            if !change(&mut task, now) {
                return Ok(task);
            }
            task.updated_at = now;
            let effects = Effects::none().with_events(events::audit_decided(read.status, &task, now));
            if self.tasks.update_audit_task(task.clone(), read, effects).await? {
                if !task.status.is_running() {
                    log::info!("audit task {id} of tenant {}: {}", task.tenant_id, task.status.as_str());
                }
                return Ok(task);
            }
        }
        Err(Error::conflict(Reason::TryAgain, "the audit task kept changing while it was being updated; try again"))
    }

    /// `GET /miniprogram/audit-tasks`.
    pub async fn list_audit_tasks(&self, actor: &Actor, params: AuditTaskListParams) -> Result<Page<AuditTaskView>> {
        let query = AuditTaskQuery::try_from(params)?;
        Ok(self.tasks.list_audit_tasks(actor.party, query).await?.map(AuditTaskView::from))
    }

    // --- pushed events ---------------------------------------------------------------------

    /// A push to one of the two event URLs, as received: opened by the authorisation service
    /// ([`AuthorizationService::open_event`]: verified, decrypted, read, and at the message
    /// URL checked to be about a mini-program authorised here), then applied once. Any error
    /// means "not accepted, nothing changed".
    pub async fn receive_event(
        &self,
        url: EventUrl,
        appid: Option<&str>,
        request: EventRequest,
    ) -> std::result::Result<EventOutcome, EventError> {
        let (event, authorization) = self.authorization.open_event(url, appid, &request).await?;
        self.handle_event(event, authorization.as_ref()).await.map_err(|e| {
            log::error!("platform push could not be processed: {e}");
            EventError::Unavailable
        })
    }

    /// A verified event, applied once per event id, forward only. An audit result about an
    /// authorised mini-program is the pipeline's; every other event is the authorisation
    /// service's ([`AuthorizationService::handle_event`]).
    pub async fn handle_event(&self, event: PlatformEvent, authorization: Option<&Authorization>) -> Result<EventOutcome> {
        let (EventKind::Audit { result, .. }, Some(a)) = (&event.kind, authorization) else {
            return self.authorization.handle_event(event).await;
        };
        if self.authorization.event_seen(&event.id).await? {
            return Ok(EventOutcome::Duplicate);
        }
        let outcome = self.audit_event(a.tenant_id, result.status).await?;
        self.authorization.record_event(event.id, AUDIT_EVENT).await?;
        Ok(outcome)
    }

    /// An audit result pushed for the tenant's mini-program. The platform's audit events name
    /// no audit: one delivered late, about an earlier audit, would read as news of the running
    /// one. So an event only prompts asking the platform about the running audit's auditid,
    /// and the answer is what is kept.
    async fn audit_event(&self, tenant_id: Id, says: AuditStatus) -> Result<EventOutcome> {
        let Some(task) = self.tasks.running_audit(tenant_id).await? else {
            log::warn!("audit result for tenant {tenant_id} with no audit running");
            return Ok(EventOutcome::Unknown);
        };
        log::info!("audit event for tenant {tenant_id} says {}; asking the platform about audit {}", says.as_str(), task.auditid);
        let before = task.status;
        match self.refresh_audit(&task).await {
            Ok(after) if after.status != before => Ok(EventOutcome::Applied),
            Ok(_) => Ok(EventOutcome::Stale),
            // Revoked meanwhile, or refused: nothing to learn; acknowledged.
            Err(e @ (Error::Blocked(..) | Error::Forbidden(..) | Error::PlatformRefused { .. } | Error::Invalid(_))) => {
                log::warn!("audit event for tenant {tenant_id}: asking the platform failed: {e}");
                Ok(EventOutcome::Stale)
            }
            // Unavailable: not accepted, so the platform pushes it again.
            Err(e) => Err(e),
        }
    }

    // --- releases --------------------------------------------------------------------------

    /// `POST /miniprogram/publish`: releases a passed audit, fully or to a rising gray
    /// percentage. Every call that reaches the platform records a release task, also when the
    /// platform refuses (the error is then returned).
    pub async fn publish(&self, actor: &Actor, input: PublishRequest) -> Result<ReleaseTaskView> {
        let mode = input.release_mode()?;
        let audit = self
            .tasks
            .audit_task(actor.party, input.audit_task_id)
            .await?
            .ok_or_else(|| Error::no_such("audit_task_id", "no such audit task"))?;
        check_release(audit.status, &audit.release, mode)?;
        let access = self.authorization.access(audit.tenant_id).await?;
        let (kind, percentage, r, call) = match mode {
            ReleaseMode::Full => (ReleaseKind::Full, None, self.platform.release(&access).await, "release"),
            ReleaseMode::Gray(p) => (ReleaseKind::Gray, Some(p), self.platform.gray_release(&access, p).await, "grayrelease"),
        };
        let r = logged(audit.tenant_id, call, TaskRef::Audit(audit.id), r);
        let task = self.release_task(actor, audit.tenant_id, Some(audit.id), kind, Some(audit.version.clone()), percentage, &r);
        if let Err(e) = r {
            self.tasks.insert_release_task(task).await?;
            return Err(self.authorization.failed(audit.tenant_id, e).await);
        }
        let released = self.record_release(audit.id, task, mode).await?;
        let after = json!({"audit_task_id": audit.id, "version": audit.version, "kind": released.kind.as_str(), "gray_percentage": released.gray_percentage});
        self.authorization
            .audit(actor, audit.tenant_id, "miniprogram.publish", ("miniprogram_release_task", released.id), None, after)
            .await;
        Ok(released.into())
    }

    /// Records a release of audit task `audit_id` the platform carried out: the release task,
    /// and how much of the audit is released now, in one transaction over the audit's state
    /// as read (read again after a lost race). When the audit shows the release already, the
    /// release task is stored alone; when it keeps changing, so is the release task (the
    /// release happened all the same), and the answer is a 409 to try again.
    async fn record_release(&self, audit_id: Id, task: ReleaseTask, mode: ReleaseMode) -> Result<ReleaseTask> {
        let released_at = self.clock.now();
        for _ in 0..WRITE_ATTEMPTS {
            let Some(mut audit) = self.tasks.audit_task(Party::Platform, audit_id).await? else {
                self.tasks.insert_release_task(task).await?;
                return Err(Error::NotFound("audit task"));
            };
            let read = audit.state();
            let before = audit.release.clone();
            match mode {
                ReleaseMode::Full => {
                    audit.release.released_at.get_or_insert(released_at);
                }
                ReleaseMode::Gray(p) => audit.release.gray_percentage = Some(audit.release.gray_percentage.map_or(p, |g| g.max(p))),
            }
            if audit.release == before {
                return self.tasks.insert_release_task(task).await;
            }
            audit.updated_at = self.clock.now();
            let effects = Effects::none().with_event(events::released(&audit, mode, released_at));
            if let Some(stored) = self.tasks.record_release(task.clone(), AuditUpdate { task: audit, read }, effects).await? {
                return Ok(stored);
            }
        }
        self.tasks.insert_release_task(task).await?;
        Err(Error::conflict(Reason::TryAgain, "the audit task kept changing while it was being updated; try again"))
    }

    /// `POST /miniprogram/rollback`: back to `app_version`, or to the previous version; 409
    /// while a gray release runs (87011). Recorded as a release task either way.
    pub async fn rollback(&self, actor: &Actor, input: RollbackRequest) -> Result<ReleaseTaskView> {
        let tenant = self.authorization.tenant(actor, input.tenant_id).await?;
        if input.app_version.is_some_and(|v| v < 1) {
            return Err(Error::invalid("app_version", "must be a version of the history"));
        }
        let access = self.authorization.access(tenant.id).await?;
        let r = self.platform.revert_release(&access, input.app_version).await;
        let r = logged(tenant.id, "revertcoderelease", TaskRef::Release, r);
        let version = input.app_version.map(|v| v.to_string());
        let task = self.release_task(actor, tenant.id, None, ReleaseKind::Rollback, version, None, &r);
        let stored = self.tasks.insert_release_task(task).await?;
        match r {
            Ok(()) => {
                let after = json!({"app_version": input.app_version});
                self.authorization
                    .audit(actor, tenant.id, "miniprogram.rollback", ("miniprogram_release_task", stored.id), None, after)
                    .await;
                Ok(stored.into())
            }
            Err(e) => Err(self.authorization.failed(tenant.id, e).await),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn release_task(
        &self,
        actor: &Actor,
        tenant_id: Id,
        audit_task_id: Option<Id>,
        kind: ReleaseKind,
        version: Option<String>,
        gray_percentage: Option<u8>,
        outcome: &PlatformResult<()>,
    ) -> ReleaseTask {
        let (status, errcode, errmsg) = match outcome {
            Ok(()) => (ReleaseStatus::Succeeded, None, None),
            Err(PlatformError::Refused { errcode, errmsg }) => (ReleaseStatus::Failed, Some(*errcode), Some(errmsg.clone())),
            Err(e) => (ReleaseStatus::Failed, None, Some(e.to_string())),
        };
        ReleaseTask {
            id: 0,
            tenant_id,
            audit_task_id,
            kind,
            version,
            gray_percentage,
            status,
            errcode,
            errmsg,
            created_by: actor.user_id,
            created_at: self.clock.now(),
        }
    }

    /// `GET /miniprogram/versions`: the live and trial versions, the gray plan and the
    /// versions a rollback can go to.
    pub async fn versions(&self, actor: &Actor, tenant_id: Option<Id>) -> Result<VersionsView> {
        let tenant = self.authorization.tenant(actor, tenant_id).await?;
        let access = self.authorization.access(tenant.id).await?;
        let info = self.platform.version_info(&access).await;
        let info = match logged(tenant.id, "getversioninfo", TaskRef::None, info) {
            Ok(i) => i,
            Err(e) => return Err(self.authorization.failed(tenant.id, e).await),
        };
        let plan = self.platform.gray_plan(&access).await;
        let plan = match logged(tenant.id, "getgrayreleaseplan", TaskRef::None, plan) {
            Ok(p) => Some(p),
            // No live version, so no plan either.
            Err(PlatformError::Refused { errcode: 85079, .. }) => None,
            Err(e) => return Err(self.authorization.failed(tenant.id, e).await),
        };
        let history = self.platform.history_versions(&access).await;
        let history = match logged(tenant.id, "get_history_version", TaskRef::None, history) {
            Ok(h) => h,
            Err(PlatformError::Refused { errcode: 85079, .. }) => Vec::new(),
            Err(e) => return Err(self.authorization.failed(tenant.id, e).await),
        };
        Ok(VersionsView { release: info.release, experience: info.experience, gray_plan: plan, history })
    }

    /// `GET /miniprogram/experience-qr`: the trial version's QR code, a JPEG.
    pub async fn experience_qr(&self, actor: &Actor, params: ExperienceQrParams) -> Result<Vec<u8>> {
        let tenant = self.authorization.tenant(actor, params.tenant_id).await?;
        let access = self.authorization.access(tenant.id).await?;
        let path = params.path.map(PagePath::into_string).filter(|p| !p.is_empty());
        let r = self.platform.experience_qr(&access, path).await;
        match logged(tenant.id, "get_qrcode", TaskRef::None, r) {
            Ok(jpeg) => Ok(jpeg),
            Err(e) => Err(self.authorization.failed(tenant.id, e).await),
        }
    }
}

/// The description a package's upload carries to the template-development mini-program, so
/// its draft and template can be told from other tenants' of the same version.
fn upload_marker(task: &UploadTask) -> String {
    format!("{UPLOAD_MARKER}{}", task.id)
}

fn version_used(version: &str) -> Error {
    Error::blocked(Reason::Duplicate, "version", format!("{version} was used before by this tenant; pick a new version"))
}
