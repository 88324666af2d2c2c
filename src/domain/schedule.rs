//! Cron schedules of the maintenance jobs: six fields, seconds first
//! (`sec min hour day-of-month month day-of-week`), evaluated in UTC — the
//! form the scheduler runs them in.

use chrono::Timelike;
use croner::parser::{CronParser, Seconds};
use croner::Cron;

use super::time::Timestamp;

/// A cron expression that parsed.
#[derive(Debug, Clone)]
pub struct Schedule {
    expression: String,
    cron: Cron,
}

impl Schedule {
    /// Parses `expression`; the error says why it is not a schedule.
    pub fn parse(expression: &str) -> Result<Schedule, String> {
        let expression = expression.trim();
        let fields = expression.split_whitespace().count();
        if fields != 6 {
            return Err(format!(
                "a schedule has 6 fields (seconds minutes hours day-of-month month day-of-week), \
                 {expression:?} has {fields}"
            ));
        }
        let cron = CronParser::builder()
            .seconds(Seconds::Required)
            .dom_and_dow(true)
            .build()
            .parse(expression)
            .map_err(|e| format!("{expression:?} is not a valid cron expression: {e}"))?;
        Ok(Schedule {
            expression: expression.to_string(),
            cron,
        })
    }

    pub fn expression(&self) -> &str {
        &self.expression
    }

    /// The first time the schedule fires after `now`, to the second.
    pub fn next_after(&self, now: Timestamp) -> Option<Timestamp> {
        let whole_second = now.with_nanosecond(0).unwrap_or(now);
        self.cron.find_next_occurrence(&whole_second, false).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::time::parse_rfc3339;

    #[test]
    fn six_field_expressions_parse_and_say_when_they_fire_next() {
        let hourly = Schedule::parse("0 0 * * * *").unwrap();
        let now = parse_rfc3339("2026-01-01T10:15:00.250Z").unwrap();
        assert_eq!(
            hourly.next_after(now),
            Some(parse_rfc3339("2026-01-01T11:00:00Z").unwrap())
        );
        let every_six_hours = Schedule::parse("0 0 */6 * * *").unwrap();
        assert_eq!(
            every_six_hours.next_after(now),
            Some(parse_rfc3339("2026-01-01T12:00:00Z").unwrap())
        );
    }

    #[test]
    fn bad_expressions_are_refused_with_the_reason() {
        assert!(Schedule::parse("0 * * * *")
            .unwrap_err()
            .contains("6 fields"));
        assert!(Schedule::parse("0 0 * * * * 2030")
            .unwrap_err()
            .contains("6 fields"));
        assert!(Schedule::parse("0 61 * * * *")
            .unwrap_err()
            .contains("not a valid cron expression"));
        assert!(Schedule::parse("every hour")
            .unwrap_err()
            .contains("6 fields"));
        assert!(Schedule::parse("").is_err());
    }
}
