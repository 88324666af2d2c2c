//! The visibility query behind retrieval: the best `limit` records a
//! caller may see, by their salience now.
//!
//! Each (type, sensitivity level[, scope]) combination the caller may see
//! is one index range, ordered by the salience *stored* at the last sweep
//! or change, then by when that value was exact (`decays_from`), newest
//! first. Decay only lowers salience, and no faster than the longest
//! half-life of the type allows (see migration 0005), so the position in a
//! range bounds what any record further on can have now. The ranges are
//! read page by page while a bounded top-`limit` keeps the best by current
//! salience; a range is finished once that bound is below the last of the
//! top (or the range has run out). However long ago the sweep ran, the
//! answer is exact, and only `limit` records are held at a time. Records
//! the caller cannot see are never visited, and only the records that make
//! the cut are loaded whole.

use std::collections::HashMap;

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, Row, ToSql};

use super::filters::FilterSql;
use super::records::{key_array, load_records, parse_enum};
use crate::domain::decay::{salience_at, Anchor, DecayState};
use crate::domain::record::{DecayCurve, DecayProfile, Sensitivity};
use crate::domain::relevance::Signals;
use crate::domain::retrieval::RecordQuery;
use crate::domain::time::{from_micros, to_micros, Timestamp};
use crate::store::ranking::{self, MAX_PAGE};
pub(super) use crate::store::ranking::{DecayBound, Rank, TopK};
use crate::store::{RecordPage, StoreError};

/// First page read from each range beyond the limit; later pages double,
/// up to [`MAX_PAGE`]. None in unit tests, so they go through many pages.
const FIRST_PAGE_MARGIN: usize = if cfg!(test) { 0 } else { 32 };

/// One index range: a layer, a sensitivity level and a scope condition,
/// with where the last page ended (stored salience, decays_from, key).
struct Range<'a> {
    sql: &'a str,
    filter_values: &'a [SqlValue],
    next_tier_sql: &'a str,
    bound: DecayBound,
    layer: i64,
    sensitivity: i64,
    scope: Option<&'a str>,
    after: (f64, i64, i64),
    exhausted: bool,
}

impl<'a> Range<'a> {
    fn new(
        (sql, next_tier_sql): &'a (String, String),
        filters: &'a FilterSql,
        bound: DecayBound,
        layer: i64,
        sensitivity: i64,
        scope: Option<&'a str>,
    ) -> Self {
        Range {
            sql,
            filter_values: &filters.values,
            next_tier_sql,
            bound,
            layer,
            sensitivity,
            scope,
            after: (f64::MAX, i64::MAX, i64::MAX),
            exhausted: false,
        }
    }
}

/// Which of the two sets of rank indexes a range reads.
#[derive(Debug, Clone, Copy)]
pub(super) enum RankSet {
    /// Active and contested records.
    Live,
    Retracted,
}

impl RankSet {
    /// The sets a query reads: the live one, and the retracted one too
    /// when it asks for retracted records.
    pub(super) fn for_query(query: &RecordQuery) -> Vec<RankSet> {
        let mut sets = vec![RankSet::Live];
        if query.include_retracted {
            sets.push(RankSet::Retracted);
        }
        sets
    }

    /// The `live` value of its records in the vector scan index.
    pub(super) fn live(self) -> i64 {
        match self {
            RankSet::Live => 1,
            RankSet::Retracted => 0,
        }
    }

    /// Its rank index over every scope, its index by scope, and the status
    /// term that is the indexes' own condition (which lets them be used and
    /// costs no table read).
    pub(super) fn indexes(self) -> (&'static str, &'static str, &'static str) {
        match self {
            RankSet::Live => (
                "idx_records_rank",
                "idx_records_scope_rank",
                "r.status <> 'retracted'",
            ),
            RankSet::Retracted => (
                "idx_records_retracted_rank",
                "idx_records_retracted_scope_rank",
                "r.status = 'retracted'",
            ),
        }
    }
}

/// The page and next-tier statements of the three kinds of range (every
/// scope, unscoped records, one scope) over one set of rank indexes.
struct RangeSql {
    unscoped: (String, String),
    null_scope: (String, String),
    scoped: (String, String),
}

