//! The decay actor: runs a sweep over every record, a chunk at a time —
//! read and planned on the reader pool, written as one writer job — so the
//! single writer is held for one chunk at a time and ingests queued
//! meanwhile are committed between chunks. Topics' salience is swept
//! after the records, the same way.

use actix::{Actor, Context, Handler, Message, ResponseFuture};

use super::storage::{Reader, StorageWriter};
use crate::domain::record::DecayProfile;
use crate::domain::record::SCHEDULER_ACTOR;
use crate::domain::time::Timestamp;
use crate::domain::trust::Caller;
use crate::service::decay::{DecayReport, PlanDecay, PlanTopicDecay, WriteDecay, WriteTopicDecay};
use crate::service::ServiceError;

pub struct Decayer {
    reader: Reader,
    writer: StorageWriter,
    chunk_size: usize,
    /// How topics decay.
    topic_decay: DecayProfile,
}

impl Decayer {
    pub fn new(
        reader: Reader,
        writer: StorageWriter,
        chunk_size: usize,
        topic_decay: DecayProfile,
    ) -> Self {
        Decayer {
            reader,
            writer,
            chunk_size: chunk_size.max(1),
            topic_decay,
        }
    }
}

impl Actor for Decayer {
    type Context = Context<Self>;
}

/// One sweep as of `now`.
#[derive(Message)]
#[rtype(result = "Result<DecayReport, ServiceError>")]
pub struct ApplyDecay {
    pub now: Timestamp,
}

impl Handler<ApplyDecay> for Decayer {
    type Result = ResponseFuture<Result<DecayReport, ServiceError>>;

    #[tracing::instrument(name = "apply_decay", level = "debug", skip_all)]
    fn handle(&mut self, msg: ApplyDecay, _: &mut Self::Context) -> Self::Result {
        let reader = self.reader.clone();
        let writer = self.writer.clone();
        let limit = self.chunk_size;
        let now = msg.now;
        let caller = Caller::unrestricted(Some(SCHEDULER_ACTOR.to_string()));
        let decay = self.topic_decay.clone();
        Box::pin(async move {
            let mut report = DecayReport::default();
            let mut after_key = 0;
            loop {
                let chunk = reader
                    .read(PlanDecay {
                        now,
                        after_key,
                        limit,
                    })
                    .await?;
                let Some(last) = chunk.last_key else { break };
                after_key = last;
                report.scanned += chunk.scanned;
                if chunk.changes.is_empty() && chunk.prunes.is_empty() {
                    continue;
                }
                let job = WriteDecay {
                    caller: caller.clone(),
                    now,
                    chunk,
                };
                let (decayed, pruned) = writer.write(job).await?;
                report.decayed += decayed;
                report.pruned += pruned;
                report.chunks += 1;
            }
            let mut after_key = 0;
            loop {
                let chunk = reader
                    .read(PlanTopicDecay {
                        decay: decay.clone(),
                        now,
                        after_key,
                        limit,
                    })
                    .await?;
                let Some(last) = chunk.last_key else { break };
                after_key = last;
                if chunk.changes.is_empty() {
                    continue;
                }
                report.topics_decayed += writer.write(WriteTopicDecay { chunk }).await?;
                report.chunks += 1;
            }
            Ok(report)
        })
    }
}
