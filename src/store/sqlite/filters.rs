//! Retrieval filters as SQL conditions on `records r`, shared by the
//! salience ranges and the ranked candidates.

use rusqlite::types::Value as SqlValue;

use crate::domain::retrieval::Filters;
use crate::domain::time::to_micros;

/// `AND …` conditions for `filters` (empty when there are none) and the
/// values of their parameters, numbered from `?{first}` on.
#[derive(Debug, Clone, Default)]
pub struct FilterSql {
    pub clause: String,
    pub values: Vec<SqlValue>,
}

impl FilterSql {
    pub fn new(filters: &Filters, first: usize) -> FilterSql {
        let mut sql = FilterSql::default();
        let mut next = first;
        let mut param = |sql: &mut FilterSql, value: SqlValue| {
            sql.values.push(value);
            next += 1;
            next - 1
        };
        // A thread is a working state's, a subject a fact's, a
        // conversation a turn's.
        for (name, memory_type) in filters.abouts() {
            let n = param(&mut sql, SqlValue::Text(name.to_string()));
            sql.clause.push_str(&format!(
                " AND r.about = ?{n} AND r.layer = {}",
                memory_type.layer()
            ));
        }
        if !filters.speakers.is_empty() {
            let numbers: Vec<String> = filters
                .speakers
                .iter()
                .map(|speaker| format!("?{}", param(&mut sql, SqlValue::Text(speaker.clone()))))
                .collect();
            sql.clause.push_str(&format!(
                " AND EXISTS (SELECT 1 FROM conversation_turns c \
                 WHERE c.record_key = r.key AND c.speaker IN ({}))",
                numbers.join(", ")
            ));
        }
        for tag in &filters.tags {
            let n = param(&mut sql, SqlValue::Text(tag.clone()));
            sql.clause.push_str(&format!(
                " AND EXISTS (SELECT 1 FROM tags WHERE record_key = r.key AND tag = ?{n})"
            ));
        }
        if !filters.sources.is_empty() {
            let numbers: Vec<String> = filters
                .sources
                .iter()
                .map(|source| format!("?{}", param(&mut sql, SqlValue::Text(source.clone()))))
                .collect();
            sql.clause
                .push_str(&format!(" AND r.created_by IN ({})", numbers.join(", ")));
        }
        if let Some(after) = filters.created_after {
            let n = param(&mut sql, SqlValue::Integer(to_micros(&after)));
            sql.clause.push_str(&format!(" AND r.created_at > ?{n}"));
        }
        if let Some(before) = filters.created_before {
            let n = param(&mut sql, SqlValue::Integer(to_micros(&before)));
            sql.clause.push_str(&format!(" AND r.created_at < ?{n}"));
        }
        sql
    }
}
