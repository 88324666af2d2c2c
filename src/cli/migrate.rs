//! `engram migrate --from sqlite:PATH --to postgres://…`: moves a SQLite
//! database into a new PostgreSQL one (see `store::postgres::import`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chrono::Utc;

use crate::config::Settings;
use crate::store::postgres::{self, import, PgOptions};
use crate::store::{sqlite, StoreError};

pub const MIGRATE_USAGE: &str = "\
Usage:
  engram migrate --from sqlite:PATH --to postgres://USER@HOST:PORT/DATABASE
                 [--sample N] [--config PATH]

Copies everything the SQLite database at PATH holds (records with their
audit logs, relations and vectors; API keys; job settings and runs;
consolidation state; topics) into the PostgreSQL database, which must hold
no engram data yet; its schema is made if missing. The copy is one
PostgreSQL transaction: all of it or nothing. It is then checked: every
table's row count in both, and N records (default 1000) spread over the
database read whole through both and compared. Stop the service writing to
PATH first. An encrypted database is read with the key in
storage.encryption_key_env. API keys stay usable if every PostgreSQL
instance gets the pepper they were made with (the file PATH.pepper, or
auth.pepper_env) in the variable auth.pepper_env names.";

#[derive(Debug, Clone, PartialEq)]
pub struct Migrate {
    pub from: PathBuf,
    pub to: String,
    pub sample: usize,
}

/// Parses the words after `engram migrate`.
pub fn parse_migrate(args: &[String]) -> Result<(Migrate, Option<PathBuf>), String> {
    let (mut from, mut to, mut sample, mut config) = (None, None, 1000, None);
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let mut value = |flag: &str| words.next().cloned().ok_or(format!("{flag} needs a value"));
        match word.as_str() {
            "--from" => {
                let source = value("--from")?;
                let path = source
                    .strip_prefix("sqlite:")
                    .ok_or("--from takes sqlite:PATH")?;
                if path.is_empty() {
                    return Err("--from takes sqlite:PATH".to_string());
                }
                from = Some(PathBuf::from(path));
            }
            "--to" => {
                let url = value("--to")?;
                if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
                    return Err("--to takes a postgres:// URL".to_string());
                }
                to = Some(url);
            }
            "--sample" => {
                sample = value("--sample")?
                    .parse()
                    .map_err(|_| "--sample takes a number of records")?;
            }
            "--config" => config = Some(PathBuf::from(value("--config")?)),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let command = Migrate {
        from: from.ok_or("--from sqlite:PATH is needed")?,
        to: to.ok_or("--to postgres://… is needed")?,
        sample,
    };
    Ok((command, config))
}

/// Copies and checks; answers the report to print.
pub fn run_migrate(command: Migrate, settings: &Settings) -> Result<String, String> {
    let started = Instant::now();
    let key = settings
        .storage
        .encryption_key()
        .map_err(|e| e.to_string())?;
    let mut source =
        sqlite::open_for_export(&command.from, key.as_deref()).map_err(|e| match e {
            StoreError::NotFound(path) => format!("there is no database at {path}"),
            e => format!("cannot open {}: {e}", command.from.display()),
        })?;
    let mut target = postgres::connect(&PgOptions {
        url: command.to.clone(),
        writers: 1,
        statement_timeout: Duration::from_secs(24 * 3600),
        ca_file: settings.storage.postgres_ca_file.clone(),
    })
    .map_err(|e| format!("cannot open the PostgreSQL database: {e}"))?;
    let report = import::import(
        &mut source,
        &mut target,
        Utc::now(),
        command.sample,
        |tx, key| {
            crate::service::topics::reindex(tx, key)
                .map_err(|e| StoreError::Database(e.to_string()))
        },
    )
    .map_err(|e| format!("nothing was migrated: {e}"))?;
    let mut out = format!(
        "migrated {} to PostgreSQL in {:.1} s; every table's rows counted in both, {} records \
         compared whole:\n",
        command.from.display(),
        started.elapsed().as_secs_f64(),
        report.sampled
    );
    for (table, rows) in &report.rows {
        out.push_str(&format!("  {table:<24} {rows}\n"));
    }
    out.push_str(&pepper_note(&command.from, settings));
    Ok(out)
}

/// Where the pepper of the copied API keys is, for the instances to share.
fn pepper_note(from: &Path, settings: &Settings) -> String {
    match &settings.auth.pepper_env {
        Some(var) => format!(
            "API keys: give every PostgreSQL instance the pepper in {var} (auth.pepper_env).\n"
        ),
        None => {
            let mut file = from.as_os_str().to_owned();
            file.push(".pepper");
            format!(
                "API keys: give every PostgreSQL instance the contents of {} in the variable \
                 auth.pepper_env names.\n",
                Path::new(&file).display()
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn migrate_arguments_parse_and_bad_ones_are_named() {
        let (command, config) = parse_migrate(&words(
            "--from sqlite:/d/e.db --to postgres://u@h/db --sample 5",
        ))
        .unwrap();
        assert_eq!(
            command,
            Migrate {
                from: PathBuf::from("/d/e.db"),
                to: "postgres://u@h/db".into(),
                sample: 5
            }
        );
        assert_eq!(config, None);
        for (line, named) in [
            ("--from /d/e.db --to postgres://u@h/db", "--from"),
            ("--from sqlite:/d/e.db --to mysql://h/db", "--to"),
            ("--from sqlite:/d/e.db", "--to"),
            ("--to postgres://u@h/db", "--from"),
            (
                "--from sqlite:x --to postgres://h/d --sample many",
                "--sample",
            ),
            ("--from sqlite:x --to postgres://h/d --fast", "--fast"),
        ] {
            let err = parse_migrate(&words(line)).unwrap_err();
            assert!(err.contains(named), "{line}: {err}");
        }
    }
}
