//! The JSON API. Handlers are thin: extract, parse into domain types, send
//! a message to an actor, map the reply. Every error, including a body that
//! is not JSON or a route that does not exist, answers with the same
//! `{"error":{"code","message"}}` body.

pub mod access_log;
pub mod auth;
pub mod body;
mod conversations;
mod cursors;
pub mod disconnect;
mod erasure;
mod health;
mod ingest;
mod jobs;
pub mod key_check;
mod keys;
mod mcp;
mod metrics;
pub mod openapi;
pub mod origin;
mod records;
mod retrieve;
mod revisions;
mod topics;
mod ui;

use std::future::Future;
use std::pin::Pin;

use actix_web::body::MessageBody;
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::http::{header, Method, StatusCode};
use actix_web::middleware::from_fn;
use actix_web::middleware::Next;
use actix_web::{
    guard, web, FromRequest, Handler, HttpRequest, HttpResponse, Resource, Responder,
    ResponseError, Route,
};
use futures_util::StreamExt;
use serde::de::DeserializeOwned;

use crate::actors::consolidation::{TopicsRead, TopicsTouched};
use crate::actors::scheduler::Scheduler;
use crate::actors::storage::{ReadGate, Reader, StorageWriter};
use crate::auth::secret::{Pepper, Sealer};
use crate::domain::access::Role;
use crate::domain::new_record::NewRecordContext;
use crate::domain::policy::Policy;
use crate::domain::record::{new_record_id, MemoryRecord};
use crate::domain::retrieval::Ranking;
use crate::domain::time::Timestamp;
use crate::domain::trust::Caller;
use crate::error::{ApiError, Code};
use crate::service::topics::TopicRules;
use crate::telemetry::MemoryOperation;
use body::{BodyBudget, BodyPermit};

/// What handlers need to check a request and send its job to the
/// storage actors: one for all HTTP workers.
pub struct AppState {
    /// Reads for requests, held to `retrieval.max_reads_in_flight`
    /// (`read_gate`).
    pub reader: Reader,
    pub read_gate: ReadGate,
    pub writer: StorageWriter,
    pub scheduler: actix::Addr<Scheduler>,
    pub metrics: std::sync::Arc<crate::metrics::Metrics>,
    pub clock: crate::clock::Clock,
    /// The ingestion policy new records are made with.
    pub policy: Policy,
    pub read_settings: ReadSettings,
    /// How topics are placed, fade, and how far their queries walk.
    pub topics: TopicRules,
    /// What new keys' secrets are hashed with.
    pub pepper: std::sync::Arc<Pepper>,
    /// What cursors are sealed with (derived from the pepper).
    pub sealer: std::sync::Arc<Sealer>,
    /// `conversations.session_gap_minutes`.
    pub session_gap: chrono::Duration,
    pub max_body_bytes: usize,
    pub body_budget: std::sync::Arc<BodyBudget>,
    pub body_read_timeout: std::time::Duration,
    /// `telemetry.slow_request_ms`.
    pub slow_request: std::time::Duration,
    /// Where topics ingests report the topics they touched, and views and
    /// queries those they returned (the consolidation actor's upkeep).
    pub topics_touched: actix::Recipient<TopicsTouched>,
    pub topics_read: actix::Recipient<TopicsRead>,
    /// What one request may take in all, however many messages it carries
    /// (an MCP batch).
    pub request_limits: RequestLimits,
}

impl AppState {
    /// What checking the new records `caller` sends at `now` takes.
    pub fn new_records<'a>(&'a self, caller: &'a Caller, now: Timestamp) -> NewRecordContext<'a> {
        NewRecordContext {
            policy: &self.policy,
            now,
            new_id: &new_record_id,
            key: caller.key.as_deref(),
        }
    }
}

/// How retrievals are answered, from the configuration.
#[derive(Debug, Clone, Copy)]
pub struct ReadSettings {
    pub max_limit: usize,
    pub selection_threshold: f64,
    pub ranking: Ranking,
}

/// The most one request may take, whatever it carries.
#[derive(Debug, Clone, Copy)]
pub struct RequestLimits {
    /// The longer of the storage deadlines (`storage.read_timeout_ms`,
    /// `storage.write_timeout_ms`).
    pub deadline: std::time::Duration,
    /// `retrieval.max_response_bytes`.
    pub max_answer_bytes: usize,
}

/// One route of the API. The route table, the role checks and the API
/// document (`openapi`) are all made from the list of these.
pub struct Endpoint {
    pub method: Method,
    pub path: &'static str,
    /// The role a caller needs; `None`: anyone may call it.
    pub role: Option<Role>,
    /// What it does to memory, named in its request's span.
    pub operation: Option<MemoryOperation>,
    route: Route,
}

