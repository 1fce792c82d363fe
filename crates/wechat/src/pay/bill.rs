//! The trade bill: a CSV text whose every value starts with a backtick, amounts in yuan with
//! two decimals, rows until the summary header. Converted to fen exactly, without floats.
use atrium_kernel::Money;
use atrium_kernel::StrEnum;
use atrium_payments::{BillLine, BillRefund, BillTradeState};

/// The first cell of the summary header that ends the rows.
const SUMMARY: &str = "总交易单数";

/// `"123.45"`, `` "`0.01" ``, `"-3"`, `"7.5"` → fen; `None` for anything else (more than two
/// decimals, letters, an empty value, out of range).
pub fn yuan_to_fen(raw: &str) -> Option<Money> {
    let s = raw.trim().trim_start_matches('`');
    let (negative, s) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let (whole, frac) = match s.split_once('.') {
        Some((_, "")) => return None,
        Some(parts) => parts,
        None => (s, ""),
    };
    if whole.is_empty() || frac.len() > 2 || !whole.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let whole: i64 = whole.parse().ok()?;
    let cents: i64 = match frac.len() {
        0 => 0,
        1 => frac.parse::<i64>().ok()? * 10,
        _ => frac.parse().ok()?,
    };
    let fen = whole.checked_mul(100)?.checked_add(cents)?;
    Some(Money::from_fen(if negative { -fen } else { fen }))
}

/// SHA-1 of `bytes`, lower-case hex, to compare with the bill's `hash_value`.
pub fn sha1_hex(bytes: &[u8]) -> String {
    hex::encode(openssl::sha::sha1(bytes))
}

/// The cells of a bill row: the leading backtick of each value removed. Values are split on
/// `` ,` `` so a comma inside a value (a product name) does not split it.
fn cells(line: &str) -> Vec<&str> {
    line.trim_start_matches('`').split(",`").collect()
}

/// Parses a trade bill (`bill_type=ALL`). Columns are found by their header names.
pub fn parse_trade_bill(text: &str) -> Result<Vec<BillLine>, String> {
    let mut lines = text.lines().map(|l| l.trim_end_matches('\r')).filter(|l| !l.trim().is_empty());
    let header: Vec<&str> = lines.next().ok_or("the bill is empty")?.trim_start_matches('\u{feff}').split(',').collect();
    let col = |name: &str| header.iter().position(|h| h.trim() == name).ok_or_else(|| format!("the bill has no column {name}"));
    let (c_txid, c_no, c_state, c_total) = (col("微信订单号")?, col("商户订单号")?, col("交易状态")?, col("订单金额")?);
    let (c_refund_id, c_refund_no, c_refund_amount, c_refund_state) =
        (col("微信退款单号")?, col("商户退款单号")?, col("申请退款金额")?, col("退款状态")?);
    let mut out = Vec::new();
    for (i, line) in lines.enumerate() {
        if line.starts_with(SUMMARY) {
            break;
        }
        let row = cells(line);
        let cell = |c: usize| row.get(c).map(|v| v.trim()).ok_or_else(|| format!("row {} is short", i + 1));
        let state = cell(c_state)?;
        let trade_state = BillTradeState::parse(state).ok_or_else(|| format!("row {}: unknown trade state {state:?}", i + 1))?;
        let amount = yuan_to_fen(cell(c_total)?).ok_or_else(|| format!("row {}: unreadable 订单金额", i + 1))?;
        let refund = if trade_state == BillTradeState::Refund {
            Some(BillRefund {
                refund_id: cell(c_refund_id)?.to_owned(),
                out_refund_no: cell(c_refund_no)?.to_owned(),
                amount: yuan_to_fen(cell(c_refund_amount)?).ok_or_else(|| format!("row {}: unreadable 申请退款金额", i + 1))?,
                status: cell(c_refund_state)?.to_owned(),
            })
        } else {
            None
        };
        out.push(BillLine { transaction_id: cell(c_txid)?.to_owned(), out_trade_no: cell(c_no)?.to_owned(), trade_state, amount, refund });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yuan_become_fen_exactly() {
        let cases =
            [("`123.45", 12345), ("0.01", 1), ("7.5", 750), ("3", 300), ("-0.10", -10), ("`12345678.90", 1_234_567_890), ("0.07", 7)];
        for (raw, fen) in cases {
            assert_eq!(yuan_to_fen(raw), Some(Money::from_fen(fen)), "{raw}");
        }
        for bad in ["", "`", "1.234", "1,00", "abc", ".5", "1.", "1e3", "99999999999999999999"] {
            assert_eq!(yuan_to_fen(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_comma_inside_a_value_does_not_split_it() {
        let text = "交易时间,微信订单号,商户订单号,交易状态,订单金额,微信退款单号,商户退款单号,申请退款金额,退款状态\n\
                    `2026-03-31 10:00:00,`42,`T1,`SUCCESS,`1.00,`0,`0,`0.00,`\n";
        let with_comma = text.replace("`42", "`4,2");
        assert_eq!(parse_trade_bill(&with_comma).unwrap()[0].transaction_id, "4,2");
    }

    #[test]
    fn an_unknown_trade_state_is_an_error_not_a_silent_skip() {
        let text = "交易时间,微信订单号,商户订单号,交易状态,订单金额,微信退款单号,商户退款单号,申请退款金额,退款状态\n\
                    `t,`42,`T1,`WEIRD,`1.00,`0,`0,`0.00,`\n";
        assert!(parse_trade_bill(text).unwrap_err().contains("WEIRD"));
    }
}
