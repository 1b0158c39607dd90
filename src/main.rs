use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use cosmos_blog::api::openapi;
use cosmos_blog::functions::{metadata, stage};
use cosmos_blog::settings::{self, Settings, StoreSettings};
use cosmos_blog::startup::{Application, shutdown_signal};
use cosmos_blog::store::{self, Store, Tenancy};
use cosmos_blog::telemetry::Telemetry;
use cosmos_blog::verify::{self, VerifyReport};
use cosmos_blog::words::{self, count};
use cosmos_blog::{changefeed, copies, plan, transfer};

/// `println!` that ends quietly when standard output's reader goes away (`words::print`).
macro_rules! say {
    ($($arg:tt)*) => {
        words::print_line(&format!($($arg)*))
    };
}

/// Every request allocates per item and per header; mimalloc spends less on that than glibc's
/// malloc (13–20 % more requests/s on every route in the benchmark harness).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Blog platform backend: an Azure Functions custom handler, or a standalone server with an
/// embedded store.
///
/// The settings (flags, or the environment variables named beside them) go before or after
/// the command: `cosmos-blog --port 0 serve` and `cosmos-blog serve --port 0` are the same.
#[derive(Parser)]
#[command(
    version,
    about,
    after_help = "Settings that contradict each other (CosmosDBConnection beside \
                  CosmosDBConnection__accountEndpoint; a BLOG_JWT_* setting without \
                  BLOG_AUTH=jwt) are refused at start-up, exit status 2."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,

    /// Every setting is global (`global = true`): taken before or after any command, and
    /// listed by every command's `--help`.
    #[command(flatten)]
    settings: Settings,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the API (the default).
    ///
    /// Refuses to start on a store that an import left unfinished (killed or failed): it
    /// would serve a blog with posts, comments and copies missing as if it were whole. The
    /// error names the import and the command that finishes it.
    Serve,
    /// Re-derive every copy (post copies in users and feed, usernames in posts) from the
    /// source items. Refuses a store that an import left unfinished.
    Rebuild,
    /// Check every invariant of the data model (counts, usernames, post copies, feed).
    ///
    /// Copies that the change feed has not made yet (changes after the standalone pump's
    /// checkpoint: a live store, a backup taken while the server wrote) are said and counted
    /// apart, not as violations. Without --repair it opens the store read-only and writes
    /// nothing.
    ///
    /// Exit status 0: all hold; 1: violations (one per
    /// line), or an import left the store unfinished (said first, with the command that
    /// finishes it; nothing else is checked then); 2: the store could not be read.
    Verify {
        /// Also fix what it finds, with targeted writes (a copy rewritten, a username set, a
        /// count recomputed, an orphan removed, the feed trimmed or refilled), print each fix,
        /// and check again: exit status 0 when everything holds afterwards, 1 when something
        /// could not be fixed. Idempotent, and safe while the application serves.
        #[arg(long)]
        repair: bool,
    },
    /// Write the store's source items (users, posts, comments, likes, deletes) to a folder of
    /// JSON Lines files and a manifest; the copies are left out (import derives them).
    ///
    /// Refuses a store that an import left unfinished: its export would look whole.
    Export(transfer::ExportArgs),
    /// Load an export into the store (validated whole first; idempotent, resumable), derive
    /// the copies, then verify. Exit status 1 if the export is invalid (each problem printed
    /// as `file:line: reason`, nothing written) or the store does not verify.
    ///
    /// The store is marked (an item `import-in-progress` in `leases`) from before the first
    /// write until after the last: while the mark is there, `serve` and `export` refuse the
    /// store and `verify` fails. Running the same import again finishes it and removes the
    /// mark; an import of another export is refused unless --force.
    Import(transfer::ImportArgs),
    /// Copy the embedded store to a new file, consistent, while the server runs.
    Backup(transfer::BackupArgs),
    /// Stop the embedded store's count of writes per partition, which kept list pages rely
    /// on, so that writes stop paying for it: for a store whose servers now keep no pages
    /// (BLOG_LIST_CACHE_MB=0). Refused while any process has the store open.
    StopCounting,
    /// Azure Functions metadata.
    Functions {
        #[command(subcommand)]
        command: FunctionsCommand,
    },
    /// Assemble a deployable Azure Functions script root (host.json, the function folders
    /// beside it, the Linux x64 binary), and optionally zip it.
    ///
    /// The data layout of the deployment is `--tenancy`'s: its routes (`multi`: under
    /// /api/tenants/{tenantId}), and host.json starts the binary with `--tenancy` set to it,
    /// which wins over BLOG_TENANCY there.
    ///
    /// Refuses a binary the Functions Linux host cannot start: not an x86-64 Linux ELF
    /// executable, or needing a newer glibc than the Functions image has.
    Stage {
        /// Folder of the script root; replaced if it holds a previous staging.
        #[arg(long, default_value = stage::DEFAULT_OUT)]
        out: PathBuf,
        /// The Linux x64 release binary [default: the x86_64-unknown-linux-gnu release build if
        /// present, else target/release/cosmos-blog].
        #[arg(long)]
        binary: Option<PathBuf>,
        /// Also write `<out>.zip`, ready for zip deployment.
        #[arg(long)]
        zip: bool,
    },
    /// Write the OpenAPI 3.1 description of the HTTP API (what `GET .../openapi.json` serves)
    /// of the data layout `--tenancy` names (`multi`: every route under
    /// /api/tenants/{tenantId}).
    Openapi {
        /// File to write; `-` for standard output [default: openapi.json, or
        /// openapi.multi.json with `--tenancy multi`].
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// What a workload needs on Azure and costs a month: RU/s, gigabytes, serverless,
    /// provisioned and autoscale Cosmos DB plus Flex Consumption, the first limit it meets
    /// and the mode to choose. Needs no store and no network (see docs/capacity.md).
    ///
    /// Exit status 2 on a flag that is not a number, out of range or inconsistent.
    Plan(Box<plan::PlanArgs>),
}

