//! [`RateBucketRepo`]: identity's sliding-window counters, kept in the rate buckets the org
//! rate limiter shares (see [`crate::rate`]).
use super::IdentityStore;
use async_trait::async_trait;
use atrium_identity::RateBucketRepo;
use atrium_kernel::{Result, Timestamp};

#[async_trait]
impl RateBucketRepo for IdentityStore {
    async fn hit_rate_bucket(&self, bucket: &str, at: Timestamp, since: Timestamp) -> Result<i64> {
        let bucket = bucket.to_owned();
        self.db.write(move |conn| crate::rate::hit(conn, &bucket, at, since)).await
    }

    async fn rate_bucket(&self, bucket: &str, since: Timestamp) -> Result<(i64, Option<Timestamp>)> {
        let bucket = bucket.to_owned();
        self.db.run(move |conn| crate::rate::count(conn, &bucket, since)).await
    }
}
