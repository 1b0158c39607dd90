//! The Azure Functions metadata of the app: `host.json` and one `function.json` per
//! function, for either data layout. The HTTP functions come from the route tables that
//! build the routers (`api::routes` for the API's operations, `web::routes` for the pages),
//! one function per route and method; the triggers and timers are listed here. `cosmos-blog
//! functions generate` writes the `single` layout's into the repository (the default
//! deployment); `stage --tenancy multi` writes the `multi` layout's into a script root. Tests
//! check the committed files equal the generated ones.

use std::io;
use std::path::{Path, PathBuf};

use std::sync::LazyLock;

use serde::Serialize;

use crate::api::DescribedOperation;
use crate::changefeed::{publisher, recheck};
use crate::copies::Source;
pub use crate::operations::{ROUTE_PREFIX, TENANT_ROUTE_PREFIX};
use crate::store::Tenancy;
pub use crate::web::routes::PageScope;
use crate::web::routes::{PageRoute, blog_pages, site_pages};

/// The executable the Functions host starts (`customHandler.defaultExecutablePath`).
pub const EXECUTABLE: &str = "cosmos-blog";

/// The host's own HTTP route prefix (`host.json`): none, so that the pages can be at the
/// site's root; every API function's route starts with [`ROUTE_PREFIX`] itself.
pub const HOST_ROUTE_PREFIX: &str = "";

/// The route of a function at the site's root. The host never matches an empty route (it
/// serves its own home page there, or 204 with `AzureWebJobsDisableHomepage`); an optional
/// parameter that must be empty matches `/` and nothing else.
pub const ROOT_ROUTE: &str = "{root:maxlength(0)?}";

/// The app setting that turns the host's default home page off, so `/` reaches the front page.
pub const DISABLE_HOMEPAGE_SETTING: &str = "AzureWebJobsDisableHomepage";

/// The app setting that holds the Cosmos DB connection (string, or `__accountEndpoint`).
pub const CONNECTION_SETTING: &str = "CosmosDBConnection";

/// The folder, beside `host.json`, that holds the function folders in the repository.
pub const FUNCTIONS_DIR: &str = "functions";

/// The flag that pins the binary's layout; `host.json` passes it (see [`handler_arguments`]).
pub const TENANCY_FLAG: &str = "--tenancy";

/// One HTTP-triggered function: one operation of the API (`api::routes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpFunction {
    pub name: &'static str,
    /// Lower-case HTTP method, as `function.json` spells it.
    pub method: &'static str,
    /// Route template of the `single` layout, without the `api/` prefix, with axum's
    /// `{param}` placeholders (the Functions host uses the same syntax). The `multi` layout
    /// serves it under [`TENANT_ROUTE_PREFIX`] (see [`HttpFunction::route_in`]).
    pub route: &'static str,
    /// `Some(layout)`: only that layout has the function (Q7 lists a tenant's users).
    pub only_in: Option<Tenancy>,
    /// Served at the same path in every layout, never under a tenant: it belongs to the
    /// server, not to a blog (the health probe).
    pub site_wide: bool,
}

/// The API's operations of each layout, as its route table describes them (made once).
static DESCRIBED: LazyLock<[Vec<DescribedOperation>; 2]> = LazyLock::new(|| {
    [
        crate::api::operations(Tenancy::Single),
        crate::api::operations(Tenancy::Multi),
    ]
});

/// Every operation of the API, one function each, so each shows up on its own in the portal
/// and in Application Insights, in the route table's order. The names are the operation ids
/// of the OpenAPI document.
pub static HTTP_FUNCTIONS: LazyLock<Vec<HttpFunction>> = LazyLock::new(|| {
    let [single, multi] = &*DESCRIBED;
    multi
        .iter()
        .map(|operation| HttpFunction {
            name: &operation.name,
            method: operation.method,
            route: &operation.route,
            only_in: (!single.iter().any(|s| s.name == operation.name)).then_some(Tenancy::Multi),
            site_wide: operation.site_wide,
        })
        .collect()
});

impl HttpFunction {
    /// Whether the `tenancy` layout has this function.
    pub fn is_in(&self, tenancy: Tenancy) -> bool {
        self.only_in.is_none_or(|only| only == tenancy)
    }

