//! The counted terms on SQLite (migration 0024; what they are for:
//! `store::term_counts`): their numbers in `counted_terms`, and a vector
//! of document counts per partition and chunk of numbers in `term_counts`
//! (per scope) and
//! `term_counts_all` (over every scope), kept by [`super::search::flush`]
//! in the transaction of each write.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;

use rusqlite::{params, Connection, OptionalExtension};

use crate::domain::analysis::{repeated, term_frequency, Analysed};
use crate::domain::record::{MemoryRecord, Status};
use crate::store::error::StoreError;
use crate::store::ranking::source::TermCount;
use crate::store::term_counts::{apply_encoded, chunk_of, count_in, encode_deltas, take_some};

/// A partition of visibility: scope ('' for none), layer, sensitivity,
/// live.
pub type Partition = (String, i64, i64, bool);

/// A record's part of the text totals (migration 0014): who may see it,
/// and how many terms its text has.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Counted {
    pub scope: Option<String>,
    pub layer: i64,
    pub sensitivity: i64,
    pub live: bool,
    pub length: i64,
    /// Its distinct terms, space separated (`Analysed::distinct`): what
    /// it adds to the counted terms' vectors (`counted.rs`).
    pub terms: String,
    /// Its repeated terms (`Analysed::repeats`): how often a counted term
    /// can be in one record.
    pub repeats: Option<String>,
}

impl Counted {
    pub fn of(record: &MemoryRecord, analysed: &Analysed) -> Counted {
        Counted {
            scope: record.scope.clone(),
            layer: record.memory_type.layer() as i64,
            sensitivity: record.sensitivity.rank() as i64,
            live: record.status != Status::Retracted,
            length: analysed.length,
            terms: analysed.distinct.clone(),
            repeats: analysed.repeats.clone(),
        }
    }

    /// The columns of a record's row [`Counted::read`] reads.
    pub const COLUMNS: &'static str =
        "scope, layer, sensitivity, status <> 'retracted', search_length, search_terms, \
         search_repeats";

    pub fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<Counted> {
        Ok(Counted {
            scope: row.get(0)?,
            layer: row.get(1)?,
            sensitivity: row.get(2)?,
            live: row.get(3)?,
            length: row.get(4)?,
            terms: row.get(5)?,
            repeats: row.get(6)?,
        })
    }

    /// As the row of record `key` has it, if there is one.
    pub fn stored(conn: &Connection, key: i64) -> Result<Option<Counted>, StoreError> {
        Ok(conn
            .prepare_cached(&format!(
                "SELECT {} FROM records WHERE key = ?1",
                Counted::COLUMNS
            ))?
            .query_row([key], Counted::read)
            .optional()?)
    }

    /// The partition of visibility it counts in.
    pub fn partition(&self) -> Partition {
        (
            self.scope.clone().unwrap_or_default(),
            self.layer,
            self.sensitivity,
            self.live,
        )
    }
}

/// The writer's view of the counted terms: their numbers, as far as it
/// has read them.
#[derive(Debug, Default)]
pub struct CountedTerms {
    /// Each counted term's number and the most times one record has had
    /// it (as far as this writer knows: it only raises it).
    numbers: HashMap<String, (u32, u32)>,
    read_up_to: u32,
    /// Whether `numbers` holds every number given: only this writer
    /// gives them, so it reads them again only after it gave some.
    current: bool,
}

impl CountedTerms {
    /// Reads the numbers given since the last call, if any may have been.
    fn refresh(&mut self, conn: &Connection) -> Result<(), StoreError> {
        if self.current {
            return Ok(());
        }
        let mut stmt = conn
            .prepare_cached("SELECT id, term, most FROM counted_terms WHERE id > ?1 ORDER BY id")?;
        let mut rows = stmt.query([self.read_up_to])?;
        while let Some(row) = rows.next()? {
            let id: u32 = row.get(0)?;
            let term: String = row.get(1)?;
            self.numbers.insert(term, (id, row.get(2)?));
            self.read_up_to = id;
        }
        self.current = true;
        Ok(())
    }

