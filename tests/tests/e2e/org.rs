//! Users, partners, tenants, employees, roles and the audit trail over HTTP.
#![allow(clippy::unwrap_used)]
use atrium_e2e::serde_json::{Value, json};
use atrium_e2e::{PAYROLL_CLERK, TENANT_ADMIN, TestApp, e2e};

fn id(v: &Value) -> i64 {
    v["id"].as_i64().unwrap()
}

async fn employee(app: &TestApp, token: &str, body: Value) -> Value {
    app.create("/api/v1/employees", body, token).await
}

// ----- partners -------------------------------------------------------------------------

e2e!(partners_are_created_read_listed_updated_and_deleted_by_the_platform, |app| {
    let admin = app.admin_token().await;

    let p = app.create("/api/v1/partners", json!({"name": "Acme Channel", "phone": "13800138000", "email": "Ops@Acme.cn"}), &admin).await;
    assert_eq!(p["phone"], "+8613800138000");
    assert_eq!(p["email"], "ops@acme.cn");
    assert_eq!(p["status"], "active");

    app.get(&format!("/api/v1/partners/{}", id(&p)), Some(&admin)).await.expect(200);
    let found = app.get("/api/v1/partners?keyword=ACME&page_size=5", Some(&admin)).await;
    found.expect(200);
    assert_eq!(found.data()["total"], 1);
    assert_eq!(found.data()["page_size"], 5);

    let upd = app.put(&format!("/api/v1/partners/{}", id(&p)), json!({"contact_name": "Li Lei", "email": null}), Some(&admin)).await;
    upd.expect(200);
    assert_eq!(upd.data()["contact_name"], "Li Lei");
    assert!(upd.data()["email"].is_null());

    app.delete(&format!("/api/v1/partners/{}", id(&p)), Some(&admin)).await.expect(200);
    app.get(&format!("/api/v1/partners/{}", id(&p)), Some(&admin)).await.expect(404);
});

e2e!(partner_validation_names_the_field, |app| {
    let admin = app.admin_token().await;
    app.post("/api/v1/partners", json!({"name": "  "}), Some(&admin)).await.expect_field_error("name");
    app.post("/api/v1/partners", json!({"name": "X", "phone": "12"}), Some(&admin)).await.expect_field_error("phone");
    app.post("/api/v1/partners", json!({"name": "X", "email": "nope"}), Some(&admin)).await.expect_field_error("email");
    app.post("/api/v1/partners", json!({"name": "X", "status": "zombie"}), Some(&admin)).await.expect_field_error("status");
    app.post("/api/v1/partners", json!({"name": "X", "owner": 1}), Some(&admin)).await.expect_field_error("owner");
});

e2e!(partner_routes_need_a_token_and_the_permission, |app| {
    let org = app.org().await;
    app.get("/api/v1/partners", None).await.expect(401);
    app.get("/api/v1/partners", Some(&org.t1_admin)).await.expect(403);
    app.post("/api/v1/partners", json!({"name": "Mine"}), Some(&org.p1_admin)).await.expect(403);
});

e2e!(a_partner_with_tenants_is_deleted_only_with_cascade, |app| {
    let org = app.org().await;

    app.delete(&format!("/api/v1/partners/{}", org.p2), Some(&org.admin)).await.expect(409);
    app.delete(&format!("/api/v1/partners/{}?cascade=true", org.p2), Some(&org.admin)).await.expect(200);

    app.get(&format!("/api/v1/tenants/{}", org.t2), Some(&org.admin)).await.expect(404);
    app.get("/api/v1/auth/me", Some(&org.t2_admin)).await.expect(401);
    app.get("/api/v1/auth/me", Some(&org.p2_admin)).await.expect(401);
});

// ----- tenants --------------------------------------------------------------------------

e2e!(a_partner_creates_tenants_under_itself_only, |app| {
    let org = app.org().await;

    let own = app.create("/api/v1/tenants", json!({"name": "Sub Co", "credit_code": "91350100M000100Y43"}), &org.p1_admin).await;
    let other = app.post("/api/v1/tenants", json!({"name": "Sneaky", "partner_id": org.p2}), Some(&org.p1_admin)).await;

    assert_eq!(own["partner_id"], org.p1);
    assert_eq!(own["payroll_policy"]["pension_rate"], "0.08");
    assert_eq!(own["payroll_policy"]["four_eyes"], true);
    other.expect_no_such("partner_id");
});

