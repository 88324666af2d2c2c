//! Ingestion policy: the defaults a new record gets (sensitivity,
//! confidence by source, salience, decay profile, deletion policy). Records
//! that clients send whole are completed by it in `domain::new_record`.

use serde::Deserialize;

use super::record::{DecayCurve, DecayProfile, DeletionPolicy, Lifecycle, MemoryType, Sensitivity};
use super::time::Timestamp;

/// The kinds of data agents send, each classified into one memory type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CandidateKind {
    Event,
    ToolOutput,
    Observation,
    Outcome,
    WorkingState,
}

impl CandidateKind {
    /// Classification is fixed by the kind; payload content is not looked at.
    pub fn memory_type(self) -> MemoryType {
        match self {
            CandidateKind::Event | CandidateKind::ToolOutput | CandidateKind::Outcome => {
                MemoryType::Episodic
            }
            CandidateKind::Observation => MemoryType::Semantic,
            CandidateKind::WorkingState => MemoryType::Working,
        }
    }

    /// How reliable the source is considered to be.
    pub fn confidence(self) -> f64 {
        match self {
            CandidateKind::Event => 0.8,
            CandidateKind::ToolOutput => 0.9,
            CandidateKind::Observation => 0.7,
            CandidateKind::Outcome => 0.85,
            CandidateKind::WorkingState => 1.0,
        }
    }

    /// Working state has no provenance kind of its own in the reference;
    /// it is recorded as an event.
    pub fn provenance_kind(self) -> super::record::ProvenanceKind {
        use super::record::ProvenanceKind;
        match self {
            CandidateKind::Event | CandidateKind::WorkingState => ProvenanceKind::Event,
            CandidateKind::ToolOutput => ProvenanceKind::ToolCall,
            CandidateKind::Observation => ProvenanceKind::Observation,
            CandidateKind::Outcome => ProvenanceKind::Outcome,
        }
    }
}

/// Read from the `[policy]` section of the configuration.
#[derive(Debug, Clone, PartialEq, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    pub default_sensitivity: Sensitivity,
    pub initial_salience: f64,
    pub deletion_policy: DeletionPolicy,
    pub reinforcement_gain: f64,
    /// Reinforcement never lifts salience above this.
    pub max_salience: f64,
    pub min_salience: f64,
    pub episodic_half_life_seconds: i64,
    pub working_half_life_seconds: i64,
    pub semantic_half_life_seconds: i64,
    pub competence_half_life_seconds: i64,
    pub plan_graph_half_life_seconds: i64,
    /// Most payload bytes the sources of one merge may hold together: a
    /// merge loads them all while holding the writer, which every other
    /// write waits for.
    pub max_merge_bytes: u64,
}

impl Default for Policy {
    /// The reference defaults; the embedded configuration repeats them.
    fn default() -> Self {
        Policy {
            default_sensitivity: Sensitivity::Low,
            initial_salience: 1.0,
            deletion_policy: DeletionPolicy::AutoPrune,
            reinforcement_gain: 0.1,
            max_salience: 1.0,
            min_salience: 0.0,
            episodic_half_life_seconds: 3600,
            working_half_life_seconds: 86_400,
            semantic_half_life_seconds: 2_592_000,
            competence_half_life_seconds: 2_592_000,
            plan_graph_half_life_seconds: 2_592_000,
            max_merge_bytes: 32 * 1024 * 1024,
        }
    }
}

impl Policy {
    pub fn half_life_seconds(&self, memory_type: MemoryType) -> i64 {
        match memory_type {
            MemoryType::Episodic => self.episodic_half_life_seconds,
            MemoryType::Working => self.working_half_life_seconds,
            MemoryType::Semantic => self.semantic_half_life_seconds,
            MemoryType::Competence => self.competence_half_life_seconds,
            MemoryType::PlanGraph => self.plan_graph_half_life_seconds,
        }
    }

    pub fn decay_profile(&self, memory_type: MemoryType) -> DecayProfile {
        DecayProfile {
            curve: DecayCurve::Exponential,
            half_life_seconds: self.half_life_seconds(memory_type),
            min_salience: self.min_salience,
            max_age_seconds: None,
            reinforcement_gain: self.reinforcement_gain,
        }
    }

    pub fn lifecycle(&self, memory_type: MemoryType, now: Timestamp) -> Lifecycle {
        Lifecycle {
            decay: self.decay_profile(memory_type),
            last_reinforced_at: now,
            pinned: false,
            deletion_policy: self.deletion_policy,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification_and_confidence_follow_the_reference() {
        assert_eq!(
            CandidateKind::ToolOutput.memory_type(),
            MemoryType::Episodic
        );
        assert_eq!(
            CandidateKind::Observation.memory_type(),
            MemoryType::Semantic
        );
        assert_eq!(CandidateKind::WorkingState.confidence(), 1.0);
        assert_eq!(CandidateKind::Outcome.confidence(), 0.85);
        let policy = Policy::default();
        assert_eq!(policy.half_life_seconds(MemoryType::Working), 86_400);
        assert_eq!(policy.half_life_seconds(MemoryType::PlanGraph), 2_592_000);
    }
}
