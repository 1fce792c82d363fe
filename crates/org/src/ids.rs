//! Chinese registration numbers, parsed with their check characters.
use atrium_kernel::mask_middle;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A unified social credit code (统一社会信用代码, GB 32100-2015): 18 characters from a
/// 31-character alphabet, the last one a check character over the first 17.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct CreditCode(String);

const USCC_ALPHABET: &[u8; 31] = b"0123456789ABCDEFGHJKLMNPQRTUWXY";
const USCC_WEIGHTS: [u32; 17] = [1, 3, 9, 27, 19, 26, 16, 17, 20, 29, 25, 13, 8, 24, 10, 30, 28];

impl CreditCode {
    /// Trims and upper-cases a credit code and checks its length, alphabet and check character;
    /// the error says what is wrong.
    ///
    /// ```
    /// use atrium_org::CreditCode;
    ///
    /// assert_eq!(CreditCode::parse(" 91350100m000100y43 ")?.as_str(), "91350100M000100Y43");
    /// assert!(CreditCode::parse("91350100M000100Y44").is_err(), "the check character is wrong");
    /// # Ok::<(), String>(())
    /// ```
    pub fn parse(raw: &str) -> Result<Self, String> {
        let s = raw.trim().to_ascii_uppercase();
        if s.len() != 18 {
            return Err("must be 18 characters".into());
        }
        let mut values = [0u32; 18];
        for (i, b) in s.bytes().enumerate() {
            values[i] =
                USCC_ALPHABET.iter().position(|c| *c == b).ok_or_else(|| format!("character {} is not allowed in a credit code", i + 1))?
                    as u32;
        }
        let sum: u32 = values[..17].iter().zip(USCC_WEIGHTS).map(|(v, w)| v * w).sum();
        let check = (31 - sum % 31) % 31;
        if values[17] != check {
            return Err("check character does not match (GB 32100)".into());
        }
        Ok(CreditCode(s))
    }

    /// The code, upper-case.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for CreditCode {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        CreditCode::parse(&s)
    }
}

impl From<CreditCode> for String {
    fn from(c: CreditCode) -> String {
        c.0
    }
}

impl fmt::Display for CreditCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A resident identity card number (GB 11643-1999): 17 digits, the first six a region and
/// the next eight a valid birth date, then a check character (0–9 or X).
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct IdCardNo(String);

const ID_WEIGHTS: [u32; 17] = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2];
const ID_CHECK: &[u8; 11] = b"10X98765432";

impl IdCardNo {
    /// Trims and upper-cases an identity card number and checks its digits, birth date and check
    /// character; the error says what is wrong.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let s = raw.trim().to_ascii_uppercase();
        let bytes = s.as_bytes();
        if bytes.len() != 18 || !bytes[..17].iter().all(u8::is_ascii_digit) {
            return Err("must be 17 digits and a check character".into());
        }
        let birth = &s[6..14];
        if chrono::NaiveDate::parse_from_str(birth, "%Y%m%d").is_err()
            || !(b"19".as_slice() == &bytes[6..8] || b"20".as_slice() == &bytes[6..8])
        {
            return Err("contains no valid birth date".into());
        }
        let sum: u32 = bytes[..17].iter().zip(ID_WEIGHTS).map(|(b, w)| u32::from(b - b'0') * w).sum();
        if ID_CHECK[(sum % 11) as usize] != bytes[17] {
            return Err("check character does not match (GB 11643)".into());
        }
        Ok(IdCardNo(s))
    }

    /// The number in full; show [`IdCardNo::masked`] to anyone without `employee:read_sensitive`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `110105********002X`: region and last four kept.
    pub fn masked(&self) -> String {
        mask_middle(&self.0, 6, 4)
    }
}

/// Never prints the number itself.
impl fmt::Debug for IdCardNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IdCardNo({})", self.masked())
    }
}

impl TryFrom<String> for IdCardNo {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        IdCardNo::parse(&s)
    }
}

