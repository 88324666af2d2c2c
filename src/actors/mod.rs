//! The actors, and what each owns. Each owns work over time; a request's
//! own work needs none: its handler checks it on the HTTP worker's thread
//! that took it and sends its job straight to the storage actors.
//!
//! - [`storage::StoreReader`] is a `SyncArbiter` pool of threads, one read
//!   connection each; [`storage::Reader`] is the way to it, with a
//!   deadline per read and, for requests, a bound on reads in flight
//!   ([`storage::ReadGate`]: the pool's mailbox is not bounded itself).
//!   [`storage::StorageWriter`] is the writer thread (on PostgreSQL,
//!   threads): one connection fed by a bounded queue, committing every
//!   write waiting in the queue in one transaction (group commit).
//! - [`erasure::erase`] runs an erasure over time: planned on a reader,
//!   erased a chunk per writer job, so ingests go on between them.
//! - [`decay::Decayer`] sweeps salience down and prunes what decayed away,
//!   a chunk per read and a chunk per writer job.
//! - [`consolidation::Consolidator`] distils episodes into facts, skills and
//!   plans, compresses old episodes and merges duplicate facts, a page per
//!   writer job; and keeps topics up after topics ingests and reads
//!   (duplicates merged, faded topics archived, read topics reinforced),
//!   one pass at a time, off the request path.
//! - [`embedder::Embedder`] (when `[embedding]` is configured) makes the
//!   vectors of records without one through an embeddings endpoint, in
//!   the background, a batch per read and per writer job.
//! - [`scheduler::Scheduler`] owns the cron schedule, the job settings, and
//!   which job is running; it sends the runs to the two actors above.
//!
//! Blocking storage work runs only on the storage threads. Every call into
//! storage has a deadline, and the memory operations themselves are the
//! functions of `crate::service`.

pub mod consolidation;
pub mod decay;
pub mod embedder;
pub mod erasure;
pub mod scheduler;
pub mod storage;
