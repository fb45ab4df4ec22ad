//! Provider streaming for the session runtime.
//!
//! `session-llm` owns everything between a provider-neutral request and a stream of
//! provider-neutral [`LlmEvent`](session_core::LlmEvent)s:
//!
//! - the [`Provider`] trait and [`HttpProvider`], one thin async [`call`] over an
//!   [`HttpTransport`] (reqwest with rustls by default);
//! - per wire format a pure request builder and a pure stream parser: OpenAI Chat Completions
//!   (and the servers that speak it), OpenAI Responses, Anthropic Messages and Google Gemini;
//! - one incremental SSE decoder ([`SseDecoder`]) for all of them, an idle timeout and a bound
//!   on one event's size;
//! - [`LlmError`], whose provider failures are classified by session-core's classifier;
//! - the model [`Catalog`]: a models.dev snapshot embedded in the binary, plus presets for
//!   local OpenAI-compatible servers;
//! - [`ScriptedProvider`]: a [`Provider`] that plays a script (the peers' format) in process,
//!   through the same parsers as HTTP, for the demo, replays and fast tests.
//!
//! It deliberately does not own what happens to the events (session-core's processor), the
//! retry policy and its delays (session-core's `retry`, driven by the runtime), the history
//! conversion (session-core's `to_model_messages`), configuration files, credentials or
//! environment variables: callers build a [`ProviderEndpoint`] and pass it in.
//!
//! Pure entry points (no IO, no runtime): [`replay`] and [`EventDecoder`] turn SSE bytes of a
//! given [`Api`] into events; [`build_request`] turns a request into a body. The async entry
//! points ([`event_stream`], [`Provider::stream`]) must run inside a tokio runtime.
//!
//! ```
//! use session_core::{FinishReason, LlmEvent};
//! use session_llm::{Api, replay};
//!
//! let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":\"stop\"}]}\n\n";
//! let result = replay(Api::OpenAiChat, body.as_bytes());
//! assert_eq!(result.error, None); // Ollama-style: a finish_reason and no [DONE] is a proper end
//! assert!(matches!(result.events.last(), Some(LlmEvent::Finish { reason: FinishReason::Stop, .. })));
//! ```

mod anthropic;
mod catalog;
mod common;
mod decode;
mod error;
mod gemini;
mod openai_chat;
mod openai_responses;
mod parser;
mod provider;
mod request;
mod scripted;
mod small_model;
mod sse;
mod stream;
mod tls;
mod transport;

pub use anthropic::{ANTHROPIC_VERSION, AnthropicParser};
pub use catalog::{
    Catalog, CatalogError, CatalogModel, CatalogProvider, OPENAI_COMPATIBLE_NPM, split_model_ref,
};
pub use decode::{Api, EventDecoder, Replay, UnknownApi, replay};
pub use error::{LlmError, ProviderApiError, TransportError, api_failure};
pub use gemini::GeminiParser;
pub use openai_chat::{ChatParser, chat_reasoning_field};
pub use openai_responses::ResponsesParser;
pub use parser::StreamParser;
pub use provider::{
    HttpProvider, Provider, ProviderEndpoint, SESSION_HEADERS, build_request, call, default_base_url,
    http_request, package_base_url,
};
pub use request::{BuiltRequest, LlmRequest, RequestOptions, ToolChoice, ToolSpec};
pub use scripted::{
    DEFAULT_CHUNK_CHARS, Fault, FaultAction, FaultKind, FaultScope, OpKind, Plan, PlannedResponse, Reply,
    ReplyCall, ReplyUsage, RequestFacts, RequestKind, Script, ScriptCall, ScriptError, ScriptModel, ScriptOp,
    ScriptRunner, ScriptUsage, ScriptedProvider, ScriptedRequest, StreamFault, Turn, WireEnding, WireStream,
    classify, error_body, history_violations, overflow_body, summary_marker, turn_from_history, wire_stream,
};
pub use small_model::small_model;
pub use sse::{DEFAULT_MAX_EVENT_BYTES, SseDecoder, SseError, SseEvent};
pub use stream::{
    ByteStream, DEFAULT_IDLE_TIMEOUT, LlmStream, SseStream, StreamLimits, event_stream, parse_stream,
};
pub use transport::{HttpRequest, HttpResponse, HttpTransport, ReqwestTransport};

/// The per-format request builders, for callers that need one format's body directly.
pub mod builders {
    pub use crate::anthropic::build_request as anthropic;
    pub use crate::gemini::build_request as gemini;
    pub use crate::openai_chat::build_request as openai_chat;
    pub use crate::openai_responses::build_request as openai_responses;
}
