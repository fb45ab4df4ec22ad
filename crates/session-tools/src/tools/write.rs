//! `write`: creates or overwrites a file (parent folders created); the diff goes to the
//! permission ask.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use session_core::JsonObject;

use super::edit::diff;
use super::files::{old_text, pin_for_write};
use super::{blocking, object};
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::tool::{ToolSuccess, TypedTool};

const NAME: &str = "write";

const DESCRIPTION: &str = "Writes a file to the local filesystem, overwriting it if it exists and creating missing \
parent folders. The filePath may be absolute or relative to the workspace root. Prefer editing existing files \
with the edit tool.";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WriteArgs {
    /// The content to write to the file
    content: String,
    /// The absolute path to the file to write (must be absolute, not relative)
    file_path: String,
}

/// The `write` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteTool;

#[async_trait]
impl TypedTool for WriteTool {
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Input = WriteArgs;

    async fn run(&self, args: WriteArgs, ctx: &ToolContext) -> Result<ToolSuccess, ToolError> {
        let pinned = pin_for_write(ctx, &args.file_path).await?;
        let shown = pinned.shown();
        let relative = pinned.resolved().display(ctx.workspace());
        let (pinned, old) = blocking(move || {
            let old = old_text(&pinned, false)?;
            Ok((pinned, old))
        })
        .await?;
        let exists = old.is_some();
        let file_diff = diff(&shown, old.as_deref().unwrap_or_default(), &args.content);
        ctx.ask_for(
            "edit",
            vec![relative.clone()],
            vec!["*".into()],
            object([
                ("filepath", Value::String(shown.clone())),
                ("diff", Value::String(file_diff.patch.clone())),
            ]),
        )
        .await?;
        let mut pinned = pinned;
        let content = args.content;
        blocking(move || pinned.replace(content.as_bytes())).await?;
        Ok(ToolSuccess::new(
            relative,
            "Wrote file successfully.",
            // OpenCode's keys in its order (no diff: its `write` keeps that for the permission
            // ask); `truncated` is what its tool wrapper adds to a short output it did not cut.
            object([
                ("diagnostics", Value::Object(JsonObject::new())),
                ("filepath", Value::String(shown.clone())),
                ("exists", Value::Bool(exists)),
                ("truncated", Value::Bool(false)),
            ]),
        ))
    }
}
