//! The ceiling phase (`--only ceiling`): every query route beside the server's cheapest one,
//! the health probe `GET /api/health`, on one data set and one server. Each query is one request to
//! one logical partition, so it should cost little more than that probe: the phase prints
//! each route's throughput as a share of the probe's.
//!
//! The routes take turns in short runs, round after round, so that whatever else the machine
//! does (other processes, the pump settling) falls on all of them alike. Each round starts
//! two servers, one with telemetry export off and one exporting to an OTLP/HTTP collector,
//! warms both up with an unmeasured run of every route, then runs each route on one and at
//! once on the other, each server first in every other round.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use cosmos_blog::store::Store;

use crate::generate::Dataset;
use crate::load::{
    Kind, LoadConfig, Observed, Served, Summary, catch_up, phase, serve, settled,
    visit_every_target,
};
use crate::stats::ms;

/// The routes, the health probe (the ceiling) first; then the two pages, each measured
/// against the JSON route it shows (the front page against Q6, a post page against Q2); then
/// the images: an upload, and an image served.
pub const ROUTES: [Kind; 11] = [
    Kind::Health,
    Kind::User,
    Kind::Post,
    Kind::UserPosts,
    Kind::Comments,
    Kind::Likes,
    Kind::Feed,
    Kind::FrontPage,
    Kind::PostPage,
    Kind::ImageUpload,
    Kind::Image,
];

/// Images each server holds for the image route to read.
const IMAGES_READ: usize = 16;

/// Each page beside the API routes whose answers it renders: what a client of the API asks
/// for to show the same (the post page shows the post, Q2, and its first comments, Q4).
pub const PAGES: [(Kind, &[Kind]); 2] = [
    (Kind::FrontPage, &[Kind::Feed]),
    (Kind::PostPage, &[Kind::Post, Kind::Comments]),
];

/// The routes whose label starts with one of `prefixes` (all of them without any), always
/// with the health route, the ceiling.
pub fn chosen(prefixes: &[String]) -> Vec<Kind> {
    ROUTES
        .into_iter()
        .filter(|kind| {
            *kind == Kind::Health
                || prefixes.is_empty()
                || prefixes
                    .iter()
                    .any(|prefix| kind.label().starts_with(prefix.as_str()))
        })
        .collect()
}

/// Runs of every route, each `config.phase / ROUNDS` long. Even: each of the two servers
/// takes the first turn of each route in half the rounds.
pub const ROUNDS: u32 = 4;

/// One route's figures over all rounds.
#[derive(Debug, Clone)]
pub struct RouteFigures {
    pub kind: Kind,
    pub served: usize,
    pub errors: usize,
    pub elapsed: Duration,
    /// The median of the rounds' medians.
    pub p50: Duration,
    /// The worst round's 99th percentile.
    pub p99: Duration,
}

impl RouteFigures {
    pub fn throughput(&self) -> f64 {
        self.served as f64 / self.elapsed.as_secs_f64().max(f64::EPSILON)
    }
}

/// The figures of one server: telemetry export off, or on.
#[derive(Debug, Clone)]
pub struct CeilingRun {
    pub export: String,
    pub routes: Vec<RouteFigures>,
}

impl CeilingRun {
    fn ceiling(&self) -> f64 {
        self.routes
            .iter()
            .find(|route| route.kind == Kind::Health)
            .map_or(0.0, RouteFigures::throughput)
    }

    fn figures(&self, kind: Kind) -> Option<&RouteFigures> {
        self.routes.iter().find(|route| route.kind == kind)
    }
}

