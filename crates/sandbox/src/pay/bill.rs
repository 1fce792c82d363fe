//! The trade bill as the platform writes it: a header row, one row per payment (`SUCCESS`) and
//! per refund (`REFUND`) of the day in China Standard Time, each value led by a backtick, amounts
//! in yuan with two decimals (fees with five), then the summary header and row.
use chrono::{DateTime, NaiveDate, Utc};

use super::{PayState, cst};

const HEADER: &str = "交易时间,公众账号ID,商户号,特约商户号,设备号,微信订单号,商户订单号,用户标识,交易类型,交易状态,付款银行,货币种类,\
应结订单金额,代金券金额,微信退款单号,商户退款单号,退款金额,充值券退款金额,退款类型,退款状态,商品名称,商户数据包,手续费,费率,订单金额,\
申请退款金额,费率备注";
const SUMMARY_HEADER: &str = "总交易单数,应结订单总金额,退款总金额,充值券退款总金额,手续费总金额,订单总金额,申请退款总金额";

/// Fen as yuan: `1234` → `12.34`.
pub(crate) fn yuan(fen: i64) -> String {
    let sign = if fen < 0 { "-" } else { "" };
    format!("{sign}{}.{:02}", fen.unsigned_abs() / 100, fen.unsigned_abs() % 100)
}

/// The 0.6 % fee on `fen`, in yuan with five decimals: 1 fen is 1000 units of 0.00001 yuan, so
/// the fee is 6 units a fen.
fn fee(fen: i64) -> String {
    fee_units(fen * 6)
}

/// A value as it may stand in a bill cell: no line breaks, no backticks.
fn clean(s: &str) -> String {
    s.chars().map(|c| if matches!(c, '\r' | '\n' | '`') { ' ' } else { c }).collect()
}

fn row(cells: &[String]) -> String {
    cells.iter().map(|c| format!("`{c}")).collect::<Vec<_>>().join(",")
}

fn on_day(t: DateTime<Utc>, day: NaiveDate) -> bool {
    t.with_timezone(&cst()).date_naive() == day
}

/// The bill of `mchid` (a merchant, or a sub-merchant) for `day`, or `None` when the day has
/// no rows.
pub(crate) fn trade_bill(pay: &PayState, mchid: &str, day: NaiveDate, bill_type: &str) -> Option<String> {
    // (time, cells)
    let mut rows: Vec<(DateTime<Utc>, Vec<String>)> = Vec::new();
    let (mut settled, mut refunded, mut fees, mut ordered, mut asked) = (0i64, 0i64, 0i64, 0i64, 0i64);
    let time = |t: DateTime<Utc>| t.with_timezone(&cst()).format("%Y-%m-%d %H:%M:%S").to_string();
    for order in pay.orders.values().filter(|o| o.mchid == mchid) {
        let (Some(txid), Some(paid_at)) = (&order.transaction_id, order.success_time) else { continue };
        // A sub-merchant's order: the provider under 商户号, the sub-merchant under 特约商户号.
        let (merchant, sub_merchant) = match &order.sp_mchid {
            Some(sp_mchid) => (sp_mchid.clone(), order.mchid.clone()),
            None => (order.mchid.clone(), "0".to_owned()),
        };
        let common = |state: &str| {
            vec![
                order.appid.clone(),
                merchant.clone(),
                sub_merchant.clone(),
                String::new(),
                txid.clone(),
                order.out_trade_no.clone(),
                order.openid.clone(),
                "JSAPI".to_owned(),
                state.to_owned(),
                "OTHERS".to_owned(),
                "CNY".to_owned(),
            ]
        };
        if bill_type != "REFUND" && on_day(paid_at, day) {
            let mut cells = vec![time(paid_at)];
            cells.extend(common("SUCCESS"));
            cells.extend([yuan(order.total), yuan(0), "0".into(), "0".into(), yuan(0), yuan(0), String::new(), String::new()]);
            cells.extend([clean(&order.description), clean(order.attach.as_deref().unwrap_or_default()), fee(order.total)]);
            cells.extend(["0.60%".to_owned(), yuan(order.total), yuan(0), String::new()]);
            settled += order.total;
            fees += order.total * 6;
            ordered += order.total;
            rows.push((paid_at, cells));
        }
        if bill_type == "SUCCESS" {
            continue;
        }
        for refund in order.refunds.iter().filter_map(|no| pay.refunds.get(&(mchid.to_owned(), no.clone()))) {
            if !on_day(refund.created_at, day) {
                continue;
            }
            let mut cells = vec![time(refund.created_at)];
            cells.extend(common("REFUND"));
            cells.extend([yuan(0), yuan(0), refund.refund_id.clone(), refund.out_refund_no.clone(), yuan(refund.amount), yuan(0)]);
            cells.extend(["ORIGINAL".to_owned(), refund.status.to_owned()]);
            cells.extend([clean(&order.description), clean(order.attach.as_deref().unwrap_or_default()), fee(-refund.amount)]);
            cells.extend(["0.60%".to_owned(), yuan(order.total), yuan(refund.amount), String::new()]);
            refunded += refund.amount;
            fees -= refund.amount * 6;
            asked += refund.amount;
            rows.push((refund.created_at, cells));
        }
    }
    if rows.is_empty() {
        return None;
    }
    rows.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    let mut text = String::from(HEADER);
    text.push_str("\r\n");
    for (_, cells) in &rows {
        text.push_str(&row(cells));
        text.push_str("\r\n");
    }
    text.push_str(SUMMARY_HEADER);
    text.push_str("\r\n");
    let summary = [rows.len().to_string(), yuan(settled), yuan(refunded), yuan(0), fee_units(fees), yuan(ordered), yuan(asked)];
    text.push_str(&row(&summary));
    text.push_str("\r\n");
    Some(text)
}

/// Units of 0.00001 yuan as yuan with five decimals.
fn fee_units(units: i64) -> String {
    let sign = if units < 0 { "-" } else { "" };
    format!("{sign}{}.{:05}", units.unsigned_abs() / 100_000, units.unsigned_abs() % 100_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_are_written_in_yuan_and_fees_with_five_decimals() {
        assert_eq!(yuan(1234), "12.34");
        assert_eq!(yuan(1), "0.01");
        assert_eq!(yuan(-10), "-0.10");
        assert_eq!(yuan(1_234_567_890), "12345678.90");
        assert_eq!(fee(1000), "0.06000");
        assert_eq!(fee(1), "0.00006");
        assert_eq!(fee(-300), "-0.01800");
    }

    #[test]
    fn values_lose_line_breaks_and_backticks() {
        assert_eq!(clean("a\r\nb`c"), "a  b c");
    }
}
