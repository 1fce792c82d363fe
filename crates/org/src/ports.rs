use async_trait::async_trait;
use atrium_kernel::{Id, Result};

/// Slow password hashing for users created or reset by an administrator.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait PasswordHashing: Send + Sync + 'static {
    async fn hash_password(&self, password: &str) -> Result<String>;
}

/// Told when a user's access changed (disabled, deleted, roles or password changed), so
/// in-process caches of authenticated sessions drop that user at once.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
pub trait AccessChanged: Send + Sync + 'static {
    fn user_access_changed(&self, user_id: Id);
    /// A role's permissions changed: every holder is affected.
    fn role_changed(&self, role_id: Id);
}
