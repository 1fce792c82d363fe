//! Penetration-test findings on org and payroll, each pinned by a test: keyword search never
//! answers 5xx, money is bounded and never saturates, a tenant cannot switch off its own
//! four-eyes rule, and the audit trail shows no more than the audited record would.
#![allow(clippy::unwrap_used)]
use atrium_e2e::serde_json::{Value, json};
use atrium_e2e::{Org, Resp, TestApp, e2e};

fn id(v: &Value) -> i64 {
    v["id"].as_i64().unwrap()
}

/// Percent-encodes every byte outside the unreserved set, so the server decodes `s` exactly.
fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| if b.is_ascii_alphanumeric() || b"-._~".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

// ----- 4: keyword search --------------------------------------------------------------------

e2e!(keyword_search_never_answers_5xx_whatever_the_keyword, |app| {
    let org = app.org().await;
    let e1 = app
        .create("/api/v1/employees", json!({"name": "O\"Neil NEAR(x) *star* back\\slash 50%_off", "base_salary": 1}), &org.t1_admin)
        .await;
    app.create("/api/v1/employees", json!({"name": "Other tenant", "base_salary": 1}), &org.t2_admin).await;

    let control = ["\u{0}abc", "abc\u{0}", "ab\u{1}c", "a\tb", "ab\u{1f}c", "abc\u{7f}", "ab\u{85}c", "ab\u{9f}c"];
    let long = "x".repeat(200);
    let literal = [
        "\"",
        "\"\"",
        "\"abc\"",
        "a\"b",
        "*",
        "abc*",
        "OR",
        "abc OR def",
        "NEAR(",
        "NEAR(abc def)",
        "^abc",
        "col:abc",
        "\\",
        "\\\\",
        "%",
        "_",
        "%_%",
        "'",
        "'; --",
        "(",
        ")",
        "+abc",
    ];
    let lists = ["/api/v1/employees", "/api/v1/partners", "/api/v1/tenants", "/api/v1/users", "/api/v1/payroll-sheets"];
    for caller in [&org.admin, &org.p1_admin] {
        for list in lists {
            for k in control {
                let r = app.get(&format!("{list}?keyword={}", enc(k)), Some(caller)).await;
                r.expect_field_error("keyword");
            }
            app.get(&format!("{list}?keyword={}", enc(&long)), Some(caller)).await.expect_field_error("keyword");
            for k in literal {
                let r = app.get(&format!("{list}?keyword={}", enc(k)), Some(caller)).await;
                assert_eq!(r.status, 200, "{list} keyword {k:?}: {}", r.body);
            }
        }
    }

    // Operators and quotes are plain text, across tenants (the trigram path) and within one.
    for (caller, extra) in [(&org.admin, String::new()), (&org.p1_admin, String::new()), (&org.admin, format!("&tenant_id={}", org.t1))] {
        for k in ["near(x)", "o\"neil", "*star*", "back\\slash", "50%_", "%x_"] {
            let r = app.get(&format!("/api/v1/employees?keyword={}{extra}", enc(k)), Some(caller)).await;
            r.expect(200);
            let ids: Vec<i64> = r.data()["items"].as_array().unwrap().iter().map(id).collect();
            let expected = if k == "%x_" { vec![] } else { vec![id(&e1)] };
            assert_eq!(ids, expected, "keyword {k:?}{extra}");
        }
    }
});

// ----- 5: money bounds ----------------------------------------------------------------------

/// The largest amount a caller may enter, in fen.
const MAX: i64 = 1_000_000_000_000;

