//! Exact matching of a text query with common terms (terms in
//! [`COMMON_WORD_MATCHES`] visible records or more) whose counts the
//! backend keeps: the candidates are every record that can make the
//! answer, found without reading every match of the common terms.
//!
//! [`COMMON_WORD_MATCHES`]: super::engine::COMMON_WORD_MATCHES

use std::collections::HashMap;

use super::engine::scored;
use super::source::{RankingSource, Stored, TermCount};
use super::words::Words;
use super::{DecayBound, Rank};
use crate::domain::relevance::{relative, Bm25, Signals};
use crate::domain::retrieval::RecordQuery;
use crate::domain::time::Timestamp;
use crate::store::error::StoreError;

/// Most common terms a query is matched exactly with: each combination of
/// them may be read.
const MAX_COMMON_TERMS: usize = 10;

/// Most records the combinations of one query may hold (as the counts of
/// their terms bound them) for it to be matched exactly: each is read and
/// scored, a few microseconds apiece.
const MAX_EXACT_RECORDS: u64 = 4096;

/// A text query with common terms whose counts the backend keeps, matched
/// exactly: its candidates are every record that can make the answer.
///
/// A record with none of the rarer terms has only common ones, and its
/// relevance is at most the sum of what each of them can add
/// ([`Words::most_added`]). So the records of a combination of common
/// terms need reading only when that sum could reach what the answer
/// needs: first more than the best relevance found (the answer's text
/// scores are relative to the best), then a score at least the last of
/// the answer so far. Each combination is read once, as the records that
/// have all of its terms ([`RankingSource::conjunction`]), the smallest
/// combinations first (a larger one's records are among a smaller one's).
pub(super) struct Exact<'a> {
    words: &'a Words,
    /// The common terms' places in `words.terms`, and the most each adds
    /// to any record's relevance.
    common: Vec<usize>,
    most: Vec<f64>,
}

