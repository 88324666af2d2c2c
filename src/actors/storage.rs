//! The storage actors: [`StoreReader`], a `SyncArbiter` pool of threads
//! running reads on pooled connections, and [`StorageWriter`], the
//! group-committing writer thread (on PostgreSQL, threads). Both run
//! [`Job`]s — one service call each, as data — in a [`Transaction`];
//! neither knows which backend is behind it. Every call to either has a
//! deadline.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TryRecvError, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use actix::{Actor, Addr, Handler, Message, SyncContext};
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};

use crate::domain::record::MemoryRecord;
use crate::metrics::WriterStats;
use crate::service::ingest::{Ingest, Route};
use crate::service::job::Job;
use crate::service::ServiceError;
use crate::store::budget::{self, Budget};
use crate::store::{ReadPool, StoreError, ThreadReads, Transaction, WriteConnection};
use crate::telemetry::Handoff;

/// A [`Job`] in a storage actor's queue, its type known by its answer only.
trait Queued<T>: Send {
    fn name(&self) -> &'static str;
    fn run(self: Box<Self>, tx: &mut dyn Transaction) -> Result<T, ServiceError>;
}

impl<J: Job> Queued<J::Output> for J {
    fn name(&self) -> &'static str {
        J::NAME
    }

    fn run(self: Box<Self>, tx: &mut dyn Transaction) -> Result<J::Output, ServiceError> {
        Job::run(*self, tx)
    }
}

type Work<T> = Box<dyn Queued<T>>;

/// Runs `work` in a span of its name, turning a panic into an error so the
/// thread survives it.
fn run_guarded<T>(work: Work<T>, tx: &mut dyn Transaction) -> Result<T, ServiceError> {
    let _job = tracing::debug_span!("job", name = work.name()).entered();
    catch_unwind(AssertUnwindSafe(|| work.run(tx))).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        tracing::error!(panic = %what, "a storage job panicked");
        Err(ServiceError::Internal(format!(
            "a storage job panicked: {what}"
        )))
    })
}

/// Reads, made on the arbiter's threads (see [`ReadPool::for_thread`]).
pub struct StoreReader {
    reads: ThreadReads,
}

impl StoreReader {
    /// Made on the thread it reads on.
    pub fn new(pool: &ReadPool) -> Self {
        StoreReader {
            reads: pool.for_thread(),
        }
    }
}

impl Actor for StoreReader {
    type Context = SyncContext<Self>;
}

/// A read, and where its answer goes: the answer is sent as soon as the
/// work is done, before its read transaction ends.
pub struct Read<T> {
    work: Work<T>,
    answer: oneshot::Sender<Result<T, ServiceError>>,
    /// Ends when the caller stops waiting or the deadline passes.
    budget: Budget,
    handoff: Handoff,
}

impl<T: Send + 'static> Message for Read<T> {
    type Result = ();
}

impl<T: Send + 'static> Handler<Read<T>> for StoreReader {
    type Result = ();

    fn handle(&mut self, msg: Read<T>, _: &mut Self::Context) {
        let Read {
            work,
            answer,
            budget,
            mut handoff,
        } = msg;
        if answer.is_closed() || budget.spent() {
            // Its caller stopped waiting.
            return;
        }
        let mut answer = Some(answer);
        let reads = &mut self.reads;
        let started = Instant::now();
        handoff.started("StoreReader", work.name(), started);
        let read = handoff.span().in_scope(|| {
            budget::within(budget, || {
                reads.read(|tx| {
                    let result = run_guarded(work, tx);
                    // Counted before the answer goes: the request may end
                    // as soon as it has it.
                    handoff.worked(started.elapsed());
                    if let Some(answer) = answer.take() {
                        let _ = answer.send(result);
                    }
                })
            })
        });
        if let (Err(e), Some(answer)) = (read, answer) {
            let _ = answer.send(Err(e.into()));
        }
    }
}

/// The bound on reads in flight for requests, shared by every handle
/// that holds it: the reader pool's mailbox is not bounded itself.
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

/// The way to the readers: each read is answered within `timeout` or
/// fails with `Unavailable`; with a [`ReadGate`], a read past its bound
/// fails at once with `Overloaded`.
#[derive(Clone)]
pub struct Reader {
    addr: Addr<StoreReader>,
    timeout: Duration,
    gate: Option<ReadGate>,
}

impl Reader {
    pub fn new(addr: Addr<StoreReader>, timeout: Duration) -> Self {
        Reader {
            addr,
            timeout,
            gate: None,
        }
    }

    /// This way to the readers, its reads held to `gate`.
    pub fn gated(&self, gate: ReadGate) -> Reader {
        Reader {
            gate: Some(gate),
            ..self.clone()
        }
    }

    pub async fn read<J: Job>(&self, job: J) -> Result<J::Output, ServiceError> {
        let _permit = self.gate.as_ref().map(ReadGate::enter).transpose()?;
        self.send(self.timeout, job).await
    }

    /// [`Reader::read`] held to no gate: for operators' reads (metrics,
    /// keys, the plan of an erasure), which must answer under load.
    pub async fn read_ungated<J: Job>(&self, job: J) -> Result<J::Output, ServiceError> {
        self.send(self.timeout, job).await
    }

