//! Payroll sheets over HTTP: the lifecycle across months, calculation figures, four-eyes
//! approval, pay-slip delivery through the sandbox platform, scope and validation;
//! supplementary sheets, the once-a-year separately taxed bonus and an employee's tax year;
//! sheets as spreadsheet files (import, export, bank file), read back with calamine, csv and
//! encoding_rs.
#![allow(clippy::unwrap_used)]
use atrium_e2e::serde_json::{Value, json};
use atrium_e2e::{Org, TestApp, e2e, join_all};

fn id(v: &Value) -> i64 {
    v["id"].as_i64().unwrap()
}

/// Beijing bases, no unemployment insurance and no fixed medical amount, so contributions
/// are a round 15 % (8 % pension, 2 % medical, 5 % housing fund).
fn policy() -> Value {
    json!({"si_base_floor": 716200, "si_base_cap": 3581100, "hf_base_floor": 716200, "hf_base_cap": 3581100,
           "medical_fixed": 0, "pension_rate": "0.08", "medical_rate": "0.02", "unemployment_rate": "0", "four_eyes": true})
}

struct Staff {
    a: i64,
    b: i64,
    c: i64,
}

/// Three employees of t1: A (10,000/month, child education 1,000, paid by openid),
/// B (30,000/month, deductions 2,000, paid by SMS), C (20,000/month, paid by e-mail).
async fn staff(app: &TestApp, org: &Org) -> Staff {
    app.put(&format!("/api/v1/tenants/{}", org.t1), json!({"payroll_policy": policy()}), Some(&org.admin)).await.expect(200);
    let t1_admin = org.t1_admin.as_str();
    let emp = |body: Value| async move { id(&app.create("/api/v1/employees", body, t1_admin).await) };
    let a = emp(json!({"name": "A", "base_salary": 1_000_000, "housing_fund_rate": "0.05", "openid": "o_payroll_a",
        "special_deductions": [{"kind": "children_education", "monthly_amount": 100_000, "from": "2026-01"}]}))
    .await;
    let b = emp(json!({"name": "B", "base_salary": 3_000_000, "housing_fund_rate": "0.05", "phone": "13900000002",
        "special_deductions": [{"kind": "children_education", "monthly_amount": 200_000, "from": "2026-01"}]}))
    .await;
    let c = emp(json!({"name": "C", "base_salary": 2_000_000, "housing_fund_rate": "0.05", "email": "c@example.cn"})).await;
    Staff { a, b, c }
}

fn item(sheet: &Value, employee: i64) -> &Value {
    sheet["items"].as_array().unwrap().iter().find(|i| i["employee_id"] == employee).unwrap()
}

/// Creates, calculates (as the clerk), approves (as the tenant admin) and sends a month.
async fn run_month(app: &TestApp, org: &Org, period: &str) -> Value {
    let sheet = app.create("/api/v1/payroll-sheets", json!({"period": period}), &org.t1_clerk).await;
    assert_eq!(sheet["status"], "draft");
    let path = format!("/api/v1/payroll-sheets/{}", id(&sheet));
    let calc = app.post(&format!("{path}/calculate"), json!({}), Some(&org.t1_clerk)).await;
    calc.expect(200);
    assert_eq!(calc.data()["status"], "calculated");
    app.post(&format!("{path}/approve"), json!({}), Some(&org.t1_admin)).await.expect(200);
    let sent = app.post(&format!("{path}/send"), json!({}), Some(&org.t1_clerk)).await;
    sent.expect(200);
    assert_eq!(sent.data()["status"], "sent");
    sent.data().clone()
}

e2e!(three_months_of_payroll_withhold_cumulative_tax_and_deliver_pay_slips, |app| {
    let org = app.org().await;
    let s = staff(app, &org).await;

    let jan = run_month(app, &org, "2026-01").await;
    let feb = run_month(app, &org, "2026-02").await;
    // C declares housing rent late, back to January: March catches up all three months.
    app.put(
        &format!("/api/v1/employees/{}", s.c),
        json!({"special_deductions": [{"kind": "housing_rent", "monthly_amount": 150_000, "from": "2026-01"}]}),
        Some(&org.t1_admin),
    )
    .await
    .expect(200);
    let mar = run_month(app, &org, "2026-03").await;

    // 10,000/month with 1,500 contributions and 1,000 deductions → 75.00 each month.
    for sheet in [&jan, &feb, &mar] {
        let a = item(sheet, s.a);
        assert_eq!((a["gross"].as_i64(), a["contributions"].as_i64(), a["tax"].as_i64()), (Some(1_000_000), Some(150_000), Some(7_500)));
        assert_eq!(a["net_pay"], 1_000_000 - 150_000 - 7_500);
    }
    // 30,000/month with 4,500 contributions and 2,000 deductions → 555.00, 625.00, 1,850.00.
    let b_tax: Vec<i64> = [&jan, &feb, &mar].iter().map(|s2| item(s2, s.b)["tax"].as_i64().unwrap()).collect();
    assert_eq!(b_tax, vec![55_500, 62_500, 185_000]);
    assert_eq!(item(&mar, s.b)["cumulative_tax"], 55_500 + 62_500 + 185_000);
    // C: 360.00 twice, then the late rent (3 × 1,500) lowers March's cumulative tax to 945.00.
    let c_tax: Vec<i64> = [&jan, &feb, &mar].iter().map(|s2| item(s2, s.c)["tax"].as_i64().unwrap()).collect();
    assert_eq!(c_tax, vec![36_000, 36_000, 22_500]);
    assert_eq!(item(&mar, s.c)["special_deduction"], 450_000);
    assert_eq!(item(&mar, s.c)["cumulative_taxable"], 3_150_000);

    // Totals add the items up.
    let t = &mar["totals"];
    assert_eq!(t["employees"], 3);
    assert_eq!(t["gross"], 6_000_000);
    assert_eq!(t["tax"], 7_500 + 185_000 + 22_500);
    assert_eq!(t["delivered"], 3);

    // Each slip went out on the employee's channel; the sandbox platform received them.
    assert_eq!(item(&mar, s.a)["delivery_channel"], "wechat");
    assert_eq!(item(&mar, s.b)["delivery_channel"], "sms");
    assert_eq!(item(&mar, s.c)["delivery_channel"], "email");
    let wx = app.get("/sandbox/messages?touser=o_payroll_a", None).await;
    assert_eq!(wx.body["messages"].as_array().unwrap().len(), 3, "{}", wx.body);
    let sms = app.get("/sandbox/outbox?target=%2B8613900000002", None).await;
    let texts: Vec<&str> = sms.body["messages"].as_array().unwrap().iter().filter_map(|m| m["text"].as_str()).collect();
    assert_eq!(texts.len(), 3, "{}", sms.body);
    assert!(texts[2].contains("2026-03"), "{texts:?}");

    // The list shows the three months with their totals, newest first.
    let list = app.get("/api/v1/payroll-sheets?sort=-period", Some(&org.t1_admin)).await;
    list.expect(200);
    assert_eq!(list.data()["total"], 3);
    assert_eq!(list.data()["items"][0]["period"], "2026-03");
    assert!(list.data()["items"][0].get("items").is_none());
    let by_period = app.get("/api/v1/payroll-sheets?period=2026-02", Some(&org.t1_admin)).await;
    assert_eq!(by_period.data()["items"][0]["id"], feb["id"]);
});

