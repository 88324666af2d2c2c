//! `engram migrate`: a SQLite database the service filled moved into
//! PostgreSQL, then served from there exactly as before.
//!
//! Needs the test cluster (`bash tests/postgres.sh run cargo test`).

use std::process::{Command, Output};

use awc::http::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{spawn_app_in, spawn_app_with, trust, TestApp};

async fn migrate(from: &std::path::Path, to: &str) -> Output {
    let (from, to) = (from.to_path_buf(), to.to_string());
    actix_web::rt::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_engram"))
            .arg("migrate")
            .arg("--from")
            .arg(format!("sqlite:{}", from.display()))
            .args(["--to", &to])
            .env_remove("ENGRAM_CONFIG")
            .env_remove("ENGRAM_DATABASE_URL")
            .output()
            .expect("the engram binary runs")
    })
    .await
    .unwrap()
}

/// Everything a fully trusted reader sees, to compare before and after.
async fn everything(app: &TestApp, topic: &str) -> Vec<Value> {
    let mut seen = vec![json!(app.all_records().await)];
    let (status, view) = app
        .post(
            &format!("/v1/topics/{topic}/view"),
            &json!({"trust": trust("hyper", &[])}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{view}");
    seen.push(view);
    let (status, found) = app
        .post(
            "/v1/retrieve",
            &json!({"trust": trust("hyper", &[]), "task_descriptor": "go linker cache", "limit": 5}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{found}");
    // The best match (the backends weigh weaker matches differently).
    seen.push(found["records"][0]["id"].clone());
    let (_, keys) = app.get("/v1/keys").await;
    seen.push(keys);
    let (_, jobs) = app.get("/v1/jobs").await;
    for job in jobs["jobs"].as_array().unwrap() {
        seen.push(json!([
            job["name"],
            job["schedule"],
            job["enabled"],
            job["recent_runs"]
        ]));
    }
    seen
}

#[actix_web::test]
async fn a_sqlite_database_moves_to_postgres_whole() {
    if crate::helpers::postgres_only("the target of a migration is PostgreSQL") {
        return;
    }
    // A SQLite database with some of everything; keys are made, but not
    // needed until the end.
    let open = |s: &mut engram::config::Settings| s.auth.mode = engram::config::AuthMode::Off;
    let app = spawn_app_with(|s| {
        s.storage.backend = engram::config::Backend::Sqlite;
        open(s);
    })
    .await;
    loadtests::recall::run(loadtests::recall::RecallOptions {
        url: app.address.clone(),
        dataset: std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/recall.jsonl"),
        headers: Vec::new(),
        no_vectors: false,
        test_embedder: true,
    })
    .await
    .unwrap();
    let (status, topic) = app
        .post(
            "/v1/topics/ingest",
            &json!({"trust": trust("hyper", &[]), "placement": "new_topic", "title": "Go toolchain",
                    "source": "agent", "fields": [{"name": "version", "value": "1.21"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{topic}");
    let topic = topic["topic_id"].as_str().unwrap().to_string();
    let (status, _) = app
        .put(
            "/v1/jobs/decay",
            &json!({"schedule": "0 */30 * * * *", "enabled": true}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    app.run_job("consolidation").await;
    app.run_job("decay").await;
    let admin = app
        .make_key(None, json!({"name": "ops", "roles": ["admin"]}))
        .await;
    // An erasure within one scope, and an admin of that scope alone, who
    // finds it in the log by the scope it was made in.
    let (status, _) = app
        .post(
            "/v1/ingest/event",
            &json!({"source": "a", "event_kind": "note", "ref": "r", "scope": "gone"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, erased) = app
        .post(
            "/v1/erase",
            &json!({"scope": "gone", "actor": "dpo", "rationale": "left",
                    "trust": trust("hyper", &["gone"])}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{erased}");
    let scoped_admin = app
        .make_key(
            None,
            json!({"name": "gone-ops", "roles": ["admin"], "scopes": ["gone"], "max_sensitivity": "hyper"}),
        )
        .await;
    let before = everything(&app, &topic).await;
    let source = app.stop().await;

    // Into a new PostgreSQL database (named for a directory of its own).
    let target_dir = tempfile::tempdir().unwrap();
    let url = crate::helpers::postgres_url_for(target_dir.path()).unwrap();
    let out = migrate(&source.path().join("engram.db"), &url).await;
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(report.contains("records compared whole"), "{report}");
    assert!(
        report.lines().any(|l| l.trim().starts_with("audit_log")),
        "{report}"
    );

    // Served from PostgreSQL: the same answers.
    let app = spawn_app_in(target_dir, open).await;
    let after = everything(&app, &topic).await;
    for (i, (a, b)) in after.iter().zip(&before).enumerate() {
        if a != b {
            let first = match (a.as_array(), b.as_array()) {
                (Some(a), Some(b)) if a.len() == b.len() => a
                    .iter()
                    .zip(b)
                    .find(|(x, y)| x != y)
                    .map(|(x, y)| format!("{x}\n  was {y}"))
                    .unwrap_or_default(),
                _ => format!("{a}\n  was {b}"),
            };
            panic!("answer {i} differs after the move: {first}");
        }
    }
    assert_eq!(after.len(), before.len());
    // New rows are numbered after the copied ones.
    let (status, body) = app
        .post("/v1/ingest/event", &crate::helpers::event("after"))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    // The key made on SQLite opens the service on PostgreSQL.
    let app = spawn_app_in(app.stop().await, |_| {}).await;
    let (status, _, _) = app.send("GET", "/v1/jobs", None, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _, _) = app.send("GET", "/v1/jobs", None, Some(&admin)).await;
    assert_eq!(status, StatusCode::OK);
    let (status, log, _) = app
        .send("GET", "/v1/erasures", None, Some(&scoped_admin))
        .await;
    assert_eq!(status, StatusCode::OK, "{log}");
    assert_eq!(log["erasures"].as_array().unwrap().len(), 1, "{log}");
    assert_eq!(log["erasures"][0]["id"], erased["erasure_id"], "{log}");

    // A database that holds data is never migrated into.
    let again = migrate(&source.path().join("engram.db"), &url).await;
    assert_eq!(again.status.code(), Some(1), "{again:?}");
    assert!(String::from_utf8_lossy(&again.stderr).contains("not empty"));
}