impl RangeSql {
    fn new(status: RankSet, unscoped_filters: &FilterSql, scoped_filters: &FilterSql) -> Self {
        let (rank, scope_rank, status) = status.indexes();
        let select = |index: &str, scope: &str, filters: &FilterSql| {
            format!(
                "SELECT r.key, r.salience, r.decays_from, r.created_at
                 FROM records r INDEXED BY {index}
                 WHERE {scope}r.layer = ?1 AND r.sensitivity = ?2 AND r.salience >= ?3
                   AND {status} AND (r.salience, r.decays_from, r.key) < (?5, ?6, ?7){}
                 ORDER BY r.salience DESC, r.decays_from DESC, r.key DESC LIMIT ?4",
                filters.clause
            )
        };
        // The highest stored salience below a tier: what a record beyond
        // the tier can have now, at most. Not filtered: the best record
        // below, matching or not, still bounds what a matching one can
        // have, and finding it stays one index step.
        let next_tier = |index: &str, scope: &str| {
            format!(
                "SELECT r.salience FROM records r INDEXED BY {index}
                 WHERE {scope}r.layer = ?1 AND r.sensitivity = ?2 AND r.salience >= ?3
                   AND {status} AND r.salience < ?4
                 ORDER BY r.salience DESC LIMIT 1"
            )
        };
        RangeSql {
            unscoped: (select(rank, "", unscoped_filters), next_tier(rank, "")),
            null_scope: (
                select(scope_rank, "r.scope IS NULL AND ", unscoped_filters),
                next_tier(scope_rank, "r.scope IS NULL AND "),
            ),
            scoped: (
                select(scope_rank, "r.scope = ?8 AND ", scoped_filters),
                next_tier(scope_rank, "r.scope = ?5 AND "),
            ),
        }
    }
}

/// The answer to a retrieval: ranked by a query (or drawn from a
/// selective filter's index) in `relevance.rs`, by salience alone here.
pub fn query_records(
    conn: &Connection,
    query: &RecordQuery,
    now: Timestamp,
) -> Result<RecordPage, StoreError> {
    if query.text.is_some() || query.vector.is_some() || FilterSql::selective(&query.filters) {
        super::relevance::query_ranked(conn, query, now)
    } else {
        by_salience(conn, query, now)
    }
}

fn by_salience(
    conn: &Connection,
    query: &RecordQuery,
    now: Timestamp,
) -> Result<RecordPage, StoreError> {
    // The filters' parameters follow the range's own: ?1-?7, and ?8 for
    // the scope of a scoped range.
    let unscoped_filters = FilterSql::new(&query.filters, 8);
    let scoped_filters = FilterSql::new(&query.filters, 9);
    // Live and retracted records are in separate (partial) indexes, so a
    // retrieval that leaves retracted records out never steps over them;
    // one that includes them reads both sets of ranges.
    let statuses = RankSet::for_query(query);
    let sql: Vec<RangeSql> = statuses
        .iter()
        .map(|status| RangeSql::new(*status, &unscoped_filters, &scoped_filters))
        .collect();

    let bounds = decay_bounds(conn)?;
    let mut ranges = Vec::new();
    for sql in &sql {
        for memory_type in &query.memory_types {
            let layer = memory_type.layer() as i64;
            // A type with no bound recorded has no records.
            let Some(bound) = bounds.get(&layer).copied() else {
                continue;
            };
            for sensitivity in Sensitivity::ALL
                .iter()
                .filter(|s| **s <= query.max_sensitivity)
            {
                let rank = sensitivity.rank() as i64;
                match &query.scopes {
                    None => ranges.push(Range::new(
                        &sql.unscoped,
                        &unscoped_filters,
                        bound,
                        layer,
                        rank,
                        None,
                    )),
                    Some(scopes) => {
                        ranges.push(Range::new(
                            &sql.null_scope,
                            &unscoped_filters,
                            bound,
                            layer,
                            rank,
                            None,
                        ));
                        ranges.extend(scopes.iter().map(|s| {
                            Range::new(
                                &sql.scoped,
                                &scoped_filters,
                                bound,
                                layer,
                                rank,
                                Some(s.as_str()),
                            )
                        }));
                    }
                }
            }
        }
    }

    let now_micros = to_micros(&now);
    let mut top = TopK::for_query(query);
    let mut page = query.limit.saturating_add(FIRST_PAGE_MARGIN).min(MAX_PAGE);
    while !ranges.is_empty() {
        crate::store::budget::check()?;
        for range in &mut ranges {
            read_page(conn, range, query.min_salience, page, now, &mut top)?;
        }
        let mut open = Vec::with_capacity(ranges.len());
        for range in ranges {
            if range.exhausted {
                continue;
            }
            // What the rest of this tier can have now, then what the
            // tiers below can.
            let (salience, decays_from, _) = range.after;
            let tier = range.bound.at_most(salience, decays_from, now_micros);
            let settled = (tier < query.min_salience || top.excludes_up_to(tier))
                && match next_tier_salience(conn, &range, query.min_salience)? {
                    None => true,
                    Some(below) => top.excludes_up_to(below),
                };
            if !settled {
                open.push(range);
            }
        }
        ranges = open;
        page = page.saturating_mul(2).min(MAX_PAGE);
    }
    within_budget(conn, query, top.into_sorted(), now, |rank| Signals {
        text: None,
        vector: None,
        salience: rank.salience,
    })
}

