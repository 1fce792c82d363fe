//! Release campaigns: one template version shipped to many tenants' mini-programs in waves,
//! watching the audits: [`CampaignService`].
//!
//! A campaign names its tenants when it is created. Starting it queues its driver, a job
//! (`miniprogram.campaign`) that runs a *tick* and queues itself again while the campaign is
//! not finished; any instance may run the next tick, and one tick of a campaign runs at a
//! time. A tick starts the first wave, then moves each unsettled tenant of the current wave
//! by one step:
//!
//! - `pending` → pre-flight (the campaign's domains and privacy settings applied first, when
//!   it has them) → an upload task of the template with the tenant's `ext_json` →
//!   `uploading` (or `preflight_failed`);
//! - `uploading`, once the upload task is `uploaded` → the audit quota checked (cached for a
//!   minute; at 0 the campaign pauses with `quota`) → an audit submitted → `auditing`;
//! - `auditing`, once the audit task is decided (by the platform's event or the poll job) →
//!   `passed` → released as the wave says → `released`; or `rejected`.
//!
//! Then the rules: rejections in the wave above `max_rejections` pause the campaign
//! (`rejections`); more than half of a wave failed (two or more) pauses it (`failures`);
//! a settled wave is `done`, and the next starts by itself with `auto_advance`, otherwise on
//! `advance`; after the last wave the campaign is `completed`.
//!
//! **Exactly once.** Before a step that calls the platform, the tick claims the tenant: a
//! write conditional on the tenant's revision that moves its `next_at` past the step's lease.
//! Of two ticks that meet (a lease that ran out on a slow instance), one wins the claim and
//! the other leaves the tenant. The steps themselves are the single-tenant pipeline's, which
//! refuses a second audit of a tenant while one runs.
//!
//! **Parallelism.** At most `parallelism` tenants of a campaign are stepping or waiting on an
//! upload (`uploading`, `passed`, `releasing`) at once; pending tenants start only into free
//! slots. Tenants waiting for the reviewers (`auditing`) hold no slot.
//!
//! **Failures.** A revoked authorisation or a refusal fails the tenant at once, with its
//! reason and errcode; a platform that does not answer is tried again after a back-off, and
//! the tenant fails after the configured attempts. A failed tenant holds no one else up.
use super::authorization::AuthorizationService;
use super::pipeline::PipelineService;
use super::preflight::PreflightService;
use crate::api::{AuditSubmit, PublishMode, PublishRequest, TemplateUpload};
use crate::campaign::*;
use crate::events;
use crate::lifecycle::{AuditStatus, UploadStatus};
use crate::ports::CampaignRepo;
use atrium_kernel::jobs::backoff;
use atrium_kernel::{
    Actor, AuditRecord, Clock, Effects, Error, Id, Job, JobHandler, JobOutcome, JobStore, NewJob, Page, Party, Reason, Result, StrEnum,
    Timestamp,
};
use futures_util::StreamExt;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The campaign driver's job; payload `{"campaign_id": N}`.
pub const CAMPAIGN_JOB: &str = "miniprogram.campaign";
/// Ticks between two questions to the platform about a tenant's running audit (five minutes
/// at the default tick): the audit's event is the fast way, this is the safety net.
const AUDIT_ASK_TICKS: i32 = 150;
/// The most tenants a selection by `all` or `partner_id` is read a page at a time.
const SELECTION_PAGE: u32 = 1000;
/// The most tenants outside the owner's scope a refused start names.
const OUTSIDE_SHOWN: u32 = 10;
/// The most tenants outside the owner's scope one tick fails.
const OUTSIDE_PER_TICK: u32 = 1000;
/// Why a tenant that left the campaign owner's scope failed.
const LEFT_SCOPE: &str = "the tenant is no longer in the scope of the campaign's partner";

/// The party a campaign acts as: its partner's, or the platform's.
fn owner(c: &Campaign) -> Party {
    match c.partner_id {
        Some(partner_id) => Party::Partner { partner_id },
        None => Party::Platform,
    }
}

/// How campaigns behave.
#[derive(Debug, Clone)]
pub struct CampaignSettings {
    /// Tenants of one campaign stepping at once (`ATRIUM_CAMPAIGN_PARALLELISM`, default 8).
    pub parallelism: usize,
    /// Between two ticks of a campaign (`ATRIUM_CAMPAIGN_TICK_MS`, default 2 s).
    pub tick: chrono::Duration,
    /// How long a claimed step holds its tenant before another tick may take it.
    pub step_lease: chrono::Duration,
    /// Failed tries of a step before the tenant fails.
    pub step_attempts: u32,
    /// The waits between tries of a step that failed for a reason that may pass.
    pub step_backoff: Vec<chrono::Duration>,
}

impl Default for CampaignSettings {
    fn default() -> Self {
        CampaignSettings {
            parallelism: 8,
            tick: chrono::Duration::seconds(2),
            step_lease: chrono::Duration::minutes(2),
            step_attempts: 5,
            step_backoff: vec![chrono::Duration::seconds(10), chrono::Duration::minutes(1), chrono::Duration::minutes(5)],
        }
    }
}

/// What a tenant's step came to.
enum Stepped {
    /// Nothing to do yet, or another tick has it.
    Idle,
    /// It moved.
    Moved,
    /// The audit quota is used up: the campaign pauses and the tenant stays.
    QuotaOut,
}

/// Release campaigns over their storage, acting through the pipeline, the pre-flight and the
/// authorisation services; its driver runs from the job queue (see the module docs).
pub struct CampaignService {
    repo: Arc<dyn CampaignRepo>,
    authorization: Arc<AuthorizationService>,
    pipeline: Arc<PipelineService>,
    preflight: Arc<PreflightService>,
    jobs: Arc<dyn JobStore>,
    clock: Arc<dyn Clock>,
    settings: CampaignSettings,
}

