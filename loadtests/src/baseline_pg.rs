//! The bare PostgreSQL baseline: the rows of the SQLite baseline
//! (`baseline.rs`, the storage seed's schema: a record, its decay profile,
//! payload, three tags, a provenance source and an audit entry) written
//! with tokio-postgres by one client in a loop, `per_transaction` records
//! per transaction, one prepared statement per row. It runs in a schema of
//! its own, dropped afterwards, so it can share engram's database.

use std::time::Instant;

use tokio_postgres::NoTls;

use crate::baseline::BaselineResult;
use crate::workload::{sentence, Rng};

const SCHEMA: &str = "
CREATE TABLE memory_records (
    id TEXT PRIMARY KEY,
    type TEXT NOT NULL CHECK(type IN ('episodic','working','semantic','competence','plan_graph')),
    sensitivity TEXT NOT NULL CHECK(sensitivity IN ('public','low','medium','high','hyper')),
    confidence DOUBLE PRECISION NOT NULL CHECK(confidence >= 0 AND confidence <= 1),
    salience DOUBLE PRECISION NOT NULL CHECK(salience >= 0),
    scope TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE TABLE decay_profiles (
    record_id TEXT PRIMARY KEY REFERENCES memory_records(id) ON DELETE CASCADE,
    curve TEXT NOT NULL CHECK(curve IN ('exponential','linear','custom')),
    half_life_seconds BIGINT NOT NULL CHECK(half_life_seconds > 0),
    min_salience DOUBLE PRECISION NOT NULL DEFAULT 0,
    max_age_seconds BIGINT,
    reinforcement_gain DOUBLE PRECISION NOT NULL DEFAULT 0.1,
    last_reinforced_at TIMESTAMPTZ NOT NULL,
    pinned BOOLEAN NOT NULL DEFAULT FALSE,
    deletion_policy TEXT NOT NULL DEFAULT 'auto_prune'
);
CREATE TABLE payloads (
    record_id TEXT PRIMARY KEY REFERENCES memory_records(id) ON DELETE CASCADE,
    payload_json TEXT NOT NULL
);
CREATE TABLE tags (
    record_id TEXT NOT NULL REFERENCES memory_records(id) ON DELETE CASCADE,
    tag TEXT NOT NULL,
    PRIMARY KEY(record_id, tag)
);
CREATE TABLE provenance_sources (
    id BIGSERIAL PRIMARY KEY,
    record_id TEXT NOT NULL REFERENCES memory_records(id) ON DELETE CASCADE,
    kind TEXT NOT NULL CHECK(kind IN ('event','artifact','tool_call','observation','outcome')),
    ref TEXT NOT NULL,
    hash TEXT,
    created_by TEXT,
    timestamp TIMESTAMPTZ NOT NULL
);
CREATE TABLE audit_log (
    id BIGSERIAL PRIMARY KEY,
    record_id TEXT NOT NULL REFERENCES memory_records(id) ON DELETE CASCADE,
    action TEXT NOT NULL CHECK(action IN ('create','revise','fork','merge','delete','reinforce','decay')),
    actor TEXT NOT NULL,
    timestamp TIMESTAMPTZ NOT NULL,
    rationale TEXT NOT NULL,
    previous_state_json TEXT
);
CREATE INDEX idx_records_type ON memory_records(type);
CREATE INDEX idx_records_salience ON memory_records(salience DESC);
CREATE INDEX idx_records_sensitivity ON memory_records(sensitivity);
CREATE INDEX idx_records_scope ON memory_records(scope);
CREATE INDEX idx_records_created ON memory_records(created_at);
CREATE INDEX idx_audit_record ON audit_log(record_id);
CREATE INDEX idx_audit_timestamp ON audit_log(timestamp);
CREATE INDEX idx_tags_tag ON tags(tag);
CREATE INDEX idx_provenance_record ON provenance_sources(record_id);
";

pub async fn run(
    url: &str,
    records: u64,
    per_transaction: u64,
    seed: u64,
) -> Result<BaselineResult, String> {
    let (mut client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .map_err(|e| format!("cannot connect to {url}: {e}"))?;
    actix_rt::spawn(connection);
    let schema = format!("baseline_{}_{per_transaction}", std::process::id());
    let fail = |e: tokio_postgres::Error| e.to_string();
    client
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema};
             SET search_path TO {schema}; {SCHEMA}"
        ))
        .await
        .map_err(fail)?;
    let record = client
        .prepare(
            "INSERT INTO memory_records (id, type, sensitivity, confidence, salience, scope, created_at, updated_at)
             VALUES ($1, 'episodic', 'low', 0.8, 1.0, 'project-alpha', now(), now())",
        )
        .await
        .map_err(fail)?;
    let decay = client
        .prepare(
            "INSERT INTO decay_profiles (record_id, curve, half_life_seconds, min_salience, reinforcement_gain,
                 last_reinforced_at, pinned, deletion_policy)
             VALUES ($1, 'exponential', 3600, 0, 0.1, now(), FALSE, 'auto_prune')",
        )
        .await
        .map_err(fail)?;
    let payload = client
        .prepare("INSERT INTO payloads (record_id, payload_json) VALUES ($1, $2)")
        .await
        .map_err(fail)?;
    let tag = client
        .prepare("INSERT INTO tags (record_id, tag) VALUES ($1, $2) ON CONFLICT DO NOTHING")
        .await
        .map_err(fail)?;
    let source = client
        .prepare(
            "INSERT INTO provenance_sources (record_id, kind, ref, created_by, timestamp)
             VALUES ($1, 'event', $2, 'baseline-agent', now())",
        )
        .await
        .map_err(fail)?;
    let audit = client
        .prepare(
            "INSERT INTO audit_log (record_id, action, actor, timestamp, rationale)
             VALUES ($1, 'create', 'baseline-agent', now(), 'ingested event')",
        )
        .await
        .map_err(fail)?;
    let mut rng = Rng::new(seed);
    let tags = [
        "ops", "dev", "prod", "auth", "build", "infra", "ui", "db", "perf", "docs",
    ];
    let started = Instant::now();
    let mut written = 0;
    while written < records {
        let tx = client.transaction().await.map_err(fail)?;
        let batch = per_transaction.min(records - written);
        for _ in 0..batch {
            let id = uuid::Uuid::new_v4().to_string();
            tx.execute(&record, &[&id]).await.map_err(fail)?;
            tx.execute(&decay, &[&id]).await.map_err(fail)?;
            let body = format!(
                "{{\"kind\":\"episodic\",\"timeline\":[{{\"event_kind\":\"user_input\",\"ref\":\"msg-{written}\",\"summary\":\"{}\"}}],\"tool_graph\":[],\"outcome\":null,\"environment\":null,\"artifacts\":[]}}",
                sentence(&mut rng, 40)
            );
            tx.execute(&payload, &[&id, &body]).await.map_err(fail)?;
            for i in 0..3 {
                let name = tags[(rng.below(tags.len() as u64) as usize + i) % tags.len()];
                tx.execute(&tag, &[&id, &name]).await.map_err(fail)?;
            }
            tx.execute(&source, &[&id, &format!("msg-{written}")])
                .await
                .map_err(fail)?;
            tx.execute(&audit, &[&id]).await.map_err(fail)?;
            written += 1;
        }
        tx.commit().await.map_err(fail)?;
    }
    let elapsed = started.elapsed();
    client
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .map_err(fail)?;
    Ok(BaselineResult {
        records,
        per_transaction,
        elapsed,
    })
}
