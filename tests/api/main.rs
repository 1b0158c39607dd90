//! The platform's integration suite: one test binary that spawns the real application per
//! test and drives it over HTTP, plus the contract tests of the storage backends.

mod helpers;

mod changefeed;
mod copy_batches;
mod errors;
mod feed;
mod hot_posts;
mod interactions;
mod posts;
mod restart;
mod users;

// The Cosmos DB store: its in-memory emulator wiring, the `Store` contract on both
// backends, and what only the Cosmos DB store has.
mod cosmos_api;
mod cosmos_emulator;
mod cosmos_store;
mod store_contract;