impl CampaignService {
    /// A service over campaign storage, the release services, the job queue and a clock.
    pub fn new(
        repo: Arc<dyn CampaignRepo>,
        pipeline: Arc<PipelineService>,
        preflight: Arc<PreflightService>,
        jobs: Arc<dyn JobStore>,
        clock: Arc<dyn Clock>,
        settings: CampaignSettings,
    ) -> Self {
        let authorization = pipeline.authorization().clone();
        CampaignService { repo, authorization, pipeline, preflight, jobs, clock, settings }
    }

    /// The settings campaigns run with.
    pub fn settings(&self) -> &CampaignSettings {
        &self.settings
    }

    // --- the routes --------------------------------------------------------------------------

    /// `POST /miniprogram/campaigns`: checks the campaign, finds its tenants and stores it as
    /// a `draft`. Platform and partner callers only; a partner's campaign names its own
    /// tenants only.
    pub async fn create(&self, actor: &Actor, input: NewCampaign) -> Result<CampaignView> {
        let partner_id = match actor.party {
            Party::Platform => None,
            Party::Partner { partner_id } => Some(partner_id),
            Party::Tenant { .. } => {
                return Err(Error::forbidden(Reason::PartyNotAllowed, "campaigns are run by the platform or a partner, not by a tenant"));
            }
        };
        let name = input.name.into_string();
        let selection = input.tenants.check()?;
        let waves = plan_waves(input.waves.as_deref())?;
        let max_rejections = match input.max_rejections {
            None => 1,
            Some(n) => u32::try_from(n)
                .ok()
                .filter(|n| *n <= MAX_CAMPAIGN_TENANTS as u32)
                .ok_or_else(|| Error::invalid("max_rejections", format!("must be between 0 and {MAX_CAMPAIGN_TENANTS}")))?,
        };
        if input.template_id < 0 {
            return Err(Error::invalid("template_id", "must be 0 or more"));
        }
        if let Some(d) = &input.domains {
            super::preflight::check_domains(d).map_err(|e| prefixed(e, "domains"))?;
        }
        if let Some(p) = &input.privacy {
            super::preflight::check_privacy(p).map_err(|e| prefixed(e, "privacy"))?;
        }
        if !self.pipeline.library_template(input.template_id).await? {
            return Err(Error::no_such("template_id", "no such template in the platform's template library"));
        }
        let tenants = self.select(actor, &selection).await?;
        if tenants.is_empty() {
            return Err(Error::invalid("tenants", "no tenant in your scope with an authorised mini-program matches"));
        }
        let now = self.clock.now();
        let campaign = Campaign {
            id: 0,
            name,
            partner_id,
            status: CampaignStatus::Draft,
            template_id: input.template_id,
            version: input.version.into_string(),
            description: input.description.into_string(),
            version_desc: input.version_desc.map(|d| d.into_string()).filter(|d| !d.is_empty()),
            ext_json: serde_json::Value::Object(input.ext_json.unwrap_or_default()),
            waves,
            current_wave: None,
            auto_advance: input.auto_advance.unwrap_or(false),
            max_rejections,
            domains: input.domains,
            privacy: input.privacy,
            paused_reason: None,
            tenant_total: tenants.len() as u32,
            created_by: actor.user_id,
            created_at: now,
            started_at: None,
            finished_at: None,
            revision: 0,
        };
        let rows = tenants
            .into_iter()
            .map(|(tenant_id, authorizer_appid)| CampaignTenant {
                campaign_id: 0,
                tenant_id,
                authorizer_appid,
                wave: None,
                status: CampaignTenantStatus::Pending,
                upload_task_id: None,
                audit_task_id: None,
                release_task_id: None,
                reason: None,
                errcode: None,
                attempts: 0,
                next_at: None,
                updated_at: now,
                revision: 0,
            })
            .collect();
        let audit = AuditRecord::by(actor, now, "miniprogram.campaign.create", "miniprogram_campaign", None);
        let stored = self.repo.insert_campaign(campaign, rows, Effects::audited(audit)).await?;
        log::info!("campaign {} ({} tenants) created by user {}", stored.id, stored.tenant_total, actor.user_id);
        self.view(actor.party, stored).await
    }

    /// The tenants a selection names, with their mini-programs: for `all` and `partner_id`
    /// every authorised one in scope; for a list, each in scope (404 naming the entry).
    async fn select(&self, actor: &Actor, selection: &Selection) -> Result<Vec<(Id, Option<String>)>> {
        match selection {
            Selection::All | Selection::Partner(_) => {
                let partner = match selection {
                    Selection::Partner(p) => Some(*p),
                    _ => None,
                };
                if let (Some(p), Party::Partner { partner_id }) = (partner, actor.party)
                    && p != partner_id
                {
                    return Err(Error::no_such("tenants.partner_id", "no such partner"));
                }
                let mut out = Vec::new();
                let mut after = 0;
                loop {
                    let page = self.authorization.authorized_in_scope(actor, partner, after, SELECTION_PAGE).await?;
                    let full = page.len() as u32 == SELECTION_PAGE;
                    for a in page {
                        after = a.tenant_id;
                        out.push((a.tenant_id, Some(a.authorizer_appid)));
                    }
                    if !full {
                        break;
                    }
                    if out.len() > MAX_CAMPAIGN_TENANTS {
                        return Err(Error::invalid("tenants", format!("more than {MAX_CAMPAIGN_TENANTS} tenants match; name fewer")));
                    }
                }
                Ok(out)
            }
            Selection::Tenants(ids) => {
                let mut out = Vec::with_capacity(ids.len());
                for (i, id) in ids.iter().enumerate() {
                    let tenant = self.authorization.tenant(actor, Some(*id)).await.map_err(|e| match e {
                        Error::NoSuch(_) => Error::no_such(format!("tenants.tenant_ids[{i}]"), format!("no such tenant {id}")),
                        other => other,
                    })?;
                    let appid = self.authorization.authorized(tenant.id).await.ok().map(|a| a.authorizer_appid);
                    out.push((tenant.id, appid));
                }
                Ok(out)
            }
        }
    }

