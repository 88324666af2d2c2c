//! `loadtests crash`: kills a real engram with SIGKILL in the middle of
//! concurrent ingests, restarts it on the same file, and checks that every
//! write it acknowledged is still there, intact, and that the database
//! passes `PRAGMA integrity_check`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::driver::{self, LoadOptions, Scenario};
use crate::workload::Rng;

pub struct CrashOptions {
    pub engram: PathBuf,
    pub cycles: u32,
    pub clients: usize,
    pub seed: u64,
}

/// A running engram whose log goes to a file, so its address can be read.
pub struct Server {
    child: Child,
    pub url: String,
}

impl Server {
    pub fn start(engram: &Path, db: &Path, log: &Path) -> Result<Server, String> {
        let log_file = std::fs::File::create(log).map_err(|e| format!("log file: {e}"))?;
        let mut child = Command::new(engram)
            .env("ENGRAM_LISTEN", "127.0.0.1:0")
            .env("ENGRAM_DB_PATH", db)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .map_err(|e| format!("starting {}: {e}", engram.display()))?;
        let started = Instant::now();
        loop {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            if let Some(at) = text.find("addr=") {
                let addr: String = text[at + 5..]
                    .chars()
                    .take_while(|c| !c.is_whitespace())
                    .collect();
                return Ok(Server {
                    child,
                    url: format!("http://{addr}"),
                });
            }
            if started.elapsed() > Duration::from_secs(30) {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("engram did not start; its log:\n{text}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL: no chance to flush or checkpoint.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, then the exit status.
    pub fn terminate(mut self) -> Result<std::process::ExitStatus, String> {
        let pid = self.child.id().to_string();
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .map_err(|e| format!("kill -TERM: {e}"))?;
        self.child.wait().map_err(|e| e.to_string())
    }
}

pub fn integrity_ok(db: &Path) -> Result<bool, String> {
    let conn = rusqlite::Connection::open(db).map_err(|e| e.to_string())?;
    let answer: String = conn
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .map_err(|e| e.to_string())?;
    Ok(answer == "ok")
}

pub async fn run(options: CrashOptions) -> Result<Value, String> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let dir = std::env::temp_dir().join(format!("engram-crash-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let db = dir.join("engram.db");
    let mut rng = Rng::new(options.seed);
    let mut acknowledged = Vec::new();
    let mut lost = 0;
    let mut integrity_failures = 0;
    let mut cycles = Vec::new();
    for cycle in 0..=options.cycles {
        let server = Server::start(
            &options.engram,
            &db,
            &dir.join(format!("cycle-{cycle}.log")),
        )?;
        // Everything acknowledged before earlier kills must be back.
        let check =
            driver::verify_writes(&server.url, options.clients, &[], acknowledged.clone()).await;
        let missing = check.missing + check.different;
        lost += missing;
        let intact = integrity_ok(&db)?;
        if !intact {
            integrity_failures += 1;
        }
        if cycle == options.cycles {
            let status = server.terminate()?;
            cycles.push(
                json!({"cycle": cycle, "verified": check.verified, "lost": missing,
                               "integrity_ok": intact, "sigterm_exit": status.code()}),
            );
            eprintln!(
                "final: {} writes verified, {missing} lost, integrity {}, exit {:?}",
                check.verified,
                if intact { "ok" } else { "FAILED" },
                status.code()
            );
            break;
        }
        let kill_after = Duration::from_millis(300 + rng.below(1700));
        let load = LoadOptions {
            url: server.url.clone(),
            clients: options.clients,
            requests: u64::MAX,
            duration: Some(kill_after + Duration::from_millis(500)),
            rate: None,
            seed: options.seed.wrapping_add(cycle as u64 + 1),
            verify: false,
            progress: false,
            headers: Vec::new(),
            vectors: 0,
        };
        let running = actix_rt::spawn(driver::run_collecting(Scenario::Ingest, load));
        actix_rt::time::sleep(kill_after).await;
        server.kill();
        let report = running.await.map_err(|e| e.to_string())??;
        eprintln!(
            "cycle {cycle}: killed after {} ms; {} writes acknowledged before the kill; {missing} lost from earlier cycles",
            kill_after.as_millis(),
            report.1.len()
        );
        cycles.push(json!({"cycle": cycle, "killed_after_ms": kill_after.as_millis() as u64,
                           "acknowledged": report.1.len(), "lost_from_earlier": missing, "integrity_ok": intact}));
        acknowledged.extend(report.1);
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(json!({
        "cycles": options.cycles,
        "acknowledged_writes": acknowledged.len(),
        "lost_acknowledged_writes": lost,
        "integrity_failures": integrity_failures,
        "runs": cycles,
    }))
}
