//! Numbered SQL migrations from `migrations/postgres/`, compiled in and
//! applied in order at start-up, each in its own transaction, recorded in
//! `schema_migrations`. Instances starting at once take turns: an advisory
//! lock is held while migrating, so a migration runs once.

use chrono::Utc;

use super::connection::Pg;
use crate::store::error::StoreError;

/// Fills in data for a migration; answers how many rows it filled.
pub type Backfill = fn(&Pg) -> Result<usize, StoreError>;

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
        sql: include_str!("../../../migrations/postgres/0001_init.sql"),
        backfill: None,
    },
    Migration {
        version: 2,
        name: "salience_with_profile",
        sql: include_str!("../../../migrations/postgres/0002_salience_with_profile.sql"),
        backfill: None,
    },
    Migration {
        version: 3,
        name: "write_path",
        sql: include_str!("../../../migrations/postgres/0003_write_path.sql"),
        backfill: None,
    },
    Migration {
        version: 4,
        name: "live_facets",
        sql: include_str!("../../../migrations/postgres/0004_live_facets.sql"),
        backfill: None,
    },
    Migration {
        version: 5,
        name: "analysed_search",
        sql: include_str!("../../../migrations/postgres/0005_analysed_search.sql"),
        backfill: Some(super::records::reindex_all),
    },
    Migration {
        version: 6,
        name: "field_ends",
        sql: include_str!("../../../migrations/postgres/0006_field_ends.sql"),
        backfill: None,
    },
    Migration {
        version: 7,
        name: "topic_names",
        sql: include_str!("../../../migrations/postgres/0007_topic_names.sql"),
        backfill: Some(super::topic_names::renormalize_titles),
    },
    Migration {
        version: 8,
        name: "erasure",
        sql: include_str!("../../../migrations/postgres/0008_erasure.sql"),
        backfill: None,
    },
    Migration {
        version: 9,
        name: "citations",
        sql: include_str!("../../../migrations/postgres/0009_citations.sql"),
        backfill: None,
    },
    Migration {
        version: 10,
        name: "topic_words_by_scope",
        sql: include_str!("../../../migrations/postgres/0010_topic_words_by_scope.sql"),
        backfill: None,
    },
    Migration {
        version: 11,
        name: "erasure_log_by_scope",
        sql: include_str!("../../../migrations/postgres/0011_erasure_log_by_scope.sql"),
        backfill: None,
    },
    Migration {
        version: 12,
        name: "conversations",
        sql: include_str!("../../../migrations/postgres/0012_conversations.sql"),
        backfill: None,
    },
    Migration {
        version: 13,
        name: "term_counts",
        sql: include_str!("../../../migrations/postgres/0013_term_counts.sql"),
        backfill: None,
    },
    Migration {
        version: 14,
        name: "counts_by_plan",
        sql: include_str!("../../../migrations/postgres/0014_counts_by_plan.sql"),
        backfill: None,
    },
];

pub fn latest_version() -> i64 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

/// The advisory lock key engram migrates under ("engram" in ASCII).
const MIGRATION_LOCK: i64 = 0x656e_6772_616d;

/// Brings the schema up to date; answers the versions applied now.
pub fn run(pg: &Pg) -> Result<Vec<i64>, StoreError> {
    pg.execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])?;
    let applied = apply(pg);
    let unlocked = pg.execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK]);
    let applied = applied?;
    unlocked?;
    Ok(applied)
}

fn apply(pg: &Pg) -> Result<Vec<i64>, StoreError> {
    pg.batch(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
             version    BIGINT PRIMARY KEY,
             name       TEXT NOT NULL,
             applied_at TEXT NOT NULL
         )",
    )?;
    let current: i64 = pg
        .query_one(
            "SELECT COALESCE(MAX(version), 0)::bigint FROM schema_migrations",
            &[],
        )?
        .try_get(0)?;
    if current > latest_version() {
        return Err(StoreError::Schema(format!(
            "the database schema is version {current}, newer than this engram understands \
             (up to {}); run a newer engram or point storage.postgres_url at another database",
            latest_version()
        )));
    }
    let mut applied = Vec::new();
    for migration in MIGRATIONS.iter().filter(|m| m.version > current) {
        // A migration may rewrite every record: on a large database that
        // takes longer than a request may, so the statement timeout set
        // for requests does not apply to it.
        pg.batch("BEGIN; SET LOCAL statement_timeout = 0")?;
        let done = pg.batch(migration.sql).and_then(|()| {
            if let Some(backfill) = migration.backfill {
                let filled = backfill(pg)?;
                tracing::info!(
                    version = migration.version,
                    records = filled,
                    "migration backfilled"
                );
            }
            pg.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)",
                &[
                    &migration.version,
                    &migration.name,
                    &Utc::now().to_rfc3339(),
                ],
            )
        });
        match done {
            Ok(_) => pg.batch("COMMIT")?,
            Err(e) => {
                let _ = pg.batch("ROLLBACK");
                return Err(e);
            }
        }
        applied.push(migration.version);
    }
    Ok(applied)
}
