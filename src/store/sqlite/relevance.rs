//! Ranked retrieval: the records a caller may see that match a text query,
//! are near a query vector, or match a selective filter (a thread, a
//! subject, a tag), best first by the blended score of
//! `domain::relevance`.
//!
//! One statement finds every visible text match with its BM25 relevance
//! (the caller's trust, the layers, the filters and the stored salience
//! floor are conditions of that statement, so invisible records never take
//! a place in the answer, and BM25 is computed for visible matches only);
//! another reads the vectors of the visible records (see [`similar`]).
//! Each candidate's score is bounded from above with its stored salience
//! (decay only lowers it); candidates are then taken in order of that
//! bound, their exact current salience computed, until the bound of the
//! next cannot beat the last of the top `limit`.
//!
//! A text query with common words is matched narrower (see [`tiers`]): a
//! narrower query stands only when it fills the whole answer, so a query
//! never returns fewer records than there are visible matches, up to its
//! limit.

use std::collections::HashMap;

use rusqlite::types::Value as SqlValue;
use rusqlite::{params, Connection};

use super::filters::FilterSql;
use super::ranking::{
    current_salience, decay_bounds, within_budget, Rank, RankSet, TopK, PROFILE_SQL,
};
use crate::domain::relevance::{relative, Signals};
use crate::domain::retrieval::{Filters, RecordQuery};
use crate::domain::search::{any_of, TextQuery};
use crate::domain::time::{to_micros, Timestamp};
use crate::domain::vector::QueryVector;
use crate::store::{RecordPage, StoreError};

/// A visible candidate, as an index gave it.
struct Candidate {
    key: i64,
    /// Its type's layer; -1 when only the vector scan has seen it (then
    /// `stored` is the most salience can be).
    layer: i64,
    stored: f64,
    decays_from: i64,
    /// BM25 relevance, higher is better (0 without a text query).
    relevance: f64,
    /// Similarity to the query vector; `None` without one or a vector.
    /// When `vector_exact` is false, the most it can be.
    vector: Option<f64>,
    vector_exact: bool,
    /// The most the score can be, from the stored salience.
    bound: f64,
}

impl Candidate {
    /// The first four columns of every candidate query. (The creation
    /// time is read only for the candidates that may make the cut: it is
    /// in no index the candidates are read from.)
    fn from_row(row: &rusqlite::Row<'_>) -> Result<Candidate, StoreError> {
        Ok(Candidate {
            key: row.get(0)?,
            layer: row.get(1)?,
            stored: row.get(2)?,
            decays_from: row.get(3)?,
            relevance: 0.0,
            vector: None,
            vector_exact: true,
            bound: 0.0,
        })
    }

    /// A record only the vector scan has seen: its similarity at most
    /// `most`, its salience at most `max_salience`.
    fn scanned(key: i64, most: f64, max_salience: f64) -> Candidate {
        Candidate {
            key,
            layer: -1,
            stored: max_salience,
            decays_from: i64::MAX,
            relevance: 0.0,
            vector: Some(most),
            vector_exact: false,
            bound: 0.0,
        }
    }
}

pub fn query_ranked(
    conn: &Connection,
    query: &RecordQuery,
    now: Timestamp,
) -> Result<RecordPage, StoreError> {
    let Some(text) = &query.text else {
        let (top, signals) = ranked(conn, query, None, now)?;
        return within_budget(conn, query, top, now, |rank| signals[&rank.key]);
    };
    let tiers = tiers(conn, text, query.answer_limit)?;
    let last = tiers.len() - 1;
    let first_page = query.after.is_none() && query.limit == query.answer_limit;
    for (i, tier) in tiers.iter().enumerate() {
        if i < last {
            // A narrower query stands only when it fills the whole answer,
            // as the first page has it (so every page takes the same one).
            let whole = RecordQuery {
                limit: query.answer_limit,
                after: None,
                ..query.clone()
            };
            let (top, signals) = ranked(conn, &whole, Some(tier), now)?;
            if top.len() < query.answer_limit {
                continue;
            }
            if first_page {
                return within_budget(conn, query, top, now, |rank| signals[&rank.key]);
            }
        }
        let (top, signals) = ranked(conn, query, Some(tier), now)?;
        return within_budget(conn, query, top, now, |rank| signals[&rank.key]);
    }
    unreachable!("the last tier always answers")
}

