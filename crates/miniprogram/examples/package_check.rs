//! What the upload route checks before a code package is accepted, on real zip files:
//! [`package::inspect`] streams a file from disk and says what it holds or why it is refused
//! (no project files, an entry that would land outside the package when unpacked, a zip bomb);
//! [`package::extract`] unpacks an accepted one with the same checks. Both block on file I/O
//! and decompression: a service calls them off its async workers, as the crate's
//! `PackageInspector` port asks of its adapter.
//!
//! Run it with `cargo run -p atrium-miniprogram --example package_check`.
use atrium_miniprogram::package::{self, PackageLimits};
use std::io::Write;
use std::path::Path;
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

const CONFIG: &[u8] = br#"{"appid": "wx_template_dev", "projectname": "shop"}"#;
const APP: &[u8] = br#"{"pages": ["pages/index/index"]}"#;
const PAGE: &[u8] = b"Page({ data: { greeting: 'hello' } })";

/// An entry of a zip: its name and content.
type Entry<'a> = (&'a str, &'a [u8]);

/// Writes a zip of `entries` to `path`.
fn write_zip(path: &Path, entries: &[Entry<'_>]) -> Result<(), Box<dyn std::error::Error>> {
    let mut zip = ZipWriter::new(std::fs::File::create(path)?);
    let options = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
    for (name, content) in entries {
        zip.start_file(*name, options)?;
        zip.write_all(content)?;
    }
    zip.finish()?;
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let limits = PackageLimits::default();
    // 16 MiB of zeros deflate to some 16 KiB: far more unpacked than any honest package.
    let zeros = vec![0u8; 16 * 1024 * 1024];
    let packages: [(&str, Vec<Entry<'_>>); 4] = [
        ("shop.zip", vec![("shop/project.config.json", CONFIG), ("shop/app.json", APP), ("shop/pages/index/index.js", PAGE)]),
        ("no-app-json.zip", vec![("project.config.json", CONFIG), ("pages/index/index.js", PAGE)]),
        ("climbing.zip", vec![("project.config.json", CONFIG), ("app.json", APP), ("../../etc/cron.d/job", PAGE)]),
        ("bomb.zip", vec![("project.config.json", CONFIG), ("app.json", APP), ("assets/padding.bin", &zeros)]),
    ];

    for (name, entries) in &packages {
        let path = dir.path().join(name);
        write_zip(&path, entries)?;
        match package::inspect(&path, &limits) {
            Ok(info) => {
                println!(
                    "{name:<16} accepted: {} bytes, {} unpacked, {} entries, project in {:?}, sha256 {}…",
                    info.size,
                    info.unpacked_size,
                    info.entries,
                    info.project_root,
                    &info.sha256[..12]
                );
                let project = package::extract(&path, &info, &dir.path().join("unpacked"), &limits)?;
                let mut files: Vec<String> = Vec::new();
                for entry in std::fs::read_dir(&project)? {
                    files.push(entry?.file_name().to_string_lossy().into_owned());
                }
                files.sort();
                println!("{:<16} unpacked to {}: {}", "", project.display(), files.join(", "));
            }
            Err(e) => println!("{name:<16} refused: {e}"),
        }
    }
    Ok(())
}
