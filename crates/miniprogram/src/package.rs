//! What a mini-program code package is, checked on a file on disk: a zip of a project
//! directory holding `project.config.json` and `app.json`, within size limits, whose entries
//! all stay inside the package.
//!
//! Both functions here work on a streamed file, never on the package held in memory: the file
//! is hashed in chunks, every entry is decompressed into a counting sink (or, by
//! [`extract`], into its file) against a budget, so a package whose entries inflate far
//! beyond its own size (a zip bomb) is stopped as soon as it passes the budget, whatever its
//! headers claim. Both block on file I/O and decompression: call them from a blocking thread
//! (the [`crate::PackageInspector`] adapter does).
use atrium_kernel::{Error, FieldError};
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};

/// The platform's limit for a whole upload.
pub const MAX_PACKAGE_BYTES: u64 = 20 * 1024 * 1024;
/// A package of less than this, unpacked, is never called a bomb (tiny zips compress badly
/// and well alike).
const RATIO_FLOOR: u64 = 1024 * 1024;
/// `project.config.json` is read whole to find `miniprogramRoot`; it is small.
const MAX_PROJECT_CONFIG_BYTES: u64 = 256 * 1024;

/// How large a package may be, packed and unpacked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PackageLimits {
    /// The zip file itself (20 MiB, the platform's limit; more is a 413).
    pub max_size: u64,
    /// Every entry unpacked, together.
    pub max_unpacked: u64,
    /// Unpacked size over packed size; more is a bomb (once it unpacks to more than 1 MiB:
    /// tiny zips compress badly and well alike).
    pub max_ratio: u64,
    /// Entries (files and directories) in the zip.
    pub max_entries: usize,
}

impl Default for PackageLimits {
    /// 20 MiB packed, 200 MiB and 100 times that unpacked, 20,000 entries.
    fn default() -> Self {
        PackageLimits { max_size: MAX_PACKAGE_BYTES, max_unpacked: 200 * 1024 * 1024, max_ratio: 100, max_entries: 20_000 }
    }
}

impl PackageLimits {
    /// What `size` bytes of zip may unpack to, at most.
    fn unpacked_budget(&self, size: u64) -> u64 {
        self.max_ratio.saturating_mul(size).max(RATIO_FLOOR).min(self.max_unpacked)
    }
}

/// A package that passed [`inspect`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageInfo {
    /// SHA-256 of the zip file, lower-case hex: the package's name where it is kept.
    pub sha256: String,
    /// The zip file's size in bytes.
    pub size: u64,
    /// Every entry unpacked, together.
    pub unpacked_size: u64,
    /// How many entries the zip holds.
    pub entries: usize,
    /// The project directory inside the zip: `""` when `project.config.json` is at the top,
    /// `"name/"` when the zip holds the project's folder.
    pub project_root: String,
}

/// Why a file is not an acceptable package. Each says what to fix; none changes anything.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PackageError {
    /// The zip is larger than [`PackageLimits::max_size`] (a 413).
    #[error("the package is {size} bytes; at most {max} are accepted")]
    TooLarge {
        /// The zip's size in bytes.
        size: u64,
        /// The most bytes accepted.
        max: u64,
    },
    /// Not a zip file.
    #[error("the package is not a zip file")]
    NotZip,
    /// More entries than [`PackageLimits::max_entries`].
    #[error("the package has more than {0} entries")]
    TooManyEntries(usize),
    /// An absolute name, a `..` component, a drive letter or a NUL: it would land outside the
    /// package when unpacked.
    #[error("the entry {0:?} points outside the package")]
    UnsafeEntry(String),
    /// An entry that is a symbolic link.
    #[error("the entry {0:?} is a symbolic link; links are not accepted")]
    Symlink(String),
    /// An encrypted entry.
    #[error("the entry {0:?} is encrypted")]
    Encrypted(String),
    /// Unpacked, the package would be far larger than it is (a zip bomb), or larger than the
    /// limit.
    #[error("the package unpacks to more than {budget} bytes, far more than its {size} bytes; it is refused as a zip bomb")]
    Bomb {
        /// The zip's size in bytes.
        size: u64,
        /// The most bytes it may unpack to.
        budget: u64,
    },
    /// The project directory lacks a required file (`project.config.json`, `app.json`).
    #[error("the package has no {0} in its project directory")]
    Missing(&'static str),
    /// `project.config.json` is too large, not a JSON object, or its `miniprogramRoot` points
    /// outside the project.
    #[error("project.config.json is not usable: {0}")]
    BadProjectConfig(String),
    /// A damaged entry (bad checksum, truncated data, unsupported compression).
    #[error("the package is damaged: {0}")]
    Corrupt(String),
    /// Our side could not read or write the file.
    #[error("the package file could not be read or written: {0}")]
    Io(String),
}

