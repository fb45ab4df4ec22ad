//! Every configured server of the process: started together the first time tools are needed,
//! listed for `session mcp list` and `GET /mcp`, ended at shutdown.

use std::sync::Arc;

use async_trait::async_trait;
use session_core::JsonObject;
use session_tools::{Tool, ToolSource, ToolSuccess};

use crate::error::McpError;
use crate::server::{Server, ServerStatus};
use crate::spawn::SandboxAt;
use crate::spec::ServerSpec;
use crate::tool::McpTool;

/// The MCP servers of one process (the CLI run, the HTTP server), one connection each.
pub struct McpManager {
    servers: Vec<Arc<Server>>,
}

impl std::fmt::Debug for McpManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpManager")
            .field("servers", &self.servers.iter().map(|s| s.name()).collect::<Vec<_>>())
            .finish()
    }
}

impl McpManager {
    /// The servers of `specs`, none started.
    pub fn new(specs: Vec<ServerSpec>) -> Self {
        Self { servers: specs.into_iter().map(|spec| Arc::new(Server::new(spec, None))).collect() }
    }

    /// The servers of `specs`, those whose config asks for it confined by `sandbox`.
    pub fn confined(specs: Vec<ServerSpec>, sandbox: SandboxAt) -> Self {
        let sandbox = Arc::new(sandbox);
        Self {
            servers: specs
                .into_iter()
                .map(|spec| Arc::new(Server::new(spec, Some(sandbox.clone()))))
                .collect(),
        }
    }

    /// True when no server is configured.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Starts every enabled server that has not been started, concurrently, each bounded by
    /// its timeout.
    pub async fn start_all(&self) {
        futures_util::future::join_all(self.servers.iter().map(|server| server.listed())).await;
    }

    /// Each server's state, tools and last error, in config order.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.servers.iter().map(|server| server.status()).collect()
    }

    /// Calls `tool` (the server's own name for it) of `server` directly, outside any session
    /// (`session mcp call`): no permission is asked.
    pub async fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: JsonObject,
    ) -> Result<ToolSuccess, McpError> {
        let found = self
            .servers
            .iter()
            .find(|candidate| candidate.name() == server)
            .ok_or_else(|| McpError::UnknownServer { name: server.to_owned() })?;
        found.call(tool, arguments).await
    }

    /// Ends every connection and every local server's process.
    pub async fn shutdown(&self) {
        futures_util::future::join_all(self.servers.iter().map(|server| server.shutdown())).await;
    }
}

#[async_trait]
impl ToolSource for McpManager {
    async fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let lists = futures_util::future::join_all(self.servers.iter().map(|server| async move {
            server
                .listed()
                .await
                .into_iter()
                .map(|listed| McpTool::new(server.clone(), listed))
                .collect::<Vec<_>>()
        }))
        .await;
        lists.into_iter().flatten().map(|tool| Arc::new(tool) as Arc<dyn Tool>).collect()
    }
}
