//! Reads: layered, trust-gated retrieval with multi-solution selection; one
//! record by id; the supersession history of a record.

use crate::domain::ids::RecordId;
use std::collections::HashMap;

use serde::{Serialize, Serializer};

use super::conversations::{context_of, TurnContext};
use super::job::Job;
use super::{check_embedding, not_found, ServiceError};
use crate::domain::conversation::TurnSight;
use crate::domain::record::{MemoryRecord, MemoryType};
use crate::domain::relevance::Score;
use crate::domain::retrieval::{Cursor, Ranking, Retrieval};
use crate::domain::selection::{select, Selection};
use crate::domain::time::{from_micros, Timestamp};
use crate::domain::trust::Caller;
use crate::store::{ranking, Transaction};

#[derive(Debug, Clone, utoipa::ToSchema)]
pub struct RetrieveResult {
    /// Best first. With `context_turns`, each turn of a conversation also
    /// has `context`: `{"before": [record…], "after": [record…]}`, the
    /// visible turns of its session around it, in conversation order.
    pub records: Vec<MemoryRecord>,
    pub selection: Option<Selection>,
    /// One per record, in the same order: why each is where it is.
    pub scores: Vec<Score>,
    /// Present when the answer was cut short by the response size budget:
    /// the same request with this `cursor` continues it. Opaque: `next`,
    /// sealed for the caller and the query by whoever answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Where the answer continues, as storage knows it; never sent.
    #[schema(ignore)]
    pub next: Option<Cursor>,
    /// The turns around each turn returned, by record id (`context_turns`).
    #[schema(ignore)]
    pub contexts: HashMap<String, TurnContext>,
}

impl Serialize for RetrieveResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        /// A record with the turns around it, in one object.
        #[derive(Serialize)]
        struct InContext<'a> {
            #[serde(flatten)]
            record: &'a MemoryRecord,
            #[serde(skip_serializing_if = "Option::is_none")]
            context: Option<&'a TurnContext>,
        }
        struct Records<'a>(&'a RetrieveResult);
        impl Serialize for Records<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let result = self.0;
                if result.contexts.is_empty() {
                    return result.records.serialize(serializer);
                }
                serializer.collect_seq(result.records.iter().map(|record| InContext {
                    record,
                    context: result.contexts.get(&record.id),
                }))
            }
        }
        #[derive(Serialize)]
        struct Body<'a> {
            records: Records<'a>,
            selection: &'a Option<Selection>,
            scores: &'a [Score],
            #[serde(skip_serializing_if = "Option::is_none")]
            next_cursor: &'a Option<String>,
        }
        Body {
            records: Records(self),
            selection: &self.selection,
            scores: &self.scores,
            next_cursor: &self.next_cursor,
        }
        .serialize(serializer)
    }
}

/// The records the caller may see, best first, and the ranking of the
/// competing procedures among them. Storage filters by the caller's trust;
/// nothing the caller may not see is read.
pub fn retrieve(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    retrieval: &Retrieval,
    selection_threshold: f64,
    ranking: &Ranking,
) -> Result<RetrieveResult, ServiceError> {
    check_embedding(tx, "query_embedding", retrieval.embedding.as_ref())?;
    // A continuation ranks as of the moment of its first page.
    let now = retrieval.cursor.map_or(now, |c| from_micros(c.as_of));
    let query = retrieval.query_for(&caller.trust, ranking);
    let page = ranking::query_records(&*tx.ranking_source(), &query, now)?;
    let records = page.records;
    debug_assert!(records.iter().all(|r| caller.may_see(r)));
    let selection = select(
        &records,
        retrieval.context.as_ref(),
        now,
        selection_threshold,
    );
    let sight = TurnSight {
        max_sensitivity: caller.trust.max_sensitivity,
        scopes: caller.trust.scope_filter(),
        include_retracted: retrieval.include_retracted,
    };
    let contexts = context_of(tx, &records, retrieval.context_turns, &sight, now)?;
    Ok(RetrieveResult {
        records,
        selection,
        scores: page.scores,
        next_cursor: None,
        next: page.next,
        contexts,
    })
}

/// One record: `NotFound` when there is none or the caller may not see
/// it.
pub fn retrieve_by_id(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    id: &RecordId,
) -> Result<MemoryRecord, ServiceError> {
    tx.get_record(id, now)?
        .filter(|record| caller.may_see(record))
        .ok_or_else(|| not_found("", "record"))
}

