//! Graph retrieval over all records: the best-ranked records as roots,
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
use crate::domain::record::MemoryRecord;
use crate::domain::retrieval::{GraphLimits, Ranking, Retrieval};
use crate::domain::time::Timestamp;
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

/// The links leaving `record`: its relations, and its topic's when the
/// caller may see that topic (through edges to topics it may see): a
/// topic the caller may not see is never walked through, whatever the
/// visibility of its fields' records.
fn links(
    tx: &mut dyn Transaction,
    caller: &Caller,
    record: &MemoryRecord,
) -> Result<Vec<(String, String)>, ServiceError> {
    let mut links: Vec<(String, String)> = record
        .relations
        .iter()
        .filter(|r| r.target_id != record.id)
        .map(|r| (r.target_id.clone(), r.predicate.clone()))
        .collect();
    let Some(key) = tx.topic_of_record(&record.id)? else {
        return Ok(links);
    };
    let seen = |tx: &mut dyn Transaction, key: i64| -> Result<bool, ServiceError> {
        Ok(tx
            .topic_by_key(key)?
            .is_some_and(|topic| topics::visible(caller, &topic)))
    };
    if !seen(tx, key)? {
        return Ok(links);
    }
    for head in tx.field_heads(key, None)? {
        if head.record_id != record.id {
            links.push((head.record_id, "same_topic".to_string()));
        }
    }
    for EdgeEnd { other, edge } in tx.edges_of(key, None)? {
        if seen(tx, other)? {
            for head in tx.field_heads(other, None)? {
                links.push((head.record_id, edge.kind.clone()));
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
    let roots = retrieve(tx, caller, now, retrieval, 1.0, ranking)?.records;
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
        for (to, kind) in links(tx, caller, &nodes[at].record)? {
            if unreachable.contains(&to) {
                continue;
            }
            if !index.contains_key(&to) {
                if nodes.len() >= limits.node_limit {
                    continue;
                }
                match tx.get_record(&to, now)?.filter(|r| caller.may_see(r)) {
                    Some(record) => {
                        index.insert(to.clone(), nodes.len());
                        queue.push_back(nodes.len());
                        let hop = nodes[at].hop + 1;
                        nodes.push(GraphNode {
                            record,
                            root: false,
                            hop,
                        });
                    }
                    None => {
                        unreachable.insert(to);
                        continue;
                    }
                }
            }
            if edges.len() < limits.edge_limit {
                edges.insert(GraphEdge {
                    from: from.clone(),
                    to,
                    kind,
                });
            }
        }
    }
    Ok(Graph {
        nodes,
        edges: edges.into_iter().collect(),
    })
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
