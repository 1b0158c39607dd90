//! Writes to one logical partition as transactional batches, each operation labelled for
//! the handler's report.

use std::sync::Arc;

use super::shared::{Report, settle};
use crate::store::{
    BatchOperation, Container, MAX_BATCH_OPERATIONS, PartitionKey, Store, StoreError, StoreResult,
};

/// Writes to one logical partition, run as transactional batches of at most
/// [`MAX_BATCH_OPERATIONS`]; each operation is labelled for the report.
pub(super) struct PartitionWrite {
    pub(super) container: Container,
    pub(super) pk: PartitionKey,
    pub(super) operations: Vec<(String, BatchOperation)>,
}

impl PartitionWrite {
    /// A transient failure fails the whole write (the change-feed batch is delivered again);
    /// an operation the store refuses for good is reported and its batch runs again without
    /// it, and a delete of what is already gone (another handler trimmed it) is done.
    pub(super) async fn run(self, store: &Arc<dyn Store>) -> StoreResult<Report> {
        let mut report = Report::default();
        let mut operations = self.operations.into_iter().peekable();
        while operations.peek().is_some() {
            let mut chunk: Vec<_> = operations.by_ref().take(MAX_BATCH_OPERATIONS).collect();
            while !chunk.is_empty() {
                let batch = chunk.iter().map(|(_, op)| op.clone()).collect();
                match store.execute_batch(self.container, &self.pk, batch).await {
                    Ok(_) => {
                        report.written += chunk.len();
                        break;
                    }
                    Err(e) if e.is_transient() => return Err(e),
                    Err(StoreError::BatchOperationFailed { index, cause })
                        if index < chunk.len() =>
                    {
                        let (what, operation) = chunk.remove(index);
                        if !(is_delete(&operation) && matches!(*cause, StoreError::NotFound)) {
                            settle(Err(*cause), what, &mut report)?;
                        }
                    }
                    Err(e) => {
                        for (what, _) in chunk.drain(..) {
                            settle(Err(e.clone()), what, &mut report)?;
                        }
                    }
                }
            }
        }
        Ok(report)
    }
}

fn is_delete(operation: &BatchOperation) -> bool {
    matches!(operation, BatchOperation::Delete { .. })
}
