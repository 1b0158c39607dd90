//! The Cosmos DB store on the SDK's in-memory emulator: a whole Cosmos DB account inside the
//! test process, reached through the real SDK pipeline (requests, headers, retries, paging).
//! All emulator wiring lives here, so the `__internal_in_memory_emulator` feature stays a
//! dev-dependency concern and never reaches the shipped binary. The benchmark harness
//! (`benches/harness`) includes this file too, for its hot-post phase.

use std::sync::Arc;
use std::time::Duration;

use azure_data_cosmos::options::{
    OperationOptions, OperationOptionsBuilder, Region, ThrottlingRetryOptionsBuilder,
};
use azure_data_cosmos::{
    AccountEndpoint, AccountReference, CosmosClient, CosmosClientBuilder, CosmosRuntimeBuilder,
    RoutingStrategy,
};
use azure_data_cosmos_driver::fault_injection::{
    FaultInjectionResultBuilder, FaultInjectionRule, FaultInjectionRuleBuilder,
};
use azure_data_cosmos_driver::in_memory_emulator::{
    ConsistencyLevel, ContainerConfig, InMemoryEmulatorHttpClient, VirtualAccountConfig,
    VirtualRegion,
};
use cosmos_blog::store::cosmos::CosmosStore;
use cosmos_blog::store::{Container, Store, Tenancy};

/// The emulator answers for this made-up gateway; nothing goes on the network.
const GATEWAY_URL: &str = "https://eastus.emulator.local";
/// Any base64 key: the emulator checks that requests are signed, not by whom.
const ACCOUNT_KEY: &str = "dGVzdGtleQ==";
pub const DATABASE: &str = "blog";

fn gateway() -> azure_core::http::Url {
    azure_core::http::Url::parse(GATEWAY_URL).expect("valid emulator URL")
}

pub fn account_config() -> VirtualAccountConfig {
    VirtualAccountConfig::new(vec![VirtualRegion::new("East US", gateway())])
        .expect("valid emulator account")
        // Session consistency: a client reads its own writes, as the blog expects.
        .with_consistency(ConsistencyLevel::Session)
}

pub async fn client_of(
    mut runtime: CosmosRuntimeBuilder,
    operation_options: Option<OperationOptions>,
) -> CosmosClient {
    let account = AccountReference::with_authentication_key(
        GATEWAY_URL
            .parse::<AccountEndpoint>()
            .expect("valid emulator endpoint"),
        azure_core::credentials::Secret::new(ACCOUNT_KEY),
    );
    if let Some(options) = operation_options {
        runtime = runtime.with_default_operation_options(options);
    }
    let runtime = runtime.build().await.expect("emulator runtime");
    CosmosClientBuilder::new()
        .with_runtime(runtime)
        .build(account, RoutingStrategy::ProximityTo(Region::EAST_US))
        .await
        .expect("emulator client")
}

/// A client of a fresh, empty in-memory account.
pub async fn emulator_client() -> CosmosClient {
    let emulator = Arc::new(InMemoryEmulatorHttpClient::new(account_config()));
    client_of(emulator.runtime_builder().into(), None).await
}

/// A [`CosmosStore`] on a fresh in-memory account (its own database and containers).
pub async fn emulator_store() -> Arc<dyn Store> {
    store_of(emulator_client().await).await
}

/// A [`CosmosStore`] of the `tenancy` layout on a fresh in-memory account.
pub async fn emulator_store_in(tenancy: Tenancy) -> Arc<dyn Store> {
    let store = CosmosStore::from_client_with(emulator_client().await, DATABASE, tenancy)
        .await
        .expect("the Cosmos DB store prepares the emulator's database");
    Arc::new(store)
}

