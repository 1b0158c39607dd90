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
//!
//! The settings read the variables (`settings::environment`) and hand this module a way to
//! look them up: tests give a table instead of changing the process environment.

/// Variables the Functions host sets for the custom handler process it starts
/// (`HttpWorkerConstants` in the host), and the worker runtime setting of older plans.
pub(crate) const FUNCTIONS_HOST_MARKERS: [&str; 5] = [
    "FUNCTIONS_CUSTOMHANDLER_WORKER_ID",
    "FUNCTIONS_HTTPWORKER_ID",
    "FUNCTIONS_HTTPWORKER_PORT",
    "FUNCTIONS_APP_ROOT_PATH",
    "FUNCTIONS_WORKER_RUNTIME",
];

/// Variables Azure App Service sets in every app's environment, on every plan that runs
/// Functions apps. (Not `CONTAINER_NAME`, which Linux Consumption sets too: container
/// runtimes everywhere set it, a developer's machine included.)
pub(crate) const APP_SERVICE_MARKERS: [&str; 5] = [
    "WEBSITE_SITE_NAME",
    "WEBSITE_INSTANCE_ID",
    "WEBSITE_HOSTNAME",
    "WEBSITE_SKU",
    "WEBSITE_OWNER_NAME",
];

/// App Service sets it to `True` when App Service Authentication ("Easy Auth") is on.
pub const WEBSITE_AUTH_ENABLED: &str = "WEBSITE_AUTH_ENABLED";

/// Variables the platform sets where the process has a managed identity to sign in with
/// (App Service and Functions set `IDENTITY_ENDPOINT`; older hosts `MSI_ENDPOINT`).
pub(crate) const MANAGED_IDENTITY_MARKERS: [&str; 2] = ["IDENTITY_ENDPOINT", "MSI_ENDPOINT"];

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
    /// The platform offers this process a managed identity (see [`Self::azure_credential`]).
    pub managed_identity: bool,
}

impl Platform {
    /// Reads the platform from `var`, which looks a variable up by name (the settings hand
    /// it the process environment; tests a table).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Self {
        let any_set = |names: &[&str]| names.iter().any(|name| var(name).is_some());
        Self {
            functions_host: any_set(&FUNCTIONS_HOST_MARKERS),
            app_service: any_set(&APP_SERVICE_MARKERS),
            website_auth_enabled: var(WEBSITE_AUTH_ENABLED),
            managed_identity: any_set(&MANAGED_IDENTITY_MARKERS),
        }
    }

    /// The Functions host as the tests of every plan's defaults see it.
    pub fn functions_host(website_auth_enabled: Option<&str>) -> Self {
        Self {
            functions_host: true,
            app_service: true,
            website_auth_enabled: website_auth_enabled.map(str::to_owned),
            managed_identity: false,
        }
    }

    /// Anywhere but a developer's machine: the Functions host, or App Service. Defaults
    /// that trust the caller, or that assume no triggers run, do not apply here.
    pub(crate) fn hosted(&self) -> bool {
        self.functions_host || self.app_service
    }

    /// App Service Authentication is on: the platform strips client copies of the principal
    /// headers and sets them itself.
    pub(crate) fn easy_auth_enabled(&self) -> bool {
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
            .chain(MANAGED_IDENTITY_MARKERS)
    }
}

/// The identity this process presents to Azure services: its managed identity where the
/// platform offers one ([`Platform::managed_identity`]), the user-assigned one when
/// `client_id` names one; the developer's own sign-in (Azure CLI, azd) elsewhere.
pub(crate) fn azure_credential(
    managed_identity: bool,
    client_id: Option<String>,
) -> anyhow::Result<std::sync::Arc<dyn azure_core::credentials::TokenCredential>> {
    use anyhow::Context;
    if !managed_identity {
        let credential = azure_identity::DeveloperToolsCredential::new(None)
            .context("cannot set up the developer tools credential (az login / azd auth login)")?;
        return Ok(credential);
    }
    let options = client_id.filter(|id| !id.trim().is_empty()).map(|id| {
        azure_identity::ManagedIdentityCredentialOptions {
            user_assigned_id: Some(azure_identity::UserAssignedId::ClientId(id)),
            ..Default::default()
        }
    });
    let credential = azure_identity::ManagedIdentityCredential::new(options)
        .context("cannot set up the managed identity credential")?;
    Ok(credential)
}

#[cfg(test)]
pub(crate) mod tests {
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

    /// Environments, each with what it says: the host's worker variables say a host; App
    /// Service's own variables say App Service, with no recognised host (the issue's
    /// reproduction: no FUNCTIONS_WORKER_RUNTIME); a laptop's port and container variables
    /// say nothing.
    #[test]
    fn the_host_and_app_service_are_recognised_by_their_own_variables() {
        let host = Platform {
            functions_host: true,
            ..Platform::default()
        };
        let app_service = Platform {
            app_service: true,
            ..Platform::default()
        };
        let worker = [
            ("FUNCTIONS_CUSTOMHANDLER_PORT", "40001"),
            ("FUNCTIONS_CUSTOMHANDLER_WORKER_ID", "6a1c0c3e"),
        ];
        let website = [
            ("WEBSITE_SITE_NAME", "blog-app"),
            ("WEBSITE_SKU", "FlexConsumption"),
        ];
        let laptop = [
            ("FUNCTIONS_CUSTOMHANDLER_PORT", "7072"),
            ("CONTAINER_NAME", "dev-container"),
        ];
        for (vars, says, hosted) in [
            (worker, host, true),
            (website, app_service, true),
            (laptop, Platform::default(), false),
        ] {
            let platform = plan(&vars);
            assert_eq!(platform, says, "{vars:?}");
            assert_eq!(platform.hosted(), hosted, "{vars:?}");
        }
    }

    #[test]
    fn a_managed_identity_is_offered_by_either_endpoint_variable() {
        assert!(!plan(&[("WEBSITE_SITE_NAME", "blog-app")]).managed_identity);
        for marker in MANAGED_IDENTITY_MARKERS {
            let platform = plan(&[(marker, "http://127.0.0.1:41741/msi/token")]);
            assert!(platform.managed_identity, "{marker}");
            assert!(
                !platform.hosted(),
                "an identity alone says no host: {marker}"
            );
        }
    }

    /// Values of `WEBSITE_AUTH_ENABLED` (`None`: unset) and whether each says App Service
    /// Authentication is on: only `true`, in any case and with spaces around it.
    pub(crate) const WEBSITE_AUTH_ENABLED_VALUES: [(Option<&str>, bool); 8] = [
        (None, false),
        (Some(""), false),
        (Some("false"), false),
        (Some("1"), false),
        (Some("true"), true),
        (Some("True"), true),
        (Some("TRUE"), true),
        (Some(" True "), true),
    ];

    #[test]
    fn easy_auth_is_on_only_for_true() {
        for (value, enabled) in WEBSITE_AUTH_ENABLED_VALUES {
            let platform = Platform::functions_host(value);
            assert_eq!(platform.easy_auth_enabled(), enabled, "{value:?}");
        }
    }
}
