//! Cron schedules of the maintenance jobs: six fields, seconds first
//! (`sec min hour day-of-month month day-of-week`), evaluated in UTC — the
//! form the scheduler runs them in.

use chrono::{Duration, Timelike};
use croner::parser::{CronParser, Seconds};
use croner::Cron;

use super::time::Timestamp;

/// How far ahead a schedule must have a run.
const DAYS_AHEAD: i64 = 366;

/// Days after the first run over which gaps between runs are measured: a
/// week and a day, so weekly patterns are seen whole.
const GAP_WINDOW_DAYS: i64 = 8;

fn parse_cron(expression: &str) -> Result<Cron, croner::errors::CronError> {
    CronParser::builder()
        .seconds(Seconds::Required)
        .dom_and_dow(true)
        .build()
        .parse(expression)
}

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
        let cron = parse_cron(expression)
            .map_err(|e| format!("{expression:?} is not a valid cron expression: {e}"))?;
        Ok(Schedule {
            expression: expression.to_string(),
            cron,
        })
    }

    /// Parses `expression` and checks that it is a schedule a job can live
    /// with, as of `now`: it runs within the next 366 days, and never twice
    /// within `min_interval_seconds`.
    pub fn parse_checked(
        expression: &str,
        now: Timestamp,
        min_interval_seconds: u64,
    ) -> Result<Schedule, String> {
        let schedule = Schedule::parse(expression)?;
        schedule.check_runs(now, min_interval_seconds)?;
        Ok(schedule)
    }

    /// The checks of [`Schedule::parse_checked`]. Each is bounded: whether
    /// any of the next 366 dates matches is asked of the date fields alone,
    /// one question per date, so an expression that never fires (the 31st
    /// of February) costs no search to the end of time; the gaps are
    /// measured over the eight days after the first run.
    pub fn check_runs(&self, now: Timestamp, min_interval_seconds: u64) -> Result<(), String> {
        let expression = &self.expression;
        let fields: Vec<&str> = expression.split_whitespace().collect();
        let dates = parse_cron(&format!("0 0 0 {} {} {}", fields[3], fields[4], fields[5]))
            .map_err(|e| format!("{expression:?} is not a valid cron expression: {e}"))?;
        let today = now
            .date_naive()
            .and_hms_opt(0, 0, 0)
            .expect("midnight exists")
            .and_utc();
        let runs_this_year = (0..=DAYS_AHEAD).any(|day| {
            dates
                .is_time_matching(&(today + Duration::days(day)))
                .unwrap_or(false)
        });
        if !runs_this_year {
            return Err(format!(
                "{expression:?} never runs in the next {DAYS_AHEAD} days"
            ));
        }
        let Some(first) = self.next_after(now) else {
            return Err(format!("{expression:?} has no next run"));
        };
        let min_gap = Duration::seconds(min_interval_seconds.min(i64::MAX as u64) as i64);
        let window_end = first + Duration::days(GAP_WINDOW_DAYS);
        let mut previous = first;
        while let Some(next) = self
            .cron
            .find_next_occurrence(&previous, false)
            .ok()
            .filter(|next| *next <= window_end)
        {
            let gap = next - previous;
            if gap < min_gap {
                return Err(format!(
                    "{expression:?} runs {} s apart (at {} and {}); a job may run at most \
                     once every {min_interval_seconds} s (jobs.min_interval_seconds)",
                    gap.num_seconds(),
                    super::time::format_rfc3339(&previous),
                    super::time::format_rfc3339(&next),
                ));
            }
            previous = next;
        }
        Ok(())
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
    fn a_schedule_must_run_within_a_year_and_not_too_often() {
        let now = parse_rfc3339("2026-01-01T10:15:00Z").unwrap();
        let refused = |expression: &str| {
            Schedule::parse_checked(expression, now, 60)
                .map(|s| s.expression().to_string())
                .unwrap_err()
        };
        let never = refused("0 0 0 31 2 MON");
        assert!(never.contains("never runs in the next 366 days"), "{never}");
        let leap_day = refused("0 0 0 29 2 *");
        assert!(leap_day.contains("never runs"), "{leap_day}");
        let every_second = refused("* * * * * *");
        assert!(every_second.contains("1 s apart"), "{every_second}");
        assert!(
            every_second.contains("jobs.min_interval_seconds"),
            "{every_second}"
        );
        // Close runs on one day a week only are found too.
        let mondays = Schedule::parse_checked("0,30 0 12 * * MON", now, 60)
            .map(|s| s.expression().to_string())
            .unwrap_err();
        assert!(mondays.contains("30 s apart"), "{mondays}");
        for fine in ["0 * * * * *", "0 0 * * * *", "0 0 */6 * * *", "0 0 3 1 1 *"] {
            assert!(Schedule::parse_checked(fine, now, 60).is_ok(), "{fine}");
        }
        let hourly = Schedule::parse_checked("0 0 * * * *", now, 7200)
            .map(|s| s.expression().to_string())
            .unwrap_err();
        assert!(hourly.contains("3600 s apart"), "{hourly}");
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
