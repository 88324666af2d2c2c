//! Topics: an observation placed as a new topic, an extension of one or a
//! new version of one field (or wherever `auto` finds it belongs), a
//! topic's view now or at an earlier instant, a field's history, edges and
//! archiving. Field versions are semantic records, written with the
//! revision rules, so trust, audit and history apply to them as to any
//! record.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;
use serde_json::Value;

use super::revision::{reinforce, supersede};
use super::{insert_new, not_found, place, place_new, ServiceError};
use crate::config::TopicSettings;
use crate::domain::decay::Anchor;
use crate::domain::ingest::IngestContext;
use crate::domain::payload::Payload;
use crate::domain::policy::Policy;
use crate::domain::record::{Attribution, DecayProfile, MemoryRecord, MemoryType, Sensitivity};
use crate::domain::time::Timestamp;
use crate::domain::topic::{
    field_record, index_words, text_similarity, FieldOp, Placement, Topic, TopicIngest,
    MAX_SIMILAR, MERGED_INTO,
};
use crate::domain::trust::Caller;
use crate::domain::validate::ValidationError;
use crate::domain::vector::{Embedding, QueryVector};
use crate::store::{FieldVersion, TopicEdge, Transaction};

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
    pub applied: Vec<Applied>,
    pub edges_added: usize,
    pub similar_topic_ids: Vec<String>,
}

pub(super) fn visible(caller: &Caller, topic: &Topic) -> bool {
    caller
        .trust
        .allows_parts(topic.sensitivity, topic.scope.as_deref())
}

/// Who may see a field version: its record's sensitivity and scope. A
/// version made through the revisions API may be more sensitive than its
/// topic, or in another scope; one made by a topics ingest is the topic's.
/// A record no longer stored (pruned) was the topic's: records that a
/// revision made supersede another and are never pruned.
struct VersionAccess {
    /// What is known of each record id, so a walk reads each once.
    seen: HashMap<String, Option<(Sensitivity, Option<String>)>>,
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
    ) -> Result<Option<(Sensitivity, Option<String>)>, ServiceError> {
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
            Some((sensitivity, scope)) => caller.trust.allows_parts(sensitivity, scope.as_deref()),
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
            Some((sensitivity, scope)) => {
                sensitivity <= topic.sensitivity && (scope.is_none() || scope == topic.scope)
            }
            None => true,
        })
    }
}

/// `head` of a field of topic `key` if it `passes`, else the latest version
/// before it that does, else none.
fn latest_that(
    tx: &mut dyn Transaction,
    key: i64,
    head: FieldVersion,
    mut passes: impl FnMut(&mut dyn Transaction, &FieldVersion) -> Result<bool, ServiceError>,
) -> Result<Option<FieldVersion>, ServiceError> {
    if passes(tx, &head)? {
        return Ok(Some(head));
    }
    let mut latest = None;
    for version in tx.field_versions(key, &head.name)? {
        if version.seq < head.seq && passes(tx, &version)? {
            latest = Some(version);
        }
    }
    Ok(latest)
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
        .filter(|(_, topic)| visible(caller, topic))
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
            .find(|(_, edge)| edge.kind == MERGED_INTO && edge.from_topic_id == found.1.id);
        let Some((key, _)) = into else { break };
        match tx.topic_by_key(key)? {
            Some(topic) if visible(caller, &topic) => found = (key, topic),
            _ => break,
        }
    }
    Ok(found)
}

