//! Contract tests of the durable job queue, on SQLite and PostgreSQL.
#![allow(clippy::unwrap_used)]
use atrium_kernel::{Error, Job, JobStore, NewJob, Timestamp};
use atrium_store::testing::TestDatabase;
use atrium_store::{Db, DbJobStore, store_test};
use chrono::{Duration, TimeZone, Utc};
use serde_json::json;
use std::collections::HashSet;
use std::sync::Arc;

fn t0() -> Timestamp {
    Utc.with_ymd_and_hms(2026, 5, 1, 9, 0, 0).single().expect("valid")
}

fn job(kind: &str, run_at: Timestamp, dedupe_key: Option<&str>) -> NewJob {
    NewJob {
        kind: kind.into(),
        tenant_id: None,
        payload: json!({"out_trade_no": "T1", "n": 1}),
        run_at,
        dedupe_key: dedupe_key.map(Into::into),
    }
}

fn kinds(k: &[&str]) -> Vec<String> {
    k.iter().map(|s| (*s).to_owned()).collect()
}

store_test!(a_pending_job_with_the_same_kind_and_dedupe_key_is_not_queued_twice, |db| {
    let q = DbJobStore::new(db.clone());

    let first = q.enqueue(job("payment.settle", t0(), Some("T1"))).await.unwrap();
    assert!(first.is_some());
    assert_eq!(q.enqueue(job("payment.settle", t0() + Duration::minutes(5), Some("T1"))).await.unwrap(), None);
    assert!(q.enqueue(job("refund.settle", t0(), Some("T1"))).await.unwrap().is_some(), "another kind");
    assert!(q.enqueue(job("payment.settle", t0(), Some("T2"))).await.unwrap().is_some(), "another key");
    assert!(q.enqueue(job("payment.settle", t0(), None)).await.unwrap().is_some());
    assert!(q.enqueue(job("payment.settle", t0(), None)).await.unwrap().is_some(), "no key, no dedupe");
    assert_eq!(q.depth("payment.settle".into(), t0()).await.unwrap(), 4);

    // Claimed but not done, it still counts; done, the key is free again.
    let claimed = q.claim(kinds(&["payment.settle"]), t0(), 60).await.unwrap().unwrap();
    assert_eq!(Some(claimed.id), first);
    assert_eq!(q.enqueue(job("payment.settle", t0(), Some("T1"))).await.unwrap(), None);
    q.complete(claimed.id).await.unwrap();
    assert!(q.enqueue(job("payment.settle", t0(), Some("T1"))).await.unwrap().is_some());
    // A failed job does not hold its key either.
    let again = q.claim(kinds(&["refund.settle"]), t0(), 60).await.unwrap().unwrap();
    q.fail(again.id, "gave up".into()).await.unwrap();
    assert!(q.enqueue(job("refund.settle", t0(), Some("T1"))).await.unwrap().is_some());
});

store_test!(a_claim_takes_the_earliest_due_job_of_the_kinds_asked_for, |db| {
    let q = DbJobStore::new(db.clone());
    let late = q.enqueue(job("a", t0() + Duration::minutes(10), None)).await.unwrap().unwrap();
    let second = q.enqueue(job("a", t0() - Duration::minutes(1), None)).await.unwrap().unwrap();
    let first = q.enqueue(NewJob { tenant_id: None, ..job("b", t0() - Duration::minutes(5), None) }).await.unwrap().unwrap();
    q.enqueue(job("c", t0() - Duration::minutes(9), None)).await.unwrap().unwrap();

    let got = q.claim(kinds(&["a", "b"]), t0(), 60).await.unwrap().unwrap();
    assert_eq!(
        got,
        Job {
            id: first,
            kind: "b".into(),
            tenant_id: None,
            payload: json!({"out_trade_no": "T1", "n": 1}),
            attempts: 1,
            run_at: t0() - Duration::minutes(5)
        }
    );
    // Leased for an hour, so still hidden when the late one falls due.
    assert_eq!(q.claim(kinds(&["a", "b"]), t0(), 3600).await.unwrap().map(|j| j.id), Some(second));
    assert_eq!(q.claim(kinds(&["a", "b"]), t0(), 60).await.unwrap(), None, "the late one is not due");
    assert_eq!(q.claim(kinds(&["a"]), t0() + Duration::minutes(10), 60).await.unwrap().map(|j| j.id), Some(late));
    assert_eq!(q.claim(vec![], t0(), 60).await.unwrap(), None);
    assert_eq!(q.depth("c".into(), t0()).await.unwrap(), 1);
    assert_eq!(q.depth("a".into(), t0()).await.unwrap(), 1, "claimed and due");
});

store_test!(a_job_keeps_its_tenant_and_payload, |db| {
    let org = atrium_store::OrgStore::new(db.clone(), atrium_store::FieldCipher::new(&[9u8; 32]));
    let t = atrium_org::Tenant::draft(None, "T", t0());
    let tenant = atrium_org::TenantRepo::insert_tenant(
        &org,
        t,
        atrium_kernel::Effects::audited(atrium_kernel::AuditRecord::system(t0(), "tenant.create", "tenant", None)),
    )
    .await
    .unwrap()
    .id;
    let q = DbJobStore::new(db.clone());
    let payload = json!({"out_refund_no": "R-1", "amounts": [1, 2, 3], "note": "退款"});
    q.enqueue(NewJob { tenant_id: Some(tenant), payload: payload.clone(), ..job("refund.settle", t0(), None) }).await.unwrap();

    let got = q.claim(kinds(&["refund.settle"]), t0(), 60).await.unwrap().unwrap();

    assert_eq!((got.tenant_id, got.payload), (Some(tenant), payload));
});

