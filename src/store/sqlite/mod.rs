//! The SQLite backend: the connection settings, the migrations, the writer
//! connection and the read pool here; each area's trait implemented for
//! `Connection` in the file of the area's name, its SQL in the methods,
//! all of them together a [`Transaction`].

pub mod backup;
mod checkpoint;
pub mod consolidation;
pub mod conversations;
pub(crate) mod counted;
pub mod erasure;
pub mod filters;
pub mod keys;
pub mod maintenance;
pub mod migrations;
pub mod ranking;
pub mod record_reads;
pub mod records;
pub mod search;
pub mod stats;
#[cfg(test)]
pub(crate) mod test_support;
pub mod topic_names;
pub mod topics;
pub mod vectors;

use std::path::Path;
use std::time::Duration;

use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::{Connection, ErrorCode};

use crate::store::error::StoreError;
use crate::store::transaction::{self, Opened, Readers, Reads, Transaction, WriteConnection};

type Pool = r2d2::Pool<SqliteConnectionManager>;

impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> Self {
        use rusqlite::ErrorCode;
        match error.sqlite_error_code() {
            // The read's budget stopped it (see `budget`).
            Some(ErrorCode::OperationInterrupted) => StoreError::Stopped,
            // The disk or the file, not the statement: trying again later
            // can succeed.
            Some(
                ErrorCode::DiskFull
                | ErrorCode::SystemIoFailure
                | ErrorCode::CannotOpen
                | ErrorCode::DatabaseBusy
                | ErrorCode::DatabaseLocked,
            ) => StoreError::Unavailable(error.to_string()),
            _ => StoreError::Database(error.to_string()),
        }
    }
}

impl super::rows::Columns for rusqlite::Row<'_> {
    fn at<T: super::rows::Value>(&self, column: usize) -> Result<T, StoreError> {
        Ok(self.get(column)?)
    }
}

impl From<r2d2::Error> for StoreError {
    fn from(error: r2d2::Error) -> Self {
        StoreError::Pool(error.to_string())
    }
}

/// Connection settings applied to every connection, pooled or not.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionOptions {
    pub busy_timeout: Duration,
    pub cache_size_kib: u64,
    /// How much of the file is read through a memory map (0: none).
    pub mmap_size_mib: u64,
}

/// WAL so readers never wait on the writer; NORMAL sync is durable at each
/// WAL commit except across power loss during a checkpoint.
fn configure_connection(conn: &Connection, options: ConnectionOptions) -> rusqlite::Result<()> {
    conn.busy_timeout(options.busy_timeout)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.pragma_update(None, "cache_size", -(options.cache_size_kib as i64))?;
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    // Deleted and rewritten rows are overwritten with zeros, and freed
    // pages too: an erased record's bytes, and the older copies of a row
    // an update rewrote, do not stay in the file's free space.
    conn.pragma_update(None, "secure_delete", "ON")?;
    // Pages read through the map are the OS page cache's own, shared by
    // every connection: no copy into each connection's cache, no read
    // call. SQLite caps it at its compiled maximum (2 GiB); SQLCipher
    // ignores it (pages are decrypted into the cache).
    conn.pragma_update(
        None,
        "mmap_size",
        options.mmap_size_mib.saturating_mul(1 << 20) as i64,
    )?;
    // A WAL that grew under load is cut back to this size once reset.
    conn.pragma_update(None, "journal_size_limit", 64 * 1024 * 1024)?;
    // The writer runs every kind of write (records, revisions, topics,
    // maintenance), well over 64 statements; evicted ones are prepared
    // again.
    conn.set_prepared_statement_cache_capacity(256);
    // Without the planner stability guarantee, SQLite (3.53) marks a
    // statement whose LIMIT is a bound parameter to be prepared again at
    // every new binding, which undoes the statement cache for every paged
    // and ranked query. engram keeps no planner statistics (no ANALYZE), so
    // a plan never depends on the values bound.
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    rusqlite::vtab::array::load_module(conn)?;
    counted::register(conn)?;
    Ok(())
}

/// Gives SQLCipher the database key, before anything reads the file.
fn unlock(conn: &Connection, key: Option<&str>) -> rusqlite::Result<()> {
    if let Some(key) = key {
        // SQLCipher writes its own log to stderr (a wrong key's failed
        // checks among it); engram reports what fails as its own errors.
        conn.pragma_update(None, "cipher_log_level", "NONE")?;
        conn.pragma_update(None, "key", key)?;
    }
    Ok(())
}

