//! The consolidation steps, a page of episodes at a time, by the planners
//! in `domain::consolidation`. A page of episodes is read with
//! [`read_page`] on a read connection; the step then writes what it
//! decided, marks and sightings included, in the writer's transaction,
//! which so holds the writer only for the writes. Each step answers how
//! many records it created or changed.

use std::collections::BTreeMap;

use serde::Serialize;

use super::job::Job;
use super::{load, ServiceError};
use crate::domain::consolidation::{
    self as rules, fact_group, observed_facts, skill_group, tool_sequence, FAILURE,
    MIN_REPETITIONS, SUCCESS,
};
use crate::domain::payload::{OutcomeStatus, Payload};
use crate::domain::policy::Policy;
use crate::domain::record::{new_record_id, MemoryRecord};
use crate::domain::time::Timestamp;
use crate::domain::trust::Caller;
use crate::store::{Episode, SalienceChange, Sighting, Step, Transaction};

/// Episodes a step reads per page.
pub const PAGE: usize = 250;

/// Episodes compressed per writer job: each is rewritten whole.
pub const COMPRESS_PAGE: usize = 50;

/// What one consolidation run did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
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

/// One page of a step: the last key seen and how many records it made or
/// changed.
pub type Page = (Option<i64>, u64);

/// Loaded episodes with their storage keys, oldest first.
pub type Episodes = Vec<(i64, MemoryRecord)>;

/// Halves the salience of up to one page of episodes created before
/// `before`.
pub fn compress_episodes(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    before: Timestamp,
    after: i64,
) -> Result<Page, ServiceError> {
    let candidates = tx.unmarked_episodes(Step::Compressed, before, after, COMPRESS_PAGE)?;
    for Episode { key, id } in &candidates {
        let mut loaded = load(tx, caller, "id", id, now)?;
        rules::compress_episode(&mut loaded.record, now);
        tx.update_record(&loaded.version, &loaded.record, SalienceChange::SetAt(now))?;
        tx.mark(*key, Step::Compressed)?;
    }
    Ok((
        candidates.last().map(|episode| episode.key),
        candidates.len() as u64,
    ))
}

/// The next page of episodes `step` has not seen, after key `after`,
/// loaded, oldest first; empty when the step has seen them all.
pub fn read_page(
    tx: &mut dyn Transaction,
    step: Step,
    now: Timestamp,
    after: i64,
) -> Result<Episodes, ServiceError> {
    let page = tx.unmarked_episodes(step, now, after, PAGE)?;
    let keys: Vec<i64> = page.iter().map(|episode| episode.key).collect();
    let loaded = tx.load_records(&keys, now)?;
    Ok(keys.into_iter().zip(loaded).collect())
}

/// Loads the episodes behind sightings.
fn sighted(
    tx: &mut dyn Transaction,
    sightings: &[Sighting],
    now: Timestamp,
) -> Result<Vec<MemoryRecord>, ServiceError> {
    let keys: Vec<i64> = sightings.iter().map(|s| s.key).collect();
    Ok(tx.load_records(&keys, now)?)
}

/// Facts from events seen in at least two episodes, for one page.
pub fn extract_facts(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    policy: &Policy,
    episodes: &Episodes,
) -> Result<u64, ServiceError> {
    let mut touched: BTreeMap<String, (String, String, Vec<usize>)> = BTreeMap::new();
    for (i, (key, episode)) in episodes.iter().enumerate() {
        if let Payload::Episodic(payload) = &episode.payload {
            for (subject, object) in observed_facts(payload) {
                let group = fact_group(episode, &subject, &object);
                tx.add_sighting(Step::Semantic, &group, *key, None)?;
                touched
                    .entry(group)
                    .or_insert_with(|| (subject, object, Vec::new()))
                    .2
                    .push(i);
            }
        }
        tx.mark(*key, Step::Semantic)?;
    }
    let mut extracted = 0;
    for (group, (subject, object, new)) in touched {
        match tx.output(Step::Semantic, &group)? {
            Some(id) => {
                let mut fact = load(tx, caller, "id", &id, now)?;
                let sources: Vec<&MemoryRecord> = new.iter().map(|&i| &episodes[i].1).collect();
                rules::reinforce_fact(&mut fact.record, policy, &sources, now);
                tx.update_record(&fact.version, &fact.record, SalienceChange::SetAt(now))?;
            }
            None => {
                let seen = tx.sightings(Step::Semantic, &group)?;
                if seen.len() < MIN_REPETITIONS {
                    continue;
                }
                let all = sighted(tx, rules::recent(&seen), now)?;
                let sources: Vec<&MemoryRecord> = all.iter().collect();
                let fact = rules::new_fact(policy, subject, object, &sources, now, new_record_id)?;
                tx.insert_record(&fact)?;
                tx.set_output(Step::Semantic, &group, &fact.id)?;
            }
        }
        extracted += 1;
    }
    Ok(extracted)
}

