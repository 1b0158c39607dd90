//! The connection: the SDK client built from the settings (an account key or Microsoft Entra
//! ID, the emulator's text JSON), and the store holding one client per container.

use anyhow::Context;
use azure_core::credentials::{Secret, TokenCredential};
use azure_data_cosmos::clients::ContainerClient;
use azure_data_cosmos::options::{
    BinaryEncodingOptions, ConnectionPoolOptions, Region, ServerCertificateValidation,
};
use azure_data_cosmos::{
    AccountEndpoint, AccountReference, CosmosClient, CosmosClientBuilder, CosmosRuntimeBuilder,
    RoutingStrategy,
};

use std::sync::Arc;

use super::faults::sdk_operation_options;
use super::provisioning::prepare_container;
use crate::connection_string;
use crate::store::{ChangeSignal, Container, StoreSettings, Tenancy};

/// A Cosmos DB database holding the four containers. Cheap to clone: the SDK clients share
/// one connection pool.
#[derive(Clone)]
pub struct CosmosStore {
    /// In the order of [`Container::ALL`].
    containers: [ContainerClient; 6],
    pub(super) tenancy: Tenancy,
    /// Wakes this process's pump after this process's writes (through any clone of the
    /// store); other instances' writes are seen when it polls.
    pub(super) changes: Arc<ChangeSignal>,
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
            build_client(account, is_local(&endpoint), settings).await?
        } else if let Some(endpoint) = &settings.cosmos_endpoint {
            let account = AccountReference::with_credential(
                endpoint
                    .parse::<AccountEndpoint>()
                    .with_context(|| format!("invalid Cosmos DB endpoint {endpoint:?}"))?,
                entra_credential(settings)?,
            );
            build_client(account, is_local(endpoint), settings).await?
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
        let containers: [ContainerClient; 6] = containers
            .try_into()
            .map_err(|_| anyhow::anyhow!("expected one client per container"))?;
        tracing::info!(database, %tenancy, "using Azure Cosmos DB");
        Ok(Self {
            containers,
            tenancy,
            changes: Arc::default(),
        })
    }

    pub(super) fn client(&self, container: Container) -> &ContainerClient {
        &self.containers[container.index()]
    }
}

/// `AccountEndpoint=...;AccountKey=...;` (key order free, other keys ignored).
fn parse_connection_string(connection: &str) -> anyhow::Result<(String, String)> {
    let mut fields = connection_string::fields(connection, "Cosmos DB connection string")?;
    let endpoint = fields.remove("accountendpoint");
    let key = fields.remove("accountkey");
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

/// Binary JSON on the wire is the SDK's default, but the Linux (vNext) emulator refuses it:
/// for an emulator endpoint the client speaks text JSON unless the user chose otherwise with
/// the SDK's own variable (`user_choice`, `AZURE_COSMOS_BINARY_ENCODING_ENABLED`). An account
/// in Azure keeps the SDK's default.
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

/// Managed identity where the platform offers one (user-assigned when
/// `CosmosDBConnection__clientId` names one), the developer's own sign-in elsewhere.
fn entra_credential(settings: &StoreSettings) -> anyhow::Result<Arc<dyn TokenCredential>> {
    crate::platform::azure_credential(settings.managed_identity, settings.cosmos_client_id.clone())
}

async fn build_client(
    account: AccountReference,
    local: bool,
    settings: &StoreSettings,
) -> anyhow::Result<CosmosClient> {
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
    if let Some(encoding) = binary_encoding_for(local, settings.cosmos_binary_encoding.as_deref()) {
        builder = builder.with_binary_encoding_options(encoding);
    }
    // Under Azure Functions REGION_NAME is the app's region: prefer the account's nearest
    // region to it. Elsewhere the account's own region order applies.
    let routing = match settings.region_name.as_deref() {
        Some(region) if !region.trim().is_empty() => {
            RoutingStrategy::ProximityTo(Region::from(region.to_owned()))
        }
        _ => RoutingStrategy::PreferredRegions(Vec::new()),
    };
    builder
        .build(account, routing)
        .await
        .context("cannot connect to Azure Cosmos DB")
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
    fn the_emulator_gets_text_json_unless_the_user_chose() {
        let text = BinaryEncodingOptions::new().with_enabled(false);
        assert_eq!(binary_encoding_for(true, None), Some(text));
        assert_eq!(binary_encoding_for(true, Some("true")), None);
        assert_eq!(binary_encoding_for(false, None), None);
    }
}
