//! `list`: a directory tree (files only, folders derived), respecting `.gitignore` and the
//! usual build folders, capped with a notice.

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::search::{RESULT_LIMIT, collect, overrides, walker};
use super::{blocking, object};
use crate::context::{PathKind, ToolContext};
use crate::error::ToolError;
use crate::tool::{ToolSuccess, TypedTool};

const NAME: &str = "list";

/// Folders `list` leaves out (OpenCode's list).
const IGNORE_PATTERNS: [&str; 23] = [
    "node_modules/",
    "__pycache__/",
    ".git/",
    "dist/",
    "build/",
    "target/",
    "vendor/",
    "bin/",
    "obj/",
    ".idea/",
    ".vscode/",
    ".zig-cache/",
    "zig-out",
    ".coverage",
    "coverage/",
    "tmp/",
    "temp/",
    ".cache/",
    "cache/",
    "logs/",
    ".venv/",
    "venv/",
    "env/",
];

const DESCRIPTION: &str = "Lists files and directories in a given path as a tree. The path may be absolute or \
relative to the workspace root (default: the root). Files ignored by .gitignore and common build and dependency \
folders are skipped; add glob patterns to ignore with the ignore parameter. At most 100 files are listed. \
Prefer the glob and grep tools when you know what you are looking for.";

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct ListArgs {
    /// The absolute path to the directory to list (must be absolute, not relative)
    path: Option<String>,
    /// List of glob patterns to ignore
    ignore: Option<Vec<String>>,
}

/// The `list` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct ListTool;

fn render(
    dir: &str,
    depth: usize,
    dirs: &BTreeSet<String>,
    files: &BTreeMap<String, Vec<String>>,
    out: &mut String,
) {
    if depth > 0 {
        let name = dir.rsplit('/').next().unwrap_or(dir);
        out.push_str(&format!("{}{name}/\n", "  ".repeat(depth)));
    }
    for child in dirs.iter().filter(|d| parent_of(d) == Some(dir)) {
        render(child, depth + 1, dirs, files, out);
    }
    if let Some(names) = files.get(dir) {
        for name in names {
            out.push_str(&format!("{}{name}\n", "  ".repeat(depth + 1)));
        }
    }
}

fn parent_of(dir: &str) -> Option<&str> {
    if dir == "." {
        return None;
    }
    Some(dir.rsplit_once('/').map_or(".", |(parent, _)| parent))
}

#[async_trait]
impl TypedTool for ListTool {
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Input = ListArgs;

    async fn run(&self, args: ListArgs, ctx: &ToolContext) -> Result<ToolSuccess, ToolError> {
        let resolved = ctx.resolve_path(args.path.as_deref().unwrap_or(""), PathKind::Directory).await?;
        let search = resolved.path.clone();
        let shown = search.to_string_lossy().into_owned();
        ctx.ask_for(
            NAME,
            vec![shown.clone()],
            vec!["*".into()],
            object([("path", Value::String(shown.clone()))]),
        )
        .await?;
        if !search.is_dir() {
            return Err(ToolError::invalid(format!("Not a directory: {shown}")));
        }
        let title = resolved.display(ctx.workspace());
        let cancel = ctx.abort().clone();
        let mut globs: Vec<String> = IGNORE_PATTERNS.iter().map(|p| format!("!{p}")).collect();
        globs.extend(args.ignore.unwrap_or_default().into_iter().map(|p| format!("!{p}")));
        blocking(move || {
            let overrides = overrides(&search, &globs)?;
            let builder = walker(&search, Some(overrides));
            let (mut files, truncated) = collect(&builder, RESULT_LIMIT, &cancel, || {
                let search = search.clone();
                move |entry: &ignore::DirEntry| {
                    let relative = entry.path().strip_prefix(&search).unwrap_or(entry.path());
                    vec![relative.to_string_lossy().replace('\\', "/")]
                }
            });
            files.sort();
            let mut dirs = BTreeSet::from([".".to_owned()]);
            let mut by_dir: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for file in &files {
                let (dir, name) = file.rsplit_once('/').map_or((".", file.as_str()), |(d, n)| (d, n));
                let mut prefix = String::new();
                for part in dir.split('/').filter(|p| *p != ".") {
                    if !prefix.is_empty() {
                        prefix.push('/');
                    }
                    prefix.push_str(part);
                    dirs.insert(prefix.clone());
                }
                by_dir.entry(dir.to_owned()).or_default().push(name.to_owned());
            }
            let mut output = format!("{}/\n", shown.trim_end_matches('/'));
            render(".", 0, &dirs, &by_dir, &mut output);
            if truncated {
                output.push_str(&format!(
                    "\n(Results are truncated: showing first {RESULT_LIMIT} files. Use a more specific path.)\n"
                ));
            }
            Ok(ToolSuccess::new(
                title,
                output,
                object([("count", Value::from(files.len())), ("truncated", Value::Bool(truncated))]),
            ))
        })
        .await
    }
}