    /// Forgets what it read: a transaction that numbered terms may have
    /// been rolled back.
    pub fn forget(&mut self) {
        *self = CountedTerms::default();
    }
}

/// Adds the changes of a transaction to the vectors of the partitions
/// they touch, and raises the most times a counted term is in one record
/// where a new text has it more often.
pub fn add(
    conn: &Connection,
    counted: &mut CountedTerms,
    changes: &[(Counted, i64)],
) -> Result<(), StoreError> {
    counted.refresh(conn)?;
    if counted.numbers.is_empty() || changes.is_empty() {
        return Ok(());
    }
    let mut deltas: BTreeMap<Partition, BTreeMap<u32, i64>> = BTreeMap::new();
    for (c, sign) in changes {
        let mut numbers = c
            .terms
            .split_ascii_whitespace()
            .filter_map(|term| counted.numbers.get(term).map(|n| n.0))
            .peekable();
        if numbers.peek().is_some() {
            let partition = deltas.entry(c.partition()).or_default();
            for number in numbers {
                *partition.entry(number).or_default() += sign;
            }
        }
        if *sign > 0 {
            for (term, times) in repeated(c.repeats.as_deref()) {
                if let Some((number, most)) = counted.numbers.get_mut(term) {
                    if times > *most {
                        *most = times;
                        raise_most(conn, *number, times)?;
                    }
                }
            }
        }
    }
    write(conn, deltas)
}

fn raise_most(conn: &Connection, number: u32, times: u32) -> Result<(), StoreError> {
    conn.prepare_cached("UPDATE counted_terms SET most = ?2 WHERE id = ?1 AND most < ?2")?
        .execute(params![number, times])?;
    Ok(())
}

/// Terms a retrieval found in many records but not counted, by database
/// file. Readers cannot write: the writer counts them at its next commit,
/// or when it has been idle a moment ([`super::SqliteWriter`]).
static WANTED: Mutex<BTreeMap<String, BTreeSet<String>>> = Mutex::new(BTreeMap::new());

/// The file of `conn`'s database (none in memory: nothing to share).
fn database_of(conn: &Connection) -> Option<String> {
    conn.path()
        .filter(|p| !p.is_empty())
        .map(ToString::to_string)
}

/// Asks the writer of `conn`'s database to count `terms`.
pub fn want<'a>(conn: &Connection, terms: impl IntoIterator<Item = &'a String>) {
    let Some(database) = database_of(conn) else {
        return;
    };
    let mut wanted = WANTED.lock().unwrap_or_else(|e| e.into_inner());
    wanted
        .entry(database)
        .or_default()
        .extend(terms.into_iter().cloned());
}

/// Whether terms wait to be counted in `conn`'s database.
pub fn any_wanted(conn: &Connection) -> bool {
    let Some(database) = database_of(conn) else {
        return false;
    };
    let wanted = WANTED.lock().unwrap_or_else(|e| e.into_inner());
    wanted.get(&database).is_some_and(|w| !w.is_empty())
}

/// Takes (at most [`COUNTED_AT_ONCE`](crate::store::term_counts::COUNTED_AT_ONCE) of) the terms waiting to be counted
/// in `conn`'s database.
pub fn take_wanted(conn: &Connection) -> Vec<String> {
    let Some(database) = database_of(conn) else {
        return Vec::new();
    };
    let mut wanted = WANTED.lock().unwrap_or_else(|e| e.into_inner());
    let Some(terms) = wanted.get_mut(&database) else {
        return Vec::new();
    };
    take_some(terms)
}

/// Registers `engram_add_counts(vector, deltas)` on `conn`: the vector
/// with the deltas added (`term_counts::apply_encoded`), so a vector is
/// changed by one statement, read and written where it lies.
pub fn register(conn: &Connection) -> rusqlite::Result<()> {
    use rusqlite::functions::FunctionFlags;
    conn.create_scalar_function(
        "engram_add_counts",
        2,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            let vector: Vec<u8> = ctx.get(0)?;
            let deltas: Vec<u8> = ctx.get(1)?;
            Ok(apply_encoded(&vector, &deltas))
        },
    )
}

