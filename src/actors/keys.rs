//! The keys actor: makes, lists and revokes API keys for the admin routes,
//! each as one service call (`service::keys`) on the writer or the
//! readers. It holds the pepper new secrets are hashed with.

use std::sync::Arc;

use actix::{Actor, Context, Handler, Message, ResponseFuture};

use super::request::handles_in_request;
use super::storage::{Reader, StorageWriter};
use crate::auth::secret::Pepper;
use crate::clock::Clock;
use crate::domain::access::{Access, ApiKey};
pub use crate::service::keys::NewKey;
use crate::service::keys::{ListKeysFor, MakeKey, RevokeNamed};
use crate::service::ServiceError;

pub struct KeyKeeper {
    writer: StorageWriter,
    reader: Reader,
    clock: Clock,
    pepper: Arc<Pepper>,
}

impl KeyKeeper {
    pub fn new(writer: StorageWriter, reader: Reader, clock: Clock, pepper: Arc<Pepper>) -> Self {
        KeyKeeper {
            writer,
            reader,
            clock,
            pepper,
        }
    }
}

impl Actor for KeyKeeper {
    type Context = Context<Self>;
}

/// A new key within `by`'s grant; answers it and its secret.
#[derive(Message)]
#[rtype(result = "Result<(ApiKey, String), ServiceError>")]
pub struct CreateKey {
    pub by: Access,
    pub new: NewKey,
    /// `auth.default_rate`: what `by` is held to without a rate of its own.
    pub default_rate: f64,
}

impl Handler<CreateKey> for KeyKeeper {
    type Result = ResponseFuture<Result<(ApiKey, String), ServiceError>>;

    fn handle(&mut self, msg: CreateKey, _: &mut Self::Context) -> Self::Result {
        let now = self.clock.now();
        let writer = self.writer.clone();
        let CreateKey {
            by,
            new,
            default_rate,
        } = msg;
        let job = MakeKey {
            by,
            pepper: self.pepper.clone(),
            new,
            default_rate,
            now,
        };
        Box::pin(async move { writer.write(job).await })
    }
}

/// Every key within `by`'s grant, revoked ones too.
#[derive(Message)]
#[rtype(result = "Result<Vec<ApiKey>, ServiceError>")]
pub struct ListKeys {
    pub by: Access,
}

impl Handler<ListKeys> for KeyKeeper {
    type Result = ResponseFuture<Result<Vec<ApiKey>, ServiceError>>;

    fn handle(&mut self, msg: ListKeys, _: &mut Self::Context) -> Self::Result {
        let reader = self.reader.clone();
        Box::pin(async move { reader.read(ListKeysFor { by: msg.by }).await })
    }
}

/// Revokes key `name`; answers it as it now stands, and whether it was
/// active until then.
#[derive(Message)]
#[rtype(result = "Result<(ApiKey, bool), ServiceError>")]
pub struct RevokeKey {
    pub by: Access,
    pub name: String,
}

impl Handler<RevokeKey> for KeyKeeper {
    type Result = ResponseFuture<Result<(ApiKey, bool), ServiceError>>;

    fn handle(&mut self, msg: RevokeKey, _: &mut Self::Context) -> Self::Result {
        let now = self.clock.now();
        let writer = self.writer.clone();
        let RevokeKey { by, name } = msg;
        Box::pin(async move { writer.write(RevokeNamed { by, name, now }).await })
    }
}

handles_in_request!(KeyKeeper => CreateKey, ListKeys, RevokeKey);
