use async_trait::async_trait;
use atrium_identity::{CodePurpose, CodeSender};
use atrium_kernel::{ContactTarget, Result};
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::sync::{Arc, Mutex};

/// One message the sandbox "delivered".
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct OutboxMessage {
    /// `sms` or `email`.
    pub channel: &'static str,
    pub target: String,
    pub purpose: String,
    pub code: String,
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
}

#[async_trait]
impl CodeSender for SandboxOutbox {
    async fn send_code(&self, target: &ContactTarget, purpose: CodePurpose, code: &str) -> Result<()> {
        let mut all = self.messages.lock().unwrap_or_else(|p| p.into_inner());
        if all.len() >= Self::KEEP {
            all.drain(..Self::KEEP / 2);
        }
        all.push(OutboxMessage {
            channel: target.channel(),
            target: target.as_str().to_owned(),
            purpose: purpose.as_str().to_owned(),
            code: code.to_owned(),
            sent_at: Utc::now(),
        });
        log::info!("sandbox delivered a {} code by {} to {}", purpose.as_str(), target.channel(), target);
        Ok(())
    }
}
