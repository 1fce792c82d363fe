//! A tenant's authorisation of its mini-program to our third-party platform, and what it lets
//! us do: [`AuthorizationService`].
//!
//! It holds the tenants a caller may act on, the authorisation link and its callback, the
//! platform's authorisation events and verify tickets (each applied once), revocations (an
//! `unauthorized` event, or a call answered 61003), and what a call for a tenant's
//! mini-program needs ([`AuthorizationService::access`]: the verify ticket the component token
//! comes from, and the refresh token the authorizer token comes from). The release pipeline,
//! and whatever else acts on tenants' mini-programs, goes through it.
use super::platform::{CODE_USED, REVOKED, TaskRef, logged, release_platform_error};
use crate::api::*;
use crate::config::{RecordRetention, ReleaseSettings};
use crate::lifecycle::AuthorizationStatus;
use crate::model::*;
use crate::ports::{AuthorizationRepo, MiniProgramPlatform, PlatformError, PlatformResult};
use atrium_kernel::Reason;
use atrium_kernel::secret::{hash_secret, random_token};
use atrium_kernel::{Actor, AuditRecord, Clock, Effects, Error, Id, Party, Result, Secret};
use std::sync::Arc;

/// What an audit result is recorded as among the events processed.
pub(super) const AUDIT_EVENT: &str = "weapp_audit";

/// A tenant's authorisation of its mini-program to our third-party platform, over its ports:
/// the tenants in a caller's scope, the authorisation link and callback, the authorisation
/// events and verify tickets the platform pushes, revocation, and the access a call for a
/// tenant's mini-program needs.
pub struct AuthorizationService {
    repo: Arc<dyn AuthorizationRepo>,
    platform: Arc<dyn MiniProgramPlatform>,
    clock: Arc<dyn Clock>,
    settings: ReleaseSettings,
}

impl AuthorizationService {
    /// A service over its storage, the platform, a clock and the release settings (the public
    /// URL the authorisation page sends the admin back under, and how long a link lasts).
    pub fn new(
        repo: Arc<dyn AuthorizationRepo>,
        platform: Arc<dyn MiniProgramPlatform>,
        clock: Arc<dyn Clock>,
        settings: ReleaseSettings,
    ) -> Self {
        AuthorizationService { repo, platform, clock, settings }
    }

    /// The tenant the caller acts on: its own, or the one it names if in scope (404 naming
    /// `tenant_id` if not; a platform or partner caller must name one, 400 otherwise).
    pub async fn tenant(&self, actor: &Actor, requested: Option<Id>) -> Result<ReleaseTenant> {
        let id = actor.party.tenant_for_new(requested)?;
        self.repo.tenant(actor.party, id).await?.ok_or_else(|| Error::no_such("tenant_id", "no such tenant"))
    }

    /// Up to `limit` authorised mini-programs in the caller's scope (of partner `partner_id`
    /// too, when given), by tenant id after `after_tenant_id`.
    pub async fn authorized_in_scope(
        &self,
        actor: &Actor,
        partner_id: Option<Id>,
        after_tenant_id: Id,
        limit: u32,
    ) -> Result<Vec<Authorization>> {
        self.repo.authorized_in_scope(actor.party, partner_id, after_tenant_id, limit).await
    }

    /// What a call with authorisation `a` needs (see [`AuthorizationService::access`]).
    pub async fn access_of(&self, a: Authorization) -> Result<AuthorizerAccess> {
        Ok(AuthorizerAccess { verify_ticket: self.ticket().await?, authorizer_appid: a.authorizer_appid, refresh_token: a.refresh_token })
    }

    /// A failed platform call for the tenant as a domain error (see
    /// [`release_platform_error`]); a revoked authorisation (61003) is recorded first.
    pub async fn failed(&self, tenant_id: Id, e: PlatformError) -> Error {
        self.note_revoked(tenant_id, &e).await;
        release_platform_error(e)
    }

