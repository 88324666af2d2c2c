//! Erasure: finding what an erasure removes, removing it with every row
//! that holds its content, the tombstones that keep revision chains
//! explainable, and the erasure log.

use crate::domain::erasure::TableCounts;
use crate::domain::record::{MemoryType, Sensitivity};
use crate::domain::time::Timestamp;
use crate::domain::trust::TrustContext;

use super::rows::Columns;
use crate::store::error::StoreError;

/// The tables holding a topic's parts by `topic_key`, besides its field
/// versions and edges: what goes with a topic an erasure leaves with no
/// field.
pub(crate) const TOPIC_PARTS: &[&str] = &[
    "topic_words",
    "topic_vectors",
    "topic_aliases",
    "topic_summaries",
    "topics_to_index",
];

/// A record an erasure selected: what decides who may see it, and its
/// type (kept by its tombstone).
#[derive(Debug, Clone, PartialEq)]
pub struct Erasable {
    pub key: i64,
    pub id: String,
    pub memory_type: MemoryType,
    pub sensitivity: Sensitivity,
    pub scope: Option<String>,
}

impl Erasable {
    /// What [`Erasable::read`] reads, of `records`.
    pub(crate) const COLUMNS: &'static str = "key, id, layer, sensitivity, scope";

    pub(crate) fn read(row: &impl Columns) -> Result<Erasable, StoreError> {
        Ok(Erasable {
            key: row.at(0)?,
            id: row.at(1)?,
            memory_type: row.memory_type(2)?,
            sensitivity: row.sensitivity(3)?,
            scope: row.at(4)?,
        })
    }
}

/// Where a record stands in a revision chain: the version it superseded
/// and the one that superseded it (at least one of them).
#[derive(Debug, Clone, PartialEq)]
pub struct ChainNeighbours {
    pub key: i64,
    pub older_id: Option<String>,
    pub newer_id: Option<String>,
}

/// What stays of an erased record that was part of a revision chain: no
/// content, no subject; where it stood in the chain.
#[derive(Debug, Clone, PartialEq)]
pub struct Tombstone {
    pub id: String,
    pub memory_type: MemoryType,
    pub sensitivity: Sensitivity,
    pub scope: Option<String>,
    pub erased_at: Timestamp,
    pub actor: String,
    pub rationale: String,
    /// The record it superseded, if any.
    pub older_id: Option<String>,
    /// The record that superseded it, if any.
    pub newer_id: Option<String>,
}

impl Tombstone {
    /// The columns of `erased_records`, in the order [`Tombstone::read`]
    /// reads them.
    pub(crate) const COLUMNS: &'static str =
        "id, layer, sensitivity, scope, erased_at, actor, rationale, older_id, newer_id";

    pub(crate) fn read(row: &impl Columns) -> Result<Tombstone, StoreError> {
        Ok(Tombstone {
            id: row.at(0)?,
            memory_type: row.memory_type(1)?,
            sensitivity: row.sensitivity(2)?,
            scope: row.at(3)?,
            erased_at: row.time(4)?,
            actor: row.at(5)?,
            rationale: row.at(6)?,
            older_id: row.at(7)?,
            newer_id: row.at(8)?,
        })
    }
}

/// One erasure as the log keeps it: never erased content.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct ErasureEntry {
    pub id: String,
    #[serde(with = "crate::domain::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub at: Timestamp,
    pub actor: String,
    pub rationale: String,
    /// `ids`, `scope`, `source` or `subject`.
    pub selector: String,
    /// The scope or source named; none for ids and subjects.
    pub name: Option<String>,
    /// How many ids were named (ids only; 0 otherwise).
    pub ids: u64,
    pub erased: u64,
    pub derived_erased: u64,
    pub tombstones: u64,
    pub tables: TableCounts,
    pub took_ms: u64,
    /// The grant it erased within: its scopes (`None`: every scope) and
    /// highest sensitivity. Only a caller whose grant holds it reads it.
    #[serde(skip)]
    pub grant_scopes: Option<Vec<String>>,
    #[serde(skip)]
    pub max_sensitivity: Sensitivity,
}

