//! Paths the tools act on, opened by handle: a path is resolved as a string once
//! (for the permission patterns and what is shown), then its folder is opened one component at
//! a time without following a symlink, from the workspace root's handle when it lies inside and
//! from `/` otherwise. Everything after that — the `external_directory` ask, the checks (a
//! regular file, its size), the read, the write — works on that folder handle, so a component
//! swapped for a symlink after the resolution makes the open fail instead of redirecting it.
//! Writes go to a temporary file in the folder handle, renamed over the final name within it.

use std::ffi::{OsStr, OsString};
use std::io::{self, Write as _};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use cap_fs_ext::{DirExt as _, FollowSymlinks, OpenOptionsFollowExt as _};
use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions};

use crate::error::ToolError;
use crate::workspace::{ResolvedPath, Workspace};

/// A folder opened by handle, and the names below it that do not exist yet.
#[derive(Debug)]
pub struct PinnedFolder {
    dir: Dir,
    /// The real location of `dir`.
    opened: PathBuf,
    /// Folders missing below `opened`, outermost first (created by [`PinnedPath::replace`]).
    missing: Vec<OsString>,
}

/// What a pinned path holds when it exists: a regular file or anything else opened without
/// blocking (checked on the handle), or a folder.
#[derive(Debug)]
pub enum Opened {
    /// A file (possibly a FIFO, socket or device: check `metadata`), opened read-only and
    /// non-blocking.
    File {
        /// The open file.
        file: std::fs::File,
        /// Its metadata, from the handle.
        metadata: std::fs::Metadata,
    },
    /// A folder.
    Folder(Dir),
}

/// A path resolved by [`Workspace::resolve`] whose folder is held open by handle.
#[derive(Debug)]
pub struct PinnedPath {
    resolved: ResolvedPath,
    folder: PinnedFolder,
    /// The final component; `None` for `/` itself.
    name: Option<OsString>,
}

/// The error for a path whose components changed between its resolution and its opening.
fn changed(shown: &str) -> ToolError {
    ToolError::Failed {
        message: format!(
            "{shown} changed while it was being opened (a symlink appeared where a folder or file was); \
             nothing was read or written"
        ),
    }
}

/// True when `error` is what opening a symlink without following it gives.
fn is_symlink_refusal(error: &io::Error) -> bool {
    matches!(error.raw_os_error(), Some(code) if code == nix::libc::ELOOP || code == nix::libc::EMLINK)
}

impl PinnedFolder {
    /// Opens the folder at the real path `real` (as [`Workspace::resolve`] returns it: no
    /// symlink and no `..` on the way) without following a symlink anywhere: from the
    /// workspace root's handle when it lies inside the root, from `/` otherwise. Names that do
    /// not exist are kept as missing; a component that is a symlink or a file fails.
    pub fn open(workspace: &Workspace, real: &Path) -> Result<Self, ToolError> {
        let shown = real.to_string_lossy().into_owned();
        let io_error = |e| ToolError::io("open", &shown, e);
        let (start, rest) = match real.strip_prefix(workspace.root()) {
            Ok(rest) => (workspace.root(), rest),
            Err(_) => (Path::new("/"), real.strip_prefix("/").unwrap_or(real)),
        };
        let mut dir = Dir::open_ambient_dir(start, ambient_authority()).map_err(io_error)?;
        let mut opened = start.to_path_buf();
        let mut missing = Vec::new();
        for component in rest.components() {
            let name = match component {
                Component::Normal(name) => name,
                Component::CurDir => continue,
                Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                    return Err(ToolError::InvalidPath {
                        path: shown,
                        reason: "it is not a resolved path".into(),
                    });
                }
            };
            if !missing.is_empty() {
                missing.push(name.to_os_string());
                continue;
            }
            match dir.open_dir_nofollow(name) {
                Ok(child) => {
                    dir = child;
                    opened.push(name);
                }
                Err(error) if error.kind() == io::ErrorKind::NotFound => missing.push(name.to_os_string()),
                Err(error) if is_symlink_refusal(&error) => return Err(changed(&shown)),
                Err(error) if error.raw_os_error() == Some(nix::libc::ENOTDIR) => {
                    // A symlink to a file also gives ENOTDIR with O_DIRECTORY | O_NOFOLLOW.
                    let link = dir.symlink_metadata(name).is_ok_and(|meta| meta.file_type().is_symlink());
                    return Err(if link { changed(&shown) } else { io_error(error) });
                }
                Err(error) => return Err(io_error(error)),
            }
        }
        Ok(Self { dir, opened, missing })
    }

    /// True when every folder of the path exists.
    pub fn exists(&self) -> bool {
        self.missing.is_empty()
    }

    /// The folder handle (only meaningful when [`PinnedFolder::exists`]).
    pub fn dir(&self) -> &Dir {
        &self.dir
    }

    /// Creates the missing folders below the opened one, each relative to its parent's handle.
    fn create_missing(&mut self, shown: &str) -> Result<(), ToolError> {
        for name in std::mem::take(&mut self.missing) {
            match self.dir.create_dir(&name) {
                Ok(()) => {}
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
                Err(error) => return Err(ToolError::io("create directory", shown, error)),
            }
            self.dir = self.dir.open_dir_nofollow(&name).map_err(|error| {
                if is_symlink_refusal(&error) || error.raw_os_error() == Some(nix::libc::ENOTDIR) {
                    changed(shown)
                } else {
                    ToolError::io("create directory", shown, error)
                }
            })?;
            self.opened.push(name);
        }
        Ok(())
    }
}

