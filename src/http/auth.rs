//! Who may call what: every request but the health checks passes the
//! gatekeeper, which finds its key (`Authorization: Bearer …`) and applies
//! the rate limits; every route then checks the role it needs. Handlers
//! take the [`Access`] found and build their callers from it.

use std::collections::HashMap;
use std::future::{ready, Ready};
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderMap};
use actix_web::middleware::Next;
use actix_web::{web, FromRequest, HttpMessage, HttpRequest, ResponseError};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultDirectRateLimiter, DefaultKeyedRateLimiter, Quota, RateLimiter};

use super::key_check::{KeyCheck, KEY_RECHECK};
use crate::config::AuthMode;
use crate::domain::access::{Access, ApiKey, Role, MAX_RATE, MIN_RATE};
use crate::error::{ApiError, Code};

/// Paths anyone may call: load balancers and orchestrators probe them. (The
/// API document, its page and the dashboard's files are public too:
/// `openapi::is_public`, `ui::is_public`.)
const PUBLIC_PATHS: [&str; 2] = ["/healthz", "/readyz"];

/// Decides, for each request, which key made it and whether it may go on.
pub struct Gatekeeper {
    mode: AuthMode,
    /// Once a key exists (made here or by `engram keys` in another
    /// process), `auto` needs keys for good: keys are revoked, never
    /// deleted.
    keys_exist: AtomicBool,
    /// Finds the key of a secret: recently verified, or read on the
    /// storage readers within their deadline (then `503` past it).
    keys: KeyCheck,
    default_rate: f64,
    /// The engram processes sharing the database (1 on SQLite): each
    /// allows its share of a rate, so together they allow the rate.
    instances: Arc<AtomicUsize>,
    /// Each key's limiter, and the number of instances it was made for.
    per_key: Mutex<HashMap<String, (usize, Arc<DefaultDirectRateLimiter>)>>,
    per_address: Mutex<(usize, Arc<DefaultKeyedRateLimiter<IpAddr>>)>,
    clock: DefaultClock,
}

impl Gatekeeper {
    pub fn new(
        mode: AuthMode,
        keys_exist: bool,
        keys: KeyCheck,
        default_rate: f64,
        instances: Arc<AtomicUsize>,
    ) -> Gatekeeper {
        Gatekeeper {
            mode,
            keys_exist: AtomicBool::new(keys_exist),
            keys,
            default_rate,
            per_address: Mutex::new((1, Arc::new(RateLimiter::keyed(quota(default_rate))))),
            instances,
            per_key: Mutex::new(HashMap::new()),
            clock: DefaultClock::default(),
        }
    }

    /// How many processes share the rates now.
    fn sharing(&self) -> usize {
        self.instances.load(Ordering::Relaxed).max(1)
    }

    /// The rate of a key that has none of its own (`auth.default_rate`).
    pub fn default_rate(&self) -> f64 {
        self.default_rate
    }

    /// A key was just made: in `auto` mode keys are needed from now on.
    pub fn key_created(&self) {
        self.keys_exist.store(true, Ordering::Release);
    }

    /// Key `name` was just revoked: refused from the next request on.
    pub fn key_revoked(&self, name: &str) {
        self.keys.forget(name);
    }

    /// Whether requests need a key now.
    pub fn keys_required(&self) -> bool {
        match self.mode {
            AuthMode::Off => false,
            AuthMode::Required => true,
            AuthMode::Auto => self.keys_exist.load(Ordering::Acquire),
        }
    }

    /// In `auto` mode while no key exists, looks every [`KEY_RECHECK`] for
    /// one made by another process (`engram keys create`, another
    /// instance), off the request path; stops once one exists (keys are
    /// revoked, never deleted).
    pub fn watch_for_keys(gate: web::Data<Gatekeeper>) {
        if gate.mode != AuthMode::Auto || gate.keys_exist.load(Ordering::Acquire) {
            return;
        }
        actix_web::rt::spawn(async move {
            while !gate.keys_exist.load(Ordering::Acquire) {
                actix_web::rt::time::sleep(KEY_RECHECK).await;
                match gate.keys.any_key().await {
                    Ok(true) => gate.key_created(),
                    Ok(false) => {}
                    Err(e) => tracing::warn!(error = %e, "cannot look for API keys"),
                }
            }
        });
    }

