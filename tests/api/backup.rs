//! `engram backup`: a copy of the database taken from another process
//! while the service writes, which then serves as the database.

use std::path::Path;
use std::process::{Command, Output};

use awc::http::StatusCode;
use serde_json::json;

use crate::helpers::{event, spawn_app, spawn_app_in};

async fn backup(db: &Path, args: Vec<String>) -> Output {
    let db = db.to_path_buf();
    actix_web::rt::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_engram"))
            .arg("backup")
            .args(args)
            .env("ENGRAM_DB_PATH", db)
            .env_remove("ENGRAM_CONFIG")
            .output()
            .expect("the engram binary runs")
    })
    .await
    .unwrap()
}

#[actix_web::test]
async fn a_backup_taken_under_writes_is_a_whole_database_with_its_keys() {
    if crate::helpers::sqlite_only("SQLite's online backup API") {
        return;
    }
    let app = spawn_app().await;
    let admin = app
        .make_key(
            None,
            json!({"name": "root", "roles": ["admin"], "max_sensitivity": "hyper", "rate": 100000}),
        )
        .await;
    for _ in 0..50 {
        let (status, _, _) = app
            .send(
                "POST",
                "/v1/ingest/event",
                Some(&event("agent")),
                Some(&admin),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED);
    }

    // Writes go on while the copy is taken.
    let target = tempfile::tempdir().unwrap();
    let copy = target.path().join("engram.db");
    let writes = {
        let (address, admin) = (app.address.clone(), admin.clone());
        actix_web::rt::spawn(async move {
            let client = awc::Client::default();
            let mut stored = 0;
            for _ in 0..200 {
                let answer = client
                    .post(format!("{address}/v1/ingest/event"))
                    .insert_header(("authorization", format!("Bearer {admin}")))
                    .send_json(&event("agent"))
                    .await
                    .unwrap();
                assert_eq!(answer.status(), StatusCode::CREATED);
                stored += 1;
            }
            stored
        })
    };
    let out = backup(&app.db_path(), vec![copy.display().to_string()]).await;
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(said.contains("integrity ok"), "{said}");
    assert!(said.contains("the pepper file copied"), "{said}");
    assert_eq!(writes.await.unwrap(), 200);

    // The copy serves: the records stored before it began, and the key,
    // whose hash needs the pepper copied with it.
    let (_, before, _) = app.send("GET", "/v1/metrics", None, Some(&admin)).await;
    assert_eq!(before["total_records"], 250);
    let restored = spawn_app_in(target, |_| {}).await;
    let (status, metrics, _) = restored
        .send("GET", "/v1/metrics", None, Some(&admin))
        .await;
    assert_eq!(status, StatusCode::OK, "{metrics}");
    let copied = metrics["total_records"].as_u64().unwrap();
    assert!((50..=250).contains(&copied), "{copied} records in the copy");
    let reported: u64 = said
        .split(": ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no record count in {said}"));
    assert_eq!(reported, copied, "the count said is the copy's");
}

#[actix_web::test]
async fn a_backup_never_replaces_a_file_and_needs_a_database() {
    if crate::helpers::sqlite_only("SQLite's online backup API") {
        return;
    }
    let app = spawn_app().await;
    let dir = tempfile::tempdir().unwrap();
    let existing = dir.path().join("kept.db");
    std::fs::write(&existing, b"an earlier backup").unwrap();
    let out = backup(&app.db_path(), vec![existing.display().to_string()]).await;
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("never replaces"));
    assert_eq!(std::fs::read(&existing).unwrap(), b"an earlier backup");

    let out = backup(
        &dir.path().join("missing.db"),
        vec![dir.path().join("copy.db").display().to_string()],
    )
    .await;
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no database"));
    assert!(!dir.path().join("copy.db").exists());

    let out = backup(&app.db_path(), vec![]).await;
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

#[actix_web::test]
async fn on_postgres_the_backup_command_points_to_pg_dump() {
    if crate::helpers::postgres_admin_url().is_none() {
        return;
    }
    let app = spawn_app().await;
    let database = app.database_env();
    let out = actix_web::rt::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_engram"))
            .args(["backup", "/tmp/never-written.db"])
            .envs(database)
            .env_remove("ENGRAM_CONFIG")
            .output()
            .expect("the engram binary runs")
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let message = String::from_utf8_lossy(&out.stderr);
    assert!(message.contains("pg_dump"), "{message}");
    assert!(!Path::new("/tmp/never-written.db").exists());
}
