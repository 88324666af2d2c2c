//! Hostile input: counters that overflow, records that forge state,
//! names with control characters, timestamps from the future.

use awc::http::StatusCode;
use chrono::Duration;
use serde_json::{json, Value};

use crate::helpers::{assert_error, create, raw, spawn_app, trust, TestApp};

fn skill(performance: Value) -> Value {
    json!({"type": "competence", "sensitivity": "low",
           "payload": {"kind": "competence", "skill_name": "s", "performance": performance}})
}

fn fact() -> Value {
    json!({"type": "semantic", "sensitivity": "low",
           "payload": {"kind": "semantic", "subject": "a", "predicate": "b"}})
}

fn with(mut body: Value, field: &str, value: Value) -> Value {
    body[field] = value;
    body
}

async fn prometheus(app: &TestApp) -> String {
    let (status, text) = app.get("/metrics").await;
    assert_eq!(status, StatusCode::OK, "{text}");
    text.as_str().unwrap().to_string()
}

/// Every sample of the exposition is a finite number.
#[track_caller]
fn assert_finite_samples(text: &str) {
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let value = line.rsplit(' ').next().unwrap();
        let parsed: f64 = value.parse().unwrap_or(f64::NAN);
        assert!(parsed.is_finite(), "{line}");
    }
}

#[actix_web::test]
async fn counters_are_bounded_and_metrics_survive_any_stored_count() {
    let app = spawn_app().await;
    for (performance, field) in [
        (
            json!({"success_count": 9_223_372_036_854_775_807_u64}),
            "payload.performance.success_count",
        ),
        (
            json!({"success_count": 1, "failure_count": u64::MAX}),
            "payload.performance.failure_count",
        ),
        (
            json!({"success_count": (1_u64 << 53) + 1}),
            "payload.performance.success_count",
        ),
        (json!({"success_count": -1}), "success_count"),
        (json!({"success_count": 1.5}), "success_count"),
    ] {
        assert_error(
            &app.post("/v1/records", &skill(performance)).await,
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            field,
        );
    }
    let plan = json!({"type": "plan_graph", "sensitivity": "low",
        "payload": {"kind": "plan_graph", "plan_id": "p", "metrics": {"execution_count": u64::MAX}}});
    assert_error(
        &app.post("/v1/records", &plan).await,
        StatusCode::BAD_REQUEST,
        "invalid_argument",
        "payload.metrics.execution_count",
    );
    // The largest accepted counts, twice: every sum still fits.
    let max = 1_u64 << 53;
    for _ in 0..2 {
        create(
            &app,
            skill(json!({"success_count": max, "failure_count": max})),
        )
        .await;
    }
    // And counts written before the limit existed.
    app.sql_execute(
        "UPDATE competence_stats SET success_count = 9223372036854775807, failure_count = -1",
    );
    let (status, stats) = app.get("/v1/metrics").await;
    assert_eq!(status, StatusCode::OK, "{stats}");
    assert_eq!(stats["competence_success_rate"], 1.0, "{stats}");
    assert_finite_samples(&prometheus(&app).await);
}

