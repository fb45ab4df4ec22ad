//! The HTTP transport: a trait that knows no provider, and its reqwest implementation.

use std::collections::BTreeMap;
use std::fmt;

use bytes::Bytes;
use futures_util::StreamExt;

use crate::error::TransportError;
use crate::stream::ByteStream;

/// A POST request, fully built.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpRequest {
    /// The absolute URL.
    pub url: String,
    /// Request headers.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Bytes,
}

/// A response whose body is read as it arrives.
pub struct HttpResponse {
    /// The HTTP status.
    pub status: u16,
    /// Response headers, names lower-cased (repeated headers joined with `, `).
    pub headers: BTreeMap<String, String>,
    /// The body, chunk by chunk.
    pub body: ByteStream,
}

impl fmt::Debug for HttpResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpResponse")
            .field("status", &self.status)
            .field("headers", &self.headers)
            .finish_non_exhaustive()
    }
}

/// Sends HTTP requests; implemented over reqwest, and by tests over anything.
#[async_trait::async_trait]
pub trait HttpTransport: Send + Sync {
    /// POSTs `request` and returns as soon as the response headers are in.
    async fn post(&self, request: HttpRequest) -> Result<HttpResponse, TransportError>;
}

/// The reqwest transport (rustls).
#[derive(Debug, Clone)]
pub struct ReqwestTransport {
    client: reqwest::Client,
}

impl ReqwestTransport {
    /// A transport with a default client.
    pub fn new() -> Result<Self, TransportError> {
        let client = reqwest::Client::builder()
            .build()
            .map_err(|err| TransportError::new(format!("cannot build the HTTP client: {err}")))?;
        Ok(Self { client })
    }

    /// A transport over a client configured by the caller (proxies, timeouts, certificates).
    pub fn with_client(client: reqwest::Client) -> Self {
        Self { client }
    }
}

/// The error's text with its sources, which is where reqwest puts the useful part.
fn describe(err: &reqwest::Error) -> String {
    let mut text = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[async_trait::async_trait]
impl HttpTransport for ReqwestTransport {
    async fn post(&self, request: HttpRequest) -> Result<HttpResponse, TransportError> {
        let mut builder = self.client.post(&request.url).body(request.body);
        for (name, value) in &request.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        let response = builder.send().await.map_err(|err| TransportError::new(describe(&err)))?;
        let status = response.status().as_u16();
        let mut headers: BTreeMap<String, String> = BTreeMap::new();
        for (name, value) in response.headers() {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            headers
                .entry(name.as_str().to_ascii_lowercase())
                .and_modify(|existing| {
                    existing.push_str(", ");
                    existing.push_str(&value);
                })
                .or_insert(value);
        }
        let body =
            response.bytes_stream().map(|chunk| chunk.map_err(|err| TransportError::new(describe(&err))));
        Ok(HttpResponse { status, headers, body: body.boxed() })
    }
}