    /// The campaign with its counts, of the tenants in the caller's scope.
    async fn view(&self, scope: Party, c: Campaign) -> Result<CampaignView> {
        let counts = self.repo.campaign_counts(scope, c.id, None).await?;
        Ok(CampaignView::new(c, counts))
    }

    /// The campaign, if the caller sees it (404 otherwise).
    async fn campaign(&self, actor: &Actor, id: Id) -> Result<Campaign> {
        self.repo.campaign(actor.party, id).await?.ok_or(Error::NotFound("campaign"))
    }

    /// `GET /miniprogram/campaigns/{id}`.
    pub async fn get(&self, actor: &Actor, id: Id) -> Result<CampaignView> {
        let c = self.campaign(actor, id).await?;
        self.view(actor.party, c).await
    }

    /// `GET /miniprogram/campaigns`.
    pub async fn list(&self, actor: &Actor, params: CampaignListParams) -> Result<Page<CampaignView>> {
        let query = CampaignQuery::try_from(params)?;
        let page = self.repo.list_campaigns(actor.party, query).await?;
        let mut items = Vec::with_capacity(page.items.len());
        for c in page.items {
            items.push(self.view(actor.party, c).await?);
        }
        Ok(Page { items, total: page.total, total_exact: page.total_exact, page: page.page, page_size: page.page_size })
    }

    /// `GET /miniprogram/campaigns/{id}/tenants`.
    pub async fn tenants(&self, actor: &Actor, id: Id, params: CampaignTenantListParams) -> Result<Page<CampaignTenantView>> {
        let query = CampaignTenantQuery::try_from(params)?;
        let c = self.campaign(actor, id).await?;
        // A tenant that has left a partner's scope since is not the partner's to see.
        Ok(self.repo.campaign_tenants(actor.party, c.id, query).await?.map(CampaignTenantView::from))
    }

    /// `POST /miniprogram/campaigns/{id}/start`: a draft starts; its first wave starts with
    /// the driver's first tick. 409 when it is not a draft, when one of its tenants is in
    /// another running or paused campaign, or when one of a partner's campaign has left the
    /// partner's scope since the campaign was created (`tenant_out_of_scope`).
    pub async fn start(&self, actor: &Actor, id: Id) -> Result<CampaignView> {
        let draft = self.campaign(actor, id).await?;
        if draft.status == CampaignStatus::Draft {
            let outside = self.repo.tenants_outside(owner(&draft), draft.id, None, OUTSIDE_SHOWN).await?;
            if !outside.is_empty() {
                let ids: Vec<String> = outside.iter().map(Id::to_string).collect();
                return Err(Error::conflict(
                    Reason::TenantOutOfScope,
                    format!(
                        "tenant(s) {} of the campaign are no longer in its partner's scope; create the campaign again without them",
                        ids.join(", ")
                    ),
                ));
            }
        }
        let c = self
            .change(actor, id, "start", |c, now| {
                if c.status != CampaignStatus::Draft {
                    return Err(state(format!("the campaign is {}; only a draft starts", c.status.as_str())));
                }
                c.status = CampaignStatus::Running;
                c.started_at = Some(now);
                Ok(())
            })
            .await?;
        self.wake(c.id).await;
        self.view(actor.party, c).await
    }

    /// `POST /miniprogram/campaigns/{id}/pause`: a running campaign stops taking new steps
    /// (`manual`); steps under way finish.
    pub async fn pause(&self, actor: &Actor, id: Id) -> Result<CampaignView> {
        let c = self
            .change(actor, id, "pause", |c, _| {
                if c.status != CampaignStatus::Running {
                    return Err(state(format!("the campaign is {}; only a running one pauses", c.status.as_str())));
                }
                c.status = CampaignStatus::Paused;
                c.paused_reason = Some(PauseReason::Manual);
                Ok(())
            })
            .await?;
        self.view(actor.party, c).await
    }

    /// `POST /miniprogram/campaigns/{id}/resume`: a paused campaign goes on where it stopped.
    pub async fn resume(&self, actor: &Actor, id: Id) -> Result<CampaignView> {
        let c = self
            .change(actor, id, "resume", |c, _| {
                if c.status != CampaignStatus::Paused {
                    return Err(state(format!("the campaign is {}; only a paused one resumes", c.status.as_str())));
                }
                c.status = CampaignStatus::Running;
                c.paused_reason = None;
                Ok(())
            })
            .await?;
        // The quota may be back: ask the platform again rather than the cache.
        self.preflight.forget_quota();
        self.wake(c.id).await;
        self.view(actor.party, c).await
    }

    /// `POST /miniprogram/campaigns/{id}/advance`: starts the next wave once every tenant of
    /// the current one is released, rejected, failed or skipped. 409 before that, or when no
    /// wave is left.
    pub async fn advance(&self, actor: &Actor, id: Id) -> Result<CampaignView> {
        let c = self.campaign(actor, id).await?;
        if !c.status.is_active() {
            return Err(state(format!("the campaign is {}; only a running or paused one advances", c.status.as_str())));
        }
        let Some(current) = c.current_wave else {
            return Err(state("the campaign's first wave has not started yet".into()));
        };
        if current as usize + 1 >= c.waves.len() {
            return Err(state("the current wave is the last".into()));
        }
        let counts = self.repo.campaign_counts(Party::Platform, c.id, Some(current)).await?;
        let unsettled: u32 = counts.iter().filter(|(s, _)| !s.is_settled()).map(|(_, n)| n).sum();
        if unsettled > 0 {
            return Err(state(format!("{unsettled} tenant(s) of wave {current} have not settled yet")));
        }
        let c = self.start_wave(c, current + 1, Some(actor)).await?;
        self.wake(c.id).await;
        self.view(actor.party, c).await
    }

