//! A 19 MiB package is checked and unpacked as a stream: the process's peak resident memory
//! grows by less than the package's size. Its own test binary, with one test, so nothing else
//! runs in the process while the peak is measured.
#![allow(clippy::unwrap_used)]

use atrium_miniprogram::package::{PackageLimits, extract, inspect};
use std::io::Write;
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

/// `VmHWM` (peak resident set) of this process, in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

/// Resets the peak to the current resident set (Linux: `echo 5 > /proc/self/clear_refs`).
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Incompressible bytes (xorshift), so the zip is as large as its content.
fn noise(state: &mut u64, buf: &mut [u8]) {
    for chunk in buf.chunks_mut(8) {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        chunk.copy_from_slice(&state.to_le_bytes()[..chunk.len()]);
    }
}

/// A test that cannot run on this machine says so past the test harness's capture, so its
/// pass is not mistaken for a run; in CI (`CI` set, as GitHub Actions sets it) it fails.
fn cannot_run_here(test: &str, why: &str) {
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false");
    assert!(!ci, "{test} must run in CI, but {why}");
    let _ = writeln!(std::io::stderr(), "SKIPPED: {test}: {why}");
}

#[test]
fn a_19_mib_package_is_checked_and_unpacked_without_holding_it_in_memory() {
    // Linux's: the peak resident set (VmHWM) and a way to reset it (since Linux 4.0).
    let needs = ["/proc/self/status", "/proc/self/clear_refs"];
    if let Some(missing) = needs.iter().find(|p| !std::path::Path::new(p).exists()) {
        cannot_run_here("a_19_mib_package_is_checked_and_unpacked_without_holding_it_in_memory", &format!("there is no {missing}"));
        return;
    }
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let dir = std::env::temp_dir().join(format!("atrium-package-rss-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("package.zip");
    {
        let mut zip = ZipWriter::new(std::io::BufWriter::new(std::fs::File::create(&path).unwrap()));
        let stored = SimpleFileOptions::default().compression_method(CompressionMethod::Stored);
        zip.start_file("project.config.json", stored).unwrap();
        zip.write_all(b"{}").unwrap();
        zip.start_file("app.json", stored).unwrap();
        zip.write_all(br#"{"pages": ["pages/index/index"]}"#).unwrap();
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut buf = vec![0u8; 64 * 1024];
        for i in 0..19 {
            zip.start_file(format!("assets/blob{i}.bin"), stored).unwrap();
            for _ in 0..16 {
                noise(&mut state, &mut buf);
                zip.write_all(&buf).unwrap();
            }
        }
        zip.finish().unwrap().flush().unwrap();
    }
    let size = std::fs::metadata(&path).unwrap().len();
    assert!((19 * 1024 * 1024..=20 * 1024 * 1024).contains(&size), "{size}");

    assert!(reset_peak(), "the peak resident set could not be reset through /proc/self/clear_refs");
    let before = peak_rss();
    let limits = PackageLimits::default();
    let info = inspect(&path, &limits).unwrap();
    let project = extract(&path, &info, &dir.join("out"), &limits).unwrap();
    let grown = peak_rss().saturating_sub(before);
    eprintln!("peak RSS grew by {grown} bytes for a {size}-byte package");

    assert_eq!(std::fs::metadata(project.join("assets/blob18.bin")).unwrap().len(), 1024 * 1024);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(grown < size / 2, "peak RSS grew by {grown} bytes for a {size}-byte package");
}
