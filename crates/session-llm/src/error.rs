//! `LlmError`: every way a provider call or stream can fail, as variants a caller branches on,
//! and the glue that feeds provider failures to session-core's classifier.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use session_core::{
    MessageError, provider_error::ApiCallFailure, provider_error::ClassifiedError,
    provider_error::parse_api_call_error, provider_error::parse_stream_error,
};

use crate::sse::SseError;

/// A provider call or stream failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// The provider answered with an error (an HTTP failure or an error inside the stream).
    #[error("{}", .0.message())]
    Api(Box<ProviderApiError>),
    /// The request did not fit the model's context window: compact rather than retry.
    #[error("{message}")]
    ContextOverflow {
        /// The derived message.
        message: String,
        /// The provider's body, when there was one.
        response_body: Option<String>,
    },
    /// The provider reported an error inside the stream that carries no message to classify.
    #[error("{message}")]
    Stream {
        /// The provider's error payload as JSON text.
        message: String,
    },
    /// The stream ended before the provider's terminal event.
    #[error("stream ended before {expected}")]
    Truncated {
        /// The terminal event that never came (`[DONE]`, `message_stop`, ...).
        expected: &'static str,
    },
    /// An event's data was not the JSON the provider documents.
    #[error("malformed JSON in event {index}: {message}")]
    MalformedEvent {
        /// The 1-based position of the event in the stream.
        index: usize,
        /// What the JSON parser said.
        message: String,
    },
    /// No bytes arrived for longer than the idle timeout. The text says "read timed out", as
    /// OpenCode's chunk timeout does, so that SPEC 7.2's timeout pattern retries it whatever
    /// the number of milliseconds.
    #[error("SSE read timed out: no data from the provider for {} ms", .after.as_millis())]
    IdleTimeout {
        /// The configured idle timeout.
        after: Duration,
    },
    /// One server-sent event was larger than the configured bound.
    #[error("server-sent event larger than the limit of {limit} bytes")]
    EventTooLarge {
        /// The bound, in bytes.
        limit: usize,
    },
    /// The caller cancelled the request.
    #[error("Aborted")]
    Aborted,
    /// The connection failed (connect, TLS, reset, body read).
    #[error("transport error: {0}")]
    Transport(#[from] TransportError),
    /// The request could not be built (for example an unsupported content type).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
}

/// An error the provider answered with, and session-core's classification of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderApiError {
    /// The HTTP status; absent for an error reported inside a stream.
    pub status: Option<u16>,
    /// Response headers, names lower-cased.
    pub headers: BTreeMap<String, String>,
    /// The raw response body (or the stream's error payload).
    pub body: Option<String>,
    /// The provider's own retryable flag (`x-should-retry`, else 408, 409, 429 and 5xx).
    pub provider_retryable: bool,
    /// The message the adapter read from the provider's error body.
    pub provider_message: String,
    /// The URL that was called.
    pub url: Option<String>,
    /// session-core's verdict: the derived message and the (possibly corrected) retryable flag.
    pub classified: ClassifiedError,
}

impl ProviderApiError {
    /// The derived message (SPEC 6): what users see.
    pub fn message(&self) -> &str {
        self.classified.message()
    }

    /// Whether the classified error may be retried.
    pub fn retryable(&self) -> bool {
        match &self.classified {
            ClassifiedError::Api { is_retryable, .. } => *is_retryable,
            ClassifiedError::ContextOverflow { .. } => false,
        }
    }
}

/// A network-level failure, kept as text so that errors stay cloneable and comparable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct TransportError {
    /// What failed.
    pub message: String,
    /// A server on this machine or the local network refused the connection: nothing listens
    /// there, and waiting will not start it, so the error is final at once (a refusal from a
    /// remote address may be a restart behind a load balancer and is retried, SPEC 7.2).
    pub refused_locally: bool,
}

