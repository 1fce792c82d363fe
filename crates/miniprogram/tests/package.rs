//! Package checks and unpacking against real zip files written to a temporary directory.
#![allow(clippy::unwrap_used)]

use atrium_miniprogram::package::{PackageError, PackageInfo, PackageLimits, extract, inspect};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

/// A directory removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        let dir = std::env::temp_dir().join(format!("atrium-package-{name}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

enum Entry<'a> {
    File(&'a str, &'a [u8]),
    Dir(&'a str),
    Link(&'a str, &'a str),
}

fn write_zip(path: &Path, entries: &[Entry<'_>]) {
    let mut zip = ZipWriter::new(std::fs::File::create(path).unwrap());
    let options = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
    for entry in entries {
        match entry {
            Entry::File(name, data) => {
                zip.start_file(*name, options).unwrap();
                zip.write_all(data).unwrap();
            }
            Entry::Dir(name) => zip.add_directory(*name, options).unwrap(),
            Entry::Link(name, target) => zip.add_symlink(*name, *target, options).unwrap(),
        }
    }
    zip.finish().unwrap();
}

const CONFIG: &[u8] = br#"{"appid": "wx_template_dev", "projectname": "shop"}"#;
const APP: &[u8] = br#"{"pages": ["pages/index/index"]}"#;

fn project() -> Vec<Entry<'static>> {
    vec![
        Entry::File("project.config.json", CONFIG),
        Entry::File("app.json", APP),
        Entry::Dir("pages/"),
        Entry::File("pages/index/index.js", b"Page({})"),
    ]
}

