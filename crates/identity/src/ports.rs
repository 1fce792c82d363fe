use crate::model::*;
use async_trait::async_trait;
use atrium_kernel::{AuditRecord, ContactTarget, Effects, Id, Page, PageRequest, Party, Result, Timestamp};

/// Storage of every piece of identity state: the umbrella [`IdentityService`](crate::IdentityService)
/// holds, made of one port per concern — [`LoginRepo`] (accounts by login identifier and their
/// lockout), [`RateBucketRepo`] (sliding-window counters), [`SessionRepo`] (sessions and
/// refresh tokens), [`CodeRepo`] (verification codes), [`AccountRepo`] (self-registration,
/// password reset, the first platform administrator) and [`ChatTicketRepo`] (QR login tickets
/// and bound messaging-platform identities). Every type implementing all of them is one.
///
/// Implementations must make each method atomic; several server instances may call them
/// concurrently against one database.
pub trait IdentityRepo: LoginRepo + RateBucketRepo + SessionRepo + CodeRepo + AccountRepo + ChatTicketRepo {}

impl<T> IdentityRepo for T where T: LoginRepo + RateBucketRepo + SessionRepo + CodeRepo + AccountRepo + ChatTicketRepo {}

/// Accounts by login identifier, and the failure counts and locks of those identifiers
/// (kept for any identifier tried, whether or not an account has it). Each method is atomic.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait LoginRepo: Send + Sync + 'static {
    /// The user whose username, phone or e-mail equals `login` (exact, already normalised).
    async fn find_credentials(&self, login: &str) -> Result<Option<UserCredentials>>;

    /// The failure count and lock of the login identifier `login` (exact, already
    /// normalised), whether or not an account has it, with that account if one does.
    async fn find_login(&self, login: &str) -> Result<LoginLookup>;

    /// Adds one consecutive failure at `at` to the identifier `login` (any identifier,
    /// existing account or not); when the count reaches `threshold` the identifier is locked until
    /// `lock_until`, the count starts again and `lock_audit` (if any) is stored. Returns the
    /// lock end if it was set. Atomic: concurrent failures are all counted.
    async fn record_login_failure(
        &self,
        login: &str,
        at: Timestamp,
        threshold: i32,
        lock_until: Timestamp,
        lock_audit: Option<AuditRecord>,
    ) -> Result<Option<Timestamp>>;

    /// Clears the failure count of the identifier `login` after a successful login.
    async fn clear_login_failures(&self, login: &str) -> Result<()>;
}

/// Named sliding-window event counters (failed logins per IP, codes sent per target and per
/// IP), shared by every instance on one database. Each method is atomic.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait RateBucketRepo: Send + Sync + 'static {
    /// Records one event in `bucket` at `at`, and returns how many events the bucket holds
    /// since `since` (the new one included). Old events may be pruned.
    async fn hit_rate_bucket(&self, bucket: &str, at: Timestamp, since: Timestamp) -> Result<i64>;

    /// How many events `bucket` holds since `since`, and the oldest of them.
    async fn rate_bucket(&self, bucket: &str, since: Timestamp) -> Result<(i64, Option<Timestamp>)>;
}

/// Sessions and their rotating refresh tokens. Each method is atomic; a write stores its
/// audit record in the same transaction.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait SessionRepo: Send + Sync + 'static {
    /// Creates a session together with its first refresh token, and stores `audit`.
    async fn create_session(&self, session: NewSession, refresh: NewRefreshToken, audit: AuditRecord) -> Result<()>;

    /// Presents a refresh token by its hash. If it is current and its session live (not
    /// revoked, not past `expires_at` at `now`), marks it used and stores `next` for the
    /// same session (`next.session_id` is ignored) → `Rotated`. If it was used before,
    /// MUST revoke its session and store `replay_audit` (completed with the session's user
    /// as target) → `Replayed`. Anything else → `Rejected`. Atomic: of two concurrent
    /// presentations of one token, at most one rotates.
    async fn rotate_refresh_token(
        &self,
        presented_hash: &str,
        next: NewRefreshToken,
        now: Timestamp,
        replay_audit: AuditRecord,
    ) -> Result<RefreshOutcome>;

    /// Marks a session revoked (idempotent) and stores `audit`.
    async fn revoke_session(&self, session_id: &str, reason: &str, at: Timestamp, audit: AuditRecord) -> Result<()>;

    /// The session with its user, roles and permissions; `None` if no such session.
    async fn load_principal(&self, session_id: &str) -> Result<Option<Principal>>;
}

