//! [`PackageStore`] in the database: each kept package's record in `mp_packages` and its
//! content in `mp_package_contents`, so instances share packages through the database alone
//! (`ATRIUM_PACKAGE_STORE=database`). An opened package is a local copy in a cache directory,
//! removed when its handle drops. Files are read, written and removed off the async workers,
//! and the content goes to and from the database through [`Db::run`] and [`Db::write`], which
//! run on the blocking pool (on SQLite, writes on the process's one writer thread).
use super::{to_i64, to_u64};
use crate::db::{Db, on_backend};
use crate::error::db_error;
use crate::schema::{mp_package_contents, mp_packages};
use crate::time::{DbTime, from_db, to_db};
use async_trait::async_trait;
use atrium_kernel::{Error, Id, Result};
use atrium_miniprogram::{PackageFile, PackageInfo, PackageStore, StoredPackage};
use chrono::{NaiveDateTime, SubsecRound};
use diesel::prelude::*;
use std::io;
use std::path::{Path, PathBuf};

/// Kept code packages in the database: the record and the content of each, under its content
/// hash, written together in one transaction. Several instances over one database share them
/// without a shared disk.
///
/// The content has no lasting file on this machine, so the records [`put`](PackageStore::put)
/// and [`get`](PackageStore::get) return have an empty `path`; [`open`](PackageStore::open)
/// writes a copy of the content under the cache directory and hands it out with what removes
/// it when the handle drops.
///
/// The package records are those the package directory ([`PackageDir`](super::PackageDir))
/// keeps too. A record it made has no content here: until the package is put again (which
/// keeps that first record), [`exists`](PackageStore::exists) says `false` for it and
/// [`open`](PackageStore::open) fails. Deleting a record, by either, deletes its content
/// with it (a cascading foreign key).
#[derive(Clone)]
pub struct PackageDb {
    db: Db,
    cache_dir: PathBuf,
}

impl PackageDb {
    /// Packages kept in `db`; opened packages are copied into `cache_dir`, which is created
    /// when the first one is opened and must be readable by the uploader. Each copy has a name
    /// of its own, so instances and opens of one package may share the directory.
    pub fn new(db: Db, cache_dir: PathBuf) -> Self {
        PackageDb { db, cache_dir }
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = mp_packages, treat_none_as_null = true)]
struct PackageRow {
    sha256: String,
    size: i64,
    project_root: String,
    path: String,
    tenant_id: Option<i64>,
    #[diesel(deserialize_as = DbTime)]
    created_at: NaiveDateTime,
}

/// The record as the port returns it: `path` is where the content can be read on this
/// machine, which for a package kept in the database is nowhere until it is opened.
fn package_from_row(r: PackageRow, path: PathBuf) -> Result<StoredPackage> {
    Ok(StoredPackage {
        size: to_u64(r.size, "package size")?,
        sha256: r.sha256,
        project_root: r.project_root,
        path,
        created_at: from_db(r.created_at),
    })
}

/// Checks that `sha256` is 64 lower-case hex digits: the key the packages are kept under,
/// and part of the name of an opened copy, which it must never lead out of the cache
/// directory.
fn checked_sha256(sha256: &str) -> Result<()> {
    if sha256.len() == 64 && sha256.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        Ok(())
    } else {
        Err(Error::internal(format!("{sha256:?} is not a lower-case hex SHA-256")))
    }
}

fn task_failed(e: tokio::task::JoinError) -> Error {
    Error::Internal(anyhow::anyhow!("package task failed: {e}"))
}

fn io_error(e: io::Error, what: String) -> Error {
    Error::Internal(anyhow::Error::new(e).context(what))
}

