//! API keys on PostgreSQL: made, listed, revoked, found by the hash of a
//! presented secret. A revocation is one committed row: every instance's
//! next lookup of the key finds it revoked.

use super::connection::Pg;
use crate::domain::access::ApiKey;
use crate::domain::time::{to_micros, Timestamp};
use crate::store::error::StoreError;
use crate::store::keys::{KeyStore, StoredKey};

const COLUMNS: &str = StoredKey::COLUMNS;

impl KeyStore for Pg {
    fn insert_key(&mut self, key: &ApiKey, hash: &[u8]) -> Result<(), StoreError> {
        let row = StoredKey::of(key)?;
        let inserted = self.execute(
            "INSERT INTO api_keys (name, hash, roles, max_sensitivity, scopes_json, rate,
                                   created_at, revoked_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT (name) DO NOTHING",
            &[
                &row.name,
                &hash,
                &row.roles,
                &row.max_sensitivity,
                &row.scopes_json,
                &row.rate,
                &row.created_at,
                &row.revoked_at,
            ],
        )?;
        if inserted == 0 {
            return Err(StoreError::AlreadyExists(key.name.clone()));
        }
        Ok(())
    }

    fn any_key(&mut self) -> Result<bool, StoreError> {
        Ok(self
            .query_one("SELECT EXISTS (SELECT 1 FROM api_keys)", &[])?
            .try_get(0)?)
    }

    fn list_keys(&mut self) -> Result<Vec<ApiKey>, StoreError> {
        self.query(
            &format!("SELECT {COLUMNS} FROM api_keys ORDER BY name"),
            &[],
        )?
        .iter()
        .map(StoredKey::read)
        .collect()
    }

    fn active_key(&mut self, hash: &[u8]) -> Result<Option<ApiKey>, StoreError> {
        self.query_opt(
            &format!("SELECT {COLUMNS} FROM api_keys WHERE hash = $1 AND revoked_at IS NULL"),
            &[&hash],
        )?
        .map(|row| StoredKey::read(&row))
        .transpose()
    }

    fn revoke_key(&mut self, name: &str, now: Timestamp) -> Result<bool, StoreError> {
        let changed = self.execute(
            "UPDATE api_keys SET revoked_at = $2 WHERE name = $1 AND revoked_at IS NULL",
            &[&name, &to_micros(&now)],
        )?;
        if changed > 0 {
            return Ok(true);
        }
        let exists: bool = self
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM api_keys WHERE name = $1)",
                &[&name],
            )?
            .try_get(0)?;
        if exists {
            Ok(false)
        } else {
            Err(StoreError::NotFound(name.to_string()))
        }
    }
}