e2e!(the_lifecycle_refuses_out_of_order_steps_with_409, |app| {
    let org = app.org().await;
    staff(app, &org).await;
    let sheet = app.create("/api/v1/payroll-sheets", json!({"period": "2026-04", "title": "April"}), &org.t1_admin).await;
    let path = format!("/api/v1/payroll-sheets/{}", id(&sheet));

    app.post(&format!("{path}/approve"), json!({}), Some(&org.t1_admin)).await.expect(409);
    app.post(&format!("{path}/send"), json!({}), Some(&org.t1_admin)).await.expect(409);
    app.post("/api/v1/payroll-sheets", json!({"period": "2026-04"}), Some(&org.t1_admin)).await.expect(409);

    // Calculated, then edited: back to draft with the figures gone.
    app.post(&format!("{path}/calculate"), json!({}), Some(&org.t1_clerk)).await.expect(200);
    app.post(&format!("{path}/send"), json!({}), Some(&org.t1_admin)).await.expect(409);
    let edited = app.put(&path, json!({"title": "April (fixed)"}), Some(&org.t1_clerk)).await;
    edited.expect(200);
    assert_eq!(edited.data()["status"], "draft");
    assert!(edited.data()["items"][0]["net_pay"].is_null());
    assert_eq!(edited.data()["title"], "April (fixed)");

    app.post(&format!("{path}/calculate"), json!({}), Some(&org.t1_clerk)).await.expect(200);
    app.post(&format!("{path}/calculate"), json!({}), Some(&org.t1_clerk)).await.expect(200); // recalculation is fine
    app.post(&format!("{path}/approve"), json!({}), Some(&org.t1_admin)).await.expect(200);

    // Approved is final.
    app.put(&path, json!({"title": "late edit"}), Some(&org.t1_admin)).await.expect(409);
    app.post(&format!("{path}/calculate"), json!({}), Some(&org.t1_admin)).await.expect(409);
    app.post(&format!("{path}/approve"), json!({}), Some(&org.t1_admin)).await.expect(409);
    let after = app.get(&path, Some(&org.t1_admin)).await;
    assert_eq!((after.data()["status"].as_str(), after.data()["title"].as_str()), (Some("approved"), Some("April (fixed)")));
});

e2e!(four_eyes_approval_refuses_the_calculator_unless_the_tenant_turns_it_off, |app| {
    let org = app.org().await;
    staff(app, &org).await;
    let sheet = app.create("/api/v1/payroll-sheets", json!({"period": "2026-05"}), &org.t1_admin).await;
    let path = format!("/api/v1/payroll-sheets/{}", id(&sheet));
    app.post(&format!("{path}/calculate"), json!({}), Some(&org.t1_admin)).await.expect(200);

    let refused = app.post(&format!("{path}/approve"), json!({}), Some(&org.t1_admin)).await;
    refused.expect(403);
    assert!(refused.body["message"].as_str().unwrap().contains("four-eyes"), "{}", refused.body);

    let mut p = policy();
    p["four_eyes"] = json!(false);
    app.put(&format!("/api/v1/tenants/{}", org.t1), json!({"payroll_policy": p}), Some(&org.admin)).await.expect(200);
    app.post(&format!("{path}/approve"), json!({}), Some(&org.t1_admin)).await.expect(200);
});

e2e!(sending_again_retries_only_the_failed_pay_slips, |app| {
    let org = app.org().await;
    let s = staff(app, &org).await;
    // A has used up their subscription on the platform: the first send fails for A only.
    let control = app.post("/sandbox/control/subscriptions", json!({"openid": "o_payroll_a", "remaining": 0}), None).await;
    assert_eq!(control.status, 200, "{}", control.body);
    let sheet = app.create("/api/v1/payroll-sheets", json!({"period": "2026-06"}), &org.t1_clerk).await;
    let path = format!("/api/v1/payroll-sheets/{}", id(&sheet));
    app.post(&format!("{path}/calculate"), json!({}), Some(&org.t1_clerk)).await.expect(200);
    app.post(&format!("{path}/approve"), json!({}), Some(&org.t1_admin)).await.expect(200);

    let first = app.post(&format!("{path}/send"), json!({}), Some(&org.t1_clerk)).await;
    first.expect(200);
    let a = item(first.data(), s.a);
    assert_eq!((a["delivery_status"].as_str(), a["delivery_attempts"].as_i64()), (Some("failed"), Some(1)));
    assert!(a["delivery_error"].as_str().unwrap().contains("43101"), "{a}");
    assert_eq!(item(first.data(), s.b)["delivery_status"], "delivered");
    assert_eq!((first.data()["totals"]["delivered"].as_i64(), first.data()["totals"]["failed"].as_i64()), (Some(2), Some(1)));

    let control = app.post("/sandbox/control/subscriptions", json!({"openid": "o_payroll_a", "remaining": null}), None).await;
    assert_eq!(control.status, 200, "{}", control.body);
    let again = app.post(&format!("{path}/send"), json!({}), Some(&org.t1_clerk)).await;
    again.expect(200);
    let a = item(again.data(), s.a);
    assert_eq!((a["delivery_status"].as_str(), a["delivery_attempts"].as_i64()), (Some("delivered"), Some(2)));
    assert_eq!(item(again.data(), s.b)["delivery_attempts"], 1);
    assert_eq!(again.data()["totals"]["failed"], 0);
    let sms = app.get("/sandbox/outbox?target=%2B8613900000002", None).await;
    assert_eq!(sms.body["messages"].as_array().unwrap().len(), 1, "B's slip went out once: {}", sms.body);

    // Nothing left to send: a third send changes nothing.
    let third = app.post(&format!("{path}/send"), json!({}), Some(&org.t1_clerk)).await;
    third.expect(200);
    assert_eq!(item(third.data(), s.a)["delivery_attempts"], 2);
});

e2e!(bad_sheet_input_names_the_field, |app| {
    let org = app.org().await;
    let s = staff(app, &org).await;
    let other = id(&app.create("/api/v1/employees", json!({"name": "X", "base_salary": 100}), &org.t2_admin).await);
    let t1_admin = org.t1_admin.as_str();
    let post = |body: Value| async move { app.post("/api/v1/payroll-sheets", body, Some(t1_admin)).await };

    post(json!({"period": "2026-13"})).await.expect(400).expect_field_error("period");
    post(json!({})).await.expect(400).expect_field_error("period");
    post(json!({"period": "2026-07", "items": [{"employee_id": other}]})).await.expect_no_such("items[0].employee_id");
    post(json!({"period": "2026-07", "items": [{"employee_id": s.a, "allowance": -1}]}))
        .await
        .expect(400)
        .expect_field_error("items[0].allowance");
    post(json!({"period": "2026-07", "items": [{"employee_id": s.a}, {"employee_id": s.a}]}))
        .await
        .expect(400)
        .expect_field_error("items[1].employee_id");
    post(json!({"period": "2026-07", "items": []})).await.expect(400).expect_field_error("items");
    post(json!({"period": "2026-07", "items": [{"employee_id": s.a, "salary": 1}]})).await.expect(400);
    post(json!({"period": "2026-07", "tenant_id": org.t2})).await.expect_no_such("tenant_id");
    let platform = app.post("/api/v1/payroll-sheets", json!({"period": "2026-07"}), Some(&org.admin)).await;
    platform.expect(400).expect_field_error("tenant_id");

    // An item whose leave deduction exceeds the month's earnings fails calculation, naming it.
    let sheet = post(json!({"period": "2026-07", "items": [{"employee_id": s.a, "leave_deduction": 99_000_000}]})).await;
    sheet.expect(200);
    let calc = app.post(&format!("/api/v1/payroll-sheets/{}/calculate", id(sheet.data())), json!({}), Some(&org.t1_admin)).await;
    // The sheet, not the request, is at fault: 409 naming the item.
    calc.expect(409);
    assert!(calc.body["data"]["errors"].to_string().contains("items[0]."), "{}", calc.body);
    let list = app.get("/api/v1/payroll-sheets?period=July", Some(&org.t1_admin)).await;
    list.expect(400).expect_field_error("period");
});

