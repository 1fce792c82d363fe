//! [`PipelineService`]: uploads and their jobs, audits and their polls, releases, rollbacks,
//! versions, the experience QR code, and the audit results the platform pushes.
use super::*;
use crate::lifecycle::{ReleaseKind, ReleaseStatus};
use crate::package::{PackageError, PackageInfo};
use crate::ports::UploaderError;
use crate::service::{AUDIT_POLL_JOB, UPLOAD_JOB, release_platform_error};
use atrium_kernel::{JobHandler, JobOutcome};
use std::path::Path;

// --- errcodes -----------------------------------------------------------------------------

#[test]
fn platform_errcodes_map_to_the_contracts_statuses_never_a_500() {
    assert!(
        matches!(release_platform_error(refused(85009)), Error::Blocked(_, ref f) if f[0].field == "platform" && f[0].message.contains("85009"))
    );
    for conflict in [85082, 87011, 85019, 85020, 85086] {
        assert!(matches!(release_platform_error(refused(conflict)), Error::Blocked(..)), "{conflict}");
    }
    for quota in [85085, 87013] {
        assert!(matches!(release_platform_error(refused(quota)), Error::RateLimited { .. }), "{quota}");
    }
    for grant in [61003, 61007] {
        assert!(matches!(release_platform_error(refused(grant)), Error::Forbidden(_, ref m) if m.contains(&grant.to_string())), "{grant}");
    }
    assert!(
        matches!(release_platform_error(refused(85013)), Error::Invalid(ref f) if f[0].field == "ext_json" && f[0].message.contains("85013"))
    );
    assert!(matches!(release_platform_error(refused(85081)), Error::Invalid(ref f) if f[0].field == "gray_percentage"));
    assert!(matches!(
        release_platform_error(refused(40164)),
        Error::PlatformRefused { errcode: 40164, ref errmsg } if errmsg.contains("refused rid")
    ));
    assert!(matches!(release_platform_error(PlatformError::Unavailable("timed out".into())), Error::Upstream(_)));
    assert!(matches!(release_platform_error(PlatformError::NoTicket), Error::Upstream(_)));
}

// --- uploads ------------------------------------------------------------------------------

#[tokio::test]
async fn a_template_upload_is_recorded_queued_and_its_job_queued() {
    let s = state();
    let view = pipeline(&s, doubles()).upload_template(&tenant_actor(), template_upload("1.0.0")).await.unwrap();

    assert_eq!((view.status, view.kind, view.template_id), (UploadStatus::Queued, UploadKind::Template, Some(1)));
    let st = lock(&s);
    assert_eq!(st.uploads.len(), 1);
    assert_eq!(st.jobs.len(), 1);
    assert_eq!(st.jobs[0].kind, UPLOAD_JOB);
    assert_eq!(st.jobs[0].payload, serde_json::json!({"upload_task_id": view.id}));
    assert_eq!(st.jobs[0].run_at, now());
}

#[tokio::test]
async fn a_version_used_before_is_a_409_naming_version_and_records_nothing() {
    let s = state();
    lock(&s).uploads.push(upload(100, "1.0.0", UploadStatus::Failed, template_source()));
    let svc = pipeline(&s, doubles());

    let err = svc.upload_template(&tenant_actor(), template_upload("1.0.0")).await.unwrap_err();
    assert!(matches!(err, Error::Blocked(..)) && field_of(&err) == Some("version"), "{err:?}");
    let err = svc.upload_package(&tenant_actor(), package_upload("1.0.0")).await.unwrap_err();
    assert_eq!(field_of(&err), Some("version"));

    let st = lock(&s);
    assert_eq!((st.uploads.len(), st.jobs.len(), st.packages.len()), (1, 0, 0));
}

#[tokio::test]
async fn without_an_authorisation_nothing_is_uploaded() {
    for auth in [None, Some(authorization(AuthorizationStatus::Revoked))] {
        let s = state();
        lock(&s).authorization = auth.clone();
        let err = pipeline(&s, doubles()).upload_template(&tenant_actor(), template_upload("1.0.0")).await.unwrap_err();
        assert!(matches!(err, Error::Blocked(..)) && field_of(&err) == Some("authorization"), "{auth:?}: {err:?}");
        assert!(lock(&s).uploads.is_empty());
    }
}

#[tokio::test]
async fn a_bad_package_is_refused_with_its_reason_and_nothing_is_kept() {
    let cases = [
        (PackageError::NotZip, "package"),
        (PackageError::Missing("app.json"), "package"),
        (PackageError::UnsafeEntry("../evil.js".into()), "package"),
        (PackageError::Bomb { size: 1000, budget: 1_048_576 }, "package"),
    ];
    for (refusal, field) in cases {
        let s = state();
        let mut d = doubles();
        let r = refusal.clone();
        d.inspector.expect_inspect().times(1).returning(move |_, _| Err(r.clone()));
        let err = pipeline(&s, d).upload_package(&tenant_actor(), package_upload("1.0.0")).await.unwrap_err();
        assert!(matches!(err, Error::Invalid(_)) && field_of(&err) == Some(field), "{refusal:?}: {err:?}");
        assert!(err.to_string().contains(&refusal.to_string()), "{err}");
        let st = lock(&s);
        assert_eq!((st.uploads.len(), st.packages.len(), st.jobs.len()), (0, 0, 0), "{refusal:?}");
    }
}

