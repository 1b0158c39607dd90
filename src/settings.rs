//! Settings, all from command-line flags or environment variables (Functions app settings
//! are environment variables). With no Cosmos DB setting the embedded store is used. The
//! flags' variables are read by clap; the platform's and OpenTelemetry's own by
//! [`environment`]. What is read here is handed down: no module below reads the environment.

pub mod environment;
pub mod images;

use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use clap::{Args, ValueEnum};

use crate::auth::AuthSettings;
use crate::changefeed::publisher::{self, Publisher};
use crate::changefeed::pump;
use crate::changefeed::recheck::{self, Recheck};
use crate::images::ImageStore;
use crate::signing::{ServerKey, random_secret};
pub use crate::store::StoreSettings;
use crate::web::PublicUrl;
pub use images::ImageSettings;

/// The feed may be served from memory this long (ms) by default: a fraction of the
/// change feed's own lag, far below what a reader could notice.
pub const DEFAULT_FEED_CACHE_MS: u64 = 50;

/// List pages and items kept by default (MiB): a small server's share of memory for its
/// fastest reads, taken only as pages are read. 128 holds the users, the posts and the
/// first pages of every list of a blog of about 5,000 posts with their comments and likes;
/// 64 held about two thirds of them, and their lists were read anew every other time.
pub const DEFAULT_LIST_CACHE_MB: u64 = 128;

#[derive(Debug, Clone, Args)]
pub struct Settings {
    /// Port to serve on. The Functions host assigns one through FUNCTIONS_CUSTOMHANDLER_PORT.
    #[arg(
        long,
        env = "FUNCTIONS_CUSTOMHANDLER_PORT",
        default_value_t = 7071,
        global = true
    )]
    pub port: u16,

    /// Once listening, write the port to this file (replaced atomically, so a reader sees the
    /// whole number or no file): how whoever started the server with `--port 0`, which lets
    /// the system choose a free port, learns which one it got.
    #[arg(long, env = "BLOG_PORT_FILE", global = true)]
    pub port_file: Option<PathBuf>,

    /// Address to bind. Loopback by default: the default auth mode (`header`) is refused on
    /// any other address.
    #[arg(
        long,
        env = "BLOG_BIND_ADDRESS",
        default_value = "127.0.0.1",
        global = true
    )]
    pub bind_address: IpAddr,

    #[command(flatten)]
    pub store: StoreSettings,

    /// How long (ms) a feed read may be served from memory. The feed is the hottest read and
    /// is eventually consistent anyway; 0 turns the cache off.
    #[arg(long, env = "BLOG_FEED_CACHE_MS", default_value_t = DEFAULT_FEED_CACHE_MS, global = true)]
    pub feed_cache_ms: u64,

    /// How many MiB of list pages (a user's posts, a post's comments and likes) and of items
    /// of point reads (a user, a post) may be kept in memory and served again while their
    /// partition is unchanged. The embedded store then counts the writes to those partitions
    /// (once per partition per group commit), so a kept page shows this server's writes at
    /// once and another process's within 50 ms. Cosmos DB keeps no such count, so nothing is
    /// kept there. 0 keeps nothing (and `stop-counting` then ends the count).
    #[arg(long, env = "BLOG_LIST_CACHE_MB", default_value_t = DEFAULT_LIST_CACHE_MB, global = true)]
    pub list_cache_mb: u64,

    /// How far behind the present (ms) the delayed re-check reads the change feeds of `users`
    /// and `posts`, checks each change against its source and its dependents, and repairs what
    /// the handlers missed (stale reads, skipped trigger batches, hand edits). Beside the
    /// pump standalone; the `Recheck` timer function under the Functions host. 0 turns it off.
    #[arg(long, env = "BLOG_RECHECK_DELAY_MS", default_value_t = recheck::DEFAULT_DELAY_MS, global = true)]
    pub recheck_delay_ms: u64,

    /// How often (ms) the server looks for scheduled posts whose time has come and publishes
    /// them (beside the pump standalone; under the Functions host the `PublishScheduled`
    /// timer does it every minute). 0 turns it off: scheduled posts then wait.
    #[arg(long, env = "BLOG_PUBLISH_STEP_MS", default_value_t = publisher::DEFAULT_STEP_MS, global = true)]
    pub publish_step_ms: u64,

    /// Who keeps the copies in step: `pump` (in-process change-feed pump), `off` (Azure
    /// Functions triggers do it), `auto` (pump, unless running under the Functions host or on
    /// App Service, with Cosmos DB).
    #[arg(long, env = "BLOG_CHANGE_FEED", value_enum, default_value_t = ChangeFeedMode::Auto, global = true)]
    pub change_feed: ChangeFeedMode,

    /// How often (ms) the idle pump looks for changes it was not told of: this process's own
    /// writes wake it at once, so this bounds how late it sees other processes' writes (other
    /// instances on one Cosmos DB account). Each look is one change-feed read per source
    /// container.
    #[arg(long, env = "BLOG_CHANGE_FEED_POLL_MS", default_value_t = pump::DEFAULT_POLL_MS, value_parser = clap::value_parser!(u64).range(1..), global = true)]
    pub change_feed_poll_ms: u64,

    #[command(flatten)]
    pub auth: AuthSettings,

    #[command(flatten)]
    pub site: SiteSettings,

    #[command(flatten)]
    pub images: ImageSettings,
}

