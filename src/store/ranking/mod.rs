//! What ranking a retrieval's answer takes on either backend: a record's
//! place in the answer ([`Rank`]), the best `limit` so far ([`TopK`]), the
//! most a stored salience can still be worth now ([`DecayBound`]), and the
//! cut of an answer to its byte budget ([`within_budget`]).

pub(crate) mod engine;
mod exact;
pub mod source;
pub(crate) mod turns;
mod words;

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

use crate::domain::record::MemoryRecord;
use crate::domain::relevance::{Score, Signals};
use crate::domain::retrieval::{records_within, Cursor, RecordQuery};
use crate::domain::time::{to_micros, Timestamp};
use crate::store::error::StoreError;
use crate::store::records::RecordPage;

pub use engine::query_records;

/// Pages never read more rows than this at once.
pub(crate) const MAX_PAGE: usize = 4096;

/// A record's place in the answer: salience descending, then layer order,
/// then newest, then most recently stored.
///
/// Ranked retrieval (`engine.rs`) puts the score in `salience`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rank {
    pub salience: f64,
    pub layer: i64,
    pub created_at: i64,
    pub key: i64,
}

impl Rank {
    /// `Less` when `self` comes first in the answer.
    fn order(&self, other: &Rank) -> Ordering {
        other
            .salience
            .total_cmp(&self.salience)
            .then(self.layer.cmp(&other.layer))
            .then(other.created_at.cmp(&self.created_at))
            .then(other.key.cmp(&self.key))
    }
}

impl PartialEq for Rank {
    fn eq(&self, other: &Self) -> bool {
        self.order(other) == Ordering::Equal
    }
}

impl Eq for Rank {}

impl PartialOrd for Rank {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Greater = later in the answer, so a max-heap keeps the worst on top.
impl Ord for Rank {
    fn cmp(&self, other: &Self) -> Ordering {
        self.order(other)
    }
}

/// The best `limit` ranks offered so far, of those after `after`.
pub(crate) struct TopK {
    limit: usize,
    after: Option<Rank>,
    heap: BinaryHeap<Rank>,
}

impl TopK {
    /// The top of `query`'s answer: its limit, after its cursor.
    pub fn for_query(query: &RecordQuery) -> Self {
        let after = query.after.map(|c| Rank {
            salience: c.salience,
            layer: c.layer,
            created_at: c.created_at,
            key: c.key,
        });
        TopK::new(query.limit, after)
    }

    fn new(limit: usize, after: Option<Rank>) -> Self {
        TopK {
            limit,
            after,
            heap: BinaryHeap::with_capacity(limit.saturating_add(1).min(MAX_PAGE)),
        }
    }

    pub fn offer(&mut self, rank: Rank) {
        if self.limit == 0 || self.after.is_some_and(|after| rank <= after) {
            return;
        }
        if self.heap.len() < self.limit {
            self.heap.push(rank);
        } else if self.heap.peek().is_some_and(|worst| rank < *worst) {
            self.heap.pop();
            self.heap.push(rank);
        }
    }

    /// Whether no record with current salience at most `bound` can get
    /// in. A tie could still win on layer or age, so it must be strictly
    /// below the last kept.
    pub fn excludes_up_to(&self, bound: f64) -> bool {
        self.least_kept().is_some_and(|worst| worst > bound)
    }

    /// The current salience of the last rank kept once the top is full:
    /// a record stored lower cannot get in, since decay only lowers it.
    pub fn least_kept(&self) -> Option<f64> {
        if self.heap.len() < self.limit {
            return None;
        }
        self.heap.peek().map(|worst| worst.salience)
    }

    pub fn into_sorted(self) -> Vec<Rank> {
        self.heap.into_sorted_vec()
    }

