use actix_web::dev::Payload;
use actix_web::http::header;
use actix_web::web::{self, Bytes};
use actix_web::{FromRequest, HttpMessage, HttpRequest};
use atrium_identity::{ClientInfo, Principal};
use atrium_kernel::{Actor, Error, FieldError};
use serde::de::DeserializeOwned;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;

use crate::app::AppState;
use crate::error::ApiError;
use crate::request_id::RequestId;

/// Body limit for JSON requests unless the app configures another (`web::JsonConfig` is not
/// used: this extractor reports errors by field).
#[derive(Debug, Clone, Copy)]
pub struct JsonLimit(pub usize);

impl Default for JsonLimit {
    fn default() -> Self {
        JsonLimit(1024 * 1024)
    }
}

/// A JSON body. Malformed JSON, a wrong type, a missing or unknown field is a 400 that names
/// the field; a body over the limit is a 413; a wrong content type a 400.
pub struct Json<T>(pub T);

impl<T: DeserializeOwned + 'static> FromRequest for Json<T> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let body = JsonBody::<T>::from_request(req, payload);
        Box::pin(async move { body.await.map(|b| Json(b.value)) })
    }
}

/// A JSON body with the bytes it was read from (for `Idempotency-Key`, which compares
/// bodies): the same checks and errors as [`Json`].
pub struct JsonBody<T> {
    pub value: T,
    pub bytes: Bytes,
}

impl<T: DeserializeOwned + 'static> FromRequest for JsonBody<T> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let limit = req.app_data::<JsonLimit>().copied().unwrap_or_default().0;
        let content_type_ok = req
            .mime_type()
            .ok()
            .flatten()
            .map(|m| m.subtype() == "json" || m.suffix().map(|s| s.as_str()) == Some("json"))
            .unwrap_or(false);
        let declared_len = req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<usize>().ok());
        let fut = Bytes::from_request(req, payload);
        Box::pin(async move {
            if !content_type_ok {
                return Err(ApiError::bad_request("Content-Type must be application/json"));
            }
            if declared_len.is_some_and(|n| n > limit) {
                return Err(ApiError(Error::TooLarge(format!("request body is larger than {limit} bytes"))));
            }
            let body = fut.await.map_err(|e| {
                if e.as_response_error().status_code() == actix_web::http::StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError(Error::TooLarge(format!("request body is larger than {limit} bytes")))
                } else {
                    ApiError::bad_request(format!("cannot read request body: {e}"))
                }
            })?;
            if body.len() > limit {
                return Err(ApiError(Error::TooLarge(format!("request body is larger than {limit} bytes"))));
            }
            let value = parse_json(&body)?;
            Ok(JsonBody { value, bytes: body })
        })
    }
}

/// Deserialises with the path of the failing field in the error. The whole body must be one
/// JSON value: trailing bytes after it are refused.
pub fn parse_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    // Every body of this API is an object; serde would also fill a struct from an array,
    // by position, which no caller means.
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(ApiError::bad_request("request body must be a JSON object"));
    }
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = match serde_path_to_error::deserialize(&mut de) {
        Ok(value) => value,
        // JSON has one kind of number: `704.0` is the integer 704 (JSON Schema agrees), but
        // serde refuses a float where it wants an integer. Only then, and only if the body
        // has such numbers, is it read again with whole floats made integers.
        Err(e) if e.inner().to_string().contains("floating point") => match whole_numbers(body) {
            Some(normalised) => return serde_path_to_error::deserialize(normalised).map_err(field_error),
            None => return Err(field_error(e)),
        },
        Err(e) => return Err(field_error(e)),
    };
    de.end().map_err(|_| ApiError::bad_request("malformed JSON: unexpected data after the JSON value"))?;
    Ok(value)
}

