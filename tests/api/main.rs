//! Black-box tests: each starts the real server on a random port with a
//! fresh database in a temporary directory and talks to it over HTTP.

mod auth;
mod backup;
mod bounds;
mod crash;
mod docs;
mod encryption;
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
mod telemetry;
mod tenants;
mod tls;
mod topic_links;
mod topics;
mod ui;
mod vectors;