impl From<PackageError> for Error {
    /// `TooLarge` is a 413, I/O on our side a 500, anything else a 400 naming `package`.
    fn from(e: PackageError) -> Self {
        match e {
            PackageError::TooLarge { .. } => Error::TooLarge(e.to_string()),
            PackageError::Io(m) => Error::internal(format!("package file: {m}")),
            other => Error::Invalid(vec![FieldError::new("package", other.to_string())]),
        }
    }
}

fn io_error(e: io::Error) -> PackageError {
    PackageError::Io(e.to_string())
}

/// An entry's name as a path inside the package, or why it is not one. Both `/` and `\`
/// separate components (archivers on some systems write `\`); empty and `.` components are
/// dropped. Directories keep no trailing separator.
pub fn safe_entry_path(name: &str) -> Result<Vec<&str>, PackageError> {
    let unsafe_entry = || PackageError::UnsafeEntry(name.to_owned());
    if name.is_empty() || name.contains('\0') || name.starts_with(['/', '\\']) {
        return Err(unsafe_entry());
    }
    let bytes = name.as_bytes();
    if bytes.len() >= 2 && bytes[1] == b':' && bytes[0].is_ascii_alphabetic() {
        return Err(unsafe_entry());
    }
    let mut parts = Vec::new();
    for part in name.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => return Err(unsafe_entry()),
            p if p.chars().any(char::is_control) => return Err(unsafe_entry()),
            p => parts.push(p),
        }
    }
    if parts.is_empty() {
        return Err(unsafe_entry());
    }
    Ok(parts)
}

/// SHA-256 of the file, read in chunks.
fn sha256_file(path: &Path) -> Result<String, PackageError> {
    let mut file = File::open(path).map_err(io_error)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf).map_err(io_error)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

fn open_archive(path: &Path) -> Result<zip::ZipArchive<BufReader<File>>, PackageError> {
    let file = File::open(path).map_err(io_error)?;
    zip::ZipArchive::new(BufReader::new(file)).map_err(|e| match e {
        zip::result::ZipError::Io(e) if e.kind() != io::ErrorKind::UnexpectedEof => io_error(e),
        _ => PackageError::NotZip,
    })
}

/// Copies at most `budget` bytes of `from` into `to`; more is a bomb.
fn copy_within(from: &mut impl Read, to: &mut impl Write, budget: u64, size: u64, total_budget: u64) -> Result<u64, PackageError> {
    let copied = io::copy(&mut from.take(budget.saturating_add(1)), to).map_err(|e| match e.kind() {
        io::ErrorKind::InvalidData | io::ErrorKind::UnexpectedEof | io::ErrorKind::Other => PackageError::Corrupt(e.to_string()),
        _ => io_error(e),
    })?;
    if copied > budget {
        return Err(PackageError::Bomb { size, budget: total_budget });
    }
    Ok(copied)
}

/// One entry's metadata, read without decompressing.
struct EntryMeta {
    name: String,
    is_dir: bool,
}

fn entry_meta(archive: &mut zip::ZipArchive<BufReader<File>>, index: usize) -> Result<EntryMeta, PackageError> {
    let raw = archive.by_index_raw(index).map_err(|e| PackageError::Corrupt(e.to_string()))?;
    let name = raw.name().map_err(|e| PackageError::Corrupt(e.to_string()))?.into_owned();
    safe_entry_path(&name)?;
    if raw.is_symlink() {
        return Err(PackageError::Symlink(name));
    }
    if raw.encrypted() {
        return Err(PackageError::Encrypted(name));
    }
    Ok(EntryMeta { is_dir: raw.is_dir(), name })
}

/// The directory inside the zip that holds the project: the one with `project.config.json`
/// at the top, or in the zip's single top-level folder.
fn project_root(files: &[String]) -> Option<String> {
    if files.iter().any(|f| f == "project.config.json") {
        return Some(String::new());
    }
    let mut candidates = files.iter().filter_map(|f| {
        let parts = safe_entry_path(f).ok()?;
        (parts.len() == 2 && parts[1] == "project.config.json").then(|| format!("{}/", parts[0]))
    });
    let root = candidates.next()?;
    // Anything else beside that folder (other than archiver metadata) makes the layout unclear.
    let stray = files.iter().any(|f| !f.starts_with(&root) && !f.starts_with("__MACOSX/"));
    (candidates.next().is_none() && !stray).then_some(root)
}

