//! Relevance: text-ranked retrieval, scores, filters, and one current
//! working state per thread.

use awc::http::StatusCode;
use chrono::Duration;
use serde_json::{json, Value};

use crate::helpers::{assert_error, create, ids, spawn_app, trust, TestApp};

async fn retrieve(app: &TestApp, body: Value) -> Value {
    let (status, answer) = app.post("/v1/retrieve", &body).await;
    assert_eq!(status, StatusCode::OK, "{body} -> {answer}");
    answer
}

async fn search(app: &TestApp, text: &str) -> Vec<String> {
    ids(&retrieve(
        app,
        json!({"trust": trust("hyper", &[]), "task_descriptor": text}),
    )
    .await)
}

fn fact(id: &str, subject: &str, predicate: &str, object: &str) -> Value {
    json!({"id": id, "type": "semantic", "sensitivity": "low",
           "payload": {"kind": "semantic", "subject": subject, "predicate": predicate, "object": object}})
}

fn skill(id: &str, name: &str, steps: &[&str]) -> Value {
    let recipe: Vec<Value> = steps.iter().map(|s| json!({"step": s})).collect();
    json!({"id": id, "type": "competence", "sensitivity": "low",
           "payload": {"kind": "competence", "skill_name": name, "recipe": recipe}})
}

/// A small memory of unrelated things, as agents would leave it.
async fn seed(app: &TestApp) {
    create(
        app,
        skill(
            "go-cache",
            "fix go linker cache errors",
            &["run go clean -cache", "rebuild the module"],
        ),
    )
    .await;
    create(app, fact("editor", "user", "prefers editor", "helix")).await;
    create(
        app,
        fact("coffee", "user", "drinks", "black coffee in the morning"),
    )
    .await;
    create(
        app,
        skill(
            "deploy",
            "deploy the web service",
            &["build the container image", "roll out to staging"],
        ),
    )
    .await;
    create(
        app,
        json!({"id": "episode", "type": "episodic", "sensitivity": "low",
               "payload": {"kind": "episodic", "timeline": [
                   {"t": "2026-01-01T00:00:00Z", "event_kind": "error", "ref": "ci-42", "summary": "go build failed: linker cache corrupt"}]}}),
    )
    .await;
}

#[actix_web::test]
async fn a_query_ranks_what_it_is_about_first_and_says_why() {
    let app = spawn_app().await;
    seed(&app).await;
    let found = search(&app, "How do I fix a Go linker cache error?").await;
    assert_eq!(found[..2], ["go-cache", "episode"], "{found:?}");
    assert!(!found.contains(&"coffee".to_string()), "{found:?}");
    assert_eq!(
        search(&app, "what editor does the user like").await[0],
        "editor"
    );
    // Stemming: "deploying containers" finds "deploy", "container"; one
    // stem for each form of a word, on either backend.
    assert_eq!(search(&app, "deploying containers").await, ["deploy"]);
    assert_eq!(search(&app, "deployment").await, ["deploy"]);
    assert_eq!(search(&app, "Déployed").await, ["deploy"]);
    assert_eq!(search(&app, "rolls").await, ["deploy"]);

    let body = retrieve(
        &app,
        json!({"trust": trust("hyper", &[]), "task_descriptor": "go linker cache"}),
    )
    .await;
    let scores = body["scores"].as_array().unwrap();
    assert_eq!(scores.len(), ids(&body).len());
    let mut previous = f64::INFINITY;
    for (score, id) in scores.iter().zip(ids(&body)) {
        assert_eq!(score["id"], id.as_str());
        let value = score["score"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&value), "{score}");
        assert!(value <= previous, "best first: {scores:?}");
        previous = value;
        assert!(score["text"].as_f64().unwrap() > 0.0, "{score}");
        assert!(score["vector"].is_null(), "{score}");
        assert!(score["salience"].as_f64().unwrap() > 0.0, "{score}");
    }
    assert_eq!(scores[0]["text"], 1.0, "the best match has text 1");

    // Without a query: today's order, scores by salience alone.
    let body = retrieve(&app, json!({"trust": trust("hyper", &[])})).await;
    assert_eq!(ids(&body).len(), 5);
    for score in body["scores"].as_array().unwrap() {
        assert!(score["text"].is_null(), "{score}");
    }
    // A text with no words ranks by salience too.
    let body = retrieve(
        &app,
        json!({"trust": trust("hyper", &[]), "task_descriptor": "?! ..."}),
    )
    .await;
    assert_eq!(ids(&body).len(), 5);
}

