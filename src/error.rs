//! The one error type of the platform's operations. `api::problem` turns it into an RFC 9457
//! problem document; internals are logged there and never shown to callers.

use std::time::Duration;

use crate::domain::ValidationError;
use crate::images::{ImageRefusal, ImageStoreError};
use crate::store::StoreError;

#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Validation(#[from] ValidationError),
    #[error("{0}")]
    Forbidden(&'static str),
    #[error("no {kind} with id {id:?}")]
    NotFound { kind: &'static str, id: String },
    #[error("user {0:?} does not exist yet; create it first with PUT on its users/{0} route")]
    UnregisteredCaller(String),
    #[error("the continuation token is not valid for this list")]
    InvalidContinuation,
    #[error("{0}")]
    Conflict(String),
    /// An `Idempotency-Key` sent again with a different request: the item it made says
    /// otherwise.
    #[error("this Idempotency-Key was used for a different {0}; send a new key for a new one")]
    KeyReused(&'static str),
    /// An `Idempotency-Key` sent again after the post it made was deleted.
    #[error("the post this Idempotency-Key created has been deleted since")]
    KeyPostDeleted,
    #[error("the store is throttling requests")]
    Throttled { retry_after: Option<Duration> },
    #[error("the store is unreachable")]
    Unavailable(String),
    /// An upload that is not an image the blog keeps (its type, size or pixels).
    #[error(transparent)]
    Image(#[from] ImageRefusal),
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    pub fn not_found(kind: &'static str, id: impl Into<String>) -> Self {
        Error::NotFound {
            kind,
            id: id.into(),
        }
    }
}

impl From<StoreError> for Error {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Throttled { retry_after } => Error::Throttled { retry_after },
            StoreError::Unavailable(why) => Error::Unavailable(why),
            StoreError::BatchOperationFailed { cause, .. } => Error::from(*cause),
            other => Error::Internal(other.to_string()),
        }
    }
}

impl From<ImageStoreError> for Error {
    fn from(error: ImageStoreError) -> Self {
        Error::Unavailable(error.to_string())
    }
}

impl From<serde_json::Error> for Error {
    fn from(error: serde_json::Error) -> Self {
        Error::Internal(format!("stored item does not match the model: {error}"))
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