/// The visible records with a vector, each with the most its
/// similarity to `vector` can be, for a query with no filters: the
/// quantized vectors are read from the scan index of migration 0008
/// (contiguous ranges by visibility, no table rows); the exact similarity
/// is computed later, only for the records that can make the answer.
fn scan_bounds(
    conn: &Connection,
    query: &RecordQuery,
    vector: &QueryVector,
) -> Result<Vec<(i64, f64)>, StoreError> {
    let mut values: Vec<SqlValue> = Vec::new();
    let scopes = scope_conditions(query, "scope", &mut values);
    let common = format!(
        "layer IN ({}) AND sensitivity <= {}",
        layer_list(query),
        query.max_sensitivity.rank()
    );
    let mut ranges = Vec::new();
    for set in RankSet::for_query(query) {
        let live = set.live();
        for scope in &scopes {
            ranges.push(format!(
                "SELECT record_key, scale, q FROM record_vectors INDEXED BY idx_vectors_scan
                 WHERE live = {live} AND {scope} AND {common}"
            ));
        }
    }
    let mut stmt = conn.prepare_cached(&ranges.join(" UNION ALL "))?;
    let mut rows = stmt.query(rusqlite::params_from_iter(values.iter()))?;
    let mut found = Vec::new();
    while let Some(row) = rows.next()? {
        let key: i64 = row.get(0)?;
        let scale: f64 = row.get(1)?;
        let bytes = vector_bytes(row, 2, key)?;
        found.push((key, vector.signal_at_most(scale, bytes).unwrap_or(0.0)));
    }
    Ok(found)
}

/// A word in this many records or more is common: reading all its matches
/// costs in proportion to the table, and it says little about what a
/// record is about.
const COMMON_WORD_MATCHES: i64 = 1000;

/// The most matches a query of common words alone reads (the newest
/// visible ones), unless its `limit` is larger: then `limit`, so an answer
/// is never short while there are matches.
const COMMON_QUERY_CANDIDATES: usize = 250;

/// How one part of a tier is matched.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Reading {
    /// Every visible match, ranked by BM25.
    Bm25,
    /// The newest this many visible matches, each with this relevance:
    /// for common words, whose BM25 reads all their matches (for how rare
    /// they are) and tells records apart too little to rank by.
    Newest(usize, f64),
}

/// A full-text query to match and how to read it.
#[derive(Debug, Clone, PartialEq)]
struct Part {
    fts: String,
    reading: Reading,
}

/// The candidates of one way of matching a text query: the records of
/// each part (a record in an earlier part is not read again).
type Tier = Vec<Part>;

/// The ways to match a text query, tried in turn; the last one always
/// answers.
/// - Every word rare: every word, every match, BM25.
/// - Rare and common words: the rare words alone (which must fill the
///   answer); then the rare words' matches followed by the newest
///   [`COMMON_QUERY_CANDIDATES`] visible matches of the common words
///   (relevance 0: behind every record with a rare word).
/// - Only common words: the newest [`COMMON_QUERY_CANDIDATES`] visible
///   matches of any word, each a full text match.
fn tiers(conn: &Connection, text: &TextQuery, limit: usize) -> Result<Vec<Tier>, StoreError> {
    let newest = COMMON_QUERY_CANDIDATES.max(limit);
    let mut count = conn.prepare_cached(
        "SELECT COUNT(*) FROM (SELECT 1 FROM record_search WHERE record_search MATCH ?1 LIMIT ?2)",
    )?;
    let (mut rare, mut common) = (Vec::new(), Vec::new());
    for term in text.terms() {
        let matches: i64 = count.query_row(params![term, COMMON_WORD_MATCHES], |row| row.get(0))?;
        if matches < COMMON_WORD_MATCHES {
            rare.push(term.as_str());
        } else {
            common.push(term.as_str());
        }
    }
    let part = |terms: &[&str], reading| Part {
        fts: any_of(terms),
        reading,
    };
    Ok(if rare.is_empty() {
        vec![vec![part(&common, Reading::Newest(newest, 1.0))]]
    } else if common.is_empty() {
        vec![vec![part(&rare, Reading::Bm25)]]
    } else {
        vec![
            vec![part(&rare, Reading::Bm25)],
            vec![
                part(&rare, Reading::Bm25),
                part(&common, Reading::Newest(newest, 0.0)),
            ],
        ]
    })
}

