//! The checks of the request fields as JSON Schema, for the API document:
//! each function describes one kind of field the way the domain checks it
//! (`validate`, `vector`, `conversation`), from the same limits, so a
//! client validating against the document is refused for nothing the
//! document allows. What JSON Schema cannot say (a time not later than the
//! server's clock, a cursor the server issued) is in the descriptions.
//!
//! Patterns are written as character classes of code points, which
//! ECMA-262, Python's `re` and Rust's regex engines read alike; a class is
//! made from the same ranges the tests compare with `char::is_whitespace`
//! and `char::is_control`, the server's own tests.

use serde_json::json;
use utoipa::openapi::schema::{
    AllOfBuilder, ArrayBuilder, KnownFormat, ObjectBuilder, Schema, SchemaFormat, SchemaType, Type,
};
use utoipa::openapi::{Array, Object, RefOr};

use super::conversation::{MAX_ID_CHARS as MAX_CONVERSATION_ID_CHARS, MAX_SPEAKER_CHARS};
use super::validate::{
    MAX_COUNT, MAX_ID_CHARS, MAX_STRING_CHARS, MAX_TAGS, MAX_TAG_CHARS, RESERVED_ACTOR_PREFIX,
};
use super::vector::{MAX_DIMENSIONS, MIN_SIGNAL};

/// What `char::is_whitespace` (Unicode's White_Space) holds, and so what
/// `str::trim` strips.
const WHITESPACE: &[(u32, u32)] = &[
    (0x09, 0x0d),
    (0x20, 0x20),
    (0x85, 0x85),
    (0xa0, 0xa0),
    (0x1680, 0x1680),
    (0x2000, 0x200a),
    (0x2028, 0x2029),
    (0x202f, 0x202f),
    (0x205f, 0x205f),
    (0x3000, 0x3000),
];

/// What `char::is_control` holds (Unicode's Cc).
const CONTROL: &[(u32, u32)] = &[(0x00, 0x1f), (0x7f, 0x9f)];

/// What an invalid percent-escape in a path decodes to, refused in ids.
const REPLACEMENT: &[(u32, u32)] = &[(0xfffd, 0xfffd)];

/// The inside of a character class holding `sets`, as `\uXXXX` escapes.
fn class(sets: &[&[(u32, u32)]]) -> String {
    let mut text = String::new();
    for (first, last) in sets.iter().flat_map(|set| set.iter()) {
        text.push_str(&format!("\\u{first:04x}"));
        if last != first {
            text.push_str(&format!("-\\u{last:04x}"));
        }
    }
    text
}

/// What a string may not be, each a pattern of what one check refuses.
/// A schema states them as `not` a string matching any, rather than one
/// pattern of what is allowed: that pattern would need a repetition the
/// length of the longest string, which regex engines unroll.
#[derive(Clone, Copy, PartialEq)]
pub enum Refused {
    /// Empty or only what `str::trim` strips.
    Blank,
    /// Holding a control character (`check_name`).
    Control,
    /// Holding a control character or U+FFFD (`check_id`).
    ControlOrReplacement,
    /// Starting with the prefix of the service's own actors.
    Reserved,
    /// One of these.
    Names(&'static [&'static str]),
}

impl Refused {
    fn pattern(self) -> String {
        match self {
            Refused::Blank => format!("^[{}]*$", class(&[WHITESPACE])),
            Refused::Control => format!("[{}]", class(&[CONTROL])),
            Refused::ControlOrReplacement => format!("[{}]", class(&[CONTROL, REPLACEMENT])),
            Refused::Reserved => format!("^{RESERVED_ACTOR_PREFIX}"),
            Refused::Names(names) => format!("^({})$", names.join("|")),
        }
    }

    fn schema(self) -> serde_json::Value {
        match self {
            Refused::Names(names) => json!({"type": "string", "enum": names}),
            _ => json!({"type": "string", "pattern": self.pattern()}),
        }
    }
}

/// `schema`, refusing every string that `refused` names.
pub fn refusing(mut schema: Object, refused: &[Refused]) -> Object {
    let patterns: Vec<serde_json::Value> = refused.iter().map(|r| r.schema()).collect();
    let not = match patterns.as_slice() {
        [] => return schema,
        [one] => one.clone(),
        _ => json!({"anyOf": patterns}),
    };
    schema
        .extensions
        .get_or_insert_with(Default::default)
        .insert("not".into(), not);
    schema
}

