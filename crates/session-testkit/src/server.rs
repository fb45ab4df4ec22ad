//! The loopback server: a script served in each provider's wire format, with pacing, faults, a
//! request log and the tool-call invariant checked on every request.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Map, Value, json};
use session_llm::{
    Api, Fault, FaultAction, PlannedResponse, ProviderEndpoint, Reply, RequestKind, Script, ScriptRunner,
    WireEnding, WireStream, wire_stream,
};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::listener::{Connection, ResettableListener};
use crate::wire;

/// The largest request body read (histories of long sessions are large; this is a test server).
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// How long [`TestServer::shutdown`] waits for open connections before dropping them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// One request as the server saw and answered it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordedRequest {
    /// Its number among all requests (1-based).
    pub index: u64,
    /// Its number among main requests, for a main request.
    pub main_index: Option<u64>,
    /// When it arrived, on the monotonic clock, counted from the server's start: the gap
    /// between two requests is what a client waited (a retry delay, for instance).
    #[serde(serialize_with = "millis")]
    pub received: Duration,
    /// When it arrived, in Unix milliseconds (wall clock): comparable with the epoch times a
    /// client reports, such as a retry status's `next`, and with HTTP dates.
    pub received_unix_ms: u64,
    /// The wire format of the endpoint it reached.
    #[serde(serialize_with = "api_name")]
    pub api: Api,
    /// The request path (with the query).
    pub path: String,
    /// Its kind (main, title, summary, aux).
    pub kind: RequestKind,
    /// The turn it was at.
    pub turn: usize,
    /// The fault that fired on it.
    pub fault: Option<Fault>,
    /// The HTTP status answered; `None` when the connection was reset before any answer.
    pub status: Option<u16>,
    /// Whether the client asked for a stream.
    pub stream: bool,
    /// The model named by the request.
    pub model: Option<String>,
    /// How many messages (items, contents) its history had.
    pub messages: usize,
    /// The names of the tools offered.
    pub tool_names: Vec<String>,
    /// The size of the system prompt, in characters.
    pub system_chars: usize,
    /// Request headers, credentials left out.
    pub headers: BTreeMap<String, String>,
    /// The JSON body (`{}` when the body was not JSON).
    pub body: Value,
    /// Broken invariants of its history.
    pub violations: Vec<String>,
}

fn millis<S: serde::Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(duration.as_secs_f64() * 1000.0)
}

fn api_name<S: serde::Serializer>(api: &Api, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(api.as_str())
}

/// A broken invariant, and the request it was found in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// The request's number (1-based).
    pub request: u64,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "request {}: {}", self.request, self.message)
    }
}

struct Shared {
    runner: ScriptRunner,
    log: Mutex<Vec<RecordedRequest>>,
    /// The server's start, the origin of [`RecordedRequest::received`].
    started: Instant,
    /// Ends stalled streams and pending delays when the server shuts down.
    shutdown: CancellationToken,
}

/// A scripted provider over real HTTP on `127.0.0.1`: Chat Completions
/// (`POST /v1/chat/completions`), Responses (`POST /v1/responses`), Anthropic Messages
/// (`POST /v1/messages`) and Gemini (`POST /v1beta/models/{model}:streamGenerateContent`),
/// plus `GET /v1/models` and `GET /healthz`. Dropping it stops the server.
pub struct TestServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: Option<JoinHandle<()>>,
}

impl fmt::Debug for TestServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TestServer").field("addr", &self.addr).finish_non_exhaustive()
    }
}

