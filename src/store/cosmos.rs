//! The Azure Cosmos DB store, on the official SDK (`azure_data_cosmos`).
//!
//! It keeps the semantics of the embedded store (see `embedded.rs`): items are read without
//! system properties; writes check that the item belongs to the partition addressed; a
//! transactional batch either commits whole or fails naming its first failing operation;
//! queries are parameterised and paged with the SDK's continuation tokens; the change feed is
//! the container's "latest version" feed, resumed from the SDK's continuation token.
//!
//! Every response's request charge, attempts and status go to [`charge::report`], so the HTTP
//! layer can report the RU cost of each request, and each store call's span its own.

use std::time::{Duration, Instant};

use anyhow::Context;
use async_trait::async_trait;
use azure_core::credentials::{Secret, TokenCredential};
use azure_core::http::{Etag, StatusCode};
use azure_data_cosmos::clients::ContainerClient;
use azure_data_cosmos::diagnostics::DiagnosticsContext;
use azure_data_cosmos::feed::{ContinuationToken, FeedScope};
use azure_data_cosmos::models::{
    ChangeFeedItem, ContainerProperties, ItemResponse, TimeToLive, TransactionalBatchResponse,
};
use azure_data_cosmos::options::{
    BatchReplaceOptions, BinaryEncodingOptions, ChangeFeedOptions, ChangeFeedStartFrom,
    ConnectionPoolOptions, ItemWriteOptions, MaxItemCountHint, OperationOptions,
    OperationOptionsBuilder, Precondition, QueryOptions, Region, ServerCertificateValidation,
    ThrottlingRetryOptionsBuilder,
};
use azure_data_cosmos::{
    AccountEndpoint, AccountReference, CosmosClient, CosmosClientBuilder, CosmosError,
    CosmosRuntimeBuilder, RoutingStrategy, TransactionalBatch,
};
use backon::Retryable;
use futures::StreamExt;
use serde_json::{Value, json};

use super::settings::StoreSettings;
use super::{
    BatchOperation, ChangeBatch, Checkpoint, Container, Document, ETag, MAX_BATCH_OPERATIONS, Page,
    PageRequest, PartitionKey, PartitionKeyValue, Query, QueryScope, RawItem, Store, StoreError,
    StoreResult, Tenancy, charge, checked_item, strip_system_properties,
};
use crate::retry::Backoff;

/// The service caps a page at this many items whatever the caller asks.
const MAX_PAGE_ITEMS: u32 = 1_000;
/// Functions app setting naming the client id of a user-assigned managed identity (the
/// Functions convention for identity-based connections).
const CLIENT_ID_SETTING: &str = "CosmosDBConnection__clientId";

/// A Cosmos DB database holding the four containers. Cheap to clone: the SDK clients share
/// one connection pool.
#[derive(Clone)]
pub struct CosmosStore {
    /// In the order of [`Container::ALL`].
    containers: [ContainerClient; 4],
    tenancy: Tenancy,
}

impl CosmosStore {
    /// Connects with the settings' connection string (account key, the emulator included) or,
    /// failing that, the account endpoint with Microsoft Entra ID, then prepares the database.
    pub async fn connect(settings: &StoreSettings) -> anyhow::Result<Self> {
        let client = if let Some(connection) = &settings.cosmos_connection {
            let (endpoint, key) = parse_connection_string(connection)?;
            let account = AccountReference::with_authentication_key(
                endpoint
                    .parse::<AccountEndpoint>()
                    .with_context(|| format!("invalid AccountEndpoint {endpoint:?}"))?,
                Secret::new(key),
            );
            build_client(account, is_local(&endpoint)).await?
        } else if let Some(endpoint) = &settings.cosmos_endpoint {
            let account = AccountReference::with_credential(
                endpoint
                    .parse::<AccountEndpoint>()
                    .with_context(|| format!("invalid Cosmos DB endpoint {endpoint:?}"))?,
                entra_credential()?,
            );
            build_client(account, is_local(endpoint)).await?
        } else {
            anyhow::bail!(
                "no Cosmos DB setting: give CosmosDBConnection or CosmosDBConnection__accountEndpoint"
            );
        };
        Self::from_client_with(client, &settings.database, settings.tenancy).await
    }

    /// Uses `client` (any account, the SDK's in-memory emulator included), creating the
    /// database and the containers when missing and checking their partition keys.
    pub async fn from_client(client: CosmosClient, database: &str) -> anyhow::Result<Self> {
        Self::from_client_with(client, database, Tenancy::Single).await
    }

