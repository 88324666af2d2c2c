//! `/v1/topics/*`: topics ingest, a topic's view, a field's history,
//! edges and archiving.

use crate::error::ErrorBody;
use crate::telemetry::MemoryOperation;
use actix_web::http::{Method, StatusCode};
use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{AppState, Endpoint, JsonBody};
use crate::actors::consolidation::{TopicsRead, TopicsTouched};
use crate::domain::access::{Access, Role};
use crate::domain::ids::TopicId;
use crate::domain::record::Sensitivity;
use crate::domain::schema;
use crate::domain::time::{rfc3339_option, Timestamp};
use crate::domain::topic::Topic;
use crate::domain::topic::{
    check_edge_kind, check_field_name, EdgeItem, FieldItem, OnAmbiguous, Placement, TopicIngest,
    MAX_EDGES, MAX_FIELDS, MAX_NAME,
};
use crate::domain::trust::TrustContext;
use crate::domain::validate::null_as_default;
use crate::domain::vector::Embedding;
use crate::error::ApiError;
use crate::service::topics::{
    self, ArchiveOne, EdgeRequest, Ingested, LinkTopics, PlaceObservation, QueryHit,
    ReadFieldHistory, ReadSummaryHistory, ReadTopic, SearchTopics, SummaryView, TopicQuery,
    TopicView, UnlinkTopics, VersionView, DEFAULT_QUERY_LIMIT, MAX_HOPS, MAX_QUERY_LIMIT,
};
use crate::store::TopicEdge;

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::new(Method::POST, "/v1/topics/ingest", Role::Write, ingest)
            .does(MemoryOperation::Upsert),
        Endpoint::new(Method::POST, "/v1/topics/query", Role::Read, query)
            .does(MemoryOperation::Search),
        Endpoint::new(Method::POST, "/v1/topics/{id}/view", Role::Read, view)
            .does(MemoryOperation::Search),
        Endpoint::new(
            Method::POST,
            "/v1/topics/{id}/fields/{name}/history",
            Role::Read,
            field_history,
        )
        .does(MemoryOperation::Search),
        Endpoint::new(
            Method::POST,
            "/v1/topics/{id}/summary/history",
            Role::Read,
            summary_history,
        )
        .does(MemoryOperation::Search),
        Endpoint::new(Method::POST, "/v1/topics/{id}/edges", Role::Write, add_edge)
            .does(MemoryOperation::Update),
        Endpoint::new(
            Method::DELETE,
            "/v1/topics/{id}/edges",
            Role::Write,
            remove_edge,
        )
        .does(MemoryOperation::Update),
        Endpoint::new(
            Method::POST,
            "/v1/topics/{id}/archive",
            Role::Write,
            archive,
        )
        .does(MemoryOperation::Update),
    ]
}

pub(super) fn field_name() -> utoipa::openapi::Object {
    let mut name = schema::bounded_name(MAX_NAME, false);
    name.description = Some(format!(
        "1 to {MAX_NAME} characters, not blank, no control characters; each field once."
    ));
    name
}

fn edge_kind() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .pattern(Some("^[a-z][a-z0-9_]*$"))
        .max_length(Some(MAX_NAME))
        .description(Some(
            "A lowercase identifier, such as `depends_on` or `part_of`.",
        ))
        .build()
}

fn placement() -> utoipa::openapi::Object {
    schema::optional_enum(
        &["new_topic", "extend_topic", "version_field", "auto"],
        "Absent: `auto`.",
    )
}

fn on_ambiguous() -> utoipa::openapi::Object {
    schema::optional_enum(
        &["new_topic", "fail"],
        "What `auto` does when no topic is clearly the one: a new topic (absent), or fail (409).",
    )
}

/// Empty: none; else an id.
fn topic_id() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    schema::empty_or(schema::id())
}

fn fields() -> utoipa::openapi::Array {
    schema::list(
        utoipa::openapi::Ref::from_schema_name("FieldBody"),
        0,
        MAX_FIELDS,
        true,
    )
}

