//! Hand-written streams for the cases no recorded fixture covers.

use pretty_assertions::assert_eq;
use serde_json::json;
use session_core::{FinishReason, LlmEvent, Usage};
use session_llm::{Api, LlmError, replay};

fn events_of(api: Api, body: &str) -> (Vec<LlmEvent>, Option<LlmError>) {
    let result = replay(api, body.as_bytes());
    (result.events, result.error)
}

fn finish_reason(events: &[LlmEvent]) -> Option<FinishReason> {
    events.iter().find_map(|event| match event {
        LlmEvent::Finish { reason, .. } => Some(*reason),
        _ => None,
    })
}

const CHAT_TEXT: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n";

#[test]
fn chat_stream_cut_before_any_end_is_truncated() {
    let (events, error) = events_of(Api::OpenAiChat, CHAT_TEXT);
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(error, Some(LlmError::Truncated { expected: "[DONE]" }));
    assert_eq!(error.unwrap().to_string(), "stream ended before [DONE]");
}

#[test]
fn chat_text_on_both_sides_of_reasoning_is_one_text_block() {
    // As the AI SDK's OpenAI-compatible provider reads it: the text block stays
    // open across the second reasoning, which is a new reasoning block.
    let delta = |delta: serde_json::Value| {
        format!("data: {}\n\n", json!({"choices": [{"index": 0, "delta": delta}]}))
    };
    let body = [
        delta(json!({"reasoning_content": "First. "})),
        delta(json!({"content": "One. "})),
        delta(json!({"reasoning_content": "Second."})),
        delta(json!({"content": "Two."})),
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
            .to_owned(),
    ]
    .concat();
    let (events, error) = events_of(Api::OpenAiChat, &body);
    assert_eq!(error, None);
    let blocks: Vec<String> = events
        .iter()
        .filter_map(|event| match event {
            LlmEvent::ReasoningStart { id, .. } => Some(format!("start {id}")),
            LlmEvent::ReasoningDelta { id, text, .. } | LlmEvent::TextDelta { id, text, .. } => {
                Some(format!("{id}: {text}"))
            }
            LlmEvent::ReasoningEnd { id, .. } => Some(format!("end {id}")),
            LlmEvent::TextStart { id, .. } => Some(format!("start {id}")),
            LlmEvent::TextEnd { id, .. } => Some(format!("end {id}")),
            _ => None,
        })
        .collect();
    assert_eq!(
        blocks,
        [
            "start reasoning-0",
            "reasoning-0: First. ",
            "end reasoning-0",
            "start text-1",
            "text-1: One. ",
            "start reasoning-2",
            "reasoning-2: Second.",
            "end reasoning-2",
            "text-1: Two.",
            "end text-1",
        ]
    );
}

#[test]
fn chat_done_without_finish_reason_is_unknown() {
    let (events, error) = events_of(Api::OpenAiChat, &format!("{CHAT_TEXT}data: [DONE]\n\n"));
    assert_eq!(error, None);
    assert_eq!(finish_reason(&events), Some(FinishReason::Unknown));
}

#[test]
fn chat_malformed_json_names_the_event() {
    let body =
        format!("{CHAT_TEXT}: keep-alive\n\n{CHAT_TEXT}data: {{\"choices\":[{{\"index\"\n\ndata: [DONE]\n\n");
    let (events, error) = events_of(Api::OpenAiChat, &body);
    let Some(LlmError::MalformedEvent { index, message }) = &error else { panic!("{error:?}") };
    assert_eq!(*index, 3);
    assert!(error.as_ref().unwrap().to_string().starts_with("malformed JSON in event 3: "), "{message}");
    // The events before the bad one were delivered.
    assert_eq!(events.iter().filter(|e| matches!(e, LlmEvent::TextDelta { .. })).count(), 2);
}

