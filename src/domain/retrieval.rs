//! Retrieval requests, checked and turned into a storage query.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::record::{MemoryType, Sensitivity};
use super::trust::TrustContext;
use super::validate::{check_non_negative, optional_string, Validated, ValidationError};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetrieveRequest {
    #[serde(default)]
    pub trust: Option<TrustContext>,
    #[serde(default)]
    pub task_descriptor: Option<String>,
    #[serde(default)]
    pub memory_types: Option<Vec<MemoryType>>,
    #[serde(default)]
    pub min_salience: Option<f64>,
    #[serde(default)]
    pub limit: Option<i64>,
    #[serde(default)]
    pub context: Option<Value>,
    #[serde(default)]
    pub include_retracted: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetrieveByIdRequest {
    #[serde(default)]
    pub trust: Option<TrustContext>,
}

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

impl RetrieveRequest {
    /// The trust the request presents, and the retrieval it asks for.
    pub fn into_retrieval(self, max_limit: usize) -> Validated<(TrustContext, Retrieval)> {
        let trust = TrustContext::required(self.trust)?;
        let mut memory_types = match self.memory_types {
            Some(types) if !types.is_empty() => types,
            _ => MemoryType::ALL.to_vec(),
        };
        memory_types.sort_by_key(|t| t.layer());
        memory_types.dedup();
        let min_salience = self.min_salience.unwrap_or(0.0);
        check_non_negative("min_salience", min_salience)?;
        let limit = match self.limit.unwrap_or(0) {
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
        let context = match self.context {
            None | Some(Value::Null) => None,
            Some(Value::Object(map)) => Some(map),
            Some(_) => {
                return Err(ValidationError::new(
                    "context",
                    "context must be a JSON object",
                ))
            }
        };
        let retrieval = Retrieval {
            task_descriptor: optional_string("task_descriptor", self.task_descriptor)?,
            memory_types,
            min_salience,
            limit,
            include_retracted: self.include_retracted.unwrap_or(false),
            context,
        };
        Ok((trust, retrieval))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn retrieval(body: Value) -> Validated<RecordQuery> {
        serde_json::from_value::<RetrieveRequest>(body)
            .unwrap()
            .into_retrieval(1000)
            .map(|(trust, retrieval)| retrieval.query_for(&trust))
    }

    #[test]
    fn defaults_query_every_layer_in_order_up_to_the_maximum() {
        let r = retrieval(json!({"trust": {"max_sensitivity": "low"}})).unwrap();
        assert_eq!(r.memory_types, MemoryType::ALL.to_vec());
        assert_eq!(r.limit, 1000);
        assert_eq!(r.scopes, None);
        assert!(!r.include_retracted);
    }

    #[test]
    fn memory_types_are_put_in_layer_order() {
        let r = retrieval(json!({"trust": {"max_sensitivity": "low"}, "memory_types": ["episodic", "working", "episodic"]})).unwrap();
        assert_eq!(
            r.memory_types,
            vec![MemoryType::Working, MemoryType::Episodic]
        );
    }

    #[test]
    fn bad_limits_and_salience_are_refused() {
        let t = json!({"max_sensitivity": "low"});
        assert_eq!(
            retrieval(json!({"trust": t, "limit": 1001}))
                .unwrap_err()
                .field,
            "limit"
        );
        assert_eq!(
            retrieval(json!({"trust": t, "limit": -1}))
                .unwrap_err()
                .field,
            "limit"
        );
        assert_eq!(
            retrieval(json!({"trust": t, "min_salience": -0.5}))
                .unwrap_err()
                .field,
            "min_salience"
        );
        assert_eq!(
            retrieval(json!({"trust": t, "context": [1]}))
                .unwrap_err()
                .field,
            "context"
        );
        assert_eq!(retrieval(json!({})).unwrap_err().field, "trust");
    }
}
