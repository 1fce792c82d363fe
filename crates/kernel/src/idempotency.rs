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

/// A request's identity under its `Idempotency-Key`: a digest of the caller, the route and the
/// key. A service derives the numbers it sends to a platform (`out_refund_no`,
/// `out_trade_no`) from it, so a retry of the request — after a lost answer, a time-out, a
/// crash — sends the same numbers, and the platform, which deduplicates by them, does the
/// work once.
#[derive(Clone, PartialEq, Eq)]
pub struct RequestKey([u8; 32]);

impl RequestKey {
    /// The key of a request: the same caller, route and key always give the same digest.
    pub fn of(key: &IdempotencyKey) -> Self {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        for part in [&key.caller, &key.route, &key.key] {
            h.update((part.len() as u64).to_be_bytes());
            h.update(part.as_bytes());
        }
        RequestKey(h.finalize().into())
    }

    /// `len` (at most 32) characters of `[0-9A-Za-z]` derived from the key: the same key
    /// always gives the same characters.
    pub fn number(&self, len: usize) -> String {
        const ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        self.0.iter().take(len).map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()])).collect()
    }
}

impl std::fmt::Debug for RequestKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RequestKey({})", self.number(8))
    }
}

/// What [`IdempotencyStore::claim`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The key is this request's now: run it, then [`complete`](IdempotencyStore::complete)
    /// or [`release`](IdempotencyStore::release) it.
    New,
    /// A request with the same key and body completed: answer with its status and body.
    Replay {
        /// The HTTP status of the first answer.
        status: u16,
        /// The body of the first answer, byte for byte.
        body: Vec<u8>,
    },
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
    /// Drops the in-progress record of a request that is to leave no trace (refused before
    /// it changed anything), so the key may be used again. A completed record is kept.
    async fn release(&self, key: &IdempotencyKey) -> Result<()>;
    /// Keeps the in-progress record of a request that may have acted (it reached a platform
    /// whose answer was lost, or failed midway) but lets the next [`claim`](Self::claim) with
    /// the same body take it over at once (`New`): the retry runs again, with the same
    /// numbers, and learns what happened. Another body under the key stays a `Mismatch`.
    async fn reopen(&self, key: &IdempotencyKey) -> Result<()>;
    /// Removes the records created before `before` (keep them at least 24 h); returns how
    /// many.
    async fn purge(&self, before: Timestamp) -> Result<u64>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(caller: &str, route: &str, key: &str) -> IdempotencyKey {
        IdempotencyKey { caller: caller.into(), route: route.into(), key: key.into() }
    }

    #[test]
    fn a_request_key_gives_the_same_number_for_the_same_request_only() {
        let a = RequestKey::of(&key("user:1", "POST /api/v1/orders/7/refund", "k-1"));
        assert_eq!(a.number(10), RequestKey::of(&key("user:1", "POST /api/v1/orders/7/refund", "k-1")).number(10));
        assert_eq!(a.number(10).len(), 10);
        assert!(a.number(32).chars().all(|c| c.is_ascii_alphanumeric()));
        for other in [
            key("user:2", "POST /api/v1/orders/7/refund", "k-1"),
            key("user:1", "POST /api/v1/orders/8/refund", "k-1"),
            key("user:1", "POST /api/v1/orders/7/refund", "k-2"),
            key("user:1", "POST /api/v1/orders/7/refun", "dk-1"),
        ] {
            assert_ne!(RequestKey::of(&other).number(10), a.number(10), "{other:?}");
        }
    }
}
