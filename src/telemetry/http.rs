//! The span and the metrics of each HTTP request: API operations, and the trigger invocations
//! the Functions host sends. [`observe`] is the outermost layer; [`note_route`] runs after
//! routing and tells it which route (and tenant) the request took.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderMap, Method};
use axum::middleware::Next;
use axum::response::Response;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt;
use opentelemetry_http::HeaderExtractor;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing::field::{Empty, display};
use tracing::{Instrument, Span};
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::{metrics, sampling};
use crate::domain::TenantId;
use crate::problem::ProblemCode;
use crate::store::charge::RequestCharge;

/// The header the Functions host puts on every request it sends to the custom handler.
pub const INVOCATION_ID_HEADER: &str = "x-azure-functions-invocationid";

/// Which Functions function a request is, from its method and its route's template: what
/// whoever mounts the routes knows, handed to [`note_route`] as its state.
pub type FunctionOf = fn(&str, &str) -> Option<&'static str>;

/// A [`FunctionOf`] for routes that are no function of their own to telemetry (the pages).
pub fn no_function(_method: &str, _template: &str) -> Option<&'static str> {
    None
}

/// The route a request took, as the router's template (`/api/posts/{postId}/comments`, or
/// under a tenant `/api/tenants/{tenantId}/posts/{postId}/comments`), and its function.
#[derive(Debug, Clone)]
pub(crate) struct MatchedRoute {
    template: Arc<str>,
    function: Option<&'static str>,
}

impl MatchedRoute {
    /// The template clients call: `http.route`.
    pub fn template(&self) -> Arc<str> {
        Arc::clone(&self.template)
    }

    /// The function of the Functions table this route and its method are.
    pub fn function(&self) -> Option<&'static str> {
        self.function
    }
}

/// Route layer: notes the route the request matched and its function (`function_of` names
/// it) in the response, for [`observe`], and the tenant it addresses (set by the tenant
/// routes) on the request's span.
pub async fn note_route(
    State(function_of): State<FunctionOf>,
    request: Request,
    next: Next,
) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|path| MatchedRoute {
            template: Arc::from(path.as_str()),
            function: function_of(request.method().as_str(), path.as_str()),
        });
    if let Some(tenant) = request.extensions().get::<TenantId>() {
        Span::current().record("blog.tenant", tenant.as_str());
    }
    let mut response = next.run(request).await;
    if let Some(route) = route {
        response.extensions_mut().insert(route);
    }
    response
}

/// The outermost layer: runs the request in its span (a child of the caller's W3C
/// `traceparent`, when it sends one), then records its outcome and metrics.
pub async fn observe(request: Request, next: Next) -> Response {
    let traced = sampling::traces_request(request.headers());
    // Without an exporter a request's span is only the context of its log lines: its outcome,
    // known after the last of them, has no reader.
    let exported = traced && sampling::exports_traces();
    let span = request_span(&request, traced, exported);
    let method = request.method().clone();
    let started = Instant::now();
    let response = next.run(request).instrument(span.clone()).await;
    finish(&span, exported, &method, &response, started);
    response
}

/// The span of one request. The host's invocation id is a field of it, so each line logged
/// while handling an invocation carries the id the host logs it under; when its trace is
/// exported, its trace and span ids too. `traced`: its trace is kept (its store calls get spans
/// of their own); `exported`: kept and sent somewhere.
fn request_span<B>(request: &axum::http::Request<B>, traced: bool, exported: bool) -> Span {
    macro_rules! request_span {
        ($target:expr) => {
            tracing::info_span!(
                target: $target,
                "request",
                otel.kind = "server",
                otel.status_code = Empty,
                http.request.method = %request.method(),
                url.path = %request.uri().path(),
                faas.invocation_id = Empty,
                http.route = Empty,
                http.response.status_code = Empty,
                error.type = Empty,
                blog.operation = Empty,
                blog.tenant = Empty,
                blog.problem.code = Empty,
                blog.request_charge = Empty,
                trace_id = Empty,
                span_id = Empty,
            )
        };
    }
    let span = if traced {
        request_span!("cosmos_blog::telemetry::http")
    } else {
        request_span!(sampling::UNSAMPLED_TARGET)
    };
    if let Some(id) = header(request.headers(), INVOCATION_ID_HEADER) {
        span.record("faas.invocation_id", display(id));
    }
    if !exported {
        return span;
    }
    if let Some(parent) = caller_context(request.headers()) {
        let _ = span.set_parent(parent);
    }
    record_ids(&span);
    span
}

/// Records the span's OpenTelemetry trace and span ids as fields, for the log lines inside
/// it; nothing when export is off (the span has no OpenTelemetry context).
pub(crate) fn record_ids(span: &Span) {
    let context = span.context();
    let span_context = context.span().span_context().clone();
    if span_context.is_valid() {
        span.record("trace_id", display(span_context.trace_id()));
        span.record("span_id", display(span_context.span_id()));
    }
}

/// The caller's trace context, from its W3C `traceparent` (and `tracestate`).
fn caller_context(headers: &HeaderMap) -> Option<opentelemetry::Context> {
    headers
        .contains_key("traceparent")
        .then(|| TraceContextPropagator::new().extract(&HeaderExtractor(headers)))
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

fn finish(span: &Span, exported: bool, method: &Method, response: &Response, started: Instant) {
    let status = response.status().as_u16();
    let route = response.extensions().get::<MatchedRoute>();
    let template = route.map(MatchedRoute::template);
    let operation = route.and_then(MatchedRoute::function);
    let request_units = response
        .extensions()
        .get::<RequestCharge>()
        .map_or(0.0, |charge| charge.0);
    metrics::record_request(&metrics::Request {
        method,
        route: template.as_ref(),
        operation,
        status,
        duration: started.elapsed(),
        request_units,
    });
    // The outcome is for the exported trace: nothing is left to log under the span, and
    // recording each field would format it for the logs all the same.
    if !exported || span.is_disabled() {
        return;
    }
    span.record("http.response.status_code", status);
    if let Some(template) = &template {
        span.record("http.route", &**template);
    }
    // The semantic conventions' name, known only now: `POST /api/posts/{postId}/comments`.
    let name = match &template {
        Some(template) => format!("{method} {template}"),
        None => method.to_string(),
    };
    span.context().span().update_name(name);
    if let Some(operation) = operation {
        span.record("blog.operation", operation);
    }
    if let Some(ProblemCode(code)) = response.extensions().get::<ProblemCode>() {
        span.record("blog.problem.code", *code);
    }
    if request_units > 0.0 {
        span.record("blog.request_charge", request_units);
    }
    if status >= 500 {
        span.record("error.type", status.to_string());
        span.record("otel.status_code", "error");
    }
}
