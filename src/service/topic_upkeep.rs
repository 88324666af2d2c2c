//! Topic maintenance, run by the consolidation actor after topics ingests
//! and reads, never on the request path: duplicate topics merged, faded
//! topics archived once there are many, read topics reinforced.

use crate::domain::ids::RecordId;
use std::collections::BTreeSet;

use serde_json::Value;

use super::job::Job;
use super::revision::{merge, supersede};
use super::topics::{archive_topic, current_fields, index, TopicRules};
use super::ServiceError;
use crate::domain::new_record::NewRecordContext;
use crate::domain::policy::Policy;
use crate::domain::record::{new_record_id, Attribution, SCHEDULER_ACTOR};
use crate::domain::time::Timestamp;
use crate::domain::topic::{
    field_record, index_words, normalize_title, FieldItem, Topic, MERGED_INTO,
};
use crate::domain::trust::Caller;
use crate::store::{EdgeEnd, FieldVersion, KeyedTopic, Transaction};

/// Most topics one archive job archives.
pub const ARCHIVE_PER_WRITE: usize = 1000;

/// Raises the salience of each topic read by the read reinforcement per
/// read (`reads`: topic id and times read), capped by policy. Answers the
/// topics reinforced.
pub fn reinforce_reads(
    tx: &mut dyn Transaction,
    rules: &TopicRules,
    now: Timestamp,
    reads: &[(String, u32)],
) -> Result<u64, ServiceError> {
    let mut reinforced = 0;
    for (id, times) in reads {
        let Some(KeyedTopic { key, mut topic }) = tx.topic_by_id(id)? else {
            continue;
        };
        if topic.archived {
            continue;
        }
        let gain = rules.settings.read_reinforcement * f64::from(*times);
        topic.reinforce(gain, rules.max_salience, &rules.decay, now);
        tx.update_topic(key, &topic)?;
        reinforced += 1;
    }
    Ok(reinforced)
}

/// Whether two topics are duplicates: same normalised title, kind, scope
/// and sensitivity (so the same grants see both).
fn same_home(a: &Topic, b: &Topic) -> bool {
    normalize_title(&a.title) == normalize_title(&b.title)
        && a.kind == b.kind
        && a.scope == b.scope
        && a.sensitivity == b.sensitivity
}

/// The groups of duplicate topics among the topics `ids` (each group
/// oldest first, two topics or more, none archived).
pub fn duplicate_groups(
    tx: &mut dyn Transaction,
    ids: &[String],
) -> Result<Vec<Vec<i64>>, ServiceError> {
    let mut seen = BTreeSet::new();
    let mut groups = Vec::new();
    for id in ids {
        let Some(KeyedTopic { key, topic }) = tx.topic_by_id(id)? else {
            continue;
        };
        if topic.archived || seen.contains(&key) {
            continue;
        }
        let group: Vec<i64> = tx
            .topics_titled(&topic.title, topic.scope.as_deref())?
            .into_iter()
            .filter(|found| same_home(&topic, &found.topic))
            .map(|found| found.key)
            .collect();
        seen.extend(group.iter().copied());
        if group.len() > 1 {
            groups.push(group);
        }
    }
    Ok(groups)
}

/// Merges the later topics of `group` into its first, each still a
/// duplicate of it when the merge runs; answers how many were merged.
pub fn merge_group(
    tx: &mut dyn Transaction,
    cx: &NewRecordContext<'_>,
    rules: &TopicRules,
    group: &[i64],
) -> Result<u64, ServiceError> {
    let Some((&winner_key, losers)) = group.split_first() else {
        return Ok(0);
    };
    let Some(mut winner) = tx.topic_by_key(winner_key)? else {
        return Ok(0);
    };
    let mut merged = 0;
    for &loser_key in losers {
        let Some(loser) = tx.topic_by_key(loser_key)? else {
            continue;
        };
        if winner.archived || loser.archived || !same_home(&winner, &loser) {
            continue;
        }
        merge_into(tx, cx, rules, (winner_key, &mut winner), (loser_key, loser))?;
        merged += 1;
    }
    Ok(merged)
}

