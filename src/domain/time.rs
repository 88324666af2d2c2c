//! Timestamps: RFC 3339 in UTC on the wire, microseconds since the Unix
//! epoch in storage (compact, and ordered as integers).

use chrono::{DateTime, SecondsFormat, TimeZone, Utc};

pub type Timestamp = DateTime<Utc>;

/// Parses a strict RFC 3339 timestamp (an offset is required) into UTC.
pub fn parse_rfc3339(text: &str) -> Result<Timestamp, String> {
    let parsed = DateTime::parse_from_rfc3339(text)
        .map_err(|e| format!("invalid RFC 3339 timestamp {text:?}: {e}"))?
        .with_timezone(&Utc);
    if micros_in_range(&parsed) {
        Ok(parsed)
    } else {
        Err(format!("timestamp {text:?} is out of the supported range"))
    }
}

fn micros_in_range(ts: &Timestamp) -> bool {
    ts.timestamp_micros() > i64::MIN && ts.timestamp_micros() < i64::MAX
}

/// The one form every answer gives a time in: UTC, `Z`, six fractional
/// digits (what storage keeps), so string order is time order.
pub fn format_rfc3339(ts: &Timestamp) -> String {
    ts.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// Storage form. Precision below a microsecond is not kept.
pub fn to_micros(ts: &Timestamp) -> i64 {
    ts.timestamp_micros()
}

pub fn from_micros(micros: i64) -> Timestamp {
    Utc.timestamp_micros(micros).single().unwrap_or_default()
}

/// Truncates to what storage keeps, so a record built in memory equals the
/// one read back.
pub fn truncate_to_micros(ts: Timestamp) -> Timestamp {
    from_micros(to_micros(&ts))
}

/// `#[serde(with = "rfc3339")]` for `Timestamp` fields.
pub mod rfc3339 {
    use super::*;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(ts: &Timestamp, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&format_rfc3339(ts))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Timestamp, D::Error> {
        let text = String::deserialize(deserializer)?;
        parse_rfc3339(&text)
            .map(truncate_to_micros)
            .map_err(serde::de::Error::custom)
    }
}

/// `#[serde(with = "rfc3339_option")]` for `Option<Timestamp>` fields.
pub mod rfc3339_option {
    use super::*;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(
        ts: &Option<Timestamp>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match ts {
            Some(ts) => serializer.serialize_str(&format_rfc3339(ts)),
            None => serializer.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Timestamp>, D::Error> {
        match Option::<String>::deserialize(deserializer)? {
            Some(text) => parse_rfc3339(&text)
                .map(|ts| Some(truncate_to_micros(ts)))
                .map_err(serde::de::Error::custom),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_time_is_written_in_one_form_whose_order_is_time_order() {
        let times = [
            "2026-01-15T10:30:00Z",
            "2026-01-15T10:30:00.1Z",
            "2026-01-15T10:30:00.108Z",
            "2026-01-15T10:30:00.108903Z",
            "2026-01-15T11:30:00.5+01:00",
        ];
        let written: Vec<String> = times
            .iter()
            .map(|t| format_rfc3339(&parse_rfc3339(t).unwrap()))
            .collect();
        assert_eq!(written[0], "2026-01-15T10:30:00.000000Z");
        assert_eq!(written[2], "2026-01-15T10:30:00.108000Z");
        assert!(written.iter().all(|w| w.len() == 27 && w.ends_with('Z')));
        let mut sorted = written.clone();
        sorted.sort();
        assert_eq!(sorted, written);
    }

    #[test]
    fn rfc3339_round_trips_through_storage_micros() {
        let ts = parse_rfc3339("2025-01-15T10:30:00.123456+02:00").unwrap();
        assert_eq!(format_rfc3339(&ts), "2025-01-15T08:30:00.123456Z");
        assert_eq!(from_micros(to_micros(&ts)), ts);
    }

    #[test]
    fn a_timestamp_without_offset_is_refused() {
        assert!(parse_rfc3339("2025-01-15T10:30:00").is_err());
        assert!(parse_rfc3339("yesterday").is_err());
        assert!(parse_rfc3339("2025-13-01T00:00:00Z").is_err());
    }
}
