//! History to model messages (SPEC 9): the rules the conformance vectors leave out.

use pretty_assertions::assert_eq;
use rust_decimal::Decimal;
use serde_json::{Value, json};
use session_core::{
    AssistantMessage, AssistantTime, CompletedTime, CreatedTime, FilePart, JsonObject, Message, MessageError,
    MessageId, MessagePath, MessageWithParts, ModelRef, Part, PartId, PartKind, PartTime, ReasoningPart,
    RunningTime, SessionId, StepStartPart, TextPart, TokenUsage, ToolPart, ToolState, UserMessage,
    history::ModelMessage, history::ModelTarget, history::ToModelOptions, history::estimate_model_messages,
    history::to_model_messages, js_json::stringify, token::estimate,
};

fn part(index: usize, kind: PartKind) -> Part {
    Part {
        id: PartId::new_unchecked(format!("prt_{index:04}")),
        session_id: SessionId::new_unchecked("ses_1"),
        message_id: MessageId::new_unchecked("msg_1"),
        kind,
    }
}

fn parts(kinds: Vec<PartKind>) -> Vec<Part> {
    kinds.into_iter().enumerate().map(|(index, kind)| part(index, kind)).collect()
}

fn user(id: &str, kinds: Vec<PartKind>) -> MessageWithParts {
    MessageWithParts {
        info: Message::User(UserMessage {
            id: MessageId::new_unchecked(id),
            session_id: SessionId::new_unchecked("ses_1"),
            time: CreatedTime { created: 0 },
            format: None,
            summary: None,
            agent: "build".into(),
            model: ModelRef { provider_id: "anthropic".into(), model_id: "claude".into(), variant: None },
            system: None,
            tools: None,
        }),
        parts: parts(kinds),
    }
}

fn assistant(id: &str, provider: &str, model: &str, kinds: Vec<PartKind>) -> MessageWithParts {
    MessageWithParts {
        info: Message::Assistant(AssistantMessage {
            id: MessageId::new_unchecked(id),
            session_id: SessionId::new_unchecked("ses_1"),
            time: AssistantTime { created: 0, completed: None },
            error: None,
            parent_id: MessageId::new_unchecked("msg_0"),
            model_id: model.into(),
            provider_id: provider.into(),
            mode: "build".into(),
            agent: "build".into(),
            path: MessagePath::default(),
            summary: None,
            cost: Decimal::ZERO,
            tokens: TokenUsage::default(),
            structured: None,
            variant: None,
            finish: None,
        }),
        parts: parts(kinds),
    }
}

fn text(text: &str) -> PartKind {
    PartKind::Text(TextPart { text: text.into(), ..TextPart::default() })
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(object) => object,
        other => panic!("not an object: {other}"),
    }
}

fn file(mime: &str, url: &str) -> FilePart {
    FilePart { mime: mime.into(), filename: Some("f".into()), url: url.into(), source: None }
}

fn completed(call: &str, output: &str, attachments: Option<Vec<FilePart>>) -> PartKind {
    PartKind::Tool(ToolPart {
        call_id: call.into(),
        tool: "read".into(),
        state: ToolState::Completed {
            input: object(json!({"filePath": "/a"})),
            output: output.into(),
            title: "t".into(),
            metadata: JsonObject::new(),
            time: CompletedTime { start: 0, end: 1, compacted: None },
            attachments,
        },
        metadata: None,
    })
}

fn target(npm: &str, api_id: &str) -> ModelTarget {
    ModelTarget::new("anthropic", "claude", api_id, npm)
}

fn convert(messages: &[MessageWithParts], target: &ModelTarget, options: ToModelOptions) -> Value {
    serde_json::to_value(to_model_messages(messages, target, &options)).unwrap_or(Value::Null)
}

#[test]
fn media_stays_in_the_tool_result_for_providers_that_accept_it() {
    let history = [assistant(
        "msg_2",
        "anthropic",
        "claude",
        vec![completed(
            "c1",
            "see image",
            Some(vec![file("image/png", "data:image/png;base64,AAAA"), file("image/png", "https://x/y.png")]),
        )],
    )];
    let actual = convert(&history, &target("@ai-sdk/anthropic", "claude"), ToModelOptions::default());
    assert_eq!(
        actual[1],
        json!({"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1", "toolName": "read",
            "output": {"type": "content", "value": [
                {"type": "text", "text": "see image"},
                {"type": "media", "mediaType": "image/png", "data": "AAAA"}]}}]})
    );
}