e2e!(tenant_credit_codes_are_checked_and_unique, |app| {
    let admin = app.admin_token().await;
    app.post("/api/v1/tenants", json!({"name": "Bad", "credit_code": "91350100M000100Y44"}), Some(&admin))
        .await
        .expect_field_error("credit_code");
    app.create("/api/v1/tenants", json!({"name": "A", "credit_code": "91110000717825836N"}), &admin).await;
    app.post("/api/v1/tenants", json!({"name": "B", "credit_code": "91110000717825836N"}), Some(&admin)).await.expect(409);
});

e2e!(a_tenant_with_employees_is_deleted_only_with_cascade, |app| {
    let org = app.org().await;
    employee(app, &org.t1_admin, json!({"name": "Wang", "base_salary": 1_000_000})).await;

    app.delete(&format!("/api/v1/tenants/{}", org.t1), Some(&org.p1_admin)).await.expect(409);
    app.delete(&format!("/api/v1/tenants/{}", org.t1), Some(&org.t1_admin)).await.expect(403);
    app.delete(&format!("/api/v1/tenants/{}?cascade=true", org.t1), Some(&org.p1_admin)).await.expect(200);

    app.get("/api/v1/auth/me", Some(&org.t1_admin)).await.expect(401);
});

e2e!(a_pending_tenant_is_activated_by_its_partner_not_by_itself, |app| {
    let org = app.org().await;
    let t = app.create("/api/v1/tenants", json!({"name": "New Co", "status": "pending"}), &org.p1_admin).await;
    let (_, own_admin) = app.user_token(&org.p1_admin, "newadmin", json!({"tenant_id": id(&t), "role_ids": [TENANT_ADMIN]})).await;

    app.put(&format!("/api/v1/tenants/{}", id(&t)), json!({"status": "active"}), Some(&own_admin)).await.expect(403);
    let r = app.put(&format!("/api/v1/tenants/{}", id(&t)), json!({"status": "active"}), Some(&org.p1_admin)).await;

    r.expect(200);
    assert_eq!(r.data()["status"], "active");
});

e2e!(a_tenant_payroll_policy_is_validated, |app| {
    let admin = app.admin_token().await;
    let t = app.create("/api/v1/tenants", json!({"name": "Policy Co"}), &admin).await;
    let mut policy = t["payroll_policy"].clone();
    policy["si_base_floor"] = json!(999_999_999);

    let r = app.put(&format!("/api/v1/tenants/{}", id(&t)), json!({"payroll_policy": policy}), Some(&admin)).await;

    r.expect(400);
    let bad_rate = app.put(&format!("/api/v1/tenants/{}", id(&t)), json!({"payroll_policy": {"pension_rate": "1.5"}}), Some(&admin)).await;
    bad_rate.expect(400);
});

// ----- employees ------------------------------------------------------------------------

e2e!(employees_are_created_and_sensitive_numbers_masked_without_the_permission, |app| {
    let org = app.org().await;
    let e = employee(
        app,
        &org.t1_admin,
        json!({"name": "Zhang San", "base_salary": 1_200_000, "employee_no": "E001", "id_card_no": "11010519491231002x",
               "bank_account": "6222 0212 3456 7890", "hire_date": "2024-03-01", "housing_fund_rate": "0.07",
               "special_deductions": [{"kind": "children_education", "monthly_amount": 200000, "from": "2025-01"}]}),
    )
    .await;
    assert_eq!(e["tenant_id"], org.t1);
    assert_eq!(e["id_card_no"], "11010519491231002X", "tenant admins hold employee:read_sensitive");

    let as_clerk = app.get(&format!("/api/v1/employees/{}", id(&e)), Some(&org.t1_clerk)).await;

    as_clerk.expect(200);
    assert_eq!(as_clerk.data()["id_card_no"], "110105********002X");
    assert_eq!(as_clerk.data()["bank_account"], "************7890");
    assert_eq!(as_clerk.data()["housing_fund_rate"], "0.07");
    assert_eq!(as_clerk.data()["special_deductions"][0]["kind"], "children_education");
});

