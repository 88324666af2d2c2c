use std::collections::BTreeSet;

use awc::http::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{assert_error, close, create, ids, spawn_app, spawn_app_with, trust, TestApp};

const SENSITIVITIES: [&str; 5] = ["public", "low", "medium", "high", "hyper"];

fn fact(id: &str, sensitivity: &str, scope: Option<&str>) -> Value {
    json!({"id": id, "type": "semantic", "sensitivity": sensitivity, "scope": scope,
           "payload": {"kind": "semantic", "subject": id, "predicate": "is"}})
}

#[actix_web::test]
async fn trust_gates_every_sensitivity_and_scope_combination() {
    let app = spawn_app().await;
    let record_scopes = [None, Some("a"), Some("b")];
    for (rank, sensitivity) in SENSITIVITIES.iter().enumerate() {
        for scope in record_scopes {
            let id = format!("{rank}-{}", scope.unwrap_or("none"));
            create(&app, fact(&id, sensitivity, scope)).await;
        }
    }
    let trust_scopes: [&[&str]; 4] = [&[], &["a"], &["a", "b"], &["c"]];
    for (max_rank, max) in SENSITIVITIES.iter().enumerate() {
        for scopes in trust_scopes {
            let mut expected = BTreeSet::new();
            for rank in 0..SENSITIVITIES.len() {
                for scope in record_scopes {
                    let scope_ok = match scope {
                        None => true,
                        Some(s) => scopes.is_empty() || scopes.contains(&s),
                    };
                    let id = format!("{rank}-{}", scope.unwrap_or("none"));
                    if rank <= max_rank && scope_ok {
                        expected.insert(id.clone());
                    }
                    let by_id = app
                        .post(
                            &format!("/v1/retrieve/{id}"),
                            &json!({"trust": trust(max, scopes)}),
                        )
                        .await;
                    if rank <= max_rank && scope_ok {
                        assert_eq!(by_id.0, StatusCode::OK, "{id} for {max} {scopes:?}");
                    } else {
                        // Exactly what a missing record gets: ids cannot be probed.
                        assert_eq!(
                            by_id,
                            (
                                StatusCode::NOT_FOUND,
                                json!({"error": {"code": "not_found", "message": "record not found"}})
                            ),
                            "{id} for {max} {scopes:?}"
                        );
                    }
                }
            }
            let (status, body) = app
                .post("/v1/retrieve", &json!({"trust": trust(max, scopes)}))
                .await;
            assert_eq!(status, StatusCode::OK, "{body}");
            let seen: BTreeSet<String> = ids(&body).into_iter().collect();
            assert_eq!(seen, expected, "max_sensitivity {max}, scopes {scopes:?}");
        }
    }
}

#[actix_web::test]
async fn trust_is_required_and_checked() {
    let app = spawn_app().await;
    assert_error(
        &app.post("/v1/retrieve", &json!({})).await,
        StatusCode::BAD_REQUEST,
        "invalid_argument",
        "trust: trust context is required",
    );
    assert_error(
        &app.post("/v1/retrieve/x", &json!({})).await,
        StatusCode::BAD_REQUEST,
        "invalid_argument",
        "trust: trust context is required",
    );
    assert_error(
        &app.post(
            "/v1/retrieve",
            &json!({"trust": {"max_sensitivity": "top"}}),
        )
        .await,
        StatusCode::BAD_REQUEST,
        "invalid_argument",
        "trust.max_sensitivity: unknown variant `top`",
    );
    assert_error(
        &app.post("/v1/retrieve", &json!({"trust": {"scopes": []}}))
            .await,
        StatusCode::BAD_REQUEST,
        "invalid_argument",
        "max_sensitivity",
    );
    assert_error(
        &app.post(
            "/v1/retrieve/nothing-here",
            &json!({"trust": trust("hyper", &[])}),
        )
        .await,
        StatusCode::NOT_FOUND,
        "not_found",
        "record not found",
    );
}

