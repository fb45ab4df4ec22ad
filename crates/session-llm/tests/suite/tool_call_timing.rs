//! SPEC 1.1: each adapter yields a tool call (`tool-input-end`, `tool-call`) as soon as the wire
//! says its arguments are complete, before what follows it on the wire, so that its tool starts
//! while the model is still streaming. Hand-written streams, event sequences as insta snapshots.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use session_core::LlmEvent;
use session_llm::{Api, replay};

use super::support::replay_json;

/// The events of `body`, snapshotted under `name` (in `tests/snapshots/tool_calls/`).
fn snapshot(name: &str, api: Api, body: &str) -> Vec<LlmEvent> {
    let result = replay(api, body.as_bytes());
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("../snapshots/tool_calls");
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_json_snapshot!(name, replay_json(&result)));
    assert_eq!(result.error, None, "{name}");
    result.events
}

/// A short label per event: `type` or `type:id`, to check the order.
fn labels(events: &[LlmEvent]) -> Vec<String> {
    events
        .iter()
        .map(|event| {
            let value = serde_json::to_value(event).unwrap();
            let kind = value["type"].as_str().unwrap_or("?").to_owned();
            match value.get("id").and_then(Value::as_str) {
                Some(id) => format!("{kind}:{id}"),
                None => kind,
            }
        })
        .collect()
}

fn position(labels: &[String], label: &str) -> usize {
    labels.iter().position(|l| l == label).unwrap_or_else(|| panic!("no {label} in {labels:?}"))
}

fn tool_calls(events: &[LlmEvent]) -> Vec<(String, Value)> {
    events
        .iter()
        .filter_map(|event| match event {
            LlmEvent::ToolCall { id, input, .. } => Some((id.clone(), input.clone())),
            _ => None,
        })
        .collect()
}

/// One Chat chunk with this delta (and finish reason).
fn chat(delta: Value, finish: Option<&str>) -> String {
    let chunk = json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {chunk}\n\n")
}

/// A Chat chunk opening call `index` with `id` and `name`, and its first arguments.
fn chat_call(index: u32, id: &str, name: &str, arguments: &str) -> String {
    chat(
        json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                               "function": {"name": name, "arguments": arguments}}]}),
        None,
    )
}

/// A Chat chunk adding `arguments` to call `index`.
fn chat_args(index: u32, arguments: &str) -> String {
    chat(json!({"tool_calls": [{"index": index, "function": {"arguments": arguments}}]}), None)
}

fn chat_finish() -> String {
    format!("{}data: [DONE]\n\n", chat(json!({}), Some("tool_calls")))
}

#[test]
fn spec_1_1_chat_emits_each_tool_call_when_its_arguments_complete() {
    let body = [
        chat_call(0, "call_a", "read", ""),
        chat_args(0, "{\"path\":"),
        chat_args(0, "\"a.txt\"}"),
        chat(json!({"content": "Reading both."}), None),
        chat_call(1, "call_b", "read", "{\"pa"),
        chat_args(1, "th\":\"b.txt\"}"),
        chat_finish(),
    ]
    .concat();
    let events = snapshot("chat-each-call-when-complete", Api::OpenAiChat, &body);
    let labels = labels(&events);
    // Call a is yielded at the delta that completes it: before the text and call b after it.
    assert!(position(&labels, "tool-call:call_a") < position(&labels, "text-start:text-0"), "{labels:?}");
    assert!(
        position(&labels, "tool-call:call_a") < position(&labels, "tool-input-start:call_b"),
        "{labels:?}"
    );
    // Call b too, before the finish chunk.
    assert!(position(&labels, "tool-call:call_b") < position(&labels, "step-finish"), "{labels:?}");
    assert_eq!(
        tool_calls(&events),
        [("call_a".into(), json!({"path": "a.txt"})), ("call_b".into(), json!({"path": "b.txt"}))]
    );
}

