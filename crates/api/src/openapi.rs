use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::routes::{
    audit, auth, campaigns, doc_admin, docs, employees, health, orders, partners, payments, payroll, releases, roles, tenants, users,
};

/// The OpenAPI document served at `/api/v1/openapi.json`.
#[derive(OpenApi)]
#[openapi(
    info(title = "Atrium", description = "Management backend: identity, org records, payroll, orders, mini-programs and documents. \
        Every /api/v1 response is an envelope {code, message, data} whose code equals the HTTP status; on /api/docs/ \
        a success has code 0. Errors are the ErrorEnvelope, whose data is null, lists the fields at fault, or carries a platform's own {errcode, errmsg}."),
    paths(
        health::healthz, health::live, health::ready,
        auth::login, auth::refresh, auth::logout, auth::me, auth::send_code, auth::register, auth::reset_password,
        auth::chat_qr, auth::chat_qr_status, auth::chat_qr_callback, auth::chat_bind,
        users::list, users::get, users::create, users::update, users::delete,
        partners::list, partners::get, partners::create, partners::update, partners::delete,
        partners::get_share_plan, partners::put_share_plan, partners::earnings,
        tenants::list, tenants::get, tenants::create, tenants::update, tenants::delete,
        employees::list, employees::get, employees::create, employees::update, employees::delete, employees::tax_year,
        payroll::list, payroll::get, payroll::create, payroll::update, payroll::calculate, payroll::approve, payroll::send,
        payroll::export, payroll::bank_file, payroll::import_template, payroll::import,
        roles::list, roles::permissions, roles::get, roles::create, roles::update, roles::delete,
        audit::list,
        docs::create_document, docs::get_document, docs::document_tree,
        doc_admin::list_projects, doc_admin::create_project, doc_admin::get_project,
        doc_admin::list_tokens, doc_admin::create_token, doc_admin::revoke_token,
        payments::get_config, payments::put_config, payments::upload_keys, payments::test, payments::unified_order,
        payments::query, payments::refund, payments::close, payments::reconciliation, payments::notify,
        payments::list_shares, payments::retry_share, payments::list_discrepancies, payments::get_discrepancy, payments::resolve_discrepancy,
        payments::get_provider, payments::put_provider, payments::platform_earnings, payments::upload_provider_keys, payments::test_provider,
        orders::list, orders::get, orders::create, orders::pay, orders::refund,
        releases::authorization, releases::authorization_callback, releases::upload, releases::upload_tasks, releases::upload_task,
        releases::submit_audit, releases::audit_status, releases::audit_tasks, releases::publish, releases::rollback,
        releases::versions, releases::experience_qr, releases::audit_quota, releases::speedup_audit, releases::undo_audit,
        releases::domains, releases::put_domains, releases::privacy, releases::put_privacy, releases::preflight,
        campaigns::create_campaign, campaigns::list_campaigns, campaigns::campaign, campaigns::campaign_tenants,
        campaigns::start_campaign, campaigns::pause_campaign, campaigns::resume_campaign, campaigns::advance_campaign,
        campaigns::cancel_campaign, campaigns::retry_campaign, releases::component_events, releases::component_messages,
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
        (name = "payments", description = "A tenant's merchant account on the pay platform, payment transactions, refunds, notifications and reconciliation"),
        (name = "miniprogram", description = "A tenant's mini-program code releases through our third-party platform: \
            authorisation, uploads, audits, gray and full releases, rollbacks, and the platform's pushed events"),
        (name = "orders", description = "A tenant's orders, paid through its mini-program or offline, and refunded"),
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

/// The document as served: the derived one with the `contract` applied. It is JSON, not
/// utoipa's model, because the model has no room for some of what JSON Schema says (`not`).
/// Built once per process (every worker's app serves the same one).
pub fn document() -> serde_json::Value {
    static DOCUMENT: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();
    DOCUMENT
        .get_or_init(|| {
            let mut doc = serde_json::to_value(ApiDoc::openapi()).unwrap_or_else(|_| serde_json::json!({}));
            contract(&mut doc);
            doc
        })
        .clone()
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
fn contract(doc: &mut serde_json::Value) {
    use serde_json::json;
    if let Some(schemas) = doc.pointer_mut("/components/schemas").and_then(|s| s.as_object_mut()) {
        let reasons: Vec<&'static str> = atrium_kernel::Reason::all().map(|r| r.as_str()).collect();
        schemas.insert(
            "ErrorEnvelope".into(),
            json!({
                "type": "object",
                "description": "An error: `code` is the HTTP status, `message` says what went wrong in English, `data.reason` says why as a \
                    stable name a program can branch on (each operation lists its own in `x-reasons`), and `data` may also list the \
                    fields at fault (`errors`) or carry a platform's own error code (`errcode`, `errmsg`).",
                "required": ["code", "message", "data"],
                "properties": {
                    "code": {"type": "integer"},
                    "message": {"type": "string"},
                    "data": {
                        "type": "object",
                        "required": ["reason"],
                        "properties": {
                            "reason": {"$ref": "#/components/schemas/Reason"},
                            "errors": {"type": "array", "description": "The fields (or items) at fault", "items": {
                                "type": "object", "required": ["field", "message"],
                                "properties": {"field": {"type": "string"}, "message": {"type": "string"}}
                            }},
                            "errcode": {"type": "integer", "description": "A platform's own error code (502 `platform_refused`)"},
                            "errmsg": {"type": "string", "description": "A platform's own error message (502 `platform_refused`)"},
                            "fail_reason": {"type": "string", "description": "A platform's own reason a step it had to carry out first failed (409 `return_failed`)"}
                        }
                    }
                }
            }),
        );
        schemas.insert(
            "Reason".into(),
            json!({"type": "string", "enum": reasons, "description": "Why a request was refused; see docs/api-guide.md for each name"}),
        );
        schemas.insert(
            "DocsErrorEnvelope".into(),
            json!({
                "type": "object",
                "description": "An error of the document interface: `code` is the HTTP status, `message` says what went wrong, `data` is null.",
                "required": ["code", "message", "data"],
                "properties": {"code": {"type": "integer"}, "message": {"type": "string"}, "data": {"type": "null"}}
            }),
        );
    }
    input_money(doc);
    object_rules(doc);
    let Some(paths) = doc.get_mut("paths").and_then(|p| p.as_object_mut()) else { return };
    for (path, item) in paths.iter_mut() {
        let Some(item) = item.as_object_mut() else { continue };
        for (method, op) in item.iter_mut() {
            if ["get", "put", "post", "delete", "patch"].contains(&method.as_str()) {
                operation(path, op);
            }
        }
    }
    links(doc);
}

const SCHEMA_REF: &str = "#/components/schemas/";

/// Rules between the fields of one request object, which the derive cannot state.
fn object_rules(doc: &mut serde_json::Value) {
    use serde_json::json;
    // UserService::create: a new user belongs to a partner or a tenant, never both.
    let rules = [
        (
            "NewUser",
            json!({"not": {"required": ["partner_id", "tenant_id"], "properties": {"partner_id": {"type": "integer"}, "tenant_id": {"type": "integer"}}}}),
        ),
        // PaymentService::upload_keys: at least one of the three PEM parts.
        // and no part besides the form's.
        (
            "KeyUploadForm",
            json!({
                "additionalProperties": false,
                "anyOf": [{"required": ["private_key"]}, {"required": ["certificate"]}, {"required": ["platform_public_key"]}],
                "dependentRequired": {"platform_public_key": ["platform_public_key_id"]},
            }),
        ),
        // PaymentService::upload_provider_keys: the same rule, and no `tenant_id`.
        (
            "ProviderKeyUploadForm",
            json!({
                "additionalProperties": false,
                "anyOf": [{"required": ["private_key"]}, {"required": ["certificate"]}, {"required": ["platform_public_key"]}],
                "dependentRequired": {"platform_public_key": ["platform_public_key_id"]},
            }),
        ),
        // PaymentService::put_config: each mode's fields. Said in words, not as a `oneOf` over
        // `required`, which client generators cannot type.
        (
            "PaymentConfigPut",
            json!({"description": "`PUT /miniprogram/payment/config`. Direct mode (`mode` \"direct\", or absent while the tenant is \
                direct) requires `mchid` and `appid` and takes `api_v3_key`; sub-merchant mode (`mode` \"sub_merchant\", or absent \
                while the tenant is one) requires `sub_mchid` and takes `sub_appid`. A field of the other mode is a 400 naming it. \
                A tenant caller may leave out `tenant_id`; platform and partner callers name it."}),
        ),
        // PaymentService::put_share_plan: what a merchant receiver needs.
        (
            "ReceiverInput",
            json!({"description": "A `MERCHANT_ID` receiver's `account` is a merchant id (digits) and its `name` the merchant's \
                registered name (required); a `PERSONAL_OPENID` receiver's `account` is the person's openid in the service \
                provider's app and its `name` is optional."}),
        ),
        // PublishRequest::release_mode: a percentage with `gray` only.
        (
            "PublishRequest",
            json!({"oneOf": [
                {"properties": {"mode": {"const": "full"}, "gray_percentage": {"type": "null"}}},
                {"required": ["gray_percentage"], "properties": {"mode": {"const": "gray"}, "gray_percentage": {"type": "integer"}}},
            ]}),
        ),
        // read_package_form: the form's parts and no other.
        ("PackageUploadForm", json!({"additionalProperties": false})),
        // payroll's read_file_part: the one part `file` and no other.
        ("ItemImportForm", json!({"additionalProperties": false})),
        // The event URLs read the platform's flat `<xml>` and nothing else.
        ("EncryptedPush", json!({"additionalProperties": false})),
        // OrderService::create: an amount, or items it is the sum of (or both, agreeing). Said
        // in words, not as an `anyOf` over `required`, which client generators cannot type.
        (
            "NewOrder",
            json!({"description": "`POST /orders`: an `amount`, or `items` whose sum is the amount, or both when they agree \
                (400 naming `amount` otherwise). A tenant caller may leave out `tenant_id`; platform and partner callers name it."}),
        ),
    ];
    for (name, rule) in rules {
        if let (Some(schema), Some(rule)) =
            (doc.pointer_mut(&format!("/components/schemas/{name}")).and_then(|s| s.as_object_mut()), rule.as_object())
        {
            schema.extend(rule.clone());
        }
    }
}

/// The names of the component schemas `value` refers to, directly.
fn schema_refs(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            if let Some(name) = map.get("$ref").and_then(|r| r.as_str()).and_then(|r| r.strip_prefix(SCHEMA_REF)) {
                out.push(name.to_owned());
            }
            map.values().for_each(|v| schema_refs(v, out));
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| schema_refs(v, out)),
        _ => {}
    }
}

