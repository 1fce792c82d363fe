//! Pay-slip delivery: the port a sheet's `send` hands each employee's slip to.
//!
//! The adapter picks the channel from the [`Recipient`]: the messaging platform's subscribe
//! message when the employee has an `openid`, else SMS to the phone, else e-mail. Each item
//! records the outcome, so sending again retries only the failed ones.

use async_trait::async_trait;
use atrium_kernel::{Id, Money, Period, Result};
use serde::{Deserialize, Serialize};

/// What an employee's pay slip says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payslip {
    pub sheet_id: Id,
    pub tenant_id: Id,
    pub period: Period,
    pub employee_id: Id,
    pub employee_name: String,
    pub gross: Money,
    /// Pension, medical, unemployment and housing fund together.
    pub contributions: Money,
    /// Income tax withheld this month, the separately taxed annual bonus's tax included.
    pub tax: Money,
    pub net_pay: Money,
}

/// Where a slip can go, from the employee record.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Recipient {
    pub openid: Option<String>,
    pub phone: Option<String>,
    pub email: Option<String>,
}

/// The channel a slip went out on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Channel {
    Wechat,
    Sms,
    Email,
}

impl Channel {
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Wechat => "wechat",
            Channel::Sms => "sms",
            Channel::Email => "email",
        }
    }

    pub fn parse(s: &str) -> Option<Channel> {
        match s {
            "wechat" => Some(Channel::Wechat),
            "sms" => Some(Channel::Sms),
            "email" => Some(Channel::Email),
            _ => None,
        }
    }
}

/// Sends pay slips.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait PayslipNotifier: Send + Sync + 'static {
    /// Delivers `slip` to `to` and returns the channel used. An error says why it could not be
    /// delivered (no channel for this recipient, the platform refused, the network failed); the
    /// message is kept on the item, so it must not carry secrets.
    async fn send(&self, slip: &Payslip, to: &Recipient) -> Result<Channel>;
}