fn edges() -> utoipa::openapi::Array {
    schema::list(
        utoipa::openapi::Ref::from_schema_name("EdgeBody"),
        0,
        MAX_EDGES,
        true,
    )
}

/// Not empty, no control characters.
fn topic_source() -> utoipa::openapi::Object {
    let mut source = schema::optional_name_item();
    source.min_length = Some(1);
    source
}

fn query_limit() -> utoipa::openapi::Object {
    let mut limit = schema::integer(true, 0, MAX_QUERY_LIMIT as i64);
    limit.description = Some(format!("0 or absent: {DEFAULT_QUERY_LIMIT}."));
    limit
}

fn hops() -> utoipa::openapi::Object {
    let mut hops = schema::integer(true, 0, MAX_HOPS as i64);
    hops.description = Some("Absent: 1.".into());
    hops
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct FieldBody {
    #[schema(schema_with = field_name)]
    name: String,
    #[serde(default)]
    value: Value,
    #[serde(default)]
    #[schema(schema_with = schema::optional_text)]
    why_changed: Option<String>,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct EdgeBody {
    #[schema(schema_with = schema::id)]
    to_topic_id: String,
    #[schema(schema_with = edge_kind)]
    kind: String,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"placement": "auto", "title": "Billing service", "summary": "Invoices and payments", "kind": "service", "fields": [{"name": "owner", "value": "team-payments"}, {"name": "version", "value": "1.4", "why_changed": "release"}], "edges": [], "suggest_similar": true, "source": "agent:planner", "trust": {"max_sensitivity": "medium", "actor_id": "planner-1"}}))]
pub(super) struct IngestBody {
    #[serde(default)]
    #[schema(schema_with = placement)]
    placement: Option<String>,
    #[serde(default)]
    #[schema(schema_with = topic_id)]
    topic_id: Option<String>,
    #[serde(default)]
    #[schema(schema_with = schema::optional_name)]
    title: Option<String>,
    #[serde(default)]
    #[schema(schema_with = schema::optional_text)]
    summary: Option<String>,
    #[serde(default)]
    #[schema(schema_with = schema::optional_name)]
    kind: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = fields)]
    fields: Vec<FieldBody>,
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = edges)]
    edges: Vec<EdgeBody>,
    #[serde(default)]
    suggest_similar: bool,
    #[serde(default)]
    #[schema(schema_with = on_ambiguous)]
    on_ambiguous: Option<String>,
    #[serde(default)]
    #[schema(schema_with = schema::optional_text)]
    why_changed: Option<String>,
    #[schema(schema_with = topic_source)]
    source: String,
    #[serde(default)]
    sensitivity: Option<Sensitivity>,
    #[serde(default)]
    #[schema(schema_with = schema::optional_text)]
    scope: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = schema::tags)]
    tags: Vec<String>,
    #[serde(default)]
    trust: Option<TrustContext>,
    #[serde(default)]
    #[schema(schema_with = schema::embedding)]
    embedding: Option<Vec<f64>>,
}

#[utoipa::path(
    post,
    path = "/v1/topics/ingest",
    operation_id = "ingestTopic",
    tag = "topics",
    summary = "Place an observation: a new topic, an extension, a field version, or where it fits",
    request_body = IngestBody,
    responses((status = 201, description = "Where it went and what it did", body = Ingested), (status = 404, description = "No such topic the caller may see", body = ErrorBody), (status = 409, description = "`auto` with `on_ambiguous` `fail` could not tell which topic the observation names (`conflict`; `error.similar_topic_ids` lists them); or `failed_precondition`: `version_field` names a field the topic has not", body = ErrorBody))
)]
async fn ingest(
    state: web::Data<AppState>,
    access: Access,
    body: JsonBody<IngestBody>,
) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Created().json(ingested(&state, access, body.0).await?))
}

