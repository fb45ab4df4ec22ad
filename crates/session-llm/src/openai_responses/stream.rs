//! The OpenAI Responses stream parser.
//!
//! Events are matched to their output item by `output_index`, never by `item_id`: proxies such
//! as GitHub Copilot's rotate item ids on every event. Block and call ids come from the item
//! as `response.output_item.added` announced it.

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use session_core::{FinishReason, LlmEvent, ProviderMetadata, Usage};

use crate::common::{count, metadata, non_empty, sdk_total, tool_input};
use crate::error::{LlmError, stream_error};
use crate::parser::{DoneMarker, Progress, WireParser};

#[derive(Deserialize)]
pub(crate) struct Event {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    output_index: Option<usize>,
    #[serde(default)]
    summary_index: Option<usize>,
    #[serde(default)]
    delta: Option<String>,
    #[serde(default)]
    item: Option<Item>,
    #[serde(default)]
    response: Option<Response>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    call_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
    #[serde(default)]
    encrypted_content: Option<String>,
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    incomplete_details: Option<IncompleteDetails>,
    #[serde(default)]
    usage: Option<ResponsesUsage>,
    #[serde(default)]
    error: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
struct IncompleteDetails {
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize)]
struct ResponsesUsage {
    #[serde(default, deserialize_with = "count")]
    input_tokens: Option<i64>,
    #[serde(default, deserialize_with = "count")]
    output_tokens: Option<i64>,
    // `total_tokens` is not read: the step's total is input + output (`sdk_total`).
    #[serde(default)]
    input_tokens_details: Option<InputDetails>,
    #[serde(default)]
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Deserialize)]
struct InputDetails {
    #[serde(default, deserialize_with = "count")]
    cached_tokens: Option<i64>,
    /// Sent by the GitHub Copilot proxy.
    #[serde(default, deserialize_with = "count")]
    cache_write_tokens: Option<i64>,
}

#[derive(Deserialize)]
struct OutputDetails {
    #[serde(default, deserialize_with = "count")]
    reasoning_tokens: Option<i64>,
}

impl ResponsesUsage {
    /// Responses counts like the neutral usage does: input includes cached tokens, output
    /// includes reasoning.
    fn to_usage(&self) -> Usage {
        let input = self.input_tokens_details.as_ref();
        Usage {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            total_tokens: sdk_total(self.input_tokens, self.output_tokens),
            reasoning_tokens: self.output_tokens_details.as_ref().and_then(|d| d.reasoning_tokens),
            cache_read_input_tokens: input.and_then(|d| d.cached_tokens),
            cache_write_input_tokens: input.and_then(|d| d.cache_write_tokens),
        }
    }
}

/// An output item in flight.
enum OpenItem {
    Message { id: String },
    Reasoning { id: String, encrypted: Option<String>, parts: Vec<usize> },
    FunctionCall { item_id: String, call_id: String, name: String, arguments: String },
}

/// The OpenAI Responses stream parser.
#[derive(Default)]
pub struct ResponsesParser {
    progress: Progress,
    items: Vec<(usize, OpenItem)>,
    any_function_call: bool,
    done: bool,
}

