//! Topics: things agents know about, with fields whose values change over
//! time (each version a semantic record) and typed edges between them. An
//! observation is placed as a new topic, an extension of one, or a new
//! version of one field; `auto` lets the service choose.

use serde::Serialize;
use serde_json::Value;

use super::builder::RecordDraft;
use super::decay::{salience_at, Anchor, DecayState};
use super::new_record::NewRecordContext;
use super::payload::{Evidence, Payload, RevisionState, SemanticPayload, Validity};
use super::policy::CandidateKind;
use super::record::{
    Attribution, AuditAction, DecayProfile, MemoryRecord, Provenance, ProvenanceSource, Sensitivity,
};
use super::time::Timestamp;
use super::trust::signed;
use super::validate::{
    check_id, check_json_size, check_name, normalize_tags, optional_string, Validated,
    ValidationError,
};
use super::vector::Embedding;

/// Most fields and edges one ingest may carry.
pub const MAX_FIELDS: usize = 100;
pub const MAX_EDGES: usize = 100;
/// Longest field name and edge kind.
pub const MAX_NAME: usize = 128;
/// Most similar topics suggested.
pub const MAX_SIMILAR: usize = 8;

/// How an observation becomes part of the topics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    NewTopic,
    ExtendTopic,
    VersionField,
    Auto,
}

impl Placement {
    pub fn parse(field: &str, text: Option<&str>) -> Validated<Placement> {
        match text {
            None | Some("auto") => Ok(Placement::Auto),
            Some("new_topic") => Ok(Placement::NewTopic),
            Some("extend_topic") => Ok(Placement::ExtendTopic),
            Some("version_field") => Ok(Placement::VersionField),
            Some(other) => Err(ValidationError::new(
                field,
                format!(
                    "unknown placement {other:?}: new_topic, extend_topic, version_field or auto"
                ),
            )),
        }
    }
}

/// What `auto` does when no topic is clearly the one an observation names:
/// two nearly as good, or the best just short of the threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnAmbiguous {
    /// A new topic, the near ones in `similar_topic_ids`.
    #[default]
    NewTopic,
    /// `409`, the near ones in the error.
    Fail,
}

impl OnAmbiguous {
    pub fn parse(field: &str, text: Option<&str>) -> Validated<OnAmbiguous> {
        match text {
            None | Some("new_topic") => Ok(OnAmbiguous::NewTopic),
            Some("fail") => Ok(OnAmbiguous::Fail),
            Some(other) => Err(ValidationError::new(
                field,
                format!("unknown on_ambiguous {other:?}: new_topic or fail"),
            )),
        }
    }
}

/// A field's value as an ingest sets it.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldItem {
    pub name: String,
    pub value: Value,
    pub why_changed: Option<String>,
}

/// An edge an ingest adds from its topic.
#[derive(Debug, Clone, PartialEq)]
pub struct EdgeItem {
    pub to_topic_id: String,
    pub kind: String,
}

/// A topics ingest: what to write, and where if the caller said;
/// [`TopicIngest::checked`] before use.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicIngest {
    pub placement: Placement,
    pub topic_id: Option<String>,
    pub title: Option<String>,
    pub summary: Option<String>,
    pub kind: Option<String>,
    pub fields: Vec<FieldItem>,
    pub edges: Vec<EdgeItem>,
    pub suggest_similar: bool,
    /// `auto` only.
    pub on_ambiguous: OnAmbiguous,
    /// Why the summary changed, kept with its new version.
    pub why_changed: Option<String>,
    pub source: String,
    pub sensitivity: Sensitivity,
    pub scope: Option<String>,
    pub tags: Vec<String>,
    /// The topic's vector: kept (the latest given wins), and compared for
    /// similar-topic hints.
    pub embedding: Option<Embedding>,
}

