//! Settings, all from command-line flags or environment variables (Functions app settings
//! are environment variables). With no Cosmos DB setting the embedded store is used.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::auth::AuthSettings;
use crate::changefeed::recheck::{self, Recheck};
pub use crate::store::StoreSettings;

/// The feed may be served from memory this long (ms) by default: a fraction of the
/// change feed's own lag, far below what a reader could notice.
pub const DEFAULT_FEED_CACHE_MS: u64 = 50;

/// List pages and items kept by default (MiB): a small server's share of memory for its
/// fastest reads; 64 holds the first pages of a few thousand posts' lists.
pub const DEFAULT_LIST_CACHE_MB: u64 = 64;

#[derive(Debug, Clone, Args)]
pub struct Settings {
    /// Port to serve on. The Functions host assigns one through FUNCTIONS_CUSTOMHANDLER_PORT.
    #[arg(long, env = "FUNCTIONS_CUSTOMHANDLER_PORT", default_value_t = 7071)]
    pub port: u16,

    /// Once listening, write the port to this file (replaced atomically, so a reader sees the
    /// whole number or no file): how whoever started the server with `--port 0`, which lets
    /// the system choose a free port, learns which one it got.
    #[arg(long, env = "BLOG_PORT_FILE")]
    pub port_file: Option<PathBuf>,

    /// Address to bind. Loopback by default: the default auth mode (`header`) is refused on
    /// any other address.
    #[arg(long, env = "BLOG_BIND_ADDRESS", default_value = "127.0.0.1")]
    pub bind_address: IpAddr,

    #[command(flatten)]
    pub store: StoreSettings,

    /// How long (ms) a feed read may be served from memory. The feed is the hottest read and
    /// is eventually consistent anyway; 0 turns the cache off.
    #[arg(long, env = "BLOG_FEED_CACHE_MS", default_value_t = DEFAULT_FEED_CACHE_MS)]
    pub feed_cache_ms: u64,

    /// How many MiB of list pages (a user's posts, a post's comments and likes) and of items
    /// of point reads (a user, a post) may be kept in memory and served again while their
    /// partition is unchanged. The embedded store then counts the writes to those partitions
    /// (once per partition per group commit), so a kept page shows this server's writes at
    /// once and another process's within 50 ms. Cosmos DB keeps no such count, so nothing is
    /// kept there. 0 keeps nothing (and `stop-counting` then ends the count).
    #[arg(long, env = "BLOG_LIST_CACHE_MB", default_value_t = DEFAULT_LIST_CACHE_MB)]
    pub list_cache_mb: u64,

    /// How far behind the present (ms) the delayed re-check reads the change feeds of `users`
    /// and `posts`, checks each change against its source and its dependents, and repairs what
    /// the handlers missed (stale reads, skipped trigger batches, hand edits). Beside the
    /// pump standalone; the `Recheck` timer function under the Functions host. 0 turns it off.
    #[arg(long, env = "BLOG_RECHECK_DELAY_MS", default_value_t = recheck::DEFAULT_DELAY_MS)]
    pub recheck_delay_ms: u64,

    /// Who keeps the copies in step: `pump` (in-process change-feed pump), `off` (Azure
    /// Functions triggers do it), `auto` (pump, unless running under the Functions host or on
    /// App Service, with Cosmos DB).
    #[arg(long, env = "BLOG_CHANGE_FEED", value_enum, default_value_t = ChangeFeedMode::Auto)]
    pub change_feed: ChangeFeedMode,

    #[command(flatten)]
    pub auth: AuthSettings,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ChangeFeedMode {
    Auto,
    Pump,
    Off,
}

impl Settings {
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

    /// Whether this process runs the change-feed pump.
    pub fn runs_pump(&self) -> bool {
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
            website_auth_enabled: None,
        };
        let app_service_only = Platform {
            app_service: true,
            ..Platform::default()
        };
        assert!(!settings(&cosmos, flex_without_worker_runtime.clone()).runs_pump());
        assert!(!settings(&cosmos, app_service_only).runs_pump());
        assert!(settings(&cosmos, Platform::default()).runs_pump());
        // The embedded store has no triggers: the pump runs even under `func start`.
        assert!(settings(&[], flex_without_worker_runtime.clone()).runs_pump());
        let forced = [&cosmos[..], &["--change-feed", "pump"]].concat();
        assert!(settings(&forced, flex_without_worker_runtime).runs_pump());
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
            settings(&[], Platform::default()).recheck(),
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
