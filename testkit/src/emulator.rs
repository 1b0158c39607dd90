//! The Cosmos DB store on the SDK's in-memory emulator: a whole Cosmos DB account inside the
//! test process, reached through the real SDK pipeline (requests, headers, retries, paging).
//! All emulator wiring lives here, so the `__internal_in_memory_emulator` feature stays a
//! concern of the test crates and never reaches the shipped binary. The benchmark harness
//! (`benches/harness`) uses it too, for its hot-post, routing and fault phases.
//!
//! Faults come from the SDK's own fault injection (`fault_injection` feature of the driver),
//! below its retry policy, so a fault meets the same retries as one of the real service; see
//! [`FaultPlan`].

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use azure_data_cosmos::options::{
    OperationOptions, OperationOptionsBuilder, Region, ThrottlingRetryOptionsBuilder,
};
use azure_data_cosmos::{
    AccountEndpoint, AccountReference, CosmosClient, CosmosClientBuilder, CosmosRuntimeBuilder,
    RoutingStrategy,
};
use azure_data_cosmos_driver::fault_injection::{
    CustomResponseBuilder, FaultInjectionConditionBuilder, FaultInjectionResult,
    FaultInjectionResultBuilder, FaultInjectionRule, FaultInjectionRuleBuilder,
};
pub use azure_data_cosmos_driver::fault_injection::{FaultInjectionErrorType, FaultOperationType};
use azure_data_cosmos_driver::in_memory_emulator::{
    ConsistencyLevel, VirtualAccountConfig, VirtualRegion,
};
/// For an emulator of a chosen shape (physical partitions, throughput) and observers of the
/// requests it receives.
pub use azure_data_cosmos_driver::in_memory_emulator::{
    ContainerConfig, InMemoryEmulatorHttpClient, RequestObserver,
};
use cosmos_blog::store::cosmos::{CosmosStore, sdk_operation_options};
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

/// A client of the emulator behind `runtime`, with the product's retry options (those of
/// [`CosmosStore`]) unless `operation_options` replaces them.
pub async fn client_of(
    runtime: CosmosRuntimeBuilder,
    operation_options: Option<OperationOptions>,
) -> CosmosClient {
    let account = AccountReference::with_authentication_key(
        GATEWAY_URL
            .parse::<AccountEndpoint>()
            .expect("valid emulator endpoint"),
        azure_core::credentials::Secret::new(ACCOUNT_KEY),
    );
    let runtime = runtime
        .with_default_operation_options(operation_options.unwrap_or_else(sdk_operation_options))
        .build()
        .await
        .expect("emulator runtime");
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

// ---- faults --------------------------------------------------------------------------------

/// What a fault does to a request it hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// One of the SDK's fault kinds, as the service (or the network) would produce it.
    /// `TooManyRequests` carries no `x-ms-retry-after-ms`: the SDK then backs off on its own.
    /// `ResponseTimeoutAfterService` lets the request commit and loses its answer.
    Error(FaultInjectionErrorType),
    /// A 429 whose `x-ms-retry-after-ms` says when to try again, as the service sends it.
    Throttle { retry_after: Duration },
}

