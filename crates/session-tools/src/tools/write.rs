//! `write`: creates or overwrites a file (parent folders created), a diff in the metadata.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use session_core::JsonObject;

use super::edit::{diff, filediff_json};
use super::object;
use crate::context::{PathKind, ToolContext};
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
        let resolved = ctx.resolve_path(&args.file_path, PathKind::File).await?;
        let path = resolved.path.clone();
        let shown = path.to_string_lossy().into_owned();
        let relative = resolved.display(ctx.workspace());
        let meta = tokio::fs::metadata(&path).await.ok();
        if meta.as_ref().is_some_and(std::fs::Metadata::is_dir) {
            return Err(ToolError::IsDirectory { path: shown });
        }
        let exists = meta.is_some();
        let old = if exists {
            tokio::fs::read(&path).await.map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default()
        } else {
            String::new()
        };
        let file_diff = diff(&shown, &old, &args.content);
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
        if let Some(parent) = path.parent() {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(|e| ToolError::io("create directory", &shown, e))?;
        }
        tokio::fs::write(&path, args.content.as_bytes())
            .await
            .map_err(|e| ToolError::io("write", &shown, e))?;
        Ok(ToolSuccess::new(
            relative,
            "Wrote file successfully.",
            object([
                ("diagnostics", Value::Object(JsonObject::new())),
                ("filepath", Value::String(shown.clone())),
                ("exists", Value::Bool(exists)),
                ("diff", Value::String(file_diff.patch.clone())),
                ("filediff", filediff_json(&shown, &file_diff)),
            ]),
        ))
    }
}