#[test]
fn spec_1_1_chat_a_prefix_that_is_not_whole_json_does_not_end_a_call() {
    // `{"a":1,"b":{"c":2}` ends with a brace but is not whole; `{"a":1` and `{"a":1,"b":{"c":2}}`
    // with more to come must not end the call either.
    let body = [
        chat_call(0, "call_a", "probe", "{\"a\":1"),
        chat_args(0, ",\"b\":{\"c\":2}"),
        chat_args(0, "}"),
        chat_finish(),
    ]
    .concat();
    let events = snapshot("chat-prefix-not-whole", Api::OpenAiChat, &body);
    let labels = labels(&events);
    let deltas: Vec<usize> =
        labels.iter().enumerate().filter(|(_, l)| *l == "tool-input-delta:call_a").map(|(i, _)| i).collect();
    assert_eq!(deltas.len(), 3, "{labels:?}");
    assert_eq!(position(&labels, "tool-input-end:call_a"), deltas[2] + 1, "{labels:?}");
    assert_eq!(tool_calls(&events), [("call_a".into(), json!({"a": 1, "b": {"c": 2}}))]);
}

#[test]
fn spec_1_1_chat_empty_arguments_wait_for_the_finish() {
    // Empty arguments are not a whole object: the calls stay open until the finish reason
    // comes; another call starting does not end them (providers interleave calls).
    let body = [
        chat_call(0, "call_a", "todo", ""),
        chat_call(1, "call_b", "todo", ""),
        chat(json!({"content": "after"}), None),
        chat_finish(),
    ]
    .concat();
    let events = snapshot("chat-empty-arguments", Api::OpenAiChat, &body);
    let labels = labels(&events);
    assert!(
        position(&labels, "tool-input-start:call_b") < position(&labels, "tool-call:call_a"),
        "{labels:?}"
    );
    assert!(position(&labels, "text-start:text-0") < position(&labels, "tool-call:call_a"), "{labels:?}");
    assert_eq!(tool_calls(&events), [("call_a".into(), json!({})), ("call_b".into(), json!({}))]);
}

#[test]
fn spec_1_1_chat_interleaved_arguments_complete_each_call_and_a_call_is_never_emitted_twice() {
    // `index: 0` and `index: 1` stream alternately; each call starts only
    // when its own arguments are whole.
    let body = [
        chat_call(0, "call_a", "read", "{\"path\": \"a"),
        chat_call(1, "call_b", "read", "{\"path\":\"b\"}"),
        // Late text for a call already complete is not part of it.
        chat_args(1, "{\"path\":\"c\"}"),
        chat_args(0, "\"}"),
        chat_finish(),
    ]
    .concat();
    let events = snapshot("chat-invalid-arguments", Api::OpenAiChat, &body);
    let labels = labels(&events);
    assert!(position(&labels, "tool-call:call_b") < position(&labels, "tool-call:call_a"), "{labels:?}");
    assert_eq!(
        tool_calls(&events),
        [("call_b".into(), json!({"path": "b"})), ("call_a".into(), json!({"path": "a"}))]
    );
}

#[test]
fn spec_1_1_chat_arguments_never_whole_reach_the_processor_as_text_at_the_finish() {
    let body = [
        chat_call(0, "call_a", "read", "{\"path\": \"a"),
        chat_call(1, "call_b", "read", "{\"path\":\"b\"}"),
        chat_finish(),
    ]
    .concat();
    let result = replay(Api::OpenAiChat, body.as_bytes());
    assert_eq!(result.error, None);
    let events = result.events;
    assert_eq!(
        tool_calls(&events),
        [("call_b".into(), json!({"path": "b"})), ("call_a".into(), json!("{\"path\": \"a"))]
    );
}

fn named(value: &Value) -> String {
    format!("event: {}\ndata: {value}\n\n", value["type"].as_str().unwrap_or("message"))
}