e2e!(money_above_the_bound_is_refused_naming_the_field, |app| {
    let org = app.org().await;
    let post = |body: Value| app.post("/api/v1/employees", body, Some(&org.t1_admin));

    post(json!({"name": "Rich", "base_salary": i64::MAX})).await.expect_field_error("base_salary");
    post(json!({"name": "Rich", "base_salary": MAX + 1})).await.expect_field_error("base_salary");
    post(json!({"name": "Rich", "base_salary": 1, "si_base": i64::MAX})).await.expect_field_error("si_base");
    post(json!({"name": "Rich", "base_salary": 1,
        "special_deductions": [{"kind": "housing_rent", "monthly_amount": i64::MAX, "from": "2026-01"}]}))
    .await
    .expect_field_error("special_deductions[0].monthly_amount");
    let none = app.get("/api/v1/employees?keyword=rich", Some(&org.t1_admin)).await;
    assert_eq!(none.data()["total"], 0, "nothing was stored");

    let e = app.create("/api/v1/employees", json!({"name": "Capped", "base_salary": MAX}), &org.t1_admin).await;
    assert_eq!(e["base_salary"], MAX);
    let path = format!("/api/v1/employees/{}", id(&e));
    app.put(&path, json!({"base_salary": i64::MAX}), Some(&org.t1_admin)).await.expect_field_error("base_salary");
    app.put(&path, json!({"si_base": MAX + 1}), Some(&org.t1_admin)).await.expect_field_error("si_base");

    for field in ["allowance", "overtime", "bonus", "leave_deduction", "other_pre_tax_deduction", "after_tax_deduction", "annual_bonus"] {
        let mut item = json!({"employee_id": id(&e)});
        item[field] = json!(i64::MAX);
        let r = app.post("/api/v1/payroll-sheets", json!({"period": "2026-01", "items": [item]}), Some(&org.t1_admin)).await;
        r.expect_field_error(&format!("items[0].{field}"));
    }

    let mut policy = json!({"si_base_floor": 0, "si_base_cap": MAX, "hf_base_floor": 0, "hf_base_cap": MAX,
        "medical_fixed": 0, "pension_rate": "0.08", "medical_rate": "0.02", "unemployment_rate": "0"});
    for field in ["si_base_floor", "si_base_cap", "hf_base_floor", "hf_base_cap", "medical_fixed"] {
        let mut p = policy.clone();
        p[field] = json!(i64::MAX);
        let r = app.put(&format!("/api/v1/tenants/{}", org.t1), json!({"payroll_policy": p}), Some(&org.admin)).await;
        r.expect_field_error(&format!("payroll_policy.{field}"));
    }
    policy["si_base_cap"] = json!(MAX);
    app.put(&format!("/api/v1/tenants/{}", org.t1), json!({"payroll_policy": policy}), Some(&org.admin)).await.expect(200);
});