/// Loads the ranked records that fit the query's byte budget (see
/// [`crate::store::ranking::within_budget`]).
pub(super) fn within_budget(
    conn: &Connection,
    query: &RecordQuery,
    ranked: Vec<Rank>,
    now: Timestamp,
    signals: impl Fn(&Rank) -> Signals,
) -> Result<RecordPage, StoreError> {
    let keys: Vec<i64> = ranked.iter().map(|r| r.key).collect();
    let sizes = payload_sizes(conn, &keys)?;
    ranking::within_budget(
        query,
        ranked,
        now,
        &sizes,
        |keys| load_records(conn, keys, now),
        signals,
    )
}

/// The serialised size of the payloads of these records.
fn payload_sizes(conn: &Connection, keys: &[i64]) -> Result<HashMap<i64, usize>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT record_key, length(CAST(payload_json AS BLOB)) FROM payloads
         WHERE record_key IN rarray(?1)",
    )?;
    let mut rows = stmt.query([key_array(keys)])?;
    let mut sizes = HashMap::with_capacity(keys.len());
    while let Some(row) = rows.next()? {
        sizes.insert(row.get::<_, i64>(0)?, row.get::<_, i64>(1)?.max(0) as usize);
    }
    Ok(sizes)
}

pub(super) fn decay_bounds(conn: &Connection) -> Result<HashMap<i64, DecayBound>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT layer, max_half_life_seconds, max_min_salience FROM decay_bounds",
    )?;
    let mut rows = stmt.query([])?;
    let mut bounds = HashMap::new();
    while let Some(row) = rows.next()? {
        bounds.insert(
            row.get(0)?,
            DecayBound {
                max_half_life_seconds: row.get(1)?,
                max_min_salience: row.get(2)?,
            },
        );
    }
    Ok(bounds)
}

/// The stored salience of the best record of `range` below the tier its
/// last page ended in, if any.
fn next_tier_salience(
    conn: &Connection,
    range: &Range<'_>,
    min_salience: f64,
) -> Result<Option<f64>, StoreError> {
    let mut stmt = conn.prepare_cached(range.next_tier_sql)?;
    let tier = range.after.0;
    let found = match range.scope {
        None => stmt
            .query_row(
                rusqlite::params![range.layer, range.sensitivity, min_salience, tier],
                |row| row.get(0),
            )
            .optional()?,
        Some(scope) => stmt
            .query_row(
                rusqlite::params![range.layer, range.sensitivity, min_salience, tier, scope],
                |row| row.get(0),
            )
            .optional()?,
    };
    Ok(found)
}

/// Reads the next `page` records of `range`, offering each at its current
/// salience.
fn read_page(
    conn: &Connection,
    range: &mut Range<'_>,
    min_salience: f64,
    page: usize,
    now: Timestamp,
    top: &mut TopK,
) -> Result<(), StoreError> {
    let mut stmt = conn.prepare_cached(range.sql)?;
    let limit = page as i64;
    let (salience, decays_from, key) = range.after;
    let mut params: Vec<&dyn ToSql> = vec![
        &range.layer,
        &range.sensitivity,
        &min_salience,
        &limit,
        &salience,
        &decays_from,
        &key,
    ];
    if let Some(scope) = &range.scope {
        params.push(scope);
    }
    params.extend(range.filter_values.iter().map(|v| v as &dyn ToSql));
    let mut rows = stmt.query(&*params)?;
    let mut decay = conn.prepare_cached(PROFILE_SQL)?;
    let now_micros = to_micros(&now);
    let mut read = 0;
    while let Some(row) = rows.next()? {
        read += 1;
        let key: i64 = row.get(0)?;
        let stored: f64 = row.get(1)?;
        let decays_from: i64 = row.get(2)?;
        let created_at: i64 = row.get(3)?;
        range.after = (stored, decays_from, key);
        // Most rows cannot make the cut: their bound says so without
        // reading their decay profile.
        let most = range.bound.at_most(stored, decays_from, now_micros);
        if most < min_salience || top.excludes_up_to(most) {
            continue;
        }
        let mut profile = decay.query([key])?;
        let Some(profile) = profile.next()? else {
            return Err(StoreError::Corrupt(format!(
                "record {key} has no decay profile"
            )));
        };
        let current = current_salience(profile, stored, created_at, now)?;
        if current >= min_salience {
            top.offer(Rank {
                salience: current,
                layer: range.layer,
                created_at,
                key,
            });
        }
    }
    range.exhausted = read < page;
    Ok(())
}

