//! Code packages on disk: [`MiniprogramCi`] implements the mini-program domain's
//! `CodeUploader` port with the platform's `miniprogram-ci` command, run as a child process,
//! and [`BlockingPackageInspector`] its `PackageInspector` port.
//!
//! An upload unpacks the kept zip (streamed, with the domain's checks) into a fresh directory,
//! runs
//! `<command> upload --pp <project dir> --pkp <key file> --appid <appid> --uv <version>
//! --ud <description> -r <robot>` directly (no shell, so nothing in a version or description
//! is interpreted), reads its output as it comes (keeping only the tail), stops it — its whole
//! process group — when it overruns the time-out, and removes the directory afterwards. The
//! key file's path is passed, never its content, and nothing of the key reaches a log.
use async_trait::async_trait;
use atrium_miniprogram::package::{self, PackageError, PackageInfo, PackageLimits};
use atrium_miniprogram::{CodeUploader, PackageInspector, UploadJob, UploadReport, UploaderError};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};

/// How much of each output stream is kept for parsing and messages.
const OUTPUT_TAIL: usize = 64 * 1024;

/// Runs [`package::inspect`] on the blocking pool.
#[derive(Debug, Default, Clone, Copy)]
pub struct BlockingPackageInspector;

#[async_trait]
impl PackageInspector for BlockingPackageInspector {
    async fn inspect(&self, file: PathBuf, limits: PackageLimits) -> Result<PackageInfo, PackageError> {
        tokio::task::spawn_blocking(move || package::inspect(&file, &limits))
            .await
            .map_err(|e| PackageError::Io(format!("the check did not finish: {e}")))?
    }
}

/// How to run `miniprogram-ci`.
#[derive(Debug, Clone)]
pub struct MiniprogramCiConfig {
    /// The executable (`ATRIUM_WECHAT_CI_COMMAND`), e.g. `miniprogram-ci` on the `PATH` or an
    /// absolute path.
    pub command: PathBuf,
    /// Words before the arguments, e.g. the script when `command` is `node`.
    pub leading_args: Vec<String>,
    /// The template-development mini-program uploads go to.
    pub appid: String,
    /// The upload key (`ATRIUM_WECHAT_CI_KEY_FILE`), named `private.<appid>.key`.
    pub key_file: PathBuf,
    /// Where packages are unpacked for the uploader, one fresh directory per run.
    pub work_dir: PathBuf,
    pub timeout: Duration,
    /// Which of the platform's upload robots (1–30) signs the upload.
    pub robot: u8,
    pub limits: PackageLimits,
}

impl MiniprogramCiConfig {
    /// The appid is read from the key file's name (`private.<appid>.key`); 10 minutes, robot
    /// 1. `None` when the name does not follow that pattern.
    pub fn new(command: impl Into<PathBuf>, key_file: impl Into<PathBuf>, work_dir: impl Into<PathBuf>) -> Option<Self> {
        let key_file = key_file.into();
        let appid = appid_of_key_file(&key_file)?;
        Some(MiniprogramCiConfig {
            command: command.into(),
            leading_args: Vec::new(),
            appid,
            key_file,
            work_dir: work_dir.into(),
            timeout: Duration::from_secs(600),
            robot: 1,
            limits: PackageLimits::default(),
        })
    }
}

/// `wx123` of `…/private.wx123.key`.
pub fn appid_of_key_file(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let appid = name.strip_prefix("private.")?.strip_suffix(".key")?;
    (!appid.is_empty() && appid.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')).then(|| appid.to_owned())
}

/// The uploader.
#[derive(Debug, Clone)]
pub struct MiniprogramCi {
    config: MiniprogramCiConfig,
}

/// What a run printed, and how it ended.
struct Run {
    success: bool,
    exit: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Reads `stream` to its end, keeping the last [`OUTPUT_TAIL`] bytes.
async fn tail(mut stream: impl AsyncRead + Unpin) -> Vec<u8> {
    let mut kept = Vec::new();
    let mut buf = vec![0u8; 8192];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return kept,
            Ok(n) => {
                kept.extend_from_slice(&buf[..n]);
                if kept.len() > 2 * OUTPUT_TAIL {
                    kept.drain(..kept.len() - OUTPUT_TAIL);
                }
            }
        }
    }
}

fn lossy_tail(bytes: &[u8]) -> String {
    let start = bytes.len().saturating_sub(OUTPUT_TAIL);
    String::from_utf8_lossy(&bytes[start..]).into_owned()
}

