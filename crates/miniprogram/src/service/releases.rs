//! The code-release use cases of one tenant's mini-program, through our third-party
//! platform: its authorisation, code uploads (a template of the library, or a package),
//! audits, releases and rollbacks, the consoles' extras, and the events the platform pushes.
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
//! A platform errcode never becomes a 500 (see [`release_platform_error`]), and every
//! platform call is logged with its errcode and the task it belongs to, never with a token.
use crate::api::*;
use crate::config::ReleaseSettings;
use crate::lifecycle::{AuditStatus, AuthorizationStatus, ReleaseKind, ReleaseStatus, UploadStatus, check_release};
use crate::model::*;
use crate::ports::{CodeUploader, MiniProgramPlatform, PackageInspector, PlatformError, PlatformResult, ReleaseRepo, UploaderError};
use atrium_kernel::Reason;
use atrium_kernel::secret::{hash_secret, random_token};
use atrium_kernel::{Actor, AuditRecord, Clock, Error, FieldError, Id, JobStore, NewJob, Page, Party, Result, Secret, StrEnum};
use serde_json::json;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// The job that runs an upload task; payload `{"upload_task_id": N}`.
pub const UPLOAD_JOB: &str = "miniprogram.upload";
/// The job that asks the platform about a running audit; payload `{"audit_task_id": N}`.
pub const AUDIT_POLL_JOB: &str = "miniprogram.audit_poll";

/// How often a conditional write is tried before giving up on a record that keeps changing.
const WRITE_ATTEMPTS: usize = 3;
/// Errcodes that say the mini-program's state forbids the step now: 409. Already under audit,
/// gray percentage must rise, gray release running, nothing audited, not releasable, nothing
/// committed, no live version, cannot revert, template library full, bad category, name or
/// avatar missing, privacy check unfinished.
const CONFLICT_CODES: &[i64] = &[85009, 85082, 87011, 85019, 85020, 85086, 85079, 87012, 85065, 85077, 86002, 61039];
/// Errcodes of used-up quotas (audits, audit withdrawals): 429.
const QUOTA_CODES: &[i64] = &[85085, 87013];
/// Errcodes that blame one field of the request: 400 naming it.
const FIELD_CODES: &[(i64, &str)] =
    &[(85013, "ext_json"), (85014, "template_id"), (85064, "template_id"), (85081, "gray_percentage"), (85044, "package")];
/// The authorisation was revoked.
const REVOKED: i64 = 61003;
/// The authorisation code was used already.
const CODE_USED: i64 = 61009;
/// The mini-program did not grant the platform the permission the call needs.
const NOT_GRANTED: i64 = 61007;
/// How long a client should wait after a quota error.
const QUOTA_RETRY_SECS: u64 = 3600;
/// The template is not in the library.
const NO_SUCH_TEMPLATE: i64 = 85014;
/// What a package's upload carries as its description to the template-development
/// mini-program, followed by the upload task's id; its draft and its template carry it too.
const UPLOAD_MARKER: &str = "atrium upload task ";

/// A mini-program platform failure as a domain error, never a 500:
/// - 61003 and 61007 → 403 naming what the admin must do;
/// - 85085 and 87013 (quota) → 429;
/// - errcodes that blame a field (85013 `ext_json`, 85014/85064 `template_id`, 85081
///   `gray_percentage`, 85044 `package`) → 400 naming it, the errcode in `data.errors`;
/// - errcodes of out-of-order steps (85009, 85082, 87011, …) → 409, the errcode in
///   `data.errors` under `platform`;
/// - any other errcode → 502 with `{errcode, errmsg}` in `data` (`Error::PlatformRefused`);
/// - no answer, or no verify ticket yet → 502.
pub fn release_platform_error(e: PlatformError) -> Error {
    match e {
        PlatformError::Refused { errcode: REVOKED, errmsg } => Error::Forbidden(
            Reason::MiniprogramAuthorization,
            format!(
                "the mini-program's authorisation to the platform was revoked (errcode {REVOKED}: {errmsg}); its admin must authorise it again"
            ),
        ),
        PlatformError::Refused { errcode: NOT_GRANTED, errmsg } => Error::Forbidden(
            Reason::MiniprogramAuthorization,
            format!(
                "the mini-program has not granted the platform the permission this needs (errcode {NOT_GRANTED}: {errmsg}); its admin must authorise it again with code management (development management) granted"
            ),
        ),
        PlatformError::Refused { errcode, errmsg } if QUOTA_CODES.contains(&errcode) => Error::RateLimited {
            message: format!("the platform's quota for this is used up (errcode {errcode}: {errmsg})"),
            retry_after_secs: QUOTA_RETRY_SECS,
        },
        PlatformError::Refused { errcode, errmsg } => {
            if let Some((_, field)) = FIELD_CODES.iter().find(|(code, _)| *code == errcode) {
                Error::Invalid(vec![FieldError::new(*field, format!("errcode {errcode}: {errmsg}"))])
            } else if CONFLICT_CODES.contains(&errcode) {
                Error::Blocked(Reason::State, vec![FieldError::new("platform", format!("errcode {errcode}: {errmsg}"))])
            } else {
                Error::PlatformRefused { errcode, errmsg }
            }
        }
        e @ (PlatformError::Unavailable(_) | PlatformError::NoTicket) => Error::Upstream(e.to_string()),
    }
}

