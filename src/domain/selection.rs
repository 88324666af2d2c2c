//! Multi-solution selection: when a retrieval returns competing procedures
//! (competence or plan_graph records), rank them and say how sure the
//! choice is.
//!
//! Each candidate's score is the mean of three signals in [0, 1]:
//! applicability (how well it fits the caller's context, or its confidence
//! when there is no context or it states no conditions), observed success
//! rate, and recency of reinforcement (halving every 30 days). Confidence
//! is the normalised gap between the best and second-best scores.

use serde::Serialize;
use serde_json::{Map, Value};

use super::payload::Payload;
use super::record::MemoryRecord;
use super::time::Timestamp;

/// Half-life of the recency signal.
pub const RECENCY_HALF_LIFE_SECONDS: f64 = 30.0 * 24.0 * 3600.0;

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Selection {
    /// Candidates, best first.
    pub selected: Vec<MemoryRecord>,
    pub confidence: f64,
    pub needs_more: bool,
    /// One entry per candidate, in the order of `selected`.
    pub scores: Vec<CandidateScore>,
}

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct CandidateScore {
    pub id: String,
    pub score: f64,
    pub applicability: f64,
    pub success_rate: f64,
    pub recency: f64,
}

/// Ranks the competence and plan_graph records among `records`; `None`
/// when there are none.
pub fn select(
    records: &[MemoryRecord],
    context: Option<&Map<String, Value>>,
    now: Timestamp,
    threshold: f64,
) -> Option<Selection> {
    let mut scored: Vec<(CandidateScore, &MemoryRecord)> = records
        .iter()
        .filter_map(|record| score(record, context, now).map(|s| (s, record)))
        .collect();
    if scored.is_empty() {
        return None;
    }
    // Stable order for equal scores: higher salience, then id.
    scored.sort_by(|(a, ra), (b, rb)| {
        b.score
            .total_cmp(&a.score)
            .then(rb.salience.total_cmp(&ra.salience))
            .then(ra.id.cmp(&rb.id))
    });
    let confidence = confidence(&scored.iter().map(|(s, _)| s.score).collect::<Vec<_>>());
    let (scores, selected) = scored.into_iter().map(|(s, r)| (s, r.clone())).unzip();
    Some(Selection {
        selected,
        confidence,
        needs_more: confidence < threshold,
        scores,
    })
}

/// `(best - second) / best`; a lone candidate's confidence is its own
/// score. `scores` is sorted best first.
pub fn confidence(scores: &[f64]) -> f64 {
    match scores {
        [] => 0.0,
        [only] => only.clamp(0.0, 1.0),
        [best, second, ..] if *best > 0.0 => ((best - second) / best).clamp(0.0, 1.0),
        _ => 0.0,
    }
}

/// The three signals of one candidate; `None` for records that are not
/// procedures.
pub fn score(
    record: &MemoryRecord,
    context: Option<&Map<String, Value>>,
    now: Timestamp,
) -> Option<CandidateScore> {
    let (conditions, success_rate) = match &record.payload {
        Payload::Competence(competence) => {
            let conditions: Vec<(&String, &Value)> = competence
                .triggers
                .iter()
                .flat_map(|t| t.conditions.iter())
                .collect();
            let success_rate = competence.performance.as_ref().map_or(0.0, |p| {
                p.success_rate.unwrap_or_else(|| {
                    let total = p.success_count as f64 + p.failure_count as f64;
                    if total == 0.0 {
                        0.0
                    } else {
                        p.success_count as f64 / total
                    }
                })
            });
            (conditions, success_rate)
        }
        Payload::PlanGraph(plan) => {
            let conditions: Vec<(&String, &Value)> = plan.constraints.iter().collect();
            let success_rate = plan
                .metrics
                .as_ref()
                .and_then(|m| m.failure_rate)
                .map_or(0.0, |failure| 1.0 - failure);
            (conditions, success_rate)
        }
        _ => return None,
    };
    let applicability = match context {
        Some(context) if !conditions.is_empty() => {
            let met = conditions
                .iter()
                .filter(|(key, value)| context.get(key.as_str()) == Some(*value))
                .count();
            met as f64 / conditions.len() as f64
        }
        _ => record.confidence,
    }
    .clamp(0.0, 1.0);
    let success_rate = success_rate.clamp(0.0, 1.0);
    let recency = recency(record.lifecycle.last_reinforced_at, now);
    Some(CandidateScore {
        id: record.id.clone(),
        score: (applicability + success_rate + recency) / 3.0,
        applicability,
        success_rate,
        recency,
    })
}

