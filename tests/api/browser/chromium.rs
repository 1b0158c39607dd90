//! Headless Chromium driven over WebDriver: Debian's `chromium` and `chromedriver` (package
//! `chromium-driver`), one chromedriver and one browser session per test.
//!
//! Where they are not installed, a test says so and how to install them, and passes: a
//! developer's `cargo test` stays green without a browser. Where `CI` is set, a test that
//! cannot run fails instead, so a CI machine never passes by skipping.

use std::io::{BufRead, BufReader, Write};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use fantoccini::{Client, ClientBuilder};
use futures::FutureExt;
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Map, Value, json};

/// How to get what is missing, on the Debian images this project builds on.
const INSTALL_HINT: &str = "apt-get install chromium chromium-driver";

/// How long chromedriver may take to say which port it listens on (a loaded machine).
const DRIVER_START_LIMIT: Duration = Duration::from_secs(30);

/// Whether the pages run their script: the site must work both ways.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Script {
    On,
    Off,
}

/// Runs `test` with a fresh headless browser session, then closes the session (also when the
/// test panics, so no browser outlives its test). Skips, or in CI fails, when Chromium or
/// chromedriver is missing.
pub async fn with_browser<F, Fut>(test_name: &str, script: Script, test: F)
where
    F: FnOnce(Client) -> Fut,
    Fut: Future<Output = ()>,
{
    let Some(tools) = Tools::find_or_skip(test_name) else {
        return;
    };
    let driver = Driver::start(&tools.chromedriver);
    let client = driver.session(&tools.chromium, script).await;
    let outcome = AssertUnwindSafe(async {
        assert_script_is(&client, script).await;
        test(client.clone()).await;
    })
    .catch_unwind()
    .await;
    let closed = client.close().await;
    drop(driver);
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
    closed.expect("the browser session closes");
}

/// Checks that pages run their script exactly when asked: a page whose inline script retitles
/// it keeps its first title with [`Script::Off`].
async fn assert_script_is(client: &Client, script: Script) {
    client
        .goto("data:text/html,<title>before</title><script>document.title='after'</script>")
        .await
        .expect("a data: page opens");
    let expected = match script {
        Script::On => "after",
        Script::Off => "before",
    };
    let title = client.title().await.expect("the page's title");
    assert_eq!(title, expected, "the browser runs page scripts: {script:?}");
}

/// The two programs a browser test needs.
struct Tools {
    chromium: PathBuf,
    chromedriver: PathBuf,
}

impl Tools {
    /// Both programs, from `CHROME_PATH` / `CHROMEDRIVER` or the `PATH`; `None` (after saying
    /// why) when one is missing and `CI` is not set.
    fn find_or_skip(test_name: &str) -> Option<Self> {
        let chromium = from_env_or_path("CHROME_PATH", &["chromium", "chromium-browser"]);
        let chromedriver = from_env_or_path("CHROMEDRIVER", &["chromedriver"]);
        match (chromium, chromedriver) {
            (Some(chromium), Some(chromedriver)) => Some(Self {
                chromium,
                chromedriver,
            }),
            (chromium, chromedriver) => {
                let missing: Vec<&str> = [
                    chromium.is_none().then_some("chromium"),
                    chromedriver.is_none().then_some("chromedriver"),
                ]
                .into_iter()
                .flatten()
                .collect();
                let message = format!(
                    "browser test `{test_name}` needs {}, not found (on the PATH, or at \
                     $CHROME_PATH and $CHROMEDRIVER); install them with: {INSTALL_HINT}",
                    missing.join(" and ")
                );
                assert!(
                    std::env::var_os("CI").is_none(),
                    "CI is set, so a browser test that cannot run fails: {message}"
                );
                // Straight to the process's stderr: the test harness captures `eprintln!` of a
                // passing test, and a skip must be seen in a plain `cargo test`.
                let _ = writeln!(std::io::stderr(), "skipped: {message}");
                None
            }
        }
    }
}

/// The program named by the environment variable `var`, or else the first of `names` found
/// on the `PATH`.
fn from_env_or_path(var: &str, names: &[&str]) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(var).map(PathBuf::from) {
        return is_executable(&path).then_some(path);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| names.iter().map(move |name| dir.join(name)))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// A chromedriver on a port the system chose, killed when dropped.
struct Driver {
    process: Child,
    port: u16,
}

impl Driver {
    /// Starts chromedriver on port 0 and reads the port it reports. Its output is drained by
    /// a thread for its whole life, so that it never blocks on a full pipe.
    fn start(program: &Path) -> Self {
        let mut process = Command::new(program)
            .arg("--port=0")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("chromedriver ({}) starts: {e}", program.display()));
        let stdout = process
            .stdout
            .take()
            .expect("chromedriver's stdout is piped");
        let (port_found, port) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(port) = reported_port(&line) {
                    let _ = port_found.send(port);
                }
            }
        });
        let port = port
            .recv_timeout(DRIVER_START_LIMIT)
            .expect("chromedriver reports the port it listens on");
        Self { process, port }
    }

    /// A new headless session of `chromium`, with its script on or off.
    async fn session(&self, chromium: &Path, script: Script) -> Client {
        ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities(chromium, script))
            .connect(&format!("http://127.0.0.1:{}", self.port))
            .await
            .expect("chromedriver opens a headless Chromium session")
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// "ChromeDriver was started successfully on port 41233." → 41233.
fn reported_port(line: &str) -> Option<u16> {
    let (_, after) = line.split_once("started successfully on port ")?;
    after.trim_end_matches('.').trim().parse().ok()
}

/// Headless Chromium with a fixed window (screenshots and layouts are the same on every
/// machine), no sandbox (CI containers run as root, where Chromium's sandbox cannot start),
/// and, for [`Script::Off`], JavaScript blocked for every site by a content setting.
fn capabilities(chromium: &Path, script: Script) -> Map<String, Value> {
    let mut options = json!({
        "binary": chromium,
        "args": [
            "--headless=new",
            "--no-sandbox",
            "--disable-dev-shm-usage",
            "--disable-gpu",
            "--no-first-run",
            "--window-size=1280,900",
        ],
    });
    if script == Script::Off {
        options["prefs"] = json!({ "profile.managed_default_content_settings.javascript": 2 });
    }
    json!({
        "browserName": "chrome",
        "goog:chromeOptions": options,
        // An alert left open fails the next command instead of being dismissed silently.
        "unhandledPromptBehavior": "ignore",
    })
    .as_object()
    .cloned()
    .expect("a JSON object literal")
}

#[test]
fn the_port_is_read_from_chromedrivers_banner() {
    assert_eq!(
        reported_port("ChromeDriver was started successfully on port 41233."),
        Some(41233)
    );
    assert_eq!(reported_port("Only local connections are allowed."), None);
}