#[actix_web::test]
async fn query_syntax_from_a_client_is_only_ever_words() {
    let app = spawn_app().await;
    seed(&app).await;
    for text in [
        "\"unbalanced quote",
        "\"go\" OR \"cache\"",
        "link*",
        "NEAR(go cache, 2)",
        "-linker",
        "(go AND cache",
        "go) OR (",
        "AND OR NOT",
        "task_descriptor:go",
        "^go",
        "{skill_name}: go",
        "'; DROP TABLE records; --",
        "\u{0}go\u{7f}",
        "ünïcödé ✓ 日本語",
        "*",
        "",
    ] {
        let (status, body) = app
            .post(
                "/v1/retrieve",
                &json!({"trust": trust("hyper", &[]), "task_descriptor": text}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{text:?}: {body}");
    }
    // The words inside the syntax still count.
    let mut found = search(&app, "NEAR(linker").await;
    found.sort();
    assert_eq!(found, ["episode", "go-cache"]);
    assert_eq!(app.all_records().await.len(), 5);
}

#[actix_web::test]
async fn trust_filters_before_the_top_k_cut() {
    let app = spawn_app().await;
    // Many records that match far better, none visible to the caller:
    // more than one chunk of matches is looked up at a time.
    for i in 0..300 {
        let mut hidden = fact(
            &format!("hidden-{i}"),
            "kubernetes",
            "kubernetes",
            "kubernetes kubernetes",
        );
        hidden["sensitivity"] = json!("hyper");
        create(&app, hidden).await;
        if i >= 40 {
            continue;
        }
        let mut scoped = fact(
            &format!("other-scope-{i}"),
            "kubernetes",
            "kubernetes",
            "kubernetes",
        );
        scoped["scope"] = json!("team-b");
        create(&app, scoped).await;
    }
    for i in 0..6 {
        create(
            &app,
            fact(
                &format!("visible-{i}"),
                "cluster",
                "runs on",
                "kubernetes, among other things",
            ),
        )
        .await;
    }
    let body = retrieve(
        &app,
        json!({"trust": trust("low", &["team-a"]), "task_descriptor": "kubernetes", "limit": 5}),
    )
    .await;
    let found = ids(&body);
    assert_eq!(found.len(), 5, "{found:?}");
    assert!(
        found.iter().all(|id| id.starts_with("visible-")),
        "{found:?}"
    );
    assert_eq!(body["scores"][0]["text"], 1.0, "normalised among visible");
}

#[actix_web::test]
async fn every_filter_narrows_and_they_combine() {
    let app = spawn_app().await;
    let post = |path: &'static str, body: Value| {
        let app = &app;
        async move {
            let (status, answer) = app.post(path, &body).await;
            assert_eq!(status, StatusCode::CREATED, "{answer}");
            answer["record"]["id"].as_str().unwrap().to_string()
        }
    };
    let deploy_a = post(
        "/v1/ingest/event",
        json!({"source": "agent-a", "event_kind": "deploy", "ref": "r1", "summary": "deployed api", "tags": ["prod", "api"]}),
    )
    .await;
    let deploy_b = post(
        "/v1/ingest/event",
        json!({"source": "agent-b", "event_kind": "deploy", "ref": "r2", "summary": "deployed web", "tags": ["prod"]}),
    )
    .await;
    let fact_user = post(
        "/v1/ingest/observation",
        json!({"source": "agent-a", "subject": "user", "predicate": "likes", "object": "tea", "tags": ["prod"]}),
    )
    .await;
    let fact_repo = post(
        "/v1/ingest/observation",
        json!({"source": "agent-b", "subject": "repo", "predicate": "uses", "object": "go"}),
    )
    .await;
    let state_x = post(
        "/v1/ingest/working-state",
        json!({"source": "agent-a", "thread_id": "thread-x", "state": "executing"}),
    )
    .await;
    let state_y = post(
        "/v1/ingest/working-state",
        json!({"source": "agent-c", "thread_id": "thread-y", "state": "planning"}),
    )
    .await;
    let filtered = |extra: Value| {
        let app = &app;
        async move {
            let mut body = json!({"trust": trust("hyper", &[])});
            for (k, v) in extra.as_object().unwrap() {
                body[k] = v.clone();
            }
            let mut found = ids(&retrieve(app, body).await);
            found.sort();
            found
        }
    };
    let sorted = |mut ids: Vec<&String>| {
        ids.sort();
        ids.into_iter().cloned().collect::<Vec<String>>()
    };
    assert_eq!(
        filtered(json!({"tags": ["prod"]})).await,
        sorted(vec![&deploy_a, &deploy_b, &fact_user])
    );
    assert_eq!(
        filtered(json!({"tags": ["prod", "api"]})).await,
        sorted(vec![&deploy_a])
    );
    assert_eq!(
        filtered(json!({"sources": ["agent-b", "agent-c"]})).await,
        sorted(vec![&deploy_b, &fact_repo, &state_y])
    );
    assert_eq!(
        filtered(json!({"thread_id": "thread-x"})).await,
        sorted(vec![&state_x])
    );
    assert_eq!(
        filtered(json!({"subject": "repo"})).await,
        sorted(vec![&fact_repo])
    );
    assert_eq!(
        filtered(json!({"tags": ["prod"], "sources": ["agent-a"]})).await,
        sorted(vec![&deploy_a, &fact_user])
    );
    assert_eq!(
        filtered(json!({"tags": ["prod"], "task_descriptor": "deployed web"})).await,
        sorted(vec![&deploy_a, &deploy_b])
    );
    assert!(
        filtered(json!({"thread_id": "thread-x", "memory_types": ["semantic"]}))
            .await
            .is_empty()
    );

    // Creation times: everything above was made at the test clock's now.
    let now = app.clock.now();
    let stamp = |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339();
    assert_eq!(
        filtered(json!({"created_after": stamp(now - Duration::seconds(1))}))
            .await
            .len(),
        6
    );
    assert!(filtered(json!({"created_after": stamp(now)}))
        .await
        .is_empty());
    assert!(
        filtered(json!({"created_before": stamp(now)}))
            .await
            .is_empty(),
        "strictly before"
    );
    app.clock.advance(Duration::hours(1));
    let later = post(
        "/v1/ingest/event",
        json!({"source": "agent-a", "event_kind": "note", "ref": "r3"}),
    )
    .await;
    assert_eq!(
        filtered(json!({"created_after": stamp(now + Duration::minutes(30))})).await,
        vec![later.clone()]
    );
    assert_eq!(
        filtered(json!({"created_after": stamp(now - Duration::seconds(1)),
                        "created_before": stamp(now + Duration::minutes(30))}))
        .await
        .len(),
        6
    );
}

#[actix_web::test]
async fn a_bad_or_unknown_filter_is_refused_by_name() {
    let app = spawn_app().await;
    for (extra, field) in [
        (json!({"tags": "prod"}), "tags"),
        (json!({"tags": [""]}), "tags[0]"),
        (json!({"sources": [1]}), "sources"),
        (json!({"sources": [" "]}), "sources[0]"),
        (json!({"thread_id": ""}), "thread_id"),
        (json!({"subject": "a\u{0}b"}), "subject"),
        (json!({"created_after": "yesterday"}), "created_after"),
        (json!({"created_before": "2026-01-01"}), "created_before"),
        (
            json!({"created_after": "2026-02-01T00:00:00Z", "created_before": "2026-01-01T00:00:00Z"}),
            "created_before",
        ),
        (json!({"tag": ["prod"]}), "tag"),
        (json!({"filters": {"tags": ["prod"]}}), "filters"),
    ] {
        let mut body = json!({"trust": trust("hyper", &[])});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        let answer = app.post("/v1/retrieve", &body).await;
        assert_error(&answer, StatusCode::BAD_REQUEST, "invalid_argument", field);
    }
}

#[actix_web::test]
async fn the_index_follows_every_revision() {
    let app = spawn_app().await;
    create(&app, fact("old", "service", "listens on", "port 8080")).await;
    let revise = |path: &'static str, body: Value| {
        let app = &app;
        async move {
            let (status, answer) = app.post(path, &body).await;
            assert!(status.is_success(), "{path}: {answer}");
            answer
        }
    };
    let evidence = json!([{"source_type": "observation", "source_id": "netstat"}]);
    let mut new = fact("new", "service", "listens on", "port 9090");
    new["payload"]["evidence"] = evidence.clone();
    revise(
        "/v1/revisions/supersede",
        json!({"old_id": "old", "actor": "a", "rationale": "moved", "new_record": new}),
    )
    .await;
    assert_eq!(search(&app, "9090").await, ["new"]);
    assert!(search(&app, "8080").await.is_empty(), "retracted");
    let body = retrieve(
        &app,
        json!({"trust": trust("hyper", &[]), "task_descriptor": "8080", "include_retracted": true}),
    )
    .await;
    assert_eq!(ids(&body), ["old"]);

    create(&app, fact("m1", "build", "uses", "bazel")).await;
    create(&app, fact("m2", "build", "uses", "bazel remote cache")).await;
    let mut merged = fact("merged", "build", "uses", "bazel with a remote cache");
    merged["payload"]["evidence"] = evidence;
    revise(
        "/v1/revisions/merge",
        json!({"ids": ["m1", "m2"], "actor": "a", "rationale": "same", "merged_record": merged}),
    )
    .await;
    assert_eq!(search(&app, "bazel").await, ["merged"]);

    revise(
        "/v1/revisions/retract",
        json!({"id": "merged", "actor": "a", "rationale": "wrong"}),
    )
    .await;
    assert!(search(&app, "bazel").await.is_empty());
}