e2e!(sheets_are_scoped_and_permission_checked, |app| {
    let org = app.org().await;
    staff(app, &org).await;
    let sheet = app.create("/api/v1/payroll-sheets", json!({"period": "2026-08"}), &org.t1_admin).await;
    let path = format!("/api/v1/payroll-sheets/{}", id(&sheet));

    app.get(&path, None).await.expect(401);
    for outsider in [&org.t2_admin, &org.p2_admin] {
        app.get(&path, Some(outsider)).await.expect(404);
        app.put(&path, json!({"title": "x"}), Some(outsider)).await.expect(404);
        app.post(&format!("{path}/calculate"), json!({}), Some(outsider)).await.expect(404);
        let list = app.get("/api/v1/payroll-sheets", Some(outsider)).await;
        assert_eq!(list.data()["total"], 0);
    }
    app.get(&path, Some(&org.p1_admin)).await.expect(200);
    assert_eq!(app.get("/api/v1/payroll-sheets", Some(&org.admin)).await.data()["total"], 1);
    // Partners and the platform name the tenant; a partner cannot reach another's tenant.
    app.post("/api/v1/payroll-sheets", json!({"period": "2026-08", "tenant_id": org.t2}), Some(&org.p1_admin))
        .await
        .expect_no_such("tenant_id");
    app.create("/api/v1/payroll-sheets", json!({"period": "2026-09", "tenant_id": org.t1}), &org.p1_admin).await;

    // The clerk may calculate but not approve.
    app.post(&format!("{path}/calculate"), json!({}), Some(&org.t1_clerk)).await.expect(200);
    app.post(&format!("{path}/approve"), json!({}), Some(&org.t1_clerk)).await.expect(403);

    // Every step is in the audit trail, readable by the tenant.
    let audit = app.get(&format!("/api/v1/audit-logs?target_type=payroll_sheet&target_id={}", id(&sheet)), Some(&org.t1_admin)).await;
    audit.expect(200);
    let actions: Vec<&str> = audit.data()["items"].as_array().unwrap().iter().filter_map(|e| e["action"].as_str()).collect();
    assert!(actions.contains(&"payroll_sheet.create") && actions.contains(&"payroll_sheet.calculate"), "{actions:?}");
});

e2e!(the_openapi_document_describes_every_payroll_route, |app| {
    let r = app.get("/api/v1/openapi.json", None).await;
    let paths = r.body["paths"].as_object().expect("paths");
    for (path, method) in [
        ("/api/v1/payroll-sheets", "get"),
        ("/api/v1/payroll-sheets", "post"),
        ("/api/v1/payroll-sheets/{id}", "get"),
        ("/api/v1/payroll-sheets/{id}", "put"),
        ("/api/v1/payroll-sheets/{id}/calculate", "post"),
        ("/api/v1/payroll-sheets/{id}/approve", "post"),
        ("/api/v1/payroll-sheets/{id}/send", "post"),
        ("/api/v1/payroll-sheets/{id}/export", "get"),
        ("/api/v1/payroll-sheets/{id}/bank-file", "get"),
        ("/api/v1/payroll-sheets/{id}/items/import", "post"),
        ("/api/v1/payroll-sheets/import-template", "get"),
        ("/api/v1/employees/{id}/tax-year", "get"),
    ] {
        assert!(paths.get(path).and_then(|p| p.get(method)).is_some(), "{method} {path} missing from the OpenAPI document");
    }
});

// ---- Supplementary sheets, the separately taxed bonus, the tax year ----

/// D of t1: 20,000 a month, contributions 3,000 under the 15 % policy, no special
/// deductions, paid by e-mail; and E, 10,000 a month.
async fn earners(app: &TestApp, org: &Org) -> (i64, i64) {
    app.put(&format!("/api/v1/tenants/{}", org.t1), json!({"payroll_policy": policy()}), Some(&org.admin)).await.expect(200);
    let d = app
        .create(
            "/api/v1/employees",
            json!({"name": "D", "base_salary": 2_000_000, "housing_fund_rate": "0.05", "email": "d@example.cn"}),
            &org.t1_admin,
        )
        .await;
    let e = app
        .create(
            "/api/v1/employees",
            json!({"name": "E", "base_salary": 1_000_000, "housing_fund_rate": "0.05", "email": "e@example.cn"}),
            &org.t1_admin,
        )
        .await;
    (id(&d), id(&e))
}

/// Creates a sheet (as the clerk) and returns its id.
async fn sheet_of(app: &TestApp, org: &Org, body: Value) -> i64 {
    id(&app.create("/api/v1/payroll-sheets", body, &org.t1_clerk).await)
}

/// Calculates (as the clerk) and approves (as the tenant admin: four eyes); the approved sheet.
async fn settle(app: &TestApp, org: &Org, sheet: i64) -> Value {
    let path = format!("/api/v1/payroll-sheets/{sheet}");
    app.post(&format!("{path}/calculate"), json!({}), Some(&org.t1_clerk)).await.expect(200);
    let approved = app.post(&format!("{path}/approve"), json!({}), Some(&org.t1_admin)).await;
    approved.expect(200);
    assert_eq!(approved.data()["status"], "approved");
    approved.data().clone()
}

fn money(item: &Value, field: &str) -> i64 {
    item[field].as_i64().unwrap_or_else(|| panic!("{field} in {item}"))
}

e2e!(a_supplementary_sheet_pays_on_top_of_an_approved_month_and_later_months_and_the_tax_year_count_it, |app| {
    let org = app.org().await;
    let (d, _) = earners(app, &org).await;

    // January regular: 20,000 − 5,000 − 3,000 = 12,000 → 360.00.
    let jan = settle(app, &org, sheet_of(app, &org, json!({"period": "2026-01", "items": [{"employee_id": d}]})).await).await;
    assert_eq!(jan["kind"], "regular");
    assert_eq!((money(item(&jan, d), "cumulative_taxable"), money(item(&jan, d), "tax")), (1_200_000, 36_000));

    // January supplementary, a 10,000 bonus: 22,000 → 660.00 cumulative, 300.00 withheld.
    let body = json!({"period": "2026-01", "kind": "supplementary", "items": [{"employee_id": d, "bonus": 1_000_000}]});
    let created = app.create("/api/v1/payroll-sheets", body, &org.t1_clerk).await;
    assert_eq!((created["kind"].as_str(), created["title"].as_str()), (Some("supplementary"), Some("Supplementary payroll 2026-01")));
    let extra = settle(app, &org, id(&created)).await;
    let x = item(&extra, d);
    assert_eq!((money(x, "gross"), money(x, "contributions"), money(x, "special_deduction")), (1_000_000, 0, 0));
    assert_eq!((money(x, "cumulative_taxable"), money(x, "cumulative_tax"), money(x, "tax")), (2_200_000, 66_000, 30_000));
    assert_eq!(money(x, "net_pay"), 970_000);
    let sent = app.post(&format!("/api/v1/payroll-sheets/{}/send", id(&extra)), json!({}), Some(&org.t1_clerk)).await;
    sent.expect(200);
    assert_eq!(item(sent.data(), d)["delivery_status"], "delivered");

    // February regular counts it: 34,000 → 1,020.00 cumulative, 360.00 withheld.
    let feb = settle(app, &org, sheet_of(app, &org, json!({"period": "2026-02", "items": [{"employee_id": d}]})).await).await;
    let f = item(&feb, d);
    assert_eq!((money(f, "cumulative_taxable"), money(f, "cumulative_tax"), money(f, "tax")), (3_400_000, 102_000, 36_000));

    // The list filters by kind.
    let listed = app.get("/api/v1/payroll-sheets?kind=supplementary", Some(&org.t1_admin)).await;
    listed.expect(200);
    assert_eq!((listed.data()["total"].as_i64(), listed.data()["items"][0]["id"].as_i64()), (Some(1), Some(id(&extra))));

    // The tax year, checked against the three sheets.
    let year = app.get(&format!("/api/v1/employees/{d}/tax-year?year=2026"), Some(&org.t1_clerk)).await;
    year.expect(200);
    let y = year.data();
    assert_eq!((y["employee_id"].as_i64(), y["tenant_id"].as_i64(), y["year"].as_i64()), (Some(d), Some(org.t1), Some(2026)));
    let months = y["months"].as_array().unwrap();
    assert_eq!(months.len(), 2, "{y}");
    let (m1, m2) = (&months[0], &months[1]);
    assert_eq!(m1["period"], "2026-01");
    assert_eq!(m1["sheets"], json!([{"id": id(&jan), "kind": "regular"}, {"id": id(&extra), "kind": "supplementary"}]));
    let (j, x) = (item(&jan, d), item(&extra, d));
    for field in ["gross", "contributions", "special_deduction", "tax", "annual_bonus", "annual_bonus_tax"] {
        assert_eq!(money(m1, field), money(j, field) + money(x, field), "January {field}");
        assert_eq!(money(m2, field), money(f, field), "February {field}");
    }
    assert_eq!(
        (money(m1, "cumulative_taxable"), money(m1, "cumulative_tax")),
        (money(x, "cumulative_taxable"), money(x, "cumulative_tax"))
    );
    assert_eq!(money(m2, "cumulative_taxable"), money(f, "cumulative_taxable"));
    let t = &y["totals"];
    assert_eq!((money(t, "gross"), money(t, "contributions"), money(t, "tax_withheld")), (5_000_000, 600_000, 102_000));
    // The settlement: 50,000 − 60,000 − 6,000 < 0 → no tax for the year; 1,020.00 would come back.
    let s = &y["settlement"];
    assert_eq!(s["estimate"], true);
    assert_eq!((money(s, "income"), money(s, "basic_deduction"), money(s, "taxable"), money(s, "tax")), (5_000_000, 6_000_000, 0, 0));
    assert_eq!((money(s, "tax_withheld"), money(s, "to_pay"), money(s, "to_refund")), (102_000, 0, 102_000));
    // Another year has nothing.
    let last_year = app.get(&format!("/api/v1/employees/{d}/tax-year?year=2025"), Some(&org.t1_admin)).await;
    last_year.expect(200);
    assert_eq!(last_year.data()["months"], json!([]));
    assert_eq!((money(&last_year.data()["settlement"], "to_pay"), money(&last_year.data()["settlement"], "to_refund")), (0, 0));
});

