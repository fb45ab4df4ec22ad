//! `invalid`: what a call of a tool that was not offered runs as (SPEC 1.1 tool-call repair).
//! It is registered so the call is answered like any other, and never offered to the model.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use session_core::JsonObject;

use crate::context::ToolContext;
use crate::error::ToolError;
use crate::tool::{ToolSuccess, TypedTool};

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct InvalidArgs {
    /// The tool the model tried to call
    #[expect(dead_code, reason = "part of the call's input, which names it; the answer does not repeat it")]
    tool: String,
    /// Why the call could not run
    error: String,
}

/// The `invalid` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct InvalidTool;

#[async_trait]
impl TypedTool for InvalidTool {
    const NAME: &'static str = session_core::processor::INVALID_TOOL;
    const DESCRIPTION: &'static str = "Answers a call of a tool that does not exist. Never call it directly.";
    type Input = InvalidArgs;

    async fn run(&self, args: InvalidArgs, _ctx: &ToolContext) -> Result<ToolSuccess, ToolError> {
        // OpenCode 1.18.34's metadata has nothing of its own (the executor adds `truncated`).
        Ok(ToolSuccess::new(
            "Invalid Tool",
            format!("The arguments provided to the tool are invalid: {}", args.error),
            JsonObject::new(),
        ))
    }
}
