//! Erasure: records removed for good, with every row that holds their
//! content and the records made from them; tombstones where they stood in
//! a revision chain; a log entry that holds no content.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::job::Job;
use super::ServiceError;
use crate::domain::erasure::{Erasure, Selector, TableCounts};
use crate::domain::record::{new_record_id, MemoryType};
use crate::domain::time::{to_micros, Timestamp};
use crate::domain::trust::{Caller, TrustContext};
use crate::store::{
    ChainNeighbours, EdgeEnd, Erasable, ErasureEntry, LogPlace, LogReach, Tombstone, Transaction,
    BULK_ERASURE,
};

/// What an erasure did, or, dry, would do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ErasureReport {
    /// The erasure's id in the log; none for a dry run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub erasure_id: Option<String>,
    pub dry_run: bool,
    /// Records selected.
    pub erased: u64,
    /// Records made from them (consolidation, merges), erased with them.
    pub derived_erased: u64,
    /// Tombstones left in revision chains.
    pub tombstones: u64,
    pub tables: TableCounts,
    pub took_ms: u64,
}

/// The records `selector` names that the caller may see; `NotFound` when
/// there are none (or, for ids, when one is missing or hidden): a caller
/// learns nothing of what lies outside its grant.
fn selected(
    tx: &mut dyn Transaction,
    caller: &Caller,
    selector: &Selector,
) -> Result<(Vec<Erasable>, Vec<i64>), ServiceError> {
    let trust = &caller.trust;
    let mut topics = Vec::new();
    let found = match selector {
        Selector::Ids(ids) => {
            let raw: Vec<String> = ids.iter().map(|id| id.to_string()).collect();
            let found = tx.erasable_ids(&raw)?;
            for (i, id) in ids.iter().enumerate() {
                let seen = found.iter().any(|r| {
                    r.id == id.as_str() && trust.allows_parts(r.sensitivity, r.scope.as_deref())
                });
                if !seen {
                    // By index: a hidden record's id is not repeated back.
                    return Err(ServiceError::NotFound(format!(
                        "ids[{i}]: record not found"
                    )));
                }
            }
            found
        }
        // A scope beyond the grant is not read at all, so its answer takes
        // no longer than one for a scope that holds nothing.
        Selector::Scope(scope) if !trust.allows_scope(Some(scope)) => Vec::new(),
        Selector::Scope(scope) => tx.erasable_in_scope(scope, trust)?,
        Selector::Source(source) => tx.erasable_by_source(source, trust)?,
        Selector::Conversation(id) => tx.erasable_about(id, MemoryType::Episodic, trust)?,
        Selector::Subject(subject) => {
            let mut found = tx.erasable_about(subject, MemoryType::Semantic, trust)?;
            topics = tx.topics_titled_any_scope(subject, trust)?;
            for &topic in &topics {
                found.extend(
                    tx.topic_field_records(topic)?
                        .into_iter()
                        .filter(|r| trust.allows_parts(r.sensitivity, r.scope.as_deref())),
                );
            }
            found
        }
    };
    if found.is_empty() && topics.is_empty() {
        return Err(ServiceError::NotFound(format!(
            "{}: nothing to erase",
            selector.kind()
        )));
    }
    Ok((found, topics))
}

/// Which topics the caller may see, each looked up once however many
/// edges meet it.
#[derive(Default)]
struct TopicSight(BTreeMap<i64, bool>);

impl TopicSight {
    fn topic(
        &mut self,
        tx: &mut dyn Transaction,
        caller: &Caller,
        key: i64,
    ) -> Result<bool, ServiceError> {
        if let Some(&seen) = self.0.get(&key) {
            return Ok(seen);
        }
        let seen = super::topics::sees(tx, caller, key)?;
        self.0.insert(key, seen);
        Ok(seen)
    }
}

/// Most rounds of records made from records made from the selected ones.
const MAX_DERIVED_DEPTH: usize = 16;

/// What an erasure will do, read before anything changes: the records
/// (selected, then derived), the topics left with no field and those
/// whose search text is to be made again, the tombstones, the report.
#[derive(Debug, Clone)]
pub struct Plan {
    pub caller: Caller,
    pub now: Timestamp,
    pub erasure: Erasure,
    /// The records to erase, selected then derived.
    pub records: Vec<Erasable>,
    /// Where each of them stood in a revision chain when planned, by key.
    pub chained: BTreeMap<i64, ChainNeighbours>,
    pub emptied: Vec<i64>,
    pub kept: Vec<i64>,
    pub report: ErasureReport,
    started: Instant,
}