    /// [`Self::from_client`] in the `tenancy` layout: containers of the other layout are
    /// refused.
    pub async fn from_client_with(
        client: CosmosClient,
        database: &str,
        tenancy: Tenancy,
    ) -> anyhow::Result<Self> {
        let mut containers = Vec::with_capacity(Container::ALL.len());
        for container in Container::ALL {
            containers.push(prepare_container(&client, database, container, tenancy).await?);
        }
        let containers: [ContainerClient; 4] = containers
            .try_into()
            .map_err(|_| anyhow::anyhow!("expected one client per container"))?;
        tracing::info!(database, %tenancy, "using Azure Cosmos DB");
        Ok(Self {
            containers,
            tenancy,
        })
    }

    fn client(&self, container: Container) -> &ContainerClient {
        let index = Container::ALL
            .iter()
            .position(|c| *c == container)
            .unwrap_or(0);
        &self.containers[index]
    }
}

/// `AccountEndpoint=...;AccountKey=...;` (key order free, other keys ignored).
fn parse_connection_string(connection: &str) -> anyhow::Result<(String, String)> {
    let mut endpoint = None;
    let mut key = None;
    for part in connection
        .split(';')
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        // Keys are base64 and end with '=': split at the first '=' only.
        let Some((name, value)) = part.split_once('=') else {
            anyhow::bail!("malformed Cosmos DB connection string: expected name=value pairs");
        };
        if name.trim().eq_ignore_ascii_case("AccountEndpoint") {
            endpoint = Some(value.trim().to_owned());
        } else if name.trim().eq_ignore_ascii_case("AccountKey") {
            key = Some(value.trim().to_owned());
        }
    }
    match (endpoint, key) {
        (Some(endpoint), Some(key)) if !endpoint.is_empty() && !key.is_empty() => {
            Ok((endpoint, key))
        }
        // Never echo the string: it holds the key.
        _ => anyhow::bail!(
            "the Cosmos DB connection string needs AccountEndpoint=...;AccountKey=...; \
             (for Microsoft Entra ID set CosmosDBConnection__accountEndpoint instead)"
        ),
    }
}

/// The SDK's own switch for Cosmos binary JSON; when the user sets it, it wins.
const BINARY_ENCODING_SETTING: &str = "AZURE_COSMOS_BINARY_ENCODING_ENABLED";

/// Binary JSON on the wire is the SDK's default, but the Linux (vNext) emulator refuses it:
/// for an emulator endpoint the client speaks text JSON unless the user chose otherwise with
/// the SDK's own variable. An account in Azure keeps the SDK's default.
fn binary_encoding_for(local: bool, user_choice: Option<&str>) -> Option<BinaryEncodingOptions> {
    (local && user_choice.is_none()).then(|| BinaryEncodingOptions::new().with_enabled(false))
}

/// The emulator listens on localhost with a self-signed certificate.
fn is_local(endpoint: &str) -> bool {
    azure_core::http::Url::parse(endpoint)
        .ok()
        .and_then(|url| url.host_str().map(str::to_owned))
        .is_some_and(|host| matches!(host.as_str(), "localhost" | "127.0.0.1" | "[::1]"))
}

/// Managed identity under Azure (user-assigned when `CosmosDBConnection__clientId` names
/// one), the developer's own sign-in elsewhere.
fn entra_credential() -> anyhow::Result<std::sync::Arc<dyn TokenCredential>> {
    crate::platform::azure_credential(std::env::var(CLIENT_ID_SETTING).ok())
}

async fn build_client(account: AccountReference, local: bool) -> anyhow::Result<CosmosClient> {
    // The store's retry budget (see `sdk_operation_options`) applies to every request.
    let mut runtime =
        CosmosRuntimeBuilder::new().with_default_operation_options(sdk_operation_options());
    if local {
        // The emulator's certificate is self-signed; the SDK relaxes validation only for
        // emulator hosts (localhost), never for an account on the internet.
        let pool = ConnectionPoolOptions::builder()
            .with_server_certificate_validation(ServerCertificateValidation::RequiredUnlessEmulator)
            .build()
            .context("invalid connection pool options")?;
        runtime = runtime.with_connection_pool(pool);
    }
    let runtime = runtime
        .build()
        .await
        .context("cannot start the Cosmos DB runtime")?;
    let mut builder = CosmosClientBuilder::new().with_runtime(runtime);
    let user_choice = std::env::var(BINARY_ENCODING_SETTING).ok();
    if let Some(encoding) = binary_encoding_for(local, user_choice.as_deref()) {
        builder = builder.with_binary_encoding_options(encoding);
    }
    // Under Azure Functions REGION_NAME is the app's region: prefer the account's nearest
    // region to it. Elsewhere the account's own region order applies.
    let routing = match std::env::var("REGION_NAME") {
        Ok(region) if !region.trim().is_empty() => {
            RoutingStrategy::ProximityTo(Region::from(region))
        }
        _ => RoutingStrategy::PreferredRegions(Vec::new()),
    };
    builder
        .build(account, routing)
        .await
        .context("cannot connect to Azure Cosmos DB")
}

