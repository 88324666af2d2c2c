//! A store opened directly, without the service around it, on the backend
//! the tests run on (SQLite in a temporary directory; PostgreSQL, a fresh
//! database on the test cluster, when `ENGRAM_TEST_DATABASE_URL` is set):
//! what the contract suites (`store_contract`, `engine_contract`) write
//! their tests against, so that each test is written once and holds on
//! every backend.

use engram::domain::new_record::NewRecord;
use engram::domain::policy::Policy;
use engram::domain::record::{Attribution, MemoryRecord};
use engram::domain::time::{parse_rfc3339, Timestamp};
use engram::store::{ReadPool, StoreError, ThreadReads, Transaction, WriteConnection};
use serde_json::Value;
use tempfile::TempDir;

use crate::helpers::{postgres_admin_url, test_settings};

/// The moment the suites' records are made at and read at, unless a test
/// says otherwise. Not a whole second, so a backend that rounds times
/// shows it.
pub fn now() -> Timestamp {
    parse_rfc3339("2026-01-01T00:00:00.123456Z").unwrap()
}

/// `now` moved by `seconds`.
pub fn at(seconds: i64) -> Timestamp {
    now() + chrono::Duration::seconds(seconds)
}

/// A record from a `POST /v1/records` body, with id `id`, completed by the
/// default policy as of [`now`]: as the service would store it.
pub fn record(id: &str, body: Value) -> MemoryRecord {
    let new: NewRecord = serde_json::from_value(body).expect("a record body");
    new.into_record(
        &Policy::default(),
        &Attribution::new("test", "test"),
        now(),
        || id.to_string(),
    )
    .expect("a valid record")
}

/// Which backend the suites run on, for failure messages.
pub fn backend_name() -> &'static str {
    if postgres_admin_url().is_some() {
        "postgres"
    } else {
        "sqlite"
    }
}

/// An opened store: the writer's connection, and the reads of this thread.
pub struct Backend {
    pub writer: Box<dyn WriteConnection>,
    readers: ReadPool,
    reads: ThreadReads,
    dir: TempDir,
}

impl Backend {
    /// A fresh, empty database.
    pub fn open() -> Backend {
        Backend::open_with(None)
    }

    /// A fresh database whose vectors' dimensions are configured.
    pub fn open_with(dimensions: Option<usize>) -> Backend {
        let dir = tempfile::tempdir().expect("temp dir");
        Backend::open_in(dir, dimensions).expect("the database opens")
    }

    /// The same database opened again (as a restarted service would),
    /// with `dimensions` configured.
    pub fn reopen(self, dimensions: Option<usize>) -> Result<Backend, (StoreError, TempDir)> {
        let dir = self.close();
        match Backend::open_in_dir(dir.path(), dimensions) {
            Ok(opened) => Ok(Backend::with(opened, dir)),
            Err(e) => Err((e, dir)),
        }
    }

    /// Closes the database; answers the directory it lives in (SQLite's
    /// file, or the name of the PostgreSQL database).
    pub fn close(self) -> TempDir {
        let Backend {
            mut writer,
            readers,
            reads,
            dir,
        } = self;
        writer.close().expect("the writer closes");
        drop((writer, readers, reads));
        dir
    }

    /// The database in `dir` (made if there is none).
    pub fn open_in(dir: TempDir, dimensions: Option<usize>) -> Result<Backend, StoreError> {
        let opened = Backend::open_in_dir(dir.path(), dimensions)?;
        Ok(Backend::with(opened, dir))
    }

    fn open_in_dir(
        dir: &std::path::Path,
        dimensions: Option<usize>,
    ) -> Result<engram::store::Opened, StoreError> {
        let mut settings = test_settings(&dir.join("engram.db"));
        settings.storage.postgres_writers = 1;
        engram::store::open(&settings.storage, dimensions, None)
    }

    fn with(opened: engram::store::Opened, dir: TempDir) -> Backend {
        let reads = opened.readers.for_thread();
        Backend {
            writer: opened.writer,
            readers: opened.readers,
            reads,
            dir,
        }
    }

    /// Runs `work` as the writer runs a job, in a transaction of its own:
    /// in a savepoint, undone alone when it fails; then commits. Answers
    /// what the job answered.
    pub fn write<T>(
        &mut self,
        work: impl FnOnce(&mut dyn Transaction) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.writer.begin().expect("a transaction begins");
        let answer = self.job(work);
        self.writer.commit().expect("the transaction commits");
        answer
    }

    /// Runs `work` as one job in the transaction begun already: kept when
    /// it succeeds, undone when it fails.
    pub fn job<T>(
        &mut self,
        work: impl FnOnce(&mut dyn Transaction) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.writer.savepoint().expect("a savepoint");
        let answer = work(self.writer.transaction());
        match &answer {
            Ok(_) => self.writer.release().expect("the savepoint is released"),
            Err(_) => self
                .writer
                .rollback_to_savepoint()
                .expect("the job is undone"),
        }
        answer
    }

    /// [`Backend::write`] of work that must succeed.
    #[track_caller]
    pub fn written<T>(
        &mut self,
        work: impl FnOnce(&mut dyn Transaction) -> Result<T, StoreError>,
    ) -> T {
        let backend = backend_name();
        self.write(work)
            .unwrap_or_else(|e| panic!("the write failed on {backend}: {e}"))
    }

    /// Runs `work` in one read transaction of the read pool, as the
    /// service's reading threads do.
    #[track_caller]
    pub fn read<T>(&mut self, work: impl FnOnce(&mut dyn Transaction) -> T) -> T {
        self.reads.read(work).expect("a read transaction")
    }

    /// Stores records, as ingest does, in one transaction.
    #[track_caller]
    pub fn insert(&mut self, records: &[MemoryRecord]) {
        let all: Vec<&MemoryRecord> = records.iter().collect();
        self.written(|tx| tx.insert_records(&all));
    }
}