impl<'a> Exact<'a> {
    pub fn new(words: &'a Words, bm25: &Bm25) -> Option<Exact<'a>> {
        let common: Vec<usize> = (0..words.terms.len())
            .filter(|&i| words.terms[i].common)
            .collect();
        if common.is_empty() || common.len() > MAX_COMMON_TERMS || !words.all_counted() {
            return None;
        }
        let most = common.iter().map(|&i| words.most_added(i, bm25)).collect();
        Some(Exact {
            words,
            common,
            most,
        })
    }

    /// The places in `common` of the terms of combination `mask` (bit
    /// `i`: the `i`-th common term).
    fn of(&self, mask: u32) -> impl Iterator<Item = usize> {
        (0..self.common.len()).filter(move |b| mask & (1 << b) != 0)
    }

    /// The most a record can have whose common terms are those of `mask`.
    fn most_of(&self, mask: u32) -> f64 {
        self.of(mask).map(|b| self.most[b]).sum()
    }

    /// What a candidate the text candidates left out can have.
    pub fn unmatched(&self, bm25: &'a Bm25) -> Unmatched<'a> {
        Unmatched {
            words: self.words,
            bm25,
            most: self.most_of((1u32 << self.common.len()) - 1),
        }
    }

    /// The smallest combinations whose bound `reaches` and that no
    /// combination in `read` holds.
    fn due(&self, read: &[u32], reaches: impl Fn(f64) -> bool) -> Vec<u32> {
        let mut masks: Vec<u32> = (1..1u32 << self.common.len()).collect();
        masks.sort_by_key(|m| m.count_ones());
        let mut due: Vec<u32> = Vec::new();
        for mask in masks {
            let held = read.iter().chain(&due).any(|&r| r & mask == r);
            if !held && reaches(self.most_of(mask)) {
                due.push(mask);
            }
        }
        due
    }

    /// The most records the combination `mask` can hold: the fewest any
    /// of its terms is in.
    fn most_records(&self, mask: u32) -> u64 {
        self.of(mask)
            .map(|b| self.words.terms[self.common[b]].count.map_or(0, |c| c.docs))
            .min()
            .unwrap_or(0)
    }

    /// Every record that can make the answer, with its relevance over
    /// every term of the query; or, when the combinations to read could
    /// hold more than [`MAX_EXACT_RECORDS`], the relevance of those read.
    pub fn candidates<S: RankingSource + ?Sized>(
        &self,
        source: &S,
        query: &RecordQuery,
        bounds: &HashMap<i64, DecayBound>,
        now: Timestamp,
    ) -> Result<Matched, StoreError> {
        let bm25 = &query.bm25;
        let words = self.words;
        let mut found: HashMap<i64, (Stored, f64)> = HashMap::new();
        if query.answer_limit == 0 {
            return Ok(Matched::Exactly {
                candidates: Vec::new(),
                answer: (Vec::new(), HashMap::new()),
            });
        }
        // Every match of the rarer terms and the newest of the common ones
        // (read already), scored over every term.
        let mut first: Vec<Stored> = words
            .terms
            .iter()
            .flat_map(|t| t.postings.iter().map(|p| p.stored))
            .collect();
        first.sort_unstable_by_key(|s| s.key);
        first.dedup_by_key(|s| s.key);
        for (stored, relevance) in words.rescored(source, bm25, first)? {
            found.insert(stored.key, (stored, relevance));
        }
        tracing::debug!(first = found.len(), most = ?self.most, "exact: first candidates");
        let mut read: Vec<u32> = Vec::new();
        let mut budget = MAX_EXACT_RECORDS;
        // Whether the combinations were read (else they could hold too
        // many records).
        let mut take = |found: &mut HashMap<i64, (Stored, f64)>,
                        read: &mut Vec<u32>,
                        due: Vec<u32>| {
            let most: u64 = due.iter().map(|&m| self.most_records(m)).sum();
            if most > budget {
                return Ok(false);
            }
            budget -= most;
            for mask in due {
                crate::store::budget::check()?;
                let names: Vec<String> = self
                    .of(mask)
                    .map(|b| words.terms[self.common[b]].name.clone())
                    .collect();
                let rows = source.conjunction(query, &names)?;
                tracing::debug!(terms = ?names, records = rows.len(), "exact: combination read");
                for (stored, text) in rows {
                    found
                        .entry(stored.key)
                        .or_insert_with(|| (stored, words.relevance(&text, bm25)));
                }
                read.push(mask);
            }
            Ok::<_, StoreError>(true)
        };
        let best_of = |found: &HashMap<i64, (Stored, f64)>| {
            found.values().map(|f| f.1).fold(0.0f64, f64::max)
        };
        // The best relevance: every record that could have more than the
        // best found is read.
        loop {
            let best = best_of(&found);
            let due = self.due(&read, |most| most > best);
            if due.is_empty() {
                break;
            }
            if !take(&mut found, &mut read, due)? {
                return Ok(Matched::TooMany(relevance_of(&found)));
            }
        }
        let best = best_of(&found);
        let salience = most_salience(source, query, bounds)?;
        let whole = RecordQuery {
            limit: query.answer_limit,
            after: None,
            ..query.clone()
        };
        let unmatched = self.unmatched(bm25);
        // Then every record whose score could reach the last of the answer.
        let answer = loop {
            let candidates: Vec<(Stored, f64)> = found.values().copied().collect();
            let (top, signals) = scored(
                source,
                &whole,
                bounds,
                Some(candidates),
                Some(&unmatched),
                now,
            )?;
            let least = match top.last() {
                Some(last) if top.len() >= query.answer_limit => Some(last.salience),
                _ => None,
            };
            let due = self.due(&read, |most| {
                let score = Signals {
                    text: Some(relative(most, best)),
                    // A record with a vector is a candidate already.
                    vector: query.vector.as_ref().map(|_| 0.0),
                    salience,
                }
                .score(&query.weights, query.max_salience);
                least.is_none_or(|least| score >= least)
            });
            tracing::debug!(
                ?least,
                best,
                salience,
                due = due.len(),
                candidates = found.len(),
                "exact: answer"
            );
            if due.is_empty() {
                break (top, signals);
            }
            if !take(&mut found, &mut read, due)? {
                return Ok(Matched::TooMany(relevance_of(&found)));
            }
        };
        Ok(Matched::Exactly {
            candidates: found.into_values().collect(),
            answer,
        })
    }
}

impl Words {
    /// `candidates` with their relevance over every term of the query,
    /// from their texts: a candidate found by its rarer terms gains what
    /// the common ones add (whose matches are not all read), and one found
    /// among a common term's newest matches has its true relevance.
    fn rescored<S: RankingSource + ?Sized>(
        &self,
        source: &S,
        bm25: &Bm25,
        candidates: Vec<Stored>,
    ) -> Result<Vec<(Stored, f64)>, StoreError> {
        let keys: Vec<i64> = candidates.iter().map(|s| s.key).collect();
        let texts = source.texts(&keys)?;
        Ok(candidates
            .into_iter()
            .filter_map(|stored| {
                let text = texts.get(&stored.key)?;
                Some((stored, self.relevance(text, bm25)))
            })
            .collect())
    }

    /// The most term `i` (counted) adds to any record's relevance: its
    /// weight at the most times one record has had it, in the shortest
    /// text. Rounded up a little, so floating point cannot make it too
    /// tight.
    fn most_added(&self, i: usize, bm25: &Bm25) -> f64 {
        let count = self.terms[i].count.unwrap_or(TermCount {
            docs: 0,
            most: u32::MAX,
        });
        let most = self.idf(count.docs as usize)
            * bm25.saturation(f64::from(count.most.max(1)), 1.0, self.average_length);
        most * (1.0 + 1e-9) + 1e-12
    }
}

/// What [`Exact::candidates`] found.
pub(super) enum Matched {
    /// Every record that can make the answer, with its relevance, and the
    /// first page of the answer they make (the query's `answer_limit`,
    /// no cursor).
    Exactly {
        candidates: Vec<(Stored, f64)>,
        answer: (Vec<Rank>, HashMap<i64, Signals>),
    },
    /// Too many to read: the relevance of every record read so far (each
    /// term's postings read, at least), by key.
    TooMany(HashMap<i64, f64>),
}

fn relevance_of(found: &HashMap<i64, (Stored, f64)>) -> HashMap<i64, f64> {
    found.iter().map(|(&key, &(_, r))| (key, r)).collect()
}

/// The highest stored salience of any record the query may see (decay
/// only lowers it from there).
fn most_salience<S: RankingSource + ?Sized>(
    source: &S,
    query: &RecordQuery,
    bounds: &HashMap<i64, DecayBound>,
) -> Result<f64, StoreError> {
    let mut most = 0.0f64;
    for (range, _) in source.ranges(query, bounds) {
        if let Some(top) = source.next_below(query, &range, f64::MAX, f64::MIN)? {
            most = most.max(top);
        }
    }
    Ok(most)
}

/// Candidates a ranking meets that the text candidates left out (records
/// with a vector), when the common terms' matches were not all read: each
/// has at most `most` relevance, exactly what `words` scores its text.
pub(super) struct Unmatched<'a> {
    pub words: &'a Words,
    pub bm25: &'a Bm25,
    pub most: f64,
}

#[cfg(test)]
mod tests {
    use super::super::source::{RecordText, TermCount, TermsIn};
    use super::super::words::Term;
    use super::super::Lcg;
    use super::*;