fn string(nullable: bool) -> ObjectBuilder {
    let types = if nullable {
        SchemaType::from_iter([Type::String, Type::Null])
    } else {
        SchemaType::Type(Type::String)
    };
    ObjectBuilder::new().schema_type(types)
}

/// A string of at most `most` characters (`null` too when `nullable`),
/// refusing `refused`.
pub fn bounded(most: usize, nullable: bool, refused: &[Refused]) -> Object {
    refusing(string(nullable).max_length(Some(most)).build(), refused)
}

/// A required text field: not blank, at most [`MAX_STRING_CHARS`].
pub fn text() -> Object {
    bounded(MAX_STRING_CHARS, false, &[Refused::Blank])
}

/// Text within [`MAX_STRING_CHARS`], blank or not.
pub fn any_text() -> Object {
    bounded(MAX_STRING_CHARS, false, &[])
}

/// Optional text within [`MAX_STRING_CHARS`]; `null` or empty: not given.
pub fn optional_text() -> Object {
    bounded(MAX_STRING_CHARS, true, &[])
}

/// A name callers and records are matched on (`check_name`): no control
/// characters, at most [`MAX_STRING_CHARS`]; required ones not blank.
pub fn name() -> Object {
    bounded(MAX_STRING_CHARS, false, &[Refused::Blank, Refused::Control])
}

/// An optional name: `null`, or no control characters (empty: not given).
pub fn optional_name() -> Object {
    bounded(MAX_STRING_CHARS, true, &[Refused::Control])
}

/// A name in a list, empty or not: no control characters.
pub fn optional_name_item() -> Object {
    bounded(MAX_STRING_CHARS, false, &[Refused::Control])
}

/// An optional name that, when given, is not blank.
pub fn optional_filled_name() -> Object {
    bounded(MAX_STRING_CHARS, true, &[Refused::Blank, Refused::Control])
}

const ACTOR: &str =
    "Not blank, no control characters, not starting with `engram:` (the service's own actors).";

/// A client's actor or source (`check_actor`): a name, not blank, not
/// starting with `engram:`, the service's own.
pub fn actor() -> Object {
    let mut schema = bounded(
        MAX_STRING_CHARS,
        false,
        &[Refused::Blank, Refused::Control, Refused::Reserved],
    );
    schema.description = Some(ACTOR.into());
    schema
}

/// An optional actor: `null`, or no control characters and not the
/// service's (empty: not given).
pub fn optional_actor() -> Object {
    bounded(
        MAX_STRING_CHARS,
        true,
        &[Refused::Control, Refused::Reserved],
    )
}

/// A record id a client names (`check_id`): not blank, at most
/// [`MAX_ID_CHARS`], no control characters nor U+FFFD.
pub fn id() -> Object {
    bounded(
        MAX_ID_CHARS,
        false,
        &[Refused::Blank, Refused::ControlOrReplacement],
    )
}

/// Record ids: `most` at most, at least one, each an [`id`].
pub fn ids(most: usize, unique: bool) -> Array {
    ArrayBuilder::new()
        .items(id())
        .min_items(Some(1))
        .max_items(Some(most))
        .unique_items(unique)
        .build()
}

/// An id of a conversation, session or turn (`conversation::check_id`).
pub fn conversation_id() -> Object {
    bounded_name(MAX_CONVERSATION_ID_CHARS, false)
}

/// An optional [`conversation_id`].
pub fn optional_conversation_id() -> Object {
    bounded_name(MAX_CONVERSATION_ID_CHARS, true)
}

/// A speaker's name (`conversation::check_speaker`).
pub fn speaker() -> Object {
    bounded_name(MAX_SPEAKER_CHARS, false)
}

/// A name of at most `most` characters, not blank.
pub fn bounded_name(most: usize, nullable: bool) -> Object {
    bounded(most, nullable, &[Refused::Blank, Refused::Control])
}

/// Tags (`normalize_tags`): at most [`MAX_TAGS`], each not blank and at
/// most [`MAX_TAG_CHARS`]; a record's also free of control characters
/// (`check_name`). `null`: none.
pub fn tags() -> Array {
    let tag = bounded(MAX_TAG_CHARS, false, &[Refused::Blank, Refused::Control]);
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(tag)
        .max_items(Some(MAX_TAGS))
        .description(Some(
            "Duplicates are dropped, the first kept; `null`: none.".to_string(),
        ))
        .build()
}

/// Strings each within [`MAX_STRING_CHARS`]; `null`: none.
pub fn strings() -> Array {
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(any_text())
        .build()
}

