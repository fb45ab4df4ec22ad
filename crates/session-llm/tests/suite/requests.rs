//! Request bodies of every adapter, as insta snapshots, and the HTTP request around them.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use session_core::history::ModelMessage;
use session_llm::{
    Api, BuiltRequest, LlmError, LlmRequest, ProviderEndpoint, RequestOptions, ToolChoice, ToolSpec,
    build_request, http_request,
};

/// A conversation with an image, reasoning, a tool call and its result, and tools.
fn conversation() -> Vec<ModelMessage> {
    serde_json::from_value(json!([
        {"role": "user", "content": [
            {"type": "text", "text": "What is in this picture? And what is the weather in Paris?"},
            {"type": "file", "mediaType": "image/png", "filename": "cat.png", "data": "data:image/png;base64,iVBORw0KGgo="},
        ]},
        {"role": "assistant", "content": [
            {"type": "reasoning", "text": "A cat photo; the weather needs the tool.", "providerOptions": {
                "anthropic": {"signature": "sig-1"},
                "openai": {"itemId": "rs_1", "reasoningEncryptedContent": "enc-1"},
                "google": {"thoughtSignature": "ts-1"},
            }},
            {"type": "text", "text": "It is a cat. Let me check the weather."},
            {"type": "tool-call", "toolCallId": "call_1", "toolName": "get_weather", "input": {"city": "Paris"},
             "providerOptions": {"google": {"thoughtSignature": "ts-2"}}},
        ]},
        {"role": "tool", "content": [
            {"type": "tool-result", "toolCallId": "call_1", "toolName": "get_weather",
             "output": {"type": "text", "value": "18°C, cloudy"}},
        ]},
        {"role": "user", "content": [{"type": "text", "text": "Thanks! Anything else?"}]},
    ]))
    .unwrap()
}

fn tools() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "get_weather".into(),
        description: "Current weather for a city.".into(),
        input_schema: json!({
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}},
            "required": ["city"],
            "additionalProperties": false,
        })
        .into(),
    }]
}

fn request(model: &str, options: RequestOptions) -> LlmRequest {
    LlmRequest {
        model: model.into(),
        system: vec!["You are a helpful assistant.".into()],
        messages: conversation(),
        tools: tools(),
        max_output_tokens: Some(32_000),
        options,
        ..LlmRequest::default()
    }
}

fn built_json(built: &BuiltRequest) -> Value {
    json!({"path": built.path, "headers": built.headers, "body": built.body})
}

fn snapshot(name: &str, built: &BuiltRequest) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("../snapshots/requests");
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_json_snapshot!(name, built_json(built)));
}

#[test]
fn openai_chat_request() {
    let options = RequestOptions {
        reasoning_effort: Some("low".into()),
        reasoning_field: session_llm::chat_reasoning_field("@ai-sdk/openai-compatible"),
        ..RequestOptions::default()
    };
    let built = build_request(Api::OpenAiChat, &request("gpt-5-mini", options)).unwrap();
    snapshot("openai_chat", &built);
    // Without reasoning options compatible servers get the classic `max_tokens`.
    let plain = build_request(Api::OpenAiChat, &request("llama3", RequestOptions::default())).unwrap();
    assert_eq!(plain.body["max_tokens"], json!(32_000));
    assert!(plain.body.get("max_completion_tokens").is_none());
}

