//! The Google Gemini `streamGenerateContent?alt=sse` stream parser.
//!
//! Gemini sends no `[DONE]`: a candidate's `finishReason` marks the proper end, and the step is
//! finished when the body ends (usage may still follow). `usageMetadata` is cumulative, so the
//! last non-empty one wins. Function calls carry no ids, so ids are made from the response id
//! and a counter: deterministic, and unique across responses. Vertex may stream a call's
//! arguments as `partialArgs` fragments, each addressed by a JSON path.

use serde::Deserialize;
use serde_json::{Map, Value};
use session_core::{FinishReason, LlmEvent, ProviderMetadata, ToolResultKind, ToolResultValue, Usage};

use crate::common::{BlockKind, Blocks, count, metadata, non_empty, sdk_total};
use crate::error::{LlmError, stream_error};
use crate::parser::{DoneMarker, Progress, WireParser};

/// The longest array a partial-argument path may create, so that input cannot make the
/// parser allocate without bound.
const MAX_PATH_INDEX: usize = 4096;

/// The most segments a partial-argument path may have. Each one nests the arguments a level
/// deeper, and serialising or dropping a value recurses once per level, so an unbounded path
/// would overflow the stack; serde_json reads no more than 128 levels back anyway.
const MAX_PATH_DEPTH: usize = 64;

/// The most null slots the partial arguments of one call may pad arrays with (an index past
/// the end of an array), so that short paths cannot make the parser allocate far more than the
/// input's own size (`$[4096][4096]...` would otherwise create 4097 values per segment).
const MAX_PATH_PADDING: usize = MAX_PATH_INDEX;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Chunk {
    #[serde(default)]
    candidates: Option<Vec<Candidate>>,
    #[serde(default)]
    usage_metadata: Option<UsageMetadata>,
    #[serde(default)]
    prompt_feedback: Option<PromptFeedback>,
    #[serde(default)]
    response_id: Option<String>,
    #[serde(default)]
    error: Option<GeminiError>,
}

