//! `/api/v1/auth/*`: logins, tokens, codes, registration, password reset and QR login.
use actix_web::{HttpRequest, web};
use atrium_identity::{CodePurpose, RoleRef, TicketStatus, TokenGrant, User};
use atrium_kernel::{Error, PartyType, PartyView};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::app::AppState;
use crate::envelope::{ApiResult, ok};
use crate::extract::{Auth, Json, client_info};

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/auth/login").route(web::post().to(login)))
        .service(web::resource("/auth/refresh").route(web::post().to(refresh)))
        .service(web::resource("/auth/logout").route(web::post().to(logout)))
        .service(web::resource("/auth/me").route(web::get().to(me)))
        .service(web::resource("/auth/send-code").route(web::post().to(send_code)))
        .service(web::resource("/auth/register").route(web::post().to(register)))
        .service(web::resource("/auth/reset-password").route(web::post().to(reset_password)))
        .service(web::resource("/auth/chat-qr").route(web::get().to(chat_qr)))
        .service(web::resource("/auth/chat-qr/status").route(web::get().to(chat_qr_status)))
        .service(web::resource("/auth/chat-qr/callback").route(web::get().to(chat_qr_callback)))
        .service(web::resource("/auth/chat-bind").route(web::post().to(chat_bind)));
}

/// A user as the auth routes show it.
#[derive(Debug, Serialize, ToSchema)]
pub struct UserView {
    pub id: i64,
    pub username: String,
    pub name: String,
    pub phone: Option<String>,
    pub email: Option<String>,
    pub status: atrium_identity::UserStatus,
    pub party: PartyView,
    /// Whether a messaging-platform account is bound for QR login.
    pub chat_bound: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
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
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum LoginMethod {
    /// `username` (or the user's phone or e-mail) and `password`.
    Password,
    /// `target` and a `code` from `send-code` with purpose `login`.
    Code,
    /// A `ticket` from `chat-qr` whose status is `confirmed`.
    Qr,
}

/// `POST /auth/login` body; which other fields are required depends on `method`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LoginRequest {
    pub method: LoginMethod,
    pub username: Option<String>,
    pub password: Option<String>,
    pub target: Option<String>,
    pub code: Option<String>,
    pub ticket: Option<String>,
}

fn required<'a>(value: &'a Option<String>, field: &str, method: &str) -> Result<&'a str, Error> {
    value.as_deref().ok_or_else(|| Error::invalid(field, format!("is required for method {method}")))
}

/// Tokens for a session: a short-lived access token and a rotating refresh token.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenResponse {
    pub access_token: String,
    /// Always "Bearer".
    pub token_type: &'static str,
    /// Seconds until the access token expires.
    pub expires_in: i64,
    pub refresh_token: String,
    pub refresh_expires_in: i64,
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

/// Log in with a password, a verification code or a scanned QR ticket.
#[utoipa::path(post, path = "/api/v1/auth/login", tag = "auth", request_body = LoginRequest,
    responses((status = 200, description = "Logged in", body = TokenResponse),
              (status = 400, description = "Malformed request"),
              (status = 401, description = "Wrong credentials (one message whether or not the account exists)"),
              (status = 429, description = "Account locked or address throttled; see Retry-After")))]
pub async fn login(req: HttpRequest, state: web::Data<AppState>, body: Json<LoginRequest>) -> ApiResult {
    let client = client_info(&req);
    let b = body.0;
    let id = &state.identity;
    let grant = match b.method {
        LoginMethod::Password => {
            id.login_password(required(&b.username, "username", "password")?, required(&b.password, "password", "password")?, &client)
                .await?
        }
        LoginMethod::Code => id.login_code(required(&b.target, "target", "code")?, required(&b.code, "code", "code")?, &client).await?,
        LoginMethod::Qr => id.login_qr(required(&b.ticket, "ticket", "qr")?, &client).await?,
    };
    ok(TokenResponse::from(grant))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RefreshRequest {
    pub refresh_token: String,
}

/// Trade a refresh token for a new pair. A refresh token works once; replaying a used one
/// ends its session.
#[utoipa::path(post, path = "/api/v1/auth/refresh", tag = "auth", request_body = RefreshRequest,
    responses((status = 200, body = TokenResponse), (status = 401, description = "Invalid, expired or replayed")))]
