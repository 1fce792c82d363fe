//! Small adapters the composition root owns: password hashing, a dev code sink, readiness,
//! the metrics' views of the pool and the platform calls, and the sandbox outbox as a text
//! channel.
use async_trait::async_trait;
use atrium_api::HealthProbe;
use atrium_identity::{CodePurpose, CodeSender, PasswordHasher};
use atrium_kernel::StrEnum;
use atrium_kernel::{ContactTarget, Error, Result};
use atrium_miniprogram as mp;
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

/// Readiness: the database answers with every migration applied, and no job runner died.
pub struct Readiness {
    pub db: Db,
    pub jobs: std::sync::Arc<crate::jobs::Jobs>,
}

#[async_trait]
impl HealthProbe for Readiness {
    async fn ready(&self) -> Result<()> {
        self.db.ready().await?;
        self.jobs.check().map_err(|runner| Error::Unavailable {
            message: format!("the {runner} job runner has stopped; see the log"),
            retry_after_secs: 5,
        })
    }
}

/// The metrics' view of the platform adapters' calls.
pub struct PlatformCallMetrics(pub std::sync::Arc<atrium_api::Metrics>);

impl atrium_wechat::CallRecorder for PlatformCallMetrics {
    fn record(&self, endpoint: &'static str, errcode: &'static str, elapsed: std::time::Duration) {
        self.0.platform_call(endpoint, errcode, elapsed);
    }
}

