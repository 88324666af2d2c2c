//! The consolidation actor: runs the consolidation steps of
//! `service::consolidation` in turn, each a page of episodes at a time
//! (read on a read connection, written as one short writer job) until the
//! step has seen every episode, so ingests keep flowing between pages. What a step has seen is kept (marks, and sightings grouped by the
//! fact or tool sequence they show), so every episode is read once per step
//! and running consolidation again on unchanged data changes nothing.

use actix::{Actor, Context, Handler, Message, ResponseFuture};
use chrono::Duration;

use super::storage::{Reader, StorageWriter};
use crate::domain::policy::Policy;
use crate::domain::record::SCHEDULER_ACTOR;
use crate::domain::time::Timestamp;
use crate::domain::trust::Caller;
use crate::service::consolidation::{self as steps, ConsolidationReport, Episodes, Page};
use crate::service::ServiceError;
use crate::store::{Step, Transaction};

/// Duplicate groups merged per writer job.
const DUPLICATE_GROUPS_PER_WRITE: usize = 20;

pub struct Consolidator {
    policy: Policy,
    reader: Reader,
    writer: StorageWriter,
    compress_after: Duration,
}

impl Consolidator {
    pub fn new(
        policy: Policy,
        reader: Reader,
        writer: StorageWriter,
        compress_after_hours: i64,
    ) -> Self {
        Consolidator {
            policy,
            reader,
            writer,
            compress_after: Duration::hours(compress_after_hours),
        }
    }
}

impl Actor for Consolidator {
    type Context = Context<Self>;
}

/// One consolidation run as of `now`.
#[derive(Message)]
#[rtype(result = "Result<ConsolidationReport, ServiceError>")]
pub struct Consolidate {
    pub now: Timestamp,
}

impl Handler<Consolidate> for Consolidator {
    type Result = ResponseFuture<Result<ConsolidationReport, ServiceError>>;

    fn handle(&mut self, msg: Consolidate, _: &mut Self::Context) -> Self::Result {
        let writer = self.writer.clone();
        let reader = self.reader.clone();
        let policy = self.policy.clone();
        let now = msg.now;
        let before = now - self.compress_after;
        let caller = Caller::unrestricted(Some(SCHEDULER_ACTOR.to_string()));
        Box::pin(async move {
            let (c, p) = (caller.clone(), policy.clone());
            let semantic_extracted =
                run_step(&reader, &writer, Step::Semantic, now, move |tx, page| {
                    steps::extract_facts(tx, &c, now, &p, page)
                })
                .await?;
            let (c, p) = (caller.clone(), policy.clone());
            let competence_extracted =
                run_step(&reader, &writer, Step::Competence, now, move |tx, page| {
                    steps::extract_skills(tx, &c, now, &p, page)
                })
                .await?;
            let plan_graphs_extracted =
                run_step(&reader, &writer, Step::PlanGraph, now, move |tx, page| {
                    steps::extract_plans(tx, now, &policy, page)
                })
                .await?;
            // Last: every step above has read an episode by the time it is
            // compressed, and decay prunes no episode before that.
            let c = caller.clone();
            let episodic_compressed = run_pages(&writer, move |tx, after| {
                steps::compress_episodes(tx, &c, now, before, after)
            })
            .await?;
            // Finding duplicates reads every active fact: done on a read
            // connection, then merged a few groups per writer job.
            let groups = reader.read(steps::find_duplicate_facts).await?;
            let mut duplicates_resolved = 0;
            for chunk in groups.chunks(DUPLICATE_GROUPS_PER_WRITE) {
                let chunk = chunk.to_vec();
                let c = caller.clone();
                duplicates_resolved += writer
                    .write(move |tx| steps::resolve_duplicates(tx, &c, now, &chunk))
                    .await?;
            }
            Ok(ConsolidationReport {
                episodic_compressed,
                semantic_extracted,
                competence_extracted,
                plan_graphs_extracted,
                duplicates_resolved,
            })
        })
    }
}

/// Runs an extraction step: each page of episodes it has not seen is read
/// on a read connection, then handed to `write` as one writer job, so the
/// writer is held only for the writes; until a page comes back empty.
/// Answers the step's total.
async fn run_step<F>(
    reader: &Reader,
    writer: &StorageWriter,
    step: Step,
    now: Timestamp,
    write: F,
) -> Result<u64, ServiceError>
where
    F: Fn(&mut dyn Transaction, &Episodes) -> Result<u64, ServiceError> + Clone + Send + 'static,
{
    let mut after = 0;
    let mut total = 0;
    loop {
        let page = reader
            .read(move |tx| steps::read_page(tx, step, now, after))
            .await?;
        let Some((last, _)) = page.last() else {
            return Ok(total);
        };
        after = *last;
        let write = write.clone();
        total += writer.write(move |tx| write(tx, &page)).await?;
    }
}

/// Runs a step a page per writer job, each page after the last key the
/// previous one saw, until a page comes back empty; answers the step's
/// total.
async fn run_pages<F>(writer: &StorageWriter, step: F) -> Result<u64, ServiceError>
where
    F: Fn(&mut dyn Transaction, i64) -> Result<Page, ServiceError> + Clone + Send + 'static,
{
    let mut after = 0;
    let mut total = 0;
    loop {
        let page = step.clone();
        let (last, count) = writer.write(move |tx| page(tx, after)).await?;
        total += count;
        match last {
            Some(key) => after = key,
            None => return Ok(total),
        }
    }
}
