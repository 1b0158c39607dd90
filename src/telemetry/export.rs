//! Where traces and metrics go, chosen by the standard settings in this order:
//!
//! 1. `OTEL_EXPORTER_OTLP_ENDPOINT` (or a signal's own `..._TRACES_ENDPOINT` /
//!    `..._METRICS_ENDPOINT`): OTLP over HTTP. The exporter itself reads the other
//!    `OTEL_EXPORTER_OTLP_*` variables (protocol `http/protobuf` or `http/json`, headers,
//!    timeout, compression).
//! 2. `APPLICATIONINSIGHTS_CONNECTION_STRING`: Application Insights, straight to the
//!    ingestion endpoint the string names, with the instrumentation key; or, when
//!    `APPLICATIONINSIGHTS_AUTHENTICATION_STRING` is `Authorization=AAD[;ClientId=<id>]`, with
//!    a Microsoft Entra token of the app's managed identity (for resources that refuse local
//!    authentication).
//! 3. Nothing: no export, the logs as always.
//!
//! `OTEL_SDK_DISABLED=true` turns export off. `OTEL_SERVICE_NAME` and
//! `OTEL_RESOURCE_ATTRIBUTES` name the service (default `cosmos-blog`), `OTEL_BSP_*` set the
//! span batching, `OTEL_METRIC_EXPORT_INTERVAL` the metric export interval: the SDK reads
//! them.
//!
//! Exporting never holds up a request: spans wait in a bounded queue (`OTEL_BSP_MAX_QUEUE_SIZE`,
//! 2048; beyond it they are dropped) and are sent in batches by the SDK's own thread; metrics
//! are aggregated in memory and sent periodically. An unreachable collector costs one warning
//! (see [`ExportClient`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use async_trait::async_trait;
use axum::http::{Uri, header};
use azure_core::credentials::TokenCredential;
use opentelemetry::KeyValue;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, SpanExporter,
};

use crate::connection_string;
use crate::platform::Platform;

/// The service name when neither `OTEL_SERVICE_NAME` nor `OTEL_RESOURCE_ATTRIBUTES` gives one
/// (Application Insights shows it as the cloud role).
pub(crate) const SERVICE_NAME: &str = "cosmos-blog";

/// The token audience of Azure Monitor ingestion.
const MONITOR_SCOPE: &str = "https://monitor.azure.com//.default";

/// One export attempt (and its retries) gives up after this, whatever the collector does.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where traces and metrics go.
#[derive(Clone)]
pub enum Export {
    /// Nowhere: logs only.
    Off,
    /// OTLP over HTTP. `endpoint`: the collector's base URL (`/v1/traces` and `/v1/metrics`
    /// are appended), or `None` to let the exporter read `OTEL_EXPORTER_OTLP_*`.
    Otlp { endpoint: Option<String> },
    /// Application Insights, at the ingestion endpoint `connection_string` names;
    /// `credential`: Microsoft Entra authentication instead of the instrumentation key alone.
    ApplicationInsights {
        connection_string: String,
        credential: Option<Arc<dyn TokenCredential>>,
    },
}

impl std::fmt::Debug for Export {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the connection string: it holds the instrumentation key.
        f.write_str(self.describe())
    }
}

impl Export {
    /// The export the standard variables choose (`var` looks one up by name), with warnings
    /// about settings that cannot be honoured.
    pub fn from_vars(
        var: impl Fn(&str) -> Option<String>,
    ) -> anyhow::Result<(Export, Vec<String>)> {
        let set = |name: &str| var(name).filter(|value| !value.trim().is_empty());
        let mut warnings = Vec::new();
        if set("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
            return Ok((Export::Off, warnings));
        }
        let otlp = [
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
        ];
        if otlp.iter().any(|name| set(name).is_some()) {
            for name in [
                "OTEL_EXPORTER_OTLP_PROTOCOL",
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
                "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
            ] {
                if set(name).is_some_and(|p| p.trim().eq_ignore_ascii_case("grpc")) {
                    warnings.push(format!(
                        "{name}=grpc is not supported; exporting OTLP over http/protobuf \
                         (point the endpoint at the collector's OTLP/HTTP port, 4318)"
                    ));
                }
            }
            return Ok((Export::Otlp { endpoint: None }, warnings));
        }
        let Some(connection_string) = set("APPLICATIONINSIGHTS_CONNECTION_STRING") else {
            return Ok((Export::Off, warnings));
        };
        let credential = match set("APPLICATIONINSIGHTS_AUTHENTICATION_STRING") {
            None => None,
            Some(authentication) => {
                let managed_identity = Platform::from_vars(&var).managed_identity;
                Some(entra_credential(&authentication, managed_identity)?)
            }
        };
        Ok((
            Export::ApplicationInsights {
                connection_string,
                credential,
            },
            warnings,
        ))
    }

