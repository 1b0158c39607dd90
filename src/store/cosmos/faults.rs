//! Faults: what the SDK retries, what this store retries, and how the service's failures
//! become the store's errors.
//!
//! The SDK (azure_data_cosmos_driver 1.1.0-beta.1) retries inside every request:
//! - 429 in its transport loop, waiting the service's `x-ms-retry-after-ms` (or 5 ms doubling,
//!   ±25 % jitter, without one), by default up to 18 times and 270 s; bounded here by
//!   [`sdk_operation_options`] to [`THROTTLE_RETRIES`] times and [`THROTTLE_WAIT`] in all, so a
//!   request the service keeps throttling fails in seconds, as a 429 with `Retry-After`;
//! - 408, 503, 410 (not 410/1002 partition splits, which it re-routes), 500 on reads, and
//!   transport failures (connection refused, no answer): up to 3 more attempts ("failover
//!   retries", `max_failover_retry_count`), at once, without a delay. Writes are retried too,
//!   after an answer that was lost (`allows_ambiguous_outcome_retry` is true for creates,
//!   upserts, replaces, deletes and batches: only stored procedures and PATCH are spared);
//! - 449 (retry with): from 10 ms doubling to 1 s, for up to 30 s.
//!
//! Those failover retries come back to back, so a stretch of unavailability longer than a
//! few milliseconds outlasts them. This store adds the waiting: [`retrying`] repeats a request
//! that failed as `Unavailable` (408, 410, 449, 503, transport) with exponential backoff, for
//! up to about [`TRANSIENT_BUDGET`]; after that the caller gets the error (the API a 503). A
//! 429 is the SDK's alone: it honours the service's delay, and a second loop here would only
//! stretch what the client waits for before its own `Retry-After`.
//!
//! A write retried after its answer was lost may already have committed, by the SDK or here.
//! The retry then meets its own effect: a create finds its item (409), a delete finds nothing
//! (404), a replace or batch with If-Match finds a newer etag (412). Every caller that writes
//! reads such an answer as "maybe mine" and checks the item (see `blog::combiner` for the
//! counts, whose If-Match on the post makes each batch a compare-and-swap that commits once).

use std::time::{Duration, Instant};

use azure_data_cosmos::CosmosError;
use azure_data_cosmos::diagnostics::DiagnosticsContext;
use azure_data_cosmos::models::{ItemResponse, TransactionalBatchResponse};
use azure_data_cosmos::options::{
    OperationOptions, OperationOptionsBuilder, ThrottlingRetryOptionsBuilder,
};
use backon::Retryable;

use crate::retry::Backoff;
use crate::store::{StoreError, StoreResult, charge};

/// 429 retries the SDK makes inside one request.
pub const THROTTLE_RETRIES: u32 = 9;
/// The most one request waits, in all, on 429 retries inside the SDK.
pub const THROTTLE_WAIT: Duration = Duration::from_secs(5);
/// About how long [`retrying`] keeps trying a request that fails as `Unavailable`.
pub const TRANSIENT_BUDGET: Duration = Duration::from_secs(3);

/// The SDK's retry options for every request of the store (its client's defaults).
pub fn sdk_operation_options() -> OperationOptions {
    OperationOptionsBuilder::new()
        .with_throttling_retry_options(
            ThrottlingRetryOptionsBuilder::new()
                .with_max_retry_count(THROTTLE_RETRIES)
                .with_max_retry_wait_time(THROTTLE_WAIT)
                .build(),
        )
        .build()
}