/// The container's indexing policy: everything the queries filter or sort on is indexed by
/// default; the long texts are not (nothing queries them and indexing them costs RU on every
/// write); composite indexes serve "items of a type, newest/oldest first" (Q3, Q4, Q5, Q6).
fn indexing_policy(container: Container) -> Value {
    match container {
        Container::Leases => json!({
            "indexingMode": "consistent",
            "automatic": true,
            "includedPaths": [{"path": "/*"}],
            "excludedPaths": [{"path": "/\"_etag\"/?"}]
        }),
        _ => json!({
            "indexingMode": "consistent",
            "automatic": true,
            "includedPaths": [{"path": "/*"}],
            "excludedPaths": [
                {"path": "/content/?"},
                {"path": "/title/?"},
                {"path": "/\"_etag\"/?"}
            ],
            "compositeIndexes": [
                [{"path": "/type", "order": "ascending"}, {"path": "/creationDate", "order": "descending"}],
                [{"path": "/type", "order": "ascending"}, {"path": "/creationDate", "order": "ascending"}]
            ]
        }),
    }
}

fn container_properties(
    container: Container,
    tenancy: Tenancy,
) -> anyhow::Result<ContainerProperties> {
    let paths = container.key_paths(tenancy);
    let definition = if paths.len() > 1 {
        json!({"paths": paths, "kind": "MultiHash", "version": 2})
    } else {
        json!({"paths": paths, "kind": "Hash", "version": 2})
    };
    let mut properties: ContainerProperties = serde_json::from_value(json!({
        "id": container.name(),
        "partitionKey": definition,
        "indexingPolicy": indexing_policy(container),
    }))
    .context("invalid container definition")?;
    if container.expires_items() {
        properties.default_ttl = TimeToLive::NoDefault;
    }
    Ok(properties)
}

/// Turns time-to-live on ("on, no default": only items with a `ttl` expire) in a container
/// created before deletes existed, so that its tombstones are purged. Changing the default
/// time-to-live is allowed on an existing container; it touches no item.
async fn enable_time_to_live(
    opened: &ContainerClient,
    mut properties: ContainerProperties,
    database: &str,
    container: Container,
) -> anyhow::Result<()> {
    if !container.expires_items() || properties.default_ttl != TimeToLive::Forever {
        return Ok(());
    }
    let name = container.name();
    properties.default_ttl = TimeToLive::NoDefault;
    opened.replace(properties, None).await.with_context(|| {
        format!(
            "cannot turn on time-to-live in container {database}/{name} (needed to purge \
             deleted items); set defaultTtl -1 with the infrastructure templates or the Azure CLI"
        )
    })?;
    tracing::info!(database, container = name, "turned on time-to-live");
    Ok(())
}

/// Opens `container`, creating it (and the database) when missing, and checks that it is
/// partitioned as the data model requires: a wrong key would make every write fail.
async fn prepare_container(
    client: &CosmosClient,
    database: &str,
    container: Container,
    tenancy: Tenancy,
) -> anyhow::Result<ContainerClient> {
    let name = container.name();
    let db = client.database_client(database);
    let opened = match db.container_client(name, None).await {
        Ok(opened) => opened,
        Err(e) if e.status().status_code() == StatusCode::NotFound => {
            create_container(client, database, container, tenancy).await?;
            db.container_client(name, None).await.with_context(|| {
                format!("cannot open container {database}/{name} after creating it")
            })?
        }
        Err(e) => {
            return Err(anyhow::Error::new(e))
                .with_context(|| format!("cannot open container {database}/{name}"));
        }
    };
    let properties: ContainerProperties = opened
        .read(None)
        .await
        .and_then(|response| response.into_model())
        .with_context(|| format!("cannot read the definition of container {database}/{name}"))?;
    let actual: Vec<&str> = properties
        .partition_key
        .paths()
        .iter()
        .map(|p| p.as_ref())
        .collect();
    let expected = container.key_paths(tenancy);
    if actual != expected {
        let other = match tenancy {
            Tenancy::Single => Tenancy::Multi,
            Tenancy::Multi => Tenancy::Single,
        };
        let layout = if actual == container.key_paths(other) {
            format!(" (the {other} layout)")
        } else {
            String::new()
        };
        anyhow::bail!(
            "container {database}/{name} is partitioned by {actual:?}{layout} but BLOG_TENANCY={tenancy} \
             needs {expected:?}; a container's partition key cannot be changed: set BLOG_TENANCY to \
             the layout the database was created with, or use another database (COSMOS_DATABASE)"
        );
    }
    enable_time_to_live(&opened, properties, database, container).await?;
    Ok(opened)
}

