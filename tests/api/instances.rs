//! Two engram processes on one PostgreSQL database, as a deployment
//! behind a load balancer runs them: what one writes the other reads at
//! once, racing supersedes through both have one winner, a scheduled job
//! fires in one of them per scheduled time, and killing one under load
//! loses no acknowledged write while the other keeps serving.
//!
//! Needs the test cluster (`bash tests/postgres.sh run cargo test`).

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::crash::{ingest_until, missing, start_with, Server};

fn client() -> awc::Client {
    awc::Client::builder()
        .timeout(Duration::from_secs(30))
        .finish()
}

async fn call(method: &str, url: &str, body: Option<Value>) -> (u16, Value) {
    let method = awc::http::Method::from_bytes(method.as_bytes()).unwrap();
    let request = client().request(method, url);
    let mut response = match body {
        Some(body) => request.send_json(&body).await,
        None => request.send().await,
    }
    .expect("the instance answers");
    let status = response.status().as_u16();
    let body = response
        .json::<Value>()
        .limit(1 << 24)
        .await
        .unwrap_or(Value::Null);
    (status, body)
}

fn stop(server: Server) {
    let mut child = server.into_child();
    let _ = child.kill();
    let _ = child.wait();
}

/// Two processes on the database of `dir`, scheduling checked often.
fn two_instances(dir: &std::path::Path) -> (Server, Server) {
    let db = dir.join("engram.db");
    let start = |name: &str| {
        let mut env = crate::helpers::database_env_for(&db);
        env.push(("ENGRAM_JOBS__SYNC_INTERVAL_MS", "200".to_string()));
        env.push(("ENGRAM_JOBS__MIN_INTERVAL_SECONDS", "1".to_string()));
        env.push(("RUST_LOG", "info".to_string()));
        start_with(env, &dir.join(format!("{name}.log")))
    };
    // The first migrates; the second finds the schema in place.
    let a = start("a");
    let b = start("b");
    (a, b)
}

fn fact(object: &str) -> Value {
    json!({"type": "semantic", "sensitivity": "low",
           "provenance": {"sources": [{"kind": "observation", "ref": format!("notes-{object}"), "timestamp": "2026-01-01T00:00:00Z"}]},
           "payload": {"kind": "semantic", "subject": "go", "predicate": "version", "object": object}})
}

