//! How a retrieval with a query ranks records: one score blending text
//! relevance, vector similarity and current salience.
//!
//! Every signal is brought to [0, 1] first:
//! - text: the record's BM25 relevance divided by the best relevance among
//!   the visible records that match (so the best match has 1);
//! - vector: the cosine similarity of the record's embedding with the
//!   query's, below 0 counted as 0;
//! - salience: current salience divided by `policy.max_salience`.
//!
//! `score = (wt·text + wv·vector + ws·salience) / (wt + wv + ws)`, where a
//! signal the query did not ask for (no text, no vector) has its weight
//! left out of both sums, so a score is always within [0, 1].

use serde::{Deserialize, Serialize};

/// The weight of each signal (`[retrieval.weights]` in the config).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Weights {
    pub text: f64,
    pub vector: f64,
    pub salience: f64,
}

/// BM25's term frequency saturation (`k1`) and length normalisation
/// (`b`): `retrieval.bm25_k1`, `retrieval.bm25_b` (the defaults are
/// `config/default.toml`'s).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Bm25 {
    pub k1: f64,
    pub b: f64,
}

impl Default for Bm25 {
    fn default() -> Self {
        Bm25 { k1: 0.3, b: 0.1 }
    }
}

impl Bm25 {
    /// Why these cannot rank, if they cannot.
    pub fn check(&self) -> Result<(), String> {
        if !(self.k1.is_finite() && self.k1 >= 0.0 && self.k1 <= 10.0) {
            return Err("bm25_k1 must be from 0 to 10".into());
        }
        if !(self.b.is_finite() && (0.0..=1.0).contains(&self.b)) {
            return Err("bm25_b must be from 0 to 1".into());
        }
        Ok(())
    }

    /// A term's weight in a text: `tf` times in a text `length` terms
    /// long, where texts average `average` terms.
    pub fn saturation(&self, tf: f64, length: f64, average: f64) -> f64 {
        let norm = 1.0 - self.b + self.b * length / average.max(1e-9);
        tf * (self.k1 + 1.0) / (tf + self.k1 * norm)
    }
}

/// How a conversation's turns rank by what surrounds them
/// (`[retrieval.turns]`, the defaults `config/default.toml`'s; `docs/api.md`
/// says how each is used).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnWeights {
    /// The weight of the neighbouring turns' words in a turn's text.
    pub neighbours: f64,
    /// The share of the session's best turn's score added to each turn's.
    pub session_best: f64,
    /// The weight of the session's whole text, scored as one text.
    pub session_text: f64,
    /// A turn by a speaker the query names scores this much more (0.1:
    /// 10%).
    pub speaker: f64,
    /// A turn that says when, for a query that asks when.
    pub time: f64,
}

impl Default for TurnWeights {
    fn default() -> Self {
        TurnWeights {
            neighbours: 0.15,
            session_best: 0.2,
            session_text: 0.3,
            speaker: 0.4,
            time: 0.4,
        }
    }
}

impl TurnWeights {
    /// Why these cannot rank, if they cannot.
    pub fn check(&self) -> Result<(), String> {
        let all = [
            self.neighbours,
            self.session_best,
            self.session_text,
            self.speaker,
            self.time,
        ];
        if all
            .iter()
            .any(|w| !w.is_finite() || !(0.0..=10.0).contains(w))
        {
            return Err("every weight must be from 0 to 10".into());
        }
        Ok(())
    }
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            text: 1.0,
            vector: 1.0,
            salience: 0.25,
        }
    }
}

impl Weights {
    /// Why these weights cannot rank, if they cannot.
    pub fn check(&self) -> Result<(), String> {
        let all = [self.text, self.vector, self.salience];
        if all.iter().any(|w| !w.is_finite() || *w < 0.0) {
            return Err("every weight must be a finite number >= 0".into());
        }
        if self.text + self.vector == 0.0 {
            return Err("text and vector cannot both be 0: a query would not count".into());
        }
        Ok(())
    }
}

