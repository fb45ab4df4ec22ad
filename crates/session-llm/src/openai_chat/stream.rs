//! The Chat Completions stream parser (OpenAI and every server that speaks the format).
//!
//! Only `choices[0]` counts. The stream ends properly with `[DONE]`, or with the end of the
//! body after a `finish_reason` (Ollama sends no `[DONE]`). Usage may ride on the finish chunk
//! (DeepSeek, Groq) or on a later chunk with empty `choices` (OpenAI), so the step is only
//! finished at the end. A tool call is yielded as soon as its arguments are a whole JSON object
//! (SPEC 1.1: its tool starts while the model is still streaming), else when the next call
//! starts, else at the finish reason.
//!
//! Text and reasoning are blocks as the AI SDK's OpenAI-compatible provider makes them (what
//! OpenCode 1.18.34 reads this format with): the text block opens at the first content and
//! stays open to the end of the content, so text on both sides of reasoning or tool calls is
//! one text part; a reasoning block closes when content or a tool call comes, and reasoning
//! after that is a new block.

use serde::Deserialize;
use session_core::{FinishReason, LlmEvent, Usage};

use crate::common::{count, non_empty, sdk_total, tool_input};
use crate::error::{LlmError, stream_error};
use crate::parser::{DoneMarker, Progress, WireParser};

#[derive(Deserialize)]
pub(crate) struct Chunk {
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    usage: Option<ChatUsage>,
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    /// DeepSeek, xAI, vLLM.
    #[serde(default)]
    reasoning_content: Option<String>,
    /// OpenRouter, Ollama, Groq.
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

/// Chat Completions usage, with the extensions of the compatible servers.
#[derive(Deserialize, Default)]
pub(crate) struct ChatUsage {
    #[serde(default, deserialize_with = "count")]
    prompt_tokens: Option<i64>,
    #[serde(default, deserialize_with = "count")]
    completion_tokens: Option<i64>,
    #[serde(default, deserialize_with = "count")]
    total_tokens: Option<i64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
    /// DeepSeek's name for cached prompt tokens.
    #[serde(default, deserialize_with = "count")]
    prompt_cache_hit_tokens: Option<i64>,
}

#[derive(Deserialize, Default)]
struct PromptDetails {
    #[serde(default, deserialize_with = "count")]
    cached_tokens: Option<i64>,
    #[serde(default, deserialize_with = "count")]
    cache_write_tokens: Option<i64>,
}

#[derive(Deserialize, Default)]
struct CompletionDetails {
    #[serde(default, deserialize_with = "count")]
    reasoning_tokens: Option<i64>,
}

impl ChatUsage {
    /// The provider-neutral usage: input includes cached tokens (as OpenAI counts them) and
    /// output includes reasoning.
    pub(crate) fn to_usage(&self) -> Usage {
        let reasoning = self.completion_tokens_details.as_ref().and_then(|d| d.reasoning_tokens);
        let mut output = self.completion_tokens;
        // xAI counts reasoning outside `completion_tokens`; its total gives it away
        // (prompt + completion + reasoning). OpenAI and DeepSeek count it inside.
        if let (Some(prompt), Some(completion), Some(total), Some(reasoning)) =
            (self.prompt_tokens, self.completion_tokens, self.total_tokens, reasoning)
            && reasoning > 0
            && prompt.checked_add(completion).and_then(|sum| sum.checked_add(reasoning)) == Some(total)
        {
            // Counts come from the wire: no sum may overflow (a panic in debug builds).
            output = Some(completion.saturating_add(reasoning));
        }
        let details = self.prompt_tokens_details.as_ref();
        Usage {
            input_tokens: self.prompt_tokens,
            output_tokens: output,
            total_tokens: sdk_total(self.prompt_tokens, output),
            reasoning_tokens: reasoning,
            cache_read_input_tokens: details.and_then(|d| d.cached_tokens).or(self.prompt_cache_hit_tokens),
            cache_write_input_tokens: details.and_then(|d| d.cache_write_tokens),
        }
    }
}

/// One tool call being streamed, keyed by its `index`.
struct ToolCall {
    index: u32,
    id: Option<String>,
    name: Option<String>,
    arguments: String,
    started: bool,
    /// Its `tool-input-end` and `tool-call` were yielded; nothing more is said about it.
    emitted: bool,
}

/// Whether a call's accumulated arguments are a whole JSON object, so that no later delta can
/// belong to them (more text would make them invalid). serde_json decides; the check for a
/// closing brace only spares parsing the prefixes that cannot be whole.
fn arguments_complete(arguments: &str) -> bool {
    let trimmed = arguments.trim();
    trimmed.starts_with('{')
        && trimmed.ends_with('}')
        && serde_json::from_str::<serde::de::IgnoredAny>(trimmed).is_ok()
}

/// The open text and reasoning blocks of a Chat stream, which has no block ids: ids are
/// generated as `text-N` / `reasoning-N` (SPEC 1.1). Unlike the one open block of
/// [`crate::common::Blocks`], text and reasoning open and close independently.
#[derive(Debug, Default)]
struct ChatBlocks {
    text: Option<String>,
    reasoning: Option<String>,
    counter: usize,
}

impl ChatBlocks {
    fn next_id(&mut self, kind: &str) -> String {
        let id = format!("{kind}-{}", self.counter);
        self.counter += 1;
        id
    }

