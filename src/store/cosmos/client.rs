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

use super::faults::sdk_operation_options;
use super::provisioning::prepare_container;
use crate::store::{Container, StoreSettings, Tenancy};

/// A Cosmos DB database holding the four containers. Cheap to clone: the SDK clients share
/// one connection pool.
#[derive(Clone)]
pub struct CosmosStore {
    /// In the order of [`Container::ALL`].
    containers: [ContainerClient; 4],
    pub(super) tenancy: Tenancy,
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

    pub(super) fn client(&self, container: Container) -> &ContainerClient {
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
    crate::platform::app_identity_credential()
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
