//! A whole record as a client sends it (`POST /v1/records`, and the new
//! record of a revision), completed by the ingestion policy into a
//! [`MemoryRecord`].

use serde::Deserialize;

use super::builder::RecordDraft;
use super::payload::Payload;
use super::policy::Policy;
use super::record::{
    Attribution, AuditAction, AuditEntry, DecayCurve, DecayProfile, DeletionPolicy, Lifecycle,
    MemoryRecord, MemoryType, Provenance, ProvenanceSource, Relation, Sensitivity, Status,
};
use super::revision::{CONTESTED_BY, SUPERSEDES};
use super::schema;
use super::time::{rfc3339_option, Timestamp};
use super::validate::{
    check_actor, normalize_tags, null_as_default, optional_string, Validated, ValidationError,
};
use super::vector::Embedding;

/// What making a new record from a request takes: the policy, the time,
/// a way to new ids, and the request's key (audit entries name it; see
/// `trust::signed`).
pub struct NewRecordContext<'a> {
    pub policy: &'a Policy,
    pub now: Timestamp,
    pub new_id: &'a dyn Fn() -> String,
    pub key: Option<&'a str>,
}

/// Relations only a revision may create: a client-made one would give a
/// chain two heads, or a contest with no audit entry.
const REVISION_PREDICATES: [&str; 2] = [SUPERSEDES, CONTESTED_BY];

/// A whole record as a client describes it (the body of `POST /v1/records`
/// and the new record of a revision): `type`, `sensitivity` and `payload`
/// are required; whatever else is given is kept, and missing parts get the
/// type's policy defaults. It is a domain type, like the payloads it
/// carries, because completing it is policy.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"type": "semantic", "sensitivity": "low", "payload": {"kind": "semantic", "subject": "service:billing", "predicate": "owner", "object": "team-payments", "evidence": [{"source_type": "event", "source_id": "run-42"}]}}))]
pub struct NewRecord {
    #[serde(default)]
    #[schema(schema_with = optional_id)]
    pub id: Option<String>,
    #[serde(rename = "type")]
    pub memory_type: MemoryType,
    pub sensitivity: Sensitivity,
    #[serde(default)]
    #[schema(schema_with = confidence)]
    pub confidence: Option<f64>,
    #[serde(default)]
    #[schema(schema_with = salience)]
    pub salience: Option<f64>,
    #[serde(default)]
    #[schema(schema_with = schema::optional_name)]
    pub scope: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = schema::tags)]
    pub tags: Vec<String>,
    #[serde(default)]
    #[schema(schema_with = status)]
    pub status: Option<Status>,
    #[serde(default, with = "rfc3339_option")]
    #[schema(schema_with = schema::optional_past_time)]
    pub created_at: Option<Timestamp>,
    /// Accepted so a record read back can be sent again; the server always
    /// sets `updated_at` itself.
    #[serde(default, with = "rfc3339_option")]
    #[schema(schema_with = updated_at)]
    pub updated_at: Option<Timestamp>,
    #[serde(default)]
    pub lifecycle: Option<NewLifecycle>,
    #[serde(default)]
    pub provenance: Option<NewProvenance>,
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = relations)]
    pub relations: Vec<NewRelation>,
    pub payload: Payload,
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = audit_log)]
    pub audit_log: Vec<AuditEntry>,
    /// A vector to store with the record; not part of the record's JSON.
    #[serde(default)]
    #[schema(schema_with = schema::embedding)]
    pub embedding: Option<Vec<f64>>,
}

impl NewRecord {
    /// The first field set that only an import may set (a record brought
    /// over whole from elsewhere, with its own id, state and history).
    pub fn import_field(&self) -> Option<&'static str> {
        [
            ("id", self.id.is_some()),
            ("status", self.status.is_some()),
            ("audit_log", !self.audit_log.is_empty()),
            ("created_at", self.created_at.is_some()),
            ("lifecycle", self.lifecycle.is_some()),
        ]
        .into_iter()
        .find_map(|(field, set)| set.then_some(field))
    }
}

#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewLifecycle {
    #[serde(default)]
    pub decay: Option<NewDecayProfile>,
    #[serde(default, with = "rfc3339_option")]
    #[schema(schema_with = schema::optional_past_time)]
    pub last_reinforced_at: Option<Timestamp>,
    #[serde(default)]
    pub pinned: Option<bool>,
    #[serde(default)]
    pub deletion_policy: Option<DeletionPolicy>,
}

#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewDecayProfile {
    #[serde(default)]
    pub curve: Option<DecayCurve>,
    #[serde(default)]
    #[schema(schema_with = positive_seconds)]
    pub half_life_seconds: Option<i64>,
    #[serde(default)]
    #[schema(schema_with = non_negative)]
    pub min_salience: Option<f64>,
    #[serde(default)]
    #[schema(schema_with = positive_seconds)]
    pub max_age_seconds: Option<i64>,
    #[serde(default)]
    #[schema(schema_with = non_negative)]
    pub reinforcement_gain: Option<f64>,
}

