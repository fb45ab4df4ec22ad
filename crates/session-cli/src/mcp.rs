//! `session mcp list` and `session mcp call`: the configured MCP servers, their state and
//! tools, and one direct call for a quick manual check.

use std::io::Write;

use anyhow::{Result, anyhow};
use clap::Subcommand;
use session_mcp::{McpManager, ServerStatus};
use session_runtime::RuntimeSetup;

/// What `session mcp` does.
#[derive(Debug, Subcommand)]
pub enum McpAction {
    /// Starts each configured server and prints its state, tools and last error.
    List,
    /// Calls one tool of one server with JSON arguments, without a model.
    Call {
        /// The server (its key under `mcp`).
        server: String,
        /// The tool, by the server's own name.
        tool: String,
        /// The arguments, a JSON object.
        #[arg(default_value = "{}")]
        json: String,
    },
}

/// Carries out `action` for the project of `setup`, writing to `out`.
pub async fn main(setup: &RuntimeSetup, action: McpAction, out: impl Write) -> Result<()> {
    match action {
        McpAction::List => list(setup, out).await,
        McpAction::Call { server, tool, json } => call(setup, &server, &tool, &json, out).await,
    }
}

/// Starts every enabled server (each bounded by its timeout) and prints each one's state,
/// tools and last error; ends the servers before returning.
pub async fn list(setup: &RuntimeSetup, mut out: impl Write) -> Result<()> {
    let manager = session_runtime::mcp::mcp_manager(setup)?;
    manager.start_all().await;
    let status = manager.status();
    manager.shutdown().await;
    if status.is_empty() {
        writeln!(out, "no MCP servers are configured (config key `mcp`)")?;
    }
    for server in &status {
        write_status(&mut out, server)?;
    }
    Ok(())
}

fn write_status(out: &mut impl Write, server: &ServerStatus) -> Result<()> {
    writeln!(out, "{} {}", server.name, server.state.as_str())?;
    if let Some(error) = &server.error {
        writeln!(out, "  error: {}", crate::terminal::clean(error))?;
    }
    for tool in &server.tools {
        writeln!(out, "  {tool}")?;
    }
    Ok(())
}

/// Calls `tool` (the server's own name for it) of `server` with `arguments` (a JSON object)
/// and prints its output; images are counted, not printed. Ends the servers before returning.
pub async fn call(
    setup: &RuntimeSetup,
    server: &str,
    tool: &str,
    arguments: &str,
    mut out: impl Write,
) -> Result<()> {
    let arguments = match serde_json::from_str::<serde_json::Value>(arguments) {
        Ok(serde_json::Value::Object(object)) => object,
        Ok(_) => return Err(anyhow!("the arguments must be a JSON object")),
        Err(error) => return Err(anyhow!("the arguments are not JSON: {error}")),
    };
    let manager: McpManager = session_runtime::mcp::mcp_manager(setup)?;
    let result = manager.call(server, tool, arguments).await;
    manager.shutdown().await;
    let success = result?;
    writeln!(out, "{}", crate::terminal::clean(&success.output))?;
    if !success.attachments.is_empty() {
        writeln!(out, "({} attachment(s): {})", success.attachments.len(), mimes(&success.attachments))?;
    }
    if let Some(structured) = success.metadata.get("structuredContent") {
        writeln!(out, "structured content: {}", crate::terminal::clean(&structured.to_string()))?;
    }
    Ok(())
}

fn mimes(files: &[session_core::FilePart]) -> String {
    files.iter().map(|file| file.mime.as_str()).collect::<Vec<_>>().join(", ")
}
