use awc::http::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{
    assert_error, event, spawn_app, spawn_app_in, spawn_app_with, Deadline, TestApp,
};

/// A service with the configured cron schedules on, as in production.
async fn spawn_scheduled_app() -> TestApp {
    spawn_app_with(|settings| {
        settings.jobs.decay.enabled = true;
        settings.jobs.consolidation.enabled = true;
    })
    .await
}

fn job<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["name"] == name)
        .unwrap_or_else(|| panic!("no job {name} in {list}"))
}

#[actix_web::test]
async fn jobs_list_their_configured_schedules() {
    let app = spawn_scheduled_app().await;
    let (status, list) = app.get("/v1/jobs").await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let decay = job(&list, "decay");
    assert_eq!(decay["schedule"], "0 0 * * * *");
    assert_eq!(decay["enabled"], true);
    assert_eq!(decay["next_run"], "2026-01-01T01:00:00.000000Z");
    assert_eq!(decay["last_run"], Value::Null);
    let consolidation = job(&list, "consolidation");
    assert_eq!(consolidation["schedule"], "0 0 */6 * * *");
    assert_eq!(consolidation["next_run"], "2026-01-01T06:00:00.000000Z");
}

#[actix_web::test]
async fn a_schedule_change_applies_at_once_and_survives_a_restart() {
    let app = spawn_scheduled_app().await;
    let (status, body) = app
        .put("/v1/jobs/decay", &json!({"schedule": "0 */5 * * * *"}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["job"]["schedule"], "0 */5 * * * *");
    assert_eq!(body["job"]["next_run"], "2026-01-01T00:05:00.000000Z");
    let (_, body) = app
        .put("/v1/jobs/consolidation", &json!({"enabled": false}))
        .await;
    assert_eq!(body["job"]["enabled"], false);
    assert_eq!(body["job"]["next_run"], Value::Null);
    assert_eq!(
        body["job"]["schedule"], "0 0 */6 * * *",
        "unchanged when not given"
    );
    app.run_job("decay").await;
    let dir = app.stop().await;

    // The stored change wins over the configuration file.
    let app = spawn_app_in(dir, |settings| {
        settings.jobs.decay.schedule = "0 30 * * * *".into()
    })
    .await;
    let (_, list) = app.get("/v1/jobs").await;
    assert_eq!(job(&list, "decay")["schedule"], "0 */5 * * * *");
    assert_eq!(job(&list, "consolidation")["enabled"], false);
    assert!(
        job(&list, "decay")["last_run"]["result"]["scanned"].is_number(),
        "{list}"
    );
}

#[actix_web::test]
async fn a_bad_schedule_is_refused_with_the_reason() {
    let app = spawn_app().await;
    let cases = [
        (
            json!({"schedule": "0 * * * *"}),
            "schedule: a schedule has 6 fields",
        ),
        (
            json!({"schedule": "0 61 * * * *"}),
            "is not a valid cron expression",
        ),
        (json!({"schedule": ""}), "schedule:"),
        (
            json!({"schedule": "0 0 0 31 2 MON"}),
            "schedule: \"0 0 0 31 2 MON\" never runs in the next 366 days",
        ),
        (json!({"schedule": "* * * * * *"}), "runs 1 s apart"),
        (
            json!({"schedule": "*/30 * * * * *"}),
            "at most once every 60 s (jobs.min_interval_seconds)",
        ),
        (json!({"schedule": 5}), "schedule: invalid type"),
        (json!({"enabled": "yes"}), "enabled: invalid type"),
        (json!({"every": "hour"}), "unknown field `every`"),
    ];
    for (body, message) in cases {
        assert_error(
            &app.put("/v1/jobs/decay", &body).await,
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            message,
        );
    }
    let (_, list) = app.get("/v1/jobs").await;
    assert_eq!(job(&list, "decay")["schedule"], "0 0 * * * *");
    assert_error(
        &app.put("/v1/jobs/vacuum", &json!({"enabled": true})).await,
        StatusCode::NOT_FOUND,
        "not_found",
        "vacuum",
    );
    assert_error(
        &app.post("/v1/jobs/vacuum/run", &Value::Null).await,
        StatusCode::NOT_FOUND,
        "not_found",
        "vacuum",
    );
}

#[actix_web::test]
async fn a_stored_schedule_that_would_run_every_second_gives_way_to_the_configured_one() {
    let app = spawn_app().await;
    app.sql_execute(
        "INSERT INTO job_settings (name, schedule, enabled, updated_at) VALUES ('decay', '* * * * * *', TRUE, 0)",
    );
    let app = spawn_app_in(app.stop().await, |_| {}).await;
    let (_, list) = app.get("/v1/jobs").await;
    assert_eq!(job(&list, "decay")["schedule"], "0 0 * * * *", "{list}");
    assert_eq!(
        job(&list, "decay")["enabled"],
        true,
        "the stored flag stands"
    );
}

#[actix_web::test]
async fn a_disabled_job_still_runs_on_demand() {
    let app = spawn_app().await;
    app.put("/v1/jobs/decay", &json!({"enabled": false})).await;
    let (status, body) = app.post("/v1/jobs/decay/run", &Value::Null).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["job"], "decay");
    assert_eq!(
        body["result"],
        json!({"scanned": 0, "decayed": 0, "pruned": 0, "chunks": 0, "topics_decayed": 0})
    );
    assert_eq!(body["started_at"], "2026-01-01T00:00:00.000000Z");
    let (_, list) = app.get("/v1/jobs").await;
    assert_eq!(job(&list, "decay")["last_run"]["result"], body["result"]);
}

