//! Topic queries: ranked by text and vector, with their neighbours up to
//! a few hops away and, when asked, their fields' histories.

use super::*;
use crate::store::{EdgeEnd, FoundTopic, ScoredKey};

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
    crate::service::check_embedding(tx, "embedding", query.embedding.as_ref())?;
    let found = if query.text.is_none() && query.embedding.is_none() {
        tx.recent_topics(&caller.trust, query.kind.as_deref(), query.limit)?
            .into_iter()
            .map(|found| (found.key, found.topic, 0.0))
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
pub(super) fn ranked_topics(
    tx: &mut dyn Transaction,
    caller: &Caller,
    query: &TopicQuery,
) -> Result<Vec<(i64, Topic, f64)>, ServiceError> {
    let kind = query.kind.as_deref();
    // Each candidate: the topic, its text signal, its vector signal.
    let mut candidates: BTreeMap<i64, (Topic, f64, Option<f64>)> = BTreeMap::new();
    if let Some(text) = &query.text {
        let found = tx.search_topics(text, &caller.trust, kind, query.limit)?;
        let best = found.iter().map(|hit| hit.score).fold(0.0, f64::max);
        for FoundTopic { key, topic, score } in found {
            let signal = if best > 0.0 { score / best } else { 0.0 };
            candidates.insert(key, (topic, signal, None));
        }
    }
    if let Some(embedding) = &query.embedding {
        let vector = QueryVector::new(embedding);
        for ScoredKey { key, score: cosine } in
            tx.nearest_topics(&vector, &caller.trust, kind, query.limit)?
        {
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
/// once at its nearest hop; a topic the caller may not see, or an archived
/// one, is neither listed nor passed through. Looks at no more than `left` topics (and
/// takes those it looked at from it); answers whether it stopped there.
pub(super) fn neighbors(
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
            for EdgeEnd { other, edge } in tx.edges_of(key, as_of)? {
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
                if topic.archived || !visible(caller, &topic) {
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

/// [`query`] as a read job.
pub struct SearchTopics {
    pub caller: Caller,
    pub query: TopicQuery,
    pub now: Timestamp,
    pub decay: DecayProfile,
}

impl Job for SearchTopics {
    type Output = Vec<QueryHit>;
    const NAME: &'static str = "search_topics";

    fn run(self, tx: &mut dyn Transaction) -> Result<Vec<QueryHit>, ServiceError> {
        query(tx, &self.caller, &self.query, self.now, &self.decay)
    }
}
