//! The revision actor: validates supersede, fork, retract, merge, contest
//! and the salience adjustments into commands on its HTTP worker's thread, then
//! runs each as one writer job through `service::revision`, so it commits
//! whole or not at all.

use std::time::Instant;

use super::request::handles_in_request;
use actix::{Actor, Context, Handler, Message, ResponseFuture};

use super::storage::{Reader, StorageWriter};
use crate::clock::Clock;
use crate::domain::erasure::Erasure;
use crate::domain::policy::Policy;
use crate::domain::record::{new_record_id, MemoryRecord};
use crate::domain::requests::RevisionRequest;
use crate::domain::revision::NewRecordContext;
use crate::domain::trust::Caller;
pub use crate::service::erasure::ErasureReport;
use crate::service::erasure::{next_chunk, EraseChunk, FinishErasure, PlanErasure, FIRST_CHUNK};
use crate::service::revise::ApplyRevision;
use crate::service::ServiceError;

pub struct Reviser {
    policy: Policy,
    writer: StorageWriter,
    /// Erasures are planned on a read connection.
    reader: Reader,
    clock: Clock,
}

impl Reviser {
    pub fn new(policy: Policy, writer: StorageWriter, reader: Reader, clock: Clock) -> Self {
        Reviser {
            policy,
            writer,
            reader,
            clock,
        }
    }
}

impl Actor for Reviser {
    type Context = Context<Self>;
}

/// Answers the record the operation is about: the new one for supersede,
/// fork and merge, the changed one otherwise.
#[derive(Message)]
#[rtype(result = "Result<MemoryRecord, ServiceError>")]
pub struct Revise {
    pub caller: Caller,
    pub request: RevisionRequest,
}

impl Handler<Revise> for Reviser {
    type Result = ResponseFuture<Result<MemoryRecord, ServiceError>>;

    fn handle(&mut self, msg: Revise, _: &mut Self::Context) -> Self::Result {
        let now = self.clock.now();
        let cx = NewRecordContext {
            policy: &self.policy,
            now,
            new_id: &new_record_id,
            key: msg.caller.key.as_deref(),
        };
        let command = msg.request.into_command(&cx);
        let writer = self.writer.clone();
        let policy = self.policy.clone();
        let caller = msg.caller;
        Box::pin(async move {
            let job = ApplyRevision {
                caller,
                now,
                policy,
                command: command?,
            };
            writer.write(job).await
        })
    }
}

/// Erases what `erasure` selects within the caller's grant: planned on a
/// read connection, erased a chunk of records per writer job (ingests go
/// on between them), finished (tombstones, topics, the log) in one more,
/// then the database scrubbed before the answer.
#[derive(Message)]
#[rtype(result = "Result<ErasureReport, ServiceError>")]
pub struct Erase {
    pub caller: Caller,
    pub erasure: Erasure,
}

impl Handler<Erase> for Reviser {
    type Result = ResponseFuture<Result<ErasureReport, ServiceError>>;

    fn handle(&mut self, msg: Erase, _: &mut Self::Context) -> Self::Result {
        let (reader, writer) = (self.reader.clone(), self.writer.clone());
        let planned = PlanErasure {
            caller: msg.caller,
            now: self.clock.now(),
            erasure: msg.erasure,
        };
        Box::pin(async move {
            let plan = reader.read(planned).await?;
            if plan.erasure.dry_run {
                return Ok(plan.report);
            }
            let stamp = plan.stamp();
            let mut tombstones = 0;
            // Chunks sized by how long the last one held the writer.
            let (mut at, mut size) = (0, FIRST_CHUNK);
            while at < plan.records.len() {
                let chunk = &plan.records[at..(at + size).min(plan.records.len())];
                let planned = chunk
                    .iter()
                    .filter_map(|r| plan.chained.get(&r.key).map(|c| (r.key, c.clone())))
                    .collect();
                let started = Instant::now();
                tombstones += writer
                    .write(EraseChunk {
                        records: chunk.to_vec(),
                        planned,
                        stamp: stamp.clone(),
                    })
                    .await?;
                at += chunk.len();
                size = next_chunk(chunk.len(), started.elapsed());
            }
            let report = writer.write(FinishErasure { plan, tombstones }).await?;
            // No copy of what was deleted stays aside before the answer.
            writer.scrub().await?;
            Ok(report)
        })
    }
}

handles_in_request!(Reviser => Revise, Erase);
