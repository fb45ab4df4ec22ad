//! The older HTTP+SSE transport (MCP 2024-11-05), for remote servers that offer only that:
//! a GET opens an event stream whose first `endpoint` event names where to POST messages;
//! the server's messages come back as `message` events. rmcp 3 dropped this client, so the
//! transport is built here from rmcp's own sink-and-stream adapter and the same SSE parser; the
//! JSON-RPC itself stays rmcp's.

use std::pin::Pin;

use futures_util::{Sink, Stream, StreamExt as _};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use sse_stream::SseStream;

use crate::error::McpError;
use crate::spec::RemoteServer;

/// The sending half: each message is one POST to the endpoint.
pub(crate) type SseSink = Pin<Box<dyn Sink<ClientJsonRpcMessage, Error = std::io::Error> + Send>>;
/// The receiving half: the server's `message` events, parsed.
pub(crate) type SseMessages = Pin<Box<dyn Stream<Item = ServerJsonRpcMessage> + Send>>;

/// Opens the event stream of `remote` and waits for its `endpoint` event.
pub(crate) async fn connect(
    name: &str,
    remote: &RemoteServer,
    headers: reqwest::header::HeaderMap,
) -> Result<(SseSink, SseMessages), McpError> {
    let failed = |reason: String| McpError::Protocol { name: name.to_owned(), reason };
    let client = reqwest::Client::new();
    let base = reqwest::Url::parse(&remote.url).map_err(|error| failed(format!("invalid url: {error}")))?;
    let response = client
        .get(base.clone())
        .headers(headers.clone())
        .header(reqwest::header::ACCEPT, "text/event-stream")
        .send()
        .await
        .map_err(|error| failed(format!("SSE: {error}")))?;
    if !response.status().is_success() {
        return Err(failed(format!("SSE: HTTP {}", response.status())));
    }
    let mut events = SseStream::from_bytes_stream(response.bytes_stream());
    let endpoint = loop {
        match events.next().await {
            Some(Ok(event)) if event.event.as_deref() == Some("endpoint") => {
                let data = event.data.unwrap_or_default();
                let endpoint =
                    base.join(data.trim()).map_err(|error| failed(format!("SSE endpoint: {error}")))?;
                // The messages go to the server that was configured, nowhere else.
                if endpoint.origin() != base.origin() {
                    return Err(failed(format!(
                        "SSE endpoint {endpoint} is not on {}",
                        base.origin().ascii_serialization()
                    )));
                }
                break endpoint;
            }
            Some(Ok(_)) => continue,
            Some(Err(error)) => return Err(failed(format!("SSE: {error}"))),
            None => return Err(failed("SSE: the stream ended before its endpoint event".to_owned())),
        }
    };
    let messages = events.filter_map(|event| async move {
        let event = match event {
            Ok(event) => event,
            Err(error) => {
                tracing::debug!(%error, "MCP SSE stream error");
                return None;
            }
        };
        if !matches!(event.event.as_deref(), None | Some("message")) {
            tracing::debug!(event = ?event.event, "MCP SSE event of an unknown type skipped");
            return None;
        }
        match serde_json::from_str::<ServerJsonRpcMessage>(event.data.as_deref().unwrap_or_default()) {
            Ok(message) => Some(message),
            Err(error) => {
                tracing::debug!(%error, "MCP SSE message that is not JSON-RPC skipped");
                None
            }
        }
    });
    let sink = futures_util::sink::unfold(
        (client, endpoint, headers),
        |(client, endpoint, headers), message: ClientJsonRpcMessage| async move {
            let body = serde_json::to_vec(&message).map_err(std::io::Error::other)?;
            let response = client
                .post(endpoint.clone())
                .headers(headers.clone())
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body)
                .send()
                .await
                .map_err(std::io::Error::other)?;
            if !response.status().is_success() {
                return Err(std::io::Error::other(format!("SSE POST: HTTP {}", response.status())));
            }
            Ok((client, endpoint, headers))
        },
    );
    Ok((Box::pin(sink), Box::pin(messages)))
}