/// Places and stores a topics ingest: every check (placement, topic,
/// edges) comes before the first write.
pub fn ingest(
    tx: &mut dyn Transaction,
    caller: &Caller,
    cx: &IngestContext<'_>,
    rules: &TopicRules,
    request: TopicIngest,
) -> Result<Ingested, ServiceError> {
    let settings = rules.settings;
    let now = cx.now;
    // Where a new topic would go, and that the caller may write there.
    let mut scope = request.scope.clone();
    place(caller, "", request.sensitivity, &mut scope)?;
    let text = format!(
        "{} {}",
        request.title.as_deref().unwrap_or_default(),
        request.summary.as_deref().unwrap_or_default()
    );
    super::check_embedding(tx, "embedding", request.embedding.as_ref())?;
    let similar_topic_ids = if request.suggest_similar {
        similar_ids(tx, caller, &text, request.embedding.as_ref())?
    } else {
        Vec::new()
    };

    let (target, placement) = match request.placement {
        Placement::NewTopic => (None, Placement::NewTopic),
        Placement::ExtendTopic | Placement::VersionField => {
            let id = request.topic_id.as_deref().unwrap_or_default();
            let found = load_topic(tx, caller, "topic_id", id)?;
            (Some(follow_merges(tx, caller, found)?), request.placement)
        }
        Placement::Auto => {
            match find_home(tx, caller, &request, scope.as_deref(), &text, settings)? {
                Some(found) => (Some(found), Placement::ExtendTopic),
                None => (None, Placement::NewTopic),
            }
        }
    };

    let home = target.as_ref().map(|(key, _)| *key);
    let mut edges = Vec::with_capacity(request.edges.len());
    for (i, edge) in request.edges.iter().enumerate() {
        let field = format!("edges[{i}].to_topic_id");
        let (key, _) = load_topic(tx, caller, &field, &edge.to_topic_id)?;
        if home == Some(key) {
            return Err(self_edge(&field).into());
        }
        edges.push((key, edge.kind.as_str()));
    }

    let (key, mut topic, fresh) = match target {
        Some((key, topic)) => (key, topic, false),
        None => {
            let topic = Topic {
                id: (cx.new_id)(),
                title: request.title.clone().unwrap_or_default(),
                summary: request.summary.clone().unwrap_or_default(),
                kind: request.kind.clone(),
                sensitivity: request.sensitivity,
                scope,
                tags: request.tags.clone(),
                salience: rules.initial_salience,
                archived: false,
                created_at: now,
                updated_at: now,
                anchor: Anchor {
                    salience: rules.initial_salience,
                    at: now,
                },
            };
            let key = tx.insert_topic(&topic)?;
            (key, topic, true)
        }
    };

    let mut heads = current_fields(tx, key)?;
    if placement == Placement::VersionField {
        let name = &request.fields[0].name;
        if !heads.contains_key(name) {
            return Err(ValidationError::new(
                "fields[0].name",
                format!("version_field needs a field the topic has; it has no field {name:?}"),
            )
            .into());
        }
    }

    let mut applied = Vec::with_capacity(request.fields.len());
    let mut access = VersionAccess::new();
    for (i, item) in request.fields.iter().enumerate() {
        let head = heads.get(&item.name).cloned();
        // A field whose current version the caller may not see is not its
        // to change, whatever the value: comparing, reinforcing or
        // superseding that version would tell the caller about it.
        if let Some(head) = &head {
            if !access.caller_sees(tx, caller, head)? {
                return Err(ServiceError::NotFound(format!(
                    "fields[{i}].name: the topic has no field {:?} this caller may change",
                    item.name
                )));
            }
        }
        // A retracted head is no value: the field is stated afresh, its
        // history going on.
        let live = head.as_ref().filter(|h| !h.retracted);
        let op = FieldOp::of(live.map(|h| &h.value), &item.value);
        let by = Attribution::new(
            caller.actor(&request.source),
            item.why_changed
                .clone()
                .unwrap_or_else(|| format!("topic field {} changed", item.name)),
        );
        let record_id = match (op, live) {
            (FieldOp::Unchanged, Some(head)) => {
                reinforce(
                    tx,
                    caller,
                    now,
                    &by,
                    &head.record_id,
                    cx.policy.max_salience,
                )?;
                head.record_id.clone()
            }
            // Created (no head) or versioned (a head with another value).
            _ => {
                let mut record = field_record(cx, &topic, item, &request.source)?;
                let record = match live {
                    Some(head) => supersede(tx, caller, now, &by, &head.record_id, record)?,
                    None => {
                        place_new(caller, &format!("fields[{}].", applied.len()), &mut record)?;
                        insert_new(tx, &mut record, now)?;
                        record
                    }
                };
                let version = FieldVersion {
                    name: item.name.clone(),
                    seq: head.as_ref().map_or(1, |head| head.seq + 1),
                    record_id: record.id.clone(),
                    valid_from: next_valid_from(head.as_ref(), now),
                    value: item.value.clone(),
                    source: request.source.clone(),
                    why_changed: item.why_changed.clone(),
                    retracted: false,
                };
                tx.add_version(key, &version)?;
                if version.seq as usize > settings.max_field_history {
                    tx.trim_versions(key, &item.name, settings.max_field_history)?;
                }
                heads.insert(item.name.clone(), version);
                record.id
            }
        };
        applied.push(Applied {
            field: item.name.clone(),
            op,
            record_id,
        });
    }

    if let Some(embedding) = &request.embedding {
        tx.put_topic_vector(key, embedding)?;
    }

    let mut edges_added = 0;
    for (to, kind) in edges {
        edges_added += usize::from(tx.add_edge(key, to, kind, now)?);
    }

    if fresh {
        tx.set_topic_words(key, &BTreeSet::new(), &index_words(&topic.text()))?;
    } else {
        if let Some(summary) = request.summary.as_ref().filter(|s| **s != topic.summary) {
            let old = index_words(&topic.text());
            topic.summary.clone_from(summary);
            tx.set_topic_words(key, &old, &index_words(&topic.text()))?;
        }
        // An observation about a topic is a use of it.
        topic.reinforce(
            rules.decay.reinforcement_gain,
            rules.max_salience,
            &rules.decay,
            now,
        );
        topic.updated_at = now;
        tx.update_topic(key, &topic)?;
    }
    index(tx, key, &topic, heads.values(), fresh)?;
    Ok(Ingested {
        topic_id: topic.id,
        placement,
        applied,
        edges_added,
        similar_topic_ids,
    })
}

