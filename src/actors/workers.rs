//! One actor per worker arbiter: CPU work of the request actors runs on as
//! many threads as there are cores, each actor on its own arbiter, with
//! messages handed to them in turn.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use actix::{Actor, Addr, ArbiterHandle, Context};

/// The arbiters the request actors run on; stopped with the service.
pub struct WorkerArbiters(Vec<actix::Arbiter>);

impl WorkerArbiters {
    /// `count` arbiters (at least one), each its own thread.
    pub fn start(count: usize) -> Self {
        WorkerArbiters((0..count.max(1)).map(|_| actix::Arbiter::new()).collect())
    }

    pub fn handles(&self) -> Vec<ArbiterHandle> {
        self.0.iter().map(actix::Arbiter::handle).collect()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Stops every arbiter once it has handled what it holds.
    pub fn stop(self) {
        for arbiter in self.0 {
            arbiter.stop();
            let _ = arbiter.join();
        }
    }
}

/// One instance of `A` per arbiter; cheap to clone.
pub struct Workers<A: Actor<Context = Context<A>>> {
    addrs: Arc<[Addr<A>]>,
    next: Arc<AtomicUsize>,
}

impl<A: Actor<Context = Context<A>>> Clone for Workers<A> {
    fn clone(&self) -> Self {
        Workers {
            addrs: self.addrs.clone(),
            next: self.next.clone(),
        }
    }
}

impl<A: Actor<Context = Context<A>>> Workers<A> {
    /// Starts one actor made by `make` on each arbiter.
    pub fn start<F>(arbiters: &WorkerArbiters, make: F) -> Self
    where
        F: Fn() -> A + Clone + Send + 'static,
    {
        let addrs: Vec<Addr<A>> = arbiters
            .handles()
            .iter()
            .map(|arbiter| {
                let make = make.clone();
                A::start_in_arbiter(arbiter, move |_| make())
            })
            .collect();
        Workers {
            addrs: addrs.into(),
            next: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// The next actor in turn.
    pub fn next(&self) -> &Addr<A> {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.addrs.len();
        &self.addrs[i]
    }
}