/// `null`, or one of `values`.
pub fn optional_enum(values: &[&str], description: &str) -> Object {
    string(true)
        .enum_values(Some(
            values
                .iter()
                .map(|value| json!(value))
                .chain([serde_json::Value::Null]),
        ))
        .description(Some(description))
        .build()
}

/// `null`, an empty string, or `schema`: the empty ones mean "not given".
pub fn empty_or(schema: Object) -> RefOr<Schema> {
    utoipa::openapi::schema::AnyOfBuilder::new()
        .item(ObjectBuilder::new().schema_type(Type::Null))
        .item(string(false).max_length(Some(0)))
        .item(schema)
        .description(Some("Empty or `null`: none."))
        .into()
}

/// `null`, a blank string, or `schema`: the blank ones mean "not given".
pub fn blank_or(schema: Object) -> RefOr<Schema> {
    utoipa::openapi::schema::AnyOfBuilder::new()
        .item(ObjectBuilder::new().schema_type(Type::Null))
        .item(string(false).pattern(Some(Refused::Blank.pattern())))
        .item(schema)
        .description(Some("Blank or `null`: none."))
        .into()
}

/// The most records one retrieval may ask for as the document states it:
/// the default of `retrieval.max_limit` (a test holds them equal).
pub const DOCUMENTED_MAX_LIMIT: usize = 1000;

/// The highest salience as the document states it: the default of
/// `policy.max_salience` (a test holds them equal).
pub const DOCUMENTED_MAX_SALIENCE: f64 = 1.0;

/// `next_cursor` of an earlier answer.
pub fn cursor() -> Object {
    string(true)
        .description(Some(
            "`next_cursor` of an earlier answer to the same caller and the same request, as it came: \
             it is sealed by the server, which refuses any other value (`invalid_argument`).",
        ))
        .build()
}

/// Records or turns per page: 1 to `retrieval.max_limit`.
pub fn page_size() -> Object {
    let mut size = integer(true, 1, DOCUMENTED_MAX_LIMIT as i64);
    size.description = Some(format!(
        "1 to `retrieval.max_limit` ({DOCUMENTED_MAX_LIMIT} unless configured); a page also ends before the server's response size."
    ));
    size
}

/// A speakers filter: at most [`MAX_SPEAKERS`] names.
pub fn speakers() -> Array {
    list(speaker(), 0, super::conversation::MAX_SPEAKERS, true)
}

/// A list of `item`: `least` to `most` of them (`usize::MAX`: no most); `null` too when
/// `nullable` (none).
pub fn list(item: impl Into<RefOr<Schema>>, least: usize, most: usize, nullable: bool) -> Array {
    let types = if nullable {
        SchemaType::from_iter([Type::Array, Type::Null])
    } else {
        SchemaType::Type(Type::Array)
    };
    ArrayBuilder::new()
        .schema_type(types)
        .items(item.into())
        .min_items((least > 0).then_some(least))
        .max_items((most < usize::MAX).then_some(most))
        .build()
}

/// [`past_time`], `null` too.
pub fn optional_past_time() -> Object {
    past_time(true)
}

/// [`past_time`] of an ingest's `timestamp`, where empty means absent.
pub fn past_time_or_empty() -> RefOr<Schema> {
    utoipa::openapi::schema::AnyOfBuilder::new()
        .item(past_time(false))
        .item(string(false).max_length(Some(0)))
        .item(ObjectBuilder::new().schema_type(Type::Null))
        .description(Some(
            "RFC 3339 with an offset; not later than the server's clock plus 60 s. Absent, `null` or empty: now.",
        ))
        .into()
}

/// A turn's time: as [`past_time`], and in the order the turns happened
/// (`conversation::place`).
pub fn turn_at() -> Object {
    time(
        true,
        "RFC 3339 with an offset; not later than the server's clock plus 60 s, not earlier than the turn before it (400), and the first not earlier than the last turn of its session (409 failed_precondition). Absent: now.",
    )
}

/// Text measured in bytes of UTF-8 (`conversation::check_text`): at most
/// `bytes` of them, so at most as many characters; not blank when
/// `required`.
pub fn utf8_text(bytes: usize, required: bool, nullable: bool) -> Object {
    let refused: &[Refused] = if required { &[Refused::Blank] } else { &[] };
    let mut schema = bounded(bytes, nullable, refused);
    schema.description = Some(format!("At most {bytes} bytes of UTF-8."));
    schema
}