#[derive(Subcommand)]
enum FunctionsCommand {
    /// (Re)write host.json and functions/*/function.json from the function table, with the
    /// routes of the data layout `--tenancy` names (`multi`: under /api/tenants/{tenantId}).
    Generate {
        /// Folder to write into [default: `.`, the repository, which keeps the single-tenant
        /// files; required with `--tenancy multi`].
        #[arg(long)]
        root: Option<PathBuf>,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    // `plan` says a usage error in one line (clap adds a hint); the others as clap does.
    let mut cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if std::env::args().nth(1).as_deref() == Some("plan") => {
            plan::exit_on_usage_error(e)
        }
        Err(e) => e.exit(),
    };
    cli.settings.read_platform();
    // Only a server exports traces and metrics; every command logs.
    let serving = matches!(cli.command, None | Some(Command::Serve));
    let telemetry = start_telemetry(serving);
    let exit = run(cli).await;
    // Flushes what is buffered, waiting a few seconds at most for the collector.
    telemetry.shutdown().await;
    exit
}

/// Installs the process's telemetry as the settings say; an export that cannot be set up is
/// a warning, never a reason not to serve.
fn start_telemetry(serving: bool) -> Telemetry {
    let (config, notes) = settings::environment::telemetry(serving);
    let filter = config.log_filter.clone();
    let (telemetry, failure) = match Telemetry::new(config) {
        Ok(telemetry) => (telemetry, None),
        Err(e) => (Telemetry::logs_only(&filter, std::io::stderr), Some(e)),
    };
    telemetry.install();
    for note in notes {
        tracing::warn!("{note}");
    }
    if let Some(e) = failure {
        tracing::warn!("telemetry export off: {e:#}");
    }
    if serving {
        tracing::info!(export = telemetry.describe(), "telemetry");
    }
    telemetry
}

/// Exit status when the settings contradict each other (as for clap's usage errors).
const CONTRADICTORY_SETTINGS: u8 = 2;

