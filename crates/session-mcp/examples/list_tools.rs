//! Starts one local MCP server and prints the tools it offers, as the runtime would offer
//! them to a model.
//!
//! ```sh
//! cargo run -p session-mcp --example list_tools -- npx -y @modelcontextprotocol/server-everything
//! ```

use std::time::Duration;

use session_mcp::{LocalServer, McpManager, ServerSpec, Transport};
use session_tools::ToolSource as _;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let command: Vec<String> = std::env::args().skip(1).collect();
    if command.is_empty() {
        return Err("usage: list_tools PROGRAM [ARGS...]".into());
    }
    let spec = ServerSpec {
        name: "example".to_owned(),
        transport: Transport::Local(LocalServer {
            command,
            environment: Default::default(),
            cwd: std::env::current_dir()?,
            keep_out: None,
            sandboxed: false,
        }),
        enabled: true,
        timeout: Duration::from_secs(30),
    };
    let manager = McpManager::new(vec![spec]);
    for tool in manager.tools().await {
        println!("{}", tool.name());
    }
    for status in manager.status() {
        println!(
            "{}: {:?}{}",
            status.name,
            status.state,
            status.error.map(|e| format!(" ({e})")).unwrap_or_default()
        );
    }
    manager.shutdown().await;
    Ok(())
}
