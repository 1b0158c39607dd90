//! Where this process runs, read once from the environment that the hosting platform sets.
//!
//! Two questions decide safety-relevant defaults (the auth mode, the change-feed pump, the
//! trigger routes), so neither rests on an app setting that a plan may drop:
//!
//! - **Did the Azure Functions host start us?** The host gives every custom handler process it
//!   starts its worker id, port and script root (`FUNCTIONS_CUSTOMHANDLER_WORKER_ID`,
//!   `FUNCTIONS_HTTPWORKER_ID`, `FUNCTIONS_APP_ROOT_PATH`, ...), on every plan and under
//!   `func start`. `FUNCTIONS_WORKER_RUNTIME` counts too, but is not relied on: Flex
//!   Consumption apps must not set it (it moved into `functionAppConfig.runtime`).
//! - **Are we on Azure App Service**, which runs Functions apps on every plan (Consumption,
//!   Flex Consumption, Premium, Dedicated)? Its `WEBSITE_*` variables say so even where no
//!   host started us.
//!
//! The port variable alone is no sign of the host: standalone users may set it to pick a port.

/// Variables the Functions host sets for the custom handler process it starts
/// (`HttpWorkerConstants` in the host), and the worker runtime setting of older plans.
pub const FUNCTIONS_HOST_MARKERS: [&str; 5] = [
    "FUNCTIONS_CUSTOMHANDLER_WORKER_ID",
    "FUNCTIONS_HTTPWORKER_ID",
    "FUNCTIONS_HTTPWORKER_PORT",
    "FUNCTIONS_APP_ROOT_PATH",
    "FUNCTIONS_WORKER_RUNTIME",
];

/// Variables Azure App Service sets in every app's environment, on every plan that runs
/// Functions apps. (Not `CONTAINER_NAME`, which Linux Consumption sets too: container
/// runtimes everywhere set it, a developer's machine included.)
pub const APP_SERVICE_MARKERS: [&str; 5] = [
    "WEBSITE_SITE_NAME",
    "WEBSITE_INSTANCE_ID",
    "WEBSITE_HOSTNAME",
    "WEBSITE_SKU",
    "WEBSITE_OWNER_NAME",
];

/// App Service sets it to `True` when App Service Authentication ("Easy Auth") is on.
pub const WEBSITE_AUTH_ENABLED: &str = "WEBSITE_AUTH_ENABLED";

/// What the hosting platform says. Tests inject it instead of changing the process
/// environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Platform {
    /// The Functions host started this process.
    pub functions_host: bool,
    /// Azure App Service's environment is present (whether or not a host started us).
    pub app_service: bool,
    /// The value of `WEBSITE_AUTH_ENABLED`.
    pub website_auth_enabled: Option<String>,
}

impl Platform {
    pub fn from_env() -> Self {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// Reads the platform from `var`, which looks a variable up by name.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Self {
        let any_set = |names: &[&str]| names.iter().any(|name| var(name).is_some());
        Self {
            functions_host: any_set(&FUNCTIONS_HOST_MARKERS),
            app_service: any_set(&APP_SERVICE_MARKERS),
            website_auth_enabled: var(WEBSITE_AUTH_ENABLED),
        }
    }

    /// The Functions host as the tests of every plan's defaults see it.
    pub fn functions_host(website_auth_enabled: Option<&str>) -> Self {
        Self {
            functions_host: true,
            app_service: true,
            website_auth_enabled: website_auth_enabled.map(str::to_owned),
        }
    }

    /// Anywhere but a developer's machine: the Functions host, or App Service. Defaults
    /// that trust the caller, or that assume no triggers run, do not apply here.
    pub fn hosted(&self) -> bool {
        self.functions_host || self.app_service
    }

    /// App Service Authentication is on: the platform strips client copies of the principal
    /// headers and sets them itself.
    pub fn easy_auth_enabled(&self) -> bool {
        self.website_auth_enabled
            .as_deref()
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    }

