//! `auto` topic placement as entity resolution: what it attaches to, what
//! it will not guess, why it says it chose, and summaries kept as versions.

use awc::http::StatusCode;
use chrono::Duration;
use serde_json::{json, Value};

use crate::helpers::{assert_error, spawn_app, trust, TestApp};

async fn place(app: &TestApp, mut body: Value) -> Value {
    body["source"] = json!("agent");
    body["trust"] = trust("hyper", &[]);
    let (status, answer) = app.post("/v1/topics/ingest", &body).await;
    assert_eq!(status, StatusCode::CREATED, "{body}: {answer}");
    answer
}

fn id(answer: &Value) -> &str {
    answer["topic_id"].as_str().unwrap()
}

fn ids(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect()
}

fn topic_count(app: &TestApp) -> i64 {
    app.sql_number("SELECT COUNT(*) FROM topics", &[])
}

#[actix_web::test]
async fn numbers_and_versions_tell_topics_apart() {
    let app = spawn_app().await;
    let mut made = Vec::new();
    for n in 1..=16 {
        let answer = place(
            &app,
            json!({"title": format!("crash topic {n}"), "kind": "incident",
                   "summary": "the worker crashed on start"}),
        )
        .await;
        assert_eq!(
            answer["placement"], "new_topic",
            "crash topic {n}: {answer}"
        );
        made.push(id(&answer).to_string());
    }
    assert_eq!(topic_count(&app), 16);
    let v2 = place(&app, json!({"title": "Payments API v2", "kind": "service"})).await;
    let v3 = place(&app, json!({"title": "Payments API v3", "kind": "service"})).await;
    assert_eq!(v3["placement"], "new_topic", "{v3}");
    assert_ne!(id(&v2), id(&v3));
    // The same number, written otherwise, is the same thing.
    let again = place(&app, json!({"title": "payments api V3"})).await;
    assert_eq!(id(&again), id(&v3));
    assert_eq!(
        again["matched"],
        json!({"topic_id": id(&v3), "by": "title", "score": 1.0})
    );
    let again = place(&app, json!({"title": "crash topic #5"})).await;
    assert_eq!(id(&again), made[4], "{again}");
}

#[actix_web::test]
async fn a_kind_and_filler_words_keep_people_off_services() {
    let app = spawn_app().await;
    let search = place(
        &app,
        json!({"title": "Search service", "kind": "service", "summary": "search as seen by ops"}),
    )
    .await;
    for person in ["Alice", "Bob"] {
        let answer = place(
            &app,
            json!({"title": person, "kind": "person",
                   "summary": format!("{person} as seen by ops")}),
        )
        .await;
        assert_eq!(answer["placement"], "new_topic", "{answer}");
        assert_ne!(id(&answer), id(&search));
        assert!(answer.get("matched").is_none(), "{answer}");
    }
    // Same title, another kind: another thing.
    let planet = place(&app, json!({"title": "Mercury", "kind": "planet"})).await;
    let element = place(&app, json!({"title": "Mercury", "kind": "element"})).await;
    assert_ne!(id(&planet), id(&element));
    // Without a kind, the two are equally the one named: not guessed.
    let unsure = place(&app, json!({"title": "mercury"})).await;
    assert_eq!(unsure["placement"], "new_topic");
    let mut near = ids(&unsure["similar_topic_ids"]);
    near.sort();
    let mut both = vec![id(&planet), id(&element)];
    both.sort();
    assert_eq!(near, both, "{unsure}");
}

#[actix_web::test]
async fn a_name_with_generic_words_added_is_the_same_thing_and_becomes_an_alias() {
    let app = spawn_app().await;
    let cache = place(
        &app,
        json!({"title": "Redis cache", "kind": "service", "summary": "session cache"}),
    )
    .await;
    let redis = place(
        &app,
        json!({"title": "Redis", "kind": "service", "summary": "session cache in front of the API"}),
    )
    .await;
    assert_eq!(redis["placement"], "extend_topic", "{redis}");
    assert_eq!(
        redis["matched"],
        json!({"topic_id": id(&cache), "by": "similar", "score": 0.9})
    );
    // Found by "Redis" once, it is found by it again, exactly.
    let again = place(&app, json!({"title": "the redis"})).await;
    assert_eq!(
        again["matched"],
        json!({"topic_id": id(&cache), "by": "alias", "score": 1.0})
    );
    let db = place(&app, json!({"title": "Billing DB", "kind": "service"})).await;
    let database = place(&app, json!({"title": "Billing database"})).await;
    assert_eq!(id(&database), id(&db), "{database}");
    assert_eq!(database["matched"]["by"], "similar");
}

