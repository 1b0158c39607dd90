//! Logs, traces and metrics.
//!
//! - **Logs**: one line per event on stderr, which the Functions host forwards to its own log
//!   and to Application Insights. `RUST_LOG` sets the filter (default `info`). Every request
//!   runs in a `request` span whose fields (the host's invocation id; with export on, the
//!   trace and span ids) each line logged inside it carries.
//! - **Traces**: the `tracing` spans become OpenTelemetry spans: one per HTTP request or
//!   trigger invocation ([`http`]), parented on the caller's W3C `traceparent` (the host's
//!   invocation), one per change-feed batch of the standalone pump, and one per store call
//!   below them ([`traced`]), with its RU charge.
//! - **Metrics**: see [`metrics`].
//!
//! Where they go is chosen by the standard settings ([`export`]). Everything runs through
//! one `tracing` subscriber, [`Telemetry`]: `main` installs it for the whole process, and a
//! test hands its own to the application it starts (`Application::with_telemetry`), so no
//! test sees another's telemetry.

pub mod export;
mod held;
pub mod http;
pub mod metrics;
pub mod sampling;
mod scoped;
pub mod traced;

pub use http::INVOCATION_ID_HEADER;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use opentelemetry::metrics::MeterProvider;
use opentelemetry::trace::TracerProvider;
use tracing::instrument::WithSubscriber;
use tracing::{Dispatch, Instrument, Level};
use tracing_subscriber::filter::{EnvFilter, FilterFn, LevelFilter, Targets};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::fmt::writer::BoxMakeWriter;
use tracing_subscriber::prelude::*;

use export::{Export, OtlpProtocols, Providers, Schedule};
use held::Held;
use metrics::Instruments;
use sampling::{Sampler, Sampling};

/// The instrumentation scope of our spans and metrics.
const SCOPE: &str = "cosmos-blog";

/// Export gets this long to flush at shutdown; what is not out by then is lost.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// What [`Telemetry::new`] builds.
pub struct Config {
    pub export: Export,
    /// The protocols of an OTLP export.
    pub otlp_protocols: OtlpProtocols,
    pub schedule: Schedule,
    /// Which requests are traced, when exporting.
    pub sampling: Sampling,
    /// The log filter, in `RUST_LOG` syntax.
    pub log_filter: String,
    /// Where log lines go.
    pub log_writer: BoxMakeWriter,
}

impl Config {
    /// `export` with quiet logs, every request traced: for tests.
    pub fn exporting(export: Export, schedule: Schedule) -> Config {
        Config {
            export,
            otlp_protocols: OtlpProtocols::default(),
            schedule,
            sampling: Sampling::EveryRequest,
            log_filter: "warn".into(),
            log_writer: BoxMakeWriter::new(std::io::sink),
        }
    }
}

/// The subscriber of logs, spans and metrics, and the exporters behind it. Cheap to clone.
#[derive(Clone)]
pub struct Telemetry {
    dispatch: Dispatch,
    providers: Option<Providers>,
    describe: &'static str,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry")
            .field("export", &self.describe)
            .finish_non_exhaustive()
    }
}

impl Telemetry {
    /// Builds the subscriber and the exporters of `config`; export needs the Tokio runtime.
    pub fn new(config: Config) -> anyhow::Result<Self> {
        let providers = export::providers(&config.export, config.otlp_protocols, config.schedule)
            .context("telemetry export")?;
        let logs = tracing_subscriber::fmt::layer()
            .with_writer(config.log_writer)
            .with_ansi(false)
            .with_target(false)
            .with_filter(log_filter(&config.log_filter));
        let traces = providers.as_ref().map(|p| {
            tracing_opentelemetry::layer()
                .with_tracer(p.tracer.tracer(SCOPE))
                .with_level(true)
                .with_filter(trace_filter())
        });
        // The instruments and the sampler are only held (found by downcast) and want no span
        // nor event: without a filter of their own they would have every callsite of the
        // process, `trace!` in the SDK and hyper included, evaluated on every hit.
        let meters = providers.as_ref().map(|p| {
            Held(Arc::new(Instruments::new(&p.meter.meter(SCOPE)))).with_filter(LevelFilter::OFF)
        });
        let sampler = providers
            .as_ref()
            .map(|_| Held(Arc::new(Sampler::new(config.sampling))).with_filter(LevelFilter::OFF));
        let subscriber = tracing_subscriber::registry()
            .with(logs)
            .with(traces)
            .with(meters)
            .with(sampler);
        Ok(Self {
            dispatch: Dispatch::new(subscriber),
            providers,
            describe: config.export.describe(),
        })
    }

    /// Logs only, filtered by `log_filter` (`RUST_LOG` syntax), to `writer`.
    pub fn logs_only<W>(log_filter: &str, writer: W) -> Self
    where
        W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
    {
        let config = Config {
            export: Export::Off,
            otlp_protocols: OtlpProtocols::default(),
            schedule: Schedule::default(),
            sampling: Sampling::default(),
            log_filter: log_filter.into(),
            log_writer: BoxMakeWriter::new(writer),
        };
        // Without export nothing can fail.
        Self::new(config).unwrap_or_else(|_| unreachable!("no exporter to build"))
    }

