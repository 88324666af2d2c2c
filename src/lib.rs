//! engram: a memory service that many agents share over HTTP.
//!
//! Requests enter through `http`, which parses them and sends messages to
//! the `actors`; the actors check them into `domain` types and run the
//! memory operations of `service` on the storage threads, against the
//! `store` traits, whose SQLite and PostgreSQL implementations are the only
//! code that knows SQL. docs/architecture.md walks through it.

pub mod actors;
pub mod auth;
pub mod cli;
pub mod clock;
pub mod config;
pub mod domain;
pub mod embeddings;
pub mod error;
pub mod http;
pub mod memory;
pub mod metrics;
pub mod service;
pub mod startup;
pub mod store;
pub mod telemetry;
pub mod tls;