async fn run(cli: Cli) -> ExitCode {
    let contradictions = settings_contradictions(&cli);
    if !contradictions.is_empty() {
        for contradiction in &contradictions {
            eprintln!("error: contradictory settings: {contradiction}");
        }
        return ExitCode::from(CONTRADICTORY_SETTINGS);
    }
    let store = &cli.settings.store;
    let tenancy = store.tenancy;
    let result = match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => serve(&cli.settings).await,
        Command::Rebuild => rebuild(store).await,
        Command::Verify { repair } => {
            return verify_store(&cli.settings, repair).await;
        }
        Command::Plan(args) => {
            let feed_cache_ms = cli.settings.feed_cache_ms as f64;
            let args = plan::PlanArgs {
                tenancy,
                feed_cache_ms,
                ..*args
            };
            return plan_workload(&args);
        }
        Command::Export(args) => export(&cli.settings, &args).await,
        Command::Import(args) => import(&cli.settings, &args).await,
        Command::Backup(args) => transfer::run_backup(store, &args),
        Command::StopCounting => store::stop_counting(store),
        Command::Functions {
            command: FunctionsCommand::Generate { root },
        } => generate(root.as_deref(), tenancy),
        Command::Stage { out, binary, zip } => stage_script_root(&out, binary, zip, tenancy),
        Command::Openapi { out } => write_openapi(
            out.as_deref()
                .unwrap_or(Path::new(openapi::committed_file(tenancy))),
            tenancy,
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // Logs go to stderr too: the error is printed once, there.
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// What the chosen command's settings say twice; every command refuses to start on any.
fn settings_contradictions(cli: &Cli) -> Vec<String> {
    match &cli.command {
        None | Some(Command::Serve) => cli.settings.contradictions(),
        Some(
            Command::Rebuild
            | Command::Verify { .. }
            | Command::Export(_)
            | Command::Import(_)
            | Command::Backup(_)
            | Command::StopCounting,
        ) => cli.settings.store.contradictions(),
        Some(
            Command::Functions { .. }
            | Command::Stage { .. }
            | Command::Openapi { .. }
            | Command::Plan(_),
        ) => Vec::new(),
    }
}

/// Exit status of `plan` on a workload or price it cannot take.
const PLAN_BAD_INPUT: u8 = 2;

fn plan_workload(args: &plan::PlanArgs) -> ExitCode {
    match plan::run(args) {
        Ok(answer) => {
            words::print(&answer);
            ExitCode::SUCCESS
        }
        Err(plan::PlanError::Usage(e)) => {
            eprintln!("error: {e}");
            ExitCode::from(PLAN_BAD_INPUT)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(settings: &Settings) -> anyhow::Result<()> {
    let app = Application::build(settings).await?;
    app.run_until(shutdown_signal()).await
}

async fn rebuild(settings: &StoreSettings) -> anyhow::Result<()> {
    let store = store::open(settings).await?;
    // The copies of half a blog would be rebuilt and the verdict fail on what is missing,
    // never saying why: the import must be finished first.
    if let Some(unfinished) = transfer::unfinished_import(&store).await? {
        anyhow::bail!("{unfinished}; rebuild derives copies, it cannot load the missing sources");
    }
    let report = copies::rebuild(&store).await?;
    for line in report.log_lines("rebuild") {
        say!("{line}");
    }
    let verdict = run_verify(&store).await?;
    anyhow::ensure!(
        verdict.holds(),
        "the store still violates the model after rebuild"
    );
    Ok(())
}

async fn export(settings: &Settings, args: &transfer::ExportArgs) -> anyhow::Result<()> {
    let image_bytes = settings.open_image_bytes().await?;
    transfer::run_export(&settings.store, &*image_bytes, args).await
}

async fn import(settings: &Settings, args: &transfer::ImportArgs) -> anyhow::Result<()> {
    let image_bytes = settings.open_image_bytes().await?;
    let store = transfer::run_import(&settings.store, &*image_bytes, args).await?;
    let verdict = run_verify(&store).await?;
    anyhow::ensure!(verdict.holds(), "the imported store violates the model");
    Ok(())
}

/// Violations printed, at most; the rest are counted.
const VIOLATIONS_SHOWN: usize = 100;
/// Exit status of `verify` when the store cannot be read (1 means violations).
const VERIFY_UNREADABLE: u8 = 2;

async fn verify_store(settings: &Settings, repair: bool) -> ExitCode {
    let verdict = async {
        // Only a repair writes: a check opens the store read-only.
        let store = if repair {
            store::open_existing(&settings.store).await?
        } else {
            store::open_read_only(&settings.store).await?
        };
        // Half a store loaded breaks invariants by the hundred; the one thing to say is how to
        // finish the import (a repair cannot: the sources are missing).
        if let Some(unfinished) = transfer::unfinished_import(&store).await? {
            say!("verify: FAILED, {unfinished}");
            return Ok(None);
        }
        // The images first, so that the store's verdict is the last line.
        let image_bytes = settings.open_image_bytes().await?;
        let images_hold = verify_image_bytes(&store, &*image_bytes, repair).await?;
        let report = if repair {
            run_repair(&store).await?
        } else {
            run_verify_beside_the_change_feed(&store).await?
        };
        if !images_hold {
            say!("verify: FAILED, the images' bytes do not match their items (see above)");
        }
        anyhow::Ok(Some(report.holds() && images_hold))
    };
    match verdict.await {
        Ok(Some(true)) => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: cannot verify the store: {e:#}");
            ExitCode::from(VERIFY_UNREADABLE)
        }
    }
}

/// The images' rule (`verify::images`): every image item's bytes are there, and no bytes
/// are nobody's; with `repair`, the orphans are removed. Whether it holds (after the repair).
async fn verify_image_bytes(
    store: &Arc<dyn Store>,
    images: &dyn cosmos_blog::images::ImageStore,
    repair: bool,
) -> anyhow::Result<bool> {
    let mut report = verify::images::check_images(store, images).await?;
    if repair && !report.orphans.is_empty() {
        let removed = verify::images::remove_orphans(images, &report).await?;
        say!(
            "repair: removed {}",
            count(
                removed as u64,
                "orphan image blob or file",
                "orphan image blobs or files"
            )
        );
        report = verify::images::check_images(store, images).await?;
    }
    for line in report.lines() {
        say!("{line}");
    }
    if report.items == 0 && report.holds() {
        // A blog without images: nothing to say.
        return Ok(true);
    }
    say!(
        "images: {}, {}",
        count(report.items, "image item", "image items"),
        if report.holds() {
            "every one with its bytes, no orphan bytes"
        } else {
            "FAILED"
        }
    );
    Ok(report.holds())
}

/// Scans the store with progress on stderr, prints the violations and the verdict.
async fn run_verify(store: &Arc<dyn Store>) -> anyhow::Result<VerifyReport> {
    let report = verify::verify_with_progress(store, &mut show_progress).await?;
    print_verdict(&report);
    Ok(report)
}

/// `verify`: the scan of [`run_verify`], but the copies that changes not yet applied by the
/// change feed will make (the pump's backlog since its checkpoint) are left out and counted
/// apart: on a live store, or a backup taken while the server wrote, they are late, not wrong.
async fn run_verify_beside_the_change_feed(store: &Arc<dyn Store>) -> anyhow::Result<VerifyReport> {
    let backlog = changefeed::backlog(store).await?;
    if backlog.total() > 0 {
        say!("verify: {}", backlog.describe());
    }
    let explained = |violation: &verify::Violation| backlog.explains(violation);
    let report = verify::verify_explained(store, &mut show_progress, &explained).await?;
    print_verdict(&report);
    Ok(report)
}

/// `verify --repair`: each fix as it is made (naming the violation), what the store refused,
/// then what still fails (if anything) and the verdict of the scan after the repairs.
async fn run_repair(store: &Arc<dyn Store>) -> anyhow::Result<VerifyReport> {
    let report = verify::verify_and_repair(store, &mut show_progress, &mut |fixed| {
        say!("{fixed}");
    })
    .await?;
    // Each fix named its violation as it was made; what had none is listed below.
    eprintln!("before the repairs: {}", report.before.verdict());
    for failed in &report.applied.failed {
        say!("{failed}");
    }
    say!("{}", repair_tally(&report));
    print_verdict(&report.after);
    Ok(report.after)
}

/// What `verify --repair` did, in violations (what the user was shown) and in repairs (one
/// repair may undo several violations: a recount both counts, a refill every feed entry).
fn repair_tally(report: &verify::RepairReport) -> String {
    let violations = |n: usize| count(n as u64, "violation", "violations");
    let undone = report
        .before
        .total_violations
        .saturating_sub(report.after.total_violations);
    format!(
        "repair: {} fixed ({}), {} could not be fixed",
        violations(undone),
        count(report.applied.fixed.len() as u64, "repair", "repairs"),
        violations(report.after.total_violations)
    )
}

fn show_progress(progress: &verify::ScanProgress) {
    eprintln!(
        "verify: {} scanned (now in {}), {} so far",
        count(progress.scanned.total() as u64, "item", "items"),
        progress.container.name(),
        count(progress.violations as u64, "violation", "violations")
    );
}

fn print_verdict(report: &VerifyReport) {
    for line in report.violation_lines(VIOLATIONS_SHOWN) {
        say!("{line}");
    }
    say!("{}", report.verdict());
}

/// `functions generate`: into the repository (`.`) for the `single` layout; the `multi`
/// layout's files would replace the repository's, so they need a folder named.
fn generate(root: Option<&Path>, tenancy: Tenancy) -> anyhow::Result<()> {
    let root = match (root, tenancy) {
        (Some(root), _) => root,
        (None, Tenancy::Single) => Path::new("."),
        (None, Tenancy::Multi) => {
            anyhow::bail!("--root is required with --tenancy multi (the repository keeps single)")
        }
    };
    for path in metadata::write_repository(root, tenancy)? {
        say!("wrote {}", path.display());
    }
    Ok(())
}

fn write_openapi(out: &Path, tenancy: Tenancy) -> anyhow::Result<()> {
    let document = openapi::json_for(tenancy);
    if out == Path::new("-") {
        words::print(&document);
        return Ok(());
    }
    std::fs::write(out, document)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", out.display()))?;
    say!("wrote {}", out.display());
    Ok(())
}

fn stage_script_root(
    out: &Path,
    binary: Option<PathBuf>,
    zip: bool,
    tenancy: Tenancy,
) -> anyhow::Result<()> {
    let binary = binary.unwrap_or_else(|| stage::default_binary(Path::new(".")));
    stage::check_binary_runs_on_functions(&binary)?;
    stage::stage(out, &binary, tenancy)?;
    say!("staged {} ({tenancy} layout)", out.display());
    if zip {
        let archive = stage::zip_path(out);
        stage::zip_script_root(out, &archive)?;
        say!("zipped {}", archive.display());
    }
    Ok(())
}
