//! What a retrieval asks for, checked, and the storage query it becomes
//! for a caller's trust.

use serde_json::{Map, Value};

use super::conversation::{check_id as check_conversation_id, MAX_CONTEXT_TURNS};
use super::record::{MemoryRecord, MemoryType, Sensitivity};
use super::relevance::{Bm25, TurnWeights, Weights};
use super::requests::check_speakers;
use super::search::TextQuery;
use super::time::Timestamp;
use super::trust::{Caller, TrustContext};
use super::validate::{
    check_list_len, check_name, check_non_negative, normalize_tags, optional_string, optional_time,
    Validated, ValidationError,
};
use super::vector::{Embedding, QueryVector};

/// Most names one `sources` filter may list.
pub const MAX_FILTER_SOURCES: usize = 100;

/// What records must be besides visible, all conditions together.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filters {
    /// Every one of these tags.
    pub tags: Vec<String>,
    /// Written by any of these (provenance `created_by`: the ingest source).
    pub sources: Vec<String>,
    /// Working states of this thread.
    pub thread_id: Option<String>,
    /// Facts about this subject.
    pub subject: Option<String>,
    /// Turns of this conversation.
    pub conversation_id: Option<String>,
    /// Turns by any of these speakers.
    pub speakers: Vec<String>,
    /// Created strictly after.
    pub created_after: Option<Timestamp>,
    /// Created strictly before.
    pub created_before: Option<Timestamp>,
}

/// The filters as a request sends them, before they are checked.
#[derive(Debug, Clone, Default)]
pub struct FilterFields {
    pub tags: Option<Vec<String>>,
    pub sources: Option<Vec<String>>,
    pub thread_id: Option<String>,
    pub subject: Option<String>,
    pub conversation_id: Option<String>,
    pub speakers: Option<Vec<String>>,
    pub created_after: Option<String>,
    pub created_before: Option<String>,
}

impl Filters {
    pub fn new(fields: FilterFields) -> Validated<Filters> {
        let tags = normalize_tags("tags", fields.tags.unwrap_or_default())?;
        for (i, tag) in tags.iter().enumerate() {
            check_name(&format!("tags[{i}]"), tag)?;
        }
        let mut sources = fields.sources.unwrap_or_default();
        check_list_len("sources", sources.len(), MAX_FILTER_SOURCES, "sources")?;
        for (i, source) in sources.iter().enumerate() {
            let field = format!("sources[{i}]");
            if source.trim().is_empty() {
                return Err(ValidationError::new(field, "source must not be empty"));
            }
            check_name(&field, source)?;
        }
        sources.dedup();
        let name = |field: &str, value: Option<String>| -> Validated<Option<String>> {
            let Some(value) = value else { return Ok(None) };
            if value.trim().is_empty() {
                return Err(ValidationError::new(
                    field,
                    format!("{field} must not be empty"),
                ));
            }
            check_name(field, &value)?;
            Ok(Some(value))
        };
        let created_after = optional_time("created_after", fields.created_after)?;
        let created_before = optional_time("created_before", fields.created_before)?;
        if let (Some(after), Some(before)) = (created_after, created_before) {
            if after >= before {
                return Err(ValidationError::new(
                    "created_before",
                    "created_before must be later than created_after",
                ));
            }
        }
        if let Some(id) = &fields.conversation_id {
            check_conversation_id("conversation_id", id)?;
        }
        let mut speakers = fields.speakers.unwrap_or_default();
        check_speakers(&speakers)?;
        speakers.sort();
        speakers.dedup();
        Ok(Filters {
            tags,
            sources,
            thread_id: name("thread_id", fields.thread_id)?,
            subject: name("subject", fields.subject)?,
            conversation_id: fields.conversation_id,
            speakers,
            created_after,
            created_before,
        })
    }