/// Which task a platform call belongs to, for the log.
#[derive(Clone, Copy)]
enum TaskRef {
    None,
    Upload(Id),
    Audit(Id),
    Release,
}

impl std::fmt::Display for TaskRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TaskRef::None => f.write_str("no task"),
            TaskRef::Upload(id) => write!(f, "upload task {id}"),
            TaskRef::Audit(id) => write!(f, "audit task {id}"),
            TaskRef::Release => f.write_str("a release task"),
        }
    }
}

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

/// The mini-program release use cases over their ports: a tenant's authorisation, template and
/// package uploads, audits, releases and rollbacks, the platform's pushed events, and the jobs
/// that run uploads and poll audits.
pub struct ReleaseService {
    repo: Arc<dyn ReleaseRepo>,
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

impl ReleaseService {
    /// A service over its storage, the platform, package inspection, the uploader, the job queue,
    /// a clock and its settings.
    pub fn new(
        repo: Arc<dyn ReleaseRepo>,
        platform: Arc<dyn MiniProgramPlatform>,
        inspector: Arc<dyn PackageInspector>,
        uploader: Arc<dyn CodeUploader>,
        jobs: Arc<dyn JobStore>,
        clock: Arc<dyn Clock>,
        settings: ReleaseSettings,
    ) -> Self {
        ReleaseService { repo, platform, inspector, uploader, jobs, clock, settings, submitting: Mutex::new(HashSet::new()) }
    }

    /// The tenant the caller acts on: its own, or the one it names if in scope (404 if not).
    async fn tenant(&self, actor: &Actor, requested: Option<Id>) -> Result<ReleaseTenant> {
        let id = actor.party.tenant_for_new(requested)?;
        self.repo.tenant(actor.party, id).await?.ok_or_else(|| Error::no_such("tenant_id", "no such tenant"))
    }

    /// Logs a platform call's outcome with its errcode and task.
    fn logged<T>(&self, tenant_id: Id, call: &str, task: TaskRef, r: PlatformResult<T>) -> PlatformResult<T> {
        match &r {
            Ok(_) => log::info!("mini-program platform {call} for tenant {tenant_id} ({task}): errcode 0"),
            Err(e) => log::warn!("mini-program platform {call} for tenant {tenant_id} ({task}): {e}"),
        }
        r
    }

    /// A failed call as a domain error; a revoked authorisation (61003) is recorded first.
    async fn failed(&self, tenant_id: Id, e: PlatformError) -> Error {
        self.note_revoked(tenant_id, &e).await;
        release_platform_error(e)
    }

    /// Records the tenant's authorisation as revoked when the platform says so (61003).
    async fn note_revoked(&self, tenant_id: Id, e: &PlatformError) {
        if e.errcode() == Some(REVOKED)
            && let Err(store) = self.mark_revoked(tenant_id).await
        {
            log::error!("recording the revoked authorisation of tenant {tenant_id} failed: {store}");
        }
    }

    /// The newest verify ticket; 502 until the platform has pushed one.
    async fn ticket(&self) -> Result<Secret> {
        match self.repo.verify_ticket().await? {
            Some(t) => Ok(t.ticket),
            None => Err(release_platform_error(PlatformError::NoTicket)),
        }
    }

    /// The tenant's authorisation, if it is authorised; 409 naming `authorization` otherwise.
    async fn authorized(&self, tenant_id: Id) -> Result<Authorization> {
        let blocked = |m: &str| Error::blocked(Reason::MiniprogramAuthorization, "authorization", m);
        match self.repo.get_authorization(tenant_id).await? {
            Some(a) if a.status == AuthorizationStatus::Authorized => Ok(a),
            Some(_) => Err(blocked("the mini-program's authorisation was revoked; its admin must authorise it again")),
            None => Err(blocked("the tenant has not authorised its mini-program to the platform yet")),
        }
    }

    /// What a call for the tenant's mini-program needs.
    async fn access(&self, tenant_id: Id) -> Result<AuthorizerAccess> {
        let authorization = self.authorized(tenant_id).await?;
        Ok(AuthorizerAccess {
            verify_ticket: self.ticket().await?,
            authorizer_appid: authorization.authorizer_appid,
            refresh_token: authorization.refresh_token,
        })
    }

    // --- authorisation ---------------------------------------------------------------------