    /// Records the tenant's authorisation as revoked when the platform says so (61003); a
    /// failure to record it is logged.
    pub async fn note_revoked(&self, tenant_id: Id, e: &PlatformError) {
        if e.errcode() == Some(REVOKED)
            && let Err(store) = self.mark_revoked(tenant_id).await
        {
            log::error!("recording the revoked authorisation of tenant {tenant_id} failed: {store}");
        }
    }

    /// The newest verify ticket; 502 until the platform has pushed one.
    pub(crate) async fn ticket(&self) -> Result<Secret> {
        match self.repo.verify_ticket().await? {
            Some(t) => Ok(t.ticket),
            None => Err(release_platform_error(PlatformError::NoTicket)),
        }
    }

    /// The tenant's authorisation, if it is authorised; 409 naming `authorization` otherwise.
    pub async fn authorized(&self, tenant_id: Id) -> Result<Authorization> {
        let blocked = |m: &str| Error::blocked(Reason::MiniprogramAuthorization, "authorization", m);
        match self.repo.get_authorization(tenant_id).await? {
            Some(a) if a.status == AuthorizationStatus::Authorized => Ok(a),
            Some(_) => Err(blocked("the mini-program's authorisation was revoked; its admin must authorise it again")),
            None => Err(blocked("the tenant has not authorised its mini-program to the platform yet")),
        }
    }

    /// What a call for the tenant's mini-program needs: the component's verify ticket and the
    /// tenant's authorisation, from which the platform adapter derives the authorizer access
    /// token. 409 naming `authorization` when the tenant is not authorised, 502 before the
    /// platform's first verify ticket.
    pub async fn access(&self, tenant_id: Id) -> Result<AuthorizerAccess> {
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
        let code = match logged(tenant_id, "api_create_preauthcode", TaskRef::None, code) {
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
            grant => match logged(tenant_id, "api_query_auth", TaskRef::None, grant) {
                Ok(g) => g,
                Err(e) => return Ok(Err(e)),
            },
        };
        // The profile only names the mini-program; without it the authorisation still works.
        let profile = self.platform.authorizer_profile(&ticket, &grant.authorizer_appid).await;
        let profile = logged(tenant_id, "api_get_authorizer_info", TaskRef::None, profile).unwrap_or_default();
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
        match self.repo.save_authorization(authorization, Effects::audited(audit)).await {
            Err(Error::Conflict(..)) => {
                Err(Error::blocked(Reason::Duplicate, "authorizer_appid", "this mini-program is already authorised for another tenant"))
            }
            other => other.map(Ok),
        }
    }

