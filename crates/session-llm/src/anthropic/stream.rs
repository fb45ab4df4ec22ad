//! The Anthropic Messages stream parser.
//!
//! Content blocks are keyed by their `index`. Usage is the last value seen per field across
//! `message_start` and `message_delta` (proxies send a different `input_tokens` at the end).
//! Anthropic's `input_tokens` excludes the cache, so the neutral input adds cache reads and
//! writes back in.

use serde::Deserialize;
use serde_json::Value;
use session_core::{FinishReason, LlmEvent, ProviderMetadata, ToolResultKind, ToolResultValue, Usage};

use crate::common::{count, metadata, non_empty, tool_input};
use crate::error::{LlmError, stream_error};
use crate::parser::{DoneMarker, Progress, WireParser};

#[derive(Deserialize)]
pub(crate) struct Event {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    message: Option<MessageStart>,
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    content_block: Option<ContentBlock>,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    usage: Option<AnthropicUsage>,
}

#[derive(Deserialize)]
struct MessageStart {
    #[serde(default)]
    usage: Option<AnthropicUsage>,
}

#[derive(Deserialize)]
struct ContentBlock {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    signature: Option<String>,
    /// The encrypted content of a `redacted_thinking` block.
    #[serde(default)]
    data: Option<String>,
    #[serde(default)]
    input: Option<Value>,
    #[serde(default)]
    tool_use_id: Option<String>,
    /// The payload of a provider-executed tool's result block.
    #[serde(default)]
    content: Option<Value>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    signature: Option<String>,
    #[serde(default)]
    partial_json: Option<String>,
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct AnthropicUsage {
    #[serde(default, deserialize_with = "count")]
    input_tokens: Option<i64>,
    #[serde(default, deserialize_with = "count")]
    output_tokens: Option<i64>,
    #[serde(default, deserialize_with = "count")]
    cache_creation_input_tokens: Option<i64>,
    #[serde(default, deserialize_with = "count")]
    cache_read_input_tokens: Option<i64>,
    #[serde(default)]
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Deserialize)]
struct OutputDetails {
    #[serde(default, deserialize_with = "count")]
    thinking_tokens: Option<i64>,
}

/// The usage fields seen so far; each field keeps its last value.
#[derive(Default)]
struct UsageState {
    input: Option<i64>,
    output: Option<i64>,
    cache_write: Option<i64>,
    cache_read: Option<i64>,
    thinking: Option<i64>,
}

impl UsageState {
    fn update(&mut self, usage: AnthropicUsage) {
        self.input = usage.input_tokens.or(self.input);
        self.output = usage.output_tokens.or(self.output);
        self.cache_write = usage.cache_creation_input_tokens.or(self.cache_write);
        self.cache_read = usage.cache_read_input_tokens.or(self.cache_read);
        self.thinking = usage.output_tokens_details.and_then(|d| d.thinking_tokens).or(self.thinking);
    }

    fn to_usage(&self) -> Usage {
        // Saturating: counts come from the wire, and no count may overflow (a panic in debug).
        let input = self.input.map(|input| {
            input.saturating_add(self.cache_read.unwrap_or(0)).saturating_add(self.cache_write.unwrap_or(0))
        });
        Usage {
            input_tokens: input,
            output_tokens: self.output,
            total_tokens: input.zip(self.output).map(|(i, o)| i.saturating_add(o)),
            reasoning_tokens: self.thinking,
            cache_read_input_tokens: self.cache_read,
            cache_write_input_tokens: self.cache_write,
        }
    }
}

/// A content block in flight.
enum Block {
    Text { id: String },
    Thinking { id: String, signature: String },
    Redacted { id: String, data: String },
    ToolUse { id: String, name: String, json: String, initial: Option<Value>, provider_executed: bool },
}

/// The Anthropic Messages stream parser.
#[derive(Default)]
pub struct AnthropicParser {
    progress: Progress,
    blocks: Vec<(usize, Block)>,
    /// Names of provider-executed tool calls, for their result blocks.
    server_tools: Vec<(String, String)>,
    any_client_tool_call: bool,
    stop_reason: Option<String>,
    usage: UsageState,
    done: bool,
}