    /// Whether records of this type can pass: a thread belongs to working
    /// states, a subject to facts, a conversation and speakers to turns
    /// (episodes).
    pub fn admits(&self, memory_type: MemoryType) -> bool {
        (self.thread_id.is_none() || memory_type == MemoryType::Working)
            && (self.subject.is_none() || memory_type == MemoryType::Semantic)
            && (self.conversation_id.is_none() && self.speakers.is_empty()
                || memory_type == MemoryType::Episodic)
    }

    /// The one name (thread, subject or conversation) a record must be
    /// about, if any.
    pub fn about(&self) -> Option<&str> {
        self.thread_id
            .as_deref()
            .or(self.subject.as_deref())
            .or(self.conversation_id.as_deref())
    }

    /// The names a record must be about, with the type that has them.
    pub fn abouts(&self) -> impl Iterator<Item = (&str, MemoryType)> {
        [
            (&self.thread_id, MemoryType::Working),
            (&self.subject, MemoryType::Semantic),
            (&self.conversation_id, MemoryType::Episodic),
        ]
        .into_iter()
        .filter_map(|(name, memory_type)| name.as_deref().map(|n| (n, memory_type)))
    }

    /// Whether there are none: every record a caller may see passes.
    pub fn is_empty(&self) -> bool {
        *self == Filters::default()
    }

    /// Whether the filters pick records through an index of their own (a
    /// thread, a subject, a tag) rather than narrowing the salience order.
    pub fn selective(&self) -> bool {
        self.about().is_some() || !self.tags.is_empty()
    }

    /// Whether a record passes; storage applies the same conditions in
    /// SQL.
    pub fn matches(&self, record: &MemoryRecord) -> bool {
        self.admits(record.memory_type)
            && self
                .about()
                .is_none_or(|about| record.payload.about() == Some(about))
            && self.tags.iter().all(|tag| record.tags.contains(tag))
            && (self.speakers.is_empty()
                || record
                    .payload
                    .turn()
                    .is_some_and(|t| self.speakers.contains(&t.speaker)))
            && (self.sources.is_empty()
                || record
                    .provenance
                    .created_by
                    .as_ref()
                    .is_some_and(|by| self.sources.contains(by)))
            && self.created_after.is_none_or(|t| record.created_at > t)
            && self.created_before.is_none_or(|t| record.created_at < t)
    }
}

/// What a record adds to an answer besides its payload, at most in
/// practice: ids, times, tags, provenance, relations, audit entries.
pub const RECORD_OVERHEAD_BYTES: usize = 4096;

