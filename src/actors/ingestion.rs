//! The ingestion actor: validates what agents send into records
//! (classification, policy, the record builder) on its HTTP worker's thread, then
//! stores them through one service call on the writer.

use super::request::handles_in_request;
use actix::{Actor, Context, Handler, Message, Recipient, ResponseFuture};

use super::consolidation::TopicsTouched;
use super::retrieval::CallerWork;
use super::storage::StorageWriter;
use crate::clock::Clock;
use crate::domain::ingest::{Candidate, IngestContext};
use crate::domain::new_record::NewRecord;
use crate::domain::policy::Policy;
use crate::domain::record::{new_record_id, Attribution, MemoryRecord};
use crate::domain::search::analyse_ahead;
use crate::domain::topic::TopicIngest;
use crate::domain::trust::Caller;
use crate::domain::validate::Validated;
use crate::service::ingest::Route;
use crate::service::topics::{Ingested, TopicRules};
use crate::service::{self, ServiceError};

pub struct Ingestor {
    policy: Policy,
    writer: StorageWriter,
    clock: Clock,
    topics: TopicRules,
    /// Where topics ingests report the topics they touched (the
    /// consolidation actor's maintenance).
    touched: Recipient<TopicsTouched>,
}

impl Ingestor {
    pub fn new(
        policy: Policy,
        writer: StorageWriter,
        clock: Clock,
        topics: TopicRules,
        touched: Recipient<TopicsTouched>,
    ) -> Self {
        Ingestor {
            policy,
            writer,
            clock,
            topics,
            touched,
        }
    }
}

impl Actor for Ingestor {
    type Context = Context<Self>;
}

/// Turns a request into what to store; runs on the ingestor's thread, with
/// the policy and the clock.
pub type Check<T> = Box<dyn FnOnce(&IngestContext<'_>) -> Validated<T> + Send>;

/// One ingest call: a new record, or an outcome on an existing one.
#[derive(Message)]
#[rtype(result = "Result<MemoryRecord, ServiceError>")]
pub struct Ingest {
    pub caller: Caller,
    pub check: Check<Candidate>,
}

/// All items stored, or none.
#[derive(Message)]
#[rtype(result = "Result<Vec<MemoryRecord>, ServiceError>")]
pub struct IngestBatch {
    pub caller: Caller,
    pub check: Check<Vec<Candidate>>,
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

    #[tracing::instrument(name = "ingest", level = "debug", skip_all)]
    fn handle(&mut self, msg: Ingest, _: &mut Self::Context) -> Self::Result {
        let now = self.clock.now();
        let cx = IngestContext {
            policy: &self.policy,
            now,
            new_id: &new_record_id,
            key: msg.caller.key.as_deref(),
        };
        let candidate = (msg.check)(&cx).map(ahead);
        let writer = self.writer.clone();
        let caller = msg.caller;
        Box::pin(async move {
            match service::ingest::route(&caller, candidate?)? {
                Route::Insert(record) => writer.insert(*record).await,
                Route::State(thread, record) => {
                    writer
                        .write_then_insert(thread, move |tx| {
                            service::ingest::prepare_new(tx, &caller, now, record)
                        })
                        .await
                }
                Route::Write(candidate) => {
                    writer
                        .write(move |tx| service::ingest::ingest(tx, &caller, now, candidate))
                        .await
                }
            }
        })
    }
}

impl Handler<IngestBatch> for Ingestor {
    type Result = ResponseFuture<Result<Vec<MemoryRecord>, ServiceError>>;

    #[tracing::instrument(name = "ingest_batch", level = "debug", skip_all)]
    fn handle(&mut self, msg: IngestBatch, _: &mut Self::Context) -> Self::Result {
        let now = self.clock.now();
        let cx = IngestContext {
            policy: &self.policy,
            now,
            new_id: &new_record_id,
            key: msg.caller.key.as_deref(),
        };
        let candidates = (msg.check)(&cx).map(|all| all.into_iter().map(ahead).collect::<Vec<_>>());
        let writer = self.writer.clone();
        let caller = msg.caller;
        Box::pin(async move {
            let candidates = candidates?;
            writer
                .write_or_new(candidates.iter().all(Candidate::adds_only), move |tx| {
                    service::ingest::ingest_batch(tx, &caller, now, candidates)
                })
                .await
        })
    }
}

impl Handler<CreateRecord> for Ingestor {
    type Result = ResponseFuture<Result<MemoryRecord, ServiceError>>;

    #[tracing::instrument(name = "create_record", level = "debug", skip_all)]
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
            let record = record?;
            writer
                .write(move |tx| service::ingest::create_record(tx, &caller, now, record))
                .await
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

    #[tracing::instrument(name = "ingest_topic", level = "debug", skip_all)]
    fn handle(&mut self, msg: IngestTopic, _: &mut Self::Context) -> Self::Result {
        let now = self.clock.now();
        let policy = self.policy.clone();
        let writer = self.writer.clone();
        let rules = self.topics.clone();
        let touched = self.touched.clone();
        let IngestTopic { caller, request } = msg;
        Box::pin(async move {
            let ingested = writer
                .write(move |tx| {
                    let cx = IngestContext {
                        policy: &policy,
                        now,
                        new_id: &new_record_id,
                        key: caller.key.as_deref(),
                    };
                    service::topics::ingest(tx, &caller, &cx, &rules, request)
                })
                .await?;
            touched.do_send(TopicsTouched {
                ids: vec![ingested.topic_id.clone()],
            });
            Ok(ingested)
        })
    }
}

/// A write as a caller (topics' edges, archiving): one writer job.
pub struct WriteAs<T> {
    pub caller: Caller,
    pub work: CallerWork<T>,
}

impl<T: Send + 'static> Message for WriteAs<T> {
    type Result = Result<T, ServiceError>;
}

impl<T: Send + 'static> Handler<WriteAs<T>> for Ingestor {
    type Result = ResponseFuture<Result<T, ServiceError>>;

    #[tracing::instrument(name = "write_as", level = "debug", skip_all)]
    fn handle(&mut self, msg: WriteAs<T>, _: &mut Self::Context) -> Self::Result {
        let now = self.clock.now();
        let writer = self.writer.clone();
        let WriteAs { caller, work } = msg;
        Box::pin(async move { writer.write(move |tx| work(tx, &caller, now)).await })
    }
}

handles_in_request!(Ingestor => Ingest, IngestBatch, CreateRecord, IngestTopic);
handles_in_request!(for<T> Ingestor => WriteAs<T>);
