//! Keys, roles and grants over HTTP: who may call what and see which
//! records, as clients holding different keys would find.

use std::process::Command;

use awc::http::StatusCode;
use engram::clock::Clock;
use engram::config::AuthMode;
use engram::startup::Application;
use serde_json::{json, Value};

use crate::helpers::{event, spawn_app, spawn_app_with, start_time, test_settings, TestApp};

const ROLES: [&str; 5] = ["read", "write", "revise", "metrics", "admin"];

/// A service with an admin key that sees everything (making it turns
/// protection on); answers the admin's secret too.
async fn protected() -> (TestApp, String) {
    let app = spawn_app().await;
    let admin = app
        .make_key(
            None,
            json!({"name": "root", "roles": ["admin"], "max_sensitivity": "hyper", "rate": 1e6}),
        )
        .await;
    (app, admin)
}

fn error_code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or_default()
}

/// `engram keys …` on the service's database, from another process.
fn cli(app: &TestApp, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_engram"))
        .arg("keys")
        .args(args)
        .env("ENGRAM_DB_PATH", app.db_path())
        .env_remove("ENGRAM_CONFIG")
        .output()
        .expect("the engram binary runs");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[actix_web::test]
async fn once_a_key_exists_every_request_but_the_health_checks_needs_one() {
    let app = spawn_app().await;
    let (status, _, _) = app.send("GET", "/v1/jobs", None, None).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "open on loopback while no key exists"
    );

    let (status, body, _) = app
        .send(
            "POST",
            "/v1/keys",
            Some(&json!({"name": "root", "roles": ["admin"], "max_sensitivity": "hyper"})),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let secret = body["secret"].as_str().unwrap().to_string();
    assert!(secret.starts_with("engram_") && secret.len() == 71);
    let key = &body["key"];
    assert_eq!(key["name"], "root");
    assert_eq!(key["roles"], json!(["admin"]));
    assert_eq!(key["max_sensitivity"], "hyper");
    assert_eq!(key["scopes"], json!([]));
    assert_eq!(key["revoked_at"], Value::Null);
    assert!(key.get("hash").is_none() && key.get("secret").is_none());

    for (header, why) in [
        (None, "no key"),
        (Some("engram_0000"), "an unknown key"),
        (Some(""), "an empty key"),
    ] {
        let (status, body, headers) = app.send("GET", "/v1/jobs", None, header).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{why}: {body}");
        assert_eq!(error_code(&body), "unauthenticated", "{why}");
        assert_eq!(headers.get("www-authenticate").unwrap(), "Bearer", "{why}");
    }
    // Not even a route's existence is told without a key.
    let (status, _, _) = app.send("GET", "/v1/nothing", None, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _, _) = app.send("GET", "/v1/nothing", None, Some(&secret)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    for path in ["/healthz", "/readyz"] {
        let (status, body, _) = app.send("GET", path, None, None).await;
        assert_eq!(status, StatusCode::OK, "{path}: {body}");
    }
    let (status, body, _) = app.send("GET", "/v1/jobs", None, Some(&secret)).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // Without a key a retrieval must state its trust; with one it may not.
    let (status, body, _) = app
        .send("POST", "/v1/retrieve", Some(&json!({})), Some(&secret))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[actix_web::test]
async fn keys_made_and_revoked_by_the_cli_apply_to_the_running_service_at_once() {
    let app = spawn_app().await;
    let out = cli(&app, &["create", "--name", "reader", "--role", "read"]);
    let secret = out.lines().last().unwrap().to_string();

    let (status, _, _) = app
        .send("POST", "/v1/retrieve", Some(&json!({})), None)
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "the new key protects it");
    let (status, body, _) = app
        .send("POST", "/v1/retrieve", Some(&json!({})), Some(&secret))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    cli(&app, &["revoke", "reader"]);
    let (status, body, _) = app
        .send("POST", "/v1/retrieve", Some(&json!({})), Some(&secret))
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    // Revoking every key does not open the service again.
    let (status, _, _) = app
        .send("POST", "/v1/retrieve", Some(&json!({})), None)
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[actix_web::test]
async fn admins_list_and_revoke_keys_over_http() {
    let (app, admin) = protected().await;
    let reader = app
        .make_key(Some(&admin), json!({"name": "reader", "scopes": ["a"]}))
        .await;
    let (status, body, _) = app.send("GET", "/v1/keys", None, Some(&admin)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let names: Vec<&str> = body["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["reader", "root"]);
    let listed = body.to_string();
    assert!(!listed.contains(&reader) && !listed.contains(&admin));
    let made = &body["keys"][0];
    assert_eq!(made["roles"], json!(["read"]), "read by default");
    assert_eq!(made["max_sensitivity"], "low", "low by default");

    let (status, body, _) = app
        .send("POST", "/v1/retrieve", Some(&json!({})), Some(&reader))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body, _) = app
        .send("DELETE", "/v1/keys/reader", None, Some(&admin))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["key"]["revoked_at"].is_string(), "{body}");
    let (status, _, _) = app
        .send("POST", "/v1/retrieve", Some(&json!({})), Some(&reader))
        .await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "revoked on the next request"
    );

    let (status, again, _) = app
        .send("DELETE", "/v1/keys/reader", None, Some(&admin))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(again["key"]["revoked_at"], body["key"]["revoked_at"]);
    let (status, body, _) = app
        .send("DELETE", "/v1/keys/ghost", None, Some(&admin))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, body, _) = app
        .send(
            "POST",
            "/v1/keys",
            Some(&json!({"name": "reader"})),
            Some(&admin),
        )
        .await;
    assert_eq!(
        status,
        StatusCode::CONFLICT,
        "names are never reused: {body}"
    );
    for (bad, field) in [
        (json!({"name": "has space"}), "name"),
        (json!({"name": "engram:x"}), "name"),
        (json!({"name": "k", "roles": ["root"]}), "roles[0]"),
        (json!({"name": "k", "rate": 0}), "rate"),
        (json!({"name": "k", "scopes": [""]}), "scopes[0]"),
        (
            json!({"name": "k", "max_sensitivity": "top"}),
            "max_sensitivity",
        ),
        (json!({"roles": ["read"]}), "name"),
    ] {
        let (status, body, _) = app.send("POST", "/v1/keys", Some(&bad), Some(&admin)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.starts_with(field), "{bad}: {message}");
    }
}

#[actix_web::test]
async fn a_public_address_without_a_key_refuses_to_start_unless_told_to() {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = test_settings(&dir.path().join("engram.db"));
    settings.server.listen = "0.0.0.0:0".to_string();
    let (clock, _) = Clock::manual(start_time());
    let refused = Application::build(settings.clone(), clock.clone())
        .await
        .err()
        .expect("refused");
    let message = refused.to_string();
    assert!(message.contains("engram keys create"), "{message}");
    assert!(message.contains("auth.mode = \"off\""), "{message}");

    settings.auth.mode = AuthMode::Off;
    let app = Application::build(settings, clock).await.expect("starts");
    let handle = app.handle();
    let server = actix_web::rt::spawn(app.run_until_stopped());
    handle.stop(true).await;
    server.await.unwrap().unwrap();
}

#[actix_web::test]
async fn required_mode_needs_a_key_from_the_start_and_off_mode_never() {
    let app = spawn_app_with(|s| s.auth.mode = AuthMode::Required).await;
    let (status, _, _) = app.send("GET", "/v1/jobs", None, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let app = spawn_app_with(|s| s.auth.mode = AuthMode::Off).await;
    app.make_key(None, json!({"name": "k"})).await;
    let (status, body, _) = app.send("GET", "/v1/jobs", None, None).await;
    assert_eq!(status, StatusCode::OK, "off means off: {body}");
}

/// One call of the API, and the role it needs.
struct Call {
    method: &'static str,
    path: String,
    body: Option<Value>,
    role: &'static str,
    /// What the call answers when allowed.
    ok: StatusCode,
}

fn fact(object: &str) -> Value {
    json!({
        "type": "semantic", "sensitivity": "low",
        "payload": {"kind": "semantic", "subject": "go", "predicate": "version", "object": object},
        "provenance": {"sources": [{"kind": "observation", "ref": format!("notes-{object}"), "timestamp": "2026-01-01T00:00:00Z"}]}
    })
}

/// Makes a record with the admin key; answers its id.
async fn made(app: &TestApp, admin: &str, path: &str, body: Value) -> String {
    let (status, body, _) = app.send("POST", path, Some(&body), Some(admin)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["record"]["id"].as_str().unwrap().to_string()
}

/// Every endpoint, each with fresh records made by the admin so that an
/// allowed call succeeds. `n` keeps names apart.
async fn every_call(app: &TestApp, admin: &str, n: usize) -> Vec<Call> {
    let episode = made(app, admin, "/v1/ingest/event", event("agent")).await;
    let mut facts = Vec::new();
    for i in 0..8 {
        facts.push(made(app, admin, "/v1/records", fact(&format!("{n}-{i}"))).await);
    }
    let victim = format!("victim-{n}");
    app.make_key(Some(admin), json!({"name": victim})).await;
    let by = |mut body: Value| {
        body["actor"] = json!("agent");
        body["rationale"] = json!("because");
        Some(body)
    };
    let call = |method, path: String, body: Option<Value>, role, ok| Call {
        method,
        path,
        body,
        role,
        ok,
    };
    use StatusCode as S;
    vec![
        call(
            "POST",
            "/v1/ingest/event".into(),
            Some(event("agent")),
            "write",
            S::CREATED,
        ),
        call(
            "POST",
            "/v1/ingest/tool-output".into(),
            Some(json!({"source": "agent", "tool_name": "ls", "result": "ok"})),
            "write",
            S::CREATED,
        ),
        call(
            "POST",
            "/v1/ingest/observation".into(),
            Some(json!({"source": "agent", "subject": "s", "predicate": "p", "object": "o"})),
            "write",
            S::CREATED,
        ),
        call(
            "POST",
            "/v1/ingest/outcome".into(),
            Some(
                json!({"source": "agent", "target_record_id": episode, "outcome_status": "success"}),
            ),
            "write",
            S::OK,
        ),
        call(
            "POST",
            "/v1/ingest/working-state".into(),
            Some(json!({"source": "agent", "thread_id": format!("t{n}"), "state": "executing"})),
            "write",
            S::CREATED,
        ),
        call(
            "POST",
            "/v1/ingest/batch".into(),
            Some(
                json!({"items": [{"kind": "event", "source": "agent", "event_kind": "e", "ref": "r"}]}),
            ),
            "write",
            S::CREATED,
        ),
        call(
            "POST",
            "/v1/records".into(),
            Some(fact("new")),
            "write",
            S::CREATED,
        ),
        call(
            "POST",
            format!("/v1/records/{}/reinforce", facts[0]),
            by(json!({})),
            "write",
            S::OK,
        ),
        call(
            "POST",
            format!("/v1/records/{}/penalize", facts[1]),
            by(json!({"amount": 0.1})),
            "write",
            S::OK,
        ),
        call(
            "POST",
            format!("/v1/records/{}/history", facts[2]),
            Some(json!({})),
            "read",
            S::OK,
        ),
        call(
            "POST",
            "/v1/revisions/supersede".into(),
            by(json!({"old_id": facts[3], "new_record": fact("superseding")})),
            "revise",
            S::CREATED,
        ),
        call(
            "POST",
            "/v1/revisions/fork".into(),
            by(json!({"source_id": facts[4], "forked_record": fact("forked")})),
            "revise",
            S::CREATED,
        ),
        call(
            "POST",
            "/v1/revisions/retract".into(),
            by(json!({"id": facts[5]})),
            "revise",
            S::OK,
        ),
        call(
            "POST",
            "/v1/revisions/merge".into(),
            by(json!({"ids": [facts[6], facts[7]], "merged_record": fact("merged")})),
            "revise",
            S::CREATED,
        ),
        call(
            "POST",
            "/v1/revisions/contest".into(),
            by(json!({"id": facts[2]})),
            "revise",
            S::OK,
        ),
        call(
            "POST",
            "/v1/retrieve".into(),
            Some(json!({})),
            "read",
            S::OK,
        ),
        call(
            "POST",
            format!("/v1/retrieve/{}", facts[0]),
            Some(json!({})),
            "read",
            S::OK,
        ),
        call("GET", "/v1/jobs".into(), None, "admin", S::OK),
        call(
            "PUT",
            "/v1/jobs/decay".into(),
            Some(json!({"enabled": false})),
            "admin",
            S::OK,
        ),
        call("POST", "/v1/jobs/decay/run".into(), None, "admin", S::OK),
        call("GET", "/metrics".into(), None, "metrics", S::OK),
        call("GET", "/v1/metrics".into(), None, "metrics", S::OK),
        call(
            "POST",
            "/v1/keys".into(),
            Some(json!({"name": format!("made-{n}")})),
            "admin",
            S::CREATED,
        ),
        call("GET", "/v1/keys".into(), None, "admin", S::OK),
        call("DELETE", format!("/v1/keys/{victim}"), None, "admin", S::OK),
    ]
}

#[actix_web::test]
async fn every_endpoint_answers_each_role_as_the_role_allows() {
    let (app, admin) = protected().await;
    for (n, role) in ROLES.iter().enumerate() {
        let key = app
            .make_key(
                Some(&admin),
                json!({"name": format!("{role}-key"), "roles": [role], "max_sensitivity": "hyper", "rate": 1e6}),
            )
            .await;
        for call in every_call(&app, &admin, n).await {
            let (status, body, _) = app
                .send(call.method, &call.path, call.body.as_ref(), Some(&key))
                .await;
            let what = format!("{role} key: {} {}", call.method, call.path);
            if *role == call.role || *role == "admin" {
                assert_eq!(status, call.ok, "{what}: {body}");
            } else {
                assert_eq!(status, StatusCode::FORBIDDEN, "{what}: {body}");
                assert_eq!(error_code(&body), "permission_denied", "{what}");
                let message = body["error"]["message"].as_str().unwrap();
                assert!(message.contains(call.role), "{what}: {message}");
            }
        }
    }
}