/// `body` with every whole float that fits an i64 (`704.0`, `-3e2`) written as an integer, if
/// it has any; `None` when nothing changes.
fn whole_numbers(body: &[u8]) -> Option<serde_json::Value> {
    fn walk(v: &mut serde_json::Value) -> bool {
        match v {
            serde_json::Value::Number(n) if !(n.is_i64() || n.is_u64()) => {
                // Only where a float holds every integer exactly (±2⁵³): past it, an integer too
                // large for i64 that serde read as a float would round into range.
                match n.as_f64() {
                    Some(f) if f.fract() == 0.0 && (-9_007_199_254_740_992.0..=9_007_199_254_740_992.0).contains(&f) => {
                        *v = serde_json::Value::from(f as i64);
                        true
                    }
                    _ => false,
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().fold(false, |changed, x| walk(x) | changed),
            serde_json::Value::Object(map) => map.values_mut().fold(false, |changed, x| walk(x) | changed),
            _ => false,
        }
    }
    let mut value: serde_json::Value = serde_json::from_slice(body).ok()?;
    walk(&mut value).then_some(value)
}

/// A deserialisation error as the caller's 400, naming the field at fault.
fn field_error(e: serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    let path = e.path().to_string();
    let inner = e.into_inner();
    let msg = inner.to_string();
    // The path of "missing field `x`" stops at the parent object.
    let named = backticked(&msg);
    let field = if msg.starts_with("missing field") {
        match (path.as_str(), named) {
            (".", Some(n)) | ("", Some(n)) => n.to_owned(),
            (p, Some(n)) => format!("{p}.{n}"),
            (p, None) => p.to_owned(),
        }
    } else {
        path
    };
    if inner.is_syntax() || inner.is_eof() {
        return ApiError::bad_request(format!("malformed JSON: {}", strip_position(&msg)));
    }
    let message = caller_terms(strip_position(&msg));
    if field.is_empty() || field == "." {
        if message.starts_with("expected an object") {
            return ApiError::bad_request("request body must be a JSON object");
        }
        ApiError::bad_request(message)
    } else {
        ApiError(Error::Invalid(vec![FieldError::new(field, message)]))
    }
}

/// Rewrites serde's wording, which names Rust types ("expected struct NewEmployee with 17
/// elements", "expected i64"), into the JSON terms a caller knows.
pub(crate) fn caller_terms(msg: &str) -> String {
    let (got, expected) = match msg.split_once(", expected ") {
        Some((got, expected)) => (got, expected),
        None => return msg.to_owned(),
    };
    let expected = expected.trim();
    let kind = if expected.starts_with("struct ") || expected.starts_with("a map") || expected.starts_with("map") {
        "an object".to_owned()
    } else if expected.starts_with("a sequence") || expected.starts_with("tuple") || expected.starts_with("a tuple") {
        "an array".to_owned()
    } else if ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "usize", "isize", "an integer"].iter().any(|t| expected.starts_with(t))
    {
        "an integer".to_owned()
    } else if expected.starts_with("a boolean") {
        "true or false".to_owned()
    } else if expected.starts_with("a string") || expected.starts_with("a borrowed string") || expected.starts_with("String") {
        "a string".to_owned()
    } else if expected.starts_with("enum ") {
        "one of the allowed values".to_owned()
    } else if expected.starts_with("one of ") || expected.starts_with('`') {
        return msg.replace("variant", "value");
    } else if expected.starts_with("a ") || expected.starts_with("an ") {
        expected.split(" with ").next().unwrap_or(expected).to_owned()
    } else {
        "a value of another form".to_owned()
    };
    let got = got.strip_prefix("invalid type: ").or_else(|| got.strip_prefix("invalid value: ")).unwrap_or(got);
    if got.starts_with("invalid length") {
        return format!("expected {kind}");
    }
    format!("expected {kind}, got {}", got.split(" \"").next().unwrap_or(got))
}

fn backticked(msg: &str) -> Option<&str> {
    let start = msg.find('`')? + 1;
    let end = start + msg[start..].find('`')?;
    Some(&msg[start..end])
}

fn strip_position(msg: &str) -> &str {
    msg.find(" at line ").map(|i| &msg[..i]).unwrap_or(msg)
}

/// The caller's address for rate limits and the audit trail: the TCP peer, or the
/// forwarded client address when the app trusts a proxy in front.
#[derive(Debug, Clone)]
pub struct ClientIp(pub Option<String>);

/// Whether `X-Forwarded-For` / `Forwarded` are trusted (set only behind a proxy you run).
#[derive(Debug, Clone, Copy, Default)]
pub struct TrustProxy(pub bool);

pub(crate) fn client_ip(req: &HttpRequest) -> Option<String> {
    let trust = req.app_data::<TrustProxy>().copied().unwrap_or_default().0;
    if trust {
        req.connection_info()
            .realip_remote_addr()
            .map(|a| a.rsplit_once(':').filter(|(h, _)| !h.contains(':') || h.starts_with('[')).map(|(h, _)| h).unwrap_or(a).to_owned())
    } else {
        req.peer_addr().map(|a| a.ip().to_string())
    }
}

pub(crate) fn client_info(req: &HttpRequest) -> ClientInfo {
    ClientInfo {
        ip: client_ip(req),
        user_agent: req.headers().get(header::USER_AGENT).and_then(|v| v.to_str().ok()).map(str::to_owned),
        request_id: request_id(req),
    }
}

impl FromRequest for ClientIp {
    type Error = ApiError;
    type Future = std::future::Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        std::future::ready(Ok(ClientIp(client_ip(req))))
    }
}