    /// [`Reader::read`] with a deadline of its own, and held to no gate:
    /// for the readiness check, which is about health, not load.
    pub async fn read_within<J: Job>(
        &self,
        timeout: Duration,
        job: J,
    ) -> Result<J::Output, ServiceError> {
        self.send(timeout, job).await
    }

    async fn send<J: Job>(&self, timeout: Duration, job: J) -> Result<J::Output, ServiceError> {
        let (answer, answered) = oneshot::channel();
        // Dropped when this future ends or is dropped (its client went
        // away): the read then stops where it is.
        let (budget, _stop) = Budget::until(Instant::now() + timeout, budget::waiter());
        // Sent whatever the mailbox holds (the deadline bounds the wait);
        // a closed mailbox drops the message, and with it `answer`.
        self.addr.do_send(Read {
            work: Box::new(job),
            answer,
            budget,
            handoff: Handoff::now(),
        });
        within(timeout, answered, "read", "the service is shutting down").await
    }
}

/// A storage actor's answer, or `Unavailable`: when the actor dropped the
/// job unanswered (`stopped` says why), or when `timeout` passed first.
async fn within<T>(
    timeout: Duration,
    answer: oneshot::Receiver<Result<T, ServiceError>>,
    what: &str,
    stopped: &str,
) -> Result<T, ServiceError> {
    match actix_web::rt::time::timeout(timeout, answer).await {
        Ok(Ok(result)) => result,
        Ok(Err(_)) => Err(ServiceError::Unavailable(stopped.to_string())),
        Err(_) => Err(ServiceError::Unavailable(format!(
            "the {what} did not complete within {} ms; retry shortly",
            timeout.as_millis()
        ))),
    }
}

/// A unit of work for the writer: runs inside the shared transaction, and
/// is answered once that transaction's fate is known.
trait WriteJob: Send {
    /// The request it works for, and when it was queued.
    fn handoff(&self) -> &Handoff;
    fn handoff_mut(&mut self) -> &mut Handoff;
    /// What it does, as the log and traces name it.
    fn name(&self) -> &'static str;
    /// Its caller stopped waiting: the job is answered without being run.
    fn expired(&self, now: Instant) -> bool;
    /// The new record the job stores, before it runs when that is all it
    /// does, or once its work made it: the writer stores it with the others
    /// of its transaction, in one statement where the backend can, and
    /// tells the job with [`WriteJob::stored`].
    fn record(&self) -> Option<&MemoryRecord> {
        None
    }
    /// Its record was stored, or why not.
    fn stored(&mut self, _result: Result<(), ServiceError>) {}
    /// Whether running it may look up `waiting`, a record still to be
    /// stored with the others of the transaction: then they are stored
    /// first. Work of any kind may look up a thread's current state, and
    /// nothing else finds a new record, whose id is known to no one until
    /// the transaction commits.
    fn may_read(&self, waiting: &MemoryRecord) -> bool {
        waiting.payload.thread().is_some()
    }
    /// Whether its record is all it writes: when storing the record
    /// fails, the job fails alone. Otherwise the transaction is undone,
    /// since the job's other changes are committed or undone with it.
    fn record_alone(&self) -> bool {
        true
    }
    /// Runs the work; false when it failed and its changes must be undone.
    fn run(&mut self, tx: &mut dyn Transaction) -> bool;
    /// Sends the answer: the work's result if the transaction committed.
    fn finish(self: Box<Self>, commit: Result<(), String>);
}

/// The answer to a write job: its work's result if it ran and the
/// transaction committed.
fn answer<T>(
    commit: Result<(), String>,
    result: Option<Result<T, ServiceError>>,
) -> Result<T, ServiceError> {
    match (commit, result) {
        (_, Some(Err(e))) => Err(e),
        (Ok(()), Some(ok)) => ok,
        // Why is in the log ("group commit failed"); it may name driver
        // internals, which are no client's business.
        (Err(_), _) => Err(ServiceError::Unavailable(
            "the write was not committed: the database is unavailable; retry shortly".to_string(),
        )),
        (Ok(()), None) => Err(ServiceError::Unavailable(
            "the write waited too long in the queue and was not applied; retry shortly".to_string(),
        )),
    }
}

struct PendingWrite<T> {
    name: &'static str,
    work: Option<Work<T>>,
    handoff: Handoff,
    deadline: Instant,
    result: Option<Result<T, ServiceError>>,
    reply: oneshot::Sender<Result<T, ServiceError>>,
}

impl<T: Send> WriteJob for PendingWrite<T> {
    fn handoff(&self) -> &Handoff {
        &self.handoff
    }

    fn handoff_mut(&mut self) -> &mut Handoff {
        &mut self.handoff
    }

    fn name(&self) -> &'static str {
        self.name
    }

    fn expired(&self, now: Instant) -> bool {
        now >= self.deadline
    }

    fn run(&mut self, tx: &mut dyn Transaction) -> bool {
        let work = self.work.take().expect("a write job runs once");
        let result = run_guarded(work, tx);
        let ok = result.is_ok();
        self.result = Some(result);
        ok
    }

    fn finish(self: Box<Self>, commit: Result<(), String>) {
        // The caller may have gone away; its write stands regardless.
        let _ = self.reply.send(answer(commit, self.result));
    }
}