    /// `GET /miniprogram/authorization`: the tenant's authorisation and, for a caller who may
    /// authorise (`miniprogram:publish`), a fresh link to the platform's authorisation page
    /// (`None` when the platform cannot give a pre-auth code now, e.g. before its first
    /// verify ticket; logged).
    pub async fn authorization(&self, actor: &Actor, tenant_id: Option<Id>) -> Result<AuthorizationView> {
        let tenant = self.tenant(actor, tenant_id).await?;
        let current = self.repo.get_authorization(tenant.id).await?;
        if !actor.permissions.allows(atrium_kernel::permission::MINIPROGRAM_PUBLISH.name) {
            return Ok(AuthorizationView::new(tenant.id, current.as_ref(), None));
        }
        let url = match self.authorize_link(actor, tenant.id).await {
            Ok(url) => Some(url),
            Err(
                e @ (Error::Upstream(_)
                | Error::PlatformRefused { .. }
                | Error::RateLimited { .. }
                | Error::Blocked(..)
                | Error::Forbidden(..)),
            ) => {
                log::warn!("no authorisation link for tenant {}: {e}", tenant.id);
                None
            }
            Err(e) => return Err(e),
        };
        Ok(AuthorizationView::new(tenant.id, current.as_ref(), url))
    }

    /// A pre-auth code and a single-use state bound to the tenant, as the page's URL.
    async fn authorize_link(&self, actor: &Actor, tenant_id: Id) -> Result<String> {
        let ticket = self.ticket().await?;
        let code = self.platform.pre_auth_code(&ticket).await;
        let code = match self.logged(tenant_id, "api_create_preauthcode", TaskRef::None, code) {
            Ok(c) => c,
            Err(e) => return Err(self.failed(tenant_id, e).await),
        };
        let now = self.clock.now();
        let ttl = self.settings.authorize_link_ttl.min(chrono::Duration::seconds(code.expires_in_secs.max(0)));
        let state = random_token(24);
        self.repo
            .insert_authorization_attempt(AuthorizationAttempt {
                state_hash: hash_secret(&state),
                tenant_id,
                pre_auth_code: code.code.clone(),
                created_by: actor.user_id,
                created_at: now,
                expires_at: now + ttl,
            })
            .await?;
        Ok(self.platform.authorize_url(&code.code, &self.settings.authorization_callback_url(&state)))
    }

    /// `GET /miniprogram/authorization/callback`: the platform's page sends the admin back
    /// with an authorisation code and our state. The state (single use, not expired) names
    /// the tenant; no login is needed, as the state itself is the proof.
    pub async fn finish_authorization(&self, callback: AuthorizationCallback) -> Result<AuthorizationView> {
        // Checked before the state is used up, so a mangled redirect can be retried.
        if callback.auth_code.is_empty() || callback.auth_code.len() > 512 {
            return Err(Error::invalid("auth_code", "must be 1 to 512 characters"));
        }
        let now = self.clock.now();
        let attempt = self
            .repo
            .take_authorization_attempt(hash_secret(&callback.state))
            .await?
            .filter(|a| a.expires_at > now)
            .ok_or_else(|| Error::no_such("state", "the authorisation link is unknown, used or expired; start again"))?;
        let code = Secret::new(callback.auth_code);
        let stored = match self.authorize(attempt.tenant_id, &code, Some(attempt.created_by)).await? {
            Ok(stored) => stored,
            // The `authorized` event beat the admin's browser here and used the code: the
            // authorisation it stored since this link was made is the answer.
            Err(PlatformError::Refused { errcode: CODE_USED, errmsg }) => match self.repo.get_authorization(attempt.tenant_id).await? {
                Some(a) if a.status == AuthorizationStatus::Authorized && a.updated_at >= attempt.created_at => a,
                _ => return Err(release_platform_error(PlatformError::Refused { errcode: CODE_USED, errmsg })),
            },
            Err(e) => return Err(release_platform_error(e)),
        };
        Ok(AuthorizationView::new(stored.tenant_id, Some(&stored), None))
    }

    /// Exchanges an authorisation code and stores what it grants for the tenant. The inner
    /// error is the platform's refusal of the code (or its absence), kept apart so an event
    /// can tell a used code from an outage.
    async fn authorize(&self, tenant_id: Id, code: &Secret, by: Option<Id>) -> Result<PlatformResult<Authorization>> {
        let Some(ticket) = self.repo.verify_ticket().await?.map(|t| t.ticket) else { return Ok(Err(PlatformError::NoTicket)) };
        let grant = match self.platform.query_auth(&ticket, code).await {
            // The platform brings each code twice, to the callback and in the `authorized`
            // event; whichever comes second finds it used, and its caller knows what that means.
            Err(e @ PlatformError::Refused { errcode: CODE_USED, .. }) => {
                log::info!("mini-program platform api_query_auth for tenant {tenant_id}: the authorisation code was used already");
                return Ok(Err(e));
            }
            grant => match self.logged(tenant_id, "api_query_auth", TaskRef::None, grant) {
                Ok(g) => g,
                Err(e) => return Ok(Err(e)),
            },
        };
        // The profile only names the mini-program; without it the authorisation still works.
        let profile = self.platform.authorizer_profile(&ticket, &grant.authorizer_appid).await;
        let profile = self.logged(tenant_id, "api_get_authorizer_info", TaskRef::None, profile).unwrap_or_default();
        let now = self.clock.now();
        let before = self.repo.get_authorization(tenant_id).await?;
        let authorized_at = before
            .as_ref()
            .filter(|b| b.status == AuthorizationStatus::Authorized && b.authorizer_appid == grant.authorizer_appid)
            .map_or(now, |b| b.authorized_at);
        let authorization = Authorization {
            tenant_id,
            status: AuthorizationStatus::Authorized,
            authorizer_appid: grant.authorizer_appid,
            refresh_token: grant.refresh_token,
            nickname: profile.nickname,
            user_name: profile.user_name,
            func_info: grant.func_info,
            authorized_at,
            revoked_at: None,
            updated_at: now,
        };
        let audit = self.audit_record(tenant_id, by, "miniprogram_authorization.authorize", before.as_ref(), &authorization).await?;
        match self.repo.save_authorization(authorization, audit).await {
            Err(Error::Conflict(..)) => {
                Err(Error::blocked(Reason::Duplicate, "authorizer_appid", "this mini-program is already authorised for another tenant"))
            }
            other => other.map(Ok),
        }
    }

