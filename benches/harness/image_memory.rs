//! The image-memory phase (`--only image-memory`): the real binary, on its default settings,
//! takes 16 uploads at once of an image that decodes to far more than it weighs, and its
//! peak resident memory (the kernel's `VmHWM`, read at the end) must stay under 512 MiB. Two
//! such images, each on a new server: the PNG of the case that found the problem (6000 ×
//! 6000 pixels in a few hundred KB, under the pixel limit), and a 40-megapixel JPEG (a large
//! phone's photo, what the decode budget leaves room for). The resident memory once the
//! server has idled a while tells whether it gave the memory back.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use cosmos_blog::startup::read_port_file;

/// Uploads sent at once.
pub const UPLOADS: usize = 16;
/// The most resident memory the server may reach while it takes them.
pub const PEAK_LIMIT_KIB: u64 = 512 * 1024;
/// How long the server idles after the uploads before its memory is read again.
const IDLE: Duration = Duration::from_secs(3);
const READY_LIMIT: Duration = Duration::from_secs(30);

/// One image's run: what the uploads were answered, and the server's memory.
#[derive(Debug, Clone)]
pub struct ImageMemoryRun {
    pub image: String,
    pub upload_bytes: usize,
    /// Answers by status, `(status, count)`, in the order first seen.
    pub answers: Vec<(u16, usize)>,
    pub elapsed: Duration,
    /// Resident memory before the uploads (after start-up), at its peak, and after `IDLE`.
    pub idle_kib: u64,
    pub peak_kib: u64,
    pub after_kib: u64,
}

impl ImageMemoryRun {
    pub fn holds(&self) -> bool {
        self.peak_kib < PEAK_LIMIT_KIB
    }
}

/// The worst cases: each image's name and its bytes.
fn images() -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    // Squares of 64 pixels, each of its own colour: a few hundred KB however many pixels.
    let gradient = |width: u32, height: u32| {
        image::RgbImage::from_fn(width, height, |x, y| {
            let (column, row) = (x / 64, y / 64);
            image::Rgb([column as u8, row as u8, (column + row) as u8])
        })
    };
    let mut png = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(gradient(6000, 6000))
        .write_to(&mut png, image::ImageFormat::Png)?;
    let mut jpeg = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(gradient(7296, 5472)).write_with_encoder(
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 75),
    )?;
    Ok(vec![
        ("PNG, 6000 × 6000, RGB".to_owned(), png.into_inner()),
        (
            "JPEG, 7296 × 5472 (40 MP), RGB".to_owned(),
            jpeg.into_inner(),
        ),
    ])
}

/// Runs every worst case on a new server started from `binary`.
pub async fn run(binary: &Path, log: impl Fn(&str)) -> anyhow::Result<Vec<ImageMemoryRun>> {
    let images = tokio::task::spawn_blocking(images).await??;
    let mut runs = Vec::new();
    for (name, bytes) in images {
        log(&format!(
            "{UPLOADS} uploads at once of a {name} image ({} KB)",
            bytes.len() / 1000
        ));
        runs.push(one(binary, name, bytes::Bytes::from(bytes)).await?);
    }
    Ok(runs)
}

struct Server {
    child: Child,
    port: u16,
    _data: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        // Only the child this phase started.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    async fn start(binary: &Path) -> anyhow::Result<Self> {
        let data = tempfile::tempdir()?;
        let port_file = data.path().join("port");
        let child = Command::new(binary)
            .arg("--port-file")
            .arg(&port_file)
            .env("BLOG_DATA_DIR", data.path())
            .env("FUNCTIONS_CUSTOMHANDLER_PORT", "0")
            .env("RUST_LOG", "warn")
            .env("BLOG_AUTH", "header")
            .env_remove("FUNCTIONS_WORKER_RUNTIME")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start {}", binary.display()))?;
        let mut server = Self {
            child,
            port: 0,
            _data: data,
        };
        let started = Instant::now();
        server.port = loop {
            if let Some(port) = read_port_file(&port_file) {
                break port;
            }
            anyhow::ensure!(
                server.child.try_wait()?.is_none(),
                "{} exited before it listened",
                binary.display()
            );
            anyhow::ensure!(
                started.elapsed() < READY_LIMIT,
                "no port within {READY_LIMIT:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        Ok(server)
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// `VmRSS` or `VmHWM` of the server, in KiB.
    fn memory_kib(&self, field: &str) -> anyhow::Result<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))?;
        status
            .lines()
            .find_map(|line| line.strip_prefix(field))
            .and_then(|v| {
                v.trim_start_matches(':')
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse()
                    .ok()
            })
            .with_context(|| format!("no {field} in /proc/<pid>/status"))
    }
}

