//! Consolidation rules: how raw experience becomes durable knowledge,
//! deterministically (no model involved).
//!
//! - Episodic compression: an episode older than the configured age has its
//!   salience halved once (never below 0.05 through halving).
//! - Semantic extraction: the same event (`event_kind` and `summary`) seen
//!   in at least two episodes becomes a fact `{subject: event_kind,
//!   predicate: "observed", object: summary}`; later sightings reinforce it.
//! - Competence extraction: successful episodes whose tool graphs run the
//!   same tools in the same order, at least twice, become a skill named
//!   after the sequence; failures with that sequence count in its
//!   performance.
//! - Plan-graph extraction: an episode whose tool graph has three or more
//!   nodes becomes a plan: nodes from the tool calls, edges from
//!   `depends_on`.
//! - Duplicate resolution: active facts with the same subject, predicate,
//!   object and scope are merged into the oldest.
//!
//! A derived record is never more visible than its sources: it takes their
//! highest sensitivity, and their scope when they share one, otherwise the
//! dedicated scope [`MIXED_SCOPE`].

use super::payload::{EdgeKind, EpisodicPayload, Payload, PlanEdge, PlanGraphPayload, PlanNode};
use super::record::{MemoryRecord, Sensitivity};

/// Scope of records derived from sources in different scopes. Only callers
/// whose trust context allows every scope, or names this one, see them.
pub const MIXED_SCOPE: &str = "engram:consolidated";

/// Salience never goes below this through compression.
pub const COMPRESSION_FLOOR: f64 = 0.05;

/// Salience added when a consolidated record is seen again.
pub const REINFORCEMENT: f64 = 0.1;

/// Sightings needed before a fact or a skill is extracted.
pub const MIN_REPETITIONS: usize = 2;

/// Tool nodes an episode needs to become a plan.
pub const MIN_PLAN_NODES: usize = 3;

/// Predicate of facts extracted from repeated events.
pub const OBSERVED: &str = "observed";

/// Tag on every record consolidation creates.
pub const CONSOLIDATED_TAG: &str = "consolidated";

/// Halves a salience once, without pushing it below the floor (or lifting
/// one that is already under it).
pub fn compress(salience: f64) -> f64 {
    (salience / 2.0).max(COMPRESSION_FLOOR.min(salience))
}

/// A fact an episode observed: `(subject, object)` with predicate
/// [`OBSERVED`], one per distinct timeline event with a summary.
pub fn observed_facts(payload: &EpisodicPayload) -> Vec<(String, String)> {
    let mut facts: Vec<(String, String)> = Vec::new();
    for event in &payload.timeline {
        if let Some(summary) = event.summary.as_ref().filter(|s| !s.trim().is_empty()) {
            let fact = (event.event_kind.clone(), summary.clone());
            if !facts.contains(&fact) {
                facts.push(fact);
            }
        }
    }
    facts
}

/// The tools an episode ran, in order, as one key: `"read > edit > test"`.
pub fn tool_sequence(payload: &EpisodicPayload) -> Option<String> {
    if payload.tool_graph.is_empty() {
        return None;
    }
    Some(
        payload
            .tool_graph
            .iter()
            .map(|node| node.tool.as_str())
            .collect::<Vec<_>>()
            .join(" > "),
    )
}

/// The plan an episode's tool graph describes, if it has enough nodes.
/// Dependencies on nodes outside the graph are dropped.
pub fn plan_from(source: &MemoryRecord) -> Option<PlanGraphPayload> {
    let Payload::Episodic(episode) = &source.payload else {
        return None;
    };
    if episode.tool_graph.len() < MIN_PLAN_NODES {
        return None;
    }
    let ids: Vec<&str> = episode.tool_graph.iter().map(|n| n.id.as_str()).collect();
    let mut seen = std::collections::HashSet::new();
    let nodes: Vec<PlanNode> = episode
        .tool_graph
        .iter()
        .filter(|node| seen.insert(node.id.as_str()))
        .map(|node| PlanNode {
            id: node.id.clone(),
            op: node.tool.clone(),
            params: node.args.clone(),
            guards: None,
        })
        .collect();
    let edges = episode
        .tool_graph
        .iter()
        .flat_map(|node| {
            node.depends_on
                .iter()
                .filter(|dep| ids.contains(&dep.as_str()))
                .map(move |dep| PlanEdge {
                    from: dep.clone(),
                    to: node.id.clone(),
                    kind: EdgeKind::Data,
                })
        })
        .collect();
    Some(PlanGraphPayload {
        plan_id: format!("plan-{}", source.id),
        version: Some("1".to_string()),
        intent: tool_sequence(episode),
        constraints: serde_json::Map::new(),
        inputs_schema: None,
        outputs_schema: None,
        nodes,
        edges,
        metrics: None,
    })
}

/// Sensitivity and scope of a record derived from sources with these.
pub fn derived_visibility<'a>(
    sources: impl IntoIterator<Item = (Sensitivity, Option<&'a str>)>,
) -> (Sensitivity, Option<String>) {
    let mut sensitivity = Sensitivity::Public;
    let mut scope: Option<Option<&str>> = None;
    let mut mixed = false;
    for (s, source_scope) in sources {
        sensitivity = sensitivity.max(s);
        match scope {
            None => scope = Some(source_scope),
            Some(first) if first != source_scope => mixed = true,
            Some(_) => {}
        }
    }
    let scope = if mixed {
        Some(MIXED_SCOPE.to_string())
    } else {
        scope.flatten().map(str::to_string)
    };
    (sensitivity, scope)
}

