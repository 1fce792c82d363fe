//! Small input types shared by every domain: bounded text and "patch" fields.
use serde::{Deserialize, Serialize};
use std::fmt;

/// Trimmed text of 1..=MAX characters without control characters (names, titles), nor the
/// invisible and direction-changing characters that make a name read differently from what
/// it is (zero-width spaces and joiners, bidirectional embeddings, overrides and isolates,
/// the byte-order mark, line and paragraph separators).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Text<const MAX: usize>(String);

/// A name or title: up to 128 characters.
pub type Name = Text<128>;
/// A short label (department, position, contact name): up to 64 characters.
pub type Label = Text<64>;

impl<const MAX: usize> Text<MAX> {
    /// Trims `raw` and checks it, saying what is wrong (for a field error's message) if it
    /// is empty, longer than `MAX` characters, or holds control or invisible characters.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let s = raw.trim();
        if s.is_empty() {
            return Err("must not be empty".into());
        }
        // Counted as sent, white space included: the bound a client can check before sending.
        if raw.chars().count() > MAX {
            return Err(format!("must be at most {MAX} characters"));
        }
        if s.chars().any(char::is_control) {
            return Err("must not contain control characters".into());
        }
        if s.chars().any(is_deceptive) {
            return Err("must not contain invisible or text-direction characters".into());
        }
        Ok(Text(s.to_owned()))
    }

    /// The trimmed text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The trimmed text, owned.
    pub fn into_string(self) -> String {
        self.0
    }
}

/// Characters a reader cannot see that change how the text around them reads.
pub fn is_deceptive(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}' | '\u{2028}' | '\u{2029}' | '\u{061C}')
}

/// Text from outside (a request, a platform's answer) as it may be shown in an error or a log
/// line: at most `max` characters (an ellipsis marks the cut), and every control character
/// (`\n`, `\r`, tab, …) and invisible formatting character escaped, so it can never start a
/// line of its own or hide what follows. `shown("a\nb", 40)` is `a\\nb`.
pub fn shown(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max * 2));
    for (i, c) in text.chars().enumerate() {
        if i == max {
            out.push('…');
            break;
        }
        push_escaped(&mut out, c);
    }
    out
}

/// Writes `c`, escaped when it is a control or invisible formatting character.
fn push_escaped(out: &mut String, c: char) {
    use std::fmt::Write;
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if c.is_control() || is_deceptive(c) => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
        c => out.push(c),
    }
}

/// `text` on one line: every control and invisible formatting character escaped as by
/// [`shown`], nothing cut. For whole log messages.
pub fn one_line(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(|c| c.is_control() || is_deceptive(c)) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        push_escaped(&mut out, c);
    }
    std::borrow::Cow::Owned(out)
}

impl<const MAX: usize> TryFrom<String> for Text<MAX> {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        Text::parse(&s)
    }
}

impl<const MAX: usize> From<Text<MAX>> for String {
    fn from(t: Text<MAX>) -> String {
        t.0
    }
}

impl<const MAX: usize> fmt::Display for Text<MAX> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Text of at most `MAX` bytes (UTF-8), trimmed, without control or invisible characters, for
/// fields a platform bounds in bytes rather than characters (a payment's description or an
/// order's subject, a refund's reason, a version's description); empty only when `EMPTY_OK`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ByteText<const MAX: usize, const EMPTY_OK: bool>(String);

impl<const MAX: usize, const EMPTY_OK: bool> ByteText<MAX, EMPTY_OK> {
    /// Trims `raw` and checks it, saying what is wrong if `raw` is longer than `MAX` bytes,
    /// empty (unless `EMPTY_OK`), or holds control or invisible characters.
    pub fn parse(raw: &str) -> Result<Self, String> {
        // Counted as sent, so a client can check the bound before sending.
        if raw.len() > MAX {
            return Err(format!("must be at most {MAX} bytes (UTF-8)"));
        }
        let s = raw.trim();
        if s.is_empty() && !EMPTY_OK {
            return Err("must not be empty".into());
        }
        if s.chars().any(|c| c.is_control() || is_deceptive(c)) {
            return Err("must not contain control or invisible characters".into());
        }
        Ok(ByteText(s.to_owned()))
    }

