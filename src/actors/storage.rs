//! The storage actors: pooled readers on a `SyncArbiter`, and the single
//! group-committing writer thread.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use actix::{Actor, Handler, Message, SyncContext};
use rusqlite::Connection;
use tokio::sync::oneshot;

use super::ServiceError;
use crate::domain::record::MemoryRecord;
use crate::domain::retrieval::RecordQuery;
use crate::domain::time::Timestamp;
use crate::store::consolidation;
use crate::store::maintenance::{self, DecayRow};
use crate::store::stats::{self, MemoryStats};
use crate::store::{records, Pool, StoreError};

/// Reads, one pooled connection per arbiter thread.
pub struct StoreReader {
    pool: Pool,
}

impl StoreReader {
    pub fn new(pool: Pool) -> Self {
        StoreReader { pool }
    }
}

impl Actor for StoreReader {
    type Context = SyncContext<Self>;
}

#[derive(Message)]
#[rtype(result = "Result<Option<MemoryRecord>, StoreError>")]
pub struct FetchRecord {
    pub id: String,
    pub now: Timestamp,
}

#[derive(Message)]
#[rtype(result = "Result<Vec<MemoryRecord>, StoreError>")]
pub struct QueryRecords {
    pub query: RecordQuery,
    pub now: Timestamp,
}

/// A chunk of records for the decay sweep, in key order after `after_key`.
#[derive(Message)]
#[rtype(result = "Result<Vec<DecayRow>, StoreError>")]
pub struct ScanForDecay {
    pub after_key: i64,
    pub limit: usize,
}

/// The supersession chain through a record, oldest first.
#[derive(Message)]
#[rtype(result = "Result<Option<Vec<MemoryRecord>>, StoreError>")]
pub struct FetchHistory {
    pub id: String,
    pub now: Timestamp,
}

/// Groups of identical active facts (ids), for consolidation.
#[derive(Message)]
#[rtype(result = "Result<Vec<Vec<String>>, StoreError>")]
pub struct FindDuplicateFacts;

/// Aggregates over all records, for metrics.
#[derive(Message)]
#[rtype(result = "Result<MemoryStats, StoreError>")]
pub struct CollectStats {
    pub now: Timestamp,
}

#[derive(Message)]
#[rtype(result = "Result<(), StoreError>")]
pub struct CheckReady;

impl Handler<FetchRecord> for StoreReader {
    type Result = Result<Option<MemoryRecord>, StoreError>;

    fn handle(&mut self, msg: FetchRecord, _: &mut Self::Context) -> Self::Result {
        records::get_record(&*self.pool.get()?, &msg.id, msg.now)
    }
}

impl Handler<QueryRecords> for StoreReader {
    type Result = Result<Vec<MemoryRecord>, StoreError>;

    fn handle(&mut self, msg: QueryRecords, _: &mut Self::Context) -> Self::Result {
        records::query_records(&*self.pool.get()?, &msg.query, msg.now)
    }
}

impl Handler<FetchHistory> for StoreReader {
    type Result = Result<Option<Vec<MemoryRecord>>, StoreError>;

    fn handle(&mut self, msg: FetchHistory, _: &mut Self::Context) -> Self::Result {
        records::supersession_chain(&*self.pool.get()?, &msg.id, msg.now)
    }
}

impl Handler<ScanForDecay> for StoreReader {
    type Result = Result<Vec<DecayRow>, StoreError>;

    fn handle(&mut self, msg: ScanForDecay, _: &mut Self::Context) -> Self::Result {
        maintenance::scan_for_decay(&*self.pool.get()?, msg.after_key, msg.limit)
    }
}

impl Handler<FindDuplicateFacts> for StoreReader {
    type Result = Result<Vec<Vec<String>>, StoreError>;

    fn handle(&mut self, _: FindDuplicateFacts, _: &mut Self::Context) -> Self::Result {
        consolidation::duplicate_fact_groups(&*self.pool.get()?)
    }
}

impl Handler<CollectStats> for StoreReader {
    type Result = Result<MemoryStats, StoreError>;

    fn handle(&mut self, msg: CollectStats, _: &mut Self::Context) -> Self::Result {
        stats::memory_stats(&*self.pool.get()?, msg.now)
    }
}

impl Handler<CheckReady> for StoreReader {
    type Result = Result<(), StoreError>;

    fn handle(&mut self, _: CheckReady, _: &mut Self::Context) -> Self::Result {
        records::ping(&*self.pool.get()?)
    }
}

/// A unit of work for the writer: runs inside the shared transaction, and
/// is answered once that transaction's fate is known.
trait WriteJob: Send {
    /// Runs the work; false when it failed and its changes must be undone.
    fn run(&mut self, conn: &Connection) -> bool;
    /// Sends the answer: the work's result if the transaction committed.
    fn finish(self: Box<Self>, commit: Result<(), String>);
}

