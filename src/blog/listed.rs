//! What a read hands over for each item, of a list or alone: the item parsed into its type
//! (the pages and the Atom feeds render it), or the JSON the API sends for it, copied from
//! the stored text where that text is already in that form ([`WireJson`]).

use std::marker::PhantomData;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use crate::domain::{Comment, Like, Post, Typed, User, WireForm};
use crate::error::{Error, Result};

/// A form a read can hand its items over in.
pub trait Listed: Sized + Clone + Send + Sync + 'static {
    /// The kind of item listed.
    type Item: Typed;

    /// The item stored as `stored`.
    fn from_stored(stored: &RawValue) -> Result<Self>;
}

macro_rules! listed_as_parsed {
    ($($type:ty),+) => {$(
        impl Listed for $type {
            type Item = $type;

            fn from_stored(stored: &RawValue) -> Result<Self> {
                serde_json::from_str(stored.get()).map_err(Error::from)
            }
        }
    )+};
}

listed_as_parsed!(User, Post, Comment, Like);

/// An item as the JSON the API sends for it: the same bytes as the parsed item serialised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireJson<T> {
    json: String,
    kind: PhantomData<T>,
}

impl<T> WireJson<T> {
    pub fn as_str(&self) -> &str {
        &self.json
    }

    pub fn into_string(self) -> String {
        self.json
    }
}

impl<T> Listed for WireJson<T>
where
    T: WireForm + DeserializeOwned + Serialize + Clone + Send + Sync + 'static,
{
    type Item = T;

    fn from_stored(stored: &RawValue) -> Result<Self> {
        let mut json = String::new();
        if !T::copy_wire_form(stored.get(), &mut json) {
            let item: T = serde_json::from_str(stored.get())?;
            json = serde_json::to_string(&item)?;
        }
        Ok(Self {
            json,
            kind: PhantomData,
        })
    }
}