#[actix_web::test]
async fn two_instances_share_one_database() {
    if crate::helpers::postgres_only("several processes on one database need PostgreSQL") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_instances(dir.path());

    // Written through one, read through the other at once.
    let (status, created) =
        call("POST", &format!("{}/v1/records", a.url), Some(fact("1.21"))).await;
    assert_eq!(status, 201, "{created}");
    let id = created["record"]["id"].as_str().unwrap().to_string();
    let (status, read) = call(
        "POST",
        &format!("{}/v1/retrieve/{id}", b.url),
        Some(json!({"trust": {"max_sensitivity": "hyper"}})),
    )
    .await;
    assert_eq!(status, 200, "{read}");
    // As stored (the salience has decayed a little since, on real time).
    let without_salience = |record: &Value| {
        let mut record = record.clone();
        record.as_object_mut().unwrap().remove("salience");
        record
    };
    assert_eq!(
        without_salience(&read["record"]),
        without_salience(&created["record"])
    );

    // Supersedes of one record raced through both: one wins.
    let racers: Vec<_> = (0..16)
        .map(|i| {
            let url = if i % 2 == 0 { &a.url } else { &b.url };
            let body = json!({"old_id": id, "new_record": fact(&format!("1.{}", 30 + i)),
                              "actor": format!("racer-{i}"), "rationale": "newer release"});
            let url = format!("{url}/v1/revisions/supersede");
            actix_web::rt::spawn(async move { call("POST", &url, Some(body)).await })
        })
        .collect();
    let mut statuses = Vec::new();
    for racer in racers {
        let (status, body) = racer.await.unwrap();
        assert!(status == 201 || status == 409, "{status}: {body}");
        statuses.push(status);
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        1,
        "{statuses:?}"
    );
    let (_, history) = call(
        "POST",
        &format!("{}/v1/records/{id}/history", b.url),
        Some(json!({"trust": {"max_sensitivity": "hyper"}})),
    )
    .await;
    assert_eq!(history["chain"].as_array().unwrap().len(), 2, "{history}");

    // A schedule set through one is the one both fire on; each scheduled
    // time runs once.
    let (status, job) = call(
        "PUT",
        &format!("{}/v1/jobs/decay", a.url),
        Some(json!({"schedule": "* * * * * *", "enabled": true})),
    )
    .await;
    assert_eq!(status, 200, "{job}");
    let logs =
        |name: &str| std::fs::read_to_string(dir.path().join(format!("{name}.log"))).unwrap();
    let skipped = || {
        logs("a").matches("scheduled run skipped").count()
            + logs("b").matches("scheduled run skipped").count()
    };
    // Until both have fired for the same times thrice (a loaded machine
    // may delay the other's schedule change or a tick).
    let deadline = crate::helpers::Deadline::after(30, "both to fire for the same times");
    while skipped() < 3 {
        deadline.wait().await;
        actix_web::rt::time::sleep(Duration::from_millis(200)).await;
    }
    let (_, stopped) = call(
        "PUT",
        &format!("{}/v1/jobs/decay", b.url),
        Some(json!({"enabled": false})),
    )
    .await;
    assert_eq!(stopped["job"]["enabled"], false, "{stopped}");
    actix_web::rt::time::sleep(Duration::from_millis(1500)).await;
    let runs = |jobs: &Value| -> Vec<String> {
        jobs.as_array()
            .unwrap()
            .iter()
            .find(|j| j["name"] == "decay")
            .unwrap()["recent_runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["started_at"].as_str().unwrap().to_string())
            .collect()
    };
    let (_, jobs_a) = call("GET", &format!("{}/v1/jobs", a.url), None).await;
    let (_, jobs_b) = call("GET", &format!("{}/v1/jobs", b.url), None).await;
    let (on_a, on_b) = (runs(&jobs_a["jobs"]), runs(&jobs_b["jobs"]));
    assert_eq!(on_a, on_b, "both show the same runs");
    assert!(on_a.len() >= 3, "{on_a:?}");
    // One run per second: no two runs began in the same second.
    let seconds: BTreeSet<&str> = on_a.iter().map(|t| &t[..19]).collect();
    assert_eq!(seconds.len(), on_a.len(), "{on_a:?}");
    assert!(logs("b").contains("job schedule changed in another process"));

    // One killed under load: every acknowledged write is there, through
    // the other, which keeps taking writes.
    let stop_load = Rc::new(RefCell::new(false));
    let load_a = actix_web::rt::spawn(ingest_until(a.url.clone(), 6, stop_load.clone()));
    let load_b = actix_web::rt::spawn(ingest_until(b.url.clone(), 6, stop_load.clone()));
    actix_web::rt::time::sleep(Duration::from_millis(800)).await;
    let b_url = b.url.clone();
    stop(a);
    actix_web::rt::time::sleep(Duration::from_millis(500)).await;
    *stop_load.borrow_mut() = true;
    let mut acked = load_a.await.unwrap();
    let through_b = load_b.await.unwrap();
    assert!(!acked.is_empty() && !through_b.is_empty());
    acked.extend(through_b);
    let lost = missing(&b_url, &acked).await;
    assert!(lost.is_empty(), "{} of {} lost", lost.len(), acked.len());
    let (status, body) = call(
        "POST",
        &format!("{b_url}/v1/ingest/event"),
        Some(crate::helpers::event("after")),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    stop(b);
}

/// The ids a retrieval through `url` of every record finds.
async fn all_ids(url: &str) -> BTreeSet<String> {
    let (status, found) = call(
        "POST",
        &format!("{url}/v1/retrieve"),
        Some(json!({"trust": {"max_sensitivity": "hyper"}, "limit": 100})),
    )
    .await;
    assert_eq!(status, 200, "{found}");
    found["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

/// Stores facts `1.<i>` through `url`, their ids added to `ids`.
async fn add_facts(url: &str, numbers: std::ops::Range<u32>, ids: &mut BTreeSet<String>) {
    for i in numbers {
        let (status, made) = call(
            "POST",
            &format!("{url}/v1/records"),
            Some(fact(&format!("1.{i}"))),
        )
        .await;
        assert_eq!(status, 201, "{made}");
        ids.insert(made["record"]["id"].as_str().unwrap().to_string());
    }
}

#[actix_web::test]
async fn connections_the_database_closes_are_made_again() {
    if crate::helpers::postgres_only("the database server closes no connection there") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("engram.db");
    let server = start_with(
        crate::helpers::database_env_for(&db),
        &dir.path().join("engram.log"),
    );
    let mut ids = BTreeSet::new();
    add_facts(&server.url, 0..3, &mut ids).await;
    // Reads in parallel: several reading threads have their connection.
    let reads: Vec<_> = (0..8)
        .map(|_| {
            let url = server.url.clone();
            actix_web::rt::spawn(async move { all_ids(&url).await })
        })
        .collect();
    for read in reads {
        assert_eq!(read.await.unwrap(), ids);
    }

    // An operator (or a restart) ends every connection engram has.
    let url = crate::helpers::postgres_url_for(dir.path()).unwrap();
    let ended: i64 = crate::helpers::with_postgres(&url, async |client| {
        client
            .query_one(
                "SELECT COUNT(*) FILTER (WHERE pg_terminate_backend(pid, 5000))
                 FROM pg_stat_activity
                 WHERE datname = current_database() AND application_name = 'engram'",
                &[],
            )
            .await
            .unwrap()
            .get(0)
    });
    assert!(
        ended >= 3,
        "a writer, a reader and the key lookups: {ended}"
    );
    actix_web::rt::time::sleep(Duration::from_millis(300)).await;

    // Every read and write after it succeeds, on connections made again.
    for _ in 0..8 {
        assert_eq!(all_ids(&server.url).await, ids);
    }
    add_facts(&server.url, 3..6, &mut ids).await;
    assert_eq!(all_ids(&server.url).await, ids);
    stop(server);
}

async fn with_key(method: &str, url: &str, key: &str, body: Option<Value>) -> u16 {
    let method = awc::http::Method::from_bytes(method.as_bytes()).unwrap();
    let request = client()
        .request(method, url)
        .insert_header(("authorization", format!("Bearer {key}")));
    match body {
        Some(body) => request.send_json(&body).await,
        None => request.send().await,
    }
    .expect("the instance answers")
    .status()
    .as_u16()
}

#[actix_web::test]
async fn keys_revocations_and_rates_hold_across_instances() {
    if crate::helpers::postgres_only("several processes on one database need PostgreSQL") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_instances(dir.path());
    // A few sync intervals: each has seen the other's heartbeat.
    actix_web::rt::time::sleep(Duration::from_millis(1000)).await;
    let (status, made) = call(
        "POST",
        &format!("{}/v1/keys", a.url),
        Some(json!({"name": "ops", "roles": ["admin"]})),
    )
    .await;
    assert_eq!(status, 201, "{made}");
    let admin = made["secret"].as_str().unwrap().to_string();
    let (status, made) = call_with(
        &b.url,
        &admin,
        json!({"name": "agent", "roles": ["read"], "rate": 20}),
    )
    .await;
    assert_eq!(status, 201, "{made}");
    let agent = made["secret"].as_str().unwrap().to_string();
    // A key made through one is known to the other; so are the keys'
    // existence and the need for one.
    assert_eq!(
        with_key("GET", &format!("{}/v1/jobs", a.url), &agent, None).await,
        403
    );
    let made = std::time::Instant::now();
    while call("GET", &format!("{}/v1/jobs", b.url), None).await.0 != 401 {
        assert!(
            made.elapsed() < Duration::from_secs(1),
            "the other instance still open a second after a key was made"
        );
        actix_web::rt::time::sleep(Duration::from_millis(20)).await;
    }
    // Two processes are alive: each allows half the key's rate (10/s, a
    // burst of 10, one of it spent above), where one alone would allow all
    // of it (20/s, 20).
    let started = std::time::Instant::now();
    let mut allowed = 0;
    for _ in 0..40 {
        let status = with_key(
            "POST",
            &format!("{}/v1/retrieve", a.url),
            &agent,
            Some(json!({"limit": 1})),
        )
        .await;
        assert!(status == 200 || status == 429, "{status}");
        allowed += usize::from(status == 200);
    }
    let most = 10.0 + 10.0 * started.elapsed().as_secs_f64() + 1.0;
    assert!(
        allowed >= 9 && allowed as f64 <= most,
        "{allowed} of 40 allowed at 20/s shared by two (at most {most:.1})"
    );
    // Revoked through one: refused by the one at once, and by the other
    // (which verified the key a moment ago) within a second.
    let status = with_key("DELETE", &format!("{}/v1/keys/agent", b.url), &admin, None).await;
    assert_eq!(status, 200);
    let revoked = std::time::Instant::now();
    let retrieve = |url: &str| {
        let url = format!("{url}/v1/retrieve");
        let agent = agent.clone();
        async move { with_key("POST", &url, &agent, Some(json!({"limit": 1}))).await }
    };
    assert_eq!(retrieve(&b.url).await, 401);
    loop {
        let status = retrieve(&a.url).await;
        if status == 401 {
            break;
        }
        assert!(status == 200 || status == 429, "{status}");
        assert!(
            revoked.elapsed() < Duration::from_secs(1),
            "still let in a second after it was revoked elsewhere"
        );
        actix_web::rt::time::sleep(Duration::from_millis(20)).await;
    }
    stop(a);
    stop(b);
}

async fn call_with(url: &str, key: &str, body: Value) -> (u16, Value) {
    let mut response = client()
        .post(format!("{url}/v1/keys"))
        .insert_header(("authorization", format!("Bearer {key}")))
        .send_json(&body)
        .await
        .expect("the instance answers");
    let status = response.status().as_u16();
    (
        status,
        response.json::<Value>().await.unwrap_or(Value::Null),
    )
}
