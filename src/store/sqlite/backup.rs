//! `engram backup`: a consistent copy of a database in use, made with
//! SQLite's online backup API while the service goes on serving.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::backup::{Backup, StepResult};
use rusqlite::{Connection, OpenFlags};

use super::{check_readable, unlock};
use crate::store::error::StoreError;

/// What a backup copied, checked on the copy.
#[derive(Debug, Clone, PartialEq)]
pub struct BackupReport {
    pub bytes: u64,
    pub records: i64,
    pub audit_entries: i64,
    pub schema_version: i64,
}

/// Copies the database at `source` to `destination`, which must not exist.
///
/// The copy is taken in one step, from one read snapshot: with WAL the
/// service's writer goes on meanwhile, and the copy is the database as it
/// stood at one commit. (Copying a few pages at a time would let writes
/// in between restart the copy, without end under steady load.) It is
/// written beside `destination` and renamed into place only once it passed
/// SQLite's integrity check and is on disk, so a failed or interrupted
/// backup never leaves a file under that name. An encrypted database is
/// copied encrypted, with the same key.
pub fn backup(
    source: &Path,
    destination: &Path,
    key: Option<&str>,
) -> Result<BackupReport, StoreError> {
    let failed = |what: &str, e: &dyn std::fmt::Display| StoreError::Backup(format!("{what}: {e}"));
    if !source.is_file() {
        return Err(StoreError::Backup(format!(
            "there is no database at {}",
            source.display()
        )));
    }
    if destination.exists() {
        return Err(StoreError::Backup(format!(
            "{} exists; a backup never replaces a file",
            destination.display()
        )));
    }
    let from = Connection::open_with_flags(
        source,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    unlock(&from, key)?;
    check_readable(&from, key)?;
    from.busy_timeout(Duration::from_secs(10))?;

    let partial = partial_path(destination);
    // Left by an interrupted backup of ours: never a finished one.
    let _ = std::fs::remove_file(&partial);
    let mut to = Connection::open(&partial).map_err(|e| failed("cannot create the copy", &e))?;
    unlock(&to, key)?;
    let copied = (|| {
        {
            let copy = Backup::new(&from, &mut to)?;
            loop {
                match copy.step(-1)? {
                    StepResult::Done => break,
                    // The source is locked for a moment (a checkpoint
                    // truncating the WAL): try again.
                    _ => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        }
        let check: String = to.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
        if check != "ok" {
            return Err(StoreError::Backup(format!(
                "the copy fails SQLite's integrity check: {check}"
            )));
        }
        let count = |sql: &str| to.query_row(sql, [], |r| r.get::<_, i64>(0));
        Ok(BackupReport {
            bytes: 0,
            records: count("SELECT count(*) FROM records")?,
            audit_entries: count("SELECT count(*) FROM audit_log")?,
            schema_version: count("SELECT coalesce(max(version), 0) FROM schema_migrations")?,
        })
    })();
    drop(to);
    let report = match copied {
        Ok(report) => report,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            return Err(e);
        }
    };
    let file = std::fs::File::open(&partial).map_err(|e| failed("cannot reopen the copy", &e))?;
    file.sync_all()
        .map_err(|e| failed("cannot write the copy to disk", &e))?;
    let bytes = file
        .metadata()
        .map_err(|e| failed("cannot read the copy", &e))?
        .len();
    std::fs::rename(&partial, destination).map_err(|e| failed("cannot name the copy", &e))?;
    if let Some(dir) = destination.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Ok(dir) = std::fs::File::open(dir) {
            let _ = dir.sync_all();
        }
    }
    Ok(BackupReport { bytes, ..report })
}

fn partial_path(destination: &Path) -> PathBuf {
    let mut name = destination.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    destination.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_is_made_checked_and_never_over_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("engram.db");
        {
            let mut conn = Connection::open(&source).unwrap();
            super::super::migrations::run(&mut conn).unwrap();
        }
        let copy = dir.path().join("copy.db");
        let report = backup(&source, &copy, None).unwrap();
        assert_eq!(report.records, 0);
        assert_eq!(
            report.schema_version,
            super::super::migrations::latest_version()
        );
        assert!(report.bytes > 0);
        assert!(!partial_path(&copy).exists());

        let refused = backup(&source, &copy, None).unwrap_err().to_string();
        assert!(refused.contains("never replaces"), "{refused}");
        let missing = backup(&dir.path().join("none.db"), &dir.path().join("x.db"), None)
            .unwrap_err()
            .to_string();
        assert!(missing.contains("no database"), "{missing}");
        assert!(!dir.path().join("none.db").exists(), "nothing is created");
    }
}
