//! An HTTP client of the session server's API for tests: JSON requests and a reader of the
//! `/event` stream. It panics where a test would fail (a refused connection, a body that is
//! not JSON, an event that does not come in time).

#![expect(clippy::unwrap_used, clippy::expect_used, reason = "a test client: a failure fails the test")]

use std::time::Duration;

use futures_util::StreamExt as _;
use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// How long a test waits for an event before failing (a bound on hangs, not a speed check).
pub const PATIENCE: Duration = Duration::from_secs(60);

/// A JSON client of one server (panics on transport failures: it is for tests).
#[derive(Debug, Clone)]
pub struct ApiClient {
    /// `http://address:port` of the server.
    pub base: String,
    /// The HTTP client.
    pub http: reqwest::Client,
    /// The bearer token sent with every request, if any.
    pub token: Option<String>,
}

impl ApiClient {
    /// A client of the server at `base`, without a token.
    pub fn new(base: impl Into<String>) -> Self {
        Self { base: base.into(), http: reqwest::Client::new(), token: None }
    }

    /// Sends a request with an optional JSON body; returns the status and the JSON answer
    /// (`null` when empty).
    pub async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        self.raw(method, path, body.map(|b| b.to_string())).await
    }

    /// Sends a request with a raw body (declared `application/json`).
    pub async fn raw(&self, method: &str, path: &str, body: Option<String>) -> (StatusCode, Value) {
        let mut request = self.request(method, path);
        if let Some(body) = body {
            request = request.header("content-type", "application/json").body(body);
        }
        let (status, _, value) = Self::send(request).await;
        (status, value)
    }

    /// A request to `path` carrying the token (if any), for tests that set headers of their
    /// own (`Host`, `Origin`, `Content-Type`).
    pub fn request(&self, method: &str, path: &str) -> reqwest::RequestBuilder {
        let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(token) = &self.token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        request
    }

    /// Sends `request`; returns the status, the headers and the JSON answer (`null` when
    /// empty).
    pub async fn send(request: reqwest::RequestBuilder) -> (StatusCode, HeaderMap, Value) {
        let response = request.send().await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let text = response.text().await.unwrap();
        let value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON ({status}): {text}"))
        };
        (status, headers, value)
    }

    /// Creates a session and returns its id.
    pub async fn session(&self) -> String {
        let (status, session) = self.call("post", "/session", Some(json!({"title": "test"}))).await;
        assert_eq!(status, StatusCode::OK, "{session}");
        session["id"].as_str().unwrap().to_owned()
    }

    /// Opens the event stream.
    pub async fn events(&self) -> Events {
        let response = self.request("get", "/event").send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert!(
            response.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"),
            "{:?}",
            response.headers()
        );
        Events { stream: Box::pin(response.bytes_stream()), buffer: String::new(), seen: Vec::new() }
    }
}

type ByteStream = std::pin::Pin<Box<dyn futures_util::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>;

/// The `/event` stream of one client, parsed into `{"type", "properties"}` values.
pub struct Events {
    stream: ByteStream,
    buffer: String,
    /// Every event read so far, in order.
    pub seen: Vec<Value>,
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events").field("seen", &self.seen.len()).finish_non_exhaustive()
    }
}

impl Events {
    /// The next event (fails the test after [`PATIENCE`]).
    pub async fn next(&mut self) -> Value {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let chunk: String = self.buffer.drain(..end + 2).collect();
                let data: Vec<&str> = chunk
                    .lines()
                    .filter_map(|line| line.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                if data.is_empty() {
                    continue; // a keep-alive comment
                }
                let event: Value = serde_json::from_str(&data.join("\n")).unwrap();
                self.seen.push(event.clone());
                return event;
            }
            let chunk = tokio::time::timeout(PATIENCE, self.stream.next())
                .await
                .unwrap_or_else(|_| panic!("no event in time; seen: {:#?}", self.types()))
                .expect("the event stream ended")
                .unwrap();
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }

    /// Reads until an event of `kind` for which `matches` holds, and returns it.
    pub async fn until(&mut self, kind: &str, matches: impl Fn(&Value) -> bool) -> Value {
        loop {
            let event = self.next().await;
            if event["type"] == kind && matches(&event["properties"]) {
                return event;
            }
        }
    }

    /// The types seen so far.
    pub fn types(&self) -> Vec<String> {
        self.seen.iter().map(|e| e["type"].as_str().unwrap_or_default().to_owned()).collect()
    }
}
