//! Small adapters the composition root owns: password hashing, a dev code sink, health.
use async_trait::async_trait;
use atrium_api::HealthProbe;
use atrium_identity::{CodePurpose, CodeSender, PasswordHasher};
use atrium_kernel::{ContactTarget, Error, Result};
use atrium_store::Db;

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