e2e!(employee_validation_names_the_field, |app| {
    let org = app.org().await;
    let post = |body: Value| app.post("/api/v1/employees", body, Some(&org.t1_admin));
    post(json!({"name": "A", "base_salary": 100, "id_card_no": "110105194912310021"})).await.expect_field_error("id_card_no");
    post(json!({"name": "A", "base_salary": -1})).await.expect_field_error("base_salary");
    post(json!({"name": "A", "base_salary": "lots"})).await.expect_field_error("base_salary");
    post(json!({"name": "A", "base_salary": 100, "housing_fund_rate": "0.2"})).await.expect_field_error("housing_fund_rate");
    post(json!({"name": "A", "base_salary": 100, "hire_date": "2024-02-30"})).await.expect_field_error("hire_date");
    post(json!({"name": "A", "base_salary": 100, "tenant_id": org.t2})).await.expect_no_such("tenant_id");
    post(json!({"base_salary": 100})).await.expect_field_error("name");
    app.post("/api/v1/employees", json!({"name": "A", "base_salary": 100}), Some(&org.admin)).await.expect_field_error("tenant_id");
});

e2e!(duplicate_employee_numbers_and_id_cards_in_a_tenant_are_409, |app| {
    let org = app.org().await;
    employee(app, &org.t1_admin, json!({"name": "A", "base_salary": 1, "employee_no": "E1", "id_card_no": "110101199003074514"})).await;

    app.post("/api/v1/employees", json!({"name": "B", "base_salary": 1, "employee_no": "E1"}), Some(&org.t1_admin)).await.expect(409);
    app.post("/api/v1/employees", json!({"name": "C", "base_salary": 1, "id_card_no": "110101199003074514"}), Some(&org.t1_admin))
        .await
        .expect(409);
    // Another tenant may reuse both.
    employee(app, &org.t2_admin, json!({"name": "D", "base_salary": 1, "employee_no": "E1", "id_card_no": "110101199003074514"})).await;
});

e2e!(employee_lists_page_filter_search_and_sort, |app| {
    let org = app.org().await;
    for i in 0..25 {
        let dept = if i % 2 == 0 { "Sales" } else { "R&D" };
        employee(
            app,
            &org.t1_admin,
            json!({"name": format!("Worker {i:02}"), "base_salary": 100 + i, "employee_no": format!("N{i:03}"), "department": dept}),
        )
        .await;
    }
    employee(app, &org.t1_admin, json!({"name": "100%_literal", "base_salary": 1})).await;

    let page2 = app.get("/api/v1/employees?page=2&page_size=10&sort=name", Some(&org.t1_admin)).await;
    let sales = app.get("/api/v1/employees?department=Sales", Some(&org.t1_admin)).await;
    let search = app.get("/api/v1/employees?keyword=n01", Some(&org.t1_admin)).await;
    let literal = app.get("/api/v1/employees?keyword=%25_", Some(&org.t1_admin)).await;

    page2.expect(200);
    assert_eq!(page2.data()["total"], 26);
    assert_eq!(page2.data()["items"].as_array().unwrap().len(), 10);
    assert_eq!(page2.data()["items"][0]["name"], "Worker 09");
    assert_eq!(sales.data()["total"], 13);
    assert_eq!(search.data()["total"], 10, "N010..N019 match n01");
    assert_eq!(literal.data()["total"], 1, "LIKE wildcards in a keyword are literal");
    app.get("/api/v1/employees?page_size=101", Some(&org.t1_admin)).await.expect_field_error("page_size");
    app.get("/api/v1/employees?sort=salary", Some(&org.t1_admin)).await.expect_field_error("sort");
    app.get("/api/v1/employees?bogus=1", Some(&org.t1_admin)).await.expect(400);
});

e2e!(employees_are_updated_partially_and_deleted, |app| {
    let org = app.org().await;
    let e = employee(app, &org.t1_admin, json!({"name": "A", "base_salary": 100, "phone": "13800138000"})).await;

    let upd = app
        .put(&format!("/api/v1/employees/{}", id(&e)), json!({"base_salary": 200, "phone": null, "status": "left"}), Some(&org.t1_admin))
        .await;
    upd.expect(200);
    assert_eq!(
        (upd.data()["base_salary"].as_i64(), upd.data()["phone"].is_null(), upd.data()["status"].as_str()),
        (Some(200), true, Some("left"))
    );
    assert_eq!(upd.data()["name"], "A");
    app.put(&format!("/api/v1/employees/{}", id(&e)), json!({"tenant_id": org.t2}), Some(&org.t1_admin))
        .await
        .expect_field_error("tenant_id");

    app.delete(&format!("/api/v1/employees/{}", id(&e)), Some(&org.t1_clerk)).await.expect(403);
    app.delete(&format!("/api/v1/employees/{}", id(&e)), Some(&org.t1_admin)).await.expect(200);
    app.get(&format!("/api/v1/employees/{}", id(&e)), Some(&org.t1_admin)).await.expect(404);
});