/// One-time verification codes sent by SMS or e-mail, stored as hashes. Each method is
/// atomic, so a code works once and its wrong tries all count, even under races.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait CodeRepo: Send + Sync + 'static {
    /// Stores a new verification code.
    async fn insert_code(&self, code: NewCode) -> Result<()>;

    /// The newest code for `target` and `purpose`, used or not.
    async fn latest_code(&self, target: &str, purpose: CodePurpose) -> Result<Option<CodeRecord>>;

    /// Counts a wrong try; when `attempts` reaches `max_attempts` the code is burnt (consumed).
    async fn record_code_attempt(&self, code_id: Id, max_attempts: i32, at: Timestamp) -> Result<()>;

    /// Marks the code used; `false` if it already was (so a code works once, even under races).
    async fn consume_code(&self, code_id: Id, at: Timestamp) -> Result<bool>;
}

/// Accounts identity itself creates or changes: self-registration of a tenant, password
/// reset, and the bootstrap of the first platform administrator. Each write is one
/// transaction together with its audit record.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait AccountRepo: Send + Sync + 'static {
    /// Creates a pending tenant and its tenant-admin user in one transaction.
    /// MUST return `Conflict` if the username, phone or e-mail is taken.
    /// Stores `audit` completed with the new user (actor and target) and tenant.
    async fn register_tenant(&self, registration: NewRegistration, effects: Effects) -> Result<Registered>;

    /// Sets a new password hash, clears the lockout of the user's username, phone and e-mail,
    /// and revokes every session of the user.
    async fn reset_password(&self, user_id: Id, password_hash: &str, at: Timestamp, audit: AuditRecord) -> Result<()>;

    /// Whether any active platform administrator exists.
    async fn platform_admin_exists(&self) -> Result<bool>;

    /// Creates a platform user holding the `platform_admin` role.
    /// MUST return `Conflict` if the username is taken. Stores `audit` with the new user as target.
    async fn create_platform_admin(
        &self,
        username: &str,
        name: &str,
        password_hash: &str,
        at: Timestamp,
        audit: AuditRecord,
    ) -> Result<User>;
}

/// The messaging platform's QR login: short-lived tickets a browser polls while the user
/// scans, and the platform identities bound to users. Each method is atomic, so a ticket is
/// scanned once and used once, even under races.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait ChatTicketRepo: Send + Sync + 'static {
    /// Stores a new `pending` ticket.
    async fn create_chat_ticket(&self, ticket: ChatTicket) -> Result<()>;

    /// The ticket, whatever its status.
    async fn get_chat_ticket(&self, ticket: &str) -> Result<Option<ChatTicket>>;

    /// Records a scan on a `pending` ticket: status, the platform identity and the bound user.
    /// Returns `false` if the ticket was not pending any more.
    async fn scan_chat_ticket(&self, ticket: &str, status: TicketStatus, chat_identity: &str, user_id: Option<Id>) -> Result<bool>;

    /// Uses a ticket once: sets `consumed_at` if it is in `status` and unused; `false` otherwise.
    async fn consume_chat_ticket(&self, ticket: &str, status: TicketStatus, at: Timestamp) -> Result<bool>;

    /// The user bound to a platform identity (see [`ChatIdentity::binding_key`]).
    async fn find_user_by_chat_identity(&self, key: &str) -> Result<Option<UserCredentials>>;

    /// Binds a platform identity to a user. MUST return `Conflict` if another user has it.
    async fn bind_chat_identity(&self, user_id: Id, key: &str, at: Timestamp, audit: AuditRecord) -> Result<()>;
}