/// Serves `store` with telemetry export off (logs only, as the binary runs without an
/// exporter) and exporting to `otlp_endpoint` (or, without one, to a collector in this
/// process that accepts everything), and measures both. The two take turns too, a server of
/// each per round, so that the comparison of export on and off sees the same machine as the
/// comparison of the routes.
pub async fn run(
    store: Arc<dyn Store>,
    data: Dataset,
    config: &LoadConfig,
    routes: &[Kind],
    otlp_endpoint: Option<&str>,
    log: impl Fn(&str),
) -> anyhow::Result<Vec<CeilingRun>> {
    let data = Arc::new(data);
    let collector = match otlp_endpoint {
        Some(endpoint) => endpoint.to_owned(),
        None => format!("http://{}", accepting_collector().await?),
    };
    let exports = [Observed::Logs, Observed::Exporting(&collector)];
    let turn = config.phase / ROUNDS;
    // rounds[export][route]: each round's figures.
    let mut rounds = vec![vec![Vec::new(); routes.len()]; exports.len()];
    for round in 1..=ROUNDS {
        log(&format!(
            "round {round} of {ROUNDS}: a server with {}, and one {}",
            export_name(exports[0]),
            export_name(exports[1])
        ));
        let mut servers = Vec::new();
        for observed in exports {
            let served = serve(
                Arc::clone(&store),
                config.concurrency,
                config.list_cache_mb,
                observed,
            )
            .await;
            match served {
                Ok(served) => servers.push(served),
                Err(e) => {
                    stop_all(servers).await?;
                    return Err(e);
                }
            }
        }
        let measured = async {
            log("waiting for the change-feed pump to catch up with the loaded data");
            let mut waited = settled(&store).await?;
            for served in &servers {
                waited += catch_up(&served.client, &data).await?;
            }
            waited += settled(&store).await?;
            if routes.contains(&Kind::Image) {
                for served in &mut servers {
                    served
                        .client
                        .upload_images(data.users[0].as_str(), IMAGES_READ)
                        .await?;
                }
            }
            log(&format!(
                "the pump has handled every change ({:.1} s); warming up",
                waited.as_secs_f64()
            ));
            // A server that has run a while keeps the pages and items its readers ask for
            // (within its bound); a new one has kept nothing yet. So each route first reads
            // every item it may be measured on, once, then runs a while unmeasured.
            for served in &servers {
                for kind in routes {
                    visit_every_target(&served.client, &data, *kind, config.concurrency).await?;
                    let mix = [(*kind, 1)];
                    phase(kind.label(), &served.client, &data, &mix, config, turn / 2).await?;
                }
            }
            log("measuring");
            // Each route on one server, then at once on the other: export on and off are
            // compared seconds apart, not minutes. The second turn of a route runs on a
            // machine that has just run it, which made it a few percent faster in every
            // route, so the servers take the first turn by turns.
            let order: [usize; 2] = if round % 2 == 1 { [0, 1] } else { [1, 0] };
            for (position, kind) in routes.iter().enumerate() {
                let mix = [(*kind, 1)];
                for export in order {
                    let measured = phase(
                        kind.label(),
                        &servers[export].client,
                        &data,
                        &mix,
                        config,
                        turn,
                    )
                    .await?;
                    rounds[export][position].push((measured.total, measured.elapsed));
                }
            }
            anyhow::Ok(())
        }
        .await;
        stop_all(servers).await?;
        measured?;
    }
    Ok(exports
        .iter()
        .zip(rounds)
        .map(|(observed, runs)| CeilingRun {
            export: export_name(*observed),
            routes: routes
                .iter()
                .zip(runs)
                .map(|(kind, runs)| combine(*kind, &runs))
                .collect(),
        })
        .collect())
}

/// Stops every server, each even if another's stop failed.
async fn stop_all(servers: Vec<Served>) -> anyhow::Result<()> {
    let mut outcome = Ok(());
    for served in servers {
        outcome = outcome.and(served.stop().await);
    }
    outcome
}

fn export_name(observed: Observed<'_>) -> String {
    match observed {
        Observed::Nothing => "no telemetry".to_owned(),
        Observed::Logs => {
            "telemetry export off (logs only, as the binary without an exporter)".to_owned()
        }
        Observed::Exporting(endpoint) => format!("exporting over OTLP/HTTP to {endpoint}"),
    }
}

