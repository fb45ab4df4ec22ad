//! Tools that come and go while the process runs (MCP servers): a [`ToolSource`] the executor
//! asks for its current tools before each model request.

use std::sync::Arc;

use async_trait::async_trait;

use crate::registry::ToolRegistry;
use crate::tool::Tool;

/// A provider of tools whose list can change between model requests.
///
/// [`ToolSource::tools`] is called once before each model request; a source starts what it
/// needs there (so commands that call no model start nothing) and bounds its own waiting.
#[async_trait]
pub trait ToolSource: Send + Sync {
    /// The tools to offer for the next request; a source that cannot list its tools right now
    /// returns what it has (possibly none) and reports the problem itself.
    async fn tools(&self) -> Vec<Arc<dyn Tool>>;
}

/// The registry of the sources' tools: each tool whose schema does not compile, or whose name a
/// built-in tool already has, is left out with a warning (and is never sent to a model).
pub(crate) fn source_registry(tools: Vec<Arc<dyn Tool>>, builtin: &ToolRegistry) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    for tool in tools {
        if builtin.get(tool.name()).is_some() {
            tracing::warn!(tool = tool.name(), "a tool source's tool has a built-in tool's name; left out");
            continue;
        }
        let name = tool.name().to_owned();
        if let Err(error) = registry.register(tool) {
            tracing::warn!(tool = %name, %error, "a tool source's tool is left out");
        }
    }
    registry
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::ToolContext;
    use crate::error::ToolError;
    use crate::tool::ToolSuccess;
    use serde_json::{Value, json};
    use session_core::JsonObject;

    struct Named(&'static str, Value);

    #[async_trait]
    impl Tool for Named {
        fn name(&self) -> &str {
            self.0
        }
        fn description(&self) -> &str {
            "a sourced tool"
        }
        fn parameters(&self) -> Value {
            self.1.clone()
        }
        async fn execute(&self, _: JsonObject, _: &ToolContext) -> Result<ToolSuccess, ToolError> {
            Ok(ToolSuccess::default())
        }
    }

    #[test]
    fn sourced_tools_never_shadow_built_ins_and_bad_schemas_are_left_out() {
        let builtin = crate::tools::builtin_registry().unwrap_or_else(|error| panic!("{error}"));
        let object = json!({"type": "object", "properties": {}});
        let tools: Vec<Arc<dyn Tool>> = vec![
            Arc::new(Named("srv_ok", object.clone())),
            Arc::new(Named("bash", object)),
            Arc::new(Named("srv_bad", json!({"type": 12}))),
        ];
        let registry = source_registry(tools, &builtin);
        assert_eq!(registry.names(), ["srv_ok"]);
    }
}
