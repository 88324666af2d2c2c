//! What clients see when storage misbehaves or is saturated.

use awc::http::StatusCode;
use engram::error::ApiError;
use serde_json::{json, Value};

use crate::helpers::{
    assert_error, create_id, event, spawn_app, spawn_app_with, trust, Deadline, Hold, Panics,
};

#[actix_web::test]
async fn a_panicking_write_job_answers_500_and_the_writer_keeps_serving() {
    let app = spawn_app().await;
    let panicked = app.writer.write(Panics).await.unwrap_err();
    let answer = ApiError::from(panicked);
    assert_eq!(answer.code.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(answer.message, "internal error", "no detail leaks");
    let (status, body) = app.post("/v1/ingest/event", &event("after")).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let id = body["record"]["id"].as_str().unwrap();
    assert_eq!(app.get_record(id).await["id"], id);
}

#[actix_web::test]
async fn reads_beyond_the_bound_answer_503_while_the_first_completes() {
    let app = spawn_app_with(|s| {
        s.retrieval.max_reads_in_flight = 1;
        s.storage.pool_size = 1;
    })
    .await;
    // Hold the only reader thread, so a retrieval stays in flight.
    let (release, wait) = std::sync::mpsc::channel::<()>();
    let hold = Hold {
        started: None,
        wait: std::sync::Arc::new(std::sync::Mutex::new(wait)),
        adds_only: false,
    };
    let reader = app.reader.clone();
    let holder = actix_web::rt::spawn(async move { reader.read(hold).await });
    let client = app.client.clone();
    let url = format!("{}/v1/retrieve", app.address);
    let first = actix_web::rt::spawn(async move {
        let mut response = client
            .post(url)
            .send_json(&json!({"trust": trust("hyper", &[])}))
            .await
            .unwrap();
        (response.status(), response.json::<Value>().await.unwrap())
    });
    let deadline = Deadline::after(10, "the first retrieval to be in flight");
    while app.read_gate.in_flight() < 1 {
        deadline.wait().await;
    }
    let refused = app
        .client
        .post(format!("{}/v1/retrieve", app.address))
        .send_json(&json!({"trust": trust("hyper", &[])}))
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(refused.headers().get("retry-after").unwrap(), "1");
    assert_error(
        &app.post(
            "/v1/retrieve/anything",
            &json!({"trust": trust("hyper", &[])}),
        )
        .await,
        StatusCode::SERVICE_UNAVAILABLE,
        "overloaded",
        "too many reads in flight",
    );
    release.send(()).unwrap();
    holder.await.unwrap().unwrap();
    let (status, body) = first.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(app.read_gate.in_flight(), 0);
}

#[actix_web::test]
async fn a_supersession_cycle_ends_the_history_walk() {
    let app = spawn_app().await;
    // No request can make a supersession cycle; stored data from
    // elsewhere (a restored or hand-edited database) can.
    let fact = |id: &str| {
        json!({"id": id, "type": "semantic", "sensitivity": "low",
               "payload": {"kind": "semantic", "subject": "a", "predicate": "b"}})
    };
    let looped = create_id(&app, fact("loop")).await;
    let newer = create_id(&app, fact("newer")).await;
    app.sql_execute(
        "INSERT INTO relations (source_key, predicate, target_id, created_at)
         SELECT key, 'supersedes', 'loop', 0 FROM records WHERE id IN ('loop', 'newer')",
    );
    // The walk stops where it would come back to a record it has seen.
    for (id, expected) in [(&looped, vec!["loop"]), (&newer, vec!["loop", "newer"])] {
        assert_eq!(app.history_ids(id).await, expected, "from {id}");
    }
}