/// A new record to store, with the others of its transaction: given, or
/// made by work that runs first (and may change other rows).
struct PendingInsert {
    name: &'static str,
    work: Option<Work<MemoryRecord>>,
    /// The thread whose states the work looks up.
    thread: Option<String>,
    record: Option<MemoryRecord>,
    handoff: Handoff,
    deadline: Instant,
    result: Option<Result<(), ServiceError>>,
    reply: oneshot::Sender<Result<MemoryRecord, ServiceError>>,
}

impl WriteJob for PendingInsert {
    fn handoff(&self) -> &Handoff {
        &self.handoff
    }

    fn handoff_mut(&mut self) -> &mut Handoff {
        &mut self.handoff
    }

    fn name(&self) -> &'static str {
        self.name
    }

    fn expired(&self, now: Instant) -> bool {
        now >= self.deadline
    }

    fn record(&self) -> Option<&MemoryRecord> {
        self.record.as_ref()
    }

    fn stored(&mut self, result: Result<(), ServiceError>) {
        self.result = Some(result);
    }

    fn may_read(&self, waiting: &MemoryRecord) -> bool {
        self.thread.is_some() && self.thread.as_deref() == waiting.payload.thread()
    }

    fn record_alone(&self) -> bool {
        self.thread.is_none()
    }

    fn run(&mut self, tx: &mut dyn Transaction) -> bool {
        let Some(work) = self.work.take() else {
            return true;
        };
        match run_guarded(work, tx) {
            Ok(record) => {
                self.record = Some(record);
                true
            }
            Err(e) => {
                self.result = Some(Err(e));
                false
            }
        }
    }

    fn finish(self: Box<Self>, commit: Result<(), String>) {
        let PendingInsert {
            record,
            result,
            reply,
            ..
        } = *self;
        let result =
            result.map(|stored| {
                stored.and(record.ok_or_else(|| {
                    ServiceError::Internal("an insert job lost its record".to_string())
                }))
            });
        let _ = reply.send(answer(commit, result));
    }
}

enum WriterMessage {
    Job(Box<dyn WriteJob>),
    /// Scrub the database once the transaction in hand commits.
    Scrub(oneshot::Sender<Result<(), ServiceError>>),
    Shutdown,
}

/// Handle to the writers. Cloning shares the same queues.
///
/// The first writer takes every write in order. A backend that lets
/// several connections write at once (PostgreSQL) may have more: they take
/// only writes that add new rows and read nothing they depend on staying
/// as read ([`Job::adds_only`]), so whatever they run beside
/// cannot change what they do.
#[derive(Clone)]
pub struct StorageWriter {
    lanes: Arc<[Lane]>,
    threads: Arc<Mutex<Vec<JoinHandle<()>>>>,
    capacity: usize,
    timeout: Duration,
}

/// One writer's queue.
struct Lane {
    queue: SyncSender<WriterMessage>,
    counts: Arc<LaneCounts>,
}

#[derive(Default)]
struct LaneCounts {
    /// Writes in the queue.
    queued: AtomicUsize,
    /// Writes in the queue or in the transaction being written.
    unanswered: AtomicUsize,
    /// Time spent in transactions and scrubs, in microseconds.
    busy_us: AtomicU64,
    /// Transactions committed or rolled back.
    transactions: AtomicU64,
}

/// How the writer works: its queue, its transactions, its deadline.
#[derive(Debug, Clone, Copy)]
pub struct WriterOptions {
    /// Writes that may wait for the writers; past that, `Overloaded`.
    pub capacity: usize,
    /// Most writes committed in one transaction.
    pub max_per_transaction: usize,
    /// How long a caller waits for its write to commit.
    pub timeout: Duration,
}

impl StorageWriter {
    /// Starts the writer thread on its own connection.
    pub fn start(conn: Box<dyn WriteConnection>, options: WriterOptions) -> StorageWriter {
        StorageWriter::start_many(conn, Vec::new(), options)
    }

    /// Starts a writer thread on `first`, which takes every write in order,
    /// and one on each of `more`, which take only writes of new rows.
    pub fn start_many(
        first: Box<dyn WriteConnection>,
        more: Vec<Box<dyn WriteConnection>>,
        options: WriterOptions,
    ) -> StorageWriter {
        let max = options.max_per_transaction.max(1);
        let mut lanes = Vec::new();
        let mut threads = Vec::new();
        for (n, conn) in std::iter::once(first).chain(more).enumerate() {
            let (queue, inbox) = mpsc::sync_channel(options.capacity);
            let counts = Arc::new(LaneCounts::default());
            let thread_counts = counts.clone();
            let name = match n {
                0 => "engram-writer".to_string(),
                n => format!("engram-writer-{n}"),
            };
            threads.push(
                std::thread::Builder::new()
                    .name(name)
                    .spawn(move || write_loop(conn, inbox, thread_counts, max))
                    .expect("spawn a writer thread"),
            );
            lanes.push(Lane { queue, counts });
        }
        StorageWriter {
            lanes: lanes.into(),
            threads: Arc::new(Mutex::new(threads)),
            capacity: options.capacity,
            timeout: options.timeout,
        }
    }

    /// How many writer threads there are.
    pub fn writers(&self) -> usize {
        self.lanes.len()
    }

    /// Writes waiting in the queues now.
    pub fn queue_depth(&self) -> usize {
        self.lanes
            .iter()
            .map(|lane| lane.counts.queued.load(Ordering::Relaxed))
            .sum()
    }

