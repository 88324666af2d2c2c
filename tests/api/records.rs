use awc::http::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{assert_error, spawn_app};

fn competence() -> Value {
    json!({
        "type": "competence", "sensitivity": "medium", "confidence": 0.6, "salience": 0.5,
        "scope": "team", "tags": ["go"],
        "lifecycle": {"pinned": true, "deletion_policy": "manual_only", "decay": {"min_salience": 0.1, "reinforcement_gain": 0.2}},
        "provenance": {"sources": [{"kind": "artifact", "ref": "runbook", "timestamp": "2025-06-01T00:00:00Z"}], "created_by": "curator"},
        "payload": {
            "kind": "competence", "skill_name": "fix_go_compilation_error",
            "triggers": [{"signal": "compilation_error", "conditions": {"language": "go"}}],
            "recipe": [{"step": "Read the error", "tool": "file_read", "validation": "loaded"}],
            "required_tools": ["file_read"], "failure_modes": ["File not found"],
            "performance": {"success_count": 12, "failure_count": 2, "success_rate": 0.857}
        }
    })
}

#[actix_web::test]
async fn a_whole_record_keeps_what_was_given_and_gets_policy_defaults() {
    let app = spawn_app().await;
    let (status, body) = app.post("/v1/records", &competence()).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let record = &body["record"];
    assert!(uuid::Uuid::parse_str(record["id"].as_str().unwrap()).is_ok());
    assert_eq!(record["confidence"], 0.6);
    assert_eq!(record["salience"], 0.5);
    assert_eq!(record["scope"], "team");
    assert_eq!(record["lifecycle"]["pinned"], true);
    assert_eq!(record["lifecycle"]["deletion_policy"], "manual_only");
    assert_eq!(record["lifecycle"]["decay"]["min_salience"], 0.1);
    assert_eq!(record["lifecycle"]["decay"]["reinforcement_gain"], 0.2);
    assert_eq!(
        record["lifecycle"]["decay"]["half_life_seconds"], 2_592_000,
        "type default"
    );
    assert_eq!(record["lifecycle"]["decay"]["curve"], "exponential");
    assert_eq!(record["updated_at"], crate::helpers::START_AT);
    assert_eq!(record["status"], "active");
    assert_eq!(record["payload"]["performance"]["success_rate"], 0.857);
    let audit = record["audit_log"].as_array().unwrap();
    assert_eq!(audit.last().unwrap()["action"], "create");
    assert_eq!(audit.last().unwrap()["actor"], "curator");
    assert_eq!(
        &app.get_record(record["id"].as_str().unwrap()).await,
        record
    );
}

#[actix_web::test]
async fn a_given_id_is_kept_and_a_duplicate_is_a_conflict() {
    let app = spawn_app().await;
    let mut body = competence();
    body["id"] = json!("skill-1");
    let (status, created) = app.post("/v1/records", &body).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["record"]["id"], "skill-1");
    body["salience"] = json!(0.9);
    assert_error(
        &app.post("/v1/records", &body).await,
        StatusCode::CONFLICT,
        "conflict",
        "id: a record with this id already exists",
    );
    assert_eq!(app.get_record("skill-1").await["salience"], 0.5);
}

#[actix_web::test]
async fn a_plan_graph_and_a_semantic_record_round_trip() {
    let app = spawn_app().await;
    let plan = json!({
        "type": "plan_graph", "sensitivity": "low",
        "payload": {
            "kind": "plan_graph", "plan_id": "setup-go-project", "version": "1.0.0", "intent": "setup_project",
            "constraints": {"language": "go"},
            "nodes": [{"id": "n1", "op": "mkdir", "params": {"path": "cmd/"}}, {"id": "n2", "op": "write_main", "params": {}}],
            "edges": [{"from": "n1", "to": "n2", "kind": "control"}],
            "metrics": {"failure_rate": 0.1, "execution_count": 4}
        }
    });
    let (status, body) = app.post("/v1/records", &plan).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["record"]["payload"]["edges"][0]["kind"], "control");
    let fact = json!({
        "type": "semantic", "sensitivity": "high",
        "relations": [{"predicate": "supports", "target_id": body["record"]["id"]}],
        "payload": {
            "kind": "semantic", "subject": "database", "predicate": "type", "object": "SQLite",
            "validity": {"mode": "conditional", "conditions": {"env": "development"}},
            "evidence": [{"source_type": "observation", "source_id": "dev-config", "timestamp": "2025-01-01T00:00:00Z"}]
        }
    });
    let (status, body) = app.post("/v1/records", &fact).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let record = &body["record"];
    assert_eq!(record["relations"][0]["weight"], 1.0);
    assert_eq!(record["payload"]["revision"]["status"], "active");
    assert_eq!(
        &app.get_record(record["id"].as_str().unwrap()).await,
        record
    );
}

