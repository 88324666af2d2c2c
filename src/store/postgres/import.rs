//! `engram migrate`: a SQLite database copied into an empty PostgreSQL one,
//! table by table, keys kept, in one PostgreSQL transaction (all of it or
//! nothing), then checked: every table's row count, and a sample of records
//! read whole through both backends and compared.
//!
//! Rows are read from SQLite in one pass per table and written 1,000 at a
//! time as arrays (`INSERT … SELECT FROM unnest(…)`), each column converted
//! to the type PostgreSQL's schema gives it (SQLite's 0/1 to booleans, say).
//! The search columns are not copied but made: the stemmed text of each
//! record and topic, as the service makes it.

use std::collections::BTreeMap;

use rusqlite::types::Value as SqlValue;
use rusqlite::Connection;
use tokio_postgres::types::ToSql;

use super::connection::Pg;
use crate::domain::time::Timestamp;
use crate::store::error::StoreError;
use crate::store::records::RecordReads;
use crate::store::transaction::Transaction;

/// The tables copied, parents before children.
pub const TABLES: &[&str] = &[
    "records",
    "decay_profiles",
    "decay_bounds",
    "payloads",
    "tags",
    "provenance_sources",
    "relations",
    "record_citations",
    "audit_log",
    "competence_stats",
    "conversation_turns",
    "job_settings",
    "job_run_log",
    "consolidation_marks",
    "consolidation_sightings",
    "consolidation_outputs",
    "vector_space",
    "record_vectors",
    "api_keys",
    "topics",
    "topic_versions",
    "topic_edges",
    "topic_words",
    "topic_vectors",
    "topic_aliases",
    "topic_summaries",
    "erased_records",
    "erasures",
    "erasure_scopes",
];

/// Tables whose integer key PostgreSQL numbers: its counter is moved past
/// the copied keys.
const NUMBERED: &[(&str, &str)] = &[
    ("records", "key"),
    ("provenance_sources", "id"),
    ("relations", "id"),
    ("audit_log", "id"),
    ("job_run_log", "id"),
    ("topics", "key"),
];

const BATCH: usize = 1_000;

/// Columns of the record that PostgreSQL also keeps in its decay profile
/// (SQLite only in `records`).
const PROFILE_COPIES: &[&str] = &[
    "salience",
    "decays_from",
    "layer",
    "sensitivity",
    "scope",
    "status",
    "created_at",
];

/// How SQLite reads a column PostgreSQL keeps in another table than
/// SQLite does.
fn moved(table: &str, name: &str) -> Option<String> {
    (table == "decay_profiles" && PROFILE_COPIES.contains(&name))
        .then(|| format!("(SELECT {name} FROM records r WHERE r.key = decay_profiles.record_key)"))
}

/// What was copied and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportReport {
    /// Rows per table, the same in both databases.
    pub rows: BTreeMap<&'static str, u64>,
    /// Records read whole through both backends and found equal.
    pub sampled: usize,
}

/// A column of a batch, typed as PostgreSQL has it.
enum Column {
    Int(Vec<Option<i64>>),
    Float(Vec<Option<f64>>),
    Bool(Vec<Option<bool>>),
    Text(Vec<Option<String>>),
    Bytes(Vec<Option<Vec<u8>>>),
}

impl Column {
    fn of(pg_type: &str) -> Result<Column, StoreError> {
        Ok(match pg_type {
            "bigint" => Column::Int(Vec::with_capacity(BATCH)),
            "double precision" => Column::Float(Vec::with_capacity(BATCH)),
            "boolean" => Column::Bool(Vec::with_capacity(BATCH)),
            "text" => Column::Text(Vec::with_capacity(BATCH)),
            "bytea" => Column::Bytes(Vec::with_capacity(BATCH)),
            other => return Err(StoreError::Schema(format!("no copy for type {other}"))),
        })
    }

