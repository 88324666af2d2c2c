//! Rows as both backends read them. A decoder reads a row's columns by
//! position through [`Columns`], which each backend implements for its own
//! row type, so a record, a topic, a key or a tombstone is decoded in one
//! place beside its type, whichever backend read it.

use serde::de::DeserializeOwned;

use crate::domain::record::{DecayProfile, MemoryType, Sensitivity};
use crate::domain::time::{from_micros, Timestamp};
use crate::store::error::StoreError;

/// A column value either backend can hand over: what rusqlite and
/// tokio-postgres both decode.
pub(crate) trait Value:
    rusqlite::types::FromSql + for<'a> tokio_postgres::types::FromSql<'a>
{
}

impl<T> Value for T where T: rusqlite::types::FromSql + for<'a> tokio_postgres::types::FromSql<'a> {}

/// One row of an answer, its columns by position.
pub(crate) trait Columns {
    /// Column `column`, as `T`.
    fn at<T: Value>(&self, column: usize) -> Result<T, StoreError>;

    /// A timestamp column, in microseconds.
    fn time(&self, column: usize) -> Result<Timestamp, StoreError> {
        Ok(from_micros(self.at(column)?))
    }

    /// A text column holding one of an enum's names.
    fn parsed<T>(&self, column: usize, parse: fn(&str) -> Option<T>) -> Result<T, StoreError> {
        let text: String = self.at(column)?;
        parse(&text).ok_or_else(|| {
            StoreError::Corrupt(format!("unexpected value {text:?} in column {column}"))
        })
    }

    /// A sensitivity column, by rank.
    fn sensitivity(&self, column: usize) -> Result<Sensitivity, StoreError> {
        let rank: i64 = self.at(column)?;
        Sensitivity::from_rank(rank)
            .ok_or_else(|| StoreError::Corrupt(format!("unknown sensitivity rank {rank}")))
    }

    /// A memory type column, by layer.
    fn memory_type(&self, column: usize) -> Result<MemoryType, StoreError> {
        let layer: i64 = self.at(column)?;
        MemoryType::from_layer(layer)
            .ok_or_else(|| StoreError::Corrupt(format!("unknown memory type layer {layer}")))
    }

    /// A text column holding JSON; `what` names it in the error.
    fn json<T: DeserializeOwned>(&self, column: usize, what: &str) -> Result<T, StoreError> {
        let text: String = self.at(column)?;
        serde_json::from_str(&text).map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
    }

    /// A decay profile's five columns from `first`: curve, half-life,
    /// floor, maximum age and reinforcement gain.
    fn decay_profile(&self, first: usize) -> Result<DecayProfile, StoreError> {
        Ok(DecayProfile {
            curve: self.parsed(first, crate::domain::record::DecayCurve::parse)?,
            half_life_seconds: self.at(first + 1)?,
            min_salience: self.at(first + 2)?,
            max_age_seconds: self.at(first + 3)?,
            reinforcement_gain: self.at(first + 4)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::record::Status;

    /// `f` applied to the one row of `sql` on an in-memory SQLite database.
    fn on_row<T>(sql: &str, f: impl FnOnce(&rusqlite::Row<'_>) -> T) -> T {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.query_row(sql, [], |row| Ok(f(row))).unwrap()
    }

    #[test]
    fn a_value_storage_does_not_know_is_corrupt_naming_what_it_found() {
        let status = on_row("SELECT 'active', 'lost'", |row| {
            (row.parsed(0, Status::parse), row.parsed(1, Status::parse))
        });
        assert_eq!(status.0.unwrap(), Status::Active);
        let err = status.1.unwrap_err().to_string();
        assert!(
            err.contains("\"lost\"") && err.contains("column 1"),
            "{err}"
        );

        let rank = on_row("SELECT 9", |row| row.sensitivity(0));
        assert!(matches!(rank, Err(StoreError::Corrupt(m)) if m.contains("rank 9")));
        let layer = on_row("SELECT 42", |row| row.memory_type(0));
        assert!(matches!(layer, Err(StoreError::Corrupt(m)) if m.contains("layer 42")));
        let tags = on_row("SELECT '[1,'", |row| row.json::<Vec<u8>>(0, "topic tags"));
        assert!(matches!(tags, Err(StoreError::Corrupt(m)) if m.starts_with("topic tags:")));
    }

    #[test]
    fn a_column_of_the_wrong_type_is_an_error_not_a_default() {
        let text_as_int = on_row("SELECT 'x'", |row| row.at::<i64>(0));
        assert!(text_as_int.is_err());
        let null_as_option = on_row("SELECT NULL", |row| row.at::<Option<i64>>(0));
        assert_eq!(null_as_option.unwrap(), None);
    }
}