    /// Writes the audit entry of `actor`'s `action` (`miniprogram.domains.update`,
    /// `miniprogram.audit.submit`, …) on the tenant's `target_type` record `target_id` (or, for
    /// its settings on the platform, the tenant), owned by the tenant and its partner, with
    /// the values before (when known) and after. The action has happened by then (on the
    /// platform, in our records): a failure to write the entry is logged as an error, and
    /// does not turn the action's answer into a failure.
    pub async fn audit(
        &self,
        actor: &Actor,
        tenant_id: Id,
        action: &str,
        target: (&'static str, Id),
        before: Option<serde_json::Value>,
        after: serde_json::Value,
    ) {
        let written = async {
            let partner_id = self.repo.tenant(Party::Platform, tenant_id).await?.and_then(|t| t.partner_id);
            let audit = AuditRecord::by(actor, self.clock.now(), action, target.0, Some(target.1))
                .owned_by(partner_id, Some(tenant_id))
                .change(before.as_ref(), Some(&after));
            self.repo.record_audit(audit).await
        };
        if let Err(e) = written.await {
            log::error!("tenant {tenant_id}: the audit entry of {action} by user {} could not be written: {e}", actor.user_id);
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
        self.repo.save_authorization(after, Effects::audited(audit)).await?;
        log::warn!("the mini-program authorisation of tenant {tenant_id} was revoked");
        Ok(true)
    }

    // --- pushed events ---------------------------------------------------------------------

    /// Opens a push to one of the two event URLs, as received: verified, decrypted and read by
    /// the platform adapter. At the message URL, `appid` (the URL's mini-program) must be one
    /// authorised here, and an audit message must be addressed to its original id; its
    /// authorisation comes back with the event. An error means "not accepted, nothing
    /// changed".
    pub async fn open_event(
        &self,
        url: EventUrl,
        appid: Option<&str>,
        request: &EventRequest,
    ) -> std::result::Result<(PlatformEvent, Option<Authorization>), EventError> {
        let event = self.platform.open_event(url, request).inspect_err(|e| log::warn!("platform push refused: {e}"))?;
        let authorization = match url {
            EventUrl::Component => None,
            EventUrl::Message => {
                let appid = appid.ok_or(EventError::ForeignAppid)?;
                // The path's appid is the sender's text: shown escaped and cut in the log.
                let shown = atrium_kernel::shown(appid, 64);
                let found = self.repo.authorization_by_appid(appid.to_owned()).await.map_err(|e| {
                    log::error!("platform push for {shown}: reading the authorisation failed: {e}");
                    EventError::Unavailable
                })?;
                Some(found.ok_or_else(|| {
                    log::warn!("platform push for {shown}, which is not authorised here, refused");
                    EventError::ForeignAppid
                })?)
            }
        };
        if let (Some(a), EventKind::Audit { to_user, .. }) = (&authorization, &event.kind)
            && let Some(user_name) = a.user_name.as_deref().filter(|u| u != to_user)
        {
            log::warn!(
                "platform push for {} addressed to {}, not to its {user_name}",
                a.authorizer_appid,
                atrium_kernel::shown(to_user, 64)
            );
            return Err(EventError::ForeignAppid);
        }
        Ok((event, authorization))
    }

    /// A verified authorisation event — a verify ticket, `authorized`, `updateauthorized`,
    /// `unauthorized` — applied once per event id, forward only. Audit results are the release
    /// pipeline's ([`PipelineService::handle_event`](crate::PipelineService::handle_event));
    /// one handed here (at the component URL, which names no mini-program) is recorded and
    /// changes nothing, as is any other event.
    pub async fn handle_event(&self, event: PlatformEvent) -> Result<EventOutcome> {
        if self.event_seen(&event.id).await? {
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
            EventKind::Audit { .. } => (AUDIT_EVENT, EventOutcome::Ignored),
            EventKind::Other { .. } => ("other", EventOutcome::Ignored),
        };
        self.record_event(event.id, name).await?;
        Ok(outcome)
    }

    // --- housekeeping ----------------------------------------------------------------------

    /// Removes what is no longer needed, `batch` rows of each kind per delete until less than
    /// a full batch comes back: authorisation attempts that expired more than
    /// `retention.attempts_after_expiry` ago, and ids of pushed events that arrived more than
    /// `retention.event_ids` ago. Returns how many of each went. The cut-offs are fixed when
    /// it starts, so it ends however fast new records arrive; running it twice, or on several
    /// instances at once, removes each row once.
    pub async fn purge_records(&self, retention: RecordRetention, batch: u32) -> Result<PurgedRecords> {
        let now = self.clock.now();
        let (attempts_before, events_before) = (now - retention.attempts_after_expiry, now - retention.event_ids);
        let batch = batch.max(1);
        let mut total = PurgedRecords::default();
        loop {
            let n = self.repo.purge_authorization_records(attempts_before, events_before, batch).await?;
            total.attempts += n.attempts;
            total.events += n.events;
            if n.attempts < u64::from(batch) && n.events < u64::from(batch) {
                return Ok(total);
            }
        }
    }

    /// Whether the pushed event `event_id` was processed already.
    pub(crate) async fn event_seen(&self, event_id: &str) -> Result<bool> {
        self.repo.event_seen(event_id.to_owned()).await
    }

    /// Records that the pushed event `event_id` (of kind `name`) was processed.
    pub(crate) async fn record_event(&self, event_id: String, name: &str) -> Result<()> {
        self.repo.record_event(event_id, name.to_owned(), self.clock.now()).await
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
}