/// A [`CosmosStore`] on a fresh in-memory account where every request takes `delay` longer,
/// like the round trip to a real account (the SDK's fault injection, with a delay only).
pub async fn delayed_emulator_store(delay: Duration) -> Arc<dyn Store> {
    let emulator = Arc::new(InMemoryEmulatorHttpClient::new(account_config()));
    let round_trip = FaultInjectionRuleBuilder::new(
        "round-trip",
        FaultInjectionResultBuilder::new().with_delay(delay).build(),
    )
    .build();
    let runtime = emulator.runtime_builder_with_fault_rules(vec![Arc::new(round_trip)]);
    store_of(client_of(runtime.into(), None).await).await
}

async fn store_of(client: CosmosClient) -> Arc<dyn Store> {
    let store = CosmosStore::from_client(client, DATABASE)
        .await
        .expect("the Cosmos DB store prepares the emulator's database");
    Arc::new(store)
}

/// Options of a client that passes a `429` on at once instead of retrying it: what a caller
/// sees once the SDK's own throttle retries are spent.
fn no_throttle_retries() -> OperationOptions {
    OperationOptionsBuilder::new()
        .with_throttling_retry_options(
            ThrottlingRetryOptionsBuilder::new()
                .with_max_retry_count(0)
                .build(),
        )
        .build()
}

/// A [`CosmosStore`] whose containers are provisioned with `ru_per_second` (400 at least) and
/// enforce it, on a client that does not retry throttled requests: the 429 the SDK would
/// give up on after its retries reaches the store at once.
pub async fn throttled_emulator_store(ru_per_second: u64) -> Arc<dyn Store> {
    let emulator = Arc::new(InMemoryEmulatorHttpClient::new(
        account_config().with_throttling_enabled(true),
    ));
    let accounts = emulator.store();
    accounts.create_database(DATABASE);
    for container in Container::ALL {
        let definition = serde_json::from_value(serde_json::json!({
            "paths": container.partition_key_paths(), "kind": "Hash", "version": 2
        }))
        .expect("partition key definition");
        let config = ContainerConfig::new()
            .with_throughput(ru_per_second)
            .build()
            .expect("container config");
        accounts.create_container_with_config(DATABASE, container.name(), definition, config);
    }
    let client = client_of(
        emulator.runtime_builder().into(),
        Some(no_throttle_retries()),
    )
    .await;
    let store = CosmosStore::from_client(client, DATABASE)
        .await
        .expect("the Cosmos DB store opens the provisioned containers");
    Arc::new(store)
}

/// A [`CosmosStore`] on a fresh in-memory account whose first `throttles` transactional
/// batches are answered `429` with `x-ms-retry-after-ms: retry_after`, on a client that does
/// not retry throttled requests itself (the emulator's own throughput model charges point
/// writes, not batches). The rule counts its hits.
pub async fn batch_throttling_emulator_store(
    throttles: u32,
    retry_after: Duration,
) -> (Arc<dyn Store>, Arc<FaultInjectionRule>) {
    use azure_data_cosmos_driver::fault_injection::{
        CustomResponseBuilder, FaultInjectionConditionBuilder, FaultOperationType,
    };
    let emulator = Arc::new(InMemoryEmulatorHttpClient::new(account_config()));
    let throttled = CustomResponseBuilder::new(azure_core::http::StatusCode::TooManyRequests)
        .with_header("x-ms-retry-after-ms", retry_after.as_millis().to_string())
        .with_sub_status(3200)
        .build();
    let rule = Arc::new(
        FaultInjectionRuleBuilder::new(
            "throttled-batches",
            FaultInjectionResultBuilder::new()
                .with_custom_response(throttled)
                .build(),
        )
        .with_condition(
            FaultInjectionConditionBuilder::new()
                .with_operation_type(FaultOperationType::BatchItem)
                .build(),
        )
        .with_hit_limit(throttles)
        .build(),
    );
    let runtime = emulator.runtime_builder_with_fault_rules(vec![Arc::clone(&rule)]);
    let store = store_of(client_of(runtime.into(), Some(no_throttle_retries())).await).await;
    (store, rule)
}