impl ResponsesParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// The slot of the item an event belongs to: by `output_index`, else the latest item.
    fn slot(&self, output_index: Option<usize>) -> Option<usize> {
        match output_index {
            Some(index) => self.items.iter().position(|(i, _)| *i == index),
            None => self.items.len().checked_sub(1),
        }
    }

    fn on_added(&mut self, output_index: usize, item: Item, out: &mut Vec<LlmEvent>) {
        let id = item.id.unwrap_or_else(|| format!("item-{output_index}"));
        let open = match item.kind.as_str() {
            "message" => {
                out.push(LlmEvent::TextStart { id: id.clone(), provider_metadata: Some(item_meta(&id)) });
                OpenItem::Message { id }
            }
            "reasoning" => {
                let encrypted = item.encrypted_content;
                out.push(LlmEvent::ReasoningStart {
                    id: format!("{id}:0"),
                    provider_metadata: Some(reasoning_meta(&id, encrypted.as_deref())),
                });
                OpenItem::Reasoning { id, encrypted, parts: vec![0] }
            }
            "function_call" => {
                let call_id = item.call_id.unwrap_or_else(|| id.clone());
                let name = item.name.unwrap_or_default();
                out.push(LlmEvent::ToolInputStart {
                    id: call_id.clone(),
                    name: name.clone(),
                    provider_executed: false,
                });
                let arguments = item.arguments.unwrap_or_default();
                if !arguments.is_empty() {
                    out.push(LlmEvent::ToolInputDelta {
                        id: call_id.clone(),
                        name: name.clone(),
                        text: arguments.clone(),
                    });
                }
                OpenItem::FunctionCall { item_id: id, call_id, name, arguments }
            }
            other => {
                tracing::debug!(item_type = other, "skipping an unknown Responses output item");
                return;
            }
        };
        self.items.push((output_index, open));
    }

    fn on_done(&mut self, output_index: Option<usize>, item: Option<Item>, out: &mut Vec<LlmEvent>) {
        let Some(slot) = self.slot(output_index) else {
            return;
        };
        let (_, open) = self.items.remove(slot);
        self.close(open, item, out);
    }

    fn close(&mut self, open: OpenItem, done: Option<Item>, out: &mut Vec<LlmEvent>) {
        match open {
            OpenItem::Message { id } => {
                out.push(LlmEvent::TextEnd { provider_metadata: Some(item_meta(&id)), id });
            }
            OpenItem::Reasoning { id, encrypted, parts } => {
                let encrypted = done.and_then(|item| item.encrypted_content).or(encrypted);
                for part in parts {
                    out.push(LlmEvent::ReasoningEnd {
                        id: format!("{id}:{part}"),
                        provider_metadata: Some(reasoning_meta(&id, encrypted.as_deref())),
                    });
                }
            }
            OpenItem::FunctionCall { item_id, call_id, name, arguments } => {
                // The final item is authoritative; LM Studio sends no argument deltas at all.
                let streamed = !arguments.is_empty();
                let arguments = done.and_then(|item| item.arguments).unwrap_or(arguments);
                if !streamed && !arguments.is_empty() {
                    out.push(LlmEvent::ToolInputDelta {
                        id: call_id.clone(),
                        name: name.clone(),
                        text: arguments.clone(),
                    });
                }
                self.any_function_call = true;
                out.push(LlmEvent::ToolInputEnd { id: call_id.clone(), name: name.clone() });
                out.push(LlmEvent::ToolCall {
                    id: call_id,
                    name,
                    input: tool_input(&arguments),
                    provider_executed: false,
                    provider_metadata: Some(item_meta(&item_id)),
                });
            }
        }
    }

    fn on_text_delta(&mut self, output_index: Option<usize>, delta: String, out: &mut Vec<LlmEvent>) {
        match self.slot(output_index).map(|slot| &self.items[slot].1) {
            Some(OpenItem::Message { id }) => {
                out.push(LlmEvent::TextDelta { id: id.clone(), text: delta, provider_metadata: None });
            }
            _ => tracing::debug!("text delta for no open message item"),
        }
    }

    fn on_reasoning_delta(
        &mut self,
        output_index: Option<usize>,
        part: usize,
        delta: Option<String>,
        out: &mut Vec<LlmEvent>,
    ) {
        let Some(slot) = self.slot(output_index) else {
            return;
        };
        if let OpenItem::Reasoning { id, encrypted, parts } = &mut self.items[slot].1 {
            if !parts.contains(&part) {
                parts.push(part);
                out.push(LlmEvent::ReasoningStart {
                    id: format!("{id}:{part}"),
                    provider_metadata: Some(reasoning_meta(id, encrypted.as_deref())),
                });
            }
            if let Some(text) = delta {
                out.push(LlmEvent::ReasoningDelta {
                    id: format!("{id}:{part}"),
                    text,
                    provider_metadata: None,
                });
            }
        }
    }

    fn on_argument_delta(&mut self, output_index: Option<usize>, delta: String, out: &mut Vec<LlmEvent>) {
        let Some(slot) = self.slot(output_index) else {
            return;
        };
        if let OpenItem::FunctionCall { call_id, name, arguments, .. } = &mut self.items[slot].1 {
            arguments.push_str(&delta);
            out.push(LlmEvent::ToolInputDelta { id: call_id.clone(), name: name.clone(), text: delta });
        }
    }

    fn on_finished(&mut self, response: Option<Response>, out: &mut Vec<LlmEvent>) {
        for (_, open) in std::mem::take(&mut self.items) {
            self.close(open, None, out);
        }
        let response = response.unwrap_or(Response {
            id: None,
            status: None,
            incomplete_details: None,
            usage: None,
            error: None,
        });
        let incomplete = response.incomplete_details.and_then(|d| d.reason);
        let reason = match (incomplete.as_deref(), response.status.as_deref()) {
            (Some("max_output_tokens"), _) => FinishReason::Length,
            (Some("content_filter"), _) => FinishReason::ContentFilter,
            (Some(_), _) => FinishReason::Unknown,
            (None, Some("completed") | None) if self.any_function_call => FinishReason::ToolCalls,
            (None, Some("completed") | None) => FinishReason::Stop,
            (None, Some(_)) => FinishReason::Unknown,
        };
        let usage = response.usage.and_then(|u| non_empty(u.to_usage()));
        let provider_metadata: Option<ProviderMetadata> =
            response.id.map(|id| metadata("openai", [("responseId", Value::String(id))]));
        out.push(LlmEvent::StepFinish { index: 0, reason, usage: usage.clone(), provider_metadata });
        out.push(LlmEvent::Finish { reason, usage });
        self.done = true;
    }
}

