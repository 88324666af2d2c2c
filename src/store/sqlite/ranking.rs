//! Retrieval's reads on SQLite: the [`RankingSource`] the ranking engine
//! (`store/ranking/engine.rs`) ranks from.
//!
//! - Salience order: each (type, sensitivity level[, scope]) combination
//!   the caller may see is one range of the rank indexes (migration 0005),
//!   ordered by stored salience, then `decays_from`, newest first; live
//!   and retracted records are in separate partial indexes, so a retrieval
//!   that leaves retracted records out never steps over them.
//! - Postings: the full-text index holds each record's terms and its
//!   visibility facets (migration 0014); a lookup asks for the term *and*
//!   the facets of the caller's scopes, types and sensitivities, so FTS5
//!   reads the caller's matches only, newest first.
//! - Vectors: the quantized vectors of the scan index (migration 0008), in
//!   contiguous ranges by visibility; exact similarities only for the
//!   records that can make the answer.
//! - Totals: `text_totals` (migration 0014), kept by triggers.

use std::collections::HashMap;
use std::rc::Rc;

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, Row, ToSql};

use super::filters::FilterSql;
use super::record_reads::{key_array, load_whole};
use super::search::scope_facet;
use crate::domain::analysis::term_frequency;
use crate::domain::record::{MemoryRecord, MemoryType, Sensitivity};
use crate::domain::retrieval::{Filters, RecordQuery};
use crate::domain::time::Timestamp;
use crate::domain::vector::QueryVector;
use crate::store::error::StoreError;
use crate::store::ranking::source::{
    self, current_salience, Current, Facets, PageRow, Posting, RankingSource, RecordText,
    SessionOf, SessionTurn, Stored, TermCount, TermsIn, Totals, TurnAt, VectorHit,
};
use crate::store::ranking::DecayBound;
use crate::store::transaction::Transaction;

impl Transaction for Connection {
    fn ranking_source(&mut self) -> Box<dyn RankingSource + '_> {
        Box::new(Source::new(self))
    }
}

/// What retrieval reads through one connection.
pub(super) struct Source<'a> {
    pub conn: &'a Connection,
    /// The facets of the query's lookups, once worked out (the same for
    /// every term of it).
    facets: std::cell::Cell<Option<Facets>>,
}