/// Opens (creating if needed) the database file on a dedicated connection,
/// and checks that it can be read. The directory is created too, so the
/// embedded default `./data/engram.db` works on a fresh checkout.
fn open_connection(
    path: &Path,
    options: ConnectionOptions,
    key: Option<&str>,
) -> Result<Connection, StoreError> {
    if key.is_some() && !cfg!(feature = "sqlcipher") {
        return Err(StoreError::Locked(
            "storage.encryption_key_env is set, but this build of engram has no encryption \
             at rest: build it with `--features sqlcipher`"
                .to_string(),
        ));
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| StoreError::Directory {
            path: dir.display().to_string(),
            source,
        })?;
    }
    // Memories are for the service alone: a new file is made readable by
    // its owner only (SQLite gives its log and shared memory the file's
    // mode), as the pepper is.
    if !path.exists() {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(|source| StoreError::File {
                path: path.display().to_string(),
                source,
            })?;
    }
    let conn = Connection::open(path)?;
    unlock(&conn, key)?;
    check_readable(&conn, key)?;
    configure_connection(&conn, options)?;
    Ok(conn)
}

/// Reads the schema, so a file that is encrypted with another key (or
/// none), or is no database, is refused with what to do about it.
fn check_readable(conn: &Connection, key: Option<&str>) -> Result<(), StoreError> {
    let readable = conn.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()));
    if let Err(rusqlite::Error::SqliteFailure(e, _)) = &readable {
        if e.code == ErrorCode::NotADatabase {
            return Err(StoreError::Locked(match key {
                Some(_) => "the database cannot be read with this key: the key in \
                            storage.encryption_key_env is not the one it was encrypted with"
                    .to_string(),
                None => "the file is not a readable database: if it is encrypted, build with \
                         `--features sqlcipher` and name its key's variable in \
                         storage.encryption_key_env"
                    .to_string(),
            }));
        }
    }
    readable?;
    Ok(())
}

/// Opens the database at `path`, brings its schema up to date, and opens
/// `pool_size` read connections. The writer connection comes first: it
/// switches the file to WAL and migrates before any reader opens.
/// `embedding_dimensions`: the configured dimensions of vectors, fixed in
/// the database (refused if its vectors have another number).
/// `encryption_key`: the SQLCipher key of the file (builds with the
/// `sqlcipher` feature).
pub fn open(
    path: &Path,
    pool_size: u32,
    writer_options: ConnectionOptions,
    reader_options: ConnectionOptions,
    embedding_dimensions: Option<usize>,
    encryption_key: Option<String>,
) -> Result<Opened, StoreError> {
    let key = encryption_key.as_deref();
    let mut conn = open_connection(path, writer_options, key)?;
    let applied_migrations = migrations::run(&mut conn)?;
    if let Some(configured) = embedding_dimensions {
        vectors::fix_dimensions(&conn, configured)?;
    }
    let pool_key = encryption_key.clone();
    let manager = SqliteConnectionManager::file(path).with_init(move |conn| {
        unlock(conn, pool_key.as_deref())?;
        configure_connection(conn, reader_options)
    });
    let pool = r2d2::Pool::builder()
        .max_size(pool_size)
        // A SQLite connection does not go stale; testing it on every
        // checkout only costs a statement per read.
        .test_on_check_out(false)
        .connection_timeout(Duration::from_secs(10))
        .build(manager)?;
    let checkpoints =
        checkpoint::Checkpoints::start(&conn, open_connection(path, reader_options, key)?)?;
    Ok(Opened {
        more_writers: Vec::new(),
        writer: Box::new(SqliteWriter {
            conn,
            checkpoints,
            counted: counted::CountedTerms::default(),
        }),
        readers: transaction::ReadPool::new(ReadPool(pool)),
        applied_migrations,
    })
}

/// Opens the database at `path` on a connection of its own, its schema
/// brought up to date, for reading it whole (`engram migrate`).
pub fn open_for_export(path: &Path, key: Option<&str>) -> Result<Connection, StoreError> {
    if !path.is_file() {
        return Err(StoreError::NotFound(path.display().to_string()));
    }
    let options = ConnectionOptions {
        busy_timeout: Duration::from_secs(10),
        cache_size_kib: 65536,
        mmap_size_mib: 0,
    };
    let mut conn = open_connection(path, options, key)?;
    migrations::run(&mut conn)?;
    Ok(conn)
}

/// Pooled read connections; cheap to clone.
#[derive(Clone)]
pub struct ReadPool(Pool);

impl Readers for ReadPool {
    fn for_thread(&self) -> Box<dyn Reads> {
        Box::new(self.clone())
    }
}

impl Reads for ReadPool {
    /// Runs `work` on a pooled connection. Blocks: call it from a thread
    /// made for blocking work.
    ///
    /// The work runs in one read transaction: everything it reads is one
    /// snapshot (a retrieval ranks and loads the same records, whatever
    /// commits meanwhile), and the WAL read lock is taken once, not once
    /// per statement.
    fn read(&mut self, work: &mut dyn FnMut(&mut dyn Transaction)) -> Result<(), StoreError> {
        let mut conn = self.0.get()?;
        let conn: &mut Connection = &mut conn;
        conn.prepare_cached("BEGIN")?.execute([])?;
        // A statement of a read whose budget is spent is interrupted (and
        // fails with `Stopped`); so is every later one of the read.
        conn.progress_handler(BUDGET_STEPS, Some(super::budget::spent))?;
        work(conn);
        conn.progress_handler(0, None::<fn() -> bool>)?;
        // Nothing was written: ending the transaction either way is the same.
        conn.prepare_cached("COMMIT")?.execute([])?;
        Ok(())
    }
}