/// `Money` read from a request is an amount a caller enters, which its deserialiser bounds
/// to `0..=Money::MAX_INPUT`; computed figures in answers are not bounded. So every schema a
/// request body reaches refers to `MoneyInput`, which carries the bounds, instead of `Money`.
fn input_money(doc: &mut serde_json::Value) {
    let money = format!("{SCHEMA_REF}Money");
    let mut todo = vec![];
    if let Some(paths) = doc.get("paths").and_then(|p| p.as_object()) {
        for op in paths.values().filter_map(|item| item.as_object()).flat_map(|item| item.values()) {
            if let Some(body) = op.get("requestBody") {
                schema_refs(body, &mut todo);
            }
        }
    }
    let Some(schemas) = doc.pointer_mut("/components/schemas").and_then(|s| s.as_object_mut()) else { return };
    let mut reached = std::collections::BTreeSet::new();
    while let Some(name) = todo.pop() {
        if reached.insert(name.clone())
            && let Some(schema) = schemas.get(&name)
        {
            schema_refs(schema, &mut todo);
        }
    }
    fn rewrite(value: &mut serde_json::Value, from: &str, to: &str) {
        match value {
            serde_json::Value::Object(map) => {
                if map.get("$ref").and_then(|r| r.as_str()) == Some(from) {
                    map.insert("$ref".into(), serde_json::json!(to));
                }
                map.values_mut().for_each(|v| rewrite(v, from, to));
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(|v| rewrite(v, from, to)),
            _ => {}
        }
    }
    let input = format!("{SCHEMA_REF}MoneyInput");
    for name in &reached {
        if let Some(schema) = schemas.get_mut(name) {
            rewrite(schema, &money, &input);
        }
    }
    schemas.insert(
        "MoneyInput".into(),
        serde_json::json!({
            "type": "integer",
            "format": "int64",
            "minimum": 0,
            "maximum": atrium_kernel::Money::MAX_INPUT.fen(),
            "description": "An amount in fen (1 yuan = 100 fen), from 0 to 10,000,000,000.00 yuan",
        }),
    );
    if let Some(paths) = doc.get_mut("paths").and_then(|p| p.as_object_mut()) {
        for op in paths.values_mut().filter_map(|item| item.as_object_mut()).flat_map(|item| item.values_mut()) {
            if let Some(body) = op.get_mut("requestBody") {
                rewrite(body, &money, &input);
            }
        }
    }
}

/// Links from each create (`POST /x`) to the operations on what it created (`/x/{id}`,
/// `/x/{id}/…`), with `id` taken from the answer's `data.id`: how a client, or the fuzzer's
/// stateful phase, goes from a new record to reading, changing and deleting it.
fn links(doc: &mut serde_json::Value) {
    use serde_json::json;
    let with_id: std::collections::HashSet<String> = doc
        .pointer("/components/schemas")
        .and_then(|s| s.as_object())
        .into_iter()
        .flatten()
        .filter(|(_, schema)| schema.pointer("/properties/id").is_some())
        .map(|(name, _)| format!("{SCHEMA_REF}{name}"))
        .collect();
    let Some(paths) = doc.get_mut("paths").and_then(|p| p.as_object_mut()) else { return };
    let mut targets: Vec<(String, String, String)> = vec![];
    for (path, item) in paths.iter() {
        for (method, op) in item.as_object().into_iter().flatten() {
            if let Some(id) = op.get("operationId").and_then(|i| i.as_str()) {
                targets.push((path.clone(), method.clone(), id.to_owned()));
            }
        }
    }
    for (path, item) in paths.iter_mut() {
        if path.contains('{') {
            continue;
        }
        let Some(ok) = item.pointer_mut("/post/responses/200") else { continue };
        let creates_a_record = ok.pointer("/content/application~1json/schema/properties/data").is_some_and(|data| {
            data.pointer("/properties/id").is_some() || data.get("$ref").and_then(|r| r.as_str()).is_some_and(|r| with_id.contains(r))
        });
        if !creates_a_record {
            continue;
        }
        let base = format!("{}/{{id}}", path.trim_end_matches('/'));
        let mut links = serde_json::Map::new();
        for (target, method, id) in &targets {
            let suffix = target.strip_prefix(&base);
            if suffix.is_some_and(|s| s.is_empty() || s.starts_with('/')) && target.matches('{').count() == 1 {
                links.insert(
                    format!("{method}{}", suffix.unwrap_or_default().replace('/', "_")),
                    json!({"operationId": id, "parameters": {"id": "$response.body#/data/id"}}),
                );
            }
        }
        if !links.is_empty()
            && let Some(ok) = ok.as_object_mut()
        {
            ok.insert("links".into(), serde_json::Value::Object(links));
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
                // ListQuery refuses control characters in a keyword, and long ones.
                schema.insert("pattern".into(), json!("^[^\\x00-\\x1f\\x7f-\\x9f]*$"));
                schema.insert("maxLength".into(), json!(atrium_kernel::ListQuery::<()>::MAX_KEYWORD_CHARS));
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
    // Public operations say so (an empty requirement list); an operation that checks a
    // permission names it as the bearer requirement's role, in `x-permission` and in words.
    if !op.contains_key("security") {
        op.insert("security".into(), json!([]));
    }
    let permission = op
        .get("security")
        .and_then(|s| s.as_array())
        .and_then(|s| s.iter().find_map(|r| r.get("bearer")?.as_array()?.first()?.as_str().map(str::to_owned)));
    if let Some(permission) = permission {
        let description = op.get("description").and_then(|d| d.as_str()).unwrap_or_default().trim_end().to_owned();
        let sentence = format!("Requires the permission `{permission}`.");
        let description = if description.is_empty() { sentence } else { format!("{description}\n\n{sentence}") };
        op.insert("description".into(), json!(description));
        op.insert("x-permission".into(), json!(permission));
    }
    let secured =
        op.get("security").and_then(|s| s.as_array()).is_some_and(|s| s.iter().any(|r| r.as_object().is_some_and(|r| !r.is_empty())));
    let docs_interface = crate::docs_interface::serves(path);
    // A body may name records too (`tenant_id`, `role_ids`, `parent`): 404 naming the field.
    let names_records = has_path_param || (secured && op.contains_key("requestBody"));
    let operation_id = op.get("operationId").and_then(|i| i.as_str()).unwrap_or_default().to_owned();
    let with_permission = op.contains_key("x-permission");
    let Some(responses) = op.get_mut("responses").and_then(|r| r.as_object_mut()) else { return };
    let own_statuses =
        crate::reasons::BY_OPERATION.iter().filter(|(id, _, _)| *id == operation_id).map(|(_, status, _)| (status.to_string(), true));
    let declared =
        [("503", !path.ends_with("/healthz/live")), ("400", has_input), ("404", names_records), ("401", secured), ("403", secured)]
            .into_iter()
            .map(|(status, applies)| (status.to_owned(), applies))
            .chain(own_statuses)
            .collect::<Vec<_>>();
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
        if status == "204" {
            // No Content has no body, envelope or not.
            response.remove("content");
        } else if status.starts_with('2') && non_json(response) {
            // An image or the platform's literal `success`: what the route declares.
        } else if status.starts_with('2') {
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
            // An error a route describes with its own body (the notify route answers in the
            // pay platform's format) keeps it; every other error is the ErrorEnvelope (on the
            // document interface, its own), and names the reasons it can give.
            if !response.contains_key("content") {
                let envelope = if docs_interface { "DocsErrorEnvelope" } else { "ErrorEnvelope" };
                response.insert("content".into(), json!({"application/json": {"schema": {"$ref": format!("{SCHEMA_REF}{envelope}")}}}));
                let reasons = crate::reasons::of(&operation_id, status.parse().unwrap_or_default(), with_permission);
                if !docs_interface && !reasons.is_empty() {
                    let names: Vec<&str> = reasons.iter().map(|r| r.as_str()).collect();
                    let listed = names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
                    let description =
                        response.get("description").and_then(|d| d.as_str()).unwrap_or_default().trim_end_matches('.').to_owned();
                    response.insert("description".into(), json!(format!("{description}. `data.reason`: {listed}")));
                    response.insert("x-reasons".into(), json!(names));
                }
            }
            if status == "503" || status == "429" {
                response.insert(
                    "headers".into(),
                    json!({"Retry-After": {"description": "Seconds to wait before trying again", "schema": {"type": "integer"}}}),
                );
            }
        }
    }
}

/// Whether a response declares content, none of it JSON (an image, plain text).
fn non_json(response: &serde_json::Map<String, serde_json::Value>) -> bool {
    response.get("content").and_then(|c| c.as_object()).is_some_and(|c| !c.is_empty() && !c.contains_key("application/json"))
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
                // The pay platform's notify route answers in the platform's own format.
                let platform_format = path.contains("/payment/notify/");
                if status == "204" {
                    assert!(response.get("content").is_none(), "{method} {path} 204 has a body");
                } else if platform_format && !status.starts_with('2') {
                    assert_eq!(schema["$ref"], "#/components/schemas/NotifyFailure", "{method} {path} {status}");
                } else if status.starts_with('2') && (path.ends_with("/experience-qr") || path.contains("/component/")) {
                    // An image, and the platform's literal `success`.
                    let content = response["content"].as_object().expect("content");
                    assert!(!content.contains_key("application/json") && content.len() == 1, "{method} {path} {status}");
                } else if status.starts_with('2') && ["/export", "/bank-file", "/import-template"].iter().any(|p| path.ends_with(p)) {
                    // Payroll's spreadsheet files: xlsx and csv, or csv in two encodings.
                    let content = response["content"].as_object().expect("content");
                    assert!(!content.contains_key("application/json") && content.len() == 2, "{method} {path} {status}");
                } else if status.starts_with('2') {
                    let code = &schema["properties"]["code"]["enum"][0];
                    let expected = if path.starts_with("/api/docs") { 0 } else { status.parse::<i64>().unwrap_or_default() };
                    assert_eq!(code, &serde_json::json!(expected), "{method} {path} {status}");
                    assert!(schema["properties"].get("data").is_some(), "{method} {path} {status} has no data");
                } else if path.starts_with("/api/docs") {
                    assert_eq!(schema["$ref"], "#/components/schemas/DocsErrorEnvelope", "{method} {path} {status}");
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
    fn a_token_route_names_its_permission_and_a_public_one_says_it_is_public() {
        // Routes that need a session but no permission.
        let session_only = ["/api/v1/auth/logout", "/api/v1/auth/me", "/api/v1/auth/chat-bind"];
        let mut named = 0;
        for (method, path, op) in operations(&document()) {
            let security = op["security"].as_array().unwrap_or_else(|| panic!("{method} {path} has no security"));
            let bearer = security.iter().find_map(|r| r.get("bearer"));
            match (bearer, op.get("x-permission")) {
                (Some(roles), Some(p)) => {
                    let p = p.as_str().unwrap_or_default();
                    assert_eq!(roles, &serde_json::json!([p]), "{method} {path}");
                    assert!(
                        atrium_kernel::permission::CATALOGUE.iter().any(|c| c.name == p),
                        "{method} {path}: {p} is not in the catalogue"
                    );
                    assert!(op["description"].as_str().unwrap_or_default().contains(&format!("`{p}`")), "{method} {path}");
                    named += 1;
                }
                (Some(_), None) => assert!(session_only.contains(&path.as_str()), "{method} {path} names no permission"),
                (None, Some(_)) => panic!("{method} {path} names a permission without a bearer token"),
                (None, None) => {}
            }
        }
        assert!(named >= 40, "only {named} operations name a permission");
    }

    /// Every (method, path) the route tables register, read from their source: each
    /// `web::resource("…")` and the `.route(web::<method>()` calls chained to it.
    fn registered_routes() -> std::collections::BTreeSet<(String, String)> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files: Vec<_> = std::fs::read_dir(dir.join("routes")).expect("routes dir").flatten().map(|e| e.path()).collect();
        files.push(dir.join("app.rs"));
        let mut out = std::collections::BTreeSet::new();
        for file in files {
            let source = std::fs::read_to_string(&file).expect("route source");
            let name = file.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
            let prefix = match name.as_str() {
                "app.rs" => "",
                "docs.rs" => "/api/docs",
                _ => "/api/v1",
            };
            for chunk in source.split("web::resource(").skip(1) {
                let Some((arg, rest)) = chunk.split_once(')') else { continue };
                let rest = rest.split(".service(").next().unwrap_or_default().split(';').next().unwrap_or_default();
                // `["", "/"]` registers one resource under two spellings: the document has "/".
                let path = arg.split('"').skip(1).step_by(2).last().filter(|p| !p.is_empty()).unwrap_or("/");
                for method in rest.split(".route(web::").skip(1) {
                    let method = method.split("()").next().unwrap_or_default().to_owned();
                    out.insert((method, format!("{prefix}{path}")));
                }
            }
        }
        // Prometheus text, not JSON: an operator's endpoint, documented in docs/operations.md.
        out.remove(&("get".to_owned(), "/metrics".to_owned()));
        out
    }

    #[test]
    fn every_route_is_in_the_document_and_every_operation_is_routed() {
        let routes = registered_routes();
        assert!(routes.len() >= 50, "only {} routes found in the source: {routes:?}", routes.len());
        let documented: std::collections::BTreeSet<(String, String)> =
            operations(&document()).into_iter().map(|(method, path, _)| (method, path)).collect();
        let undocumented: Vec<_> = routes.difference(&documented).collect();
        let unrouted: Vec<_> = documented.difference(&routes).collect();
        assert!(undocumented.is_empty(), "routes missing from the document: {undocumented:?}");
        assert!(unrouted.is_empty(), "documented operations with no route: {unrouted:?}");
    }

    #[test]
    fn every_error_of_the_main_interface_lists_its_reasons() {
        let doc = document();
        let known: HashSet<String> = atrium_kernel::Reason::all().map(|r| r.as_str().to_owned()).collect();
        let enumerated: HashSet<String> = doc["components"]["schemas"]["Reason"]["enum"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r.as_str().map(str::to_owned))
            .collect();
        assert_eq!(enumerated, known, "the Reason schema lists every reason");
        let mut ids = HashSet::new();
        for (method, path, op) in operations(&doc) {
            ids.insert(op["operationId"].as_str().unwrap_or_default().to_owned());
            if path.starts_with("/api/docs") || path.contains("/payment/notify/") {
                continue;
            }
            for (status, response) in op["responses"].as_object().expect("responses").iter() {
                if status.starts_with('2') {
                    continue;
                }
                let reasons = response["x-reasons"].as_array().unwrap_or_else(|| panic!("{method} {path} {status} lists no reasons"));
                assert!(!reasons.is_empty(), "{method} {path} {status} lists no reasons");
                for r in reasons {
                    let name = r.as_str().unwrap_or_default();
                    assert!(known.contains(name), "{method} {path} {status}: {name} is not a reason");
                    assert!(
                        response["description"].as_str().unwrap_or_default().contains(&format!("`{name}`")),
                        "{method} {path} {status}"
                    );
                }
            }
        }
        // docs/api-guide.md explains every reason a client can meet.
        let guide =
            std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/api-guide.md")).expect("the guide");
        for name in &known {
            assert!(guide.contains(&format!("| `{name}` |")), "docs/api-guide.md does not explain the reason {name}");
        }
        for (id, status, reasons) in crate::reasons::BY_OPERATION {
            assert!(ids.contains(*id), "the reasons table names {id}, which is no operation");
            assert!(!reasons.is_empty(), "{id} {status}");
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
