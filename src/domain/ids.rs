//! The ids clients name things by, parsed once where a request enters:
//! a service function takes these, never a bare `String`, so an id that
//! reaches storage has been checked, and one kind of id cannot be passed
//! where another is meant.

use super::validate::Validated;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $check:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            /// `value`, sent as `field`, if it is a valid id; otherwise
            /// the error names `field`.
            pub fn parse(field: &str, value: String) -> Validated<Self> {
                let check: fn(&str, &str) -> Validated<()> = $check;
                check(field, &value)?;
                Ok($name(value))
            }

            /// An id as storage holds it (or as the service made it):
            /// checked when it was stored, so not checked again.
            pub fn stored(value: String) -> Self {
                $name(value)
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl std::ops::Deref for $name {
            type Target = str;

            fn deref(&self) -> &str {
                &self.0
            }
        }

        /// Hashed and compared as the text it is, so a map keyed by ids
        /// is looked up by `&str`.
        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

id_type!(
    /// A record's id: not blank, at most `MAX_ID_CHARS` characters, no
    /// control characters.
    RecordId,
    super::validate::check_id
);

id_type!(
    /// A topic's id, checked as a record's.
    TopicId,
    super::validate::check_id
);

id_type!(
    /// A conversation's id (within its scope).
    ConversationId,
    super::conversation::check_id
);

id_type!(
    /// An API key's name.
    KeyName,
    |_, value| super::access::check_key_name(value)
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_id_is_checked_by_its_own_rule_and_names_the_field() {
        assert_eq!(
            RecordId::parse("old_id", "r-1".into()).unwrap().as_str(),
            "r-1"
        );
        let e = RecordId::parse("old_id", " ".into()).unwrap_err();
        assert_eq!(e.field, "old_id");
        assert!(RecordId::parse("id", "a\u{7}".into()).is_err());
        assert!(TopicId::parse("id", " ".into()).is_err());
        assert!(ConversationId::parse("conversation_id", "c".repeat(10_000)).is_err());
        assert!(KeyName::parse("name", "has space".into()).is_err());
        assert_eq!(
            KeyName::parse("name", "planner".into())
                .unwrap()
                .to_string(),
            "planner"
        );
    }
}
