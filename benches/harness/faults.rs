//! The fault phase: the write mix of the load phase (20 % posts, 40 % comments,
//! 40 % likes from concurrent clients) through the real application and its change-feed
//! pump, on the Cosmos DB in-memory emulator, three times: without faults, with 5 % of the
//! requests throttled (429, retry after 10 ms), and with 1 % of the answers lost after the
//! service ran the request (`ResponseTimeoutAfterService`). The faults come from the SDK's
//! fault injection (`tests/api/cosmos_emulator.rs`), at a counted rate on every data request.
//!
//! Each run reports throughput, latencies, the errors clients saw, the requests that reached
//! the account per write (API and change feed, every retry included), and whether `verify`
//! holds once the change feed has drained, with the faults still running.

use std::sync::Arc;
use std::time::Duration;

use cosmos_blog::settings::DEFAULT_LIST_CACHE_MB;
use cosmos_blog::store::Tenancy;
use cosmos_blog::verify::{VerifyReport, ViolationKind};

use crate::generate::{GenConfig, generate};
use crate::load::{LoadConfig, Phase};
use crate::markdown::{section, table_head};
use testkit::emulator::{
    Fault, FaultInjectionErrorType, FaultPlan, Faults, faulty_emulator_store,
    on_each_data_operation,
};

#[derive(Debug, Clone)]
pub struct FaultsConfig {
    /// Users of the data set generated into each run's emulator.
    pub users: usize,
    pub seed: u64,
    pub phase: Duration,
    pub concurrency: usize,
    pub progress: bool,
}

/// The three runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultRun {
    None,
    Throttled,
    LostAnswers,
}

impl FaultRun {
    pub const ALL: [FaultRun; 3] = [FaultRun::None, FaultRun::Throttled, FaultRun::LostAnswers];

    pub fn label(self) -> &'static str {
        match self {
            FaultRun::None => "no faults",
            FaultRun::Throttled => "5 % throttled (429, retry after 10 ms)",
            FaultRun::LostAnswers => "1 % answers lost after the service ran the request",
        }
    }

    fn plans(self) -> Vec<FaultPlan> {
        let (fault, every) = match self {
            FaultRun::None => return Vec::new(),
            FaultRun::Throttled => (
                Fault::Throttle {
                    retry_after: Duration::from_millis(10),
                },
                20,
            ),
            FaultRun::LostAnswers => (
                Fault::Error(FaultInjectionErrorType::ResponseTimeoutAfterService),
                100,
            ),
        };
        on_each_data_operation(fault, every)
    }

    /// Whether a request the fault hits reached the service anyway.
    fn reaches_service(self) -> bool {
        self == FaultRun::LostAnswers
    }
}

#[derive(Debug, Clone)]
pub struct FaultPhase {
    pub run: FaultRun,
    pub items: usize,
    pub mix: Phase,
    pub injected: u64,
    /// Requests sent to the account during the mix (faulted ones included).
    pub account_requests: u64,
    /// `verify` once the change feed drained (faults still on), and how long that took.
    pub verify: VerifyReport,
    pub drained: Duration,
}

impl FaultPhase {
    /// Write requests the clients sent (answered or not).
    pub fn writes(&self) -> usize {
        self.mix.total.requests
    }

    pub fn requests_per_write(&self) -> f64 {
        self.account_requests as f64 / self.writes().max(1) as f64
    }

    /// No post's counts differ from its comments and likes.
    pub fn counts_exact(&self) -> bool {
        !self
            .verify
            .by_kind
            .contains_key(&ViolationKind::CountMismatch)
    }
}

pub async fn run(config: &FaultsConfig, log: impl Fn(&str)) -> anyhow::Result<Vec<FaultPhase>> {
    let mut phases = Vec::new();
    for run in FaultRun::ALL {
        log(&format!(
            "faults: write mix on the emulator, {}",
            run.label()
        ));
        phases.push(one_run(config, run).await?);
    }
    Ok(phases)
}

