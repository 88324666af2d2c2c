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
    }

    let out = keys(&db, &["list"]);
    let listed = stdout(&out);
    assert!(
        listed.starts_with("indexer\troles write; up to low; a; 20 requests/s"),
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