    /// The route template of `function.json` in `tenancy`, e.g. `users/{userId}` or
    /// `tenants/{tenantId}/users/{userId}`.
    pub fn route_in(&self, tenancy: Tenancy) -> String {
        match tenancy {
            Tenancy::Multi if !self.site_wide => format!("{TENANT_ROUTE_PREFIX}/{}", self.route),
            _ => self.route.to_owned(),
        }
    }

    /// The route of `function.json` below the host's empty prefix: [`ROUTE_PREFIX`] and then
    /// [`HttpFunction::route_in`], e.g. `api/users/{userId}`.
    pub fn host_route_in(&self, tenancy: Tenancy) -> String {
        format!("{ROUTE_PREFIX}/{}", self.route_in(tenancy))
    }

    /// The path clients call in `tenancy`, which the host forwards unchanged and the router
    /// serves: e.g. `/api/tenants/{tenantId}/users/{userId}`.
    pub fn path_in(&self, tenancy: Tenancy) -> String {
        format!("/{ROUTE_PREFIX}/{}", self.route_in(tenancy))
    }

    /// The path of the `single` layout's route, e.g. `/api/users/{userId}`.
    pub fn axum_path(&self) -> String {
        format!("/{ROUTE_PREFIX}/{}", self.route)
    }
}

/// The HTTP functions of the `tenancy` layout.
pub fn http_functions(tenancy: Tenancy) -> impl Iterator<Item = &'static HttpFunction> {
    HTTP_FUNCTIONS.iter().filter(move |f| f.is_in(tenancy))
}

/// Every page and form of the web front end, one function each, from the pages' route
/// table. The Functions host's start-up probe of `/` takes any answer.
pub static PAGE_FUNCTIONS: LazyLock<Vec<PageRoute>> = LazyLock::new(|| {
    let (blog, site) = (blog_pages(), site_pages());
    blog.routes().chain(site.routes()).copied().collect()
});

/// Where the `multi` layout serves a blog's pages (`web::TENANT_PAGES_PREFIX` without its `/`).
pub const TENANT_PAGES_ROUTE_PREFIX: &str = "tenants/{tenantId}";

/// A page route is one Functions function; these are where the host routes it. They live
/// here, beside the host's prefixes, not with the route table, which knows no host.
impl PageRoute {
    /// The route of `function.json` in `tenancy` (the host's prefix is empty): the path
    /// below the blog's (or the site's) root without its leading `/`, under the tenant's
    /// prefix for a blog's page in `multi`.
    pub fn host_route_in(&self, tenancy: Tenancy) -> String {
        match (self.scope, tenancy, self.path.trim_start_matches('/')) {
            (PageScope::Site, _, route) | (PageScope::Blog, Tenancy::Single, route)
                if !route.is_empty() =>
            {
                route.to_owned()
            }
            (PageScope::Blog, Tenancy::Multi, "") => TENANT_PAGES_ROUTE_PREFIX.to_owned(),
            (PageScope::Blog, Tenancy::Multi, route) => {
                format!("{TENANT_PAGES_ROUTE_PREFIX}/{route}")
            }
            _ => ROOT_ROUTE.to_owned(),
        }
    }

    /// The path a browser calls in `tenancy`, e.g. `/posts/{postId}` or
    /// `/tenants/{tenantId}/posts/{postId}`.
    pub fn path_in(&self, tenancy: Tenancy) -> String {
        match self.host_route_in(tenancy).as_str() {
            ROOT_ROUTE => "/".to_owned(),
            route => format!("/{route}"),
        }
    }
}

/// `/` of a `multi` site, which has no blog of its own: the binary answers a browser there
/// with a page that says where the blogs are (a 404), which the host's start-up probe takes.
/// In `single` the front page is there.
pub const MULTI_SITE_ROOT: PageRoute = PageRoute {
    name: "SiteRootPage",
    method: "get",
    path: "/",
    scope: PageScope::Site,
};

