use awc::http::StatusCode;
use serde_json::json;

use crate::helpers::{event, spawn_app, spawn_app_in};

#[actix_web::test]
async fn records_survive_a_restart_on_the_same_file() {
    let app = spawn_app().await;
    let mut stored = Vec::new();
    for i in 0..5 {
        let (status, body) = app
            .post("/v1/ingest/event", &event(&format!("agent-{i}")))
            .await;
        assert_eq!(status, StatusCode::CREATED);
        stored.push(body["record"].clone());
    }
    let (_, fact) = app
        .post(
            "/v1/ingest/observation",
            &json!({"source": "a", "subject": "s", "predicate": "p", "object": {"n": 1}}),
        )
        .await;
    stored.push(fact["record"].clone());
    let dir = app.stop().await;

    let app = spawn_app_in(dir, |_| {}).await;
    for record in &stored {
        assert_eq!(
            &app.get_record(record["id"].as_str().unwrap()).await,
            record
        );
    }
    assert_eq!(app.all_records().await.len(), stored.len());
}

#[actix_web::test]
async fn a_database_from_a_newer_engram_is_refused_at_start() {
    let app = spawn_app().await;
    app.sql_execute(
        "INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 'later')",
    );
    let dir = app.stop().await;
    let settings = crate::helpers::test_settings(&dir.path().join("engram.db"));
    let (clock, _) = engram::clock::Clock::manual(crate::helpers::start_time());
    let error = match engram::startup::Application::build(settings, clock).await {
        Ok(_) => panic!("a newer schema must be refused"),
        Err(e) => e.to_string(),
    };
    assert!(error.contains("version 999"), "{error}");
}

