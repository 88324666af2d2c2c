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
//! The planners here are pure: given the records a step read, they say
//! what to store (a new record built through [`RecordDraft`], or a changed
//! one); the runner in `service::consolidation` reads and writes.
//!
//! A derived record is never more visible than its sources: it takes their
//! highest sensitivity, and their scope when they share one, otherwise the
//! dedicated scope [`MIXED_SCOPE`].

use super::builder::RecordDraft;
use super::payload::{
    CompetencePayload, EdgeKind, EpisodicPayload, Evidence, Payload, Performance, PlanEdge,
    PlanGraphPayload, PlanNode, RecipeStep, RevisionState, SemanticPayload, Validity,
};
use super::policy::{CandidateKind, Policy};
use super::record::{
    Attribution, AuditAction, AuditEntry, MemoryRecord, MemoryType, Provenance, ProvenanceKind,
    ProvenanceSource, Relation, Sensitivity, Status, SCHEDULER_ACTOR,
};
use super::revision::{retract, DERIVED_FROM};
use super::time::Timestamp;
use super::validate::{Validated, MAX_COUNT};

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

/// Most sources a derived record names (evidence entries, provenance
/// sources, `derived_from` links): the most recent ones. How many there
/// were in all is in its counters and audit entries, so however often a
/// pattern recurs, the record and the work of reinforcing it stay bounded.
pub const MAX_DERIVED_SOURCES: usize = 50;

/// Keeps the last [`MAX_DERIVED_SOURCES`] of `items`.
fn keep_recent<T>(items: &mut Vec<T>) {
    let excess = items.len().saturating_sub(MAX_DERIVED_SOURCES);
    items.drain(..excess);
}

/// Keeps the last [`MAX_DERIVED_SOURCES`] `derived_from` links; other
/// relations (a revision's) are history and stay.
fn keep_recent_links(relations: &mut Vec<Relation>) {
    let links = relations
        .iter()
        .filter(|r| r.predicate == DERIVED_FROM)
        .count();
    let mut excess = links.saturating_sub(MAX_DERIVED_SOURCES);
    relations.retain(|r| {
        if excess > 0 && r.predicate == DERIVED_FROM {
            excess -= 1;
            false
        } else {
            true
        }
    });
}

/// The most recent of `items` (oldest first): what a derived record
/// keeps of its sources.
pub fn recent<T>(items: &[T]) -> &[T] {
    &items[items.len().saturating_sub(MAX_DERIVED_SOURCES)..]
}

/// Where a source may contribute: its scope and sensitivity. Episodes are
/// grouped by it as well as by what they show, so a derived record is
/// made only of sources of one scope and one sensitivity — what it says,
/// counts included, reveals nothing its readers could not see.
pub fn visibility_key(source: &MemoryRecord) -> serde_json::Value {
    serde_json::json!([source.scope, source.sensitivity])
}

/// The group key of a fact: the sources' visibility, subject and object.
pub fn fact_group(source: &MemoryRecord, subject: &str, object: &str) -> String {
    serde_json::json!([visibility_key(source), subject, object]).to_string()
}

/// The group key of a tool sequence: the sources' visibility and the
/// sequence.
pub fn skill_group(source: &MemoryRecord, sequence: &str) -> String {
    serde_json::json!([visibility_key(source), sequence]).to_string()
}

/// Sighting details of the competence step.
pub const SUCCESS: &str = "success";
pub const FAILURE: &str = "failure";

fn scheduler_entry(action: AuditAction, rationale: String, now: Timestamp) -> AuditEntry {
    Attribution::new(SCHEDULER_ACTOR, rationale).entry(action, now)
}

fn source_link(source: &MemoryRecord, now: Timestamp) -> ProvenanceSource {
    ProvenanceSource {
        kind: ProvenanceKind::Event,
        reference: source.id.clone(),
        hash: None,
        created_by: Some(SCHEDULER_ACTOR.to_string()),
        timestamp: now,
    }
}

fn derived_from(source: &MemoryRecord, now: Timestamp) -> Relation {
    Relation {
        predicate: DERIVED_FROM.to_string(),
        target_id: source.id.clone(),
        weight: 1.0,
        created_at: now,
    }
}

fn evidence(sources: &[&MemoryRecord]) -> Vec<Evidence> {
    recent(sources)
        .iter()
        .map(|s| Evidence {
            source_type: "episodic".to_string(),
            source_id: s.id.clone(),
            timestamp: Some(s.created_at),
        })
        .collect()
}

