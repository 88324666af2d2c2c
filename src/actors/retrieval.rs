//! The retrieval actor: validates retrieval requests on its HTTP worker's thread
//! and turns them into reads — trust-gated, layered, with multi-solution
//! selection — run by `service::retrieval` on the reader pool. It bounds
//! the reads in flight across all its instances, since the reader pool's
//! mailbox is not bounded itself.

use super::request::handles_in_request;
use std::sync::Arc;

use actix::{Actor, Context, Handler, Message, ResponseFuture};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::auth::secret::Sealer;
use crate::domain::retrieval::{Cursor, Ranking};
use crate::domain::validate::ValidationError;

use super::storage::Reader;
use crate::clock::Clock;
use crate::domain::access::Access;
use crate::domain::record::MemoryRecord;
use crate::domain::requests::{GraphRequest, RetrieveRequest, TurnsRequest};
use crate::domain::time::Timestamp;
use crate::domain::trust::Caller;
use crate::service::conversations::{ReadTurns, Session};
use crate::service::erasure::ListErasures;
pub use crate::service::graph::Graph;
use crate::service::graph::RankGraph;
use crate::service::job::Job;
pub use crate::service::retrieval::{History, RetrieveResult};
use crate::service::retrieval::{Rank, ReadHistory, ReadRecord};
use crate::service::stats::{Ping as PingStore, ReadStats};
use crate::service::topics::{
    self, ReadFieldHistory, ReadSummaryHistory, ReadTopic, SearchTopics, TopicRules,
};
pub use crate::service::topics::{QueryHit, SummaryView, TopicQuery, TopicView, VersionView};
use crate::service::ServiceError;
use crate::store::LogPlace;
pub use crate::store::{ErasureEntry, MemoryStats};

/// The bound on reads in flight, shared by every retriever.
#[derive(Clone)]
pub struct ReadGate {
    permits: Arc<Semaphore>,
    max: usize,
}

impl ReadGate {
    pub fn new(max: usize) -> Self {
        ReadGate {
            permits: Arc::new(Semaphore::new(max)),
            max,
        }
    }

    /// Reads in flight now.
    pub fn in_flight(&self) -> usize {
        self.max - self.permits.available_permits()
    }

    fn enter(&self) -> Result<OwnedSemaphorePermit, ServiceError> {
        self.permits.clone().try_acquire_owned().map_err(|_| {
            ServiceError::Overloaded("too many reads in flight; retry shortly".to_string())
        })
    }
}

/// How retrievals are answered, from the configuration.
#[derive(Debug, Clone, Copy)]
pub struct ReadSettings {
    pub max_limit: usize,
    pub selection_threshold: f64,
    pub ranking: Ranking,
}

pub struct Retriever {
    reader: Reader,
    /// Seals the cursors it hands out, and opens those sent back.
    sealer: Arc<Sealer>,
    clock: Clock,
    gate: ReadGate,
    settings: ReadSettings,
    /// How topics read fade, and how far their queries walk.
    topics: TopicRules,
}

impl Retriever {
    pub fn new(
        reader: Reader,
        sealer: Arc<Sealer>,
        clock: Clock,
        gate: ReadGate,
        settings: ReadSettings,
        topics: TopicRules,
    ) -> Self {
        Retriever {
            reader,
            sealer,
            clock,
            gate,
            settings,
            topics,
        }
    }

    /// Runs a read within the bound.
    fn bounded_read<J: Job>(&self, job: J) -> ResponseFuture<Result<J::Output, ServiceError>> {
        let permit = self.gate.enter();
        let reader = self.reader.clone();
        Box::pin(async move {
            let _permit = permit?;
            reader.read(job).await
        })
    }
}

impl Actor for Retriever {
    type Context = Context<Self>;
}

/// A ranked retrieval, as `access` and the request's trust make its caller.
#[derive(Message)]
#[rtype(result = "Result<RetrieveResult, ServiceError>")]
pub struct Retrieve {
    pub access: Access,
    pub request: RetrieveRequest,
}

impl Handler<Retrieve> for Retriever {
    type Result = ResponseFuture<Result<RetrieveResult, ServiceError>>;

