//! The ingestion actor: validates what agents send into records
//! (classification, policy, the record builder) on its HTTP worker's thread, then
//! stores them through one service call on the writer.

use super::request::handles_in_request;
use actix::{Actor, Context, Handler, Message, Recipient, ResponseFuture};

use super::consolidation::TopicsTouched;
use super::storage::StorageWriter;
use crate::clock::Clock;
use crate::domain::ingest::{Candidate, IngestContext};
use crate::domain::new_record::NewRecord;
use crate::domain::policy::Policy;
use crate::domain::record::{new_record_id, Attribution, MemoryRecord};
use crate::domain::requests::{BatchRequest, ConversationRequest, IngestItem};
use crate::domain::search::analyse_ahead;
use crate::domain::time::Timestamp;
use crate::domain::topic::{Topic, TopicIngest};
use crate::domain::trust::Caller;
use crate::service::conversations::{ConversationIngested, StoreConversation};
use crate::service::ingest::{PrepareState, Route, StoreBatch, StoreCandidate, StoreRecord};
use crate::service::job::Job;
pub use crate::service::topics::Ingested;
use crate::service::topics::{
    ArchiveOne, EdgeRequest, LinkTopics, PlaceObservation, TopicRules, UnlinkTopics,
};
use crate::service::{self, ServiceError};
pub use crate::store::TopicEdge;

pub struct Ingestor {
    policy: Policy,
    writer: StorageWriter,
    clock: Clock,
    topics: TopicRules,
    /// Where topics ingests report the topics they touched (the
    /// consolidation actor's maintenance).
    touched: Recipient<TopicsTouched>,
    /// How long a conversation's session lasts without a turn.
    session_gap: chrono::Duration,
}

impl Ingestor {
    pub fn new(
        policy: Policy,
        writer: StorageWriter,
        clock: Clock,
        topics: TopicRules,
        touched: Recipient<TopicsTouched>,
        session_gap: chrono::Duration,
    ) -> Self {
        Ingestor {
            policy,
            writer,
            clock,
            topics,
            touched,
            session_gap,
        }
    }
}

impl Ingestor {
    /// What checking `caller`'s ingest at `now` takes.
    fn context<'a>(&'a self, caller: &'a Caller, now: Timestamp) -> IngestContext<'a> {
        IngestContext {
            policy: &self.policy,
            now,
            new_id: &new_record_id,
            key: caller.key.as_deref(),
        }
    }

    /// Runs `job` on the writer.
    fn write<J: Job>(&self, job: J) -> ResponseFuture<Result<J::Output, ServiceError>> {
        let writer = self.writer.clone();
        Box::pin(async move { writer.write(job).await })
    }
}

impl Actor for Ingestor {
    type Context = Context<Self>;
}

/// One ingest item: a new record, or an outcome on an existing one.
#[derive(Message)]
#[rtype(result = "Result<MemoryRecord, ServiceError>")]
pub struct Ingest {
    pub caller: Caller,
    pub item: IngestItem,
}

/// All items stored, or none.
#[derive(Message)]
#[rtype(result = "Result<Vec<MemoryRecord>, ServiceError>")]
pub struct IngestBatch {
    pub caller: Caller,
    pub batch: BatchRequest,
}

/// A whole record sent by a client.
#[derive(Message)]
#[rtype(result = "Result<MemoryRecord, ServiceError>")]
pub struct CreateRecord {
    pub caller: Caller,
    pub record: NewRecord,
    pub by: Attribution,
}

impl Handler<Ingest> for Ingestor {
    type Result = ResponseFuture<Result<MemoryRecord, ServiceError>>;

    fn handle(&mut self, msg: Ingest, _: &mut Self::Context) -> Self::Result {
        let now = self.clock.now();
        let cx = self.context(&msg.caller, now);
        let candidate = msg.item.into_candidate(&cx).map(ahead);
        let writer = self.writer.clone();
        let caller = msg.caller;
        Box::pin(async move {
            match service::ingest::route(&caller, candidate?)? {
                Route::Insert(record) => writer.insert(*record).await,
                Route::State(thread, record) => {
                    let job = PrepareState {
                        caller,
                        now,
                        record,
                    };
                    writer.write_then_insert(thread, job).await
                }
                Route::Write(candidate) => {
                    let job = StoreCandidate {
                        caller,
                        now,
                        candidate,
                    };
                    writer.write(job).await
                }
            }
        })
    }
}

impl Handler<IngestBatch> for Ingestor {
    type Result = ResponseFuture<Result<Vec<MemoryRecord>, ServiceError>>;

    fn handle(&mut self, msg: IngestBatch, _: &mut Self::Context) -> Self::Result {
        let now = self.clock.now();
        let cx = self.context(&msg.caller, now);
        let candidates = msg
            .batch
            .into_candidates(&cx)
            .map(|all| all.into_iter().map(ahead).collect::<Vec<_>>());
        let writer = self.writer.clone();
        let caller = msg.caller;
        Box::pin(async move {
            let candidates = candidates?;
            let adds_only = candidates.iter().all(Candidate::adds_only);
            let job = StoreBatch {
                caller,
                now,
                candidates,
            };
            writer.write_or_new(adds_only, job).await
        })
    }
}

