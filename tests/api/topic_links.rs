//! Around topics: the direction of their edges in graph retrieval,
//! archived topics left out of walks, an edge added twice, a field whose
//! record moved to another subject.

use awc::http::StatusCode;
use chrono::Duration;
use serde_json::{json, Value};

use crate::helpers::{spawn_app, trust, TestApp};

fn hyper() -> Value {
    trust("hyper", &[])
}

/// A new topic with one field; answers the ingest's answer.
async fn topic(app: &TestApp, title: &str, field: &str, value: &str) -> Value {
    let (status, made) = app
        .post(
            "/v1/topics/ingest",
            &json!({"placement": "new_topic", "title": title, "source": "agent",
                    "fields": [{"name": field, "value": value}], "trust": hyper()}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    made
}

fn id(made: &Value) -> String {
    made["topic_id"].as_str().unwrap().to_string()
}

fn record(made: &Value) -> String {
    made["applied"][0]["record_id"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn add_edge(app: &TestApp, from: &str, to: &str, kind: &str) -> Value {
    let (status, body) = app
        .post(
            &format!("/v1/topics/{from}/edges"),
            &json!({"to_topic_id": to, "kind": kind, "trust": hyper()}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body
}

async fn graph(app: &TestApp, text: &str, hops: u8) -> Value {
    let (status, graph) = app
        .post(
            "/v1/retrieve/graph",
            &json!({"trust": hyper(), "task_descriptor": text, "max_hops": hops}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{graph}");
    graph
}

fn edges(graph: &Value) -> Vec<(String, String, String)> {
    graph["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap().to_string();
            (s("from"), s("to"), s("kind"))
        })
        .collect()
}

fn node_ids(graph: &Value) -> Vec<String> {
    graph["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["record"]["id"].as_str().unwrap().to_string())
        .collect()
}

#[actix_web::test]
async fn graph_edges_point_from_the_topic_that_depends_to_the_one_it_depends_on() {
    let app = spawn_app().await;
    let billing = topic(&app, "Billing DB", "engine", "zqbilling").await;
    let ledger = topic(&app, "Ledger", "engine", "zqledger").await;
    add_edge(&app, &id(&billing), &id(&ledger), "depends_on").await;
    let depends = (record(&billing), record(&ledger), "depends_on".to_string());
    // Walked from either end, the edge keeps its direction.
    for root in ["zqledger", "zqbilling"] {
        let graph = graph(&app, root, 1).await;
        assert_eq!(edges(&graph), vec![depends.clone()], "from {root}: {graph}");
    }
}

#[actix_web::test]
async fn archived_topics_are_left_out_of_neighbours_hops_and_graph_walks() {
    let app = spawn_app().await;
    let a = topic(&app, "Alpha svc", "note", "zqalpha").await;
    let b = topic(&app, "Beta svc", "note", "zqbeta").await;
    let c = topic(&app, "Gamma svc", "note", "zqgamma").await;
    add_edge(&app, &id(&a), &id(&b), "depends_on").await;
    add_edge(&app, &id(&b), &id(&c), "depends_on").await;
    let neighbours = |found: &Value| -> Vec<String> {
        found["topics"][0]["neighbors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["topic_id"].as_str().unwrap().to_string())
            .collect()
    };
    let query = json!({"trust": hyper(), "text": "Alpha", "hops": 2});
    let (_, found) = app.post("/v1/topics/query", &query).await;
    assert_eq!(neighbours(&found), [id(&b), id(&c)], "{found}");
    assert_eq!(node_ids(&graph(&app, "zqalpha", 2).await).len(), 3);

    let (status, body) = app
        .post(
            &format!("/v1/topics/{}/archive", id(&b)),
            &json!({"trust": hyper()}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, found) = app.post("/v1/topics/query", &query).await;
    assert_eq!(found["topics"][0]["topic"]["id"], id(&a).as_str());
    assert_eq!(neighbours(&found), Vec::<String>::new(), "{found}");
    let graph = graph(&app, "zqalpha", 2).await;
    assert_eq!(node_ids(&graph), [record(&a)], "{graph}");
}

#[actix_web::test]
async fn adding_a_standing_edge_again_answers_the_edge_that_stands() {
    let app = spawn_app().await;
    let a = topic(&app, "Orders", "note", "x").await;
    let b = topic(&app, "Stock", "note", "y").await;
    let first = add_edge(&app, &id(&a), &id(&b), "depends_on").await;
    assert_eq!(first["added"], true);
    app.clock.advance(Duration::seconds(30));
    let again = add_edge(&app, &id(&a), &id(&b), "depends_on").await;
    assert_eq!(again["added"], false);
    assert_eq!(again["edge"], first["edge"], "{again}");
}

#[actix_web::test]
async fn a_field_whose_record_moved_to_another_subject_leaves_the_topic() {
    let app = spawn_app().await;
    let made = topic(&app, "Go", "version", "1.21").await;
    let topic_id = id(&made);
    let before = app.clock.now();
    app.clock.advance(Duration::seconds(5));
    let (status, revised) = app
        .post(
            "/v1/revisions/supersede",
            &json!({"old_id": record(&made), "actor": "a", "rationale": "this was Rust's",
                    "new_record": {"type": "semantic", "sensitivity": "low",
                        "payload": {"kind": "semantic", "subject": "Rust", "predicate": "version",
                                    "object": "1.21",
                                    "evidence": [{"source_type": "doc", "source_id": "1"}]}}}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{revised}");
    let view = |as_of: Option<String>| {
        let app = &app;
        let topic_id = topic_id.clone();
        async move {
            let mut body = json!({"trust": hyper()});
            if let Some(at) = as_of {
                body["as_of"] = json!(at);
            }
            let (status, answer) = app
                .post(&format!("/v1/topics/{topic_id}/view"), &body)
                .await;
            assert_eq!(status, StatusCode::OK, "{answer}");
            answer["topic"].clone()
        }
    };
    let now = view(None).await;
    assert_eq!(now["fields"], json!({}), "{now}");
    let then = view(Some(before.to_rfc3339())).await;
    assert_eq!(then["fields"]["version"]["value"], "1.21", "{then}");
    // The history ends where the record left.
    let (status, history) = app
        .post(
            &format!("/v1/topics/{topic_id}/fields/version/history"),
            &json!({"trust": hyper()}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{history}");
    let versions = history["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 1, "{history}");
    assert!(versions[0]["valid_to"].is_string(), "{history}");
    // Stated again, the field is back, its history going on.
    app.clock.advance(Duration::seconds(5));
    let (status, again) = app
        .post(
            "/v1/topics/ingest",
            &json!({"placement": "extend_topic", "topic_id": topic_id, "source": "agent",
                    "fields": [{"name": "version", "value": "1.22"}], "trust": hyper()}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{again}");
    assert_eq!(again["applied"][0]["op"], "created", "{again}");
    assert_eq!(view(None).await["fields"]["version"]["value"], "1.22");
}

/// A field's record names its topic by id, so a question in the words of
/// the topic's title finds it through the topic: "payments" finds the
/// fields of "Payment service", and what they link to; a caller that may
/// not see the topic finds nothing.
#[actix_web::test]
async fn graph_retrieval_finds_a_topics_fields_by_its_title() {
    let app = spawn_app().await;
    let payment = topic(&app, "Payment service", "version", "2.4.1").await;
    let ledger = topic(&app, "Ledger", "owner", "team-core").await;
    add_edge(&app, &id(&payment), &id(&ledger), "depends_on").await;
    let (status, more) = app
        .post(
            "/v1/topics/ingest",
            &json!({"placement": "extend_topic", "topic_id": id(&payment), "source": "agent",
                    "fields": [{"name": "owner", "value": "team-payments"}], "trust": hyper()}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{more}");
    let owner = record(&more);

    let found = graph(&app, "payments", 2).await;
    let nodes = node_ids(&found);
    assert!(nodes.contains(&record(&payment)), "{found}");
    assert!(nodes.contains(&owner), "{found}");
    // Through the edge, the fields of the topic it depends on.
    assert!(nodes.contains(&record(&ledger)), "{found}");
    let roots: Vec<&Value> = found["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["root"] == true)
        .collect();
    assert_eq!(roots.len(), 2, "each field once: {found}");

    // A caller below the topic's sensitivity finds nothing of it.
    let (status, hidden) = app
        .post(
            "/v1/topics/ingest",
            &json!({"placement": "new_topic", "title": "Payroll vault", "sensitivity": "high",
                    "source": "agent", "fields": [{"name": "owner", "value": "finance"}],
                    "trust": hyper()}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{hidden}");
    let (status, low) = app
        .post(
            "/v1/retrieve/graph",
            &json!({"trust": trust("low", &[]), "task_descriptor": "payroll vault", "max_hops": 2}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{low}");
    assert_eq!(low["nodes"], json!([]), "{low}");
    // Without semantic records asked for, no field is a root.
    let (status, events) = app
        .post(
            "/v1/retrieve/graph",
            &json!({"trust": hyper(), "task_descriptor": "payments", "memory_types": ["episodic"]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{events}");
    assert_eq!(events["nodes"], json!([]), "{events}");
}