/// Steps of SQLite's engine between two looks at a read's budget: a few
/// microseconds of work, so a look costs nothing measurable.
const BUDGET_STEPS: std::ffi::c_int = 4000;

struct SqliteWriter {
    conn: Connection,
    checkpoints: checkpoint::Checkpoints,
    counted: counted::CountedTerms,
}

impl SqliteWriter {
    /// Runs one of the writer's transaction-control statements, prepared
    /// once: they run for every write.
    fn run(&self, sql: &str) -> Result<(), StoreError> {
        self.conn.prepare_cached(sql)?.execute([])?;
        Ok(())
    }
}

impl WriteConnection for SqliteWriter {
    fn begin(&mut self) -> Result<(), StoreError> {
        search::discard();
        // IMMEDIATE takes the write lock now, so a busy database is found
        // here rather than at the first write of some job.
        self.run("BEGIN IMMEDIATE")
    }

    fn savepoint(&mut self) -> Result<(), StoreError> {
        self.run("SAVEPOINT write_job")?;
        search::savepoint();
        Ok(())
    }

    fn release(&mut self) -> Result<(), StoreError> {
        self.run("RELEASE write_job")?;
        search::release();
        Ok(())
    }

    fn rollback_to_savepoint(&mut self) -> Result<(), StoreError> {
        self.run("ROLLBACK TO write_job")?;
        self.run("RELEASE write_job")?;
        search::rollback_to_savepoint();
        Ok(())
    }

    fn commit(&mut self) -> Result<(), StoreError> {
        search::flush(&self.conn, &mut self.counted)?;
        self.run("COMMIT")?;
        self.checkpoints.after_commit(&self.conn);
        Ok(())
    }

    fn rollback(&mut self) {
        search::discard();
        self.counted.forget();
        let _ = self.conn.execute_batch("ROLLBACK");
    }

    fn transaction(&mut self) -> &mut dyn Transaction {
        &mut self.conn
    }

    fn upkeep(&mut self) -> Result<bool, StoreError> {
        let mut did = false;
        // The commit counts them.
        while counted::any_wanted(&self.conn) {
            did = true;
            self.begin()?;
            if let Err(e) = self.commit() {
                self.rollback();
                return Err(e);
            }
        }
        Ok(did)
    }

    fn close(&mut self) -> Result<(), StoreError> {
        Ok(self.conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")?)
    }

    fn scrub(&mut self) -> Result<(), StoreError> {
        // The deleting transactions overwrote what they deleted, in the
        // tables (`secure_delete`) and in the full-text indexes
        // (`secure-delete`, migration 0022), except the terms an erasure of
        // many left in the index's segments: a merge takes them out.
        let due: Vec<String> = self
            .conn
            .prepare("SELECT index_name FROM search_merge_due")?
            .query_map([], |row| row.get(0))?
            .collect::<Result<_, _>>()?;
        if !due.is_empty() {
            let mut merge = String::from("BEGIN IMMEDIATE;");
            for table in &due {
                if table == "record_search" || table == "topic_search" {
                    merge.push_str(&format!(
                        "INSERT INTO {table} ({table}) VALUES ('optimize');"
                    ));
                }
            }
            merge.push_str("DELETE FROM search_merge_due; COMMIT;");
            self.conn.execute_batch(&merge)?;
        }
        // The write-ahead log still holds the pages as they were until it
        // is copied into the database and cut back to nothing.
        Ok(self.conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")?)
    }
}

#[cfg(test)]
mod tests {
    use rusqlite::StatementStatus;

    use super::*;

    #[test]
    fn a_cached_statement_with_a_bound_limit_is_prepared_once() {
        let conn = Connection::open_in_memory().unwrap();
        let options = ConnectionOptions {
            busy_timeout: Duration::from_secs(1),
            cache_size_kib: 1024,
            mmap_size_mib: 0,
        };
        configure_connection(&conn, options).unwrap();
        conn.execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1), (2), (3);")
            .unwrap();
        for limit in 1..=3 {
            let mut stmt = conn
                .prepare_cached("SELECT x FROM t ORDER BY x LIMIT ?1")
                .unwrap();
            let rows: Vec<i64> = stmt
                .query_map([limit], |row| row.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            assert_eq!(rows.len(), limit as usize);
            assert_eq!(stmt.get_status(StatementStatus::RePrepare), 0);
        }
    }
}
