//! What the test suite of cosmos-blog (`tests/api`, the one integration binary) and the
//! benchmark harness (`benches/harness`) use:
//! - [`TestApp::spawn`]: the application in this process, on a store of either backend;
//! - [`binary!`]: the real binary, run to the end or serving;
//! - [`double::Double`]: a store that forwards to a real one through a test's hooks;
//! - [`eventually`]: the one way to wait for something;
//! - [`emulator`]: the Cosmos DB store on the SDK's in-memory emulator;
//! - [`metered::MeteredStore`]: a store that counts what is asked of it (requests,
//!   partitions, items, RU).
//! - [`azurite::Azurite`]: the Azure Storage emulator, for the images' Blob Storage.

#![allow(
    clippy::unwrap_used,
    reason = "test support: a failed unwrap is a failed test, with its message"
)]

pub mod app;
pub mod azurite;
pub mod binary;
pub mod double;
pub mod emulator;
pub mod metered;
pub mod poll;

pub use app::{
    Backend, OPERATION_TENANT, Spawn, TestApp, content_type, form_token, ids, json_of,
    open_backend, register_at, settings,
};
pub use azurite::Azurite;
pub use binary::{Binary, Served};
pub use poll::{assert_store_verifies, eventually, eventually_ok};