pub async fn refresh(req: HttpRequest, state: web::Data<AppState>, body: Json<RefreshRequest>) -> ApiResult {
    ok(TokenResponse::from(state.identity.refresh(&body.0.refresh_token, &client_info(&req)).await?))
}

/// End the caller's session; its access and refresh tokens answer 401 from then on.
#[utoipa::path(post, path = "/api/v1/auth/logout", tag = "auth", security(("bearer" = [])),
    responses((status = 200, description = "Logged out"), (status = 401)))]
pub async fn logout(req: HttpRequest, state: web::Data<AppState>, auth: Auth) -> ApiResult {
    state.identity.logout(&auth.principal, &client_info(&req)).await?;
    ok(serde_json::json!({}))
}

/// The caller's party with its standing: `active`, or `pending` until a self-registered
/// tenant is activated (a disabled party's users are refused with 403 saying why).
#[derive(Debug, Serialize, ToSchema)]
pub struct MyParty {
    #[serde(rename = "type")]
    pub party_type: PartyType,
    pub id: Option<i64>,
    /// `active` or `pending`.
    pub status: &'static str,
}

/// The caller, its party, roles and effective permissions.
#[derive(Debug, Serialize, ToSchema)]
pub struct MeResponse {
    pub user: UserView,
    pub party: MyParty,
    pub roles: Vec<RoleRef>,
    pub permissions: Vec<String>,
}

/// The current user.
#[utoipa::path(get, path = "/api/v1/auth/me", tag = "auth", security(("bearer" = [])),
    responses((status = 200, body = MeResponse), (status = 401), (status = 403, description = "The caller's tenant or partner is disabled; the message says which")))]
pub async fn me(auth: Auth) -> ApiResult {
    let p = &auth.principal;
    let party = MyParty { party_type: p.user.party.party_type(), id: p.user.party.id(), status: p.user.standing.as_str() };
    ok(MeResponse { user: p.user.clone().into(), party, roles: p.roles.clone(), permissions: p.permissions.to_vec() })
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SendCodeRequest {
    /// A phone number (`+8613800138000`) or an e-mail address.
    pub target: String,
    pub purpose: CodePurpose,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SendCodeResponse {
    pub expires_in: i64,
    pub resend_after: i64,
    /// The code itself, in the `dev` profile only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub debug_code: Option<String>,
}

/// Send a 6-digit verification code by SMS or e-mail.
#[utoipa::path(post, path = "/api/v1/auth/send-code", tag = "auth", request_body = SendCodeRequest,
    responses((status = 200, body = SendCodeResponse), (status = 400), (status = 429, description = "Resend interval or hourly limit; see Retry-After")))]
pub async fn send_code(req: HttpRequest, state: web::Data<AppState>, body: Json<SendCodeRequest>) -> ApiResult {
    let sent = state.identity.send_code(&body.0.target, body.0.purpose, &client_info(&req)).await?;
    ok(SendCodeResponse { expires_in: sent.expires_in, resend_after: sent.resend_after, debug_code: sent.debug_code })
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterRequest {
    pub target: String,
    pub code: String,
    pub password: String,
    pub name: String,
    pub tenant_name: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RegisteredTenant {
    pub id: i64,
    pub name: String,
    /// Always "pending" until a platform or partner admin activates it.
    pub status: &'static str,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RegisterResponse {
    pub user: UserView,
    pub tenant: RegisteredTenant,
}

/// Sign up: creates a pending tenant and its tenant-admin user, who may log in at once.
#[utoipa::path(post, path = "/api/v1/auth/register", tag = "auth", request_body = RegisterRequest,
    responses((status = 200, body = RegisterResponse), (status = 400), (status = 409, description = "Phone or e-mail already registered")))]
