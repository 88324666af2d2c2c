//! The trust context a caller presents with every read: it sees a record
//! when the record's sensitivity is at most `max_sensitivity` and the
//! record's scope is empty, or the context allows every scope (an empty
//! list, unless the list was narrowed to nothing), or the record's scope is
//! in the list.

use serde::{Deserialize, Serialize};

use super::record::{MemoryRecord, Sensitivity};
use super::validate::{check_name, null_as_default, Validated, ValidationError};

/// Most scopes one trust context may list.
pub const MAX_TRUST_SCOPES: usize = 100;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TrustContext {
    pub max_sensitivity: Sensitivity,
    /// Recorded for logs; does not change visibility.
    #[serde(default)]
    pub authenticated: bool,
    /// Recorded for logs; does not change visibility.
    #[serde(default)]
    #[schema(schema_with = actor_id)]
    pub actor_id: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = scopes)]
    pub scopes: Vec<String>,
    /// The scopes are a limit even when there are none: a request's scopes
    /// narrowed by a key's grant to nothing see unscoped records only, never
    /// every scope. Set by the server, never read from a request.
    #[serde(skip)]
    pub scopes_narrowed: bool,
}

fn actor_id() -> utoipa::openapi::Object {
    let mut actor = super::schema::optional_name();
    actor.description = Some("Recorded for logs; does not change visibility.".into());
    actor
}

fn scopes() -> utoipa::openapi::Array {
    let mut scopes = super::schema::list(
        super::schema::optional_name_item(),
        0,
        MAX_TRUST_SCOPES,
        true,
    );
    scopes.description = Some(
        "The scopes whose records are visible besides unscoped ones; none (or `null`): every scope."
            .into(),
    );
    scopes
}

impl TrustContext {
    /// Checks the `trust` a request presents: its lists within bounds.
    pub fn checked(trust: TrustContext) -> Validated<TrustContext> {
        if trust.scopes.len() > MAX_TRUST_SCOPES {
            return Err(ValidationError::new(
                "trust.scopes",
                format!(
                    "too many scopes: {} given, maximum is {MAX_TRUST_SCOPES}",
                    trust.scopes.len()
                ),
            ));
        }
        for (i, scope) in trust.scopes.iter().enumerate() {
            check_name(&format!("trust.scopes[{i}]"), scope)?;
        }
        if let Some(actor) = &trust.actor_id {
            check_name("trust.actor_id", actor)?;
        }
        Ok(trust)
    }

    /// A context as a request states it, for tests.
    #[cfg(test)]
    pub(crate) fn stated(max_sensitivity: Sensitivity, scopes: &[&str]) -> TrustContext {
        TrustContext {
            max_sensitivity,
            authenticated: true,
            actor_id: Some("a".into()),
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            scopes_narrowed: false,
        }
    }

    pub fn allows(&self, record: &MemoryRecord) -> bool {
        self.allows_parts(record.sensitivity, record.scope.as_deref())
    }

    pub fn allows_parts(&self, sensitivity: Sensitivity, scope: Option<&str>) -> bool {
        sensitivity <= self.max_sensitivity && self.allows_scope(scope)
    }

    /// Whether records in `scope` are visible, sensitivity aside.
    pub fn allows_scope(&self, scope: Option<&str>) -> bool {
        match scope {
            None => true,
            Some(scope) => self.every_scope() || self.scopes.iter().any(|s| s == scope),
        }
    }

    /// Every scope is visible.
    pub fn every_scope(&self) -> bool {
        self.scopes.is_empty() && !self.scopes_narrowed
    }

    /// The scopes a query may return besides unscoped records; `None` when
    /// every scope is allowed.
    pub fn scope_filter(&self) -> Option<Vec<String>> {
        if self.every_scope() {
            None
        } else {
            let mut scopes = self.scopes.clone();
            scopes.sort();
            scopes.dedup();
            Some(scopes)
        }
    }
}

/// Who asks for an operation, and what it may see: every service
/// operation takes one. Without keys, reads take their trust from the
/// request and writes are unrestricted; with a key, both come from the
/// key's grant (see `access::Access`).
#[derive(Debug, Clone, PartialEq)]
pub struct Caller {
    /// For logs and attribution; `None` when the caller is anonymous.
    pub identity: Option<String>,
    /// The effective trust: what the caller may see and touch.
    pub trust: TrustContext,
    /// The API key the request was made with: audit entries name it.
    pub key: Option<String>,
    /// Where a new record without a scope goes (a scoped key's first
    /// scope); `None`: it stays unscoped.
    pub default_scope: Option<String>,
}

