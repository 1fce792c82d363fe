//! Contract tests of the org repositories, on SQLite and (when configured) PostgreSQL.
#![allow(clippy::unwrap_used)]
use atrium_kernel::payroll::HousingFundRate;
use atrium_kernel::{AuditRecord, Effects, Error, Money, Party, Timestamp};
use atrium_org::*;
use atrium_store::{Db, FieldCipher, OrgStore, store_test};
use chrono::{TimeZone, Utc};
use diesel::RunQueryDsl;

fn t0() -> Timestamp {
    Utc.with_ymd_and_hms(2026, 5, 1, 9, 0, 0).single().expect("valid")
}

fn store(db: &Db) -> OrgStore {
    OrgStore::new(db.clone(), FieldCipher::new(&[9u8; 32]))
}

fn audit(action: &str, target: &'static str) -> AuditRecord {
    AuditRecord::system(t0(), action, target, None)
}

fn tenant(partner_id: Option<i64>) -> Tenant {
    Tenant::draft(partner_id, "T", t0())
}

fn employee(tenant_id: i64, no: &str) -> Employee {
    Employee {
        id: 0,
        tenant_id,
        employee_no: Some(no.into()),
        name: format!("Worker {no}"),
        phone: None,
        email: None,
        id_card_no: Some(IdCardNo::parse("11010519491231002X").unwrap()),
        bank_name: None,
        bank_account: Some(BankAccount::parse("6222021234567890").unwrap()),
        department: None,
        position: None,
        hire_date: None,
        status: EmployeeStatus::Active,
        base_salary: Money::from_yuan(10_000),
        si_base: None,
        housing_fund_rate: HousingFundRate::MAX,
        special_deductions: vec![],
        openid: None,
        created_at: t0(),
        updated_at: t0(),
    }
}

async fn partner(s: &OrgStore) -> i64 {
    let p = Partner {
        id: 0,
        name: "P".into(),
        contact_name: None,
        phone: None,
        email: None,
        status: PartnerStatus::Active,
        created_at: t0(),
        updated_at: t0(),
    };
    s.insert_partner(p, Effects::audited(audit("partner.create", "partner"))).await.unwrap().id
}

store_test!(sensitive_employee_fields_are_encrypted_at_rest_and_read_back, |db| {
    let s = store(&db);
    let t = s.insert_tenant(tenant(None), Effects::audited(audit("tenant.create", "tenant"))).await.unwrap();

    let e = s.insert_employee(employee(t.id, "E1"), Effects::audited(audit("employee.create", "employee"))).await.unwrap();

    assert_eq!(e.id_card_no.as_ref().map(IdCardNo::as_str), Some("11010519491231002X"));
    let mut conn = db.conn().unwrap();
    #[derive(diesel::QueryableByName)]
    struct Raw {
        #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
        id_card_enc: Option<String>,
        #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
        bank_account_enc: Option<String>,
    }
    let raw: Vec<Raw> = diesel::sql_query("SELECT id_card_enc, bank_account_enc FROM employees").load(&mut *conn).unwrap();
    let stored = format!("{:?}{:?}", raw[0].id_card_enc, raw[0].bank_account_enc);
    assert!(!stored.contains("19491231") && !stored.contains("4567890"), "plaintext at rest: {stored}");
});

store_test!(a_duplicate_employee_number_in_one_tenant_is_a_conflict, |db| {
    let s = store(&db);
    let t1 = s.insert_tenant(tenant(None), Effects::audited(audit("tenant.create", "tenant"))).await.unwrap();
    let t2 = s.insert_tenant(tenant(None), Effects::audited(audit("tenant.create", "tenant"))).await.unwrap();
    let mut first = employee(t1.id, "E1");
    first.id_card_no = None;
    s.insert_employee(first.clone(), Effects::audited(audit("employee.create", "employee"))).await.unwrap();

    let again = s.insert_employee(first.clone(), Effects::audited(audit("employee.create", "employee"))).await.unwrap_err();
    let elsewhere = s.insert_employee(Employee { tenant_id: t2.id, ..first }, Effects::audited(audit("employee.create", "employee"))).await;

    assert!(matches!(again, Error::Conflict(_, ref m) if m.contains("employee number")), "{again:?}");
    assert!(elsewhere.is_ok());
});

