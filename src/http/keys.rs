//! `/v1/keys`: API keys made, listed and revoked by an admin, as
//! `engram keys` does on the command line.

use crate::error::ErrorBody;
use actix_web::http::{Method, StatusCode};
use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};

use super::auth::Gatekeeper;
use super::{AppState, Endpoint, JsonBody};
use crate::domain::access::{check_key_name, Access, ApiKey, Role};
use crate::domain::record::Sensitivity;
use crate::error::ApiError;
use crate::service::keys::{self, NewKey};

pub fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::new(Method::GET, "/v1/keys", Role::Admin, list),
        Endpoint::new(Method::POST, "/v1/keys", Role::Admin, create),
        Endpoint::new(Method::DELETE, "/v1/keys/{name}", Role::Admin, revoke),
    ]
}

/// A new key: as `engram keys create`, `read` when no role is given and
/// `low` when no sensitivity is.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"name": "planner", "roles": ["read", "write"], "max_sensitivity": "medium", "scopes": ["team-a"], "rate": 50}))]
struct CreateKeyBody {
    name: String,
    #[serde(default)]
    roles: Vec<Role>,
    #[serde(default)]
    max_sensitivity: Option<Sensitivity>,
    #[serde(default)]
    scopes: Vec<String>,
    #[serde(default)]
    rate: Option<f64>,
}

#[derive(Serialize, utoipa::ToSchema)]
struct CreatedBody {
    key: ApiKey,
    /// Shown this once; only its hash is kept.
    secret: String,
}

#[derive(Serialize, utoipa::ToSchema)]
struct KeyBody {
    key: ApiKey,
}

#[derive(Serialize, utoipa::ToSchema)]
struct KeysBody {
    keys: Vec<ApiKey>,
}

#[utoipa::path(
    post,
    path = "/v1/keys",
    operation_id = "createKey",
    tag = "keys",
    summary = "Make an API key",
    request_body = CreateKeyBody,
    responses((status = 201, description = "The key, with its secret shown this once", body = CreatedBody), (status = 403, description = "A role, ceiling or scope beyond the calling key's own grant", body = ErrorBody), (status = 409, description = "A key of that name exists", body = ErrorBody))
)]
async fn create(
    state: web::Data<AppState>,
    gate: web::Data<Gatekeeper>,
    access: Access,
    body: JsonBody<CreateKeyBody>,
) -> Result<HttpResponse, ApiError> {
    let body = body.0;
    let mut roles: std::collections::BTreeSet<Role> = body.roles.into_iter().collect();
    if roles.is_empty() {
        roles.insert(Role::Read);
    }
    // Checked by `keys::create`, on the writer.
    let new = NewKey {
        name: body.name,
        roles,
        max_sensitivity: body.max_sensitivity.unwrap_or(Sensitivity::Low),
        scopes: body.scopes,
        rate: body.rate,
    };
    let now = state.clock.now();
    let hashing = gate.clone();
    let (key, secret) = state
        .writer
        .write(move |tx| keys::create(tx, &access, hashing.pepper(), new, now))
        .await?;
    gate.key_created();
    tracing::info!(key = %key.name, "API key created");
    Ok(HttpResponse::build(StatusCode::CREATED).json(CreatedBody { key, secret }))
}

#[utoipa::path(
    get,
    path = "/v1/keys",
    operation_id = "listKeys",
    tag = "keys",
    summary = "Every API key within the calling key's grant, revoked ones too (never their secrets)",
    responses((status = 200, description = "The keys", body = KeysBody, example = json!({"keys": [{"name": "planner", "roles": ["read", "write"], "max_sensitivity": "medium", "scopes": ["team-a"], "rate": 50.0, "created_at": "2026-01-15T10:30:00Z", "revoked_at": null}]})))
)]
async fn list(state: web::Data<AppState>, access: Access) -> Result<HttpResponse, ApiError> {
    let keys = state.reader.read(move |tx| keys::list(tx, &access)).await?;
    Ok(HttpResponse::Ok().json(KeysBody { keys }))
}

/// Revokes the key (at once: the next request with it is refused) and
/// answers it as it now stands; revoking it again changes nothing. A key
/// beyond the calling key's grant answers as a missing one.
#[utoipa::path(
    delete,
    path = "/v1/keys/{name}",
    operation_id = "revokeKey",
    tag = "keys",
    summary = "Revoke an API key",
    params(("name" = String, Path, description = "The key's name")),
    responses((status = 200, description = "The key, revoked", body = KeyBody, example = json!({"key": {"name": "planner", "roles": ["read", "write"], "max_sensitivity": "medium", "scopes": ["team-a"], "rate": 50.0, "created_at": "2026-01-15T10:30:00Z", "revoked_at": "2026-02-01T09:00:00Z"}})), (status = 404, description = "No such key", body = ErrorBody))
)]
async fn revoke(
    state: web::Data<AppState>,
    access: Access,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let name = name.into_inner();
    check_key_name(&name)?;
    let now = state.clock.now();
    let (key, _) = state
        .writer
        .write(move |tx| keys::revoke(tx, &access, &name, now))
        .await?;
    tracing::info!(key = %key.name, "API key revoked");
    Ok(HttpResponse::Ok().json(KeyBody { key }))
}
