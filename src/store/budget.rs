//! A read's work budget: a read stops, and frees its reading thread, once
//! its deadline passes or its caller stops waiting for it (the client went
//! away). Without it a request whose answer nobody will read goes on
//! holding one of the few reading threads, and a handful of heavy ones
//! starve every other read.
//!
//! The reading thread sets the budget of the read it runs ([`within`]);
//! the backends look at it as they work: SQLite every few thousand steps
//! of its engine, PostgreSQL before each statement (its statement timeout
//! bounds one statement), and the service's own walks before each node.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::store::error::StoreError;

/// Tells whether whoever a read is for (a request's client) still waits
/// for it.
pub trait Waiting: Send + Sync {
    /// Nobody waits any more. Called often, from the reading thread: it
    /// must be cheap.
    fn gone(&self) -> bool;
}

pub type Waiter = Arc<dyn Waiting>;

tokio::task_local! {
    /// The waiter of the request this task works for (set by the HTTP
    /// layer); reads made within the task stop when it is gone.
    pub static WAITER: Waiter;
}

/// The waiter of the request this task works for, if any.
pub fn waiter() -> Option<Waiter> {
    WAITER.try_with(Clone::clone).ok()
}

/// How long a read may go on, and whether its caller still waits.
#[derive(Clone)]
pub struct Budget {
    stop: Arc<AtomicBool>,
    deadline: Instant,
    waiter: Option<Waiter>,
}

impl std::fmt::Debug for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Budget")
            .field("stop", &self.stop)
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

/// Ends its budget when dropped: held by whoever waits for the read, so
/// the read stops when they stop waiting, for whatever reason.
#[derive(Debug)]
pub struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl Budget {
    /// A budget that ends at `deadline`, or sooner when the guard is
    /// dropped or `waiter` is gone.
    pub fn until(deadline: Instant, waiter: Option<Waiter>) -> (Budget, StopOnDrop) {
        let stop = Arc::new(AtomicBool::new(false));
        (
            Budget {
                stop: stop.clone(),
                deadline,
                waiter,
            },
            StopOnDrop(stop),
        )
    }

    pub fn spent(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
            || Instant::now() >= self.deadline
            || self.waiter.as_ref().is_some_and(|w| w.gone())
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Budget>> = const { RefCell::new(None) };
}

/// Clears the thread's budget when the read ends, however it ends.
struct Clear;

impl Drop for Clear {
    fn drop(&mut self) {
        CURRENT.with(|current| current.borrow_mut().take());
    }
}

/// Runs `work` with `budget` as this thread's.
pub fn within<T>(budget: Budget, work: impl FnOnce() -> T) -> T {
    CURRENT.with(|current| *current.borrow_mut() = Some(budget));
    let _clear = Clear;
    work()
}

/// Whether this thread's read has spent its budget (never outside a read:
/// writes and start-up have none).
pub fn spent() -> bool {
    CURRENT.with(|current| current.borrow().as_ref().is_some_and(Budget::spent))
}

/// `Err(Stopped)` once this thread's read has spent its budget.
pub fn check() -> Result<(), StoreError> {
    if spent() {
        Err(StoreError::Stopped)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_budget_ends_at_its_deadline_or_when_its_caller_stops_waiting() {
        assert!(!spent(), "no read, no budget");
        let (budget, guard) = Budget::until(Instant::now() + Duration::from_secs(60), None);
        within(budget.clone(), || {
            assert!(check().is_ok());
            drop(guard);
            assert!(matches!(check(), Err(StoreError::Stopped)));
        });
        assert!(!spent(), "cleared when the read ends");
        let (late, _guard) = Budget::until(Instant::now(), None);
        assert!(within(late, spent));
        assert!(budget.spent());
    }

    struct Gone(AtomicBool);

    impl Waiting for Gone {
        fn gone(&self) -> bool {
            self.0.load(Ordering::Relaxed)
        }
    }

    #[test]
    fn a_budget_ends_when_nobody_waits_for_the_read() {
        let waiter = Arc::new(Gone(AtomicBool::new(false)));
        let (budget, _guard) = Budget::until(
            Instant::now() + Duration::from_secs(60),
            Some(waiter.clone()),
        );
        assert!(!budget.spent());
        waiter.0.store(true, Ordering::Relaxed);
        assert!(budget.spent());
    }
}
