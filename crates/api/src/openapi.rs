use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::routes::{audit, auth, doc_admin, docs, employees, health, partners, payroll, roles, tenants, users};

/// The OpenAPI document served at `/api/v1/openapi.json`.
#[derive(OpenApi)]
#[openapi(
    info(title = "Atrium", description = "Management backend: identity, org records, payroll, orders, mini-programs and documents. \
        Every /api/v1 response is an envelope {code, message, data} whose code equals the HTTP status; on /api/docs/ \
        a success has code 0. Errors are the ErrorEnvelope, whose data is null or lists the fields at fault."),
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
    modifiers(&BearerAuth, &Contract, &Envelopes),
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

/// Makes the generated document valid OpenAPI where the derive leaves gaps: every operation
/// gets a unique id (`<tag>_<handler>`, the handlers' names repeat across resources), a
/// parameter the derive declares twice (a typed path parameter and the path template's own)
/// is kept once, and every response has the description the specification requires (its
/// status's reason phrase unless the route wrote one).
struct Contract;

impl Modify for Contract {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::RefOr;
        for item in openapi.paths.paths.values_mut() {
            let operations = [&mut item.get, &mut item.put, &mut item.post, &mut item.delete, &mut item.patch];
            for op in operations.into_iter().flatten() {
                if let (Some(tag), Some(id)) = (op.tags.as_ref().and_then(|t| t.first()), op.operation_id.as_ref())
                    && !id.starts_with(&format!("{}_", tag.replace('-', "_")))
                {
                    op.operation_id = Some(format!("{}_{id}", tag.replace('-', "_")));
                }
                if let Some(params) = op.parameters.as_mut() {
                    let mut seen = std::collections::HashSet::new();
                    params.retain(|p| match p {
                        RefOr::T(p) => seen.insert((p.name.clone(), format!("{:?}", serde_json::to_value(&p.parameter_in).ok()))),
                        RefOr::Ref(_) => true,
                    });
                }
                for (status, response) in op.responses.responses.iter_mut() {
                    if let RefOr::T(r) = response
                        && r.description.trim().is_empty()
                    {
                        r.description = reason(status).to_owned();
                    }
                }
            }
        }
    }
}

/// Describes what the wire really carries: every answer is an envelope. A success's schema
/// is the route's `data` inside `{code, message, data}` (`code` is the status on /api/v1 and 0
/// on the document interface); every error status is the error envelope, whose `data` is null
/// or lists field errors. Statuses every route can give are declared on each: 503 with
/// `Retry-After` (the database is unavailable), and for routes that need a token 401 and 403
/// (the caller's party is disabled or lacks the permission).
struct Envelopes;

impl Modify for Envelopes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let Ok(mut doc) = serde_json::to_value(&*openapi) else { return };
        envelope_document(&mut doc);
        if let Ok(updated) = serde_json::from_value(doc) {
            *openapi = updated;
        }
    }
}

