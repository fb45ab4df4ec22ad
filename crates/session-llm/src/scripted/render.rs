//! A reply in each provider's wire format (SSE chunks, one event per chunk), and faults as the
//! providers send them: error bodies and statuses, and streams that go wrong. Pure: the
//! in-process provider feeds these bytes to the matching parser, the test server writes them.

use bytes::Bytes;
use serde_json::{Value, json};
use session_core::FinishReason;

use super::reply::{Reply, ReplyUsage};
use super::script::{Fault, FaultKind, Script};
use crate::decode::Api;

/// What a fault does to a request.
#[derive(Debug, Clone, PartialEq)]
pub enum FaultAction {
    /// An HTTP error response.
    Respond {
        /// The status.
        status: u16,
        /// Response headers (the content type is the server's business).
        headers: Vec<(String, String)>,
        /// The JSON body.
        body: String,
    },
    /// The connection is reset before any response.
    ResetBeforeResponse,
    /// A reply whose stream goes wrong after `after` chunks.
    Stream {
        /// The reply being streamed.
        reply: Reply,
        /// What goes wrong.
        fault: StreamFault,
        /// How many chunks go out first.
        after: usize,
    },
}

/// How a stream goes wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StreamFault {
    /// The connection is reset.
    Reset,
    /// Nothing more is sent, and the connection stays open.
    Stall,
    /// An event that is not JSON, then the rest.
    Malformed,
    /// The body ends before the terminal event.
    Cut,
}

impl StreamFault {
    /// The fault's name in scripts.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Reset => "reset",
            Self::Stall => "stall",
            Self::Malformed => "malformed",
            Self::Cut => "cut",
        }
    }
}

impl FaultAction {
    /// The action of `fault` on a request answered in `api` with `reply`.
    pub fn new(fault: &Fault, api: Api, script: &Script, reply: Reply) -> Self {
        let stream = |fault: StreamFault, default_after: usize, after: Option<usize>| Self::Stream {
            reply: reply.clone(),
            fault,
            after: after.unwrap_or(default_after),
        };
        let status = match fault.kind {
            FaultKind::RateLimited => 429,
            FaultKind::ServerError | FaultKind::Status => fault.status.unwrap_or(500),
            FaultKind::BadGateway => 502,
            FaultKind::Unavailable => 503,
            FaultKind::Overloaded => 529,
            FaultKind::Overflow => 400,
            FaultKind::Reset => {
                return match fault.after_chunks {
                    None => Self::ResetBeforeResponse,
                    Some(after) => stream(StreamFault::Reset, after, None),
                };
            }
            FaultKind::Stall => return stream(StreamFault::Stall, 0, fault.after_chunks),
            FaultKind::Malformed => return stream(StreamFault::Malformed, 1, fault.after_chunks),
            FaultKind::Cut => return stream(StreamFault::Cut, 1, fault.after_chunks),
        };
        let mut headers = Vec::new();
        if fault.kind == FaultKind::RateLimited {
            if let Some(ms) = fault.retry_after_ms {
                headers.push(("retry-after-ms".to_owned(), ms.to_string()));
            }
            if let Some(value) = &fault.retry_after {
                headers.push(("retry-after".to_owned(), value.clone()));
            }
        }
        headers.extend(fault.headers.iter().map(|(name, value)| (name.to_ascii_lowercase(), value.clone())));
        let body = match (&fault.body, fault.kind) {
            (Some(body), _) => body.clone(),
            (None, FaultKind::Status) => json!({"error": {"message": "mock fault"}}),
            (None, FaultKind::Overflow) => overflow_body(api, script.model.context),
            (None, _) => error_body(api, status),
        };
        Self::Respond { status, headers, body: body.to_string() }
    }
}

/// A provider's error body for an HTTP status, in its own shape.
pub fn error_body(api: Api, status: u16) -> Value {
    let message = match status {
        429 => "Rate limit reached (mock). Please retry.",
        502 => "Bad gateway (mock)",
        503 => "Service unavailable (mock)",
        529 => "Overloaded (mock)",
        _ => "Internal server error (mock)",
    };
    match api {
        Api::OpenAiChat | Api::OpenAiResponses => match status {
            429 => {
                json!({"error": {"message": message, "type": "rate_limit_error", "code": "rate_limit_exceeded"}})
            }
            _ => json!({"error": {"message": message, "type": "server_error", "code": null}}),
        },
        Api::Anthropic => {
            let kind = match status {
                429 => "rate_limit_error",
                529 => "overloaded_error",
                _ => "api_error",
            };
            json!({"type": "error", "error": {"type": kind, "message": message}})
        }
        Api::Gemini => {
            let kind = match status {
                429 => "RESOURCE_EXHAUSTED",
                500 => "INTERNAL",
                _ => "UNAVAILABLE",
            };
            json!({"error": {"code": status, "message": message, "status": kind}})
        }
    }
}

