//! `grep`: a regex over file contents, in-process, respecting `.gitignore`, capped with a
//! notice.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::read::MAX_LINE_LENGTH;
use super::search::{RESULT_LIMIT, collect, overrides, walker};
use super::{blocking, cut_chars, object};
use crate::context::{PathKind, ToolContext};
use crate::error::ToolError;
use crate::pinned::{Opened, PinnedPath, open_beneath};
use crate::tool::{ToolSuccess, TypedTool};

const NAME: &str = "grep";

const DESCRIPTION: &str = "Fast content search that works with any codebase size. Searches file contents with a \
regular expression (full regex syntax, e.g. \"log.*Error\", \"function\\s+\\w+\") and returns matching lines \
with their file paths and line numbers. Filter files with include (e.g. \"*.js\", \"*.{ts,tsx}\"). Files \
ignored by .gitignore and binary files are skipped. At most 100 matches are returned.";

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct GrepArgs {
    /// The regex pattern to search for in file contents
    pattern: String,
    /// The directory to search in. Defaults to the current working directory.
    path: Option<String>,
    /// File pattern to include in the search (e.g. "*.js", "*.{ts,tsx}")
    include: Option<String>,
}

/// The `grep` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct GrepTool;

struct Hit {
    path: PathBuf,
    line: u64,
    text: String,
}

fn searcher() -> Searcher {
    SearcherBuilder::new().line_number(true).binary_detection(BinaryDetection::quit(b'\x00')).build()
}

/// Searches one opened file; stops after `limit` hits.
fn search_file(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    file: &std::fs::File,
    shown: &Path,
    limit: usize,
) -> Vec<Hit> {
    let mut hits = Vec::new();
    let sink = Lossy(|line, text: &str| {
        // The line keeps its own line break, as ripgrep's JSON hands it to OpenCode: its output
        // then shows a blank line after each match line that ended in one.
        let (head, long) = cut_chars(text, MAX_LINE_LENGTH);
        let text = if long { format!("{head}...") } else { head.to_owned() };
        hits.push(Hit { path: shown.to_path_buf(), line, text });
        Ok(hits.len() <= limit)
    });
    // Unreadable files are skipped, as ripgrep skips them.
    let _ = searcher.search_file(matcher, file, sink);
    hits
}

#[async_trait]
impl TypedTool for GrepTool {
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Input = GrepArgs;

    async fn run(&self, args: GrepArgs, ctx: &ToolContext) -> Result<ToolSuccess, ToolError> {
        if args.pattern.is_empty() {
            return Err(ToolError::invalid("pattern is required"));
        }
        ctx.ask_for(
            NAME,
            vec![args.pattern.clone()],
            vec!["*".into()],
            object([
                ("pattern", Value::String(args.pattern.clone())),
                ("path", args.path.clone().map_or(Value::Null, Value::String)),
                ("include", args.include.clone().map_or(Value::Null, Value::String)),
            ]),
        )
        .await?;
        let requested = ctx.workspace().resolve(args.path.as_deref().unwrap_or(""))?;
        let pinned = PinnedPath::open(ctx.workspace(), requested)?;
        let not_found = || {
            ToolError::invalid(format!(
                "Search path not found: {}",
                args.path.as_deref().unwrap_or(&ctx.root().to_string_lossy())
            ))
        };
        // Everything below is read through handles: the file itself, or each walked file opened
        // beneath the searched folder's handle (or the root's, inside the workspace).
        let opened = pinned.open_existing()?.ok_or_else(not_found)?;
        let search = pinned.resolved().path.clone();
        let kind = if matches!(opened, Opened::Folder(_)) { PathKind::Directory } else { PathKind::File };
        ctx.check_external(&search, kind).await?;
        let matcher = RegexMatcherBuilder::new().line_terminator(Some(b'\n')).build(&args.pattern).map_err(
            |error| ToolError::invalid(format!("Invalid regex pattern {:?}: {error}", args.pattern)),
        )?;
        // A walk's files are opened beneath the root's handle inside the workspace (a symlink
        // may lead elsewhere inside it), beneath the searched folder's handle outside it.
        let (base, base_path) = if pinned.resolved().inside {
            let root = ctx.root().to_path_buf();
            let dir = cap_std::fs::Dir::open_ambient_dir(&root, cap_std::ambient_authority())
                .map_err(|e| ToolError::io("open", root.to_string_lossy().as_ref(), e))?;
            (dir, root)
        } else {
            let dir = match &opened {
                Opened::Folder(dir) => dir,
                Opened::File { .. } => pinned.folder().dir(),
            };
            (dir.try_clone().map_err(|e| ToolError::io("open", pinned.shown(), e))?, search.clone())
        };
        let cancel = ctx.abort().clone();
        let pattern = args.pattern.clone();
        let include = args.include;
        let (mut hits, truncated) = blocking(move || {
            if let Opened::File { file, metadata } = &opened {
                if !metadata.is_file() {
                    return Ok((Vec::new(), false));
                }
                let mut hits = search_file(&mut searcher(), &matcher, file, &search, RESULT_LIMIT + 1);
                let truncated = hits.len() > RESULT_LIMIT;
                hits.truncate(RESULT_LIMIT);
                return Ok((hits, truncated));
            }
            let overrides = include.map(|glob| overrides(&search, &[glob])).transpose()?;
            let builder = walker(&search, overrides);
            let base = &base;
            let base_path = &base_path;
            Ok(collect(&builder, RESULT_LIMIT, &cancel, || {
                let mut searcher = searcher();
                let matcher = matcher.clone();
                move |entry: &ignore::DirEntry| {
                    // Opened beneath the handle: a symlink (or a folder swapped for one during
                    // the walk) cannot lead the search outside.
                    let Ok(relative) = entry.path().strip_prefix(base_path) else { return Vec::new() };
                    match open_beneath(base, relative) {
                        Some((file, metadata)) if metadata.is_file() => {
                            search_file(&mut searcher, &matcher, &file, entry.path(), RESULT_LIMIT + 1)
                        }
                        _ => Vec::new(),
                    }
                }
            }))
        })
        .await?;
        if hits.is_empty() {
            return Ok(ToolSuccess::new(
                pattern,
                "No files found",
                object([("matches", Value::from(0)), ("truncated", Value::Bool(false))]),
            ));
        }
        hits.sort_by(|a, b| a.path.cmp(&b.path).then(a.line.cmp(&b.line)));
        let mut output = vec![format!(
            "Found {} matches{}",
            hits.len(),
            if truncated { " (more matches available)" } else { "" }
        )];
        let mut current: Option<&Path> = None;
        for hit in &hits {
            if current != Some(hit.path.as_path()) {
                if current.is_some() {
                    output.push(String::new());
                }
                current = Some(hit.path.as_path());
                output.push(format!("{}:", hit.path.display()));
            }
            output.push(format!("  Line {}: {}", hit.line, hit.text));
        }
        if truncated {
            output.push(String::new());
            output.push("(Results truncated. Consider using a more specific path or pattern.)".into());
        }
        Ok(ToolSuccess::new(
            pattern,
            output.join("\n"),
            object([("matches", Value::from(hits.len())), ("truncated", Value::Bool(truncated))]),
        ))
    }
}
