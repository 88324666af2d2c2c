//! Conversations: each turn an episodic record that knows its place (the
//! conversation, the session, its index, who spoke and when), and the
//! rules that place new turns after the ones a writer can see.

use super::ids::ConversationId;
use serde::{Deserialize, Serialize};

use super::record::Sensitivity;
use super::time::{rfc3339, Timestamp};
use super::validate::{check_name, Validated, ValidationError};

/// Most turns one request may send.
pub const MAX_TURNS: usize = 1000;
/// Longest conversation, session id and turn `ref`, in characters.
pub const MAX_ID_CHARS: usize = 256;
/// Longest speaker name, in characters.
pub const MAX_SPEAKER_CHARS: usize = 128;
/// Longest turn text, in bytes of UTF-8.
pub const MAX_TEXT_BYTES: usize = 64 * 1024;
/// Most attachments on one turn.
pub const MAX_ATTACHMENTS: usize = 32;
/// Longest attachment caption, in bytes of UTF-8.
pub const MAX_CAPTION_BYTES: usize = 4096;
/// Most neighbouring turns a retrieval returns on each side of a turn.
pub const MAX_CONTEXT_TURNS: usize = 10;
/// Most speakers one filter may list.
pub const MAX_SPEAKERS: usize = 100;

/// One turn of a conversation, as its record's payload holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    #[schema(schema_with = conversation_id_schema)]
    pub conversation_id: String,
    #[schema(schema_with = conversation_id_schema)]
    pub session_id: String,
    /// Its place in the conversation, from 0, among the turns its writer
    /// could see.
    pub index: u64,
    #[schema(schema_with = speaker_schema)]
    pub speaker: String,
    #[schema(schema_with = text_schema)]
    pub text: String,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub at: Timestamp,
    /// The client's own id of the turn.
    #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = ref_schema)]
    pub reference: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(schema_with = attachments_schema)]
    pub attachments: Vec<Attachment>,
}

/// Something shown with a turn (an image, a file): its caption is
/// searched with the turn's text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Attachment {
    #[schema(schema_with = caption_schema)]
    pub caption: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = url_schema)]
    pub url: Option<String>,
}

fn conversation_id_schema() -> utoipa::openapi::Object {
    super::schema::conversation_id()
}

fn speaker_schema() -> utoipa::openapi::Object {
    super::schema::speaker()
}

fn text_schema() -> utoipa::openapi::Object {
    super::schema::turn_text()
}

fn ref_schema() -> utoipa::openapi::Object {
    super::schema::optional_conversation_id()
}

fn attachments_schema() -> utoipa::openapi::Array {
    super::schema::list(
        utoipa::openapi::Ref::from_schema_name("Attachment"),
        0,
        MAX_ATTACHMENTS,
        false,
    )
}

fn caption_schema() -> utoipa::openapi::Object {
    super::schema::utf8_text(MAX_CAPTION_BYTES, true, false)
}

fn url_schema() -> utoipa::openapi::Object {
    super::schema::utf8_text(MAX_CAPTION_BYTES, false, true)
}

/// An id (conversation, session, `ref`): not blank, at most
/// [`MAX_ID_CHARS`], no control characters.
pub fn check_id(field: &str, value: &str) -> Validated<()> {
    check_bounded(field, value, MAX_ID_CHARS)
}

/// A speaker's name.
pub fn check_speaker(field: &str, value: &str) -> Validated<()> {
    check_bounded(field, value, MAX_SPEAKER_CHARS)
}

fn check_bounded(field: &str, value: &str, most: usize) -> Validated<()> {
    if value.trim().is_empty() {
        return Err(ValidationError::new(field, "must not be empty"));
    }
    if value.chars().count() > most {
        return Err(ValidationError::new(
            field,
            format!("must be at most {most} characters"),
        ));
    }
    check_name(field, value)
}