/// Skills from tool sequences that succeeded at least twice, for one page.
pub fn extract_skills(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    policy: &Policy,
    episodes: &Episodes,
) -> Result<u64, ServiceError> {
    // group -> (sequence, new successful episodes, new failed episodes)
    let mut touched: BTreeMap<String, (String, Vec<usize>, usize)> = BTreeMap::new();
    for (i, (key, episode)) in episodes.iter().enumerate() {
        tx.mark(*key, Step::Competence)?;
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
        let group = skill_group(episode, &sequence);
        tx.add_sighting(Step::Competence, &group, *key, Some(outcome))?;
        let entry = touched
            .entry(group)
            .or_insert_with(|| (sequence, Vec::new(), 0));
        if outcome == SUCCESS {
            entry.1.push(i);
        } else {
            entry.2 += 1;
        }
    }
    let mut extracted = 0;
    for (group, (sequence, successes, failures)) in touched {
        match tx.output(Step::Competence, &group)? {
            Some(id) => {
                let mut skill = load(tx, caller, "id", &id, now)?;
                let wins: Vec<&MemoryRecord> = successes.iter().map(|&i| &episodes[i].1).collect();
                rules::reinforce_skill(&mut skill.record, policy, &wins, failures, now);
                tx.update_record(&skill.version, &skill.record, SalienceChange::SetAt(now))?;
            }
            None => {
                let seen = tx.sightings(Step::Competence, &group)?;
                let (won, lost): (Vec<_>, Vec<_>) = seen
                    .into_iter()
                    .partition(|s| s.detail.as_deref() == Some(SUCCESS));
                if won.len() < MIN_REPETITIONS {
                    continue;
                }
                let winners = sighted(tx, rules::recent(&won), now)?;
                let wins: Vec<&MemoryRecord> = winners.iter().collect();
                let skill = rules::new_skill(
                    policy,
                    &sequence,
                    &wins,
                    won.len(),
                    lost.len(),
                    now,
                    new_record_id,
                )?;
                tx.insert_record(&skill)?;
                tx.set_output(Step::Competence, &group, &skill.id)?;
            }
        }
        extracted += 1;
    }
    Ok(extracted)
}

/// A plan from every episode with three or more tool calls, once each,
/// for one page.
pub fn extract_plans(
    tx: &mut dyn Transaction,
    now: Timestamp,
    policy: &Policy,
    episodes: &Episodes,
) -> Result<u64, ServiceError> {
    let mut created = 0;
    for (key, episode) in episodes {
        if let Some(plan) = rules::new_plan(policy, episode, now, new_record_id) {
            tx.insert_record(&plan?)?;
            created += 1;
        }
        tx.mark(*key, Step::PlanGraph)?;
    }
    Ok(created)
}

/// Groups of identical active facts (their ids), to merge.
pub fn find_duplicate_facts(tx: &mut dyn Transaction) -> Result<Vec<Vec<String>>, ServiceError> {
    Ok(tx.duplicate_fact_groups()?)
}

