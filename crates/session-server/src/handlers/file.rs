//! The project's files as OpenCode 1.18's clients browse them: `GET /file` (a folder),
//! `/file/content`, `/file/status` (what git sees changed), `/find` (text), `/find/file`
//! (names, for `@` completion) and `/find/symbol` (no language server here: none).
//!
//! Every path is resolved as the file tools resolve them (symlinks and `..` followed) and
//! refused outside the worktree; walks respect `.gitignore` and never enter `.git`. What is
//! served is read through handles, so that a path swapped for a symlink between its check and its
//! read cannot lead outside the worktree: the folder of the path is opened one component at
//! a time without following a symlink, its file opened relative to that handle, and the checks
//! (a regular file, its size) made on the opened file; a walk's files are opened beneath the
//! worktree's handle. A folder flipped to a symlink after the resolution fails the request.

use std::io::Read as _;
use std::path::Path;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use session_runtime::files::{Opened, PinnedPath, Workspace};

use super::Shared;
use crate::error::ServerError;
use crate::extract::query;
use crate::state::AppState;

/// Files a search returns at most.
const FIND_LIMIT: usize = 200;
/// Bytes of a file `/file/content` reads at most.
const CONTENT_LIMIT: u64 = 8 * 1024 * 1024;

/// `?path=` of `/file` and `/file/content`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct PathQuery {
    path: Option<String>,
    #[serde(default)]
    #[expect(
        dead_code,
        reason = "accepted so that the SDK's requests parse; this server serves one project"
    )]
    directory: Option<String>,
}

/// Resolves `requested` as the file tools do and refuses it outside `worktree` or inside
/// `.git`; `field` names it in errors, and `malformed` makes the error of a path that cannot
/// be resolved. Returns the path with its folder opened by handle, and the path relative to the
/// worktree.
pub(crate) fn project_path(
    worktree: &Path,
    requested: &str,
    field: &str,
    malformed: fn(String) -> ServerError,
) -> Result<(PinnedPath, String), ServerError> {
    let workspace = Workspace::new(worktree).map_err(|e| ServerError::Internal(e.to_string()))?;
    let resolved = workspace.resolve(requested).map_err(|e| malformed(format!("{field}: {e}")))?;
    if !resolved.inside {
        return Err(ServerError::Forbidden(format!("{field}: {requested:?} is outside the project")));
    }
    let relative = workspace.relative(&resolved.path);
    if session_runtime::files::in_git_folder(Path::new(&relative)) {
        return Err(ServerError::Forbidden(format!("{field}: {requested:?} is inside .git")));
    }
    let pinned = PinnedPath::open(&workspace, resolved).map_err(|e| malformed(format!("{field}: {e}")))?;
    Ok((pinned, relative))
}

/// Resolves a `?path=` inside the worktree, or refuses it.
fn inside(state: &AppState, requested: &str) -> Result<(PinnedPath, String), ServerError> {
    project_path(state.runtime.worktree(), requested, "path", ServerError::query)
}

/// OpenCode's `FileNode`.
#[derive(Debug, Serialize)]
pub(crate) struct FileNode {
    name: String,
    path: String,
    absolute: String,
    #[serde(rename = "type")]
    kind: &'static str,
    ignored: bool,
}

/// `GET /file`: the entries of a folder, folders first, then by name.
pub(crate) async fn list(
    State(state): Shared,
    q: Result<Query<PathQuery>, QueryRejection>,
) -> Result<Json<Vec<FileNode>>, ServerError> {
    let q = query(q)?;
    let (folder, relative) = inside(&state, q.path.as_deref().unwrap_or(""))?;
    let root = state.runtime.worktree().to_path_buf();
    let nodes = tokio::task::spawn_blocking(move || list_folder(&root, &folder, &relative))
        .await
        .map_err(|e| ServerError::Internal(e.to_string()))??;
    Ok(Json(nodes))
}

fn list_folder(root: &Path, folder: &PinnedPath, relative: &str) -> Result<Vec<FileNode>, ServerError> {
    let dir = match folder.open_existing().map_err(|e| ServerError::query(format!("path: {e}")))? {
        Some(Opened::Folder(dir)) => dir,
        Some(Opened::File { .. }) => {
            return Err(ServerError::query(format!("path: {} is not a folder", folder.shown())));
        }
        None => return Err(ServerError::query(format!("path: {} does not exist", folder.shown()))),
    };
    let absolute = folder.resolved().path.clone();
    let entries = dir.entries().map_err(|e| ServerError::query(format!("path: {e}")))?;
    // The root's `.gitignore` marks entries as ignored (they are still listed, as OpenCode does).
    let matcher = {
        let mut builder = ignore::gitignore::GitignoreBuilder::new(root);
        if let Some(error) = builder.add(root.join(".gitignore")) {
            tracing::debug!(%error, "no usable .gitignore at the project root");
        }
        builder.build().ok()
    };
    let mut nodes: Vec<FileNode> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name() != ".git")
        .map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            let path = if relative.is_empty() { name.clone() } else { format!("{relative}/{name}") };
            let ignored =
                matcher.as_ref().is_some_and(|m| m.matched_path_or_any_parents(&path, is_dir).is_ignore());
            FileNode {
                absolute: absolute.join(&name).to_string_lossy().into_owned(),
                kind: if is_dir { "directory" } else { "file" },
                name,
                path,
                ignored,
            }
        })
        .collect();
    nodes.sort_by(|a, b| (a.kind != "directory", &a.name).cmp(&(b.kind != "directory", &b.name)));
    Ok(nodes)
}