impl Caller {
    /// A caller that presented `trust` with its request.
    pub fn with_trust(trust: TrustContext) -> Caller {
        Caller {
            identity: trust.actor_id.clone(),
            trust,
            key: None,
            default_scope: None,
        }
    }

    /// A caller that may see and change everything: writes while the
    /// service has no authentication, and the service's own jobs.
    pub fn unrestricted(identity: Option<String>) -> Caller {
        Caller {
            trust: TrustContext {
                max_sensitivity: Sensitivity::Hyper,
                authenticated: false,
                actor_id: identity.clone(),
                scopes: Vec::new(),
                scopes_narrowed: false,
            },
            identity,
            key: None,
            default_scope: None,
        }
    }

    /// Sees every sensitivity in every scope.
    pub fn is_unrestricted(&self) -> bool {
        self.trust.max_sensitivity == Sensitivity::Hyper && self.trust.every_scope()
    }

    pub fn may_see(&self, record: &MemoryRecord) -> bool {
        self.trust.allows(record)
    }

    /// The actor an audit entry names for what this caller does while
    /// claiming to be `claimed` (see [`signed`]).
    pub fn actor(&self, claimed: &str) -> String {
        signed(self.key.as_deref(), claimed)
    }
}

/// The actor an audit entry names: with a key, the key's name, and what
/// the request claimed beside it when that differs (`"indexer (as
/// updater-agent)"`), so the claim is kept but cannot pass for the key.
pub fn signed(key: Option<&str>, claimed: &str) -> String {
    match key {
        None => claimed.to_string(),
        Some(key) if key == claimed || claimed.is_empty() => key.to_string(),
        Some(key) => format!("{key} (as {claimed})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trust(max: Sensitivity, scopes: &[&str]) -> TrustContext {
        TrustContext::stated(max, scopes)
    }

    #[test]
    fn sensitivity_is_visible_up_to_the_maximum() {
        let t = trust(Sensitivity::Medium, &[]);
        for s in Sensitivity::ALL {
            assert_eq!(t.allows_parts(*s, None), *s <= Sensitivity::Medium, "{s}");
        }
    }

    #[test]
    fn scopes_gate_scoped_records_only() {
        let listed = trust(Sensitivity::Hyper, &["p1"]);
        assert!(listed.allows_parts(Sensitivity::Low, None));
        assert!(listed.allows_parts(Sensitivity::Low, Some("p1")));
        assert!(!listed.allows_parts(Sensitivity::Low, Some("p2")));
        let open = trust(Sensitivity::Hyper, &[]);
        assert!(open.allows_parts(Sensitivity::Low, Some("anything")));
        assert_eq!(open.scope_filter(), None);
        let none = TrustContext {
            scopes_narrowed: true,
            ..open
        };
        assert!(none.allows_parts(Sensitivity::Low, None));
        assert!(!none.allows_parts(Sensitivity::Low, Some("anything")));
        assert_eq!(none.scope_filter(), Some(Vec::new()));
    }

    #[test]
    fn an_unrestricted_caller_sees_every_record() {
        let caller = Caller::unrestricted(Some("engram:scheduler".into()));
        for s in Sensitivity::ALL {
            assert!(caller.trust.allows_parts(*s, Some("any")));
        }
        let limited = Caller::with_trust(trust(Sensitivity::Low, &["p"]));
        assert_eq!(limited.identity.as_deref(), Some("a"));
        assert!(!limited.trust.allows_parts(Sensitivity::High, None));
    }

    #[test]
    fn a_key_signs_what_it_does_and_keeps_the_claim_beside() {
        assert_eq!(signed(None, "agent"), "agent");
        assert_eq!(signed(Some("indexer"), "indexer"), "indexer");
        assert_eq!(
            signed(Some("indexer"), "updater-agent"),
            "indexer (as updater-agent)"
        );
    }

    #[test]
    fn too_many_scopes_are_refused() {
        let scopes: Vec<String> = (0..=MAX_TRUST_SCOPES).map(|i| format!("s{i}")).collect();
        let scopes: Vec<&str> = scopes.iter().map(String::as_str).collect();
        let err = TrustContext::checked(trust(Sensitivity::Low, &scopes)).unwrap_err();
        assert_eq!(err.field, "trust.scopes");
    }
}