store_test!(an_employees_events_are_written_with_its_changes_and_a_refused_write_leaves_none, |db| {
    use atrium_store::schema::events;
    use diesel::prelude::*;
    let s = store(&db);
    let p = partner(&s).await;
    let t = s.insert_tenant(tenant(Some(p)), Effects::audited(audit("tenant.create", "tenant"))).await.unwrap();
    let mut first = employee(t.id, "E1");
    first.id_card_no = None;
    let created =
        |e: &Employee| Effects::audited(audit("employee.create", "employee")).with_event(atrium_org::events::employee_created(e, t0()));

    let e = s.insert_employee(first.clone(), created(&first)).await.unwrap();
    let refused = s.insert_employee(first.clone(), created(&first)).await;
    let renamed = Employee { name: "Renamed".into(), ..e.clone() };
    let updated =
        atrium_org::events::employee_updated(&renamed, &serde_json::to_value(&e).unwrap(), &serde_json::to_value(&renamed).unwrap(), t0());
    s.update_employee(renamed.clone(), Effects::audited(audit("employee.update", "employee")).with_events(updated)).await.unwrap();
    s.delete_employee(
        e.id,
        Effects::audited(audit("employee.delete", "employee")).with_event(atrium_org::events::employee_deleted(&renamed, t0())),
    )
    .await
    .unwrap();

    assert!(matches!(refused, Err(Error::Conflict(..))), "{refused:?}");
    let mut conn = db.conn().unwrap();
    type Owned = (Option<i64>, Option<i64>, Option<i64>);
    let written: Vec<(String, Owned, String)> = events::table
        .order(events::id.asc())
        .select((events::kind, (events::subject_id, events::tenant_id, events::partner_id), events::data))
        .load(&mut *conn)
        .unwrap();
    let kinds: Vec<(&str, Owned)> = written.iter().map(|w| (w.0.as_str(), w.1)).collect();
    let about = (Some(e.id), Some(t.id), Some(p));
    assert_eq!(
        kinds,
        [("employee.created", about), ("employee.updated", about), ("employee.deleted", about)],
        "one event per change that committed, none for the refused duplicate; the partner is the tenant's"
    );
    let created: serde_json::Value = serde_json::from_str(&written[0].2).unwrap();
    assert_eq!(
        (created["id"].as_i64(), created["tenant_id"].as_i64(), created["name"].as_str()),
        (Some(e.id), Some(t.id), Some("Worker E1"))
    );
    assert!(!written.iter().any(|w| w.2.contains("19491231") || w.2.contains("4567890")), "no id card or bank numbers in events");
    let updated: serde_json::Value = serde_json::from_str(&written[1].2).unwrap();
    assert_eq!(updated["changed"], serde_json::json!(["name"]));
});

store_test!(scope_filters_employees_by_partner_and_tenant, |db| {
    let s = store(&db);
    let p1 = partner(&s).await;
    let p2 = partner(&s).await;
    let t1 = s.insert_tenant(tenant(Some(p1)), Effects::audited(audit("tenant.create", "tenant"))).await.unwrap().id;
    let t2 = s.insert_tenant(tenant(Some(p2)), Effects::audited(audit("tenant.create", "tenant"))).await.unwrap().id;
    let mut e1 = employee(t1, "A");
    e1.id_card_no = None;
    let mut e2 = employee(t2, "B");
    e2.id_card_no = None;
    let e1 = s.insert_employee(e1, Effects::audited(audit("employee.create", "employee"))).await.unwrap();
    s.insert_employee(e2, Effects::audited(audit("employee.create", "employee"))).await.unwrap();

    let as_p1 = s.list_employees(Party::Partner { partner_id: p1 }, EmployeeQuery::default()).await.unwrap();
    let as_t2 = s.get_employee(Party::Tenant { tenant_id: t2, partner_id: Some(p2) }, e1.id).await.unwrap();
    let as_platform = s.list_employees(Party::Platform, EmployeeQuery::default()).await.unwrap();

    assert_eq!((as_p1.total, as_p1.items[0].id), (1, e1.id));
    assert!(as_t2.is_none());
    assert_eq!(as_platform.total, 2);
});

