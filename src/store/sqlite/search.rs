//! The full-text index (migration 0006): one row per record, rowid = the
//! record's key, kept in step with the record by every write.
//!
//! FTS5 writes its pending terms to disk whenever a savepoint opens, and
//! the writer runs every job in a savepoint of its own, so indexing in
//! place would write one tiny segment per record and merge them all the
//! time. Instead a write records what to index in a temporary table (which
//! a rolled-back savepoint rolls back with the rest of the job), and
//! [`flush`] applies it all in two statements just before the transaction
//! commits: same transaction, one segment per commit.

use chrono::Utc;
use rusqlite::{params, Connection};

use super::records::load_records;
use crate::domain::record::MemoryRecord;
use crate::domain::search::{search_text, text_hash};
use crate::store::StoreError;

/// Sets a connection up to write records: the pending table, and a trigger
/// that queues the removal of a deleted record's row.
pub fn prepare(conn: &Connection) -> Result<(), StoreError> {
    conn.execute_batch(
        "CREATE TEMP TABLE IF NOT EXISTS search_pending (
             key   INTEGER PRIMARY KEY,
             text  TEXT,
             fresh INTEGER NOT NULL
         );
         CREATE TEMP TRIGGER IF NOT EXISTS search_pending_delete AFTER DELETE ON main.records
         BEGIN
             INSERT INTO search_pending (key, text, fresh) VALUES (old.key, NULL, 0)
             ON CONFLICT (key) DO UPDATE SET text = NULL;
         END;",
    )?;
    Ok(())
}

/// Queues the indexing of a new record stored under `key`; answers the
/// hash of its search text.
pub fn index(conn: &Connection, key: i64, record: &MemoryRecord) -> Result<i64, StoreError> {
    queue(conn, key, record, true)
}

/// Queues the re-indexing of a record rewritten under `key`; answers the
/// hash of its search text.
pub fn reindex(conn: &Connection, key: i64, record: &MemoryRecord) -> Result<i64, StoreError> {
    queue(conn, key, record, false)
}

/// `fresh`: the record has no row in the index yet, so none is removed.
fn queue(
    conn: &Connection,
    key: i64,
    record: &MemoryRecord,
    fresh: bool,
) -> Result<i64, StoreError> {
    let text = search_text(record);
    conn.prepare_cached(
        "INSERT INTO search_pending (key, text, fresh) VALUES (?1, ?2, ?3)
         ON CONFLICT (key) DO UPDATE SET text = excluded.text",
    )?
    .execute(params![key, text, fresh])?;
    Ok(text_hash(&text))
}

/// Applies what the transaction's writes queued; call just before
/// committing.
pub fn flush(conn: &Connection) -> Result<(), StoreError> {
    let queued: i64 = conn
        .prepare_cached("SELECT EXISTS (SELECT 1 FROM search_pending)")?
        .query_row([], |row| row.get(0))?;
    if queued == 0 {
        return Ok(());
    }
    conn.prepare_cached(
        "DELETE FROM record_search WHERE rowid IN (SELECT key FROM search_pending WHERE fresh = 0)",
    )?
    .execute([])?;
    conn.prepare_cached(
        "INSERT INTO record_search (rowid, text)
         SELECT key, text FROM search_pending WHERE text IS NOT NULL ORDER BY key",
    )?
    .execute([])?;
    conn.prepare_cached("DELETE FROM search_pending")?
        .execute([])?;
    Ok(())
}

/// Records per backfill step.
const BACKFILL_CHUNK: usize = 1000;