/// The package sizes the uploader reports: `name: '__FULL__', size: 1234` (its console
/// output) or `"name":"__FULL__","size":1234` (JSON), in order.
pub fn parse_sizes(output: &str) -> Vec<(String, u64)> {
    let mut sizes = Vec::new();
    let mut rest = output;
    while let Some(i) = rest.find("name") {
        rest = &rest[i + 4..];
        // `name` is followed by the key's closing quote (JSON), a colon, and the value's quote.
        let after = rest.strip_prefix(['"', '\'']).unwrap_or(rest).trim_start();
        let Some(after) = after.strip_prefix(':').map(str::trim_start) else { continue };
        let Some(quote) = after.chars().next().filter(|c| *c == '"' || *c == '\'') else { continue };
        let Some((name, after_name)) = after[1..].split_once(quote) else { continue };
        let Some(j) = after_name.find("size") else { continue };
        if after_name[..j].contains('}') {
            continue;
        }
        let digits: String =
            after_name[j + 4..].trim_start_matches(['"', '\'', ':', ' ']).chars().take_while(char::is_ascii_digit).collect();
        if let Ok(size) = digits.parse() {
            sizes.push((name.to_owned(), size));
        }
    }
    sizes
}

/// The uploader's error code in its output: `errCode: -10008`, `"errCode":-10008` or
/// `code: -10008`.
pub fn parse_error_code(output: &str) -> Option<i64> {
    for key in ["errCode", "errcode", "code"] {
        let mut rest = output;
        while let Some(i) = rest.find(key) {
            rest = &rest[i + key.len()..];
            let value = rest.trim_start_matches(['"', '\'', ':', ' ', '=']);
            let sign = usize::from(value.starts_with('-'));
            let digits: String = value[sign..].chars().take_while(char::is_ascii_digit).collect();
            if !digits.is_empty()
                && rest.len() != value.len()
                && let Ok(n) = format!("{}{digits}", &value[..sign]).parse()
            {
                return Some(n);
            }
        }
    }
    None
}

/// The last non-empty line of `output`, at most 300 characters.
fn last_line(output: &str) -> String {
    output.lines().rev().map(str::trim).find(|l| !l.is_empty()).unwrap_or("no output").chars().take(300).collect()
}

impl MiniprogramCi {
    pub fn new(config: MiniprogramCiConfig) -> Self {
        MiniprogramCi { config }
    }

    /// The arguments for uploading `project` as `job`.
    pub fn arguments(&self, project: &Path, job: &UploadJob) -> Vec<std::ffi::OsString> {
        let mut args: Vec<std::ffi::OsString> = self.config.leading_args.iter().map(Into::into).collect();
        args.push("upload".into());
        args.push("--pp".into());
        args.push(project.into());
        args.push("--pkp".into());
        args.push(self.config.key_file.clone().into());
        args.push("--appid".into());
        args.push(self.config.appid.clone().into());
        args.push("--uv".into());
        args.push(job.version.clone().into());
        args.push("--ud".into());
        args.push(job.description.clone().into());
        args.push("-r".into());
        args.push(self.config.robot.to_string().into());
        args
    }

    /// Runs the command on `project`, stopping it at the time-out.
    async fn run(&self, project: &Path, job: &UploadJob) -> Result<Run, UploaderError> {
        let mut command = tokio::process::Command::new(&self.config.command);
        command
            .args(self.arguments(project, job))
            .current_dir(project)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        command.process_group(0);
        let mut child =
            command.spawn().map_err(|e| UploaderError::Failed(format!("{} could not be started: {e}", self.config.command.display())))?;
        let stdout = child.stdout.take().map(|s| tokio::spawn(tail(s)));
        let stderr = child.stderr.take().map(|s| tokio::spawn(tail(s)));
        let status = match tokio::time::timeout(self.config.timeout, child.wait()).await {
            Ok(status) => status.map_err(|e| UploaderError::Failed(format!("waiting for the uploader failed: {e}")))?,
            Err(_) => {
                stop_group(child.id());
                let _ = child.kill().await;
                let t = self.config.timeout;
                return Err(UploaderError::TimedOut(t.as_secs() + u64::from(t.subsec_nanos() > 0)));
            }
        };
        let collect = |h: Option<tokio::task::JoinHandle<Vec<u8>>>| async move {
            match h {
                Some(h) => lossy_tail(&h.await.unwrap_or_default()),
                None => String::new(),
            }
        };
        Ok(Run { success: status.success(), exit: status.code(), stdout: collect(stdout).await, stderr: collect(stderr).await })
    }
}