/// The normalised path of `name` (components joined by `/`).
fn normalised(name: &str) -> Option<String> {
    safe_entry_path(name).ok().map(|p| p.join("/"))
}

/// Checks the package at `path` against `limits` and the rules above. Streams the file;
/// blocks.
pub fn inspect(path: &Path, limits: &PackageLimits) -> Result<PackageInfo, PackageError> {
    let size = std::fs::metadata(path).map_err(io_error)?.len();
    if size > limits.max_size {
        return Err(PackageError::TooLarge { size, max: limits.max_size });
    }
    let mut archive = open_archive(path)?;
    if archive.len() > limits.max_entries {
        return Err(PackageError::TooManyEntries(limits.max_entries));
    }
    let budget = limits.unpacked_budget(size);
    let mut unpacked = 0u64;
    let mut files = Vec::new();
    for index in 0..archive.len() {
        let meta = entry_meta(&mut archive, index)?;
        if meta.is_dir {
            continue;
        }
        let mut entry = archive.by_index(index).map_err(|e| PackageError::Corrupt(format!("{}: {e}", meta.name)))?;
        unpacked += copy_within(&mut entry, &mut io::sink(), budget - unpacked, size, budget)?;
        files.push(normalised(&meta.name).unwrap_or(meta.name));
    }
    let root = project_root(&files).ok_or(PackageError::Missing("project.config.json"))?;
    let config = read_small(&mut archive, &format!("{root}project.config.json"))?;
    let app_dir = miniprogram_root(&config)?;
    let app_json = format!("{root}{app_dir}app.json");
    if !files.contains(&app_json) && !files.contains(&format!("{root}app.json")) {
        return Err(PackageError::Missing("app.json"));
    }
    Ok(PackageInfo { sha256: sha256_file(path)?, size, unpacked_size: unpacked, entries: archive.len(), project_root: root })
}

/// The entry `name` (normalised), read whole; only for small files.
fn read_small(archive: &mut zip::ZipArchive<BufReader<File>>, name: &str) -> Result<Vec<u8>, PackageError> {
    let index = (0..archive.len())
        .find(|i| archive.name_for_index(*i).and_then(|n| n.ok()).and_then(|n| normalised(&n)).as_deref() == Some(name))
        .ok_or(PackageError::Missing("project.config.json"))?;
    let entry = archive.by_index(index).map_err(|e| PackageError::Corrupt(e.to_string()))?;
    let mut out = Vec::new();
    entry.take(MAX_PROJECT_CONFIG_BYTES + 1).read_to_end(&mut out).map_err(|e| PackageError::Corrupt(e.to_string()))?;
    if out.len() as u64 > MAX_PROJECT_CONFIG_BYTES {
        return Err(PackageError::BadProjectConfig(format!("larger than {MAX_PROJECT_CONFIG_BYTES} bytes")));
    }
    Ok(out)
}

/// `miniprogramRoot` of `project.config.json` as a relative directory (`""` or `"dir/"`).
fn miniprogram_root(config: &[u8]) -> Result<String, PackageError> {
    let value: serde_json::Value = serde_json::from_slice(config).map_err(|e| PackageError::BadProjectConfig(format!("not JSON: {e}")))?;
    if !value.is_object() {
        return Err(PackageError::BadProjectConfig("not a JSON object".into()));
    }
    match value.get("miniprogramRoot") {
        None | Some(serde_json::Value::Null) => Ok(String::new()),
        Some(serde_json::Value::String(dir)) if dir.trim_matches(['.', '/']).is_empty() => Ok(String::new()),
        Some(serde_json::Value::String(dir)) => safe_entry_path(dir)
            .map(|parts| format!("{}/", parts.join("/")))
            .map_err(|_| PackageError::BadProjectConfig("miniprogramRoot points outside the project".into())),
        Some(_) => Err(PackageError::BadProjectConfig("miniprogramRoot is not a string".into())),
    }
}

