pub use atrium_kernel::UserStatus;
use atrium_kernel::{Id, ListQuery, Party, PartyStanding, PartyType, PermissionSet, Timestamp};
use serde::{Deserialize, Serialize};

/// A user: someone who logs in, belonging to one party. The one user record of the
/// workspace; password hashes stay in storage ([`UserCredentials`] carries one to a login).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct User {
    pub id: Id,
    pub username: String,
    pub name: String,
    pub phone: Option<String>,
    pub email: Option<String>,
    pub party: Party,
    pub status: UserStatus,
    pub chat_bound: bool,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A user with the roles it holds and the union of their permissions: what the user
/// administration reads and writes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UserWithRoles {
    #[serde(flatten)]
    pub user: User,
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
    pub user: User,
    pub password_hash: Option<String>,
    /// Whether the party lets the user in (a disabled tenant or partner shuts its users out).
    pub standing: PartyStanding,
}

/// What a password login needs to decide: the failures counted against the presented login
/// identifier — whether or not any account has it, so a lockout tells nothing about which
/// accounts exist — and the account it names, if any.
#[derive(Debug, Clone, Default)]
pub struct LoginLookup {
    pub credentials: Option<UserCredentials>,
    /// Consecutive failures since the last success or lock.
    pub failures: i32,
    pub locked_until: Option<Timestamp>,
}

/// A role held by a user, as listed on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RoleRef {
    pub id: Id,
    pub code: String,
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
    pub id: Id,
    pub code: String,
    pub name: String,
    /// The kind of user that can hold it.
    pub party_type: PartyType,
    /// The party that owns a custom role (none for built-in and platform roles).
    pub owner_partner_id: Option<Id>,
    pub owner_tenant_id: Option<Id>,
    pub builtin: bool,
    pub permissions: Vec<String>,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub created_at: Timestamp,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub updated_at: Timestamp,
}

impl Role {
    /// Whether a user of `party` may hold this role.
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
    pub list: ListQuery<UserSort>,
    pub status: Option<UserStatus>,
    pub party_type: Option<PartyType>,
    pub partner_id: Option<Id>,
    pub tenant_id: Option<Id>,
}

/// What a list of users may be sorted by (`sort=name`, `sort=-created_at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::EnumString, strum::IntoStaticStr, strum::VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum UserSort {
    Id,
    CreatedAt,
    Username,
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
    pub id: String,
    pub user_id: Id,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
    pub revoked_at: Option<Timestamp>,
}

/// What a new session row holds.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSession {
    pub id: String,
    pub user_id: Id,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
    pub ip: Option<String>,
    pub user_agent: Option<String>,
}

/// A refresh token as stored: only its hash.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRefreshToken {
    pub token_hash: String,
    pub session_id: String,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
}

/// What presenting a refresh token did.
#[derive(Debug, Clone, PartialEq)]
pub enum RefreshOutcome {
    /// The token was current: it is now used, and the new one is stored.
    Rotated { session: SessionRecord },
    /// The token had been used before: the session is now revoked.
    Replayed { session_id: String },
    /// Unknown, expired, or its session is over.
    Rejected,
}

/// The authenticated subject behind an access token, as served from the cache.
#[derive(Debug, Clone)]
pub struct Principal {
    pub session: SessionRecord,
    pub user: User,
    /// Whether the user's party lets it in.
    pub standing: PartyStanding,
    pub roles: Vec<RoleRef>,
    pub permissions: PermissionSet,
}

/// Who is asking, for rate limits and the session record.
#[derive(Debug, Clone, Default)]
pub struct ClientInfo {
    pub ip: Option<String>,
    pub user_agent: Option<String>,
    pub request_id: Option<String>,
}

/// A successful login or refresh.
#[derive(Debug, Clone)]
pub struct TokenGrant {
    pub access_token: String,
    pub expires_in: i64,
    pub refresh_token: String,
    pub refresh_expires_in: i64,
    pub user: User,
}

/// Why a verification code is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum CodePurpose {
    Login,
    Register,
    ResetPassword,
}

/// A stored verification code (hashed).
#[derive(Debug, Clone, PartialEq)]
pub struct CodeRecord {
    pub id: Id,
    pub target: String,
    pub purpose: CodePurpose,
    pub code_hash: String,
    pub attempts: i32,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
    pub consumed_at: Option<Timestamp>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NewCode {
    pub target: String,
    pub purpose: CodePurpose,
    pub code_hash: String,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
    pub ip: Option<String>,
}

/// What `send-code` answers.
#[derive(Debug, Clone, PartialEq)]
pub struct CodeSent {
    pub expires_in: i64,
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
    pub ticket: String,
    pub status: TicketStatus,
    /// The platform account that scanned it (unionid, else openid).
    pub chat_identity: Option<String>,
    pub user_id: Option<Id>,
    pub created_at: Timestamp,
    pub expires_at: Timestamp,
    pub consumed_at: Option<Timestamp>,
}

/// A freshly issued QR ticket.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatQr {
    pub ticket: String,
    pub qr_url: String,
    pub expires_in: i64,
}

/// The platform account behind a scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatIdentity {
    pub openid: String,
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
    pub tenant_name: String,
    pub name: String,
    pub username: String,
    pub phone: Option<String>,
    pub email: Option<String>,
    pub password_hash: String,
    pub at: Timestamp,
}

/// What registration created.
#[derive(Debug, Clone, PartialEq)]
pub struct Registered {
    pub user: User,
    pub tenant_id: Id,
    pub tenant_name: String,
}
