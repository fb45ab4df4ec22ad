//! `todowrite`: the session's todo list (OpenCode 1.18.34 has no `todoread`; the list reaches
//! clients through `todo.updated` and the session's todo route).

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use session_core::JsonObject;

use super::object;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::todo::Todo;
use crate::tool::{ToolSuccess, TypedTool};

const WRITE_DESCRIPTION: &str = "Creates and updates the structured task list of the current session. Use it to \
plan multi-step work, track progress and show the user what is being done. Send the whole updated list every \
time; mark a task in_progress when you start it and completed as soon as it is done.";

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct TodoWriteArgs {
    /// The updated todo list
    #[schemars(transform = items_without_description)]
    todos: Vec<Todo>,
}

/// OpenCode 1.18.34 offers the todo item without a description of its own; the
/// item's doc comment is for this crate's readers.
fn items_without_description(schema: &mut schemars::Schema) {
    if let Some(items) = schema.get_mut("items").and_then(serde_json::Value::as_object_mut) {
        items.remove("description");
    }
}

/// The `todowrite` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct TodoWriteTool;

fn result(todos: &[Todo]) -> Result<ToolSuccess, ToolError> {
    let open = todos.iter().filter(|todo| todo.status != "completed").count();
    let value = serde_json::to_value(todos).map_err(|e| ToolError::Failed { message: e.to_string() })?;
    let output =
        serde_json::to_string_pretty(&value).map_err(|e| ToolError::Failed { message: e.to_string() })?;
    Ok(ToolSuccess::new(format!("{open} todos"), output, object([("todos", value)])))
}

#[async_trait]
impl TypedTool for TodoWriteTool {
    const NAME: &'static str = "todowrite";
    const DESCRIPTION: &'static str = WRITE_DESCRIPTION;
    type Input = TodoWriteArgs;

    async fn run(&self, args: TodoWriteArgs, ctx: &ToolContext) -> Result<ToolSuccess, ToolError> {
        ctx.ask_for(Self::NAME, vec!["*".into()], vec!["*".into()], JsonObject::new()).await?;
        ctx.todos().set(ctx.session_id(), args.todos.clone());
        result(&args.todos)
    }
}