    /// Where telemetry goes: `off`, `otlp/http`, `application-insights`.
    pub fn describe(&self) -> &'static str {
        self.describe
    }

    /// Makes this the subscriber of every thread and task of the process (`main`).
    pub fn install(&self) {
        let _ = tracing::dispatcher::set_global_default(self.dispatch.clone());
    }

    /// Runs `make` with this subscriber current: spans, logs and metrics of what it starts
    /// (the change-feed pump's tasks) come here.
    pub fn in_scope<T>(&self, make: impl FnOnce() -> T) -> T {
        scoped::let_each_scope_decide();
        tracing::dispatcher::with_default(&self.dispatch, make)
    }

    /// `future`, run with this subscriber current.
    pub fn scoped<F: Future>(&self, future: F) -> impl Future<Output = F::Output> + use<F> {
        scoped::let_each_scope_decide();
        future.with_subscriber(self.dispatch.clone())
    }

    /// Sends what is buffered now; blocks a thread of the runtime's blocking pool, not the
    /// caller's.
    pub async fn flush(&self) {
        if let Some(providers) = self.providers.clone() {
            let _ = tokio::task::spawn_blocking(move || {
                let _ = providers.tracer.force_flush();
                let _ = providers.meter.force_flush();
            })
            .await;
        }
    }

    /// Flushes and stops the exporters, waiting at most a few seconds for a slow collector.
    pub async fn shutdown(&self) {
        if let Some(providers) = self.providers.clone() {
            let _ = tokio::task::spawn_blocking(move || {
                let _ = providers.tracer.shutdown_with_timeout(SHUTDOWN_TIMEOUT);
                let _ = providers.meter.shutdown_with_timeout(SHUTDOWN_TIMEOUT);
            })
            .await;
        }
    }
}

/// `RUST_LOG`'s filter, which leaves the store call spans out unless it names them: they are
/// for traces, and would only lengthen every line logged inside a store call.
fn log_filter(directives: &str) -> EnvFilter {
    let quiet_store = format!("{}=off", traced::SPAN_TARGET);
    let directives = if directives.contains(traced::SPAN_TARGET) {
        directives.to_owned()
    } else {
        format!("{directives},{quiet_store}")
    };
    EnvFilter::try_new(&directives)
        .unwrap_or_else(|_| EnvFilter::new(format!("info,{quiet_store}")))
}

/// What becomes OpenTelemetry data: our spans but those of work whose trace is not kept, and
/// warnings and errors (as span events).
fn trace_filter() -> FilterFn<impl Fn(&tracing::Metadata<'_>) -> bool> {
    let ours = Targets::new()
        .with_target("cosmos_blog", Level::INFO)
        .with_target(sampling::UNSAMPLED_TARGET, LevelFilter::OFF);
    FilterFn::new(move |metadata| {
        ours.would_enable(metadata.target(), metadata.level())
            && (metadata.is_span() || *metadata.level() <= Level::WARN)
    })
    // What `ours` enables at most: lower callsites are skipped without asking.
    .with_max_level_hint(Level::INFO)
}

/// The span of one change-feed batch a handler takes from the standalone pump (under the
/// Functions host, each batch is a trigger invocation: an HTTP request).
pub fn batch_span(handler: &'static str, source: &'static str, documents: usize) -> tracing::Span {
    macro_rules! batch_span {
        ($target:expr) => {
            tracing::info_span!(
                target: $target,
                "change_feed_batch",
                otel.name = handler,
                otel.kind = "consumer",
                blog.operation = handler,
                blog.change_feed.source = source,
                blog.change_feed.documents = documents as u64,
                trace_id = tracing::field::Empty,
                span_id = tracing::field::Empty,
            )
        };
    }
    if !sampling::traces_new_work() {
        return batch_span!(sampling::UNSAMPLED_TARGET);
    }
    let span = batch_span!("cosmos_blog::telemetry");
    http::record_ids(&span);
    span
}

/// `future` as a task of its own (the hot-post combiner's worker) that still belongs to the
/// work that starts it: it runs in the current span, with the current subscriber, and its
/// RU charges count in the current scope (`store::charge`).
pub fn in_current_context<F: Future>(future: F) -> impl Future<Output = F::Output> {
    crate::store::charge::carried(future.in_current_span()).with_current_subscriber()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_alone_need_no_runtime_and_metrics_go_nowhere() {
        let telemetry = Telemetry::logs_only("info", std::io::sink);
        assert_eq!(telemetry.describe(), "off");
        // No instruments in a logs-only subscriber: recording is a no-op, not a panic.
        telemetry.in_scope(|| metrics::record_combined_batch(3));
    }

    #[test]
    fn the_store_spans_stay_out_of_the_logs_unless_named() {
        let quiet = log_filter("info").to_string();
        assert!(
            quiet.contains(&format!("{}=off", traced::SPAN_TARGET)),
            "{quiet}"
        );
        let named = format!("info,{}=info", traced::SPAN_TARGET);
        assert!(!log_filter(&named).to_string().contains("=off"));
    }
}