/// Adds `deltas` to the partitions' vectors and to those over every scope.
fn write(
    conn: &Connection,
    deltas: BTreeMap<Partition, BTreeMap<u32, i64>>,
) -> Result<(), StoreError> {
    let mut all: BTreeMap<(i64, i64, bool), BTreeMap<u32, i64>> = BTreeMap::new();
    for ((scope, layer, sensitivity, live), changes) in deltas {
        let sum = all.entry((layer, sensitivity, live)).or_default();
        for (&number, &delta) in &changes {
            *sum.entry(number).or_default() += delta;
        }
        for (chunk, changes) in by_chunk(changes) {
            conn.prepare_cached(
                "INSERT INTO term_counts (scope, layer, sensitivity, live, chunk, counts)
                 VALUES (?1, ?2, ?3, ?4, ?5, engram_add_counts(x'', ?6))
                 ON CONFLICT DO UPDATE SET counts = engram_add_counts(counts, ?6)",
            )?
            .execute(params![
                scope,
                layer,
                sensitivity,
                live,
                chunk,
                encode_deltas(&changes)
            ])?;
        }
    }
    for ((layer, sensitivity, live), changes) in all {
        for (chunk, changes) in by_chunk(changes) {
            conn.prepare_cached(
                "INSERT INTO term_counts_all (layer, sensitivity, live, chunk, counts)
                 VALUES (?1, ?2, ?3, ?4, engram_add_counts(x'', ?5))
                 ON CONFLICT DO UPDATE SET counts = engram_add_counts(counts, ?5)",
            )?
            .execute(params![
                layer,
                sensitivity,
                live,
                chunk,
                encode_deltas(&changes)
            ])?;
        }
    }
    Ok(())
}

/// Changes by term number, as changes to each vector by its own numbers
/// (none that is zero).
fn by_chunk(changes: BTreeMap<u32, i64>) -> BTreeMap<i64, Vec<(u32, i64)>> {
    let mut chunks: BTreeMap<i64, Vec<(u32, i64)>> = BTreeMap::new();
    for (number, delta) in changes {
        if delta != 0 {
            let (chunk, at) = chunk_of(number);
            chunks.entry(chunk).or_default().push((at, delta));
        }
    }
    chunks
}

