//! Azure Functions packaging and invocation: the function metadata generated
//! from one table, the adapter that receives the change-feed trigger and timer invocations,
//! and the staging of a deployable script root.

mod invoke;
pub mod metadata;
pub mod stage;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::routing::post;

use invoke::Timer;
pub use invoke::{DecodeError, InvocationResult, decode_documents, parse_invocation};

use crate::changefeed::publisher::{self, Publisher};
use crate::changefeed::recheck::{self, Recheck};
use crate::copies::Source;
use crate::http::AppState;

/// Trigger invocations carry whole batches of documents (up to
/// [`metadata::MAX_ITEMS_PER_INVOCATION`] items of up to 2 MB, escaped twice), far above the
/// API's body limit; the host is the only caller of these routes.
pub const MAX_INVOCATION_BYTES: usize = 256 * 1024 * 1024;

/// `POST /OnUserChanged` and `POST /OnPostChanged` (the change-feed triggers), and `POST
/// /Recheck` (the timer of the delayed re-check, which does the work when `recheck` says so)
/// and `POST /PublishScheduled` (the publisher's timer, likewise with `publisher`),
/// for [`crate::api::app`]'s `extra`.
pub fn router(recheck: Recheck, publisher: Publisher) -> Router<AppState> {
    Source::ALL
        .into_iter()
        .fold(Router::new(), |router, source| {
            router.route(
                &format!("/{}", source.function_name()),
                post(move |state, body| invoke::invoke(source, state, body)),
            )
        })
        .route(
            &format!("/{}", recheck::FUNCTION_NAME),
            post(move |state, body| invoke::invoke_timer(Timer::Recheck(recheck), state, body)),
        )
        .route(
            &format!("/{}", publisher::FUNCTION_NAME),
            post(move |state, body| invoke::invoke_timer(Timer::Publisher(publisher), state, body)),
        )
        .route_layer(middleware::from_fn_with_state(
            crate::operations::trigger_for as crate::telemetry::http::FunctionOf,
            crate::telemetry::http::note_route,
        ))
        .layer(DefaultBodyLimit::max(MAX_INVOCATION_BYTES))
}