fn envelope_document(doc: &mut serde_json::Value) {
    use serde_json::json;
    if let Some(schemas) = doc.pointer_mut("/components/schemas").and_then(|s| s.as_object_mut()) {
        schemas.insert(
            "ErrorEnvelope".into(),
            json!({
                "type": "object",
                "description": "An error: `code` is the HTTP status, `message` says what went wrong, `data` is null or lists the fields at fault.",
                "required": ["code", "message", "data"],
                "properties": {
                    "code": {"type": "integer"},
                    "message": {"type": "string"},
                    "data": {"oneOf": [
                        {"type": "null"},
                        {"type": "object", "required": ["errors"], "properties": {"errors": {"type": "array", "items": {
                            "type": "object", "required": ["field", "message"],
                            "properties": {"field": {"type": "string"}, "message": {"type": "string"}}
                        }}}}
                    ]}
                }
            }),
        );
    }
    let Some(paths) = doc.get_mut("paths").and_then(|p| p.as_object_mut()) else { return };
    for (path, item) in paths.iter_mut() {
        let docs_interface = path.starts_with("/api/docs");
        let Some(item) = item.as_object_mut() else { continue };
        for (method, op) in item.iter_mut() {
            if !["get", "put", "post", "delete", "patch"].contains(&method.as_str()) {
                continue;
            }
            let secured = op
                .get("security")
                .and_then(|s| s.as_array())
                .is_some_and(|s| s.iter().any(|r| r.as_object().is_some_and(|r| !r.is_empty())));
            let live = path.ends_with("/healthz/live");
            let Some(responses) = op.get_mut("responses").and_then(|r| r.as_object_mut()) else { continue };
            let mut extra: Vec<&str> = vec![];
            if !live {
                extra.push("503");
            }
            if secured {
                extra.extend(["401", "403"]);
            }
            for status in extra {
                responses.entry(status).or_insert_with(|| json!({"description": reason(status)}));
            }
            for (status, response) in responses.iter_mut() {
                let Some(response) = response.as_object_mut() else { continue };
                if status.starts_with('2') {
                    let code = if docs_interface { 0 } else { status.parse::<i64>().unwrap_or(200) };
                    let data = response
                        .get("content")
                        .and_then(|c| c.get("application/json"))
                        .and_then(|c| c.get("schema"))
                        .cloned()
                        .unwrap_or_else(|| json!({"type": "object"}));
                    response.insert(
                        "content".into(),
                        json!({"application/json": {"schema": {
                            "type": "object",
                            "required": ["code", "message", "data"],
                            "properties": {"code": {"type": "integer", "enum": [code]}, "message": {"type": "string"}, "data": data}
                        }}}),
                    );
                } else {
                    response
                        .insert("content".into(), json!({"application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}}));
                    if status == "503" || status == "429" {
                        response.insert(
                            "headers".into(),
                            json!({"Retry-After": {"description": "Seconds to wait before trying again", "schema": {"type": "integer"}}}),
                        );
                    }
                }
            }
        }
    }
}

/// The reason phrase of an HTTP status code written as a string.
fn reason(status: &str) -> &'static str {
    status
        .parse::<u16>()
        .ok()
        .and_then(|code| actix_web::http::StatusCode::from_u16(code).ok())
        .and_then(|code| code.canonical_reason())
        .unwrap_or("Response")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn document() -> serde_json::Value {
        serde_json::to_value(ApiDoc::openapi()).expect("the document serialises")
    }

    fn operations(doc: &serde_json::Value) -> Vec<(String, String, serde_json::Value)> {
        let mut out = vec![];
        for (path, item) in doc["paths"].as_object().expect("paths").iter() {
            for (method, op) in item.as_object().expect("path item").iter() {
                out.push((method.clone(), path.clone(), op.clone()));
            }
        }
        out
    }

    #[test]
    fn successes_are_envelopes_and_errors_the_error_envelope() {
        let doc = document();
        for (method, path, op) in operations(&doc) {
            for (status, response) in op["responses"].as_object().expect("responses").iter() {
                let schema = &response["content"]["application/json"]["schema"];
                if status.starts_with('2') {
                    let code = &schema["properties"]["code"]["enum"][0];
                    let expected = if path.starts_with("/api/docs") { 0 } else { status.parse::<i64>().unwrap_or_default() };
                    assert_eq!(code, &serde_json::json!(expected), "{method} {path} {status}");
                    assert!(schema["properties"].get("data").is_some(), "{method} {path} {status} has no data");
                } else {
                    assert_eq!(schema["$ref"], "#/components/schemas/ErrorEnvelope", "{method} {path} {status}");
                }
            }
            let responses = op["responses"].as_object().expect("responses");
            if !path.ends_with("/healthz/live") {
                assert!(responses["503"]["headers"].get("Retry-After").is_some(), "{method} {path} lacks 503 with Retry-After");
            }
            if op["security"].as_array().is_some_and(|s| s.iter().any(|r| r.as_object().is_some_and(|r| !r.is_empty()))) {
                assert!(responses.contains_key("401") && responses.contains_key("403"), "{method} {path} lacks 401/403");
            }
        }
    }

    #[test]
    fn operation_ids_are_unique() {
        let doc = document();
        let mut seen = HashSet::new();
        for (method, path, op) in operations(&doc) {
            let id = op["operationId"].as_str().unwrap_or_default().to_owned();
            assert!(!id.is_empty(), "{method} {path} has no operationId");
            assert!(seen.insert(id.clone()), "{method} {path} repeats operationId {id}");
        }
    }

    #[test]
    fn every_response_has_a_description() {
        for (method, path, op) in operations(&document()) {
            for (status, response) in op["responses"].as_object().expect("responses").iter() {
                let description = response["description"].as_str().unwrap_or_default();
                assert!(!description.trim().is_empty(), "{method} {path} {status} has no description");
            }
        }
    }

    #[test]
    fn no_parameter_is_declared_twice_and_path_parameters_are_in_the_path() {
        for (method, path, op) in operations(&document()) {
            let mut seen = HashSet::new();
            for p in op["parameters"].as_array().cloned().unwrap_or_default() {
                let (name, place) = (p["name"].as_str().unwrap_or_default().to_owned(), p["in"].as_str().unwrap_or_default().to_owned());
                assert!(seen.insert((name.clone(), place.clone())), "{method} {path} declares {name} in {place} twice");
                if place == "path" {
                    assert!(path.contains(&format!("{{{name}}}")), "{method} {path} declares path parameter {name} it does not have");
                }
            }
        }
    }
}
