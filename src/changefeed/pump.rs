//! The standalone change-feed pump: for each source container, read the change
//! log from the persisted checkpoint, run the handler, and only then advance the checkpoint.
//! A crash between the two replays the batch; the handlers are idempotent, so nothing shows
//! twice and nothing is skipped. Checkpoints live in the `leases` container, like the leases
//! of the Functions trigger.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tracing::Instrument;
use tracing::instrument::WithSubscriber;

use crate::copies::{Report, Source};
use crate::retry::Backoff;
use crate::store::{
    Checkpoint, Container, PartitionKey, Store, StoreResult, charge, read_text_field,
};
use crate::telemetry::{self, metrics};

/// Documents handed to a handler at once (the Functions trigger's default `maxItemsPerInvocation`
/// is unbounded; 100 keeps one batch's retry cheap).
const BATCH_SIZE: usize = 100;
/// How often (ms) an idle pump looks at a change log by default. A write of this process
/// wakes it at once (both stores); the poll is how it sees the writes of other processes:
/// other instances on one Cosmos DB account, or a command writing the embedded file.
pub const DEFAULT_POLL_MS: u64 = 500;

/// The pump's checkpoint of `source` in `leases`, apart from the triggers' and the re-check's.
pub(super) fn lease_id(source: Source) -> String {
    format!("standalone.{}", source.container().name())
}

/// The running pump; dropping it does not stop it, [`Pump::stop`] does.
pub struct Pump {
    tasks: Vec<JoinHandle<()>>,
}

impl Pump {
    /// Starts a task per source, logging and tracing to the current subscriber; an idle task
    /// looks at its change log every `poll`, or at once when this process writes to it.
    pub fn start(store: Arc<dyn Store>, poll: Duration) -> Self {
        let tasks = Source::ALL
            .into_iter()
            .map(|source| {
                tokio::spawn(run(Arc::clone(&store), source, poll).with_current_subscriber())
            })
            .collect();
        Self { tasks }
    }

    /// Stops at the next await point. Whatever was handled but not yet checkpointed is
    /// handled again on the next start, which the idempotent handlers make harmless.
    pub async fn stop(self) {
        for task in &self.tasks {
            task.abort();
        }
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

async fn run(store: Arc<dyn Store>, source: Source, poll: Duration) {
    let container = source.container();
    let mut checkpoint = loop {
        match load_checkpoint(&store, &lease_id(source)).await {
            Ok(checkpoint) => break checkpoint,
            Err(e) => {
                tracing::warn!(source = source.function_name(), error = %e, "cannot read checkpoint; retrying");
                tokio::time::sleep(poll).await;
            }
        }
    };
    let mut backoff = retry_policy();
    loop {
        match step(&store, source, checkpoint.as_ref()).await {
            Ok(Some(next)) => {
                checkpoint = Some(next);
                backoff = retry_policy();
            }
            Ok(None) => store.wait_for_changes(container, poll).await,
            Err(e) => {
                let delay = backoff.next().unwrap_or(Duration::from_secs(30));
                tracing::warn!(
                    source = source.function_name(),
                    error = %e,
                    retry_in_ms = delay.as_millis() as u64,
                    "change-feed batch failed; it will be retried"
                );
                tokio::time::sleep(delay).await;
            }
        }
    }
}

/// Retries forever, backing off to 30 s between attempts: the pump must never skip a batch.
pub(super) fn retry_policy() -> impl Iterator<Item = Duration> {
    Backoff::new(Duration::from_millis(50), Duration::from_secs(30)).delays()
}

/// Handles the next batch, if any, and persists the checkpoint after it. Returns the new
/// checkpoint, or `None` when there was nothing to do.
async fn step(
    store: &Arc<dyn Store>,
    source: Source,
    checkpoint: Option<&Checkpoint>,
) -> StoreResult<Option<Checkpoint>> {
    let batch = store
        .read_changes(source.container(), checkpoint, BATCH_SIZE)
        .await?;
    if batch.items.is_empty() {
        // Some stores move the position even on an empty read; keep it if so.
        if checkpoint != Some(&batch.checkpoint) {
            save_checkpoint(store, &lease_id(source), &batch.checkpoint).await?;
            return Ok(Some(batch.checkpoint));
        }
        return Ok(None);
    }
    let span = telemetry::batch_span(
        source.function_name(),
        source.container().name(),
        batch.items.len(),
    );
    async {
        let report = handle_batch(store, source, &batch.items).await?;
        tracing::debug!(
            source = source.function_name(),
            processed = report.processed,
            written = report.written,
            skipped = report.skipped.len(),
            "change-feed batch handled"
        );
        save_checkpoint(store, &lease_id(source), &batch.checkpoint).await?;
        Ok(Some(batch.checkpoint))
    }
    .instrument(span)
    .await
}

/// Runs the handler on a batch and records the batch's RU and the source's lag.
async fn handle_batch(
    store: &Arc<dyn Store>,
    source: Source,
    documents: &[Value],
) -> StoreResult<Report> {
    let handler = source.function_name();
    let (report, request_units) = charge::measure(source.handle(store, documents)).await;
    let report = report?;
    metrics::record_operation_charge(handler, request_units);
    metrics::record_change_feed_lag(source.container().name(), handler, documents);
    Ok(report)
}

/// The checkpoint kept in the lease `id` of `leases`, if there is one.
pub(super) async fn load_checkpoint(
    store: &Arc<dyn Store>,
    id: &str,
) -> StoreResult<Option<Checkpoint>> {
    read_text_field(&**store, Container::Leases, id, "continuation")
        .await
        .map(|continuation| continuation.map(Checkpoint))
}

/// Keeps `checkpoint` in the lease `id` of `leases`.
pub(super) async fn save_checkpoint(
    store: &Arc<dyn Store>,
    id: &str,
    checkpoint: &Checkpoint,
) -> StoreResult<()> {
    let lease = json!({ "id": id, "continuation": checkpoint.0 });
    store
        .upsert_item(Container::Leases, &PartitionKey::single(id), lease)
        .await
        .map(|_| ())
}
