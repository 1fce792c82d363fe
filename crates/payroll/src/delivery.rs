//! Pay-slip delivery: which transport carries each employee's slip when a sheet is sent, and
//! what the slip says as a text.
//!
//! [`PayslipChannels`] is the channel policy: the messaging platform's subscribe message when
//! the employee has an `openid`, else SMS to the phone, else e-mail — and the text when the
//! platform refuses and a phone or e-mail is on file. Adapters only carry a slip over one
//! transport ([`PayslipNotifier`] for the platform, [`TextSender`] for SMS and e-mail). Each
//! item records the outcome, so sending again retries only the failed ones.

use crate::model::{Channel, Payslip, Recipient};
use crate::ports::{PayslipNotifier, TextSender};
use async_trait::async_trait;
use atrium_kernel::StrEnum;
use atrium_kernel::{ContactTarget, Error, Result};
use std::sync::Arc;

/// The pay-slip channel policy over the transports that are configured: the platform when the
/// employee has an openid; a text (SMS to the phone, else e-mail) when not, or when the
/// platform refuses and a phone or e-mail is on file.
pub struct PayslipChannels {
    platform: Option<Arc<dyn PayslipNotifier>>,
    text: Option<Arc<dyn TextSender>>,
}

impl PayslipChannels {
    /// `None` for a transport that is not configured (a slip that needs it fails, saying so).
    pub fn new(platform: Option<Arc<dyn PayslipNotifier>>, text: Option<Arc<dyn TextSender>>) -> Self {
        PayslipChannels { platform, text }
    }

    async fn send_text(&self, slip: &Payslip, to: &Recipient) -> Result<Channel> {
        let target = match (&to.phone, &to.email) {
            (Some(phone), _) => ContactTarget::parse("phone", phone)?,
            (None, Some(email)) => ContactTarget::parse("email", email)?,
            (None, None) => return Err(Error::BadRequest("the employee has no openid, phone or e-mail to send the pay slip to".into())),
        };
        let channel = if matches!(target, ContactTarget::Phone(_)) { Channel::Sms } else { Channel::Email };
        match &self.text {
            Some(text) => {
                text.send_text(&target, "payslip", &payslip_text(slip)).await?;
                Ok(channel)
            }
            None => Err(Error::Upstream(format!("no {} provider is configured", channel.as_str()))),
        }
    }
}

#[async_trait]
impl PayslipNotifier for PayslipChannels {
    async fn send(&self, slip: &Payslip, to: &Recipient) -> Result<Channel> {
        match (&self.platform, &to.openid) {
            (Some(platform), Some(_)) => match platform.send(slip, to).await {
                Ok(channel) => Ok(channel),
                Err(refused) if to.phone.is_some() || to.email.is_some() => {
                    self.send_text(slip, to).await.map_err(|text| Error::Upstream(format!("{refused}; {text}")))
                }
                Err(refused) => Err(refused),
            },
            _ => self.send_text(slip, to).await,
        }
    }
}

/// The slip as a short text message: period, net, gross, contributions, tax (yuan).
pub fn payslip_text(slip: &Payslip) -> String {
    format!(
        "Pay slip {} for {}: net pay {} yuan (gross {}, social insurance and housing fund {}, income tax {}).",
        slip.period, slip.employee_name, slip.net_pay, slip.gross, slip.contributions, slip.tax
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::ports::{MockPayslipNotifier, MockTextSender};
    use atrium_kernel::{Money, Period};

    fn slip() -> Payslip {
        Payslip {
            sheet_id: 1,
            tenant_id: 2,
            period: Period::parse("2026-03").unwrap(),
            employee_id: 3,
            employee_name: "Li Lei".into(),
            gross: Money::from_yuan(10_000),
            contributions: Money::from_yuan(2_000),
            tax: Money::from_yuan(100),
            net_pay: Money::from_yuan(7_900),
        }
    }

    fn to(openid: Option<&str>, phone: Option<&str>, email: Option<&str>) -> Recipient {
        Recipient { openid: openid.map(Into::into), phone: phone.map(Into::into), email: email.map(Into::into) }
    }

    fn platform(answer: fn() -> Result<Channel>, times: usize) -> Option<Arc<dyn PayslipNotifier>> {
        let mut p = MockPayslipNotifier::new();
        p.expect_send().times(times).returning(move |_, _| answer());
        Some(Arc::new(p))
    }

    fn text(channel_of: &'static str, times: usize) -> Option<Arc<dyn TextSender>> {
        let mut t = MockTextSender::new();
        t.expect_send_text()
            .withf(move |target, topic, body| target.channel() == channel_of && topic == "payslip" && body.contains("net pay 7900"))
            .times(times)
            .returning(|_, _, _| Ok(()));
        Some(Arc::new(t))
    }

    #[tokio::test]
    async fn an_employee_with_an_openid_gets_the_platform_message() {
        let channels = PayslipChannels::new(platform(|| Ok(Channel::Wechat), 1), text("sms", 0));

        let sent = channels.send(&slip(), &to(Some("o1"), Some("13800138000"), None)).await.unwrap();

        assert_eq!(sent, Channel::Wechat);
    }

    #[tokio::test]
    async fn a_platform_refusal_falls_back_to_sms_when_a_phone_is_on_file() {
        let channels = PayslipChannels::new(platform(|| Err(Error::Upstream("43101".into())), 1), text("sms", 1));

        let sent = channels.send(&slip(), &to(Some("o1"), Some("13800138000"), None)).await.unwrap();

        assert_eq!(sent, Channel::Sms);
    }

    #[tokio::test]
    async fn without_an_openid_the_slip_goes_by_sms_else_by_e_mail() {
        let by_sms = PayslipChannels::new(platform(|| Ok(Channel::Wechat), 0), text("sms", 1));
        let by_mail = PayslipChannels::new(platform(|| Ok(Channel::Wechat), 0), text("email", 1));

        assert_eq!(by_sms.send(&slip(), &to(None, Some("13800138000"), Some("a@b.cn"))).await.unwrap(), Channel::Sms);
        assert_eq!(by_mail.send(&slip(), &to(None, None, Some("a@b.cn"))).await.unwrap(), Channel::Email);
    }

    #[tokio::test]
    async fn a_slip_with_nowhere_to_go_fails_saying_why() {
        let nowhere = PayslipChannels::new(platform(|| Ok(Channel::Wechat), 0), text("sms", 0));
        let refused_no_fallback = PayslipChannels::new(platform(|| Err(Error::Upstream("43101".into())), 1), text("sms", 0));
        let no_provider = PayslipChannels::new(None, None);

        let a = nowhere.send(&slip(), &to(None, None, None)).await.unwrap_err();
        let b = refused_no_fallback.send(&slip(), &to(Some("o1"), None, None)).await.unwrap_err();
        let c = no_provider.send(&slip(), &to(None, Some("13800138000"), None)).await.unwrap_err();

        assert!(a.to_string().contains("no openid, phone or e-mail"), "{a}");
        assert!(b.to_string().contains("43101"), "{b}");
        assert!(c.to_string().contains("no sms provider"), "{c}");
    }
}