impl Source<'_> {
    pub(super) fn new(conn: &Connection) -> Source<'_> {
        Source {
            conn,
            facets: Default::default(),
        }
    }

    fn facets(&self, query: &RecordQuery) -> Result<Facets, StoreError> {
        if let Some(facets) = self.facets.get() {
            return Ok(facets);
        }
        let facets = facets_for(self.conn, query)?;
        self.facets.set(Some(facets));
        Ok(facets)
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

    /// The `live` value of its records in the vector scan index and the
    /// text totals.
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

/// The page and next-tier statements of one kind of range, and the
/// filters' parameters (which follow the range's own: ?1-?7, and ?8 for
/// the scope of a scoped range).
pub(super) struct RangeSql {
    page: String,
    next_tier: String,
    filter_values: Vec<SqlValue>,
}

/// One index range: a layer, a sensitivity level and a scope condition.
pub(super) struct Range {
    sql: Rc<RangeSql>,
    layer: i64,
    sensitivity: i64,
    scope: Option<String>,
}

/// The statements of the three kinds of range (every scope, unscoped
/// records, one scope) over one set of rank indexes.
fn range_sql(set: RankSet, filters: &Filters) -> [Rc<RangeSql>; 3] {
    let (rank, scope_rank, status) = set.indexes();
    let make = |index: &str, scope: &str, first: usize, tier_scope: &str| {
        let filters = FilterSql::new(filters, first);
        Rc::new(RangeSql {
            page: format!(
                "SELECT r.key, r.salience, r.decays_from, r.created_at
                 FROM records r INDEXED BY {index}
                 WHERE {scope}r.layer = ?1 AND r.sensitivity = ?2 AND r.salience >= ?3
                   AND {status} AND (r.salience, r.decays_from, r.key) < (?5, ?6, ?7){}
                 ORDER BY r.salience DESC, r.decays_from DESC, r.key DESC LIMIT ?4",
                filters.clause
            ),
            // The highest stored salience below a tier: what a record
            // beyond the tier can have now, at most. Not filtered: the best
            // record below, matching or not, still bounds what a matching
            // one can have, and finding it stays one index step.
            next_tier: format!(
                "SELECT r.salience FROM records r INDEXED BY {index}
                 WHERE {tier_scope}r.layer = ?1 AND r.sensitivity = ?2 AND r.salience >= ?3
                   AND {status} AND r.salience < ?4
                 ORDER BY r.salience DESC LIMIT 1"
            ),
            filter_values: filters.values,
        })
    };
    [
        make(rank, "", 8, ""),
        make(
            scope_rank,
            "r.scope IS NULL AND ",
            8,
            "r.scope IS NULL AND ",
        ),
        make(scope_rank, "r.scope = ?8 AND ", 9, "r.scope = ?5 AND "),
    ]
}

impl RankingSource for Source<'_> {
    fn decay_bounds(&self) -> Result<HashMap<i64, DecayBound>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
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

    fn ranges(
        &self,
        query: &RecordQuery,
        bounds: &HashMap<i64, DecayBound>,
    ) -> Vec<(source::Range, DecayBound)> {
        let mut ranges = Vec::new();
        for set in RankSet::for_query(query) {
            let [every, unscoped, scoped] = range_sql(set, &query.filters);
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
                    let range = |sql: &Rc<RangeSql>, scope: Option<&String>| {
                        (
                            source::Range::new(Range {
                                sql: sql.clone(),
                                layer,
                                sensitivity: sensitivity.rank() as i64,
                                scope: scope.cloned(),
                            }),
                            bound,
                        )
                    };
                    match &query.scopes {
                        None => ranges.push(range(&every, None)),
                        Some(scopes) => {
                            ranges.push(range(&unscoped, None));
                            ranges.extend(scopes.iter().map(|s| range(&scoped, Some(s))));
                        }
                    }
                }
            }
        }
        ranges
    }

    fn page(
        &self,
        query: &RecordQuery,
        range: &source::Range,
        after: (f64, i64, i64),
        limit: usize,
        _now: Timestamp,
    ) -> Result<Vec<PageRow>, StoreError> {
        let range: &Range = range.of()?;
        let mut stmt = self.conn.prepare_cached(&range.sql.page)?;
        let limit = limit as i64;
        let mut params: Vec<&dyn ToSql> = vec![
            &range.layer,
            &range.sensitivity,
            &query.min_salience,
            &limit,
            &after.0,
            &after.1,
            &after.2,
        ];
        if let Some(scope) = &range.scope {
            params.push(scope);
        }
        params.extend(range.sql.filter_values.iter().map(|v| v as &dyn ToSql));
        let mut rows = stmt.query(&*params)?;
        let mut page = Vec::new();
        while let Some(row) = rows.next()? {
            page.push(PageRow {
                stored: Stored {
                    key: row.get(0)?,
                    layer: range.layer,
                    salience: row.get(1)?,
                    decays_from: row.get(2)?,
                },
                created_at: row.get(3)?,
                current: None,
            });
        }
        Ok(page)
    }

    fn next_below(
        &self,
        _query: &RecordQuery,
        range: &source::Range,
        below: f64,
        at_least: f64,
    ) -> Result<Option<f64>, StoreError> {
        let range: &Range = range.of()?;
        let mut stmt = self.conn.prepare_cached(&range.sql.next_tier)?;
        let mut params: Vec<&dyn ToSql> = vec![&range.layer, &range.sensitivity, &at_least, &below];
        if let Some(scope) = &range.scope {
            params.push(scope);
        }
        Ok(stmt.query_row(&*params, |row| row.get(0)).optional()?)
    }

    fn salience_now(&self, row: &PageRow, now: Timestamp) -> Result<f64, StoreError> {
        if let Some(current) = row.current {
            return Ok(current);
        }
        let key = row.stored.key;
        let mut stmt = self.conn.prepare_cached(PROFILE_SQL)?;
        let mut rows = stmt.query([key])?;
        let Some(profile) = rows.next()? else {
            return Err(StoreError::Corrupt(format!(
                "record {key} has no decay profile"
            )));
        };
        current_salience(profile, 0, row.stored.salience, row.created_at, now)
    }

    fn postings(
        &self,
        query: &RecordQuery,
        term: &str,
        common: usize,
        newest: usize,
    ) -> Result<(Vec<Posting>, bool), StoreError> {
        let limit = common.max(newest);
        let facets = self.facets(query)?;
        let mut values = vec![SqlValue::Text(match_expression(query, facets, &[term]))];
        // The caller's matches lead, newest first, each looked up by key:
        // left to itself, the planner may instead read every record of a
        // layer (or thread) and run the match once per record.
        let sql = format!(
            "SELECT r.key, r.layer, r.salience, r.decays_from, r.search_length, r.search_repeats
             FROM record_search CROSS JOIN records r ON r.key = record_search.rowid
             WHERE record_search MATCH ?1{}
             ORDER BY record_search.rowid DESC LIMIT {limit}",
            visible(query, &mut values)
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let mut rows = stmt.query(rusqlite::params_from_iter(values.iter()))?;
        let mut found = Vec::new();
        while let Some(row) = rows.next()? {
            found.push(Posting::of(
                Stored::read(row)?,
                row.get(4)?,
                text_at(row, 5)?,
                term,
            ));
        }
        let is_common = found.len() >= common;
        if is_common {
            found.truncate(newest);
        }
        Ok((found, is_common))
    }

    fn slice(
        &self,
        query: &RecordQuery,
        terms: &[String],
    ) -> Result<Option<Vec<Vec<Posting>>>, StoreError> {
        let mut values = Vec::new();
        let sql = slice_sql(query, SLICE_COLUMNS, "", &mut values);
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let mut rows = stmt.query(rusqlite::params_from_iter(values.iter()))?;
        let mut found: Vec<Vec<Posting>> = vec![Vec::new(); terms.len()];
        let terms_in = TermsIn::new(terms);
        while let Some(row) = rows.next()? {
            let distinct = text_at(row, 6)?.unwrap_or_default();
            let mut matched = Vec::new();
            terms_in.each(distinct, |i| matched.push(i));
            if matched.is_empty() {
                continue;
            }
            let stored = Stored::read(row)?;
            let length: i64 = row.get(4)?;
            let repeats = text_at(row, 5)?;
            for i in matched {
                found[i].push(Posting::of(stored, length, repeats, &terms[i]));
            }
        }
        for postings in &mut found {
            postings.sort_unstable_by_key(|p| std::cmp::Reverse(p.stored.key));
        }
        Ok(Some(found))
    }

    fn totals(&self, query: &RecordQuery) -> Result<Totals, StoreError> {
        let lives = live_list(query);
        let common = format!(
            "layer IN ({}) AND sensitivity <= {} AND live IN ({})",
            layer_list(query),
            query.max_sensitivity.rank(),
            lives
        );
        let mut values: Vec<SqlValue> = Vec::new();
        let sql = match &query.scopes {
            None => format!(
                "SELECT COALESCE(SUM(docs), 0), COALESCE(SUM(tokens), 0) FROM text_totals_all
                 WHERE {common}"
            ),
            Some(scopes) => {
                values.push(SqlValue::Text(String::new()));
                values.extend(scopes.iter().map(|s| SqlValue::Text(s.clone())));
                let numbers: Vec<String> = (1..=values.len()).map(|n| format!("?{n}")).collect();
                format!(
                    "SELECT COALESCE(SUM(docs), 0), COALESCE(SUM(tokens), 0) FROM text_totals
                     WHERE scope IN ({}) AND {common}",
                    numbers.join(", ")
                )
            }
        };
        Ok(self.conn.prepare_cached(&sql)?.query_row(
            rusqlite::params_from_iter(values.iter()),
            |row| {
                Ok(Totals {
                    docs: row.get(0)?,
                    tokens: row.get(1)?,
                })
            },
        )?)
    }

    fn vector_hits(
        &self,
        query: &RecordQuery,
        vector: &QueryVector,
    ) -> Result<Vec<VectorHit>, StoreError> {
        if query.filters == Filters::default() {
            scan_bounds(self.conn, query, vector)
        } else {
            similar(self.conn, query, vector)
        }
    }

    fn similarity(&self, key: i64, vector: &QueryVector) -> Result<f64, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT norm, vector FROM record_vectors WHERE record_key = ?1")?;
        let mut rows = stmt.query([key])?;
        Ok(match rows.next()? {
            Some(row) => {
                let norm: f64 = row.get(0)?;
                vector
                    .signal(vector_bytes(row, 1, key)?, norm)
                    .unwrap_or(0.0)
            }
            None => 0.0,
        })
    }

    fn filter_matches(&self, query: &RecordQuery) -> Result<Vec<Stored>, StoreError> {
        let mut values = Vec::new();
        let (from, condition) = filter_source(query, &mut values);
        let sql = format!(
            "SELECT r.key, r.layer, r.salience, r.decays_from FROM {from} WHERE {condition}{}",
            visible(query, &mut values)
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let mut rows = stmt.query(rusqlite::params_from_iter(values.iter()))?;
        let mut found = Vec::new();
        while let Some(row) = rows.next()? {
            found.push(Stored::read(row)?);
        }
        Ok(found)
    }

    fn current(&self, keys: &[i64], now: Timestamp) -> Result<HashMap<i64, Current>, StoreError> {
        // A few small statements per record: the engine's own look at the
        // read budget may never come in statements this short.
        let mut profile = self.conn.prepare_cached(PROFILE_SQL)?;
        let mut record = self
            .conn
            .prepare_cached("SELECT layer, salience, created_at FROM records WHERE key = ?1")?;
        let mut found = HashMap::with_capacity(keys.len());
        for &key in keys {
            crate::store::budget::check()?;
            let Some((layer, stored, created_at)) = record
                .query_row([key], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
                .optional()?
            else {
                continue;
            };
            let mut rows = profile.query([key])?;
            let Some(row) = rows.next()? else {
                return Err(StoreError::Corrupt(format!(
                    "record {key} has no decay profile"
                )));
            };
            found.insert(
                key,
                Current {
                    layer,
                    created_at,
                    stored,
                    salience: current_salience(row, 0, stored, created_at, now)?,
                },
            );
        }
        Ok(found)
    }

    fn frequencies(
        &self,
        query: &RecordQuery,
        terms: &[String],
        count_missing: bool,
    ) -> Result<Vec<Option<TermCount>>, StoreError> {
        let lives = live_list(query);
        super::counted::frequencies(
            self.conn,
            terms,
            query.scopes.as_deref(),
            &layer_list(query),
            query.max_sensitivity.rank() as i64,
            &lives,
            count_missing,
        )
    }

    fn conjunction(
        &self,
        query: &RecordQuery,
        terms: &[String],
    ) -> Result<Vec<(Stored, RecordText)>, StoreError> {
        let terms: Vec<&str> = terms.iter().map(String::as_str).collect();
        let facets = self.facets(query)?;
        let mut values = vec![SqlValue::Text(match_expression(query, facets, &terms))];
        let sql = format!(
            "SELECT r.key, r.layer, r.salience, r.decays_from, r.search_length, r.search_terms,
                    r.search_repeats
             FROM record_search CROSS JOIN records r ON r.key = record_search.rowid
             WHERE record_search MATCH ?1{}",
            visible(query, &mut values)
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let mut rows = stmt.query(rusqlite::params_from_iter(values.iter()))?;
        let mut found = Vec::new();
        while let Some(row) = rows.next()? {
            found.push((
                Stored::read(row)?,
                RecordText {
                    length: row.get(4)?,
                    distinct: text_at(row, 5)?.unwrap_or_default().to_string(),
                    repeats: text_at(row, 6)?.map(str::to_string),
                },
            ));
        }
        Ok(found)
    }

    fn texts(&self, keys: &[i64]) -> Result<HashMap<i64, RecordText>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT key, search_length, search_terms, search_repeats FROM records
             WHERE key IN rarray(?1)",
        )?;
        let mut rows = stmt.query([key_array(keys)])?;
        let mut texts = HashMap::with_capacity(keys.len());
        while let Some(row) = rows.next()? {
            texts.insert(
                row.get::<_, i64>(0)?,
                RecordText {
                    length: row.get(1)?,
                    distinct: row.get(2)?,
                    repeats: row.get(3)?,
                },
            );
        }
        Ok(texts)
    }

    fn sizes(&self, keys: &[i64]) -> Result<HashMap<i64, usize>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
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

    fn load(&self, keys: &[i64], now: Timestamp) -> Result<Vec<MemoryRecord>, StoreError> {
        load_whole(self.conn, keys, now)
    }

    fn turns_of(&self, keys: &[i64]) -> Result<Vec<TurnAt>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT t.record_key, t.conversation_id,
                    (SELECT r.scope FROM records r WHERE r.key = t.record_key), t.session_id
             FROM conversation_turns t WHERE t.record_key IN rarray(?1)",
        )?;
        let mut rows = stmt.query([key_array(keys)])?;
        let mut found = Vec::new();
        while let Some(row) = rows.next()? {
            found.push(TurnAt {
                key: row.get(0)?,
                session: SessionOf {
                    conversation_id: row.get(1)?,
                    scope: row.get(2)?,
                    session_id: row.get(3)?,
                },
            });
        }
        Ok(found)
    }

    fn session_turns(
        &self,
        query: &RecordQuery,
        sessions: &[SessionOf],
        terms: &[String],
    ) -> Result<Vec<SessionTurn>, StoreError> {
        // The level comes from an enum, never from text.
        let columns = SessionTurn::columns("r");
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {columns}, r.search_terms
             FROM conversation_turns t INDEXED BY conversation_turns_by_session
             JOIN records r ON r.key = t.record_key
             WHERE t.conversation_id = ?1 AND t.session_id = ?2 AND r.scope IS ?3
               AND r.layer = {} AND r.sensitivity <= {} AND (?4 OR r.status <> 'retracted')
             ORDER BY t.turn_index, t.record_key",
            MemoryType::Episodic.layer(),
            query.max_sensitivity.rank()
        ))?;
        let terms_in = TermsIn::new(terms);
        let mut found = Vec::new();
        for session in sessions.iter().filter(|s| s.seen_by(query)) {
            let mut rows = stmt.query(rusqlite::params![
                session.conversation_id,
                session.session_id,
                session.scope,
                query.include_retracted
            ])?;
            while let Some(row) = rows.next()? {
                let repeats = text_at(row, 5)?;
                let mut frequencies = vec![0.0; terms.len()];
                terms_in.each(text_at(row, 10)?.unwrap_or_default(), |i| {
                    frequencies[i] = term_frequency(repeats, &terms[i]);
                });
                found.push(SessionTurn::read(row, query, session, frequencies)?);
            }
        }
        Ok(found)
    }
}

