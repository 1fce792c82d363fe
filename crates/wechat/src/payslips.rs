//! Pay slips as subscribe messages: payroll's [`PayslipNotifier`] for employees with an openid.

use async_trait::async_trait;
use atrium_kernel::{Error, Money, Result};
use atrium_payroll::{Channel, Payslip, PayslipNotifier, Recipient};
use std::sync::Arc;

use crate::{MiniProgramState, SubscribeMessage, SubscribeMessages};

/// Template key of the period, e.g. `2026-03 工资条` (type `thing`).
pub const PAYSLIP_KEY_PERIOD: &str = "thing1";
/// Template key of the net pay in yuan, e.g. `12345.67` (type `amount`).
pub const PAYSLIP_KEY_NET_PAY: &str = "amount2";
/// Template key of the employee's name, cut to 20 characters (type `thing`).
pub const PAYSLIP_KEY_NAME: &str = "thing3";
/// Template key of the gross pay in yuan (type `amount`).
pub const PAYSLIP_KEY_GROSS: &str = "amount4";
/// Template key of the income tax withheld in yuan (type `amount`).
pub const PAYSLIP_KEY_TAX: &str = "amount5";

/// The platform's limit on a `thing` value, in characters.
const THING_MAX_CHARS: usize = 20;

/// Sends pay slips as subscribe messages.
///
/// The template chosen in the platform's console must have these keys (see the
/// `PAYSLIP_KEY_*` constants):
///
/// | key       | type   | value                                   |
/// |-----------|--------|-----------------------------------------|
/// | `thing1`  | thing  | period, `2026-03 工资条`                 |
/// | `amount2` | amount | net pay in yuan, `12345.67`             |
/// | `thing3`  | thing  | employee name, cut to 20 characters     |
/// | `amount4` | amount | gross pay in yuan                       |
/// | `amount5` | amount | income tax withheld in yuan             |
///
/// Amounts are written from integer fen, two decimals, no thousands separators (the platform's
/// `amount` type allows none).
pub struct WechatPayslips {
    pub messages: Arc<SubscribeMessages>,
    pub template_id: String,
    /// The page the message opens, e.g. `pages/payslip/index`.
    pub page: Option<String>,
    pub miniprogram_state: MiniProgramState,
}

impl WechatPayslips {
    /// The subscribe message that carries `slip` to `openid`.
    pub fn message_for(&self, slip: &Payslip, openid: &str) -> SubscribeMessage {
        let mut msg = SubscribeMessage::new(openid, self.template_id.clone())
            .field(PAYSLIP_KEY_PERIOD, thing(&format!("{} 工资条", slip.period)))
            .field(PAYSLIP_KEY_NET_PAY, amount(slip.net_pay))
            .field(PAYSLIP_KEY_NAME, thing(&slip.employee_name))
            .field(PAYSLIP_KEY_GROSS, amount(slip.gross))
            .field(PAYSLIP_KEY_TAX, amount(slip.tax));
        msg.page = self.page.clone();
        msg.miniprogram_state = self.miniprogram_state;
        msg
    }
}

/// A `thing` value: trimmed, at most 20 characters (longer ones end in `…`), never empty.
fn thing(text: &str) -> String {
    let text = text.trim();
    if text.is_empty() {
        return "-".into();
    }
    if text.chars().count() <= THING_MAX_CHARS {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(THING_MAX_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// An `amount` value: yuan with two decimals from integer fen, e.g. `12345.67`.
fn amount(money: Money) -> String {
    money.to_string()
}

#[async_trait]
impl PayslipNotifier for WechatPayslips {
    /// Sends to `to.openid`; a recipient without one is a `BadRequest` (the caller picks
    /// another channel for them).
    async fn send(&self, slip: &Payslip, to: &Recipient) -> Result<Channel> {
        let Some(openid) = to.openid.as_deref().map(str::trim).filter(|o| !o.is_empty()) else {
            return Err(Error::BadRequest("the employee has no openid on the messaging platform".into()));
        };
        self.messages.send(&self.message_for(slip, openid)).await?;
        log::info!("sent the {} pay slip of employee {} (sheet {}) as a subscribe message", slip.period, slip.employee_id, slip.sheet_id);
        Ok(Channel::Wechat)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thing_longer_than_twenty_characters_is_cut_with_an_ellipsis() {
        let long = "欧阳".repeat(11);
        let cut = thing(&long);
        assert_eq!(cut.chars().count(), 20);
        assert!(cut.ends_with('…') && cut.starts_with("欧阳欧阳"));
        assert_eq!(thing(&"a".repeat(20)), "a".repeat(20));
        assert_eq!(thing("  Ann  "), "Ann");
        assert_eq!(thing(" "), "-");
    }

    #[test]
    fn amounts_are_yuan_with_two_decimals_from_fen() {
        assert_eq!(amount(Money::from_fen(1_234_567)), "12345.67");
        assert_eq!(amount(Money::from_fen(5)), "0.05");
        assert_eq!(amount(Money::ZERO), "0.00");
    }
}