    async fn audit_record(
        &self,
        tenant_id: Id,
        by: Option<Id>,
        action: &str,
        before: Option<&Authorization>,
        after: &Authorization,
    ) -> Result<AuditRecord> {
        let partner_id = self.repo.tenant(Party::Platform, tenant_id).await?.and_then(|t| t.partner_id);
        let shown = |a: &Authorization| serde_json::to_value(AuthorizationView::new(a.tenant_id, Some(a), None)).ok();
        Ok(AuditRecord::system(self.clock.now(), action, "miniprogram_authorization", Some(tenant_id))
            .acted_by(by)
            .owned_by(partner_id, Some(tenant_id))
            .change(before.and_then(shown).as_ref(), shown(after).as_ref()))
    }

    /// Marks the tenant's authorisation revoked (an `unauthorized` event, or 61003).
    async fn mark_revoked(&self, tenant_id: Id) -> Result<bool> {
        let Some(before) = self.repo.get_authorization(tenant_id).await? else { return Ok(false) };
        if before.status == AuthorizationStatus::Revoked {
            return Ok(false);
        }
        let now = self.clock.now();
        let after = Authorization { status: AuthorizationStatus::Revoked, revoked_at: Some(now), updated_at: now, ..before.clone() };
        let audit = self.audit_record(tenant_id, None, "miniprogram_authorization.revoke", Some(&before), &after).await?;
        self.repo.save_authorization(after, audit).await?;
        log::warn!("the mini-program authorisation of tenant {tenant_id} was revoked");
        Ok(true)
    }

    // --- pushed events ---------------------------------------------------------------------

    /// A push to one of the two event URLs, as received: verified, decrypted and read by the
    /// platform adapter, then applied once. `appid` is the message URL's mini-program (it must
    /// be one authorised here). Any error means "not accepted, nothing changed".
    pub async fn receive_event(
        &self,
        url: EventUrl,
        appid: Option<&str>,
        request: EventRequest,
    ) -> std::result::Result<EventOutcome, EventError> {
        let event = self.platform.open_event(url, &request).inspect_err(|e| log::warn!("platform push refused: {e}"))?;
        let authorization = match url {
            EventUrl::Component => None,
            EventUrl::Message => {
                let appid = appid.ok_or(EventError::ForeignAppid)?;
                let found = self.repo.authorization_by_appid(appid.to_owned()).await.map_err(|e| {
                    log::error!("platform push for {appid}: reading the authorisation failed: {e}");
                    EventError::Unavailable
                })?;
                Some(found.ok_or_else(|| {
                    log::warn!("platform push for {appid}, which is not authorised here, refused");
                    EventError::ForeignAppid
                })?)
            }
        };
        if let (Some(a), EventKind::Audit { to_user, .. }) = (&authorization, &event.kind)
            && let Some(user_name) = a.user_name.as_deref().filter(|u| u != to_user)
        {
            log::warn!("platform push for {} addressed to {to_user}, not to its {user_name}", a.authorizer_appid);
            return Err(EventError::ForeignAppid);
        }
        self.handle_event(event, authorization.as_ref()).await.map_err(|e| {
            log::error!("platform push could not be processed: {e}");
            EventError::Unavailable
        })
    }

