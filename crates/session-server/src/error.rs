//! Error responses in OpenCode's shape: `{"name": ..., "data": {"message": ...}}`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use session_runtime::RuntimeError;
use session_runtime::sessions::StoreError;

/// What went wrong with a request; its response carries the status and OpenCode's error body.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The request is malformed (400 `BadRequest`).
    #[error("{message}")]
    BadRequest {
        /// Where: `Body`, `Params` or `Query`.
        kind: &'static str,
        /// What is wrong, naming the field.
        message: String,
    },
    /// The session (or message, or permission ask) does not exist (404 `NotFoundError`).
    #[error("{0}")]
    NotFound(String),
    /// The session is running here or in another instance (409 `SessionBusyError`).
    #[error("{0}")]
    Busy(String),
    /// The token is missing or wrong (401 `Unauthorized`); the message says which.
    #[error("{0}: send Authorization: Bearer <token>, or the token as the password of Basic authentication")]
    Unauthorized(String),
    /// A web page of an origin that is not allowed sent the request (403 `Forbidden`).
    #[error("{0}")]
    Forbidden(String),
    /// The request names a `Host` this server does not answer without the token, as a page
    /// that rebinds its DNS name to loopback does (421 `MisdirectedRequest`).
    #[error("{0}")]
    Misdirected(String),
    /// A body the route reads as JSON is not declared `application/json` (415
    /// `UnsupportedMediaType`).
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// The body is larger than the server reads (413 `PayloadTooLarge`).
    #[error("{0}")]
    TooLarge(String),
    /// A route or feature of OpenCode's server this one does not offer (501
    /// `UnsupportedError`); the message says what and why.
    #[error("{0}")]
    Unsupported(String),
    /// Anything else: the server failed (500 `UnknownError`).
    #[error("{0}")]
    Internal(String),
}

impl ServerError {
    /// A body field is missing or wrong.
    pub(crate) fn body(message: impl Into<String>) -> Self {
        Self::BadRequest { kind: "Body", message: message.into() }
    }

    /// A path parameter is malformed.
    pub(crate) fn param(message: impl Into<String>) -> Self {
        Self::BadRequest { kind: "Params", message: message.into() }
    }

    /// A query parameter is malformed.
    pub(crate) fn query(message: impl Into<String>) -> Self {
        Self::BadRequest { kind: "Query", message: message.into() }
    }
}

impl From<StoreError> for ServerError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::NotFound { .. } => Self::NotFound(error.to_string()),
            StoreError::Leased { .. } => Self::Busy(error.to_string()),
            other => Self::Internal(other.to_string()),
        }
    }
}

impl From<RuntimeError> for ServerError {
    fn from(error: RuntimeError) -> Self {
        match error {
            RuntimeError::Busy(_) | RuntimeError::LeasedElsewhere { .. } => Self::Busy(error.to_string()),
            RuntimeError::Store(store) => store.into(),
            RuntimeError::RevertPointNotFound(_) => Self::body(format!("messageID: {error}")),
            RuntimeError::AgentNotFound { .. } => Self::body(format!("agent: {error}")),
            RuntimeError::UnknownProvider(_) | RuntimeError::UnknownModel { .. } => {
                Self::body(format!("model: {error}"))
            }
            other => Self::Internal(other.to_string()),
        }
    }
}

impl IntoResponse for ServerError {
    fn into_response(self) -> Response {
        let (status, body) = match self {
            Self::BadRequest { kind, message } => (
                StatusCode::BAD_REQUEST,
                json!({"name": "BadRequest", "data": {"message": message, "kind": kind}}),
            ),
            Self::NotFound(message) => {
                (StatusCode::NOT_FOUND, json!({"name": "NotFoundError", "data": {"message": message}}))
            }
            Self::Busy(message) => {
                (StatusCode::CONFLICT, json!({"name": "SessionBusyError", "data": {"message": message}}))
            }
            Self::Unauthorized(_) => (
                StatusCode::UNAUTHORIZED,
                json!({"name": "Unauthorized", "data": {"message": self.to_string()}}),
            ),
            Self::Forbidden(message) => {
                (StatusCode::FORBIDDEN, json!({"name": "Forbidden", "data": {"message": message}}))
            }
            Self::Misdirected(message) => (
                StatusCode::MISDIRECTED_REQUEST,
                json!({"name": "MisdirectedRequest", "data": {"message": message}}),
            ),
            Self::UnsupportedMediaType(message) => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                json!({"name": "UnsupportedMediaType", "data": {"message": message}}),
            ),
            Self::TooLarge(message) => (
                StatusCode::PAYLOAD_TOO_LARGE,
                json!({"name": "PayloadTooLarge", "data": {"message": message}}),
            ),
            Self::Unsupported(message) => (
                StatusCode::NOT_IMPLEMENTED,
                json!({"name": "UnsupportedError", "data": {"message": message}}),
            ),
            Self::Internal(message) => {
                tracing::warn!(%message, "request failed");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    json!({"name": "UnknownError", "data": {"message": message}}),
                )
            }
        };
        let mut response = (status, axum::Json(body)).into_response();
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}