/// Storage of users for their administration. Reads are filtered by `scope`; out-of-scope
/// rows are absent.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait UserRepo: Send + Sync + 'static {
    /// One page of the users in `scope` that match `query`, with their roles.
    async fn list_users(&self, scope: Party, query: UserQuery) -> Result<Page<UserWithRoles>>;
    /// The user with its roles, if it exists and is in `scope`.
    async fn get_user(&self, scope: Party, id: Id) -> Result<Option<UserWithRoles>>;
    /// The roles with these ids that a caller of `scope` can see (missing ids are left out).
    async fn roles_by_ids(&self, scope: Party, ids: Vec<Id>) -> Result<Vec<Role>>;
    /// The partner of a tenant in `scope`; `NotFound` if the tenant is not in scope.
    async fn tenant_partner(&self, scope: Party, tenant_id: Id) -> Result<Option<Id>>;
    /// Whether a partner with this id exists.
    async fn partner_exists(&self, id: Id) -> Result<bool>;
    /// MUST return `Conflict` for a taken username, phone or e-mail.
    async fn insert_user(&self, user: UserWithRoles, password_hash: String, effects: Effects) -> Result<UserWithRoles>;
    /// Saves every field of `user`, what `write` asks besides (roles, password, sessions) and
    /// `audit` atomically. MUST return `Conflict` for a taken phone or e-mail.
    async fn update_user(&self, user: UserWithRoles, write: UserWrite, effects: Effects) -> Result<UserWithRoles>;
    /// Deletes the user and its sessions, and revokes the API tokens it issued.
    async fn delete_user(&self, id: Id, effects: Effects) -> Result<()>;
    /// Stores the audit record of a refused write (a create that hit a taken value).
    async fn record_refusal(&self, audit: AuditRecord) -> Result<()>;
}

/// Storage of roles. Reads are filtered by `scope`: built-in roles a caller of `scope` can
/// hand out, plus the custom roles it owns or inherits; everything for the platform.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait RoleRepo: Send + Sync + 'static {
    /// One page of the roles a caller of `scope` sees.
    async fn list_roles(&self, scope: Party, page: PageRequest) -> Result<Page<Role>>;
    /// The role, if a caller of `scope` sees it.
    async fn get_role(&self, scope: Party, id: Id) -> Result<Option<Role>>;
    /// MUST return `Conflict` if the code is taken by the same owner.
    async fn insert_role(&self, role: Role, effects: Effects) -> Result<Role>;
    /// Saves every field of `role` and `audit` atomically.
    async fn update_role(&self, role: Role, effects: Effects) -> Result<Role>;
    /// MUST return `Conflict` while users hold the role.
    async fn delete_role(&self, id: Id, effects: Effects) -> Result<()>;
}