#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewProvenance {
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = sources)]
    pub sources: Vec<ProvenanceSource>,
    #[serde(default)]
    #[schema(schema_with = schema::optional_actor)]
    pub created_by: Option<String>,
}

#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewRelation {
    #[schema(schema_with = relation_predicate)]
    pub predicate: String,
    #[schema(schema_with = schema::id)]
    pub target_id: String,
    #[serde(default)]
    #[schema(schema_with = weight)]
    pub weight: Option<f64>,
    #[serde(default, with = "rfc3339_option")]
    #[schema(schema_with = schema::optional_past_time)]
    pub created_at: Option<Timestamp>,
}

/// A list of the component `name`; `null`: none.
fn list_of(name: &str) -> utoipa::openapi::Array {
    schema::list(
        utoipa::openapi::Ref::from_schema_name(name),
        0,
        usize::MAX,
        true,
    )
}

fn relations() -> utoipa::openapi::Array {
    list_of("NewRelation")
}

fn audit_log() -> utoipa::openapi::Array {
    let mut entries = list_of("AuditEntry");
    entries.description = Some(
        "History brought from elsewhere: kept, marked `imported`; the server adds its own `create` entry."
            .into(),
    );
    entries
}

fn sources() -> utoipa::openapi::Array {
    list_of("ProvenanceSource")
}

fn optional_id() -> utoipa::openapi::Object {
    let mut id = schema::id();
    id.schema_type = utoipa::openapi::schema::SchemaType::from_iter([
        utoipa::openapi::schema::Type::String,
        utoipa::openapi::schema::Type::Null,
    ]);
    id
}

fn confidence() -> utoipa::openapi::Object {
    let mut confidence = schema::unit_interval(true);
    confidence.description = Some("Absent: 1.".into());
    confidence
}

fn salience() -> utoipa::openapi::Object {
    let mut salience = schema::non_negative(true);
    salience.maximum = Some(schema::DOCUMENTED_MAX_SALIENCE.into());
    salience.description = Some(format!(
        "At most `policy.max_salience` ({} unless configured); absent: the type's policy.",
        schema::DOCUMENTED_MAX_SALIENCE
    ));
    salience
}

fn status() -> utoipa::openapi::Object {
    schema::optional_enum(
        &["active"],
        "A new record is active; every other status comes from a revision.",
    )
}

fn updated_at() -> utoipa::openapi::Object {
    schema::time(
        true,
        "Accepted so a record read back can be sent again; the server always sets `updated_at` itself.",
    )
}

fn positive_seconds() -> utoipa::openapi::Object {
    schema::integer(true, 1, i64::MAX)
}

fn non_negative() -> utoipa::openapi::Object {
    schema::non_negative(true)
}

fn weight() -> utoipa::openapi::Object {
    let mut weight = schema::unit_interval(true);
    weight.description = Some("Absent: 1.".into());
    weight
}

/// Not blank; the links only revisions make are refused.
fn relation_predicate() -> utoipa::openapi::Object {
    let mut predicate = schema::bounded(
        super::validate::MAX_STRING_CHARS,
        false,
        &[
            schema::Refused::Blank,
            schema::Refused::Names(&REVISION_PREDICATES),
        ],
    );
    predicate.description = Some(format!(
        "Not `{}`: those links are made only by revisions.",
        REVISION_PREDICATES.join("` nor `")
    ));
    predicate
}

