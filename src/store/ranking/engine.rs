//! The ranking engine: the best `limit` records a caller may see, on any
//! backend, from the narrow reads of [`RankingSource`].
//!
//! **By salience alone** (no text, no vector, no selective filter): the
//! visible records are read range by range in the order of the salience
//! stored at the last sweep or change. Decay only lowers salience, and no
//! faster than the slowest half-life of the range's types allows
//! ([`DecayBound`]), so a position in a range bounds what any record
//! further on can have now. Ranges are read a page at a time (pages
//! double) into a bounded top-`limit` by current salience; a range is
//! finished once that bound cannot beat the last of the top, or it runs
//! out. The answer is exact however long ago the sweep ran.
//!
//! **Ranked** (a text query, a query vector, or a selective filter): the
//! candidates are the visible postings of the query's terms (see
//! [`Words`]), the visible records with a vector, or the visible records
//! of the filter. Each is scored with the blended score of
//! `domain::relevance`; its stored salience bounds the salience part from
//! above, so candidates are taken in order of that bound, each looked at
//! as it is now, until the bound of the next cannot beat the last of the
//! top.
//!
//! **Text relevance** is BM25 computed here, over what the caller may see
//! only: a term's document frequency is the number of its visible
//! postings, the number of documents and their average length are the
//! caller's [`Totals`]. A record the caller may not see changes no score.
//!
//! A term with [`COMMON_WORD_MATCHES`] visible postings or more is
//! *common*: reading all of them costs in proportion to the caller's
//! slice. When the backend keeps the counts of every common term of the
//! query (`store::term_counts`), the query is matched exactly, reading
//! only the combinations of common terms that can reach the answer
//! (`exact.rs`), unless they could hold too many records. Else (and
//! then): a query with common and rarer terms is matched on the rarer
//! terms alone when they fill the whole answer; else their matches are
//! followed by the newest visible matches of the common terms. A query of
//! common terms alone takes their newest visible matches. With the counts,
//! each of these is scored over every term; without, a common term's
//! match has text relevance 0 beside rarer ones, 1 when all are common.

use std::collections::{HashMap, HashSet};

use super::exact::{Exact, Matched, Unmatched};
use super::source::{Range, RankingSource, Stored};
use super::turns::{in_context, TermWeights};
use super::words::{Term, Words};
use super::{within_budget, DecayBound, Rank, TopK, MAX_PAGE};
use crate::domain::record::MemoryType;
use crate::domain::relevance::Bm25;
use crate::domain::relevance::{relative, Signals};
use crate::domain::retrieval::RecordQuery;
use crate::domain::time::{to_micros, Timestamp};
use crate::store::error::StoreError;
use crate::store::records::RecordPage;

/// First page read from each range beyond the limit; later pages double,
/// up to [`MAX_PAGE`]. None in unit tests, so they go through many pages.
const FIRST_PAGE_MARGIN: usize = if cfg!(test) { 0 } else { 32 };

/// A term with this many visible postings or more is common.
pub(crate) const COMMON_WORD_MATCHES: usize = 1000;

/// The most matches a query's common terms contribute (the newest visible
/// ones), unless its `limit` is larger: then `limit`, so an answer is
/// never short while there are matches.
pub(crate) const COMMON_QUERY_CANDIDATES: usize = 250;

/// The answer to a retrieval: the way into ranking, over the reads of
/// the transaction's backend (`Transaction::ranking_source`).
pub fn query_records<S: RankingSource + ?Sized>(
    source: &S,
    query: &RecordQuery,
    now: Timestamp,
) -> Result<RecordPage, StoreError> {
    // Read once: every way of matching a text query bounds by them.
    let bounds = source.decay_bounds()?;
    let (top, signals) =
        if query.text.is_some() || query.vector.is_some() || query.filters.selective() {
            ranked(source, query, &bounds, now)?
        } else {
            (by_salience(source, query, &bounds, now)?, HashMap::new())
        };
    let keys: Vec<i64> = top.iter().map(|r| r.key).collect();
    let sizes = source.sizes(&keys)?;
    within_budget(
        query,
        top,
        now,
        &sizes,
        |keys| source.load(keys, now),
        |rank| {
            signals.get(&rank.key).copied().unwrap_or(Signals {
                text: None,
                vector: None,
                salience: rank.salience,
            })
        },
    )
}

/// A range being read: where its last page ended.
struct Open {
    range: Range,
    bound: DecayBound,
    after: (f64, i64, i64),
    exhausted: bool,
}