/// The metrics' view of the database pool.
pub fn pool_stats(db: &Db) -> atrium_api::DbPoolStats {
    let s = db.pool_stats();
    atrium_api::DbPoolStats {
        max_size: s.max_size,
        connections: s.connections,
        idle: s.idle,
        waiting: s.waiting,
        checkouts: s.checkouts,
        wait_time: s.wait_time,
        timeouts: s.timeouts,
        liveness_checks: s.liveness_checks,
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

/// The mini-program platform when no third-party platform is configured
/// (`ATRIUM_WECHAT_COMPONENT_*` unset): every call fails as unavailable, saying so, and the
/// event URLs answer 404.
pub struct UnconfiguredPlatform;

const NO_PLATFORM: &str = "no third-party platform is configured: set ATRIUM_WECHAT_COMPONENT_APPID, _SECRET, _TOKEN and _AES_KEY";

fn no_platform<T>() -> atrium_miniprogram::PlatformResult<T> {
    Err(atrium_miniprogram::PlatformError::Unavailable(NO_PLATFORM.to_owned()))
}

#[async_trait]
impl atrium_miniprogram::MiniProgramPlatform for UnconfiguredPlatform {
    async fn pre_auth_code(&self, _: &atrium_miniprogram::Secret) -> atrium_miniprogram::PlatformResult<atrium_miniprogram::PreAuthCode> {
        no_platform()
    }
    fn authorize_url(&self, _: &str, _: &str) -> String {
        String::new()
    }
    async fn query_auth(
        &self,
        _: &atrium_miniprogram::Secret,
        _: &atrium_miniprogram::Secret,
    ) -> atrium_miniprogram::PlatformResult<atrium_miniprogram::AuthorizationGrant> {
        no_platform()
    }
    async fn authorizer_profile(
        &self,
        _: &atrium_miniprogram::Secret,
        _: &str,
    ) -> atrium_miniprogram::PlatformResult<atrium_miniprogram::AuthorizerProfile> {
        no_platform()
    }
    async fn template_drafts(
        &self,
        _: &atrium_miniprogram::Secret,
    ) -> atrium_miniprogram::PlatformResult<Vec<atrium_miniprogram::TemplateDraft>> {
        no_platform()
    }
    async fn add_to_template(&self, _: &atrium_miniprogram::Secret, _: i64) -> atrium_miniprogram::PlatformResult<()> {
        no_platform()
    }
    async fn templates(&self, _: &atrium_miniprogram::Secret) -> atrium_miniprogram::PlatformResult<Vec<atrium_miniprogram::Template>> {
        no_platform()
    }
    async fn commit(
        &self,
        _: &atrium_miniprogram::AuthorizerAccess,
        _: &atrium_miniprogram::CodeCommit,
    ) -> atrium_miniprogram::PlatformResult<()> {
        no_platform()
    }
    async fn submit_audit(
        &self,
        _: &atrium_miniprogram::AuthorizerAccess,
        _: &atrium_miniprogram::AuditSubmission,
    ) -> atrium_miniprogram::PlatformResult<i64> {
        no_platform()
    }
    async fn audit_status(
        &self,
        _: &atrium_miniprogram::AuthorizerAccess,
        _: i64,
    ) -> atrium_miniprogram::PlatformResult<atrium_miniprogram::PlatformAudit> {
        no_platform()
    }
    async fn release(&self, _: &atrium_miniprogram::AuthorizerAccess) -> atrium_miniprogram::PlatformResult<()> {
        no_platform()
    }
    async fn gray_release(&self, _: &atrium_miniprogram::AuthorizerAccess, _: u8) -> atrium_miniprogram::PlatformResult<()> {
        no_platform()
    }
    async fn gray_plan(
        &self,
        _: &atrium_miniprogram::AuthorizerAccess,
    ) -> atrium_miniprogram::PlatformResult<atrium_miniprogram::GrayPlan> {
        no_platform()
    }
    async fn revert_gray_release(&self, _: &atrium_miniprogram::AuthorizerAccess) -> atrium_miniprogram::PlatformResult<()> {
        no_platform()
    }
    async fn revert_release(&self, _: &atrium_miniprogram::AuthorizerAccess, _: Option<i64>) -> atrium_miniprogram::PlatformResult<()> {
        no_platform()
    }
    async fn history_versions(
        &self,
        _: &atrium_miniprogram::AuthorizerAccess,
    ) -> atrium_miniprogram::PlatformResult<Vec<atrium_miniprogram::VersionRecord>> {
        no_platform()
    }
    async fn version_info(
        &self,
        _: &atrium_miniprogram::AuthorizerAccess,
    ) -> atrium_miniprogram::PlatformResult<atrium_miniprogram::VersionInfo> {
        no_platform()
    }
    async fn experience_qr(
        &self,
        _: &atrium_miniprogram::AuthorizerAccess,
        _: Option<String>,
    ) -> atrium_miniprogram::PlatformResult<Vec<u8>> {
        no_platform()
    }
    async fn domains(&self, _: &mp::AuthorizerAccess) -> mp::PlatformResult<mp::ServerDomains> {
        no_platform()
    }
    async fn set_domains(&self, _: &mp::AuthorizerAccess, _: &mp::ServerDomains) -> mp::PlatformResult<()> {
        no_platform()
    }
    async fn privacy(&self, _: &mp::AuthorizerAccess) -> mp::PlatformResult<mp::PrivacySettings> {
        no_platform()
    }
    async fn set_privacy(&self, _: &mp::AuthorizerAccess, _: &mp::PrivacySettings) -> mp::PlatformResult<()> {
        no_platform()
    }
    async fn categories(&self, _: &mp::AuthorizerAccess) -> mp::PlatformResult<Vec<mp::Category>> {
        no_platform()
    }
    async fn audit_quota(&self, _: &mp::AuthorizerAccess) -> mp::PlatformResult<mp::AuditQuota> {
        no_platform()
    }
    async fn speedup_audit(&self, _: &mp::AuthorizerAccess, _: i64) -> mp::PlatformResult<()> {
        no_platform()
    }
    async fn undo_audit(&self, _: &mp::AuthorizerAccess) -> mp::PlatformResult<()> {
        no_platform()
    }
    fn open_event(
        &self,
        _: atrium_miniprogram::EventUrl,
        _: &atrium_miniprogram::EventRequest,
    ) -> std::result::Result<atrium_miniprogram::PlatformEvent, atrium_miniprogram::EventError> {
        Err(atrium_miniprogram::EventError::NotConfigured)
    }
}

/// The package uploader when `ATRIUM_WECHAT_CI_KEY_FILE` is unset: a package upload task fails
/// saying so (template uploads need no uploader).
pub struct UnconfiguredUploader;

#[async_trait]
impl atrium_miniprogram::CodeUploader for UnconfiguredUploader {
    async fn upload(
        &self,
        _: &atrium_miniprogram::UploadJob,
    ) -> std::result::Result<atrium_miniprogram::UploadReport, atrium_miniprogram::UploaderError> {
        Err(atrium_miniprogram::UploaderError::Rejected {
            code: None,
            message: "no package uploader is configured: set ATRIUM_WECHAT_CI_KEY_FILE (the platform's upload key) to upload packages"
                .into(),
        })
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