/// The content of the checked package file at `file` (blocking file I/O), refused when its
/// size is not the checked one: then it changed since it was checked.
fn read_package(file: &Path, sha256: &str, size: u64) -> Result<Vec<u8>> {
    let content = std::fs::read(file).map_err(|e| io_error(e, format!("cannot read package {sha256} at {}", file.display())))?;
    if content.len() as u64 != size {
        return Err(Error::internal(format!(
            "package {sha256} at {} has {} bytes, but {size} were checked",
            file.display(),
            content.len()
        )));
    }
    Ok(content)
}

/// Removes a file whose content is kept now; one already gone is fine, and one that cannot be
/// removed is only logged, as the package is kept all the same.
fn remove_consumed(file: &Path) {
    match std::fs::remove_file(file) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => log::warn!("cannot remove the package file {} after keeping it: {e}", file.display()),
    }
}

/// Writes `content` to a new file in `dir` named after `sha256` (blocking file I/O); a file
/// cut short by a failed write is removed.
fn write_copy(dir: &Path, sha256: &str, content: &[u8]) -> io::Result<PathBuf> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    std::fs::create_dir_all(dir)?;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    let copy = dir.join(format!("{sha256}.{}-{}-{nanos:x}.zip", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
    // `create_new`: never another open's copy, whatever the name's parts.
    let written =
        std::fs::OpenOptions::new().write(true).create_new(true).open(&copy).and_then(|mut f| io::Write::write_all(&mut f, content));
    match written {
        Ok(()) => Ok(copy),
        Err(e) => {
            let _ = std::fs::remove_file(&copy);
            Err(e)
        }
    }
}

/// Removes an opened copy when its handle drops.
fn remove_copy(copy: &Path) {
    match std::fs::remove_file(copy) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => log::warn!("cannot remove the opened package copy {}: {e}", copy.display()),
    }
}

impl PackageDb {
    /// The record of the package with this hash if its content is kept here too.
    async fn kept_record(&self, sha256: String) -> Result<Option<PackageRow>> {
        self.db
            .run(move |conn| {
                mp_packages::table
                    .inner_join(mp_package_contents::table)
                    .filter(mp_packages::sha256.eq(&sha256))
                    .select(PackageRow::as_select())
                    .first(conn)
                    .optional()
                    .map_err(db_error)
            })
            .await
    }
}

#[async_trait]
impl PackageStore for PackageDb {
    async fn put(&self, tenant_id: Id, info: PackageInfo, file: PathBuf) -> Result<StoredPackage> {
        checked_sha256(&info.sha256)?;
        let size = to_i64(info.size, "package size")?;
        // Kept already (record and content): the file is not even read, only dropped.
        let kept = match self.kept_record(info.sha256.clone()).await? {
            Some(kept) => kept,
            None => {
                // Read before the write, so no connection or write lock is held meanwhile.
                let content = {
                    let (file, sha256, size) = (file.clone(), info.sha256.clone(), info.size);
                    tokio::task::spawn_blocking(move || read_package(&file, &sha256, size)).await.map_err(task_failed)??
                };
                let row = PackageRow {
                    sha256: info.sha256,
                    size,
                    project_root: info.project_root,
                    // No lasting file: the content is in the database.
                    path: String::new(),
                    tenant_id: Some(tenant_id),
                    // Microseconds, as both databases keep them: what is returned is what is read later.
                    created_at: to_db(chrono::Utc::now().trunc_subsecs(6)),
                };
                self.db
                    .write(move |conn| {
                        // Record and content in one transaction. A package recorded before keeps
                        // its first record, and content kept before stays as it is (the same
                        // bytes, as they share the hash); a concurrent put of the same package
                        // waits for the other's commit on the primary key and then adds nothing.
                        on_backend!(conn, |c| diesel::insert_into(mp_packages::table)
                            .values(&row)
                            .on_conflict(mp_packages::sha256)
                            .do_nothing()
                            .execute(c))
                        .map_err(db_error)?;
                        on_backend!(conn, |c| diesel::insert_into(mp_package_contents::table)
                            .values((mp_package_contents::sha256.eq(&row.sha256), mp_package_contents::content.eq(content.as_slice())))
                            .on_conflict(mp_package_contents::sha256)
                            .do_nothing()
                            .execute(c))
                        .map_err(db_error)?;
                        mp_packages::table.find(&row.sha256).select(PackageRow::as_select()).first(conn).map_err(db_error)
                    })
                    .await?
            }
        };
        tokio::task::spawn_blocking(move || remove_consumed(&file)).await.map_err(task_failed)?;
        package_from_row(kept, PathBuf::new())
    }

