//! The directory walk shared by `glob` and `grep`: in-process, parallel, respecting
//! `.gitignore` (also outside git repositories), never following symlinks into folders.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use ignore::overrides::{Override, OverrideBuilder};
use ignore::{DirEntry, WalkBuilder, WalkState};
use tokio_util::sync::CancellationToken;

use crate::error::ToolError;

/// How many results `glob` and `grep` return before they say the rest was cut.
pub const RESULT_LIMIT: usize = 100;

/// A walker over `root` with the standard filters: `.gitignore`, `.ignore` and
/// `.git/info/exclude` respected, hidden files included, `.git` skipped, links not followed.
/// The global git excludes are not read (they live under the user's configuration).
pub(crate) fn walker(root: &Path, overrides: Option<Override>) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(false)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .ignore(true)
        .parents(true)
        .require_git(false)
        .follow_links(false)
        .threads(walk_threads())
        .filter_entry(|entry| entry.file_name() != ".git");
    if let Some(overrides) = overrides {
        builder.overrides(overrides);
    }
    builder
}

/// Threads of a parallel walk: what `ignore` picks by itself (the machine's parallelism, at
/// most 12), read once per process. Left to itself, `ignore` asks at every walk, and on Linux
/// that reads the cgroup files (a share of each `glob` and `grep` call).
fn walk_threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()).min(12))
}

/// Every entry under `root` with the standard filters of `walker`, one after another: for
/// callers outside the tools (a server's file search) that want the same view of the project.
pub fn walk_project(root: &Path) -> ignore::Walk {
    walker(root, None).build()
}

/// Overrides from globs (a leading `!` excludes), matched as ripgrep's `--glob` is.
pub(crate) fn overrides(root: &Path, globs: &[String]) -> Result<Override, ToolError> {
    let mut builder = OverrideBuilder::new(root);
    for glob in globs {
        builder
            .add(glob)
            .map_err(|error| ToolError::invalid(format!("Invalid glob pattern {glob:?}: {error}")))?;
    }
    builder.build().map_err(|error| ToolError::invalid(format!("Invalid glob patterns: {error}")))
}

/// Walks in parallel and collects what `make_visitor`'s visitors return for each file (and
/// each symlink, which is not followed), stopping once more than `limit` items were found or
/// `cancel` fired. Returns the items (at most `limit`, in no particular order) and whether
/// more were found.
pub(crate) fn collect<T, F, V>(
    builder: &WalkBuilder,
    limit: usize,
    cancel: &CancellationToken,
    make_visitor: F,
) -> (Vec<T>, bool)
where
    T: Send,
    F: Fn() -> V + Sync,
    V: FnMut(&DirEntry) -> Vec<T> + Send,
{
    let found: Mutex<Vec<T>> = Mutex::new(Vec::new());
    let truncated = AtomicBool::new(false);
    builder.build_parallel().run(|| {
        let mut visit = make_visitor();
        let found = &found;
        let truncated = &truncated;
        Box::new(move |entry| {
            if truncated.load(Ordering::Relaxed) || cancel.is_cancelled() {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else { return WalkState::Continue };
            let is_candidate = entry.file_type().is_some_and(|kind| kind.is_file() || kind.is_symlink());
            if !is_candidate {
                return WalkState::Continue;
            }
            let items = visit(&entry);
            if items.is_empty() {
                return WalkState::Continue;
            }
            let mut found = found.lock().unwrap_or_else(PoisonError::into_inner);
            for item in items {
                if found.len() >= limit {
                    truncated.store(true, Ordering::Relaxed);
                    return WalkState::Quit;
                }
                found.push(item);
            }
            WalkState::Continue
        })
    });
    let items = found.into_inner().unwrap_or_else(PoisonError::into_inner);
    (items, truncated.into_inner())
}
