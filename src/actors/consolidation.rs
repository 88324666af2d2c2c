//! The consolidation actor: distils raw experience into facts, skills and
//! plans, compresses old episodes and merges duplicate facts, by the rules
//! in `domain::consolidation`.
//!
//! Each step works through the episodes it has not seen yet a page at a
//! time, one writer job per page, so ingests keep flowing between pages.
//! What a step has seen is kept (marks, and sightings grouped by the fact or
//! tool sequence they show), so every episode is read once per step and
//! running consolidation again on unchanged data changes nothing.

use std::collections::BTreeMap;

use actix::{Actor, Addr, Context, Handler, Message, ResponseFuture};
use chrono::Duration;
use rusqlite::Connection;
use serde::Serialize;

use super::ingestion::new_record_id;
use super::storage::{FindDuplicateFacts, StorageWriter, StoreReader};
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
    Attribution, AuditAction, AuditEntry, MemoryRecord, MemoryType, Provenance, ProvenanceKind,
    ProvenanceSource, Relation, Sensitivity, Status,
};
use crate::domain::revision::{retract, DERIVED_FROM};
use crate::domain::time::Timestamp;
use crate::store::consolidation::{self as sql, Step};
use crate::store::maintenance::SCHEDULER_ACTOR;
use crate::store::records;

/// Episodes a step reads per query.
const PAGE: usize = 250;

pub struct Consolidator {
    policy: Policy,
    reader: Addr<StoreReader>,
    writer: StorageWriter,
    compress_after: Duration,
}

