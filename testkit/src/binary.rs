//! The one way tests start the real binary: [`Binary`] prepares it (a clean environment, a
//! store, arguments), then runs it to the end ([`Binary::output`]) or serves with it
//! ([`Binary::serve`]).
//!
//! A server starts on port 0, so the system hands it a port no one else holds, with
//! `--port-file` to learn which. (Picking a free port first and passing it on races: another
//! test's server, or anything else, can take it in between, and a restart would have to win
//! it back.)

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::Duration;

use cosmos_blog::platform::Platform;
use cosmos_blog::startup::read_port_file;
use tempfile::TempDir;

use crate::poll::{eventually, poll_for};

/// How long a start, or an exit asked for, may take before the test fails (generous: the
/// machine may be loaded).
const PROCESS_LIMIT: Duration = Duration::from_secs(60);

/// How often a process is asked whether it has exited (the answer is not pushed to us).
const EXIT_POLL: Duration = Duration::from_millis(50);

/// The binary cargo built for the calling test crate (`CARGO_BIN_EXE_cosmos-blog` is known
/// only to the crate's own tests and benches, hence a macro): a [`Binary`] to prepare.
#[macro_export]
macro_rules! binary {
    () => {
        $crate::binary::Binary::at(env!("CARGO_BIN_EXE_cosmos-blog"))
    };
}

/// Variables of the tests' own environment that would change what the binary does.
const CLEARED: [&str; 22] = [
    "BLOG_AUTH",
    "BLOG_PUBLIC_URL",
    "BLOG_CSRF_KEY",
    "BLOG_JWT_JWKS",
    "BLOG_JWT_ISSUER",
    "BLOG_JWT_AUDIENCE",
    "BLOG_JWT_CLAIM",
    "BLOG_BIND_ADDRESS",
    "BLOG_CHANGE_FEED",
    "BLOG_TENANCY",
    "BLOG_PORT_FILE",
    "BLOG_IMAGES_ENDPOINT",
    "BLOG_IMAGES_CONNECTION",
    "BLOG_IMAGES_CONTAINER",
    "CosmosDBConnection",
    "CosmosDBConnection__accountEndpoint",
    "RUST_LOG",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    "APPLICATIONINSIGHTS_CONNECTION_STRING",
    "FUNCTIONS_CUSTOMHANDLER_PORT",
];

/// The binary to start, and how.
pub struct Binary {
    command: Command,
    stderr: Option<Stdio>,
    /// A store folder of its own ([`Binary::on_fresh_data`]), kept while the server runs.
    data: Option<TempDir>,
    /// Its stderr goes to this file, in a folder of its own ([`Binary::logged`]).
    log: Option<(PathBuf, TempDir)>,
}

impl Binary {
    /// `program` with none of the variables of [`CLEARED`] nor the platform's
    /// (`Platform::variables`): it sees only what the test gives it.
    pub fn at(program: impl AsRef<OsStr>) -> Self {
        let mut command = Command::new(program);
        for name in CLEARED.into_iter().chain(Platform::variables()) {
            command.env_remove(name);
        }
        Self {
            command,
            stderr: None,
            data: None,
            log: None,
        }
    }

    /// On the embedded store in `data_dir` (the `single` layout unless `BLOG_TENANCY` says).
    pub fn on_data(mut self, data_dir: &Path) -> Self {
        self.command.env("BLOG_DATA_DIR", data_dir);
        self
    }

    /// On an embedded store in a fresh folder of its own ([`Served::data_dir`]).
    pub fn on_fresh_data(mut self) -> Self {
        let data = TempDir::new().expect("temp dir");
        self = self.on_data(data.path());
        self.data = Some(data);
        self
    }

    /// `cosmos-blog <name>` (a command that ends: `verify`, `export`, ...), logging warnings
    /// only, so that what it prints is its own.
    pub fn subcommand(mut self, name: &str) -> Self {
        self.command.arg(name).env("RUST_LOG", "warn");
        self
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.command.arg(arg);
        self
    }

