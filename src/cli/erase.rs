//! `engram erase`: records removed for good, on the database the service
//! uses (the same configuration as `engram serve`), whether or not the
//! service is running; the same erasure as `POST /v1/erase` by an admin
//! that sees everything.

use std::path::PathBuf;

use chrono::Utc;

use crate::config::Settings;
use crate::domain::erasure::{Erasure, Selector, SelectorFields};
use crate::domain::trust::Caller;
use crate::service::erasure::erase;

pub const ERASE_USAGE: &str = "\
Usage:
  engram erase (--scope NAME | --source NAME | --subject TEXT |
                --conversation ID | --ids FILE)
               --rationale TEXT [--actor NAME] [--dry-run] [--config PATH]

Erases for good the records of a scope, those a source made, the facts
about a subject (and topics of that title), the turns of a conversation,
or the records whose ids FILE lists (one per line), with the records made
from them. --dry-run changes
nothing and prints the same report. --actor defaults to engram-cli. The
database is found as `engram serve` finds it (--config, ENGRAM_CONFIG,
ENGRAM_DB_PATH, ...).";

/// Parses the words after `engram erase`; answers the erasure and the
/// config file given, if any.
pub fn parse_erase(args: &[String]) -> Result<(Erasure, Option<PathBuf>), String> {
    let mut config = None;
    let mut fields = SelectorFields::default();
    let (mut actor, mut rationale, mut dry_run) = (Some("engram-cli".to_string()), None, false);
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if arg == "--dry-run" {
            dry_run = true;
            continue;
        }
        let Some(flag) = arg.strip_prefix("--") else {
            return Err(format!("cannot understand {arg:?}"));
        };
        let (flag, value) = match flag.split_once('=') {
            Some((flag, value)) => (flag.to_string(), value.to_string()),
            None => (
                flag.to_string(),
                args.next()
                    .ok_or(format!("--{flag} needs a value"))?
                    .clone(),
            ),
        };
        match flag.as_str() {
            "config" => config = Some(PathBuf::from(value)),
            "scope" => fields.scope = Some(value),
            "source" => fields.source = Some(value),
            "subject" => fields.subject = Some(value),
            "conversation" => fields.conversation_id = Some(value),
            "ids" => fields.ids = Some(read_ids(&value)?),
            "actor" => actor = Some(value),
            "rationale" => rationale = Some(value),
            other => return Err(format!("unknown option --{other}")),
        }
    }
    let checked = Selector::checked(fields)
        .and_then(|selector| Erasure::checked(selector, actor, rationale, dry_run));
    let erasure = checked.map_err(|e| {
        let flag = match e.field.as_str() {
            "selector" => "one of --scope, --source, --subject, --conversation, --ids".to_string(),
            "conversation_id" => "--conversation".to_string(),
            field => format!("--{}", field.split('[').next().unwrap_or(field)),
        };
        format!("{flag}: {}", e.message)
    })?;
    Ok((erasure, config))
}

/// The ids of `path`, one per line (blank lines left out).
fn read_ids(path: &str) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("--ids {path}: {e}"))?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(str::to_string)
        .collect())
}

/// Runs the erasure on the settings' database; answers the report.
pub fn run_erase(erasure: Erasure, settings: &Settings) -> Result<String, String> {
    let storage = &settings.storage;
    if storage.backend == crate::config::Backend::Sqlite && !storage.db_path.exists() {
        return Err(format!(
            "no database at {} (storage.db_path, ENGRAM_DB_PATH or --config)",
            storage.db_path.display()
        ));
    }
    let mut conn = super::open_writer(settings)?;
    conn.begin().map_err(|e| e.to_string())?;
    let caller = Caller::unrestricted(Some(erasure.actor.clone()));
    let erased = erase(conn.transaction(), &caller, Utc::now(), &erasure);
    match erased {
        Ok(report) => {
            conn.commit().map_err(|e| e.to_string())?;
            if !erasure.dry_run {
                conn.scrub().map_err(|e| e.to_string())?;
            }
            serde_json::to_string_pretty(&report)
                .map(|json| format!("{json}\n"))
                .map_err(|e| e.to_string())
        }
        Err(e) => {
            conn.rollback();
            Err(super::refusal(e))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn one_selector_and_a_rationale_are_needed() {
        let (erasure, config) =
            parse_erase(&words("--scope t --rationale gdpr --dry-run")).unwrap();
        assert_eq!(erasure.selector, Selector::Scope("t".into()));
        assert_eq!(erasure.actor, "engram-cli");
        assert!(erasure.dry_run && config.is_none());
        let none = parse_erase(&words("--rationale r")).unwrap_err();
        assert!(none.starts_with("one of --scope"), "{none}");
        let why = parse_erase(&words("--source bot")).unwrap_err();
        assert!(why.starts_with("--rationale"), "{why}");
        assert!(parse_erase(&words("--scope t --rationale r --force")).is_err());
        let (erasure, _) = parse_erase(&words("--conversation chat-1 --rationale r")).unwrap();
        assert_eq!(
            erasure.selector,
            Selector::Conversation(crate::domain::ids::ConversationId::stored("chat-1".into()))
        );
        let long = format!("--conversation {} --rationale r", "x".repeat(300));
        let refused = parse_erase(&words(&long)).unwrap_err();
        assert!(refused.starts_with("--conversation"), "{refused}");
    }
}
