//! Conversations: turns appended in order (placed after the turns their
//! writer can see), read back by session, and the turns around a turn.

use std::collections::HashMap;

use serde::Serialize;

use super::job::Job;
use super::{check_embedding, place_new, ServiceError};
use crate::domain::conversation::{place, session_named};
use crate::domain::conversation::{TurnQuery, TurnSight};
use crate::domain::ingest::NewConversation;
use crate::domain::payload::Payload;
use crate::domain::record::MemoryRecord;
use crate::domain::retrieval::records_within;
use crate::domain::time::{from_micros, Timestamp};
use crate::domain::trust::Caller;
use crate::store::conversations::{Around, TurnRow};
use crate::store::{StoreError, Transaction};

/// What `POST /v1/ingest/conversation` answers.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ConversationIngested {
    pub conversation_id: String,
    /// The session the turns went to.
    pub session_id: String,
    /// Whether they opened it.
    pub new_session: bool,
    /// The turns' records, in the order sent.
    pub records: Vec<MemoryRecord>,
}

/// Appends `conversation`'s turns for `caller`: placed in their scope
/// (the caller's default when none is named), in the session the request
/// names or the one the conversation's latest turn the caller can see
/// suggests (`gap`), numbered after the turns it can see. A conversation
/// is its id within a scope; what the caller cannot see of it plays no
/// part, so appending tells nothing about it.
pub fn append(
    tx: &mut dyn Transaction,
    caller: &Caller,
    conversation: NewConversation,
    gap: chrono::Duration,
) -> Result<ConversationIngested, ServiceError> {
    let NewConversation {
        conversation_id,
        session_id,
        mut records,
    } = conversation;
    for (i, record) in records.iter_mut().enumerate() {
        place_new(caller, "", record)?;
        check_embedding(
            tx,
            &format!("turns[{i}].embedding"),
            record.embedding.as_ref(),
        )?;
    }
    // Every turn has the request's scope.
    let scope = records.first().and_then(|r| r.scope.clone());
    let up_to = caller.trust.max_sensitivity;
    let latest = tx.latest_turn(&conversation_id, scope.as_deref(), up_to, None)?;
    let session_last = match &session_id {
        Some(session) => tx
            .latest_turn(&conversation_id, scope.as_deref(), up_to, Some(session))?
            .map(|l| l.at),
        None => None,
    };
    let times: Vec<Timestamp> = records.iter().filter_map(turn_at).collect();
    let placement = place(
        latest.as_ref(),
        session_id.as_deref(),
        session_last,
        &times,
        gap,
        session_named,
    )
    .map_err(|e| {
        // The first turn is refused only for the turns stored before it:
        // the session's state, not the request, decides (409).
        if e.field == "turns[0].at" {
            ServiceError::FailedPrecondition(e.to_string())
        } else {
            e.into()
        }
    })?;
    for (i, record) in records.iter_mut().enumerate() {
        if let Payload::Episodic(episode) = &mut record.payload {
            if let Some(turn) = &mut episode.turn {
                turn.session_id.clone_from(&placement.session_id);
                turn.index = placement.first_index + i as u64;
            }
        }
    }
    let refs: Vec<&MemoryRecord> = records.iter().collect();
    tx.insert_records(&refs)?;
    Ok(ConversationIngested {
        conversation_id: conversation_id.into_string(),
        session_id: placement.session_id,
        new_session: placement.new_session,
        records,
    })
}

fn turn_at(record: &MemoryRecord) -> Option<Timestamp> {
    record.payload.turn().map(|t| t.at)
}

/// [`append`] as a write job.
pub struct StoreConversation {
    pub caller: Caller,
    pub now: Timestamp,
    pub conversation: NewConversation,
    pub gap: chrono::Duration,
}

impl StoreConversation {
    /// The turns of `conversation`, with their search texts analysed here,
    /// on the caller's thread, so that the one writer need not; sessions
    /// end after `gap` without a turn.
    pub fn new(
        caller: Caller,
        now: Timestamp,
        mut conversation: NewConversation,
        gap: chrono::Duration,
    ) -> Self {
        conversation
            .records
            .iter_mut()
            .for_each(crate::domain::search::analyse_ahead);
        StoreConversation {
            caller,
            now,
            conversation,
            gap,
        }
    }
}

impl Job for StoreConversation {
    type Output = ConversationIngested;
    const NAME: &'static str = "store_conversation";

    fn run(self, tx: &mut dyn Transaction) -> Result<ConversationIngested, ServiceError> {
        append(tx, &self.caller, self.conversation, self.gap)
    }
}

/// A session as a page of a conversation holds it.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Session {
    pub session_id: String,
    /// The conversation's scope (a conversation is its id within a scope).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Its first turn the caller may see.
    #[serde(with = "crate::domain::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub started_at: Timestamp,
    pub turns: Vec<MemoryRecord>,
}

/// A page of a conversation: its sessions in the order of their turns,
/// and where the next page starts (the last turn's time and key).
#[derive(Debug, Clone, PartialEq)]
pub struct TurnPage {
    pub sessions: Vec<Session>,
    pub next: Option<(i64, i64)>,
}