/// A topics ingest as the caller `access` and the body's trust make.
pub(super) async fn ingested(
    state: &AppState,
    access: Access,
    body: IngestBody,
) -> Result<Ingested, ApiError> {
    let caller = access.acting(body.trust)?;
    let request = TopicIngest::checked(TopicIngest {
        placement: Placement::parse("placement", body.placement.as_deref())?,
        topic_id: body.topic_id,
        title: body.title,
        summary: body.summary,
        kind: body.kind,
        fields: body
            .fields
            .into_iter()
            .map(|f| FieldItem {
                name: f.name,
                value: f.value,
                why_changed: f.why_changed,
            })
            .collect(),
        edges: body
            .edges
            .into_iter()
            .map(|e| EdgeItem {
                to_topic_id: e.to_topic_id,
                kind: e.kind,
            })
            .collect(),
        suggest_similar: body.suggest_similar,
        on_ambiguous: OnAmbiguous::parse("on_ambiguous", body.on_ambiguous.as_deref())?,
        why_changed: body.why_changed,
        source: body.source,
        sensitivity: body.sensitivity.unwrap_or(Sensitivity::Low),
        scope: body.scope,
        tags: body.tags,
        embedding: Embedding::optional("embedding", body.embedding)?,
    })?;
    let job = PlaceObservation {
        caller,
        policy: state.policy.clone(),
        now: state.clock.now(),
        rules: state.topics.clone(),
        request,
    };
    let ingested = state.writer.write(job).await?;
    state.topics_touched.do_send(TopicsTouched {
        ids: vec![ingested.topic_id.clone()],
    });
    Ok(ingested)
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"trust": {"max_sensitivity": "medium", "actor_id": "planner-1"}, "as_of": "2026-11-01T12:00:00Z"}))]
struct ViewBody {
    #[serde(default)]
    trust: Option<TrustContext>,
    #[serde(default, with = "rfc3339_option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    as_of: Option<Timestamp>,
}

#[derive(Serialize, utoipa::ToSchema)]
struct TopicViewBody {
    topic: TopicView,
}

#[derive(Serialize, utoipa::ToSchema)]
struct TopicBody {
    topic: Topic,
}

#[utoipa::path(
    post,
    path = "/v1/topics/{id}/view",
    operation_id = "viewTopic",
    tag = "topics",
    summary = "A topic with its fields and edges, now or at an instant",
    params(("id" = String, Path, description = "The topic's id")),
    request_body = ViewBody,
    responses((status = 200, description = "The topic", body = TopicViewBody), (status = 404, description = "No such topic the caller may see", body = ErrorBody))
)]
async fn view(
    state: web::Data<AppState>,
    access: Access,
    id: web::Path<String>,
    body: JsonBody<ViewBody>,
) -> Result<HttpResponse, ApiError> {
    let id = TopicId::parse("id", id.into_inner())?;
    let job = ReadTopic {
        caller: access.reader(body.0.trust)?,
        id,
        reading: topics::Reading {
            now: state.clock.now(),
            as_of: body.0.as_of,
            decay: state.topics.decay.clone(),
        },
    };
    let topic = state.reader.read(job).await?;
    state.topics_read.do_send(TopicsRead {
        ids: vec![topic.topic.id.clone()],
    });
    Ok(HttpResponse::Ok().json(TopicViewBody { topic }))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"trust": {"max_sensitivity": "medium", "actor_id": "planner-1"}, "text": "billing owner", "limit": 5, "hops": 1, "include_history": false}))]
pub(super) struct QueryBody {
    #[serde(default)]
    trust: Option<TrustContext>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    #[schema(schema_with = query_limit)]
    limit: Option<usize>,
    #[serde(default)]
    #[schema(schema_with = hops)]
    hops: Option<u8>,
    #[serde(default, with = "rfc3339_option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    as_of: Option<Timestamp>,
    #[serde(default)]
    include_history: bool,
    #[serde(default)]
    #[schema(schema_with = schema::embedding)]
    embedding: Option<Vec<f64>>,
}

#[derive(Serialize, utoipa::ToSchema)]
struct TopicsBody {
    topics: Vec<QueryHit>,
}