impl Endpoint {
    fn new<F, Args>(method: Method, path: &'static str, role: Role, handler: F) -> Endpoint
    where
        F: Handler<Args>,
        Args: FromRequest + 'static,
        F::Output: Responder + 'static,
    {
        Endpoint {
            method,
            path,
            role: Some(role),
            operation: None,
            route: web::route().to(handler),
        }
    }

    /// This route, doing `operation` to memory.
    fn does(self, operation: MemoryOperation) -> Endpoint {
        Endpoint {
            operation: Some(operation),
            ..self
        }
    }

    /// A route anyone may call: the health checks and the API document.
    fn public<F, Args>(method: Method, path: &'static str, handler: F) -> Endpoint
    where
        F: Handler<Args>,
        Args: FromRequest + 'static,
        F::Output: Responder + 'static,
    {
        Endpoint {
            role: None,
            ..Endpoint::new(method, path, Role::Read, handler)
        }
    }
}

/// Every route of the API, in the order they are matched.
pub fn endpoints() -> Vec<Endpoint> {
    [
        health::endpoints(),
        openapi::endpoints(),
        ingest::endpoints(),
        conversations::endpoints(),
        jobs::endpoints(),
        keys::endpoints(),
        mcp::endpoints(),
        metrics::endpoints(),
        records::endpoints(),
        erasure::endpoints(),
        retrieve::endpoints(),
        revisions::endpoints(),
        topics::endpoints(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Registers every endpoint: one resource per path, with the methods it
/// takes, behind the role its routes need.
pub fn configure(cfg: &mut web::ServiceConfig) {
    // Path, role, the routes by method, and what each does to memory.
    type Operations = Vec<(Method, MemoryOperation)>;
    type PathRoutes = (&'static str, Option<Role>, Vec<(Method, Route)>, Operations);
    let mut resources: Vec<PathRoutes> = Vec::new();
    for endpoint in endpoints() {
        let index = match resources
            .iter()
            .position(|(path, ..)| *path == endpoint.path)
        {
            Some(index) => index,
            None => {
                resources.push((endpoint.path, endpoint.role, Vec::new(), Vec::new()));
                resources.len() - 1
            }
        };
        let (_, role, routes, operations) = &mut resources[index];
        debug_assert_eq!(*role, endpoint.role, "one role per path");
        if let Some(operation) = endpoint.operation {
            operations.push((endpoint.method.clone(), operation));
        }
        routes.push((endpoint.method, endpoint.route));
    }
    for (path, role, routes, operations) in resources {
        let operations: std::sync::Arc<[_]> = operations.into();
        let resource = public_resource(path, routes).wrap(from_fn(move |req, next| {
            record_operation(operations.clone(), req, next)
        }));
        match role {
            Some(role) => {
                cfg.service(resource.wrap(from_fn(move |req, next| auth::require(role, req, next))))
            }
            None => cfg.service(resource),
        };
    }
    openapi::configure_ui(cfg);
    ui::configure(cfg);
}

/// Cross-origin calls from pages of `origins` (none: CORS stays off): the
/// API's methods, with a key and a JSON body.
pub fn cors(origins: &[String]) -> actix_cors::Cors {
    origins
        .iter()
        .fold(actix_cors::Cors::default(), |cors, origin| {
            cors.allowed_origin(origin)
        })
        .allowed_methods([Method::GET, Method::POST, Method::PUT, Method::DELETE])
        .allowed_headers([header::AUTHORIZATION, header::CONTENT_TYPE])
        .expose_headers([header::RETRY_AFTER, header::WWW_AUTHENTICATE])
        .max_age(3600)
}

/// Answer for paths no route matches.
pub async fn route_not_found(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    Err(ApiError::new(
        Code::NotFound,
        format!("no route for {} {}", req.method(), req.path()),
    ))
}

/// A JSON 405 that says, in `Allow`, what the resource does take.
fn method_not_allowed(req: &HttpRequest, allow: &str) -> HttpResponse {
    let mut response = ApiError::new(
        Code::MethodNotAllowed,
        format!(
            "{} is not allowed on {}; allowed: {allow}",
            req.method(),
            req.path()
        ),
    )
    .error_response();
    if let Ok(allow) = header::HeaderValue::from_str(allow) {
        response.headers_mut().insert(header::ALLOW, allow);
    }
    response
}

/// A resource with a route for each method; other methods get a JSON 405
/// with an `Allow` header. A GET route answers HEAD too.
/// Names the memory operation of the request's method, if it has one, in
/// the request's span.
async fn record_operation(
    operations: std::sync::Arc<[(Method, MemoryOperation)]>,
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    if let Some((_, operation)) = operations.iter().find(|(m, _)| m == req.method()) {
        crate::telemetry::record_operation(*operation);
    }
    next.call(req).await
}

pub(super) fn public_resource(path: &str, routes: Vec<(Method, Route)>) -> Resource {
    let mut resource = web::resource(path);
    let mut allowed = Vec::new();
    for (method, route) in routes {
        if method == Method::GET {
            resource = resource.route(route.guard(guard::Any(guard::Get()).or(guard::Head())));
            allowed.push("GET, HEAD".to_string());
        } else {
            allowed.push(method.to_string());
            resource = resource.route(route.method(method));
        }
    }
    let allow = allowed.join(", ");
    resource.default_service(web::to(move |req: HttpRequest| {
        let allow = allow.clone();
        async move { method_not_allowed(&req, &allow) }
    }))
}

/// A JSON request body, parsed before any actor sees it: a body over the
/// size limit is 413, bytes that are not JSON are "malformed JSON", and a
/// JSON value of the wrong shape names the offending field's path.
pub struct JsonBody<T>(
    pub T,
    // Never read: held until the request is answered, then dropped, which
    // gives the body's bytes back to the budget.
    #[allow(dead_code)] BodyPermit,
);

impl<T: DeserializeOwned + 'static> FromRequest for JsonBody<T> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let bytes = JsonBytes::from_request(req, payload);
        Box::pin(async move {
            let JsonBytes(body, permit) = bytes.await?;
            parse_json(&body).map(|value| JsonBody(value, permit))
        })
    }
}

/// The bytes of a body declared as JSON, read within the size limit, the
/// in-flight budget and the read timeout, but not parsed: for a route that
/// answers unparseable bytes in a protocol of its own (MCP's JSON-RPC).
pub struct JsonBytes(pub Vec<u8>, BodyPermit);

impl FromRequest for JsonBytes {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let state = req
            .app_data::<web::Data<AppState>>()
            .expect("AppState is registered")
            .clone();
        let limit = state.max_body_bytes;
        let declared = req
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        let mut payload = payload.take();
        let json = is_json(req.headers());
        Box::pin(async move {
            // A page of any site can post a form or `text/plain` without
            // asking; only JSON declared as such is read.
            if !json {
                return Err(ApiError::new(
                    Code::UnsupportedMediaType,
                    "Content-Type: the request body must be sent as application/json",
                ));
            }
            if declared.is_some_and(|len| len > limit) {
                return Err(too_large(limit));
            }
            // The body is held against the budget from its first byte (its
            // whole declared length at once) until the request is answered:
            // parsing and handling it take memory in proportion.
            let mut permit = state.body_budget.permit();
            if !permit.hold(declared.unwrap_or(0)) {
                return Err(bodies_over_budget());
            }
            let read = async {
                let mut body = Vec::with_capacity(declared.unwrap_or(0).min(limit));
                while let Some(chunk) = payload.next().await {
                    let chunk = chunk.map_err(|e| {
                        ApiError::new(
                            Code::InvalidArgument,
                            format!("could not read the request body: {e}"),
                        )
                    })?;
                    if body.len() + chunk.len() > limit {
                        return Err(too_large(limit));
                    }
                    if !permit.hold(body.len() + chunk.len()) {
                        return Err(bodies_over_budget());
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(body)
            };
            let body = actix_web::rt::time::timeout(state.body_read_timeout, read)
                .await
                .map_err(|_| {
                    ApiError::new(
                        Code::RequestTimeout,
                        format!(
                            "the request body was not received within {} ms",
                            state.body_read_timeout.as_millis()
                        ),
                    )
                })??;
            Ok(JsonBytes(body, permit))
        })
    }
}

/// Whether the request declares a JSON body: `application/json` or another
/// `application/…+json`, with any parameters.
pub(super) fn is_json(headers: &header::HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or_default().trim();
    let essence = essence.to_ascii_lowercase();
    essence == "application/json"
        || essence
            .strip_prefix("application/")
            .is_some_and(|subtype| subtype.ends_with("+json"))
}

fn bodies_over_budget() -> ApiError {
    ApiError::new(
        Code::Overloaded,
        "too many request bytes in flight (server.max_body_bytes_in_flight); retry later",
    )
}

fn too_large(limit: usize) -> ApiError {
    ApiError::new(
        Code::PayloadTooLarge,
        format!("request body exceeds the limit of {limit} bytes"),
    )
}

/// A JSON object body read into `T`, or why not, naming the field.
pub fn parse_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    crate::domain::requests::parse_json(body)
        .map_err(|e| ApiError::new(Code::InvalidArgument, e.message))
}

#[derive(serde::Serialize, utoipa::ToSchema)]
struct RecordBody<'a> {
    record: &'a MemoryRecord,
}

#[derive(serde::Serialize, utoipa::ToSchema)]
struct RecordsBody<'a> {
    records: &'a [MemoryRecord],
}

/// `{"record": …}` with the given status.
fn record_response(status: StatusCode, record: &MemoryRecord) -> HttpResponse {
    HttpResponse::build(status).json(RecordBody { record })
}

/// `{"records": […]}` with the given status.
fn records_response(status: StatusCode, records: &[MemoryRecord]) -> HttpResponse {
    HttpResponse::build(status).json(RecordsBody { records })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::requests::{BatchRequest, EventRequest};

    #[test]
    fn every_route_that_touches_memory_names_its_operation() {
        let operation = |method: Method, path: &str| {
            endpoints()
                .into_iter()
                .find(|e| e.method == method && e.path == path)
                .unwrap_or_else(|| panic!("no route {method} {path}"))
                .operation
                .map(MemoryOperation::as_str)
        };
        use MemoryOperation::*;
        for (method, path, expected) in [
            (Method::POST, "/v1/ingest/event", Some(Create)),
            (Method::POST, "/v1/ingest/batch", Some(Create)),
            (Method::POST, "/v1/ingest/working-state", Some(Upsert)),
            (Method::POST, "/v1/topics/ingest", Some(Upsert)),
            (Method::POST, "/v1/retrieve/graph", Some(Search)),
            (
                Method::POST,
                "/v1/conversations/{conversation_id}/turns",
                Some(Search),
            ),
            (Method::POST, "/v1/topics/{id}/view", Some(Search)),
            (Method::POST, "/v1/revisions/supersede", Some(Update)),
            (Method::DELETE, "/v1/topics/{id}/edges", Some(Update)),
            (Method::POST, "/v1/erase", Some(Delete)),
            (Method::GET, "/v1/keys", None),
            (Method::GET, "/v1/erasures", None),
            (Method::POST, "/mcp", None),
        ] {
            assert_eq!(
                operation(method.clone(), path),
                expected.map(MemoryOperation::as_str),
                "{method} {path}"
            );
        }
        // Every route under the memory's own prefixes says what it does.
        for endpoint in endpoints() {
            let memory = [
                "/v1/ingest/",
                "/v1/retrieve",
                "/v1/revisions/",
                "/v1/topics/",
            ]
            .iter()
            .any(|prefix| endpoint.path.starts_with(prefix));
            assert!(
                !memory || endpoint.operation.is_some(),
                "{} {} names no memory operation",
                endpoint.method,
                endpoint.path
            );
        }
    }

    #[test]
    fn malformed_json_and_wrong_shapes_are_told_apart() {
        let err = parse_json::<EventRequest>(b"{\"source\": ").unwrap_err();
        assert!(err.message.starts_with("malformed JSON"), "{}", err.message);
        let err = parse_json::<EventRequest>(br#"{"source": "s", "tags": [1]}"#).unwrap_err();
        assert!(
            err.message.starts_with("tags[0]: invalid type"),
            "{}",
            err.message
        );
        let err = parse_json::<EventRequest>(b"{\"nope\": 1}").unwrap_err();
        assert!(
            err.message.contains("unknown field `nope`"),
            "{}",
            err.message
        );
        let err =
            parse_json::<EventRequest>(br#"{"source": "s", "event_kind": "e", "ref": "r"} {}"#)
                .unwrap_err();
        assert!(err.message.starts_with("malformed JSON"), "{}", err.message);
        let err = parse_json::<EventRequest>(b"").unwrap_err();
        assert!(err.message.starts_with("malformed JSON"), "{}", err.message);
    }

    #[test]
    fn a_missing_or_null_required_field_is_named_in_the_reference_words() {
        let message = |body: &str| {
            parse_json::<BatchRequest>(body.as_bytes())
                .unwrap_err()
                .message
        };
        assert_eq!(message("{}"), "items: at least one item is required");
        assert_eq!(
            message(r#"{"items": [{"kind": "event", "event_kind": "e", "ref": "r"}]}"#),
            "items[0].source: candidate source is required"
        );
        let err = parse_json::<EventRequest>(br#"{"source": null, "event_kind": "e", "ref": "r"}"#)
            .unwrap_err();
        assert_eq!(err.message, "source: candidate source is required");
        let message = |body: &str| {
            parse_json::<crate::domain::requests::SupersedeRequest>(body.as_bytes())
                .unwrap_err()
                .message
        };
        assert_eq!(
            message(
                r#"{"actor": "a", "rationale": "r", "old_id": "x", "new_record": {"sensitivity": "low", "payload": {"kind": "working", "thread_id": "t", "state": "done"}}}"#
            ),
            "new_record.type: type is required"
        );
        assert_eq!(
            message(
                r#"{"actor": "a", "rationale": "r", "old_id": "x", "new_record": {"type": "semantic", "sensitivity": "low", "payload": {"kind": "semantic", "predicate": "p"}}}"#
            ),
            "new_record.payload.subject: subject is required",
            "the ingest words are for ingest bodies only"
        );
    }
}