    /// The trimmed text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The trimmed text, owned.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl<const MAX: usize, const EMPTY_OK: bool> TryFrom<String> for ByteText<MAX, EMPTY_OK> {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        ByteText::parse(&s)
    }
}

impl<const MAX: usize, const EMPTY_OK: bool> From<ByteText<MAX, EMPTY_OK>> for String {
    fn from(t: ByteText<MAX, EMPTY_OK>) -> String {
        t.0
    }
}

impl<const MAX: usize, const EMPTY_OK: bool> fmt::Display for ByteText<MAX, EMPTY_OK> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// At most `MAX` characters (a string of more has more than `MAX` bytes); the byte limit
/// itself is in the description, as JSON Schema counts characters.
#[cfg(feature = "openapi")]
impl<const MAX: usize, const EMPTY_OK: bool> utoipa::PartialSchema for ByteText<MAX, EMPTY_OK> {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        let description = format!("At most {MAX} bytes of UTF-8, trimmed, no control or invisible characters");
        if EMPTY_OK {
            string_schema(&description, Some(PLAIN_TEXT_PATTERN), None, Some(MAX))
        } else {
            string_schema(&description, Some(TEXT_PATTERN), Some(1), Some(MAX))
        }
    }
}

/// One component per bound: `ByteText127`, `ByteText80OrEmpty`.
#[cfg(feature = "openapi")]
impl<const MAX: usize, const EMPTY_OK: bool> utoipa::ToSchema for ByteText<MAX, EMPTY_OK> {
    fn name() -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Owned(format!("ByteText{MAX}{}", if EMPTY_OK { "OrEmpty" } else { "" }))
    }
}

/// What an [`ascii_code!`](crate::ascii_code) newtype accepts: `min..=max` ASCII characters,
/// each alphanumeric or one of `extra`.
pub fn parse_code(raw: &str, min: usize, max: usize, extra: &str) -> Result<String, String> {
    let len = raw.len();
    if len < min || len > max {
        return Err(if min == max { format!("must be {min} characters") } else { format!("must be {min} to {max} characters") });
    }
    if let Some(bad) = raw.chars().find(|c| !(c.is_ascii_alphanumeric() || extra.contains(*c))) {
        return Err(format!("must consist of letters, digits and {extra:?} only, not {bad:?}"));
    }
    Ok(raw.to_owned())
}

/// What [`parse_code`] accepts, as a schema pattern (`-` escaped, the other extras literal in
/// a character class).
pub fn code_pattern(min: usize, max: usize, extra: &str) -> String {
    let mut class: String = extra.chars().filter(|c| *c != '-').collect();
    if extra.contains('-') {
        class.push_str("\\-");
    }
    format!("^[0-9A-Za-z{class}]{{{min},{max}}}$")
}

/// `s` with every character but the first `keep_start` and the last `keep_end` replaced by
/// `*`: `mask_middle("6222021234567890", 0, 4)` is `************7890`.
pub fn mask_middle(s: &str, keep_start: usize, keep_end: usize) -> String {
    let n = s.chars().count();
    s.chars().enumerate().map(|(i, c)| if i < keep_start || i >= n.saturating_sub(keep_end) { c } else { '*' }).collect()
}

