//! The whole harness run: generate, profile, load, start-up, report. Shared by the bench
//! binary (`cargo bench --bench harness`) and the CI smoke test (`tests/api/harness_smoke.rs`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use cosmos_blog::settings::DEFAULT_LIST_CACHE_MB;
use cosmos_blog::store::Store;
use cosmos_blog::store::embedded::EmbeddedStore;

use crate::deletes::DeleteCost;
use crate::faults::{FaultPhase, FaultsConfig};
use crate::generate::{Dataset, GenConfig, generate};

/// Runs of each delete in the cost profile: the counts are the same every run.
const DELETE_SAMPLES: usize = 5;
use crate::hotpost::{HotPostConfig, HotPostRun};
use crate::invariants::{self, Check};
use crate::layouts::{LayoutsConfig, LayoutsReport};
use crate::load::{LoadConfig, LoadReport};
use crate::profile::{ProfileConfig, Row, profile};
use crate::report::{self, Inputs, Machine};
use crate::startup::StartupReport;
use crate::transfer::TransferReport;

/// Cost and performance harness of the blog backend.
#[derive(Debug, Clone, Parser)]
#[command(name = "harness")]
pub struct Args {
    /// Users to generate (each with 5–50 posts; each post up to 25 comments, 100 likes).
    #[arg(long, default_value_t = 1_000)]
    pub users: usize,
    /// Seed of the data generator and of every random choice.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Folder for REPORT.md and chart.svg.
    #[arg(long, default_value = "bench-results")]
    pub out: PathBuf,
    /// Folder for the store (default: a temporary folder, removed afterwards).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Measured runs per operation and model (at most).
    #[arg(long, default_value_t = 200)]
    pub samples: usize,
    /// Seconds allowed per operation and model (at least 3 runs are made anyway).
    #[arg(long, default_value_t = 3.0)]
    pub op_seconds: f64,
    /// Seconds of each HTTP load phase.
    #[arg(long, default_value_t = 10.0)]
    pub load_seconds: f64,
    /// Concurrent HTTP clients.
    #[arg(long, default_value_t = 8)]
    pub concurrency: usize,
    /// Sequential requests per query for the single-client latencies.
    #[arg(long, default_value_t = 1_000)]
    pub sequential: usize,
    /// Posts per second of the change-feed lag probe.
    #[arg(long, default_value_t = 100)]
    pub post_rate: u32,
    /// Start-ups of the binary to time.
    #[arg(long, default_value_t = 10)]
    pub startup_runs: usize,
    /// Writers of the hot-post phase, one run per count and backend.
    #[arg(long, value_delimiter = ',', default_value = "100,1000")]
    pub hot_post_writers: Vec<usize>,
    /// Delay added to every request of the Cosmos DB emulator in the hot-post phase.
    #[arg(long, default_value_t = 5)]
    pub hot_post_delay_ms: u64,
    /// Also compare the `single` and `multi` layouts on a multi-tenant data set: `--users`
    /// users over this many tenants, a few large and many small (Zipf).
    #[arg(long)]
    pub tenants: Option<usize>,
    /// Users of the layout comparison's smaller data set on the Cosmos DB emulator (0: none).
    #[arg(long, default_value_t = 100)]
    pub emulator_users: usize,
    /// Physical partitions of each emulator container in the layout comparison.
    #[arg(long, default_value_t = 8)]
    pub physical_partitions: u32,
    /// Users of the data set of each run of the fault phase (on the Cosmos DB emulator).
    #[arg(long, default_value_t = 20)]
    pub fault_users: usize,
    #[arg(long)]
    pub skip_faults: bool,
    #[arg(long)]
    pub skip_load: bool,
    #[arg(long)]
    pub skip_hot_post: bool,
    #[arg(long)]
    pub skip_startup: bool,
    /// No export and import of the data set.
    #[arg(long)]
    pub skip_transfer: bool,
    /// No progress bars (CI, logs).
    #[arg(long)]
    pub quiet: bool,
    /// Run one phase alone and print its figures to stdout; no report files are written.
    /// `write-mix`: the saturating write mix with the lag probe, on a data set of `--users`
    /// (a small one, say `--users 100`, is enough to iterate). `hot-post`: the hot-post
    /// phase on both backends. `layouts`: the layout comparison of `--tenants`. `transfer`:
    /// export and import of the data set of `--users`. `recheck`: the write mix, then the
    /// delayed re-check's cost and catch-up over its changes. `faults`: the write mix on the
    /// emulator without faults, throttled, and losing answers. `image-memory`: the binary's
    /// peak memory while it takes 16 uploads at once of worst-case images.
    #[arg(long, value_enum)]
    pub only: Option<Only>,
    /// Export the load's traces and metrics over OTLP/HTTP to this collector: one nobody
    /// answers shows what export costs the requests (nothing, is the promise).
    #[arg(long)]
    pub otlp_endpoint: Option<String>,
    /// The ceiling phase: only the routes whose label starts with one of these (`Q3`,
    /// `page`), beside the health route, to profile one route alone. Repeatable.
    #[arg(long)]
    pub route: Vec<String>,
    /// MiB of list pages the server keeps (`BLOG_LIST_CACHE_MB`); 0 sends every list read to
    /// the store, as before pages were kept.
    #[arg(long, default_value_t = DEFAULT_LIST_CACHE_MB)]
    pub list_cache_mb: u64,
    /// `--only plan-costs`: where to write the planner's table of measured costs.
    #[arg(long, default_value = "src/plan/costs.json")]
    pub plan_table: PathBuf,
    /// `--only plan`: also draw the chart of monthly cost against users here (SVG).
    #[arg(long)]
    pub plan_chart: Option<PathBuf>,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    pub bench: bool,
}

