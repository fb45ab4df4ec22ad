//! The content of one scripted reply: text, reasoning, tool calls, usage and pacing, as the
//! runner chooses it and the renderer writes it.

use std::time::Duration;

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;
use session_core::FinishReason;

/// One tool call of a reply.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplyCall {
    /// The call id (`call_<turn>_<n>`).
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Tool input.
    pub input: Value,
}

impl ReplyCall {
    /// The input as JSON text, as it is streamed.
    pub fn arguments(&self) -> String {
        self.input.to_string()
    }
}

/// Token counts of a reply, completed as mockllm completes them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ReplyUsage {
    /// Prompt tokens, cache included.
    pub prompt: u64,
    /// Completion tokens, reasoning included.
    pub completion: u64,
    /// Prompt tokens read from the cache.
    pub cached: u64,
    /// Prompt tokens written to the cache.
    pub cache_write: u64,
    /// Reasoning tokens inside the completion.
    pub reasoning: u64,
}

/// The content of one reply.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// The turn it answers.
    pub turn: usize,
    /// Reasoning text.
    pub reasoning: String,
    /// Visible text.
    pub text: String,
    /// Tool calls.
    pub calls: Vec<ReplyCall>,
    /// Token counts.
    pub usage: ReplyUsage,
    /// `ToolCalls` when there are calls, else `Stop`.
    pub finish: FinishReason,
    /// The pause before the first byte.
    pub delay: Duration,
    /// The pause before each chunk.
    pub chunk_delay: Duration,
    /// Characters of text per chunk.
    pub chunk_chars: usize,
    /// A recorded stream sent instead of the content above.
    pub recorded: Option<Bytes>,
}