    /// Where telemetry goes, for the start-up log line.
    pub fn describe(&self) -> &'static str {
        match self {
            Export::Off => "off",
            Export::Otlp { .. } => "otlp/http",
            Export::ApplicationInsights {
                credential: None, ..
            } => "application-insights",
            Export::ApplicationInsights { .. } => "application-insights (entra id)",
        }
    }
}

/// The managed identity `APPLICATIONINSIGHTS_AUTHENTICATION_STRING` asks for:
/// `Authorization=AAD` (the system-assigned identity) or `Authorization=AAD;ClientId=<id>`
/// (a user-assigned one).
fn entra_credential(
    authentication: &str,
    managed_identity: bool,
) -> anyhow::Result<Arc<dyn TokenCredential>> {
    let mut fields =
        connection_string::fields(authentication, "APPLICATIONINSIGHTS_AUTHENTICATION_STRING")?;
    let client_id = fields.remove("clientid");
    anyhow::ensure!(
        fields
            .get("authorization")
            .is_some_and(|a| a.eq_ignore_ascii_case("aad")),
        "APPLICATIONINSIGHTS_AUTHENTICATION_STRING: only Authorization=AAD is supported"
    );
    crate::platform::azure_credential(managed_identity, client_id)
}

/// The SDK's tracer and meter providers of one export: flushed and shut down together.
#[derive(Clone)]
pub(super) struct Providers {
    pub tracer: SdkTracerProvider,
    pub meter: SdkMeterProvider,
}

/// The protocol imposed on each signal's OTLP exporter: `None` where the variables name an
/// HTTP one (the exporter reads them itself), else the specification's default,
/// `http/protobuf` (the exporter would pick JSON, because it is built with both).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OtlpProtocols {
    pub traces: Option<Protocol>,
    pub metrics: Option<Protocol>,
}

impl Default for OtlpProtocols {
    fn default() -> Self {
        Self {
            traces: Some(Protocol::HttpBinary),
            metrics: Some(Protocol::HttpBinary),
        }
    }
}

impl OtlpProtocols {
    /// The protocols the standard variables leave to impose (`var` looks one up by name): a
    /// signal's own `OTEL_EXPORTER_OTLP_{TRACES,METRICS}_PROTOCOL`, else the shared one.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Self {
        let imposed = |signal_variable: &str| {
            let named = [signal_variable, "OTEL_EXPORTER_OTLP_PROTOCOL"]
                .into_iter()
                .find_map(|name| var(name).filter(|v| !v.trim().is_empty()));
            match named {
                Some(protocol) if protocol.trim().to_ascii_lowercase().starts_with("http/") => None,
                _ => Some(Protocol::HttpBinary),
            }
        };
        Self {
            traces: imposed("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"),
            metrics: imposed("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"),
        }
    }
}

/// How often spans and metrics go out; `None`: the SDK's defaults and variables.
#[derive(Debug, Clone, Copy, Default)]
pub struct Schedule {
    /// At most this long after a span ends (`OTEL_BSP_SCHEDULE_DELAY`, 5 s).
    pub span_batch_delay: Option<Duration>,
    /// This often (`OTEL_METRIC_EXPORT_INTERVAL`, 60 s).
    pub metric_interval: Option<Duration>,
}

/// The providers of `export`, sending from the current Tokio runtime; `None` when off.
pub(super) fn providers(
    export: &Export,
    protocols: OtlpProtocols,
    schedule: Schedule,
) -> anyhow::Result<Option<Providers>> {
    if let Export::Off = export {
        return Ok(None);
    }
    let runtime = tokio::runtime::Handle::try_current()
        .context("telemetry export needs the Tokio runtime")?;
    match export {
        Export::Off => Ok(None),
        Export::Otlp { endpoint } => {
            let client = ExportClient::new(runtime, "OTLP collector", None, None)?;
            let signal = |path: &str| {
                endpoint
                    .as_ref()
                    .map(|base| format!("{}/{path}", base.trim_end_matches('/')))
            };
            let mut spans = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_http_client(client.clone());
            if let Some(protocol) = protocols.traces {
                spans = spans.with_protocol(protocol);
            }
            if let Some(url) = signal("v1/traces") {
                spans = spans.with_endpoint(url);
            }
            let mut metrics = opentelemetry_otlp::MetricExporter::builder()
                .with_http()
                .with_http_client(client);
            if let Some(protocol) = protocols.metrics {
                metrics = metrics.with_protocol(protocol);
            }
            if let Some(url) = signal("v1/metrics") {
                metrics = metrics.with_endpoint(url);
            }
            Ok(Some(build(
                spans.build().context("OTLP span exporter")?,
                metrics.build().context("OTLP metric exporter")?,
                schedule,
            )))
        }
        Export::ApplicationInsights {
            connection_string,
            credential,
        } => {
            let client = ExportClient::new(
                runtime,
                "Application Insights",
                credential.clone(),
                local_plain_endpoint(connection_string),
            )?;
            let exporter =
                opentelemetry_application_insights::Exporter::new_from_connection_string(
                    connection_string,
                    client,
                )
                .map_err(|e| anyhow::anyhow!("APPLICATIONINSIGHTS_CONNECTION_STRING: {e}"))?;
            Ok(Some(build(exporter.clone(), exporter, schedule)))
        }
    }
}

