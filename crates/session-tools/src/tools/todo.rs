//! `todowrite` and `todoread`: the session's todo list.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use session_core::JsonObject;

use super::object;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::todo::Todo;
use crate::tool::{Tool, ToolResult, parse_args, schema_for};

const WRITE_DESCRIPTION: &str = "Creates and updates the structured task list of the current session. Use it to \
plan multi-step work, track progress and show the user what is being done. Send the whole updated list every \
time; mark a task in_progress when you start it and completed as soon as it is done.";

const READ_DESCRIPTION: &str = "Reads the current session's todo list.";

#[derive(Debug, Deserialize, JsonSchema)]
struct TodoWriteArgs {
    /// The updated todo list
    todos: Vec<Todo>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct TodoReadArgs {}

/// The `todowrite` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct TodoWriteTool;

/// The `todoread` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct TodoReadTool;

fn result(todos: &[Todo]) -> Result<ToolResult, ToolError> {
    let open = todos.iter().filter(|todo| todo.status != "completed").count();
    let value = serde_json::to_value(todos).map_err(|e| ToolError::Failed { message: e.to_string() })?;
    let output =
        serde_json::to_string_pretty(&value).map_err(|e| ToolError::Failed { message: e.to_string() })?;
    Ok(ToolResult::new(format!("{open} todos"), output, object([("todos", value)])))
}

#[async_trait]
impl Tool for TodoWriteTool {
    fn name(&self) -> &str {
        "todowrite"
    }

    fn description(&self) -> &str {
        WRITE_DESCRIPTION
    }

    fn parameters(&self) -> Value {
        schema_for::<TodoWriteArgs>()
    }

    async fn execute(&self, args: JsonObject, ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        let args: TodoWriteArgs = parse_args("todowrite", args)?;
        ctx.ask_for("todowrite", vec!["*".into()], vec!["*".into()], JsonObject::new()).await?;
        ctx.todos().set(ctx.session_id(), args.todos.clone());
        result(&args.todos)
    }
}

#[async_trait]
impl Tool for TodoReadTool {
    fn name(&self) -> &str {
        "todoread"
    }

    fn description(&self) -> &str {
        READ_DESCRIPTION
    }

    fn parameters(&self) -> Value {
        schema_for::<TodoReadArgs>()
    }

    async fn execute(&self, args: JsonObject, ctx: &ToolContext) -> Result<ToolResult, ToolError> {
        let _: TodoReadArgs = parse_args("todoread", args)?;
        ctx.ask_for("todoread", vec!["*".into()], vec!["*".into()], JsonObject::new()).await?;
        result(&ctx.todos().get(ctx.session_id()))
    }
}
