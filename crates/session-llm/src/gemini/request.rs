//! The Gemini request builder (`POST /models/{model}:streamGenerateContent?alt=sse`).

use serde_json::{Map, Value, json};
use session_core::{
    history::AssistantContent, history::ModelMessage, history::ToolResultContent, history::ToolResultOutput,
    history::UserContent,
};

use crate::error::LlmError;
use crate::request::{BuiltRequest, LlmRequest, data_url, option_str, output_text, push_merged};

/// Builds the streaming `generateContent` request for `request`.
pub fn build_request(request: &LlmRequest) -> Result<BuiltRequest, LlmError> {
    let mut contents: Vec<Value> = Vec::new();
    for message in &request.messages {
        match message {
            ModelMessage::User { content } => {
                let parts = content
                    .iter()
                    .map(|item| match item {
                        UserContent::Text { text } => json!({"text": text}),
                        UserContent::File(file) => file_part(&file.media_type, &file.data),
                    })
                    .collect();
                push_merged(&mut contents, "user", "parts", parts);
            }
            ModelMessage::Assistant { content } => {
                push_merged(&mut contents, "model", "parts", model_parts(content));
            }
            ModelMessage::Tool { content } => {
                let mut parts = Vec::new();
                for result in content.iter().filter(|r| !r.provider_executed) {
                    parts.push(json!({
                        "functionResponse": {
                            "name": result.tool_name,
                            "response": {"name": result.tool_name, "content": output_text(&result.output)},
                        }
                    }));
                    // Gemini 3 reads media that follows a function response.
                    if let ToolResultOutput::Content(items) = &result.output {
                        for item in items {
                            if let ToolResultContent::Media { media_type, data } = item {
                                parts.push(json!({"inlineData": {"mimeType": media_type, "data": data}}));
                            }
                        }
                    }
                }
                push_merged(&mut contents, "user", "parts", parts);
            }
        }
    }
    let mut body = Map::new();
    body.insert("contents".into(), Value::Array(contents));
    let system: Vec<Value> =
        request.system.iter().filter(|text| !text.is_empty()).map(|text| json!({"text": text})).collect();
    if !system.is_empty() {
        body.insert("systemInstruction".into(), json!({"parts": system}));
    }
    if !request.tools.is_empty() {
        // `parametersJsonSchema` takes JSON Schema as it is, unlike `parameters` (OpenAPI subset).
        let declarations: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({"name": tool.name, "description": tool.description, "parametersJsonSchema": tool.input_schema})
            })
            .collect();
        body.insert("tools".into(), json!([{"functionDeclarations": declarations}]));
        if let Some(choice) = request.options.tool_choice {
            let mode = match choice {
                crate::ToolChoice::Auto => "AUTO",
                crate::ToolChoice::Required => "ANY",
                crate::ToolChoice::None => "NONE",
            };
            body.insert("toolConfig".into(), json!({"functionCallingConfig": {"mode": mode}}));
        }
    }
    let options = &request.options;
    let mut config = Map::new();
    if let Some(max) = request.max_output_tokens {
        config.insert("maxOutputTokens".into(), json!(max));
    }
    if let Some(temperature) = options.temperature {
        config.insert("temperature".into(), json!(temperature));
    }
    if let Some(top_p) = options.top_p {
        config.insert("topP".into(), json!(top_p));
    }
    if let Some(budget) = options.thinking_budget {
        config.insert("thinkingConfig".into(), json!({"thinkingBudget": budget, "includeThoughts": true}));
    }
    if !config.is_empty() {
        body.insert("generationConfig".into(), Value::Object(config));
    }
    if request.model.is_empty() || request.model.contains(['/', '?', '#']) {
        return Err(LlmError::InvalidRequest(format!("not a Gemini model id: {:?}", request.model)));
    }
    Ok(BuiltRequest {
        path: format!("/models/{}:streamGenerateContent?alt=sse", request.model),
        headers: vec![("accept".into(), "text/event-stream".into())],
        body: Value::Object(body),
    })
}

/// Inline data for `data:` URLs, a file reference otherwise.
fn file_part(media_type: &str, url: &str) -> Value {
    match data_url(url) {
        Some(data) => json!({"inlineData": {"mimeType": data.media_type, "data": data.base64}}),
        None => json!({"fileData": {"mimeType": media_type, "fileUri": url}}),
    }
}

/// The thought signature a stream gave, under the Gemini API's or Vertex's key.
fn signature(options: Option<&Map<String, Value>>) -> Option<&str> {
    option_str(options, "google", "thoughtSignature")
        .or_else(|| option_str(options, "vertex", "thoughtSignature"))
}

fn with_signature(mut part: Value, signature: Option<&str>) -> Value {
    if let (Some(signature), Value::Object(map)) = (signature, &mut part) {
        map.insert("thoughtSignature".into(), json!(signature));
    }
    part
}

fn model_parts(content: &[AssistantContent]) -> Vec<Value> {
    let mut parts = Vec::new();
    for item in content {
        match item {
            AssistantContent::Text { text, provider_options } => {
                let signature = signature(provider_options.as_ref());
                if text.is_empty() && signature.is_none() {
                    continue;
                }
                parts.push(with_signature(json!({"text": text}), signature));
            }
            AssistantContent::Reasoning { text, provider_options } => {
                let signature = signature(provider_options.as_ref());
                if text.is_empty() && signature.is_none() {
                    continue;
                }
                parts.push(with_signature(json!({"text": text, "thought": true}), signature));
            }
            AssistantContent::ToolCall(call) if call.provider_executed => {}
            AssistantContent::ToolCall(call) => {
                let signature = signature(call.provider_options.as_ref());
                parts.push(with_signature(
                    json!({"functionCall": {"name": call.tool_name, "args": call.input}}),
                    signature,
                ));
            }
        }
    }
    parts
}
