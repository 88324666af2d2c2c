//! Turns of a conversation ranked in context. A turn alone is a short
//! text, and the words that say what it is about are often in the turn
//! before it ("What did you make?" / "A vase."). So the text candidates
//! that are turns are scored again with what the caller may see around
//! them:
//!
//! - BM25F: a turn's words, and its neighbouring visible turns' words at
//!   the weight `neighbours`, as two fields of one text;
//! - its session: `session_best` times the best such score in the
//!   session, plus `session_text` times the BM25 score of the session's
//!   whole visible text as one text;
//! - a turn by a speaker the query names scores `speaker` more (a share);
//!   a turn that says when scores `time` more for a query asking when.
//!
//! The sessions are those of the best text candidates (at most
//! [`MAX_SESSIONS`]); their visible turns can become candidates though
//! no word of the query is in them. Every statistic is the caller's: the
//! terms' document frequencies and the average length are those of the
//! query's [`super::engine`] words, and a session is read as the caller
//! may see it (a turn it may not see is no neighbour and adds nothing).

use std::collections::{HashMap, HashSet};

use super::source::{RankingSource, SessionOf, SessionTurn, Stored};
use crate::domain::analysis;
use crate::domain::record::MemoryType;
use crate::domain::relevance::{Bm25, TurnWeights};
use crate::domain::retrieval::RecordQuery;
use crate::store::error::StoreError;

/// Sessions of the best text candidates read whole.
pub(crate) const MAX_SESSIONS: usize = 48;

/// The best text candidates whose sessions are looked for (each one a
/// look-up, even where there are no turns).
const MAX_LOOKED_AT: usize = 64;

/// The query's terms as the context scoring weighs them.
pub(crate) struct TermWeights<'a> {
    /// The terms' names (analysed), and their inverse document frequency
    /// among the caller's records.
    pub names: &'a [String],
    pub idf: Vec<f64>,
    /// The caller's average text length.
    pub average_length: f64,
    /// Whether the query asks when.
    pub asks_when: bool,
}

/// `candidates` (record, text relevance) with the turns among them scored
/// in context, and the other visible turns of their sessions added.
pub(crate) fn in_context<S: RankingSource + ?Sized>(
    source: &S,
    query: &RecordQuery,
    terms: &TermWeights<'_>,
    candidates: Vec<(Stored, f64)>,
) -> Result<Vec<(Stored, f64)>, StoreError> {
    // Only episodes can be turns: a query that matched none reads nothing
    // more.
    let episodic = i64::from(MemoryType::Episodic.layer());
    if terms.names.is_empty() || !candidates.iter().any(|(s, _)| s.layer == episodic) {
        return Ok(candidates);
    }
    // The sessions of the best candidates, best first.
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    order.sort_by(|&a, &b| candidates[b].1.total_cmp(&candidates[a].1));
    let keys: Vec<i64> = order
        .iter()
        .filter(|&&i| candidates[i].0.layer == episodic)
        .take(MAX_LOOKED_AT)
        .map(|&i| candidates[i].0.key)
        .collect();
    let places = source.turns_of(&keys)?;
    let session_of: HashMap<i64, &SessionOf> = places.iter().map(|t| (t.key, &t.session)).collect();
    let mut sessions: Vec<SessionOf> = Vec::new();
    for key in &keys {
        if let Some(&session) = session_of.get(key) {
            if !sessions.contains(session) {
                sessions.push(session.clone());
                if sessions.len() == MAX_SESSIONS {
                    break;
                }
            }
        }
    }
    if sessions.is_empty() {
        return Ok(candidates);
    }
    let turns = source.session_turns(query, &sessions, terms.names)?;
    let scores = score_sessions(&turns, terms, &query.bm25, &query.turns);
    let mut result = candidates;
    let at: HashMap<i64, usize> = result
        .iter()
        .enumerate()
        .map(|(i, (s, _))| (s.key, i))
        .collect();
    let mut added = HashSet::new();
    for (turn, score) in turns.iter().zip(scores) {
        match at.get(&turn.stored.key) {
            Some(&i) => result[i].1 = score,
            // A turn no word of the query is in joins when it passes the
            // query's filters.
            None if turn.passes && score > 0.0 && added.insert(turn.stored.key) => {
                result.push((turn.stored, score));
            }
            None => {}
        }
    }
    Ok(result)
}

