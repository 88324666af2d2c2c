//! API keys: `engram keys` on a database, as an operator runs it.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

fn keys(db: &Path, args: &[&str]) -> Output {
    let (variable, database) = crate::helpers::database_env_for(db);
    Command::new(env!("CARGO_BIN_EXE_engram"))
        .arg("keys")
        .args(args)
        .env(variable, database)
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
    let pepper = dir.path().join("engram.db.pepper");
    let mode = std::fs::metadata(&pepper).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    let out = keys(&db, &["list"]);
    let listed = stdout(&out);
    assert!(
        listed.starts_with("indexer\troles write; up to low; a; 20 requests/s"),
        "{listed}"
    );
    assert!(!listed.contains(&secret));

    // The secret is nowhere in the database's files.
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        let needle = secret.as_bytes();
        assert!(!bytes.windows(needle.len()).any(|w| w == needle));
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
