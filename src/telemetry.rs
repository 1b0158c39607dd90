//! Logging: one line per event on stderr, which the Functions host forwards to its own log
//! and to Application Insights. `RUST_LOG` sets the filter (default `info`). Every request
//! runs in a `request` span; the host's invocation id is a field of it, so each line logged
//! while handling an invocation carries the id the host logs it under.

use axum::http::Request;
use tracing::Span;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::{DefaultFields, Format};
use tracing_subscriber::fmt::{MakeWriter, SubscriberBuilder};

/// The header the Functions host puts on every request it sends to the custom handler.
pub const INVOCATION_ID_HEADER: &str = "x-azure-functions-invocationid";

pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = builder(filter, std::io::stderr).try_init();
}

/// The subscriber [`init`] installs, writing to `writer`.
fn builder<W>(
    filter: EnvFilter,
    writer: W,
) -> SubscriberBuilder<DefaultFields, Format, EnvFilter, W>
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(false)
        .with_target(false)
}

/// The span of one HTTP request: method, path, and the host's invocation id when present.
pub fn request_span<B>(request: &Request<B>) -> Span {
    let invocation_id = request
        .headers()
        .get(INVOCATION_ID_HEADER)
        .and_then(|value| value.to_str().ok());
    match invocation_id {
        Some(id) => tracing::info_span!(
            "request",
            method = %request.method(),
            path = %request.uri().path(),
            invocation_id = %id,
        ),
        None => tracing::info_span!(
            "request",
            method = %request.method(),
            path = %request.uri().path(),
        ),
    }
}