fn check_text(field: &str, value: &str, most: usize, required: bool) -> Validated<()> {
    if required && value.trim().is_empty() {
        return Err(ValidationError::new(field, "must not be empty"));
    }
    if value.len() > most {
        return Err(ValidationError::new(
            field,
            format!("must be at most {most} bytes"),
        ));
    }
    Ok(())
}

impl Turn {
    /// The rules a turn keeps wherever it comes from (a conversation
    /// ingest, a record written whole, a new version); `field` is where
    /// it stands in the request.
    pub fn validate(&self, field: &str) -> Validated<()> {
        check_id(&format!("{field}.conversation_id"), &self.conversation_id)?;
        check_id(&format!("{field}.session_id"), &self.session_id)?;
        check_speaker(&format!("{field}.speaker"), &self.speaker)?;
        check_text(&format!("{field}.text"), &self.text, MAX_TEXT_BYTES, true)?;
        if let Some(reference) = &self.reference {
            check_id(&format!("{field}.ref"), reference)?;
        }
        check_attachments(&format!("{field}.attachments"), &self.attachments)
    }

    /// What is searched: who spoke, what was said, what was shown.
    pub fn search_text(&self) -> String {
        let mut text = format!("{}: {}", self.speaker, self.text);
        for attachment in &self.attachments {
            text.push(' ');
            text.push_str(&attachment.caption);
        }
        text
    }

    /// Whether the turn says when something happened (a date, a month, a
    /// weekday, "yesterday", "two weeks ago"): such turns answer "when"
    /// questions.
    pub fn timed(&self) -> bool {
        mentions_time(&self.text)
    }
}

pub fn check_attachments(field: &str, attachments: &[Attachment]) -> Validated<()> {
    if attachments.len() > MAX_ATTACHMENTS {
        return Err(ValidationError::new(
            field,
            format!(
                "too many attachments: {} given, maximum is {MAX_ATTACHMENTS}",
                attachments.len()
            ),
        ));
    }
    for (i, attachment) in attachments.iter().enumerate() {
        check_text(
            &format!("{field}[{i}].caption"),
            &attachment.caption,
            MAX_CAPTION_BYTES,
            true,
        )?;
        if let Some(url) = &attachment.url {
            check_text(&format!("{field}[{i}].url"), url, MAX_CAPTION_BYTES, false)?;
        }
    }
    Ok(())
}

/// Words that place something in time, lowercased.
const TIME_WORDS: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "yesterday",
    "today",
    "tomorrow",
    "tonight",
    "ago",
    "weekend",
    "week",
    "weeks",
    "month",
    "months",
    "year",
    "years",
    "recently",
    "lately",
    "earlier",
    "summer",
    "winter",
    "spring",
    "autumn",
    "christmas",
    "easter",
    "birthday",
    "anniversary",
    "morning",
    "evening",
    "night",
    "noon",
];

/// Whether `text` holds a time expression: a time word, a year, a date
/// written with digits (`5/8`, `2023-05-08`), an ordinal day (`8th`), a
/// clock time (`7pm`, `13:30`).
pub fn mentions_time(text: &str) -> bool {
    text.split(|c: char| !(c.is_alphanumeric() || c == '/' || c == ':' || c == '-'))
        .filter(|w| !w.is_empty())
        .any(|word| {
            // "may" is a month only as a name.
            if word == "May" {
                return true;
            }
            let lower = word.to_lowercase();
            let lower = lower.trim_matches(|c: char| c == '-' || c == ':' || c == '/');
            TIME_WORDS.contains(&lower) || numeric_time(lower)
        })
}

