//! The full-text indexes: of records (migration 0006: one row per record,
//! rowid = the record's key, kept in step with the record by every write)
//! and of topics (migration 0010, rowid = the topic's key).
//!
//! FTS5 writes its pending terms to disk whenever a savepoint opens, and
//! the writer runs every job in a savepoint of its own, so indexing in
//! place would write one tiny segment per record and merge them all the
//! time. Instead a write queues what to index, and [`flush`] applies it
//! all just before the transaction commits: same transaction, one segment
//! per commit.
//!
//! The queue lives in memory, on the thread that writes (one write
//! transaction per thread at a time: the writer's, or a test's), not in a
//! table: a table's pages would be copied to the statement journal by
//! every job's savepoint. So the queue follows the savepoints itself:
//! [`savepoint`], [`release`], [`rollback_to_savepoint`] and [`discard`]
//! mirror what the writer does to the transaction.

use std::cell::RefCell;
use std::sync::Arc;

use chrono::Utc;
use rusqlite::{params, Connection, OptionalExtension};

use super::counted::{Counted, CountedTerms, Partition};
use super::record_reads::load_whole;
use crate::domain::analysis::{self, Analysed};
use crate::domain::record::MemoryRecord;
use crate::domain::search::{text_hash, Searchable};
use crate::store::error::StoreError;

/// The full-text tables written through the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Index {
    /// `record_search`: every record's text.
    Records,
    /// `topic_search`: each topic's title, summary and current values.
    Topics,
}

impl Index {
    fn table(self) -> &'static str {
        match self {
            Index::Records => "record_search",
            Index::Topics => "topic_search",
        }
    }
}

/// A change to a row of `index`: `text` is its new search text and
/// facets (`None`: the row goes), `stored` what the row held before the
/// change (`None`: there was none).
struct Queued {
    index: Index,
    key: i64,
    text: Option<(String, Option<String>)>,
    stored: Option<Stored>,
    /// A removal that is part of an erasure of many: its terms leave the
    /// index at the merge that ends the erasure, not one by one.
    bulk: bool,
}

/// What a row of an index holds, as FTS5's `delete` command must be told
/// it to take the row's terms out of the index (`secure-delete`, migration
/// 0022): its terms, in any order, and for a record its facets.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    text: String,
    facets: Option<String>,
}

/// The row of record `key` in the index, as the record's row says it was
/// indexed (`None`: no such record).
pub fn stored_record(conn: &Connection, key: i64) -> Result<Option<Stored>, StoreError> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {STORED_RECORD} FROM records WHERE key = ?1"
        ))?
        .query_row([key], |row| Stored::of_record(row, 0))
        .optional()?)
}

/// The columns of a record's row [`Stored::of_record`] reads, in its order.
const STORED_RECORD: &str = "search_terms, search_repeats, scope, layer, sensitivity";