/// What a derived record is made of besides its sources.
struct Derivation {
    memory_type: MemoryType,
    confidence: f64,
    payload: Payload,
    relations: Vec<Relation>,
    rationale: String,
}

/// A record consolidation derives from `sources`: policy defaults,
/// visibility no wider than the sources', a provenance link to each.
fn derived_record(
    policy: &Policy,
    derivation: Derivation,
    sources: &[&MemoryRecord],
    now: Timestamp,
    new_id: impl FnOnce() -> String,
) -> Validated<MemoryRecord> {
    let Derivation {
        memory_type,
        confidence,
        payload,
        relations,
        rationale,
    } = derivation;
    let (sensitivity, scope) =
        derived_visibility(sources.iter().map(|s| (s.sensitivity, s.scope.as_deref())));
    let draft = RecordDraft {
        scope,
        tags: vec![CONSOLIDATED_TAG.to_string()],
        provenance: Provenance {
            sources: recent(sources)
                .iter()
                .map(|s| source_link(s, now))
                .collect(),
            created_by: Some(SCHEDULER_ACTOR.to_string()),
        },
        relations,
        audit_log: vec![scheduler_entry(AuditAction::Create, rationale, now)],
        ..RecordDraft::new(memory_type, sensitivity, confidence, payload)
    };
    draft.build(policy, now, new_id)
}

/// Strengthens a consolidated record seen again in `sources`: salience up
/// by [`REINFORCEMENT`] (never above `policy.max_salience`), visibility no
/// wider than the new sources allow.
fn reinforce_with(
    record: &mut MemoryRecord,
    policy: &Policy,
    sources: &[&MemoryRecord],
    rationale: String,
    now: Timestamp,
) {
    let joining = derived_visibility(sources.iter().map(|s| (s.sensitivity, s.scope.as_deref())));
    let (sensitivity, scope) =
        widen_visibility((record.sensitivity, record.scope.as_deref()), joining);
    record.sensitivity = sensitivity;
    record.scope = scope;
    record.salience =
        (record.salience + REINFORCEMENT).min(policy.max_salience.max(record.salience));
    record.lifecycle.last_reinforced_at = now;
    record.updated_at = now;
    record
        .provenance
        .sources
        .extend(recent(sources).iter().map(|s| source_link(s, now)));
    keep_recent(&mut record.provenance.sources);
    record
        .audit_log
        .push(scheduler_entry(AuditAction::Reinforce, rationale, now));
}

/// Halves an old episode's salience once, audited.
pub fn compress_episode(record: &mut MemoryRecord, now: Timestamp) {
    let was = record.salience;
    record.salience = compress(was);
    record.updated_at = now;
    record.audit_log.push(scheduler_entry(
        AuditAction::Decay,
        format!(
            "consolidation: episodic compression, salience {was:.4} -> {:.4}",
            record.salience
        ),
        now,
    ));
}

/// The fact `{subject, observed, object}` first seen in `sources`.
pub fn new_fact(
    policy: &Policy,
    subject: String,
    object: String,
    sources: &[&MemoryRecord],
    now: Timestamp,
    new_id: impl FnOnce() -> String,
) -> Validated<MemoryRecord> {
    let payload = Payload::Semantic(SemanticPayload {
        subject,
        predicate: OBSERVED.to_string(),
        object: serde_json::Value::String(object),
        validity: Validity::default(),
        evidence: evidence(sources),
        revision_policy: "replace".to_string(),
        revision: RevisionState::default(),
    });
    let derivation = Derivation {
        memory_type: MemoryType::Semantic,
        confidence: CandidateKind::Observation.confidence(),
        payload,
        relations: Vec::new(),
        rationale: format!("consolidation: observed in {} episodes", sources.len()),
    };
    derived_record(policy, derivation, sources, now, new_id)
}

/// A fact seen again in `sources`: their evidence added, reinforced.
pub fn reinforce_fact(
    fact: &mut MemoryRecord,
    policy: &Policy,
    sources: &[&MemoryRecord],
    now: Timestamp,
) {
    if let Payload::Semantic(payload) = &mut fact.payload {
        payload.evidence.extend(evidence(sources));
        keep_recent(&mut payload.evidence);
    }
    reinforce_with(
        fact,
        policy,
        sources,
        format!(
            "consolidation: observed again in {} episode(s)",
            sources.len()
        ),
        now,
    );
}

fn success_rate(performance: &Performance) -> f64 {
    success_rate_of(performance.success_count, performance.failure_count)
}

fn success_rate_of(successes: u64, failures: u64) -> f64 {
    // In floating point: two counts near the limit must not wrap.
    let total = successes as f64 + failures as f64;
    if total == 0.0 {
        0.0
    } else {
        successes as f64 / total
    }
}