store_test!(a_tenant_with_employees_is_deleted_only_with_cascade, |db| {
    let s = store(&db);
    let t = s.insert_tenant(tenant(None), Effects::audited(audit("tenant.create", "tenant"))).await.unwrap().id;
    s.insert_employee(employee(t, "E1"), Effects::audited(audit("employee.create", "employee"))).await.unwrap();

    let refused = s.delete_tenant(t, false, Effects::audited(audit("tenant.delete", "tenant"))).await.unwrap_err();
    s.delete_tenant(t, true, Effects::audited(audit("tenant.delete", "tenant"))).await.unwrap();

    assert!(matches!(refused, Error::Conflict(..)));
    assert!(s.get_tenant(Party::Platform, t).await.unwrap().is_none());
    assert_eq!(s.list_employees(Party::Platform, EmployeeQuery::default()).await.unwrap().total, 0);
});

store_test!(the_audit_trail_refuses_updates_and_deletes, |db| {
    let s = store(&db);
    partner(&s).await;
    let mut conn = db.conn().unwrap();

    let update = diesel::sql_query("UPDATE audit_logs SET action = 'forged'").execute(&mut *conn);
    let delete = diesel::sql_query("DELETE FROM audit_logs").execute(&mut *conn);

    assert!(update.is_err() && delete.is_err());
    let log = s.list_audit(Party::Platform, AuditQuery::default()).await.unwrap();
    assert_eq!((log.total, log.items[0].action.as_str()), (1, "partner.create"));
});

store_test!(audit_entries_are_scoped_to_their_owning_party, |db| {
    let s = store(&db);
    let p1 = partner(&s).await;
    let t1 =
        s.insert_tenant(tenant(Some(p1)), Effects::audited(audit("tenant.create", "tenant").owned_by(Some(p1), None))).await.unwrap().id;

    let as_tenant = s.list_audit(Party::Tenant { tenant_id: t1, partner_id: Some(p1) }, AuditQuery::default()).await.unwrap();
    let as_partner = s.list_audit(Party::Partner { partner_id: p1 }, AuditQuery::default()).await.unwrap();
    let as_other = s.list_audit(Party::Partner { partner_id: p1 + 100 }, AuditQuery::default()).await.unwrap();

    assert_eq!(as_tenant.total, 1, "the tenant's own creation");
    assert_eq!(as_partner.total, 2, "its own creation and its tenant's");
    assert_eq!(as_other.total, 0);
});

