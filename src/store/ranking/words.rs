//! The terms of a text query as a caller's slice has them: each term's
//! visible postings (all of a rare term's, the newest of a common one's),
//! its document frequency, and the statistics BM25 takes from the slice.

use super::engine::{COMMON_QUERY_CANDIDATES, COMMON_WORD_MATCHES};
use super::source::{Posting, RankingSource, RecordText, TermCount, TermsIn};
use crate::domain::analysis::term_frequency;
use crate::domain::relevance::Bm25;
use crate::domain::retrieval::RecordQuery;
use crate::domain::search::TextQuery;
use crate::store::error::StoreError;

/// A query term and its visible postings (newest first): all of them for
/// a rare term; the newest, at least as many as a common term's part of
/// the answer can take, for a common one.
pub(super) struct Term {
    pub name: String,
    pub postings: Vec<Posting>,
    pub common: bool,
    /// How many visible records have it and the most times one has had
    /// it: from its postings for a rare term, the backend's counts for a
    /// common one, if it keeps them.
    pub count: Option<TermCount>,
}

/// The terms of a text query as the caller's slice has them, and the
/// statistics BM25 takes from that slice.
pub(super) struct Words {
    pub terms: Vec<Term>,
    /// Visible documents, and their average length.
    pub docs: f64,
    pub average_length: f64,
    /// The terms, to find in a record's text.
    pub finder: TermsIn,
}

impl Words {
    pub(super) fn read<S: RankingSource + ?Sized>(
        source: &S,
        query: &RecordQuery,
        text: &TextQuery,
    ) -> Result<Words, StoreError> {
        let newest = COMMON_QUERY_CANDIDATES.max(query.answer_limit);
        let totals = source.totals(query)?;
        let names: Vec<String> = text
            .terms()
            .iter()
            .map(|quoted| quoted.trim_matches('"').to_string())
            .collect();
        // A small slice is read whole, once, rather than each term looked
        // up among everyone's records; either way a term has the same
        // postings.
        let mut from_slice = if totals.docs.max(0) as usize <= query.scan_records {
            source.slice(query, &names)?
        } else {
            None
        };
        // Without filters, what the backend counts of a term is how many
        // visible records have it: a term counted in many needs only its
        // newest matches read, not as many as make it common. (No term is
        // common among fewer records than that.)
        let known: Vec<Option<TermCount>> = if from_slice.is_none()
            && query.filters.is_empty()
            && query.min_salience <= 0.0
            && totals.docs >= COMMON_WORD_MATCHES as i64
        {
            source.frequencies(query, &names, false)?
        } else {
            vec![None; names.len()]
        };
        let mut terms = Vec::with_capacity(names.len());
        for (i, term) in names.into_iter().enumerate() {
            crate::store::budget::check()?;
            let (postings, common) = match &mut from_slice {
                Some(all) => {
                    let mut postings = std::mem::take(&mut all[i]);
                    let common = postings.len() >= COMMON_WORD_MATCHES;
                    if common {
                        postings.truncate(newest);
                    }
                    (postings, common)
                }
                None => match known[i] {
                    Some(count) if count.docs >= COMMON_WORD_MATCHES as u64 => {
                        (source.postings(query, &term, newest, newest)?.0, true)
                    }
                    _ => source.postings(query, &term, COMMON_WORD_MATCHES, newest)?,
                },
            };
            let count = if common {
                known[i]
            } else {
                Some(TermCount {
                    docs: postings.len() as u64,
                    most: postings
                        .iter()
                        .map(|p| p.frequency as u32)
                        .max()
                        .unwrap_or(1),
                })
            };
            terms.push(Term {
                name: term,
                postings,
                common,
                count,
            });
        }
        // A common term whose count is not known yet: counted if kept,
        // else the backend is asked to keep it.
        let common: Vec<String> = terms
            .iter()
            .filter(|t| t.common && t.count.is_none())
            .map(|t| t.name.clone())
            .collect();
        if !common.is_empty() {
            let counted = source.frequencies(query, &common, true)?;
            for (term, count) in terms
                .iter_mut()
                .filter(|t| t.common && t.count.is_none())
                .zip(counted)
            {
                term.count = count;
            }
        }
        let (docs, average_length) = if terms.iter().any(|t| t.count.is_some()) {
            let most = terms
                .iter()
                .map(|t| t.count.map_or(0, |c| c.docs) as usize)
                .max()
                .unwrap_or(0);
            // Never fewer documents than a term has postings (the totals
            // and the postings are read apart).
            let docs = (totals.docs.max(0) as f64).max(most as f64);
            let average = if totals.docs > 0 {
                (totals.tokens.max(0) as f64 / totals.docs as f64).max(1.0)
            } else {
                1.0
            };
            (docs, average)
        } else {
            (0.0, 1.0)
        };
        let names: Vec<String> = terms.iter().map(|t| t.name.clone()).collect();
        Ok(Words {
            terms,
            docs,
            average_length,
            finder: TermsIn::new(&names),
        })
    }

    /// Whether every term's document frequency is known: then a record's
    /// relevance can be computed from its text alone ([`Words::relevance`]).
    pub(super) fn all_counted(&self) -> bool {
        self.terms.iter().all(|t| t.count.is_some())
    }

    /// The relevance of a record with `text`: BM25 over every term of the
    /// query, each weighed by its document frequency.
    pub(super) fn relevance(&self, text: &RecordText, bm25: &Bm25) -> f64 {
        let mut sum = 0.0;
        let length = text.length.max(1) as f64;
        self.finder.each(&text.distinct, |i| {
            let term = &self.terms[i];
            let tf = term_frequency(text.repeats.as_deref(), &term.name);
            let idf = self.idf(term.count.map_or(0, |c| c.docs) as usize);
            sum += idf * bm25.saturation(tf, length, self.average_length);
        });
        sum
    }

    /// BM25 inverse document frequency of a term in `n` of the visible
    /// documents.
    pub(super) fn idf(&self, n: usize) -> f64 {
        let n = n as f64;
        (1.0 + (self.docs - n + 0.5) / (n + 0.5)).ln()
    }
}
