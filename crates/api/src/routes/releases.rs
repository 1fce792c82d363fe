//! `/api/v1/miniprogram/*` code releases: a tenant's authorisation of its mini-program to our
//! third-party platform, code uploads (a template, or a package streamed to disk), audits,
//! releases and rollbacks, the console's extras, and the two URLs the platform pushes its
//! encrypted events to.
use crate::query::Query;
use actix_multipart::Multipart;
use actix_web::http::header;
use actix_web::{FromRequest, HttpMessage, HttpRequest, HttpResponse, web};
use atrium_kernel::{Error, Id};
use atrium_miniprogram::{
    AuditQuota, AuditStatusParams, AuditSubmit, AuditTaskListParams, AuditTaskRef, AuditTaskView, AuthorizationCallback, AuthorizationView,
    DomainsInput, DomainsView, EventError, EventRequest, EventUrl, ExperienceQrParams, PackageUpload, PreflightView, PrivacyInput,
    PrivacyView, PublishRequest, ReleaseTaskView, RollbackRequest, TemplateUpload, UploadTaskListParams, UploadTaskView, Version,
    VersionDescription, VersionsView,
};
use futures_util::StreamExt;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use tokio::io::AsyncWriteExt;
use utoipa::{IntoParams, ToSchema};

use super::IdPath;
use super::TenantParams;
use crate::app::AppState;
use crate::envelope::{ApiResult, ok};
use crate::error::ApiError;
use crate::extract::{Authorized, JsonBody};
use crate::permission;
use atrium_kernel::permission as perm;

permission!(
    MiniprogramRead = perm::MINIPROGRAM_READ,
    MiniprogramUpload = perm::MINIPROGRAM_UPLOAD,
    MiniprogramAudit = perm::MINIPROGRAM_AUDIT,
    MiniprogramPublish = perm::MINIPROGRAM_PUBLISH
);

/// The largest text part of a package upload (`tenant_id`, `version`, `description`).
const MAX_TEXT_PART_BYTES: usize = 4 * 1024;
/// What a multipart body may carry besides the package: the text parts and the boundaries.
const FORM_OVERHEAD_BYTES: u64 = 64 * 1024;
/// The largest pushed event: the platform's are a few kilobytes.
const MAX_EVENT_BYTES: usize = 64 * 1024;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/miniprogram/authorization").route(web::get().to(authorization)))
        .service(web::resource("/miniprogram/authorization/callback").route(web::get().to(authorization_callback)))
        .service(web::resource("/miniprogram/upload").route(web::post().to(upload)))
        .service(web::resource("/miniprogram/upload-tasks").route(web::get().to(upload_tasks)))
        .service(web::resource("/miniprogram/upload-tasks/{id}").route(web::get().to(upload_task)))
        .service(web::resource("/miniprogram/audit/submit").route(web::post().to(submit_audit)))
        .service(web::resource("/miniprogram/audit/status").route(web::get().to(audit_status)))
        .service(web::resource("/miniprogram/audit-tasks").route(web::get().to(audit_tasks)))
        .service(web::resource("/miniprogram/audit/quota").route(web::get().to(audit_quota)))
        .service(web::resource("/miniprogram/audit/speedup").route(web::post().to(speedup_audit)))
        .service(web::resource("/miniprogram/audit/undo").route(web::post().to(undo_audit)))
        .service(web::resource("/miniprogram/domains").route(web::get().to(domains)).route(web::put().to(put_domains)))
        .service(web::resource("/miniprogram/privacy").route(web::get().to(privacy)).route(web::put().to(put_privacy)))
        .service(web::resource("/miniprogram/preflight").route(web::get().to(preflight)))
        .service(web::resource("/miniprogram/publish").route(web::post().to(publish)))
        .service(web::resource("/miniprogram/rollback").route(web::post().to(rollback)))
        .service(web::resource("/miniprogram/versions").route(web::get().to(versions)))
        .service(web::resource("/miniprogram/experience-qr").route(web::get().to(experience_qr)))
        .service(web::resource("/miniprogram/component/events").route(web::post().to(component_events)))
        .service(web::resource("/miniprogram/component/messages/{appid}").route(web::post().to(component_messages)));
}

