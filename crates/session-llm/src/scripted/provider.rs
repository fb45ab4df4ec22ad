//! The scripted provider: a script answered in process, through the same wire bytes and parser
//! an HTTP provider would use, so that its events and errors are those of the real thing.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::future::{Either, select};
use tokio_util::sync::CancellationToken;

use super::render::{FaultAction, WireEnding, wire_stream};
use super::runner::{Plan, PlannedResponse, RequestFacts, RequestKind, ScriptRunner, history_violations};
use super::script::{Fault, Script};
use crate::decode::Api;
use crate::error::{LlmError, TransportError, api_failure};
use crate::provider::Provider;
use crate::request::LlmRequest;
use crate::stream::{ByteStream, LlmStream, StreamLimits, event_stream};

/// The error a reset connection gives, worded as hyper words it.
const RESET_MESSAGE: &str = "connection reset by peer (scripted)";

/// One request the scripted provider answered.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptedRequest {
    /// The request's number among all requests (1-based).
    pub index: u64,
    /// Its number among main requests, for a main request.
    pub main_index: Option<u64>,
    /// Its kind.
    pub kind: RequestKind,
    /// The turn it was at.
    pub turn: usize,
    /// The fault that fired on it.
    pub fault: Option<Fault>,
    /// How many messages its history had.
    pub messages: usize,
    /// Broken wire invariants: tool calls without a result, results without a call.
    pub violations: Vec<String>,
}

/// A provider that replays a [`Script`] in process (no HTTP): the demo, replays and fast tests
/// use it. Cheap to clone; clones share the request counters and the log.
///
/// ```
/// use futures_util::StreamExt;
/// use session_core::{LlmEvent, history::ModelMessage, history::UserContent};
/// use session_llm::{LlmRequest, Provider, Script, ScriptedProvider};
///
/// let script = Script::from_json(r#"{"turns": [{"text": "Hello!"}]}"#).unwrap();
/// let provider = ScriptedProvider::new(script);
/// let request = LlmRequest {
///     model: "mock".into(),
///     messages: vec![ModelMessage::User { content: vec![UserContent::Text { text: "hi".into() }] }],
///     ..LlmRequest::default()
/// };
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let events: Vec<_> = provider.stream(request).collect().await;
/// let text: String = events
///     .iter()
///     .filter_map(|event| match event {
///         Ok(LlmEvent::TextDelta { text, .. }) => Some(text.as_str()),
///         _ => None,
///     })
///     .collect();
/// assert_eq!(text, "Hello!");
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct ScriptedProvider {
    runner: ScriptRunner,
    provider_id: String,
    limits: StreamLimits,
    log: Arc<Mutex<Vec<ScriptedRequest>>>,
}

impl ScriptedProvider {
    /// A provider for `script`, speaking the script's API, with default stream limits.
    pub fn new(script: Script) -> Self {
        Self {
            runner: ScriptRunner::new(script),
            provider_id: "scripted".to_owned(),
            limits: StreamLimits::default(),
            log: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// The same provider with other stream limits (a stall fault ends at the idle timeout).
    pub fn with_limits(mut self, limits: StreamLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The same provider under another id, which the error classifier reads (`openai`, ...).
    pub fn with_provider_id(mut self, provider_id: impl Into<String>) -> Self {
        self.provider_id = provider_id.into();
        self
    }

    /// The script.
    pub fn script(&self) -> &Script {
        self.runner.script()
    }

    /// Every request answered so far, in order.
    pub fn requests(&self) -> Vec<ScriptedRequest> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The broken invariants of every request so far, as `request N: ...`.
    pub fn violations(&self) -> Vec<String> {
        self.requests()
            .iter()
            .flat_map(|request| {
                request.violations.iter().map(move |v| format!("request {}: {v}", request.index))
            })
            .collect()
    }

    fn record(&self, plan: &Plan, request: &LlmRequest) {
        let entry = ScriptedRequest {
            index: plan.index,
            main_index: plan.main_index,
            kind: plan.kind,
            turn: plan.turn,
            fault: plan.fault.clone(),
            messages: request.messages.len(),
            violations: history_violations(&request.messages),
        };
        self.log.lock().unwrap_or_else(PoisonError::into_inner).push(entry);
    }
}

impl Provider for ScriptedProvider {
    fn api(&self) -> Api {
        self.runner.script().api
    }

    fn stream(&self, request: LlmRequest) -> LlmStream {
        let api = self.api();
        let facts = RequestFacts::from_request(api, &request);
        let plan = self.runner.plan(api, &facts);
        self.record(&plan, &request);
        let cancel = request.cancel.clone();
        let (reply, fault) = match plan.response {
            PlannedResponse::Reply(reply) => (reply, None),
            PlannedResponse::Fault(FaultAction::Stream { reply, fault, after }) => {
                (reply, Some((fault, after)))
            }
            PlannedResponse::Fault(FaultAction::Respond { status, headers, body }) => {
                // The same classification an HTTP answer gets: the header map as the transport
                // builds it, the body as text.
                let headers: BTreeMap<String, String> = headers.into_iter().collect();
                let error = api_failure(&self.provider_id, status, headers, Some(body), None);
                return failed(cancel, error);
            }
            PlannedResponse::Fault(FaultAction::ResetBeforeResponse) => {
                return failed(cancel, LlmError::Transport(TransportError::new(RESET_MESSAGE)));
            }
        };
        let wire = wire_stream(api, &reply, &request.model, fault);
        let body = paced_body(wire.chunks, wire.ending, reply.chunk_delay);
        let limits = self.limits;
        let delay = reply.delay;
        let start = async move {
            if !delay.is_zero() && !sleep_or_cancel(delay, &cancel).await {
                return futures_util::stream::once(async { Err(LlmError::Aborted) }).boxed();
            }
            event_stream(api, body, limits, cancel)
        };
        futures_util::stream::once(start).flatten().boxed()
    }
}

/// A stream of one error, or `Aborted` when the request was already cancelled.
fn failed(cancel: CancellationToken, error: LlmError) -> LlmStream {
    futures_util::stream::once(
        async move { Err(if cancel.is_cancelled() { LlmError::Aborted } else { error }) },
    )
    .boxed()
}

/// Sleeps for `delay`; false when `cancel` fired first.
async fn sleep_or_cancel(delay: Duration, cancel: &CancellationToken) -> bool {
    let slept = std::pin::pin!(tokio::time::sleep(delay));
    let cancelled = std::pin::pin!(cancel.cancelled());
    matches!(select(slept, cancelled).await, Either::Left(_))
}

/// The chunks as a body: a pause before each, then the ending. The parser's idle timeout and
/// the cancellation token apply to it as to an HTTP body.
fn paced_body(chunks: Vec<Bytes>, ending: WireEnding, delay: Duration) -> ByteStream {
    let chunks = futures_util::stream::iter(chunks).then(move |chunk| async move {
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        Ok::<Bytes, TransportError>(chunk)
    });
    let tail = futures_util::stream::once(async move {
        match ending {
            WireEnding::End => None,
            WireEnding::Reset => Some(Err(TransportError::new(RESET_MESSAGE))),
            WireEnding::Stall => {
                // No bytes, ever: the reader's idle timeout or cancellation ends it.
                futures_util::future::pending::<()>().await;
                None
            }
        }
    })
    .filter_map(|item| async move { item });
    chunks.chain(tail).boxed()
}
