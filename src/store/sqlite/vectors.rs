//! Stored embeddings (migration 0008): one vector per record at most, and
//! the number of dimensions every vector of the database has.

use rusqlite::{params, Connection, OptionalExtension};

use crate::domain::record::{MemoryRecord, Status};
use crate::domain::search::{search_text, text_hash};
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
        if records.len() != keys.len() {
            return Err(StoreError::Corrupt(
                "a record listed for embedding could not be read".into(),
            ));
        }
        Ok(rows
            .into_iter()
            .zip(records)
            .map(|((key, version), record)| ToEmbed {
                key,
                version,
                text: search_text(&record),
            })
            .collect())
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

#[cfg(test)]
mod tests {
    use super::super::test_support::{conn, insert, now, record};
    use super::*;
    use crate::store::records::{RecordReads, RecordStore, SalienceChange};
    use serde_json::json;

    fn fact(
        id: &str,
        object: &str,
        embedding: Option<Vec<f64>>,
    ) -> crate::domain::record::MemoryRecord {
        let mut fact = record(
            id,
            json!({"type": "semantic", "sensitivity": "low",
                   "payload": {"kind": "semantic", "subject": "user", "predicate": "likes", "object": object}}),
        );
        fact.embedding = embedding.map(|v| Embedding::new("embedding", v).unwrap());
        fact
    }

    fn vector_count(conn: &Connection) -> i64 {
        conn.query_row("SELECT COUNT(*) FROM record_vectors", [], |r| r.get(0))
            .unwrap()
    }

    #[test]
    fn the_first_vector_fixes_the_dimensions() {
        let mut conn = conn();
        assert_eq!(dimensions(&conn).unwrap(), None);
        conn.insert_record(&fact("a", "tea", Some(vec![1.0, 0.0, 0.0])))
            .unwrap();
        assert_eq!(dimensions(&conn).unwrap(), Some(3));
        let err = conn
            .insert_record(&fact("b", "coffee", Some(vec![1.0, 0.0])))
            .unwrap_err();
        assert!(
            matches!(
                err,
                StoreError::Dimensions {
                    given: 2,
                    expected: 3
                }
            ),
            "{err}"
        );
        assert!(fix_dimensions(&conn, 4).is_err());
        assert!(fix_dimensions(&conn, 3).is_ok());
        // A deleted record takes its vector along.
        conn.execute("DELETE FROM records WHERE id = 'a'", [])
            .unwrap();
        assert_eq!(vector_count(&conn), 0);
    }

    #[test]
    fn the_embedder_works_through_records_without_a_vector() {
        let mut conn = conn();
        let a = insert(&mut conn, &fact("a", "tea", None));
        conn.insert_record(&fact("b", "coffee", Some(vec![0.0, 1.0])))
            .unwrap();
        let todo = conn.to_embed(0, 10, now()).unwrap();
        assert_eq!(todo.len(), 1);
        assert_eq!(todo[0].key, a);
        assert!(todo[0].text.contains("tea"), "{}", todo[0].text);
        let made = Embedded {
            key: a,
            version: todo[0].version,
            text: todo[0].text.clone(),
            embedding: Embedding::new("embedding", vec![1.0, 0.0]).unwrap(),
        };
        // A record changed since it was read is left for the next pass.
        let stale = Embedded {
            version: made.version - 1,
            ..made.clone()
        };
        assert!(!conn.store_embedded(&stale).unwrap());
        assert!(conn.store_embedded(&made).unwrap());
        assert!(!conn.store_embedded(&made).unwrap());
        assert!(conn.to_embed(0, 10, now()).unwrap().is_empty());

        // A rewrite that keeps the text keeps the vector; one that changes
        // it drops the embedder's vector, never a client's.
        let loaded = conn.get_for_update("a", now()).unwrap().unwrap();
        conn.update_record(&loaded.version, &loaded.record, SalienceChange::Unchanged)
            .unwrap();
        assert_eq!(vector_count(&conn), 2);
        for id in ["a", "b"] {
            let loaded = conn.get_for_update(id, now()).unwrap().unwrap();
            let mut changed = loaded.record.clone();
            if let crate::domain::payload::Payload::Semantic(p) = &mut changed.payload {
                p.object = json!("water");
            }
            conn.update_record(&loaded.version, &changed, SalienceChange::Unchanged)
                .unwrap();
        }
        assert_eq!(vector_count(&conn), 1);
        assert_eq!(conn.to_embed(0, 10, now()).unwrap()[0].key, a);
    }

    #[test]
    fn a_vector_follows_its_record_visibility() {
        let mut conn = conn();
        let key = insert(&mut conn, &fact("a", "tea", Some(vec![1.0, 0.0])));
        let visibility = |conn: &Connection| -> (Option<String>, i64, i64) {
            conn.query_row(
                "SELECT scope, sensitivity, live FROM record_vectors WHERE record_key = ?1",
                [key],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap()
        };
        assert_eq!(visibility(&conn), (None, 1, 1));
        let loaded = conn.get_for_update("a", now()).unwrap().unwrap();
        let mut moved = loaded.record.clone();
        moved.scope = Some("team".into());
        moved.status = Status::Retracted;
        conn.update_record(&loaded.version, &moved, SalienceChange::Unchanged)
            .unwrap();
        assert_eq!(visibility(&conn), (Some("team".into()), 1, 0));
        retracted(&conn, key).unwrap();
        assert_eq!(visibility(&conn).2, 0);
        // A rewrite that brings a new vector moves the visibility too.
        let loaded = conn.get_for_update("a", now()).unwrap().unwrap();
        let mut back = loaded.record.clone();
        back.scope = None;
        back.status = Status::Active;
        back.embedding = Some(Embedding::new("embedding", vec![0.0, 1.0]).unwrap());
        conn.update_record(&loaded.version, &back, SalienceChange::Unchanged)
            .unwrap();
        assert_eq!(visibility(&conn), (None, 1, 1));
    }
}
