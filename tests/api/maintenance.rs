use awc::http::StatusCode;
use chrono::Duration;
use serde_json::{json, Value};

use crate::helpers::{create_id, event, near, relations, spawn_app, trust, Deadline, TestApp};

/// A working record with a one-hour half-life and the given lifecycle.
fn memo(id: &str, lifecycle: Value) -> Value {
    let mut lifecycle = lifecycle;
    lifecycle["decay"]["half_life_seconds"] = json!(3600);
    json!({"id": id, "type": "working", "sensitivity": "low", "lifecycle": lifecycle,
           "payload": {"kind": "working", "thread_id": id, "state": "executing"}})
}

/// Salience as stored by the last sweep, which `/v1/metrics` aggregates.
async fn stored_average(app: &TestApp) -> f64 {
    let (_, stats) = app.get("/v1/metrics").await;
    stats["avg_salience"].as_f64().unwrap()
}

#[actix_web::test]
async fn both_curves_floor_max_age_and_pinning_over_http() {
    let app = spawn_app().await;
    create_id(
        &app,
        memo("exp", json!({"decay": {"curve": "exponential"}})),
    )
    .await;
    create_id(
        &app,
        memo(
            "lin",
            json!({"decay": {"curve": "linear"}, "deletion_policy": "never"}),
        ),
    )
    .await;
    create_id(&app, memo("custom", json!({"decay": {"curve": "custom"}}))).await;
    create_id(&app, memo("floor", json!({"decay": {"min_salience": 0.3}}))).await;
    create_id(
        &app,
        memo(
            "aged",
            json!({"decay": {"max_age_seconds": 1800}, "deletion_policy": "never"}),
        ),
    )
    .await;
    create_id(&app, memo("pinned", json!({"pinned": true}))).await;
    app.clock.advance(Duration::minutes(30));
    let report = app.run_job("decay").await;
    assert_eq!(report["scanned"], 6);
    let expect = [
        ("exp", 0.5f64.sqrt()),
        ("lin", 0.5),
        ("custom", 0.5f64.sqrt()),
        ("floor", 0.5f64.sqrt()),
        ("aged", 0.0),
        ("pinned", 1.0),
    ];
    for (id, salience) in expect {
        let record = app.get_record(id).await;
        assert!(
            near(&record["salience"], salience),
            "{id}: {}",
            record["salience"]
        );
    }
    app.clock.advance(Duration::hours(3));
    app.run_job("decay").await;
    assert!(
        near(&app.get_record("floor").await["salience"], 0.3),
        "floored"
    );
    assert!(
        near(&app.get_record("lin").await["salience"], 0.0),
        "linear reaches zero"
    );
    assert!(near(&app.get_record("pinned").await["salience"], 1.0));
    // What the sweep stored agrees with what reads compute.
    let stored = stored_average(&app).await;
    let mut computed = 0.0;
    for (id, _) in expect {
        computed += app.get_record(id).await["salience"].as_f64().unwrap();
    }
    assert!(
        (stored - computed / 6.0).abs() < 1e-3,
        "stored {stored}, computed {}",
        computed / 6.0
    );
}