    /// `POST /miniprogram/campaigns/{id}/cancel`: no new steps; tenants not started are
    /// `skipped`; what was released stays released.
    pub async fn cancel(&self, actor: &Actor, id: Id) -> Result<CampaignView> {
        let c = self
            .change(actor, id, "cancel", |c, now| {
                if matches!(c.status, CampaignStatus::Completed | CampaignStatus::Cancelled) {
                    return Err(state(format!("the campaign is {} already", c.status.as_str())));
                }
                c.status = CampaignStatus::Cancelled;
                c.paused_reason = None;
                c.finished_at = Some(now);
                Ok(())
            })
            .await?;
        let skipped = self.repo.skip_pending(c.id, self.clock.now()).await?;
        log::info!("campaign {} cancelled by user {}; {skipped} tenant(s) skipped", c.id, actor.user_id);
        self.view(actor.party, c).await
    }

    /// `POST /miniprogram/campaigns/{id}/retry`: failed, rejected and pre-flight-failed
    /// tenants of the started waves (only `tenant_ids` when given) start again from where
    /// they stopped; a campaign paused for rejections or failures, or completed, runs again.
    pub async fn retry(&self, actor: &Actor, id: Id, input: CampaignRetry) -> Result<CampaignView> {
        if let Some(ids) = &input.tenant_ids
            && (ids.is_empty() || ids.len() > MAX_CAMPAIGN_TENANTS)
        {
            return Err(Error::invalid("tenant_ids", format!("must name 1 to {MAX_CAMPAIGN_TENANTS} tenants, or be left out")));
        }
        let c = self.campaign(actor, id).await?;
        let Some(current) = c.current_wave else {
            return Err(state("no wave has started yet".into()));
        };
        if c.status == CampaignStatus::Cancelled {
            return Err(state("the campaign is cancelled".into()));
        }
        // A paused campaign's tenants are retried first, then it runs again: running first,
        // a tick could see the rejections still there and pause it again. A completed
        // campaign runs again first (its tenants become active again, which may be refused
        // when one has joined another campaign since; then nothing changes), then its tenants
        // are retried; retrying none leaves it to complete again at its next tick.
        let from_completed = c.status == CampaignStatus::Completed;
        let mut again = 0;
        if !from_completed {
            again = self.repo.retry_tenants(c.id, current, input.tenant_ids.clone(), self.clock.now()).await?;
        }
        let c = self
            .change(actor, id, "retry", |c, _| {
                let paused_by_rule = matches!(c.paused_reason, Some(PauseReason::Rejections | PauseReason::Failures));
                let rerun = (paused_by_rule && again > 0) || c.status == CampaignStatus::Completed;
                if rerun {
                    c.status = CampaignStatus::Running;
                    c.paused_reason = None;
                    c.finished_at = None;
                    if let Some(w) = c.current_wave.and_then(|w| c.waves.get_mut(w as usize)) {
                        w.status = WaveStatus::Running;
                    }
                }
                Ok(())
            })
            .await?;
        if from_completed {
            again = self.repo.retry_tenants(c.id, current, input.tenant_ids, self.clock.now()).await?;
        }
        log::info!("campaign {}: {again} tenant(s) retried by user {}", c.id, actor.user_id);
        if c.status == CampaignStatus::Running {
            self.wake(c.id).await;
        }
        self.view(actor.party, c).await
    }

    /// Reads the campaign in the caller's scope, lets `edit` change it (or refuse), and
    /// writes it conditionally on its revision, with an audit record; after a lost race,
    /// reads and tries again.
    async fn change(&self, actor: &Actor, id: Id, action: &str, edit: impl Fn(&mut Campaign, Timestamp) -> Result<()>) -> Result<Campaign> {
        for _ in 0..3 {
            let mut c = self.campaign(actor, id).await?;
            let (read, was) = (c.revision, c.status);
            let now = self.clock.now();
            edit(&mut c, now)?;
            let audit = AuditRecord::by(actor, now, format!("miniprogram.campaign.{action}"), "miniprogram_campaign", Some(c.id));
            let effects = Effects::audited(audit).with_events(events::campaign_changed(was, &c, now));
            if self.repo.update_campaign(c.clone(), read, effects).await? {
                c.revision = read + 1;
                return Ok(c);
            }
        }
        Err(Error::conflict(Reason::TryAgain, "the campaign kept changing while it was being updated; try again"))
    }

    /// Queues the campaign's driver to tick now (nothing when one is queued already).
    async fn wake(&self, campaign_id: Id) {
        let job = NewJob {
            kind: CAMPAIGN_JOB.into(),
            tenant_id: None,
            payload: json!({"campaign_id": campaign_id}),
            run_at: self.clock.now(),
            dedupe_key: Some(format!("campaign:{campaign_id}")),
        };
        if let Err(e) = self.jobs.enqueue(job).await {
            log::error!("campaign {campaign_id}: queueing its driver failed: {e}");
        }
    }

