//! API keys' secrets and whether requests need a key. A key's secret is
//! shown once, when it is made; engram keeps only a keyed hash of it (the
//! HTTP layer checks keys: `http::key_check`).

pub mod gate;
pub mod secret;

use crate::config::Settings;
use secret::{Pepper, SecretError};

/// The pepper the settings name: from `auth.pepper_env`, or the file
/// beside the database (made on first use).
pub fn pepper(settings: &Settings) -> Result<Pepper, SecretError> {
    match &settings.auth.pepper_env {
        Some(var) => {
            let text = std::env::var(var).map_err(|_| SecretError::PepperUnset(var.clone()))?;
            Pepper::from_hex(&text, var)
        }
        None => Pepper::load_or_create(&settings.pepper_path()),
    }
}
