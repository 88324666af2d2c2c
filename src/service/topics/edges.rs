//! Typed edges between topics.

use super::*;
use crate::domain::ids::TopicId;

/// Adds an edge from topic `from` to `to` (both visible to the caller);
/// answers it, and whether it is new: an edge that stood already is
/// answered as it stands, made when it was.
pub fn add_edge(
    tx: &mut dyn Transaction,
    edge: &EdgeRequest,
) -> Result<(TopicEdge, bool), ServiceError> {
    let [(from_key, from_topic), (to_key, to_topic)] = ends(tx, edge)?;
    let (now, kind) = (edge.now, edge.kind.as_str());
    if from_key == to_key {
        return Err(self_edge("to_topic_id").into());
    }
    if tx.add_edge(from_key, to_key, kind, now)? {
        let edge = TopicEdge {
            from_topic_id: from_topic.id,
            to_topic_id: to_topic.id,
            kind: kind.to_string(),
            created_at: now,
        };
        return Ok((edge, true));
    }
    let standing = tx
        .edges_of(from_key, None)?
        .into_iter()
        .map(|end| end.edge)
        .find(|edge| {
            edge.from_topic_id == from_topic.id
                && edge.to_topic_id == to_topic.id
                && edge.kind == kind
        })
        .ok_or_else(|| ServiceError::Internal("a standing edge was not found".to_string()))?;
    Ok((standing, false))
}

/// The topics at both ends of `edge`, both visible to its caller.
fn ends(tx: &mut dyn Transaction, edge: &EdgeRequest) -> Result<[(i64, Topic); 2], ServiceError> {
    let from = load_topic(tx, &edge.caller, "", &edge.from)?;
    let to = load_topic(tx, &edge.caller, "to_topic_id", &edge.to)?;
    Ok([from, to])
}

/// An edge links two topics; one from a topic to itself would make every
/// walk from it revisit it and says nothing.
pub(super) fn self_edge(field: &str) -> ValidationError {
    ValidationError::new(field, "a topic cannot have an edge to itself")
}

/// Ends the edge from `from` to `to` of `kind`; `NotFound` when none
/// stands.
pub fn remove_edge(tx: &mut dyn Transaction, edge: &EdgeRequest) -> Result<(), ServiceError> {
    let [(from_key, _), (to_key, _)] = ends(tx, edge)?;
    let kind = edge.kind.as_str();
    if tx.remove_edge(from_key, to_key, kind, edge.now)? {
        Ok(())
    } else {
        Err(ServiceError::NotFound(format!(
            "no {kind} edge stands between these topics"
        )))
    }
}

/// An edge between two topics, as named by a caller.
pub struct EdgeRequest {
    pub caller: Caller,
    pub now: Timestamp,
    pub from: TopicId,
    pub to: TopicId,
    pub kind: String,
}

/// [`add_edge`] as a write job.
pub struct LinkTopics(pub EdgeRequest);

impl Job for LinkTopics {
    type Output = (TopicEdge, bool);
    const NAME: &'static str = "link_topics";

    fn run(self, tx: &mut dyn Transaction) -> Result<(TopicEdge, bool), ServiceError> {
        add_edge(tx, &self.0)
    }
}

/// [`remove_edge`] as a write job.
pub struct UnlinkTopics(pub EdgeRequest);

impl Job for UnlinkTopics {
    type Output = ();
    const NAME: &'static str = "unlink_topics";

    fn run(self, tx: &mut dyn Transaction) -> Result<(), ServiceError> {
        remove_edge(tx, &self.0)
    }
}