e2e!(a_supplementary_sheet_needs_its_periods_regular_sheet_approved_and_pays_no_salary, |app| {
    let org = app.org().await;
    let (d, _) = earners(app, &org).await;
    let clerk = org.t1_clerk.as_str();
    let post = |body: Value| async move { app.post("/api/v1/payroll-sheets", body, Some(clerk)).await };
    let extra = json!({"period": "2026-03", "kind": "supplementary", "items": [{"employee_id": d, "bonus": 100_000}]});

    // No regular sheet yet, then a draft one, then a calculated one: 409 saying which.
    let none = post(extra.clone()).await;
    none.expect(409);
    assert!(none.body["message"].as_str().unwrap().contains("no regular sheet for 2026-03"), "{}", none.body);
    let regular = sheet_of(app, &org, json!({"period": "2026-03", "items": [{"employee_id": d}]})).await;
    let draft = post(extra.clone()).await;
    draft.expect(409);
    assert!(draft.body["message"].as_str().unwrap().contains(&format!("(id {regular}) is draft")), "{}", draft.body);
    app.post(&format!("/api/v1/payroll-sheets/{regular}/calculate"), json!({}), Some(clerk)).await.expect(200);
    let calculated = post(extra.clone()).await;
    calculated.expect(409);
    assert!(calculated.body["message"].as_str().unwrap().contains("is calculated; approve it first"), "{}", calculated.body);

    // What a supplementary item cannot carry: 400 naming the field.
    let item_with =
        |field: &str| json!({"period": "2026-03", "kind": "supplementary", "items": [{"employee_id": d, "bonus": 100, field: 100}]});
    post(item_with("leave_deduction")).await.expect(400).expect_field_error("items[0].leave_deduction");
    post(item_with("base_salary")).await.expect(400).expect_field_error("items[0].base_salary");
    post(item_with("pension")).await.expect(400).expect_field_error("items[0].pension");
    post(json!({"period": "2026-03", "kind": "supplementary"})).await.expect(400).expect_field_error("items");
    post(json!({"period": "2026-03", "kind": "bonus", "items": [{"employee_id": d}]})).await.expect(400).expect_field_error("kind");
    // Still one regular sheet per period.
    post(json!({"period": "2026-03", "kind": "regular"})).await.expect(409);

    // Nothing was created by any of them.
    let list = app.get("/api/v1/payroll-sheets", Some(&org.t1_admin)).await;
    assert_eq!((list.data()["total"].as_i64(), list.data()["items"][0]["id"].as_i64()), (Some(1), Some(regular)));

    // Once the regular sheet is approved: any number of supplementary sheets.
    app.post(&format!("/api/v1/payroll-sheets/{regular}/approve"), json!({}), Some(&org.t1_admin)).await.expect(200);
    let first = post(extra.clone()).await;
    first.expect(200);
    post(extra.clone()).await.expect(200);
    // A supplementary sheet edited with a leave deduction: 400, unchanged.
    let path = format!("/api/v1/payroll-sheets/{}", id(first.data()));
    let edit = app.put(&path, json!({"items": [{"employee_id": d, "leave_deduction": 1}]}), Some(clerk)).await;
    edit.expect(400).expect_field_error("items[0].leave_deduction");
    assert_eq!(item(app.get(&path, Some(clerk)).await.data(), d)["bonus"], 100_000);
});

e2e!(approval_refuses_a_sheet_whose_year_to_date_changed_since_it_was_calculated, |app| {
    let org = app.org().await;
    let (d, _) = earners(app, &org).await;
    settle(app, &org, sheet_of(app, &org, json!({"period": "2026-01", "items": [{"employee_id": d}]})).await).await;
    let extra = |bonus: i64| json!({"period": "2026-01", "kind": "supplementary", "items": [{"employee_id": d, "bonus": bonus}]});
    let a = sheet_of(app, &org, extra(1_000_000)).await;
    let b = sheet_of(app, &org, extra(2_000_000)).await;
    let feb = sheet_of(app, &org, json!({"period": "2026-02", "items": [{"employee_id": d}]})).await;
    let (clerk, admin) = (org.t1_clerk.as_str(), org.t1_admin.as_str());
    let calculate = |sheet: i64| async move {
        let r = app.post(&format!("/api/v1/payroll-sheets/{sheet}/calculate"), json!({}), Some(clerk)).await;
        r.expect(200);
        r.data().clone()
    };
    let approve = |sheet: i64| async move { app.post(&format!("/api/v1/payroll-sheets/{sheet}/approve"), json!({}), Some(admin)).await };

    // Calculated side by side, each over January's regular sheet only:
    // A 30,000 − 8,000 = 22,000 → 660 − 360 = 300; B 40,000 − 8,000 = 32,000 → 960 − 360 = 600;
    // February 40,000 − 16,000 = 24,000 → 720 − 360 = 360.
    assert_eq!(item(&calculate(a).await, d)["tax"], 30_000);
    assert_eq!(item(&calculate(b).await, d)["tax"], 60_000);
    assert_eq!(item(&calculate(feb).await, d)["tax"], 36_000);

    approve(a).await.expect(200);
    let stale = approve(b).await;
    stale.expect(409);
    assert!(stale.body["message"].as_str().unwrap().contains("recalculate"), "{}", stale.body);
    approve(feb).await.expect(409);
    let b_now = app.get(&format!("/api/v1/payroll-sheets/{b}"), Some(&org.t1_admin)).await;
    assert_eq!((b_now.data()["status"].as_str(), b_now.data()["approved_at"].is_null()), (Some("calculated"), true));

    // Recalculated over A too: 50,000 − 8,000 = 42,000 → 1,680 − 660 = 1,020.
    assert_eq!(item(&calculate(b).await, d)["tax"], 102_000);
    approve(b).await.expect(200);
    // February over all three: 70,000 − 10,000 − 6,000 = 54,000 → 2,880 − 1,680 = 1,200.
    assert_eq!(item(&calculate(feb).await, d)["tax"], 120_000);
    approve(feb).await.expect(200);
});