/// How many of the records whose payloads have these sizes, in order, an
/// answer holds within `max_bytes` (each counted with
/// [`RECORD_OVERHEAD_BYTES`]) and `max_records`: always the first, so
/// every record can be read, one page at a time.
pub fn records_within(
    payload_sizes: impl IntoIterator<Item = usize>,
    max_bytes: usize,
    max_records: usize,
) -> usize {
    let (mut total, mut fits) = (0usize, 0usize);
    for size in payload_sizes {
        let size = size + RECORD_OVERHEAD_BYTES;
        if fits > 0 && (total + size > max_bytes || fits >= max_records) {
            break;
        }
        total += size;
        fits += 1;
    }
    fits
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
    /// The `limit` of the whole answer, of which this may be a later page
    /// (then `limit` is what is left of it).
    pub answer_limit: usize,
    pub include_retracted: bool,
    /// Continue after this place of an earlier answer.
    pub after: Option<Cursor>,
    /// Stop adding records once the answer would be about this large.
    pub max_bytes: usize,
    /// Or once it holds this many (`page_size`; `usize::MAX`: no count).
    pub page_size: usize,
    pub filters: Filters,
    /// The words of the text query.
    pub text: Option<TextQuery>,
    /// The query's vector; with neither it nor `text`, records are ranked
    /// by salience alone.
    pub vector: Option<QueryVector>,
    pub weights: Weights,
    pub bm25: Bm25,
    /// How turns rank by their neighbours and session.
    pub turns: TurnWeights,
    /// `policy.max_salience`, which salience is normalised against.
    pub max_salience: f64,
    /// A text query reads the caller's records whole (where the backend
    /// can) when the caller may see at most this many.
    pub scan_records: usize,
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
    const LEN: usize = 48;

    /// The cursor as bytes, for the service to seal before a client sees
    /// it (it names a row's internal key).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(Self::LEN);
        bytes.extend_from_slice(&self.as_of.to_be_bytes());
        bytes.extend_from_slice(&self.salience.to_bits().to_be_bytes());
        bytes.extend_from_slice(&self.layer.to_be_bytes());
        bytes.extend_from_slice(&self.created_at.to_be_bytes());
        bytes.extend_from_slice(&self.key.to_be_bytes());
        bytes.extend_from_slice(&(self.remaining as u64).to_be_bytes());
        bytes
    }

    /// The cursor of [`Cursor::to_bytes`]; `None` for any other bytes.
    pub fn from_bytes(bytes: &[u8]) -> Option<Cursor> {
        if bytes.len() != Self::LEN {
            return None;
        }
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&bytes[i * 8..i * 8 + 8]);
            w
        };
        let cursor = Cursor {
            as_of: i64::from_be_bytes(word(0)),
            salience: f64::from_bits(u64::from_be_bytes(word(1))),
            layer: i64::from_be_bytes(word(2)),
            created_at: i64::from_be_bytes(word(3)),
            key: i64::from_be_bytes(word(4)),
            remaining: usize::try_from(u64::from_be_bytes(word(5))).ok()?,
        };
        (cursor.salience.is_finite() && cursor.remaining > 0).then_some(cursor)
    }
}

/// A checked retrieval: what to read, before the caller's trust narrows
/// it to what may be seen.
#[derive(Debug, Clone)]
pub struct Retrieval {
    pub task_descriptor: Option<String>,
    pub filters: Filters,
    /// In layer order, without repeats.
    pub memory_types: Vec<MemoryType>,
    pub min_salience: f64,
    pub limit: usize,
    pub include_retracted: bool,
    pub context: Option<Map<String, Value>>,
    pub cursor: Option<Cursor>,
    /// `page_size`: at most this many records per answer.
    pub page_size: Option<usize>,
    /// `query_embedding`: rank by similarity to it.
    pub embedding: Option<Embedding>,
    /// Visible turns returned around each turn, on each side.
    pub context_turns: usize,
}

/// How the service ranks, from its configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ranking {
    pub weights: Weights,
    pub bm25: Bm25,
    pub turns: TurnWeights,
    pub max_salience: f64,
    pub max_response_bytes: usize,
    /// `retrieval.scan_records`.
    pub scan_records: usize,
}

