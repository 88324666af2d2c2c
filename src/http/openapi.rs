//! The API document: OpenAPI 3.1, made from the handlers' annotations and
//! the request and response types (so it cannot drift from them), served at
//! `GET /openapi.json`; and an interactive page for it at `/docs`, whose
//! assets are built into the binary.
//!
//! What every route shares is added here rather than written on each: the
//! key a route needs (from the role in the route table), and the error
//! answers any request can get.

use std::sync::{Arc, OnceLock};

use actix_web::http::Method;
use actix_web::{web, HttpRequest, HttpResponse};
use utoipa::openapi::path::{Operation, ParameterIn};
use utoipa::openapi::schema::{Discriminator, OneOfBuilder, Schema, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{Content, OpenApi as Document, Ref, ResponseBuilder};
use utoipa::openapi::{ObjectBuilder, RefOr};
use utoipa::{Modify, OpenApi, PartialSchema};
use utoipa_swagger_ui::Config;

use super::auth::Gatekeeper;
use super::Endpoint;
pub use rules::document_without_keys;
use rules::Rules;

mod rules;
use crate::actors::scheduler::JobName;
use crate::domain::access::Role;
use crate::domain::conversation::Attachment;
use crate::domain::new_record::NewRelation;
use crate::domain::payload::{
    CompetencePayload, EpisodicPayload, Evidence, Payload, PlanEdge, PlanGraphPayload, PlanNode,
    RecipeStep, SemanticPayload, TimelineEvent, ToolNode, Trigger, WorkingPayload,
};
use crate::domain::requests::{
    EventRequest, IngestItem, ObservationRequest, OutcomeRequest, ToolOutputRequest, TurnRequest,
    WorkingStateRequest,
};
use crate::domain::schema;
use crate::error::{ApiError, Code, ErrorBody};

// The handlers' modules are private to `http`; their paths are named
// through `super`.
use super::{
    conversations, erasure, health, ingest, jobs, keys, mcp, metrics, records, retrieve, revisions,
    topics,
};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "engram",
        description = "A memory service that many agents share: typed memory, trust-gated retrieval, atomic revisions, scheduled decay and consolidation.",
        license(name = "MIT", identifier = "MIT"),
    ),
    paths(
        openapi_json,
        mcp::mcp,
        health::healthz,
        health::readyz,
        ingest::event,
        ingest::tool_output,
        ingest::observation,
        ingest::working_state,
        ingest::outcome,
        ingest::batch,
        ingest::conversation,
        conversations::turns,
        jobs::list,
        jobs::update,
        jobs::run,
        keys::list,
        keys::create,
        keys::revoke,
        metrics::memory,
        metrics::prometheus,
        records::create,
        records::reinforce,
        records::penalize,
        records::history,
        retrieve::retrieve,
        retrieve::graph,
        retrieve::retrieve_by_id,
        revisions::supersede,
        revisions::fork,
        revisions::retract,
        revisions::merge,
        revisions::contest,
        erasure::erase,
        erasure::erasures,
        topics::ingest,
        topics::query,
        topics::view,
        topics::field_history,
        topics::summary_history,
        topics::add_edge,
        topics::remove_edge,
        topics::archive,
    ),
    components(schemas(
        ErrorBody,
        mcp::GetRecordArgs,
        mcp::ReviseArgs,
        mcp::FeedbackArgs,
        IngestItem,
        TurnRequest,
        Attachment,
        Role,
        topics::FieldBody,
        topics::EdgeBody,
        TimelineEvent,
        ToolNode,
        Evidence,
        Trigger,
        RecipeStep,
        PlanNode,
        PlanEdge,
        NewRelation,
    )),
    modifiers(&Shared, &Rules),
    tags(
        (name = "health", description = "Liveness and readiness; no key needed"),
        (name = "ingest", description = "Agents' experience in: classified, completed by policy, stored with provenance"),
        (name = "conversations", description = "Conversations read back, session by session"),
        (name = "records", description = "Whole records, and feedback on them"),
        (name = "retrieve", description = "Layered, trust-gated reads"),
        (name = "revisions", description = "Atomic, audited changes of knowledge"),
        (name = "topics", description = "Topics: versioned fields, typed edges, placement by the server"),
        (name = "jobs", description = "Maintenance jobs and their schedules"),
        (name = "keys", description = "API keys"),
        (name = "erasure", description = "Content removed for good, and the log of it"),
        (name = "metrics", description = "Aggregates and Prometheus metrics"),
        (name = "mcp", description = "The Model Context Protocol endpoint: engram as tools"),
        (name = "meta", description = "This document"),
    )
)]
struct ApiDoc;