e2e!(an_annual_bonus_is_taxed_separately_once_per_employee_and_year, |app| {
    let org = app.org().await;
    let (d, e) = earners(app, &org).await;
    // January: D's annual bonus of 36,000 → 3 % → 1,080.00 taxed separately.
    let jan =
        sheet_of(app, &org, json!({"period": "2026-01", "items": [{"employee_id": e}, {"employee_id": d, "annual_bonus": 3_600_000}]}))
            .await;
    let jan = settle(app, &org, jan).await;
    assert_eq!(item(&jan, d)["annual_bonus_tax"], 108_000);

    // A second one for D in the same year, on a regular sheet: 409 naming the item, nothing saved.
    let feb =
        sheet_of(app, &org, json!({"period": "2026-02", "items": [{"employee_id": e}, {"employee_id": d, "annual_bonus": 100_000}]})).await;
    let refused = app.post(&format!("/api/v1/payroll-sheets/{feb}/calculate"), json!({}), Some(&org.t1_clerk)).await;
    refused.expect(409);
    let errors = refused.body["data"]["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{}", refused.body);
    assert_eq!(errors[0]["field"], "items[1].annual_bonus");
    assert!(errors[0]["message"].as_str().unwrap().contains(&format!("payroll sheet {}", id(&jan))), "{}", refused.body);
    let feb_now = app.get(&format!("/api/v1/payroll-sheets/{feb}"), Some(&org.t1_clerk)).await;
    assert_eq!((feb_now.data()["status"].as_str(), item(feb_now.data(), e)["tax"].is_null()), (Some("draft"), true));
    // Paid as a bonus instead, the sheet calculates.
    let fixed = json!({"items": [{"employee_id": e}, {"employee_id": d, "bonus": 100_000}]});
    app.put(&format!("/api/v1/payroll-sheets/{feb}"), fixed, Some(&org.t1_clerk)).await.expect(200);
    settle(app, &org, feb).await;

    // E's bonus on two drafts at once (a supplementary sheet of February and one of January),
    // calculated side by side: whatever the interleaving, one of them carries it approved and
    // the other is refused naming the item, at calculation or at approval.
    let clerk = org.t1_clerk.as_str();
    let for_e = |period: &str| json!({"period": period, "kind": "supplementary", "items": [{"employee_id": e, "annual_bonus": 2_400_000}]});
    let (x, y) = (sheet_of(app, &org, for_e("2026-02")).await, sheet_of(app, &org, for_e("2026-01")).await);
    let calculated =
        join_all([x, y].map(|s| async move { app.post(&format!("/api/v1/payroll-sheets/{s}/calculate"), json!({}), Some(clerk)).await }))
            .await;
    let mut approved = vec![];
    let mut refused = vec![];
    // February's first: its approval does not change January's year to date, so January's is
    // judged on the bonus alone.
    for (sheet, calc) in [x, y].into_iter().zip(&calculated) {
        let outcome = if calc.status == 200 {
            app.post(&format!("/api/v1/payroll-sheets/{sheet}/approve"), json!({}), Some(&org.t1_admin)).await
        } else {
            app.post(&format!("/api/v1/payroll-sheets/{sheet}/calculate"), json!({}), Some(&org.t1_clerk)).await
        };
        match outcome.status {
            200 => approved.push(sheet),
            _ => {
                outcome.expect(409);
                assert_eq!(outcome.body["data"]["errors"][0]["field"], "items[0].annual_bonus", "{}", outcome.body);
                refused.push(sheet);
            }
        }
    }
    assert_eq!((approved.len(), refused.len()), (1, 1), "approved {approved:?}, refused {refused:?}");
    let year = app.get(&format!("/api/v1/employees/{e}/tax-year?year=2026"), Some(&org.t1_admin)).await;
    assert_eq!(money(&year.data()["totals"], "annual_bonus"), 2_400_000);
});

e2e!(the_tax_year_view_is_scoped_needs_both_permissions_and_a_sane_year, |app| {
    let org = app.org().await;
    let (d, _) = earners(app, &org).await;
    let path = format!("/api/v1/employees/{d}/tax-year");
    let t1_admin = org.t1_admin.as_str();
    let role = |code: &str, permissions: Value| {
        let body = json!({"code": code, "name": code, "party_type": "tenant", "permissions": permissions});
        async move { id(&app.create("/api/v1/roles", body, t1_admin).await) }
    };
    let payroll_only = role("payroll_only", json!(["payroll:read"])).await;
    let employees_only = role("employees_only", json!(["employee:read"])).await;
    let (_, payroll_reader) = app.user_token(&org.t1_admin, "payrollonly", json!({"role_ids": [payroll_only]})).await;
    let (_, employee_reader) = app.user_token(&org.t1_admin, "employeeonly", json!({"role_ids": [employees_only]})).await;

    app.get(&format!("{path}?year=2026"), None).await.expect(401);
    let no_employees = app.get(&format!("{path}?year=2026"), Some(&payroll_reader)).await;
    no_employees.expect(403);
    assert_eq!(no_employees.body["message"], "missing permission employee:read");
    let no_payroll = app.get(&format!("{path}?year=2026"), Some(&employee_reader)).await;
    no_payroll.expect(403);
    assert_eq!(no_payroll.body["message"], "missing permission payroll:read");
    for outsider in [&org.t2_admin, &org.p2_admin] {
        app.get(&format!("{path}?year=2026"), Some(outsider)).await.expect(404);
    }
    app.get("/api/v1/employees/999999/tax-year?year=2026", Some(&org.admin)).await.expect(404);
    for reader in [&org.p1_admin, &org.admin, &org.t1_clerk] {
        app.get(&format!("{path}?year=2026"), Some(reader)).await.expect(200);
    }

    for bad in ["?year=1999", "?year=2101", "?year=twenty", "?year=", ""] {
        app.get(&format!("{path}{bad}"), Some(&org.t1_admin)).await.expect(400).expect_field_error("year");
    }
});

// ---- Spreadsheet files: import, export, bank file ----

/// The money columns of an export (every item field in fen but the ids, counts and texts).
const NOT_MONEY: [&str; 5] = ["employee_id", "employee_no", "employee_name", "months_employed", "delivery_status"];

/// Three employees of t1 with numbers and bank accounts: 张三 (E001, 10,000/month),
/// 李四 (E002, 30,000) and 欧阳娜娜 (E003, 20,000). Returns their ids in that order.
async fn payees(app: &TestApp, org: &Org) -> [i64; 3] {
    app.put(&format!("/api/v1/tenants/{}", org.t1), json!({"payroll_policy": policy()}), Some(&org.admin)).await.expect(200);
    let mut ids = [0; 3];
    for (i, (no, name, salary, account, bank)) in [
        ("E001", "张三", 1_000_000, "6222 0202 0011 2233 445", "中国工商银行北京海淀支行"),
        ("E002", "李四", 3_000_000, "6217000010001234567", "中国建设银行"),
        ("E003", "欧阳娜娜", 2_000_000, "6228480010203040506", "中国农业银行"),
    ]
    .into_iter()
    .enumerate()
    {
        let body = json!({"name": name, "employee_no": no, "base_salary": salary, "housing_fund_rate": "0.05",
            "bank_account": account, "bank_name": bank, "email": format!("{no}@example.cn")});
        ids[i] = id(&app.create("/api/v1/employees", body, &org.t1_admin).await);
    }
    ids
}

/// A download: status, headers and the raw body.
async fn download(app: &TestApp, path: &str, token: &str) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
    let resp = app.client.get(app.url(path)).bearer_auth(token).send().await.unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    (status, headers, resp.bytes().await.unwrap().to_vec())
}

