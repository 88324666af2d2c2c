//! Erasure: what a caller asks to remove for good, checked, and what
//! removing it did.

use super::ids::{ConversationId, RecordId};
use serde::{Deserialize, Serialize};

use super::validate::{check_name, Validated, ValidationError};

/// Most ids one erasure names.
pub const MAX_IDS: usize = 1000;

/// Which records an erasure removes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    Ids(Vec<RecordId>),
    Scope(String),
    /// Records whose provenance names this creator (`created_by`).
    Source(String),
    /// Facts about this subject, and topics of that title.
    Subject(String),
    /// The turns of this conversation (in every scope the caller may see).
    Conversation(ConversationId),
}

/// The selectors as a request names them, before they are checked.
#[derive(Debug, Clone, Default)]
pub struct SelectorFields {
    pub ids: Option<Vec<String>>,
    pub scope: Option<String>,
    pub source: Option<String>,
    pub subject: Option<String>,
    pub conversation_id: Option<String>,
}

impl Selector {
    /// Exactly one of the five, each checked.
    pub fn checked(fields: SelectorFields) -> Validated<Selector> {
        let SelectorFields {
            ids,
            scope,
            source,
            subject,
            conversation_id,
        } = fields;
        let given = [
            ids.is_some(),
            scope.is_some(),
            source.is_some(),
            subject.is_some(),
            conversation_id.is_some(),
        ];
        if given.iter().filter(|g| **g).count() != 1 {
            return Err(ValidationError::new(
                "selector",
                "give exactly one of ids, scope, source, subject, conversation_id",
            ));
        }
        if let Some(ids) = ids {
            if ids.is_empty() || ids.len() > MAX_IDS {
                return Err(ValidationError::new(
                    "ids",
                    format!("1 to {MAX_IDS} record ids"),
                ));
            }
            let ids = ids
                .into_iter()
                .enumerate()
                .map(|(i, id)| RecordId::parse(&format!("ids[{i}]"), id))
                .collect::<Result<Vec<_>, _>>()?;
            // Each once, in the order given (errors name them by index).
            let mut seen = std::collections::BTreeSet::new();
            let unique = ids
                .into_iter()
                .filter(|id| seen.insert(id.clone()))
                .collect();
            return Ok(Selector::Ids(unique));
        }
        if let Some(conversation) = conversation_id {
            let conversation = ConversationId::parse("conversation_id", conversation)?;
            return Ok(Selector::Conversation(conversation));
        }
        let (field, text) = match (scope, source, subject) {
            (Some(scope), _, _) => ("scope", scope),
            (_, Some(source), _) => ("source", source),
            (_, _, Some(subject)) => ("subject", subject),
            _ => unreachable!("one selector was given"),
        };
        if text.trim().is_empty() {
            return Err(ValidationError::new(field, format!("{field} is empty")));
        }
        check_name(field, &text)?;
        Ok(match field {
            "scope" => Selector::Scope(text),
            "source" => Selector::Source(text),
            _ => Selector::Subject(text),
        })
    }

    /// Its kind, as the erasure log names it.
    pub fn kind(&self) -> &'static str {
        match self {
            Selector::Ids(_) => "ids",
            Selector::Scope(_) => "scope",
            Selector::Source(_) => "source",
            Selector::Subject(_) => "subject",
            Selector::Conversation(_) => "conversation",
        }
    }

    /// What the erasure log keeps of it: a scope or source name; never the
    /// ids (a count instead), a subject or a conversation's id, which may
    /// themselves be what is erased.
    pub fn logged(&self) -> Option<&str> {
        match self {
            Selector::Scope(name) | Selector::Source(name) => Some(name),
            Selector::Ids(_) | Selector::Subject(_) | Selector::Conversation(_) => None,
        }
    }
}

/// An erasure, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Erasure {
    pub selector: Selector,
    pub actor: String,
    pub rationale: String,
    /// Change nothing; answer the same report.
    pub dry_run: bool,
}