fn inspected(dir: &TempDir, entries: &[Entry<'_>]) -> Result<PackageInfo, PackageError> {
    let path = dir.path("package.zip");
    write_zip(&path, entries);
    inspect(&path, &PackageLimits::default())
}

#[test]
fn a_project_zip_passes_with_its_hash_and_sizes() {
    let dir = TempDir::new("good");
    let info = inspected(&dir, &project()).unwrap();
    let bytes = std::fs::read(dir.path("package.zip")).unwrap();
    assert_eq!(info.sha256, hex::encode(Sha256::digest(&bytes)));
    assert_eq!(info.size, bytes.len() as u64);
    assert_eq!(info.unpacked_size, (CONFIG.len() + APP.len() + 8) as u64);
    assert_eq!(info.entries, 4);
    assert_eq!(info.project_root, "");
}

#[test]
fn a_zip_of_the_project_folder_passes_with_the_app_under_miniprogram_root() {
    let dir = TempDir::new("folder");
    let info = inspected(
        &dir,
        &[
            Entry::File("shop/project.config.json", br#"{"miniprogramRoot": "miniprogram/"}"#),
            Entry::File("shop/miniprogram/app.json", APP),
            Entry::File("shop/miniprogram/pages/index.js", b"Page({})"),
        ],
    )
    .unwrap();
    assert_eq!(info.project_root, "shop/");
}

#[test]
fn a_file_that_is_not_a_zip_is_refused() {
    let dir = TempDir::new("notzip");
    for content in [&b""[..], b"just some text, no zip at all", b"PK\x03\x04truncated"] {
        let path = dir.path("package.zip");
        std::fs::write(&path, content).unwrap();
        assert_eq!(inspect(&path, &PackageLimits::default()), Err(PackageError::NotZip), "{content:?}");
    }
}

#[test]
fn a_zip_without_the_project_files_is_refused() {
    let dir = TempDir::new("missing");
    let no_config = inspected(&dir, &[Entry::File("app.json", APP)]);
    assert_eq!(no_config, Err(PackageError::Missing("project.config.json")));
    let no_app = inspected(&dir, &[Entry::File("project.config.json", CONFIG), Entry::File("pages/a.js", b"")]);
    assert_eq!(no_app, Err(PackageError::Missing("app.json")));
    let bad_config = inspected(&dir, &[Entry::File("project.config.json", b"{not json"), Entry::File("app.json", APP)]);
    assert!(matches!(bad_config, Err(PackageError::BadProjectConfig(_))), "{bad_config:?}");
}

#[test]
fn entries_that_climb_out_of_the_package_are_refused() {
    let dir = TempDir::new("climb");
    for name in ["../evil.js", "pages/../../evil.js", "/etc/cron.d/evil", "..\\evil.js"] {
        let mut entries = project();
        entries.push(Entry::File(name, b"evil"));
        let got = inspected(&dir, &entries);
        assert!(matches!(got, Err(PackageError::UnsafeEntry(ref n)) if n == name), "{name}: {got:?}");
    }
}

#[test]
fn symbolic_links_are_refused() {
    let dir = TempDir::new("link");
    let mut entries = project();
    entries.push(Entry::Link("pages/secret", "/etc/passwd"));
    assert_eq!(inspected(&dir, &entries), Err(PackageError::Symlink("pages/secret".into())));
}

#[test]
fn a_zip_bomb_is_refused_without_unpacking_it_all() {
    let dir = TempDir::new("bomb");
    let path = dir.path("package.zip");
    {
        let mut zip = ZipWriter::new(std::fs::File::create(&path).unwrap());
        let options = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated).large_file(true);
        zip.start_file("project.config.json", options).unwrap();
        zip.write_all(CONFIG).unwrap();
        zip.start_file("app.json", options).unwrap();
        zip.write_all(APP).unwrap();
        // 16 MiB of zeros deflates to some 16 KiB: far past the budget of 100 times its size.
        zip.start_file("assets/zeros.bin", options).unwrap();
        let chunk = vec![0u8; 1 << 20];
        for _ in 0..16 {
            zip.write_all(&chunk).unwrap();
        }
        zip.finish().unwrap();
    }
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size < 64 * 1024, "the bomb is {size} bytes");

    let got = inspect(&path, &PackageLimits::default());
    // Unpacking reads at most the budget (and a byte) before it refuses: well short of 16 MiB.
    match got {
        Err(PackageError::Bomb { size: reported, budget }) => {
            assert_eq!(reported, size);
            assert!(budget < 4 * 1024 * 1024, "the budget is {budget} bytes");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_package_over_the_size_limit_is_too_large() {
    let dir = TempDir::new("large");
    let path = dir.path("package.zip");
    write_zip(&path, &project());
    let limits = PackageLimits { max_size: 100, ..PackageLimits::default() };
    let got = inspect(&path, &limits);
    assert!(matches!(got, Err(PackageError::TooLarge { max: 100, .. })), "{got:?}");
}

#[test]
fn too_many_entries_are_refused() {
    let dir = TempDir::new("entries");
    let limits = PackageLimits { max_entries: 3, ..PackageLimits::default() };
    let path = dir.path("package.zip");
    write_zip(&path, &project());
    assert_eq!(inspect(&path, &limits), Err(PackageError::TooManyEntries(3)));
}

#[test]
fn a_package_unpacks_into_its_directory_and_returns_the_project() {
    let dir = TempDir::new("extract");
    let path = dir.path("package.zip");
    write_zip(
        &path,
        &[
            Entry::File("shop/project.config.json", CONFIG),
            Entry::File("shop/app.json", APP),
            Entry::File("shop/pages/index/index.js", b"Page({})"),
        ],
    );
    let info = inspect(&path, &PackageLimits::default()).unwrap();
    let out = dir.path("out");

    let project = extract(&path, &info, &out, &PackageLimits::default()).unwrap();

    assert_eq!(project, out.join("shop"));
    assert_eq!(std::fs::read(project.join("app.json")).unwrap(), APP);
    assert_eq!(std::fs::read(project.join("pages/index/index.js")).unwrap(), b"Page({})");
}

#[test]
fn unpacking_refuses_an_escaping_entry_and_writes_nothing_outside() {
    let dir = TempDir::new("extract-evil");
    let path = dir.path("package.zip");
    let mut entries = project();
    entries.push(Entry::File("../outside.txt", b"evil"));
    write_zip(&path, &entries);
    // As if the file had been swapped after its inspection.
    let info = PackageInfo { sha256: String::new(), size: 1000, unpacked_size: 0, entries: 5, project_root: String::new() };
    let out = dir.path("out");

    let got = extract(&path, &info, &out, &PackageLimits::default());

    assert!(matches!(got, Err(PackageError::UnsafeEntry(_))), "{got:?}");
    assert!(!dir.path("outside.txt").exists());
}