#[actix_web::test]
async fn the_newest_runs_are_kept_newest_first_across_a_restart() {
    let app = spawn_app().await;
    // One more record before each run: run n scans n records.
    for _ in 0..12 {
        app.post("/v1/ingest/event", &event("agent")).await;
        app.run_job("decay").await;
    }
    let scanned = |list: &Value| -> Vec<u64> {
        job(list, "decay")["recent_runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|run| run["result"]["scanned"].as_u64().unwrap())
            .collect()
    };
    let (_, list) = app.get("/v1/jobs").await;
    assert_eq!(scanned(&list), (3..=12).rev().collect::<Vec<_>>());
    assert_eq!(
        job(&list, "decay")["last_run"],
        job(&list, "decay")["recent_runs"][0]
    );
    assert_eq!(job(&list, "consolidation")["recent_runs"], json!([]));
    let kept = app.sql_number("SELECT count(*) FROM job_run_log WHERE name = 'decay'", &[]);
    assert_eq!(kept, 10, "older runs are forgotten");

    let app = spawn_app_in(app.stop().await, |_| {}).await;
    let (_, list) = app.get("/v1/jobs").await;
    assert_eq!(scanned(&list), (3..=12).rev().collect::<Vec<_>>());
}

#[actix_web::test]
async fn a_run_never_overlaps_another_run_of_the_same_job() {
    let app = spawn_app().await;
    let release = app.block_writer().await;
    // The first run gets as far as storing its result, and waits there.
    let client = app.client.clone();
    let url = format!("{}/v1/jobs/decay/run", app.address);
    let first =
        actix_web::rt::spawn(async move { client.post(url).send().await.map(|r| r.status()) });
    let deadline = Deadline::after(10, "the decay run to show as running");
    loop {
        let (_, list) = app.get("/v1/jobs").await;
        if job(&list, "decay")["running"] == true {
            break;
        }
        deadline.wait().await;
    }
    assert_error(
        &app.post("/v1/jobs/decay/run", &Value::Null).await,
        StatusCode::CONFLICT,
        "conflict",
        "already running",
    );
    // Another job is free to run meanwhile.
    let (_, list) = app.get("/v1/jobs").await;
    assert_eq!(job(&list, "consolidation")["running"], false);
    release.release();
    assert_eq!(first.await.unwrap().unwrap(), StatusCode::OK);
    let (_, list) = app.get("/v1/jobs").await;
    assert_eq!(job(&list, "decay")["running"], false);
    app.run_job("decay").await;
}

#[actix_web::test]
async fn memory_metrics_are_aggregated() {
    let app = spawn_app().await;
    for _ in 0..2 {
        app.post("/v1/ingest/event", &event("a")).await;
    }
    let (_, fact) = app
        .post(
            "/v1/ingest/observation",
            &json!({"source": "a", "subject": "s", "predicate": "p"}),
        )
        .await;
    let id = fact["record"]["id"].as_str().unwrap();
    app.post(
        &format!("/v1/records/{id}/reinforce"),
        &json!({"actor": "a", "rationale": "useful"}),
    )
    .await;
    app.post(
        "/v1/records",
        &json!({"type": "competence", "sensitivity": "low", "lifecycle": {"pinned": true},
                "payload": {"kind": "competence", "skill_name": "k", "performance": {"success_count": 3, "failure_count": 1}}}),
    )
    .await;
    app.post(
        "/v1/records",
        &json!({"type": "plan_graph", "sensitivity": "low", "salience": 0.1,
                "payload": {"kind": "plan_graph", "plan_id": "p", "metrics": {"execution_count": 4}}}),
    )
    .await;
    let (status, stats) = app.get("/v1/metrics").await;
    assert_eq!(status, StatusCode::OK, "{stats}");
    assert_eq!(stats["total_records"], 5);
    assert_eq!(
        stats["records_by_type"],
        json!({"competence": 1, "episodic": 2, "plan_graph": 1, "semantic": 1, "working": 0})
    );
    assert_eq!(stats["active_records"], 5);
    assert_eq!(stats["pinned_records"], 1);
    assert_eq!(stats["total_audit_entries"], 6);
    assert_eq!(stats["salience_distribution"]["0.0-0.2"], 1);
    assert_eq!(stats["salience_distribution"]["0.8-1.0"], 4);
    assert_eq!(stats["growth_rate"], 1.0);
    assert!((stats["retrieval_usefulness"].as_f64().unwrap() - 1.0 / 6.0).abs() < 1e-9);
    assert_eq!(stats["competence_success_rate"], 0.75);
    assert_eq!(stats["plan_reuse_frequency"], 4.0);
    assert_eq!(stats["revision_rate"], 0.0);
    assert_eq!(
        stats["records_by_sensitivity"],
        json!({"public": 0, "low": 5, "medium": 0, "high": 0, "hyper": 0})
    );
    assert_eq!(
        stats["records_by_status"],
        json!({"active": 5, "contested": 0, "retracted": 0})
    );
    // Newest first: the plan, the skill, the reinforcement, the fact...
    let activity = stats["recent_activity"].as_array().unwrap();
    assert_eq!(activity.len(), 6);
    assert_eq!(activity[0]["type"], "plan_graph");
    assert_eq!(activity[0]["action"], "create");
    assert_eq!(activity[2]["action"], "reinforce");
    assert_eq!(activity[2]["actor"], "a");
    assert_eq!(activity[2]["sensitivity"], "low");
    assert!(activity[0].get("id").is_none() && activity[0].get("rationale").is_none());
    assert!(
        (stats["avg_confidence"].as_f64().unwrap() - (0.8 + 0.8 + 0.7 + 1.0 + 1.0) / 5.0).abs()
            < 1e-9
    );
}

#[actix_web::test]
async fn prometheus_metrics_cover_requests_jobs_and_the_writer() {
    let app = spawn_app().await;
    app.post("/v1/ingest/event", &event("a")).await;
    app.post("/v1/ingest/event", &event("a")).await;
    app.post("/v1/ingest/event", &json!({})).await;
    app.post(
        "/v1/retrieve/some-id",
        &json!({"trust": {"max_sensitivity": "low"}}),
    )
    .await;
    app.run_job("decay").await;
    let mut response = app
        .client
        .get(format!("{}/metrics", app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let text = String::from_utf8(response.body().await.unwrap().to_vec()).unwrap();
    for line in [
        "engram_http_requests_total{method=\"POST\",route=\"/v1/ingest/event\",status=\"201\"} 2",
        "engram_http_requests_total{method=\"POST\",route=\"/v1/ingest/event\",status=\"400\"} 1",
        "engram_http_requests_total{method=\"POST\",route=\"/v1/retrieve/{id}\",status=\"404\"} 1",
        "engram_http_request_duration_seconds_count{method=\"POST\",route=\"/v1/ingest/event\"} 3",
        "engram_job_runs_total{job=\"decay\",outcome=\"succeeded\"} 1",
        // Never ran, still reported.
        "engram_job_runs_total{job=\"consolidation\",outcome=\"succeeded\"} 0",
        "engram_job_runs_total{job=\"consolidation\",outcome=\"failed\"} 0",
        "engram_job_duration_seconds_total{job=\"consolidation\"} 0",
        "engram_writer_queue_depth 0",
        "engram_records 2",
        "engram_records_by_type{type=\"episodic\"} 2",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing {line:?} in\n{text}"
        );
    }
    // Two events and a decay run were written, each in a transaction that
    // took some time.
    let counter = |name: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("missing {name} in\n{text}"))
    };
    assert!(counter("engram_writer_transactions_total") >= 2.0);
    assert!(counter("engram_writer_busy_seconds_total") > 0.0);
}