/// A `multipart/form-data` body of `(name, file name, content)` parts: (content type, body).
fn form(parts: &[(&str, &str, &[u8])]) -> (String, Vec<u8>) {
    let boundary = "atrium-payroll-import-7f3a";
    let mut body = Vec::new();
    for (name, file_name, content) in parts {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{file_name}\"\r\n\
                 Content-Type: application/octet-stream\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(content);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// Posts `file` as the import of sheet `sheet`.
async fn import(app: &TestApp, sheet: i64, token: &str, file: &[u8]) -> atrium_e2e::Resp {
    let (content_type, body) = form(&[("file", "payroll.csv", file)]);
    let url = app.url(&format!("/api/v1/payroll-sheets/{sheet}/items/import"));
    app.send(app.client.post(url).bearer_auth(token).header("content-type", content_type).body(body)).await
}

/// An xlsx workbook of `rows` (text, or a number where it parses as one).
fn xlsx(rows: &[&[&str]]) -> Vec<u8> {
    let mut workbook = rust_xlsxwriter::Workbook::new();
    let sheet = workbook.add_worksheet();
    for (r, row) in rows.iter().enumerate() {
        for (c, cell) in row.iter().enumerate() {
            let (r, c) = (r as u32, c as u16);
            match cell.parse::<f64>() {
                Ok(n) if r > 0 && !cell.starts_with('E') => sheet.write_number(r, c, n).map(|_| ()).unwrap(),
                _ if cell.is_empty() => {}
                _ => sheet.write_string(r, c, *cell).map(|_| ()).unwrap(),
            }
        }
    }
    workbook.save_to_buffer().unwrap()
}

/// Fen from a decimal yuan text, exactly; at most two decimals.
fn decimal_fen(text: &str) -> i64 {
    let (negative, digits) = text.strip_prefix('-').map_or((false, text), |rest| (true, rest));
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    assert!(fraction.len() <= 2, "{text} has more than two decimals");
    let fen = whole.parse::<i64>().unwrap() * 100 + format!("{fraction:0<2}").parse::<i64>().unwrap();
    if negative { -fen } else { fen }
}

/// An xlsx cell as the JSON value of its item field: money in fen (from the number's exact
/// decimal), counts, texts, null for an empty cell.
fn xlsx_value(column: &str, cell: &calamine::Data) -> Value {
    use calamine::Data;
    match cell {
        Data::Empty => Value::Null,
        Data::String(s) => json!(s),
        Data::Float(f) if NOT_MONEY.contains(&column) => json!(*f as i64),
        Data::Float(f) => json!(decimal_fen(&f.to_string())),
        Data::Int(n) if NOT_MONEY.contains(&column) => json!(n),
        other => panic!("{column}: unexpected cell {other:?}"),
    }
}

/// A csv cell as the JSON value of its item field.
fn csv_value(column: &str, cell: &str) -> Value {
    match cell {
        "" => Value::Null,
        // The totals row's label stands in the first column.
        c if ["employee_id", "months_employed"].contains(&column) => c.parse::<i64>().map_or_else(|_| json!(c), |n| json!(n)),
        c if NOT_MONEY.contains(&column) => json!(c),
        c => json!(decimal_fen(c)),
    }
}

/// Rows of csv text (a byte order mark stripped).
fn csv_rows(text: &str) -> Vec<Vec<String>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(text.as_bytes())
        .records()
        .map(|r| r.unwrap().iter().map(str::to_owned).collect())
        .collect()
}

/// Checks an export's rows (header first, totals last) against the sheet's items and totals.
fn check_export(rows: &[Vec<Value>], header: &[String], sheet: &Value) {
    let items = sheet["items"].as_array().unwrap();
    assert_eq!(rows.len(), items.len() + 1, "a row per item and a totals row");
    let col = |name: &str| header.iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name} in {header:?}"));
    for item in items {
        let row = rows.iter().find(|r| r[col("employee_id")] == item["employee_id"]).unwrap();
        for (c, name) in header.iter().enumerate() {
            assert_eq!(row[c], item[name.as_str()], "{name} of employee {}", item["employee_id"]);
        }
    }
    let totals = rows.last().unwrap();
    assert_eq!(totals[0], json!("total"));
    for name in header.iter().filter(|h| !NOT_MONEY.contains(&h.as_str())) {
        let sum: i64 = items.iter().filter_map(|i| i[name.as_str()].as_i64()).sum();
        assert_eq!(totals[col(name)], json!(sum), "total of {name}");
    }
    assert_eq!(totals[col("net_pay")], sheet["totals"]["net_pay"]);
    assert_eq!(totals[col("gross")], sheet["totals"]["gross"]);
}

/// The audit entries of `action` on sheet `sheet`.
async fn audited(app: &TestApp, org: &Org, sheet: i64, action: &str) -> Vec<Value> {
    let path = format!("/api/v1/audit-logs?target_type=payroll_sheet&target_id={sheet}&action={action}");
    let r = app.get(&path, Some(&org.t1_admin)).await;
    r.expect(200);
    r.data()["items"].as_array().unwrap().clone()
}

