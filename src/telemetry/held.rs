//! Things the telemetry code finds through the current `tracing` dispatcher (the metrics'
//! instruments, the trace sampler): the subscriber holds each in a [`Held`] layer, so code
//! reaches them where it runs, the way it logs, and an application with telemetry of its own
//! (a test's) reaches its own.

use std::sync::Arc;

use tracing::Subscriber;
use tracing_subscriber::Layer;

/// A subscriber layer that only holds a `T` to be found by downcast: it sees no span and no
/// event (give it `LevelFilter::OFF`, or every callsite of the process is asked about it).
pub(crate) struct Held<T>(pub(crate) Arc<T>);

impl<S: Subscriber, T: Send + Sync + 'static> Layer<S> for Held<T> {}

/// The `T` the current dispatcher's subscriber holds, if it holds one.
pub(crate) fn held<T: Send + Sync + 'static>() -> Option<Arc<T>> {
    tracing::dispatcher::get_default(|dispatch| {
        dispatch
            .downcast_ref::<Held<T>>()
            .map(|held| Arc::clone(&held.0))
    })
}