/// The best `limit` candidates of the query (`tier`: the text query to
/// match), with their signals.
fn ranked(
    conn: &Connection,
    query: &RecordQuery,
    tier: Option<&Tier>,
    now: Timestamp,
) -> Result<(Vec<Rank>, HashMap<i64, Signals>), StoreError> {
    let mut candidates = candidates(conn, query, tier)?;
    let best = candidates
        .iter()
        .map(|c| c.relevance)
        .fold(0.0f64, f64::max);
    let text_signal = |relevance: f64| tier.map(|_| relative(relevance, best));
    let vector_signal = |c: &Candidate| query.vector.as_ref().map(|_| c.vector.unwrap_or(0.0));
    let bounds = decay_bounds(conn)?;
    let now_micros = to_micros(&now);
    for c in &mut candidates {
        let most = bounds
            .get(&c.layer)
            .map_or(c.stored, |b| b.at_most(c.stored, c.decays_from, now_micros));
        c.bound = Signals {
            text: text_signal(c.relevance),
            vector: vector_signal(c),
            salience: most,
        }
        .score(&query.weights, query.max_salience);
    }
    candidates.sort_unstable_by(|a, b| b.bound.total_cmp(&a.bound));

    let mut top = TopK::for_query(query);
    let mut signals: HashMap<i64, Signals> = HashMap::new();
    let mut profile = conn.prepare_cached(PROFILE_SQL)?;
    let mut record =
        conn.prepare_cached("SELECT layer, salience, created_at FROM records WHERE key = ?1")?;
    let mut stored_vector =
        conn.prepare_cached("SELECT norm, vector FROM record_vectors WHERE record_key = ?1")?;
    for c in &candidates {
        if top.excludes_up_to(c.bound) {
            break;
        }
        // A few small statements per candidate: the engine's own look at
        // the budget may never come in statements this short.
        crate::store::budget::check()?;
        let (layer, stored, created_at): (i64, f64, i64) =
            record.query_row([c.key], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?;
        // A scanned record's stored salience is checked here; the others'
        // by their statement.
        if stored < query.min_salience {
            continue;
        }
        let mut rows = profile.query([c.key])?;
        let Some(row) = rows.next()? else {
            return Err(StoreError::Corrupt(format!(
                "record {} has no decay profile",
                c.key
            )));
        };
        let salience = current_salience(row, stored, created_at, now)?;
        if salience < query.min_salience {
            continue;
        }
        let similarity = match (&query.vector, c.vector_exact) {
            (Some(vector), false) => {
                let mut rows = stored_vector.query([c.key])?;
                match rows.next()? {
                    Some(row) => {
                        let norm: f64 = row.get(0)?;
                        let bytes = vector_bytes(row, 1, c.key)?;
                        Some(vector.signal(bytes, norm).unwrap_or(0.0))
                    }
                    None => Some(0.0),
                }
            }
            _ => vector_signal(c),
        };
        let record_signals = Signals {
            text: text_signal(c.relevance),
            vector: similarity,
            salience,
        };
        let score = record_signals.score(&query.weights, query.max_salience);
        top.offer(Rank {
            salience: score,
            layer,
            created_at,
            key: c.key,
        });
        signals.insert(c.key, record_signals);
    }
    Ok((top.into_sorted(), signals))
}

/// Every visible record that matches the text query, has a vector (with
/// a query vector), or, with neither, matches the filters.
fn candidates(
    conn: &Connection,
    query: &RecordQuery,
    tier: Option<&Tier>,
) -> Result<Vec<Candidate>, StoreError> {
    if query.memory_types.is_empty() {
        return Ok(Vec::new());
    }
    let mut found = match tier {
        Some(text) => text_matches(conn, query, text)?,
        None if query.vector.is_none() => filter_matches(conn, query)?,
        None => Vec::new(),
    };
    let Some(vector) = &query.vector else {
        return Ok(found);
    };
    if query.filters == Filters::default() {
        let scanned = scan_bounds(conn, query, vector)?;
        let text_matched: HashMap<i64, usize> =
            found.iter().enumerate().map(|(i, c)| (c.key, i)).collect();
        for (key, most) in scanned {
            match text_matched.get(&key) {
                Some(&i) => {
                    found[i].vector = Some(most);
                    found[i].vector_exact = false;
                }
                None => found.push(Candidate::scanned(key, most, query.max_salience)),
            }
        }
    } else {
        let mut similar = similar(conn, query, vector)?;
        for c in &mut found {
            c.vector = similar.remove(&c.key).and_then(|s| s.vector);
        }
        found.extend(similar.into_values());
    }
    Ok(found)
}

/// Visible records matching the tier's text queries, with their
/// relevance.
fn text_matches(
    conn: &Connection,
    query: &RecordQuery,
    tier: &Tier,
) -> Result<Vec<Candidate>, StoreError> {
    let mut found: Vec<Candidate> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for part in tier {
        let mut values = vec![SqlValue::Text(part.fts.clone())];
        let relevance = match part.reading {
            Reading::Bm25 => "-bm25(record_search)".to_string(),
            Reading::Newest(_, relevance) => format!("{relevance:?}"),
        };
        // The matches lead, each looked up by key: left to itself, the
        // planner may instead read every record of a layer (its index
        // looks selective) and run the full-text match once per record,
        // seconds for a type filter over a large table. A thread or
        // subject is selective indeed: then the planner chooses.
        let join = if query.filters.about().is_some() {
            "JOIN"
        } else {
            "CROSS JOIN"
        };
        let mut sql = format!(
            "SELECT r.key, r.layer, r.salience, r.decays_from, {relevance}
             FROM record_search {join} records r ON r.key = record_search.rowid
             WHERE record_search MATCH ?1{}",
            visible(query, &mut values)
        );
        if let Reading::Newest(newest, _) = part.reading {
            // The index reads matches in rowid order, newest first here,
            // and stops once this many visible ones are found. (A record
            // an earlier part found is read again but not kept.)
            sql.push_str(&format!(
                " ORDER BY record_search.rowid DESC LIMIT {}",
                newest + found.len()
            ));
        }
        let mut stmt = conn.prepare_cached(&sql)?;
        let mut rows = stmt.query(rusqlite::params_from_iter(values.iter()))?;
        while let Some(row) = rows.next()? {
            let mut c = Candidate::from_row(row)?;
            if seen.insert(c.key) {
                c.relevance = row.get::<_, f64>(4)?.max(0.0);
                found.push(c);
            }
        }
    }
    Ok(found)
}

/// Visible records of a selective filter, with no query to rank by.
fn filter_matches(conn: &Connection, query: &RecordQuery) -> Result<Vec<Candidate>, StoreError> {
    let mut values = Vec::new();
    let (from, condition) = filter_source(query, &mut values);
    let sql = format!(
        "SELECT r.key, r.layer, r.salience, r.decays_from FROM {from} WHERE {condition}{}",
        visible(query, &mut values)
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt.query(rusqlite::params_from_iter(values.iter()))?;
    let mut found = Vec::new();
    while let Some(row) = rows.next()? {
        found.push(Candidate::from_row(row)?);
    }
    Ok(found)
}

/// Visible records with a vector, by key, with their similarity to
/// `vector`, computed as the rows are read (the vectors are never held).
///
/// Without a thread, subject or tag filter, the visible records are read
/// as ranges of the rank indexes (unscoped records, then the caller's
/// scopes; or every scope), which hold everything a candidate needs, so
/// each visible record costs one index entry and one vector lookup, and
/// invisible ones nothing.
fn similar(
    conn: &Connection,
    query: &RecordQuery,
    vector: &QueryVector,
) -> Result<HashMap<i64, Candidate>, StoreError> {
    const COLUMNS: &str = "r.key, r.layer, r.salience, r.decays_from, v.norm, v.vector";
    const VECTOR: &str = "CROSS JOIN record_vectors v ON v.record_key = r.key";
    let mut values = Vec::new();
    let sql = if FilterSql::selective(&query.filters) {
        let (from, condition) = filter_source(query, &mut values);
        format!(
            "SELECT {COLUMNS} FROM {from} {VECTOR} WHERE {condition}{}",
            visible(query, &mut values)
        )
    } else {
        values.push(SqlValue::Real(query.min_salience));
        let scopes = scope_conditions(query, "r.scope", &mut values);
        let filters = FilterSql::new(&query.filters, values.len() + 1);
        values.extend(filters.values);
        let common = format!(
            "r.layer IN ({}) AND r.sensitivity <= {} AND r.salience >= ?1{}",
            layer_list(query),
            query.max_sensitivity.rank(),
            filters.clause
        );
        let mut ranges = Vec::new();
        for set in RankSet::for_query(query) {
            let (rank, scope_rank, status) = set.indexes();
            let index = if query.scopes.is_some() {
                scope_rank
            } else {
                rank
            };
            for scope in &scopes {
                ranges.push(format!(
                    "SELECT {COLUMNS} FROM records r INDEXED BY {index} {VECTOR}
                     WHERE {scope} AND {status} AND {common}"
                ));
            }
        }
        ranges.join(" UNION ALL ")
    };
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt.query(rusqlite::params_from_iter(values.iter()))?;
    let mut found = HashMap::new();
    while let Some(row) = rows.next()? {
        let mut c = Candidate::from_row(row)?;
        let norm: f64 = row.get(4)?;
        let stored = vector_bytes(row, 5, c.key)?;
        c.vector = Some(vector.signal(stored, norm).unwrap_or(0.0));
        found.insert(c.key, c);
    }
    Ok(found)
}

/// The stored vector (or its quantized copy) in column `column` of a row
/// about record `key`.
fn vector_bytes<'a>(
    row: &'a rusqlite::Row<'_>,
    column: usize,
    key: i64,
) -> Result<&'a [u8], StoreError> {
    row.get_ref(column)?
        .as_blob()
        .map_err(|e| StoreError::Corrupt(format!("vector of record {key}: {e}")))
}

