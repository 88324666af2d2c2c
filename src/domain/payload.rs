//! Type-specific payloads, discriminated by `kind`, with the fields of the
//! ingestion reference. Unknown fields are refused rather than dropped, so a
//! misspelt field is an error the client sees, not data silently lost.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::conversation::Turn;
use super::record::{MemoryType, Status};
use super::schema;
use super::strict::Strict;
use super::time::{rfc3339, rfc3339_option, Timestamp};
use super::validate::{
    check_count, check_json_size, check_non_negative, check_string, check_strings,
    check_unit_interval, nested_error, null_as_default, Validated, ValidationError,
};

mod schemas;

/// Deserialized by hand (below) rather than with serde's internal tagging,
/// which buffers the content and so loses the path of an error inside it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Payload {
    Working(WorkingPayload),
    Semantic(SemanticPayload),
    Competence(CompetencePayload),
    PlanGraph(PlanGraphPayload),
    Episodic(EpisodicPayload),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeStatus {
    Success,
    Failure,
    Partial,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    Planning,
    Executing,
    Blocked,
    Waiting,
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ValidityMode {
    #[default]
    Global,
    Conditional,
    Timeboxed,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EpisodicPayload {
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = schemas::timeline)]
    pub timeline: Vec<TimelineEvent>,
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = schemas::tool_graph)]
    pub tool_graph: Vec<ToolNode>,
    #[serde(default)]
    pub outcome: Option<OutcomeStatus>,
    #[serde(default)]
    pub environment: Option<Value>,
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = schemas::artifacts)]
    pub artifacts: Vec<Value>,
    /// A conversation's turn: what was said, by whom, where.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<Turn>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TimelineEvent {
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub t: Timestamp,
    #[schema(schema_with = schema::any_text)]
    pub event_kind: String,
    #[serde(rename = "ref")]
    #[schema(schema_with = schema::any_text)]
    pub reference: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = schema::optional_text)]
    pub summary: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolNode {
    #[schema(schema_with = schema::text)]
    pub id: String,
    #[schema(schema_with = schema::text)]
    pub tool: String,
    #[serde(default)]
    pub args: Value,
    #[serde(default)]
    pub result: Value,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub timestamp: Timestamp,
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = schema::strings)]
    pub depends_on: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SemanticPayload {
    #[schema(schema_with = schema::text)]
    pub subject: String,
    #[schema(schema_with = schema::text)]
    pub predicate: String,
    #[serde(default)]
    pub object: Value,
    #[serde(default)]
    pub validity: Validity,
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = schemas::evidence)]
    pub evidence: Vec<Evidence>,
    #[serde(default = "default_revision_policy")]
    #[schema(schema_with = schema::text)]
    pub revision_policy: String,
    #[serde(default)]
    pub revision: RevisionState,
}

fn default_revision_policy() -> String {
    "replace".to_string()
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Validity {
    #[serde(default)]
    pub mode: ValidityMode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Map<String, Value>>,
    #[serde(
        default,
        with = "rfc3339_option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub start: Option<Timestamp>,
    #[serde(
        default,
        with = "rfc3339_option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub end: Option<Timestamp>,
}

/// A reference to what supports a fact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    #[schema(schema_with = schema::text)]
    pub source_type: String,
    #[schema(schema_with = schema::text)]
    pub source_id: String,
    #[serde(
        default,
        with = "rfc3339_option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub timestamp: Option<Timestamp>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RevisionState {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    #[serde(default = "active")]
    pub status: Status,
}

fn active() -> Status {
    Status::Active
}

impl Default for RevisionState {
    fn default() -> Self {
        RevisionState {
            supersedes: None,
            superseded_by: None,
            status: Status::Active,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkingPayload {
    #[schema(schema_with = schema::text)]
    pub thread_id: String,
    pub state: TaskState,
    #[serde(default = "empty_array")]
    pub active_constraints: Value,
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = schema::strings)]
    pub next_actions: Vec<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = schema::strings)]
    pub open_questions: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = schema::optional_text)]
    pub context_summary: Option<String>,
}

