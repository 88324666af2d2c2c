//! Storage work as data. Each operation a storage actor runs is a [`Job`]:
//! a struct owning the arguments of one service call, whose `run` makes
//! that call inside the transaction the actor gives it. A handler names
//! the job it sends; the job names the service function; that function
//! names the store trait methods, whose implementations hold the SQL.

use super::ServiceError;
use crate::store::Transaction;

pub trait Job: Send + 'static {
    type Output: Send + 'static;
    /// Its name in traces: the storage actor runs it in a span of this name.
    const NAME: &'static str;

    /// Whether it only adds new rows and depends on nothing another write
    /// may change meanwhile: then any writer may run it (the least busy),
    /// not only the first, which takes every other write in order.
    fn adds_only(&self) -> bool {
        false
    }

    fn run(self, tx: &mut dyn Transaction) -> Result<Self::Output, ServiceError>;
}