/// D (episodic, 0.9), B (working, 0.5), C (semantic, 0.5, newer), A
/// (semantic, 0.5, older): salience first, then layer order, then newest.
/// Pinned, so decay does not separate the ties as the clock moves.
async fn ordered_fixture(app: &TestApp) {
    let with = |id: &str, kind: &str, salience: f64| {
        let payload = match kind {
            "working" => json!({"kind": "working", "thread_id": "t", "state": "executing"}),
            "episodic" => json!({"kind": "episodic"}),
            _ => json!({"kind": "semantic", "subject": id, "predicate": "is"}),
        };
        json!({"id": id, "type": kind, "sensitivity": "low", "salience": salience,
               "lifecycle": {"pinned": true}, "payload": payload})
    };
    create(app, with("A", "semantic", 0.5)).await;
    create(app, with("B", "working", 0.5)).await;
    app.clock.advance(chrono::Duration::seconds(1));
    create(app, with("C", "semantic", 0.5)).await;
    create(app, with("D", "episodic", 0.9)).await;
}

#[actix_web::test]
async fn results_are_ordered_by_salience_then_layer_then_newest() {
    let app = spawn_app().await;
    ordered_fixture(&app).await;
    let (_, body) = app
        .post("/v1/retrieve", &json!({"trust": trust("low", &[])}))
        .await;
    assert_eq!(ids(&body), ["D", "B", "C", "A"]);
    assert_eq!(body["selection"], Value::Null);
}

#[actix_web::test]
async fn memory_types_restrict_the_layers() {
    let app = spawn_app().await;
    ordered_fixture(&app).await;
    let query = |types: Value| json!({"trust": trust("low", &[]), "memory_types": types});
    assert_eq!(
        ids(&app
            .post("/v1/retrieve", &query(json!(["semantic"])))
            .await
            .1),
        ["C", "A"]
    );
    assert_eq!(
        ids(&app
            .post("/v1/retrieve", &query(json!(["episodic", "working"])))
            .await
            .1),
        ["D", "B"]
    );
    assert_eq!(
        ids(&app.post("/v1/retrieve", &query(json!([]))).await.1).len(),
        4
    );
    assert_error(
        &app.post("/v1/retrieve", &query(json!(["semantic", "procedural"])))
            .await,
        StatusCode::BAD_REQUEST,
        "invalid_argument",
        "memory_types[1]: unknown variant `procedural`",
    );
}

#[actix_web::test]
async fn min_salience_and_limit_filter() {
    let app = spawn_app().await;
    ordered_fixture(&app).await;
    let query = |extra: Value| {
        let mut q = json!({"trust": trust("low", &[])});
        q.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        q
    };
    assert_eq!(
        ids(&app
            .post("/v1/retrieve", &query(json!({"min_salience": 0.6})))
            .await
            .1),
        ["D"]
    );
    assert_eq!(
        ids(&app
            .post("/v1/retrieve", &query(json!({"min_salience": 0.5})))
            .await
            .1)
        .len(),
        4
    );
    assert_eq!(
        ids(&app
            .post("/v1/retrieve", &query(json!({"limit": 2})))
            .await
            .1),
        ["D", "B"]
    );
    assert_eq!(
        ids(&app
            .post("/v1/retrieve", &query(json!({"limit": 0})))
            .await
            .1)
        .len(),
        4
    );
    assert_error(
        &app.post("/v1/retrieve", &query(json!({"limit": 1001})))
            .await,
        StatusCode::BAD_REQUEST,
        "invalid_argument",
        "limit: must be at most 1000",
    );
    assert_error(
        &app.post("/v1/retrieve", &query(json!({"limit": -3}))).await,
        StatusCode::BAD_REQUEST,
        "invalid_argument",
        "limit",
    );
    assert_error(
        &app.post("/v1/retrieve", &query(json!({"min_salience": "high"})))
            .await,
        StatusCode::BAD_REQUEST,
        "invalid_argument",
        "min_salience: invalid type",
    );
}

#[actix_web::test]
async fn the_server_maximum_caps_an_open_limit() {
    let app = spawn_app_with(|s| s.retrieval.max_limit = 3).await;
    ordered_fixture(&app).await;
    let (_, body) = app
        .post("/v1/retrieve", &json!({"trust": trust("low", &[])}))
        .await;
    assert_eq!(ids(&body), ["D", "B", "C"]);
    assert_error(
        &app.post(
            "/v1/retrieve",
            &json!({"trust": trust("low", &[]), "limit": 4}),
        )
        .await,
        StatusCode::BAD_REQUEST,
        "invalid_argument",
        "limit: must be at most 3",
    );
}