impl Stored {
    /// From the [`STORED_RECORD`] columns, the first at `first`.
    fn of_record(row: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<Stored> {
        let terms: String = row.get(first)?;
        let repeats: Option<String> = row.get(first + 1)?;
        let scope: Option<String> = row.get(first + 2)?;
        Ok(Stored {
            text: analysis::terms_text(&terms, repeats.as_deref()),
            facets: Some(facets(
                scope.as_deref(),
                row.get(first + 3)?,
                row.get(first + 4)?,
            )),
        })
    }
}

/// The row of topic `key` in the index (`None`: it has none).
pub fn stored_topic(conn: &Connection, key: i64) -> Result<Option<Stored>, StoreError> {
    let text: Option<Option<String>> = conn
        .prepare_cached("SELECT search_text FROM topics WHERE key = ?1")?
        .query_row([key], |row| row.get(0))
        .optional()?;
    Ok(text.flatten().map(|text| Stored { text, facets: None }))
}

/// Whether two texts of analysed terms hold the same terms, as often.
fn same_terms(a: &str, b: &str) -> bool {
    fn sorted(text: &str) -> Vec<&str> {
        let mut terms: Vec<&str> = text.split(' ').filter(|t| !t.is_empty()).collect();
        terms.sort_unstable();
        terms
    }
    sorted(a) == sorted(b)
}

#[derive(Default)]
struct Queue {
    items: Vec<Queued>,
    /// Changes to the text totals: a record's part, added (+1) or taken
    /// away (-1).
    totals: Vec<(Counted, i64)>,
    /// The queues' lengths when each open savepoint began, innermost last.
    savepoints: Vec<(usize, usize)>,
}

/// Queues a change of the text totals: `counted` added (`sign` 1) or
/// taken away (-1) when the transaction commits.
pub fn count(counted: &Counted, sign: i64) {
    QUEUE.with(|q| q.borrow_mut().totals.push((counted.clone(), sign)));
}

/// Queues the move of a record's part of the text totals from `old` to
/// `new` (nothing when they are the same).
pub fn recount(old: &Counted, new: &Counted) {
    if old != new {
        count(old, -1);
        count(new, 1);
    }
}

thread_local! {
    static QUEUE: RefCell<Queue> = RefCell::new(Queue::default());
}

/// A savepoint opened: what is queued from now on can be rolled back.
pub fn savepoint() {
    QUEUE.with(|q| {
        let mut q = q.borrow_mut();
        let lens = (q.items.len(), q.totals.len());
        q.savepoints.push(lens);
    });
}

/// The innermost savepoint was released: its queued items stay.
pub fn release() {
    QUEUE.with(|q| {
        q.borrow_mut().savepoints.pop();
    });
}

/// The innermost savepoint was rolled back (and released): what it queued
/// is dropped.
pub fn rollback_to_savepoint() {
    QUEUE.with(|q| {
        let mut q = q.borrow_mut();
        if let Some((items, totals)) = q.savepoints.pop() {
            q.items.truncate(items);
            q.totals.truncate(totals);
        }
    });
}

/// The transaction was rolled back: nothing queued stays.
pub fn discard() {
    QUEUE.with(|q| *q.borrow_mut() = Queue::default());
}

/// What the index and the record's row hold of a record's search text.
pub struct Indexed {
    pub analysed: Arc<Analysed>,
    /// Who may see the record, as the `facets` column's tokens.
    facets: String,
    /// The hash of the search text (what an embedding made from it
    /// remembers).
    pub hash: i64,
}

impl Indexed {
    pub fn of(record: &MemoryRecord) -> Indexed {
        let searchable = Searchable::of(record);
        Indexed {
            analysed: searchable.analysed,
            facets: facets(
                record.scope.as_deref(),
                record.memory_type.layer() as i64,
                record.sensitivity.rank() as i64,
            ),
            hash: searchable.hash,
        }
    }
}

/// The facet tokens of a record (see migration 0014).
pub fn facets(scope: Option<&str>, layer: i64, sensitivity: i64) -> String {
    format!(
        "{} l{layer} v{sensitivity}",
        scope_facet(scope, sensitivity)
    )
}

/// The facet token of a scope and a sensitivity: `s` and the hash of the
/// scope's name (`u` for none), `v` and the sensitivity's rank. One token
/// for both, so a caller's records are found by tokens as rare as its
/// scopes, and never one of a sensitivity it may not see.
pub fn scope_facet(scope: Option<&str>, sensitivity: i64) -> String {
    match scope {
        Some(scope) => format!("s{:016x}v{sensitivity}", text_hash(scope) as u64),
        None => format!("uv{sensitivity}"),
    }
}

/// Queues the indexing of a new record stored under `key`.
pub fn index(key: i64, indexed: &Indexed) {
    queue(key, indexed, None)
}

/// Queues the re-indexing of a record rewritten under `key`, whose row
/// held `stored` before ([`stored_record`], read before the rewrite).
pub fn reindex(key: i64, indexed: &Indexed, stored: Option<Stored>) {
    queue(key, indexed, stored)
}

fn queue(key: i64, indexed: &Indexed, stored: Option<Stored>) {
    push(Queued {
        index: Index::Records,
        key,
        text: Some((indexed.analysed.text.clone(), Some(indexed.facets.clone()))),
        stored,
        bulk: false,
    });
}

/// Queues the removal of a deleted record's row, which held `stored`
/// ([`stored_record`], read before the deletion).
pub fn remove(key: i64, stored: Option<Stored>) {
    remove_from(Index::Records, key, stored);
}

/// Queues the removal of the row of `key` in `index`, which held
/// `stored`.
pub fn remove_from(index: Index, key: i64, stored: Option<Stored>) {
    push(Queued {
        index,
        key,
        text: None,
        stored,
        bulk: false,
    });
}

/// [`remove`] for a record of an erasure of many: its row goes the plain
/// way (a deletion mark, its terms left in the segments), and the index is
/// marked for the merge the erasure's scrub makes.
pub fn remove_in_bulk(key: i64, stored: Option<Stored>) {
    push(Queued {
        index: Index::Records,
        key,
        text: None,
        stored,
        bulk: true,
    });
}

/// Queues `analysed` (terms as `analysis::indexed` makes them) as the row
/// of topic `key`, which held `stored` ([`stored_topic`]).
pub fn set_topic(key: i64, analysed: String, stored: Option<Stored>) {
    push(Queued {
        index: Index::Topics,
        key,
        text: Some((analysed, None)),
        stored,
        bulk: false,
    });
}

fn push(item: Queued) {
    QUEUE.with(|q| q.borrow_mut().items.push(item));
}

/// Applies what the transaction's writes queued; call just before
/// committing. A record queued more than once ends as its last entry says.
pub fn flush(conn: &Connection, counted: &mut CountedTerms) -> Result<(), StoreError> {
    let (items, totals) = QUEUE.with(|q| {
        let mut q = q.borrow_mut();
        (std::mem::take(&mut q.items), std::mem::take(&mut q.totals))
    });
    super::counted::add(conn, counted, &totals)?;
    flush_totals(conn, totals)?;
    flush_items(conn, items)?;
    // Terms newly counted are counted from the index, which now holds this
    // transaction's records too (the changes above left them out: they
    // had no number yet).
    let due = super::counted::take_wanted(conn);
    if !due.is_empty() {
        super::counted::count_new(conn, counted, &due)?;
    }
    Ok(())
}

/// Applies the queued changes of the full-text indexes.
fn flush_items(conn: &Connection, mut items: Vec<Queued>) -> Result<(), StoreError> {
    if items.is_empty() {
        return Ok(());
    }
    // Stable: a row's entries keep their order, first to last.
    items.sort_by_key(|item| (item.index, item.key));
    for rows in items.chunk_by(|a, b| a.index == b.index) {
        let table = rows[0].index.table();
        // A row goes with the terms it was indexed with: `secure-delete`
        // takes them out of the index's segments at once.
        let (mut forget, mut insert) = match rows[0].index {
            Index::Records => (
                conn.prepare_cached(&format!(
                    "INSERT INTO {table} ({table}, rowid, text, facets) VALUES ('delete', ?1, ?2, ?3)"
                ))?,
                conn.prepare_cached(&format!(
                    "INSERT INTO {table} (rowid, text, facets) VALUES (?1, ?2, ?3)"
                ))?,
            ),
            Index::Topics => (
                conn.prepare_cached(&format!(
                    "INSERT INTO {table} ({table}, rowid, text) VALUES ('delete', ?1, ?2)"
                ))?,
                conn.prepare_cached(&format!("INSERT INTO {table} (rowid, text) VALUES (?1, ?2)"))?,
            ),
        };
        let groups: Vec<&[Queued]> = rows.chunk_by(|a, b| a.key == b.key).collect();
        fn in_bulk(group: &[Queued]) -> bool {
            let last = &group[group.len() - 1];
            last.bulk && last.text.is_none()
        }
        // Removals of an erasure of many: plain deletion marks, and the
        // index marked for the merge that ends the erasure.
        if groups.iter().any(|g| in_bulk(g)) {
            conn.prepare_cached(&format!(
                "INSERT INTO {table} ({table}, rank) VALUES ('secure-delete', 0)"
            ))?
            .execute([])?;
            for group in groups.iter().filter(|g| in_bulk(g)) {
                forget_row(&mut forget, group[0].key, &group[0].stored)?;
            }
            conn.prepare_cached(&format!(
                "INSERT INTO {table} ({table}, rank) VALUES ('secure-delete', 1)"
            ))?
            .execute([])?;
            conn.prepare_cached("INSERT OR IGNORE INTO search_merge_due (index_name) VALUES (?1)")?
                .execute([table])?;
        }
        for group in groups.iter().filter(|g| !in_bulk(g)) {
            let (first, last) = (&group[0], &group[group.len() - 1]);
            let key = first.key;
            if let (Some(old), Some((text, facets))) = (&first.stored, &last.text) {
                if old.facets == *facets && same_terms(&old.text, text) {
                    continue;
                }
            }
            forget_row(&mut forget, key, &first.stored)?;
            match &last.text {
                Some((text, Some(facets))) => insert.execute(params![key, text, facets])?,
                Some((text, None)) => insert.execute(params![key, text])?,
                None => 0,
            };
        }
    }
    Ok(())
}

/// Takes the row `key` held (`stored`, if any) out of an index, through
/// its `delete` statement.
fn forget_row(
    forget: &mut rusqlite::CachedStatement<'_>,
    key: i64,
    stored: &Option<Stored>,
) -> Result<(), StoreError> {
    match stored {
        Some(Stored {
            text,
            facets: Some(facets),
        }) => forget.execute(params![key, text, facets])?,
        Some(Stored { text, facets: None }) => forget.execute(params![key, text])?,
        None => 0,
    };
    Ok(())
}

/// Adds the queued changes of the text totals, one statement per
/// partition changed.
fn flush_totals(conn: &Connection, totals: Vec<(Counted, i64)>) -> Result<(), StoreError> {
    if totals.is_empty() {
        return Ok(());
    }
    let mut sums: std::collections::BTreeMap<Partition, (i64, i64)> =
        std::collections::BTreeMap::new();
    for (c, sign) in totals {
        let sum = sums.entry(c.partition()).or_default();
        sum.0 += sign;
        sum.1 += sign * c.length;
    }
    let mut all: std::collections::BTreeMap<(i64, i64, bool), (i64, i64)> =
        std::collections::BTreeMap::new();
    let mut by_scope = conn.prepare_cached(
        "INSERT INTO text_totals (scope, layer, sensitivity, live, docs, tokens)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT DO UPDATE SET docs = docs + excluded.docs, tokens = tokens + excluded.tokens",
    )?;
    for ((scope, layer, sensitivity, live), (docs, tokens)) in sums {
        if (docs, tokens) == (0, 0) {
            continue;
        }
        by_scope.execute(params![scope, layer, sensitivity, live, docs, tokens])?;
        let sum = all.entry((layer, sensitivity, live)).or_default();
        sum.0 += docs;
        sum.1 += tokens;
    }
    let mut every = conn.prepare_cached(
        "INSERT INTO text_totals_all (layer, sensitivity, live, docs, tokens)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT DO UPDATE SET docs = docs + excluded.docs, tokens = tokens + excluded.tokens",
    )?;
    for ((layer, sensitivity, live), (docs, tokens)) in all {
        every.execute(params![layer, sensitivity, live, docs, tokens])?;
    }
    Ok(())
}

/// Records per backfill step.
const BACKFILL_CHUNK: usize = 1000;

/// Indexes every stored record again from the terms its row keeps (the
/// index was made anew by migration 0022); answers how many.
pub fn reindex_all(conn: &Connection) -> Result<usize, StoreError> {
    let mut after = 0i64;
    let mut indexed = 0;
    let mut insert =
        conn.prepare("INSERT INTO record_search (rowid, text, facets) VALUES (?1, ?2, ?3)")?;
    let mut rows = conn.prepare(&format!(
        "SELECT key, {STORED_RECORD} FROM records WHERE key > ?1 ORDER BY key LIMIT ?2"
    ))?;
    loop {
        let chunk: Vec<(i64, Stored)> = rows
            .query_map(params![after, BACKFILL_CHUNK as i64], |row| {
                Ok((row.get(0)?, Stored::of_record(row, 1)?))
            })?
            .collect::<Result<_, _>>()?;
        let Some((last, _)) = chunk.last() else {
            return Ok(indexed);
        };
        after = *last;
        for (key, stored) in chunk {
            insert.execute(params![key, stored.text, stored.facets])?;
            indexed += 1;
        }
    }
}

/// Indexes every stored record, sets the length and repeated terms of its
/// text and counts it in the text totals: run when migration 0014 made
/// the index again for the analyser's terms. Answers how many.
pub fn backfill(conn: &Connection) -> Result<usize, StoreError> {
    let now = Utc::now();
    let mut after = 0i64;
    let mut indexed = 0;
    let mut counted = Vec::new();
    loop {
        let keys: Vec<i64> = conn
            .prepare("SELECT key FROM records WHERE key > ?1 ORDER BY key LIMIT ?2")?
            .query_map(params![after, BACKFILL_CHUNK as i64], |row| row.get(0))?
            .collect::<Result<_, _>>()?;
        let Some(last) = keys.last() else {
            flush_totals(conn, counted)?;
            return Ok(indexed);
        };
        after = *last;
        for (key, record) in keys.iter().zip(load_whole(conn, &keys, now)?) {
            let row = Indexed::of(&record);
            conn.prepare_cached(
                "INSERT INTO record_search (rowid, text, facets) VALUES (?1, ?2, ?3)",
            )?
            .execute(params![key, row.analysed.text, row.facets])?;
            conn.prepare_cached(
                "UPDATE records SET search_length = ?2, search_repeats = ?3, search_terms = ?4
                 WHERE key = ?1",
            )?
            .execute(params![
                key,
                row.analysed.length,
                row.analysed.repeats,
                row.analysed.distinct
            ])?;
            counted.push((Counted::of(&record, &row.analysed), 1));
            indexed += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{conn, insert, now, record};
    use super::*;
    use crate::domain::record::Status;
    use crate::domain::search::TextQuery;
    use crate::store::maintenance::DecayStore;
    use crate::store::records::{RecordReads, RecordStore, SalienceChange};
    use crate::store::topics::TopicStore;
    use serde_json::json;

    fn matches(conn: &Connection, text: &str) -> Vec<i64> {
        flush(conn, &mut Default::default()).unwrap();
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

    fn index_rows(conn: &Connection) -> i64 {
        conn.query_row("SELECT COUNT(*) FROM record_search", [], |r| r.get(0))
            .unwrap()
    }

    /// Rewrites stored fact `id` with `object`.
    fn rewrite(conn: &mut Connection, id: &str, object: &str) {
        let loaded = conn.get_for_update(id, now()).unwrap().unwrap();
        conn.update_record(
            &loaded.version,
            &fact(id, object),
            SalienceChange::Unchanged,
        )
        .unwrap();
    }

    fn fact(id: &str, object: &str) -> MemoryRecord {
        record(
            id,
            json!({"type": "semantic", "sensitivity": "low",
                   "payload": {"kind": "semantic", "subject": "user", "predicate": "likes", "object": object}}),
        )
    }

    /// A job the way the writer runs one: in a savepoint, released or
    /// rolled back.
    fn job(conn: &mut Connection, keep: bool, work: impl FnOnce(&mut Connection)) {
        conn.execute_batch("SAVEPOINT job").unwrap();
        savepoint();
        work(conn);
        if keep {
            conn.execute_batch("RELEASE job").unwrap();
            release();
        } else {
            conn.execute_batch("ROLLBACK TO job; RELEASE job").unwrap();
            rollback_to_savepoint();
        }
    }

    /// A database of schema version 13 (FTS5's Porter stems, no text
    /// totals) takes the analyser's terms when version 14 is applied.
    #[test]
    fn a_database_from_before_the_analyser_is_indexed_again() {
        use super::super::migrations::MIGRATIONS;
        let mut conn = conn();
        let key = insert(&mut conn, &fact("a", "the deployment of the policies"));
        conn.insert_record(&fact("b", "unrelated")).unwrap();
        discard();
        // Back to version 13, as it stored this record.
        conn.execute_batch(
            "DROP TABLE text_totals; DROP TABLE text_totals_all;
             DROP TABLE topics_to_index;
             DROP INDEX idx_records_current;
             DROP INDEX idx_records_scope_rank;
             CREATE INDEX idx_records_scope_rank
                 ON records (scope, layer, sensitivity, salience DESC, decays_from DESC)
                 WHERE status <> 'retracted';
             ALTER TABLE records DROP COLUMN search_length;
             ALTER TABLE records DROP COLUMN search_repeats;
             ALTER TABLE records DROP COLUMN search_terms;
             DROP TABLE record_search; DROP TABLE topic_search;
             CREATE VIRTUAL TABLE record_search USING fts5(text, content = '',
                 contentless_delete = 1, tokenize = 'porter unicode61 remove_diacritics 2');
             CREATE VIRTUAL TABLE topic_search USING fts5(text, content = '',
                 contentless_delete = 1, tokenize = 'porter unicode61 remove_diacritics 2');
             INSERT INTO record_search (rowid, text) VALUES (1, 'the deployment of the policies');
             INSERT INTO topics (key, id, title, norm_title, summary, sensitivity, tags_json,
                                 salience, created_at, updated_at)
             VALUES (7, 't', 'x', 'x', 'y', 1, '[]', 1.0, 0, 0);",
        )
        .unwrap();
        // Porter: "deploy" is `deploi`, "deployment" `deploy`.
        let old: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM record_search WHERE record_search MATCH 'deploy'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(old, 0);
        let m = &MIGRATIONS[13];
        conn.execute_batch(m.sql).unwrap();
        assert_eq!((m.backfill.unwrap())(&conn).unwrap(), 2);
        assert_eq!(matches(&conn, "deploy"), vec![key]);
        assert_eq!(matches(&conn, "policy"), vec![key]);
        assert_eq!(index_rows(&conn), 2);
        assert_eq!(conn.topics_to_index().unwrap(), vec![7]);
        // The totals count both records and their terms ("s p the
        // deploy of the polici" and "s p unrel").
        let totals: (i64, i64) = conn
            .query_row(
                "SELECT SUM(docs), SUM(tokens) FROM text_totals WHERE live = 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(totals, (2, 10));
        let length: i64 = conn
            .query_row(
                "SELECT search_length FROM records WHERE key = ?1 AND search_repeats = 'the 2'",
                [key],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(length, 7);
    }

    /// The totals by who may see records follow every write: insert,
    /// rewrite (another text, another scope), retraction, prune; and a
    /// rolled back write leaves them as they were.
    #[test]
    fn the_text_totals_follow_every_write() {
        let mut conn = conn();
        let totals = |conn: &Connection| -> Vec<(String, i64, i64, i64)> {
            flush(conn, &mut Default::default()).unwrap();
            conn.prepare(
                "SELECT scope, live, docs, tokens FROM text_totals
                 WHERE docs <> 0 OR tokens <> 0 ORDER BY 1, 2",
            )
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
        };
        let all = |conn: &Connection| -> (i64, i64) {
            conn.query_row(
                "SELECT SUM(docs), SUM(tokens) FROM text_totals_all",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap()
        };
        let a = insert(&mut conn, &fact("a", "one two"));
        conn.insert_record(&fact("b", "three")).unwrap();
        // "user like" and the object.
        assert_eq!(totals(&conn), [("".into(), 1, 2, 7)]);
        rewrite(&mut conn, "a", "one two three four");
        assert_eq!(totals(&conn), [("".into(), 1, 2, 9)]);
        let change = |conn: &mut Connection, f: &dyn Fn(&mut MemoryRecord)| {
            let loaded = conn.get_for_update("a", now()).unwrap().unwrap();
            let mut changed = loaded.record.clone();
            f(&mut changed);
            conn.update_record(&loaded.version, &changed, SalienceChange::Unchanged)
                .unwrap();
        };
        change(&mut conn, &|r| r.scope = Some("team".into()));
        assert_eq!(
            totals(&conn),
            [("".into(), 1, 1, 3), ("team".into(), 1, 1, 6)]
        );
        job(&mut conn, false, |conn| change(conn, &|r| r.scope = None));
        assert_eq!(
            totals(&conn),
            [("".into(), 1, 1, 3), ("team".into(), 1, 1, 6)]
        );
        change(&mut conn, &|r| r.status = Status::Retracted);
        assert_eq!(
            totals(&conn),
            [("".into(), 1, 1, 3), ("team".into(), 0, 1, 6)]
        );
        assert_eq!(all(&conn), (2, 9));
        change(&mut conn, &|r| r.status = Status::Active);
        let version: i64 = conn
            .query_row("SELECT version FROM records WHERE key = ?1", [a], |r| {
                r.get(0)
            })
            .unwrap();
        let pruned = conn
            .prune(&[crate::store::maintenance::DecayChange {
                key: a,
                version,
                salience: 0.0,
            }])
            .unwrap();
        assert_eq!(pruned, 1);
        assert_eq!(totals(&conn), [("".into(), 1, 1, 3)]);
        assert_eq!(all(&conn), (1, 3));
    }

    #[test]
    fn a_database_from_before_the_index_is_backfilled() {
        let mut conn = conn();
        conn.insert_record(&fact("a", "sailing")).unwrap();
        flush(&conn, &mut Default::default()).unwrap();
        conn.execute_batch("INSERT INTO record_search (record_search) VALUES ('delete-all')")
            .unwrap();
        assert!(matches(&conn, "sail").is_empty());
        assert_eq!(backfill(&conn).unwrap(), 1);
        assert_eq!(matches(&conn, "sail").len(), 1);
        // Made anew from the terms the records' rows keep (migration 0022).
        conn.execute_batch("INSERT INTO record_search (record_search) VALUES ('delete-all')")
            .unwrap();
        assert_eq!(reindex_all(&conn).unwrap(), 1);
        assert_eq!(matches(&conn, "sail").len(), 1);
    }

    /// A deleted record's terms leave the index's pages with it: no merge
    /// of the index is needed for them to be gone from the file.
    #[test]
    fn a_deleted_records_terms_leave_the_index_at_once() {
        let mut conn = conn();
        conn.pragma_update(None, "secure_delete", "ON").unwrap();
        let keys: Vec<i64> = (0..300)
            .map(|i| {
                insert(
                    &mut conn,
                    &fact(&format!("s{i}"), &format!("zqword{i:04}x common")),
                )
            })
            .collect();
        flush(&conn, &mut Default::default()).unwrap();
        for &key in keys.iter().step_by(3) {
            let stored = stored_record(&conn, key).unwrap();
            conn.execute("DELETE FROM records WHERE key = ?1", [key])
                .unwrap();
            remove(key, stored);
        }
        flush(&conn, &mut Default::default()).unwrap();
        conn.execute_batch("INSERT INTO record_search (record_search) VALUES ('integrity-check')")
            .unwrap();
        // The index's own pages (its segments and their index).
        let pages: Vec<Vec<u8>> = conn
            .prepare(
                "SELECT data FROM sqlite_dbpage WHERE pgno IN
                     (SELECT pageno FROM dbstat WHERE name LIKE 'record_search%')",
            )
            .unwrap()
            .query_map([], |row| row.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let held = |i: usize| {
            let needle = format!("zqword{i:04}x");
            pages
                .iter()
                .any(|p| p.windows(needle.len()).any(|w| w == needle.as_bytes()))
        };
        assert!(
            (0..300).step_by(3).all(|i| !held(i)),
            "a deleted term stayed"
        );
        assert!(held(1) && held(299), "the others are there");
        assert_eq!(matches(&conn, "common").len(), 200);
    }
}
