//! Penetration-test findings on org and payroll, each pinned by a test: keyword search never
//! answers 5xx, money is bounded and never saturates, a tenant cannot switch off its own
//! four-eyes rule, and the audit trail shows no more than the audited record would.
#![allow(clippy::unwrap_used)]
use atrium_e2e::e2e;
use atrium_e2e::serde_json::{Value, json};

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
