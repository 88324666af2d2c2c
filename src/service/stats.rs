//! Reads about the store itself: whether it answers, and the memory
//! aggregates of `GET /v1/metrics`.

use super::job::Job;
use super::ServiceError;
use crate::domain::time::Timestamp;
use crate::store::{MemoryStats, Transaction};

/// Whether the database answers a query.
pub struct Ping;

impl Job for Ping {
    type Output = ();
    const NAME: &'static str = "ping";

    fn run(self, tx: &mut dyn Transaction) -> Result<(), ServiceError> {
        Ok(tx.ping()?)
    }
}

/// The memory aggregates as of `now`.
pub struct ReadStats {
    pub now: Timestamp,
}

impl Job for ReadStats {
    type Output = MemoryStats;
    const NAME: &'static str = "read_stats";

    fn run(self, tx: &mut dyn Transaction) -> Result<MemoryStats, ServiceError> {
        Ok(tx.memory_stats(self.now)?)
    }
}