    /// A verified event: applied once per event id, forward only.
    pub async fn handle_event(&self, event: PlatformEvent, authorization: Option<&Authorization>) -> Result<EventOutcome> {
        if self.repo.event_seen(event.id.clone()).await? {
            return Ok(EventOutcome::Duplicate);
        }
        let (name, outcome) = match event.kind {
            EventKind::VerifyTicket { ticket } => {
                let saved = self.repo.save_verify_ticket(VerifyTicket { ticket, created_at: event.created_at }).await?;
                ("component_verify_ticket", if saved { EventOutcome::Applied } else { EventOutcome::Stale })
            }
            EventKind::Authorized { authorizer_appid, authorization_code, pre_auth_code, update } => {
                let name = if update { "updateauthorized" } else { "authorized" };
                (name, self.authorized_event(&authorizer_appid, &authorization_code, pre_auth_code).await?)
            }
            EventKind::Unauthorized { authorizer_appid } => {
                let outcome = match self.repo.authorization_by_appid(authorizer_appid.clone()).await? {
                    Some(a) if self.mark_revoked(a.tenant_id).await? => EventOutcome::Applied,
                    Some(_) => EventOutcome::Stale,
                    None => {
                        log::warn!("unauthorized event for {authorizer_appid}, which is not authorised here");
                        EventOutcome::Unknown
                    }
                };
                ("unauthorized", outcome)
            }
            EventKind::Audit { result, .. } => {
                let outcome = match authorization {
                    None => EventOutcome::Ignored,
                    Some(a) => match self.repo.running_audit(a.tenant_id).await? {
                        None => {
                            log::warn!("audit result for tenant {} with no audit running", a.tenant_id);
                            EventOutcome::Unknown
                        }
                        // The platform's audit events name no audit: one delivered late, about
                        // an earlier audit, would read as news of the running one. So an event
                        // only prompts asking the platform about the running audit's auditid,
                        // and the answer is what is kept.
                        Some(task) => {
                            log::info!(
                                "audit event for tenant {} says {}; asking the platform about audit {}",
                                a.tenant_id,
                                result.status.as_str(),
                                task.auditid
                            );
                            let before = task.status;
                            match self.refresh_audit(&task).await {
                                Ok(after) if after.status != before => EventOutcome::Applied,
                                Ok(_) => EventOutcome::Stale,
                                // Revoked meanwhile, or refused: nothing to learn; acknowledged.
                                Err(
                                    e @ (Error::Blocked(..) | Error::Forbidden(..) | Error::PlatformRefused { .. } | Error::Invalid(_)),
                                ) => {
                                    log::warn!("audit event for tenant {}: asking the platform failed: {e}", a.tenant_id);
                                    EventOutcome::Stale
                                }
                                // Unavailable: not accepted, so the platform pushes it again.
                                Err(e) => return Err(e),
                            }
                        }
                    },
                };
                ("weapp_audit", outcome)
            }
            EventKind::Other { .. } => ("other", EventOutcome::Ignored),
        };
        self.repo.record_event(event.id, name.to_owned(), self.clock.now()).await?;
        Ok(outcome)
    }

    /// An `authorized`/`updateauthorized` event: the tenant is the one already holding the
    /// mini-program, or the one the pre-auth code was handed out for. The callback may have
    /// stored it already; the code is then refused or grants the same, and nothing changes.
    async fn authorized_event(&self, appid: &str, code: &Secret, pre_auth_code: Option<String>) -> Result<EventOutcome> {
        let tenant_id = match self.repo.authorization_by_appid(appid.to_owned()).await? {
            Some(a) => Some(a.tenant_id),
            None => match pre_auth_code {
                Some(c) => self.repo.authorization_attempt_by_code(c).await?.map(|a| a.tenant_id),
                None => None,
            },
        };
        let Some(tenant_id) = tenant_id else {
            log::warn!("authorisation event for {appid} matches no tenant's authorisation link");
            return Ok(EventOutcome::Unknown);
        };
        match self.authorize(tenant_id, code, None).await {
            Ok(Ok(_)) => Ok(EventOutcome::Applied),
            // The platform refused the code (the callback used it first): nothing to do.
            Ok(Err(e @ PlatformError::Refused { .. })) => {
                log::info!("authorisation event for {appid}: {e}");
                Ok(EventOutcome::Stale)
            }
            // Unavailable: not accepted, so the platform pushes it again.
            Ok(Err(e)) => Err(release_platform_error(e)),
            // Another tenant holds the mini-program: acknowledged, logged.
            Err(e @ Error::Blocked(..)) => {
                log::warn!("authorisation event for {appid}: {e}");
                Ok(EventOutcome::Stale)
            }
            Err(e) => Err(e),
        }
    }

    // --- uploads ---------------------------------------------------------------------------

    /// 409 naming `version` when the tenant used it before.
    async fn version_free(&self, tenant_id: Id, version: &Version) -> Result<()> {
        if self.repo.upload_version_used(tenant_id, version.as_str().to_owned()).await? {
            return Err(version_used(version.as_str()));
        }
        Ok(())
    }

    /// `POST /miniprogram/upload` (JSON): records an upload task committing a template with
    /// the tenant's `ext_json`, and queues its job.
    pub async fn upload_template(&self, actor: &Actor, input: TemplateUpload) -> Result<UploadTaskView> {
        let tenant = self.tenant(actor, input.tenant_id).await?;
        if input.template_id < 0 {
            return Err(Error::invalid("template_id", "must not be negative"));
        }
        self.authorized(tenant.id).await?;
        self.version_free(tenant.id, &input.version).await?;
        let source = UploadSource::Template { template_id: input.template_id, ext_json: serde_json::Value::Object(input.ext_json) };
        self.record_upload(actor, tenant.id, source, input.version, input.description).await
    }