struct PendingWrite<T, F> {
    work: Option<F>,
    result: Option<Result<T, ServiceError>>,
    reply: oneshot::Sender<Result<T, ServiceError>>,
}

impl<T, F> WriteJob for PendingWrite<T, F>
where
    T: Send,
    F: FnOnce(&Connection) -> Result<T, ServiceError> + Send,
{
    fn run(&mut self, conn: &Connection) -> bool {
        let work = self.work.take().expect("a write job runs once");
        // A panicking job must not take the writer (and every later write)
        // down with it.
        let result = catch_unwind(AssertUnwindSafe(|| work(conn))).unwrap_or_else(|_| {
            Err(ServiceError::Store(StoreError::Corrupt(
                "write job panicked".to_string(),
            )))
        });
        let ok = result.is_ok();
        self.result = Some(result);
        ok
    }

    fn finish(self: Box<Self>, commit: Result<(), String>) {
        let result = match (commit, self.result) {
            (_, Some(Err(e))) => Err(e),
            (Ok(()), Some(ok)) => ok,
            (Err(e), _) => Err(ServiceError::Unavailable(format!(
                "write not committed: {e}"
            ))),
            (Ok(()), None) => Err(ServiceError::Unavailable("write was not run".to_string())),
        };
        // The caller may have gone away; its write stands regardless.
        let _ = self.reply.send(result);
    }
}

enum WriterMessage {
    Job(Box<dyn WriteJob>),
    Shutdown,
}

/// Handle to the single writer. Cloning shares the same queue.
#[derive(Clone)]
pub struct StorageWriter {
    queue: SyncSender<WriterMessage>,
    depth: Arc<AtomicUsize>,
    thread: Arc<Mutex<Option<JoinHandle<()>>>>,
}

impl StorageWriter {
    /// Starts the writer thread on its own connection.
    pub fn start(conn: Connection, capacity: usize, max_per_transaction: usize) -> StorageWriter {
        let (queue, inbox) = mpsc::sync_channel(capacity);
        let depth = Arc::new(AtomicUsize::new(0));
        let thread_depth = depth.clone();
        let thread = std::thread::Builder::new()
            .name("engram-writer".to_string())
            .spawn(move || write_loop(conn, inbox, thread_depth, max_per_transaction))
            .expect("spawn the writer thread");
        StorageWriter {
            queue,
            depth,
            thread: Arc::new(Mutex::new(Some(thread))),
        }
    }

    /// Writes waiting in the queue now.
    pub fn queue_depth(&self) -> usize {
        self.depth.load(Ordering::Relaxed)
    }

    /// Queues `work` and waits for its commit. `work` runs on the writer
    /// thread inside a transaction shared with other queued writes, isolated
    /// from them by a savepoint: if it fails, only its own changes are
    /// undone and its error is returned.
    pub async fn write<T, F>(&self, work: F) -> Result<T, ServiceError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, ServiceError> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job = Box::new(PendingWrite {
            work: Some(work),
            result: None,
            reply,
        });
        self.depth.fetch_add(1, Ordering::Relaxed);
        match self.queue.try_send(WriterMessage::Job(job)) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                self.depth.fetch_sub(1, Ordering::Relaxed);
                return Err(ServiceError::Overloaded(
                    "write queue is full; retry shortly".to_string(),
                ));
            }
            Err(TrySendError::Disconnected(_)) => {
                self.depth.fetch_sub(1, Ordering::Relaxed);
                return Err(ServiceError::Unavailable(
                    "the writer has stopped".to_string(),
                ));
            }
        }
        answer.await.unwrap_or_else(|_| {
            Err(ServiceError::Unavailable(
                "the writer has stopped".to_string(),
            ))
        })
    }

    /// Lets queued writes finish, checkpoints the WAL, and stops the thread.
    /// Blocks; call it off the async executor or after the server stopped.
    pub fn shutdown(&self) {
        let Some(thread) = self.thread.lock().expect("writer lock").take() else {
            return;
        };
        // A blocking send waits behind queued writes, which is the point.
        if self.queue.send(WriterMessage::Shutdown).is_ok() {
            let _ = thread.join();
        }
    }
}

