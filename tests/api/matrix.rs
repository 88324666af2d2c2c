//! Every route of the API × every role × a visible, a hidden and a missing
//! target: a key without the route's role is refused before anything
//! else; with it, a hidden target answers exactly as a missing one, and no
//! answer names a hidden record's or topic's id, content or title.

use std::cell::Cell;

use awc::http::StatusCode;
use engram::domain::access::Role;
use serde_json::{json, Value};

use crate::helpers::{spawn_app, TestApp};

/// What a request names: a record, a topic or a key of each kind.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Target {
    Visible,
    Hidden,
    Missing,
}

/// What each kind of target is, for one call.
struct Names {
    record: String,
    topic: String,
    key: String,
    conversation: String,
}

/// The hidden things, and what must never show of them.
struct Secrets {
    record: String,
    topic: String,
    words: [&'static str; 2],
}

const MISSING_RECORD: &str = "0190a3d2-0000-7000-8000-0000000000ff";
const MISSING_TOPIC: &str = "0190a3d2-0000-7000-8000-0000000000fe";

fn fact(object: &str, sensitivity: &str, scope: &str) -> Value {
    json!({"type": "semantic", "sensitivity": sensitivity, "scope": scope,
           "payload": {"kind": "semantic", "subject": "vault", "predicate": "holds", "object": object,
                       "evidence": [{"source_type": "note", "source_id": "n"}]}})
}

fn by(mut body: Value) -> Value {
    body["actor"] = json!("agent");
    body["rationale"] = json!("because");
    body
}

/// The request a client would send to `method path` naming `names`; `None`
/// for a route that takes no target (then only the visible call is made).
fn request(method: &str, path: &str, n: &Names, unique: usize) -> (String, Option<Value>, bool) {
    let record = n.record.as_str();
    let topic = n.topic.as_str();
    let new = fact("new", "low", "a");
    let (path, body, targeted) = match (method, path) {
        ("GET", p) => (p.to_string(), None, false),
        ("POST", "/v1/ingest/event") => (
            path.into(),
            Some(json!({"source": "agent", "event_kind": "e", "ref": "r", "summary": "hello"})),
            false,
        ),
        ("POST", "/v1/ingest/tool-output") => (
            path.into(),
            Some(json!({"source": "agent", "tool_name": "t", "args": {}, "result": {}})),
            false,
        ),
        ("POST", "/v1/ingest/observation") => (
            path.into(),
            Some(json!({"source": "agent", "subject": "s", "predicate": "p", "object": "o"})),
            false,
        ),
        ("POST", "/v1/ingest/outcome") => (
            path.into(),
            Some(
                json!({"source": "agent", "target_record_id": record, "outcome_status": "success"}),
            ),
            true,
        ),
        ("POST", "/v1/ingest/working-state") => (
            path.into(),
            Some(json!({"source": "agent", "thread_id": "t", "state": "executing"})),
            false,
        ),
        ("POST", "/v1/ingest/batch") => (
            path.into(),
            Some(
                json!({"items": [{"kind": "outcome", "source": "agent", "target_record_id": record, "outcome_status": "success"}]}),
            ),
            true,
        ),
        ("POST", "/v1/ingest/conversation") => (
            path.into(),
            Some(json!({"source": "agent", "conversation_id": "chat",
                        "turns": [{"speaker": "a", "text": "hello"}]})),
            false,
        ),
        ("POST", "/v1/conversations/{conversation_id}/turns") => (
            format!("/v1/conversations/{}/turns", n.conversation),
            Some(json!({})),
            true,
        ),
        ("PUT", "/v1/jobs/{name}") => (
            "/v1/jobs/decay".into(),
            Some(json!({"enabled": false})),
            false,
        ),
        ("POST", "/v1/jobs/{name}/run") => ("/v1/jobs/decay/run".into(), None, false),
        ("POST", "/v1/keys") => (
            path.into(),
            Some(json!({"name": format!("made-{unique}"), "scopes": ["a"]})),
            false,
        ),
        ("DELETE", "/v1/keys/{name}") => (format!("/v1/keys/{}", n.key), None, true),
        ("POST", "/mcp") => (
            path.into(),
            Some(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                        "params": {"name": "get_record", "arguments": {"id": record}}})),
            true,
        ),
        ("POST", "/v1/records") => {
            let mut body = fact("related", "low", "a");
            body["relations"] = json!([{"predicate": "supports", "target_id": record}]);
            (path.into(), Some(body), true)
        }
        ("POST", "/v1/records/{id}/reinforce") => (
            format!("/v1/records/{record}/reinforce"),
            Some(by(json!({}))),
            true,
        ),
        ("POST", "/v1/records/{id}/penalize") => (
            format!("/v1/records/{record}/penalize"),
            Some(by(json!({"amount": 0.1}))),
            true,
        ),
        ("POST", "/v1/records/{id}/history") => (
            format!("/v1/records/{record}/history"),
            Some(json!({})),
            true,
        ),
        ("POST", "/v1/retrieve") => (
            path.into(),
            Some(json!({"task_descriptor": "zebra quartz vault", "limit": 50})),
            false,
        ),
        ("POST", "/v1/retrieve/graph") => (
            path.into(),
            Some(json!({"task_descriptor": "zebra quartz vault", "max_hops": 3})),
            false,
        ),
        ("POST", "/v1/retrieve/{id}") => (format!("/v1/retrieve/{record}"), Some(json!({})), true),
        ("POST", "/v1/revisions/supersede") => (
            path.into(),
            Some(by(json!({"old_id": record, "new_record": new}))),
            true,
        ),
        ("POST", "/v1/revisions/fork") => (
            path.into(),
            Some(by(json!({"source_id": record, "forked_record": new}))),
            true,
        ),
        ("POST", "/v1/revisions/retract") => (path.into(), Some(by(json!({"id": record}))), true),
        ("POST", "/v1/revisions/merge") => (
            path.into(),
            Some(by(json!({"ids": [record], "merged_record": new}))),
            true,
        ),
        ("POST", "/v1/revisions/contest") => (
            path.into(),
            Some(by(json!({"id": record, "contesting_ref": "x"}))),
            true,
        ),
        ("POST", "/v1/erase") => (path.into(), Some(by(json!({"ids": [record]}))), true),
        ("POST", "/v1/topics/ingest") => (
            path.into(),
            Some(
                json!({"placement": "extend_topic", "topic_id": topic, "source": "agent",
                        "fields": [{"name": "note", "value": "v"}]}),
            ),
            true,
        ),
        ("POST", "/v1/topics/query") => (
            path.into(),
            Some(json!({"text": "zebra quartz", "hops": 3, "include_history": true})),
            false,
        ),
        ("POST", "/v1/topics/{id}/view") => {
            (format!("/v1/topics/{topic}/view"), Some(json!({})), true)
        }
        ("POST", "/v1/topics/{id}/fields/{name}/history") => (
            format!("/v1/topics/{topic}/fields/secret/history"),
            Some(json!({})),
            true,
        ),
        ("POST", "/v1/topics/{id}/summary/history") => (
            format!("/v1/topics/{topic}/summary/history"),
            Some(json!({})),
            true,
        ),
        ("POST" | "DELETE", "/v1/topics/{id}/edges") => (
            format!("/v1/topics/{topic}/edges"),
            Some(json!({"to_topic_id": topic, "kind": "related"})),
            true,
        ),
        ("POST", "/v1/topics/{id}/archive") => {
            (format!("/v1/topics/{topic}/archive"), Some(json!({})), true)
        }
        other => panic!("no request for {other:?}: every route of the API is in the matrix"),
    };
    (path, body, targeted)
}

