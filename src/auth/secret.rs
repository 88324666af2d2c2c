//! Key secrets and their hashes.
//!
//! A secret is 256 random bits, so it needs no slow password hash: it is
//! stored as HMAC-SHA256 under a pepper, a second random value kept
//! outside the database (a file beside it, readable by its owner only, or
//! an environment variable). A copy of the database alone then gives
//! nothing to try secrets against.

use std::fs::OpenOptions;
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};

/// What every secret starts with, so a leaked one is recognisable (and
/// found by secret scanners).
pub const SECRET_PREFIX: &str = "engram_";

/// Random bytes in a secret and in a pepper.
const RANDOM_BYTES: usize = 32;

#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("cannot read or create the pepper file {path}: {source}")]
    PepperFile {
        path: String,
        source: std::io::Error,
    },
    #[error("the pepper in {0} is not {RANDOM_BYTES} bytes of hex")]
    BadPepper(String),
    #[error("auth.pepper_env names {0}, which is not set")]
    PepperUnset(String),
    #[error("the system random number generator failed")]
    Random,
}

/// The key the secrets' hashes are made with.
pub struct Pepper(hmac::Key);

impl Pepper {
    /// The pepper from its hex form (a file's content or an environment
    /// variable); `source` names where it came from, for the error.
    pub fn from_hex(text: &str, source: &str) -> Result<Pepper, SecretError> {
        let bytes = from_hex(text.trim()).filter(|b| b.len() == RANDOM_BYTES);
        let bytes = bytes.ok_or_else(|| SecretError::BadPepper(source.to_string()))?;
        Ok(Pepper(hmac::Key::new(hmac::HMAC_SHA256, &bytes)))
    }

    /// The pepper in `path`, made (random, mode 0600) if the file does not
    /// exist yet.
    pub fn load_or_create(path: &Path) -> Result<Pepper, SecretError> {
        let failed = |source| SecretError::PepperFile {
            path: path.display().to_string(),
            source,
        };
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
        {
            Ok(mut file) => {
                let text = to_hex(&random()?);
                file.write_all(text.as_bytes()).map_err(failed)?;
                file.sync_all().map_err(failed)?;
                Pepper::from_hex(&text, &path.display().to_string())
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                let mut text = String::new();
                std::fs::File::open(path)
                    .and_then(|mut f| f.read_to_string(&mut text))
                    .map_err(failed)?;
                Pepper::from_hex(&text, &path.display().to_string())
            }
            Err(e) => Err(failed(e)),
        }
    }

    /// The stored form of `secret`.
    pub fn hash(&self, secret: &str) -> Vec<u8> {
        hmac::sign(&self.0, secret.as_bytes()).as_ref().to_vec()
    }
}

/// A new secret: the prefix and 256 random bits in hex.
pub fn new_secret() -> Result<String, SecretError> {
    Ok(format!("{SECRET_PREFIX}{}", to_hex(&random()?)))
}

fn random() -> Result<[u8; RANDOM_BYTES], SecretError> {
    let mut bytes = [0u8; RANDOM_BYTES];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| SecretError::Random)?;
    Ok(bytes)
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn from_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn secrets_are_random_prefixed_and_256_bits() {
        let a = new_secret().unwrap();
        let b = new_secret().unwrap();
        assert_ne!(a, b);
        assert!(a.starts_with(SECRET_PREFIX));
        assert_eq!(a.len(), SECRET_PREFIX.len() + 64);
        assert!(from_hex(&a[SECRET_PREFIX.len()..]).is_some());
    }

    #[test]
    fn a_hash_matches_its_secret_under_its_pepper_only() {
        let pepper = Pepper::from_hex(&"ab".repeat(32), "test").unwrap();
        let other = Pepper::from_hex(&"cd".repeat(32), "test").unwrap();
        let secret = new_secret().unwrap();
        let hash = pepper.hash(&secret);
        assert_eq!(hash.len(), 32);
        assert_eq!(pepper.hash(&secret), hash);
        assert_ne!(pepper.hash(&new_secret().unwrap()), hash);
        assert_ne!(other.hash(&secret), hash);
    }

    #[test]
    fn the_pepper_file_is_made_once_private_and_then_reused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("engram.db.pepper");
        let secret = new_secret().unwrap();
        let first = Pepper::load_or_create(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let again = Pepper::load_or_create(&path).unwrap();
        assert_eq!(again.hash(&secret), first.hash(&secret));
    }

    #[test]
    fn a_bad_pepper_is_refused_naming_its_source() {
        for text in ["", "zz", &"ab".repeat(31), &"é".repeat(32)] {
            let err = Pepper::from_hex(text, "ENGRAM_PEPPER").err().unwrap();
            assert!(err.to_string().contains("ENGRAM_PEPPER"), "{err}");
        }
    }
}