impl AnthropicParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    fn start(&mut self, out: &mut Vec<LlmEvent>) {
        self.progress.start_step(out);
    }

    fn on_block_start(&mut self, index: usize, block: ContentBlock, out: &mut Vec<LlmEvent>) {
        let open = match block.kind.as_str() {
            "text" => {
                let id = format!("text-{index}");
                out.push(LlmEvent::TextStart { id: id.clone(), provider_metadata: None });
                if let Some(text) = block.text.filter(|t| !t.is_empty()) {
                    out.push(LlmEvent::TextDelta { id: id.clone(), text, provider_metadata: None });
                }
                Block::Text { id }
            }
            "thinking" => {
                let id = format!("reasoning-{index}");
                out.push(LlmEvent::ReasoningStart { id: id.clone(), provider_metadata: None });
                if let Some(text) = block.thinking.filter(|t| !t.is_empty()) {
                    out.push(LlmEvent::ReasoningDelta { id: id.clone(), text, provider_metadata: None });
                }
                Block::Thinking { id, signature: block.signature.unwrap_or_default() }
            }
            "redacted_thinking" => {
                let id = format!("reasoning-{index}");
                let data = block.data.unwrap_or_default();
                out.push(LlmEvent::ReasoningStart {
                    id: id.clone(),
                    provider_metadata: Some(redacted_meta(&data)),
                });
                Block::Redacted { id, data }
            }
            kind @ ("tool_use" | "server_tool_use" | "mcp_tool_use") => {
                let provider_executed = kind != "tool_use";
                let id = block.id.unwrap_or_else(|| format!("tool-{index}"));
                let name = block.name.unwrap_or_default();
                if provider_executed {
                    self.server_tools.push((id.clone(), name.clone()));
                }
                out.push(LlmEvent::ToolInputStart { id: id.clone(), name: name.clone(), provider_executed });
                Block::ToolUse { id, name, json: String::new(), initial: block.input, provider_executed }
            }
            kind if kind.ends_with("_tool_result") => {
                self.on_server_tool_result(kind, block.tool_use_id, block.content, out);
                return;
            }
            other => {
                tracing::debug!(block_type = other, "skipping an unknown Anthropic content block");
                return;
            }
        };
        self.blocks.push((index, open));
    }

    fn on_server_tool_result(
        &mut self,
        kind: &str,
        tool_use_id: Option<String>,
        content: Option<Value>,
        out: &mut Vec<LlmEvent>,
    ) {
        let Some(id) = tool_use_id else {
            tracing::debug!(block_type = kind, "skipping a tool result block without tool_use_id");
            return;
        };
        let name = match self.server_tools.iter().find(|(call, _)| *call == id) {
            Some((_, name)) => name.clone(),
            None => kind.trim_end_matches("_tool_result").to_owned(),
        };
        out.push(LlmEvent::ToolResult {
            id,
            name,
            result: ToolResultValue { kind: ToolResultKind::Json, value: content.unwrap_or(Value::Null) },
            provider_executed: true,
        });
    }

    fn on_block_delta(&mut self, index: usize, delta: Delta, out: &mut Vec<LlmEvent>) {
        let Some((_, block)) = self.blocks.iter_mut().find(|(i, _)| *i == index) else {
            tracing::debug!(index, "delta for a content block that is not open");
            return;
        };
        match (delta.kind.as_deref(), block) {
            (Some("text_delta"), Block::Text { id }) => {
                if let Some(text) = delta.text {
                    out.push(LlmEvent::TextDelta { id: id.clone(), text, provider_metadata: None });
                }
            }
            (Some("thinking_delta"), Block::Thinking { id, .. }) => {
                if let Some(text) = delta.thinking {
                    out.push(LlmEvent::ReasoningDelta { id: id.clone(), text, provider_metadata: None });
                }
            }
            (Some("signature_delta"), Block::Thinking { signature, .. }) => {
                if let Some(part) = delta.signature {
                    signature.push_str(&part);
                }
            }
            (Some("input_json_delta"), Block::ToolUse { id, name, json, .. }) => {
                if let Some(part) = delta.partial_json.filter(|p| !p.is_empty()) {
                    json.push_str(&part);
                    out.push(LlmEvent::ToolInputDelta { id: id.clone(), name: name.clone(), text: part });
                }
            }
            (kind, _) => tracing::debug!(delta_type = kind, "skipping an Anthropic delta"),
        }
    }

    fn on_block_stop(&mut self, index: usize, out: &mut Vec<LlmEvent>) {
        let Some(position) = self.blocks.iter().position(|(i, _)| *i == index) else {
            return;
        };
        let (_, block) = self.blocks.remove(position);
        self.close(block, out);
    }

    fn close(&mut self, block: Block, out: &mut Vec<LlmEvent>) {
        match block {
            Block::Text { id } => out.push(LlmEvent::TextEnd { id, provider_metadata: None }),
            Block::Thinking { id, signature } => {
                let provider_metadata = (!signature.is_empty())
                    .then(|| metadata("anthropic", [("signature", Value::String(signature))]));
                out.push(LlmEvent::ReasoningEnd { id, provider_metadata });
            }
            Block::Redacted { id, data } => {
                out.push(LlmEvent::ReasoningEnd { id, provider_metadata: Some(redacted_meta(&data)) });
            }
            Block::ToolUse { id, name, json, initial, provider_executed } => {
                let input = if json.is_empty() {
                    initial.unwrap_or_else(|| tool_input(""))
                } else {
                    tool_input(&json)
                };
                if !provider_executed {
                    self.any_client_tool_call = true;
                }
                out.push(LlmEvent::ToolInputEnd { id: id.clone(), name: name.clone() });
                out.push(LlmEvent::ToolCall { id, name, input, provider_executed, provider_metadata: None });
            }
        }
    }

    fn on_message_stop(&mut self, out: &mut Vec<LlmEvent>) {
        for (_, block) in std::mem::take(&mut self.blocks) {
            self.close(block, out);
        }
        let reason = finish_reason(self.stop_reason.as_deref(), self.any_client_tool_call);
        let usage = non_empty(self.usage.to_usage());
        let provider_metadata: Option<ProviderMetadata> = self
            .usage
            .cache_write
            .map(|tokens| metadata("anthropic", [("cacheCreationInputTokens", Value::from(tokens))]));
        out.push(LlmEvent::StepFinish { index: 0, reason, usage: usage.clone(), provider_metadata });
        out.push(LlmEvent::Finish { reason, usage });
        self.done = true;
    }
}

