//! API keys: made, listed and revoked (by `engram keys` and the admin
//! endpoints), and a presented secret resolved to its key.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::auth::secret::{new_secret, Pepper};
use crate::domain::access::{check_rate, Access, ApiKey, Grant, Role};
use crate::domain::ids::KeyName;
use crate::domain::record::Sensitivity;
use crate::domain::time::Timestamp;
use crate::domain::trust::MAX_TRUST_SCOPES;
use crate::domain::validate::{check_name, Validated, ValidationError};
use crate::service::job::Job;
use crate::service::ServiceError;
use crate::store::{StoreError, Transaction};

/// What a new key is to be.
#[derive(Debug, Clone, PartialEq)]
pub struct NewKey {
    pub name: KeyName,
    pub roles: BTreeSet<Role>,
    pub max_sensitivity: Sensitivity,
    /// Empty: every scope.
    pub scopes: Vec<String>,
    /// Requests per second; `None`: the configured default.
    pub rate: Option<f64>,
}

impl NewKey {
    pub fn checked(self) -> Validated<NewKey> {
        if self.roles.is_empty() {
            return Err(ValidationError::new(
                "roles",
                "give at least one role: read, write, revise, metrics or admin",
            ));
        }
        if self.scopes.len() > MAX_TRUST_SCOPES {
            return Err(ValidationError::new(
                "scopes",
                format!("at most {MAX_TRUST_SCOPES} scopes"),
            ));
        }
        for (i, scope) in self.scopes.iter().enumerate() {
            let field = format!("scopes[{i}]");
            if scope.trim().is_empty() {
                return Err(ValidationError::new(field, "a scope must not be blank"));
            }
            check_name(&field, scope)?;
        }
        if let Some(rate) = self.rate {
            check_rate("rate", rate)?;
        }
        Ok(self)
    }
}

/// Makes a key for `by`, which may give only what its own grant and rate
/// hold (`default_rate`: the rate of keys without one); answers it and its
/// secret, which is shown this once and never stored.
pub fn create(
    tx: &mut dyn Transaction,
    by: &Access,
    pepper: &Pepper,
    new: NewKey,
    default_rate: f64,
    now: Timestamp,
) -> Result<(ApiKey, String), ServiceError> {
    let new = new.checked()?;
    let rate = by
        .rate_to_give(new.rate, default_rate)
        .map_err(ServiceError::PermissionDenied)?;
    let grant = Grant {
        max_sensitivity: new.max_sensitivity,
        scopes: new.scopes,
        roles: new.roles,
    };
    by.may_give(&grant)
        .map_err(ServiceError::PermissionDenied)?;
    let secret = new_secret().map_err(|e| ServiceError::Internal(e.to_string()))?;
    let key = ApiKey {
        name: new.name.into_string(),
        grant,
        rate,
        created_at: now,
        revoked_at: None,
    };
    match tx.insert_key(&key, &pepper.hash(&secret)) {
        Ok(()) => Ok((key, secret)),
        Err(StoreError::AlreadyExists(name)) => Err(ServiceError::Conflict(format!(
            "a key named {name} exists or existed; names are never reused"
        ))),
        Err(e) => Err(e.into()),
    }
}

/// The keys `by` manages: every key without a key, with one those within
/// its grant (the others do not exist for it).
pub fn list(tx: &mut dyn Transaction, by: &Access) -> Result<Vec<ApiKey>, ServiceError> {
    let mut keys = tx.list_keys()?;
    keys.retain(|key| by.manages(&key.grant));
    Ok(keys)
}

/// Revokes key `name` for `by`; answers the key as it now stands and
/// whether it was active until then. A key beyond `by`'s grant answers as
/// a missing one.
pub fn revoke(
    tx: &mut dyn Transaction,
    by: &Access,
    name: &KeyName,
    now: Timestamp,
) -> Result<(ApiKey, bool), ServiceError> {
    let missing = || ServiceError::NotFound(format!("no key named {name}"));
    let find = |tx: &mut dyn Transaction| -> Result<ApiKey, ServiceError> {
        list(tx, by)?
            .into_iter()
            .find(|key| key.name == name.as_str())
            .ok_or_else(missing)
    };
    find(tx)?;
    let was_active = match tx.revoke_key(name, now) {
        Err(StoreError::NotFound(_)) => return Err(missing()),
        other => other?,
    };
    Ok((find(tx)?, was_active))
}

