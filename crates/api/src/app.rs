use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::middleware::{DefaultHeaders, ErrorHandlerResponse, ErrorHandlers, Logger, from_fn};
use actix_web::{App, HttpMessage, HttpRequest, HttpResponse, web};
use async_trait::async_trait;
use atrium_docs::DocsService;
use atrium_identity::IdentityService;
use atrium_identity::{RoleService, UserService};
use atrium_kernel::Reason;
use atrium_org::{AuditService, EmployeeService, PartnerService, TenantService};
use atrium_payroll::PayrollService;
use std::sync::Arc;
use utoipa_swagger_ui::SwaggerUi;

use crate::envelope::respond;
use crate::error::{ApiError, ErrorData};
use crate::extract::{JsonLimit, TrustProxy};
use crate::metrics::{Metrics, MetricsAccess};
use crate::request_id::RequestId;
use crate::{limits, metrics, request_id, routes};

/// Whether this instance can serve (`/healthz/ready`, `/healthz`).
#[async_trait]
pub trait HealthProbe: Send + Sync + 'static {
    /// The database answers, its migrations are applied and every background job runner is
    /// alive; else `Unavailable` (503) saying what is not.
    async fn ready(&self) -> atrium_kernel::Result<()>;
}

/// The domain services the handlers call, built by the server's composition root.
pub struct AppState {
    pub identity: Arc<IdentityService>,
    pub users: Arc<UserService>,
    pub partners: Arc<PartnerService>,
    pub tenants: Arc<TenantService>,
    pub employees: Arc<EmployeeService>,
    pub payroll: Arc<PayrollService>,
    pub roles: Arc<RoleService>,
    pub audit: Arc<AuditService>,
    pub docs: Arc<DocsService>,
    pub payments: Arc<atrium_payments::PaymentService>,
    pub orders: Arc<atrium_orders::OrderService>,
    /// A tenant's authorisation of its mini-program to our third-party platform: the
    /// authorisation view, its link and callback.
    pub release_authorization: Arc<atrium_miniprogram::AuthorizationService>,
    /// The mini-program release pipeline: uploads, audits, releases, rollbacks, and the
    /// events the platform pushes.
    pub releases: Arc<atrium_miniprogram::PipelineService>,
    /// Before a release: domains, privacy settings, the audit quota and the pre-flight check.
    pub release_preflight: Arc<atrium_miniprogram::PreflightService>,
    /// Release campaigns: one template version to many tenants' mini-programs, in waves.
    pub campaigns: Arc<atrium_miniprogram::CampaignService>,
    /// Where package uploads are streamed before the release service keeps them (best on
    /// the file system of the package directory, so keeping one is a rename).
    pub package_incoming: std::path::PathBuf,
    /// `Idempotency-Key` records (create, pay and refund routes).
    pub idempotency: Arc<dyn atrium_kernel::idempotency::IdempotencyStore>,
    /// How long a key stays "in progress" before another request may take it over (its first
    /// request's instance died).
    pub idempotency_stale_secs: i64,
    pub health: Arc<dyn HealthProbe>,
    /// Body limit of JSON requests in bytes.
    pub json_limit: usize,
    /// Trust `X-Forwarded-For` for the client address (only behind your own proxy).
    pub trust_proxy: bool,
    /// How long a request's body may take to arrive after its head (408 past it).
    pub body_timeout: std::time::Duration,
    pub metrics: Arc<Metrics>,
    /// Who may read `/metrics`.
    pub metrics_access: MetricsAccess,
}

/// The whole application: both interfaces, Swagger UI, and the middleware that gives every
/// response an `X-Request-Id`, a log line and — for framework errors too — an envelope.
pub fn configure(
    state: web::Data<AppState>,
    extra: impl FnOnce(&mut web::ServiceConfig),
) -> App<
    impl ServiceFactory<ServiceRequest, Config = (), Response = ServiceResponse<impl MessageBody>, Error = actix_web::Error, InitError = ()>,
