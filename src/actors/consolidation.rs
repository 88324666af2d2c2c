//! The consolidation actor: distils raw experience into facts, skills and
//! plans, compresses old episodes and merges duplicate facts, by the rules
//! in `domain::consolidation`.
//!
//! Each step runs as writer jobs; every episode a step uses is marked, so
//! running consolidation again on unchanged data changes nothing.

use std::collections::BTreeMap;

use actix::{Actor, Context, Handler, Message, ResponseFuture};
use chrono::Duration;
use rusqlite::Connection;
use serde::Serialize;

use super::ingestion::new_record_id;
use super::storage::StorageWriter;
use super::{load_record, ServiceError};
use crate::domain::consolidation::{
    compress, derived_visibility, observed_facts, plan_from, tool_sequence, widen_visibility,
    CONSOLIDATED_TAG, MIN_REPETITIONS, OBSERVED, REINFORCEMENT,
};
use crate::domain::payload::{
    CompetencePayload, Evidence, OutcomeStatus, Payload, Performance, RecipeStep, RevisionState,
    SemanticPayload, Validity,
};
use crate::domain::policy::{CandidateKind, Policy};
use crate::domain::record::{
    AuditAction, AuditEntry, MemoryRecord, MemoryType, Provenance, ProvenanceKind,
    ProvenanceSource, Relation, Sensitivity, Status,
};
use crate::domain::revision::{retract, DERIVED_FROM};
use crate::domain::time::Timestamp;
use crate::store::consolidation::{self as sql, Step};
use crate::store::maintenance::SCHEDULER_ACTOR;
use crate::store::records;

/// Episodes a step reads per query.
const PAGE: usize = 1000;

pub struct Consolidator {
    policy: Policy,
    writer: StorageWriter,
    compress_after: Duration,
}

impl Consolidator {
    pub fn new(policy: Policy, writer: StorageWriter, compress_after_hours: i64) -> Self {
        Consolidator {
            policy,
            writer,
            compress_after: Duration::hours(compress_after_hours),
        }
    }
}

impl Actor for Consolidator {
    type Context = Context<Self>;
}

/// One consolidation run as of `now`.
#[derive(Message)]
#[rtype(result = "Result<ConsolidationReport, ServiceError>")]
pub struct Consolidate {
    pub now: Timestamp,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ConsolidationReport {
    pub episodic_compressed: u64,
    /// Facts created or reinforced.
    pub semantic_extracted: u64,
    /// Skills created or reinforced.
    pub competence_extracted: u64,
    pub plan_graphs_extracted: u64,
    /// Duplicate facts merged into another.
    pub duplicates_resolved: u64,
}

impl Handler<Consolidate> for Consolidator {
    type Result = ResponseFuture<Result<ConsolidationReport, ServiceError>>;

