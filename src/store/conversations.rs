//! Conversations: the turns of one, in order, as a caller may see them;
//! where a writer's next turns go; the turns around a turn.
//!
//! Both backends run the same statements, built here with their own
//! parameter syntax ([`Param`]): what a caller may see is decided in the
//! statement, on the turn's record, so a turn outside the grant is never
//! read, counted or returned.

use crate::domain::conversation::{Latest, TurnQuery, TurnSight};
use crate::domain::record::Sensitivity;
use crate::domain::time::to_micros;

use super::rows::Columns;
use crate::store::error::StoreError;

/// A turn as a conversation is read: enough to order and group it; the
/// record itself is loaded apart.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnRow {
    pub key: i64,
    pub scope: Option<String>,
    pub session_id: String,
    pub index: i64,
    /// Microseconds.
    pub at: i64,
    /// The size of its payload, as served, in bytes.
    pub payload_bytes: usize,
}

impl TurnRow {
    /// What [`TurnRow::read`] reads, of `conversation_turns t` joined to
    /// `records r` and `payloads p`.
    pub(crate) const COLUMNS: &'static str =
        "t.record_key, r.scope, t.session_id, t.turn_index, t.at, CAST(octet_length(p.payload_json) AS BIGINT)";

    pub(crate) fn read(row: &impl Columns) -> Result<TurnRow, StoreError> {
        Ok(TurnRow {
            key: row.at(0)?,
            scope: row.at(1)?,
            session_id: row.at(2)?,
            index: row.at(3)?,
            at: row.at(4)?,
            payload_bytes: row.at::<i64>(5)?.max(0) as usize,
        })
    }
}

/// The visible turns around one turn in its session, nearest first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Around {
    pub before: Vec<i64>,
    pub after: Vec<i64>,
}

/// A statement parameter, as both backends bind it.
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    Text(String),
    Int(i64),
}

/// A statement and its parameters; `$n` in the text is the n-th (from 1),
/// written as each backend numbers them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Statement {
    pub sql: String,
    pub params: Vec<Param>,
}

impl Statement {
    /// Adds `value`; answers its placeholder, `$n`.
    fn bind(&mut self, value: Param) -> String {
        self.params.push(value);
        format!("${}", self.params.len())
    }

    /// The text with SQLite's placeholders (`?n`).
    pub fn sqlite(&self) -> String {
        self.sql.replace('$', "?")
    }
}

/// ` AND …` keeping to what `sight` may see, on `records r`.
fn visible(statement: &mut Statement, sight: &TurnSight) -> String {
    // The level comes from an enum, never from text.
    let mut sql = format!(" AND r.sensitivity <= {}", sight.max_sensitivity.rank());
    if !sight.include_retracted {
        sql.push_str(" AND r.status <> 'retracted'");
    }
    if let Some(scopes) = &sight.scopes {
        if scopes.is_empty() {
            sql.push_str(" AND r.scope IS NULL");
        } else {
            let named: Vec<String> = scopes
                .iter()
                .map(|s| statement.bind(Param::Text(s.clone())))
                .collect();
            sql.push_str(&format!(
                " AND (r.scope IS NULL OR r.scope IN ({}))",
                named.join(", ")
            ));
        }
    }
    sql
}

/// ` AND …` for a scope that may be none: `scope_is` is each backend's
/// null-safe equality (`IS` in SQLite, `IS NOT DISTINCT FROM` in
/// PostgreSQL).
fn in_scope(statement: &mut Statement, scope: Option<&str>, scope_is: &str) -> String {
    match scope {
        Some(scope) => {
            let p = statement.bind(Param::Text(scope.to_string()));
            format!(" AND r.scope = {p}")
        }
        None => format!(" AND r.scope {scope_is} NULL"),
    }
}

/// The latest turn of `conversation_id` in `scope` among those at most
/// `up_to` sensitive (in `session`, when given), with the highest index
/// of all of them: where a writer that sees that much appends.
pub fn latest_statement(
    conversation_id: &str,
    scope: Option<&str>,
    up_to: Sensitivity,
    session: Option<&str>,
    scope_is: &str,
) -> Statement {
    let mut s = Statement::default();
    let c = s.bind(Param::Text(conversation_id.to_string()));
    let mut same = format!(
        "t.conversation_id = {c} AND r.sensitivity <= {}",
        up_to.rank()
    );
    same.push_str(&in_scope(&mut s, scope, scope_is));
    let mut latest = same.clone();
    if let Some(session) = session {
        let p = s.bind(Param::Text(session.to_string()));
        latest.push_str(&format!(" AND t.session_id = {p}"));
    }
    s.sql = format!(
        "SELECT t.session_id, t.at,
                (SELECT MAX(t.turn_index) FROM conversation_turns t
                 JOIN records r ON r.key = t.record_key WHERE {same})
         FROM conversation_turns t JOIN records r ON r.key = t.record_key
         WHERE {latest}
         ORDER BY t.at DESC, t.record_key DESC LIMIT 1"
    );
    s
}

/// Decodes [`latest_statement`]'s row.
pub(crate) fn read_latest(row: &impl Columns) -> Result<Latest, StoreError> {
    Ok(Latest {
        session_id: row.at(0)?,
        at: row.time(1)?,
        index: row.at::<i64>(2)?.max(0) as u64,
    })
}