/// Most topics read per word, and most topics compared, when looking for
/// topics similar to an observation.
const PER_WORD: usize = 500;
const MAX_CANDIDATES: usize = 100;

/// The topics not archived that the caller may see whose title and summary
/// share at least `at_least` words with `text`, with their similarity to
/// it, most similar first.
fn similar(
    tx: &mut dyn Transaction,
    caller: &Caller,
    text: &str,
    at_least: usize,
) -> Result<Vec<(f64, i64, Topic)>, ServiceError> {
    let words = index_words(text);
    if words.is_empty() {
        return Ok(Vec::new());
    }
    let mut found = Vec::new();
    for (key, _) in tx
        .topics_sharing(&words, PER_WORD)?
        .into_iter()
        .filter(|(_, shared)| *shared >= at_least)
        .take(MAX_CANDIDATES)
    {
        let Some(topic) = tx.topic_by_key(key)? else {
            continue;
        };
        if !topic.archived && visible(caller, &topic) {
            found.push((text_similarity(text, &topic.text()), key, topic));
        }
    }
    found.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    Ok(found)
}

/// The ids of up to [`MAX_SIMILAR`] topics the caller may see most like an
/// observation: by the share of title and summary words in common, and by
/// the cosine of their vectors with `embedding`, the higher of the two.
fn similar_ids(
    tx: &mut dyn Transaction,
    caller: &Caller,
    text: &str,
    embedding: Option<&Embedding>,
) -> Result<Vec<String>, ServiceError> {
    let mut best: BTreeMap<i64, (f64, String)> = BTreeMap::new();
    let mut offer = |key: i64, score: f64, id: String| {
        let entry = best.entry(key).or_insert((score, id));
        entry.0 = entry.0.max(score);
    };
    for (similarity, key, topic) in similar(tx, caller, text, 1)?.into_iter().take(MAX_SIMILAR) {
        offer(key, similarity, topic.id);
    }
    if let Some(embedding) = embedding {
        let query = QueryVector::new(embedding);
        for (key, cosine) in tx.nearest_topics(&query, &caller.trust, None, MAX_SIMILAR)? {
            if let Some(topic) = tx.topic_by_key(key)? {
                offer(key, cosine, topic.id);
            }
        }
    }
    let mut ranked: Vec<(f64, i64, String)> = best
        .into_iter()
        .map(|(key, (score, id))| (score, key, id))
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    Ok(ranked
        .into_iter()
        .take(MAX_SIMILAR)
        .map(|(_, _, id)| id)
        .collect())
}

