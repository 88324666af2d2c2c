//! A topic as read: its fields and edges now or as of an instant;
//! archiving.

use super::*;
use crate::domain::ids::TopicId;
use crate::store::EdgeEnd;

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
/// `NotFound` as of an instant before the topic was made: it did not
/// stand then.
pub fn view(
    tx: &mut dyn Transaction,
    caller: &Caller,
    id: &TopicId,
    reading: &Reading,
) -> Result<TopicView, ServiceError> {
    let (key, topic) = load_topic(tx, caller, "", id)?;
    if let Some(at) = reading.as_of {
        if at < topic.created_at {
            return Err(ServiceError::NotFound(format!(
                "as_of: the topic was made later, at {}",
                crate::domain::time::format_rfc3339(&topic.created_at)
            )));
        }
    }
    view_of(tx, caller, key, topic, reading)
}

/// [`view`] of a topic already loaded (and visible) under `key`.
pub(super) fn view_of(
    tx: &mut dyn Transaction,
    caller: &Caller,
    key: i64,
    topic: Topic,
    reading: &Reading,
) -> Result<TopicView, ServiceError> {
    let as_of = reading.as_of;
    let mut topic = topic.decayed(&reading.decay, reading.now);
    if let Some(at) = as_of {
        let summaries = tx.summaries(key)?;
        if !summaries.is_empty() {
            topic.summary = summaries
                .into_iter()
                .take_while(|version| version.valid_from <= at)
                .last()
                .map(|version| version.summary)
                .unwrap_or_default();
        }
    }
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
    for EdgeEnd { other, edge } in tx.edges_of(key, as_of)? {
        if sees(tx, caller, other)? {
            edges.push(edge);
        }
    }
    Ok(TopicView {
        topic,
        fields,
        edges,
    })
}

/// Archives topic `id`: it stays readable by id, but `auto` placement and
/// topic search no longer find it.
pub fn archive(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    id: &TopicId,
) -> Result<Topic, ServiceError> {
    let (key, mut topic) = load_topic(tx, caller, "", id)?;
    if !topic.archived {
        archive_topic(tx, key, &mut topic, now)?;
    }
    Ok(topic)
}

/// [`view`] as a read job.
pub struct ReadTopic {
    pub caller: Caller,
    pub id: TopicId,
    pub reading: Reading,
}

impl Job for ReadTopic {
    type Output = TopicView;
    const NAME: &'static str = "read_topic";

    fn run(self, tx: &mut dyn Transaction) -> Result<TopicView, ServiceError> {
        view(tx, &self.caller, &self.id, &self.reading)
    }
}

/// [`archive`] as a write job; answers the topic with its salience as of
/// `now`.
pub struct ArchiveOne {
    pub caller: Caller,
    pub now: Timestamp,
    pub id: TopicId,
    pub decay: DecayProfile,
}

impl Job for ArchiveOne {
    type Output = Topic;
    const NAME: &'static str = "archive_topic";

    fn run(self, tx: &mut dyn Transaction) -> Result<Topic, ServiceError> {
        Ok(archive(tx, &self.caller, self.now, &self.id)?.decayed(&self.decay, self.now))
    }
}

/// One summary a topic had.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct SummaryView {
    pub summary: String,
    #[serde(with = "crate::domain::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub valid_from: Timestamp,
    /// When the next summary took over; `None` for the current one.
    #[serde(with = "crate::domain::time::rfc3339_option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub valid_to: Option<Timestamp>,
    pub source: String,
    pub why_changed: Option<String>,
}

/// Every summary topic `id` has had, oldest first.
pub fn summary_history(
    tx: &mut dyn Transaction,
    caller: &Caller,
    id: &TopicId,
) -> Result<Vec<SummaryView>, ServiceError> {
    let (key, _) = load_topic(tx, caller, "", id)?;
    Ok(until_next(tx.summaries(key)?, |version| version.valid_from)
        .map(|(version, valid_to)| SummaryView {
            summary: version.summary,
            valid_from: version.valid_from,
            valid_to,
            source: version.source,
            why_changed: version.why_changed,
        })
        .collect())
}

/// [`summary_history`] as a read job.
pub struct ReadSummaryHistory {
    pub caller: Caller,
    pub id: TopicId,
}

impl Job for ReadSummaryHistory {
    type Output = Vec<SummaryView>;
    const NAME: &'static str = "read_summary_history";

    fn run(self, tx: &mut dyn Transaction) -> Result<Vec<SummaryView>, ServiceError> {
        summary_history(tx, &self.caller, &self.id)
    }
}
