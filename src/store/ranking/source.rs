//! What the ranking engine asks of a backend: narrow reads of what one
//! caller may see. Every method keeps to the query's visibility (types,
//! sensitivity ceiling, scopes, status) and its filters inside the lookup
//! itself, so its cost follows the caller's matches, never everyone's.
//! How (which index, which statement) is the backend's; what to read, in
//! which order and when to stop is the engine's (`engine.rs`).

use std::any::Any;
use std::collections::HashMap;

use super::DecayBound;
use crate::domain::analysis::term_frequency;
use crate::domain::decay::{salience_at, Anchor, DecayState};
use crate::domain::record::{MemoryRecord, MemoryType, Sensitivity};
use crate::domain::retrieval::RecordQuery;
use crate::domain::time::Timestamp;
use crate::domain::vector::QueryVector;
use crate::store::error::StoreError;
use crate::store::rows::Columns;

/// Which of its sensitivities and types a caller of every scope looks its
/// terms up with in a backend's full-text index. Each is a facet token in
/// most records, as costly to follow as a common term; the lookup carries
/// one only where leaving it to the conditions on the records would look
/// at more than twice the records the caller may see. A caller limited to
/// scopes has its scopes as facets of their own, and keeps every facet
/// that narrows at all.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Facets {
    pub sensitivities: bool,
    pub types: bool,
}

impl Facets {
    /// Every facet that narrows at all: the query's sensitivities below
    /// the highest, its types unless all.
    pub fn all(query: &RecordQuery) -> Facets {
        Facets {
            sensitivities: query.max_sensitivity < Sensitivity::Hyper,
            types: query.memory_types.len() < MemoryType::ALL.len(),
        }
    }

    /// Whether the backend's counts of records by type and sensitivity
    /// ([`Facets::choose`]) decide the facets of `query`.
    pub fn counted(query: &RecordQuery) -> bool {
        let all = Facets::all(query);
        query.scopes.is_none() && (all.sensitivities || all.types)
    }

    /// The facets of `query` (a caller of every scope) from the number of
    /// records of each layer and sensitivity (`(layer, sensitivity,
    /// docs)`, of the statuses the query sees, in any grouping).
    pub fn choose(
        query: &RecordQuery,
        counts: impl IntoIterator<Item = (i64, i64, i64)>,
    ) -> Facets {
        let all = Facets::all(query);
        let ceiling = query.max_sensitivity.rank() as i64;
        let (mut every, mut sensitive, mut typed, mut visible) = (0i64, 0i64, 0i64, 0i64);
        for (layer, sensitivity, docs) in counts {
            let admitted = sensitivity <= ceiling;
            let of_type = query.memory_types.iter().any(|t| t.layer() as i64 == layer);
            every += docs;
            sensitive += i64::from(admitted) * docs;
            typed += i64::from(of_type) * docs;
            visible += i64::from(admitted && of_type) * docs;
        }
        let near = |looked_at: i64| looked_at <= visible.saturating_mul(2);
        let none = Facets {
            sensitivities: false,
            types: false,
        };
        if near(every) {
            none
        } else if near(sensitive) && all.sensitivities {
            Facets {
                sensitivities: true,
                ..none
            }
        } else if near(typed) && all.types {
            Facets {
                types: true,
                ..none
            }
        } else {
            all
        }
    }
}

/// A visible record as an index gives it: enough to bound what it can
/// score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stored {
    pub key: i64,
    /// Its type's layer.
    pub layer: i64,
    /// The salience stored at the last sweep or change (decay only lowers
    /// it from there) and when that value was exact.
    pub salience: f64,
    pub decays_from: i64,
}

impl Stored {
    /// Columns 0 to 3: key, layer, stored salience, `decays_from`.
    pub(crate) fn read(row: &impl Columns) -> Result<Stored, StoreError> {
        Ok(Stored {
            key: row.at(0)?,
            layer: row.at(1)?,
            salience: row.at(2)?,
            decays_from: row.at(3)?,
        })
    }
}

/// The salience now of a record whose decay profile columns start at
/// `first`: curve, half-life, floor, maximum age, gain, pinned, and the
/// salience and time decay is measured from; `stored` stands for that
/// salience when the profile has none of its own.
pub(crate) fn current_salience(
    row: &impl Columns,
    first: usize,
    stored: f64,
    created_at: i64,
    now: Timestamp,
) -> Result<f64, StoreError> {
    let profile = row.decay_profile(first)?;
    let state = DecayState {
        anchor: Anchor {
            salience: row.at::<Option<f64>>(first + 6)?.unwrap_or(stored),
            at: row.time(first + 7)?,
        },
        profile: &profile,
        pinned: row.at(first + 5)?,
        created_at: crate::domain::time::from_micros(created_at),
    };
    Ok(salience_at(&state, now))
}

