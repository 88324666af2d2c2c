//! The service's notion of "now". Production reads the system clock; tests
//! hand in a manual clock so time-dependent behaviour is driven explicitly.

use std::sync::{Arc, Mutex};

use chrono::Utc;

use crate::domain::time::{truncate_to_micros, Timestamp};

#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> Timestamp + Send + Sync>);

impl Clock {
    pub fn system() -> Clock {
        Clock(Arc::new(Utc::now))
    }

    /// A clock that stays where it is set; the handle moves it.
    pub fn manual(start: Timestamp) -> (Clock, ManualClock) {
        let now = Arc::new(Mutex::new(start));
        let read = now.clone();
        (
            Clock(Arc::new(move || *read.lock().expect("clock lock"))),
            ManualClock(now),
        )
    }

    /// Now, at the precision storage keeps.
    pub fn now(&self) -> Timestamp {
        truncate_to_micros((self.0)())
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Clock")
    }
}

#[derive(Clone)]
pub struct ManualClock(Arc<Mutex<Timestamp>>);

impl ManualClock {
    pub fn set(&self, now: Timestamp) {
        *self.0.lock().expect("clock lock") = now;
    }

    pub fn advance(&self, by: chrono::Duration) {
        let mut now = self.0.lock().expect("clock lock");
        *now += by;
    }

    pub fn now(&self) -> Timestamp {
        *self.0.lock().expect("clock lock")
    }
}
