//! Graph retrieval over all records: the best-ranked records as roots
//! (and, while there is room, the fields of the topics the text names),
//! then their neighbours through record relations (`supersedes`,
//! `derived_from`, `contested_by`, …) and topic links (the other fields of
//! a field's topic, and the fields of topics its topic has edges with),
//! breadth first, never through or to a record the caller may not see.

use std::collections::{BTreeSet, HashMap, VecDeque};

use serde::Serialize;

use super::job::Job;
use super::retrieval::retrieve;
use super::topics;
use super::ServiceError;
use crate::domain::record::{MemoryRecord, MemoryType, Status};
use crate::domain::retrieval::{GraphLimits, Ranking, Retrieval};
use crate::domain::time::Timestamp;
use crate::domain::topic::Topic;
use crate::domain::trust::Caller;
use crate::store::{EdgeEnd, Transaction};

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct GraphNode {
    pub record: MemoryRecord,
    pub root: bool,
    pub hop: u8,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, utoipa::ToSchema)]
pub struct GraphEdge {
    pub from: String,
    pub to: String,
    pub kind: String,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Graph {
    pub nodes: Vec<GraphNode>,
    pub edges: Vec<GraphEdge>,
}

/// A link from a record to another: `kind`, and whether it points from
/// the record (`outgoing`) or to it.
struct Link {
    other: String,
    kind: String,
    outgoing: bool,
}

/// The links of `record`: its relations, and its topic's when the caller
/// may see that topic (through edges to topics it may see), each edge in
/// its own direction. A topic the caller may not see, or an archived one,
/// is never walked through, whatever the visibility of its fields' records.
fn links(
    tx: &mut dyn Transaction,
    caller: &Caller,
    record: &MemoryRecord,
) -> Result<Vec<Link>, ServiceError> {
    let mut links: Vec<Link> = record
        .relations
        .iter()
        .filter(|r| r.target_id != record.id)
        .map(|r| Link {
            other: r.target_id.clone(),
            kind: r.predicate.clone(),
            outgoing: true,
        })
        .collect();
    let Some(key) = tx.topic_of_record(&record.id)? else {
        return Ok(links);
    };
    let walkable = |tx: &mut dyn Transaction, key: i64| -> Result<Option<Topic>, ServiceError> {
        Ok(tx
            .topic_by_key(key)?
            .filter(|topic| !topic.archived && topics::visible(caller, topic)))
    };
    let Some(topic) = walkable(tx, key)? else {
        return Ok(links);
    };
    for head in topics::live_heads(tx, key)? {
        if head.record_id != record.id {
            links.push(Link {
                other: head.record_id,
                kind: "same_topic".to_string(),
                outgoing: true,
            });
        }
    }
    for EdgeEnd { other, edge } in tx.edges_of(key, None)? {
        if walkable(tx, other)?.is_some() {
            let outgoing = edge.from_topic_id == topic.id;
            for head in topics::live_heads(tx, other)? {
                links.push(Link {
                    other: head.record_id,
                    kind: edge.kind.clone(),
                    outgoing,
                });
            }
        }
    }
    Ok(links)
}

/// The roots `retrieval` ranks first, and what they link to within
/// `limits`.
pub fn graph(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    retrieval: &Retrieval,
    limits: GraphLimits,
    ranking: &Ranking,
) -> Result<Graph, ServiceError> {
    // A graph answer has no selection: any threshold does.
    let mut roots = retrieve(tx, caller, now, retrieval, 1.0, ranking)?.records;
    // Then the fields of the topics the text names, while there is room.
    if roots.len() < retrieval.limit {
        for record in topic_roots(tx, caller, now, retrieval)? {
            if roots.len() < retrieval.limit && !roots.iter().any(|r| r.id == record.id) {
                roots.push(record);
            }
        }
    }
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut nodes = Vec::new();
    let mut queue = VecDeque::new();
    for record in roots.into_iter().take(limits.node_limit) {
        index.insert(record.id.clone(), nodes.len());
        queue.push_back(nodes.len());
        nodes.push(GraphNode {
            record,
            root: true,
            hop: 0,
        });
    }
    let mut edges = BTreeSet::new();
    // Records known not to exist or not to be visible: not read twice.
    let mut unreachable = BTreeSet::new();
    while let Some(at) = queue.pop_front() {
        if nodes[at].hop >= limits.max_hops {
            continue;
        }
        crate::store::budget::check()?;
        let from = nodes[at].record.id.clone();
        for Link {
            other,
            kind,
            outgoing,
        } in links(tx, caller, &nodes[at].record)?
        {
            if unreachable.contains(&other) {
                continue;
            }
            if !index.contains_key(&other) {
                if nodes.len() >= limits.node_limit {
                    continue;
                }
                match tx.get_record(&other, now)?.filter(|r| caller.may_see(r)) {
                    Some(record) => {
                        index.insert(other.clone(), nodes.len());
                        queue.push_back(nodes.len());
                        let hop = nodes[at].hop + 1;
                        nodes.push(GraphNode {
                            record,
                            root: false,
                            hop,
                        });
                    }
                    None => {
                        unreachable.insert(other);
                        continue;
                    }
                }
            }
            if edges.len() < limits.edge_limit {
                let (from, to) = if outgoing {
                    (from.clone(), other)
                } else {
                    (other, from.clone())
                };
                edges.insert(GraphEdge { from, to, kind });
            }
        }
    }
    Ok(Graph {
        nodes,
        edges: edges.into_iter().collect(),
    })
}

/// The current field records of the topics whose title, summary or
/// fields match the retrieval's text (the best `limit` of those the caller
/// may see, not archived), when it asks for semantic records: a field's
/// record states the topic by its id, so its own text does not hold the
/// words a caller knows the topic by. Only records the caller may see
/// that pass the retrieval's filters.
fn topic_roots(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    retrieval: &Retrieval,
) -> Result<Vec<MemoryRecord>, ServiceError> {
    let Some(text) = retrieval.task_descriptor.as_deref() else {
        return Ok(Vec::new());
    };
    if text.trim().is_empty() || !retrieval.memory_types.contains(&MemoryType::Semantic) {
        return Ok(Vec::new());
    }
    let mut roots = Vec::new();
    for found in tx.search_topics(text, &caller.trust, None, retrieval.limit)? {
        if !topics::visible(caller, &found.topic) {
            continue;
        }
        for head in topics::live_heads(tx, found.key)? {
            crate::store::budget::check()?;
            let Some(record) = tx.get_record(&head.record_id, now)? else {
                continue;
            };
            if caller.may_see(&record)
                && (retrieval.include_retracted || record.status != Status::Retracted)
                && record.salience >= retrieval.min_salience
                && retrieval.filters.matches(&record)
            {
                roots.push(record);
            }
        }
    }
    Ok(roots)
}

/// [`graph`] as a read job.
pub struct RankGraph {
    pub caller: Caller,
    pub now: Timestamp,
    pub retrieval: Retrieval,
    pub limits: GraphLimits,
    pub ranking: Ranking,
}

impl Job for RankGraph {
    type Output = Graph;
    const NAME: &'static str = "rank_graph";

    fn run(self, tx: &mut dyn Transaction) -> Result<Graph, ServiceError> {
        graph(
            tx,
            &self.caller,
            self.now,
            &self.retrieval,
            self.limits,
            &self.ranking,
        )
    }
}