/// A row of a salience range, in range order.
#[derive(Debug, Clone, Copy)]
pub struct PageRow {
    pub stored: Stored,
    pub created_at: i64,
    /// Its salience now, when the backend read its decay profile with it.
    pub current: Option<f64>,
}

/// A visible record with a term, and what BM25 needs of its text.
#[derive(Debug, Clone, Copy)]
pub struct Posting {
    pub stored: Stored,
    /// How many terms its text has.
    pub length: i64,
    /// How many times the term is in its text.
    pub frequency: f64,
}

impl Posting {
    /// The posting of `term` in a record whose text has `length` terms
    /// and these repeated ones (`domain::analysis::Analysed::repeats`).
    pub fn of(stored: Stored, length: i64, repeats: Option<&str>, term: &str) -> Posting {
        Posting {
            stored,
            length,
            frequency: term_frequency(repeats, term),
        }
    }
}

/// A query's terms, to find in records' distinct terms
/// (`Analysed::distinct`, separated by spaces).
pub(crate) struct TermsIn {
    /// Each non-empty term's index and finder.
    finders: Vec<(usize, memchr::memmem::Finder<'static>)>,
}

impl TermsIn {
    pub fn new(terms: &[String]) -> TermsIn {
        TermsIn {
            finders: terms
                .iter()
                .enumerate()
                .filter(|(_, t)| !t.is_empty())
                .map(|(i, t)| (i, memchr::memmem::Finder::new(t.as_bytes()).into_owned()))
                .collect(),
        }
    }

    /// Calls `found` with the index of each term `distinct` holds as a
    /// whole word.
    pub fn each(&self, distinct: &str, mut found: impl FnMut(usize)) {
        let hay = distinct.as_bytes();
        for (i, finder) in &self.finders {
            let n = finder.needle().len();
            let whole = |at: usize| {
                (at == 0 || hay[at - 1] == b' ') && (at + n == hay.len() || hay[at + n] == b' ')
            };
            if finder.find_iter(hay).any(whole) {
                found(*i);
            }
        }
    }
}

/// How many records a caller may see, and how many terms their texts
/// have together.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Totals {
    pub docs: i64,
    pub tokens: i64,
}

/// How many of a caller's records have a term, and the most times one
/// record has had it (never lowered, so it bounds any record's).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TermCount {
    pub docs: u64,
    pub most: u32,
}

/// What BM25 needs of a record's text to score any term in it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordText {
    /// How many terms it has.
    pub length: i64,
    /// Its terms, each once, space separated.
    pub distinct: String,
    /// Its repeated terms with how often (`Analysed::repeats`).
    pub repeats: Option<String>,
}

/// A visible record with a vector.
#[derive(Debug, Clone, Copy)]
pub struct VectorHit {
    pub key: i64,
    /// `None` when the vector index alone was read: then the salience is
    /// bounded by the most any record can have.
    pub stored: Option<Stored>,
    /// Its similarity to the query vector, or when `exact` is false the
    /// most it can be.
    pub similarity: f64,
    pub exact: bool,
}

/// A session of a conversation: the conversation in its scope, and the
/// session's id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SessionOf {
    pub conversation_id: String,
    pub scope: Option<String>,
    pub session_id: String,
}

impl SessionOf {
    /// Whether `query`'s caller may see the session's scope.
    pub fn seen_by(&self, query: &RecordQuery) -> bool {
        match (&query.scopes, &self.scope) {
            (None, _) | (Some(_), None) => true,
            (Some(scopes), Some(scope)) => scopes.contains(scope),
        }
    }
}

/// A record that is a turn, and its session.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnAt {
    pub key: i64,
    pub session: SessionOf,
}

/// A visible turn of a session, with what ranking it in context needs.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionTurn {
    pub stored: Stored,
    pub session: SessionOf,
    pub speaker: String,
    /// Whether its text says when.
    pub timed: bool,
    /// How many terms its text has.
    pub length: i64,
    /// How many times each of the query's terms is in its text.
    pub frequencies: Vec<f64>,
    /// Whether it passes the query's filters (else it is only context).
    pub passes: bool,
}