#[actix_web::test]
async fn an_ambiguous_observation_makes_a_new_topic_or_fails_when_asked() {
    let app = spawn_app().await;
    let api = place(&app, json!({"title": "Search API", "kind": "service"})).await;
    let cluster = place(&app, json!({"title": "Search cluster", "kind": "service"})).await;
    assert_ne!(
        id(&api),
        id(&cluster),
        "two sorts of one name are not one thing"
    );
    let mut both = vec![id(&api).to_string(), id(&cluster).to_string()];
    both.sort();
    let count = topic_count(&app);
    let (status, body) = app
        .post(
            "/v1/topics/ingest",
            &json!({"title": "Search service", "kind": "service", "source": "agent",
                    "on_ambiguous": "fail", "trust": trust("hyper", &[])}),
        )
        .await;
    assert_error(
        &(status, body.clone()),
        StatusCode::CONFLICT,
        "conflict",
        "title",
    );
    let mut near = ids(&body["error"]["similar_topic_ids"]);
    near.sort();
    assert_eq!(near, both, "{body}");
    assert_eq!(topic_count(&app), count, "nothing is written");

    let made = place(&app, json!({"title": "Search service", "kind": "service"})).await;
    assert_eq!(made["placement"], "new_topic");
    let mut near = ids(&made["similar_topic_ids"]);
    near.sort();
    assert_eq!(near, both, "{made}");

    // Two as good at the threshold: not guessed between either.
    let cache = place(
        &app,
        json!({"placement": "new_topic", "title": "Redis cache"}),
    )
    .await;
    let server = place(
        &app,
        json!({"placement": "new_topic", "title": "Redis server"}),
    )
    .await;
    let redis = place(&app, json!({"title": "Redis"})).await;
    assert_eq!(redis["placement"], "new_topic", "{redis}");
    let mut near = ids(&redis["similar_topic_ids"]);
    near.sort();
    let mut both = vec![id(&cache), id(&server)];
    both.sort();
    assert_eq!(near, both, "{redis}");

    // Just short of the threshold: a new topic, the near one named.
    let smith = place(&app, json!({"title": "Alice Smith", "kind": "person"})).await;
    let alice = place(&app, json!({"title": "Alice", "kind": "person"})).await;
    assert_eq!(alice["placement"], "new_topic");
    assert_eq!(ids(&alice["similar_topic_ids"]), [id(&smith)]);

    let (status, body) = app
        .post(
            "/v1/topics/ingest",
            &json!({"placement": "new_topic", "title": "x", "source": "agent", "on_ambiguous": "fail",
                    "trust": trust("hyper", &[])}),
        )
        .await;
    assert_error(
        &(status, body.clone()),
        StatusCode::BAD_REQUEST,
        "invalid_argument",
        "on_ambiguous",
    );
    let (status, body) = app
        .post(
            "/v1/topics/ingest",
            &json!({"title": "x", "source": "agent", "on_ambiguous": "maybe",
                    "trust": trust("hyper", &[])}),
        )
        .await;
    assert_error(
        &(status, body.clone()),
        StatusCode::BAD_REQUEST,
        "invalid_argument",
        "on_ambiguous",
    );
}