pub async fn register(req: HttpRequest, state: web::Data<AppState>, body: Json<RegisterRequest>) -> ApiResult {
    let b = body.0;
    let r = state.identity.register(&b.target, &b.code, &b.password, &b.name, &b.tenant_name, &client_info(&req)).await?;
    ok(RegisterResponse { user: r.user.into(), tenant: RegisteredTenant { id: r.tenant_id, name: r.tenant_name, status: "pending" } })
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResetPasswordRequest {
    pub target: String,
    pub code: String,
    pub new_password: String,
}

/// Set a new password with a `reset_password` code; ends every session of the user.
#[utoipa::path(post, path = "/api/v1/auth/reset-password", tag = "auth", request_body = ResetPasswordRequest,
    responses((status = 200), (status = 400)))]
pub async fn reset_password(req: HttpRequest, state: web::Data<AppState>, body: Json<ResetPasswordRequest>) -> ApiResult {
    let b = body.0;
    state.identity.reset_password(&b.target, &b.code, &b.new_password, &client_info(&req)).await?;
    ok(serde_json::json!({}))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ChatQrResponse {
    pub ticket: String,
    /// Open this page to show the QR code.
    pub qr_url: String,
    pub expires_in: i64,
}

/// Start a messaging-platform QR login.
#[utoipa::path(get, path = "/api/v1/auth/chat-qr", tag = "auth", responses((status = 200, body = ChatQrResponse), (status = 502)))]
pub async fn chat_qr(state: web::Data<AppState>) -> ApiResult {
    let qr = state.identity.chat_qr().await?;
    ok(ChatQrResponse { ticket: qr.ticket, qr_url: qr.qr_url, expires_in: qr.expires_in })
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
pub struct TicketQuery {
    pub ticket: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TicketStatusResponse {
    pub status: TicketStatus,
}

/// Poll a QR ticket: `pending`, `confirmed` (log in with method `qr`), `unbound` (scanned by an
/// account bound to no user) or `expired`.
#[utoipa::path(get, path = "/api/v1/auth/chat-qr/status", tag = "auth", params(TicketQuery),
    responses((status = 200, body = TicketStatusResponse), (status = 404)))]
pub async fn chat_qr_status(state: web::Data<AppState>, q: web::Query<TicketQuery>) -> ApiResult {
    ok(TicketStatusResponse { status: state.identity.chat_qr_status(&q.ticket).await? })
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct CallbackQuery {
    pub code: String,
    /// The ticket.
    pub state: String,
}

/// Where the messaging platform sends the scanner after a scan.
#[utoipa::path(get, path = "/api/v1/auth/chat-qr/callback", tag = "auth", params(CallbackQuery),
    responses((status = 200, body = TicketStatusResponse), (status = 401, description = "Invalid code"), (status = 409, description = "Ticket already scanned or expired")))]
pub async fn chat_qr_callback(state: web::Data<AppState>, q: web::Query<CallbackQuery>) -> ApiResult {
    ok(TicketStatusResponse { status: state.identity.chat_qr_callback(&q.code, &q.state).await? })
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChatBindRequest {
    pub ticket: String,
}

/// Bind the platform account that scanned `ticket` (status `unbound`) to the caller.
#[utoipa::path(post, path = "/api/v1/auth/chat-bind", tag = "auth", request_body = ChatBindRequest, security(("bearer" = [])),
    responses((status = 200), (status = 401), (status = 409, description = "Ticket not unbound, or account bound to another user")))]
pub async fn chat_bind(req: HttpRequest, state: web::Data<AppState>, auth: Auth, body: Json<ChatBindRequest>) -> ApiResult {
    state.identity.chat_bind(&auth.principal.user, &body.0.ticket, &client_info(&req)).await?;
    ok(serde_json::json!({}))
}