// ----- users ----------------------------------------------------------------------------

e2e!(users_are_created_with_roles_and_their_party, |app| {
    let org = app.org().await;

    let u = app
        .create(
            "/api/v1/users",
            json!({"username": "Clerk2", "password": "clerk-pass-1", "name": "Clerk", "role_ids": [PAYROLL_CLERK]}),
            &org.t1_admin,
        )
        .await;

    assert_eq!(u["username"], "clerk2");
    assert_eq!(u["party"], json!({"type": "tenant", "id": org.t1}));
    assert_eq!(u["tenant_id"], org.t1);
    assert_eq!(u["roles"][0]["code"], "payroll_clerk");
    assert!(u.get("password").is_none() && u.get("password_hash").is_none());
    app.login("clerk2", "clerk-pass-1").await;
});

e2e!(user_validation_and_conflicts, |app| {
    let org = app.org().await;
    let post = |body: Value| app.post("/api/v1/users", body, Some(&org.t1_admin));
    post(json!({"username": "ab", "password": "good-pass-1", "name": "x"})).await.expect_field_error("username");
    post(json!({"username": "abc", "password": "short", "name": "x"})).await.expect_field_error("password");
    // Role 1 (platform_admin) is not among the roles a tenant admin can see.
    post(json!({"username": "abc", "password": "good-pass-1", "name": "x", "role_ids": [1]})).await.expect_no_such("role_ids");
    post(json!({"username": "abc", "password": "good-pass-1", "name": "x", "tenant_id": org.t2})).await.expect_no_such("tenant_id");
    post(json!({"username": "t1admin", "password": "good-pass-1", "name": "x"})).await.expect(409);
});

e2e!(nobody_grants_a_role_with_permissions_it_lacks, |app| {
    let org = app.org().await;
    // A platform-made tenant role that also reads partners: tenant admins lack agent:read.
    let role = app
        .create(
            "/api/v1/roles",
            json!({"code": "auditor", "name": "Auditor", "party_type": "tenant", "permissions": ["agent:read", "employee:read"]}),
            &org.admin,
        )
        .await;

    let r = app
        .post(
            "/api/v1/users",
            json!({"username": "sneaky", "password": "good-pass-1", "name": "x", "role_ids": [id(&role)]}),
            Some(&org.t1_admin),
        )
        .await;
    let clerk = app.post("/api/v1/users", json!({"username": "sneaky", "password": "good-pass-1", "name": "x"}), Some(&org.t1_clerk)).await;
    let custom = app
        .post(
            "/api/v1/roles",
            json!({"code": "x", "name": "X", "party_type": "tenant", "permissions": ["agent:read"]}),
            Some(&org.t1_admin),
        )
        .await;

    r.expect(403);
    clerk.expect(403);
    custom.expect(403);
});

e2e!(a_disabled_or_deleted_user_is_refused_at_once, |app| {
    let org = app.org().await;
    let (uid, token) = app.user_token(&org.t1_admin, "victim", json!({"role_ids": [PAYROLL_CLERK]})).await;
    let (uid2, token2) = app.user_token(&org.t1_admin, "victim2", json!({"role_ids": [PAYROLL_CLERK]})).await;
    app.get("/api/v1/auth/me", Some(&token)).await.expect(200);
    app.get("/api/v1/auth/me", Some(&token2)).await.expect(200);

    app.put(&format!("/api/v1/users/{uid}"), json!({"status": "disabled"}), Some(&org.t1_admin)).await.expect(200);
    app.delete(&format!("/api/v1/users/{uid2}"), Some(&org.t1_admin)).await.expect(200);

    app.get("/api/v1/auth/me", Some(&token)).await.expect(401);
    app.get("/api/v1/auth/me", Some(&token2)).await.expect(401);
    app.post("/api/v1/auth/login", json!({"method": "password", "username": "victim", "password": "user-pass-123"}), None)
        .await
        .expect(401);
});