fn combine(kind: Kind, runs: &[(Summary, Duration)]) -> RouteFigures {
    let mut medians: Vec<Duration> = runs.iter().map(|(summary, _)| summary.p50).collect();
    medians.sort_unstable();
    let errors: usize = runs.iter().map(|(summary, _)| summary.errors).sum();
    RouteFigures {
        kind,
        served: runs
            .iter()
            .map(|(summary, _)| summary.requests)
            .sum::<usize>()
            - errors,
        errors,
        elapsed: runs.iter().map(|(_, elapsed)| *elapsed).sum(),
        p50: medians.get(medians.len() / 2).copied().unwrap_or_default(),
        p99: runs
            .iter()
            .map(|(summary, _)| summary.p99)
            .max()
            .unwrap_or_default(),
    }
}

/// An OTLP/HTTP collector on a loopback port that answers every export with an empty
/// success, as a collector that keeps up does; it lives as long as the process.
async fn accepting_collector() -> anyhow::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let accept_all = axum::Router::new().fallback(|| async { axum::http::StatusCode::OK });
    tokio::spawn(async move { axum::serve(listener, accept_all).await });
    Ok(address)
}

/// The figures of both runs as markdown: one table, a row per route.
pub fn markdown(out: &mut String, runs: &[CeilingRun], config: &LoadConfig) {
    let [off, on] = runs else {
        return;
    };
    let concurrency = config.concurrency;
    let kept = match config.list_cache_mb {
        0 => "no list pages kept".to_owned(),
        mb => format!("list pages kept up to {mb} MiB"),
    };
    out.push_str(&format!(
        "\n### The ceiling: each route beside the health route\n\n\
         {concurrency} connections, {kept}; the routes take turns, {ROUNDS} rounds, each \
         on two new servers warmed up by every route, one with {}, one {}: each route runs \
         on the one, then at once on the other, each server first in every other round. \
         p50: the median of the rounds' medians; p99: the worst round's.\n\n\
         | route | req/s (off) | share of `GET /` | p50 ms | p99 ms | req/s (export on) | share | p99 ms | on vs off |\n\
         |---|---|---|---|---|---|---|---|---|\n",
        off.export, on.export
    ));
    for kind in ROUTES {
        let (Some(a), Some(b)) = (off.figures(kind), on.figures(kind)) else {
            continue;
        };
        let errors = if a.errors + b.errors > 0 {
            format!(" ({} errors)", a.errors + b.errors)
        } else {
            String::new()
        };
        out.push_str(&format!(
            "| {}{errors} | {:.0} | {:.0} % | {:.2} | {:.2} | {:.0} | {:.0} % | {:.2} | {:+.1} % |\n",
            kind.label(),
            a.throughput(),
            100.0 * a.throughput() / off.ceiling().max(f64::EPSILON),
            ms(a.p50),
            ms(a.p99),
            b.throughput(),
            100.0 * b.throughput() / on.ceiling().max(f64::EPSILON),
            ms(b.p99),
            100.0 * (b.throughput() / a.throughput().max(f64::EPSILON) - 1.0),
        ));
    }
    out.push_str(
        "\n| page | the JSON routes it shows | page req/s | their req/s, one request each | \
         share of theirs | share of the first route's alone | page p50 ms |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for (page, routes) in PAGES {
        let Some(page) = off.figures(page) else {
            continue;
        };
        let routes: Option<Vec<&RouteFigures>> =
            routes.iter().map(|&kind| off.figures(kind)).collect();
        let Some(routes) = routes.filter(|routes| !routes.is_empty()) else {
            continue;
        };
        // The same content through the API takes one request to each route, one after the
        // other: their times add up.
        let seconds_per_set: f64 = routes
            .iter()
            .map(|route| 1.0 / route.throughput().max(f64::EPSILON))
            .sum();
        let together = 1.0 / seconds_per_set.max(f64::EPSILON);
        let labels: Vec<&str> = routes.iter().map(|route| route.kind.label()).collect();
        out.push_str(&format!(
            "| {} | {} | {:.0} | {:.0} | {:.0} % | {:.0} % | {:.2} |\n",
            page.kind.label(),
            labels.join(" + "),
            page.throughput(),
            together,
            100.0 * page.throughput() / together.max(f64::EPSILON),
            100.0 * page.throughput() / routes[0].throughput().max(f64::EPSILON),
            ms(page.p50),
        ));
    }
}
