//! API keys: `engram keys` on a database, as an operator runs it.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

fn keys(db: &Path, args: &[&str]) -> Output {
    let database = crate::helpers::database_env_for(db);
    Command::new(env!("CARGO_BIN_EXE_engram"))
        .arg("keys")
        .args(args)
        .envs(database)
        .env_remove("ENGRAM_CONFIG")
        .output()
        .expect("the engram binary runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn keys_are_made_listed_and_revoked_and_only_a_hash_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("engram.db");
    let out = keys(
        &db,
        &[
            "create", "--name", "indexer", "--role", "write", "--scope", "a", "--rate", "20",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    let secret = text.lines().last().unwrap().to_string();
    assert!(
        secret.starts_with("engram_") && secret.len() == 71,
        "{text}"
    );
    // On PostgreSQL the pepper comes from the environment; on SQLite it
    // is a file beside the database, made private.
    if crate::helpers::postgres_admin_url().is_none() {
        let pepper = dir.path().join("engram.db.pepper");
        let mode = std::fs::metadata(&pepper).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // The database too (its log and shared memory take its mode).
        let mode = std::fs::metadata(&db).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    let out = keys(&db, &["list"]);
    let listed = stdout(&out);
    assert!(
        listed.contains("\nindexer\troles write; up to low; a; 20 requests/s"),
        "{listed}"
    );
    assert!(!listed.contains(&secret));

    // The secret is nowhere in the database.
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        let needle = secret.as_bytes();
        assert!(!bytes.windows(needle.len()).any(|w| w == needle));
    }
    if let Some(url) = crate::helpers::postgres_url_for(dir.path()) {
        let needle = secret.clone();
        let found: i64 = crate::helpers::with_postgres(&url, async move |client| {
            client
                .query_one(
                    "SELECT COUNT(*) FROM api_keys
                     WHERE strpos(name || roles || scopes_json || encode(hash, 'escape'), $1) > 0",
                    &[&needle],
                )
                .await
                .unwrap()
                .get(0)
        });
        assert_eq!(found, 0);
    }

    let out = keys(&db, &["create", "--name", "indexer"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("never reused"));

    assert!(keys(&db, &["revoke", "indexer"]).status.success());
    assert!(stdout(&keys(&db, &["list"])).contains("\trevoked "));
    let out = keys(&db, &["revoke", "ghost"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no key named ghost"));

    let out = keys(&db, &["create", "--name", "x", "--role", "root"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown role"));
}

/// `engram keys` says which database it used, never makes one just to
/// list or revoke, and shows the rate a key without one is held to.
#[test]
fn keys_name_their_database_and_list_nothing_from_a_missing_one() {
    if crate::helpers::postgres_admin_url().is_some() {
        return; // the SQLite file's path is what this is about
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("engram.db");
    for command in [&["list"][..], &["revoke", "ops"]] {
        let out = keys(&db, command);
        assert_eq!(out.status.code(), Some(1), "{command:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("no database at {}", db.display())),
            "{err}"
        );
        assert!(!db.exists(), "{command:?} made a database");
    }
    let out = keys(&db, &["create", "--name", "ops"]);
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    assert!(
        text.starts_with(&format!("database {} (new)\n", db.display())),
        "{text}"
    );
    assert!(
        text.contains("100 requests/s (auth.default_rate)"),
        "{text}"
    );
    let listed = stdout(&keys(&db, &["list"]));
    assert!(
        listed.starts_with(&format!("database {}\n", db.display())),
        "{listed}"
    );
}
