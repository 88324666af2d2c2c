//! Retrieval on PostgreSQL: the best `limit` records a caller may see.
//!
//! By salience alone, the visible records are read in the order of the
//! salience stored at the last sweep or change, a page at a time, each at
//! its exact salience now; reading stops once the most any unread record
//! can have (decay only lowers salience, no faster than the slowest
//! half-life of the types asked for) cannot beat the last of the top
//! `limit`. The answer is exact however long ago the sweep ran.
//!
//! With a text query, a query vector or a selective filter (a thread, a
//! subject, a tag), every visible candidate is read in one statement with
//! its text rank (`ts_rank_cd` over the `english` text search
//! configuration) and its vector, and scored with the blended score of
//! `domain::relevance`: text relevance relative to the best candidate's,
//! vector similarity, salience now.
//!
//! Visibility (types, sensitivity, scopes, status) and the filters are
//! conditions of the statements, so a record the caller may not see never
//! takes a place in the answer.

use std::collections::HashMap;

use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use super::records::{load_records, parse_enum, payload_sizes};
use super::Pg;
use crate::domain::decay::{salience_at, Anchor, DecayState};
use crate::domain::record::{DecayCurve, DecayProfile, MemoryType};
use crate::domain::relevance::{relative, Signals};
use crate::domain::retrieval::RecordQuery;
use crate::domain::time::{from_micros, to_micros, Timestamp};
use crate::store::ranking::{within_budget, DecayBound, Rank, TopK, MAX_PAGE};
use crate::store::{RecordPage, StoreError};

/// Rows read beyond the limit on the first page; later pages double.
const FIRST_PAGE_MARGIN: usize = if cfg!(test) { 0 } else { 32 };

/// A statement's `WHERE` conditions and their parameters.
#[derive(Default)]
struct Conditions {
    clause: String,
    values: Vec<Box<dyn ToSql + Sync + Send>>,
}

impl Conditions {
    /// Adds a parameter; answers its placeholder.
    fn param(&mut self, value: impl ToSql + Sync + Send + 'static) -> String {
        self.values.push(Box::new(value));
        format!("${}", self.values.len())
    }

    fn and(&mut self, condition: &str) {
        self.clause.push_str(" AND ");
        self.clause.push_str(condition);
    }

    fn params(&self) -> Vec<&(dyn ToSql + Sync)> {
        self.values
            .iter()
            .map(|v| v.as_ref() as &(dyn ToSql + Sync))
            .collect()
    }

    /// What the caller may see and asked for: types, sensitivity, scopes,
    /// status, the stored salience floor, the filters.
    fn visible(query: &RecordQuery) -> Conditions {
        let mut c = Conditions {
            clause: "TRUE".to_string(),
            values: Vec::new(),
        };
        let layers: Vec<i64> = query
            .memory_types
            .iter()
            .map(|t| t.layer() as i64)
            .collect();
        let p = c.param(layers);
        c.and(&format!("r.layer = ANY({p})"));
        let p = c.param(query.max_sensitivity.rank() as i64);
        c.and(&format!("r.sensitivity <= {p}"));
        if let Some(scopes) = &query.scopes {
            let p = c.param(scopes.clone());
            c.and(&format!("(r.scope IS NULL OR r.scope = ANY({p}))"));
        }
        if !query.include_retracted {
            c.and("r.status <> 'retracted'");
        }
        // Decay only lowers salience: a record stored below the floor is
        // below it now.
        let p = c.param(query.min_salience);
        c.and(&format!("r.salience >= {p}"));
        let filters = &query.filters;
        for (name, memory_type) in [
            (&filters.thread_id, MemoryType::Working),
            (&filters.subject, MemoryType::Semantic),
        ] {
            if let Some(name) = name {
                let p = c.param(name.clone());
                c.and(&format!(
                    "r.about = {p} AND r.layer = {}",
                    memory_type.layer()
                ));
            }
        }
        for tag in &filters.tags {
            let p = c.param(tag.clone());
            c.and(&format!(
                "r.key IN (SELECT record_key FROM tags WHERE tag = {p})"
            ));
        }
        if !filters.sources.is_empty() {
            let p = c.param(filters.sources.clone());
            c.and(&format!("r.created_by = ANY({p})"));
        }
        if let Some(after) = filters.created_after {
            let p = c.param(to_micros(&after));
            c.and(&format!("r.created_at > {p}"));
        }
        if let Some(before) = filters.created_before {
            let p = c.param(to_micros(&before));
            c.and(&format!("r.created_at < {p}"));
        }
        c
    }
}