impl TopicIngest {
    pub fn checked(parts: TopicIngest) -> Validated<TopicIngest> {
        let placement = parts.placement;
        let source = optional_string("source", Some(parts.source))?
            .ok_or_else(|| ValidationError::new("source", "source is required"))?;
        check_name("source", &source)?;
        let topic_id = optional_string("topic_id", parts.topic_id)?;
        if let Some(id) = &topic_id {
            check_id("topic_id", id)?;
        }
        match placement {
            Placement::ExtendTopic | Placement::VersionField if topic_id.is_none() => {
                return Err(ValidationError::new(
                    "topic_id",
                    format!(
                        "topic_id is required for {}",
                        if placement == Placement::ExtendTopic {
                            "extend_topic"
                        } else {
                            "version_field"
                        }
                    ),
                ));
            }
            Placement::NewTopic | Placement::Auto if topic_id.is_some() => {
                return Err(ValidationError::new(
                    "topic_id",
                    "topic_id is for extend_topic and version_field only",
                ));
            }
            _ => {}
        }
        let title = optional_string("title", parts.title)?;
        if let Some(title) = &title {
            check_name("title", title)?;
        }
        if title.is_none() && matches!(placement, Placement::NewTopic | Placement::Auto) {
            return Err(ValidationError::new(
                "title",
                "title is required for new_topic and auto",
            ));
        }
        if parts.on_ambiguous != OnAmbiguous::NewTopic && placement != Placement::Auto {
            return Err(ValidationError::new(
                "on_ambiguous",
                "on_ambiguous is for auto placement only",
            ));
        }
        let summary = optional_string("summary", parts.summary)?;
        let why_changed = optional_string("why_changed", parts.why_changed)?;
        let kind = optional_string("kind", parts.kind)?;
        if let Some(kind) = &kind {
            check_name("kind", kind)?;
        }
        if parts.fields.len() > MAX_FIELDS {
            return Err(ValidationError::new(
                "fields",
                format!("at most {MAX_FIELDS} fields per ingest"),
            ));
        }
        for (i, field) in parts.fields.iter().enumerate() {
            check_field_name(&format!("fields[{i}].name"), &field.name)?;
            check_json_size(&format!("fields[{i}].value"), &field.value)?;
            if parts.fields[..i].iter().any(|f| f.name == field.name) {
                return Err(ValidationError::new(
                    format!("fields[{i}].name"),
                    format!("field {:?} is given twice", field.name),
                ));
            }
        }
        if placement == Placement::VersionField && parts.fields.len() != 1 {
            return Err(ValidationError::new(
                "fields",
                "version_field takes exactly one field",
            ));
        }
        if parts.edges.len() > MAX_EDGES {
            return Err(ValidationError::new(
                "edges",
                format!("at most {MAX_EDGES} edges per ingest"),
            ));
        }
        for (i, edge) in parts.edges.iter().enumerate() {
            check_id(&format!("edges[{i}].to_topic_id"), &edge.to_topic_id)?;
            check_edge_kind(&format!("edges[{i}].kind"), &edge.kind)?;
        }
        Ok(TopicIngest {
            placement,
            topic_id,
            title,
            summary,
            kind,
            fields: parts.fields,
            edges: parts.edges,
            suggest_similar: parts.suggest_similar,
            on_ambiguous: parts.on_ambiguous,
            why_changed,
            source,
            sensitivity: parts.sensitivity,
            scope: optional_string("scope", parts.scope)?,
            tags: normalize_tags("tags", parts.tags)?,
            embedding: parts.embedding,
        })
    }
}

/// A field name: 1 to 128 characters, no control characters.
pub fn check_field_name(field: &str, name: &str) -> Validated<()> {
    if name.trim().is_empty() || name.chars().count() > MAX_NAME {
        return Err(ValidationError::new(
            field,
            format!("a field name is 1 to {MAX_NAME} characters"),
        ));
    }
    check_name(field, name)
}

/// The edge kind a merged topic gets to the topic it was merged into.
pub const MERGED_INTO: &str = "merged_into";

/// An edge kind: a lowercase identifier (`depends_on`, `part_of`).
pub fn check_edge_kind(field: &str, kind: &str) -> Validated<()> {
    let mut chars = kind.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_lowercase());
    let rest_ok = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !first_ok || !rest_ok || kind.len() > MAX_NAME {
        return Err(ValidationError::new(
            field,
            format!(
                "an edge kind is a lowercase identifier such as depends_on or part_of, got {kind:?}"
            ),
        ));
    }
    Ok(())
}

/// A title as `auto` placement compares it for sameness: lowercase,
/// single-spaced, no punctuation between words, no leading article
/// ([`crate::domain::resolution::Name`]).
pub fn normalize_title(title: &str) -> String {
    crate::domain::resolution::Name::parse(title).normal
}

/// The distinct lowercase words of a text.
fn words(text: &str) -> std::collections::BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Longest word, and most words of one topic, the word index keeps.
pub const MAX_INDEX_WORD: usize = 64;
pub const MAX_INDEX_WORDS: usize = 256;

/// The words of a topic's text (title and summary) the word index keeps:
/// the words [`text_similarity`] compares, up to the limits above.
pub fn index_words(text: &str) -> std::collections::BTreeSet<String> {
    words(text)
        .into_iter()
        .filter(|w| w.len() <= MAX_INDEX_WORD)
        .take(MAX_INDEX_WORDS)
        .collect()
}

/// How alike two topics' texts (title and summary) are: the share of
/// their distinct words they have in common (Jaccard), in [0, 1].
pub fn text_similarity(a: &str, b: &str) -> f64 {
    let (a, b) = (words(a), words(b));
    let union = a.union(&b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(&b).count() as f64 / union as f64
}

/// What an ingest did to one field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FieldOp {
    Created,
    Versioned,
    Unchanged,
}