store_test!(list_totals_stay_exact_through_inserts_deletes_and_filters, |db| {
    let s = store(&db);
    let p1 = partner(&s).await;
    let t1 = s.insert_tenant(tenant(Some(p1)), Effects::audited(audit("tenant.create", "tenant"))).await.unwrap().id;
    let t2 = s.insert_tenant(tenant(Some(p1)), Effects::audited(audit("tenant.create", "tenant"))).await.unwrap().id;
    let t3 = s.insert_tenant(tenant(None), Effects::audited(audit("tenant.create", "tenant"))).await.unwrap().id;
    let mut ids = vec![];
    for (t, n) in [(t1, 5), (t2, 3), (t3, 4)] {
        for i in 0..n {
            let mut e = employee(t, &format!("E{i}"));
            e.id_card_no = None;
            e.department = Some(if i % 2 == 0 { "Sales" } else { "Ops" }.into());
            ids.push((t, s.insert_employee(e, Effects::audited(audit("employee.create", "employee"))).await.unwrap().id));
        }
    }
    // Delete one employee of t1 and cascade-delete t3 with its employees.
    let gone = ids.iter().find(|(t, _)| *t == t1).unwrap().1;
    s.delete_employee(gone, Effects::audited(audit("employee.delete", "employee"))).await.unwrap();
    s.delete_tenant(t3, true, Effects::audited(audit("tenant.delete", "tenant"))).await.unwrap();
    let page2 = |extra: fn(&mut EmployeeQuery)| {
        let mut q = EmployeeQuery::default();
        q.list.page = atrium_kernel::PageRequest::new(Some(2), Some(2)).unwrap();
        extra(&mut q);
        q
    };

    let platform = s.list_employees(Party::Platform, page2(|_| {})).await.unwrap();
    let partner_view = s.list_employees(Party::Partner { partner_id: p1 }, page2(|_| {})).await.unwrap();
    let tenant_view = s.list_employees(Party::Tenant { tenant_id: t1, partner_id: Some(p1) }, page2(|_| {})).await.unwrap();
    let sales = s.list_employees(Party::Platform, page2(|q| q.department = Some("Sales".into()))).await.unwrap();
    let beyond = s
        .list_employees(Party::Platform, {
            let mut q = EmployeeQuery::default();
            q.list.page = atrium_kernel::PageRequest::new(Some(9), Some(2)).unwrap();
            q
        })
        .await
        .unwrap();

    assert_eq!((platform.total, platform.items.len()), (7, 2));
    assert_eq!(partner_view.total, 7);
    assert_eq!((tenant_view.total, tenant_view.items.len()), (4, 2));
    // t1 has E0, E2, E4 in Sales but E0 was deleted; t2 has E0, E2.
    assert_eq!(sales.total, 4);
    assert_eq!((beyond.total, beyond.items.len()), (7, 0));
});

/// The tenants' employee counts behind the unfiltered totals, checked against `count(*)`.
fn counts_match(db: &Db) {
    #[derive(diesel::QueryableByName, Debug, PartialEq)]
    struct Mismatch {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        id: i64,
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        kept: i64,
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        counted: i64,
    }
    let mut conn = db.conn().unwrap();
    let wrong: Vec<Mismatch> = diesel::sql_query(
        "SELECT t.id, t.employee_count AS kept, (SELECT count(*) FROM employees e WHERE e.tenant_id = t.id) AS counted \
         FROM tenants t WHERE t.employee_count <> (SELECT count(*) FROM employees e WHERE e.tenant_id = t.id)",
    )
    .load(&mut *conn)
    .unwrap();
    assert_eq!(wrong, vec![], "tenants whose kept count is not their employees' count");
}

// A bulk insert of many tenants' staff in one statement (the seed, an import) and a bulk
// delete are counted per tenant, once per statement; single creates in parallel are counted
// exactly too.
store_test!(employee_counts_follow_bulk_statements_and_parallel_creates, |db| {
    let s = store(&db);
    let (first, last) = atrium_store::seed::seed_org(&db, 3, 40).unwrap();
    counts_match(&db);
    let platform = s.list_employees(Party::Platform, EmployeeQuery::default()).await.unwrap();
    assert_eq!(platform.total, 120);

    let creates: Vec<_> = (0..20)
        .map(|i| {
            let s = s.clone();
            let t = if i % 2 == 0 { first } else { last };
            tokio::spawn(async move {
                let mut e = employee(t, &format!("P{i}"));
                e.id_card_no = None;
                s.insert_employee(e, Effects::audited(audit("employee.create", "employee"))).await.unwrap()
            })
        })
        .collect();
    for create in creates {
        create.await.unwrap();
    }
    counts_match(&db);
    {
        let mut conn = db.conn().unwrap();
        let gone = diesel::sql_query(format!("DELETE FROM employees WHERE tenant_id IN ({first}, {last}) AND employee_no LIKE 'E00000%'"))
            .execute(&mut *conn)
            .unwrap();
        assert_eq!(gone, 18, "E000001–E000009 of two tenants");
    }
    counts_match(&db);
    let platform = s.list_employees(Party::Platform, EmployeeQuery::default()).await.unwrap();
    assert_eq!(platform.total, 120 + 20 - 18);
});

