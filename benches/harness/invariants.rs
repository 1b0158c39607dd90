//! The harness ends its data generation and its HTTP load with `verify`: the copies
//! it measured must also be right.
//!
//! The profiler writes V1-model items into the same store on purpose (normalised: no
//! `userUsername`, no counts), in partitions of their own (V1's comments and likes go to V1's
//! posts). `verify` names each as an unreadable item; they are counted apart, and any other
//! violation fails the check.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::markdown::{section, table_head};
use cosmos_blog::changefeed::{Pump, pump};
use cosmos_blog::store::{Container, Store};
use cosmos_blog::verify::{VerifyReport, Violation, ViolationKind, verify_with_progress};
use indicatif::ProgressBar;

/// How long the change-feed pump may take to drain after the load before the check fails.
const DRAIN_LIMIT: Duration = Duration::from_secs(600);

pub struct Check {
    pub after: &'static str,
    pub report: VerifyReport,
    /// Violations that are the profiler's V1 items.
    pub profiler_items: usize,
    /// The last scan.
    pub scan: Duration,
    /// From the start of the check until it passed (or gave up), scans included.
    pub waited: Duration,
}

impl Check {
    pub fn holds(&self) -> bool {
        self.report.total_violations == self.profiler_items
    }
}

fn is_profiler_item(violation: &Violation) -> bool {
    violation.kind == ViolationKind::UnreadableItem
        && violation.container == Container::Posts
        && violation.detail.contains("missing field `userUsername`")
}

/// Violations of `report` that are V1 items, if those are all there is; else the recorded ones.
fn profiler_items(report: &VerifyReport) -> usize {
    let recorded = report
        .violations
        .iter()
        .filter(|v| is_profiler_item(v))
        .count();
    let only_unreadable = report
        .by_kind
        .keys()
        .all(|k| *k == ViolationKind::UnreadableItem);
    // Past the recorded ones, only their kind is known: count them in if nothing else shows.
    if recorded == report.violations.len() && only_unreadable {
        report.total_violations
    } else {
        recorded
    }
}

async fn scan(store: &Arc<dyn Store>, progress: bool) -> anyhow::Result<(VerifyReport, Duration)> {
    let bar = if progress {
        ProgressBar::new_spinner()
    } else {
        ProgressBar::hidden()
    };
    let started = Instant::now();
    let report = verify_with_progress(store, &mut |p| {
        bar.set_message(format!(
            "verify: {} items scanned ({})",
            p.scanned.total(),
            p.container.name()
        ));
        bar.tick();
    })
    .await?;
    bar.finish_and_clear();
    Ok((report, started.elapsed()))
}

/// Right after generation (copies rebuilt, nothing else running): everything must hold.
pub async fn after_generation(store: &Arc<dyn Store>, progress: bool) -> anyhow::Result<Check> {
    let (report, scan) = scan(store, progress).await?;
    Ok(Check {
        after: "data generation (copies rebuilt)",
        profiler_items: profiler_items(&report),
        report,
        scan,
        waited: scan,
    })
}

/// After the HTTP load (the server and its pump stopped): a pump drains what the change feed
/// still holds, and the check passes as soon as `verify` does.
pub async fn after_load(store: &Arc<dyn Store>, progress: bool) -> anyhow::Result<Check> {
    let started = Instant::now();
    let pump = Pump::start(
        Arc::clone(store),
        Duration::from_millis(pump::DEFAULT_POLL_MS),
    );
    let check = loop {
        let (report, scan) = scan(store, progress).await?;
        let check = Check {
            after: "HTTP load (change feed drained)",
            profiler_items: profiler_items(&report),
            report,
            scan,
            waited: started.elapsed(),
        };
        if check.holds() || started.elapsed() > DRAIN_LIMIT {
            break check;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    pump.stop().await;
    Ok(check)
}

/// The report's section.
pub fn markdown(checks: &[Check]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    section(
        &mut out,
        "Invariants (`cosmos-blog verify`)",
        "Every invariant of the model (counts, usernames, post copies in `users`, the feed) checked by a full scan. The profiler's V1-model items (normalised on purpose: no usernames, no counts) are counted apart.",
    );
    table_head(
        &mut out,
        "after | verdict | items scanned | violations | V1 items of the profiler | scan | until it held",
    );
    for check in checks {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {:.1} s | {:.1} s |",
            check.after,
            if check.holds() {
                "✅ holds"
            } else {
                "❌ FAILS"
            },
            check.report.scanned.total(),
            check.report.total_violations - check.profiler_items,
            check.profiler_items,
            check.scan.as_secs_f64(),
            check.waited.as_secs_f64()
        );
    }
    for check in checks.iter().filter(|c| !c.holds()) {
        let _ = writeln!(out, "\nViolations after {}:\n\n```", check.after);
        for violation in check
            .report
            .violations
            .iter()
            .filter(|v| !is_profiler_item(v))
            .take(20)
        {
            let _ = writeln!(out, "{violation}");
        }
        let _ = writeln!(out, "```");
    }
    out
}
