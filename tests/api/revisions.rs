use awc::http::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{assert_error, create_id, event, relations, spawn_app, trust, TestApp};

/// A semantic record as `POST /v1/records` and the revision calls take it.
fn fact(object: &str, evidence: bool) -> Value {
    let mut record = json!({
        "type": "semantic", "sensitivity": "low",
        "payload": {"kind": "semantic", "subject": "go", "predicate": "version", "object": object}
    });
    if evidence {
        record["provenance"] = json!({"sources": [{"kind": "observation", "ref": format!("notes-{object}"), "timestamp": "2026-01-01T00:00:00Z"}]});
    }
    record
}

async fn episode(app: &TestApp) -> String {
    let (status, body) = app.post("/v1/ingest/event", &event("agent")).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["record"]["id"].as_str().unwrap().to_string()
}

fn last_audit(record: &Value) -> &Value {
    record["audit_log"].as_array().unwrap().last().unwrap()
}

async fn supersede(app: &TestApp, old: &str, object: &str) -> (StatusCode, Value) {
    app.post(
        "/v1/revisions/supersede",
        &json!({"old_id": old, "new_record": fact(object, true), "actor": "updater", "rationale": format!("now {object}")}),
    )
    .await
}

#[actix_web::test]
async fn supersede_retracts_the_old_record_and_links_the_new_one() {
    let app = spawn_app().await;
    let old_id = create_id(&app, fact("1.21", true)).await;
    app.clock.advance(chrono::Duration::seconds(10));
    let (status, body) = supersede(&app, &old_id, "1.22").await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let new = &body["record"];
    let new_id = new["id"].as_str().unwrap();
    assert_ne!(new_id, old_id);
    assert_eq!(new["status"], "active");
    assert_eq!(new["salience"], 1.0);
    assert_eq!(relations(new, "supersedes"), [old_id.as_str()]);
    assert_eq!(new["payload"]["revision"]["supersedes"], old_id);
    assert_eq!(new["payload"]["revision"]["status"], "active");
    let sources = new["provenance"]["sources"].as_array().unwrap();
    assert!(
        sources.iter().any(|s| s["ref"] == old_id.as_str()),
        "{sources:?}"
    );
    assert!(
        sources.iter().any(|s| s["ref"] == "notes-1.22"),
        "{sources:?}"
    );
    assert_eq!(last_audit(new)["action"], "create");
    assert_eq!(last_audit(new)["actor"], "updater");
    assert_eq!(last_audit(new)["rationale"], "now 1.22");

    let old = app.get_record(&old_id).await;
    assert_eq!(old["salience"], 0.0);
    assert_eq!(old["status"], "retracted");
    assert_eq!(old["payload"]["revision"]["status"], "retracted");
    assert_eq!(old["payload"]["revision"]["superseded_by"], new_id);
    assert_eq!(old["updated_at"], "2026-01-01T00:00:10.000000Z");
    let audit = last_audit(&old);
    assert_eq!(audit["action"], "revise");
    assert_eq!(audit["actor"], "updater");
    assert_eq!(audit["rationale"], "now 1.22");
    assert_eq!(&app.get_record(new_id).await, new);

    // The old record is no longer retrieved; the new one is.
    let (_, found) = app
        .post(
            "/v1/retrieve",
            &json!({"trust": trust("low", &[]), "min_salience": 0}),
        )
        .await;
    let ids: Vec<&str> = found["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [new_id]);
}

#[actix_web::test]
async fn a_chain_of_three_supersedes_is_walked_both_ways() {
    let app = spawn_app().await;
    let a = create_id(&app, fact("1.20", true)).await;
    let (_, b) = supersede(&app, &a, "1.21").await;
    let b = b["record"]["id"].as_str().unwrap().to_string();
    let (_, c) = supersede(&app, &b, "1.22").await;
    let c = c["record"]["id"].as_str().unwrap().to_string();
    let (_, d) = supersede(&app, &c, "1.23").await;
    let d = d["record"]["id"].as_str().unwrap().to_string();
    let expected = [a.clone(), b.clone(), c.clone(), d.clone()];
    for id in &expected {
        assert_eq!(app.history_ids(id).await, expected, "history through {id}");
    }
    let (_, body) = app
        .post(
            &format!("/v1/records/{a}/history"),
            &json!({"trust": trust("hyper", &[])}),
        )
        .await;
    let statuses: Vec<&str> = body["chain"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["retracted", "retracted", "retracted", "active"]);
    // A record never revised is a chain of one.
    let lone = create_id(&app, fact("x", false)).await;
    let (_, body) = app
        .post(
            &format!("/v1/records/{lone}/history"),
            &json!({"trust": trust("hyper", &[])}),
        )
        .await;
    assert_eq!(body["chain"].as_array().unwrap().len(), 1);
}

#[actix_web::test]
async fn history_is_trust_gated() {
    let app = spawn_app().await;
    let mut secret = fact("1.0", true);
    secret["sensitivity"] = json!("high");
    let old = create_id(&app, secret).await;
    let (_, new) = supersede(&app, &old, "2.0").await;
    let new = new["record"]["id"].as_str().unwrap().to_string();
    let (status, body) = app
        .post(
            &format!("/v1/records/{new}/history"),
            &json!({"trust": trust("low", &[])}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let chain: Vec<&str> = body["chain"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        chain,
        [new.as_str()],
        "the high-sensitivity version stays hidden"
    );
    assert_error(
        &app.post(
            &format!("/v1/records/{old}/history"),
            &json!({"trust": trust("low", &[])}),
        )
        .await,
        StatusCode::NOT_FOUND,
        "not_found",
        "record not found",
    );
    assert_error(
        &app.post(
            "/v1/records/none/history",
            &json!({"trust": trust("hyper", &[])}),
        )
        .await,
        StatusCode::NOT_FOUND,
        "not_found",
        "record not found",
    );
    assert_error(
        &app.post(&format!("/v1/records/{old}/history"), &json!({}))
            .await,
        StatusCode::BAD_REQUEST,
        "invalid_argument",
        "trust",
    );
}

#[actix_web::test]
async fn fork_keeps_the_source_and_derives_the_variant() {
    let app = spawn_app().await;
    let mut source = fact("PostgreSQL", true);
    source["salience"] = json!(0.7);
    let source_id = create_id(&app, source).await;
    let mut variant = fact("SQLite", true);
    variant["payload"]["validity"] =
        json!({"mode": "conditional", "conditions": {"env": "development"}});
    let (status, body) = app
        .post(
            "/v1/revisions/fork",
            &json!({"source_id": source_id, "forked_record": variant, "actor": "config-agent", "rationale": "dev variant"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let forked = &body["record"];
    assert_eq!(relations(forked, "derived_from"), [source_id.as_str()]);
    assert_eq!(forked["status"], "active");
    assert_eq!(forked["payload"]["validity"]["mode"], "conditional");
    assert_eq!(last_audit(forked)["action"], "create");
    assert_eq!(last_audit(forked)["actor"], "config-agent");
    let source = app.get_record(&source_id).await;
    assert_eq!(source["salience"], 0.7);
    assert_eq!(source["status"], "active");
    assert_eq!(last_audit(&source)["action"], "fork");
    assert_eq!(last_audit(&source)["rationale"], "dev variant");
}

#[actix_web::test]
async fn retract_is_a_soft_delete() {
    let app = spawn_app().await;
    let id = create_id(&app, fact("wrong", false)).await;
    let (status, body) = app
        .post(
            "/v1/revisions/retract",
            &json!({"id": id, "actor": "cleanup-agent", "rationale": "determined to be incorrect"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let record = &body["record"];
    assert_eq!(record["salience"], 0.0);
    assert_eq!(record["status"], "retracted");
    assert_eq!(record["payload"]["revision"]["status"], "retracted");
    assert_eq!(last_audit(record)["action"], "delete");
    assert_eq!(last_audit(record)["actor"], "cleanup-agent");
    assert_eq!(&app.get_record(&id).await, record, "still readable by id");
    for query in [
        json!({"trust": trust("hyper", &[])}),
        json!({"trust": trust("hyper", &[]), "min_salience": 0}),
    ] {
        let (_, found) = app.post("/v1/retrieve", &query).await;
        assert!(found["records"].as_array().unwrap().is_empty(), "{found}");
    }
    let (_, found) = app
        .post(
            "/v1/retrieve",
            &json!({"trust": trust("hyper", &[]), "include_retracted": true}),
        )
        .await;
    assert_eq!(found["records"][0]["id"], id.as_str());
    assert_error(
        &app.post(
            "/v1/revisions/retract",
            &json!({"id": id, "actor": "a", "rationale": "again"}),
        )
        .await,
        StatusCode::CONFLICT,
        "conflict",
        "retracted",
    );
}

#[actix_web::test]
async fn merge_retracts_every_source_into_one_record() {
    let app = spawn_app().await;
    let ids = vec![
        create_id(&app, fact("vim", false)).await,
        create_id(&app, fact("neovim", false)).await,
        create_id(&app, fact("editor", false)).await,
    ];
    let (status, body) = app
        .post(
            "/v1/revisions/merge",
            &json!({"ids": ids, "merged_record": fact("neovim-based editor", true), "actor": "consolidator", "rationale": "duplicates"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let merged = &body["record"];
    assert_eq!(relations(merged, "derived_from"), ids);
    let create_entry = last_audit(merged);
    assert_eq!(create_entry["action"], "create");
    for id in &ids {
        assert!(
            create_entry["rationale"]
                .as_str()
                .unwrap()
                .contains(id.as_str()),
            "{create_entry}"
        );
        let source = app.get_record(id).await;
        assert_eq!(source["salience"], 0.0);
        assert_eq!(source["status"], "retracted");
        assert_eq!(last_audit(&source)["action"], "merge");
        assert_eq!(last_audit(&source)["actor"], "consolidator");
    }
}

#[actix_web::test]
async fn a_merge_whose_last_id_is_missing_changes_nothing() {
    let app = spawn_app().await;
    let a = create_id(&app, fact("a", false)).await;
    let b = create_id(&app, fact("b", false)).await;
    let before = (app.get_record(&a).await, app.get_record(&b).await);
    let response = app
        .post(
            "/v1/revisions/merge",
            &json!({"ids": [a, b, "missing"], "merged_record": fact("ab", true), "actor": "m", "rationale": "r"}),
        )
        .await;
    assert_error(
        &response,
        StatusCode::NOT_FOUND,
        "not_found",
        "ids[2]: record not found",
    );
    assert_eq!((app.get_record(&a).await, app.get_record(&b).await), before);
    assert_eq!(
        app.all_records().await.len(),
        2,
        "no merged record was left behind"
    );
    // Episodic among the sources: refused, nothing changed either.
    let e = episode(&app).await;
    let response = app
        .post("/v1/revisions/merge", &json!({"ids": [a, e], "merged_record": fact("ab", true), "actor": "m", "rationale": "r"}))
        .await;
    assert_error(
        &response,
        StatusCode::CONFLICT,
        "failed_precondition",
        "episodic memory is immutable",
    );
    assert_eq!(app.get_record(&a).await, before.0);
}

#[actix_web::test]
async fn merge_ids_must_be_present_and_distinct() {
    let app = spawn_app().await;
    let a = create_id(&app, fact("a", false)).await;
    let body = |ids: Value| json!({"ids": ids, "merged_record": fact("m", true), "actor": "m", "rationale": "r"});
    assert_error(
        &app.post("/v1/revisions/merge", &body(json!([]))).await,
        StatusCode::BAD_REQUEST,
        "invalid_argument",
        "ids: at least one record id is required",
    );
    assert_error(
        &app.post("/v1/revisions/merge", &body(json!([a, a]))).await,
        StatusCode::BAD_REQUEST,
        "invalid_argument",
        "ids[1]",
    );
    assert_eq!(app.all_records().await.len(), 1);
}

#[actix_web::test]
async fn contest_flags_a_record_and_resolving_clears_it() {
    let app = spawn_app().await;
    let id = create_id(&app, fact("dark mode", false)).await;
    let other = create_id(&app, fact("light mode", false)).await;
    let (status, body) = app
        .post(
            "/v1/revisions/contest",
            &json!({"id": id, "contesting_ref": other, "actor": "verifier", "rationale": "conflicting preference"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let record = &body["record"];
    assert_eq!(record["status"], "contested");
    assert_eq!(record["payload"]["revision"]["status"], "contested");
    assert_eq!(relations(record, "contested_by"), [other.as_str()]);
    assert_eq!(last_audit(record)["action"], "revise");
    assert_eq!(last_audit(record)["actor"], "verifier");
    // Still retrievable, and the status shows.
    let (_, found) = app
        .post("/v1/retrieve", &json!({"trust": trust("low", &[])}))
        .await;
    let contested = found["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id.as_str())
        .unwrap();
    assert_eq!(contested["status"], "contested");

    let (status, body) = app
        .post(
            "/v1/revisions/contest",
            &json!({"id": id, "resolve": true, "actor": "reviewer", "rationale": "confirmed"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["record"]["status"], "active");
    assert_eq!(last_audit(&body["record"])["rationale"], "confirmed");
    assert_error(
        &app.post(
            "/v1/revisions/contest",
            &json!({"id": id, "resolve": true, "actor": "r", "rationale": "again"}),
        )
        .await,
        StatusCode::CONFLICT,
        "conflict",
        "not contested",
    );
}

#[actix_web::test]
async fn a_contested_record_can_be_superseded_or_retracted() {
    let app = spawn_app().await;
    let first = create_id(&app, fact("1", true)).await;
    let second = create_id(&app, fact("2", true)).await;
    for id in [&first, &second] {
        let (status, _) = app
            .post(
                "/v1/revisions/contest",
                &json!({"id": id, "actor": "v", "rationale": "doubt"}),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
    }
    assert_eq!(supersede(&app, &first, "1b").await.0, StatusCode::CREATED);
    let (status, body) = app
        .post(
            "/v1/revisions/retract",
            &json!({"id": second, "actor": "v", "rationale": "wrong"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Retracted records cannot be contested, superseded or merged.
    assert_error(
        &app.post(
            "/v1/revisions/contest",
            &json!({"id": second, "actor": "v", "rationale": "x"}),
        )
        .await,
        StatusCode::CONFLICT,
        "conflict",
        "retracted",
    );
    assert_error(
        &supersede(&app, &first, "1c").await,
        StatusCode::CONFLICT,
        "conflict",
        "retracted",
    );
    assert_error(
        &app.post("/v1/revisions/merge", &json!({"ids": [second], "merged_record": fact("m", true), "actor": "v", "rationale": "x"})).await,
        StatusCode::CONFLICT,
        "conflict",
        "retracted",
    );
}

#[actix_web::test]
async fn episodic_records_are_immutable_for_every_revision() {
    let app = spawn_app().await;
    let id = episode(&app).await;
    let before = app.get_record(&id).await;
    let episodic_record =
        json!({"type": "episodic", "sensitivity": "low", "payload": {"kind": "episodic"}});
    let attempts = [
        (
            "/v1/revisions/supersede",
            json!({"old_id": id, "new_record": episodic_record, "actor": "a", "rationale": "r"}),
        ),
        (
            "/v1/revisions/fork",
            json!({"source_id": id, "forked_record": episodic_record, "actor": "a", "rationale": "r"}),
        ),
        (
            "/v1/revisions/retract",
            json!({"id": id, "actor": "a", "rationale": "r"}),
        ),
        (
            "/v1/revisions/merge",
            json!({"ids": [id], "merged_record": episodic_record, "actor": "a", "rationale": "r"}),
        ),
        (
            "/v1/revisions/contest",
            json!({"id": id, "actor": "a", "rationale": "r"}),
        ),
    ];
    for (path, body) in attempts {
        let response = app.post(path, &body).await;
        assert_error(
            &response,
            StatusCode::CONFLICT,
            "failed_precondition",
            "episodic memory is immutable",
        );
    }
    assert_eq!(app.get_record(&id).await, before);
    assert_eq!(app.all_records().await.len(), 1);
    // Salience is not content: reinforcement applies to episodes too.
    let (status, _) = app
        .post(
            &format!("/v1/records/{id}/penalize"),
            &json!({"amount": 0.5, "actor": "a", "rationale": "r"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
}

#[actix_web::test]
async fn semantic_revisions_need_evidence_of_their_own() {
    let app = spawn_app().await;
    let old = create_id(&app, fact("1", true)).await;
    let cases = [
        (
            "/v1/revisions/supersede",
            json!({"old_id": old, "new_record": fact("2", false), "actor": "a", "rationale": "r"}),
            "new_record",
        ),
        (
            "/v1/revisions/fork",
            json!({"source_id": old, "forked_record": fact("2", false), "actor": "a", "rationale": "r"}),
            "forked_record",
        ),
        (
            "/v1/revisions/merge",
            json!({"ids": [old], "merged_record": fact("2", false), "actor": "a", "rationale": "r"}),
            "merged_record",
        ),
    ];
    for (path, body, field) in cases {
        let response = app.post(path, &body).await;
        assert_error(&response, StatusCode::BAD_REQUEST, "invalid_argument", &format!("{field}: a semantic record created by a revision needs at least one evidence reference"));
    }
    // Payload evidence counts as much as a provenance source.
    let mut with_evidence = fact("2", false);
    with_evidence["payload"]["evidence"] =
        json!([{"source_type": "release_notes", "source_id": "go1.22"}]);
    let (status, body) = app
        .post(
            "/v1/revisions/supersede",
            &json!({"old_id": old, "new_record": with_evidence, "actor": "a", "rationale": "r"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

#[actix_web::test]
async fn revision_requests_are_checked_before_anything_changes() {
    let app = spawn_app().await;
    let id = create_id(&app, fact("1", true)).await;
    let working = json!({"type": "working", "sensitivity": "low", "payload": {"kind": "working", "thread_id": "t", "state": "done"}});
    let cases = [
        (
            "/v1/revisions/retract",
            json!({"id": id, "rationale": "r"}),
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            "actor: actor is required",
        ),
        (
            "/v1/revisions/retract",
            json!({"id": id, "actor": "a", "rationale": ""}),
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            "rationale: rationale is required",
        ),
        (
            "/v1/revisions/retract",
            json!({"actor": "a", "rationale": "r"}),
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            "id: id is required",
        ),
        (
            "/v1/revisions/retract",
            json!({"id": "nope", "actor": "a", "rationale": "r"}),
            StatusCode::NOT_FOUND,
            "not_found",
            "id: record not found",
        ),
        (
            "/v1/revisions/supersede",
            json!({"old_id": id, "actor": "a", "rationale": "r"}),
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            "new_record: new_record is required",
        ),
        (
            "/v1/revisions/supersede",
            json!({"old_id": "nope", "new_record": fact("2", true), "actor": "a", "rationale": "r"}),
            StatusCode::NOT_FOUND,
            "not_found",
            "old_id",
        ),
        (
            "/v1/revisions/supersede",
            json!({"old_id": id, "new_record": working, "actor": "a", "rationale": "r"}),
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            "new_record.type",
        ),
        (
            "/v1/revisions/supersede",
            json!({"old_id": id, "new_record": {"type": "semantic"}, "actor": "a", "rationale": "r"}),
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            "new_record.sensitivity",
        ),
        (
            "/v1/revisions/fork",
            json!({"source_id": "nope", "forked_record": fact("2", true), "actor": "a", "rationale": "r"}),
            StatusCode::NOT_FOUND,
            "not_found",
            "source_id",
        ),
        (
            "/v1/revisions/contest",
            json!({"id": id, "actor": "a", "rationale": "r", "verdict": "no"}),
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            "unknown field `verdict`",
        ),
        (
            "/v1/records/nope/reinforce",
            json!({"actor": "a", "rationale": "r"}),
            StatusCode::NOT_FOUND,
            "not_found",
            "id: record not found",
        ),
        (
            "/v1/records/x/penalize",
            json!({"amount": -1, "actor": "a", "rationale": "r"}),
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            "amount: must be a finite number > 0",
        ),
        (
            "/v1/records/x/penalize",
            json!({"actor": "a", "rationale": "r"}),
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            "amount: amount is required",
        ),
    ];
    for (path, body, status, code, message) in cases {
        assert_error(&app.post(path, &body).await, status, code, message);
    }
    let record = app.get_record(&id).await;
    assert_eq!(record["audit_log"].as_array().unwrap().len(), 1);
    assert_eq!(app.all_records().await.len(), 1);
}

#[actix_web::test]
async fn reinforce_and_penalize_move_salience_within_bounds() {
    let app = spawn_app().await;
    let mut record = fact("1", false);
    record["salience"] = json!(0.85);
    // Pinned: only reinforcement and penalties move it, not the clock.
    record["lifecycle"] =
        json!({"pinned": true, "decay": {"min_salience": 0.2, "reinforcement_gain": 0.1}});
    let id = create_id(&app, record).await;
    app.clock.advance(chrono::Duration::hours(1));
    let (status, body) = app
        .post(
            &format!("/v1/records/{id}/reinforce"),
            &json!({"actor": "user", "rationale": "was useful"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!((body["record"]["salience"].as_f64().unwrap() - 0.95).abs() < 1e-9);
    assert_eq!(
        body["record"]["lifecycle"]["last_reinforced_at"],
        "2026-01-01T01:00:00.000000Z"
    );
    assert_eq!(last_audit(&body["record"])["action"], "reinforce");
    let (_, body) = app
        .post(
            &format!("/v1/records/{id}/reinforce"),
            &json!({"actor": "user", "rationale": "again"}),
        )
        .await;
    assert_eq!(
        body["record"]["salience"], 1.0,
        "capped at the configured maximum"
    );

    let (status, body) = app
        .post(
            &format!("/v1/records/{id}/penalize"),
            &json!({"amount": 0.3, "actor": "critic", "rationale": "misled"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!((body["record"]["salience"].as_f64().unwrap() - 0.7).abs() < 1e-9);
    assert_eq!(last_audit(&body["record"])["action"], "decay");
    assert_eq!(last_audit(&body["record"])["actor"], "critic");
    let (_, body) = app
        .post(
            &format!("/v1/records/{id}/penalize"),
            &json!({"amount": 5, "actor": "critic", "rationale": "badly"}),
        )
        .await;
    assert_eq!(body["record"]["salience"], 0.2, "floored at min_salience");
    assert_eq!(app.get_record(&id).await, body["record"]);
}

#[actix_web::test]
async fn concurrent_supersedes_of_one_record_have_exactly_one_winner() {
    let app = spawn_app().await;
    let old = create_id(&app, fact("base", true)).await;
    let attempts = (0..24).map(|i| {
        let app = &app;
        let old = old.clone();
        async move { supersede(app, &old, &format!("v{i}")).await }
    });
    let results = futures_util::future::join_all(attempts).await;
    let winners: Vec<&Value> = results
        .iter()
        .filter(|(s, _)| *s == StatusCode::CREATED)
        .map(|(_, b)| b)
        .collect();
    assert_eq!(winners.len(), 1, "{results:?}");
    for (status, body) in results.iter().filter(|(s, _)| *s != StatusCode::CREATED) {
        assert_error(
            &(*status, body.clone()),
            StatusCode::CONFLICT,
            "conflict",
            "retracted",
        );
    }
    let winner = winners[0]["record"]["id"].as_str().unwrap();
    let all = app.all_records().await;
    assert_eq!(
        all.len(),
        2,
        "the old record and one new one, nothing lost or duplicated"
    );
    let old_record = app.get_record(&old).await;
    assert_eq!(old_record["payload"]["revision"]["superseded_by"], winner);
    assert_eq!(old_record["audit_log"].as_array().unwrap().len(), 2);
}