/// Declares a string newtype of `MIN..=MAX` ASCII characters, each alphanumeric or one of
/// `EXTRA`, parsed on deserialising (platform numbers and ids: `out_trade_no`, an openid, an
/// app id), with its schema behind the calling crate's `openapi` feature.
#[macro_export]
macro_rules! ascii_code {
    ($(#[$doc:meta])* $name:ident, $min:literal, $max:literal, $extra:literal, $desc:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, ::serde::Serialize, ::serde::Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// Checks `raw` (no trimming): its length and that it holds only ASCII letters, digits
            /// and the allowed extra characters; the error says what is wrong.
            pub fn parse(raw: &str) -> ::std::result::Result<Self, String> {
                $crate::parse_code(raw, $min, $max, $extra).map($name)
            }

            /// The code as given.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The code, owned.
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl ::std::convert::TryFrom<String> for $name {
            type Error = String;
            fn try_from(s: String) -> ::std::result::Result<Self, String> {
                $name::parse(&s)
            }
        }

        impl ::std::convert::From<$name> for String {
            fn from(v: $name) -> String {
                v.0
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        $crate::string_schemas!($name => $crate::schema::string_schema($desc, Some(&$crate::code_pattern($min, $max, $extra)), None, None));
    };
}

crate::ascii_code!(
    /// A payer's openid in the tenant's mini-program: 1–128 of `[0-9A-Za-z_-]`.
    Openid, 1, 128, "_-", "the payer's openid in the mini-program"
);

impl Openid {
    /// The longest openid accepted, in bytes.
    pub const MAX: usize = 128;
}

/// For `#[serde(default, deserialize_with = "patch")]` on `Option<Option<T>>` fields of an
/// update: absent → `None` (leave as is), `null` → `Some(None)` (clear), value → `Some(Some(v))`.
pub use serde_with::rust::double_option::deserialize as patch;

/// A string schema: what a newtype's parser accepts, for the OpenAPI document.
#[cfg(feature = "openapi")]
pub fn string_schema(
    description: &str,
    pattern: Option<&str>,
    min_length: Option<usize>,
    max_length: Option<usize>,
) -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .description(Some(description))
        .pattern(pattern)
        .min_length(min_length)
        .max_length(max_length)
        .into()
}

/// A schema from its JSON form, for what the builders do not offer (`oneOf` of objects,
/// `not`, type lists).
#[cfg(feature = "openapi")]
pub fn schema_from_json(value: serde_json::Value) -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    serde_json::from_value(value).unwrap_or_else(|_| utoipa::openapi::RefOr::T(utoipa::openapi::schema::Schema::default()))
}

/// Implements `ToSchema` for newtypes parsed from strings, each from a schema expression
/// (usually a [`string_schema`] call), behind the *calling* crate's `openapi` feature:
/// `atrium_kernel::string_schemas!(Iban => string_schema("…", Some(PATTERN), None, None));`.
#[macro_export]
macro_rules! string_schemas {
    ($($t:ty => $schema:expr),* $(,)?) => {
        $(
            #[cfg(feature = "openapi")]
            impl utoipa::PartialSchema for $t {
                fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                    $schema
                }
            }
            #[cfg(feature = "openapi")]
            impl utoipa::ToSchema for $t {}
        )*
    };
}

/// What [`Phone::parse`](crate::Phone::parse) accepts, less its tolerance for spaces and dashes.
#[cfg(feature = "openapi")]
pub const PHONE_PATTERN: &str = "^(1[0-9]{10}|\\+861[0-9]{10}|\\+[1-79][0-9]{7,14})$";
/// A subset of what [`Email::parse`](crate::Email::parse) accepts: ASCII local part of 1–64
/// characters, at least two domain labels that neither start nor end with `-`.
#[cfg(feature = "openapi")]
pub const EMAIL_PATTERN: &str =
    "^[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$";

string_schemas!(
    crate::Phone => string_schema(
        "Phone number, E.164 (+8613800138000); mainland mobile numbers without +86 are accepted",
        Some(PHONE_PATTERN), None, None),
    crate::Email => string_schema("E-mail address", Some(EMAIL_PATTERN), None, Some(254)),
    crate::payroll::Rate => string_schema(
        "Decimal rate from 0 to less than 1 as a string, at most six decimal places, e.g. \"0.08\"",
        Some("^0(\\.[0-9]{1,6})?$"), None, None),
    crate::payroll::HousingFundRate => string_schema(
        "Housing fund rate as a string, \"0.05\" to \"0.12\", at most six decimal places",
        Some("^0\\.(1|0[5-9][0-9]{0,4}|1[01][0-9]{0,4}|120{0,4})$"), None, None),
);

/// A phone number or an e-mail address, for `schema_with` on a `target` field that
/// [`ContactTarget::parse`](crate::ContactTarget::parse) reads.
#[cfg(feature = "openapi")]
pub fn contact_target_schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    utoipa::openapi::OneOfBuilder::new()
        .item(string_schema("Phone number, E.164 (+8613800138000)", Some(PHONE_PATTERN), None, None))
        .item(string_schema("E-mail address", Some(EMAIL_PATTERN), None, Some(254)))
        .description(Some("A phone number (+8613800138000) or an e-mail address"))
        .into()
}

