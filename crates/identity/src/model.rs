pub use atrium_kernel::UserStatus;
use atrium_kernel::{Id, ListQuery, Party, PartyStanding, PartyType, PermissionSet, Timestamp};
use serde::{Deserialize, Serialize};

/// A user: someone who logs in, belonging to one party. The one user record of the
/// workspace; password hashes stay in storage ([`UserCredentials`] carries one to a login).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct User {
    /// The user's id.
    pub id: Id,
    /// The login name, unique across the workspace.
    pub username: String,
    /// The user's display name.
    pub name: String,
    /// A phone number (E.164) the user may log in with by code; unique.
    pub phone: Option<String>,
    /// An e-mail address the user may log in with by code; unique.
    pub email: Option<String>,
    /// The platform, partner or tenant the user belongs to.
    pub party: Party,
    /// Whether the user may log in.
    pub status: UserStatus,
    /// Whether a messaging-platform account is bound to the user for QR login.
    pub chat_bound: bool,
    /// When the user was created.
    pub created_at: Timestamp,
    /// When the user last changed.
    pub updated_at: Timestamp,
}

/// A user with the roles it holds and the union of their permissions: what the user
/// administration reads and writes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UserWithRoles {
    /// The user.
    #[serde(flatten)]
    pub user: User,
    /// The roles it holds.
    pub roles: Vec<RoleRef>,
    /// Union of the roles' permission strings.
    pub permissions: Vec<String>,
}

impl UserWithRoles {
    /// The user holding `roles`, with their permissions' union.
    pub fn new(user: User, roles: &[Role]) -> Self {
        let permissions = PermissionSet::new(roles.iter().flat_map(|r| r.permissions.iter().cloned())).to_vec();
        UserWithRoles { user, roles: roles.iter().map(RoleRef::from).collect(), permissions }
    }
}

/// A user as a login sees it: with its password hash and its party's standing.
#[derive(Debug, Clone)]
pub struct UserCredentials {
    /// The user.
    pub user: User,
    /// The stored password hash; `None` for a user without a password (code or QR login only).
    pub password_hash: Option<String>,
    /// Whether the party lets the user in (a disabled tenant or partner shuts its users out).
    pub standing: PartyStanding,
}

/// What a password login needs to decide: the failures counted against the presented login
/// identifier — whether or not any account has it, so a lockout tells nothing about which
/// accounts exist — and the account it names, if any.
#[derive(Debug, Clone, Default)]
pub struct LoginLookup {
    /// The account the identifier names, if any.
    pub credentials: Option<UserCredentials>,
    /// Consecutive failures since the last success or lock.
    pub failures: i32,
    /// Logins with the identifier are refused until this time.
    pub locked_until: Option<Timestamp>,
}

/// A role held by a user, as listed on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RoleRef {
    /// The role's id.
    pub id: Id,
    /// The role's code, e.g. `payroll_clerk`.
    pub code: String,
    /// The role's display name.
    pub name: String,
}

impl From<&Role> for RoleRef {
    fn from(r: &Role) -> Self {
        RoleRef { id: r.id, code: r.code.clone(), name: r.name.clone() }
    }
}

/// A role: a named set of permission strings. Built-in roles come with the schema; parties
/// add custom roles within their scope, never granting more than the creator holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Role {
    /// The role's id.
    pub id: Id,
    /// A stable code, unique within its owner (e.g. `payroll_clerk`).
    pub code: String,
    /// A display name.
    pub name: String,
    /// The kind of user that can hold it.
    pub party_type: PartyType,
    /// The party that owns a custom role (none for built-in and platform roles).
    pub owner_partner_id: Option<Id>,
    /// The tenant that owns a custom tenant role.
    pub owner_tenant_id: Option<Id>,
    /// Whether it is a built-in role, which cannot be changed or deleted.
    pub builtin: bool,
    /// The permission strings it grants (`resource:action`, `resource:*` or `*`).
    pub permissions: Vec<String>,
    /// When it was created.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub created_at: Timestamp,
    /// When it last changed.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub updated_at: Timestamp,
}

