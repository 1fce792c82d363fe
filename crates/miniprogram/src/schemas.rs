//! Schemas of the OpenAPI document for fields whose rule is the service's own check, stated
//! exactly as the check accepts, so a client (or a fuzzer) generating from the document sends
//! what is accepted.
use atrium_kernel::schema::{TEXT_PATTERN, schema_from_json, string_schema};
use serde_json::json;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::Schema;

/// A host name: labels of lower-case letters, digits and inner hyphens (1–63 characters), at
/// least two of them, the last starting with a letter.
const HOST: &str = "([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\\.)+[a-z]([a-z0-9-]{0,61}[a-z0-9])?";

fn hosts(schemes: &str) -> RefOr<Schema> {
    schema_from_json(json!({
        "type": "array",
        "maxItems": crate::service::MAX_DOMAINS,
        "uniqueItems": true,
        "items": {
            "type": "string",
            "maxLength": crate::service::MAX_DOMAIN_CHARS,
            "pattern": format!("^({schemes})://{HOST}$"),
        },
    }))
}

/// A list of `https://` host names.
pub(crate) fn https_hosts() -> RefOr<Schema> {
    hosts("https")
}

/// A list of `https://` or `wss://` host names.
pub(crate) fn socket_hosts() -> RefOr<Schema> {
    hosts("https|wss")
}

/// 1–200 characters of text: no control characters, something besides white space.
pub(crate) fn short_text() -> RefOr<Schema> {
    string_schema("1 to 200 characters, no control characters", Some(TEXT_PATTERN), Some(1), Some(crate::service::MAX_PRIVACY_TEXT))
}

/// An e-mail address as the privacy check takes it.
pub(crate) fn email() -> RefOr<Schema> {
    string_schema(
        "an e-mail address",
        Some("^[^@\\u0000-\\u001f\\u007f-\\u009f]+@[^\\u0000-\\u001f\\u007f-\\u009f]*\\.[^\\u0000-\\u001f\\u007f-\\u009f]*$"),
        Some(3),
        Some(crate::service::MAX_PRIVACY_CONTACT),
    )
}

/// A phone number: digits, `+` and `-`.
pub(crate) fn phone() -> RefOr<Schema> {
    string_schema("digits, + and -", Some("^[0-9+\\-]+$"), Some(1), Some(crate::service::MAX_PRIVACY_CONTACT))
}

/// A QQ number: digits.
pub(crate) fn qq() -> RefOr<Schema> {
    string_schema("digits", Some("^[0-9]+$"), Some(1), Some(crate::service::MAX_PRIVACY_CONTACT))
}

/// `schema`, or `null`: an optional field a client may also send as `null` (as leaving it out).
fn or_null(schema: RefOr<Schema>) -> RefOr<Schema> {
    let mut value = serde_json::to_value(&schema).unwrap_or_default();
    value["type"] = json!(["string", "null"]);
    schema_from_json(value)
}

/// [`email`], or `null`.
pub(crate) fn email_or_null() -> RefOr<Schema> {
    or_null(email())
}

/// [`phone`], or `null`.
pub(crate) fn phone_or_null() -> RefOr<Schema> {
    or_null(phone())
}

/// A Weixin id as a contact, or `null`: 1–128 characters of text.
pub(crate) fn contact_text_or_null() -> RefOr<Schema> {
    or_null(string_schema(
        "1 to 128 characters, no control characters",
        Some(TEXT_PATTERN),
        Some(1),
        Some(crate::service::MAX_PRIVACY_CONTACT),
    ))
}

/// [`qq`], or `null`.
pub(crate) fn qq_or_null() -> RefOr<Schema> {
    or_null(qq())
}
