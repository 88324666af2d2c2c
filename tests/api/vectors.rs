//! Vectors: `embedding` on everything that writes a record, ranking by
//! `query_embedding` alone and with text, the database's dimensions, and
//! the embedder against a fake embeddings endpoint that is slow, fails,
//! refuses and recovers.

use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix_web::{web, App, HttpResponse, HttpServer};
use awc::http::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{
    assert_error, create, ids, spawn_app, spawn_app_with, trust, Deadline, TestApp,
};

async fn retrieve(app: &TestApp, body: Value) -> Value {
    let (status, answer) = app.post("/v1/retrieve", &body).await;
    assert_eq!(status, StatusCode::OK, "{body} -> {answer}");
    answer
}

/// A retrieval by vector alone, everything visible.
async fn nearest(app: &TestApp, vector: Value) -> Value {
    retrieve(
        app,
        json!({"trust": trust("hyper", &[]), "query_embedding": vector}),
    )
    .await
}

fn fact(id: &str, object: &str, embedding: Value) -> Value {
    json!({"id": id, "type": "semantic", "sensitivity": "low", "embedding": embedding,
           "payload": {"kind": "semantic", "subject": "user", "predicate": "likes", "object": object}})
}

fn close_to(value: &Value, expected: f64) -> bool {
    (value.as_f64().unwrap_or(f64::NAN) - expected).abs() < 1e-5
}

#[actix_web::test]
async fn records_rank_by_vector_alone_and_blended_with_text() {
    let app = spawn_app().await;
    create(&app, fact("north", "tea", json!([1.0, 0.0, 0.0, 0.0]))).await;
    create(&app, fact("east", "green tea", json!([0.0, 1.0, 0.0, 0.0]))).await;
    create(
        &app,
        fact("north-east", "green tea", json!([0.9, 0.44, 0.0, 0.0])),
    )
    .await;
    create(&app, fact("south", "coffee", json!([-1.0, 0.0, 0.0, 0.0]))).await;
    // A record with no vector is not a candidate of a vector query.
    create(
        &app,
        json!({"id": "plain", "type": "semantic", "sensitivity": "low",
               "payload": {"kind": "semantic", "subject": "user", "predicate": "likes", "object": "green tea"}}),
    )
    .await;

    let answer = nearest(&app, json!([2.0, 0.0, 0.0, 0.0])).await;
    let found = ids(&answer);
    assert_eq!(found[..2], ["north", "north-east"]);
    // The two with no similarity tie; the newer ranks first.
    assert_eq!(found[2..], ["south", "east"]);
    let scores = answer["scores"].as_array().unwrap();
    assert!(close_to(&scores[0]["vector"], 1.0), "{answer}");
    let cosine = 0.9 / (0.9f64 * 0.9 + 0.44 * 0.44).sqrt();
    assert!(close_to(&scores[1]["vector"], cosine), "{answer}");
    // Orthogonal and opposite vectors have no similarity.
    assert!(close_to(&scores[2]["vector"], 0.0), "{answer}");
    assert!(close_to(&scores[3]["vector"], 0.0), "{answer}");
    assert!(scores[0]["text"].is_null());
    // score = (1·vector + 0.25·salience/max) / 1.25, salience 1 of max 1.
    assert!(
        close_to(&scores[0]["score"], (1.0 + 0.25) / 1.25),
        "{answer}"
    );

    // Text alone cannot tell the three "green tea" facts apart; the vector
    // picks the one that is also close to north.
    let answer = retrieve(
        &app,
        json!({"trust": trust("hyper", &[]), "task_descriptor": "green tea",
               "query_embedding": [1.0, 0.0, 0.0, 0.0]}),
    )
    .await;
    let found = ids(&answer);
    assert_eq!(found[0], "north-east", "{answer}");
    assert!(
        found.contains(&"plain".to_string()),
        "a text match without a vector stays: {answer}"
    );
    let first = &answer["scores"][0];
    assert!(
        close_to(&first["text"], 1.0) && close_to(&first["vector"], cosine),
        "{answer}"
    );
    let plain = &answer["scores"][found.iter().position(|id| id == "plain").unwrap()];
    assert!(close_to(&plain["vector"], 0.0), "{answer}");
    // score = (1·text + 1·vector + 0.25·salience) / 2.25.
    assert!(
        close_to(&first["score"], (1.0 + cosine + 0.25) / 2.25),
        "{answer}"
    );
}

