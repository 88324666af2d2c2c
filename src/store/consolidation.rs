//! Consolidation's bookkeeping in storage ([`ConsolidationStore`]).

use crate::domain::time::Timestamp;
use crate::store::error::StoreError;

/// A consolidation step, recorded per record once it has used it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Compressed,
    Semantic,
    Competence,
    PlanGraph,
}

impl Step {
    pub fn as_str(self) -> &'static str {
        match self {
            Step::Compressed => "compressed",
            Step::Semantic => "semantic",
            Step::Competence => "competence",
            Step::PlanGraph => "plan_graph",
        }
    }
}

/// An episode a consolidation step has not used yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Episode {
    pub key: i64,
    pub id: String,
}

/// An episode seen in a group of a step, and what the step noted of it
/// (for skills, the outcome).
#[derive(Debug, Clone, PartialEq)]
pub struct Sighting {
    pub key: i64,
    pub detail: Option<String>,
}

/// Consolidation's bookkeeping: which episodes each step has seen, what it made of them.
pub trait ConsolidationStore {
    /// Episodes (not retracted, not pinned) `step` has not used, created
    /// before `created_before`, after `after_key` in key order.
    fn unmarked_episodes(
        &mut self,
        step: Step,
        created_before: Timestamp,
        after_key: i64,
        limit: usize,
    ) -> Result<Vec<Episode>, StoreError>;
    fn mark(&mut self, key: i64, step: Step) -> Result<(), StoreError>;
    /// Records that episode `key` belongs to group `group_key` of `step`.
    fn add_sighting(
        &mut self,
        step: Step,
        group_key: &str,
        key: i64,
        detail: Option<&str>,
    ) -> Result<(), StoreError>;
    /// Every episode seen in a group, oldest first.
    fn sightings(&mut self, step: Step, group_key: &str) -> Result<Vec<Sighting>, StoreError>;
    /// The active record consolidation made of a group, if any: its id.
    fn output(&mut self, step: Step, group_key: &str) -> Result<Option<String>, StoreError>;
    fn set_output(&mut self, step: Step, group_key: &str, id: &str) -> Result<(), StoreError>;
    /// A record merged into another hands its groups over to it.
    fn move_outputs(&mut self, from_id: &str, to_id: &str) -> Result<(), StoreError>;
    /// Groups of active facts with the same subject, predicate, object and
    /// scope, oldest first within each: their ids.
    fn duplicate_fact_groups(&mut self) -> Result<Vec<Vec<String>>, StoreError>;
}