impl ErasureEntry {
    /// An entry from the columns of [`ERASURE_COLUMNS`].
    pub(crate) fn read(row: &impl Columns) -> Result<ErasureEntry, StoreError> {
        let grant: Option<String> = row.at(12)?;
        Ok(ErasureEntry {
            id: row.at(0)?,
            at: row.time(1)?,
            actor: row.at(2)?,
            rationale: row.at(3)?,
            selector: row.at(4)?,
            name: row.at(5)?,
            ids: row.at::<i64>(6)? as u64,
            erased: row.at::<i64>(7)? as u64,
            derived_erased: row.at::<i64>(8)? as u64,
            tombstones: row.at::<i64>(9)? as u64,
            tables: row.json(10, "erasure counts")?,
            took_ms: row.at::<i64>(11)? as u64,
            grant_scopes: grant
                .map(|g| serde_json::from_str(&g))
                .transpose()
                .map_err(|err| StoreError::Corrupt(format!("erasure grant: {err}")))?,
            max_sensitivity: row.sensitivity(13)?,
        })
    }

    /// The rows of `erasure_scopes` that stand for this entry's grant:
    /// one per scope, `''` alone for a grant of unscoped records only,
    /// none for a grant of every scope.
    pub fn scope_rows(&self) -> Vec<String> {
        match &self.grant_scopes {
            None => Vec::new(),
            Some(scopes) if scopes.is_empty() => vec![String::new()],
            Some(scopes) => scopes.clone(),
        }
    }
}

/// The columns [`ErasureEntry::read`] decodes, in its order.
pub const ERASURE_COLUMNS: &str = "e.id, e.at, e.actor, e.rationale, e.selector, e.name, e.ids,
    e.erased, e.derived_erased, e.tombstones, e.tables_json, e.took_ms, e.grant_scopes,
    e.max_sensitivity";

/// Which entries of the erasure log a reader may read: those made within
/// its grant.
#[derive(Debug, Clone, PartialEq)]
pub struct LogReach {
    pub max_sensitivity: Sensitivity,
    /// `None`: the reader sees every scope, and reads every entry within
    /// its ceiling. Otherwise the scopes it sees, `''` (unscoped) among
    /// them: it reads the entries made within these alone.
    pub scopes: Option<Vec<String>>,
}

/// Where a page of the erasure log continues: after this entry (newest
/// first).
#[derive(Debug, Clone, PartialEq)]
pub struct LogPlace {
    pub at: i64,
    pub id: String,
}

impl LogPlace {
    /// Before every entry.
    pub fn start() -> LogPlace {
        LogPlace {
            at: i64::MAX,
            id: String::new(),
        }
    }

    /// The place as bytes, for the service to seal before a client sees it.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = self.at.to_be_bytes().to_vec();
        bytes.extend_from_slice(self.id.as_bytes());
        bytes
    }

    /// The place of [`LogPlace::to_bytes`]; `None` for other bytes.
    pub fn from_bytes(bytes: &[u8]) -> Option<LogPlace> {
        let (at, id) = bytes.split_at_checked(8)?;
        Some(LogPlace {
            at: i64::from_be_bytes(at.try_into().ok()?),
            id: String::from_utf8(id.to_vec()).ok()?,
        })
    }
}

/// An erasure of at least this many records is one of many: SQLite takes
/// their terms out of its full-text index by one merge when it ends rather
/// than row by row (at 1,000,000 records, a merge takes about as long as
/// `secure-delete` of 1,500 rows).
pub const BULK_ERASURE: usize = 1000;