    /// Reasoning text: opens a reasoning block unless one is open; the text block stays open.
    fn reasoning(&mut self, text: String, out: &mut Vec<LlmEvent>) {
        let id = match &self.reasoning {
            Some(id) => id.clone(),
            None => {
                let id = self.next_id("reasoning");
                out.push(LlmEvent::ReasoningStart { id: id.clone(), provider_metadata: None });
                self.reasoning = Some(id.clone());
                id
            }
        };
        out.push(LlmEvent::ReasoningDelta { id, text, provider_metadata: None });
    }

    /// Visible text: ends the open reasoning, then appends to the one text block.
    fn text(&mut self, text: String, out: &mut Vec<LlmEvent>) {
        self.end_reasoning(out);
        let id = match &self.text {
            Some(id) => id.clone(),
            None => {
                let id = self.next_id("text");
                out.push(LlmEvent::TextStart { id: id.clone(), provider_metadata: None });
                self.text = Some(id.clone());
                id
            }
        };
        out.push(LlmEvent::TextDelta { id, text, provider_metadata: None });
    }

    /// Ends the open reasoning block, if any.
    fn end_reasoning(&mut self, out: &mut Vec<LlmEvent>) {
        if let Some(id) = self.reasoning.take() {
            out.push(LlmEvent::ReasoningEnd { id, provider_metadata: None });
        }
    }

    /// Ends both blocks: reasoning first, then text.
    fn close(&mut self, out: &mut Vec<LlmEvent>) {
        self.end_reasoning(out);
        if let Some(id) = self.text.take() {
            out.push(LlmEvent::TextEnd { id, provider_metadata: None });
        }
    }
}

/// The Chat Completions stream parser.
#[derive(Default)]
pub struct ChatParser {
    progress: Progress,
    blocks: ChatBlocks,
    tools: Vec<ToolCall>,
    tool_counter: usize,
    any_tool_call: bool,
    /// The finish reason of choice 0, once given.
    finish_reason: Option<String>,
    /// Content is closed (finish reason seen); later chunks may only carry usage.
    content_closed: bool,
    usage: Option<Usage>,
    done: bool,
}

impl ChatParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    fn on_chunk(&mut self, chunk: Chunk, data: &str, out: &mut Vec<LlmEvent>) -> Result<(), LlmError> {
        if chunk.error.is_some() {
            return Err(stream_error("openai", None, data));
        }
        if let Some(usage) = chunk.usage {
            self.usage = non_empty(usage.to_usage());
        }
        let Some(choice) = chunk.choices.unwrap_or_default().into_iter().find(|c| c.index.unwrap_or(0) == 0)
        else {
            return Ok(());
        };
        if !self.content_closed
            && let Some(delta) = choice.delta
        {
            self.on_delta(delta, out);
        }
        if let Some(reason) = choice.finish_reason
            && !reason.is_empty()
        {
            self.finish_reason = Some(reason);
            self.close_content(out);
        }
        Ok(())
    }