/// The decay profile columns [`current_salience`] reads, from `d`.
const PROFILE_COLUMNS: &str = "d.curve, d.half_life_seconds, d.min_salience, d.max_age_seconds,
     d.reinforcement_gain, d.pinned, d.anchor_salience, d.anchor_at";

/// The salience now of a record whose profile columns start at `first`.
fn current_salience(
    row: &Row,
    first: usize,
    created_at: i64,
    now: Timestamp,
) -> Result<f64, StoreError> {
    let profile = DecayProfile {
        curve: parse_enum(row, first, DecayCurve::parse)?,
        half_life_seconds: row.try_get(first + 1)?,
        min_salience: row.try_get(first + 2)?,
        max_age_seconds: row.try_get(first + 3)?,
        reinforcement_gain: row.try_get(first + 4)?,
    };
    let state = DecayState {
        anchor: Anchor {
            salience: row.try_get(first + 6)?,
            at: from_micros(row.try_get(first + 7)?),
        },
        profile: &profile,
        pinned: row.try_get(first + 5)?,
        created_at: from_micros(created_at),
    };
    Ok(salience_at(&state, now))
}

/// Whether the filters pick records through an index of their own rather
/// than narrowing the salience order.
fn selective(query: &RecordQuery) -> bool {
    query.filters.about().is_some() || !query.filters.tags.is_empty()
}

pub fn query_records(
    pg: &Pg,
    query: &RecordQuery,
    now: Timestamp,
) -> Result<RecordPage, StoreError> {
    let (top, signals) = if query.text.is_some() || query.vector.is_some() || selective(query) {
        ranked(pg, query, now)?
    } else {
        (by_salience(pg, query, now)?, HashMap::new())
    };
    let keys: Vec<i64> = top.iter().map(|r| r.key).collect();
    let sizes = payload_sizes(pg, &keys)?;
    within_budget(
        query,
        top,
        now,
        &sizes,
        |keys| load_records(pg, keys, now),
        |rank| {
            signals.get(&rank.key).copied().unwrap_or(Signals {
                text: None,
                vector: None,
                salience: rank.salience,
            })
        },
    )
}

/// The slowest decay any of the query's types allows; `None` when none of
/// them has a record.
fn slowest_decay(pg: &Pg, query: &RecordQuery) -> Result<Option<DecayBound>, StoreError> {
    let layers: Vec<i64> = query
        .memory_types
        .iter()
        .map(|t| t.layer() as i64)
        .collect();
    let row = pg.query_one(
        "SELECT MAX(max_half_life_seconds), MAX(max_min_salience) FROM decay_bounds
         WHERE layer = ANY($1)",
        &[&layers],
    )?;
    Ok(match (row.try_get(0)?, row.try_get(1)?) {
        (Some(max_half_life_seconds), Some(max_min_salience)) => Some(DecayBound {
            max_half_life_seconds,
            max_min_salience,
        }),
        _ => None,
    })
}