/// The active key whose secret has this keyed hash (`Pepper::hash`), if
/// any.
pub fn authenticate(tx: &mut dyn Transaction, hash: &[u8]) -> Result<Option<ApiKey>, ServiceError> {
    // Found by the index on the hash: how long the search takes tells at
    // most how much of a stored hash was matched, and without the pepper
    // no one can choose a secret to match more.
    Ok(tx.active_key(hash)?)
}

/// [`create`] as a write job.
pub struct MakeKey {
    pub by: Access,
    pub pepper: Arc<Pepper>,
    pub new: NewKey,
    /// `auth.default_rate`.
    pub default_rate: f64,
    pub now: Timestamp,
}

impl Job for MakeKey {
    type Output = (ApiKey, String);
    const NAME: &'static str = "make_key";

    fn run(self, tx: &mut dyn Transaction) -> Result<(ApiKey, String), ServiceError> {
        create(
            tx,
            &self.by,
            &self.pepper,
            self.new,
            self.default_rate,
            self.now,
        )
    }
}

/// [`list`] as a read job.
pub struct ListKeysFor {
    pub by: Access,
}

impl Job for ListKeysFor {
    type Output = Vec<ApiKey>;
    const NAME: &'static str = "list_keys";

    fn run(self, tx: &mut dyn Transaction) -> Result<Vec<ApiKey>, ServiceError> {
        list(tx, &self.by)
    }
}

/// [`revoke`] as a write job.
pub struct RevokeNamed {
    pub by: Access,
    pub name: KeyName,
    pub now: Timestamp,
}

impl Job for RevokeNamed {
    type Output = (ApiKey, bool);
    const NAME: &'static str = "revoke_key";

    fn run(self, tx: &mut dyn Transaction) -> Result<(ApiKey, bool), ServiceError> {
        revoke(tx, &self.by, &self.name, self.now)
    }
}

/// [`authenticate`] as a read job: the active key of a secret's hash.
pub struct Authenticate {
    pub hash: Vec<u8>,
}

impl Job for Authenticate {
    type Output = Option<ApiKey>;
    const NAME: &'static str = "authenticate";

    fn run(self, tx: &mut dyn Transaction) -> Result<Option<ApiKey>, ServiceError> {
        authenticate(tx, &self.hash)
    }
}

/// Whether any key was ever made (revoked ones count).
pub struct AnyKey;

impl Job for AnyKey {
    type Output = bool;
    const NAME: &'static str = "any_key";