/// Each turn's score in context, in the order of `turns` (grouped by
/// session, each session's in conversation order).
pub(crate) fn score_sessions(
    turns: &[SessionTurn],
    terms: &TermWeights<'_>,
    bm25: &Bm25,
    weights: &TurnWeights,
) -> Vec<f64> {
    let query_terms: HashSet<&str> = terms.names.iter().map(String::as_str).collect();
    let mut scores = vec![0.0; turns.len()];
    // A conversation has few speakers and many turns.
    let mut named_speakers: HashMap<&str, bool> = HashMap::new();
    // Sessions: runs of the same session.
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    for i in 1..=turns.len() {
        if i == turns.len() || turns[i].session != turns[start].session {
            runs.push((start, i));
            start = i;
        }
    }
    let session_lengths: Vec<f64> = runs
        .iter()
        .map(|&(a, b)| turns[a..b].iter().map(|t| t.length as f64).sum())
        .collect();
    let average_session = if runs.is_empty() {
        1.0
    } else {
        session_lengths.iter().sum::<f64>() / runs.len() as f64
    };
    let average = terms.average_length.max(1.0);
    for (&(a, b), &session_length) in runs.iter().zip(&session_lengths) {
        let session = &turns[a..b];
        let mut best: f64 = 0.0;
        for (j, turn) in session.iter().enumerate() {
            let neighbours: Vec<&SessionTurn> = [j.checked_sub(1), Some(j + 1)]
                .into_iter()
                .flatten()
                .filter_map(|n| session.get(n))
                .collect();
            let context_length: f64 = neighbours.iter().map(|n| n.length as f64).sum();
            let own_norm = 1.0 - bm25.b + bm25.b * turn.length as f64 / average;
            let context_norm =
                1.0 - bm25.b + bm25.b * context_length / (average * neighbours.len().max(1) as f64);
            let mut score = 0.0;
            for (i, idf) in terms.idf.iter().enumerate() {
                let own = turn.frequencies.get(i).copied().unwrap_or(0.0);
                let around: f64 = neighbours
                    .iter()
                    .map(|n| n.frequencies.get(i).copied().unwrap_or(0.0))
                    .sum();
                let tf =
                    own / own_norm.max(1e-9) + weights.neighbours * around / context_norm.max(1e-9);
                if tf > 0.0 {
                    score += idf * tf * (bm25.k1 + 1.0) / (tf + bm25.k1);
                }
            }
            scores[a + j] = score;
            best = best.max(score);
        }
        let mut text = 0.0;
        for (i, idf) in terms.idf.iter().enumerate() {
            let tf: f64 = session
                .iter()
                .map(|t| t.frequencies.get(i).copied().unwrap_or(0.0))
                .sum();
            if tf > 0.0 {
                text += idf * bm25.saturation(tf, session_length, average_session);
            }
        }
        for (j, turn) in session.iter().enumerate() {
            let mut score =
                scores[a + j] + weights.session_best * best + weights.session_text * text;
            let named = *named_speakers
                .entry(turn.speaker.as_str())
                .or_insert_with(|| {
                    analysis::terms(&turn.speaker)
                        .iter()
                        .any(|t| query_terms.contains(t.as_str()))
                });
            if named {
                score *= 1.0 + weights.speaker;
            }
            if terms.asks_when && turn.timed {
                score *= 1.0 + weights.time;
            }
            scores[a + j] = score;
        }
    }
    scores
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(session: &str, speaker: &str, length: i64, frequencies: &[f64]) -> SessionTurn {
        SessionTurn {
            stored: Stored {
                key: 0,
                layer: i64::from(MemoryType::Episodic.layer()),
                salience: 1.0,
                decays_from: 0,
            },
            session: SessionOf {
                conversation_id: "c".into(),
                scope: None,
                session_id: session.into(),
            },
            speaker: speaker.into(),
            timed: false,
            length,
            frequencies: frequencies.to_vec(),
            passes: true,
        }
    }

    fn terms(names: &[String]) -> TermWeights<'_> {
        TermWeights {
            names,
            idf: vec![1.0; names.len()],
            average_length: 5.0,
            asks_when: false,
        }
    }

    #[test]
    fn a_turn_after_the_question_it_answers_scores_by_its_neighbour() {
        let names = vec!["make".to_string()];
        let turns = [
            turn("s1", "Bo", 5, &[1.0]),
            turn("s1", "Ann", 5, &[0.0]),
            turn("s1", "Bo", 5, &[0.0]),
            turn("s1", "Ann", 5, &[0.0]),
        ];
        let alone = TurnWeights {
            neighbours: 0.0,
            session_best: 0.0,
            session_text: 0.0,
            ..TurnWeights::default()
        };
        let scores = score_sessions(&turns, &terms(&names), &Bm25::default(), &alone);
        assert!(scores[0] > 0.0);
        assert_eq!(&scores[1..], [0.0, 0.0, 0.0]);
        let with = TurnWeights {
            neighbours: 0.3,
            ..alone
        };
        let scores = score_sessions(&turns, &terms(&names), &Bm25::default(), &with);
        // The answer after the question gains; a turn two away does not.
        assert!(scores[1] > 0.0 && scores[1] < scores[0]);
        assert_eq!(scores[2], 0.0);
    }

    #[test]
    fn a_session_that_matches_lifts_all_its_turns() {
        let names = vec!["pottery".to_string(), "class".to_string()];
        let turns = [
            turn("s1", "Ann", 5, &[1.0, 0.0]),
            turn("s1", "Bo", 5, &[0.0, 0.0]),
            turn("s1", "Ann", 5, &[0.0, 1.0]),
            turn("s2", "Ann", 5, &[0.0, 1.0]),
            turn("s2", "Bo", 5, &[0.0, 0.0]),
        ];
        let session = TurnWeights {
            neighbours: 0.0,
            session_best: 0.3,
            session_text: 0.3,
            ..TurnWeights::default()
        };
        let scores = score_sessions(&turns, &terms(&names), &Bm25::default(), &session);
        // Both words in session 1: its turns outrank session 2's alike.
        assert!(scores[2] > scores[3], "{scores:?}");
        assert!(scores[1] > scores[4], "{scores:?}");
    }

    #[test]
    fn named_speakers_and_when_questions_favour_their_turns() {
        let names = vec!["ann".to_string(), "dog".to_string()];
        let mut timed = turn("s1", "Bo", 5, &[0.0, 1.0]);
        timed.timed = true;
        let turns = [turn("s1", "Ann", 5, &[0.0, 1.0]), timed];
        let plain = TurnWeights {
            neighbours: 0.0,
            session_best: 0.0,
            session_text: 0.0,
            speaker: 0.5,
            time: 0.0,
        };
        let scores = score_sessions(&turns, &terms(&names), &Bm25::default(), &plain);
        assert!(scores[0] > scores[1], "{scores:?}");
        let when = TurnWeights {
            speaker: 0.0,
            time: 0.5,
            ..plain
        };
        let mut asking = terms(&names);
        asking.asks_when = true;
        let scores = score_sessions(&turns, &asking, &Bm25::default(), &when);
        assert!(scores[1] > scores[0], "{scores:?}");
    }
}