/// OpenCode's `FileContent`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FileContent {
    #[serde(rename = "type")]
    kind: &'static str,
    content: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    encoding: Option<&'static str>,
}

/// `GET /file/content`: a text file as text, anything else as base64.
pub(crate) async fn content(
    State(state): Shared,
    q: Result<Query<PathQuery>, QueryRejection>,
) -> Result<Json<FileContent>, ServerError> {
    let q = query(q)?;
    let requested = q.path.ok_or_else(|| ServerError::query("path: missing"))?;
    let (path, _) = inside(&state, &requested)?;
    let bytes = tokio::task::spawn_blocking(move || read_content(&path, &requested))
        .await
        .map_err(|e| ServerError::Internal(e.to_string()))??;
    Ok(Json(match String::from_utf8(bytes) {
        Ok(text) if !text.contains('\0') => FileContent { kind: "text", content: text, encoding: None },
        Ok(text) => binary(text.into_bytes()),
        Err(error) => binary(error.into_bytes()),
    }))
}

/// The bytes of the regular file at `path`, opened relative to its folder's handle and checked
/// on the opened file.
fn read_content(path: &PinnedPath, requested: &str) -> Result<Vec<u8>, ServerError> {
    let opened = path.open_existing().map_err(|e| ServerError::query(format!("path: {e}")))?;
    let Some(Opened::File { file, metadata }) = opened else {
        return match opened {
            None => Err(ServerError::NotFound(format!("{requested}: no such file"))),
            Some(_) => Err(ServerError::query(format!("path: {requested:?} is not a file"))),
        };
    };
    if !metadata.is_file() {
        return Err(ServerError::query(format!("path: {requested:?} is not a file")));
    }
    if metadata.len() > CONTENT_LIMIT {
        return Err(ServerError::TooLarge(format!(
            "{requested}: {} bytes, over {CONTENT_LIMIT}",
            metadata.len()
        )));
    }
    let mut bytes = Vec::new();
    file.take(CONTENT_LIMIT)
        .read_to_end(&mut bytes)
        .map_err(|e| ServerError::Internal(format!("{requested}: {e}")))?;
    Ok(bytes)
}

fn binary(bytes: Vec<u8>) -> FileContent {
    FileContent {
        kind: "binary",
        content: base64::engine::general_purpose::STANDARD.encode(bytes),
        encoding: Some("base64"),
    }
}

/// `?query=` of `/find/file`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct FindFileQuery {
    query: Option<String>,
    #[serde(default)]
    dirs: Option<String>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    #[expect(
        dead_code,
        reason = "accepted so that the SDK's requests parse; this server serves one project"
    )]
    directory: Option<String>,
}

/// Whether every character of `needle` appears in `haystack` in order (case-insensitive).
fn subsequence(needle: &str, haystack: &str) -> bool {
    let mut chars = haystack.chars().flat_map(char::to_lowercase);
    needle.chars().flat_map(char::to_lowercase).all(|wanted| chars.any(|c| c == wanted))
}

/// `GET /find/file`: paths whose name matches the query (its letters in order), shortest
/// first.
pub(crate) async fn find_file(
    State(state): Shared,
    q: Result<Query<FindFileQuery>, QueryRejection>,
) -> Result<Json<Vec<String>>, ServerError> {
    let q = query(q)?;
    let needle = q.query.unwrap_or_default();
    let want_dirs = q.dirs.as_deref() == Some("true") || q.kind.as_deref() == Some("directory");
    let only_dirs = q.kind.as_deref() == Some("directory");
    let limit = q.limit.unwrap_or(FIND_LIMIT).clamp(1, FIND_LIMIT);
    let root = state.runtime.worktree().to_path_buf();
    let found = tokio::task::spawn_blocking(move || {
        let mut found: Vec<String> = Vec::new();
        for entry in session_runtime::files::walk_project(&root).flatten() {
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            if (is_dir && !want_dirs) || (!is_dir && only_dirs) || entry.depth() == 0 {
                continue;
            }
            let Ok(relative) = entry.path().strip_prefix(&root) else { continue };
            let mut path = relative.to_string_lossy().replace('\\', "/");
            if is_dir {
                path.push('/');
            }
            if subsequence(&needle, &path) {
                found.push(path);
            }
            if found.len() >= 20 * limit {
                break;
            }
        }
        found.sort_by_key(|p| (p.len(), p.clone()));
        found.truncate(limit);
        found
    })
    .await
    .map_err(|e| ServerError::Internal(e.to_string()))?;
    Ok(Json(found))
}

/// `GET /find/symbol`: this server runs no language server, so it knows no symbols.
pub(crate) async fn find_symbol(
    q: Result<Query<FindFileQuery>, QueryRejection>,
) -> Result<Json<Vec<serde_json::Value>>, ServerError> {
    query(q)?;
    Ok(Json(Vec::new()))
}