    #[cfg(test)]
    fn into_keys(self) -> Vec<i64> {
        self.into_sorted().into_iter().map(|r| r.key).collect()
    }
}

/// How fast the records of a memory type can decay at the slowest.
#[derive(Debug, Clone, Copy)]
pub struct DecayBound {
    pub max_half_life_seconds: i64,
    pub max_min_salience: f64,
}

impl DecayBound {
    /// The most a record stored at `salience`, exact at `decays_from`, can
    /// have at `now`: the slowest exponential decay of the type (linear
    /// decay is never slower), or the highest floor. Rounded up a little,
    /// so floating point cannot make it too tight.
    pub fn at_most(&self, salience: f64, decays_from: i64, now: i64) -> f64 {
        if decays_from >= now {
            return salience;
        }
        // Whole milliseconds, as decay itself counts them: never more
        // elapsed time than decay saw, so never a tighter bound.
        let elapsed = ((now - decays_from) / 1000) as f64 / 1000.0;
        let decayed = salience * (-elapsed / self.max_half_life_seconds.max(1) as f64).exp2();
        let floor = self.max_min_salience.min(salience);
        (decayed.max(floor) * (1.0 + 1e-9) + 1e-12).min(salience)
    }
}

/// Loads the ranked records, best first, while the answer stays within
/// `query.max_bytes` and `query.page_size` records (always at least one
/// record, so every record can be read); the rest is left to a next page,
/// which starts after the last record returned.
///
/// `signals` tells each record's signals (salience not normalised), for
/// its entry in `scores`.
pub(crate) fn within_budget(
    query: &RecordQuery,
    ranked: Vec<Rank>,
    now: Timestamp,
    sizes: &HashMap<i64, usize>,
    load: impl FnOnce(&[i64]) -> Result<Vec<MemoryRecord>, StoreError>,
    signals: impl Fn(&Rank) -> Signals,
) -> Result<RecordPage, StoreError> {
    let keys: Vec<i64> = ranked.iter().map(|r| r.key).collect();
    let fits = records_within(
        ranked
            .iter()
            .map(|rank| sizes.get(&rank.key).copied().unwrap_or(0)),
        query.max_bytes,
        query.page_size,
    );
    let next = (fits < ranked.len()).then(|| {
        let last = ranked[fits - 1];
        Cursor {
            as_of: to_micros(&now),
            salience: last.salience,
            layer: last.layer,
            created_at: last.created_at,
            key: last.key,
            remaining: query.limit - fits,
        }
    });
    let records = load(&keys[..fits])?;
    let scores = records
        .iter()
        .zip(&ranked)
        .map(|(record, rank)| {
            let signals = signals(rank);
            Score {
                id: record.id.clone(),
                score: signals.score(&query.weights, query.max_salience),
                text: signals.text,
                vector: signals.vector,
                salience: signals.salience,
            }
        })
        .collect();
    Ok(RecordPage {
        records,
        scores,
        next,
    })
}

/// A small deterministic generator for tests, so a failure names its
/// seed.
#[cfg(test)]
pub(crate) struct Lcg(pub u64);

#[cfg(test)]
impl Lcg {
    pub fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// In [0, 1).
    pub fn unit(&mut self) -> f64 {
        self.next() as f64 / (1u64 << 31) as f64
    }
}

/// A rank, for tests that build answers by hand.
#[cfg(test)]
pub(crate) fn rank(salience: f64, layer: i64, created_at: i64, key: i64) -> Rank {
    Rank {
        salience,
        layer,
        created_at,
        key,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::decay::{salience_at, Anchor, DecayState};
    use crate::domain::record::{DecayCurve, DecayProfile};
    use crate::domain::time::from_micros;

    #[test]
    fn the_top_keeps_the_best_and_knows_when_a_range_cannot_beat_it() {
        let mut top = TopK::new(2, None);
        for r in [
            rank(0.5, 0, 1, 1),
            rank(0.9, 0, 1, 2),
            rank(0.7, 0, 1, 3),
            rank(0.7, 1, 1, 4),
        ] {
            top.offer(r);
        }
        assert_eq!(top.into_keys(), vec![2, 3]);

        let mut top = TopK::new(1, None);
        assert!(!top.excludes_up_to(0.0), "nothing kept yet");
        assert_eq!(top.least_kept(), None);
        top.offer(rank(0.7, 1, 10, 5));
        assert!(top.excludes_up_to(0.6));
        assert!(!top.excludes_up_to(0.7), "a tie may still win");
        assert_eq!(top.least_kept(), Some(0.7));
        let mut two = TopK::new(2, None);
        two.offer(rank(0.7, 1, 10, 5));
        assert_eq!(two.least_kept(), None, "room left: anything may get in");
    }

    #[test]
    fn the_decay_bound_is_never_below_what_a_record_can_have() {
        let bound = DecayBound {
            max_half_life_seconds: 3600,
            max_min_salience: 0.2,
        };
        let hour = 3_600_000_000;
        assert_eq!(bound.at_most(0.8, i64::MAX, 0), 0.8, "pinned");
        assert!((bound.at_most(0.8, 0, hour) - 0.4).abs() < 1e-6);
        assert!(
            (bound.at_most(0.8, 0, 10 * hour) - 0.2).abs() < 1e-6,
            "floor"
        );
        assert_eq!(bound.at_most(0.1, 0, 10 * hour), 0.1, "below every floor");
        // Any profile within the bound, either curve, decays at least as
        // fast.
        for (curve, half_life, floor) in [
            (DecayCurve::Exponential, 3600, 0.0),
            (DecayCurve::Exponential, 60, 0.2),
            (DecayCurve::Linear, 3600, 0.1),
            (DecayCurve::Linear, 600, 0.0),
        ] {
            let profile = DecayProfile {
                curve,
                half_life_seconds: half_life,
                min_salience: floor,
                max_age_seconds: None,
                reinforcement_gain: 0.1,
            };
            let t0 = from_micros(0);
            let state = DecayState {
                anchor: Anchor {
                    salience: 0.9,
                    at: t0,
                },
                profile: &profile,
                pinned: false,
                created_at: t0,
            };
            for swept in [0, 60, 1800] {
                let swept_at = t0 + chrono::Duration::seconds(swept);
                let stored = salience_at(&state, swept_at);
                for later in [0, 1, 300, 3600, 86_400] {
                    let now = swept_at + chrono::Duration::seconds(later);
                    let current = salience_at(&state, now);
                    let most = bound.at_most(stored, to_micros(&swept_at), to_micros(&now));
                    assert!(
                        current <= most,
                        "{curve:?} {half_life} {floor} {swept} {later}: {current} > {most}"
                    );
                }
            }
        }
    }
}
