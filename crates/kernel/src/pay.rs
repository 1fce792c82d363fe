//! The vocabulary of money movements that the payments ledger and the domains paying through
//! it (orders) share: how something was paid ([`PaymentMethod`]), a refund's status
//! ([`RefundStatus`]) and what a payer's mini-program needs to pay ([`PayParams`]).
use serde::{Deserialize, Serialize};

/// How a payment was (or is being) made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum PaymentMethod {
    /// The pay platform's JSAPI payment, in the tenant's mini-program.
    WechatJsapi,
    /// Outside the platform (bank transfer, cash), recorded by a user.
    Offline,
}

/// A refund's status: `processing` → `succeeded` | `failed` | `closed`; the last three are
/// final. A processing or succeeded refund holds its amount; a failed or closed one gives it
/// back to what is left to refund.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString, strum::VariantArray)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum RefundStatus {
    /// Accepted by the platform (or about to be sent), not settled yet.
    Processing,
    /// The money went back to the payer (an offline refund is succeeded at once).
    Succeeded,
    /// The platform could not refund (its `ABNORMAL`), or refused the request.
    Failed,
    /// The platform closed the refund without paying it.
    Closed,
}

impl RefundStatus {
    /// Whether the refund's amount is spoken for: a processing or succeeded refund counts
    /// against what is left to refund; a failed or closed one gives its amount back.
    pub fn holds_amount(self) -> bool {
        matches!(self, RefundStatus::Processing | RefundStatus::Succeeded)
    }

    /// Whether the platform has settled the refund (succeeded, failed or closed) and it will
    /// not change again.
    pub fn is_final(self) -> bool {
        self != RefundStatus::Processing
    }

    /// The status once the platform has reported `reported`: only a processing refund
    /// settles, and only once.
    pub fn advance(self, reported: RefundStatus) -> Option<RefundStatus> {
        (self == RefundStatus::Processing && reported != RefundStatus::Processing).then_some(reported)
    }
}

/// What the mini-program passes to `wx.requestPayment`, signed with the merchant key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PayParams {
    /// The mini-program's app id (`appId`).
    #[serde(rename = "appId")]
    pub app_id: String,
    /// Unix seconds, as a string.
    #[serde(rename = "timeStamp")]
    pub time_stamp: String,
    /// A random string the signature covers (`nonceStr`).
    #[serde(rename = "nonceStr")]
    pub nonce_str: String,
    /// `prepay_id=…`
    pub package: String,
    /// Always `RSA`.
    #[serde(rename = "signType")]
    pub sign_type: String,
    /// The signature over app id, time stamp, nonce and package (`paySign`), base64.
    #[serde(rename = "paySign")]
    pub pay_sign: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StrEnum;

    #[test]
    fn a_refund_settles_once_and_failed_or_closed_ones_free_their_amount() {
        use RefundStatus as R;
        for to in [R::Succeeded, R::Failed, R::Closed] {
            assert_eq!(R::Processing.advance(to), Some(to));
            assert!(to.is_final());
            for again in [R::Processing, R::Succeeded, R::Failed, R::Closed] {
                assert_eq!(to.advance(again), None, "{to:?} -> {again:?}");
            }
        }
        assert_eq!(R::Processing.advance(R::Processing), None);
        assert!(R::Processing.holds_amount() && R::Succeeded.holds_amount());
        assert!(!R::Failed.holds_amount() && !R::Closed.holds_amount());
        assert_eq!(R::Succeeded.as_str(), "succeeded");
        assert_eq!(PaymentMethod::WechatJsapi.as_str(), "wechat_jsapi");
    }

    #[test]
    fn pay_params_use_the_mini_program_field_names() {
        let p = PayParams {
            app_id: "wx1".into(),
            time_stamp: "1700000000".into(),
            nonce_str: "n".into(),
            package: "prepay_id=p".into(),
            sign_type: "RSA".into(),
            pay_sign: "s".into(),
        };
        let v = serde_json::to_value(p).unwrap_or_default();
        for k in ["appId", "timeStamp", "nonceStr", "package", "signType", "paySign"] {
            assert!(v.get(k).is_some(), "{k} missing in {v}");
        }
    }
}