    /// Starts wave `wave`: takes its share of the tenants not in a wave yet, and records it
    /// as the current wave (the one before it `done`).
    async fn start_wave(&self, mut c: Campaign, wave: u32, actor: Option<&Actor>) -> Result<Campaign> {
        let taken_before: u32 = c.waves.iter().take(wave as usize).map(|w| w.tenants).sum();
        let want = wave_take(&c.waves, wave as usize, c.tenant_total, taken_before);
        // A start of this wave that lost its campaign write may have filled it already: fill
        // it up to its size only.
        let have: u32 = self.repo.campaign_counts(Party::Platform, c.id, Some(wave)).await?.iter().map(|(_, n)| n).sum();
        let took = have + self.repo.assign_wave(c.id, wave, want.saturating_sub(have)).await?;
        let read = c.revision;
        let now = self.clock.now();
        for w in c.waves.iter_mut() {
            if w.index < wave {
                w.status = WaveStatus::Done;
            } else if w.index == wave {
                w.status = WaveStatus::Running;
                w.tenants = took;
            }
        }
        c.current_wave = Some(wave);
        let audit = actor.map(|a| AuditRecord::by(a, now, "miniprogram.campaign.advance", "miniprogram_campaign", Some(c.id)));
        if !self.repo.update_campaign(c.clone(), read, Effects::maybe_audited(audit)).await? {
            return Err(Error::conflict(Reason::TryAgain, "the campaign changed while its wave was starting; try again"));
        }
        c.revision = read + 1;
        log::info!("campaign {}: wave {wave} started with {took} tenant(s)", c.id);
        Ok(c)
    }

    // --- the driver --------------------------------------------------------------------------

    /// One tick of campaign `id` (see the module docs). `Ok(true)` while the campaign is not
    /// finished, so the driver runs again.
    pub async fn tick(&self, id: Id) -> Result<bool> {
        let Some(mut c) = self.repo.campaign(Party::Platform, id).await? else { return Ok(false) };
        let paused = match c.status {
            CampaignStatus::Draft | CampaignStatus::Completed | CampaignStatus::Cancelled => return Ok(false),
            CampaignStatus::Paused => true,
            CampaignStatus::Running => false,
        };
        let wave = match c.current_wave {
            Some(w) => w,
            None if paused => return Ok(true),
            None => {
                c = self.start_wave(c, 0, None).await?;
                0
            }
        };
        let release = c.waves.get(wave as usize).map(|w| w.release).unwrap_or(WaveRelease::Full);
        // Tenants that left a partner's scope since the campaign was created (moved to another
        // partner) fail before any step: the campaign acts as its owner, never beyond it.
        let outside: std::collections::BTreeSet<Id> =
            self.repo.tenants_outside(owner(&c), c.id, Some(wave), OUTSIDE_PER_TICK).await?.into_iter().collect();
        let mut tenants = self.repo.wave_tenants(c.id, wave).await?;
        if !outside.is_empty() {
            let mut kept = Vec::with_capacity(tenants.len());
            for t in tenants {
                if !outside.contains(&t.tenant_id) {
                    kept.push(t);
                } else if !t.status.is_settled() {
                    let read = t.revision;
                    self.fail(t, read, None, LEFT_SCOPE).await?;
                }
            }
            tenants = kept;
        }
        let now = self.clock.now();
        let busy = tenants.iter().filter(|t| t.status.needs_step()).count();
        let mut slots = self.settings.parallelism.saturating_sub(busy);
        let mut due = Vec::new();
        for t in tenants {
            // An audit's record is read every tick (its event may have arrived); `next_at` only
            // spaces out asking the platform about it.
            let waiting = t.next_at.is_some_and(|at| at > now) && t.status != CampaignTenantStatus::Auditing;
            if t.status.is_settled() || waiting {
                continue;
            }
            // Paused, steps under way finish (an audit decided, a passed one released); nothing
            // new starts and nothing is submitted.
            if paused
                && !matches!(t.status, CampaignTenantStatus::Auditing | CampaignTenantStatus::Passed | CampaignTenantStatus::Releasing)
            {
                continue;
            }
            if t.status == CampaignTenantStatus::Pending {
                if slots == 0 {
                    continue;
                }
                slots -= 1;
            }
            due.push(t);
        }
        // The driver acts as the campaign's owner: a partner's campaign reaches only the
        // partner's tenants, whatever the steps below look up.
        let mut actor = Actor::new(c.created_by, "campaign", owner(&c), [atrium_kernel::permission::MINIPROGRAM_PUBLISH.name]);
        // What the driver writes to the audit trail says which campaign did it.
        actor.request_id = Some(format!("campaign:{}", c.id));
        let outcomes: Vec<Stepped> = futures_util::stream::iter(due)
            .map(|t| self.step(&c, &actor, release, t))
            .buffer_unordered(self.settings.parallelism.max(1))
            .collect()
            .await;
        if paused {
            return Ok(true);
        }
        let quota_out = outcomes.iter().any(|o| matches!(o, Stepped::QuotaOut));
        self.rules(c.id, wave, quota_out).await
    }