/// 1.0 when reinforced now, halving every 30 days; a reinforcement in the
/// future counts as now.
pub fn recency(last_reinforced_at: Timestamp, now: Timestamp) -> f64 {
    let age = (now - last_reinforced_at).num_milliseconds().max(0) as f64 / 1000.0;
    (-age / RECENCY_HALF_LIFE_SECONDS).exp2()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::new_record::NewRecord;
    use crate::domain::policy::Policy;
    use crate::domain::time::parse_rfc3339;
    use serde_json::json;

    fn now() -> Timestamp {
        parse_rfc3339("2026-06-01T00:00:00Z").unwrap()
    }

    fn record(id: &str, body: Value) -> MemoryRecord {
        let new: NewRecord = serde_json::from_value(body).unwrap();
        new.into_record(
            &Policy::default(),
            &crate::domain::record::Attribution::new("t", "test"),
            now(),
            || id.to_string(),
        )
        .unwrap()
    }

    fn skill(id: &str, rate: f64, conditions: Value) -> MemoryRecord {
        record(
            id,
            json!({
                "type": "competence", "sensitivity": "low", "confidence": 0.5,
                "payload": {"kind": "competence", "skill_name": id,
                    "triggers": [{"signal": "s", "conditions": conditions}],
                    "performance": {"success_count": 1, "failure_count": 0, "success_rate": rate}}
            }),
        )
    }

    #[test]
    fn recency_halves_every_thirty_days() {
        let earlier = now() - chrono::Duration::days(30);
        assert!((recency(earlier, now()) - 0.5).abs() < 1e-9);
        assert_eq!(recency(now() + chrono::Duration::days(1), now()), 1.0);
    }

    #[test]
    fn confidence_is_the_normalised_gap() {
        assert!((confidence(&[0.8, 0.6]) - 0.25).abs() < 1e-9);
        assert_eq!(confidence(&[0.9]), 0.9);
        assert_eq!(confidence(&[0.0, 0.0]), 0.0);
        assert_eq!(confidence(&[]), 0.0);
    }

    #[test]
    fn without_context_applicability_is_the_confidence() {
        let s = score(&skill("a", 0.9, json!({"lang": "go"})), None, now()).unwrap();
        assert_eq!(s.applicability, 0.5);
        assert_eq!(s.success_rate, 0.9);
        assert_eq!(s.recency, 1.0);
        assert!((s.score - (0.5 + 0.9 + 1.0) / 3.0).abs() < 1e-12);
    }

    #[test]
    fn context_applicability_is_the_share_of_conditions_met() {
        let context = json!({"lang": "go", "os": "linux"});
        let record = skill("a", 0.9, json!({"lang": "go", "os": "mac", "arch": "x86"}));
        let s = score(&record, context.as_object(), now()).unwrap();
        assert!((s.applicability - 1.0 / 3.0).abs() < 1e-12);
        let no_conditions = skill("b", 0.9, json!({}));
        let s = score(&no_conditions, context.as_object(), now()).unwrap();
        assert_eq!(s.applicability, 0.5);
    }

    #[test]
    fn plans_use_one_minus_failure_rate() {
        let plan = record(
            "p",
            json!({
                "type": "plan_graph", "sensitivity": "low",
                "payload": {"kind": "plan_graph", "plan_id": "p", "metrics": {"failure_rate": 0.25}}
            }),
        );
        assert_eq!(score(&plan, None, now()).unwrap().success_rate, 0.75);
    }

    #[test]
    fn selection_ranks_best_first_and_flags_close_calls() {
        let records = vec![
            skill("weak", 0.2, json!({})),
            skill("strong", 1.0, json!({})),
        ];
        let selection = select(&records, None, now(), 0.7).unwrap();
        assert_eq!(selection.selected[0].id, "strong");
        assert_eq!(selection.scores[0].id, "strong");
        assert!(
            selection.needs_more,
            "gap {} is below 0.7",
            selection.confidence
        );
        let lone = select(&records[1..], None, now(), 0.7).unwrap();
        assert!(!lone.needs_more);
        let facts = vec![record(
            "f",
            json!({"type": "semantic", "sensitivity": "low",
            "payload": {"kind": "semantic", "subject": "a", "predicate": "b"}}),
        )];
        assert!(select(&facts, None, now(), 0.7).is_none());
    }
}