/// The visibility a derived record keeps when more sources join it: never
/// less restrictive than before.
pub fn widen_visibility(
    current: (Sensitivity, Option<&str>),
    joining: (Sensitivity, Option<String>),
) -> (Sensitivity, Option<String>) {
    let sensitivity = current.0.max(joining.0);
    let scope = if current.1 == joining.1.as_deref() {
        current.1.map(str::to_string)
    } else {
        Some(MIXED_SCOPE.to_string())
    };
    (sensitivity, scope)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::payload::{TimelineEvent, ToolNode};
    use crate::domain::policy::{NewRecord, Policy};
    use crate::domain::record::Attribution;
    use crate::domain::time::parse_rfc3339;
    use serde_json::{json, Value};

    #[test]
    fn compression_halves_once_down_to_the_floor() {
        assert_eq!(compress(0.8), 0.4);
        assert_eq!(compress(0.06), 0.05);
        assert_eq!(compress(0.03), 0.03);
        assert_eq!(compress(0.0), 0.0);
    }

    fn node(id: &str, tool: &str, deps: &[&str]) -> ToolNode {
        ToolNode {
            id: id.into(),
            tool: tool.into(),
            args: json!({"n": id}),
            result: Value::Null,
            timestamp: parse_rfc3339("2026-01-01T00:00:00Z").unwrap(),
            depends_on: deps.iter().map(|d| d.to_string()).collect(),
        }
    }

    #[test]
    fn sequences_and_facts_come_from_the_episode() {
        let t = parse_rfc3339("2026-01-01T00:00:00Z").unwrap();
        let payload = EpisodicPayload {
            timeline: vec![
                TimelineEvent {
                    t,
                    event_kind: "error".into(),
                    reference: "r".into(),
                    summary: Some("disk full".into()),
                },
                TimelineEvent {
                    t,
                    event_kind: "error".into(),
                    reference: "r2".into(),
                    summary: Some("disk full".into()),
                },
                TimelineEvent {
                    t,
                    event_kind: "note".into(),
                    reference: "r3".into(),
                    summary: None,
                },
            ],
            tool_graph: vec![node("a", "read", &[]), node("b", "edit", &["a"])],
            ..EpisodicPayload::default()
        };
        assert_eq!(
            observed_facts(&payload),
            vec![("error".to_string(), "disk full".to_string())]
        );
        assert_eq!(tool_sequence(&payload).as_deref(), Some("read > edit"));
        assert_eq!(tool_sequence(&EpisodicPayload::default()), None);
    }

    #[test]
    fn a_plan_needs_three_nodes_and_keeps_inner_dependencies() {
        let new: NewRecord = serde_json::from_value(json!({
            "type": "episodic", "sensitivity": "low", "payload": {"kind": "episodic"}
        }))
        .unwrap();
        let mut episode = new
            .into_record(
                &Policy::default(),
                &Attribution::new("t", "t"),
                parse_rfc3339("2026-01-01T00:00:00Z").unwrap(),
                || "e1".into(),
            )
            .unwrap();
        let Payload::Episodic(payload) = &mut episode.payload else {
            panic!()
        };
        payload.tool_graph = vec![
            node("a", "read", &[]),
            node("b", "edit", &["a", "elsewhere"]),
        ];
        assert!(plan_from(&episode).is_none());
        let Payload::Episodic(payload) = &mut episode.payload else {
            panic!()
        };
        payload.tool_graph.push(node("c", "test", &["b"]));
        let plan = plan_from(&episode).unwrap();
        assert_eq!(plan.nodes.len(), 3);
        assert_eq!(plan.nodes[1].op, "edit");
        let edges: Vec<(&str, &str)> = plan
            .edges
            .iter()
            .map(|e| (e.from.as_str(), e.to.as_str()))
            .collect();
        assert_eq!(edges, [("a", "b"), ("b", "c")]);
        assert_eq!(plan.plan_id, "plan-e1");
    }

    #[test]
    fn derived_records_are_never_more_visible_than_their_sources() {
        let same = derived_visibility([
            (Sensitivity::Low, Some("p")),
            (Sensitivity::High, Some("p")),
        ]);
        assert_eq!(same, (Sensitivity::High, Some("p".to_string())));
        let mixed = derived_visibility([(Sensitivity::Low, Some("p")), (Sensitivity::Low, None)]);
        assert_eq!(mixed, (Sensitivity::Low, Some(MIXED_SCOPE.to_string())));
        let unscoped =
            derived_visibility([(Sensitivity::Medium, None), (Sensitivity::Public, None)]);
        assert_eq!(unscoped, (Sensitivity::Medium, None));
        let widened = widen_visibility(
            (Sensitivity::Low, Some("p")),
            (Sensitivity::Medium, Some("q".into())),
        );
        assert_eq!(
            widened,
            (Sensitivity::Medium, Some(MIXED_SCOPE.to_string()))
        );
    }
}
