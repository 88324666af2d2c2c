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
}

impl Retrieval {
    /// The storage query for a caller with `trust`.
    pub fn query_for(&self, trust: &TrustContext) -> RecordQuery {
        RecordQuery {
            memory_types: self.memory_types.clone(),
            max_sensitivity: trust.max_sensitivity,
            scopes: trust.scope_filter(),
            min_salience: self.min_salience,
            limit: self.limit,
            include_retracted: self.include_retracted,
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
        })
    }
}