/// A turn's text.
pub fn turn_text() -> Object {
    utf8_text(super::conversation::MAX_TEXT_BYTES, true, false)
}

/// The largest magnitude of a vector's number: a finite 32-bit float.
const MAX_VECTOR_VALUE: f64 = f32::MAX as f64;

/// A vector (`Embedding::new`): 1 to [`MAX_DIMENSIONS`] numbers, each a
/// finite 32-bit float, one at least [`MIN_SIGNAL`] in magnitude.
/// `null`: none.
pub fn embedding() -> Array {
    let value = ObjectBuilder::new()
        .schema_type(Type::Number)
        .minimum(Some(-MAX_VECTOR_VALUE))
        .maximum(Some(MAX_VECTOR_VALUE))
        .build();
    let mut array = ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(value)
        .min_items(Some(1))
        .max_items(Some(MAX_DIMENSIONS))
        .description(Some(format!(
            "1 to {MAX_DIMENSIONS} numbers, each within the 32-bit float range, not all (nearly) zero; \
             every vector of a database has the dimensions of its first. `null`: none."
        )))
        .build();
    array
        .extensions
        .get_or_insert_with(Default::default)
        .insert(
            "contains".into(),
            json!({"type": "number", "anyOf": [
                {"minimum": MIN_SIGNAL}, {"maximum": -MIN_SIGNAL}
            ]}),
        );
    array
}

/// An RFC 3339 time of something that has happened: not later than the
/// server's clock (plus the skew allowed); `null`: now.
pub fn past_time(nullable: bool) -> Object {
    time(
        nullable,
        "RFC 3339 with an offset; not later than the server's clock plus 60 s. Absent: now.",
    )
}

/// An RFC 3339 time.
pub fn time(nullable: bool, description: &str) -> Object {
    string(nullable)
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
        .description(Some(description))
        .build()
}

/// A count (`check_count`): 0 to [`MAX_COUNT`].
pub fn count(nullable: bool) -> Object {
    integer(nullable, 0, MAX_COUNT as i64)
}

/// An integer within `least..=most`.
pub fn integer(nullable: bool, least: i64, most: i64) -> Object {
    let types = if nullable {
        SchemaType::from_iter([Type::Integer, Type::Null])
    } else {
        SchemaType::Type(Type::Integer)
    };
    ObjectBuilder::new()
        .schema_type(types)
        .minimum(Some(least))
        .maximum(Some(most))
        .build()
}

/// A number within [0, 1] (`check_unit_interval`).
pub fn unit_interval(nullable: bool) -> Object {
    number(nullable).minimum(Some(0)).maximum(Some(1)).build()
}

/// A number >= 0 (`check_non_negative`).
pub fn non_negative(nullable: bool) -> Object {
    number(nullable).minimum(Some(0)).build()
}

fn number(nullable: bool) -> ObjectBuilder {
    let types = if nullable {
        SchemaType::from_iter([Type::Number, Type::Null])
    } else {
        SchemaType::Type(Type::Number)
    };
    ObjectBuilder::new().schema_type(types)
}

/// `schema` or `null`.
pub fn nullable(schema: impl Into<RefOr<Schema>>) -> RefOr<Schema> {
    utoipa::openapi::schema::OneOfBuilder::new()
        .item(ObjectBuilder::new().schema_type(Type::Null))
        .item(schema)
        .into()
}

/// `schema` with the constraints of `also`.
pub fn both(schema: impl Into<RefOr<Schema>>, also: impl Into<RefOr<Schema>>) -> RefOr<Schema> {
    AllOfBuilder::new().item(schema).item(also).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn within(ranges: &[(u32, u32)], c: char) -> bool {
        ranges
            .iter()
            .any(|(first, last)| (*first..=*last).contains(&(c as u32)))
    }

    #[test]
    fn the_classes_are_the_servers_own() {
        for c in (0..=0x10ffff).filter_map(char::from_u32) {
            assert_eq!(within(WHITESPACE, c), c.is_whitespace(), "{:?}", c);
            assert_eq!(within(CONTROL, c), c.is_control(), "{:?}", c);
        }
    }

    #[test]
    fn patterns_read_as_classes_of_escapes() {
        assert_eq!(
            Refused::Control.pattern(),
            "[\\u0000-\\u001f\\u007f-\\u009f]"
        );
        assert!(Refused::Blank
            .pattern()
            .starts_with("^[\\u0009-\\u000d\\u0020"));
    }
}
