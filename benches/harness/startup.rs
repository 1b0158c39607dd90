//! Start-up time and idle memory of the real binary: spawned as the Functions host spawns a
//! custom handler (a port in FUNCTIONS_CUSTOMHANDLER_PORT; here 0, the system's choice, read
//! back from `--port-file`, so no other process can hold it), with an empty data folder, and
//! polled on `GET /` as the host does until it answers.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use cosmos_blog::startup::read_port_file;

use crate::stats::Latencies;

const READY_LIMIT: Duration = Duration::from_secs(30);
/// How long the process idles before its memory is read.
const IDLE: Duration = Duration::from_secs(1);

#[derive(Debug, Clone)]
pub struct StartupReport {
    pub binary: String,
    pub runs: usize,
    pub p50: Duration,
    pub max: Duration,
    /// VmRSS after start-up and `IDLE` seconds without requests, in KiB (the largest).
    pub rss_kib: u64,
}

/// One `GET /` on a fresh connection; true on a 200.
fn answers(port: u16) -> bool {
    let address = SocketAddrV4::new(Ipv4Addr::LOCALHOST, port);
    let Ok(mut stream) = TcpStream::connect_timeout(&address.into(), Duration::from_millis(100))
    else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    if stream
        .write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.1 200")
}

fn rss_kib(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmRSS in /proc/<pid>/status")
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        // Only the child this harness started.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn once(binary: &Path, measure_memory: bool) -> anyhow::Result<(Duration, u64)> {
    let data = tempfile::tempdir()?;
    let port_file = data.path().join("port");
    let started = Instant::now();
    let mut child = Killed(
        Command::new(binary)
            .arg("--port-file")
            .arg(&port_file)
            .env("BLOG_DATA_DIR", data.path())
            .env("FUNCTIONS_CUSTOMHANDLER_PORT", "0")
            .env("RUST_LOG", "warn")
            // Standalone on loopback, as a developer starts it.
            .env("BLOG_AUTH", "header")
            .env_remove("FUNCTIONS_WORKER_RUNTIME")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start {}", binary.display()))?,
    );
    let in_time = |started: Instant| {
        anyhow::ensure!(
            started.elapsed() < READY_LIMIT,
            "no answer on GET / within {READY_LIMIT:?}"
        );
        std::thread::sleep(Duration::from_micros(500));
        Ok(())
    };
    let port = loop {
        if let Some(port) = read_port_file(&port_file) {
            break port;
        }
        if let Some(status) = child.0.try_wait()? {
            anyhow::bail!("{} exited before it listened: {status}", binary.display());
        }
        in_time(started)?;
    };
    while !answers(port) {
        in_time(started)?;
    }
    let ready = started.elapsed();
    let rss = if measure_memory {
        std::thread::sleep(IDLE);
        rss_kib(child.0.id())?
    } else {
        0
    };
    drop(child);
    Ok((ready, rss))
}

/// Starts `binary` `runs` times; blocking (run it off the async runtime).
pub fn measure(binary: &Path, runs: usize) -> anyhow::Result<StartupReport> {
    let mut latencies = Latencies::default();
    let mut rss = 0;
    for run in 0..runs.max(1) {
        // Memory once is enough; the others measure start-up alone.
        let (ready, kib) = once(binary, run == 0)?;
        latencies.push(ready);
        rss = rss.max(kib);
    }
    Ok(StartupReport {
        binary: binary.display().to_string(),
        runs: latencies.len(),
        p50: latencies.percentile(50.0),
        max: latencies.percentile(100.0),
        rss_kib: rss,
    })
}
