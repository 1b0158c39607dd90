//! The Azure Cosmos DB store, on the official SDK (`azure_data_cosmos`).
//!
//! It keeps the semantics of the embedded store (see `store::embedded`): items are read without
//! system properties; writes check that the item belongs to the partition addressed; a
//! transactional batch either commits whole or fails naming its first failing operation;
//! queries are parameterised and paged with the SDK's continuation tokens; the change feed is
//! the container's "latest version" feed, resumed from the SDK's continuation token.
//!
//! Every response's request charge, attempts and status go to [`crate::store::charge::report`], so the HTTP
//! layer can report the RU cost of each request, and each store call's span its own.
//!
//! One concept a file: [`client`] connects and holds the containers' clients,
//! `provisioning` creates and checks the containers, `faults` retries and maps the service's
//! failures, `translate` converts between the store's types and the SDK's, and `store_impl`
//! implements the [`Store`](crate::store::Store) contract on them.

mod client;
mod faults;
mod provisioning;
mod store_impl;
mod translate;

pub use client::CosmosStore;
pub use faults::{THROTTLE_RETRIES, THROTTLE_WAIT, TRANSIENT_BUDGET, sdk_operation_options};
