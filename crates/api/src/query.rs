//! Query strings into typed parameters.
//!
//! The OpenAPI document types numeric parameters as JSON Schema `integer`, which is any
//! number with no fractional part: `67`, `67.0` and `6.7e1` are the same integer. A client
//! generated from the document, or one that formats every number as a float, may send any of
//! them, so a numeric parameter reads each; `67.5` is refused. Errors name the parameter.

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest};
use serde::de::value::{CowStrDeserializer, MapDeserializer};
use serde::de::{self, DeserializeOwned, IntoDeserializer, Visitor};
use std::borrow::Cow;
use std::str::FromStr;

use crate::error::ApiError;

/// Query parameters (`?page=2&status=paid`), refused with a 400 in the envelope of the
/// interface the request is on (the main or the document interface), naming the parameter.
#[derive(Debug)]
pub struct Query<T>(pub T);

impl<T> Query<T> {
    /// The parameters.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> std::ops::Deref for Query<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: DeserializeOwned> FromRequest for Query<T> {
    type Error = actix_web::Error;
    type Future = std::future::Ready<Result<Self, actix_web::Error>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        std::future::ready(
            from_query(req.query_string()).map(Query).map_err(|message| crate::app::interface_error(req, ApiError::bad_request(message))),
        )
    }
}

/// Parses a query string (without the `?`) into `T`; the error is the message for the caller.
fn from_query<T: DeserializeOwned>(query: &str) -> Result<T, String> {
    let pairs = url::form_urlencoded::parse(query.as_bytes()).map(|(key, value)| (key.clone(), Value { key, value }));
    T::deserialize(MapDeserializer::<_, de::value::Error>::new(pairs)).map_err(|e| message(&e.to_string()))
}

fn message(raw: &str) -> String {
    let raw = raw.split(", expected one of").next().unwrap_or(raw);
    let raw = raw.split(", there are no fields").next().unwrap_or(raw);
    format!("invalid query parameter: {}", crate::extract::caller_terms(raw).replace("variant", "value"))
}

/// One parameter's value, with its name for the error.
struct Value<'a> {
    key: Cow<'a, str>,
    value: Cow<'a, str>,
}

impl Value<'_> {
    fn error(&self, what: &str) -> de::value::Error {
        de::Error::custom(format!("`{}` {what}", self.key))
    }

    fn integer<N: FromStr>(&self) -> Result<N, de::value::Error> {
        let digits = integral(&self.value).ok_or_else(|| self.error("must be an integer"))?;
        digits.parse().map_err(|_| self.error("is out of range"))
    }
}

/// The plain digits of a number with no fractional part (`-6.70e1` → `-67`), `None` for
/// anything else. Exact: no float is involved.
fn integral(text: &str) -> Option<Cow<'_, str>> {
    let (sign, unsigned) = match text.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", text.strip_prefix('+').unwrap_or(text)),
    };
    if !unsigned.is_empty() && unsigned.bytes().all(|b| b.is_ascii_digit()) {
        return Some(Cow::Borrowed(text));
    }
    let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i32>().ok().filter(|e| e.abs() <= 40)?),
        None => (unsigned, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if whole.is_empty() && fraction.is_empty() || !whole.bytes().chain(fraction.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let digits = format!("{whole}{fraction}");
    let point = i32::try_from(whole.len()).ok()? + exponent;
    let point = usize::try_from(point).unwrap_or(0);
    let (int, rest) = if point >= digits.len() {
        (format!("{digits}{}", "0".repeat(point - digits.len())), String::new())
    } else {
        (digits[..point].to_owned(), digits[point..].to_owned())
    };
    if rest.bytes().any(|b| b != b'0') {
        return None;
    }
    let int = if int.is_empty() { "0".to_owned() } else { int };
    Some(Cow::Owned(format!("{sign}{int}")))
}

impl<'de> IntoDeserializer<'de, de::value::Error> for Value<'de> {
    type Deserializer = Self;
    fn into_deserializer(self) -> Self {
        self
    }
}

macro_rules! integers {
    ($($method:ident => $visit:ident,)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
            let n = self.integer()?;
            visitor.$visit(n).map_err(|e: de::value::Error| self.error(&e.to_string()))
        }
    )*};
}

