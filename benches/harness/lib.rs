//! The cost and performance harness: generates the case study's data set, profiles the ten
//! operations under the three models through a `MeteredStore`, load-tests the real
//! application over loopback HTTP, times the binary's start-up, and writes `REPORT.md` and
//! `chart.svg`. `benches/harness.rs` runs it (`cargo bench --bench harness -- --help`), and
//! `tests/api/harness_smoke.rs` runs it at a tiny scale so that it cannot rot.

#![allow(
    clippy::unwrap_used,
    reason = "a measuring tool: a broken run stops with the reason, and its figures are not served"
)]

pub mod ceiling;
pub mod deletes;
pub mod faults;
pub mod generate;
pub mod hotpost;
pub mod image_memory;
pub mod invariants;
pub mod layouts;
pub mod layouts_report;
pub mod load;
pub mod markdown;
pub mod plan;
pub mod plan_check;
pub mod profile;
pub mod recheck;
pub mod report;
pub mod routing;
pub mod startup;
pub mod stats;
pub mod suite;
pub mod tenants;
pub mod transfer;
pub mod versions;