/// A phase that `--only` runs alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Only {
    WriteMix,
    HotPost,
    Layouts,
    Transfer,
    /// The write mix, then the delayed re-check of its changes.
    Recheck,
    Faults,
    /// The health route and the query routes Q1–Q6 taking turns on one data set, each
    /// route's throughput as a share of the health route's; export off, then on.
    Ceiling,
    /// The planner's table: each operation and change-feed copy measured on the emulator,
    /// written to `--plan-table`.
    PlanCosts,
    /// A day of `--users` users through the application on the emulator, its RU against
    /// what `cosmos-blog plan` predicts (within ±10 %).
    Plan,
    /// The binary's peak resident memory while it takes 16 uploads at once of images that
    /// decode to far more than they weigh, on its default settings (under 512 MiB).
    ImageMemory,
}

pub struct Outcome {
    pub dataset: Dataset,
    pub rows: Vec<Row>,
    pub load: Option<LoadReport>,
    pub hot_post: Option<Vec<HotPostRun>>,
    pub faults: Option<Vec<FaultPhase>>,
    pub deletes: Vec<DeleteCost>,
    pub layouts: Option<LayoutsReport>,
    pub transfer: Option<TransferReport>,
    pub startup: Option<StartupReport>,
    /// `verify` after generation and after the load.
    pub checks: Vec<Check>,
    /// The delayed re-check of the load's changes.
    pub recheck: Option<crate::recheck::RecheckCost>,
    pub report: PathBuf,
    pub chart: PathBuf,
}

/// Progress lines on stderr, unless `--quiet`.
fn logger(quiet: bool) -> impl Fn(&str) + Copy {
    move |what: &str| {
        if !quiet {
            eprintln!("harness: {what}");
        }
    }
}

/// The seeded data set of `--users` users, generated into `store`.
async fn generate_data(store: &Arc<dyn Store>, args: &Args) -> anyhow::Result<Dataset> {
    logger(args.quiet)(&format!(
        "generating {} users (seed {})",
        args.users, args.seed
    ));
    generate(
        store,
        &GenConfig {
            users: args.users,
            seed: args.seed,
            progress: !args.quiet,
        },
    )
    .await
}

