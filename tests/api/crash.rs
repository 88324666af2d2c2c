//! The real binary under SIGKILL, SIGTERM and SIGINT: acknowledged writes
//! survive a kill in the middle of concurrent ingests, the database stays
//! intact and reopens without repair, and SIGTERM or SIGINT drains and
//! exits cleanly.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// A running engram process; killed when dropped (a failing test leaves
/// none behind).
pub(crate) struct Server {
    child: Option<Child>,
    pub url: String,
}

impl Server {
    /// The process, for the test to stop as it means to.
    pub fn into_child(mut self) -> Child {
        self.child.take().expect("taken once")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn start(db: &Path, log: &Path) -> Server {
    start_with(crate::helpers::database_env_for(db), log)
}

/// Starts the engram binary with `env` on a free port, its log in `log`.
// The child is handed to the caller, which kills and reaps it.
#[allow(clippy::zombie_processes)]
pub(crate) fn start_with(env: Vec<(&'static str, String)>, log: &Path) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_engram"))
        .env("ENGRAM_LISTEN", "127.0.0.1:0")
        .envs(env)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .expect("engram starts");
    let started = Instant::now();
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if let Some(at) = text.find("addr=") {
            let addr: String = text[at + 5..]
                .chars()
                .take_while(|c| !c.is_whitespace())
                .collect();
            return Server {
                child: Some(child),
                url: format!("http://{addr}"),
            };
        }
        if started.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("engram did not start:\n{text}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// SQLite's check of the file; PostgreSQL keeps its own consistency.
fn integrity(db: &Path) -> String {
    if crate::helpers::postgres_admin_url().is_some() {
        return "ok".to_string();
    }
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap()
}

fn client() -> awc::Client {
    awc::Client::builder()
        .timeout(Duration::from_secs(10))
        .finish()
}

/// Ingests from `clients` concurrent clients until told to stop; answers
/// every acknowledged record with the summary it was sent with.
pub(crate) async fn ingest_until(
    url: String,
    clients: usize,
    stop: Rc<RefCell<bool>>,
) -> Vec<(String, String)> {
    let acked = Rc::new(RefCell::new(Vec::new()));
    let mut tasks = Vec::new();
    for c in 0..clients {
        let (url, stop, acked) = (url.clone(), stop.clone(), acked.clone());
        tasks.push(actix_web::rt::spawn(async move {
            let client = client();
            let mut n = 0;
            while !*stop.borrow() {
                n += 1;
                let summary = format!("client {c} write {n}");
                let body = json!({"source": "crash-test", "event_kind": "e", "ref": "r", "summary": summary});
                let Ok(mut response) = client.post(format!("{url}/v1/ingest/event")).send_json(&body).await else {
                    // The server is gone: nothing more will be acknowledged.
                    actix_web::rt::time::sleep(Duration::from_millis(5)).await;
                    continue;
                };
                if response.status().as_u16() == 201 {
                    if let Ok(answer) = response.json::<Value>().await {
                        if let Some(id) = answer["record"]["id"].as_str() {
                            acked.borrow_mut().push((id.to_string(), summary));
                        }
                    }
                }
            }
        }));
    }
    for task in tasks {
        let _ = task.await;
    }
    let acked = acked.borrow().clone();
    acked
}

pub(crate) async fn missing(url: &str, acked: &[(String, String)]) -> Vec<String> {
    let client = client();
    let mut lost = Vec::new();
    for (id, summary) in acked {
        let response = client
            .post(format!("{url}/v1/retrieve/{id}"))
            .send_json(&json!({"trust": {"max_sensitivity": "hyper"}}))
            .await;
        let ok = match response {
            Ok(mut r) if r.status().as_u16() == 200 => r.json::<Value>().await.is_ok_and(|body| {
                body["record"]["payload"]["timeline"][0]["summary"] == summary.as_str()
            }),
            _ => false,
        };
        if !ok {
            lost.push(id.clone());
        }
    }
    lost
}

fn scratch() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("engram.db");
    (dir, db)
}

#[actix_web::test]
async fn acknowledged_writes_survive_sigkill_in_the_middle_of_ingests() {
    let (dir, db) = scratch();
    let mut acked: Vec<(String, String)> = Vec::new();
    for cycle in 0..2 {
        let server = start(&db, &dir.path().join(format!("run-{cycle}.log")));
        assert!(
            missing(&server.url, &acked).await.is_empty(),
            "cycle {cycle}: acknowledged writes lost"
        );
        let stop = Rc::new(RefCell::new(false));
        let load = actix_web::rt::spawn(ingest_until(server.url.clone(), 8, stop.clone()));
        actix_web::rt::time::sleep(Duration::from_millis(400 + 300 * cycle)).await;
        let mut child = server.into_child();
        child.kill().unwrap();
        child.wait().unwrap();
        *stop.borrow_mut() = true;
        let acknowledged = load.await.unwrap();
        assert!(
            !acknowledged.is_empty(),
            "cycle {cycle}: no write was acknowledged before the kill"
        );
        acked.extend(acknowledged);
        assert_eq!(integrity(&db), "ok", "cycle {cycle}");
    }
    let server = start(&db, &dir.path().join("final.log"));
    let lost = missing(&server.url, &acked).await;
    assert!(
        lost.is_empty(),
        "{} of {} acknowledged writes lost",
        lost.len(),
        acked.len()
    );
    let mut child = server.into_child();
    child.kill().unwrap();
    child.wait().unwrap();
}

/// Sends `signal` while ingests run and one request is half sent: the
/// half-sent request is still answered, queued writes commit, the WAL is
/// checkpointed and the process exits 0.
async fn stops_gracefully_on(signal: &str) {
    let (dir, db) = scratch();
    let server = start(&db, &dir.path().join("run.log"));
    let stop = Rc::new(RefCell::new(false));
    let load = actix_web::rt::spawn(ingest_until(server.url.clone(), 4, stop.clone()));
    actix_web::rt::time::sleep(Duration::from_millis(300)).await;
    let body = json!({"source": "slow", "event_kind": "user_input", "ref": "m", "summary": "slow"})
        .to_string();
    let (head, tail) = body.split_at(body.len() / 2);
    let mut slow = crate::helpers::raw_request(
        &server.url,
        &format!(
            "POST /v1/ingest/event HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{head}",
            body.len()
        ),
    );
    actix_web::rt::time::sleep(Duration::from_millis(100)).await;
    let mut child = server.into_child();
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args([format!("-{signal}"), pid])
        .status()
        .unwrap()
        .success());
    actix_web::rt::time::sleep(Duration::from_millis(300)).await;
    std::io::Write::write_all(&mut slow, tail.as_bytes()).unwrap();
    let answer = crate::helpers::read_answer(slow).unwrap();
    assert!(answer.starts_with("HTTP/1.1 201"), "SIG{signal}: {answer}");
    let status = actix_web::rt::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    *stop.borrow_mut() = true;
    let mut acked = load.await.unwrap();
    let created: Value = serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    acked.push((
        created["record"]["id"].as_str().unwrap().to_string(),
        "slow".to_string(),
    ));
    assert_eq!(status.code(), Some(0), "engram exits 0 on SIG{signal}");
    let wal = std::fs::metadata(db.with_extension("db-wal"))
        .map(|m| m.len())
        .unwrap_or(0);
    assert_eq!(wal, 0, "the WAL was checkpointed into the database");
    assert_eq!(integrity(&db), "ok");
    let log = std::fs::read_to_string(dir.path().join("run.log")).unwrap();
    assert!(log.contains("writer stopped"), "{log}");
    assert!(
        log.contains(&format!("signal=\"SIG{signal}\""))
            || log.contains(&format!("signal=SIG{signal}")),
        "{log}"
    );
    assert!(!log.contains("forced shutdown"), "{log}");
    let server = start(&db, &dir.path().join("after.log"));
    assert!(missing(&server.url, &acked).await.is_empty());
    let mut child = server.into_child();
    child.kill().unwrap();
    child.wait().unwrap();
}

#[actix_web::test]
async fn sigterm_drains_checkpoints_and_exits_zero() {
    stops_gracefully_on("TERM").await;
}

#[actix_web::test]
async fn sigint_is_as_graceful_as_sigterm() {
    stops_gracefully_on("INT").await;
}