impl TransportError {
    /// A transport error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Self { message: message.into(), refused_locally: false }
    }

    /// A connection to a loopback, private or link-local address was refused.
    pub fn refused_locally(message: impl Into<String>) -> Self {
        Self { message: message.into(), refused_locally: true }
    }
}

impl From<SseError> for LlmError {
    fn from(err: SseError) -> Self {
        match err {
            SseError::EventTooLarge { limit } => Self::EventTooLarge { limit },
        }
    }
}

impl LlmError {
    /// The name of this error in OpenCode's message-error vocabulary (SPEC 2).
    pub fn name(&self) -> &'static str {
        match self {
            Self::Api(_) => "APIError",
            Self::ContextOverflow { .. } => "ContextOverflowError",
            Self::Aborted => "MessageAbortedError",
            Self::Stream { .. }
            | Self::Truncated { .. }
            | Self::MalformedEvent { .. }
            | Self::IdleTimeout { .. }
            | Self::EventTooLarge { .. }
            | Self::Transport(_)
            | Self::InvalidRequest(_) => "UnknownError",
        }
    }

    /// True for a context overflow, which calls for compaction rather than a retry.
    pub fn is_context_overflow(&self) -> bool {
        matches!(self, Self::ContextOverflow { .. })
    }

    /// The error as the assistant message records it, ready for session-core's `retryable`.
    pub fn to_message_error(&self) -> MessageError {
        match self {
            Self::Api(api) => api.classified.clone().into(),
            Self::ContextOverflow { message, response_body } => MessageError::ContextOverflowError {
                message: message.clone(),
                response_body: response_body.clone(),
            },
            Self::Aborted => MessageError::MessageAbortedError { message: "Aborted".to_owned() },
            // Typed as final (metadata code), whatever retryable words the text carries.
            Self::Transport(transport) if transport.refused_locally => MessageError::ApiError {
                message: self.to_string(),
                status_code: None,
                is_retryable: false,
                response_headers: None,
                response_body: None,
                metadata: Some(BTreeMap::from([(
                    "code".to_owned(),
                    session_core::retry::LOCAL_REFUSED_CODE.to_owned(),
                )])),
            },
            other => MessageError::UnknownError { message: other.to_string() },
        }
    }

    /// Turns a classification into the error a caller branches on.
    fn from_classified(classified: ClassifiedError, failure: ApiCallFailure) -> Self {
        match classified {
            ClassifiedError::ContextOverflow { message, response_body } => {
                Self::ContextOverflow { message, response_body }
            }
            api @ ClassifiedError::Api { .. } => Self::Api(Box::new(ProviderApiError {
                status: failure.status_code,
                headers: failure.response_headers.unwrap_or_default(),
                body: failure.response_body,
                provider_retryable: failure.is_retryable,
                provider_message: failure.message,
                url: failure.url,
                classified: api,
            })),
        }
    }
}

/// The provider's retryable flag for an HTTP status, as the AI SDK sets it.
pub(crate) fn status_retryable(status: u16) -> bool {
    matches!(status, 408 | 409 | 429) || status >= 500
}