/// After record `old_id` was superseded through the revisions API by
/// `new`: when `old_id` was a topic field's current version and `new`
/// still states that field (the topic's id as subject, the field's name as
/// predicate), `new` becomes the field's next version, so views and
/// histories follow revisions made outside topics ingests.
pub fn field_superseded(
    tx: &mut dyn Transaction,
    now: Timestamp,
    by: &Attribution,
    old_id: &str,
    new: &MemoryRecord,
) -> Result<(), ServiceError> {
    let Some(key) = tx.topic_of_record(old_id)? else {
        return Ok(());
    };
    let Payload::Semantic(fact) = &new.payload else {
        return Ok(());
    };
    let Some(topic) = tx.topic_by_key(key)? else {
        return Ok(());
    };
    let mut heads = current_fields(tx, key)?;
    let Some(head) = heads.get(&fact.predicate) else {
        return Ok(());
    };
    if fact.subject != topic.id || head.record_id != old_id {
        return Ok(());
    }
    let version = FieldVersion {
        name: fact.predicate.clone(),
        seq: head.seq + 1,
        record_id: new.id.clone(),
        valid_from: next_valid_from(Some(head), now),
        value: fact.object.clone(),
        source: by.actor.clone(),
        why_changed: Some(by.rationale.clone()),
        retracted: false,
    };
    tx.add_version(key, &version)?;
    heads.insert(version.name.clone(), version);
    index(tx, key, &topic, heads.values(), false)?;
    Ok(())
}

/// When a version made at `now` after `head` takes effect: `now`, or the
/// head's own start if that is later. `now` is read when the request is
/// taken, before the writer runs it, so another version of the field may
/// have been committed in between with a later instant; a version never
/// starts before the one it replaces, or `as_of` could never find it.
fn next_valid_from(head: Option<&FieldVersion>, now: Timestamp) -> Timestamp {
    head.map_or(now, |head| head.valid_from.max(now))
}

/// Where `auto` puts an observation: a topic of the same scope the caller
/// may see, with the same title, or else the most similar text at or
/// above the threshold.
fn find_home(
    tx: &mut dyn Transaction,
    caller: &Caller,
    request: &TopicIngest,
    scope: Option<&str>,
    text: &str,
    settings: TopicSettings,
) -> Result<Option<(i64, Topic)>, ServiceError> {
    let title = request.title.as_deref().unwrap_or_default();
    if let Some(found) = tx
        .topics_titled(title, scope)?
        .into_iter()
        .find(|(_, topic)| visible(caller, topic))
    {
        return Ok(Some(found));
    }
    // A topic that similar shares at least this many of the words (their
    // union is at least as large as the observation's words).
    let threshold = settings.match_threshold;
    let at_least = (threshold * index_words(text).len() as f64).ceil() as usize;
    let best = similar(tx, caller, text, at_least.max(1))?
        .into_iter()
        .find(|(similarity, _, topic)| *similarity >= threshold && topic.scope.as_deref() == scope);
    Ok(best.map(|(_, key, topic)| (key, topic)))
}

/// The current version of each field of topic `key`, by name.
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

/// A field's value in a view.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct FieldView {
    pub value: Value,
    #[serde(with = "crate::domain::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub valid_from: Timestamp,
    pub record_id: String,
}

/// A topic with its fields and edges, now or as of an instant.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct TopicView {
    #[serde(flatten)]
    pub topic: Topic,
    pub fields: BTreeMap<String, FieldView>,
    pub edges: Vec<TopicEdge>,
}

/// When and how a read sees topics: its instant, the instant it asks
/// about, and how salience fades.
#[derive(Debug, Clone)]
pub struct Reading {
    pub now: Timestamp,
    pub as_of: Option<Timestamp>,
    pub decay: DecayProfile,
}

/// Topic `id` as it stands, or as it stood at `as_of`: each field's value
/// then, and the edges that stood then to topics the caller may see.
pub fn view(
    tx: &mut dyn Transaction,
    caller: &Caller,
    id: &str,
    reading: &Reading,
) -> Result<TopicView, ServiceError> {
    let (key, topic) = load_topic(tx, caller, "", id)?;
    view_of(tx, caller, key, topic, reading)
}