/// The tenant's authorisation of its mini-program; for a caller with `miniprogram:publish`,
/// also `authorize_url`: the platform's authorisation page with a fresh pre-auth code, for
/// the mini-program's admin to open (no link before the platform's first verify ticket).
#[utoipa::path(get, path = "/api/v1/miniprogram/authorization", tag = "miniprogram", params(TenantParams),
    security(("bearer" = ["miniprogram:read"])),
    responses((status = 200, body = AuthorizationView), (status = 404, description = "The tenant is not yours")))]
pub async fn authorization(state: web::Data<AppState>, auth: Authorized<MiniprogramRead>, q: Query<TenantParams>) -> ApiResult {
    ok(state.release_authorization.authorization(&auth.actor, q.into_inner().tenant_id).await?)
}

/// Where the platform's authorisation page sends the admin back. No token: the single-use
/// `state` of the link names the tenant. Stores the authorizer appid and its refresh token
/// (encrypted).
#[utoipa::path(get, path = "/api/v1/miniprogram/authorization/callback", tag = "miniprogram", params(AuthorizationCallback),
    responses((status = 200, body = AuthorizationView), (status = 404, description = "The link's state is unknown, used or expired"),
        (status = 409, description = "The mini-program is authorised for another tenant"),
        (status = 502, description = "The platform failed or refused the code")))]
pub async fn authorization_callback(state: web::Data<AppState>, q: Query<AuthorizationCallback>) -> ApiResult {
    ok(state.release_authorization.finish_authorization(q.into_inner()).await?)
}

/// Upload code, recorded as a task that runs as a job (`queued` → `running` → `uploaded` |
/// `failed`). JSON commits a template of the platform's library with the tenant's
/// `ext_json`; `multipart/form-data` takes a package (a zip of the project, at most 20 MiB),
/// kept by its content hash and uploaded to the platform. `version` is unique per tenant.
#[utoipa::path(post, path = "/api/v1/miniprogram/upload", tag = "miniprogram",
    request_body(content((TemplateUpload = "application/json"), (atrium_miniprogram::PackageUploadForm = "multipart/form-data"))),
    security(("bearer" = ["miniprogram:upload"])),
    responses((status = 200, body = UploadTaskView),
        (status = 409, description = "The version was used before, or the tenant has not authorised its mini-program"),
        (status = 413, description = "The package is larger than 20 MiB")))]
pub async fn upload(req: HttpRequest, state: web::Data<AppState>, auth: Authorized<MiniprogramUpload>, payload: web::Payload) -> ApiResult {
    let multipart = req.mime_type().ok().flatten().is_some_and(|m| m.essence_str() == "multipart/form-data");
    if !multipart {
        let body = JsonBody::<TemplateUpload>::from_request(&req, &mut payload.into_inner()).await?;
        return ok(state.releases.upload_template(&auth.actor, body.value).await?);
    }
    let max = state.releases.settings().package_limits.max_size;
    let declared = req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max.saturating_add(FORM_OVERHEAD_BYTES)) {
        return Err(too_large(max));
    }
    let form = read_package_form(Multipart::new(req.headers(), payload), &state.package_incoming, max).await?;
    let upload = PackageUpload {
        tenant_id: form.tenant_id,
        file: form.package.path.clone(),
        version: form.version.ok_or_else(|| Error::invalid("version", "is required"))?,
        description: form.description.ok_or_else(|| Error::invalid("description", "is required"))?,
    };
    // The service moves an accepted package into keeping; whatever is left here goes when
    // `form.package` is dropped.
    ok(state.releases.upload_package(&auth.actor, upload).await?)
}

/// List upload tasks.
#[utoipa::path(get, path = "/api/v1/miniprogram/upload-tasks", tag = "miniprogram", params(UploadTaskListParams),
    security(("bearer" = ["miniprogram:read"])), responses((status = 200, body = inline(atrium_kernel::Page<UploadTaskView>))))]
pub async fn upload_tasks(state: web::Data<AppState>, auth: Authorized<MiniprogramRead>, q: Query<UploadTaskListParams>) -> ApiResult {
    ok(state.releases.list_upload_tasks(&auth.actor, q.into_inner()).await?)
}

