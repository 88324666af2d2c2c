//! What an API key may do and see: its roles, and the grant that narrows
//! every request made with it. A request's own trust is narrowed by the
//! grant, never widened; the identity in it comes from the key, not from
//! the request.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::record::Sensitivity;
use super::time::Timestamp;
use super::trust::TrustContext;
use super::validate::{Validated, ValidationError};

/// What a key may do; `admin` implies every other role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq)]
pub struct Grant {
    pub max_sensitivity: Sensitivity,
    /// The scopes it may see and write; empty: every scope.
    pub scopes: Vec<String>,
    pub roles: BTreeSet<Role>,
}

/// A key as stored: never its secret.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiKey {
    /// Unique for ever; what audit entries name as the actor.
    pub name: String,
    pub grant: Grant,
    /// Requests per second; `None`: the configured default.
    pub rate: Option<f64>,
    pub created_at: Timestamp,
    pub revoked_at: Option<Timestamp>,
}

/// Longest key name.
pub const MAX_KEY_NAME: usize = 64;

/// A key name: 1 to 64 letters, digits, `.`, `_`, `-` or `:` (it is shown
/// in audit entries and logs, and typed on command lines).
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
    Ok(())
}

/// Why a key may not write a record where it asked to.
#[derive(Debug, Clone, PartialEq)]
pub enum WriteDenied {
    /// The record is more sensitive than the grant allows.
    Sensitivity {
        given: Sensitivity,
        most: Sensitivity,
    },
    /// The record's scope is not one of the grant's.
    Scope(String),
}

impl std::fmt::Display for WriteDenied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteDenied::Sensitivity { given, most } => write!(
                f,
                "this key may write records up to sensitivity {most}, not {given}"
            ),
            WriteDenied::Scope(scope) => {
                write!(f, "this key may not write into scope \"{scope}\"")
            }
        }
    }
}

impl Grant {
    pub fn has(&self, role: Role) -> bool {
        self.roles.contains(&Role::Admin) || self.roles.contains(&role)
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

    /// The scope a record this key writes goes into: the one asked for if
    /// the grant has it, or the grant's first scope when none was asked
    /// for. The record's sensitivity must be within the grant.
    pub fn write_scope(
        &self,
        sensitivity: Sensitivity,
        scope: Option<&str>,
    ) -> Result<Option<String>, WriteDenied> {
        if sensitivity > self.max_sensitivity {
            return Err(WriteDenied::Sensitivity {
                given: sensitivity,
                most: self.max_sensitivity,
            });
        }
        match scope {
            None => Ok(self.scopes.first().cloned()),
            Some(scope) if self.scopes.is_empty() || self.scopes.iter().any(|s| s == scope) => {
                Ok(Some(scope.to_string()))
            }
            Some(scope) => Err(WriteDenied::Scope(scope.to_string())),
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
        TrustContext {
            max_sensitivity: max,
            authenticated: false,
            actor_id: Some("claimed".into()),
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            scopes_narrowed: false,
        }
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

    #[test]
    fn writes_stay_within_the_grant() {
        let g = grant(Sensitivity::Medium, &["a", "b"], &[Role::Write]);
        assert_eq!(g.write_scope(Sensitivity::Low, None), Ok(Some("a".into())));
        assert_eq!(
            g.write_scope(Sensitivity::Medium, Some("b")),
            Ok(Some("b".into()))
        );
        assert_eq!(
            g.write_scope(Sensitivity::Low, Some("c")),
            Err(WriteDenied::Scope("c".into()))
        );
        let denied = g.write_scope(Sensitivity::High, Some("a")).unwrap_err();
        assert!(
            denied.to_string().contains("up to sensitivity medium"),
            "{denied}"
        );
        let open = grant(Sensitivity::Hyper, &[], &[Role::Write]);
        assert_eq!(open.write_scope(Sensitivity::Hyper, None), Ok(None));
        assert_eq!(
            open.write_scope(Sensitivity::Low, Some("z")),
            Ok(Some("z".into()))
        );
    }
}
