//! Topic aliases and summary versions (migration 0017).

use rusqlite::{params, Connection};

use super::topics::COLUMNS;
use crate::domain::time::{from_micros, to_micros, Timestamp};
use crate::domain::topic::normalize_title;
use crate::store::error::StoreError;
use crate::store::topic_names::{SummaryVersion, TopicNameStore};
use crate::store::topics::{read_topic, KeyedTopic};

/// Makes every topic's `norm_title` again (schema version 17: titles are
/// compared without punctuation or a leading article).
pub fn renormalize_titles(conn: &Connection) -> Result<usize, StoreError> {
    let titles: Vec<(i64, String)> = conn
        .prepare("SELECT key, title FROM topics")?
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let mut update = conn.prepare("UPDATE topics SET norm_title = ?2 WHERE key = ?1")?;
    for (key, title) in &titles {
        update.execute(params![key, normalize_title(title)])?;
    }
    Ok(titles.len())
}

impl TopicNameStore for Connection {
    fn add_alias(&mut self, key: i64, alias: &str, at: Timestamp) -> Result<bool, StoreError> {
        let added = self
            .prepare_cached(
                "INSERT OR IGNORE INTO topic_aliases (topic_key, norm_alias, alias, added_at)
                 VALUES (?1, ?2, ?3, ?4)",
            )?
            .execute(params![key, normalize_title(alias), alias, to_micros(&at)])?;
        Ok(added > 0)
    }

    fn topics_aliased(
        &mut self,
        title: &str,
        scope: Option<&str>,
    ) -> Result<Vec<KeyedTopic>, StoreError> {
        let mut stmt = self.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM topics WHERE key IN (
                 SELECT topic_key FROM topic_aliases WHERE norm_alias = ?1)
               AND scope IS ?2 AND archived = 0 ORDER BY key"
        ))?;
        let rows = stmt.query_map(params![normalize_title(title), scope], |row| {
            Ok(read_topic(row))
        })?;
        rows.map(|row| row?.map(|(key, topic)| KeyedTopic { key, topic }))
            .collect()
    }

    fn add_summary(&mut self, key: i64, version: &SummaryVersion) -> Result<(), StoreError> {
        self.prepare_cached(
            "INSERT INTO topic_summaries (topic_key, seq, summary, valid_from, source, why_changed)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(params![
            key,
            version.seq,
            version.summary,
            to_micros(&version.valid_from),
            version.source,
            version.why_changed,
        ])?;
        Ok(())
    }

    fn summaries(&mut self, key: i64) -> Result<Vec<SummaryVersion>, StoreError> {
        let mut stmt = self.prepare_cached(
            "SELECT seq, summary, valid_from, source, why_changed FROM topic_summaries
             WHERE topic_key = ?1 ORDER BY seq",
        )?;
        let rows = stmt.query_map(params![key], |row| {
            Ok(SummaryVersion {
                seq: row.get(0)?,
                summary: row.get(1)?,
                valid_from: from_micros(row.get(2)?),
                source: row.get(3)?,
                why_changed: row.get(4)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}