impl Role {
    /// Whether a user of `party` may hold this role.
    ///
    /// ```
    /// use atrium_identity::Role;
    /// use atrium_kernel::{Party, PartyType};
    ///
    /// let now = chrono::Utc::now();
    /// // A custom role of tenant 7.
    /// let role = Role {
    ///     id: 12,
    ///     code: "payroll_viewer".into(),
    ///     name: "Payroll viewer".into(),
    ///     party_type: PartyType::Tenant,
    ///     owner_partner_id: None,
    ///     owner_tenant_id: Some(7),
    ///     builtin: false,
    ///     permissions: vec!["payroll:read".into()],
    ///     created_at: now,
    ///     updated_at: now,
    /// };
    /// assert!(role.usable_by(Party::Tenant { tenant_id: 7, partner_id: None }));
    /// assert!(!role.usable_by(Party::Tenant { tenant_id: 8, partner_id: None }), "another tenant's");
    /// assert!(!role.usable_by(Party::Partner { partner_id: 3 }), "a tenant role");
    /// ```
    pub fn usable_by(&self, party: Party) -> bool {
        if party.party_type() != self.party_type {
            return false;
        }
        match (self.owner_partner_id, self.owner_tenant_id, party) {
            (None, None, _) => true,
            (_, Some(t), Party::Tenant { tenant_id, .. }) => t == tenant_id,
            (Some(p), None, Party::Partner { partner_id }) => p == partner_id,
            (Some(p), None, Party::Tenant { partner_id, .. }) => partner_id == Some(p),
            _ => false,
        }
    }
}

/// Codes of the built-in roles; no custom role may take one.
pub const BUILTIN_ROLE_CODES: &[&str] =
    &["platform_admin", "partner_admin", "tenant_admin", "payroll_clerk", "payroll_approver", "finance", "viewer"];

/// Filters of a user list.
#[derive(Debug, Clone, Default)]
pub struct UserQuery {
    /// Paging, sort and keyword (username, name, phone or e-mail).
    pub list: ListQuery<UserSort>,
    /// Only users in this status.
    pub status: Option<UserStatus>,
    /// Only users of this kind of party.
    pub party_type: Option<PartyType>,
    /// Only users of this partner and of its tenants.
    pub partner_id: Option<Id>,
    /// Only users of this tenant.
    pub tenant_id: Option<Id>,
}

/// What a list of users may be sorted by (`sort=name`, `sort=-created_at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::EnumString, strum::IntoStaticStr, strum::VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum UserSort {
    /// By id, which is creation order (the default, newest first).
    Id,
    /// By creation time.
    CreatedAt,
    /// By login name.
    Username,
    /// By display name.
    Name,
}

/// What a write of a user changes besides its row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UserWrite {
    /// Replace the user's roles with these.
    pub role_ids: Option<Vec<Id>>,
    /// Store this new password hash.
    pub password_hash: Option<String>,
    /// End every session of the user.
    pub revoke_sessions: bool,
}

/// A session row: one login, refreshed many times, ended by logout, replay or expiry.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRecord {
    /// The session's id, random; access tokens carry it.
    pub id: String,
    /// The user logged in.
    pub user_id: Id,
    /// When the login happened.
    pub created_at: Timestamp,
    /// When the session ends at the latest, however often it is refreshed.
    pub expires_at: Timestamp,
    /// When it was ended (logout, replay, a password change); `None` while it lives.
    pub revoked_at: Option<Timestamp>,
}

/// What a new session row holds.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSession {
    /// The session's id, random.
    pub id: String,
    /// The user logging in.
    pub user_id: Id,
    /// When the login happens.
    pub created_at: Timestamp,
    /// When the session ends at the latest.
    pub expires_at: Timestamp,
    /// The client's address.
    pub ip: Option<String>,
    /// The client's `User-Agent`.
    pub user_agent: Option<String>,
}

/// A refresh token as stored: only its hash.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRefreshToken {
    /// SHA-256 of the token's value ([`hash_secret`](crate::hash_secret)).
    pub token_hash: String,
    /// The session it refreshes.
    pub session_id: String,
    /// When it was issued.
    pub created_at: Timestamp,
    /// After this it is rejected.
    pub expires_at: Timestamp,
}

/// What presenting a refresh token did.
#[derive(Debug, Clone, PartialEq)]
pub enum RefreshOutcome {
    /// The token was current: it is now used, and the new one is stored.
    Rotated {
        /// The session, still alive.
        session: SessionRecord,
    },
    /// The token had been used before: the session is now revoked.
    Replayed {
        /// The session revoked.
        session_id: String,
    },
    /// Unknown, expired, or its session is over.
    Rejected,
}

/// The authenticated subject behind an access token, as served from the cache.
#[derive(Debug, Clone)]
pub struct Principal {
    /// The session the access token belongs to.
    pub session: SessionRecord,
    /// The user.
    pub user: User,
    /// Whether the user's party lets it in.
    pub standing: PartyStanding,
    /// The roles the user holds.
    pub roles: Vec<RoleRef>,
    /// The union of the roles' permissions.
    pub permissions: PermissionSet,
}

/// Who is asking, for rate limits and the session record.
#[derive(Debug, Clone, Default)]
pub struct ClientInfo {
    /// The client's address.
    pub ip: Option<String>,
    /// The client's `User-Agent`.
    pub user_agent: Option<String>,
    /// The request's id, for the audit trail.
    pub request_id: Option<String>,
}