/// A provider's context-overflow error body (HTTP 400), worded as the provider words it.
pub fn overflow_body(api: Api, context: u64) -> Value {
    let sent = context.saturating_add(1234);
    match api {
        Api::OpenAiChat => json!({"error": {
            "message": format!(
                "This model's maximum context length is {context} tokens. However, your messages resulted \
                 in {sent} tokens. Please reduce the length of the messages."
            ),
            "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded",
        }}),
        Api::OpenAiResponses => json!({"error": {
            "message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
            "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded",
        }}),
        Api::Anthropic => json!({"type": "error", "error": {
            "type": "invalid_request_error",
            "message": format!("prompt is too long: {sent} tokens > {context} maximum"),
        }}),
        Api::Gemini => json!({"error": {
            "code": 400,
            "message": format!(
                "The input token count ({sent}) exceeds the maximum number of tokens allowed ({context})."
            ),
            "status": "INVALID_ARGUMENT",
        }}),
    }
}

/// The bytes of a streamed answer and how the connection ends after them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireStream {
    /// SSE chunks, one event each, written with the reply's pacing.
    pub chunks: Vec<Bytes>,
    /// What happens after the last chunk.
    pub ending: WireEnding,
}

/// How a streamed answer ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WireEnding {
    /// The body ends (properly or not: a cut stream ends here too).
    End,
    /// The connection is reset.
    Reset,
    /// Nothing more is sent until the client gives up.
    Stall,
}

/// The reply as `api` streams it, with a stream fault applied.
pub fn wire_stream(api: Api, reply: &Reply, model: &str, fault: Option<(StreamFault, usize)>) -> WireStream {
    let (mut chunks, complete_at) = match &reply.recorded {
        Some(bytes) => {
            let events = split_events(bytes);
            let last = events.len().saturating_sub(1);
            (events, last)
        }
        None => render(api, reply, model),
    };
    let Some((fault, after)) = fault else {
        return WireStream { chunks, ending: WireEnding::End };
    };
    let ending = match fault {
        StreamFault::Cut => {
            // Cut before the chunk that makes the stream complete, or it would not be cut.
            chunks.truncate(after.min(complete_at));
            WireEnding::End
        }
        StreamFault::Malformed => {
            chunks.insert(after.min(complete_at), malformed_event(api));
            WireEnding::End
        }
        StreamFault::Reset => {
            chunks.truncate(after);
            WireEnding::Reset
        }
        StreamFault::Stall => {
            chunks.truncate(after);
            WireEnding::Stall
        }
    };
    WireStream { chunks, ending }
}

/// A recorded body split after each blank line, so that pacing applies per event.
fn split_events(bytes: &Bytes) -> Vec<Bytes> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut at = 0;
    while at + 1 < bytes.len() {
        let end = match (bytes[at], bytes[at + 1], bytes.get(at + 2)) {
            (b'\n', b'\n', _) => Some(at + 2),
            (b'\n', b'\r', Some(b'\n')) => Some(at + 3),
            _ => None,
        };
        match end {
            Some(end) => {
                out.push(bytes.slice(start..end));
                start = end;
                at = end;
            }
            None => at += 1,
        }
    }
    if start < bytes.len() {
        out.push(bytes.slice(start..));
    }
    out
}

/// An event whose data is cut-off JSON, in the format's framing.
fn malformed_event(api: Api) -> Bytes {
    let text = match api {
        Api::OpenAiChat => "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"oops\"\n\n",
        Api::OpenAiResponses => {
            "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\n\n"
        }
        Api::Anthropic => {
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":\n\n"
        }
        Api::Gemini => "data: {\"candidates\":[{\"content\":\n\n",
    };
    Bytes::from_static(text.as_bytes())
}

/// `text` in pieces of `n` characters (at least one piece, as mockllm's `chunks_of`).
fn pieces(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    chars.chunks(n.max(1)).map(|piece| piece.iter().collect()).collect()
}

fn data(value: &Value) -> Bytes {
    Bytes::from(format!("data: {value}\n\n"))
}

