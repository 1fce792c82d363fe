//! The package upload that stands in for `miniprogram-ci`: `POST {prefix}/api/ci/upload?
//! appid=…&version=…&desc=…` with the zip as the body. The sandbox reads it as it arrives
//! (hashing and counting, keeping only the last 64 KiB to find the zip's end record), checks
//! that it is a zip of at most 20 MiB, keeps its size and SHA-256 — never the bytes — and
//! adds a draft (`user_version` = version, `user_desc` = desc) to the template-development
//! mini-program's list.
//!
//! [`SandboxUploader`] is the domain's `CodeUploader` for sandbox mode: it streams the kept
//! zip from disk to that endpoint.
use actix_web::{HttpRequest, HttpResponse, web};
use async_trait::async_trait;
use atrium_miniprogram::package::MAX_PACKAGE_BYTES;
use atrium_miniprogram::{CodeUploader, UploadJob, UploadReport, UploaderError};
use chrono::{DateTime, Utc};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::time::Duration;

use super::{CI_UPLOAD_PATH, err, errmsg};
use crate::platform::Sandbox;

const KEEP_UPLOADS: usize = 1_000;
/// A zip's end record (22 bytes) with the longest comment it may carry.
const TAIL: usize = 22 + 65_535;
const LOCAL_HEADER: &[u8] = b"PK\x03\x04";
const END_RECORD: &[u8] = b"PK\x05\x06";

/// A package the upload endpoint took: `GET {prefix}/control/ci-uploads` and
/// [`Sandbox::ci_uploads`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CiUpload {
    /// The draft it became.
    pub draft_id: i64,
    pub appid: String,
    pub version: String,
    pub desc: String,
    /// Bytes received.
    pub size: u64,
    /// SHA-256 of the bytes, hex.
    pub sha256: String,
    pub received_at: DateTime<Utc>,
}

/// What the upload endpoint learns of a body read to its end.
struct Received {
    size: u64,
    sha256: String,
    /// Starts with a local file header and has an end record in its last 64 KiB.
    zip: bool,
}

/// Reads `payload` to its end, hashing it; past `limit` bytes it only counts (the client is
/// still sending, and an answer before the body is read would reach it as a broken
/// connection).
async fn receive(mut payload: web::Payload, limit: u64) -> Result<Received, String> {
    let mut hasher = openssl::sha::Sha256::new();
    let mut size = 0u64;
    let mut head: Vec<u8> = Vec::with_capacity(4);
    let mut tail: Vec<u8> = Vec::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| format!("the upload was cut off: {e}"))?;
        size += chunk.len() as u64;
        if size > limit {
            continue;
        }
        hasher.update(&chunk);
        if head.len() < 4 {
            head.extend(chunk.iter().take(4 - head.len()));
        }
        tail.extend_from_slice(&chunk);
        if tail.len() > 2 * TAIL {
            tail.drain(..tail.len() - TAIL);
        }
    }
    let zip = head == LOCAL_HEADER && tail.windows(4).rev().any(|w| w == END_RECORD);
    Ok(Received { size, sha256: hex::encode(hasher.finish()), zip })
}

#[derive(Deserialize)]
pub(crate) struct UploadQuery {
    appid: Option<String>,
    version: Option<String>,
    desc: Option<String>,
}

fn answer(body: Value) -> HttpResponse {
    HttpResponse::Ok().json(body)
}