fn write_loop(
    conn: Connection,
    inbox: Receiver<WriterMessage>,
    depth: Arc<AtomicUsize>,
    max_per_transaction: usize,
) {
    let mut stopping = false;
    while !stopping {
        let first = match inbox.recv() {
            Ok(WriterMessage::Job(job)) => job,
            Ok(WriterMessage::Shutdown) | Err(_) => break,
        };
        let mut batch = vec![first];
        while batch.len() < max_per_transaction {
            match inbox.try_recv() {
                Ok(WriterMessage::Job(job)) => batch.push(job),
                Ok(WriterMessage::Shutdown) => {
                    stopping = true;
                    break;
                }
                Err(TryRecvError::Empty) | Err(TryRecvError::Disconnected) => break,
            }
        }
        depth.fetch_sub(batch.len(), Ordering::Relaxed);
        let commit = commit_batch(&conn, &mut batch);
        if let Err(e) = &commit {
            tracing::error!(error = %e, writes = batch.len(), "group commit failed");
        }
        for job in batch {
            job.finish(commit.clone());
        }
    }
    if let Err(e) = conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)") {
        tracing::warn!(error = %e, "final WAL checkpoint failed");
    }
    tracing::info!("writer stopped");
}

fn commit_batch(conn: &Connection, batch: &mut [Box<dyn WriteJob>]) -> Result<(), String> {
    conn.execute_batch("BEGIN IMMEDIATE")
        .map_err(|e| e.to_string())?;
    for job in batch.iter_mut() {
        let step = conn.execute_batch("SAVEPOINT write_job").and_then(|()| {
            if job.run(conn) {
                conn.execute_batch("RELEASE write_job")
            } else {
                conn.execute_batch("ROLLBACK TO write_job; RELEASE write_job")
            }
        });
        if let Err(e) = step {
            let _ = conn.execute_batch("ROLLBACK");
            return Err(e.to_string());
        }
    }
    conn.execute_batch("COMMIT").map_err(|e| {
        let _ = conn.execute_batch("ROLLBACK");
        e.to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::policy::{NewRecord, Policy};
    use crate::store::migrations;
    use std::time::Duration;

    fn writer_on(dir: &tempfile::TempDir, capacity: usize) -> (StorageWriter, std::path::PathBuf) {
        let path = dir.path().join("w.db");
        let mut conn = Connection::open(&path).unwrap();
        migrations::run(&mut conn).unwrap();
        (StorageWriter::start(conn, capacity, 64), path)
    }

    fn record(id: &str) -> MemoryRecord {
        let new: NewRecord = serde_json::from_value(serde_json::json!({
            "id": id, "type": "semantic", "sensitivity": "low",
            "payload": {"kind": "semantic", "subject": id, "predicate": "is"}
        }))
        .unwrap();
        new.into_record(
            &Policy::default(),
            &crate::domain::record::Attribution::new("t", "test"),
            chrono::Utc::now(),
            || unreachable!(),
        )
        .unwrap()
    }

    fn stored_ids(path: &std::path::Path) -> Vec<String> {
        let conn = Connection::open(path).unwrap();
        let mut stmt = conn.prepare("SELECT id FROM records ORDER BY id").unwrap();
        let ids = stmt
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        ids
    }

    #[actix_web::test]
    async fn a_failed_write_is_undone_without_touching_the_others_in_its_transaction() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, path) = writer_on(&dir, 16);
        let insert = |id: &'static str, fail: bool| {
            let writer = writer.clone();
            async move {
                writer
                    .write(move |conn| {
                        records::insert_record(conn, &record(id))?;
                        if fail {
                            return Err(ServiceError::Conflict("refused".into()));
                        }
                        Ok(())
                    })
                    .await
            }
        };
        let (a, b, c) =
            futures_util::future::join3(insert("a", false), insert("b", true), insert("c", false))
                .await;
        assert!(a.is_ok() && c.is_ok());
        assert!(matches!(b, Err(ServiceError::Conflict(_))));
        writer.shutdown();
        assert_eq!(stored_ids(&path), ["a", "c"]);
    }

    #[actix_web::test]
    async fn a_full_queue_answers_overloaded_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, _) = writer_on(&dir, 1);
        let (started_tx, started) = mpsc::channel::<()>();
        let (release, wait) = mpsc::channel::<()>();
        let (started_tx, wait) = (Mutex::new(started_tx), Mutex::new(wait));
        let busy = writer.clone();
        let first = actix_web::rt::spawn(async move {
            busy.write(move |_| {
                started_tx.lock().unwrap().send(()).unwrap();
                wait.lock().unwrap().recv().unwrap();
                Ok(())
            })
            .await
        });
        // The writer is now stuck in the first job with an empty queue.
        while started.try_recv().is_err() {
            actix_web::rt::time::sleep(Duration::from_millis(5)).await;
        }
        let queued = writer.clone();
        let second = actix_web::rt::spawn(async move { queued.write(|_| Ok(())).await });
        while writer.queue_depth() == 0 {
            actix_web::rt::time::sleep(Duration::from_millis(5)).await;
        }
        let third = writer.write(|_| Ok(())).await;
        assert!(
            matches!(third, Err(ServiceError::Overloaded(_))),
            "{third:?}"
        );
        release.send(()).unwrap();
        assert!(first.await.unwrap().is_ok());
        assert!(second.await.unwrap().is_ok());
        writer.shutdown();
    }
}
