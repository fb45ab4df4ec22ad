//! The provider error classifier (SPEC 6, provider side): how a failed HTTP call or an error
//! payload inside a response stream becomes a context overflow or an API error.
//!
//! Provider adapters build an [`ApiCallFailure`] from what the transport saw and pass it to
//! [`parse_api_call_error`]; error payloads found in a stream go to [`parse_stream_error`]. Both
//! yield a [`ClassifiedError`], which converts into the [`MessageError`] the session records and
//! that [`retryable`](crate::retry::retryable) reads.
//!
//! The patterns are kept as the JavaScript regex sources OpenCode uses (the conformance vectors
//! compare them as strings) and translated once by `js_text` to equivalent Rust regexes, so
//! that `\d`, `\s`, `.`, `\b` and case-insensitivity mean exactly what they mean in JavaScript.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::js_json;
use crate::js_text::{compile_js_alternation, is_js_whitespace};
use crate::message::MessageError;

/// Messages that mean the request did not fit the model's context, as JavaScript regex sources
/// matched case-insensitively anywhere in the derived message.
pub const OVERFLOW_PATTERNS: [&str; 19] = [
    r"prompt is too long",
    r"input is too long for requested model",
    r"exceeds the context window",
    r"input token count.*exceeds the maximum",
    r"maximum prompt length is \d+",
    r"reduce the length of the messages",
    r"maximum context length is \d+ tokens",
    r"exceeds the limit of \d+",
    r"exceeds the available context size",
    r"greater than the context length",
    r"context window exceeds limit",
    r"exceeded model token limit",
    r"context[_ ]length[_ ]exceeded",
    r"request entity too large",
    r"context length is only \d+ tokens",
    r"input length.*exceeds.*context length",
    r"prompt too long; exceeded (?:max )?context length",
    r"too large for model with \d+ maximum context length",
    r"model_context_window_exceeded",
];

/// The "400/413 with no body" message some servers give for an oversize request (JavaScript
/// regex source, case-insensitive).
pub const NO_BODY_PATTERN: &str = r"^4(00|13)\s*(status code)?\s*\(no body\)";

/// Node's `http.STATUS_CODES` table, which differs from the IANA reason phrases in places
/// (413, 418, 422, 509) and has no entry for 529.
pub const STATUS_TEXT: [(u16, &str); 63] = [
    (100, "Continue"),
    (101, "Switching Protocols"),
    (102, "Processing"),
    (103, "Early Hints"),
    (200, "OK"),
    (201, "Created"),
    (202, "Accepted"),
    (203, "Non-Authoritative Information"),
    (204, "No Content"),
    (205, "Reset Content"),
    (206, "Partial Content"),
    (207, "Multi-Status"),
    (208, "Already Reported"),
    (226, "IM Used"),
    (300, "Multiple Choices"),
    (301, "Moved Permanently"),
    (302, "Found"),
    (303, "See Other"),
    (304, "Not Modified"),
    (305, "Use Proxy"),
    (307, "Temporary Redirect"),
    (308, "Permanent Redirect"),
    (400, "Bad Request"),
    (401, "Unauthorized"),
    (402, "Payment Required"),
    (403, "Forbidden"),
    (404, "Not Found"),
    (405, "Method Not Allowed"),
    (406, "Not Acceptable"),
    (407, "Proxy Authentication Required"),
    (408, "Request Timeout"),
    (409, "Conflict"),
    (410, "Gone"),
    (411, "Length Required"),
    (412, "Precondition Failed"),
    (413, "Payload Too Large"),
    (414, "URI Too Long"),
    (415, "Unsupported Media Type"),
    (416, "Range Not Satisfiable"),
    (417, "Expectation Failed"),
    (418, "I'm a Teapot"),
    (421, "Misdirected Request"),
    (422, "Unprocessable Entity"),
    (423, "Locked"),
    (424, "Failed Dependency"),
    (425, "Too Early"),
    (426, "Upgrade Required"),
    (428, "Precondition Required"),
    (429, "Too Many Requests"),
    (431, "Request Header Fields Too Large"),
    (451, "Unavailable For Legal Reasons"),
    (500, "Internal Server Error"),
    (501, "Not Implemented"),
    (502, "Bad Gateway"),
    (503, "Service Unavailable"),
    (504, "Gateway Timeout"),
    (505, "HTTP Version Not Supported"),
    (506, "Variant Also Negotiates"),
    (507, "Insufficient Storage"),
    (508, "Loop Detected"),
    (509, "Bandwidth Limit Exceeded"),
    (510, "Not Extended"),
    (511, "Network Authentication Required"),
];