pub(crate) fn request_id(req: &HttpRequest) -> Option<String> {
    req.extensions().get::<RequestId>().map(|r| r.0.clone())
}

/// An authenticated caller of `/api/v1`: a valid Bearer access token of a live session.
pub struct Auth {
    pub actor: Actor,
    pub principal: Arc<Principal>,
}

impl FromRequest for Auth {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let state = req.app_data::<web::Data<AppState>>().cloned();
        let token = bearer_token(req);
        let ip = client_ip(req);
        let request_id = request_id(req);
        Box::pin(async move {
            let state = state.ok_or_else(|| ApiError(Error::internal("application state missing")))?;
            let token = token.ok_or_else(|| ApiError::unauthenticated("missing Bearer access token"))??;
            let principal = state.identity.authenticate(&token).await?;
            let actor = Actor {
                user_id: principal.user.id,
                session_id: principal.session.id.clone(),
                party: principal.user.party,
                standing: principal.standing,
                permissions: principal.permissions.clone(),
                ip,
                request_id,
            };
            Ok(Auth { actor, principal })
        })
    }
}

/// `Some(Ok(token))` for `Authorization: Bearer <token>`, `Some(Err)` for another scheme.
fn bearer_token(req: &HttpRequest) -> Option<Result<String, ApiError>> {
    let value = req.headers().get(header::AUTHORIZATION)?;
    let value = value.to_str().unwrap_or_default().trim();
    let (scheme, token) = value.split_once(' ').unwrap_or((value, ""));
    if !scheme.eq_ignore_ascii_case("bearer") || token.trim().is_empty() {
        return Some(Err(ApiError::unauthenticated("the Authorization header must be 'Bearer <access token>'")));
    }
    Some(Ok(token.trim().to_owned()))
}

/// A permission string checked by [`Authorized`]; declare with [`permission!`](crate::permission).
pub trait Permission {
    const NAME: &'static str;
}

/// An authenticated caller holding the route's permission `P`; 401 without a valid token,
/// 403 without the permission. Every permission-checked route takes one.
pub struct Authorized<P: Permission> {
    pub actor: Actor,
    pub principal: Arc<Principal>,
    _p: PhantomData<P>,
}

impl<P: Permission + 'static> FromRequest for Authorized<P> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let auth = Auth::from_request(req, payload);
        Box::pin(async move {
            let Auth { actor, principal } = auth.await?;
            actor.require(P::NAME)?;
            Ok(Authorized { actor, principal, _p: PhantomData })
        })
    }
}