/// `POST {prefix}/api/ci/upload?appid=…&version=…&desc=…`.
pub(crate) async fn ci_upload(sb: web::Data<Sandbox>, req: HttpRequest, payload: web::Payload) -> HttpResponse {
    let q: UploadQuery = match web::Query::<UploadQuery>::from_query(req.query_string()) {
        Ok(q) => q.into_inner(),
        Err(_) => UploadQuery { appid: None, version: None, desc: None },
    };
    let refusal = {
        let mut state = sb.lock();
        let dev = state.open.config.template_dev_appid.clone();
        if let Some(code) = state.mp.injected(CI_UPLOAD_PATH) {
            Some(code)
        } else if q.appid.as_deref() != Some(dev.as_str()) {
            Some(40013)
        } else if !q.version.as_deref().is_some_and(|v| (1..=64).contains(&v.chars().count()))
            || q.desc.as_deref().is_some_and(|d| d.chars().count() > 1024)
        {
            Some(47003)
        } else {
            None
        }
    };
    let received = match receive(payload, MAX_PACKAGE_BYTES).await {
        Ok(r) => r,
        Err(why) => return HttpResponse::BadRequest().json(json!({"errcode": 47001, "errmsg": why})),
    };
    if let Some(code) = refusal {
        return answer(err(code));
    }
    if received.size > MAX_PACKAGE_BYTES {
        return answer(err(85044));
    }
    if !received.zip {
        return answer(json!({"errcode": 47001, "errmsg": format!("{} rid: the package is not a zip", errmsg(47001))}));
    }
    let (appid, version, desc) = (q.appid.unwrap_or_default(), q.version.unwrap_or_default(), q.desc.unwrap_or_default());
    let draft_id = {
        let mut state = sb.lock();
        let open = &mut state.open;
        let draft_id = open.library.add_draft(&version, &desc);
        if open.uploads.len() >= KEEP_UPLOADS {
            open.uploads.pop_front();
        }
        open.uploads.push_back(CiUpload {
            draft_id,
            appid,
            version: version.clone(),
            desc,
            size: received.size,
            sha256: received.sha256.clone(),
            received_at: Utc::now(),
        });
        draft_id
    };
    log::info!("sandbox platform took package version {version} ({} bytes) as draft {draft_id}", received.size);
    answer(json!({
        "errcode": 0,
        "errmsg": "ok",
        "draft_id": draft_id,
        "size": received.size,
        "sha256": received.sha256,
        "subPackageInfo": [{"name": "__FULL__", "size": received.size}],
        "pluginInfo": [],
    }))
}

impl Sandbox {
    /// Packages the upload endpoint took, oldest first.
    pub fn ci_uploads(&self) -> Vec<CiUpload> {
        self.lock().open.uploads.iter().cloned().collect()
    }
}

/// The domain's `CodeUploader` in sandbox mode: instead of running `miniprogram-ci`, it
/// streams the kept zip from disk (never whole in memory) to the sandbox's upload endpoint,
/// which adds a draft to the template-development mini-program, described as the job says.
///
/// - the sandbox's refusal (an errcode) → `UploaderError::Rejected` with that code;
/// - no answer within the time-out → `UploaderError::TimedOut`;
/// - the package unreadable, the sandbox unreachable or answering an HTTP error →
///   `UploaderError::Failed`.
#[derive(Debug, Clone)]
pub struct SandboxUploader {
    http: reqwest::Client,
    api_base: String,
    appid: String,
    timeout: Duration,
}

/// Whole seconds of `t`, rounded up, as `UploaderError::TimedOut` reports them.
fn secs(t: Duration) -> u64 {
    t.as_secs() + u64::from(t.subsec_nanos() > 0)
}

#[derive(Deserialize)]
struct UploadAnswer {
    #[serde(default)]
    errcode: i64,
    #[serde(default)]
    errmsg: String,
    #[serde(default, rename = "subPackageInfo")]
    sub_packages: Vec<SubPackage>,
}

#[derive(Deserialize)]
struct SubPackage {
    name: String,
    size: u64,
}

impl SandboxUploader {
    /// Uploads to the sandbox whose platform API is at `api_base` (`<public url>/sandbox/api`)
    /// as template-development mini-program `appid` (the sandbox's is
    /// [`crate::SANDBOX_TEMPLATE_DEV_APPID`]); 10 minutes per upload.
    pub fn new(api_base: impl Into<String>, appid: impl Into<String>) -> Self {
        SandboxUploader { http: crate::http_client(), api_base: api_base.into(), appid: appid.into(), timeout: Duration::from_secs(600) }
    }