impl<'de> de::Deserializer<'de> for Value<'de> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        let key = self.key.clone();
        let result = match self.value {
            Cow::Borrowed(s) => visitor.visit_borrowed_str(s),
            Cow::Owned(s) => visitor.visit_string(s),
        };
        result.map_err(|e: de::value::Error| de::Error::custom(format!("`{key}`: {}", crate::extract::caller_terms(&e.to_string()))))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _: &'static str, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match &*self.value {
            "true" => visitor.visit_bool(true),
            "false" => visitor.visit_bool(false),
            _ => Err(self.error("must be true or false")),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(self, _: &'static str, _: &'static [&'static str], visitor: V) -> Result<V::Value, Self::Error> {
        let key = self.key.clone();
        let value: CowStrDeserializer<'de, Self::Error> = self.value.into_deserializer();
        visitor.visit_enum(value).map_err(|e: de::value::Error| de::Error::custom(format!("`{key}`: {e}")))
    }

    integers! {
        deserialize_i8 => visit_i8,
        deserialize_i16 => visit_i16,
        deserialize_i32 => visit_i32,
        deserialize_i64 => visit_i64,
        deserialize_u8 => visit_u8,
        deserialize_u16 => visit_u16,
        deserialize_u32 => visit_u32,
        deserialize_u64 => visit_u64,
    }

    serde::forward_to_deserialize_any! {
        i128 u128 f32 f64 char str string bytes byte_buf unit unit_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "snake_case")]
    enum Status {
        Paid,
        Closed,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Params {
        tenant_id: Option<i64>,
        page: Option<u32>,
        status: Option<Status>,
        keyword: Option<String>,
        cascade: Option<bool>,
    }

    fn parse(q: &str) -> Result<Params, String> {
        from_query(q)
    }

    #[test]
    fn an_integer_is_any_number_without_a_fraction() {
        for (text, want) in
            [("67", 67), ("67.0", 67), ("67.", 67), ("6.7e1", 67), ("6.70E%2B1", 67), ("670e-1", 67), ("%2B67", 67), ("0.0", 0)]
        {
            assert_eq!(parse(&format!("tenant_id={text}")).map(|p| p.tenant_id), Ok(Some(want)), "{text}");
        }
        assert_eq!(parse("tenant_id=-6.7e1").map(|p| p.tenant_id), Ok(Some(-67)));
        assert_eq!(parse("tenant_id=9223372036854775807.000").map(|p| p.tenant_id), Ok(Some(i64::MAX)));
    }

    #[test]
    fn a_fraction_or_a_word_is_refused_naming_the_parameter() {
        for text in ["67.5", "6.75e1", "1e-1", "abc", "", ".", "e1", "1e", "1.2.3", "0x10", "1e99999", "٦٧"] {
            assert_eq!(
                parse(&format!("tenant_id={text}")),
                Err("invalid query parameter: `tenant_id` must be an integer".to_owned()),
                "{text:?}"
            );
        }
        assert_eq!(parse("tenant_id=9223372036854775808"), Err("invalid query parameter: `tenant_id` is out of range".to_owned()));
        assert_eq!(parse("page=-1"), Err("invalid query parameter: `page` is out of range".to_owned()));
        assert_eq!(parse("page=1e30"), Err("invalid query parameter: `page` is out of range".to_owned()));
    }

    #[test]
    fn strings_enums_and_booleans_read_as_before() {
        let p = parse("keyword=1.0&status=paid&cascade=true&page=2").expect("valid");
        assert_eq!(
            p,
            Params { tenant_id: None, page: Some(2), status: Some(Status::Paid), keyword: Some("1.0".to_owned()), cascade: Some(true) }
        );
        assert_eq!(parse("keyword=a%20b+c").map(|p| p.keyword), Ok(Some("a b c".to_owned())));
        assert_eq!(parse("status=closed").map(|p| p.status), Ok(Some(Status::Closed)));
        let err = parse("status=open").expect_err("unknown value");
        assert!(err.starts_with("invalid query parameter: `status`: unknown value `open`"), "{err}");
        assert_eq!(parse("cascade=yes"), Err("invalid query parameter: `cascade` must be true or false".to_owned()));
    }

    #[test]
    fn unknown_duplicate_and_missing_parameters_are_named() {
        assert_eq!(parse("tenant=1"), Err("invalid query parameter: unknown field `tenant`".to_owned()));
        assert_eq!(parse("page=1&page=2"), Err("invalid query parameter: duplicate field `page`".to_owned()));
        #[derive(Debug, Deserialize)]
        struct Needs {
            #[allow(dead_code)]
            ticket: String,
        }
        assert_eq!(from_query::<Needs>("").map(|_| ()), Err("invalid query parameter: missing field `ticket`".to_owned()));
    }
}