#[actix_web::test]
async fn a_created_record_cannot_forge_state() {
    let app = spawn_app().await;
    let target = create(&app, with(fact(), "id", json!("target"))).await;
    assert_eq!(target["id"], "target");
    let future = "2026-01-02T00:00:00Z";
    let cases = [
        (
            with(fact(), "status", json!("retracted")),
            "status: a new record is active; retracted comes only from a revision",
        ),
        (
            with(fact(), "status", json!("contested")),
            "status: a new record is active",
        ),
        (
            json!({"type": "semantic", "sensitivity": "low", "payload": {"kind": "semantic",
                   "subject": "a", "predicate": "b", "revision": {"status": "retracted"}}}),
            "payload.revision.status",
        ),
        (
            json!({"type": "semantic", "sensitivity": "low", "payload": {"kind": "semantic",
                   "subject": "a", "predicate": "b", "revision": {"supersedes": "target"}}}),
            "payload.revision.supersedes",
        ),
        (
            with(
                fact(),
                "relations",
                json!([{"predicate": "supersedes", "target_id": "target"}]),
            ),
            "relations[0].predicate: supersedes links are made only by revisions",
        ),
        (
            with(
                fact(),
                "relations",
                json!([{"predicate": "contested_by", "target_id": "target"}]),
            ),
            "relations[0].predicate",
        ),
        (with(fact(), "salience", json!(1e308)), "salience"),
        (
            with(
                fact(),
                "provenance",
                json!({"created_by": "engram:scheduler"}),
            ),
            "provenance.created_by: actors starting with \"engram:\" are reserved",
        ),
        (with(fact(), "created_at", json!(future)), "created_at"),
        (
            with(fact(), "lifecycle", json!({"last_reinforced_at": future})),
            "lifecycle.last_reinforced_at",
        ),
        (
            with(
                fact(),
                "audit_log",
                json!([{"action": "create", "actor": "x", "timestamp": future, "rationale": "r"}]),
            ),
            "audit_log[0].timestamp: must not be in the future",
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
    // The one record stored is the target, still the only head.
    assert_eq!(app.all_records().await.len(), 1);
    assert_eq!(app.get_record("target").await["status"], "active");

    // History from elsewhere is kept, marked as imported; the server's own
    // entry is not.
    let imported = create(
        &app,
        with(
            fact(),
            "audit_log",
            json!([{"action": "decay", "actor": "engram:scheduler",
                    "timestamp": "2025-01-01T00:00:00Z", "rationale": "r", "imported": false}]),
        ),
    )
    .await;
    let audit = imported["audit_log"].as_array().unwrap();
    assert_eq!(audit.len(), 2);
    assert_eq!(audit[0]["imported"], true);
    assert_eq!(audit[0]["actor"], "engram:scheduler");
    assert_eq!(audit[1]["action"], "create");
    assert!(audit[1].get("imported").is_none(), "{}", audit[1]);
    let id = imported["id"].as_str().unwrap();
    assert_eq!(app.get_record(id).await["audit_log"], imported["audit_log"]);

    // Revisions cannot sign as the service either.
    assert_error(
        &app.post(
            "/v1/revisions/retract",
            &json!({"id": "target", "actor": "engram:scheduler", "rationale": "r"}),
        )
        .await,
        StatusCode::BAD_REQUEST,
        "invalid_argument",
        "actor: actors starting with",
    );
    let (_, stats) = app.get("/v1/metrics").await;
    assert!(stats["avg_salience"].as_f64().unwrap() <= 1.0, "{stats}");
    assert_finite_samples(&prometheus(&app).await);
}

#[actix_web::test]
async fn names_with_control_characters_are_refused() {
    let app = spawn_app().await;
    let event = |field: &str, value: Value| {
        let mut body = json!({"source": "agent", "event_kind": "user_input", "ref": "m"});
        body[field] = value;
        body
    };
    for (body, field) in [
        (event("source", json!("agent\u{0}")), "source"),
        (event("tags", json!(["ok", "bad\u{7}"])), "tags[1]"),
        (event("scope", json!("team\nb")), "scope"),
        (event("source", json!("engram:consolidation")), "source"),
    ] {
        assert_error(
            &app.post("/v1/ingest/event", &body).await,
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            field,
        );
    }
    assert_error(
        &app.post("/v1/retrieve", &json!({"trust": trust("low", &["a\u{0}"])}))
            .await,
        StatusCode::BAD_REQUEST,
        "invalid_argument",
        "trust.scopes[0]",
    );
    assert_error(
        &app.post(
            "/v1/ingest/outcome",
            &json!({"source": "a", "target_record_id": "x\u{1b}", "status": "success"}),
        )
        .await,
        StatusCode::BAD_REQUEST,
        "invalid_argument",
        "target_record_id",
    );
    assert!(app.all_records().await.is_empty());
}

#[actix_web::test]
async fn timestamps_from_the_future_are_refused_and_skew_is_tolerated() {
    let app = spawn_app().await;
    let at = |offset: Duration| {
        let t = crate::helpers::start_time() + offset;
        json!({"source": "agent", "event_kind": "user_input", "ref": "m",
               "timestamp": t.to_rfc3339()})
    };
    assert_error(
        &app.post("/v1/ingest/event", &at(Duration::hours(1))).await,
        StatusCode::BAD_REQUEST,
        "invalid_argument",
        "timestamp: must not be in the future",
    );
    let (status, body) = app
        .post("/v1/ingest/event", &at(Duration::seconds(30)))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

#[actix_web::test]
async fn a_created_record_answers_its_current_salience() {
    let app = spawn_app().await;
    let old = json!({"type": "working", "sensitivity": "low", "salience": 1.0,
        "lifecycle": {"last_reinforced_at": "2025-12-31T00:00:00Z"},
        "payload": {"kind": "working", "thread_id": "t", "state": "executing"}});
    let created = create(&app, old).await;
    // One day at the working half-life of one day: half.
    let salience = created["salience"].as_f64().unwrap();
    assert!((salience - 0.5).abs() < 1e-6, "{created}");
    let id = created["id"].as_str().unwrap();
    assert_eq!(app.get_record(id).await["salience"], created["salience"]);
}

#[actix_web::test]
async fn retrieval_finds_the_best_current_records_however_stale_the_sweep() {
    let app = spawn_app().await;
    let working = |salience: f64, reinforced: &str| {
        json!({"type": "working", "sensitivity": "low", "salience": salience,
               "lifecycle": {"last_reinforced_at": reinforced},
               "payload": {"kind": "working", "thread_id": "t", "state": "executing"}})
    };
    // Stored at 1.0, decayed to nearly nothing: no sweep has run.
    for _ in 0..60 {
        create(&app, working(1.0, "2025-06-01T00:00:00Z")).await;
    }
    let fresh = create(&app, working(0.9, crate::helpers::START)).await;
    let (status, body) = app
        .post(
            "/v1/retrieve",
            &json!({"trust": trust("low", &[]), "limit": 5, "min_salience": 0.5}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let records = body["records"].as_array().unwrap();
    assert_eq!(records.len(), 1, "{body}");
    assert_eq!(records[0]["id"], fresh["id"]);
}

#[actix_web::test]
async fn protocol_edges_get_json_errors() {
    let app = spawn_app().await;
    for (path, body) in [
        ("/v1/retrieve", r#"[{"max_sensitivity":"hyper"}]"#),
        ("/v1/ingest/event", r#" ["a", "user_input", "m"]"#),
    ] {
        assert_error(
            &app.post_raw(path, body).await,
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            "must be a JSON object, not an array",
        );
    }
    let (status, body) = app
        .put("/v1/jobs/decay", &json!(["0 0 * * * *", true]))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    // Nested too: wherever an object is expected, an array is refused.
    for (path, body, field) in [
        ("/v1/retrieve", json!({"trust": ["hyper", true]}), "trust"),
        (
            "/v1/records",
            json!({"type": "semantic", "sensitivity": "low", "lifecycle": [null, true],
                   "payload": {"kind": "semantic", "subject": "a", "predicate": "b"}}),
            "lifecycle",
        ),
        (
            "/v1/records",
            json!({"type": "competence", "sensitivity": "low",
                   "payload": {"kind": "competence", "skill_name": "s", "performance": [5, 1]}}),
            "payload.performance",
        ),
    ] {
        assert_error(
            &app.post(path, &body).await,
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            &format!("{field}: invalid type: sequence"),
        );
    }

    // An id is checked like any other: a bad escape or a NUL is refused.
    for (path, needle) in [
        ("/v1/retrieve/%FF", "U+FFFD"),
        ("/v1/retrieve/a%00b", "control characters"),
        ("/v1/records/%C3%28/history", "U+FFFD"),
    ] {
        assert_error(
            &app.post(path, &json!({"trust": trust("low", &[])})).await,
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            needle,
        );
    }

    // HEAD wherever GET is; any other method is a 405 saying what is.
    let response = app
        .client
        .head(format!("{}/healthz", app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut response = app
        .client
        .delete(format!("{}/v1/retrieve", app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(response.headers().get("allow").unwrap(), "POST");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "method_not_allowed");
    let response = app
        .client
        .post(format!("{}/v1/jobs", app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers().get("allow").unwrap(), "GET, HEAD");
}

#[actix_web::test]
async fn a_body_that_trickles_in_times_out_and_bodies_in_flight_are_bounded() {
    let app = crate::helpers::spawn_app_with(|s| {
        s.server.body_read_timeout_ms = 300;
        s.server.max_body_bytes = 4096;
        s.server.max_body_bytes_in_flight = 4096;
    })
    .await;
    let address = app.address.clone();
    let slow = actix_web::rt::task::spawn_blocking(move || {
        let stream = crate::helpers::raw_request(
            &address,
            "POST /v1/ingest/event HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             Content-Length: 4050\r\nConnection: close\r\n\r\n{\"source\": ",
        );
        crate::helpers::read_answer(stream).unwrap_or_default()
    });
    // While the slow body holds the whole budget, another body is turned
    // away at once.
    actix_web::rt::time::sleep(std::time::Duration::from_millis(100)).await;
    assert_error(
        &app.post("/v1/ingest/event", &crate::helpers::event("a"))
            .await,
        StatusCode::SERVICE_UNAVAILABLE,
        "overloaded",
        "max_body_bytes_in_flight",
    );
    let answer = slow.await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("\"request_timeout\""), "{answer}");
    // Its bytes are given back.
    let (status, body) = app
        .post("/v1/ingest/event", &crate::helpers::event("a"))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

#[actix_web::test]
async fn a_merge_is_bounded_in_ids_and_in_bytes() {
    let app = crate::helpers::spawn_app_with(|s| s.policy.max_merge_bytes = 100_000).await;
    let merged = json!({"type": "semantic", "sensitivity": "low",
        "provenance": {"sources": [{"kind": "artifact", "ref": "x", "timestamp": "2025-01-01T00:00:00Z"}]},
        "payload": {"kind": "semantic", "subject": "a", "predicate": "b"}});
    let ids: Vec<String> = (0..101).map(|i| format!("r{i}")).collect();
    assert_error(
        &app.post(
            "/v1/revisions/merge",
            &json!({"ids": ids, "merged_record": merged, "actor": "a", "rationale": "r"}),
        )
        .await,
        StatusCode::BAD_REQUEST,
        "invalid_argument",
        "ids: too many ids: 101 given, maximum is 100",
    );
    // Four records of 30 kB each: 120 kB together.
    let big = "x".repeat(30_000);
    let mut ids = Vec::new();
    for _ in 0..4 {
        let body = json!({"type": "semantic", "sensitivity": "low",
            "payload": {"kind": "semantic", "subject": "a", "predicate": "b", "object": big}});
        ids.push(create(&app, body).await["id"].as_str().unwrap().to_string());
    }
    assert_error(
        &app.post(
            "/v1/revisions/merge",
            &json!({"ids": ids, "merged_record": merged, "actor": "a", "rationale": "r"}),
        )
        .await,
        StatusCode::BAD_REQUEST,
        "invalid_argument",
        "ids: the records named are too large to merge together",
    );
    for id in &ids {
        assert_eq!(app.get_record(id).await["status"], "active");
    }
    let (status, body) = app
        .post(
            "/v1/revisions/merge",
            &json!({"ids": &ids[..3], "merged_record": merged, "actor": "a", "rationale": "r"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

#[actix_web::test]
async fn a_large_answer_comes_in_pages_within_the_size_budget() {
    let app = crate::helpers::spawn_app_with(|s| s.retrieval.max_response_bytes = 65_536).await;
    let text = "y".repeat(20_000);
    let mut salience = 1.0;
    let mut created = Vec::new();
    for _ in 0..10 {
        let body = json!({"type": "semantic", "sensitivity": "low", "salience": salience,
            "payload": {"kind": "semantic", "subject": "a", "predicate": "b", "object": text}});
        created.push(create(&app, body).await["id"].as_str().unwrap().to_string());
        salience -= 0.05;
    }
    let query = json!({"trust": trust("low", &[]), "limit": 9});
    let mut pages = Vec::new();
    let mut request = query.clone();
    loop {
        let (status, body) = app.post("/v1/retrieve", &request).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let ids = crate::helpers::ids(&body);
        assert!(!ids.is_empty() && ids.len() <= 3, "{} records", ids.len());
        pages.push(ids);
        // Time passing between pages changes nothing: a continuation ranks
        // as of its first page.
        app.clock.advance(Duration::hours(6));
        match body.get("next_cursor") {
            Some(cursor) => request["cursor"] = cursor.clone(),
            None => break,
        }
    }
    assert!(pages.len() >= 3, "{pages:?}");
    let paged: Vec<String> = pages.concat();
    // The same answer as one page would have been, without the budget:
    // the nine most salient, best first, none twice.
    assert_eq!(paged, created[..9].to_vec());
    let mut bad = query.clone();
    bad["cursor"] = json!("1.2.3");
    assert_error(
        &app.post("/v1/retrieve", &bad).await,
        StatusCode::BAD_REQUEST,
        "invalid_argument",
        "cursor: not a cursor this service issued",
    );
}

#[actix_web::test]
async fn page_size_cuts_an_answer_into_pages_of_that_many() {
    let app = spawn_app().await;
    for i in 0..8 {
        let body = json!({"type": "semantic", "sensitivity": "low", "salience": 1.0 - f64::from(i) * 0.05,
            "payload": {"kind": "semantic", "subject": "billing", "predicate": "fact", "object": format!("billing fact {i}")}});
        create(&app, body).await;
    }
    for query in [
        json!({"trust": trust("low", &[]), "limit": 7}),
        json!({"trust": trust("low", &[]), "limit": 7, "task_descriptor": "billing fact"}),
    ] {
        let (_, whole) = app.post("/v1/retrieve", &query).await;
        assert!(whole.get("next_cursor").is_none(), "{whole}");
        let mut request = query.clone();
        request["page_size"] = json!(3);
        let mut pages = Vec::new();
        let mut scores = Vec::new();
        loop {
            let (status, body) = app.post("/v1/retrieve", &request).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            pages.push(crate::helpers::ids(&body));
            scores.extend(body["scores"].as_array().unwrap().iter().cloned());
            match body.get("next_cursor") {
                Some(cursor) => request["cursor"] = cursor.clone(),
                None => break,
            }
        }
        let sizes: Vec<usize> = pages.iter().map(Vec::len).collect();
        assert_eq!(sizes, [3, 3, 1], "{query}");
        assert_eq!(pages.concat(), crate::helpers::ids(&whole), "{query}");
        assert_eq!(json!(scores), whole["scores"], "{query}");
    }
    for bad in [json!(0), json!(-1), json!(1001)] {
        assert_error(
            &app.post(
                "/v1/retrieve",
                &json!({"trust": trust("low", &[]), "page_size": bad}),
            )
            .await,
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            "page_size: must be between 1 and 1000",
        );
    }
}

#[actix_web::test]
async fn no_web_page_can_drive_an_open_instance() {
    let app = spawn_app().await;
    let event = crate::helpers::event("page").to_string();
    let local = "Host: 127.0.0.1";
    let json = "Content-Type: application/json";
    // A page's "simple" requests: a form or text/plain post, or none at all.
    for content_type in [
        Some("Content-Type: text/plain"),
        Some("Content-Type: application/x-www-form-urlencoded"),
        Some("Content-Type: multipart/form-data; boundary=x"),
        None,
    ] {
        let headers: Vec<&str> = [Some(local)]
            .into_iter()
            .chain([content_type])
            .flatten()
            .collect();
        let (status, body) = raw(&app, "POST", "/v1/ingest/event", &headers, &event).await;
        assert_eq!(status, 415, "{content_type:?}: {body}");
        assert!(
            body.contains("unsupported_media_type") && body.contains("Content-Type"),
            "{body}"
        );
    }
    // A foreign Host (a page whose own name now points here).
    for path in ["/v1/retrieve", "/mcp"] {
        let (status, body) = raw(
            &app,
            "POST",
            path,
            &["Host: evil.example.com:8080", json],
            "{}",
        )
        .await;
        assert_eq!(status, 421, "{path}: {body}");
        assert!(body.contains("misdirected_request"), "{body}");
    }
    let (status, _) = raw(&app, "GET", "/ui/", &["Host: evil.example.com"], "").await;
    assert_eq!(status, 421);
    // A foreign Origin: nothing that changes state, and no MCP.
    let foreign = "Origin: http://evil.example.com";
    let (status, body) = raw(
        &app,
        "POST",
        "/v1/ingest/event",
        &[local, json, foreign],
        &event,
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains("permission_denied") && body.contains("Origin"),
        "{body}"
    );
    let rpc = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let (status, _) = raw(&app, "POST", "/mcp", &[local, json, foreign], rpc).await;
    assert_eq!(status, 403);
    let (status, _) = raw(&app, "POST", "/mcp", &[local, json, "Origin: null"], rpc).await;
    assert_eq!(status, 403);
    // Nothing of it was stored.
    assert!(app.all_records().await.is_empty());
    // Plain local clients, and the dashboard's own pages, still work.
    let (status, body) = raw(&app, "POST", "/v1/ingest/event", &[local, json], &event).await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = raw(
        &app,
        "POST",
        "/v1/ingest/event",
        &[
            "Host: localhost:8080",
            "Content-Type: application/json; charset=utf-8",
        ],
        &event,
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let own = format!("Origin: {}", app.address);
    let own_host = format!("Host: {}", app.address.trim_start_matches("http://"));
    let (status, body) = raw(&app, "POST", "/mcp", &[&own_host, json, &own], rpc).await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = raw(&app, "GET", "/healthz", &["Host: 10.1.2.3:8080"], "").await;
    assert_eq!(status, 200, "probes address the service as they reach it");
    assert_eq!(app.all_records().await.len(), 2);
}

#[actix_web::test]
async fn listed_hosts_are_answered_and_keys_do_not_lift_the_origin_check() {
    let app = crate::helpers::spawn_app_with(|s| {
        s.server.allowed_hosts = vec!["engram.internal".into()];
    })
    .await;
    let admin = app
        .make_key(
            None,
            json!({"name": "ops", "roles": ["admin"], "max_sensitivity": "hyper"}),
        )
        .await;
    let bearer = format!("Authorization: Bearer {admin}");
    let json = "Content-Type: application/json";
    let (status, body) = raw(
        &app,
        "POST",
        "/v1/retrieve",
        &["Host: engram.internal:8080", json, &bearer],
        "{}",
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let rpc = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let (status, _) = raw(
        &app,
        "POST",
        "/mcp",
        &[
            "Host: engram.internal",
            json,
            &bearer,
            "Origin: http://evil.example.com",
        ],
        rpc,
    )
    .await;
    assert_eq!(status, 403);
}
