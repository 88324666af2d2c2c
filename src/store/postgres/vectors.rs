//! Stored embeddings on PostgreSQL: one vector per record at most, and the
//! number of dimensions every vector of the database has.

use super::connection::Pg;
use crate::domain::record::{MemoryRecord, Status};
use crate::domain::search::text_hash;
use crate::domain::time::Timestamp;
use crate::domain::vector::Embedding;
use crate::store::error::StoreError;
use crate::store::records::RecordReads;
use crate::store::vectors::{Embedded, ToEmbed, VectorStore};

pub fn dimensions(pg: &Pg) -> Result<Option<usize>, StoreError> {
    pg.query_opt("SELECT dimensions FROM vector_space WHERE id = 1", &[])?
        .map(|row| Ok(row.try_get::<_, i64>(0)? as usize))
        .transpose()
}

/// Fixes the dimensions to `wanted` unless they are fixed already (by
/// another instance too); refused when they are another number.
fn settle(pg: &Pg, wanted: usize) -> Result<usize, StoreError> {
    pg.execute(
        "INSERT INTO vector_space (id, dimensions) VALUES (1, $1) ON CONFLICT (id) DO NOTHING",
        &[&(wanted as i64)],
    )?;
    dimensions(pg)?.ok_or_else(|| StoreError::Corrupt("vector_space has no row".into()))
}

pub fn fix_dimensions(pg: &Pg, configured: usize) -> Result<(), StoreError> {
    let stored = settle(pg, configured)?;
    if stored != configured {
        return Err(StoreError::Schema(format!(
            "retrieval.embedding_dimensions is {configured}, but the vectors of this database \
             have {stored} dimensions; set it to {stored} or point storage.postgres_url at \
             another database"
        )));
    }
    Ok(())
}

/// Checks `embedding` against the database's dimensions, fixing them when
/// it is the first.
pub fn fits(pg: &Pg, embedding: &Embedding) -> Result<(), StoreError> {
    let given = embedding.dimensions();
    let expected = match dimensions(pg)? {
        Some(expected) => expected,
        None => settle(pg, given)?,
    };
    if expected != given {
        return Err(StoreError::Dimensions { given, expected });
    }
    Ok(())
}

/// Stores `embedding` as record `key`'s vector (replacing any), with the
/// record's visibility copied beside it.
pub fn put(
    pg: &Pg,
    key: i64,
    embedding: &Embedding,
    text_hash: Option<i64>,
) -> Result<(), StoreError> {
    fits(pg, embedding)?;
    pg.execute(
        "INSERT INTO record_vectors
             (record_key, norm, vector, text_hash, scope, layer, sensitivity, live)
         SELECT $1, $2, $3, $4, r.scope, r.layer, r.sensitivity, r.status <> 'retracted'
         FROM records r WHERE r.key = $1
         ON CONFLICT (record_key) DO UPDATE
             SET norm = excluded.norm, vector = excluded.vector, text_hash = excluded.text_hash,
                 scope = excluded.scope, layer = excluded.layer,
                 sensitivity = excluded.sensitivity, live = excluded.live",
        &[&key, &embedding.norm(), &embedding.to_bytes(), &text_hash],
    )?;
    Ok(())
}

/// After record `key` was rewritten: its new vector if the change brought
/// one; otherwise the vector follows the record's visibility, and one the
/// embedder made from another text than the record's now is dropped.
pub fn after_update(
    pg: &Pg,
    key: i64,
    record: &MemoryRecord,
    text_hash: i64,
) -> Result<(), StoreError> {
    if let Some(embedding) = &record.embedding {
        return put(pg, key, embedding, None);
    }
    pg.execute(
        "DELETE FROM record_vectors
         WHERE record_key = $1 AND text_hash IS NOT NULL AND text_hash <> $2",
        &[&key, &text_hash],
    )?;
    pg.execute(
        "UPDATE record_vectors SET scope = $2, layer = $3, sensitivity = $4, live = $5
         WHERE record_key = $1",
        &[
            &key,
            &record.scope,
            &(record.memory_type.layer() as i64),
            &(record.sensitivity.rank() as i64),
            &(record.status != Status::Retracted),
        ],
    )?;
    Ok(())
}

impl VectorStore for Pg {
    fn vector_dimensions(&mut self) -> Result<Option<usize>, StoreError> {
        dimensions(self)
    }

    fn to_embed(
        &mut self,
        after_key: i64,
        limit: usize,
        now: Timestamp,
    ) -> Result<Vec<ToEmbed>, StoreError> {
        let rows = self.query(
            "SELECT r.key, r.version FROM records r
             WHERE r.key > $1 AND r.status <> 'retracted'
               AND NOT EXISTS (SELECT 1 FROM record_vectors v WHERE v.record_key = r.key)
             ORDER BY r.key LIMIT $2",
            &[&after_key, &(limit as i64)],
        )?;
        let mut listed = Vec::with_capacity(rows.len());
        for row in &rows {
            listed.push((row.try_get::<_, i64>(0)?, row.try_get::<_, i64>(1)?));
        }
        let keys: Vec<i64> = listed.iter().map(|(key, _)| *key).collect();
        let records = self.load_records(&keys, now)?;
        ToEmbed::from_loaded(listed, records)
    }

    fn store_embedded(&mut self, embedded: &Embedded) -> Result<bool, StoreError> {
        let row = self.query_opt(
            "SELECT r.version, EXISTS (SELECT 1 FROM record_vectors v WHERE v.record_key = r.key)
             FROM records r WHERE r.key = $1 FOR UPDATE",
            &[&embedded.key],
        )?;
        let Some(row) = row else {
            return Ok(false);
        };
        if row.try_get::<_, i64>(0)? != embedded.version || row.try_get::<_, bool>(1)? {
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