async fn create_container(
    client: &CosmosClient,
    database: &str,
    container: Container,
    tenancy: Tenancy,
) -> anyhow::Result<()> {
    let hint = "with Microsoft Entra ID, data-plane roles cannot create databases or containers: \
                create them with the infrastructure templates (infra/) or the Azure CLI";
    match client.create_database(database, None).await {
        Ok(_) => tracing::info!(database, "created the Cosmos DB database"),
        // Created meanwhile by another instance, or existing already.
        Err(e) if e.status().status_code() == StatusCode::Conflict => {}
        Err(e) if e.status().status_code() == StatusCode::Forbidden => {
            return Err(anyhow::Error::new(e))
                .with_context(|| format!("cannot create database {database} ({hint})"));
        }
        Err(e) => {
            return Err(anyhow::Error::new(e))
                .with_context(|| format!("cannot create database {database}"));
        }
    }
    let name = container.name();
    match client
        .database_client(database)
        .create_container(container_properties(container, tenancy)?, None)
        .await
    {
        Ok(_) => {
            tracing::info!(
                database,
                container = name,
                "created the Cosmos DB container"
            );
            Ok(())
        }
        Err(e) if e.status().status_code() == StatusCode::Conflict => Ok(()),
        Err(e) if e.status().status_code() == StatusCode::Forbidden => Err(anyhow::Error::new(e))
            .with_context(|| format!("cannot create container {database}/{name} ({hint})")),
        Err(e) => Err(anyhow::Error::new(e))
            .with_context(|| format!("cannot create container {database}/{name}")),
    }
}

// ---- faults: what the SDK retries, what this store retries ------------------------------------
//
// The SDK (azure_data_cosmos_driver 1.1.0-beta.1) retries inside every request:
// - 429 in its transport loop, waiting the service's `x-ms-retry-after-ms` (or 5 ms doubling,
//   ±25 % jitter, without one), by default up to 18 times and 270 s; bounded here by
//   [`sdk_operation_options`] to [`THROTTLE_RETRIES`] times and [`THROTTLE_WAIT`] in all, so a
//   request the service keeps throttling fails in seconds, as a 429 with `Retry-After`;
// - 408, 503, 410 (not 410/1002 partition splits, which it re-routes), 500 on reads, and
//   transport failures (connection refused, no answer): up to 3 more attempts ("failover
//   retries", `max_failover_retry_count`), at once, without a delay. Writes are retried too,
//   after an answer that was lost (`allows_ambiguous_outcome_retry` is true for creates,
//   upserts, replaces, deletes and batches: only stored procedures and PATCH are spared);
// - 449 (retry with): from 10 ms doubling to 1 s, for up to 30 s.
//
// Those failover retries come back to back, so a stretch of unavailability longer than a
// few milliseconds outlasts them. This store adds the waiting: [`retrying`] repeats a request
// that failed as `Unavailable` (408, 410, 449, 503, transport) with exponential backoff, for
// up to about [`TRANSIENT_BUDGET`]; after that the caller gets the error (the API a 503). A
// 429 is the SDK's alone: it honours the service's delay, and a second loop here would only
// stretch what the client waits for before its own `Retry-After`.
//
// A write retried after its answer was lost may already have committed, by the SDK or here.
// The retry then meets its own effect: a create finds its item (409), a delete finds nothing
// (404), a replace or batch with If-Match finds a newer etag (412). Every caller that writes
// reads such an answer as "maybe mine" and checks the item (see `blog::combiner` for the
// counts, whose If-Match on the post makes each batch a compare-and-swap that commits once).

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
async fn retrying<T, F, Fut>(operation: &'static str, attempt: F) -> StoreResult<T>
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

// ---- mapping between the store's types and the SDK's ----------------------------------------

fn sdk_partition_key(pk: &PartitionKey) -> StoreResult<azure_data_cosmos::PartitionKey> {
    use azure_data_cosmos::models::PartitionKeyValue as SdkValue;
    let values = pk
        .values()
        .iter()
        .map(|value| match value {
            PartitionKeyValue::String(s) => Ok(SdkValue::from(s.clone())),
            PartitionKeyValue::Bool(b) => Ok(SdkValue::from(*b)),
            PartitionKeyValue::Null => Ok(azure_data_cosmos::PartitionKey::NULL),
            PartitionKeyValue::Number(n) => match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => Ok(SdkValue::from(i)),
                (None, Some(u)) => Ok(SdkValue::from(u)),
                _ => SdkValue::try_from(n.as_f64().unwrap_or(f64::NAN))
                    .map_err(|e| StoreError::BadRequest(format!("partition key: {e}"))),
            },
        })
        .collect::<StoreResult<Vec<_>>>()?;
    azure_data_cosmos::PartitionKey::try_from(values)
        .map_err(|e| StoreError::BadRequest(format!("partition key: {e}")))
}