/// One upload task.
#[utoipa::path(get, path = "/api/v1/miniprogram/upload-tasks/{id}", tag = "miniprogram", params(IdPath),
    security(("bearer" = ["miniprogram:read"])), responses((status = 200, body = UploadTaskView), (status = 404)))]
pub async fn upload_task(state: web::Data<AppState>, auth: Authorized<MiniprogramRead>, id: web::Path<i64>) -> ApiResult {
    ok(state.releases.upload_task(&auth.actor, id.into_inner()).await?)
}

/// Submit the tenant's latest uploaded code for audit. One audit of a tenant runs at a time
/// (409, errcode 85009).
#[utoipa::path(post, path = "/api/v1/miniprogram/audit/submit", tag = "miniprogram", request_body = AuditSubmit,
    security(("bearer" = ["miniprogram:audit"])),
    responses((status = 200, body = AuditTaskView), (status = 409, description = "Another audit is running, or the upload is not the latest uploaded one"),
        (status = 429, description = "The platform's audit quota is used up"), (status = 502)))]
pub async fn submit_audit(state: web::Data<AppState>, auth: Authorized<MiniprogramAudit>, body: JsonBody<AuditSubmit>) -> ApiResult {
    ok(state.releases.submit_audit(&auth.actor, body.value).await?)
}

/// `?tenant_id=`, optional: whose mini-program's token asks the platform.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct QuotaParams {
    /// Whose mini-program asks (a tenant caller's own); without it, any authorised
    /// mini-program in the caller's scope. The quota is the platform's either way.
    #[param(value_type = Option<i64>, minimum = 1)]
    pub tenant_id: Option<Id>,
}

/// The third-party platform's audit quota, asked now (`queryquota`): shared by every
/// mini-program, one unit spent by each submitted audit, rejected or withdrawn ones too.
#[utoipa::path(get, path = "/api/v1/miniprogram/audit/quota", tag = "miniprogram", params(QuotaParams),
    security(("bearer" = ["miniprogram:read"])),
    responses((status = 200, body = AuditQuota), (status = 404, description = "The tenant is not yours"),
        (status = 409, description = "No mini-program in the caller's scope is authorised"),
        (status = 502)))]
pub async fn audit_quota(state: web::Data<AppState>, auth: Authorized<MiniprogramRead>, q: Query<QuotaParams>) -> ApiResult {
    ok(state.release_preflight.audit_quota(&auth.actor, q.into_inner().tenant_id).await?)
}

/// Ask the reviewers to hurry a running audit (`speedupaudit`; spends one of the platform's
/// speed-ups).
#[utoipa::path(post, path = "/api/v1/miniprogram/audit/speedup", tag = "miniprogram", request_body = AuditTaskRef,
    security(("bearer" = ["miniprogram:publish"])),
    responses((status = 200, body = AuditTaskView), (status = 404), (status = 409, description = "The audit is decided"),
        (status = 429, description = "No speed-up is left"), (status = 502)))]
pub async fn speedup_audit(state: web::Data<AppState>, auth: Authorized<MiniprogramPublish>, body: JsonBody<AuditTaskRef>) -> ApiResult {
    ok(state.releases.speedup_audit(&auth.actor, body.value).await?)
}

/// Withdraw a running audit (`undocodeaudit`): the task becomes `withdrawn`. The platform
/// does not give the audit's quota unit back.
#[utoipa::path(post, path = "/api/v1/miniprogram/audit/undo", tag = "miniprogram", request_body = AuditTaskRef,
    security(("bearer" = ["miniprogram:publish"])),
    responses((status = 200, body = AuditTaskView), (status = 404), (status = 409, description = "The audit is decided"),
        (status = 429, description = "The platform's quota of withdrawals is used up"), (status = 502)))]
pub async fn undo_audit(state: web::Data<AppState>, auth: Authorized<MiniprogramPublish>, body: JsonBody<AuditTaskRef>) -> ApiResult {
    ok(state.releases.undo_audit(&auth.actor, body.value).await?)
}

