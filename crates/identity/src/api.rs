//! What clients send to and receive from identity's routes (`/auth/*`, `/users`, `/roles`):
//! request bodies, list parameters and response views.
use atrium_kernel::{Email, Error, Id, ListQuery, Name, PartyType, PartyView, Phone, Text, Timestamp, patch};
use serde::{Deserialize, Serialize};

use crate::model::{CodePurpose, RoleRef, TicketStatus, TokenGrant, User, UserQuery, UserStatus, UserWithRoles};

/// Schemas of fields whose Rust type says less than the service checks, built from the
/// same constants the checks use.
#[cfg(feature = "openapi")]
pub mod schema {
    use atrium_kernel::schema::{schema_from_json as from_json, string_schema};
    use serde_json::json;
    use utoipa::openapi::RefOr;
    use utoipa::openapi::schema::Schema;

    /// What `UserService::create` accepts as a username (compared lower-case).
    pub fn username() -> RefOr<Schema> {
        string_schema("Login name: 3–64 of letters, digits and `._-@+`, kept lower-case", Some("^[A-Za-z0-9._@+-]{3,64}$"), None, None)
    }

    /// What `validate_password` accepts: 8–128 characters, not one character repeated, not
    /// a common password (compared lower-case; the list is the `not` below).
    pub fn password() -> RefOr<Schema> {
        from_json(json!({
            "type": "string",
            "format": "password",
            "description": "8–128 characters, not one character repeated, not a common password",
            "minLength": 8,
            "maxLength": 128,
            "pattern": "^(?!([\\s\\S])\\1*$)",
            "not": {"enum": crate::password::COMMON_PASSWORDS},
        }))
    }

    /// An update's `password`: as [`password`], or null to leave it as it is.
    pub fn password_patch() -> RefOr<Schema> {
        let RefOr::T(Schema::Object(mut object)) = password() else { return password() };
        object.schema_type =
            utoipa::openapi::schema::SchemaType::from_iter([utoipa::openapi::schema::Type::String, utoipa::openapi::schema::Type::Null]);
        RefOr::T(Schema::Object(object))
    }

    /// What `RoleService::create` accepts as a code: letters, digits and underscores, not a
    /// built-in role's code in any case.
    pub fn role_code() -> RefOr<Schema> {
        let builtins: Vec<String> = crate::model::BUILTIN_ROLE_CODES
            .iter()
            .map(|code| {
                code.chars()
                    .map(|c| {
                        if c.is_ascii_alphabetic() {
                            format!("[{}{}]", c.to_ascii_lowercase(), c.to_ascii_uppercase())
                        } else {
                            c.to_string()
                        }
                    })
                    .collect()
            })
            .collect();
        let pattern = format!("^(?!({})$)[A-Za-z0-9_]{{1,64}}$", builtins.join("|"));
        string_schema("Letters, digits and underscores; not a built-in role's code", Some(&pattern), None, None)
    }

    /// A permission of the catalogue, a `resource:*` wildcard or `*`.
    pub fn permissions() -> RefOr<Schema> {
        from_json(json!({"type": "array", "items": {"type": "string", "enum": atrium_kernel::permission::known_permissions()}}))
    }

    /// An update's `permissions`: as [`permissions`], or null to leave them as they are.
    pub fn permissions_patch() -> RefOr<Schema> {
        from_json(json!({"type": ["array", "null"], "items": {"type": "string", "enum": atrium_kernel::permission::known_permissions()}}))
    }