    fn on_delta(&mut self, delta: Delta, out: &mut Vec<LlmEvent>) {
        if let Some(text) = delta.reasoning_content.or(delta.reasoning).filter(|t| !t.is_empty()) {
            self.blocks.reasoning(text, out);
        }
        if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
            self.blocks.text(text, out);
        }
        // A refusal is the model's visible answer, so it is shown as text.
        if let Some(text) = delta.refusal.filter(|t| !t.is_empty()) {
            self.blocks.text(text, out);
        }
        if let Some(calls) = delta.tool_calls {
            // A tool call ends the reasoning before it; the text block stays open.
            self.blocks.end_reasoning(out);
            for (position, call) in calls.into_iter().enumerate() {
                self.on_tool_delta(position, call, out);
            }
        }
    }

    /// The slot of the call a delta at `index` belongs to, opening one for a new call. Calls at
    /// other indexes stay open: a provider may stream the arguments of parallel calls
    /// alternately (`index: 0`, `index: 1`, `index: 0`, ...), so a call ends only when its own
    /// arguments are whole or the content closes, never because another call began.
    fn slot(&mut self, index: u32, id: Option<&String>, out: &mut Vec<LlmEvent>) -> usize {
        let found = self.tools.iter().position(|t| t.index == index);
        let found = match found {
            // Some servers put every call at index 0: a new id there is a new call.
            Some(slot) if id.is_some() && self.tools[slot].started && self.tools[slot].id.as_ref() != id => {
                let mut finished = self.tools.remove(slot);
                end_tool(&mut finished, &mut self.any_tool_call, out);
                None
            }
            found => found,
        };
        if let Some(slot) = found {
            return slot;
        }
        self.tools.push(ToolCall {
            index,
            id: None,
            name: None,
            arguments: String::new(),
            started: false,
            emitted: false,
        });
        self.tools.len() - 1
    }

    fn on_tool_delta(&mut self, position: usize, call: ToolCallDelta, out: &mut Vec<LlmEvent>) {
        let index = call.index.unwrap_or(u32::try_from(position).unwrap_or(u32::MAX));
        let (name, arguments) = match call.function {
            Some(function) => (function.name, function.arguments),
            None => (None, None),
        };
        let slot = self.slot(index, call.id.as_ref(), out);
        let counter = &mut self.tool_counter;
        let tool = &mut self.tools[slot];
        if tool.emitted {
            // Its arguments were already a whole object: anything more cannot be part of them.
            if arguments.is_some_and(|a| !a.trim().is_empty()) {
                tracing::debug!(index, "ignoring arguments for a tool call already complete");
            }
            return;
        }
        if tool.id.is_none() {
            tool.id = call.id.filter(|id| !id.is_empty());
        }
        if tool.name.is_none() {
            tool.name = name.filter(|n| !n.is_empty());
        }
        let arguments = arguments.unwrap_or_default();
        if !tool.started {
            tool.arguments.push_str(&arguments);
            if let Some(name) = tool.name.clone() {
                tool.started = true;
                let id = tool.id.get_or_insert_with(|| format!("call-{}", *counter)).clone();
                *counter += 1;
                out.push(LlmEvent::ToolInputStart {
                    id: id.clone(),
                    name: name.clone(),
                    provider_executed: false,
                });
                if !tool.arguments.is_empty() {
                    out.push(LlmEvent::ToolInputDelta { id, name, text: tool.arguments.clone() });
                }
            }
        } else if !arguments.is_empty() {
            tool.arguments.push_str(&arguments);
            if let (Some(id), Some(name)) = (&tool.id, &tool.name) {
                out.push(LlmEvent::ToolInputDelta { id: id.clone(), name: name.clone(), text: arguments });
            }
        }
        // SPEC 1.1: a call is emitted as soon as its arguments are whole, so that its tool
        // starts while the model is still streaming (and the doom-loop rule sees the calls one
        // by one). Empty arguments wait: the argument text may still be on its way.
        if tool.started && arguments_complete(&tool.arguments) {
            end_tool(tool, &mut self.any_tool_call, out);
        }
    }

    fn close_content(&mut self, out: &mut Vec<LlmEvent>) {
        if self.content_closed {
            return;
        }
        self.content_closed = true;
        self.blocks.close(out);
        for mut tool in std::mem::take(&mut self.tools) {
            end_tool(&mut tool, &mut self.any_tool_call, out);
        }
    }

    fn finish_step(&mut self, out: &mut Vec<LlmEvent>) {
        self.close_content(out);
        self.done = true;
        let reason = finish_reason(self.finish_reason.as_deref(), self.any_tool_call);
        out.push(LlmEvent::StepFinish {
            index: 0,
            reason,
            usage: self.usage.clone(),
            provider_metadata: None,
        });
        out.push(LlmEvent::Finish { reason, usage: self.usage.clone() });
    }
}