/// Unpacks the package at `path` (already [`inspect`]ed as `info`) into the empty or new
/// directory `dest`, with the same checks, and returns the project directory inside it.
/// Streams each entry to its file; blocks.
pub fn extract(path: &Path, info: &PackageInfo, dest: &Path, limits: &PackageLimits) -> Result<PathBuf, PackageError> {
    std::fs::create_dir_all(dest).map_err(io_error)?;
    let mut archive = open_archive(path)?;
    if archive.len() > limits.max_entries {
        return Err(PackageError::TooManyEntries(limits.max_entries));
    }
    let budget = limits.unpacked_budget(info.size);
    let mut unpacked = 0u64;
    for index in 0..archive.len() {
        let meta = entry_meta(&mut archive, index)?;
        let parts = safe_entry_path(&meta.name)?;
        let target = parts.iter().fold(dest.to_path_buf(), |p, part| p.join(part));
        if meta.is_dir {
            std::fs::create_dir_all(&target).map_err(io_error)?;
            continue;
        }
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(io_error)?;
        }
        let mut entry = archive.by_index(index).map_err(|e| PackageError::Corrupt(format!("{}: {e}", meta.name)))?;
        // `create_new`: an entry named twice, or one that would write through something
        // already there, is refused rather than followed.
        let mut out = std::fs::OpenOptions::new().write(true).create_new(true).open(&target).map_err(|e| match e.kind() {
            io::ErrorKind::AlreadyExists => PackageError::UnsafeEntry(meta.name.clone()),
            _ => io_error(e),
        })?;
        unpacked += copy_within(&mut entry, &mut out, budget - unpacked, info.size, budget)?;
    }
    let root = info.project_root.trim_end_matches('/');
    Ok(if root.is_empty() { dest.to_path_buf() } else { dest.join(root) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_names_that_leave_the_package_are_refused() {
        for bad in ["../x", "a/../../x", "a/..", "/etc/passwd", "\\windows", "C:/x", "c:\\x", "a\0b", "..\\x", "", "./", "a/\u{7}"] {
            assert!(matches!(safe_entry_path(bad), Err(PackageError::UnsafeEntry(_))), "{bad:?}");
        }
        assert_eq!(safe_entry_path("pages/index/index.js").unwrap(), ["pages", "index", "index.js"]);
        assert_eq!(safe_entry_path("./a//b\\c").unwrap(), ["a", "b", "c"]);
        assert_eq!(safe_entry_path("dir/").unwrap(), ["dir"]);
        assert_eq!(safe_entry_path("..a/b..").unwrap(), ["..a", "b.."]);
    }

    #[test]
    fn the_project_root_is_the_top_or_the_single_folder() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(project_root(&names(&["project.config.json", "app.json"])), Some(String::new()));
        assert_eq!(project_root(&names(&["shop/project.config.json", "shop/app.json", "__MACOSX/shop/._a"])), Some("shop/".into()));
        assert_eq!(project_root(&names(&["a/project.config.json", "b/project.config.json"])), None);
        assert_eq!(project_root(&names(&["a/project.config.json", "stray.txt"])), None);
        assert_eq!(project_root(&names(&["a/b/project.config.json"])), None);
    }

    #[test]
    fn miniprogram_root_is_a_safe_relative_directory() {
        assert_eq!(miniprogram_root(br#"{}"#).unwrap(), "");
        assert_eq!(miniprogram_root(br#"{"miniprogramRoot": "./"}"#).unwrap(), "");
        assert_eq!(miniprogram_root(br#"{"miniprogramRoot": "miniprogram/"}"#).unwrap(), "miniprogram/");
        assert_eq!(miniprogram_root(br#"{"miniprogramRoot": "./src/mp"}"#).unwrap(), "src/mp/");
        assert!(matches!(miniprogram_root(br#"{"miniprogramRoot": "../x"}"#), Err(PackageError::BadProjectConfig(_))));
        assert!(matches!(miniprogram_root(br#"{"miniprogramRoot": 3}"#), Err(PackageError::BadProjectConfig(_))));
        assert!(matches!(miniprogram_root(b"[]"), Err(PackageError::BadProjectConfig(_))));
        assert!(matches!(miniprogram_root(b"not json"), Err(PackageError::BadProjectConfig(_))));
    }

    #[test]
    fn the_bomb_budget_follows_the_size_with_a_floor_and_a_cap() {
        let l = PackageLimits::default();
        assert_eq!(l.unpacked_budget(1000), RATIO_FLOOR);
        assert_eq!(l.unpacked_budget(100 * 1024), 100 * 100 * 1024);
        assert_eq!(l.unpacked_budget(19 * 1024 * 1024), l.max_unpacked);
    }

    #[test]
    fn package_errors_become_400_413_or_500() {
        assert!(matches!(Error::from(PackageError::NotZip), Error::Invalid(ref f) if f[0].field == "package"));
        assert!(matches!(Error::from(PackageError::TooLarge { size: 2, max: 1 }), Error::TooLarge(_)));
        assert!(matches!(Error::from(PackageError::Io("disk full".into())), Error::Internal(_)));
    }
}
