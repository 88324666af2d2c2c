//! What an API key may do and see: its roles, and the grant that narrows
//! every request made with it. A request's own trust is narrowed by the
//! grant, never widened; the identity in it comes from the key, not from
//! the request.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::record::Sensitivity;
use super::time::Timestamp;
use super::trust::{Caller, TrustContext};
use super::validate::{Validated, ValidationError, RESERVED_ACTOR_PREFIX};

/// What a key may do; `admin` implies every other role.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Retrieval, reads by id, history.
    Read,
    /// Ingest, batches, records, outcomes, reinforce, penalize.
    Write,
    /// Supersede, fork, retract, merge, contest.
    Revise,
    /// `/metrics` and `/v1/metrics`.
    Metrics,
    /// Everything, including jobs, keys and the import fields of records.
    Admin,
}

impl Role {
    pub const ALL: &'static [Role] = &[
        Role::Read,
        Role::Write,
        Role::Revise,
        Role::Metrics,
        Role::Admin,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Read => "read",
            Role::Write => "write",
            Role::Revise => "revise",
            Role::Metrics => "metrics",
            Role::Admin => "admin",
        }
    }

    pub fn parse(name: &str) -> Option<Role> {
        Role::ALL.iter().copied().find(|r| r.as_str() == name)
    }
}

/// The most a key may see and what it may do.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Grant {
    pub max_sensitivity: Sensitivity,
    /// The scopes it may see and write; empty: every scope.
    pub scopes: Vec<String>,
    pub roles: BTreeSet<Role>,
}

/// A key as stored: never its secret.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ApiKey {
    /// Unique for ever; what audit entries name as the actor.
    pub name: String,
    #[serde(flatten)]
    pub grant: Grant,
    /// Requests per second; `None`: the configured default.
    pub rate: Option<f64>,
    #[serde(with = "super::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
    #[serde(with = "super::time::rfc3339_option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub revoked_at: Option<Timestamp>,
}

/// Longest key name.
pub const MAX_KEY_NAME: usize = 64;

/// The fewest and the most requests per second a key may be held to: a
/// rate is a finite number in this range, so the limiter's period (its
/// inverse) is always a duration it can hold.
pub const MIN_RATE: f64 = 0.001;
pub const MAX_RATE: f64 = 1_000_000.0;

/// A rate of requests per second (a key's, or `auth.default_rate`):
/// finite and within [`MIN_RATE`]..=[`MAX_RATE`].
pub fn check_rate(field: &str, rate: f64) -> Validated<()> {
    if rate.is_finite() && (MIN_RATE..=MAX_RATE).contains(&rate) {
        return Ok(());
    }
    Err(ValidationError::new(
        field,
        format!(
            "must be a number of requests per second from {MIN_RATE} to {MAX_RATE}, got {rate}"
        ),
    ))
}

/// A key name: 1 to 64 letters, digits, `.`, `_`, `-` or `:` (it is shown
/// in audit entries and logs, and typed on command lines), not starting
/// with the prefix of the service's own actors.
pub fn check_key_name(name: &str) -> Validated<()> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':');
    if name.is_empty() || name.len() > MAX_KEY_NAME || !name.chars().all(allowed) {
        return Err(ValidationError::new(
            "name",
            format!(
                "must be 1 to {MAX_KEY_NAME} letters, digits, '.', '_', '-' or ':', got {name:?}"
            ),
        ));
    }
    if name.starts_with(RESERVED_ACTOR_PREFIX) {
        return Err(ValidationError::new(
            "name",
            format!("names starting with {RESERVED_ACTOR_PREFIX:?} are reserved for the service"),
        ));
    }
    Ok(())
}

impl Grant {
    pub fn has(&self, role: Role) -> bool {
        self.roles.contains(&Role::Admin) || self.roles.contains(&role)
    }

    /// Whether everything `other` allows, this grant allows too: its roles,
    /// a ceiling no higher, and scopes among these (a grant of every scope
    /// is within only another of every scope). A key manages only keys
    /// within its own grant, so delegation can never widen it. The error
    /// names the field at fault.
    pub fn covers(&self, other: &Grant) -> Result<(), String> {
        if let Some(role) = other.roles.iter().find(|role| !self.has(**role)) {
            return Err(format!(
                "roles: this key may not give the role {}",
                role.as_str()
            ));
        }
        if other.max_sensitivity > self.max_sensitivity {
            return Err(format!(
                "max_sensitivity: this key may give at most {}",
                self.max_sensitivity.as_str()
            ));
        }
        if !self.scopes.is_empty() {
            if other.scopes.is_empty() {
                return Err(
                    "scopes: this key may not give every scope; name scopes among its own"
                        .to_string(),
                );
            }
            if let Some(i) = other.scopes.iter().position(|s| !self.scopes.contains(s)) {
                return Err(format!("scopes[{i}]: not among this key's scopes"));
            }
        }
        Ok(())
    }

