//! The ingestion actor: classification, policy and record construction
//! happen here, on validated domain requests; the result goes to the writer
//! as one atomic write.

use actix::{Actor, Context, Handler, Message, ResponseFuture};
use rusqlite::Connection;

use super::storage::StorageWriter;
use super::ServiceError;
use crate::clock::Clock;
use crate::domain::ingest::{BatchRequest, Candidate, IngestContext, IngestItem, OutcomeUpdate};
use crate::domain::policy::{NewRecord, Policy};
use crate::domain::record::{Attribution, MemoryRecord};
use crate::store::records;

pub struct Ingestor {
    policy: Policy,
    writer: StorageWriter,
    clock: Clock,
}

impl Ingestor {
    pub fn new(policy: Policy, writer: StorageWriter, clock: Clock) -> Self {
        Ingestor {
            policy,
            writer,
            clock,
        }
    }
}

impl Actor for Ingestor {
    type Context = Context<Self>;
}

/// New ids are UUIDv7: time-ordered, so inserts land at the end of the id
/// index instead of all over it.
pub fn new_record_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// One ingest call: a new record, or an outcome on an existing one.
#[derive(Message)]
#[rtype(result = "Result<MemoryRecord, ServiceError>")]
pub struct Ingest {
    pub item: IngestItem,
}

/// All items stored, or none.
#[derive(Message)]
#[rtype(result = "Result<Vec<MemoryRecord>, ServiceError>")]
pub struct IngestBatch {
    pub batch: BatchRequest,
}

/// A whole record sent by a client.
#[derive(Message)]
#[rtype(result = "Result<MemoryRecord, ServiceError>")]
pub struct CreateRecord {
    pub record: NewRecord,
    pub by: Attribution,
}

impl Handler<Ingest> for Ingestor {
    type Result = ResponseFuture<Result<MemoryRecord, ServiceError>>;

    fn handle(&mut self, msg: Ingest, _: &mut Self::Context) -> Self::Result {
        let now = self.clock.now();
        let cx = IngestContext {
            policy: &self.policy,
            now,
            new_id: &new_record_id,
        };
        let candidate = msg.item.into_candidate(&cx);
        let writer = self.writer.clone();
        Box::pin(async move {
            let candidate = candidate?;
            writer
                .write(move |conn| store_candidate(conn, candidate, now))
                .await
        })
    }
}

impl Handler<IngestBatch> for Ingestor {
    type Result = ResponseFuture<Result<Vec<MemoryRecord>, ServiceError>>;

    fn handle(&mut self, msg: IngestBatch, _: &mut Self::Context) -> Self::Result {
        let now = self.clock.now();
        let cx = IngestContext {
            policy: &self.policy,
            now,
            new_id: &new_record_id,
        };
        let candidates = msg.batch.into_candidates(&cx);
        let writer = self.writer.clone();
        Box::pin(async move {
            let candidates = candidates?;
            writer
                .write(move |conn| {
                    candidates
                        .into_iter()
                        .enumerate()
                        .map(|(i, candidate)| {
                            store_candidate(conn, candidate, now).map_err(|e| in_item(e, i))
                        })
                        .collect()
                })
                .await
        })
    }
}

impl Handler<CreateRecord> for Ingestor {
    type Result = ResponseFuture<Result<MemoryRecord, ServiceError>>;

    fn handle(&mut self, msg: CreateRecord, _: &mut Self::Context) -> Self::Result {
        let record = msg
            .record
            .into_record(&self.policy, &msg.by, self.clock.now(), new_record_id);
        let writer = self.writer.clone();
        Box::pin(async move {
            let record = record?;
            writer
                .write(move |conn| {
                    super::check_relation_targets(conn, &record)?;
                    records::insert_record(conn, &record)?;
                    Ok(record)
                })
                .await
        })
    }
}

fn store_candidate(
    conn: &Connection,
    candidate: Candidate,
    now: crate::domain::time::Timestamp,
) -> Result<MemoryRecord, ServiceError> {
    match candidate {
        Candidate::Create(record) => {
            records::insert_record(conn, &record)?;
            Ok(*record)
        }
        Candidate::Outcome(update) => apply_outcome(conn, &update, now),
    }
}

fn apply_outcome(
    conn: &Connection,
    update: &OutcomeUpdate,
    now: crate::domain::time::Timestamp,
) -> Result<MemoryRecord, ServiceError> {
    let mut record = super::load_record(conn, "target_record_id", &update.target_record_id, now)?;
    update.apply(&mut record, now).map_err(|e| {
        ServiceError::FailedPrecondition(format!(
            "target_record_id: record {} is {} memory; outcomes apply only to episodic records",
            e.id, e.actual
        ))
    })?;
    records::update_record(conn, &record, now)?;
    Ok(record)
}

/// Names the batch item an error came from.
fn in_item(error: ServiceError, index: usize) -> ServiceError {
    let prefix = |message: String| format!("items[{index}].{message}");
    match error {
        ServiceError::NotFound(m) => ServiceError::NotFound(prefix(m)),
        ServiceError::FailedPrecondition(m) => ServiceError::FailedPrecondition(prefix(m)),
        ServiceError::Conflict(m) => ServiceError::Conflict(prefix(m)),
        other => other,
    }
}
