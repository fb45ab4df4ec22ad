//! Runs three tool calls the way the runtime does: a tracker spawns them concurrently, their
//! updates come back in order (as processor inputs), and an asker answers permission asks.
//!
//! `cargo run -p session-tools --example run_tools`

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use session_core::{
    MessageId, SessionId, permission::AgentPaths, permission::BuiltinAgent, permission::PermissionAsk,
    permission::agent_ruleset,
};
use session_tools::{
    CallScope, CallTracker, PermissionAnswer, PermissionAsker, PermissionEngine, ToolExecutor,
    ToolInvocation, ToolUpdate, Workspace, builtin_registry,
};
use tokio_util::sync::CancellationToken;

/// Prints every ask and allows it once (a terminal would prompt here).
struct AllowOnce;

#[async_trait]
impl PermissionAsker for AllowOnce {
    async fn ask(&self, ask: &PermissionAsk) -> Option<PermissionAnswer> {
        println!("asked: {} {:?} -> once", ask.request.permission, ask.request.patterns);
        Some(PermissionAnswer::once())
    }
}

fn call(id: &str, tool: &str, input: Value) -> ToolInvocation {
    let Value::Object(input) = input else { unreachable!("inputs are objects") };
    ToolInvocation { call_id: id.into(), tool: tool.into(), input }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("notes.txt"), "first line\nsecond line\n")?;
    std::fs::write(dir.path().join(".env"), "TOKEN=secret\n")?;

    let engine = Arc::new(PermissionEngine::new(Arc::new(AllowOnce)));
    let executor = Arc::new(ToolExecutor::new(builtin_registry()?, Workspace::new(dir.path())?, engine));
    let scope = CallScope {
        session_id: SessionId::new_unchecked("ses_example"),
        message_id: MessageId::new_unchecked("msg_example"),
        agent: "build".into(),
        // The build agent's defaults: everything allowed, except that `.env` files and paths
        // outside the workspace ask.
        ruleset: Arc::new(agent_ruleset(Some(BuiltinAgent::Build), &AgentPaths::default(), &[], &[])),
        abort: CancellationToken::new(),
    };

    let mut tracker = CallTracker::new();
    tracker.spawn(executor.clone(), call("c1", "read", json!({"filePath": "notes.txt"})), scope.clone());
    tracker.spawn(executor.clone(), call("c2", "read", json!({"filePath": ".env"})), scope.clone());
    let command = json!({"command": "echo hello from bash; exit 2", "description": "Greets"});
    tracker.spawn(executor.clone(), call("c3", "bash", command), scope.clone());
    tracker.spawn(executor.clone(), call("c4", "edit", json!({"filePath": "notes.txt"})), scope.clone());

    // The runtime feeds each update to the processor with `update.into_input()`.
    while let Some(update) = tracker.next().await {
        match update {
            ToolUpdate::Progress { call_id, title, metadata } => {
                println!(
                    "{call_id} progress: title={title:?} metadata={}",
                    Value::from(metadata.unwrap_or_default())
                );
            }
            ToolUpdate::Finished(done) => match &done.result {
                Ok(result) => {
                    println!("{} {} ok: {}\n{}\n", done.call_id, done.tool, result.title, result.output)
                }
                Err(error) => println!("{} {} failed: {error}\n", done.call_id, done.tool),
            },
        }
    }
    Ok(())
}
