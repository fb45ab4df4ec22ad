//! An MCP server's tool as a [`session_tools::Tool`]: offered as `<server>_<tool>`, asked
//! through the permission engine, run through the same executor as the built-in tools.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use session_core::JsonObject;
use session_core::permission::PermissionRequest;
use session_tools::{Tool, ToolContext, ToolError, ToolSuccess};

use crate::server::{ListedTool, Server};

/// One tool of one MCP server.
pub struct McpTool {
    server: Arc<Server>,
    name: String,
    remote: String,
    description: String,
    schema: Value,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool").field("name", &self.name).field("server", &self.server.name()).finish()
    }
}

impl McpTool {
    pub(crate) fn new(server: Arc<Server>, listed: ListedTool) -> Self {
        let name = crate::name::tool_name(server.name(), &listed.name);
        Self { server, name, remote: listed.name, description: listed.description, schema: listed.schema }
    }
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        self.schema.clone()
    }

    async fn execute(&self, args: JsonObject, ctx: &ToolContext) -> Result<ToolSuccess, ToolError> {
        let mut metadata = JsonObject::new();
        metadata.insert("server".to_owned(), Value::String(self.server.name().to_owned()));
        metadata.insert("tool".to_owned(), Value::String(self.remote.clone()));
        let request = PermissionRequest {
            permission: self.name.clone(),
            patterns: vec!["*".to_owned()],
            always: vec!["*".to_owned()],
            metadata,
        };
        // An MCP tool is someone else's code: it asks unless a rule that names it (not the
        // catch-all `*` every agent starts from) or an earlier "always" allows it.
        match ctx.deciding_rule(&self.name, "*") {
            Some(rule) if rule.permission != "*" => ctx.ask(request).await?,
            _ => ctx.ask_anyway(request).await?,
        }
        self.server
            .call(&self.remote, args)
            .await
            .map_err(|error| ToolError::Failed { message: error.to_string() })
    }
}
