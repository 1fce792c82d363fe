//! Contract tests of the package store that keeps packages in the database, on SQLite and
//! PostgreSQL: those of the package directory (releases_repo) where they apply, and what
//! the database adds (copies on open, instances sharing packages).
#![allow(clippy::unwrap_used)]
use atrium_kernel::{AuditRecord, Effects, Error, Timestamp};
use atrium_miniprogram::*;
use atrium_org::*;
use atrium_store::schema::{mp_package_contents, mp_packages};
use atrium_store::testing::{TestDatabase, skip_postgres};
use atrium_store::{Db, FieldCipher, OrgStore, PackageDb, PackageDir, ReleaseStore, store_test};
use chrono::{TimeZone, Utc};
use diesel::prelude::*;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn t0() -> Timestamp {
    Utc.with_ymd_and_hms(2026, 5, 1, 9, 0, 0).single().expect("valid")
}

/// A directory of this test's own, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(what: &str) -> TempDir {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join("atrium-tests").join(format!(
            "{what}-{}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed),
            Utc::now().timestamp_micros()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Fixture {
    packages: PackageDb,
    repo: ReleaseStore,
    tenant: i64,
    /// A tenant of another partner.
    other: i64,
    /// Where the store writes opened copies (not created until the first open).
    cache_dir: PathBuf,
    /// Where the test writes the files it hands over.
    uploads: TempDir,
    _cache: TempDir,
}

async fn fixture(db: &Db) -> Fixture {
    let org = OrgStore::new(db.clone(), FieldCipher::new(&[9u8; 32]));
    let mut tenants = vec![];
    for name in ["P", "Q"] {
        let p = Partner {
            id: 0,
            name: name.into(),
            contact_name: None,
            phone: None,
            email: None,
            status: PartnerStatus::Active,
            created_at: t0(),
            updated_at: t0(),
        };
        let partner =
            org.insert_partner(p, Effects::audited(AuditRecord::system(t0(), "partner.create", "partner", None))).await.unwrap().id;
        let t = Tenant::draft(Some(partner), "T", t0());
        tenants.push(org.insert_tenant(t, Effects::audited(AuditRecord::system(t0(), "tenant.create", "tenant", None))).await.unwrap().id);
    }
    let cache = TempDir::new("opened");
    let cache_dir = cache.0.join("copies");
    Fixture {
        packages: PackageDb::new(db.clone(), cache_dir.clone()),
        repo: ReleaseStore::new(db.clone(), FieldCipher::new(&[9u8; 32])),
        tenant: tenants[0],
        other: tenants[1],
        cache_dir,
        uploads: TempDir::new("uploads"),
        _cache: cache,
    }
}

/// `len` bytes that look like a zip's (a local header, then noise), different per `seed`.
fn package_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut bytes = b"PK\x03\x04".to_vec();
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    while bytes.len() < len {
        // xorshift64
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        bytes.extend_from_slice(&x.to_le_bytes());
    }
    bytes.truncate(len);
    bytes
}

fn package_info(bytes: &[u8]) -> PackageInfo {
    let sha256 = Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect::<String>();
    PackageInfo { sha256, size: bytes.len() as u64, unpacked_size: 4096, entries: 3, project_root: "shop/".into() }
}

/// Writes `bytes` to a new file in `dir`; returns it with its info.
fn package_file_in(dir: &Path, name: &str, bytes: &[u8]) -> (PathBuf, PackageInfo) {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    (path, package_info(bytes))
}

