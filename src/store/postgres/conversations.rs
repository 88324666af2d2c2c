//! Conversations in PostgreSQL: the statements of `store::conversations`.

use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use super::connection::Pg;
use crate::domain::conversation::Latest;
use crate::domain::conversation::{TurnQuery, TurnSight};
use crate::domain::record::Sensitivity;
use crate::store::conversations::{
    around_statement, latest_statement, read_latest, started_statement, turns_statement, Around,
    ConversationStore, Param, Statement, TurnRow,
};
use crate::store::error::StoreError;

const SCOPE_IS: &str = "IS NOT DISTINCT FROM";

fn params(statement: &Statement) -> Vec<&(dyn ToSql + Sync)> {
    statement
        .params
        .iter()
        .map(|p| match p {
            Param::Text(text) => text as &(dyn ToSql + Sync),
            Param::Int(n) => n as &(dyn ToSql + Sync),
        })
        .collect()
}

fn query(pg: &Pg, statement: &Statement) -> Result<Vec<Row>, StoreError> {
    pg.query(&statement.sql, &params(statement))
}

impl ConversationStore for Pg {
    fn latest_turn(
        &mut self,
        conversation_id: &str,
        scope: Option<&str>,
        up_to: Sensitivity,
        session: Option<&str>,
    ) -> Result<Option<Latest>, StoreError> {
        let statement = latest_statement(conversation_id, scope, up_to, session, SCOPE_IS);
        query(self, &statement)?
            .first()
            .map(read_latest)
            .transpose()
    }

    fn turns(&mut self, turns: &TurnQuery) -> Result<Vec<TurnRow>, StoreError> {
        query(self, &turns_statement(turns, SCOPE_IS))?
            .iter()
            .map(TurnRow::read)
            .collect()
    }

    fn session_started(
        &mut self,
        conversation_id: &str,
        scope: Option<&str>,
        session_id: &str,
        sight: &TurnSight,
    ) -> Result<Option<i64>, StoreError> {
        let statement = started_statement(conversation_id, scope, session_id, sight, SCOPE_IS);
        Ok(query(self, &statement)?
            .first()
            .map(|row| row.try_get::<_, Option<i64>>(0))
            .transpose()?
            .flatten())
    }

    fn around(&mut self, id: &str, count: usize, sight: &TurnSight) -> Result<Around, StoreError> {
        let before = around_statement(id, count, true, sight);
        let after = around_statement(id, count, false, sight);
        let (before_params, after_params) = (params(&before), params(&after));
        let mut answers = self.query_all(&[
            (before.sql.as_str(), before_params.as_slice()),
            (after.sql.as_str(), after_params.as_slice()),
        ])?;
        let keys = |rows: Vec<Row>| -> Result<Vec<i64>, StoreError> {
            rows.iter().map(|r| Ok(r.try_get(0)?)).collect()
        };
        let after = keys(answers.pop().unwrap_or_default())?;
        let before = keys(answers.pop().unwrap_or_default())?;
        Ok(Around { before, after })
    }
}