    /// Every variable this module reads: what tests clear before they start the binary.
    pub fn variables() -> impl Iterator<Item = &'static str> {
        FUNCTIONS_HOST_MARKERS
            .into_iter()
            .chain(APP_SERVICE_MARKERS)
            .chain([WEBSITE_AUTH_ENABLED])
    }
}

/// Functions app setting naming the client id of the app's user-assigned managed identity (the
/// Functions convention for identity-based connections). Cosmos DB and the images' Blob
/// Storage are both reached with that one identity.
pub const APP_IDENTITY_CLIENT_ID_SETTING: &str = "CosmosDBConnection__clientId";

/// The app's own identity ([`azure_credential`] of the client id
/// [`APP_IDENTITY_CLIENT_ID_SETTING`] names, if any).
pub fn app_identity_credential()
-> anyhow::Result<std::sync::Arc<dyn azure_core::credentials::TokenCredential>> {
    azure_credential(std::env::var(APP_IDENTITY_CLIENT_ID_SETTING).ok())
}

/// The identity this process presents to Azure services: its managed identity under Azure
/// (the platform sets `IDENTITY_ENDPOINT`), the user-assigned one when `client_id` names one;
/// the developer's own sign-in (Azure CLI, azd) elsewhere.
pub fn azure_credential(
    client_id: Option<String>,
) -> anyhow::Result<std::sync::Arc<dyn azure_core::credentials::TokenCredential>> {
    use anyhow::Context;
    if std::env::var_os("IDENTITY_ENDPOINT").is_some() || std::env::var_os("MSI_ENDPOINT").is_some()
    {
        let options = client_id.filter(|id| !id.trim().is_empty()).map(|id| {
            azure_identity::ManagedIdentityCredentialOptions {
                user_assigned_id: Some(azure_identity::UserAssignedId::ClientId(id)),
                ..Default::default()
            }
        });
        let credential = azure_identity::ManagedIdentityCredential::new(options)
            .context("cannot set up the managed identity credential")?;
        Ok(credential)
    } else {
        let credential = azure_identity::DeveloperToolsCredential::new(None)
            .context("cannot set up the developer tools credential (az login / azd auth login)")?;
        Ok(credential)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn plan(vars: &[(&str, &str)]) -> Platform {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect();
        Platform::from_vars(|name| vars.get(name).cloned())
    }

    // Every plan's environment is tested on the binary (tests/api/auth/modes.rs).

    #[test]
    fn the_host_is_recognised_by_its_worker_variables_alone() {
        let platform = plan(&[
            ("FUNCTIONS_CUSTOMHANDLER_PORT", "40001"),
            ("FUNCTIONS_CUSTOMHANDLER_WORKER_ID", "6a1c0c3e"),
        ]);
        assert!(platform.functions_host && !platform.app_service);
        assert!(platform.hosted());
    }

    #[test]
    fn app_service_without_a_recognised_host_is_still_hosted() {
        // The reproduction: App Service variables, no FUNCTIONS_WORKER_RUNTIME.
        let platform = plan(&[
            ("WEBSITE_SITE_NAME", "blog-app"),
            ("WEBSITE_SKU", "FlexConsumption"),
        ]);
        assert!(!platform.functions_host);
        assert!(platform.hosted());
    }

    #[test]
    fn a_laptop_is_not_hosted_even_with_the_port_variable() {
        let platform = plan(&[
            ("FUNCTIONS_CUSTOMHANDLER_PORT", "7072"),
            ("CONTAINER_NAME", "dev-container"),
        ]);
        assert_eq!(platform, Platform::default());
        assert!(!platform.hosted());
    }

    #[test]
    fn easy_auth_is_on_only_for_true() {
        for (value, enabled) in [
            (None, false),
            (Some(""), false),
            (Some("false"), false),
            (Some("1"), false),
            (Some("true"), true),
            (Some(" True "), true),
        ] {
            let platform = Platform::functions_host(value);
            assert_eq!(platform.easy_auth_enabled(), enabled, "{value:?}");
        }
    }
}