e2e!(a_role_change_takes_effect_on_the_next_request, |app| {
    let org = app.org().await;
    let (uid, token) = app.user_token(&org.t1_admin, "mover", json!({"role_ids": [PAYROLL_CLERK]})).await;
    app.get("/api/v1/employees", Some(&token)).await.expect(200);

    app.put(&format!("/api/v1/users/{uid}"), json!({"role_ids": []}), Some(&org.t1_admin)).await.expect(200);

    app.get("/api/v1/employees", Some(&token)).await.expect(403);
});

e2e!(a_password_set_by_an_admin_ends_the_users_sessions, |app| {
    let org = app.org().await;
    let (uid, token) = app.user_token(&org.t1_admin, "forgetful", json!({})).await;

    app.put(&format!("/api/v1/users/{uid}"), json!({"password": "new-pass-456"}), Some(&org.t1_admin)).await.expect(200);

    app.get("/api/v1/auth/me", Some(&token)).await.expect(401);
    app.login("forgetful", "new-pass-456").await;
});

e2e!(deleting_or_disabling_yourself_is_refused, |app| {
    let org = app.org().await;
    app.delete(&format!("/api/v1/users/{}", org.t1_admin_id), Some(&org.t1_admin)).await.expect(409);
    app.put(&format!("/api/v1/users/{}", org.t1_admin_id), json!({"status": "disabled"}), Some(&org.t1_admin)).await.expect(409);
});

e2e!(a_user_cannot_manage_a_more_privileged_user, |app| {
    let org = app.org().await;
    // A tenant user who may update users but holds little else.
    let role = app
        .create(
            "/api/v1/roles",
            json!({"code": "hr", "name": "HR", "party_type": "tenant", "permissions": ["user:read", "user:update"]}),
            &org.t1_admin,
        )
        .await;
    let (_, hr) = app.user_token(&org.t1_admin, "hr1", json!({"role_ids": [id(&role)]})).await;

    app.put(&format!("/api/v1/users/{}", org.t1_admin_id), json!({"status": "disabled"}), Some(&hr)).await.expect(403);
});

// ----- the scope matrix -----------------------------------------------------------------

/// Everything a caller of another party tries on a record answers 404 and changes nothing.
async fn out_of_reach(app: &TestApp, token: &str, collection: &str, id: i64, patch: Value) {
    out_of_reach_but(app, token, collection, id, patch, 404).await;
}

/// As [`out_of_reach`], for a caller whose role lacks the delete permission (403 first).
async fn out_of_reach_but(app: &TestApp, token: &str, collection: &str, id: i64, patch: Value, delete_status: u16) {
    let list = app.get(collection, Some(token)).await;
    list.expect(200);
    assert!(!list.data()["items"].as_array().unwrap().iter().any(|i| i["id"] == id), "{collection} lists a foreign record");
    let one = format!("{collection}/{id}");
    app.get(&one, Some(token)).await.expect(404);
    app.put(&one, patch, Some(token)).await.expect(404);
    app.delete(&one, Some(token)).await.expect(delete_status);
}

e2e!(another_tenant_can_neither_list_read_update_nor_delete, |app| {
    let org = app.org().await;
    let e = employee(app, &org.t1_admin, json!({"name": "Mine", "base_salary": 1})).await;
    let (uid, _) = app.user_token(&org.t1_admin, "t1user", json!({})).await;

    out_of_reach(app, &org.t2_admin, "/api/v1/employees", id(&e), json!({"name": "Hacked"})).await;
    out_of_reach(app, &org.t2_admin, "/api/v1/users", uid, json!({"name": "Hacked"})).await;
    // Tenant admins may not delete tenants at all: refused before scope is consulted.
    out_of_reach_but(app, &org.t2_admin, "/api/v1/tenants", org.t1, json!({"name": "Hacked"}), 403).await;

    let still = app.get(&format!("/api/v1/employees/{}", id(&e)), Some(&org.t1_admin)).await;
    assert_eq!(still.data()["name"], "Mine");
});

