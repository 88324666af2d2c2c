//! The retrieval bodies: ranked retrieval and graph retrieval, each turned
//! into a checked domain query.

use serde::Deserialize;
use serde_json::Value;

use crate::domain::access::Access;
use crate::domain::conversation::MAX_CONTEXT_TURNS;
use crate::domain::record::MemoryType;
use crate::domain::retrieval::{FilterFields, Filters, Retrieval};
use crate::domain::retrieval::{
    GraphLimits, MAX_FILTER_SOURCES, MAX_GRAPH_EDGES, MAX_GRAPH_HOPS, MAX_GRAPH_NODES,
};
use crate::domain::schema;
use crate::domain::trust::{Caller, TrustContext};
use crate::domain::validate::Validated;
use crate::domain::vector::Embedding;

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"trust": {"max_sensitivity": "medium", "actor_id": "planner-1"}, "task_descriptor": "deploy the billing service", "memory_types": ["competence", "semantic"], "limit": 10}))]
pub struct RetrieveRequest {
    /// Required without a key; with one, the key's grant when absent.
    #[serde(default)]
    pub trust: Option<TrustContext>,
    #[serde(default)]
    #[schema(schema_with = schema::optional_text)]
    pub task_descriptor: Option<String>,
    #[serde(default)]
    pub memory_types: Option<Vec<MemoryType>>,
    #[serde(default)]
    #[schema(schema_with = min_salience)]
    pub min_salience: Option<f64>,
    /// 0 or absent: the server's maximum.
    #[serde(default)]
    #[schema(schema_with = limit)]
    pub limit: Option<i64>,
    #[serde(default)]
    #[schema(schema_with = context)]
    pub context: Option<Value>,
    #[serde(default)]
    pub include_retracted: Option<bool>,
    /// `next_cursor` of an earlier answer, to continue it.
    #[serde(default)]
    #[schema(schema_with = schema::cursor)]
    pub cursor: Option<String>,
    /// At most this many records in one answer, the rest of `limit`
    /// following through `next_cursor`; absent: as many as fit in the
    /// server's response size.
    #[serde(default)]
    #[schema(schema_with = schema::page_size)]
    pub page_size: Option<i64>,
    #[serde(default)]
    #[schema(schema_with = schema::tags)]
    pub tags: Option<Vec<String>>,
    #[serde(default)]
    #[schema(schema_with = sources)]
    pub sources: Option<Vec<String>>,
    #[serde(default)]
    #[schema(schema_with = schema::optional_filled_name)]
    pub thread_id: Option<String>,
    #[serde(default)]
    #[schema(schema_with = schema::optional_filled_name)]
    pub subject: Option<String>,
    /// Turns of this conversation only.
    #[serde(default)]
    #[schema(schema_with = schema::optional_conversation_id)]
    pub conversation_id: Option<String>,
    /// Turns by any of these speakers only.
    #[serde(default)]
    #[schema(schema_with = schema::speakers)]
    pub speakers: Option<Vec<String>>,
    /// Each turn returned carries `context`: up to this many (0 to 10)
    /// visible turns of its session before and after it.
    #[serde(default)]
    #[schema(schema_with = context_turns)]
    pub context_turns: Option<i64>,
    #[serde(default)]
    #[schema(schema_with = created_after)]
    pub created_after: Option<String>,
    #[serde(default)]
    #[schema(schema_with = created_before)]
    pub created_before: Option<String>,
    #[serde(default)]
    #[schema(schema_with = schema::embedding)]
    pub query_embedding: Option<Vec<f64>>,
}

fn min_salience() -> utoipa::openapi::Object {
    schema::non_negative(true)
}

fn limit() -> utoipa::openapi::Object {
    let mut limit = schema::integer(true, 0, schema::DOCUMENTED_MAX_LIMIT as i64);
    limit.description = Some(format!(
        "0 or absent: the server's maximum, `retrieval.max_limit` ({} unless configured).",
        schema::DOCUMENTED_MAX_LIMIT
    ));
    limit
}

fn context() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::SchemaType::from_iter([
            utoipa::openapi::schema::Type::Object,
            utoipa::openapi::schema::Type::Null,
        ]))
        .description(Some(
            "What the caller is doing, matched against the conditions of competences and plans.",
        ))
        .build()
}

fn sources() -> utoipa::openapi::Array {
    schema::list(schema::name(), 0, MAX_FILTER_SOURCES, true)
}

fn context_turns() -> utoipa::openapi::Object {
    let mut turns = schema::integer(true, 0, MAX_CONTEXT_TURNS as i64);
    turns.description = Some(format!(
        "Each turn returned carries `context`: up to this many (0 to {MAX_CONTEXT_TURNS}) visible turns of its session before and after it."
    ));
    turns
}

fn created_after() -> utoipa::openapi::Object {
    schema::time(true, "RFC 3339 with an offset.")
}

fn created_before() -> utoipa::openapi::Object {
    schema::time(true, "RFC 3339 with an offset; later than `created_after`.")
}

fn root_limit() -> utoipa::openapi::Object {
    let mut limit = schema::integer(true, 1, schema::DOCUMENTED_MAX_LIMIT as i64);
    limit.description = Some(format!(
        "Absent: 10; at most `retrieval.max_limit` ({} unless configured).",
        schema::DOCUMENTED_MAX_LIMIT
    ));
    limit
}

fn max_hops() -> utoipa::openapi::Object {
    schema::integer(true, 0, MAX_GRAPH_HOPS as i64)
}

fn node_limit() -> utoipa::openapi::Object {
    schema::integer(true, 1, MAX_GRAPH_NODES as i64)
}

fn edge_limit() -> utoipa::openapi::Object {
    schema::integer(true, 1, MAX_GRAPH_EDGES as i64)
}