#[utoipa::path(
    post,
    path = "/v1/topics/query",
    operation_id = "queryTopics",
    tag = "topics",
    summary = "Topics by text or vector, with neighbours and histories",
    request_body = QueryBody,
    responses((status = 200, description = "The topics, best first", body = TopicsBody))
)]
async fn query(
    state: web::Data<AppState>,
    access: Access,
    body: JsonBody<QueryBody>,
) -> Result<HttpResponse, ApiError> {
    let found = queried(&state, access, body.0).await?;
    Ok(HttpResponse::Ok().json(TopicsBody { topics: found }))
}

/// A topic query as the caller `access` and the body's trust make; the
/// topics found are reported as read.
pub(super) async fn queried(
    state: &AppState,
    access: Access,
    body: QueryBody,
) -> Result<Vec<QueryHit>, ApiError> {
    let mut query = TopicQuery::checked(
        body.text,
        Embedding::optional("embedding", body.embedding)?,
        body.kind,
        body.limit,
        body.hops,
        body.as_of,
        body.include_history,
    )?;
    query.max_hop_nodes = state.topics.settings.max_hop_nodes;
    let job = SearchTopics {
        caller: access.reader(body.trust)?,
        query,
        now: state.clock.now(),
        decay: state.topics.decay.clone(),
    };
    let found = state.reader.read(job).await?;
    if !found.is_empty() {
        state.topics_read.do_send(TopicsRead {
            ids: found.iter().map(|hit| hit.topic.topic.id.clone()).collect(),
        });
    }
    Ok(found)
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"trust": {"max_sensitivity": "medium", "actor_id": "planner-1"}}))]
struct TrustBody {
    #[serde(default)]
    trust: Option<TrustContext>,
}

#[derive(Serialize, utoipa::ToSchema)]
struct VersionsBody {
    versions: Vec<VersionView>,
}

#[utoipa::path(
    post,
    path = "/v1/topics/{id}/fields/{name}/history",
    operation_id = "getTopicFieldHistory",
    tag = "topics",
    summary = "Every version of one field, oldest first",
    params(("id" = String, Path, description = "The topic's id"), ("name" = String, Path, description = "The field's name")),
    request_body = TrustBody,
    responses((status = 200, description = "The versions", body = VersionsBody), (status = 404, description = "No such topic the caller may see", body = ErrorBody))
)]
async fn field_history(
    state: web::Data<AppState>,
    access: Access,
    path: web::Path<(String, String)>,
    body: JsonBody<TrustBody>,
) -> Result<HttpResponse, ApiError> {
    let (id, name) = path.into_inner();
    let id = TopicId::parse("id", id)?;
    check_field_name("name", &name)?;
    let job = ReadFieldHistory {
        caller: access.reader(body.0.trust)?,
        id,
        name,
    };
    let versions = state.reader.read(job).await?;
    Ok(HttpResponse::Ok().json(VersionsBody { versions }))
}

#[derive(Serialize, utoipa::ToSchema)]
struct SummariesBody {
    versions: Vec<SummaryView>,
}

#[utoipa::path(
    post,
    path = "/v1/topics/{id}/summary/history",
    operation_id = "getTopicSummaryHistory",
    tag = "topics",
    summary = "Every summary the topic has had, oldest first",
    params(("id" = String, Path, description = "The topic's id")),
    request_body = TrustBody,
    responses((status = 200, description = "The summaries", body = SummariesBody), (status = 404, description = "No such topic the caller may see", body = ErrorBody))
)]
async fn summary_history(
    state: web::Data<AppState>,
    access: Access,
    id: web::Path<String>,
    body: JsonBody<TrustBody>,
) -> Result<HttpResponse, ApiError> {
    let id = TopicId::parse("id", id.into_inner())?;
    let job = ReadSummaryHistory {
        caller: access.reader(body.0.trust)?,
        id,
    };
    let versions = state.reader.read(job).await?;
    Ok(HttpResponse::Ok().json(SummariesBody { versions }))
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"to_topic_id": "6a0b3c2d-1e4f-4a5b-8c7d-9e0f1a2b3c4d", "kind": "depends_on", "trust": {"max_sensitivity": "medium", "actor_id": "planner-1"}}))]
struct EdgeChangeBody {
    #[schema(schema_with = schema::id)]
    to_topic_id: String,
    #[schema(schema_with = edge_kind)]
    kind: String,
    #[serde(default)]
    trust: Option<TrustContext>,
}

