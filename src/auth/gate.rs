//! Whether requests need a key: decided from `auth.mode`, the address the
//! service listens on and whether any key was ever made.

use std::net::SocketAddr;

use crate::config::AuthMode;

/// How the service treats requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protection {
    /// No key needed: trust is what each request states.
    Open,
    /// Every request but `/healthz` and `/readyz` needs a key.
    Keys,
}

/// Why the service will not start as configured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "engram would listen on {0} with no API key, so anyone who can reach it could read and \
     change every memory. Create a key first (engram keys create --name NAME --role admin), \
     listen on a loopback address, or set auth.mode = \"off\" to run without keys on purpose"
)]
pub struct Unprotected(pub SocketAddr);

/// The protection at start-up: `keys_exist` tells whether any key was
/// ever made (revoked ones count: revoking every key does not open the
/// service).
pub fn protection(
    mode: AuthMode,
    listen: SocketAddr,
    keys_exist: bool,
) -> Result<Protection, Unprotected> {
    match mode {
        AuthMode::Off => Ok(Protection::Open),
        AuthMode::Required => Ok(Protection::Keys),
        AuthMode::Auto if keys_exist => Ok(Protection::Keys),
        AuthMode::Auto if listen.ip().is_loopback() => Ok(Protection::Open),
        AuthMode::Auto => Err(Unprotected(listen)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn auto_is_open_only_on_loopback_while_no_key_exists_and_the_others_are_fixed() {
        use AuthMode::{Auto, Off, Required};
        use Protection::{Keys, Open};
        for (mode, listen, keys_exist, expected) in [
            (Auto, "127.0.0.1:8080", false, Open),
            (Auto, "[::1]:8080", false, Open),
            (Auto, "127.0.0.1:8080", true, Keys),
            (Auto, "0.0.0.0:8080", true, Keys),
            (Required, "0.0.0.0:8080", false, Keys),
            (Off, "0.0.0.0:8080", true, Open),
        ] {
            assert_eq!(
                protection(mode, addr(listen), keys_exist),
                Ok(expected),
                "{mode:?} on {listen}, keys {keys_exist}"
            );
        }
        let refused = protection(Auto, addr("0.0.0.0:8080"), false).unwrap_err();
        let message = refused.to_string();
        assert!(message.contains("engram keys create"), "{message}");
        assert!(message.contains("auth.mode = \"off\""), "{message}");
    }
}