#[actix_web::test]
async fn a_decay_change_is_audited_once_per_stretch_of_decay() {
    let app = spawn_app().await;
    create_id(&app, memo("m", json!({}))).await;
    for _ in 0..3 {
        app.clock.advance(Duration::minutes(20));
        app.run_job("decay").await;
    }
    let record = app.get_record("m").await;
    let decays: Vec<&Value> = record["audit_log"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "decay")
        .collect();
    assert_eq!(
        decays.len(),
        1,
        "three sweeps fold into one entry: {:?}",
        record["audit_log"]
    );
    assert_eq!(decays[0]["actor"], "engram:scheduler");
    assert_eq!(decays[0]["timestamp"], "2026-01-01T01:00:00.000000Z");
    // Another action in between starts a new decay entry.
    let (status, _) = app
        .post(
            "/v1/records/m/reinforce",
            &json!({"actor": "a", "rationale": "used"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    app.clock.advance(Duration::minutes(20));
    app.run_job("decay").await;
    let record = app.get_record("m").await;
    let actions: Vec<&str> = record["audit_log"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["create", "decay", "reinforce", "decay"]);
}

#[actix_web::test]
async fn reinforcement_and_penalties_restart_decay_from_the_new_value() {
    let app = spawn_app().await;
    create_id(&app, memo("m", json!({}))).await;
    app.clock.advance(Duration::hours(1));
    let (_, body) = app
        .post(
            "/v1/records/m/penalize",
            &json!({"amount": 0.25, "actor": "a", "rationale": "r"}),
        )
        .await;
    assert!(
        near(&body["record"]["salience"], 0.25),
        "0.5 decayed, minus 0.25: {}",
        body["record"]["salience"]
    );
    app.clock.advance(Duration::hours(1));
    assert!(near(&app.get_record("m").await["salience"], 0.125));
    let (_, body) = app
        .post(
            "/v1/records/m/reinforce",
            &json!({"actor": "a", "rationale": "r"}),
        )
        .await;
    assert!(near(&body["record"]["salience"], 0.225));
    app.clock.advance(Duration::hours(1));
    app.run_job("decay").await;
    assert!(near(&app.get_record("m").await["salience"], 0.1125));
}

#[actix_web::test]
async fn a_record_retracted_after_the_sweep_read_it_is_never_pruned() {
    let app = spawn_app().await;
    // Decayed to nothing long ago: every sweep wants to prune them.
    let faded = |id: &str| {
        json!({"id": id, "type": "working", "sensitivity": "low",
               "lifecycle": {"last_reinforced_at": "2000-01-01T00:00:00Z",
                             "decay": {"half_life_seconds": 1}},
               "payload": {"kind": "working", "thread_id": id, "state": "done"}})
    };
    create_id(&app, faded("kept")).await;
    create_id(&app, faded("gone")).await;
    // The retract is queued first; the sweep reads both records before it
    // commits, and its prune is queued behind it.
    let release = app.block_writer().await;
    let client = app.client.clone();
    let url = format!("{}/v1/revisions/retract", app.address);
    let retract = actix_web::rt::spawn(async move {
        client
            .post(url)
            .send_json(&json!({"id": "kept", "actor": "a", "rationale": "wrong"}))
            .await
            .map(|r| r.status())
    });
    let deadline = Deadline::after(10, "the retract to be queued");
    while app.writer.queue_depth() < 1 {
        deadline.wait().await;
    }
    let client = app.client.clone();
    let url = format!("{}/v1/jobs/decay/run", app.address);
    let sweep = actix_web::rt::spawn(async move {
        let mut response = client.post(url).send().await.unwrap();
        response.json::<Value>().await.unwrap()
    });
    let deadline = Deadline::after(10, "the sweep's prune to be queued");
    while app.writer.queue_depth() < 2 {
        deadline.wait().await;
    }
    release.release();
    assert_eq!(retract.await.unwrap().unwrap(), StatusCode::OK);
    let report = sweep.await.unwrap();
    assert_eq!(report["result"]["pruned"], 1, "{report}");
    let kept = app.get_record("kept").await;
    assert_eq!(kept["status"], "retracted");
    assert_eq!(kept["audit_log"].as_array().unwrap().len(), 2, "{kept}");
    let (status, _) = app
        .post("/v1/retrieve/gone", &json!({"trust": trust("hyper", &[])}))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[actix_web::test]
async fn pruning_follows_the_deletion_policy_and_spares_history() {
    let app = spawn_app().await;
    create_id(&app, memo("auto", json!({}))).await;
    create_id(
        &app,
        memo("manual", json!({"deletion_policy": "manual_only"})),
    )
    .await;
    create_id(&app, memo("never", json!({"deletion_policy": "never"}))).await;
    create_id(&app, memo("pinned", json!({"pinned": true}))).await;
    create_id(&app, memo("retracted", json!({}))).await;
    create_id(&app, memo("source", json!({}))).await;
    let (status, _) = app
        .post(
            "/v1/revisions/retract",
            &json!({"id": "retracted", "actor": "a", "rationale": "r"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = app
        .post(
            "/v1/revisions/fork",
            &json!({"source_id": "source", "actor": "a", "rationale": "r", "forked_record": memo("fork", json!({"pinned": true}))}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    // Twenty half-lives: salience below 0.001 everywhere it decays.
    app.clock.advance(Duration::hours(20));
    let report = app.run_job("decay").await;
    assert_eq!(report["pruned"], 1, "{report}");
    let (status, _) = app
        .post("/v1/retrieve/auto", &json!({"trust": trust("hyper", &[])}))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    for kept in ["manual", "never", "pinned", "retracted", "source", "fork"] {
        let record = app.get_record(kept).await;
        assert_eq!(record["id"], kept);
    }
    assert!(app.get_record("manual").await["salience"].as_f64().unwrap() < 0.001);
    // Running again prunes nothing more.
    assert_eq!(app.run_job("decay").await["pruned"], 0);
}

fn episode(
    id: &str,
    scope: Option<&str>,
    sensitivity: &str,
    created_at: &str,
    payload: Value,
) -> Value {
    json!({"id": id, "type": "episodic", "sensitivity": sensitivity, "scope": scope,
           "created_at": created_at, "payload": payload})
}

fn event_payload(kind: &str, summary: &str) -> Value {
    json!({"kind": "episodic", "timeline": [{"t": "2026-01-01T00:00:00Z", "event_kind": kind, "ref": "r", "summary": summary}]})
}

fn tools_payload(tools: &[&str], outcome: &str) -> Value {
    let nodes: Vec<Value> = tools
        .iter()
        .enumerate()
        .map(|(i, tool)| {
            let depends_on: Vec<String> = if i == 0 { vec![] } else { vec![format!("n{}", i - 1)] };
            json!({"id": format!("n{i}"), "tool": tool, "args": {"step": i}, "timestamp": "2026-01-01T00:00:00Z", "depends_on": depends_on})
        })
        .collect();
    json!({"kind": "episodic", "tool_graph": nodes, "outcome": outcome})
}

const NOW: &str = "2026-01-01T00:00:00Z";

async fn records_of(app: &TestApp, memory_type: &str) -> Vec<Value> {
    let (_, body) = app
        .post("/v1/retrieve", &json!({"trust": trust("hyper", &[]), "memory_types": [memory_type], "include_retracted": true}))
        .await;
    body["records"].as_array().unwrap().clone()
}

/// An episode that barely decays, so compression alone moves it.
fn lasting_episode(id: &str, salience: f64, created_at: &str) -> Value {
    json!({"id": id, "type": "episodic", "sensitivity": "low", "salience": salience, "created_at": created_at,
           "lifecycle": {"decay": {"half_life_seconds": 315360000}}, "payload": {"kind": "episodic"}})
}

#[actix_web::test]
async fn old_episodes_are_compressed_once() {
    let app = spawn_app().await;
    create_id(&app, lasting_episode("old", 0.8, NOW)).await;
    app.clock.advance(Duration::hours(20));
    create_id(&app, lasting_episode("young", 0.8, "2026-01-01T20:00:00Z")).await;
    app.clock.advance(Duration::hours(5));
    let report = app.run_job("consolidation").await;
    assert_eq!(report["episodic_compressed"], 1, "{report}");
    let old = app.get_record("old").await;
    assert!(
        (old["salience"].as_f64().unwrap() - 0.4).abs() < 1e-4,
        "{}",
        old["salience"]
    );
    let entry = old["audit_log"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(entry["actor"], "engram:scheduler");
    assert!(entry["rationale"].as_str().unwrap().contains("compression"));
    let young = app.get_record("young").await;
    assert!(
        (young["salience"].as_f64().unwrap() - 0.8).abs() < 1e-3,
        "{young}"
    );
    assert_eq!(
        app.run_job("consolidation").await["episodic_compressed"],
        0,
        "at most once"
    );
    assert!((app.get_record("old").await["salience"].as_f64().unwrap() - 0.4).abs() < 1e-4);
}

#[actix_web::test]
async fn compression_halves_salience_down_to_the_floor() {
    let app = spawn_app().await;
    create_id(&app, lasting_episode("high", 0.8, NOW)).await;
    create_id(&app, lasting_episode("low", 0.06, NOW)).await;
    app.clock.advance(Duration::hours(25));
    assert_eq!(app.run_job("consolidation").await["episodic_compressed"], 2);
    assert!((app.get_record("high").await["salience"].as_f64().unwrap() - 0.4).abs() < 1e-4);
    assert!((app.get_record("low").await["salience"].as_f64().unwrap() - 0.05).abs() < 1e-4);
}

#[actix_web::test]
async fn repeated_observations_become_a_fact_and_later_reinforce_it() {
    let app = spawn_app().await;
    create_id(
        &app,
        episode(
            "e1",
            Some("p1"),
            "low",
            NOW,
            event_payload("error", "disk full on build host"),
        ),
    )
    .await;
    assert_eq!(
        app.run_job("consolidation").await["semantic_extracted"],
        0,
        "seen once is not a fact yet"
    );
    create_id(
        &app,
        episode(
            "e2",
            Some("p1"),
            "low",
            NOW,
            event_payload("error", "disk full on build host"),
        ),
    )
    .await;
    create_id(
        &app,
        episode(
            "other",
            None,
            "low",
            NOW,
            event_payload("error", "something else"),
        ),
    )
    .await;
    // The same event elsewhere, or more sensitive, is another group: it
    // never counts towards a fact readers of p1/low can see.
    for (id, scope, sensitivity) in [("x1", Some("p2"), "low"), ("x2", Some("p1"), "high")] {
        create_id(
            &app,
            episode(
                id,
                scope,
                sensitivity,
                NOW,
                event_payload("error", "disk full on build host"),
            ),
        )
        .await;
    }
    assert_eq!(app.run_job("consolidation").await["semantic_extracted"], 1);
    let facts = records_of(&app, "semantic").await;
    assert_eq!(facts.len(), 1);
    let fact = &facts[0];
    assert_eq!(fact["payload"]["subject"], "error");
    assert_eq!(fact["payload"]["predicate"], "observed");
    assert_eq!(fact["payload"]["object"], "disk full on build host");
    assert_eq!(fact["sensitivity"], "low");
    assert_eq!(fact["scope"], "p1");
    let evidence: Vec<&str> = fact["payload"]["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["source_id"].as_str().unwrap())
        .collect();
    assert_eq!(evidence, ["e1", "e2"]);
    // Unchanged data: nothing new.
    let again = app.run_job("consolidation").await;
    assert_eq!(
        again,
        json!({"episodic_compressed": 0, "semantic_extracted": 0, "competence_extracted": 0, "plan_graphs_extracted": 0, "duplicates_resolved": 0})
    );
    // A third sighting reinforces the fact.
    let id = fact["id"].as_str().unwrap();
    let (_, body) = app
        .post(
            &format!("/v1/records/{id}/penalize"),
            &json!({"amount": 0.5, "actor": "a", "rationale": "r"}),
        )
        .await;
    assert!(near(&body["record"]["salience"], 0.5));
    create_id(
        &app,
        episode(
            "e3",
            Some("p1"),
            "low",
            NOW,
            event_payload("error", "disk full on build host"),
        ),
    )
    .await;
    assert_eq!(app.run_job("consolidation").await["semantic_extracted"], 1);
    let reinforced = app.get_record(id).await;
    assert!(
        near(&reinforced["salience"], 0.6),
        "{}",
        reinforced["salience"]
    );
    assert_eq!(records_of(&app, "semantic").await.len(), 1);
}

#[actix_web::test]
async fn successful_tool_sequences_become_a_skill() {
    let app = spawn_app().await;
    create_id(
        &app,
        episode(
            "s1",
            Some("team"),
            "low",
            NOW,
            tools_payload(&["file_read", "file_edit"], "success"),
        ),
    )
    .await;
    create_id(
        &app,
        episode(
            "s2",
            Some("team"),
            "low",
            NOW,
            tools_payload(&["file_read", "file_edit"], "success"),
        ),
    )
    .await;
    create_id(
        &app,
        episode(
            "f1",
            Some("team"),
            "low",
            NOW,
            tools_payload(&["file_read", "file_edit"], "failure"),
        ),
    )
    .await;
    create_id(
        &app,
        episode(
            "lone",
            Some("team"),
            "low",
            NOW,
            tools_payload(&["grep"], "success"),
        ),
    )
    .await;
    let report = app.run_job("consolidation").await;
    assert_eq!(report["competence_extracted"], 1, "{report}");
    let skills = records_of(&app, "competence").await;
    assert_eq!(skills.len(), 1);
    let skill = &skills[0];
    assert_eq!(skill["payload"]["skill_name"], "file_read > file_edit");
    assert_eq!(
        skill["payload"]["required_tools"],
        json!(["file_read", "file_edit"])
    );
    assert_eq!(skill["payload"]["recipe"][1]["tool"], "file_edit");
    assert_eq!(skill["payload"]["performance"]["success_count"], 2);
    assert_eq!(skill["payload"]["performance"]["failure_count"], 1);
    assert!(near(
        &skill["payload"]["performance"]["success_rate"],
        2.0 / 3.0
    ));
    assert_eq!(skill["sensitivity"], "low");
    assert_eq!(skill["scope"], "team");
    assert_eq!(relations(skill, "derived_from"), ["s1", "s2"]);
    assert_eq!(
        app.run_job("consolidation").await["competence_extracted"],
        0,
        "idempotent"
    );
    create_id(
        &app,
        episode(
            "s3",
            Some("team"),
            "low",
            NOW,
            tools_payload(&["file_read", "file_edit"], "success"),
        ),
    )
    .await;
    assert_eq!(
        app.run_job("consolidation").await["competence_extracted"],
        1
    );
    let skill = app.get_record(skill["id"].as_str().unwrap()).await;
    assert_eq!(skill["payload"]["performance"]["success_count"], 3);
    assert_eq!(records_of(&app, "competence").await.len(), 1);
}

#[actix_web::test]
async fn a_derived_record_counts_only_sources_its_readers_may_see() {
    let app = spawn_app().await;
    let sequence = ["file_read", "file_edit"];
    for i in 0..2 {
        let id = format!("win{i}");
        let payload = tools_payload(&sequence, "success");
        create_id(&app, episode(&id, Some("a"), "low", NOW, payload)).await;
    }
    for i in 0..5 {
        let id = format!("loss{i}");
        let payload = tools_payload(&sequence, "failure");
        create_id(&app, episode(&id, Some("b"), "hyper", NOW, payload)).await;
    }
    let report = app.run_job("consolidation").await;
    assert_eq!(report["competence_extracted"], 1, "{report}");
    let skills = records_of(&app, "competence").await;
    assert_eq!(skills.len(), 1);
    let skill = &skills[0];
    assert_eq!(
        (&skill["sensitivity"], &skill["scope"]),
        (&json!("low"), &json!("a"))
    );
    let performance = &skill["payload"]["performance"];
    assert_eq!(performance["success_count"], 2);
    assert_eq!(performance["failure_count"], 0, "{skill}");
}

#[actix_web::test]
async fn a_tool_graph_of_three_or_more_calls_becomes_a_plan_once() {
    let app = spawn_app().await;
    create_id(
        &app,
        episode(
            "long",
            None,
            "medium",
            NOW,
            tools_payload(&["checkout", "build", "test"], "partial"),
        ),
    )
    .await;
    create_id(
        &app,
        episode(
            "short",
            None,
            "low",
            NOW,
            tools_payload(&["checkout", "build"], "partial"),
        ),
    )
    .await;
    assert_eq!(
        app.run_job("consolidation").await["plan_graphs_extracted"],
        1
    );
    let plans = records_of(&app, "plan_graph").await;
    assert_eq!(plans.len(), 1);
    let plan = &plans[0];
    let ops: Vec<&str> = plan["payload"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["op"].as_str().unwrap())
        .collect();
    assert_eq!(ops, ["checkout", "build", "test"]);
    assert_eq!(
        plan["payload"]["edges"],
        json!([{"from": "n0", "to": "n1", "kind": "data"}, {"from": "n1", "to": "n2", "kind": "data"}])
    );
    assert_eq!(
        plan["relations"][0],
        json!({"predicate": "derived_from", "target_id": "long", "weight": 1.0, "created_at": crate::helpers::START_AT})
    );
    assert_eq!(plan["sensitivity"], "medium");
    assert_eq!(
        app.run_job("consolidation").await["plan_graphs_extracted"],
        0,
        "once per source"
    );
}

#[actix_web::test]
async fn identical_facts_merge_into_the_oldest_keeping_all_provenance() {
    let app = spawn_app().await;
    let fact = |id: &str, source: &str, scope: Option<&str>, sensitivity: &str| {
        json!({"id": id, "type": "semantic", "sensitivity": sensitivity, "scope": scope,
               "provenance": {"sources": [{"kind": "observation", "ref": source, "timestamp": NOW}]},
               "payload": {"kind": "semantic", "subject": "user", "predicate": "prefers", "object": {"editor": "vim"}}})
    };
    create_id(&app, fact("first", "obs-1", Some("p"), "low")).await;
    app.clock.advance(Duration::seconds(1));
    create_id(&app, fact("second", "obs-2", Some("p"), "high")).await;
    create_id(&app, fact("elsewhere", "obs-3", Some("q"), "low")).await;
    let report = app.run_job("consolidation").await;
    assert_eq!(report["duplicates_resolved"], 1, "{report}");
    let survivor = app.get_record("first").await;
    assert_eq!(survivor["status"], "active");
    assert_eq!(survivor["sensitivity"], "high");
    let refs: Vec<&str> = survivor["provenance"]["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["ref"].as_str().unwrap())
        .collect();
    assert_eq!(refs, ["obs-1", "obs-2"]);
    let merged = app.get_record("second").await;
    assert_eq!(merged["status"], "retracted");
    assert_eq!(
        merged["audit_log"].as_array().unwrap().last().unwrap()["action"],
        "merge"
    );
    assert_eq!(
        app.get_record("elsewhere").await["status"],
        "active",
        "another scope is another fact"
    );
    assert_eq!(app.run_job("consolidation").await["duplicates_resolved"], 0);
}

#[actix_web::test]
async fn a_consolidated_fact_merged_into_an_older_one_hands_it_later_sightings() {
    let app = spawn_app().await;
    create_id(
        &app,
        json!({"id": "known", "type": "semantic", "sensitivity": "low", "salience": 0.5,
               "provenance": {"sources": [{"kind": "observation", "ref": "ops-notes", "timestamp": NOW}]},
               "payload": {"kind": "semantic", "subject": "error", "predicate": "observed", "object": "disk full"}}),
    )
    .await;
    app.clock.advance(Duration::seconds(1));
    create_id(
        &app,
        episode("e1", None, "low", NOW, event_payload("error", "disk full")),
    )
    .await;
    create_id(
        &app,
        episode("e2", None, "low", NOW, event_payload("error", "disk full")),
    )
    .await;
    let report = app.run_job("consolidation").await;
    assert_eq!(report["semantic_extracted"], 1, "{report}");
    assert_eq!(report["duplicates_resolved"], 1, "{report}");
    create_id(
        &app,
        episode("e3", None, "low", NOW, event_payload("error", "disk full")),
    )
    .await;
    let report = app.run_job("consolidation").await;
    assert_eq!(report["semantic_extracted"], 1, "{report}");
    let active: Vec<Value> = records_of(&app, "semantic")
        .await
        .into_iter()
        .filter(|r| r["status"] == "active")
        .collect();
    assert_eq!(active.len(), 1);
    assert_eq!(active[0]["id"], "known");
    assert!(
        active[0]["salience"].as_f64().unwrap() > 0.55,
        "reinforced: {}",
        active[0]["salience"]
    );
}

#[actix_web::test]
async fn decay_never_prunes_an_episode_consolidation_has_not_finished_with() {
    let app = spawn_app().await;
    let (status, body) = app.post("/v1/ingest/event", &event("agent")).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let id = body["record"]["id"].as_str().unwrap().to_string();
    // Twelve half-lives: far below the prune threshold, but consolidation
    // has not run.
    app.clock.advance(Duration::hours(12));
    assert_eq!(app.run_job("decay").await["pruned"], 0);
    assert!(app.get_record(&id).await["salience"].as_f64().unwrap() < 0.001);
    // Consolidation reads it; it is not old enough to compress yet.
    app.run_job("consolidation").await;
    assert_eq!(app.run_job("decay").await["pruned"], 0);
    // Once compressed too, decay may take it.
    app.clock.advance(Duration::hours(13));
    let report = app.run_job("consolidation").await;
    assert_eq!(report["episodic_compressed"], 1, "{report}");
    app.clock.advance(Duration::hours(1));
    assert_eq!(app.run_job("decay").await["pruned"], 1);
    let (status, _) = app
        .post(
            &format!("/v1/retrieve/{id}"),
            &json!({"trust": {"max_sensitivity": "hyper"}}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
