//! Shared helpers: scripts, an HTTP provider pointed at the server, an agent loop.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{Map, Value, json};
use session_core::{
    FinishReason, LlmEvent, history::AssistantContent, history::ModelMessage, history::ToolCall,
    history::ToolResult, history::ToolResultOutput, history::UserContent,
};
use session_llm::{
    Api, HttpProvider, LlmError, LlmRequest, Provider, ReqwestTransport, Script, StreamLimits, ToolSpec,
};
use session_testkit::TestServer;

/// A script from JSON text.
pub fn script(text: &str) -> Script {
    Script::from_json(text).unwrap()
}

/// The provider id the error classifier is given for each format.
pub fn provider_id(api: Api) -> &'static str {
    match api {
        Api::OpenAiChat | Api::OpenAiResponses => "openai",
        Api::Anthropic => "anthropic",
        Api::Gemini => "google",
    }
}

/// A real HTTP provider of `api` pointed at `server`, with a short idle timeout.
pub fn http_provider(server: &TestServer, api: Api) -> HttpProvider {
    let mut config = server.provider_config(provider_id(api), api);
    config.limits = StreamLimits { idle_timeout: Duration::from_millis(300), ..StreamLimits::default() };
    HttpProvider::new(config, Arc::new(ReqwestTransport::new().unwrap()))
}

/// OpenCode's tool set.
pub fn opencode_tools() -> Vec<ToolSpec> {
    ["bash", "read", "glob", "grep", "list", "write", "edit"]
        .into_iter()
        .map(|name| ToolSpec {
            name: name.to_owned(),
            description: format!("the {name} tool"),
            input_schema: json!({"type": "object", "properties": {}}).into(),
        })
        .collect()
}

pub fn user(text: &str) -> ModelMessage {
    ModelMessage::User { content: vec![UserContent::Text { text: text.to_owned() }] }
}

pub fn request(messages: Vec<ModelMessage>) -> LlmRequest {
    LlmRequest {
        model: "mock-model".to_owned(),
        system: vec!["You are a coding agent.".to_owned()],
        messages,
        tools: opencode_tools(),
        ..LlmRequest::default()
    }
}

/// Every event of one call, and the error that ended it.
pub async fn collect(provider: &dyn Provider, request: LlmRequest) -> (Vec<LlmEvent>, Option<LlmError>) {
    let mut stream = provider.stream(request);
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(error) => return (events, Some(error)),
        }
    }
    (events, None)
}

pub fn text_of(events: &[LlmEvent]) -> String {
    events
        .iter()
        .filter_map(|event| match event {
            LlmEvent::TextDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

pub fn reasoning_of(events: &[LlmEvent]) -> String {
    events
        .iter()
        .filter_map(|event| match event {
            LlmEvent::ReasoningDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

pub fn calls_of(events: &[LlmEvent]) -> Vec<(String, String, Value)> {
    events
        .iter()
        .filter_map(|event| match event {
            LlmEvent::ToolCall { id, name, input, .. } => Some((id.clone(), name.clone(), input.clone())),
            _ => None,
        })
        .collect()
}

pub fn finish_of(events: &[LlmEvent]) -> Option<(FinishReason, Option<session_core::Usage>)> {
    events.iter().find_map(|event| match event {
        LlmEvent::Finish { reason, usage } => Some((*reason, usage.clone())),
        _ => None,
    })
}

pub fn tool_call(id: &str, name: &str) -> ToolCall {
    ToolCall {
        tool_call_id: id.to_owned(),
        tool_name: name.to_owned(),
        input: Map::new(),
        provider_options: None,
        provider_executed: false,
    }
}

pub fn tool_result(id: &str, name: &str) -> ToolResult {
    ToolResult {
        tool_call_id: id.to_owned(),
        tool_name: name.to_owned(),
        output: ToolResultOutput::Text(format!("output of {id}")),
        provider_options: None,
        provider_executed: false,
    }
}

/// The assistant message and tool results a runtime appends after a step's events.
pub fn step_messages(events: &[LlmEvent]) -> Vec<ModelMessage> {
    let mut content = Vec::new();
    let text = text_of(events);
    if !text.is_empty() {
        content.push(AssistantContent::Text { text, provider_options: None });
    }
    let calls = calls_of(events);
    for (id, name, input) in &calls {
        let mut call = tool_call(id, name);
        call.input = input.as_object().cloned().unwrap_or_default();
        content.push(AssistantContent::ToolCall(call));
    }
    let mut out = vec![ModelMessage::Assistant { content }];
    if !calls.is_empty() {
        out.push(ModelMessage::Tool {
            content: calls.iter().map(|(id, name, _)| tool_result(id, name)).collect(),
        });
    }
    out
}

/// Drives the script as an agent loop (retrying failed requests) until a final answer or
/// `max` requests; returns the final answer's events.
pub async fn drive(provider: &dyn Provider, prompt: &str, max: usize) -> Option<Vec<LlmEvent>> {
    let mut history = vec![user(prompt)];
    for _ in 0..max {
        let (events, error) = collect(provider, request(history.clone())).await;
        if error.is_some() {
            continue;
        }
        let done = finish_of(&events).map(|(reason, _)| reason) == Some(FinishReason::Stop);
        history.extend(step_messages(&events));
        if done {
            return Some(events);
        }
    }
    None
}
