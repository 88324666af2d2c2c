//! API keys (migration 0009): made, listed, revoked, and found by the
//! hash of a presented secret.

use rusqlite::{params, Connection, ErrorCode, OptionalExtension};

use crate::domain::access::ApiKey;
use crate::domain::time::{to_micros, Timestamp};
use crate::store::error::StoreError;
use crate::store::keys::{KeyStore, StoredKey};

const COLUMNS: &str = StoredKey::COLUMNS;

impl KeyStore for Connection {
    /// Stores a new key under the hash of its secret; `AlreadyExists` when
    /// the name was ever used.
    fn insert_key(&mut self, key: &ApiKey, hash: &[u8]) -> Result<(), StoreError> {
        let row = StoredKey::of(key)?;
        let inserted = self
            .prepare_cached(
                "INSERT INTO api_keys (name, hash, roles, max_sensitivity, scopes_json, rate,
                                       created_at, revoked_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?
            .execute(params![
                row.name,
                hash,
                row.roles,
                row.max_sensitivity,
                row.scopes_json,
                row.rate,
                row.created_at,
                row.revoked_at,
            ]);
        match inserted {
            Ok(_) => Ok(()),
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == ErrorCode::ConstraintViolation
                    && e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY =>
            {
                Err(StoreError::AlreadyExists(key.name.clone()))
            }
            Err(e) => Err(e.into()),
        }
    }

    fn any_key(&mut self) -> Result<bool, StoreError> {
        Ok(self
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM api_keys)")?
            .query_row([], |row| row.get(0))?)
    }

    /// Every key ever made, revoked ones too, by name.
    fn list_keys(&mut self) -> Result<Vec<ApiKey>, StoreError> {
        let mut stmt =
            self.prepare_cached(&format!("SELECT {COLUMNS} FROM api_keys ORDER BY name"))?;
        let rows = stmt.query_map([], |row| Ok(StoredKey::read(row)))?;
        rows.map(|row| row?).collect()
    }

    /// The key, not revoked, whose secret hashes to `hash`.
    fn active_key(&mut self, hash: &[u8]) -> Result<Option<ApiKey>, StoreError> {
        self.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM api_keys WHERE hash = ?1 AND revoked_at IS NULL"
        ))?
        .query_row([hash], |row| Ok(StoredKey::read(row)))
        .optional()?
        .transpose()
    }

    /// Revokes key `name`; `NotFound` when there is none, and a key revoked
    /// already stays as it was (answers `false`).
    fn revoke_key(&mut self, name: &str, now: Timestamp) -> Result<bool, StoreError> {
        let changed = self
            .prepare_cached(
                "UPDATE api_keys SET revoked_at = ?2 WHERE name = ?1 AND revoked_at IS NULL",
            )?
            .execute(params![name, to_micros(&now)])?;
        if changed > 0 {
            return Ok(true);
        }
        let exists: bool = self
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM api_keys WHERE name = ?1)")?
            .query_row([name], |row| row.get(0))?;
        if exists {
            Ok(false)
        } else {
            Err(StoreError::NotFound(name.to_string()))
        }
    }
}