/// Counters stop at the validated maximum instead of growing past it.
fn add_count(count: u64, more: usize) -> u64 {
    count.saturating_add(more as u64).min(MAX_COUNT)
}

fn unique(mut items: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    items.retain(|item| seen.insert(item.clone()));
    items
}

/// The skill a tool `sequence` ("read > edit") describes, from the number
/// of episodes it succeeded and failed in and the most recent successful
/// ones (`wins`).
pub fn new_skill(
    policy: &Policy,
    sequence: &str,
    wins: &[&MemoryRecord],
    successes: usize,
    failures: usize,
    now: Timestamp,
    new_id: impl FnOnce() -> String,
) -> Validated<MemoryRecord> {
    let tools: Vec<String> = sequence.split(" > ").map(str::to_string).collect();
    let mut performance = Performance {
        success_count: add_count(0, successes),
        failure_count: add_count(0, failures),
        last_used_at: Some(now),
        ..Performance::default()
    };
    performance.success_rate = Some(success_rate(&performance));
    let payload = Payload::Competence(CompetencePayload {
        skill_name: sequence.to_string(),
        triggers: Vec::new(),
        recipe: tools
            .iter()
            .map(|tool| RecipeStep {
                step: format!("run {tool}"),
                tool: Some(tool.clone()),
                args_schema: None,
                validation: None,
            })
            .collect(),
        required_tools: unique(tools.clone()),
        failure_modes: Vec::new(),
        fallbacks: Vec::new(),
        performance: Some(performance),
        version: None,
    });
    let derivation = Derivation {
        memory_type: MemoryType::Competence,
        confidence: success_rate_of(successes as u64, failures as u64),
        payload,
        relations: recent(wins).iter().map(|s| derived_from(s, now)).collect(),
        rationale: format!("consolidation: tool sequence succeeded in {successes} episodes"),
    };
    derived_record(policy, derivation, wins, now, new_id)
}

/// A skill whose sequence was seen again: `wins` more successes,
/// `failures` more failures.
pub fn reinforce_skill(
    skill: &mut MemoryRecord,
    policy: &Policy,
    wins: &[&MemoryRecord],
    failures: usize,
    now: Timestamp,
) {
    if let Payload::Competence(payload) = &mut skill.payload {
        let performance = payload.performance.get_or_insert_with(Performance::default);
        performance.success_count = add_count(performance.success_count, wins.len());
        performance.failure_count = add_count(performance.failure_count, failures);
        performance.success_rate = Some(success_rate(performance));
        performance.last_used_at = Some(now);
    }
    skill
        .relations
        .extend(recent(wins).iter().map(|s| derived_from(s, now)));
    keep_recent_links(&mut skill.relations);
    reinforce_with(
        skill,
        policy,
        wins,
        format!(
            "consolidation: sequence seen in {} more episode(s)",
            wins.len() + failures
        ),
        now,
    );
}

/// The plan an episode's tool graph describes, as a record; `None` when
/// the graph is too small.
pub fn new_plan(
    policy: &Policy,
    episode: &MemoryRecord,
    now: Timestamp,
    new_id: impl FnOnce() -> String,
) -> Option<Validated<MemoryRecord>> {
    let derivation = Derivation {
        memory_type: MemoryType::PlanGraph,
        confidence: episode.confidence,
        payload: Payload::PlanGraph(plan_from(episode)?),
        relations: vec![derived_from(episode, now)],
        rationale: "consolidation: plan from an episode's tool graph".to_string(),
    };
    Some(derived_record(policy, derivation, &[episode], now, new_id))
}

/// Same subject, predicate, object and scope.
pub fn same_fact(a: &MemoryRecord, b: &MemoryRecord) -> bool {
    match (&a.payload, &b.payload) {
        (Payload::Semantic(x), Payload::Semantic(y)) => {
            x.subject == y.subject
                && x.predicate == y.predicate
                && x.object == y.object
                && a.scope == b.scope
        }
        _ => false,
    }
}

