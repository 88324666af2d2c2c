//! `/v1/erase` and `/v1/erasures`: content removed for good, by an admin,
//! within its grant; and the log of what was erased.

use crate::error::ErrorBody;
use crate::telemetry::MemoryOperation;
use actix_web::http::Method;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};

use super::{AppState, Endpoint, JsonBody};
use crate::actors::erasure::erase as erase_over_time;
use crate::domain::access::{Access, Role};
use crate::domain::erasure::{Erasure, Selector, SelectorFields};
use crate::domain::trust::{Caller, TrustContext};
use crate::domain::validate::ValidationError;
use crate::error::ApiError;
use crate::service::erasure::{ErasureReport, ListErasures};
use crate::store::{ErasureEntry, LogPlace};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::new(Method::POST, "/v1/erase", Role::Admin, erase).does(MemoryOperation::Delete),
        Endpoint::new(Method::GET, "/v1/erasures", Role::Admin, erasures),
    ]
}

/// Whom an erasure or the log answers to: a key's grant (narrowed by
/// `trust`); without keys, `trust` or else everything.
fn caller(access: &Access, trust: Option<TrustContext>) -> Result<Caller, ValidationError> {
    match (access, trust) {
        (Access::Open, None) => Ok(Caller::unrestricted(None)),
        (access, trust) => access.reader(trust),
    }
}

fn erase_ids() -> utoipa::openapi::Array {
    let mut ids = crate::domain::schema::ids(crate::domain::erasure::MAX_IDS, false);
    ids.schema_type = utoipa::openapi::schema::SchemaType::from_iter([
        utoipa::openapi::schema::Type::Array,
        utoipa::openapi::schema::Type::Null,
    ]);
    ids.description = Some("Record ids (1 to 1,000).".into());
    ids
}

/// `actor` and `rationale`: required, though `null` reads as absent.
fn required_name() -> utoipa::openapi::Object {
    let mut name = crate::domain::schema::name();
    name.description = Some("Required: not blank, no control characters.".into());
    name
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"scope": "tenant-a", "actor": "dpo", "rationale": "tenant left; contract clause 9", "dry_run": true}))]
struct EraseBody {
    /// Record ids (1 to 1,000).
    #[serde(default)]
    #[schema(schema_with = erase_ids)]
    ids: Option<Vec<String>>,
    #[serde(default)]
    #[schema(schema_with = crate::domain::schema::optional_filled_name)]
    scope: Option<String>,
    /// Records whose provenance names this creator.
    #[serde(default)]
    #[schema(schema_with = crate::domain::schema::optional_filled_name)]
    source: Option<String>,
    /// Facts with this subject, and topics of this title.
    #[serde(default)]
    #[schema(schema_with = crate::domain::schema::optional_filled_name)]
    subject: Option<String>,
    /// The turns of this conversation.
    #[serde(default)]
    #[schema(schema_with = crate::domain::schema::optional_conversation_id)]
    conversation_id: Option<String>,
    #[serde(default)]
    #[schema(schema_with = required_name)]
    actor: Option<String>,
    #[serde(default)]
    #[schema(schema_with = required_name)]
    rationale: Option<String>,
    #[serde(default)]
    dry_run: bool,
    #[serde(default)]
    trust: Option<TrustContext>,
}

#[utoipa::path(
    post,
    path = "/v1/erase",
    operation_id = "eraseRecords",
    tag = "erasure",
    summary = "Erase records for good: by ids, scope, source, subject or conversation",
    request_body = EraseBody,
    responses((status = 200, description = "What was erased (or, dry, would be)", body = ErasureReport), (status = 404, description = "Nothing the caller may see is selected", body = ErrorBody))
)]
async fn erase(
    state: web::Data<AppState>,
    access: Access,
    body: JsonBody<EraseBody>,
) -> Result<HttpResponse, ApiError> {
    let body = body.0;
    let caller = caller(&access, body.trust)?;
    let selector = Selector::checked(SelectorFields {
        ids: body.ids,
        scope: body.scope,
        source: body.source,
        subject: body.subject,
        conversation_id: body.conversation_id,
    })?;
    let erasure = Erasure::checked(selector, body.actor, body.rationale, body.dry_run)?;
    let now = state.clock.now();
    let report = erase_over_time(&state.reader, &state.writer, caller, now, erasure).await?;
    Ok(HttpResponse::Ok().json(report))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
struct ErasuresQuery {
    /// Most entries (default 100, at most 1,000).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<usize>,
    /// `next_cursor` of the page before, with the same `limit`.
    cursor: Option<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
#[schema(example = json!({"erasures": [{"id": "0190f5e0-7c1a-7000-8000-000000000001", "at": "2026-11-27T10:00:00Z", "actor": "dpo", "rationale": "tenant left", "selector": "scope", "name": "tenant-a", "ids": 0, "erased": 1200, "derived_erased": 14, "tombstones": 3, "tables": {"records": 1214, "search": 1214, "vectors": 1200, "topic_fields": 40, "edges": 310, "audit": 2510}, "took_ms": 840}]}))]
struct ErasuresBody {
    erasures: Vec<ErasureEntry>,
    /// Present when older entries follow: the same request with this
    /// `cursor` reads them.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_cursor: Option<String>,
}

#[utoipa::path(
    get,
    path = "/v1/erasures",
    operation_id = "listErasures",
    tag = "erasure",
    summary = "The erasure log, newest first: who, when, why, what by, how many",
    params(ErasuresQuery),
    responses((status = 200, description = "The erasures the caller's grant holds", body = ErasuresBody), (status = 400, description = "A limit that is not 1 to 1,000, or a cursor not issued to this caller for this limit", body = ErrorBody))
)]
async fn erasures(
    state: web::Data<AppState>,
    access: Access,
    request: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let query = web::Query::<ErasuresQuery>::from_query(request.query_string()).map_err(|e| {
        let why = e.to_string();
        if why.contains("unknown field") {
            ValidationError::new("query", why)
        } else {
            ValidationError::new("limit", "limit is a whole number, 1 to 1000")
        }
    })?;
    let limit = match query.limit {
        None => 100,
        Some(n @ 1..=1000) => n,
        Some(_) => return Err(ValidationError::new("limit", "limit is 1 to 1000").into()),
    };
    let caller = caller(&access, None)?;
    let bound = format!("erasures|{caller:?}|{limit}").into_bytes();
    let after = query
        .into_inner()
        .cursor
        .map(|token| {
            super::cursors::open(
                &state.sealer,
                &token,
                &bound,
                LogPlace::from_bytes,
                "this caller and this limit; send next_cursor as it came",
            )
        })
        .transpose()?;
    let job = ListErasures {
        caller,
        after,
        limit,
    };
    let page = state.reader.read(job).await?;
    Ok(HttpResponse::Ok().json(ErasuresBody {
        erasures: page.entries,
        next_cursor: page
            .next
            .map(|next| state.sealer.seal(&next.to_bytes(), &bound)),
    }))
}
