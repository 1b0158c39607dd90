//! Several [`Telemetry`](super::Telemetry) dispatchers in one process, each scoped to its own
//! application (`Application::with_telemetry`: the tests, the harness).
//!
//! `tracing` caches, per callsite, whether any dispatcher is interested in it. While a single
//! dispatcher is registered, a callsite hit for the first time takes its interest from the
//! dispatcher of the *hitting thread*: a thread outside every scope (a test or a harness
//! client without telemetry) that reaches the request span's callsite first caches "never"
//! for every dispatcher, and the scoped application records no span at all. The binary is
//! not concerned: it installs one global dispatcher, which every thread sees.
//!
//! [`let_each_scope_decide`] registers, once per process, a subscriber that records nothing
//! and answers "sometimes" for every callsite: the cached interest is then never "never", and
//! each span or event asks the dispatcher of its own task.

use std::sync::LazyLock;

use tracing::level_filters::LevelFilter;
use tracing::span;
use tracing::subscriber::Interest;
use tracing::{Dispatch, Event, Metadata, Subscriber};

/// Registers [`Undecided`] beside the scoped dispatchers (once; later calls do nothing).
pub(super) fn let_each_scope_decide() {
    static BESIDE_THE_SCOPES: LazyLock<Dispatch> = LazyLock::new(|| Dispatch::new(Undecided));
    LazyLock::force(&BESIDE_THE_SCOPES);
}

/// Records nothing, and leaves every decision to the dispatcher in scope.
struct Undecided;

impl Subscriber for Undecided {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        Interest::sometimes()
    }
    /// Raises no level: the scoped dispatchers' hints decide what the macros skip.
    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(LevelFilter::OFF)
    }
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        false
    }
    fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
        span::Id::from_u64(1)
    }
    fn record(&self, _: &span::Id, _: &span::Record<'_>) {}
    fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &span::Id) {}
    fn exit(&self, _: &span::Id) {}
}
