//! Small adapters the composition root owns: password hashing, a dev code sink, health, and
//! the sandbox outbox as a text channel.
use async_trait::async_trait;
use atrium_api::HealthProbe;
use atrium_identity::{CodePurpose, CodeSender, PasswordHasher};
use atrium_kernel::StrEnum;
use atrium_kernel::{ContactTarget, Error, Result};
use atrium_payroll::TextSender;
use atrium_sandbox::SandboxOutbox;
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

/// Tells identity's session cache that a party change changed its users' access, so this
/// instance stops serving their cached principals at once (other instances within their
/// cache lifetime).
pub struct IdentityAccessChanged(pub std::sync::Arc<atrium_identity::SessionCache>);

impl atrium_org::AccessChanged for IdentityAccessChanged {
    fn user_access_changed(&self, user_id: atrium_kernel::Id) {
        self.0.forget_user(user_id);
    }

    fn party_changed(&self) {
        self.0.clear();
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

/// Texts (pay slips by SMS or e-mail) into the sandbox outbox, where tests and developers
/// read them; production has no SMS/e-mail provider yet.
pub struct OutboxTexts(pub SandboxOutbox);

#[async_trait]
impl TextSender for OutboxTexts {
    async fn send_text(&self, to: &ContactTarget, topic: &str, text: &str) -> Result<()> {
        self.0.deliver_text(to, topic, text);
        Ok(())
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
