//! Payroll sheets over HTTP: the lifecycle across months, calculation figures, four-eyes
//! approval, pay-slip delivery through the sandbox platform, scope and validation;
//! supplementary sheets, the once-a-year separately taxed bonus and an employee's tax year.
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