    /// The queues and how long the writers have been busy: the writer time
    /// an operation costs is the difference across it on a quiet service.
    pub fn stats(&self) -> WriterStats {
        let sum = |count: fn(&LaneCounts) -> &AtomicU64| -> u64 {
            self.lanes
                .iter()
                .map(|lane| count(&lane.counts).load(Ordering::Relaxed))
                .sum()
        };
        WriterStats {
            queue_depth: self.queue_depth(),
            busy_seconds: sum(|c| &c.busy_us) as f64 / 1e6,
            transactions: sum(|c| &c.transactions),
        }
    }

    /// Queues `job` and waits for its commit. `job` runs on the writer
    /// thread inside a transaction shared with other queued writes,
    /// isolated from them by a savepoint: if it fails, only its own changes
    /// are undone and its error is returned.
    ///
    /// A caller waits at most the writer's timeout and is then answered
    /// `Unavailable`. A write still queued at that moment is dropped
    /// unapplied; one already running when it passes may still commit.
    pub async fn write<J: Job>(&self, job: J) -> Result<J::Output, ServiceError> {
        // Work that only adds new rows goes to whichever writer has the
        // fewest writes not yet answered.
        let lane = match job.adds_only() {
            true => self.least_busy(),
            false => &self.lanes[0],
        };
        self.write_on(lane, job).await
    }

    /// Writes one ingest item the way [`Ingest::route`] finds for it; answers
    /// the record as stored.
    pub async fn ingest(&self, job: Ingest) -> Result<MemoryRecord, ServiceError> {
        match job.route()? {
            Route::Insert(record) => self.insert(*record).await,
            Route::State(thread, job) => self.write_then_insert(thread, job).await,
            Route::Write(job) => self.write(job).await,
        }
    }

    /// Stores a new record that needs nothing read first, with the other
    /// new records of its transaction (on the least busy writer, as
    /// [`Job::adds_only`] work goes); answers it as stored.
    async fn insert(&self, record: MemoryRecord) -> Result<MemoryRecord, ServiceError> {
        let (reply, answer) = oneshot::channel();
        let job = Box::new(PendingInsert {
            name: "insert",
            work: None,
            thread: None,
            record: Some(record),
            handoff: Handoff::now(),
            deadline: Instant::now() + self.timeout,
            result: None,
            reply,
        });
        self.submit(self.least_busy(), job, answer).await
    }

    /// Runs `job` on the first writer, as [`StorageWriter::write`] does,
    /// then stores the new record it answers with the other new records of
    /// its transaction. `job` looks up working states of `thread` only;
    /// later work that may look up the record finds it stored. When
    /// storing the record fails, the whole transaction is undone with
    /// `job`'s other changes (and every write in it answered
    /// `Unavailable`): `job` is to answer a record that can be stored.
    async fn write_then_insert<J: Job<Output = MemoryRecord>>(
        &self,
        thread: String,
        job: J,
    ) -> Result<MemoryRecord, ServiceError> {
        let (reply, answer) = oneshot::channel();
        let job = Box::new(PendingInsert {
            name: J::NAME,
            work: Some(Box::new(job)),
            thread: Some(thread),
            record: None,
            handoff: Handoff::now(),
            deadline: Instant::now() + self.timeout,
            result: None,
            reply,
        });
        self.submit(&self.lanes[0], job, answer).await
    }

    fn least_busy(&self) -> &Lane {
        self.lanes
            .iter()
            .min_by_key(|lane| lane.counts.unanswered.load(Ordering::Relaxed))
            .expect("a writer has at least one lane")
    }

    async fn write_on<J: Job>(&self, lane: &Lane, job: J) -> Result<J::Output, ServiceError> {
        let (reply, answer) = oneshot::channel();
        let job = Box::new(PendingWrite {
            name: J::NAME,
            work: Some(Box::new(job)),
            handoff: Handoff::now(),
            deadline: Instant::now() + self.timeout,
            result: None,
            reply,
        });
        self.submit(lane, job, answer).await
    }

    /// Queues `job` on `lane` and waits for its `answer`.
    async fn submit<T>(
        &self,
        lane: &Lane,
        job: Box<dyn WriteJob>,
        answer: oneshot::Receiver<Result<T, ServiceError>>,
    ) -> Result<T, ServiceError> {
        if self.queue_depth() >= self.capacity {
            return Err(overloaded());
        }
        lane.counts.add(1);
        match lane.queue.try_send(WriterMessage::Job(job)) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                lane.counts.withdraw(1);
                return Err(overloaded());
            }
            Err(TrySendError::Disconnected(_)) => {
                lane.counts.withdraw(1);
                return Err(ServiceError::Unavailable(
                    "the writer has stopped".to_string(),
                ));
            }
        }
        within(self.timeout, answer, "write", "the writer has stopped").await
    }

    /// Scrubs the first writer's database (`WriteConnection::scrub`) once
    /// the writes queued before this call commit, so what they deleted
    /// leaves no copy aside; answers once done, within the writer's
    /// timeout.
    pub async fn scrub(&self) -> Result<(), ServiceError> {
        let (reply, done) = oneshot::channel();
        let lane = &self.lanes[0];
        match lane.queue.try_send(WriterMessage::Scrub(reply)) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => return Err(overloaded()),
            Err(TrySendError::Disconnected(_)) => {
                return Err(ServiceError::Unavailable(
                    "the writer has stopped".to_string(),
                ))
            }
        }
        within(self.timeout, done, "scrub", "the writer has stopped").await
    }

    /// Lets queued writes finish, flushes the backend, and stops the
    /// threads. Blocks; call it off the async executor or after the server
    /// stopped.
    pub fn shutdown(&self) {
        let threads = std::mem::take(&mut *self.threads.lock().expect("writer lock"));
        for (lane, thread) in self.lanes.iter().zip(threads) {
            // A blocking send waits behind queued writes, which is the point.
            if lane.queue.send(WriterMessage::Shutdown).is_ok() {
                let _ = thread.join();
            }
        }
    }
}