impl Consolidator {
    pub fn new(
        policy: Policy,
        reader: Addr<StoreReader>,
        writer: StorageWriter,
        compress_after_hours: i64,
    ) -> Self {
        Consolidator {
            policy,
            reader,
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
        let reader = self.reader.clone();
        Box::pin(async move {
            let episodic_compressed = run_pages(&writer, move |conn, after| {
                compress_episodes(conn, compress_before, now, after)
            })
            .await?;
            let p = policy.clone();
            let semantic_extracted = run_pages(&writer, move |conn, after| {
                extract_facts(conn, &p, now, after)
            })
            .await?;
            let p = policy.clone();
            let competence_extracted = run_pages(&writer, move |conn, after| {
                extract_skills(conn, &p, now, after)
            })
            .await?;
            let p = policy;
            let plan_graphs_extracted = run_pages(&writer, move |conn, after| {
                extract_plans(conn, &p, now, after)
            })
            .await?;
            // Finding duplicates reads every active fact: done on a read
            // connection, then merged a few groups per writer job.
            let groups = reader.send(FindDuplicateFacts).await??;
            let mut duplicates_resolved = 0;
            for chunk in groups.chunks(DUPLICATE_GROUPS_PER_WRITE) {
                let chunk = chunk.to_vec();
                duplicates_resolved += writer
                    .write(move |conn| resolve_duplicates(conn, chunk, now))
                    .await?;
            }
            let report = ConsolidationReport {
                episodic_compressed,
                semantic_extracted,
                competence_extracted,
                plan_graphs_extracted,
                duplicates_resolved,
            };
            Ok(report)
        })
    }
}

/// Runs a step a page per writer job, each page after the last key the
/// previous one saw, until a page comes back empty; answers the step's
/// total.
async fn run_pages<F>(writer: &StorageWriter, step: F) -> Result<u64, ServiceError>
where
    F: Fn(&Connection, i64) -> Result<(Option<i64>, u64), ServiceError> + Clone + Send + 'static,
{
    let mut after = 0;
    let mut total = 0;
    loop {
        let page = step.clone();
        let (last, count) = writer.write(move |conn| page(conn, after)).await?;
        total += count;
        match last {
            Some(key) => after = key,
            None => return Ok(total),
        }
    }
}

/// Duplicate groups merged per writer job.
const DUPLICATE_GROUPS_PER_WRITE: usize = 20;

fn scheduler_entry(action: AuditAction, rationale: String, now: Timestamp) -> AuditEntry {
    Attribution::new(SCHEDULER_ACTOR, rationale).entry(action, now)
}

/// Halves the salience of up to one page of old episodes; answers the
/// last key seen and how many.
fn compress_episodes(
    conn: &Connection,
    before: Timestamp,
    now: Timestamp,
    after: i64,
) -> Result<(Option<i64>, u64), ServiceError> {
    let candidates = sql::unmarked_episodes(conn, Step::Compressed, before, after, PAGE)?;
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
    Ok((
        candidates.last().map(|(key, _)| *key),
        candidates.len() as u64,
    ))
}

/// The next page of episodes `step` has not seen, loaded, oldest first.
fn next_page(
    conn: &Connection,
    step: Step,
    now: Timestamp,
    after: i64,
) -> Result<Vec<(i64, MemoryRecord)>, ServiceError> {
    let page = sql::unmarked_episodes(conn, step, now, after, PAGE)?;
    let keys: Vec<i64> = page.iter().map(|(key, _)| *key).collect();
    let loaded = records::load_records(conn, &keys, now)?;
    Ok(keys.into_iter().zip(loaded).collect())
}

/// Loads the episodes behind sightings.
fn sighted(
    conn: &Connection,
    sightings: &[(i64, Option<String>)],
    now: Timestamp,
) -> Result<Vec<MemoryRecord>, ServiceError> {
    let keys: Vec<i64> = sightings.iter().map(|(key, _)| *key).collect();
    Ok(records::load_records(conn, &keys, now)?)
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

/// Facts from events seen in at least two episodes, for one page of
/// episodes; answers (the last key seen, facts created or reinforced).
fn extract_facts(
    conn: &Connection,
    policy: &Policy,
    now: Timestamp,
    after: i64,
) -> Result<(Option<i64>, u64), ServiceError> {
    let episodes = next_page(conn, Step::Semantic, now, after)?;
    let mut touched: BTreeMap<String, (String, String, Vec<usize>)> = BTreeMap::new();
    for (i, (key, episode)) in episodes.iter().enumerate() {
        if let Payload::Episodic(payload) = &episode.payload {
            for (subject, object) in observed_facts(payload) {
                let group = serde_json::json!([subject, object]).to_string();
                sql::add_sighting(conn, Step::Semantic, &group, *key, None)?;
                touched
                    .entry(group)
                    .or_insert_with(|| (subject, object, Vec::new()))
                    .2
                    .push(i);
            }
        }
        sql::mark(conn, *key, Step::Semantic)?;
    }
    let mut extracted = 0;
    for (group, (subject, object, new)) in touched {
        let existing = match sql::output(conn, Step::Semantic, &group)? {
            Some(id) => Some(load_record(conn, "id", &id, now)?),
            None => None,
        };
        let object_value = serde_json::Value::String(object);
        let evidence = |sources: &[&MemoryRecord]| -> Vec<Evidence> {
            sources
                .iter()
                .map(|s| Evidence {
                    source_type: "episodic".to_string(),
                    source_id: s.id.clone(),
                    timestamp: Some(s.created_at),
                })
                .collect()
        };
        match existing {
            Some(mut fact) => {
                let sources: Vec<&MemoryRecord> = new.iter().map(|&i| &episodes[i].1).collect();
                if let Payload::Semantic(payload) = &mut fact.payload {
                    payload.evidence.extend(evidence(&sources));
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
            None => {
                let seen = sql::sightings(conn, Step::Semantic, &group)?;
                if seen.len() < MIN_REPETITIONS {
                    continue;
                }
                let all = sighted(conn, &seen, now)?;
                let sources: Vec<&MemoryRecord> = all.iter().collect();
                let payload = Payload::Semantic(SemanticPayload {
                    subject,
                    predicate: OBSERVED.to_string(),
                    object: object_value,
                    validity: Validity::default(),
                    evidence: evidence(&sources),
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
                sql::set_output(conn, Step::Semantic, &group, &fact.id)?;
            }
        }
        extracted += 1;
    }
    Ok((episodes.last().map(|(key, _)| *key), extracted))
}

/// Skills from tool sequences that succeeded at least twice, for one page
/// of episodes; answers (the last key seen, skills created or reinforced).
fn extract_skills(
    conn: &Connection,
    policy: &Policy,
    now: Timestamp,
    after: i64,
) -> Result<(Option<i64>, u64), ServiceError> {
    let episodes = next_page(conn, Step::Competence, now, after)?;
    // sequence -> (new successful episodes, new failed episodes)
    let mut touched: BTreeMap<String, (Vec<usize>, Vec<usize>)> = BTreeMap::new();
    for (i, (key, episode)) in episodes.iter().enumerate() {
        sql::mark(conn, *key, Step::Competence)?;
        let Payload::Episodic(payload) = &episode.payload else {
            continue;
        };
        let Some(sequence) = tool_sequence(payload) else {
            continue;
        };
        let outcome = match payload.outcome {
            Some(OutcomeStatus::Success) => SUCCESS,
            Some(OutcomeStatus::Failure) => FAILURE,
            _ => continue,
        };
        sql::add_sighting(conn, Step::Competence, &sequence, *key, Some(outcome))?;
        let entry = touched.entry(sequence).or_default();
        if outcome == SUCCESS {
            entry.0.push(i);
        } else {
            entry.1.push(i);
        }
    }
    let mut extracted = 0;
    for (sequence, (successes, failures)) in touched {
        match sql::output(conn, Step::Competence, &sequence)? {
            Some(id) => {
                let mut skill = load_record(conn, "id", &id, now)?;
                let wins: Vec<&MemoryRecord> = successes.iter().map(|&i| &episodes[i].1).collect();
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
                        successes.len() + failures.len()
                    ),
                    now,
                );
                records::update_record(conn, &skill, now)?;
            }
            None => {
                let seen = sql::sightings(conn, Step::Competence, &sequence)?;
                let (won, lost): (Vec<_>, Vec<_>) = seen
                    .into_iter()
                    .partition(|(_, detail)| detail.as_deref() == Some(SUCCESS));
                if won.len() < MIN_REPETITIONS {
                    continue;
                }
                let winners = sighted(conn, &won, now)?;
                let wins: Vec<&MemoryRecord> = winners.iter().collect();
                let tools: Vec<String> = sequence.split(" > ").map(str::to_string).collect();
                let mut performance = Performance {
                    success_count: wins.len() as u64,
                    failure_count: lost.len() as u64,
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
                    required_tools: unique(tools.clone()),
                    failure_modes: Vec::new(),
                    fallbacks: Vec::new(),
                    performance: Some(performance),
                    version: None,
                });
                let mut skill = derived_record(
                    policy,
                    MemoryType::Competence,
                    success_rate_of(wins.len(), lost.len()),
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
                sql::set_output(conn, Step::Competence, &sequence, &skill.id)?;
            }
        }
        extracted += 1;
    }
    Ok((episodes.last().map(|(key, _)| *key), extracted))
}

/// Sighting details of the competence step.
const SUCCESS: &str = "success";
const FAILURE: &str = "failure";

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

/// A plan from every episode with three or more tool calls, once each,
/// for one page of episodes; answers (the last key seen, plans created).
fn extract_plans(
    conn: &Connection,
    policy: &Policy,
    now: Timestamp,
    after: i64,
) -> Result<(Option<i64>, u64), ServiceError> {
    let episodes = next_page(conn, Step::PlanGraph, now, after)?;
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
    Ok((episodes.last().map(|(key, _)| *key), created))
}

/// Same subject, predicate, object and scope.
fn same_fact(a: &MemoryRecord, b: &MemoryRecord) -> bool {
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

/// Merges identical active facts into the oldest of each group, which
/// keeps the provenance and evidence of all; answers how many duplicates
/// were retracted.
/// The groups were found on a read connection, so each is checked again
/// here: only records still there, active and identical are merged.
fn resolve_duplicates(
    conn: &Connection,
    groups: Vec<Vec<String>>,
    now: Timestamp,
) -> Result<u64, ServiceError> {
    let mut resolved = 0;
    for ids in groups {
        let mut group: Vec<MemoryRecord> = Vec::new();
        for id in &ids {
            if let Some(record) = records::get_record(conn, id, now)? {
                let same = group.first().is_none_or(|first| same_fact(first, &record));
                if record.status == Status::Active && same {
                    group.push(record);
                }
            }
        }
        if group.len() < 2 {
            continue;
        }
        group.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        let mut duplicates = group.split_off(1);
        let mut survivor = group.pop().expect("a group has two or more records");
        let names: Vec<&str> = duplicates.iter().map(|d| d.id.as_str()).collect();
        let by = Attribution::new(SCHEDULER_ACTOR, format!("duplicate of {}", survivor.id));
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
            sql::move_outputs(conn, &duplicate.id, &survivor.id)?;
        }
        records::update_record(conn, &survivor, now)?;
        resolved += duplicates.len() as u64;
    }
    Ok(resolved)
}
