//! Numbered SQL migrations from `migrations/`, compiled in, applied in
//! order at start-up and recorded in `schema_migrations`. Applying is
//! idempotent; a database written by a newer engram is refused rather than
//! guessed at.

use chrono::Utc;
use rusqlite::{params, Connection};

use crate::store::error::StoreError;

/// Fills in data for a migration; answers how many rows it filled.
pub type Backfill = fn(&Connection) -> Result<usize, StoreError>;

pub struct Migration {
    pub version: i64,
    pub name: &'static str,
    pub sql: &'static str,
    /// Data the SQL cannot derive, filled in the same transaction.
    pub backfill: Option<Backfill>,
}

pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "init",
        sql: include_str!("../../../migrations/sqlite/0001_init.sql"),
        backfill: None,
    },
    Migration {
        version: 2,
        name: "maintenance",
        sql: include_str!("../../../migrations/sqlite/0002_maintenance.sql"),
        backfill: None,
    },
    Migration {
        version: 3,
        name: "versions",
        sql: include_str!("../../../migrations/sqlite/0003_versions.sql"),
        backfill: None,
    },
    Migration {
        version: 4,
        name: "imported_audit",
        sql: include_str!("../../../migrations/sqlite/0004_imported_audit.sql"),
        backfill: None,
    },
    Migration {
        version: 5,
        name: "rank_bounds",
        sql: include_str!("../../../migrations/sqlite/0005_rank_bounds.sql"),
        backfill: None,
    },
    Migration {
        version: 6,
        name: "search",
        sql: include_str!("../../../migrations/sqlite/0006_search.sql"),
        // Indexed by version 14, which makes the index again.
        backfill: None,
    },
    Migration {
        version: 7,
        name: "filters",
        sql: include_str!("../../../migrations/sqlite/0007_filters.sql"),
        backfill: None,
    },
    Migration {
        version: 8,
        name: "vectors",
        sql: include_str!("../../../migrations/sqlite/0008_vectors.sql"),
        backfill: None,
    },
    Migration {
        version: 9,
        name: "api_keys",
        sql: include_str!("../../../migrations/sqlite/0009_api_keys.sql"),
        backfill: None,
    },
    Migration {
        version: 10,
        name: "topics",
        sql: include_str!("../../../migrations/sqlite/0010_topics.sql"),
        backfill: None,
    },
    Migration {
        version: 11,
        name: "topic_salience",
        sql: include_str!("../../../migrations/sqlite/0011_topic_salience.sql"),
        backfill: Some(super::topics::backfill_words),
    },
    Migration {
        version: 12,
        name: "job_run_history",
        sql: include_str!("../../../migrations/sqlite/0012_job_run_history.sql"),
        backfill: None,
    },
    Migration {
        version: 13,
        name: "job_leases",
        sql: include_str!("../../../migrations/sqlite/0013_job_leases.sql"),
        backfill: None,
    },
    Migration {
        version: 14,
        name: "analysed_search",
        sql: include_str!("../../../migrations/sqlite/0014_analysed_search.sql"),
        backfill: Some(super::search::backfill),
    },
    Migration {
        version: 15,
        name: "scope_slices",
        sql: include_str!("../../../migrations/sqlite/0015_scope_slices.sql"),
        backfill: None,
    },
    Migration {
        version: 16,
        name: "field_ends",
        sql: include_str!("../../../migrations/sqlite/0016_field_ends.sql"),
        backfill: None,
    },
    Migration {
        version: 17,
        name: "topic_names",
        sql: include_str!("../../../migrations/sqlite/0017_topic_names.sql"),
        backfill: Some(super::topic_names::renormalize_titles),
    },
    Migration {
        version: 18,
        name: "erasure",
        sql: include_str!("../../../migrations/sqlite/0018_erasure.sql"),
        backfill: None,
    },
    Migration {
        version: 19,
        name: "citations",
        sql: include_str!("../../../migrations/sqlite/0019_citations.sql"),
        backfill: None,
    },
    Migration {
        version: 20,
        name: "topic_words_by_scope",
        sql: include_str!("../../../migrations/sqlite/0020_topic_words_by_scope.sql"),
        backfill: None,
    },
    Migration {
        version: 21,
        name: "erasure_log_by_scope",
        sql: include_str!("../../../migrations/sqlite/0021_erasure_log_by_scope.sql"),
        backfill: None,
    },
    Migration {
        version: 22,
        name: "secure_search",
        sql: include_str!("../../../migrations/sqlite/0022_secure_search.sql"),
        backfill: Some(super::search::reindex_all),
    },
    Migration {
        version: 23,
        name: "conversations",
        sql: include_str!("../../../migrations/sqlite/0023_conversations.sql"),
        backfill: None,
    },
    Migration {
        version: 24,
        name: "counted_terms",
        sql: include_str!("../../../migrations/sqlite/0024_counted_terms.sql"),
        backfill: Some(super::counted::count_all),
    },
];