fn if_match(etag: &ETag) -> Precondition {
    Precondition::IfMatch(Etag::from(etag.0.clone()))
}

fn etag_from(etag: Option<&Etag>) -> StoreResult<ETag> {
    etag.map(|e| ETag(e.to_string()))
        .ok_or_else(|| StoreError::Internal("the service returned no etag".into()))
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
fn observe(operation: &'static str, started: Instant, diagnostics: Option<&DiagnosticsContext>) {
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
async fn item_request<F, Fut>(operation: &'static str, request: F) -> StoreResult<ItemResponse>
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
fn failed(operation: &'static str, started: Instant, error: &CosmosError) -> StoreError {
    observe(operation, started, error.diagnostics().as_deref());
    let mapped = map_error(error);
    tracing::debug!(operation, error = %mapped, "cosmos request failed");
    mapped
}

fn write_options(precondition: Option<Precondition>) -> Option<ItemWriteOptions> {
    precondition.map(|p| ItemWriteOptions::default().with_precondition(p))
}

fn max_item_count(max_items: u32) -> MaxItemCountHint {
    let bounded = max_items.clamp(1, MAX_PAGE_ITEMS);
    std::num::NonZeroU32::new(bounded)
        .map(MaxItemCountHint::Limit)
        .unwrap_or(MaxItemCountHint::ServerDecides)
}

fn build_query(query: &Query) -> StoreResult<azure_data_cosmos::Query> {
    let (sql, params) = query.to_cosmos_sql();
    params
        .into_iter()
        .try_fold(azure_data_cosmos::Query::from(sql), |q, (name, value)| {
            q.with_parameter(name, value)
        })
        .map_err(|e| StoreError::BadRequest(format!("query parameter: {e}")))
}

fn scope_of(query: &Query) -> StoreResult<FeedScope> {
    Ok(match &query.scope {
        QueryScope::Partition(pk) => FeedScope::partition(sdk_partition_key(pk)?),
        QueryScope::CrossPartition => FeedScope::full_container(),
        // The SDK bounds a partial hierarchical key to its effective-partition-key range.
        QueryScope::Prefix(prefix) => FeedScope::partition(sdk_partition_key(prefix)?),
    })
}

/// The first failing operation of a batch response: the service answers 424 (failed
/// dependency) for the operations that did not run because another one failed.
fn first_failure(results: &TransactionalBatchResponse) -> Option<(usize, StoreError)> {
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

/// The item of a change, carrying its `_lsn` as the service's flat change feed does (the
/// structured format moves it into the change's metadata).
fn with_lsn(change: ChangeFeedItem<Value>) -> Option<Value> {
    let lsn = change
        .metadata()
        .and_then(|m| m.lsn())
        .map(|lsn| lsn.value());
    let mut item = change.current().cloned()?;
    if let (Value::Object(fields), Some(lsn)) = (&mut item, lsn) {
        fields.entry("_lsn").or_insert_with(|| Value::from(lsn));
    }
    Some(item)
}

#[async_trait]
impl Store for CosmosStore {
    fn backend(&self) -> &'static str {
        "cosmos"
    }

    fn tenancy(&self) -> Tenancy {
        self.tenancy
    }

    async fn read_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        id: &str,
    ) -> StoreResult<Option<Document>> {
        let key = sdk_partition_key(pk)?;
        let client = self.client(container);
        let request = || client.read_item(key.clone(), id, None);
        let response = match item_request("read_item", request).await {
            Ok(response) => response,
            Err(StoreError::NotFound) => return Ok(None),
            Err(e) => return Err(e),
        };
        let etag = etag_from(response.headers().etag())?;
        let mut item: Value = response
            .into_model()
            .map_err(|e| StoreError::Internal(format!("unreadable item: {e}")))?;
        strip_system_properties(&mut item);
        Ok(Some(Document { item, etag }))
    }

    async fn create_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        mut item: Value,
    ) -> StoreResult<ETag> {
        let id = checked_item(self.tenancy, container, pk, &mut item)?;
        let key = sdk_partition_key(pk)?;
        let client = self.client(container);
        let request = || client.create_item(key.clone(), &id, &item, None);
        let response = item_request("create_item", request).await?;
        etag_from(response.headers().etag())
    }

    async fn upsert_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        mut item: Value,
    ) -> StoreResult<ETag> {
        let id = checked_item(self.tenancy, container, pk, &mut item)?;
        let key = sdk_partition_key(pk)?;
        let client = self.client(container);
        let request = || client.upsert_item(key.clone(), &id, &item, None);
        let response = item_request("upsert_item", request).await?;
        etag_from(response.headers().etag())
    }

    async fn replace_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        mut item: Value,
        if_match_etag: Option<&ETag>,
    ) -> StoreResult<ETag> {
        let id = checked_item(self.tenancy, container, pk, &mut item)?;
        let key = sdk_partition_key(pk)?;
        let client = self.client(container);
        let request = || {
            let options = write_options(if_match_etag.map(if_match));
            client.replace_item(key.clone(), &id, &item, options)
        };
        let response = item_request("replace_item", request).await?;
        etag_from(response.headers().etag())
    }

    async fn delete_item(
        &self,
        container: Container,
        pk: &PartitionKey,
        id: &str,
    ) -> StoreResult<()> {
        let key = sdk_partition_key(pk)?;
        let client = self.client(container);
        let request = || client.delete_item(key.clone(), id, None);
        item_request("delete_item", request).await.map(|_| ())
    }

    async fn execute_batch(
        &self,
        container: Container,
        pk: &PartitionKey,
        operations: Vec<BatchOperation>,
    ) -> StoreResult<Vec<Option<ETag>>> {
        if operations.is_empty() {
            return Ok(Vec::new());
        }
        if operations.len() > MAX_BATCH_OPERATIONS {
            return Err(StoreError::BadRequest(format!(
                "a transactional batch holds at most {MAX_BATCH_OPERATIONS} operations, not {}",
                operations.len()
            )));
        }
        let count = operations.len();
        let deletes: Vec<bool> = operations
            .iter()
            .map(|op| matches!(op, BatchOperation::Delete { .. }))
            .collect();
        let mut batch = TransactionalBatch::new(sdk_partition_key(pk)?);
        for (index, operation) in operations.into_iter().enumerate() {
            // An invalid item fails the batch before anything is sent, naming it like the
            // service would.
            let fail = |cause: StoreError| StoreError::BatchOperationFailed {
                index,
                cause: Box::new(cause),
            };
            let sdk_error = |e: CosmosError| fail(StoreError::BadRequest(e.to_string()));
            batch = match operation {
                BatchOperation::Create { mut item } => {
                    checked_item(self.tenancy, container, pk, &mut item).map_err(fail)?;
                    batch.create_item(item).map_err(sdk_error)?
                }
                BatchOperation::Upsert { mut item } => {
                    checked_item(self.tenancy, container, pk, &mut item).map_err(fail)?;
                    batch.upsert_item(item, None).map_err(sdk_error)?
                }
                BatchOperation::Replace {
                    mut item,
                    if_match: etag,
                } => {
                    let id = checked_item(self.tenancy, container, pk, &mut item).map_err(fail)?;
                    let options = etag.map(|etag| {
                        BatchReplaceOptions::default().with_precondition(if_match(&etag))
                    });
                    batch.replace_item(id, item, options).map_err(sdk_error)?
                }
                BatchOperation::Delete { id } => batch.delete_item(id, None),
            };
        }

        let client = self.client(container);
        // A whole request that failed (throttled, unreachable) ran no operation, or, when its
        // answer was lost, all of them: see `retrying` for what a retry then meets.
        let response = retrying("execute_batch", || {
            let batch = batch.clone();
            async move {
                let started = Instant::now();
                match client.execute_transactional_batch(batch, None).await {
                    Ok(response) => {
                        observe("execute_batch", started, Some(&response.diagnostics()));
                        Ok(response)
                    }
                    Err(e) => Err(failed("execute_batch", started, &e)),
                }
            }
        })
        .await?;
        let http_status = u16::from(response.status().status_code());
        // The SDK answers Ok even when an operation failed: each result must be checked.
        let results = response
            .into_model()
            .map_err(|e| StoreError::Internal(format!("unreadable batch response: {e}")))?;
        if let Some((index, cause)) = first_failure(&results) {
            return Err(StoreError::BatchOperationFailed {
                index,
                cause: Box::new(cause),
            });
        }
        if !(200..300).contains(&http_status) || results.results().len() != count {
            return Err(StoreError::Internal(format!(
                "batch answered {http_status} with {} results for {count} operations",
                results.results().len()
            )));
        }
        // A delete leaves no item, hence no etag (the service may still send one).
        Ok(results
            .results()
            .iter()
            .zip(deletes)
            .map(|(r, delete)| r.etag().filter(|_| !delete).map(|e| ETag(e.to_owned())))
            .collect())
    }

    async fn query(
        &self,
        container: Container,
        query: &Query,
        page: PageRequest,
    ) -> StoreResult<Page<Value>> {
        let wanted = page.max_items.clamp(1, MAX_PAGE_ITEMS) as usize;
        let sdk_query = build_query(query)?;
        let scope = scope_of(query)?;
        let caller_token = page.continuation.is_some();
        let mut token = page.continuation.map(ContinuationToken::from_string);
        let mut items: Vec<Value> = Vec::with_capacity(wanted.min(128));
        // One page of the service may hold fewer items than asked (size or time budget, one
        // physical partition of many); ask again for the rest, from where it stopped, so the
        // page never holds more than asked and never loses its place.
        loop {
            let remaining = u32::try_from(wanted - items.len()).unwrap_or(MAX_PAGE_ITEMS);
            let fetched = retrying("query", || {
                self.query_page(container, &sdk_query, &scope, token.as_ref(), remaining)
            })
            .await
            .map_err(|e| match e {
                // A token the SDK cannot read is the caller's mistake.
                StoreError::Internal(why) if caller_token => StoreError::BadRequest(why),
                other => other,
            })?;
            let Some((fetched, next)) = fetched else {
                return Ok(Page {
                    items,
                    continuation: None,
                });
            };
            items.extend(fetched);
            if items.len() >= wanted {
                return Ok(Page {
                    items,
                    continuation: Some(next.as_str().to_owned()),
                });
            }
            token = Some(next);
        }
    }

    async fn query_json(
        &self,
        container: Container,
        query: &Query,
        page: PageRequest,
    ) -> StoreResult<Page<RawItem>> {
        let page = self.query(container, query, page).await?;
        Ok(Page {
            items: page
                .items
                .iter()
                .map(serde_json::value::to_raw_value)
                .collect::<Result<_, _>>()
                .map_err(|e| StoreError::Internal(format!("item does not serialise: {e}")))?,
            continuation: page.continuation,
        })
    }

    async fn read_changes(
        &self,
        container: Container,
        since: Option<&Checkpoint>,
        max_items: usize,
    ) -> StoreResult<ChangeBatch> {
        retrying("read_changes", || {
            self.read_changes_once(container, since, max_items)
        })
        .await
    }
}

