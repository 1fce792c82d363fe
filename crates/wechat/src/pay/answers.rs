//! The pay platform's JSON answers and decrypted notification resources, and their
//! translation into the domain's reports.
use atrium_kernel::{Money, StrEnum, Timestamp};
use atrium_payments::{
    PlatformRefund, PlatformReturn, PlatformShareLine, PlatformShareOrder, PlatformTransaction, ReceiverResult, ReceiverType, RefundStatus,
    ReturnResult, ShareOrderState, TradeState,
};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
pub(crate) struct AmountAnswer {
    #[serde(default)]
    total: Option<i64>,
    #[serde(default)]
    payer_total: Option<i64>,
    #[serde(default)]
    refund: Option<i64>,
    #[serde(default)]
    currency: Option<String>,
}

/// A transaction: the query answer and the `TRANSACTION.*` resource.
#[derive(Debug, Deserialize)]
pub(crate) struct TransactionAnswer {
    out_trade_no: String,
    trade_state: String,
    #[serde(default)]
    transaction_id: Option<String>,
    #[serde(default)]
    success_time: Option<String>,
    #[serde(default)]
    amount: Option<AmountAnswer>,
    /// Set in answers of the partner endpoints (service-provider mode).
    #[serde(default)]
    sub_mchid: Option<String>,
}

/// A refund: the refund answer, its query, and the `REFUND.*` resource (which names the
/// status `refund_status`).
#[derive(Debug, Deserialize)]
pub(crate) struct RefundAnswer {
    out_refund_no: String,
    #[serde(default)]
    out_trade_no: Option<String>,
    #[serde(default)]
    refund_id: Option<String>,
    #[serde(alias = "refund_status")]
    status: String,
    #[serde(default)]
    success_time: Option<String>,
    #[serde(default)]
    amount: Option<AmountAnswer>,
    /// Set in service-provider mode.
    #[serde(default)]
    sub_mchid: Option<String>,
}

/// `GET /v3/profitsharing/merchant-configs/{sub_mchid}`: the largest share of a payment the
/// provider may split off, in basis points.
#[derive(Deserialize)]
pub(crate) struct MaxRatioAnswer {
    pub max_ratio: u32,
}

/// A share or unfreeze request: the answer of `POST /v3/profitsharing/orders`, of its query
/// and of `POST /v3/profitsharing/orders/unfreeze`.
#[derive(Debug, Deserialize)]
pub(crate) struct ShareOrderAnswer {
    out_order_no: String,
    #[serde(default)]
    order_id: Option<String>,
    state: String,
    #[serde(default)]
    receivers: Vec<ShareLineAnswer>,
}

/// One receiver's line of a share or unfreeze request.
#[derive(Debug, Deserialize)]
pub(crate) struct ShareLineAnswer {
    amount: i64,
    #[serde(rename = "type")]
    kind: String,
    account: String,
    result: String,
    #[serde(default)]
    fail_reason: Option<String>,
    #[serde(default)]
    finish_time: Option<String>,
}

/// A return: the answer of `POST /v3/profitsharing/return-orders` and of its query
/// (`GET /v3/profitsharing/return-orders/{out_return_no}`).
#[derive(Debug, Deserialize)]
pub(crate) struct ReturnAnswer {
    out_return_no: String,
    #[serde(default)]
    return_id: Option<String>,
    result: String,
    #[serde(default)]
    fail_reason: Option<String>,
    #[serde(default)]
    amount: Option<i64>,
    #[serde(default)]
    finish_time: Option<String>,
}

/// The `PROFITSHARING.*` resource: one receiver's result of a share request. Only what names
/// the request is read; the service settles it by querying.
#[derive(Debug, Deserialize)]
pub(crate) struct ShareNotice {
    pub out_order_no: String,
    pub transaction_id: String,
}

#[derive(Debug, Deserialize)]
pub(crate) struct PrepayAnswer {
    pub prepay_id: String,
}

#[derive(Debug, Deserialize)]
pub(crate) struct BillAnswer {
    pub hash_type: String,
    pub hash_value: String,
    pub download_url: String,
}

/// The platform's error body: `{"code", "message", "detail"?}`.
#[derive(Debug, Deserialize)]
pub(crate) struct ErrorAnswer {
    #[serde(default)]
    pub code: String,
    #[serde(default)]
    pub message: String,
}