impl SessionTurn {
    /// What [`SessionTurn::read`] reads, columns 0 to 9: of `records r`,
    /// of `conversation_turns t`, and the stored salience and
    /// `decays_from` of the table `stored` (where the backend keeps them).
    pub fn columns(stored: &str) -> String {
        format!(
            "r.key, r.layer, {stored}.salience, {stored}.decays_from, r.search_length, \
             r.search_repeats, t.speaker, t.timed, r.created_by, r.created_at"
        )
    }

    /// A turn of `session` as [`SessionTurn::columns`] read it, with the
    /// frequencies of the query's terms in its text.
    pub(crate) fn read(
        row: &impl Columns,
        query: &RecordQuery,
        session: &SessionOf,
        frequencies: Vec<f64>,
    ) -> Result<SessionTurn, StoreError> {
        let speaker: String = row.at(6)?;
        let created_by: Option<String> = row.at(8)?;
        let passes = SessionTurn::passes(
            query,
            &session.conversation_id,
            &speaker,
            created_by.as_deref(),
            row.at(9)?,
        );
        Ok(SessionTurn {
            stored: Stored::read(row)?,
            session: session.clone(),
            speaker,
            timed: row.at(7)?,
            length: row.at(4)?,
            frequencies,
            passes,
        })
    }

    /// Whether a turn with these columns passes `query`'s filters: its
    /// conversation (the record's `about`), speaker, creator and creation
    /// time. A query with tags passes none: a turn found only through
    /// its session is then context, never a candidate of its own.
    pub fn passes(
        query: &RecordQuery,
        about: &str,
        speaker: &str,
        created_by: Option<&str>,
        created_at: i64,
    ) -> bool {
        let f = &query.filters;
        f.tags.is_empty()
            && f.admits(crate::domain::record::MemoryType::Episodic)
            && f.about().is_none_or(|a| a == about)
            && (f.speakers.is_empty() || f.speakers.iter().any(|s| s == speaker))
            && (f.sources.is_empty()
                || created_by.is_some_and(|c| f.sources.iter().any(|s| s == c)))
            && f.created_after
                .is_none_or(|t| created_at > crate::domain::time::to_micros(&t))
            && f.created_before
                .is_none_or(|t| created_at < crate::domain::time::to_micros(&t))
    }
}

/// What a record is now.
#[derive(Debug, Clone, Copy)]
pub struct Current {
    pub layer: i64,
    pub created_at: i64,
    /// Stored salience, and salience now.
    pub stored: f64,
    pub salience: f64,
}

/// One index range the salience order is read from: what the source that
/// made it reads it by, which is the source's own business (the engine
/// only hands it back to that source).
pub struct Range(Box<dyn Any>);

impl Range {
    pub fn new<T: Any>(range: T) -> Range {
        Range(Box::new(range))
    }

    /// What the range was made of, as the source that made it reads it.
    pub fn of<T: Any>(&self) -> Result<&T, StoreError> {
        self.0.downcast_ref().ok_or_else(|| {
            StoreError::Database("a range was read by a source that did not make it".into())
        })
    }
}

pub trait RankingSource {
    /// How fast each layer's records can decay at the slowest; a layer
    /// with no records has none.
    fn decay_bounds(&self) -> Result<HashMap<i64, DecayBound>, StoreError>;

    /// The ranges that together hold every visible record in the order of
    /// stored salience, each with the bound of its records' decay.
    fn ranges(
        &self,
        query: &RecordQuery,
        bounds: &HashMap<i64, DecayBound>,
    ) -> Vec<(Range, DecayBound)>;

    /// The next `limit` visible records of `range` after `after` (stored
    /// salience, decays_from, key; descending); a backend that reads the
    /// decay profiles with them gives each its salience at `now`.
    fn page(
        &self,
        query: &RecordQuery,
        range: &Range,
        after: (f64, i64, i64),
        limit: usize,
        now: Timestamp,
    ) -> Result<Vec<PageRow>, StoreError>;

    /// The highest stored salience in `range` below `below` and at least
    /// `at_least`, if any (of any record: it bounds the visible ones).
    fn next_below(
        &self,
        query: &RecordQuery,
        range: &Range,
        below: f64,
        at_least: f64,
    ) -> Result<Option<f64>, StoreError>;

    /// The salience now of a row of [`RankingSource::page`].
    fn salience_now(&self, row: &PageRow, now: Timestamp) -> Result<f64, StoreError>;

