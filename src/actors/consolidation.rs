//! The consolidation actor: runs the consolidation steps of
//! `service::consolidation` in turn, each a page of episodes at a time
//! (read on a read connection, written as one short writer job) until the
//! step has seen every episode, so ingests keep flowing between pages. What a step has seen is kept (marks, and sightings grouped by the
//! fact or tool sequence they show), so every episode is read once per step
//! and running consolidation again on unchanged data changes nothing.

use std::collections::{BTreeMap, BTreeSet};

use actix::{
    Actor, ActorFutureExt, AsyncContext, Context, Handler, Message, ResponseFuture, WrapFuture,
};
use chrono::Duration;

use super::storage::{Reader, StorageWriter};
use crate::clock::Clock;
use crate::domain::ingest::IngestContext;
use crate::domain::policy::Policy;
use crate::domain::record::{new_record_id, SCHEDULER_ACTOR};
use crate::domain::time::Timestamp;
use crate::domain::trust::Caller;
use crate::service::consolidation::{self as steps, ConsolidationReport, Episodes, Page};
use crate::service::topic_upkeep::{self as upkeep, ARCHIVE_PER_WRITE};
use crate::service::topics::TopicRules;
use crate::service::ServiceError;
use crate::store::{Step, Transaction};

/// Topics read reinforced per writer job.
const READS_PER_WRITE: usize = 500;

/// Duplicate groups merged per writer job.
const DUPLICATE_GROUPS_PER_WRITE: usize = 20;

pub struct Consolidator {
    policy: Policy,
    reader: Reader,
    writer: StorageWriter,
    compress_after: Duration,
    topics: TopicRules,
    clock: Clock,
    /// Topics ingested into and read since the last maintenance pass
    /// started; one pass runs at a time and takes all of them.
    touched: BTreeSet<String>,
    reads: BTreeMap<String, u32>,
    upkeep_running: bool,
}

impl Consolidator {
    pub fn new(
        policy: Policy,
        reader: Reader,
        writer: StorageWriter,
        compress_after_hours: i64,
        topics: TopicRules,
        clock: Clock,
    ) -> Self {
        Consolidator {
            policy,
            reader,
            writer,
            compress_after: Duration::hours(compress_after_hours),
            topics,
            clock,
            touched: BTreeSet::new(),
            reads: BTreeMap::new(),
            upkeep_running: false,
        }
    }

    /// Starts a maintenance pass over what is pending unless one runs;
    /// when it ends, starts the next if more came meanwhile.
    fn start_upkeep(&mut self, ctx: &mut Context<Self>) {
        if self.upkeep_running || (self.touched.is_empty() && self.reads.is_empty()) {
            return;
        }
        self.upkeep_running = true;
        let pass = TopicUpkeep {
            policy: self.policy.clone(),
            rules: self.topics.clone(),
            reader: self.reader.clone(),
            writer: self.writer.clone(),
            now: self.clock.now(),
            touched: std::mem::take(&mut self.touched).into_iter().collect(),
            reads: std::mem::take(&mut self.reads).into_iter().collect(),
        };
        ctx.spawn(pass.run().into_actor(self).map(|result, actor, ctx| {
            if let Err(error) = result {
                tracing::warn!(%error, "topic maintenance failed; it runs again after the next ingest");
            }
            actor.upkeep_running = false;
            actor.start_upkeep(ctx);
        }));
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

    #[tracing::instrument(name = "consolidate", level = "debug", skip_all)]
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

/// Topics a topics ingest wrote to: checked for duplicates, and the
/// archive threshold checked, in the background.
#[derive(Message)]
#[rtype(result = "()")]
pub struct TopicsTouched {
    pub ids: Vec<String>,
}

/// Topics a view or query returned: reinforced in the background.
#[derive(Message)]
#[rtype(result = "()")]
pub struct TopicsRead {
    pub ids: Vec<String>,
}

impl Handler<TopicsTouched> for Consolidator {
    type Result = ();

    fn handle(&mut self, msg: TopicsTouched, ctx: &mut Self::Context) {
        self.touched.extend(msg.ids);
        self.start_upkeep(ctx);
    }
}

impl Handler<TopicsRead> for Consolidator {
    type Result = ();

    fn handle(&mut self, msg: TopicsRead, ctx: &mut Self::Context) {
        if self.topics.settings.read_reinforcement <= 0.0 {
            return;
        }
        for id in msg.ids {
            *self.reads.entry(id).or_default() += 1;
        }
        self.start_upkeep(ctx);
    }
}

/// One topic maintenance pass: reads reinforced (a writer job per 500), each
/// group of duplicates among the touched topics merged (a writer job per
/// group, found on a read connection), then faded topics archived when
/// there are too many (writer jobs only when the read side saw one).
struct TopicUpkeep {
    policy: Policy,
    rules: TopicRules,
    reader: Reader,
    writer: StorageWriter,
    now: Timestamp,
    touched: Vec<String>,
    reads: Vec<(String, u32)>,
}

impl TopicUpkeep {
    async fn run(self) -> Result<(), ServiceError> {
        let TopicUpkeep {
            policy,
            rules,
            reader,
            writer,
            now,
            touched,
            reads,
        } = self;
        for chunk in reads.chunks(READS_PER_WRITE) {
            let (rules, chunk) = (rules.clone(), chunk.to_vec());
            writer
                .write(move |tx| upkeep::reinforce_reads(tx, &rules, now, &chunk))
                .await?;
        }
        if touched.is_empty() {
            return Ok(());
        }
        let groups = reader
            .read(move |tx| upkeep::duplicate_groups(tx, &touched))
            .await?;
        for group in groups {
            let (policy, rules) = (policy.clone(), rules.clone());
            let merged = writer
                .write(move |tx| {
                    let cx = IngestContext {
                        policy: &policy,
                        now,
                        new_id: &new_record_id,
                        key: None,
                    };
                    upkeep::merge_group(tx, &cx, &rules, &group)
                })
                .await;
            // One group that cannot merge (a field record revised by hand
            // meanwhile, say) does not hold up the others.
            if let Err(error) = merged {
                tracing::warn!(%error, "merging duplicate topics failed");
            }
        }
        let below = rules.settings.archive_below_salience;
        loop {
            let fading = reader
                .read(move |tx| Ok(tx.fading_topics(below, 1)?))
                .await?;
            if fading.is_empty() {
                return Ok(());
            }
            let rules = rules.clone();
            let archived = writer
                .write(move |tx| upkeep::archive_faded(tx, &rules, now))
                .await?;
            if archived < ARCHIVE_PER_WRITE as u64 {
                return Ok(());
            }
        }
    }
}