/// A record's revision chain: the versions stored, and those erased.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct History {
    /// The stored versions, oldest first.
    pub chain: Vec<MemoryRecord>,
    /// The erased versions, oldest first: what stays of each, and where it
    /// stood.
    pub erased: Vec<ErasedVersion>,
}

/// What stays of an erased version of a chain: no content, no subject.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ErasedVersion {
    pub id: String,
    #[serde(rename = "type")]
    pub memory_type: MemoryType,
    #[serde(with = "crate::domain::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub erased_at: Timestamp,
    pub actor: String,
    pub rationale: String,
    /// The version it superseded, and the one that superseded it.
    pub older_id: Option<String>,
    pub newer_id: Option<String>,
}

/// Most erased versions a history walks across.
const MAX_ERASED_HOPS: usize = 64;

/// The supersession chain through a record the caller may see, oldest
/// first, walked across erased versions; versions the caller may not see
/// are left out, erased ones too.
pub fn history(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    id: &RecordId,
) -> Result<History, ServiceError> {
    let mut chain = tx
        .supersession_chain(id, now)?
        .filter(|chain| {
            chain
                .iter()
                .any(|r| r.id == id.as_str() && caller.may_see(r))
        })
        .ok_or_else(|| not_found("", "record"))?;
    let (mut before, mut after) = (Vec::new(), Vec::new());
    // Older: the tombstone each oldest version superseded, then what it
    // superseded in turn.
    let mut oldest = chain[0].id.clone();
    for _ in 0..MAX_ERASED_HOPS {
        let Some(tombstone) = tx.tombstone_next_to(None, Some(&oldest))? else {
            break;
        };
        oldest.clone_from(&tombstone.id);
        let older = tombstone.older_id.clone();
        before.push(tombstone);
        if let Some(older) = older {
            if let Some(mut earlier) = tx.supersession_chain(&older, now)? {
                oldest = earlier[0].id.clone();
                earlier.append(&mut chain);
                chain = earlier;
            }
        }
    }
    let mut newest = chain[chain.len() - 1].id.clone();
    for _ in 0..MAX_ERASED_HOPS {
        let Some(tombstone) = tx.tombstone_next_to(Some(&newest), None)? else {
            break;
        };
        newest.clone_from(&tombstone.id);
        let newer = tombstone.newer_id.clone();
        after.push(tombstone);
        if let Some(newer) = newer {
            if let Some(later) = tx.supersession_chain(&newer, now)? {
                newest = later[later.len() - 1].id.clone();
                chain.extend(later);
            }
        }
    }
    before.reverse();
    let erased = before
        .into_iter()
        .chain(after)
        .filter(|t| caller.trust.allows_parts(t.sensitivity, t.scope.as_deref()))
        .map(|t| ErasedVersion {
            id: t.id,
            memory_type: t.memory_type,
            erased_at: t.erased_at,
            actor: t.actor,
            rationale: t.rationale,
            older_id: t.older_id,
            newer_id: t.newer_id,
        })
        .collect();
    Ok(History {
        chain: chain.into_iter().filter(|r| caller.may_see(r)).collect(),
        erased,
    })
}

/// [`retrieve`] as a read job.
pub struct Rank {
    pub caller: Caller,
    pub now: Timestamp,
    pub retrieval: Retrieval,
    pub selection_threshold: f64,
    pub ranking: Ranking,
}

impl Job for Rank {
    type Output = RetrieveResult;
    const NAME: &'static str = "rank";

    fn run(self, tx: &mut dyn Transaction) -> Result<RetrieveResult, ServiceError> {
        retrieve(
            tx,
            &self.caller,
            self.now,
            &self.retrieval,
            self.selection_threshold,
            &self.ranking,
        )
    }
}

/// [`retrieve_by_id`] as a read job.
pub struct ReadRecord {
    pub caller: Caller,
    pub now: Timestamp,
    pub id: RecordId,
}

impl Job for ReadRecord {
    type Output = MemoryRecord;
    const NAME: &'static str = "read_record";

    fn run(self, tx: &mut dyn Transaction) -> Result<MemoryRecord, ServiceError> {
        retrieve_by_id(tx, &self.caller, self.now, &self.id)
    }
}

/// [`history`] as a read job.
pub struct ReadHistory {
    pub caller: Caller,
    pub now: Timestamp,
    pub id: RecordId,
}

impl Job for ReadHistory {
    type Output = History;
    const NAME: &'static str = "read_history";

    fn run(self, tx: &mut dyn Transaction) -> Result<History, ServiceError> {
        history(tx, &self.caller, self.now, &self.id)
    }
}