#[tokio::test]
async fn a_package_over_the_limit_is_a_413() {
    let s = state();
    let mut d = doubles();
    d.inspector.expect_inspect().returning(|_, l| Err(PackageError::TooLarge { size: l.max_size + 1, max: l.max_size }));
    let err = pipeline(&s, d).upload_package(&tenant_actor(), package_upload("1.0.0")).await.unwrap_err();
    assert!(matches!(err, Error::TooLarge(_)), "{err:?}");
    assert!(lock(&s).packages.is_empty());
}

fn checked() -> PackageInfo {
    PackageInfo { sha256: "ab".repeat(32), size: 2048, unpacked_size: 8192, entries: 3, project_root: String::new() }
}

#[tokio::test]
async fn a_good_package_is_kept_by_its_hash_and_queued() {
    let s = state();
    let mut d = doubles();
    d.inspector
        .expect_inspect()
        .withf(|file, limits| file == &PathBuf::from("/tmp/upload-1.zip") && limits.max_size == 20 * 1024 * 1024)
        .returning(|_, _| Ok(checked()));
    let view = pipeline(&s, d).upload_package(&tenant_actor(), package_upload("1.0.0")).await.unwrap();
    assert_eq!(view.kind, UploadKind::Package);
    assert_eq!(view.package_sha256.as_deref(), Some("ab".repeat(32).as_str()));
    let st = lock(&s);
    assert_eq!((st.packages.len(), st.uploads.len(), st.jobs.len()), (1, 1, 1));
}

#[tokio::test]
async fn a_template_upload_job_commits_the_ext_json_as_a_string() {
    let s = state();
    lock(&s).uploads.push(upload(100, "1.0.0", UploadStatus::Queued, template_source()));
    let mut d = doubles();
    library(&mut d.platform, vec![]);
    d.platform
        .expect_commit()
        .withf(|access, c| {
            access.authorizer_appid == APPID
                && access.refresh_token.expose() == "refresh-1"
                && c.template_id == 1
                && c.ext_json == r#"{"ext":{"shop":"Ann"}}"#
                && c.user_version == "1.0.0"
        })
        .times(1)
        .returning(|_, _| Ok(()));

    let view = pipeline(&s, d).run_upload(100, 1).await.unwrap();

    assert_eq!(view.status, UploadStatus::Uploaded);
    let stored = lock(&s).uploads[0].clone();
    assert_eq!((stored.status, stored.started_at, stored.finished_at), (UploadStatus::Uploaded, Some(now()), Some(now())));
}

#[tokio::test]
async fn a_finished_upload_is_not_run_again() {
    let s = state();
    lock(&s).uploads.push(upload(100, "1.0.0", UploadStatus::Uploaded, template_source()));
    let view = pipeline(&s, doubles()).run_upload(100, 1).await.unwrap();
    assert_eq!(view.status, UploadStatus::Uploaded);
}

fn kept_package() -> StoredPackage {
    StoredPackage {
        sha256: "ab".repeat(32),
        size: 2048,
        project_root: String::new(),
        path: PathBuf::from("/kept/ab.zip"),
        created_at: now(),
    }
}