#[actix_web::test]
async fn compressed_episodes_stay_findable_and_pruned_ones_are_gone() {
    let app = spawn_app().await;
    create(
        &app,
        json!({"id": "old-episode", "type": "episodic", "sensitivity": "low", "created_at": "2025-06-01T00:00:00Z",
               "lifecycle": {"decay": {"half_life_seconds": 315360000}},
               "payload": {"kind": "episodic", "timeline": [
                   {"t": "2025-06-01T00:00:00Z", "event_kind": "incident", "ref": "pager-7", "summary": "postgres failover drill"}]}}),
    )
    .await;
    create(
        &app,
        json!({"id": "short-lived", "type": "semantic", "sensitivity": "low",
               "lifecycle": {"decay": {"half_life_seconds": 60}},
               "payload": {"kind": "semantic", "subject": "cache", "predicate": "warmed", "object": "memcached"}}),
    )
    .await;
    let report = app.run_job("consolidation").await;
    assert_eq!(report["episodic_compressed"], 1, "{report}");
    assert_eq!(search(&app, "postgres failover").await[0], "old-episode");
    // Twenty half-lives: pruned.
    app.clock.advance(Duration::hours(1));
    assert_eq!(app.run_job("decay").await["pruned"], 1);
    assert!(search(&app, "memcached").await.is_empty());
    // On SQLite the index is a table of its own, kept in step; on
    // PostgreSQL it is a column of the record's row.
    if crate::helpers::postgres_admin_url().is_none() {
        let rows = app.sql_number("SELECT COUNT(*) FROM record_search", &[]);
        let records = app.sql_number("SELECT COUNT(*) FROM records", &[]);
        assert_eq!(rows, records, "one index row per record");
    }
}