e2e!(another_partner_can_neither_list_read_update_nor_delete, |app| {
    let org = app.org().await;
    let e = employee(app, &org.t1_admin, json!({"name": "Mine", "base_salary": 1})).await;
    let (uid, _) = app.user_token(&org.p1_admin, "p1user", json!({})).await;

    out_of_reach(app, &org.p2_admin, "/api/v1/employees", id(&e), json!({"name": "Hacked"})).await;
    out_of_reach(app, &org.p2_admin, "/api/v1/users", uid, json!({"name": "Hacked"})).await;
    out_of_reach(app, &org.p2_admin, "/api/v1/tenants", org.t1, json!({"name": "Hacked"})).await;
    // Partner admins may not delete partners at all: refused before scope is consulted.
    out_of_reach_but(app, &org.p2_admin, "/api/v1/partners", org.p1, json!({"name": "Hacked"}), 403).await;
});

e2e!(a_partner_sees_its_tenants_and_their_employees, |app| {
    let org = app.org().await;
    let e = employee(app, &org.t1_admin, json!({"name": "Visible", "base_salary": 1})).await;

    let tenants = app.get("/api/v1/tenants", Some(&org.p1_admin)).await;
    let emps = app.get("/api/v1/employees", Some(&org.p1_admin)).await;
    let users = app.get("/api/v1/users", Some(&org.p1_admin)).await;

    assert_eq!(tenants.data()["total"], 1);
    assert_eq!(emps.data()["items"][0]["id"], id(&e));
    let names: Vec<&str> = users.data()["items"].as_array().unwrap().iter().map(|u| u["username"].as_str().unwrap()).collect();
    assert!(names.contains(&"t1admin") && names.contains(&"p1admin"));
    assert!(!names.contains(&"t2admin") && !names.contains(&"admin"));
});

e2e!(a_tenant_user_sees_only_its_own_tenant, |app| {
    let org = app.org().await;
    let tenants = app.get("/api/v1/tenants", Some(&org.t1_admin)).await;
    assert_eq!(tenants.data()["total"], 1);
    assert_eq!(tenants.data()["items"][0]["id"], org.t1);
    app.get(&format!("/api/v1/tenants/{}", org.t2), Some(&org.t1_admin)).await.expect(404);
});

// ----- roles ----------------------------------------------------------------------------

e2e!(roles_list_the_builtins_a_tenant_can_hand_out_and_the_catalogue, |app| {
    let org = app.org().await;
    let roles = app.get("/api/v1/roles", Some(&org.t1_admin)).await;
    let codes: Vec<&str> = roles.data()["items"].as_array().unwrap().iter().map(|r| r["code"].as_str().unwrap()).collect();
    assert_eq!(codes, vec!["tenant_admin", "payroll_clerk", "payroll_approver", "finance", "viewer"]);
    let all = app.get("/api/v1/roles", Some(&org.admin)).await;
    assert!(all.data()["items"].as_array().unwrap().iter().any(|r| r["code"] == "platform_admin" && r["permissions"] == json!(["*"])));
    let catalogue = app.get("/api/v1/roles/permissions", Some(&org.t1_admin)).await;
    assert!(catalogue.data().as_array().unwrap().iter().any(|p| p["name"] == "payroll:approve"));
});

e2e!(custom_roles_are_created_updated_and_deleted_by_their_owner, |app| {
    let org = app.org().await;
    let role = app
        .create(
            "/api/v1/roles",
            json!({"code": "reader", "name": "Reader", "party_type": "tenant", "permissions": ["employee:read"]}),
            &org.t1_admin,
        )
        .await;
    assert_eq!(role["owner_tenant_id"], org.t1);

    app.put(&format!("/api/v1/roles/{}", id(&role)), json!({"permissions": ["employee:read", "payroll:read"]}), Some(&org.t1_admin))
        .await
        .expect(200);
    let read_back = app.get(&format!("/api/v1/roles/{}", id(&role)), Some(&org.t1_admin)).await;
    read_back.expect(200);
    assert_eq!(read_back.data()["permissions"], json!(["employee:read", "payroll:read"]));
    app.get(&format!("/api/v1/roles/{}", id(&role)), Some(&org.t2_admin)).await.expect(404);
    app.put(&format!("/api/v1/roles/{TENANT_ADMIN}"), json!({"name": "Boss"}), Some(&org.t1_admin)).await.expect(409);
    app.post("/api/v1/roles", json!({"code": "reader", "name": "Again", "party_type": "tenant", "permissions": []}), Some(&org.t1_admin))
        .await
        .expect(409);
    app.post(
        "/api/v1/roles",
        json!({"code": "r", "name": "R", "party_type": "tenant", "permissions": ["payroll:steal"]}),
        Some(&org.t1_admin),
    )
    .await
    .expect_field_error("permissions[0]");

    let (holder, _) = app.user_token(&org.t1_admin, "holder", json!({"role_ids": [id(&role)]})).await;
    app.delete(&format!("/api/v1/roles/{}", id(&role)), Some(&org.t1_admin)).await.expect(409);
    app.delete(&format!("/api/v1/roles/{}", id(&role)), Some(&org.t2_admin)).await.expect(404);

    app.put(&format!("/api/v1/users/{holder}"), json!({"role_ids": []}), Some(&org.t1_admin)).await.expect(200);
    app.delete(&format!("/api/v1/roles/{}", id(&role)), Some(&org.t1_admin)).await.expect(200);
    app.get(&format!("/api/v1/roles/{}", id(&role)), Some(&org.t1_admin)).await.expect(404);
});

