//! Request-unit accounting. The HTTP layer opens a scope per request; the Cosmos DB store adds
//! each response's charge to it; the total goes out in the `x-ms-request-charge` header.

use std::future::Future;
use std::sync::{Arc, Mutex};

tokio::task_local! {
    static CHARGE: Arc<Mutex<f64>>;
}

/// Runs `work` with a fresh RU total and returns the total with the result.
pub async fn measure<F: Future>(work: F) -> (F::Output, f64) {
    let total = Arc::new(Mutex::new(0.0));
    let output = CHARGE.scope(total.clone(), work).await;
    let charged = *total
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    (output, charged)
}

/// Adds `request_units` to the current scope's total; outside a scope it does nothing.
pub fn record(request_units: f64) {
    let _ = CHARGE.try_with(|total| {
        *total
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) += request_units;
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn sums_charges_within_a_scope_only() {
        record(5.0); // outside any scope: ignored
        let ((), total) = measure(async {
            record(1.5);
            record(2.25);
        })
        .await;
        assert_eq!(total, 3.75);
    }
}