/// A successful login or refresh.
#[derive(Debug, Clone)]
pub struct TokenGrant {
    /// A short-lived JWT, sent as `Authorization: Bearer …`.
    pub access_token: String,
    /// Seconds until the access token expires.
    pub expires_in: i64,
    /// A single-use token that gets the next grant; a replay ends the session.
    pub refresh_token: String,
    /// Seconds until the refresh token expires.
    pub refresh_expires_in: i64,
    /// The user logged in.
    pub user: User,
}

/// Why a verification code is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum CodePurpose {
    /// Logging in with a code instead of a password.
    Login,
    /// Registering a new tenant and its first user.
    Register,
    /// Resetting a forgotten password.
    ResetPassword,
}

/// A stored verification code (hashed).
#[derive(Debug, Clone, PartialEq)]
pub struct CodeRecord {
    /// The code's id.
    pub id: Id,
    /// The phone number or e-mail address it was sent to.
    pub target: String,
    /// What it may be used for.
    pub purpose: CodePurpose,
    /// The code's hash; the code itself is never stored.
    pub code_hash: String,
    /// Wrong guesses so far; too many burn the code.
    pub attempts: i32,
    /// When it was sent.
    pub created_at: Timestamp,
    /// After this it is refused.
    pub expires_at: Timestamp,
    /// When it was used; a code works once.
    pub consumed_at: Option<Timestamp>,
}

/// A verification code to store (hashed).
#[derive(Debug, Clone, PartialEq)]
pub struct NewCode {
    /// The phone number or e-mail address it goes to.
    pub target: String,
    /// What it may be used for.
    pub purpose: CodePurpose,
    /// The code's hash.
    pub code_hash: String,
    /// When it is sent.
    pub created_at: Timestamp,
    /// After this it is refused.
    pub expires_at: Timestamp,
    /// The requesting client's address, for rate limits.
    pub ip: Option<String>,
}

/// What `send-code` answers.
#[derive(Debug, Clone, PartialEq)]
pub struct CodeSent {
    /// Seconds until the code expires.
    pub expires_in: i64,
    /// Seconds before another code may be sent to the same target.
    pub resend_after: i64,
    /// Only in the `dev` profile.
    pub debug_code: Option<String>,
}

/// Progress of a QR login ticket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "snake_case")]
pub enum TicketStatus {
    /// Waiting for a scan.
    Pending,
    /// Scanned by an account bound to a user; `login` with method `qr` may use it once.
    Confirmed,
    /// Scanned by an account bound to nobody; `chat-bind` may use it.
    Unbound,
    /// Timed out or already used.
    Expired,
}

/// A QR login ticket as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatTicket {
    /// The ticket's value, random; the QR code carries it.
    pub ticket: String,
    /// Where the QR login stands.
    pub status: TicketStatus,
    /// The platform account that scanned it (unionid, else openid).
    pub chat_identity: Option<String>,
    /// The user the scanning account is bound to, once confirmed.
    pub user_id: Option<Id>,
    /// When the QR code was issued.
    pub created_at: Timestamp,
    /// After this the ticket is expired.
    pub expires_at: Timestamp,
    /// When a login (or `chat-bind`) used it; a ticket works once.
    pub consumed_at: Option<Timestamp>,
}

/// A freshly issued QR ticket.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatQr {
    /// The ticket to poll with.
    pub ticket: String,
    /// What the QR code shows: the platform's page for the ticket.
    pub qr_url: String,
    /// Seconds until the ticket expires.
    pub expires_in: i64,
}

/// The platform account behind a scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatIdentity {
    /// The account's openid in our platform application.
    pub openid: String,
    /// The account's unionid across the platform's applications, when the platform gives one.
    pub unionid: Option<String>,
}

impl ChatIdentity {
    /// The key users are bound by: the unionid where present, else the openid.
    pub fn binding_key(&self) -> String {
        match &self.unionid {
            Some(u) if !u.is_empty() => format!("unionid:{u}"),
            _ => format!("openid:{}", self.openid),
        }
    }
}

/// What registration needs to create.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRegistration {
    /// The new tenant's name.
    pub tenant_name: String,
    /// The first user's display name.
    pub name: String,
    /// The first user's login name.
    pub username: String,
    /// The first user's phone (the verified code's target, if a phone).
    pub phone: Option<String>,
    /// The first user's e-mail address (the verified code's target, if an e-mail).
    pub email: Option<String>,
    /// The first user's password hash.
    pub password_hash: String,
    /// When the registration happens.
    pub at: Timestamp,
}

/// What registration created.
#[derive(Debug, Clone, PartialEq)]
pub struct Registered {
    /// The first user, a tenant admin of the pending tenant.
    pub user: User,
    /// The new tenant's id.
    pub tenant_id: Id,
    /// The new tenant's name.
    pub tenant_name: String,
}