    #[test]
    fn a_terms_bound_is_never_below_what_it_adds_to_a_record() {
        let mut rng = Lcg(5);
        for _ in 0..20_000 {
            let bm25 = Bm25 {
                k1: rng.unit() * 3.0,
                b: rng.unit(),
            };
            let docs = 1 + rng.below(1_000_000);
            let count = TermCount {
                docs: 1 + rng.below(docs),
                most: 1 + rng.below(8) as u32,
            };
            let words = Words {
                terms: vec![Term {
                    name: "deploy".into(),
                    postings: Vec::new(),
                    common: true,
                    count: Some(count),
                }],
                docs: docs as f64,
                average_length: 1.0 + rng.unit() * 200.0,
                finder: TermsIn::new(&["deploy".to_string()]),
            };
            let most = words.most_added(0, &bm25);
            // Any record with the term: as often as the count allows, any
            // length from one term.
            let times = 1 + rng.below(u64::from(count.most));
            let length = times as i64 + rng.below(400) as i64;
            let repeats = (times > 1).then(|| format!("deploy {times}"));
            let text = RecordText {
                length,
                distinct: "deploy".into(),
                repeats,
            };
            let added = words.relevance(&text, &bm25);
            assert!(added > 0.0);
            assert!(
                added <= most,
                "{bm25:?} {count:?} length {length}: {added} > {most}"
            );
        }
    }
}