fn numeric_time(word: &str) -> bool {
    let digits = word.chars().filter(char::is_ascii_digit).count();
    if digits == 0 {
        return false;
    }
    // A year.
    if digits == word.len() && word.len() == 4 {
        return matches!(word.as_bytes()[0], b'1' | b'2');
    }
    // A date or a clock time: digits joined by a separator.
    let joined = word
        .split(['/', '-', ':'])
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>();
    if joined.len() >= 2 && joined.iter().all(|p| p.chars().all(|c| c.is_ascii_digit())) {
        return true;
    }
    // An ordinal day or a clock time with its half of the day.
    let (number, suffix) = word.split_at(word.find(|c: char| !c.is_ascii_digit()).unwrap_or(0));
    !number.is_empty() && matches!(suffix, "st" | "nd" | "rd" | "th" | "am" | "pm")
}

/// Where a conversation stands for one writer: the latest turn it can see
/// (`None`: it sees none).
#[derive(Debug, Clone, PartialEq)]
pub struct Latest {
    pub session_id: String,
    pub at: Timestamp,
    /// The highest index among the turns it can see.
    pub index: u64,
}

/// Where new turns go: their session, whether it is new, and the index of
/// the first.
#[derive(Debug, Clone, PartialEq)]
pub struct Placement {
    pub session_id: String,
    pub new_session: bool,
    pub first_index: u64,
}

/// Places turns sent at `times` (in the order sent) in a conversation
/// whose latest visible turn is `latest`: in `session` when the request
/// names one (whose last visible turn is at `session_last`), else in the
/// latest session when its last turn is at most `gap` before the first
/// new one, else in a new session named by `new_session`. A turn earlier
/// than the one before it, or than its session's last turn, is refused,
/// naming `turns[i].at`.
pub fn place(
    latest: Option<&Latest>,
    session: Option<&str>,
    session_last: Option<Timestamp>,
    times: &[Timestamp],
    gap: chrono::Duration,
    new_session: impl FnOnce(Timestamp) -> String,
) -> Validated<Placement> {
    let Some(&first) = times.first() else {
        return Err(ValidationError::new(
            "turns",
            "at least one turn is required",
        ));
    };
    let first_index = latest.map_or(0, |l| l.index + 1);
    let (session_id, new_session, last) = match (session, latest) {
        (Some(session), _) => (session.to_string(), session_last.is_none(), session_last),
        (None, Some(latest)) if first < latest.at || first - latest.at <= gap => {
            (latest.session_id.clone(), false, Some(latest.at))
        }
        (None, _) => (new_session(first), true, None),
    };
    let mut previous = last;
    for (i, &at) in times.iter().enumerate() {
        if previous.is_some_and(|p| at < p) {
            let what = if i == 0 {
                "earlier than the last turn of its session"
            } else {
                "earlier than the turn before it"
            };
            return Err(ValidationError::new(
                format!("turns[{i}].at"),
                format!("{what}: turns are kept in the order they happened"),
            ));
        }
        previous = Some(at);
    }
    Ok(Placement {
        session_id,
        new_session,
        first_index,
    })
}

/// The name of a session opened by its first turn at `at`.
pub fn session_named(at: Timestamp) -> String {
    format!("s-{}", at.format("%Y%m%dT%H%M%SZ"))
}

/// What a caller may see of a conversation's turns.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnSight {
    pub max_sensitivity: Sensitivity,
    /// `None`: every scope; otherwise unscoped records and these.
    pub scopes: Option<Vec<String>>,
    pub include_retracted: bool,
}

