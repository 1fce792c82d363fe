//! Bounded strings of the order requests: text the pay platform counts in bytes (an order's
//! subject becomes the platform's description, a refund's reason is shown to the payer), and
//! the payer's openid. Each is parsed on deserialising and publishes what it accepts.
use serde::{Deserialize, Serialize};
use std::fmt;

/// Text of at most `MAX` bytes (UTF-8), trimmed, without control or invisible characters;
/// empty only when `EMPTY_OK`. The bound counts the text as sent, so a client can check it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ByteText<const MAX: usize, const EMPTY_OK: bool>(String);

/// An order's subject: 1–127 bytes, the pay platform's limit for a description.
pub type Subject = ByteText<127, false>;
/// A refund's reason, shown to the payer: up to 80 bytes.
pub type RefundReason = ByteText<80, true>;

impl<const MAX: usize, const EMPTY_OK: bool> ByteText<MAX, EMPTY_OK> {
    pub fn parse(raw: &str) -> Result<Self, String> {
        if raw.len() > MAX {
            return Err(format!("must be at most {MAX} bytes (UTF-8)"));
        }
        let s = raw.trim();
        if s.is_empty() && !EMPTY_OK {
            return Err("must not be empty".into());
        }
        if s.chars().any(|c| c.is_control() || atrium_kernel::is_deceptive(c)) {
            return Err("must not contain control or invisible characters".into());
        }
        Ok(ByteText(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

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
        use atrium_kernel::schema::{PLAIN_TEXT_PATTERN, TEXT_PATTERN, string_schema};
        let description = format!("At most {MAX} bytes of UTF-8, trimmed, no control or invisible characters");
        if EMPTY_OK {
            string_schema(&description, Some(PLAIN_TEXT_PATTERN), None, Some(MAX))
        } else {
            string_schema(&description, Some(TEXT_PATTERN), Some(1), Some(MAX))
        }
    }
}

/// One component per bound: `OrderText127`, `OrderText80OrEmpty`.
#[cfg(feature = "openapi")]
impl<const MAX: usize, const EMPTY_OK: bool> utoipa::ToSchema for ByteText<MAX, EMPTY_OK> {
    fn name() -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Owned(format!("OrderText{MAX}{}", if EMPTY_OK { "OrEmpty" } else { "" }))
    }
}

/// A payer's openid in the tenant's mini-program: 1–128 of `[0-9A-Za-z_-]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Openid(String);

impl Openid {
    pub const MAX: usize = 128;

    pub fn parse(raw: &str) -> Result<Self, String> {
        if raw.is_empty() || raw.len() > Self::MAX {
            return Err(format!("must be 1 to {} characters", Self::MAX));
        }
        if let Some(bad) = raw.chars().find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-')) {
            return Err(format!("must consist of letters, digits, '_' and '-' only, not {bad:?}"));
        }
        Ok(Openid(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl TryFrom<String> for Openid {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        Openid::parse(&s)
    }
}

impl From<Openid> for String {
    fn from(v: Openid) -> String {
        v.0
    }
}

impl fmt::Display for Openid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

atrium_kernel::string_schemas!(
    Openid => atrium_kernel::schema::string_schema(
        "The payer's openid in the tenant's mini-program", Some("^[0-9A-Za-z_\\-]{1,128}$"), None, None),
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subject_counts_bytes_not_characters_and_is_trimmed() {
        // 42 three-byte characters = 126 bytes; one more is 129.
        assert!(Subject::parse(&"支".repeat(42)).is_ok());
        assert!(Subject::parse(&"支".repeat(43)).unwrap_err().contains("127 bytes"));
        assert_eq!(Subject::parse("  Coffee  ").unwrap().as_str(), "Coffee");
        for bad in ["", "   ", "a\nb", "a\u{202E}b"] {
            assert!(Subject::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_reason_may_be_empty_and_holds_80_bytes() {
        assert_eq!(RefundReason::parse("").unwrap().as_str(), "");
        assert!(RefundReason::parse(&"a".repeat(80)).is_ok());
        assert!(RefundReason::parse(&"a".repeat(81)).is_err());
    }

    #[test]
    fn an_openid_is_1_to_128_of_the_allowed_characters() {
        assert!(Openid::parse("oUpF8uMuAJO_M2pxb1Q9zNjWeS6o").is_ok());
        assert!(Openid::parse(&"o".repeat(128)).is_ok());
        for bad in ["", &"o".repeat(129), "o 1", "o*1", "订单"] {
            assert!(Openid::parse(bad).is_err(), "{bad:?}");
        }
    }
}
