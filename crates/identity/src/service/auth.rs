use super::SessionCache;
use crate::config::IdentityConfig;
use crate::model::*;
use crate::password::Password;
use crate::ports::*;
use crate::token::{AccessClaims, TokenKeys, hash_code, hash_secret, random_token};
use atrium_kernel::Reason;
use atrium_kernel::StrEnum;
use atrium_kernel::secret::constant_time_eq;
use atrium_kernel::{AuditRecord, Clock, ContactTarget, Effects, Error, Id, Result, Text, Timestamp};
use chrono::Duration;
use rand::Rng;
use std::sync::Arc;

/// One message for every failed password or code login, whether or not the account exists.
const BAD_CREDENTIALS: &str = "invalid username or password";
const BAD_CODE_LOGIN: &str = "invalid or expired verification code";
const SESSION_OVER: &str = "session has ended; log in again";
/// Longer than any username, phone or e-mail address an account can have.
const MAX_LOGIN_BYTES: usize = 320;

/// A bcrypt hash of a random string: verifying against it makes a login for an unknown user
/// cost the same time as one for a known user.
const DUMMY_HASH: &str = "$2b$10$7EqJtq98hPqEX7fNZaFWoOhi5BWX4Z3uQhZcrX2Jv6Xk9OQb5eQ1e";

/// The identity use cases. Generic over nothing: ports are trait objects so the server can
/// wire adapters and tests can pass mocks.
pub struct IdentityService {
    repo: Arc<dyn IdentityRepo>,
    hasher: Arc<dyn PasswordHasher>,
    codes: Arc<dyn CodeSender>,
    chat: Option<Arc<dyn ChatLoginProvider>>,
    clock: Arc<dyn Clock>,
    config: IdentityConfig,
    keys: TokenKeys,
    cache: Arc<SessionCache>,
}

impl IdentityService {
    /// A login service over identity storage, the password hasher, the code sender, the QR login
    /// provider (if configured), a clock and its settings. It makes its own session cache; share
    /// it with [`UserService`](crate::UserService) and [`RoleService`](crate::RoleService)
    /// through [`IdentityService::session_cache`].
    pub fn new(
        repo: Arc<dyn IdentityRepo>,
        hasher: Arc<dyn PasswordHasher>,
        codes: Arc<dyn CodeSender>,
        chat: Option<Arc<dyn ChatLoginProvider>>,
        clock: Arc<dyn Clock>,
        config: IdentityConfig,
    ) -> Self {
        let keys = TokenKeys::new(&config.jwt_secret, &config.issuer, &config.audience);
        let cache = Arc::new(SessionCache::new(config.principal_cache_ttl));
        IdentityService { repo, hasher, codes, chat, clock, config, keys, cache }
    }

    /// The settings the service runs with.
    pub fn config(&self) -> &IdentityConfig {
        &self.config
    }

    // ----- logins -------------------------------------------------------------------------

    /// Password login by username, phone or e-mail.
    pub async fn login_password(&self, login: &str, password: &str, client: &ClientInfo) -> Result<TokenGrant> {
        let now = self.clock.now();
        self.refuse_blocked_ip(client, now).await?;
        let key = normalise_login(login);
        if key.len() > MAX_LOGIN_BYTES {
            // No account has such a name; do not store it as a counter either.
            let _ = self.hasher.verify(password, DUMMY_HASH).await?;
            self.count_ip_failure(client, now).await?;
            return Err(Error::Unauthenticated(BAD_CREDENTIALS.into()));
        }
        // Failures count against the identifier as presented, known or not, so an unknown
        // name locks exactly as a real one does.
        let lookup = self.repo.find_login(&key).await?;
        if let Some(until) = lookup.locked_until.filter(|u| *u > now) {
            return Err(locked(until, now));
        }
        let creds = lookup.credentials;
        // Same work for an unknown account or one without a password as for a wrong password.
        let hash = creds.as_ref().and_then(|c| c.password_hash.as_deref()).unwrap_or(DUMMY_HASH);
        let ok = self.hasher.verify(password, hash).await? && creds.as_ref().is_some_and(|c| c.password_hash.is_some());
        let creds = match creds {
            Some(c) if ok => c,
            creds => {
                self.count_ip_failure(client, now).await?;
                let lock_until = now + self.config.lockout_duration;
                let lock_audit = creds.map(|c| audit(now, client, "user.locked", &c.user, None));
                self.repo.record_login_failure(&key, now, self.config.lockout_threshold, lock_until, lock_audit).await?;
                return Err(Error::Unauthenticated(BAD_CREDENTIALS.into()));
            }
        };
        if creds.user.status != UserStatus::Active {
            return Err(Error::Unauthenticated("this account is disabled".into()));
        }
        if lookup.failures > 0 {
            self.repo.clear_login_failures(&key).await?;
        }
        creds.standing.check()?;
        self.start_session(creds.user, client, now, "password").await
    }