    fn array_type(&self) -> &'static str {
        match self {
            Column::Int(_) => "bigint[]",
            Column::Float(_) => "float8[]",
            Column::Bool(_) => "bool[]",
            Column::Text(_) => "text[]",
            Column::Bytes(_) => "bytea[]",
        }
    }

    /// Adds a SQLite value; `Err` names what does not fit.
    fn push(&mut self, value: SqlValue) -> Result<(), String> {
        let mismatch = |v: &SqlValue| format!("{:?} value", v.data_type());
        match (self, value) {
            (Column::Int(c), SqlValue::Null) => c.push(None),
            (Column::Int(c), SqlValue::Integer(i)) => c.push(Some(i)),
            (Column::Float(c), SqlValue::Null) => c.push(None),
            (Column::Float(c), SqlValue::Real(f)) => c.push(Some(f)),
            (Column::Float(c), SqlValue::Integer(i)) => c.push(Some(i as f64)),
            (Column::Bool(c), SqlValue::Null) => c.push(None),
            (Column::Bool(c), SqlValue::Integer(i)) => c.push(Some(i != 0)),
            (Column::Text(c), SqlValue::Null) => c.push(None),
            (Column::Text(c), SqlValue::Text(t)) => {
                if t.contains('\0') {
                    return Err("text with a NUL character".to_string());
                }
                c.push(Some(t))
            }
            (Column::Bytes(c), SqlValue::Null) => c.push(None),
            (Column::Bytes(c), SqlValue::Blob(b)) => c.push(Some(b)),
            (_, other) => return Err(mismatch(&other)),
        }
        Ok(())
    }

    fn clear(&mut self) {
        match self {
            Column::Int(c) => c.clear(),
            Column::Float(c) => c.clear(),
            Column::Bool(c) => c.clear(),
            Column::Text(c) => c.clear(),
            Column::Bytes(c) => c.clear(),
        }
    }

    fn as_param(&self) -> &(dyn ToSql + Sync) {
        match self {
            Column::Int(c) => c,
            Column::Float(c) => c,
            Column::Bool(c) => c,
            Column::Text(c) => c,
            Column::Bytes(c) => c,
        }
    }
}

/// The columns of `table` in both databases, or [`moved`] to it (the
/// search columns, made here, left out), with PostgreSQL's type of each.
fn shared_columns(
    source: &Connection,
    pg: &Pg,
    table: &str,
) -> Result<Vec<(String, String)>, StoreError> {
    let mut in_sqlite = Vec::new();
    let mut stmt = source.prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))?;
    for name in stmt.query_map([], |row| row.get::<_, String>(0))? {
        in_sqlite.push(name?);
    }
    let mut columns = Vec::new();
    for row in pg.query(
        "SELECT column_name::text, data_type::text FROM information_schema.columns
         WHERE table_schema = current_schema() AND table_name = $1
         ORDER BY ordinal_position",
        &[&table],
    )? {
        let name: String = row.try_get(0)?;
        if name != "search" && (in_sqlite.contains(&name) || moved(table, &name).is_some()) {
            columns.push((name, row.try_get(1)?));
        }
    }
    Ok(columns)
}

/// Copies one table; answers its rows.
fn copy_table(source: &Connection, pg: &Pg, table: &str) -> Result<u64, StoreError> {
    let columns = shared_columns(source, pg, table)?;
    let names: Vec<&str> = columns.iter().map(|(name, _)| name.as_str()).collect();
    let mut batch: Vec<Column> = columns
        .iter()
        .map(|(_, pg_type)| Column::of(pg_type))
        .collect::<Result<_, _>>()?;
    let arrays: Vec<String> = batch
        .iter()
        .enumerate()
        .map(|(i, c)| format!("${}::{}", i + 1, c.array_type()))
        .collect();
    let insert = format!(
        "INSERT INTO {table} ({}) SELECT * FROM unnest({})",
        names.join(", "),
        arrays.join(", ")
    );
    let flush = |batch: &mut Vec<Column>| -> Result<(), StoreError> {
        let params: Vec<&(dyn ToSql + Sync)> = batch.iter().map(Column::as_param).collect();
        pg.execute(&insert, &params)?;
        batch.iter_mut().for_each(Column::clear);
        Ok(())
    };
    let selected: Vec<String> = names
        .iter()
        .map(|name| match (table, *name) {
            // Rows written before schema version 2 have no anchor of their
            // own; SQLite reads stand in the record's salience and its
            // last reinforcement, which PostgreSQL stores.
            ("decay_profiles", "anchor_salience") => "COALESCE(anchor_salience, \
                 (SELECT salience FROM records r WHERE r.key = decay_profiles.record_key))"
                .to_string(),
            ("decay_profiles", "anchor_at") => {
                "COALESCE(anchor_at, last_reinforced_at)".to_string()
            }
            _ => moved(table, name).unwrap_or_else(|| name.to_string()),
        })
        .collect();
    let mut stmt = source.prepare(&format!("SELECT {} FROM {table}", selected.join(", ")))?;
    let mut rows = stmt.query([])?;
    let (mut copied, mut pending) = (0u64, 0usize);
    while let Some(row) = rows.next()? {
        for (i, column) in batch.iter_mut().enumerate() {
            column.push(row.get(i)?).map_err(|what| {
                StoreError::Corrupt(format!(
                    "{table}.{}: a {what} PostgreSQL cannot hold as {}",
                    names[i], columns[i].1
                ))
            })?;
        }
        pending += 1;
        if pending == BATCH {
            flush(&mut batch)?;
            copied += pending as u64;
            pending = 0;
        }
    }
    if pending > 0 {
        flush(&mut batch)?;
        copied += pending as u64;
    }
    Ok(copied)
}

