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

use ring::rand::{SecureRandom, SystemRandom};
use ring::{aead, hmac};

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

    /// The sealer of this instance's tokens (cursors), derived from the
    /// pepper: instances that share a pepper open each other's tokens, and
    /// no one without it can read or make one.
    pub fn sealer(&self) -> Sealer {
        let derived = hmac::sign(&self.0, b"engram token sealing key v1");
        let key = aead::UnboundKey::new(&aead::CHACHA20_POLY1305, &derived.as_ref()[..32])
            .expect("a 32-byte key is a ChaCha20-Poly1305 key");
        Sealer(aead::LessSafeKey::new(key))
    }
}

/// Seals what the service hands a client to give back later (a cursor):
/// encrypted, so the client learns nothing of what is inside, and
/// authenticated together with what it was issued for (`bound`: the
/// caller and the query), so a token altered, forged, or sent by another
/// caller or with another query does not open.
pub struct Sealer(aead::LessSafeKey);

impl Sealer {
    pub fn seal(&self, plain: &[u8], bound: &[u8]) -> String {
        let mut nonce = [0u8; aead::NONCE_LEN];
        // Without randomness a fixed nonce would still authenticate; it
        // would only let equal cursors be seen as equal.
        let _ = SystemRandom::new().fill(&mut nonce);
        let mut sealed = plain.to_vec();
        self.0
            .seal_in_place_append_tag(
                aead::Nonce::assume_unique_for_key(nonce),
                aead::Aad::from(bound),
                &mut sealed,
            )
            .expect("a token is far below the cipher's limit");
        let mut token = nonce.to_vec();
        token.extend_from_slice(&sealed);
        to_base64url(&token)
    }

    /// What `token` holds, if this service sealed it for `bound`.
    pub fn open(&self, token: &str, bound: &[u8]) -> Option<Vec<u8>> {
        let bytes = from_base64url(token)?;
        if bytes.len() < aead::NONCE_LEN + aead::CHACHA20_POLY1305.tag_len() {
            return None;
        }
        let (nonce, sealed) = bytes.split_at(aead::NONCE_LEN);
        let nonce = aead::Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut sealed = sealed.to_vec();
        let plain = self
            .0
            .open_in_place(nonce, aead::Aad::from(bound), &mut sealed)
            .ok()?;
        Some(plain.to_vec())
    }
}

const BASE64URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Base64url without padding: tokens travel in JSON and URLs as they are.
fn to_base64url(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(BASE64URL[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

fn from_base64url(text: &str) -> Option<Vec<u8>> {
    if text.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    for chunk in text.as_bytes().chunks(4) {
        let mut n = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            let value = BASE64URL.iter().position(|b| b == c)? as u32;
            n |= value << (18 - 6 * i);
        }
        let bytes = chunk.len() - 1;
        out.extend((0..bytes).map(|i| (n >> (16 - 8 * i)) as u8));
        // The bits past the last byte must be zero: one token, one text.
        if (n << (8 * bytes)) & 0xff_ffff != 0 {
            return None;
        }
    }
    Some(out)
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
    fn base64url_round_trips_and_has_one_text_per_value() {
        for len in 0..40 {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            let text = to_base64url(&bytes);
            assert!(!text.contains('='));
            assert_eq!(from_base64url(&text), Some(bytes), "{text}");
        }
        assert_eq!(to_base64url(b"\xfb\xff"), "-_8");
        assert_eq!(from_base64url("AB"), None, "bits set past the last byte");
        assert_eq!(from_base64url("A"), None);
        assert_eq!(from_base64url("A+"), None);
    }

    #[test]
    fn a_sealed_token_opens_only_as_issued() {
        let pepper = Pepper::from_hex(&"ab".repeat(32), "test").unwrap();
        let sealer = pepper.sealer();
        let token = sealer.seal(b"place 42", b"caller a, query q");
        // The place is not in the token, in its text or its bytes (a
        // random nonce may spell "42" in base64 by chance; 8 bytes of the
        // plaintext, never).
        let bytes = from_base64url(&token).unwrap();
        assert!(!bytes.windows(8).any(|w| w == b"place 42"));
        assert!(!token.contains(&to_base64url(b"place 42")));
        assert_eq!(
            sealer.open(&token, b"caller a, query q").as_deref(),
            Some(&b"place 42"[..])
        );
        assert_eq!(sealer.open(&token, b"caller b, query q"), None);
        assert_eq!(sealer.open(&token, b"caller a, query r"), None);
        let other = Pepper::from_hex(&"cd".repeat(32), "test").unwrap().sealer();
        assert_eq!(other.open(&token, b"caller a, query q"), None);
        let mut altered = token.clone().into_bytes();
        altered[20] = if altered[20] == b'A' { b'B' } else { b'A' };
        let altered = String::from_utf8(altered).unwrap();
        assert_eq!(sealer.open(&altered, b"caller a, query q"), None);
        for junk in ["", "+", "1.2.3", &"A".repeat(200)] {
            assert_eq!(sealer.open(junk, b"caller a, query q"), None, "{junk}");
        }
    }

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
