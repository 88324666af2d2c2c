//! Salience decay: how a memory fades unless it is used.
//!
//! A record's salience is computed from an anchor — the salience it had at
//! a moment (creation, last reinforcement, or the last explicit change) —
//! and the time since:
//!
//! - exponential (also `custom`): `s · 2^(−Δt / half_life)`
//! - linear: `s − (Δt / half_life) · s`
//!
//! floored at `min_salience`; a record older than `max_age_seconds` (from
//! `created_at`) is at 0. Pinned records never decay. Storage keeps the
//! value as of the last sweep for ordering, and reads compute the current
//! value, so what a client sees is never staler than the clock.

use super::record::{DecayCurve, DecayProfile, DeletionPolicy, MemoryRecord, Status};
use super::time::Timestamp;

/// Below this, a decayed record may be pruned.
pub const PRUNE_THRESHOLD: f64 = 0.001;

/// A sweep rewrites a stored salience only when it moved at least this much,
/// so records that barely changed cost no write.
pub const SWEEP_EPSILON: f64 = 1e-4;

/// The salience a record had at a moment, from which decay is measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Anchor {
    pub salience: f64,
    pub at: Timestamp,
}

/// What decay needs to know of a record.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecayState<'a> {
    pub anchor: Anchor,
    pub profile: &'a DecayProfile,
    pub pinned: bool,
    pub created_at: Timestamp,
}

/// The salience at `now`.
pub fn salience_at(state: &DecayState<'_>, now: Timestamp) -> f64 {
    let start = state.anchor.salience;
    if state.pinned {
        return start;
    }
    if let Some(max_age) = state.profile.max_age_seconds {
        if (now - state.created_at).num_seconds() >= max_age {
            return 0.0;
        }
    }
    let elapsed = (now - state.anchor.at).num_milliseconds().max(0) as f64 / 1000.0;
    let half_life = state.profile.half_life_seconds.max(1) as f64;
    let ratio = elapsed / half_life;
    let decayed = match state.profile.curve {
        DecayCurve::Linear => start - ratio * start,
        DecayCurve::Exponential | DecayCurve::Custom => start * (-ratio).exp2(),
    };
    // The floor never lifts a record that was already below it.
    decayed.max(state.profile.min_salience.min(start)).max(0.0)
}

/// The salience at `now` of a record that was just built: its salience is
/// the value it had at its last reinforcement, which a client may date in
/// the past.
pub fn salience_of_new(record: &MemoryRecord, now: Timestamp) -> f64 {
    salience_at(
        &DecayState {
            anchor: Anchor {
                salience: record.salience,
                at: record.lifecycle.last_reinforced_at,
            },
            profile: &record.lifecycle.decay,
            pinned: record.lifecycle.pinned,
            created_at: record.created_at,
        },
        now,
    )
}

/// Whether the scheduler may delete a record whose salience decayed to
/// `salience`: only under `auto_prune`, never pinned or retracted records,
/// and never records in a revision chain (checked by storage).
pub fn prunable(salience: f64, policy: DeletionPolicy, pinned: bool, status: Status) -> bool {
    salience < PRUNE_THRESHOLD
        && policy == DeletionPolicy::AutoPrune
        && !pinned
        && status != Status::Retracted
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::time::parse_rfc3339;
    use chrono::Duration;

    fn t0() -> Timestamp {
        parse_rfc3339("2026-01-01T00:00:00Z").unwrap()
    }

    fn profile(curve: DecayCurve, min: f64, max_age: Option<i64>) -> DecayProfile {
        DecayProfile {
            curve,
            half_life_seconds: 3600,
            min_salience: min,
            max_age_seconds: max_age,
            reinforcement_gain: 0.1,
        }
    }

    fn at(profile: &DecayProfile, pinned: bool, hours: i64) -> f64 {
        let state = DecayState {
            anchor: Anchor {
                salience: 0.8,
                at: t0(),
            },
            profile,
            pinned,
            created_at: t0(),
        };
        salience_at(&state, t0() + Duration::hours(hours))
    }

    #[test]
    fn exponential_halves_every_half_life() {
        let p = profile(DecayCurve::Exponential, 0.0, None);
        assert_eq!(at(&p, false, 0), 0.8);
        assert!((at(&p, false, 1) - 0.4).abs() < 1e-12);
        assert!((at(&p, false, 3) - 0.1).abs() < 1e-12);
    }

    #[test]
    fn custom_curves_decay_exponentially() {
        let custom = profile(DecayCurve::Custom, 0.0, None);
        let exponential = profile(DecayCurve::Exponential, 0.0, None);
        assert_eq!(at(&custom, false, 2), at(&exponential, false, 2));
    }

    #[test]
    fn linear_loses_its_start_value_over_one_half_life() {
        let p = DecayProfile {
            half_life_seconds: 4 * 3600,
            ..profile(DecayCurve::Linear, 0.0, None)
        };
        assert!((at(&p, false, 1) - 0.6).abs() < 1e-12);
        assert!((at(&p, false, 2) - 0.4).abs() < 1e-12);
        assert_eq!(at(&p, false, 5), 0.0);
    }

    #[test]
    fn the_floor_holds_and_never_lifts() {
        let p = profile(DecayCurve::Exponential, 0.3, None);
        assert_eq!(at(&p, false, 10), 0.3);
        let low = profile(DecayCurve::Linear, 0.9, None);
        assert_eq!(
            at(&low, false, 10),
            0.8,
            "a record below its floor stays where it is"
        );
    }

    #[test]
    fn max_age_sends_salience_to_zero_even_above_the_floor() {
        let p = profile(DecayCurve::Exponential, 0.3, Some(2 * 3600));
        assert!(at(&p, false, 1) > 0.3);
        assert_eq!(at(&p, false, 2), 0.0);
    }

    #[test]
    fn pinned_records_never_decay() {
        let p = profile(DecayCurve::Exponential, 0.0, Some(60));
        assert_eq!(at(&p, true, 1000), 0.8);
    }

    #[test]
    fn only_auto_prune_records_that_decayed_away_are_prunable() {
        assert!(prunable(
            0.0005,
            DeletionPolicy::AutoPrune,
            false,
            Status::Active
        ));
        assert!(!prunable(
            0.002,
            DeletionPolicy::AutoPrune,
            false,
            Status::Active
        ));
        assert!(!prunable(
            0.0,
            DeletionPolicy::ManualOnly,
            false,
            Status::Active
        ));
        assert!(!prunable(0.0, DeletionPolicy::Never, false, Status::Active));
        assert!(!prunable(
            0.0,
            DeletionPolicy::AutoPrune,
            true,
            Status::Active
        ));
        assert!(!prunable(
            0.0,
            DeletionPolicy::AutoPrune,
            false,
            Status::Retracted
        ));
    }
}
