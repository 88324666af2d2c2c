//! `POST /v1/conversations/{conversation_id}/turns`: a conversation read
//! back, session by session, within the caller's grant.

use actix_web::http::Method;
use actix_web::{web, HttpResponse};

use super::{AppState, Endpoint, JsonBody};
use crate::actors::request::InRequest;
use crate::actors::retrieval::{ConversationPage, ReadConversation};
use crate::domain::access::{Access, Role};
use crate::domain::requests::TurnsRequest;
use crate::error::{ApiError, ErrorBody};

pub fn endpoints() -> Vec<Endpoint> {
    vec![Endpoint::new(
        Method::POST,
        "/v1/conversations/{conversation_id}/turns",
        Role::Read,
        turns,
    )]
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
    let page = state
        .retriever
        .send(InRequest::new(ReadConversation {
            access,
            conversation_id: conversation_id.into_inner(),
            request: body.0,
        }))
        .await??;
    Ok(HttpResponse::Ok().json(page))
}