/// `?pattern=` of `/find`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct FindQuery {
    pattern: Option<String>,
    #[serde(default)]
    #[expect(
        dead_code,
        reason = "accepted so that the SDK's requests parse; this server serves one project"
    )]
    directory: Option<String>,
}

/// One match of `/find`, in ripgrep's JSON shape as OpenCode relays it.
#[derive(Debug, Serialize)]
pub(crate) struct TextMatch {
    path: Text,
    lines: Text,
    line_number: u64,
    absolute_offset: u64,
    submatches: Vec<Submatch>,
}

#[derive(Debug, Serialize)]
struct Text {
    text: String,
}

#[derive(Debug, Serialize)]
struct Submatch {
    #[serde(rename = "match")]
    matched: Text,
    start: usize,
    end: usize,
}

/// `GET /find`: lines matching the regular expression `pattern`, at most 200.
pub(crate) async fn find_text(
    State(state): Shared,
    q: Result<Query<FindQuery>, QueryRejection>,
) -> Result<Json<Vec<TextMatch>>, ServerError> {
    let q = query(q)?;
    let pattern =
        q.pattern.filter(|p| !p.is_empty()).ok_or_else(|| ServerError::query("pattern: missing"))?;
    let regex = regex::RegexBuilder::new(&pattern)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| ServerError::query(format!("pattern: {e}")))?;
    let root = state.runtime.worktree().to_path_buf();
    let found = tokio::task::spawn_blocking(move || {
        let mut found = Vec::new();
        // Each file is opened beneath the worktree's handle: a folder flipped to a symlink
        // during the walk cannot lead the search outside.
        let Ok(base) = cap_std::fs::Dir::open_ambient_dir(&root, cap_std::ambient_authority()) else {
            return found;
        };
        'files: for entry in session_runtime::files::walk_project(&root).flatten() {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Ok(relative) = entry.path().strip_prefix(&root) else { continue };
            let Some((file, meta)) = session_runtime::files::open_beneath(&base, relative) else { continue };
            if !meta.is_file() || meta.len() > CONTENT_LIMIT {
                continue;
            }
            let mut text = String::new();
            if file.take(CONTENT_LIMIT).read_to_string(&mut text).is_err() {
                continue;
            }
            let relative = relative.to_string_lossy().into_owned();
            let mut offset = 0u64;
            for (index, line) in text.split_inclusive('\n').enumerate() {
                let submatches: Vec<Submatch> = regex
                    .find_iter(line)
                    .map(|m| Submatch {
                        matched: Text { text: m.as_str().to_owned() },
                        start: m.start(),
                        end: m.end(),
                    })
                    .collect();
                if !submatches.is_empty() {
                    found.push(TextMatch {
                        path: Text { text: relative.clone() },
                        lines: Text { text: line.to_owned() },
                        line_number: index as u64 + 1,
                        absolute_offset: offset,
                        submatches,
                    });
                    if found.len() >= FIND_LIMIT {
                        break 'files;
                    }
                }
                offset += line.len() as u64;
            }
        }
        found
    })
    .await
    .map_err(|e| ServerError::Internal(e.to_string()))?;
    Ok(Json(found))
}

/// OpenCode's `File` (a changed file, as git sees it).
#[derive(Debug, Serialize)]
pub(crate) struct ChangedFile {
    path: String,
    added: u64,
    removed: u64,
    status: &'static str,
}

/// `GET /file/status`: the files git sees changed against `HEAD`, with their line counts
/// (empty outside a git repository).
///
/// Read in process through libgit2 ([`session_runtime::git::changed_files`]), never by the
/// `git` binary: the repository is the model's to write, and `git status` would run the
/// fsmonitor, filter drivers and hooks its config (or a nested repository's) names.
pub(crate) async fn status(
    State(state): Shared,
    q: Result<Query<PathQuery>, QueryRejection>,
) -> Result<Json<Vec<ChangedFile>>, ServerError> {
    query(q)?;
    let root = state.runtime.worktree().to_path_buf();
    let changed = tokio::task::spawn_blocking(move || session_runtime::git::changed_files(&root))
        .await
        .map_err(|e| ServerError::Internal(e.to_string()))?
        .map_err(|e| ServerError::Internal(format!("the changed files could not be read: {e}")))?;
    let files = changed
        .into_iter()
        .map(|file| ChangedFile {
            path: file.path,
            added: file.added,
            removed: file.removed,
            status: match file.status {
                session_core::FileStatus::Added => "added",
                session_core::FileStatus::Deleted => "deleted",
                session_core::FileStatus::Modified => "modified",
            },
        })
        .collect();
    Ok(Json(files))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_matches_when_its_letters_appear_in_order() {
        assert!(subsequence("srcmain", "src/main.rs"));
        assert!(subsequence("MAIN", "src/main.rs"));
        assert!(subsequence("", "anything"));
        assert!(!subsequence("mainx", "src/main.rs"));
        assert!(!subsequence("nm", "main"));
    }
}
