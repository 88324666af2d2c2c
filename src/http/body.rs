//! Request bodies in flight: all of them together are bounded, so many
//! slow or large uploads cannot exhaust memory; one is read within a time
//! limit, so a client trickling bytes cannot hold a connection and its
//! buffer forever.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Bytes of request bodies being read or handled, against a limit.
#[derive(Debug)]
pub struct BodyBudget {
    in_flight: AtomicUsize,
    limit: usize,
}

impl BodyBudget {
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(BodyBudget {
            in_flight: AtomicUsize::new(0),
            limit,
        })
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// An empty permit, to be grown as bytes are promised or arrive.
    pub fn permit(self: &Arc<Self>) -> BodyPermit {
        BodyPermit {
            budget: self.clone(),
            bytes: 0,
        }
    }

    fn try_take(&self, bytes: usize) -> bool {
        self.in_flight
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |current| {
                current
                    .checked_add(bytes)
                    .filter(|total| *total <= self.limit)
            })
            .is_ok()
    }
}

/// Bytes one request holds of the budget; given back when dropped (when
/// the request is answered).
#[derive(Debug)]
pub struct BodyPermit {
    budget: Arc<BodyBudget>,
    bytes: usize,
}

impl BodyPermit {
    /// Holds at least `bytes` in all; false when the budget cannot spare
    /// them (what is already held stays held).
    pub fn hold(&mut self, bytes: usize) -> bool {
        let more = bytes.saturating_sub(self.bytes);
        if more == 0 {
            return true;
        }
        if self.budget.try_take(more) {
            self.bytes += more;
            true
        } else {
            false
        }
    }
}

impl Drop for BodyPermit {
    fn drop(&mut self) {
        self.budget
            .in_flight
            .fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permits_share_the_budget_and_give_it_back() {
        let budget = BodyBudget::new(100);
        let mut a = budget.permit();
        assert!(a.hold(60));
        assert!(a.hold(40), "growing to 40 is within what it holds");
        let mut b = budget.permit();
        assert!(!b.hold(50), "60 + 50 > 100");
        assert!(b.hold(40));
        assert_eq!(budget.in_flight(), 100);
        drop(a);
        assert_eq!(budget.in_flight(), 40);
        assert!(b.hold(100));
        drop(b);
        assert_eq!(budget.in_flight(), 0);
    }
}
