//! The actors, and what each owns:
//!
//! - [`ingestion::Ingestor`] validates ingest requests and whole records
//!   into records (classification, policy, the record builder) and hands
//!   each to the writer as one service call; it owns the ingestion policy.
//! - [`retrieval::Retriever`] validates retrieval requests, bounds the reads
//!   in flight (the reader pool's mailbox is not bounded itself) and sends
//!   each read, selection included, to the readers; it owns the bound and
//!   the selection threshold.
//! - [`revision::Reviser`] validates the revision operations (supersede,
//!   fork, retract, merge, contest, reinforce, penalize) and runs each as
//!   one writer job, so it commits whole or not at all.
//! - [`keys::KeyKeeper`] makes, lists and revokes API keys for the admin
//!   routes, each as one writer job or read; it holds the pepper.
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
//! - [`storage::StoreReader`] is a `SyncArbiter` pool of threads, one read
//!   connection each; [`storage::StorageWriter`] is the writer thread (on
//!   PostgreSQL, threads): one connection fed by a bounded queue,
//!   committing every write waiting in the queue in one transaction
//!   (group commit).
//!
//! The three request actors run one instance per HTTP worker: each worker
//! of actix-web is an arbiter of its own (one per core by default), and the
//! worker's actors are started on it, so parsing, validation, record
//! building and serialisation of a request all run on the thread that took
//! it, in parallel across cores and never on the System arbiter. Blocking storage work runs only on
//! the storage threads. Every call into storage has a deadline, and the
//! memory operations themselves are the functions of `crate::service`.

pub mod consolidation;
pub mod decay;
pub mod embedder;
pub mod ingestion;
pub mod keys;
pub mod request;
pub mod retrieval;
pub mod revision;
pub mod scheduler;
pub mod storage;
