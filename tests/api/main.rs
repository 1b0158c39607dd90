//! The platform's integration suite, one test binary (one link, and every test in one pool of
//! threads): the real application spawned per test and driven over HTTP, the contract tests of
//! the storage backends, the Functions host's payloads (`functions`), the pages in a real
//! browser (`browser`), and the checks of the tree itself: its layers, the release build's
//! features, the planner's and the harness's commands.

#![allow(
    clippy::unwrap_used,
    reason = "a test: a failed unwrap is a failed test, with its message"
)]

mod archive;
mod auth;
mod backlog;
mod browser;
mod changefeed;
mod copy_batches;
mod deletes;
mod drafts;
mod erasure_restart;
mod errors;
mod faults;
mod feed;
mod feed_storm;
mod functions;
mod harness_smoke;
mod hostile;
mod hot_posts;
mod idempotency;
mod images;
mod images_blob;
mod images_budget;
mod images_pages;
mod images_transfer;
mod interactions;
mod interrupted;
mod interrupted_import;
mod kept_pages;
mod layers;
mod metered;
mod openapi;
mod operations;
mod plan;
mod posts;
mod recheck;
mod rename_race;
mod response_bytes;
mod restart;
mod schedule_restart;
mod schedule_verify;
mod shipped_build;
mod storm;
mod tags;
mod telemetry;
mod tenancy;
mod transfer;
mod users;
mod verify;
mod verify_read_only;
mod view_pages;
mod views_verify;
mod web;

// The Cosmos DB store (on the in-memory emulator of `testkit::emulator`): the `Store`
// contract on both backends, and what only the Cosmos DB store has.
mod cosmos_api;
mod cosmos_store;
mod store_contract;
mod tenancy_store;
