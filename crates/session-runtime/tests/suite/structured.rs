//! Structured output and prompts that join a running loop, against the loopback test server.

use serde_json::json;
use session_core::{FinishReason, Message, MessageError, OutputFormat, PartKind, ToolStatus};
use session_runtime::prompts::STRUCTURED_OUTPUT_INSTRUCTION;
use session_runtime::{PromptInput, RuntimeError};
use session_testkit::TestServer;

use super::support::{Setup, eventually, history, http, is_user, rig, say, script, tool_states};

fn answer_schema() -> OutputFormat {
    OutputFormat::JsonSchema {
        schema: json!({
            "type": "object",
            "properties": {"answer": {"type": "integer"}},
            "required": ["answer"],
            "additionalProperties": false,
        }),
        retry_count: 2,
    }
}

fn structured(text: &str) -> PromptInput {
    PromptInput { text: text.to_owned(), format: Some(answer_schema()), ..PromptInput::default() }
}

#[tokio::test]
async fn a_schema_is_answered_through_the_structured_output_tool() {
    // The first call breaks the schema: the model sees the error and calls again.
    let server = TestServer::start(script(
        r#"{"turns": [
            {"calls": [{"name": "StructuredOutput", "arguments": {"answer": "four"}}]},
            {"calls": [{"name": "StructuredOutput", "arguments": {"answer": 4}}]}]}"#,
    ))
    .await
    .unwrap();
    let rig = rig(Setup::new(http(&server))).await;
    let session = rig.runtime.create_session(None).await.unwrap();
    let reply = rig.runtime.prompt(&session.id, structured("two plus two?")).await.unwrap();

    assert_eq!(reply.structured, Some(json!({"answer": 4})));
    assert_eq!(reply.error, None);
    assert!(reply.finish.is_some(), "{reply:?}");
    let messages = history(&rig.store, &session.id).await;
    assert_eq!(
        tool_states(&messages),
        [
            ("StructuredOutput".to_owned(), ToolStatus::Error),
            ("StructuredOutput".to_owned(), ToolStatus::Completed)
        ]
    );
    let error = messages
        .iter()
        .flat_map(|m| m.parts.iter())
        .find_map(|p| match &p.kind {
            PartKind::Tool(tool) if tool.state.status() == ToolStatus::Error => {
                Some(format!("{:?}", tool.state))
            }
            _ => None,
        })
        .unwrap();
    assert!(error.contains("answer:"), "the error names the field: {error}");
    // The user message keeps its format; the stored assistant message keeps the answer.
    match &messages[0].info {
        Message::User(user) => assert_eq!(user.format, Some(answer_schema())),
        other => panic!("expected the user message, got {other:?}"),
    }
    match &messages.last().unwrap().info {
        Message::Assistant(stored) => assert_eq!(stored.structured, Some(json!({"answer": 4}))),
        other => panic!("expected an assistant message, got {other:?}"),
    }
    // Every request offered the tool, required a tool call and carried the instruction.
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert!(request.tool_names.iter().any(|name| name == "StructuredOutput"), "{:?}", request.tool_names);
        assert_eq!(request.body["tool_choice"], json!("required"));
        assert!(request.body.to_string().contains("StructuredOutput tool exactly once"));
    }
    assert!(STRUCTURED_OUTPUT_INSTRUCTION.contains("StructuredOutput tool exactly once"));
    server.assert_invariants();
    server.shutdown().await;
}