#[actix_web::test]
async fn a_thread_has_one_current_working_state() {
    let app = spawn_app().await;
    let state = |state: &str, next: &str| json!({"source": "planner", "thread_id": "release-42", "state": state, "next_actions": [next]});
    let (_, first) = app
        .post(
            "/v1/ingest/working-state",
            &state("planning", "write changelog"),
        )
        .await;
    let first = first["record"]["id"].as_str().unwrap().to_string();
    let (status, second) = app
        .post(
            "/v1/ingest/working-state",
            &state("executing", "tag release"),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{second}");
    let second = second["record"]["id"].as_str().unwrap().to_string();
    // Another thread, and the same thread in another scope, are left be.
    app.post(
        "/v1/ingest/working-state",
        &json!({"source": "planner", "thread_id": "release-43", "state": "planning"}),
    )
    .await;
    let mut scoped = state("planning", "x");
    scoped["scope"] = json!("team-b");
    app.post("/v1/ingest/working-state", &scoped).await;

    let current = retrieve(
        &app,
        json!({"trust": trust("hyper", &["team-a"]), "thread_id": "release-42"}),
    )
    .await;
    assert_eq!(ids(&current), [second.as_str()]);
    let old = app.get_record(&first).await;
    assert_eq!(old["status"], "retracted");
    assert!(old["audit_log"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["rationale"]
            .as_str()
            .unwrap()
            .contains("newer working state of thread release-42")));
    assert_eq!(
        app.history_ids(&second).await,
        [first.clone(), second.clone()]
    );

    // A batch applies its states in order: the last is current.
    let (status, body) = app
        .post(
            "/v1/ingest/batch",
            &json!({"items": [
                {"kind": "working_state", "source": "planner", "thread_id": "release-42", "state": "blocked"},
                {"kind": "working_state", "source": "planner", "thread_id": "release-42", "state": "done"}
            ]}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let last = body["records"][1]["id"].as_str().unwrap().to_string();
    let current = retrieve(
        &app,
        json!({"trust": trust("hyper", &["team-a"]), "thread_id": "release-42"}),
    )
    .await;
    assert_eq!(ids(&current), [last.as_str()]);
    assert_eq!(app.history_ids(&last).await.len(), 4);
    let all_states = retrieve(
        &app,
        json!({"trust": trust("hyper", &[]), "memory_types": ["working"]}),
    )
    .await;
    assert_eq!(ids(&all_states).len(), 3, "one per thread and scope");
}

/// The project's recall set (tests/data/recall.jsonl: all five types,
/// every sensitivity, scoped and unscoped records, trust-restricted and
/// multi-type queries) through `loadtests recall`: text alone, and text
/// with the deterministic test embedder's vectors.
#[actix_web::test]
async fn the_project_recall_set_is_found_by_text_alone_and_with_vectors() {
    for test_embedder in [false, true] {
        let app = spawn_app().await;
        let result = loadtests::recall::run(loadtests::recall::RecallOptions {
            url: app.address.clone(),
            dataset: std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/data/recall.jsonl"),
            headers: Vec::new(),
            no_vectors: !test_embedder,
            test_embedder,
        })
        .await
        .unwrap();
        assert!(result["records"].as_u64().unwrap() >= 60, "{result}");
        assert!(result["queries"].as_u64().unwrap() >= 30, "{result}");
        assert!(
            result["recall_at_k"].as_f64().unwrap() >= 0.95,
            "{result:#}"
        );
        assert!(result["mrr_at_k"].as_f64().unwrap() >= 0.90, "{result:#}");
    }
}

#[actix_web::test]
async fn a_common_word_answers_its_newest_visible_matches() {
    let app = spawn_app().await;
    // A rare word, in the oldest record only.
    let rare = create_id_of(&app, "lantern wick trimmed at dawn").await;
    // 1,200 records with "lantern" (a common word: 1,000 matches or more),
    // written in four runs; on PostgreSQL each run's keys start further
    // on, so the newest matches lie in epochs far apart (and for a scoped
    // reader, in eras apart). Every fourth is
    // `high`, which the readers may not see; of the rest, a third are in
    // scope `project-x`, a third in `project-y`, a third unscoped.
    let scope_of = |n: usize| match n % 4 {
        0 => Some("project-x"),
        2 => Some("project-y"),
        _ => None,
    };
    // Every reader sees what is public; `project-x`'s reader sees the
    // unscoped records and those of its scope.
    let mut visible_to_all = Vec::new();
    let mut visible_to_x = Vec::new();
    for (run, first_key) in [100, 20_000, 200_000, 400_000].into_iter().enumerate() {
        if crate::helpers::postgres_admin_url().is_some() {
            app.sql_execute(&format!(
                "ALTER SEQUENCE records_key_seq RESTART WITH {first_key}"
            ));
        }
        for batch in 0..3 {
            let first = run * 300 + batch * 100;
            let items: Vec<Value> = (first..first + 100)
                .map(|n| {
                    let sensitivity = if n % 4 == 3 { "high" } else { "public" };
                    let mut item = json!({"kind": "event", "source": "agent", "event_kind": "note",
                                          "ref": format!("r{n}"), "sensitivity": sensitivity,
                                          "summary": format!("lantern number {n} checked")});
                    if let Some(scope) = scope_of(n) {
                        item["scope"] = json!(scope);
                    }
                    item
                })
                .collect();
            let (status, answer) = app.post("/v1/ingest/batch", &json!({"items": items})).await;
            assert_eq!(status, StatusCode::CREATED, "{answer}");
            for (record, n) in answer["records"].as_array().unwrap().iter().zip(first..) {
                let id = record["id"].as_str().unwrap().to_string();
                if n % 4 != 3 {
                    visible_to_all.push(id.clone());
                }
                if n % 4 != 3 && scope_of(n) != Some("project-y") {
                    visible_to_x.push(id);
                }
            }
        }
    }

    for (scopes, visible) in [
        (&[][..], &visible_to_all),
        (&["project-x"][..], &visible_to_x),
    ] {
        // Its newest 300 visible matches: as many as the limit asks (more
        // than the 250 a query of common words reads otherwise).
        let answer = retrieve(
            &app,
            json!({"trust": trust("public", scopes), "task_descriptor": "lantern", "limit": 300}),
        )
        .await;
        let mut got = ids(&answer);
        got.sort();
        let mut newest: Vec<String> = visible.iter().rev().take(300).cloned().collect();
        newest.sort();
        assert_eq!(got, newest, "scopes {scopes:?}");

        // With the rare word, its match comes first, and the common word's
        // newest visible matches fill the rest.
        let answer = retrieve(
            &app,
            json!({"trust": trust("public", scopes), "task_descriptor": "lantern wick",
                   "limit": 20}),
        )
        .await;
        let got = ids(&answer);
        assert_eq!(got.len(), 20, "{answer}");
        assert_eq!(got[0], rare);
        let newest: Vec<&String> = visible.iter().rev().take(250).collect();
        assert!(got[1..].iter().all(|id| newest.contains(&id)), "{answer}");
    }
}

/// Writes an unscoped public event with `summary`; answers its id.
async fn create_id_of(app: &TestApp, summary: &str) -> String {
    let (status, answer) = app
        .post(
            "/v1/ingest/event",
            &json!({"source": "agent", "event_kind": "note", "ref": "r", "sensitivity": "public",
                    "summary": summary}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    answer["record"]["id"].as_str().unwrap().to_string()
}

/// A record found by a rare word still gains what a common word of the
/// query adds: the common word's document frequency is kept by who may
/// see the records, so its matches need not all be read to weigh it.
#[actix_web::test]
async fn a_common_word_adds_its_weight_to_what_rarer_words_find() {
    if crate::helpers::sqlite_only("the counts of common words (not kept on PostgreSQL yet)") {
        return;
    }
    let app = spawn_app().await;
    // 5,000 records, 1,000 of them with "deploy": common (1,000 matches
    // or more), yet in only a fifth of the records, so it weighs.
    for batch in 0..50 {
        let items: Vec<Value> = (batch * 100..batch * 100 + 100)
            .map(|n| {
                let summary = if n % 5 == 0 {
                    format!("deploy {n}")
                } else {
                    format!("filler {n}")
                };
                json!({"kind": "event", "source": "agent", "event_kind": "note",
                       "ref": format!("r{n}"), "sensitivity": "public", "summary": summary})
            })
            .collect();
        let (status, answer) = app.post("/v1/ingest/batch", &json!({"items": items})).await;
        assert_eq!(status, StatusCode::CREATED, "{answer}");
    }
    let twice = create_id_of(&app, "zebra zebra").await;
    let both = create_id_of(&app, "deploy zebra").await;
    // BM25 (k1 0.3): "zebra" twice scores 1.13 times its weight, "zebra"
    // once and "deploy" 1 + 0.21 of it; without "deploy", the first won.
    // The first query finds "deploy" common; the writer counts it as soon
    // as it is idle, and from then on it weighs.
    let ask = || {
        retrieve(
            &app,
            json!({"trust": trust("public", &[]), "task_descriptor": "deploy zebra", "limit": 2}),
        )
    };
    let mut answer = ask().await;
    for _ in 0..100 {
        if ids(&answer) == [both.clone(), twice.clone()] {
            break;
        }
        actix_web::rt::time::sleep(std::time::Duration::from_millis(50)).await;
        answer = ask().await;
    }
    assert_eq!(ids(&answer), [both.clone(), twice.clone()], "{answer}");
    let scores = answer["scores"].as_array().unwrap();
    assert!(
        scores[1]["text"].as_f64().unwrap() < 0.95,
        "the common word weighs: {answer}"
    );
}
