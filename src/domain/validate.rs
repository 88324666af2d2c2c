//! Input limits and the validation error every domain check returns.
//!
//! Messages follow the ingestion reference ("candidate source is required",
//! "too many tags", …) and always start with the field's path, so a client
//! can tell which part of its request to fix.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::time::{parse_rfc3339, truncate_to_micros, Timestamp};

/// Longest string field, in characters.
pub const MAX_STRING_CHARS: usize = 100_000;
/// Most tags on one record.
pub const MAX_TAGS: usize = 100;
/// Longest tag, in characters.
pub const MAX_TAG_CHARS: usize = 256;
/// Largest free-form JSON field (args, result, object, active_constraints,
/// …), serialised: 10 MiB.
pub const MAX_JSON_FIELD_BYTES: usize = 10 * 1024 * 1024;
/// Longest record id, in characters.
pub const MAX_ID_CHARS: usize = 256;

/// A rejected input: `field` is a path such as `items[2].tags[0]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ValidationError {
    pub field: String,
    pub message: String,
}

impl ValidationError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        ValidationError {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The same error told of `to` when it is about `from`: a request that
    /// names a shared setting otherwise.
    pub fn renamed(self, from: &str, to: &str) -> Self {
        if self.field == from {
            ValidationError {
                field: to.to_string(),
                ..self
            }
        } else {
            self
        }
    }

    /// Nests the error under a parent path (`items[3]` + `source`).
    pub fn within(self, parent: &str) -> Self {
        let field = if self.field.is_empty() {
            parent.to_string()
        } else if self.field.starts_with('[') {
            format!("{parent}{}", self.field)
        } else {
            format!("{parent}.{}", self.field)
        };
        ValidationError { field, ..self }
    }
}

pub type Validated<T> = Result<T, ValidationError>;

/// A string within the general length limit.
pub fn check_string(field: &str, value: &str) -> Validated<()> {
    // Byte length bounds character count from above, so most strings skip
    // the count.
    if value.len() > MAX_STRING_CHARS && value.chars().count() > MAX_STRING_CHARS {
        return Err(ValidationError::new(
            field,
            format!("string exceeds maximum length of {MAX_STRING_CHARS} characters"),
        ));
    }
    Ok(())
}

/// A required string: not blank, within the limit. (Its presence is the
/// request type's business.)
pub fn require_string(field: &str, value: String, missing: &str) -> Validated<String> {
    if value.trim().is_empty() {
        return Err(ValidationError::new(field, missing));
    }
    check_string(field, &value)?;
    Ok(value)
}

/// An optional string: absent or empty both mean "not given".
pub fn optional_string(field: &str, value: Option<String>) -> Validated<Option<String>> {
    match value {
        Some(value) if !value.is_empty() => {
            check_string(field, &value)?;
            Ok(Some(value))
        }
        _ => Ok(None),
    }
}

pub fn check_strings(field: &str, values: &[String]) -> Validated<()> {
    for (i, value) in values.iter().enumerate() {
        check_string(&format!("{field}[{i}]"), value)?;
    }
    Ok(())
}

/// Tags: at most 100, each non-empty, at most 256 characters and free of
/// control characters (a tag is a name records are matched on); duplicates
/// are dropped, first occurrence kept.
pub fn normalize_tags(field: &str, tags: Vec<String>) -> Validated<Vec<String>> {
    if tags.len() > MAX_TAGS {
        return Err(ValidationError::new(
            field,
            format!("too many tags: {} given, maximum is {MAX_TAGS}", tags.len()),
        ));
    }
    let mut kept: Vec<String> = Vec::with_capacity(tags.len());
    for (i, tag) in tags.into_iter().enumerate() {
        if tag.trim().is_empty() {
            return Err(ValidationError::new(
                format!("{field}[{i}]"),
                "tag must not be empty",
            ));
        }
        if tag.len() > MAX_TAG_CHARS && tag.chars().count() > MAX_TAG_CHARS {
            return Err(ValidationError::new(
                format!("{field}[{i}]"),
                format!("tag exceeds maximum length of {MAX_TAG_CHARS} characters"),
            ));
        }
        check_name(&format!("{field}[{i}]"), &tag)?;
        if !kept.contains(&tag) {
            kept.push(tag);
        }
    }
    Ok(kept)
}

