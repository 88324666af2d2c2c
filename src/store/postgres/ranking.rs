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

/// A word in this many visible or invisible records or more is common:
/// reading all its matches costs in proportion to the table, and it says
/// little about what a record is about (as on SQLite).
const COMMON_WORD_MATCHES: i64 = 1000;

/// The most matches a query of common words alone reads (the newest
/// visible ones), unless its `limit` is larger.
const COMMON_QUERY_CANDIDATES: usize = 250;

/// A word of the text query, as a `tsquery` text, with its weight: its
/// inverse document frequency as BM25 has it, `ln(1 + (N - n + 0.5) /
/// (n + 0.5))` for `n` of `N` records having it (`n` counted up to
/// [`COMMON_WORD_MATCHES`]), so a rare word counts for more.
struct Term {
    tsquery: String,
    weight: f64,
    common: bool,
}

fn terms(pg: &Pg, query: &RecordQuery) -> Result<Vec<Term>, StoreError> {
    let Some(text) = &query.text else {
        return Ok(Vec::new());
    };
    // The planner's estimate of the table's size (kept by autovacuum); a
    // young table is counted.
    let estimate: f64 = pg
        .query_one(
            "SELECT GREATEST(reltuples, 0)::float8 FROM pg_class WHERE oid = 'records'::regclass",
            &[],
        )?
        .try_get(0)?;
    let total = if estimate < 10_000.0 {
        pg.query_one("SELECT COUNT(*) FROM records", &[])?
            .try_get::<_, i64>(0)? as f64
    } else {
        estimate
    };
    // Each word's share of the records from the statistics ANALYZE keeps
    // of the search column (its most common lexemes): a common word is
    // known without counting its matches, which would read them all.
    let words: Vec<String> = text
        .terms()
        .iter()
        .map(|t| t.trim_matches('"').to_string())
        .collect();
    let mut shares: std::collections::HashMap<String, f64> = std::collections::HashMap::new();
    for row in pg.query(
        "WITH stats AS (
             SELECT most_common_elems::text::text[] AS elems, most_common_elem_freqs AS freqs
             FROM pg_stats
             WHERE schemaname = current_schema() AND tablename = 'records' AND attname = 'search')
         SELECT w, (SELECT MAX(s.freqs[array_position(s.elems, l.lexeme)])::float8
                    FROM stats s, unnest(to_tsvector('english', w)) l)
         FROM unnest($1::text[]) w",
        &[&words],
    )? {
        if let Some(share) = row.try_get::<_, Option<f64>>(1)? {
            shares.insert(row.try_get(0)?, share);
        }
    }
    let mut terms = Vec::with_capacity(words.len());
    for word in &words {
        let tsquery = tsquery_term(word);
        let counted = match shares.get(word) {
            Some(share) if share * total >= COMMON_WORD_MATCHES as f64 => share * total,
            _ => pg
                .query_one(
                    "SELECT COUNT(*) FROM (SELECT 1 FROM records
                                           WHERE search @@ to_tsquery('english', $1) LIMIT $2) m",
                    &[&tsquery, &COMMON_WORD_MATCHES],
                )?
                .try_get::<_, i64>(0)? as f64,
        };
        let n = counted;
        let total = total.max(n);
        terms.push(Term {
            tsquery,
            weight: (1.0 + (total - n + 0.5) / (n + 0.5)).ln(),
            common: n >= COMMON_WORD_MATCHES as f64,
        });
    }
    Ok(terms)
}