impl NewRecord {
    /// Completes the record with policy defaults and validates it. `by`
    /// goes into the `create` audit entry the server adds.
    pub fn into_record(
        self,
        policy: &Policy,
        by: &Attribution,
        now: Timestamp,
        new_id: impl FnOnce() -> String,
    ) -> Validated<MemoryRecord> {
        let memory_type = self.memory_type;
        let sensitivity = self.sensitivity;
        let payload = self.payload;
        // Every other status is the outcome of a revision, with its audit
        // entry and its links; a record cannot arrive already in one.
        if let Some(status) = self.status.filter(|s| *s != Status::Active) {
            return Err(ValidationError::new(
                "status",
                format!("a new record is active; {status} comes only from a revision"),
            ));
        }
        if let Payload::Semantic(semantic) = &payload {
            let revision = &semantic.revision;
            if revision.status != Status::Active {
                return Err(ValidationError::new(
                    "payload.revision.status",
                    format!(
                        "a new record is active; {} comes only from a revision",
                        revision.status
                    ),
                ));
            }
            for (field, link) in [
                ("supersedes", &revision.supersedes),
                ("superseded_by", &revision.superseded_by),
            ] {
                if link.is_some() {
                    return Err(ValidationError::new(
                        format!("payload.revision.{field}"),
                        "supersession links are made only by revisions (supersede, merge)",
                    ));
                }
            }
        }
        for (i, relation) in self.relations.iter().enumerate() {
            if REVISION_PREDICATES.contains(&relation.predicate.as_str()) {
                return Err(ValidationError::new(
                    format!("relations[{i}].predicate"),
                    format!(
                        "{} links are made only by revisions (supersede, merge, contest)",
                        relation.predicate
                    ),
                ));
            }
        }
        let status = Status::Active;
        let lifecycle = self.lifecycle.map(|given| {
            let defaults = policy.lifecycle(memory_type, now);
            let decay = given.decay.unwrap_or_default();
            Lifecycle {
                decay: DecayProfile {
                    curve: decay.curve.unwrap_or(defaults.decay.curve),
                    half_life_seconds: decay
                        .half_life_seconds
                        .unwrap_or(defaults.decay.half_life_seconds),
                    min_salience: decay.min_salience.unwrap_or(defaults.decay.min_salience),
                    max_age_seconds: decay.max_age_seconds,
                    reinforcement_gain: decay
                        .reinforcement_gain
                        .unwrap_or(defaults.decay.reinforcement_gain),
                },
                last_reinforced_at: given.last_reinforced_at.unwrap_or(now),
                pinned: given.pinned.unwrap_or(false),
                deletion_policy: given.deletion_policy.unwrap_or(defaults.deletion_policy),
            }
        });
        let provenance = self.provenance.unwrap_or_default();
        if let Some(created_by) = &provenance.created_by {
            check_actor("provenance.created_by", created_by)?;
        }
        let mut audit_log = self.audit_log;
        for entry in &mut audit_log {
            entry.imported = true;
        }
        audit_log.push(by.entry(AuditAction::Create, now));
        let draft = RecordDraft {
            id: self.id,
            salience: self.salience,
            scope: optional_string("scope", self.scope)?,
            tags: normalize_tags("tags", self.tags)?,
            status,
            created_at: self.created_at,
            lifecycle,
            provenance: Provenance {
                sources: provenance.sources,
                created_by: optional_string("provenance.created_by", provenance.created_by)?,
            },
            relations: self
                .relations
                .into_iter()
                .map(|relation| Relation {
                    predicate: relation.predicate,
                    target_id: relation.target_id,
                    weight: relation.weight.unwrap_or(1.0),
                    created_at: relation.created_at.unwrap_or(now),
                })
                .collect(),
            audit_log,
            embedding: Embedding::optional("embedding", self.embedding)?,
            ..RecordDraft::new(
                memory_type,
                sensitivity,
                self.confidence.unwrap_or(1.0),
                payload,
            )
        };
        draft.build(policy, now, new_id)
    }
}

/// A record from a `POST /v1/records` body, with id `id`, completed by the
/// default policy as of 2026-01-01: what tests build records with.
#[cfg(test)]
pub fn test_record(id: &str, body: serde_json::Value) -> MemoryRecord {
    let new: NewRecord = serde_json::from_value(body).unwrap();
    let now = super::time::parse_rfc3339("2026-01-01T00:00:00.123456Z").unwrap();
    new.into_record(
        &Policy::default(),
        &Attribution::new("test", "test"),
        now,
        || id.to_string(),
    )
    .unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> Timestamp {
        super::super::time::parse_rfc3339("2026-01-01T00:00:00Z").unwrap()
    }

    #[test]
    fn a_new_record_keeps_what_the_client_gave_and_fills_the_rest() {
        let new: NewRecord = serde_json::from_value(json!({
            "type": "competence", "sensitivity": "medium", "salience": 0.4,
            "lifecycle": {"pinned": true, "decay": {"min_salience": 0.2}},
            "payload": {"kind": "competence", "skill_name": "deploy"}
        }))
        .unwrap();
        let record = new
            .into_record(
                &Policy::default(),
                &Attribution::new("agent", "test"),
                now(),
                || "id-1".into(),
            )
            .unwrap();
        assert_eq!(record.id, "id-1");
        assert_eq!(record.salience, 0.4);
        assert!(record.lifecycle.pinned);
        assert_eq!(record.lifecycle.decay.min_salience, 0.2);
        assert_eq!(record.lifecycle.decay.half_life_seconds, 2_592_000);
        assert_eq!(record.lifecycle.decay.reinforcement_gain, 0.1);
        assert_eq!(record.audit_log.last().unwrap().action, AuditAction::Create);
    }

    #[test]
    fn a_new_record_needs_a_payload_of_its_type_and_valid_values() {
        for missing in [
            json!({"sensitivity": "low", "payload": {"kind": "working", "thread_id": "t", "state": "done"}}),
            json!({"type": "working", "payload": {"kind": "working", "thread_id": "t", "state": "done"}}),
            json!({"type": "working", "sensitivity": "low"}),
        ] {
            assert!(serde_json::from_value::<NewRecord>(missing).is_err());
        }
        let cases = [
            (
                json!({"type": "semantic", "sensitivity": "low", "payload": {"kind": "working", "thread_id": "t", "state": "done"}}),
                "payload.kind",
            ),
            (
                json!({"type": "semantic", "sensitivity": "low", "confidence": 1.5, "payload": {"kind": "semantic", "subject": "a", "predicate": "b"}}),
                "confidence",
            ),
        ];
        for (body, field) in cases {
            let new: NewRecord = serde_json::from_value(body).unwrap();
            let err = new
                .into_record(
                    &Policy::default(),
                    &Attribution::new("a", "test"),
                    now(),
                    || "x".into(),
                )
                .unwrap_err();
            assert_eq!(err.field, field, "{err}");
        }
    }
}
