//! Payroll sheets over HTTP: the lifecycle across months, calculation figures, four-eyes
//! approval, pay-slip delivery through the sandbox platform, scope and validation.
#![allow(clippy::unwrap_used)]
use atrium_e2e::serde_json::{Value, json};
use atrium_e2e::{Org, TestApp, e2e};

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
    ] {
        assert!(paths.get(path).and_then(|p| p.get(method)).is_some(), "{method} {path} missing from the OpenAPI document");
    }
});
