use atrium_kernel::Error;
use std::fmt;

/// A plaintext password that passed the policy: 8–128 characters, not a common password.
/// Its `Debug` never shows the value.
pub struct Password(String);

impl Password {
    /// Checks `raw` against the policy; `Invalid` naming `field` with what is wrong.
    pub fn parse(field: &str, raw: &str) -> Result<Self, Error> {
        validate_password(raw).map_err(|m| Error::invalid(field, m))?;
        Ok(Password(raw.to_owned()))
    }

    /// The plaintext, for the hasher.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Password(***)")
    }
}

/// The password policy; the message says what is wrong.
///
/// ```
/// use atrium_identity::validate_password;
///
/// assert!(validate_password("Spring-Rain-2026").is_ok());
/// assert_eq!(validate_password("short"), Err("must be at least 8 characters"));
/// // Common passwords are refused whatever their case.
/// assert_eq!(validate_password("Password1"), Err("is too common; choose another"));
/// ```
pub fn validate_password(raw: &str) -> Result<(), &'static str> {
    let len = raw.chars().count();
    if len < 8 {
        return Err("must be at least 8 characters");
    }
    if len > 128 {
        return Err("must be at most 128 characters");
    }
    let lower = raw.to_lowercase();
    if COMMON_PASSWORDS.contains(&lower.as_str()) {
        return Err("is too common; choose another");
    }
    if raw.chars().all(|c| c == raw.chars().next().unwrap_or(' ')) {
        return Err("must not repeat one character");
    }
    Ok(())
}

/// The most common passwords of public breach lists that meet the length rule.
pub(crate) const COMMON_PASSWORDS: &[&str] = &[
    "12345678",
    "123456789",
    "1234567890",
    "password",
    "password1",
    "password123",
    "passw0rd",
    "qwertyui",
    "qwerty123",
    "qwertyuiop",
    "11111111",
    "00000000",
    "88888888",
    "66666666",
    "12341234",
    "87654321",
    "11223344",
    "abcd1234",
    "abc12345",
    "abcdefgh",
    "iloveyou",
    "sunshine",
    "princess",
    "football",
    "baseball",
    "superman",
    "starwars",
    "whatever",
    "trustno1",
    "welcome1",
    "welcome123",
    "admin123",
    "administrator",
    "letmein1",
    "changeme",
    "1q2w3e4r",
    "1qaz2wsx",
    "zaq12wsx",
    "q1w2e3r4",
    "asdfghjk",
    "asdf1234",
    "zxcvbnm1",
    "zxcvbnm123",
    "a1234567",
    "aa123456",
    "123123123",
    "123qweasd",
    "qweasdzxc",
    "woaini1314",
    "5201314520",
    "147258369",
    "123456abc",
    "computer",
    "michelle",
    "jennifer",
    "internet",
    "master123",
    "dragon123",
    "monkey123",
    "shadow123",
    "p@ssw0rd",
    "p@ssword",
    "password!",
    "atrium123",
    "12qwaszx",
    "qazwsxedc",
    "1q2w3e4r5t",
    "1234qwer",
    "qwer1234",
    "test1234",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_passwords_are_rejected() {
        assert_eq!(validate_password("Ab1!xyz"), Err("must be at least 8 characters"));
    }

    #[test]
    fn very_long_passwords_are_rejected() {
        assert!(validate_password(&"ab".repeat(65)).is_err());
        assert!(validate_password(&"ab".repeat(64)).is_ok());
    }

    #[test]
    fn common_passwords_are_rejected_case_insensitively() {
        assert!(validate_password("PassWord123").is_err());
        assert!(validate_password("12345678").is_err());
    }

    #[test]
    fn a_reasonable_password_passes() {
        assert!(validate_password("correct horse battery").is_ok());
    }

    #[test]
    fn debug_output_hides_the_password() {
        let p = Password::parse("password", "s3cret-enough").unwrap();
        assert_eq!(format!("{p:?}"), "Password(***)");
    }
}