#[test]
fn chat_assistant_turns_carry_content_and_reasoning_as_each_package_sends_them() {
    let mut turns = request("m", RequestOptions::default());
    turns.messages = serde_json::from_value(json!([
        {"role": "user", "content": [{"type": "text", "text": "Go"}]},
        {"role": "assistant", "content": [
            {"type": "reasoning", "text": "First. "},
            {"type": "reasoning", "text": "Second."},
            {"type": "tool-call", "toolCallId": "call_1", "toolName": "get_weather", "input": {"city": "Oslo"}},
        ]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "call_1", "toolName": "get_weather",
            "output": {"type": "text", "value": "Cold"}}]},
        {"role": "assistant", "content": [{"type": "reasoning", "text": "Only thinking."}]},
        {"role": "assistant", "content": [{"type": "reasoning", "text": ""}, {"type": "text", "text": "Done."}]},
    ]))
    .unwrap();
    let mut assistants = |npm: &str| -> Vec<Value> {
        turns.options.reasoning_field = session_llm::chat_reasoning_field(npm);
        let body = build_request(Api::OpenAiChat, &turns).unwrap().body;
        body["messages"].as_array().unwrap().iter().filter(|m| m["role"] == "assistant").cloned().collect()
    };
    let call = json!([{"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}]);
    // OpenAI-compatible servers get the joined reasoning back in `reasoning_content` (DeepSeek
    // rejects a tool-call turn without it); a turn of tool calls has `content: ""`.
    assert_eq!(
        assistants("@ai-sdk/openai-compatible"),
        [
            json!({"role": "assistant", "content": "", "reasoning_content": "First. Second.", "tool_calls": call}),
            json!({"role": "assistant", "content": "", "reasoning_content": "Only thinking."}),
            json!({"role": "assistant", "content": "Done."}),
        ]
    );
    // Groq's package sends it as `reasoning`.
    assert_eq!(assistants("@ai-sdk/groq")[0]["reasoning"], json!("First. Second."));
    // xAI's sends none, and a turn of reasoning alone then has nothing to send.
    assert_eq!(
        assistants("@ai-sdk/xai"),
        [
            json!({"role": "assistant", "content": "", "tool_calls": call}),
            json!({"role": "assistant", "content": "Done."}),
        ]
    );
}

#[test]
fn openai_responses_request() {
    let options = RequestOptions {
        reasoning_effort: Some("medium".into()),
        reasoning_summary: Some("auto".into()),
        ..RequestOptions::default()
    };
    let built = build_request(Api::OpenAiResponses, &request("gpt-5.1-codex", options)).unwrap();
    snapshot("openai_responses", &built);
}

#[test]
fn anthropic_request() {
    let options =
        RequestOptions { thinking_budget: Some(8_000), cache_control: true, ..RequestOptions::default() };
    let built = build_request(Api::Anthropic, &request("claude-sonnet-4-5", options)).unwrap();
    snapshot("anthropic", &built);
    // The tool result and the next user text share one user turn (roles must alternate).
    let roles: Vec<&str> =
        built.body["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    assert_eq!(built.body["max_tokens"], json!(40_000));
}

#[test]
fn anthropic_tool_errors_and_temperature() {
    let mut request =
        request("claude-haiku-4-5", RequestOptions { temperature: Some(0.2), ..Default::default() });
    request.messages[2] = serde_json::from_value(json!({"role": "tool", "content": [
        {"type": "tool-result", "toolCallId": "call_1", "toolName": "get_weather",
         "output": {"type": "error-text", "value": "[Tool execution was interrupted]"}},
    ]}))
    .unwrap();
    let built = build_request(Api::Anthropic, &request).unwrap();
    assert_eq!(
        built.body["messages"][2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "call_1", "content": "[Tool execution was interrupted]", "is_error": true})
    );
    assert_eq!(built.body["temperature"], json!(0.2));
    assert_eq!(built.body["max_tokens"], json!(32_000));
}

#[test]
fn gemini_request() {
    let options = RequestOptions { thinking_budget: Some(1_024), ..RequestOptions::default() };
    let built = build_request(Api::Gemini, &request("gemini-2.5-flash", options)).unwrap();
    snapshot("gemini", &built);
    assert!(matches!(
        build_request(Api::Gemini, &request("../evil", RequestOptions::default())),
        Err(LlmError::InvalidRequest(_))
    ));
}

#[test]
fn unsupported_files_are_refused_not_dropped() {
    let mut request = request("m", RequestOptions::default());
    request.messages = serde_json::from_value(json!([{"role": "user", "content": [
        {"type": "file", "mediaType": "application/zip", "data": "data:application/zip;base64,UEs="},
    ]}]))
    .unwrap();
    for api in [Api::OpenAiChat, Api::OpenAiResponses, Api::Anthropic] {
        assert!(matches!(build_request(api, &request), Err(LlmError::InvalidRequest(_))), "{api}");
    }
}

#[test]
fn http_requests_carry_the_format_authentication() {
    let cases = [
        (Api::OpenAiChat, "https://api.openai.com/v1/chat/completions", ("authorization", "Bearer k")),
        (Api::OpenAiResponses, "https://api.openai.com/v1/responses", ("authorization", "Bearer k")),
        (Api::Anthropic, "https://api.anthropic.com/v1/messages", ("x-api-key", "k")),
        (
            Api::Gemini,
            "https://generativelanguage.googleapis.com/v1beta/models/m:streamGenerateContent?alt=sse",
            ("x-goog-api-key", "k"),
        ),
    ];
    for (api, url, (name, value)) in cases {
        let mut config = ProviderEndpoint::new("p", api, Some("k".into()));
        config.headers.push(("x-extra".into(), "1".into()));
        let http = http_request(&config, &request("m", RequestOptions::default())).unwrap();
        assert_eq!(http.url, url);
        let has = |n: &str, v: &str| http.headers.iter().any(|(hn, hv)| hn == n && hv == v);
        assert!(has(name, value) && has("x-extra", "1") && has("content-type", "application/json"), "{api}");
        let body: Value = serde_json::from_slice(&http.body).unwrap();
        assert_eq!(body["stream"].as_bool().unwrap_or(true), true);
        // The key never shows in debug output.
        assert!(!format!("{config:?}").contains("\"k\""));
    }
}

#[test]
fn tool_choice_in_each_format() {
    let required = RequestOptions { tool_choice: Some(ToolChoice::Required), ..RequestOptions::default() };
    let body = |api: Api, options: RequestOptions| build_request(api, &request("m", options)).unwrap().body;
    assert_eq!(body(Api::OpenAiChat, required.clone())["tool_choice"], json!("required"));
    assert_eq!(body(Api::OpenAiResponses, required.clone())["tool_choice"], json!("required"));
    assert_eq!(body(Api::Anthropic, required.clone())["tool_choice"], json!({"type": "any"}));
    assert_eq!(
        body(Api::Gemini, required.clone())["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY"}})
    );
    // Unset: Chat Completions states `auto`, as OpenCode 1.18.34 sends it; the
    // other formats leave the field out (the provider's default).
    assert_eq!(body(Api::OpenAiChat, RequestOptions::default())["tool_choice"], json!("auto"));
    assert_eq!(body(Api::OpenAiResponses, RequestOptions::default()).get("tool_choice"), None);
    let mut bare_chat = request("m", RequestOptions::default());
    bare_chat.tools.clear();
    assert_eq!(build_request(Api::OpenAiChat, &bare_chat).unwrap().body.get("tool_choice"), None);
    // Without tools a tool choice is meaningless and some servers reject it.
    let mut bare = request("m", required);
    bare.tools.clear();
    assert_eq!(build_request(Api::Anthropic, &bare).unwrap().body.get("tool_choice"), None);
}

#[test]
fn every_formats_http_body_is_its_built_body_byte_for_byte() {
    // Chat Completions serialises its borrowed body straight to bytes; the others go through
    // `build_request`'s tree. Either way the bytes sent are the snapshot-pinned body.
    let options = RequestOptions {
        temperature: Some(0.2),
        top_p: Some(0.9),
        reasoning_effort: Some("high".into()),
        tool_choice: Some(ToolChoice::Required),
        reasoning_field: Some("reasoning_content"),
        ..RequestOptions::default()
    };
    for api in [Api::OpenAiChat, Api::OpenAiResponses, Api::Anthropic, Api::Gemini] {
        for request in [request("m", RequestOptions::default()), request("m", options.clone())] {
            let config = ProviderEndpoint::new("p", api, None);
            let http = http_request(&config, &request).unwrap();
            let built = build_request(api, &request).unwrap();
            assert_eq!(http.body.as_ref(), serde_json::to_vec(&built.body).unwrap().as_slice(), "{api}");
            assert!(http.url.ends_with(&built.path), "{api}");
        }
    }
}