store_test!(keyword_search_finds_substrings_of_name_phone_and_number_and_follows_changes, |db| {
    let s = store(&db);
    let t = s.insert_tenant(tenant(None), Effects::audited(audit("tenant.create", "tenant"))).await.unwrap().id;
    let mut ids = vec![];
    for (no, name, phone) in
        [("E-100", "Zhang SanFeng", "+8613800001111"), ("E-200", "李小龙", "+8613900002222"), ("X_9", "O\"Brien 50%", "+8613700003333")]
    {
        let mut e = employee(t, no);
        e.id_card_no = None;
        e.name = name.into();
        e.phone = Some(phone.into());
        ids.push(s.insert_employee(e, Effects::audited(audit("employee.create", "employee"))).await.unwrap().id);
    }
    // Across tenants (the trigram indexes) and inside the tenant (its rows compared directly):
    // the same answer, in the same order.
    let find_sorted = |k: &str, sort: Option<(EmployeeSort, atrium_kernel::SortOrder)>| {
        let s = s.clone();
        let k = k.to_lowercase();
        async move {
            let mut found = vec![];
            for scope in [Party::Platform, Party::Tenant { tenant_id: t, partner_id: None }] {
                let mut q = EmployeeQuery::default();
                q.list.keyword = Some(k.clone());
                q.list.sort = sort;
                let page = s.list_employees(scope, q).await.unwrap();
                assert_eq!(page.total as usize, page.items.len());
                found.push(page.items.into_iter().map(|e| e.employee_no.unwrap()).collect::<Vec<_>>());
            }
            assert_eq!(found[0], found[1], "{k}: across tenants and inside the tenant");
            found.swap_remove(0)
        }
    };
    let find = |k: &str| find_sorted(k, None);

    assert_eq!(find("sanfeng").await, vec!["E-100"]); // case-insensitive, mid-word
    assert_eq!(find("0002222").await, vec!["E-200"]); // phone digits
    assert_eq!(find("e-2").await, vec!["E-200"]); // employee number
    assert_eq!(find("小龙").await, vec!["E-200"]); // two characters: below the trigram length
    assert_eq!(find("o\"brien").await, vec!["X_9"]); // quotes are literal
    assert_eq!(find("50%").await, vec!["X_9"]); // so are LIKE wildcards
    assert!(find("x%9").await.is_empty());
    assert!(find("nobody here").await.is_empty());
    // Every phone holds "+86": the page keeps the order asked for.
    assert_eq!(find("+86").await, vec!["X_9", "E-200", "E-100"]); // newest first
    let by_name = find_sorted("+86", Some((EmployeeSort::Name, atrium_kernel::SortOrder::Asc))).await;
    assert_eq!(by_name, vec!["X_9", "E-100", "E-200"]); // O"Brien, Zhang SanFeng, 李小龙

    // The index follows updates and deletes.
    let mut renamed = s.get_employee(Party::Platform, ids[0]).await.unwrap().unwrap();
    renamed.name = "Wang Wu".into();
    s.update_employee(renamed, Effects::audited(audit("employee.update", "employee"))).await.unwrap();
    s.delete_employee(ids[1], Effects::audited(audit("employee.delete", "employee"))).await.unwrap();

    assert!(find("sanfeng").await.is_empty());
    assert_eq!(find("wang w").await, vec!["E-100"]);
    assert!(find("0002222").await.is_empty());
});