    /// The access of a request with these headers from `peer`.
    async fn access(&self, headers: &HeaderMap, peer: Option<IpAddr>) -> Result<Access, ApiError> {
        let presented = bearer(headers);
        let required = self.keys_required();
        // A key presented where none was seen yet may have been made by
        // another process since: if it is one, keys are needed from now on,
        // and this request is made with it.
        let looks = required || (self.mode == AuthMode::Auto && presented.is_ok());
        if !looks {
            return Ok(Access::Open);
        }
        let key = match presented {
            Ok(secret) => self.keys.key(secret).await.map_err(store_failed)?,
            Err(_) => None,
        };
        match key {
            Some(key) => {
                if !required {
                    self.key_created();
                }
                self.limit_key(&key)?;
                Ok(Access::Key(key))
            }
            None if !required => Ok(Access::Open),
            None => {
                // Guessing keys costs the address its rate like any other
                // unauthenticated request.
                self.limit_address(peer)?;
                Err(ApiError::new(
                    Code::Unauthenticated,
                    match presented {
                        Ok(_) => "the API key is unknown or revoked",
                        Err(why) => why,
                    },
                ))
            }
        }
    }

    /// Counts `more` requests against the rate of `access`'s key, beyond
    /// the one the gate counted: what one HTTP request carries (an MCP
    /// batch's messages) costs what it would cost sent one by one. All or
    /// none are counted; an open instance counts none.
    pub fn charge(&self, access: &Access, more: usize) -> Result<(), ApiError> {
        let Access::Key(key) = access else {
            return Ok(());
        };
        let Some(more) = u32::try_from(more).ok().and_then(NonZeroU32::new) else {
            return Ok(());
        };
        match self.limiter(key).check_n(more) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(until)) => {
                Err(self.rate_limited(until.wait_time_from(self.clock.now()), "key"))
            }
            Err(_) => Err(ApiError::new(
                Code::RateLimited,
                format!(
                    "this request carries {} requests, more than this key's rate allows at once; send fewer together",
                    u64::from(more.get()) + 1
                ),
            )
            .retry_after(1)),
        }
    }

    /// The limiter of `key`'s rate, for this process's share of it.
    fn limiter(&self, key: &ApiKey) -> Arc<DefaultDirectRateLimiter> {
        let sharing = self.sharing();
        let mut limiters = self.per_key.lock().unwrap_or_else(|p| p.into_inner());
        match limiters.get(&key.name) {
            Some((made_for, limiter)) if *made_for == sharing => limiter.clone(),
            _ => {
                let rate = key.rate.unwrap_or(self.default_rate) / sharing as f64;
                let limiter = Arc::new(RateLimiter::direct(quota(rate)));
                limiters.insert(key.name.clone(), (sharing, limiter.clone()));
                limiter
            }
        }
    }

    fn limit_key(&self, key: &ApiKey) -> Result<(), ApiError> {
        let limiter = self.limiter(key);
        limiter
            .check()
            .map_err(|until| self.rate_limited(until.wait_time_from(self.clock.now()), "key"))
    }

    fn limit_address(&self, peer: Option<IpAddr>) -> Result<(), ApiError> {
        let Some(peer) = peer else {
            return Ok(());
        };
        let sharing = self.sharing();
        let limiter = {
            let mut current = self.per_address.lock().unwrap_or_else(|p| p.into_inner());
            if current.0 != sharing {
                let rate = self.default_rate / sharing as f64;
                *current = (sharing, Arc::new(RateLimiter::keyed(quota(rate))));
            }
            current.1.clone()
        };
        // Addresses not seen for a while are forgotten, so the table does
        // not grow without bound.
        if limiter.len() > MAX_TRACKED_ADDRESSES {
            limiter.retain_recent();
        }
        limiter
            .check_key(&peer)
            .map_err(|until| self.rate_limited(until.wait_time_from(self.clock.now()), "address"))
    }

    fn rate_limited(&self, wait: Duration, whose: &str) -> ApiError {
        let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        ApiError::new(
            Code::RateLimited,
            format!(
                "too many requests from this {whose}; retry in {} ms",
                wait.as_millis()
            ),
        )
        .retry_after(seconds.max(1))
    }
}

/// Addresses tracked before the idle ones are dropped.
const MAX_TRACKED_ADDRESSES: usize = 10_000;

/// A token bucket of `rate` requests a second that holds one second's
/// worth (at least one request). Rates are checked where they are set
/// (`check_rate`), but a rate shared among instances, or one stored by an
/// older version, may lie outside that range: it is held within what a
/// period can be, never a panic.
fn quota(rate: f64) -> Quota {
    let rate = if rate.is_nan() { MIN_RATE } else { rate };
    let rate = rate.clamp(MIN_RATE / 1000.0, MAX_RATE * 1000.0);
    let period = Duration::from_secs_f64(1.0 / rate).max(Duration::from_nanos(1));
    let burst = NonZeroU32::new(rate.ceil().clamp(1.0, f64::from(u32::MAX)) as u32)
        .unwrap_or(NonZeroU32::MIN);
    Quota::with_period(period)
        .expect("the period is at least a nanosecond")
        .allow_burst(burst)
}