    fn handle(&mut self, msg: Retrieve, _: &mut Self::Context) -> Self::Result {
        let Retrieve {
            access,
            mut request,
        } = msg;
        let token = request.cursor.take();
        let checked = request
            .into_retrieval(&access, self.settings.max_limit)
            .map_err(ServiceError::from)
            .and_then(|(caller, mut retrieval)| {
                if let Some(token) = token {
                    let bound = retrieval.binding(&caller);
                    retrieval.cursor = Some(self.open_cursor(&token, &bound)?);
                }
                Ok((caller, retrieval))
            });
        let (caller, retrieval) = match checked {
            Ok(checked) => checked,
            Err(e) => return Box::pin(async move { Err(e) }),
        };
        // What a next cursor is bound to, made only if there is one: writing
        // out the whole request costs more than a small caller's read.
        let asked = (caller.clone(), retrieval.clone());
        tracing::debug!(
            actor_id = caller.trust.actor_id.as_deref().unwrap_or(""),
            authenticated = caller.trust.authenticated,
            task_descriptor = retrieval.task_descriptor.as_deref().unwrap_or(""),
            "retrieve"
        );
        let read = self.bounded_read(Rank {
            caller,
            now: self.clock.now(),
            retrieval,
            selection_threshold: self.settings.selection_threshold,
            ranking: self.settings.ranking,
        });
        let sealer = self.sealer.clone();
        Box::pin(async move {
            let mut result = read.await?;
            result.next_cursor = result
                .next
                .map(|next| sealer.seal(&next.to_bytes(), &asked.1.binding(&asked.0)));
            Ok(result)
        })
    }
}

impl Retriever {
    /// The place a cursor continues from, if this service sealed it for
    /// this caller and this query (`bound`); otherwise `400` naming
    /// `cursor`.
    fn open_cursor(&self, token: &str, bound: &[u8]) -> Result<Cursor, ServiceError> {
        self.sealer
            .open(token, bound)
            .and_then(|bytes| Cursor::from_bytes(&bytes))
            .ok_or_else(|| {
                ValidationError::new(
                    "cursor",
                    "not a cursor this service issued for this caller and this query; send next_cursor as it came, with the request it came with",
                )
                .into()
            })
    }
}

/// Ranked records and their neighbours.
#[derive(Message)]
#[rtype(result = "Result<Graph, ServiceError>")]
pub struct RetrieveGraph {
    pub access: Access,
    pub request: GraphRequest,
}

impl Handler<RetrieveGraph> for Retriever {
    type Result = ResponseFuture<Result<Graph, ServiceError>>;

    fn handle(&mut self, msg: RetrieveGraph, _: &mut Self::Context) -> Self::Result {
        let (caller, retrieval, limits) =
            match msg.request.into_graph(&msg.access, self.settings.max_limit) {
                Ok(checked) => checked,
                Err(e) => return Box::pin(async move { Err(e.into()) }),
            };
        self.bounded_read(RankGraph {
            caller,
            now: self.clock.now(),
            retrieval,
            limits,
            ranking: self.settings.ranking,
        })
    }
}

/// One record by id.
#[derive(Message)]
#[rtype(result = "Result<MemoryRecord, ServiceError>")]
pub struct GetRecord {
    pub caller: Caller,
    pub id: String,
}

impl Handler<GetRecord> for Retriever {
    type Result = ResponseFuture<Result<MemoryRecord, ServiceError>>;

    fn handle(&mut self, msg: GetRecord, _: &mut Self::Context) -> Self::Result {
        let GetRecord { caller, id } = msg;
        let now = self.clock.now();
        self.bounded_read(ReadRecord { caller, now, id })
    }
}

/// The supersession chain through a record.
#[derive(Message)]
#[rtype(result = "Result<History, ServiceError>")]
pub struct RecordHistory {
    pub caller: Caller,
    pub id: String,
}

impl Handler<RecordHistory> for Retriever {
    type Result = ResponseFuture<Result<History, ServiceError>>;

    fn handle(&mut self, msg: RecordHistory, _: &mut Self::Context) -> Self::Result {
        let RecordHistory { caller, id } = msg;
        let now = self.clock.now();
        self.bounded_read(ReadHistory { caller, now, id })
    }
}

/// A topic with its fields and edges, now or as of an instant.
#[derive(Message)]
#[rtype(result = "Result<TopicView, ServiceError>")]
pub struct ViewTopic {
    pub caller: Caller,
    pub id: String,
    pub as_of: Option<Timestamp>,
}

impl Handler<ViewTopic> for Retriever {
    type Result = ResponseFuture<Result<TopicView, ServiceError>>;