/// `answer` with the target's names replaced by a placeholder, so that a
/// hidden and a missing target's answers can be compared.
fn normalised(answer: &Value, names: &[&str]) -> String {
    let mut text = answer.to_string();
    for name in names {
        text = text.replace(name, "<target>");
    }
    text
}

async fn made(app: &TestApp, root: &str, path: &str, body: Value) -> Value {
    let (status, answer, _) = app.send("POST", path, Some(&body), Some(root)).await;
    assert!(status.is_success(), "{path}: {answer}");
    answer
}

/// A visible record, topic and key of their own for one call: calls that
/// change what they name (retract, archive, revoke) leave the next call
/// its own.
async fn visible(app: &TestApp, root: &str, unique: usize) -> Names {
    let record = made(
        app,
        root,
        "/v1/records",
        fact(&format!("open {unique}"), "low", "a"),
    )
    .await;
    let topic = made(
        app,
        root,
        "/v1/topics/ingest",
        json!({"placement": "new_topic", "title": format!("Open {unique}"), "scope": "a", "source": "a",
               "fields": [{"name": "secret", "value": "plain"}]}),
    )
    .await;
    let key = format!("visible-{unique}");
    app.make_key(Some(root), json!({"name": key, "scopes": ["a"]}))
        .await;
    let conversation = format!("open-chat-{unique}");
    made(
        app,
        root,
        "/v1/ingest/conversation",
        json!({"source": "a", "conversation_id": conversation, "scope": "a",
               "turns": [{"speaker": "Ann", "text": "plain words"}]}),
    )
    .await;
    Names {
        record: record["record"]["id"].as_str().unwrap().to_string(),
        topic: topic["topic_id"].as_str().unwrap().to_string(),
        key,
        conversation,
    }
}