e2e!(money_at_the_bound_calculates_exactly_and_the_totals_add_up, |app| {
    let org = app.org().await;
    let policy = json!({"si_base_floor": 0, "si_base_cap": MAX, "hf_base_floor": 0, "hf_base_cap": MAX, "medical_fixed": 300,
        "pension_rate": "0.08", "medical_rate": "0.02", "unemployment_rate": "0.005", "four_eyes": true});
    app.put(&format!("/api/v1/tenants/{}", org.t1), json!({"payroll_policy": policy}), Some(&org.admin)).await.expect(200);
    let emp = |name: &str| {
        let body = json!({"name": name, "base_salary": MAX, "si_base": MAX, "housing_fund_rate": "0.12",
            "special_deductions": [{"kind": "housing_loan", "monthly_amount": MAX, "from": "2026-01"}]});
        let token = org.t1_admin.clone();
        async move { id(&app.create("/api/v1/employees", body, &token).await) }
    };
    let (a, b) = (emp("A").await, emp("B").await);
    let items = json!([
        {"employee_id": a, "allowance": MAX, "overtime": MAX, "bonus": MAX, "leave_deduction": MAX,
         "other_pre_tax_deduction": MAX, "after_tax_deduction": MAX, "annual_bonus": MAX},
        {"employee_id": b}
    ]);
    let sheet = app.create("/api/v1/payroll-sheets", json!({"period": "2026-01", "items": items}), &org.t1_admin).await;

    let calc = app.post(&format!("/api/v1/payroll-sheets/{}/calculate", id(&sheet)), json!({}), Some(&org.t1_admin)).await;

    calc.expect(200);
    let lines = calc.data()["items"].as_array().unwrap();
    let line = |e: i64| lines.iter().find(|i| i["employee_id"] == e).unwrap();
    let fen = |v: &Value| v.as_i64().unwrap();
    // Contributions on a 10^12 base: 8 % + 2 % + 3.00 + 0.5 % + 12 %.
    assert_eq!(line(a)["contributions"], 225_000_000_300_i64);
    assert_eq!(line(a)["gross"], 3 * MAX);
    // Taxable: 3 × 10^12 − 5,000.00 − contributions − 10^12 other − 10^12 special → 45 % − 181,920.00.
    let taxable = 3 * MAX - 500_000 - 225_000_000_300 - MAX - MAX;
    assert_eq!(line(a)["cumulative_taxable"], taxable);
    assert_eq!(line(a)["tax"], (taxable * 45 + 50) / 100 - 18_192_000);
    // Annual bonus: 10^12 / 12 is in the top monthly row: 45 % − 15,160.00.
    assert_eq!(line(a)["annual_bonus_tax"], MAX / 100 * 45 - 1_516_000);
    for l in lines {
        let expected = fen(&l["gross"]) - fen(&l["contributions"]) - fen(&l["tax"]) - fen(&l["after_tax_deduction"])
            + fen(&l["annual_bonus"])
            - fen(&l["annual_bonus_tax"]);
        assert_eq!(fen(&l["net_pay"]), expected, "{l}");
        assert!(fen(&l["net_pay"]) > 0, "{l}");
    }
    let totals = &calc.data()["totals"];
    let total = |f: &dyn Fn(&Value) -> i64| lines.iter().map(f).sum::<i64>();
    assert_eq!(fen(&totals["gross"]), total(&|l| fen(&l["gross"])));
    assert_eq!(fen(&totals["contributions"]), total(&|l| fen(&l["contributions"])));
    assert_eq!(fen(&totals["tax"]), total(&|l| fen(&l["tax"]) + fen(&l["annual_bonus_tax"])));
    assert_eq!(fen(&totals["net_pay"]), total(&|l| fen(&l["net_pay"])));
    let stored = app.get(&format!("/api/v1/payroll-sheets/{}", id(&sheet)), Some(&org.t1_admin)).await;
    assert_eq!(&stored.data()["totals"], totals, "the stored figures read back unchanged");
});

// ----- 6: four-eyes -------------------------------------------------------------------------

fn four_eyes_policy(on: bool) -> Value {
    json!({"si_base_floor": 716200, "si_base_cap": 3581100, "hf_base_floor": 716200, "hf_base_cap": 3581100,
           "medical_fixed": 300, "pension_rate": "0.08", "medical_rate": "0.02", "unemployment_rate": "0.005", "four_eyes": on})
}

async fn put_policy(app: &TestApp, org: &Org, on: bool, token: &str) -> Resp {
    app.put(&format!("/api/v1/tenants/{}", org.t1), json!({"payroll_policy": four_eyes_policy(on)}), Some(token)).await
}

e2e!(a_tenant_cannot_switch_off_its_own_four_eyes_rule_but_its_partner_can, |app| {
    let org = app.org().await;
    app.create("/api/v1/employees", json!({"name": "Paid", "base_salary": 1_000_000}), &org.t1_admin).await;

    let refused = put_policy(app, &org, false, &org.t1_admin).await;

    refused.expect(403);
    let tenant = app.get(&format!("/api/v1/tenants/{}", org.t1), Some(&org.t1_admin)).await;
    assert_eq!(tenant.data()["payroll_policy"]["four_eyes"], true);
    // Still bound: the tenant admin cannot calculate and approve alone.
    let sheet = app.create("/api/v1/payroll-sheets", json!({"period": "2026-02"}), &org.t1_admin).await;
    let path = format!("/api/v1/payroll-sheets/{}", id(&sheet));
    app.post(&format!("{path}/calculate"), json!({}), Some(&org.t1_admin)).await.expect(200);
    app.post(&format!("{path}/approve"), json!({}), Some(&org.t1_admin)).await.expect(403);
    // Keeping it on is the tenant's to say.
    put_policy(app, &org, true, &org.t1_admin).await.expect(200);

    let relaxed = put_policy(app, &org, false, &org.p1_admin).await;

    relaxed.expect(200);
    assert_eq!(relaxed.data()["payroll_policy"]["four_eyes"], false);
    let log = app.get(&format!("/api/v1/audit-logs?target_type=tenant&target_id={}", org.t1), Some(&org.p1_admin)).await;
    log.expect(200);
    let change = &log.data()["items"][0];
    assert_eq!(change["action"], "tenant.update");
    assert_eq!(change["before"]["payroll_policy"]["four_eyes"], true, "{change}");
    assert_eq!(change["after"]["payroll_policy"]["four_eyes"], false, "{change}");
    // Once relaxed by the partner, the tenant may leave it off when editing the policy.
    put_policy(app, &org, false, &org.t1_admin).await.expect(200);
    app.post(&format!("{path}/approve"), json!({}), Some(&org.t1_admin)).await.expect(200);
});

