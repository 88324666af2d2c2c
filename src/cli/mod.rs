//! Operator commands: `engram jobs …` against a running server's job API,
//! `engram keys …` (keys.rs), `engram erase …` (erase.rs), `engram backup
//! …` (backup.rs) and `engram migrate …` (migrate.rs) on the database
//! itself.

pub mod backup;
pub mod erase;
pub mod keys;
pub mod migrate;

use std::time::Duration;

use crate::config::Settings;
use crate::service::ServiceError;
use crate::store::{self, WriteConnection};

use serde_json::{json, Value};

/// The write connection to the settings' database, as `engram serve`
/// opens it (schema brought up to date).
fn open_writer(settings: &Settings) -> Result<Box<dyn WriteConnection>, String> {
    let storage = &settings.storage;
    let opened = store::open(
        storage,
        settings.retrieval.embedding_dimensions(),
        storage.encryption_key().map_err(|e| e.to_string())?,
    )
    .map_err(|e| format!("cannot open {}: {e}", storage.database_name()))?;
    Ok(opened.writer)
}

/// A refused operation as a command prints it: the field, then why.
fn refusal(error: ServiceError) -> String {
    match error {
        ServiceError::Invalid(v) => format!("{}: {}", v.field, v.message),
        other => other.to_string(),
    }
}

pub const JOBS_USAGE: &str = "\
Usage:
  engram jobs list [--url URL] [--key SECRET]
  engram jobs set <name> [--schedule \"<6-field cron>\"] [--enabled true|false] [--url URL] [--key SECRET]
  engram jobs run <name> [--url URL] [--key SECRET]

URL defaults to ENGRAM_URL, or http://127.0.0.1:8080. Once the service has
an API key, the jobs need an admin key's secret: ENGRAM_API_KEY, or --key
(which other users of the machine can see in its process list).";

#[derive(Debug, Clone, PartialEq)]
pub enum JobsCommand {
    List,
    Set {
        name: String,
        schedule: Option<String>,
        enabled: Option<bool>,
    },
    Run {
        name: String,
    },
}

/// A running service, as a command reaches it.
#[derive(Debug, Clone, PartialEq)]
pub struct Service {
    pub url: String,
    /// The API key's secret to send, if any.
    pub key: Option<String>,
}

/// Parses the words after `engram jobs`; answers the command and the
/// service to send it to.
pub fn parse_jobs(args: &[String]) -> Result<(JobsCommand, Service), String> {
    let mut url =
        std::env::var("ENGRAM_URL").unwrap_or_else(|_| "http://127.0.0.1:8080".to_string());
    let mut key = std::env::var("ENGRAM_API_KEY")
        .ok()
        .filter(|k| !k.trim().is_empty());
    let mut positional = Vec::new();
    let mut schedule = None;
    let mut enabled = None;
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let mut value = |flag: &str| words.next().cloned().ok_or(format!("{flag} needs a value"));
        match word.as_str() {
            "--url" => url = value("--url")?,
            "--key" => {
                let secret = value("--key")?;
                if secret.trim().is_empty() {
                    return Err("--key needs a secret".to_string());
                }
                key = Some(secret);
            }
            "--schedule" => schedule = Some(value("--schedule")?),
            "--enabled" => {
                enabled = Some(match value("--enabled")?.as_str() {
                    "true" => true,
                    "false" => false,
                    other => return Err(format!("--enabled takes true or false, got {other:?}")),
                })
            }
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag:?}")),
            _ => positional.push(word.clone()),
        }
    }
    let url = url.trim_end_matches('/').to_string();
    let command = match positional.as_slice() {
        [list] if list == "list" => JobsCommand::List,
        [set, name] if set == "set" => {
            if schedule.is_none() && enabled.is_none() {
                return Err("jobs set needs --schedule and/or --enabled".to_string());
            }
            JobsCommand::Set {
                name: name.clone(),
                schedule,
                enabled,
            }
        }
        [run, name] if run == "run" => JobsCommand::Run { name: name.clone() },
        _ => return Err("expected list, set <name> or run <name>".to_string()),
    };
    Ok((command, Service { url, key }))
}