    /// Login with a verification code sent to a phone or e-mail address.
    pub async fn login_code(&self, target: &str, code: &str, client: &ClientInfo) -> Result<TokenGrant> {
        let now = self.clock.now();
        self.refuse_blocked_ip(client, now).await?;
        let target = ContactTarget::parse("target", target)?;
        if !self.check_code(&target, CodePurpose::Login, code, now).await? {
            self.count_ip_failure(client, now).await?;
            return Err(Error::Unauthenticated(BAD_CODE_LOGIN.into()));
        }
        let user = match self.repo.find_credentials(target.as_str()).await? {
            Some(c) if c.user.status == UserStatus::Active => c,
            _ => return Err(Error::Unauthenticated(BAD_CODE_LOGIN.into())),
        };
        user.standing.check()?;
        self.start_session(user.user, client, now, "code").await
    }

    /// Login with a QR ticket that a bound platform account has scanned.
    pub async fn login_qr(&self, ticket: &str, client: &ClientInfo) -> Result<TokenGrant> {
        let now = self.clock.now();
        let rejected = || Error::Unauthenticated("the QR ticket is not confirmed, expired or already used".into());
        let t = self.repo.get_chat_ticket(ticket).await?.ok_or_else(rejected)?;
        if t.status != TicketStatus::Confirmed || t.consumed_at.is_some() || t.expires_at <= now {
            return Err(rejected());
        }
        let user_id = t.user_id.ok_or_else(rejected)?;
        if !self.repo.consume_chat_ticket(ticket, TicketStatus::Confirmed, now).await? {
            return Err(rejected());
        }
        let user = self.repo.find_user_by_chat_identity(t.chat_identity.as_deref().unwrap_or_default()).await?;
        match user {
            Some(c) if c.user.id == user_id && c.user.status == UserStatus::Active => {
                c.standing.check()?;
                self.start_session(c.user, client, now, "qr").await
            }
            _ => Err(rejected()),
        }
    }

    async fn start_session(&self, user: User, client: &ClientInfo, now: Timestamp, method: &str) -> Result<TokenGrant> {
        let session_id = random_token(18);
        let expires_at = now + self.config.session_max_age;
        let refresh = random_token(32);
        let refresh_expires = (now + self.config.refresh_ttl).min(expires_at);
        self.repo
            .create_session(
                NewSession {
                    id: session_id.clone(),
                    user_id: user.id,
                    created_at: now,
                    expires_at,
                    ip: client.ip.clone(),
                    user_agent: client.user_agent.as_ref().map(|u| u.chars().take(255).collect()),
                },
                NewRefreshToken {
                    token_hash: hash_secret(&refresh),
                    session_id: session_id.clone(),
                    created_at: now,
                    expires_at: refresh_expires,
                },
                audit(now, client, "session.login", &user, Some(serde_json::json!({"method": method, "session": short(&session_id)}))),
            )
            .await?;
        log::info!("session started for user {}", user.id);
        self.grant(user, &session_id, expires_at, refresh, refresh_expires, now)
    }

    pub(super) fn grant(
        &self,
        user: User,
        session_id: &str,
        session_expires: Timestamp,
        refresh: String,
        refresh_expires: Timestamp,
        now: Timestamp,
    ) -> Result<TokenGrant> {
        let exp = (now + self.config.access_ttl).min(session_expires);
        let claims = AccessClaims {
            iss: self.config.issuer.clone(),
            aud: self.config.audience.clone(),
            sub: user.id.to_string(),
            sid: session_id.to_owned(),
            iat: now.timestamp(),
            exp: exp.timestamp(),
        };
        Ok(TokenGrant {
            access_token: self.keys.sign(&claims)?,
            expires_in: (exp - now).num_seconds(),
            refresh_token: refresh,
            refresh_expires_in: (refresh_expires - now).num_seconds(),
            user,
        })
    }