    /// After a tick's steps: the pause rules, the wave's end, the next wave or the end.
    async fn rules(&self, id: Id, wave: u32, quota_out: bool) -> Result<bool> {
        let Some(c) = self.repo.campaign(Party::Platform, id).await? else { return Ok(false) };
        if c.status != CampaignStatus::Running {
            return Ok(!matches!(c.status, CampaignStatus::Completed | CampaignStatus::Cancelled));
        }
        let counts: BTreeMap<CampaignTenantStatus, u32> =
            self.repo.campaign_counts(Party::Platform, c.id, Some(wave)).await?.into_iter().collect();
        let n = |s: CampaignTenantStatus| counts.get(&s).copied().unwrap_or(0);
        let total: u32 = counts.values().sum();
        let failed = n(CampaignTenantStatus::Failed);
        let pause = if quota_out {
            Some(PauseReason::Quota)
        } else if n(CampaignTenantStatus::Rejected) > c.max_rejections {
            Some(PauseReason::Rejections)
        } else if failed >= 2 && failed * 2 > total {
            Some(PauseReason::Failures)
        } else {
            None
        };
        if let Some(reason) = pause {
            let mut paused = c.clone();
            paused.status = CampaignStatus::Paused;
            paused.paused_reason = Some(reason);
            let effects = Effects::none().with_events(events::campaign_changed(c.status, &paused, self.clock.now()));
            if self.repo.update_campaign(paused, c.revision, effects).await? {
                log::warn!("campaign {id} paused: {}", reason.as_str());
            }
            return Ok(true);
        }
        let settled = counts.iter().all(|(s, _)| s.is_settled());
        if !settled {
            return Ok(true);
        }
        let last = wave as usize + 1 >= c.waves.len();
        if last {
            let mut done = c.clone();
            done.status = CampaignStatus::Completed;
            done.finished_at = Some(self.clock.now());
            if let Some(w) = done.waves.get_mut(wave as usize) {
                w.status = WaveStatus::Done;
            }
            let effects = Effects::none().with_events(events::campaign_changed(c.status, &done, self.clock.now()));
            if self.repo.update_campaign(done, c.revision, effects).await? {
                log::info!("campaign {id} completed");
                return Ok(false);
            }
            return Ok(true);
        }
        if c.auto_advance {
            self.start_wave(c, wave + 1, None).await?;
        } else if c.waves.get(wave as usize).is_some_and(|w| w.status != WaveStatus::Done) {
            let mut waiting = c.clone();
            if let Some(w) = waiting.waves.get_mut(wave as usize) {
                w.status = WaveStatus::Done;
            }
            self.repo.update_campaign(waiting, c.revision, Effects::none()).await?;
        }
        Ok(true)
    }