    /// The limit of one upload, sending and answer included.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    async fn send(&self, job: &UploadJob) -> Result<UploadReport, UploaderError> {
        let file = tokio::fs::File::open(&job.package.path)
            .await
            .map_err(|e| UploaderError::Failed(format!("the package {} could not be opened: {e}", job.package.path.display())))?;
        let len = file.metadata().await.map_err(|e| UploaderError::Failed(format!("the package could not be read: {e}")))?.len();
        let url = format!("{}{CI_UPLOAD_PATH}", self.api_base.trim_end_matches('/'));
        let response = self
            .http
            .post(&url)
            .query(&[("appid", self.appid.as_str()), ("version", job.version.as_str()), ("desc", job.description.as_str())])
            .header(reqwest::header::CONTENT_TYPE, "application/zip")
            .header(reqwest::header::CONTENT_LENGTH, len)
            // The file is read as it is sent, a chunk at a time.
            .body(reqwest::Body::from(file))
            .send()
            .await
            .map_err(|e| match e {
                e if e.is_timeout() => UploaderError::TimedOut(secs(self.timeout)),
                e if e.is_connect() => UploaderError::Failed("the sandbox could not be reached".into()),
                e => UploaderError::Failed(format!("the upload failed: {}", e.without_url())),
            })?;
        let status = response.status();
        if !status.is_success() {
            return Err(UploaderError::Failed(format!("the sandbox answered HTTP {}", status.as_u16())));
        }
        let answer: UploadAnswer =
            response.json().await.map_err(|_| UploaderError::Failed("the sandbox sent an unreadable answer".into()))?;
        if answer.errcode != 0 {
            return Err(UploaderError::Rejected { code: Some(answer.errcode), message: answer.errmsg });
        }
        Ok(UploadReport { package_sizes: answer.sub_packages.into_iter().map(|p| (p.name, p.size)).collect() })
    }
}

