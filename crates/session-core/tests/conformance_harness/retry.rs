//! Cases of `retry.json`: `delay`, `retryable` and `decide` against `{delay_ms}`, `{retry}` and
//! `{decision}`.

use serde_json::{Map, Value, json};
use session_core::{
    MessageError, retry::RetryCarry, retry::RetryConfig, retry::RetryDecision, retry::RetryLimit,
    retry::RetryRequest, retry::decide, retry::delay, retry::retryable,
};

use crate::{Report, case_name, cases};

/// The `name`s of `MessageError`'s variants; any other name is an unnamed error (see [`error`]).
const ERROR_NAMES: [&str; 8] = [
    "ProviderAuthError",
    "UnknownError",
    "MessageOutputLengthError",
    "MessageAbortedError",
    "StructuredOutputError",
    "ContentFilterError",
    "ContextOverflowError",
    "APIError",
];

/// Runs every case of the file.
pub fn run(doc: &Value, report: &mut Report) {
    for case in cases(doc, "cases") {
        let name = case_name(case);
        match run_case(case) {
            Ok((expected, actual)) => report.compare(&name, &expected, &actual),
            Err(detail) => report.record(&name, Err(detail)),
        }
    }
}

/// Runs one case, returning the expected and the actual object.
fn run_case(case: &Value) -> Result<(Value, Value), String> {
    let kind = case.get("kind").and_then(Value::as_str).ok_or("kind is missing")?;
    let input = object(case.get("input"), "input")?;
    let mut expected = case.get("expected").ok_or("expected is missing")?.clone();
    let actual = match kind {
        "delay" => {
            only_keys(input, &["attempt", "error", "random", "now_ms", "config"])?;
            let error = optional_error(input.get("error"))?;
            let config = config(input.get("config"))?;
            let delay_ms = delay(
                attempt(input)?,
                error.as_ref(),
                number(input, "random")?,
                now_ms(input)?,
                config.as_ref(),
            );
            // `test_range_ms` is informational: the range OpenCode's wall-clock test accepts.
            if let Some(expected) = expected.as_object_mut() {
                expected.remove("test_range_ms");
            }
            json!({ "delay_ms": delay_ms })
        }
        "retryable" => {
            // `provider` only feeds OpenCode's hosted-service upsell actions, which are out of scope.
            only_keys(input, &["error", "provider", "config"])?;
            let error = error(input.get("error").ok_or("input.error is missing")?)?;
            let config = config(input.get("config"))?;
            let retry = retryable(&error, config.as_ref()).map(|message| json!({ "message": message }));
            json!({ "retry": retry })
        }
        "decide" => {
            only_keys(
                input,
                &[
                    "error", "provider", "attempt", "elapsed", "limit", "config", "random", "now_ms",
                    "carried",
                ],
            )?;
            let error = error(input.get("error").ok_or("input.error is missing")?)?;
            let config = config(input.get("config"))?;
            let limit = match input.get("limit") {
                None => RetryLimit::default(),
                Some(limit) => {
                    RetryLimit(limit.as_u64().and_then(|l| u32::try_from(l).ok()).ok_or("bad limit")?)
                }
            };
            let carried = match input.get("carried") {
                None | Some(Value::Null) => None,
                Some(carried) => {
                    let carried = object(Some(carried), "input.carried")?;
                    only_keys(carried, &["attempts", "since"])?;
                    Some(RetryCarry {
                        attempts: carried
                            .get("attempts")
                            .and_then(Value::as_u64)
                            .and_then(|a| u32::try_from(a).ok())
                            .ok_or("bad carried.attempts")?,
                        since_ms: carried.get("since").and_then(Value::as_u64).ok_or("bad carried.since")?,
                    })
                }
            };
            let request = RetryRequest {
                error: &error,
                attempt: attempt(input)?,
                elapsed_ms: input.get("elapsed").map_or(Ok(0), |e| e.as_u64().ok_or("bad elapsed"))?,
                limit,
                config: config.as_ref(),
                carried,
                random: number(input, "random")?,
                now_ms: now_ms(input)?,
            };
            let decision = match decide(&request) {
                RetryDecision::Retry { wait_ms, message } => json!({ "message": message, "wait": wait_ms }),
                RetryDecision::Stop => Value::Null,
            };
            json!({ "decision": decision })
        }
        other => return Err(format!("unknown kind {other:?}")),
    };
    Ok((expected, actual))
}

/// The JSON object at `value`, or a failure naming `what`.
pub fn object<'a>(value: Option<&'a Value>, what: &str) -> Result<&'a Map<String, Value>, String> {
    value.and_then(Value::as_object).ok_or_else(|| format!("{what} is not an object"))
}

/// Fails on a key this mapping does not know, so no input is silently ignored.
pub fn only_keys(object: &Map<String, Value>, known: &[&str]) -> Result<(), String> {
    match object.keys().find(|key| !known.contains(&key.as_str())) {
        Some(key) => Err(format!("cannot map input key {key:?}")),
        None => Ok(()),
    }
}

fn attempt(input: &Map<String, Value>) -> Result<u32, String> {
    input
        .get("attempt")
        .and_then(Value::as_u64)
        .and_then(|a| u32::try_from(a).ok())
        .ok_or_else(|| "bad attempt".into())
}

fn number(input: &Map<String, Value>, key: &str) -> Result<f64, String> {
    input.get(key).and_then(Value::as_f64).ok_or_else(|| format!("input.{key} is missing or not a number"))
}

/// The injected clock; cases without an HTTP-date may leave it out.
fn now_ms(input: &Map<String, Value>) -> Result<u64, String> {
    input.get("now_ms").map_or(Ok(0), |now| now.as_u64().ok_or_else(|| "bad now_ms".to_owned()))
}

fn config(value: Option<&Value>) -> Result<Option<RetryConfig>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(config) => {
            let keys = [
                "maxAttempts",
                "initialDelayMs",
                "maxDelayMs",
                "maxElapsedMs",
                "backoffFactor",
                "retryableStatuses",
            ];
            only_keys(object(Some(config), "input.config")?, &keys)?;
            serde_json::from_value(config.clone()).map(Some).map_err(|e| format!("cannot map config: {e}"))
        }
    }
}

fn optional_error(value: Option<&Value>) -> Result<Option<MessageError>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(value) => error(value).map(Some),
    }
}

/// A serialized NamedError as a `MessageError`.
///
/// An error whose name is none of `MessageError`'s (OpenCode's tests use `""`) is read by
/// `retryable` only through its string `data.message`, exactly as an `UnknownError` is, so it
/// maps onto one.
pub fn error(value: &Value) -> Result<MessageError, String> {
    let name = value.get("name").and_then(Value::as_str).ok_or("error.name is missing")?;
    if ERROR_NAMES.contains(&name) {
        return serde_json::from_value(value.clone()).map_err(|e| format!("cannot map error: {e}"));
    }
    let data = object(value.get("data"), "error.data")?;
    only_keys(data, &["message"])?;
    let message = data.get("message").and_then(Value::as_str).ok_or("error.data.message is not a string")?;
    Ok(MessageError::UnknownError { message: message.to_owned() })
}
