//! What the `loadtests` commands share with engram's own tests: the HTTP
//! client, the deterministic test embedder, and the recall evaluation,
//! which the test suite runs on the project's dataset.

pub mod embed;
pub mod http;
pub mod recall;
