//! [`PackageStore`] in a directory: each kept package is a file named `<sha256>.zip` in one
//! directory (`ATRIUM_PACKAGE_DIR`, which every instance running jobs must share), recorded in
//! `mp_packages`. Files are moved, copied and removed off the async workers.
use super::{to_i64, to_u64};
use crate::db::{Db, on_backend};
use crate::error::db_error;
use crate::schema::mp_packages;
use crate::time::{DbTime, from_db, to_db};
use async_trait::async_trait;
use atrium_kernel::{Error, Id, Result};
use atrium_miniprogram::{PackageFile, PackageInfo, PackageStore, StoredPackage};
use chrono::{NaiveDateTime, SubsecRound};
use diesel::prelude::*;
use diesel::upsert::excluded;
use std::io;
use std::path::{Path, PathBuf};

/// Kept code packages as files in one directory, each named by its content hash, with their
/// records in the database. The files are the kept packages themselves, so
/// [`open`](PackageStore::open) hands them out as they are.
#[derive(Clone)]
pub struct PackageDir {
    db: Db,
    dir: PathBuf,
}

impl PackageDir {
    /// Packages kept in `dir` (`<sha256>.zip`), recorded in `db`. The directory is created
    /// when the first package arrives, and the uploader must be able to read it.
    pub fn new(db: Db, dir: PathBuf) -> Self {
        PackageDir { db, dir }
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

fn package_from_row(r: PackageRow) -> Result<StoredPackage> {
    Ok(StoredPackage {
        size: to_u64(r.size, "package size")?,
        sha256: r.sha256,
        project_root: r.project_root,
        path: PathBuf::from(r.path),
        created_at: from_db(r.created_at),
    })
}

/// The kept file's name: the hash, checked to be 64 lower-case hex digits so that it can
/// never name a path outside the package directory.
fn package_file_name(sha256: &str) -> Result<String> {
    if sha256.len() == 64 && sha256.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        Ok(format!("{sha256}.zip"))
    } else {
        Err(Error::internal(format!("{sha256:?} is not a lower-case hex SHA-256")))
    }
}

/// Moves `source` to `target` in `dir` (blocking file I/O). When `target` already holds a
/// file of `size` bytes, it is the same package (they share the hash), so `source` is removed
/// instead. A rename across file systems falls back to a copy under a temporary name in `dir`,
/// renamed into place, so `target` never shows a partly written file.
fn keep_file(dir: &Path, source: &Path, target: &Path, size: u64) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    match std::fs::metadata(target) {
        Ok(kept) if kept.is_file() && kept.len() == size => {
            // The package handed in may be the kept file itself: then there is nothing to drop.
            if std::fs::canonicalize(source)? != std::fs::canonicalize(target)? {
                std::fs::remove_file(source)?;
            }
            return Ok(());
        }
        // Absent, or not what its name says (a file cut short by hand): put the new one there.
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    match std::fs::rename(source, target) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::CrossesDevices => copy_into_place(dir, source, target),
        Err(e) => Err(e),
    }
}

