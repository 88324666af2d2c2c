//! Domain types and rules: records, payloads, trust, policy, validation and
//! selection. Nothing here does I/O, so every rule is unit-testable; the
//! types are built valid (requests are checked as they are turned into
//! records) and know nothing of HTTP or SQL.

pub mod access;
pub mod analysis;
pub mod builder;
pub mod consolidation;
pub mod conversation;
pub mod decay;
pub mod erasure;
pub mod ids;
pub mod ingest;
pub mod new_record;
pub mod payload;
pub mod policy;
pub mod record;
pub mod relevance;
pub mod requests;
pub mod resolution;
pub mod retrieval;
pub mod revision;
pub mod schedule;
pub mod schema;
pub mod search;
pub mod selection;
pub mod strict;
pub mod time;
pub mod topic;
pub mod trust;
pub mod validate;
pub mod vector;
