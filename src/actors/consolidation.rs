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
use crate::domain::policy::Policy;
use crate::domain::record::SCHEDULER_ACTOR;
use crate::domain::time::Timestamp;
use crate::domain::trust::Caller;
use crate::service::consolidation::{
    CompressEpisodes, ConsolidationReport, Episodes, ExtractFacts, ExtractPlans, ExtractSkills,
    Extraction, FindDuplicateFacts, Page, ReadEpisodes, ResolveDuplicates,
};
use crate::service::job::Job;
use crate::service::topic_upkeep::{
    AnyFading, ArchiveFaded, FindDuplicateTopics, MergeTopics, ReinforceReads, ARCHIVE_PER_WRITE,
};
use crate::service::topics::TopicRules;
use crate::service::ServiceError;
use crate::store::Step;

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
        let x = Extraction {
            caller: caller.clone(),
            now,
            policy,
        };
        Box::pin(async move {
            let (r, w) = (&reader, &writer);
            let semantic_extracted = run_step(r, w, Step::Semantic, now, |page| {
                ExtractFacts(x.clone(), page)
            })
            .await?;
            let competence_extracted = run_step(r, w, Step::Competence, now, |page| {
                ExtractSkills(x.clone(), page)
            })
            .await?;
            let plan_graphs_extracted = run_step(r, w, Step::PlanGraph, now, |page| {
                ExtractPlans(x.clone(), page)
            })
            .await?;
            // Last: every step above has read an episode by the time it is
            // compressed, and decay prunes no episode before that.
            let episodic_compressed = run_pages(w, |after| CompressEpisodes {
                caller: caller.clone(),
                now,
                before,
                after,
            })
            .await?;
            // Finding duplicates reads every active fact: done on a read
            // connection, then merged a few groups per writer job.
            let groups = reader.read(FindDuplicateFacts).await?;
            let mut duplicates_resolved = 0;
            for chunk in groups.chunks(DUPLICATE_GROUPS_PER_WRITE) {
                let job = ResolveDuplicates {
                    caller: caller.clone(),
                    now,
                    groups: chunk.to_vec(),
                };
                duplicates_resolved += writer.write(job).await?;
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
/// on a read connection, then written by the job `write` makes of it, so
/// the writer is held only for the writes; until a page comes back empty.
/// Answers the step's total.
async fn run_step<J: Job<Output = u64>>(
    reader: &Reader,
    writer: &StorageWriter,
    step: Step,
    now: Timestamp,
    write: impl Fn(Episodes) -> J,
) -> Result<u64, ServiceError> {
    let mut after = 0;
    let mut total = 0;
    loop {
        let page = reader.read(ReadEpisodes { step, now, after }).await?;
        let Some((last, _)) = page.last() else {
            return Ok(total);
        };
        after = *last;
        total += writer.write(write(page)).await?;
    }
}

/// Runs a step a page per writer job, each page after the last key the
/// previous one saw, until a page comes back empty; answers the step's
/// total.
async fn run_pages<J: Job<Output = Page>>(
    writer: &StorageWriter,
    step: impl Fn(i64) -> J,
) -> Result<u64, ServiceError> {
    let mut after = 0;
    let mut total = 0;
    loop {
        let (last, count) = writer.write(step(after)).await?;
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
            let job = ReinforceReads {
                rules: rules.clone(),
                now,
                reads: chunk.to_vec(),
            };
            writer.write(job).await?;
        }
        if touched.is_empty() {
            return Ok(());
        }
        let groups = reader.read(FindDuplicateTopics { ids: touched }).await?;
        for group in groups {
            let job = MergeTopics {
                policy: policy.clone(),
                now,
                rules: rules.clone(),
                group,
            };
            let merged = writer.write(job).await;
            // One group that cannot merge (a field record revised by hand
            // meanwhile, say) does not hold up the others.
            if let Err(error) = merged {
                tracing::warn!(%error, "merging duplicate topics failed");
            }
        }
        let below = rules.settings.archive_below_salience;
        loop {
            if !reader.read(AnyFading { below }).await? {
                return Ok(());
            }
            let job = ArchiveFaded {
                rules: rules.clone(),
                now,
            };
            let archived = writer.write(job).await?;
            if archived < ARCHIVE_PER_WRITE as u64 {
                return Ok(());
            }
        }
    }
}