#[actix_web::test]
async fn retracted_records_are_left_out_unless_asked_for() {
    let app = spawn_app().await;
    create(&app, fact("gone", "low", None)).await;
    let (status, body) = app
        .post(
            "/v1/revisions/retract",
            &json!({"id": "gone", "actor": "a", "rationale": "wrong"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    create(&app, fact("here", "low", None)).await;
    let (_, body) = app
        .post(
            "/v1/retrieve",
            &json!({"trust": trust("low", &[]), "min_salience": 0}),
        )
        .await;
    assert_eq!(ids(&body), ["here"]);
    let (_, body) = app
        .post(
            "/v1/retrieve",
            &json!({"trust": trust("low", &[]), "include_retracted": true}),
        )
        .await;
    assert_eq!(ids(&body), ["here", "gone"]);
    assert_eq!(
        body["records"][1]["payload"]["revision"]["status"],
        "retracted"
    );
}

fn skill(id: &str, confidence: f64, success_rate: f64, conditions: Value) -> Value {
    json!({"id": id, "type": "competence", "sensitivity": "low", "confidence": confidence,
           "payload": {"kind": "competence", "skill_name": id,
                       "triggers": [{"signal": "error", "conditions": conditions}],
                       "performance": {"success_count": 1, "failure_count": 0, "success_rate": success_rate}}})
}

#[actix_web::test]
async fn selection_ranks_procedures_and_flags_a_close_call() {
    let app = spawn_app().await;
    create(&app, skill("strong", 1.0, 1.0, json!({"language": "rust"}))).await;
    create(&app, skill("weak", 0.5, 0.5, json!({"language": "go"}))).await;
    create(&app, fact("unrelated", "low", None)).await;
    let (status, body) = app
        .post("/v1/retrieve", &json!({"trust": trust("low", &[])}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let selection = &body["selection"];
    let selected: Vec<&str> = selection["selected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(selected, ["strong", "weak"]);
    // strong: (1 + 1 + 1) / 3 = 1; weak: (0.5 + 0.5 + 1) / 3 = 2/3.
    assert!(close(&selection["scores"][0]["score"], 1.0), "{selection}");
    assert!(
        close(&selection["scores"][1]["score"], 2.0 / 3.0),
        "{selection}"
    );
    assert!(close(&selection["confidence"], 1.0 / 3.0), "{selection}");
    assert_eq!(selection["needs_more"], true);
}

#[actix_web::test]
async fn context_decides_applicability() {
    let app = spawn_app().await;
    create(&app, skill("rusty", 1.0, 1.0, json!({"language": "rust"}))).await;
    create(&app, skill("gopher", 0.5, 0.5, json!({"language": "go"}))).await;
    let (_, body) = app
        .post(
            "/v1/retrieve",
            &json!({"trust": trust("low", &[]), "context": {"language": "go"}}),
        )
        .await;
    let selection = &body["selection"];
    assert_eq!(selection["selected"][0]["id"], "gopher");
    assert_eq!(selection["scores"][0]["applicability"], 1.0);
    assert_eq!(selection["scores"][1]["applicability"], 0.0);
    // gopher: (1 + 0.5 + 1) / 3; rusty: (0 + 1 + 1) / 3.
    let best = 2.5 / 3.0;
    assert!(
        close(&selection["confidence"], (best - 2.0 / 3.0) / best),
        "{selection}"
    );
    assert_error(
        &app.post(
            "/v1/retrieve",
            &json!({"trust": trust("low", &[]), "context": "go"}),
        )
        .await,
        StatusCode::BAD_REQUEST,
        "invalid_argument",
        "context: context must be a JSON object",
    );
}

#[actix_web::test]
async fn a_clear_winner_needs_nothing_more_and_recency_counts() {
    let app = spawn_app().await;
    let mut stale = skill("stale", 1.0, 1.0, json!({}));
    stale["lifecycle"] = json!({"last_reinforced_at": "2025-12-02T00:00:00Z"});
    create(&app, stale).await;
    let (_, body) = app
        .post("/v1/retrieve", &json!({"trust": trust("low", &[])}))
        .await;
    let selection = &body["selection"];
    // Reinforced 30 days before the test clock: recency 0.5.
    assert!(
        close(&selection["scores"][0]["recency"], 0.5),
        "{selection}"
    );
    assert!(close(&selection["confidence"], 2.5 / 3.0), "{selection}");
    assert_eq!(selection["needs_more"], false);
    let plan = json!({"id": "plan", "type": "plan_graph", "sensitivity": "low",
        "payload": {"kind": "plan_graph", "plan_id": "p", "metrics": {"failure_rate": 0.25}}});
    create(&app, plan).await;
    let (_, body) = app
        .post(
            "/v1/retrieve",
            &json!({"trust": trust("low", &[]), "memory_types": ["plan_graph"]}),
        )
        .await;
    assert_eq!(body["selection"]["scores"][0]["success_rate"], 0.75);
}

#[actix_web::test]
async fn retrieval_returns_salience_decayed_to_now() {
    let app = spawn_app().await;
    let (_, body) = app
        .post("/v1/ingest/event", &crate::helpers::event("agent"))
        .await;
    let id = body["record"]["id"].as_str().unwrap().to_string();
    // Episodic memory halves every hour.
    app.clock.advance(chrono::Duration::hours(1));
    let (_, found) = app
        .post("/v1/retrieve", &json!({"trust": trust("low", &[])}))
        .await;
    assert!(close(&found["records"][0]["salience"], 0.5), "{found}");
    assert!(close(&app.get_record(&id).await["salience"], 0.5));
    let (_, found) = app
        .post(
            "/v1/retrieve",
            &json!({"trust": trust("low", &[]), "min_salience": 0.6}),
        )
        .await;
    assert!(found["records"].as_array().unwrap().is_empty(), "{found}");
}

/// A thread of 12,000 working states, each superseding the one before: its
/// newest state's history is a walk of 10,000 versions (the longest walked)
/// and a load of as many records, about a second of a reading thread on a
/// debug build. On PostgreSQL, where each state takes its thread's lock,
/// 3,000 (seeding 12,000 there takes 20 s). Answers the newest state's id.
async fn long_history(app: &TestApp) -> String {
    let batches = if crate::helpers::postgres_admin_url().is_some() {
        3
    } else {
        12
    };
    let mut newest = String::new();
    for batch in 0..batches {
        let items: Vec<Value> = (0..1000)
            .map(|i| {
                json!({"kind": "working_state", "source": "seed", "thread_id": "t", "state": "executing",
                       "context_summary": format!("step {batch}-{i}")})
            })
            .collect();
        let (status, body) = app.post("/v1/ingest/batch", &json!({"items": items})).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        newest = body["records"][999]["id"].as_str().unwrap().to_string();
    }
    newest
}

/// Sends 20 small reads one after the other (of a type no record has):
/// each must be answered at once, a reading thread being free.
async fn small_reads_are_answered_at_once(app: &TestApp) {
    let small = json!({"trust": trust("hyper", &[]), "limit": 1, "memory_types": ["semantic"]});
    for i in 0..20 {
        let started = std::time::Instant::now();
        let (status, body) = app.post("/v1/retrieve", &small).await;
        let took = started.elapsed();
        assert_eq!(status, StatusCode::OK, "read {i} after {took:?}: {body}");
        // Milliseconds alone; a reading thread held by a heavy read would
        // make it wait most of a second.
        assert!(
            took < std::time::Duration::from_millis(300),
            "read {i} took {took:?}"
        );
    }
}

#[actix_web::test]
async fn heavy_reads_whose_client_left_or_whose_deadline_passed_free_their_readers() {
    let app = spawn_app_with(|s| s.storage.read_timeout_ms = 400).await;
    let newest = long_history(&app).await;
    let path = format!("/v1/records/{newest}/history");
    let heavy = json!({"trust": trust("hyper", &[])});
    // Eight whose clients give up before the deadline…
    let impatient = awc::Client::builder()
        .timeout(std::time::Duration::from_millis(100))
        .finish();
    let url = format!("{}{path}", app.address);
    let abandoned: Vec<_> = (0..8)
        .map(|_| impatient.post(&url).send_json(&heavy))
        .collect();
    futures_util::future::join_all(abandoned).await;
    small_reads_are_answered_at_once(&app).await;
    // …and eight whose deadline passes: each answers 503 at it.
    let patient: Vec<_> = (0..8).map(|_| app.post(&path, &heavy)).collect();
    for (status, body) in futures_util::future::join_all(patient).await {
        assert!(
            status == StatusCode::OK || status == StatusCode::SERVICE_UNAVAILABLE,
            "{status}: {body}"
        );
    }
    small_reads_are_answered_at_once(&app).await;
}
