use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::routes::{audit, auth, doc_admin, docs, employees, health, partners, payroll, roles, tenants, users};

/// The OpenAPI document served at `/api/v1/openapi.json`.
#[derive(OpenApi)]
#[openapi(
    info(title = "Atrium", description = "Management backend: identity, org records, payroll, orders, mini-programs and documents. \
        Every /api/v1 response is an envelope {code, message, data} whose code equals the HTTP status; the schemas below \
        describe `data`."),
    paths(
        health::healthz, health::live, health::ready,
        auth::login, auth::refresh, auth::logout, auth::me, auth::send_code, auth::register, auth::reset_password,
        auth::chat_qr, auth::chat_qr_status, auth::chat_qr_callback, auth::chat_bind,
        users::list, users::get, users::create, users::update, users::delete,
        partners::list, partners::get, partners::create, partners::update, partners::delete,
        tenants::list, tenants::get, tenants::create, tenants::update, tenants::delete,
        employees::list, employees::get, employees::create, employees::update, employees::delete,
        payroll::list, payroll::get, payroll::create, payroll::update, payroll::calculate, payroll::approve, payroll::send,
        roles::list, roles::permissions, roles::get, roles::create, roles::update, roles::delete,
        audit::list,
        docs::create_document, docs::get_document, docs::document_tree,
        doc_admin::list_projects, doc_admin::create_project, doc_admin::get_project,
        doc_admin::list_tokens, doc_admin::create_token, doc_admin::revoke_token,
    ),
    modifiers(&BearerAuth),
    tags(
        (name = "auth", description = "Logins, sessions, verification codes and QR login"),
        (name = "users", description = "Users of the caller's scope"),
        (name = "partners", description = "Partners (agents)"),
        (name = "tenants", description = "Tenants (enterprises)"),
        (name = "employees", description = "Employees of tenants"),
        (name = "payroll", description = "Payroll sheets: draft → calculated → approved → sent"),
        (name = "roles", description = "Roles and the permission catalogue"),
        (name = "audit", description = "The audit trail"),
        (name = "docs", description = "The document interface: `Authorization: Token <API_TOKEN>`; success is envelope code 0, \
            errors carry the HTTP status as code and data null"),
        (name = "doc-admin", description = "Document projects and API tokens of the caller's party (doc:read, doc:manage)"),
        (name = "health", description = "Liveness and readiness for load balancers and orchestrators (no authentication)"),
    )
)]
pub struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(Http::builder().scheme(HttpAuthScheme::Bearer).bearer_format("JWT").build()),
        );
        components.add_security_scheme(
            "docs_token",
            SecurityScheme::ApiKey(utoipa::openapi::security::ApiKey::Header(utoipa::openapi::security::ApiKeyValue::with_description(
                "Authorization",
                "Token <API_TOKEN>",
            ))),
        );
    }
}
