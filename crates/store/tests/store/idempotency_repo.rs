//! Contract tests of the idempotency records, on SQLite and PostgreSQL.
#![allow(clippy::unwrap_used)]
use atrium_kernel::{Claim, IdempotencyKey, IdempotencyStore, Timestamp};
use atrium_store::{DbIdempotencyStore, store_test};
use chrono::{Duration, TimeZone, Utc};
use std::sync::Arc;

const STALE: i64 = 60;

fn t0() -> Timestamp {
    Utc.with_ymd_and_hms(2026, 5, 1, 9, 0, 0).single().expect("valid")
}

fn key(caller: &str, k: &str) -> IdempotencyKey {
    IdempotencyKey { caller: caller.into(), route: "POST /api/v1/orders".into(), key: k.into() }
}

fn hash(body: &str) -> Vec<u8> {
    use sha2::Digest;
    sha2::Sha256::digest(body.as_bytes()).to_vec()
}

store_test!(a_key_is_claimed_then_replayed_and_a_different_body_is_a_mismatch, |db| {
    let s = DbIdempotencyStore::new(db.clone());
    let k = key("user:1", "k-1");

    assert_eq!(s.claim(&k, hash("a"), t0(), STALE).await.unwrap(), Claim::New);
    assert_eq!(s.claim(&k, hash("a"), t0() + Duration::seconds(1), STALE).await.unwrap(), Claim::InProgress);
    assert_eq!(s.claim(&k, hash("b"), t0() + Duration::seconds(1), STALE).await.unwrap(), Claim::Mismatch);

    s.complete(&k, 201, br#"{"code":0}"#.to_vec(), t0() + Duration::seconds(2)).await.unwrap();

    let replay = Claim::Replay { status: 201, body: br#"{"code":0}"#.to_vec() };
    assert_eq!(s.claim(&k, hash("a"), t0() + Duration::seconds(3), STALE).await.unwrap(), replay);
    // Long after, still the first response: a completed record is never taken over.
    assert_eq!(s.claim(&k, hash("a"), t0() + Duration::hours(2), STALE).await.unwrap(), replay);
    assert_eq!(s.claim(&k, hash("b"), t0() + Duration::seconds(3), STALE).await.unwrap(), Claim::Mismatch);
    // A second completion does not replace the first response.
    s.complete(&k, 500, b"late".to_vec(), t0() + Duration::seconds(4)).await.unwrap();
    assert_eq!(s.claim(&k, hash("a"), t0() + Duration::seconds(5), STALE).await.unwrap(), replay);
});

store_test!(keys_are_per_caller_and_route, |db| {
    let s = DbIdempotencyStore::new(db.clone());
    let k = key("user:1", "k-1");
    let other_route = IdempotencyKey { route: "POST /api/v1/orders/7/pay".into(), ..k.clone() };

    assert_eq!(s.claim(&k, hash("a"), t0(), STALE).await.unwrap(), Claim::New);
    assert_eq!(s.claim(&key("user:2", "k-1"), hash("a"), t0(), STALE).await.unwrap(), Claim::New);
    assert_eq!(s.claim(&other_route, hash("a"), t0(), STALE).await.unwrap(), Claim::New);
});

store_test!(a_released_key_is_free_again_and_a_completed_one_is_kept, |db| {
    let s = DbIdempotencyStore::new(db.clone());
    let k = key("user:1", "k-1");
    assert_eq!(s.claim(&k, hash("a"), t0(), STALE).await.unwrap(), Claim::New);

    s.release(&k).await.unwrap();

    assert_eq!(s.claim(&k, hash("b"), t0(), STALE).await.unwrap(), Claim::New, "a refused request leaves nothing");
    s.complete(&k, 200, b"ok".to_vec(), t0()).await.unwrap();
    s.release(&k).await.unwrap();
    assert_eq!(s.claim(&k, hash("b"), t0(), STALE).await.unwrap(), Claim::Replay { status: 200, body: b"ok".to_vec() });
    s.release(&key("user:1", "never-claimed")).await.unwrap();
});

store_test!(a_stale_claim_of_a_crashed_instance_is_taken_over, |db| {
    let s = DbIdempotencyStore::new(db.clone());
    let k = key("user:1", "k-1");
    assert_eq!(s.claim(&k, hash("a"), t0(), STALE).await.unwrap(), Claim::New);

    assert_eq!(s.claim(&k, hash("a"), t0() + Duration::seconds(STALE - 1), STALE).await.unwrap(), Claim::InProgress);
    let later = t0() + Duration::seconds(STALE);
    assert_eq!(s.claim(&k, hash("a"), later, STALE).await.unwrap(), Claim::New, "taken over");
    // The takeover started the clock again.
    assert_eq!(s.claim(&k, hash("a"), later + Duration::seconds(1), STALE).await.unwrap(), Claim::InProgress);
    assert_eq!(s.claim(&k, hash("b"), later + Duration::hours(1), STALE).await.unwrap(), Claim::Mismatch, "never for another body");
});

store_test!(purge_removes_records_created_before_the_cut, |db| {
    let s = DbIdempotencyStore::new(db.clone());
    assert_eq!(s.claim(&key("u", "old-1"), hash("a"), t0(), STALE).await.unwrap(), Claim::New);
    assert_eq!(s.claim(&key("u", "old-2"), hash("a"), t0(), STALE).await.unwrap(), Claim::New);
    s.complete(&key("u", "old-2"), 200, vec![], t0()).await.unwrap();
    assert_eq!(s.claim(&key("u", "new"), hash("a"), t0() + Duration::hours(25), STALE).await.unwrap(), Claim::New);

    assert_eq!(s.purge(t0() + Duration::hours(24)).await.unwrap(), 2);

    assert_eq!(s.claim(&key("u", "old-2"), hash("b"), t0() + Duration::hours(25), STALE).await.unwrap(), Claim::New);
    assert_eq!(s.claim(&key("u", "new"), hash("a"), t0() + Duration::hours(25), STALE).await.unwrap(), Claim::InProgress);
    assert_eq!(s.purge(t0()).await.unwrap(), 0);
});

store_test!(ten_concurrent_claims_of_one_key_give_exactly_one_new, |db| {
    let s = Arc::new(DbIdempotencyStore::new(db.clone()));
    let start = Arc::new(tokio::sync::Barrier::new(10));
    let mut tasks = vec![];
    for _ in 0..10 {
        let (s, start) = (s.clone(), start.clone());
        tasks.push(tokio::spawn(async move {
            start.wait().await;
            s.claim(&key("user:1", "k-race"), hash("a"), t0(), STALE).await
        }));
    }
    let mut claims = vec![];
    for t in tasks {
        claims.push(t.await.unwrap().unwrap());
    }

    assert_eq!(claims.iter().filter(|c| **c == Claim::New).count(), 1, "{claims:?}");
    assert_eq!(claims.iter().filter(|c| **c == Claim::InProgress).count(), 9, "{claims:?}");
});

store_test!(ten_concurrent_takeovers_of_a_stale_key_give_exactly_one_new, |db| {
    let s = Arc::new(DbIdempotencyStore::new(db.clone()));
    assert_eq!(s.claim(&key("user:1", "k-race"), hash("a"), t0(), STALE).await.unwrap(), Claim::New);
    let start = Arc::new(tokio::sync::Barrier::new(10));
    let mut tasks = vec![];
    for _ in 0..10 {
        let (s, start) = (s.clone(), start.clone());
        tasks.push(tokio::spawn(async move {
            start.wait().await;
            s.claim(&key("user:1", "k-race"), hash("a"), t0() + Duration::hours(1), STALE).await
        }));
    }
    let mut claims = vec![];
    for t in tasks {
        claims.push(t.await.unwrap().unwrap());
    }

    assert_eq!(claims.iter().filter(|c| **c == Claim::New).count(), 1, "{claims:?}");
});
