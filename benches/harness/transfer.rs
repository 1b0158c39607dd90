//! Moving the data set: `export` of the generated store, then `import` of the
//! export into an empty embedded store, copies derived; items per second of each, against
//! the targets (reported, never asserted), and `verify` on the imported store.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use cosmos_blog::store::embedded::EmbeddedStore;
use cosmos_blog::store::{Store, Tenancy};
use cosmos_blog::transfer::{
    self, ExportOptions, ImportOptions, Plan, TransferProgress as Progress,
};
use cosmos_blog::verify::verify;

/// Export target, items per second.
pub const EXPORT_TARGET: f64 = 50_000.0;
/// Import target (validation, sources and copies), items per second.
pub const IMPORT_TARGET: f64 = 10_000.0;
/// Batches in flight: the default of `cosmos-blog import` on the embedded store.
const CONCURRENCY: usize = 64;

#[derive(Debug, Clone)]
pub struct TransferReport {
    /// Items of the export (the store's source items).
    pub items: u64,
    pub export: Duration,
    /// The whole import: validation, sources, copies.
    pub import: Duration,
    pub validating: Duration,
    pub writing: Duration,
    pub deriving: Duration,
    /// Copies the import's handlers wrote.
    pub copies: usize,
    /// Bytes of the export's files.
    pub bytes: u64,
    /// `verify` on the imported store.
    pub verified: bool,
    pub verify: Duration,
}

fn rate(items: u64, took: Duration) -> f64 {
    items as f64 / took.as_secs_f64().max(1e-9)
}

impl TransferReport {
    pub fn export_rate(&self) -> f64 {
        rate(self.items, self.export)
    }

    pub fn import_rate(&self) -> f64 {
        rate(self.items, self.import)
    }
}

fn progress(quiet: bool) -> Progress {
    if quiet {
        Progress::hidden()
    } else {
        Progress::on_stderr(false)
    }
}

/// Exports `store` into `dir/export`, imports that into a new store in `dir/imported`,
/// verifies it, and removes both.
pub async fn run(
    store: &Arc<dyn Store>,
    dir: &Path,
    quiet: bool,
    log: impl Fn(&str),
) -> anyhow::Result<TransferReport> {
    let folder = dir.join("transfer-export");
    let target_dir = dir.join("transfer-imported");
    anyhow::ensure!(
        !folder.exists() && !target_dir.exists(),
        "{} or {} is left from another run",
        folder.display(),
        target_dir.display()
    );
    log("export of the data set");
    let started = Instant::now();
    // The generated data set holds no images: their store is an empty folder.
    let images = cosmos_blog::images::FileImageStore::new(dir.join("transfer-images"));
    let exported = transfer::export(
        store,
        &images,
        &folder,
        &ExportOptions::default(),
        &mut progress(quiet),
    )
    .await?;
    let export = started.elapsed();
    let bytes = std::fs::read_dir(&folder)?
        .filter_map(|entry| entry.ok()?.metadata().ok())
        .map(|metadata| metadata.len())
        .sum();
    log(&format!(
        "exported {} items in {:.1} s; importing them into an empty store",
        exported.manifest.total(),
        export.as_secs_f64()
    ));

    let target: Arc<dyn Store> = Arc::new(EmbeddedStore::open(&target_dir.join("blog.sqlite3"))?);
    let options = ImportOptions {
        tenant: None,
        concurrency: CONCURRENCY,
        force: false,
    };
    let mut progress = progress(quiet);
    let started = Instant::now();
    let plan = Plan::validate(&folder, Tenancy::Single, &options, &mut progress)
        .map_err(|invalid| anyhow::anyhow!("{invalid}: {}", invalid.lines(10).join("; ")))?;
    let validating = started.elapsed();
    let summary = plan.import(&target, &mut progress).await?;
    let import = started.elapsed();
    drop(progress);

    log("verify on the imported store");
    let started = Instant::now();
    let verified = verify(&target).await?.holds();
    let verify = started.elapsed();
    drop(target);
    for path in [&folder, &target_dir] {
        std::fs::remove_dir_all(path)
            .with_context(|| format!("cannot remove {}", path.display()))?;
    }
    Ok(TransferReport {
        items: exported.manifest.total(),
        export,
        import,
        validating,
        writing: summary.writing,
        deriving: summary.deriving,
        copies: summary.copies.written,
        bytes,
        verified,
        verify,
    })
}

/// The report's section.
pub fn markdown(out: &mut String, report: &TransferReport) {
    use std::fmt::Write as _;
    let met = |rate: f64, target: f64| if rate >= target { "met" } else { "**not met**" };
    let _ = writeln!(out, "\n## Moving the data: export and import\n");
    let _ = writeln!(
        out,
        "`cosmos-blog export` of the data set's {} source items ({:.0} MiB of JSON Lines), then `cosmos-blog import` of that export into an empty embedded store: validation of the whole export, the sources written by partition batches ({CONCURRENCY} in flight), then the copies derived by the change-feed handlers ({} written). `verify` on the imported store: {} ({:.1} s).\n",
        report.items,
        report.bytes as f64 / (1024.0 * 1024.0),
        report.copies,
        if report.verified {
            "holds"
        } else {
            "**FAILS**"
        },
        report.verify.as_secs_f64()
    );
    let _ = writeln!(out, "| step | time | items/s | target | |");
    let _ = writeln!(out, "|---|---|---|---|---|");
    let _ = writeln!(
        out,
        "| export | {:.1} s | {:.0} | ≥ {EXPORT_TARGET:.0} | {} |",
        report.export.as_secs_f64(),
        report.export_rate(),
        met(report.export_rate(), EXPORT_TARGET)
    );
    let _ = writeln!(
        out,
        "| import, copies derived | {:.1} s (validation {:.1} s, sources {:.1} s, copies {:.1} s) | {:.0} | ≥ {IMPORT_TARGET:.0} | {} |",
        report.import.as_secs_f64(),
        report.validating.as_secs_f64(),
        report.writing.as_secs_f64(),
        report.deriving.as_secs_f64(),
        report.import_rate(),
        met(report.import_rate(), IMPORT_TARGET)
    );
}
