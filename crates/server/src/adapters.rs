//! Small adapters the composition root owns: password hashing, a dev code sink, health.
use async_trait::async_trait;
use atrium_api::HealthProbe;
use atrium_identity::{CodePurpose, CodeSender, PasswordHasher};
use atrium_kernel::{ContactTarget, Error, Result};
use atrium_payroll::{Channel, Payslip, PayslipNotifier, Recipient};
use atrium_sandbox::SandboxOutbox;
use atrium_store::Db;
use atrium_wechat::WechatPayslips;

/// bcrypt on the blocking pool, never on an actix worker, and at most `limit` at a time so a
/// burst of logins cannot take every core from request handling.
#[derive(Clone)]
pub struct BcryptHasher {
    cost: u32,
    permits: std::sync::Arc<tokio::sync::Semaphore>,
}

impl BcryptHasher {
    pub fn new(cost: u32, limit: usize) -> Self {
        BcryptHasher { cost, permits: std::sync::Arc::new(tokio::sync::Semaphore::new(limit.max(1))) }
    }

    async fn run<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> Result<T> {
        let _permit = self.permits.acquire().await.map_err(|e| Error::Internal(anyhow::anyhow!("hashing pool closed: {e}")))?;
        tokio::task::spawn_blocking(work).await.map_err(|e| Error::Internal(anyhow::anyhow!("hashing task failed: {e}")))
    }
}

/// Marks a hash of the pre-hashed password (see [`prehash`]); a plain bcrypt hash (from
/// before pre-hashing) is still verified as bcrypt of the password itself.
const PREHASHED: &str = "$sha256";

/// bcrypt reads at most 72 bytes, so two passwords of up to 128 characters that share their
/// first 72 bytes would share a hash. bcrypt therefore gets the password's SHA-256 in base64
/// instead: 44 ASCII bytes, no NUL byte (which would end bcrypt's input early either).
fn prehash(password: &str) -> String {
    use base64::Engine;
    use sha2::Digest;
    base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(password.as_bytes()))
}

#[async_trait]
impl PasswordHasher for BcryptHasher {
    async fn hash(&self, password: &str) -> Result<String> {
        let (input, cost) = (prehash(password), self.cost);
        let hash =
            self.run(move || bcrypt::hash(input, cost)).await?.map_err(|e| Error::Internal(anyhow::anyhow!("bcrypt failed: {e}")))?;
        Ok(format!("{PREHASHED}{hash}"))
    }

    async fn verify(&self, password: &str, hash: &str) -> Result<bool> {
        let (input, hash) = match hash.strip_prefix(PREHASHED) {
            Some(bcrypt_hash) => (prehash(password), bcrypt_hash.to_owned()),
            None => (password.to_owned(), hash.to_owned()),
        };
        self.run(move || bcrypt::verify(input, &hash).unwrap_or(false)).await
    }
}

#[async_trait]
impl atrium_org::PasswordHashing for BcryptHasher {
    async fn hash_password(&self, password: &str) -> Result<String> {
        PasswordHasher::hash(self, password).await
    }
}

/// Tells identity's session cache that a user's access changed, so this instance stops
/// serving the cached principal at once (other instances within their cache lifetime).
pub struct IdentityAccessChanged(pub std::sync::Arc<atrium_identity::IdentityService>);

impl atrium_org::AccessChanged for IdentityAccessChanged {
    fn user_access_changed(&self, user_id: atrium_kernel::Id) {
        self.0.forget_user(user_id);
    }

    fn role_changed(&self, _role_id: atrium_kernel::Id) {
        self.0.forget_all_sessions();
    }

    fn party_changed(&self) {
        self.0.forget_all_sessions();
    }
}

/// Where codes go when no delivery service is configured: the log says a code was issued,
/// and in the dev profile shows it, so a developer can log in.
pub struct LogCodeSender {
    pub show_codes: bool,
}

#[async_trait]
impl CodeSender for LogCodeSender {
    async fn send_code(&self, target: &ContactTarget, purpose: CodePurpose, code: &str) -> Result<()> {
        if self.show_codes {
            log::info!("dev code sink: {} code {code} for {target}", purpose.as_str());
        } else {
            log::warn!(
                "no SMS/e-mail delivery is configured; a {} code for a {} target was not delivered",
                purpose.as_str(),
                target.channel()
            );
        }
        Ok(())
    }
}