async fn engram_cli(args: Vec<String>) -> std::process::Output {
    actix_web::rt::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_engram"))
            .args(args)
            .output()
            .expect("the engram binary runs")
    })
    .await
    .unwrap()
}

#[actix_web::test]
async fn the_operator_cli_lists_changes_and_runs_jobs() {
    let app = spawn_app().await;
    let args = |words: &[&str]| -> Vec<String> {
        let mut all: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        all.extend(["--url".to_string(), app.address.clone()]);
        all
    };
    let out = engram_cli(args(&[
        "jobs",
        "set",
        "decay",
        "--schedule",
        "0 */10 * * * *",
    ]))
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = engram_cli(args(&["jobs", "list"])).await;
    let listing = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success());
    assert!(
        listing.contains("decay") && listing.contains("0 */10 * * * *"),
        "{listing}"
    );
    assert!(listing.contains("consolidation"), "{listing}");
    let out = engram_cli(args(&["jobs", "run", "consolidation"])).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["result"]["episodic_compressed"], 0);
    let out = engram_cli(args(&["jobs", "set", "decay", "--schedule", "often"])).await;
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("6 fields"));
}

/// Once the service has a key, the CLI sends one: from `--key` or
/// `ENGRAM_API_KEY`; without, it says a key is needed.
#[actix_web::test]
async fn the_operator_cli_sends_a_key_to_a_secured_service() {
    let app = spawn_app().await;
    let root = app.root_key().await;
    let run = |args: Vec<&str>, env_key: Option<&str>| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_engram"));
        command
            .args(args)
            .args(["--url", &app.address])
            .env_remove("ENGRAM_API_KEY");
        if let Some(key) = env_key {
            command.env("ENGRAM_API_KEY", key);
        }
        actix_web::rt::task::spawn_blocking(move || {
            command.output().expect("the engram binary runs")
        })
    };
    let out = run(vec!["jobs", "list"], None).await.unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(said.contains("401") && said.contains("API key"), "{said}");
    let succeeded = |out: std::process::Output| {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let listed = succeeded(
        run(vec!["jobs", "list", "--key", &root], None)
            .await
            .unwrap(),
    );
    assert!(String::from_utf8_lossy(&listed).contains("consolidation"));
    let ran = succeeded(
        run(vec!["jobs", "run", "decay"], Some(&root))
            .await
            .unwrap(),
    );
    let printed: Value = serde_json::from_slice(&ran).unwrap();
    assert_eq!(printed["job"], "decay", "{printed}");
    // A key without the admin role is refused, as over HTTP.
    let reader = app
        .make_key(
            Some(&root),
            json!({"name": "reader", "max_sensitivity": "low"}),
        )
        .await;
    let out = run(vec!["jobs", "list"], Some(&reader)).await.unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("403"));
}

