//! What the `loadtests` commands share with engram's own tests: the HTTP
//! client, the deterministic test embedder, and the recall and placement
//! evaluations, which the test suite runs on the project's datasets.

pub mod conversations;
pub mod dialogue;
pub mod embed;
pub mod http;
pub mod placement;
pub mod recall;
