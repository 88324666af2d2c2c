//! The cursors the service hands out: the place a page ended, sealed
//! (`auth::secret::Sealer`) to the caller and the request it answered, so
//! a client can only send back one it was given, with the same request.

use crate::auth::secret::Sealer;
use crate::domain::validate::ValidationError;

/// The place `token` continues from, if this service sealed it for
/// `bound` and `decode` reads it; otherwise `400` naming `cursor`, saying
/// whom it must be `issued_for` and how to send it back.
pub fn open<T>(
    sealer: &Sealer,
    token: &str,
    bound: &[u8],
    decode: impl FnOnce(&[u8]) -> Option<T>,
    issued_for: &str,
) -> Result<T, ValidationError> {
    sealer
        .open(token, bound)
        .and_then(|bytes| decode(&bytes))
        .ok_or_else(|| {
            ValidationError::new(
                "cursor",
                format!("not a cursor this service issued for {issued_for}"),
            )
        })
}
