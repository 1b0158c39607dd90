//! What the settings read from the process environment beyond the flags' own variables
//! (which clap reads): the variables the hosting platform sets for itself, and
//! OpenTelemetry's standard ones. Nothing else in the crate looks at the environment (`main`
//! aside): the modules below are handed what is read here, so their tests give a table of
//! variables, or the values themselves, instead of changing the process's environment.

use tracing_subscriber::fmt::writer::BoxMakeWriter;

use crate::platform::Platform;
use crate::telemetry::Config;
use crate::telemetry::export::{Export, OtlpProtocols, Schedule};
use crate::telemetry::sampling::Sampling;

/// The log filter when `RUST_LOG` sets none.
pub(crate) const DEFAULT_LOG_FILTER: &str = "info";

/// The variable `name`, when set (to UTF-8 text).
fn var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// What the hosting platform says of this process (see [`Platform`]).
pub fn platform() -> Platform {
    Platform::from_vars(var)
}

/// Telemetry as the standard variables say (export, sampling), logs as `RUST_LOG` says, on
/// stderr, with warnings about settings that cannot be honoured. `export`: whether this run
/// exports at all (only `serve` does).
pub fn telemetry(export: bool) -> (Config, Vec<String>) {
    telemetry_from_vars(export, var)
}

/// [`telemetry`] from `var`, which looks a variable up by name.
fn telemetry_from_vars(
    export: bool,
    var: impl Fn(&str) -> Option<String>,
) -> (Config, Vec<String>) {
    let (chosen, mut notes) = if export {
        match Export::from_vars(&var) {
            Ok(chosen) => chosen,
            Err(e) => (Export::Off, vec![format!("telemetry export off: {e:#}")]),
        }
    } else {
        (Export::Off, Vec::new())
    };
    let (sampling, warning) = Sampling::from_vars(&var);
    notes.extend(warning.filter(|_| export));
    let config = Config {
        export: chosen,
        otlp_protocols: OtlpProtocols::from_vars(&var),
        schedule: Schedule::default(),
        sampling,
        log_filter: var("RUST_LOG").unwrap_or_else(|| DEFAULT_LOG_FILTER.into()),
        log_writer: BoxMakeWriter::new(std::io::stderr),
    };
    (config, notes)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use opentelemetry_otlp::Protocol;

    use super::*;

    fn telemetry_of(export: bool, vars: &[(&str, &str)]) -> (Config, Vec<String>) {
        let vars: HashMap<&str, &str> = vars.iter().copied().collect();
        telemetry_from_vars(export, |name| vars.get(name).map(|v| (*v).to_owned()))
    }

    #[test]
    fn without_variables_nothing_is_exported_and_logs_are_at_info() {
        let (config, notes) = telemetry_of(true, &[]);
        assert_eq!(config.export.describe(), "off");
        assert_eq!(config.log_filter, DEFAULT_LOG_FILTER);
        assert_eq!(config.otlp_protocols, OtlpProtocols::default());
        assert!(notes.is_empty(), "{notes:?}");
    }

    #[test]
    fn the_standard_variables_choose_the_export_its_protocols_and_the_log_filter() {
        let vars = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "grpc"),
            ("RUST_LOG", "debug"),
        ];
        let (config, notes) = telemetry_of(true, &vars);
        assert_eq!(config.export.describe(), "otlp/http");
        assert_eq!(config.log_filter, "debug");
        // Traces: the exporter reads `http/json` itself; metrics: gRPC is refused, and the
        // specification's default imposed.
        assert_eq!(
            config.otlp_protocols,
            OtlpProtocols {
                traces: None,
                metrics: Some(Protocol::HttpBinary),
            }
        );
        assert!(
            notes
                .iter()
                .any(|n| n.contains("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=grpc")),
            "{notes:?}"
        );
    }

    #[test]
    fn a_command_that_does_not_serve_exports_nothing_and_warns_of_nothing() {
        let vars = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("OTEL_TRACES_SAMPLER", "microsoft.rate_limited"),
            ("OTEL_TRACES_SAMPLER_ARG", "many"),
        ];
        let (serving, notes) = telemetry_of(true, &vars);
        assert_eq!(serving.export.describe(), "otlp/http");
        assert_eq!(notes.len(), 1, "the rate is not a number: {notes:?}");
        let (config, notes) = telemetry_of(false, &vars);
        assert_eq!(config.export.describe(), "off");
        assert!(notes.is_empty(), "{notes:?}");
    }
}