// ----- 8: audit visibility ------------------------------------------------------------------

/// A tenant user of t1 holding exactly `permissions` through a custom role.
async fn holder(app: &TestApp, org: &Org, code: &str, permissions: &[&str]) -> String {
    let role = app
        .create("/api/v1/roles", json!({"code": code, "name": code, "party_type": "tenant", "permissions": permissions}), &org.t1_admin)
        .await;
    app.user_token(&org.t1_admin, code, json!({"role_ids": [id(&role)]})).await.1
}

e2e!(the_audit_trail_shows_no_more_of_a_record_than_the_record_itself, |app| {
    let org = app.org().await;
    let e = app
        .create(
            "/api/v1/employees",
            json!({"name": "Secretive", "base_salary": 4_321_987, "phone": "13812345678", "id_card_no": "110101199003074514",
                   "bank_account": "6222021234567890"}),
            &org.t1_admin,
        )
        .await;
    let path = format!("/api/v1/employees/{}", id(&e));
    app.put(&path, json!({"base_salary": 5_432_198, "phone": "13887654321"}), Some(&org.t1_admin)).await.expect(200);
    let auditor = holder(app, &org, "auditor", &["audit:read"]).await;
    let reader = holder(app, &org, "reader", &["audit:read", "employee:read"]).await;

    app.get(&path, Some(&auditor)).await.expect(403);
    let log = app.get("/api/v1/audit-logs?page_size=100", Some(&auditor)).await;

    log.expect(200);
    let items = log.data()["items"].as_array().unwrap();
    assert!(items.iter().any(|i| i["target_type"] == "employee" && i["action"] == "employee.update"), "who did what stays visible");
    for i in items {
        assert!(i["before"].is_null() && i["after"].is_null(), "audit:read alone reads no values: {i}");
    }
    let update = items.iter().find(|i| i["action"] == "employee.update").unwrap();
    assert_eq!(update["redacted"], true);
    let text = log.body.to_string();
    for secret in ["4321987", "5432198", "13812345678", "13887654321", "110101199003074514", "6222021234567890"] {
        assert!(!text.contains(secret), "{secret} leaked: {text}");
    }

    // A reader of employees sees in the trail what the employee shows, secrets masked.
    let shown = app.get(&format!("/api/v1/audit-logs?target_type=employee&target_id={}", id(&e)), Some(&reader)).await;
    shown.expect(200);
    let (update, create) = (&shown.data()["items"][0], &shown.data()["items"][1]);
    assert_eq!(update["redacted"], false);
    assert_eq!(update["before"]["base_salary"], 4_321_987);
    assert_eq!(update["after"]["phone"], "+8613887654321");
    assert_eq!(create["after"]["id_card_no"], "***");
    // An account shows its last four, as the employee shows it: a change can be told apart.
    assert_eq!(create["after"]["bank_account"], "************7890");
    let employee = app.get(&path, Some(&reader)).await;
    assert_eq!(employee.data()["base_salary"], 5_432_198);
    assert_ne!(employee.data()["id_card_no"], "110101199003074514");
    // Users are another kind of target: the employee reader does not see their values.
    let users = app.get("/api/v1/audit-logs?target_type=user", Some(&reader)).await;
    for i in users.data()["items"].as_array().unwrap() {
        assert!(i["before"].is_null() && i["after"].is_null(), "{i}");
    }
});