/// Character classes of the patterns below: what `trim` removes, and what text may hold.
#[cfg(feature = "openapi")]
macro_rules! trimmed_class {
    () => {
        "[\\t-\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    };
}
#[cfg(feature = "openapi")]
macro_rules! visible_class {
    ($extra:literal) => {
        concat!("[^", $extra, "\\x00-\\x1f\\x7f-\\x9f\\u061c\\u200b-\\u200f\\u2028-\\u202e\\u2060-\\u2069\\ufeff]")
    };
}

/// What [`Text::parse`] accepts, as a schema pattern: white space it trims at either end
/// (control characters among it too), then text with no control characters, none of
/// [`is_deceptive`]'s, and something besides white space.
#[cfg(feature = "openapi")]
pub const TEXT_PATTERN: &str =
    concat!("^", trimmed_class!(), "*", visible_class!(""), "*", visible_class!("\\s"), visible_class!(""), "*", trimmed_class!(), "*$");

/// Text with no control characters and none of [`is_deceptive`]'s, possibly empty.
#[cfg(feature = "openapi")]
pub const PLAIN_TEXT_PATTERN: &str = concat!("^", visible_class!(""), "*$");

#[cfg(feature = "openapi")]
impl<const MAX: usize> utoipa::PartialSchema for Text<MAX> {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .min_length(Some(1))
            .max_length(Some(MAX))
            .pattern(Some(TEXT_PATTERN))
            .into()
    }
}

/// One component per length (`Text128`, `Text64`, …): the bound differs.
#[cfg(feature = "openapi")]
impl<const MAX: usize> utoipa::ToSchema for Text<MAX> {
    fn name() -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Owned(format!("Text{MAX}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_text_keeps_to_one_line_and_its_length() {
        assert_eq!(shown("plain", 40), "plain");
        assert_eq!(shown("a\nINFO forged\r\tline", 40), "a\\nINFO forged\\r\\tline");
        assert_eq!(shown("\u{1b}[31m\u{202E}x", 40), "\\u{1b}[31m\\u{202e}x");
        assert_eq!(shown("abcdef", 3), "abc…");
        assert_eq!(shown("中文字", 2), "中文…");
        for bad in ["a\nb", "a\rb", "x\u{0}y", "\u{2028}"] {
            assert!(!shown(bad, 40).chars().any(|c| c.is_control() || is_deceptive(c)), "{bad:?}");
            assert!(!one_line(bad).chars().any(|c| c.is_control() || is_deceptive(c)), "{bad:?}");
        }
        assert!(matches!(one_line("no escapes here"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(one_line("two\nlines"), "two\\nlines");
    }

    #[derive(Deserialize)]
    struct Update {
        #[serde(default, deserialize_with = "patch")]
        phone: Option<Option<String>>,
    }

    #[test]
    fn text_is_trimmed_and_bounded() {
        assert_eq!(Name::parse("  Acme  ").unwrap().as_str(), "Acme");
        assert!(Name::parse("   ").is_err());
        assert!(Label::parse(&"x".repeat(65)).is_err());
        assert!(Name::parse("a\u{0}b").is_err());
    }

    #[test]
    fn invisible_and_direction_characters_are_refused() {
        for c in ['\u{202A}', '\u{202E}', '\u{2066}', '\u{2069}', '\u{200B}', '\u{200F}', '\u{FEFF}'] {
            assert!(Name::parse(&format!("Acme{c}Ltd")).is_err(), "{c:?} was accepted");
        }
        assert_eq!(Name::parse("Acme 有限公司 — Zoë").unwrap().as_str(), "Acme 有限公司 — Zoë");
    }

    #[test]
    fn patch_fields_tell_absent_from_null() {
        let absent: Update = serde_json::from_str("{}").unwrap();
        let null: Update = serde_json::from_str(r#"{"phone":null}"#).unwrap();
        let set: Update = serde_json::from_str(r#"{"phone":"1"}"#).unwrap();
        assert_eq!(absent.phone, None);
        assert_eq!(null.phone, Some(None));
        assert_eq!(set.phone, Some(Some("1".into())));
    }
}