/// Runs `attempt`, and again while it fails as `Unavailable`, with jittered exponential
/// backoff (25 ms doubling, at most 800 ms apart, 6 retries, [`TRANSIENT_BUDGET`] in all).
pub(super) async fn retrying<T, F, Fut>(operation: &'static str, attempt: F) -> StoreResult<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = StoreResult<T>>,
{
    const TRANSIENT: Backoff = Backoff::new(Duration::from_millis(25), Duration::from_millis(800))
        .at_most(6)
        .within(TRANSIENT_BUDGET);
    attempt
        .retry(TRANSIENT.builder())
        .when(|e| matches!(e, StoreError::Unavailable(_)))
        .notify(|e, delay| {
            tracing::debug!(operation, error = %e, retry_in_ms = delay.as_millis() as u64, "cosmos request retried");
        })
        .await
}

/// Maps a status code (of a response or of one batch operation) to the store's errors.
fn status_error(status: u16, retry_after: Option<Duration>, message: String) -> StoreError {
    match status {
        404 => StoreError::NotFound,
        409 => StoreError::Conflict,
        412 => StoreError::PreconditionFailed,
        429 => StoreError::Throttled { retry_after },
        // 408: timed out; 410/449: transient service conditions left after the SDK's retries.
        503 | 408 | 410 | 449 => StoreError::Unavailable(message),
        400 | 413 => StoreError::BadRequest(message),
        _ => StoreError::Internal(message),
    }
}

fn map_error(error: &CosmosError) -> StoreError {
    let status = error.status();
    let code = u16::from(status.status_code());
    let retry_after = error
        .response()
        .and_then(|response| response.headers().retry_after_ms)
        .map(Duration::from_millis);
    // The SDK's message names the operation and status but not the item's content.
    status_error(code, retry_after, format!("{code}: {error}"))
}

/// Records one exchange with the service (its charge, attempts, status) and traces it.
pub(super) fn observe(
    operation: &'static str,
    started: Instant,
    diagnostics: Option<&DiagnosticsContext>,
) {
    let exchange = diagnostics.map(exchange_of).unwrap_or_default();
    charge::report(&exchange);
    tracing::debug!(
        operation,
        ru = exchange.request_units,
        duration_ms = started.elapsed().as_millis() as u64,
        "cosmos request"
    );
}

/// What the SDK's diagnostics say about one operation: every request it sent, retries
/// included, and the final status.
fn exchange_of(diagnostics: &DiagnosticsContext) -> charge::Exchange {
    let status = diagnostics.effective_status();
    charge::Exchange {
        request_units: diagnostics.total_request_charge().value(),
        attempts: u32::try_from(diagnostics.request_count()).unwrap_or(u32::MAX),
        throttled: diagnostics
            .requests()
            .iter()
            .filter(|request| u16::from(request.status().status_code()) == 429)
            .count() as u32,
        status: status.map(|s| u16::from(s.status_code())),
        sub_status: status.and_then(|s| s.sub_status()).map(|s| s.value()),
    }
}

/// Sends one point request (again while it fails transiently, see [`retrying`]), records
/// each attempt's charge, and maps a failure to the store's errors.
pub(super) async fn item_request<F, Fut>(
    operation: &'static str,
    request: F,
) -> StoreResult<ItemResponse>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = azure_data_cosmos::Result<ItemResponse>>,
{
    let mut request = request;
    retrying(operation, || {
        let sent = request();
        async move {
            let started = Instant::now();
            match sent.await {
                Ok(response) => {
                    observe(operation, started, Some(&response.diagnostics()));
                    Ok(response)
                }
                Err(e) => Err(failed(operation, started, &e)),
            }
        }
    })
    .await
}

/// Records a failed exchange and maps its error.
pub(super) fn failed(operation: &'static str, started: Instant, error: &CosmosError) -> StoreError {
    observe(operation, started, error.diagnostics().as_deref());
    let mapped = map_error(error);
    tracing::debug!(operation, error = %mapped, "cosmos request failed");
    mapped
}

/// The first failing operation of a batch response: the service answers 424 (failed
/// dependency) for the operations that did not run because another one failed.
pub(super) fn first_failure(results: &TransactionalBatchResponse) -> Option<(usize, StoreError)> {
    let position = results
        .results()
        .iter()
        .position(|r| !r.is_success() && r.status_code() != 424)
        .or_else(|| results.results().iter().position(|r| !r.is_success()))?;
    let result = &results.results()[position];
    let cause = status_error(
        result.status_code(),
        result.retry_after(),
        format!(
            "batch operation {position} failed with status {}{}",
            result.status_code(),
            result
                .substatus_code()
                .map(|s| format!("/{s}"))
                .unwrap_or_default()
        ),
    );
    Some((position, cause))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_statuses_to_store_errors() {
        assert!(matches!(
            status_error(404, None, String::new()),
            StoreError::NotFound
        ));
        assert!(matches!(
            status_error(409, None, String::new()),
            StoreError::Conflict
        ));
        assert!(matches!(
            status_error(412, None, String::new()),
            StoreError::PreconditionFailed
        ));
        assert!(matches!(
            status_error(429, Some(Duration::from_millis(7)), String::new()),
            StoreError::Throttled { retry_after: Some(d) } if d == Duration::from_millis(7)
        ));
        assert!(matches!(
            status_error(503, None, String::new()),
            StoreError::Unavailable(_)
        ));
        assert!(matches!(
            status_error(400, None, String::new()),
            StoreError::BadRequest(_)
        ));
    }
}
