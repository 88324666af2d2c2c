//! A PostgreSQL database that fails under load: its backends terminated,
//! its server killed and started again, all its processes stopped (a hung
//! database rather than a refused one). Reads and writes answer `503` and
//! nothing worse, each within its deadline, `/healthz` answers from memory
//! throughout, and every acknowledged write is there afterwards.
//!
//! Runs on a private cluster of its own (its server is killed), with the
//! PostgreSQL suite (`bash tests/postgres.sh run cargo test`).

use std::cell::RefCell;
use std::path::PathBuf;
use std::process::Command;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::{postgres_only, spawn_app_with, TestApp};

/// A cluster of the test's own, removed when dropped.
struct Cluster {
    dir: tempfile::TempDir,
    url: String,
}

impl Cluster {
    fn start() -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let url = postgres_sh("start", &dir.path().join("pg"));
        Cluster { dir, url }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("pg")
    }

    /// The server's process, from its pid file.
    fn postmaster(&self) -> i32 {
        let pid = std::fs::read_to_string(self.path().join("data/postmaster.pid")).unwrap();
        pid.lines().next().unwrap().trim().parse().unwrap()
    }

    /// The server and the processes it started (its backends).
    fn processes(&self) -> Vec<i32> {
        let postmaster = self.postmaster();
        let mut all = vec![postmaster];
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            // pid (comm) state ppid …: the command may hold spaces.
            let parent = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|ppid| ppid.parse::<i32>().ok());
            if parent == Some(postmaster) {
                all.push(pid);
            }
        }
        all
    }

    fn signal(&self, pids: &[i32], signal: i32) {
        for pid in pids {
            // SAFETY: sends a signal; no memory is involved.
            unsafe { libc::kill(*pid, signal) };
        }
    }

    fn restart(&self) {
        // The killed server's backends end on their own; until then its
        // shared memory is in use and a start fails: tried again.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let out = Command::new("bash")
                .args(["tests/postgres.sh", "restart"])
                .arg(self.path())
                .output()
                .unwrap();
            if out.status.success() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the cluster did not start again: {out:?}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Whatever the test left stopped goes on, so it can be stopped.
        if self.path().join("data/postmaster.pid").exists() {
            let all = self.processes();
            self.signal(&all, libc::SIGCONT);
        }
        let _ = Command::new("bash")
            .args(["tests/postgres.sh", "stop"])
            .arg(self.path())
            .output();
    }
}

