//! `glob`: files matching a glob pattern, newest first, capped with a notice.

use std::time::UNIX_EPOCH;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::search::{RESULT_LIMIT, collect, overrides, walker};
use super::{blocking, object};
use crate::context::{PathKind, ToolContext};
use crate::error::ToolError;
use crate::tool::{ToolSuccess, TypedTool};

const NAME: &str = "glob";

const DESCRIPTION: &str = "Fast file pattern matching that works with any codebase size. Supports glob patterns \
like \"**/*.js\" or \"src/**/*.ts\" and returns matching file paths sorted by modification time, newest first. \
Files ignored by .gitignore are skipped. At most 100 paths are returned.";

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct GlobArgs {
    /// The glob pattern to match files against
    pattern: String,
    /// The directory to search in. If not specified, the current working directory will be used. IMPORTANT: Omit this field to use the default directory. DO NOT enter "undefined" or "null" - simply omit it for the default behavior. Must be a valid directory path if provided.
    path: Option<String>,
}

/// The `glob` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct GlobTool;

#[async_trait]
impl TypedTool for GlobTool {
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Input = GlobArgs;

    async fn run(&self, args: GlobArgs, ctx: &ToolContext) -> Result<ToolSuccess, ToolError> {
        let resolved = ctx.resolve_path(args.path.as_deref().unwrap_or(""), PathKind::Directory).await?;
        ctx.ask_for(
            NAME,
            vec![args.pattern.clone()],
            vec!["*".into()],
            object([
                ("pattern", Value::String(args.pattern.clone())),
                ("path", Value::String(resolved.path.to_string_lossy().into_owned())),
            ]),
        )
        .await?;
        let search = resolved.path.clone();
        if !search.is_dir() {
            return Err(ToolError::invalid(format!("Not a directory: {}", search.display())));
        }
        // OpenCode's title is the folder relative to the worktree: empty for the worktree itself.
        let title = match resolved.display(ctx.workspace()) {
            shown if shown == "." => String::new(),
            shown => shown,
        };
        let cancel = ctx.abort().clone();
        let pattern = args.pattern;
        blocking(move || {
            let overrides = overrides(&search, &[pattern])?;
            let builder = walker(&search, Some(overrides));
            let (mut files, truncated) = collect(&builder, RESULT_LIMIT, &cancel, || {
                |entry: &ignore::DirEntry| {
                    let mtime = entry
                        .metadata()
                        .ok()
                        .and_then(|m| m.modified().ok())
                        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                        .map_or(0, |d| d.as_millis());
                    vec![(entry.path().to_path_buf(), mtime)]
                }
            });
            files.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            let mut lines: Vec<String> = files.iter().map(|(path, _)| path.to_string_lossy().into_owned()).collect();
            if lines.is_empty() {
                lines.push("No files found".into());
            } else if truncated {
                lines.push(String::new());
                lines.push(format!(
                    "(Results are truncated: showing first {RESULT_LIMIT} results. Consider using a more specific path or pattern.)"
                ));
            }
            Ok(ToolSuccess::new(
                title,
                lines.join("\n"),
                object([("count", Value::from(files.len())), ("truncated", Value::Bool(truncated))]),
            ))
        })
        .await
    }
}