/// The decay profile columns [`current_salience`] reads.
pub(super) const PROFILE_SQL: &str =
    "SELECT curve, half_life_seconds, min_salience, max_age_seconds, reinforcement_gain,
            pinned, anchor_salience, COALESCE(anchor_at, last_reinforced_at)
     FROM decay_profiles WHERE record_key = ?1";

/// The salience now of a record, from its decay profile row; `stored` is
/// its anchor when the profile has none of its own.
pub(super) fn current_salience(
    row: &Row<'_>,
    stored: f64,
    created_at: i64,
    now: Timestamp,
) -> Result<f64, StoreError> {
    let profile = DecayProfile {
        curve: parse_enum(row, 0, DecayCurve::parse)?,
        half_life_seconds: row.get(1)?,
        min_salience: row.get(2)?,
        max_age_seconds: row.get(3)?,
        reinforcement_gain: row.get(4)?,
    };
    let state = DecayState {
        anchor: Anchor {
            salience: row.get::<_, Option<f64>>(6)?.unwrap_or(stored),
            at: from_micros(row.get(7)?),
        },
        profile: &profile,
        pinned: row.get(5)?,
        created_at: from_micros(created_at),
    };
    Ok(salience_at(&state, now))
}

#[cfg(test)]
mod tests {
    use super::super::records::{insert_record, record_key};
    use super::super::test_support::{conn, now, record};
    use super::*;
    use crate::domain::record::{MemoryRecord, MemoryType, Status};
    use crate::domain::relevance::Weights;
    use crate::domain::retrieval::Filters;
    use serde_json::json;

    fn rank(salience: f64, layer: i64, created_at: i64, key: i64) -> Rank {
        Rank {
            salience,
            layer,
            created_at,
            key,
        }
    }

    #[test]
    fn the_visibility_query_filters_and_orders() {
        let conn = conn();
        let cases = [
            ("w", "working", "low", None, 0.5),
            ("s", "semantic", "low", Some("p1"), 0.5),
            ("hi", "semantic", "high", None, 0.9),
            ("other", "semantic", "low", Some("p2"), 0.9),
            ("top", "working", "public", None, 1.0),
        ];
        for (id, kind, sensitivity, scope, salience) in cases {
            let payload = if kind == "working" {
                json!({"kind": "working", "thread_id": "t", "state": "done"})
            } else {
                json!({"kind": "semantic", "subject": "a", "predicate": "b"})
            };
            let r = record(
                id,
                json!({"type": kind, "sensitivity": sensitivity, "scope": scope, "salience": salience, "payload": payload}),
            );
            insert_record(&conn, &r).unwrap();
        }
        let query = RecordQuery {
            memory_types: MemoryType::ALL.to_vec(),
            max_sensitivity: Sensitivity::Medium,
            scopes: Some(vec!["p1".into()]),
            min_salience: 0.0,
            limit: 10,
            answer_limit: 10,
            include_retracted: false,
            after: None,
            max_bytes: usize::MAX,
            filters: Filters::default(),
            text: None,
            vector: None,
            weights: Weights::default(),
            max_salience: 1.0,
        };
        let ids: Vec<String> = query_records(&conn, &query, now())
            .unwrap()
            .records
            .into_iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(ids, vec!["top", "w", "s"]);
        let ids: Vec<String> = query_records(
            &conn,
            &RecordQuery {
                limit: 2,
                ..query.clone()
            },
            now(),
        )
        .unwrap()
        .records
        .into_iter()
        .map(|r| r.id)
        .collect();
        assert_eq!(ids, vec!["top", "w"]);
        let ids: Vec<String> = query_records(
            &conn,
            &RecordQuery {
                min_salience: 0.8,
                scopes: None,
                max_sensitivity: Sensitivity::Hyper,
                ..query
            },
            now(),
        )
        .unwrap()
        .records
        .into_iter()
        .map(|r| r.id)
        .collect();
        assert_eq!(ids, vec!["top", "other", "hi"]);
    }