/// The signals of one record for one query: text and vector within
/// [0, 1], `None` for one the query did not ask for; salience as the
/// record has it (brought to [0, 1] by [`Signals::score`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Signals {
    pub text: Option<f64>,
    pub vector: Option<f64>,
    pub salience: f64,
}

impl Signals {
    /// The blended score, salience normalised against `max_salience`.
    pub fn score(&self, weights: &Weights, max_salience: f64) -> f64 {
        let mut sum = weights.salience * salience_signal(self.salience, max_salience);
        let mut total = weights.salience;
        for (signal, weight) in [(self.text, weights.text), (self.vector, weights.vector)] {
            if let Some(value) = signal {
                sum += weight * unit(value);
                total += weight;
            }
        }
        if total == 0.0 {
            0.0
        } else {
            sum / total
        }
    }
}

fn unit(value: f64) -> f64 {
    if value.is_nan() {
        0.0
    } else {
        value.clamp(0.0, 1.0)
    }
}

/// Relevance `value` brought to [0, 1] against the best `best`.
pub fn relative(value: f64, best: f64) -> f64 {
    if best > 0.0 && value > 0.0 {
        (value / best).min(1.0)
    } else {
        0.0
    }
}

/// Salience brought to [0, 1].
fn salience_signal(salience: f64, max_salience: f64) -> f64 {
    if max_salience > 0.0 {
        unit(salience / max_salience)
    } else {
        0.0
    }
}

/// What the answer says about each record it returns, in the same order.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Score {
    pub id: String,
    pub score: f64,
    /// `null` when the retrieval had no text query.
    pub text: Option<f64>,
    /// `null` when the retrieval had no query vector.
    pub vector: Option<f64>,
    /// Current salience, as stored (not normalised).
    pub salience: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_score_blends_only_the_signals_asked_for_and_stays_in_the_unit_interval() {
        let w = Weights::default();
        let text_only = Signals {
            text: Some(1.0),
            vector: None,
            salience: 0.0,
        };
        assert!((text_only.score(&w, 1.0) - 1.0 / 1.25).abs() < 1e-12);
        let both = Signals {
            text: Some(1.0),
            vector: Some(1.0),
            salience: 1.0,
        };
        assert!((both.score(&w, 1.0) - 1.0).abs() < 1e-12);
        let salience_only = Signals {
            text: None,
            vector: None,
            salience: 0.5,
        };
        assert!((salience_only.score(&w, 1.0) - 0.5).abs() < 1e-12);
        let wild = Signals {
            text: Some(f64::NAN),
            vector: Some(-3.0),
            salience: 7.0,
        };
        let s = wild.score(&w, 1.0);
        assert!((0.0..=1.0).contains(&s), "{s}");
        let none = Weights {
            text: 0.0,
            vector: 0.0,
            salience: 0.0,
        };
        assert_eq!(salience_only.score(&none, 1.0), 0.0);
    }

    #[test]
    fn a_better_match_outranks_a_more_salient_weaker_one_at_default_weights() {
        let w = Weights::default();
        let strong = Signals {
            text: Some(1.0),
            vector: None,
            salience: 0.1,
        };
        let weak = Signals {
            text: Some(0.6),
            vector: None,
            salience: 1.0,
        };
        assert!(strong.score(&w, 1.0) > weak.score(&w, 1.0));
    }

    #[test]
    fn weights_that_cannot_rank_are_refused() {
        assert!(Weights::default().check().is_ok());
        for bad in [
            Weights {
                text: -1.0,
                ..Weights::default()
            },
            Weights {
                salience: f64::INFINITY,
                ..Weights::default()
            },
            Weights {
                text: 0.0,
                vector: 0.0,
                salience: 1.0,
            },
        ] {
            assert!(bad.check().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn normalisation() {
        assert_eq!(relative(2.0, 4.0), 0.5);
        assert_eq!(relative(5.0, 4.0), 1.0);
        assert_eq!(relative(1.0, 0.0), 0.0);
        assert_eq!(salience_signal(0.5, 2.0), 0.25);
        assert_eq!(salience_signal(3.0, 2.0), 1.0);
    }
}