#[test]
fn media_moves_to_a_following_user_message_for_other_providers() {
    let image = file("image/png", "data:image/png;base64,AAAA");
    let pdf = file("application/pdf", "data:application/pdf;base64,BBBB");
    let history = [assistant(
        "msg_2",
        "anthropic",
        "claude",
        vec![
            completed("c1", "one", Some(vec![image.clone()])),
            PartKind::StepStart(StepStartPart::default()),
            completed("c2", "two", Some(vec![pdf.clone()])),
        ],
    )];
    let moved = json!({"role": "user", "content": [
        {"type": "text", "text": "Attached media from tool result:"},
        {"type": "file", "mediaType": "image/png", "data": "data:image/png;base64,AAAA"},
        {"type": "file", "mediaType": "application/pdf", "data": "data:application/pdf;base64,BBBB"}]});
    let actual = convert(&history, &target("@ai-sdk/openai-compatible", "m"), ToModelOptions::default());
    let roles: Vec<&str> = actual.as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["assistant", "tool", "assistant", "tool", "user"]);
    assert_eq!(actual[1]["content"][0]["output"], json!({"type": "text", "value": "one"}));
    assert_eq!(actual[4], moved);

    // Bedrock keeps images inline but moves documents.
    let actual = convert(&history, &target("@ai-sdk/amazon-bedrock", "m"), ToModelOptions::default());
    assert_eq!(actual[1]["content"][0]["output"]["type"], "content");
    assert_eq!(actual[3]["content"][0]["output"], json!({"type": "text", "value": "two"}));
    assert_eq!(actual[4]["content"].as_array().unwrap().len(), 2);

    // Google keeps media only for Gemini 3.
    let gemini3 =
        convert(&history, &target("@ai-sdk/google", "gemini-3-pro-preview"), ToModelOptions::default());
    assert_eq!(gemini3.as_array().unwrap().len(), 4);
    let gemini2 = convert(&history, &target("@ai-sdk/google", "gemini-2.5-pro"), ToModelOptions::default());
    assert_eq!(gemini2.as_array().unwrap().len(), 5);
}

#[test]
fn strip_media_and_compaction_drop_tool_result_media() {
    let history = [assistant(
        "msg_2",
        "anthropic",
        "claude",
        vec![completed("c1", "out", Some(vec![file("image/png", "data:image/png;base64,AAAA")]))],
    )];
    let stripped = convert(&history, &target("@ai-sdk/anthropic", "claude"), ToModelOptions::COMPACTION);
    assert_eq!(stripped[1]["content"][0]["output"], json!({"type": "text", "value": "out"}));
    assert_eq!(stripped.as_array().unwrap().len(), 2);
}

#[test]
fn empty_text_next_to_signed_reasoning_becomes_a_space() {
    let signed = PartKind::Reasoning(ReasoningPart {
        text: "think".into(),
        metadata: Some(object(json!({"anthropic": {"signature": "sig"}}))),
        time: PartTime { start: 0, end: Some(1) },
    });
    let history = [assistant("msg_2", "anthropic", "claude", vec![signed, text("")])];
    let actual = convert(&history, &target("@ai-sdk/anthropic", "claude"), ToModelOptions::default());
    assert_eq!(
        actual,
        json!([{"role": "assistant", "content": [
            {"type": "reasoning", "text": "think", "providerOptions": {"anthropic": {"signature": "sig"}}},
            {"type": "text", "text": " "}]}])
    );
    // Without a signature an empty text stays empty.
    let history = [assistant("msg_2", "anthropic", "claude", vec![text("")])];
    let actual = convert(&history, &target("@ai-sdk/anthropic", "claude"), ToModelOptions::default());
    assert_eq!(actual[0]["content"][0]["text"], "");
}

#[test]
fn provider_executed_tools_are_flagged_and_keep_other_metadata() {
    let tool = PartKind::Tool(ToolPart {
        call_id: "srv_1".into(),
        tool: "web_search".into(),
        state: ToolState::Running {
            input: JsonObject::new(),
            title: None,
            metadata: None,
            time: RunningTime { start: 0 },
        },
        metadata: Some(object(json!({"providerExecuted": true}))),
    });
    let history = [assistant("msg_2", "anthropic", "claude", vec![tool])];
    let actual = convert(&history, &target("@ai-sdk/anthropic", "claude"), ToModelOptions::default());
    assert_eq!(
        actual,
        json!([
            {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "srv_1", "toolName": "web_search",
                "input": {}, "providerExecuted": true}]},
            {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "srv_1", "toolName": "web_search",
                "output": {"type": "error-text", "value": "[Tool execution was interrupted]"},
                "providerExecuted": true}]}
        ])
    );
}

#[test]
fn aborted_message_with_only_reasoning_is_dropped_but_other_errors_always_are() {
    let mut aborted = assistant("msg_2", "anthropic", "claude", vec![text("partial")]);
    let mut failed = aborted.clone();
    if let Message::Assistant(info) = &mut aborted.info {
        info.error = Some(MessageError::aborted());
    }
    if let Message::Assistant(info) = &mut failed.info {
        info.error = Some(MessageError::MessageOutputLengthError {});
    }
    let target = target("@ai-sdk/anthropic", "claude");
    assert_eq!(convert(&[aborted], &target, ToModelOptions::default()).as_array().unwrap().len(), 1);
    assert_eq!(convert(&[failed], &target, ToModelOptions::default()), json!([]));
}

#[test]
fn model_messages_round_trip_through_json() {
    let history = [
        user("msg_1", vec![text("hi"), PartKind::File(file("image/png", "data:image/png;base64,AAAA"))]),
        assistant(
            "msg_2",
            "anthropic",
            "claude",
            vec![
                text("ok"),
                completed("c1", "out", Some(vec![file("image/png", "data:image/png;base64,AAAA")])),
            ],
        ),
    ];
    let messages =
        to_model_messages(&history, &target("@ai-sdk/anthropic", "claude"), &ToModelOptions::default());
    let json = serde_json::to_value(&messages).unwrap();
    let back: Vec<ModelMessage> = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(back, messages);
    assert_eq!(estimate_model_messages(&messages), estimate(&stringify(&json)));
}
