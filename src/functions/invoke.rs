//! The custom-handler side of the change-feed triggers and of the re-check's timer:
//! the Functions host POSTs `{"Data": {"documents": ...}, "Metadata": {...}}` (a timer:
//! `{"Data": {"timer": ...}, ...}`) to `/{FunctionName}` and reads back
//! `{"Outputs": {}, "Logs": [...], "ReturnValue": null}`. Any non-2xx answer fails the
//! invocation, and the host retries it by the trigger's retry policy.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::time::Duration;

use crate::changefeed::publisher::{self, Publisher};
use crate::changefeed::recheck::{self, Recheck};
use crate::copies::Source;
use crate::http::AppState;
use crate::problem::Problem;
use crate::telemetry::metrics;

/// The host encodes `Data.documents` twice; a few more layers are tolerated, no more, so a
/// hostile body cannot make us loop.
const MAX_ENCODING_LAYERS: usize = 4;

/// What the host POSTs for a non-HTTP function: the trigger's data, by binding name, and
/// metadata.
#[derive(Debug, Deserialize)]
struct Invocation<Data = InvocationData> {
    #[serde(rename = "Data")]
    data: Data,
    #[serde(rename = "Metadata", default)]
    metadata: Value,
}

#[derive(Debug, Deserialize)]
struct InvocationData {
    #[serde(default)]
    documents: Value,
}

/// What the host expects back from a non-HTTP function.
#[derive(Debug, Serialize)]
pub struct InvocationResult {
    #[serde(rename = "Outputs")]
    pub outputs: Map<String, Value>,
    #[serde(rename = "Logs")]
    pub logs: Vec<String>,
    #[serde(rename = "ReturnValue")]
    pub return_value: Value,
}

/// Why a request body is not a trigger invocation.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("the body is not an invocation: {0}")]
    Envelope(serde_json::Error),
    #[error("Data.documents holds a string that is not JSON: {0}")]
    Layer(serde_json::Error),
    #[error("Data.documents is not an array of documents (found {0})")]
    NotAnArray(&'static str),
    #[error("Data.documents is encoded more than {MAX_ENCODING_LAYERS} times")]
    TooDeep,
}

/// Unwraps `Data.documents`: while it is a string, parse the string as JSON, until an array
/// remains. A plain array (no encoding) is accepted as is.
pub fn decode_documents(mut value: Value) -> Result<Vec<Value>, DecodeError> {
    for _ in 0..=MAX_ENCODING_LAYERS {
        match value {
            Value::Array(documents) => return Ok(documents),
            Value::String(text) => {
                value = serde_json::from_str(&text).map_err(DecodeError::Layer)?;
            }
            other => return Err(DecodeError::NotAnArray(kind_of(&other))),
        }
    }
    Err(DecodeError::TooDeep)
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Parses a whole invocation body into its documents.
pub fn parse_invocation(body: &[u8]) -> Result<Vec<Value>, DecodeError> {
    let invocation: Invocation = serde_json::from_slice(body).map_err(DecodeError::Envelope)?;
    if let Some(guid) = invocation.metadata.pointer("/sys/RandGuid") {
        tracing::debug!(%guid, "trigger invocation metadata");
    }
    decode_documents(invocation.data.documents)
}

/// Handles one trigger invocation for `source`.
pub async fn invoke(source: Source, State(state): State<AppState>, body: Bytes) -> Response {
    let function = source.function_name();
    let documents = match parse_invocation(&body) {
        Ok(documents) => documents,
        Err(why) => {
            tracing::warn!(function, %why, "undecodable trigger invocation");
            return Problem::new(
                StatusCode::BAD_REQUEST,
                "invalid-invocation",
                why.to_string(),
            )
            .into_response();
        }
    };
    match source.handle(state.blogs.store(), &documents).await {
        Ok(report) => {
            metrics::record_change_feed_lag(source.container().name(), function, &documents);
            let logs = report.log_lines(function);
            for line in &logs {
                tracing::info!(function, documents = documents.len(), "{line}");
            }
            Json(InvocationResult {
                outputs: Map::new(),
                logs,
                return_value: Value::Null,
            })
            .into_response()
        }
        Err(e) => {
            // Any failure of the batch as a whole is answered 500 so the host retries it (a
            // transient one is expected to pass; after the retries `rebuild` reconciles).
            tracing::error!(function, transient = e.is_transient(), error = %e, "change-feed batch failed");
            Problem::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "change-feed-batch-failed",
                "the batch could not be handled; it will be retried",
            )
            .into_response()
        }
    }
}

/// A timer function of the app, with what its setting says of where its work is done.
#[derive(Debug, Clone, Copy)]
pub enum Timer {
    /// The delayed re-check's.
    Recheck(Recheck),
    /// The publisher's of scheduled posts.
    Publisher(Publisher),
}

/// What one tick of a timer does here.
enum Tick {
    /// Nothing, for the reason given: the work is off, or done by a task of the server.
    Idle(&'static str),
    /// The re-check up to the present − this delay.
    Recheck(Duration),
    /// Publishes the scheduled posts whose time has come.
    Publish,
}

impl Timer {
    pub fn function_name(self) -> &'static str {
        match self {
            Timer::Recheck(_) => recheck::FUNCTION_NAME,
            Timer::Publisher(_) => publisher::FUNCTION_NAME,
        }
    }