    pub fn args<S: AsRef<OsStr>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.command.args(args);
        self
    }

    pub fn env(mut self, name: &str, value: impl AsRef<OsStr>) -> Self {
        self.command.env(name, value);
        self
    }

    pub fn envs<'a>(mut self, vars: impl IntoIterator<Item = &'a (&'a str, &'a str)>) -> Self {
        self.command.envs(vars.into_iter().copied());
        self
    }

    pub fn current_dir(mut self, dir: &Path) -> Self {
        self.command.current_dir(dir);
        self
    }

    /// Where its stderr goes (discarded by a server, captured by [`Binary::output`], unless
    /// set).
    pub fn stderr(mut self, stderr: impl Into<Stdio>) -> Self {
        self.stderr = Some(stderr.into());
        self
    }

    /// Its stderr into a file, read with [`Served::log`].
    pub fn logged(mut self) -> Self {
        let dir = TempDir::new().expect("temp dir");
        let path = dir.path().join("stderr.log");
        let file = std::fs::File::create(&path).expect("log file");
        self.stderr = Some(file.into());
        self.log = Some((path, dir));
        self
    }

    /// The prepared command, for a test that drives the process itself (reads its stderr as
    /// it runs, say).
    pub fn into_command(mut self) -> Command {
        if let Some(stderr) = self.stderr.take() {
            self.command.stderr(stderr);
        }
        self.command
    }

    /// Runs it to the end; its output, stdout and stderr captured.
    pub fn output(self) -> Output {
        self.into_command().output().expect("the binary runs")
    }

    /// Runs it to the end, its output discarded; its exit status.
    pub fn status(mut self) -> ExitStatus {
        let stderr = self.stderr.take().unwrap_or_else(Stdio::null);
        self.command
            .stdout(Stdio::null())
            .stderr(stderr)
            .status()
            .expect("the binary runs")
    }

    /// Runs it until it exits, killing it after `within`: its exit code (`None` if killed)
    /// and its stderr.
    pub async fn exit_within(mut self, within: Duration) -> (Option<i32>, String) {
        let mut child = self
            .command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("binary starts");
        let exited = poll_for(within, EXIT_POLL, || {
            std::future::ready(
                child
                    .try_wait()
                    .expect("the child can be waited on")
                    .ok_or(()),
            )
        })
        .await;
        if exited.is_err() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let mut stderr = String::new();
        if let Some(mut pipe) = child.stderr.take() {
            let _ = pipe.read_to_string(&mut stderr);
        }
        (exited.ok().and_then(|status| status.code()), stderr)
    }

    /// Starts it as a server on port 0 (through `FUNCTIONS_CUSTOMHANDLER_PORT`, as the host
    /// passes it; a `--port` among its arguments wins), writing its port to a fresh file.
    pub fn serve(mut self) -> Served {
        let port_dir = TempDir::new().expect("temp dir");
        let port_file = port_dir.path().join("port");
        let stderr = self.stderr.take().unwrap_or_else(Stdio::null);
        let child = self
            .command
            .env("FUNCTIONS_CUSTOMHANDLER_PORT", "0")
            .arg("--port-file")
            .arg(&port_file)
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("binary starts");
        Served {
            child,
            port_file,
            base: None,
            _port_dir: port_dir,
            data: self.data,
            log: self.log,
        }
    }
}

/// A spawned binary, killed when dropped.
pub struct Served {
    pub child: Child,
    port_file: PathBuf,
    /// `http://127.0.0.1:PORT` once [`Served::ready`] has seen it listen.
    base: Option<String>,
    _port_dir: TempDir,
    data: Option<TempDir>,
    log: Option<(PathBuf, TempDir)>,
}

impl Served {
    /// The port it serves on, once it listens; panics if it exits first.
    pub async fn port(&mut self) -> u16 {
        let (child, port_file) = (&mut self.child, &self.port_file);
        eventually(PROCESS_LIMIT, || {
            let port = read_port_file(port_file);
            if port.is_none()
                && let Some(status) = child.try_wait().expect("try_wait")
            {
                panic!("the binary exited before it listened: {status}");
            }
            std::future::ready(port)
        })
        .await
    }

    /// `http://127.0.0.1:PORT`, once it listens.
    pub async fn base(&mut self) -> String {
        format!("http://127.0.0.1:{}", self.port().await)
    }

    /// Waits until it listens, for [`Served::url`].
    pub async fn ready(mut self) -> Self {
        self.base = Some(self.base().await);
        self
    }

    pub fn url(&self, path: &str) -> String {
        let base = self.base.as_deref().expect("Served::ready first");
        format!("{base}{path}")
    }

    /// What it wrote to stderr so far ([`Binary::logged`]).
    pub fn log(&self) -> String {
        let (path, _) = self.log.as_ref().expect("Binary::logged");
        std::fs::read_to_string(path).expect("log")
    }

    /// Its store folder ([`Binary::on_fresh_data`]).
    pub fn data_dir(&self) -> &Path {
        self.data.as_ref().expect("Binary::on_fresh_data").path()
    }

    /// How the process ended, if it ends within a minute.
    pub async fn exit_status(&mut self) -> ExitStatus {
        let child = &mut self.child;
        eventually(PROCESS_LIMIT, || {
            std::future::ready(child.try_wait().expect("the child can be waited on"))
        })
        .await
    }

    /// Asks the process to stop as the host does (SIGTERM) and waits for it to exit.
    pub async fn terminate(&mut self) -> ExitStatus {
        let signal = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(signal.success(), "SIGTERM delivered");
        self.exit_status().await
    }

    /// Kills the process and waits for it (SIGKILL: nothing is flushed on the way out).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.kill();
    }
}