// ----- audit ----------------------------------------------------------------------------

e2e!(every_change_is_audited_with_who_where_and_what, |app| {
    let org = app.org().await;
    let r = app
        .send(
            app.client
                .post(app.url("/api/v1/employees"))
                .bearer_auth(&org.t1_admin)
                .header("x-request-id", "req-audit-1")
                .json(&json!({"name": "Audited", "base_salary": 500, "id_card_no": "110101199003074514"})),
        )
        .await;
    r.expect(200);
    let eid = id(r.data());
    app.put(&format!("/api/v1/employees/{eid}"), json!({"base_salary": 600}), Some(&org.t1_admin)).await.expect(200);

    let log = app.get(&format!("/api/v1/audit-logs?target_type=employee&target_id={eid}"), Some(&org.t1_admin)).await;

    log.expect(200);
    let items = log.data()["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    let (update, create) = (&items[0], &items[1]);
    assert_eq!(update["action"], "employee.update");
    assert_eq!(update["before"], json!({"base_salary": 500}));
    assert_eq!(update["after"], json!({"base_salary": 600}));
    assert_eq!(create["action"], "employee.create");
    assert_eq!(create["request_id"], "req-audit-1");
    assert_eq!(create["actor_user_id"], org.t1_admin_id);
    assert_eq!(create["ip"], "127.0.0.1");
    assert_eq!(create["after"]["id_card_no"], "***", "secrets never reach the audit trail");
    assert_eq!(create["after"]["id"], eid);
});

e2e!(the_audit_trail_is_scoped_and_read_only, |app| {
    let org = app.org().await;
    employee(app, &org.t1_admin, json!({"name": "T1 only", "base_salary": 1})).await;

    let t2 = app.get("/api/v1/audit-logs?target_type=employee", Some(&org.t2_admin)).await;
    let p1 = app.get("/api/v1/audit-logs?target_type=employee", Some(&org.p1_admin)).await;

    assert_eq!(t2.data()["total"], 0);
    assert_eq!(p1.data()["total"], 1);
    app.get("/api/v1/audit-logs", Some(&org.t1_clerk)).await.expect(403);
    app.delete("/api/v1/audit-logs", Some(&org.admin)).await.expect(405);
});

e2e!(identity_events_are_audited_too, |app| {
    let org = app.org().await;
    let (uid, token) = app.user_token(&org.t1_admin, "someone", json!({})).await;
    app.post("/api/v1/auth/logout", json!({}), Some(&token)).await.expect(200);
    for _ in 0..5 {
        app.post("/api/v1/auth/login", json!({"method": "password", "username": "someone", "password": "wrong-password"}), None).await;
    }

    let log = app.get(&format!("/api/v1/audit-logs?target_type=user&target_id={uid}"), Some(&org.t1_admin)).await;

    let actions: Vec<&str> = log.data()["items"].as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert_eq!(actions, vec!["user.locked", "session.logout", "session.login", "user.create"]);
    let login = &log.data()["items"][2];
    assert_eq!(login["actor_user_id"], uid);
    assert_eq!(login["after"]["method"], "password");
    assert_eq!(login["tenant_id"], org.t1);
});