/// What the pages know of the site: its public address and the key of the forms' tokens.
#[derive(Debug, Clone, Default, Args)]
pub struct SiteSettings {
    /// The site's public address (`https://blog.example`, an origin: no path). Every absolute
    /// URL the Atom feeds, canonical links and link previews give starts with it, never with
    /// the host a request names. Default: `https://$WEBSITE_HOSTNAME` on Azure App Service,
    /// else `http://127.0.0.1:{port}`. In `multi` a tenant's blog is at
    /// `{this}/tenants/{tenantId}`.
    #[arg(long, env = PUBLIC_URL_SETTING)]
    pub public_url: Option<String>,

    /// The host name Azure App Service gives the site (the platform sets it).
    #[arg(long, env = "WEBSITE_HOSTNAME", hide = true)]
    pub website_hostname: Option<String>,

    /// The server's key (any long random text), which signs the pages' form tokens and the
    /// lists' continuation tokens: the same on every instance, so that a form or a token one
    /// instance handed out is taken by another, and after a restart. Default: a key kept in
    /// the file `form-key` beside the embedded store, or on Cosmos DB one drawn per process
    /// (said at start-up on a hosting platform).
    #[arg(long, env = CSRF_KEY_SETTING, hide_env_values = true)]
    pub csrf_key: Option<String>,

    /// The blog's name, shown in every page's header and title and in the feeds' titles
    /// (default "Cosmos Blog"). In `multi` every tenant's blog is called so.
    #[arg(long, env = "BLOG_TITLE")]
    pub title: Option<String>,

    /// One sentence about the blog: the front page's meta description and the feeds'
    /// description (default: a sentence naming the blog's latest posts).
    #[arg(long, env = "BLOG_DESCRIPTION")]
    pub description: Option<String>,
}

pub(crate) const PUBLIC_URL_SETTING: &str = "BLOG_PUBLIC_URL";
pub(crate) const CSRF_KEY_SETTING: &str = "BLOG_CSRF_KEY";

/// The blog's title when `BLOG_TITLE` gives none.
pub(crate) const DEFAULT_BLOG_TITLE: &str = "Cosmos Blog";

/// Where the embedded store's folder keeps the server's key when no setting gives one (named
/// when the key signed the forms' tokens alone).
pub(crate) const KEY_FILE: &str = "form-key";

/// Where the server's key came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeySource {
    Setting,
    /// The file beside the embedded store (drawn there on the first start).
    File,
    /// Drawn for this process alone.
    Process,
}