/// The secret of an `Authorization: Bearer …` header, or why there is
/// none.
fn bearer(headers: &HeaderMap) -> Result<&str, &'static str> {
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or("an API key is required: send it as Authorization: Bearer <secret>")?;
    let value = value
        .to_str()
        .map_err(|_| "the Authorization header is not text")?;
    let (scheme, secret) = value
        .split_once(' ')
        .ok_or("the Authorization header must be: Bearer <secret>")?;
    if !scheme.eq_ignore_ascii_case("bearer") || secret.trim().is_empty() {
        return Err("the Authorization header must be: Bearer <secret>");
    }
    Ok(secret.trim())
}

fn store_failed(error: impl std::fmt::Display) -> ApiError {
    tracing::error!(%error, "cannot check the request's API key");
    ApiError::new(
        Code::Unavailable,
        "cannot check API keys right now; retry shortly",
    )
}

/// The middleware in front of every route: finds the request's access and
/// leaves it in the request for the routes.
pub async fn authenticate(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    if PUBLIC_PATHS.contains(&req.path())
        || super::openapi::is_public(req.path())
        || super::ui::is_public(req.path())
    {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_left_body);
    }
    let gate = req
        .app_data::<web::Data<Gatekeeper>>()
        .expect("the gatekeeper is registered")
        .clone();
    let peer = req.peer_addr().map(|addr| addr.ip());
    match gate.access(req.headers(), peer).await {
        Ok(access) => {
            if let Access::Key(key) = &access {
                crate::telemetry::record_key(&key.name);
            }
            req.extensions_mut().insert(access);
            next.call(req)
                .await
                .map(ServiceResponse::map_into_left_body)
        }
        Err(error) => Ok(req
            .into_response(error.error_response())
            .map_into_right_body()),
    }
}

/// Lets the request through to its route only if its access has `role`.
pub async fn require(
    role: Role,
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let allowed = req
        .extensions()
        .get::<Access>()
        .is_some_and(|access| access.may(role));
    if allowed {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_left_body);
    }
    // The route as declared (`/v1/records/{id}/…`): an answer never
    // echoes the ids a request names.
    let route = req
        .match_pattern()
        .unwrap_or_else(|| req.path().to_string());
    let error = ApiError::new(
        Code::PermissionDenied,
        format!(
            "{} {route} needs the {} role, which this key does not have",
            req.method(),
            role.as_str()
        ),
    );
    Ok(req
        .into_response(error.error_response())
        .map_into_right_body())
}

/// The access the gatekeeper found for the request.
impl FromRequest for Access {
    type Error = ApiError;
    type Future = Ready<Result<Access, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(
            req.extensions().get::<Access>().cloned().ok_or_else(|| {
                ApiError::new(Code::Internal, "the request passed no authentication")
            }),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::HeaderValue;

    fn headers(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn only_a_bearer_header_carries_a_secret() {
        assert_eq!(bearer(&headers("Bearer engram_abc")), Ok("engram_abc"));
        assert_eq!(bearer(&headers("bearer  engram_abc ")), Ok("engram_abc"));
        for bad in ["Basic dXNlcjpwYXNz", "Bearer", "Bearer   ", "engram_abc"] {
            assert!(bearer(&headers(bad)).is_err(), "{bad:?}");
        }
        assert!(bearer(&HeaderMap::new()).is_err());
    }

    #[test]
    fn a_quota_holds_a_second_of_requests() {
        let limiter = RateLimiter::direct(quota(3.0));
        assert!((0..3).all(|_| limiter.check().is_ok()));
        assert!(limiter.check().is_err());
        let slow = RateLimiter::direct(quota(0.5));
        assert!(slow.check().is_ok());
        assert!(slow.check().is_err());
        let fast = RateLimiter::direct(quota(1e12));
        assert!((0..1000).all(|_| fast.check().is_ok()));
    }

    #[test]
    fn no_rate_makes_a_quota_panic() {
        for rate in [
            1e-19,
            5e-324,
            0.0,
            -1.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e300,
        ] {
            let limiter = RateLimiter::direct(quota(rate));
            let _ = limiter.check();
        }
    }
}