/// Tells temporary files of one process apart.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl PinnedPath {
    /// Opens the folder holding `resolved` by handle (see [`PinnedFolder::open`]).
    pub fn open(workspace: &Workspace, resolved: ResolvedPath) -> Result<Self, ToolError> {
        let (folder_path, name) = match (resolved.path.parent(), resolved.path.file_name()) {
            (Some(parent), Some(name)) => (parent.to_path_buf(), Some(name.to_os_string())),
            _ => (resolved.path.clone(), None),
        };
        let folder = PinnedFolder::open(workspace, &folder_path)?;
        Ok(Self { resolved, folder, name })
    }

    /// The resolved path (for patterns and display; the bytes go where the handle is).
    pub fn resolved(&self) -> &ResolvedPath {
        &self.resolved
    }

    /// The real absolute path, as text.
    pub fn shown(&self) -> String {
        self.resolved.path.to_string_lossy().into_owned()
    }

    /// The final component's name.
    pub fn name(&self) -> Option<&OsStr> {
        self.name.as_deref()
    }

    /// The folder holding the path, by handle.
    pub fn folder(&self) -> &PinnedFolder {
        &self.folder
    }

    /// Opens what the path names, relative to the folder handle and without following a
    /// symlink: `None` when it does not exist. A file is opened read-only and non-blocking
    /// (a FIFO or device must be refused on its metadata, not read).
    pub fn open_existing(&self) -> Result<Option<Opened>, ToolError> {
        let shown = self.shown();
        if !self.folder.exists() {
            return Ok(None);
        }
        let Some(name) = &self.name else {
            let dir = self.folder.dir.try_clone().map_err(|e| ToolError::io("open", &shown, e))?;
            return Ok(Some(Opened::Folder(dir)));
        };
        let mut options = OpenOptions::new();
        options.read(true).follow(FollowSymlinks::No);
        cap_std::fs::OpenOptionsExt::custom_flags(&mut options, nix::libc::O_NONBLOCK);
        let file = match self.folder.dir.open_with(name, &options) {
            Ok(file) => file.into_std(),
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(error) if is_symlink_refusal(&error) => return Err(changed(&shown)),
            Err(error) => return Err(ToolError::io("open", &shown, error)),
        };
        let metadata = file.metadata().map_err(|e| ToolError::io("open", &shown, e))?;
        if metadata.is_dir() {
            return Ok(Some(Opened::Folder(Dir::from_std_file(file))));
        }
        Ok(Some(Opened::File { file, metadata }))
    }

    /// Replaces the file with `bytes`: missing folders are created below the folder handle, the
    /// bytes go to a new temporary file in it, which is renamed over the final name within the
    /// same handle (a symlink or hard link at the name is replaced, never followed). An existing
    /// file's mode and owner are kept (the owner where the process may set it).
    pub fn replace(&mut self, bytes: &[u8]) -> Result<(), ToolError> {
        let shown = self.shown();
        let Some(name) = self.name.clone() else { return Err(ToolError::IsDirectory { path: shown }) };
        self.folder.create_missing(&shown)?;
        let dir = &self.folder.dir;
        // The replaced file's mode and owner carry over to the new one.
        let kept = match dir.symlink_metadata(&name) {
            Ok(meta) if meta.is_dir() => return Err(ToolError::IsDirectory { path: shown }),
            Ok(meta) if meta.is_file() => {
                use cap_std::fs::MetadataExt as _;
                Some((cap_std::fs::PermissionsExt::mode(&meta.permissions()), meta.uid(), meta.gid()))
            }
            _ => None,
        };
        let (temp_name, file) = create_temp(dir, &name).map_err(|e| ToolError::io("write", &shown, e))?;
        let mut file = file.into_std();
        let written = (|| {
            if let Some((mode, uid, gid)) = kept {
                use std::os::unix::fs::PermissionsExt as _;
                // Only root can give the file to another owner; anyone else keeps their own.
                let _ = std::os::unix::fs::fchown(&file, Some(uid), Some(gid));
                file.set_permissions(std::fs::Permissions::from_mode(mode))?;
            }
            file.write_all(bytes)?;
            file.sync_data()?;
            dir.rename(&temp_name, dir, &name)
        })();
        if let Err(error) = written {
            let _ = dir.remove_file(&temp_name);
            return Err(ToolError::io("write", &shown, error));
        }
        Ok(())
    }
}