/// Node's status text for an HTTP status, if its table has one.
pub fn status_text(status: u16) -> Option<&'static str> {
    STATUS_TEXT.binary_search_by_key(&status, |(code, _)| *code).ok().map(|index| STATUS_TEXT[index].1)
}

const UNAUTHORIZED_BY_GATEWAY: &str = "Unauthorized: request was blocked by a gateway or proxy. Your authentication \
     token may be missing or expired \u{2014} try running `opencode auth login <your provider URL>` to re-authenticate.";
const FORBIDDEN_BY_GATEWAY: &str = "Forbidden: request was blocked by a gateway or proxy. You may not have \
     permission to access this resource \u{2014} check your account and provider settings.";
const STREAM_OVERFLOW_MESSAGE: &str = "Input exceeds context window of this model";
const QUOTA_MESSAGE: &str = "Quota exceeded. Check your plan and billing details.";
const USAGE_NOT_INCLUDED_MESSAGE: &str =
    "To use Codex with your ChatGPT plan, upgrade to Plus: https://chatgpt.com/explore/plus.";

/// [`OVERFLOW_PATTERNS`] and [`NO_BODY_PATTERN`] as one regex.
static OVERFLOW_REGEX: LazyLock<Option<regex_lite::Regex>> =
    LazyLock::new(|| compile_js_alternation(&overflow_sources()));

/// The sources [`OVERFLOW_REGEX`] joins.
fn overflow_sources() -> Vec<&'static str> {
    OVERFLOW_PATTERNS.iter().copied().chain([NO_BODY_PATTERN]).collect()
}

/// A failed HTTP call to a provider, as an adapter saw it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiCallFailure {
    /// The transport's or SDK's error message (may be empty).
    #[serde(default)]
    pub message: String,
    /// HTTP status, when a response arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_code: Option<u16>,
    /// Whether the transport considers the call safe and useful to retry.
    #[serde(default)]
    pub is_retryable: bool,
    /// The response body text, when one arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_body: Option<String>,
    /// Response headers with lower-case names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_headers: Option<BTreeMap<String, String>>,
    /// The URL that was called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// A provider failure after classification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClassifiedError {
    /// The request did not fit the model's context: compact rather than retry.
    ContextOverflow {
        /// The derived message.
        message: String,
        /// The provider's body, when there was one.
        response_body: Option<String>,
    },
    /// Any other provider error.
    Api {
        /// The derived message.
        message: String,
        /// HTTP status, when there was a response.
        status_code: Option<u16>,
        /// The provider's (possibly corrected) retryable flag.
        is_retryable: bool,
        /// Response headers with lower-case names.
        response_headers: Option<BTreeMap<String, String>>,
        /// The provider's body.
        response_body: Option<String>,
        /// Extra data such as the called `url`.
        metadata: Option<BTreeMap<String, String>>,
    },
}

impl ClassifiedError {
    /// The message to show and record.
    pub fn message(&self) -> &str {
        match self {
            Self::ContextOverflow { message, .. } | Self::Api { message, .. } => message,
        }
    }

    /// Whether this is a context overflow.
    pub fn is_context_overflow(&self) -> bool {
        matches!(self, Self::ContextOverflow { .. })
    }

    /// An API error from a stream payload: no status, headers or metadata.
    fn from_stream(message: &str, is_retryable: bool, response_body: String) -> Self {
        Self::Api {
            message: message.to_owned(),
            status_code: None,
            is_retryable,
            response_headers: None,
            response_body: Some(response_body),
            metadata: None,
        }
    }
}

impl From<ClassifiedError> for MessageError {
    fn from(error: ClassifiedError) -> Self {
        match error {
            ClassifiedError::ContextOverflow { message, response_body } => {
                Self::ContextOverflowError { message, response_body }
            }
            ClassifiedError::Api {
                message,
                status_code,
                is_retryable,
                response_headers,
                response_body,
                metadata,
            } => Self::ApiError {
                message,
                status_code,
                is_retryable,
                response_headers,
                response_body,
                metadata,
            },
        }
    }
}

