//! Retrieval's reads on PostgreSQL: the [`RankingSource`] the ranking
//! engine (`store/ranking/engine.rs`) ranks from.
//!
//! - Salience order: the visible decay profiles (which keep copies of
//!   their record's type, sensitivity, scope, status and creation), read
//!   in the order of stored salience as one range; the slowest half-life
//!   of the types asked for bounds what an unread one can have.
//! - Postings: a term's matches are found in the search column's GIN index
//!   together with the record's facets (`engram_facets` in the schema: its
//!   type, the sensitivities and scopes that may see it, whether it is
//!   retracted, its key's epoch, and the epoch with each scope and
//!   sensitivity), so only matches the caller may see are read from the
//!   table. A term with more visible matches than asked for is read epoch
//!   by epoch from the newest, never all of them.
//! - Totals: `text_totals` (schema version 5), kept by triggers.
//!
//! Visibility (types, sensitivity, scopes, status) and the filters are
//! conditions of every statement, so a record the caller may not see is
//! never read.

use std::collections::HashMap;

use tokio_postgres::types::ToSql;

use super::connection::Pg;
use super::counted::term_query;
use super::record_reads::load_whole;
use crate::domain::analysis::term_frequency;
use crate::domain::record::{MemoryRecord, MemoryType};
use crate::domain::retrieval::RecordQuery;
use crate::domain::time::{to_micros, Timestamp};
use crate::domain::vector::QueryVector;
use crate::store::error::StoreError;
use crate::store::ranking::source::{
    self, current_salience, Current, Facets, PageRow, Posting, RankingSource, RecordText,
    SessionOf, SessionTurn, Stored, TermCount, Totals, TurnAt, VectorHit,
};
use crate::store::ranking::DecayBound;
use crate::store::transaction::Transaction;

impl Transaction for Pg {
    fn ranking_source(&mut self) -> Box<dyn RankingSource + '_> {
        Box::new(Source {
            pg: self,
            facets: Default::default(),
        })
    }
}

/// What retrieval reads through one connection.
struct Source<'a> {
    pg: &'a Pg,
    /// The facets of the query's lookups, once worked out (the same for
    /// every term of it).
    facets: std::cell::Cell<Option<Facets>>,
}

impl Source<'_> {
    fn facets(&self, query: &RecordQuery) -> Result<Facets, StoreError> {
        if let Some(facets) = self.facets.get() {
            return Ok(facets);
        }
        let facets = if Facets::counted(query) {
            let counts = self
                .pg
                .query(
                    "SELECT layer, sensitivity, SUM(docs)::bigint FROM text_totals_all
                     WHERE live = ANY($1) GROUP BY layer, sensitivity",
                    &[&lives(query)],
                )?
                .iter()
                .map(|row| Ok((row.try_get(0)?, row.try_get(1)?, row.try_get(2)?)))
                .collect::<Result<Vec<(i64, i64, i64)>, StoreError>>()?;
            Facets::choose(query, counts)
        } else {
            Facets::all(query)
        };
        self.facets.set(Some(facets));
        Ok(facets)
    }
}

/// The salience order of what a caller may see: its page and next-tier
/// statements, each with the visibility's parameters (the page's position
/// and limit, and the tier's bounds, follow them).
struct Range {
    page: String,
    page_conditions: Conditions,
    tier: String,
    tier_conditions: Conditions,
}