fn named(value: &Value) -> Bytes {
    let kind = value.get("type").and_then(Value::as_str).unwrap_or("message");
    Bytes::from(format!("event: {kind}\ndata: {value}\n\n"))
}

/// The chunks of `reply` in `api`, and the index of the chunk that completes the stream.
fn render(api: Api, reply: &Reply, model: &str) -> (Vec<Bytes>, usize) {
    match api {
        Api::OpenAiChat => render_chat(reply, model),
        Api::OpenAiResponses => render_responses(reply, model),
        Api::Anthropic => render_anthropic(reply, model),
        Api::Gemini => render_gemini(reply, model),
    }
}

fn chat_usage(usage: &ReplyUsage) -> Value {
    let mut details = json!({"cached_tokens": usage.cached});
    if usage.cache_write > 0 {
        details["cache_write_tokens"] = json!(usage.cache_write);
    }
    json!({
        "prompt_tokens": usage.prompt,
        "completion_tokens": usage.completion,
        "total_tokens": usage.prompt.saturating_add(usage.completion),
        "prompt_tokens_details": details,
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning},
    })
}

/// Chat Completions as mockllm streams it; reasoning as DeepSeek's `reasoning_content`.
fn render_chat(reply: &Reply, model: &str) -> (Vec<Bytes>, usize) {
    let id = format!("chatcmpl-mock-{}", reply.turn);
    let chunk = |delta: Value, finish: Option<&str>| {
        data(&json!({
            "id": id, "object": "chat.completion.chunk", "created": 0, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }))
    };
    let mut out = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    if !reply.reasoning.is_empty() {
        for piece in pieces(&reply.reasoning, reply.chunk_chars) {
            out.push(chunk(json!({"reasoning_content": piece}), None));
        }
    }
    if !reply.text.is_empty() {
        for piece in pieces(&reply.text, reply.chunk_chars) {
            out.push(chunk(json!({"content": piece}), None));
        }
    }
    for (index, call) in reply.calls.iter().enumerate() {
        out.push(chunk(
            json!({"tool_calls": [{"index": index, "id": call.id, "type": "function",
                                   "function": {"name": call.name, "arguments": ""}}]}),
            None,
        ));
        for piece in pieces(&call.arguments(), reply.chunk_chars.saturating_mul(2)) {
            out.push(chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                None,
            ));
        }
    }
    let finish = match reply.finish {
        FinishReason::ToolCalls => "tool_calls",
        _ => "stop",
    };
    let complete_at = out.len();
    out.push(chunk(json!({}), Some(finish)));
    out.push(data(&json!({
        "id": id, "object": "chat.completion.chunk", "created": 0, "model": model,
        "choices": [], "usage": chat_usage(&reply.usage),
    })));
    out.push(Bytes::from_static(b"data: [DONE]\n\n"));
    (out, complete_at)
}