    /// Trades a refresh token for a new pair. Replaying a used token ends its session.
    pub async fn refresh(&self, refresh_token: &str, client: &ClientInfo) -> Result<TokenGrant> {
        let now = self.clock.now();
        let next = random_token(32);
        let next_row = NewRefreshToken {
            token_hash: hash_secret(&next),
            session_id: String::new(),
            created_at: now,
            expires_at: now + self.config.refresh_ttl,
        };
        let replay_audit =
            AuditRecord::system(now, "session.replay_revoked", "user", None).from_client(client.ip.clone(), client.request_id.clone());
        match self.repo.rotate_refresh_token(&hash_secret(refresh_token), next_row, now, replay_audit).await? {
            RefreshOutcome::Rotated { session } => {
                let principal = self.repo.load_principal(&session.id).await?;
                let Some(p) = principal.filter(|p| p.user.status == UserStatus::Active) else {
                    return Err(Error::Unauthenticated(SESSION_OVER.into()));
                };
                p.standing.check()?;
                let refresh_expires = (now + self.config.refresh_ttl).min(session.expires_at);
                self.grant(p.user, &session.id, session.expires_at, next, refresh_expires, now)
            }
            RefreshOutcome::Replayed { session_id } => {
                log::warn!("refresh token replayed; session {} revoked", short(&session_id));
                self.cache.forget(&session_id);
                Err(Error::Unauthenticated("refresh token already used; the session has been ended".into()))
            }
            RefreshOutcome::Rejected => Err(Error::Unauthenticated("invalid or expired refresh token".into())),
        }
    }

    /// Ends the caller's session; its access and refresh tokens stop working at once.
    pub async fn logout(&self, principal: &Principal, client: &ClientInfo) -> Result<()> {
        let now = self.clock.now();
        let sid = &principal.session.id;
        let audit = audit(now, client, "session.logout", &principal.user, Some(serde_json::json!({"session": short(sid)})));
        self.repo.revoke_session(sid, "logout", now, audit).await?;
        self.cache.forget(sid);
        Ok(())
    }

    /// Resolves a bearer access token to its live principal, or 401.
    pub async fn authenticate(&self, access_token: &str) -> Result<Arc<Principal>> {
        let (user_id, claims) = self.keys.verify(access_token, self.clock.now().timestamp())?;
        if let Some(p) = self.cache.get(&claims.sid) {
            return self.check_live(p, user_id);
        }
        let p = self.repo.load_principal(&claims.sid).await?.ok_or_else(|| Error::Unauthenticated(SESSION_OVER.into()))?;
        let p = Arc::new(p);
        self.cache.put(&claims.sid, p.clone());
        self.check_live(p, user_id)
    }

    fn check_live(&self, p: Arc<Principal>, user_id: Id) -> Result<Arc<Principal>> {
        let now = self.clock.now();
        if p.session.user_id != user_id || p.session.revoked_at.is_some() || p.session.expires_at <= now {
            return Err(Error::Unauthenticated(SESSION_OVER.into()));
        }
        if p.user.status != UserStatus::Active {
            return Err(Error::Unauthenticated("this account is disabled".into()));
        }
        p.standing.check()?;
        Ok(p)
    }

    /// Drops cached principals of a session so the next request reloads it (used after
    /// changes to a user made through another service on this instance).
    pub fn forget_session(&self, session_id: &str) {
        self.cache.forget(session_id);
    }

    /// Drops cached principals of one user (after its access changed on this instance).
    pub fn forget_user(&self, user_id: Id) {
        self.cache.forget_user(user_id);
    }

    /// The cache of authenticated sessions, for the services that change users and roles.
    pub fn session_cache(&self) -> Arc<SessionCache> {
        self.cache.clone()
    }

    /// Drops every cached principal (after role or user changes on this instance).
    pub fn forget_all_sessions(&self) {
        self.cache.clear();
    }

    // ----- verification codes -------------------------------------------------------------

