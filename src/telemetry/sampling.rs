//! Which requests are traced, decided before their spans are made.
//!
//! Making a span for OpenTelemetry costs on every request (its attributes gathered, the span
//! built, queued, encoded and sent), more than a cheap request itself: a sampler of the SDK
//! drops a span only once it is made. So the decision comes first: a request whose trace is
//! not kept gets a span that only the logs see (its invocation id on each line), and its store
//! calls none; its metrics are recorded all the same.
//!
//! - A caller's W3C `traceparent` decides for its request (the Functions host's invocations).
//! - Otherwise at most a few new traces a second are kept: by default 5, Azure Monitor's own
//!   default (its exporters moved to a rate-limited sampler of 5 traces per second in 2026).
//!   `OTEL_TRACES_SAMPLER=microsoft.rate_limited` with `OTEL_TRACES_SAMPLER_ARG=<traces per
//!   second>` sets the rate, as with Azure Monitor's distributions.
//! - Any other `OTEL_TRACES_SAMPLER` (`always_on`, `parentbased_traceidratio`, ...) makes a span
//!   for every request and leaves the choice to the SDK's sampler, which reads the variable.

use std::sync::Mutex;
use std::time::Instant;

use axum::http::HeaderMap;

use super::held::held;

/// The target of the spans of requests and batches whose trace is not kept: the trace filter
/// leaves it out, the log filter does not.
pub(crate) const UNSAMPLED_TARGET: &str = "cosmos_blog::telemetry::unsampled";

/// Azure Monitor's default: new traces kept per second.
pub(crate) const DEFAULT_TRACES_PER_SECOND: f64 = 5.0;

/// The `OTEL_TRACES_SAMPLER` value of Azure Monitor's rate-limited sampler.
const RATE_LIMITED: &str = "microsoft.rate_limited";

/// How traces are chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sampling {
    /// At most this many new traces a second; a caller's decision is followed.
    PerSecond(f64),
    /// A span for every request; the SDK's sampler (`OTEL_TRACES_SAMPLER`) chooses.
    EveryRequest,
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling::PerSecond(DEFAULT_TRACES_PER_SECOND)
    }
}

impl Sampling {
    /// The sampling the standard variables choose (`var` looks one up by name), with a
    /// warning for a rate that is not a number.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> (Sampling, Option<String>) {
        let sampler = var("OTEL_TRACES_SAMPLER").map(|value| value.trim().to_owned());
        match sampler.as_deref() {
            None | Some("") => (Sampling::default(), None),
            Some(RATE_LIMITED) => {
                let argument = var("OTEL_TRACES_SAMPLER_ARG").unwrap_or_default();
                match argument.trim().parse::<f64>() {
                    Ok(rate) if rate >= 0.0 && rate.is_finite() => {
                        (Sampling::PerSecond(rate), None)
                    }
                    _ => (
                        Sampling::default(),
                        Some(format!(
                            "OTEL_TRACES_SAMPLER_ARG={argument:?} is not a number of traces per \
                             second; keeping {DEFAULT_TRACES_PER_SECOND}"
                        )),
                    ),
                }
            }
            Some(_) => (Sampling::EveryRequest, None),
        }
    }
}

/// The decisions of one exporting subscriber.
pub(crate) struct Sampler {
    sampling: Sampling,
    budget: Mutex<Budget>,
}

/// A token bucket: a second's worth of traces at most, refilled as time passes. A few lines
/// of its own: the rate-limiting crates bring clocks and keyed stores this has no use for.
struct Budget {
    tokens: f64,
    refilled: Instant,
}

impl Sampler {
    pub(crate) fn new(sampling: Sampling) -> Self {
        let capacity = match sampling {
            Sampling::PerSecond(rate) => rate.max(1.0),
            Sampling::EveryRequest => 0.0,
        };
        Self {
            sampling,
            budget: Mutex::new(Budget {
                tokens: capacity,
                refilled: Instant::now(),
            }),
        }
    }