/// The mini-program's server and web-view domains, as the platform has them.
#[utoipa::path(get, path = "/api/v1/miniprogram/domains", tag = "miniprogram", params(TenantParams),
    security(("bearer" = ["miniprogram:read"])),
    responses((status = 200, body = DomainsView), (status = 404), (status = 409, description = "The mini-program is not authorised"), (status = 502)))]
pub async fn domains(state: web::Data<AppState>, auth: Authorized<MiniprogramRead>, q: Query<TenantParams>) -> ApiResult {
    ok(state.release_preflight.domains(&auth.actor, q.into_inner().tenant_id).await?)
}

/// Replace the mini-program's server and web-view domains (`modify_domain`,
/// `setwebviewdomain`), which a third-party release does not carry over. Every entry is an
/// `https://` host name (`wss://` too for sockets): no IP address, port or path; 400 names
/// each bad one.
#[utoipa::path(put, path = "/api/v1/miniprogram/domains", tag = "miniprogram", request_body = DomainsInput,
    security(("bearer" = ["miniprogram:publish"])),
    responses((status = 200, body = DomainsView), (status = 404), (status = 409, description = "The mini-program is not authorised"), (status = 502)))]
pub async fn put_domains(state: web::Data<AppState>, auth: Authorized<MiniprogramPublish>, body: JsonBody<DomainsInput>) -> ApiResult {
    ok(state.release_preflight.set_domains(&auth.actor, body.value).await?)
}

/// The mini-program's privacy settings, as the platform has them.
#[utoipa::path(get, path = "/api/v1/miniprogram/privacy", tag = "miniprogram", params(TenantParams),
    security(("bearer" = ["miniprogram:read"])),
    responses((status = 200, body = PrivacyView), (status = 404), (status = 409, description = "The mini-program is not authorised"), (status = 502)))]
pub async fn privacy(state: web::Data<AppState>, auth: Authorized<MiniprogramRead>, q: Query<TenantParams>) -> ApiResult {
    ok(state.release_preflight.privacy(&auth.actor, q.into_inner().tenant_id).await?)
}

/// Replace the mini-program's privacy settings (`setprivacysetting`, version 2), which the
/// platform requires before an audit.
#[utoipa::path(put, path = "/api/v1/miniprogram/privacy", tag = "miniprogram", request_body = PrivacyInput,
    security(("bearer" = ["miniprogram:publish"])),
    responses((status = 200, body = PrivacyView), (status = 404), (status = 409, description = "The mini-program is not authorised"), (status = 502)))]
pub async fn put_privacy(state: web::Data<AppState>, auth: Authorized<MiniprogramPublish>, body: JsonBody<PrivacyInput>) -> ApiResult {
    ok(state.release_preflight.set_privacy(&auth.actor, body.value).await?)
}

/// Whether the mini-program is ready for a release: authorised, code management granted,
/// server domains set, privacy settings set, a category set, audit quota left. A failing check
/// is 200 with `ok: false`, the check saying why.
#[utoipa::path(get, path = "/api/v1/miniprogram/preflight", tag = "miniprogram", params(TenantParams),
    security(("bearer" = ["miniprogram:read"])),
    responses((status = 200, body = PreflightView), (status = 404)))]
pub async fn preflight(state: web::Data<AppState>, auth: Authorized<MiniprogramRead>, q: Query<TenantParams>) -> ApiResult {
    ok(state.release_preflight.preflight(&auth.actor, q.into_inner().tenant_id).await?)
}

/// Ask the platform for an audit's state (the tenant's latest without `audit_task_id`), save
/// it and return the task.
#[utoipa::path(get, path = "/api/v1/miniprogram/audit/status", tag = "miniprogram", params(AuditStatusParams),
    security(("bearer" = ["miniprogram:read"])),
    responses((status = 200, body = AuditTaskView), (status = 404), (status = 409, description = "The tenant's authorisation was revoked"), (status = 502)))]
pub async fn audit_status(state: web::Data<AppState>, auth: Authorized<MiniprogramRead>, q: Query<AuditStatusParams>) -> ApiResult {
    ok(state.releases.audit_status(&auth.actor, q.into_inner()).await?)
}