/// The document, made once.
pub fn document() -> &'static Document {
    static DOCUMENT: OnceLock<Document> = OnceLock::new();
    DOCUMENT.get_or_init(ApiDoc::openapi)
}

pub(super) fn endpoints() -> Vec<Endpoint> {
    vec![Endpoint::public(Method::GET, "/openapi.json", openapi_json)]
}

/// The page at `/docs/` (and `/docs`, sent on to it), reading
/// `/openapi.json`; its files are built into the binary.
pub(super) fn configure_ui(cfg: &mut web::ServiceConfig) {
    cfg.service(super::public_resource(
        "/docs",
        vec![(
            Method::GET,
            web::route().to(|| async {
                HttpResponse::PermanentRedirect()
                    .insert_header(("Location", "/docs/"))
                    .finish()
            }),
        )],
    ))
    .service(super::public_resource(
        "/docs/{file:.*}",
        vec![(Method::GET, web::route().to(docs_file))],
    ));
}

async fn docs_file(file: web::Path<String>) -> Result<HttpResponse, ApiError> {
    static CONFIG: OnceLock<Arc<Config<'static>>> = OnceLock::new();
    let config = CONFIG.get_or_init(|| Arc::new(Config::from("/openapi.json")));
    match utoipa_swagger_ui::serve(&file, config.clone()) {
        Ok(Some(found)) => Ok(HttpResponse::Ok()
            .content_type(found.content_type)
            .body(found.bytes.into_owned())),
        Ok(None) => Err(ApiError::new(
            Code::NotFound,
            format!("no file /docs/{file}"),
        )),
        Err(e) => Err(ApiError::new(Code::Internal, e.to_string())),
    }
}

/// Whether `path` is the API document or its page: anyone may read them.
pub fn is_public(path: &str) -> bool {
    path == "/openapi.json" || path == "/docs" || path.starts_with("/docs/")
}

#[utoipa::path(
    get,
    path = "/openapi.json",
    operation_id = "getApiDocument",
    tag = "meta",
    summary = "This document (OpenAPI 3.1)",
    responses((status = 200, description = "The document", content_type = "application/json",
        example = json!({"openapi": "3.1.0", "info": {"title": "engram", "version": "0.1.0"}, "paths": {"/healthz": {"get": {"summary": "Liveness: the process serves HTTP"}}}})))
)]
async fn openapi_json(req: HttpRequest) -> HttpResponse {
    // The document describes the instance as it runs now: whether it
    // needs keys changes which bodies must carry `trust`.
    let open = req
        .app_data::<web::Data<Gatekeeper>>()
        .is_some_and(|gate| !gate.keys_required());
    HttpResponse::Ok().json(if open {
        document_without_keys()
    } else {
        document()
    })
}

/// Adds what every operation shares: the bearer key scheme, the role each
/// route needs (from the route table), and the errors any request can get.
struct Shared;

const KEY_SCHEME: &str = "api_key";

impl Modify for Shared {
    fn modify(&self, doc: &mut Document) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            KEY_SCHEME,
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "An API key's secret, as `Authorization: Bearer <secret>`. Needed once keys \
                         are in use (`auth.mode`); each route needs a role, named in its description.",
                    ))
                    .build(),
            ),
        );
        let schemas = serde_json::to_value(&components.schemas).expect("the schemas are JSON");
        for endpoint in super::endpoints() {
            let Some(item) = doc.paths.paths.get_mut(endpoint.path) else {
                continue;
            };
            let operation = match endpoint.method {
                Method::GET => item.get.as_mut(),
                Method::POST => item.post.as_mut(),
                Method::PUT => item.put.as_mut(),
                Method::DELETE => item.delete.as_mut(),
                _ => None,
            };
            let Some(operation) = operation else { continue };
            let body = serde_json::to_value(&operation.request_body).expect("a body is JSON");
            share(operation, &endpoint, carries_vector(&body, &schemas, 0));
        }
    }
}