/// Which turns of a conversation to read, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnQuery {
    pub conversation_id: ConversationId,
    pub sight: TurnSight,
    /// Only this conversation's turns in this scope (`Some(None)`:
    /// unscoped ones).
    pub scope: Option<Option<String>>,
    pub session_id: Option<String>,
    pub speakers: Vec<String>,
    /// Said strictly after / before.
    pub after: Option<Timestamp>,
    pub before: Option<Timestamp>,
    /// Continue after this turn: its time and key.
    pub from: Option<(i64, i64)>,
    pub limit: usize,
    /// Stop adding turns once the page would be about this large.
    pub max_bytes: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Duration, TimeZone, Utc};

    fn at(minute: i64) -> Timestamp {
        Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).unwrap() + Duration::minutes(minute)
    }

    fn latest(session: &str, minute: i64, index: u64) -> Latest {
        Latest {
            session_id: session.to_string(),
            at: at(minute),
            index,
        }
    }

    fn placed(latest: Option<&Latest>, times: &[i64]) -> Validated<Placement> {
        let times: Vec<Timestamp> = times.iter().map(|&m| at(m)).collect();
        place(
            latest,
            None,
            None,
            &times,
            Duration::minutes(30),
            session_named,
        )
    }

    #[test]
    fn a_first_turn_opens_a_session_named_by_its_time() {
        let p = placed(None, &[0, 1]).unwrap();
        assert_eq!(p.session_id, "s-20260101T120000Z");
        assert!(p.new_session);
        assert_eq!(p.first_index, 0);
    }

    #[test]
    fn turns_within_the_gap_continue_the_latest_session() {
        let l = latest("morning", 10, 7);
        let p = placed(Some(&l), &[40]).unwrap();
        assert_eq!(
            (p.session_id.as_str(), p.new_session, p.first_index),
            ("morning", false, 8)
        );
        let p = placed(Some(&l), &[41]).unwrap();
        assert!(p.new_session);
        assert_eq!(p.session_id, "s-20260101T124100Z");
        assert_eq!(p.first_index, 8);
    }

    #[test]
    fn a_turn_before_its_session_s_last_is_refused_by_index() {
        let l = latest("morning", 10, 7);
        let e = placed(Some(&l), &[9]).unwrap_err();
        assert_eq!(e.field, "turns[0].at");
        let e = placed(None, &[5, 6, 4]).unwrap_err();
        assert_eq!(e.field, "turns[2].at");
        // A named session is checked against its own last turn.
        let times = [at(3)];
        let e = place(
            Some(&l),
            Some("evening"),
            Some(at(4)),
            &times,
            Duration::minutes(30),
            session_named,
        )
        .unwrap_err();
        assert_eq!(e.field, "turns[0].at");
        let p = place(
            Some(&l),
            Some("evening"),
            None,
            &times,
            Duration::minutes(30),
            session_named,
        )
        .unwrap();
        assert_eq!((p.session_id.as_str(), p.new_session), ("evening", true));
    }

    #[test]
    fn time_expressions_are_found() {
        for timed in [
            "We ran it last Sunday.",
            "back in May",
            "two weeks ago",
            "on 2023-05-08",
            "on 5/8",
            "the 8th was fun",
            "at 7pm",
            "at 13:30",
            "since 1998",
            "yesterday!",
        ] {
            assert!(mentions_time(timed), "{timed}");
        }
        for plain in [
            "How did it go?",
            "I bought 3 apples",
            "room 12b",
            "a-b testing",
            "call 555",
        ] {
            assert!(!mentions_time(plain), "{plain}");
        }
    }

    #[test]
    fn a_turn_is_checked_field_by_field() {
        let turn = Turn {
            conversation_id: "c".into(),
            session_id: "s".into(),
            index: 0,
            speaker: "Ann".into(),
            text: "hi".into(),
            at: at(0),
            reference: None,
            attachments: vec![Attachment {
                caption: " ".into(),
                url: None,
            }],
        };
        let e = turn.validate("turns[3]").unwrap_err();
        assert_eq!(e.field, "turns[3].attachments[0].caption");
        let long = Turn {
            speaker: "x".repeat(MAX_SPEAKER_CHARS + 1),
            attachments: vec![],
            ..turn.clone()
        };
        assert_eq!(long.validate("turn").unwrap_err().field, "turn.speaker");
        assert_eq!(
            Turn {
                attachments: vec![Attachment {
                    caption: "a photo of a lake".into(),
                    url: None
                }],
                ..turn
            }
            .search_text(),
            "Ann: hi a photo of a lake"
        );
    }
}