/// List audit tasks.
#[utoipa::path(get, path = "/api/v1/miniprogram/audit-tasks", tag = "miniprogram", params(AuditTaskListParams),
    security(("bearer" = ["miniprogram:read"])), responses((status = 200, body = inline(atrium_kernel::Page<AuditTaskView>))))]
pub async fn audit_tasks(state: web::Data<AppState>, auth: Authorized<MiniprogramRead>, q: Query<AuditTaskListParams>) -> ApiResult {
    ok(state.releases.list_audit_tasks(&auth.actor, q.into_inner()).await?)
}

/// Release a passed audit: `full`, or `gray` to a percentage (1–100) that only rises; `full`
/// after a gray release completes it. Records a release task.
#[utoipa::path(post, path = "/api/v1/miniprogram/publish", tag = "miniprogram", request_body = PublishRequest,
    security(("bearer" = ["miniprogram:publish"])),
    responses((status = 200, body = ReleaseTaskView), (status = 409, description = "The audit has not passed, or the percentage does not rise"), (status = 502)))]
pub async fn publish(state: web::Data<AppState>, auth: Authorized<MiniprogramPublish>, body: JsonBody<PublishRequest>) -> ApiResult {
    ok(state.releases.publish(&auth.actor, body.value).await?)
}

/// Roll the live version back: to `app_version` of the history, or to the previous version.
#[utoipa::path(post, path = "/api/v1/miniprogram/rollback", tag = "miniprogram", request_body = RollbackRequest,
    security(("bearer" = ["miniprogram:publish"])),
    responses((status = 200, body = ReleaseTaskView), (status = 409, description = "A gray release is running (87011), or there is nothing to roll back to"), (status = 502)))]
pub async fn rollback(state: web::Data<AppState>, auth: Authorized<MiniprogramPublish>, body: JsonBody<RollbackRequest>) -> ApiResult {
    ok(state.releases.rollback(&auth.actor, body.value).await?)
}

/// The live and trial versions, the gray plan and the versions a rollback can go to, as the
/// platform has them.
#[utoipa::path(get, path = "/api/v1/miniprogram/versions", tag = "miniprogram", params(TenantParams),
    security(("bearer" = ["miniprogram:read"])),
    responses((status = 200, body = VersionsView), (status = 404), (status = 409, description = "The tenant has not authorised its mini-program"), (status = 502)))]
pub async fn versions(state: web::Data<AppState>, auth: Authorized<MiniprogramRead>, q: Query<TenantParams>) -> ApiResult {
    ok(state.releases.versions(&auth.actor, q.into_inner().tenant_id).await?)
}

/// A JPEG image, not an envelope.
#[derive(ToSchema)]
#[schema(value_type = String, format = Binary)]
pub struct Jpeg(#[allow(dead_code)] Vec<u8>);

/// The trial version's QR code (`image/jpeg`), opening `path` when given.
#[utoipa::path(get, path = "/api/v1/miniprogram/experience-qr", tag = "miniprogram", params(ExperienceQrParams),
    security(("bearer" = ["miniprogram:read"])),
    responses((status = 200, description = "The QR code", content_type = "image/jpeg", body = Jpeg), (status = 404),
        (status = 409, description = "The tenant has not authorised its mini-program"), (status = 502)))]
pub async fn experience_qr(
    state: web::Data<AppState>,
    auth: Authorized<MiniprogramRead>,
    q: Query<ExperienceQrParams>,
) -> Result<HttpResponse, ApiError> {
    let image = state.releases.experience_qr(&auth.actor, q.into_inner()).await?;
    Ok(HttpResponse::Ok().content_type("image/jpeg").body(image))
}

/// What the platform posts to an event URL: `<xml>` with the addressee and the encrypted
/// message (`msg_signature` covers `Encrypt`).
#[derive(ToSchema)]
#[schema(xml(name = "xml"))]
#[allow(dead_code)]
pub struct EncryptedPush {
    /// The component's appid (authorisation events).
    #[schema(rename = "AppId", required = false)]
    app_id: String,
    /// The mini-program's original id (its messages).
    #[schema(rename = "ToUserName", required = false)]
    to_user_name: String,
    /// Base64 of the AES-256-CBC encrypted message.
    #[schema(rename = "Encrypt")]
    encrypt: String,
}

