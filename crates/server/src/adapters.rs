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

#[async_trait]
impl PasswordHasher for BcryptHasher {
    async fn hash(&self, password: &str) -> Result<String> {
        let (password, cost) = (password.to_owned(), self.cost);
        self.run(move || bcrypt::hash(password, cost)).await?.map_err(|e| Error::Internal(anyhow::anyhow!("bcrypt failed: {e}")))
    }

    async fn verify(&self, password: &str, hash: &str) -> Result<bool> {
        let (password, hash) = (password.to_owned(), hash.to_owned());
        self.run(move || bcrypt::verify(password, &hash).unwrap_or(false)).await
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