impl FieldOp {
    /// What setting a field to `new` does, given its current value.
    pub fn of(current: Option<&Value>, new: &Value) -> FieldOp {
        match current {
            None => FieldOp::Created,
            Some(value) if value == new => FieldOp::Unchanged,
            Some(_) => FieldOp::Versioned,
        }
    }
}

/// A topic as stored (its fields and edges apart).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Topic {
    pub id: String,
    pub title: String,
    pub summary: String,
    pub kind: Option<String>,
    pub sensitivity: Sensitivity,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    pub tags: Vec<String>,
    /// As stored: as of the last decay sweep or reinforcement. Reads show
    /// the value now (see [`Topic::decayed`]).
    pub salience: f64,
    pub archived: bool,
    #[serde(with = "super::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
    #[serde(with = "super::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: Timestamp,
    /// The salience at the last reinforcement, from which it decays.
    #[serde(skip)]
    pub anchor: Anchor,
}

impl Topic {
    /// A low, unscoped-unless-told topic titled `title`, made at `at`,
    /// with its id its title: for tests.
    #[cfg(test)]
    pub(crate) fn sample(title: &str, scope: Option<&str>, at: Timestamp) -> Topic {
        Topic {
            id: title.to_string(),
            title: title.to_string(),
            summary: String::new(),
            kind: None,
            sensitivity: crate::domain::record::Sensitivity::Low,
            scope: scope.map(str::to_string),
            tags: Vec::new(),
            salience: 1.0,
            archived: false,
            created_at: at,
            updated_at: at,
            anchor: Anchor { salience: 1.0, at },
        }
    }

    /// What topic search indexes and similarity compares: title and
    /// summary.
    pub fn text(&self) -> String {
        format!("{} {}", self.title, self.summary)
    }

    /// The salience at `now`: topics fade like the semantic records their
    /// fields are, with the same profile.
    pub fn salience_at(&self, decay: &DecayProfile, now: Timestamp) -> f64 {
        salience_at(
            &DecayState {
                anchor: self.anchor,
                profile: decay,
                pinned: false,
                created_at: self.created_at,
            },
            now,
        )
    }

    /// The topic with its salience as of `now`.
    pub fn decayed(mut self, decay: &DecayProfile, now: Timestamp) -> Topic {
        self.salience = self.salience_at(decay, now);
        self
    }

    /// Raises the salience by `gain` from its value at `now`, never above
    /// `max`, and anchors decay there.
    pub fn reinforce(&mut self, gain: f64, max: f64, decay: &DecayProfile, now: Timestamp) {
        let current = self.salience_at(decay, now);
        let raised = (current + gain).min(max).max(current);
        self.anchor = Anchor {
            salience: raised,
            at: now,
        };
        self.salience = raised;
    }
}

