//! The Anthropic Messages stream parser.
//!
//! Content blocks are keyed by their `index`. Usage is the last value seen per field across
//! `message_start` and `message_delta` (proxies send a different `input_tokens` at the end).
//! Anthropic's `input_tokens` excludes the cache, so the neutral input adds cache reads and
//! writes back in.
//!
//! Thinking blocks the API dropped from the request (SPEC 4 step 2a, 16.7) are reported in an
//! `input_transformations` array: entries `{"type":"thinking_dropped","path":"messages.3.content.0",
//! "reason":"prefix_binding_mismatch"}`, final in `message_start`'s message, and repeated on the
//! last `message_delta` only after a server-side model fallback, whose entries then replace the
//! first ones. Sources: Anthropic's SDK type `BetaRawMessageDeltaEvent` and the Bedrock guide
//! "Thinking block binding (beta)" (beta `thinking-binding-controls-2026-08-01`); without that
//! beta the array is absent and nothing is logged.

use serde::Deserialize;
use serde_json::Value;
use session_core::{FinishReason, LlmEvent, ProviderMetadata, ToolResultKind, ToolResultValue, Usage};

use crate::common::{count, metadata, non_empty, sdk_total, tool_input};
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
    /// On `message_delta`, after a server-side fallback.
    #[serde(default)]
    input_transformations: Option<Value>,
}

#[derive(Deserialize)]
struct MessageStart {
    #[serde(default)]
    usage: Option<AnthropicUsage>,
    /// Read as a plain value: a shape we do not know must not fail the stream.
    #[serde(default)]
    input_transformations: Option<Value>,
}

/// A thinking block the API removed from the request before the model saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DroppedThinking {
    /// Where it was in the request (`messages.3.content.0`).
    pub(crate) path: String,
    /// Which binding check it failed (`prefix_binding_mismatch`, ...).
    pub(crate) reason: String,
}

/// The `thinking_dropped` entries of an `input_transformations` array; other entry types, and
/// anything that is not an array of objects, are ignored (the API may add types).
pub(crate) fn dropped_thinking(transformations: &Value) -> Vec<DroppedThinking> {
    let text = |entry: &Value, key: &str| entry.get(key).and_then(Value::as_str).unwrap_or("?").to_owned();
    transformations
        .as_array()
        .into_iter()
        .flatten()
        .filter(|entry| entry.get("type").and_then(Value::as_str) == Some("thinking_dropped"))
        .map(|entry| DroppedThinking { path: text(entry, "path"), reason: text(entry, "reason") })
        .collect()
}