/// Classifies a failed HTTP call to provider `provider_id` (OpenCode's `parseAPICallError`).
pub fn parse_api_call_error(provider_id: &str, failure: &ApiCallFailure) -> ClassifiedError {
    let message = derive_message(failure);
    if is_overflow(&message, failure) {
        return ClassifiedError::ContextOverflow { message, response_body: failure.response_body.clone() };
    }
    // OpenAI sometimes answers 404 for models that exist, so a 404 there is worth a retry.
    let is_retryable = match failure.status_code {
        Some(status) if provider_id.starts_with("openai") => status == 404 || failure.is_retryable,
        _ => failure.is_retryable,
    };
    ClassifiedError::Api {
        message,
        status_code: failure.status_code,
        is_retryable,
        response_headers: failure.response_headers.clone(),
        response_body: failure.response_body.clone(),
        metadata: failure.url.as_ref().map(|url| BTreeMap::from([("url".to_owned(), url.clone())])),
    }
}

/// The message shown for a failed call: the transport's, completed from the body where useful.
fn derive_message(failure: &ApiCallFailure) -> String {
    let message = failure.message.as_str();
    let body = failure.response_body.as_deref().filter(|body| !body.is_empty());
    let text = failure.status_code.and_then(status_text);
    let derived = if message.is_empty() {
        body.or(text).unwrap_or("Unknown error").to_owned()
    } else if let Some(body) = body.filter(|_| failure.status_code.is_none() || text == Some(message)) {
        // The message says nothing beyond the status, so the body is the informative part.
        if let Some(detail) = body_detail(body) {
            format!("{message}: {detail}")
        } else if is_html(body) {
            // A gateway's login or error page: its HTML would only bury the useful hint.
            match failure.status_code {
                Some(401) => UNAUTHORIZED_BY_GATEWAY.to_owned(),
                Some(403) => FORBIDDEN_BY_GATEWAY.to_owned(),
                _ => message.to_owned(),
            }
        } else {
            format!("{message}: {body}")
        }
    } else {
        message.to_owned()
    };
    derived.trim_matches(is_js_whitespace).to_owned()
}

/// `body.message || body.error` of a JSON object body, when that is a non-empty string.
fn body_detail(body: &str) -> Option<String> {
    let Ok(Value::Object(object)) = serde_json::from_str::<Value>(body) else {
        return None;
    };
    // JavaScript's `||` takes the first truthy value, so an object-valued `error` wins over
    // `error.message` and then is no string.
    let chosen =
        [object.get("message"), object.get("error")].into_iter().flatten().find(|value| is_truthy(value))?;
    chosen.as_str().map(str::to_owned)
}

/// JavaScript truthiness of a JSON value.
fn is_truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(flag) => *flag,
        Value::Number(number) => number.as_f64().is_some_and(|number| number != 0.0),
        Value::String(text) => !text.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// `/^\s*<!doctype|^\s*<html/i`
fn is_html(body: &str) -> bool {
    let start = body.trim_start_matches(is_js_whitespace);
    let starts_with =
        |prefix: &str| start.get(..prefix.len()).is_some_and(|head| head.eq_ignore_ascii_case(prefix));
    starts_with("<!doctype") || starts_with("<html")
}

fn is_overflow(message: &str, failure: &ApiCallFailure) -> bool {
    OVERFLOW_REGEX.as_ref().is_some_and(|regex| regex.is_match(message))
        || failure.status_code == Some(413)
        || failure.response_body.as_deref().is_some_and(has_context_length_code)
}

/// Whether a JSON body says `error.code == "context_length_exceeded"`.
fn has_context_length_code(body: &str) -> bool {
    serde_json::from_str::<Value>(body).ok().is_some_and(|value| {
        value.get("error").and_then(|error| error.get("code")).and_then(Value::as_str)
            == Some("context_length_exceeded")
    })
}

