//! The adapters over real HTTP on loopback: an axum server serves the fixtures in random chunk
//! sizes with delays, errors, hangs and cut connections.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::post;
use futures_util::StreamExt;
use pretty_assertions::assert_eq;
use session_core::LlmEvent;
use session_llm::{
    Api, HttpProvider, LlmError, LlmRequest, Provider, ProviderEndpoint, ReqwestTransport, StreamLimits,
    replay,
};
use tokio_util::sync::CancellationToken;

use super::support::{fixtures_dir, stream_fixtures};

/// A request as the server saw it.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    headers: BTreeMap<String, String>,
    body: serde_json::Value,
}

#[derive(Clone, Default)]
struct Server {
    seen: Arc<Mutex<Vec<Seen>>>,
}

/// xorshift64*: a tiny deterministic generator, so that every run chunks the same way.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// What the server does after the first `limit` bytes of the fixture.
#[derive(Clone, Copy)]
enum After {
    /// Nothing: the whole fixture is sent.
    Complete,
    /// Stops sending but keeps the connection open.
    Hang(usize),
    /// Closes the connection.
    Close(usize),
}

/// The fixture body in random chunks of 1..=512 bytes, with a pause of 0-2 ms before some.
fn chunked_body(bytes: Vec<u8>, seed: u64, after: After) -> Body {
    let limit = match after {
        After::Complete => bytes.len(),
        After::Hang(n) | After::Close(n) => n.min(bytes.len()),
    };
    let hang = matches!(after, After::Hang(_));
    let state = (bytes, 0usize, Rng(seed | 1));
    let stream = futures_util::stream::unfold(state, move |(bytes, at, mut rng)| async move {
        if at >= limit {
            if hang {
                futures_util::future::pending::<()>().await;
            }
            return None;
        }
        if rng.below(4) == 0 {
            tokio::time::sleep(Duration::from_millis(rng.below(3))).await;
        }
        let size = 1 + usize::try_from(rng.below(512)).unwrap();
        let end = (at + size).min(limit);
        let chunk = Bytes::copy_from_slice(&bytes[at..end]);
        Some((Ok::<_, Infallible>(chunk), (bytes, end, rng)))
    });
    Body::from_stream(stream)
}

/// `POST /{mode}/{seed}/{fixture}/{*rest}`: serves fixture number `fixture` as `mode` says.
async fn handler(
    State(server): State<Server>,
    Path((mode, seed, index, rest)): Path<(String, u64, usize, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    server.seen.lock().unwrap().push(Seen {
        path: format!("/{rest}"),
        headers: headers
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_str().unwrap_or_default().to_owned()))
            .collect(),
        body: serde_json::from_slice(&body).unwrap_or_default(),
    });
    if let Some(name) = mode.strip_prefix("error-") {
        let text =
            std::fs::read_to_string(fixtures_dir().join("errors").join(format!("{name}.json"))).unwrap();
        let envelope: serde_json::Value = serde_json::from_str(&text).unwrap();
        let mut response = Response::builder().status(envelope["status"].as_u64().unwrap() as u16);
        for (name, value) in envelope["headers"].as_object().cloned().unwrap_or_default() {
            if name != "content-length" {
                response = response.header(name, value.as_str().unwrap());
            }
        }
        let body = envelope["body"].as_str().unwrap_or_default().to_owned();
        return response.body(Body::from(body)).unwrap();
    }
    let bytes = stream_fixtures()[index].bytes.clone();
    let half = bytes.len() / 2;
    let after = match mode.as_str() {
        "hang" => After::Hang(half),
        "close" => After::Close(half),
        _ => After::Complete,
    };
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream")
        .body(chunked_body(bytes, seed, after))
        .unwrap()
}