    /// The visible records with `term` (an analyser's term): all of them,
    /// when fewer than `common`; else the newest `newest` of them (at
    /// least), newest first, and `true`.
    fn postings(
        &self,
        query: &RecordQuery,
        term: &str,
        common: usize,
        newest: usize,
    ) -> Result<(Vec<Posting>, bool), StoreError>;

    /// The visible postings of each of `terms`, each newest first, from
    /// the caller's whole slice read in one pass (for a caller that may
    /// see few records; see [`TermsIn`]); `None` when the backend reads
    /// only through its index.
    fn slice(
        &self,
        query: &RecordQuery,
        terms: &[String],
    ) -> Result<Option<Vec<Vec<Posting>>>, StoreError>;

    /// What the caller may see, counted: every record of its scopes (and
    /// the unscoped ones), sensitivities and types, retracted ones when
    /// asked for.
    fn totals(&self, query: &RecordQuery) -> Result<Totals, StoreError>;

    /// How many of the records [`RankingSource::totals`] counts have each
    /// of `terms`, for the terms the backend keeps counts of
    /// (`store::term_counts`); `None` for the others, which the backend is
    /// asked to count from now on when `count_missing`.
    fn frequencies(
        &self,
        query: &RecordQuery,
        terms: &[String],
        count_missing: bool,
    ) -> Result<Vec<Option<TermCount>>, StoreError>;

    /// The visible records that have every one of `terms` (an analyser's
    /// terms; at least one), with their texts.
    fn conjunction(
        &self,
        query: &RecordQuery,
        terms: &[String],
    ) -> Result<Vec<(Stored, RecordText)>, StoreError>;

    /// The texts of these records (those still stored).
    fn texts(&self, keys: &[i64]) -> Result<HashMap<i64, RecordText>, StoreError>;

    /// The visible records with a vector.
    fn vector_hits(
        &self,
        query: &RecordQuery,
        vector: &QueryVector,
    ) -> Result<Vec<VectorHit>, StoreError>;

    /// The exact similarity of record `key`'s vector (0 without one).
    fn similarity(&self, key: i64, vector: &QueryVector) -> Result<f64, StoreError>;

    /// The visible records of a selective filter.
    fn filter_matches(&self, query: &RecordQuery) -> Result<Vec<Stored>, StoreError>;

    /// What these records are now (those still stored).
    fn current(&self, keys: &[i64], now: Timestamp) -> Result<HashMap<i64, Current>, StoreError>;

    /// The serialised size of these records' payloads.
    fn sizes(&self, keys: &[i64]) -> Result<HashMap<i64, usize>, StoreError>;

    /// These records whole, in this order.
    fn load(&self, keys: &[i64], now: Timestamp) -> Result<Vec<MemoryRecord>, StoreError>;

    /// Of these records, the turns, with their sessions.
    fn turns_of(&self, keys: &[i64]) -> Result<Vec<TurnAt>, StoreError>;

    /// The turns of `sessions` the caller may see (its sensitivity,
    /// scopes and statuses; not its filters), each session's in
    /// conversation order, sessions in the order given, with the
    /// frequency of each of `terms` in their text.
    fn session_turns(
        &self,
        query: &RecordQuery,
        sessions: &[SessionOf],
        terms: &[String],
    ) -> Result<Vec<SessionTurn>, StoreError>;
}

#[cfg(test)]
mod tests {
    use super::TermsIn;

    fn found(distinct: &str, terms: &[&str]) -> Vec<usize> {
        let terms: Vec<String> = terms.iter().map(|t| t.to_string()).collect();
        let mut at = Vec::new();
        TermsIn::new(&terms).each(distinct, |i| at.push(i));
        at
    }

    #[test]
    fn only_whole_words_are_terms_of_a_record() {
        assert_eq!(found("deploy run walk", &["walk", "deploy"]), vec![0, 1]);
        assert_eq!(
            found("deploy run walk", &["dep", "deploys", "un", "wal"]),
            Vec::<usize>::new()
        );
        assert_eq!(found("rerun run", &["run"]), vec![0]);
        assert_eq!(found("", &["a"]), Vec::<usize>::new());
        assert_eq!(found("a", &[]), Vec::<usize>::new());
        assert_eq!(found("a b", &["", "b"]), vec![1]);
        let long = "x".repeat(64);
        let longer = "x".repeat(65);
        assert_eq!(found(&format!("{long} y"), &[&longer, &long]), vec![1]);
        assert_eq!(found(&format!("{longer} y"), &[&long, "y"]), vec![1]);
    }
}
