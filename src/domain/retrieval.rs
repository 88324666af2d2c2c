//! What a retrieval asks for, checked, and the storage query it becomes
//! for a caller's trust.

use serde_json::{Map, Value};

use super::record::{MemoryType, Sensitivity};
use super::trust::TrustContext;
use super::validate::{check_non_negative, optional_string, Validated, ValidationError};

/// What storage is asked for: visible records of these types, best first.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordQuery {
    /// In layer order, without repeats.
    pub memory_types: Vec<MemoryType>,
    pub max_sensitivity: Sensitivity,
    /// `None`: every scope; otherwise unscoped records plus these scopes.
    pub scopes: Option<Vec<String>>,
    pub min_salience: f64,
    pub limit: usize,
    pub include_retracted: bool,
    /// Continue after this place of an earlier answer.
    pub after: Option<Cursor>,
    /// Stop adding records once the answer would be about this large.
    pub max_bytes: usize,
}

/// Where an answer cut short by the response size budget continues: the
/// moment it was ranked at (the next page ranks as of then too, so pages
/// neither skip nor repeat records as salience moves on), the place of the
/// last record returned, and how many of the original `limit` are left.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cursor {
    pub as_of: i64,
    pub salience: f64,
    pub layer: i64,
    pub created_at: i64,
    pub key: i64,
    pub remaining: usize,
}

impl Cursor {
    const VERSION: &'static str = "1";

    /// An opaque token for clients.
    pub fn encode(&self) -> String {
        format!(
            "{}.{}.{:016x}.{}.{}.{}.{}",
            Self::VERSION,
            self.as_of,
            self.salience.to_bits(),
            self.layer,
            self.created_at,
            self.key,
            self.remaining
        )
    }

    pub fn parse(field: &str, token: &str) -> Validated<Cursor> {
        let invalid = || {
            ValidationError::new(
                field,
                "not a cursor this service gave out; send next_cursor as it came",
            )
        };
        let parts: Vec<&str> = token.split('.').collect();
        let [version, as_of, salience, layer, created_at, key, remaining] = parts[..] else {
            return Err(invalid());
        };
        if version != Self::VERSION {
            return Err(invalid());
        }
        let salience = f64::from_bits(u64::from_str_radix(salience, 16).map_err(|_| invalid())?);
        let cursor = Cursor {
            as_of: as_of.parse().map_err(|_| invalid())?,
            salience,
            layer: layer.parse().map_err(|_| invalid())?,
            created_at: created_at.parse().map_err(|_| invalid())?,
            key: key.parse().map_err(|_| invalid())?,
            remaining: remaining.parse().map_err(|_| invalid())?,
        };
        if !cursor.salience.is_finite() || cursor.remaining == 0 {
            return Err(invalid());
        }
        Ok(cursor)
    }
}

/// A checked retrieval: what to read, before the caller's trust narrows
/// it to what may be seen.
#[derive(Debug, Clone)]
pub struct Retrieval {
    pub task_descriptor: Option<String>,
    /// In layer order, without repeats.
    pub memory_types: Vec<MemoryType>,
    pub min_salience: f64,
    pub limit: usize,
    pub include_retracted: bool,
    pub context: Option<Map<String, Value>>,
    pub cursor: Option<Cursor>,
}

impl Retrieval {
    /// The storage query for a caller with `trust`.
    pub fn query_for(&self, trust: &TrustContext, max_bytes: usize) -> RecordQuery {
        RecordQuery {
            memory_types: self.memory_types.clone(),
            max_sensitivity: trust.max_sensitivity,
            scopes: trust.scope_filter(),
            min_salience: self.min_salience,
            // A continuation returns at most what the first page left.
            limit: self
                .cursor
                .map_or(self.limit, |c| self.limit.min(c.remaining)),
            include_retracted: self.include_retracted,
            after: self.cursor,
            max_bytes,
        }
    }
}

impl Retrieval {
    /// Checks what a retrieval asks for. An empty `memory_types` means
    /// every type; `limit` 0 means `max_limit`.
    pub fn new(
        task_descriptor: Option<String>,
        mut memory_types: Vec<MemoryType>,
        min_salience: f64,
        limit: i64,
        max_limit: usize,
        context: Option<Value>,
        include_retracted: bool,
    ) -> Validated<Retrieval> {
        if memory_types.is_empty() {
            memory_types = MemoryType::ALL.to_vec();
        }
        memory_types.sort_by_key(|t| t.layer());
        memory_types.dedup();
        check_non_negative("min_salience", min_salience)?;
        let limit = match limit {
            0 => max_limit,
            n if n < 0 => {
                return Err(ValidationError::new(
                    "limit",
                    format!("must be >= 0, got {n}"),
                ))
            }
            n if n as u64 > max_limit as u64 => {
                return Err(ValidationError::new(
                    "limit",
                    format!("must be at most {max_limit}, got {n}"),
                ))
            }
            n => n as usize,
        };
        let context = match context {
            None | Some(Value::Null) => None,
            Some(Value::Object(map)) => Some(map),
            Some(_) => {
                return Err(ValidationError::new(
                    "context",
                    "context must be a JSON object",
                ))
            }
        };
        Ok(Retrieval {
            task_descriptor: optional_string("task_descriptor", task_descriptor)?,
            memory_types,
            min_salience,
            limit,
            include_retracted,
            context,
            cursor: None,
        })
    }

    /// The same retrieval, continuing an earlier answer at `cursor` (its
    /// `next_cursor`; absent or empty: from the start).
    pub fn continuing(self, cursor: Option<String>) -> Validated<Retrieval> {
        let cursor = cursor
            .filter(|c| !c.is_empty())
            .map(|c| Cursor::parse("cursor", &c))
            .transpose()?;
        Ok(Retrieval { cursor, ..self })
    }
}
