use async_trait::async_trait;
use atrium_identity::{CodePurpose, CodeSender};
use atrium_kernel::StrEnum;
use atrium_kernel::{ContactTarget, Result};
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::sync::{Arc, Mutex};

/// One message the sandbox "delivered": a verification code or a plain text (e.g. a pay slip).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct OutboxMessage {
    /// `sms` or `email`.
    pub channel: &'static str,
    pub target: String,
    /// A code purpose (`login`, `register`, …) or a text's purpose (e.g. `payslip`).
    pub purpose: String,
    /// The verification code, for code messages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The message text, for text messages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    pub sent_at: DateTime<Utc>,
}

/// SMS and e-mail delivery that keeps messages in memory for tests and local use.
#[derive(Clone, Default)]
pub struct SandboxOutbox {
    messages: Arc<Mutex<Vec<OutboxMessage>>>,
}

impl SandboxOutbox {
    const KEEP: usize = 10_000;

    /// Messages sent to `target` (all when `None`), oldest first.
    pub fn messages(&self, target: Option<&str>) -> Vec<OutboxMessage> {
        let all = self.messages.lock().unwrap_or_else(|p| p.into_inner());
        all.iter().filter(|m| target.is_none_or(|t| m.target == t)).cloned().collect()
    }

    /// "Delivers" a plain text message to `target` by SMS or e-mail, e.g. a pay slip with
    /// `purpose` `payslip`.
    pub fn deliver_text(&self, target: &ContactTarget, purpose: &str, text: &str) {
        self.push(target, purpose, None, Some(text.to_owned()));
        log::info!("sandbox delivered a {purpose} text by {} to {}", target.channel(), target);
    }

    fn push(&self, target: &ContactTarget, purpose: &str, code: Option<String>, text: Option<String>) {
        let mut all = self.messages.lock().unwrap_or_else(|p| p.into_inner());
        if all.len() >= Self::KEEP {
            all.drain(..Self::KEEP / 2);
        }
        all.push(OutboxMessage {
            channel: target.channel(),
            target: target.as_str().to_owned(),
            purpose: purpose.to_owned(),
            code,
            text,
            sent_at: Utc::now(),
        });
    }
}

#[async_trait]
impl CodeSender for SandboxOutbox {
    async fn send_code(&self, target: &ContactTarget, purpose: CodePurpose, code: &str) -> Result<()> {
        self.push(target, purpose.as_str(), Some(code.to_owned()), None);
        log::info!("sandbox delivered a {} code by {} to {}", purpose.as_str(), target.channel(), target);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phone() -> ContactTarget {
        ContactTarget::parse("target", "+8613800138000").expect("a valid phone")
    }

    #[test]
    fn a_text_message_is_kept_with_its_purpose_and_without_a_code() {
        let outbox = SandboxOutbox::default();
        outbox.deliver_text(&phone(), "payslip", "Pay slip 2026-03: net 12345.67");
        let got = outbox.messages(Some(phone().as_str()));
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].channel, got[0].purpose.as_str()), ("sms", "payslip"));
        assert_eq!(got[0].text.as_deref(), Some("Pay slip 2026-03: net 12345.67"));
        let json = serde_json::to_value(&got[0]).expect("serialisable");
        assert!(json.get("code").is_none(), "{json}");
    }

    #[tokio::test]
    async fn a_code_message_still_serialises_its_code_and_no_text() {
        let outbox = SandboxOutbox::default();
        outbox.send_code(&phone(), CodePurpose::Login, "123456").await.expect("in memory");
        let json = serde_json::to_value(&outbox.messages(None)[0]).expect("serialisable");
        assert_eq!(json["code"], "123456");
        assert!(json.get("text").is_none(), "{json}");
    }
}