#[actix_web::test]
async fn a_run_whose_record_cannot_be_stored_gives_its_lease_back() {
    let app = spawn_app().await;
    // A failing disk, as far as the job's own records go: the run's record
    // is refused, the small lease change is not.
    if crate::helpers::postgres_admin_url().is_some() {
        app.sql_execute(
            "CREATE TABLE hook_off (x INTEGER);
             CREATE FUNCTION refuse_runs() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN IF NOT EXISTS (SELECT 1 FROM hook_off) THEN RAISE EXCEPTION 'disk full'; END IF;
             RETURN NEW; END $$;
             CREATE TRIGGER refuse_runs BEFORE INSERT ON job_run_log
             FOR EACH ROW EXECUTE FUNCTION refuse_runs();",
        );
    } else {
        app.sql_execute(
            "CREATE TABLE hook_off (x INTEGER);
             CREATE TRIGGER refuse_runs BEFORE INSERT ON job_run_log
             WHEN NOT EXISTS (SELECT 1 FROM hook_off) BEGIN SELECT RAISE(ABORT, 'disk full'); END;",
        );
    }
    for _ in 0..2 {
        app.run_job("decay").await;
        let (_, list) = app.get("/v1/jobs").await;
        assert_eq!(job(&list, "decay")["running"], false, "{list}");
    }
    app.sql_execute("INSERT INTO hook_off VALUES (1);");
    app.run_job("decay").await;
}