/// Creates a new temporary file beside `name` in `dir` (never an existing one).
fn create_temp(dir: &Dir, name: &OsStr) -> io::Result<(OsString, cap_std::fs::File)> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true).follow(FollowSymlinks::No);
    loop {
        let count = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let mut temp = OsString::from(".");
        temp.push(name);
        temp.push(format!(".session-{}-{count}.tmp", std::process::id()));
        match dir.open_with(&temp, &options) {
            Ok(file) => return Ok((temp, file)),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(error) => return Err(error),
        }
    }
}

/// True when `path` has a `.git` component (any case: a case-insensitive filesystem takes
/// `.GIT` for git's own folder): a repository's config, hooks and objects, at any depth.
pub fn in_git_folder(path: &Path) -> bool {
    path.components().any(|component| match component {
        Component::Normal(name) => name.to_str().is_some_and(|name| name.eq_ignore_ascii_case(".git")),
        _ => false,
    })
}

/// Opens `relative` (a path below `base`, as a walk of `base` found it) beneath the folder
/// handle `base`: symlinks are followed only while they stay beneath it (openat2
/// `RESOLVE_BENEATH` where the kernel has it). Returns the file read-only and non-blocking,
/// and its metadata from the handle; `None` when it cannot be opened there.
pub fn open_beneath(base: &Dir, relative: &Path) -> Option<(std::fs::File, std::fs::Metadata)> {
    let mut options = OpenOptions::new();
    options.read(true);
    cap_std::fs::OpenOptionsExt::custom_flags(&mut options, nix::libc::O_NONBLOCK);
    let file = base.open_with(relative, &options).ok()?.into_std();
    let metadata = file.metadata().ok()?;
    Some((file, metadata))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::new(dir.path()).unwrap();
        (dir, workspace)
    }

    #[test]
    fn a_folder_swapped_for_a_symlink_after_resolution_fails_to_open() {
        let (_dir, workspace) = workspace();
        let outside = tempfile::tempdir().unwrap();
        let root = workspace.root().to_path_buf();
        std::fs::create_dir(root.join("sub")).unwrap();
        let resolved = workspace.resolve("sub/file.txt").unwrap();
        std::fs::remove_dir(root.join("sub")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("sub")).unwrap();
        let error = PinnedPath::open(&workspace, resolved).unwrap_err();
        assert!(error.to_string().contains("changed while it was being opened"), "{error}");
    }

    #[test]
    fn a_file_swapped_for_a_symlink_is_not_read_and_replace_writes_the_name_itself() {
        let (_dir, workspace) = workspace();
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret");
        std::fs::write(&secret, "secret").unwrap();
        let root = workspace.root().to_path_buf();
        std::fs::write(root.join("a.txt"), "mine").unwrap();
        let resolved = workspace.resolve("a.txt").unwrap();
        std::fs::remove_file(root.join("a.txt")).unwrap();
        std::os::unix::fs::symlink(&secret, root.join("a.txt")).unwrap();
        let mut pinned = PinnedPath::open(&workspace, resolved).unwrap();
        assert!(pinned.open_existing().is_err());
        pinned.replace(b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "secret");
        assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "new");
        assert!(!std::fs::symlink_metadata(root.join("a.txt")).unwrap().file_type().is_symlink());
    }

    #[test]
    fn replace_creates_missing_folders_and_keeps_permissions() {
        use std::os::unix::fs::PermissionsExt as _;
        let (_dir, workspace) = workspace();
        let root = workspace.root().to_path_buf();
        let mut pinned = PinnedPath::open(&workspace, workspace.resolve("a/b/c.txt").unwrap()).unwrap();
        pinned.replace(b"x").unwrap();
        assert_eq!(std::fs::read_to_string(root.join("a/b/c.txt")).unwrap(), "x");
        std::fs::write(root.join("run.sh"), "#!/bin/sh").unwrap();
        std::fs::set_permissions(root.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut pinned = PinnedPath::open(&workspace, workspace.resolve("run.sh").unwrap()).unwrap();
        pinned.replace(b"#!/bin/sh\necho").unwrap();
        let mode = std::fs::metadata(root.join("run.sh")).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o755);
        let leftovers: Vec<_> = std::fs::read_dir(&root)
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty());
    }

    #[test]
    fn git_components_are_found_at_any_depth_and_case() {
        assert!(in_git_folder(Path::new("/w/.git/config")));
        assert!(in_git_folder(Path::new("/w/sub/.GIT/hooks/x")));
        assert!(in_git_folder(Path::new(".git")));
        assert!(!in_git_folder(Path::new("/w/.github/workflows/x.yml")));
        assert!(!in_git_folder(Path::new("/w/x.git")));
    }
}