pub fn latest_version() -> i64 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

/// Brings the schema up to date; returns the versions applied now.
pub fn run(conn: &mut Connection) -> Result<Vec<i64>, StoreError> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
             version    INTEGER PRIMARY KEY,
             name       TEXT NOT NULL,
             applied_at TEXT NOT NULL
         )",
    )?;
    let current: i64 = conn.query_row(
        "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
        [],
        |row| row.get(0),
    )?;
    if current > latest_version() {
        return Err(StoreError::Schema(format!(
            "the database schema is version {current}, newer than this engram understands \
             (up to {}); run a newer engram or point storage.db_path at another file",
            latest_version()
        )));
    }
    let mut applied = Vec::new();
    for migration in MIGRATIONS.iter().filter(|m| m.version > current) {
        let tx = conn.transaction()?;
        tx.execute_batch(migration.sql)?;
        if let Some(backfill) = migration.backfill {
            let filled = backfill(&tx)?;
            tracing::info!(
                version = migration.version,
                records = filled,
                "migration backfilled"
            );
        }
        tx.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?1, ?2, ?3)",
            params![migration.version, migration.name, Utc::now().to_rfc3339()],
        )?;
        tx.commit()?;
        applied.push(migration.version);
    }
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::maintenance::JobStore;

    #[test]
    fn migrations_apply_once_and_rerunning_is_a_no_op() {
        let mut conn = Connection::open_in_memory().unwrap();
        assert_eq!(
            run(&mut conn).unwrap(),
            (1..=latest_version()).collect::<Vec<_>>()
        );
        assert!(run(&mut conn).unwrap().is_empty());
        let tables: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'records'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(tables, 1);
    }

    #[test]
    fn the_last_run_of_each_job_is_carried_into_the_run_history() {
        let mut conn = Connection::open_in_memory().unwrap();
        for m in &MIGRATIONS[..11] {
            conn.execute_batch(m.sql).unwrap();
        }
        conn.execute_batch(
            "INSERT INTO job_runs VALUES ('decay', 10, 20, 10, '{\"scanned\": 3}', NULL);
             INSERT INTO job_runs VALUES ('consolidation', 30, 31, 1, NULL, 'disk full');",
        )
        .unwrap();
        conn.execute_batch(MIGRATIONS[11].sql).unwrap();
        let runs = conn.recent_job_runs(10).unwrap();
        let seen: Vec<_> = runs
            .iter()
            .map(|r| (r.name.as_str(), r.duration_ms, r.outcome.clone()))
            .collect();
        assert_eq!(
            seen,
            vec![
                ("consolidation", 1, Err("disk full".to_string())),
                ("decay", 10, Ok(serde_json::json!({"scanned": 3}))),
            ]
        );
    }

    #[test]
    fn a_database_from_a_newer_version_is_refused() {
        let mut conn = Connection::open_in_memory().unwrap();
        run(&mut conn).unwrap();
        conn.execute(
            "INSERT INTO schema_migrations VALUES (99, 'future', 'now')",
            [],
        )
        .unwrap();
        let err = run(&mut conn).unwrap_err().to_string();
        assert!(err.contains("version 99"), "{err}");
    }

    #[test]
    fn migration_files_are_numbered_in_order() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version, i as i64 + 1);
        }
    }
}
