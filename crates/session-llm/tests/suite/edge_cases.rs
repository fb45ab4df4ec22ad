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
    // it (issue 40); the loop goes on for the tool parts (SPEC 12 step 2).
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
