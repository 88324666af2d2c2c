//! Erasure over time: planned on a read connection, erased a chunk of
//! records per writer job (ingests go on between them), finished
//! (tombstones, topics, the log) in one more, then the database scrubbed
//! before the answer.

use std::time::Instant;

use super::storage::{Reader, StorageWriter};
use crate::domain::erasure::Erasure;
use crate::domain::time::Timestamp;
use crate::domain::trust::Caller;
use crate::service::erasure::{
    next_chunk, EraseChunk, ErasureReport, FinishErasure, PlanErasure, FIRST_CHUNK,
};
use crate::service::ServiceError;

/// Erases what `erasure` selects within `caller`'s grant, as of `now`.
pub async fn erase(
    reader: &Reader,
    writer: &StorageWriter,
    caller: Caller,
    now: Timestamp,
    erasure: Erasure,
) -> Result<ErasureReport, ServiceError> {
    let planned = PlanErasure {
        caller,
        now,
        erasure,
    };
    // An operator's read: not held to the bound on requests' reads.
    let plan = reader.read_ungated(planned).await?;
    if plan.erasure.dry_run {
        return Ok(plan.report);
    }
    let stamp = plan.stamp();
    let mut tombstones = 0;
    // Chunks sized by how long the last one held the writer.
    let (mut at, mut size) = (0, FIRST_CHUNK);
    while at < plan.records.len() {
        let chunk = &plan.records[at..(at + size).min(plan.records.len())];
        let planned = chunk
            .iter()
            .filter_map(|r| plan.chained.get(&r.key).map(|c| (r.key, c.clone())))
            .collect();
        let started = Instant::now();
        tombstones += writer
            .write(EraseChunk {
                records: chunk.to_vec(),
                planned,
                stamp: stamp.clone(),
            })
            .await?;
        at += chunk.len();
        size = next_chunk(chunk.len(), started.elapsed());
    }
    let report = writer.write(FinishErasure { plan, tombstones }).await?;
    // No copy of what was deleted stays aside before the answer.
    writer.scrub().await?;
    Ok(report)
}