    fn handle(&mut self, msg: ViewTopic, _: &mut Self::Context) -> Self::Result {
        let ViewTopic { caller, id, as_of } = msg;
        let reading = topics::Reading {
            now: self.clock.now(),
            as_of,
            decay: self.topics.decay.clone(),
        };
        self.bounded_read(ReadTopic {
            caller,
            id,
            reading,
        })
    }
}

/// Topics by text or vector, with neighbours and histories.
#[derive(Message)]
#[rtype(result = "Result<Vec<QueryHit>, ServiceError>")]
pub struct QueryTopics {
    pub caller: Caller,
    pub query: TopicQuery,
}

impl Handler<QueryTopics> for Retriever {
    type Result = ResponseFuture<Result<Vec<QueryHit>, ServiceError>>;

    fn handle(&mut self, msg: QueryTopics, _: &mut Self::Context) -> Self::Result {
        let QueryTopics { caller, mut query } = msg;
        query.max_hop_nodes = self.topics.settings.max_hop_nodes;
        self.bounded_read(SearchTopics {
            caller,
            query,
            now: self.clock.now(),
            decay: self.topics.decay.clone(),
        })
    }
}

/// The kept versions of one field of a topic.
#[derive(Message)]
#[rtype(result = "Result<Vec<VersionView>, ServiceError>")]
pub struct FieldHistory {
    pub caller: Caller,
    pub id: String,
    pub name: String,
}

impl Handler<FieldHistory> for Retriever {
    type Result = ResponseFuture<Result<Vec<VersionView>, ServiceError>>;

    fn handle(&mut self, msg: FieldHistory, _: &mut Self::Context) -> Self::Result {
        let FieldHistory { caller, id, name } = msg;
        self.bounded_read(ReadFieldHistory { caller, id, name })
    }
}

/// Every summary a topic has had.
#[derive(Message)]
#[rtype(result = "Result<Vec<SummaryView>, ServiceError>")]
pub struct SummaryHistory {
    pub caller: Caller,
    pub id: String,
}

impl Handler<SummaryHistory> for Retriever {
    type Result = ResponseFuture<Result<Vec<SummaryView>, ServiceError>>;

    fn handle(&mut self, msg: SummaryHistory, _: &mut Self::Context) -> Self::Result {
        let SummaryHistory { caller, id } = msg;
        self.bounded_read(ReadSummaryHistory { caller, id })
    }
}

/// The newest erasures the caller's grant holds.
#[derive(Message)]
#[rtype(result = "Result<ErasureLogPage, ServiceError>")]
pub struct ErasureLog {
    pub caller: Caller,
    pub limit: usize,
    /// `next_cursor` of the page before.
    pub cursor: Option<String>,
}

/// A page of the erasure log and the cursor of the next, sealed.
#[derive(Debug, Clone)]
pub struct ErasureLogPage {
    pub entries: Vec<ErasureEntry>,
    pub next_cursor: Option<String>,
}

impl Handler<ErasureLog> for Retriever {
    type Result = ResponseFuture<Result<ErasureLogPage, ServiceError>>;

    fn handle(&mut self, msg: ErasureLog, _: &mut Self::Context) -> Self::Result {
        let ErasureLog {
            caller,
            limit,
            cursor,
        } = msg;
        let bound = format!("erasures|{caller:?}|{limit}").into_bytes();
        let after = match cursor.map(|token| self.open_log_place(&token, &bound)) {
            None => None,
            Some(Ok(place)) => Some(place),
            Some(Err(e)) => return Box::pin(async move { Err(e) }),
        };
        let read = self.bounded_read(ListErasures {
            caller,
            after,
            limit,
        });
        let sealer = self.sealer.clone();
        Box::pin(async move {
            let page = read.await?;
            let next_cursor = page.next.map(|next| sealer.seal(&next.to_bytes(), &bound));
            Ok(ErasureLogPage {
                entries: page.entries,
                next_cursor,
            })
        })
    }
}

impl Retriever {
    /// The place in the erasure log a cursor continues from, if this
    /// service sealed it for this caller and page size.
    fn open_log_place(&self, token: &str, bound: &[u8]) -> Result<LogPlace, ServiceError> {
        let place = self
            .sealer
            .open(token, bound)
            .and_then(|bytes| LogPlace::from_bytes(&bytes));
        place.ok_or_else(|| {
            ValidationError::new(
                "cursor",
                "not a cursor this service issued for this caller and this limit; send next_cursor as it came",
            )
            .into()
        })
    }
}