    /// Claims the tenant for a step that calls the platform: a write conditional on its
    /// revision that holds it for the step's lease. `None` when another tick has it, or when
    /// the tenant has left the scope of the campaign's owner since the tick began (then it
    /// fails: no step acts on it).
    async fn claim(&self, actor: &Actor, t: &CampaignTenant) -> Result<Option<CampaignTenant>> {
        let mut claimed = t.clone();
        claimed.next_at = Some(self.clock.now() + self.settings.step_lease);
        if !self.repo.update_campaign_tenant(claimed.clone(), t.revision).await? {
            return Ok(None);
        }
        claimed.revision = t.revision + 1;
        // Every tenant is the platform's: only a partner's campaign can lose one.
        if actor.party == Party::Platform {
            return Ok(Some(claimed));
        }
        match self.authorization.tenant(actor, Some(t.tenant_id)).await {
            Ok(_) => Ok(Some(claimed)),
            Err(Error::NoSuch(_)) => {
                let read = claimed.revision;
                self.fail(claimed, read, None, LEFT_SCOPE).await?;
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Writes the tenant's new state after its step (conditional on the claim's revision).
    async fn save(&self, mut t: CampaignTenant, read_revision: i64) -> Result<bool> {
        t.updated_at = self.clock.now();
        self.repo.update_campaign_tenant(t, read_revision).await
    }

    /// One step of one tenant; errors of our own (the database) are logged and the tenant is
    /// left for the next tick.
    async fn step(&self, c: &Campaign, actor: &Actor, release: WaveRelease, t: CampaignTenant) -> Stepped {
        let (campaign_id, tenant_id) = (t.campaign_id, t.tenant_id);
        match self.try_step(c, actor, release, t).await {
            Ok(s) => s,
            Err(e) => {
                log::warn!("campaign {campaign_id}, tenant {tenant_id}: step left for the next tick: {e}");
                Stepped::Idle
            }
        }
    }

    async fn try_step(&self, c: &Campaign, actor: &Actor, release: WaveRelease, t: CampaignTenant) -> Result<Stepped> {
        use CampaignTenantStatus as S;
        match t.status {
            S::Pending => {
                let Some(t) = self.claim(actor, &t).await? else { return Ok(Stepped::Idle) };
                self.start_tenant(c, actor, t).await
            }
            S::Uploading => {
                let Some(upload_id) = t.upload_task_id else {
                    return self.fail(t.clone(), t.revision, None, "no upload task was recorded").await;
                };
                let upload = self.pipeline.upload_task(actor, upload_id).await?;
                match upload.status {
                    UploadStatus::Queued | UploadStatus::Running => Ok(Stepped::Idle),
                    UploadStatus::Failed => {
                        let why = upload.error.unwrap_or_else(|| "the upload failed".into());
                        self.fail(t.clone(), t.revision, upload.errcode, &why).await
                    }
                    UploadStatus::Uploaded => {
                        let quota = self.preflight.cached_quota(t.tenant_id).await;
                        if matches!(quota, Ok(q) if q.rest <= 0) {
                            return Ok(Stepped::QuotaOut);
                        }
                        let Some(t) = self.claim(actor, &t).await? else { return Ok(Stepped::Idle) };
                        self.submit(c, actor, t, upload_id).await
                    }
                }
            }
            S::Auditing => {
                let Some(audit_id) = t.audit_task_id else {
                    return self.fail(t.clone(), t.revision, None, "no audit task was recorded").await;
                };
                let mut audit = self.pipeline.audit_task(actor, audit_id).await?;
                let now = self.clock.now();
                if audit.status.is_running() && t.next_at.is_none_or(|at| at <= now) {
                    // Now and then the platform is asked too, in case its event was lost (or
                    // came before the audit was recorded); the poll job does so more rarely.
                    let params = crate::api::AuditStatusParams { audit_task_id: Some(audit_id), tenant_id: None };
                    match self.pipeline.audit_status(actor, params).await {
                        Ok(asked) => audit = asked,
                        Err(e) => log::warn!("campaign {}, tenant {}: asking for audit {audit_id}: {e}", t.campaign_id, t.tenant_id),
                    }
                    if audit.status.is_running() {
                        let read = t.revision;
                        let mut next = t;
                        next.next_at = Some(now + self.settings.tick * AUDIT_ASK_TICKS);
                        self.save(next, read).await?;
                        return Ok(Stepped::Idle);
                    }
                }
                let read = t.revision;
                let mut next = t;
                match audit.status {
                    AuditStatus::Auditing | AuditStatus::Delayed => return Ok(Stepped::Idle),
                    AuditStatus::Passed => {
                        next.status = S::Passed;
                        next.attempts = 0;
                    }
                    AuditStatus::Rejected => {
                        next.status = S::Rejected;
                        next.reason = Some(audit.reason.unwrap_or_else(|| "rejected by the reviewers".into()));
                    }
                    AuditStatus::Withdrawn => {
                        next.status = S::Failed;
                        next.reason = Some("the audit was withdrawn".into());
                    }
                }
                next.next_at = None;
                self.save(next, read).await?;
                Ok(Stepped::Moved)
            }
            S::Passed | S::Releasing => {
                let Some(t) = self.claim(actor, &t).await? else { return Ok(Stepped::Idle) };
                self.release(actor, release, t).await
            }
            S::PreflightFailed | S::Rejected | S::Released | S::Failed | S::Skipped => Ok(Stepped::Idle),
        }
    }

    /// Pre-flight (the campaign's domains and privacy settings applied first), then the
    /// upload of the template with the tenant's `ext_json`.
    async fn start_tenant(&self, c: &Campaign, actor: &Actor, t: CampaignTenant) -> Result<Stepped> {
        let read = t.revision;
        let mut applied = Ok(());
        if let Some(d) = &c.domains {
            applied = self.preflight.apply_domains(actor, t.tenant_id, d).await;
        }
        if let (Ok(()), Some(p)) = (&applied, &c.privacy) {
            applied = self.preflight.apply_privacy(actor, t.tenant_id, p).await;
        }
        let failed: Vec<String> = match applied {
            Err(e) if is_transient(&e) => return self.again(t, read, None, &e.to_string()).await,
            // The authorisation is gone (revoked since the campaign was created, or the grant
            // withdrawn): the tenant fails.
            Err(e @ (Error::Forbidden(..) | Error::Blocked(Reason::MiniprogramAuthorization, _))) => {
                return self.fail(t, read, None, &e.to_string()).await;
            }
            Err(e) => vec![e.to_string()],
            Ok(()) => {
                let view = self.preflight.checks(t.tenant_id, false).await;
                // No authorisation (revoked since the campaign was created): the tenant fails.
                if let Some(first) = view.checks.first().filter(|c| c.name == "authorized" && !c.ok) {
                    let why = format!("authorized: {}", first.detail);
                    return self.fail(t, read, None, &why).await;
                }
                view.checks.into_iter().filter(|c| !c.ok).map(|c| format!("{}: {}", c.name, c.detail)).collect()
            }
        };
        if !failed.is_empty() {
            let mut next = t;
            next.status = CampaignTenantStatus::PreflightFailed;
            next.reason = Some(failed.join("; "));
            next.next_at = None;
            self.save(next, read).await?;
            return Ok(Stepped::Moved);
        }
        // A retry after a rejection submits the upload it has again: the version is the
        // tenant's already.
        if let Some(upload_id) = t.upload_task_id {
            let upload = self.pipeline.upload_task(actor, upload_id).await?;
            if upload.status != UploadStatus::Failed {
                let mut next = t;
                next.status = CampaignTenantStatus::Uploading;
                next.audit_task_id = None;
                next.next_at = None;
                self.save(next, read).await?;
                return Ok(Stepped::Moved);
            }
        }
        let appid = match &t.authorizer_appid {
            Some(a) => a.clone(),
            None => self.authorization.authorized(t.tenant_id).await?.authorizer_appid,
        };
        let ext_json = match ext_json_for(&c.ext_json, t.tenant_id, &appid) {
            serde_json::Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        let upload = TemplateUpload {
            tenant_id: Some(t.tenant_id),
            template_id: c.template_id,
            ext_json,
            version: crate::api::Version::parse(&c.version).map_err(|m| Error::invalid("version", m))?,
            description: crate::api::VersionDescription::try_from(c.description.clone()).map_err(|m| Error::invalid("description", m))?,
        };
        match self.pipeline.upload_template(actor, upload).await {
            Ok(view) => {
                let mut next = t;
                next.status = CampaignTenantStatus::Uploading;
                next.authorizer_appid = Some(appid);
                next.upload_task_id = Some(view.id);
                next.attempts = 0;
                next.next_at = None;
                self.save(next, read).await?;
                Ok(Stepped::Moved)
            }
            Err(e) if is_transient(&e) => self.again(t, read, None, &e.to_string()).await,
            Err(e) => self.fail(t, read, errcode_of(&e), &e.to_string()).await,
        }
    }

    /// Submits the tenant's uploaded code for audit.
    async fn submit(&self, c: &Campaign, actor: &Actor, t: CampaignTenant, upload_id: Id) -> Result<Stepped> {
        let read = t.revision;
        let version_desc = match &c.version_desc {
            Some(d) => Some(crate::api::VersionDescription::try_from(d.clone()).map_err(|m| Error::invalid("version_desc", m))?),
            None => None,
        };
        let input = AuditSubmit { upload_task_id: upload_id, version_desc, item_list: None, privacy_api_not_use: None };
        match self.pipeline.submit_audit_for_campaign(actor, input).await {
            Ok(view) => {
                self.preflight.spend_cached_quota();
                let mut next = t;
                next.status = CampaignTenantStatus::Auditing;
                next.audit_task_id = Some(view.id);
                next.attempts = 0;
                next.next_at = Some(self.clock.now() + self.settings.tick * AUDIT_ASK_TICKS);
                self.save(next, read).await?;
                Ok(Stepped::Moved)
            }
            Err(Error::RateLimited { .. }) => {
                // Free the claim; the tenant waits for the quota.
                let mut next = t;
                next.next_at = None;
                self.save(next, read).await?;
                Ok(Stepped::QuotaOut)
            }
            Err(e) if is_transient(&e) => self.again(t, read, None, &e.to_string()).await,
            Err(e) => self.fail(t, read, errcode_of(&e), &e.to_string()).await,
        }
    }

    /// Releases the tenant's passed audit as its wave says.
    async fn release(&self, actor: &Actor, release: WaveRelease, t: CampaignTenant) -> Result<Stepped> {
        let read = t.revision;
        let Some(audit_id) = t.audit_task_id else {
            return self.fail(t, read, None, "no audit task was recorded").await;
        };
        let (mode, gray_percentage) = match release {
            WaveRelease::Full => (PublishMode::Full, None),
            WaveRelease::Gray { gray } => (PublishMode::Gray, Some(i64::from(gray))),
        };
        match self.pipeline.publish(actor, PublishRequest { audit_task_id: audit_id, mode, gray_percentage }).await {
            Ok(view) => {
                let mut next = t;
                next.status = CampaignTenantStatus::Released;
                next.release_task_id = Some(view.id);
                next.attempts = 0;
                next.next_at = None;
                self.save(next, read).await?;
                Ok(Stepped::Moved)
            }
            // Released before (a step whose answer was lost): nothing more to do.
            Err(Error::Blocked(Reason::State | Reason::GrayNotRising, _)) => {
                let mut next = t;
                next.status = CampaignTenantStatus::Released;
                next.next_at = None;
                self.save(next, read).await?;
                Ok(Stepped::Moved)
            }
            Err(e) if is_transient(&e) => self.again(t, read, None, &e.to_string()).await,
            Err(e) => self.fail(t, read, errcode_of(&e), &e.to_string()).await,
        }
    }

    /// A step that may succeed later: tried again after the back-off, or the tenant fails
    /// once its attempts are used up.
    async fn again(&self, t: CampaignTenant, read: Id, errcode: Option<i64>, why: &str) -> Result<Stepped> {
        let attempts = t.attempts + 1;
        let wait = backoff(
            i32::try_from(attempts).unwrap_or(i32::MAX),
            &self.settings.step_backoff,
            i32::try_from(self.settings.step_attempts).unwrap_or(i32::MAX),
        );
        let Some(wait) = wait else {
            return self.fail(t, read, errcode, &format!("given up after {attempts} tries: {why}")).await;
        };
        log::warn!("campaign {}, tenant {}: try {attempts} failed, again in {}s: {why}", t.campaign_id, t.tenant_id, wait.num_seconds());
        let mut next = t;
        next.attempts = attempts;
        next.reason = Some(why.to_owned());
        next.next_at = Some(self.clock.now() + wait);
        self.save(next, read).await?;
        Ok(Stepped::Moved)
    }

    /// The tenant fails for good, with why.
    async fn fail(&self, t: CampaignTenant, read: Id, errcode: Option<i64>, why: &str) -> Result<Stepped> {
        log::warn!("campaign {}, tenant {} failed: {why}", t.campaign_id, t.tenant_id);
        let mut next = t;
        next.status = CampaignTenantStatus::Failed;
        next.reason = Some(why.to_owned());
        next.errcode = errcode;
        next.next_at = None;
        self.save(next, read).await?;
        Ok(Stepped::Moved)
    }
}

/// A failure that may pass: the platform did not answer, or a write lost a race.
fn is_transient(e: &Error) -> bool {
    matches!(e, Error::Upstream(_) | Error::Conflict(Reason::TryAgain, _) | Error::Unavailable { .. })
}

/// The platform's errcode an error carries, if any.
fn errcode_of(e: &Error) -> Option<i64> {
    match e {
        Error::PlatformRefused { errcode, .. } => Some(*errcode),
        Error::Invalid(f) | Error::Blocked(_, f) => f.iter().find_map(|f| {
            let m = f.message.strip_prefix("errcode ")?;
            m.split(|c: char| !c.is_ascii_digit() && c != '-').next()?.parse().ok()
        }),
        _ => None,
    }
}

/// A 409 for a campaign in the wrong state.
fn state(message: String) -> Error {
    Error::conflict(Reason::State, message)
}

/// A field error of a nested object, its fields prefixed (`domains.requestdomain[0]`).
fn prefixed(e: Error, prefix: &str) -> Error {
    match e {
        Error::Invalid(errors) => {
            Error::Invalid(errors.into_iter().map(|f| atrium_kernel::FieldError::new(format!("{prefix}.{}", f.field), f.message)).collect())
        }
        other => other,
    }
}

#[derive(serde::Deserialize)]
struct CampaignPayload {
    campaign_id: Id,
}

#[async_trait::async_trait]
impl JobHandler for CampaignService {
    fn kinds(&self) -> Vec<String> {
        vec![CAMPAIGN_JOB.to_owned()]
    }

    /// One tick; queued again (a retry of the same job) while the campaign is not finished.
    async fn run(&self, job: &Job) -> JobOutcome {
        let id = match serde_json::from_value::<CampaignPayload>(job.payload.clone()) {
            Ok(p) => p.campaign_id,
            Err(e) => return JobOutcome::Failed(format!("unreadable {CAMPAIGN_JOB} payload: {e}")),
        };
        let again = self.clock.now() + self.settings.tick;
        match self.tick(id).await {
            Ok(true) => JobOutcome::Retry { at: again, reason: "the campaign goes on".into() },
            Ok(false) => JobOutcome::Done,
            Err(e) => JobOutcome::Retry { at: again, reason: e.to_string() },
        }
    }
}