/// Identical active facts merged: the oldest survives and keeps the
/// provenance and evidence of all and the highest sensitivity; the others
/// are retracted into it. `group` holds the facts as read, in any order;
/// those no longer active or no longer the same fact as the first are
/// left alone. `None` when fewer than two remain.
pub fn merge_duplicates(
    group: Vec<MemoryRecord>,
    now: Timestamp,
) -> Option<(MemoryRecord, Vec<MemoryRecord>)> {
    let mut kept: Vec<MemoryRecord> = Vec::new();
    for record in group {
        let same = kept.first().is_none_or(|first| same_fact(first, &record));
        if record.status == Status::Active && same {
            kept.push(record);
        }
    }
    if kept.len() < 2 {
        return None;
    }
    kept.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
    let mut duplicates = kept.split_off(1);
    let mut survivor = kept.pop().expect("a group has two or more records");
    let names: Vec<&str> = duplicates.iter().map(|d| d.id.as_str()).collect();
    let names = names.join(", ");
    let by = Attribution::new(SCHEDULER_ACTOR, format!("duplicate of {}", survivor.id));
    for duplicate in &duplicates {
        survivor.sensitivity = survivor.sensitivity.max(duplicate.sensitivity);
        for source in &duplicate.provenance.sources {
            if !survivor.provenance.sources.contains(source) {
                survivor.provenance.sources.push(source.clone());
            }
        }
        if let (Payload::Semantic(kept), Payload::Semantic(gone)) =
            (&mut survivor.payload, &duplicate.payload)
        {
            for evidence in &gone.evidence {
                if !kept.evidence.contains(evidence) {
                    kept.evidence.push(evidence.clone());
                }
            }
        }
        survivor.relations.push(derived_from(duplicate, now));
    }
    survivor.updated_at = now;
    survivor.audit_log.push(scheduler_entry(
        AuditAction::Merge,
        format!("consolidation: merged duplicates {names}"),
        now,
    ));
    for duplicate in &mut duplicates {
        retract(duplicate, AuditAction::Merge, &by, now);
    }
    Some((survivor, duplicates))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::new_record::NewRecord;
    use crate::domain::payload::{TimelineEvent, ToolNode};
    use crate::domain::policy::Policy;
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

    fn t0() -> Timestamp {
        parse_rfc3339("2026-01-01T00:00:00Z").unwrap()
    }

    fn episode(id: &str, sensitivity: &str, scope: Option<&str>) -> MemoryRecord {
        let new: NewRecord = serde_json::from_value(json!({
            "type": "episodic", "sensitivity": sensitivity, "scope": scope,
            "payload": {"kind": "episodic"}
        }))
        .unwrap();
        new.into_record(
            &Policy::default(),
            &Attribution::new("t", "t"),
            t0(),
            || id.into(),
        )
        .unwrap()
    }

    #[test]
    fn a_new_fact_is_built_valid_from_its_sources_and_as_private_as_they_are() {
        let (a, b) = (
            episode("a", "low", Some("p")),
            episode("b", "high", Some("p")),
        );
        let fact = new_fact(
            &Policy::default(),
            "error".into(),
            "disk full".into(),
            &[&a, &b],
            t0(),
            || "f".into(),
        )
        .unwrap();
        assert_eq!(fact.memory_type, MemoryType::Semantic);
        assert_eq!(
            (fact.sensitivity, fact.scope.as_deref()),
            (Sensitivity::High, Some("p"))
        );
        assert_eq!(fact.confidence, CandidateKind::Observation.confidence());
        assert_eq!(fact.tags, [CONSOLIDATED_TAG]);
        let Payload::Semantic(payload) = &fact.payload else {
            panic!()
        };
        assert_eq!(payload.predicate, OBSERVED);
        assert_eq!(payload.evidence.len(), 2);
        assert_eq!(fact.provenance.sources.len(), 2);
        assert_eq!(fact.audit_log[0].actor, SCHEDULER_ACTOR);
    }

    #[test]
    fn reinforcement_respects_the_policy_cap_and_widens_nothing() {
        let policy = Policy {
            max_salience: 0.95,
            initial_salience: 0.9,
            ..Policy::default()
        };
        let a = episode("a", "low", None);
        let mut fact =
            new_fact(&policy, "e".into(), "s".into(), &[&a], t0(), || "f".into()).unwrap();
        assert_eq!(fact.salience, 0.9);
        let later = episode("b", "medium", Some("q"));
        reinforce_fact(&mut fact, &policy, &[&later], t0());
        assert_eq!(fact.salience, 0.95);
        assert_eq!(fact.sensitivity, Sensitivity::Medium);
        assert_eq!(fact.scope.as_deref(), Some(MIXED_SCOPE));
        assert_eq!(
            fact.audit_log.last().unwrap().action,
            AuditAction::Reinforce
        );
        // Already above a lowered cap: reinforcement never lowers it.
        let lower = Policy {
            max_salience: 0.5,
            ..Policy::default()
        };
        reinforce_fact(&mut fact, &lower, &[&later], t0());
        assert_eq!(fact.salience, 0.95);
    }

    #[test]
    fn a_derived_record_keeps_the_most_recent_sources_and_every_count() {
        let sources: Vec<MemoryRecord> = (0..120)
            .map(|i| episode(&format!("e{i}"), "low", None))
            .collect();
        let refs: Vec<&MemoryRecord> = sources.iter().collect();
        let mut fact = new_fact(
            &Policy::default(),
            "s".into(),
            "o".into(),
            &refs[..70],
            t0(),
            || "f".into(),
        )
        .unwrap();
        for chunk in refs[70..].chunks(7) {
            reinforce_fact(&mut fact, &Policy::default(), chunk, t0());
        }
        let Payload::Semantic(payload) = &fact.payload else {
            panic!()
        };
        assert_eq!(payload.evidence.len(), MAX_DERIVED_SOURCES);
        assert_eq!(payload.evidence.last().unwrap().source_id, "e119");
        assert_eq!(payload.evidence[0].source_id, "e70");
        assert_eq!(fact.provenance.sources.len(), MAX_DERIVED_SOURCES);

        let mut skill = new_skill(
            &Policy::default(),
            "read > edit",
            &refs[..60],
            1000,
            5,
            t0(),
            || "s".into(),
        )
        .unwrap();
        skill.relations.push(Relation {
            predicate: "contested_by".into(),
            target_id: "x".into(),
            weight: 1.0,
            created_at: t0(),
        });
        reinforce_skill(&mut skill, &Policy::default(), &refs[60..], 3, t0());
        let links = skill
            .relations
            .iter()
            .filter(|r| r.predicate == DERIVED_FROM)
            .count();
        assert_eq!(links, MAX_DERIVED_SOURCES);
        assert!(skill
            .relations
            .iter()
            .any(|r| r.predicate == "contested_by"));
        let Payload::Competence(payload) = &skill.payload else {
            panic!()
        };
        let performance = payload.performance.as_ref().unwrap();
        assert_eq!(
            (performance.success_count, performance.failure_count),
            (1060, 8)
        );
    }

    #[test]
    fn a_skill_counts_its_successes_and_failures() {
        let (a, b) = (episode("a", "low", None), episode("b", "low", None));
        let mut skill = new_skill(
            &Policy::default(),
            "read > edit > read",
            &[&a, &b],
            2,
            2,
            t0(),
            || "s".into(),
        )
        .unwrap();
        assert_eq!(skill.confidence, 0.5);
        assert_eq!(skill.relations.len(), 2);
        let Payload::Competence(payload) = &skill.payload else {
            panic!()
        };
        assert_eq!(payload.required_tools, ["read", "edit"]);
        assert_eq!(payload.recipe.len(), 3);
        let c = episode("c", "low", None);
        reinforce_skill(&mut skill, &Policy::default(), &[&c], 0, t0());
        let Payload::Competence(payload) = &skill.payload else {
            panic!()
        };
        let performance = payload.performance.as_ref().unwrap();
        assert_eq!(
            (performance.success_count, performance.failure_count),
            (3, 2)
        );
        assert_eq!(performance.success_rate, Some(0.6));
        assert_eq!(skill.relations.len(), 3);
    }

    #[test]
    fn duplicates_merge_into_the_oldest_active_fact() {
        let policy = Policy::default();
        let a = episode("a", "low", None);
        let fact = |id: &str, sensitivity: Sensitivity, minutes: i64| {
            let mut f =
                new_fact(&policy, "e".into(), "s".into(), &[&a], t0(), || id.into()).unwrap();
            f.sensitivity = sensitivity;
            f.created_at = t0() + chrono::Duration::minutes(minutes);
            f
        };
        let mut retracted = fact("gone", Sensitivity::Low, 0);
        retracted.status = Status::Retracted;
        let group = vec![
            fact("newer", Sensitivity::High, 5),
            retracted,
            fact("oldest", Sensitivity::Low, 1),
        ];
        let (survivor, duplicates) = merge_duplicates(group, t0()).unwrap();
        assert_eq!(survivor.id, "oldest");
        assert_eq!(survivor.sensitivity, Sensitivity::High);
        assert_eq!(survivor.relations[0].target_id, "newer");
        assert_eq!(duplicates.len(), 1);
        assert_eq!(duplicates[0].status, Status::Retracted);
        assert_eq!(duplicates[0].salience, 0.0);
        let alone = vec![fact("x", Sensitivity::Low, 0)];
        assert!(merge_duplicates(alone, t0()).is_none());
    }
}