    async fn get(&self, sha256: String) -> Result<Option<StoredPackage>> {
        self.db
            .run(move |conn| {
                let row: Option<PackageRow> =
                    mp_packages::table.find(&sha256).select(PackageRow::as_select()).first(conn).optional().map_err(db_error)?;
                row.map(|r| package_from_row(r, PathBuf::new())).transpose()
            })
            .await
    }

    async fn exists(&self, sha256: String) -> Result<bool> {
        Ok(self.kept_record(sha256).await?.is_some())
    }

    async fn open(&self, sha256: String) -> Result<Option<PackageFile>> {
        // Record and content in one statement, so a delete in between cannot part them.
        let found: Option<(PackageRow, Option<Vec<u8>>)> = self
            .db
            .run(move |conn| {
                mp_packages::table
                    .left_join(mp_package_contents::table)
                    .filter(mp_packages::sha256.eq(&sha256))
                    .select((PackageRow::as_select(), mp_package_contents::content.nullable()))
                    .first(conn)
                    .optional()
                    .map_err(db_error)
            })
            .await?;
        let Some((row, content)) = found else { return Ok(None) };
        checked_sha256(&row.sha256)?;
        let Some(content) = content else {
            // Recorded by the package directory: its content is in that directory, not here.
            return Err(Error::internal(format!(
                "package {} is recorded but its content is not in the database (it was kept in the package directory)",
                row.sha256
            )));
        };
        if content.len() as u64 != to_u64(row.size, "package size")? {
            return Err(Error::internal(format!(
                "package {} has {} bytes in the database, but its record says {}",
                row.sha256,
                content.len(),
                row.size
            )));
        }
        let (dir, sha256) = (self.cache_dir.clone(), row.sha256.clone());
        let copy = tokio::task::spawn_blocking(move || {
            write_copy(&dir, &sha256, &content).map_err(|e| io_error(e, format!("cannot write a copy of package {sha256}")))
        })
        .await
        .map_err(task_failed)??;
        let package = package_from_row(row, copy.clone())?;
        Ok(Some(PackageFile::copy(package, move || remove_copy(&copy))))
    }

    async fn delete(&self, sha256: String) -> Result<bool> {
        // As the package directory does: an upload task referring to the package refuses the
        // delete of its record (a foreign key, a `Conflict`); the content goes with the record
        // (a cascading foreign key), in the same statement.
        self.db.write(move |conn| diesel::delete(mp_packages::table.find(&sha256)).execute(conn).map(|n| n > 0).map_err(db_error)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_package_key_is_a_lower_case_hex_hash_and_nothing_else() {
        assert!(checked_sha256(&"ab".repeat(32)).is_ok());
        for bad in ["../../etc/passwd", &"AB".repeat(32), &"ab".repeat(31), &format!("{}/x", "a".repeat(62)), ""] {
            assert!(checked_sha256(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn every_copy_of_one_package_has_a_name_of_its_own_and_goes_when_removed() {
        let dir = std::env::temp_dir().join(format!("atrium-package-db-unit-{}", std::process::id()));
        let sha256 = "ab".repeat(32);
        let first = write_copy(&dir, &sha256, b"PK content").unwrap();
        let second = write_copy(&dir, &sha256, b"PK content").unwrap();
        assert_ne!(first, second);
        assert_eq!(std::fs::read(&first).unwrap(), b"PK content");
        remove_copy(&first);
        remove_copy(&first);
        assert!(!first.exists() && second.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