#[actix_web::test]
async fn filters_and_status_narrow_a_vector_query() {
    let app = spawn_app().await;
    for (id, tag, by, vector) in [
        ("t1", "ops", "alice", json!([1.0, 0.0])),
        ("t2", "dev", "bob", json!([1.0, 0.1])),
        ("t3", "ops", "bob", json!([0.0, 1.0])),
    ] {
        let mut body = fact(id, "tea", vector);
        body["tags"] = json!([tag]);
        body["provenance"] = json!({"created_by": by});
        create(&app, body).await;
    }
    let query = |extra: Value| {
        let mut body = json!({"trust": trust("hyper", &[]), "query_embedding": [1.0, 0.0]});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        body
    };
    let cases = [
        (json!({}), vec!["t1", "t2", "t3"]),
        (json!({"tags": ["ops"]}), vec!["t1", "t3"]),
        (json!({"sources": ["bob"]}), vec!["t2", "t3"]),
        (json!({"subject": "user"}), vec!["t1", "t2", "t3"]),
        (json!({"tags": ["ops"], "sources": ["bob"]}), vec!["t3"]),
        (json!({"memory_types": ["episodic"]}), vec![]),
    ];
    for (extra, expected) in cases {
        let answer = retrieve(&app, query(extra.clone())).await;
        assert_eq!(ids(&answer), expected, "{extra}");
    }
    let (status, answer) = app
        .post(
            "/v1/revisions/retract",
            &json!({"id": "t1", "actor": "r", "rationale": "wrong"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(ids(&retrieve(&app, query(json!({}))).await), ["t2", "t3"]);
    let all = retrieve(&app, query(json!({"include_retracted": true}))).await;
    // Retracted at salience 0, t1 keeps its similarity but loses salience.
    assert_eq!(ids(&all), ["t2", "t1", "t3"], "{all}");
    assert!(close_to(&all["scores"][1]["vector"], 1.0), "{all}");
}

#[actix_web::test]
async fn every_way_of_writing_a_record_takes_an_embedding() {
    let app = spawn_app().await;
    let unit = |i: usize| {
        let mut v = vec![0.0; 16];
        v[i] = 1.0;
        json!(v)
    };
    let mut expected: Vec<(usize, String)> = Vec::new();
    let ingest = |path: &'static str, body: Value, i: usize| {
        let app = &app;
        async move {
            let (status, answer) = app.post(path, &body).await;
            assert!(status.is_success(), "{path}: {answer}");
            (i, answer["record"]["id"].as_str().unwrap().to_string())
        }
    };
    expected.push(
        ingest(
            "/v1/ingest/event",
            json!({"source": "a", "event_kind": "deploy", "ref": "r1", "embedding": unit(0)}),
            0,
        )
        .await,
    );
    expected.push(
        ingest(
            "/v1/ingest/tool-output",
            json!({"source": "a", "tool_name": "grep", "embedding": unit(1)}),
            1,
        )
        .await,
    );
    expected.push(
        ingest(
            "/v1/ingest/observation",
            json!({"source": "a", "subject": "s", "predicate": "p", "object": "o", "embedding": unit(2)}),
            2,
        )
        .await,
    );
    expected.push(
        ingest(
            "/v1/ingest/working-state",
            json!({"source": "a", "thread_id": "t", "state": "executing", "embedding": unit(3)}),
            3,
        )
        .await,
    );
    let (status, batch) = app
        .post(
            "/v1/ingest/batch",
            &json!({"items": [
                {"kind": "event", "source": "b", "event_kind": "k", "ref": "r", "embedding": unit(4)},
                {"kind": "observation", "source": "b", "subject": "x", "predicate": "y", "embedding": unit(5)}
            ]}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{batch}");
    for (i, record) in batch["records"].as_array().unwrap().iter().enumerate() {
        expected.push((4 + i, record["id"].as_str().unwrap().to_string()));
    }
    let record = create(
        &app,
        json!({"type": "competence", "sensitivity": "low", "embedding": unit(6),
               "payload": {"kind": "competence", "skill_name": "deploy"}}),
    )
    .await;
    expected.push((6, record["id"].as_str().unwrap().to_string()));

    // An outcome's vector replaces the episode's.
    let episode = expected[0].1.clone();
    let (status, answer) = app
        .post(
            "/v1/ingest/outcome",
            &json!({"source": "c", "target_record_id": episode, "outcome_status": "success", "embedding": unit(7)}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    expected[0].0 = 7;

    // The new records of supersede, fork and merge.
    let evidence = json!({"sources": [{"kind": "observation", "ref": "n", "timestamp": "2026-01-01T00:00:00Z"}]});
    let revised = |object: &str, i: usize| {
        json!({"type": "semantic", "sensitivity": "low", "embedding": unit(i), "provenance": evidence,
               "payload": {"kind": "semantic", "subject": "s", "predicate": "p", "object": object}})
    };
    let revise = |path: &'static str, body: Value| {
        let app = &app;
        async move {
            let (status, answer) = app.post(path, &body).await;
            assert_eq!(status, StatusCode::CREATED, "{path}: {answer}");
            answer["record"]["id"].as_str().unwrap().to_string()
        }
    };
    let observation = expected[2].1.clone();
    let fork = revise(
        "/v1/revisions/fork",
        json!({"source_id": observation, "forked_record": revised("fork", 8), "actor": "r", "rationale": "r"}),
    )
    .await;
    expected.push((8, fork.clone()));
    let superseding = revise(
        "/v1/revisions/supersede",
        json!({"old_id": fork, "new_record": revised("superseding", 9), "actor": "r", "rationale": "r"}),
    )
    .await;
    expected.push((9, superseding.clone()));
    let merged = revise(
        "/v1/revisions/merge",
        json!({"ids": [observation, superseding], "merged_record": revised("merged", 10), "actor": "r", "rationale": "r"}),
    )
    .await;
    expected.push((10, merged));

    for (i, id) in &expected {
        let answer = retrieve(
            &app,
            json!({"trust": trust("hyper", &[]), "query_embedding": unit(*i), "include_retracted": true, "limit": 1}),
        )
        .await;
        assert_eq!(
            ids(&answer),
            std::slice::from_ref(id),
            "dimension {i}: {answer}"
        );
        assert!(close_to(&answer["scores"][0]["vector"], 1.0), "{answer}");
    }
}

#[actix_web::test]
async fn a_vector_of_other_dimensions_is_refused_by_field_and_nothing_is_stored() {
    let app = spawn_app().await;
    // Before any vector is stored, a query vector of any length is fine.
    assert!(ids(&nearest(&app, json!([1.0, 2.0])).await).is_empty());
    create(&app, fact("first", "tea", json!([1.0, 0.0, 0.0]))).await;
    let before = app.all_records().await.len();

    let wrong = json!([1.0, 0.0]);
    assert_error(
        &app.post(
            "/v1/ingest/batch",
            &json!({"items": [
                {"kind": "observation", "source": "a", "subject": "s", "predicate": "p", "embedding": [0.0, 1.0, 0.0]},
                {"kind": "observation", "source": "a", "subject": "s", "predicate": "q", "embedding": wrong}
            ]}),
        )
        .await,
        StatusCode::CONFLICT,
        "failed_precondition",
        "items[1].embedding: has 2 dimensions",
    );
    assert_error(
        &app.post("/v1/records", &fact("second", "x", wrong.clone()))
            .await,
        StatusCode::CONFLICT,
        "failed_precondition",
        "embedding: has 2 dimensions",
    );
    let evidence = json!({"sources": [{"kind": "observation", "ref": "n", "timestamp": "2026-01-01T00:00:00Z"}]});
    let mut new_record = fact("third", "y", wrong.clone());
    new_record["provenance"] = evidence;
    new_record.as_object_mut().unwrap().remove("id");
    assert_error(
        &app.post(
            "/v1/revisions/supersede",
            &json!({"old_id": "first", "new_record": new_record, "actor": "r", "rationale": "r"}),
        )
        .await,
        StatusCode::CONFLICT,
        "failed_precondition",
        "new_record.embedding: has 2 dimensions",
    );
    assert_error(
        &app.post(
            "/v1/retrieve",
            &json!({"trust": trust("hyper", &[]), "query_embedding": wrong}),
        )
        .await,
        StatusCode::CONFLICT,
        "failed_precondition",
        "query_embedding: has 2 dimensions, but the vectors of this database have 3",
    );
    // Of other dimensions: a conflict with the database's vectors.
    assert_error(
        &app.post(
            "/v1/ingest/observation",
            &json!({"source": "a", "subject": "s", "predicate": "p", "embedding": wrong}),
        )
        .await,
        StatusCode::CONFLICT,
        "failed_precondition",
        "embedding: has 2 dimensions, but the vectors of this database have 3",
    );
    // Not vectors at all.
    for (embedding, needle) in [
        (
            json!([]),
            "embedding: an embedding needs at least one number",
        ),
        (
            json!([0.0, 0.0, 0.0]),
            "embedding: an embedding cannot be all zeros",
        ),
        (json!([1.0, 1e39, 0.0]), "embedding[1]: "),
        (json!([1.0, "x", 0.0]), "embedding"),
        (json!("1,2,3"), "embedding"),
    ] {
        assert_error(
            &app.post(
                "/v1/ingest/observation",
                &json!({"source": "a", "subject": "s", "predicate": "p", "embedding": embedding}),
            )
            .await,
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            needle,
        );
    }
    assert_eq!(app.all_records().await.len(), before, "nothing was stored");
    let answer = nearest(&app, json!([0.0, 0.0, 5.0])).await;
    assert_eq!(ids(&answer), ["first"]);
}

#[actix_web::test]
async fn configured_dimensions_hold_from_the_first_vector() {
    let app = spawn_app_with(|s| s.retrieval.embedding_dimensions = 3).await;
    assert_error(
        &app.post("/v1/records", &fact("a", "tea", json!([1.0, 0.0])))
            .await,
        StatusCode::CONFLICT,
        "failed_precondition",
        "embedding: has 2 dimensions, but the vectors of this database have 3",
    );
    assert_error(
        &app.post(
            "/v1/retrieve",
            &json!({"trust": trust("hyper", &[]), "query_embedding": [1.0]}),
        )
        .await,
        StatusCode::CONFLICT,
        "failed_precondition",
        "query_embedding",
    );
    create(&app, fact("b", "tea", json!([1.0, 0.0, 0.0]))).await;
}

#[actix_web::test]
async fn invisible_records_with_better_vectors_never_take_a_place() {
    let app = spawn_app().await;
    let mut items = Vec::new();
    for i in 0..200 {
        // Exactly the query's direction, but hyper or in another scope.
        let (sensitivity, scope) = if i % 2 == 0 {
            ("hyper", "team-a")
        } else {
            ("low", "team-b")
        };
        items.push(
            json!({"kind": "observation", "source": "s", "subject": format!("secret-{i}"),
                          "predicate": "p", "sensitivity": sensitivity, "scope": scope,
                          "embedding": [1.0, 0.0, 0.0]}),
        );
    }
    for i in 0..8 {
        items.push(
            json!({"kind": "observation", "source": "s", "subject": format!("open-{i}"),
                          "predicate": "p", "sensitivity": "low", "scope": "team-a",
                          "embedding": [0.2, 1.0, f64::from(i)]}),
        );
    }
    let (status, answer) = app.post("/v1/ingest/batch", &json!({"items": items})).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let answer = retrieve(
        &app,
        json!({"trust": trust("low", &["team-a"]), "query_embedding": [1.0, 0.0, 0.0], "limit": 5}),
    )
    .await;
    let records = answer["records"].as_array().unwrap();
    assert_eq!(records.len(), 5, "{answer}");
    for record in records {
        let subject = record["payload"]["subject"].as_str().unwrap();
        assert!(subject.starts_with("open-"), "{subject}");
    }
    // Best first: the one with the smallest third component.
    assert_eq!(records[0]["payload"]["subject"], "open-0");
}

/// What the fake endpoint does with the next requests.
const SERVE: u8 = 0;
const FAIL: u8 = 1;
const SLOW: u8 = 2;

/// A fake OpenAI-compatible embeddings endpoint: vectors from the
/// deterministic test embedder; failing (503), slow (longer than engram's
/// timeout) or serving as the test says. A batch with a text containing
/// "unembeddable" is refused (400), as endpoints refuse bad input.
struct FakeEndpoint {
    url: String,
    mode: Arc<AtomicU8>,
    requests: Arc<AtomicU64>,
    server: actix_web::dev::ServerHandle,
}

impl FakeEndpoint {
    fn start() -> FakeEndpoint {
        let mode = Arc::new(AtomicU8::new(SERVE));
        let requests = Arc::new(AtomicU64::new(0));
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1/embeddings", listener.local_addr().unwrap());
        let (state_mode, state_requests) = (mode.clone(), requests.clone());
        let server = HttpServer::new(move || {
            let mode = state_mode.clone();
            let requests = state_requests.clone();
            App::new().route(
                "/v1/embeddings",
                web::post().to(move |body: web::Json<Value>| {
                    let mode = mode.load(Ordering::SeqCst);
                    requests.fetch_add(1, Ordering::SeqCst);
                    async move {
                        match mode {
                            FAIL => return HttpResponse::ServiceUnavailable().body("overloaded"),
                            SLOW => actix_web::rt::time::sleep(Duration::from_secs(2)).await,
                            _ => {}
                        }
                        let texts: Vec<String> = body["input"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|t| t.as_str().unwrap().to_string())
                            .collect();
                        if texts.iter().any(|t| t.contains("unembeddable")) {
                            return HttpResponse::BadRequest().body("cannot embed that");
                        }
                        let data: Vec<Value> = texts
                            .iter()
                            .enumerate()
                            .map(|(i, t)| {
                                json!({"object": "embedding", "index": i,
                                "embedding": loadtests::embed::embed(t, 32)})
                            })
                            .collect();
                        HttpResponse::Ok().json(json!({"object": "list", "data": data}))
                    }
                }),
            )
        })
        .workers(1)
        .listen(listener)
        .unwrap()
        .run();
        let handle = server.handle();
        actix_web::rt::spawn(server);
        FakeEndpoint {
            url,
            mode,
            requests,
            server: handle,
        }
    }

    fn set(&self, mode: u8) {
        self.mode.store(mode, Ordering::SeqCst);
    }

    fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }
}

async fn spawn_embedding_app(endpoint: &FakeEndpoint) -> TestApp {
    let url = endpoint.url.clone();
    spawn_app_with(move |s| {
        s.embedding = Some(engram::config::EmbeddingSettings {
            endpoint: url,
            model: "test-embedder".into(),
            api_key_env: None,
            dimensions: Some(32),
            batch_size: 4,
            timeout_ms: 300,
            backoff_ms: 20,
            max_backoff_ms: 100,
            poll_ms: 20,
        });
    })
    .await
}

/// The vector signal of record `id` for a query of `text`'s vector; 0
/// while it has no vector (or is not found).
async fn similarity(app: &TestApp, id: &str, text: &str) -> f64 {
    let answer = retrieve(
        app,
        json!({"trust": trust("hyper", &[]), "task_descriptor": text,
               "query_embedding": loadtests::embed::embed(text, 32)}),
    )
    .await;
    let position = ids(&answer).iter().position(|found| found == id);
    position.map_or(0.0, |p| answer["scores"][p]["vector"].as_f64().unwrap())
}

async fn observe(app: &TestApp, subject: &str, object: &str) -> String {
    let (status, answer) = app
        .post(
            "/v1/ingest/observation",
            &json!({"source": "agent", "subject": subject, "predicate": "uses", "object": object}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    answer["record"]["id"].as_str().unwrap().to_string()
}

async fn wait_until_embedded(app: &TestApp, id: &str, text: &str) {
    let deadline = Deadline::after(20, "the embedder to store a vector");
    while similarity(app, id, text).await < 0.99 {
        deadline.wait().await;
    }
}

#[actix_web::test]
async fn the_embedder_makes_vectors_in_the_background_through_failures_and_slowness() {
    let endpoint = FakeEndpoint::start();
    let app = spawn_embedding_app(&endpoint).await;

    // Serving: a record is found by text at once and by vector soon after.
    let first = observe(&app, "billing service", "postgres 15").await;
    wait_until_embedded(&app, &first, "billing service uses postgres 15").await;

    // Failing: the record is still found by text, has no vector, and the
    // embedder keeps asking.
    endpoint.set(FAIL);
    let asked = endpoint.requests();
    let second = observe(&app, "search service", "elasticsearch").await;
    let text = "search service uses elasticsearch";
    let deadline = Deadline::after(20, "the embedder to retry");
    while endpoint.requests() < asked + 3 {
        deadline.wait().await;
    }
    assert_eq!(similarity(&app, &second, text).await, 0.0);
    let found = ids(&retrieve(
        &app,
        json!({"trust": trust("hyper", &[]), "task_descriptor": "elasticsearch"}),
    )
    .await);
    assert_eq!(found, std::slice::from_ref(&second));

    // Slow: each request outlives the timeout; still no vector.
    endpoint.set(SLOW);
    let asked = endpoint.requests();
    let deadline = Deadline::after(20, "a slow request");
    while endpoint.requests() < asked + 2 {
        deadline.wait().await;
    }
    assert_eq!(similarity(&app, &second, text).await, 0.0);

    // Recovered: the vector arrives.
    endpoint.set(SERVE);
    wait_until_embedded(&app, &second, text).await;

    let (_, metrics) = app.get("/metrics").await;
    let metrics = metrics.as_str().unwrap();
    let retried = metrics
        .lines()
        .find_map(|l| l.strip_prefix("engram_embedding_requests_retried_total "))
        .unwrap();
    assert!(retried.parse::<u64>().unwrap() >= 3, "{metrics}");
    endpoint.server.stop(false).await;
}

#[actix_web::test]
async fn a_text_the_endpoint_refuses_leaves_only_its_record_without_a_vector() {
    let endpoint = FakeEndpoint::start();
    // Blocked while the batch is written, so the texts go in one request.
    endpoint.set(FAIL);
    let app = spawn_embedding_app(&endpoint).await;
    let good = observe(&app, "payments", "stripe").await;
    let bad = observe(&app, "unembeddable", "thing").await;
    let other = observe(&app, "queue", "rabbitmq").await;
    endpoint.set(SERVE);
    wait_until_embedded(&app, &good, "payments uses stripe").await;
    wait_until_embedded(&app, &other, "queue uses rabbitmq").await;
    assert_eq!(similarity(&app, &bad, "unembeddable uses thing").await, 0.0);
    // A client's vector is never replaced by the embedder's.
    let (status, answer) = app
        .post(
            "/v1/ingest/observation",
            &json!({"source": "a", "subject": "cache", "predicate": "uses", "object": "redis",
                    "embedding": loadtests::embed::embed("something else entirely", 32)}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let client = answer["record"]["id"].as_str().unwrap().to_string();
    let marker = observe(&app, "marker", "last").await;
    wait_until_embedded(&app, &marker, "marker uses last").await;
    assert!(similarity(&app, &client, "cache uses redis").await < 0.99);
    endpoint.server.stop(false).await;
}