fn postgres_sh(command: &str, dir: &std::path::Path) -> String {
    let out = Command::new("bash")
        .args(["tests/postgres.sh", command])
        .arg(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// What the load saw: each request's status and how long it took.
#[derive(Default)]
struct Seen {
    answers: Vec<(&'static str, u16, Duration)>,
    acknowledged: Vec<String>,
}

async fn load(app: &TestApp, key: &str, stop: Rc<RefCell<bool>>, seen: Rc<RefCell<Seen>>) {
    let client = awc::Client::builder()
        .timeout(Duration::from_secs(60))
        .finish();
    let bearer = format!("Bearer {key}");
    let mut n = 0;
    while !*stop.borrow() {
        n += 1;
        let (what, path, body) = if n % 2 == 0 {
            let event = json!({"source": "fault-test", "event_kind": "e", "ref": format!("r{n}"), "summary": format!("write {n}")});
            ("write", "/v1/ingest/event", event)
        } else {
            ("read", "/v1/retrieve", json!({"limit": 3}))
        };
        let started = Instant::now();
        let response = client
            .post(format!("{}{path}", app.address))
            .insert_header(("authorization", bearer.as_str()))
            .send_json(&body)
            .await;
        let took = started.elapsed();
        let Ok(mut response) = response else {
            seen.borrow_mut().answers.push((what, 0, took));
            continue;
        };
        let status = response.status().as_u16();
        let answer: Value = response.json().limit(1 << 24).await.unwrap_or(Value::Null);
        let mut seen = seen.borrow_mut();
        seen.answers.push((what, status, took));
        if status == 201 {
            seen.acknowledged
                .push(answer["record"]["id"].as_str().unwrap().to_string());
        }
        if status >= 500 && status != 503 {
            panic!("{what} answered {status}: {answer}");
        }
        if status == 503 {
            let message = answer["error"]["message"].as_str().unwrap_or_default();
            assert!(
                !message.contains("error") && !message.contains("os error"),
                "driver internals in {message:?}"
            );
        }
    }
}

/// Asks `/healthz` every 20 ms on a thread of its own until `stop`;
/// answers the slowest answer and any that was not 200.
fn probe_health(address: String, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Vec<Duration>> {
    std::thread::spawn(move || {
        let mut took = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let started = Instant::now();
            let answer = crate::helpers::read_answer(crate::helpers::raw_request(
                &address,
                "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
            ))
            .unwrap_or_default();
            took.push(started.elapsed());
            assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
            std::thread::sleep(Duration::from_millis(20));
        }
        took
    })
}

#[actix_web::test]
async fn a_database_that_fails_or_hangs_gets_503s_and_loses_no_acknowledged_write() {
    if postgres_only("the database server is killed and stopped here") {
        return;
    }
    let cluster = Cluster::start();
    let deadline = Duration::from_millis(1500);
    let url = cluster.url.clone();
    let app = spawn_app_with(move |s| {
        s.storage.postgres_url = Some(url);
        s.storage.read_timeout_ms = deadline.as_millis() as u64;
        s.storage.write_timeout_ms = deadline.as_millis() as u64;
    })
    .await;
    let key = app
        .make_key(
            None,
            json!({"name": "ops", "roles": ["admin"], "max_sensitivity": "hyper", "rate": 1e6}),
        )
        .await;

    let stop = Rc::new(RefCell::new(false));
    let seen = Rc::new(RefCell::new(Seen::default()));
    let clients: Vec<_> = (0..3)
        .map(|_| {
            let (stop, seen) = (stop.clone(), seen.clone());
            let app = &app;
            let key = key.clone();
            async move { load(app, &key, stop, seen).await }
        })
        .collect();
    let health_stop = Arc::new(AtomicBool::new(false));
    let health = probe_health(app.address.clone(), health_stop.clone());
    let sleep = |ms| actix_web::rt::time::sleep(Duration::from_millis(ms));

    let faults = async {
        sleep(500).await;
        // Its backends terminated, again and again.
        for _ in 0..5 {
            crate::helpers::with_postgres(&cluster.url, async |client| {
                client
                    .batch_execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                         WHERE application_name = 'engram'",
                    )
                    .await
                    .unwrap()
            });
            sleep(300).await;
        }
        // Its server killed, and started again a little later.
        cluster.signal(&[cluster.postmaster()], libc::SIGKILL);
        sleep(1500).await;
        cluster.restart();
        sleep(1500).await;
        // Every process of it stopped: a database that hangs.
        let all = cluster.processes();
        cluster.signal(&all, libc::SIGSTOP);
        sleep(500).await;
        // Readiness says so within its own few seconds.
        let asked = Instant::now();
        let (status, body) = app.get("/readyz").await;
        assert_eq!(status, awc::http::StatusCode::SERVICE_UNAVAILABLE, "{body}");
        assert!(
            asked.elapsed() <= Duration::from_secs(3),
            "{:?}",
            asked.elapsed()
        );
        sleep(2500).await;
        cluster.signal(&all, libc::SIGCONT);
        sleep(2000).await;
        *stop.borrow_mut() = true;
    };
    futures_util::future::join(faults, futures_util::future::join_all(clients)).await;
    health_stop.store(true, Ordering::Relaxed);
    let health = health.join().expect("/healthz answered 200 every time");

    let seen = seen.take();
    let unavailable = seen.answers.iter().filter(|(_, s, _)| *s == 503).count();
    assert!(unavailable > 0, "the faults were felt");
    for (what, status, took) in &seen.answers {
        assert!([200, 201, 503].contains(status), "{what}: {status}");
        // The key check and the work each have the deadline.
        assert!(
            *took <= deadline * 2 + Duration::from_secs(1),
            "{what} took {took:?}"
        );
    }
    let slowest = health.iter().max().unwrap();
    assert!(
        *slowest <= Duration::from_millis(100),
        "/healthz took {slowest:?}"
    );
    // Every acknowledged write is there.
    for id in &seen.acknowledged {
        let (status, body, _) = app
            .send(
                "POST",
                &format!("/v1/retrieve/{id}"),
                Some(&json!({})),
                Some(&key),
            )
            .await;
        assert_eq!(status, awc::http::StatusCode::OK, "{id}: {body}");
    }
    eprintln!(
        "{} requests, {unavailable} answered 503, {} writes acknowledged, /healthz at most {slowest:?}",
        seen.answers.len(),
        seen.acknowledged.len()
    );
}