/// Plans the erasure `erasure` asks for; `NotFound` when it selects
/// nothing the caller may see.
pub fn plan(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    erasure: &Erasure,
) -> Result<Plan, ServiceError> {
    let started = Instant::now();
    let (selected, titled) = selected(tx, caller, &erasure.selector)?;
    let mut chosen: BTreeSet<i64> = BTreeSet::new();
    let mut records: Vec<Erasable> = Vec::new();
    for record in selected {
        if chosen.insert(record.key) {
            records.push(record);
        }
    }
    let erased = records.len() as u64;
    // What was made from them may repeat what they said.
    let mut frontier: Vec<String> = records.iter().map(|r| r.id.clone()).collect();
    for _ in 0..MAX_DERIVED_DEPTH {
        if frontier.is_empty() {
            break;
        }
        let made = tx.derived_from_any(&frontier)?;
        frontier.clear();
        for record in made {
            let visible = caller
                .trust
                .allows_parts(record.sensitivity, record.scope.as_deref());
            if visible && chosen.insert(record.key) {
                frontier.push(record.id.clone());
                records.push(record);
            }
        }
    }
    let derived_erased = records.len() as u64 - erased;
    let keys: Vec<i64> = records.iter().map(|r| r.key).collect();
    let chained: BTreeMap<i64, ChainNeighbours> = tx
        .chain_neighbours(&keys)?
        .into_iter()
        .map(|c| (c.key, c))
        .collect();

    let mut tables = tx.erasure_counts(&keys)?;
    // Relations to them from records that stay (they go too) are counted
    // only when the caller may see where they come from.
    let ids: Vec<String> = records.iter().map(|r| r.id.clone()).collect();
    tables.edges += tx
        .linking_to_any(&ids)?
        .iter()
        .filter(|r| {
            !chosen.contains(&r.key) && caller.trust.allows_parts(r.sensitivity, r.scope.as_deref())
        })
        .count() as u64;
    let mut topics = tx.topics_of_records(&keys)?;
    topics.extend(titled);
    topics.sort_unstable();
    topics.dedup();
    // A topic goes when every version of every field goes.
    let (mut emptied, mut kept) = (Vec::new(), Vec::new());
    // Edges between two emptied topics are met from both ends: counted once.
    let mut edges = BTreeSet::new();
    let mut sees = TopicSight::default();
    for topic in topics {
        let fields = tx.topic_field_records(topic)?;
        if fields.iter().all(|f| chosen.contains(&f.key)) {
            for EdgeEnd { other, edge } in tx.edges_of(topic, None)? {
                // An edge with an end the caller may not see goes too, but
                // is not counted: that the topic exists is not the
                // caller's to learn.
                if sees.topic(tx, caller, topic)? && sees.topic(tx, caller, other)? {
                    edges.insert((edge.from_topic_id, edge.to_topic_id, edge.kind));
                }
            }
            emptied.push(topic);
        } else {
            kept.push(topic);
        }
    }
    tables.edges += edges.len() as u64;
    // A topic's vector came with an observation and may have been made
    // from what is erased now: a topic that keeps other fields loses it
    // too. Counted for the topics the caller may see.
    let mut seen = Vec::new();
    for &topic in emptied.iter().chain(&kept) {
        if sees.topic(tx, caller, topic)? {
            seen.push(topic);
        }
    }
    tables.vectors += tx.count_topic_vectors(&seen)?;
    let report = ErasureReport {
        erasure_id: None,
        dry_run: erasure.dry_run,
        erased,
        derived_erased,
        tombstones: chained.len() as u64,
        tables,
        took_ms: started.elapsed().as_millis() as u64,
    };
    Ok(Plan {
        caller: caller.clone(),
        now,
        erasure: erasure.clone(),
        records,
        chained,
        emptied,
        kept,
        report,
        started,
    })
}

/// How long one erasure chunk should hold the writer: ingests queued
/// behind it wait at most about this long, so other tenants' write latency
/// stays near its baseline while a large erasure runs.
pub const CHUNK_TIME: Duration = Duration::from_millis(8);
/// Records in the first chunk, and the bounds of every chunk.
pub const FIRST_CHUNK: usize = 64;
const MIN_CHUNK: usize = 8;
const MAX_CHUNK: usize = 1000;

