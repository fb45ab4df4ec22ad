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
            keep_out: None,
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
            keep_out: None,
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

/// An executor offering `manager`'s tools in a fresh workspace (asks would wait: the calls'
/// rules allow their tool); and that workspace.
async fn executor(manager: Arc<McpManager>) -> (session_tools::ToolExecutor, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let engine = Arc::new(session_tools::PermissionEngine::new(Arc::new(session_tools::ReplyLater)));
    let workspace = session_tools::Workspace::new(dir.path()).unwrap();
    let executor =
        session_tools::ToolExecutor::new(session_tools::builtin_registry().unwrap(), workspace, engine)
            .with_source(manager);
    executor.refresh_sources().await;
    (executor, dir)
}

/// Runs the offered tool `name` through `executor` with a rule allowing it.
async fn run_offered(
    executor: &session_tools::ToolExecutor,
    name: &str,
) -> Result<session_tools::ToolSuccess, session_tools::ToolError> {
    use session_core::permission::{Action, Rule};
    let scope = session_tools::CallScope {
        session_id: session_core::SessionId::new_unchecked("ses_test"),
        message_id: session_core::MessageId::new_unchecked("msg_test"),
        agent: "build".into(),
        ruleset: Arc::new(vec![Rule::new(name, "*", Action::Allow)]),
        abort: tokio_util::sync::CancellationToken::new(),
    };
    let call = session_tools::ToolInvocation {
        call_id: "call_1".into(),
        tool: name.into(),
        input: JsonObject::new(),
    };
    executor.run(&call, &scope, scope.abort.clone(), session_tools::ProgressSink::none()).await
}

#[tokio::test]
async fn a_304_character_tool_name_is_offered_within_64_and_calls_the_real_tool() {
    let manager = Arc::new(McpManager::new(vec![spec(&[], Duration::from_secs(30))]));
    let offered = names(&manager).await;
    let long: Vec<&String> = offered.iter().filter(|name| name.starts_with("fault_long_")).collect();
    assert_eq!(long.len(), 1, "{offered:?}");
    assert_eq!(long[0].len(), session_mcp::MAX_TOOL_NAME_CHARS, "{}", long[0]);
    assert!(offered.iter().all(|name| name.len() <= session_mcp::MAX_TOOL_NAME_CHARS), "{offered:?}");
    // The model calls the short name; the server is asked for its own 304-character one.
    let (executor, _dir) = executor(manager.clone()).await;
    let result = run_offered(&executor, long[0]).await.unwrap();
    assert_eq!(result.output, "long ran");
    assert_eq!(result.metadata["tool"].as_str().map(str::len), Some(304));
    manager.shutdown().await;
}

#[tokio::test]
async fn an_8_mb_svg_is_not_sent_and_the_model_reads_why() {
    let manager = Arc::new(McpManager::new(vec![spec(&[], Duration::from_secs(30))]));
    let (executor, _dir) = executor(manager.clone()).await;
    let result = run_offered(&executor, "fault_svg").await.unwrap();
    assert!(
        result.attachments.is_empty(),
        "an svg of {} bytes was attached",
        result.attachments[0].url.len()
    );
    assert!(result.output.contains("image/svg+xml"), "{}", result.output);
    assert!(result.output.contains("not shown: over the 5 MB image size limit"), "{}", result.output);
    manager.shutdown().await;
}

#[tokio::test]
async fn a_3_mb_structured_content_is_stored_cut_with_a_note() {
    let manager = McpManager::new(vec![spec(&[], Duration::from_secs(30))]);
    let result = manager.call("fault", "structured", JsonObject::new()).await.unwrap();
    let kept = result.metadata["structuredContent"]
        .as_str()
        .unwrap_or_else(|| panic!("not cut: {}", result.metadata.len()));
    assert!(kept.chars().count() < MAX_RESULT_CHARS + 100, "{} characters kept", kept.len());
    let cut = 3 * 1024 * 1024 + r#"{"data":""}"#.len() - MAX_RESULT_CHARS;
    assert!(
        kept.ends_with(&format!("(output truncated: {cut} more characters)")),
        "{}",
        &kept[kept.len() - 80..]
    );
    assert_eq!(result.output, "structured below");
    manager.shutdown().await;
}