impl TestServer {
    /// Binds `127.0.0.1:0` and serves `script` (must be called inside a tokio runtime).
    pub async fn start(script: Script) -> io::Result<Self> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let shutdown = CancellationToken::new();
        let shared = Arc::new(Shared {
            runner: ScriptRunner::new(script),
            log: Mutex::new(Vec::new()),
            started: Instant::now(),
            shutdown: shutdown.clone(),
        });
        let app = Router::new()
            .fallback(handle)
            .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
            .with_state(Arc::clone(&shared))
            .into_make_service_with_connect_info::<Connection>();
        let serve =
            axum::serve(ResettableListener(listener), app).with_graceful_shutdown(shutdown.cancelled_owned());
        let task = tokio::spawn(async move {
            // Serving only ends on shutdown; accept errors are retried by the listener.
            let _ = serve.await;
        });
        Ok(Self { addr, shared, task: Some(task) })
    }

    /// The base URL of the OpenAI and Anthropic endpoints: `http://127.0.0.1:PORT/v1`.
    pub fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The base URL a provider of `api` is configured with (`/v1beta` for Gemini).
    pub fn base_url(&self, api: Api) -> String {
        match api {
            Api::Gemini => format!("http://{}/v1beta", self.addr),
            Api::OpenAiChat | Api::OpenAiResponses | Api::Anthropic => self.url(),
        }
    }

    /// A provider configuration pointing at this server, with a dummy key.
    pub fn provider_config(&self, provider_id: &str, api: Api) -> ProviderEndpoint {
        let mut config = ProviderEndpoint::new(provider_id, api, Some("test-key".to_owned()));
        config.base_url = self.base_url(api);
        config
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.log.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Every broken invariant so far.
    pub fn violations(&self) -> Vec<Violation> {
        self.requests()
            .into_iter()
            .flat_map(|request| {
                let index = request.index;
                request.violations.into_iter().map(move |message| Violation { request: index, message })
            })
            .collect()
    }

    /// Fails the calling test when any request broke an invariant.
    ///
    /// # Panics
    /// When [`TestServer::violations`] is not empty, listing them.
    #[track_caller]
    pub fn assert_invariants(&self) {
        let violations = self.violations();
        if !violations.is_empty() {
            let list: Vec<String> = violations.iter().map(ToString::to_string).collect();
            panic!("{} wire invariant violation(s):\n{}", list.len(), list.join("\n"));
        }
    }

    /// Stops accepting, ends stalled streams and waits (a few seconds at most) for the
    /// connections to close.
    pub async fn shutdown(mut self) {
        self.shared.shutdown.cancel();
        if let Some(mut task) = self.task.take()
            && tokio::time::timeout(SHUTDOWN_GRACE, &mut task).await.is_err()
        {
            task.abort();
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shared.shutdown.cancel();
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// The wall clock in Unix milliseconds (0 before 1970, which a test machine never is).
fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| u64::try_from(since.as_millis()).unwrap_or(u64::MAX))
}

/// Written in a script's text (or reasoning, or tool arguments), this is replaced in each
/// streamed chunk by the Unix time in microseconds (16 digits) at which the server hands that
/// chunk to the connection: a client can then measure how long a delta took to reach it.
pub const SENT_US: &str = "{sent_us}";

/// The wall clock in Unix microseconds (0 before 1970).
fn unix_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| u64::try_from(since.as_micros()).unwrap_or(u64::MAX))
}

/// `chunk` with every [`SENT_US`] replaced by `now_us`, zero-padded to 16 digits (a fixed width,
/// so that a client can find the stamps in a stream of them); the chunk as it is when it has none.
fn stamp_chunk(chunk: Bytes, now_us: u64) -> Bytes {
    let placeholder = SENT_US.as_bytes();
    if !chunk.windows(placeholder.len()).any(|window| window == placeholder) {
        return chunk;
    }
    let stamp = format!("{now_us:016}");
    let mut out = Vec::with_capacity(chunk.len() + 8);
    let mut rest = &chunk[..];
    while let Some(at) = rest.windows(placeholder.len()).position(|window| window == placeholder) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(stamp.as_bytes());
        rest = &rest[at + placeholder.len()..];
    }
    out.extend_from_slice(rest);
    Bytes::from(out)
}

/// Which wire format a path belongs to, and the model a Gemini path names.
fn endpoint(path: &str) -> Option<(Api, Option<String>)> {
    if path.ends_with("/chat/completions") {
        return Some((Api::OpenAiChat, None));
    }
    if path.ends_with("/responses") {
        return Some((Api::OpenAiResponses, None));
    }
    if path.ends_with("/messages") {
        return Some((Api::Anthropic, None));
    }
    let (_, rest) = path.split_once("/models/")?;
    let (model, action) = rest.split_once(':')?;
    // Only the streaming method: the adapters never call `generateContent`.
    (action == "streamGenerateContent").then(|| (Api::Gemini, Some(model.to_owned())))
}

