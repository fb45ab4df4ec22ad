//! Cases of `provider_errors.json`: `parse_api_call_error` and `parse_stream_error` against the
//! classified `{type, message, ...}` object, after checking that the classifier's patterns are
//! the file's `overflow_patterns` and `no_body_pattern`.

use serde_json::{Map, Value, json};
use session_core::{
    provider_error::ApiCallFailure, provider_error::ClassifiedError, provider_error::NO_BODY_PATTERN,
    provider_error::OVERFLOW_PATTERNS, provider_error::parse_api_call_error,
    provider_error::parse_stream_error,
};

use crate::retry::{object, only_keys};
use crate::{Report, case_name, cases};

/// Runs every case of the file, after the pattern lists (which are data, not cases: they are
/// recorded only when they differ).
pub fn run(doc: &Value, report: &mut Report) {
    if let Err(detail) = check_patterns(doc) {
        report.record("<patterns>", Err(detail));
    }
    for case in cases(doc, "cases") {
        let name = case_name(case);
        match run_case(case) {
            Ok((expected, actual)) => report.compare(&name, expected, &actual),
            Err(detail) => report.record(&name, Err(detail)),
        }
    }
}

/// The classifier must use exactly the file's patterns, in the same order.
fn check_patterns(doc: &Value) -> Result<(), String> {
    let listed: Vec<&str> = doc
        .get("overflow_patterns")
        .and_then(Value::as_array)
        .ok_or("overflow_patterns is missing")?
        .iter()
        .map(|pattern| pattern.as_str().ok_or("overflow_patterns holds a non-string"))
        .collect::<Result<_, _>>()?;
    if listed != OVERFLOW_PATTERNS {
        return Err(format!(
            "overflow_patterns {listed:?} differ from the classifier's {OVERFLOW_PATTERNS:?}"
        ));
    }
    let no_body = doc.get("no_body_pattern").and_then(Value::as_str).ok_or("no_body_pattern is missing")?;
    if no_body != NO_BODY_PATTERN {
        return Err(format!("no_body_pattern {no_body:?} differs from the classifier's {NO_BODY_PATTERN:?}"));
    }
    Ok(())
}

/// Runs one case, returning the expected and the actual object.
fn run_case(case: &Value) -> Result<(&Value, Value), String> {
    let kind = case.get("kind").and_then(Value::as_str).ok_or("kind is missing")?;
    let input = object(case.get("input"), "input")?;
    let expected = case.get("expected").ok_or("expected is missing")?;
    let actual = match kind {
        "api_call_error" => {
            only_keys(input, &["providerID", "error"])?;
            let provider =
                input.get("providerID").and_then(Value::as_str).ok_or("input.providerID is missing")?;
            let failure = failure(input.get("error"))?;
            // An API error's headers, body and metadata are carried but left out of `expected`.
            to_json(parse_api_call_error(provider, &failure), false)
        }
        "stream_error" => {
            only_keys(input, &["error"])?;
            let payload = input.get("error").unwrap_or(&Value::Null);
            parse_stream_error(payload).map_or(Value::Null, |classified| to_json(classified, true))
        }
        other => return Err(format!("unknown kind {other:?}")),
    };
    Ok((expected, actual))
}

fn failure(value: Option<&Value>) -> Result<ApiCallFailure, String> {
    let error = object(value, "input.error")?;
    only_keys(error, &["message", "statusCode", "isRetryable", "responseBody", "responseHeaders", "url"])?;
    let message = error.get("message").ok_or("input.error.message is missing")?;
    message.as_str().ok_or("input.error.message is not a string")?;
    serde_json::from_value(Value::Object(error.clone())).map_err(|e| format!("cannot map input.error: {e}"))
}

/// The vectors' `{type, message, ...}` shape of a classification.
fn to_json(classified: ClassifiedError, api_body: bool) -> Value {
    let mut out = Map::new();
    match classified {
        ClassifiedError::ContextOverflow { message, response_body } => {
            out.insert("type".into(), json!("context_overflow"));
            out.insert("message".into(), json!(message));
            if let Some(body) = response_body {
                out.insert("responseBody".into(), json!(body));
            }
        }
        ClassifiedError::Api { message, status_code, is_retryable, response_body, .. } => {
            out.insert("type".into(), json!("api_error"));
            out.insert("message".into(), json!(message));
            if let Some(status) = status_code {
                out.insert("statusCode".into(), json!(status));
            }
            out.insert("isRetryable".into(), json!(is_retryable));
            if let Some(body) = response_body.filter(|_| api_body) {
                out.insert("responseBody".into(), json!(body));
            }
        }
    }
    Value::Object(out)
}