store_test!(a_keyword_across_tenants_pages_in_id_order_with_filters_and_counts_each_search_once, |db| {
    use atrium_kernel::{PageRequest, SortOrder};
    let s = store(&db);
    let p = partner(&s).await;
    let t1 = s.insert_tenant(tenant(Some(p)), Effects::audited(audit("tenant.create", "tenant"))).await.unwrap().id;
    let t2 = s.insert_tenant(tenant(None), Effects::audited(audit("tenant.create", "tenant"))).await.unwrap().id;
    // (id, tenant, status, department, employee number)
    let mut all = vec![];
    for i in 0..60 {
        let mut e = employee(if i % 2 == 0 { t1 } else { t2 }, &format!("N{i:03}"));
        e.id_card_no = None;
        e.status = if i % 4 == 0 { EmployeeStatus::Left } else { EmployeeStatus::Active };
        e.department = (i % 3 == 0).then(|| "Sales".to_owned());
        let e = s.insert_employee(e, Effects::audited(audit("employee.create", "employee"))).await.unwrap();
        all.push(e);
    }
    type Filter = fn(&Employee) -> bool;
    type Narrow = fn(&mut EmployeeQuery);
    let cases: Vec<(Party, &str, Filter, Narrow)> = vec![
        (Party::Platform, "worker n0", |_| true, |_| {}),
        (Party::Platform, "n01", |_| true, |_| {}),
        (Party::Platform, "worker n0", |e| e.status == EmployeeStatus::Active, |q| q.status = Some(EmployeeStatus::Active)),
        (Party::Platform, "worker n0", |e| e.department.as_deref() == Some("Sales"), |q| q.department = Some("Sales".into())),
        (Party::Partner { partner_id: p }, "worker n0", |_| true, |_| {}),
        (Party::Platform, "worker n0", |_| true, |_| {}),
    ];
    for (n, (scope, keyword, keep, narrow)) in cases.into_iter().enumerate() {
        // The last case narrows by partner_id as a platform user.
        let of_partner = n == 5 || matches!(scope, Party::Partner { .. });
        let mut want: Vec<i64> = all
            .iter()
            .filter(|e| e.employee_no.as_deref().unwrap().to_lowercase().contains(&keyword.replace("worker ", "")))
            .filter(|e| keep(e) && (!of_partner || e.tenant_id == t1))
            .map(|e| e.id)
            .collect();
        want.sort_unstable_by(|a, b| b.cmp(a));
        for order in [SortOrder::Desc, SortOrder::Asc] {
            let mut got = vec![];
            for page in 1..=(want.len() / 7 + 2) {
                let mut q = EmployeeQuery::default();
                narrow(&mut q);
                if n == 5 {
                    q.partner_id = Some(p);
                }
                q.list.keyword = Some(keyword.into());
                q.list.sort = Some((EmployeeSort::Id, order));
                q.list.page = PageRequest::new(Some(page as i64), Some(7)).unwrap();
                let found = s.list_employees(scope, q).await.unwrap();
                assert_eq!((found.total, found.total_exact), (want.len() as i64, true), "case {n}, page {page}");
                got.extend(found.items.iter().map(|e| e.id));
            }
            let mut expected = want.clone();
            if order == SortOrder::Asc {
                expected.reverse();
            }
            assert_eq!(got, expected, "case {n}, {order:?}");
        }
    }

    // A search's count is shared by its pages, and a write through the store shows at once.
    let page_one = |s: OrgStore| async move {
        let mut q = EmployeeQuery::default();
        q.list.keyword = Some("worker n0".into());
        q.list.page = PageRequest::new(Some(1), Some(7)).unwrap();
        s.list_employees(Party::Platform, q).await.unwrap()
    };
    assert_eq!(page_one(s.clone()).await.total, 60);
    let mut e = employee(t2, "N060");
    e.id_card_no = None;
    let added = s.insert_employee(e, Effects::audited(audit("employee.create", "employee"))).await.unwrap();
    let now = page_one(s.clone()).await;
    assert_eq!((now.total, now.items[0].id), (61, added.id));
    s.delete_employee(added.id, Effects::audited(audit("employee.delete", "employee"))).await.unwrap();
    assert_eq!(page_one(s.clone()).await.total, 60);
});