fn overloaded() -> ServiceError {
    ServiceError::Overloaded("write queue is full; retry shortly".to_string())
}

impl LaneCounts {
    fn add(&self, writes: usize) {
        self.queued.fetch_add(writes, Ordering::Relaxed);
        self.unanswered.fetch_add(writes, Ordering::Relaxed);
    }

    /// Writes that could not be queued.
    fn withdraw(&self, writes: usize) {
        self.taken(writes);
        self.answered(writes);
    }

    fn taken(&self, writes: usize) {
        self.queued.fetch_sub(writes, Ordering::Relaxed);
    }

    fn answered(&self, writes: usize) {
        self.unanswered.fetch_sub(writes, Ordering::Relaxed);
    }

    fn worked(&self, took: Duration) {
        let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.busy_us.fetch_add(us, Ordering::Relaxed);
    }
}

/// A writer idle this long does its connection's upkeep
/// ([`WriteConnection::upkeep`]).
const UPKEEP_AFTER: Duration = Duration::from_millis(250);

fn write_loop(
    mut conn: Box<dyn WriteConnection>,
    inbox: Receiver<WriterMessage>,
    counts: Arc<LaneCounts>,
    max_per_transaction: usize,
) {
    let mut stopping = false;
    let scrub = |conn: &mut Box<dyn WriteConnection>, reply: oneshot::Sender<_>| {
        let started = Instant::now();
        let scrubbed = conn.scrub();
        counts.worked(started.elapsed());
        let scrubbed = scrubbed.map_err(|e| {
            tracing::error!(error = %e, "scrubbing after an erasure failed");
            ServiceError::Unavailable(
                "the erasure is committed, but its bytes may still be on disk: \
                 the database could not be compacted; erase again to retry"
                    .to_string(),
            )
        });
        let _ = reply.send(scrubbed);
    };
    while !stopping {
        let first = match inbox.recv_timeout(UPKEEP_AFTER) {
            Err(RecvTimeoutError::Timeout) => {
                let started = Instant::now();
                match conn.upkeep() {
                    Ok(true) => counts.worked(started.elapsed()),
                    Ok(false) => {}
                    Err(e) => tracing::warn!(error = %e, "the writer's upkeep failed"),
                }
                continue;
            }
            Ok(WriterMessage::Job(job)) => job,
            Ok(WriterMessage::Scrub(reply)) => {
                scrub(&mut conn, reply);
                continue;
            }
            Ok(WriterMessage::Shutdown) | Err(RecvTimeoutError::Disconnected) => break,
        };
        let mut batch = vec![first];
        let mut then_scrub = None;
        while batch.len() < max_per_transaction {
            match inbox.try_recv() {
                Ok(WriterMessage::Job(job)) => batch.push(job),
                Ok(WriterMessage::Scrub(reply)) => {
                    then_scrub = Some(reply);
                    break;
                }
                Ok(WriterMessage::Shutdown) => {
                    stopping = true;
                    break;
                }
                Err(TryRecvError::Empty) | Err(TryRecvError::Disconnected) => break,
            }
        }
        counts.taken(batch.len());
        let started = Instant::now();
        for job in &mut batch {
            let name = job.name();
            job.handoff_mut().started("Writer", name, started);
        }
        let commit = {
            let _commit = tracing::debug_span!("group_commit", writes = batch.len()).entered();
            commit_batch(conn.as_mut(), &mut batch)
        };
        if let Err(e) = &commit {
            tracing::error!(error = %e, writes = batch.len(), "group commit failed");
        }
        // Each write took the whole transaction it was committed in.
        let took = started.elapsed();
        counts.worked(took);
        counts.transactions.fetch_add(1, Ordering::Relaxed);
        let writes = batch.len();
        for job in batch {
            job.handoff().worked(took);
            job.finish(commit.clone());
        }
        counts.answered(writes);
        if let Some(reply) = then_scrub {
            scrub(&mut conn, reply);
        }
    }
    if let Err(e) = conn.close() {
        tracing::warn!(error = %e, "closing the writer connection failed");
    }
    tracing::info!("writer stopped");
}

