//! The one way tests start the real binary as a server: on port 0, so the system hands it a
//! port no one else holds, with `--port-file` to learn which. (Picking a free port first and
//! passing it on races: another test's server, or anything else, can take it in between,
//! and a restart would have to win it back.)

use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use cosmos_blog::startup::read_port_file;
use tempfile::TempDir;

/// How long a start may take before the test fails (generous: the machine may be loaded).
const START_LIMIT: Duration = Duration::from_secs(60);

/// A spawned binary, killed when dropped.
pub struct Served {
    pub child: Child,
    port_file: PathBuf,
    _port_dir: TempDir,
}

impl Served {
    /// Spawns `command` on port 0 (through `FUNCTIONS_CUSTOMHANDLER_PORT`, as the host passes
    /// it; a `--port` among the command's arguments wins) writing its port to a fresh file.
    pub fn spawn(command: &mut Command) -> Self {
        let port_dir = TempDir::new().expect("temp dir");
        let port_file = port_dir.path().join("port");
        let child = command
            .env("FUNCTIONS_CUSTOMHANDLER_PORT", "0")
            .env_remove("BLOG_PORT_FILE")
            .arg("--port-file")
            .arg(&port_file)
            .spawn()
            .expect("binary starts");
        Self {
            child,
            port_file,
            _port_dir: port_dir,
        }
    }

    /// The port it serves on, once it listens; panics if it exits first.
    pub async fn port(&mut self) -> u16 {
        let deadline = Instant::now() + START_LIMIT;
        loop {
            if let Some(port) = read_port_file(&self.port_file) {
                return port;
            }
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                panic!("the binary exited before it listened: {status}");
            }
            assert!(
                Instant::now() < deadline,
                "the binary did not listen within {START_LIMIT:?}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// `http://127.0.0.1:PORT`, once it listens.
    pub async fn base(&mut self) -> String {
        format!("http://127.0.0.1:{}", self.port().await)
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
