//! One revision command, run: each kind to its operation in
//! `service::revision`, and a supersede followed through to the topic field
//! whose version it replaced (`service::topics`). Above both, so neither
//! needs the other.

use super::job::Job;
use super::{revision, topics, ServiceError};
use crate::domain::policy::Policy;
use crate::domain::record::MemoryRecord;
use crate::domain::revision::{Revision, RevisionCommand};
use crate::domain::time::Timestamp;
use crate::domain::trust::Caller;
use crate::store::Transaction;

/// Runs one revision; answers the record it is about: the new one for
/// supersede, fork and merge, the changed one otherwise.
pub fn revise(
    tx: &mut dyn Transaction,
    caller: &Caller,
    now: Timestamp,
    policy: &Policy,
    command: RevisionCommand,
) -> Result<MemoryRecord, ServiceError> {
    let by = &command.by;
    match command.revision {
        Revision::Supersede { old_id, new_record } => {
            let new_record = revision::supersede(tx, caller, now, by, &old_id, *new_record)?;
            topics::field_superseded(tx, now, by, &old_id, &new_record)?;
            Ok(new_record)
        }
        Revision::Fork {
            source_id,
            forked_record,
        } => revision::fork(tx, caller, now, by, &source_id, *forked_record),
        Revision::Retract { id } => revision::retract(tx, caller, now, by, &id),
        Revision::Merge { ids, merged_record } => revision::merge(
            tx,
            caller,
            now,
            by,
            &ids,
            *merged_record,
            policy.max_merge_bytes,
        ),
        Revision::Contest { id, contesting_ref } => {
            revision::contest(tx, caller, now, by, &id, contesting_ref.as_deref())
        }
        Revision::ResolveContest { id } => revision::resolve_contest(tx, caller, now, by, &id),
        Revision::Reinforce { id } => {
            revision::reinforce(tx, caller, now, by, &id, policy.max_salience)
        }
        Revision::Penalize { id, amount } => revision::penalize(tx, caller, now, by, &id, amount),
    }
}

/// [`revise`] as a write job.
pub struct ApplyRevision {
    pub caller: Caller,
    pub now: Timestamp,
    pub policy: Policy,
    pub command: RevisionCommand,
}

impl Job for ApplyRevision {
    type Output = MemoryRecord;
    const NAME: &'static str = "apply_revision";

    fn run(self, tx: &mut dyn Transaction) -> Result<MemoryRecord, ServiceError> {
        revise(tx, &self.caller, self.now, &self.policy, self.command)
    }
}