fn layouts_config(args: &Args, tenants: usize) -> LayoutsConfig {
    LayoutsConfig {
        users: args.users,
        tenants,
        seed: args.seed,
        samples: args.samples,
        budget: Duration::from_secs_f64(args.op_seconds),
        progress: !args.quiet,
        emulator_users: args.emulator_users,
        physical_partitions: args.physical_partitions,
    }
}

/// The layout comparison of `--tenants`, its stores in `dir`.
async fn compare_layouts(
    args: &Args,
    tenants: usize,
    dir: &std::path::Path,
) -> anyhow::Result<LayoutsReport> {
    let log = logger(args.quiet);
    log(&format!(
        "comparing the layouts: {} users over {tenants} tenants",
        args.users
    ));
    let report = crate::layouts::run(&layouts_config(args, tenants), dir, log).await?;
    log(&format!(
        "verify in both layouts: {}",
        if report.holds() { "holds" } else { "FAILS" }
    ));
    Ok(report)
}

pub async fn run(args: &Args, command: &str, binary: &Path) -> anyhow::Result<Outcome> {
    let quiet = args.quiet;
    let log = logger(quiet);
    let temp = tempfile::tempdir()?;
    let dir = args
        .data_dir
        .clone()
        .unwrap_or_else(|| temp.path().to_owned());
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(&dir.join("blog.sqlite3"))?);

    let dataset = generate_data(&store, args).await?;
    log(&format!(
        "{} items in {:.1} s, copies rebuilt in {:.1} s",
        dataset.items(),
        dataset.load_time.as_secs_f64(),
        dataset.rebuild_time.as_secs_f64()
    ));

    log("verify after generation");
    let mut checks = vec![invariants::after_generation(&store, !quiet).await?];

    // Before the profile, whose V1 items are no export of the model.
    let transfer = if args.skip_transfer {
        None
    } else {
        Some(move_data(&store, &dir, quiet).await?)
    };

    log("profiling the ten operations under V1, V2, V3");
    let rows = profile(
        &store,
        &dataset,
        &ProfileConfig {
            samples: args.samples,
            budget: Duration::from_secs_f64(args.op_seconds),
            seed: args.seed,
            progress: !quiet,
        },
    )
    .await?;
    log("the cost of deletes");
    let deletes = crate::deletes::profile(&store, DELETE_SAMPLES).await?;

    let mut recheck = None;
    let load = if args.skip_load {
        None
    } else {
        log("HTTP load benchmark");
        let config = load_config(args, false, args.otlp_endpoint.clone());
        crate::recheck::start_here(&store).await?;
        let load = crate::load::run(Arc::clone(&store), dataset.clone(), &config, log).await?;
        log("verify after the load, once the change feed is drained");
        checks.push(invariants::after_load(&store, !quiet).await?);
        log("the delayed re-check of the load's changes");
        recheck = Some(crate::recheck::catch_up(&store).await?);
        Some(load)
    };
    for check in &checks {
        log(&format!(
            "verify after {}: {}",
            check.after,
            if check.holds() { "holds" } else { "FAILS" }
        ));
    }

    let hot_post = if args.skip_hot_post {
        None
    } else {
        Some(crate::hotpost::run(&hot_post_config(args), log).await?)
    };

    let faults = if args.skip_faults {
        None
    } else {
        Some(crate::faults::run(&faults_config(args), log).await?)
    };

    let layouts = match args.tenants {
        Some(tenants) => Some(compare_layouts(args, tenants, &dir).await?),
        None => None,
    };

    let startup = if args.skip_startup {
        None
    } else {
        log("start-up time and idle memory of the binary");
        let binary = binary.to_path_buf();
        let runs = args.startup_runs;
        Some(tokio::task::spawn_blocking(move || crate::startup::measure(&binary, runs)).await??)
    };

    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let markdown = report::markdown(&Inputs {
        command,
        seed: args.seed,
        machine: Machine::this(),
        backend: store.backend(),
        dataset: &dataset,
        rows: &rows,
        load: load.as_ref(),
        hot_post: hot_post.as_deref(),
        hot_post_delay: Duration::from_millis(args.hot_post_delay_ms),
        faults: faults.as_deref(),
        deletes: &deletes,
        layouts: layouts.as_ref(),
        transfer: transfer.as_ref(),
        startup: startup.as_ref(),
        concurrency: args.concurrency,
        checks: &checks,
        recheck: recheck.as_ref(),
    });
    let report = args.out.join("REPORT.md");
    let chart = args.out.join("chart.svg");
    std::fs::write(&report, markdown)?;
    std::fs::write(&chart, report::svg(&rows))?;
    log(&format!(
        "wrote {} and {}",
        report.display(),
        chart.display()
    ));
    Ok(Outcome {
        dataset,
        rows,
        load,
        hot_post,
        faults,
        deletes,
        layouts,
        transfer,
        startup,
        checks,
        recheck,
        report,
        chart,
    })
}