#[derive(Deserialize)]
struct GeminiError {
    #[serde(default, deserialize_with = "count")]
    code: Option<i64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback {
    #[serde(default)]
    block_reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    content: Option<Content>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Content {
    #[serde(default)]
    parts: Option<Vec<Part>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Part {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thought: Option<bool>,
    #[serde(default)]
    thought_signature: Option<String>,
    #[serde(default)]
    function_call: Option<FunctionCall>,
    #[serde(default)]
    executable_code: Option<Value>,
    #[serde(default)]
    code_execution_result: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FunctionCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    args: Option<Value>,
    #[serde(default)]
    partial_args: Option<Vec<PartialArg>>,
    #[serde(default)]
    will_continue: Option<bool>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PartialArg {
    #[serde(default)]
    json_path: Option<String>,
    #[serde(default)]
    string_value: Option<String>,
    #[serde(default)]
    number_value: Option<serde_json::Number>,
    #[serde(default)]
    bool_value: Option<bool>,
    #[serde(default)]
    null_value: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UsageMetadata {
    #[serde(default, deserialize_with = "count")]
    prompt_token_count: Option<i64>,
    #[serde(default, deserialize_with = "count")]
    candidates_token_count: Option<i64>,
    #[serde(default, deserialize_with = "count")]
    thoughts_token_count: Option<i64>,
    #[serde(default, deserialize_with = "count")]
    tool_use_prompt_token_count: Option<i64>,
    #[serde(default, deserialize_with = "count")]
    cached_content_token_count: Option<i64>,
    // `totalTokenCount` is not read: the step's total is input + output (`sdk_total`).
}

impl UsageMetadata {
    /// Gemini's prompt count includes cached content; its candidates count excludes thoughts.
    fn to_usage(&self) -> Usage {
        let input = match (self.prompt_token_count, self.tool_use_prompt_token_count) {
            (None, None) => None,
            // Saturating: counts come from the wire, and no count may overflow.
            (prompt, tool_use) => Some(prompt.unwrap_or(0).saturating_add(tool_use.unwrap_or(0))),
        };
        let output = match (self.candidates_token_count, self.thoughts_token_count) {
            (None, None) => None,
            (candidates, thoughts) => Some(candidates.unwrap_or(0).saturating_add(thoughts.unwrap_or(0))),
        };
        Usage {
            input_tokens: input,
            output_tokens: output,
            total_tokens: sdk_total(input, output),
            reasoning_tokens: self.thoughts_token_count,
            cache_read_input_tokens: self.cached_content_token_count,
            cache_write_input_tokens: None,
        }
    }
}

/// A function call whose arguments are still streaming.
struct OpenCall {
    id: String,
    name: String,
    args: Value,
    signature: Option<String>,
    /// The null slots its partial arguments padded arrays with so far.
    padding: usize,
}

/// The Gemini stream parser.
#[derive(Default)]
pub struct GeminiParser {
    progress: Progress,
    blocks: Blocks,
    open_call: Option<OpenCall>,
    response_id: Option<String>,
    call_counter: usize,
    any_function_call: bool,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    done: bool,
}

impl GeminiParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// The id of the `n`th call without an id of its own.
    fn call_id(&self, n: usize) -> String {
        match &self.response_id {
            Some(response) => format!("call-{response}-{n}"),
            None => format!("call-{n}"),
        }
    }

    fn next_call_id(&mut self) -> String {
        let id = self.call_id(self.call_counter);
        self.call_counter += 1;
        id
    }

    fn on_chunk(&mut self, chunk: Chunk, data: &str, out: &mut Vec<LlmEvent>) -> Result<(), LlmError> {
        if let Some(error) = chunk.error {
            let status = error.code.and_then(|c| u16::try_from(c).ok());
            return Err(stream_error("google", status, data));
        }
        if self.response_id.is_none() {
            self.response_id = chunk.response_id;
        }
        if let Some(usage) = chunk.usage_metadata.and_then(|u| non_empty(u.to_usage())) {
            self.usage = Some(usage);
        }
        if let Some(reason) = chunk.prompt_feedback.and_then(|f| f.block_reason) {
            // The prompt itself was blocked: no candidate will come.
            tracing::debug!(block_reason = %reason, "Gemini blocked the prompt");
            self.finish_reason = Some("SAFETY".to_owned());
        }
        let Some(candidate) =
            chunk.candidates.unwrap_or_default().into_iter().find(|c| c.index.unwrap_or(0) == 0)
        else {
            return Ok(());
        };
        for part in candidate.content.and_then(|c| c.parts).unwrap_or_default() {
            self.on_part(part, out);
        }
        if let Some(reason) = candidate.finish_reason {
            self.finish_reason = Some(reason);
        }
        Ok(())
    }

    fn on_part(&mut self, part: Part, out: &mut Vec<LlmEvent>) {
        let signature_meta = part.thought_signature.as_ref().map(|s| signature_meta(s));
        if let Some(call) = part.function_call {
            self.on_function_call(call, part.thought_signature, out);
            return;
        }
        if let Some(code) = part.executable_code {
            self.blocks.close(out);
            let id = self.next_call_id();
            let name = "code_execution".to_owned();
            out.push(LlmEvent::ToolCall {
                id,
                name,
                input: code,
                provider_executed: true,
                provider_metadata: signature_meta,
            });
            return;
        }
        if let Some(result) = part.code_execution_result {
            // The result belongs to the code execution call just before it.
            let id = match self.call_counter.checked_sub(1) {
                Some(n) => self.call_id(n),
                None => self.next_call_id(),
            };
            out.push(LlmEvent::ToolResult {
                id,
                name: "code_execution".to_owned(),
                result: ToolResultValue { kind: ToolResultKind::Json, value: result },
                provider_executed: true,
            });
            return;
        }
        let Some(text) = part.text else {
            tracing::debug!("skipping a Gemini part of an unknown kind");
            return;
        };
        if text.is_empty() && signature_meta.is_none() {
            return;
        }
        let kind = if part.thought == Some(true) { BlockKind::Reasoning } else { BlockKind::Text };
        self.blocks.delta(kind, text, signature_meta, out);
    }

    fn on_function_call(&mut self, call: FunctionCall, signature: Option<String>, out: &mut Vec<LlmEvent>) {
        self.blocks.close(out);
        if call.name.is_some() {
            // A named call starts a new call, which ends any call still streaming.
            self.finish_open_call(out);
        } else if let Some(open) = &mut self.open_call {
            for arg in call.partial_args.unwrap_or_default() {
                apply_partial_arg(&mut open.args, arg, &mut open.padding);
            }
            if open.signature.is_none() {
                open.signature = signature;
            }
            if call.will_continue != Some(true) {
                self.finish_open_call(out);
            }
            return;
        } else {
            tracing::debug!("skipping a Gemini function call part without a name");
            return;
        }
        let name = call.name.unwrap_or_default();
        let id = call.id.filter(|id| !id.is_empty()).unwrap_or_else(|| self.next_call_id());
        out.push(LlmEvent::ToolInputStart { id: id.clone(), name: name.clone(), provider_executed: false });
        let mut args = call.args.unwrap_or_else(|| Value::Object(Map::new()));
        let mut padding = 0;
        for arg in call.partial_args.unwrap_or_default() {
            apply_partial_arg(&mut args, arg, &mut padding);
        }
        let open = OpenCall { id, name, args, signature, padding };
        if call.will_continue == Some(true) {
            self.open_call = Some(open);
        } else {
            self.emit_call(open, out);
        }
    }

    fn finish_open_call(&mut self, out: &mut Vec<LlmEvent>) {
        if let Some(open) = self.open_call.take() {
            self.emit_call(open, out);
        }
    }

    fn emit_call(&mut self, call: OpenCall, out: &mut Vec<LlmEvent>) {
        self.any_function_call = true;
        let OpenCall { id, name, args, signature, .. } = call;
        out.push(LlmEvent::ToolInputDelta { id: id.clone(), name: name.clone(), text: args.to_string() });
        out.push(LlmEvent::ToolInputEnd { id: id.clone(), name: name.clone() });
        out.push(LlmEvent::ToolCall {
            id,
            name,
            input: args,
            provider_executed: false,
            provider_metadata: signature.as_deref().map(signature_meta),
        });
    }
}

fn signature_meta(signature: &str) -> ProviderMetadata {
    metadata("google", [("thoughtSignature", Value::String(signature.to_owned()))])
}

/// One step of a partial argument's JSON path.
enum Segment {
    Key(String),
    Index(usize),
}

/// Parses `$.a.b[0]` and `$['a']`; `None` for anything else.
fn parse_path(path: &str) -> Option<Vec<Segment>> {
    let mut rest = path.strip_prefix('$')?;
    let mut segments = Vec::new();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            if end == 0 {
                return None;
            }
            segments.push(Segment::Key(after[..end].to_owned()));
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let close = after.find(']')?;
            let inner = &after[..close];
            let quoted = inner
                .strip_prefix('\'')
                .and_then(|s| s.strip_suffix('\''))
                .or_else(|| inner.strip_prefix('"').and_then(|s| s.strip_suffix('"')));
            match quoted {
                Some(key) => segments.push(Segment::Key(key.to_owned())),
                None => segments.push(Segment::Index(inner.parse().ok()?)),
            }
            rest = &after[close + 1..];
        } else {
            return None;
        }
    }
    Some(segments)
}

/// The null slots writing at `segments` would pad arrays with: an index past the end of an
/// array (or where no array is yet) fills the gap before it with nulls.
fn padding_needed(args: &Value, segments: &[Segment]) -> usize {
    let mut target = Some(args);
    let mut padding = 0usize;
    for segment in segments {
        target = match (segment, target) {
            (Segment::Key(key), Some(Value::Object(map))) => map.get(key),
            (Segment::Key(_), _) => None,
            (Segment::Index(index), Some(Value::Array(items))) => {
                padding = padding.saturating_add(index.saturating_sub(items.len()));
                items.get(*index)
            }
            (Segment::Index(index), _) => {
                padding = padding.saturating_add(*index);
                None
            }
        };
    }
    padding
}

/// Writes one streamed argument fragment into the arguments object: strings append (a long
/// string arrives in pieces), other values replace. `padding` counts the null slots the call's
/// fragments padded arrays with so far, within [`MAX_PATH_PADDING`].
fn apply_partial_arg(args: &mut Value, arg: PartialArg, padding: &mut usize) {
    let Some(segments) = arg.json_path.as_deref().and_then(parse_path) else {
        tracing::debug!(path = ?arg.json_path, "skipping a partial argument with an unsupported path");
        return;
    };
    if segments.len() > MAX_PATH_DEPTH {
        tracing::debug!(depth = segments.len(), "skipping a partial argument with a too deep path");
        return;
    }
    if segments.iter().any(|s| matches!(s, Segment::Index(i) if *i > MAX_PATH_INDEX)) {
        tracing::debug!(path = ?arg.json_path, "skipping a partial argument with a huge array index");
        return;
    }
    let needed = padding_needed(args, &segments);
    if needed > MAX_PATH_PADDING.saturating_sub(*padding) {
        tracing::debug!(path = ?arg.json_path, "skipping a partial argument that pads arrays too much");
        return;
    }
    *padding += needed;
    let mut target = args;
    for segment in segments {
        target = match segment {
            Segment::Key(key) => {
                if !target.is_object() {
                    *target = Value::Object(Map::new());
                }
                match target {
                    Value::Object(map) => map.entry(key).or_insert(Value::Null),
                    _ => return,
                }
            }
            Segment::Index(index) => {
                if !target.is_array() {
                    *target = Value::Array(Vec::new());
                }
                match target {
                    Value::Array(items) => {
                        if items.len() <= index {
                            items.resize(index + 1, Value::Null);
                        }
                        &mut items[index]
                    }
                    _ => return,
                }
            }
        };
    }
    if let Some(piece) = arg.string_value {
        match target {
            Value::String(existing) => existing.push_str(&piece),
            other => *other = Value::String(piece),
        }
    } else if let Some(number) = arg.number_value {
        *target = Value::Number(number);
    } else if let Some(flag) = arg.bool_value {
        *target = Value::Bool(flag);
    } else if arg.null_value.is_some() {
        *target = Value::Null;
    }
}

/// Maps a Gemini finish reason; `STOP` with function calls is `tool-calls`.
fn finish_reason(reason: Option<&str>, any_function_call: bool) -> FinishReason {
    match reason {
        Some("STOP") if any_function_call => FinishReason::ToolCalls,
        Some("STOP") => FinishReason::Stop,
        Some("MAX_TOKENS") => FinishReason::Length,
        Some("SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY") => {
            FinishReason::ContentFilter
        }
        Some(_) | None => FinishReason::Unknown,
    }
}

impl WireParser for GeminiParser {
    type Event = Chunk;
    const DONE_MARKER: DoneMarker = DoneMarker::Parsed;
    const STARTS_STEP_ON_FIRST_EVENT: bool = true;

    fn progress(&mut self) -> &mut Progress {
        &mut self.progress
    }

    fn finished(&self) -> bool {
        self.done
    }

    fn on_parsed(&mut self, chunk: Chunk, data: &str, out: &mut Vec<LlmEvent>) -> Result<(), LlmError> {
        self.on_chunk(chunk, data, out)
    }

    fn on_body_end(&mut self, out: &mut Vec<LlmEvent>) -> Result<(), LlmError> {
        if self.finish_reason.is_none() {
            return Err(LlmError::Truncated { expected: "finishReason" });
        }
        self.blocks.close(out);
        self.finish_open_call(out);
        let reason = finish_reason(self.finish_reason.as_deref(), self.any_function_call);
        out.push(LlmEvent::StepFinish {
            index: 0,
            reason,
            usage: self.usage.clone(),
            provider_metadata: None,
        });
        out.push(LlmEvent::Finish { reason, usage: self.usage.clone() });
        self.done = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn arg(path: &str, mut value: Value) -> PartialArg {
        value["jsonPath"] = json!(path);
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn partial_args_build_nested_values() {
        let mut args = json!({});
        let mut padding = 0;
        apply_partial_arg(&mut args, arg("$.a.b", json!({"stringValue": "he"})), &mut padding);
        apply_partial_arg(&mut args, arg("$.a.b", json!({"stringValue": "llo"})), &mut padding);
        apply_partial_arg(&mut args, arg("$.list[1]", json!({"numberValue": 3})), &mut padding);
        apply_partial_arg(&mut args, arg("$['x y']", json!({"boolValue": true})), &mut padding);
        apply_partial_arg(&mut args, arg("$.big[99999]", json!({"numberValue": 1})), &mut padding);
        apply_partial_arg(&mut args, arg("nonsense", json!({"numberValue": 1})), &mut padding);
        assert_eq!(args, json!({"a": {"b": "hello"}, "list": [null, 3], "x y": true}));
        assert_eq!(padding, 1);
    }

    #[test]
    fn partial_arg_paths_are_bounded_in_depth() {
        let mut args = json!({});
        let mut padding = 0;
        let deepest = format!("${}", ".a".repeat(MAX_PATH_DEPTH));
        apply_partial_arg(&mut args, arg(&deepest, json!({"numberValue": 1})), &mut padding);
        let too_deep = format!("${}", "[0]".repeat(MAX_PATH_DEPTH + 1));
        apply_partial_arg(&mut args, arg(&too_deep, json!({"numberValue": 2})), &mut padding);
        let mut expected = json!(1);
        for _ in 0..MAX_PATH_DEPTH {
            expected = json!({ "a": expected });
        }
        assert_eq!(args, expected);
    }

    #[test]
    fn partial_args_pad_arrays_within_a_budget_per_call() {
        let mut args = json!({});
        let mut padding = 0;
        // In order, nothing is padded.
        for i in 0..3 {
            apply_partial_arg(&mut args, arg(&format!("$.a[{i}]"), json!({"numberValue": i})), &mut padding);
        }
        assert_eq!(padding, 0);
        apply_partial_arg(&mut args, arg("$.b[4000]", json!({"numberValue": 1})), &mut padding);
        assert_eq!(padding, 4000);
        // Past the budget a fragment is skipped whole (`$[4096][4096]...` pads 4096 per level).
        apply_partial_arg(&mut args, arg("$.c[100][4096]", json!({"numberValue": 1})), &mut padding);
        apply_partial_arg(&mut args, arg("$.b[5][96]", json!({"numberValue": 1})), &mut padding);
        assert_eq!(padding, 4096);
        assert_eq!(args["a"], json!([0, 1, 2]));
        assert_eq!(args.get("c"), None);
        assert_eq!(args["b"][5].as_array().map(Vec::len), Some(97));
    }
}