impl SiteSettings {
    /// The public address: the setting, else App Service's host name, else loopback on
    /// `port` (the port this server listens on).
    pub fn public_url(&self, port: u16) -> anyhow::Result<PublicUrl> {
        fn given(value: &Option<String>) -> Option<&str> {
            value.as_deref().filter(|v| !v.trim().is_empty())
        }
        if let Some(url) = given(&self.public_url) {
            return PublicUrl::parse(url)
                .map_err(|why| anyhow::anyhow!("{PUBLIC_URL_SETTING}={url}: {why}"));
        }
        if let Some(host) = given(&self.website_hostname) {
            // `func start` names the developer's machine there.
            let host = host.trim();
            let local = host.starts_with("localhost") || host.starts_with("127.0.0.1");
            let scheme = if local { "http" } else { "https" };
            return PublicUrl::parse(&format!("{scheme}://{host}"))
                .map_err(|why| anyhow::anyhow!("WEBSITE_HOSTNAME={host}: {why}"));
        }
        Ok(PublicUrl::loopback(port))
    }

    /// The blog's title: the setting, trimmed, else "Cosmos Blog".
    pub(crate) fn blog_title(&self) -> String {
        self.title
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .unwrap_or(DEFAULT_BLOG_TITLE)
            .to_owned()
    }

    /// The blog's description: the setting, trimmed, else one sentence made from the title.
    pub(crate) fn blog_description(&self) -> String {
        match self.description.as_deref().map(str::trim) {
            Some(description) if !description.is_empty() => description.to_owned(),
            _ => format!(
                "The latest posts on {}, with their authors, comments and likes.",
                self.blog_title()
            ),
        }
    }

    /// Whether a public address was given (or the platform gave one).
    pub(crate) fn names_public_url(&self) -> bool {
        [&self.public_url, &self.website_hostname]
            .iter()
            .any(|v| v.as_deref().is_some_and(|v| !v.trim().is_empty()))
    }

    /// The server's key: the setting; else, on the embedded store, the one kept beside it
    /// (drawn and written there on the first start); else one for this process.
    pub(crate) fn server_key(
        &self,
        store: &StoreSettings,
    ) -> anyhow::Result<(ServerKey, KeySource)> {
        if let Some(key) = self.csrf_key.as_deref().filter(|k| !k.is_empty()) {
            return Ok((ServerKey::from_secret(key.as_bytes()), KeySource::Setting));
        }
        if store.uses_cosmos() {
            return Ok((ServerKey::drawn(), KeySource::Process));
        }
        let secret = kept_key(&store.data_dir)?;
        Ok((ServerKey::from_secret(&secret), KeySource::File))
    }
}

/// The least a kept key may hold (bytes): less is not a key drawn here.
const MIN_KEPT_KEY_BYTES: usize = 32;

