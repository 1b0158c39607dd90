//! The real application for a browser: served on a port the system chose, on a fresh embedded
//! store, with the change-feed pump and the development sign-in (`header` mode on loopback).

use std::sync::Arc;

use clap::Parser;
use cosmos_blog::auth::AuthSettings;
use cosmos_blog::platform::Platform;
use cosmos_blog::settings::Settings;
use cosmos_blog::startup::Application;
use cosmos_blog::store::Store;
use cosmos_blog::store::embedded::EmbeddedStore;
use tempfile::TempDir;
use tokio::sync::oneshot;

/// A running blog; dropping it stops the server and removes its store.
pub struct Blog {
    /// `http://127.0.0.1:PORT`
    pub address: String,
    _stop: oneshot::Sender<()>,
    _data_dir: TempDir,
}

/// The settings as flags: parsed like the binary's own, so every setting added later keeps its
/// default here. Explicit flags win over the environment the tests run in.
#[derive(Parser)]
struct Flags {
    #[command(flatten)]
    settings: Settings,
}

impl Blog {
    pub async fn spawn() -> Self {
        let data_dir = TempDir::new().expect("temp dir");
        let settings = settings_for(&data_dir);
        let store: Arc<dyn Store> = Arc::new(
            EmbeddedStore::open_with(&settings.store.embedded_path(), settings.store.tenancy)
                .expect("embedded store"),
        );
        let app = Application::with_store(&settings, Arc::clone(&store))
            .await
            .expect("application builds");
        let address = format!("http://127.0.0.1:{}", app.port());
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(app.run_until(async {
            let _ = stopped.await;
        }));
        Self {
            address,
            _stop: stop,
            _data_dir: data_dir,
        }
    }

    /// The absolute URL of `path` on this blog.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.address)
    }
}

fn settings_for(data_dir: &TempDir) -> Settings {
    let data_dir = data_dir.path().to_str().expect("a UTF-8 temp dir");
    let flags = Flags::try_parse_from([
        "cosmos-blog",
        "--port=0",
        "--bind-address=127.0.0.1",
        "--auth=header",
        "--change-feed=pump",
        "--tenancy=single",
        &format!("--data-dir={data_dir}"),
    ])
    .expect("valid flags");
    Settings {
        auth: AuthSettings {
            platform: Platform::default(),
            ..flags.settings.auth
        },
        ..flags.settings
    }
}