/// Merges topic `loser` into `winner`: each field's versions join the
/// winner's history, followed by a version made by revision (a merge of
/// the two current records, or a supersession of the loser's when the
/// winner has no such field) holding the newer value; the loser's edges
/// move to the winner; the loser is archived with a `merged_into` edge.
fn merge_into(
    tx: &mut dyn Transaction,
    cx: &NewRecordContext<'_>,
    rules: &TopicRules,
    (winner_key, winner): (i64, &mut Topic),
    (loser_key, mut loser): (i64, Topic),
) -> Result<(), ServiceError> {
    let now = cx.now;
    let caller = Caller::unrestricted(Some(SCHEDULER_ACTOR.to_string()));
    let why = format!(
        "topic {} merged into topic {}: same title and scope",
        loser.id, winner.id
    );
    let by = Attribution::new(SCHEDULER_ACTOR.to_string(), why.clone());
    let mut heads = current_fields(tx, winner_key)?;
    for theirs in tx.field_heads(loser_key, None)? {
        if theirs.ended {
            continue;
        }
        let ours = heads.get(&theirs.name).filter(|ours| !ours.ended);
        let value: Value = match ours {
            Some(ours) if ours.valid_from >= theirs.valid_from => ours.value.clone(),
            _ => theirs.value.clone(),
        };
        let item = FieldItem {
            name: theirs.name.clone(),
            value: value.clone(),
            why_changed: Some(why.clone()),
        };
        let record = field_record(cx, winner, &item, SCHEDULER_ACTOR)?;
        let record = match ours {
            Some(ours) => merge(
                tx,
                &caller,
                now,
                &by,
                &[
                    RecordId::stored(ours.record_id.clone()),
                    RecordId::stored(theirs.record_id.clone()),
                ],
                record,
                cx.policy.max_merge_bytes,
            )?,
            None => {
                let old = RecordId::stored(theirs.record_id.clone());
                supersede(tx, &caller, now, &by, &old, record)?
            }
        };
        // Both histories in the order their values took effect, then the
        // joined version.
        let mut versions = tx.field_versions(winner_key, &theirs.name)?;
        versions.extend(tx.field_versions(loser_key, &theirs.name)?);
        versions.sort_by_key(|version| version.valid_from);
        tx.drop_versions(winner_key, &theirs.name)?;
        tx.drop_versions(loser_key, &theirs.name)?;
        versions.push(FieldVersion {
            name: theirs.name.clone(),
            seq: 0,
            record_id: record.id,
            valid_from: now,
            value,
            source: SCHEDULER_ACTOR.to_string(),
            why_changed: Some(why.clone()),
            retracted: false,
            ended: false,
        });
        for (seq, version) in versions.iter_mut().enumerate() {
            version.seq = seq as i64 + 1;
            tx.add_version(winner_key, version)?;
        }
        tx.trim_versions(winner_key, &theirs.name, rules.settings.max_field_history)?;
        let head = versions.pop().expect("the joined version was pushed");
        heads.insert(theirs.name, head);
    }

    for EdgeEnd { other, edge } in tx.edges_of(loser_key, None)? {
        let outgoing = edge.from_topic_id == loser.id;
        let (from, to) = if outgoing {
            (loser_key, other)
        } else {
            (other, loser_key)
        };
        tx.remove_edge(from, to, &edge.kind, now)?;
        let moved = |key: i64| if key == loser_key { winner_key } else { key };
        let (from, to) = (moved(from), moved(to));
        if from != to {
            tx.add_edge(from, to, &edge.kind, now)?;
        }
    }
    tx.add_edge(loser_key, winner_key, MERGED_INTO, now)?;

    if winner.summary.is_empty() && !loser.summary.is_empty() {
        let old = index_words(&winner.text());
        winner.summary.clone_from(&loser.summary);
        tx.set_topic_words(winner_key, winner, &old, &index_words(&winner.text()))?;
    }
    for tag in &loser.tags {
        if !winner.tags.contains(tag) {
            winner.tags.push(tag.clone());
        }
    }
    if loser.salience_at(&rules.decay, now) > winner.salience_at(&rules.decay, now) {
        winner.anchor = loser.anchor;
        winner.salience = loser.salience;
    }
    winner.updated_at = now;
    tx.update_topic(winner_key, winner)?;
    index(tx, winner_key, winner, heads.values(), false)?;

    archive_topic(tx, loser_key, &mut loser, now)?;
    Ok(())
}