/// The semantic record holding one version of a topic's field: subject
/// the topic's id, predicate the field's name, object its value, valid
/// from `now`, with the topic's sensitivity, scope and tags. Its `create`
/// entry names `source` (signed by the request's key) and says why the
/// value changed when the caller did.
pub fn field_record(
    cx: &NewRecordContext<'_>,
    topic: &Topic,
    item: &FieldItem,
    source: &str,
) -> Validated<MemoryRecord> {
    let kind = CandidateKind::Observation;
    let payload = Payload::Semantic(SemanticPayload {
        subject: topic.id.clone(),
        predicate: item.name.clone(),
        object: item.value.clone(),
        validity: Validity {
            start: Some(cx.now),
            ..Validity::default()
        },
        evidence: vec![Evidence {
            source_type: "observation".to_string(),
            source_id: source.to_string(),
            timestamp: Some(cx.now),
        }],
        revision_policy: "replace".to_string(),
        revision: RevisionState::default(),
    });
    let rationale = item
        .why_changed
        .clone()
        .unwrap_or_else(|| format!("topic field {} set", item.name));
    RecordDraft {
        scope: topic.scope.clone(),
        tags: topic.tags.clone(),
        provenance: Provenance {
            sources: vec![ProvenanceSource {
                kind: kind.provenance_kind(),
                reference: format!("topic:{}", topic.id),
                hash: None,
                created_by: Some(source.to_string()),
                timestamp: cx.now,
            }],
            created_by: Some(source.to_string()),
        },
        audit_log: vec![
            Attribution::new(signed(cx.key, source), rationale).entry(AuditAction::Create, cx.now)
        ],
        ..RecordDraft::new(
            kind.memory_type(),
            topic.sensitivity,
            kind.confidence(),
            payload,
        )
    }
    .build(cx.policy, cx.now, cx.new_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parts(placement: Option<&str>) -> TopicIngest {
        TopicIngest {
            placement: Placement::parse("placement", placement).unwrap_or(Placement::Auto),
            topic_id: None,
            title: Some("Go toolchain".into()),
            summary: None,
            kind: None,
            fields: vec![FieldItem {
                name: "version".into(),
                value: json!("1.22"),
                why_changed: None,
            }],
            edges: Vec::new(),
            suggest_similar: false,
            on_ambiguous: OnAmbiguous::NewTopic,
            why_changed: None,
            source: "agent".into(),
            sensitivity: Sensitivity::Low,
            scope: None,
            tags: Vec::new(),
            embedding: None,
        }
    }

    #[test]
    fn placements_check_what_each_needs() {
        assert_eq!(
            TopicIngest::checked(parts(None)).unwrap().placement,
            Placement::Auto
        );
        let err = Placement::parse("placement", Some("merge")).unwrap_err();
        assert_eq!(err.field, "placement");
        let err = TopicIngest::checked(parts(Some("extend_topic"))).unwrap_err();
        assert_eq!(err.field, "topic_id");
        let mut two = parts(Some("version_field"));
        two.topic_id = Some("t".into());
        two.fields.push(FieldItem {
            name: "owner".into(),
            value: json!("x"),
            why_changed: None,
        });
        assert_eq!(TopicIngest::checked(two).unwrap_err().field, "fields");
        let mut untitled = parts(Some("new_topic"));
        untitled.title = None;
        assert_eq!(TopicIngest::checked(untitled).unwrap_err().field, "title");
        let mut twice = parts(None);
        twice.fields.push(twice.fields[0].clone());
        assert_eq!(
            TopicIngest::checked(twice).unwrap_err().field,
            "fields[1].name"
        );
        let mut bad_edge = parts(None);
        bad_edge.edges.push(EdgeItem {
            to_topic_id: "t".into(),
            kind: "Depends On".into(),
        });
        assert_eq!(
            TopicIngest::checked(bad_edge).unwrap_err().field,
            "edges[0].kind"
        );
    }

    #[test]
    fn titles_match_whatever_their_case_and_spacing() {
        assert_eq!(normalize_title("  Go   Toolchain "), "go toolchain");
        assert_eq!(
            normalize_title("GO toolchain"),
            normalize_title("go  toolchain")
        );
    }

    #[test]
    fn similarity_is_the_share_of_words_in_common() {
        assert_eq!(text_similarity("go toolchain", "Go Toolchain!"), 1.0);
        assert_eq!(text_similarity("go toolchain", "rust toolchain"), 1.0 / 3.0);
        assert_eq!(text_similarity("", ""), 0.0);
    }

    #[test]
    fn a_field_is_created_versioned_or_left_as_it_is() {
        assert_eq!(FieldOp::of(None, &json!(1)), FieldOp::Created);
        assert_eq!(FieldOp::of(Some(&json!(1)), &json!(1)), FieldOp::Unchanged);
        assert_eq!(FieldOp::of(Some(&json!(1)), &json!(2)), FieldOp::Versioned);
    }

    #[test]
    fn a_topic_fades_with_its_profile_and_reinforcement_raises_it_from_now() {
        use crate::domain::record::DecayCurve;
        let t0 = crate::domain::time::parse_rfc3339("2026-01-01T00:00:00Z").unwrap();
        let decay = DecayProfile {
            curve: DecayCurve::Exponential,
            half_life_seconds: 100,
            min_salience: 0.0,
            max_age_seconds: None,
            reinforcement_gain: 0.1,
        };
        let mut topic = Topic {
            id: "t".into(),
            title: "t".into(),
            summary: String::new(),
            kind: None,
            sensitivity: Sensitivity::Low,
            scope: None,
            tags: vec![],
            salience: 1.0,
            archived: false,
            created_at: t0,
            updated_at: t0,
            anchor: Anchor {
                salience: 0.8,
                at: t0,
            },
        };
        let later = t0 + chrono::Duration::seconds(200);
        assert!((topic.salience_at(&decay, later) - 0.2).abs() < 1e-9);
        assert!((topic.clone().decayed(&decay, later).salience - 0.2).abs() < 1e-9);
        topic.reinforce(0.1, 1.0, &decay, later);
        assert!((topic.salience - 0.3).abs() < 1e-9);
        assert_eq!(topic.anchor.at, later);
        // Capped by the maximum, and never lowered by a smaller maximum.
        topic.reinforce(5.0, 1.0, &decay, later);
        assert_eq!(topic.salience, 1.0);
        topic.reinforce(0.1, 0.5, &decay, later);
        assert_eq!(topic.salience, 1.0);
    }
}