#[actix_web::test]
async fn a_schema_one_database_is_migrated_and_its_records_keep_working() {
    if crate::helpers::sqlite_only("a database of SQLite schema version 1") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let conn = rusqlite::Connection::open(dir.path().join("engram.db")).unwrap();
    conn.execute_batch(include_str!("../../migrations/sqlite/0001_init.sql"))
        .unwrap();
    // A record as version 1 stored it: salience in the record row, no
    // decay anchor, no row version.
    conn.execute_batch(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL);
         INSERT INTO schema_migrations VALUES (1, 'init', '2025-12-01T00:00:00Z');
         INSERT INTO records (key, id, layer, sensitivity, confidence, salience, scope, status, created_by, created_at, updated_at)
             VALUES (1, 'old-fact', 1, 1, 0.7, 0.5, NULL, 'active', 'agent', 1767225600000000, 1767225600000000);
         INSERT INTO decay_profiles (record_key, curve, half_life_seconds, min_salience, reinforcement_gain, last_reinforced_at, pinned, deletion_policy)
             VALUES (1, 'exponential', 3600, 0, 0.1, 1767225600000000, 1, 'auto_prune');
         INSERT INTO payloads VALUES (1, '{\"kind\":\"semantic\",\"subject\":\"go\",\"predicate\":\"version\",\"object\":\"1.21\"}');
         INSERT INTO tags VALUES (1, 'lang', 0);
         INSERT INTO audit_log (record_key, action, actor, timestamp, rationale)
             VALUES (1, 'create', 'agent', 1767225600000000, 'stored by version 1');",
    )
    .unwrap();
    // An episode, and two facts citing it: as evidence, as a source.
    let episode = "0190a1b2-0000-7000-8000-00000000000a";
    for (key, id, layer, payload) in [
        (2, episode, 4, r#"{"kind":"episodic"}"#.to_string()),
        (
            3,
            "by-evidence",
            1,
            format!(
                r#"{{"kind":"semantic","subject":"a","predicate":"b","object":"c","evidence":[{{"source_type":"episodic","source_id":"{episode}"}},{{"source_type":"run","source_id":"run-42"}}]}}"#
            ),
        ),
        (
            4,
            "by-source",
            1,
            r#"{"kind":"semantic","subject":"d","predicate":"e","object":"f"}"#.to_string(),
        ),
    ] {
        conn.execute(
            "INSERT INTO records (key, id, layer, sensitivity, confidence, salience, scope, status, created_by, created_at, updated_at)
                 VALUES (?1, ?2, ?3, 1, 0.7, 0.5, NULL, 'active', 'agent', 1767225600000000, 1767225600000000)",
            rusqlite::params![key, id, layer],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO decay_profiles (record_key, curve, half_life_seconds, min_salience, reinforcement_gain, last_reinforced_at, pinned, deletion_policy)
                 VALUES (?1, 'exponential', 3600, 0, 0.1, 1767225600000000, 1, 'auto_prune')",
            [key],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO payloads VALUES (?1, ?2)",
            rusqlite::params![key, payload],
        )
        .unwrap();
    }
    conn.execute(
        "INSERT INTO provenance_sources (record_key, kind, ref, timestamp)
             VALUES (4, 'event', ?1, 1767225600000000), (4, 'event', 'run-43', 1767225600000000)",
        [episode],
    )
    .unwrap();
    drop(conn);

    let app = crate::helpers::spawn_app_in(dir, |_| {}).await;
    let record = app.get_record("old-fact").await;
    assert_eq!(record["salience"], 0.5, "{record}");
    assert_eq!(
        app.sql_number(
            "SELECT COUNT(*) FROM record_citations WHERE cited_id = ?1",
            &[episode]
        ),
        2
    );
    assert_eq!(
        app.sql_number("SELECT COUNT(*) FROM record_citations", &[]),
        2
    );
    assert_eq!(record["tags"], json!(["lang"]));
    assert_eq!(record["payload"]["object"], "1.21");
    assert_eq!(record["audit_log"][0]["rationale"], "stored by version 1");

    // Revisions need the row version the migration added.
    let (status, body) = app
        .post(
            "/v1/revisions/supersede",
            &json!({"old_id": "old-fact", "actor": "a", "rationale": "newer release",
                    "new_record": {"type": "semantic", "sensitivity": "low",
                        "provenance": {"sources": [{"kind": "observation", "ref": "notes", "timestamp": "2026-01-01T00:00:00Z"}]},
                        "payload": {"kind": "semantic", "subject": "go", "predicate": "version", "object": "1.22"}}}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let old = app.get_record("old-fact").await;
    assert_eq!(old["status"], "retracted");
    assert_eq!(old["audit_log"].as_array().unwrap().len(), 2, "{old}");
    let dir = app.stop().await;
    let conn = rusqlite::Connection::open(dir.path().join("engram.db")).unwrap();
    let versions: Vec<i64> = conn
        .prepare("SELECT version FROM schema_migrations ORDER BY version")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let latest = engram::store::sqlite::migrations::latest_version();
    assert_eq!(versions, (1..=latest).collect::<Vec<i64>>());
}

/// Topics a schema change left to be indexed again get their search text
/// when the service starts, whoever may see their fields.
#[actix_web::test]
async fn topics_left_to_index_are_indexed_at_start() {
    let app = crate::helpers::spawn_app().await;
    let (status, made) = app
        .post(
            "/v1/topics/ingest",
            &json!({"placement": "new_topic", "title": "Payments gateway", "kind": "service",
                    "sensitivity": "low", "source": "a", "trust": crate::helpers::trust("hyper", &[]),
                    "fields": [{"name": "runbook", "value": "restart the deployments"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    let dir = app.stop().await;
    let postgres = crate::helpers::postgres_url_for(dir.path()).is_some();
    let app = crate::helpers::spawn_app_in(dir, |_| {}).await;
    // As a schema change leaves them: no search text, listed to index.
    app.sql_execute(if postgres {
        "UPDATE topics SET search = ''::tsvector; INSERT INTO topics_to_index SELECT key FROM topics"
    } else {
        "UPDATE topics SET search_text = NULL;
         INSERT INTO topic_search (topic_search) VALUES ('delete-all');
         INSERT INTO topics_to_index SELECT key FROM topics"
    });
    let query = json!({"trust": crate::helpers::trust("low", &[]), "text": "deploy"});
    let (_, found) = app.post("/v1/topics/query", &query).await;
    assert_eq!(found["topics"], json!([]), "{found}");
    let dir = app.stop().await;
    let app = crate::helpers::spawn_app_in(dir, |_| {}).await;
    let (status, found) = app.post("/v1/topics/query", &query).await;
    assert_eq!(status, StatusCode::OK, "{found}");
    assert_eq!(
        found["topics"][0]["topic"]["id"], made["topic_id"],
        "{found}"
    );
    assert_eq!(
        app.sql_number("SELECT COUNT(*) FROM topics_to_index", &[]),
        0
    );
}

#[actix_web::test]
async fn a_postgres_schema_one_database_keeps_its_salience_order_after_the_upgrade() {
    let dir = tempfile::tempdir().unwrap();
    let Some(url) = crate::helpers::postgres_url_for(dir.path()) else {
        eprintln!("PostgreSQL only: a database of PostgreSQL schema version 1");
        return;
    };
    // Two records as version 1 stored them: the stored salience and the
    // moment it decays from in the record row.
    crate::helpers::with_postgres(&url, async |client| {
        client
            .batch_execute(include_str!("../../migrations/postgres/0001_init.sql"))
            .await
            .unwrap();
        client
            .batch_execute(
                "CREATE TABLE schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL);
                 INSERT INTO schema_migrations VALUES (1, 'init', '2026-01-01T00:00:00Z');
                 INSERT INTO records (key, id, layer, sensitivity, confidence, salience, scope, status,
                                      created_by, created_at, updated_at, decays_from, search)
                 SELECT k, id, 1, 1, 0.7, s, 'team', st, 'agent', 1767225600000000,
                        1767225600000000, 1767225600000000,
                        to_tsvector('english', t) || engram_facets(k, 1, 1, 'team', st)
                 FROM (VALUES (1, 'old-note', 0.3, 'the cache holds sessions', 'active'),
                              (2, 'old-fact', 0.8, 'go version 1.21', 'active'),
                              (3, 'old-gone', 0.5, 'the cache held tokens', 'retracted'))
                      v(k, id, s, t, st);
                 SELECT setval('records_key_seq', 3);
                 INSERT INTO decay_profiles (record_key, curve, half_life_seconds, min_salience,
                     reinforcement_gain, last_reinforced_at, pinned, deletion_policy,
                     anchor_salience, anchor_at)
                 SELECT key, 'exponential', 2592000, 0, 0.1, 1767225600000000, FALSE, 'auto_prune',
                        salience, 1767225600000000
                 FROM records;
                 INSERT INTO decay_bounds VALUES (1, 2592000, 0);
                 INSERT INTO payloads VALUES
                     (1, '{\"kind\":\"semantic\",\"subject\":\"cache\",\"predicate\":\"holds\",\"object\":\"sessions\",\"evidence\":[{\"source_type\":\"episodic\",\"source_id\":\"0190a1b2-0000-7000-8000-00000000000a\"}]}'),
                     (3, '{\"kind\":\"semantic\",\"subject\":\"cache\",\"predicate\":\"held\",\"object\":\"tokens\"}'),
                     (2, '{\"kind\":\"semantic\",\"subject\":\"go\",\"predicate\":\"version\",\"object\":\"1.21\"}');
                 INSERT INTO provenance_sources (record_key, kind, ref, timestamp) VALUES
                     (2, 'event', '0190a1b2-0000-7000-8000-00000000000a', 1767225600000000),
                     (2, 'event', 'run-42', 1767225600000000);",
            )
            .await
            .unwrap();
    });

    let app = crate::helpers::spawn_app_in(dir, |_| {}).await;
    // What the records stored cite, found by the upgrade.
    assert_eq!(
        app.sql_number(
            "SELECT COUNT(*) FROM record_citations
             WHERE cited_id = '0190a1b2-0000-7000-8000-00000000000a'",
            &[]
        ),
        2
    );
    let by_salience = json!({"trust": crate::helpers::trust("hyper", &["team"])});
    let (status, body) = app.post("/v1/retrieve", &by_salience).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(crate::helpers::ids(&body), ["old-fact", "old-note"]);
    assert_eq!(body["records"][1]["salience"], 0.3, "{body}");
    let (_, body) = app
        .post(
            "/v1/retrieve",
            &json!({"trust": crate::helpers::trust("hyper", &["team"]), "task_descriptor": "cache sessions"}),
        )
        .await;
    assert_eq!(crate::helpers::ids(&body)[0], "old-note", "{body}");
    // Others than the scope's members see neither.
    let (_, body) = app
        .post(
            "/v1/retrieve",
            &json!({"trust": crate::helpers::trust("hyper", &["other"])}),
        )
        .await;
    assert!(crate::helpers::ids(&body).is_empty(), "{body}");

    // A revision writes the copies retrieval by salience reads.
    let (status, body) = app
        .post(
            "/v1/revisions/supersede",
            &json!({"old_id": "old-fact", "actor": "a", "rationale": "newer release",
                    "new_record": {"id": "new-fact", "type": "semantic", "sensitivity": "low", "scope": "team",
                        "salience": 0.6,
                        "provenance": {"sources": [{"kind": "observation", "ref": "notes", "timestamp": "2026-01-01T00:00:00Z"}]},
                        "payload": {"kind": "semantic", "subject": "go", "predicate": "version", "object": "1.22"}}}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (_, body) = app.post("/v1/retrieve", &by_salience).await;
    assert_eq!(crate::helpers::ids(&body), ["new-fact", "old-note"]);
    assert_eq!(
        app.sql_number(
            "SELECT COUNT(*) FROM information_schema.columns
             WHERE table_name = 'records' AND column_name IN ('salience', 'decays_from')",
            &[]
        ),
        0
    );
    assert_eq!(
        app.sql_number("SELECT MAX(version) FROM schema_migrations", &[]),
        engram::store::postgres::migrations::latest_version()
    );
    // Version 5: the search text is the analyser's terms, as SQLite has
    // them: "1.21" is `1` and `21` (the `english` parser kept `1.21`).
    assert_eq!(
        app.sql_number(
            "SELECT COUNT(*) FROM records WHERE search @@ '''21'' & ''1'''::tsquery",
            &[]
        ),
        1
    );
    // Version 4: the record retracted before the upgrade and the one
    // superseded after it have a retracted record's facets, not a current
    // one's; text queries find them only when asked to.
    assert_eq!(
        app.sql_number(
            "SELECT COUNT(*) FROM records WHERE id IN ('old-gone', 'old-fact') AND search @@ '''RV 1'' & ''REV 0 1 f894427cc1c571f7'' & ''R -'''::tsquery
               AND NOT search @@ '''V 1'' | ''E 0'' | ''EW 0 1 f894427cc1c571f7'''::tsquery",
            &[]
        ),
        2
    );
    let cache = |include_retracted: bool| {
        json!({"trust": crate::helpers::trust("hyper", &["team"]), "task_descriptor": "cache",
               "include_retracted": include_retracted})
    };
    let (_, body) = app.post("/v1/retrieve", &cache(false)).await;
    assert_eq!(crate::helpers::ids(&body), ["old-note"], "{body}");
    let (_, body) = app.post("/v1/retrieve", &cache(true)).await;
    let mut found = crate::helpers::ids(&body);
    found.sort();
    assert_eq!(found, ["old-gone", "old-note"], "{body}");
    // Version 3: the facets are one expression, written into the
    // statements that call them, not a function run per row.
    app.sql_execute(
        "CREATE FUNCTION plan_lines(statement TEXT, part TEXT) RETURNS BIGINT
         LANGUAGE plpgsql AS $$
         DECLARE line TEXT; n BIGINT := 0;
         BEGIN
             FOR line IN EXECUTE 'EXPLAIN VERBOSE ' || statement LOOP
                 IF position(part IN line) > 0 THEN n := n + 1; END IF;
             END LOOP;
             RETURN n;
         END $$",
    );
    let facets = "SELECT engram_facets(key, layer, sensitivity, scope, status) FROM records";
    assert_eq!(
        app.sql_number("SELECT plan_lines(?1, 'engram_facets(')", &[facets]),
        0
    );
    assert_eq!(
        app.sql_number("SELECT plan_lines(?1, 'array_to_tsvector(')", &[facets]),
        1
    );
}