/// A record id given by a client: non-empty, bounded, no control characters.
pub fn check_id(field: &str, id: &str) -> Validated<()> {
    if id.trim().is_empty() {
        return Err(ValidationError::new(field, "id must not be empty"));
    }
    if id.chars().count() > MAX_ID_CHARS {
        return Err(ValidationError::new(
            field,
            format!("id exceeds maximum length of {MAX_ID_CHARS} characters"),
        ));
    }
    if id.chars().any(char::is_control) {
        return Err(ValidationError::new(
            field,
            "id must not contain control characters",
        ));
    }
    // What an invalid percent-escape in a path decodes to: such an id
    // could never be asked for again by the same bytes.
    if id.contains('\u{FFFD}') {
        return Err(ValidationError::new(
            field,
            "id must not contain U+FFFD (an invalid UTF-8 percent-escape decodes to it)",
        ));
    }
    Ok(())
}

/// Separates a path from a message in a deserialization error raised
/// inside a value serde had to buffer (a tagged payload), so the HTTP
/// layer can join it to the path outside: ASCII's unit separator, which
/// no path or serde message contains.
const NESTED_PATH_END: char = '\u{1f}';

/// A deserialization error at `path` within the value being decoded.
pub fn nested_error(path: &str, message: &str) -> String {
    format!("{path}{NESTED_PATH_END}{message}")
}

/// The inner path and message of an error made by [`nested_error`].
pub fn split_nested_error(message: &str) -> Option<(&str, &str)> {
    message.split_once(NESTED_PATH_END)
}

/// A name that callers and records are matched on — scope, tag, source,
/// actor: within the length limit and free of control characters, which
/// would let two names that print the same differ (or a NUL cut one short
/// in a log).
pub fn check_name(field: &str, value: &str) -> Validated<()> {
    check_string(field, value)?;
    if value.chars().any(char::is_control) {
        return Err(ValidationError::new(
            field,
            "must not contain control characters",
        ));
    }
    Ok(())
}

/// Prefix of the actors the service itself writes audit entries as
/// (`engram:scheduler`); no client may sign as one of them.
pub const RESERVED_ACTOR_PREFIX: &str = "engram:";

/// An actor a client names for an audit entry it causes.
pub fn check_actor(field: &str, actor: &str) -> Validated<()> {
    check_name(field, actor)?;
    if actor.starts_with(RESERVED_ACTOR_PREFIX) {
        return Err(ValidationError::new(
            field,
            format!("actors starting with {RESERVED_ACTOR_PREFIX:?} are reserved for the service"),
        ));
    }
    Ok(())
}

/// How far ahead of the server clock a client timestamp may be: agents'
/// clocks drift a little, but a record must not claim to come from later
/// than now (it would never decay, or sort above everything).
pub const MAX_CLOCK_SKEW_SECONDS: i64 = 60;

/// An optional RFC 3339 time a client sent as `field`, to the microsecond.
pub fn optional_time(field: &str, value: Option<String>) -> Validated<Option<Timestamp>> {
    value
        .map(|text| {
            parse_rfc3339(&text)
                .map(truncate_to_micros)
                .map_err(|why| ValidationError::new(field, why))
        })
        .transpose()
}

/// A time a client sent as `field` for what has happened: by `now` (with
/// the clock skew allowed); absent, `now`.
pub fn past_time(field: &str, value: Option<String>, now: Timestamp) -> Validated<Timestamp> {
    match optional_time(field, value)? {
        None => Ok(now),
        Some(at) => {
            check_not_future(field, at, now)?;
            Ok(at)
        }
    }
}