    /// `POST /auth/login`: which fields come with which `method`.
    pub fn login() -> RefOr<Schema> {
        let text = json!({"type": "string", "minLength": 1});
        let variant = |method: &str, fields: &[(&str, serde_json::Value)]| {
            let mut properties = serde_json::Map::new();
            properties.insert("method".into(), json!({"type": "string", "enum": [method]}));
            for (name, schema) in fields {
                properties.insert((*name).into(), schema.clone());
            }
            let mut required = vec!["method".to_owned()];
            required.extend(fields.iter().map(|(name, _)| (*name).to_owned()));
            json!({"type": "object", "title": method, "required": required, "properties": properties, "additionalProperties": false})
        };
        let target = serde_json::to_value(atrium_kernel::schema::contact_target_schema()).unwrap_or(json!({"type": "string"}));
        from_json(json!({
            "description": "A login: `password` with a username (or the user's phone or e-mail), `code` with a target and the code sent to it, or `qr` with a confirmed ticket",
            "example": {"method": "password", "username": "li.lei", "password": "Spring-Rain-2026"},
            "oneOf": [
                variant("password", &[("username", text.clone()), ("password", text.clone())]),
                variant("code", &[("target", target), ("code", text.clone())]),
                variant("qr", &[("ticket", text)]),
            ],
        }))
    }
}

// ----- users and roles --------------------------------------------------------------------

/// Login names: 3–64 of lower-case letters, digits and `._-@+`.
pub type Username = Text<64>;
/// Passwords are checked against the policy by the service (8–128 characters).
pub type PasswordInput = Text<128>;
/// Role codes: letters, digits and underscores.
pub type RoleCode = Text<64>;

/// `POST /users` body.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"username": "li.lei", "password": "Spring-Rain-2026", "name": "Li Lei", "phone": "+8613800138000", "email": "li.lei@example.com", "role_ids": []})))]
pub struct NewUser {
    /// The login name: 3–64 of lower-case letters, digits and `._-@+`; unique.
    #[cfg_attr(feature = "openapi", schema(schema_with = schema::username))]
    pub username: Username,
    /// The first password: 8–128 characters, not a common one.
    #[cfg_attr(feature = "openapi", schema(schema_with = schema::password))]
    pub password: String,
    /// The display name.
    pub name: Name,
    /// A phone number for code logins; unique.
    pub phone: Option<Phone>,
    /// An e-mail address for code logins; unique.
    pub email: Option<Email>,
    /// A partner user of this partner.
    pub partner_id: Option<Id>,
    /// A tenant user of this tenant. Without either, the user joins the caller's party.
    pub tenant_id: Option<Id>,
    /// Roles to grant; each must fit the user's party and grant nothing the caller lacks.
    #[serde(default)]
    pub role_ids: Vec<Id>,
    /// `active` (the default) or `disabled`.
    pub status: Option<UserStatus>,
}

/// `PUT /users/{id}` body; absent fields stay as they are, `null` clears phone or e-mail.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"name": "Li Lei", "email": null, "status": "active"})))]
pub struct UserPatch {
    /// A new display name.
    pub name: Option<Name>,
    /// A new phone number; `null` clears it.
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Phone>))]
    pub phone: Option<Option<Phone>>,
    /// A new e-mail address; `null` clears it.
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Email>))]
    pub email: Option<Option<Email>>,
    /// `active` or `disabled`; disabling ends the user's sessions.
    pub status: Option<UserStatus>,
    /// Replaces the user's roles.
    pub role_ids: Option<Vec<Id>>,
    /// Sets a new password and ends the user's sessions.
    #[cfg_attr(feature = "openapi", schema(schema_with = schema::password_patch))]
    pub password: Option<String>,
}

/// `GET /users` parameters.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct UserListParams {
    /// 1-based page number; default 1.
    pub page: Option<i64>,
    /// Users per page; default 20, at most 100.
    pub page_size: Option<i64>,
    /// Matches username, name, phone or e-mail.
    pub keyword: Option<String>,
    /// Only users in this status.
    pub status: Option<UserStatus>,
    /// Only users of this kind of party.
    pub party_type: Option<PartyType>,
    /// Only users of this partner and of its tenants.
    pub partner_id: Option<i64>,
    /// Only users of this tenant.
    pub tenant_id: Option<i64>,
    /// `id`, `created_at`, `username` or `name`, `-` for descending; default `-id`.
    #[cfg_attr(feature = "openapi", param(schema_with = atrium_kernel::schema::sort::<crate::model::UserSort>))]
    pub sort: Option<String>,
}