/// The turns `query` asks for, grouped by session in time order: a run
/// of turns of one session is one entry (sessions that interleave in time
/// appear once per run).
pub fn read_turns(
    tx: &mut dyn Transaction,
    query: &TurnQuery,
    now: Timestamp,
) -> Result<TurnPage, ServiceError> {
    // One more than a page: whether there is a next one.
    let asked = TurnQuery {
        limit: query.limit.saturating_add(1),
        ..query.clone()
    };
    let mut rows = tx.turns(&asked)?;
    let mut more = rows.len() > query.limit;
    rows.truncate(query.limit);
    let fits = records_within(
        rows.iter().map(|row| row.payload_bytes),
        query.max_bytes,
        usize::MAX,
    );
    if fits < rows.len() {
        rows.truncate(fits);
        more = true;
    }
    let keys: Vec<i64> = rows.iter().map(|r| r.key).collect();
    let mut loaded = by_key(tx, &keys, now)?;
    let mut sessions: Vec<Session> = Vec::new();
    let mut started: HashMap<(Option<String>, String), Timestamp> = HashMap::new();
    let mut last = None;
    for row in &rows {
        let Some(record) = loaded.remove(&row.key) else {
            continue;
        };
        let same = sessions
            .last()
            .is_some_and(|s| s.session_id == row.session_id && s.scope == row.scope);
        if !same {
            let place = (row.scope.clone(), row.session_id.clone());
            let started_at = match started.get(&place) {
                Some(&at) => at,
                None => {
                    let at = session_start(tx, query, row)?;
                    started.insert(place, at);
                    at
                }
            };
            sessions.push(Session {
                session_id: row.session_id.clone(),
                scope: row.scope.clone(),
                started_at,
                turns: Vec::new(),
            });
        }
        if let Some(session) = sessions.last_mut() {
            session.turns.push(record);
        }
        last = Some((row.at, row.key));
    }
    Ok(TurnPage {
        sessions,
        next: if more { last } else { None },
    })
}

/// When the session of `row` started, as the query's caller sees it.
fn session_start(
    tx: &mut dyn Transaction,
    query: &TurnQuery,
    row: &TurnRow,
) -> Result<Timestamp, StoreError> {
    let first = tx.session_started(
        &query.conversation_id,
        row.scope.as_deref(),
        &row.session_id,
        &query.sight,
    )?;
    Ok(from_micros(first.unwrap_or(row.at).min(row.at)))
}

/// [`read_turns`] as a read job.
pub struct ReadTurns {
    pub query: TurnQuery,
    pub now: Timestamp,
}

impl Job for ReadTurns {
    type Output = TurnPage;
    const NAME: &'static str = "read_turns";

    fn run(self, tx: &mut dyn Transaction) -> Result<TurnPage, ServiceError> {
        read_turns(tx, &self.query, self.now)
    }
}

/// The visible turns of a turn's session around it, in conversation
/// order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnContext {
    pub before: Vec<MemoryRecord>,
    pub after: Vec<MemoryRecord>,
}

/// The turns `sight` may see around each turn among `records` (other
/// records have none), up to `count` on each side, loaded: by the turn's
/// record id, the turns before it (nearest last, in conversation order)
/// and after it.
pub fn context_of(
    tx: &mut dyn Transaction,
    records: &[MemoryRecord],
    count: usize,
    sight: &TurnSight,
    now: Timestamp,
) -> Result<HashMap<String, TurnContext>, ServiceError> {
    let mut context = HashMap::new();
    if count == 0 {
        return Ok(context);
    }
    let turns: Vec<&MemoryRecord> = records
        .iter()
        .filter(|r| r.payload.turn().is_some())
        .collect();
    if turns.is_empty() {
        return Ok(context);
    }
    let mut around: Vec<(String, Around)> = Vec::new();
    let mut wanted: Vec<i64> = Vec::new();
    for record in turns {
        let a = tx.around(&record.id, count, sight)?;
        wanted.extend(a.before.iter().chain(&a.after));
        around.push((record.id.clone(), a));
    }
    wanted.sort_unstable();
    wanted.dedup();
    let loaded = by_key(tx, &wanted, now)?;
    let pick = |keys: &[i64]| -> Vec<MemoryRecord> {
        keys.iter().filter_map(|k| loaded.get(k)).cloned().collect()
    };
    for (id, a) in around {
        let mut before = pick(&a.before);
        before.reverse();
        context.insert(
            id,
            TurnContext {
                before,
                after: pick(&a.after),
            },
        );
    }
    Ok(context)
}

/// The records with these keys, by key.
fn by_key(
    tx: &mut dyn Transaction,
    keys: &[i64],
    now: Timestamp,
) -> Result<HashMap<i64, MemoryRecord>, ServiceError> {
    let records = tx.load_records(keys, now)?;
    // In the order asked, none missing: the keys were read in this
    // transaction.
    if records.len() != keys.len() {
        return Err(StoreError::Corrupt(format!(
            "{} of {} turns read back",
            records.len(),
            keys.len()
        ))
        .into());
    }
    Ok(keys.iter().copied().zip(records).collect())
}