e2e!(a_sheet_is_imported_calculated_approved_exported_and_paid_through_a_bank_file, |app| {
    let org = app.org().await;
    let [zhang, li, ouyang] = payees(app, &org).await;
    let sheet = sheet_of(app, &org, json!({"period": "2026-03"})).await;
    let path = format!("/api/v1/payroll-sheets/{sheet}");

    // The template names the columns.
    let (status, headers, bytes) = download(app, "/api/v1/payroll-sheets/import-template?format=xlsx", &org.t1_clerk).await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet");
    assert_eq!(headers["content-disposition"], "attachment; filename=\"payroll-import-template.xlsx\"");
    let mut template: calamine::Xlsx<_> = calamine::Reader::new(std::io::Cursor::new(bytes)).unwrap();
    let name = calamine::Reader::sheet_names(&template)[0].clone();
    let range = calamine::Reader::worksheet_range(&mut template, &name).unwrap();
    let header: Vec<String> = range.rows().next().unwrap().iter().map(|c| c.to_string()).collect();
    assert_eq!(
        header,
        [
            "employee_no",
            "employee_name",
            "allowance",
            "overtime",
            "bonus",
            "leave_deduction",
            "other_pre_tax_deduction",
            "after_tax_deduction",
            "annual_bonus"
        ]
    );
    let (status, headers, bytes) = download(app, "/api/v1/payroll-sheets/import-template?format=csv", &org.t1_clerk).await;
    assert_eq!((status, headers["content-type"].to_str().unwrap()), (200, "text/csv; charset=utf-8"));
    assert_eq!(csv_rows(std::str::from_utf8(&bytes).unwrap())[0], header);

    // A GBK csv as Chinese Excel saves it, amounts as typed there.
    let (gbk, _, _) =
        encoding_rs::GBK.encode("employee_no,employee_name,allowance,bonus\r\nE001,张三,500,\"1,000.50\"\r\nE002,李四,,200.05\r\n");
    let imported = import(app, sheet, &org.t1_clerk, &gbk).await;
    imported.expect(200);
    assert_eq!(imported.data()["status"], "draft");
    let z = item(imported.data(), zhang);
    assert_eq!((money(z, "allowance"), money(z, "bonus")), (50_000, 100_050));
    assert_eq!(money(item(imported.data(), li), "bonus"), 20_005);
    assert_eq!(money(item(imported.data(), ouyang), "bonus"), 0);

    // A bank file pays approved sheets only.
    let (status, _, body) = download(app, &format!("{path}/bank-file"), &org.t1_admin).await;
    assert_eq!(status, 409, "{}", String::from_utf8_lossy(&body));

    // Calculated, then an xlsx import sends it back to draft, its figures gone; rows it does
    // not name stay.
    app.post(&format!("{path}/calculate"), json!({}), Some(&org.t1_clerk)).await.expect(200);
    let file = xlsx(&[&["employee_no", "employee_name", "overtime", "leave_deduction"], &["E003", "", "300", "0"]]);
    let reimported = import(app, sheet, &org.t1_clerk, &file).await;
    reimported.expect(200);
    assert_eq!(reimported.data()["status"], "draft");
    assert!(reimported.data()["items"].as_array().unwrap().iter().all(|i| i["net_pay"].is_null()));
    assert_eq!(money(item(reimported.data(), ouyang), "overtime"), 30_000);
    assert_eq!(money(item(reimported.data(), zhang), "bonus"), 100_050);

    // Calculated by the clerk, approved by the admin: four eyes.
    let approved = settle(app, &org, sheet).await;
    let z = item(&approved, zhang);
    assert_eq!(money(z, "gross"), 1_000_000 + 50_000 + 100_050);
    // 15 % contributions on the 10,000 base; no tax: March's basic deduction (3 × 5,000) exceeds
    // 11,500.50 − 1,500 (docs/payroll.md's example).
    assert_eq!((money(z, "contributions"), money(z, "tax"), money(z, "net_pay")), (150_000, 0, 1_000_050));

    // The export as xlsx: every item with every input and computed column, and the totals.
    let (status, headers, bytes) = download(app, &format!("{path}/export?format=xlsx"), &org.t1_clerk).await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet");
    assert_eq!(headers["content-disposition"].to_str().unwrap(), format!("attachment; filename=\"payroll-2026-03-{sheet}.xlsx\""));
    let mut workbook: calamine::Xlsx<_> = calamine::Reader::new(std::io::Cursor::new(bytes)).unwrap();
    let name = calamine::Reader::sheet_names(&workbook)[0].clone();
    let range = calamine::Reader::worksheet_range(&mut workbook, &name).unwrap();
    let mut rows = range.rows();
    let header: Vec<String> = rows.next().unwrap().iter().map(|c| c.to_string()).collect();
    for field in ["employee_no", "allowance", "bonus", "gross", "pension", "contributions", "cumulative_tax", "tax", "net_pay"] {
        assert!(header.iter().any(|h| h == field), "{field} in {header:?}");
    }
    let values: Vec<Vec<Value>> = rows.map(|r| r.iter().enumerate().map(|(c, cell)| xlsx_value(&header[c], cell)).collect()).collect();
    check_export(&values, &header, &approved);

    // The export as csv (UTF-8 with a byte order mark, for Excel): the same.
    let (status, headers, bytes) = download(app, &format!("{path}/export?format=csv"), &org.t1_clerk).await;
    assert_eq!((status, headers["content-type"].to_str().unwrap()), (200, "text/csv; charset=utf-8"));
    assert!(bytes.starts_with(b"\xEF\xBB\xBF"));
    let rows = csv_rows(std::str::from_utf8(&bytes).unwrap());
    let values: Vec<Vec<Value>> =
        rows[1..].iter().map(|r| r.iter().enumerate().map(|(c, cell)| csv_value(&rows[0][c], cell)).collect()).collect();
    check_export(&values, &rows[0], &approved);

    // The bank file: a line per employee, account numbers in full, net pay in yuan.
    let (status, headers, utf8) = download(app, &format!("{path}/bank-file?format=csv&encoding=utf-8"), &org.t1_admin).await;
    assert_eq!((status, headers["content-type"].to_str().unwrap()), (200, "text/csv; charset=utf-8"));
    assert_eq!(headers["content-disposition"].to_str().unwrap(), format!("attachment; filename=\"bank-transfer-2026-03-{sheet}.csv\""));
    let lines = csv_rows(std::str::from_utf8(&utf8).unwrap());
    assert_eq!(lines[0], ["户名", "账号", "开户行", "金额", "备注"]);
    let expected = [
        (zhang, "张三", "6222020200112233445", "中国工商银行北京海淀支行"),
        (li, "李四", "6217000010001234567", "中国建设银行"),
        (ouyang, "欧阳娜娜", "6228480010203040506", "中国农业银行"),
    ];
    assert_eq!(lines.len(), 4);
    for (line, (employee, name, account, bank)) in lines[1..].iter().zip(expected) {
        assert_eq!((line[0].as_str(), line[1].as_str(), line[2].as_str(), line[4].as_str()), (name, account, bank, "2026-03工资"));
        assert_eq!(decimal_fen(&line[3]), money(item(&approved, employee), "net_pay"), "{name}");
    }
    // In GBK: the same file, bytes a GBK portal reads.
    let (status, headers, gbk) = download(app, &format!("{path}/bank-file?encoding=gbk"), &org.t1_admin).await;
    assert_eq!((status, headers["content-type"].to_str().unwrap()), (200, "text/csv; charset=gbk"));
    assert!(std::str::from_utf8(&gbk).is_err(), "GBK, not UTF-8");
    let (decoded, _, malformed) = encoding_rs::GBK.decode(&gbk);
    assert!(!malformed);
    assert_eq!(decoded.as_bytes(), utf8.as_slice());

    // Who may download what.
    let refused = app.get(&format!("{path}/bank-file"), Some(&org.t1_clerk)).await;
    refused.expect(403);
    assert_eq!(refused.body["message"], "missing permission employee:read_sensitive");
    app.get(&format!("{path}/bank-file"), None).await.expect(401);
    for outsider in [&org.t2_admin, &org.p2_admin] {
        app.get(&format!("{path}/export"), Some(outsider)).await.expect(404);
        app.get(&format!("{path}/bank-file"), Some(outsider)).await.expect(404);
    }
    app.get(&format!("{path}/export?format=pdf"), Some(&org.t1_clerk)).await.expect_field_error("format");
    app.get(&format!("{path}/bank-file?format=xlsx"), Some(&org.t1_admin)).await.expect_field_error("format");
    app.get(&format!("{path}/bank-file?encoding=big5"), Some(&org.t1_admin)).await.expect_field_error("encoding");
    app.get(&format!("{path}/export?sheet=1"), Some(&org.t1_clerk)).await.expect(400);
    // Approved is final: an import is a 409.
    import(app, sheet, &org.t1_clerk, b"employee_no,bonus\r\nE001,1\r\n").await.expect(409);

    // Each download is in the audit trail; the bank file's entry holds no account number.
    assert_eq!(audited(app, &org, sheet, "payroll_sheet.export").await.len(), 2);
    let bank = audited(app, &org, sheet, "payroll_sheet.bank_file").await;
    assert_eq!(bank.len(), 2);
    assert!(!Value::Array(bank.clone()).to_string().contains("6222020200112233445"), "{bank:?}");
    assert_eq!(bank[0]["after"]["total"], approved["totals"]["net_pay"]);
    assert_eq!(audited(app, &org, sheet, "payroll_sheet.import").await.len(), 2);
});

e2e!(a_bank_file_names_the_employees_without_a_bank_account_and_is_not_produced, |app| {
    let org = app.org().await;
    let [_, li, _] = payees(app, &org).await;
    let extra = app
        .create(
            "/api/v1/employees",
            json!({"name": "赵六", "employee_no": "E004", "base_salary": 900_000, "housing_fund_rate": "0.05"}),
            &org.t1_admin,
        )
        .await;
    // 李四's account is removed: two employees without one.
    app.put(&format!("/api/v1/employees/{li}"), json!({"bank_account": null}), Some(&org.t1_admin)).await.expect(200);
    let sheet = sheet_of(app, &org, json!({"period": "2026-04"})).await;
    settle(app, &org, sheet).await;

    let r = app.get(&format!("/api/v1/payroll-sheets/{sheet}/bank-file?encoding=gbk"), Some(&org.t1_admin)).await;
    r.expect(409);
    let errors = r.data()["errors"].as_array().unwrap();
    let messages: Vec<&str> = errors.iter().map(|e| e["message"].as_str().unwrap()).collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    let at_approval = "had no bank account when the sheet was approved";
    assert!(
        messages[0].starts_with(&format!("李四 (E002) {at_approval}")) && messages[1].starts_with(&format!("赵六 (E004) {at_approval}")),
        "{messages:?}"
    );
    assert!(errors.iter().all(|e| e["field"].as_str().unwrap().ends_with("].bank_account")), "{errors:?}");
    assert!(audited(app, &org, sheet, "payroll_sheet.bank_file").await.is_empty(), "no file, no download");

    // Accounts added after the approval are not the approved sheet's to pay: still no file.
    app.put(&format!("/api/v1/employees/{li}"), json!({"bank_account": "6217000010001234567"}), Some(&org.t1_admin)).await.expect(200);
    app.put(
        &format!("/api/v1/employees/{}", id(&extra)),
        json!({"bank_account": "6214830100000001", "bank_name": "招商银行"}),
        Some(&org.t1_admin),
    )
    .await
    .expect(200);
    let r = app.get(&format!("/api/v1/payroll-sheets/{sheet}/bank-file"), Some(&org.t1_admin)).await;
    r.expect(409);
    assert_eq!(r.data()["errors"].as_array().unwrap().len(), 2, "{}", r.body);
    // A sheet approved after they were added pays them.
    let next = sheet_of(app, &org, json!({"period": "2026-05"})).await;
    settle(app, &org, next).await;
    let (status, _, bytes) = download(app, &format!("/api/v1/payroll-sheets/{next}/bank-file"), &org.t1_admin).await;
    assert_eq!(status, 200);
    assert_eq!(csv_rows(std::str::from_utf8(&bytes).unwrap()).len(), 5);
});