/// Copies `source` to `target` through a temporary file in `dir`, then removes `source`.
fn copy_into_place(dir: &Path, source: &Path, target: &Path) -> io::Result<()> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let name = target.file_name().and_then(|n| n.to_str()).unwrap_or("package");
    let partial = dir.join(format!(".{name}.{}-{}.partial", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
    let copied = std::fs::copy(source, &partial)
        .and_then(|_| std::fs::File::open(&partial)?.sync_all())
        .and_then(|()| std::fs::rename(&partial, target));
    if let Err(e) = copied {
        let _ = std::fs::remove_file(&partial);
        return Err(e);
    }
    std::fs::remove_file(source)
}

#[async_trait]
impl PackageStore for PackageDir {
    async fn put(&self, tenant_id: Id, info: PackageInfo, file: PathBuf) -> Result<StoredPackage> {
        let target = self.dir.join(package_file_name(&info.sha256)?);
        let path = target.to_str().ok_or_else(|| Error::internal("the package directory's path is not UTF-8"))?.to_owned();
        let size = to_i64(info.size, "package size")?;
        {
            // The file first and outside the database transaction: a copy across file systems
            // may take a while, and no connection or write lock is held meanwhile. A row
            // failing after this leaves a kept file that the next keep of the hash reuses.
            let (dir, target, sha256, size) = (self.dir.clone(), target.clone(), info.sha256.clone(), info.size);
            tokio::task::spawn_blocking(move || {
                keep_file(&dir, &file, &target, size)
                    .map_err(|e| Error::Internal(anyhow::Error::new(e).context(format!("cannot keep package {sha256}"))))
            })
            .await
            .map_err(|e| Error::Internal(anyhow::anyhow!("package task failed: {e}")))??;
        }
        let row = PackageRow {
            sha256: info.sha256,
            size,
            project_root: info.project_root,
            path,
            tenant_id: Some(tenant_id),
            // Microseconds, as both databases keep them: what is returned is what is read later.
            created_at: to_db(chrono::Utc::now().trunc_subsecs(6)),
        };
        self.db
            .write(move |conn| {
                // A package kept before keeps its first uploader and time; only where the file
                // now is (the package directory may have moved) is brought up to date.
                on_backend!(conn, |c| diesel::insert_into(mp_packages::table)
                    .values(&row)
                    .on_conflict(mp_packages::sha256)
                    .do_update()
                    .set(mp_packages::path.eq(excluded(mp_packages::path)))
                    .execute(c))
                .map_err(db_error)?;
                let stored: PackageRow =
                    mp_packages::table.find(&row.sha256).select(PackageRow::as_select()).first(conn).map_err(db_error)?;
                package_from_row(stored)
            })
            .await
    }

    async fn get(&self, sha256: String) -> Result<Option<StoredPackage>> {
        self.db
            .run(move |conn| {
                let row: Option<PackageRow> =
                    mp_packages::table.find(&sha256).select(PackageRow::as_select()).first(conn).optional().map_err(db_error)?;
                row.map(package_from_row).transpose()
            })
            .await
    }

    async fn exists(&self, sha256: String) -> Result<bool> {
        let Some(kept) = self.get(sha256).await? else { return Ok(false) };
        let file = tokio::task::spawn_blocking(move || std::fs::metadata(&kept.path).map(|m| m.is_file()).map_err(|e| (kept.sha256, e)))
            .await
            .map_err(|e| Error::Internal(anyhow::anyhow!("package task failed: {e}")))?;
        match file {
            Ok(is_file) => Ok(is_file),
            Err((_, e)) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err((sha256, e)) => Err(Error::Internal(anyhow::Error::new(e).context(format!("cannot look at package {sha256}")))),
        }
    }

    async fn open(&self, sha256: String) -> Result<Option<PackageFile>> {
        // The kept file itself; one that went missing is the reader's error, as it would be
        // the moment after a check here.
        Ok(self.get(sha256).await?.map(PackageFile::kept))
    }

    async fn delete(&self, sha256: String) -> Result<bool> {
        let named = self.dir.join(package_file_name(&sha256)?);
        // The record first: an upload task referring to the package refuses the delete (a
        // foreign key) before any file goes. A file whose record is gone is removed after, and
        // one that cannot be is only logged: the next keeping of the hash reuses it.
        let row: Option<PackageRow> = self
            .db
            .write(move |conn| {
                on_backend!(conn, |c| diesel::delete(mp_packages::table.find(&sha256))
                    .returning(PackageRow::as_returning())
                    .get_result(c)
                    .optional())
                .map_err(db_error)
            })
            .await?;
        let mut files = vec![named];
        if let Some(r) = &row {
            files.push(PathBuf::from(&r.path));
            files.dedup();
        }
        tokio::task::spawn_blocking(move || {
            for file in files {
                match std::fs::remove_file(&file) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => log::warn!("cannot remove the deleted package {}: {e}", file.display()),
                }
            }
        })
        .await
        .map_err(|e| Error::Internal(anyhow::anyhow!("package task failed: {e}")))?;
        Ok(row.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_package_name_is_a_lower_case_hex_hash_and_nothing_else() {
        assert_eq!(package_file_name(&"ab".repeat(32)).ok(), Some(format!("{}.zip", "ab".repeat(32))));
        for bad in ["../../etc/passwd", &"AB".repeat(32), &"ab".repeat(31), &format!("{}/x", "a".repeat(62)), ""] {
            assert!(package_file_name(bad).is_err(), "{bad:?}");
        }
    }
}