/// Declares permission marker types naming catalogue constants:
/// `permission!(UserRead = perm::USER_READ);`. A route can only require a permission the
/// kernel's catalogue holds.
#[macro_export]
macro_rules! permission {
    ($($name:ident = $value:path),* $(,)?) => {
        $(
            #[doc = "A catalogue permission as a route's type parameter."]
            pub struct $name;
            impl $crate::Permission for $name {
                const NAME: &'static str = $value.name;
            }
        )*
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Body {
        name: String,
        age: i64,
        inner: Option<Inner>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        x: i64,
    }

    fn field_of(err: ApiError) -> String {
        match err.0 {
            Error::Invalid(e) => e[0].field.clone(),
            other => panic!("expected a field error, got {other:?}"),
        }
    }

    #[test]
    fn an_unknown_field_is_named() {
        let err = parse_json::<Body>(br#"{"name":"a","age":1,"is_admin":true}"#).unwrap_err();
        assert_eq!(field_of(err), "is_admin");
    }

    #[test]
    fn a_wrong_type_names_its_field() {
        let err = parse_json::<Body>(br#"{"name":"a","age":"old"}"#).unwrap_err();
        assert_eq!(field_of(err), "age");
    }

    #[test]
    fn a_nested_field_is_named_by_its_path() {
        let err = parse_json::<Body>(br#"{"name":"a","age":1,"inner":{"x":"y"}}"#).unwrap_err();
        assert_eq!(field_of(err), "inner.x");
    }

    #[test]
    fn a_missing_field_is_named() {
        let err = parse_json::<Body>(br#"{"name":"a"}"#).unwrap_err();
        assert_eq!(field_of(err), "age");
    }

    #[test]
    fn trailing_bytes_after_the_body_are_refused() {
        let err = parse_json::<Body>(br#"{"name":"a","age":1}garbage"#).unwrap_err();
        assert!(matches!(err.0, Error::BadRequest(ref m) if m.contains("after the JSON value")), "{err:?}");
        let err = parse_json::<Body>(br#"{"name":"a","age":1}{"name":"b","age":2}"#).unwrap_err();
        assert!(matches!(err.0, Error::BadRequest(_)), "{err:?}");
        assert!(parse_json::<Body>(b"{\"name\":\"a\",\"age\":1}  \n").is_ok());
    }

    #[test]
    fn errors_speak_json_not_rust() {
        let err = parse_json::<Body>(br#"["a", 1]"#).unwrap_err();
        assert!(matches!(err.0, Error::BadRequest(ref m) if m == "request body must be a JSON object"), "{err:?}");
        let err = parse_json::<Body>(br#"{"name":"a","age":1,"inner":"text"}"#).unwrap_err();
        let message = match err.0 {
            Error::Invalid(e) => e[0].message.clone(),
            other => panic!("expected a field error, got {other:?}"),
        };
        assert!(!message.contains("struct") && !message.contains("Inner") && message.contains("object"), "{message}");
        let err = parse_json::<Body>(br#"{"name":"a","age":"old"}"#).unwrap_err();
        let message = match err.0 {
            Error::Invalid(e) => e[0].message.clone(),
            other => panic!("expected a field error, got {other:?}"),
        };
        assert_eq!(message, "expected an integer, got string");
    }

    #[test]
    fn a_whole_float_is_the_integer_it_equals() {
        let body = parse_json::<Body>(br#"{"name":"a","age":704.0,"inner":{"x":-3e2}}"#).unwrap();
        assert_eq!((body.age, body.inner.map(|i| i.x)), (704, Some(-300)));
        let err = parse_json::<Body>(br#"{"name":"a","age":704.5}"#).unwrap_err();
        assert_eq!(field_of(err), "age");
        let err = parse_json::<Body>(br#"{"name":"a","age":1e19}"#).unwrap_err();
        assert_eq!(field_of(err), "age");
        // Beyond i64, even where the float rounds to i64::MIN.
        let err = parse_json::<Body>(br#"{"name":"a","age":-9223372036854775809}"#).unwrap_err();
        assert_eq!(field_of(err), "age");
        // Exactly, as written: a fast float parser would read this as …263.2.
        let body = parse_json::<Body>(br#"{"name":"a","age":-2064871061458263.0}"#).unwrap();
        assert_eq!(body.age, -2_064_871_061_458_263);
        let err = parse_json::<Body>(br#"{"name":"a","age":1.0,"inner":{"x":"y"}}"#).unwrap_err();
        assert_eq!(field_of(err), "inner.x");
        let err = parse_json::<Body>(br#"{"name":"a","age":1.0} trailing"#).unwrap_err();
        assert!(matches!(err.0, Error::Invalid(_) | Error::BadRequest(_)), "{err:?}");
    }

    #[test]
    fn malformed_json_is_a_plain_400() {
        let err = parse_json::<Body>(br#"{"name":"#).unwrap_err();
        assert!(matches!(err.0, Error::BadRequest(ref m) if m.starts_with("malformed JSON")), "{err:?}");
    }
}