> {
    let json_limit = JsonLimit(state.json_limit);
    let trust = TrustProxy(state.trust_proxy);
    let docs = routes::docs::scope(&state);
    let serve_metrics = state.metrics_access != MetricsAccess::Off;
    App::new()
        .app_data(state)
        .app_data(json_limit)
        .app_data(trust)
        // An id that is not a number names no record: 404, as for a number that names none.
        .app_data(
            web::PathConfig::default().error_handler(|_, req| interface_error(req, ApiError(atrium_kernel::Error::NotFound("record")))),
        )
        .app_data(web::PayloadConfig::new(json_limit.0))
        .wrap(from_fn(limits::body_timeout))
        .wrap(ErrorHandlers::new().default_handler(envelope_framework_error))
        // API answers are private and typed: never cached by a proxy or browser (token
        // responses above all), never sniffed into another content type.
        .wrap(DefaultHeaders::new().add((header::X_CONTENT_TYPE_OPTIONS, "nosniff")).add((header::CACHE_CONTROL, "no-store")))
        .wrap(from_fn(metrics::middleware))
        // The request line is ours, not `%r`: credentials in query strings never reach the log.
        .wrap(
            Logger::new(r#"%a "%{line}xi" %s %b %Dms rid=%{rid}xi"#)
                .custom_request_replace("line", crate::access_log::request_line)
                .custom_request_replace("rid", |req| {
                    req.extensions().get::<RequestId>().map(|id| id.0.clone()).unwrap_or_else(|| "-".to_owned())
                }),
        )
        .wrap(from_fn(request_id::middleware))
        .service(web::resource("/healthz").route(web::get().to(routes::health::healthz)))
        .service(web::resource("/healthz/live").route(web::get().to(routes::health::live)))
        .service(web::resource("/healthz/ready").route(web::get().to(routes::health::ready)))
        .configure(|cfg| {
            if serve_metrics {
                cfg.service(web::resource("/metrics").route(web::get().to(metrics::scrape)));
            }
        })
        // The UI lives under `/swagger-ui/`; the address without the slash is where people type.
        .service(web::redirect("/swagger-ui", "/swagger-ui/").permanent())
        .service(SwaggerUi::new("/swagger-ui/{_:.*}").external_url_unchecked("/api/v1/openapi.json", crate::openapi::document()))
        .service(web::scope("/api/v1").configure(routes::configure).configure(routes::doc_admin::configure))
        .service(docs)
        .configure(extra)
        .default_service(web::to(no_route))
}

/// An extractor's refusal in the envelope of the interface the request is on.
pub(crate) fn interface_error(req: &HttpRequest, error: ApiError) -> actix_web::Error {
    if crate::docs_interface::serves(req.path()) { crate::DocsError(error).into() } else { error.into() }
}

async fn no_route(req: HttpRequest) -> HttpResponse {
    respond(
        StatusCode::NOT_FOUND,
        404,
        &format!("no route for {} {}", req.method(), req.path()),
        ErrorData::for_path(req.path(), Reason::NotFound),
    )
}

/// Rewrites any error response that is not already an envelope (actix's own 404/405/413,
/// extractor failures of other crates) into one, keeping status and headers.
fn envelope_framework_error<B: MessageBody + 'static>(res: ServiceResponse<B>) -> actix_web::Result<ErrorHandlerResponse<B>> {
    let is_json =
        res.response().headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| v.starts_with("application/json"));
    if is_json {
        return Ok(ErrorHandlerResponse::Response(res.map_into_left_body()));
    }
    let status = res.status();
    let message = match status {
        StatusCode::NOT_FOUND => "no route for this path".to_owned(),
        StatusCode::METHOD_NOT_ALLOWED => format!("method {} is not allowed here", res.request().method()),
        StatusCode::PAYLOAD_TOO_LARGE => "request body is too large".to_owned(),
        s if s.is_server_error() => "internal server error".to_owned(),
        s => s.canonical_reason().unwrap_or("request failed").to_lowercase(),
    };
    let reason = match status {
        StatusCode::NOT_FOUND => Reason::NotFound,
        StatusCode::METHOD_NOT_ALLOWED => Reason::MethodNotAllowed,
        StatusCode::PAYLOAD_TOO_LARGE => Reason::TooLarge,
        StatusCode::REQUEST_TIMEOUT => Reason::RequestTimeout,
        StatusCode::UNAUTHORIZED => Reason::Unauthenticated,
        StatusCode::TOO_MANY_REQUESTS => Reason::RateLimited,
        StatusCode::SERVICE_UNAVAILABLE => Reason::Unavailable,
        s if s.is_server_error() => Reason::Internal,
        _ => Reason::InvalidInput,
    };
    let (req, old) = res.into_parts();
    let mut new: HttpResponse<BoxBody> = respond(status, status.as_u16(), &message, ErrorData::for_path(req.path(), reason));
    for (name, value) in old.headers() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            new.headers_mut().insert(name.clone(), value.clone());
        }
    }
    if status == StatusCode::METHOD_NOT_ALLOWED && !new.headers().contains_key(header::ALLOW) {
        new.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, POST, PUT, DELETE"));
    }
    Ok(ErrorHandlerResponse::Response(ServiceResponse::new(req, new).map_into_right_body()))
}