fn build(
    spans: impl SpanExporter + 'static,
    metrics: impl PushMetricExporter,
    schedule: Schedule,
) -> Providers {
    let resource = resource();
    let mut batching = BatchConfigBuilder::default();
    if let Some(delay) = schedule.span_batch_delay {
        batching = batching.with_scheduled_delay(delay);
    }
    let processor = BatchSpanProcessor::builder(spans)
        .with_batch_config(batching.build())
        .build();
    let tracer = SdkTracerProvider::builder()
        .with_resource(resource.clone())
        .with_span_processor(processor)
        .build();
    let mut reader = PeriodicReader::builder(metrics);
    if let Some(interval) = schedule.metric_interval {
        reader = reader.with_interval(interval);
    }
    let meter = SdkMeterProvider::builder()
        .with_resource(resource)
        .with_reader(reader.build())
        .build();
    Providers { tracer, meter }
}

/// The service: `OTEL_SERVICE_NAME` / `OTEL_RESOURCE_ATTRIBUTES` as the SDK reads them, else
/// [`SERVICE_NAME`]; and the version.
fn resource() -> Resource {
    let from_environment = Resource::builder().build();
    let named = from_environment
        .get(&opentelemetry::Key::from_static_str("service.name"))
        .is_some_and(|name| !name.as_str().starts_with("unknown_service"));
    let mut builder = Resource::builder()
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
    if !named {
        builder = builder.with_service_name(SERVICE_NAME);
    }
    builder.build()
}

/// The authority of the connection string's `IngestionEndpoint` when it is plain HTTP on
/// this machine (a local proxy, such as Azure Monitor's Entra authentication proxy, or a
/// test's receiver). The exporter turns every endpoint into HTTPS; this one is sent as
/// written. A remote endpoint always gets HTTPS: the instrumentation key goes with it.
fn local_plain_endpoint(connection_string: &str) -> Option<String> {
    let endpoint = connection_string::fields(connection_string, "connection string")
        .ok()?
        .remove("ingestionendpoint")?;
    let uri: Uri = endpoint.parse().ok()?;
    let local = matches!(uri.host(), Some("localhost" | "[::1]"))
        || uri.host().is_some_and(|h| h.starts_with("127."));
    (uri.scheme_str() == Some("http") && local)
        .then(|| uri.authority().map(|a| a.to_string()))
        .flatten()
}

/// The HTTP client of both exporters: the tree's reqwest, run on the application's Tokio
/// runtime (the SDK exports from threads of its own, where an async client would find no
/// runtime), with a Microsoft Entra token when one is configured. A failing destination is
/// reported once, as a warning, and its recovery once, as information, however many
/// exports fail in between: telemetry must not flood the logs it sits beside.
#[derive(Clone)]
struct ExportClient {
    runtime: tokio::runtime::Handle,
    client: reqwest::Client,
    credential: Option<Arc<dyn TokenCredential>>,
    destination: &'static str,
    failing: Arc<AtomicBool>,
    /// The authority sent plain HTTP (see [`local_plain_endpoint`]).
    plain_http: Option<String>,
}

impl std::fmt::Debug for ExportClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExportClient")
            .field("destination", &self.destination)
            .finish_non_exhaustive()
    }
}

impl ExportClient {
    fn new(
        runtime: tokio::runtime::Handle,
        destination: &'static str,
        credential: Option<Arc<dyn TokenCredential>>,
        plain_http: Option<String>,
    ) -> anyhow::Result<Self> {
        let client = reqwest::Client::builder()
            .timeout(EXPORT_TIMEOUT)
            .build()
            .context("telemetry HTTP client")?;
        Ok(Self {
            runtime,
            client,
            credential,
            destination,
            failing: Arc::default(),
            plain_http,
        })
    }

    async fn send(&self, mut request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        if let Some(authority) = &self.plain_http
            && request.uri().authority().map(|a| a.as_str()) == Some(authority.as_str())
        {
            let https = request.uri().to_string();
            if let Some(rest) = https.strip_prefix("https://") {
                *request.uri_mut() = format!("http://{rest}").parse()?;
            }
        }
        if let Some(credential) = &self.credential {
            let token = credential.get_token(&[MONITOR_SCOPE], None).await?;
            let bearer = format!("Bearer {}", token.token.secret());
            request
                .headers_mut()
                .insert(header::AUTHORIZATION, bearer.try_into()?);
            // Entra-authenticated telemetry goes to the ingestion API's v2.1.
            *request.uri_mut() = entra_track_uri(request.uri())?;
        }
        self.client.send_bytes(request).await
    }

