//! Which store to open and how to reach it, from command-line flags or environment variables.

use clap::Args;
use std::path::PathBuf;

use super::Tenancy;

#[derive(Debug, Clone, Args)]
pub struct StoreSettings {
    /// Folder of the embedded store's database file (used when no Cosmos DB setting is given).
    #[arg(long, env = "BLOG_DATA_DIR", default_value = "data", global = true)]
    pub data_dir: PathBuf,

    /// Cosmos DB connection string (`AccountEndpoint=...;AccountKey=...;`).
    #[arg(
        long,
        env = "CosmosDBConnection",
        hide_env_values = true,
        global = true
    )]
    pub cosmos_connection: Option<String>,

    /// Cosmos DB account endpoint, for Microsoft Entra ID (managed identity) authentication.
    #[arg(long, env = "CosmosDBConnection__accountEndpoint", global = true)]
    pub cosmos_endpoint: Option<String>,

    /// Cosmos DB with Microsoft Entra ID: the client id of the user-assigned managed identity
    /// to sign in as (the Functions convention for identity-based connections); the
    /// system-assigned one when unset.
    #[arg(long, env = "CosmosDBConnection__clientId", global = true)]
    pub cosmos_client_id: Option<String>,

    /// The Azure region this app runs in (Azure Functions sets it): Cosmos DB requests go to
    /// the account's region nearest to it. Unset: the account's own order of regions.
    #[arg(long, env = "REGION_NAME", hide = true, global = true)]
    pub region_name: Option<String>,

    /// The Cosmos DB SDK's own switch for binary JSON on the wire (the SDK reads it itself):
    /// when set, the SDK's choice stands, even for the emulator, which otherwise gets text
    /// JSON.
    #[arg(
        long,
        env = "AZURE_COSMOS_BINARY_ENCODING_ENABLED",
        hide = true,
        global = true
    )]
    pub cosmos_binary_encoding: Option<String>,

    /// The platform offers this process a managed identity, which Microsoft Entra ID sign-in
    /// then uses (not a user setting: the platform's variables say so, read with the rest of
    /// what it says, `Platform::managed_identity`).
    #[arg(skip)]
    pub managed_identity: bool,

    /// Cosmos DB database name.
    #[arg(long, env = "COSMOS_DATABASE", default_value = "blog", global = true)]
    pub database: String,

    /// Data layout: `single` (one blog, the V3 model) or `multi` (many blogs on hierarchical
    /// partition keys, served under `/api/tenants/{tenantId}/`). Chosen once per store: the
    /// containers' keys depend on it.
    #[arg(long, env = "BLOG_TENANCY", value_enum, default_value_t = Tenancy::Single, ignore_case = true, global = true)]
    pub tenancy: Tenancy,

    /// How many connections the embedded store reads through: as many reads run at once, and
    /// a read waits while all are taken [default: two per core, at least four].
    #[arg(long, env = "BLOG_EMBEDDED_READERS", value_parser = clap::value_parser!(u16).range(1..=1024), global = true)]
    pub embedded_readers: Option<u16>,
}

impl StoreSettings {
    pub fn uses_cosmos(&self) -> bool {
        self.cosmos_connection.is_some() || self.cosmos_endpoint.is_some()
    }

    /// The embedded store's reader connections: [`Self::embedded_readers`] or the default.
    pub fn readers(&self) -> usize {
        self.embedded_readers
            .map_or_else(super::embedded::default_readers, usize::from)
    }

    pub fn embedded_path(&self) -> PathBuf {
        self.data_dir.join("blog.sqlite3")
    }

    /// Settings that say two things at once, one sentence each; start-up refuses any.
    pub fn contradictions(&self) -> Vec<String> {
        let mut found = Vec::new();
        if self.cosmos_connection.is_some() && self.cosmos_endpoint.is_some() {
            found.push(
                "both CosmosDBConnection (--cosmos-connection) and \
                 CosmosDBConnection__accountEndpoint (--cosmos-endpoint) are set: an account key \
                 and Microsoft Entra ID are two ways to sign in; keep one"
                    .to_owned(),
            );
        }
        found
    }
}
