//! API keys: their secrets and how they are checked. A key's secret is
//! shown once, when it is made; engram keeps only a keyed hash of it.

pub mod secret;
