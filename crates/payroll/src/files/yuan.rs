//! Amounts in yuan as a spreadsheet cell holds them, read into fen exactly: decimal text, never
//! a float.
use atrium_kernel::Money;

/// What an amount looks like, for error messages.
const SHAPE: &str = "must be an amount in yuan with at most two decimals, e.g. 1234.56";

/// Reads an amount in yuan — `800`, `1234.5`, `1234.56`, `1,234.56` — into fen, exactly.
///
/// - Surrounding blanks are ignored; a blank is 0.
/// - Digits with at most two decimals; a comma may group the whole yuan by thousands
///   (`1,234,567.89`), correctly grouped only (`12,34` is refused).
/// - No sign (an amount entered is never negative: `-5` is refused as negative), no currency
///   symbol, no exponent, no more than two decimals (`1.005` and `1.500` are refused: a
///   spreadsheet's formula that left a third decimal must be rounded there, not here).
/// - At most [`Money::MAX_INPUT`] (10,000,000,000.00 yuan).
///
/// The error suits a field error's message.
pub fn parse_yuan(text: &str) -> Result<Money, String> {
    let t = text.trim();
    if t.is_empty() {
        return Ok(Money::ZERO);
    }
    if t.starts_with('-') {
        return Err("must not be negative".to_owned());
    }
    let (whole, fraction) = match t.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (t, None),
    };
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit() || b == b',') {
        return Err(SHAPE.to_owned());
    }
    let digits: String = if whole.contains(',') {
        let mut groups = whole.split(',');
        let first = groups.next().unwrap_or_default();
        if first.is_empty() || first.len() > 3 || !groups.all(|g| g.len() == 3) {
            return Err("has a misplaced thousands separator: commas group whole yuan by three, e.g. 1,234,567.89".to_owned());
        }
        whole.replace(',', "")
    } else {
        whole.to_owned()
    };
    let cents = match fraction {
        None => 0,
        Some(f) if f.is_empty() || !f.bytes().all(|b| b.is_ascii_digit()) => return Err(SHAPE.to_owned()),
        Some(f) if f.len() > 2 => {
            return Err(format!("has more than two decimals: {t} is not a whole number of fen; round it to two decimals"));
        }
        Some(f) => {
            let n: i64 = f.parse().map_err(|_| SHAPE.to_owned())?;
            if f.len() == 1 { n * 10 } else { n }
        }
    };
    let too_large = || format!("must be at most {} yuan", Money::MAX_INPUT);
    // More digits than any accepted amount has are too large, whatever they say.
    let significant = digits.trim_start_matches('0');
    if significant.len() > 15 {
        return Err(too_large());
    }
    let yuan: i64 = if significant.is_empty() { 0 } else { significant.parse().map_err(|_| SHAPE.to_owned())? };
    let fen = yuan.checked_mul(100).and_then(|f| f.checked_add(cents)).ok_or_else(too_large)?;
    Money::from_fen(fen).check_input().map_err(|_| too_large())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fen(text: &str) -> Result<i64, String> {
        parse_yuan(text).map(Money::fen)
    }

    #[test]
    fn yuan_text_is_read_into_fen_exactly() {
        for (text, expected) in [
            ("0", 0),
            ("", 0),
            ("   ", 0),
            ("800", 80_000),
            ("1234.5", 123_450),
            ("1234.56", 123_456),
            ("0.01", 1),
            ("0.1", 10),
            (" 12.30 ", 1_230),
            ("007.05", 705),
            // Values a float would get wrong: 0.29 × 100 is 28.999999999999996.
            ("0.29", 29),
            ("1.15", 115),
            ("4.35", 435),
            ("10000000000", 1_000_000_000_000),
            ("10000000000.00", 1_000_000_000_000),
            ("00000000000000000001.00", 100),
        ] {
            assert_eq!(fen(text), Ok(expected), "{text:?}");
        }
    }

    #[test]
    fn more_than_two_decimals_is_refused_not_rounded() {
        for text in ["1.005", "0.001", "1.500", "0.30000000000000004", "123.45000000000002"] {
            let err = fen(text).unwrap_err();
            assert!(err.contains("more than two decimals"), "{text}: {err}");
        }
    }

    #[test]
    fn negative_amounts_are_refused() {
        for text in ["-5", "-0.01", " -1,000.00"] {
            assert_eq!(fen(text), Err("must not be negative".to_owned()), "{text}");
        }
    }

    #[test]
    fn thousands_separators_group_whole_yuan_by_three_only() {
        assert_eq!(fen("1,234.56"), Ok(123_456));
        assert_eq!(fen("1,234,567.89"), Ok(123_456_789));
        assert_eq!(fen("999,999"), Ok(99_999_900));
        for text in ["12,34", "1,2345", ",123", "1,,234", "1234,567", "1,234.5,6", "1.234,56"] {
            assert!(fen(text).is_err(), "{text} was accepted");
        }
    }

    #[test]
    fn anything_but_plain_decimal_yuan_is_refused() {
        for text in ["+5", "1e3", "1E3", "¥100", "100元", "1.", ".5", "1..2", "abc", "12 34", "１２", "NaN", "inf", "0x10", "1_000"] {
            assert!(fen(text).is_err(), "{text} was accepted");
        }
    }

    #[test]
    fn amounts_above_the_input_limit_are_refused() {
        for text in ["10000000000.01", "99999999999", "9223372036854775807", "92233720368547758.08", "1000000000000000000000"] {
            let err = fen(text).unwrap_err();
            assert!(err.contains("at most 10000000000.00 yuan"), "{text}: {err}");
        }
    }
}
