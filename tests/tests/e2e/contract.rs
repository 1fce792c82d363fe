//! The OpenAPI document held against the server it describes. Runs on SQLite and PostgreSQL.
#![allow(clippy::unwrap_used)]
use atrium_e2e::serde_json::{Value, json};
use atrium_e2e::{TestApp, e2e};

/// Every (method, path, permission, example body) of the document that names a permission.
/// The body is the example of the operation's request schema: a body that parses, so the
/// answer is about the permission, not about the body.
async fn permissioned_operations(app: &TestApp) -> Vec<(String, String, String, Value)> {
    let doc = app.get("/api/v1/openapi.json", None).await;
    assert_eq!(doc.status, 200, "{}", doc.body);
    let mut out = vec![];
    for (path, item) in doc.body["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if let Some(p) = op["x-permission"].as_str() {
                let schema = &op["requestBody"]["content"]["application/json"]["schema"];
                let example = match schema["$ref"].as_str().and_then(|r| r.strip_prefix("#/components/schemas/")) {
                    Some(name) => doc.body["components"]["schemas"][name]["example"].clone(),
                    None => schema["example"].clone(),
                };
                if !schema.is_null() {
                    assert!(example.is_object(), "{method} {path}: its request body has no example");
                }
                // Required query parameters get a value of their type, so the answer is about
                // the permission, not about a missing parameter.
                let mut path = path.clone();
                let mut sep = '?';
                for param in op["parameters"].as_array().into_iter().flatten() {
                    if param["in"] == "query" && param["required"] == true {
                        let schema = match param["schema"]["$ref"].as_str().and_then(|r| r.strip_prefix("#/components/schemas/")) {
                            Some(name) => &doc.body["components"]["schemas"][name],
                            None => &param["schema"],
                        };
                        let value = match (schema["type"].as_str(), schema["format"].as_str()) {
                            (_, Some("date")) => "2026-11-01",
                            (Some("integer"), _) => "1",
                            _ => "x",
                        };
                        path.push_str(&format!("{sep}{}={value}", param["name"].as_str().unwrap()));
                        sep = '&';
                    }
                }
                out.push((method.clone(), path, p.to_owned(), example));
            }
        }
    }
    out
}

// For each operation: a user holding every permission of the catalogue except the one the
// document names is refused with 403 naming it. Were the route checking another permission
// than the document says, this user would hold it and get past the check.
e2e!(each_operation_checks_the_permission_the_document_names, |app| {
    let admin = app.admin_token().await;
    let catalogue: Vec<String> = app
        .get("/api/v1/roles/permissions", Some(&admin))
        .await
        .data()
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_owned())
        .collect();
    let role = app
        .create("/api/v1/roles", json!({"code": "probe", "name": "Probe", "party_type": "platform", "permissions": catalogue}), &admin)
        .await;
    let role_path = format!("/api/v1/roles/{}", role["id"]);
    let (_, token) = app.user_token(&admin, "probe", json!({"role_ids": [role["id"]]})).await;

    let operations = permissioned_operations(app).await;
    assert!(operations.len() >= 40, "only {} operations name a permission", operations.len());
    for (method, path, permission, body) in operations {
        assert!(catalogue.contains(&permission), "{method} {path}: {permission} is not in the catalogue");
        let others: Vec<&String> = catalogue.iter().filter(|p| **p != permission).collect();
        app.put(&role_path, json!({"permissions": others}), Some(&admin)).await.expect(200);

        let url = app.url(&path.replace("{id}", "1"));
        let req = match method.as_str() {
            "get" => app.client.get(url),
            "post" if body.is_null() => app.client.post(url),
            "post" => app.client.post(url).json(&body),
            "put" => app.client.put(url).json(&body),
            "delete" => app.client.delete(url),
            other => panic!("{other} {path}: no probe for this method"),
        };
        let r = app.send(req.bearer_auth(&token)).await;
        assert_eq!(r.status, 403, "{method} {path} without {permission}: {}", r.body);
        assert_eq!(r.body["message"], Value::from(format!("missing permission {permission}")), "{method} {path}");
    }
});
