//! Conversations in SQLite: the statements of `store::conversations`.

use rusqlite::types::Value as SqlValue;
use rusqlite::{params_from_iter, Connection, OptionalExtension};

use crate::domain::conversation::Latest;
use crate::domain::conversation::{TurnQuery, TurnSight};
use crate::domain::record::Sensitivity;
use crate::store::conversations::{
    around_statement, latest_statement, read_latest, started_statement, turns_statement, Around,
    ConversationStore, Param, Statement, TurnRow,
};
use crate::store::error::StoreError;

fn values(statement: &Statement) -> Vec<SqlValue> {
    statement
        .params
        .iter()
        .map(|p| match p {
            Param::Text(text) => SqlValue::Text(text.clone()),
            Param::Int(n) => SqlValue::Integer(*n),
        })
        .collect()
}

fn rows<T>(
    conn: &Connection,
    statement: &Statement,
    read: impl Fn(&rusqlite::Row<'_>) -> Result<T, StoreError>,
) -> Result<Vec<T>, StoreError> {
    let mut prepared = conn.prepare_cached(&statement.sqlite())?;
    let mut rows = prepared.query(params_from_iter(values(statement)))?;
    let mut found = Vec::new();
    while let Some(row) = rows.next()? {
        found.push(read(row)?);
    }
    Ok(found)
}

impl ConversationStore for Connection {
    fn latest_turn(
        &mut self,
        conversation_id: &str,
        scope: Option<&str>,
        up_to: Sensitivity,
        session: Option<&str>,
    ) -> Result<Option<Latest>, StoreError> {
        let statement = latest_statement(conversation_id, scope, up_to, session, "IS");
        self.prepare_cached(&statement.sqlite())?
            .query_row(params_from_iter(values(&statement)), |row| {
                Ok(read_latest(row))
            })
            .optional()?
            .transpose()
    }

    fn turns(&mut self, query: &TurnQuery) -> Result<Vec<TurnRow>, StoreError> {
        rows(self, &turns_statement(query, "IS"), |row| {
            TurnRow::read(row)
        })
    }

    fn session_started(
        &mut self,
        conversation_id: &str,
        scope: Option<&str>,
        session_id: &str,
        sight: &TurnSight,
    ) -> Result<Option<i64>, StoreError> {
        let statement = started_statement(conversation_id, scope, session_id, sight, "IS");
        Ok(self
            .prepare_cached(&statement.sqlite())?
            .query_row(params_from_iter(values(&statement)), |row| row.get(0))?)
    }

    fn around(&mut self, id: &str, count: usize, sight: &TurnSight) -> Result<Around, StoreError> {
        let mut around = Around::default();
        for (earlier, side) in [(true, &mut around.before), (false, &mut around.after)] {
            *side = rows(self, &around_statement(id, count, earlier, sight), |row| {
                Ok(row.get(0)?)
            })?;
        }
        Ok(around)
    }
}