#[cfg(any(test, feature = "mock"))]
mockall::mock! {
    /// Every identity storage port in one mock, for tests of [`IdentityService`](crate::IdentityService)
    /// that expect calls across several of them (`MockIdentityRepo::new()`, then `expect_*`).
    pub IdentityRepo {}

    #[async_trait]
    impl LoginRepo for IdentityRepo {
        async fn find_credentials(&self, login: &str) -> Result<Option<UserCredentials>>;
        async fn find_login(&self, login: &str) -> Result<LoginLookup>;
        async fn record_login_failure(
            &self,
            login: &str,
            at: Timestamp,
            threshold: i32,
            lock_until: Timestamp,
            lock_audit: Option<AuditRecord>,
        ) -> Result<Option<Timestamp>>;
        async fn clear_login_failures(&self, login: &str) -> Result<()>;
    }

    #[async_trait]
    impl RateBucketRepo for IdentityRepo {
        async fn hit_rate_bucket(&self, bucket: &str, at: Timestamp, since: Timestamp) -> Result<i64>;
        async fn rate_bucket(&self, bucket: &str, since: Timestamp) -> Result<(i64, Option<Timestamp>)>;
    }

    #[async_trait]
    impl SessionRepo for IdentityRepo {
        async fn create_session(&self, session: NewSession, refresh: NewRefreshToken, audit: AuditRecord) -> Result<()>;
        async fn rotate_refresh_token(
            &self,
            presented_hash: &str,
            next: NewRefreshToken,
            now: Timestamp,
            replay_audit: AuditRecord,
        ) -> Result<RefreshOutcome>;
        async fn revoke_session(&self, session_id: &str, reason: &str, at: Timestamp, audit: AuditRecord) -> Result<()>;
        async fn load_principal(&self, session_id: &str) -> Result<Option<Principal>>;
    }

    #[async_trait]
    impl CodeRepo for IdentityRepo {
        async fn insert_code(&self, code: NewCode) -> Result<()>;
        async fn latest_code(&self, target: &str, purpose: CodePurpose) -> Result<Option<CodeRecord>>;
        async fn record_code_attempt(&self, code_id: Id, max_attempts: i32, at: Timestamp) -> Result<()>;
        async fn consume_code(&self, code_id: Id, at: Timestamp) -> Result<bool>;
    }

    #[async_trait]
    impl AccountRepo for IdentityRepo {
        async fn register_tenant(&self, registration: NewRegistration, effects: Effects) -> Result<Registered>;
        async fn reset_password(&self, user_id: Id, password_hash: &str, at: Timestamp, audit: AuditRecord) -> Result<()>;
        async fn platform_admin_exists(&self) -> Result<bool>;
        async fn create_platform_admin(
            &self,
            username: &str,
            name: &str,
            password_hash: &str,
            at: Timestamp,
            audit: AuditRecord,
        ) -> Result<User>;
    }

    #[async_trait]
    impl ChatTicketRepo for IdentityRepo {
        async fn create_chat_ticket(&self, ticket: ChatTicket) -> Result<()>;
        async fn get_chat_ticket(&self, ticket: &str) -> Result<Option<ChatTicket>>;
        async fn scan_chat_ticket(&self, ticket: &str, status: TicketStatus, chat_identity: &str, user_id: Option<Id>) -> Result<bool>;
        async fn consume_chat_ticket(&self, ticket: &str, status: TicketStatus, at: Timestamp) -> Result<bool>;
        async fn find_user_by_chat_identity(&self, key: &str) -> Result<Option<UserCredentials>>;
        async fn bind_chat_identity(&self, user_id: Id, key: &str, at: Timestamp, audit: AuditRecord) -> Result<()>;
    }
}

/// Slow password hashing. Implementations run the work off the request threads.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait PasswordHasher: Send + Sync + 'static {
    /// A salted hash of `password` to store.
    async fn hash(&self, password: &str) -> Result<String>;
    /// `false` for a wrong password or a malformed hash; never an error for those.
    async fn verify(&self, password: &str, hash: &str) -> Result<bool>;
}

/// Delivers verification codes by SMS or e-mail.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait CodeSender: Send + Sync + 'static {
    /// Sends `code` for `purpose` to `target` by SMS or e-mail.
    async fn send_code(&self, target: &ContactTarget, purpose: CodePurpose, code: &str) -> Result<()>;
}

/// The messaging platform's website QR login.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait ChatLoginProvider: Send + Sync + 'static {
    /// The page a browser opens to show the QR code; the platform later redirects the
    /// scanner to `redirect_uri?code=…&state=<state>`.
    fn authorize_url(&self, state: &str, redirect_uri: &str) -> String;

    /// Exchanges the redirect's `code` for the scanner's identity.
    /// MUST return `Unauthenticated` for an invalid or used code.
    async fn exchange_code(&self, code: &str) -> Result<ChatIdentity>;
}