    /// Sends a fresh 6-digit code, within the resend interval and hourly limits.
    pub async fn send_code(&self, target: &str, purpose: CodePurpose, client: &ClientInfo) -> Result<CodeSent> {
        let now = self.clock.now();
        let target = ContactTarget::parse("target", target)?;
        let hour_ago = now - Duration::hours(1);

        if let Some(last) = self.repo.latest_code(target.as_str(), purpose).await? {
            let next_allowed = last.created_at + self.config.code_resend_after;
            if next_allowed > now {
                return Err(Error::RateLimited {
                    message: "a code was sent moments ago; wait before asking again".into(),
                    retry_after_secs: secs_until(next_allowed, now),
                });
            }
        }
        let target_bucket = format!("code:target:{}", target.as_str());
        let (sent, oldest) = self.repo.rate_bucket(&target_bucket, hour_ago).await?;
        if sent >= self.config.codes_per_target_per_hour {
            return Err(hourly_limit("too many codes for this address; try again later", oldest, now));
        }
        if let Some(ip) = &client.ip {
            let ip_bucket = format!("code:ip:{ip}");
            let (sent, oldest) = self.repo.rate_bucket(&ip_bucket, hour_ago).await?;
            if sent >= self.config.codes_per_ip_per_hour {
                return Err(hourly_limit("too many codes requested from this address; try again later", oldest, now));
            }
            self.repo.hit_rate_bucket(&ip_bucket, now, hour_ago).await?;
        }
        self.repo.hit_rate_bucket(&target_bucket, now, hour_ago).await?;

        let code = format!("{:06}", rand::rng().random_range(0..1_000_000u32));
        self.repo
            .insert_code(NewCode {
                target: target.as_str().to_owned(),
                purpose,
                code_hash: hash_code(&self.config.jwt_secret, target.as_str(), purpose.as_str(), &code),
                created_at: now,
                expires_at: now + self.config.code_ttl,
                ip: client.ip.clone(),
            })
            .await?;
        self.codes.send_code(&target, purpose, &code).await?;
        Ok(CodeSent {
            expires_in: self.config.code_ttl.num_seconds(),
            resend_after: self.config.code_resend_after.num_seconds(),
            debug_code: self.config.expose_debug_codes.then_some(code),
        })
    }

    /// Checks and, if right, uses up the newest code; a wrong try counts against it.
    async fn check_code(&self, target: &ContactTarget, purpose: CodePurpose, code: &str, now: Timestamp) -> Result<bool> {
        let Some(rec) = self.repo.latest_code(target.as_str(), purpose).await? else {
            return Ok(false);
        };
        if rec.consumed_at.is_some() || rec.expires_at <= now || rec.attempts >= self.config.code_max_attempts {
            return Ok(false);
        }
        let presented = hash_code(&self.config.jwt_secret, target.as_str(), purpose.as_str(), code.trim());
        if !constant_time_eq(presented.as_bytes(), rec.code_hash.as_bytes()) {
            self.repo.record_code_attempt(rec.id, self.config.code_max_attempts, now).await?;
            return Ok(false);
        }
        self.repo.consume_code(rec.id, now).await
    }

    /// Self-service sign-up: a pending tenant and its admin, who may log in at once.
    pub async fn register(
        &self,
        target: &str,
        code: &str,
        password: &str,
        name: &str,
        tenant_name: &str,
        client: &ClientInfo,
    ) -> Result<Registered> {
        let now = self.clock.now();
        let target = ContactTarget::parse("target", target)?;
        let password = Password::parse("password", password)?;
        let name = text::<64>("name", name)?;
        let tenant_name = text::<128>("tenant_name", tenant_name)?;
        if !self.check_code(&target, CodePurpose::Register, code, now).await? {
            return Err(Error::Unauthenticated("the code is wrong or expired".into()));
        }
        let hash = self.hasher.hash(password.expose()).await?;
        let (phone, email) = match &target {
            ContactTarget::Phone(p) => (Some(p.as_str().to_owned()), None),
            ContactTarget::Email(e) => (None, Some(e.as_str().to_owned())),
        };
        self.repo
            .register_tenant(
                NewRegistration { tenant_name, name, username: target.as_str().to_owned(), phone, email, password_hash: hash, at: now },
                Effects::audited(
                    AuditRecord::system(now, "tenant.register", "tenant", None).from_client(client.ip.clone(), client.request_id.clone()),
                ),
            )
            .await
    }