    /// `POST /miniprogram/upload` (multipart): checks the package the HTTP layer streamed to
    /// disk, keeps it by its content hash, records an upload task and queues its job. A bad
    /// package is a 400 (413 when too large) and changes nothing.
    pub async fn upload_package(&self, actor: &Actor, input: PackageUpload) -> Result<UploadTaskView> {
        let tenant = self.tenant(actor, input.tenant_id).await?;
        self.authorized(tenant.id).await?;
        self.version_free(tenant.id, &input.version).await?;
        let info = self.inspector.inspect(input.file.clone(), self.settings.package_limits).await?;
        let kept = self.repo.keep_package(tenant.id, info, input.file).await?;
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
        let stored = match self.repo.insert_upload_task(task).await {
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
            if let Err(store) = self.repo.update_upload_task(failed, UploadStatus::Queued).await {
                log::error!("upload task {}: marking it failed after the queue refused it failed too: {store}", stored.id);
            }
            return Err(e);
        }
        log::info!("upload task {} of tenant {tenant_id} queued (version {})", stored.id, stored.version);
        Ok(stored.into())
    }

    /// `GET /miniprogram/upload-tasks/{id}`.
    pub async fn upload_task(&self, actor: &Actor, id: Id) -> Result<UploadTaskView> {
        Ok(self.repo.upload_task(actor.party, id).await?.ok_or(Error::NotFound("upload task"))?.into())
    }

    /// `GET /miniprogram/upload-tasks`.
    pub async fn list_upload_tasks(&self, actor: &Actor, params: UploadTaskListParams) -> Result<Page<UploadTaskView>> {
        let query = UploadTaskQuery::try_from(params)?;
        Ok(self.repo.list_upload_tasks(actor.party, query).await?.map(UploadTaskView::from))
    }

