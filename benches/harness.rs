//! `cargo bench --bench harness -- --users 1000 --out bench-results/`
//!
//! Generates the case study's data set, profiles the ten operations under the three models
//! through a `MeteredStore`, load-tests the real application over loopback HTTP, times the
//! binary's start-up, and writes `REPORT.md` and `chart.svg` to `--out`. With `--tenants N`
//! it also compares the `single` and `multi` layouts on a multi-tenant data set.

#![allow(
    clippy::unwrap_used,
    reason = "a test: a failed unwrap is a failed test, with its message"
)]

use std::path::Path;
use std::process::ExitCode;

use clap::Parser;
use cosmos_blog_harness::suite;

/// The binary's allocator: the harness serves the same application in its own process.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let args = suite::Args::parse();
    let shown: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let command = format!("cargo bench --bench harness -- {}", shown.join(" "));
    // One worker per core: the server under test and its clients share the machine.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(std::thread::available_parallelism().map_or(2, |n| n.get()))
        .enable_all()
        .build()
        .expect("tokio runtime");
    if let Some(only) = args.only {
        return match runtime.block_on(suite::run_only(&args, only, command.trim_end(), binary())) {
            Ok(markdown) => {
                println!("{markdown}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("harness failed: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    match runtime.block_on(suite::run(&args, command.trim_end(), binary())) {
        Ok(outcome) => {
            eprintln!(
                "harness: {} items, {} profile rows, {} delete costs, {} load phases, {} re-checked changes, {} hot-post runs, start-up p50 {}",
                outcome.dataset.items(),
                outcome.rows.len(),
                outcome.deletes.len(),
                outcome.load.map_or(0, |l| l.phases.len()),
                outcome.recheck.map_or(0, |r| r.changes),
                outcome.hot_post.map_or(0, |runs| runs.len()),
                outcome
                    .startup
                    .map_or("not measured".into(), |s| format!("{:?}", s.p50)),
            );
            println!("{}", outcome.report.display());
            println!("{}", outcome.chart.display());
            // The report is written either way; a broken invariant still fails the run.
            let layouts_hold = outcome.layouts.as_ref().is_none_or(|l| l.holds());
            let imported_holds = outcome.transfer.as_ref().is_none_or(|t| t.verified);
            let faults_hold = outcome
                .faults
                .as_ref()
                .is_none_or(|runs| runs.iter().all(|run| run.verify.holds()));
            if outcome.checks.iter().all(|check| check.holds())
                && layouts_hold
                && imported_holds
                && faults_hold
            {
                ExitCode::SUCCESS
            } else {
                eprintln!("harness: verify failed (see the report's Invariants section)");
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("harness failed: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The application's binary, built by cargo for its benches.
fn binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_cosmos-blog"))
}