async fn one(binary: &Path, image: String, bytes: bytes::Bytes) -> anyhow::Result<ImageMemoryRun> {
    let server = Server::start(binary).await?;
    let client = reqwest::Client::new();
    let user = "imagewriter";
    let registered = client
        .put(server.url(&format!("/api/users/{user}")))
        .header("x-ms-client-principal-id", user)
        .json(&serde_json::json!({ "username": "Image writer" }))
        .send()
        .await?;
    anyhow::ensure!(
        registered.status() == reqwest::StatusCode::CREATED,
        "registering the uploader: {}",
        registered.status()
    );
    let idle_kib = server.memory_kib("VmRSS")?;
    let started = Instant::now();
    let uploads = (0..UPLOADS).map(|_| {
        client
            .post(server.url("/api/images"))
            .header("x-ms-client-principal-id", user)
            .header("content-type", content_type(&bytes))
            .body(bytes.clone())
            .send()
    });
    let mut answers: Vec<(u16, usize)> = Vec::new();
    for answer in futures::future::join_all(uploads).await {
        let status = answer?.status().as_u16();
        match answers.iter_mut().find(|(seen, _)| *seen == status) {
            Some((_, count)) => *count += 1,
            None => answers.push((status, 1)),
        }
    }
    let elapsed = started.elapsed();
    let peak_kib = server.memory_kib("VmHWM")?;
    tokio::time::sleep(IDLE).await;
    let after_kib = server.memory_kib("VmRSS")?;
    Ok(ImageMemoryRun {
        image,
        upload_bytes: bytes.len(),
        answers,
        elapsed,
        idle_kib,
        peak_kib,
        after_kib,
    })
}

fn content_type(bytes: &[u8]) -> &'static str {
    if bytes.starts_with(b"\x89PNG") {
        "image/png"
    } else {
        "image/jpeg"
    }
}

/// The runs as markdown: a row per image.
pub fn markdown(out: &mut String, runs: &[ImageMemoryRun]) {
    out.push_str(&format!(
        "\n### Memory of {UPLOADS} uploads at once\n\n\
         The binary on its default settings (`BLOG_IMAGES_DECODE_BUDGET_MB` 256), a new server \
         per image; resident memory (MiB) after start-up, at its peak during the uploads \
         (`VmHWM`, limit {} MiB), and {} s after the last answer.\n\n\
         | image | bytes | answers | seconds | idle | peak | after | under the limit |\n\
         |---|---|---|---|---|---|---|---|\n",
        PEAK_LIMIT_KIB / 1024,
        IDLE.as_secs()
    ));
    for run in runs {
        let answers: Vec<String> = run
            .answers
            .iter()
            .map(|(status, count)| format!("{count} × {status}"))
            .collect();
        out.push_str(&format!(
            "| {} | {} | {} | {:.1} | {:.0} | {:.0} | {:.0} | {} |\n",
            run.image,
            run.upload_bytes,
            answers.join(", "),
            run.elapsed.as_secs_f64(),
            run.idle_kib as f64 / 1024.0,
            run.peak_kib as f64 / 1024.0,
            run.after_kib as f64 / 1024.0,
            if run.holds() { "yes" } else { "**no**" },
        ));
    }
}