/// The page functions of the `tenancy` layout.
pub fn page_functions(tenancy: Tenancy) -> impl Iterator<Item = &'static PageRoute> {
    let site_root = (tenancy == Tenancy::Multi).then_some(&MULTI_SITE_ROOT);
    let pages: &'static [PageRoute] = &PAGE_FUNCTIONS;
    pages.iter().chain(site_root)
}

/// The arguments the host starts the binary with: the layout whose routes the metadata
/// declares. The routes are fixed when the script root is made, so the package, not an app
/// setting, decides the layout; the flag wins over `BLOG_TENANCY`, and a binary pointed at
/// containers of the other layout refuses to start instead of serving routes nobody calls.
pub fn handler_arguments(tenancy: Tenancy) -> [&'static str; 2] {
    [TENANCY_FLAG, tenancy.name()]
}

/// One timer-triggered function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimerFunction {
    pub name: &'static str,
    /// NCRONTAB with seconds: `{second} {minute} {hour} {day} {month} {day-of-week}`.
    pub schedule: &'static str,
}

/// The timer-triggered functions: the delayed re-check (`changefeed::recheck`) and the
/// publisher of scheduled posts (`changefeed::publisher`), the same in both layouts (they
/// split what they read by tenant).
pub const TIMER_FUNCTIONS: &[TimerFunction] = &[
    TimerFunction {
        name: recheck::FUNCTION_NAME,
        schedule: recheck::TIMER_SCHEDULE,
    },
    TimerFunction {
        name: publisher::FUNCTION_NAME,
        schedule: publisher::TIMER_SCHEDULE,
    },
];

/// The retry policy of the change-feed triggers: finite (the trigger would otherwise retry
/// one poisoned batch forever and stall the lease) but long enough to ride out throttling
/// and short outages. After the last retry the batch is skipped; `rebuild` reconciles.
pub const TRIGGER_RETRY: Retry = Retry {
    strategy: "exponentialBackoff",
    max_retry_count: 8,
    minimum_interval: "00:00:05",
    maximum_interval: "00:15:00",
};

/// Documents per trigger invocation: the standalone pump's batch size, so a retried batch
/// costs the same either way and one request stays well under the adapter's body limit.
pub const MAX_ITEMS_PER_INVOCATION: u32 = 100;