/// Responses as mockllm streams it, with a reasoning item first when there is reasoning.
fn render_responses(reply: &Reply, model: &str) -> (Vec<Bytes>, usize) {
    let turn = reply.turn;
    let mut events: Vec<Value> = Vec::new();
    let response = json!({"id": format!("resp_mock_{turn}"), "object": "response", "created_at": 0,
                          "status": "in_progress", "model": model, "output": []});
    events.push(json!({"type": "response.created", "response": response}));
    events.push(json!({"type": "response.in_progress", "response": response}));
    let mut output = Vec::new();
    let mut index = 0usize;
    if !reply.reasoning.is_empty() {
        let id = format!("rs_mock_{turn}");
        events.push(json!({"type": "response.output_item.added", "output_index": index,
                           "item": {"type": "reasoning", "id": id, "summary": []}}));
        events.push(json!({"type": "response.reasoning_summary_part.added", "item_id": id,
                           "output_index": index, "summary_index": 0,
                           "part": {"type": "summary_text", "text": ""}}));
        for piece in pieces(&reply.reasoning, reply.chunk_chars) {
            events.push(json!({"type": "response.reasoning_summary_text.delta", "item_id": id,
                               "output_index": index, "summary_index": 0, "delta": piece}));
        }
        let part = json!({"type": "summary_text", "text": reply.reasoning});
        events.push(json!({"type": "response.reasoning_summary_text.done", "item_id": id,
                           "output_index": index, "summary_index": 0, "text": reply.reasoning}));
        events.push(json!({"type": "response.reasoning_summary_part.done", "item_id": id,
                           "output_index": index, "summary_index": 0, "part": part}));
        let item = json!({"type": "reasoning", "id": id, "summary": [part]});
        events.push(json!({"type": "response.output_item.done", "output_index": index, "item": item}));
        output.push(item);
        index += 1;
    }
    if !reply.text.is_empty() {
        let id = format!("msg_mock_{turn}");
        events.push(json!({"type": "response.output_item.added", "output_index": index,
                           "item": {"type": "message", "id": id, "role": "assistant",
                                    "status": "in_progress", "content": []}}));
        events.push(json!({"type": "response.content_part.added", "item_id": id, "output_index": index,
                           "content_index": 0,
                           "part": {"type": "output_text", "text": "", "annotations": []}}));
        for piece in pieces(&reply.text, reply.chunk_chars) {
            events.push(json!({"type": "response.output_text.delta", "item_id": id, "output_index": index,
                               "content_index": 0, "delta": piece}));
        }
        events.push(json!({"type": "response.output_text.done", "item_id": id, "output_index": index,
                           "content_index": 0, "text": reply.text}));
        let part = json!({"type": "output_text", "text": reply.text, "annotations": []});
        events.push(json!({"type": "response.content_part.done", "item_id": id, "output_index": index,
                           "content_index": 0, "part": part}));
        let item = json!({"type": "message", "id": id, "role": "assistant", "status": "completed",
                          "content": [part]});
        events.push(json!({"type": "response.output_item.done", "output_index": index, "item": item}));
        output.push(item);
        index += 1;
    }
    for call in &reply.calls {
        let item_id = format!("fc_{}", call.id);
        let arguments = call.arguments();
        events.push(json!({"type": "response.output_item.added", "output_index": index,
                           "item": {"type": "function_call", "id": item_id, "call_id": call.id,
                                    "name": call.name, "arguments": "", "status": "in_progress"}}));
        for piece in pieces(&arguments, reply.chunk_chars.saturating_mul(2)) {
            events.push(json!({"type": "response.function_call_arguments.delta", "item_id": item_id,
                               "output_index": index, "delta": piece}));
        }
        events.push(json!({"type": "response.function_call_arguments.done", "item_id": item_id,
                           "output_index": index, "arguments": arguments}));
        let item = json!({"type": "function_call", "id": item_id, "call_id": call.id, "name": call.name,
                          "arguments": arguments, "status": "completed"});
        events.push(json!({"type": "response.output_item.done", "output_index": index, "item": item}));
        output.push(item);
        index += 1;
    }
    let usage = &reply.usage;
    let mut done = response;
    done["status"] = json!("completed");
    done["output"] = Value::Array(output);
    done["usage"] = json!({
        "input_tokens": usage.prompt,
        "input_tokens_details": {"cached_tokens": usage.cached},
        "output_tokens": usage.completion,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning},
        "total_tokens": usage.prompt.saturating_add(usage.completion),
    });
    events.push(json!({"type": "response.completed", "response": done}));
    let chunks: Vec<Bytes> = events
        .into_iter()
        .enumerate()
        .map(|(sequence, mut event)| {
            event["sequence_number"] = json!(sequence);
            named(&event)
        })
        .collect();
    let complete_at = chunks.len().saturating_sub(1);
    (chunks, complete_at)
}

