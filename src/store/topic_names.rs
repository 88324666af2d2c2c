//! What `auto` placement knows of a topic's names, and its summary's
//! history: the other titles observations named it by (aliases), and each
//! summary it has had.

use crate::domain::time::Timestamp;

use crate::store::error::StoreError;
use crate::store::topics::KeyedTopic;

/// One summary a topic had, from `valid_from` until the next.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryVersion {
    pub seq: i64,
    pub summary: String,
    pub valid_from: Timestamp,
    /// Who set it, as the request said.
    pub source: String,
    pub why_changed: Option<String>,
}

pub trait TopicNameStore {
    /// Records `alias` as another title of topic `key` (normalised as
    /// titles are); false when it was one already.
    fn add_alias(&mut self, key: i64, alias: &str, at: Timestamp) -> Result<bool, StoreError>;
    /// Topics not archived in `scope` one of whose aliases is `title`
    /// (normalised).
    fn topics_aliased(
        &mut self,
        title: &str,
        scope: Option<&str>,
    ) -> Result<Vec<KeyedTopic>, StoreError>;
    /// Adds the next version of topic `key`'s summary.
    fn add_summary(&mut self, key: i64, version: &SummaryVersion) -> Result<(), StoreError>;
    /// Every kept summary of topic `key`, oldest first.
    fn summaries(&mut self, key: i64) -> Result<Vec<SummaryVersion>, StoreError>;
}
