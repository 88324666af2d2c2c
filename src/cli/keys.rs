//! `engram keys create|list|revoke`: API keys, made and revoked in the
//! database the service uses (the same configuration as `engram serve`),
//! whether or not the service is running.

use crate::domain::ids::KeyName;
use std::path::PathBuf;

use chrono::Utc;

use crate::auth;
use crate::config::Settings;
use crate::domain::access::{Access, ApiKey, Role};
use crate::domain::record::Sensitivity;
use crate::domain::time::format_rfc3339;
use crate::service::keys::{self, NewKey};
use crate::store::Transaction;

pub const KEYS_USAGE: &str = "\
Usage:
  engram keys create --name NAME [--role ROLE]... [--max-sensitivity LEVEL]
                     [--scope SCOPE]... [--rate N] [--config PATH]
  engram keys list [--config PATH]
  engram keys revoke NAME [--config PATH]

ROLE: read (the default), write, revise, metrics, admin; repeat for more.
LEVEL: public, low (the default), medium, high, hyper.
SCOPE: a scope the key may see and write; none: every scope.
N: requests per second (default: auth.default_rate).

`create` prints the key's secret alone on the last line, once: engram
keeps only a hash of it. The database and the pepper are found as
`engram serve` finds them (--config, ENGRAM_CONFIG, ENGRAM_DB_PATH, ...).";

#[derive(Debug, Clone, PartialEq)]
pub enum KeysCommand {
    Create(NewKey),
    List,
    Revoke(KeyName),
}

/// Parses the words after `engram keys`; answers the command and the
/// config file given, if any.
pub fn parse_keys(args: &[String]) -> Result<(KeysCommand, Option<PathBuf>), String> {
    let mut config = None;
    let mut words = Vec::new();
    let mut flags: Vec<(String, String)> = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if let Some(flag) = arg.strip_prefix("--") {
            let (flag, value) = match flag.split_once('=') {
                Some((flag, value)) => (flag.to_string(), value.to_string()),
                None => {
                    let value = args.next().ok_or(format!("--{flag} needs a value"))?;
                    (flag.to_string(), value.clone())
                }
            };
            if flag == "config" {
                config = Some(PathBuf::from(value));
            } else {
                flags.push((flag, value));
            }
        } else {
            words.push(arg.as_str());
        }
    }
    let command = match words.as_slice() {
        ["create"] => KeysCommand::Create(new_key(&flags)?),
        ["list"] if flags.is_empty() => KeysCommand::List,
        ["revoke", name] if flags.is_empty() => KeysCommand::Revoke(
            KeyName::parse("name", name.to_string()).map_err(|e| e.to_string())?,
        ),
        [] => return Err("a command is needed: create, list or revoke".into()),
        _ => return Err(format!("cannot understand {:?}", words.join(" "))),
    };
    Ok((command, config))
}

fn new_key(flags: &[(String, String)]) -> Result<NewKey, String> {
    let mut name = String::new();
    let mut key = NewKey {
        name: KeyName::stored(String::new()),
        roles: Default::default(),
        max_sensitivity: Sensitivity::Low,
        scopes: Vec::new(),
        rate: None,
    };
    for (flag, value) in flags {
        match flag.as_str() {
            "name" => name = value.clone(),
            "role" => {
                let role = Role::parse(value).ok_or(format!(
                    "unknown role {value:?}: read, write, revise, metrics or admin"
                ))?;
                key.roles.insert(role);
            }
            "max-sensitivity" => {
                key.max_sensitivity = Sensitivity::parse(value).ok_or(format!(
                    "unknown sensitivity {value:?}: public, low, medium, high or hyper"
                ))?;
            }
            "scope" => key.scopes.push(value.clone()),
            "rate" => {
                key.rate = Some(
                    value
                        .parse()
                        .map_err(|_| format!("--rate must be a number, got {value:?}"))?,
                )
            }
            other => return Err(format!("unknown option --{other}")),
        }
    }
    if name.is_empty() {
        return Err("--name is needed".into());
    }
    key.name = KeyName::parse("name", name).map_err(|e| e.to_string())?;
    if key.roles.is_empty() {
        key.roles.insert(Role::Read);
    }
    Ok(key)
}