async fn start() -> (SocketAddr, Server) {
    let server = Server::default();
    let router =
        Router::new().route("/{mode}/{seed}/{index}/{*rest}", post(handler)).with_state(server.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (addr, server)
}

fn http_provider(addr: SocketAddr, api: Api, prefix: &str, limits: StreamLimits) -> HttpProvider {
    let mut config = ProviderEndpoint::new("test", api, Some("secret".into()));
    config.base_url = format!("http://{addr}/{prefix}");
    config.limits = limits;
    HttpProvider::new(config, Arc::new(ReqwestTransport::new().unwrap()))
}

fn request(cancel: CancellationToken) -> LlmRequest {
    let messages = serde_json::from_value(serde_json::json!([
        {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    ]))
    .unwrap();
    LlmRequest { model: "m".into(), messages, cancel, ..LlmRequest::default() }
}

/// Collects a stream into its events and its error.
async fn collect(provider: &HttpProvider, request: LlmRequest) -> (Vec<LlmEvent>, Option<LlmError>) {
    let mut stream = provider.stream(request);
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(err) => {
                assert!(stream.next().await.is_none(), "an error ends the stream");
                return (events, Some(err));
            }
        }
    }
    (events, None)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fixture_over_http_in_random_chunks_gives_the_replay_events() {
    let (addr, server) = start().await;
    for (index, fixture) in stream_fixtures().iter().enumerate() {
        let expected = replay(fixture.api, &fixture.bytes);
        for seed in [7_u64, 1_234_567] {
            let provider =
                http_provider(addr, fixture.api, &format!("full/{seed}/{index}"), StreamLimits::default());
            let (events, error) = collect(&provider, request(CancellationToken::new())).await;
            assert_eq!(events, expected.events, "{} (seed {seed})", fixture.name);
            assert_eq!(error, expected.error, "{} (seed {seed})", fixture.name);
        }
    }
    let seen = server.seen.lock().unwrap();
    assert_eq!(seen.len(), stream_fixtures().len() * 2);
    let anthropic = seen.iter().find(|s| s.path == "/messages").unwrap();
    assert_eq!(anthropic.headers.get("x-api-key").map(String::as_str), Some("secret"));
    assert_eq!(anthropic.headers.get("anthropic-version").map(String::as_str), Some("2023-06-01"));
    assert_eq!(anthropic.body["stream"], serde_json::json!(true));
    let chat = seen.iter().find(|s| s.path == "/chat/completions").unwrap();
    assert_eq!(chat.headers.get("authorization").map(String::as_str), Some("Bearer secret"));
    assert!(seen.iter().any(|s| s.path == "/models/m:streamGenerateContent"));
}

#[tokio::test]
async fn http_errors_become_classified_api_errors() {
    let (addr, _) = start().await;
    let provider =
        http_provider(addr, Api::Anthropic, "error-anthropic-529-overloaded/0/0", StreamLimits::default());
    let (events, error) = collect(&provider, request(CancellationToken::new())).await;
    assert!(events.is_empty());
    let Some(LlmError::Api(api)) = error else { panic!("{error:?}") };
    assert_eq!((api.status, api.message(), api.retryable()), (Some(529), "Overloaded", true));
    assert_eq!(api.headers.get("x-should-retry").map(String::as_str), Some("true"));
    assert_eq!(
        api.body.as_deref(),
        Some(r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#)
    );
    assert!(api.url.as_deref().unwrap().ends_with("/messages"));

    let provider = http_provider(
        addr,
        Api::OpenAiChat,
        "error-openai-400-context-length-exceeded-chat/0/0",
        StreamLimits::default(),
    );
    let (_, error) = collect(&provider, request(CancellationToken::new())).await;
    assert!(matches!(error, Some(LlmError::ContextOverflow { .. })), "{error:?}");
}

/// The index of the largest fixture of `api`, so that a stream has many events to cut into.
fn largest(api: Api) -> usize {
    let fixtures = stream_fixtures();
    (0..fixtures.len()).filter(|&i| fixtures[i].api == api).max_by_key(|&i| fixtures[i].bytes.len()).unwrap()
}

#[tokio::test]
async fn cancellation_mid_stream_ends_with_aborted() {
    let (addr, _) = start().await;
    let index = largest(Api::OpenAiChat);
    // The server stops halfway and keeps the connection open: only the token can end this.
    let provider = http_provider(addr, Api::OpenAiChat, &format!("hang/3/{index}"), StreamLimits::default());
    let cancel = CancellationToken::new();
    let mut stream = provider.stream(request(cancel.clone()));
    let mut seen = 0;
    while let Some(item) = stream.next().await {
        let event = item.unwrap();
        seen += 1;
        if matches!(event, LlmEvent::TextDelta { .. }) && seen > 20 {
            cancel.cancel();
            break;
        }
    }
    assert_eq!(stream.next().await, Some(Err(LlmError::Aborted)));
    assert_eq!(stream.next().await, None);
}

#[tokio::test]
async fn cancellation_while_waiting_for_the_server_ends_with_aborted() {
    let (addr, _) = start().await;
    let index = largest(Api::Anthropic);
    let provider = http_provider(addr, Api::Anthropic, &format!("hang/5/{index}"), StreamLimits::default());
    let cancel = CancellationToken::new();
    let mut stream = provider.stream(request(cancel.clone()));
    // Drain what the server sends; the stream then waits on a silent connection.
    let waiter = tokio::spawn(async move {
        let mut last = None;
        while let Some(item) = stream.next().await {
            last = Some(item);
        }
        last
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    cancel.cancel();
    assert_eq!(waiter.await.unwrap(), Some(Err(LlmError::Aborted)));

    // A token cancelled before the call never reaches the stream.
    let cancel = CancellationToken::new();
    cancel.cancel();
    let (events, error) = collect(&provider, request(cancel)).await;
    assert_eq!((events, error), (vec![], Some(LlmError::Aborted)));
}

#[tokio::test]
async fn a_silent_server_hits_the_configured_idle_timeout() {
    let (addr, _) = start().await;
    let index = largest(Api::Gemini);
    let limits = StreamLimits { idle_timeout: Duration::from_millis(150), ..StreamLimits::default() };
    let provider = http_provider(addr, Api::Gemini, &format!("hang/9/{index}"), limits);
    let (events, error) = collect(&provider, request(CancellationToken::new())).await;
    assert!(!events.is_empty(), "the first half arrived");
    assert_eq!(error, Some(LlmError::IdleTimeout { after: Duration::from_millis(150) }));
}

#[tokio::test]
async fn a_cut_connection_is_a_truncated_stream() {
    let (addr, _) = start().await;
    for (api, expected) in [
        (Api::OpenAiChat, "[DONE]"),
        (Api::OpenAiResponses, "response.completed"),
        (Api::Anthropic, "message_stop"),
        (Api::Gemini, "finishReason"),
    ] {
        let index = largest(api);
        let provider = http_provider(addr, api, &format!("close/11/{index}"), StreamLimits::default());
        let (events, error) = collect(&provider, request(CancellationToken::new())).await;
        assert!(!events.is_empty(), "{api}");
        assert_eq!(error, Some(LlmError::Truncated { expected }), "{api}");
    }
}

#[tokio::test]
async fn an_event_past_the_size_bound_is_refused() {
    let (addr, _) = start().await;
    let index = largest(Api::OpenAiResponses);
    let limits = StreamLimits { max_event_bytes: 256, ..StreamLimits::default() };
    let provider = http_provider(addr, Api::OpenAiResponses, &format!("full/13/{index}"), limits);
    let (_, error) = collect(&provider, request(CancellationToken::new())).await;
    assert_eq!(error, Some(LlmError::EventTooLarge { limit: 256 }));
}