/// The size of the chunk after one of `size` records that took `took`:
/// what would take [`CHUNK_TIME`] at that pace, at most twice or half the
/// last (one slow commit does not collapse it).
pub fn next_chunk(size: usize, took: Duration) -> usize {
    let pace = CHUNK_TIME.as_secs_f64() / took.as_secs_f64().max(1e-6);
    let next = (size as f64 * pace).clamp(size as f64 / 2.0, size as f64 * 2.0);
    (next as usize).clamp(MIN_CHUNK, MAX_CHUNK)
}

/// Who erased, when and why: what a tombstone says; and how many records
/// the whole erasure takes.
#[derive(Debug, Clone)]
pub struct Stamp {
    pub now: Timestamp,
    pub actor: String,
    pub rationale: String,
    pub records: usize,
}

/// Erases `records` (a chunk of a plan's), each leaving a tombstone where
/// it stands in a revision chain: where it stands now, in this write
/// transaction (a supersede may have made it part of a chain since the
/// plan was read), or, for a neighbour erased already, where it stood
/// when planned (`planned`). Answers how many tombstones it left.
pub fn erase_chunk(
    tx: &mut dyn Transaction,
    records: &[Erasable],
    planned: &BTreeMap<i64, ChainNeighbours>,
    stamp: &Stamp,
) -> Result<u64, ServiceError> {
    let bulk = stamp.records >= BULK_ERASURE;
    let keys: Vec<i64> = records.iter().map(|r| r.key).collect();
    let mut now: BTreeMap<i64, ChainNeighbours> = tx
        .chain_neighbours(&keys)?
        .into_iter()
        .map(|c| (c.key, c))
        .collect();
    let mut tombstones = 0;
    for record in records {
        let current = now.remove(&record.key);
        let before = planned.get(&record.key);
        let older_id = current
            .as_ref()
            .and_then(|c| c.older_id.clone())
            .or_else(|| before.and_then(|c| c.older_id.clone()));
        let newer_id = current
            .and_then(|c| c.newer_id)
            .or_else(|| before.and_then(|c| c.newer_id.clone()));
        if older_id.is_none() && newer_id.is_none() {
            continue;
        }
        tx.add_tombstone(&Tombstone {
            id: record.id.clone(),
            memory_type: record.memory_type,
            sensitivity: record.sensitivity,
            scope: record.scope.clone(),
            erased_at: stamp.now,
            actor: stamp.actor.clone(),
            rationale: stamp.rationale.clone(),
            older_id,
            newer_id,
        })?;
        tombstones += 1;
    }
    tx.erase_records(&keys, bulk)?;
    Ok(tombstones)
}

/// Ends an erasure whose records are erased, leaving `tombstones`: the
/// topics left with no field, the search text of the others, the log
/// entry. Answers the report.
pub fn finish(
    tx: &mut dyn Transaction,
    plan: Plan,
    tombstones: u64,
) -> Result<ErasureReport, ServiceError> {
    let Plan {
        caller,
        now,
        erasure,
        emptied,
        kept,
        mut report,
        started,
        ..
    } = plan;
    report.tombstones = tombstones;
    tx.erase_empty_topics(&emptied)?;
    // A topic's search text holds its fields' values: made again without
    // the erased ones.
    for &topic in &kept {
        super::topics::reindex(tx, topic)?;
    }
    tx.drop_topic_vectors(&kept)?;
    let id = new_record_id();
    report.took_ms = started.elapsed().as_millis() as u64;
    let ids = match &erasure.selector {
        Selector::Ids(ids) => ids.len() as u64,
        _ => 0,
    };
    tx.log_erasure(&ErasureEntry {
        id: id.clone(),
        at: now,
        actor: erasure.actor.clone(),
        rationale: erasure.rationale.clone(),
        selector: erasure.selector.kind().to_string(),
        name: erasure.selector.logged().map(str::to_string),
        ids,
        erased: report.erased,
        derived_erased: report.derived_erased,
        tombstones: report.tombstones,
        tables: report.tables.clone(),
        took_ms: report.took_ms,
        grant_scopes: limited(&caller.trust).then(|| caller.trust.scopes.clone()),
        max_sensitivity: caller.trust.max_sensitivity,
    })?;
    report.erasure_id = Some(id);
    Ok(report)
}

/// A whole erasure in one transaction (`engram erase`): planned, erased,
/// finished; or, dry, planned only.
pub fn erase(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    erasure: &Erasure,
) -> Result<ErasureReport, ServiceError> {
    let plan = plan(tx, caller, now, erasure)?;
    if erasure.dry_run {
        return Ok(plan.report);
    }
    let tombstones = erase_chunk(tx, &plan.records, &plan.chained, &plan.stamp())?;
    finish(tx, plan, tombstones)
}