/// Numbers `terms` and counts the records that have each, by partition,
/// from the full-text index (which must hold the transaction's records:
/// call after its queue is applied). A term counted already is skipped.
pub fn count_new(
    conn: &Connection,
    counted: &mut CountedTerms,
    terms: &[String],
) -> Result<(), StoreError> {
    for term in terms {
        let number: Option<u32> = conn
            .prepare_cached(
                "INSERT INTO counted_terms (term) VALUES (?1) ON CONFLICT DO NOTHING RETURNING id",
            )?
            .query_row([term], |row| row.get(0))
            .optional()?;
        let Some(number) = number else {
            continue;
        };
        let mut deltas: BTreeMap<Partition, BTreeMap<u32, i64>> = BTreeMap::new();
        let mut stmt = conn.prepare_cached(
            "SELECT COALESCE(r.scope, ''), r.layer, r.sensitivity, r.status <> 'retracted',
                    r.search_repeats
             FROM record_search CROSS JOIN records r ON r.key = record_search.rowid
             WHERE record_search MATCH ?1",
        )?;
        let mut rows = stmt.query([format!("text : \"{}\"", term.replace('"', "\"\""))])?;
        let mut most = 1;
        while let Some(row) = rows.next()? {
            *deltas
                .entry((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
                .or_default()
                .entry(number)
                .or_default() += 1;
            if let Some(repeats) = row.get::<_, Option<String>>(4)? {
                most = most.max(term_frequency(Some(&repeats), term) as u32);
            }
        }
        raise_most(conn, number, most)?;
        write(conn, deltas)?;
    }
    counted.current = false;
    counted.refresh(conn)
}

/// Counts every stored record's terms (the tables of migration 0024 are
/// new): numbers the terms found in [`COUNTED_FROM`] records or more, and
/// fills the vectors. Answers how many records.
///
/// [`COUNTED_FROM`]: crate::store::term_counts::COUNTED_FROM
pub fn count_all(conn: &Connection) -> Result<usize, StoreError> {
    let mut found: HashMap<String, u32> = HashMap::new();
    let mut records = 0;
    each_record(conn, |c| {
        records += 1;
        for term in c.terms.split_ascii_whitespace() {
            *found.entry(term.to_string()).or_default() += 1;
        }
    })?;
    let mut common: Vec<String> = found
        .into_iter()
        .filter(|(_, n)| *n >= crate::store::term_counts::COUNTED_FROM)
        .map(|(t, _)| t)
        .collect();
    common.sort_unstable();
    let mut numbers = HashMap::new();
    for term in common {
        let id: u32 = conn
            .prepare_cached("INSERT INTO counted_terms (term) VALUES (?1) RETURNING id")?
            .query_row([&term], |row| row.get(0))?;
        numbers.insert(term, id);
    }
    let mut vectors: BTreeMap<Partition, BTreeMap<u32, i64>> = BTreeMap::new();
    let mut most: BTreeMap<u32, u32> = BTreeMap::new();
    each_record(conn, |c| {
        let partition = vectors.entry(c.partition()).or_default();
        for term in c.terms.split_ascii_whitespace() {
            if let Some(&n) = numbers.get(term) {
                *partition.entry(n).or_default() += 1;
            }
        }
        for (term, times) in repeated(c.repeats.as_deref()) {
            if let Some(&n) = numbers.get(term) {
                let m = most.entry(n).or_insert(1);
                *m = (*m).max(times);
            }
        }
    })?;
    write(conn, vectors)?;
    for (number, times) in most {
        raise_most(conn, number, times)?;
    }
    Ok(records)
}

/// Calls `each` with every stored record's part, in key order.
fn each_record(conn: &Connection, mut each: impl FnMut(&Counted)) -> Result<(), StoreError> {
    let mut stmt = conn.prepare(&format!("SELECT {} FROM records", Counted::COLUMNS))?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        each(&Counted::read(row)?);
    }
    Ok(())
}

/// The document frequency of each of `terms` among the records of the
/// partitions `scopes` (`None`: every scope; else these and the unscoped),
/// `layers`, sensitivities up to `max_sensitivity` and `lives` hold, and
/// the most times one record has had it; `None` for a term not counted,
/// which the writer is then asked to count ([`want`]) when
/// `count_missing`.
pub fn frequencies(
    conn: &Connection,
    terms: &[String],
    scopes: Option<&[String]>,
    layers: &str,
    max_sensitivity: i64,
    lives: &str,
    count_missing: bool,
) -> Result<Vec<Option<TermCount>>, StoreError> {
    let mut numbers = Vec::with_capacity(terms.len());
    let mut most = Vec::with_capacity(terms.len());
    for term in terms {
        let found = conn
            .prepare_cached("SELECT id, most FROM counted_terms WHERE term = ?1")?
            .query_row([term], |row| {
                Ok((row.get::<_, u32>(0)?, row.get::<_, u32>(1)?))
            })
            .optional()?;
        numbers.push(found.map(|f| f.0));
        most.push(found.map_or(1, |f| f.1));
    }
    if count_missing {
        want(
            conn,
            terms
                .iter()
                .zip(&numbers)
                .filter(|(_, n)| n.is_none())
                .map(|(t, _)| t),
        );
    }
    let mut found: Vec<Option<TermCount>> = numbers
        .iter()
        .zip(&most)
        .map(|(n, &most)| n.map(|_| TermCount { docs: 0, most }))
        .collect();
    let mut chunks: Vec<i64> = numbers.iter().flatten().map(|&n| chunk_of(n).0).collect();
    chunks.sort_unstable();
    chunks.dedup();
    if chunks.is_empty() {
        return Ok(found);
    }
    let chunk_list: Vec<String> = chunks.iter().map(i64::to_string).collect();
    let common = format!(
        "layer IN ({layers}) AND sensitivity <= {max_sensitivity} AND live IN ({lives})
         AND chunk IN ({})",
        chunk_list.join(", ")
    );
    let (sql, values): (String, Vec<String>) = match scopes {
        None => (
            format!("SELECT chunk, counts FROM term_counts_all WHERE {common}"),
            Vec::new(),
        ),
        Some(scopes) => {
            let mut values = vec![String::new()];
            values.extend(scopes.iter().cloned());
            let numbers: Vec<String> = (1..=values.len()).map(|n| format!("?{n}")).collect();
            (
                format!(
                    "SELECT chunk, counts FROM term_counts WHERE scope IN ({}) AND {common}",
                    numbers.join(", ")
                ),
                values,
            )
        }
    };
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt.query(rusqlite::params_from_iter(values.iter()))?;
    while let Some(row) = rows.next()? {
        let chunk: i64 = row.get(0)?;
        let counts: Vec<u8> = row.get(1)?;
        for (n, f) in numbers.iter().zip(found.iter_mut()) {
            if let (Some(n), Some(f)) = (n, f) {
                let (of, at) = chunk_of(*n);
                if of == chunk {
                    f.docs += u64::from(count_in(&counts, at));
                }
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::super::search::flush;
    use super::super::test_support::{conn, now, record};
    use super::*;
    use crate::domain::record::{MemoryRecord, Status};
    use crate::store::records::{RecordReads, RecordStore, SalienceChange};
    use crate::store::term_counts::decode;
    use serde_json::json;

    fn fact(id: &str, scope: Option<&str>, object: &str) -> MemoryRecord {
        let mut r = record(
            id,
            json!({"type": "semantic", "sensitivity": "low",
                   "payload": {"kind": "semantic", "subject": "user", "predicate": "likes", "object": object}}),
        );
        r.scope = scope.map(str::to_string);
        r
    }

    /// Every counted term's count in every partition, as the vectors say.
    fn vectors(conn: &Connection) -> BTreeMap<(Partition, String), u32> {
        let terms: Vec<(u32, String)> = conn
            .prepare("SELECT id, term FROM counted_terms")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let mut found = BTreeMap::new();
        let mut stmt = conn
            .prepare("SELECT scope, layer, sensitivity, live, chunk, counts FROM term_counts")
            .unwrap();
        let mut rows = stmt.query([]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            let partition: Partition = (
                row.get(0).unwrap(),
                row.get(1).unwrap(),
                row.get(2).unwrap(),
                row.get(3).unwrap(),
            );
            let chunk: i64 = row.get(4).unwrap();
            let counts = decode(&row.get::<_, Vec<u8>>(5).unwrap());
            for (id, term) in &terms {
                let (of, at) = chunk_of(*id);
                if of != chunk {
                    continue;
                }
                let n = counts.get(at as usize - 1).copied().unwrap_or(0);
                if n > 0 {
                    *found.entry((partition.clone(), term.clone())).or_default() += n;
                }
            }
        }
        found
    }

    /// The same counted terms' counts, from the records' rows.
    fn recounted(conn: &Connection) -> BTreeMap<(Partition, String), u32> {
        let counted: Vec<String> = conn
            .prepare("SELECT term FROM counted_terms")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let mut found = BTreeMap::new();
        each_record(conn, |c| {
            for term in c.terms.split_ascii_whitespace() {
                if counted.iter().any(|t| t == term) {
                    *found.entry((c.partition(), term.to_string())).or_default() += 1;
                }
            }
        })
        .unwrap();
        found
    }

    #[test]
    fn the_vectors_follow_every_write_and_a_recount_agrees() {
        let mut conn = conn();
        let mut counted = CountedTerms::default();
        let commit = |conn: &Connection, counted: &mut CountedTerms| flush(conn, counted).unwrap();
        // The terms of "sailing boats" are counted after three records
        // have them (from the index); later writes change their counts.
        for i in 0..3 {
            let scope = if i % 2 == 0 { Some("team") } else { None };
            conn.insert_record(&fact(&format!("f{i}"), scope, "sailing boats"))
                .unwrap();
            commit(&conn, &mut counted);
        }
        let terms: String = conn
            .query_row("SELECT search_terms FROM records LIMIT 1", [], |r| r.get(0))
            .unwrap();
        let terms: Vec<String> = terms.split(' ').map(str::to_string).collect();
        assert!(terms.contains(&"sail".to_string()), "{terms:?}");
        count_new(&conn, &mut counted, &terms).unwrap();
        conn.insert_record(&fact("r", None, "rare sailing"))
            .unwrap();
        commit(&conn, &mut counted);
        let most = |conn: &Connection, term: &str| -> u32 {
            conn.query_row(
                "SELECT most FROM counted_terms WHERE term = ?1",
                [term],
                |r| r.get(0),
            )
            .unwrap()
        };
        assert_eq!(most(&conn, "sail"), 1);
        let sail = |conn: &Connection| {
            vectors(conn)
                .into_iter()
                .filter(|((_, t), _)| t == "sail")
                .map(|((p, _), n)| (p.0, p.3, n))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            sail(&conn),
            [("".into(), true, 2), ("team".into(), true, 2)]
        );
        assert_eq!(vectors(&conn), recounted(&conn));
        // Not vacuous: the counted terms span vectors.
        let chunks: i64 = conn
            .query_row("SELECT MAX(chunk) FROM term_counts", [], |r| r.get(0))
            .unwrap();
        assert!(chunks >= 1, "{chunks}");
        let change = |conn: &mut Connection, id: &str, f: &dyn Fn(&mut MemoryRecord)| {
            let loaded = conn.get_for_update(id, now()).unwrap().unwrap();
            let mut changed = loaded.record.clone();
            f(&mut changed);
            conn.update_record(&loaded.version, &changed, SalienceChange::Unchanged)
                .unwrap();
        };
        change(&mut conn, "f0", &|r| r.scope = None);
        change(&mut conn, "f1", &|r| r.status = Status::Retracted);
        commit(&conn, &mut counted);
        assert_eq!(
            sail(&conn),
            [
                ("".into(), false, 1),
                ("".into(), true, 2),
                ("team".into(), true, 1)
            ]
        );
        change(&mut conn, "r", &|r| {
            if let crate::domain::payload::Payload::Semantic(p) = &mut r.payload {
                p.object = json!("motor yachts");
            }
        });
        commit(&conn, &mut counted);
        assert_eq!(vectors(&conn), recounted(&conn));
        // A text with a counted term more often than any before raises
        // its bound, which a recount finds too.
        conn.insert_record(&fact("t", Some("x"), "sailing, sailing, sailing"))
            .unwrap();
        commit(&conn, &mut counted);
        assert_eq!(most(&conn, "sail"), 3);
        assert_eq!(vectors(&conn), recounted(&conn));
        // What a caller may see, summed; an uncounted term has none.
        let f = |scopes: Option<&[String]>| {
            frequencies(
                &conn,
                &["sail".into(), "yacht".into()],
                scopes,
                "0, 1, 2, 3, 4",
                3,
                "1",
                true,
            )
            .unwrap()
        };
        let docs = |found: Vec<Option<TermCount>>| -> Vec<Option<u64>> {
            found.into_iter().map(|c| c.map(|c| c.docs)).collect()
        };
        assert_eq!(docs(f(None)), [Some(3), None]);
        assert_eq!(docs(f(Some(&["team".to_string()]))), [Some(2), None]);
        assert_eq!(docs(f(Some(&["other".to_string()]))), [Some(1), None]);
        // Counted again from nothing, the vectors are the same.
        let before = vectors(&conn);
        conn.execute_batch(
            "DELETE FROM term_counts; DELETE FROM term_counts_all; DELETE FROM counted_terms;",
        )
        .unwrap();
        count_all(&conn).unwrap();
        assert_eq!(vectors(&conn), before);
        assert_eq!(most(&conn, "sail"), 3);
    }
}