pub trait ErasureStore {
    /// Records of `scope` that `trust` may see.
    fn erasable_in_scope(
        &mut self,
        scope: &str,
        trust: &TrustContext,
    ) -> Result<Vec<Erasable>, StoreError>;
    /// Records whose provenance names `source` as their creator, that
    /// `trust` may see.
    fn erasable_by_source(
        &mut self,
        source: &str,
        trust: &TrustContext,
    ) -> Result<Vec<Erasable>, StoreError>;
    /// Records of `memory_type` about `about` (facts of a subject, turns
    /// of a conversation), that `trust` may see.
    fn erasable_about(
        &mut self,
        about: &str,
        memory_type: MemoryType,
        trust: &TrustContext,
    ) -> Result<Vec<Erasable>, StoreError>;
    /// The records of these ids that exist, whoever may see them.
    fn erasable_ids(&mut self, ids: &[String]) -> Result<Vec<Erasable>, StoreError>;
    /// Records made from any of `ids`: with a `derived_from` relation to
    /// one (consolidation's facts, skills and plans, merges, forks), or
    /// citing one as a provenance source or evidence.
    fn derived_from_any(&mut self, ids: &[String]) -> Result<Vec<Erasable>, StoreError>;
    /// Of these records, those in a revision chain: the version each
    /// superseded and the one that superseded it.
    fn chain_neighbours(&mut self, keys: &[i64]) -> Result<Vec<ChainNeighbours>, StoreError>;
    /// The topic fields of these records, their topics, by topic key.
    fn topics_of_records(&mut self, keys: &[i64]) -> Result<Vec<i64>, StoreError>;
    /// The rows that hold these records' content, counted; `edges` their
    /// own relations only (see [`ErasureStore::linking_to_any`]).
    fn erasure_counts(&mut self, keys: &[i64]) -> Result<TableCounts, StoreError>;
    /// The records with a relation to any of `ids`, once per relation.
    fn linking_to_any(&mut self, ids: &[String]) -> Result<Vec<Erasable>, StoreError>;
    /// Deletes these records and every row that holds their content.
    /// `bulk`: they are part of an erasure of many ([`BULK_ERASURE`]), for
    /// which a backend may defer the clean-up of its indexes to the scrub
    /// that ends the erasure (`WriteConnection::scrub`).
    fn erase_records(&mut self, keys: &[i64], bulk: bool) -> Result<(), StoreError>;
    /// Of these topics, those left with no field; deletes them with their
    /// edges, names and index entries.
    fn erase_empty_topics(&mut self, keys: &[i64]) -> Result<(), StoreError>;
    /// How many of these topics have a vector.
    fn count_topic_vectors(&mut self, keys: &[i64]) -> Result<u64, StoreError>;
    /// Deletes these topics' vectors.
    fn drop_topic_vectors(&mut self, keys: &[i64]) -> Result<(), StoreError>;
    /// Topics titled `title` (normalised) that `trust` may see: their keys.
    fn topics_titled_any_scope(
        &mut self,
        title: &str,
        trust: &TrustContext,
    ) -> Result<Vec<i64>, StoreError>;
    /// The field records of topic `key`, every version.
    fn topic_field_records(&mut self, key: i64) -> Result<Vec<Erasable>, StoreError>;
    fn add_tombstone(&mut self, tombstone: &Tombstone) -> Result<(), StoreError>;
    fn tombstone(&mut self, id: &str) -> Result<Option<Tombstone>, StoreError>;
    /// The tombstone that `newer` superseded (`newer_id`), or that
    /// superseded `older` (`older_id`).
    fn tombstone_next_to(
        &mut self,
        older: Option<&str>,
        newer: Option<&str>,
    ) -> Result<Option<Tombstone>, StoreError>;
    fn log_erasure(&mut self, entry: &ErasureEntry) -> Result<(), StoreError>;
    /// The newest `limit` erasures `reach` may read after `after`, newest
    /// first: filtered as they are read, so what others erased never takes
    /// a reader's place.
    fn erasures(
        &mut self,
        reach: &LogReach,
        after: &LogPlace,
        limit: usize,
    ) -> Result<Vec<ErasureEntry>, StoreError>;
}