/// Anthropic Messages: thinking (with a signature), text and tool-use blocks.
fn render_anthropic(reply: &Reply, model: &str) -> (Vec<Bytes>, usize) {
    let usage = &reply.usage;
    // Anthropic's input count leaves out the cache; the parser adds it back.
    let input = usage.prompt.saturating_sub(usage.cached).saturating_sub(usage.cache_write);
    let mut events = vec![json!({"type": "message_start", "message": {
        "id": format!("msg_mock_{}", reply.turn), "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": input, "cache_creation_input_tokens": usage.cache_write,
                  "cache_read_input_tokens": usage.cached, "output_tokens": 1},
    }})];
    let mut index = 0usize;
    let delta =
        |index: usize, delta: Value| json!({"type": "content_block_delta", "index": index, "delta": delta});
    if !reply.reasoning.is_empty() {
        events.push(json!({"type": "content_block_start", "index": index,
                           "content_block": {"type": "thinking", "thinking": "", "signature": ""}}));
        for piece in pieces(&reply.reasoning, reply.chunk_chars) {
            events.push(delta(index, json!({"type": "thinking_delta", "thinking": piece})));
        }
        let signature = format!("mock-signature-{}", reply.turn);
        events.push(delta(index, json!({"type": "signature_delta", "signature": signature})));
        events.push(json!({"type": "content_block_stop", "index": index}));
        index += 1;
    }
    if !reply.text.is_empty() {
        events.push(json!({"type": "content_block_start", "index": index,
                           "content_block": {"type": "text", "text": ""}}));
        for piece in pieces(&reply.text, reply.chunk_chars) {
            events.push(delta(index, json!({"type": "text_delta", "text": piece})));
        }
        events.push(json!({"type": "content_block_stop", "index": index}));
        index += 1;
    }
    for call in &reply.calls {
        events.push(json!({"type": "content_block_start", "index": index,
                           "content_block": {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}}));
        for piece in pieces(&call.arguments(), reply.chunk_chars.saturating_mul(2)) {
            events.push(delta(index, json!({"type": "input_json_delta", "partial_json": piece})));
        }
        events.push(json!({"type": "content_block_stop", "index": index}));
        index += 1;
    }
    let stop_reason = match reply.finish {
        FinishReason::ToolCalls => "tool_use",
        _ => "end_turn",
    };
    let mut final_usage = json!({"output_tokens": usage.completion});
    if usage.reasoning > 0 {
        final_usage["output_tokens_details"] = json!({"thinking_tokens": usage.reasoning});
    }
    let delta = json!({"stop_reason": stop_reason, "stop_sequence": null});
    events.push(json!({"type": "message_delta", "delta": delta, "usage": final_usage}));
    events.push(json!({"type": "message_stop"}));
    let chunks: Vec<Bytes> = events.iter().map(named).collect();
    let complete_at = chunks.len().saturating_sub(1);
    (chunks, complete_at)
}

/// Gemini `streamGenerateContent?alt=sse`: thought parts, text parts, function calls (with
/// ids, so that replies are deterministic), then a finishing chunk with the usage.
fn render_gemini(reply: &Reply, model: &str) -> (Vec<Bytes>, usize) {
    let response_id = format!("mock-{}", reply.turn);
    let chunk = |parts: Value| {
        data(&json!({
            "candidates": [{"content": {"parts": parts, "role": "model"}, "index": 0}],
            "modelVersion": model, "responseId": response_id,
        }))
    };
    let mut out = Vec::new();
    if !reply.reasoning.is_empty() {
        for piece in pieces(&reply.reasoning, reply.chunk_chars) {
            out.push(chunk(json!([{"text": piece, "thought": true}])));
        }
    }
    if !reply.text.is_empty() {
        for piece in pieces(&reply.text, reply.chunk_chars) {
            out.push(chunk(json!([{"text": piece}])));
        }
    }
    for call in &reply.calls {
        out.push(chunk(json!([{"functionCall": {"id": call.id, "name": call.name, "args": call.input}}])));
    }
    let usage = &reply.usage;
    let mut metadata = json!({
        "promptTokenCount": usage.prompt,
        "candidatesTokenCount": usage.completion.saturating_sub(usage.reasoning),
        "totalTokenCount": usage.prompt.saturating_add(usage.completion),
    });
    if usage.cached > 0 {
        metadata["cachedContentTokenCount"] = json!(usage.cached);
    }
    if usage.reasoning > 0 {
        metadata["thoughtsTokenCount"] = json!(usage.reasoning);
    }
    let complete_at = out.len();
    out.push(data(&json!({
        "candidates": [{"content": {"parts": [{"text": ""}], "role": "model"}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": metadata, "modelVersion": model, "responseId": response_id,
    })));
    (out, complete_at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_bodies_split_per_event() {
        let body = Bytes::from_static(b"data: a\n\ndata: b\r\n\r\nevent: x\ndata: c\n\ntrailing");
        let events = split_events(&body);
        let texts: Vec<&[u8]> = events.iter().map(|event| event.as_ref()).collect();
        assert_eq!(
            texts,
            vec![
                &b"data: a\n\n"[..],
                &b"data: b\r\n\r\n"[..],
                &b"event: x\ndata: c\n\n"[..],
                &b"trailing"[..]
            ]
        );
        assert!(split_events(&Bytes::new()).is_empty());
    }

    #[test]
    fn pieces_split_characters() {
        assert_eq!(pieces("héllo", 2), vec!["hé", "ll", "o"]);
        assert_eq!(pieces("", 3), vec![""]);
    }
}
