//! Request bodies read as JSON: declared `application/json`, or refused.
//!
//! A web page may send a "simple" cross-origin request (`text/plain`, a form) without a
//! preflight; requiring the JSON content type means such a request never reaches a handler.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, Request};
use axum::http::{HeaderValue, StatusCode, header};
use serde::de::DeserializeOwned;

use crate::error::ServerError;

/// A body that a route reads as JSON: its `Content-Type` is `application/json` (parameters
/// such as `charset` allowed), or it is empty and declares no type.
#[derive(Debug)]
pub(crate) struct JsonBody(pub(crate) Bytes);

impl<S: Send + Sync> FromRequest<S> for JsonBody {
    type Rejection = ServerError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ServerError> {
        let declared = request.headers().get(header::CONTENT_TYPE).cloned();
        if let Some(declared) = &declared
            && !is_json(declared)
        {
            // Refused before the body is read: nothing of it is looked at.
            return Err(ServerError::UnsupportedMediaType(format!(
                "Content-Type {} is not accepted: send the body as application/json",
                quoted(declared)
            )));
        }
        let body = Bytes::from_request(request, state).await.map_err(bytes_error)?;
        if declared.is_none() && !blank(&body) {
            return Err(ServerError::UnsupportedMediaType(
                "the body has no Content-Type: send it as application/json".into(),
            ));
        }
        Ok(Self(body))
    }
}

/// `application/json`, with any parameters.
fn is_json(value: &HeaderValue) -> bool {
    value
        .to_str()
        .ok()
        .and_then(|value| value.parse::<mime::Mime>().ok())
        .is_some_and(|mime| mime.type_() == mime::APPLICATION && mime.subtype() == mime::JSON)
}

fn quoted(value: &HeaderValue) -> String {
    let text = String::from_utf8_lossy(value.as_bytes());
    format!("{:?}", text.chars().take(100).collect::<String>())
}

fn bytes_error(rejection: BytesRejection) -> ServerError {
    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ServerError::TooLarge(format!("body: {}", rejection.body_text()))
    } else {
        ServerError::body(format!("body: {}", rejection.body_text()))
    }
}

fn blank(body: &[u8]) -> bool {
    body.iter().all(u8::is_ascii_whitespace)
}

/// Parses a JSON body; errors name the field (`model.providerID: missing field ...`).
pub(crate) fn parse_body<T: DeserializeOwned + Default>(
    body: &JsonBody,
    required: bool,
) -> Result<T, ServerError> {
    let body = &body.0;
    if blank(body) {
        if required {
            return Err(ServerError::body("body: a JSON object is required"));
        }
        return Ok(T::default());
    }
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        if inner.is_syntax() || inner.is_eof() {
            ServerError::body(format!("body: not valid JSON: {inner}"))
        } else if path == "." {
            ServerError::body(inner.to_string())
        } else {
            ServerError::body(format!("{path}: {inner}"))
        }
    })?;
    deserializer.end().map_err(|error| ServerError::body(format!("body: not valid JSON: {error}")))?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::is_json;
    use axum::http::HeaderValue;

    #[test]
    fn only_application_json_is_json() {
        for good in ["application/json", "Application/JSON", "application/json; charset=utf-8"] {
            assert!(is_json(&HeaderValue::from_static(good)), "{good}");
        }
        for bad in [
            "text/plain",
            "text/plain; charset=application/json",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/jsonp",
            "application/json-patch+json",
            "",
        ] {
            assert!(!is_json(&HeaderValue::from_static(bad)), "{bad}");
        }
    }
}