/// What a slice reads of each record: columns the scope rank index holds
/// (migration 15), so a scoped slice never reads the table.
const SLICE_COLUMNS: &str = "r.key, r.layer, r.salience, r.decays_from, r.search_length,
     r.search_repeats, r.search_terms";

/// Column `i` of a row as text borrowed from the row (`None` for NULL).
fn text_at<'r>(row: &'r Row<'_>, i: usize) -> Result<Option<&'r str>, StoreError> {
    row.get_ref(i)?.as_str_or_null().map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, Box::new(e))
            .into()
    })
}

/// The visible records, as ranges of the rank indexes (unscoped records,
/// then the caller's scopes; or every scope), which hold what they are
/// read by, so each visible record costs one index entry and invisible
/// ones nothing: `columns` of records `r` (and what `join` adds), the
/// filters applied, their parameters added to `values`.
fn slice_sql(query: &RecordQuery, columns: &str, join: &str, values: &mut Vec<SqlValue>) -> String {
    values.push(SqlValue::Real(query.min_salience));
    let first = values.len();
    let scopes = scope_conditions(query, "r.scope", values);
    let filters = FilterSql::new(&query.filters, values.len() + 1);
    values.extend(filters.values);
    let common = format!(
        "r.layer IN ({}) AND r.sensitivity <= {} AND r.salience >= ?{first}{}",
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
                "SELECT {columns} FROM records r INDEXED BY {index} {join}
                 WHERE {scope} AND {status} AND {common}"
            ));
        }
    }
    ranges.join(" UNION ALL ")
}

