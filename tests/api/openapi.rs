//! The API document at `/openapi.json` and its page at `/docs`.

use awc::http::StatusCode;
use serde_json::{json, Value};

use crate::helpers::spawn_app;

#[actix_web::test]
async fn the_document_and_its_page_need_no_key() {
    let app = spawn_app().await;
    let admin = app
        .make_key(None, json!({"name": "root", "roles": ["admin"]}))
        .await;
    // Keys are needed from now on, except for the document and its page.
    let (status, _, _) = app.send("GET", "/v1/jobs", None, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let (status, doc, _) = app.send("GET", "/openapi.json", None, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(doc["openapi"], "3.1.0");
    assert!(doc["paths"]["/v1/retrieve"]["post"].is_object());
    // A key, or none where keys are off.
    assert_eq!(
        doc["paths"]["/v1/retrieve"]["post"]["security"],
        json!([{"api_key": []}, {}])
    );
    assert_eq!(doc["paths"]["/healthz"]["get"]["security"], json!([]));

    let (status, page, _) = app.send("GET", "/docs/", None, None).await;
    assert_eq!(status, StatusCode::OK);
    let page = page.as_str().expect("an HTML page");
    assert!(page.contains("swagger-ui"), "{page}");
    let (status, script, _) = app
        .send("GET", "/docs/swagger-ui-bundle.js", None, None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(script.as_str().is_some_and(|s| s.len() > 100_000));

    assert_eq!(app.permanent_redirect("/docs").await, "/docs/");

    // The key still works where it is needed.
    let (status, _, _) = app.send("GET", "/v1/jobs", None, Some(&admin)).await;
    assert_eq!(status, StatusCode::OK);
}

/// The schema a request body refers to, as the document's components
/// hold it.
fn request_schema<'a>(doc: &'a Value, operation: &Value) -> Option<&'a Value> {
    let reference =
        operation["requestBody"]["content"]["application/json"]["schema"]["$ref"].as_str()?;
    let name = reference.strip_prefix("#/components/schemas/")?;
    doc["components"]["schemas"].get(name)
}

#[actix_web::test]
async fn every_request_example_in_the_document_is_a_valid_request() {
    let app = spawn_app().await;
    // The example of `POST /v1/keys` makes a key, after which keys are
    // needed: every example is sent with an admin's.
    let admin = app.root_key().await;
    let (_, doc, _) = app.send("GET", "/openapi.json", None, None).await;
    let mut sent = 0;
    let mut accepted = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let Some(schema) = request_schema(&doc, operation) else {
                continue;
            };
            let example = schema
                .get("example")
                .unwrap_or_else(|| panic!("{method} {path}: no request example"));
            // Paths with ids name things made in this test's database.
            let path = path
                .replace(
                    "{name}",
                    if path.starts_with("/v1/jobs") {
                        "decay"
                    } else {
                        "owner"
                    },
                )
                .replace("{id}", "3f2c9a1e-5b7d-4c11-9e0a-2b6f4d8c7a10");
            let (status, body, _) = app
                .send(&method.to_uppercase(), &path, Some(example), Some(&admin))
                .await;
            sent += 1;
            // Examples that name records or topics which do not exist here
            // are refused as not found, never as invalid.
            assert!(
                status.is_success() || status == StatusCode::NOT_FOUND,
                "{method} {path}: {status} {body}"
            );
            if status.is_success() {
                accepted += 1;
            }
        }
    }
    assert!(sent >= 24, "only {sent} examples");
    assert!(
        accepted >= 12,
        "only {accepted} of {sent} examples stored or answered"
    );
}

/// Whether `example` has the shape of `actual`: the same keys in every
/// object, recursively (arrays by their first items, nulls by anything).
fn same_shape(example: &Value, actual: &Value, at: &str) {
    match (example, actual) {
        (Value::Object(e), Value::Object(a)) => {
            let keys = |m: &serde_json::Map<String, Value>| {
                m.keys().cloned().collect::<std::collections::BTreeSet<_>>()
            };
            assert_eq!(keys(e), keys(a), "{at}: example keys differ");
            for (key, value) in e {
                same_shape(value, &a[key], &format!("{at}.{key}"));
            }
        }
        (Value::Array(e), Value::Array(a)) => {
            if let (Some(e), Some(a)) = (e.first(), a.first()) {
                same_shape(e, a, &format!("{at}[0]"));
            }
        }
        (Value::Null, _) | (_, Value::Null) => {}
        (e, a) => assert_eq!(
            std::mem::discriminant(e),
            std::mem::discriminant(a),
            "{at}: {e} is not like {a}"
        ),
    }
}

#[actix_web::test]
async fn answer_examples_have_the_shape_of_real_answers() {
    let app = spawn_app().await;
    app.post("/v1/ingest/event", &crate::helpers::event("agent"))
        .await;
    app.run_job("decay").await;
    let admin = app
        .make_key(None, json!({"name": "root", "roles": ["admin"]}))
        .await;
    let (_, doc, _) = app.send("GET", "/openapi.json", None, None).await;
    let mut compared = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        let Some(example) =
            item["get"]["responses"]["200"]["content"]["application/json"].get("example")
        else {
            continue;
        };
        if path == "/openapi.json" {
            continue; // a sketch of the document, not all of it
        }
        let (status, actual, _) = app.send("GET", path, None, Some(&admin)).await;
        assert_eq!(status, StatusCode::OK, "{path}: {actual}");
        same_shape(example, &actual, path);
        compared += 1;
    }
    assert!(compared >= 5, "only {compared} answers compared");
}
