//! The embedder actor, started when `[embedding]` is configured: it works
//! through the records that have no vector, a batch at a time — read on
//! the reader pool, sent to the embeddings endpoint, stored as one writer
//! job — in the background, so no request ever waits on the endpoint. A
//! record is findable by text from the moment it is stored, and by vector
//! once its batch is embedded.
//!
//! A failed request (timeout, connection error, `429`, `5xx`, an answer
//! that is not one vector per text) is retried after a wait that doubles
//! up to `max_backoff_ms`; a batch the endpoint refuses is tried one text
//! at a time, so one text it will not take leaves only that record without
//! a vector.

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::{Actor, AsyncContext, Context, WrapFuture};

use super::storage::{Reader, StorageWriter};
use crate::clock::Clock;
use crate::config::EmbeddingSettings;
use crate::embeddings::{Backoff, EmbedError, EmbeddingsClient};
use crate::metrics::{EmbedderEvent, Metrics};
use crate::service::embedding::{PendingEmbeddings, StoreEmbeddings};
use crate::store::{Embedded, ToEmbed};

/// How often the embedder goes back over every record, for those whose
/// text changed since they were embedded (their vector was dropped then).
const RESCAN_EVERY: Duration = Duration::from_secs(300);

pub struct Embedder {
    settings: EmbeddingSettings,
    reader: Reader,
    writer: StorageWriter,
    clock: Clock,
    metrics: Arc<Metrics>,
}

impl Embedder {
    pub fn new(
        settings: EmbeddingSettings,
        reader: Reader,
        writer: StorageWriter,
        clock: Clock,
        metrics: Arc<Metrics>,
    ) -> Self {
        Embedder {
            settings,
            reader,
            writer,
            clock,
            metrics,
        }
    }
}

impl Actor for Embedder {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        let work = Work {
            client: EmbeddingsClient::new(&self.settings),
            backoff: Backoff::new(
                Duration::from_millis(self.settings.backoff_ms),
                Duration::from_millis(self.settings.max_backoff_ms),
            ),
            batch_size: self.settings.batch_size,
            poll: Duration::from_millis(self.settings.poll_ms),
            reader: self.reader.clone(),
            writer: self.writer.clone(),
            clock: self.clock.clone(),
            metrics: self.metrics.clone(),
        };
        tracing::info!(endpoint = %self.settings.endpoint, model = %self.settings.model, "embedder started");
        ctx.spawn(work.run().into_actor(self));
    }
}

/// What the background loop owns.
struct Work {
    client: EmbeddingsClient,
    backoff: Backoff,
    batch_size: usize,
    poll: Duration,
    reader: Reader,
    writer: StorageWriter,
    clock: Clock,
    metrics: Arc<Metrics>,
}

impl Work {
    async fn run(mut self) {
        let mut after_key = 0i64;
        let mut pass_started = Instant::now();
        loop {
            let pending = PendingEmbeddings {
                after_key,
                limit: self.batch_size,
                now: self.clock.now(),
            };
            let found = self.reader.read(pending).await;
            let (todo, last) = match found {
                Ok(found) => found,
                Err(e) => {
                    tracing::warn!(error = %e, "embedder: reading records failed");
                    actix::clock::sleep(self.poll).await;
                    continue;
                }
            };
            let Some(last) = last else {
                // Caught up: wait for new records; now and then start over
                // from the first record.
                actix::clock::sleep(self.poll).await;
                if pass_started.elapsed() >= RESCAN_EVERY {
                    after_key = 0;
                    pass_started = Instant::now();
                }
                continue;
            };
            if todo.is_empty() || self.embed_and_store(todo).await {
                after_key = last;
            }
        }
    }

    /// Embeds and stores one batch; `false` when it is to be tried again
    /// (after the backoff wait, which this has already waited).
    async fn embed_and_store(&mut self, todo: Vec<ToEmbed>) -> bool {
        let texts: Vec<&str> = todo.iter().map(|t| t.text.as_str()).collect();
        let embedded = match self.client.embed(&texts).await {
            Ok(vectors) => pair(todo, vectors),
            Err(EmbedError::Refused(why)) if todo.len() > 1 => {
                tracing::warn!(error = %why, texts = todo.len(), "embedder: batch refused; embedding its texts one by one");
                match self.one_by_one(todo).await {
                    Some(embedded) => embedded,
                    None => return false,
                }
            }
            Err(EmbedError::Refused(why)) => {
                self.refused(&why, todo[0].key);
                return true;
            }
            Err(EmbedError::Retry(why)) => {
                self.wait_after_failure(&why).await;
                return false;
            }
        };
        let stored = self.writer.write(StoreEmbeddings { embedded }).await;
        match stored {
            Ok(report) => {
                self.backoff.succeeded();
                self.metrics
                    .embedder(EmbedderEvent::Stored(report.stored as u64));
                if report.misfit > 0 {
                    tracing::error!(
                        vectors = report.misfit,
                        "embedder: the model's vectors do not have the dimensions of this \
                         database's (see retrieval.embedding_dimensions); they were not stored"
                    );
                }
                true
            }
            Err(e) => {
                self.wait_after_failure(&e.to_string()).await;
                false
            }
        }
    }

    /// Each text of a refused batch on its own; `None` when the endpoint
    /// failed meanwhile (the batch is tried again later).
    async fn one_by_one(&mut self, todo: Vec<ToEmbed>) -> Option<Vec<Embedded>> {
        let mut embedded = Vec::new();
        for item in todo {
            match self.client.embed(&[item.text.as_str()]).await {
                Ok(vectors) => embedded.extend(pair(vec![item], vectors)),
                Err(EmbedError::Refused(why)) => self.refused(&why, item.key),
                Err(EmbedError::Retry(why)) => {
                    self.wait_after_failure(&why).await;
                    return None;
                }
            }
        }
        Some(embedded)
    }

    fn refused(&self, why: &str, key: i64) {
        tracing::error!(error = %why, key, "embedder: text refused; the record stays without a vector");
        self.metrics.embedder(EmbedderEvent::Refused(1));
    }

    async fn wait_after_failure(&mut self, why: &str) {
        let wait = self.backoff.failed();
        self.metrics.embedder(EmbedderEvent::Retried);
        tracing::warn!(error = %why, retry_in_ms = wait.as_millis() as u64, "embedder: request failed");
        actix::clock::sleep(wait).await;
    }
}

fn pair(todo: Vec<ToEmbed>, vectors: Vec<crate::domain::vector::Embedding>) -> Vec<Embedded> {
    todo.into_iter()
        .zip(vectors)
        .map(|(t, embedding)| Embedded {
            key: t.key,
            version: t.version,
            text: t.text,
            embedding,
        })
        .collect()
}