e2e!(a_bank_file_pays_the_account_approved_with_the_sheet_not_one_changed_since, |app| {
    let org = app.org().await;
    let [zhang, _, _] = payees(app, &org).await;
    let sheet = sheet_of(app, &org, json!({"period": "2026-06"})).await;
    settle(app, &org, sheet).await;
    // After the approval, the account of 张三 is changed to another one.
    app.put(&format!("/api/v1/employees/{zhang}"), json!({"bank_account": "6222029999999999999"}), Some(&org.t1_admin)).await.expect(200);

    let (status, _, bytes) = download(app, &format!("/api/v1/payroll-sheets/{sheet}/bank-file"), &org.t1_admin).await;
    assert_eq!(status, 200);
    let lines = csv_rows(std::str::from_utf8(&bytes).unwrap());
    let line = lines.iter().find(|l| l[0] == "张三").unwrap();
    assert_eq!(line[1], "6222020200112233445", "the approved account is paid");
    assert!(!lines.iter().any(|l| l[1] == "6222029999999999999"), "the new account is not: {lines:?}");

    // The change is in the employee's trail, each side with its last four.
    let trail =
        app.get(&format!("/api/v1/audit-logs?target_type=employee&target_id={zhang}&action=employee.update"), Some(&org.admin)).await;
    trail.expect(200);
    let entry = &trail.data()["items"][0];
    assert_eq!(entry["before"]["bank_account"], "***************3445", "{entry}");
    assert_eq!(entry["after"]["bank_account"], "***************9999", "{entry}");
});

e2e!(an_import_with_errors_lists_them_by_row_and_column_and_changes_nothing, |app| {
    let org = app.org().await;
    payees(app, &org).await;
    let sheet = sheet_of(app, &org, json!({"period": "2026-05"})).await;
    let path = format!("/api/v1/payroll-sheets/{sheet}");
    let before = app.get(&path, Some(&org.t1_clerk)).await.data().clone();

    // (the file, the fields the 400 names, a word its first message says)
    let date = {
        let mut workbook = rust_xlsxwriter::Workbook::new();
        let ws = workbook.add_worksheet();
        ws.write_string(0, 0, "employee_no").unwrap();
        ws.write_string(0, 1, "bonus").unwrap();
        ws.write_string(1, 0, "E001").unwrap();
        let day = rust_xlsxwriter::ExcelDateTime::from_ymd(2026, 5, 1).unwrap();
        ws.write_datetime_with_format(1, 1, &day, &rust_xlsxwriter::Format::new().set_num_format("yyyy-mm-dd")).unwrap();
        workbook.save_to_buffer().unwrap()
    };
    let cases: Vec<(Vec<u8>, Vec<&str>, &str)> = vec![
        (b"%PDF-1.7\n%\xE2\xE3\xCF\xD3\n1 0 obj".to_vec(), vec!["file"], "PDF"),
        (Vec::new(), vec!["file"], "empty"),
        (b"employee_no,salary\r\nE001,1\r\n".to_vec(), vec!["columns.salary"], "unknown column"),
        (b"name,bonus\r\nE001,1\r\n".to_vec(), vec!["columns.name", "columns.employee_no"], "unknown column"),
        (b"employee_no,bonus\r\nE001,1\r\nE999,2\r\n".to_vec(), vec!["rows[3].employee_no"], "E999"),
        (b"employee_no,bonus\r\nE001,1\r\nE002,2\r\nE001,3\r\n".to_vec(), vec!["rows[4].employee_no"], "also on row 2"),
        (
            b"employee_no,bonus,allowance\r\nE001,1.005,\r\nE002,,-5\r\n".to_vec(),
            vec!["rows[2].bonus", "rows[3].allowance"],
            "two decimals",
        ),
        (xlsx(&[&["employee_no", "employee_name"], &["E001", "李四"]]), vec!["rows[2].employee_name"], "张三"),
        (date, vec!["rows[2].bonus"], "a date"),
        (b"employee_no\r\nE001\r\nE002\r\nE003\r\nE004\r\n".to_vec(), vec!["file"], "employees (3)"),
    ];
    for (file, fields, says) in cases {
        let r = import(app, sheet, &org.t1_clerk, &file).await;
        r.expect(400);
        let errors = r.data()["errors"].as_array().unwrap_or_else(|| panic!("no errors in {}", r.body));
        let named: Vec<&str> = errors.iter().map(|e| e["field"].as_str().unwrap()).collect();
        assert_eq!(named, fields, "{}", r.body);
        assert!(errors[0]["message"].as_str().unwrap().contains(says), "{}", r.body);
    }

    // The form itself.
    let url = app.url(&format!("{path}/items/import"));
    let post = |content_type: String, body: Vec<u8>| {
        app.client.post(url.clone()).bearer_auth(&org.t1_clerk).header("content-type", content_type).body(body)
    };
    let (ct, body) = form(&[("note", "n.txt", b"x")]);
    app.send(post(ct, body)).await.expect_field_error("note");
    let (ct, body) = form(&[]);
    app.send(post(ct, body)).await.expect(400);
    let csv = b"employee_no,bonus\r\nE001,1\r\n";
    let (ct, body) = form(&[("file", "a.csv", csv), ("file", "b.csv", csv)]);
    app.send(post(ct, body)).await.expect_field_error("file");
    app.send(post("application/json".into(), b"{}".to_vec())).await.expect(400);
    // Past 16 MiB: 413, from the declared length before anything is read.
    let (ct, body) = form(&[("file", "big.csv", &vec![b'1'; 16 * 1024 * 1024 + 1])]);
    app.send(post(ct, body)).await.expect(413);
    // Without a token, and without payroll:update.
    let (ct, body) = form(&[("file", "a.csv", csv)]);
    app.send(app.client.post(url.clone()).header("content-type", ct).body(body)).await.expect(401);
    let body = json!({"code": "payroll_reader", "name": "payroll_reader", "party_type": "tenant", "permissions": ["payroll:read"]});
    let reader_role = id(&app.create("/api/v1/roles", body, &org.t1_admin).await);
    let (_, reader) = app.user_token(&org.t1_admin, "payrollreader", json!({"role_ids": [reader_role]})).await;
    let refused = import(app, sheet, &reader, csv).await;
    refused.expect(403);
    assert_eq!(refused.body["message"], "missing permission payroll:update");

    // Nothing changed, nothing was recorded.
    let after = app.get(&path, Some(&org.t1_clerk)).await.data().clone();
    assert_eq!(after, before);
    assert!(audited(app, &org, sheet, "payroll_sheet.import").await.is_empty());
});

e2e!(a_name_that_would_run_as_a_formula_after_a_separator_is_defused_in_every_csv, |app| {
    let org = app.org().await;
    let [zhang, _, _] = payees(app, &org).await;
    let evil = "Li;=cmd|' /C calc'!A0;";
    app.put(&format!("/api/v1/employees/{zhang}"), json!({"name": evil}), Some(&org.t1_admin)).await.expect(200);
    let sheet = sheet_of(app, &org, json!({"period": "2026-07"})).await;
    settle(app, &org, sheet).await;
    let path = format!("/api/v1/payroll-sheets/{sheet}");
    for file in [format!("{path}/export?format=csv"), format!("{path}/bank-file?encoding=utf-8"), format!("{path}/bank-file?encoding=gbk")]
    {
        let (status, _, bytes) = download(app, &file, &org.t1_admin).await;
        assert_eq!(status, 200, "{file}: {}", String::from_utf8_lossy(&bytes));
        let text = if file.ends_with("gbk") { encoding_rs::GBK.decode(&bytes).0.into_owned() } else { String::from_utf8(bytes).unwrap() };
        // Opened with `;` (or a tab, or `|`) as the separator, no cell starts a formula.
        for separator in [';', ',', '\t', '|'] {
            for cell in text.lines().flat_map(|l| l.split(separator)) {
                let cell = cell.trim_start_matches(['"', ' ', '\u{feff}']);
                assert!(!cell.starts_with(['=', '+', '-', '@']), "{file}, split at {separator:?}: {cell:?}");
            }
        }
        // Read as the csv it is, the name is there whole, marked.
        let rows = csv_rows(&text);
        assert!(rows.iter().flatten().any(|c| c == "Li;'=cmd|' /C calc'!A0;"), "{file}: {rows:?}");
    }
});