fn by_salience(pg: &Pg, query: &RecordQuery, now: Timestamp) -> Result<Vec<Rank>, StoreError> {
    let Some(bound) = slowest_decay(pg, query)? else {
        return Ok(Vec::new());
    };
    let mut page_sql = Conditions::visible(query);
    let after_salience = page_sql.param(0.0f64);
    let after_decays = page_sql.param(0i64);
    let after_key = page_sql.param(0i64);
    let limit = page_sql.param(0i64);
    let page_statement = format!(
        "SELECT r.key, r.salience, r.decays_from, r.created_at, r.layer, {PROFILE_COLUMNS}
         FROM records r JOIN decay_profiles d ON d.record_key = r.key
         WHERE {} AND (r.salience, r.decays_from, r.key) < ({after_salience}, {after_decays}, {after_key})
         ORDER BY r.salience DESC, r.decays_from DESC, r.key DESC
         LIMIT {limit}",
        page_sql.clause
    );
    let mut tier_sql = Conditions::visible(query);
    let below = tier_sql.param(0.0f64);
    let tier_statement = format!(
        "SELECT r.salience FROM records r WHERE {} AND r.salience < {below}
         ORDER BY r.salience DESC LIMIT 1",
        tier_sql.clause
    );
    let n = page_sql.values.len();
    let now_micros = to_micros(&now);
    let mut top = TopK::for_query(query);
    let mut after = (f64::MAX, i64::MAX, i64::MAX);
    let mut page = query.limit.saturating_add(FIRST_PAGE_MARGIN).min(MAX_PAGE);
    loop {
        page_sql.values[n - 4] = Box::new(after.0);
        page_sql.values[n - 3] = Box::new(after.1);
        page_sql.values[n - 2] = Box::new(after.2);
        page_sql.values[n - 1] = Box::new(page as i64);
        let rows = pg.query(&page_statement, &page_sql.params())?;
        for row in &rows {
            let key: i64 = row.try_get(0)?;
            let stored: f64 = row.try_get(1)?;
            let decays_from: i64 = row.try_get(2)?;
            let created_at: i64 = row.try_get(3)?;
            after = (stored, decays_from, key);
            let most = bound.at_most(stored, decays_from, now_micros);
            if most < query.min_salience || top.excludes_up_to(most) {
                continue;
            }
            let current = current_salience(row, 5, created_at, now)?;
            if current >= query.min_salience {
                top.offer(Rank {
                    salience: current,
                    layer: row.try_get(4)?,
                    created_at,
                    key,
                });
            }
        }
        if rows.len() < page {
            break;
        }
        // What the rest of this stored value's tier can have now, then
        // what the records stored lower can.
        let tier = bound.at_most(after.0, after.1, now_micros);
        if tier < query.min_salience || top.excludes_up_to(tier) {
            let last = tier_sql.values.len() - 1;
            tier_sql.values[last] = Box::new(after.0);
            let next: Option<f64> = pg
                .query_opt(&tier_statement, &tier_sql.params())?
                .map(|row| row.try_get(0))
                .transpose()?;
            if next.is_none_or(|below| top.excludes_up_to(below)) {
                break;
            }
        }
        page = page.saturating_mul(2).min(MAX_PAGE);
    }
    Ok(top.into_sorted())
}

/// A term of the text query as a `tsquery` text.
fn tsquery_term(term: &str) -> String {
    format!("'{}'", term.trim_matches('"').replace('\'', "''"))
}

/// Matches of a term counted up to this many: beyond it a word is common
/// and its weight hardly changes, while counting costs in proportion.
const MATCHES_COUNTED: i64 = 10_000;

/// Each term of the text query with its weight: its inverse document
/// frequency as BM25 has it, `ln(1 + (N - n + 0.5) / (n + 0.5))` for `n`
/// of `N` records matching it, so a rare word counts for more than a
/// common one.
fn term_weights(pg: &Pg, query: &RecordQuery) -> Result<Vec<(String, f64)>, StoreError> {
    let Some(text) = &query.text else {
        return Ok(Vec::new());
    };
    // The planner's estimate of the table's size (kept by autovacuum);
    // a young table is counted.
    let estimate: f64 = pg
        .query_one(
            "SELECT GREATEST(reltuples, 0)::float8 FROM pg_class WHERE oid = 'records'::regclass",
            &[],
        )?
        .try_get(0)?;
    let total = if estimate < MATCHES_COUNTED as f64 {
        pg.query_one(
            "SELECT COUNT(*) FROM (SELECT 1 FROM records LIMIT $1) r",
            &[&MATCHES_COUNTED],
        )?
        .try_get::<_, i64>(0)? as f64
    } else {
        estimate
    };
    let mut weights = Vec::with_capacity(text.terms().len());
    for term in text.terms() {
        let term = tsquery_term(term);
        let matches = pg
            .query_one(
                "SELECT COUNT(*) FROM (SELECT 1 FROM records
                                       WHERE search @@ to_tsquery('english', $1) LIMIT $2) m",
                &[&term, &MATCHES_COUNTED],
            )?
            .try_get::<_, i64>(0)? as f64;
        let total = total.max(matches);
        let idf = (1.0 + (total - matches + 0.5) / (matches + 0.5)).ln();
        weights.push((term, idf));
    }
    Ok(weights)
}

