//! What the real binary logs about a request beyond the access log: a slow
//! request names its route and its key, and splits its time between the
//! queues its work waited in and the running of that work off the HTTP
//! worker.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::crash::start_with;

/// The value of `field=` on `line`, as a number.
fn number(line: &str, field: &str) -> f64 {
    let at = line
        .find(&format!(" {field}="))
        .unwrap_or_else(|| panic!("no {field} in {line}"));
    line[at + field.len() + 2..]
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{field} is no number in {line}"))
}

#[actix_web::test]
async fn a_slow_request_is_logged_with_its_route_key_and_where_its_time_went() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("engram.db");
    let log = dir.path().join("engram.log");
    let mut env = crate::helpers::database_env_for(&db);
    let made = Command::new(env!("CARGO_BIN_EXE_engram"))
        .args(["keys", "create", "--name", "slow-agent"])
        .args(["--role", "read", "--role", "write"])
        .envs(env.clone())
        .env_remove("ENGRAM_CONFIG")
        .output()
        .expect("the engram binary runs");
    assert!(made.status.success(), "{made:?}");
    let secret = String::from_utf8_lossy(&made.stdout)
        .lines()
        .last()
        .unwrap()
        .to_string();
    // Every request is slow enough.
    env.push(("ENGRAM_TELEMETRY__SLOW_REQUEST_MS", "0".to_string()));
    let server = start_with(env, &log);

    let client = awc::Client::default();
    let bearer = format!("Bearer {secret}");
    let event = json!({"source": "agent", "event_kind": "deploy", "ref": "run-1"});
    let answer = client
        .post(format!("{}/v1/ingest/event", server.url))
        .insert_header(("Authorization", bearer.as_str()))
        .send_json(&event)
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 201);
    let answer = client
        .post(format!("{}/v1/retrieve", server.url))
        .insert_header(("Authorization", bearer.as_str()))
        .send_json(&json!({"task_descriptor": "deploy"}))
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 200);

    let started = Instant::now();
    let lines = loop {
        let text = std::fs::read_to_string(&log).unwrap();
        let slow: Vec<String> = text
            .lines()
            .filter(|line| line.contains("slow request"))
            .map(str::to_string)
            .collect();
        if slow.len() >= 2 || started.elapsed() > Duration::from_secs(10) {
            break slow;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    for route in ["/v1/ingest/event", "/v1/retrieve"] {
        let line = lines
            .iter()
            .find(|line| line.contains(&format!("route={route} ")))
            .unwrap_or_else(|| panic!("no slow request for {route}: {lines:?}"));
        assert!(line.contains("key=slow-agent"), "{line}");
        assert!(line.contains("WARN"), "{line}");
        // The write, or the read, ran on a storage thread: its time is
        // counted there, and it is part of the whole.
        let (queued, working, elapsed) = (
            number(line, "queued_ms"),
            number(line, "working_ms"),
            number(line, "elapsed_ms"),
        );
        assert!(working > 0.0, "{line}");
        assert!(
            queued >= 0.0 && queued + working <= elapsed * 1.5 + 1.0,
            "{line}"
        );
    }
    drop(server);
}
