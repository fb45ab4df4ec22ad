//! `session replay` as a user runs it: stdout, stderr and exit codes.

use std::process::Command;

use serde_json::Value;
use session_e2e::{fixtures_dir, session_binary};

/// The `--format json` output as `run` and `demo` print it: one `{"type", "properties"}` event a
/// line; folded here into the parts, the assistant message and the error (null without one).
fn events(stdout: &[u8]) -> Value {
    let mut parts = Vec::new();
    let mut message = Value::Null;
    let mut error = Value::Null;
    for line in String::from_utf8_lossy(stdout).lines() {
        let event: Value = serde_json::from_str(line).expect("every line is one JSON event");
        assert!(event["properties"].is_object(), "{event}");
        match event["type"].as_str().unwrap() {
            "message.part.updated" => parts.push(event["properties"]["part"].clone()),
            "message.updated" => message = event["properties"]["info"].clone(),
            "session.error" => error = event["properties"]["error"].clone(),
            other => panic!("unexpected event {other}"),
        }
    }
    serde_json::json!({"parts": parts, "message": message, "error": error})
}

fn replay(args: &[&str]) -> std::process::Output {
    Command::new(session_binary().expect("session binary"))
        .arg("replay")
        .args(args)
        .output()
        .expect("run session")
}

#[test]
fn json_output_is_json_lines_of_parts_message_and_error() {
    let file = fixtures_dir().join("openai-chat/tool-calls-parallel-gpt4o.sse");
    let out = replay(&["--api", "openai-chat", "--format", "json", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = events(&out.stdout);
    assert_eq!(doc["error"], Value::Null);
    assert_eq!(doc["message"]["finish"], "tool-calls");
    let kinds: Vec<&str> =
        doc["parts"].as_array().unwrap().iter().map(|p| p["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["step-start", "tool", "tool", "step-finish"]);
    for tool in doc["parts"].as_array().unwrap().iter().filter(|p| p["type"] == "tool") {
        assert_eq!(tool["state"]["status"], "error");
        assert_eq!(tool["state"]["error"], "Tool execution aborted");
        assert!(tool["state"]["input"].as_object().is_some_and(|input| !input.is_empty()), "input kept");
    }
}

#[test]
fn a_known_model_prices_the_replay() {
    let file = fixtures_dir().join("anthropic/text-sonnet45.sse");
    let out = replay(&[
        "--api",
        "anthropic",
        "--format",
        "json",
        "--model",
        "anthropic/claude-sonnet-4-5",
        file.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let doc = events(&out.stdout);
    assert!(doc["message"]["cost"].as_f64().unwrap() > 0.0, "{doc}");
    assert_eq!(doc["message"]["providerID"], "anthropic");
}

#[test]
fn a_cut_stream_fails_with_a_clear_error_and_a_length_finish_does_not() {
    let text = std::fs::read(fixtures_dir().join("openai-chat/text-gpt4o.sse")).unwrap();
    let dir = std::env::temp_dir().join(format!("session-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cut = dir.join("cut.sse");
    std::fs::write(&cut, &text[..text.len() / 2]).unwrap();
    let out = replay(&["--api", "openai-chat", "--format", "json", cut.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let doc = events(&out.stdout);
    assert!(
        doc["error"]["data"]["message"].as_str().unwrap().contains("stream ended before [DONE]"),
        "{doc}"
    );
    assert!(doc["error"]["name"].is_string());

    let length = fixtures_dir().join("openai-chat/finish-length-gpt4o.sse");
    let out = replay(&["--api", "openai-chat", length.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn provider_errors_in_the_stream_fail_the_replay() {
    let file = fixtures_dir().join("anthropic/error-event-overloaded.sse");
    let out = replay(&["--api", "anthropic", "--format", "json", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let doc = events(&out.stdout);
    assert_eq!(doc["error"]["data"]["message"], "Overloaded");
    assert_eq!(doc["message"]["error"]["name"], "APIError");
}

#[test]
fn usage_errors_exit_2_and_bad_files_exit_1() {
    let out = replay(&["--api", "carrier-pigeon", "x.sse"]);
    assert_eq!(out.status.code(), Some(2));
    let out = replay(&["--api", "anthropic", "/nonexistent/stream.sse"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot read /nonexistent/stream.sse"), "{stderr}");
}