pub fn empty_array() -> Value {
    Value::Array(Vec::new())
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompetencePayload {
    #[schema(schema_with = schema::text)]
    pub skill_name: String,
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = schemas::triggers)]
    pub triggers: Vec<Trigger>,
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = schemas::recipe)]
    pub recipe: Vec<RecipeStep>,
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = schema::strings)]
    pub required_tools: Vec<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = schema::strings)]
    pub failure_modes: Vec<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = schema::strings)]
    pub fallbacks: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub performance: Option<Performance>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Trigger {
    #[schema(schema_with = schema::text)]
    pub signal: String,
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = schemas::conditions)]
    pub conditions: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RecipeStep {
    #[schema(schema_with = schema::text)]
    pub step: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = schema::optional_text)]
    pub tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args_schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = schema::optional_text)]
    pub validation: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Performance {
    #[serde(default)]
    #[schema(schema_with = schemas::count)]
    pub success_count: u64,
    #[serde(default)]
    #[schema(schema_with = schemas::count)]
    pub failure_count: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = schemas::rate)]
    pub success_rate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = schemas::latency)]
    pub avg_latency_ms: Option<f64>,
    #[serde(
        default,
        with = "rfc3339_option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_used_at: Option<Timestamp>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanGraphPayload {
    #[schema(schema_with = schema::text)]
    pub plan_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = schemas::conditions)]
    pub constraints: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs_schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outputs_schema: Option<Value>,
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = schemas::plan_nodes)]
    pub nodes: Vec<PlanNode>,
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = schemas::plan_edges)]
    pub edges: Vec<PlanEdge>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<PlanMetrics>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanNode {
    #[schema(schema_with = schema::text)]
    pub id: String,
    #[schema(schema_with = schema::text)]
    pub op: String,
    #[serde(default)]
    pub params: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guards: Option<Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EdgeKind {
    Data,
    Control,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanEdge {
    pub from: String,
    pub to: String,
    pub kind: EdgeKind,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanMetrics {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = schemas::latency)]
    pub avg_latency_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = schemas::rate)]
    pub failure_rate: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = schemas::optional_count)]
    pub execution_count: Option<u64>,
    #[serde(
        default,
        with = "rfc3339_option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_executed_at: Option<Timestamp>,
}

const PAYLOAD_KINDS: &[&str] = &[
    "working",
    "semantic",
    "competence",
    "plan_graph",
    "episodic",
];

impl<'de> Deserialize<'de> for Payload {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut fields = Map::<String, Value>::deserialize(deserializer)?;
        let kind = match fields.remove("kind") {
            Some(Value::String(kind)) => kind,
            None | Some(Value::Null) => return Err(D::Error::missing_field("kind")),
            Some(other) => {
                return Err(D::Error::custom(nested_error(
                    "kind",
                    &format!("invalid type: {other}, expected a string"),
                )))
            }
        };
        let fields = Value::Object(fields);
        let payload = match kind.as_str() {
            "working" => variant(fields).map(Payload::Working),
            "semantic" => variant(fields).map(Payload::Semantic),
            "competence" => variant(fields).map(Payload::Competence),
            "plan_graph" => variant(fields).map(Payload::PlanGraph),
            "episodic" => variant(fields).map(Payload::Episodic),
            other => return Err(D::Error::unknown_variant(other, PAYLOAD_KINDS)),
        };
        payload.map_err(D::Error::custom)
    }
}

/// One payload kind's fields, with the path of any error inside them.
fn variant<T: serde::de::DeserializeOwned>(fields: Value) -> Result<T, String> {
    serde_path_to_error::deserialize(Strict(fields)).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        if path == "." {
            inner
        } else {
            nested_error(&path, &inner)
        }
    })
}

impl Payload {
    pub fn memory_type(&self) -> MemoryType {
        match self {
            Payload::Working(_) => MemoryType::Working,
            Payload::Semantic(_) => MemoryType::Semantic,
            Payload::Competence(_) => MemoryType::Competence,
            Payload::PlanGraph(_) => MemoryType::PlanGraph,
            Payload::Episodic(_) => MemoryType::Episodic,
        }
    }