#[test]
fn spec_1_1_anthropic_emits_a_tool_call_at_its_content_block_stop() {
    let block_start = |index: u32, id: &str| {
        named(&json!({"type": "content_block_start", "index": index,
                      "content_block": {"type": "tool_use", "id": id, "name": "read", "input": {}}}))
    };
    let json_delta = |index: u32, part: &str| {
        named(&json!({"type": "content_block_delta", "index": index,
                      "delta": {"type": "input_json_delta", "partial_json": part}}))
    };
    let stop = |index: u32| named(&json!({"type": "content_block_stop", "index": index}));
    let body = [
        named(&json!({"type": "message_start", "message": {"usage": {"input_tokens": 5, "output_tokens": 1}}})),
        block_start(0, "toolu_a"),
        json_delta(0, "{\"path\":\"a.txt\"}"),
        stop(0),
        block_start(1, "toolu_b"),
        json_delta(1, "{\"path\":\"b.txt\"}"),
        stop(1),
        named(&json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}})),
        named(&json!({"type": "message_stop"})),
    ]
    .concat();
    let events = snapshot("anthropic-call-at-block-stop", Api::Anthropic, &body);
    let labels = labels(&events);
    assert!(
        position(&labels, "tool-call:toolu_a") < position(&labels, "tool-input-start:toolu_b"),
        "{labels:?}"
    );
    assert!(position(&labels, "tool-call:toolu_b") < position(&labels, "step-finish"), "{labels:?}");
}

#[test]
fn spec_1_1_responses_emits_a_function_call_at_its_output_item_done() {
    let added = |index: u32, call: &str| {
        named(&json!({"type": "response.output_item.added", "output_index": index,
                      "item": {"type": "function_call", "id": format!("fc_{call}"), "call_id": call,
                               "name": "read", "arguments": ""}}))
    };
    let delta = |index: u32, text: &str| {
        named(
            &json!({"type": "response.function_call_arguments.delta", "output_index": index, "delta": text}),
        )
    };
    let done = |index: u32, call: &str, arguments: &str| {
        [
            named(&json!({"type": "response.function_call_arguments.done", "output_index": index,
                          "arguments": arguments})),
            named(&json!({"type": "response.output_item.done", "output_index": index,
                          "item": {"type": "function_call", "id": format!("fc_{call}"), "call_id": call,
                                   "name": "read", "arguments": arguments}})),
        ]
        .concat()
    };
    let body = [
        named(&json!({"type": "response.created", "response": {"id": "resp_1"}})),
        added(0, "call_a"),
        delta(0, "{\"path\":\"a.txt\"}"),
        done(0, "call_a", "{\"path\":\"a.txt\"}"),
        added(1, "call_b"),
        delta(1, "{\"path\":\"b.txt\"}"),
        done(1, "call_b", "{\"path\":\"b.txt\"}"),
        named(&json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed"}})),
    ]
    .concat();
    let events = snapshot("responses-call-at-item-done", Api::OpenAiResponses, &body);
    let labels = labels(&events);
    assert!(
        position(&labels, "tool-call:call_a") < position(&labels, "tool-input-start:call_b"),
        "{labels:?}"
    );
    assert!(position(&labels, "tool-call:call_b") < position(&labels, "step-finish"), "{labels:?}");
}

#[test]
fn spec_1_1_gemini_emits_a_function_call_on_arrival() {
    let chunk = |parts: Value, finish: Option<&str>| {
        let mut candidate = json!({"content": {"role": "model", "parts": parts}});
        if let Some(finish) = finish {
            candidate["finishReason"] = json!(finish);
        }
        format!("data: {}\r\n\r\n", json!({"responseId": "r1", "candidates": [candidate]}))
    };
    let call = |path: &str| json!({"functionCall": {"name": "read", "args": {"path": path}}});
    let body = [
        chunk(json!([call("a.txt")]), None),
        chunk(json!([{"text": "And the other one."}]), None),
        chunk(json!([call("b.txt")]), Some("STOP")),
    ]
    .concat();
    let events = snapshot("gemini-call-on-arrival", Api::Gemini, &body);
    let labels = labels(&events);
    assert!(position(&labels, "tool-call:call-r1-0") < position(&labels, "text-start:text-0"), "{labels:?}");
    assert!(position(&labels, "tool-call:call-r1-1") < position(&labels, "step-finish"), "{labels:?}");
}