/// What a process killed in a run leaves: a lease an hour long, its
/// scheduled time taken, and a heartbeat that stopped.
fn leave_dead_lease(app: &TestApp) {
    let far = "9000000000000000";
    app.sql_execute(&format!(
        "INSERT INTO instances (id, seen_at) VALUES ('dead-1', 0);
         INSERT INTO job_leases (name, holder, expires_at, tick) VALUES ('decay', 'dead-1', {far}, {far})
         ON CONFLICT (name) DO UPDATE SET holder = excluded.holder,
             expires_at = excluded.expires_at, tick = excluded.tick;"
    ));
}

#[actix_web::test]
async fn a_lease_whose_holder_died_is_not_shown_running_nor_blocks_a_run() {
    let app = spawn_app_with(|s| s.jobs.sync_interval_ms = 100).await;
    leave_dead_lease(&app);
    // A few syncs later: the dead holder runs nothing.
    actix_web::rt::time::sleep(std::time::Duration::from_millis(500)).await;
    let (_, list) = app.get("/v1/jobs").await;
    assert_eq!(job(&list, "decay")["running"], false, "{list}");
    app.run_job("decay").await;
}

#[actix_web::test]
async fn the_run_a_dead_process_did_not_finish_is_made_by_another_within_a_minute() {
    // Leases are looked at every sync: often here, so the test is short.
    let app = spawn_app_with(|s| {
        s.jobs.decay.enabled = true;
        s.jobs.sync_interval_ms = 200;
    })
    .await;
    leave_dead_lease(&app);
    let runs = |list: &Value| job(list, "decay")["recent_runs"].as_array().unwrap().len();
    let (_, before) = app.get("/v1/jobs").await;
    let deadline = Deadline::after(60, "the dead process's run to be taken over");
    loop {
        let (_, list) = app.get("/v1/jobs").await;
        if runs(&list) > runs(&before) {
            break;
        }
        deadline.wait().await;
    }
    assert_eq!(
        app.sql_number(
            "SELECT COUNT(*) FROM job_leases WHERE holder = 'dead-1'",
            &[]
        ),
        0,
        "the lease was taken over"
    );
    app.run_job("decay").await;
}

#[actix_web::test]
async fn a_lease_left_in_a_sqlite_database_is_given_back_at_start() {
    if crate::helpers::sqlite_only("a SQLite database has one process") {
        return;
    }
    let app = spawn_app().await;
    // Left by an earlier process, whose heartbeat looks alive still.
    app.sql_execute(
        "INSERT INTO instances (id, seen_at) VALUES ('earlier', 9000000000000000);
         INSERT INTO job_leases (name, holder, expires_at, tick)
         VALUES ('decay', 'earlier', 9000000000000000, 0);",
    );
    assert_error(
        &app.post("/v1/jobs/decay/run", &Value::Null).await,
        StatusCode::CONFLICT,
        "conflict",
        "running in another process",
    );
    let app = spawn_app_in(app.stop().await, |_| {}).await;
    app.run_job("decay").await;
}