/// `/healthz`: the database answers.
pub struct DbHealth(pub Db);

#[async_trait]
impl HealthProbe for DbHealth {
    async fn check(&self) -> Result<()> {
        self.0.ping().await
    }
}

/// Where pay slips go without the platform: the sandbox outbox in dev, nothing in prod yet.
pub enum TextChannel {
    Sandbox(SandboxOutbox),
    Unconfigured,
}

/// Pay slips by the platform's subscribe message when the employee has an openid; by SMS or
/// e-mail when not, or when the platform refuses and the employee has a phone or e-mail.
pub struct PayslipChannels {
    pub wechat: Option<WechatPayslips>,
    pub text: TextChannel,
}

/// The slip as a short text message: period, net, gross, contributions, tax (yuan).
fn payslip_text(slip: &Payslip) -> String {
    format!(
        "Pay slip {} for {}: net pay {} yuan (gross {}, social insurance and housing fund {}, income tax {}).",
        slip.period, slip.employee_name, slip.net_pay, slip.gross, slip.contributions, slip.tax
    )
}

impl PayslipChannels {
    async fn send_text(&self, slip: &Payslip, to: &Recipient) -> atrium_kernel::Result<Channel> {
        let target = match (&to.phone, &to.email) {
            (Some(phone), _) => ContactTarget::parse("phone", phone)?,
            (None, Some(email)) => ContactTarget::parse("email", email)?,
            (None, None) => return Err(Error::BadRequest("the employee has no openid, phone or e-mail to send the pay slip to".into())),
        };
        let channel = if matches!(target, ContactTarget::Phone(_)) { Channel::Sms } else { Channel::Email };
        match &self.text {
            TextChannel::Sandbox(outbox) => {
                outbox.deliver_text(&target, "payslip", &payslip_text(slip));
                Ok(channel)
            }
            TextChannel::Unconfigured => Err(Error::Upstream(format!("no {} provider is configured", channel.as_str()))),
        }
    }
}

#[async_trait]
impl PayslipNotifier for PayslipChannels {
    async fn send(&self, slip: &Payslip, to: &Recipient) -> atrium_kernel::Result<Channel> {
        match (&self.wechat, &to.openid) {
            (Some(wechat), Some(_)) => match wechat.send(slip, to).await {
                Ok(channel) => Ok(channel),
                Err(platform) if to.phone.is_some() || to.email.is_some() => {
                    self.send_text(slip, to).await.map_err(|text| Error::Upstream(format!("{platform}; {text}")))
                }
                Err(platform) => Err(platform),
            },
            _ => self.send_text(slip, to).await,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test]
    async fn every_byte_of_a_long_password_counts() {
        let hasher = BcryptHasher::new(4, 1);
        let long = format!("{}{}", "p".repeat(72), "-the-real-end");
        let same_start = format!("{}{}", "p".repeat(72), "-another-end");

        let hash = hasher.hash(&long).await.unwrap();

        assert!(hasher.verify(&long, &hash).await.unwrap());
        assert!(!hasher.verify(&same_start, &hash).await.unwrap());
        assert!(!hasher.verify(&"p".repeat(72), &hash).await.unwrap());
    }

    #[tokio::test]
    async fn a_nul_byte_does_not_cut_the_password_short() {
        let hasher = BcryptHasher::new(4, 1);
        let hash = hasher.hash("secret-pass\0one").await.unwrap();

        assert!(hasher.verify("secret-pass\0one", &hash).await.unwrap());
        assert!(!hasher.verify("secret-pass\0two", &hash).await.unwrap());
        assert!(!hasher.verify("secret-pass", &hash).await.unwrap());
    }

    #[tokio::test]
    async fn a_hash_made_before_pre_hashing_still_verifies() {
        let hasher = BcryptHasher::new(4, 1);
        let legacy = bcrypt::hash("an-old-password", 4).unwrap();

        assert!(hasher.verify("an-old-password", &legacy).await.unwrap());
        assert!(!hasher.verify("another-password", &legacy).await.unwrap());
    }
}