/// Classifies an error payload received inside a response stream; `None` when it is not one
/// of the recognised codes (OpenCode's `parseStreamError`).
///
/// The payload may be the error object itself, its JSON text, or an object whose string
/// `message` holds that JSON text.
pub fn parse_stream_error(payload: &Value) -> Option<ClassifiedError> {
    let raw = match payload {
        Value::String(text) => parse_container(text)?,
        Value::Object(_) | Value::Array(_) => payload.clone(),
        _ => return None,
    };
    let nested = raw.get("message").and_then(Value::as_str).and_then(parse_container);
    let body = nested.as_ref().unwrap_or(&raw);
    if body.get("type").and_then(Value::as_str) != Some("error") {
        return None;
    }
    let error = body.get("error").filter(|error| error.is_object());
    let code = error.and_then(|error| error.get("code")).and_then(Value::as_str)?;
    let detail = error.and_then(|error| error.get("message")).and_then(Value::as_str);
    let response_body = js_json::stringify(body);
    Some(match code {
        "context_length_exceeded" => ClassifiedError::ContextOverflow {
            message: STREAM_OVERFLOW_MESSAGE.to_owned(),
            response_body: Some(response_body),
        },
        "insufficient_quota" => ClassifiedError::from_stream(QUOTA_MESSAGE, false, response_body),
        "usage_not_included" => {
            ClassifiedError::from_stream(USAGE_NOT_INCLUDED_MESSAGE, false, response_body)
        }
        "invalid_prompt" => {
            ClassifiedError::from_stream(detail.unwrap_or("Invalid prompt."), false, response_body)
        }
        "server_error" | "server_is_overloaded" => {
            ClassifiedError::from_stream(detail.unwrap_or("Server error."), true, response_body)
        }
        _ => return None,
    })
}

/// The error to record for a stream error payload: its classification, or else an
/// `UnknownError` holding the payload's JSON text (which [`retryable`](crate::retry::retryable)
/// may still retry, for example for a rate-limit code).
pub fn classify_stream_error(payload: &Value) -> MessageError {
    match parse_stream_error(payload) {
        Some(classified) => classified.into(),
        None => MessageError::UnknownError { message: js_json::stringify(payload) },
    }
}

/// JSON text whose value is an object or an array.
fn parse_container(text: &str) -> Option<Value> {
    serde_json::from_str::<Value>(text).ok().filter(|value| value.is_object() || value.is_array())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_patterns_compile_whole() {
        use crate::js_text::compile_js_patterns;
        assert_eq!(compile_js_patterns(&OVERFLOW_PATTERNS).len(), OVERFLOW_PATTERNS.len());
        assert_eq!(compile_js_patterns(&[NO_BODY_PATTERN]).len(), 1);
        assert!(OVERFLOW_REGEX.is_some());
    }

    #[test]
    fn the_joined_overflow_regex_matches_where_one_of_the_patterns_does() {
        let texts = [
            "Prompt is too long: 210000 tokens > 200000 maximum",
            "This model's maximum context length is 128000 tokens. However, you requested 130000",
            "Input token count 90000 exceeds the maximum of 65536",
            "400 status code (no body)",
            "x 413 (no body)",
            "context_length_exceeded",
            "CONTEXT LENGTH EXCEEDED",
            "maximum prompt length is tokens",
            "prompt too long; exceeded max context length",
            "Internal Server Error",
            "rate limit reached",
            "",
        ];
        crate::js_text::assert_joined_agrees(&overflow_sources(), OVERFLOW_REGEX.as_ref(), &texts);
    }

    #[test]
    fn status_texts_come_from_node() {
        assert!(STATUS_TEXT.windows(2).all(|pair| pair[0].0 < pair[1].0));
        assert_eq!(status_text(413), Some("Payload Too Large"));
        assert_eq!(status_text(418), Some("I'm a Teapot"));
        assert_eq!(status_text(509), Some("Bandwidth Limit Exceeded"));
        assert_eq!(status_text(529), None);
    }

    #[test]
    fn message_is_trimmed_like_javascript() {
        let failure = ApiCallFailure {
            message: "\u{feff} boom \u{a0}".to_owned(),
            status_code: Some(500),
            ..ApiCallFailure::default()
        };
        assert_eq!(parse_api_call_error("test", &failure).message(), "boom");
    }

    #[test]
    fn unknown_stream_payloads_become_unknown_errors() {
        let payload = serde_json::json!({"type": "error", "error": {"code": "rate_limit_exceeded"}});
        assert_eq!(
            classify_stream_error(&payload),
            MessageError::UnknownError {
                message: r#"{"type":"error","error":{"code":"rate_limit_exceeded"}}"#.to_owned()
            }
        );
    }
}
