//! `engram backup PATH`: a consistent copy of the service's database,
//! taken while it serves.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::config::Settings;
use crate::store::sqlite::backup;

pub const BACKUP_USAGE: &str = "\
Usage:
  engram backup PATH [--config PATH]

Copies the database the service uses (found as `engram serve` finds it:
--config, ENGRAM_CONFIG, ENGRAM_DB_PATH, ...) to PATH, which must not
exist, while the service goes on serving. The copy is one consistent
snapshot, checked with SQLite's integrity check before it is named PATH.
An encrypted database is copied encrypted, with the same key. API keys are
stored as hashes with the pepper: the pepper file beside the database is
copied beside the copy (PATH.pepper); a pepper given in auth.pepper_env
must be kept with the copy by whoever set it.";

/// Parses the words after `engram backup`: the destination and the config
/// file given, if any.
pub fn parse_backup(args: &[String]) -> Result<(PathBuf, Option<PathBuf>), String> {
    let mut config = None;
    let mut destination = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if arg == "--config" {
            config = Some(PathBuf::from(
                args.next().ok_or("--config needs a file path")?,
            ));
        } else if let Some(path) = arg.strip_prefix("--config=") {
            config = Some(PathBuf::from(path));
        } else if arg.starts_with("--") {
            return Err(format!("unknown option {arg:?}"));
        } else if destination.replace(PathBuf::from(arg)).is_some() {
            return Err("one destination only".to_string());
        }
    }
    let destination = destination.ok_or("the path of the copy is needed")?;
    Ok((destination, config))
}

/// Makes the copy; answers what to print.
pub fn run_backup(destination: &Path, settings: &Settings) -> Result<String, String> {
    let storage = &settings.storage;
    if storage.backend == crate::config::Backend::Postgres {
        return Err(format!(
            "engram backup copies SQLite databases; back up the PostgreSQL database {} with \
             PostgreSQL's own tools: pg_dump --format=custom (a consistent copy while engram \
             runs), or continuous archiving for point-in-time recovery",
            storage.database_name()
        ));
    }
    let key = storage.encryption_key().map_err(|e| e.to_string())?;
    let started = Instant::now();
    let report =
        backup::backup(&storage.db_path, destination, key.as_deref()).map_err(|e| e.to_string())?;
    let pepper = settings.pepper_path();
    let pepper_note = if settings.auth.pepper_env.is_none() && pepper.is_file() {
        let mut copy = destination.as_os_str().to_owned();
        copy.push(".pepper");
        let copy = PathBuf::from(copy);
        std::fs::copy(&pepper, &copy).map_err(|e| {
            format!(
                "the copy is made, but not its pepper file ({}): {e}",
                copy.display()
            )
        })?;
        format!("; the pepper file copied to {}", copy.display())
    } else {
        String::new()
    };
    Ok(format!(
        "backed up {} to {}: {} records, {} audit entries, schema version {}, {:.1} MB in {:.2} s; integrity ok{pepper_note}\n",
        storage.db_path.display(),
        destination.display(),
        report.records,
        report.audit_entries,
        report.schema_version,
        report.bytes as f64 / 1_048_576.0,
        started.elapsed().as_secs_f64()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backup_arguments_parse() {
        let words = |line: &str| {
            line.split_whitespace()
                .map(String::from)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            parse_backup(&words("/b/copy.db --config /e.toml")).unwrap(),
            (PathBuf::from("/b/copy.db"), Some(PathBuf::from("/e.toml")))
        );
        assert_eq!(
            parse_backup(&words("--config=/e.toml c.db")).unwrap(),
            (PathBuf::from("c.db"), Some(PathBuf::from("/e.toml")))
        );
        for bad in ["", "a.db b.db", "a.db --force", "--config"] {
            assert!(parse_backup(&words(bad)).is_err(), "{bad:?}");
        }
    }
}