    /// Sets a new password with a reset code and ends every session of the user.
    pub async fn reset_password(&self, target: &str, code: &str, new_password: &str, client: &ClientInfo) -> Result<()> {
        let now = self.clock.now();
        let target = ContactTarget::parse("target", target)?;
        let password = Password::parse("new_password", new_password)?;
        if !self.check_code(&target, CodePurpose::ResetPassword, code, now).await? {
            return Err(Error::Unauthenticated("the code is wrong or expired".into()));
        }
        let Some(creds) = self.repo.find_credentials(target.as_str()).await? else {
            return Err(Error::Unauthenticated("the code is wrong or expired".into()));
        };
        let hash = self.hasher.hash(password.expose()).await?;
        let audit = audit(now, client, "user.password_reset", &creds.user, None);
        self.repo.reset_password(creds.user.id, &hash, now, audit).await?;
        self.cache.clear();
        Ok(())
    }

    // ----- QR login -----------------------------------------------------------------------

    fn chat(&self) -> Result<&Arc<dyn ChatLoginProvider>> {
        self.chat.as_ref().ok_or_else(|| Error::Upstream("messaging-platform login is not configured".into()))
    }

    /// A new ticket and the URL of the platform page that shows its QR code.
    pub async fn chat_qr(&self) -> Result<ChatQr> {
        let chat = self.chat()?;
        let now = self.clock.now();
        let ticket = random_token(24);
        let expires_at = now + self.config.qr_ticket_ttl;
        self.repo
            .create_chat_ticket(ChatTicket {
                ticket: ticket.clone(),
                status: TicketStatus::Pending,
                chat_identity: None,
                user_id: None,
                created_at: now,
                expires_at,
                consumed_at: None,
            })
            .await?;
        let qr_url = chat.authorize_url(&ticket, &self.config.qr_callback_url);
        Ok(ChatQr { ticket, qr_url, expires_in: self.config.qr_ticket_ttl.num_seconds() })
    }

    /// The platform's redirect after a scan: resolve the scanner and settle the ticket.
    pub async fn chat_qr_callback(&self, code: &str, state: &str) -> Result<TicketStatus> {
        let now = self.clock.now();
        let t = self.repo.get_chat_ticket(state).await?.ok_or(Error::NotFound("QR ticket"))?;
        if t.status != TicketStatus::Pending || t.expires_at <= now {
            return Err(Error::conflict(Reason::State, "this QR ticket was already scanned or has expired"));
        }
        let identity = self.chat()?.exchange_code(code).await?;
        let key = identity.binding_key();
        let user = self.repo.find_user_by_chat_identity(&key).await?;
        let status = if user.is_some() { TicketStatus::Confirmed } else { TicketStatus::Unbound };
        if !self.repo.scan_chat_ticket(state, status, &key, user.map(|c| c.user.id)).await? {
            return Err(Error::conflict(Reason::State, "this QR ticket was already scanned or has expired"));
        }
        Ok(status)
    }

    /// Where a ticket stands, for the page polling it.
    pub async fn chat_qr_status(&self, ticket: &str) -> Result<TicketStatus> {
        let now = self.clock.now();
        let t = self.repo.get_chat_ticket(ticket).await?.ok_or(Error::NotFound("QR ticket"))?;
        Ok(if t.consumed_at.is_some() || t.expires_at <= now { TicketStatus::Expired } else { t.status })
    }

    /// Binds the platform account that scanned `ticket` (left `unbound`) to the caller.
    pub async fn chat_bind(&self, user: &User, ticket: &str, client: &ClientInfo) -> Result<()> {
        let now = self.clock.now();
        let t = self.repo.get_chat_ticket(ticket).await?.ok_or(Error::NotFound("QR ticket"))?;
        if t.status != TicketStatus::Unbound || t.consumed_at.is_some() || t.expires_at <= now {
            return Err(Error::conflict(Reason::State, "this QR ticket was not scanned by an unbound account, or has expired"));
        }
        let key = t.chat_identity.ok_or_else(|| Error::conflict(Reason::State, "this QR ticket has not been scanned"))?;
        if !self.repo.consume_chat_ticket(ticket, TicketStatus::Unbound, now).await? {
            return Err(Error::conflict(Reason::State, "this QR ticket was already used"));
        }
        let audit = audit(now, client, "user.chat_bind", user, None);
        self.repo.bind_chat_identity(user.id, &key, now, audit).await?;
        self.cache.clear();
        Ok(())
    }