store_test!(keywords_are_literal_text_on_every_list_and_never_a_database_error, |db| {
    let s = store(&db);
    let accounts = atrium_store::IdentityStore::new(db.clone());
    let p = partner(&s).await;
    let t = s.insert_tenant(tenant(Some(p)), Effects::audited(audit("tenant.create", "tenant"))).await.unwrap().id;
    let mut e = employee(t, "E-1");
    e.id_card_no = None;
    e.name = "Near(x) OR *star* \"q\" back\\slash 5%_".into();
    s.insert_employee(e, Effects::audited(audit("employee.create", "employee"))).await.unwrap();
    let (long, longer) = ("长".repeat(64), "x".repeat(200));
    let keywords = [
        "\"",
        "\"\"",
        "a\"b",
        "*",
        "**",
        "or",
        "a or b",
        "near(",
        "near(a b)",
        "^x",
        "col:x",
        "\\",
        "\\\\",
        "%",
        "_",
        "%_%",
        "'",
        "';--",
        "(",
        ")",
        "-",
        "+",
        "{",
        "}",
        "[",
        "]",
        &long,
        &longer,
        "\u{0}abc",
        "ab\u{1f}c",
        "ab\u{85}c",
        "\u{7f}\u{7f}\u{7f}",
    ];
    for k in keywords {
        for scope in [Party::Platform, Party::Partner { partner_id: p }] {
            let mut q = EmployeeQuery::default();
            q.list.keyword = Some(k.to_lowercase());
            let page = s.list_employees(scope, q).await.unwrap_or_else(|e| panic!("employees {k:?} as {scope:?}: {e:?}"));
            assert!(page.items.len() <= 1, "{k:?}");
            let mut q = TenantQuery::default();
            q.list.keyword = Some(k.to_lowercase());
            s.list_tenants(scope, q).await.unwrap_or_else(|e| panic!("tenants {k:?}: {e:?}"));
            let mut q = PartnerQuery::default();
            q.list.keyword = Some(k.to_lowercase());
            s.list_partners(scope, q).await.unwrap_or_else(|e| panic!("partners {k:?}: {e:?}"));
            let mut q = atrium_identity::UserQuery::default();
            q.list.keyword = Some(k.to_lowercase());
            atrium_identity::UserRepo::list_users(&accounts, scope, q).await.unwrap_or_else(|e| panic!("users {k:?}: {e:?}"));
        }
    }
    let find = |k: &str| {
        let s = s.clone();
        let k = k.to_owned();
        async move {
            let mut q = EmployeeQuery::default();
            q.list.keyword = Some(k);
            s.list_employees(Party::Platform, q).await.unwrap().items.len()
        }
    };
    // Operators and quotes are matched as the characters they are, through the trigram index.
    assert_eq!(find("near(x) or").await, 1);
    assert_eq!(find("*star*").await, 1);
    assert_eq!(find("\"q\"").await, 1);
    assert_eq!(find("back\\slash").await, 1);
    assert_eq!(find("5%_").await, 1);
    assert_eq!(find("near(y").await, 0);
    assert_eq!(find("\u{0}near").await, 0);
});

// A list's total is counted no further than COUNT_AHEAD records past the end of the page: past
// that bound it is the bound, marked inexact. A page that is not full ends the list (exact), and
// totals kept by the tenants' counters stay exact however long the list.
store_test!(list_totals_are_counted_up_to_a_bound_past_the_page, |db| {
    let s = store(&db);
    atrium_store::seed::seed_org(&db, 2, 700).unwrap();
    let query = |status: Option<EmployeeStatus>, page: i64, size: i64| {
        let mut q = EmployeeQuery { status, ..EmployeeQuery::default() };
        q.list.page = atrium_kernel::PageRequest::new(Some(page), Some(size)).unwrap();
        q
    };
    let active = Some(EmployeeStatus::Active);
    let bound = |page: i64, size: i64| (page - 1) * size + size + atrium_kernel::COUNT_AHEAD;

    // Counted through the filter: 1,400 records, more than the bound of page 1 of size 10.
    let first = s.list_employees(Party::Platform, query(active, 1, 10)).await.unwrap();
    assert_eq!((first.items.len(), first.total, first.total_exact), (10, bound(1, 10), false));
    // Page 5 of size 100 reaches past the list's end within its bound: exact.
    let far = s.list_employees(Party::Platform, query(active, 5, 100)).await.unwrap();
    assert_eq!((far.items.len(), far.total, far.total_exact), (100, 1400, true));
    // The last, partly filled page ends the list: exact, with no count.
    let last = s.list_employees(Party::Platform, query(active, 47, 30)).await.unwrap();
    assert_eq!((last.items.len(), last.total, last.total_exact), (20, 1400, true));
    // A page past the end is empty, and counts the list within its bound: exact.
    let beyond = s.list_employees(Party::Platform, query(active, 48, 30)).await.unwrap();
    assert_eq!((beyond.items.len(), beyond.total, beyond.total_exact), (0, 1400, true));
    // The counters answer a list filtered only by scope: exact, past any bound.
    let all = s.list_employees(Party::Platform, query(None, 1, 10)).await.unwrap();
    assert_eq!((all.total, all.total_exact), (1400, true));
});