fn commit_batch(
    conn: &mut dyn WriteConnection,
    batch: &mut [Box<dyn WriteJob>],
) -> Result<(), String> {
    conn.begin().map_err(|e| e.to_string())?;
    let now = Instant::now();
    // New records are stored together after the other jobs, or before the
    // first job that may look one of them up.
    let mut waiting = Vec::new();
    let mut step = Ok(());
    for i in 0..batch.len() {
        if batch[i].expired(now) {
            continue;
        }
        if batch[i].record().is_some() {
            waiting.push(i);
            continue;
        }
        let job = &batch[i];
        if waiting
            .iter()
            .any(|&w| batch[w].record().is_some_and(|r| job.may_read(r)))
        {
            step = insert_together(conn, batch, &waiting).map_err(|e| e.to_string());
            waiting.clear();
            if step.is_err() {
                break;
            }
        }
        let job = &mut batch[i];
        // What the job logs is its request's.
        let _request = job.handoff().span().clone().entered();
        step = conn
            .savepoint()
            .and_then(|()| {
                if job.run(conn.transaction()) {
                    conn.release()
                } else {
                    conn.rollback_to_savepoint()
                }
            })
            .map_err(|e| e.to_string());
        if step.is_err() {
            break;
        }
        if job.record().is_some() {
            waiting.push(i);
        }
    }
    if let Err(e) =
        step.and_then(|()| insert_together(conn, batch, &waiting).map_err(|e| e.to_string()))
    {
        conn.rollback();
        return Err(e);
    }
    conn.commit().map_err(|e| {
        conn.rollback();
        e.to_string()
    })
}