/// The facets of `query`'s lookups ([`Facets`]), from `text_totals_all`
/// for a caller of every scope.
fn facets_for(conn: &Connection, query: &RecordQuery) -> Result<Facets, StoreError> {
    if !Facets::counted(query) {
        return Ok(Facets::all(query));
    }
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT layer, sensitivity, SUM(docs) FROM text_totals_all WHERE live IN ({})
         GROUP BY layer, sensitivity",
        live_list(query)
    ))?;
    let counts = stmt
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?
        .collect::<Result<Vec<(i64, i64, i64)>, _>>()?;
    Ok(Facets::choose(query, counts))
}

/// The full-text query of records with all of `terms` among the records
/// the caller may see: the terms in the text, and one of the caller's
/// facets. A caller limited to scopes is asked for by the tokens of its
/// scopes (and the unscoped records) at each sensitivity it may see,
/// tokens as rare as its slice; any other, by its sensitivities and types
/// where `facets` says they narrow.
fn match_expression(query: &RecordQuery, facets: Facets, terms: &[&str]) -> String {
    let any = |tokens: Vec<String>| format!("facets : ({})", tokens.join(" OR "));
    let mut parts: Vec<String> = terms
        .iter()
        .map(|term| format!("text : \"{}\"", term.replace('"', "\"\"")))
        .collect();
    let sensitivities = || {
        Sensitivity::ALL
            .iter()
            .filter(|s| **s <= query.max_sensitivity)
            .map(|s| s.rank() as i64)
    };
    match &query.scopes {
        Some(scopes) => parts.push(any(sensitivities()
            .flat_map(|v| {
                std::iter::once(scope_facet(None, v))
                    .chain(scopes.iter().map(move |s| scope_facet(Some(s), v)))
            })
            .collect())),
        None => {
            if facets.sensitivities {
                parts.push(any(sensitivities().map(|v| format!("v{v}")).collect()));
            }
            if facets.types {
                parts.push(any(query
                    .memory_types
                    .iter()
                    .map(|t| format!("l{}", t.layer()))
                    .collect()));
            }
        }
    }
    parts.join(" AND ")
}