fn item_meta(item_id: &str) -> ProviderMetadata {
    metadata("openai", [("itemId", Value::String(item_id.to_owned()))])
}

fn reasoning_meta(item_id: &str, encrypted: Option<&str>) -> ProviderMetadata {
    metadata(
        "openai",
        [
            ("itemId", Value::String(item_id.to_owned())),
            ("reasoningEncryptedContent", encrypted.map_or(Value::Null, |e| Value::String(e.to_owned()))),
        ],
    )
}

impl WireParser for ResponsesParser {
    type Event = Event;
    const DONE_MARKER: DoneMarker = DoneMarker::Skipped;
    const STARTS_STEP_ON_FIRST_EVENT: bool = true;

    fn progress(&mut self) -> &mut Progress {
        &mut self.progress
    }

    fn finished(&self) -> bool {
        self.done
    }

    fn on_parsed(&mut self, parsed: Event, data: &str, out: &mut Vec<LlmEvent>) -> Result<(), LlmError> {
        match parsed.kind.as_str() {
            "response.output_item.added" => {
                if let Some(item) = parsed.item {
                    let output_index = parsed.output_index.unwrap_or(self.items.len());
                    self.on_added(output_index, item, out);
                }
            }
            "response.output_item.done" => self.on_done(parsed.output_index, parsed.item, out),
            "response.output_text.delta" | "response.refusal.delta" => {
                if let Some(delta) = parsed.delta {
                    self.on_text_delta(parsed.output_index, delta, out);
                }
            }
            "response.reasoning_summary_text.delta" => {
                if let Some(delta) = parsed.delta {
                    let part = parsed.summary_index.unwrap_or(0);
                    self.on_reasoning_delta(parsed.output_index, part, Some(delta), out);
                }
            }
            "response.reasoning_text.delta" => {
                if let Some(delta) = parsed.delta {
                    self.on_reasoning_delta(parsed.output_index, 0, Some(delta), out);
                }
            }
            "response.reasoning_summary_part.added" => {
                if let Some(part) = parsed.summary_index.filter(|part| *part > 0) {
                    self.on_reasoning_delta(parsed.output_index, part, None, out);
                }
            }
            "response.function_call_arguments.delta" => {
                if let Some(delta) = parsed.delta {
                    self.on_argument_delta(parsed.output_index, delta, out);
                }
            }
            "response.completed" | "response.incomplete" => self.on_finished(parsed.response, out),
            "response.failed" => {
                let error = parsed.response.and_then(|r| r.error);
                let payload = match error {
                    Some(error) => format!(r#"{{"type":"error","error":{}}}"#, error.get()),
                    None => data.to_owned(),
                };
                return Err(stream_error("openai", None, &payload));
            }
            "error" => return Err(stream_error("openai", None, data)),
            "response.created"
            | "response.in_progress"
            | "response.queued"
            | "response.content_part.added"
            | "response.content_part.done"
            | "response.output_text.done"
            | "response.output_text.annotation.added"
            | "response.refusal.done"
            | "response.reasoning_summary_part.done"
            | "response.reasoning_summary_text.done"
            | "response.reasoning_text.done"
            | "response.function_call_arguments.done" => {}
            other => tracing::debug!(event_type = other, "skipping an unknown Responses event"),
        }
        Ok(())
    }

    fn on_body_end(&mut self, _out: &mut Vec<LlmEvent>) -> Result<(), LlmError> {
        Err(LlmError::Truncated { expected: "response.completed" })
    }
}