    /// Notes the outcome of one export: a warning when the destination starts failing,
    /// information when it works again.
    fn note(&self, outcome: &Result<Response<Bytes>, HttpError>) {
        let failure = match outcome {
            Ok(response) if response.status().is_success() => None,
            Ok(response) => Some(format!("answered {}", response.status())),
            Err(error) => Some(error.to_string()),
        };
        match failure {
            Some(why) => {
                if !self.failing.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        destination = self.destination,
                        error = %why,
                        "telemetry export failing; spans beyond the queue are dropped, requests are not affected"
                    );
                }
            }
            None => {
                if self.failing.swap(false, Ordering::Relaxed) {
                    tracing::info!(
                        destination = self.destination,
                        "telemetry export works again"
                    );
                }
            }
        }
    }
}

#[async_trait]
impl HttpClient for ExportClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let this = self.clone();
        let outcome = match self
            .runtime
            .spawn(async move { this.send(request).await })
            .await
        {
            Ok(outcome) => outcome,
            Err(stopped) => Err(Box::new(stopped) as HttpError),
        };
        self.note(&outcome);
        outcome
    }
}

/// `.../v2/track` as `.../v2.1/track`, the ingestion path that takes Entra tokens.
fn entra_track_uri(uri: &Uri) -> Result<Uri, HttpError> {
    let text = uri.to_string();
    match text.strip_suffix("/v2/track") {
        Some(base) => Ok(format!("{base}/v2.1/track").parse()?),
        None => Ok(uri.clone()),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn export(vars: &[(&str, &str)]) -> (Export, Vec<String>) {
        let vars: HashMap<&str, &str> = vars.iter().copied().collect();
        Export::from_vars(|name| vars.get(name).map(|v| v.to_string())).expect("valid settings")
    }

    #[test]
    fn otlp_comes_first_then_application_insights_then_nothing() {
        let connection = (
            "APPLICATIONINSIGHTS_CONNECTION_STRING",
            "InstrumentationKey=k",
        );
        let otlp = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318");
        assert!(matches!(
            export(&[otlp, connection]).0,
            Export::Otlp { endpoint: None }
        ));
        assert!(matches!(
            export(&[connection]).0,
            Export::ApplicationInsights {
                credential: None,
                ..
            }
        ));
        assert!(matches!(export(&[]).0, Export::Off));
        assert!(matches!(
            export(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")]).0,
            Export::Off
        ));
        assert!(matches!(
            export(&[otlp, ("OTEL_SDK_DISABLED", "true")]).0,
            Export::Off
        ));
    }

    #[test]
    fn grpc_is_refused_with_a_warning_and_http_used() {
        let (chosen, warnings) = export(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ]);
        assert!(matches!(chosen, Export::Otlp { .. }));
        assert_eq!(warnings.len(), 1, "{warnings:?}");
    }

    #[test]
    fn only_aad_authentication_is_accepted() {
        let vars = HashMap::from([
            (
                "APPLICATIONINSIGHTS_CONNECTION_STRING",
                "InstrumentationKey=k",
            ),
            (
                "APPLICATIONINSIGHTS_AUTHENTICATION_STRING",
                "Authorization=ikey",
            ),
        ]);
        let refused = Export::from_vars(|name| vars.get(name).map(|v| v.to_string()));
        assert!(refused.is_err());
        assert!(entra_credential("ClientId=abc", false).is_err());
    }

    #[test]
    fn only_a_local_ingestion_endpoint_may_be_plain_http() {
        let plain = |endpoint: &str| {
            local_plain_endpoint(&format!(
                "InstrumentationKey=k;IngestionEndpoint={endpoint}"
            ))
        };
        assert_eq!(
            plain("http://127.0.0.1:8081/"),
            Some("127.0.0.1:8081".into())
        );
        assert_eq!(
            plain("http://localhost:8081"),
            Some("localhost:8081".into())
        );
        assert_eq!(
            plain("http://westeurope-5.in.applicationinsights.azure.com/"),
            None
        );
        assert_eq!(plain("https://127.0.0.1:8081/"), None);
    }

    #[test]
    fn entra_tokens_go_to_the_v2_1_track_path() {
        let uri: Uri = "https://westeurope-5.in.applicationinsights.azure.com/v2/track"
            .parse()
            .unwrap();
        assert_eq!(
            entra_track_uri(&uri).unwrap().to_string(),
            "https://westeurope-5.in.applicationinsights.azure.com/v2.1/track"
        );
    }
}
