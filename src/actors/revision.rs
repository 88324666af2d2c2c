//! The revision actor: supersede, fork, retract, merge, contest, and
//! salience adjustments. Each operation is one writer job, so it commits
//! whole or not at all, and operations on the same record serialise: the
//! second of two racing supersedes finds the old record already retracted
//! and gets a conflict.

use actix::{Actor, Context, Handler, Message, ResponseFuture};
use rusqlite::Connection;

use super::ingestion::new_record_id;
use super::storage::StorageWriter;
use super::{check_relation_targets, load_record, ServiceError};
use crate::clock::Clock;
use crate::domain::policy::Policy;
use crate::domain::record::{AuditAction, MemoryRecord};
use crate::domain::revision::{
    self, check_not_retracted, check_revisable, check_same_type, ContestRequest, ForkRequest,
    MergeRequest, NewRecordContext, PenalizeRequest, ReinforceRequest, RetractRequest, Revision,
    RevisionCommand, SupersedeRequest,
};
use crate::domain::time::Timestamp;
use crate::store::records;

pub struct Reviser {
    policy: Policy,
    writer: StorageWriter,
    clock: Clock,
}

impl Reviser {
    pub fn new(policy: Policy, writer: StorageWriter, clock: Clock) -> Self {
        Reviser {
            policy,
            writer,
            clock,
        }
    }
}

impl Actor for Reviser {
    type Context = Context<Self>;
}

/// The revision requests as clients send them.
pub enum RevisionRequest {
    Supersede(SupersedeRequest),
    Fork(ForkRequest),
    Retract(RetractRequest),
    Merge(MergeRequest),
    Contest(ContestRequest),
    Reinforce {
        id: String,
        request: ReinforceRequest,
    },
    Penalize {
        id: String,
        request: PenalizeRequest,
    },
}

/// Answers the record the operation is about: the new one for supersede,
/// fork and merge, the changed one otherwise.
#[derive(Message)]
#[rtype(result = "Result<MemoryRecord, ServiceError>")]
pub struct Revise {
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
        };
        let command = match msg.request {
            RevisionRequest::Supersede(r) => r.into_command(&cx),
            RevisionRequest::Fork(r) => r.into_command(&cx),
            RevisionRequest::Retract(r) => r.into_command(),
            RevisionRequest::Merge(r) => r.into_command(&cx),
            RevisionRequest::Contest(r) => r.into_command(),
            RevisionRequest::Reinforce { id, request } => request.into_command(id),
            RevisionRequest::Penalize { id, request } => request.into_command(id),
        };
        let writer = self.writer.clone();
        let max_salience = self.policy.max_salience;
        Box::pin(async move {
            let command = command?;
            writer
                .write(move |conn| apply(conn, command, now, max_salience))
                .await
        })
    }
}

/// Runs one revision inside the writer's transaction. Every check comes
/// before the first write, and a failure rolls back what was written.
fn apply(
    conn: &Connection,
    command: RevisionCommand,
    now: Timestamp,
    max_salience: f64,
) -> Result<MemoryRecord, ServiceError> {
    let by = command.by;
    match command.revision {
        Revision::Supersede {
            old_id,
            mut new_record,
        } => {
            let mut old = load_record(conn, "old_id", &old_id, now)?;
            check_revisable("old_id", &old)?;
            check_not_retracted("old_id", &old)?;
            check_same_type("new_record.type", &old, &new_record)?;
            check_relation_targets(conn, &new_record)?;
            revision::supersede(&mut old, &mut new_record, &by, now);
            records::update_record(conn, &old, now)?;
            records::insert_record(conn, &new_record)?;
            Ok(*new_record)
        }
        Revision::Fork {
            source_id,
            mut forked_record,
        } => {
            let mut source = load_record(conn, "source_id", &source_id, now)?;
            check_revisable("source_id", &source)?;
            check_same_type("forked_record.type", &source, &forked_record)?;
            check_relation_targets(conn, &forked_record)?;
            revision::fork(&mut source, &mut forked_record, &by, now);
            records::update_record(conn, &source, now)?;
            records::insert_record(conn, &forked_record)?;
            Ok(*forked_record)
        }
        Revision::Retract { id } => {
            let mut record = load_record(conn, "id", &id, now)?;
            check_revisable("id", &record)?;
            check_not_retracted("id", &record)?;
            revision::retract(&mut record, AuditAction::Delete, &by, now);
            records::update_record(conn, &record, now)?;
            Ok(record)
        }
        Revision::Merge {
            ids,
            mut merged_record,
        } => {
            let mut sources = Vec::with_capacity(ids.len());
            for (i, id) in ids.iter().enumerate() {
                let field = format!("ids[{i}]");
                let source = load_record(conn, &field, id, now)?;
                check_revisable(&field, &source)?;
                check_not_retracted(&field, &source)?;
                check_same_type("merged_record.type", &source, &merged_record)?;
                sources.push(source);
            }
            check_relation_targets(conn, &merged_record)?;
            revision::merge(&mut sources, &mut merged_record, &by, now);
            for source in &sources {
                records::update_record(conn, source, now)?;
            }
            records::insert_record(conn, &merged_record)?;
            Ok(*merged_record)
        }
        Revision::Contest { id, contesting_ref } => {
            let mut record = load_record(conn, "id", &id, now)?;
            check_revisable("id", &record)?;
            check_not_retracted("id", &record)?;
            revision::contest(&mut record, contesting_ref.as_deref(), &by, now);
            records::update_record(conn, &record, now)?;
            Ok(record)
        }
        Revision::ResolveContest { id } => {
            let mut record = load_record(conn, "id", &id, now)?;
            check_revisable("id", &record)?;
            revision::resolve_contest(&mut record, &by, now)?;
            records::update_record(conn, &record, now)?;
            Ok(record)
        }
        Revision::Reinforce { id } => {
            let mut record = load_record(conn, "id", &id, now)?;
            check_not_retracted("id", &record)?;
            revision::reinforce(&mut record, max_salience, &by, now);
            records::update_record(conn, &record, now)?;
            Ok(record)
        }
        Revision::Penalize { id, amount } => {
            let mut record = load_record(conn, "id", &id, now)?;
            check_not_retracted("id", &record)?;
            revision::penalize(&mut record, amount, &by, now);
            records::update_record(conn, &record, now)?;
            Ok(record)
        }
    }
}