/// Runs the command; answers what to print, or the error to report.
pub async fn run_jobs(command: JobsCommand, service: &Service) -> Result<String, String> {
    let url = &service.url;
    let mut client = awc::Client::builder().timeout(Duration::from_secs(3600));
    if let Some(key) = &service.key {
        client = client.bearer_auth(key);
    }
    let client = client.finish();
    let request = match &command {
        JobsCommand::List => client.get(format!("{url}/v1/jobs")).send().await,
        JobsCommand::Set {
            name,
            schedule,
            enabled,
        } => {
            let mut body = json!({});
            if let Some(schedule) = schedule {
                body["schedule"] = json!(schedule);
            }
            if let Some(enabled) = enabled {
                body["enabled"] = json!(enabled);
            }
            client
                .put(format!("{url}/v1/jobs/{name}"))
                .send_json(&body)
                .await
        }
        JobsCommand::Run { name } => {
            client
                .post(format!("{url}/v1/jobs/{name}/run"))
                .send()
                .await
        }
    };
    let mut response = request.map_err(|e| format!("cannot reach {url}: {e}"))?;
    let status = response.status();
    let bytes = response
        .body()
        .await
        .map_err(|e| format!("reading the answer: {e}"))?;
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    if !status.is_success() {
        let message = body["error"]["message"].as_str().unwrap_or("no details");
        return Err(format!("{status}: {message}"));
    }
    Ok(match command {
        JobsCommand::List => render_jobs(&body["jobs"]),
        JobsCommand::Set { .. } => render_jobs(&json!([body["job"]])),
        JobsCommand::Run { .. } => serde_json::to_string_pretty(&body).unwrap_or_default(),
    })
}

fn render_jobs(jobs: &Value) -> String {
    let mut rows = vec![[
        "JOB".to_string(),
        "ENABLED".to_string(),
        "SCHEDULE".to_string(),
        "NEXT RUN".to_string(),
        "LAST RUN".to_string(),
    ]];
    for job in jobs.as_array().into_iter().flatten() {
        let last = match &job["last_run"] {
            Value::Null => "never".to_string(),
            run => match run.get("error") {
                Some(error) => format!("{} failed: {}", text(&run["finished_at"]), text(error)),
                None => format!(
                    "{} ({} ms) {}",
                    text(&run["finished_at"]),
                    run["duration_ms"],
                    run["result"]
                ),
            },
        };
        rows.push([
            text(&job["name"]),
            text(&job["enabled"]),
            text(&job["schedule"]),
            text(&job["next_run"]),
            last,
        ]);
    }
    table(&rows)
}

/// Rows as aligned columns, each as wide as its widest cell; the last
/// column is not padded.
fn table<const N: usize>(rows: &[[String; N]]) -> String {
    let mut widths = [0; N];
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i + 1 == N {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<width$}  ", width = widths[i]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "-".to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn jobs_commands_parse() {
        let (command, service) = parse_jobs(&words("list --url http://h:1/ --key s3cret")).unwrap();
        assert_eq!(command, JobsCommand::List);
        assert_eq!(service.url, "http://h:1");
        assert_eq!(service.key.as_deref(), Some("s3cret"));
        assert!(parse_jobs(&words("list --key")).is_err());
        let mut args = words("set decay --enabled false --schedule");
        args.push("0 */5 * * * *".into());
        let (command, _) = parse_jobs(&args).unwrap();
        assert_eq!(
            command,
            JobsCommand::Set {
                name: "decay".into(),
                schedule: Some("0 */5 * * * *".into()),
                enabled: Some(false)
            }
        );
        assert!(parse_jobs(&words("set decay")).is_err());
        assert!(parse_jobs(&words("run")).is_err());
        assert!(parse_jobs(&words("set decay --enabled maybe")).is_err());
    }

    #[test]
    fn the_jobs_table_lines_up_whatever_the_cell_widths() {
        let jobs = json!([
            {"name": "decay", "enabled": true, "schedule": "0 */5 * * * *",
             "next_run": "2026-01-01T00:05:00.123456Z", "last_run": null},
            {"name": "consolidation", "enabled": false, "schedule": "0 0 */6 * * * *",
             "next_run": null,
             "last_run": {"finished_at": "2026-01-01T00:00:00Z", "duration_ms": 12, "result": {}}}
        ]);
        let out = render_jobs(&jobs);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3);
        // Every column starts at the same offset on every line.
        for header in ["ENABLED", "SCHEDULE", "NEXT RUN", "LAST RUN"] {
            let at = lines[0].find(header).unwrap();
            for line in &lines[1..] {
                assert_eq!(&line[at - 2..at], "  ", "{header} in {line:?}\n{out}");
                assert_ne!(&line[at..at + 1], " ", "{header} in {line:?}\n{out}");
            }
        }
    }
}
