use awc::http::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{assert_error, event, spawn_app, trust};

#[actix_web::test]
async fn an_event_becomes_an_episodic_record_with_policy_and_provenance() {
    let app = spawn_app().await;
    let (status, body) = app
        .post(
            "/v1/ingest/event",
            &json!({
                "source": "coding-agent", "event_kind": "user_input", "ref": "msg-001",
                "summary": "User asked to refactor auth module", "timestamp": "2025-01-15T10:30:00Z",
                "tags": ["refactor", "auth"], "scope": "project"
            }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let record = &body["record"];
    assert!(uuid::Uuid::parse_str(record["id"].as_str().unwrap()).is_ok());
    assert_eq!(record["type"], "episodic");
    assert_eq!(record["sensitivity"], "low");
    assert_eq!(record["confidence"], 0.8);
    assert_eq!(record["salience"], 1.0);
    assert_eq!(record["scope"], "project");
    assert_eq!(record["status"], "active");
    assert_eq!(record["tags"], json!(["refactor", "auth"]));
    assert_eq!(record["created_at"], crate::helpers::START_AT);
    assert_eq!(record["lifecycle"]["decay"]["curve"], "exponential");
    assert_eq!(record["lifecycle"]["decay"]["half_life_seconds"], 3600);
    assert_eq!(record["lifecycle"]["deletion_policy"], "auto_prune");
    assert_eq!(record["lifecycle"]["pinned"], false);
    let source = &record["provenance"]["sources"][0];
    assert_eq!(source["kind"], "event");
    assert_eq!(source["timestamp"], "2025-01-15T10:30:00.000000Z");
    assert_eq!(source["created_by"], "coding-agent");
    let timeline = &record["payload"]["timeline"][0];
    assert_eq!(record["payload"]["kind"], "episodic");
    assert_eq!(timeline["t"], "2025-01-15T10:30:00.000000Z");
    assert_eq!(timeline["event_kind"], "user_input");
    assert_eq!(timeline["ref"], "msg-001");
    assert_eq!(record["audit_log"][0]["action"], "create");
    assert_eq!(record["audit_log"][0]["actor"], "coding-agent");
    // What was stored is what was answered.
    assert_eq!(
        &app.get_record(record["id"].as_str().unwrap()).await,
        record
    );
}

#[actix_web::test]
async fn a_tool_output_keeps_args_and_result_as_sent() {
    let app = spawn_app().await;
    let (status, body) = app
        .post(
            "/v1/ingest/tool-output",
            &json!({
                "source": "agent", "tool_name": "file_read", "args": "{\"path\": \"/src/auth.go\"}",
                "result": {"content": "package auth", "lines": 142}, "depends_on": ["n0"], "sensitivity": "medium"
            }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let record = &body["record"];
    assert_eq!(record["confidence"], 0.9);
    assert_eq!(record["sensitivity"], "medium");
    let node = &record["payload"]["tool_graph"][0];
    assert_eq!(node["tool"], "file_read");
    assert_eq!(node["args"], "{\"path\": \"/src/auth.go\"}");
    assert_eq!(
        node["result"],
        json!({"content": "package auth", "lines": 142})
    );
    assert_eq!(node["depends_on"], json!(["n0"]));
    assert_eq!(record["provenance"]["sources"][0]["kind"], "tool_call");
    assert_eq!(record["provenance"]["sources"][0]["ref"], node["id"]);
}

#[actix_web::test]
async fn an_observation_becomes_a_global_replaceable_fact() {
    let app = spawn_app().await;
    let (status, body) = app
        .post(
            "/v1/ingest/observation",
            &json!({"source": "agent", "subject": "user", "predicate": "prefers_language", "object": "Go"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let record = &body["record"];
    assert_eq!(record["type"], "semantic");
    assert_eq!(record["confidence"], 0.7);
    assert_eq!(record["lifecycle"]["decay"]["half_life_seconds"], 2_592_000);
    let payload = &record["payload"];
    assert_eq!(payload["object"], "Go");
    assert_eq!(payload["validity"]["mode"], "global");
    assert_eq!(payload["revision_policy"], "replace");
    assert_eq!(payload["revision"]["status"], "active");
    assert_eq!(payload["evidence"][0]["source_type"], "observation");
    assert_eq!(record["provenance"]["sources"][0]["kind"], "observation");
}

#[actix_web::test]
async fn a_working_state_becomes_working_memory() {
    let app = spawn_app().await;
    let (status, body) = app
        .post(
            "/v1/ingest/working-state",
            &json!({
                "source": "agent", "thread_id": "session-42", "state": "executing",
                "next_actions": ["run tests"], "open_questions": ["which framework?"],
                "context_summary": "refactoring", "active_constraints": [{"key": "max_file_edits", "value": 5}]
            }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let record = &body["record"];
    assert_eq!(record["type"], "working");
    assert_eq!(record["confidence"], 1.0);
    assert_eq!(record["lifecycle"]["decay"]["half_life_seconds"], 86_400);
    assert_eq!(record["provenance"]["sources"][0]["kind"], "event");
    let payload = &record["payload"];
    assert_eq!(payload["thread_id"], "session-42");
    assert_eq!(payload["state"], "executing");
    assert_eq!(payload["active_constraints"][0]["value"], 5);
}

#[actix_web::test]
async fn an_outcome_updates_the_episodic_record_with_provenance_and_audit() {
    let app = spawn_app().await;
    let (_, created) = app.post("/v1/ingest/event", &event("agent")).await;
    let id = created["record"]["id"].as_str().unwrap();
    app.clock.advance(chrono::Duration::seconds(5));
    let (status, body) = app
        .post(
            "/v1/ingest/outcome",
            &json!({"source": "checker", "target_record_id": id, "outcome_status": "success"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let record = &body["record"];
    assert_eq!(record["payload"]["outcome"], "success");
    assert_eq!(record["confidence"], 0.8, "confidence is left as it was");
    assert_eq!(record["updated_at"], "2026-01-01T00:00:05.000000Z");
    let sources = record["provenance"]["sources"].as_array().unwrap();
    assert_eq!(sources.len(), 2);
    assert_eq!(sources[1]["kind"], "outcome");
    let audit = record["audit_log"].as_array().unwrap();
    assert_eq!(audit.len(), 2);
    assert_eq!(audit[1]["action"], "revise");
    assert_eq!(audit[1]["actor"], "checker");
    assert_eq!(&app.get_record(id).await, record);
}

#[actix_web::test]
async fn an_outcome_for_a_missing_or_non_episodic_record_changes_nothing() {
    let app = spawn_app().await;
    let missing = app
        .post(
            "/v1/ingest/outcome",
            &json!({"source": "a", "target_record_id": "no-such-record", "outcome_status": "failure"}),
        )
        .await;
    assert_error(
        &missing,
        StatusCode::NOT_FOUND,
        "not_found",
        "target_record_id: record not found",
    );

    let (_, fact) = app
        .post(
            "/v1/ingest/observation",
            &json!({"source": "a", "subject": "s", "predicate": "p"}),
        )
        .await;
    let id = fact["record"]["id"].as_str().unwrap();
    let wrong_type = app
        .post(
            "/v1/ingest/outcome",
            &json!({"source": "a", "target_record_id": id, "outcome_status": "success"}),
        )
        .await;
    assert_error(
        &wrong_type,
        StatusCode::CONFLICT,
        "failed_precondition",
        "episodic",
    );
    assert_eq!(app.get_record(id).await, fact["record"]);
}

/// Each bad request, the field its message must name, and a fragment of
/// the message.
fn bad_requests() -> Vec<(&'static str, Value, &'static str)> {
    let long = "x".repeat(100_001);
    let too_many_tags: Vec<String> = (0..101).map(|i| format!("t{i}")).collect();
    let big_json = "y".repeat(10 * 1024 * 1024 + 1);
    vec![
        (
            "/v1/ingest/event",
            json!({"event_kind": "e", "ref": "r"}),
            "source: candidate source is required",
        ),
        (
            "/v1/ingest/event",
            json!({"source": "", "event_kind": "e", "ref": "r"}),
            "source: candidate source is required",
        ),
        (
            "/v1/ingest/event",
            json!({"source": "s", "ref": "r"}),
            "event_kind: event kind is required for event candidates",
        ),
        (
            "/v1/ingest/event",
            json!({"source": "s", "event_kind": "e"}),
            "ref: event ref is required for event candidates",
        ),
        (
            "/v1/ingest/tool-output",
            json!({"source": "s"}),
            "tool_name: tool name is required for tool output candidates",
        ),
        (
            "/v1/ingest/observation",
            json!({"source": "s", "predicate": "p"}),
            "subject: subject is required for observation candidates",
        ),
        (
            "/v1/ingest/observation",
            json!({"source": "s", "subject": "x"}),
            "predicate: predicate is required for observation candidates",
        ),
        (
            "/v1/ingest/outcome",
            json!({"source": "s", "outcome_status": "success"}),
            "target_record_id: target record ID is required",
        ),
        (
            "/v1/ingest/outcome",
            json!({"source": "s", "target_record_id": "x"}),
            "outcome_status: outcome status is required",
        ),
        (
            "/v1/ingest/working-state",
            json!({"source": "s", "state": "done"}),
            "thread_id: thread ID is required",
        ),
        (
            "/v1/ingest/working-state",
            json!({"source": "s", "thread_id": "t"}),
            "state: task state is required",
        ),
        (
            "/v1/ingest/event",
            json!({"source": long, "event_kind": "e", "ref": "r"}),
            "source: string exceeds maximum length of 100000",
        ),
        (
            "/v1/ingest/event",
            json!({"source": "s", "event_kind": "e", "ref": "r", "summary": long}),
            "summary: string exceeds maximum length",
        ),
        (
            "/v1/ingest/event",
            json!({"source": "s", "event_kind": "e", "ref": "r", "tags": too_many_tags}),
            "tags: too many tags",
        ),
        (
            "/v1/ingest/event",
            json!({"source": "s", "event_kind": "e", "ref": "r", "tags": ["ok", "z".repeat(257)]}),
            "tags[1]: tag exceeds maximum length of 256",
        ),
        (
            "/v1/ingest/tool-output",
            json!({"source": "s", "tool_name": "t", "args": big_json}),
            "args: payload exceeds maximum size",
        ),
        (
            "/v1/ingest/tool-output",
            json!({"source": "s", "tool_name": "t", "result": [big_json]}),
            "result: payload exceeds maximum size",
        ),
        (
            "/v1/ingest/observation",
            json!({"source": "s", "subject": "a", "predicate": "b", "object": {"v": big_json}}),
            "object: payload exceeds maximum size",
        ),
        (
            "/v1/ingest/working-state",
            json!({"source": "s", "thread_id": "t", "state": "done", "active_constraints": big_json}),
            "active_constraints: payload exceeds maximum size",
        ),
        (
            "/v1/ingest/event",
            json!({"source": "s", "event_kind": "e", "ref": "r", "timestamp": "2025-01-15 10:30"}),
            "timestamp: invalid RFC 3339 timestamp",
        ),
        (
            "/v1/ingest/outcome",
            json!({"source": "s", "target_record_id": "x", "outcome_status": "success", "timestamp": "soon"}),
            "timestamp: invalid RFC 3339",
        ),
        (
            "/v1/ingest/event",
            json!({"source": "s", "event_kind": "e", "ref": "r", "sensitivity": "secret"}),
            "sensitivity: unknown variant `secret`",
        ),
        (
            "/v1/ingest/outcome",
            json!({"source": "s", "target_record_id": "x", "outcome_status": "meh"}),
            "outcome_status: unknown variant `meh`",
        ),
        (
            "/v1/ingest/working-state",
            json!({"source": "s", "thread_id": "t", "state": "sleeping"}),
            "state: unknown variant `sleeping`",
        ),
        (
            "/v1/ingest/event",
            json!({"source": "s", "event_kind": "e", "ref": "r", "colour": "red"}),
            "unknown field `colour`",
        ),
        (
            "/v1/ingest/event",
            json!({"source": 5, "event_kind": "e", "ref": "r"}),
            "source: invalid type",
        ),
        (
            "/v1/ingest/event",
            json!({"source": "s", "event_kind": "e", "ref": "r", "tags": "one"}),
            "tags: invalid type",
        ),
        (
            "/v1/ingest/batch",
            json!({"items": []}),
            "items: at least one item is required",
        ),
        (
            "/v1/ingest/batch",
            json!({}),
            "items: at least one item is required",
        ),
        (
            "/v1/ingest/batch",
            json!({"items": [{"kind": "dream", "source": "s"}]}),
            "unknown variant `dream`",
        ),
    ]
}

#[actix_web::test]
async fn each_invalid_request_is_refused_by_field_and_nothing_is_stored() {
    let app = spawn_app().await;
    for (path, body, message) in bad_requests() {
        let response = app.post(path, &body).await;
        assert_error(
            &response,
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            message,
        );
    }
    assert!(app.all_records().await.is_empty());
}

#[actix_web::test]
async fn malformed_json_never_reaches_the_service() {
    let app = spawn_app().await;
    for body in [
        "{\"source\": \"a\",",
        "not json",
        "",
        "{} trailing",
        "{\"source\": \"a\" \"ref\": \"r\"}",
    ] {
        let response = app.post_raw("/v1/ingest/event", body).await;
        assert_error(
            &response,
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            "malformed JSON",
        );
    }
    assert!(app.all_records().await.is_empty());
}

#[actix_web::test]
async fn a_json_field_just_under_ten_megabytes_fits() {
    let app = spawn_app().await;
    let args = "a".repeat(10 * 1024 * 1024 - 2);
    let (status, body) = app
        .post(
            "/v1/ingest/tool-output",
            &json!({"source": "s", "tool_name": "t", "args": args}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{}", body["error"]);
    let id = body["record"]["id"].as_str().unwrap();
    let stored = app.get_record(id).await;
    assert_eq!(
        stored["payload"]["tool_graph"][0]["args"]
            .as_str()
            .unwrap()
            .len(),
        args.len()
    );
}

#[actix_web::test]
async fn a_body_over_sixteen_mebibytes_is_413() {
    let app = spawn_app().await;
    let body = format!("{{\"source\": \"{}\"}}", "a".repeat(16 * 1024 * 1024));
    let response = app.post_raw("/v1/ingest/event", body).await;
    assert_error(
        &response,
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
        "exceeds the limit",
    );
    assert!(app.all_records().await.is_empty());
}

#[actix_web::test]
async fn a_batch_stores_every_item_in_order() {
    let app = spawn_app().await;
    let (_, first) = app.post("/v1/ingest/event", &event("a")).await;
    let target = first["record"]["id"].as_str().unwrap();
    let (status, body) = app
        .post(
            "/v1/ingest/batch",
            &json!({"items": [
                {"kind": "event", "source": "a", "event_kind": "e", "ref": "r1"},
                {"kind": "tool_output", "source": "a", "tool_name": "grep"},
                {"kind": "observation", "source": "a", "subject": "s", "predicate": "p", "object": 1},
                {"kind": "working_state", "source": "a", "thread_id": "t", "state": "planning"},
                {"kind": "outcome", "source": "a", "target_record_id": target, "outcome_status": "partial"}
            ]}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let records = body["records"].as_array().unwrap();
    let types: Vec<&str> = records
        .iter()
        .map(|r| r["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        ["episodic", "episodic", "semantic", "working", "episodic"]
    );
    assert_eq!(records[4]["id"], target);
    assert_eq!(records[4]["payload"]["outcome"], "partial");
    assert_eq!(app.all_records().await.len(), 5);
}

#[actix_web::test]
async fn a_batch_with_one_bad_item_stores_nothing() {
    let app = spawn_app().await;
    let good = json!({"kind": "event", "source": "a", "event_kind": "e", "ref": "r"});
    let invalid = app
        .post(
            "/v1/ingest/batch",
            &json!({"items": [good, good, {"kind": "observation", "source": "a", "subject": "s"}]}),
        )
        .await;
    assert_error(
        &invalid,
        StatusCode::BAD_REQUEST,
        "invalid_argument",
        "items[2].predicate",
    );
    // Valid on its own, but fails in storage: the earlier items go too.
    let missing_target = app
        .post(
            "/v1/ingest/batch",
            &json!({"items": [good, {"kind": "outcome", "source": "a", "target_record_id": "gone", "outcome_status": "success"}]}),
        )
        .await;
    assert_error(
        &missing_target,
        StatusCode::NOT_FOUND,
        "not_found",
        "items[1].target_record_id",
    );
    assert!(app.all_records().await.is_empty());
}

#[actix_web::test]
async fn concurrent_ingests_are_all_stored() {
    let app = spawn_app().await;
    let requests = (0..50).map(|i| {
        let app = &app;
        async move {
            let (status, body) = app
                .post("/v1/ingest/event", &event(&format!("agent-{i}")))
                .await;
            assert_eq!(status, StatusCode::CREATED, "{body}");
            body["record"]["id"].as_str().unwrap().to_string()
        }
    });
    let mut ids = futures_util::future::join_all(requests).await;
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 50);
    let stored = app
        .post(
            "/v1/retrieve",
            &json!({"trust": trust("hyper", &[]), "limit": 100}),
        )
        .await
        .1;
    assert_eq!(stored["records"].as_array().unwrap().len(), 50);
}

#[actix_web::test]
async fn a_full_write_queue_answers_503_and_reads_keep_flowing() {
    let app = crate::helpers::spawn_app_with(|s| s.storage.write_queue_capacity = 2).await;
    let (_, stored) = app.post("/v1/ingest/event", &event("before")).await;
    let release = app.block_writer().await;
    // Two writes fill the queue behind the blocked writer...
    let queued: Vec<_> = (0..2)
        .map(|i| {
            let client = app.client.clone();
            let url = format!("{}/v1/ingest/event", app.address);
            actix_web::rt::spawn(async move {
                client
                    .post(url)
                    .send_json(&event(&format!("queued-{i}")))
                    .await
                    .map(|r| r.status())
            })
        })
        .collect();
    let deadline = crate::helpers::Deadline::after(10, "two writes queued behind the writer");
    while app.writer.queue_depth() < 2 {
        deadline.wait().await;
    }
    // ...the next is refused at once, with a hint when to retry.
    let mut refused = app
        .client
        .post(format!("{}/v1/ingest/event", app.address))
        .send_json(&event("refused"))
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(refused.headers().get("retry-after").unwrap(), "1");
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "overloaded");
    // Reads do not wait for the writer.
    let id = stored["record"]["id"].as_str().unwrap();
    assert_eq!(app.get_record(id).await["id"], id);
    let (status, _) = app
        .post("/v1/retrieve", &json!({"trust": trust("hyper", &[])}))
        .await;
    assert_eq!(status, StatusCode::OK);
    release.release();
    for write in queued {
        assert_eq!(write.await.unwrap().unwrap(), StatusCode::CREATED);
    }
    let sources: Vec<String> = app
        .all_records()
        .await
        .iter()
        .map(|r| r["provenance"]["created_by"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(sources.len(), 3, "{sources:?}");
    assert!(!sources.contains(&"refused".to_string()));
}
