//! Idempotent POST requests: the port through which a request's `Idempotency-Key` is claimed,
//! completed with the response to replay, or released. The record lives in the database, so
//! it holds across instances.
use crate::{Result, Timestamp};
use async_trait::async_trait;

/// Whose key it is and for which route: the same key sent by two callers, or to two routes,
/// names two records.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey {
    /// The caller, e.g. `user:42`.
    pub caller: String,
    /// The route, e.g. `POST /api/v1/orders`.
    pub route: String,
    /// The `Idempotency-Key` header's value.
    pub key: String,
}

/// What [`IdempotencyStore::claim`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The key is this request's now: run it, then [`complete`](IdempotencyStore::complete)
    /// or [`release`](IdempotencyStore::release) it.
    New,
    /// A request with the same key and body completed: answer with its status and body.
    Replay { status: u16, body: Vec<u8> },
    /// A request with the same key and body is still running (409).
    InProgress,
    /// The key was used with a different body (409).
    Mismatch,
}

/// Storage of idempotency records.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait IdempotencyStore: Send + Sync + 'static {
    /// Claims `key` for a request whose body hashes to `request_hash`, atomically (two
    /// instances claiming one key at once: exactly one gets `New`):
    /// - no record → one is stored, in progress → `New`;
    /// - a record with another hash → `Mismatch` (whatever its state);
    /// - completed → `Replay` with the stored response;
    /// - in progress, claimed less than `stale_after_secs` ago → `InProgress`;
    /// - in progress and older (its instance crashed) → taken over by this request → `New`.
    async fn claim(&self, key: &IdempotencyKey, request_hash: Vec<u8>, now: Timestamp, stale_after_secs: i64) -> Result<Claim>;
    /// Stores the response of the claimed request, for replays. Only an in-progress record
    /// is completed; a completed one keeps its first response.
    async fn complete(&self, key: &IdempotencyKey, status: u16, body: Vec<u8>, now: Timestamp) -> Result<()>;
    /// Drops the in-progress record of a request that is to leave no trace (refused by
    /// validation), so the key may be used again. A completed record is kept.
    async fn release(&self, key: &IdempotencyKey) -> Result<()>;
    /// Removes the records created before `before` (keep them at least 24 h); returns how
    /// many.
    async fn purge(&self, before: Timestamp) -> Result<u64>;
}