/// Every visible candidate, scored: text matches, records with a vector
/// (with a query vector), or, with neither, the records the filters pick.
fn ranked(
    pg: &Pg,
    query: &RecordQuery,
    now: Timestamp,
) -> Result<(Vec<Rank>, HashMap<i64, Signals>), StoreError> {
    let weights = term_weights(pg, query)?;
    let mut c = Conditions::visible(query);
    let any: Vec<&str> = weights.iter().map(|(term, _)| term.as_str()).collect();
    let text = (!weights.is_empty()).then(|| c.param(any.join(" | ")));
    // The weights of the words a record has (binary BM25: short texts
    // rarely repeat a word), then, by a small fraction, how closely
    // together they stand.
    let relevance = match &text {
        Some(q) => {
            let mut sum = Vec::with_capacity(weights.len());
            for (term, weight) in &weights {
                let t = c.param(term.clone());
                let w = c.param(*weight);
                sum.push(format!(
                    "CASE WHEN r.search @@ to_tsquery('english', {t}) THEN {w}::float8 ELSE 0 END"
                ));
            }
            format!(
                "({} + 0.01 * ts_rank_cd(r.search, to_tsquery('english', {q})))",
                sum.join(" + ")
            )
        }
        None => "0::float4".to_string(),
    };
    let vector = if query.vector.is_some() {
        "v.norm, v.vector"
    } else {
        "NULL::float8, NULL::bytea"
    };
    let join = if query.vector.is_some() {
        "LEFT JOIN record_vectors v ON v.record_key = r.key"
    } else {
        ""
    };
    let matches = match (&text, query.vector.is_some()) {
        (Some(q), true) => {
            format!("(r.search @@ to_tsquery('english', {q}) OR v.record_key IS NOT NULL)")
        }
        (Some(q), false) => format!("r.search @@ to_tsquery('english', {q})"),
        (None, true) => "v.record_key IS NOT NULL".to_string(),
        (None, false) => "TRUE".to_string(),
    };
    let sql = format!(
        "SELECT r.key, r.layer, r.created_at, {relevance}::float8, {vector}, {PROFILE_COLUMNS}
         FROM records r JOIN decay_profiles d ON d.record_key = r.key {join}
         WHERE {} AND {matches}",
        c.clause
    );
    let rows = pg.query(&sql, &c.params())?;
    let best = rows
        .iter()
        .map(|row| row.try_get::<_, f64>(3))
        .try_fold(0.0f64, |best, r| r.map(|r| best.max(r)))?;
    let mut top = TopK::for_query(query);
    let mut signals = HashMap::with_capacity(rows.len().min(4 * query.limit + 16));
    for row in &rows {
        let key: i64 = row.try_get(0)?;
        let created_at: i64 = row.try_get(2)?;
        let salience = current_salience(row, 6, created_at, now)?;
        if salience < query.min_salience {
            continue;
        }
        let similarity = match &query.vector {
            Some(q) => {
                let norm: Option<f64> = row.try_get(4)?;
                let bytes: Option<&[u8]> = row.try_get(5)?;
                Some(match (norm, bytes) {
                    (Some(norm), Some(bytes)) => q.signal(bytes, norm).unwrap_or(0.0),
                    _ => 0.0,
                })
            }
            None => None,
        };
        let record = Signals {
            text: text
                .as_ref()
                .map(|_| relative(row.try_get::<_, f64>(3).unwrap_or(0.0), best)),
            vector: similarity,
            salience,
        };
        top.offer(Rank {
            salience: record.score(&query.weights, query.max_salience),
            layer: row.try_get(1)?,
            created_at,
            key,
        });
        signals.insert(key, record);
    }
    let top = top.into_sorted();
    let kept: std::collections::HashSet<i64> = top.iter().map(|r| r.key).collect();
    signals.retain(|key, _| kept.contains(key));
    Ok((top, signals))
}