fn count(pg: &Pg, table: &str) -> Result<u64, StoreError> {
    let n: i64 = pg
        .query_one(&format!("SELECT COUNT(*) FROM {table}"), &[])?
        .try_get(0)?;
    Ok(n.max(0) as u64)
}

/// Makes the search column of every record, a batch of records at a time.
fn index_records(source: &mut Connection, pg: &Pg, now: Timestamp) -> Result<(), StoreError> {
    let keys: Vec<i64> = source
        .prepare("SELECT key FROM records ORDER BY key")?
        .query_map([], |row| row.get(0))?
        .collect::<Result<_, _>>()?;
    for chunk in keys.chunks(BATCH) {
        super::records::set_search(pg, &source.load_records(chunk, now)?)?;
    }
    Ok(())
}

/// Whether the target already holds anything engram wrote.
fn holds_data(pg: &Pg) -> Result<Option<&'static str>, StoreError> {
    for table in [
        "records",
        "topics",
        "api_keys",
        "job_run_log",
        "job_settings",
    ] {
        if count(pg, table)? > 0 {
            return Ok(Some(table));
        }
    }
    Ok(None)
}

/// Copies `source` into `pg` (which must hold no data) and checks the
/// copy; `sample` records are compared whole. `reindex_topic` makes a
/// topic's search text (the service knows what goes in it).
pub fn import(
    source: &mut Connection,
    pg: &mut Pg,
    now: Timestamp,
    sample: usize,
    reindex_topic: impl Fn(&mut dyn Transaction, i64) -> Result<(), StoreError>,
) -> Result<ImportReport, StoreError> {
    if let Some(table) = holds_data(pg)? {
        return Err(StoreError::Schema(format!(
            "the PostgreSQL database is not empty ({table} has rows): migrate into a new database"
        )));
    }
    pg.batch("BEGIN")?;
    let copied = copy_all(source, pg, now, sample, reindex_topic);
    match copied {
        Ok(report) => {
            pg.batch("COMMIT")?;
            Ok(report)
        }
        Err(e) => {
            let _ = pg.batch("ROLLBACK");
            Err(e)
        }
    }
}

fn copy_all(
    source: &mut Connection,
    pg: &mut Pg,
    now: Timestamp,
    sample: usize,
    reindex_topic: impl Fn(&mut dyn Transaction, i64) -> Result<(), StoreError>,
) -> Result<ImportReport, StoreError> {
    // Deleting `vector_space` first: the configured dimensions a fresh
    // database was opened with give way to the copied ones.
    pg.batch("DELETE FROM vector_space")?;
    let mut rows = BTreeMap::new();
    for table in TABLES {
        let copied = copy_table(source, pg, table)?;
        let stored = count(pg, table)?;
        let counted: i64 =
            source.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))?;
        if stored != copied || stored != counted.max(0) as u64 {
            return Err(StoreError::Corrupt(format!(
                "{table}: {counted} rows in SQLite, {copied} copied, {stored} in PostgreSQL"
            )));
        }
        rows.insert(*table, stored);
    }
    for (table, column) in NUMBERED {
        pg.batch(&format!(
            "SELECT setval(pg_get_serial_sequence('{table}', '{column}'),
                           COALESCE((SELECT MAX({column}) FROM {table}), 0) + 1, false)"
        ))?;
    }
    index_records(source, pg, now)?;
    let topic_keys: Vec<i64> = source
        .prepare("SELECT key FROM topics ORDER BY key")?
        .query_map([], |row| row.get(0))?
        .collect::<Result<_, _>>()?;
    for key in topic_keys {
        reindex_topic(pg, key)?;
    }
    let sampled = compare_sample(source, pg, now, sample)?;
    Ok(ImportReport { rows, sampled })
}

/// Reads `sample` records spread over the key range through both
/// backends and compares them whole; answers how many were compared.
fn compare_sample(
    source: &mut Connection,
    pg: &mut Pg,
    now: Timestamp,
    sample: usize,
) -> Result<usize, StoreError> {
    let keys: Vec<i64> = source
        .prepare("SELECT key FROM records ORDER BY key")?
        .query_map([], |row| row.get(0))?
        .collect::<Result<_, _>>()?;
    let step = (keys.len() / sample.max(1)).max(1);
    let picked: Vec<i64> = keys.iter().step_by(step).take(sample).copied().collect();
    for chunk in picked.chunks(BATCH) {
        let before = source.load_records(chunk, now)?;
        let after = pg.load_records(chunk, now)?;
        if let Some((a, b)) = before.iter().zip(&after).find(|(a, b)| a != b) {
            return Err(StoreError::Corrupt(format!(
                "record {} reads differently in PostgreSQL: {:?} vs {:?}",
                a.id, a, b
            )));
        }
        if before.len() != after.len() {
            return Err(StoreError::Corrupt(format!(
                "{} of {} sampled records read back from PostgreSQL",
                after.len(),
                before.len()
            )));
        }
    }
    Ok(picked.len())
}
