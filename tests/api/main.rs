//! Black-box tests: each starts the real server on a random port with a
//! fresh database in a temporary directory and talks to it over HTTP;
//! except the contract suites (`store_contract`, `engine_contract`), which
//! open the store itself, on whichever backend the tests run on.

mod auth;
mod backend;
mod backup;
mod bounds;
mod conversations;
mod crash;
mod docs;
mod encryption;
mod engine_contract;
mod erasure;
mod faults;
mod fuzz;
mod hardening;
mod health;
mod helpers;
mod ingest;
mod instances;
mod jobs;
mod keys;
mod maintenance;
mod matrix;
mod mcp;
mod migrate;
mod openapi;
mod persistence;
mod placement;
mod records;
mod relevance;
mod retrieve;
mod revisions;
mod storage;
mod store_contract;
mod telemetry;
mod tenants;
mod tls;
mod topic_links;
mod topics;
mod ui;
mod vectors;