    /// Whether a new trace (one no caller started) is kept.
    fn keeps_new_trace(&self) -> bool {
        let Sampling::PerSecond(rate) = self.sampling else {
            return true;
        };
        let mut budget = self
            .budget
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let now = Instant::now();
        let earned = now.duration_since(budget.refilled).as_secs_f64() * rate;
        budget.tokens = (budget.tokens + earned).min(rate.max(1.0));
        budget.refilled = now;
        if budget.tokens >= 1.0 {
            budget.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Whether the current subscriber traces a request with `headers`: always when it exports
/// nothing (the span is for the logs), else as the caller's `traceparent` or the budget says.
pub(crate) fn traces_request(headers: &HeaderMap) -> bool {
    with_sampler(|sampler| match caller_sampled(headers) {
        Some(sampled) if sampler.sampling != Sampling::EveryRequest => sampled,
        _ => sampler.keeps_new_trace(),
    })
}

/// Whether the current subscriber traces a unit of work no caller started (a change-feed
/// batch of the standalone pump).
pub(crate) fn traces_new_work() -> bool {
    with_sampler(Sampler::keeps_new_trace)
}

/// Whether the current subscriber exports traces at all. Without export a request's span is
/// only the context of its log lines, so its outcome, known after them, is not recorded.
pub(crate) fn exports_traces() -> bool {
    held::<Sampler>().is_some()
}

/// `decide` with the current dispatcher's sampler; `true` where it has none (no export).
fn with_sampler(decide: impl FnOnce(&Sampler) -> bool) -> bool {
    held::<Sampler>().is_none_or(|sampler| decide(&sampler))
}

/// The sampled flag of the caller's W3C `traceparent` (`00-<trace>-<span>-<flags>`), if it
/// sends a well-formed one.
fn caller_sampled(headers: &HeaderMap) -> Option<bool> {
    let value = headers.get("traceparent")?.to_str().ok()?;
    let mut parts = value.trim().split('-');
    let (_version, trace, span, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if trace.len() != 32 || span.len() != 16 {
        return None;
    }
    let flags = u8::from_str_radix(flags.get(..2)?, 16).ok()?;
    Some(flags & 1 == 1)
}

/// Whether the current span is that of a request or batch whose trace is not kept: work
/// under it makes no span of its own.
pub(crate) fn in_unsampled_span() -> bool {
    is_unsampled(&tracing::Span::current())
}

/// Whether `span` is that of a request or batch whose trace is not kept.
pub(crate) fn is_unsampled(span: &tracing::Span) -> bool {
    span.metadata()
        .is_some_and(|metadata| metadata.target() == UNSAMPLED_TARGET)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        }
    }

    #[test]
    fn the_standard_variables_choose_the_sampling() {
        assert_eq!(Sampling::from_vars(vars(&[])).0, Sampling::PerSecond(5.0));
        let limited = [
            ("OTEL_TRACES_SAMPLER", "microsoft.rate_limited"),
            ("OTEL_TRACES_SAMPLER_ARG", "0.5"),
        ];
        assert_eq!(
            Sampling::from_vars(vars(&limited)).0,
            Sampling::PerSecond(0.5)
        );
        let every = [("OTEL_TRACES_SAMPLER", "always_on")];
        assert_eq!(Sampling::from_vars(vars(&every)).0, Sampling::EveryRequest);
        let garbled = [
            ("OTEL_TRACES_SAMPLER", "microsoft.rate_limited"),
            ("OTEL_TRACES_SAMPLER_ARG", "many"),
        ];
        let (sampling, warning) = Sampling::from_vars(vars(&garbled));
        assert_eq!(sampling, Sampling::PerSecond(5.0));
        assert!(warning.is_some_and(|w| w.contains("many")));
    }

    #[test]
    fn a_budget_keeps_a_seconds_worth_then_refills_with_time() {
        let sampler = Sampler::new(Sampling::PerSecond(3.0));
        let kept = (0..10).filter(|_| sampler.keeps_new_trace()).count();
        assert_eq!(kept, 3, "a second's worth at once");
        // Half a second later: one and a half traces earned, one whole one kept.
        let half_a_second_ago = Instant::now()
            .checked_sub(std::time::Duration::from_millis(500))
            .unwrap();
        sampler.budget.lock().unwrap().refilled = half_a_second_ago;
        let kept = (0..10).filter(|_| sampler.keeps_new_trace()).count();
        assert_eq!(kept, 1);
        let every = Sampler::new(Sampling::EveryRequest);
        assert!((0..100).all(|_| every.keeps_new_trace()));
    }

    #[test]
    fn a_callers_traceparent_says_whether_it_samples() {
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert("traceparent", value.parse().unwrap());
            caller_sampled(&headers)
        };
        let trace = "0af7651916cd43dd8448eb211c80319c";
        let span = "b7ad6b7169203331";
        assert_eq!(with(&format!("00-{trace}-{span}-01")), Some(true));
        assert_eq!(with(&format!("00-{trace}-{span}-00")), Some(false));
        assert_eq!(with("00-short-b7ad6b7169203331-01"), None);
        assert_eq!(caller_sampled(&HeaderMap::new()), None);
    }
}