impl CosmosStore {
    /// One page of the service for a query (items without system properties) and the token
    /// that resumes after it; `None` past the last page.
    async fn query_page(
        &self,
        container: Container,
        query: &azure_data_cosmos::Query,
        scope: &FeedScope,
        token: Option<&ContinuationToken>,
        max_items: u32,
    ) -> StoreResult<Option<(Vec<Value>, ContinuationToken)>> {
        let mut options = QueryOptions::default().with_max_item_count(max_item_count(max_items));
        if let Some(token) = token {
            options = options.with_continuation_token(token.clone());
        }
        let started = Instant::now();
        let mut pages = self
            .client(container)
            .query_items::<Value>(query.clone(), scope.clone(), Some(options))
            .await
            .map_err(|e| failed("query", started, &e))?
            .into_pages();
        let fetched = match pages.next().await {
            None => return Ok(None),
            Some(Err(e)) => return Err(failed("query", started, &e)),
            Some(Ok(fetched)) => fetched,
        };
        observe("query", started, Some(&fetched.diagnostics()));
        let items = fetched
            .into_items()
            .into_iter()
            .map(|mut item| {
                strip_system_properties(&mut item);
                item
            })
            .collect();
        let next = pages
            .to_continuation_token()
            .map_err(|e| StoreError::Internal(format!("no continuation token: {e}")))?;
        Ok(Some((items, next)))
    }