#[tokio::test]
async fn a_package_upload_job_uploads_adds_the_draft_to_the_library_and_commits_it() {
    let s = state();
    lock(&s).packages.push(kept_package());
    lock(&s).uploads.push(upload(100, "1.0.0", UploadStatus::Queued, package_source()));
    let mut d = doubles();
    d.uploader
        .expect_upload()
        .withf(|job| job.package.path == Path::new("/kept/ab.zip") && job.version == "1.0.0" && job.description == "atrium upload task 100")
        .times(1)
        .returning(|_| Ok(UploadReport { package_sizes: vec![("__FULL__".into(), 1024)] }));
    d.platform.expect_template_drafts().returning(|_| {
        let draft =
            |id, desc: &str, time| TemplateDraft { draft_id: id, user_version: "1.0.0".into(), user_desc: desc.into(), create_time: time };
        // Another tenant's draft of the same version, and an older one of this task.
        Ok(vec![draft(7, "atrium upload task 99", 50), draft(8, "atrium upload task 100", 40), draft(9, "atrium upload task 100", 60)])
    });
    d.platform.expect_add_to_template().withf(|_, draft| *draft == 9).times(1).returning(|_, _| Ok(()));
    d.platform.expect_templates().returning(|_| {
        Ok(vec![
            Template { template_id: 30, user_version: "1.0.0".into(), user_desc: "atrium upload task 99".into(), create_time: 70 },
            Template { template_id: 31, user_version: "1.0.0".into(), user_desc: "atrium upload task 100".into(), create_time: 71 },
        ])
    });
    d.platform
        .expect_commit()
        .withf(|_, c| c.template_id == 31 && c.ext_json == format!(r#"{{"extAppid":"{APPID}","extEnable":true}}"#))
        .times(1)
        .returning(|_, _| Ok(()));

    let view = pipeline(&s, d).run_upload(100, 1).await.unwrap();

    assert_eq!((view.status, view.template_id), (UploadStatus::Uploaded, Some(31)));
}

#[tokio::test]
async fn an_unavailable_uploader_leaves_the_task_running_for_a_retry_until_the_last_attempt() {
    let s = state();
    lock(&s).packages.push(kept_package());
    lock(&s).uploads.push(upload(100, "1.0.0", UploadStatus::Queued, package_source()));
    let mut d = doubles();
    d.uploader.expect_upload().times(3).returning(|_| Err(UploaderError::TimedOut(600)));
    let svc = pipeline(&s, d);

    for attempt in 1..3 {
        let err = svc.run_upload(100, attempt).await.unwrap_err();
        assert!(matches!(err, Error::Upstream(_)), "{err:?}");
        assert_eq!(lock(&s).uploads[0].status, UploadStatus::Running);
    }
    let view = svc.run_upload(100, 3).await.unwrap();

    assert_eq!(view.status, UploadStatus::Failed);
    assert!(view.error.as_deref().unwrap_or_default().contains("3 attempts"), "{:?}", view.error);
}

#[tokio::test]
async fn a_refused_commit_fails_the_task_with_the_errcode() {
    let s = state();
    lock(&s).uploads.push(upload(100, "1.0.0", UploadStatus::Queued, template_source()));
    let mut d = doubles();
    library(&mut d.platform, vec![]);
    d.platform.expect_commit().times(1).returning(|_, _| Err(refused(85013)));
    let view = pipeline(&s, d).run_upload(100, 1).await.unwrap();
    assert_eq!((view.status, view.errcode), (UploadStatus::Failed, Some(85013)));
    assert!(view.error.as_deref().unwrap_or_default().contains("85013"), "{:?}", view.error);
}

#[tokio::test]
async fn a_rejected_upload_fails_the_task_with_the_uploaders_code() {
    let s = state();
    lock(&s).packages.push(kept_package());
    lock(&s).uploads.push(upload(100, "1.0.0", UploadStatus::Queued, package_source()));
    let mut d = doubles();
    d.uploader.expect_upload().returning(|_| Err(UploaderError::Rejected { code: Some(-10008), message: "invalid ip".into() }));
    let view = pipeline(&s, d).run_upload(100, 1).await.unwrap();
    assert_eq!((view.status, view.errcode), (UploadStatus::Failed, Some(-10008)));
}

#[tokio::test]
async fn a_revoked_authorisation_found_by_a_commit_is_recorded() {
    let s = state();
    lock(&s).uploads.push(upload(100, "1.0.0", UploadStatus::Queued, template_source()));
    let mut d = doubles();
    library(&mut d.platform, vec![]);
    d.platform.expect_commit().times(1).returning(|_, _| Err(refused(61003)));
    let view = pipeline(&s, d).run_upload(100, 1).await.unwrap();
    assert_eq!((view.status, view.errcode), (UploadStatus::Failed, Some(61003)));
    assert_eq!(lock(&s).authorization.as_ref().map(|a| a.status), Some(AuthorizationStatus::Revoked));
}

/// Upload task `id` of the other tenant, made from a package: its template is that tenant's.
fn other_tenants_upload(id: Id) -> UploadTask {
    UploadTask { tenant_id: OTHER_TENANT, template_id: Some(31), ..upload(id, "7.0.0", UploadStatus::Uploaded, package_source()) }
}

#[tokio::test]
async fn a_template_made_from_another_tenants_package_is_refused_exactly_like_one_not_in_the_library() {
    let s = state();
    {
        let mut st = lock(&s);
        st.uploads.push(other_tenants_upload(90));
        // Template 31, another tenant's; 77, in no library; 32, whose marker names no task of
        // ours; 33, whose marker names no task at all.
        for (id, template) in [(100, 31), (101, 77), (102, 32), (103, 33)] {
            st.uploads.push(upload(id, &format!("1.0.{id}"), UploadStatus::Queued, template_source_of(template)));
        }
    }
    let mut d = doubles();
    library(
        &mut d.platform,
        vec![
            library_template(31, "atrium upload task 90"),
            library_template(32, "atrium upload task 999"),
            library_template(33, "atrium upload task ninety"),
        ],
    );
    // Nothing reaches the tenant's mini-program.
    d.platform.expect_commit().never();
    let svc = pipeline(&s, d);

    let mut answers = Vec::new();
    for id in [100, 101, 102, 103] {
        let view = svc.run_upload(id, 1).await.unwrap();
        assert_eq!((view.status, view.errcode), (UploadStatus::Failed, Some(85014)), "task {id}: {view:?}");
        answers.push((view.status, view.errcode, view.error.clone()));
    }
    assert!(answers.iter().all(|a| *a == answers[0]), "the same answer whoever's the template is, or whether it is: {answers:?}");
    assert_eq!(answers[0].2.as_deref(), Some("the template is not in the template library (errcode 85014)"));
    let st = lock(&s);
    assert!(st.uploads.iter().filter(|u| u.id >= 100).all(|u| u.status == UploadStatus::Failed && u.finished_at == Some(now())));
    assert_eq!(st.uploads[0].status, UploadStatus::Uploaded, "the other tenant's task is untouched");
}

#[tokio::test]
async fn a_template_the_platform_added_or_made_from_the_tenants_own_package_is_committed() {
    let s = state();
    {
        let mut st = lock(&s);
        st.uploads.push(upload(95, "0.9.0", UploadStatus::Uploaded, package_source()));
        st.uploads.push(upload(100, "1.0.0", UploadStatus::Queued, template_source_of(2)));
        st.uploads.push(upload(101, "1.0.1", UploadStatus::Queued, template_source_of(35)));
    }
    let mut d = doubles();
    library(&mut d.platform, vec![library_template(35, "atrium upload task 95")]);
    let mut order = mockall::Sequence::new();
    for (template, version) in [(2, "1.0.0"), (35, "1.0.1")] {
        d.platform
            .expect_commit()
            .withf(move |a, c| a.authorizer_appid == APPID && c.template_id == template && c.user_version == version)
            .times(1)
            .in_sequence(&mut order)
            .returning(|_, _| Ok(()));
    }
    let svc = pipeline(&s, d);

    assert_eq!(svc.run_upload(100, 1).await.unwrap().template_id, Some(2));
    let own = svc.run_upload(101, 1).await.unwrap();
    assert_eq!((own.status, own.template_id, own.errcode), (UploadStatus::Uploaded, Some(35), None));
}

#[tokio::test]
async fn a_library_the_platform_cannot_list_now_leaves_the_template_upload_for_a_retry_uncommitted() {
    let s = state();
    lock(&s).uploads.push(upload(100, "1.0.0", UploadStatus::Queued, template_source()));
    let mut d = doubles();
    d.platform.expect_templates().times(1).returning(|_| Err(PlatformError::Unavailable("time-out".into())));
    d.platform.expect_commit().never();

    let err = pipeline(&s, d).run_upload(100, 1).await.unwrap_err();

    assert!(matches!(err, Error::Upstream(_)), "{err:?}");
    assert_eq!(lock(&s).uploads[0].status, UploadStatus::Running);
}

#[tokio::test]
async fn upload_tasks_are_listed_within_the_callers_scope() {
    let s = state();
    lock(&s).uploads.push(upload(100, "1.0.0", UploadStatus::Queued, template_source()));
    let svc = pipeline(&s, doubles());
    assert_eq!(svc.list_upload_tasks(&tenant_actor(), UploadTaskListParams::default()).await.unwrap().total, 1);
    assert_eq!(svc.list_upload_tasks(&other_tenant_actor(), UploadTaskListParams::default()).await.unwrap().total, 0);
    let bad = UploadTaskListParams { sort: Some("version".into()), ..Default::default() };
    assert_eq!(field_of(&svc.list_upload_tasks(&tenant_actor(), bad).await.unwrap_err()), Some("sort"));
}

// --- audits -------------------------------------------------------------------------------

fn submit(upload_task_id: Id) -> AuditSubmit {
    AuditSubmit { upload_task_id, version_desc: Some(description("Shop page")), item_list: None, privacy_api_not_use: Some(true) }
}

#[tokio::test]
async fn an_uploaded_version_is_submitted_and_its_poll_queued() {
    let s = state();
    lock(&s).uploads.push(upload(100, "1.0.0", UploadStatus::Uploaded, template_source()));
    let mut d = doubles();
    d.platform
        .expect_submit_audit()
        .withf(|access, sub| {
            access.authorizer_appid == APPID && sub.version_desc.as_deref() == Some("Shop page") && sub.privacy_api_not_use == Some(true)
        })
        .times(1)
        .returning(|_, _| Ok(1234));

    let view = pipeline(&s, d).submit_audit(&tenant_actor(), submit(100)).await.unwrap();

    assert_eq!((view.status, view.auditid, view.upload_task_id), (AuditStatus::Auditing, 1234, 100));
    let st = lock(&s);
    assert_eq!(st.jobs.len(), 1);
    assert_eq!(st.jobs[0].kind, AUDIT_POLL_JOB);
    assert_eq!(st.jobs[0].run_at, now() + Duration::minutes(30));
}

#[tokio::test]
async fn only_the_latest_uploaded_version_can_be_submitted() {
    let s = state();
    {
        let mut st = lock(&s);
        st.uploads.push(upload(100, "1.0.0", UploadStatus::Uploaded, template_source()));
        st.uploads.push(upload(101, "1.0.1", UploadStatus::Uploaded, template_source()));
        st.uploads.push(upload(102, "1.0.2", UploadStatus::Running, template_source()));
    }
    let svc = pipeline(&s, doubles());
    for id in [100, 102] {
        let err = svc.submit_audit(&tenant_actor(), submit(id)).await.unwrap_err();
        assert!(matches!(err, Error::Blocked(..)) && field_of(&err) == Some("upload_task_id"), "{id}: {err:?}");
    }
    let err = svc.submit_audit(&other_tenant_actor(), submit(101)).await.unwrap_err();
    assert!(matches!(err, Error::NoSuch(_)), "{err:?}");
    assert!(lock(&s).audits.is_empty());
}

#[tokio::test]
async fn a_second_audit_while_one_runs_is_a_409_without_asking_the_platform() {
    let s = state();
    lock(&s).uploads.push(upload(100, "1.0.0", UploadStatus::Uploaded, template_source()));
    lock(&s).audits.push(audit(200, 99, AuditStatus::Delayed));
    let err = pipeline(&s, doubles()).submit_audit(&tenant_actor(), submit(100)).await.unwrap_err();
    assert!(matches!(err, Error::Blocked(_, ref f) if f[0].message.contains("85009")), "{err:?}");
    assert_eq!(lock(&s).audits.len(), 1);
}

#[tokio::test]
async fn a_submission_beside_one_on_its_way_to_the_platform_is_a_409_without_asking_it() {
    let s = state();
    lock(&s).uploads.push(upload(100, "1.0.0", UploadStatus::Uploaded, template_source()));
    let mut d = doubles();
    d.platform.expect_submit_audit().times(1).returning(|_, _| Ok(1234));
    let svc = pipeline(&s, d);

    // Another request of the tenant is between its checks and the record of its audit.
    let on_its_way = svc.start_submission(TENANT).unwrap();
    assert!(svc.start_submission(TENANT).is_none());
    let err = svc.submit_audit(&tenant_actor(), submit(100)).await.unwrap_err();
    assert!(matches!(err, Error::Blocked(_, ref f) if f[0].field == "upload_task_id" && f[0].message.contains("85009")), "{err:?}");
    assert!(lock(&s).audits.is_empty());
    // Another tenant's submissions are not held up.
    drop(svc.start_submission(OTHER_TENANT).unwrap());

    drop(on_its_way);
    svc.submit_audit(&tenant_actor(), submit(100)).await.unwrap();
    assert_eq!(lock(&s).audits.len(), 1);
    // Done: the next one is refused by the running audit, and the tenant is free again.
    let again = svc.submit_audit(&tenant_actor(), submit(100)).await.unwrap_err();
    assert!(matches!(again, Error::Blocked(_, ref f) if f[0].message.contains("still running")), "{again:?}");
    assert!(svc.start_submission(TENANT).is_some());
}

#[tokio::test]
async fn the_platforms_85009_and_quota_refusals_are_409_and_429() {
    for (code, check) in [(85009, "409"), (85085, "429")] {
        let s = state();
        lock(&s).uploads.push(upload(100, "1.0.0", UploadStatus::Uploaded, template_source()));
        let mut d = doubles();
        d.platform.expect_submit_audit().returning(move |_, _| Err(refused(code)));
        let err = pipeline(&s, d).submit_audit(&tenant_actor(), submit(100)).await.unwrap_err();
        match check {
            "409" => assert!(matches!(err, Error::Blocked(..)), "{err:?}"),
            _ => assert!(matches!(err, Error::RateLimited { .. }), "{err:?}"),
        }
        assert!(lock(&s).audits.is_empty());
    }
}

#[tokio::test]
async fn asking_for_a_running_audit_keeps_the_platforms_decision() {
    let s = state();
    lock(&s).audits.push(audit(200, 100, AuditStatus::Auditing));
    let mut d = doubles();
    d.platform.expect_audit_status().withf(|_, id| *id == 1234).times(1).returning(|_, _| {
        Ok(PlatformAudit {
            status: AuditStatus::Rejected,
            reason: Some("missing privacy policy".into()),
            screenshots: vec!["m1".into(), "m2".into()],
            at: None,
        })
    });
    let svc = pipeline(&s, d);
    let params = AuditStatusParams { audit_task_id: None, tenant_id: None };

    let view = svc.audit_status(&tenant_actor(), params.clone()).await.unwrap();
    assert_eq!(view.status, AuditStatus::Rejected);
    assert_eq!(view.screenshots, ["m1", "m2"]);
    assert_eq!(view.decided_at, Some(now()));
    // Decided: the platform is not asked again.
    assert_eq!(svc.audit_status(&tenant_actor(), params).await.unwrap().status, AuditStatus::Rejected);
    assert_eq!(lock(&s).published, [(crate::events::AUDIT_REJECTED, Some(200))], "one event, with the decision");
}

fn job(kind: &str, payload: serde_json::Value, attempts: i32) -> atrium_kernel::Job {
    atrium_kernel::Job { id: 1, kind: kind.into(), tenant_id: Some(TENANT), payload, attempts, run_at: now() }
}

fn poll_job(attempts: i32) -> atrium_kernel::Job {
    job(AUDIT_POLL_JOB, serde_json::json!({"audit_task_id": 200}), attempts)
}

#[tokio::test]
async fn a_poll_of_a_still_running_audit_runs_again_after_the_poll_interval_and_queues_nothing() {
    let s = state();
    lock(&s).audits.push(audit(200, 100, AuditStatus::Auditing));
    let mut d = doubles();
    d.platform
        .expect_audit_status()
        .withf(|access, id| access.authorizer_appid == APPID && *id == 1234)
        .times(1)
        .returning(|_, _| Ok(PlatformAudit { status: AuditStatus::Delayed, reason: Some("busy".into()), screenshots: vec![], at: None }));

    let outcome = pipeline(&s, d).run(&poll_job(1)).await;

    assert_eq!(outcome, JobOutcome::Retry { at: now() + Duration::minutes(30), reason: "the audit is still delayed".into() });
    assert_eq!(lock(&s).audits[0].status, AuditStatus::Delayed);
    assert!(lock(&s).jobs.is_empty(), "the job itself runs again; no second poll is queued");
}

#[tokio::test]
async fn a_poll_that_finds_the_decision_keeps_it_and_is_done() {
    let s = state();
    lock(&s).audits.push(audit(200, 100, AuditStatus::Auditing));
    let mut d = doubles();
    d.platform.expect_audit_status().withf(|_, id| *id == 1234).times(1).returning(|_, _| {
        Ok(PlatformAudit {
            status: AuditStatus::Rejected,
            reason: Some("no privacy policy".into()),
            screenshots: vec!["m1".into()],
            at: None,
        })
    });
    let svc = pipeline(&s, d);

    assert_eq!(svc.run(&poll_job(3)).await, JobOutcome::Done);
    let stored = lock(&s).audits[0].clone();
    assert_eq!(
        (stored.status, stored.reason.as_deref(), stored.decided_at),
        (AuditStatus::Rejected, Some("no privacy policy"), Some(now()))
    );
    // Run again (a crashed runner's job): the decided audit is not asked about again.
    assert_eq!(svc.run(&poll_job(4)).await, JobOutcome::Done);
}

#[tokio::test]
async fn a_poll_the_platform_cannot_answer_is_retried_and_given_up_after_two_weeks() {
    let s = state();
    lock(&s).audits.push(audit(200, 100, AuditStatus::Auditing));
    let mut d = doubles();
    d.platform.expect_audit_status().returning(|_, _| Err(PlatformError::Unavailable("time-out".into())));
    let svc = pipeline(&s, d);

    assert!(matches!(svc.run(&poll_job(1)).await, JobOutcome::Retry { at, .. } if at == now() + Duration::minutes(30)));
    assert!(matches!(svc.run(&poll_job(crate::service::AUDIT_POLL_MAX)).await, JobOutcome::Failed(ref why) if why.contains("given up")));
    assert_eq!(lock(&s).audits[0].status, AuditStatus::Auditing, "nothing was made up");
}

#[tokio::test]
async fn an_upload_job_runs_its_task_and_is_done() {
    let s = state();
    lock(&s).uploads.push(upload(100, "1.0.0", UploadStatus::Queued, template_source()));
    let mut d = doubles();
    library(&mut d.platform, vec![]);
    d.platform.expect_commit().withf(|_, c| c.template_id == 1 && c.user_version == "1.0.0").times(1).returning(|_, _| Ok(()));

    let outcome = pipeline(&s, d).run(&job(UPLOAD_JOB, serde_json::json!({"upload_task_id": 100}), 1)).await;

    assert_eq!(outcome, JobOutcome::Done);
    assert_eq!(lock(&s).uploads[0].status, UploadStatus::Uploaded);
}

#[tokio::test]
async fn an_upload_job_the_uploader_cannot_serve_now_backs_off_and_the_last_attempt_fails_the_task() {
    let s = state();
    lock(&s).packages.push(kept_package());
    lock(&s).uploads.push(upload(100, "1.0.0", UploadStatus::Queued, package_source()));
    let mut d = doubles();
    d.uploader.expect_upload().times(3).returning(|_| Err(UploaderError::Failed("connection refused".into())));
    let svc = pipeline(&s, d);
    let upload_job = |attempts| job(UPLOAD_JOB, serde_json::json!({"upload_task_id": 100}), attempts);

    assert!(matches!(svc.run(&upload_job(1)).await, JobOutcome::Retry { at, .. } if at == now() + Duration::minutes(1)));
    assert!(matches!(svc.run(&upload_job(2)).await, JobOutcome::Retry { at, .. } if at == now() + Duration::minutes(5)));
    assert_eq!(svc.run(&upload_job(3)).await, JobOutcome::Done);
    assert_eq!(lock(&s).uploads[0].status, UploadStatus::Failed);
}

#[tokio::test]
async fn a_job_for_a_task_that_does_not_exist_or_with_a_bad_payload_fails_for_good() {
    let s = state();
    let svc = pipeline(&s, doubles());
    assert!(matches!(svc.run(&job(UPLOAD_JOB, serde_json::json!({"upload_task_id": 999}), 1)).await, JobOutcome::Failed(_)));
    assert!(matches!(svc.run(&job(AUDIT_POLL_JOB, serde_json::json!({"audit_task_id": 999}), 1)).await, JobOutcome::Failed(_)));
    assert!(matches!(svc.run(&job(UPLOAD_JOB, serde_json::json!({"id": "x"}), 1)).await, JobOutcome::Failed(_)));
    assert!(matches!(svc.run(&job("payment.settle_refund", serde_json::json!({}), 1)).await, JobOutcome::Failed(_)));
    assert_eq!(svc.kinds(), [UPLOAD_JOB, AUDIT_POLL_JOB]);
}

// --- releases -----------------------------------------------------------------------------

fn publish(mode: PublishMode, gray_percentage: Option<i64>) -> PublishRequest {
    PublishRequest { audit_task_id: 200, mode, gray_percentage }
}

#[tokio::test]
async fn an_audit_that_has_not_passed_cannot_be_published() {
    for status in [AuditStatus::Auditing, AuditStatus::Rejected, AuditStatus::Delayed] {
        let s = state();
        lock(&s).audits.push(audit(200, 100, status));
        let err = pipeline(&s, doubles()).publish(&tenant_actor(), publish(PublishMode::Full, None)).await.unwrap_err();
        assert!(matches!(err, Error::Blocked(..)), "{status:?}: {err:?}");
        assert!(lock(&s).releases.is_empty());
    }
}

#[tokio::test]
async fn a_gray_release_rises_and_a_full_one_completes_it() {
    let s = state();
    lock(&s).audits.push(audit(200, 100, AuditStatus::Passed));
    let mut d = doubles();
    // 10 %, then 40 %, then everyone, in that order; the refused steps never reach the platform.
    let mut order = mockall::Sequence::new();
    for pct in [10, 40] {
        d.platform
            .expect_gray_release()
            .withf(move |access, p| access.authorizer_appid == APPID && *p == pct)
            .times(1)
            .in_sequence(&mut order)
            .returning(|_, _| Ok(()));
    }
    d.platform.expect_release().withf(|access| access.authorizer_appid == APPID).times(1).in_sequence(&mut order).returning(|_| Ok(()));
    let svc = pipeline(&s, d);

    let first = svc.publish(&tenant_actor(), publish(PublishMode::Gray, Some(10))).await.unwrap();
    assert_eq!((first.kind, first.gray_percentage, first.status), (ReleaseKind::Gray, Some(10), ReleaseStatus::Succeeded));
    for bad in [Some(0), Some(101)] {
        let err = svc.publish(&tenant_actor(), publish(PublishMode::Gray, bad)).await.unwrap_err();
        assert!(matches!(err, Error::Invalid(_)), "{bad:?}: {err:?}");
    }
    for lower in [5, 10] {
        let err = svc.publish(&tenant_actor(), publish(PublishMode::Gray, Some(lower))).await.unwrap_err();
        assert!(matches!(err, Error::Blocked(..)) && field_of(&err) == Some("gray_percentage"), "{lower}: {err:?}");
    }
    svc.publish(&tenant_actor(), publish(PublishMode::Gray, Some(40))).await.unwrap();
    let full = svc.publish(&tenant_actor(), publish(PublishMode::Full, None)).await.unwrap();
    assert_eq!(full.kind, ReleaseKind::Full);
    let err = svc.publish(&tenant_actor(), publish(PublishMode::Full, None)).await.unwrap_err();
    assert!(matches!(err, Error::Blocked(..)), "{err:?}");

    let st = lock(&s);
    let recorded: Vec<_> = st.releases.iter().map(|r| (r.kind, r.gray_percentage, r.status)).collect();
    assert_eq!(
        recorded,
        [
            (ReleaseKind::Gray, Some(10), ReleaseStatus::Succeeded),
            (ReleaseKind::Gray, Some(40), ReleaseStatus::Succeeded),
            (ReleaseKind::Full, None, ReleaseStatus::Succeeded)
        ]
    );
    assert_eq!(st.audits[0].release, ReleaseState { gray_percentage: Some(40), released_at: Some(now()) });
    assert_eq!(st.published, [(crate::events::RELEASED, Some(200)); 3], "each release that went out, none for the refused ones");
}

#[tokio::test]
async fn a_refused_release_is_recorded_with_its_errcode() {
    let s = state();
    lock(&s).audits.push(audit(200, 100, AuditStatus::Passed));
    let mut d = doubles();
    d.platform.expect_gray_release().withf(|_, p| *p == 20).times(1).returning(|_, _| Err(refused(85082)));
    let err = pipeline(&s, d).publish(&tenant_actor(), publish(PublishMode::Gray, Some(20))).await.unwrap_err();
    assert!(matches!(err, Error::Blocked(_, ref f) if f[0].message.contains("85082")), "{err:?}");
    let st = lock(&s);
    assert_eq!(
        (st.releases[0].status, st.releases[0].errcode, st.releases[0].gray_percentage),
        (ReleaseStatus::Failed, Some(85082), Some(20))
    );
    assert_eq!(st.audits[0].release, ReleaseState::default());
}

#[tokio::test]
async fn a_rollback_during_a_gray_release_is_a_409_and_recorded() {
    let s = state();
    let mut d = doubles();
    d.platform.expect_revert_release().withf(|_, v| *v == Some(3)).returning(|_, _| Err(refused(87011)));
    let err = pipeline(&s, d).rollback(&tenant_actor(), RollbackRequest { tenant_id: None, app_version: Some(3) }).await.unwrap_err();
    assert!(matches!(err, Error::Blocked(..)), "{err:?}");
    let st = lock(&s);
    assert_eq!((st.releases[0].kind, st.releases[0].errcode), (ReleaseKind::Rollback, Some(87011)));
}

#[tokio::test]
async fn the_versions_view_tolerates_a_mini_program_without_a_live_version() {
    let s = state();
    let mut d = doubles();
    d.platform.expect_version_info().returning(|_| Ok(VersionInfo::default()));
    d.platform.expect_gray_plan().returning(|_| Err(refused(85079)));
    d.platform.expect_history_versions().returning(|_| Err(refused(85079)));
    let view = pipeline(&s, d).versions(&tenant_actor(), None).await.unwrap();
    assert_eq!((view.release, view.gray_plan, view.history.len()), (None, None, 0));
}

#[tokio::test]
async fn the_experience_qr_passes_the_page_and_returns_the_image() {
    let s = state();
    let mut d = doubles();
    d.platform
        .expect_experience_qr()
        .withf(|_, path| path.as_deref() == Some("pages/index/index?from=qr"))
        .returning(|_, _| Ok(vec![0xFF, 0xD8, 0xFF]));
    let params = ExperienceQrParams { tenant_id: None, path: Some(PagePath::parse("pages/index/index?from=qr").unwrap()) };
    assert_eq!(pipeline(&s, d).experience_qr(&tenant_actor(), params).await.unwrap(), [0xFF, 0xD8, 0xFF]);
}

// --- pushed audit results -----------------------------------------------------------------

#[tokio::test]
async fn an_audit_event_makes_the_running_audit_ask_the_platform_once() {
    let s = state();
    let running = audit(200, 100, AuditStatus::Auditing);
    let auditid = running.auditid;
    lock(&s).audits.push(running);
    let mut d = doubles();
    d.platform.expect_open_event().withf(|url, _| *url == EventUrl::Message).returning(|_, _| Ok(audit_event(GH, AuditStatus::Passed)));
    d.platform.expect_audit_status().withf(move |_, id| *id == auditid).times(1).returning(|_, _| {
        Ok(PlatformAudit { status: AuditStatus::Passed, reason: None, screenshots: vec![], at: Some(now() - Duration::minutes(2)) })
    });
    let svc = pipeline(&s, d);

    assert_eq!(svc.receive_event(EventUrl::Message, Some(APPID), request()).await.unwrap(), EventOutcome::Applied);
    assert_eq!(svc.receive_event(EventUrl::Message, Some(APPID), request()).await.unwrap(), EventOutcome::Duplicate);
    let st = lock(&s);
    // What the platform answered for the running audit's id, not what the event said.
    assert_eq!((st.audits[0].status, st.audits[0].decided_at), (AuditStatus::Passed, Some(now() - Duration::minutes(2))));
    assert_eq!(st.published, [(crate::events::AUDIT_PASSED, Some(200))], "the duplicate push publishes nothing");
}

#[tokio::test]
async fn a_late_event_about_an_earlier_audit_does_not_decide_the_running_one() {
    let s = state();
    lock(&s).audits.push(AuditTask {
        status: AuditStatus::Rejected,
        decided_at: Some(now() - Duration::hours(3)),
        ..audit(199, 99, AuditStatus::Auditing)
    });
    lock(&s).audits.push(AuditTask { auditid: 5678, ..audit(200, 100, AuditStatus::Auditing) });
    let mut d = doubles();
    // A rejection of the previous audit, delivered late.
    d.platform.expect_open_event().returning(|_, _| Ok(audit_event(GH, AuditStatus::Rejected)));
    // The platform is asked about the running audit, not the earlier one.
    d.platform
        .expect_audit_status()
        .withf(|_, id| *id == 5678)
        .times(1)
        .returning(|_, _| Ok(PlatformAudit { status: AuditStatus::Auditing, reason: None, screenshots: vec![], at: None }));
    let outcome = pipeline(&s, d).receive_event(EventUrl::Message, Some(APPID), request()).await.unwrap();
    assert_eq!(outcome, EventOutcome::Stale);
    assert_eq!(lock(&s).audits[1].status, AuditStatus::Auditing);
}

#[tokio::test]
async fn an_audit_event_the_platform_cannot_confirm_now_is_not_accepted() {
    let s = state();
    lock(&s).audits.push(audit(200, 100, AuditStatus::Auditing));
    let mut d = doubles();
    d.platform.expect_open_event().returning(|_, _| Ok(audit_event(GH, AuditStatus::Passed)));
    d.platform.expect_audit_status().withf(|_, id| *id == 1234).times(1).returning(|_, _| Err(PlatformError::Unavailable("down".into())));
    let svc = pipeline(&s, d);
    assert_eq!(svc.receive_event(EventUrl::Message, Some(APPID), request()).await.unwrap_err(), EventError::Unavailable);
    assert_eq!(lock(&s).audits[0].status, AuditStatus::Auditing);
    // Not recorded as seen: the platform's retry is processed.
    assert!(lock(&s).events.is_empty());
}
