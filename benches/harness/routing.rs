//! Where the Cosmos DB SDK sends a query: the in-memory emulator with a chosen number of
//! physical partitions per container, and an observer of the requests it receives. A query
//! across all partitions goes to every physical partition (one request each, or more with
//! paging); a query on a hierarchical key's prefix only to those whose range holds the
//! prefix; a query in one logical partition to the one holding the key. The embedded store
//! has no physical partitions, so this is where the layouts' routing shows.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use azure_core::http::Request;
use azure_core::http::headers::HeaderName;
use cosmos_blog::store::cosmos::CosmosStore;
use cosmos_blog::store::{Container, Store, Tenancy};

use testkit::emulator::{
    ContainerConfig, DATABASE, InMemoryEmulatorHttpClient, RequestObserver, account_config,
    client_of,
};

const IS_QUERY: HeaderName = HeaderName::from_static("x-ms-documentdb-isquery");
const IS_QUERY_PLAN: HeaderName = HeaderName::from_static("x-ms-cosmos-is-query-plan-request");
const RANGE_ID: HeaderName = HeaderName::from_static("x-ms-documentdb-partitionkeyrangeid");
const PARTITION_KEY: HeaderName = HeaderName::from_static("x-ms-documentdb-partitionkey");

/// The query requests since the last [`QueryRouting::take`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Routed {
    /// Query requests the SDK sent (query plans not counted).
    pub query_requests: u64,
    /// Distinct physical partitions (partition key ranges) they were sent to; a request
    /// that names only a full partition key counts as the one partition holding it.
    pub physical_partitions: u64,
}

/// Counts the emulator's query requests and the physical partitions they address.
#[derive(Debug, Default)]
pub struct QueryRouting {
    seen: Mutex<(u64, HashSet<String>)>,
}

impl QueryRouting {
    pub fn take(&self) -> Routed {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let (requests, targets) = std::mem::take(&mut *seen);
        Routed {
            query_requests: requests,
            physical_partitions: targets.len() as u64,
        }
    }
}

impl RequestObserver for QueryRouting {
    fn on_request(&self, request: &Request) {
        let headers = request.headers();
        let flag = |name: &HeaderName| {
            headers
                .get_optional_str(name)
                .is_some_and(|v| v.eq_ignore_ascii_case("true"))
        };
        if !flag(&IS_QUERY) || flag(&IS_QUERY_PLAN) {
            return;
        }
        let container = request
            .url()
            .path()
            .split('/')
            .skip_while(|segment| *segment != "colls")
            .nth(1)
            .unwrap_or_default()
            .to_owned();
        let target = match (
            headers.get_optional_str(&RANGE_ID),
            headers.get_optional_str(&PARTITION_KEY),
        ) {
            (Some(range), _) => format!("{container} range {range}"),
            (None, Some(key)) => format!("{container} key {key}"),
            (None, None) => format!("{container} unrouted"),
        };
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.0 += 1;
        seen.1.insert(target);
    }
}

/// A [`CosmosStore`] of the `tenancy` layout on a fresh in-memory account whose containers
/// have `partitions` physical partitions each; `routing` sees every request.
pub async fn partitioned_store(
    tenancy: Tenancy,
    partitions: u32,
    routing: Arc<QueryRouting>,
) -> anyhow::Result<Arc<dyn Store>> {
    let emulator =
        Arc::new(InMemoryEmulatorHttpClient::new(account_config()).with_request_observer(routing));
    let accounts = emulator.store();
    accounts.create_database(DATABASE);
    for container in Container::ALL {
        let paths = container.key_paths(tenancy);
        let kind = if paths.len() > 1 { "MultiHash" } else { "Hash" };
        let definition = serde_json::from_value(serde_json::json!({
            "paths": paths, "kind": kind, "version": 2
        }))?;
        let config = ContainerConfig::new()
            .with_partition_count(partitions)
            .build()
            .map_err(|e| anyhow::anyhow!("emulator container config: {e}"))?;
        accounts.create_container_with_config(DATABASE, container.name(), definition, config);
    }
    let client = client_of(emulator.runtime_builder().into(), None).await;
    Ok(Arc::new(
        CosmosStore::from_client_with(client, DATABASE, tenancy).await?,
    ))
}
