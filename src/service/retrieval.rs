//! Reads: layered, trust-gated retrieval with multi-solution selection; one
//! record by id; the supersession history of a record.

use serde::Serialize;

use super::job::Job;
use super::{check_embedding, not_found, ServiceError};
use crate::domain::record::MemoryRecord;
use crate::domain::relevance::Score;
use crate::domain::retrieval::{Ranking, Retrieval};
use crate::domain::selection::{select, Selection};
use crate::domain::time::{from_micros, Timestamp};
use crate::domain::trust::Caller;
use crate::store::Transaction;

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RetrieveResult {
    pub records: Vec<MemoryRecord>,
    pub selection: Option<Selection>,
    /// One per record, in the same order: why each is where it is.
    pub scores: Vec<Score>,
    /// Present when the answer was cut short by the response size budget:
    /// the same request with this `cursor` continues it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
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
    let page = tx.query_records(&retrieval.query_for(&caller.trust, ranking), now)?;
    let records = page.records;
    debug_assert!(records.iter().all(|r| caller.may_see(r)));
    let selection = select(
        &records,
        retrieval.context.as_ref(),
        now,
        selection_threshold,
    );
    Ok(RetrieveResult {
        records,
        selection,
        scores: page.scores,
        next_cursor: page.next.map(|c| c.encode()),
    })
}

/// One record: `NotFound` when there is none or the caller may not see
/// it.
pub fn retrieve_by_id(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    id: &str,
) -> Result<MemoryRecord, ServiceError> {
    tx.get_record(id, now)?
        .filter(|record| caller.may_see(record))
        .ok_or_else(|| not_found("", "record"))
}

/// The supersession chain through a record the caller may see, oldest
/// first; versions the caller may not see are left out.
pub fn history(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    id: &str,
) -> Result<Vec<MemoryRecord>, ServiceError> {
    let chain = tx
        .supersession_chain(id, now)?
        .filter(|chain| chain.iter().any(|r| r.id == id && caller.may_see(r)))
        .ok_or_else(|| not_found("", "record"))?;
    Ok(chain.into_iter().filter(|r| caller.may_see(r)).collect())
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
    pub id: String,
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
    pub id: String,
}

impl Job for ReadHistory {
    type Output = Vec<MemoryRecord>;
    const NAME: &'static str = "read_history";

    fn run(self, tx: &mut dyn Transaction) -> Result<Vec<MemoryRecord>, ServiceError> {
        history(tx, &self.caller, self.now, &self.id)
    }
}