/// Whether a body of `schema` may carry a vector: a property `embedding`
/// or `query_embedding`, at any depth of the components it names.
fn carries_vector(schema: &serde_json::Value, schemas: &serde_json::Value, depth: usize) -> bool {
    use serde_json::Value;
    match schema {
        // The components are not recursive; the bound only guards
        // against one that would be.
        _ if depth > 32 => false,
        Value::Object(map) => map.iter().any(|(key, value)| match (key.as_str(), value) {
            ("properties", Value::Object(properties))
                if properties.contains_key("embedding")
                    || properties.contains_key("query_embedding") =>
            {
                true
            }
            ("$ref", Value::String(reference)) => reference
                .strip_prefix("#/components/schemas/")
                .is_some_and(|name| carries_vector(&schemas[name], schemas, depth + 1)),
            _ => carries_vector(value, schemas, depth + 1),
        }),
        Value::Array(items) => items
            .iter()
            .any(|item| carries_vector(item, schemas, depth + 1)),
        _ => false,
    }
}

fn share(operation: &mut Operation, endpoint: &Endpoint, vectors: bool) {
    let mut codes: Vec<Code> = vec![Code::Internal, Code::Unavailable];
    if let Some(role) = endpoint.role {
        // A key, or none: a service with keys off (`auth.mode`) serves
        // without one, and its clients should not need to pretend.
        operation.security = Some(vec![
            SecurityRequirement::new(KEY_SCHEME, Vec::<String>::new()),
            SecurityRequirement::default(),
        ]);
        let needs = format!(
            "Needs a key with the `{}` role (or `admin`) when keys are in use.",
            role.as_str()
        );
        operation.description = Some(match operation.description.take() {
            Some(text) if !text.is_empty() => format!("{text}\n\n{needs}"),
            _ => needs,
        });
        codes.extend([
            Code::Unauthenticated,
            Code::PermissionDenied,
            Code::RateLimited,
        ]);
    } else {
        operation.security = Some(Vec::new());
    }
    for parameter in operation.parameters.iter_mut().flatten() {
        if parameter.parameter_in == ParameterIn::Path {
            parameter.schema = Some(path_parameter(endpoint.path, &parameter.name));
        }
        if parameter.name == "MCP-Protocol-Version" {
            parameter.schema = Some(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .enum_values(Some(mcp::every_version()))
                    .into(),
            );
        }
    }
    if operation.request_body.is_some() || endpoint.path.contains('{') {
        codes.extend([Code::InvalidArgument]);
    }
    if operation.request_body.is_some() {
        codes.extend([
            Code::RequestTimeout,
            Code::PayloadTooLarge,
            Code::UnsupportedMediaType,
        ]);
    }
    if !super::origin::any_host(endpoint.path) {
        codes.push(Code::MisdirectedRequest);
    }
    if vectors {
        let conflict = describe(Code::FailedPrecondition);
        match operation.responses.responses.get_mut("409") {
            Some(RefOr::T(response)) => {
                response.description = format!("{}; or {conflict}", response.description);
            }
            _ => codes.push(Code::FailedPrecondition),
        }
    }
    for code in codes {
        let status = code.status().as_u16().to_string();
        if operation.responses.responses.contains_key(&status) {
            continue;
        }
        let response = ResponseBuilder::new()
            .description(describe(code))
            .content(
                "application/json",
                Content::new(Some(Ref::from_schema_name("ErrorBody"))),
            )
            .build();
        operation
            .responses
            .responses
            .insert(status, response.into());
    }
}

/// The schema of a path's parameter: what the handler checks it against.
fn path_parameter(path: &str, name: &str) -> RefOr<Schema> {
    match name {
        "id" => schema::id().into(),
        "conversation_id" => schema::conversation_id().into(),
        "name" if path.starts_with("/v1/jobs/") => ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(JobName::ALL.iter().map(|job| job.as_str())))
            .into(),
        "name" if path.starts_with("/v1/keys/") => keys::key_name().into(),
        "name" if path.starts_with("/v1/topics/") => topics::field_name().into(),
        _ => unreachable!("a path parameter without a schema: {name} of {path}"),
    }
}

fn describe(code: Code) -> String {
    match code {
        Code::InvalidArgument => "The request is not valid: the message names the field".into(),
        Code::Unauthenticated => "No key, or one that is unknown or revoked".into(),
        Code::PermissionDenied => {
            "The key lacks the role, sensitivity or scope, or a web page of a foreign origin sent it"
                .into()
        }
        Code::RequestTimeout => "The body did not arrive in time".into(),
        Code::PayloadTooLarge => "The body is over `server.max_body_bytes`".into(),
        Code::UnsupportedMediaType => "The body is not declared `application/json`".into(),
        Code::MisdirectedRequest => "The `Host` is not a name of this service".into(),
        Code::RateLimited => "Over the key's rate; retry after `Retry-After`".into(),
        Code::FailedPrecondition => {
            "`failed_precondition`: a vector of other dimensions than the database's (the first vector \
             stored, or `retrieval.embedding_dimensions`, fixes them)"
                .into()
        }
        Code::Unavailable | Code::Overloaded => {
            "Overloaded or unavailable; retry after `Retry-After`".into()
        }
        _ => format!("`{}`", code.name()),
    }
}

