//! Records' vectors in storage ([`VectorStore`]).

use crate::domain::record::MemoryRecord;
use crate::domain::search::search_text;
use crate::domain::time::Timestamp;
use crate::domain::vector::Embedding;
use crate::store::error::StoreError;

/// A record the embedder is to make a vector for: its search text, as of
/// the row version read.
#[derive(Debug, Clone, PartialEq)]
pub struct ToEmbed {
    pub key: i64,
    pub version: i64,
    pub text: String,
}

impl ToEmbed {
    /// The records `listed` (key, row version), loaded as `records` in the
    /// same order, as the embedder's work; a listed record that could not
    /// be loaded is corrupt data.
    pub fn from_loaded(
        listed: Vec<(i64, i64)>,
        records: Vec<MemoryRecord>,
    ) -> Result<Vec<ToEmbed>, StoreError> {
        if records.len() != listed.len() {
            return Err(StoreError::Corrupt(
                "a record listed for embedding could not be read".into(),
            ));
        }
        Ok(listed
            .into_iter()
            .zip(records)
            .map(|((key, version), record)| ToEmbed {
                key,
                version,
                text: search_text(&record),
            })
            .collect())
    }
}

/// A vector the embedder made for a [`ToEmbed`].
#[derive(Debug, Clone, PartialEq)]
pub struct Embedded {
    pub key: i64,
    pub version: i64,
    pub text: String,
    pub embedding: Embedding,
}

/// Records' vectors: the database's dimensions, and the embedder's work.
pub trait VectorStore {
    /// The number of dimensions the database's vectors have, once fixed
    /// (by the first vector stored, or the configuration).
    fn vector_dimensions(&mut self) -> Result<Option<usize>, StoreError>;
    /// Up to `limit` records after `after_key`, in key order, that are not
    /// retracted and have no vector.
    fn to_embed(
        &mut self,
        after_key: i64,
        limit: usize,
        now: Timestamp,
    ) -> Result<Vec<ToEmbed>, StoreError>;
    /// Stores a vector the embedder made, unless the record changed since
    /// it was read or got a vector meanwhile; answers whether it did.
    fn store_embedded(&mut self, embedded: &Embedded) -> Result<bool, StoreError>;
}