async fn hidden(app: &TestApp, root: &str) -> (Names, Secrets) {
    let mut secret = fact("zebra quartz vault", "hyper", "b");
    secret["tags"] = json!(["zebra"]);
    let record = made(app, root, "/v1/records", secret).await["record"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let topic = made(
        app,
        root,
        "/v1/topics/ingest",
        json!({"placement": "new_topic", "title": "Zebra quartz", "sensitivity": "high", "scope": "b",
               "source": "a", "fields": [{"name": "secret", "value": "quartz"}]}),
    )
    .await["topic_id"]
        .as_str()
        .unwrap()
        .to_string();
    made(
        app,
        root,
        "/v1/ingest/conversation",
        json!({"source": "a", "conversation_id": "zebra-chat", "scope": "b", "sensitivity": "hyper",
               "turns": [{"speaker": "Zed", "text": "the zebra quartz is in the vault"}]}),
    )
    .await;
    (
        Names {
            record: record.clone(),
            topic: topic.clone(),
            key: "root".into(),
            conversation: "zebra-chat".into(),
        },
        Secrets {
            record,
            topic,
            words: ["zebra", "quartz"],
        },
    )
}

#[actix_web::test]
async fn every_route_role_and_target_answers_within_the_grant_and_leaks_nothing() {
    let app = spawn_app().await;
    let root = app
        .make_key(
            None,
            json!({"name": "root", "roles": ["admin"], "max_sensitivity": "hyper", "rate": 1e6}),
        )
        .await;
    let (hidden_names, secrets) = hidden(&app, &root).await;
    let hidden_before = app.get_record_as(&root, &secrets.record).await;
    let missing = Names {
        record: MISSING_RECORD.into(),
        topic: MISSING_TOPIC.into(),
        key: "ghost".into(),
        conversation: "ghost-chat".into(),
    };
    let mut keys = Vec::new();
    for role in Role::ALL {
        let secret = app
            .make_key(
                Some(&root),
                json!({"name": format!("role-{}", role.as_str()), "roles": [role.as_str()],
                       "max_sensitivity": "low", "scopes": ["a"], "rate": 1e6}),
            )
            .await;
        keys.push((*role, secret));
    }
    let unique = Cell::new(0usize);
    let mut calls = 0;
    for endpoint in engram::http::endpoints() {
        let method = endpoint.method.as_str();
        for (role, key) in &keys {
            let allowed = endpoint
                .role
                .is_none_or(|needed| *role == Role::Admin || *role == needed);
            let mut answers = Vec::new();
            for target in [Target::Hidden, Target::Missing, Target::Visible] {
                unique.set(unique.get() + 1);
                let names = match target {
                    Target::Visible => visible(&app, &root, unique.get()).await,
                    Target::Hidden => Names {
                        record: hidden_names.record.clone(),
                        topic: hidden_names.topic.clone(),
                        key: hidden_names.key.clone(),
                        conversation: hidden_names.conversation.clone(),
                    },
                    Target::Missing => Names {
                        record: missing.record.clone(),
                        topic: missing.topic.clone(),
                        key: missing.key.clone(),
                        conversation: missing.conversation.clone(),
                    },
                };
                let (path, body, targeted) = request(method, endpoint.path, &names, unique.get());
                if !targeted && target != Target::Visible {
                    continue;
                }
                let (status, answer, _) = app.send(method, &path, body.as_ref(), Some(key)).await;
                calls += 1;
                let what = format!(
                    "{method} {path} as {} ({target:?}): {status} {answer}",
                    role.as_str()
                );
                assert!(!status.is_server_error(), "{what}");
                if !allowed {
                    assert_eq!(status, StatusCode::FORBIDDEN, "{what}");
                    assert_eq!(answer["error"]["code"], "permission_denied", "{what}");
                }
                let text = answer.to_string().to_lowercase();
                // A hidden target's own name was sent by the caller; no
                // answer may carry it back, nor anything else hidden.
                for needle in [secrets.record.as_str(), secrets.topic.as_str()]
                    .into_iter()
                    .chain(secrets.words)
                {
                    assert!(!text.contains(needle), "{what} carries {needle:?}");
                }
                answers.push((target, status, answer, names));
            }
            if let [(Target::Hidden, hidden_status, hidden, h), (Target::Missing, missing_status, missing, m), ..] =
                &answers[..]
            {
                let what = format!("{method} {} as {}", endpoint.path, role.as_str());
                assert_eq!(
                    hidden_status, missing_status,
                    "{what}: {hidden} / {missing}"
                );
                assert_eq!(
                    normalised(hidden, &[&h.record, &h.topic, &h.key, &h.conversation]),
                    normalised(missing, &[&m.record, &m.topic, &m.key, &m.conversation]),
                    "{what}: hidden and missing answer alike"
                );
            }
        }
    }
    // Nothing hidden was changed by any of it.
    assert_eq!(
        app.get_record_as(&root, &secrets.record).await,
        hidden_before
    );
    let (status, _, _) = app.send("GET", "/v1/keys", None, Some(&root)).await;
    assert_eq!(status, StatusCode::OK, "root is not revoked");
    assert!(calls > 300, "{calls} calls");
}