fn json_response(status: u16, body: &Value, headers: &[(String, String)]) -> Response {
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let map = response.headers_mut();
    map.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) =
            (HeaderName::try_from(name.as_str()), HeaderValue::try_from(value.as_str()))
        {
            map.insert(name, value);
        }
    }
    response
}

fn not_found(path: &str) -> Response {
    json_response(404, &json!({"error": {"message": format!("not found: {path}")}}), &[])
}

/// Request headers for the log, credentials left out.
fn logged_headers(headers: &HeaderMap) -> BTreeMap<String, String> {
    headers
        .iter()
        .filter(|(name, _)| !matches!(name.as_str(), "authorization" | "x-api-key" | "x-goog-api-key"))
        .map(|(name, value)| {
            (name.as_str().to_owned(), String::from_utf8_lossy(value.as_bytes()).into_owned())
        })
        .collect()
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(connection): ConnectInfo<Connection>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    // Taken first, before the body is parsed, so that a recorded gap never exceeds the
    // client's real wait by the server's own work.
    let received = shared.started.elapsed();
    let received_unix_ms = unix_ms();
    let path = uri.path();
    if method == Method::GET {
        if path.trim_end_matches('/').ends_with("/models") {
            let script = shared.runner.script();
            let id = if script.name.is_empty() { "mock-model" } else { script.name.as_str() };
            return json_response(
                200,
                &json!({"object": "list", "data": [{"id": id, "object": "model", "created": 0, "owned_by": "mock"}]}),
                &[],
            );
        }
        if path.starts_with("/healthz") {
            return json_response(200, &json!({"ok": true}), &[]);
        }
        return not_found(path);
    }
    let Some((api, path_model)) = endpoint(path).filter(|_| method == Method::POST) else {
        return not_found(path);
    };
    let json: Value = serde_json::from_slice(&body).unwrap_or_else(|_| Value::Object(Map::new()));
    let read = wire::read(api, &json, body.len());
    let plan = shared.runner.plan(api, &read.facts);
    let model = path_model.or_else(|| json.get("model").and_then(Value::as_str).map(str::to_owned));
    let stream = match api {
        Api::Gemini => true,
        _ => json.get("stream").and_then(Value::as_bool).unwrap_or(false),
    };
    let status = match &plan.response {
        PlannedResponse::Fault(FaultAction::Respond { status, .. }) => Some(*status),
        PlannedResponse::Fault(FaultAction::ResetBeforeResponse) => None,
        PlannedResponse::Reply(_) | PlannedResponse::Fault(FaultAction::Stream { .. }) => Some(200),
    };
    let record = RecordedRequest {
        index: plan.index,
        main_index: plan.main_index,
        received,
        received_unix_ms,
        api,
        path: uri.path_and_query().map_or_else(|| path.to_owned(), |p| p.as_str().to_owned()),
        kind: plan.kind,
        turn: plan.turn,
        fault: plan.fault.clone(),
        status,
        stream,
        model: model.clone(),
        messages: read.messages,
        tool_names: read.facts.tool_names.clone(),
        system_chars: read.facts.system.chars().count(),
        headers: logged_headers(&headers),
        body: json,
        violations: read.violations,
    };
    shared.log.lock().unwrap_or_else(PoisonError::into_inner).push(record);

    let model = model.unwrap_or_else(|| "mock-model".to_owned());
    let (reply, fault) = match plan.response {
        PlannedResponse::Reply(reply) => (reply, None),
        PlannedResponse::Fault(FaultAction::Respond { status, headers, body }) => {
            let body = serde_json::from_str(&body).unwrap_or(Value::String(body));
            return json_response(status, &body, &headers);
        }
        PlannedResponse::Fault(FaultAction::ResetBeforeResponse) => {
            connection.reset.cancel();
            // Never delivered: writing it fails and the connection closes with a reset.
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
        PlannedResponse::Fault(FaultAction::Stream { reply, fault, after }) => (reply, Some((fault, after))),
    };
    if !reply.delay.is_zero() {
        tokio::select! {
            () = tokio::time::sleep(reply.delay) => {}
            () = shared.shutdown.cancelled() => {}
        }
    }
    if api == Api::OpenAiChat && !stream && fault.is_none() && reply.recorded.is_none() {
        return json_response(200, &chat_completion(&reply, &model), &[]);
    }
    let wire = wire_stream(api, &reply, &model, fault);
    sse_response(wire, reply.chunk_delay, connection.reset, shared.shutdown.clone())
}

/// A non-streamed Chat Completions answer (mockllm's `_chat_plain`).
fn chat_completion(reply: &Reply, model: &str) -> Value {
    let mut message = json!({"role": "assistant", "content": if reply.text.is_empty() { Value::Null } else { json!(reply.text) }});
    if !reply.calls.is_empty() {
        message["tool_calls"] = reply
            .calls
            .iter()
            .map(|call| {
                json!({"id": call.id, "type": "function",
                               "function": {"name": call.name, "arguments": call.arguments()}})
            })
            .collect();
    }
    let usage = &reply.usage;
    json!({
        "id": format!("chatcmpl-mock-{}", reply.turn), "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": message,
                     "finish_reason": if reply.calls.is_empty() { "stop" } else { "tool_calls" }}],
        "usage": {
            "prompt_tokens": usage.prompt, "completion_tokens": usage.completion,
            "total_tokens": usage.prompt.saturating_add(usage.completion),
            "prompt_tokens_details": {"cached_tokens": usage.cached},
            "completion_tokens_details": {"reasoning_tokens": usage.reasoning},
        },
    })
}

