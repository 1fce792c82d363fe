use async_trait::async_trait;
use atrium_kernel::{Id, Result, Timestamp};

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
    /// A partner's or tenant's status (or a tenant's partner) changed: every user and API
    /// token of that party, and of a partner's tenants, is affected.
    fn party_changed(&self);
}

/// Counts events per key over a sliding window, shared by every instance on one database.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait RateLimiter: Send + Sync + 'static {
    /// How many events `key` holds since `since`; the oldest of them.
    async fn count(&self, key: &str, since: Timestamp) -> Result<(i64, Option<Timestamp>)>;
    /// Records one event of `key` at `at` (events before `since` may be pruned).
    async fn hit(&self, key: &str, at: Timestamp, since: Timestamp) -> Result<()>;
}