impl Erasure {
    pub fn checked(
        selector: Selector,
        actor: Option<String>,
        rationale: Option<String>,
        dry_run: bool,
    ) -> Validated<Erasure> {
        let required = |field: &str, text: Option<String>| {
            let text = text
                .filter(|t| !t.trim().is_empty())
                .ok_or_else(|| ValidationError::new(field, format!("{field} is required")))?;
            check_name(field, &text)?;
            Ok::<_, ValidationError>(text)
        };
        Ok(Erasure {
            selector,
            actor: required("actor", actor)?,
            rationale: required("rationale", rationale)?,
            dry_run,
        })
    }
}

/// Rows an erasure removed (or, dry, would remove), by what they held.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TableCounts {
    pub records: u64,
    /// Full-text index entries.
    pub search: u64,
    pub vectors: u64,
    /// Topic field versions.
    pub topic_fields: u64,
    /// Record relations to or from the erased records, and the edges of
    /// the topics erased with them.
    pub edges: u64,
    /// Audit entries of the erased records.
    pub audit: u64,
}

impl TableCounts {
    pub fn add(&mut self, other: &TableCounts) {
        self.records += other.records;
        self.search += other.search;
        self.vectors += other.vectors;
        self.topic_fields += other.topic_fields;
        self.edges += other.edges;
        self.audit += other.audit;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: usize) -> Option<Vec<String>> {
        Some((0..n).map(|i| format!("r{i}")).collect())
    }

    fn by_ids(ids: Option<Vec<String>>) -> Validated<Selector> {
        Selector::checked(SelectorFields {
            ids,
            ..SelectorFields::default()
        })
    }

    #[test]
    fn exactly_one_selector_is_given() {
        let none = Selector::checked(SelectorFields::default()).unwrap_err();
        assert!(none.to_string().contains("exactly one"), "{none}");
        let two = Selector::checked(SelectorFields {
            ids: ids(1),
            scope: Some("s".into()),
            ..SelectorFields::default()
        })
        .unwrap_err();
        assert!(two.to_string().starts_with("selector"), "{two}");
        assert_eq!(
            Selector::checked(SelectorFields {
                source: Some("bot".into()),
                ..SelectorFields::default()
            })
            .unwrap(),
            Selector::Source("bot".into())
        );
        assert_eq!(
            Selector::checked(SelectorFields {
                conversation_id: Some("chat-1".into()),
                ..SelectorFields::default()
            })
            .unwrap(),
            Selector::Conversation(ConversationId::stored("chat-1".into()))
        );
    }

    #[test]
    fn ids_are_one_to_a_thousand_each_counted_once() {
        assert!(by_ids(ids(0)).is_err());
        assert!(by_ids(ids(MAX_IDS + 1)).is_err());
        let twice = Some(vec!["b".to_string(), "a".to_string(), "b".to_string()]);
        assert_eq!(
            by_ids(twice).unwrap(),
            Selector::Ids(vec![
                RecordId::stored("b".into()),
                RecordId::stored("a".into())
            ])
        );
        let empty = Selector::checked(SelectorFields {
            scope: Some(" ".into()),
            ..SelectorFields::default()
        })
        .unwrap_err();
        assert!(empty.to_string().starts_with("scope"), "{empty}");
    }

    #[test]
    fn the_log_keeps_names_and_never_ids_or_a_subject() {
        assert_eq!(Selector::Scope("t".into()).logged(), Some("t"));
        assert_eq!(
            Selector::Ids(vec![RecordId::stored("x".into())]).logged(),
            None
        );
        assert_eq!(Selector::Subject("Alice".into()).logged(), None);
        assert_eq!(
            Selector::Conversation(ConversationId::stored("chat-1".into())).logged(),
            None
        );
    }

    #[test]
    fn an_erasure_needs_an_actor_and_a_rationale() {
        let selector = Selector::Scope("t".into());
        let no_why = Erasure::checked(selector.clone(), Some("a".into()), None, false);
        assert!(no_why.unwrap_err().to_string().starts_with("rationale"));
        let no_who = Erasure::checked(selector, None, Some("gdpr".into()), false);
        assert!(no_who.unwrap_err().to_string().starts_with("actor"));
    }
}
