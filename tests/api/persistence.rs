use awc::http::StatusCode;
use serde_json::json;

use crate::helpers::{event, spawn_app, spawn_app_in};

#[actix_web::test]
async fn records_survive_a_restart_on_the_same_file() {
    let app = spawn_app().await;
    let mut stored = Vec::new();
    for i in 0..5 {
        let (status, body) = app
            .post("/v1/ingest/event", &event(&format!("agent-{i}")))
            .await;
        assert_eq!(status, StatusCode::CREATED);
        stored.push(body["record"].clone());
    }
    let (_, fact) = app
        .post(
            "/v1/ingest/observation",
            &json!({"source": "a", "subject": "s", "predicate": "p", "object": {"n": 1}}),
        )
        .await;
    stored.push(fact["record"].clone());
    let dir = app.stop().await;

    let app = spawn_app_in(dir, |_| {}).await;
    for record in &stored {
        assert_eq!(
            &app.get_record(record["id"].as_str().unwrap()).await,
            record
        );
    }
    assert_eq!(app.all_records().await.len(), stored.len());
}

#[actix_web::test]
async fn a_database_from_a_newer_engram_is_refused_at_start() {
    let app = spawn_app().await;
    let dir = app.stop().await;
    let conn = rusqlite::Connection::open(dir.path().join("engram.db")).unwrap();
    conn.execute(
        "INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 'later')",
        [],
    )
    .unwrap();
    drop(conn);
    let mut settings = engram::config::Settings::embedded();
    settings.server.listen = "127.0.0.1:0".into();
    settings.storage.db_path = dir.path().join("engram.db");
    let (clock, _) = engram::clock::Clock::manual(crate::helpers::start_time());
    let error = match engram::startup::Application::build(settings, clock).await {
        Ok(_) => panic!("a newer schema must be refused"),
        Err(e) => e.to_string(),
    };
    assert!(error.contains("version 999"), "{error}");
}