/// Whether the database answers a query within `within` (readiness): not
/// held to the bound on reads in flight, which is about load, not health.
#[derive(Message)]
#[rtype(result = "Result<(), ServiceError>")]
pub struct Ping {
    pub within: std::time::Duration,
}

impl Handler<Ping> for Retriever {
    type Result = ResponseFuture<Result<(), ServiceError>>;

    fn handle(&mut self, msg: Ping, _: &mut Self::Context) -> Self::Result {
        let reader = self.reader.clone();
        Box::pin(async move { reader.read_within(msg.within, PingStore).await })
    }
}

/// The memory aggregates of `GET /v1/metrics`, as of now.
#[derive(Message)]
#[rtype(result = "Result<MemoryStats, ServiceError>")]
pub struct MemoryMetrics;

impl Handler<MemoryMetrics> for Retriever {
    type Result = ResponseFuture<Result<MemoryStats, ServiceError>>;

    fn handle(&mut self, _: MemoryMetrics, _: &mut Self::Context) -> Self::Result {
        let reader = self.reader.clone();
        let job = ReadStats {
            now: self.clock.now(),
        };
        Box::pin(async move { reader.read(job).await })
    }
}

/// A conversation read back, a page at a time.
#[derive(Message)]
#[rtype(result = "Result<ConversationPage, ServiceError>")]
pub struct ReadConversation {
    pub access: Access,
    pub conversation_id: String,
    pub request: TurnsRequest,
}

/// A page of a conversation, and the cursor of the next one.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct ConversationPage {
    pub sessions: Vec<Session>,
    pub next_cursor: Option<String>,
}

impl Handler<ReadConversation> for Retriever {
    type Result = ResponseFuture<Result<ConversationPage, ServiceError>>;

    fn handle(&mut self, msg: ReadConversation, _: &mut Self::Context) -> Self::Result {
        let ReadConversation {
            access,
            conversation_id,
            mut request,
        } = msg;
        let token = request.cursor.take();
        let checked = request
            .into_query(
                &access,
                conversation_id,
                self.settings.max_limit,
                self.settings.ranking.max_response_bytes,
            )
            .map_err(ServiceError::from)
            .and_then(|(caller, mut query)| {
                let bound = format!("turns|{caller:?}|{query:?}").into_bytes();
                if let Some(token) = token {
                    query.from = Some(self.open_turn_place(&token, &bound)?);
                }
                Ok((bound, query))
            });
        let (bound, query) = match checked {
            Ok(checked) => checked,
            Err(e) => return Box::pin(async move { Err(e) }),
        };
        let read = self.bounded_read(ReadTurns {
            query,
            now: self.clock.now(),
        });
        let sealer = self.sealer.clone();
        Box::pin(async move {
            let page = read.await?;
            let next_cursor = page.next.map(|(at, key)| {
                let mut place = at.to_be_bytes().to_vec();
                place.extend_from_slice(&key.to_be_bytes());
                sealer.seal(&place, &bound)
            });
            Ok(ConversationPage {
                sessions: page.sessions,
                next_cursor,
            })
        })
    }
}

impl Retriever {
    /// The turn a conversation's cursor continues after (its time and
    /// key), if this service sealed it for this caller and this request.
    fn open_turn_place(&self, token: &str, bound: &[u8]) -> Result<(i64, i64), ServiceError> {
        let place = self.sealer.open(token, bound).and_then(|bytes| {
            let at = i64::from_be_bytes(bytes.get(..8)?.try_into().ok()?);
            let key = i64::from_be_bytes(bytes.get(8..16)?.try_into().ok()?);
            (bytes.len() == 16).then_some((at, key))
        });
        place.ok_or_else(|| {
            ValidationError::new(
                "cursor",
                "not a cursor this service issued for this caller and this request; send next_cursor as it came, with the request it came with",
            )
            .into()
        })
    }
}

handles_in_request!(
    Retriever => Retrieve,
    RetrieveGraph,
    GetRecord,
    RecordHistory,
    ViewTopic,
    QueryTopics,
    FieldHistory,
    SummaryHistory,
    ErasureLog,
    ReadConversation,
    Ping,
    MemoryMetrics
);
