//! Encryption at rest: with the `sqlcipher` feature, the database files
//! hold no plaintext of a record, and the wrong key (or none) stops
//! start-up with a message that says so. Without the feature, naming a key
//! stops start-up too, rather than writing the data in the clear.

use engram::clock::Clock;
use engram::config::Settings;
use engram::startup::Application;

use crate::helpers::{start_time, test_settings};

/// Starts and stops the service on `settings`; answers why it would not
/// start, if it did not.
async fn start_error(settings: Settings) -> Option<String> {
    let (clock, _) = Clock::manual(start_time());
    match Application::build(settings, clock).await {
        Ok(app) => {
            let handle = app.handle();
            let server = actix_web::rt::spawn(app.run_until_stopped());
            handle.stop(true).await;
            server.await.unwrap().unwrap();
            None
        }
        Err(e) => Some(e.to_string()),
    }
}

#[cfg(not(feature = "sqlcipher"))]
#[actix_web::test]
async fn a_build_without_encryption_refuses_a_key_rather_than_store_in_the_clear() {
    if crate::helpers::sqlite_only("SQLCipher encryption of the SQLite file") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut settings = test_settings(&dir.path().join("engram.db"));
    let var = "ENGRAM_TEST_PLAIN_BUILD_KEY";
    std::env::set_var(var, "a key");
    settings.storage.encryption_key_env = Some(var.to_string());
    let message = start_error(settings).await.expect("refused");
    assert!(message.contains("--features sqlcipher"), "{message}");
}

#[cfg(feature = "sqlcipher")]
#[actix_web::test]
async fn an_encrypted_database_holds_no_plaintext_and_opens_with_its_key_only() {
    if crate::helpers::sqlite_only("SQLCipher encryption of the SQLite file") {
        return;
    }
    use awc::http::StatusCode;
    use serde_json::json;

    use crate::helpers::spawn_app_in;

    let dir = tempfile::tempdir().unwrap();
    let var = "ENGRAM_TEST_DB_KEY";
    std::env::set_var(var, "correct horse battery staple");
    let keyed = |s: &mut Settings| s.storage.encryption_key_env = Some(var.to_string());
    let app = spawn_app_in(dir, keyed).await;
    let secret = "platypus-ledger-4242";
    let (status, body) = app
        .post(
            "/v1/ingest/observation",
            &json!({"source": "agent", "subject": "vault", "predicate": "holds", "object": secret}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let id = body["record"]["id"].as_str().unwrap().to_string();
    let dir = app.stop().await;

    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        for needle in [secret.as_bytes(), id.as_bytes(), b"SQLite format 3"] {
            assert!(
                !bytes.windows(needle.len()).any(|w| w == needle),
                "{} holds {:?} in the clear",
                path.display(),
                String::from_utf8_lossy(needle)
            );
        }
    }

    let db = dir.path().join("engram.db");
    let mut wrong = test_settings(&db);
    std::env::set_var("ENGRAM_TEST_WRONG_KEY", "incorrect horse");
    wrong.storage.encryption_key_env = Some("ENGRAM_TEST_WRONG_KEY".to_string());
    let message = start_error(wrong).await.expect("refused");
    assert!(
        message.contains("cannot be read with this key"),
        "{message}"
    );

    let mut unset = test_settings(&db);
    unset.storage.encryption_key_env = Some("ENGRAM_TEST_UNSET_KEY".to_string());
    let message = start_error(unset).await.expect("refused");
    assert!(message.contains("ENGRAM_TEST_UNSET_KEY"), "{message}");

    let message = start_error(test_settings(&db)).await.expect("refused");
    assert!(message.contains("storage.encryption_key_env"), "{message}");

    let app = spawn_app_in(dir, keyed).await;
    let (status, body) = app
        .post(
            &format!("/v1/retrieve/{id}"),
            &json!({"trust": {"max_sensitivity": "hyper"}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["record"]["payload"]["object"], secret);
}

#[cfg(feature = "sqlcipher")]
#[actix_web::test]
async fn a_backup_of_an_encrypted_database_is_encrypted_with_the_same_key() {
    if crate::helpers::sqlite_only("SQLCipher encryption of the SQLite file") {
        return;
    }
    use awc::http::StatusCode;
    use serde_json::json;

    use crate::helpers::spawn_app_in;

    let var = "ENGRAM_TEST_BACKUP_KEY";
    std::env::set_var(var, "a backup's key");
    let keyed = |s: &mut Settings| s.storage.encryption_key_env = Some(var.to_string());
    let app = spawn_app_in(tempfile::tempdir().unwrap(), keyed).await;
    let secret = "wombat-archive-1717";
    let (status, body) = app
        .post(
            "/v1/ingest/observation",
            &json!({"source": "agent", "subject": "vault", "predicate": "holds", "object": secret}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let target = tempfile::tempdir().unwrap();
    let copy = target.path().join("engram.db");
    let report =
        engram::store::sqlite::backup::backup(&app.db_path(), &copy, Some("a backup's key"))
            .unwrap();
    assert_eq!(report.records, 1);
    let bytes = std::fs::read(&copy).unwrap();
    for needle in [secret.as_bytes(), b"SQLite format 3"] {
        assert!(!bytes.windows(needle.len()).any(|w| w == needle));
    }

    let restored = spawn_app_in(target, keyed).await;
    let (status, body) = restored
        .post(
            "/v1/retrieve",
            &json!({"trust": {"max_sensitivity": "hyper"}, "subject": "vault"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["records"][0]["payload"]["object"], secret);
}