#[derive(Serialize, utoipa::ToSchema)]
struct EdgeAnswer {
    edge: TopicEdge,
    /// False when the edge existed already.
    added: bool,
}

/// The edge `body` names from topic `id`, as `access` changes it now.
fn edge_change(
    state: &AppState,
    access: &Access,
    id: String,
    body: EdgeChangeBody,
) -> Result<EdgeRequest, ApiError> {
    let id = TopicId::parse("id", id)?;
    let to = TopicId::parse("to_topic_id", body.to_topic_id)?;
    check_edge_kind("kind", &body.kind)?;
    Ok(EdgeRequest {
        caller: access.acting(body.trust)?,
        now: state.clock.now(),
        from: id,
        to,
        kind: body.kind,
    })
}

#[utoipa::path(
    post,
    path = "/v1/topics/{id}/edges",
    operation_id = "addTopicEdge",
    tag = "topics",
    summary = "Add a typed edge from this topic",
    params(("id" = String, Path, description = "The topic's id")),
    request_body = EdgeChangeBody,
    responses((status = 201, description = "The edge, and whether it was new", body = EdgeAnswer), (status = 404, description = "No such topic the caller may see", body = ErrorBody))
)]
async fn add_edge(
    state: web::Data<AppState>,
    access: Access,
    id: web::Path<String>,
    body: JsonBody<EdgeChangeBody>,
) -> Result<HttpResponse, ApiError> {
    let edge = edge_change(&state, &access, id.into_inner(), body.0)?;
    let (edge, added) = state.writer.write(LinkTopics(edge)).await?;
    Ok(HttpResponse::build(StatusCode::CREATED).json(EdgeAnswer { edge, added }))
}

#[derive(Serialize, utoipa::ToSchema)]
struct RemovedBody {
    removed: bool,
}

#[utoipa::path(
    delete,
    path = "/v1/topics/{id}/edges",
    operation_id = "removeTopicEdge",
    tag = "topics",
    summary = "Remove a typed edge from this topic",
    params(("id" = String, Path, description = "The topic's id")),
    request_body = EdgeChangeBody,
    responses((status = 200, description = "Removed", body = RemovedBody), (status = 404, description = "No such topic the caller may see", body = ErrorBody))
)]
async fn remove_edge(
    state: web::Data<AppState>,
    access: Access,
    id: web::Path<String>,
    body: JsonBody<EdgeChangeBody>,
) -> Result<HttpResponse, ApiError> {
    let edge = edge_change(&state, &access, id.into_inner(), body.0)?;
    state.writer.write(UnlinkTopics(edge)).await?;
    Ok(HttpResponse::Ok().json(RemovedBody { removed: true }))
}

#[utoipa::path(
    post,
    path = "/v1/topics/{id}/archive",
    operation_id = "archiveTopic",
    tag = "topics",
    summary = "Archive a topic",
    params(("id" = String, Path, description = "The topic's id")),
    request_body = TrustBody,
    responses((status = 200, description = "The topic, archived", body = TopicBody), (status = 404, description = "No such topic the caller may see", body = ErrorBody))
)]
async fn archive(
    state: web::Data<AppState>,
    access: Access,
    id: web::Path<String>,
    body: JsonBody<TrustBody>,
) -> Result<HttpResponse, ApiError> {
    let id = TopicId::parse("id", id.into_inner())?;
    let job = ArchiveOne {
        caller: access.acting(body.0.trust)?,
        now: state.clock.now(),
        id,
        decay: state.topics.decay.clone(),
    };
    let topic = state.writer.write(job).await?;
    Ok(HttpResponse::Ok().json(TopicBody { topic }))
}
