//! The request log and the invariant check on every request.

use std::panic::{AssertUnwindSafe, catch_unwind};

use pretty_assertions::assert_eq;
use session_core::{history::AssistantContent, history::ModelMessage};
use session_llm::{Api, RequestKind};
use session_testkit::{TestServer, Violation};

use super::support::{collect, drive, http_provider, request, script, tool_call, tool_result, user};

const SHORT: &str = r#"{"name": "short", "turns": [
    {"text": "Listing.", "calls": [{"op": "list", "path": "."}]},
    {"calls": [{"op": "read", "path": "README.md"}, {"op": "glob", "pattern": "*.py"}]},
    {"text": "Done."}]}"#;

#[tokio::test]
async fn every_request_is_logged() {
    let server = TestServer::start(script(SHORT)).await.unwrap();
    let provider = http_provider(&server, Api::OpenAiChat);
    drive(&provider, "Look around.", 10).await.unwrap();
    let log = server.requests();
    assert_eq!(log.len(), 3);
    for (n, entry) in log.iter().enumerate() {
        assert_eq!(entry.index, n as u64 + 1);
        assert_eq!(entry.main_index, Some(n as u64 + 1));
        assert_eq!(entry.turn, n);
        assert_eq!(entry.kind, RequestKind::Main);
        assert_eq!(entry.api, Api::OpenAiChat);
        assert_eq!(entry.path, "/v1/chat/completions");
        assert_eq!(entry.status, Some(200));
        assert!(entry.stream);
        assert_eq!(entry.fault, None);
        assert_eq!(entry.model.as_deref(), Some("mock-model"));
        assert_eq!(entry.tool_names, vec!["bash", "read", "glob", "grep", "list", "write", "edit"]);
        assert_eq!(entry.system_chars, "You are a coding agent.".len());
        assert_eq!(entry.body["model"], "mock-model");
        // Credentials stay out of the log.
        assert!(!entry.headers.contains_key("authorization"));
        assert_eq!(entry.headers.get("content-type").map(String::as_str), Some("application/json"));
    }
    // The history grows: system + user, then an assistant and a tool result per step.
    let sizes: Vec<usize> = log.iter().map(|entry| entry.messages).collect();
    assert_eq!(sizes, vec![2, 4, 7]);
    let last_tool = &log[2].body["messages"][6];
    assert_eq!(last_tool["role"], "tool");
    assert_eq!(last_tool["tool_call_id"], "call_1_1");
    assert!(server.violations().is_empty());
    server.assert_invariants();
    // The log serialises (for dumping it when a test fails).
    let dumped = serde_json::to_value(&log[0]).unwrap();
    assert_eq!(dumped["api"], "openai-chat");
    assert_eq!(dumped["kind"], "main");
}

/// A history whose second call has no result, then an orphan result.
fn broken_history() -> Vec<ModelMessage> {
    vec![
        user("go"),
        ModelMessage::Assistant {
            content: vec![
                AssistantContent::ToolCall(tool_call("call_a", "read")),
                AssistantContent::ToolCall(tool_call("call_b", "list")),
            ],
        },
        ModelMessage::Tool { content: vec![tool_result("call_a", "read"), tool_result("call_x", "bash")] },
        user("and now?"),
    ]
}

#[tokio::test]
async fn a_tool_call_without_its_result_is_flagged_in_every_format() {
    for api in Api::ALL {
        let server = TestServer::start(script(SHORT)).await.unwrap();
        let provider = http_provider(&server, api);
        // A sound request first, then the broken one: only the second is flagged.
        let (_, error) = collect(&provider, request(vec![user("go")])).await;
        assert_eq!(error, None);
        let _ = collect(&provider, request(broken_history())).await;
        let expected_call = match api {
            // Gemini's calls carry no ids on the wire: they are named by their tool.
            Api::Gemini => "tool call list (list) has no result",
            _ => "tool call call_b (list) has no result",
        };
        let violations = server.violations();
        assert!(
            violations.contains(&Violation { request: 2, message: expected_call.to_owned() }),
            "{api}: {violations:?}"
        );
        assert!(violations.iter().all(|v| v.request == 2), "{api}: {violations:?}");
        let orphan = match api {
            Api::Gemini => "tool result bash answers no call",
            _ => "tool result call_x answers no call",
        };
        assert!(violations.iter().any(|v| v.message == orphan), "{api}: {violations:?}");
        assert_eq!(server.requests()[1].violations.len(), 2, "{api}");

        let report = catch_unwind(AssertUnwindSafe(|| server.assert_invariants())).unwrap_err();
        let report = report.downcast_ref::<String>().unwrap();
        assert!(report.starts_with("2 wire invariant violation(s)"), "{report}");
        assert!(report.contains(&format!("request 2: {expected_call}")), "{report}");
    }
}

#[tokio::test]
async fn summary_requests_are_told_apart() {
    let server = TestServer::start(script(SHORT)).await.unwrap();
    let provider = http_provider(&server, Api::Anthropic);
    let mut summary = request(vec![user("go")]);
    summary.tools.clear();
    summary.system = vec!["Summarize the conversation so far.".to_owned()];
    let (events, error) = collect(&provider, summary).await;
    assert_eq!(error, None);
    let text = super::support::text_of(&events);
    assert!(text.starts_with("[mock-summary turn=0]"), "{text}");
    let log = server.requests();
    assert_eq!((log[0].kind, log[0].main_index), (RequestKind::Summary, None));
}

#[tokio::test]
async fn arrival_times_are_recorded() {
    let server = TestServer::start(script(r#"{"turns": [{"text": "one"}, {"text": "two"}]}"#)).await.unwrap();
    let provider = http_provider(&server, Api::OpenAiChat);
    let before = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis();
    let (_, error) = collect(&provider, request(vec![user("first")])).await;
    assert_eq!(error, None);
    // The client waits before its second request: the log shows at least that gap.
    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    let (_, error) = collect(&provider, request(vec![user("second")])).await;
    assert_eq!(error, None);
    let log = server.requests();
    assert_eq!(log.len(), 2);
    assert!(log[1].received >= log[0].received + std::time::Duration::from_millis(150), "{log:?}");
    assert!(u128::from(log[0].received_unix_ms) >= before, "{log:?}");
    assert!(log[1].received_unix_ms >= log[0].received_unix_ms + 150, "{log:?}");
    let dumped = serde_json::to_value(&log[1]).unwrap();
    assert!(dumped["received"].as_f64().unwrap() >= 150.0, "{dumped}");
}