impl Plan {
    /// What its tombstones say of it.
    pub fn stamp(&self) -> Stamp {
        Stamp {
            now: self.now,
            actor: self.erasure.actor.clone(),
            rationale: self.erasure.rationale.clone(),
            records: self.records.len(),
        }
    }
}

/// [`plan`] as a read job.
pub struct PlanErasure {
    pub caller: Caller,
    pub now: Timestamp,
    pub erasure: Erasure,
}

impl Job for PlanErasure {
    type Output = Plan;
    const NAME: &'static str = "plan_erasure";

    fn run(self, tx: &mut dyn Transaction) -> Result<Plan, ServiceError> {
        plan(tx, &self.caller, self.now, &self.erasure)
    }
}

/// [`erase_chunk`] as a write job.
pub struct EraseChunk {
    pub records: Vec<Erasable>,
    /// The plan's chain places of these records.
    pub planned: BTreeMap<i64, ChainNeighbours>,
    pub stamp: Stamp,
}

impl Job for EraseChunk {
    type Output = u64;
    const NAME: &'static str = "erase_chunk";

    fn run(self, tx: &mut dyn Transaction) -> Result<u64, ServiceError> {
        erase_chunk(tx, &self.records, &self.planned, &self.stamp)
    }
}

/// [`finish`] as a write job.
pub struct FinishErasure {
    pub plan: Plan,
    pub tombstones: u64,
}

impl Job for FinishErasure {
    type Output = ErasureReport;
    const NAME: &'static str = "finish_erasure";

    fn run(self, tx: &mut dyn Transaction) -> Result<ErasureReport, ServiceError> {
        finish(tx, self.plan, self.tombstones)
    }
}

/// Whether `trust` sees some scopes only.
fn limited(trust: &TrustContext) -> bool {
    !trust.scopes.is_empty() || trust.scopes_narrowed
}

/// The part of the erasure log `trust` may read: entries made within
/// every scope by callers who see every scope; otherwise those made
/// within its own scopes (and unscoped records, `''`). Within its ceiling
/// either way.
fn reach(trust: &TrustContext) -> LogReach {
    LogReach {
        max_sensitivity: trust.max_sensitivity,
        scopes: limited(trust).then(|| {
            let mut scopes = trust.scopes.clone();
            scopes.push(String::new());
            scopes
        }),
    }
}

/// Most erasures one read lists.
pub const MAX_LISTED: usize = 1000;

/// A page of the erasure log, and where the next one starts.
#[derive(Debug, Clone, PartialEq)]
pub struct ErasurePage {
    pub entries: Vec<ErasureEntry>,
    pub next: Option<LogPlace>,
}

/// The newest `limit` erasures whose grant the caller holds after `after`,
/// newest first.
pub struct ListErasures {
    pub caller: Caller,
    pub after: Option<LogPlace>,
    pub limit: usize,
}

impl Job for ListErasures {
    type Output = ErasurePage;
    const NAME: &'static str = "list_erasures";

    fn run(self, tx: &mut dyn Transaction) -> Result<ErasurePage, ServiceError> {
        let limit = self.limit.clamp(1, MAX_LISTED);
        let after = self.after.unwrap_or_else(LogPlace::start);
        let mut entries = tx.erasures(&reach(&self.caller.trust), &after, limit + 1)?;
        let next = (entries.len() > limit).then(|| {
            entries.truncate(limit);
            let last = entries.last().expect("a page of at least one");
            LogPlace {
                at: to_micros(&last.at),
                id: last.id.clone(),
            }
        });
        Ok(ErasurePage { entries, next })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_grow_and_shrink_toward_the_writer_time_aimed_at() {
        // Twice as fast as aimed at: twice as many next time, no more.
        assert_eq!(next_chunk(64, CHUNK_TIME / 2), 128);
        assert_eq!(next_chunk(64, CHUNK_TIME / 100), 128);
        // Four times too slow: half, no less.
        assert_eq!(next_chunk(64, CHUNK_TIME * 4), 32);
        assert_eq!(next_chunk(64, CHUNK_TIME * 4 / 3), 48);
        // Within the bounds whatever the pace.
        assert_eq!(next_chunk(MIN_CHUNK, Duration::from_secs(10)), MIN_CHUNK);
        assert_eq!(next_chunk(MAX_CHUNK, Duration::ZERO), MAX_CHUNK);
    }
}