    /// The upload job: runs task `id` (its `attempt`-th run, counting from 1). A finished task
    /// is left alone. When the platform or the uploader is unavailable and attempts are left,
    /// the task stays `running` and this returns `Upstream` so the job is retried; otherwise
    /// the task ends `uploaded` or `failed` (with the errcode) and this returns it.
    pub async fn run_upload(&self, id: Id, attempt: u32) -> Result<UploadTaskView> {
        let mut task = self.repo.upload_task(Party::Platform, id).await?.ok_or(Error::NotFound("upload task"))?;
        if task.status.start().is_none() {
            return Ok(task.into());
        }
        if task.status == UploadStatus::Queued {
            let read = task.status;
            let now = self.clock.now();
            task.status = UploadStatus::Running;
            task.started_at = Some(now);
            task.updated_at = now;
            if !self.repo.update_upload_task(task.clone(), read).await? {
                // Another run took it.
                return Ok(self.repo.upload_task(Party::Platform, id).await?.ok_or(Error::NotFound("upload task"))?.into());
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
        if !self.repo.update_upload_task(task.clone(), UploadStatus::Running).await? {
            return Ok(self.repo.upload_task(Party::Platform, id).await?.ok_or(Error::NotFound("upload task"))?.into());
        }
        log::info!("upload task {id} of tenant {}: {}", task.tenant_id, task.status.as_str());
        Ok(task.into())
    }

    /// Commits the task's code to the tenant's mini-program; returns the template used.
    async fn upload_steps(&self, task: &UploadTask) -> std::result::Result<i64, StepError> {
        let tenant_id = task.tenant_id;
        let here = TaskRef::Upload(task.id);
        let access = self.access(tenant_id).await.map_err(|e| match e {
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
        if let Err(e) = self.logged(tenant_id, "commit", here, r) {
            self.note_revoked(tenant_id, &e).await;
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
        let templates = self.logged(task.tenant_id, "gettemplatelist", TaskRef::Upload(task.id), templates)?;
        let refused = || StepError::Final {
            errcode: Some(NO_SUCH_TEMPLATE),
            message: format!("the template is not in the template library (errcode {NO_SUCH_TEMPLATE})"),
        };
        let Some(template) = templates.iter().find(|t| t.template_id == template_id) else { return Err(refused()) };
        let Some(maker) = template.user_desc.strip_prefix(UPLOAD_MARKER) else { return Ok(()) };
        // A marker naming no task of ours is nobody's to share either.
        let owner = match maker.parse::<Id>() {
            Ok(id) => self
                .repo
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
        let package = self
            .repo
            .package(sha256.to_owned())
            .await
            .map_err(|e| StepError::Transient(e.to_string()))?
            .ok_or_else(|| StepError::Final { errcode: None, message: format!("package {sha256} is no longer kept") })?;
        let marker = upload_marker(task);
        let job = UploadJob { package, version: task.version.clone(), description: marker.clone() };
        let report = self.uploader.upload(&job).await.inspect_err(|e| log::warn!("upload task {}: {e}", task.id))?;
        log::info!("upload task {}: the uploader reported {}", task.id, report.sizes());

        let drafts = self.platform.template_drafts(ticket).await;
        let drafts = self.logged(tenant_id, "gettemplatedraftlist", here, drafts)?;
        let draft = drafts
            .into_iter()
            .filter(|d| d.user_desc == marker)
            .max_by_key(|d| (d.create_time, d.draft_id))
            .ok_or_else(|| StepError::Transient("the uploaded draft is not listed by the platform yet".into()))?;
        let added = self.platform.add_to_template(ticket, draft.draft_id).await;
        self.logged(tenant_id, "addtotemplate", here, added)?;
        let templates = self.platform.templates(ticket).await;
        let templates = self.logged(tenant_id, "gettemplatelist", here, templates)?;
        templates
            .into_iter()
            .filter(|t| t.user_desc == marker)
            .max_by_key(|t| (t.create_time, t.template_id))
            .map(|t| t.template_id)
            .ok_or_else(|| StepError::Transient("the new template is not listed by the platform yet".into()))
    }

    // --- audits ----------------------------------------------------------------------------

    /// `POST /miniprogram/audit/submit`: submits the tenant's latest uploaded code for audit.
    /// 409 when the upload is not `uploaded`, was followed by another upload, or another
    /// audit of the tenant is running (85009).
    pub async fn submit_audit(&self, actor: &Actor, input: AuditSubmit) -> Result<AuditTaskView> {
        let upload = self
            .repo
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
        if let Some(latest) = self.repo.latest_uploaded(upload.tenant_id).await?.filter(|l| l.id != upload.id) {
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
        if let Some(running) = self.repo.running_audit(upload.tenant_id).await? {
            return Err(blocked(
                Reason::AuditRunning,
                format!("audit task {} of version {} is still running (errcode 85009)", running.id, running.version),
            ));
        }
        let access = self.access(upload.tenant_id).await?;
        let submission = AuditSubmission {
            version_desc: input.version_desc.map(VersionDescription::into_string).filter(|d| !d.is_empty()),
            item_list: input.item_list.map(|items| items.into_iter().map(serde_json::Value::Object).collect()),
            privacy_api_not_use: input.privacy_api_not_use,
        };
        let r = self.platform.submit_audit(&access, &submission).await;
        let auditid = match self.logged(upload.tenant_id, "submit_audit", TaskRef::Upload(upload.id), r) {
            Ok(id) => id,
            Err(e) => return Err(self.failed(upload.tenant_id, e).await),
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
        let stored = match self.repo.insert_audit_task(task).await {
            Err(Error::Conflict(..)) => {
                return Err(blocked(Reason::AuditRunning, "another audit of the tenant is running (errcode 85009)".into()));
            }
            other => other?,
        };
        log::info!("audit task {} (auditid {auditid}) of tenant {} submitted", stored.id, stored.tenant_id);
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
                let task = self.repo.audit_task(actor.party, id).await?;
                // A tenant named beside the task must be the task's.
                task.filter(|t| params.tenant_id.is_none_or(|tenant| tenant == t.tenant_id))
                    .ok_or_else(|| Error::no_such("audit_task_id", "no such audit task"))?
            }
            None => {
                let tenant = self.tenant(actor, params.tenant_id).await?;
                self.repo.latest_audit_task(tenant.id).await?.ok_or(Error::NotFound("audit task"))?
            }
        };
        if !task.status.is_running() {
            return Ok(task.into());
        }
        Ok(self.refresh_audit(&task).await?.into())
    }

    /// Asks the platform about a running audit and keeps the answer.
    async fn refresh_audit(&self, task: &AuditTask) -> Result<AuditTask> {
        let access = self.access(task.tenant_id).await?;
        let r = self.platform.audit_status(&access, task.auditid).await;
        match self.logged(task.tenant_id, "get_auditstatus", TaskRef::Audit(task.id), r) {
            Ok(report) => self.apply_audit_report(task.id, &report).await,
            Err(e) => Err(self.failed(task.tenant_id, e).await),
        }
    }

    /// The audit poll job's work: asks the platform about audit task `id` while it runs and
    /// keeps the answer. The job runs again later while the audit still runs (see
    /// `release_jobs`); errors leave it to be retried.
    pub async fn poll_audit(&self, id: Id) -> Result<AuditTaskView> {
        let task = self.repo.audit_task(Party::Platform, id).await?.ok_or(Error::NotFound("audit task"))?;
        if !task.status.is_running() {
            return Ok(task.into());
        }
        Ok(self.refresh_audit(&task).await?.into())
    }

    pub(super) fn clock(&self) -> &dyn Clock {
        self.clock.as_ref()
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
            let mut task = self.repo.audit_task(Party::Platform, id).await?.ok_or(Error::NotFound("audit task"))?;
            let read = task.state();
            let now = self.clock.now();
            if !change(&mut task, now) {
                return Ok(task);
            }
            task.updated_at = now;
            if self.repo.update_audit_task(task.clone(), read).await? {
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
        Ok(self.repo.list_audit_tasks(actor.party, query).await?.map(AuditTaskView::from))
    }

    // --- releases --------------------------------------------------------------------------

    /// `POST /miniprogram/publish`: releases a passed audit, fully or to a rising gray
    /// percentage. Every call that reaches the platform records a release task, also when the
    /// platform refuses (the error is then returned).
    pub async fn publish(&self, actor: &Actor, input: PublishRequest) -> Result<ReleaseTaskView> {
        let mode = input.release_mode()?;
        let audit = self
            .repo
            .audit_task(actor.party, input.audit_task_id)
            .await?
            .ok_or_else(|| Error::no_such("audit_task_id", "no such audit task"))?;
        check_release(audit.status, &audit.release, mode)?;
        let access = self.access(audit.tenant_id).await?;
        let (kind, percentage, r, call) = match mode {
            ReleaseMode::Full => (ReleaseKind::Full, None, self.platform.release(&access).await, "release"),
            ReleaseMode::Gray(p) => (ReleaseKind::Gray, Some(p), self.platform.gray_release(&access, p).await, "grayrelease"),
        };
        let r = self.logged(audit.tenant_id, call, TaskRef::Audit(audit.id), r);
        let task = self.release_task(actor, audit.tenant_id, Some(audit.id), kind, Some(audit.version.clone()), percentage, &r);
        let stored = self.repo.insert_release_task(task).await?;
        if let Err(e) = r {
            return Err(self.failed(audit.tenant_id, e).await);
        }
        let now = self.clock.now();
        self.save_audit(audit.id, |t, _| {
            let before = t.release.clone();
            match mode {
                ReleaseMode::Full => {
                    t.release.released_at.get_or_insert(now);
                }
                ReleaseMode::Gray(p) => t.release.gray_percentage = Some(t.release.gray_percentage.map_or(p, |g| g.max(p))),
            }
            t.release != before
        })
        .await?;
        Ok(stored.into())
    }

    /// `POST /miniprogram/rollback`: back to `app_version`, or to the previous version; 409
    /// while a gray release runs (87011). Recorded as a release task either way.
    pub async fn rollback(&self, actor: &Actor, input: RollbackRequest) -> Result<ReleaseTaskView> {
        let tenant = self.tenant(actor, input.tenant_id).await?;
        if input.app_version.is_some_and(|v| v < 1) {
            return Err(Error::invalid("app_version", "must be a version of the history"));
        }
        let access = self.access(tenant.id).await?;
        let r = self.platform.revert_release(&access, input.app_version).await;
        let r = self.logged(tenant.id, "revertcoderelease", TaskRef::Release, r);
        let version = input.app_version.map(|v| v.to_string());
        let task = self.release_task(actor, tenant.id, None, ReleaseKind::Rollback, version, None, &r);
        let stored = self.repo.insert_release_task(task).await?;
        match r {
            Ok(()) => Ok(stored.into()),
            Err(e) => Err(self.failed(tenant.id, e).await),
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
        let tenant = self.tenant(actor, tenant_id).await?;
        let access = self.access(tenant.id).await?;
        let info = self.platform.version_info(&access).await;
        let info = match self.logged(tenant.id, "getversioninfo", TaskRef::None, info) {
            Ok(i) => i,
            Err(e) => return Err(self.failed(tenant.id, e).await),
        };
        let plan = self.platform.gray_plan(&access).await;
        let plan = match self.logged(tenant.id, "getgrayreleaseplan", TaskRef::None, plan) {
            Ok(p) => Some(p),
            // No live version, so no plan either.
            Err(PlatformError::Refused { errcode: 85079, .. }) => None,
            Err(e) => return Err(self.failed(tenant.id, e).await),
        };
        let history = self.platform.history_versions(&access).await;
        let history = match self.logged(tenant.id, "get_history_version", TaskRef::None, history) {
            Ok(h) => h,
            Err(PlatformError::Refused { errcode: 85079, .. }) => Vec::new(),
            Err(e) => return Err(self.failed(tenant.id, e).await),
        };
        Ok(VersionsView { release: info.release, experience: info.experience, gray_plan: plan, history })
    }

    /// `GET /miniprogram/experience-qr`: the trial version's QR code, a JPEG.
    pub async fn experience_qr(&self, actor: &Actor, params: ExperienceQrParams) -> Result<Vec<u8>> {
        let tenant = self.tenant(actor, params.tenant_id).await?;
        let access = self.access(tenant.id).await?;
        let path = params.path.map(PagePath::into_string).filter(|p| !p.is_empty());
        let r = self.platform.experience_qr(&access, path).await;
        match self.logged(tenant.id, "get_qrcode", TaskRef::None, r) {
            Ok(jpeg) => Ok(jpeg),
            Err(e) => Err(self.failed(tenant.id, e).await),
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