store_test!(deep_pages_of_every_employee_hold_the_rows_offset_would_after_deletes_and_a_hand_given_id, |db| {
    use atrium_kernel::{PageRequest, SortOrder};
    let s = store(&db);
    // 1,260 employees: pages from the 1,000th row on are "deep" (SQLite finds where they start
    // from the ids and the deleted ones; PostgreSQL steps over the rows).
    atrium_store::seed::seed_org(&db, 3, 420).unwrap();
    let ids = |db: &Db| {
        #[derive(diesel::QueryableByName)]
        struct Id {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            id: i64,
        }
        let mut conn = db.conn().unwrap();
        let rows: Vec<Id> = diesel::sql_query("SELECT id FROM employees ORDER BY id").load(&mut *conn).unwrap();
        rows.into_iter().map(|r| r.id).collect::<Vec<i64>>()
    };
    let every = ids(&db);
    // The oldest, a run of 30 in the middle, one in five of a stretch, and the newest two.
    let mut gone: Vec<i64> = vec![every[0], every[every.len() - 1], every[every.len() - 2]];
    gone.extend(&every[1_050..1_080]);
    gone.extend(every[1_100..1_200].iter().step_by(5));
    for id in &gone {
        s.delete_employee(*id, Effects::audited(audit("employee.delete", "employee"))).await.unwrap();
    }
    let check = |s: OrgStore, want: Vec<i64>, when: &'static str| async move {
        for order in [SortOrder::Desc, SortOrder::Asc] {
            let mut want = want.clone();
            if order == SortOrder::Desc {
                want.reverse();
            }
            for (page, size) in
                [(1, 20), (50, 20), (51, 20), (52, 20), (53, 20), (59, 20), (60, 20), (61, 20), (62, 20), (11, 100), (12, 100), (13, 100)]
            {
                let mut q = EmployeeQuery::default();
                q.list.sort = Some((EmployeeSort::Id, order));
                q.list.page = PageRequest::new(Some(page), Some(size)).unwrap();
                let found = s.list_employees(Party::Platform, q).await.unwrap();
                let from = ((page - 1) * size) as usize;
                let expected: Vec<i64> = want.iter().skip(from).take(size as usize).copied().collect();
                let got: Vec<i64> = found.items.iter().map(|e| e.id).collect();
                assert_eq!(got, expected, "{when}: {order:?}, page {page} of {size}");
                assert_eq!((found.total, found.total_exact), (want.len() as i64, true), "{when}: {order:?}, page {page}");
            }
        }
    };
    check(s.clone(), ids(&db), "after deletes").await;
    // An id given by hand, far past the others, leaves numbers that are neither employees nor
    // deleted ones: the pages stay right (SQLite reads them with OFFSET then).
    {
        let mut conn = db.conn().unwrap();
        let far = every[every.len() - 1] + 500;
        diesel::sql_query(format!(
            "INSERT INTO employees (id, tenant_id, name, status, base_salary, housing_fund_rate, special_deductions, created_at, updated_at) \
             SELECT {far}, tenant_id, name, status, base_salary, housing_fund_rate, special_deductions, created_at, updated_at FROM employees WHERE id = {}",
            every[5]
        ))
        .execute(&mut *conn)
        .unwrap();
    }
    check(s.clone(), ids(&db), "after an id given by hand").await;
});
