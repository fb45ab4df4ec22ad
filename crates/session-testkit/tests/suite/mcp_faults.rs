//! session-mcp against the misbehaving MCP server of this crate (`mcp-fault-server`): a slow
//! start past the timeout, a crash in the middle of a call (and the restart on the next
//! call), a call that never answers and is then abandoned (an abort), a huge result, and a
//! tool list that changes.

use std::sync::Arc;
use std::time::Duration;

use session_core::JsonObject;
use session_mcp::{LocalServer, MAX_RESULT_CHARS, McpError, McpManager, ServerSpec, ServerState, Transport};
use session_tools::ToolSource as _;

fn spec(args: &[&str], timeout: Duration) -> ServerSpec {
    let mut command = vec![env!("CARGO_BIN_EXE_mcp-fault-server").to_owned()];
    command.extend(args.iter().map(|a| (*a).to_owned()));
    ServerSpec {
        name: "fault".to_owned(),
        transport: Transport::Local(LocalServer {
            command,
            environment: Default::default(),
            cwd: std::env::temp_dir(),
            sandboxed: false,
        }),
        enabled: true,
        timeout,
    }
}

fn args(value: serde_json::Value) -> JsonObject {
    match value {
        serde_json::Value::Object(object) => object,
        _ => JsonObject::new(),
    }
}

async fn names(manager: &McpManager) -> Vec<String> {
    manager.tools().await.iter().map(|tool| tool.name().to_owned()).collect()
}

#[tokio::test]
async fn a_server_slower_than_its_timeout_fails_once_and_offers_nothing() {
    let manager = McpManager::new(vec![spec(&["--slow-start", "3000"], Duration::from_millis(300))]);
    assert_eq!(names(&manager).await, Vec::<String>::new());
    let status = manager.status();
    assert_eq!(status[0].state, ServerState::Failed);
    assert_eq!(status[0].error.as_deref(), Some("MCP server \"fault\" did not start within 300 ms"));
    // Not retried on every request: the next listing answers at once with nothing.
    assert_eq!(names(&manager).await, Vec::<String>::new());
    manager.shutdown().await;
}

#[tokio::test]
async fn a_crash_mid_call_is_a_clear_error_and_the_next_call_restarts_the_server() {
    let manager = McpManager::new(vec![spec(&[], Duration::from_secs(30))]);
    let offered = names(&manager).await;
    assert!(offered.contains(&"fault_crash".to_owned()), "{offered:?}");
    let first = manager.call("fault", "pid", JsonObject::new()).await.unwrap().output;
    let error = manager.call("fault", "crash", JsonObject::new()).await.unwrap_err();
    assert!(matches!(&error, McpError::NotRunning { .. } | McpError::Protocol { .. }), "{error:?}");
    assert!(error.to_string().starts_with("MCP server \"fault\""), "{error}");
    // The dead server keeps its tools on offer; a call starts it again.
    assert!(names(&manager).await.contains(&"fault_pid".to_owned()));
    let second = manager.call("fault", "pid", JsonObject::new()).await.unwrap().output;
    assert_ne!(first, second, "a new process answers");
    assert_eq!(manager.status()[0].state, ServerState::Connected);
    manager.shutdown().await;
}

#[tokio::test]
async fn a_call_that_never_answers_is_abandoned_and_the_server_goes_on() {
    let manager = McpManager::new(vec![spec(&[], Duration::from_secs(30))]);
    names(&manager).await;
    let pid = manager.call("fault", "pid", JsonObject::new()).await.unwrap().output;
    // The executor drops a call on abort; dropping it sends notifications/cancelled.
    let abandoned =
        tokio::time::timeout(Duration::from_millis(200), manager.call("fault", "hang", JsonObject::new()));
    assert!(abandoned.await.is_err(), "hang answered");
    let again = manager.call("fault", "pid", JsonObject::new()).await.unwrap().output;
    assert_eq!(pid, again, "the same server answers after the abort");
    manager.shutdown().await;
}

#[tokio::test]
async fn a_huge_result_is_cut_with_a_note() {
    let manager = McpManager::new(vec![spec(&[], Duration::from_secs(30))]);
    let result = manager.call("fault", "huge", args(serde_json::json!({"chars": 2_000_000}))).await.unwrap();
    assert!(result.output.starts_with(&"x".repeat(MAX_RESULT_CHARS)));
    assert!(
        result
            .output
            .ends_with(&format!("(output truncated: {} more characters)", 2_000_000 - MAX_RESULT_CHARS))
    );
    manager.shutdown().await;
}

#[tokio::test]
async fn a_tool_list_change_is_offered_on_the_next_listing() {
    let manager = Arc::new(McpManager::new(vec![spec(&[], Duration::from_secs(30))]));
    let before = names(&manager).await;
    assert!(!before.contains(&"fault_extra".to_owned()), "{before:?}");
    assert_eq!(manager.call("fault", "grow", JsonObject::new()).await.unwrap().output, "grown");
    // The notification may trail the call's answer by a moment.
    let mut after = Vec::new();
    for _ in 0..100 {
        after = names(&manager).await;
        if after.contains(&"fault_extra".to_owned()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(after.contains(&"fault_extra".to_owned()), "{after:?}");
    assert_eq!(manager.call("fault", "extra", JsonObject::new()).await.unwrap().output, "extra ran");
    manager.shutdown().await;
}

/// A local server that first tries to write `outside` (a folder that is neither the workspace
/// nor a temp dir), then serves as the fault server does.
fn writing_spec(outside: &std::path::Path, sandboxed: bool) -> ServerSpec {
    let script = format!(
        "echo escaped > '{}/marker' 2>/dev/null; exec '{}'",
        outside.display(),
        env!("CARGO_BIN_EXE_mcp-fault-server")
    );
    ServerSpec {
        name: "fault".to_owned(),
        transport: Transport::Local(LocalServer {
            command: vec!["sh".to_owned(), "-c".to_owned(), script],
            environment: Default::default(),
            cwd: std::env::temp_dir(),
            sandboxed,
        }),
        enabled: true,
        timeout: Duration::from_secs(30),
    }
}

#[tokio::test]
async fn a_server_configured_for_the_sandbox_cannot_write_outside_the_workspace() {
    // Under the target dir, not /tmp: the sandbox leaves the temp dirs writable.
    let root = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (workspace, outside) = (root.path().join("workspace"), root.path().join("outside"));
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let sandbox = session_tools::Sandbox::new(session_tools::SandboxSettings {
        mode: session_tools::SandboxMode::WorkspaceWrite,
        ..session_tools::SandboxSettings::default()
    });
    let at = session_mcp::SandboxAt { sandbox, workspace };

    let confined = McpManager::confined(vec![writing_spec(&outside, true)], at.clone());
    assert!(names(&confined).await.contains(&"fault_pid".to_owned()), "{:?}", confined.status());
    assert!(!outside.join("marker").exists(), "the confined server wrote outside the workspace");
    confined.shutdown().await;

    // The same server without `sandbox: true` runs as the user does.
    let free = McpManager::confined(vec![writing_spec(&outside, false)], at);
    assert!(names(&free).await.contains(&"fault_pid".to_owned()));
    assert!(outside.join("marker").exists());
    free.shutdown().await;
}
