//! Topic aliases and summary versions on PostgreSQL (migration 0007).

use super::connection::Pg;
use super::topics::COLUMNS;
use crate::domain::time::{from_micros, to_micros, Timestamp};
use crate::domain::topic::normalize_title;
use crate::store::error::StoreError;
use crate::store::topic_names::{SummaryVersion, TopicNameStore};
use crate::store::topics::{read_topic, KeyedTopic};

/// Makes every topic's `norm_title` again (schema version 7: titles are
/// compared without punctuation or a leading article).
pub fn renormalize_titles(pg: &Pg) -> Result<usize, StoreError> {
    let titles: Vec<(i64, String)> = pg
        .query("SELECT key, title FROM topics", &[])?
        .iter()
        .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
        .collect::<Result<_, StoreError>>()?;
    for (key, title) in &titles {
        pg.execute(
            "UPDATE topics SET norm_title = $2 WHERE key = $1",
            &[key, &normalize_title(title)],
        )?;
    }
    Ok(titles.len())
}

impl TopicNameStore for Pg {
    fn add_alias(&mut self, key: i64, alias: &str, at: Timestamp) -> Result<bool, StoreError> {
        let added = self.execute(
            "INSERT INTO topic_aliases (topic_key, norm_alias, alias, added_at)
             VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
            &[&key, &normalize_title(alias), &alias, &to_micros(&at)],
        )?;
        Ok(added > 0)
    }

    fn topics_aliased(
        &mut self,
        title: &str,
        scope: Option<&str>,
    ) -> Result<Vec<KeyedTopic>, StoreError> {
        self.query(
            &format!(
                "SELECT {COLUMNS} FROM topics t
                 WHERE t.key IN (SELECT topic_key FROM topic_aliases WHERE norm_alias = $1)
                   AND t.scope IS NOT DISTINCT FROM $2 AND NOT t.archived
                 ORDER BY t.key"
            ),
            &[&normalize_title(title), &scope],
        )?
        .iter()
        .map(|row| read_topic(row).map(|(key, topic)| KeyedTopic { key, topic }))
        .collect()
    }

    fn add_summary(&mut self, key: i64, version: &SummaryVersion) -> Result<(), StoreError> {
        self.execute(
            "INSERT INTO topic_summaries (topic_key, seq, summary, valid_from, source, why_changed)
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                &key,
                &version.seq,
                &version.summary,
                &to_micros(&version.valid_from),
                &version.source,
                &version.why_changed,
            ],
        )?;
        Ok(())
    }

    fn summaries(&mut self, key: i64) -> Result<Vec<SummaryVersion>, StoreError> {
        self.query(
            "SELECT seq, summary, valid_from, source, why_changed FROM topic_summaries
             WHERE topic_key = $1 ORDER BY seq",
            &[&key],
        )?
        .iter()
        .map(|row| {
            Ok(SummaryVersion {
                seq: row.try_get(0)?,
                summary: row.try_get(1)?,
                valid_from: from_micros(row.try_get(2)?),
                source: row.try_get(3)?,
                why_changed: row.try_get(4)?,
            })
        })
        .collect()
    }
}