fn money(fen: Option<i64>) -> Result<Option<Money>, String> {
    match fen {
        Some(f) if f < 0 => Err(format!("negative amount {f}")),
        other => Ok(other.map(Money::from_fen)),
    }
}

fn time(t: Option<String>) -> Result<Option<Timestamp>, String> {
    t.filter(|s| !s.is_empty())
        .map(|s| chrono::DateTime::parse_from_rfc3339(&s).map(|d| d.to_utc()).map_err(|_| format!("unreadable time {s:?}")))
        .transpose()
}

impl TransactionAnswer {
    pub(crate) fn into_report(self) -> Result<PlatformTransaction, String> {
        let trade_state = TradeState::parse(&self.trade_state).ok_or_else(|| format!("unknown trade_state {:?}", self.trade_state))?;
        let (total, payer_total, currency) = self.amount.map_or((None, None, None), |a| (a.total, a.payer_total, a.currency));
        Ok(PlatformTransaction {
            out_trade_no: self.out_trade_no,
            trade_state,
            transaction_id: self.transaction_id.filter(|s| !s.is_empty()),
            amount: money(total)?,
            currency,
            payer_total: money(payer_total)?,
            success_time: time(self.success_time)?,
            sub_mchid: self.sub_mchid.filter(|s| !s.is_empty()),
        })
    }
}

impl RefundAnswer {
    pub(crate) fn into_report(self) -> Result<PlatformRefund, String> {
        let status = match self.status.as_str() {
            "SUCCESS" => RefundStatus::Succeeded,
            "PROCESSING" => RefundStatus::Processing,
            "CLOSED" => RefundStatus::Closed,
            "ABNORMAL" => RefundStatus::Failed,
            other => return Err(format!("unknown refund status {other:?}")),
        };
        Ok(PlatformRefund {
            out_refund_no: self.out_refund_no,
            out_trade_no: self.out_trade_no,
            refund_id: self.refund_id.filter(|s| !s.is_empty()),
            status,
            amount: money(self.amount.and_then(|a| a.refund))?,
            success_time: time(self.success_time)?,
            sub_mchid: self.sub_mchid.filter(|s| !s.is_empty()),
        })
    }
}

impl ShareOrderAnswer {
    pub(crate) fn into_report(self) -> Result<PlatformShareOrder, String> {
        let state: ShareOrderState = self.state.parse().map_err(|_| format!("unknown state {:?}", self.state))?;
        let lines = self.receivers.into_iter().map(ShareLineAnswer::into_report).collect::<Result<_, _>>()?;
        Ok(PlatformShareOrder { out_order_no: self.out_order_no, order_id: self.order_id.filter(|s| !s.is_empty()), state, lines })
    }
}

impl ShareLineAnswer {
    fn into_report(self) -> Result<PlatformShareLine, String> {
        let kind: ReceiverType = self.kind.parse().map_err(|_| format!("unknown receiver type {:?}", self.kind))?;
        let result: ReceiverResult = self.result.parse().map_err(|_| format!("unknown receiver result {:?}", self.result))?;
        if self.amount < 0 {
            return Err(format!("negative amount {}", self.amount));
        }
        // A line still pending has not finished, whatever time the answer puts there.
        let finish_time = match result {
            ReceiverResult::Pending => None,
            ReceiverResult::Success | ReceiverResult::Closed => time(self.finish_time)?,
        };
        Ok(PlatformShareLine {
            kind,
            account: self.account,
            amount: Money::from_fen(self.amount),
            result,
            fail_reason: self.fail_reason.filter(|s| !s.is_empty()),
            finish_time,
        })
    }
}

impl ReturnAnswer {
    pub(crate) fn into_report(self) -> Result<PlatformReturn, String> {
        let result: ReturnResult = self.result.parse().map_err(|_| format!("unknown return result {:?}", self.result))?;
        // A return still processing has not finished, whatever time the answer puts there.
        let finish_time = match result {
            ReturnResult::Processing => None,
            ReturnResult::Success | ReturnResult::Failed => time(self.finish_time)?,
        };
        Ok(PlatformReturn {
            out_return_no: self.out_return_no,
            return_id: self.return_id.filter(|s| !s.is_empty()),
            result,
            fail_reason: self.fail_reason.filter(|s| !s.is_empty()),
            amount: money(self.amount)?,
            finish_time,
        })
    }
}