    /// The one name the record is about, for the types that have one: a
    /// working state's thread, a fact's subject, a turn's conversation.
    pub fn about(&self) -> Option<&str> {
        match self {
            Payload::Working(p) => Some(&p.thread_id),
            Payload::Semantic(p) => Some(&p.subject),
            Payload::Episodic(p) => p.turn.as_ref().map(|t| t.conversation_id.as_str()),
            _ => None,
        }
    }

    /// The turn of a conversation the record is.
    pub fn turn(&self) -> Option<&Turn> {
        match self {
            Payload::Episodic(p) => p.turn.as_ref(),
            _ => None,
        }
    }

    /// The thread of a working state.
    pub fn thread(&self) -> Option<&str> {
        match self {
            Payload::Working(p) => Some(&p.thread_id),
            _ => None,
        }
    }

    /// Field rules the JSON shape alone cannot express: required strings
    /// not blank, the size limits, plan edges that name existing nodes.
    pub fn validate(&self) -> Validated<()> {
        match self {
            Payload::Episodic(p) => p.validate(),
            Payload::Semantic(p) => p.validate(),
            Payload::Working(p) => p.validate(),
            Payload::Competence(p) => p.validate(),
            Payload::PlanGraph(p) => p.validate(),
        }
    }
}

fn require_text(field: &str, value: &str) -> Validated<()> {
    if value.trim().is_empty() {
        return Err(ValidationError::new(field, format!("{field} is required")));
    }
    check_string(field, value)
}

fn check_optional_text(field: &str, value: &Option<String>) -> Validated<()> {
    match value {
        Some(value) => check_string(field, value),
        None => Ok(()),
    }
}

impl EpisodicPayload {
    fn validate(&self) -> Validated<()> {
        for (i, event) in self.timeline.iter().enumerate() {
            let field = format!("timeline[{i}]");
            check_string(&format!("{field}.event_kind"), &event.event_kind)?;
            check_string(&format!("{field}.ref"), &event.reference)?;
            check_optional_text(&format!("{field}.summary"), &event.summary)?;
        }
        for (i, node) in self.tool_graph.iter().enumerate() {
            let field = format!("tool_graph[{i}]");
            require_text(&format!("{field}.id"), &node.id)?;
            require_text(&format!("{field}.tool"), &node.tool)?;
            check_json_size(&format!("{field}.args"), &node.args)?;
            check_json_size(&format!("{field}.result"), &node.result)?;
            check_strings(&format!("{field}.depends_on"), &node.depends_on)?;
        }
        if let Some(environment) = &self.environment {
            check_json_size("environment", environment)?;
        }
        check_json_size("artifacts", &Value::Array(self.artifacts.clone()))?;
        match &self.turn {
            Some(turn) => turn.validate("turn"),
            None => Ok(()),
        }
    }
}

impl SemanticPayload {
    fn validate(&self) -> Validated<()> {
        require_text("subject", &self.subject)?;
        require_text("predicate", &self.predicate)?;
        check_json_size("object", &self.object)?;
        require_text("revision_policy", &self.revision_policy)?;
        for (i, evidence) in self.evidence.iter().enumerate() {
            require_text(&format!("evidence[{i}].source_type"), &evidence.source_type)?;
            require_text(&format!("evidence[{i}].source_id"), &evidence.source_id)?;
        }
        if let (Some(start), Some(end)) = (self.validity.start, self.validity.end) {
            if end < start {
                return Err(ValidationError::new("validity.end", "end is before start"));
            }
        }
        Ok(())
    }
}

impl WorkingPayload {
    fn validate(&self) -> Validated<()> {
        require_text("thread_id", &self.thread_id)?;
        check_json_size("active_constraints", &self.active_constraints)?;
        check_strings("next_actions", &self.next_actions)?;
        check_strings("open_questions", &self.open_questions)?;
        check_optional_text("context_summary", &self.context_summary)
    }
}

