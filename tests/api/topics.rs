//! Topics over HTTP: placements, views now and as of earlier instants,
//! field histories, edges, and fields as the semantic records they are.

use awc::http::StatusCode;
use chrono::Duration;
use serde_json::{json, Value};

use crate::helpers::{
    assert_error, relations, spawn_app, spawn_app_in, spawn_app_with, trust, Deadline, TestApp,
};

fn hyper() -> Value {
    trust("hyper", &[])
}

async fn ingest(app: &TestApp, mut body: Value) -> Value {
    if body.get("trust").is_none() {
        body["trust"] = hyper();
    }
    let (status, answer) = app.post("/v1/topics/ingest", &body).await;
    assert_eq!(status, StatusCode::CREATED, "{body}: {answer}");
    answer
}

/// Ingests `body` and answers the id of the topic it went to.
async fn topic_id(app: &TestApp, body: Value) -> String {
    ingest(app, body).await["topic_id"]
        .as_str()
        .expect("a topic id")
        .to_string()
}

/// The versions of field `name` of topic `id`, oldest first.
async fn history(app: &TestApp, id: &str, name: &str) -> Vec<Value> {
    let (status, body) = app
        .post(
            &format!("/v1/topics/{id}/fields/{name}/history"),
            &json!({"trust": hyper()}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["versions"].as_array().expect("versions").clone()
}

/// The record holding field `i` of an ingest's answer.
fn applied_record(made: &Value, i: usize) -> String {
    made["applied"][i]["record_id"]
        .as_str()
        .expect("a record id")
        .to_string()
}

/// The values of `versions`, as strings.
fn values_of(versions: &[Value]) -> Vec<&str> {
    versions
        .iter()
        .map(|v| v["value"].as_str().unwrap())
        .collect()
}

async fn view(app: &TestApp, id: &str, as_of: Option<&str>) -> Value {
    let mut body = json!({"trust": hyper()});
    if let Some(at) = as_of {
        body["as_of"] = json!(at);
    }
    let (status, answer) = app.post(&format!("/v1/topics/{id}/view"), &body).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    answer["topic"].clone()
}

fn ops(answer: &Value) -> Vec<(String, String)> {
    answer["applied"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["field"].as_str().unwrap().to_string(),
                a["op"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn topic_archived(app: &TestApp, id: &str) -> bool {
    app.sql_number(
        "SELECT CASE WHEN archived THEN 1 ELSE 0 END FROM topics WHERE id = ?1",
        &[id],
    ) == 1
}

fn topic_count(app: &TestApp) -> i64 {
    app.sql_number("SELECT COUNT(*) FROM topics", &[])
}

#[actix_web::test]
async fn each_placement_writes_what_it_says() {
    let app = spawn_app().await;
    let go = ingest(
        &app,
        json!({"placement": "new_topic", "title": "Go toolchain", "summary": "compiler and tools",
               "kind": "software", "source": "agent",
               "fields": [{"name": "version", "value": "1.21"}, {"name": "owner", "value": {"team": "lang"}}]}),
    )
    .await;
    assert_eq!(go["placement"], "new_topic");
    assert_eq!(
        ops(&go),
        [
            ("version".into(), "created".into()),
            ("owner".into(), "created".into())
        ]
    );
    let go_id = go["topic_id"].as_str().unwrap().to_string();

    let rust = ingest(
        &app,
        json!({"placement": "new_topic", "title": "Rust toolchain", "source": "agent",
               "edges": [{"to_topic_id": go_id, "kind": "related"}]}),
    )
    .await;
    assert_eq!(rust["edges_added"], 1);
    let rust_id = rust["topic_id"].as_str().unwrap().to_string();

    let extended = ingest(
        &app,
        json!({"placement": "extend_topic", "topic_id": go_id, "source": "agent",
               "fields": [{"name": "version", "value": "1.21"}, {"name": "owner", "value": {"team": "infra"}},
                          {"name": "license", "value": "BSD"}]}),
    )
    .await;
    assert_eq!(extended["placement"], "extend_topic");
    assert_eq!(
        ops(&extended),
        [
            ("version".into(), "unchanged".into()),
            ("owner".into(), "versioned".into()),
            ("license".into(), "created".into())
        ]
    );

    let versioned = ingest(
        &app,
        json!({"placement": "version_field", "topic_id": go_id, "source": "release-bot",
               "fields": [{"name": "version", "value": "1.22", "why_changed": "Go 1.22 released"}]}),
    )
    .await;
    assert_eq!(ops(&versioned), [("version".into(), "versioned".into())]);

    let topic = view(&app, &go_id, None).await;
    assert_eq!(topic["title"], "Go toolchain");
    assert_eq!(topic["kind"], "software");
    assert_eq!(topic["fields"]["version"]["value"], "1.22");
    assert_eq!(topic["fields"]["owner"]["value"], json!({"team": "infra"}));
    assert_eq!(topic["fields"]["license"]["value"], "BSD");
    let edges = topic["edges"].as_array().unwrap();
    assert_eq!(edges.len(), 1, "the edge shows from both ends");
    assert_eq!(edges[0]["from_topic_id"], rust_id.as_str());
    assert_eq!(edges[0]["kind"], "related");

    // A field's versions are semantic records with their supersession chain.
    let record_id = topic["fields"]["version"]["record_id"].as_str().unwrap();
    let record = app.get_record(record_id).await;
    assert_eq!(record["type"], "semantic");
    assert_eq!(record["payload"]["subject"], go_id.as_str());
    assert_eq!(record["payload"]["predicate"], "version");
    assert_eq!(record["payload"]["object"], "1.22");
    assert_eq!(app.history_ids(record_id).await.len(), 2);
    let (_, found) = app
        .post(
            "/v1/retrieve",
            &json!({"trust": hyper(), "memory_types": ["semantic"], "task_descriptor": "BSD"}),
        )
        .await;
    assert!(
        found["records"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["payload"]["predicate"] == "license"),
        "{found}"
    );
}

#[actix_web::test]
async fn bad_ingests_are_refused_and_nothing_is_written() {
    let app = spawn_app().await;
    let go = ingest(
        &app,
        json!({"title": "Go", "source": "a", "fields": [{"name": "v", "value": 1}]}),
    )
    .await;
    let go_id = go["topic_id"].as_str().unwrap();
    let before = topic_count(&app);
    for (body, status, code, needle) in [
        (
            json!({"placement": "merge", "title": "x", "source": "a"}),
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            "placement",
        ),
        (
            json!({"placement": "extend_topic", "source": "a"}),
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            "topic_id",
        ),
        (
            json!({"placement": "version_field", "source": "a"}),
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            "topic_id",
        ),
        (
            json!({"placement": "version_field", "topic_id": go_id, "source": "a",
                   "fields": [{"name": "v", "value": 2}, {"name": "w", "value": 3}]}),
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            "fields: version_field takes exactly one field",
        ),
        (
            json!({"placement": "version_field", "topic_id": go_id, "source": "a", "fields": [{"name": "nope", "value": 2}]}),
            StatusCode::CONFLICT,
            "failed_precondition",
            "fields[0].name",
        ),
        (
            json!({"placement": "extend_topic", "topic_id": "missing", "source": "a"}),
            StatusCode::NOT_FOUND,
            "not_found",
            "topic_id: topic not found",
        ),
        (
            json!({"title": "New", "source": "a", "fields": [{"name": "v", "value": 1}],
                   "edges": [{"to_topic_id": "missing", "kind": "related"}]}),
            StatusCode::NOT_FOUND,
            "not_found",
            "edges[0].to_topic_id: topic not found",
        ),
        (
            json!({"title": "x"}),
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            "source",
        ),
        (
            json!({"placement": "new_topic", "source": "a"}),
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            "title",
        ),
    ] {
        let mut body = body;
        body["trust"] = hyper();
        let answer = app.post("/v1/topics/ingest", &body).await;
        assert_error(&answer, status, code, needle);
    }
    assert_eq!(topic_count(&app), before, "nothing was written");
    let topic = view(&app, go_id, None).await;
    assert_eq!(topic["fields"]["v"]["value"], 1);
}

#[actix_web::test]
async fn auto_places_by_title_then_by_text_within_scope_and_trust() {
    let app = spawn_app().await;
    let first = ingest(
        &app,
        json!({"title": "Payment service", "summary": "charges cards for orders", "scope": "a",
               "source": "agent", "fields": [{"name": "owner", "value": "team-pay"}]}),
    )
    .await;
    assert_eq!(first["placement"], "new_topic");
    let id = first["topic_id"].as_str().unwrap();

    // Same title, other case and spacing, same scope: extended.
    let same = ingest(
        &app,
        json!({"title": "payment   SERVICE", "scope": "a", "source": "agent",
               "fields": [{"name": "owner", "value": "team-pay"}, {"name": "oncall", "value": "ann"}]}),
    )
    .await;
    assert_eq!(
        (
            same["topic_id"].as_str().unwrap(),
            same["placement"].as_str().unwrap()
        ),
        (id, "extend_topic")
    );
    assert_eq!(
        ops(&same),
        [
            ("owner".into(), "unchanged".into()),
            ("oncall".into(), "created".into())
        ]
    );

    // Similar text, same scope: extended too.
    let similar = ingest(
        &app,
        json!({"title": "Payment service API", "summary": "charges cards for orders", "scope": "a",
               "source": "agent", "fields": [{"name": "owner", "value": "team-billing"}]}),
    )
    .await;
    assert_eq!(similar["topic_id"], id);
    assert_eq!(ops(&similar), [("owner".into(), "versioned".into())]);

    // Another scope: a topic of its own.
    let other_scope = ingest(
        &app,
        json!({"title": "Payment service", "scope": "b", "source": "agent"}),
    )
    .await;
    assert_eq!(other_scope["placement"], "new_topic");
    assert_ne!(other_scope["topic_id"], id);

    // A topic the caller may not see is never attached to.
    ingest(
        &app,
        json!({"title": "Secret plan", "sensitivity": "hyper", "source": "agent"}),
    )
    .await;
    let low = ingest(
        &app,
        json!({"title": "Secret plan", "source": "agent", "trust": trust("low", &[])}),
    )
    .await;
    assert_eq!(low["placement"], "new_topic");
    assert_eq!(topic_count(&app), 4);

    let suggested = ingest(
        &app,
        json!({"placement": "new_topic", "title": "Payment gateway", "summary": "cards", "scope": "a",
               "source": "agent", "suggest_similar": true}),
    )
    .await;
    let mut similar: Vec<&str> = suggested["similar_topic_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    similar.sort();
    let mut expected = vec![id, other_scope["topic_id"].as_str().unwrap()];
    expected.sort();
    assert_eq!(
        similar, expected,
        "visible topics with words in common, any scope"
    );
}

#[actix_web::test]
async fn views_as_of_earlier_instants_and_histories_in_order() {
    let app = spawn_app_with(|s| s.topics.max_field_history = 3).await;
    let start = app.clock.now();
    let created = ingest(
        &app,
        json!({"title": "Build", "source": "ci", "fields": [{"name": "status", "value": "v0"}]}),
    )
    .await;
    let id = created["topic_id"].as_str().unwrap().to_string();
    let other = ingest(&app, json!({"title": "Deploy", "source": "ci"})).await;
    let other_id = other["topic_id"].as_str().unwrap().to_string();
    let mut instants = vec![start];
    for i in 1..=4 {
        app.clock.advance(Duration::minutes(10));
        instants.push(app.clock.now());
        ingest(
            &app,
            json!({"placement": "version_field", "topic_id": id, "source": "ci",
                   "fields": [{"name": "status", "value": format!("v{i}"), "why_changed": format!("run {i}")}]}),
        )
        .await;
        if i == 2 {
            let (status, body) = app
                .post(
                    &format!("/v1/topics/{id}/edges"),
                    &json!({"to_topic_id": other_id, "kind": "depends_on", "trust": hyper()}),
                )
                .await;
            assert_eq!(status, StatusCode::CREATED, "{body}");
            // No topic links to itself, by route or by ingest.
            let (status, body) = app
                .post(
                    &format!("/v1/topics/{id}/edges"),
                    &json!({"to_topic_id": id, "kind": "depends_on", "trust": hyper()}),
                )
                .await;
            assert_error(
                &(status, body),
                StatusCode::BAD_REQUEST,
                "invalid_argument",
                "to_topic_id: a topic cannot have an edge to itself",
            );
            let (status, body) = app
                .post(
                    "/v1/topics/ingest",
                    &json!({"placement": "extend_topic", "topic_id": id, "source": "ci",
                            "edges": [{"to_topic_id": id, "kind": "depends_on"}], "trust": hyper()}),
                )
                .await;
            assert_error(
                &(status, body),
                StatusCode::BAD_REQUEST,
                "invalid_argument",
                "edges[0].to_topic_id: a topic cannot have an edge to itself",
            );
        }
        if i == 3 {
            let body = json!({"to_topic_id": other_id, "kind": "depends_on", "trust": hyper()});
            let (status, answer, _) = app
                .send(
                    "DELETE",
                    &format!("/v1/topics/{id}/edges"),
                    Some(&body),
                    None,
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{answer}");
            let (status, _, _) = app
                .send(
                    "DELETE",
                    &format!("/v1/topics/{id}/edges"),
                    Some(&body),
                    None,
                )
                .await;
            assert_eq!(status, StatusCode::NOT_FOUND, "no edge stands any more");
        }
    }
    let rfc =
        |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    for (i, at) in instants.iter().enumerate() {
        let topic = view(&app, &id, Some(&rfc(*at + Duration::minutes(1)))).await;
        // The cap of three took the two oldest versions out of the history.
        let expected = if i >= 2 {
            json!(format!("v{i}"))
        } else {
            Value::Null
        };
        assert_eq!(topic["fields"]["status"]["value"], expected, "as of {at}");
        let edges = topic["edges"].as_array().unwrap().len();
        assert_eq!(edges, usize::from(i == 2), "edges as of {at}");
    }

    // Before the topic was made it did not stand: no view of it then.
    let before = app
        .post(
            &format!("/v1/topics/{id}/view"),
            &json!({"trust": hyper(), "as_of": rfc(start - Duration::minutes(1))}),
        )
        .await;
    assert_error(
        &before,
        StatusCode::NOT_FOUND,
        "not_found",
        "as_of: the topic was made later",
    );

    let versions = history(&app, &id, "status").await;
    assert_eq!(
        values_of(&versions),
        ["v2", "v3", "v4"],
        "the newest three, oldest first"
    );
    assert_eq!(versions[0]["why_changed"], "run 2");
    assert_eq!(versions[0]["valid_to"], versions[1]["valid_from"]);
    assert_eq!(versions[2]["valid_to"], Value::Null);
    assert_eq!(versions[2]["source"], "ci");
    let missing = app
        .post(
            &format!("/v1/topics/{id}/fields/nothing/history"),
            &json!({"trust": hyper()}),
        )
        .await;
    assert_error(&missing, StatusCode::NOT_FOUND, "not_found", "nothing");
}

#[actix_web::test]
async fn topics_the_caller_may_not_see_answer_as_missing_ones() {
    let app = spawn_app().await;
    let hidden = ingest(
        &app,
        json!({"title": "Vault", "sensitivity": "hyper", "scope": "b", "source": "a"}),
    )
    .await;
    let id = hidden["topic_id"].as_str().unwrap();
    let low = trust("low", &["a"]);
    for path in [
        format!("/v1/topics/{id}/view"),
        format!("/v1/topics/{id}/fields/x/history"),
        format!("/v1/topics/{id}/archive"),
    ] {
        let answer = app.post(&path, &json!({"trust": low})).await;
        assert_error(
            &answer,
            StatusCode::NOT_FOUND,
            "not_found",
            "topic not found",
        );
        assert!(!answer.1.to_string().contains(id));
    }
    let mine = ingest(
        &app,
        json!({"title": "Mine", "scope": "a", "source": "a", "trust": low}),
    )
    .await;
    let mine_id = mine["topic_id"].as_str().unwrap();
    let answer = app
        .post(
            &format!("/v1/topics/{mine_id}/edges"),
            &json!({"to_topic_id": id, "kind": "related", "trust": low}),
        )
        .await;
    assert_error(
        &answer,
        StatusCode::NOT_FOUND,
        "not_found",
        "to_topic_id: topic not found",
    );
    let archived = app
        .post(
            &format!("/v1/topics/{mine_id}/archive"),
            &json!({"trust": low}),
        )
        .await;
    assert_eq!(archived.0, StatusCode::OK, "{}", archived.1);
    assert_eq!(archived.1["topic"]["archived"], true);
}

#[actix_web::test]
async fn queries_rank_by_text_and_walk_edges_only_through_visible_topics() {
    let app = spawn_app().await;
    let mut ids = Vec::new();
    // a -> b -> hidden -> c, and a -> d -> e -> f: a chain of three hops
    // around an invisible middle.
    for (title, sensitivity) in [
        ("alpha gateway", "low"),
        ("bravo ledger", "low"),
        ("hidden vault", "hyper"),
        ("charlie cache", "low"),
        ("delta queue", "low"),
        ("echo worker", "low"),
        ("foxtrot store", "low"),
    ] {
        let answer = ingest(
            &app,
            json!({"placement": "new_topic", "title": title, "kind": "service",
                   "sensitivity": sensitivity, "source": "a",
                   "fields": [{"name": "owner", "value": format!("{title} team")}]}),
        )
        .await;
        ids.push(answer["topic_id"].as_str().unwrap().to_string());
    }
    for (from, to) in [(0, 1), (1, 2), (2, 3), (0, 4), (4, 5), (5, 6)] {
        let (status, body) = app
            .post(
                &format!("/v1/topics/{}/edges", ids[from]),
                &json!({"to_topic_id": ids[to], "kind": "depends_on", "trust": hyper()}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let query = |body: Value| {
        let app = &app;
        async move {
            let (status, answer) = app.post("/v1/topics/query", &body).await;
            assert_eq!(status, StatusCode::OK, "{body}: {answer}");
            answer["topics"].as_array().unwrap().clone()
        }
    };
    let low = trust("low", &[]);
    let found = query(json!({"trust": low, "text": "alpha gateway", "hops": 3})).await;
    assert_eq!(found[0]["topic"]["id"], ids[0].as_str());
    assert!(found[0]["score"].as_f64().unwrap() > 0.0);
    let reached: Vec<(String, u64)> = found[0]["neighbors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["topic_id"].as_str().unwrap().to_string(),
                n["hop"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(reached.contains(&(ids[1].clone(), 1)));
    assert!(reached.contains(&(ids[4].clone(), 1)));
    assert!(reached.contains(&(ids[5].clone(), 2)));
    assert!(reached.contains(&(ids[6].clone(), 3)));
    assert!(
        !reached.iter().any(|(id, _)| *id == ids[2] || *id == ids[3]),
        "the hidden topic is neither shown nor passed through: {reached:?}"
    );
    for hops in 1..=3u64 {
        let found = query(json!({"trust": low, "text": "alpha gateway", "hops": hops})).await;
        let deepest = found[0]["neighbors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["hop"].as_u64().unwrap())
            .max();
        assert_eq!(deepest, Some(hops));
    }
    let out = &found[0]["neighbors"][0];
    assert_eq!(out["direction"], "out");
    assert_eq!(out["kind"], "depends_on");
    let from_b = query(json!({"trust": low, "text": "bravo ledger", "hops": 1})).await;
    assert_eq!(from_b[0]["neighbors"][0]["direction"], "in");

    // Field values are searched too; the hidden topic is never found.
    let found = query(json!({"trust": low, "text": "charlie team"})).await;
    assert_eq!(found[0]["topic"]["id"], ids[3].as_str());
    assert!(query(json!({"trust": low, "text": "hidden vault"}))
        .await
        .is_empty());
    // Without text: the most recently changed; with history when asked.
    let found = query(json!({"trust": low, "limit": 2, "include_history": true, "hops": 0})).await;
    assert_eq!(found.len(), 2);
    assert_eq!(found[0]["history"]["owner"].as_array().unwrap().len(), 1);
    for (body, field) in [
        (json!({"trust": low, "hops": 4}), "hops"),
        (json!({"trust": low, "limit": 1000}), "limit"),
        (json!({"hops": 1}), "trust"),
    ] {
        let answer = app.post("/v1/topics/query", &body).await;
        assert_error(&answer, StatusCode::BAD_REQUEST, "invalid_argument", field);
    }
}

#[actix_web::test]
async fn graph_retrieval_walks_relations_and_topic_links_within_its_limits() {
    let app = spawn_app().await;
    let service = ingest(
        &app,
        json!({"placement": "new_topic", "title": "Orders", "source": "a",
               "fields": [{"name": "store", "value": "postgres zanzibar"}, {"name": "owner", "value": "team-o"}]}),
    )
    .await;
    let service_id = service["topic_id"].as_str().unwrap().to_string();
    let queue = ingest(
        &app,
        json!({"placement": "new_topic", "title": "Queue", "source": "a",
               "fields": [{"name": "broker", "value": "kafka"}],
               "edges": []}),
    )
    .await;
    let queue_id = queue["topic_id"].as_str().unwrap().to_string();
    let secret = ingest(
        &app,
        json!({"placement": "new_topic", "title": "Secret", "source": "a", "sensitivity": "hyper",
               "fields": [{"name": "key", "value": "hidden"}]}),
    )
    .await;
    let secret_id = secret["topic_id"].as_str().unwrap().to_string();
    for to in [&queue_id, &secret_id] {
        let (status, body) = app
            .post(
                &format!("/v1/topics/{service_id}/edges"),
                &json!({"to_topic_id": to, "kind": "depends_on", "trust": hyper()}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    // A version chain: the root's record supersedes the first value.
    ingest(
        &app,
        json!({"placement": "version_field", "topic_id": service_id, "source": "a",
               "fields": [{"name": "store", "value": "postgres zanzibar 16"}]}),
    )
    .await;

    let graph = |body: Value| {
        let app = &app;
        async move {
            let (status, answer) = app.post("/v1/retrieve/graph", &body).await;
            (status, answer)
        }
    };
    let low = trust("low", &[]);
    let (status, answer) = graph(json!({"trust": low, "task_descriptor": "zanzibar",
                                        "memory_types": ["semantic"], "root_limit": 1}))
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let nodes = answer["nodes"].as_array().unwrap();
    assert_eq!(nodes[0]["root"], true);
    assert_eq!(
        nodes[0]["record"]["payload"]["object"],
        "postgres zanzibar 16"
    );
    let objects: Vec<&Value> = nodes
        .iter()
        .map(|n| &n["record"]["payload"]["object"])
        .collect();
    assert!(
        objects.contains(&&json!("postgres zanzibar")),
        "the superseded version: {objects:?}"
    );
    assert!(
        objects.contains(&&json!("team-o")),
        "the same topic: {objects:?}"
    );
    assert!(
        objects.contains(&&json!("kafka")),
        "a topic it depends on: {objects:?}"
    );
    assert!(
        !answer.to_string().contains("hidden"),
        "never to an invisible record"
    );
    assert!(nodes
        .iter()
        .skip(1)
        .all(|n| n["root"] == false && n["hop"] == 1));
    let kinds: Vec<&str> = answer["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"same_topic") && kinds.contains(&"depends_on"),
        "{kinds:?}"
    );
    assert!(kinds.iter().any(|k| k.contains("supersede")), "{kinds:?}");

    let (_, only_roots) = graph(json!({"trust": low, "task_descriptor": "zanzibar",
                                      "root_limit": 1, "max_hops": 0}))
    .await;
    assert_eq!(only_roots["nodes"].as_array().unwrap().len(), 1);
    assert_eq!(only_roots["edges"], json!([]));
    let (_, small) = graph(
        json!({"trust": low, "task_descriptor": "zanzibar", "root_limit": 1,
                                "node_limit": 2, "edge_limit": 1}),
    )
    .await;
    assert_eq!(small["nodes"].as_array().unwrap().len(), 2);
    assert_eq!(small["edges"].as_array().unwrap().len(), 1);
    for (body, field) in [
        (json!({"trust": low, "max_hops": 4}), "max_hops"),
        (json!({"trust": low, "node_limit": 0}), "node_limit"),
        (json!({"trust": low, "root_limit": 0}), "root_limit"),
        (json!({}), "trust"),
    ] {
        let answer = graph(body).await;
        assert_error(&answer, StatusCode::BAD_REQUEST, "invalid_argument", field);
    }
}

/// Views topic `id` (without reinforcing it: the read is straight from the
/// database) until `done` holds of its row.
async fn wait_for_topic(app: &TestApp, id: &str, what: &'static str, done: impl Fn(bool) -> bool) {
    let deadline = Deadline::after(10, what);
    loop {
        let archived = topic_archived(app, id);
        if done(archived) {
            return;
        }
        deadline.wait().await;
    }
}

fn field_values(app_view: &Value, name: &str) -> Value {
    app_view["fields"][name]["value"].clone()
}

#[actix_web::test]
async fn duplicate_topics_are_merged_in_the_background_with_their_histories_and_edges() {
    let app = spawn_app().await;
    let other = |title: &str| json!({"placement": "new_topic", "title": title, "source": "agent"});
    let upstream = topic_id(&app, other("Upstream")).await;
    let client = topic_id(&app, other("Client")).await;
    // The same title in another scope, and at another sensitivity: not
    // duplicates, since other grants see them.
    let scoped = topic_id(&app, json!({"placement": "new_topic", "title": "Build server", "scope": "ops", "source": "agent"})).await;
    let secret = topic_id(&app, json!({"placement": "new_topic", "title": "Build server", "sensitivity": "high", "source": "agent"})).await;

    let first = topic_id(
        &app,
        json!({"placement": "new_topic", "title": "Build server", "source": "ann",
               "fields": [{"name": "status", "value": "red"}, {"name": "owner", "value": "ann"}],
               "edges": [{"to_topic_id": upstream, "kind": "depends_on"}]}),
    )
    .await;
    app.clock.advance(Duration::seconds(60));
    let second = topic_id(
        &app,
        json!({"placement": "new_topic", "title": "build   SERVER", "summary": "the CI box",
               "source": "bob", "tags": ["ci"],
               "fields": [{"name": "status", "value": "green"}, {"name": "region", "value": "eu"}],
               "edges": [{"to_topic_id": client, "kind": "uses"}]}),
    )
    .await;
    wait_for_topic(
        &app,
        &second,
        "the later duplicate to be merged",
        |archived| archived,
    )
    .await;

    let kept = view(&app, &first, None).await;
    assert_eq!(kept["archived"], false);
    assert_eq!(
        field_values(&kept, "status"),
        "green",
        "the newer value wins"
    );
    assert_eq!(field_values(&kept, "owner"), "ann");
    assert_eq!(field_values(&kept, "region"), "eu", "{kept}");
    assert_eq!(kept["summary"], "the CI box");
    assert_eq!(kept["tags"], json!(["ci"]));
    let edges: Vec<(String, String, String)> = kept["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["from_topic_id"].as_str().unwrap().to_string(),
                e["to_topic_id"].as_str().unwrap().to_string(),
                e["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(
        edges.contains(&(first.clone(), upstream.clone(), "depends_on".into())),
        "{edges:?}"
    );
    assert!(
        edges.contains(&(first.clone(), client.clone(), "uses".into())),
        "moved: {edges:?}"
    );
    assert!(
        edges.contains(&(second.clone(), first.clone(), "merged_into".into())),
        "{edges:?}"
    );

    let merged = view(&app, &second, None).await;
    assert_eq!(merged["archived"], true);
    assert_eq!(merged["fields"], json!({}), "its versions moved");
    assert_eq!(
        merged["edges"].as_array().unwrap().len(),
        1,
        "only the link to the topic it went into: {merged}"
    );

    // Both chains joined, in the order their values took effect, then the
    // version the merge made.
    let versions = history(&app, &first, "status").await;
    assert_eq!(values_of(&versions), ["red", "green", "green"]);
    assert_eq!(versions[2]["source"], "engram:scheduler");
    assert!(versions[2]["why_changed"]
        .as_str()
        .unwrap()
        .contains("merged"));
    // The joined version is a merge revision of both current records,
    // which it retracts.
    let head = versions[2]["record_id"].as_str().unwrap();
    let record = app.get_record(head).await;
    assert_eq!(record["payload"]["subject"], first.as_str());
    let sources = relations(&record, "derived_from");
    for version in &versions[..2] {
        let id = version["record_id"].as_str().unwrap();
        assert!(sources.iter().any(|s| s == id), "{id} in {sources:?}");
        assert_eq!(app.get_record(id).await["status"], "retracted");
    }

    // The query finds the topic kept, not the merged one.
    let (_, found) = app
        .post(
            "/v1/topics/query",
            &json!({"trust": hyper(), "text": "build server"}),
        )
        .await;
    let ids: Vec<&str> = found["topics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["topic"]["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&first.as_str()) && !ids.contains(&second.as_str()),
        "{ids:?}"
    );
    // A writer still holding the merged topic's id writes to the topic it
    // went into.
    let late = ingest(
        &app,
        json!({"placement": "extend_topic", "topic_id": second, "source": "bob",
               "fields": [{"name": "rack", "value": "b4"}]}),
    )
    .await;
    assert_eq!(late["topic_id"], first.as_str(), "{late}");
    assert_eq!(field_values(&view(&app, &first, None).await, "rack"), "b4");
    for apart in [&scoped, &secret] {
        let topic = view(&app, apart, None).await;
        assert_eq!(topic["archived"], false, "{topic}");
    }
}

#[actix_web::test]
async fn faded_topics_are_archived_once_there_are_too_many_and_reads_keep_them() {
    let app = spawn_app_with(|s| s.topics.archive_after_count = 3).await;
    let mut ids = Vec::new();
    for title in ["alpha", "beta", "gamma"] {
        let made = json!({"placement": "new_topic", "title": title, "source": "a"});
        ids.push(topic_id(&app, made).await);
    }
    // Semantic records, and topics, halve every 30 days: after 200 days a
    // topic is at about 0.01.
    app.clock.advance(Duration::days(200));
    let faded = view(&app, &ids[2], None).await;
    assert!(faded["salience"].as_f64().unwrap() < 0.02, "{faded}");
    // That view reinforced gamma (in the background) by 0.1.
    let deadline = Deadline::after(10, "the read to reinforce the topic");
    loop {
        let (_, found) = app
            .post(
                "/v1/topics/query",
                &json!({"trust": hyper(), "text": "gamma"}),
            )
            .await;
        if found["topics"][0]["topic"]["salience"].as_f64().unwrap() > 0.1 {
            break;
        }
        deadline.wait().await;
    }
    // The sweep stores the faded salience of alpha and beta; gamma's was
    // stored when it was reinforced.
    let report = app.run_job("decay").await;
    assert_eq!(report["topics_decayed"], 2, "{report}");

    // Four topics, one more than allowed: only the least salient faded
    // one goes (alpha and beta are equal; the older first).
    let delta = topic_id(
        &app,
        json!({"placement": "new_topic", "title": "delta", "source": "a"}),
    )
    .await;
    wait_for_topic(
        &app,
        &ids[0],
        "the faded topic to be archived",
        |archived| archived,
    )
    .await;
    let archived = |id: &str| topic_archived(&app, id);
    assert!(!archived(&ids[1]), "beta stays, faded: three topics remain");
    assert!(!archived(&ids[2]) && !archived(&delta));
}

#[actix_web::test]
async fn topic_vectors_rank_queries_and_hint_similar_topics_within_trust() {
    let app = spawn_app().await;
    let make = |title: &str, embedding: Option<Value>, sensitivity: &str| {
        let mut body = json!({"placement": "new_topic", "title": title, "source": "a",
                              "sensitivity": sensitivity});
        if let Some(embedding) = embedding {
            body["embedding"] = embedding;
        }
        body
    };
    let mut ids = Vec::new();
    for (title, embedding, sensitivity) in [
        ("alpha lake", Some(json!([1.0, 0.0, 0.0])), "low"),
        ("beta river", Some(json!([0.0, 1.0, 0.0])), "low"),
        ("gamma hill", None, "low"),
        ("delta secret", Some(json!([1.0, 0.05, 0.0])), "high"),
    ] {
        let made = ingest(&app, make(title, embedding, sensitivity)).await;
        ids.push(made["topic_id"].as_str().unwrap().to_string());
    }
    let query = |trust: Value, extra: Value| {
        let mut body = json!({"trust": trust});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        body
    };
    let found = |answer: &Value| -> Vec<(String, f64)> {
        answer["topics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["topic"]["id"].as_str().unwrap().to_string(),
                    t["score"].as_f64().unwrap(),
                )
            })
            .collect()
    };

    let (status, answer) = app
        .post(
            "/v1/topics/query",
            &query(trust("low", &[]), json!({"embedding": [0.9, 0.1, 0.0]})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let hits = found(&answer);
    assert_eq!(hits[0].0, ids[0], "nearest first: {hits:?}");
    assert!(
        hits[0].1 > 0.9 && hits.iter().any(|(id, _)| *id == ids[1]),
        "{hits:?}"
    );
    assert!(
        hits.iter().all(|(id, _)| *id != ids[3]),
        "the high topic stays hidden"
    );
    let (_, answer) = app
        .post(
            "/v1/topics/query",
            &query(hyper(), json!({"embedding": [1.0, 0.05, 0.0]})),
        )
        .await;
    assert_eq!(found(&answer)[0].0, ids[3], "seen with the trust for it");

    // Text and vector together: the mean of both signals.
    let (_, answer) = app
        .post(
            "/v1/topics/query",
            &query(
                trust("low", &[]),
                json!({"text": "gamma", "embedding": [1.0, 0.0, 0.0]}),
            ),
        )
        .await;
    let hits = found(&answer);
    let score_of = |id: &str| hits.iter().find(|(h, _)| h == id).map(|(_, s)| *s);
    assert!(
        (score_of(&ids[2]).unwrap() - 0.5).abs() < 1e-6,
        "text only: {hits:?}"
    );
    assert!(
        (score_of(&ids[0]).unwrap() - 0.5).abs() < 1e-6,
        "vector only: {hits:?}"
    );

    // Hints by vector, for a title that shares no word.
    let hinted = ingest(
        &app,
        json!({"placement": "new_topic", "title": "unrelated words", "source": "a",
               "suggest_similar": true, "embedding": [0.0, 1.0, 0.0], "trust": trust("low", &[])}),
    )
    .await;
    assert_eq!(hinted["similar_topic_ids"][0], ids[1].as_str(), "{hinted}");

    // A vector of other dimensions is refused, naming it, and nothing is
    // written.
    let before = topic_count(&app);
    let (status, answer) = app
        .post(
            "/v1/topics/ingest",
            &json!({"title": "wrong", "source": "a", "embedding": [1.0, 0.0], "trust": hyper()}),
        )
        .await;
    assert_error(
        &(status, answer),
        StatusCode::CONFLICT,
        "failed_precondition",
        "embedding",
    );
    assert_eq!(topic_count(&app), before);
    let (status, answer) = app
        .post(
            "/v1/topics/query",
            &query(hyper(), json!({"embedding": [1.0]})),
        )
        .await;
    assert_error(
        &(status, answer),
        StatusCode::CONFLICT,
        "failed_precondition",
        "embedding",
    );
}

#[actix_web::test]
async fn a_field_superseded_through_the_revisions_api_gets_a_new_version() {
    let app = spawn_app().await;
    let made = ingest(
        &app,
        json!({"placement": "new_topic", "title": "Go", "source": "agent",
               "fields": [{"name": "version", "value": "1.21"}, {"name": "owner", "value": "lang"}]}),
    )
    .await;
    let id = made["topic_id"].as_str().unwrap().to_string();
    let head = applied_record(&made, 0);
    app.clock.advance(Duration::seconds(5));
    let new_record = |subject: &str, object: &str| {
        json!({"type": "semantic", "sensitivity": "low",
               "payload": {"kind": "semantic", "subject": subject, "predicate": "version", "object": object,
                           "evidence": [{"source_type": "release", "source_id": object}]}})
    };
    let (status, revised) = app
        .post(
            "/v1/revisions/supersede",
            &json!({"old_id": head, "new_record": new_record(&id, "1.22"), "actor": "release-bot",
                    "rationale": "release 1.22"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{revised}");
    let new_id = revised["record"]["id"].as_str().unwrap().to_string();
    let topic = view(&app, &id, None).await;
    assert_eq!(topic["fields"]["version"]["value"], "1.22");
    assert_eq!(topic["fields"]["version"]["record_id"], new_id.as_str());
    let versions = history(&app, &id, "version").await;
    assert_eq!(values_of(&versions), ["1.21", "1.22"]);
    let last = &versions[1];
    assert_eq!(last["source"], "release-bot");
    assert_eq!(last["why_changed"], "release 1.22");
    assert_eq!(versions[0]["valid_to"], last["valid_from"]);

    // A record that no longer states the field takes it out of the topic
    // (tests/api/topic_links.rs follows it further).
    app.clock.advance(Duration::seconds(5));
    let (status, _) = app
        .post(
            "/v1/revisions/supersede",
            &json!({"old_id": new_id, "new_record": new_record("something else", "2"),
                    "actor": "a", "rationale": "moved"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let topic = view(&app, &id, None).await;
    assert!(topic["fields"].get("version").is_none(), "{topic}");
    assert_eq!(topic["fields"]["owner"]["value"], "lang");
}

#[actix_web::test]
async fn a_field_whose_record_was_retracted_is_stated_afresh_by_the_next_ingest() {
    let app = spawn_app().await;
    let made = ingest(
        &app,
        json!({"placement": "new_topic", "title": "Rust", "source": "agent",
               "fields": [{"name": "edition", "value": "2021"}, {"name": "owner", "value": "lang"}]}),
    )
    .await;
    let id = made["topic_id"].as_str().unwrap().to_string();
    let retracted = applied_record(&made, 0);
    let owner = applied_record(&made, 1);
    let (status, body) = app
        .post(
            "/v1/revisions/retract",
            &json!({"id": retracted, "actor": "reviewer", "rationale": "wrong edition"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // The same value again, and the other field unchanged: the retracted
    // one is stated afresh (a new record, the next version), the other is
    // left as it was.
    app.clock.advance(Duration::seconds(5));
    let again = ingest(
        &app,
        json!({"placement": "extend_topic", "topic_id": id, "source": "agent",
               "fields": [{"name": "edition", "value": "2021"}, {"name": "owner", "value": "lang"}]}),
    )
    .await;
    assert_eq!(
        ops(&again),
        [
            ("edition".to_string(), "created".to_string()),
            ("owner".to_string(), "unchanged".to_string())
        ]
    );
    let fresh = again["applied"][0]["record_id"].as_str().unwrap();
    assert_ne!(fresh, retracted);
    assert_eq!(again["applied"][1]["record_id"], owner.as_str());
    let versions = history(&app, &id, "edition").await;
    assert_eq!(values_of(&versions), ["2021", "2021"]);
    assert_eq!(versions[1]["record_id"], fresh);
    assert_eq!(app.get_record(fresh).await["status"], "active");

    // And `auto` versions it from there as usual.
    let next = ingest(
        &app,
        json!({"title": "Rust", "source": "agent", "fields": [{"name": "edition", "value": "2024"}]}),
    )
    .await;
    assert_eq!(
        ops(&next),
        [("edition".to_string(), "versioned".to_string())]
    );
    assert_eq!(
        values_of(&history(&app, &id, "edition").await),
        ["2021", "2021", "2024"]
    );
}

/// Supersedes record `old` with a fact about field `name` of topic `id`
/// of `sensitivity`; answers the new record's id.
async fn restate(
    app: &TestApp,
    old: &str,
    id: &str,
    name: &str,
    value: &str,
    sensitivity: &str,
) -> String {
    let (status, revised) = app
        .post(
            "/v1/revisions/supersede",
            &json!({"old_id": old, "actor": "a", "rationale": "r", "new_record": {
                "type": "semantic", "sensitivity": sensitivity,
                "payload": {"kind": "semantic", "subject": id, "predicate": name, "object": value,
                            "evidence": [{"source_type": "note", "source_id": value}]}}}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{revised}");
    revised["record"]["id"].as_str().unwrap().to_string()
}

#[actix_web::test]
async fn a_field_version_is_shown_only_to_callers_who_may_see_its_record() {
    let app = spawn_app().await;
    let made = ingest(
        &app,
        json!({"placement": "new_topic", "title": "Vault", "sensitivity": "low", "source": "agent",
               "fields": [{"name": "code", "value": "open"}, {"name": "owner", "value": "ops"}]}),
    )
    .await;
    let id = made["topic_id"].as_str().unwrap().to_string();
    let first = applied_record(&made, 0);
    app.clock.advance(Duration::seconds(5));
    let secret = restate(&app, &first, &id, "code", "zqsecret", "hyper").await;
    let low = trust("low", &[]);
    // The hyper record itself is hidden from the low reader…
    let (status, _) = app
        .post(&format!("/v1/retrieve/{secret}"), &json!({"trust": low}))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // …and so is its value, everywhere a topic is read.
    let (status, seen) = app
        .post(&format!("/v1/topics/{id}/view"), &json!({"trust": low}))
        .await;
    assert_eq!(status, StatusCode::OK, "{seen}");
    assert_eq!(
        seen["topic"]["fields"]["code"]["value"], "open",
        "the latest visible version"
    );
    assert_eq!(seen["topic"]["fields"]["code"]["record_id"], first.as_str());
    let (status, versions) = app
        .post(
            &format!("/v1/topics/{id}/fields/code/history"),
            &json!({"trust": low}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{versions}");
    assert_eq!(
        values_of(versions["versions"].as_array().unwrap()),
        ["open"]
    );
    assert_eq!(
        versions["versions"][0]["valid_to"],
        Value::Null,
        "no hidden end shows"
    );
    let query = json!({"trust": low, "include_history": true});
    let (status, found) = app.post("/v1/topics/query", &query).await;
    assert_eq!(status, StatusCode::OK, "{found}");
    let rpc = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "topic_query",
                     "arguments": {"trust": low, "include_history": true}}});
    let (_, mcp) = app.post("/mcp", &rpc).await;
    // A query for the hidden value finds nothing: it is not in the index.
    let (_, searched) = app
        .post(
            "/v1/topics/query",
            &json!({"trust": low, "text": "zqsecret"}),
        )
        .await;
    assert_eq!(
        searched["topics"].as_array().map(Vec::len),
        Some(0),
        "{searched}"
    );
    for answer in [
        seen.to_string(),
        versions.to_string(),
        found.to_string(),
        mcp.to_string(),
    ] {
        assert!(
            !answer.contains("zqsecret") && !answer.contains(&secret),
            "{answer}"
        );
    }
    assert!(
        found.to_string().contains("open") && mcp.to_string().contains("open"),
        "{found} {mcp}"
    );
    // The hyper reader still sees all of it.
    let topic = view(&app, &id, None).await;
    assert_eq!(topic["fields"]["code"]["value"], "zqsecret");
    assert_eq!(
        values_of(&history(&app, &id, "code").await),
        ["open", "zqsecret"]
    );
    let (_, searched) = app
        .post(
            "/v1/topics/query",
            &json!({"trust": hyper(), "text": "zqsecret"}),
        )
        .await;
    assert_eq!(
        searched["topics"].as_array().map(Vec::len),
        Some(0),
        "only values all its readers see are indexed"
    );
}

#[actix_web::test]
async fn graph_retrieval_never_walks_through_a_topic_the_caller_may_not_see() {
    let app = spawn_app().await;
    let topic = |title: &str, sensitivity: &str, value: &str| {
        json!({"placement": "new_topic", "title": title, "sensitivity": sensitivity, "source": "agent",
               "fields": [{"name": "note", "value": value}]})
    };
    let v1 = ingest(&app, topic("V1", "low", "alpha")).await;
    let v2 = ingest(&app, topic("V2", "low", "omega")).await;
    let h = ingest(&app, topic("H", "high", "hidden")).await;
    let id = |made: &Value| made["topic_id"].as_str().unwrap().to_string();
    for (from, to) in [(id(&v1), id(&h)), (id(&h), id(&v2))] {
        let (status, body) = app
            .post(
                &format!("/v1/topics/{from}/edges"),
                &json!({"to_topic_id": to, "kind": "depends_on", "trust": hyper()}),
            )
            .await;
        assert!(status.is_success(), "{body}");
    }
    // One field of H is restated by a low record the low reader can find.
    let old = h["applied"][0]["record_id"].as_str().unwrap().to_string();
    app.clock.advance(Duration::seconds(5));
    let bridge = restate(&app, &old, &id(&h), "note", "zqbridge", "low").await;
    let (status, graph) = app
        .post(
            "/v1/retrieve/graph",
            &json!({"trust": trust("low", &[]), "task_descriptor": "zqbridge", "max_hops": 3}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{graph}");
    let nodes: Vec<&str> = graph["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["record"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(nodes, [bridge.as_str()], "{graph}");
    assert!(!graph.to_string().contains("alpha") && !graph.to_string().contains("omega"));
    // Nor does a topics query's walk: V1's neighbours stop before H.
    let (_, found) = app
        .post(
            "/v1/topics/query",
            &json!({"trust": trust("low", &[]), "text": "V1", "hops": 3}),
        )
        .await;
    assert_eq!(
        found["topics"][0]["topic"]["id"],
        id(&v1).as_str(),
        "{found}"
    );
    assert_eq!(found["topics"][0]["neighbors"], json!([]), "{found}");
    assert_eq!(found["topics"][0]["topic"]["edges"], json!([]), "{found}");
    // A reader who sees H walks on to V1 and V2.
    let (_, graph) = app
        .post(
            "/v1/retrieve/graph",
            &json!({"trust": trust("high", &[]), "task_descriptor": "zqbridge", "max_hops": 3}),
        )
        .await;
    let text = graph.to_string();
    assert!(text.contains("alpha") && text.contains("omega"), "{graph}");
}

#[actix_web::test]
async fn a_field_version_never_starts_before_the_version_it_replaces() {
    let app = spawn_app().await;
    let made = ingest(
        &app,
        json!({"placement": "new_topic", "title": "Build", "source": "agent",
               "fields": [{"name": "state", "value": "queued"}]}),
    )
    .await;
    let id = made["topic_id"].as_str().unwrap().to_string();
    let start = app.clock.now();
    // What concurrent ingests do: one whose instant was read earlier is
    // written after one read later.
    app.clock.set(start + Duration::seconds(10));
    let version = |value: &str| {
        json!({"placement": "version_field", "topic_id": id, "source": "agent",
               "fields": [{"name": "state", "value": value}]})
    };
    ingest(&app, version("running")).await;
    app.clock.set(start + Duration::seconds(5));
    ingest(&app, version("done")).await;
    let versions = history(&app, &id, "state").await;
    assert_eq!(values_of(&versions), ["queued", "running", "done"]);
    for pair in versions.windows(2) {
        let (from, to) = (&pair[0]["valid_from"], &pair[0]["valid_to"]);
        assert!(
            from.as_str() <= to.as_str(),
            "valid_to before valid_from: {pair:?}"
        );
        assert_eq!(pair[0]["valid_to"], pair[1]["valid_from"]);
    }
    // The newest version is the one found now, and as of its start.
    let at = versions[2]["valid_from"].as_str().unwrap().to_string();
    assert_eq!(
        view(&app, &id, Some(&at)).await["fields"]["state"]["value"],
        "done"
    );
    assert_eq!(
        view(&app, &id, None).await["fields"]["state"]["value"],
        "done"
    );
}

#[actix_web::test]
async fn a_query_walks_no_more_topics_than_its_bound_and_says_when_it_cut() {
    let app = spawn_app_with(|s| s.topics.max_hop_nodes = 3).await;
    // A hub with five spokes.
    let hub = topic_id(
        &app,
        json!({"placement": "new_topic", "title": "Hub zqhub", "source": "a"}),
    )
    .await;
    for i in 0..5 {
        let spoke = topic_id(
            &app,
            json!({"placement": "new_topic", "title": format!("Spoke {i}"), "source": "a"}),
        )
        .await;
        let (status, body) = app
            .post(
                &format!("/v1/topics/{hub}/edges"),
                &json!({"to_topic_id": spoke, "kind": "related", "trust": hyper()}),
            )
            .await;
        assert!(status.is_success(), "{body}");
    }
    let query = |hops: u8| json!({"trust": hyper(), "text": "zqhub", "hops": hops});
    let (status, found) = app.post("/v1/topics/query", &query(2)).await;
    assert_eq!(status, StatusCode::OK, "{found}");
    let hit = &found["topics"][0];
    assert_eq!(hit["topic"]["id"], hub.as_str());
    assert_eq!(hit["neighbors"].as_array().unwrap().len(), 3, "{hit}");
    assert_eq!(hit["neighbors_truncated"], true);
    let app = spawn_app_in(app.stop().await, |_| {}).await;
    let (_, found) = app.post("/v1/topics/query", &query(2)).await;
    assert_eq!(found["topics"][0]["neighbors"].as_array().unwrap().len(), 5);
    assert_eq!(found["topics"][0]["neighbors_truncated"], false);
}

#[actix_web::test]
async fn versioning_a_field_whose_current_version_is_hidden_tells_nothing_of_its_value() {
    let app = spawn_app().await;
    let made = ingest(
        &app,
        json!({"placement": "new_topic", "title": "Vault", "sensitivity": "low", "source": "agent",
               "fields": [{"name": "code", "value": "open"}]}),
    )
    .await;
    let id = made["topic_id"].as_str().unwrap().to_string();
    let first = applied_record(&made, 0);
    app.clock.advance(Duration::seconds(5));
    restate(&app, &first, &id, "code", "zqsecret", "hyper").await;
    let attempt = |value: &str| {
        json!({"placement": "version_field", "topic_id": id, "source": "agent", "trust": trust("low", &[]),
               "fields": [{"name": "code", "value": value}]})
    };
    let (same_status, same) = app.post("/v1/topics/ingest", &attempt("zqsecret")).await;
    let (other_status, other) = app.post("/v1/topics/ingest", &attempt("zqguess")).await;
    assert_eq!(same_status, StatusCode::NOT_FOUND, "{same}");
    assert_eq!(
        (same_status, &same),
        (other_status, &other),
        "the same answer"
    );
    assert!(same.to_string().contains("fields[0].name"), "{same}");
    assert_eq!(
        view(&app, &id, None).await["fields"]["code"]["value"],
        "zqsecret",
        "unchanged"
    );
    // Other fields stay the caller's to change.
    let other_field = json!({"placement": "extend_topic", "topic_id": id, "source": "agent",
                             "trust": trust("low", &[]), "fields": [{"name": "owner", "value": "ops"}]});
    let (status, body) = app.post("/v1/topics/ingest", &other_field).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}