impl From<IdCardNo> for String {
    fn from(c: IdCardNo) -> String {
        c.0
    }
}

/// A bank card or account number: 8–32 digits (spaces allowed in input).
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct BankAccount(String);

impl BankAccount {
    /// Drops spaces and dashes and checks that 8–32 digits remain; the error says so otherwise.
    pub fn parse(raw: &str) -> Result<Self, String> {
        let s: String = raw.chars().filter(|c| !c.is_whitespace() && *c != '-').collect();
        if !(8..=32).contains(&s.len()) || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err("must be 8 to 32 digits".into());
        }
        Ok(BankAccount(s))
    }

    /// The number in full, digits only.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `************1234`.
    pub fn masked(&self) -> String {
        mask_middle(&self.0, 0, 4)
    }
}

impl fmt::Debug for BankAccount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BankAccount({})", self.masked())
    }
}

impl TryFrom<String> for BankAccount {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        BankAccount::parse(&s)
    }
}

impl From<BankAccount> for String {
    fn from(c: BankAccount) -> String {
        c.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_credit_code_parses() {
        assert_eq!(CreditCode::parse("91350100m000100y43").unwrap().as_str(), "91350100M000100Y43");
        assert!(CreditCode::parse("91110000717825836N").is_ok());
    }

    #[test]
    fn a_credit_code_with_a_wrong_check_character_is_rejected() {
        let err = CreditCode::parse("91350100M000100Y44").unwrap_err();
        assert!(err.contains("GB 32100"));
    }

    #[test]
    fn credit_codes_of_the_wrong_length_or_alphabet_are_rejected() {
        assert!(CreditCode::parse("91350100M000100Y4").is_err());
        assert!(CreditCode::parse("91350100M0001I0Y43").is_err(), "I is not in the alphabet");
    }

    #[test]
    fn a_valid_id_card_number_parses_with_x_check() {
        assert_eq!(IdCardNo::parse("11010519491231002x").unwrap().as_str(), "11010519491231002X");
        assert!(IdCardNo::parse("110101199003074514").is_ok());
    }

    #[test]
    fn an_id_card_number_with_a_wrong_check_digit_is_rejected() {
        assert!(IdCardNo::parse("110101199003074515").unwrap_err().contains("GB 11643"));
    }

    #[test]
    fn an_id_card_number_with_an_impossible_birth_date_is_rejected() {
        assert!(IdCardNo::parse("110101199002304512").unwrap_err().contains("birth"));
    }

    #[test]
    fn id_card_numbers_are_masked_and_never_debug_printed() {
        let id = IdCardNo::parse("11010519491231002X").unwrap();
        assert_eq!(id.masked(), "110105********002X");
        assert!(!format!("{id:?}").contains("19491231"));
    }

    #[test]
    fn bank_accounts_keep_only_the_last_four_digits_when_masked() {
        let acct = BankAccount::parse("6222 0212 3456 7890").unwrap();
        assert_eq!(acct.as_str(), "6222021234567890");
        assert_eq!(acct.masked(), "************7890");
        assert!(BankAccount::parse("12ab").is_err());
    }
}

atrium_kernel::string_schemas!(
    CreditCode => atrium_kernel::schema::string_schema(
        "Unified social credit code: 18 of 0-9 and A-Y without I, O, S, V, Z, the last a GB 32100 check character",
        Some("^[0-9A-HJ-NP-RTUW-Ya-hj-np-rtuw-y]{18}$"), None, None),
    IdCardNo => atrium_kernel::schema::string_schema(
        "Resident id card number: 17 digits with a birth date (19xx or 20xx) and a GB 11643 check character",
        Some("^[0-9]{6}(19|20)[0-9]{2}(0[1-9]|1[0-2])(0[1-9]|[12][0-9]|3[01])[0-9]{3}[0-9Xx]$"), None, None),
    BankAccount => atrium_kernel::schema::string_schema("Bank card or account number: 8 to 32 digits", Some("^[0-9]{8,32}$"), None, None),
);
