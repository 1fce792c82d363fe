use crate::Error;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A phone number in E.164 form (`+8613800138000`). Mainland mobile numbers given without
/// a country code (`13800138000`) are normalised to `+86…`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Phone(String);

impl Phone {
    /// Normalises and checks a phone number (spaces and dashes dropped, `+86` added to a
    /// bare mainland mobile number); the error says what is wrong.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let s: String = raw.trim().chars().filter(|c| !matches!(c, ' ' | '-')).collect();
        let digits = s.strip_prefix('+').unwrap_or(&s);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err("must be a phone number such as +8613800138000".into());
        }
        if !s.starts_with('+') {
            if digits.len() == 11 && digits.starts_with('1') {
                return Ok(Phone(format!("+86{digits}")));
            }
            return Err("must be a mainland mobile number or start with + and a country code".into());
        }
        if !(8..=15).contains(&digits.len()) || digits.starts_with('0') {
            return Err("must be a phone number such as +8613800138000".into());
        }
        if let Some(national) = digits.strip_prefix("86")
            && (national.len() != 11 || !national.starts_with('1'))
        {
            return Err("a +86 number must have 11 digits starting with 1".into());
        }
        Ok(Phone(s))
    }

    /// The number in E.164 form, e.g. `+8613800138000`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Phone {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        Phone::parse(&s)
    }
}

impl From<Phone> for String {
    fn from(p: Phone) -> String {
        p.0
    }
}

impl fmt::Display for Phone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An e-mail address, trimmed and lower-cased; a plausibility check, not RFC 5322.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Email(String);

impl Email {
    /// Trims, lower-cases and checks an e-mail address; the error says what is wrong.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let s = raw.trim().to_ascii_lowercase();
        let bad = || Err("must be an e-mail address such as a@example.com".to_string());
        if s.len() > 254 || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return bad();
        }
        let Some((local, domain)) = s.split_once('@') else { return bad() };
        if local.is_empty() || local.len() > 64 || domain.contains('@') {
            return bad();
        }
        let labels: Vec<&str> = domain.split('.').collect();
        if labels.len() < 2 || labels.iter().any(|l| l.is_empty() || l.starts_with('-') || l.ends_with('-')) {
            return bad();
        }
        Ok(Email(s))
    }

    /// The address, trimmed and lower-cased.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Email {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        Email::parse(&s)
    }
}

impl From<Email> for String {
    fn from(e: Email) -> String {
        e.0
    }
}

impl fmt::Display for Email {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where a verification code goes: a phone (SMS) or an e-mail address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ContactTarget {
    /// A phone number, reached by SMS.
    Phone(Phone),
    /// An e-mail address.
    Email(Email),
}

impl ContactTarget {
    /// Parses `field`'s value as a phone or e-mail address; a 400 naming the field otherwise.
    pub fn parse(field: &str, raw: &str) -> Result<Self, Error> {
        if raw.contains('@') {
            Email::parse(raw).map(ContactTarget::Email).map_err(|m| Error::invalid(field, m))
        } else {
            Phone::parse(raw)
                .map(ContactTarget::Phone)
                .map_err(|_| Error::invalid(field, "must be a phone number (+8613800138000) or an e-mail address"))
        }
    }

    /// The phone number or e-mail address, as normalised.
    pub fn as_str(&self) -> &str {
        match self {
            ContactTarget::Phone(p) => p.as_str(),
            ContactTarget::Email(e) => e.as_str(),
        }
    }

    /// `sms` or `email`: how a code reaches this target.
    pub fn channel(&self) -> &'static str {
        match self {
            ContactTarget::Phone(_) => "sms",
            ContactTarget::Email(_) => "email",
        }
    }
}

impl fmt::Display for ContactTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mainland_mobile_without_country_code_is_normalised() {
        assert_eq!(Phone::parse("138 0013 8000").unwrap().as_str(), "+8613800138000");
    }

    #[test]
    fn e164_numbers_are_kept() {
        assert_eq!(Phone::parse("+14155550123").unwrap().as_str(), "+14155550123");
    }

    #[test]
    fn malformed_phones_are_rejected() {
        for bad in ["", "+", "12345", "+86123", "abc", "+0123456789", "23800138000", "+86 238 0013 8000"] {
            assert!(Phone::parse(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn emails_are_lowercased_and_checked() {
        assert_eq!(Email::parse(" A@Example.COM ").unwrap().as_str(), "a@example.com");
        for bad in ["a", "a@b", "@b.com", "a@@b.com", "a b@c.com", "a@-b.com", "a@b..com"] {
            assert!(Email::parse(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn target_picks_the_channel_from_its_shape() {
        assert_eq!(ContactTarget::parse("target", "a@b.cn").unwrap().channel(), "email");
        assert_eq!(ContactTarget::parse("target", "+8613800138000").unwrap().channel(), "sms");
        let err = ContactTarget::parse("target", "nope").unwrap_err();
        assert!(matches!(err, Error::Invalid(ref e) if e[0].field == "target"));
    }
}