    /// The trust of a request made with key `name`: the lower of the two
    /// sensitivities, and the scopes both allow. Naming only scopes outside
    /// the grant leaves unscoped records, never every scope. Without
    /// `requested`, the grant itself.
    pub fn narrow(&self, name: &str, requested: Option<&TrustContext>) -> TrustContext {
        let (max_sensitivity, scopes) = match requested {
            None => (self.max_sensitivity, self.scopes.clone()),
            Some(asked) => {
                let max = asked.max_sensitivity.min(self.max_sensitivity);
                let scopes = if asked.every_scope() {
                    self.scopes.clone()
                } else if self.scopes.is_empty() {
                    asked.scopes.clone()
                } else {
                    asked
                        .scopes
                        .iter()
                        .filter(|s| self.scopes.contains(s))
                        .cloned()
                        .collect()
                };
                (max, scopes)
            }
        };
        // Either side limited the scopes, so an empty result is a limit too.
        let scopes_narrowed = scopes.is_empty()
            && (!self.scopes.is_empty() || requested.is_some_and(|t| !t.every_scope()));
        TrustContext {
            max_sensitivity,
            authenticated: true,
            actor_id: Some(name.to_string()),
            scopes,
            scopes_narrowed,
        }
    }
}

/// Who a request comes from, as authentication found it.
#[derive(Debug, Clone, PartialEq)]
pub enum Access {
    /// No key is needed (`auth.mode` off, or auto on loopback before any
    /// key exists): the request states its own trust and may do anything.
    Open,
    /// A request made with this key (shared: every extractor of the
    /// request holds it).
    Key(std::sync::Arc<ApiKey>),
}

impl Access {
    pub fn may(&self, role: Role) -> bool {
        match self {
            Access::Open => true,
            Access::Key(key) => key.grant.has(role),
        }
    }

    /// Whether this caller may make a key of `grant`: any key without one,
    /// with one only keys within its own grant (the error names the field
    /// beyond it).
    pub fn may_give(&self, grant: &Grant) -> Result<(), String> {
        match self {
            Access::Open => Ok(()),
            Access::Key(key) => key.grant.covers(grant),
        }
    }

    /// The rate a new key gets when `asked` is asked for it (`None`: the
    /// configured default, `default`): a key may give at most its own
    /// rate; when none is asked, a key held to less than the default gives
    /// its own, so no key it makes can outpace it. The error names the
    /// field.
    pub fn rate_to_give(&self, asked: Option<f64>, default: f64) -> Result<Option<f64>, String> {
        let Access::Key(key) = self else {
            return Ok(asked);
        };
        let own = key.rate.unwrap_or(default);
        match asked {
            Some(rate) if rate > own => Err(format!(
                "rate: this key may give at most its own rate, {own} requests per second"
            )),
            Some(rate) => Ok(Some(rate)),
            None if own < default => Ok(Some(own)),
            None => Ok(None),
        }
    }

    /// Whether this caller may see and manage a key of `grant`: the keys
    /// it may give.
    pub fn manages(&self, grant: &Grant) -> bool {
        self.may_give(grant).is_ok()
    }

    pub fn key_name(&self) -> Option<&str> {
        match self {
            Access::Open => None,
            Access::Key(key) => Some(&key.name),
        }
    }

    /// The caller of a read: the trust the request states narrowed by the
    /// key's grant. Without a key the request must state it; with one, a
    /// request that states none reads with the grant.
    pub fn reader(&self, requested: Option<TrustContext>) -> Validated<Caller> {
        let requested = requested.map(TrustContext::checked).transpose()?;
        match self {
            Access::Open => requested
                .map(Caller::with_trust)
                .ok_or_else(|| ValidationError::new("trust", "trust context is required")),
            Access::Key(key) => Ok(Caller {
                identity: Some(key.name.clone()),
                trust: key.grant.narrow(&key.name, requested.as_ref()),
                key: Some(key.name.clone()),
                default_scope: None,
            }),
        }
    }

    /// The caller of an operation that reads and writes as the request's
    /// trust allows (topics): [`Access::reader`], new things without a
    /// scope going into a scoped key's first scope.
    pub fn acting(&self, requested: Option<TrustContext>) -> Validated<Caller> {
        let mut caller = self.reader(requested)?;
        if let Access::Key(key) = self {
            caller.default_scope = key.grant.scopes.first().cloned();
        }
        Ok(caller)
    }