    fn handle(&mut self, msg: Consolidate, _: &mut Self::Context) -> Self::Result {
        let writer = self.writer.clone();
        let policy = self.policy.clone();
        let now = msg.now;
        let compress_before = now - self.compress_after;
        Box::pin(async move {
            let mut report = ConsolidationReport::default();
            loop {
                let compressed = writer
                    .write(move |conn| compress_episodes(conn, compress_before, now))
                    .await?;
                if compressed == 0 {
                    break;
                }
                report.episodic_compressed += compressed;
            }
            let p = policy.clone();
            report.semantic_extracted = writer
                .write(move |conn| extract_facts(conn, &p, now))
                .await?;
            let p = policy.clone();
            report.competence_extracted = writer
                .write(move |conn| extract_skills(conn, &p, now))
                .await?;
            let p = policy;
            report.plan_graphs_extracted = writer
                .write(move |conn| extract_plans(conn, &p, now))
                .await?;
            report.duplicates_resolved = writer
                .write(move |conn| resolve_duplicates(conn, now))
                .await?;
            Ok(report)
        })
    }
}

fn scheduler_entry(action: AuditAction, rationale: String, now: Timestamp) -> AuditEntry {
    AuditEntry {
        action,
        actor: SCHEDULER_ACTOR.to_string(),
        timestamp: now,
        rationale,
    }
}

/// Halves the salience of up to one page of old episodes; answers how many.
fn compress_episodes(
    conn: &Connection,
    before: Timestamp,
    now: Timestamp,
) -> Result<u64, ServiceError> {
    let candidates = sql::unmarked_episodes(conn, Step::Compressed, before, 0, PAGE)?;
    for (key, id) in &candidates {
        let mut record = load_record(conn, "id", id, now)?;
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
        records::update_record(conn, &record, now)?;
        sql::mark(conn, *key, Step::Compressed)?;
    }
    Ok(candidates.len() as u64)
}

/// Every unmarked episode `step` applies to, loaded, oldest first.
fn episodes_for(
    conn: &Connection,
    step: Step,
    now: Timestamp,
) -> Result<Vec<(i64, MemoryRecord)>, ServiceError> {
    let mut found = Vec::new();
    let mut after = 0;
    loop {
        let page = sql::unmarked_episodes(conn, step, now, after, PAGE)?;
        let Some((last, _)) = page.last() else { break };
        after = *last;
        let keys: Vec<i64> = page.iter().map(|(key, _)| *key).collect();
        let loaded = records::load_records(conn, &keys, now)?;
        found.extend(keys.into_iter().zip(loaded));
    }
    Ok(found)
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

/// A record consolidation creates, with policy defaults and visibility
/// derived from its sources.
fn derived_record(
    policy: &Policy,
    memory_type: MemoryType,
    confidence: f64,
    sources: &[&MemoryRecord],
    payload: Payload,
    rationale: String,
    now: Timestamp,
) -> MemoryRecord {
    let (sensitivity, scope) =
        derived_visibility(sources.iter().map(|s| (s.sensitivity, s.scope.as_deref())));
    MemoryRecord {
        id: new_record_id(),
        memory_type,
        sensitivity,
        confidence,
        salience: policy.initial_salience,
        scope,
        tags: vec![CONSOLIDATED_TAG.to_string()],
        status: Status::Active,
        created_at: now,
        updated_at: now,
        lifecycle: policy.lifecycle(memory_type, now),
        provenance: Provenance {
            sources: sources.iter().map(|s| source_link(s, now)).collect(),
            created_by: Some(SCHEDULER_ACTOR.to_string()),
        },
        relations: Vec::new(),
        payload,
        audit_log: vec![scheduler_entry(AuditAction::Create, rationale, now)],
    }
}

/// Strengthens a consolidated record seen again in `sources`: salience up
/// by 0.1 (capped at 1), visibility no wider than the new sources allow.
fn reinforce_with(
    record: &mut MemoryRecord,
    sources: &[&MemoryRecord],
    rationale: String,
    now: Timestamp,
) {
    let joining = derived_visibility(sources.iter().map(|s| (s.sensitivity, s.scope.as_deref())));
    let (sensitivity, scope) =
        widen_visibility((record.sensitivity, record.scope.as_deref()), joining);
    record.sensitivity = sensitivity;
    record.scope = scope;
    record.salience = (record.salience + REINFORCEMENT).min(1.0_f64.max(record.salience));
    record.lifecycle.last_reinforced_at = now;
    record.updated_at = now;
    record
        .provenance
        .sources
        .extend(sources.iter().map(|s| source_link(s, now)));
    record
        .audit_log
        .push(scheduler_entry(AuditAction::Reinforce, rationale, now));
}

/// Facts from events seen in at least two episodes; answers how many facts
/// were created or reinforced.
fn extract_facts(conn: &Connection, policy: &Policy, now: Timestamp) -> Result<u64, ServiceError> {
    let episodes = episodes_for(conn, Step::Semantic, now)?;
    let mut by_fact: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
    for (i, (_, episode)) in episodes.iter().enumerate() {
        if let Payload::Episodic(payload) = &episode.payload {
            for fact in observed_facts(payload) {
                by_fact.entry(fact).or_default().push(i);
            }
        }
    }
    let mut extracted = 0;
    let mut used = std::collections::BTreeSet::new();
    for ((subject, object), members) in by_fact {
        let sources: Vec<&MemoryRecord> = members.iter().map(|&i| &episodes[i].1).collect();
        let evidence: Vec<Evidence> = sources
            .iter()
            .map(|s| Evidence {
                source_type: "episodic".to_string(),
                source_id: s.id.clone(),
                timestamp: Some(s.created_at),
            })
            .collect();
        let object_value = serde_json::Value::String(object.clone());
        let existing = sql::consolidated_facts(conn, &subject, OBSERVED)?
            .into_iter()
            .map(|id| load_record(conn, "id", &id, now))
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .find(|r| matches!(&r.payload, Payload::Semantic(f) if f.object == object_value));
        match existing {
            Some(mut fact) => {
                if let Payload::Semantic(payload) = &mut fact.payload {
                    payload.evidence.extend(evidence);
                }
                reinforce_with(
                    &mut fact,
                    &sources,
                    format!(
                        "consolidation: observed again in {} episode(s)",
                        sources.len()
                    ),
                    now,
                );
                records::update_record(conn, &fact, now)?;
            }
            None if sources.len() >= MIN_REPETITIONS => {
                let payload = Payload::Semantic(SemanticPayload {
                    subject: subject.clone(),
                    predicate: OBSERVED.to_string(),
                    object: object_value,
                    validity: Validity::default(),
                    evidence,
                    revision_policy: "replace".to_string(),
                    revision: RevisionState::default(),
                });
                let fact = derived_record(
                    policy,
                    MemoryType::Semantic,
                    CandidateKind::Observation.confidence(),
                    &sources,
                    payload,
                    format!("consolidation: observed in {} episodes", sources.len()),
                    now,
                );
                records::insert_record(conn, &fact)?;
            }
            None => continue,
        }
        extracted += 1;
        used.extend(members);
    }
    for i in used {
        sql::mark(conn, episodes[i].0, Step::Semantic)?;
    }
    Ok(extracted)
}

/// Skills from tool sequences that succeeded at least twice; answers how
/// many skills were created or reinforced.
fn extract_skills(conn: &Connection, policy: &Policy, now: Timestamp) -> Result<u64, ServiceError> {
    let episodes = episodes_for(conn, Step::Competence, now)?;
    // sequence -> (successful episodes, failed episodes)
    let mut by_sequence: BTreeMap<String, (Vec<usize>, Vec<usize>)> = BTreeMap::new();
    for (i, (_, episode)) in episodes.iter().enumerate() {
        let Payload::Episodic(payload) = &episode.payload else {
            continue;
        };
        let Some(sequence) = tool_sequence(payload) else {
            continue;
        };
        let entry = by_sequence.entry(sequence).or_default();
        match payload.outcome {
            Some(OutcomeStatus::Success) => entry.0.push(i),
            Some(OutcomeStatus::Failure) => entry.1.push(i),
            _ => {}
        }
    }
    let mut extracted = 0;
    for (sequence, (successes, failures)) in by_sequence {
        let wins: Vec<&MemoryRecord> = successes.iter().map(|&i| &episodes[i].1).collect();
        let existing = match sql::consolidated_skill(conn, &sequence)? {
            Some(id) => Some(load_record(conn, "id", &id, now)?),
            None => None,
        };
        match existing {
            Some(mut skill) => {
                if wins.is_empty() && failures.is_empty() {
                    continue;
                }
                if let Payload::Competence(payload) = &mut skill.payload {
                    let performance = payload.performance.get_or_insert_with(Performance::default);
                    performance.success_count += wins.len() as u64;
                    performance.failure_count += failures.len() as u64;
                    performance.success_rate = Some(success_rate(performance));
                    performance.last_used_at = Some(now);
                }
                skill
                    .relations
                    .extend(wins.iter().map(|s| derived_from(s, now)));
                reinforce_with(
                    &mut skill,
                    &wins,
                    format!(
                        "consolidation: sequence seen in {} more episode(s)",
                        wins.len() + failures.len()
                    ),
                    now,
                );
                records::update_record(conn, &skill, now)?;
            }
            None if wins.len() >= MIN_REPETITIONS => {
                let tools: Vec<String> = sequence.split(" > ").map(str::to_string).collect();
                let mut required_tools = tools.clone();
                required_tools.dedup();
                let mut performance = Performance {
                    success_count: wins.len() as u64,
                    failure_count: failures.len() as u64,
                    last_used_at: Some(now),
                    ..Performance::default()
                };
                performance.success_rate = Some(success_rate(&performance));
                let payload = Payload::Competence(CompetencePayload {
                    skill_name: sequence.clone(),
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
                    required_tools: unique(required_tools),
                    failure_modes: Vec::new(),
                    fallbacks: Vec::new(),
                    performance: Some(performance),
                    version: None,
                });
                let mut skill = derived_record(
                    policy,
                    MemoryType::Competence,
                    success_rate_of(wins.len(), failures.len()),
                    &wins,
                    payload,
                    format!(
                        "consolidation: tool sequence succeeded in {} episodes",
                        wins.len()
                    ),
                    now,
                );
                skill.relations = wins.iter().map(|s| derived_from(s, now)).collect();
                records::insert_record(conn, &skill)?;
            }
            None => continue,
        }
        extracted += 1;
        for i in successes.iter().chain(&failures) {
            sql::mark(conn, episodes[*i].0, Step::Competence)?;
        }
    }
    Ok(extracted)
}

fn success_rate(performance: &Performance) -> f64 {
    success_rate_of(
        performance.success_count as usize,
        performance.failure_count as usize,
    )
}

fn success_rate_of(successes: usize, failures: usize) -> f64 {
    let total = successes + failures;
    if total == 0 {
        0.0
    } else {
        successes as f64 / total as f64
    }
}

fn unique(mut items: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    items.retain(|item| seen.insert(item.clone()));
    items
}

/// A plan from every episode with three or more tool calls, once each;
/// answers how many plans were created.
fn extract_plans(conn: &Connection, policy: &Policy, now: Timestamp) -> Result<u64, ServiceError> {
    let episodes = episodes_for(conn, Step::PlanGraph, now)?;
    let mut created = 0;
    for (key, episode) in &episodes {
        if let Some(plan) = plan_from(episode) {
            let mut record = derived_record(
                policy,
                MemoryType::PlanGraph,
                episode.confidence,
                &[episode],
                Payload::PlanGraph(plan),
                "consolidation: plan from an episode's tool graph".to_string(),
                now,
            );
            record.relations.push(derived_from(episode, now));
            records::insert_record(conn, &record)?;
            created += 1;
        }
        sql::mark(conn, *key, Step::PlanGraph)?;
    }
    Ok(created)
}

/// Merges identical active facts into the oldest of each group, which
/// keeps the provenance and evidence of all; answers how many duplicates
/// were retracted.
fn resolve_duplicates(conn: &Connection, now: Timestamp) -> Result<u64, ServiceError> {
    let mut resolved = 0;
    for ids in sql::duplicate_fact_groups(conn)? {
        let mut group = ids
            .iter()
            .map(|id| load_record(conn, "id", id, now))
            .collect::<Result<Vec<_>, _>>()?;
        group.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        let mut duplicates = group.split_off(1);
        let mut survivor = group.pop().expect("a group has two or more records");
        let names: Vec<&str> = duplicates.iter().map(|d| d.id.as_str()).collect();
        let by = crate::domain::record::Attribution::new(
            SCHEDULER_ACTOR,
            format!("duplicate of {}", survivor.id),
        );
        let mut sensitivity: Sensitivity = survivor.sensitivity;
        for duplicate in &duplicates {
            sensitivity = sensitivity.max(duplicate.sensitivity);
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
        survivor.sensitivity = sensitivity;
        survivor.updated_at = now;
        survivor.audit_log.push(scheduler_entry(
            AuditAction::Merge,
            format!("consolidation: merged duplicates {}", names.join(", ")),
            now,
        ));
        for duplicate in &mut duplicates {
            retract(duplicate, AuditAction::Merge, &by, now);
            records::update_record(conn, duplicate, now)?;
        }
        records::update_record(conn, &survivor, now)?;
        resolved += duplicates.len() as u64;
    }
    Ok(resolved)
}
