//! The memory statistics of `GET /v1/metrics`, from the tallies a
//! backend's SQL counts.

use std::collections::BTreeMap;

use crate::domain::record::MemoryType;
use crate::domain::record::Sensitivity;
use crate::domain::time::Timestamp;
use crate::store::error::StoreError;
use serde::Serialize;

/// What a backend counts, summed and averaged in SQL.
pub(crate) struct Tallies {
    pub total: i64,
    pub avg_salience: f64,
    pub avg_confidence: f64,
    pub active: i64,
    /// Records created in the last 24 hours.
    pub recent: i64,
    /// Records per salience range, [`SALIENCE_BUCKETS`] in order.
    pub buckets: [i64; 5],
    /// Every memory type, zero included.
    pub records_by_type: BTreeMap<&'static str, u64>,
    pub pinned: i64,
    /// Audit entries not imported, reinforcements and revisions among them.
    pub audit_total: i64,
    pub reinforcements: i64,
    pub revisions: i64,
    /// Sums over competence records, as floats (they cannot overflow).
    pub successes: f64,
    pub failures: f64,
    pub plan_reuse: f64,
    pub records_by_sensitivity: BTreeMap<&'static str, u64>,
    pub records_by_status: BTreeMap<&'static str, u64>,
    pub recent_activity: Vec<Activity>,
}

/// SQL counts are never negative.
pub(crate) fn count(value: i64) -> u64 {
    value.max(0) as u64
}

fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        finite(part as f64 / whole as f64)
    }
}

/// Averages and sums are reported even over data written before a limit
/// existed: a non-finite value becomes 0 rather than `null` or `inf`.
fn finite(value: f64) -> f64 {
    if value.is_finite() {
        value
    } else {
        0.0
    }
}

/// `TOTAL()` sums as a float, so it cannot overflow the way `SUM()` of
/// integers does; the count saturates.
fn float_count(value: f64) -> u64 {
    if value.is_finite() && value > 0.0 {
        value as u64
    } else {
        0
    }
}

impl Tallies {
    pub fn into_stats(self) -> MemoryStats {
        let (total, recent, active, pinned) = (
            count(self.total),
            count(self.recent),
            count(self.active),
            count(self.pinned),
        );
        let (audit_total, reinforcements, revisions) = (
            count(self.audit_total),
            count(self.reinforcements),
            count(self.revisions),
        );
        let (successes, failures) = (float_count(self.successes), float_count(self.failures));
        MemoryStats {
            total_records: total,
            records_by_type: self.records_by_type,
            avg_salience: finite(self.avg_salience),
            avg_confidence: finite(self.avg_confidence),
            salience_distribution: SALIENCE_BUCKETS
                .into_iter()
                .zip(self.buckets.map(count))
                .collect(),
            active_records: active,
            pinned_records: pinned,
            total_audit_entries: audit_total,
            growth_rate: ratio(recent, total),
            retrieval_usefulness: ratio(reinforcements, audit_total),
            competence_success_rate: ratio(successes, successes.saturating_add(failures)),
            plan_reuse_frequency: finite(self.plan_reuse),
            revision_rate: ratio(revisions, audit_total),
            records_by_sensitivity: self.records_by_sensitivity,
            records_by_status: self.records_by_status,
            recent_activity: self.recent_activity,
        }
    }
}

/// Aggregates over the whole memory for `GET /v1/metrics`.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct MemoryStats {
    pub total_records: u64,
    /// Every memory type, zero when there are none.
    pub records_by_type: BTreeMap<&'static str, u64>,
    /// Over the salience stored at the last decay sweep.
    pub avg_salience: f64,
    pub avg_confidence: f64,
    /// Records per salience range, each 0.2 wide; the last includes 1.0
    /// and anything above.
    pub salience_distribution: BTreeMap<&'static str, u64>,
    pub active_records: u64,
    pub pinned_records: u64,
    pub total_audit_entries: u64,
    /// Share of records created in the last 24 hours.
    pub growth_rate: f64,
    /// Share of audit actions that are reinforcements.
    pub retrieval_usefulness: f64,
    /// Successes over all recorded runs of competence records.
    pub competence_success_rate: f64,
    /// Mean `metrics.execution_count` of plan graphs.
    pub plan_reuse_frequency: f64,
    /// Share of audit actions that revise knowledge (revise, fork, merge,
    /// delete).
    pub revision_rate: f64,
    /// Every sensitivity level, zero when there are none.
    pub records_by_sensitivity: BTreeMap<&'static str, u64>,
    /// Every status, zero when there are none.
    pub records_by_status: BTreeMap<&'static str, u64>,
    /// The newest audit entries, newest first (at most
    /// [`RECENT_ACTIVITY`]): what happened, by whom, to what kind of
    /// record. No record ids or rationales: metrics are not trust-gated.
    pub recent_activity: Vec<Activity>,
}

pub const RECENT_ACTIVITY: usize = 20;

/// One audit entry as the metrics show it.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Activity {
    #[serde(with = "crate::domain::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub at: Timestamp,
    pub action: String,
    pub actor: String,
    #[serde(rename = "type")]
    pub memory_type: MemoryType,
    pub sensitivity: Sensitivity,
}

pub const SALIENCE_BUCKETS: [&str; 5] = ["0.0-0.2", "0.2-0.4", "0.4-0.6", "0.6-0.8", "0.8-1.0"];

/// The memory aggregates of `GET /v1/metrics`.
pub trait StatsStore {
    fn memory_stats(&mut self, now: Timestamp) -> Result<MemoryStats, StoreError>;
}