/// The query of a push to an event URL. Every push carries these; unknown ones are ignored
/// (the platform may add some).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EventParams {
    /// Unix seconds.
    #[param(required = true)]
    pub timestamp: Option<String>,
    #[param(required = true)]
    pub nonce: Option<String>,
    /// SHA-1 over the sorted token, timestamp, nonce and encrypted message.
    #[param(required = true)]
    pub msg_signature: Option<String>,
    /// `aes`.
    pub encrypt_type: Option<String>,
    pub signature: Option<String>,
}

/// The platform's authorisation events (`component_verify_ticket` every 10 minutes,
/// `authorized`, `unauthorized`, `updateauthorized`): encrypted XML, verified by
/// `msg_signature`. Answers the literal `success`; an event seen before changes nothing.
#[utoipa::path(post, path = "/api/v1/miniprogram/component/events", tag = "miniprogram", params(EventParams),
    request_body(content = EncryptedPush, content_type = "text/xml"),
    responses((status = 200, description = "Accepted", content_type = "text/plain", body = String, example = "success"),
        (status = 401, description = "The msg_signature does not verify, or the message is not addressed to this platform"),
        (status = 404, description = "No third-party platform is configured"),
        (status = 413, description = "Larger than 64 KiB")))]
pub async fn component_events(state: web::Data<AppState>, q: Query<EventParams>, body: web::Bytes) -> Result<HttpResponse, ApiError> {
    receive(&state, EventUrl::Component, None, q.into_inner(), body).await
}

/// Messages and events of one authorised mini-program (`appid`): the audit results
/// `weapp_audit_success`, `weapp_audit_fail` (reason, screenshots) and `weapp_audit_delay`.
/// Answers the literal `success`; an event seen before changes nothing.
#[utoipa::path(post, path = "/api/v1/miniprogram/component/messages/{appid}", tag = "miniprogram",
    params(("appid" = String, Path, description = "The mini-program's appid"), EventParams),
    request_body(content = EncryptedPush, content_type = "text/xml"),
    responses((status = 200, description = "Accepted", content_type = "text/plain", body = String, example = "success"),
        (status = 401, description = "The msg_signature does not verify, or the mini-program is not one authorised here"),
        (status = 404, description = "No third-party platform is configured"),
        (status = 413, description = "Larger than 64 KiB")))]
pub async fn component_messages(
    state: web::Data<AppState>,
    appid: web::Path<String>,
    q: Query<EventParams>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    receive(&state, EventUrl::Message, Some(appid.as_str()), q.into_inner(), body).await
}

async fn receive(state: &AppState, url: EventUrl, appid: Option<&str>, q: EventParams, body: web::Bytes) -> Result<HttpResponse, ApiError> {
    if body.len() > MAX_EVENT_BYTES {
        return Err(ApiError(Error::TooLarge(format!("an event is at most {MAX_EVENT_BYTES} bytes"))));
    }
    let request = EventRequest {
        timestamp: q.timestamp.unwrap_or_default(),
        nonce: q.nonce.unwrap_or_default(),
        msg_signature: q.msg_signature.unwrap_or_default(),
        body: body.to_vec(),
    };
    match state.releases.receive_event(url, appid, request).await {
        Ok(_) => Ok(HttpResponse::Ok().content_type("text/plain; charset=utf-8").body("success")),
        Err(e) => Err(ApiError(match e {
            EventError::BadSignature | EventError::ForeignAppid => Error::Unauthenticated(e.to_string()),
            EventError::Malformed(_) => Error::BadRequest(e.to_string()),
            EventError::NotConfigured => Error::NotFound("third-party platform"),
            EventError::Unavailable => Error::Unavailable { message: e.to_string(), retry_after_secs: 5 },
        })),
    }
}

fn too_large(max: u64) -> ApiError {
    ApiError(Error::TooLarge(format!("package: larger than {} MiB", max / (1024 * 1024))))
}

