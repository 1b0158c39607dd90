//! Request-unit accounting. The HTTP layer opens a scope per request; the Cosmos DB store adds
//! each response's charge to it; the total goes out in the `x-ms-request-charge` header.
//!
//! The store call spans (`telemetry::traced`) open scopes of their own, which also collect what the
//! service said about each exchange ([`Exchange`]: attempts, throttling, status), and pass the
//! charge on to the enclosing scope.

use std::future::Future;
use std::sync::{Arc, Mutex};

/// The request units a request consumed, in its response's extensions: what telemetry
/// records.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestCharge(pub f64);

tokio::task_local! {
    static CHARGE: Arc<Mutex<Exchange>>;
}

/// What the service reported for one exchange (one operation of the SDK, its retries
/// included), or summed over the exchanges of a scope (the status is then the last one's).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Exchange {
    pub request_units: f64,
    /// Requests sent: 1 per operation, plus the SDK's retries (throttling, failovers).
    pub attempts: u32,
    /// Those the service answered 429 (request rate too large).
    pub throttled: u32,
    /// The final status code and Cosmos DB sub-status.
    pub status: Option<u16>,
    pub sub_status: Option<u16>,
}

impl Exchange {
    fn add(&mut self, other: &Exchange) {
        self.request_units += other.request_units;
        self.attempts += other.attempts;
        self.throttled += other.throttled;
        if other.status.is_some() {
            self.status = other.status;
            self.sub_status = other.sub_status;
        }
    }
}

/// Runs `work` with a fresh RU total and returns the total with the result.
pub async fn measure<F: Future>(work: F) -> (F::Output, f64) {
    let (output, exchanges) = measure_exchanges(work).await;
    (output, exchanges.request_units)
}

/// Runs `work` in a fresh scope and returns what the service reported in it, summed.
pub(crate) async fn measure_exchanges<F: Future>(work: F) -> (F::Output, Exchange) {
    let total = Arc::new(Mutex::new(Exchange::default()));
    let output = CHARGE.scope(total.clone(), work).await;
    let exchanges = *total
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    (output, exchanges)
}

/// Runs `work` in the current scope, if any: for a task spawned on behalf of the work that
/// spawns it, whose charges belong to that work.
pub(crate) fn carried<F: Future>(work: F) -> impl Future<Output = F::Output> {
    let current = CHARGE.try_with(Arc::clone).ok();
    async move {
        match current {
            Some(scope) => CHARGE.scope(scope, work).await,
            None => work.await,
        }
    }
}

/// Adds what the service reported (for one exchange, or a scope's sum) to the current scope.
pub fn report(exchange: &Exchange) {
    let _ = CHARGE.try_with(|total| {
        total
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .add(exchange);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One exchange that cost `request_units`.
    fn charged(request_units: f64) {
        report(&Exchange {
            request_units,
            ..Exchange::default()
        });
    }

    #[tokio::test]
    async fn sums_charges_within_a_scope_only() {
        charged(5.0); // outside any scope: ignored
        let ((), total) = measure(async {
            charged(1.5);
            charged(2.25);
        })
        .await;
        assert_eq!(total, 3.75);
    }

    #[tokio::test]
    async fn a_carried_task_charges_the_scope_it_was_made_in() {
        let ((), exchanges) = measure_exchanges(async {
            let spawned = tokio::spawn(carried(async {
                report(&Exchange {
                    request_units: 2.0,
                    attempts: 3,
                    throttled: 2,
                    status: Some(201),
                    sub_status: None,
                });
            }));
            spawned.await.unwrap();
        })
        .await;
        assert_eq!(
            (
                exchanges.request_units,
                exchanges.attempts,
                exchanges.throttled
            ),
            (2.0, 3, 2)
        );
        assert_eq!(exchanges.status, Some(201));
    }
}