/// Indexes every stored record: run once, when migration 0006 is applied
/// to a database that already holds records. Answers how many.
pub fn backfill(conn: &Connection) -> Result<usize, StoreError> {
    let now = Utc::now();
    let mut after = 0i64;
    let mut indexed = 0;
    loop {
        let keys: Vec<i64> = conn
            .prepare("SELECT key FROM records WHERE key > ?1 ORDER BY key LIMIT ?2")?
            .query_map(params![after, BACKFILL_CHUNK as i64], |row| row.get(0))?
            .collect::<Result<_, _>>()?;
        let Some(last) = keys.last() else {
            return Ok(indexed);
        };
        after = *last;
        for (key, record) in keys.iter().zip(load_records(conn, &keys, now)?) {
            conn.prepare_cached("INSERT INTO record_search (rowid, text) VALUES (?1, ?2)")?
                .execute(params![key, search_text(&record)])?;
            indexed += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::records::{get_for_update, insert_record, update_record};
    use super::super::test_support::{conn, now, record};
    use super::*;
    use crate::domain::search::TextQuery;
    use crate::store::SalienceChange;
    use serde_json::json;

    fn matches(conn: &Connection, text: &str) -> Vec<i64> {
        flush(conn).unwrap();
        let Some(query) = TextQuery::new(text).map(|q| q.any()) else {
            return Vec::new();
        };
        conn.prepare("SELECT rowid FROM record_search WHERE record_search MATCH ?1 ORDER BY rowid")
            .unwrap()
            .query_map([query], |row| row.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }

    fn fact(id: &str, object: &str) -> MemoryRecord {
        record(
            id,
            json!({"type": "semantic", "sensitivity": "low",
                   "payload": {"kind": "semantic", "subject": "user", "predicate": "likes", "object": object}}),
        )
    }

    #[test]
    fn the_index_follows_inserts_rewrites_and_deletes() {
        let conn = conn();
        let a = insert_record(&conn, &fact("a", "running marathons")).unwrap();
        let b = insert_record(&conn, &fact("b", "green tea")).unwrap();
        // Stemmed: "run" finds "running".
        assert_eq!(matches(&conn, "run"), vec![a]);
        assert_eq!(matches(&conn, "tea or coffee?"), vec![b]);
        let loaded = get_for_update(&conn, "b", now()).unwrap().unwrap();
        let mut changed = loaded.record.clone();
        if let crate::domain::payload::Payload::Semantic(p) = &mut changed.payload {
            p.object = json!("black coffee");
        }
        update_record(&conn, &loaded.version, &changed, SalienceChange::Unchanged).unwrap();
        assert_eq!(matches(&conn, "tea"), Vec::<i64>::new());
        assert_eq!(matches(&conn, "coffee"), vec![b]);
        conn.execute("DELETE FROM records WHERE key = ?1", [a])
            .unwrap();
        assert!(matches(&conn, "marathon").is_empty());
        let rows: i64 = conn
            .query_row("SELECT COUNT(*) FROM record_search", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 1);
    }

    #[test]
    fn no_client_text_is_an_fts_syntax_error() {
        let conn = conn();
        insert_record(&conn, &fact("a", "near the end")).unwrap();
        for text in [
            "\"unbalanced",
            "a\" OR \"b",
            "prefix*",
            "NEAR(a b, 2)",
            "-excluded",
            "(open",
            "close)",
            "AND OR NOT",
            "col:umn",
            "^start",
            "{a b}: c",
            "'single'",
            "ünïcödé ✓ 日本語",
            "\u{0}",
        ] {
            let _ = matches(&conn, text);
        }
        assert_eq!(matches(&conn, "NEAR"), vec![1]);
    }

    #[test]
    fn a_rolled_back_write_leaves_nothing_to_index() {
        let conn = conn();
        conn.execute_batch("BEGIN; SAVEPOINT job").unwrap();
        insert_record(&conn, &fact("a", "kayaking")).unwrap();
        conn.execute_batch("ROLLBACK TO job; RELEASE job").unwrap();
        insert_record(&conn, &fact("b", "climbing")).unwrap();
        flush(&conn).unwrap();
        conn.execute_batch("COMMIT").unwrap();
        assert!(matches(&conn, "kayak").is_empty());
        assert_eq!(matches(&conn, "climb").len(), 1);
    }

    #[test]
    fn a_database_from_before_the_index_is_backfilled() {
        let conn = conn();
        insert_record(&conn, &fact("a", "sailing")).unwrap();
        flush(&conn).unwrap();
        conn.execute_batch("DELETE FROM record_search").unwrap();
        assert!(matches(&conn, "sail").is_empty());
        assert_eq!(backfill(&conn).unwrap(), 1);
        assert_eq!(matches(&conn, "sail").len(), 1);
    }
}
