//! A request body read as JSON: an object (never an array), every field
//! known, nothing after it; what is wrong told by the field's path, and a
//! missing required field in the reference's words.

use serde::de::DeserializeOwned;
use serde_json::error::Category;

use crate::domain::strict::Strict;
use crate::domain::validate::split_nested_error;

/// Why a body is not the request it should be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MalformedBody {
    pub message: String,
}

impl MalformedBody {
    fn new(message: impl Into<String>) -> MalformedBody {
        MalformedBody {
            message: message.into(),
        }
    }
}

pub fn parse_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, MalformedBody> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(MalformedBody::new(
            "malformed JSON: the request body is empty; expected a JSON object",
        ));
    }
    // Every body is an object. Serde would take an array for a struct,
    // field by field in order; that is no form a client should rely on.
    if let Some(first) = body.iter().find(|b| !b.is_ascii_whitespace()) {
        if *first == b'[' {
            return Err(MalformedBody::new(
                "the request body must be a JSON object, not an array",
            ));
        }
    }
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(Strict(&mut deserializer)).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        match inner.classify() {
            // Bytes that are not JSON at all are told as such, even when a
            // shape error came first; checked only on this error path.
            Category::Data => match serde_json::from_slice::<serde::de::IgnoredAny>(body) {
                Err(syntax) => MalformedBody::new(format!("malformed JSON: {syntax}")),
                Ok(_) => data_error(&path, &inner.to_string()),
            },
            Category::Syntax | Category::Eof | Category::Io => {
                MalformedBody::new(format!("malformed JSON: {inner}"))
            }
        }
    })?;
    deserializer
        .end()
        .map_err(|e| MalformedBody::new(format!("malformed JSON: {e}")))?;
    Ok(value)
}

/// A JSON value of the wrong shape at `path` (`.` for the whole body). A
/// required field that is missing or null is named with the reference's
/// words for it, like a blank one.
fn data_error(path: &str, message: &str) -> MalformedBody {
    let path = if path == "." { "" } else { path };
    let (path, message) = match split_nested_error(message) {
        Some((inner, message)) if path.is_empty() => (inner.to_string(), message),
        Some((inner, message)) => (format!("{path}.{inner}"), message),
        None => (path.to_string(), message),
    };
    let path = path.as_str();
    let missing = message
        .strip_prefix("missing field `")
        .and_then(|rest| rest.split('`').next())
        .map(|field| (path.to_string(), field.to_string()))
        .or_else(|| {
            // `"source": null` for a required string: the path names the
            // field itself.
            message
                .starts_with("invalid type: null")
                .then(|| match path.rsplit_once('.') {
                    Some((parent, field)) => (parent.to_string(), field.to_string()),
                    None => (String::new(), path.to_string()),
                })
        })
        .filter(|(_, field)| !field.is_empty() && !field.contains('['));
    match missing {
        Some((parent, field)) => {
            let at = if parent.is_empty() {
                field.clone()
            } else {
                format!("{parent}.{field}")
            };
            let words = required_words(&parent, &field);
            MalformedBody::new(format!("{at}: {words}"))
        }
        None if path.is_empty() => MalformedBody::new(message),
        None => MalformedBody::new(format!("{path}: {message}")),
    }
}

/// What the API says when a required field is missing: the ingestion
/// reference's messages for the ingest fields (at the top of a body or of
/// a batch item), `{field} is required` otherwise.
fn required_words(parent: &str, field: &str) -> String {
    let ingest_level = parent.is_empty() || is_batch_item(parent);
    let reference = match field {
        "source" => "candidate source is required",
        "event_kind" => "event kind is required for event candidates",
        "ref" => "event ref is required for event candidates",
        "tool_name" => "tool name is required for tool output candidates",
        "subject" => "subject is required for observation candidates",
        "predicate" => "predicate is required for observation candidates",
        "target_record_id" => "target record ID is required for outcome candidates",
        "outcome_status" => "outcome status is required for outcome candidates",
        "thread_id" => "thread ID is required for working state candidates",
        "state" => "task state is required for working state candidates",
        "trust" => "trust context is required",
        "items" => "at least one item is required",
        "ids" => "at least one record id is required",
        _ => "",
    };
    if ingest_level && !reference.is_empty() {
        reference.to_string()
    } else {
        format!("{field} is required")
    }
}

/// `items[3]`: one item of a batch.
fn is_batch_item(path: &str) -> bool {
    path.strip_prefix("items[")
        .and_then(|rest| rest.strip_suffix(']'))
        .is_some_and(|index| !index.is_empty() && index.bytes().all(|b| b.is_ascii_digit()))
}