    fn tick(self) -> Tick {
        match self {
            Timer::Recheck(Recheck::Off) => Tick::Idle("off (BLOG_RECHECK_DELAY_MS=0)"),
            Timer::Recheck(Recheck::BesideThePump(_)) => {
                Tick::Idle("runs beside the in-process change-feed pump; nothing to do here")
            }
            Timer::Recheck(Recheck::OnTimer(delay)) => Tick::Recheck(delay),
            Timer::Publisher(Publisher::Off) => Tick::Idle("off (BLOG_PUBLISH_STEP_MS=0)"),
            Timer::Publisher(Publisher::InProcess(_)) => {
                Tick::Idle("runs as a task of the server; nothing to do here")
            }
            Timer::Publisher(Publisher::OnTimer) => Tick::Publish,
        }
    }
}

/// Handles one invocation of a timer, and answers the host's invocation body with the tick's
/// log lines. The re-check runs up to the present − delay within [`recheck::TIMER_BUDGET`]
/// (the next tick goes on if it is behind); the publisher publishes the scheduled posts whose
/// time has come. The timer's own data (its schedule status) is only logged: every tick does
/// the same work.
pub async fn invoke_timer(timer: Timer, State(state): State<AppState>, body: Bytes) -> Response {
    let function = timer.function_name();
    let invocation: Invocation<Value> = match serde_json::from_slice(&body) {
        Ok(invocation) => invocation,
        Err(why) => return undecodable_timer_invocation(function, why),
    };
    if matches!(timer, Timer::Recheck(_)) && past_due(&invocation.data) {
        tracing::info!(function, "the timer is past due");
    }
    let logs = match timer.tick() {
        Tick::Idle(why) => vec![format!("{function}: {why}")],
        Tick::Recheck(delay) => {
            match recheck::run(state.blogs.store(), delay, recheck::TIMER_BUDGET).await {
                Ok(report) => report.log_lines(),
                Err(e) => {
                    // Nothing was skipped: the checkpoint stays, and the next tick retries.
                    tracing::error!(function, transient = e.is_transient(), error = %e, "re-check failed");
                    return Problem::new(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "recheck-failed",
                        "the re-check could not finish; the next invocation retries it",
                    )
                    .into_response();
                }
            }
        }
        Tick::Publish => match publisher::publish_due(state.blogs.store()).await {
            Ok(done) => vec![publisher::log_line(&done)],
            Err(e) => {
                // Nothing is lost: the next tick finds the same posts due.
                tracing::error!(function, error = %e, "publishing scheduled posts failed");
                return Problem::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "publish-failed",
                    "the scheduled posts could not be published; the next invocation retries",
                )
                .into_response();
            }
        },
    };
    timer_answer(function, logs)
}

/// Whether the timer's data says the invocation is late (`IsPastDue`), however the host
/// encoded it (an object, or a JSON string of one).
fn past_due(data: &Value) -> bool {
    let timer = data.as_object().and_then(|fields| fields.values().next());
    let timer = match timer {
        Some(Value::String(text)) => serde_json::from_str(text).unwrap_or(Value::Null),
        Some(other) => other.clone(),
        None => Value::Null,
    };
    timer.get("IsPastDue").and_then(Value::as_bool) == Some(true)
}

/// The host's 400 for a timer invocation body that cannot be decoded.
fn undecodable_timer_invocation(function: &str, why: serde_json::Error) -> Response {
    tracing::warn!(function, %why, "undecodable timer invocation");
    let why = DecodeError::Envelope(why).to_string();
    Problem::new(StatusCode::BAD_REQUEST, "invalid-invocation", why).into_response()
}

/// A timer function's answer to the host: its log lines, logged here too, and no output.
fn timer_answer(function: &str, logs: Vec<String>) -> Response {
    for line in &logs {
        tracing::info!(function, "{line}");
    }
    Json(InvocationResult {
        outputs: Map::new(),
        logs,
        return_value: Value::Null,
    })
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decodes_double_encoded_documents() {
        let array = json!([{ "id": "a" }]);
        let once = Value::String(array.to_string());
        let twice = Value::String(once.to_string());
        assert_eq!(decode_documents(twice).ok(), Some(vec![json!({"id": "a"})]));
        assert_eq!(decode_documents(once).ok(), Some(vec![json!({"id": "a"})]));
        assert_eq!(decode_documents(array).ok(), Some(vec![json!({"id": "a"})]));
    }

    #[test]
    fn refuses_what_is_not_an_array() {
        assert!(matches!(
            decode_documents(json!({"id": "a"})),
            Err(DecodeError::NotAnArray(_))
        ));
        assert!(matches!(
            decode_documents(Value::Null),
            Err(DecodeError::NotAnArray("null"))
        ));
        assert!(matches!(
            decode_documents(Value::String("[oops".into())),
            Err(DecodeError::Layer(_))
        ));
        let mut deep = json!([]);
        for _ in 0..=MAX_ENCODING_LAYERS {
            deep = Value::String(deep.to_string());
        }
        assert!(matches!(decode_documents(deep), Err(DecodeError::TooDeep)));
    }
}
