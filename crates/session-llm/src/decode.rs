//! The pure pipeline from body bytes to `LlmEvent`s: the SSE decoder feeding one provider's
//! stream parser. No IO, no clock: the async stream in `stream.rs` drives the same code.

use std::fmt;
use std::str::FromStr;

use session_core::LlmEvent;

use crate::anthropic::AnthropicParser;
use crate::error::LlmError;
use crate::gemini::GeminiParser;
use crate::openai_chat::ChatParser;
use crate::openai_responses::ResponsesParser;
use crate::parser::StreamParser;
use crate::sse::{DEFAULT_MAX_EVENT_BYTES, SseDecoder, SseEvent};

/// A provider wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Api {
    /// OpenAI Chat Completions and the servers that speak it.
    OpenAiChat,
    /// OpenAI Responses.
    OpenAiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// Google Gemini `streamGenerateContent?alt=sse`.
    Gemini,
}

impl Api {
    /// Every wire format.
    pub const ALL: [Api; 4] = [Api::OpenAiChat, Api::OpenAiResponses, Api::Anthropic, Api::Gemini];

    /// The format's name on the command line: `openai-chat`, `openai-responses`, `anthropic`, `gemini`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenAiChat => "openai-chat",
            Self::OpenAiResponses => "openai-responses",
            Self::Anthropic => "anthropic",
            Self::Gemini => "gemini",
        }
    }

    /// The AI SDK `npm` packages an adapter here speaks, with their format: the one table
    /// from a configured or catalogued package name to a wire format.
    pub const PACKAGES: [(&'static str, Api); 7] = [
        ("@ai-sdk/openai-compatible", Api::OpenAiChat),
        ("@ai-sdk/groq", Api::OpenAiChat),
        ("@ai-sdk/xai", Api::OpenAiChat),
        ("@openrouter/ai-sdk-provider", Api::OpenAiChat),
        ("@ai-sdk/openai", Api::OpenAiResponses),
        ("@ai-sdk/anthropic", Api::Anthropic),
        ("@ai-sdk/google", Api::Gemini),
    ];

    /// The format an `npm` package name stands for (names are exact), if an adapter speaks it.
    pub fn from_npm(package: &str) -> Option<Self> {
        Self::PACKAGES.iter().find(|(name, _)| *name == package).map(|(_, api)| *api)
    }

    /// A fresh stream parser for this format.
    pub fn parser(self) -> Box<dyn StreamParser> {
        match self {
            Self::OpenAiChat => Box::new(ChatParser::new()),
            Self::OpenAiResponses => Box::new(ResponsesParser::new()),
            Self::Anthropic => Box::new(AnthropicParser::new()),
            Self::Gemini => Box::new(GeminiParser::new()),
        }
    }
}

impl fmt::Display for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The name is not one of the four wire formats.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown API {0:?}: expected openai-chat, openai-responses, anthropic or gemini")]
pub struct UnknownApi(pub String);

impl FromStr for Api {
    type Err = UnknownApi;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL.into_iter().find(|api| api.as_str() == s).ok_or_else(|| UnknownApi(s.to_owned()))
    }
}

/// Body bytes in, `LlmEvent`s out: an SSE decoder and a stream parser, pure and incremental.
pub struct EventDecoder {
    sse: SseDecoder,
    parser: Box<dyn StreamParser>,
    scratch: Vec<SseEvent>,
}

impl fmt::Debug for EventDecoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventDecoder").field("sse", &self.sse).finish_non_exhaustive()
    }
}

impl EventDecoder {
    /// A decoder for `api` with the default event size bound.
    pub fn new(api: Api) -> Self {
        Self::with_parser(api.parser(), DEFAULT_MAX_EVENT_BYTES)
    }

    /// A decoder over any parser and event size bound.
    pub fn with_parser(parser: Box<dyn StreamParser>, max_event_bytes: usize) -> Self {
        Self { sse: SseDecoder::with_max_event_bytes(max_event_bytes), parser, scratch: Vec::new() }
    }

    /// Feeds one chunk of the body.
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<LlmEvent>) -> Result<(), LlmError> {
        if self.parser.is_done() {
            return Ok(());
        }
        self.sse.push(bytes, &mut self.scratch)?;
        self.drain(out)
    }

    /// Ends the body: yields the closing events or the error of a stream cut short.
    pub fn finish(&mut self, out: &mut Vec<LlmEvent>) -> Result<(), LlmError> {
        if !self.parser.is_done() {
            self.sse.finish(&mut self.scratch)?;
            self.drain(out)?;
        }
        if self.parser.is_done() { Ok(()) } else { self.parser.on_end(out) }
    }

    /// True once the terminal event was seen.
    pub fn is_done(&self) -> bool {
        self.parser.is_done()
    }

    fn drain(&mut self, out: &mut Vec<LlmEvent>) -> Result<(), LlmError> {
        let mut result = Ok(());
        for event in self.scratch.drain(..) {
            if self.parser.is_done() {
                break;
            }
            result = self.parser.on_event(&event, out);
            if result.is_err() {
                break;
            }
        }
        self.scratch.clear();
        result
    }
}

/// The events of a recorded stream, and the error that ended it, if any.
#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    /// Every event yielded before the end or the error.
    pub events: Vec<LlmEvent>,
    /// The error that ended the stream.
    pub error: Option<LlmError>,
}

/// Turns a recorded SSE body of `api` into `LlmEvent`s (what `session replay` runs).
pub fn replay(api: Api, body: &[u8]) -> Replay {
    let mut decoder = EventDecoder::new(api);
    let mut events = Vec::new();
    let error = decoder.push(body, &mut events).and_then(|()| decoder.finish(&mut events)).err();
    Replay { events, error }
}