impl RankingSource for Source<'_> {
    fn decay_bounds(&self) -> Result<HashMap<i64, DecayBound>, StoreError> {
        let mut bounds = HashMap::new();
        for row in self.pg.query(
            "SELECT layer, max_half_life_seconds, max_min_salience FROM decay_bounds",
            &[],
        )? {
            bounds.insert(
                row.try_get(0)?,
                DecayBound {
                    max_half_life_seconds: row.try_get(1)?,
                    max_min_salience: row.try_get(2)?,
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
        // One range: the slowest decay of the types asked for bounds it.
        let slowest = query
            .memory_types
            .iter()
            .filter_map(|t| bounds.get(&(t.layer() as i64)))
            .copied()
            .reduce(|a, b| DecayBound {
                max_half_life_seconds: a.max_half_life_seconds.max(b.max_half_life_seconds),
                max_min_salience: a.max_min_salience.max(b.max_min_salience),
            });
        let Some(bound) = slowest else {
            return Vec::new();
        };
        let page_conditions = Conditions::visible(query, Rows::Profiles);
        let n = page_conditions.values.len();
        let page = format!(
            "SELECT d.record_key, d.salience, d.decays_from, d.created_at, d.layer,
                    {PROFILE_COLUMNS}
             FROM decay_profiles d
             WHERE {} AND (d.salience, d.decays_from, d.record_key)
                          < (${}, ${}, ${})
             ORDER BY d.salience DESC, d.decays_from DESC, d.record_key DESC
             LIMIT ${}",
            page_conditions.clause,
            n + 1,
            n + 2,
            n + 3,
            n + 4
        );
        // The next stored value a visible record has, down to the least
        // one that can still get in: without that floor, a caller who sees
        // no record below would have the index read through every one
        // there (retracted records, stored at 0, pile up there).
        let tier_conditions = Conditions::visible(query, Rows::Profiles);
        let n = tier_conditions.values.len();
        let tier = format!(
            "SELECT d.salience FROM decay_profiles d
             WHERE {} AND d.salience < ${} AND d.salience >= ${}
             ORDER BY d.salience DESC LIMIT 1",
            tier_conditions.clause,
            n + 1,
            n + 2
        );
        vec![(
            source::Range::new(Range {
                page,
                page_conditions,
                tier,
                tier_conditions,
            }),
            bound,
        )]
    }

    fn page(
        &self,
        _query: &RecordQuery,
        range: &source::Range,
        after: (f64, i64, i64),
        limit: usize,
        now: Timestamp,
    ) -> Result<Vec<PageRow>, StoreError> {
        let range: &Range = range.of()?;
        let limit = limit as i64;
        let mut params = range.page_conditions.params();
        params.extend([&after.0 as &(dyn ToSql + Sync), &after.1, &after.2, &limit]);
        let mut page = Vec::new();
        for row in self.pg.query(&range.page, &params)? {
            let created_at: i64 = row.try_get(3)?;
            let stored = Stored {
                key: row.try_get(0)?,
                layer: row.try_get(4)?,
                salience: row.try_get(1)?,
                decays_from: row.try_get(2)?,
            };
            page.push(PageRow {
                stored,
                created_at,
                current: Some(current_salience(&row, 5, stored.salience, created_at, now)?),
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
        let mut params = range.tier_conditions.params();
        params.extend([&below as &(dyn ToSql + Sync), &at_least]);
        self.pg
            .query_opt(&range.tier, &params)?
            .map(|row| row.try_get(0))
            .transpose()
            .map_err(Into::into)
    }

    fn salience_now(&self, row: &PageRow, _now: Timestamp) -> Result<f64, StoreError> {
        row.current.ok_or_else(|| {
            StoreError::Corrupt(format!(
                "record {} was read without its profile",
                row.stored.key
            ))
        })
    }

    fn postings(
        &self,
        query: &RecordQuery,
        term: &str,
        common: usize,
        newest: usize,
    ) -> Result<(Vec<Posting>, bool), StoreError> {
        let facets = self.facets(query)?;
        let (mut found, is_common) = if common <= newest {
            // The newest `newest` are the answer either way (a term known
            // to be common): the lookup of any `common` would only look at
            // the whole list of the term's matches first.
            let found = newest_postings(self.pg, query, facets, term, newest)?;
            let is_common = found.len() >= common;
            (found, is_common)
        } else {
            // Every visible match, when there are fewer than `common`: one
            // statement, in no order.
            let mut c = Conditions::visible(query, Rows::Records);
            matching(&mut c, term);
            c.facets(query, facets, None);
            let n = c.param(common as i64);
            let sql = format!(
                "SELECT {POSTING_COLUMNS} FROM (SELECT r.key FROM records r WHERE {} LIMIT {n}) m
                 {POSTING_JOIN}",
                c.clause
            );
            let found = read_postings(self.pg, &sql, &c, term)?;
            if found.len() >= common {
                (newest_postings(self.pg, query, facets, term, newest)?, true)
            } else {
                (found, false)
            }
        };
        found.sort_unstable_by_key(|p| std::cmp::Reverse(p.stored.key));
        found.truncate(if is_common { newest } else { common });
        Ok((found, is_common))
    }

    fn slice(
        &self,
        query: &RecordQuery,
        terms: &[String],
    ) -> Result<Option<Vec<Vec<Posting>>>, StoreError> {
        let mut found: Vec<Vec<Posting>> = vec![Vec::new(); terms.len()];
        if terms.is_empty() {
            return Ok(Some(found));
        }
        // The caller's records are found by the facets of who may see them
        // (for a caller limited to scopes, a few short lists of the search
        // index; the long list of a type would cost more than it saves),
        // and each term is tested on those rows rather than looked up in
        // its list of everyone's records. `OFFSET 0` keeps the terms out
        // of the index scan.
        let mut c = Conditions::visible(query, Rows::Records);
        if query.scopes.is_some() {
            let every: Vec<i64> = MemoryType::ALL.iter().map(|t| t.layer() as i64).collect();
            c.facets_of(query, &every, Facets::all(query), None);
        } else {
            c.facets(query, self.facets(query)?, None);
        }
        let mut has = Vec::with_capacity(terms.len());
        for (i, term) in terms.iter().enumerate() {
            has.push(format!("{} AS t{i}", has_term(&mut c, term)));
        }
        let any: Vec<String> = (0..terms.len()).map(|i| format!("m.t{i}")).collect();
        let sql = format!(
            "SELECT m.key, m.layer, d.salience, d.decays_from, m.search_length, m.search_repeats,
                    {}
             FROM (SELECT r.key, r.layer, r.search_length, r.search_repeats, {}
                   FROM records r WHERE {} OFFSET 0) m
             JOIN decay_profiles d ON d.record_key = m.key
             WHERE {}",
            any.join(", "),
            has.join(", "),
            c.clause,
            any.join(" OR "),
        );
        for row in self.pg.query(&sql, &c.params())? {
            let stored = Stored::read(&row)?;
            let length: i64 = row.try_get(4)?;
            let repeats: Option<&str> = row.try_get(5)?;
            for (i, term) in terms.iter().enumerate() {
                if row.try_get::<_, bool>(6 + i)? {
                    found[i].push(Posting::of(stored, length, repeats, term));
                }
            }
        }
        for postings in &mut found {
            postings.sort_unstable_by_key(|p| std::cmp::Reverse(p.stored.key));
        }
        Ok(Some(found))
    }

    fn totals(&self, query: &RecordQuery) -> Result<Totals, StoreError> {
        let layers = layers(query);
        let lives = lives(query);
        let max = query.max_sensitivity.rank() as i64;
        let row = match &query.scopes {
            None => self.pg.query_one(
                "SELECT COALESCE(SUM(docs), 0)::bigint, COALESCE(SUM(tokens), 0)::bigint
                 FROM text_totals_all
                 WHERE layer = ANY($1) AND sensitivity <= $2 AND live = ANY($3)",
                &[&layers, &max, &lives],
            )?,
            Some(scopes) => {
                let mut scopes = scopes.clone();
                scopes.push(String::new());
                self.pg.query_one(
                    "SELECT COALESCE(SUM(docs), 0)::bigint, COALESCE(SUM(tokens), 0)::bigint
                     FROM text_totals
                     WHERE scope = ANY($4) AND layer = ANY($1) AND sensitivity <= $2
                       AND live = ANY($3)",
                    &[&layers, &max, &lives, &scopes],
                )?
            }
        };
        Ok(Totals {
            docs: row.try_get(0)?,
            tokens: row.try_get(1)?,
        })
    }

    fn vector_hits(
        &self,
        query: &RecordQuery,
        vector: &QueryVector,
    ) -> Result<Vec<VectorHit>, StoreError> {
        // On the profiles' copies of the visibility: the records are read
        // only for what a filter asks of them.
        let mut c = Conditions::visible(query, Rows::Profiles);
        // The vectors' own copies of the visibility, which their index by
        // scope answers: the caller's vectors are read, not everyone's.
        let p = c.param(layers(query));
        c.and(&format!("v.layer = ANY({p})"));
        let p = c.param(query.max_sensitivity.rank() as i64);
        c.and(&format!("v.sensitivity <= {p}"));
        if !query.include_retracted {
            c.and("v.live");
        }
        if let Some(scopes) = &query.scopes {
            let p = c.param(scopes.clone());
            c.and(&format!("(v.scope = ANY({p}) OR v.scope IS NULL)"));
        }
        let sql = format!(
            "SELECT d.record_key, d.layer, d.salience, d.decays_from, v.norm, v.vector
             FROM record_vectors v JOIN decay_profiles d ON d.record_key = v.record_key
             WHERE {}",
            c.clause
        );
        let mut hits = Vec::new();
        for row in self.pg.query(&sql, &c.params())? {
            let stored = Stored::read(&row)?;
            let norm: f64 = row.try_get(4)?;
            let bytes: &[u8] = row.try_get(5)?;
            hits.push(VectorHit {
                key: stored.key,
                stored: Some(stored),
                similarity: vector.signal(bytes, norm).unwrap_or(0.0),
                exact: true,
            });
        }
        Ok(hits)
    }

    fn similarity(&self, key: i64, vector: &QueryVector) -> Result<f64, StoreError> {
        let row = self.pg.query_opt(
            "SELECT norm, vector FROM record_vectors WHERE record_key = $1",
            &[&key],
        )?;
        Ok(match row {
            Some(row) => {
                let bytes: &[u8] = row.try_get(1)?;
                vector.signal(bytes, row.try_get(0)?).unwrap_or(0.0)
            }
            None => 0.0,
        })
    }

    fn filter_matches(&self, query: &RecordQuery) -> Result<Vec<Stored>, StoreError> {
        let c = Conditions::visible(query, Rows::Records);
        let sql = format!(
            "SELECT r.key, r.layer, d.salience, d.decays_from
             FROM records r JOIN decay_profiles d ON d.record_key = r.key
             WHERE {}",
            c.clause
        );
        self.pg
            .query(&sql, &c.params())?
            .iter()
            .map(Stored::read)
            .collect()
    }

    fn current(&self, keys: &[i64], now: Timestamp) -> Result<HashMap<i64, Current>, StoreError> {
        let mut found = HashMap::with_capacity(keys.len());
        for row in self.pg.query(
            &format!(
                "SELECT r.key, r.layer, r.created_at, d.salience, {PROFILE_COLUMNS}
                 FROM records r JOIN decay_profiles d ON d.record_key = r.key
                 WHERE r.key = ANY($1)"
            ),
            &[&keys],
        )? {
            let created_at: i64 = row.try_get(2)?;
            let stored = row.try_get(3)?;
            found.insert(
                row.try_get(0)?,
                Current {
                    layer: row.try_get(1)?,
                    created_at,
                    stored,
                    salience: current_salience(&row, 4, stored, created_at, now)?,
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
        super::counted::frequencies(
            self.pg,
            terms,
            query.scopes.as_deref(),
            &layers(query),
            query.max_sensitivity.rank() as i64,
            &lives(query),
            count_missing,
        )
    }

    fn conjunction(
        &self,
        query: &RecordQuery,
        terms: &[String],
    ) -> Result<Vec<(Stored, RecordText)>, StoreError> {
        let mut c = Conditions::visible(query, Rows::Records);
        for term in terms {
            matching(&mut c, term);
        }
        c.facets(query, self.facets(query)?, None);
        let sql = format!(
            "SELECT {POSTING_COLUMNS} FROM (SELECT r.key FROM records r WHERE {}) m
             {POSTING_JOIN}",
            c.clause
        );
        let stored: Vec<Stored> = self
            .pg
            .query(&sql, &c.params())?
            .iter()
            .map(Stored::read)
            .collect::<Result<_, _>>()?;
        let keys: Vec<i64> = stored.iter().map(|s| s.key).collect();
        let mut texts = self.texts(&keys)?;
        Ok(stored
            .into_iter()
            .filter_map(|s| Some((s, texts.remove(&s.key)?)))
            .collect())
    }

    fn texts(&self, keys: &[i64]) -> Result<HashMap<i64, RecordText>, StoreError> {
        // The search column holds the terms and the facets; a facet has a
        // space, a term never.
        let mut texts = HashMap::with_capacity(keys.len());
        for row in self.pg.query(
            "SELECT key, search_length, search_repeats,
                    array_to_string(ARRAY(SELECT t FROM unnest(tsvector_to_array(search)) t
                                          WHERE position(' ' in t) = 0), ' ')
             FROM records WHERE key = ANY($1)",
            &[&keys],
        )? {
            texts.insert(
                row.try_get(0)?,
                RecordText {
                    length: row.try_get(1)?,
                    repeats: row.try_get(2)?,
                    distinct: row.try_get(3)?,
                },
            );
        }
        Ok(texts)
    }

    fn sizes(&self, keys: &[i64]) -> Result<HashMap<i64, usize>, StoreError> {
        let mut sizes = HashMap::with_capacity(keys.len());
        for row in self.pg.query(
            "SELECT record_key, octet_length(payload_json)::bigint FROM payloads
             WHERE record_key = ANY($1)",
            &[&keys],
        )? {
            sizes.insert(row.try_get(0)?, row.try_get::<_, i64>(1)?.max(0) as usize);
        }
        Ok(sizes)
    }

    fn load(&self, keys: &[i64], now: Timestamp) -> Result<Vec<MemoryRecord>, StoreError> {
        load_whole(self.pg, keys, now)
    }

    fn turns_of(&self, keys: &[i64]) -> Result<Vec<TurnAt>, StoreError> {
        self.pg
            .query(
                "SELECT t.record_key, t.conversation_id,
                        (SELECT r.scope FROM records r WHERE r.key = t.record_key), t.session_id
                 FROM conversation_turns t WHERE t.record_key = ANY($1)",
                &[&keys],
            )?
            .iter()
            .map(|row| {
                Ok(TurnAt {
                    key: row.try_get(0)?,
                    session: SessionOf {
                        conversation_id: row.try_get(1)?,
                        scope: row.try_get(2)?,
                        session_id: row.try_get(3)?,
                    },
                })
            })
            .collect()
    }

    fn session_turns(
        &self,
        query: &RecordQuery,
        sessions: &[SessionOf],
        terms: &[String],
    ) -> Result<Vec<SessionTurn>, StoreError> {
        let sessions: Vec<&SessionOf> = sessions.iter().filter(|s| s.seen_by(query)).collect();
        // Each term as a search query of its own, as `has_term` makes it.
        let quoted: Vec<String> = terms
            .iter()
            .map(|t| format!("'{}'", t.replace('\'', "''")))
            .collect();
        let has: Vec<String> = (0..terms.len())
            .map(|i| format!("r.search @@ to_tsquery('simple', ${})", i + 5))
            .collect();
        // The level comes from an enum, never from text.
        let sql = format!(
            "SELECT {}{}
             FROM conversation_turns t
             JOIN records r ON r.key = t.record_key
             JOIN decay_profiles d ON d.record_key = r.key
             WHERE t.conversation_id = $1 AND t.session_id = $2
               AND r.scope IS NOT DISTINCT FROM $3
               AND r.layer = {} AND r.sensitivity <= {} AND ($4 OR r.status <> 'retracted')
             ORDER BY t.turn_index, t.record_key",
            SessionTurn::columns("d"),
            has.iter().map(|h| format!(", {h}")).collect::<String>(),
            MemoryType::Episodic.layer(),
            query.max_sensitivity.rank()
        );
        let params: Vec<Vec<&(dyn ToSql + Sync)>> = sessions
            .iter()
            .map(|session| {
                let mut params: Vec<&(dyn ToSql + Sync)> = vec![
                    &session.conversation_id,
                    &session.session_id,
                    &session.scope,
                    &query.include_retracted,
                ];
                params.extend(quoted.iter().map(|q| q as &(dyn ToSql + Sync)));
                params
            })
            .collect();
        let statements: Vec<(&str, &[&(dyn ToSql + Sync)])> = params
            .iter()
            .map(|p| (sql.as_str(), p.as_slice()))
            .collect();
        let mut found = Vec::new();
        // One round trip for all the sessions.
        for (session, rows) in sessions.iter().zip(self.pg.query_all(&statements)?) {
            for row in rows {
                let repeats: Option<&str> = row.try_get(5)?;
                let mut frequencies = vec![0.0; terms.len()];
                for (i, term) in terms.iter().enumerate() {
                    if row.try_get::<_, bool>(10 + i)? {
                        frequencies[i] = term_frequency(repeats, term);
                    }
                }
                found.push(SessionTurn::read(&row, query, session, frequencies)?);
            }
        }
        Ok(found)
    }
}

/// What a posting reads of the records `m` (`m.key`) a statement found.
const POSTING_COLUMNS: &str =
    "r.key, r.layer, d.salience, d.decays_from, r.search_length, r.search_repeats";
const POSTING_JOIN: &str =
    "JOIN records r ON r.key = m.key JOIN decay_profiles d ON d.record_key = m.key";

fn read_postings(
    pg: &Pg,
    sql: &str,
    c: &Conditions,
    term: &str,
) -> Result<Vec<Posting>, StoreError> {
    pg.query(sql, &c.params())?
        .iter()
        .map(|row| {
            Ok(Posting::of(
                Stored::read(row)?,
                row.try_get(4)?,
                row.try_get::<_, Option<&str>>(5)?,
                term,
            ))
        })
        .collect()
}

/// The condition that a record `r` has `term` (an analyser's term), its
/// text a parameter of `c`.
fn has_term(c: &mut Conditions, term: &str) -> String {
    let p = c.param(term_query(term));
    // As a subquery the planner does not estimate the query from the
    // search column's statistics (thousands of lexemes, read at every
    // planning): the index answers it whatever the estimate.
    format!("r.search @@ (SELECT to_tsquery('simple', {p}))")
}

/// Adds the condition that records have `term` (an analyser's term).
fn matching(c: &mut Conditions, term: &str) {
    let condition = has_term(c, term);
    c.and(&condition);
}

/// The newest `wanted` visible matches of `term`: epochs of keys read
/// newest first, each window sized by what the ones before found, so the
/// older matches of a common term are not read. Past the windows of
/// epochs a caller limited to scopes reads windows of eras; when a window
/// would list too many of them, or reach the first, the rest of the table
/// is read at once.
fn newest_postings(
    pg: &Pg,
    query: &RecordQuery,
    narrow: Facets,
    term: &str,
    wanted: usize,
) -> Result<Vec<Posting>, StoreError> {
    let newest_key: i64 = pg
        .query_one("SELECT COALESCE(MAX(key), 0)::bigint FROM records", &[])?
        .try_get(0)?;
    let mut found: Vec<Posting> = Vec::new();
    // Keys from `below` up have been read.
    let mut below = newest_key + 1;
    let mut bits = EPOCH_BITS;
    let mut span = FIRST_EPOCHS;
    loop {
        crate::store::budget::check()?;
        // Whether a window of `span` (of `bits`) lies in the table and
        // lists few enough tokens.
        let fits =
            |bits, span| ((below - 1) >> bits) - span + 1 > 0 && span <= most_span(query, bits);
        if !fits(bits, span) && bits == EPOCH_BITS && query.scopes.is_some() {
            // Eras from here on, as many as the rate so far says.
            bits = ERA_BITS;
            span = next_span(found.len(), wanted, newest_key + 1 - below, span, bits);
        }
        let rest = !fits(bits, span);
        let newest = (below - 1) >> bits;
        let oldest = newest - span + 1;
        let mut c = Conditions::visible(query, Rows::Records);
        matching(&mut c, term);
        c.facets(
            query,
            narrow,
            (!rest).then_some(Window {
                oldest,
                newest,
                bits,
            }),
        );
        // An era's newer keys may have been read in epochs.
        let p = c.param(below);
        c.and(&format!("r.key < {p}"));
        let limit = c.param((wanted - found.len()) as i64);
        // Sorted after the index answered: walking the key index down
        // would test the text of every newer record.
        let sql = format!(
            "SELECT {POSTING_COLUMNS}
             FROM (SELECT r.key FROM records r WHERE {} ORDER BY r.key + 0 DESC LIMIT {limit}) m
             {POSTING_JOIN}",
            c.clause
        );
        found.extend(read_postings(pg, &sql, &c, term)?);
        if found.len() >= wanted || rest {
            return Ok(found);
        }
        below = oldest << bits;
        span = next_span(found.len(), wanted, newest_key + 1 - below, span, bits);
    }
}

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
    /// status, the stored salience floor, the filters; of records `r`, or
    /// of profiles `d` (`on`), which keep copies of all but what the
    /// filters on a thread, a subject or a source read.
    fn visible(query: &RecordQuery, on: Rows) -> Conditions {
        let mut c = Conditions {
            clause: "TRUE".to_string(),
            values: Vec::new(),
        };
        let (t, key) = match on {
            Rows::Records => ("r", "r.key"),
            Rows::Profiles => ("d", "d.record_key"),
        };
        // A condition on the record's own row.
        let of_record = |condition: String| match on {
            Rows::Records => condition,
            Rows::Profiles => format!(
                "EXISTS (SELECT 1 FROM records r WHERE r.key = d.record_key AND {condition})"
            ),
        };
        let p = c.param(layers(query));
        c.and(&format!("{t}.layer = ANY({p})"));
        let p = c.param(query.max_sensitivity.rank() as i64);
        c.and(&format!("{t}.sensitivity <= {p}"));
        if let Some(scopes) = &query.scopes {
            let p = c.param(scopes.clone());
            c.and(&format!("({t}.scope IS NULL OR {t}.scope = ANY({p}))"));
        }
        if !query.include_retracted {
            c.and(&format!("{t}.status <> 'retracted'"));
        }
        // Decay only lowers salience: a record stored below the floor is
        // below it now.
        if query.min_salience > 0.0 {
            let p = c.param(query.min_salience);
            c.and(&match on {
                Rows::Records => format!(
                    "EXISTS (SELECT 1 FROM decay_profiles f \
                     WHERE f.record_key = r.key AND f.salience >= {p})"
                ),
                Rows::Profiles => format!("d.salience >= {p}"),
            });
        }
        let filters = &query.filters;
        for (name, memory_type) in filters.abouts() {
            let p = c.param(name.to_string());
            c.and(&of_record(format!(
                "r.about = {p} AND r.layer = {}",
                memory_type.layer()
            )));
        }
        if !filters.speakers.is_empty() {
            let p = c.param(filters.speakers.clone());
            c.and(&format!(
                "{key} IN (SELECT record_key FROM conversation_turns WHERE speaker = ANY({p}))"
            ));
        }
        for tag in &filters.tags {
            let p = c.param(tag.clone());
            c.and(&format!(
                "{key} IN (SELECT record_key FROM tags WHERE tag = {p})"
            ));
        }
        if !filters.sources.is_empty() {
            let p = c.param(filters.sources.clone());
            c.and(&of_record(format!("r.created_by = ANY({p})")));
        }
        if let Some(after) = filters.created_after {
            let p = c.param(to_micros(&after));
            c.and(&format!("{t}.created_at > {p}"));
        }
        if let Some(before) = filters.created_before {
            let p = c.param(to_micros(&before));
            c.and(&format!("{t}.created_at < {p}"));
        }
        c
    }

    /// The visibility and the epochs or eras (`window`) the record's
    /// facets must have, as a condition the search index answers (the
    /// conditions of [`Conditions::visible`] still decide).
    fn facets(&mut self, query: &RecordQuery, narrow: Facets, window: Option<Window>) {
        self.facets_of(query, &layers(query), narrow, window);
    }

    /// [`Conditions::facets`] with `layers` for the query's types.
    fn facets_of(
        &mut self,
        query: &RecordQuery,
        layers: &[i64],
        narrow: Facets,
        window: Option<Window>,
    ) {
        let tokens = visible_tokens(
            layers,
            query.max_sensitivity.rank() as i64,
            query.scopes.as_deref(),
            query.include_retracted,
            window,
            narrow,
        );
        if let Some(tokens) = tokens {
            // A subquery, as the words' query (see `any_of`).
            let p = self.param(tokens);
            self.and(&format!("r.search @@ (SELECT ({p}::text)::tsquery)"));
        }
    }
}

/// The facet tokens of [`Conditions::facets`] as a search query's text:
/// those `engram_facets` gives a record that the caller may see (its
/// `layers`, sensitivities up to `max_sensitivity`, `scopes` and the
/// unscoped, or any scope when `None`; retracted ones too when
/// `with_retracted`) in `window`. `None` when nothing narrows.
///
/// A retracted record's facets are its own (schema version 4: `R` in
/// front), so current records are asked for by what they have, never by
/// what they lack: a negation makes the index walk the whole list of
/// retracted records. A caller not limited to scopes who sees every
/// sensitivity, with no window, is not narrowed to current records here;
/// the conditions of [`Conditions::visible`] are.
fn visible_tokens(
    layers: &[i64],
    max_sensitivity: i64,
    scopes: Option<&[String]>,
    with_retracted: bool,
    window: Option<Window>,
    narrow: Facets,
) -> Option<String> {
    fn any(tokens: impl Iterator<Item = String>) -> String {
        let quoted: Vec<String> = tokens.map(|t| format!("'{t}'")).collect();
        if quoted.is_empty() {
            return "'L none'".to_string();
        }
        format!("({})", quoted.join(" | "))
    }
    // The facets of current records, and of retracted ones when asked.
    let kinds: &[&str] = if with_retracted { &["", "R"] } else { &[""] };
    let of_kinds = |token: String| kinds.iter().map(move |k| format!("{k}{token}"));
    let mut parts = Vec::new();
    if layers.len() < MemoryType::ALL.len() && (scopes.is_some() || narrow.types) {
        parts.push(any(layers.iter().map(|l| format!("L {l}"))));
    }
    let sensitivities = 0..=max_sensitivity;
    match (scopes, window) {
        (Some(scopes), window) => {
            let scopes: Vec<String> = scopes
                .iter()
                .map(|s| scope_token(Some(s)))
                .chain(std::iter::once(scope_token(None)))
                .collect();
            let facets = |prefix: &str| -> Vec<String> {
                sensitivities
                    .clone()
                    .flat_map(|v| scopes.iter().map(move |s| format!("{prefix}{v} {s}")))
                    .flat_map(of_kinds)
                    .collect()
            };
            parts.push(match window {
                Some(w) => {
                    let kind = if w.bits == ERA_BITS { "EW" } else { "EV" };
                    any((w.oldest..=w.newest).flat_map(|e| facets(&format!("{kind} {e} "))))
                }
                None => any(facets("V ").into_iter()),
            });
        }
        (None, _) if narrow.sensitivities => {
            parts.push(any(of_kinds(format!("V {max_sensitivity}"))));
        }
        (None, _) => {}
    }
    if let (None, Some(w)) = (scopes, window) {
        if w.bits != ERA_BITS {
            parts.push(any(
                (w.oldest..=w.newest).flat_map(|e| of_kinds(format!("E {e}")))
            ));
        }
    }
    (!parts.is_empty()).then(|| parts.join(" & "))
}

/// A scope as the facets name it: the first 16 hex digits of its MD5,
/// `-` for none (`engram_facets`).
fn scope_token(scope: Option<&str>) -> String {
    use md5::{Digest, Md5};
    match scope {
        None => "-".to_string(),
        Some(scope) => Md5::digest(scope.as_bytes())[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
    }
}

/// Which rows a statement's conditions are on.
#[derive(Clone, Copy)]
enum Rows {
    /// Records `r`.
    Records,
    /// Decay profiles `d` alone.
    Profiles,
}

/// Epochs (`bits` [`EPOCH_BITS`]) or eras ([`ERA_BITS`]) of keys,
/// `oldest..=newest`.
#[derive(Clone, Copy)]
struct Window {
    oldest: i64,
    newest: i64,
    bits: u32,
}

/// The layers of the query's memory types.
/// The `live` values of the partitions a caller may see.
fn lives(query: &RecordQuery) -> Vec<bool> {
    if query.include_retracted {
        vec![true, false]
    } else {
        vec![true]
    }
}

fn layers(query: &RecordQuery) -> Vec<i64> {
    query
        .memory_types
        .iter()
        .map(|t| t.layer() as i64)
        .collect()
}

/// The decay profile columns [`current_salience`] reads, from `d`.
const PROFILE_COLUMNS: &str = "d.curve, d.half_life_seconds, d.min_salience, d.max_age_seconds,
     d.reinforcement_gain, d.pinned, d.anchor_salience, d.anchor_at";

/// Keys of one epoch: `key >> EPOCH_BITS` (the `'E n'` and `'EV n v s'` facets of
/// `engram_facets` in the schema).
const EPOCH_BITS: u32 = 12;
/// Keys of one era: `key >> ERA_BITS` (the `'EW n v s'` facet).
const ERA_BITS: u32 = 16;

/// The epochs the first window of [`Newest::read`] reads.
const FIRST_EPOCHS: i64 = 2;
/// The most epochs a window lists for a caller not limited to scopes: a
/// longer list costs the index more than reading the rest of the table's
/// matches.
const MOST_EPOCHS: i64 = 32;
/// The most tokens a window of epochs, or eras, lists for a caller limited
/// to scopes: one for each epoch or era, scope (and unscoped) and
/// sensitivity it may see.
const MOST_EPOCH_TOKENS: usize = 48;
const MOST_ERA_TOKENS: usize = 24;

/// The most epochs or eras (`bits`) a window lists for `query`'s caller.
fn most_span(query: &RecordQuery, bits: u32) -> i64 {
    let Some(scopes) = &query.scopes else {
        return MOST_EPOCHS;
    };
    let per_epoch = (query.max_sensitivity.rank() as usize + 1) * (scopes.len() + 1);
    let tokens = if bits == ERA_BITS {
        MOST_ERA_TOKENS
    } else {
        MOST_EPOCH_TOKENS
    };
    (tokens / per_epoch) as i64
}

/// The epochs or eras (of `bits`) the next window of [`Newest::read`]
/// reads: enough for the matches still wanted at the rate per key the
/// windows read so far found them (over `keys_read` keys; the newest
/// epoch is not full), and half again; four times the last window when
/// they found none.
fn next_span(found: usize, wanted: usize, keys_read: i64, last_span: i64, bits: u32) -> i64 {
    if found == 0 {
        return last_span.saturating_mul(4);
    }
    let per_key = found as f64 / keys_read.max(1) as f64;
    let needed = (wanted - found) as f64 / per_key * 1.5;
    ((needed / (1i64 << bits) as f64).ceil() as i64).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tokens with every facet that narrows at all.
    fn tokens(
        layers: &[i64],
        max_sensitivity: i64,
        scopes: Option<&[String]>,
        with_retracted: bool,
        window: Option<Window>,
    ) -> Option<String> {
        let narrow = Facets {
            sensitivities: max_sensitivity < 4,
            types: layers.len() < 5,
        };
        visible_tokens(
            layers,
            max_sensitivity,
            scopes,
            with_retracted,
            window,
            narrow,
        )
    }

    /// The facets of the records a caller may see, as `engram_facets`
    /// (schema version 4) gives them: current records by their own
    /// tokens, retracted ones by theirs only when asked for.
    #[test]
    fn visible_tokens_name_the_facets_a_caller_may_see() {
        let all = [0, 1, 2, 3, 4];
        assert_eq!(tokens(&all, 4, None, true, None), None);
        // Every record of every sensitivity: current ones are told from
        // retracted ones by the conditions, not the index.
        assert_eq!(tokens(&all, 4, None, false, None), None);
        assert_eq!(
            tokens(&[0, 2], 4, None, true, None).as_deref(),
            Some("('L 0' | 'L 2')")
        );
        assert_eq!(
            tokens(&[], 0, None, false, None).as_deref(),
            Some("'L none' & ('V 0')")
        );
        assert_eq!(
            tokens(&all, 1, None, true, None).as_deref(),
            Some("('V 1' | 'RV 1')")
        );
        // Where they would not narrow (`Facets::choose`), neither types
        // nor sensitivities, but a scope's are kept.
        let none = Facets {
            sensitivities: false,
            types: false,
        };
        assert_eq!(visible_tokens(&[0, 2], 1, None, false, None, none), None);
        assert_eq!(
            visible_tokens(&[0], 0, Some(&[]), false, None, none).as_deref(),
            Some("('L 0') & ('V 0 -')")
        );
        let epochs = Window {
            oldest: 3,
            newest: 4,
            bits: EPOCH_BITS,
        };
        assert_eq!(
            tokens(&all, 2, None, false, Some(epochs)).as_deref(),
            Some("('V 2') & ('E 3' | 'E 4')")
        );
        assert_eq!(
            tokens(&all, 4, None, true, Some(epochs)).as_deref(),
            Some("('E 3' | 'RE 3' | 'E 4' | 'RE 4')")
        );
        let scopes = ["project-alpha".to_string()];
        assert_eq!(
            tokens(&[1], 1, Some(&scopes), false, Some(epochs)).as_deref(),
            Some(
                "('L 1') & ('EV 3 0 e89cb74df0069d47' | 'EV 3 0 -' | 'EV 3 1 e89cb74df0069d47' \
                 | 'EV 3 1 -' | 'EV 4 0 e89cb74df0069d47' | 'EV 4 0 -' \
                 | 'EV 4 1 e89cb74df0069d47' | 'EV 4 1 -')"
            )
        );
        let eras = Window {
            oldest: 1,
            newest: 1,
            bits: ERA_BITS,
        };
        assert_eq!(
            tokens(&all, 0, Some(&[]), true, Some(eras)).as_deref(),
            Some("('EW 1 0 -' | 'REW 1 0 -')")
        );
        assert_eq!(
            tokens(&all, 0, Some(&scopes), true, None).as_deref(),
            Some("('V 0 e89cb74df0069d47' | 'RV 0 e89cb74df0069d47' | 'V 0 -' | 'RV 0 -')")
        );
    }

    #[test]
    fn windows_grow_by_the_rate_matches_were_found_at() {
        // 20 matches in 2 epochs' keys: 230 more need 23 epochs, and
        // half again.
        assert_eq!(next_span(20, 250, 2 << EPOCH_BITS, 2, EPOCH_BITS), 35);
        // The same 20 in the keys of an epoch and a quarter.
        assert_eq!(next_span(20, 250, 5 << (EPOCH_BITS - 2), 2, EPOCH_BITS), 22);
        // In eras, sixteen times as long: a sixteenth as many.
        assert_eq!(next_span(20, 250, 2 << EPOCH_BITS, 2, ERA_BITS), 3);
        // None yet: four times the last window.
        assert_eq!(next_span(0, 250, 2 << EPOCH_BITS, 2, EPOCH_BITS), 8);
        // Nearly there: one epoch at least.
        assert_eq!(next_span(249, 250, 8 << EPOCH_BITS, 8, EPOCH_BITS), 1);
    }
}
