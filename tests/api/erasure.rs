//! Erasure over HTTP: each selector, dry runs, records made from erased
//! ones, tombstones in revision chains, the erasure log, and a scoped admin
//! key held to its grant.

use awc::http::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{assert_error, create_id, spawn_app, trust, TestApp};

fn hyper() -> Value {
    trust("hyper", &[])
}

/// Ingests `items` as one batch; answers the ids made, in order.
async fn batch_ids(app: &TestApp, items: Vec<Value>) -> Vec<String> {
    let (status, body) = app.post("/v1/ingest/batch", &json!({"items": items})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    crate::helpers::ids(&body)
}

/// An episode holding `marker` in `scope`, made by `source`.
async fn remember(app: &TestApp, marker: &str, scope: &str, source: &str) -> String {
    let (status, body) = app
        .post(
            "/v1/ingest/event",
            &json!({"source": source, "event_kind": "user_input", "ref": marker,
                    "summary": format!("the user said {marker}"), "scope": scope}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["record"]["id"].as_str().unwrap().to_string()
}

fn fact(subject: &str, object: &str) -> Value {
    json!({"type": "semantic", "sensitivity": "low",
           "payload": {"kind": "semantic", "subject": subject, "predicate": "note", "object": object},
           "provenance": {"sources": [{"kind": "observation", "ref": format!("notes-{object}"),
                                       "timestamp": "2026-01-01T00:00:00Z"}]}})
}

async fn erase(app: &TestApp, body: Value) -> Value {
    let (status, report) = app.post("/v1/erase", &body).await;
    assert_eq!(status, StatusCode::OK, "{body}: {report}");
    report
}

/// How many records a text retrieval for `text` finds.
async fn found(app: &TestApp, text: &str) -> usize {
    let (status, body) = app
        .post(
            "/v1/retrieve",
            &json!({"trust": hyper(), "task_descriptor": text, "limit": 50}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["records"].as_array().unwrap().len()
}

async fn exists(app: &TestApp, id: &str) -> bool {
    let (status, _) = app
        .post(&format!("/v1/retrieve/{id}"), &json!({"trust": hyper()}))
        .await;
    status == StatusCode::OK
}

/// A report without what differs between a dry run and the real one.
fn counts(report: &Value) -> Value {
    let mut report = report.clone();
    for key in ["took_ms", "dry_run", "erasure_id"] {
        report.as_object_mut().unwrap().remove(key);
    }
    report
}

#[actix_web::test]
async fn a_scope_is_erased_after_a_dry_run_that_changed_nothing_and_said_the_same() {
    let app = spawn_app().await;
    let mut gone = Vec::new();
    for n in 0..3 {
        gone.push(remember(&app, &format!("zqtenant{n}"), "tenant-a", "agent").await);
    }
    let kept = remember(&app, "zqother", "tenant-b", "agent").await;
    let body =
        json!({"scope": "tenant-a", "actor": "dpo", "rationale": "tenant left", "dry_run": true});
    let dry = erase(&app, body.clone()).await;
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["erased"], 3, "{dry}");
    assert!(dry.get("erasure_id").is_none());
    assert_eq!(
        found(&app, "zqtenant0").await,
        1,
        "a dry run changes nothing"
    );
    let (_, log) = app.get("/v1/erasures").await;
    assert_eq!(log["erasures"], json!([]), "a dry run is not logged");

    let mut real = body;
    real["dry_run"] = json!(false);
    let done = erase(&app, real).await;
    assert_eq!(counts(&done), counts(&dry), "{done} vs {dry}");
    assert_eq!(done["tables"]["records"], 3);
    assert_eq!(done["tables"]["search"], 3);
    assert!(done["tables"]["audit"].as_u64().unwrap() >= 3, "{done}");
    for id in &gone {
        assert!(!exists(&app, id).await);
    }
    assert!(exists(&app, &kept).await);
    assert_eq!(found(&app, "zqtenant1").await, 0);
    assert_eq!(found(&app, "zqother").await, 1);

    let (status, log) = app.get("/v1/erasures").await;
    assert_eq!(status, StatusCode::OK, "{log}");
    let entry = &log["erasures"][0];
    assert_eq!(entry["id"], done["erasure_id"]);
    assert_eq!(
        (&entry["selector"], &entry["name"], &entry["erased"]),
        (&json!("scope"), &json!("tenant-a"), &json!(3))
    );
    assert_eq!(entry["actor"], "dpo");
    assert!(
        !log.to_string().contains("zqtenant"),
        "no content in the log"
    );
    // Nothing left to erase there: as for any scope with nothing in it.
    let (status, body) = app
        .post(
            "/v1/erase",
            &json!({"scope": "tenant-a", "actor": "dpo", "rationale": "again"}),
        )
        .await;
    assert_error(&(status, body), StatusCode::NOT_FOUND, "not_found", "scope");
}

#[actix_web::test]
async fn a_source_ids_and_a_subject_each_select_what_they_name() {
    let app = spawn_app().await;
    let by_bot = remember(&app, "zqbot", "s", "bot-x").await;
    let by_agent = remember(&app, "zqagent", "s", "agent").await;
    let report = erase(
        &app,
        json!({"source": "bot-x", "actor": "ops", "rationale": "garbage writer"}),
    )
    .await;
    assert_eq!(report["erased"], 1, "{report}");
    assert!(!exists(&app, &by_bot).await && exists(&app, &by_agent).await);

    let a = remember(&app, "zqa", "s", "agent").await;
    let b = remember(&app, "zqb", "s", "agent").await;
    let (status, body) = app
        .post(
            "/v1/erase",
            &json!({"ids": [a, "0190f5d2-0000-7000-8000-000000000000"], "actor": "ops", "rationale": "r"}),
        )
        .await;
    assert_error(&(status, body), StatusCode::NOT_FOUND, "not_found", "ids");
    assert!(
        exists(&app, &a).await,
        "nothing is erased when one id is missing"
    );
    let report = erase(
        &app,
        json!({"ids": [a, b], "actor": "ops", "rationale": "r"}),
    )
    .await;
    assert_eq!(report["erased"], 2);
    assert!(!exists(&app, &a).await && !exists(&app, &b).await);

    let alice = create_id(&app, fact("Alice", "lives at 1 zqstreet")).await;
    let bob = create_id(&app, fact("Bob", "zqbob likes tea")).await;
    let (status, topic) = app
        .post(
            "/v1/topics/ingest",
            &json!({"placement": "new_topic", "title": "Alice", "kind": "person", "source": "agent",
                    "fields": [{"name": "phone", "value": "555 zqphone"}], "trust": hyper()}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{topic}");
    let topic_id = topic["topic_id"].as_str().unwrap().to_string();
    let report = erase(
        &app,
        json!({"subject": "Alice", "actor": "dpo", "rationale": "right to erasure"}),
    )
    .await;
    assert_eq!(
        report["erased"], 2,
        "the fact and the topic's field: {report}"
    );
    assert_eq!(report["tables"]["topic_fields"], 1);
    assert!(!exists(&app, &alice).await && exists(&app, &bob).await);
    let (status, _) = app
        .post(
            &format!("/v1/topics/{topic_id}/view"),
            &json!({"trust": hyper()}),
        )
        .await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "a topic with every field erased goes too"
    );
    let (_, log) = app.get("/v1/erasures").await;
    assert!(
        !log.to_string().contains("Alice"),
        "a subject is not logged: {log}"
    );
    let (_, metrics) = app.get("/v1/metrics").await;
    assert!(!metrics.to_string().contains("zq"), "{metrics}");
}

#[actix_web::test]
async fn records_made_from_an_erased_one_are_erased_and_reported_apart() {
    let app = spawn_app().await;
    let source = remember(&app, "zqsource", "s", "agent").await;
    let mut derived = fact("summary", "zqderived from the source");
    derived["relations"] = json!([{"predicate": "derived_from", "target_id": source}]);
    let derived = create_id(&app, derived).await;
    // Made from the derived one in turn.
    let mut twice = fact("summary of a summary", "zqtwice");
    twice["relations"] = json!([{"predicate": "derived_from", "target_id": derived}]);
    let twice = create_id(&app, twice).await;
    // Citing it: as a provenance source, and as evidence.
    let mut sourced = fact("sourced", "zqsourced");
    sourced["provenance"]["sources"][0]["ref"] = json!(source);
    let sourced = create_id(&app, sourced).await;
    let mut evidenced = fact("evidenced", "zqevidenced");
    evidenced["payload"]["evidence"] = json!([{"source_type": "episodic", "source_id": source}]);
    let evidenced = create_id(&app, evidenced).await;
    // Rewritten after it was stored: what it cites goes with the rewrite.
    let (status, body) = app
        .post(
            &format!("/v1/records/{evidenced}/reinforce"),
            &json!({"actor": "a", "rationale": "seen again"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Naming something else: an agent's own reference, another record.
    let unrelated = create_id(&app, fact("other", "zqunrelated")).await;
    let mut elsewhere = fact("elsewhere", "zqelsewhere");
    elsewhere["payload"]["evidence"] = json!([{"source_type": "episodic", "source_id": unrelated}]);
    let elsewhere = create_id(&app, elsewhere).await;
    let report = erase(
        &app,
        json!({"ids": [source], "actor": "dpo", "rationale": "r"}),
    )
    .await;
    assert_eq!(
        (&report["erased"], &report["derived_erased"]),
        (&json!(1), &json!(4)),
        "{report}"
    );
    for gone in [&derived, &twice, &sourced, &evidenced] {
        assert!(!exists(&app, gone).await, "{gone}");
    }
    assert!(exists(&app, &unrelated).await && exists(&app, &elsewhere).await);
}

#[actix_web::test]
async fn an_erased_middle_version_leaves_a_tombstone_and_the_newer_head() {
    let app = spawn_app().await;
    let first = create_id(&app, fact("go", "1.21 zqfirst")).await;
    let supersede = |old: String, object: &'static str| {
        let app = &app;
        async move {
            let (status, body) = app
                .post(
                    "/v1/revisions/supersede",
                    &json!({"old_id": old, "new_record": fact("go", object), "actor": "u",
                            "rationale": "newer"}),
                )
                .await;
            assert_eq!(status, StatusCode::CREATED, "{body}");
            body["record"]["id"].as_str().unwrap().to_string()
        }
    };
    let middle = supersede(first.clone(), "1.22 zqmiddle").await;
    let head = supersede(middle.clone(), "1.23 zqhead").await;
    let report = erase(
        &app,
        json!({"ids": [middle], "actor": "dpo", "rationale": "held personal data"}),
    )
    .await;
    assert_eq!(report["tombstones"], 1, "{report}");
    let (status, history) = app
        .post(
            &format!("/v1/records/{head}/history"),
            &json!({"trust": hyper()}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{history}");
    let chain: Vec<&str> = history["chain"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(chain, [first.as_str(), head.as_str()], "{history}");
    let erased = &history["erased"][0];
    assert_eq!(erased["id"], middle.as_str());
    assert_eq!(erased["older_id"], first.as_str());
    assert_eq!(erased["newer_id"], head.as_str());
    assert_eq!(erased["actor"], "dpo");
    assert_eq!(erased["type"], "semantic");
    assert!(!history.to_string().contains("zqmiddle"), "{history}");
    // From the oldest version too.
    let (_, from_first) = app
        .post(
            &format!("/v1/records/{first}/history"),
            &json!({"trust": hyper()}),
        )
        .await;
    assert_eq!(from_first["chain"], history["chain"]);
}

#[actix_web::test]
async fn a_scoped_admin_key_erases_within_its_grant_only_and_reads_its_own_log() {
    let app = spawn_app().await;
    let root = app
        .make_key(None, json!({"name": "root", "roles": ["admin", "write", "read"], "max_sensitivity": "hyper"}))
        .await;
    let tenant = app
        .make_key(
            Some(&root),
            json!({"name": "tenant-admin", "roles": ["admin", "write", "read"], "scopes": ["tenant-a"],
                   "max_sensitivity": "hyper"}),
        )
        .await;
    let write = |scope: &'static str, marker: &'static str| {
        let (app, root) = (&app, root.clone());
        async move {
            let (status, body, _) = app
                .send(
                    "POST",
                    "/v1/ingest/event",
                    Some(
                        &json!({"source": "agent", "event_kind": "user_input", "ref": marker,
                                 "summary": marker, "scope": scope}),
                    ),
                    Some(&root),
                )
                .await;
            assert_eq!(status, StatusCode::CREATED, "{body}");
            body["record"]["id"].as_str().unwrap().to_string()
        }
    };
    let mine = write("tenant-a", "zqmine").await;
    let theirs = write("tenant-b", "zqtheirs").await;
    // Another tenant's record pointing at the tenant's: it is not the
    // tenant's to count.
    let mut pointing = fact("elsewhere", "zqpointing");
    pointing["scope"] = json!("tenant-b");
    pointing["relations"] = json!([{"predicate": "supports", "target_id": mine}]);
    let (status, body, _) = app
        .send("POST", "/v1/records", Some(&pointing), Some(&root))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let as_tenant = |body: Value| {
        let (app, tenant) = (&app, tenant.clone());
        async move {
            let (status, body, _) = app
                .send("POST", "/v1/erase", Some(&body), Some(&tenant))
                .await;
            (status, body)
        }
    };
    for body in [
        json!({"scope": "tenant-b", "actor": "a", "rationale": "r"}),
        json!({"ids": [theirs], "actor": "a", "rationale": "r"}),
        json!({"ids": [mine, theirs], "actor": "a", "rationale": "r"}),
    ] {
        let answer = as_tenant(body).await;
        assert_error(&answer, StatusCode::NOT_FOUND, "not_found", "");
    }
    let (_, missing) =
        as_tenant(json!({"scope": "tenant-c", "actor": "a", "rationale": "r"})).await;
    let (_, hidden) = as_tenant(json!({"scope": "tenant-b", "actor": "a", "rationale": "r"})).await;
    assert_eq!(
        missing.to_string().replace("tenant-c", "X"),
        hidden.to_string().replace("tenant-b", "X"),
        "hidden answers as missing"
    );
    let (status, report) =
        as_tenant(json!({"scope": "tenant-a", "actor": "a", "rationale": "r"})).await;
    assert_eq!(status, StatusCode::OK, "{report}");
    assert_eq!(report["erased"], 1);
    assert_eq!(report["tables"]["edges"], 0, "{report}");
    let (status, record, _) = app
        .send(
            "POST",
            &format!("/v1/retrieve/{theirs}"),
            Some(&json!({})),
            Some(&root),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "theirs is untouched: {record}");

    // The root's erasure is not the tenant's to read; the tenant's is the
    // root's.
    let (status, _, _) = app
        .send(
            "POST",
            "/v1/erase",
            Some(&json!({"scope": "tenant-b", "actor": "root", "rationale": "r"})),
            Some(&root),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, tenant_log, _) = app.send("GET", "/v1/erasures", None, Some(&tenant)).await;
    let (_, root_log, _) = app.send("GET", "/v1/erasures", None, Some(&root)).await;
    assert_eq!(
        tenant_log["erasures"].as_array().unwrap().len(),
        1,
        "{tenant_log}"
    );
    assert!(!tenant_log.to_string().contains("tenant-b"), "{tenant_log}");
    assert_eq!(
        root_log["erasures"].as_array().unwrap().len(),
        2,
        "{root_log}"
    );
}

#[actix_web::test]
async fn a_bad_erasure_is_refused_by_field_and_erases_nothing() {
    let app = spawn_app().await;
    let kept = remember(&app, "zqkept", "s", "agent").await;
    for (body, field) in [
        (json!({"actor": "a", "rationale": "r"}), "selector"),
        (
            json!({"scope": "s", "source": "agent", "actor": "a", "rationale": "r"}),
            "selector",
        ),
        (json!({"scope": "s", "actor": "a"}), "rationale"),
        (json!({"scope": "s", "rationale": "r"}), "actor"),
        (json!({"ids": [], "actor": "a", "rationale": "r"}), "ids"),
        (
            json!({"scope": "", "actor": "a", "rationale": "r"}),
            "scope",
        ),
    ] {
        let (status, answer) = app.post("/v1/erase", &body).await;
        assert_error(
            &(status, answer),
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            field,
        );
    }
    let (status, answer) = app.get("/v1/erasures?limit=0").await;
    assert_error(
        &(status, answer),
        StatusCode::BAD_REQUEST,
        "invalid_argument",
        "limit",
    );
    assert!(exists(&app, &kept).await);
}

/// `engram erase` on the running service's database: the same erasure.
#[actix_web::test]
async fn the_cli_erases_on_the_database_of_a_running_service() {
    let app = spawn_app().await;
    let doomed = remember(&app, "zqcli", "cli-scope", "agent").await;
    let kept = remember(&app, "zqstays", "other", "agent").await;
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_engram"))
            .arg("erase")
            .args(args)
            .envs(app.database_env())
            .env_remove("ENGRAM_CONFIG")
            .output()
            .expect("the engram binary runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            out.stderr,
        )
    };
    let (code, _, stderr) = run(&["--scope", "cli-scope"]);
    assert_eq!(
        code,
        Some(2),
        "no rationale: {}",
        String::from_utf8_lossy(&stderr)
    );
    let (code, dry, _) = run(&["--scope", "cli-scope", "--rationale", "test", "--dry-run"]);
    assert_eq!(code, Some(0), "{dry}");
    assert!(exists(&app, &doomed).await, "a dry run changes nothing");
    let (code, out, _) = run(&["--scope", "cli-scope", "--rationale", "test"]);
    assert_eq!(code, Some(0), "{out}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["erased"], 1, "{report}");
    assert!(!exists(&app, &doomed).await && exists(&app, &kept).await);
    assert_eq!(found(&app, "zqcli").await, 0);
}

/// Every file of the app's database directory that holds `needle`.
fn files_holding(dir: &std::path::Path, needle: &[u8]) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file())
        .filter(|path| {
            let bytes = std::fs::read(path).unwrap_or_default();
            bytes.windows(needle.len()).any(|w| w == needle)
        })
        .map(|path| path.display().to_string())
        .collect()
}

/// A byte scan of the SQLite database file, its WAL and the rest of its
/// directory finds no erased text once the erasure answers — with the
/// `sqlcipher` feature, on an encrypted database.
#[actix_web::test]
async fn no_byte_of_erased_text_is_left_in_the_database_files() {
    if crate::helpers::sqlite_only("a byte scan of the SQLite files") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    #[cfg(feature = "sqlcipher")]
    let keyed = |s: &mut engram::config::Settings| {
        std::env::set_var("ENGRAM_TEST_ERASE_KEY", "erase me carefully");
        s.storage.encryption_key_env = Some("ENGRAM_TEST_ERASE_KEY".to_string());
    };
    #[cfg(not(feature = "sqlcipher"))]
    let keyed = |_: &mut engram::config::Settings| {};
    let app = crate::helpers::spawn_app_in(dir, keyed).await;
    let marker = "qxerasuremarker7731";
    for n in 0..40 {
        remember(&app, &format!("{marker} number {n}"), "scan", "agent").await;
    }
    let fact_id = create_id(&app, {
        let mut f = fact("someone", &format!("{marker} as a fact"));
        f["scope"] = json!("scan");
        f
    })
    .await;
    // Read, so salience updates rewrite the rows: older copies too must go.
    app.post(
        &format!("/v1/records/{fact_id}/reinforce"),
        &json!({"actor": "a", "rationale": "r", "trust": hyper()}),
    )
    .await;
    let (status, topic) = app
        .post(
            "/v1/topics/ingest",
            &json!({"placement": "new_topic", "title": "Scan topic", "scope": "scan", "source": "agent",
                    "fields": [{"name": "note", "value": format!("{marker} in a field")}], "trust": hyper()}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{topic}");
    let kept = remember(&app, "qxkeptmarker", "elsewhere", "agent").await;
    let path = app.db_path();
    let dir = path.parent().unwrap();
    assert!(
        !files_holding(dir, marker.as_bytes()).is_empty() || cfg!(feature = "sqlcipher"),
        "the marker is on disk before the erasure"
    );
    let report = erase(
        &app,
        json!({"scope": "scan", "actor": "dpo", "rationale": "byte scan"}),
    )
    .await;
    assert_eq!(report["erased"], 42, "{report}");
    assert_eq!(
        files_holding(dir, marker.as_bytes()),
        Vec::<String>::new(),
        "erased text left on disk"
    );
    assert!(exists(&app, &kept).await);
}

/// After an erasure, neither a vector query, a graph walk nor a topic's
/// query or field history finds what was erased.
#[actix_web::test]
async fn vector_graph_and_topic_reads_find_nothing_erased() {
    let app = spawn_app().await;
    let (status, body) = app
        .post(
            "/v1/ingest/event",
            &json!({"source": "agent", "event_kind": "user_input", "ref": "v", "scope": "gone",
                    "summary": "zqvector", "embedding": [1.0, 0.0, 0.0, 0.0]}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let vectored = body["record"]["id"].as_str().unwrap().to_string();
    let (status, topic) = app
        .post(
            "/v1/topics/ingest",
            &json!({"placement": "new_topic", "title": "Billing", "source": "agent", "scope": "keep",
                    "fields": [{"name": "owner", "value": "zqowner"}, {"name": "note", "value": "zqnote"}],
                    "embedding": [0.0, 1.0, 0.0, 0.0], "trust": hyper()}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{topic}");
    let topic_id = topic["topic_id"].as_str().unwrap().to_string();
    let owner = topic["applied"][0]["record_id"]
        .as_str()
        .unwrap()
        .to_string();
    erase(
        &app,
        json!({"scope": "gone", "actor": "a", "rationale": "r"}),
    )
    .await;
    let report = erase(
        &app,
        json!({"ids": [owner], "actor": "a", "rationale": "r"}),
    )
    .await;
    // The topic's vector may have been made from the owner: it goes too.
    assert_eq!(report["tables"]["vectors"], 1, "{report}");

    let (_, by_vector) = app
        .post(
            "/v1/retrieve",
            &json!({"trust": hyper(), "query_embedding": [1.0, 0.0, 0.0, 0.0]}),
        )
        .await;
    assert!(!by_vector.to_string().contains(&vectored), "{by_vector}");
    let (_, graph) = app
        .post(
            "/v1/retrieve/graph",
            &json!({"trust": hyper(), "task_descriptor": "zqnote", "max_hops": 2}),
        )
        .await;
    assert!(!graph.to_string().contains("zqowner"), "{graph}");
    assert_eq!(graph["nodes"].as_array().unwrap().len(), 1, "{graph}");
    let (_, found) = app
        .post(
            "/v1/topics/query",
            &json!({"trust": hyper(), "text": "zqowner"}),
        )
        .await;
    assert_eq!(
        found["topics"],
        json!([]),
        "the topic's text lost the value: {found}"
    );
    let (_, view) = app
        .post(
            &format!("/v1/topics/{topic_id}/view"),
            &json!({"trust": hyper()}),
        )
        .await;
    assert!(view["topic"]["fields"].get("owner").is_none(), "{view}");
    let (_, nearest) = app
        .post(
            "/v1/topics/query",
            &json!({"trust": hyper(), "embedding": [0.0, 1.0, 0.0, 0.0]}),
        )
        .await;
    assert_eq!(nearest["topics"], json!([]), "{nearest}");
    assert_eq!(view["topic"]["fields"]["note"]["value"], "zqnote");
    let (status, _) = app
        .post(
            &format!("/v1/topics/{topic_id}/fields/owner/history"),
            &json!({"trust": hyper()}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

/// Topics erased with their last field take their edges; the report counts
/// an edge between two of them once, and none whose other end the caller
/// may not see.
#[actix_web::test]
async fn an_erased_topics_edges_are_counted_once_and_only_within_the_grant() {
    let app = spawn_app().await;
    let topic = |title: &str, scope: &str, edges: Value| {
        let body = json!({"placement": "new_topic", "title": title, "source": "agent",
                          "scope": scope, "fields": [{"name": "note", "value": format!("zq {title}")}],
                          "edges": edges, "embedding": [1.0, 0.5], "trust": hyper()});
        let app = &app;
        async move {
            let (status, made) = app.post("/v1/topics/ingest", &body).await;
            assert_eq!(status, StatusCode::CREATED, "{made}");
            made["topic_id"].as_str().unwrap().to_string()
        }
    };
    let hidden = topic("Hidden ledger", "other", json!([])).await;
    let seen = topic("Kept runbook", "mine", json!([])).await;
    let first = topic(
        "Gone alpha",
        "mine",
        json!([{"to_topic_id": hidden, "kind": "depends_on"},
               {"to_topic_id": seen, "kind": "depends_on"}]),
    )
    .await;
    topic(
        "Gone beta",
        "mine",
        json!([{"to_topic_id": first, "kind": "depends_on"}]),
    )
    .await;
    let mine = json!({"max_sensitivity": "hyper", "scopes": ["mine"]});
    let report = erase(
        &app,
        json!({"subject": "Gone alpha", "actor": "a", "rationale": "r", "trust": mine, "dry_run": true}),
    )
    .await;
    // alpha → runbook and beta → alpha; alpha → ledger is not the caller's.
    assert_eq!(report["tables"]["edges"], 2, "{report}");
    let report = erase(
        &app,
        json!({"scope": "mine", "actor": "a", "rationale": "r", "trust": mine}),
    )
    .await;
    // Every topic of the scope goes, each edge met from both its ends,
    // and the vector of each.
    assert_eq!(report["tables"]["edges"], 2, "{report}");
    assert_eq!(report["tables"]["vectors"], 3, "{report}");
    let (_, view) = app
        .post(
            &format!("/v1/topics/{hidden}/view"),
            &json!({"trust": hyper()}),
        )
        .await;
    assert_eq!(view["topic"]["edges"], json!([]), "{view}");
}

/// An erasure of many records (several chunks) racing with ingests,
/// revisions and the maintenance jobs: every record it did not select is
/// still there afterwards, every one it selected is gone.
#[actix_web::test]
async fn an_erasure_racing_with_writes_and_jobs_loses_nothing_it_did_not_select() {
    let app = spawn_app().await;
    let batch = |scope: &'static str, from: usize| {
        let items: Vec<Value> = (from..from + 100)
            .map(|n| {
                json!({"kind": "event", "source": "agent", "event_kind": "user_input",
                       "ref": format!("r{n}"), "summary": format!("note {n} of {scope}"),
                       "scope": scope})
            })
            .collect();
        json!({"items": items})
    };
    for from in (0..1200).step_by(100) {
        let (status, body) = app.post("/v1/ingest/batch", &batch("doomed", from)).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let fact_id = create_id(&app, fact("racer", "v1")).await;
    let erasing = {
        let (client, address) = (app.client.clone(), app.address.clone());
        actix_web::rt::spawn(async move {
            let mut response = client
                .post(format!("{address}/v1/erase"))
                .send_json(&json!({"scope": "doomed", "actor": "dpo", "rationale": "race"}))
                .await
                .unwrap();
            let status = response.status();
            let body: Value = response.json().limit(1 << 20).await.unwrap();
            (status, body)
        })
    };
    let mut kept = Vec::new();
    let mut head = fact_id;
    for n in 0..30 {
        kept.push(remember(&app, &format!("zqkept{n}"), "kept", "agent").await);
        if n % 10 == 0 {
            let (status, body) = app
                .post(
                    "/v1/revisions/supersede",
                    &json!({"old_id": head, "new_record": fact("racer", &format!("v{n}")),
                            "actor": "u", "rationale": "newer"}),
                )
                .await;
            assert_eq!(status, StatusCode::CREATED, "{body}");
            head = body["record"]["id"].as_str().unwrap().to_string();
        }
        if n == 15 {
            app.run_job("decay").await;
        }
    }
    let (status, report) = erasing.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{report}");
    assert_eq!(report["erased"], 1200, "{report}");
    for id in kept.iter().chain([&head]) {
        assert!(
            exists(&app, id).await,
            "{id} was not selected and must stay"
        );
    }
    let (_, found) = app
        .post(
            "/v1/retrieve",
            &json!({"trust": trust("hyper", &["doomed"]), "task_descriptor": "note", "limit": 50}),
        )
        .await;
    assert!(
        found["records"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["scope"] != "doomed"),
        "{found}"
    );
}

/// On PostgreSQL an erasure starts a `VACUUM` of the tables it deleted
/// from, in the background.
#[actix_web::test]
async fn on_postgres_an_erasure_vacuums_what_it_deleted_from() {
    if crate::helpers::postgres_only("VACUUM after an erasure") {
        return;
    }
    let app = spawn_app().await;
    let vacuumed = || {
        app.sql_number(
            "SELECT COUNT(*) FROM pg_stat_user_tables WHERE relname = 'payloads' AND last_vacuum IS NOT NULL",
            &[],
        ) > 0
    };
    // One record's erasure leaves its dead rows to autovacuum: a VACUUM
    // would read whole tables.
    let one = remember(&app, "zqsingle", "small", "agent").await;
    erase(
        &app,
        json!({"ids": [one], "actor": "dpo", "rationale": "r"}),
    )
    .await;
    actix_web::rt::time::sleep(std::time::Duration::from_secs(1)).await;
    assert!(!vacuumed(), "a one-record erasure vacuumed the tables");
    // An erasure of many vacuums what it deleted from.
    for batch in 0..10 {
        let items: Vec<Value> = (0..100)
            .map(|i| {
                json!({"kind": "event", "source": "agent", "event_kind": "user_input",
                       "ref": format!("v{batch}-{i}"), "summary": "zqvacuum", "scope": "vacuumed"})
            })
            .collect();
        batch_ids(&app, items).await;
    }
    erase(
        &app,
        json!({"scope": "vacuumed", "actor": "dpo", "rationale": "r"}),
    )
    .await;
    let deadline = crate::helpers::Deadline::after(20, "the vacuum after an erasure");
    while !vacuumed() {
        deadline.wait().await;
        // Each look is a connection of its own: not too often.
        actix_web::rt::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

#[actix_web::test]
async fn another_tenants_erasures_never_push_a_callers_own_out_of_the_log() {
    let app = spawn_app().await;
    let root = app.root_key().await;
    let admin_of = |scope: &str| {
        json!({"name": format!("admin-{scope}"), "roles": ["admin", "write", "read"],
               "scopes": [scope], "max_sensitivity": "hyper"})
    };
    let a = app.make_key(Some(&root), admin_of("a")).await;
    let b = app.make_key(Some(&root), admin_of("b")).await;
    let erase_as = |key: &str, scope: &'static str, marker: &'static str| {
        let (app, key) = (&app, key.to_string());
        async move {
            let event = json!({"source": "agent", "event_kind": "user_input", "ref": marker,
                               "summary": marker, "scope": scope});
            let (status, body, _) = app
                .send("POST", "/v1/ingest/event", Some(&event), Some(&key))
                .await;
            assert_eq!(status, StatusCode::CREATED, "{body}");
            let id = body["record"]["id"].as_str().unwrap().to_string();
            let erasure = json!({"ids": [id], "actor": scope, "rationale": "asked"});
            let (status, body, _) = app
                .send("POST", "/v1/erase", Some(&erasure), Some(&key))
                .await;
            assert_eq!(status, StatusCode::OK, "{body}");
        }
    };
    for marker in ["zqone", "zqtwo", "zqthree"] {
        erase_as(&a, "a", marker).await;
    }
    erase_as(&b, "b", "zqb").await;
    // Team b's one erasure, made 1,200 times over, all newer than a's
    // (written directly: 1,200 erasures over HTTP take minutes).
    app.sql_execute(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1200)
         INSERT INTO erasures (id, at, actor, rationale, selector, name, ids, erased,
                               derived_erased, tombstones, tables_json, took_ms,
                               grant_scopes, max_sensitivity)
         SELECT 'b-' || i, at + 1000000 + i, actor, rationale, selector, name, ids, erased,
                derived_erased, tombstones, tables_json, took_ms, grant_scopes, max_sensitivity
         FROM erasures, n WHERE actor = 'b';
         INSERT INTO erasure_scopes (scope, at, erasure_id)
         SELECT 'b', at, id FROM erasures WHERE id LIKE 'b-%';",
    );
    let log = |key: &str, query: String| {
        let (app, key) = (&app, key.to_string());
        async move {
            let (status, body, _) = app
                .send("GET", &format!("/v1/erasures{query}"), None, Some(&key))
                .await;
            (status, body)
        }
    };
    let (status, body) = log(&a, "?limit=1000".into()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let actors: Vec<&str> = body["erasures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["actor"].as_str().unwrap())
        .collect();
    assert_eq!(actors, ["a", "a", "a"], "{body}");
    assert!(body.get("next_cursor").is_none());

    // Page by page, newest first, each entry once.
    let mut pages = Vec::new();
    let mut query = "?limit=1".to_string();
    loop {
        let (status, body) = log(&a, query.clone()).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        pages.push(body["erasures"][0]["id"].as_str().unwrap().to_string());
        match body["next_cursor"].as_str() {
            Some(cursor) => query = format!("?limit=1&cursor={cursor}"),
            None => break,
        }
        assert!(pages.len() <= 3, "{pages:?}");
    }
    let (_, whole) = log(&a, String::new()).await;
    let ids: Vec<String> = whole["erasures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(pages, ids);

    // A cursor is the caller's own, for its own page size.
    let (_, first) = log(&a, "?limit=1".into()).await;
    let cursor = first["next_cursor"].as_str().unwrap();
    for (key, query) in [
        (&b, format!("?limit=1&cursor={cursor}")),
        (&root, format!("?limit=1&cursor={cursor}")),
        (&a, format!("?limit=2&cursor={cursor}")),
        (&a, "?limit=1&cursor=1.2.3".to_string()),
    ] {
        assert_error(
            &log(key, query).await,
            StatusCode::BAD_REQUEST,
            "invalid_argument",
            "cursor",
        );
    }
    // Team b reads its own; the root reads everything.
    let (_, theirs) = log(&b, "?limit=1000".into()).await;
    assert_eq!(theirs["erasures"].as_array().unwrap().len(), 1000);
    assert!(!theirs.to_string().contains("\"actor\":\"a\""));
    let (_, all) = log(&root, "?limit=5".into()).await;
    assert_eq!(all["erasures"].as_array().unwrap().len(), 5);
    assert!(all["next_cursor"].is_string());
}

/// A supersede that commits while a scope is being erased, chunk by chunk:
/// an erased version still leaves its tombstone in the new version's
/// history, whichever of the two wrote first.
#[actix_web::test]
async fn supersedes_racing_a_scope_erasure_never_lose_a_tombstone() {
    let app = spawn_app().await;
    let mut ids = Vec::new();
    for batch in 0..20 {
        let items: Vec<Value> = (0..100)
            .map(|i| {
                json!({"kind": "observation", "source": "agent", "subject": format!("s{batch}-{i}"),
                       "predicate": "is", "object": format!("zqrace {batch} {i}"), "scope": "doomed"})
            })
            .collect();
        ids.extend(batch_ids(&app, items).await);
    }
    // Every tenth record, newest first (the erasure reaches them last),
    // superseded into a scope that stays while the erasure runs.
    let raced: Vec<String> = ids.iter().rev().step_by(10).cloned().collect();
    let erasure = async {
        erase(
            &app,
            json!({"scope": "doomed", "actor": "dpo", "rationale": "race"}),
        )
        .await
    };
    let supersedes = async {
        let mut made = Vec::new();
        for old in &raced {
            let mut new = fact("race", "zqnew");
            new["scope"] = json!("kept");
            let (status, body) = app
                .post(
                    "/v1/revisions/supersede",
                    &json!({"old_id": old, "new_record": new, "actor": "u", "rationale": "newer"}),
                )
                .await;
            if status == StatusCode::CREATED {
                made.push((
                    old.clone(),
                    body["record"]["id"].as_str().unwrap().to_string(),
                ));
            }
        }
        made
    };
    let (report, made) = futures_util::future::join(erasure, supersedes).await;
    let mut lost = Vec::new();
    for (old, new) in &made {
        let (status, history) = app
            .post(
                &format!("/v1/records/{new}/history"),
                &json!({"trust": hyper()}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{history}");
        let still = history["chain"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["id"] == old.as_str());
        let tombstone = history["erased"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["id"] == old.as_str() && t["newer_id"] == new.as_str());
        if !(still || tombstone) {
            lost.push(old.clone());
        }
    }
    assert!(lost.is_empty(), "no tombstone for {lost:?}; {report}");
    assert!(!made.is_empty());
}

/// The numbers of every `qxm#####q` marker in `bytes`.
fn markers_in(bytes: &[u8], found: &mut std::collections::BTreeSet<u32>) {
    for at in memchr::memmem::find_iter(bytes, b"qxm") {
        let Some(rest) = bytes.get(at + 3..at + 9) else {
            continue;
        };
        if rest[5] == b'q' && rest[..5].iter().all(u8::is_ascii_digit) {
            found.insert(std::str::from_utf8(&rest[..5]).unwrap().parse().unwrap());
        }
    }
}

/// Every marker in the database as SQLite reads its pages (decrypted,
/// with the `sqlcipher` feature): each page whole, free space, free pages
/// and the WAL's latest versions included.
fn markers_in_pages(db: &std::path::Path, key: Option<&str>) -> std::collections::BTreeSet<u32> {
    let conn = rusqlite::Connection::open(db).unwrap();
    if let Some(key) = key {
        conn.pragma_update(None, "key", key).unwrap();
    }
    let mut found = std::collections::BTreeSet::new();
    let mut stmt = conn.prepare("SELECT data FROM sqlite_dbpage").unwrap();
    let mut rows = stmt.query([]).unwrap();
    while let Some(row) = rows.next().unwrap() {
        let page: Vec<u8> = row.get(0).unwrap();
        markers_in(&page, &mut found);
    }
    found
}

/// Every marker in the files of the database's directory, as bytes on
/// disk.
fn markers_in_files(dir: &std::path::Path) -> std::collections::BTreeSet<u32> {
    let mut found = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            markers_in(&std::fs::read(&path).unwrap_or_default(), &mut found);
        }
    }
    found
}

/// At a size where B-tree pages split and rebalance (12,000 records, 1,000
/// supersedes, erasures by id and of a scope of 10,000): no erased marker
/// is anywhere in the database, neither in the files' bytes nor in any
/// page as SQLite (or SQLCipher) reads it, free space included; the kept
/// ones are.
#[actix_web::test]
async fn erasure_at_scale_leaves_no_byte_in_any_page() {
    if crate::helpers::sqlite_only("a scan of the SQLite pages") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let key = cfg!(feature = "sqlcipher").then_some("erase at scale");
    let keyed = move |s: &mut engram::config::Settings| {
        if let Some(key) = key {
            std::env::set_var("ENGRAM_TEST_SCALE_KEY", key);
            s.storage.encryption_key_env = Some("ENGRAM_TEST_SCALE_KEY".to_string());
        }
    };
    let app = crate::helpers::spawn_app_in(dir, keyed).await;
    let marker = |n: u32| format!("qxm{n:05}q");
    let mut ids: Vec<String> = Vec::new();
    for batch in 0..120u32 {
        let items: Vec<Value> = (0..100)
            .map(|i| {
                let n = batch * 100 + i;
                let scope = if n < 2000 { "keep" } else { "gone" };
                json!({"kind": "observation", "source": "agent", "subject": format!("thing {n}"),
                       "predicate": "note", "scope": scope,
                       "object": format!("{} with {} words of filler {}", marker(n), n % 97,
                                         "lorem ".repeat((n % 40) as usize))})
            })
            .collect();
        ids.extend(batch_ids(&app, items).await);
    }
    // 1,000 of the kept ones superseded, each by a version with a marker
    // of its own (20,000 and up).
    let mut newer = Vec::new();
    for n in 0..1000u32 {
        let mut new = fact(
            &format!("thing {n}"),
            &format!(
                "revised {} {}",
                marker(20_000 + n),
                "ipsum ".repeat((n % 30) as usize)
            ),
        );
        new["scope"] = json!("keep");
        let (status, body) = app
            .post(
                "/v1/revisions/supersede",
                &json!({"old_id": ids[n as usize], "new_record": new, "actor": "u", "rationale": "newer"}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        newer.push(body["record"]["id"].as_str().unwrap().to_string());
    }
    // By id: 100 superseded versions, 100 of their successors, 100 never
    // revised.
    let mut erased: Vec<u32> = Vec::new();
    let chosen: Vec<(String, u32)> = (0..100u32)
        .map(|n| (ids[(n * 3) as usize].clone(), n * 3))
        .chain((0..100u32).map(|n| (newer[(n * 3 + 1) as usize].clone(), 20_000 + n * 3 + 1)))
        .chain((0..100u32).map(|n| (ids[(1000 + n * 7) as usize].clone(), 1000 + n * 7)))
        .collect();
    for part in chosen.chunks(100) {
        let ids: Vec<&String> = part.iter().map(|(id, _)| id).collect();
        erase(
            &app,
            json!({"ids": ids, "actor": "dpo", "rationale": "asked"}),
        )
        .await;
        erased.extend(part.iter().map(|(_, n)| *n));
    }
    let report = erase(
        &app,
        json!({"scope": "gone", "actor": "dpo", "rationale": "tenant left"}),
    )
    .await;
    assert_eq!(report["erased"], 10_000, "{report}");
    erased.extend(2000..12_000);

    let db = app.db_path();
    let on_pages = markers_in_pages(&db, key);
    let in_files = markers_in_files(db.parent().unwrap());
    let left: Vec<u32> = erased
        .iter()
        .copied()
        .filter(|n| on_pages.contains(n) || in_files.contains(n))
        .collect();
    assert!(
        left.is_empty(),
        "{} erased markers left, e.g. {:?}",
        left.len(),
        &left[..left.len().min(10)]
    );
    // The scan sees what is there: every kept marker is on a page.
    for kept in [1, 2, 4, 1999, 20_000, 20_999] {
        assert!(on_pages.contains(&kept), "kept marker {kept} not found");
    }
}