/// Validates the parameters; a 400 naming the offending one otherwise.
impl TryFrom<UserListParams> for UserQuery {
    type Error = Error;
    fn try_from(p: UserListParams) -> Result<Self, Error> {
        Ok(UserQuery {
            list: ListQuery::parse(p.page, p.page_size, p.keyword, p.sort.as_deref())?,
            status: p.status,
            party_type: p.party_type,
            partner_id: p.partner_id,
            tenant_id: p.tenant_id,
        })
    }
}

/// A user as the user administration shows it. Password hashes never leave the server.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ManagedUserView {
    /// The user's id.
    pub id: Id,
    /// The login name.
    pub username: String,
    /// The display name.
    pub name: String,
    /// The phone number.
    pub phone: Option<String>,
    /// The e-mail address.
    pub email: Option<String>,
    /// The party the user belongs to.
    pub party: PartyView,
    /// The user's partner: a partner user's own, a tenant user's tenant's.
    pub partner_id: Option<Id>,
    /// A tenant user's tenant.
    pub tenant_id: Option<Id>,
    /// `active` or `disabled`.
    pub status: UserStatus,
    /// The roles the user holds.
    pub roles: Vec<RoleRef>,
    /// The union of the roles' permissions.
    pub permissions: Vec<String>,
    /// Whether a messaging-platform account is bound for QR login.
    pub chat_bound: bool,
    /// When the user was created.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub created_at: Timestamp,
    /// When the user last changed.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub updated_at: Timestamp,
}

impl From<UserWithRoles> for ManagedUserView {
    fn from(u: UserWithRoles) -> Self {
        let UserWithRoles { user, roles, permissions } = u;
        ManagedUserView {
            id: user.id,
            username: user.username,
            name: user.name,
            phone: user.phone,
            email: user.email,
            party: user.party.into(),
            partner_id: user.party.partner_id(),
            tenant_id: user.party.tenant_id(),
            status: user.status,
            roles,
            permissions,
            chat_bound: user.chat_bound,
            created_at: user.created_at,
            updated_at: user.updated_at,
        }
    }
}

/// `POST /roles` body.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"code": "payroll_viewer", "name": "Payroll viewer", "party_type": "tenant", "permissions": ["payroll:read", "employee:read"]})))]
pub struct NewRole {
    /// Letters, digits and underscores.
    #[cfg_attr(feature = "openapi", schema(schema_with = schema::role_code))]
    pub code: RoleCode,
    /// The display name.
    pub name: Name,
    /// The kind of user that can hold it: `platform`, `partner` or `tenant`.
    pub party_type: PartyType,
    /// What it grants: catalogue permissions, `resource:*` wildcards or `*`, none the caller lacks.
    #[cfg_attr(feature = "openapi", schema(schema_with = schema::permissions))]
    pub permissions: Vec<String>,
}

/// `PUT /roles/{id}` body.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"name": "Payroll reader", "permissions": ["payroll:read"]})))]
pub struct RolePatch {
    /// A new display name.
    pub name: Option<Name>,
    /// The role's permissions, replacing all of them.
    #[cfg_attr(feature = "openapi", schema(schema_with = schema::permissions_patch))]
    pub permissions: Option<Vec<String>>,
}

/// `GET /roles` parameters.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct RoleListParams {
    /// 1-based page number; default 1.
    pub page: Option<i64>,
    /// Roles per page; default 20, at most 100.
    pub page_size: Option<i64>,
}

/// One entry of the permission catalogue.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PermissionInfo {
    /// The permission string, `resource:action`.
    pub name: &'static str,
    /// What it allows.
    pub description: &'static str,
}

// ----- logins and sessions ----------------------------------------------------------------