#[test]
fn chat_calls_reusing_index_zero_are_separate_calls() {
    let call = |id: &str, args: &str| {
        format!(
            "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":0,\"id\":\"{id}\",\
             \"function\":{{\"name\":\"read\",\"arguments\":{args:?}}}}}]}}}}]}}\n\n"
        )
    };
    let body = format!(
        "{}{}data: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"stop\"}}]}}\n\n",
        call("a", "{\"path\":\"x\"}"),
        call("b", "{\"path\":\"y\"}"),
    );
    let (events, error) = events_of(Api::OpenAiChat, &body);
    assert_eq!(error, None);
    let calls: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            LlmEvent::ToolCall { id, input, .. } => Some((id.clone(), input.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(calls, vec![("a".into(), json!({"path": "x"})), ("b".into(), json!({"path": "y"}))]);
    // A server that says `stop` after tool calls: stored as given, as OpenCode 1.18.34 stores
    // it; the loop goes on for the tool parts (SPEC 12 step 2).
    assert_eq!(finish_reason(&events), Some(FinishReason::Stop));
}

#[test]
fn chat_usage_after_finish_reason_is_read_and_only_choice_zero_counts() {
    let body = "data: {\"choices\":[{\"index\":1,\"delta\":{\"content\":\"other\"}}]}\n\n\
                data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"mine\"},\"finish_reason\":\"length\"}]}\n\n\
                data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2,\"total_tokens\":7}}\n\n\
                data: [DONE]\n\n";
    let (events, error) = events_of(Api::OpenAiChat, body);
    assert_eq!(error, None);
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            LlmEvent::TextDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "mine");
    let usage =
        Usage { input_tokens: Some(5), output_tokens: Some(2), total_tokens: Some(7), ..Usage::default() };
    assert_eq!(events.last(), Some(&LlmEvent::Finish { reason: FinishReason::Length, usage: Some(usage) }));
}

const MESSAGE_START: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n";

#[test]
fn anthropic_error_event_after_start_delivers_events_then_the_error() {
    let body = format!(
        "{MESSAGE_START}event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{{\"type\":\"text\",\"text\":\"\"}}}}\n\n\
         event: error\ndata: {{\"type\": \"error\", \"error\": {{\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}}}\n\n"
    );
    let (events, error) = events_of(Api::Anthropic, &body);
    assert_eq!(events.len(), 2);
    let Some(LlmError::Api(api)) = error else { panic!("{error:?}") };
    assert_eq!((api.status, api.message(), api.retryable()), (None, "Overloaded", true));
}

#[test]
fn anthropic_redacted_thinking_unknown_blocks_and_events() {
    let body = format!(
        "{MESSAGE_START}event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{{\"type\":\"redacted_thinking\",\"data\":\"opaque\"}}}}\n\n\
         event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":0}}\n\n\
         event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":1,\"content_block\":{{\"type\":\"hologram\"}}}}\n\n\
         event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{{\"type\":\"hologram_delta\"}}}}\n\n\
         event: brand_new\ndata: {{\"type\":\"brand_new\"}}\n\n\
         event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"max_tokens\"}},\"usage\":{{\"output_tokens\":7}}}}\n\n\
         event: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n"
    );
    let (events, error) = events_of(Api::Anthropic, &body);
    assert_eq!(error, None);
    let meta = json!({"anthropic": {"redactedData": "opaque"}});
    assert_eq!(
        serde_json::to_value(&events).unwrap(),
        json!([
            {"type": "step-start", "index": 0},
            {"type": "reasoning-start", "id": "reasoning-0", "providerMetadata": meta},
            {"type": "reasoning-end", "id": "reasoning-0", "providerMetadata": meta},
            {"type": "step-finish", "index": 0, "reason": "length",
             "usage": {"inputTokens": 10, "outputTokens": 7, "totalTokens": 17}},
            {"type": "finish", "reason": "length", "usage": {"inputTokens": 10, "outputTokens": 7, "totalTokens": 17}},
        ])
    );
}

#[test]
fn responses_incomplete_is_a_length_finish() {
    let body = "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{}}\n\n\
                event: response.incomplete\ndata: {\"type\":\"response.incomplete\",\"response\":{\"status\":\"incomplete\",\
                \"incomplete_details\":{\"reason\":\"max_output_tokens\"},\"usage\":{\"input_tokens\":3,\"output_tokens\":9}}}\n\n";
    let (events, error) = events_of(Api::OpenAiResponses, body);
    assert_eq!(error, None);
    assert_eq!(finish_reason(&events), Some(FinishReason::Length));
}