impl RetrieveRequest {
    /// The trust the request presents, and the retrieval it asks for
    /// (from the start: its `cursor` is opened by the service, which
    /// sealed it).
    pub fn into_retrieval(
        self,
        access: &Access,
        max_limit: usize,
    ) -> Validated<(Caller, Retrieval)> {
        let caller = access.reader(self.trust)?;
        let retrieval = Retrieval::new(
            self.task_descriptor,
            self.memory_types.unwrap_or_default(),
            self.min_salience.unwrap_or(0.0),
            self.limit.unwrap_or(0),
            max_limit,
            self.context,
            self.include_retracted.unwrap_or(false),
        )?
        .paged(self.page_size, max_limit)?
        .filtered(Filters::new(FilterFields {
            tags: self.tags,
            sources: self.sources,
            thread_id: self.thread_id,
            subject: self.subject,
            conversation_id: self.conversation_id,
            speakers: self.speakers,
            created_after: self.created_after,
            created_before: self.created_before,
        })?)
        .embedded(Embedding::optional(
            "query_embedding",
            self.query_embedding,
        )?)
        .with_context(self.context_turns)?;
        Ok((caller, retrieval))
    }
}

/// `POST /v1/retrieve/graph`: ranked roots and what they link to.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"trust": {"max_sensitivity": "medium", "actor_id": "planner-1"}, "task_descriptor": "billing ownership", "root_limit": 5, "max_hops": 2}))]
pub struct GraphRequest {
    #[serde(default)]
    pub trust: Option<TrustContext>,
    #[serde(default)]
    #[schema(schema_with = schema::optional_text)]
    pub task_descriptor: Option<String>,
    #[serde(default)]
    #[schema(schema_with = schema::embedding)]
    pub query_embedding: Option<Vec<f64>>,
    #[serde(default)]
    pub memory_types: Option<Vec<MemoryType>>,
    #[serde(default)]
    #[schema(schema_with = root_limit)]
    pub root_limit: Option<i64>,
    #[serde(default)]
    #[schema(schema_with = max_hops)]
    pub max_hops: Option<u8>,
    #[serde(default)]
    #[schema(schema_with = node_limit)]
    pub node_limit: Option<usize>,
    #[serde(default)]
    #[schema(schema_with = edge_limit)]
    pub edge_limit: Option<usize>,
}

impl GraphRequest {
    /// The caller, the retrieval of the roots (10 unless `root_limit`
    /// says) and the limits of the walk.
    pub fn into_graph(
        self,
        access: &Access,
        max_limit: usize,
    ) -> Validated<(Caller, Retrieval, GraphLimits)> {
        let caller = access.reader(self.trust)?;
        let root_limit = match self.root_limit {
            None => 10,
            Some(n) if n < 1 => {
                return Err(crate::domain::validate::ValidationError::new(
                    "root_limit",
                    format!("must be at least 1, got {n}"),
                ))
            }
            Some(n) => n,
        };
        let retrieval = Retrieval::new(
            self.task_descriptor,
            self.memory_types.unwrap_or_default(),
            0.0,
            root_limit,
            max_limit,
            None,
            false,
        )
        .map_err(|e| e.renamed("limit", "root_limit"))?
        .embedded(Embedding::optional(
            "query_embedding",
            self.query_embedding,
        )?);
        let limits = GraphLimits::checked(self.max_hops, self.node_limit, self.edge_limit)?;
        Ok((caller, retrieval, limits))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::domain::requests::parse_json;
    use serde_json::json;

    fn parsed<T: serde::de::DeserializeOwned>(body: Value) -> Result<T, String> {
        parse_json(body.to_string().as_bytes()).map_err(|e| e.message)
    }

    fn retrieval(body: Value) -> Result<crate::domain::retrieval::RecordQuery, String> {
        let request: RetrieveRequest = parsed(body)?;
        request
            .into_retrieval(&Access::Open, 1000)
            .map(|(caller, retrieval)| {
                retrieval.query_for(
                    &caller.trust,
                    &crate::domain::retrieval::Ranking {
                        weights: Default::default(),
                        bm25: Default::default(),
                        turns: Default::default(),
                        max_salience: 1.0,
                        max_response_bytes: usize::MAX,
                        scan_records: 0,
                    },
                )
            })
            .map_err(|e| e.to_string())
    }

    #[test]
    fn retrieval_defaults_query_every_layer_in_order_up_to_the_maximum() {
        let r = retrieval(json!({"trust": {"max_sensitivity": "low"}})).unwrap();
        assert_eq!(r.memory_types, MemoryType::ALL.to_vec());
        assert_eq!(r.limit, 1000);
        assert_eq!(r.scopes, None);
        assert!(!r.include_retracted);
        let r = retrieval(json!({"trust": {"max_sensitivity": "low"}, "memory_types": ["episodic", "working", "episodic"]})).unwrap();
        assert_eq!(
            r.memory_types,
            vec![MemoryType::Working, MemoryType::Episodic]
        );
    }

    #[test]
    fn bad_limits_salience_context_and_a_missing_trust_are_refused() {
        let t = json!({"max_sensitivity": "low"});
        for (body, field) in [
            (json!({"trust": t, "limit": 1001}), "limit: "),
            (json!({"trust": t, "limit": -1}), "limit: "),
            (json!({"trust": t, "min_salience": -0.5}), "min_salience: "),
            (json!({"trust": t, "context": [1]}), "context: "),
            (json!({}), "trust: trust context is required"),
            (json!({"trust": null}), "trust: trust context is required"),
        ] {
            let err = retrieval(body).unwrap_err();
            assert!(
                err.starts_with(field),
                "{err:?} should start with {field:?}"
            );
        }
    }
}