/// Yields a call's `tool-input-end` and `tool-call`, once; notes in `any_tool_call` that the
/// step called a tool.
fn end_tool(tool: &mut ToolCall, any_tool_call: &mut bool, out: &mut Vec<LlmEvent>) {
    if tool.emitted {
        return;
    }
    tool.emitted = true;
    // A call whose name never came cannot be run; it is dropped with a note.
    let (Some(id), Some(name), true) = (tool.id.clone(), tool.name.clone(), tool.started) else {
        tracing::debug!(index = tool.index, "dropping a tool call that never got a name");
        return;
    };
    *any_tool_call = true;
    out.push(LlmEvent::ToolInputEnd { id: id.clone(), name: name.clone() });
    out.push(LlmEvent::ToolCall {
        id,
        name,
        input: tool_input(&tool.arguments),
        provider_executed: false,
        provider_metadata: None,
    });
}

/// Maps a Chat finish reason. A `stop` is stored as the provider gave it even with tool calls,
/// as OpenCode 1.18.34 stores it (the loop goes on for the tool parts, SPEC 12 step
/// 2); no reason at all with tool calls is `tool-calls`.
fn finish_reason(reason: Option<&str>, any_tool_call: bool) -> FinishReason {
    match reason {
        Some("tool_calls" | "function_call") => FinishReason::ToolCalls,
        None if any_tool_call => FinishReason::ToolCalls,
        Some("stop") => FinishReason::Stop,
        Some("length") => FinishReason::Length,
        Some("content_filter") => FinishReason::ContentFilter,
        Some(_) | None => FinishReason::Unknown,
    }
}

impl WireParser for ChatParser {
    type Event = Chunk;
    const DONE_MARKER: DoneMarker = DoneMarker::Ends;
    const STARTS_STEP_ON_FIRST_EVENT: bool = true;

    fn progress(&mut self) -> &mut Progress {
        &mut self.progress
    }

    fn finished(&self) -> bool {
        self.done
    }

    fn on_done_marker(&mut self, out: &mut Vec<LlmEvent>) {
        self.progress.start_step(out);
        self.finish_step(out);
    }

    fn on_parsed(&mut self, chunk: Chunk, data: &str, out: &mut Vec<LlmEvent>) -> Result<(), LlmError> {
        self.on_chunk(chunk, data, out)
    }

    fn on_body_end(&mut self, out: &mut Vec<LlmEvent>) -> Result<(), LlmError> {
        if self.finish_reason.is_some() {
            self.finish_step(out);
            return Ok(());
        }
        Err(LlmError::Truncated { expected: "[DONE]" })
    }
}