    /// A small deterministic generator, so a failure names its seed.
    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 33
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    fn random_filters(rng: &mut Lcg) -> Filters {
        let name = || ["n0", "n1", "n2"];
        let mut filters = Filters::default();
        match rng.below(4) {
            0 => filters.thread_id = Some(name()[rng.below(3) as usize].to_string()),
            1 => filters.subject = Some(name()[rng.below(3) as usize].to_string()),
            _ => {}
        }
        if rng.below(3) == 0 {
            filters.tags = ["x", "y"][..1 + rng.below(2) as usize]
                .iter()
                .map(|t| t.to_string())
                .collect();
        }
        if rng.below(3) == 0 {
            filters.sources = vec!["agent-1".into(), "agent-3".into()];
        }
        if rng.below(3) == 0 {
            filters.created_after = Some(now() - chrono::Duration::days(10));
        }
        if rng.below(3) == 0 {
            filters.created_before = Some(now() - chrono::Duration::days(5));
        }
        filters
    }

    /// Records with random decay states, stored salience as of random
    /// past sweeps (or none), against a brute-force ranking of every
    /// record at its current salience.
    #[test]
    fn the_answer_is_the_true_top_by_current_salience_whatever_the_sweep_age() {
        let types = [
            MemoryType::Working,
            MemoryType::Semantic,
            MemoryType::Episodic,
        ];
        for seed in 1..=6 {
            let conn = conn();
            let mut rng = Lcg(seed);
            // More records per index range than a first page holds.
            for i in 0..1000 {
                let memory_type = types[rng.below(3) as usize];
                let name = ["n0", "n1", "n2"][rng.below(3) as usize];
                let payload = match memory_type {
                    MemoryType::Working => {
                        json!({"kind": "working", "thread_id": name, "state": "done"})
                    }
                    MemoryType::Semantic => {
                        json!({"kind": "semantic", "subject": name, "predicate": "b"})
                    }
                    _ => json!({"kind": "episodic"}),
                };
                let tags: Vec<&str> = ["x", "y", "z"]
                    .into_iter()
                    .filter(|_| rng.below(2) == 0)
                    .collect();
                let source = ["agent-1", "agent-2", "agent-3"][rng.below(3) as usize];
                let sensitivity = ["public", "low"][rng.below(2) as usize];
                let scope = [None, Some("a"), Some("b")][rng.below(3) as usize];
                // A few records recent, most days old.
                let age = if rng.below(6) == 0 {
                    rng.below(600)
                } else {
                    rng.below(3 * 86_400)
                } as i64;
                let reinforced = now() - chrono::Duration::seconds(age);
                // Creation order says nothing of freshness.
                let created =
                    now() - chrono::Duration::seconds(age + rng.below(30 * 86_400) as i64);
                // Mostly the initial 1.0, as ingested; few distinct values,
                // so ties occur.
                let salience = if rng.below(3) == 0 {
                    (rng.below(5) as f64 + 1.0) / 5.0
                } else {
                    1.0
                };
                let body = json!({
                    "type": memory_type, "sensitivity": sensitivity, "scope": scope,
                    "salience": salience,
                    "created_at": crate::domain::time::format_rfc3339(&created),
                    "lifecycle": {
                        "last_reinforced_at": crate::domain::time::format_rfc3339(&reinforced),
                        "pinned": rng.below(10) == 0,
                        "decay": {
                            "curve": if rng.below(2) == 0 { "linear" } else { "exponential" },
                            // Short half-lives: stored values far above
                            // current ones, as in a long gap between sweeps.
                            "half_life_seconds": if rng.below(5) > 0 {
                                60 + rng.below(3600)
                            } else {
                                86_400 + rng.below(30 * 86_400)
                            },
                            "min_salience": if rng.below(4) == 0 { 0.3 } else { 0.0 }
                        }
                    },
                    "payload": payload,
                    "tags": tags,
                    "provenance": {"created_by": source}
                });
                let r = record(&format!("r{i}"), body);
                let key = insert_record(&conn, &r).unwrap();
                // The last sweep, if any, ran somewhere between the
                // reinforcement and now.
                if rng.below(3) == 0 {
                    let swept_at =
                        reinforced + chrono::Duration::seconds(rng.below(age as u64 + 1) as i64);
                    let state = DecayState {
                        anchor: Anchor {
                            salience,
                            at: reinforced,
                        },
                        profile: &r.lifecycle.decay,
                        pinned: r.lifecycle.pinned,
                        created_at: r.created_at,
                    };
                    // As the sweep writes it (it leaves pinned records be).
                    if !r.lifecycle.pinned {
                        conn.execute(
                            "UPDATE records SET salience = ?2, decays_from = ?3 WHERE key = ?1",
                            rusqlite::params![
                                key,
                                salience_at(&state, swept_at),
                                to_micros(&swept_at)
                            ],
                        )
                        .unwrap();
                    }
                }
            }
            // Some retracted, as revisions leave them (salience as it was:
            // the two sets of ranges must merge whatever the values).
            conn.execute(
                "UPDATE records SET status = 'retracted' WHERE key % 7 = 0",
                [],
            )
            .unwrap();
            let keys: Vec<i64> = conn
                .prepare("SELECT key FROM records")
                .unwrap()
                .query_map([], |row| row.get(0))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            let everything = load_records(&conn, &keys, now()).unwrap();
            for _ in 0..30 {
                let mut memory_types: Vec<MemoryType> =
                    types.iter().copied().filter(|_| rng.below(3) > 0).collect();
                if memory_types.is_empty() {
                    memory_types.push(types[rng.below(3) as usize]);
                }
                memory_types.sort_by_key(|t| t.layer());
                let limit = 1 + rng.below(10) as usize;
                let query = RecordQuery {
                    memory_types,
                    max_sensitivity: Sensitivity::ALL[rng.below(3) as usize],
                    scopes: [
                        None,
                        Some(vec!["a".to_string()]),
                        Some(vec!["a".into(), "b".into()]),
                    ][rng.below(3) as usize]
                        .clone(),
                    min_salience: [0.0, 0.05, 0.3, 0.5][rng.below(4) as usize],
                    limit,
                    answer_limit: limit,
                    include_retracted: rng.below(3) == 0,
                    after: None,
                    max_bytes: usize::MAX,
                    // A third of the queries filtered, each filter by
                    // chance: by index (thread, subject, tags) and within
                    // the salience ranges (sources, creation times).
                    filters: if rng.below(3) == 0 {
                        random_filters(&mut rng)
                    } else {
                        Filters::default()
                    },
                    text: None,
                    vector: None,
                    weights: Weights::default(),
                    max_salience: 1.0,
                };
                let mut expected: Vec<(&MemoryRecord, i64)> = everything
                    .iter()
                    .filter(|r| query.filters.matches(r))
                    .filter(|r| query.include_retracted || r.status != Status::Retracted)
                    .filter(|r| query.memory_types.contains(&r.memory_type))
                    .filter(|r| r.sensitivity <= query.max_sensitivity)
                    .filter(|r| match (&query.scopes, &r.scope) {
                        (Some(allowed), Some(scope)) => allowed.contains(scope),
                        _ => true,
                    })
                    .filter(|r| r.salience >= query.min_salience)
                    .map(|r| (r, record_key(&conn, &r.id).unwrap().unwrap()))
                    .collect();
                expected.sort_by(|(a, ka), (b, kb)| {
                    rank(
                        a.salience,
                        a.memory_type.layer() as i64,
                        a.created_at.timestamp_micros(),
                        *ka,
                    )
                    .cmp(&rank(
                        b.salience,
                        b.memory_type.layer() as i64,
                        b.created_at.timestamp_micros(),
                        *kb,
                    ))
                });
                expected.truncate(query.limit);
                let expected: Vec<&str> = expected.iter().map(|(r, _)| r.id.as_str()).collect();
                let actual: Vec<String> = query_records(&conn, &query, now())
                    .unwrap()
                    .records
                    .into_iter()
                    .map(|r| r.id)
                    .collect();
                assert_eq!(actual, expected, "seed {seed}, {query:?}");
            }
        }
    }
}
