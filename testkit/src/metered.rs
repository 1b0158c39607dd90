//! A [`Store`] wrapper that meters what the code above it asks of the store: requests,
//! logical partitions touched, items and bytes returned, and the request units the backend
//! charged. It makes the shape of an access pattern visible on any backend — the embedded
//! store reports no RU, but "one request to one logical partition" is checkable everywhere —
//! so benchmarks, diagnostics and tests can compare data models by what they cost.
//!
//! Counting is per [`MeteredStore`]; take a [`Metrics`] snapshot with [`MeteredStore::take`]
//! around the work to measure (sequentially: concurrent callers share the counters). Only
//! tests and the benchmark harness measure this way (the server's own accounting is the
//! traced store's), so it lives with their support.

use std::collections::HashSet;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;

use cosmos_blog::store::layer::{LayerCall, Layered, StoreAnswer, StoreLayer};
use cosmos_blog::store::{
    Container, JsonPage, PartitionKey, QueryScope, Store, StoreResult, Tenancy,
};

/// What the store was asked for since the last [`MeteredStore::take`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metrics {
    /// Calls that would each be one round trip to Cosmos DB (a batch is one).
    pub requests: u64,
    /// Distinct logical partitions (container, key) addressed, plus, for cross-partition
    /// queries and change-log reads, the partitions of the items they returned.
    pub partitions: u64,
    /// Cross-partition queries: Cosmos DB fans these out to every physical partition, so
    /// `partitions` is a lower bound of what they touched.
    pub fan_out_queries: u64,
    /// Queries on a hierarchical key's prefix (a tenant): Cosmos DB routes them only to the
    /// physical partitions holding the prefix; `partitions` counts the logical ones returned.
    pub prefix_queries: u64,
    /// Items returned by reads, queries and change-log reads.
    pub items_read: u64,
    /// Size of those items as compact JSON.
    pub bytes_read: u64,
    /// Items sent by writes (each operation of a batch counts).
    pub items_written: u64,
    /// Request units charged, when the backend reports them (Cosmos DB); `None` otherwise.
    pub request_units: Option<f64>,
}

#[derive(Default)]
struct Counters {
    metrics: Metrics,
    partitions: HashSet<(Container, String)>,
}

impl Counters {
    fn touch(&mut self, container: Container, pk: &PartitionKey) {
        self.partitions.insert((container, pk.to_json_array()));
    }

    fn touch_items<'a>(
        &mut self,
        container: Container,
        tenancy: Tenancy,
        items: impl Iterator<Item = &'a Value>,
    ) {
        for key in container.partition_keys_in(tenancy, items) {
            self.partitions.insert((container, key));
        }
    }

    fn returned(&mut self, answer: &StoreAnswer) {
        self.metrics.items_read += answer.item_count() as u64;
        self.metrics.bytes_read += match answer {
            StoreAnswer::JsonPage(JsonPage::Read { page, .. })
            | StoreAnswer::ReadJson(JsonPage::Read { page, .. }) => {
                page.items.iter().map(|raw| raw.get().len() as u64).sum()
            }
            StoreAnswer::JsonPage(JsonPage::Unchanged { .. })
            | StoreAnswer::ReadJson(JsonPage::Unchanged { .. }) => 0,
            other => other.items().iter().map(json_len).sum::<u64>(),
        };
    }
}

/// Wraps a store and counts every call made through it ([`meter`] makes one).
pub type MeteredStore = Layered<Meter>;

/// `inner` behind a [`MeteredStore`], its counters at zero.
pub fn meter(inner: Arc<dyn Store>) -> MeteredStore {
    Layered::over(inner, Meter::default())
}

/// The counting of a [`MeteredStore`].
#[derive(Clone, Default)]
pub struct Meter {
    counters: Arc<Mutex<Counters>>,
}

impl Meter {
    /// The metrics so far, without resetting them.
    pub fn snapshot(&self) -> Metrics {
        let counters = self.lock();
        Metrics {
            partitions: counters.partitions.len() as u64,
            ..counters.metrics.clone()
        }
    }

    /// The metrics so far; the counters start again from zero.
    pub fn take(&self) -> Metrics {
        let mut counters = self.lock();
        let metrics = Metrics {
            partitions: counters.partitions.len() as u64,
            ..counters.metrics.clone()
        };
        *counters = Counters::default();
        metrics
    }

    fn lock(&self) -> MutexGuard<'_, Counters> {
        self.counters
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl StoreLayer for Meter {
    /// Runs one store call, counting it as a request and collecting its RU charge, which is
    /// passed on to the caller's own accounting scope (the HTTP layer's, a traced call's)
    /// unchanged.
    async fn call(&self, call: LayerCall<'_>) -> StoreResult<StoreAnswer> {
        let (container, request) = (call.container, &call.request);
        let tenancy = call.inner.tenancy();
        let written = request.items().count() as u64;
        let scope = request.scope();
        // The one partition the call addresses; without one (a query across partitions or on
        // a prefix, a change-log read), the partitions of what it returns.
        let addressed = match scope {
            Some(QueryScope::Partition(pk)) => Some(pk),
            Some(QueryScope::CrossPartition | QueryScope::Prefix(_)) => None,
            None => request.partition(),
        };
        let (result, exchange) = call.send_measured().await;
        let mut counters = self.lock();
        let c = &mut *counters;
        c.metrics.requests += 1;
        if exchange.request_units > 0.0 {
            *c.metrics.request_units.get_or_insert(0.0) += exchange.request_units;
        }
        c.metrics.items_written += written;
        match scope {
            Some(QueryScope::CrossPartition) => c.metrics.fan_out_queries += 1,
            Some(QueryScope::Prefix(_)) => c.metrics.prefix_queries += 1,
            _ => {}
        }
        match (addressed, &result) {
            (Some(pk), _) => c.touch(container, pk),
            (None, Ok(answer)) => {
                let documents = answer.documents()?;
                c.touch_items(container, tenancy, documents.iter());
            }
            (None, Err(_)) => {}
        }
        if let Ok(answer) = &result {
            c.returned(answer);
        }
        result
    }
}

/// Length of the compact JSON text of `value`, without building the text.
fn json_len(value: &Value) -> u64 {
    struct Count(u64);
    impl io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}