/// Merges each group of identical facts into its oldest; answers how many
/// duplicates were retracted. The groups were found earlier, so each is
/// read again here and only records still there, active and identical are
/// merged.
pub fn resolve_duplicates(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    groups: &[Vec<String>],
) -> Result<u64, ServiceError> {
    let mut resolved = 0;
    for ids in groups {
        let mut loaded = Vec::new();
        for id in ids {
            if let Some(found) = tx.get_for_update(id, now)? {
                if caller.may_see(&found.record) {
                    loaded.push(found);
                }
            }
        }
        let records = loaded.iter().map(|l| l.record.clone()).collect();
        let Some((survivor, duplicates)) = rules::merge_duplicates(records, now) else {
            continue;
        };
        let version_of = |id: &str| {
            loaded
                .iter()
                .find(|l| l.record.id == id)
                .map(|l| l.version)
                .expect("merged records were loaded")
        };
        for duplicate in &duplicates {
            tx.update_record(
                &version_of(&duplicate.id),
                duplicate,
                SalienceChange::SetAt(now),
            )?;
            tx.move_outputs(&duplicate.id, &survivor.id)?;
        }
        tx.update_record(
            &version_of(&survivor.id),
            &survivor,
            SalienceChange::Unchanged,
        )?;
        resolved += duplicates.len() as u64;
    }
    Ok(resolved)
}

/// [`read_page`] as a read job.
pub struct ReadEpisodes {
    pub step: Step,
    pub now: Timestamp,
    pub after: i64,
}

impl Job for ReadEpisodes {
    type Output = Episodes;
    const NAME: &'static str = "read_episodes";

    fn run(self, tx: &mut dyn Transaction) -> Result<Episodes, ServiceError> {
        read_page(tx, self.step, self.now, self.after)
    }
}

/// What an extraction step needs besides its page.
#[derive(Clone)]
pub struct Extraction {
    pub caller: Caller,
    pub now: Timestamp,
    pub policy: Policy,
}

/// [`extract_facts`] as a write job.
pub struct ExtractFacts(pub Extraction, pub Episodes);

impl Job for ExtractFacts {
    type Output = u64;
    const NAME: &'static str = "extract_facts";

    fn run(self, tx: &mut dyn Transaction) -> Result<u64, ServiceError> {
        let ExtractFacts(x, page) = self;
        extract_facts(tx, &x.caller, x.now, &x.policy, &page)
    }
}

/// [`extract_skills`] as a write job.
pub struct ExtractSkills(pub Extraction, pub Episodes);

impl Job for ExtractSkills {
    type Output = u64;
    const NAME: &'static str = "extract_skills";

    fn run(self, tx: &mut dyn Transaction) -> Result<u64, ServiceError> {
        let ExtractSkills(x, page) = self;
        extract_skills(tx, &x.caller, x.now, &x.policy, &page)
    }
}

/// [`extract_plans`] as a write job.
pub struct ExtractPlans(pub Extraction, pub Episodes);

impl Job for ExtractPlans {
    type Output = u64;
    const NAME: &'static str = "extract_plans";

    fn run(self, tx: &mut dyn Transaction) -> Result<u64, ServiceError> {
        let ExtractPlans(x, page) = self;
        extract_plans(tx, x.now, &x.policy, &page)
    }
}

/// [`compress_episodes`] as a write job.
pub struct CompressEpisodes {
    pub caller: Caller,
    pub now: Timestamp,
    pub before: Timestamp,
    pub after: i64,
}

impl Job for CompressEpisodes {
    type Output = Page;
    const NAME: &'static str = "compress_episodes";

    fn run(self, tx: &mut dyn Transaction) -> Result<Page, ServiceError> {
        compress_episodes(tx, &self.caller, self.now, self.before, self.after)
    }
}

/// [`find_duplicate_facts`] as a read job.
pub struct FindDuplicateFacts;

impl Job for FindDuplicateFacts {
    type Output = Vec<Vec<String>>;
    const NAME: &'static str = "find_duplicate_facts";

    fn run(self, tx: &mut dyn Transaction) -> Result<Vec<Vec<String>>, ServiceError> {
        find_duplicate_facts(tx)
    }
}

/// [`resolve_duplicates`] as a write job.
pub struct ResolveDuplicates {
    pub caller: Caller,
    pub now: Timestamp,
    pub groups: Vec<Vec<String>>,
}

impl Job for ResolveDuplicates {
    type Output = u64;
    const NAME: &'static str = "resolve_duplicates";

    fn run(self, tx: &mut dyn Transaction) -> Result<u64, ServiceError> {
        resolve_duplicates(tx, &self.caller, self.now, &self.groups)
    }
}