#[async_trait]
impl CodeUploader for SandboxUploader {
    async fn upload(&self, job: &UploadJob) -> Result<UploadReport, UploaderError> {
        let outcome = match tokio::time::timeout(self.timeout, self.send(job)).await {
            Ok(r) => r,
            Err(_) => Err(UploaderError::TimedOut(secs(self.timeout))),
        };
        match &outcome {
            Ok(report) => log::info!("sandbox uploader uploaded version {} ({})", job.version, report.sizes()),
            Err(e) => log::warn!("sandbox uploader failed for version {}: {e}", job.version),
        }
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::super::serve;
    use super::*;
    use crate::SANDBOX_TEMPLATE_DEV_APPID;
    use atrium_miniprogram::StoredPackage;
    use std::io::Write;
    use std::path::PathBuf;

    struct TempFile(PathBuf);

    impl Drop for TempFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn temp(name: &str, bytes: &[u8]) -> TempFile {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        let path = std::env::temp_dir().join(format!("atrium-sandbox-{name}-{}-{nanos}", std::process::id()));
        std::fs::write(&path, bytes).unwrap();
        TempFile(path)
    }

    /// A zip of a small project with `padding` bytes of incompressible data, so the body
    /// spans many chunks.
    fn zip_bytes(padding: usize) -> Vec<u8> {
        let mut buf = std::io::Cursor::new(Vec::new());
        let mut zip = zip::ZipWriter::new(&mut buf);
        let stored = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
        zip.start_file("shop/app.json", stored).unwrap();
        zip.write_all(br#"{"pages": ["pages/index/index"]}"#).unwrap();
        zip.start_file("shop/assets/noise.bin", stored).unwrap();
        let mut noise = vec![0u8; padding];
        openssl::rand::rand_bytes(&mut noise).unwrap();
        zip.write_all(&noise).unwrap();
        zip.finish().unwrap();
        buf.into_inner()
    }

    fn job(file: &TempFile, version: &str) -> UploadJob {
        let size = std::fs::metadata(&file.0).unwrap().len();
        let package =
            StoredPackage { sha256: "0".repeat(64), size, project_root: "shop/".into(), path: file.0.clone(), created_at: Utc::now() };
        UploadJob { package, version: version.into(), description: "atrium upload task 5".into() }
    }

    #[tokio::test]
    async fn a_zip_is_streamed_hashed_and_becomes_a_draft() {
        let sb = Sandbox::new();
        let served = serve::start(&sb, |_| {});
        let bytes = zip_bytes(3 * 1024 * 1024);
        let file = temp("pkg.zip", &bytes);
        let uploader = SandboxUploader::new(format!("{}/sandbox/api/", served.origin), SANDBOX_TEMPLATE_DEV_APPID);

        let report = uploader.upload(&job(&file, "1.2.3")).await.unwrap();

        assert_eq!(report.package_sizes, [("__FULL__".to_owned(), bytes.len() as u64)]);
        let uploads = sb.ci_uploads();
        assert_eq!(uploads.len(), 1);
        assert_eq!((uploads[0].version.as_str(), uploads[0].desc.as_str()), ("1.2.3", "atrium upload task 5"));
        assert_eq!(uploads[0].sha256, hex::encode(openssl::sha::sha256(&bytes)));
        let drafts = sb.lock().open.library_call(super::super::DRAFTS_PATH, &Value::Null);
        assert_eq!(drafts["draft_list"][0]["draft_id"], uploads[0].draft_id);
        assert_eq!(drafts["draft_list"][0]["user_desc"], "atrium upload task 5");
        served.stop().await;
    }

    #[tokio::test]
    async fn refusals_are_rejections_with_the_errcode() {
        let sb = Sandbox::new();
        let served = serve::start(&sb, |_| {});
        let base = format!("{}/sandbox/api", served.origin);
        let zip = temp("ok.zip", &zip_bytes(10));
        let not_zip = temp("no.zip", b"just some text, not a zip at all");
        let code = |r: Result<UploadReport, UploaderError>| match r {
            Err(UploaderError::Rejected { code, .. }) => code,
            other => panic!("{other:?}"),
        };

        assert_eq!(code(SandboxUploader::new(&base, SANDBOX_TEMPLATE_DEV_APPID).upload(&job(&not_zip, "1.0.0")).await), Some(47001));
        assert_eq!(code(SandboxUploader::new(&base, "wx_someone").upload(&job(&zip, "1.0.0")).await), Some(40013));
        assert_eq!(code(SandboxUploader::new(&base, SANDBOX_TEMPLATE_DEV_APPID).upload(&job(&zip, "")).await), Some(47003));
        sb.fail_next(CI_UPLOAD_PATH, -10008, 1).unwrap();
        assert_eq!(code(SandboxUploader::new(&base, SANDBOX_TEMPLATE_DEV_APPID).upload(&job(&zip, "1.0.0")).await), Some(-10008));
        assert!(sb.ci_uploads().is_empty());
        SandboxUploader::new(&base, SANDBOX_TEMPLATE_DEV_APPID).upload(&job(&zip, "1.0.0")).await.unwrap();
        served.stop().await;
    }

    #[tokio::test]
    async fn a_silent_sandbox_is_a_time_out_and_a_missing_one_a_failure() {
        // Accepts connections and never answers.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = silent.local_addr().unwrap();
        let zip = temp("t.zip", &zip_bytes(10));
        let uploader =
            SandboxUploader::new(format!("http://{addr}/sandbox/api"), SANDBOX_TEMPLATE_DEV_APPID).with_timeout(Duration::from_millis(300));
        assert_eq!(uploader.upload(&job(&zip, "1.0.0")).await.unwrap_err(), UploaderError::TimedOut(1));
        drop(silent);

        let gone = uploader.clone().upload(&job(&zip, "1.0.0")).await.unwrap_err();
        assert!(matches!(gone, UploaderError::Failed(ref m) if m.contains("could not be reached")), "{gone:?}");
        let missing = TempFile(std::env::temp_dir().join("atrium-sandbox-no-such-package.zip"));
        let err = uploader.upload(&job_without_file(&missing)).await.unwrap_err();
        assert!(matches!(err, UploaderError::Failed(ref m) if m.contains("could not be opened")), "{err:?}");
    }

    fn job_without_file(file: &TempFile) -> UploadJob {
        let package =
            StoredPackage { sha256: "0".repeat(64), size: 1, project_root: String::new(), path: file.0.clone(), created_at: Utc::now() };
        UploadJob { package, version: "1.0.0".into(), description: "d".into() }
    }
}