    /// The caller of a write: everything without a key; with one, the
    /// grant, new records without a scope going into its first scope.
    pub fn writer(&self) -> Caller {
        match self {
            Access::Open => Caller::unrestricted(None),
            Access::Key(key) => Caller {
                identity: Some(key.name.clone()),
                trust: key.grant.narrow(&key.name, None),
                key: Some(key.name.clone()),
                default_scope: key.grant.scopes.first().cloned(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(max: Sensitivity, scopes: &[&str], roles: &[Role]) -> Grant {
        Grant {
            max_sensitivity: max,
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            roles: roles.iter().copied().collect(),
        }
    }

    fn asked(max: Sensitivity, scopes: &[&str]) -> TrustContext {
        TrustContext::stated(max, scopes)
    }

    #[test]
    fn a_rate_is_finite_and_in_range() {
        for good in [MIN_RATE, 1.0, 2.5, MAX_RATE] {
            assert!(check_rate("rate", good).is_ok(), "{good}");
        }
        for bad in [
            0.0,
            -1.0,
            1e-19,
            5e-324,
            0.0009,
            1e9,
            f64::NAN,
            f64::INFINITY,
        ] {
            assert_eq!(check_rate("rate", bad).unwrap_err().field, "rate", "{bad}");
        }
    }

    #[test]
    fn a_key_gives_no_rate_above_its_own() {
        let key = |rate: Option<f64>| {
            let Access::Key(mut made) = key(grant(Sensitivity::Low, &[], &[Role::Admin])) else {
                unreachable!()
            };
            std::sync::Arc::make_mut(&mut made).rate = rate;
            Access::Key(made)
        };
        assert_eq!(Access::Open.rate_to_give(Some(1e6), 100.0), Ok(Some(1e6)));
        assert_eq!(Access::Open.rate_to_give(None, 100.0), Ok(None));
        let slow = key(Some(2.0));
        assert!(slow
            .rate_to_give(Some(1e9), 100.0)
            .unwrap_err()
            .starts_with("rate:"));
        assert_eq!(slow.rate_to_give(Some(2.0), 100.0), Ok(Some(2.0)));
        assert_eq!(slow.rate_to_give(Some(0.5), 100.0), Ok(Some(0.5)));
        // Without a rate asked, its own where the default is faster.
        assert_eq!(slow.rate_to_give(None, 100.0), Ok(Some(2.0)));
        assert_eq!(key(Some(1e6)).rate_to_give(None, 100.0), Ok(None));
        let default = key(None);
        assert_eq!(default.rate_to_give(None, 100.0), Ok(None));
        assert_eq!(default.rate_to_give(Some(100.0), 100.0), Ok(Some(100.0)));
        assert!(default.rate_to_give(Some(101.0), 100.0).is_err());
    }

    #[test]
    fn roles_parse_and_admin_holds_them_all() {
        for role in Role::ALL {
            assert_eq!(Role::parse(role.as_str()), Some(*role));
        }
        assert_eq!(Role::parse("root"), None);
        let admin = grant(Sensitivity::Low, &[], &[Role::Admin]);
        assert!(Role::ALL.iter().all(|r| admin.has(*r)));
        let reader = grant(Sensitivity::Low, &[], &[Role::Read]);
        assert!(reader.has(Role::Read));
        assert!(!reader.has(Role::Write) && !reader.has(Role::Admin));
    }

    #[test]
    fn trust_is_narrowed_never_widened() {
        let g = grant(Sensitivity::Medium, &["a", "b"], &[Role::Read]);
        // Asking for more gets the grant.
        let t = g.narrow("k", Some(&asked(Sensitivity::Hyper, &[])));
        assert_eq!(t.max_sensitivity, Sensitivity::Medium);
        assert_eq!(t.scopes, vec!["a", "b"]);
        assert!(!t.allows_parts(Sensitivity::Low, Some("c")));
        // Asking for less gets less.
        let t = g.narrow("k", Some(&asked(Sensitivity::Low, &["b", "c"])));
        assert_eq!(t.max_sensitivity, Sensitivity::Low);
        assert_eq!(t.scopes, vec!["b"]);
        // Only scopes outside the grant: unscoped records only.
        let t = g.narrow("k", Some(&asked(Sensitivity::Low, &["c"])));
        assert!(t.allows_parts(Sensitivity::Low, None));
        assert!(!t.allows_parts(Sensitivity::Low, Some("a")));
        assert!(!t.allows_parts(Sensitivity::Low, Some("c")));
        assert_eq!(t.scope_filter(), Some(Vec::new()));
        // No trust in the request: the grant's.
        let t = g.narrow("k", None);
        assert_eq!(
            (t.max_sensitivity, t.scopes.len()),
            (Sensitivity::Medium, 2)
        );
    }

    #[test]
    fn an_open_grant_keeps_the_request_s_own_limits() {
        let g = grant(Sensitivity::Hyper, &[], &[Role::Read]);
        let t = g.narrow("k", Some(&asked(Sensitivity::High, &["x"])));
        assert_eq!(t.max_sensitivity, Sensitivity::High);
        assert!(t.allows_parts(Sensitivity::Low, Some("x")));
        assert!(!t.allows_parts(Sensitivity::Low, Some("y")));
        let t = g.narrow("k", None);
        assert!(t.every_scope());
        assert!(t.allows_parts(Sensitivity::Hyper, Some("y")));
    }

    #[test]
    fn identity_comes_from_the_key() {
        let g = grant(Sensitivity::Low, &[], &[Role::Read]);
        let t = g.narrow("indexer", Some(&asked(Sensitivity::Low, &[])));
        assert_eq!(t.actor_id.as_deref(), Some("indexer"));
        assert!(t.authenticated);
    }

    #[test]
    fn key_names_are_short_plain_words() {
        for ok in ["indexer", "team-a:reader", "k.1_2"] {
            assert!(check_key_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "with space",
            "new\nline",
            "ünï",
            &"k".repeat(MAX_KEY_NAME + 1),
        ] {
            assert_eq!(check_key_name(bad).unwrap_err().field, "name", "{bad:?}");
        }
    }

    fn key(grant: Grant) -> Access {
        Access::Key(std::sync::Arc::new(ApiKey {
            name: "k".into(),
            grant,
            rate: None,
            created_at: crate::domain::time::from_micros(0),
            revoked_at: None,
        }))
    }

    #[test]
    fn open_access_reads_with_the_stated_trust_and_writes_anything() {
        let err = Access::Open.reader(None).unwrap_err();
        assert_eq!(err.to_string(), "trust: trust context is required");
        let caller = Access::Open
            .reader(Some(asked(Sensitivity::Hyper, &[])))
            .unwrap();
        assert!(caller.is_unrestricted() && caller.key.is_none());
        assert!(Access::Open.writer().is_unrestricted());
        assert!(Role::ALL.iter().all(|r| Access::Open.may(*r)));
    }

    #[test]
    fn a_key_reads_within_its_grant_and_writes_into_its_first_scope() {
        let access = key(grant(Sensitivity::Medium, &["a", "b"], &[Role::Write]));
        let reader = access.reader(None).unwrap();
        assert_eq!(reader.trust.max_sensitivity, Sensitivity::Medium);
        assert_eq!(reader.key.as_deref(), Some("k"));
        let writer = access.writer();
        assert_eq!(writer.default_scope.as_deref(), Some("a"));
        assert!(!writer.trust.allows_parts(Sensitivity::High, Some("a")));
        assert!(!writer.trust.allows_parts(Sensitivity::Low, Some("c")));
        assert!(access.may(Role::Write) && !access.may(Role::Read));
        let open = key(grant(Sensitivity::Hyper, &[], &[Role::Admin]));
        assert_eq!(open.writer().default_scope, None);
        assert!(open.writer().is_unrestricted());
    }

    #[test]
    fn a_key_manages_only_keys_within_its_grant() {
        let narrow = grant(Sensitivity::Low, &["a"], &[Role::Admin]);
        assert!(narrow
            .covers(&grant(Sensitivity::Low, &["a"], &[Role::Read]))
            .is_ok());
        assert!(narrow.covers(&narrow).is_ok());
        let fault = |g: Grant| narrow.covers(&g).unwrap_err();
        assert!(
            fault(grant(Sensitivity::Hyper, &["a"], &[Role::Read])).starts_with("max_sensitivity")
        );
        assert!(fault(grant(Sensitivity::Low, &[], &[Role::Read])).starts_with("scopes"));
        assert!(fault(grant(Sensitivity::Low, &["a", "b"], &[Role::Read])).starts_with("scopes[1]"));
        let reader = grant(Sensitivity::Hyper, &[], &[Role::Read, Role::Write]);
        assert!(reader
            .covers(&grant(Sensitivity::Low, &[], &[Role::Admin]))
            .unwrap_err()
            .starts_with("roles"));
        // Every scope covers any list of scopes.
        assert!(reader
            .covers(&grant(Sensitivity::Low, &["z"], &[Role::Read]))
            .is_ok());
        assert!(key(narrow.clone()).manages(&narrow));
        assert!(!key(narrow).manages(&reader));
        assert!(Access::Open.manages(&reader));
    }

    #[test]
    fn reserved_names_are_not_key_names() {
        assert_eq!(
            check_key_name("engram:scheduler").unwrap_err().field,
            "name"
        );
    }
}
