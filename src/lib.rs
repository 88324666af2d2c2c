//! engram: a memory service that many agents share over HTTP.
//!
//! Requests enter through `http`, which parses them into `domain` types and
//! sends messages to the `actors`; the storage actors are the only code that
//! touches SQLite, through the plain SQL functions in `store`.

pub mod actors;
pub mod cli;
pub mod clock;
pub mod config;
pub mod domain;
pub mod error;
pub mod http;
pub mod jobs;
pub mod metrics;
pub mod startup;
pub mod store;
pub mod telemetry;
