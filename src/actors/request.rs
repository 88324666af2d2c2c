//! A message sent on behalf of an HTTP request ([`InRequest`]): the request
//! actors handle it inside the request's span, and run the work it answers
//! with the request's trace (its storage jobs count their time to it) and
//! waiter (its reads stop when the client is gone) in scope.

use std::future::Future;
use std::time::Instant;

use actix::{Message, ResponseFuture};

use crate::store::budget;
pub use crate::store::budget::{Waiter, Waiting};
use crate::telemetry::Handoff;

/// Runs `request` with `waiter` telling its reads whether its client still
/// waits (set by the HTTP layer for each request).
pub async fn watched<F: Future>(waiter: Waiter, request: F) -> F::Output {
    budget::WAITER.scope(waiter, request).await
}

/// Whether the client of the request this task works for has closed its
/// connection (false where nothing watches it).
pub fn client_gone() -> bool {
    budget::waiter().is_some_and(|waiter| waiter.gone())
}

pub struct InRequest<M> {
    message: M,
    waiter: Option<Waiter>,
    handoff: Handoff,
}

impl<M> InRequest<M> {
    /// `message`, for the request this task works for.
    pub fn new(message: M) -> Self {
        InRequest {
            message,
            waiter: budget::waiter(),
            handoff: Handoff::now(),
        }
    }

    /// Handles the message with `handle` inside the span of `actor` within
    /// the request's (the time it waited in the actor's mailbox counted as
    /// queued), and runs the future it answers with the request's waiter
    /// and trace in scope.
    pub fn handle_with<T: 'static>(
        self,
        (actor, name): (&'static str, &'static str),
        handle: impl FnOnce(M) -> ResponseFuture<T>,
    ) -> ResponseFuture<T> {
        let InRequest {
            message,
            waiter,
            mut handoff,
        } = self;
        handoff.started(actor, name, Instant::now());
        let work = handoff.span().in_scope(|| handle(message));
        let work = match waiter {
            Some(waiter) => Box::pin(watched(waiter, work)),
            None => work,
        };
        Box::pin(handoff.into_trace().scope(work))
    }
}

impl<M: Message> Message for InRequest<M> {
    type Result = M::Result;
}

/// Lets `$actor` take these of its messages [`InRequest`].
macro_rules! handles_in_request {
    ($actor:ty => $($message:ty),+) => {
        $(
            impl actix::Handler<$crate::actors::request::InRequest<$message>> for $actor {
                type Result = <$actor as actix::Handler<$message>>::Result;

                fn handle(
                    &mut self,
                    msg: $crate::actors::request::InRequest<$message>,
                    ctx: &mut Self::Context,
                ) -> Self::Result {
                    msg.handle_with((stringify!($actor), stringify!($message)), |message| {
                        <$actor as actix::Handler<$message>>::handle(self, message, ctx)
                    })
                }
            }
        )+
    };
}
pub(crate) use handles_in_request;
