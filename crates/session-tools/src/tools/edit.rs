//! `edit`: exact string replacement in a file, a unique match required unless `replaceAll`,
//! with a unified diff in the metadata.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use session_core::JsonObject;
use session_core::two_files_patch;
use similar::{ChangeTag, TextDiff};

use super::files::{old_text, pin_for_write};
use super::{blocking, object};
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::tool::{ToolSuccess, TypedTool};

const NAME: &str = "edit";

const DESCRIPTION: &str = "Performs exact string replacements in a file. oldString must match the file's text \
exactly, including whitespace and indentation, and must occur exactly once unless replaceAll is true. An empty \
oldString creates the file with newString as its content. The filePath may be absolute or relative to the \
workspace root.";

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EditArgs {
    /// The absolute path to the file to modify
    file_path: String,
    /// The text to replace
    old_string: String,
    /// The text to replace it with (must be different from oldString)
    new_string: String,
    /// Replace all occurrences of oldString (default false)
    replace_all: Option<bool>,
}

/// The `edit` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct EditTool;

/// A unified diff between two texts and its line counts.
pub(crate) struct FileDiff {
    pub(crate) patch: String,
    pub(crate) additions: usize,
    pub(crate) deletions: usize,
}

/// The diff of `old` to `new` as OpenCode's `edit` writes it: `createTwoFilesPatch` text under
/// the absolute path, no header after the names.
pub(crate) fn diff(path: &str, old: &str, new: &str) -> FileDiff {
    let patch = two_files_patch(path, old, new, None);
    let diff = TextDiff::from_lines(old, new);
    let (mut additions, mut deletions) = (0, 0);
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Insert => additions += 1,
            ChangeTag::Delete => deletions += 1,
            ChangeTag::Equal => {}
        }
    }
    FileDiff { patch, additions, deletions }
}

pub(crate) fn filediff_json(path: &str, diff: &FileDiff) -> Value {
    Value::Object(object([
        ("file", Value::String(path.to_owned())),
        ("patch", Value::String(diff.patch.clone())),
        ("additions", Value::from(diff.additions)),
        ("deletions", Value::from(diff.deletions)),
    ]))
}

/// Replaces `old` in `content`: exactly one occurrence, or all of them with `all`.
fn replace(content: &str, old: &str, new: &str, all: bool) -> Result<String, ToolError> {
    let count = content.matches(old).count();
    match count {
        0 => Err(ToolError::EditNotFound),
        1 => Ok(content.replacen(old, new, 1)),
        _ if all => Ok(content.replace(old, new)),
        _ => Err(ToolError::EditNotUnique { count }),
    }
}

#[async_trait]
impl TypedTool for EditTool {
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Input = EditArgs;

    async fn run(&self, args: EditArgs, ctx: &ToolContext) -> Result<ToolSuccess, ToolError> {
        if args.old_string == args.new_string {
            return Err(ToolError::EditNoChange);
        }
        let pinned = pin_for_write(ctx, &args.file_path).await?;
        let shown = pinned.shown();
        let relative = pinned.resolved().display(ctx.workspace());
        let (pinned, old) = blocking(move || {
            let old = old_text(&pinned, true)?;
            Ok((pinned, old))
        })
        .await?;
        let (old_content, new_content) = if args.old_string.is_empty() {
            (old.unwrap_or_default(), args.new_string.clone())
        } else {
            let Some(old) = old else {
                return Err(ToolError::NotFound { path: shown, suggestions: Vec::new() });
            };
            // Match line endings the way the file has them.
            let crlf = old.contains("\r\n");
            let convert = |text: &str| {
                let normalized = text.replace("\r\n", "\n");
                if crlf { normalized.replace('\n', "\r\n") } else { normalized }
            };
            let new = replace(
                &old,
                &convert(&args.old_string),
                &convert(&args.new_string),
                args.replace_all == Some(true),
            )?;
            (old, new)
        };
        let file_diff = diff(&shown, &old_content.replace("\r\n", "\n"), &new_content.replace("\r\n", "\n"));
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
        blocking(move || pinned.replace(new_content.as_bytes())).await?;
        // OpenCode's keys in its order; `truncated` is what its tool wrapper adds to a short
        // output it did not cut.
        let metadata = object([
            ("diagnostics", Value::Object(JsonObject::new())),
            ("diff", Value::String(file_diff.patch.clone())),
            ("filediff", filediff_json(&shown, &file_diff)),
            ("truncated", Value::Bool(false)),
        ]);
        ctx.metadata(None, Some(metadata.clone()));
        Ok(ToolSuccess::new(relative, "Edit applied successfully.", metadata))
    }
}