impl CompetencePayload {
    fn validate(&self) -> Validated<()> {
        require_text("skill_name", &self.skill_name)?;
        for (i, trigger) in self.triggers.iter().enumerate() {
            require_text(&format!("triggers[{i}].signal"), &trigger.signal)?;
            check_json_size(
                &format!("triggers[{i}].conditions"),
                &Value::Object(trigger.conditions.clone()),
            )?;
        }
        for (i, step) in self.recipe.iter().enumerate() {
            require_text(&format!("recipe[{i}].step"), &step.step)?;
            check_optional_text(&format!("recipe[{i}].tool"), &step.tool)?;
            check_optional_text(&format!("recipe[{i}].validation"), &step.validation)?;
        }
        check_strings("required_tools", &self.required_tools)?;
        check_strings("failure_modes", &self.failure_modes)?;
        check_strings("fallbacks", &self.fallbacks)?;
        if let Some(performance) = &self.performance {
            check_count("performance.success_count", performance.success_count)?;
            check_count("performance.failure_count", performance.failure_count)?;
            if let Some(rate) = performance.success_rate {
                check_unit_interval("performance.success_rate", rate)?;
            }
            if let Some(latency) = performance.avg_latency_ms {
                check_non_negative("performance.avg_latency_ms", latency)?;
            }
        }
        Ok(())
    }
}

impl PlanGraphPayload {
    fn validate(&self) -> Validated<()> {
        require_text("plan_id", &self.plan_id)?;
        check_json_size("constraints", &Value::Object(self.constraints.clone()))?;
        let mut ids = std::collections::HashSet::new();
        for (i, node) in self.nodes.iter().enumerate() {
            require_text(&format!("nodes[{i}].id"), &node.id)?;
            require_text(&format!("nodes[{i}].op"), &node.op)?;
            check_json_size(&format!("nodes[{i}].params"), &node.params)?;
            if !ids.insert(node.id.as_str()) {
                return Err(ValidationError::new(
                    format!("nodes[{i}].id"),
                    format!("duplicate node id {:?}", node.id),
                ));
            }
        }
        for (i, edge) in self.edges.iter().enumerate() {
            for (end, id) in [("from", &edge.from), ("to", &edge.to)] {
                if !ids.contains(id.as_str()) {
                    return Err(ValidationError::new(
                        format!("edges[{i}].{end}"),
                        format!("no node with id {id:?}"),
                    ));
                }
            }
        }
        if let Some(metrics) = &self.metrics {
            if let Some(rate) = metrics.failure_rate {
                check_unit_interval("metrics.failure_rate", rate)?;
            }
            if let Some(count) = metrics.execution_count {
                check_count("metrics.execution_count", count)?;
            }
            if let Some(latency) = metrics.avg_latency_ms {
                check_non_negative("metrics.avg_latency_ms", latency)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_reference_competence_payload_parses() {
        let payload: Payload = serde_json::from_value(json!({
            "kind": "competence",
            "skill_name": "fix_go_compilation_error",
            "triggers": [{"signal": "compilation_error", "conditions": {"language": "go"}}],
            "recipe": [{"step": "Read the error", "tool": "file_read", "validation": "loaded"}],
            "required_tools": ["file_read"],
            "failure_modes": ["File not found"],
            "performance": {"success_count": 12, "failure_count": 2, "success_rate": 0.857}
        }))
        .unwrap();
        assert_eq!(payload.memory_type(), MemoryType::Competence);
        payload.validate().unwrap();
    }

    #[test]
    fn an_unknown_payload_field_is_refused_by_name() {
        let err = serde_json::from_value::<Payload>(json!({
            "kind": "semantic", "subject": "a", "predicate": "b", "colour": "red"
        }))
        .unwrap_err()
        .to_string();
        assert!(err.contains("colour"), "{err}");
    }

    #[test]
    fn a_plan_edge_must_name_existing_nodes() {
        let payload: Payload = serde_json::from_value(json!({
            "kind": "plan_graph", "plan_id": "p",
            "nodes": [{"id": "n1", "op": "mkdir"}],
            "edges": [{"from": "n1", "to": "n9", "kind": "control"}]
        }))
        .unwrap();
        assert_eq!(payload.validate().unwrap_err().field, "edges[0].to");
    }

    #[test]
    fn a_semantic_payload_gets_the_reference_defaults() {
        let payload: SemanticPayload =
            serde_json::from_value(json!({"subject": "user", "predicate": "likes"})).unwrap();
        assert_eq!(payload.revision_policy, "replace");
        assert_eq!(payload.validity.mode, ValidityMode::Global);
        assert_eq!(payload.revision.status, Status::Active);
        assert_eq!(payload.object, Value::Null);
    }
}