/// [`view`] of a topic already loaded (and visible) under `key`.
fn view_of(
    tx: &mut dyn Transaction,
    caller: &Caller,
    key: i64,
    topic: Topic,
    reading: &Reading,
) -> Result<TopicView, ServiceError> {
    let as_of = reading.as_of;
    let topic = topic.decayed(&reading.decay, reading.now);
    let mut fields = BTreeMap::new();
    let mut access = VersionAccess::new();
    for head in tx.field_heads(key, as_of)? {
        // A head the caller may not see gives way to the latest version
        // before it that it may, or the field is left out.
        let shown = latest_that(tx, key, head, |tx, version| {
            access.caller_sees(tx, caller, version)
        })?;
        if let Some(head) = shown {
            fields.insert(
                head.name,
                FieldView {
                    value: head.value,
                    valid_from: head.valid_from,
                    record_id: head.record_id,
                },
            );
        }
    }
    let mut edges = Vec::new();
    for (other, edge) in tx.edges_of(key, as_of)? {
        if tx
            .topic_by_key(other)?
            .is_some_and(|topic| visible(caller, &topic))
        {
            edges.push(edge);
        }
    }
    Ok(TopicView {
        topic,
        fields,
        edges,
    })
}

/// One version in a field's history.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct VersionView {
    pub value: Value,
    #[serde(with = "crate::domain::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub valid_from: Timestamp,
    /// When the next version took over; `None` for the current one.
    #[serde(with = "crate::domain::time::rfc3339_option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub valid_to: Option<Timestamp>,
    pub why_changed: Option<String>,
    pub source: String,
    pub record_id: String,
}

/// The kept versions of field `name` of topic `id`, oldest first.
pub fn field_history(
    tx: &mut dyn Transaction,
    caller: &Caller,
    id: &str,
    name: &str,
) -> Result<Vec<VersionView>, ServiceError> {
    let (key, _) = load_topic(tx, caller, "", id)?;
    history_of(tx, caller, key, name)
}

/// [`field_history`] of a topic already loaded (and visible) under `key`:
/// the versions the caller may see, each valid until the next of them (so
/// no hidden version shows, not even as the end of another).
fn history_of(
    tx: &mut dyn Transaction,
    caller: &Caller,
    key: i64,
    name: &str,
) -> Result<Vec<VersionView>, ServiceError> {
    let mut access = VersionAccess::new();
    let mut versions = Vec::new();
    for version in tx.field_versions(key, name)? {
        if access.caller_sees(tx, caller, &version)? {
            versions.push(version);
        }
    }
    if versions.is_empty() {
        return Err(ServiceError::NotFound(format!(
            "the topic has no field {name:?}"
        )));
    }
    let valid_to: Vec<Option<Timestamp>> = versions
        .iter()
        .skip(1)
        .map(|next| Some(next.valid_from))
        .chain([None])
        .collect();
    Ok(versions
        .into_iter()
        .zip(valid_to)
        .map(|(version, valid_to)| VersionView {
            value: version.value,
            valid_from: version.valid_from,
            valid_to,
            why_changed: version.why_changed,
            source: version.source,
            record_id: version.record_id,
        })
        .collect())
}

/// Adds an edge from topic `from` to `to` (both visible to the caller);
/// answers it, and whether it is new.
pub fn add_edge(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    from: &str,
    to: &str,
    kind: &str,
) -> Result<(TopicEdge, bool), ServiceError> {
    let (from_key, from_topic) = load_topic(tx, caller, "", from)?;
    let (to_key, to_topic) = load_topic(tx, caller, "to_topic_id", to)?;
    if from_key == to_key {
        return Err(self_edge("to_topic_id").into());
    }
    let added = tx.add_edge(from_key, to_key, kind, now)?;
    Ok((
        TopicEdge {
            from_topic_id: from_topic.id,
            to_topic_id: to_topic.id,
            kind: kind.to_string(),
            created_at: now,
        },
        added,
    ))
}

/// An edge links two topics; one from a topic to itself would make every
/// walk from it revisit it and says nothing.
fn self_edge(field: &str) -> ValidationError {
    ValidationError::new(field, "a topic cannot have an edge to itself")
}

/// Ends the edge from `from` to `to` of `kind`; `NotFound` when none
/// stands.
pub fn remove_edge(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    from: &str,
    to: &str,
    kind: &str,
) -> Result<(), ServiceError> {
    let (from_key, _) = load_topic(tx, caller, "", from)?;
    let (to_key, _) = load_topic(tx, caller, "to_topic_id", to)?;
    if tx.remove_edge(from_key, to_key, kind, now)? {
        Ok(())
    } else {
        Err(ServiceError::NotFound(format!(
            "no {kind} edge stands between these topics"
        )))
    }
}