/// At most `most` items in the list `field`.
pub fn check_list_len(field: &str, len: usize, most: usize, what: &str) -> Validated<()> {
    if len > most {
        return Err(ValidationError::new(
            field,
            format!("too many {what}: {len} given, maximum is {most}"),
        ));
    }
    Ok(())
}

pub fn check_not_future(field: &str, value: Timestamp, now: Timestamp) -> Validated<()> {
    if value > now + chrono::Duration::seconds(MAX_CLOCK_SKEW_SECONDS) {
        return Err(ValidationError::new(
            field,
            format!(
                "must not be in the future (more than {MAX_CLOCK_SKEW_SECONDS} s after the server's clock)"
            ),
        ));
    }
    Ok(())
}

/// A free-form JSON value within the 10 MiB limit, measured as serialised.
pub fn check_json_size(field: &str, value: &Value) -> Validated<()> {
    let mut counter = ByteCounter(0);
    serde_json::to_writer(&mut counter, value).expect("counting never fails");
    if counter.0 > MAX_JSON_FIELD_BYTES {
        return Err(ValidationError::new(
            field,
            format!("payload exceeds maximum size of 10 MB ({MAX_JSON_FIELD_BYTES} bytes)"),
        ));
    }
    Ok(())
}

/// A probability-like number: finite and within [0, 1].
/// Largest counter accepted (2^53): every count up to it is exact as a
/// JSON number in any client, and sums of many of them stay far from
/// overflowing 64 bits.
pub const MAX_COUNT: u64 = 1 << 53;

pub fn check_count(field: &str, value: u64) -> Validated<()> {
    if value <= MAX_COUNT {
        Ok(())
    } else {
        Err(ValidationError::new(
            field,
            format!("must be an integer within [0, {MAX_COUNT}], got {value}"),
        ))
    }
}

pub fn check_unit_interval(field: &str, value: f64) -> Validated<()> {
    if value.is_finite() && (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(ValidationError::new(
            field,
            format!("must be within [0, 1], got {value}"),
        ))
    }
}

pub fn check_non_negative(field: &str, value: f64) -> Validated<()> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(ValidationError::new(
            field,
            format!("must be a finite number >= 0, got {value}"),
        ))
    }
}

struct ByteCounter(usize);

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `deserialize_with` for collections where clients may send `null` for
/// "none".
pub fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_over_the_limits_are_refused_with_their_position() {
        let many: Vec<String> = (0..101).map(|i| format!("t{i}")).collect();
        assert!(normalize_tags("tags", many)
            .unwrap_err()
            .message
            .contains("too many tags"));
        let long = vec!["ok".to_string(), "x".repeat(257)];
        assert_eq!(normalize_tags("tags", long).unwrap_err().field, "tags[1]");
        let exact = vec!["é".repeat(256)];
        assert!(normalize_tags("tags", exact).is_ok());
    }

    #[test]
    fn duplicate_tags_are_dropped_in_order() {
        let tags = vec!["b".into(), "a".into(), "b".into()];
        assert_eq!(normalize_tags("tags", tags).unwrap(), vec!["b", "a"]);
    }

    #[test]
    fn strings_are_measured_in_characters() {
        assert!(check_string("s", &"é".repeat(MAX_STRING_CHARS)).is_ok());
        assert!(check_string("s", &"a".repeat(MAX_STRING_CHARS + 1)).is_err());
    }

    #[test]
    fn json_fields_are_measured_serialised() {
        let small = Value::String("a".repeat(1000));
        assert!(check_json_size("args", &small).is_ok());
        let big = Value::String("a".repeat(MAX_JSON_FIELD_BYTES));
        assert_eq!(check_json_size("args", &big).unwrap_err().field, "args");
    }

    #[test]
    fn nested_paths_read_naturally() {
        let e = ValidationError::new("source", "x").within("items[2]");
        assert_eq!(e.field, "items[2].source");
        let e = ValidationError::new("[0]", "x").within("tags");
        assert_eq!(e.field, "tags[0]");
    }
}
