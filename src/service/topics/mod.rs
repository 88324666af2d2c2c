//! Topics: an observation placed as a new topic, an extension of one or a
//! new version of one field (or wherever `auto` finds it belongs), a
//! topic's view now or at an earlier instant, a field's history, edges and
//! archiving. Field versions are semantic records, written with the
//! revision rules, so trust, audit and history apply to them as to any
//! record.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;
use serde_json::Value;

use super::job::Job;
use super::revision::{reinforce, supersede};
use super::{insert_new, not_found, place, place_new, ServiceError};
use crate::config::TopicSettings;
use crate::domain::decay::Anchor;
use crate::domain::new_record::NewRecordContext;
use crate::domain::payload::Payload;
use crate::domain::policy::Policy;
use crate::domain::record::{Attribution, DecayProfile, MemoryRecord, MemoryType};
use crate::domain::time::Timestamp;
use crate::domain::topic::{
    field_record, index_words, text_similarity, FieldOp, Placement, Topic, TopicIngest,
    MAX_SIMILAR, MERGED_INTO,
};
use crate::domain::trust::Caller;
use crate::domain::validate::ValidationError;
use crate::domain::vector::{Embedding, QueryVector};
use crate::store::{EdgeEnd, FieldVersion, TopicEdge, Transaction, Visibility};

mod edges;
mod fields;
mod placement;
mod query;
mod views;

pub use edges::*;
pub use fields::*;
pub use placement::*;
pub use query::*;
pub use views::*;

/// What topics need of the configuration: the `[topics]` settings, and
/// how a topic's salience fades and grows.
#[derive(Debug, Clone)]
pub struct TopicRules {
    pub settings: TopicSettings,
    /// Topics fade like their fields: with the semantic records' profile.
    pub decay: DecayProfile,
    pub initial_salience: f64,
    pub max_salience: f64,
}

impl TopicRules {
    pub fn new(settings: TopicSettings, policy: &Policy) -> TopicRules {
        TopicRules {
            settings,
            decay: policy.decay_profile(MemoryType::Semantic),
            initial_salience: policy.initial_salience,
            max_salience: policy.max_salience,
        }
    }
}

/// What an ingest did to one field.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Applied {
    pub field: String,
    pub op: FieldOp,
    /// The record holding the field's value now.
    pub record_id: String,
}

/// The answer to a topics ingest.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Ingested {
    pub topic_id: String,
    /// The placement applied (`auto` resolved to one of the others).
    pub placement: Placement,
    /// Why `auto` extended the topic it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matched: Option<Matched>,
    pub applied: Vec<Applied>,
    pub edges_added: usize,
    pub similar_topic_ids: Vec<String>,
}

/// Archives `topic` (key `key`): it stays readable by id; placement and
/// topic search no longer find it, and its words leave the word index,
/// since nothing looks an archived topic up by them.
pub(crate) fn archive_topic(
    tx: &mut dyn Transaction,
    key: i64,
    topic: &mut Topic,
    now: Timestamp,
) -> Result<(), ServiceError> {
    topic.archived = true;
    topic.updated_at = now;
    tx.update_topic(key, topic)?;
    tx.set_topic_words(key, topic, &index_words(&topic.text()), &BTreeSet::new())?;
    Ok(())
}

pub(super) fn visible(caller: &Caller, topic: &Topic) -> bool {
    caller
        .trust
        .allows_parts(topic.sensitivity, topic.scope.as_deref())
}

/// Whether topic `key` is stored and `caller` may see it.
pub(super) fn sees(
    tx: &mut dyn Transaction,
    caller: &Caller,
    key: i64,
) -> Result<bool, ServiceError> {
    Ok(tx
        .topic_by_key(key)?
        .is_some_and(|topic| visible(caller, &topic)))
}

/// Who may see a field version: its record's sensitivity and scope. A
/// version made through the revisions API may be more sensitive than its
/// topic, or in another scope; one made by a topics ingest is the topic's.
/// A record no longer stored (pruned) was the topic's: records that a
/// revision made supersede another and are never pruned.
struct VersionAccess {
    /// What is known of each record id, so a walk reads each once.
    seen: HashMap<String, Option<Visibility>>,
}

impl VersionAccess {
    fn new() -> Self {
        VersionAccess {
            seen: HashMap::new(),
        }
    }

    fn of(
        &mut self,
        tx: &mut dyn Transaction,
        version: &FieldVersion,
    ) -> Result<Option<Visibility>, ServiceError> {
        if let Some(known) = self.seen.get(&version.record_id) {
            return Ok(known.clone());
        }
        let found = tx.record_visibility(&version.record_id)?;
        self.seen.insert(version.record_id.clone(), found.clone());
        Ok(found)
    }

    /// Whether `caller`, who sees the topic, may see `version`.
    fn caller_sees(
        &mut self,
        tx: &mut dyn Transaction,
        caller: &Caller,
        version: &FieldVersion,
    ) -> Result<bool, ServiceError> {
        if caller.is_unrestricted() {
            return Ok(true);
        }
        Ok(match self.of(tx, version)? {
            Some(seen) => caller
                .trust
                .allows_parts(seen.sensitivity, seen.scope.as_deref()),
            None => true,
        })
    }

    /// Whether everyone who sees `topic` may see `version`: only such
    /// values go into the topic's search text, so no query finds or ranks
    /// a topic by a value its reader may not see.
    fn within_topic(
        &mut self,
        tx: &mut dyn Transaction,
        topic: &Topic,
        version: &FieldVersion,
    ) -> Result<bool, ServiceError> {
        Ok(match self.of(tx, version)? {
            Some(seen) => {
                seen.sensitivity <= topic.sensitivity
                    && (seen.scope.is_none() || seen.scope == topic.scope)
            }
            None => true,
        })
    }
}