fn by_salience<S: RankingSource + ?Sized>(
    source: &S,
    query: &RecordQuery,
    bounds: &HashMap<i64, DecayBound>,
    now: Timestamp,
) -> Result<Vec<Rank>, StoreError> {
    let mut top = TopK::for_query(query);
    if query.memory_types.is_empty() || query.limit == 0 {
        return Ok(top.into_sorted());
    }
    let mut ranges: Vec<Open> = source
        .ranges(query, bounds)
        .into_iter()
        .map(|(range, bound)| Open {
            range,
            bound,
            after: (f64::MAX, i64::MAX, i64::MAX),
            exhausted: false,
        })
        .collect();
    let now_micros = to_micros(&now);
    let min = query.min_salience;
    let mut page = query.limit.saturating_add(FIRST_PAGE_MARGIN).min(MAX_PAGE);
    while !ranges.is_empty() {
        crate::store::budget::check()?;
        for open in &mut ranges {
            let rows = source.page(query, &open.range, open.after, page, now)?;
            open.exhausted = rows.len() < page;
            for row in &rows {
                let s = row.stored;
                open.after = (s.salience, s.decays_from, s.key);
                // Most rows cannot make the cut: their bound says so
                // without their decay profile.
                let most = open.bound.at_most(s.salience, s.decays_from, now_micros);
                if most < min || top.excludes_up_to(most) {
                    continue;
                }
                let current = source.salience_now(row, now)?;
                if current >= min {
                    top.offer(Rank {
                        salience: current,
                        layer: s.layer,
                        created_at: row.created_at,
                        key: s.key,
                    });
                }
            }
        }
        let mut still = Vec::with_capacity(ranges.len());
        for open in ranges {
            if open.exhausted {
                continue;
            }
            // What the rest of this stored value's tier can have now, then
            // what the records stored lower can.
            let (salience, decays_from, _) = open.after;
            let tier = open.bound.at_most(salience, decays_from, now_micros);
            let settled = (tier < min || top.excludes_up_to(tier)) && {
                let at_least = top.least_kept().unwrap_or(min).max(min);
                match source.next_below(query, &open.range, salience, at_least)? {
                    None => true,
                    Some(below) => top.excludes_up_to(below),
                }
            };
            if !settled {
                still.push(open);
            }
        }
        ranges = still;
        page = page.saturating_mul(2).min(MAX_PAGE);
    }
    Ok(top.into_sorted())
}

impl Words {
    /// The ways to match the query, tried in turn; the last one always
    /// answers.
    /// - Every term rare: every match, BM25.
    /// - Rare and common terms: the rare terms alone (which must fill the
    ///   answer); then the rare terms' matches followed by the newest
    ///   visible matches of the common terms (relevance 0).
    /// - Only common terms: their newest visible matches, each a full
    ///   match.
    fn tiers(&self, limit: usize) -> Vec<Vec<Part<'_>>> {
        let newest = COMMON_QUERY_CANDIDATES.max(limit);
        let (common, rare): (Vec<&Term>, Vec<&Term>) = self.terms.iter().partition(|t| t.common);
        if rare.is_empty() {
            vec![vec![Part::Newest(common, newest, 1.0)]]
        } else if common.is_empty() {
            vec![vec![Part::Bm25(rare)]]
        } else {
            vec![
                vec![Part::Bm25(rare.clone())],
                vec![Part::Bm25(rare), Part::Newest(common, newest, 0.0)],
            ]
        }
    }
}