impl Retrieval {
    /// The storage query for a caller with `trust`.
    pub fn query_for(&self, trust: &TrustContext, ranking: &Ranking) -> RecordQuery {
        RecordQuery {
            memory_types: self
                .memory_types
                .iter()
                .copied()
                .filter(|t| self.filters.admits(*t))
                .collect(),
            max_sensitivity: trust.max_sensitivity,
            scopes: trust.scope_filter(),
            min_salience: self.min_salience,
            // A continuation returns at most what the first page left.
            limit: self
                .cursor
                .map_or(self.limit, |c| self.limit.min(c.remaining)),
            answer_limit: self.limit,
            include_retracted: self.include_retracted,
            after: self.cursor,
            max_bytes: ranking.max_response_bytes,
            page_size: self.page_size.unwrap_or(usize::MAX),
            filters: self.filters.clone(),
            text: self.task_descriptor.as_deref().and_then(TextQuery::new),
            vector: self.embedding.as_ref().map(QueryVector::new),
            weights: ranking.weights,
            bm25: ranking.bm25,
            turns: ranking.turns,
            max_salience: ranking.max_salience,
            scan_records: ranking.scan_records,
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
            page_size: None,
            embedding: None,
            filters: Filters::default(),
            context_turns: 0,
        })
    }

    /// What a cursor for this retrieval is bound to: the caller and every
    /// part of the query but the cursor itself. A cursor sealed with it
    /// opens only for the same caller asking the same thing.
    pub fn binding(&self, caller: &Caller) -> Vec<u8> {
        let query = Retrieval {
            cursor: None,
            ..self.clone()
        };
        format!("retrieve|{caller:?}|{query:?}").into_bytes()
    }

    /// The same retrieval, in answers of at most `page_size` records
    /// (1 to `max_limit`; absent: as many as fit in the response size).
    pub fn paged(self, page_size: Option<i64>, max_limit: usize) -> Validated<Retrieval> {
        let page_size = match page_size {
            None => None,
            Some(n) if n >= 1 && n as u64 <= max_limit as u64 => Some(n as usize),
            Some(n) => {
                return Err(ValidationError::new(
                    "page_size",
                    format!("must be between 1 and {max_limit}, got {n}"),
                ))
            }
        };
        Ok(Retrieval { page_size, ..self })
    }

    /// The same retrieval, narrowed by `filters`.
    pub fn filtered(self, filters: Filters) -> Retrieval {
        Retrieval { filters, ..self }
    }

    /// The same retrieval, ranked by similarity to `embedding` too.
    pub fn embedded(self, embedding: Option<Embedding>) -> Retrieval {
        Retrieval { embedding, ..self }
    }

    /// The same retrieval, each turn returned with up to `context_turns`
    /// (0 to 10) visible turns of its session on each side.
    pub fn with_context(self, context_turns: Option<i64>) -> Validated<Retrieval> {
        let context_turns = match context_turns {
            None => 0,
            Some(n) if (0..=MAX_CONTEXT_TURNS as i64).contains(&n) => n as usize,
            Some(n) => {
                return Err(ValidationError::new(
                    "context_turns",
                    format!("must be between 0 and {MAX_CONTEXT_TURNS}, got {n}"),
                ))
            }
        };
        Ok(Retrieval {
            context_turns,
            ..self
        })
    }
}

/// Most hops, nodes and edges a graph retrieval may ask for.
pub const MAX_GRAPH_HOPS: u8 = 3;
pub const MAX_GRAPH_NODES: usize = 1000;
pub const MAX_GRAPH_EDGES: usize = 5000;

/// How far a graph retrieval goes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GraphLimits {
    pub max_hops: u8,
    pub node_limit: usize,
    pub edge_limit: usize,
}

impl GraphLimits {
    pub fn checked(
        max_hops: Option<u8>,
        node_limit: Option<usize>,
        edge_limit: Option<usize>,
    ) -> Result<GraphLimits, ValidationError> {
        let max_hops = max_hops.unwrap_or(1);
        if max_hops > MAX_GRAPH_HOPS {
            return Err(ValidationError::new(
                "max_hops",
                format!("at most {MAX_GRAPH_HOPS}, got {max_hops}"),
            ));
        }
        let bounded = |field: &str, value: Option<usize>, default: usize, most: usize| match value {
            None => Ok(default),
            Some(n) if (1..=most).contains(&n) => Ok(n),
            Some(n) => Err(ValidationError::new(
                field,
                format!("must be 1 to {most}, got {n}"),
            )),
        };
        Ok(GraphLimits {
            max_hops,
            node_limit: bounded("node_limit", node_limit, 50, MAX_GRAPH_NODES)?,
            edge_limit: bounded("edge_limit", edge_limit, 100, MAX_GRAPH_EDGES)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_holds_what_fits_and_always_its_first_record() {
        let max = 3 * RECORD_OVERHEAD_BYTES + 100;
        assert_eq!(records_within([10, 10, 10, 10], max, 100), 3);
        assert_eq!(records_within([10, 10, 10, 10], max, 2), 2);
        assert_eq!(records_within([50, 50, 1], max, 100), 2);
        assert_eq!(records_within([max * 2, 1], max, 100), 1);
        assert_eq!(records_within([], max, 100), 0);
    }
}
