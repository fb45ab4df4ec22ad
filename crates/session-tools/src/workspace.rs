//! Confinement of the file tools: every path resolves against the workspace root, symlinks
//! and `..` followed the way the kernel follows them, and the result is inside or not. The
//! resolution is of path strings: it gives the permission patterns and what is shown. Where the
//! bytes are read or written is decided by [`crate::PinnedPath`], which opens the resolved path's
//! folder by handle, so a component swapped after the resolution cannot redirect it.

use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::error::ToolError;

/// How many symlinks one resolution follows before giving up (as Linux's `MAXSYMLINKS`).
const MAX_SYMLINK_HOPS: usize = 40;

/// The folder the file tools work in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    root: PathBuf,
    home: Option<PathBuf>,
}

/// A path resolved for a tool: symlinks and `..` followed, absolute, and placed inside or
/// outside the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    /// The path as the model gave it.
    pub requested: String,
    /// The real absolute path the tool operates on.
    pub path: PathBuf,
    /// True when `path` lies inside the workspace root.
    pub inside: bool,
}

impl ResolvedPath {
    /// The path relative to the workspace root, with `/` separators (the absolute path when it
    /// is outside).
    pub fn display(&self, workspace: &Workspace) -> String {
        workspace.relative(&self.path)
    }
}

impl Workspace {
    /// A workspace rooted at `root`, which must be an existing directory; it is canonicalized.
    pub fn new(root: impl AsRef<Path>) -> Result<Self, ToolError> {
        let root = root.as_ref();
        let label = root.display().to_string();
        let canonical =
            std::fs::canonicalize(root).map_err(|e| ToolError::io("open workspace", &label, e))?;
        if !canonical.is_dir() {
            return Err(ToolError::InvalidPath {
                path: label,
                reason: "the workspace root is not a directory".into(),
            });
        }
        Ok(Self { root: canonical, home: None })
    }

    /// Sets the home folder that a leading `~` stands for; without one, `~` paths are refused.
    pub fn with_home(mut self, home: impl Into<PathBuf>) -> Self {
        self.home = Some(home.into());
        self
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// True when `path` (already resolved) lies inside the root.
    pub fn contains(&self, path: &Path) -> bool {
        path.starts_with(&self.root)
    }

    /// `path` relative to the root with `/` separators, or the whole path when outside.
    pub fn relative(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rest) if rest.as_os_str().is_empty() => ".".to_owned(),
            Ok(rest) => rest.to_string_lossy().replace('\\', "/"),
            Err(_) => path.to_string_lossy().into_owned(),
        }
    }

    /// Resolves a path given by the model: relative paths against the root, `~` against the
    /// home folder, then every symlink and `..` followed as the kernel would (components that
    /// do not exist yet are taken as they are).
    pub fn resolve(&self, requested: &str) -> Result<ResolvedPath, ToolError> {
        let invalid =
            |reason: &str| ToolError::InvalidPath { path: requested.to_owned(), reason: reason.into() };
        if requested.contains('\0') {
            return Err(invalid("it contains a NUL byte"));
        }
        let joined = if requested.is_empty() {
            self.root.clone()
        } else if requested == "~" || requested.starts_with("~/") {
            let home = self.home.as_ref().ok_or_else(|| invalid("no home folder is known for ~"))?;
            home.join(requested.trim_start_matches('~').trim_start_matches('/'))
        } else if requested.starts_with('~') {
            return Err(invalid("~user paths are not supported"));
        } else {
            let given = Path::new(requested);
            if given.is_absolute() { given.to_path_buf() } else { self.root.join(given) }
        };
        let path = real_path(&joined).map_err(|e| ToolError::io("resolve", requested, e))?;
        let inside = self.contains(&path);
        Ok(ResolvedPath { requested: requested.to_owned(), path, inside })
    }
}

/// Like `realpath`, but a missing tail is kept as written (lexically normalized): the kernel
/// would fail on it, so it cannot hide a symlink.
fn real_path(path: &Path) -> io::Result<PathBuf> {
    let mut pending: Vec<OsString> = Vec::new();
    push_components(&mut pending, path);
    let mut current = PathBuf::from("/");
    let mut exists = true;
    let mut hops = 0usize;
    while let Some(name) = pending.pop() {
        if name == "." || name.is_empty() {
            continue;
        }
        if name == ".." {
            current.pop();
            // Back over a missing part: the prefix may exist again (and then be checked again).
            exists = std::fs::symlink_metadata(&current).is_ok();
            continue;
        }
        let next = current.join(&name);
        if !exists {
            current = next;
            continue;
        }
        match std::fs::symlink_metadata(&next) {
            Ok(meta) if meta.file_type().is_symlink() => {
                hops += 1;
                if hops > MAX_SYMLINK_HOPS {
                    return Err(io::Error::other("too many levels of symbolic links"));
                }
                let target = std::fs::read_link(&next)?;
                if target.is_absolute() {
                    current = PathBuf::from("/");
                }
                push_components(&mut pending, &target);
            }
            Ok(_) => current = next,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                exists = false;
                current = next;
            }
            Err(error) if error.kind() == io::ErrorKind::NotADirectory => {
                exists = false;
                current = next;
            }
            Err(error) => return Err(error),
        }
    }
    Ok(current)
}

/// Pushes the components of `path` so that the first one is popped first.
fn push_components(stack: &mut Vec<OsString>, path: &Path) {
    let names: Vec<OsString> = path
        .components()
        .filter_map(|component| match component {
            Component::Normal(name) => Some(name.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => None,
        })
        .collect();
    stack.extend(names.into_iter().rev());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_dot_after_a_missing_part_rechecks_existence() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(root.join("real")).unwrap();
        let resolved = real_path(&root.join("missing/../real/x")).unwrap();
        assert_eq!(resolved, root.join("real/x"));
    }
}