/// How one part of a way of matching reads its terms.
enum Part<'a> {
    /// Every visible match of these terms, ranked by BM25.
    Bm25(Vec<&'a Term>),
    /// The newest this many visible matches of any of these terms, each
    /// with this relevance.
    Newest(Vec<&'a Term>, usize, f64),
}

/// The text candidates of one way of matching: each record's stored state
/// and relevance (a record an earlier part found is not taken again).
fn text_candidates(words: &Words, tier: &[Part<'_>], bm25: &Bm25) -> Vec<(Stored, f64)> {
    let mut found: Vec<(Stored, f64)> = Vec::new();
    let mut at: HashMap<i64, usize> = HashMap::new();
    for part in tier {
        match part {
            Part::Bm25(terms) => {
                let mut seen_here = HashSet::new();
                for term in terms {
                    let idf = words.idf(term.postings.len());
                    for p in &term.postings {
                        let weight = idf
                            * bm25.saturation(
                                p.frequency,
                                p.length.max(1) as f64,
                                words.average_length,
                            );
                        let key = p.stored.key;
                        match at.get(&key) {
                            Some(&i) if seen_here.contains(&key) => found[i].1 += weight,
                            Some(_) => {}
                            None => {
                                at.insert(key, found.len());
                                seen_here.insert(key);
                                found.push((p.stored, weight));
                            }
                        }
                    }
                }
            }
            Part::Newest(terms, n, relevance) => {
                let mut newest: Vec<&Stored> = terms
                    .iter()
                    .flat_map(|t| t.postings.iter().map(|p| &p.stored))
                    .filter(|s| !at.contains_key(&s.key))
                    .collect();
                newest.sort_unstable_by_key(|s| std::cmp::Reverse(s.key));
                newest.dedup_by_key(|s| s.key);
                for stored in newest.into_iter().take(*n) {
                    at.insert(stored.key, found.len());
                    found.push((*stored, *relevance));
                }
            }
        }
    }
    found
}

/// Ranked retrieval: with a text query, the first way of matching that
/// fills the whole answer (as the first page has it, so every page takes
/// the same one), else the last.
fn ranked<S: RankingSource + ?Sized>(
    source: &S,
    query: &RecordQuery,
    bounds: &HashMap<i64, DecayBound>,
    now: Timestamp,
) -> Result<(Vec<Rank>, HashMap<i64, Signals>), StoreError> {
    let Some(text) = &query.text else {
        return scored(source, query, bounds, None, None, now);
    };
    if query.memory_types.is_empty() {
        return Ok((Vec::new(), HashMap::new()));
    }
    let words = Words::read(source, query, text)?;
    let tiers = words.tiers(query.answer_limit);
    let first_page = query.after.is_none() && query.limit == query.answer_limit;
    let last = tiers.len() - 1;
    // Turns are ranked with what surrounds them, by the terms whose
    // document frequency is known (a common term's is not always).
    let known: Vec<&Term> = words.terms.iter().filter(|t| t.count.is_some()).collect();
    let names: Vec<String> = known.iter().map(|t| t.name.clone()).collect();
    let in_turns = TermWeights {
        names: &names,
        idf: known
            .iter()
            .map(|t| words.idf(t.count.map_or(0, |c| c.docs) as usize))
            .collect(),
        average_length: words.average_length,
        asks_when: text.asks_when(),
    };
    let with_turns = query.memory_types.contains(&MemoryType::Episodic);
    // Exact when the combinations of common terms to read are few enough;
    // else the ways of matching below, with the relevance over every term
    // of their candidates when the common terms are counted.
    let mut relevance: Option<HashMap<i64, f64>> = None;
    if let Some(exact) = Exact::new(&words, &query.bm25) {
        match exact.candidates(source, query, bounds, now)? {
            Matched::Exactly {
                mut candidates,
                answer,
            } => {
                // Turns rank again in context; else the first page was
                // ranked already.
                if first_page && !with_turns {
                    return Ok(answer);
                }
                if with_turns {
                    candidates = in_context(source, query, &in_turns, candidates)?;
                }
                let unmatched = exact.unmatched(&query.bm25);
                return scored(
                    source,
                    query,
                    bounds,
                    Some(candidates),
                    Some(&unmatched),
                    now,
                );
            }
            Matched::TooMany(found) => relevance = Some(found),
        }
    }
    for (i, tier) in tiers.iter().enumerate() {
        let mut candidates = text_candidates(&words, tier, &query.bm25);
        if let Some(relevance) = &relevance {
            // Each candidate is among a term's postings, read and scored.
            candidates.retain_mut(|(stored, r)| match relevance.get(&stored.key) {
                Some(&whole) => {
                    *r = whole;
                    true
                }
                None => false,
            });
        }
        if with_turns {
            candidates = in_context(source, query, &in_turns, candidates)?;
        }
        if i < last {
            // A narrower way stands only when it fills the whole answer,
            // as the first page has it.
            let whole = RecordQuery {
                limit: query.answer_limit,
                after: None,
                ..query.clone()
            };
            let (top, signals) =
                scored(source, &whole, bounds, Some(candidates.clone()), None, now)?;
            if top.len() < query.answer_limit {
                continue;
            }
            if first_page {
                return Ok((top, signals));
            }
        }
        return scored(source, query, bounds, Some(candidates), None, now);
    }
    unreachable!("the last way of matching always answers")
}

/// A candidate and what bounds its score.
struct Candidate {
    key: i64,
    stored: Option<Stored>,
    /// Its relevance; when `relevance_exact` is false, the most it can be.
    relevance: f64,
    relevance_exact: bool,
    /// Similarity to the query vector (`None` without one); when
    /// `vector_exact` is false, the most it can be.
    vector: Option<f64>,
    vector_exact: bool,
    bound: f64,
}

/// The best `limit` of the candidates: the text candidates given (`None`:
/// no text query), the visible records with a vector, or, with neither,
/// the records of the selective filter. With `unmatched`, a record with a
/// vector that is not a text candidate gets its relevance from its text.
pub(super) fn scored<S: RankingSource + ?Sized>(
    source: &S,
    query: &RecordQuery,
    bounds: &HashMap<i64, DecayBound>,
    text: Option<Vec<(Stored, f64)>>,
    unmatched: Option<&Unmatched<'_>>,
    now: Timestamp,
) -> Result<(Vec<Rank>, HashMap<i64, Signals>), StoreError> {
    let mut top = TopK::for_query(query);
    let mut signals: HashMap<i64, Signals> = HashMap::new();
    if query.memory_types.is_empty() || query.limit == 0 {
        return Ok((top.into_sorted(), signals));
    }
    let with_text = text.is_some();
    let mut candidates: Vec<Candidate> = text
        .unwrap_or_default()
        .into_iter()
        .map(|(stored, relevance)| Candidate {
            key: stored.key,
            stored: Some(stored),
            relevance,
            vector: query.vector.as_ref().map(|_| 0.0),
            vector_exact: true,
            relevance_exact: true,
            bound: 0.0,
        })
        .collect();
    if let Some(vector) = &query.vector {
        let at: HashMap<i64, usize> = candidates
            .iter()
            .enumerate()
            .map(|(i, c)| (c.key, i))
            .collect();
        for hit in source.vector_hits(query, vector)? {
            match at.get(&hit.key) {
                Some(&i) => {
                    candidates[i].vector = Some(hit.similarity);
                    candidates[i].vector_exact = hit.exact;
                }
                None => candidates.push(Candidate {
                    key: hit.key,
                    stored: hit.stored,
                    relevance: unmatched.map_or(0.0, |u| u.most),
                    vector: Some(hit.similarity),
                    vector_exact: hit.exact,
                    relevance_exact: unmatched.is_none(),
                    bound: 0.0,
                }),
            }
        }
    } else if !with_text {
        candidates.extend(
            source
                .filter_matches(query)?
                .into_iter()
                .map(|stored| Candidate {
                    key: stored.key,
                    stored: Some(stored),
                    relevance: 0.0,
                    vector: None,
                    vector_exact: true,
                    relevance_exact: true,
                    bound: 0.0,
                }),
        );
    }
    // A candidate whose relevance is only bounded has no more than the best
    // text candidate (see `Exact`).
    let best = candidates
        .iter()
        .filter(|c| c.relevance_exact)
        .map(|c| c.relevance)
        .fold(0.0f64, f64::max);
    let text_signal = |relevance: f64| with_text.then(|| relative(relevance, best));
    let now_micros = to_micros(&now);
    for c in &mut candidates {
        let most = match c.stored {
            Some(s) => bounds.get(&s.layer).map_or(s.salience, |b| {
                b.at_most(s.salience, s.decays_from, now_micros)
            }),
            None => query.max_salience,
        };
        c.bound = Signals {
            text: text_signal(c.relevance),
            vector: c.vector,
            salience: most,
        }
        .score(&query.weights, query.max_salience);
    }
    candidates.sort_unstable_by(|a, b| b.bound.total_cmp(&a.bound));

    // Looked at in growing chunks: one read for many on a backend where a
    // read is a round trip.
    let mut start = 0;
    let mut chunk = query.limit.clamp(16, MAX_PAGE);
    'chunks: while start < candidates.len() {
        crate::store::budget::check()?;
        let end = (start + chunk).min(candidates.len());
        let slice = &candidates[start..end];
        if top.excludes_up_to(slice[0].bound) {
            break;
        }
        let keys: Vec<i64> = slice.iter().map(|c| c.key).collect();
        let now_of = source.current(&keys, now)?;
        let relevance_of = match unmatched {
            Some(u) => {
                let bounded: Vec<i64> = slice
                    .iter()
                    .filter(|c| !c.relevance_exact)
                    .map(|c| c.key)
                    .collect();
                source
                    .texts(&bounded)?
                    .into_iter()
                    .map(|(key, text)| (key, u.words.relevance(&text, u.bm25)))
                    .collect()
            }
            None => HashMap::new(),
        };
        for c in slice {
            if top.excludes_up_to(c.bound) {
                break 'chunks;
            }
            let Some(current) = now_of.get(&c.key) else {
                continue;
            };
            if current.stored < query.min_salience || current.salience < query.min_salience {
                continue;
            }
            let similarity = match (&query.vector, c.vector_exact) {
                (Some(vector), false) => Some(source.similarity(c.key, vector)?),
                _ => c.vector,
            };
            let relevance = if c.relevance_exact {
                c.relevance
            } else {
                relevance_of.get(&c.key).copied().unwrap_or(0.0)
            };
            let record = Signals {
                text: text_signal(relevance),
                vector: similarity,
                salience: current.salience,
            };
            top.offer(Rank {
                salience: record.score(&query.weights, query.max_salience),
                layer: current.layer,
                created_at: current.created_at,
                key: c.key,
            });
            signals.insert(c.key, record);
        }
        start = end;
        chunk = chunk.saturating_mul(2).min(MAX_PAGE);
    }
    let top = top.into_sorted();
    let kept: HashSet<i64> = top.iter().map(|r| r.key).collect();
    signals.retain(|key, _| kept.contains(key));
    Ok((top, signals))
}
