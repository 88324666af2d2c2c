//! Stored embeddings (migration 0008): one vector per record at most, and
//! the number of dimensions every vector of the database has.

use rusqlite::{params, Connection, OptionalExtension};

use crate::domain::record::{MemoryRecord, Status};
use crate::domain::search::text_hash;
use crate::domain::time::Timestamp;
use crate::domain::vector::Embedding;
use crate::store::error::StoreError;
use crate::store::records::RecordReads;
use crate::store::vectors::{Embedded, ToEmbed, VectorStore};

/// The dimensions of the database's vectors, once fixed.
pub fn dimensions(conn: &Connection) -> Result<Option<usize>, StoreError> {
    let stored: Option<i64> = conn
        .prepare_cached("SELECT dimensions FROM vector_space WHERE id = 1")?
        .query_row([], |row| row.get(0))
        .optional()?;
    Ok(stored.map(|n| n as usize))
}

/// Fixes the dimensions to `configured` (from the configuration); refused
/// when the database's vectors already have another number.
pub fn fix_dimensions(conn: &Connection, configured: usize) -> Result<(), StoreError> {
    match dimensions(conn)? {
        Some(stored) if stored != configured => Err(StoreError::Schema(format!(
            "retrieval.embedding_dimensions is {configured}, but the vectors of this database \
             have {stored} dimensions; set it to {stored} or point storage.db_path at another file"
        ))),
        Some(_) => Ok(()),
        None => {
            conn.prepare_cached("INSERT INTO vector_space (id, dimensions) VALUES (1, ?1)")?
                .execute([configured as i64])?;
            Ok(())
        }
    }
}

/// Checks `embedding` against the dimensions of the database's vectors,
/// fixing them when it is the first.
pub fn fits(conn: &Connection, embedding: &Embedding) -> Result<(), StoreError> {
    let given = embedding.dimensions();
    match dimensions(conn)? {
        Some(expected) if expected != given => Err(StoreError::Dimensions { given, expected }),
        Some(_) => Ok(()),
        None => fix_dimensions(conn, given),
    }
}

/// Stores `embedding` as record `key`'s vector (replacing any), the first
/// vector of the database fixing its dimensions. `text_hash`: the hash of
/// the search text the embedder made it from; `None` for a client's.
pub fn put(
    conn: &Connection,
    key: i64,
    embedding: &Embedding,
    text_hash: Option<i64>,
) -> Result<(), StoreError> {
    fits(conn, embedding)?;
    let (scale, quantized) = embedding.quantized();
    // The record's visibility is copied from its row (stored before its
    // vector); `after_update` and `retracted` keep it in step.
    conn.prepare_cached(
        "INSERT INTO record_vectors
             (record_key, norm, vector, text_hash, scope, layer, sensitivity, live, scale, q)
         SELECT ?1, ?2, ?3, ?4, r.scope, r.layer, r.sensitivity, r.status <> 'retracted', ?5, ?6
         FROM records r WHERE r.key = ?1
         ON CONFLICT (record_key) DO UPDATE
             SET norm = excluded.norm, vector = excluded.vector, text_hash = excluded.text_hash,
                 scope = excluded.scope, layer = excluded.layer,
                 sensitivity = excluded.sensitivity, live = excluded.live,
                 scale = excluded.scale, q = excluded.q",
    )?
    .execute(params![
        key,
        embedding.norm(),
        embedding.to_bytes(),
        text_hash,
        scale,
        quantized
    ])?;
    Ok(())
}

/// After record `key` was rewritten as `record`: its new vector, if the
/// change brought one; otherwise its vector follows the record's
/// visibility, and a vector the embedder made from another text than the
/// record's now (`text_hash`) is dropped, to be made again.
pub fn after_update(
    conn: &Connection,
    key: i64,
    record: &MemoryRecord,
    text_hash: i64,
) -> Result<(), StoreError> {
    if let Some(embedding) = &record.embedding {
        return put(conn, key, embedding, None);
    }
    conn.prepare_cached(
        "DELETE FROM record_vectors
         WHERE record_key = ?1 AND text_hash IS NOT NULL AND text_hash <> ?2",
    )?
    .execute(params![key, text_hash])?;
    conn.prepare_cached(
        "UPDATE record_vectors SET scope = ?2, layer = ?3, sensitivity = ?4, live = ?5
         WHERE record_key = ?1",
    )?
    .execute(params![
        key,
        record.scope,
        record.memory_type.layer(),
        record.sensitivity.rank(),
        record.status != Status::Retracted
    ])?;
    Ok(())
}

/// Record `key` was retracted without being rewritten.
pub fn retracted(conn: &Connection, key: i64) -> Result<(), StoreError> {
    conn.prepare_cached("UPDATE record_vectors SET live = 0 WHERE record_key = ?1")?
        .execute([key])?;
    Ok(())
}

impl VectorStore for Connection {
    fn vector_dimensions(&mut self) -> Result<Option<usize>, StoreError> {
        dimensions(self)
    }

    /// Up to `limit` records after `after_key` (key order) that are not
    /// retracted and have no vector: what the embedder has to do.
    fn to_embed(
        &mut self,
        after_key: i64,
        limit: usize,
        now: Timestamp,
    ) -> Result<Vec<ToEmbed>, StoreError> {
        let rows: Vec<(i64, i64)> = self
            .prepare_cached(
                "SELECT r.key, r.version FROM records r
                 WHERE r.key > ?1 AND r.status <> 'retracted'
                   AND NOT EXISTS (SELECT 1 FROM record_vectors v WHERE v.record_key = r.key)
                 ORDER BY r.key LIMIT ?2",
            )?
            .query_map(params![after_key, limit as i64], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })?
            .collect::<Result<_, _>>()?;
        let keys: Vec<i64> = rows.iter().map(|(key, _)| *key).collect();
        let records = self.load_records(&keys, now)?;
        ToEmbed::from_loaded(rows, records)
    }

    /// Stores a vector the embedder made, if the record is still as it was
    /// read and has no vector meanwhile (a client's wins). Answers whether it
    /// was stored.
    fn store_embedded(&mut self, embedded: &Embedded) -> Result<bool, StoreError> {
        let current: Option<i64> = self
            .prepare_cached("SELECT version FROM records WHERE key = ?1")?
            .query_row([embedded.key], |row| row.get(0))
            .optional()?;
        let has_vector: bool = self
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM record_vectors WHERE record_key = ?1)")?
            .query_row([embedded.key], |row| row.get(0))?;
        if current != Some(embedded.version) || has_vector {
            return Ok(false);
        }
        put(
            self,
            embedded.key,
            &embedded.embedding,
            Some(text_hash(&embedded.text)),
        )?;
        Ok(true)
    }
}
