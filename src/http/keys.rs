//! `/v1/keys`: API keys made, listed and revoked by an admin, as
//! `engram keys` does on the command line.

use crate::domain::ids::KeyName;
use crate::error::ErrorBody;
use crate::service::keys::{ListKeysFor, MakeKey, NewKey, RevokeNamed};
use actix_web::http::{Method, StatusCode};
use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};

use super::auth::Gatekeeper;
use super::{AppState, Endpoint, JsonBody};
use crate::domain::access::{Access, ApiKey, Grant, Role, MAX_KEY_NAME, MAX_RATE, MIN_RATE};
use crate::domain::record::Sensitivity;
use crate::domain::schema;
use crate::domain::time::Timestamp;
use crate::domain::trust::MAX_TRUST_SCOPES;
use crate::domain::validate::RESERVED_ACTOR_PREFIX;
use crate::error::ApiError;

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
    #[schema(schema_with = key_name)]
    name: String,
    #[serde(default)]
    #[schema(schema_with = roles)]
    roles: Vec<Role>,
    #[serde(default)]
    max_sensitivity: Option<Sensitivity>,
    #[serde(default)]
    #[schema(schema_with = scopes)]
    scopes: Vec<String>,
    #[serde(default)]
    #[schema(schema_with = rate)]
    rate: Option<f64>,
}

pub(super) fn key_name() -> utoipa::openapi::Object {
    let name = utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .pattern(Some(format!("^[A-Za-z0-9._:-]{{1,{MAX_KEY_NAME}}}$")))
        .description(Some(format!(
            "1 to {MAX_KEY_NAME} letters, digits, `.`, `_`, `-` or `:`, not starting with `{RESERVED_ACTOR_PREFIX}`."
        )))
        .build();
    schema::refusing(name, &[schema::Refused::Reserved])
}

fn roles() -> utoipa::openapi::Array {
    utoipa::openapi::ArrayBuilder::new()
        .items(utoipa::openapi::Ref::from_schema_name("Role"))
        .min_items(Some(1))
        .build()
}

fn scopes() -> utoipa::openapi::Array {
    let mut scopes = schema::list(schema::name(), 0, MAX_TRUST_SCOPES, false);
    scopes.description = Some("The scopes the key may see; none: every scope.".into());
    scopes
}

fn rate() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::SchemaType::from_iter([
            utoipa::openapi::schema::Type::Number,
            utoipa::openapi::schema::Type::Null,
        ]))
        .minimum(Some(MIN_RATE))
        .maximum(Some(MAX_RATE))
        .description(Some(
            "Requests per second; absent: `auth.default_rate`. No more than the creating key's own.",
        ))
        .build()
}

/// A key as answered: its rate is the one it is held to, its own or the
/// configured default.
#[derive(Serialize, utoipa::ToSchema)]
struct KeyView {
    name: String,
    #[serde(flatten)]
    grant: Grant,
    /// Requests per second.
    rate: f64,
    /// Whether `rate` is `auth.default_rate` (the key has none of its own,
    /// so it follows the setting).
    rate_is_default: bool,
    #[serde(with = "crate::domain::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    created_at: Timestamp,
    #[serde(with = "crate::domain::time::rfc3339_option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    revoked_at: Option<Timestamp>,
}

impl KeyView {
    fn of(key: ApiKey, gate: &Gatekeeper) -> KeyView {
        KeyView {
            name: key.name,
            grant: key.grant,
            rate: key.rate.unwrap_or(gate.default_rate()),
            rate_is_default: key.rate.is_none(),
            created_at: key.created_at,
            revoked_at: key.revoked_at,
        }
    }
}

#[derive(Serialize, utoipa::ToSchema)]
struct CreatedBody {
    key: KeyView,
    /// Shown this once; only its hash is kept.
    secret: String,
}

#[derive(Serialize, utoipa::ToSchema)]
struct KeyBody {
    key: KeyView,
}

#[derive(Serialize, utoipa::ToSchema)]
struct KeysBody {
    keys: Vec<KeyView>,
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
    // Checked by the service call, on the writer.
    let new = NewKey {
        name: KeyName::parse("name", body.name)?,
        roles,
        max_sensitivity: body.max_sensitivity.unwrap_or(Sensitivity::Low),
        scopes: body.scopes,
        rate: body.rate,
    };
    let job = MakeKey {
        by: access,
        pepper: state.pepper.clone(),
        new,
        default_rate: gate.default_rate(),
        now: state.clock.now(),
    };
    let (key, secret) = state.writer.write(job).await?;
    gate.key_created();
    tracing::info!(key = %key.name, "API key created");
    Ok(HttpResponse::build(StatusCode::CREATED).json(CreatedBody {
        key: KeyView::of(key, &gate),
        secret,
    }))
}

#[utoipa::path(
    get,
    path = "/v1/keys",
    operation_id = "listKeys",
    tag = "keys",
    summary = "Every API key within the calling key's grant, revoked ones too (never their secrets)",
    responses((status = 200, description = "The keys", body = KeysBody, example = json!({"keys": [{"name": "planner", "roles": ["read", "write"], "max_sensitivity": "medium", "scopes": ["team-a"], "rate": 50.0, "rate_is_default": false, "created_at": "2026-01-15T10:30:00Z", "revoked_at": null}]})))
)]
async fn list(
    state: web::Data<AppState>,
    gate: web::Data<Gatekeeper>,
    access: Access,
) -> Result<HttpResponse, ApiError> {
    let keys = state
        .reader
        .read_ungated(ListKeysFor { by: access })
        .await?;
    Ok(HttpResponse::Ok().json(KeysBody {
        keys: keys
            .into_iter()
            .map(|key| KeyView::of(key, &gate))
            .collect(),
    }))
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
    responses((status = 200, description = "The key, revoked", body = KeyBody, example = json!({"key": {"name": "planner", "roles": ["read", "write"], "max_sensitivity": "medium", "scopes": ["team-a"], "rate": 50.0, "rate_is_default": false, "created_at": "2026-01-15T10:30:00Z", "revoked_at": "2026-02-01T09:00:00Z"}})), (status = 404, description = "No such key", body = ErrorBody))
)]
async fn revoke(
    state: web::Data<AppState>,
    gate: web::Data<Gatekeeper>,
    access: Access,
    name: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let name = KeyName::parse("name", name.into_inner())?;
    let job = RevokeNamed {
        by: access,
        name,
        now: state.clock.now(),
    };
    let (key, _) = state.writer.write(job).await?;
    gate.key_revoked(&key.name);
    tracing::info!(key = %key.name, "API key revoked");
    Ok(HttpResponse::Ok().json(KeyBody {
        key: KeyView::of(key, &gate),
    }))
}