fn package_file(f: &Fixture, name: &str, bytes: &[u8]) -> (PathBuf, PackageInfo) {
    package_file_in(&f.uploads.0, name, bytes)
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

/// How many package records and content rows the database holds.
fn rows(db: &Db) -> (i64, i64) {
    let mut conn = db.conn().unwrap();
    let records = mp_packages::table.count().get_result(&mut *conn).unwrap();
    let contents = mp_package_contents::table.count().get_result(&mut *conn).unwrap();
    (records, contents)
}

fn upload(tenant_id: i64, version: &str, source: UploadSource) -> UploadTask {
    UploadTask {
        id: 0,
        tenant_id,
        source,
        version: version.into(),
        description: format!("Version {version}"),
        status: UploadStatus::Queued,
        template_id: None,
        errcode: None,
        error: None,
        created_by: 42,
        created_at: t0(),
        started_at: None,
        finished_at: None,
        updated_at: t0(),
    }
}

fn read(opened: &PackageFile) -> Vec<u8> {
    let mut content = Vec::new();
    std::io::Read::read_to_end(&mut opened.reader().unwrap(), &mut content).unwrap();
    content
}

store_test!(a_multi_mib_package_round_trips_and_its_file_is_consumed, |db| {
    let f = fixture(&db).await;
    let bytes = package_bytes(6 * 1024 * 1024 + 123, 1);
    let (file, info) = package_file(&f, "upload-1.zip", &bytes);
    assert!(!f.packages.exists(info.sha256.clone()).await.unwrap());

    let kept = f.packages.put(f.tenant, info.clone(), file.clone()).await.unwrap();

    assert_eq!(kept.sha256, info.sha256);
    assert_eq!(kept.size, info.size);
    assert_eq!(kept.project_root, "shop/");
    assert_eq!(kept.path, PathBuf::new(), "no lasting file on this machine");
    assert!(!file.exists(), "the upload was consumed");
    assert_eq!(files_in(&f.uploads.0), Vec::<String>::new());
    assert_eq!(rows(&db), (1, 1));
    assert_eq!(f.packages.get(info.sha256.clone()).await.unwrap(), Some(kept.clone()));
    assert_eq!(f.packages.get("0".repeat(64)).await.unwrap(), None);
    assert!(f.packages.exists(info.sha256.clone()).await.unwrap());

    let opened = f.packages.open(info.sha256.clone()).await.unwrap().unwrap();
    assert_eq!(opened.package(), &StoredPackage { path: opened.path().to_owned(), ..kept });
    assert!(opened.path().starts_with(&f.cache_dir), "{}", opened.path().display());
    assert!(read(&opened) == bytes, "the opened copy holds the bytes put");
});

store_test!(the_same_package_twice_is_kept_once_and_the_second_file_is_removed, |db| {
    let f = fixture(&db).await;
    let bytes = package_bytes(64 * 1024, 2);
    let (first_file, info) = package_file(&f, "upload-1.zip", &bytes);
    let first = f.packages.put(f.tenant, info.clone(), first_file).await.unwrap();
    let (second_file, _) = package_file(&f, "upload-2.zip", &bytes);

    let second = f.packages.put(f.other, info.clone(), second_file.clone()).await.unwrap();

    assert_eq!(second, first, "the first keeping's record, time included");
    assert!(!second_file.exists(), "the second copy was dropped");
    let mut conn = db.conn().unwrap();
    let records: Vec<Option<i64>> = mp_packages::table.select(mp_packages::tenant_id).load(&mut *conn).unwrap();
    assert_eq!(records, vec![Some(f.tenant)], "one record, naming the first uploader");
    assert_eq!(rows(&db), (1, 1));
    assert!(read(&f.packages.open(info.sha256).await.unwrap().unwrap()) == bytes);

    // Another package is another record and another content.
    let (third_file, third) = package_file(&f, "upload-3.zip", &package_bytes(1000, 3));
    f.packages.put(f.tenant, third.clone(), third_file).await.unwrap();
    assert_eq!(rows(&db), (2, 2));
    assert!(f.packages.exists(third.sha256).await.unwrap());
});

store_test!(of_ten_concurrent_puts_of_one_package_each_succeeds_and_it_is_kept_once, |db| {
    let f = fixture(&db).await;
    let bytes = package_bytes(2 * 1024 * 1024, 4);
    let packages = Arc::new(f.packages.clone());
    let start = Arc::new(tokio::sync::Barrier::new(10));
    let mut files = vec![];
    let mut tasks = vec![];
    for i in 0..10 {
        let (file, info) = package_file(&f, &format!("upload-{i}.zip"), &bytes);
        files.push(file.clone());
        let tenant = if i % 2 == 0 { f.tenant } else { f.other };
        let (packages, start) = (packages.clone(), start.clone());
        tasks.push(tokio::spawn(async move {
            start.wait().await;
            packages.put(tenant, info, file).await
        }));
    }

    let mut kept = vec![];
    for t in tasks {
        kept.push(t.await.unwrap().unwrap());
    }

    assert!(kept.iter().all(|k| *k == kept[0]), "every put returns the one record: {kept:?}");
    assert_eq!(rows(&db), (1, 1));
    assert!(files.iter().all(|file| !file.exists()), "every file was consumed");
    assert_eq!(f.packages.get(kept[0].sha256.clone()).await.unwrap().as_ref(), Some(&kept[0]));
    assert!(read(&f.packages.open(kept[0].sha256.clone()).await.unwrap().unwrap()) == bytes);
});

store_test!(a_package_not_kept_opens_as_none, |db| {
    let f = fixture(&db).await;
    let missing = "0".repeat(64);

    assert!(f.packages.open(missing.clone()).await.unwrap().is_none());
    assert!(!f.packages.exists(missing.clone()).await.unwrap());
    assert_eq!(f.packages.get(missing.clone()).await.unwrap(), None);
    assert!(!f.packages.delete(missing).await.unwrap());
    assert!(!f.cache_dir.exists(), "nothing was written");
});

store_test!(an_opened_copy_is_removed_when_its_handle_drops, |db| {
    let f = fixture(&db).await;
    let bytes = package_bytes(300 * 1024, 5);
    let (file, info) = package_file(&f, "upload-1.zip", &bytes);
    f.packages.put(f.tenant, info.clone(), file).await.unwrap();

    let first = f.packages.open(info.sha256.clone()).await.unwrap().unwrap();
    let second = f.packages.open(info.sha256.clone()).await.unwrap().unwrap();

    assert_ne!(first.path(), second.path(), "each open has a copy of its own");
    assert_eq!(files_in(&f.cache_dir).len(), 2);
    let (first_path, second_path) = (first.path().to_owned(), second.path().to_owned());
    drop(first);
    assert!(!first_path.exists(), "the dropped handle's copy went");
    assert!(read(&second) == bytes, "the other copy is untouched");
    drop(second);
    assert!(!second_path.exists());
    assert_eq!(files_in(&f.cache_dir), Vec::<String>::new());
    assert!(f.packages.exists(info.sha256).await.unwrap(), "the kept package stays");
});

store_test!(a_package_an_upload_task_refers_to_is_not_deleted, |db| {
    let f = fixture(&db).await;
    let bytes = b"PK\x03\x04 package in use";
    let (file, info) = package_file(&f, "upload-1.zip", bytes);
    let kept = f.packages.put(f.tenant, info.clone(), file).await.unwrap();
    let source = UploadSource::Package { sha256: kept.sha256.clone(), size: kept.size };
    f.repo.insert_upload_task(upload(f.tenant, "1.0.0", source)).await.unwrap();

    let err = f.packages.delete(info.sha256.clone()).await.unwrap_err();

    assert!(matches!(err, Error::Conflict(..)), "{err:?}");
    assert_eq!(f.packages.get(info.sha256.clone()).await.unwrap(), Some(kept));
    assert!(f.packages.exists(info.sha256.clone()).await.unwrap());
    assert_eq!(rows(&db), (1, 1), "neither the record nor the content went");
    assert_eq!(read(&f.packages.open(info.sha256).await.unwrap().unwrap()), bytes);
});

store_test!(a_deleted_package_is_gone_with_its_content, |db| {
    let f = fixture(&db).await;
    let (file, info) = package_file(&f, "upload-1.zip", &package_bytes(4096, 6));
    f.packages.put(f.tenant, info.clone(), file).await.unwrap();
    let (other_file, other) = package_file(&f, "upload-2.zip", &package_bytes(4096, 7));
    f.packages.put(f.tenant, other.clone(), other_file).await.unwrap();

    assert!(f.packages.delete(info.sha256.clone()).await.unwrap());

    assert!(!f.packages.exists(info.sha256.clone()).await.unwrap());
    assert_eq!(f.packages.get(info.sha256.clone()).await.unwrap(), None);
    assert!(f.packages.open(info.sha256.clone()).await.unwrap().is_none());
    assert_eq!(rows(&db), (1, 1), "only the other package is left");
    assert!(f.packages.exists(other.sha256).await.unwrap());
    assert!(!f.packages.delete(info.sha256).await.unwrap(), "deleted once");
});

store_test!(a_file_that_changed_since_it_was_checked_is_refused_and_nothing_is_kept, |db| {
    let f = fixture(&db).await;
    let (file, info) = package_file(&f, "upload-1.zip", &package_bytes(4096, 8));
    let checked = PackageInfo { size: 4000, ..info.clone() };

    let err = f.packages.put(f.tenant, checked, file.clone()).await.unwrap_err();

    assert!(matches!(err, Error::Internal(_)), "{err:?}");
    assert_eq!(rows(&db), (0, 0));
    assert!(file.exists(), "a file not kept is left to its caller");
});

store_test!(a_package_the_directory_recorded_is_kept_here_once_its_content_is_put, |db| {
    // Switching ATRIUM_PACKAGE_STORE from `directory` to `database` leaves records without
    // content here: such a package is not kept until it is put again, which keeps its record.
    let f = fixture(&db).await;
    let dir = TempDir::new("kept");
    let directory = PackageDir::new(db.clone(), dir.0.join("packages"));
    let bytes = package_bytes(8192, 9);
    let (file, info) = package_file(&f, "upload-1.zip", &bytes);
    let recorded = directory.put(f.tenant, info.clone(), file).await.unwrap();

    assert!(!f.packages.exists(info.sha256.clone()).await.unwrap());
    assert!(matches!(f.packages.open(info.sha256.clone()).await.unwrap_err(), Error::Internal(_)));
    assert_eq!(f.packages.get(info.sha256.clone()).await.unwrap().map(|p| p.created_at), Some(recorded.created_at));

    let (again, _) = package_file(&f, "upload-2.zip", &bytes);
    let kept = f.packages.put(f.other, info.clone(), again.clone()).await.unwrap();

    assert_eq!(kept, StoredPackage { path: PathBuf::new(), ..recorded }, "the first record is kept");
    assert!(!again.exists());
    assert!(f.packages.exists(info.sha256.clone()).await.unwrap());
    assert!(read(&f.packages.open(info.sha256.clone()).await.unwrap().unwrap()) == bytes);

    // Deleting through the directory takes the content with the record.
    assert!(directory.delete(info.sha256.clone()).await.unwrap());
    assert_eq!(rows(&db), (0, 0));
    assert!(!f.packages.exists(info.sha256).await.unwrap());
});

/// Two instances (separate pools and cache directories on one database) see each other's
/// packages: one puts, the other opens it, keeps it once more and deletes it.
async fn two_instances_share_packages(tdb: TestDatabase) {
    let first_db = tdb.open();
    let second_db = Db::connect(&tdb.url, 8).unwrap();
    let f = fixture(&first_db).await;
    let second_cache = TempDir::new("opened-second");
    let first = f.packages.clone();
    let second = PackageDb::new(second_db.clone(), second_cache.0.clone());
    let bytes = package_bytes(3 * 1024 * 1024, 10);
    let (file, info) = package_file(&f, "upload-1.zip", &bytes);

    let kept = first.put(f.tenant, info.clone(), file).await.unwrap();

    assert!(second.exists(info.sha256.clone()).await.unwrap());
    assert_eq!(second.get(info.sha256.clone()).await.unwrap(), Some(kept.clone()));
    let opened = second.open(info.sha256.clone()).await.unwrap().unwrap();
    assert!(opened.path().starts_with(&second_cache.0), "opened in the second instance's cache");
    assert!(read(&opened) == bytes);
    drop(opened);

    // Both instances put one more package at once, and the same package again.
    let (a_file, a) = package_file(&f, "upload-a.zip", &package_bytes(512 * 1024, 11));
    let (b_file, b) = package_file(&f, "upload-b.zip", &package_bytes(512 * 1024, 12));
    let (again, _) = package_file(&f, "upload-2.zip", &bytes);
    let (put_a, put_b, put_again) = tokio::join!(
        first.put(f.tenant, a.clone(), a_file),
        second.put(f.other, b.clone(), b_file),
        second.put(f.other, info.clone(), again.clone())
    );
    assert_eq!(put_again.unwrap(), kept, "kept once, under the first record");
    assert!(!again.exists());
    assert_eq!(second.get(put_a.unwrap().sha256).await.unwrap().map(|p| p.sha256), Some(a.sha256));
    assert_eq!(first.get(put_b.unwrap().sha256).await.unwrap().map(|p| p.sha256), Some(b.sha256));
    assert_eq!(rows(&first_db), (3, 3));

    assert!(second.delete(info.sha256.clone()).await.unwrap());
    assert!(!first.exists(info.sha256.clone()).await.unwrap());
    assert!(first.open(info.sha256).await.unwrap().is_none());
    assert_eq!(rows(&second_db), (2, 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_over_one_database_share_their_packages_sqlite() {
    two_instances_share_packages(TestDatabase::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_over_one_database_share_their_packages_postgres() {
    let Some(tdb) = TestDatabase::postgres() else {
        skip_postgres(module_path!());
        return;
    };
    two_instances_share_packages(tdb).await;
}