/// How one part of a way of matching is read.
enum Part<'a> {
    /// Every visible match of any of these words, each with the weights of
    /// the words it has.
    Weighted(Vec<&'a Term>),
    /// The newest `n` visible matches of any of these words, each with
    /// relevance `relevance`.
    Newest(Vec<&'a Term>, usize, f64),
}

/// The ways to match a text query, tried in turn (the last always
/// answers), as on SQLite: every word rare, all their matches weighted;
/// rare and common words, the rare words alone (which must fill the
/// answer), then their matches followed by the newest visible matches of
/// the common words (relevance 0); only common words, their newest visible
/// matches, each a full match.
fn tiers<'a>(terms: &'a [Term], limit: usize) -> Vec<Vec<Part<'a>>> {
    let newest = COMMON_QUERY_CANDIDATES.max(limit);
    let (common, rare): (Vec<&Term>, Vec<&Term>) = terms.iter().partition(|t| t.common);
    if rare.is_empty() {
        vec![vec![Part::Newest(common, newest, 1.0)]]
    } else if common.is_empty() {
        vec![vec![Part::Weighted(rare)]]
    } else {
        vec![
            vec![Part::Weighted(rare.clone())],
            vec![Part::Weighted(rare), Part::Newest(common, newest, 0.0)],
        ]
    }
}

/// A visible candidate and what scoring it needs.
struct Candidate {
    key: i64,
    layer: i64,
    created_at: i64,
    relevance: f64,
    salience: f64,
    vector: Option<f64>,
}

/// The columns every candidate statement reads: key, layer, creation,
/// the vector's norm and bytes (or nulls), the profile; then relevance.
fn candidate_sql(query: &RecordQuery, c: &Conditions, relevance: &str, vectors: &str) -> String {
    let vector = if query.vector.is_some() {
        "v.norm, v.vector"
    } else {
        "NULL::float8, NULL::bytea"
    };
    format!(
        "SELECT r.key, r.layer, r.created_at, {vector}, {PROFILE_COLUMNS}, {relevance}::float8
         FROM records r JOIN decay_profiles d ON d.record_key = r.key {vectors}
         WHERE {}",
        c.clause
    )
}

/// Reads candidates into `found` (a record found already is not read
/// again).
fn read_candidates(
    pg: &Pg,
    query: &RecordQuery,
    now: Timestamp,
    sql: &str,
    c: &Conditions,
    found: &mut Vec<Candidate>,
    seen: &mut std::collections::HashSet<i64>,
) -> Result<(), StoreError> {
    for row in pg.query(sql, &c.params())? {
        let key: i64 = row.try_get(0)?;
        if !seen.insert(key) {
            continue;
        }
        let created_at: i64 = row.try_get(2)?;
        let vector = match &query.vector {
            Some(q) => {
                let norm: Option<f64> = row.try_get(3)?;
                let bytes: Option<&[u8]> = row.try_get(4)?;
                Some(match (norm, bytes) {
                    (Some(norm), Some(bytes)) => q.signal(bytes, norm).unwrap_or(0.0),
                    _ => 0.0,
                })
            }
            None => None,
        };
        found.push(Candidate {
            key,
            layer: row.try_get(1)?,
            created_at,
            salience: current_salience(&row, 5, created_at, now)?,
            relevance: row.try_get::<_, f64>(13)?.max(0.0),
            vector,
        });
    }
    Ok(())
}

