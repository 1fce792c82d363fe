//! The `miniprogram-ci` uploader with stand-in commands: small shell scripts, written by each
//! test, that check the arguments they get and answer as the real tool does (or hang, or
//! fail). They run as `/bin/sh <script>` so no freshly written file is executed directly.
#![cfg(unix)]
#![allow(clippy::unwrap_used)]

use atrium_miniprogram::package::PackageLimits;
use atrium_miniprogram::{CodeUploader, PackageInspector, StoredPackage, UploadJob, UploaderError};
use atrium_wechat::{BlockingPackageInspector, MiniprogramCi, MiniprogramCiConfig};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use zip::write::SimpleFileOptions;

struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        let dir = std::env::temp_dir().join(format!("atrium-ci-{name}-{}-{nanos}", std::process::id()));
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

/// A package with the project in folder `shop/`.
fn package(dir: &TempDir) -> StoredPackage {
    let path = dir.path("package.zip");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    for (name, data) in [
        ("shop/project.config.json", &br#"{"appid": "wxtemplatedev"}"#[..]),
        ("shop/app.json", br#"{"pages": ["pages/index/index"]}"#),
        ("shop/pages/index/index.js", b"Page({})"),
    ] {
        zip.start_file(name, SimpleFileOptions::default()).unwrap();
        zip.write_all(data).unwrap();
    }
    zip.finish().unwrap();
    StoredPackage {
        sha256: "0123456789abcdef".repeat(4),
        size: std::fs::metadata(&path).unwrap().len(),
        project_root: "shop/".into(),
        path,
        created_at: chrono::Utc::now(),
    }
}

const DESCRIPTION: &str = r#"atrium upload task 7; $(touch /tmp/atrium-pwned) "quoted" `x`"#;

fn job(package: StoredPackage) -> UploadJob {
    UploadJob { package, version: "1.2.3".into(), description: DESCRIPTION.into() }
}

/// An uploader running `script` with `sh`, unpacking under `dir/work`.
fn uploader(dir: &TempDir, script: &str, timeout: Duration) -> (MiniprogramCi, PathBuf) {
    let script_path = dir.path("stand-in.sh");
    std::fs::write(&script_path, script).unwrap();
    let key = dir.path("private.wxtemplatedev.key");
    std::fs::write(&key, "-----BEGIN RSA PRIVATE KEY-----\nnot a real key\n-----END RSA PRIVATE KEY-----\n").unwrap();
    let work = dir.path("work");
    std::fs::create_dir_all(&work).unwrap();
    let mut config = MiniprogramCiConfig::new("/bin/sh", &key, &work).unwrap();
    config.leading_args = vec![script_path.to_string_lossy().into_owned()];
    config.timeout = timeout;
    config.robot = 3;
    (MiniprogramCi::new(config), work)
}

fn entries(dir: &Path) -> usize {
    std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0)
}

#[tokio::test]
async fn the_stand_in_gets_the_unpacked_project_and_every_argument_and_the_sizes_are_read() {
    let dir = TempDir::new("ok");
    let record = dir.path("seen-project");
    let key = dir.path("private.wxtemplatedev.key");
    let script = format!(
        r#"
fail() {{ echo "stand-in: $1" >&2; exit 9; }}
[ "$1" = "upload" ] || fail "first argument is $1"
shift
while [ $# -gt 0 ]; do
  case "$1" in
    --pp) pp="$2"; shift 2 ;;
    --pkp) pkp="$2"; shift 2 ;;
    --appid) appid="$2"; shift 2 ;;
    --uv) uv="$2"; shift 2 ;;
    --ud) ud="$2"; shift 2 ;;
    -r) robot="$2"; shift 2 ;;
    *) fail "unexpected argument $1" ;;
  esac
done
[ -f "$pp/project.config.json" ] || fail "no project.config.json in $pp"
[ -f "$pp/app.json" ] || fail "no app.json in $pp"
[ -f "$pp/pages/index/index.js" ] || fail "no pages in $pp"
[ "$(pwd)" = "$pp" ] || fail "runs in $(pwd), not in $pp"
[ "$pkp" = '{key}' ] || fail "key file $pkp"
[ "$appid" = "wxtemplatedev" ] || fail "appid $appid"
[ "$uv" = "1.2.3" ] || fail "version $uv"
[ "$ud" = '{ud}' ] || fail "description $ud"
[ "$robot" = "3" ] || fail "robot $robot"
printf '%s' "$pp" > '{record}'
echo "- wait compile"
echo "✔ upload"
echo "{{ subPackageInfo: [ {{ name: '__FULL__', size: 4096 }}, {{ name: '__APP__', size: 4000 }} ], pluginInfo: [] }}"
"#,
        key = key.display(),
        ud = DESCRIPTION.replace('\'', r"'\''"),
        record = record.display(),
    );
    let (ci, work) = uploader(&dir, &script, Duration::from_secs(30));

    let report = ci.upload(&job(package(&dir))).await.unwrap();

    assert_eq!(report.package_sizes, [("__FULL__".to_owned(), 4096), ("__APP__".to_owned(), 4000)]);
    let seen = PathBuf::from(std::fs::read_to_string(&record).unwrap());
    assert!(seen.starts_with(&work) && seen.ends_with("shop"), "{seen:?}");
    assert!(!seen.exists(), "the unpacked project is removed afterwards");
    assert_eq!(entries(&work), 0);
    assert!(!Path::new("/tmp/atrium-pwned").exists(), "the description was interpreted by a shell");
}