/// Archives topic `id`: it stays readable by id, but `auto` placement and
/// topic search no longer find it.
pub fn archive(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    id: &str,
) -> Result<Topic, ServiceError> {
    let (key, mut topic) = load_topic(tx, caller, "", id)?;
    if !topic.archived {
        topic.archived = true;
        topic.updated_at = now;
        tx.update_topic(key, &topic)?;
    }
    Ok(topic)
}

/// Most topics one query answers, and its default.
pub const MAX_QUERY_LIMIT: usize = 100;
pub const DEFAULT_QUERY_LIMIT: usize = 10;
/// Most hops a query follows edges.
pub const MAX_HOPS: u8 = 3;

/// A topic query, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicQuery {
    pub text: Option<String>,
    pub embedding: Option<Embedding>,
    pub kind: Option<String>,
    pub limit: usize,
    pub hops: u8,
    pub as_of: Option<Timestamp>,
    pub include_history: bool,
    /// Most topics the walks of all its hits look at together.
    pub max_hop_nodes: usize,
}

impl TopicQuery {
    pub fn checked(
        text: Option<String>,
        embedding: Option<Embedding>,
        kind: Option<String>,
        limit: Option<usize>,
        hops: Option<u8>,
        as_of: Option<Timestamp>,
        include_history: bool,
    ) -> Result<TopicQuery, ValidationError> {
        let limit = match limit {
            None | Some(0) => DEFAULT_QUERY_LIMIT,
            Some(n) if n > MAX_QUERY_LIMIT => {
                return Err(ValidationError::new(
                    "limit",
                    format!("at most {MAX_QUERY_LIMIT}, got {n}"),
                ))
            }
            Some(n) => n,
        };
        let hops = hops.unwrap_or(1);
        if hops > MAX_HOPS {
            return Err(ValidationError::new(
                "hops",
                format!("at most {MAX_HOPS}, got {hops}"),
            ));
        }
        Ok(TopicQuery {
            text: text.filter(|t| !t.trim().is_empty()),
            embedding,
            kind: kind.filter(|k| !k.is_empty()),
            limit,
            hops,
            as_of,
            include_history,
            max_hop_nodes: usize::MAX,
        })
    }
}

/// A topic reached from a query's topic through edges.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Neighbor {
    pub topic_id: String,
    pub kind: String,
    /// `out` when the edge leaves the topic it was reached from.
    pub direction: &'static str,
    pub hop: u8,
}

/// One topic a query found.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct QueryHit {
    pub topic: TopicView,
    /// In [0, 1]: the mean of text relevance (BM25 relative to the best
    /// text match) and vector similarity (cosine, below 0 as 0), of those
    /// the query asked for; 0 without text or vector.
    pub score: f64,
    pub neighbors: Vec<Neighbor>,
    /// The walk stopped at `topics.max_hop_nodes` before it was done:
    /// `neighbors` holds what it reached.
    pub neighbors_truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history: Option<BTreeMap<String, Vec<VersionView>>>,
}

/// Topics the caller may see, best text match first (most recently changed
/// first without text); each with the topics up to `hops` edges away, only
/// through topics the caller may see, and with `include_history` every
/// field's history.
pub fn query(
    tx: &mut dyn Transaction,
    caller: &Caller,
    query: &TopicQuery,
    now: Timestamp,
    decay: &DecayProfile,
) -> Result<Vec<QueryHit>, ServiceError> {
    let reading = Reading {
        now,
        as_of: query.as_of,
        decay: decay.clone(),
    };
    super::check_embedding(tx, "embedding", query.embedding.as_ref())?;
    let found = if query.text.is_none() && query.embedding.is_none() {
        tx.recent_topics(&caller.trust, query.kind.as_deref(), query.limit)?
            .into_iter()
            .map(|(key, topic)| (key, topic, 0.0))
            .collect()
    } else {
        ranked_topics(tx, caller, query)?
    };
    let mut hits = Vec::with_capacity(found.len());
    let mut walk_left = query.max_hop_nodes;
    for (key, topic, score) in found {
        debug_assert!(visible(caller, &topic));
        let view = view_of(tx, caller, key, topic, &reading)?;
        let (neighbors, neighbors_truncated) =
            neighbors(tx, caller, key, query.hops, query.as_of, &mut walk_left)?;
        let history = if query.include_history {
            let mut fields = BTreeMap::new();
            for name in view.fields.keys() {
                fields.insert(name.clone(), history_of(tx, caller, key, name)?);
            }
            Some(fields)
        } else {
            None
        };
        hits.push(QueryHit {
            topic: view,
            score,
            neighbors,
            neighbors_truncated,
            history,
        });
    }
    Ok(hits)
}