async fn one_run(config: &FaultsConfig, run: FaultRun) -> anyhow::Result<FaultPhase> {
    let (store, faults) = faulty_emulator_store(Tenancy::Single, run.plans()).await;
    let data = Arc::new(
        generate(
            &store,
            &GenConfig {
                users: config.users,
                seed: config.seed,
                progress: config.progress,
            },
        )
        .await?,
    );
    let items = data.items();
    let served = crate::load::serve(
        Arc::clone(&store),
        config.concurrency,
        DEFAULT_LIST_CACHE_MB,
        crate::load::Observed::Nothing,
    )
    .await?;
    crate::load::catch_up(&served.client, &data).await?;

    faults.start();
    let before = attempts(&faults, run);
    let load = LoadConfig {
        phase: config.phase,
        concurrency: config.concurrency,
        sequential: 0,
        post_rate: 1,
        seed: config.seed,
        write_mix_only: true,
        otlp_endpoint: None,
        list_cache_mb: DEFAULT_LIST_CACHE_MB,
    };
    let mix = crate::load::phase(
        "write mix (20% posts, 40% comments, 40% likes)",
        &served.client,
        &data,
        &crate::load::WRITE_MIX,
        &load,
        config.phase,
    )
    .await;
    let account_requests = attempts(&faults, run) - before;
    let served = served.stop().await;
    let mix = mix?;
    served?;
    // A pump drains what the change feed still holds (the faults still on) until `verify`
    // holds, or its time runs out.
    let check = crate::invariants::after_load(&store, config.progress).await?;
    let injected = faults.injected();
    faults.stop();
    Ok(FaultPhase {
        run,
        items,
        mix,
        injected,
        account_requests,
        verify: check.report,
        drained: check.waited,
    })
}

/// Requests sent to the account so far: those that reached it, and those a fault stopped.
fn attempts(faults: &Faults, run: FaultRun) -> u64 {
    let stopped = if run.reaches_service() {
        0
    } else {
        faults.injected()
    };
    faults.reached() + stopped
}

/// The report's section.
pub fn markdown(out: &mut String, phases: &[FaultPhase], concurrency: usize) {
    use std::fmt::Write as _;
    section(
        out,
        "Faults (Cosmos DB emulator, write mix)",
        &format!(
            "The write mix of the load phase ({concurrency} clients: 20 % posts, 40 % comments, 40 % likes) through the real application and its change-feed pump, on the SDK's in-memory emulator with its fault injection at a counted rate on every data request. Requests to the account count the API's and the change feed's, every retry included (the SDK's and the store's). `verify` runs once the change feed has drained, the faults still running."
        ),
    );
    table_head(
        out,
        "run | items | writes | throughput | p50 | p99 | errors seen by clients | faults injected | requests to the account per write | counts exact | verify",
    );
    for phase in phases {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.0}/s | {:.1} ms | {:.1} ms | {} | {} | {:.2} | {} | {} |",
            phase.run.label(),
            phase.items,
            phase.writes(),
            phase.mix.throughput(),
            crate::stats::ms(phase.mix.total.p50),
            crate::stats::ms(phase.mix.total.p99),
            phase.mix.total.errors,
            phase.injected,
            phase.requests_per_write(),
            if phase.counts_exact() {
                "yes"
            } else {
                "**no**"
            },
            if phase.verify.holds() {
                format!("holds ({:.1} s to drain)", phase.drained.as_secs_f64())
            } else {
                format!("**fails**: {}", phase.verify.verdict())
            },
        );
    }
    let _ = writeln!(
        out,
        "\nTargets (reported, not asserted): no client-visible errors under 5 % throttling; counts exact and `verify` holding in every run.\n"
    );
    for phase in phases {
        for (kind, summary) in &phase.mix.by_kind {
            if summary.errors > 0 {
                let _ = writeln!(
                    out,
                    "- {}: {} of {} `{}` failed",
                    phase.run.label(),
                    summary.errors,
                    summary.requests,
                    kind.label()
                );
            }
        }
    }
}