/// A user as the auth routes show it.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UserView {
    /// The user's id.
    pub id: Id,
    /// The login name.
    pub username: String,
    /// The display name.
    pub name: String,
    /// The phone number.
    pub phone: Option<String>,
    /// The e-mail address.
    pub email: Option<String>,
    /// `active` or `disabled`.
    pub status: UserStatus,
    /// The party the user belongs to.
    pub party: PartyView,
    /// Whether a messaging-platform account is bound for QR login.
    pub chat_bound: bool,
    /// When the user was created.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub created_at: Timestamp,
    /// When the user last changed.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub updated_at: Timestamp,
}

impl From<User> for UserView {
    fn from(u: User) -> Self {
        UserView {
            id: u.id,
            username: u.username,
            name: u.name,
            phone: u.phone,
            email: u.email,
            status: u.status,
            party: u.party.into(),
            chat_bound: u.chat_bound,
            created_at: u.created_at,
            updated_at: u.updated_at,
        }
    }
}

/// How a login proves who the caller is.
#[derive(Debug, Clone, Copy, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum LoginMethod {
    /// `username` (or the user's phone or e-mail) and `password`.
    Password,
    /// `target` and a `code` from `send-code` with purpose `login`.
    Code,
    /// A `ticket` from `chat-qr` whose status is `confirmed`.
    Qr,
}

/// `POST /auth/login` body; which other fields are required depends on `method` (the
/// document says so with one schema per method: [`schema::login`]).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoginRequest {
    /// `password`, `code` or `qr`.
    pub method: LoginMethod,
    /// With `password`: the login name, phone or e-mail address.
    pub username: Option<String>,
    /// With `password`: the password.
    pub password: Option<String>,
    /// With `code`: the phone number or e-mail address the code went to.
    pub target: Option<String>,
    /// With `code`: the code `send-code` sent with purpose `login`.
    pub code: Option<String>,
    /// With `qr`: a confirmed ticket of `chat-qr`.
    pub ticket: Option<String>,
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for LoginRequest {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        schema::login()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for LoginRequest {}

/// Tokens for a session: a short-lived access token and a rotating refresh token.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TokenResponse {
    /// A JWT, sent as `Authorization: Bearer …`.
    pub access_token: String,
    /// Always "Bearer".
    pub token_type: &'static str,
    /// Seconds until the access token expires.
    pub expires_in: i64,
    /// Single-use: `POST /auth/refresh` with it gets the next tokens; using it twice ends the session.
    pub refresh_token: String,
    /// Seconds until the refresh token expires.
    pub refresh_expires_in: i64,
    /// The user logged in.
    pub user: UserView,
}

impl From<TokenGrant> for TokenResponse {
    fn from(g: TokenGrant) -> Self {
        TokenResponse {
            access_token: g.access_token,
            token_type: "Bearer",
            expires_in: g.expires_in,
            refresh_token: g.refresh_token,
            refresh_expires_in: g.refresh_expires_in,
            user: g.user.into(),
        }
    }
}

/// `POST /auth/refresh` body.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"refresh_token": "rt_3q2-K9xUe0b1T4mZs8wVvA"})))]
pub struct RefreshRequest {
    /// The refresh token of the last login or refresh.
    pub refresh_token: String,
}

/// The caller's party with its standing: `active`, or `pending` until a self-registered
/// tenant is activated (a disabled party's users are refused with 403 saying why).
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MyParty {
    /// `platform`, `partner` or `tenant`.
    #[serde(rename = "type")]
    pub party_type: PartyType,
    /// The partner's or tenant's id; null for the platform.
    pub id: Option<Id>,
    /// `active` or `pending`.
    pub status: &'static str,
}

/// The caller, its party, roles and effective permissions.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MeResponse {
    /// The caller.
    pub user: UserView,
    /// The caller's party and its standing.
    pub party: MyParty,
    /// The roles the caller holds.
    pub roles: Vec<RoleRef>,
    /// The union of the roles' permissions.
    pub permissions: Vec<String>,
}