/// The turns `query` asks for, oldest first (by time, then key).
pub fn turns_statement(query: &TurnQuery, scope_is: &str) -> Statement {
    let mut s = Statement::default();
    let c = s.bind(Param::Text(query.conversation_id.to_string()));
    let mut sql = format!(
        "SELECT {} FROM conversation_turns t JOIN records r ON r.key = t.record_key
         JOIN payloads p ON p.record_key = t.record_key
         WHERE t.conversation_id = {c}",
        TurnRow::COLUMNS
    );
    sql.push_str(&visible(&mut s, &query.sight));
    if let Some(scope) = &query.scope {
        sql.push_str(&in_scope(&mut s, scope.as_deref(), scope_is));
    }
    if let Some(session) = &query.session_id {
        let p = s.bind(Param::Text(session.clone()));
        sql.push_str(&format!(" AND t.session_id = {p}"));
    }
    if !query.speakers.is_empty() {
        let named: Vec<String> = query
            .speakers
            .iter()
            .map(|n| s.bind(Param::Text(n.clone())))
            .collect();
        sql.push_str(&format!(" AND t.speaker IN ({})", named.join(", ")));
    }
    if let Some(after) = query.after {
        let p = s.bind(Param::Int(to_micros(&after)));
        sql.push_str(&format!(" AND t.at > {p}"));
    }
    if let Some(before) = query.before {
        let p = s.bind(Param::Int(to_micros(&before)));
        sql.push_str(&format!(" AND t.at < {p}"));
    }
    if let Some((at, key)) = query.from {
        let a = s.bind(Param::Int(at));
        let k = s.bind(Param::Int(key));
        sql.push_str(&format!(
            " AND (t.at > {a} OR (t.at = {a} AND t.record_key > {k}))"
        ));
    }
    let limit = s.bind(Param::Int(query.limit.min(i64::MAX as usize) as i64));
    sql.push_str(&format!(" ORDER BY t.at, t.record_key LIMIT {limit}"));
    s.sql = sql;
    s
}

/// The first visible turn of a session: when it started, as the caller
/// sees it.
pub fn started_statement(
    conversation_id: &str,
    scope: Option<&str>,
    session_id: &str,
    sight: &TurnSight,
    scope_is: &str,
) -> Statement {
    let mut s = Statement::default();
    let c = s.bind(Param::Text(conversation_id.to_string()));
    let p = s.bind(Param::Text(session_id.to_string()));
    let mut sql = format!(
        "SELECT MIN(t.at) FROM conversation_turns t JOIN records r ON r.key = t.record_key
         WHERE t.conversation_id = {c} AND t.session_id = {p}"
    );
    sql.push_str(&in_scope(&mut s, scope, scope_is));
    sql.push_str(&visible(&mut s, sight));
    s.sql = sql;
    s
}

/// Up to `count` visible turns next to the turn of record `id` in its
/// session (same conversation, scope and session): before it (`earlier`),
/// nearest first, or after it.
pub fn around_statement(id: &str, count: usize, earlier: bool, sight: &TurnSight) -> Statement {
    let mut s = Statement::default();
    let k = s.bind(Param::Text(id.to_string()));
    let (compare, order) = if earlier { ("<", "DESC") } else { (">", "ASC") };
    let mut sql = format!(
        "SELECT t.record_key FROM conversation_turns o
         JOIN records ro ON ro.key = o.record_key
         JOIN conversation_turns t ON t.conversation_id = o.conversation_id
              AND t.session_id = o.session_id
              AND (t.turn_index {compare} o.turn_index
                   OR (t.turn_index = o.turn_index AND t.record_key {compare} o.record_key))
         JOIN records r ON r.key = t.record_key
              AND (r.scope = ro.scope OR (r.scope IS NULL AND ro.scope IS NULL))
         WHERE ro.id = {k}"
    );
    sql.push_str(&visible(&mut s, sight));
    let n = s.bind(Param::Int(count as i64));
    sql.push_str(&format!(
        " ORDER BY t.turn_index {order}, t.record_key {order} LIMIT {n}"
    ));
    s.sql = sql;
    s
}

/// Reads of conversations, the same on both backends.
pub trait ConversationStore {
    /// Where a writer that sees turns up to `up_to` appends to
    /// `conversation_id` in `scope`: its latest such turn (in `session`,
    /// when given) and their highest index; `None` when it sees none.
    fn latest_turn(
        &mut self,
        conversation_id: &str,
        scope: Option<&str>,
        up_to: Sensitivity,
        session: Option<&str>,
    ) -> Result<Option<Latest>, StoreError>;

    /// The turns `query` asks for, oldest first.
    fn turns(&mut self, query: &TurnQuery) -> Result<Vec<TurnRow>, StoreError>;

    /// When a session started, as `sight` sees it (`None`: no turn of it
    /// is visible).
    fn session_started(
        &mut self,
        conversation_id: &str,
        scope: Option<&str>,
        session_id: &str,
        sight: &TurnSight,
    ) -> Result<Option<i64>, StoreError>;

    /// Up to `count` visible turns on each side of the turn of record `id`
    /// in its session, nearest first.
    fn around(&mut self, id: &str, count: usize, sight: &TurnSight) -> Result<Around, StoreError>;
}
