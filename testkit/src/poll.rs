//! The one way tests wait for something: poll it. The change feed makes copies appear
//! shortly after the write, not with it; a server listens shortly after it starts. The limits
//! the callers give are generous on purpose: they only bound a failing test on a loaded CI
//! machine; how fast things really happen is measured by the benchmark, never asserted here.

use std::fmt::Display;
use std::panic::Location;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cosmos_blog::store::Store;
use cosmos_blog::verify::{VerifyReport, verify};

/// The pause between two looks: short, since most waits are for a change a few ms away.
const POLL_EVERY: Duration = Duration::from_millis(20);

/// A whole-store scan is heavier: `verify` is run less often.
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

/// Waits until `verify` passes on `store` (the change feed must catch up first), for at most
/// `within`; panics with the violations it last found if it never does.
#[track_caller]
pub fn assert_store_verifies(
    store: &Arc<dyn Store>,
    within: Duration,
) -> impl Future<Output = VerifyReport> {
    let caller = Location::caller();
    let store = Arc::clone(store);
    let polled = poll_for(within, VERIFY_EVERY, move || {
        let store = Arc::clone(&store);
        async move {
            let report = verify(&store).await.expect("the store can be scanned");
            if report.holds() {
                Ok(report)
            } else {
                Err(format!(
                    "verify still fails:\n{}\n{}",
                    report.violation_lines(100).join("\n"),
                    report.verdict()
                ))
            }
        }
    });
    async move { met_or_panic(polled.await, within, caller) }
}
