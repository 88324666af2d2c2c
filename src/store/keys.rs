//! API keys in storage ([`KeyStore`]).

use super::rows::Columns;
use crate::domain::access::ApiKey;
use crate::domain::record::Sensitivity;
use crate::domain::time::Timestamp;
use crate::store::error::StoreError;

/// An API key's row, as either backend stores it (see the SQLite
/// migration 0009).
pub(crate) struct StoredKey {
    pub name: String,
    /// Comma-separated role names.
    pub roles: String,
    pub max_sensitivity: i64,
    /// JSON array of scope names; `[]`: every scope.
    pub scopes_json: String,
    pub rate: Option<f64>,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
}

impl StoredKey {
    /// The columns of `api_keys` [`StoredKey::read`] reads, in its order.
    pub const COLUMNS: &'static str =
        "name, roles, max_sensitivity, scopes_json, rate, created_at, revoked_at";

    /// The key of a row of [`StoredKey::COLUMNS`].
    pub fn read(row: &impl Columns) -> Result<ApiKey, StoreError> {
        StoredKey {
            name: row.at(0)?,
            roles: row.at(1)?,
            max_sensitivity: row.at(2)?,
            scopes_json: row.at(3)?,
            rate: row.at(4)?,
            created_at: row.at(5)?,
            revoked_at: row.at(6)?,
        }
        .into_key()
    }

    pub fn into_key(self) -> Result<ApiKey, StoreError> {
        let name = self.name;
        let corrupt = |what: &str| StoreError::Corrupt(format!("api key {name}: {what}"));
        let roles = self
            .roles
            .split(',')
            .filter(|r| !r.is_empty())
            .map(|r| {
                crate::domain::access::Role::parse(r)
                    .ok_or_else(|| corrupt(&format!("unknown role {r:?}")))
            })
            .collect::<Result<_, _>>()?;
        let max_sensitivity = Sensitivity::from_rank(self.max_sensitivity)
            .ok_or_else(|| corrupt("bad sensitivity"))?;
        let scopes = serde_json::from_str(&self.scopes_json).map_err(|_| corrupt("bad scopes"))?;
        Ok(ApiKey {
            grant: crate::domain::access::Grant {
                max_sensitivity,
                scopes,
                roles,
            },
            rate: self.rate,
            created_at: crate::domain::time::from_micros(self.created_at),
            revoked_at: self.revoked_at.map(crate::domain::time::from_micros),
            name,
        })
    }

    /// The row of `key`.
    pub fn of(key: &ApiKey) -> Result<StoredKey, StoreError> {
        let roles: Vec<&str> = key.grant.roles.iter().map(|r| r.as_str()).collect();
        Ok(StoredKey {
            name: key.name.clone(),
            roles: roles.join(","),
            max_sensitivity: key.grant.max_sensitivity.rank() as i64,
            scopes_json: serde_json::to_string(&key.grant.scopes)
                .map_err(|e| StoreError::Corrupt(e.to_string()))?,
            rate: key.rate,
            created_at: crate::domain::time::to_micros(&key.created_at),
            revoked_at: key.revoked_at.as_ref().map(crate::domain::time::to_micros),
        })
    }
}

/// API keys: stored by the hash of their secret, never the secret.
pub trait KeyStore {
    /// Stores a new key under the hash of its secret; `AlreadyExists` when
    /// its name was ever used.
    fn insert_key(&mut self, key: &ApiKey, hash: &[u8]) -> Result<(), StoreError>;
    /// Whether any key was ever made (revoked ones count).
    fn any_key(&mut self) -> Result<bool, StoreError>;
    /// Every key, revoked ones too, by name.
    fn list_keys(&mut self) -> Result<Vec<ApiKey>, StoreError>;
    /// The key, not revoked, whose secret hashes to `hash`.
    fn active_key(&mut self, hash: &[u8]) -> Result<Option<ApiKey>, StoreError>;
    /// Revokes a key: `false` if it was revoked already, `NotFound` if
    /// there is none.
    fn revoke_key(&mut self, name: &str, now: Timestamp) -> Result<bool, StoreError>;
}