#[actix_web::test]
async fn invalid_records_are_refused_by_field_and_nothing_is_stored() {
    let app = spawn_app().await;
    let semantic = json!({"kind": "semantic", "subject": "a", "predicate": "b"});
    let cases = [
        (
            json!({"sensitivity": "low", "payload": semantic}),
            "type: type is required",
        ),
        (
            json!({"type": "semantic", "payload": semantic}),
            "sensitivity: sensitivity is required",
        ),
        (
            json!({"type": "semantic", "sensitivity": "low"}),
            "payload: payload is required",
        ),
        (
            json!({"type": "memo", "sensitivity": "low", "payload": semantic}),
            "type: unknown variant `memo`",
        ),
        (
            json!({"type": "competence", "sensitivity": "low", "payload": semantic}),
            "payload.kind: payload kind semantic does not match record type competence",
        ),
        (
            json!({"type": "semantic", "sensitivity": "low", "confidence": 1.2, "payload": semantic}),
            "confidence: must be within [0, 1]",
        ),
        (
            json!({"type": "semantic", "sensitivity": "low", "salience": -1, "payload": semantic}),
            "salience: must be a finite number >= 0",
        ),
        (
            json!({"type": "semantic", "sensitivity": "low", "id": "", "payload": semantic}),
            "id: id must not be empty",
        ),
        (
            json!({"type": "semantic", "sensitivity": "low", "payload": {"kind": "semantic", "subject": "", "predicate": "b"}}),
            "payload.subject: subject is required",
        ),
        (
            json!({"type": "semantic", "sensitivity": "low", "payload": {"kind": "semantic", "subject": "a", "predicate": "b", "mood": 1}}),
            "unknown field `mood`",
        ),
        (
            json!({"type": "semantic", "sensitivity": "low", "created_at": "last week", "payload": semantic}),
            "created_at: invalid RFC 3339",
        ),
        (
            json!({"type": "semantic", "sensitivity": "low", "lifecycle": {"decay": {"half_life_seconds": 0}}, "payload": semantic}),
            "lifecycle.decay.half_life_seconds: must be greater than 0",
        ),
        (
            json!({"type": "semantic", "sensitivity": "low", "lifecycle": {"deletion_policy": "shred"}, "payload": semantic}),
            "lifecycle.deletion_policy: unknown variant `shred`",
        ),
        (
            json!({"type": "semantic", "sensitivity": "low", "relations": [{"predicate": "supports", "target_id": "x", "weight": 2}], "payload": semantic}),
            "relations[0].weight: must be within [0, 1]",
        ),
        (
            json!({"type": "plan_graph", "sensitivity": "low", "payload": {"kind": "plan_graph", "plan_id": "p", "nodes": [{"id": "a", "op": "x"}], "edges": [{"from": "a", "to": "b", "kind": "data"}]}}),
            "payload.edges[0].to: no node with id",
        ),
        (
            json!({"type": "semantic", "sensitivity": "low", "tags": ["a", ""], "payload": semantic}),
            "tags[1]: tag must not be empty",
        ),
    ];
    for (body, message) in cases {
        assert_error(
            &app.post("/v1/records", &body).await,
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            message,
        );
    }
    let dangling = json!({"type": "semantic", "sensitivity": "low", "relations": [{"predicate": "supports", "target_id": "nowhere"}], "payload": semantic});
    assert_error(
        &app.post("/v1/records", &dangling).await,
        StatusCode::NOT_FOUND,
        "not_found",
        "relations[0].target_id",
    );
    assert!(app.all_records().await.is_empty());
}