    // ----- bootstrap ----------------------------------------------------------------------

    /// Creates a platform administrator (CLI `admin create`).
    pub async fn create_platform_admin(&self, username: &str, password: &str) -> Result<User> {
        let username = text::<64>("username", username)?;
        let password = Password::parse("password", password)?;
        let hash = self.hasher.hash(password.expose()).await?;
        let now = self.clock.now();
        self.repo
            .create_platform_admin(&username, "Platform administrator", &hash, now, AuditRecord::system(now, "user.create", "user", None))
            .await
    }

    /// On an empty database, creates `admin` with a random password and returns it, once.
    pub async fn bootstrap_admin(&self) -> Result<Option<String>> {
        if self.repo.platform_admin_exists().await? {
            return Ok(None);
        }
        let password = random_token(15);
        let hash = self.hasher.hash(&password).await?;
        let now = self.clock.now();
        let audit =
            AuditRecord::system(now, "user.create", "user", None).with_after(serde_json::json!({"username": "admin", "bootstrap": true}));
        match self.repo.create_platform_admin("admin", "Platform administrator", &hash, now, audit).await {
            Ok(_) => Ok(Some(password)),
            // Another instance won the race, or an `admin` user exists without the role.
            Err(Error::Conflict(..)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    // ----- rate limits --------------------------------------------------------------------

    async fn refuse_blocked_ip(&self, client: &ClientInfo, now: Timestamp) -> Result<()> {
        let Some(ip) = &client.ip else { return Ok(()) };
        let (failures, oldest) = self.repo.rate_bucket(&format!("login-fail:ip:{ip}"), now - Duration::hours(1)).await?;
        if failures >= self.config.failed_logins_per_ip_per_hour {
            return Err(hourly_limit("too many failed logins from this address; try again later", oldest, now));
        }
        Ok(())
    }

    async fn count_ip_failure(&self, client: &ClientInfo, now: Timestamp) -> Result<()> {
        if let Some(ip) = &client.ip {
            self.repo.hit_rate_bucket(&format!("login-fail:ip:{ip}"), now, now - Duration::hours(1)).await?;
        }
        Ok(())
    }
}

/// An identity event of `user`, acted by the user, from the client's address.
fn audit(now: Timestamp, client: &ClientInfo, action: &str, user: &User, after: Option<serde_json::Value>) -> AuditRecord {
    let record = AuditRecord::system(now, action, "user", Some(user.id))
        .acted_by(Some(user.id))
        .from_client(client.ip.clone(), client.request_id.clone())
        .owned_by_party(user.party);
    match after {
        Some(a) => record.with_after(a),
        None => record,
    }
}

fn locked(until: Timestamp, now: Timestamp) -> Error {
    Error::RateLimited {
        message: "too many failed logins; the account is locked for a while".into(),
        retry_after_secs: secs_until(until, now),
    }
}

fn hourly_limit(message: &str, oldest: Option<Timestamp>, now: Timestamp) -> Error {
    let reopen = oldest.map(|o| o + Duration::hours(1)).unwrap_or(now + Duration::hours(1));
    Error::RateLimited { message: message.into(), retry_after_secs: secs_until(reopen, now) }
}

fn secs_until(t: Timestamp, now: Timestamp) -> u64 {
    let ms = (t - now).num_milliseconds().max(0) as u64;
    ms.div_ceil(1000).max(1)
}

/// Usernames match case-insensitively; phones and e-mails in their normal form.
pub(super) fn normalise_login(login: &str) -> String {
    let trimmed = login.trim();
    if let Ok(t) = ContactTarget::parse("login", trimmed) {
        return t.as_str().to_owned();
    }
    trimmed.to_lowercase()
}

/// Trimmed, non-empty text of at most `MAX` characters (the kernel's `Text`), or a 400 on `field`.
fn text<const MAX: usize>(field: &str, raw: &str) -> Result<String> {
    Text::<MAX>::parse(raw).map(Text::into_string).map_err(|m| Error::invalid(field, m))
}

fn short(id: &str) -> &str {
    id.get(..6).unwrap_or(id)
}
