//! The embedder's reads and writes: records still without a vector, and
//! the vectors made for them.

use super::job::Job;
use super::ServiceError;
use crate::domain::time::Timestamp;
use crate::store::{Embedded, StoreError, ToEmbed, Transaction};

/// Up to `limit` records after `after_key` with no vector; those with no
/// search text are skipped (there is nothing to embed). The key to go on
/// from is answered with them, `None` when there are none left.
pub fn pending(
    tx: &mut dyn Transaction,
    after_key: i64,
    limit: usize,
    now: Timestamp,
) -> Result<(Vec<ToEmbed>, Option<i64>), ServiceError> {
    let found = tx.to_embed(after_key, limit, now)?;
    let last = found.last().map(|t| t.key);
    let todo = found
        .into_iter()
        .filter(|t| !t.text.trim().is_empty())
        .collect();
    Ok((todo, last))
}

/// What storing a batch of vectors did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stored {
    pub stored: usize,
    /// The record changed, went, or got a vector meanwhile.
    pub stale: usize,
    /// The vector does not have the database's dimensions.
    pub misfit: usize,
}

/// Stores the vectors that still apply.
pub fn store(tx: &mut dyn Transaction, embedded: &[Embedded]) -> Result<Stored, ServiceError> {
    let mut report = Stored::default();
    for item in embedded {
        match tx.store_embedded(item) {
            Ok(true) => report.stored += 1,
            Ok(false) => report.stale += 1,
            // Checked before anything is written: the rest can go on.
            Err(StoreError::Dimensions { .. }) => report.misfit += 1,
            Err(other) => return Err(other.into()),
        }
    }
    Ok(report)
}

/// [`pending`] as a read job.
pub struct PendingEmbeddings {
    pub after_key: i64,
    pub limit: usize,
    pub now: Timestamp,
}

impl Job for PendingEmbeddings {
    type Output = (Vec<ToEmbed>, Option<i64>);
    const NAME: &'static str = "pending_embeddings";

    fn run(self, tx: &mut dyn Transaction) -> Result<(Vec<ToEmbed>, Option<i64>), ServiceError> {
        pending(tx, self.after_key, self.limit, self.now)
    }
}

/// [`store`] as a write job.
pub struct StoreEmbeddings {
    pub embedded: Vec<Embedded>,
}

impl Job for StoreEmbeddings {
    type Output = Stored;
    const NAME: &'static str = "store_embeddings";

    fn run(self, tx: &mut dyn Transaction) -> Result<Stored, ServiceError> {
        store(tx, &self.embedded)
    }
}
