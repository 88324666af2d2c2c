//! The retrieval actor: trust-gated, layered reads and multi-solution
//! selection. It bounds the reads in flight, since the reader pool's
//! mailbox is not bounded itself.

use std::sync::Arc;

use actix::{Actor, Addr, Context, Handler, Message, ResponseFuture};
use serde::Serialize;
use tokio::sync::Semaphore;

use super::storage::{FetchHistory, FetchRecord, QueryRecords, StoreReader};
use super::ServiceError;
use crate::clock::Clock;
use crate::domain::record::MemoryRecord;
use crate::domain::retrieval::Retrieval;
use crate::domain::selection::{select, Selection};
use crate::domain::trust::TrustContext;

pub struct Retriever {
    reader: Addr<StoreReader>,
    clock: Clock,
    selection_threshold: f64,
    in_flight: Arc<Semaphore>,
}

impl Retriever {
    pub fn new(
        reader: Addr<StoreReader>,
        clock: Clock,
        selection_threshold: f64,
        max_in_flight: usize,
    ) -> Self {
        Retriever {
            reader,
            clock,
            selection_threshold,
            in_flight: Arc::new(Semaphore::new(max_in_flight)),
        }
    }

    fn permit(&self) -> Result<tokio::sync::OwnedSemaphorePermit, ServiceError> {
        self.in_flight.clone().try_acquire_owned().map_err(|_| {
            ServiceError::Overloaded("too many reads in flight; retry shortly".to_string())
        })
    }
}

impl Actor for Retriever {
    type Context = Context<Self>;
}

#[derive(Debug, Clone, Serialize)]
pub struct RetrieveResult {
    pub records: Vec<MemoryRecord>,
    pub selection: Option<Selection>,
}

#[derive(Message)]
#[rtype(result = "Result<RetrieveResult, ServiceError>")]
pub struct Retrieve {
    pub retrieval: Retrieval,
}

#[derive(Message)]
#[rtype(result = "Result<MemoryRecord, ServiceError>")]
pub struct RetrieveById {
    pub id: String,
    pub trust: TrustContext,
}

impl Handler<Retrieve> for Retriever {
    type Result = ResponseFuture<Result<RetrieveResult, ServiceError>>;

    fn handle(&mut self, msg: Retrieve, _: &mut Self::Context) -> Self::Result {
        let permit = self.permit();
        let reader = self.reader.clone();
        let now = self.clock.now();
        let threshold = self.selection_threshold;
        Box::pin(async move {
            let _permit = permit?;
            let Retrieval {
                trust,
                task_descriptor,
                query,
                context,
            } = msg.retrieval;
            tracing::debug!(
                actor_id = trust.actor_id.as_deref().unwrap_or(""),
                authenticated = trust.authenticated,
                task_descriptor = task_descriptor.as_deref().unwrap_or(""),
                "retrieve"
            );
            let records = reader.send(QueryRecords { query, now }).await??;
            // Storage filtered by trust already; this guards the contract.
            debug_assert!(records.iter().all(|r| trust.allows(r)));
            let selection = select(&records, context.as_ref(), now, threshold);
            Ok(RetrieveResult { records, selection })
        })
    }
}

impl Handler<RetrieveById> for Retriever {
    type Result = ResponseFuture<Result<MemoryRecord, ServiceError>>;

    fn handle(&mut self, msg: RetrieveById, _: &mut Self::Context) -> Self::Result {
        let permit = self.permit();
        let reader = self.reader.clone();
        let now = self.clock.now();
        Box::pin(async move {
            let _permit = permit?;
            let record = reader
                .send(FetchRecord {
                    id: msg.id.clone(),
                    now,
                })
                .await??
                .ok_or_else(|| ServiceError::NotFound(format!("record {} not found", msg.id)))?;
            if !msg.trust.allows(&record) {
                return Err(ServiceError::PermissionDenied(format!(
                    "record {} is not visible to this trust context",
                    msg.id
                )));
            }
            Ok(record)
        })
    }
}

/// The supersession chain through a record the caller may see; versions
/// the caller may not see are left out.
#[derive(Message)]
#[rtype(result = "Result<Vec<MemoryRecord>, ServiceError>")]
pub struct RetrieveHistory {
    pub id: String,
    pub trust: TrustContext,
}

impl Handler<RetrieveHistory> for Retriever {
    type Result = ResponseFuture<Result<Vec<MemoryRecord>, ServiceError>>;

    fn handle(&mut self, msg: RetrieveHistory, _: &mut Self::Context) -> Self::Result {
        let permit = self.permit();
        let reader = self.reader.clone();
        let now = self.clock.now();
        Box::pin(async move {
            let _permit = permit?;
            let chain = reader
                .send(FetchHistory {
                    id: msg.id.clone(),
                    now,
                })
                .await??
                .ok_or_else(|| ServiceError::NotFound(format!("record {} not found", msg.id)))?;
            let requested_visible = chain.iter().any(|r| r.id == msg.id && msg.trust.allows(r));
            if !requested_visible {
                return Err(ServiceError::PermissionDenied(format!(
                    "record {} is not visible to this trust context",
                    msg.id
                )));
            }
            Ok(chain.into_iter().filter(|r| msg.trust.allows(r)).collect())
        })
    }
}