    fn run(self, tx: &mut dyn Transaction) -> Result<bool, ServiceError> {
        Ok(tx.any_key()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::time::parse_rfc3339;
    use crate::store::{self, ConnectionOptions, WriteConnection};
    use std::time::Duration;

    fn writer(dir: &tempfile::TempDir) -> Box<dyn WriteConnection> {
        let options = ConnectionOptions {
            busy_timeout: Duration::from_secs(5),
            cache_size_kib: 1024,
            mmap_size_mib: 0,
        };
        let opened =
            store::sqlite::open(&dir.path().join("k.db"), 1, options, options, None, None).unwrap();
        opened.writer
    }

    /// A writer in a transaction, a pepper and an instant.
    fn begun(dir: &tempfile::TempDir) -> (Box<dyn WriteConnection>, Pepper, Timestamp) {
        let mut w = writer(dir);
        w.begin().unwrap();
        let pepper = Pepper::from_hex(&"11".repeat(32), "test").unwrap();
        (w, pepper, parse_rfc3339("2026-01-01T00:00:00Z").unwrap())
    }

    fn new_key(name: &str) -> NewKey {
        NewKey {
            name: KeyName::parse("name", name.to_string()).unwrap(),
            roles: [Role::Read].into_iter().collect(),
            max_sensitivity: Sensitivity::Low,
            scopes: vec!["a".into()],
            rate: None,
        }
    }

    #[test]
    fn a_key_is_made_found_by_its_secret_and_revoked() {
        let dir = tempfile::tempdir().unwrap();
        let (mut w, pepper, now) = begun(&dir);
        let tx = w.transaction();
        let (key, secret) =
            create(tx, &Access::Open, &pepper, new_key("reader"), 100.0, now).unwrap();
        assert_eq!(authenticate(tx, &pepper.hash(&secret)).unwrap(), Some(key));
        assert_eq!(
            authenticate(tx, &pepper.hash("engram_guess")).unwrap(),
            None
        );
        let other = Pepper::from_hex(&"22".repeat(32), "test").unwrap();
        assert_eq!(authenticate(tx, &other.hash(&secret)).unwrap(), None);
        assert!(matches!(
            create(tx, &Access::Open, &pepper, new_key("reader"), 100.0, now),
            Err(ServiceError::Conflict(_))
        ));
        assert!(
            revoke(tx, &Access::Open, &KeyName::stored("reader".into()), now)
                .unwrap()
                .1
        );
        assert_eq!(authenticate(tx, &pepper.hash(&secret)).unwrap(), None);
        let (revoked, was_active) =
            revoke(tx, &Access::Open, &KeyName::stored("reader".into()), now).unwrap();
        assert!(!was_active && revoked.revoked_at.is_some());
        assert!(matches!(
            revoke(tx, &Access::Open, &KeyName::stored("ghost".into()), now),
            Err(ServiceError::NotFound(_))
        ));
        assert_eq!(list(tx, &Access::Open).unwrap().len(), 1);
        w.commit().unwrap();
    }

    #[test]
    fn a_key_manages_only_keys_within_its_grant() {
        let dir = tempfile::tempdir().unwrap();
        let (mut w, pepper, now) = begun(&dir);
        let tx = w.transaction();
        let mut wide = new_key("wide");
        wide.roles = [Role::Admin].into_iter().collect();
        wide.scopes.clear();
        wide.max_sensitivity = Sensitivity::Hyper;
        create(tx, &Access::Open, &pepper, wide.clone(), 100.0, now).unwrap();
        let mut narrow = new_key("narrow");
        narrow.roles = [Role::Admin].into_iter().collect();
        let (narrow, _) = create(tx, &Access::Open, &pepper, narrow, 100.0, now).unwrap();
        let by = Access::Key(std::sync::Arc::new(narrow));
        wide.name = KeyName::stored("escalated".into());
        assert!(matches!(
            create(tx, &by, &pepper, wide, 100.0, now),
            Err(ServiceError::PermissionDenied(m)) if m.starts_with("max_sensitivity")
        ));
        // Made by the narrow key: its delegate can delegate no wider.
        let (delegate, _) = create(tx, &by, &pepper, new_key("delegate"), 100.0, now).unwrap();
        let names = |keys: Vec<ApiKey>| keys.into_iter().map(|k| k.name).collect::<Vec<_>>();
        assert_eq!(names(list(tx, &by).unwrap()), ["delegate", "narrow"]);
        assert!(matches!(
            revoke(tx, &by, &KeyName::stored("wide".into()), now),
            Err(ServiceError::NotFound(m)) if m == "no key named wide"
        ));
        assert_eq!(list(tx, &Access::Open).unwrap()[2].revoked_at, None);
        let name = KeyName::stored(delegate.name.clone());
        assert!(revoke(tx, &by, &name, now).unwrap().1);
        w.commit().unwrap();
    }

    #[test]
    fn a_bad_key_is_refused_naming_the_field() {
        let field = |k: NewKey| k.checked().unwrap_err().field;
        let mut k = new_key("k");
        k.roles.clear();
        assert_eq!(field(k), "roles");
        let mut k = new_key("k");
        k.rate = Some(0.0);
        assert_eq!(field(k), "rate");
        let mut k = new_key("k");
        k.scopes = vec!["ok".into(), "bad\u{7}".into()];
        assert_eq!(field(k), "scopes[1]");
    }
}