/// What the body stream does next.
enum Pace {
    Chunks(VecDeque<Bytes>),
    Done,
}

/// The chunks as an SSE body: a pause before each (and its [`SENT_US`] stamps), then the ending.
fn sse_response(
    wire: WireStream,
    delay: Duration,
    reset: CancellationToken,
    shutdown: CancellationToken,
) -> Response {
    let ending = wire.ending;
    let state = Pace::Chunks(wire.chunks.into());
    let body = futures_util::stream::unfold(state, move |state| {
        let (reset, shutdown) = (reset.clone(), shutdown.clone());
        async move {
            let Pace::Chunks(mut chunks) = state else {
                return None;
            };
            if let Some(chunk) = chunks.pop_front() {
                if !delay.is_zero() {
                    tokio::select! {
                        () = tokio::time::sleep(delay) => {}
                        () = shutdown.cancelled() => return None,
                    }
                }
                // Stamped after the pause: the moment the chunk leaves for the client.
                let chunk = stamp_chunk(chunk, unix_us());
                return Some((Ok::<Bytes, io::Error>(chunk), Pace::Chunks(chunks)));
            }
            match ending {
                WireEnding::End => None,
                WireEnding::Reset => {
                    reset.cancel();
                    Some((Err(io::Error::new(io::ErrorKind::ConnectionReset, "scripted reset")), Pace::Done))
                }
                WireEnding::Stall => {
                    // No more bytes until the server shuts down; the client's idle timeout
                    // (or its cancellation) is what ends the request.
                    shutdown.cancelled().await;
                    None
                }
            }
        }
    });
    let mut response = Response::new(Body::from_stream(body));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

#[cfg(test)]
mod tests {
    use axum::body::Bytes;

    use super::stamp_chunk;

    #[test]
    fn stamps_replace_every_placeholder_with_sixteen_digits() {
        let chunk = Bytes::from_static(b"data: {\"content\":\"{sent_us} a{sent_us}\"}\n\n");
        let stamped = stamp_chunk(chunk, 1_764_000_000_123_456);
        assert_eq!(&stamped[..], &b"data: {\"content\":\"1764000000123456 a1764000000123456\"}\n\n"[..]);
        assert_eq!(&stamp_chunk(Bytes::from_static(b"{sent_us}"), 42)[..], b"0000000000000042");
        let plain = Bytes::from_static(b"data: {\"content\":\"{sent\"}\n\n");
        assert_eq!(stamp_chunk(plain.clone(), 1), plain);
    }
}
