//! Azurite, the Azure Storage emulator (npm's `azurite`, installed into `node_modules/` at the
//! repository's root by `.ci/run`): its blob service, started for one test on a free port, in
//! memory, and stopped when the test drops it. The Blob Storage image store runs on it.
//!
//! Where it cannot start (no Node.js, not installed), a test skips with the reason printed;
//! under CI (`CI` set) it fails instead, so a missing emulator never passes for a green run.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Azurite's development account: public, documented with the emulator.
const ACCOUNT: &str = "devstoreaccount1";
const ACCOUNT_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
/// What Azurite prints once it listens, before the address.
const LISTENING: &str = "successfully listens on ";
/// How long Azurite may take to listen (Node.js starting on a loaded machine).
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A running Azurite blob service; dropping it stops it.
pub struct Azurite {
    child: Child,
    port: u16,
}

impl Azurite {
    /// Azurite's blob service, listening; `None` (with the reason printed) where it cannot
    /// start outside CI. Under CI a failure to start panics.
    pub async fn start_or_skip() -> Option<Self> {
        let started = tokio::task::spawn_blocking(Self::start)
            .await
            .unwrap_or_else(|e| Err(format!("the start task failed: {e}")));
        match started {
            Ok(azurite) => Some(azurite),
            Err(why) if std::env::var_os("CI").is_some() => {
                panic!("Azurite (the Blob Storage emulator) must run under CI: {why}")
            }
            Err(why) => {
                eprintln!("skipped: Azurite (the Blob Storage emulator) cannot start: {why}");
                None
            }
        }
    }

    /// The executable `npm install azurite` puts in the repository's `node_modules/.bin`.
    pub fn executable() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../node_modules/.bin/azurite-blob")
    }

    fn start() -> Result<Self, String> {
        let executable = Self::executable();
        if !executable.exists() {
            return Err(format!(
                "{} is missing: run `npm install --no-save --no-package-lock azurite` at the \
                 repository's root (`.ci/run` does)",
                executable.display()
            ));
        }
        let mut child = Command::new(&executable)
            .args([
                "--blobHost",
                "127.0.0.1",
                // Port 0: the system picks a free one, which Azurite then prints.
                "--blobPort",
                "0",
                "--inMemoryPersistence",
                // A few images per test: a small cap instead of half the machine's memory.
                "--extentMemoryLimit",
                "256",
                // The client may speak a newer service version than this Azurite knows.
                "--skipApiVersionCheck",
                "--disableTelemetry",
                "--silent",
            ])
            // Nothing is written to the working folder with the data in memory; a temporary
            // folder all the same, so that a run never leaves files in the repository.
            .current_dir(std::env::temp_dir())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", executable.display()))?;
        let Some(stdout) = child.stdout.take() else {
            let _ = child.kill();
            return Err("no standard output to read the port from".into());
        };
        let (port_sender, port) = mpsc::channel();
        // Reads the address once, then keeps draining the output, so Azurite never blocks
        // writing to a full pipe.
        std::thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if !sent && let Some(port) = listening_port(&line) {
                    let _ = port_sender.send(port);
                    sent = true;
                }
            }
        });
        // Owned from here: an error below drops it, which stops the process.
        let mut azurite = Self { child, port: 0 };
        match port.recv_timeout(START_TIMEOUT) {
            Ok(port) => {
                azurite.port = port;
                Ok(azurite)
            }
            // The output ended without the address: the process ended (no Node.js, say).
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = azurite.child.wait().map_err(|e| e.to_string())?;
                Err(format!("it ended ({status}) before listening"))
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                Err(format!("it did not listen within {START_TIMEOUT:?}"))
            }
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The blob service's URL (`http://127.0.0.1:{port}/devstoreaccount1`).
    pub fn blob_endpoint(&self) -> String {
        format!("http://127.0.0.1:{}/{ACCOUNT}", self.port)
    }

    /// The connection string of its development account (BLOG_IMAGES_CONNECTION).
    pub fn connection_string(&self) -> String {
        format!(
            "DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={ACCOUNT_KEY};\
             BlobEndpoint={};",
            self.blob_endpoint()
        )
    }
}

impl Drop for Azurite {
    fn drop(&mut self) {
        // The process this value started, by its own handle: never one found by name.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The port of `Azurite Blob service successfully listens on http://127.0.0.1:PORT`.
fn listening_port(line: &str) -> Option<u16> {
    let (_, address) = line.split_once(LISTENING)?;
    address
        .trim()
        .rsplit(':')
        .next()?
        .trim_end_matches('/')
        .parse()
        .ok()
}
