//! Which key a request's secret is: [`KeyCheck`] answers from the keys it
//! verified in the last [`KEY_RECHECK`], and reads the others on the
//! storage readers (with their deadline), never on an HTTP worker. A key
//! revoked here is forgotten at once; one revoked by another instance
//! sharing the database is refused here within [`KEY_RECHECK`], when its
//! entry is read again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::actors::storage::Reader;
use crate::auth::secret::Pepper;
use crate::domain::access::ApiKey;
use crate::service::keys::{AnyKey, Authenticate};
use crate::service::ServiceError;

/// How long a verified key is taken as still active without reading it
/// again: the longest a revocation made by another instance goes unseen.
pub const KEY_RECHECK: Duration = Duration::from_millis(750);

/// Most keys kept verified at once.
const CAPACITY: usize = 4096;

/// Keys verified recently, by the keyed hash of their secret (never the
/// secret itself).
#[derive(Default)]
pub struct KeyCache {
    keys: HashMap<Vec<u8>, (Arc<ApiKey>, Instant)>,
}

impl KeyCache {
    /// The key of `hash`, if it was verified less than [`KEY_RECHECK`]
    /// before `now`.
    pub fn fresh(&self, hash: &[u8], now: Instant) -> Option<Arc<ApiKey>> {
        self.keys
            .get(hash)
            .filter(|(_, at)| now.saturating_duration_since(*at) < KEY_RECHECK)
            .map(|(key, _)| key.clone())
    }

    /// `key` was found active for `hash` at `now`. When the cache is full,
    /// the entries too old to be used go first, then any.
    pub fn verified(&mut self, hash: Vec<u8>, key: Arc<ApiKey>, now: Instant) {
        if self.keys.len() >= CAPACITY && !self.keys.contains_key(&hash) {
            self.keys
                .retain(|_, (_, at)| now.saturating_duration_since(*at) < KEY_RECHECK);
            if self.keys.len() >= CAPACITY {
                let any = self.keys.keys().next().cloned();
                if let Some(any) = any {
                    self.keys.remove(&any);
                }
            }
        }
        self.keys.insert(hash, (key, now));
    }

    /// The key `name` was revoked: none of its entries is used again.
    pub fn forget(&mut self, name: &str) {
        self.keys.retain(|_, (key, _)| key.name != name);
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// Finds the keys of presented secrets, for the gatekeeper.
pub struct KeyCheck {
    pepper: Arc<Pepper>,
    reader: Reader,
    cache: Mutex<KeyCache>,
}

impl KeyCheck {
    pub fn new(pepper: Arc<Pepper>, reader: Reader) -> KeyCheck {
        KeyCheck {
            pepper,
            reader,
            cache: Mutex::default(),
        }
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, KeyCache> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The active key whose secret `secret` is, if any.
    pub async fn key(&self, secret: &str) -> Result<Option<Arc<ApiKey>>, ServiceError> {
        let hash = self.pepper.hash(secret);
        if let Some(key) = self.cache().fresh(&hash, Instant::now()) {
            return Ok(Some(key));
        }
        let found = self
            .reader
            .read(Authenticate { hash: hash.clone() })
            .await?
            .map(Arc::new);
        if let Some(key) = &found {
            self.cache().verified(hash, key.clone(), Instant::now());
        }
        Ok(found)
    }

    /// Whether any key was ever made (revoked ones count).
    pub async fn any_key(&self) -> Result<bool, ServiceError> {
        self.reader.read(AnyKey).await
    }

    /// Key `name` was revoked here.
    pub fn forget(&self, name: &str) {
        self.cache().forget(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::access::Grant;
    use crate::domain::record::Sensitivity;

    fn key(name: &str) -> Arc<ApiKey> {
        Arc::new(ApiKey {
            name: name.to_string(),
            grant: Grant {
                roles: Default::default(),
                max_sensitivity: Sensitivity::Low,
                scopes: vec![],
            },
            rate: None,
            created_at: crate::domain::time::parse_rfc3339("2026-01-01T00:00:00Z").unwrap(),
            revoked_at: None,
        })
    }

    #[test]
    fn a_verified_key_is_used_until_it_is_due_a_recheck() {
        let mut cache = KeyCache::default();
        let start = Instant::now();
        assert!(cache.fresh(b"h", start).is_none());
        cache.verified(b"h".to_vec(), key("a"), start);
        assert_eq!(cache.fresh(b"h", start).unwrap().name, "a");
        let almost = start + KEY_RECHECK - Duration::from_millis(1);
        assert!(cache.fresh(b"h", almost).is_some());
        assert!(cache.fresh(b"h", start + KEY_RECHECK).is_none());
        assert!(cache.fresh(b"other", start).is_none());
    }

    #[test]
    fn a_revoked_key_is_forgotten_whatever_its_secret() {
        let mut cache = KeyCache::default();
        let now = Instant::now();
        cache.verified(b"h1".to_vec(), key("a"), now);
        cache.verified(b"h2".to_vec(), key("b"), now);
        cache.forget("a");
        assert!(cache.fresh(b"h1", now).is_none());
        assert!(cache.fresh(b"h2", now).is_some());
    }

    #[test]
    fn the_cache_is_bounded_and_drops_stale_entries_first() {
        let mut cache = KeyCache::default();
        let old = Instant::now();
        let now = old + KEY_RECHECK * 2;
        for i in 0..CAPACITY {
            cache.verified(format!("old{i}").into_bytes(), key("k"), old);
        }
        cache.verified(b"new".to_vec(), key("k"), now);
        assert_eq!(cache.len(), 1, "every stale entry went first");
        for i in 0..CAPACITY + 10 {
            cache.verified(format!("n{i}").into_bytes(), key("k"), now);
        }
        assert_eq!(cache.len(), CAPACITY);
        assert!(cache
            .fresh(format!("n{}", CAPACITY + 9).as_bytes(), now)
            .is_some());
    }
}