/// The error fields the providers put in their bodies.
#[derive(Deserialize, Default)]
struct ErrorBody {
    #[serde(default)]
    error: Option<ErrorField>,
    #[serde(default)]
    message: Option<String>,
    #[serde(rename = "type", default)]
    kind: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ErrorField {
    Object(ErrorDetail),
    Text(String),
    Other(serde::de::IgnoredAny),
}

#[derive(Deserialize, Default)]
struct ErrorDetail {
    #[serde(default)]
    message: Option<String>,
    #[serde(rename = "type", default)]
    kind: Option<String>,
    /// Gemini's status name (`UNAVAILABLE`, `RESOURCE_EXHAUSTED`, ...).
    #[serde(default)]
    status: Option<String>,
    /// OpenAI's error code; Gemini's is a number, which is not needed here.
    #[serde(default)]
    code: Option<CodeField>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum CodeField {
    Text(String),
    Other(serde::de::IgnoredAny),
}

/// What a provider's error body says.
#[derive(Debug, Default, PartialEq, Eq)]
struct BodyInfo {
    message: Option<String>,
    /// The error type (Anthropic, OpenAI) or status name (Gemini).
    kind: Option<String>,
    /// OpenAI's error code.
    code: Option<String>,
}

/// Gemini's Code Assist endpoint wraps the body in an array.
#[derive(Deserialize)]
#[serde(untagged)]
enum ErrorEnvelope {
    Many(Vec<ErrorBody>),
    One(ErrorBody),
}

/// The message, type and code of a provider's error body, when it has them.
fn read_error_body(body: &str) -> BodyInfo {
    let parsed = match serde_json::from_str::<ErrorEnvelope>(body) {
        Ok(ErrorEnvelope::One(body)) => body,
        Ok(ErrorEnvelope::Many(bodies)) => bodies.into_iter().next().unwrap_or_default(),
        Err(_) => return BodyInfo::default(),
    };
    match parsed.error {
        Some(ErrorField::Object(detail)) => BodyInfo {
            message: detail.message,
            kind: detail.kind.or(detail.status),
            code: match detail.code {
                Some(CodeField::Text(code)) => Some(code),
                Some(CodeField::Other(_)) | None => None,
            },
        },
        Some(ErrorField::Text(text)) => BodyInfo { message: Some(text), kind: parsed.kind, code: None },
        Some(ErrorField::Other(_)) | None => {
            BodyInfo { message: parsed.message, kind: parsed.kind, code: None }
        }
    }
}

/// Error types that the providers document as transient.
fn kind_retryable(kind: &str) -> bool {
    matches!(
        kind,
        "server_error"
            | "overloaded_error"
            | "api_error"
            | "rate_limit_error"
            | "UNAVAILABLE"
            | "RESOURCE_EXHAUSTED"
            | "INTERNAL"
            | "DEADLINE_EXCEEDED"
    )
}

/// Classifies a non-2xx HTTP response (the body read whole: error bodies are small).
pub fn api_failure(
    provider_id: &str,
    status: u16,
    headers: BTreeMap<String, String>,
    body: Option<String>,
    url: Option<String>,
) -> LlmError {
    let info = body.as_deref().map(read_error_body).unwrap_or_default();
    // An exhausted quota stays exhausted: OpenAI sends it as a 429 with this code.
    let quota_exhausted = info.code.as_deref() == Some("insufficient_quota")
        || info.kind.as_deref() == Some("insufficient_quota");
    // Without a message in the body the AI SDK reports the status text, which lets the
    // classifier complete it from the body.
    let message = info
        .message
        .filter(|m| !m.is_empty())
        .or_else(|| session_core::provider_error::status_text(status).map(str::to_owned))
        .unwrap_or_default();
    let provider_retryable = match headers.get("x-should-retry").map(String::as_str) {
        Some("true") => true,
        Some("false") => false,
        _ => status_retryable(status) && !quota_exhausted,
    };
    let failure = ApiCallFailure {
        message,
        status_code: Some(status),
        is_retryable: provider_retryable,
        response_body: body,
        response_headers: (!headers.is_empty()).then_some(headers),
        url,
    };
    let classified = parse_api_call_error(provider_id, &failure);
    LlmError::from_classified(classified, failure)
}

/// Classifies an error payload received inside a stream.
///
/// First session-core's stream-error table (OpenAI's coded errors); then, when the payload
/// carries a message, the HTTP-failure classifier, so that overflow wording inside a stream
/// (OpenAI-compatible servers, Gemini) is still recognised; else the payload's JSON text.
pub(crate) fn stream_error(provider_id: &str, status: Option<u16>, payload: &str) -> LlmError {
    let Ok(value) = serde_json::from_str::<Value>(payload) else {
        return LlmError::Stream { message: payload.to_owned() };
    };
    let body = Some(session_core::js_json::stringify(&value));
    if let Some(classified) = parse_stream_error(&value) {
        let failure =
            ApiCallFailure { status_code: status, response_body: body, ..ApiCallFailure::default() };
        return LlmError::from_classified(classified, failure);
    }
    let info = read_error_body(payload);
    let Some(message) = info.message.filter(|m| !m.is_empty()) else {
        return LlmError::Stream { message: session_core::js_json::stringify(&value) };
    };
    let is_retryable =
        info.kind.as_deref().is_some_and(kind_retryable) || status.is_some_and(status_retryable);
    let failure = ApiCallFailure {
        message,
        status_code: status,
        is_retryable,
        response_body: body,
        response_headers: None,
        url: None,
    };
    let classified = parse_api_call_error(provider_id, &failure);
    if classified.is_context_overflow() {
        return LlmError::from_classified(classified, failure);
    }
    // Without an HTTP status the classifier would append the whole payload to the message:
    // the message is derived from the provider's message alone, the payload kept beside it.
    let bare = ApiCallFailure { response_body: None, ..failure.clone() };
    let classified = match parse_api_call_error(provider_id, &bare) {
        ClassifiedError::Api { message, status_code, is_retryable, response_headers, metadata, .. } => {
            ClassifiedError::Api {
                message,
                status_code,
                is_retryable,
                response_headers,
                response_body: failure.response_body.clone(),
                metadata,
            }
        }
        overflow @ ClassifiedError::ContextOverflow { .. } => overflow,
    };
    LlmError::from_classified(classified, failure)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_are_read_in_every_shape() {
        let info = |message: Option<&str>, kind: Option<&str>, code: Option<&str>| BodyInfo {
            message: message.map(str::to_owned),
            kind: kind.map(str::to_owned),
            code: code.map(str::to_owned),
        };
        assert_eq!(
            read_error_body(r#"{"error":{"message":"m","type":"t","code":"c"}}"#),
            info(Some("m"), Some("t"), Some("c"))
        );
        assert_eq!(
            read_error_body(r#"[{"error":{"code":400,"message":"g","status":"UNAVAILABLE"}}]"#),
            info(Some("g"), Some("UNAVAILABLE"), None)
        );
        assert_eq!(read_error_body(r#"{"message":"top"}"#), info(Some("top"), None, None));
        assert_eq!(read_error_body(r#"{"error":"text"}"#), info(Some("text"), None, None));
        assert_eq!(read_error_body("<html>"), BodyInfo::default());
        assert_eq!(read_error_body("[]"), BodyInfo::default());
    }

    #[test]
    fn unrecognised_stream_payload_keeps_its_json() {
        let err = stream_error("anthropic", None, r#"{"type":"error","weird":1}"#);
        assert_eq!(err, LlmError::Stream { message: r#"{"type":"error","weird":1}"#.into() });
        assert_eq!(err.name(), "UnknownError");
    }

    #[test]
    fn display_texts() {
        assert_eq!(LlmError::Truncated { expected: "[DONE]" }.to_string(), "stream ended before [DONE]");
        assert_eq!(
            LlmError::MalformedEvent { index: 3, message: "EOF".into() }.to_string(),
            "malformed JSON in event 3: EOF"
        );
    }

    #[test]
    fn an_idle_timeout_is_retried_whatever_its_length() {
        for ms in [1, 300, 400, 500, 120_000] {
            let error = LlmError::IdleTimeout { after: Duration::from_millis(ms) }.to_message_error();
            assert!(session_core::retry::retryable(&error, None).is_some(), "{ms} ms: {error:?}");
        }
        // A malformed event and a cut stream are not transient: SPEC 7.2 stops on them.
        for error in [
            LlmError::MalformedEvent { index: 4, message: "EOF while parsing a value".into() },
            LlmError::Truncated { expected: "finishReason" },
        ] {
            assert_eq!(session_core::retry::retryable(&error.to_message_error(), None), None, "{error}");
        }
    }
}
