//! The Cosmos DB store on the SDK's in-memory emulator: a whole Cosmos DB account inside the
//! test process, reached through the real SDK pipeline (requests, headers, retries, paging).
//! All emulator wiring lives here, so the `__internal_in_memory_emulator` feature stays a
//! dev-dependency concern and never reaches the shipped binary.

use std::sync::Arc;

use azure_data_cosmos::options::Region;
use azure_data_cosmos::{
    AccountEndpoint, AccountReference, CosmosClient, CosmosClientBuilder, CosmosRuntimeBuilder,
    RoutingStrategy,
};
use azure_data_cosmos_driver::in_memory_emulator::{
    ConsistencyLevel, InMemoryEmulatorHttpClient, VirtualAccountConfig, VirtualRegion,
};
use cosmos_blog::store::Store;
use cosmos_blog::store::cosmos::CosmosStore;

/// The emulator answers for this made-up gateway; nothing goes on the network.
const GATEWAY_URL: &str = "https://eastus.emulator.local";
/// Any base64 key: the emulator checks that requests are signed, not by whom.
const ACCOUNT_KEY: &str = "dGVzdGtleQ==";
pub const DATABASE: &str = "blog";

/// A client of a fresh, empty in-memory account.
pub async fn emulator_client() -> CosmosClient {
    let gateway = azure_core::http::Url::parse(GATEWAY_URL).expect("valid emulator URL");
    let config = VirtualAccountConfig::new(vec![VirtualRegion::new("East US", gateway)])
        .expect("valid emulator account")
        // Session consistency: a client reads its own writes, as the blog expects.
        .with_consistency(ConsistencyLevel::Session);
    let emulator = Arc::new(InMemoryEmulatorHttpClient::new(config));
    let account = AccountReference::with_authentication_key(
        GATEWAY_URL
            .parse::<AccountEndpoint>()
            .expect("valid emulator endpoint"),
        azure_core::credentials::Secret::new(ACCOUNT_KEY),
    );
    let runtime = CosmosRuntimeBuilder::from(emulator.runtime_builder())
        .build()
        .await
        .expect("emulator runtime");
    CosmosClientBuilder::new()
        .with_runtime(runtime)
        .build(account, RoutingStrategy::ProximityTo(Region::EAST_US))
        .await
        .expect("emulator client")
}

/// A [`CosmosStore`] on a fresh in-memory account (its own database and containers).
pub async fn emulator_store() -> Arc<dyn Store> {
    let client = emulator_client().await;
    let store = CosmosStore::from_client(client, DATABASE)
        .await
        .expect("the Cosmos DB store prepares the emulator's database");
    Arc::new(store)
}