/// The visible candidates of one way of matching (`tier`; `None`: no text
/// query): its text matches, then, with a query vector, every visible
/// record with a vector; with neither, what the filters pick.
fn candidates(
    pg: &Pg,
    query: &RecordQuery,
    tier: Option<&[Part<'_>]>,
    now: Timestamp,
) -> Result<Vec<Candidate>, StoreError> {
    let mut found = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let with_vectors = if query.vector.is_some() {
        "LEFT JOIN record_vectors v ON v.record_key = r.key"
    } else {
        ""
    };
    for part in tier.unwrap_or_default() {
        let mut c = Conditions::visible(query);
        let (words, relevance, newest) = match part {
            Part::Weighted(words) => {
                let mut sum = Vec::with_capacity(words.len());
                for word in words {
                    let t = c.param(word.tsquery.clone());
                    let w = c.param(word.weight);
                    sum.push(format!(
                        "CASE WHEN r.search @@ to_tsquery('english', {t}) THEN {w}::float8 ELSE 0 END"
                    ));
                }
                (words, format!("({})", sum.join(" + ")), None)
            }
            Part::Newest(words, n, relevance) => (words, format!("{relevance:?}"), Some(*n)),
        };
        let any: Vec<&str> = words.iter().map(|w| w.tsquery.as_str()).collect();
        let q = c.param(any.join(" | "));
        c.and(&format!("r.search @@ to_tsquery('english', {q})"));
        // Records with the same words, by how closely together they
        // stand (a small share of the relevance).
        let relevance = match newest {
            None => {
                format!("({relevance} + 0.01 * ts_rank_cd(r.search, to_tsquery('english', {q})))")
            }
            Some(_) => relevance,
        };
        let mut sql = candidate_sql(query, &c, &relevance, with_vectors);
        if let Some(n) = newest {
            // Newest first by key, until this many visible ones are found
            // (records an earlier part found are read again, not kept).
            sql.push_str(&format!(" ORDER BY r.key DESC LIMIT {}", n + found.len()));
        }
        read_candidates(pg, query, now, &sql, &c, &mut found, &mut seen)?;
    }
    if query.vector.is_some() {
        let c = Conditions::visible(query);
        let sql = candidate_sql(
            query,
            &c,
            "0",
            "JOIN record_vectors v ON v.record_key = r.key",
        );
        read_candidates(pg, query, now, &sql, &c, &mut found, &mut seen)?;
    } else if tier.is_none() {
        let c = Conditions::visible(query);
        let sql = candidate_sql(query, &c, "0", "");
        read_candidates(pg, query, now, &sql, &c, &mut found, &mut seen)?;
    }
    Ok(found)
}

/// The best `limit` of one way of matching, with their signals.
fn ranked_by(
    pg: &Pg,
    query: &RecordQuery,
    tier: Option<&[Part<'_>]>,
    now: Timestamp,
) -> Result<(Vec<Rank>, HashMap<i64, Signals>), StoreError> {
    let found = candidates(pg, query, tier, now)?;
    let best = found.iter().map(|c| c.relevance).fold(0.0f64, f64::max);
    let mut top = TopK::for_query(query);
    let mut signals = HashMap::new();
    for c in &found {
        if c.salience < query.min_salience {
            continue;
        }
        let record = Signals {
            text: tier.map(|_| relative(c.relevance, best)),
            vector: c.vector,
            salience: c.salience,
        };
        top.offer(Rank {
            salience: record.score(&query.weights, query.max_salience),
            layer: c.layer,
            created_at: c.created_at,
            key: c.key,
        });
        signals.insert(c.key, record);
    }
    let top = top.into_sorted();
    let kept: std::collections::HashSet<i64> = top.iter().map(|r| r.key).collect();
    signals.retain(|key, _| kept.contains(key));
    Ok((top, signals))
}

/// Ranked retrieval: with a text query, the first way of matching that
/// fills the whole answer (as the first page has it, so every page takes
/// the same one), else the last.
fn ranked(
    pg: &Pg,
    query: &RecordQuery,
    now: Timestamp,
) -> Result<(Vec<Rank>, HashMap<i64, Signals>), StoreError> {
    let terms = terms(pg, query)?;
    if terms.is_empty() {
        return ranked_by(pg, query, None, now);
    }
    let tiers = tiers(&terms, query.answer_limit);
    let first_page = query.after.is_none() && query.limit == query.answer_limit;
    let last = tiers.len() - 1;
    for (i, tier) in tiers.iter().enumerate() {
        if i < last {
            let whole = RecordQuery {
                limit: query.answer_limit,
                after: None,
                ..query.clone()
            };
            let (top, signals) = ranked_by(pg, &whole, Some(tier), now)?;
            if top.len() < query.answer_limit {
                continue;
            }
            if first_page {
                return Ok((top, signals));
            }
        }
        return ranked_by(pg, query, Some(tier), now);
    }
    unreachable!("the last way of matching always answers")
}
