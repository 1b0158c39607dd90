//! The blog's items in the store: as JSON values, and the partition each lives in.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{ListPage, Listed};
use crate::domain::{PostId, UserId};
use crate::error::{Error, Result};
use crate::store::{Page, PartitionKey, RawItem};

pub(super) fn to_item(value: &impl Serialize) -> Result<Value> {
    serde_json::to_value(value).map_err(Error::from)
}

pub(super) fn from_item<T: DeserializeOwned>(value: Value) -> Result<T> {
    serde_json::from_value(value).map_err(Error::from)
}

/// A page of stored JSON text as a list's read hands it over: each item in the form `T`, the
/// page as that form lists it ([`Listed::listing`]).
pub(super) fn listed_page<T: Listed>(page: Page<RawItem>) -> Result<ListPage<T>> {
    Ok(T::listing(Page {
        items: page
            .items
            .iter()
            .map(|item| T::from_stored(item))
            .collect::<Result<_, _>>()?,
        continuation: page.continuation,
    }))
}

pub(super) fn user_partition(user_id: &UserId) -> PartitionKey {
    PartitionKey::single(user_id.as_str())
}

pub(super) fn post_partition(post_id: &PostId) -> PartitionKey {
    PartitionKey::single(post_id.as_str())
}