/// The visible records with a vector, each with the most its similarity
/// to `vector` can be, for a query with no filters: the quantized vectors
/// are read from the scan index of migration 0008 (contiguous ranges by
/// visibility, no table rows); the exact similarity is computed later,
/// only for the records that can make the answer.
fn scan_bounds(
    conn: &Connection,
    query: &RecordQuery,
    vector: &QueryVector,
) -> Result<Vec<VectorHit>, StoreError> {
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
        found.push(VectorHit {
            key,
            stored: None,
            similarity: vector.signal_at_most(scale, bytes).unwrap_or(0.0),
            exact: false,
        });
    }
    Ok(found)
}

/// Visible records with a vector, with their similarity to `vector`,
/// computed as the rows are read (the vectors are never held).
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
) -> Result<Vec<VectorHit>, StoreError> {
    const COLUMNS: &str = "r.key, r.layer, r.salience, r.decays_from, v.norm, v.vector";
    const VECTOR: &str = "CROSS JOIN record_vectors v ON v.record_key = r.key";
    let mut values = Vec::new();
    let sql = if query.filters.selective() {
        let (from, condition) = filter_source(query, &mut values);
        format!(
            "SELECT {COLUMNS} FROM {from} {VECTOR} WHERE {condition}{}",
            visible(query, &mut values)
        )
    } else {
        slice_sql(query, COLUMNS, VECTOR, &mut values)
    };
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = stmt.query(rusqlite::params_from_iter(values.iter()))?;
    let mut found = Vec::new();
    while let Some(row) = rows.next()? {
        let stored = Stored::read(row)?;
        let norm: f64 = row.get(4)?;
        let bytes = vector_bytes(row, 5, stored.key)?;
        found.push(VectorHit {
            key: stored.key,
            stored: Some(stored),
            similarity: vector.signal(bytes, norm).unwrap_or(0.0),
            exact: true,
        });
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

/// The values of `live` (retracted or not) the caller's records may have.
fn live_list(query: &RecordQuery) -> String {
    RankSet::for_query(query)
        .iter()
        .map(|s| s.live().to_string())
        .collect::<Vec<_>>()
        .join(", ")
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

/// The decay profile columns [`current_salience`] reads.
pub(super) const PROFILE_SQL: &str =
    "SELECT curve, half_life_seconds, min_salience, max_age_seconds, reinforcement_gain,
            pinned, anchor_salience, COALESCE(anchor_at, last_reinforced_at)
     FROM decay_profiles WHERE record_key = ?1";

#[cfg(test)]
mod text_tests {
    use super::super::test_support::conn;
    use super::*;
    use crate::domain::relevance::Weights;
    use crate::domain::search::TextQuery;

    fn text_query(text: &str, limit: usize) -> RecordQuery {
        RecordQuery {
            memory_types: MemoryType::ALL.to_vec(),
            max_sensitivity: Sensitivity::Hyper,
            scopes: None,
            min_salience: 0.0,
            limit,
            answer_limit: limit,
            include_retracted: false,
            after: None,
            max_bytes: usize::MAX,
            page_size: usize::MAX,
            filters: Filters::default(),
            text: TextQuery::new(text),
            vector: None,
            weights: Weights::default(),
            bm25: Default::default(),
            turns: Default::default(),
            max_salience: 1.0,
            scan_records: 0,
        }
    }

    /// A caller of every scope looks its terms up with the facets of its
    /// sensitivities and types only where the conditions on the records
    /// would otherwise look at more than twice what it may see.
    #[test]
    fn facets_narrow_a_lookup_only_where_they_leave_out_most_records() {
        let conn = conn();
        let (semantic, competence) = (
            MemoryType::Semantic.layer() as i64,
            MemoryType::Competence.layer() as i64,
        );
        let (low, high) = (
            Sensitivity::Low.rank() as i64,
            Sensitivity::High.rank() as i64,
        );
        let stored = |rows: &[(i64, i64, i64)]| {
            conn.execute_batch("DELETE FROM text_totals_all").unwrap();
            for (layer, sensitivity, docs) in rows {
                conn.execute(
                    "INSERT INTO text_totals_all (layer, sensitivity, live, docs, tokens)
                     VALUES (?1, ?2, 1, ?3, 0)",
                    rusqlite::params![layer, sensitivity, docs],
                )
                .unwrap();
            }
        };
        let facets = |max: Sensitivity, types: &[MemoryType]| {
            let query = RecordQuery {
                max_sensitivity: max,
                memory_types: types.to_vec(),
                ..text_query("word", 10)
            };
            let f = facets_for(&conn, &query).unwrap();
            (f.sensitivities, f.types)
        };
        let every = MemoryType::ALL;
        // Most records are low: a ceiling of medium leaves out few.
        stored(&[(semantic, low, 90), (semantic, high, 10)]);
        assert_eq!(facets(Sensitivity::Medium, every), (false, false));
        // Most are high: the ceiling narrows; all types are asked for.
        stored(&[(semantic, low, 10), (semantic, high, 90)]);
        assert_eq!(facets(Sensitivity::Medium, every), (true, false));
        // A rare type narrows; every sensitivity is admitted.
        stored(&[(semantic, low, 95), (competence, low, 5)]);
        assert_eq!(
            facets(Sensitivity::Hyper, &[MemoryType::Competence]),
            (false, true)
        );
        assert_eq!(
            facets(Sensitivity::Hyper, &[MemoryType::Semantic]),
            (false, false)
        );
        // Each narrows, and either alone would look at too much.
        stored(&[
            (semantic, low, 40),
            (semantic, high, 40),
            (competence, low, 5),
            (competence, high, 15),
        ]);
        assert_eq!(
            facets(Sensitivity::Medium, &[MemoryType::Competence]),
            (true, true)
        );
        // A caller of some scopes has its scope facets whatever the counts.
        let scoped = RecordQuery {
            scopes: Some(vec!["a".into()]),
            max_sensitivity: Sensitivity::Medium,
            ..text_query("word", 10)
        };
        let f = facets_for(&conn, &scoped).unwrap();
        assert!(f.sensitivities && !f.types);
    }

    #[test]
    fn a_scoped_slice_is_read_from_the_scope_rank_index_alone() {
        let conn = conn();
        let query = RecordQuery {
            max_sensitivity: Sensitivity::High,
            scopes: Some(vec!["p1".into(), "p2".into()]),
            scan_records: 4000,
            ..text_query("deploy", 10)
        };
        let mut values = Vec::new();
        let sql = slice_sql(&query, SLICE_COLUMNS, "", &mut values);
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let plan: Vec<String> = stmt
            .query_map(rusqlite::params_from_iter(values.iter()), |row| row.get(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let reads: Vec<&String> = plan.iter().filter(|p| p.contains(" r ")).collect();
        assert!(!reads.is_empty(), "{plan:?}");
        for read in reads {
            assert!(
                read.contains("COVERING INDEX idx_records_scope_rank"),
                "{plan:?}"
            );
        }
    }
}