#[tokio::test]
async fn a_plain_text_reply_to_a_schema_is_a_structured_output_error() {
    let server = TestServer::start(script(r#"{"turns": [{"text": "It is four."}]}"#)).await.unwrap();
    let rig = rig(Setup::new(http(&server))).await;
    let session = rig.runtime.create_session(None).await.unwrap();
    let mut events = rig.runtime.bus().subscribe();
    let reply = rig.runtime.prompt(&session.id, structured("two plus two?")).await.unwrap();

    assert_eq!(reply.structured, None);
    assert_eq!(
        reply.error,
        Some(MessageError::StructuredOutputError {
            message: "Model did not produce structured output".to_owned(),
            retries: 0
        })
    );
    assert_eq!(reply.finish, Some(FinishReason::Stop));
    let mut errors = 0;
    while let Ok(event) = events.try_recv() {
        if let session_runtime::BusEvent::SessionError { error, .. } = event {
            assert_eq!(error.name(), "StructuredOutputError");
            errors += 1;
        }
    }
    assert_eq!(errors, 1);
    assert_eq!(server.requests().len(), 1, "no retry of a finished reply");
    server.shutdown().await;
}

/// A one-turn script whose reply is "Partial" cut off by the provider's content filter.
fn filtered() -> session_llm::Script {
    let chunk = |delta: serde_json::Value, finish: Option<&str>| {
        format!("data: {}\n\n", json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}))
    };
    let body = chunk(json!({"content": "Partial"}), None)
        + &chunk(json!({}), Some("content_filter"))
        + "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n";
    let mut script = script(r#"{"turns": [{"text": "unused"}]}"#);
    script.turns[0].recorded = Some(body.into());
    script
}

#[tokio::test]
async fn a_content_filter_finish_ends_the_run_with_a_content_filter_error() {
    // SPEC 12 step 10, as OpenCode 1.18.34 does it, and before the structured-output
    // check: a schema's run blocked by the filter fails with the filter's error.
    for input in [say("Tell me"), structured("Tell me")] {
        let server = TestServer::start(filtered()).await.unwrap();
        let rig = rig(Setup::new(http(&server))).await;
        let session = rig.runtime.create_session(None).await.unwrap();
        let mut events = rig.runtime.bus().subscribe();
        let reply = rig.runtime.prompt(&session.id, input).await.unwrap();

        let expected = MessageError::ContentFilterError {
            message: "The response was blocked by the provider's content filter".to_owned(),
        };
        assert_eq!(reply.error.as_ref(), Some(&expected));
        assert_eq!(reply.finish, Some(FinishReason::ContentFilter));
        let stored = history(&rig.store, &session.id).await;
        let Some(Message::Assistant(last)) = stored.last().map(|m| &m.info) else { panic!("{stored:?}") };
        assert_eq!(last.error.as_ref(), Some(&expected), "the error is stored on the message");
        let mut errors = Vec::new();
        while let Ok(event) = events.try_recv() {
            if let session_runtime::BusEvent::SessionError { error, .. } = event {
                errors.push(error);
            }
        }
        assert_eq!(errors, [expected]);
        assert_eq!(server.requests().len(), 1, "the run ends: no second step, no retry");
        server.shutdown().await;
    }
}

#[tokio::test]
async fn an_invalid_schema_is_refused_before_anything_is_stored() {
    let server = TestServer::start(script(r#"{"turns": [{"text": "unused"}]}"#)).await.unwrap();
    let rig = rig(Setup::new(http(&server))).await;
    let session = rig.runtime.create_session(None).await.unwrap();
    let input = PromptInput {
        text: "x".into(),
        format: Some(OutputFormat::JsonSchema { schema: json!({"type": 12}), retry_count: 2 }),
        ..PromptInput::default()
    };
    let error = rig.runtime.prompt(&session.id, input).await.unwrap_err();
    assert!(matches!(error, RuntimeError::InvalidSchema(_)), "{error}");
    assert!(history(&rig.store, &session.id).await.is_empty());
    assert!(server.requests().is_empty());
    assert!(!rig.runtime.is_busy(&session.id));
    server.shutdown().await;
}

#[tokio::test]
async fn a_prompt_sent_mid_run_joins_it_and_is_answered_as_a_reminder() {
    // The second answer is slow, so the second prompt arrives while the first run waits for it.
    let server = TestServer::start(script(
        r#"{"turns": [
            {"text": "Reading.", "calls": [{"op": "read", "path": "notes.txt"}]},
            {"text": "Done with the first.", "delay": 0.5},
            {"text": "And the second."}]}"#,
    ))
    .await
    .unwrap();
    let rig = rig(Setup::new(http(&server))).await;
    let session = rig.runtime.create_session(None).await.unwrap();
    let first = rig.runtime.prompt(&session.id, say("read the notes"));
    let second = async {
        eventually("the second request", async || server.requests().len() >= 2).await;
        assert!(rig.runtime.is_busy(&session.id));
        rig.runtime.prompt(&session.id, say("also count the lines")).await
    };
    let (first, second) = tokio::join!(first, second);
    let (first, second) = (first.unwrap(), second.unwrap());
    // Both prompts return what the one run ended with.
    assert_eq!(first.id, second.id);
    assert_eq!(first.finish, Some(FinishReason::Stop));

    let requests = server.requests();
    assert_eq!(requests.len(), 3, "one run, three steps");
    let third = requests[2].body.to_string();
    assert!(
        third.contains("<system-reminder>\\nThe user sent the following message:\\nalso count the lines"),
        "{third}"
    );
    let messages = history(&rig.store, &session.id).await;
    let users: Vec<_> = messages.iter().filter(|m| is_user(m)).collect();
    assert_eq!(users.len(), 2);
    // The stored text stays as the user wrote it; only the request wraps it.
    assert!(!format!("{:?}", users[1].parts).contains("system-reminder"));
    assert!(!rig.runtime.is_busy(&session.id));
    server.assert_invariants();
    server.shutdown().await;
}