#[actix_web::test]
async fn a_summary_changed_by_an_observation_is_a_new_version() {
    let app = spawn_app().await;
    let first = place(
        &app,
        json!({"title": "Payment service", "summary": "charges cards"}),
    )
    .await;
    let topic = id(&first).to_string();
    let before = app.clock.now();
    app.clock.advance(Duration::seconds(10));
    let second = place(
        &app,
        json!({"title": "payment service", "summary": "charges cards and wallets",
               "why_changed": "wallets launched"}),
    )
    .await;
    assert_eq!(id(&second), topic);
    let view = |as_of: Option<String>| {
        let (app, topic) = (&app, topic.clone());
        async move {
            let mut body = json!({"trust": trust("hyper", &[])});
            if let Some(at) = as_of {
                body["as_of"] = json!(at);
            }
            let (status, answer) = app.post(&format!("/v1/topics/{topic}/view"), &body).await;
            assert_eq!(status, StatusCode::OK, "{answer}");
            answer["topic"]["summary"].clone()
        }
    };
    assert_eq!(view(None).await, "charges cards and wallets");
    assert_eq!(view(Some(before.to_rfc3339())).await, "charges cards");
    let (status, history) = app
        .post(
            &format!("/v1/topics/{topic}/summary/history"),
            &json!({"trust": trust("hyper", &[])}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{history}");
    let versions = history["versions"].as_array().unwrap();
    let summaries: Vec<&str> = versions
        .iter()
        .map(|v| v["summary"].as_str().unwrap())
        .collect();
    assert_eq!(summaries, ["charges cards", "charges cards and wallets"]);
    assert_eq!(versions[1]["why_changed"], "wallets launched");
    assert_eq!(versions[1]["source"], "agent");
    assert_eq!(versions[0]["valid_to"], versions[1]["valid_from"]);
    assert!(versions[1]["valid_to"].is_null());
    // The same summary again is no change.
    place(
        &app,
        json!({"title": "Payment service", "summary": "charges cards and wallets"}),
    )
    .await;
    let (_, history) = app
        .post(
            &format!("/v1/topics/{topic}/summary/history"),
            &json!({"trust": trust("hyper", &[])}),
        )
        .await;
    assert_eq!(history["versions"].as_array().unwrap().len(), 2);
    // A topic the caller may not see has no history it may read.
    let (status, body) = app
        .post(
            &format!("/v1/topics/{topic}/summary/history"),
            &json!({"trust": trust("low", &["elsewhere"])}),
        )
        .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "an unscoped low topic is seen: {body}"
    );
}

/// The project's placement set (tests/data/placement.jsonl: numbers,
/// versions, regions and ids, people with shared first names,
/// abbreviations, plurals, articles, near-duplicates that must merge,
/// look-alikes that must not, kinds) through `loadtests placement`.
#[actix_web::test]
async fn the_project_placement_set_is_placed_right_with_no_attach_across_kinds() {
    let app = spawn_app().await;
    let (tally, wrong) = loadtests::placement::run(loadtests::placement::PlacementOptions {
        url: app.address.clone(),
        dataset: std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/placement.jsonl"),
        headers: Vec::new(),
    })
    .await
    .unwrap();
    assert!(tally.cases >= 150, "{tally:?}");
    assert!(tally.accuracy() >= 0.95, "{tally:?}: {wrong:#?}");
    assert_eq!(tally.wrong_kind, 0, "{wrong:#?}");
}

/// Topics of other scopes (or above the caller's sensitivity) share the
/// word index with the caller's; however many of them there are, and
/// however new, they take no place among the caller's candidates.
#[actix_web::test]
async fn other_tenants_topics_do_not_crowd_a_callers_own_out_of_placement() {
    let app = spawn_app().await;
    let ingest = |scope: &'static str, max: &'static str, body: Value| {
        let app = &app;
        async move {
            let mut body = body;
            body["source"] = json!("agent");
            body["scope"] = json!(scope);
            body["trust"] = trust(max, &[scope]);
            let (status, answer) = app.post("/v1/topics/ingest", &body).await;
            assert_eq!(status, StatusCode::CREATED, "{body}: {answer}");
            answer
        }
    };
    let own = ingest(
        "tenant-a",
        "low",
        json!({"title": "Billing service", "kind": "service", "summary": "invoices"}),
    )
    .await;
    // Newer topics with every word of it: another tenant's, and one in
    // the same scope the caller may not see.
    for n in 0..520 {
        ingest(
            "tenant-b",
            "low",
            json!({"placement": "new_topic", "title": format!("Billing service invoices {n}"),
                   "kind": "service", "summary": "billing service invoices"}),
        )
        .await;
    }
    for n in 0..520 {
        ingest(
            "tenant-a",
            "high",
            json!({"placement": "new_topic", "sensitivity": "high",
                   "title": format!("Billing service invoices {n}"),
                   "kind": "service", "summary": "billing service invoices"}),
        )
        .await;
    }
    let placed = ingest(
        "tenant-a",
        "low",
        json!({"title": "Billing svc", "kind": "service", "suggest_similar": true}),
    )
    .await;
    assert_eq!(placed["placement"], "extend_topic", "{placed}");
    assert_eq!(placed["topic_id"], own["topic_id"], "{placed}");
    assert_eq!(placed["matched"]["by"], "similar", "{placed}");
    assert_eq!(
        placed["similar_topic_ids"],
        json!([own["topic_id"]]),
        "{placed}"
    );
}