/// Appends turns to a conversation: all of them or none.
#[derive(Message)]
#[rtype(result = "Result<ConversationIngested, ServiceError>")]
pub struct IngestConversation {
    pub caller: Caller,
    pub conversation: ConversationRequest,
}

impl Handler<IngestConversation> for Ingestor {
    type Result = ResponseFuture<Result<ConversationIngested, ServiceError>>;

    fn handle(&mut self, msg: IngestConversation, _: &mut Self::Context) -> Self::Result {
        let now = self.clock.now();
        let cx = self.context(&msg.caller, now);
        let conversation = msg.conversation.into_conversation(&cx).map(|mut c| {
            c.records.iter_mut().for_each(analyse_ahead);
            c
        });
        let writer = self.writer.clone();
        let (caller, gap) = (msg.caller, self.session_gap);
        Box::pin(async move {
            let job = StoreConversation {
                caller,
                now,
                conversation: conversation?,
                gap,
            };
            writer.write(job).await
        })
    }
}

impl Handler<CreateRecord> for Ingestor {
    type Result = ResponseFuture<Result<MemoryRecord, ServiceError>>;

    fn handle(&mut self, msg: CreateRecord, _: &mut Self::Context) -> Self::Result {
        let now = self.clock.now();
        let record = msg
            .record
            .into_record(&self.policy, &msg.by, now, new_record_id)
            .map(|mut record| {
                analyse_ahead(&mut record);
                record
            });
        let writer = self.writer.clone();
        let caller = msg.caller;
        Box::pin(async move {
            let job = StoreRecord {
                caller,
                now,
                record: record?,
            };
            writer.write(job).await
        })
    }
}

/// A new record's search text analysed here, on the caller's worker, so
/// that the one writer need not.
fn ahead(mut candidate: Candidate) -> Candidate {
    if let Candidate::Create(record) = &mut candidate {
        analyse_ahead(record);
    }
    candidate
}

/// A topics ingest: placed and stored in one writer job.
#[derive(Message)]
#[rtype(result = "Result<Ingested, ServiceError>")]
pub struct IngestTopic {
    pub caller: Caller,
    pub request: TopicIngest,
}

impl Handler<IngestTopic> for Ingestor {
    type Result = ResponseFuture<Result<Ingested, ServiceError>>;

    fn handle(&mut self, msg: IngestTopic, _: &mut Self::Context) -> Self::Result {
        let writer = self.writer.clone();
        let touched = self.touched.clone();
        let job = PlaceObservation {
            caller: msg.caller,
            policy: self.policy.clone(),
            now: self.clock.now(),
            rules: self.topics.clone(),
            request: msg.request,
        };
        Box::pin(async move {
            let ingested = writer.write(job).await?;
            touched.do_send(TopicsTouched {
                ids: vec![ingested.topic_id.clone()],
            });
            Ok(ingested)
        })
    }
}

/// An edge of `kind` from topic `from` to topic `to`, as `caller` names it.
pub struct TopicLink {
    pub caller: Caller,
    pub from: String,
    pub to: String,
    pub kind: String,
}

impl Ingestor {
    /// `link` as of now, for the edge jobs.
    fn edge(&self, link: TopicLink) -> EdgeRequest {
        EdgeRequest {
            caller: link.caller,
            now: self.clock.now(),
            from: link.from,
            to: link.to,
            kind: link.kind,
        }
    }
}

/// Adds the edge; answers it, and whether it is new.
#[derive(Message)]
#[rtype(result = "Result<(TopicEdge, bool), ServiceError>")]
pub struct AddTopicEdge(pub TopicLink);

impl Handler<AddTopicEdge> for Ingestor {
    type Result = ResponseFuture<Result<(TopicEdge, bool), ServiceError>>;

    fn handle(&mut self, msg: AddTopicEdge, _: &mut Self::Context) -> Self::Result {
        self.write(LinkTopics(self.edge(msg.0)))
    }
}

/// Ends the edge.
#[derive(Message)]
#[rtype(result = "Result<(), ServiceError>")]
pub struct RemoveTopicEdge(pub TopicLink);

impl Handler<RemoveTopicEdge> for Ingestor {
    type Result = ResponseFuture<Result<(), ServiceError>>;

    fn handle(&mut self, msg: RemoveTopicEdge, _: &mut Self::Context) -> Self::Result {
        self.write(UnlinkTopics(self.edge(msg.0)))
    }
}

/// Archives a topic: readable by id, found by nothing else.
#[derive(Message)]
#[rtype(result = "Result<Topic, ServiceError>")]
pub struct ArchiveTopic {
    pub caller: Caller,
    pub id: String,
}

impl Handler<ArchiveTopic> for Ingestor {
    type Result = ResponseFuture<Result<Topic, ServiceError>>;

    fn handle(&mut self, msg: ArchiveTopic, _: &mut Self::Context) -> Self::Result {
        self.write(ArchiveOne {
            caller: msg.caller,
            now: self.clock.now(),
            id: msg.id,
            decay: self.topics.decay.clone(),
        })
    }
}

handles_in_request!(
    Ingestor => Ingest,
    IngestBatch,
    IngestConversation,
    CreateRecord,
    IngestTopic,
    AddTopicEdge,
    RemoveTopicEdge,
    ArchiveTopic
);
