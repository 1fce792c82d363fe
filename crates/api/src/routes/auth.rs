//! `/api/v1/auth/*`: logins, tokens, codes, registration, password reset and QR login.
use crate::query::Query;
use actix_web::{HttpRequest, web};
use atrium_identity::api::{
    CallbackQuery, ChatBindRequest, ChatQrResponse, LoginMethod, LoginRequest, MeResponse, MyParty, RefreshRequest, RegisterRequest,
    RegisterResponse, RegisteredTenant, ResetPasswordRequest, SendCodeRequest, SendCodeResponse, TicketQuery, TicketStatusResponse,
    TokenResponse,
};
use atrium_kernel::Error;

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

fn required<'a>(value: &'a Option<String>, field: &str, method: &str) -> Result<&'a str, Error> {
    value.as_deref().ok_or_else(|| Error::invalid(field, format!("is required for method {method}")))
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

/// The current user.
#[utoipa::path(get, path = "/api/v1/auth/me", tag = "auth", security(("bearer" = [])),
    responses((status = 200, body = MeResponse), (status = 401), (status = 403, description = "The caller's tenant or partner is disabled; the message says which")))]
pub async fn me(auth: Auth) -> ApiResult {
    let p = &auth.principal;
    let party = MyParty { party_type: p.user.party.party_type(), id: p.user.party.id(), status: p.standing.as_str() };
    ok(MeResponse { user: p.user.clone().into(), party, roles: p.roles.clone(), permissions: p.permissions.to_vec() })
}

/// Send a 6-digit verification code by SMS or e-mail.
#[utoipa::path(post, path = "/api/v1/auth/send-code", tag = "auth", request_body = SendCodeRequest,
    responses((status = 200, body = SendCodeResponse), (status = 400), (status = 429, description = "Resend interval or hourly limit; see Retry-After")))]
pub async fn send_code(req: HttpRequest, state: web::Data<AppState>, body: Json<SendCodeRequest>) -> ApiResult {
    let sent = state.identity.send_code(&body.0.target, body.0.purpose, &client_info(&req)).await?;
    ok(SendCodeResponse { expires_in: sent.expires_in, resend_after: sent.resend_after, debug_code: sent.debug_code })
}

/// Sign up: creates a pending tenant and its tenant-admin user, who may log in at once.
#[utoipa::path(post, path = "/api/v1/auth/register", tag = "auth", request_body = RegisterRequest,
    responses((status = 200, body = RegisterResponse), (status = 400), (status = 401, description = "The code is wrong or expired"),
              (status = 409, description = "Phone or e-mail already registered")))]
pub async fn register(req: HttpRequest, state: web::Data<AppState>, body: Json<RegisterRequest>) -> ApiResult {
    let b = body.0;
    let r = state.identity.register(&b.target, &b.code, &b.password, &b.name, &b.tenant_name, &client_info(&req)).await?;
    ok(RegisterResponse { user: r.user.into(), tenant: RegisteredTenant { id: r.tenant_id, name: r.tenant_name, status: "pending" } })
}

/// Set a new password with a `reset_password` code; ends every session of the user.
#[utoipa::path(post, path = "/api/v1/auth/reset-password", tag = "auth", request_body = ResetPasswordRequest,
    responses((status = 200), (status = 400), (status = 401, description = "The code is wrong or expired")))]
pub async fn reset_password(req: HttpRequest, state: web::Data<AppState>, body: Json<ResetPasswordRequest>) -> ApiResult {
    let b = body.0;
    state.identity.reset_password(&b.target, &b.code, &b.new_password, &client_info(&req)).await?;
    ok(serde_json::json!({}))
}

/// Start a messaging-platform QR login.
#[utoipa::path(get, path = "/api/v1/auth/chat-qr", tag = "auth", responses((status = 200, body = ChatQrResponse), (status = 502)))]
pub async fn chat_qr(state: web::Data<AppState>) -> ApiResult {
    let qr = state.identity.chat_qr().await?;
    ok(ChatQrResponse { ticket: qr.ticket, qr_url: qr.qr_url, expires_in: qr.expires_in })
}

/// Poll a QR ticket: `pending`, `confirmed` (log in with method `qr`), `unbound` (scanned by an
/// account bound to no user) or `expired`.
#[utoipa::path(get, path = "/api/v1/auth/chat-qr/status", tag = "auth", params(TicketQuery),
    responses((status = 200, body = TicketStatusResponse), (status = 404)))]
pub async fn chat_qr_status(state: web::Data<AppState>, q: Query<TicketQuery>) -> ApiResult {
    ok(TicketStatusResponse { status: state.identity.chat_qr_status(&q.ticket).await? })
}

/// Where the messaging platform sends the scanner after a scan.
#[utoipa::path(get, path = "/api/v1/auth/chat-qr/callback", tag = "auth", params(CallbackQuery),
    responses((status = 200, body = TicketStatusResponse), (status = 401, description = "Invalid code"), (status = 404, description = "No such QR ticket"), (status = 409, description = "Ticket already scanned or expired")))]
pub async fn chat_qr_callback(state: web::Data<AppState>, q: Query<CallbackQuery>) -> ApiResult {
    ok(TicketStatusResponse { status: state.identity.chat_qr_callback(&q.code, &q.state).await? })
}

/// Bind the platform account that scanned `ticket` (status `unbound`) to the caller.
#[utoipa::path(post, path = "/api/v1/auth/chat-bind", tag = "auth", request_body = ChatBindRequest, security(("bearer" = [])),
    responses((status = 200), (status = 401), (status = 404, description = "No such QR ticket"), (status = 409, description = "Ticket not unbound, or account bound to another user")))]
pub async fn chat_bind(req: HttpRequest, state: web::Data<AppState>, auth: Auth, body: Json<ChatBindRequest>) -> ApiResult {
    state.identity.chat_bind(&auth.principal.user, &body.0.ticket, &client_info(&req)).await?;
    ok(serde_json::json!({}))
}