#[tokio::test]
async fn a_refusal_is_rejected_with_the_tools_error_code() {
    let dir = TempDir::new("refused");
    let script = r#"echo "- wait"; echo 'Error: {"errCode":-10008,"errMsg":"invalid ip: 10.1.2.3, reference: ci"}' >&2; exit 1"#;
    let (ci, work) = uploader(&dir, script, Duration::from_secs(30));

    let err = ci.upload(&job(package(&dir))).await.unwrap_err();

    match err {
        UploaderError::Rejected { code, message } => {
            assert_eq!(code, Some(-10008));
            assert!(message.contains("invalid ip"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(entries(&work), 0);
}

#[tokio::test]
async fn a_failure_without_a_code_is_a_failure_to_retry() {
    let dir = TempDir::new("crash");
    let (ci, _) = uploader(&dir, "echo 'node: something broke' >&2; exit 3", Duration::from_secs(30));
    let err = ci.upload(&job(package(&dir))).await.unwrap_err();
    assert!(matches!(err, UploaderError::Failed(ref m) if m.contains("something broke") && m.contains('3')), "{err:?}");
}

fn alive(pid: u32) -> bool {
    // A process that is gone, or a zombie waiting for its reaper, no longer runs.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

#[tokio::test]
async fn an_uploader_that_overruns_is_stopped_with_its_children() {
    let dir = TempDir::new("hang");
    let pids = dir.path("pids");
    let script = format!("sleep 30 & echo \"$$ $!\" > '{}'; wait", pids.display());
    let (ci, work) = uploader(&dir, &script, Duration::from_millis(700));

    let started = Instant::now();
    let err = ci.upload(&job(package(&dir))).await.unwrap_err();

    assert_eq!(err, UploaderError::TimedOut(1));
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    let recorded = std::fs::read_to_string(&pids).unwrap();
    let pids: Vec<u32> = recorded.split_whitespace().map(|p| p.parse().unwrap()).collect();
    let deadline = Instant::now() + Duration::from_secs(5);
    while pids.iter().any(|p| alive(*p)) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(pids.iter().all(|p| !alive(*p)), "still running: {pids:?}");
    assert_eq!(entries(&work), 0);
}

#[tokio::test]
async fn a_missing_command_or_an_unreadable_package_fails_cleanly() {
    let dir = TempDir::new("missing");
    let key = dir.path("private.wxtemplatedev.key");
    std::fs::write(&key, "k").unwrap();
    let mut config = MiniprogramCiConfig::new(dir.path("no-such-command"), &key, dir.path("work")).unwrap();
    config.timeout = Duration::from_secs(5);
    let err = MiniprogramCi::new(config).upload(&job(package(&dir))).await.unwrap_err();
    assert!(matches!(err, UploaderError::Failed(ref m) if m.contains("could not be started")), "{err:?}");

    let (ci, work) = uploader(&dir, "exit 0", Duration::from_secs(5));
    let mut broken = package(&dir);
    std::fs::write(&broken.path, b"not a zip").unwrap();
    broken.size = 9;
    let err = ci.upload(&job(broken)).await.unwrap_err();
    assert!(matches!(err, UploaderError::Failed(ref m) if m.contains("unpacked")), "{err:?}");
    assert_eq!(entries(&work), 0);
}

#[tokio::test]
async fn the_inspector_checks_packages_off_the_async_workers() {
    let dir = TempDir::new("inspect");
    let kept = package(&dir);
    let info = BlockingPackageInspector.inspect(kept.path.clone(), PackageLimits::default()).await.unwrap();
    assert_eq!((info.project_root.as_str(), info.size), ("shop/", kept.size));
    std::fs::write(dir.path("text.zip"), "hello").unwrap();
    let err = BlockingPackageInspector.inspect(dir.path("text.zip"), PackageLimits::default()).await.unwrap_err();
    assert_eq!(err, atrium_miniprogram::PackageError::NotZip);
}
