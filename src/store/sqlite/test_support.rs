//! What the storage unit tests share: an in-memory database with the
//! schema, a fixed clock, and records built the way the service builds
//! them.

use rusqlite::Connection;

use crate::domain::time::{parse_rfc3339, Timestamp};

pub fn conn() -> Connection {
    let mut conn = Connection::open_in_memory().unwrap();
    conn.pragma_update(None, "foreign_keys", "ON").unwrap();
    rusqlite::vtab::array::load_module(&conn).unwrap();
    super::counted::register(&conn).unwrap();
    super::migrations::run(&mut conn).unwrap();
    conn
}

pub fn now() -> Timestamp {
    parse_rfc3339("2026-01-01T00:00:00.123456Z").unwrap()
}

pub use crate::domain::new_record::test_record as record;

/// Stores `record` and answers the key it got.
pub fn insert(conn: &mut Connection, record: &crate::domain::record::MemoryRecord) -> i64 {
    use crate::store::records::RecordStore;
    conn.insert_record(record).unwrap();
    conn.query_row(
        "SELECT key FROM records WHERE id = ?1",
        [&record.id],
        |row| row.get(0),
    )
    .unwrap()
}