impl Fault {
    fn result(self) -> FaultInjectionResult {
        match self {
            Fault::Error(kind) => FaultInjectionResultBuilder::new().with_error(kind).build(),
            Fault::Throttle { retry_after } => FaultInjectionResultBuilder::new()
                .with_custom_response(
                    CustomResponseBuilder::new(azure_core::http::StatusCode::TooManyRequests)
                        .with_header("x-ms-retry-after-ms", retry_after.as_millis().to_string())
                        .with_body(br#"{"code":"TooManyRequests","message":"injected"}"#.to_vec())
                        .build(),
                )
                .build(),
        }
    }
}

/// The SDK's kinds of data request (not the metadata ones: account, containers, partition
/// key ranges, query plans).
pub const DATA_OPERATIONS: [FaultOperationType; 8] = [
    FaultOperationType::ReadItem,
    FaultOperationType::QueryItem,
    FaultOperationType::CreateItem,
    FaultOperationType::UpsertItem,
    FaultOperationType::ReplaceItem,
    FaultOperationType::DeleteItem,
    FaultOperationType::BatchItem,
    FaultOperationType::ChangeFeedItem,
];

/// `fault` on each kind of data request, one per `every` of them (each kind counted apart,
/// so that every kind meets it whatever the mix of requests), in [`DATA_OPERATIONS`] order.
pub fn on_each_data_operation(fault: Fault, every: u32) -> Vec<FaultPlan> {
    DATA_OPERATIONS
        .iter()
        .map(|operation| FaultPlan::new(fault).on(*operation).every(every))
        .collect()
}

/// Which requests a fault hits, and how often. The SDK's own rate (`with_probability`) is
/// random; this one counts, so a run is repeatable: with `every: n`, the first matching
/// request after the start meets the fault, then every n-th matching request after it.
#[derive(Debug, Clone)]
pub struct FaultPlan {
    pub fault: Fault,
    /// One fault per this many matching requests (1: every matching request fails).
    pub every: u32,
    /// Only this kind of request (a batch, a point read, a change-feed read, ...).
    pub operation: Option<FaultOperationType>,
    /// Only requests to this container.
    pub container: Option<Container>,
    /// With `every: 1`, only the first this many matching requests after the start fail: a
    /// stretch of a known length in requests (one in time would race the requests).
    pub times: Option<u32>,
}

impl FaultPlan {
    /// `fault` on every request, until stopped.
    pub fn new(fault: Fault) -> Self {
        Self {
            fault,
            every: 1,
            operation: None,
            container: None,
            times: None,
        }
    }

    pub fn error(kind: FaultInjectionErrorType) -> Self {
        Self::new(Fault::Error(kind))
    }

    /// One fault per `n` matching requests.
    pub fn every(mut self, n: u32) -> Self {
        self.every = n.max(1);
        self
    }

    pub fn on(mut self, operation: FaultOperationType) -> Self {
        self.operation = Some(operation);
        self
    }

    pub fn in_container(mut self, container: Container) -> Self {
        self.container = Some(container);
        self
    }

    /// The first `n` matching requests fail, the others pass.
    pub fn times(mut self, n: u32) -> Self {
        self.every = 1;
        self.times = Some(n);
        self
    }
}

/// A plan on the emulator: its fault rule, which hits while its hit count is under its limit
/// of one, and behind it a rule without effect that counts the matching requests the fault
/// let through. After `every - 1` of those the fault is armed again: one matching request
/// in `every` meets it, and a request retried alone meets it once, not on every retry.
#[derive(Debug)]
struct ArmedRule {
    every: u32,
    /// The fault rule's hit count (shared with it).
    hits: Arc<AtomicU32>,
    /// The counting rule's hit count: matching requests let through since the last fault.
    passed: Arc<AtomicU32>,
    /// Faults of past periods (the fault rule's count is reset each period).
    past_hits: AtomicU64,
}

impl ArmedRule {
    fn injected(&self) -> u64 {
        let current = u64::from(self.hits.load(Ordering::SeqCst));
        // Under a hit limit of one the count is 0 or 1.
        let current = if self.every > 1 {
            current.min(1)
        } else {
            current
        };
        self.past_hits.load(Ordering::SeqCst) + current
    }

    /// Arms the fault again once `every - 1` matching requests passed it.
    fn tick(&self) {
        if self.every <= 1 || self.passed.load(Ordering::SeqCst) < self.every - 1 {
            return;
        }
        if self.passed.swap(0, Ordering::SeqCst) >= self.every - 1 {
            let used = self.hits.swap(0, Ordering::SeqCst);
            self.past_hits
                .fetch_add(u64::from(used.min(1)), Ordering::SeqCst);
        }
    }
}

/// Sees every request that reaches the account (after the fault rules let it through).
#[derive(Debug, Default)]
struct FaultClock {
    reached: AtomicU64,
    rules: Vec<ArmedRule>,
}

impl RequestObserver for FaultClock {
    fn on_request(&self, _request: &azure_core::http::Request) {
        self.reached.fetch_add(1, Ordering::SeqCst);
        for rule in &self.rules {
            rule.tick();
        }
    }
}

/// The switch of the [`FaultPlan`]s of an emulator: off until [`Faults::start`]; a stretch of
/// faults in time is what runs between `start` and `stop`.
#[derive(Clone, Debug)]
pub struct Faults {
    enabled: Arc<AtomicBool>,
    clock: Arc<FaultClock>,
}

impl Faults {
    pub fn start(&self) {
        self.enabled.store(true, Ordering::SeqCst);
    }