/// `POST /auth/send-code` body.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"target": "+8613800138000", "purpose": "register"})))]
pub struct SendCodeRequest {
    /// A phone number (`+8613800138000`) or an e-mail address.
    #[cfg_attr(feature = "openapi", schema(schema_with = atrium_kernel::schema::contact_target_schema))]
    pub target: String,
    /// `login`, `register` or `reset_password`.
    pub purpose: CodePurpose,
}

/// What `POST /auth/send-code` answers.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SendCodeResponse {
    /// Seconds until the code expires.
    pub expires_in: i64,
    /// Seconds before another code may be sent to the same target.
    pub resend_after: i64,
    /// The code itself, in the `dev` profile only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub debug_code: Option<String>,
}

/// `POST /auth/register` body.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"target": "+8613800138000", "code": "493027", "password": "Spring-Rain-2026", "name": "Han Meimei", "tenant_name": "Example Trading Co."})))]
pub struct RegisterRequest {
    /// The phone number or e-mail address the code went to; the first user's contact.
    #[cfg_attr(feature = "openapi", schema(schema_with = atrium_kernel::schema::contact_target_schema))]
    pub target: String,
    /// The code `send-code` sent to `target` with purpose `register`; a wrong or expired one is 401.
    pub code: String,
    /// The first user's password: 8–128 characters, not a common one.
    #[cfg_attr(feature = "openapi", schema(schema_with = schema::password))]
    pub password: String,
    /// The first user's display name, up to 64 characters.
    #[cfg_attr(feature = "openapi", schema(value_type = Text<64>))]
    pub name: String,
    /// The new tenant's name, up to 128 characters.
    #[cfg_attr(feature = "openapi", schema(value_type = Text<128>))]
    pub tenant_name: String,
}

/// The tenant a registration created.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RegisteredTenant {
    /// The new tenant's id.
    pub id: Id,
    /// Its name.
    pub name: String,
    /// "pending" until a platform or partner admin activates it.
    pub status: &'static str,
}

/// What `POST /auth/register` answers.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RegisterResponse {
    /// The first user, a tenant admin.
    pub user: UserView,
    /// The tenant created.
    pub tenant: RegisteredTenant,
}

/// `POST /auth/reset-password` body.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"target": "li.lei@example.com", "code": "493027", "new_password": "Autumn-Leaf-2026"})))]
pub struct ResetPasswordRequest {
    /// The phone number or e-mail address the code went to.
    #[cfg_attr(feature = "openapi", schema(schema_with = atrium_kernel::schema::contact_target_schema))]
    pub target: String,
    /// The code `send-code` sent to `target` with purpose `reset_password`; a wrong or expired one is 401.
    pub code: String,
    /// The new password: 8–128 characters, not a common one. Every session of the user ends.
    #[cfg_attr(feature = "openapi", schema(schema_with = schema::password))]
    pub new_password: String,
}

/// What `GET /auth/chat-qr` answers.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ChatQrResponse {
    /// Poll `GET /auth/chat-qr/status` with it; log in with it once `confirmed`.
    pub ticket: String,
    /// Open this page to show the QR code.
    pub qr_url: String,
    /// Seconds until the ticket expires.
    pub expires_in: i64,
}

/// `GET /auth/chat-qr/status` parameters.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct TicketQuery {
    /// The ticket of `GET /auth/chat-qr`.
    pub ticket: String,
}

/// A QR ticket's progress.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TicketStatusResponse {
    /// `pending`, `confirmed`, `unbound` or `expired`.
    pub status: TicketStatus,
}

/// `GET /auth/chat-qr/callback` parameters, as the messaging platform sends them.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
pub struct CallbackQuery {
    /// The platform's authorisation code for the scanning account.
    pub code: String,
    /// The ticket.
    pub state: String,
}

/// `POST /auth/chat-bind` body.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"ticket": "qt_9fK2mPz0aLw8Rj4Ct1VnYe"})))]
pub struct ChatBindRequest {
    /// An `unbound` ticket: the account that scanned it is bound to the caller.
    pub ticket: String,
}