/// The semantic stage of a query with text, a vector or both: the best
/// `limit` topics by text (BM25 relative to the best match) and by vector
/// (cosine), each scored by the mean of the signals the query asked for.
fn ranked_topics(
    tx: &mut dyn Transaction,
    caller: &Caller,
    query: &TopicQuery,
) -> Result<Vec<(i64, Topic, f64)>, ServiceError> {
    let kind = query.kind.as_deref();
    // Each candidate: the topic, its text signal, its vector signal.
    let mut candidates: BTreeMap<i64, (Topic, f64, Option<f64>)> = BTreeMap::new();
    if let Some(text) = &query.text {
        let found = tx.search_topics(text, &caller.trust, kind, query.limit)?;
        let best = found.iter().map(|(_, _, bm25)| *bm25).fold(0.0, f64::max);
        for (key, topic, bm25) in found {
            let signal = if best > 0.0 { bm25 / best } else { 0.0 };
            candidates.insert(key, (topic, signal, None));
        }
    }
    if let Some(embedding) = &query.embedding {
        let vector = QueryVector::new(embedding);
        for (key, cosine) in tx.nearest_topics(&vector, &caller.trust, kind, query.limit)? {
            if let Some(candidate) = candidates.get_mut(&key) {
                candidate.2 = Some(cosine);
            } else if let Some(topic) = tx.topic_by_key(key)? {
                candidates.insert(key, (topic, 0.0, Some(cosine)));
            }
        }
        // Text matches beyond the nearest vectors still have a cosine.
        for (key, candidate) in candidates.iter_mut() {
            if candidate.2.is_none() {
                candidate.2 = Some(tx.topic_similarity(*key, &vector)?.unwrap_or(0.0));
            }
        }
    }
    let signals = f64::from(u8::from(query.text.is_some()) + u8::from(query.embedding.is_some()));
    let mut ranked: Vec<(i64, Topic, f64)> = candidates
        .into_iter()
        .map(|(key, (topic, text, vector))| (key, topic, (text + vector.unwrap_or(0.0)) / signals))
        .collect();
    ranked.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
    ranked.truncate(query.limit);
    Ok(ranked)
}

/// The topics up to `hops` edges from topic `start`, breadth first, each
/// once at its nearest hop; a topic the caller may not see is neither
/// listed nor passed through. Looks at no more than `left` topics (and
/// takes those it looked at from it); answers whether it stopped there.
fn neighbors(
    tx: &mut dyn Transaction,
    caller: &Caller,
    start: i64,
    hops: u8,
    as_of: Option<Timestamp>,
    left: &mut usize,
) -> Result<(Vec<Neighbor>, bool), ServiceError> {
    let mut seen = std::collections::BTreeSet::from([start]);
    let mut frontier = vec![start];
    let mut found = Vec::new();
    for hop in 1..=hops {
        let mut next = Vec::new();
        for key in frontier {
            crate::store::budget::check()?;
            for (other, edge) in tx.edges_of(key, as_of)? {
                if seen.contains(&other) {
                    continue;
                }
                if *left == 0 {
                    return Ok((found, true));
                }
                *left -= 1;
                let Some(topic) = tx.topic_by_key(other)? else {
                    continue;
                };
                if !visible(caller, &topic) {
                    continue;
                }
                seen.insert(other);
                let direction = if edge.to_topic_id == topic.id {
                    "out"
                } else {
                    "in"
                };
                found.push(Neighbor {
                    topic_id: topic.id,
                    kind: edge.kind,
                    direction,
                    hop,
                });
                next.push(other);
            }
        }
        frontier = next;
    }
    Ok((found, false))
}