/// Export and import of the data set in `store`, through files in `dir`.
async fn move_data(
    store: &Arc<dyn Store>,
    dir: &std::path::Path,
    quiet: bool,
) -> anyhow::Result<TransferReport> {
    let log = logger(quiet);
    let report = crate::transfer::run(store, dir, quiet, log).await?;
    log(&format!(
        "export {:.0} items/s, import {:.0} items/s (copies derived); verify on the imported store: {}",
        report.export_rate(),
        report.import_rate(),
        if report.verified { "holds" } else { "FAILS" }
    ));
    Ok(report)
}

fn faults_config(args: &Args) -> FaultsConfig {
    FaultsConfig {
        users: args.fault_users.max(1),
        seed: args.seed,
        phase: Duration::from_secs_f64(args.load_seconds),
        concurrency: args.concurrency.max(1),
        progress: !args.quiet,
    }
}

fn hot_post_config(args: &Args) -> HotPostConfig {
    HotPostConfig {
        writers: args.hot_post_writers.clone(),
        emulator_delay: Duration::from_millis(args.hot_post_delay_ms),
    }
}

/// `--only`: one phase alone, its figures as markdown (printed by the caller); `binary`: the
/// application's binary, for the phases that start it.
pub async fn run_only(
    args: &Args,
    only: Only,
    command: &str,
    binary: &Path,
) -> anyhow::Result<String> {
    let quiet = args.quiet;
    let log = logger(quiet);
    let mut out = format!(
        "Command: `{command}`\n\n{}\n",
        report::Machine::this().described()
    );
    match only {
        Only::WriteMix | Only::Recheck => {
            let temp = tempfile::tempdir()?;
            let store: Arc<dyn Store> =
                Arc::new(EmbeddedStore::open(&temp.path().join("blog.sqlite3"))?);
            let dataset = generate_data(&store, args).await?;
            let items = dataset.items();
            if only == Only::Recheck {
                crate::recheck::start_here(&store).await?;
            }
            let config = load_config(args, true, args.otlp_endpoint.clone());
            let load = crate::load::run(Arc::clone(&store), dataset, &config, log).await?;
            if only == Only::Recheck {
                log("draining the change feed, then the delayed re-check of the write mix");
                let drained = invariants::after_load(&store, !quiet).await?;
                anyhow::ensure!(drained.holds(), "verify fails after the write mix");
                let cost = crate::recheck::catch_up(&store).await?;
                crate::recheck::markdown(&mut out, &cost, report::write_mix_rate(&load));
            }
            out.push_str(&format!(
                "\nData set: {items} items; the pump caught up in {:.1} s.\n",
                load.catch_up.as_secs_f64()
            ));
            report::throughput_and_lag(&mut out, &load, config.concurrency);
            for phase in &load.phases {
                if let Some(cpu) = phase.cpu {
                    let served = (phase.total.requests - phase.total.errors).max(1);
                    out.push_str(&format!(
                        "\nProcess CPU (server and clients) during \"{}\": {:.1} s in {:.1} s, {:.2} ms per request.\n",
                        phase.name,
                        cpu.as_secs_f64(),
                        phase.elapsed.as_secs_f64(),
                        cpu.as_secs_f64() * 1e3 / served as f64
                    ));
                }
            }
        }
        Only::Ceiling => {
            let temp = tempfile::tempdir()?;
            let store: Arc<dyn Store> =
                Arc::new(EmbeddedStore::open(&temp.path().join("blog.sqlite3"))?);
            let dataset = generate_data(&store, args).await?;
            out.push_str(&format!("\nData set: {} items.\n", dataset.items()));
            let config = load_config(args, false, None);
            let routes = crate::ceiling::chosen(&args.route);
            let runs = crate::ceiling::run(
                store,
                dataset,
                &config,
                &routes,
                args.otlp_endpoint.as_deref(),
                log,
            )
            .await?;
            crate::ceiling::markdown(&mut out, &runs, &config);
        }
        Only::PlanCosts => {
            let config = crate::plan::CostsConfig {
                users: args.users,
                samples: args.samples,
                seed: args.seed,
                command: command.to_owned(),
            };
            let costs = crate::plan::measure(&config, log).await?;
            crate::plan::write_table(&costs, &args.plan_table)?;
            out.push_str(&format!(
                "\nWrote {} ({} operations).\n",
                args.plan_table.display(),
                costs.operations.len()
            ));
        }
        Only::Plan => {
            let check = crate::plan_check::validate(args.users, args.seed, log).await?;
            crate::plan_check::markdown(&mut out, &check);
            if let Some(chart) = &args.plan_chart {
                crate::plan_check::write_chart(chart)?;
                out.push_str(&format!("\nDrew {}.\n", chart.display()));
            }
            anyhow::ensure!(
                check.agrees(),
                "the planner is off by more than ±10 %:\n{out}"
            );
        }
        Only::ImageMemory => {
            let runs = crate::image_memory::run(binary, log).await?;
            crate::image_memory::markdown(&mut out, &runs);
            anyhow::ensure!(
                runs.iter().all(crate::image_memory::ImageMemoryRun::holds),
                "the server's peak memory went over the limit:\n{out}"
            );
        }
        Only::Faults => {
            let phases = crate::faults::run(&faults_config(args), log).await?;
            crate::faults::markdown(&mut out, &phases, args.concurrency.max(1));
        }
        Only::HotPost => {
            let config = hot_post_config(args);
            let runs = crate::hotpost::run(&config, log).await?;
            report::hot_post(&mut out, &runs, config.emulator_delay);
        }
        Only::Layouts => {
            let tenants = args
                .tenants
                .ok_or_else(|| anyhow::anyhow!("--only layouts needs --tenants N"))?;
            let temp = tempfile::tempdir()?;
            let layouts = compare_layouts(args, tenants, temp.path()).await?;
            crate::layouts_report::markdown(&mut out, &layouts);
            anyhow::ensure!(
                layouts.holds(),
                "verify failed in the layout comparison:\n{out}"
            );
        }
        Only::Transfer => {
            let temp = tempfile::tempdir()?;
            let store: Arc<dyn Store> =
                Arc::new(EmbeddedStore::open(&temp.path().join("blog.sqlite3"))?);
            generate_data(&store, args).await?;
            let transfer = move_data(&store, temp.path(), quiet).await?;
            crate::transfer::markdown(&mut out, &transfer);
            anyhow::ensure!(
                transfer.verified,
                "verify failed on the imported store:\n{out}"
            );
        }
    }
    Ok(out)
}

/// The load phases' settings as the command line gives them.
fn load_config(args: &Args, write_mix_only: bool, otlp_endpoint: Option<String>) -> LoadConfig {
    LoadConfig {
        phase: Duration::from_secs_f64(args.load_seconds),
        concurrency: args.concurrency.max(1),
        sequential: args.sequential,
        post_rate: args.post_rate.max(1),
        seed: args.seed,
        write_mix_only,
        otlp_endpoint,
        list_cache_mb: args.list_cache_mb,
    }
}