/// One of several objects told apart by `kind` (serde's internally tagged
/// enums: a record's payload, a batch's item). Each kind's object, with
/// `kind` written into a copy of it, is a component of its own, named
/// `{prefix}{Kind}`; the whole is a `oneOf` of references to them with a
/// discriminator. (The derive joins each kind's object, which refuses
/// other fields, with `kind` in an `allOf` that nothing satisfies; and
/// client generators give the inner objects of inline variants one name.)
struct Tagged {
    prefix: &'static str,
    kinds: Vec<(&'static str, RefOr<Schema>)>,
}

impl Tagged {
    fn name(&self, kind: &str) -> String {
        let camel: String = kind
            .split('_')
            .map(|word| {
                let mut chars = word.chars();
                chars
                    .next()
                    .map(|first| first.to_ascii_uppercase().to_string() + chars.as_str())
                    .unwrap_or_default()
            })
            .collect();
        format!("{}{camel}", self.prefix)
    }

    fn one_of(&self, description: &str) -> RefOr<Schema> {
        let mut one_of = OneOfBuilder::new().description(Some(description));
        let mut mapping = Vec::new();
        for (kind, _) in &self.kinds {
            let name = self.name(kind);
            one_of = one_of.item(Ref::from_schema_name(&name));
            mapping.push((kind.to_string(), format!("#/components/schemas/{name}")));
        }
        one_of
            .discriminator(Some(Discriminator::with_mapping("kind", mapping)))
            .into()
    }

    /// Each kind's object, `kind` first among its required fields.
    fn components(self, schemas: &mut Vec<(String, RefOr<Schema>)>) {
        for (kind, schema) in &self.kinds {
            let RefOr::T(Schema::Object(mut object)) = schema.clone() else {
                unreachable!("each kind is an object")
            };
            object.properties.insert(
                "kind".to_string(),
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .enum_values(Some([*kind]))
                    .into(),
            );
            object.required.insert(0, "kind".to_string());
            schemas.push((self.name(kind), object.into()));
        }
    }
}

/// The schema of an internally tagged enum (a [`Tagged`] union), from its
/// kinds' names and types.
macro_rules! tagged_schema {
    ($enum:ty, $prefix:literal, $description:literal, [$(($kind:literal, $ty:ty)),+ $(,)?]) => {
        impl utoipa::PartialSchema for $enum {
            fn schema() -> RefOr<Schema> {
                Tagged { prefix: $prefix, kinds: vec![$(($kind, <$ty>::schema())),+] }
                    .one_of($description)
            }
        }

        impl utoipa::ToSchema for $enum {
            fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
                Tagged { prefix: $prefix, kinds: vec![$(($kind, <$ty>::schema())),+] }
                    .components(schemas);
                $(<$ty as utoipa::ToSchema>::schemas(schemas);)+
            }
        }
    };
}

tagged_schema!(
    Payload,
    "Payload",
    "What the record holds; `kind` says which of the five shapes, and is the record's type.",
    [
        ("working", WorkingPayload),
        ("semantic", SemanticPayload),
        ("competence", CompetencePayload),
        ("plan_graph", PlanGraphPayload),
        ("episodic", EpisodicPayload),
    ]
);

tagged_schema!(
    IngestItem,
    "IngestItem",
    "One item of `POST /v1/ingest/batch`: the fields of the single endpoint for its `kind`, and `kind`.",
    [
        ("event", EventRequest),
        ("tool_output", ToolOutputRequest),
        ("observation", ObservationRequest),
        ("outcome", OutcomeRequest),
        ("working_state", WorkingStateRequest),
    ]
);

#[cfg(test)]
mod tests {
    use super::*;

