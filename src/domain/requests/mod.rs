//! The request bodies of the JSON API, as clients send them: a field the
//! API requires is required in the type (so a schema generated from these
//! types says so), optional ones are `Option` or default to empty. Unknown
//! fields are refused.
//!
//! One file per resource. Each body turns into the domain request it stands
//! for (`into_candidate`, `into_command`, `into_retrieval`, `into_graph`)
//! through the domain's own checks (`domain::ingest`, `domain::revision`,
//! `domain::retrieval`); the actors run these conversions, so the checks
//! run on their threads, once. A missing field is reported by
//! [`parse_json`] with the reference's words for it.

mod conversations;
mod ingest;
mod json;
mod retrieve;
mod revisions;

pub use conversations::*;
pub use ingest::*;
pub use json::{parse_json, MalformedBody};
pub use retrieve::*;
pub use revisions::*;

use serde::Deserialize;

use crate::domain::trust::TrustContext;

/// `POST /v1/retrieve/{id}` and `POST /v1/records/{id}/history`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"trust": {"max_sensitivity": "medium", "actor_id": "planner-1"}}))]
pub struct TrustOnlyRequest {
    /// Required without a key; with one, the key's grant when absent.
    #[serde(default)]
    pub trust: Option<TrustContext>,
}