// ---- host.json ----------------------------------------------------------------------------

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Host {
    version: &'static str,
    /// `OpenTelemetry`: the host exports its own spans and logs as OpenTelemetry (to
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` or Application Insights), so its invocation and the
    /// handler's spans, parented on the `traceparent` it forwards, are one trace.
    telemetry_mode: &'static str,
    extension_bundle: ExtensionBundle,
    custom_handler: CustomHandler,
    extensions: Extensions,
}

#[derive(Debug, Serialize)]
struct ExtensionBundle {
    id: &'static str,
    version: &'static str,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct CustomHandler {
    description: HandlerDescription,
    enable_forwarding_http_request: bool,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct HandlerDescription {
    default_executable_path: &'static str,
    working_directory: &'static str,
    arguments: [&'static str; 2],
}

#[derive(Debug, Serialize)]
struct Extensions {
    http: HttpExtension,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct HttpExtension {
    route_prefix: &'static str,
}

fn host(tenancy: Tenancy) -> Host {
    Host {
        version: "2.0",
        telemetry_mode: "OpenTelemetry",
        extension_bundle: ExtensionBundle {
            id: "Microsoft.Azure.Functions.ExtensionBundle",
            // v4 of the bundle carries v4 of the Cosmos DB extension (containerName, ...).
            version: "[4.*, 5.0.0)",
        },
        custom_handler: CustomHandler {
            description: HandlerDescription {
                default_executable_path: EXECUTABLE,
                working_directory: "",
                arguments: handler_arguments(tenancy),
            },
            enable_forwarding_http_request: true,
        },
        extensions: Extensions {
            http: HttpExtension {
                route_prefix: HOST_ROUTE_PREFIX,
            },
        },
    }
}

// ---- function.json ------------------------------------------------------------------------

#[derive(Debug, Serialize)]
struct FunctionJson {
    bindings: Vec<Binding>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry: Option<Retry>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Retry {
    pub strategy: &'static str,
    pub max_retry_count: u32,
    /// `hh:mm:ss`, as the host reads TimeSpans.
    pub minimum_interval: &'static str,
    pub maximum_interval: &'static str,
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Binding {
    HttpTrigger(HttpTriggerBinding),
    HttpOut(HttpOutBinding),
    CosmosTrigger(CosmosTriggerBinding),
    TimerTrigger(TimerTriggerBinding),
}

#[derive(Debug, Serialize)]
struct TimerTriggerBinding {
    #[serde(rename = "type")]
    kind: &'static str,
    direction: &'static str,
    /// The adapter finds the timer's data under `Data.timer`.
    name: &'static str,
    schedule: &'static str,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct HttpTriggerBinding {
    #[serde(rename = "type")]
    kind: &'static str,
    direction: &'static str,
    name: &'static str,
    /// Anonymous: callers are authenticated by App Service Authentication (Easy Auth), which
    /// sets `x-ms-client-principal-id`; function keys would add nothing but a shared secret.
    auth_level: &'static str,
    methods: [&'static str; 1],
    route: String,
}

#[derive(Debug, Serialize)]
struct HttpOutBinding {
    #[serde(rename = "type")]
    kind: &'static str,
    direction: &'static str,
    name: &'static str,
}

/// Property names of version 4 of the Cosmos DB extension.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct CosmosTriggerBinding {
    #[serde(rename = "type")]
    kind: &'static str,
    direction: &'static str,
    name: &'static str,
    connection: &'static str,
    database_name: &'static str,
    container_name: &'static str,
    lease_container_name: &'static str,
    lease_container_prefix: String,
    create_lease_container_if_not_exists: bool,
    max_items_per_invocation: u32,
}

fn http_function_json(function: &HttpFunction, tenancy: Tenancy) -> FunctionJson {
    http_trigger_json(function.method, function.host_route_in(tenancy))
}

fn page_function_json(function: &PageRoute, tenancy: Tenancy) -> FunctionJson {
    http_trigger_json(function.method, function.host_route_in(tenancy))
}

fn http_trigger_json(method: &'static str, route: String) -> FunctionJson {
    FunctionJson {
        bindings: vec![
            Binding::HttpTrigger(HttpTriggerBinding {
                kind: "httpTrigger",
                direction: "in",
                name: "req",
                auth_level: "anonymous",
                methods: [method],
                route,
            }),
            Binding::HttpOut(HttpOutBinding {
                kind: "http",
                direction: "out",
                name: "res",
            }),
        ],
        retry: None,
    }
}

fn trigger_function_json(source: Source) -> FunctionJson {
    FunctionJson {
        bindings: vec![Binding::CosmosTrigger(CosmosTriggerBinding {
            kind: "cosmosDBTrigger",
            direction: "in",
            // The adapter reads `Data.documents`: the host names the data after the binding.
            name: "documents",
            connection: CONNECTION_SETTING,
            // Resolved by the host from the app setting the binary reads too.
            database_name: "%COSMOS_DATABASE%",
            container_name: source.container().name(),
            lease_container_name: "leases",
            // Each trigger keeps its own leases in the shared lease container.
            lease_container_prefix: format!("{}.", source.function_name()),
            create_lease_container_if_not_exists: true,
            max_items_per_invocation: MAX_ITEMS_PER_INVOCATION,
        })],
        retry: Some(TRIGGER_RETRY),
    }
}

fn timer_function_json(function: &TimerFunction) -> FunctionJson {
    FunctionJson {
        bindings: vec![Binding::TimerTrigger(TimerTriggerBinding {
            kind: "timerTrigger",
            direction: "in",
            name: "timer",
            schedule: function.schedule,
        })],
        // A failed tick is simply the next tick's work: the re-check keeps its checkpoint.
        retry: None,
    }
}

// ---- files --------------------------------------------------------------------------------

/// A generated file: its path relative to the script root and its exact content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedFile {
    pub path: PathBuf,
    pub content: String,
}

fn pretty<T: Serialize>(value: &T) -> String {
    // Serialising these plain structs cannot fail: no maps with non-string keys, no I/O.
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

/// The names of every function of `tenancy`: the HTTP table, then the change-feed triggers,
/// then the timers.
pub fn function_names(tenancy: Tenancy) -> Vec<&'static str> {
    http_functions(tenancy)
        .map(|f| f.name)
        .chain(page_functions(tenancy).map(|f| f.name))
        .chain(Source::ALL.iter().map(|s| s.function_name()))
        .chain(TIMER_FUNCTIONS.iter().map(|t| t.name))
        .collect()
}

/// `host.json` and one `<Name>/function.json` per function of `tenancy`, with paths relative
/// to a script root where function folders sit beside `host.json` (the layout the host
/// reads). The change-feed triggers and the timers are the same in both layouts: their
/// handlers split a batch by tenant.
pub fn script_root_files(tenancy: Tenancy) -> Vec<GeneratedFile> {
    let functions = http_functions(tenancy)
        .map(|f| (f.name, pretty(&http_function_json(f, tenancy))))
        .chain(page_functions(tenancy).map(|f| (f.name, pretty(&page_function_json(f, tenancy)))))
        .chain(
            Source::ALL
                .iter()
                .map(|s| (s.function_name(), pretty(&trigger_function_json(*s)))),
        )
        .chain(
            TIMER_FUNCTIONS
                .iter()
                .map(|t| (t.name, pretty(&timer_function_json(t)))),
        )
        .map(|(name, content)| GeneratedFile {
            path: Path::new(name).join("function.json"),
            content,
        });
    std::iter::once(GeneratedFile {
        path: PathBuf::from("host.json"),
        content: pretty(&host(tenancy)),
    })
    .chain(functions)
    .collect()
}

/// The same files laid out as the repository keeps them: function folders under
/// [`FUNCTIONS_DIR`]. The repository holds the `single` layout's.
pub fn repository_files(tenancy: Tenancy) -> Vec<GeneratedFile> {
    script_root_files(tenancy)
        .into_iter()
        .map(|file| {
            if file.path == Path::new("host.json") {
                file
            } else {
                GeneratedFile {
                    path: Path::new(FUNCTIONS_DIR).join(&file.path),
                    content: file.content,
                }
            }
        })
        .collect()
}

/// Writes [`repository_files`] under `root`, replacing `functions/` whole so that a renamed
/// or removed function leaves no stale folder behind.
pub fn write_repository(root: &Path, tenancy: Tenancy) -> io::Result<Vec<PathBuf>> {
    let functions = root.join(FUNCTIONS_DIR);
    if functions.exists() {
        std::fs::remove_dir_all(&functions)?;
    }
    write_files(root, &repository_files(tenancy))
}

/// Writes `files` under `root`, creating folders as needed; returns the paths written.
pub fn write_files(root: &Path, files: &[GeneratedFile]) -> io::Result<Vec<PathBuf>> {
    let mut written = Vec::with_capacity(files.len());
    for file in files {
        let path = root.join(&file.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, &file.content)?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn function_names_are_valid_and_unique() {
        for tenancy in [Tenancy::Single, Tenancy::Multi] {
            names_are_valid_and_unique(function_names(tenancy));
        }
    }

    fn names_are_valid_and_unique(names: Vec<&str>) {
        for name in &names {
            let mut chars = name.chars();
            assert!(
                chars.next().is_some_and(|c| c.is_ascii_alphabetic()),
                "{name}"
            );
            assert!(
                chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
                "{name}"
            );
        }
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len());
    }

    #[test]
    fn no_two_http_functions_share_a_route_and_method() {
        for tenancy in [Tenancy::Single, Tenancy::Multi] {
            let functions: Vec<&HttpFunction> = http_functions(tenancy).collect();
            for (i, a) in functions.iter().enumerate() {
                for b in &functions[i + 1..] {
                    assert!(
                        a.route_in(tenancy) != b.route_in(tenancy) || a.method != b.method,
                        "{a:?} / {b:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn every_route_is_under_the_tenant_prefix_in_multi_and_q7_only_there() {
        let get_user = HTTP_FUNCTIONS.iter().find(|f| f.name == "GetUser").unwrap();
        assert_eq!(get_user.route_in(Tenancy::Single), "users/{userId}");
        assert_eq!(
            get_user.path_in(Tenancy::Multi),
            "/api/tenants/{tenantId}/users/{userId}"
        );
        let in_layout =
            |tenancy| -> Vec<&str> { http_functions(tenancy).map(|f| f.name).collect() };
        assert!(!in_layout(Tenancy::Single).contains(&"ListUsers"));
        assert!(in_layout(Tenancy::Multi).contains(&"ListUsers"));
        assert_eq!(in_layout(Tenancy::Multi).len(), HTTP_FUNCTIONS.len());
    }

    #[test]
    fn the_host_exports_open_telemetry_and_operations_map_to_functions() {
        use crate::api::function_for;
        use crate::operations::trigger_for;
        let host: serde_json::Value =
            serde_json::from_str(&pretty(&host(Tenancy::Single))).unwrap();
        assert_eq!(host["telemetryMode"], "OpenTelemetry");
        assert_eq!(
            function_for("POST", "/api/posts/{postId}/comments"),
            Some("AddComment")
        );
        assert_eq!(
            function_for("delete", "/api/posts/{postId}/likes"),
            Some("Unlike")
        );
        assert_eq!(
            function_for("GET", "/api/tenants/{tenantId}/users"),
            Some("ListUsers")
        );
        assert_eq!(function_for("GET", "/api/users"), None);
        assert_eq!(function_for("GET", "/api/health"), Some("GetHealth"));
        assert_eq!(trigger_for("POST", "/OnPostChanged"), Some("OnPostChanged"));
        assert_eq!(trigger_for("POST", "/Recheck"), None);
        assert_eq!(function_for("GET", "/api/posts/{postId}/comments/x"), None);
        assert_eq!(function_for("GET", "/"), None);
    }

    fn page_function(name: &str) -> &'static PageRoute {
        PAGE_FUNCTIONS.iter().find(|f| f.name == name).unwrap()
    }

    #[test]
    fn pages_are_at_the_site_root_and_the_api_keeps_its_prefix() {
        let host: serde_json::Value =
            serde_json::from_str(&pretty(&host(Tenancy::Single))).unwrap();
        assert_eq!(host["extensions"]["http"]["routePrefix"], "");
        let get_user = HTTP_FUNCTIONS.iter().find(|f| f.name == "GetUser").unwrap();
        assert_eq!(
            get_user.host_route_in(Tenancy::Single),
            "api/users/{userId}"
        );
        assert_eq!(
            get_user.host_route_in(Tenancy::Multi),
            "api/tenants/{tenantId}/users/{userId}"
        );
        let front = page_function("FrontPage");
        assert_eq!(front.host_route_in(Tenancy::Single), ROOT_ROUTE);
        assert_eq!(front.path_in(Tenancy::Single), "/");
        assert_eq!(front.path_in(Tenancy::Multi), "/tenants/{tenantId}");
        let post = page_function("PostPage");
        assert_eq!(
            post.path_in(Tenancy::Multi),
            "/tenants/{tenantId}/posts/{postId}/{slug}"
        );
        let asset = page_function("PageAsset");
        assert_eq!(asset.path_in(Tenancy::Multi), "/assets/{file}");
        assert_eq!(
            format!("/{TENANT_PAGES_ROUTE_PREFIX}"),
            crate::web::TENANT_PAGES_PREFIX
        );
        for tenancy in [Tenancy::Single, Tenancy::Multi] {
            let mut routes: Vec<(String, &str)> = http_functions(tenancy)
                .map(|f| (f.host_route_in(tenancy), f.method))
                .chain(page_functions(tenancy).map(|f| (f.host_route_in(tenancy), f.method)))
                .collect();
            let count = routes.len();
            routes.sort();
            routes.dedup();
            assert_eq!(routes.len(), count, "{tenancy}: a route and method twice");
        }
    }

    #[test]
    fn lease_prefixes_are_distinct() {
        let prefixes: Vec<String> = Source::ALL
            .iter()
            .map(|s| trigger_function_json(*s))
            .filter_map(|f| match f.bindings.first() {
                Some(Binding::CosmosTrigger(b)) => Some(b.lease_container_prefix.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(prefixes.len(), 2);
        assert_ne!(prefixes[0], prefixes[1]);
    }
}
