//! The one way tests wait for something: poll it. The change feed makes copies appear
//! shortly after the write, not with it; a server listens shortly after it starts. The limits
//! the callers give are generous on purpose: they only bound a failing test on a loaded CI
//! machine; how fast things really happen is measured by the benchmark, never asserted here.

use std::fmt::Display;
use std::panic::Location;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cosmos_blog::changefeed::backlog;
use cosmos_blog::store::Store;
use cosmos_blog::verify::{VerifyReport, verify};

/// The pause between two looks: short, since most waits are for a change a few ms away.
const POLL_EVERY: Duration = Duration::from_millis(20);

/// A whole-store scan is heavier: a failing `verify` is run again at most this often.
const VERIFY_EVERY: Duration = Duration::from_millis(200);

/// Polls `check` until it returns `Some`, for at most `within`.
/// A failure names the line that waited (an `async fn` cannot track its caller).
#[track_caller]
pub fn eventually<T, F, Fut>(within: Duration, mut check: F) -> impl Future<Output = T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let caller = Location::caller();
    async move {
        let polled = poll_for(within, POLL_EVERY, || {
            let attempt = check();
            async move { attempt.await.ok_or("") }
        });
        met_or_panic(polled.await, within, caller)
    }
}

/// Polls `check` until it returns `Ok`, for at most `within`; a failure says what the last
/// `Err` saw (the spans exported so far, the violations left).
#[track_caller]
pub fn eventually_ok<T, E, F, Fut>(within: Duration, check: F) -> impl Future<Output = T>
where
    E: Display,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let caller = Location::caller();
    async move { met_or_panic(poll_for(within, POLL_EVERY, check).await, within, caller) }
}

fn met_or_panic<T, E: Display>(polled: Result<T, E>, within: Duration, caller: &Location<'_>) -> T {
    polled.unwrap_or_else(|seen| {
        let seen = seen.to_string();
        let separator = if seen.is_empty() { "" } else { ":\n" };
        panic!("condition not met within {within:?} (waiting at {caller}){separator}{seen}")
    })
}

/// Polls `check` every `every` until it returns `Ok`, for at most `within`: its value, or
/// once the time is up the last `Err`. The one polling loop of the tests.
pub async fn poll_for<T, E, F, Fut>(within: Duration, every: Duration, mut check: F) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let deadline = Instant::now() + within;
    loop {
        match check().await {
            Ok(value) => return Ok(value),
            Err(seen) if Instant::now() >= deadline => return Err(seen),
            Err(_) => tokio::time::sleep(every).await,
        }
    }
}

/// Waits until `verify` passes on `store`, for at most `within`; panics with the violations it
/// last found if it never does. `verify` only holds once the change feed has caught up: after
/// a scan that fails, it waits, with cheap looks at the pump's checkpoints, until nothing is
/// pending before it scans again; a scan that still fails (a copy a handler's own write will
/// correct, a delayed repair) is tried again, less and less often.
#[track_caller]
pub fn assert_store_verifies(
    store: &Arc<dyn Store>,
    within: Duration,
) -> impl Future<Output = VerifyReport> {
    let caller = Location::caller();
    let store = Arc::clone(store);
    async move {
        let deadline = Instant::now() + within;
        let mut pause = POLL_EVERY;
        let mut caught_up = Ok(());
        loop {
            let report = verify(&store).await.expect("the store can be scanned");
            if report.holds() {
                return report;
            }
            if Instant::now() >= deadline {
                let pending = caught_up.err().unwrap_or_default();
                panic!(
                    "verify still fails after {within:?} (waiting at {caller}){pending}:\n{}\n{}",
                    report.violation_lines(100).join("\n"),
                    report.verdict()
                );
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(VERIFY_EVERY);
            let left = deadline.saturating_duration_since(Instant::now());
            caught_up = poll_for(left, POLL_EVERY, || pump_caught_up(&store)).await;
        }
    }
}

/// `Ok` once the standalone pump has handled every change of its sources (or never ran on
/// `store`); otherwise what it still has to do.
async fn pump_caught_up(store: &Arc<dyn Store>) -> Result<(), String> {
    let backlog = backlog(store)
        .await
        .map_err(|e| format!(", the change logs unreadable ({e})"))?;
    match backlog.total() {
        0 => Ok(()),
        pending => Err(format!(
            ", with {pending} changes still pending for the pump"
        )),
    }
}
