//! Ranked retrieval: the records a caller may see that match a text query
//! or a selective filter (a thread, a subject, a tag), best first by the
//! blended score of `domain::relevance`.
//!
//! One statement finds every visible match with its BM25 relevance (the
//! caller's trust, the layers, the filters and the stored salience floor
//! are conditions of that statement, so invisible records never take a
//! place in the answer, and BM25 is computed for visible matches only:
//! it costs more than the record lookup that checks visibility). Each match's score is bounded from above with its
//! stored salience (decay only lowers it); matches are then taken in order
//! of that bound, their exact current salience computed, until the bound
//! of the next cannot beat the last of the top `limit`.

use std::collections::HashMap;

use rusqlite::types::Value as SqlValue;
use rusqlite::Connection;

use super::filters::FilterSql;
use super::ranking::{current_salience, decay_bounds, within_budget, Rank, TopK, PROFILE_SQL};
use crate::domain::relevance::{relative, Signals};
use crate::domain::retrieval::RecordQuery;
use crate::domain::time::{to_micros, Timestamp};
use crate::store::{RecordPage, StoreError};

/// A visible match, as the index gave it.
struct Candidate {
    key: i64,
    layer: i64,
    stored: f64,
    decays_from: i64,
    created_at: i64,
    /// BM25 relevance, higher is better (0 without a text query).
    relevance: f64,
    /// The most the score can be, from the stored salience.
    bound: f64,
}

pub fn query_ranked(
    conn: &Connection,
    query: &RecordQuery,
    now: Timestamp,
) -> Result<RecordPage, StoreError> {
    let mut candidates = candidates(conn, query)?;
    let best = candidates
        .iter()
        .map(|c| c.relevance)
        .fold(0.0f64, f64::max);
    let text_signal = |relevance: f64| query.text.as_ref().map(|_| relative(relevance, best));
    let bounds = decay_bounds(conn)?;
    let now_micros = to_micros(&now);
    for c in &mut candidates {
        let most = bounds
            .get(&c.layer)
            .map_or(c.stored, |b| b.at_most(c.stored, c.decays_from, now_micros));
        c.bound = Signals {
            text: text_signal(c.relevance),
            vector: None,
            salience: most,
        }
        .score(&query.weights, query.max_salience);
    }
    candidates.sort_by(|a, b| b.bound.total_cmp(&a.bound));

    let mut top = TopK::for_query(query);
    let mut signals: HashMap<i64, Signals> = HashMap::new();
    let mut profile = conn.prepare_cached(PROFILE_SQL)?;
    for c in &candidates {
        if top.excludes_up_to(c.bound) {
            break;
        }
        let mut rows = profile.query([c.key])?;
        let Some(row) = rows.next()? else {
            return Err(StoreError::Corrupt(format!(
                "record {} has no decay profile",
                c.key
            )));
        };
        let salience = current_salience(row, c.stored, c.created_at, now)?;
        if salience < query.min_salience {
            continue;
        }
        let record_signals = Signals {
            text: text_signal(c.relevance),
            vector: None,
            salience,
        };
        let score = record_signals.score(&query.weights, query.max_salience);
        top.offer(Rank {
            salience: score,
            layer: c.layer,
            created_at: c.created_at,
            key: c.key,
        });
        signals.insert(c.key, record_signals);
    }
    within_budget(conn, query, top.into_sorted(), now, |rank| {
        signals[&rank.key]
    })
}

/// Every visible record that matches the query and the filters.
fn candidates(conn: &Connection, query: &RecordQuery) -> Result<Vec<Candidate>, StoreError> {
    if query.memory_types.is_empty() {
        return Ok(Vec::new());
    }
    let mut values: Vec<SqlValue> = Vec::new();
    let mut param = |value: SqlValue| {
        values.push(value);
        values.len()
    };
    let mut sql = String::from("SELECT r.key, r.layer, r.salience, r.decays_from, r.created_at, ");
    match &query.text {
        Some(text) => {
            let n = param(SqlValue::Text(text.clone()));
            sql.push_str(&format!(
                "-bm25(record_search) FROM record_search JOIN records r ON r.key = record_search.rowid
                 WHERE record_search MATCH ?{n}"
            ));
        }
        // The thread or subject index, when the filters name one.
        None if query.filters.about().is_some() => {
            sql.push_str("0.0 FROM records r INDEXED BY idx_records_about WHERE 1")
        }
        // Otherwise the records of the first tag (the filters check them
        // all), read from the tag index rather than the rank ranges.
        None => match query.filters.tags.first() {
            Some(tag) => {
                let n = param(SqlValue::Text(tag.clone()));
                sql.push_str(&format!(
                    "0.0 FROM tags t CROSS JOIN records r ON r.key = t.record_key WHERE t.tag = ?{n}"
                ));
            }
            None => sql.push_str("0.0 FROM records r WHERE 1"),
        },
    }
    // Layers and the sensitivity level come from enums, never from text.
    let layers: Vec<String> = query
        .memory_types
        .iter()
        .map(|t| t.layer().to_string())
        .collect();
    sql.push_str(&format!(
        " AND r.layer IN ({}) AND r.sensitivity <= {}",
        layers.join(", "),
        query.max_sensitivity.rank()
    ));
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

    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt.query(rusqlite::params_from_iter(values.iter()))?;
    let mut found = Vec::new();
    while let Some(row) = rows.next()? {
        found.push(Candidate {
            key: row.get(0)?,
            layer: row.get(1)?,
            stored: row.get(2)?,
            decays_from: row.get(3)?,
            created_at: row.get(4)?,
            relevance: row.get::<_, f64>(5)?.max(0.0),
            bound: 0.0,
        });
    }
    Ok(found)
}