/// When more than `topics.archive_after_count` topics are not archived,
/// archives the least salient of those whose salience faded below
/// `topics.archive_below_salience`, until that many remain (at most
/// [`ARCHIVE_PER_WRITE`] per call). Answers how many were archived.
pub fn archive_faded(
    tx: &mut dyn Transaction,
    rules: &TopicRules,
    now: Timestamp,
) -> Result<u64, ServiceError> {
    let settings = rules.settings;
    let active = tx.active_topics()?;
    let over = active.saturating_sub(settings.archive_after_count as u64) as usize;
    if over == 0 {
        return Ok(0);
    }
    let mut archived = 0;
    for key in tx.fading_topics(settings.archive_below_salience, over.min(ARCHIVE_PER_WRITE))? {
        let Some(mut topic) = tx.topic_by_key(key)? else {
            continue;
        };
        archive_topic(tx, key, &mut topic, now)?;
        archived += 1;
    }
    Ok(archived)
}

/// [`reinforce_reads`] as a write job.
pub struct ReinforceReads {
    pub rules: TopicRules,
    pub now: Timestamp,
    pub reads: Vec<(String, u32)>,
}

impl Job for ReinforceReads {
    type Output = u64;
    const NAME: &'static str = "reinforce_topic_reads";

    fn run(self, tx: &mut dyn Transaction) -> Result<u64, ServiceError> {
        reinforce_reads(tx, &self.rules, self.now, &self.reads)
    }
}

/// [`duplicate_groups`] as a read job.
pub struct FindDuplicateTopics {
    pub ids: Vec<String>,
}

impl Job for FindDuplicateTopics {
    type Output = Vec<Vec<i64>>;
    const NAME: &'static str = "find_duplicate_topics";

    fn run(self, tx: &mut dyn Transaction) -> Result<Vec<Vec<i64>>, ServiceError> {
        duplicate_groups(tx, &self.ids)
    }
}

/// [`merge_group`] as a write job.
pub struct MergeTopics {
    pub policy: Policy,
    pub now: Timestamp,
    pub rules: TopicRules,
    pub group: Vec<i64>,
}

impl Job for MergeTopics {
    type Output = u64;
    const NAME: &'static str = "merge_topics";

    fn run(self, tx: &mut dyn Transaction) -> Result<u64, ServiceError> {
        let cx = NewRecordContext {
            policy: &self.policy,
            now: self.now,
            new_id: &new_record_id,
            key: None,
        };
        merge_group(tx, &cx, &self.rules, &self.group)
    }
}

/// Whether any active topic's salience is below `below`.
pub struct AnyFading {
    pub below: f64,
}

impl Job for AnyFading {
    type Output = bool;
    const NAME: &'static str = "any_fading_topic";

    fn run(self, tx: &mut dyn Transaction) -> Result<bool, ServiceError> {
        Ok(!tx.fading_topics(self.below, 1)?.is_empty())
    }
}

/// [`archive_faded`] as a write job.
pub struct ArchiveFaded {
    pub rules: TopicRules,
    pub now: Timestamp,
}

impl Job for ArchiveFaded {
    type Output = u64;
    const NAME: &'static str = "archive_faded_topics";

    fn run(self, tx: &mut dyn Transaction) -> Result<u64, ServiceError> {
        archive_faded(tx, &self.rules, self.now)
    }
}
