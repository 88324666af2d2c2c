//! The bare baseline: a plain rusqlite loop writing the storage
//! reference's normalised schema, as the write-throughput targets are
//! stated against it. A record is one `memory_records` row, its decay
//! profile, a ~400-byte JSON payload, 3 tags, 1 provenance source and 1
//! audit entry; ids are UUIDv4 text; WAL, `synchronous=NORMAL`, SQLite's
//! default page cache.

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::{params, Connection};

use crate::workload::{sentence, Rng};

/// The storage reference's schema and indexes, as given there.
const SCHEMA: &str = "
CREATE TABLE memory_records (
    id TEXT PRIMARY KEY,
    type TEXT NOT NULL CHECK(type IN ('episodic','working','semantic','competence','plan_graph')),
    sensitivity TEXT NOT NULL CHECK(sensitivity IN ('public','low','medium','high','hyper')),
    confidence REAL NOT NULL CHECK(confidence >= 0 AND confidence <= 1),
    salience REAL NOT NULL CHECK(salience >= 0),
    scope TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE decay_profiles (
    record_id TEXT PRIMARY KEY REFERENCES memory_records(id) ON DELETE CASCADE,
    curve TEXT NOT NULL CHECK(curve IN ('exponential','linear','custom')),
    half_life_seconds INTEGER NOT NULL CHECK(half_life_seconds > 0),
    min_salience REAL NOT NULL DEFAULT 0,
    max_age_seconds INTEGER,
    reinforcement_gain REAL NOT NULL DEFAULT 0.1,
    last_reinforced_at TEXT NOT NULL,
    pinned INTEGER NOT NULL DEFAULT 0,
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
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    record_id TEXT NOT NULL REFERENCES memory_records(id) ON DELETE CASCADE,
    kind TEXT NOT NULL CHECK(kind IN ('event','artifact','tool_call','observation','outcome')),
    ref TEXT NOT NULL,
    hash TEXT,
    created_by TEXT,
    timestamp TEXT NOT NULL
);
CREATE TABLE relations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    source_id TEXT NOT NULL REFERENCES memory_records(id) ON DELETE CASCADE,
    predicate TEXT NOT NULL,
    target_id TEXT NOT NULL REFERENCES memory_records(id) ON DELETE CASCADE,
    weight REAL DEFAULT 1.0 CHECK(weight >= 0 AND weight <= 1),
    created_at TEXT NOT NULL
);
CREATE TABLE audit_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    record_id TEXT NOT NULL REFERENCES memory_records(id) ON DELETE CASCADE,
    action TEXT NOT NULL CHECK(action IN ('create','revise','fork','merge','delete','reinforce','decay')),
    actor TEXT NOT NULL,
    timestamp TEXT NOT NULL,
    rationale TEXT NOT NULL,
    previous_state_json TEXT
);
CREATE TABLE competence_stats (
    record_id TEXT PRIMARY KEY REFERENCES memory_records(id) ON DELETE CASCADE,
    success_count INTEGER NOT NULL DEFAULT 0,
    failure_count INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX idx_records_type ON memory_records(type);
CREATE INDEX idx_records_salience ON memory_records(salience DESC);
CREATE INDEX idx_records_sensitivity ON memory_records(sensitivity);
CREATE INDEX idx_records_scope ON memory_records(scope);
CREATE INDEX idx_records_created ON memory_records(created_at);
CREATE INDEX idx_relations_source ON relations(source_id);
CREATE INDEX idx_relations_target ON relations(target_id);
CREATE INDEX idx_relations_predicate ON relations(predicate);
CREATE INDEX idx_audit_record ON audit_log(record_id);
CREATE INDEX idx_audit_timestamp ON audit_log(timestamp);
CREATE INDEX idx_tags_tag ON tags(tag);
CREATE INDEX idx_provenance_record ON provenance_sources(record_id);
";

#[derive(Debug, Clone, Copy)]
pub struct BaselineResult {
    pub records: u64,
    pub per_transaction: u64,
    pub elapsed: Duration,
}

impl BaselineResult {
    pub fn records_per_second(&self) -> f64 {
        self.records as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Writes `records` records into a new database at `path`, committing
/// every `per_transaction`.
pub fn run(
    path: &Path,
    records: u64,
    per_transaction: u64,
    seed: u64,
) -> rusqlite::Result<BaselineResult> {
    let _ = std::fs::remove_file(path);
    let mut conn = Connection::open(path)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.execute_batch(SCHEMA)?;
    let mut rng = Rng::new(seed);
    let tags = [
        "ops", "dev", "prod", "auth", "build", "infra", "ui", "db", "perf", "docs",
    ];
    let started = Instant::now();
    let mut written = 0;
    while written < records {
        let tx = conn.transaction()?;
        let batch = per_transaction.min(records - written);
        for _ in 0..batch {
            let id = uuid::Uuid::new_v4().to_string();
            let now = chrono_like_now();
            tx.prepare_cached(
                "INSERT INTO memory_records (id, type, sensitivity, confidence, salience, scope, created_at, updated_at)
                 VALUES (?1, 'episodic', 'low', 0.8, 1.0, 'project-alpha', ?2, ?2)",
            )?
            .execute(params![id, now])?;
            tx.prepare_cached(
                "INSERT INTO decay_profiles (record_id, curve, half_life_seconds, min_salience, reinforcement_gain,
                     last_reinforced_at, pinned, deletion_policy)
                 VALUES (?1, 'exponential', 3600, 0, 0.1, ?2, 0, 'auto_prune')",
            )?
            .execute(params![id, now])?;
            let payload = format!(
                "{{\"kind\":\"episodic\",\"timeline\":[{{\"t\":\"{now}\",\"event_kind\":\"user_input\",\"ref\":\"msg-{written}\",\"summary\":\"{}\"}}],\"tool_graph\":[],\"outcome\":null,\"environment\":null,\"artifacts\":[]}}",
                sentence(&mut rng, 40)
            );
            tx.prepare_cached("INSERT INTO payloads (record_id, payload_json) VALUES (?1, ?2)")?
                .execute(params![id, payload])?;
            for i in 0..3 {
                let tag = tags[(rng.below(tags.len() as u64) as usize + i) % tags.len()];
                tx.prepare_cached("INSERT OR IGNORE INTO tags (record_id, tag) VALUES (?1, ?2)")?
                    .execute(params![id, tag])?;
            }
            tx.prepare_cached(
                "INSERT INTO provenance_sources (record_id, kind, ref, created_by, timestamp)
                 VALUES (?1, 'event', ?2, 'baseline-agent', ?3)",
            )?
            .execute(params![id, format!("msg-{written}"), now])?;
            tx.prepare_cached(
                "INSERT INTO audit_log (record_id, action, actor, timestamp, rationale)
                 VALUES (?1, 'create', 'baseline-agent', ?2, 'ingested event')",
            )?
            .execute(params![id, now])?;
            written += 1;
        }
        tx.commit()?;
    }
    Ok(BaselineResult {
        records,
        per_transaction,
        elapsed: started.elapsed(),
    })
}

/// RFC 3339 UTC with nanoseconds, as the reference stores timestamps.
fn chrono_like_now() -> String {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = since.as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:09}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60,
        since.subsec_nanos()
    )
}

/// Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates_are_right() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_454), (2026, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
    }

    #[test]
    fn the_baseline_writes_every_row_of_a_record() {
        let dir = std::env::temp_dir().join(format!("engram-baseline-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("b.db");
        let result = run(&path, 130, 64, 1).unwrap();
        assert_eq!(result.records, 130);
        let conn = Connection::open(&path).unwrap();
        let count = |table: &str| -> i64 {
            conn.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
                .unwrap()
        };
        assert_eq!(count("memory_records"), 130);
        assert_eq!(count("audit_log"), 130);
        assert_eq!(count("provenance_sources"), 130);
        assert!(count("tags") >= 130 * 2);
        let payload: String = conn
            .query_row("SELECT payload_json FROM payloads LIMIT 1", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert!(
            (300..600).contains(&payload.len()),
            "payload of {} bytes",
            payload.len()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
