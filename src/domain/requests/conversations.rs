//! `POST /v1/conversations/{conversation_id}/turns`: a conversation read
//! back, session by session.

use crate::domain::ids::ConversationId;
use serde::Deserialize;

use crate::domain::access::Access;
use crate::domain::conversation::{check_id, check_speaker, TurnQuery, TurnSight, MAX_SPEAKERS};
use crate::domain::trust::{Caller, TrustContext};
use crate::domain::validate::{
    check_list_len, null_as_default, optional_string, optional_time, Validated, ValidationError,
};

/// Turns in one page when the request names no `page_size`.
pub const DEFAULT_TURN_PAGE: usize = 100;

#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"trust": {"max_sensitivity": "low", "scopes": ["team-a"]}, "speakers": ["Caroline"], "page_size": 50}))]
pub struct TurnsRequest {
    /// Required without a key; with one, the key's grant when absent.
    #[serde(default)]
    pub trust: Option<TrustContext>,
    /// The conversation of this scope only (a conversation is its id
    /// within a scope).
    #[serde(default)]
    #[schema(schema_with = crate::domain::schema::optional_text)]
    pub scope: Option<String>,
    #[serde(default)]
    #[schema(schema_with = crate::domain::schema::optional_conversation_id)]
    pub session_id: Option<String>,
    /// Turns by any of these speakers.
    #[serde(default, deserialize_with = "null_as_default")]
    #[schema(schema_with = crate::domain::schema::speakers)]
    pub speakers: Vec<String>,
    /// Turns said strictly after / before (RFC 3339).
    #[serde(default)]
    #[schema(schema_with = after)]
    pub after: Option<String>,
    #[serde(default)]
    #[schema(schema_with = before)]
    pub before: Option<String>,
    #[serde(default)]
    pub include_retracted: Option<bool>,
    /// Turns per page (1 to `retrieval.max_limit`; default 100); a page
    /// also ends before the server's response size.
    #[serde(default)]
    #[schema(schema_with = page_size)]
    pub page_size: Option<i64>,
    /// `next_cursor` of the previous page, with the same request.
    #[serde(default)]
    #[schema(schema_with = crate::domain::schema::cursor)]
    pub cursor: Option<String>,
}

fn after() -> utoipa::openapi::Object {
    crate::domain::schema::time(true, "Turns said strictly after (RFC 3339 with an offset).")
}

fn before() -> utoipa::openapi::Object {
    crate::domain::schema::time(
        true,
        "Turns said strictly before (RFC 3339 with an offset); later than `after`.",
    )
}

fn page_size() -> utoipa::openapi::Object {
    let mut size = crate::domain::schema::page_size();
    size.description = Some(format!(
        "Turns per page (1 to `retrieval.max_limit`, {} unless configured; default {DEFAULT_TURN_PAGE}); a page also ends before the server's response size.",
        crate::domain::schema::DOCUMENTED_MAX_LIMIT
    ));
    size
}

/// Checks a `speakers` filter.
pub fn check_speakers(speakers: &[String]) -> Validated<()> {
    check_list_len("speakers", speakers.len(), MAX_SPEAKERS, "speakers")?;
    for (i, speaker) in speakers.iter().enumerate() {
        check_speaker(&format!("speakers[{i}]"), speaker)?;
    }
    Ok(())
}

impl TurnsRequest {
    /// The caller and what it asks for (from the first turn: the cursor
    /// is the service's to open).
    pub fn into_query(
        self,
        access: &Access,
        conversation_id: String,
        max_page: usize,
        max_bytes: usize,
    ) -> Validated<(Caller, TurnQuery)> {
        let caller = access.reader(self.trust)?;
        let conversation_id = ConversationId::parse("conversation_id", conversation_id)?;
        let scope = optional_string("scope", self.scope)?;
        if let Some(session) = &self.session_id {
            check_id("session_id", session)?;
        }
        check_speakers(&self.speakers)?;
        let after = optional_time("after", self.after)?;
        let before = optional_time("before", self.before)?;
        if let (Some(after), Some(before)) = (after, before) {
            if after >= before {
                return Err(ValidationError::new(
                    "before",
                    "before must be later than after",
                ));
            }
        }
        let limit = match self.page_size {
            None => DEFAULT_TURN_PAGE.min(max_page),
            Some(n) if n >= 1 && n as u64 <= max_page as u64 => n as usize,
            Some(n) => {
                return Err(ValidationError::new(
                    "page_size",
                    format!("must be between 1 and {max_page}, got {n}"),
                ))
            }
        };
        let query = TurnQuery {
            conversation_id,
            sight: TurnSight {
                max_sensitivity: caller.trust.max_sensitivity,
                scopes: caller.trust.scope_filter(),
                include_retracted: self.include_retracted.unwrap_or(false),
            },
            scope: scope.map(Some),
            session_id: self.session_id,
            speakers: self.speakers,
            after,
            before,
            from: None,
            limit,
            max_bytes,
        };
        Ok((caller, query))
    }
}
