//! The retrieval actor: validates retrieval requests on its HTTP worker's thread
//! and turns them into reads — trust-gated, layered, with multi-solution
//! selection — run by `service::retrieval` on the reader pool. It bounds
//! the reads in flight across all its instances, since the reader pool's
//! mailbox is not bounded itself.

use super::request::handles_in_request;
use std::sync::Arc;

use actix::{Actor, Context, Handler, Message, ResponseFuture};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::domain::retrieval::Ranking;

use super::storage::Reader;
use crate::clock::Clock;
use crate::domain::retrieval::GraphLimits;
use crate::domain::retrieval::Retrieval;
use crate::domain::time::Timestamp;
use crate::domain::trust::Caller;
use crate::domain::validate::Validated;
use crate::service::graph::Graph;
use crate::service::retrieval::RetrieveResult;
use crate::service::{self, ServiceError};
use crate::store::Transaction;

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
    clock: Clock,
    gate: ReadGate,
    settings: ReadSettings,
}

impl Retriever {
    pub fn new(reader: Reader, clock: Clock, gate: ReadGate, settings: ReadSettings) -> Self {
        Retriever {
            reader,
            clock,
            gate,
            settings,
        }
    }

    /// Runs a read within the bound, as of now.
    fn bounded_read<T, F>(&self, read: F) -> ResponseFuture<Result<T, ServiceError>>
    where
        T: Send + 'static,
        F: FnOnce(
                &mut dyn crate::store::Transaction,
                crate::domain::time::Timestamp,
            ) -> Result<T, ServiceError>
            + Send
            + 'static,
    {
        let permit = self.gate.enter();
        let reader = self.reader.clone();
        let now = self.clock.now();
        Box::pin(async move {
            let _permit = permit?;
            reader.read(move |tx| read(tx, now)).await
        })
    }
}

impl Actor for Retriever {
    type Context = Context<Self>;
}

/// Turns a request into its caller (the effective trust) and the
/// retrieval it asks for, given the server's largest `limit`; runs on the
/// retriever's thread.
pub type Check = Box<dyn FnOnce(usize) -> Validated<(Caller, Retrieval)> + Send>;

#[derive(Message)]
#[rtype(result = "Result<RetrieveResult, ServiceError>")]
pub struct Retrieve {
    pub check: Check,
}

impl Handler<Retrieve> for Retriever {
    type Result = ResponseFuture<Result<RetrieveResult, ServiceError>>;

    #[tracing::instrument(name = "retrieve", level = "debug", skip_all)]
    fn handle(&mut self, msg: Retrieve, _: &mut Self::Context) -> Self::Result {
        let (caller, retrieval) = match (msg.check)(self.settings.max_limit) {
            Ok(checked) => checked,
            Err(e) => return Box::pin(async move { Err(e.into()) }),
        };
        tracing::debug!(
            actor_id = caller.trust.actor_id.as_deref().unwrap_or(""),
            authenticated = caller.trust.authenticated,
            task_descriptor = retrieval.task_descriptor.as_deref().unwrap_or(""),
            "retrieve"
        );
        let settings = self.settings;
        self.bounded_read(move |tx, now| {
            service::retrieval::retrieve(
                tx,
                &caller,
                now,
                &retrieval,
                settings.selection_threshold,
                &settings.ranking,
            )
        })
    }
}

/// A service call made as `caller` at `now`.
pub type CallerWork<T> =
    Box<dyn FnOnce(&mut dyn Transaction, &Caller, Timestamp) -> Result<T, ServiceError> + Send>;

/// A read as a caller (a record by id, a history, the topics): run like
/// every retrieval, within the bound on reads in flight, on the read pool.
pub struct ReadAs<T> {
    pub caller: Caller,
    pub work: CallerWork<T>,
}

impl<T: Send + 'static> Message for ReadAs<T> {
    type Result = Result<T, ServiceError>;
}

impl<T: Send + 'static> Handler<ReadAs<T>> for Retriever {
    type Result = ResponseFuture<Result<T, ServiceError>>;

    #[tracing::instrument(name = "read_as", level = "debug", skip_all)]
    fn handle(&mut self, msg: ReadAs<T>, _: &mut Self::Context) -> Self::Result {
        let ReadAs { caller, work } = msg;
        self.bounded_read(move |tx, now| work(tx, &caller, now))
    }
}

/// Turns a graph request into its caller, the retrieval of its roots and
/// its limits, given the server's largest `limit`.
pub type GraphCheck = Box<dyn FnOnce(usize) -> Validated<(Caller, Retrieval, GraphLimits)> + Send>;

#[derive(Message)]
#[rtype(result = "Result<Graph, ServiceError>")]
pub struct RetrieveGraph {
    pub check: GraphCheck,
}

impl Handler<RetrieveGraph> for Retriever {
    type Result = ResponseFuture<Result<Graph, ServiceError>>;

    #[tracing::instrument(name = "retrieve_graph", level = "debug", skip_all)]
    fn handle(&mut self, msg: RetrieveGraph, _: &mut Self::Context) -> Self::Result {
        let (caller, retrieval, limits) = match (msg.check)(self.settings.max_limit) {
            Ok(checked) => checked,
            Err(e) => return Box::pin(async move { Err(e.into()) }),
        };
        let ranking = self.settings.ranking;
        self.bounded_read(move |tx, now| {
            service::graph::graph(tx, &caller, now, &retrieval, limits, &ranking)
        })
    }
}

handles_in_request!(Retriever => Retrieve, RetrieveGraph);
handles_in_request!(for<T> Retriever => ReadAs<T>);