/// Logs the dropped thinking blocks at step-finish (SPEC 4 step 2a): a log line, no state.
fn warn_dropped_thinking(dropped: &[DroppedThinking]) {
    if dropped.is_empty() {
        return;
    }
    let blocks: Vec<String> = dropped.iter().map(|d| format!("{} ({})", d.path, d.reason)).collect();
    tracing::warn!(
        count = dropped.len(),
        blocks = %blocks.join(", "),
        "Anthropic dropped thinking blocks from the request: the history was changed behind a signed block"
    );
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
            total_tokens: sdk_total(input, self.output),
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
    /// The thinking blocks the API reports it dropped from the request.
    dropped_thinking: Vec<DroppedThinking>,
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
        warn_dropped_thinking(&self.dropped_thinking);
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
                if let Some(message) = parsed.message {
                    if let Some(usage) = message.usage {
                        self.usage.update(usage);
                    }
                    if let Some(transformations) = &message.input_transformations {
                        self.dropped_thinking = dropped_thinking(transformations);
                    }
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
                // Only after a server-side fallback: the serving model's entries replace the
                // first ones.
                if let Some(transformations) = &parsed.input_transformations {
                    self.dropped_thinking = dropped_thinking(transformations);
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

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use serde_json::json;
    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Level, Metadata, Subscriber};

    use super::*;
    use crate::parser::StreamParser;
    use crate::sse::SseEvent;

    /// Records every event's level and fields, so that a test can see a warning was logged.
    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<(Level, String)>>>);

    struct Fields(String);

    impl Visit for Fields {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            self.0.push_str(&format!("{}={value:?} ", field.name()));
        }
    }

    impl Subscriber for Capture {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, event: &tracing::Event<'_>) {
            let mut fields = Fields(String::new());
            event.record(&mut fields);
            self.0.lock().unwrap().push((*event.metadata().level(), fields.0));
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }

    fn stream(events: &[Value]) -> Vec<SseEvent> {
        events
            .iter()
            .map(|data| SseEvent {
                event: data["type"].as_str().map(str::to_owned),
                data: data.to_string(),
                id: None,
                retry: None,
            })
            .collect()
    }

    /// The warnings a parser logs over `events`, and the events it yields.
    fn warnings(events: &[Value]) -> (Vec<String>, Vec<LlmEvent>) {
        let capture = Capture::default();
        let mut out = Vec::new();
        tracing::subscriber::with_default(capture.clone(), || {
            let mut parser = AnthropicParser::new();
            for event in stream(events) {
                parser.on_event(&event, &mut out).unwrap();
            }
        });
        let logged = capture.0.lock().unwrap().clone();
        (logged.into_iter().filter(|(level, _)| *level == Level::WARN).map(|(_, text)| text).collect(), out)
    }

    fn start(transformations: Option<Value>) -> Value {
        let mut message = json!({"id": "msg_1", "usage": {"input_tokens": 5, "output_tokens": 1}});
        if let Some(transformations) = transformations {
            message["input_transformations"] = transformations;
        }
        json!({"type": "message_start", "message": message})
    }

    const STOP: &str = r#"{"type": "message_stop"}"#;

    fn delta(transformations: Option<Value>) -> Value {
        let mut delta = json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}});
        if let Some(transformations) = transformations {
            delta["input_transformations"] = transformations;
        }
        delta
    }

    #[test]
    fn spec_16_7_only_thinking_dropped_entries_count() {
        let entries = json!([
            {"type": "thinking_dropped", "path": "messages.3.content.0", "reason": "prefix_binding_mismatch"},
            {"type": "something_new", "path": "messages.1"},
            {"type": "thinking_dropped"},
            "not an object",
        ]);
        assert_eq!(
            dropped_thinking(&entries),
            vec![
                DroppedThinking {
                    path: "messages.3.content.0".into(),
                    reason: "prefix_binding_mismatch".into()
                },
                DroppedThinking { path: "?".into(), reason: "?".into() },
            ]
        );
        assert!(dropped_thinking(&json!([])).is_empty());
        assert!(dropped_thinking(&json!({"type": "thinking_dropped"})).is_empty());
        assert!(dropped_thinking(&Value::Null).is_empty());
    }

    #[test]
    fn spec_16_7_dropped_thinking_is_a_warning_at_step_finish() {
        let dropped = json!([{"type": "thinking_dropped", "path": "messages.3.content.0", "reason": "prefix_binding_mismatch"}]);
        let stop: Value = serde_json::from_str(STOP).unwrap();
        let (warned, events) = warnings(&[start(Some(dropped)), delta(None), stop.clone()]);
        assert_eq!(warned.len(), 1, "{warned:?}");
        assert!(warned[0].contains("dropped thinking blocks"), "{warned:?}");
        assert!(warned[0].contains("messages.3.content.0 (prefix_binding_mismatch)"), "{warned:?}");
        // A log line only: the step finishes as it would have.
        assert!(
            matches!(events.last(), Some(LlmEvent::Finish { reason: FinishReason::Stop, .. })),
            "{events:?}"
        );

        // Nothing dropped, or nothing reported (no beta): no warning.
        assert!(warnings(&[start(Some(json!([]))), delta(None), stop.clone()]).0.is_empty());
        assert!(warnings(&[start(None), delta(None), stop.clone()]).0.is_empty());
    }

    #[test]
    fn spec_16_7_a_fallback_message_delta_replaces_the_first_report() {
        let dropped = json!([{"type": "thinking_dropped", "path": "messages.1.content.0", "reason": "model_binding_mismatch"}]);
        let stop: Value = serde_json::from_str(STOP).unwrap();
        let (warned, _) = warnings(&[start(Some(json!([]))), delta(Some(dropped.clone())), stop.clone()]);
        assert_eq!(warned.len(), 1, "{warned:?}");
        assert!(warned[0].contains("messages.1.content.0 (model_binding_mismatch)"), "{warned:?}");
        let (warned, _) = warnings(&[start(Some(dropped)), delta(Some(json!([]))), stop]);
        assert!(warned.is_empty(), "{warned:?}");
    }
}
