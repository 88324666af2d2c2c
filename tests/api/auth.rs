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

/// The names of the keys a `GET /v1/keys` answered.
fn key_names(body: &Value) -> Vec<&str> {
    body["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].as_str().unwrap())
        .collect()
}

fn error_code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or_default()
}

/// `engram keys …` on the service's database, from another process.
fn cli(app: &TestApp, args: &[&str]) -> String {
    let database = app.database_env();
    let out = Command::new(env!("CARGO_BIN_EXE_engram"))
        .arg("keys")
        .args(args)
        .envs(database)
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

    // Made in another process: the service needs keys once it has seen
    // one, well within a second.
    let made = std::time::Instant::now();
    loop {
        let (status, _, _) = app
            .send("POST", "/v1/retrieve", Some(&json!({})), None)
            .await;
        if status == StatusCode::UNAUTHORIZED {
            break;
        }
        assert!(
            made.elapsed() < std::time::Duration::from_secs(1),
            "still open a second after a key was made"
        );
        actix_web::rt::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let (status, body, _) = app
        .send("POST", "/v1/retrieve", Some(&json!({})), Some(&secret))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    cli(&app, &["revoke", "reader"]);
    // Revoked in another process: refused once the service reads the key
    // again, well within a second.
    let revoked = std::time::Instant::now();
    loop {
        let (status, body, _) = app
            .send("POST", "/v1/retrieve", Some(&json!({})), Some(&secret))
            .await;
        if status == StatusCode::UNAUTHORIZED {
            break;
        }
        assert_eq!(status, StatusCode::OK, "{body}");
        assert!(
            revoked.elapsed() < std::time::Duration::from_secs(1),
            "still let in a second after it was revoked"
        );
        actix_web::rt::time::sleep(std::time::Duration::from_millis(20)).await;
    }
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
    let names = key_names(&body);
    assert_eq!(names, ["reader", "root"]);
    let listed = body.to_string();
    assert!(!listed.contains(&reader) && !listed.contains(&admin));
    let made = &body["keys"][0];
    assert_eq!(made["roles"], json!(["read"]), "read by default");
    assert_eq!(made["max_sensitivity"], "low", "low by default");
    // The rate it is held to: the setting's, as it has none of its own.
    assert_eq!(made["rate"], json!(100.0), "auth.default_rate");
    assert_eq!(made["rate_is_default"], json!(true));
    assert_eq!(body["keys"][1]["rate"], json!(1e6));
    assert_eq!(body["keys"][1]["rate_is_default"], json!(false));

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
async fn an_admin_key_makes_sees_and_revokes_only_keys_within_its_grant() {
    let (app, root) = protected().await;
    let team_a = app
        .make_key(
            Some(&root),
            json!({"name": "team-a-admin", "roles": ["admin"], "scopes": ["team-a"], "rate": 1e6}),
        )
        .await;
    app.make_key(Some(&root), json!({"name": "team-b", "scopes": ["team-b"]}))
        .await;
    // Wider than its own grant, field by field: refused, nothing made.
    for (wide, field) in [
        (
            json!({"name": "esc", "roles": ["admin"], "max_sensitivity": "hyper", "scopes": ["team-a"]}),
            "max_sensitivity",
        ),
        (
            json!({"name": "esc", "roles": ["admin"], "scopes": []}),
            "scopes",
        ),
        (
            json!({"name": "esc", "scopes": ["team-a", "team-b"]}),
            "scopes[1]",
        ),
    ] {
        let (status, body, _) = app
            .send("POST", "/v1/keys", Some(&wide), Some(&team_a))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{wide}: {body}");
        assert_eq!(error_code(&body), "permission_denied");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.starts_with(field), "{wide}: {message}");
    }
    // Within it: made, and its delegate is held to the same grant.
    let delegate = app
        .make_key(
            Some(&team_a),
            json!({"name": "delegate", "roles": ["admin"], "scopes": ["team-a"], "rate": 1e6}),
        )
        .await;
    let (status, body, _) = app
        .send(
            "POST",
            "/v1/keys",
            Some(&json!({"name": "esc2", "roles": ["read"], "scopes": ["team-b"]})),
            Some(&delegate),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "second level: {body}");
    // A hyper team-b record stays out of the delegates' reach.
    let (status, body, _) = app
        .send(
            "POST",
            "/v1/records",
            Some(&record(
                "0190a3d2-0000-7000-8000-00000000b0b0",
                "hyper",
                Some("team-b"),
            )),
            Some(&root),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let hidden = body["record"]["id"].as_str().unwrap().to_string();
    for key in [&team_a, &delegate] {
        let (status, _, _) = app
            .send(
                "POST",
                &format!("/v1/retrieve/{hidden}"),
                Some(&json!({})),
                Some(key),
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
    // Listing and revoking: keys beyond the grant do not exist for it.
    for key in [&team_a, &delegate] {
        let (status, body, _) = app.send("GET", "/v1/keys", None, Some(key)).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let names = key_names(&body);
        assert_eq!(names, ["delegate", "team-a-admin"]);
    }
    for name in ["root", "team-b"] {
        let (status, body, _) = app
            .send("DELETE", &format!("/v1/keys/{name}"), None, Some(&delegate))
            .await;
        let (_, missing, _) = app
            .send("DELETE", "/v1/keys/ghost", None, Some(&delegate))
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{name}: {body}");
        assert_eq!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .replace(name, "ghost"),
            missing["error"]["message"].as_str().unwrap(),
            "hidden and missing keys answer alike"
        );
    }
    let (status, _, _) = app.send("GET", "/v1/keys", None, Some(&root)).await;
    assert_eq!(status, StatusCode::OK, "root is not revoked");
    let (status, body, _) = app
        .send("DELETE", "/v1/keys/delegate", None, Some(&team_a))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
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
    let mut topics = Vec::new();
    for i in 0..4 {
        topics.push(topic(app, admin, &format!("topic {n} {i}")).await);
    }
    let edge = json!({"to_topic_id": topics[3], "kind": "related"});
    let (status, body, _) = app
        .send(
            "POST",
            &format!("/v1/topics/{}/edges", topics[2]),
            Some(&edge),
            Some(admin),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
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
        call(
            "POST",
            "/v1/topics/ingest".into(),
            Some(json!({"title": format!("new topic {n}"), "source": "agent"})),
            "write",
            S::CREATED,
        ),
        call(
            "POST",
            format!("/v1/topics/{}/view", topics[0]),
            Some(json!({})),
            "read",
            S::OK,
        ),
        call(
            "POST",
            format!("/v1/topics/{}/fields/status/history", topics[0]),
            Some(json!({})),
            "read",
            S::OK,
        ),
        call(
            "POST",
            format!("/v1/topics/{}/edges", topics[0]),
            Some(json!({"to_topic_id": topics[1], "kind": "depends_on"})),
            "write",
            S::CREATED,
        ),
        call(
            "DELETE",
            format!("/v1/topics/{}/edges", topics[2]),
            Some(edge),
            "write",
            S::OK,
        ),
        call(
            "POST",
            format!("/v1/topics/{}/archive", topics[1]),
            Some(json!({})),
            "write",
            S::OK,
        ),
    ]
}

/// Makes a topic with one field with the admin key; answers its id.
async fn topic(app: &TestApp, admin: &str, title: &str) -> String {
    let body = json!({"placement": "new_topic", "title": title, "source": "agent",
                      "fields": [{"name": "status", "value": "green"}]});
    let (status, body, _) = app
        .send("POST", "/v1/topics/ingest", Some(&body), Some(admin))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["topic_id"].as_str().unwrap().to_string()
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

/// Ids of the records of a retrieval.
fn ids_of(body: &Value) -> Vec<String> {
    body["records"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

fn scoped_fact(scope: &str) -> Value {
    let mut record = fact(scope);
    record["scope"] = json!(scope);
    record
}

/// A record as an import would make it: with its own id.
fn record(id: &str, sensitivity: &str, scope: Option<&str>) -> Value {
    let mut record = fact(id);
    record["id"] = json!(id);
    record["sensitivity"] = json!(sensitivity);
    if let Some(scope) = scope {
        record["scope"] = json!(scope);
    }
    record
}

#[actix_web::test]
async fn a_request_s_trust_is_narrowed_by_its_key_never_widened() {
    let (app, admin) = protected().await;
    for (id, sensitivity, scope) in [
        ("low-none", "low", None),
        ("low-a", "low", Some("a")),
        ("low-b", "low", Some("b")),
        ("high-a", "high", Some("a")),
    ] {
        made(&app, &admin, "/v1/records", record(id, sensitivity, scope)).await;
    }
    let key = app
        .make_key(
            Some(&admin),
            json!({"name": "a-reader", "roles": ["read"], "max_sensitivity": "medium", "scopes": ["a"], "rate": 1e6}),
        )
        .await;
    let retrieve = |trust: Option<Value>| {
        let body = match trust {
            Some(trust) => json!({"trust": trust}),
            None => json!({}),
        };
        let app = &app;
        let key = key.clone();
        async move {
            let (status, body, _) = app
                .send("POST", "/v1/retrieve", Some(&body), Some(&key))
                .await;
            assert_eq!(status, StatusCode::OK, "{body}");
            let mut ids = ids_of(&body);
            ids.sort();
            ids
        }
    };
    // No trust: the grant's.
    assert_eq!(retrieve(None).await, ["low-a", "low-none"]);
    // Asking for more gets the grant, never more.
    assert_eq!(
        retrieve(Some(json!({"max_sensitivity": "hyper", "scopes": []}))).await,
        ["low-a", "low-none"]
    );
    assert_eq!(
        retrieve(Some(
            json!({"max_sensitivity": "hyper", "scopes": ["a", "b"]})
        ))
        .await,
        ["low-a", "low-none"]
    );
    // Naming only scopes outside the grant sees unscoped records only.
    assert_eq!(
        retrieve(Some(json!({"max_sensitivity": "low", "scopes": ["b"]}))).await,
        ["low-none"]
    );
    // Asking for less gets less.
    assert_eq!(
        retrieve(Some(json!({"max_sensitivity": "public"}))).await,
        Vec::<String>::new()
    );
    for (id, visible) in [("low-a", true), ("low-b", false), ("high-a", false)] {
        for path in [
            format!("/v1/retrieve/{id}"),
            format!("/v1/records/{id}/history"),
        ] {
            let (status, body, _) = app.send("POST", &path, Some(&json!({})), Some(&key)).await;
            if visible {
                assert_eq!(status, StatusCode::OK, "{path}: {body}");
            } else {
                assert_eq!(
                    (status, body),
                    (
                        StatusCode::NOT_FOUND,
                        json!({"error": {"code": "not_found", "message": "record not found"}})
                    ),
                    "{path}"
                );
            }
        }
    }
    // The trust stated is checked as without a key.
    let (status, body, _) = app
        .send(
            "POST",
            "/v1/retrieve",
            Some(&json!({"trust": {"max_sensitivity": "top"}})),
            Some(&key),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
}

#[actix_web::test]
async fn a_key_writes_only_within_its_grant() {
    let (app, admin) = protected().await;
    let key = app
        .make_key(
            Some(&admin),
            json!({"name": "a-writer", "roles": ["write", "revise", "read"], "max_sensitivity": "medium", "scopes": ["a", "c"], "rate": 1e6}),
        )
        .await;
    let send = |path: &'static str, body: Value| {
        let app = &app;
        let key = key.clone();
        async move { app.send("POST", path, Some(&body), Some(&key)).await }
    };
    // No scope: the key's first.
    let (status, body, _) = send("/v1/ingest/event", event("agent")).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["record"]["scope"], "a");
    let mut in_c = event("agent");
    in_c["scope"] = json!("c");
    let (status, body, _) = send("/v1/ingest/event", in_c).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["record"]["scope"], "c");

    let before = app.sql_number("SELECT COUNT(*) FROM records", &[]);
    let mut in_b = event("agent");
    in_b["scope"] = json!("b");
    let mut too_sensitive = event("agent");
    too_sensitive["sensitivity"] = json!("high");
    let mut batch_in_b = event("agent");
    batch_in_b["kind"] = json!("event");
    batch_in_b["scope"] = json!("b");
    let mut plain = event("agent");
    plain["kind"] = json!("event");
    for (path, body, field) in [
        ("/v1/ingest/event", in_b, "scope"),
        ("/v1/ingest/event", too_sensitive, "sensitivity"),
        ("/v1/records", scoped_fact("b"), "scope"),
        (
            "/v1/ingest/batch",
            json!({"items": [plain, batch_in_b]}),
            "items[1].scope",
        ),
    ] {
        let (status, answer, _) = send(path, body.clone()).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}: {answer}");
        assert_eq!(error_code(&answer), "permission_denied");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.starts_with(field), "{message}");
    }
    let after = app.sql_number("SELECT COUNT(*) FROM records", &[]);
    assert_eq!(before, after, "nothing refused was stored");

    // A revision's new record is placed the same way.
    let old = made(
        &app,
        &admin,
        "/v1/records",
        record("old-a", "low", Some("a")),
    )
    .await;
    let mut new_record = fact("next");
    new_record["sensitivity"] = json!("high");
    let (status, body, _) = send(
        "/v1/revisions/supersede",
        json!({"old_id": old, "new_record": new_record, "actor": "a", "rationale": "r"}),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("new_record.sensitivity"));
    let (status, body, _) = send(
        "/v1/revisions/supersede",
        json!({"old_id": old, "new_record": fact("next"), "actor": "a", "rationale": "r"}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["record"]["scope"], "a");

    // Import fields need the admin role.
    for field in ["id", "status", "audit_log", "created_at", "lifecycle"] {
        let mut body = fact("imported");
        body[field] = match field {
            "id" => json!("imported-1"),
            "status" => json!("active"),
            "audit_log" => {
                json!([{"action": "create", "actor": "x", "timestamp": "2026-01-01T00:00:00Z", "rationale": "r"}])
            }
            "created_at" => json!("2025-01-01T00:00:00Z"),
            _ => json!({"pinned": true}),
        };
        let (status, answer, _) = send("/v1/records", body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{field}: {answer}");
        assert!(answer["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with(field));
    }
}

#[actix_web::test]
async fn a_revision_imports_nothing_that_a_new_record_may_not_and_probes_no_id() {
    let (app, admin) = protected().await;
    let key = app
        .make_key(
            Some(&admin),
            json!({"name": "reviser", "roles": ["read", "write", "revise"], "scopes": ["a"], "rate": 1e6}),
        )
        .await;
    let hidden = made(
        &app,
        &admin,
        "/v1/records",
        record("0190a3d2-0000-7000-8000-00000000d1d1", "hyper", Some("b")),
    )
    .await;
    let source = made(
        &app,
        &admin,
        "/v1/records",
        record("0190a3d2-0000-7000-8000-00000000a0a0", "low", Some("a")),
    )
    .await;
    let imports = [
        ("id", json!(hidden)),
        ("id", json!("0190a3d2-0000-7000-8000-00000000f00d")),
        ("created_at", json!("2001-01-01T00:00:00Z")),
        ("status", json!("active")),
        (
            "lifecycle",
            json!({"pinned": true, "deletion_policy": "never"}),
        ),
        (
            "audit_log",
            json!([{"timestamp": "2001-01-01T00:00:00Z", "actor": "root", "action": "create", "rationale": "forged"}]),
        ),
    ];
    let mut answers = Vec::new();
    for (field, value) in &imports {
        let mut new = fact("forged");
        new["scope"] = json!("a");
        new[*field] = value.clone();
        for (path, body, outer) in [
            (
                "/v1/revisions/supersede",
                json!({"old_id": source, "new_record": new}),
                "new_record",
            ),
            (
                "/v1/revisions/fork",
                json!({"source_id": source, "forked_record": new}),
                "forked_record",
            ),
            (
                "/v1/revisions/merge",
                json!({"ids": [source], "merged_record": new}),
                "merged_record",
            ),
        ] {
            let mut body = body;
            body["actor"] = json!("agent");
            body["rationale"] = json!("because");
            let (status, answer, _) = app.send("POST", path, Some(&body), Some(&key)).await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{path} {field}: {answer}");
            let message = answer["error"]["message"].as_str().unwrap().to_string();
            assert!(
                message.starts_with(&format!("{outer}.{field}: ")),
                "{message}"
            );
            if *field == "id" {
                answers.push(message);
            }
        }
    }
    // A hidden id and a fresh one answer alike: no oracle.
    assert_eq!(answers[..3], answers[3..]);
    // The same through MCP's revise tool.
    let mut new = fact("forged");
    new["id"] = json!(hidden);
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "revise", "arguments": {"operation": "supersede", "id": source, "new_record": new, "actor": "agent", "rationale": "because"}}});
    let (_, answer, _) = app.send("POST", "/mcp", Some(&call), Some(&key)).await;
    assert!(
        answer
            .to_string()
            .contains("new_record.id: setting it imports a record"),
        "{answer}"
    );
    // Nothing was stored: the source is still the only current record of its fact.
    let (_, body, _) = app
        .send(
            "POST",
            &format!("/v1/records/{source}/history"),
            Some(&json!({})),
            Some(&key),
        )
        .await;
    assert_eq!(body["chain"].as_array().map(Vec::len), Some(1), "{body}");
    let every = json!({"trust": {"max_sensitivity": "hyper"}, "include_retracted": true});
    let (_, body, _) = app
        .send("POST", "/v1/retrieve", Some(&every), Some(&admin))
        .await;
    assert_eq!(body["records"].as_array().map(Vec::len), Some(2), "{body}");
    // An admin may still import through a revision.
    let mut new = fact("imported");
    new["created_at"] = json!("2001-01-01T00:00:00Z");
    let (status, answer, _) = app
        .send(
            "POST",
            "/v1/revisions/fork",
            Some(
                &json!({"source_id": source, "forked_record": new, "actor": "a", "rationale": "r"}),
            ),
            Some(&admin),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert!(answer["record"]["created_at"]
        .as_str()
        .unwrap()
        .starts_with("2001-01-01"));
}

#[actix_web::test]
async fn audit_entries_name_the_key_and_keep_the_claimed_actor_beside_it() {
    let (app, admin) = protected().await;
    let key = app
        .make_key(
            Some(&admin),
            json!({"name": "indexer", "roles": ["write", "revise"], "max_sensitivity": "hyper", "rate": 1e6}),
        )
        .await;
    let (_, body, _) = app
        .send(
            "POST",
            "/v1/ingest/event",
            Some(&event("updater-agent")),
            Some(&key),
        )
        .await;
    let record = &body["record"];
    assert_eq!(
        record["audit_log"][0]["actor"],
        "indexer (as updater-agent)"
    );
    assert_eq!(
        record["provenance"]["created_by"], "updater-agent",
        "the claim is kept as data"
    );
    let id = record["id"].as_str().unwrap();
    let (_, body, _) = app
        .send(
            "POST",
            "/v1/ingest/outcome",
            Some(
                &json!({"source": "indexer", "target_record_id": id, "outcome_status": "success"}),
            ),
            Some(&key),
        )
        .await;
    assert_eq!(body["record"]["audit_log"][1]["actor"], "indexer", "{body}");
    let fact_id = made(&app, &admin, "/v1/records", fact("1")).await;
    let (_, body, _) = app
        .send(
            "POST",
            "/v1/revisions/contest",
            Some(&json!({"id": fact_id, "actor": "root", "rationale": "r"})),
            Some(&key),
        )
        .await;
    let log = body["record"]["audit_log"].as_array().unwrap();
    assert_eq!(log.last().unwrap()["actor"], "indexer (as root)", "{body}");
    // Without a key (auth off) the claim is all there is.
    let open = spawn_app().await;
    let (_, body) = open.post("/v1/ingest/event", &event("updater-agent")).await;
    assert_eq!(body["record"]["audit_log"][0]["actor"], "updater-agent");
}

#[actix_web::test]
async fn no_answer_to_any_endpoint_carries_a_record_the_key_may_not_see() {
    let (app, admin) = protected().await;
    let secret_words = ["zebra", "quartz"];
    let mut hidden_fact = record("hidden-fact", "hyper", Some("b"));
    hidden_fact["payload"]["object"] = json!("zebra quartz vault");
    hidden_fact["tags"] = json!(["zebra"]);
    let hidden = made(&app, &admin, "/v1/records", hidden_fact).await;
    let mut hidden_event = event("agent");
    hidden_event["summary"] = json!("zebra quartz vault opened");
    hidden_event["sensitivity"] = json!("hyper");
    hidden_event["scope"] = json!("b");
    let episode = made(&app, &admin, "/v1/ingest/event", hidden_event).await;
    let visible = made(&app, &admin, "/v1/records", scoped_fact("a")).await;
    let hidden_topic = {
        let body = json!({"placement": "new_topic", "title": "zebra quartz vault", "source": "agent",
                          "sensitivity": "hyper", "scope": "b",
                          "fields": [{"name": "combination", "value": "zebra-quartz"}]});
        let (status, body, _) = app
            .send("POST", "/v1/topics/ingest", Some(&body), Some(&admin))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        body["topic_id"].as_str().unwrap().to_string()
    };
    let read_hidden = || async {
        let (status, body, _) = app
            .send(
                "POST",
                &format!("/v1/retrieve/{hidden}"),
                Some(&json!({})),
                Some(&admin),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    };
    let before = read_hidden().await;

    let key = app
        .make_key(
            Some(&admin),
            json!({"name": "tenant-a", "roles": ROLES, "max_sensitivity": "low", "scopes": ["a"], "rate": 1e6}),
        )
        .await;
    let by = |mut body: Value| {
        body["actor"] = json!("agent");
        body["rationale"] = json!("because");
        body
    };
    let mut with_relation = fact("linked");
    with_relation["relations"] = json!([{"predicate": "supports", "target_id": hidden}]);
    let mut imported = record(&hidden, "low", Some("a"));
    imported["payload"]["object"] = json!("plain");
    let everything = json!({"max_sensitivity": "hyper", "scopes": []});
    let calls: Vec<(&str, String, Option<Value>)> = vec![
        ("POST", "/v1/ingest/event".into(), Some(event("agent"))),
        (
            "POST",
            "/v1/ingest/outcome".into(),
            Some(
                json!({"source": "agent", "target_record_id": episode, "outcome_status": "success"}),
            ),
        ),
        (
            "POST",
            "/v1/ingest/batch".into(),
            Some(json!({"items": [
                {"kind": "event", "source": "agent", "event_kind": "e", "ref": "r"},
                {"kind": "outcome", "source": "agent", "target_record_id": episode, "outcome_status": "failure"}
            ]})),
        ),
        ("POST", "/v1/records".into(), Some(with_relation)),
        ("POST", "/v1/records".into(), Some(imported)),
        (
            "POST",
            format!("/v1/records/{hidden}/reinforce"),
            Some(by(json!({}))),
        ),
        (
            "POST",
            format!("/v1/records/{hidden}/penalize"),
            Some(by(json!({"amount": 1e-300}))),
        ),
        (
            "POST",
            format!("/v1/records/{hidden}/history"),
            Some(json!({"trust": everything})),
        ),
        (
            "POST",
            "/v1/revisions/supersede".into(),
            Some(by(json!({"old_id": hidden, "new_record": fact("x")}))),
        ),
        (
            "POST",
            "/v1/revisions/fork".into(),
            Some(by(json!({"source_id": hidden, "forked_record": fact("y")}))),
        ),
        (
            "POST",
            "/v1/revisions/retract".into(),
            Some(by(json!({"id": hidden}))),
        ),
        (
            "POST",
            "/v1/revisions/merge".into(),
            Some(by(
                json!({"ids": [visible, hidden], "merged_record": fact("z")}),
            )),
        ),
        (
            "POST",
            "/v1/revisions/contest".into(),
            Some(by(json!({"id": hidden}))),
        ),
        (
            "POST",
            "/v1/revisions/contest".into(),
            Some(by(json!({"id": hidden, "resolve": true}))),
        ),
        (
            "POST",
            "/v1/retrieve".into(),
            Some(
                json!({"trust": everything, "task_descriptor": "zebra quartz vault", "include_retracted": true}),
            ),
        ),
        (
            "POST",
            "/v1/retrieve".into(),
            Some(json!({"trust": everything, "tags": ["zebra"]})),
        ),
        (
            "POST",
            format!("/v1/retrieve/{hidden}"),
            Some(json!({"trust": everything})),
        ),
        ("POST", format!("/v1/retrieve/{episode}"), Some(json!({}))),
        ("GET", "/v1/jobs".into(), None),
        (
            "PUT",
            "/v1/jobs/decay".into(),
            Some(json!({"enabled": false})),
        ),
        ("POST", "/v1/jobs/decay/run".into(), None),
        ("POST", "/v1/jobs/consolidation/run".into(), None),
        ("GET", "/metrics".into(), None),
        ("GET", "/v1/metrics".into(), None),
        ("GET", "/v1/keys".into(), None),
        (
            "POST",
            "/v1/keys".into(),
            Some(json!({"name": "another", "scopes": ["a"]})),
        ),
        ("DELETE", "/v1/keys/another".into(), None),
        (
            "POST",
            "/v1/topics/ingest".into(),
            Some(
                json!({"title": "zebra quartz vault", "summary": "zebra quartz", "source": "agent",
                        "suggest_similar": true, "trust": everything,
                        "fields": [{"name": "combination", "value": "guess"}]}),
            ),
        ),
        (
            "POST",
            "/v1/topics/ingest".into(),
            Some(json!({"placement": "extend_topic", "topic_id": hidden_topic, "source": "agent"})),
        ),
        (
            "POST",
            "/v1/topics/ingest".into(),
            Some(json!({"title": "mine", "source": "agent",
                        "edges": [{"to_topic_id": hidden_topic, "kind": "related"}]})),
        ),
        (
            "POST",
            format!("/v1/topics/{hidden_topic}/view"),
            Some(json!({"trust": everything})),
        ),
        (
            "POST",
            format!("/v1/topics/{hidden_topic}/fields/combination/history"),
            Some(json!({"trust": everything})),
        ),
        (
            "POST",
            format!("/v1/topics/{hidden_topic}/edges"),
            Some(json!({"to_topic_id": hidden_topic, "kind": "related"})),
        ),
        (
            "DELETE",
            format!("/v1/topics/{hidden_topic}/edges"),
            Some(json!({"to_topic_id": hidden_topic, "kind": "related"})),
        ),
        (
            "POST",
            format!("/v1/topics/{hidden_topic}/archive"),
            Some(json!({})),
        ),
    ];
    for (method, path, body) in &calls {
        let (status, answer, _) = app.send(method, path, body.as_ref(), Some(&key)).await;
        let text = answer.to_string();
        let what = format!("{method} {path} answered {status}: {text}");
        assert_ne!(status, StatusCode::FORBIDDEN, "{what}");
        for needle in [hidden.as_str(), episode.as_str(), hidden_topic.as_str()]
            .into_iter()
            .chain(secret_words)
        {
            assert!(!text.contains(needle), "{what} carries {needle:?}");
        }
        let path = path
            .replace(&hidden, "{id}")
            .replace(&episode, "{id}")
            .replace(&hidden_topic, "{id}");
        if path.contains("{id}") || path.starts_with("/v1/revisions") || path.contains("outcome") {
            assert_eq!(status, StatusCode::NOT_FOUND, "{what}");
        }
    }
    let after = read_hidden().await;
    assert_eq!(before, after, "the hidden record is as it was");
}

#[actix_web::test]
async fn keys_and_unauthenticated_addresses_are_held_to_their_rates() {
    // One request every two seconds: the test's requests take far less.
    let app = spawn_app_with(|s| s.auth.default_rate = 0.5).await;
    let admin = app
        .make_key(
            None,
            json!({"name": "root", "roles": ["admin"], "rate": 1e6}),
        )
        .await;
    let slow = app
        .make_key(Some(&admin), json!({"name": "slow", "rate": 0.5}))
        .await;
    let retrieve = json!({});
    let (status, body, _) = app
        .send("POST", "/v1/retrieve", Some(&retrieve), Some(&slow))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body, headers) = app
        .send("POST", "/v1/retrieve", Some(&retrieve), Some(&slow))
        .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert_eq!(error_code(&body), "rate_limited");
    let wait: u64 = headers
        .get("retry-after")
        .expect("Retry-After")
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=2).contains(&wait), "{wait}");

    // Without a valid key, the address is limited (default_rate), so keys
    // cannot be guessed at speed; the health checks never are.
    let mut answers = Vec::new();
    for _ in 0..4 {
        let (status, _, _) = app
            .send(
                "POST",
                "/v1/retrieve",
                Some(&retrieve),
                Some("engram_guess"),
            )
            .await;
        answers.push(status);
    }
    assert_eq!(answers[0], StatusCode::UNAUTHORIZED);
    assert_eq!(answers[1..], [StatusCode::TOO_MANY_REQUESTS; 3]);
    for _ in 0..5 {
        let (status, _, _) = app.send("GET", "/healthz", None, None).await;
        assert_eq!(status, StatusCode::OK);
    }
    // A valid key from the same address has its own rate.
    let (status, body, _) = app
        .send("POST", "/v1/retrieve", Some(&retrieve), Some(&admin))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[actix_web::test]
async fn browsers_may_call_from_the_listed_origins_only() {
    let origin = "https://console.example.com";
    let app = spawn_app_with(|s| s.server.cors_origins = vec![origin.to_string()]).await;
    let admin = app
        .make_key(
            None,
            json!({"name": "root", "roles": ["admin"], "rate": 1e6}),
        )
        .await;
    let preflight = |from: &'static str| {
        app.client
            .request(
                awc::http::Method::OPTIONS,
                format!("{}/v1/retrieve", app.address),
            )
            .insert_header(("origin", from))
            .insert_header(("access-control-request-method", "POST"))
            .insert_header((
                "access-control-request-headers",
                "authorization,content-type",
            ))
            .send()
    };
    let response = preflight(origin).await.unwrap();
    assert!(response.status().is_success(), "{:?}", response.status());
    assert_eq!(
        response
            .headers()
            .get("access-control-allow-origin")
            .unwrap(),
        origin
    );
    let response = preflight("https://evil.example.com").await.unwrap();
    assert!(response
        .headers()
        .get("access-control-allow-origin")
        .is_none());

    let response = app
        .client
        .post(format!("{}/v1/retrieve", app.address))
        .insert_header(("origin", origin))
        .insert_header(("authorization", format!("Bearer {admin}")))
        .send_json(&json!({}))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response
            .headers()
            .get("access-control-allow-origin")
            .unwrap(),
        origin
    );

    // Off by default: no page anywhere is let in, not even to send.
    let closed = spawn_app().await;
    let response = closed
        .client
        .post(format!("{}/v1/retrieve", closed.address))
        .insert_header(("origin", origin))
        .send_json(&json!({"trust": {"max_sensitivity": "low"}}))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    assert!(response
        .headers()
        .get("access-control-allow-origin")
        .is_none());
}
