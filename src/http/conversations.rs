//! `POST /v1/conversations/{conversation_id}/turns`: a conversation read
//! back, session by session, within the caller's grant.

use actix_web::http::Method;
use actix_web::{web, HttpResponse};

use super::{AppState, Endpoint, JsonBody};
use crate::domain::access::{Access, Role};
use crate::domain::requests::TurnsRequest;
use crate::error::{ApiError, ErrorBody};
use crate::service::conversations::{ReadTurns, Session};
use crate::telemetry::MemoryOperation;

/// A page of a conversation, and the cursor of the next one.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct ConversationPage {
    pub sessions: Vec<Session>,
    pub next_cursor: Option<String>,
}

pub fn endpoints() -> Vec<Endpoint> {
    vec![Endpoint::new(
        Method::POST,
        "/v1/conversations/{conversation_id}/turns",
        Role::Read,
        turns,
    )
    .does(MemoryOperation::Search)]
}

#[utoipa::path(
    post,
    path = "/v1/conversations/{conversation_id}/turns",
    operation_id = "conversationTurns",
    tag = "conversations",
    summary = "A conversation's turns the caller may see, in order, by session",
    params(("conversation_id" = String, Path, description = "The conversation's id")),
    request_body = TurnsRequest,
    responses(
        (status = 200, description = "A page of turns, grouped by session; `next_cursor` continues it. A conversation the caller sees nothing of answers no sessions.", body = ConversationPage),
        (status = 400, description = "A field is invalid", body = ErrorBody)
    )
)]
async fn turns(
    state: web::Data<AppState>,
    access: Access,
    conversation_id: web::Path<String>,
    body: JsonBody<TurnsRequest>,
) -> Result<HttpResponse, ApiError> {
    let mut request = body.0;
    let token = request.cursor.take();
    let (caller, mut query) = request.into_query(
        &access,
        conversation_id.into_inner(),
        state.read_settings.max_limit,
        state.read_settings.ranking.max_response_bytes,
    )?;
    let bound = format!("turns|{caller:?}|{query:?}").into_bytes();
    if let Some(token) = token {
        query.from = Some(super::cursors::open(
            &state.sealer,
            &token,
            &bound,
            turn_place,
            "this caller and this request; send next_cursor as it came, with the request it came with",
        )?);
    }
    let job = ReadTurns {
        query,
        now: state.clock.now(),
    };
    let page = state.reader.read(job).await?;
    let next_cursor = page.next.map(|(at, key)| {
        let mut place = at.to_be_bytes().to_vec();
        place.extend_from_slice(&key.to_be_bytes());
        state.sealer.seal(&place, &bound)
    });
    Ok(HttpResponse::Ok().json(ConversationPage {
        sessions: page.sessions,
        next_cursor,
    }))
}

/// The turn a cursor continues after: its time and key.
fn turn_place(bytes: &[u8]) -> Option<(i64, i64)> {
    let at = i64::from_be_bytes(bytes.get(..8)?.try_into().ok()?);
    let key = i64::from_be_bytes(bytes.get(8..16)?.try_into().ok()?);
    (bytes.len() == 16).then_some((at, key))
}