/// Stops the uploader's whole process group (it may have started helpers); best effort.
fn stop_group(pid: Option<u32>) {
    #[cfg(unix)]
    if let Some(pid) = pid {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", "--", &format!("-{pid}")])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    #[cfg(not(unix))]
    let _ = pid;
}

/// Removes `dir` on the blocking pool; a failure is logged.
async fn remove_dir(dir: PathBuf) {
    let shown = dir.display().to_string();
    match tokio::task::spawn_blocking(move || std::fs::remove_dir_all(&dir)).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => {}
        Ok(Err(e)) => log::warn!("the upload directory {shown} could not be removed: {e}"),
        Err(e) => log::warn!("removing the upload directory {shown} did not finish: {e}"),
    }
}

#[async_trait]
impl CodeUploader for MiniprogramCi {
    async fn upload(&self, job: &UploadJob) -> Result<UploadReport, UploaderError> {
        let nonce = atrium_kernel::secret::random_token(9);
        let dir = self.config.work_dir.join(format!("upload-{}-{nonce}", &job.package.sha256.get(..12).unwrap_or("package")));
        let info = PackageInfo {
            sha256: job.package.sha256.clone(),
            size: job.package.size,
            unpacked_size: 0,
            entries: 0,
            project_root: job.package.project_root.clone(),
        };
        let (zip, limits, target) = (job.package.path.clone(), self.config.limits, dir.clone());
        let unpacked = tokio::task::spawn_blocking(move || package::extract(&zip, &info, &target, &limits))
            .await
            .map_err(|e| UploaderError::Failed(format!("unpacking did not finish: {e}")));
        let project = match unpacked {
            Ok(Ok(project)) => project,
            Ok(Err(e)) => {
                remove_dir(dir).await;
                return Err(UploaderError::Failed(format!("the package could not be unpacked: {e}")));
            }
            Err(e) => {
                remove_dir(dir).await;
                return Err(e);
            }
        };
        let run = self.run(&project, job).await;
        remove_dir(dir).await;
        let run = run?;
        let output = format!("{}\n{}", run.stdout, run.stderr);
        if run.success {
            let package_sizes = parse_sizes(&run.stdout);
            let report = UploadReport { package_sizes };
            log::info!("miniprogram-ci uploaded version {} ({})", job.version, report.sizes());
            return Ok(report);
        }
        let message = last_line(if run.stderr.trim().is_empty() { &run.stdout } else { &run.stderr });
        let exit = run.exit.map_or("killed by a signal".to_owned(), |code| format!("exit code {code}"));
        log::warn!("miniprogram-ci failed for version {} ({exit}): {message}", job.version);
        match parse_error_code(&output) {
            Some(code) => Err(UploaderError::Rejected { code: Some(code), message }),
            None => Err(UploaderError::Failed(format!("{exit}: {message}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_appid_comes_from_the_key_files_name() {
        assert_eq!(appid_of_key_file(Path::new("/keys/private.wx0123abcd.key")).as_deref(), Some("wx0123abcd"));
        assert_eq!(appid_of_key_file(Path::new("private..key")), None);
        assert_eq!(appid_of_key_file(Path::new("/keys/upload.key")), None);
        assert_eq!(appid_of_key_file(Path::new("private.wx 1.key")), None);
    }

    #[test]
    fn package_sizes_are_read_from_console_or_json_output() {
        let console =
            "✔ upload\n{ subPackageInfo: [ { name: '__FULL__', size: 12345 }, { name: '__APP__', size: 2345 } ], pluginInfo: [] }";
        assert_eq!(parse_sizes(console), [("__FULL__".to_owned(), 12345), ("__APP__".to_owned(), 2345)]);
        let json = r#"{"subPackageInfo":[{"name":"/pkgA/","size":99}]}"#;
        assert_eq!(parse_sizes(json), [("/pkgA/".to_owned(), 99)]);
        assert!(parse_sizes("nothing here; name: 'x' }, size: 3").is_empty());
    }

    #[test]
    fn error_codes_are_read_from_the_output() {
        assert_eq!(parse_error_code(r#"Error: {"errCode":-10008,"errMsg":"invalid ip: 1.2.3.4"}"#), Some(-10008));
        assert_eq!(parse_error_code("errCode: 20003, errMsg: 'bad key'"), Some(20003));
        assert_eq!(parse_error_code("Error: code: -1"), Some(-1));
        assert_eq!(parse_error_code("no code at all; decoder failed"), None);
    }
}