    pub fn stop(&self) {
        self.enabled.store(false, Ordering::SeqCst);
    }

    /// Faults injected so far, by all plans.
    pub fn injected(&self) -> u64 {
        self.clock.rules.iter().map(ArmedRule::injected).sum()
    }

    /// Faults injected so far by each plan, in the order given.
    pub fn injected_by_plan(&self) -> Vec<u64> {
        self.clock.rules.iter().map(ArmedRule::injected).collect()
    }

    /// Requests that reached the account so far (a request a fault stopped did not).
    pub fn reached(&self) -> u64 {
        self.clock.reached.load(Ordering::SeqCst)
    }
}

fn condition(plan: &FaultPlan) -> FaultInjectionConditionBuilder {
    let mut condition = FaultInjectionConditionBuilder::new();
    if let Some(operation) = plan.operation {
        condition = condition.with_operation_type(operation);
    }
    if let Some(container) = plan.container {
        // Matched against the request's URL: `colls/<name>` is that container and no item id
        // (ids hold no '/').
        condition = condition.with_container_id(format!("colls/{}", container.name()));
    }
    condition
}

/// The SDK's rules of `plan`: the fault, and (for a rate) the counting rule behind it.
fn fault_rules(
    plan: &FaultPlan,
    enabled: &Arc<AtomicBool>,
) -> (Vec<FaultInjectionRule>, ArmedRule) {
    let armed = ArmedRule {
        every: plan.every,
        hits: Arc::default(),
        passed: Arc::default(),
        past_hits: AtomicU64::new(0),
    };
    let mut fault = FaultInjectionRuleBuilder::new("fault", plan.fault.result())
        .with_condition(condition(plan).build())
        .with_shared_state(Arc::clone(enabled), Arc::clone(&armed.hits));
    if plan.every == 1 {
        if let Some(times) = plan.times {
            fault = fault.with_hit_limit(times);
        }
        return (vec![fault.build()], armed);
    }
    fault = fault.with_hit_limit(1);
    let counter =
        FaultInjectionRuleBuilder::new("passed", FaultInjectionResultBuilder::new().build())
            .with_condition(condition(plan).build())
            .with_shared_state(Arc::clone(enabled), Arc::clone(&armed.passed))
            .build();
    (vec![fault.build(), counter], armed)
}

/// A [`CosmosStore`] of the `tenancy` layout on a fresh in-memory account whose requests meet
/// `plans` once they are started; the store is prepared (database, containers) before. No
/// request should match two plans: a plan counts the requests its fault lets through, and
/// the first plan that matches a request takes it.
pub async fn faulty_emulator_store(
    tenancy: Tenancy,
    plans: Vec<FaultPlan>,
) -> (Arc<dyn Store>, Faults) {
    faulty_store_with(tenancy, plans, None).await
}

/// [`faulty_emulator_store`] on a client that passes a `429` on at once instead of retrying
/// it: what the store's callers see once the SDK's own throttle retries are spent.
pub async fn faulty_emulator_store_without_throttle_retries(
    plans: Vec<FaultPlan>,
) -> (Arc<dyn Store>, Faults) {
    faulty_store_with(Tenancy::Single, plans, Some(no_throttle_retries())).await
}

async fn faulty_store_with(
    tenancy: Tenancy,
    plans: Vec<FaultPlan>,
    options: Option<OperationOptions>,
) -> (Arc<dyn Store>, Faults) {
    let enabled = Arc::new(AtomicBool::new(false));
    let mut rules = Vec::new();
    let mut clock = FaultClock::default();
    for plan in &plans {
        let (sdk_rules, armed) = fault_rules(plan, &enabled);
        rules.extend(sdk_rules.into_iter().map(Arc::new));
        clock.rules.push(armed);
    }
    let clock = Arc::new(clock);
    let emulator = Arc::new(
        InMemoryEmulatorHttpClient::new(account_config())
            .with_request_observer(Arc::clone(&clock) as Arc<dyn RequestObserver>),
    );
    let runtime = emulator.runtime_builder_with_fault_rules(rules);
    let client = client_of(runtime.into(), options).await;
    let store = CosmosStore::from_client_with(client, DATABASE, tenancy)
        .await
        .expect("the Cosmos DB store prepares the emulator's database");
    let faults = Faults { enabled, clock };
    (Arc::new(store), faults)
}