#[test]
fn gemini_finish_reasons() {
    for (reason, expected) in [
        ("MAX_TOKENS", FinishReason::Length),
        ("SAFETY", FinishReason::ContentFilter),
        ("RECITATION", FinishReason::ContentFilter),
        ("STOP", FinishReason::Stop),
        ("MALFORMED_FUNCTION_CALL", FinishReason::Unknown),
    ] {
        let body = format!(
            "data: {{\"candidates\":[{{\"content\":{{\"parts\":[{{\"text\":\"x\"}}]}},\"finishReason\":\"{reason}\"}}]}}\r\n\r\n"
        );
        let (events, error) = events_of(Api::Gemini, &body);
        assert_eq!(error, None, "{reason}");
        assert_eq!(finish_reason(&events), Some(expected), "{reason}");
    }
    let blocked = "data: {\"promptFeedback\":{\"blockReason\":\"SAFETY\"}}\r\n\r\n";
    assert_eq!(finish_reason(&events_of(Api::Gemini, blocked).0), Some(FinishReason::ContentFilter));
    let (_, error) = events_of(
        Api::Gemini,
        "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"x\"}]}}]}\r\n\r\n",
    );
    assert_eq!(error, Some(LlmError::Truncated { expected: "finishReason" }));
}

#[test]
fn api_names_round_trip() {
    for api in Api::ALL {
        assert_eq!(api.as_str().parse::<Api>().unwrap(), api);
    }
    assert!("openai".parse::<Api>().is_err());
}

#[test]
fn gemini_code_execution_is_a_provider_executed_call_and_result() {
    let body = "data: {\"responseId\":\"r1\",\"candidates\":[{\"content\":{\"parts\":[\
                {\"executableCode\":{\"language\":\"PYTHON\",\"code\":\"print(1)\"}},\
                {\"codeExecutionResult\":{\"outcome\":\"OUTCOME_OK\",\"output\":\"1\\n\"}},\
                {\"text\":\"Done.\"}]},\"finishReason\":\"STOP\"}]}\r\n\r\n";
    let (events, error) = events_of(Api::Gemini, body);
    assert_eq!(error, None);
    assert_eq!(
        serde_json::to_value(&events[1..3]).unwrap(),
        json!([
            {"type": "tool-call", "id": "call-r1-0", "name": "code_execution",
             "input": {"language": "PYTHON", "code": "print(1)"}, "providerExecuted": true},
            {"type": "tool-result", "id": "call-r1-0", "name": "code_execution",
             "result": {"type": "json", "value": {"outcome": "OUTCOME_OK", "output": "1\n"}}, "providerExecuted": true},
        ])
    );
    // Provider-executed calls do not make the step a tool-calls step.
    assert_eq!(finish_reason(&events), Some(FinishReason::Stop));
}

/// The usage of the step a body ends with.
fn finish_usage(api: Api, body: &str) -> Option<Usage> {
    let (events, error) = events_of(api, body);
    assert_eq!(error, None);
    events.iter().find_map(|event| match event {
        LlmEvent::Finish { usage, .. } => Some(usage.clone()),
        _ => None,
    })?
}

proptest::proptest! {
    /// SPEC 1.1: a step's total is input + output as the AI SDK computes it, whatever total the
    /// provider reports (OpenCode 1.18.34 stores that sum).
    #[test]
    fn the_total_is_input_plus_output_whatever_the_provider_says(
        input in proptest::option::of(0i64..=i64::MAX),
        output in proptest::option::of(0i64..=i64::MAX),
        reported in proptest::option::of(proptest::num::i64::ANY),
    ) {
        let mut usage = serde_json::Map::new();
        for (key, value) in [("prompt_tokens", input), ("completion_tokens", output), ("total_tokens", reported)] {
            if let Some(value) = value {
                usage.insert(key.to_owned(), json!(value));
            }
        }
        let expected = match (input, output) {
            (None, None) => None,
            (i, o) => Some(i.unwrap_or(0).saturating_add(o.unwrap_or(0))),
        };
        let chat = format!(
            "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"x\"}},\"finish_reason\":\"stop\"}}]}}\n\n\
             data: {}\n\ndata: [DONE]\n\n",
            json!({"choices": [], "usage": usage})
        );
        let chat = finish_usage(Api::OpenAiChat, &chat);
        proptest::prop_assert_eq!(chat.as_ref().and_then(|u| u.total_tokens), expected);
        let responses_usage = json!({"input_tokens": input, "output_tokens": output, "total_tokens": reported});
        let responses = format!(
            "data: {}\n\n",
            json!({"type": "response.completed", "response": {"status": "completed", "usage": responses_usage}})
        );
        let responses = finish_usage(Api::OpenAiResponses, &responses);
        proptest::prop_assert_eq!(responses.as_ref().and_then(|u| u.total_tokens), expected);
    }
}