    fn operation<'a>(doc: &'a Document, method: &Method, path: &str) -> Option<&'a Operation> {
        let item = doc.paths.paths.get(path)?;
        match *method {
            Method::GET => item.get.as_ref(),
            Method::POST => item.post.as_ref(),
            Method::PUT => item.put.as_ref(),
            Method::DELETE => item.delete.as_ref(),
            _ => None,
        }
    }

    #[test]
    fn every_route_is_in_the_document_and_nothing_else() {
        let doc = document();
        let endpoints = super::super::endpoints();
        let missing: Vec<String> = endpoints
            .iter()
            .filter(|e| operation(doc, &e.method, e.path).is_none())
            .map(|e| format!("{} {}", e.method, e.path))
            .collect();
        assert!(missing.is_empty(), "routes the document lacks: {missing:?}");
        let operations: usize = doc
            .paths
            .paths
            .values()
            .map(|item| {
                [
                    &item.get,
                    &item.post,
                    &item.put,
                    &item.delete,
                    &item.patch,
                    &item.head,
                ]
                .iter()
                .filter(|op| op.is_some())
                .count()
            })
            .sum();
        assert_eq!(operations, endpoints.len(), "operations without a route");
    }

    #[test]
    fn every_operation_has_an_id_of_its_own() {
        let mut seen = std::collections::HashMap::new();
        for endpoint in super::super::endpoints() {
            let op = operation(document(), &endpoint.method, endpoint.path).unwrap();
            let at = format!("{} {}", endpoint.method, endpoint.path);
            let id = op.operation_id.clone().unwrap_or_default();
            // Client generators make a method of each: camelCase, named
            // for the resource as well as the verb.
            assert!(
                id.chars().next().is_some_and(|c| c.is_ascii_lowercase())
                    && id.chars().all(|c| c.is_ascii_alphanumeric()),
                "{at}: operationId {id:?}"
            );
            if let Some(other) = seen.insert(id.clone(), at.clone()) {
                panic!("{at} and {other} share the operationId {id:?}");
            }
        }
    }

    #[test]
    fn every_operation_has_its_key_rule_errors_and_success_answer() {
        let doc = document();
        for endpoint in super::super::endpoints() {
            let op = operation(doc, &endpoint.method, endpoint.path).unwrap();
            let at = format!("{} {}", endpoint.method, endpoint.path);
            let responses = &op.responses.responses;
            assert!(
                responses.keys().any(|s| s.starts_with('2')),
                "{at}: no success answer"
            );
            assert!(responses.contains_key("500"), "{at}: no 500");
            match endpoint.role {
                Some(role) => {
                    assert!(responses.contains_key("401"), "{at}: no 401");
                    assert!(responses.contains_key("403"), "{at}: no 403");
                    assert!(responses.contains_key("429"), "{at}: no 429");
                    let text = op.description.as_deref().unwrap_or_default();
                    assert!(text.contains(role.as_str()), "{at}: role not named");
                    assert_eq!(op.security.as_ref().map(Vec::len), Some(2), "{at}");
                }
                None => assert_eq!(op.security.as_ref().map(Vec::len), Some(0), "{at}"),
            }
            if op.request_body.is_some() {
                assert!(responses.contains_key("400"), "{at}: no 400");
                assert!(responses.contains_key("413"), "{at}: no 413");
            }
        }
    }

    /// Whether `content` (a media type object) shows an example, itself or
    /// in the component schema it names.
    fn shows_example(doc: &serde_json::Value, content: &serde_json::Value) -> bool {
        let schema = &content["schema"];
        let named = schema["$ref"]
            .as_str()
            .and_then(|r| r.strip_prefix("#/components/schemas/"))
            .map(|name| &doc["components"]["schemas"][name]);
        content.get("example").is_some()
            || schema.get("example").is_some()
            || named.is_some_and(|s| s.get("example").is_some())
    }

    #[test]
    fn every_operation_has_an_example_of_what_it_takes_or_answers() {
        let doc = serde_json::to_value(document()).unwrap();
        let mut without = Vec::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                let request = op["requestBody"]["content"].as_object();
                let shown = match request {
                    Some(content) => content.values().all(|c| shows_example(&doc, c)),
                    None => op["responses"]
                        .as_object()
                        .unwrap()
                        .iter()
                        .filter(|(status, _)| status.starts_with('2'))
                        .flat_map(|(_, r)| {
                            r["content"]
                                .as_object()
                                .into_iter()
                                .flat_map(|c| c.values())
                        })
                        .any(|c| shows_example(&doc, c)),
                };
                if !shown {
                    without.push(format!("{method} {path}"));
                }
            }
        }
        assert!(
            without.is_empty(),
            "operations without an example: {without:?}"
        );
    }

    #[test]
    fn the_error_codes_are_an_enum_of_every_code() {
        let doc = serde_json::to_value(document()).unwrap();
        let codes = &doc["components"]["schemas"]["ErrorCode"]["enum"];
        let names: Vec<&str> = Code::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(codes, &serde_json::json!(names));
        assert_eq!(doc["openapi"], "3.1.0");
    }
}