store_test!(a_lease_hides_the_job_until_it_runs_out, |db| {
    let q = DbJobStore::new(db.clone());
    let id = q.enqueue(job("a", t0(), None)).await.unwrap().unwrap();

    let first = q.claim(kinds(&["a"]), t0(), 60).await.unwrap().unwrap();
    assert_eq!((first.id, first.attempts), (id, 1));
    assert_eq!(q.claim(kinds(&["a"]), t0() + Duration::seconds(59), 60).await.unwrap(), None);
    // Its claimer crashed: after the lease the job is claimed again, the attempt counted.
    let second = q.claim(kinds(&["a"]), t0() + Duration::seconds(60), 60).await.unwrap().unwrap();
    assert_eq!((second.id, second.attempts), (id, 2));
    q.complete(id).await.unwrap();
    assert_eq!(q.claim(kinds(&["a"]), t0() + Duration::hours(1), 60).await.unwrap(), None);
    assert_eq!(q.depth("a".into(), t0() + Duration::hours(1)).await.unwrap(), 0);
});

store_test!(a_retried_job_waits_for_its_new_time_and_a_failed_one_never_runs, |db| {
    let q = DbJobStore::new(db.clone());
    let id = q.enqueue(job("a", t0(), None)).await.unwrap().unwrap();
    let failing = q.enqueue(job("b", t0(), None)).await.unwrap().unwrap();
    q.claim(kinds(&["a"]), t0(), 600).await.unwrap().unwrap();

    q.retry(id, t0() + Duration::minutes(5), "platform unavailable".into()).await.unwrap();

    assert_eq!(q.claim(kinds(&["a"]), t0() + Duration::minutes(4), 60).await.unwrap(), None);
    assert_eq!(q.depth("a".into(), t0() + Duration::minutes(4)).await.unwrap(), 0, "not due yet");
    let again = q.claim(kinds(&["a"]), t0() + Duration::minutes(5), 60).await.unwrap().unwrap();
    assert_eq!((again.id, again.attempts, again.run_at), (id, 2, t0() + Duration::minutes(5)));

    q.fail(failing, "ORDER_NOT_EXIST".into()).await.unwrap();
    assert_eq!(q.claim(kinds(&["b"]), t0() + Duration::days(1), 60).await.unwrap(), None);
    assert_eq!(q.depth("b".into(), t0() + Duration::days(1)).await.unwrap(), 0);
    let err = q.retry(failing, t0(), "again".into()).await.unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "a failed job is not retried: {err:?}");
    assert!(matches!(q.complete(id + 1000).await.unwrap_err(), Error::NotFound(_)));
    assert!(matches!(q.fail(id + 1000, "x".into()).await.unwrap_err(), Error::NotFound(_)));
});

/// Two instances (separate pools on one database) with four claimers each drain 100 jobs
/// at once; every job must be claimed exactly once.
async fn two_instances_drain_once(tdb: TestDatabase) {
    let first = tdb.open();
    let second = Db::connect(&tdb.url, 8).unwrap();
    let q = DbJobStore::new(first.clone());
    for i in 0..100 {
        q.enqueue(job("drain", t0() - Duration::seconds(i), None)).await.unwrap().unwrap();
    }
    let start = Arc::new(tokio::sync::Barrier::new(8));
    let mut tasks = vec![];
    for db in [first, second] {
        let store = Arc::new(DbJobStore::new(db));
        for _ in 0..4 {
            let (store, start) = (store.clone(), start.clone());
            tasks.push(tokio::spawn(async move {
                start.wait().await;
                let mut claimed = vec![];
                // A long lease: nothing is claimed twice because a lease ran out.
                while let Some(j) = store.claim(kinds(&["drain"]), t0(), 3600).await.unwrap() {
                    claimed.push(j.id);
                }
                claimed
            }));
        }
    }
    let mut all = vec![];
    let mut per_task = vec![];
    for t in tasks {
        let claimed = t.await.unwrap();
        per_task.push(claimed.len());
        all.extend(claimed);
    }

    let distinct: HashSet<_> = all.iter().collect();
    assert_eq!(all.len(), 100, "claims per task {per_task:?}");
    assert_eq!(distinct.len(), 100);
    assert_eq!(q.depth("drain".into(), t0()).await.unwrap(), 100, "claimed, not completed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_instances_claim_each_of_100_jobs_exactly_once_sqlite() {
    two_instances_drain_once(TestDatabase::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_instances_claim_each_of_100_jobs_exactly_once_postgres() {
    let Some(tdb) = TestDatabase::postgres() else {
        atrium_store::testing::skip_postgres(module_path!());
        return;
    };
    two_instances_drain_once(tdb).await;
}
