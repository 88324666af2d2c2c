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
//! its text rank (`ts_rank_cd` over the analyser's terms, `simple` text search
//! configuration) and its vector, and scored with the blended score of
//! `domain::relevance`: text relevance relative to the best candidate's,
//! vector similarity, salience now.
//!
//! Text matches are found in the search column's GIN index together with
//! the record's facets (`engram_facets` in the schema: its type, the
//! sensitivities and scopes that may see it, whether it is retracted, its
//! key's epoch, and the epoch with each scope and sensitivity), so only
//! matches the caller may see are read from the table. A word is common
//! from [`COMMON_WORD_MATCHES`] matches, as on SQLite: how many records
//! have it is counted in a small table and taken from the column's
//! statistics (`pg_stats`, read once a minute) in a large one. A common
//! word's newest visible matches are read epoch by epoch from the newest,
//! never all of them.
//!
//! Visibility (types, sensitivity, scopes, status) and the filters are
//! conditions of the statements, so a record the caller may not see never
//! takes a place in the answer.

use std::collections::HashMap;
use std::sync::Arc;

use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use super::records::{load_records, parse_enum, payload_sizes};
use super::Pg;
use crate::domain::decay::{salience_at, Anchor, DecayState};
use crate::domain::record::{DecayCurve, DecayProfile, MemoryType, Sensitivity};
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
        for (name, memory_type) in [
            (&filters.thread_id, MemoryType::Working),
            (&filters.subject, MemoryType::Semantic),
        ] {
            if let Some(name) = name {
                let p = c.param(name.clone());
                c.and(&of_record(format!(
                    "r.about = {p} AND r.layer = {}",
                    memory_type.layer()
                )));
            }
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
    fn facets(&mut self, query: &RecordQuery, window: Option<Window>) {
        let tokens = visible_tokens(
            &layers(query),
            query.max_sensitivity.rank() as i64,
            query.scopes.as_deref(),
            query.include_retracted,
            window,
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
    if layers.len() < MemoryType::ALL.len() {
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
        (None, _) if max_sensitivity < Sensitivity::Hyper.rank() as i64 => {
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
    let row = pg.query_one(
        "SELECT MAX(max_half_life_seconds), MAX(max_min_salience) FROM decay_bounds
         WHERE layer = ANY($1)",
        &[&layers(query)],
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
    let mut page_sql = Conditions::visible(query, Rows::Profiles);
    let after_salience = page_sql.param(0.0f64);
    let after_decays = page_sql.param(0i64);
    let after_key = page_sql.param(0i64);
    let limit = page_sql.param(0i64);
    let page_statement = format!(
        "SELECT d.record_key, d.salience, d.decays_from, d.created_at, d.layer, {PROFILE_COLUMNS}
         FROM decay_profiles d
         WHERE {} AND (d.salience, d.decays_from, d.record_key)
                      < ({after_salience}, {after_decays}, {after_key})
         ORDER BY d.salience DESC, d.decays_from DESC, d.record_key DESC
         LIMIT {limit}",
        page_sql.clause
    );
    // The next stored value a visible record has, down to the least one
    // that can still get in: without that floor, a caller who sees no
    // record below would have the index read through every one there
    // (retracted records, stored at 0, pile up there).
    let mut tier_sql = Conditions::visible(query, Rows::Profiles);
    let below = tier_sql.param(0.0f64);
    let at_least = tier_sql.param(0.0f64);
    let tier_statement = format!(
        "SELECT d.salience FROM decay_profiles d
         WHERE {} AND d.salience < {below} AND d.salience >= {at_least}
         ORDER BY d.salience DESC LIMIT 1",
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
            tier_sql.values[last - 1] = Box::new(after.0);
            tier_sql.values[last] = Box::new(top.least_kept().unwrap_or(0.0));
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

/// Below this many records the matches of each word are counted; above,
/// words' shares come from the statistics of the search column.
const COUNTED_TABLE: f64 = 10_000.0;

/// How long the statistics read from the database are used before they
/// are read again (ANALYZE renews them far less often).
const SHARES_KEPT: std::time::Duration = std::time::Duration::from_secs(60);

/// Keys of one epoch: `key >> EPOCH_BITS` (the `'E n'` and `'EV n v s'` facets of
/// `engram_facets` in the schema).
const EPOCH_BITS: u32 = 12;
/// Keys of one era: `key >> ERA_BITS` (the `'EW n v s'` facet).
const ERA_BITS: u32 = 16;

/// A word of the text query, as a `tsquery` text, with its weight: its
/// inverse document frequency as BM25 has it, `ln(1 + (N - n + 0.5) /
/// (n + 0.5))` for `n` of `N` records having it, so a rare word counts for
/// more.
struct Term {
    tsquery: String,
    weight: f64,
    common: bool,
}

/// The share of the records each of the most common words of the search
/// column is in, as ANALYZE last sampled it (`pg_stats`), and the least
/// share a listed word has: a word not listed is in fewer records.
#[derive(Debug, Default)]
struct Shares {
    of: HashMap<String, f64>,
    least: f64,
}

impl Shares {
    /// How many of `total` records have a word stemmed to `lexemes`:
    /// its listed share; for a word not listed, half the least share (as
    /// the planner takes it) when that makes it rare whatever its count;
    /// `None` when only counting can tell.
    fn matches(&self, lexemes: &[&str], total: f64) -> Option<f64> {
        if lexemes.is_empty() {
            return Some(0.0);
        }
        let listed = lexemes
            .iter()
            .filter_map(|l| self.of.get(*l).copied())
            .reduce(f64::max);
        match listed {
            Some(share) => Some(share * total),
            None if self.least * total < COMMON_WORD_MATCHES as f64 => {
                Some(self.least / 2.0 * total)
            }
            None => None,
        }
    }
}

/// The word statistics of the database, read at most every
/// [`SHARES_KEPT`]; shared by its connections.
#[derive(Default)]
pub(crate) struct WordShares(std::sync::Mutex<Option<(std::time::Instant, Arc<Option<Shares>>)>>);

impl WordShares {
    fn get(&self, pg: &Pg) -> Result<Arc<Option<Shares>>, StoreError> {
        if let Some((read_at, shares)) = &*self.0.lock().expect("not poisoned") {
            if read_at.elapsed() < SHARES_KEPT {
                return Ok(shares.clone());
            }
        }
        let row = pg.query_opt(
            "SELECT most_common_elems::text::text[], most_common_elem_freqs::float8[]
             FROM pg_stats
             WHERE schemaname = current_schema() AND tablename = 'records' AND attname = 'search'
               AND most_common_elems IS NOT NULL",
            &[],
        )?;
        let shares = match row {
            Some(row) => {
                let lexemes: Vec<String> = row.try_get(0)?;
                let freqs: Vec<f64> = row.try_get(1)?;
                // The frequencies of the listed lexemes, then the least
                // and the greatest of them and the share of empty values.
                let least = freqs.get(lexemes.len()).copied().unwrap_or(0.0);
                Some(Shares {
                    of: lexemes.into_iter().zip(freqs).collect(),
                    least,
                })
            }
            None => None,
        };
        let shares = Arc::new(shares);
        *self.0.lock().expect("not poisoned") = Some((std::time::Instant::now(), shares.clone()));
        Ok(shares)
    }
}

/// The words of a text query, and the newest record's key.
struct Words {
    terms: Vec<Term>,
    newest_key: i64,
}

fn words(pg: &Pg, query: &RecordQuery) -> Result<Words, StoreError> {
    let Some(text) = &query.text else {
        return Ok(Words {
            terms: Vec::new(),
            newest_key: 0,
        });
    };
    let words: Vec<String> = text
        .terms()
        .iter()
        .map(|t| t.trim_matches('"').to_string())
        .collect();
    // The planner's estimate of the table's size (kept by autovacuum),
    // the newest key, and each word's lexemes.
    let row = pg.query_one(
        "SELECT GREATEST((SELECT reltuples FROM pg_class WHERE oid = 'records'::regclass), 0)::float8,
                COALESCE((SELECT MAX(key) FROM records), 0),
                ARRAY(SELECT array_to_string(tsvector_to_array(to_tsvector('simple', w)), ' ')
                      FROM unnest($1::text[]) WITH ORDINALITY AS u(w, n) ORDER BY n)",
        &[&words],
    )?;
    let estimate: f64 = row.try_get(0)?;
    let newest_key: i64 = row.try_get(1)?;
    let lexemes: Vec<String> = row.try_get(2)?;
    // A young table is counted.
    let total = if estimate < COUNTED_TABLE {
        pg.query_one("SELECT COUNT(*) FROM records", &[])?
            .try_get::<_, i64>(0)? as f64
    } else {
        estimate
    };
    let shares = if total < COUNTED_TABLE {
        Arc::new(None)
    } else {
        pg.words.get(pg)?
    };
    let mut terms = Vec::with_capacity(words.len());
    for (word, lexemes) in words.iter().zip(&lexemes) {
        let tsquery = tsquery_term(word);
        let lexemes: Vec<&str> = lexemes.split(' ').filter(|l| !l.is_empty()).collect();
        let n = match shares
            .as_ref()
            .as_ref()
            .and_then(|s| s.matches(&lexemes, total))
        {
            Some(n) => n,
            // Counting stops at the common threshold: a common word's
            // matches are never all read.
            None => pg
                .query_one(
                    "SELECT COUNT(*) FROM (SELECT 1 FROM records
                                           WHERE search @@ (SELECT to_tsquery('simple', $1))
                                           LIMIT $2) m",
                    &[&tsquery, &COMMON_WORD_MATCHES],
                )?
                .try_get::<_, i64>(0)? as f64,
        };
        let total = total.max(n);
        terms.push(Term {
            tsquery,
            weight: (1.0 + (total - n + 0.5) / (n + 0.5)).ln(),
            common: n >= COMMON_WORD_MATCHES as f64,
        });
    }
    Ok(Words { terms, newest_key })
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

/// The columns every candidate statement reads from records `r` (`from`:
/// the table or a subquery) where `clause` holds: key, layer, creation,
/// the vector's norm and bytes (or nulls), the profile; then relevance.
fn candidate_sql(
    query: &RecordQuery,
    from: &str,
    clause: &str,
    relevance: &str,
    vectors: &str,
) -> String {
    let vector = if query.vector.is_some() {
        "v.norm, v.vector"
    } else {
        "NULL::float8, NULL::bytea"
    };
    format!(
        "SELECT r.key, r.layer, r.created_at, {vector}, {PROFILE_COLUMNS}, {relevance}::float8
         FROM {from} r JOIN decay_profiles d ON d.record_key = r.key {vectors}
         WHERE {clause}"
    )
}

/// Reads candidates into `found` (a record found already is not read
/// again); answers how many rows were read.
fn read_candidates(
    pg: &Pg,
    query: &RecordQuery,
    now: Timestamp,
    sql: &str,
    c: &Conditions,
    found: &mut Vec<Candidate>,
    seen: &mut std::collections::HashSet<i64>,
) -> Result<usize, StoreError> {
    let rows = pg.query(sql, &c.params())?;
    for row in &rows {
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
            salience: current_salience(row, 5, created_at, now)?,
            relevance: row.try_get::<_, f64>(13)?.max(0.0),
            vector,
        });
    }
    Ok(rows.len())
}

/// The visible candidates of one way of matching (`tier`; `None`: no text
/// query): its text matches, then, with a query vector, every visible
/// record with a vector; with neither, what the filters pick.
fn candidates(
    pg: &Pg,
    query: &RecordQuery,
    tier: Option<&[Part<'_>]>,
    newest_key: i64,
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
        match part {
            Part::Weighted(words) => {
                let mut c = Conditions::visible(query, Rows::Records);
                let mut sum = Vec::with_capacity(words.len());
                for word in words {
                    let t = c.param(word.tsquery.clone());
                    let w = c.param(word.weight);
                    sum.push(format!(
                        "CASE WHEN r.search @@ to_tsquery('simple', {t}) THEN {w}::float8 ELSE 0 END"
                    ));
                }
                let q = any_of(&mut c, words);
                c.facets(query, None);
                // Records with the same words, by how closely together
                // they stand (a small share of the relevance).
                let relevance = format!(
                    "({} + 0.01 * ts_rank_cd(r.search, to_tsquery('simple', {q})))",
                    sum.join(" + ")
                );
                let sql = candidate_sql(query, "records", &c.clause, &relevance, with_vectors);
                read_candidates(pg, query, now, &sql, &c, &mut found, &mut seen)?;
            }
            Part::Newest(words, n, relevance) => {
                // The newest `n` visible matches, records an earlier part
                // found read again but not kept: the newest `n + found`.
                let newest = Newest {
                    words,
                    wanted: n + found.len(),
                    newest_key,
                    relevance: format!("{relevance:?}"),
                    vectors: with_vectors,
                };
                newest.read(pg, query, now, &mut found, &mut seen)?;
            }
        }
    }
    if query.vector.is_some() {
        let c = Conditions::visible(query, Rows::Records);
        let sql = candidate_sql(
            query,
            "records",
            &c.clause,
            "0",
            "JOIN record_vectors v ON v.record_key = r.key",
        );
        read_candidates(pg, query, now, &sql, &c, &mut found, &mut seen)?;
    } else if tier.is_none() {
        let c = Conditions::visible(query, Rows::Records);
        let sql = candidate_sql(query, "records", &c.clause, "0", "");
        read_candidates(pg, query, now, &sql, &c, &mut found, &mut seen)?;
    }
    Ok(found)
}

/// Matches any of `words`: the condition, and the parameter of their
/// `tsquery`.
fn any_of(c: &mut Conditions, words: &[&Term]) -> String {
    let any: Vec<&str> = words.iter().map(|w| w.tsquery.as_str()).collect();
    let q = c.param(any.join(" | "));
    // As a subquery the planner does not estimate the query from the
    // search column's statistics (thousands of lexemes, read at every
    // planning): the index answers it whatever the estimate.
    c.and(&format!("r.search @@ (SELECT to_tsquery('simple', {q}))"));
    q
}

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

/// A read of the newest visible matches of common words.
struct Newest<'a> {
    words: &'a [&'a Term],
    wanted: usize,
    newest_key: i64,
    /// The relevance each is given, as an SQL literal.
    relevance: String,
    vectors: &'a str,
}

impl Newest<'_> {
    /// Reads the newest `wanted` visible matches of any of `words` (all
    /// of them if there are fewer) as candidates: epochs of keys read
    /// newest first, each window sized by what the ones before found, so a
    /// common word's older matches are not read, and from each only as
    /// many of its newest matches as are still wanted, with their
    /// profiles. Past the windows of epochs a caller limited to scopes
    /// reads windows of eras; when a window would list too many of them,
    /// or reach the first, the rest of the table is read at once.
    fn read(
        &self,
        pg: &Pg,
        query: &RecordQuery,
        now: Timestamp,
        found: &mut Vec<Candidate>,
        seen: &mut std::collections::HashSet<i64>,
    ) -> Result<(), StoreError> {
        let mut read = 0;
        // Keys from `below` up have been read.
        let mut below = self.newest_key + 1;
        let mut bits = EPOCH_BITS;
        let mut span = FIRST_EPOCHS;
        loop {
            // Whether a window of `span` (of `bits`) lies in the table and
            // lists few enough tokens.
            let fits =
                |bits, span| ((below - 1) >> bits) - span + 1 > 0 && span <= most_span(query, bits);
            if !fits(bits, span) && bits == EPOCH_BITS && query.scopes.is_some() {
                // Eras from here on, as many as the rate so far says.
                bits = ERA_BITS;
                span = next_span(read, self.wanted, self.newest_key + 1 - below, span, bits);
            }
            let rest = !fits(bits, span);
            let newest = (below - 1) >> bits;
            let oldest = newest - span + 1;
            let mut c = Conditions::visible(query, Rows::Records);
            any_of(&mut c, self.words);
            c.facets(
                query,
                (!rest).then_some(Window {
                    oldest,
                    newest,
                    bits,
                }),
            );
            // An era's newer keys may have been read in epochs.
            let p = c.param(below);
            c.and(&format!("r.key < {p}"));
            let limit = c.param((self.wanted - read) as i64);
            // Sorted after the index answered: walking the key index down
            // would test the text of every newer record.
            let from = format!(
                "(SELECT r.key, r.layer, r.created_at FROM records r WHERE {}
                  ORDER BY r.key + 0 DESC LIMIT {limit})",
                c.clause
            );
            let sql = candidate_sql(query, &from, "TRUE", &self.relevance, self.vectors);
            read += read_candidates(pg, query, now, &sql, &c, found, seen)?;
            if read >= self.wanted || rest {
                return Ok(());
            }
            below = oldest << bits;
            span = next_span(read, self.wanted, self.newest_key + 1 - below, span, bits);
        }
    }
}

/// The best `limit` of one way of matching, with their signals.
fn ranked_by(
    pg: &Pg,
    query: &RecordQuery,
    tier: Option<&[Part<'_>]>,
    newest_key: i64,
    now: Timestamp,
) -> Result<(Vec<Rank>, HashMap<i64, Signals>), StoreError> {
    let found = candidates(pg, query, tier, newest_key, now)?;
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
    let Words { terms, newest_key } = words(pg, query)?;
    if terms.is_empty() {
        return ranked_by(pg, query, None, newest_key, now);
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
            let (top, signals) = ranked_by(pg, &whole, Some(tier), newest_key, now)?;
            if top.len() < query.answer_limit {
                continue;
            }
            if first_page {
                return Ok((top, signals));
            }
        }
        return ranked_by(pg, query, Some(tier), newest_key, now);
    }
    unreachable!("the last way of matching always answers")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The facets of the records a caller may see, as `engram_facets`
    /// (schema version 4) gives them: current records by their own
    /// tokens, retracted ones by theirs only when asked for.
    #[test]
    fn visible_tokens_name_the_facets_a_caller_may_see() {
        let all = [0, 1, 2, 3, 4];
        assert_eq!(visible_tokens(&all, 4, None, true, None), None);
        // Every record of every sensitivity: current ones are told from
        // retracted ones by the conditions, not the index.
        assert_eq!(visible_tokens(&all, 4, None, false, None), None);
        assert_eq!(
            visible_tokens(&[0, 2], 4, None, true, None).as_deref(),
            Some("('L 0' | 'L 2')")
        );
        assert_eq!(
            visible_tokens(&[], 0, None, false, None).as_deref(),
            Some("'L none' & ('V 0')")
        );
        assert_eq!(
            visible_tokens(&all, 1, None, true, None).as_deref(),
            Some("('V 1' | 'RV 1')")
        );
        let epochs = Window {
            oldest: 3,
            newest: 4,
            bits: EPOCH_BITS,
        };
        assert_eq!(
            visible_tokens(&all, 2, None, false, Some(epochs)).as_deref(),
            Some("('V 2') & ('E 3' | 'E 4')")
        );
        assert_eq!(
            visible_tokens(&all, 4, None, true, Some(epochs)).as_deref(),
            Some("('E 3' | 'RE 3' | 'E 4' | 'RE 4')")
        );
        let scopes = ["project-alpha".to_string()];
        assert_eq!(
            visible_tokens(&[1], 1, Some(&scopes), false, Some(epochs)).as_deref(),
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
            visible_tokens(&all, 0, Some(&[]), true, Some(eras)).as_deref(),
            Some("('EW 1 0 -' | 'REW 1 0 -')")
        );
        assert_eq!(
            visible_tokens(&all, 0, Some(&scopes), true, None).as_deref(),
            Some("('V 0 e89cb74df0069d47' | 'RV 0 e89cb74df0069d47' | 'V 0 -' | 'RV 0 -')")
        );
    }

    fn shares() -> Shares {
        Shares {
            of: [("lantern".to_string(), 0.2), ("wick".to_string(), 0.003)]
                .into_iter()
                .collect(),
            least: 0.003,
        }
    }

    #[test]
    fn a_listed_word_has_its_share_of_the_records() {
        assert_eq!(shares().matches(&["lantern"], 1e6), Some(200_000.0));
        // A word stemmed to several lexemes is as common as the most
        // common of them.
        assert_eq!(shares().matches(&["wick", "lantern"], 1e6), Some(200_000.0));
        // A word of stop words only matches nothing.
        assert_eq!(shares().matches(&[], 1e6), Some(0.0));
    }

    #[test]
    fn an_unlisted_word_is_rare_only_when_the_least_listed_share_says_so() {
        // Listed words down to 0.3 %: at 100,000 records an unlisted word
        // is in fewer than 300, rare, and taken to be in 150.
        assert_eq!(shares().matches(&["ember"], 1e5), Some(150.0));
        // At a million it may be in up to 3,000: only counting tells.
        assert_eq!(shares().matches(&["ember"], 1e6), None);
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

    #[test]
    fn a_word_is_common_from_a_thousand_matches() {
        let s = shares();
        let common = |word: &str, total: f64| {
            s.matches(&[word], total)
                .is_some_and(|n| n >= COMMON_WORD_MATCHES as f64)
        };
        assert!(common("lantern", 10_000.0));
        assert!(!common("wick", 100_000.0));
        assert!(common("wick", 400_000.0));
    }
}
