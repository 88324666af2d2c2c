//! SQLite storage: the connection pool and its PRAGMAs, the migrations
//! runner, and the SQL itself as plain functions over a `&Connection`.
//!
//! Nothing outside this module writes SQL, and the functions take a bare
//! connection (inside whatever transaction the caller holds), so another
//! backend could sit behind the same signatures.

pub mod consolidation;
pub mod maintenance;
pub mod migrations;
pub mod records;
pub mod stats;

use std::path::Path;
use std::time::Duration;

use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::Connection;

pub type Pool = r2d2::Pool<SqliteConnectionManager>;
pub type PooledConnection = r2d2::PooledConnection<SqliteConnectionManager>;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("record {0} not found")]
    NotFound(String),
    #[error("a record with id {0} already exists")]
    AlreadyExists(String),
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("connection pool error: {0}")]
    Pool(#[from] r2d2::Error),
    #[error("stored data is unreadable: {0}")]
    Corrupt(String),
    #[error("{0}")]
    Schema(String),
    #[error("cannot create the database directory {path}: {source}")]
    Directory {
        path: String,
        source: std::io::Error,
    },
}

/// Connection settings applied to every connection, pooled or not.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionOptions {
    pub busy_timeout: Duration,
    pub cache_size_kib: u64,
}

/// WAL so readers never wait on the writer; NORMAL sync is durable at each
/// WAL commit except across power loss during a checkpoint.
pub fn configure_connection(conn: &Connection, options: ConnectionOptions) -> rusqlite::Result<()> {
    conn.busy_timeout(options.busy_timeout)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.pragma_update(None, "cache_size", -(options.cache_size_kib as i64))?;
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    // A WAL that grew under load is cut back to this size once reset.
    conn.pragma_update(None, "journal_size_limit", 64 * 1024 * 1024)?;
    conn.set_prepared_statement_cache_capacity(64);
    rusqlite::vtab::array::load_module(conn)?;
    Ok(())
}

/// Opens (creating if needed) the database file on a dedicated connection.
/// The directory is created too, so the embedded default
/// `./data/engram.db` works on a fresh checkout.
pub fn open_connection(path: &Path, options: ConnectionOptions) -> Result<Connection, StoreError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| StoreError::Directory {
            path: dir.display().to_string(),
            source,
        })?;
    }
    let conn = Connection::open(path)?;
    configure_connection(&conn, options)?;
    Ok(conn)
}

/// A pool of connections to an existing database file.
pub fn open_pool(path: &Path, size: u32, options: ConnectionOptions) -> Result<Pool, StoreError> {
    let manager = SqliteConnectionManager::file(path)
        .with_init(move |conn| configure_connection(conn, options));
    let pool = r2d2::Pool::builder()
        .max_size(size)
        .connection_timeout(Duration::from_secs(10))
        .build(manager)?;
    Ok(pool)
}