/// Stores the records of the insert jobs `waiting` (indexes into `batch`),
/// all in one call; when that fails, one at a time, each in a savepoint,
/// so that a record's failure is its own job's. `Err` only when the
/// transaction itself failed.
fn insert_together(
    conn: &mut dyn WriteConnection,
    batch: &mut [Box<dyn WriteJob>],
    waiting: &[usize],
) -> Result<(), StoreError> {
    if waiting.is_empty() {
        return Ok(());
    }
    let records: Vec<&MemoryRecord> = waiting.iter().filter_map(|&i| batch[i].record()).collect();
    conn.savepoint()?;
    let together = conn.transaction().insert_records(&records);
    drop(records);
    let results = match together {
        Ok(()) => {
            conn.release()?;
            waiting.iter().map(|_| Ok(())).collect()
        }
        Err(_) => {
            conn.rollback_to_savepoint()?;
            let mut results = Vec::with_capacity(waiting.len());
            for &i in waiting.iter() {
                let Some(record) = batch[i].record() else {
                    results.push(Ok(()));
                    continue;
                };
                conn.savepoint()?;
                let result = conn.transaction().insert_record(record);
                match result {
                    Ok(()) => conn.release()?,
                    Err(_) => conn.rollback_to_savepoint()?,
                }
                results.push(result);
            }
            results
        }
    };
    for (&i, result) in waiting.iter().zip(results) {
        match result {
            Err(e) if !batch[i].record_alone() => return Err(e),
            result => batch[i].stored(result.map_err(ServiceError::from)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::new_record::NewRecord;
    use crate::domain::policy::Policy;
    use crate::domain::record::MemoryRecord;
    use crate::store::{self, ConnectionOptions};

    /// Work given as a closure: these tests make jobs of every shape.
    struct Do<F, T>(F, std::marker::PhantomData<fn() -> T>);

    impl<F, T> Do<F, T>
    where
        F: FnOnce(&mut dyn Transaction) -> Result<T, ServiceError> + Send + 'static,
        T: Send + 'static,
    {
        fn new(work: F) -> Self {
            Do(work, std::marker::PhantomData)
        }
    }

    impl<F, T> crate::service::job::Job for Do<F, T>
    where
        F: FnOnce(&mut dyn Transaction) -> Result<T, ServiceError> + Send + 'static,
        T: Send + 'static,
    {
        type Output = T;
        const NAME: &'static str = "test";

        fn run(self, tx: &mut dyn Transaction) -> Result<T, ServiceError> {
            (self.0)(tx)
        }
    }

    /// A job that declares it only adds new rows.
    struct AddsOnly<J>(J);

    impl<J: crate::service::job::Job> crate::service::job::Job for AddsOnly<J> {
        type Output = J::Output;
        const NAME: &'static str = J::NAME;

        fn adds_only(&self) -> bool {
            true
        }

        fn run(self, tx: &mut dyn Transaction) -> Result<J::Output, ServiceError> {
            self.0.run(tx)
        }
    }

    fn options() -> ConnectionOptions {
        ConnectionOptions {
            busy_timeout: Duration::from_secs(5),
            cache_size_kib: 1024,
            mmap_size_mib: 0,
        }
    }

    fn writer_on(
        dir: &tempfile::TempDir,
        capacity: usize,
        timeout: Duration,
    ) -> (StorageWriter, ReadPool) {
        let opened = store::sqlite::open(
            &dir.path().join("w.db"),
            1,
            options(),
            options(),
            None,
            None,
        )
        .unwrap();
        let writer = StorageWriter::start(
            opened.writer,
            WriterOptions {
                capacity,
                max_per_transaction: 64,
                timeout,
            },
        );
        (writer, opened.readers)
    }

    /// A record as a client sends it whole: `id` and its `payload`.
    fn made(id: &str, payload: serde_json::Value) -> MemoryRecord {
        let new: NewRecord = serde_json::from_value(serde_json::json!({
            "id": id, "type": payload["kind"], "sensitivity": "low", "payload": payload
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

    fn record(id: &str) -> MemoryRecord {
        made(
            id,
            serde_json::json!({"kind": "semantic", "subject": id, "predicate": "is"}),
        )
    }

    fn stored(readers: &ReadPool, id: &str) -> bool {
        readers
            .for_thread()
            .read(|tx| tx.record_visibility(id))
            .unwrap()
            .unwrap()
            .is_some()
    }

    #[actix_web::test]
    async fn a_failed_write_is_undone_without_touching_the_others_in_its_transaction() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, readers) = writer_on(&dir, 16, Duration::from_secs(30));
        let insert = |id: &'static str, fail: bool| {
            let writer = writer.clone();
            async move {
                writer
                    .write(Do::new(move |tx| {
                        tx.insert_record(&record(id))?;
                        if fail {
                            return Err(ServiceError::Conflict("refused".into()));
                        }
                        Ok(())
                    }))
                    .await
            }
        };
        let (a, b, c) =
            futures_util::future::join3(insert("a", false), insert("b", true), insert("c", false))
                .await;
        assert!(a.is_ok() && c.is_ok());
        assert!(matches!(b, Err(ServiceError::Conflict(_))));
        writer.shutdown();
        assert!(stored(&readers, "a") && stored(&readers, "c"));
        assert!(!stored(&readers, "b"));
    }

    #[actix_web::test]
    async fn new_records_queued_together_are_stored_together_and_a_taken_id_fails_alone() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, readers) = writer_on(&dir, 16, Duration::from_secs(30));
        writer.insert(record("taken")).await.unwrap();
        let (release, held) = hold(&writer).await;
        let inserts = ["a", "taken", "b"].map(|id| {
            let writer = writer.clone();
            actix_web::rt::spawn(async move { writer.insert(record(id)).await })
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        while writer.queue_depth() < 3 {
            assert!(Instant::now() < deadline, "the inserts were never queued");
            actix_web::rt::time::sleep(Duration::from_millis(5)).await;
        }
        release.send(()).unwrap();
        held.await.unwrap();
        let [a, taken, b] = inserts;
        assert_eq!(a.await.unwrap().unwrap().id, "a");
        assert!(matches!(
            taken.await.unwrap(),
            Err(ServiceError::Conflict(_))
        ));
        assert_eq!(b.await.unwrap().unwrap().id, "b");
        writer.shutdown();
        assert!(stored(&readers, "a") && stored(&readers, "b"));
    }

    fn state(id: &str, thread: &str) -> MemoryRecord {
        made(
            id,
            serde_json::json!({"kind": "working", "thread_id": thread, "state": "executing"}),
        )
    }

    type Job<T> = std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, ServiceError>>>>;

    /// Queues `jobs` in order, each behind the one before.
    async fn queue_in_order<T: 'static>(
        writer: &StorageWriter,
        jobs: Vec<Job<T>>,
    ) -> Vec<actix_web::rt::task::JoinHandle<Result<T, ServiceError>>> {
        let mut handles = Vec::new();
        for job in jobs {
            let before = writer.queue_depth();
            handles.push(actix_web::rt::spawn(job));
            let deadline = Instant::now() + Duration::from_secs(10);
            while writer.queue_depth() == before {
                assert!(Instant::now() < deadline, "a job was never queued");
                actix_web::rt::time::sleep(Duration::from_millis(2)).await;
            }
        }
        handles
    }

    #[actix_web::test]
    async fn a_state_written_after_its_work_is_found_by_later_work_on_its_thread() {
        use crate::domain::record::{AuditAction, Sensitivity};
        let dir = tempfile::tempdir().unwrap();
        let (writer, readers) = writer_on(&dir, 16, Duration::from_secs(30));
        let (release, held) = hold(&writer).await;
        let then_insert = |id: &'static str, thread: &'static str| {
            let writer = writer.clone();
            Box::pin(async move {
                writer
                    .write_then_insert(thread.to_string(), Do::new(move |_| Ok(state(id, thread))))
                    .await
                    .map(|r| vec![r.id])
            }) as Job<Vec<String>>
        };
        let looked_up = {
            let writer = writer.clone();
            Box::pin(async move {
                writer
                    .write(Do::new(|tx| {
                        let by = crate::domain::record::Attribution::new("t", "replaced");
                        let now = chrono::Utc::now();
                        Ok(tx.retract_current_states(
                            "t",
                            None,
                            Sensitivity::Hyper,
                            &by.entry(AuditAction::Revise, now),
                            now,
                        )?)
                    }))
                    .await
            }) as Job<Vec<String>>
        };
        let jobs = vec![then_insert("s1", "t"), then_insert("s2", "u"), looked_up];
        let handles = queue_in_order(&writer, jobs).await;
        release.send(()).unwrap();
        held.await.unwrap();
        let mut answers = Vec::new();
        for handle in handles {
            answers.push(handle.await.unwrap().unwrap());
        }
        assert_eq!(
            answers,
            [
                vec!["s1".to_string()],
                vec!["s2".to_string()],
                vec!["s1".to_string()]
            ]
        );
        writer.shutdown();
        assert!(stored(&readers, "s1") && stored(&readers, "s2"));
    }

    #[actix_web::test]
    async fn a_state_whose_record_cannot_be_stored_undoes_its_transaction() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, readers) = writer_on(&dir, 16, Duration::from_secs(30));
        writer.insert(record("taken")).await.unwrap();
        let (release, held) = hold(&writer).await;
        let prepared = {
            let writer = writer.clone();
            Box::pin(async move {
                writer
                    .write_then_insert(
                        "t".to_string(),
                        Do::new(|tx| {
                            tx.insert_record(&record("changed"))?;
                            Ok(state("taken", "t"))
                        }),
                    )
                    .await
            }) as Job<MemoryRecord>
        };
        let plain = {
            let writer = writer.clone();
            Box::pin(async move { writer.insert(record("a")).await }) as Job<MemoryRecord>
        };
        let handles = queue_in_order(&writer, vec![prepared, plain]).await;
        release.send(()).unwrap();
        held.await.unwrap();
        for handle in handles {
            assert!(matches!(
                handle.await.unwrap(),
                Err(ServiceError::Unavailable(_))
            ));
        }
        writer.shutdown();
        assert!(!stored(&readers, "changed") && !stored(&readers, "a"));
    }

    /// Waits until a write is queued.
    async fn until_queued(writer: &StorageWriter) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while writer.queue_depth() == 0 {
            assert!(Instant::now() < deadline, "no write was ever queued");
            actix_web::rt::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Holds the writer in a job until `release` is sent to.
    async fn hold(
        writer: &StorageWriter,
    ) -> (mpsc::Sender<()>, actix_web::rt::task::JoinHandle<()>) {
        let (started_tx, started) = mpsc::channel::<()>();
        let (release, wait) = mpsc::channel::<()>();
        let (started_tx, wait) = (Mutex::new(started_tx), Mutex::new(wait));
        let busy = writer.clone();
        let task = actix_web::rt::spawn(async move {
            let _ = busy
                .write(Do::new(move |_| {
                    started_tx.lock().unwrap().send(()).unwrap();
                    let _ = wait.lock().unwrap().recv();
                    Ok(())
                }))
                .await;
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        while started.try_recv().is_err() {
            assert!(
                Instant::now() < deadline,
                "the writer never started the job"
            );
            actix_web::rt::time::sleep(Duration::from_millis(5)).await;
        }
        (release, task)
    }

    #[actix_web::test]
    async fn writes_of_new_rows_pass_a_busy_first_writer_and_the_others_wait_for_it() {
        let dir = tempfile::tempdir().unwrap();
        let open = |name: &str| {
            store::sqlite::open(&dir.path().join(name), 1, options(), options(), None, None)
                .unwrap()
        };
        let (first, second) = (open("first.db"), open("second.db"));
        let writer = StorageWriter::start_many(
            first.writer,
            vec![second.writer],
            WriterOptions {
                capacity: 16,
                max_per_transaction: 64,
                timeout: Duration::from_secs(30),
            },
        );
        let (release, held) = hold(&writer).await;
        writer
            .write(AddsOnly(Do::new(|tx| {
                tx.insert_record(&record("new"))?;
                Ok(())
            })))
            .await
            .unwrap();
        assert!(stored(&second.readers, "new"));
        let in_order = writer.clone();
        let ordered = actix_web::rt::spawn(async move {
            in_order
                .write(Do::new(|tx| {
                    tx.insert_record(&record("ordered"))?;
                    Ok(())
                }))
                .await
        });
        until_queued(&writer).await;
        assert!(!ordered.is_finished() && !stored(&first.readers, "ordered"));
        release.send(()).unwrap();
        held.await.unwrap();
        ordered.await.unwrap().unwrap();
        assert!(stored(&first.readers, "ordered"));
        writer.shutdown();
    }

    #[actix_web::test]
    async fn a_full_queue_answers_overloaded_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, _) = writer_on(&dir, 1, Duration::from_secs(30));
        let (release, first) = hold(&writer).await;
        let queued = writer.clone();
        let second = actix_web::rt::spawn(async move { queued.write(Do::new(|_| Ok(()))).await });
        until_queued(&writer).await;
        let third = writer.write(Do::new(|_| Ok(()))).await;
        assert!(
            matches!(third, Err(ServiceError::Overloaded(_))),
            "{third:?}"
        );
        release.send(()).unwrap();
        first.await.unwrap();
        assert!(second.await.unwrap().is_ok());
        writer.shutdown();
    }

    #[actix_web::test]
    async fn a_write_past_its_deadline_is_answered_and_never_applied() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, readers) = writer_on(&dir, 16, Duration::from_millis(200));
        let (release, first) = hold(&writer).await;
        let late = writer
            .write(Do::new(|tx| {
                tx.insert_record(&record("late"))?;
                Ok(())
            }))
            .await;
        assert!(
            matches!(&late, Err(ServiceError::Unavailable(m)) if m.contains("within 200 ms")),
            "{late:?}"
        );
        release.send(()).unwrap();
        first.await.unwrap();
        // The writer is free again and the timed-out insert was dropped.
        writer.write(Do::new(|_| Ok(()))).await.unwrap();
        assert!(!stored(&readers, "late"));
        writer.shutdown();
    }

    #[actix_web::test]
    async fn a_panicking_job_is_an_internal_error_and_the_writer_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, readers) = writer_on(&dir, 16, Duration::from_secs(30));
        let panicked = writer
            .write(Do::new(|tx| -> Result<(), ServiceError> {
                tx.insert_record(&record("half"))?;
                panic!("boom")
            }))
            .await;
        assert!(
            matches!(panicked, Err(ServiceError::Internal(_))),
            "{panicked:?}"
        );
        writer
            .write(Do::new(|tx| {
                tx.insert_record(&record("after"))?;
                Ok(())
            }))
            .await
            .unwrap();
        assert!(!stored(&readers, "half"));
        assert!(stored(&readers, "after"));
        writer.shutdown();
    }
}