/// `head` of a field of topic `key` if it `passes`, else the latest version
/// before it that does, else none; none when the field had ended (at
/// `head`, or after the version that passes).
fn latest_that(
    tx: &mut dyn Transaction,
    key: i64,
    head: FieldVersion,
    mut passes: impl FnMut(&mut dyn Transaction, &FieldVersion) -> Result<bool, ServiceError>,
) -> Result<Option<FieldVersion>, ServiceError> {
    if head.ended {
        return Ok(None);
    }
    if passes(tx, &head)? {
        return Ok(Some(head));
    }
    let mut latest = None;
    for version in tx.field_versions(key, &head.name)? {
        if version.seq >= head.seq {
            break;
        }
        if version.ended {
            latest = None;
        } else if passes(tx, &version)? {
            latest = Some(version);
        }
    }
    Ok(latest)
}

/// Each of `versions` (in order) with the instant the next one starts,
/// `None` for the last.
fn until_next<T>(
    versions: Vec<T>,
    start: impl Fn(&T) -> Timestamp,
) -> impl Iterator<Item = (T, Option<Timestamp>)> {
    let ends: Vec<Option<Timestamp>> = versions
        .iter()
        .skip(1)
        .map(|next| Some(start(next)))
        .chain([None])
        .collect();
    versions.into_iter().zip(ends)
}

/// Topic `id` if the caller may see it; `NotFound` naming `field`
/// otherwise (the same for a missing topic).
fn load_topic(
    tx: &mut dyn Transaction,
    caller: &Caller,
    field: &str,
    id: &str,
) -> Result<(i64, Topic), ServiceError> {
    tx.topic_by_id(id)?
        .filter(|found| visible(caller, &found.topic))
        .map(|found| (found.key, found.topic))
        .ok_or_else(|| not_found(field, "topic"))
}

/// Most merges followed from a topic to the one it ended in.
const MAX_MERGE_HOPS: usize = 8;

/// The topic `found` was merged into, if it was (through every later merge,
/// as long as the caller may see each): writes meant for a merged topic go
/// to the topic that holds its fields now.
fn follow_merges(
    tx: &mut dyn Transaction,
    caller: &Caller,
    mut found: (i64, Topic),
) -> Result<(i64, Topic), ServiceError> {
    for _ in 0..MAX_MERGE_HOPS {
        if !found.1.archived {
            break;
        }
        let into = tx
            .edges_of(found.0, None)?
            .into_iter()
            .find(|end| end.edge.kind == MERGED_INTO && end.edge.from_topic_id == found.1.id);
        let Some(EdgeEnd { other: key, .. }) = into else {
            break;
        };
        match tx.topic_by_key(key)? {
            Some(topic) if visible(caller, &topic) => found = (key, topic),
            _ => break,
        }
    }
    Ok(found)
}

/// The current version of each field of topic `key` that has not ended,
/// its record's id: what the topic links to (graph retrieval).
pub(crate) fn live_heads(
    tx: &mut dyn Transaction,
    key: i64,
) -> Result<Vec<FieldVersion>, ServiceError> {
    let mut heads = tx.field_heads(key, None)?;
    heads.retain(|head| !head.ended);
    Ok(heads)
}

/// The current version of each field of topic `key`, by name (an ended
/// field's too: its next version follows it).
pub(super) fn current_fields(
    tx: &mut dyn Transaction,
    key: i64,
) -> Result<BTreeMap<String, FieldVersion>, ServiceError> {
    Ok(tx
        .field_heads(key, None)?
        .into_iter()
        .map(|head| (head.name.clone(), head))
        .collect())
}

/// Makes topic `key`'s search text again from what is stored of it (a
/// database copied from another backend).
pub fn reindex(tx: &mut dyn Transaction, key: i64) -> Result<(), ServiceError> {
    let Some(topic) = tx.topic_by_key(key)? else {
        return Ok(());
    };
    let heads = current_fields(tx, key)?;
    index(tx, key, &topic, heads.values(), false)?;
    Ok(())
}

/// Makes the search text of the topics a schema change left to be made
/// again (schema version 14 on SQLite, 5 on PostgreSQL); answers how
/// many.
pub fn index_pending(tx: &mut dyn Transaction) -> Result<usize, ServiceError> {
    let keys = tx.topics_to_index()?;
    for &key in &keys {
        reindex(tx, key)?;
    }
    tx.topics_indexed(&keys)?;
    Ok(keys.len())
}

/// Writes what the topic index holds of topic `key`: its title, summary
/// and the current value of each field that everyone who may see the
/// topic may see (else the latest such version's; else none).
pub(super) fn index<'a>(
    tx: &mut dyn Transaction,
    key: i64,
    topic: &Topic,
    heads: impl Iterator<Item = &'a FieldVersion>,
    fresh: bool,
) -> Result<(), ServiceError> {
    let mut access = VersionAccess::new();
    let mut text = topic.text();
    for head in heads {
        let indexed = latest_that(tx, key, head.clone(), |tx, version| {
            access.within_topic(tx, topic, version)
        })?;
        text.push(' ');
        match indexed.map(|version| version.value) {
            Some(Value::String(s)) => text.push_str(&s),
            Some(other) => text.push_str(&other.to_string()),
            None => {}
        }
    }
    tx.index_topic(key, text, fresh)?;
    Ok(())
}