/// A package arriving on disk, removed when dropped (after the service moved it into keeping,
/// nothing is left to remove).
struct IncomingFile {
    path: PathBuf,
}

impl Drop for IncomingFile {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_file(&self.path)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            log::warn!("cannot remove the incoming package {}: {e}", self.path.display());
        }
    }
}

struct PackageForm {
    tenant_id: Option<Id>,
    package: IncomingFile,
    version: Option<Version>,
    description: Option<VersionDescription>,
}

fn malformed(e: impl std::fmt::Display) -> ApiError {
    ApiError::bad_request(format!("malformed multipart body: {e}"))
}

/// The parts of a package upload: `package` streamed to a new file in `incoming` (never held
/// in memory; more than `max` bytes is a 413), the rest small text. An unknown part, or one
/// sent twice, is a 400 naming it.
async fn read_package_form(mut form: Multipart, incoming: &Path, max: u64) -> Result<PackageForm, ApiError> {
    let (mut tenant_id, mut package, mut version, mut description) = (None, None, None, None);
    while let Some(field) = form.next().await {
        let mut field = field.map_err(malformed)?;
        let name = field.name().unwrap_or_default().to_owned();
        let twice = || ApiError(Error::invalid(name.clone(), "is sent twice"));
        if name == "package" {
            if package.is_some() {
                return Err(twice());
            }
            let file = IncomingFile { path: incoming_path(incoming).await? };
            let mut out = tokio::fs::OpenOptions::new().write(true).create_new(true).open(&file.path).await.map_err(io_error)?;
            let mut written: u64 = 0;
            while let Some(chunk) = field.next().await {
                let chunk = chunk.map_err(malformed)?;
                written += chunk.len() as u64;
                if written > max {
                    return Err(too_large(max));
                }
                out.write_all(&chunk).await.map_err(io_error)?;
            }
            out.flush().await.map_err(io_error)?;
            package = Some(file);
            continue;
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = field.next().await {
            let chunk = chunk.map_err(malformed)?;
            if bytes.len() + chunk.len() > MAX_TEXT_PART_BYTES {
                return Err(ApiError(Error::invalid(name.clone(), format!("is longer than {MAX_TEXT_PART_BYTES} bytes"))));
            }
            bytes.extend_from_slice(&chunk);
        }
        let text = String::from_utf8(bytes).map_err(|_| ApiError(Error::invalid(name.clone(), "must be UTF-8 text")))?;
        match name.as_str() {
            "tenant_id" => {
                // An id that names no tenant is the service's 404, as in a JSON body.
                let id = text.trim().parse::<Id>().map_err(|_| ApiError(Error::invalid("tenant_id", "must be an integer")))?;
                if tenant_id.replace(id).is_some() {
                    return Err(twice());
                }
            }
            "version" => {
                let v = Version::parse(&text).map_err(|m| ApiError(Error::invalid("version", m)))?;
                if version.replace(v).is_some() {
                    return Err(twice());
                }
            }
            "description" => {
                let d = VersionDescription::parse(&text).map_err(|m| ApiError(Error::invalid("description", m)))?;
                if description.replace(d).is_some() {
                    return Err(twice());
                }
            }
            "" => return Err(ApiError::bad_request("a multipart part has no name")),
            other => return Err(ApiError(Error::invalid(other.to_owned(), "is not a part of this form"))),
        }
    }
    let package = package.ok_or_else(|| ApiError(Error::invalid("package", "is required")))?;
    Ok(PackageForm { tenant_id, package, version, description })
}

/// A fresh file name in `incoming` (created if missing).
async fn incoming_path(incoming: &Path) -> Result<PathBuf, ApiError> {
    tokio::fs::create_dir_all(incoming).await.map_err(io_error)?;
    Ok(incoming.join(format!("upload-{}.zip", atrium_kernel::secret::random_token(16))))
}

/// The disk refusing a package (full, say) is this instance's trouble for now, not the
/// caller's: 503, logged.
fn io_error(e: std::io::Error) -> ApiError {
    log::error!("cannot write an incoming package: {e}");
    ApiError(Error::Unavailable { message: "the package cannot be stored now; try again later".into(), retry_after_secs: 30 })
}