/// Runs the command on the settings' database; answers what to print.
pub fn run_keys(command: KeysCommand, settings: &Settings) -> Result<String, String> {
    let storage = &settings.storage;
    // A relative path names a file under the directory the command runs
    // in: say which file, and never make one just to list or revoke.
    let mut used = format!("database {}", storage.database_name());
    if storage.backend == crate::config::Backend::Sqlite {
        let path = std::path::absolute(&storage.db_path).unwrap_or(storage.db_path.clone());
        used = format!("database {}", path.display());
        if !path.exists() {
            if !matches!(command, KeysCommand::Create(_)) {
                return Err(format!(
                    "no database at {} (storage.db_path, ENGRAM_DB_PATH or --config)",
                    path.display()
                ));
            }
            used.push_str(" (new)");
        }
    }
    let mut conn = super::open_writer(settings)?;
    let now = Utc::now();
    let default_rate = settings.auth.default_rate;
    let pepper = match &command {
        KeysCommand::Create(_) => Some(auth::pepper(settings).map_err(|e| e.to_string())?),
        _ => None,
    };
    conn.begin().map_err(|e| e.to_string())?;
    let tx: &mut dyn Transaction = conn.transaction();
    let output = match command {
        KeysCommand::Create(new) => {
            let pepper = pepper.expect("made above for create");
            keys::create(tx, &Access::Open, &pepper, new, default_rate, now).map(|(key, secret)| {
                format!(
                    "created key {}\n{}\nThe secret is shown once; engram keeps only its hash.\n{secret}\n",
                    key.name,
                    describe(&key, default_rate)
                )
            })
        }
        KeysCommand::List => keys::list(tx, &Access::Open).map(|all| render(&all, default_rate)),
        KeysCommand::Revoke(name) => {
            keys::revoke(tx, &Access::Open, &name, now).map(|(_, was_active)| {
                if was_active {
                    format!("revoked key {name}\n")
                } else {
                    format!("key {name} was revoked already\n")
                }
            })
        }
    };
    match output {
        Ok(text) => {
            conn.commit().map_err(|e| e.to_string())?;
            Ok(format!("{used}\n{text}"))
        }
        Err(e) => {
            conn.rollback();
            Err(super::refusal(e))
        }
    }
}

fn describe(key: &ApiKey, default_rate: f64) -> String {
    let roles: Vec<&str> = key.grant.roles.iter().map(|r| r.as_str()).collect();
    let scopes = if key.grant.scopes.is_empty() {
        "every scope".to_string()
    } else {
        key.grant.scopes.join(", ")
    };
    let rate = match key.rate {
        Some(rate) => format!("{rate} requests/s"),
        None => format!("{default_rate} requests/s (auth.default_rate)"),
    };
    format!(
        "roles {}; up to {}; {scopes}; {rate}",
        roles.join(","),
        key.grant.max_sensitivity
    )
}

fn render(keys: &[ApiKey], default_rate: f64) -> String {
    if keys.is_empty() {
        return "no keys\n".to_string();
    }
    keys.iter()
        .map(|key| {
            let state = match key.revoked_at {
                Some(at) => format!("revoked {}", format_rfc3339(&at)),
                None => format!("created {}", format_rfc3339(&key.created_at)),
            };
            format!("{}\t{}\t{state}\n", key.name, describe(key, default_rate))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<(KeysCommand, Option<PathBuf>), String> {
        let words: Vec<String> = line.split_whitespace().map(String::from).collect();
        parse_keys(&words)
    }

    #[test]
    fn keys_commands_parse() {
        let (command, config) =
            parse("create --name indexer --role write --role read --scope a --scope=b --rate 5 --max-sensitivity medium --config /e.toml")
                .unwrap();
        let KeysCommand::Create(new) = command else {
            panic!("{command:?}")
        };
        assert_eq!(new.name.as_str(), "indexer");
        assert_eq!(new.roles.len(), 2);
        assert_eq!(new.scopes, vec!["a", "b"]);
        assert_eq!(
            (new.rate, new.max_sensitivity),
            (Some(5.0), Sensitivity::Medium)
        );
        assert_eq!(config, Some(PathBuf::from("/e.toml")));
        let KeysCommand::Create(plain) = parse("create --name r").unwrap().0 else {
            panic!()
        };
        assert_eq!(
            plain.roles.into_iter().collect::<Vec<_>>(),
            vec![Role::Read]
        );
        assert_eq!(parse("list").unwrap().0, KeysCommand::List);
        assert_eq!(
            parse("revoke r").unwrap().0,
            KeysCommand::Revoke(KeyName::stored("r".into()))
        );
        for bad in [
            "",
            "create",
            "create --name",
            "create --name a --role root",
            "list extra",
            "create --name a --bogus 1",
            "create --name a --rate fast",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }
}
