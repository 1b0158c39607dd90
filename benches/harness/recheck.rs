//! The delayed re-check's cost: what it asks of the store per 1,000 changes, and
//! how long it takes to catch up with the changes of the write mix.
//!
//! Its checkpoints are moved to the end of the feeds before the write mix, so it checks
//! exactly the changes the mix (and the pump's copies of it) made. After the mix, with the
//! pump drained, it runs with no delay through a `MeteredStore` until it has caught up: the
//! time is its catch-up, the metrics its cost. (In production it runs the whole time, a
//! delay behind; the catch-up rate says whether it keeps up with the writes.)

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::markdown::{section, table_head};
use cosmos_blog::changefeed::recheck;
use cosmos_blog::store::Store;
use testkit::metered::{Metrics, meter};

pub struct RecheckCost {
    /// Changes checked.
    pub changes: usize,
    pub metrics: Metrics,
    pub catch_up: Duration,
    /// Repairs made (none is expected: the pump kept the copies right).
    pub repaired: usize,
    pub unfixable: usize,
}

/// From now on, the re-check checks what changes.
pub async fn start_here(store: &Arc<dyn Store>) -> anyhow::Result<()> {
    recheck::skip_to_present(store).await?;
    Ok(())
}

/// Re-checks every change since [`start_here`], with no delay, metered.
pub async fn catch_up(store: &Arc<dyn Store>) -> anyhow::Result<RecheckCost> {
    // A change is due once its commit second is over.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let metered = Arc::new(meter(Arc::clone(store)));
    let view: Arc<dyn Store> = metered.clone();
    let started = Instant::now();
    let (mut changes, mut repaired, mut unfixable) = (0, 0, 0);
    loop {
        let pass = recheck::run(&view, Duration::ZERO, Duration::from_secs(3_600)).await?;
        changes += pass.checked;
        repaired += pass.repaired.len();
        unfixable += pass.unfixable.len();
        if pass.caught_up && pass.next_due.is_none() {
            break;
        }
    }
    Ok(RecheckCost {
        changes,
        metrics: metered.take(),
        catch_up: started.elapsed(),
        repaired,
        unfixable,
    })
}

/// The report's section; `written_per_second`: the write mix's rate, to compare with.
pub fn markdown(out: &mut String, cost: &RecheckCost, written_per_second: Option<f64>) {
    let per_thousand = |n: u64| n as f64 * 1_000.0 / cost.changes.max(1) as f64;
    let m = &cost.metrics;
    section(
        out,
        "The delayed re-check (issue 20)",
        "Every change of the write mix checked again against its source and dependents (no delay; the pump drained first), through a `MeteredStore`.",
    );
    table_head(
        out,
        "changes checked | catch-up | changes/s | requests / 1,000 changes | items read / 1,000 changes | KB read / 1,000 changes | writes (its checkpoints) | repairs",
    );
    let rate = cost.changes as f64 / cost.catch_up.as_secs_f64().max(1e-9);
    let _ = writeln!(
        out,
        "| {} | {:.1} s | {:.0} | {:.0} | {:.0} | {:.0} | {} | {} (+{} unfixable) |",
        cost.changes,
        cost.catch_up.as_secs_f64(),
        rate,
        per_thousand(m.requests),
        per_thousand(m.items_read),
        per_thousand(m.bytes_read) / 1_000.0,
        m.items_written,
        cost.repaired,
        cost.unfixable
    );
    if let Some(ru) = m.request_units {
        let _ = writeln!(
            out,
            "\nRequest units: {:.0} per 1,000 changes.",
            ru * 1_000.0 / cost.changes.max(1) as f64
        );
    }
    if let Some(written) = written_per_second {
        let _ = writeln!(
            out,
            "\nThe write mix served {written:.0} writes/s; the re-check checks {rate:.0} changes/s (a write makes one to three changes: the item, its post's counts, the copies)."
        );
    }
}
