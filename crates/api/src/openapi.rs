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
    modifiers(&BearerAuth, &Contract),
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

/// Makes the generated document say what the wire carries, in one pass over the operations:
/// - every operation gets a unique id (`<tag>_<handler>`: handler names repeat across
///   resources), and a parameter the derive declares twice (a typed path parameter and the
///   path template's own) is kept once;
/// - paging parameters and path ids carry the bounds the parsers enforce
///   ([`PageRequest`](atrium_kernel::PageRequest)'s limits, ids from 1);
/// - every answer is an envelope: a success's schema is the route's `data` inside
///   `{code, message, data}` (`code` is the status on /api/v1, 0 on the document interface),
///   every error status is the `ErrorEnvelope`, whose `data` is null or lists field errors;
/// - statuses every route of a kind can give are declared on it: 503 with `Retry-After` (the
///   database is unavailable) everywhere but liveness, 400 where the request has input, 404
///   where the path names a record, 401 and 403 where a token is needed; every response has
///   a description (its reason phrase unless the route wrote one).
struct Contract;

impl Modify for Contract {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let Ok(mut doc) = serde_json::to_value(&*openapi) else { return };
        contract(&mut doc);
        if let Ok(updated) = serde_json::from_value(doc) {
            *openapi = updated;
        }
    }
}

fn contract(doc: &mut serde_json::Value) {
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
        let Some(item) = item.as_object_mut() else { continue };
        for (method, op) in item.iter_mut() {
            if ["get", "put", "post", "delete", "patch"].contains(&method.as_str()) {
                operation(path, op);
            }
        }
    }
}

fn operation(path: &str, op: &mut serde_json::Value) {
    use serde_json::json;
    let Some(op) = op.as_object_mut() else { return };
    if let (Some(tag), Some(id)) =
        (op.get("tags").and_then(|t| t.get(0)).and_then(|t| t.as_str()), op.get("operationId").and_then(|i| i.as_str()))
    {
        let prefix = format!("{}_", tag.replace('-', "_"));
        if !id.starts_with(&prefix) {
            op.insert("operationId".into(), json!(format!("{prefix}{id}")));
        }
    }
    let mut seen = std::collections::HashSet::new();
    let mut has_path_param = false;
    if let Some(params) = op.get_mut("parameters").and_then(|p| p.as_array_mut()) {
        params.retain(|p| seen.insert((p["name"].clone(), p["in"].clone())));
        for p in params.iter_mut() {
            let bounds = match (p["in"].as_str(), p["name"].as_str()) {
                (Some("query"), Some("page")) => Some((1, i64::from(atrium_kernel::PageRequest::MAX_PAGE))),
                (Some("query"), Some("page_size")) => Some((1, i64::from(atrium_kernel::PageRequest::MAX_SIZE))),
                (Some("path"), _) => {
                    has_path_param = true;
                    Some((1, i64::MAX))
                }
                _ => None,
            };
            if p["in"] == "query"
                && p["name"] == "keyword"
                && let Some(schema) = p.get_mut("schema").and_then(|s| s.as_object_mut())
            {
                // ListQuery refuses control characters in a keyword.
                schema.insert("pattern".into(), json!("^[^\\x00-\\x1f\\x7f-\\x9f]*$"));
            }
            if let (Some((min, max)), Some(schema)) = (bounds, p.get_mut("schema").and_then(|s| s.as_object_mut()))
                && schema.get("type").is_some_and(|t| t == "integer" || t.as_array().is_some_and(|a| a.contains(&json!("integer"))))
            {
                schema.insert("minimum".into(), json!(min));
                schema.insert("maximum".into(), json!(max));
            }
        }
    }
    let has_input = !seen.is_empty() || op.contains_key("requestBody");
    let secured =
        op.get("security").and_then(|s| s.as_array()).is_some_and(|s| s.iter().any(|r| r.as_object().is_some_and(|r| !r.is_empty())));
    let docs_interface = path.starts_with("/api/docs");
    let Some(responses) = op.get_mut("responses").and_then(|r| r.as_object_mut()) else { return };
    let declared =
        [("503", !path.ends_with("/healthz/live")), ("400", has_input), ("404", has_path_param), ("401", secured), ("403", secured)];
    for (status, applies) in declared {
        if applies {
            responses.entry(status).or_insert_with(|| json!({}));
        }
    }
    for (status, response) in responses.iter_mut() {
        let Some(response) = response.as_object_mut() else { continue };
        if response.get("description").and_then(|d| d.as_str()).is_none_or(|d| d.trim().is_empty()) {
            response.insert("description".into(), json!(reason(status)));
        }
        if status.starts_with('2') {
            let code = if docs_interface { 0 } else { status.parse::<i64>().unwrap_or(200) };
            let data = response
                .get("content")
                .and_then(|c| c.pointer("/application~1json/schema"))
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
            response.insert("content".into(), json!({"application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}}));
            if status == "503" || status == "429" {
                response.insert(
                    "headers".into(),
                    json!({"Retry-After": {"description": "Seconds to wait before trying again", "schema": {"type": "integer"}}}),
                );
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