/// The key kept in `data_dir`'s [`KEY_FILE`], drawn and written (readable by its owner
/// only) when there is none. Two processes starting at once on one folder agree: only one
/// creates the file, the other reads it.
fn kept_key(data_dir: &Path) -> anyhow::Result<Vec<u8>> {
    let path = data_dir.join(KEY_FILE);
    let read = |path: &Path| -> anyhow::Result<Vec<u8>> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the server's key {}", path.display()))?;
        let key = text.trim().as_bytes().to_vec();
        anyhow::ensure!(
            key.len() >= MIN_KEPT_KEY_BYTES,
            "the server's key {} is too short to be one: delete it, and a new one is drawn",
            path.display()
        );
        Ok(key)
    };
    if path.exists() {
        return read(&path);
    }
    std::fs::create_dir_all(data_dir)
        .with_context(|| format!("cannot create the data folder {}", data_dir.display()))?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(&path) {
        Ok(mut file) => {
            let text = URL_SAFE_NO_PAD.encode(random_secret());
            file.write_all(format!("{text}\n").as_bytes())
                .and_then(|()| file.sync_all())
                .with_context(|| format!("cannot write the server's key {}", path.display()))?;
            Ok(text.into_bytes())
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read(&path),
        Err(e) => {
            Err(e).with_context(|| format!("cannot create the server's key {}", path.display()))
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ChangeFeedMode {
    Auto,
    Pump,
    Off,
}

impl Settings {
    /// The store of the images' bytes that goes with the store these settings name (by
    /// default, files in the same data folder): the server, `verify`, export and import open
    /// the same one.
    pub async fn open_image_bytes(&self) -> anyhow::Result<Arc<dyn ImageStore>> {
        self.images
            .open_store(&self.store.data_dir, &self.store)
            .await
    }

    /// [`StoreSettings::contradictions`] and those of the server's own settings.
    pub fn contradictions(&self) -> Vec<String> {
        let mut found = self.store.contradictions();
        let jwt_settings = [
            ("BLOG_JWT_JWKS", &self.auth.jwt_jwks),
            ("BLOG_JWT_ISSUER", &self.auth.jwt_issuer),
            ("BLOG_JWT_AUDIENCE", &self.auth.jwt_audience),
            ("BLOG_JWT_CLAIM", &self.auth.jwt_claim),
        ];
        let given: Vec<&str> = jwt_settings
            .iter()
            .filter(|(_, value)| value.is_some())
            .map(|(name, _)| *name)
            .collect();
        if !given.is_empty() && self.auth.mode != Some(crate::auth::AuthMode::Jwt) {
            found.push(format!(
                "{} set, but BLOG_AUTH (--auth) is not `jwt`: no bearer token would be checked; \
                 set BLOG_AUTH=jwt or remove them",
                given.join(", ")
            ));
        }
        found
    }

    /// Where this process runs the delayed re-check: beside its pump, or when the Functions
    /// host invokes the timer function (the triggers' counterpart).
    pub fn recheck(&self) -> Recheck {
        match self.recheck_delay_ms {
            0 => Recheck::Off,
            ms if self.runs_pump() => Recheck::BesideThePump(Duration::from_millis(ms)),
            ms => Recheck::OnTimer(Duration::from_millis(ms)),
        }
    }

    /// How often the idle change-feed pump polls (see `change_feed_poll_ms`).
    pub fn change_feed_poll(&self) -> Duration {
        Duration::from_millis(self.change_feed_poll_ms)
    }

    /// Where this process publishes scheduled posts: in a task beside its pump, or when the
    /// Functions host invokes the timer function.
    pub fn publisher(&self) -> Publisher {
        match self.publish_step_ms {
            0 => Publisher::Off,
            ms if self.runs_pump() => Publisher::InProcess(Duration::from_millis(ms)),
            _ => Publisher::OnTimer,
        }
    }

    /// What start-up says about the site's settings where they are unsafe or incomplete:
    /// forms that fail between instances, links that name a machine no reader reaches.
    pub(crate) fn site_warnings(&self, key_source: KeySource) -> Vec<String> {
        let mut said = Vec::new();
        if self.auth.platform.hosted() && key_source != KeySource::Setting {
            said.push(format!(
                "{CSRF_KEY_SETTING} is not set: with more than one instance, or after a \
                 restart, forms are refused once (what was typed comes back to be sent \
                 again) and continuation tokens are refused (400 invalid-continuation); set \
                 it to one secret for all instances (the template does)"
            ));
        }
        if !self.site.names_public_url() && !self.bind_address.is_loopback() {
            said.push(format!(
                "{PUBLIC_URL_SETTING} is not set: the feeds and link previews name this \
                 server as http://127.0.0.1:{{port}}, which no other machine reaches; set it \
                 to the address readers use"
            ));
        }
        said
    }

    /// Completes what no flag gives: what the hosting platform says of this process, from
    /// the variables it sets ([`environment::platform`]). `main` calls it once on the
    /// settings it parsed; tests set `auth.platform` (and `store.managed_identity`) instead.
    pub fn read_platform(&mut self) {
        let platform = environment::platform();
        self.store.managed_identity = platform.managed_identity;
        self.auth.platform = platform;
    }

    /// Whether this process runs the change-feed pump.
    pub(crate) fn runs_pump(&self) -> bool {
        match self.change_feed {
            ChangeFeedMode::Pump => true,
            ChangeFeedMode::Off => false,
            // Hosted on Cosmos DB the triggers do the work; the embedded store has no
            // triggers, so the pump runs there even under `func start`.
            ChangeFeedMode::Auto => !(self.auth.platform.hosted() && self.store.uses_cosmos()),
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::platform::Platform;

    #[derive(Parser)]
    struct Command {
        #[command(flatten)]
        settings: Settings,
    }

    /// The settings `args` give on a developer's machine: no platform variables.
    fn on_a_laptop(args: &[&str]) -> Settings {
        settings(args, Platform::default())
    }

    fn settings(args: &[&str], platform: Platform) -> Settings {
        let mut settings =
            Command::try_parse_from(std::iter::once("cosmos-blog").chain(args.iter().copied()))
                .expect("valid flags")
                .settings;
        settings.auth.platform = platform;
        settings
    }

    #[test]
    fn auto_leaves_the_change_feed_to_the_triggers_when_hosted_on_cosmos_db() {
        let cosmos = ["--cosmos-endpoint", "https://blog.documents.azure.com:443/"];
        let flex_without_worker_runtime = Platform {
            functions_host: true,
            app_service: true,
            ..Platform::default()
        };
        let app_service_only = Platform {
            app_service: true,
            ..Platform::default()
        };
        assert!(!settings(&cosmos, flex_without_worker_runtime.clone()).runs_pump());
        assert!(!settings(&cosmos, app_service_only).runs_pump());
        assert!(on_a_laptop(&cosmos).runs_pump());
        // The embedded store has no triggers: the pump runs even under `func start`.
        assert!(settings(&[], flex_without_worker_runtime.clone()).runs_pump());
        let forced = [&cosmos[..], &["--change-feed", "pump"]].concat();
        assert!(settings(&forced, flex_without_worker_runtime).runs_pump());
    }

    #[test]
    fn the_blogs_title_and_description_come_from_the_settings_or_default() {
        let plain = on_a_laptop(&[]);
        assert_eq!(plain.site.blog_title(), DEFAULT_BLOG_TITLE);
        assert!(plain.site.blog_description().contains(DEFAULT_BLOG_TITLE));
        let named = on_a_laptop(&[
            "--title",
            "  Field Notes ",
            "--description",
            "Weekly notes.",
        ]);
        assert_eq!(named.site.blog_title(), "Field Notes");
        assert_eq!(named.site.blog_description(), "Weekly notes.");
        let blank = on_a_laptop(&["--title", " ", "--description", ""]);
        assert_eq!(blank.site.blog_title(), DEFAULT_BLOG_TITLE);
        assert!(blank.site.blog_description().contains(DEFAULT_BLOG_TITLE));
    }

    #[test]
    fn the_servers_key_is_kept_beside_the_embedded_store_unless_a_setting_gives_one() {
        use crate::signing::Purpose;
        let dir = tempfile::tempdir().expect("temp dir");
        let data = dir.path().join("data");
        let data_arg = data.to_str().expect("a UTF-8 path");
        let laptop = on_a_laptop(&["--data-dir", data_arg]);
        let (first, source) = laptop.site.server_key(&laptop.store).expect("a key");
        assert_eq!(source, KeySource::File);
        let (again, _) = laptop.site.server_key(&laptop.store).expect("the same key");
        let signed = first.sign(Purpose::FormToken, b"nonce");
        assert!(again.verifies(Purpose::FormToken, b"nonce", &signed));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(data.join(KEY_FILE))
                .expect("the key file")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "readable by its owner only");
        }
        let set = on_a_laptop(&["--data-dir", data_arg, "--csrf-key", "one secret"]);
        assert_eq!(
            set.site.server_key(&set.store).expect("a key").1,
            KeySource::Setting
        );
        let cosmos = on_a_laptop(&["--cosmos-endpoint", "https://blog.documents.azure.com:443/"]);
        assert_eq!(
            cosmos.site.server_key(&cosmos.store).expect("a key").1,
            KeySource::Process
        );
        std::fs::write(data.join(KEY_FILE), "short").expect("written");
        assert!(laptop.site.server_key(&laptop.store).is_err(), "not a key");
    }

    #[test]
    fn the_public_address_is_the_setting_else_the_platforms_else_loopback() {
        let laptop = on_a_laptop(&[]);
        assert_eq!(
            laptop.site.public_url(8080).expect("loopback").as_str(),
            "http://127.0.0.1:8080"
        );
        let set = on_a_laptop(&["--public-url", "https://blog.example/"]);
        assert_eq!(
            set.site.public_url(8080).expect("set").as_str(),
            "https://blog.example"
        );
        let mut azure = on_a_laptop(&[]);
        azure.site.website_hostname = Some("blog.azurewebsites.net".into());
        assert_eq!(
            azure.site.public_url(80).expect("the platform's").as_str(),
            "https://blog.azurewebsites.net"
        );
        let wrong = on_a_laptop(&["--public-url", "https://blog.example/blog"]);
        assert!(wrong.site.public_url(80).is_err(), "a path is refused");
    }

    /// The variables the Cosmos DB connection reads keep their names (the Functions
    /// convention, the platform's, the SDK's), and what they hold reaches the store's settings.
    #[test]
    fn the_cosmos_connection_reads_the_conventional_variables() {
        use clap::CommandFactory;
        let command = Command::command();
        let variable = |id: &str| {
            command
                .get_arguments()
                .find(|arg| arg.get_id() == id)
                .and_then(|arg| arg.get_env())
                .and_then(|name| name.to_str())
                .map(str::to_owned)
        };
        assert_eq!(
            variable("cosmos_client_id").as_deref(),
            Some("CosmosDBConnection__clientId")
        );
        assert_eq!(variable("region_name").as_deref(), Some("REGION_NAME"));
        assert_eq!(
            variable("cosmos_binary_encoding").as_deref(),
            Some("AZURE_COSMOS_BINARY_ENCODING_ENABLED")
        );
        let given = on_a_laptop(&[
            "--cosmos-client-id",
            "6a1c0c3e",
            "--region-name",
            "West Europe",
            "--cosmos-binary-encoding",
            "false",
        ]);
        assert_eq!(given.store.cosmos_client_id.as_deref(), Some("6a1c0c3e"));
        assert_eq!(given.store.region_name.as_deref(), Some("West Europe"));
        assert_eq!(given.store.cosmos_binary_encoding.as_deref(), Some("false"));
        let defaults = on_a_laptop(&[]);
        assert_eq!(defaults.store.region_name, None);
        assert!(!defaults.store.managed_identity, "the platform's to say");
    }

    #[test]
    fn the_recheck_runs_where_the_change_feed_is_handled() {
        let cosmos = ["--cosmos-endpoint", "https://blog.documents.azure.com:443/"];
        let host = Platform {
            functions_host: true,
            ..Platform::default()
        };
        let ten_minutes = Duration::from_secs(600);
        assert_eq!(
            on_a_laptop(&[]).recheck(),
            Recheck::BesideThePump(ten_minutes)
        );
        assert_eq!(
            settings(&cosmos, host.clone()).recheck(),
            Recheck::OnTimer(ten_minutes)
        );
        let off = [&cosmos[..], &["--recheck-delay-ms", "0"]].concat();
        assert_eq!(settings(&off, host).recheck(), Recheck::Off);
    }
}