/// The scope condition of each range a query reads (`column` is the
/// scope column): every scope (`1`); or unscoped records, then the
/// caller's scopes, whose parameters are added to `values`.
fn scope_conditions(query: &RecordQuery, column: &str, values: &mut Vec<SqlValue>) -> Vec<String> {
    let Some(scopes) = &query.scopes else {
        return vec!["1".to_string()];
    };
    let mut conditions = vec![format!("{column} IS NULL")];
    if !scopes.is_empty() {
        let numbers: Vec<String> = scopes
            .iter()
            .map(|scope| {
                values.push(SqlValue::Text(scope.clone()));
                format!("?{}", values.len())
            })
            .collect();
        conditions.push(format!("{column} IN ({})", numbers.join(", ")));
    }
    conditions
}

fn layer_list(query: &RecordQuery) -> String {
    // Layers come from an enum, never from text.
    query
        .memory_types
        .iter()
        .map(|t| t.layer().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The table a filter-only (or vector) query reads records from, and its
/// condition: the thread or subject index when the filters name one; the
/// records of the first tag (the filters check them all), read from the
/// tag index rather than the rank ranges; otherwise the records table.
fn filter_source(query: &RecordQuery, values: &mut Vec<SqlValue>) -> (&'static str, String) {
    if query.filters.about().is_some() {
        return ("records r INDEXED BY idx_records_about", "1".into());
    }
    match query.filters.tags.first() {
        Some(tag) => {
            values.push(SqlValue::Text(tag.clone()));
            (
                "tags t CROSS JOIN records r ON r.key = t.record_key",
                format!("t.tag = ?{}", values.len()),
            )
        }
        None => ("records r", "1".into()),
    }
}

/// The conditions that keep to what the caller may see and asked for
/// (layers, trust, salience floor, status, filters), their parameters
/// added to `values`.
fn visible(query: &RecordQuery, values: &mut Vec<SqlValue>) -> String {
    let mut param = |value: SqlValue| {
        values.push(value);
        values.len()
    };
    // The sensitivity level comes from an enum, never from text.
    let mut sql = format!(
        " AND r.layer IN ({}) AND r.sensitivity <= {}",
        layer_list(query),
        query.max_sensitivity.rank()
    );
    let n = param(SqlValue::Real(query.min_salience));
    sql.push_str(&format!(" AND r.salience >= ?{n}"));
    if !query.include_retracted {
        sql.push_str(" AND r.status <> 'retracted'");
    }
    if let Some(scopes) = &query.scopes {
        let numbers: Vec<String> = scopes
            .iter()
            .map(|scope| format!("?{}", param(SqlValue::Text(scope.clone()))))
            .collect();
        if numbers.is_empty() {
            sql.push_str(" AND r.scope IS NULL");
        } else {
            sql.push_str(&format!(
                " AND (r.scope IS NULL OR r.scope IN ({}))",
                numbers.join(", ")
            ));
        }
    }
    let filters = FilterSql::new(&query.filters, values.len() + 1);
    sql.push_str(&filters.clause);
    values.extend(filters.values);
    sql
}

#[cfg(test)]
mod tests {
    use super::super::records::insert_record;
    use super::super::search::flush;
    use super::super::test_support::{conn, now, record};
    use super::*;
    use crate::domain::record::{MemoryType, Sensitivity};
    use crate::domain::relevance::Weights;
    use crate::domain::retrieval::Filters;
    use serde_json::json;

    fn fact(id: &str, object: &str) -> crate::domain::record::MemoryRecord {
        record(
            id,
            json!({"type": "semantic", "sensitivity": "low",
                   "payload": {"kind": "semantic", "subject": "s", "predicate": "p", "object": object}}),
        )
    }

    fn search(conn: &Connection, text: &str, limit: usize) -> Vec<String> {
        let query = RecordQuery {
            memory_types: MemoryType::ALL.to_vec(),
            max_sensitivity: Sensitivity::Hyper,
            scopes: None,
            min_salience: 0.0,
            limit,
            answer_limit: limit,
            include_retracted: false,
            after: None,
            max_bytes: usize::MAX,
            filters: Filters::default(),
            text: TextQuery::new(text),
            vector: None,
            weights: Weights::default(),
            max_salience: 1.0,
        };
        query_ranked(conn, &query, now())
            .unwrap()
            .records
            .into_iter()
            .map(|r| r.id)
            .collect()
    }

    /// Common words are left out while the rarer ones fill the answer, and
    /// brought back when they do not.
    #[test]
    fn common_words_give_way_to_rarer_ones_only_while_those_fill_the_answer() {
        let conn = conn();
        conn.execute_batch("BEGIN").unwrap();
        for i in 0..COMMON_WORD_MATCHES {
            insert_record(&conn, &fact(&format!("c{i}"), "common filler")).unwrap();
        }
        for i in 0..3 {
            insert_record(&conn, &fact(&format!("r{i}"), "rare")).unwrap();
        }
        flush(&conn).unwrap();
        conn.execute_batch("COMMIT").unwrap();
        let plan = |text: &str| {
            tiers(&conn, &TextQuery::new(text).unwrap(), 10)
                .unwrap()
                .into_iter()
                .map(|tier| {
                    tier.into_iter()
                        .map(|part| (part.fts, part.reading))
                        .collect::<Vec<_>>()
                })
                .collect::<Vec<_>>()
        };
        let rare = ("\"rare\"".to_string(), Reading::Bm25);
        assert_eq!(
            plan("common rare"),
            [
                vec![rare.clone()],
                vec![
                    rare.clone(),
                    (
                        "\"common\"".to_string(),
                        Reading::Newest(COMMON_QUERY_CANDIDATES, 0.0)
                    )
                ]
            ]
        );
        assert_eq!(
            plan("filler common"),
            [vec![(
                "\"filler\" OR \"common\"".to_string(),
                Reading::Newest(COMMON_QUERY_CANDIDATES, 1.0)
            )]]
        );
        assert_eq!(plan("rare"), [vec![rare]]);
        let found = search(&conn, "common rare", 2);
        assert_eq!(found.len(), 2);
        assert!(found.iter().all(|id| id.starts_with('r')), "{found:?}");
        // Three rare matches cannot fill five places: every word counts.
        let found = search(&conn, "common rare", 5);
        assert_eq!(found.len(), 5, "{found:?}");
        assert!(found[..3].iter().all(|id| id.starts_with('r')), "{found:?}");
        assert!(found[3..].iter().all(|id| id.starts_with('c')), "{found:?}");
        // Common words alone: the newest matches.
        let last = COMMON_WORD_MATCHES - 1;
        assert_eq!(
            search(&conn, "filler common", 2),
            [format!("c{last}"), format!("c{}", last - 1)]
        );
    }

    /// The vector scan (quantized bounds, then whole records) gives exactly
    /// the answer of reading every visible record's vector, whatever the
    /// trust, status, salience floor and limit, with or without text.
    #[test]
    fn the_vector_scan_finds_the_true_top() {
        let conn = conn();
        let mut seed = 11u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let scopes = [None, Some("a"), Some("b")];
        let sensitivities = ["public", "low", "medium", "high"];
        for i in 0..300 {
            let vector: Vec<f64> = (0..8).map(|_| next(2001) as f64 / 1000.0 - 1.0).collect();
            let kind = ["semantic", "episodic", "competence"][next(3) as usize];
            let payload = match kind {
                "semantic" => json!({"kind": "semantic", "subject": "s", "predicate": "p"}),
                "episodic" => json!({"kind": "episodic"}),
                _ => json!({"kind": "competence", "skill_name": "k"}),
            };
            let mut body = json!({"type": kind,
                "sensitivity": sensitivities[next(4) as usize],
                "salience": next(101) as f64 / 100.0,
                "embedding": vector,
                "payload": payload});
            if let Some(scope) = scopes[next(3) as usize] {
                body["scope"] = json!(scope);
            }
            insert_record(&conn, &record(&format!("v{i}"), body)).unwrap();
        }
        // Some retracted after the fact, by a rewrite of the record.
        for i in (0..300).step_by(5) {
            let loaded = super::super::records::get_for_update(&conn, &format!("v{i}"), now())
                .unwrap()
                .unwrap();
            let mut retracted = loaded.record.clone();
            retracted.status = crate::domain::record::Status::Retracted;
            super::super::records::update_record(
                &conn,
                &loaded.version,
                &retracted,
                crate::store::SalienceChange::Unchanged,
            )
            .unwrap();
        }
        for round in 0..60 {
            let query_vector: Vec<f64> = (0..8).map(|_| next(2001) as f64 / 1000.0 - 1.0).collect();
            let embedding = crate::domain::vector::Embedding::new("q", query_vector).unwrap();
            let limit = 1 + next(15) as usize;
            let mut query = RecordQuery {
                memory_types: [
                    MemoryType::Semantic,
                    MemoryType::Competence,
                    MemoryType::Episodic,
                ][..1 + next(3) as usize]
                    .to_vec(),
                max_sensitivity: Sensitivity::ALL[next(4) as usize],
                scopes: [None, Some(vec![]), Some(vec!["a".to_string()])][next(3) as usize].clone(),
                min_salience: [0.0, 0.3][next(2) as usize],
                limit,
                answer_limit: limit,
                include_retracted: next(2) == 0,
                after: None,
                max_bytes: usize::MAX,
                filters: Filters::default(),
                text: None,
                vector: Some(QueryVector::new(&embedding)),
                weights: Weights::default(),
                max_salience: 1.0,
            };
            query.memory_types.sort_by_key(|t| t.layer());
            // Half the rounds blend in a text query.
            let text = TextQuery::new("k s");
            let tier = (round % 2 == 0).then(|| {
                vec![Part {
                    fts: text.as_ref().unwrap().any(),
                    reading: Reading::Bm25,
                }]
            });
            if tier.is_some() {
                query.text = text;
            }
            let (fast, fast_signals) = ranked(&conn, &query, tier.as_ref(), now()).unwrap();
            // A filter every record passes takes the path that reads every
            // visible vector whole.
            let exact = RecordQuery {
                filters: Filters {
                    created_after: Some(
                        crate::domain::time::parse_rfc3339("2000-01-01T00:00:00Z").unwrap(),
                    ),
                    ..Filters::default()
                },
                ..query.clone()
            };
            let (full, full_signals) = ranked(&conn, &exact, tier.as_ref(), now()).unwrap();
            let keys = |ranks: &[Rank]| ranks.iter().map(|r| r.key).collect::<Vec<_>>();
            assert_eq!(keys(&fast), keys(&full), "round {round}");
            for rank in &fast {
                assert_eq!(fast_signals[&rank.key], full_signals[&rank.key]);
            }
        }
    }
}
