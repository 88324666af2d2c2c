//! The memory record and its parts, as clients see them in JSON.

use serde::{Deserialize, Serialize};

use super::payload::Payload;
use super::time::{rfc3339, Timestamp};
use super::validate::{
    check_id, check_name, check_non_negative, check_not_future, check_string, check_unit_interval,
    Validated, ValidationError,
};
use super::vector::Embedding;

macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum $name {
            $(#[serde(rename = $text)] $variant),+
        }

        // Written here: the derive does not see renames made in a macro.
        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::ObjectBuilder::new()
                    .schema_type(utoipa::openapi::schema::Type::String)
                    .enum_values(Some([$($text),+]))
                    .into()
            }
        }

        impl utoipa::ToSchema for $name {}

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            pub fn parse(text: &str) -> Option<$name> {
                match text {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

string_enum!(
    /// Memory types in retrieval layer order: a lower variant is queried
    /// first and wins salience ties.
    MemoryType {
        Working => "working",
        Semantic => "semantic",
        Competence => "competence",
        PlanGraph => "plan_graph",
        Episodic => "episodic",
    }
);

string_enum!(
    /// Ordered from least to most restrictive.
    Sensitivity {
        Public => "public",
        Low => "low",
        Medium => "medium",
        High => "high",
        Hyper => "hyper",
    }
);

string_enum!(
    /// Lifecycle status of every record.
    Status {
        Active => "active",
        Contested => "contested",
        Retracted => "retracted",
    }
);

string_enum!(DecayCurve {
    Exponential => "exponential",
    Linear => "linear",
    Custom => "custom",
});

string_enum!(DeletionPolicy {
    AutoPrune => "auto_prune",
    ManualOnly => "manual_only",
    Never => "never",
});

string_enum!(AuditAction {
    Create => "create",
    Revise => "revise",
    Fork => "fork",
    Merge => "merge",
    Delete => "delete",
    Reinforce => "reinforce",
    Decay => "decay",
});

string_enum!(ProvenanceKind {
    Event => "event",
    Artifact => "artifact",
    ToolCall => "tool_call",
    Observation => "observation",
    Outcome => "outcome",
});

impl MemoryType {
    /// Position in the layered retrieval order (0 = first).
    pub fn layer(self) -> u8 {
        self as u8
    }

    pub fn from_layer(layer: i64) -> Option<MemoryType> {
        MemoryType::ALL.get(usize::try_from(layer).ok()?).copied()
    }
}

impl Sensitivity {
    pub fn rank(self) -> u8 {
        self as u8
    }

    pub fn from_rank(rank: i64) -> Option<Sensitivity> {
        Sensitivity::ALL.get(usize::try_from(rank).ok()?).copied()
    }
}

/// A complete record. Every field is always present in JSON except `scope`
/// and the optional parts of provenance and decay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MemoryRecord {
    pub id: String,
    #[serde(rename = "type")]
    pub memory_type: MemoryType,
    pub sensitivity: Sensitivity,
    pub confidence: f64,
    pub salience: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    pub tags: Vec<String>,
    pub status: Status,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: Timestamp,
    pub lifecycle: Lifecycle,
    pub provenance: Provenance,
    pub relations: Vec<Relation>,
    pub payload: Payload,
    pub audit_log: Vec<AuditEntry>,
    /// A vector to store with the record (replacing the one it has), when
    /// the request carried one. Never part of the record's JSON, and not
    /// read back with it: retrieval reads stored vectors itself.
    #[serde(skip)]
    pub embedding: Option<Embedding>,
    /// Its search text analysed ahead of storing it (by whoever prepares
    /// the write, so the writer need not), used while the text is the
    /// same. Never part of the record's JSON.
    #[serde(skip)]
    pub searchable: crate::domain::search::Ahead,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Lifecycle {
    pub decay: DecayProfile,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub last_reinforced_at: Timestamp,
    pub pinned: bool,
    pub deletion_policy: DeletionPolicy,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DecayProfile {
    pub curve: DecayCurve,
    pub half_life_seconds: i64,
    pub min_salience: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_age_seconds: Option<i64>,
    pub reinforcement_gain: f64,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Provenance {
    pub sources: Vec<ProvenanceSource>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProvenanceSource {
    pub kind: ProvenanceKind,
    #[serde(rename = "ref")]
    #[schema(schema_with = source_ref)]
    pub reference: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = source_hash)]
    pub hash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = source_created_by)]
    pub created_by: Option<String>,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub timestamp: Timestamp,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Relation {
    pub predicate: String,
    pub target_id: String,
    pub weight: f64,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AuditEntry {
    pub action: AuditAction,
    #[schema(schema_with = audit_actor)]
    pub actor: String,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub timestamp: Timestamp,
    #[schema(schema_with = audit_rationale)]
    pub rationale: String,
    /// Set on entries a client sent with a record (`POST /v1/records`):
    /// history carried over from elsewhere, kept but never confused with
    /// what this service did or checked. Whatever a client sends here, the
    /// server decides it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub imported: bool,
}

fn audit_actor() -> utoipa::openapi::Object {
    super::schema::optional_name_item()
}

fn audit_rationale() -> utoipa::openapi::Object {
    super::schema::any_text()
}

fn source_ref() -> utoipa::openapi::Object {
    super::schema::text()
}

fn source_hash() -> utoipa::openapi::Object {
    super::schema::optional_text()
}

fn source_created_by() -> utoipa::openapi::Object {
    super::schema::optional_name()
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// A new record id: a UUIDv7, time-ordered, so inserts land at the end of
/// the id index instead of all over it.
pub fn new_record_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// Actor named in audit entries the scheduled maintenance writes.
pub const SCHEDULER_ACTOR: &str = "engram:scheduler";

/// Who did something and why: what every audit entry records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attribution {
    pub actor: String,
    pub rationale: String,
}

impl Attribution {
    pub fn new(actor: impl Into<String>, rationale: impl Into<String>) -> Self {
        Attribution {
            actor: actor.into(),
            rationale: rationale.into(),
        }
    }

    pub fn entry(&self, action: AuditAction, timestamp: Timestamp) -> AuditEntry {
        AuditEntry {
            action,
            actor: self.actor.clone(),
            timestamp,
            rationale: self.rationale.clone(),
            imported: false,
        }
    }
}

impl MemoryRecord {
    /// Refuses timestamps a client may not set: any after `now` (beyond
    /// clock skew) on the record, its lifecycle, sources, relations or
    /// audit entries.
    pub fn check_timestamps(&self, now: Timestamp) -> Validated<()> {
        check_not_future("created_at", self.created_at, now)?;
        check_not_future(
            "lifecycle.last_reinforced_at",
            self.lifecycle.last_reinforced_at,
            now,
        )?;
        for (i, source) in self.provenance.sources.iter().enumerate() {
            check_not_future(
                &format!("provenance.sources[{i}].timestamp"),
                source.timestamp,
                now,
            )?;
        }
        for (i, relation) in self.relations.iter().enumerate() {
            check_not_future(
                &format!("relations[{i}].created_at"),
                relation.created_at,
                now,
            )?;
        }
        for (i, entry) in self.audit_log.iter().enumerate() {
            check_not_future(&format!("audit_log[{i}].timestamp"), entry.timestamp, now)?;
        }
        Ok(())
    }

    /// Checks the invariants storage relies on. Records built by the
    /// ingestion pipeline satisfy them by construction; records sent whole
    /// by clients are checked here before anything is stored.
    pub fn validate(&self) -> Validated<()> {
        check_id("id", &self.id)?;
        check_unit_interval("confidence", self.confidence)?;
        check_non_negative("salience", self.salience)?;
        if let Some(scope) = &self.scope {
            check_name("scope", scope)?;
        }
        for (i, tag) in self.tags.iter().enumerate() {
            check_name(&format!("tags[{i}]"), tag)?;
        }
        if self.payload.memory_type() != self.memory_type {
            return Err(ValidationError::new(
                "payload.kind",
                format!(
                    "payload kind {} does not match record type {}",
                    self.payload.memory_type(),
                    self.memory_type
                ),
            ));
        }
        self.payload.validate().map_err(|e| e.within("payload"))?;
        let decay = &self.lifecycle.decay;
        if decay.half_life_seconds <= 0 {
            return Err(ValidationError::new(
                "lifecycle.decay.half_life_seconds",
                "must be greater than 0",
            ));
        }
        check_non_negative("lifecycle.decay.min_salience", decay.min_salience)?;
        check_non_negative(
            "lifecycle.decay.reinforcement_gain",
            decay.reinforcement_gain,
        )?;
        if let Some(max_age) = decay.max_age_seconds {
            if max_age <= 0 {
                return Err(ValidationError::new(
                    "lifecycle.decay.max_age_seconds",
                    "must be greater than 0",
                ));
            }
        }
        if let Some(created_by) = &self.provenance.created_by {
            check_name("provenance.created_by", created_by)?;
        }
        for (i, source) in self.provenance.sources.iter().enumerate() {
            let field = format!("provenance.sources[{i}]");
            if source.reference.trim().is_empty() {
                return Err(ValidationError::new(
                    format!("{field}.ref"),
                    "ref must not be empty",
                ));
            }
            check_string(&format!("{field}.ref"), &source.reference)?;
            if let Some(hash) = &source.hash {
                check_string(&format!("{field}.hash"), hash)?;
            }
            if let Some(created_by) = &source.created_by {
                check_name(&format!("{field}.created_by"), created_by)?;
            }
        }
        for (i, relation) in self.relations.iter().enumerate() {
            let field = format!("relations[{i}]");
            if relation.predicate.trim().is_empty() {
                return Err(ValidationError::new(
                    format!("{field}.predicate"),
                    "predicate must not be empty",
                ));
            }
            check_string(&format!("{field}.predicate"), &relation.predicate)?;
            check_id(&format!("{field}.target_id"), &relation.target_id)?;
            check_unit_interval(&format!("{field}.weight"), relation.weight)?;
        }
        for (i, entry) in self.audit_log.iter().enumerate() {
            let field = format!("audit_log[{i}]");
            check_name(&format!("{field}.actor"), &entry.actor)?;
            check_string(&format!("{field}.rationale"), &entry.rationale)?;
        }
        Ok(())
    }

    /// The records this one says it was made from besides its
    /// `derived_from` links: ids in the form the service gives (a UUID)
    /// named by a provenance source or a piece of evidence, once each. The
    /// version it supersedes is not among them (a newer version replaces
    /// what it names rather than repeating it), nor is itself. Erasure
    /// follows these to what may repeat erased content.
    pub fn citations(&self) -> Vec<&str> {
        let linked = |id: &str| {
            id == self.id
                || self.relations.iter().any(|r| {
                    r.target_id == id
                        && (r.predicate == super::revision::SUPERSEDES
                            || r.predicate == super::revision::DERIVED_FROM)
                })
        };
        let evidence = match &self.payload {
            Payload::Semantic(semantic) => semantic.evidence.as_slice(),
            _ => &[],
        };
        let named = self
            .provenance
            .sources
            .iter()
            .map(|s| s.reference.as_str())
            .chain(evidence.iter().map(|e| e.source_id.as_str()));
        let mut cited: Vec<&str> = Vec::new();
        for id in named {
            if looks_like_record_id(id) && !cited.contains(&id) && !linked(id) {
                cited.push(id);
            }
        }
        cited
    }
}

/// Whether `text` has the form of a record id the service gives: a
/// hyphenated UUID. Other references (`run-42`, a file name) are an
/// agent's own and name no record.
fn looks_like_record_id(text: &str) -> bool {
    text.len() == 36 && uuid::Uuid::try_parse(text).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_and_ranks_follow_the_declared_order() {
        assert!(MemoryType::Working.layer() < MemoryType::Episodic.layer());
        assert_eq!(MemoryType::from_layer(3), Some(MemoryType::PlanGraph));
        assert!(Sensitivity::Public < Sensitivity::Hyper);
        assert_eq!(Sensitivity::from_rank(2), Some(Sensitivity::Medium));
        assert_eq!(Sensitivity::from_rank(9), None);
    }

    #[test]
    fn enums_use_their_wire_names() {
        assert_eq!(
            serde_json::to_string(&MemoryType::PlanGraph).unwrap(),
            "\"plan_graph\""
        );
        assert_eq!(
            DeletionPolicy::parse("manual_only"),
            Some(DeletionPolicy::ManualOnly)
        );
        let err = serde_json::from_str::<Sensitivity>("\"secret\"")
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown variant `secret`"), "{err}");
    }

    #[test]
    fn citations_are_record_ids_named_by_sources_or_evidence_other_than_a_supersession() {
        let (a, b, c, d) = (
            "0190a1b2-0000-7000-8000-000000000001",
            "0190a1b2-0000-7000-8000-000000000002",
            "0190a1b2-0000-7000-8000-000000000003",
            "0190a1b2-0000-7000-8000-000000000004",
        );
        let at = "2026-01-01T00:00:00Z";
        let new: crate::domain::new_record::NewRecord = serde_json::from_value(serde_json::json!({
            "type": "semantic", "sensitivity": "low",
            "payload": {"kind": "semantic", "subject": "s", "predicate": "p", "object": "o",
                        "evidence": [{"source_type": "episodic", "source_id": a},
                                     {"source_type": "run", "source_id": "run-42"},
                                     {"source_type": "episodic", "source_id": c}]},
            "provenance": {"sources": [
                {"kind": "event", "ref": a, "timestamp": at},
                {"kind": "artifact", "ref": b, "timestamp": at},
                {"kind": "artifact", "ref": d, "timestamp": at},
                {"kind": "artifact", "ref": "0190A1B2-not-a-uuid-at-all-000000000", "timestamp": at}]},
            "relations": [{"predicate": "derived_from", "target_id": d, "weight": 1.0,
                           "created_at": at}]
        }))
        .unwrap();
        let mut record = new
            .into_record(
                &crate::domain::policy::Policy::default(),
                &Attribution::new("t", "t"),
                crate::domain::time::parse_rfc3339(at).unwrap(),
                || c.into(),
            )
            .unwrap();
        let now = record.created_at;
        crate::domain::revision::link_to_superseded(
            &mut record,
            b,
            &Attribution::new("t", "t"),
            now,
        );
        // `b` is superseded, `d` linked already, `c` is the record itself.
        assert_eq!(record.citations(), [a]);
    }
}