    /// One attempt of [`Store::read_changes`].
    async fn read_changes_once(
        &self,
        container: Container,
        since: Option<&Checkpoint>,
        max_items: usize,
    ) -> StoreResult<ChangeBatch> {
        let client = self.client(container);
        let started = Instant::now();
        // A poll of the feed visits one physical partition per page: read up to one round of
        // them before concluding that nothing changed.
        let ranges = match client.read_feed_ranges(None).await {
            Ok(ranges) => ranges.len().max(1),
            Err(e) => return Err(failed("read_feed_ranges", started, &e)),
        };
        let mut options = ChangeFeedOptions::default().with_max_item_count(max_item_count(
            u32::try_from(max_items).unwrap_or(MAX_PAGE_ITEMS),
        ));
        if let Some(Checkpoint(token)) = since {
            options =
                options.with_continuation_token(ContinuationToken::from_string(token.clone()));
        }
        let mut pages = match client
            .query_change_feed::<Value>(
                FeedScope::full_container(),
                ChangeFeedStartFrom::Beginning,
                Some(options),
            )
            .await
        {
            Ok(pages) => pages,
            Err(e) => {
                return Err(match failed("read_changes", started, &e) {
                    // A checkpoint the SDK cannot read is not a transient failure.
                    StoreError::Internal(why) if since.is_some() => StoreError::BadRequest(why),
                    other => other,
                });
            }
        };
        let mut items = Vec::new();
        for _ in 0..ranges {
            let started = Instant::now();
            match pages.next().await {
                // The feed is endless; the SDK reports its end as an error instead.
                None => break,
                Some(Err(e)) => return Err(failed("read_changes", started, &e)),
                Some(Ok(page)) => {
                    observe("read_changes", started, Some(&page.diagnostics()));
                    items.extend(page.into_items().into_iter().filter_map(with_lsn));
                }
            }
            if !items.is_empty() {
                break;
            }
        }
        let checkpoint = match since {
            // Nothing new: the old position is as good, and keeping it spares the caller a
            // checkpoint write per idle poll.
            Some(previous) if items.is_empty() => previous.clone(),
            _ => Checkpoint(
                pages
                    .to_continuation_token()
                    .map_err(|e| StoreError::Internal(format!("no change-feed checkpoint: {e}")))?
                    .as_str()
                    .to_owned(),
            ),
        };
        Ok(ChangeBatch { items, checkpoint })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_connection_strings_without_echoing_the_key() {
        let (endpoint, key) = parse_connection_string(
            "AccountEndpoint=https://localhost:8081/;AccountKey=C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==;",
        )
        .unwrap();
        assert_eq!(endpoint, "https://localhost:8081/");
        assert!(key.ends_with("Jw=="));
        assert!(is_local(&endpoint));
        assert!(!is_local("https://blog.documents.azure.com:443/"));

        let error = parse_connection_string("AccountEndpoint=https://x/;AccountKey=;")
            .unwrap_err()
            .to_string();
        assert!(error.contains("AccountKey"));
        let error = parse_connection_string("AccountKey=secret-value")
            .unwrap_err()
            .to_string();
        assert!(!error.contains("secret-value"));
    }

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

    #[test]
    fn converts_single_and_hierarchical_partition_keys() {
        assert_eq!(
            sdk_partition_key(&PartitionKey::single("a")).unwrap(),
            azure_data_cosmos::PartitionKey::from("a")
        );
        let key = PartitionKey::hierarchical(vec![
            PartitionKeyValue::String("tenant".into()),
            PartitionKeyValue::Number(7.into()),
            PartitionKeyValue::Bool(true),
        ])
        .unwrap();
        assert_eq!(sdk_partition_key(&key).unwrap().len(), 3);
    }

    #[test]
    fn container_definitions_carry_the_model_partition_keys() {
        for tenancy in [Tenancy::Single, Tenancy::Multi] {
            for container in Container::ALL {
                let properties = container_properties(container, tenancy).unwrap();
                let paths: Vec<&str> = properties
                    .partition_key
                    .paths()
                    .iter()
                    .map(|p| p.as_ref())
                    .collect();
                assert_eq!(paths, container.key_paths(tenancy));
                let definition = serde_json::to_value(&properties.partition_key).unwrap();
                let kind = if paths.len() > 1 { "MultiHash" } else { "Hash" };
                assert_eq!(definition["kind"], kind, "{container:?} in {tenancy}");
            }
        }
    }

    #[test]
    fn the_emulator_gets_text_json_unless_the_user_chose() {
        let text = BinaryEncodingOptions::new().with_enabled(false);
        assert_eq!(binary_encoding_for(true, None), Some(text));
        assert_eq!(binary_encoding_for(true, Some("true")), None);
        assert_eq!(binary_encoding_for(false, None), None);
    }
}
