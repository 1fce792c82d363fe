//! Audit visibility against a mocked repository.
use super::{actor, now};
use crate::model::{AuditEntry, AuditQuery};
use crate::ports::MockAuditRepo;
use crate::service::AuditService;
use atrium_kernel::Party;
use std::sync::Arc;

fn entry(target_type: &str, before: serde_json::Value, after: serde_json::Value) -> AuditEntry {
    AuditEntry {
        id: 1,
        at: now(),
        actor_user_id: Some(1),
        ip: None,
        request_id: None,
        action: format!("{target_type}.update"),
        target_type: target_type.into(),
        target_id: Some(5),
        partner_id: Some(7),
        tenant_id: Some(3),
        before: Some(before),
        after: Some(after),
        redacted: false,
    }
}

fn audit_service(entries: Vec<AuditEntry>) -> AuditService {
    let mut repo = MockAuditRepo::new();
    repo.expect_list_audit().returning(move |_, q| Ok(atrium_kernel::Page::new(entries.clone(), entries.len() as i64, q.page)));
    AuditService::new(Arc::new(repo))
}

#[tokio::test]
async fn audit_values_are_withheld_from_callers_who_cannot_read_the_target() {
    let salary =
        entry("employee", serde_json::json!({"base_salary": 500, "phone": "13800000000"}), serde_json::json!({"base_salary": 600}));
    let svc = audit_service(vec![salary]);
    let auditor = actor(Party::Tenant { tenant_id: 3, partner_id: Some(7) }, &["audit:read"]);

    let page = svc.list(&auditor, AuditQuery::default()).await.unwrap();

    let e = &page.items[0];
    assert_eq!((e.before.as_ref(), e.after.as_ref(), e.redacted), (None, None, true));
    assert_eq!((e.action.as_str(), e.target_id), ("employee.update", Some(5)), "who did what to which record stays visible");
}

#[tokio::test]
async fn audit_values_show_to_readers_of_the_target_with_secrets_masked() {
    // An entry written before id_card_no was masked at write time still never shows it.
    let old = entry(
        "employee",
        serde_json::json!({"base_salary": 500, "id_card_no": "110101199003074514"}),
        serde_json::json!({"base_salary": 600}),
    );
    let svc = audit_service(vec![old]);
    let reader = actor(Party::Tenant { tenant_id: 3, partner_id: Some(7) }, &["audit:read", "employee:read"]);

    let page = svc.list(&reader, AuditQuery::default()).await.unwrap();

    let e = &page.items[0];
    assert_eq!(e.before, Some(serde_json::json!({"base_salary": 500, "id_card_no": "***"})));
    assert_eq!(e.after, Some(serde_json::json!({"base_salary": 600})));
    assert!(!e.redacted);
}

#[tokio::test]
async fn each_target_kind_needs_the_permission_its_own_routes_require() {
    let kinds = [
        ("employee", "employee:read"),
        ("user", "user:read"),
        ("tenant", "tenant:read"),
        ("partner", "agent:read"),
        ("role", "role:read"),
        ("payroll_sheet", "payroll:read"),
    ];
    for (kind, permission) in kinds {
        let svc = audit_service(vec![entry(kind, serde_json::json!({"name": "a"}), serde_json::json!({"name": "b"}))]);
        let with = actor(Party::Platform, &["audit:read", permission]);
        let other = if permission == "employee:read" { "user:read" } else { "employee:read" };
        let without = actor(Party::Platform, &["audit:read", other]);

        let shown = svc.list(&with, AuditQuery::default()).await.unwrap();
        let hidden = svc.list(&without, AuditQuery::default()).await.unwrap();

        assert!(shown.items[0].after.is_some() && !shown.items[0].redacted, "{kind} with {permission}");
        assert!(hidden.items[0].after.is_none() && hidden.items[0].redacted, "{kind} without {permission}");
    }
}

#[tokio::test]
async fn values_of_unknown_target_kinds_show_only_to_holders_of_everything() {
    let svc = audit_service(vec![entry("gadget", serde_json::json!({"a": 1}), serde_json::json!({"a": 2}))]);

    let most = svc.list(&actor(Party::Platform, &["audit:read", "employee:*", "user:*", "tenant:*"]), AuditQuery::default()).await.unwrap();
    let all = svc.list(&actor(Party::Platform, &["*"]), AuditQuery::default()).await.unwrap();

    assert!(most.items[0].redacted);
    assert_eq!(all.items[0].after, Some(serde_json::json!({"a": 2})));
}