fn redacted_meta(data: &str) -> ProviderMetadata {
    metadata("anthropic", [("redactedData", Value::String(data.to_owned()))])
}

/// Maps an Anthropic stop reason; client tool calls make `tool-calls` even without `tool_use`.
fn finish_reason(reason: Option<&str>, any_client_tool_call: bool) -> FinishReason {
    match reason {
        Some("tool_use") => FinishReason::ToolCalls,
        Some("end_turn" | "stop_sequence") | None if any_client_tool_call => FinishReason::ToolCalls,
        Some("end_turn" | "stop_sequence") => FinishReason::Stop,
        Some("max_tokens" | "model_context_window_exceeded") => FinishReason::Length,
        Some("refusal") => FinishReason::ContentFilter,
        Some(_) | None => FinishReason::Unknown,
    }
}

impl WireParser for AnthropicParser {
    type Event = Event;
    const DONE_MARKER: DoneMarker = DoneMarker::Parsed;
    /// Anthropic opens the step at `message_start` (or the first block), not at a `ping`.
    const STARTS_STEP_ON_FIRST_EVENT: bool = false;

    fn progress(&mut self) -> &mut Progress {
        &mut self.progress
    }

    fn finished(&self) -> bool {
        self.done
    }

    fn on_parsed(&mut self, parsed: Event, data: &str, out: &mut Vec<LlmEvent>) -> Result<(), LlmError> {
        match parsed.kind.as_str() {
            "message_start" => {
                self.start(out);
                if let Some(usage) = parsed.message.and_then(|m| m.usage) {
                    self.usage.update(usage);
                }
            }
            "content_block_start" => {
                self.start(out);
                if let (Some(index), Some(block)) = (parsed.index, parsed.content_block) {
                    self.on_block_start(index, block, out);
                }
            }
            "content_block_delta" => {
                if let (Some(index), Some(delta)) = (parsed.index, parsed.delta) {
                    self.on_block_delta(index, delta, out);
                }
            }
            "content_block_stop" => {
                if let Some(index) = parsed.index {
                    self.on_block_stop(index, out);
                }
            }
            "message_delta" => {
                if let Some(reason) = parsed.delta.and_then(|d| d.stop_reason) {
                    self.stop_reason = Some(reason);
                }
                if let Some(usage) = parsed.usage {
                    self.usage.update(usage);
                }
            }
            "message_stop" => {
                self.start(out);
                self.on_message_stop(out);
            }
            "error" => return Err(stream_error("anthropic", None, data)),
            "ping" => {}
            other => tracing::debug!(event_type = other, "skipping an unknown Anthropic event"),
        }
        Ok(())
    }

    fn on_body_end(&mut self, _out: &mut Vec<LlmEvent>) -> Result<(), LlmError> {
        Err(LlmError::Truncated { expected: "message_stop" })
    }
}
