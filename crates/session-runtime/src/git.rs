//! Git as the runtime meets it outside the snapshot store: the user's project (what changed,
//! for `GET /file/status`), a new repository (the demo's), and the one `git` process it still
//! starts (housekeeping of the snapshot store).
//!
//! A project's repository is the model's to write: it may hold a nested repository or
//! submodule whose config sets `core.fsmonitor`, a `.gitattributes` naming a `filter` whose
//! `clean` command is a script, hooks, an external diff or textconv driver. The `git` binary
//! runs every one of those; libgit2 in process runs none (no hooks, no fsmonitor, no external
//! diff or textconv, only its built-in filters), so the project is read through libgit2 and
//! no `git` process ever runs with the project as its repository or work tree.

use std::ffi::OsStr;
use std::path::Path;

use git2::{Delta, DiffOptions, Repository, RepositoryInitOptions, RepositoryOpenFlags};
use session_core::FileStatus;

/// Files larger than this are counted as binary (0 lines added, 0 removed) instead of read.
const MAX_COUNTED_BYTES: i64 = 8 * 1024 * 1024;

/// One file that differs between the project's `HEAD` and its worktree (index included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedFile {
    /// The path relative to the repository's top, `/`-separated.
    pub path: String,
    /// Lines added (0 for a binary file).
    pub added: u64,
    /// Lines removed (0 for a binary file).
    pub removed: u64,
    /// New (untracked or staged), deleted, or otherwise changed.
    pub status: FileStatus,
}

/// The files of the git repository at `worktree` (its own `.git`, not a parent's) that differ
/// from `HEAD`, as `git status --untracked-files=all` lists them, with line counts as
/// `git diff HEAD --numstat` gives them (an untracked file counts its lines as added), in path
/// order. Empty when `worktree` is not the top of a repository. Submodules are not looked
/// into and nested repositories are one untracked entry: nothing of theirs is opened.
///
/// Blocking (it reads the worktree): run it on a blocking thread.
pub fn changed_files(worktree: &Path) -> Result<Vec<ChangedFile>, String> {
    if !worktree.join(".git").exists() {
        return Ok(Vec::new());
    }
    let repo =
        match Repository::open_ext(worktree, RepositoryOpenFlags::NO_SEARCH, std::iter::empty::<&OsStr>()) {
            Ok(repo) if !repo.is_bare() => repo,
            // Not a repository after all, or one git itself would refuse (another user's).
            Ok(_) => return Ok(Vec::new()),
            Err(error) => {
                tracing::debug!(%error, "the project's repository does not open; no changed files");
                return Ok(Vec::new());
            }
        };
    // No commit yet: every file is new.
    let head = repo.head().ok().and_then(|head| head.peel_to_tree().ok());
    let mut options = DiffOptions::new();
    options
        .include_untracked(true)
        .recurse_untracked_dirs(true)
        .show_untracked_content(true)
        .ignore_submodules(true)
        .max_size(MAX_COUNTED_BYTES);
    let diff = repo
        .diff_tree_to_workdir_with_index(head.as_ref(), Some(&mut options))
        .map_err(|error| error.message().to_owned())?;
    let mut files = Vec::with_capacity(diff.deltas().len());
    for (at, delta) in diff.deltas().enumerate() {
        let Some(path) = delta.new_file().path().or_else(|| delta.old_file().path()) else { continue };
        let status = match delta.status() {
            Delta::Added | Delta::Untracked => FileStatus::Added,
            Delta::Deleted => FileStatus::Deleted,
            _ => FileStatus::Modified,
        };
        // A file that cannot be read as a patch (a nested repository's folder, a file gone
        // since the listing) is still listed, with no counts.
        let (added, removed) = match git2::Patch::from_diff(&diff, at) {
            Ok(Some(patch)) if !patch.delta().flags().is_binary() => match patch.line_stats() {
                Ok((_, added, removed)) => (added as u64, removed as u64),
                Err(_) => (0, 0),
            },
            _ => (0, 0),
        };
        let mut path = path.to_string_lossy().replace('\\', "/");
        if delta.status() == Delta::Untracked && worktree.join(&path).is_dir() && !path.ends_with('/') {
            path.push('/');
        }
        files.push(ChangedFile { path, added, removed, status });
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
}

/// Makes `dir` a new git repository (as `git init` does, without git's template directory or
/// the user's `init.templateDir`: no hooks are copied in). Blocking.
pub fn init_repository(dir: &Path) -> Result<(), String> {
    let mut options = RepositoryInitOptions::new();
    options.external_template(false);
    Repository::init_opts(dir, &options).map(drop).map_err(|error| error.message().to_owned())
}

/// Settings every `git` process of the runtime runs with, given as `-c` (they win over every
/// config file): no fsmonitor, no hooks, no submodule recursion, no transport at all, no
/// credential helper. (An external diff or textconv driver runs only for diff commands, and
/// their variables and config files are not read; the runtime runs no diff command.)
const HARDENED_SETTINGS: [&str; 6] = [
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "submodule.recurse=false",
    "protocol.allow=never",
    "core.sshCommand=false",
    "credential.helper=",
];

/// The `git` command for the repository in `git_dir` (never a project's) with the runtime's
/// hardening: no `GIT_*` variable inherited (none can point it elsewhere or add config), no
/// system or global config read, the hardened settings on the command line, no prompt, no
/// work tree (it runs in `git_dir` itself), stdin closed and output piped, killed when
/// dropped. Every `git` process the runtime starts is built here; add `args` and run it.
///
/// Filter drivers a `.gitattributes` names cannot be switched off from the command line; a
/// work tree is therefore never given, so no attributes file of the user's is read.
pub fn hardened_git(git_dir: &Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new("git");
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("GIT_") {
            command.env_remove(key);
        }
    }
    command
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_ATTR_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_NO_REPLACE_OBJECTS", "1")
        .env("GIT_PROTOCOL_FROM_USER", "0")
        .env("GIT_ALLOW_PROTOCOL", "");
    for setting in HARDENED_SETTINGS {
        command.arg("-c").arg(setting);
    }
    command
        .arg("--git-dir")
        .arg(git_dir)
        .current_dir(git_dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_without_its_own_git_lists_nothing() {
        let dir = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(changed_files(dir.path()), Ok(Vec::new()));
    }

    #[test]
    fn a_new_repository_lists_its_files_as_added_with_their_lines() {
        let dir = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
        init_repository(dir.path()).unwrap_or_else(|error| panic!("{error}"));
        // libgit2's own template may leave a `README.sample`; git runs no `.sample`.
        let hooks: Vec<String> = std::fs::read_dir(dir.path().join(".git/hooks"))
            .map(|entries| entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        assert!(hooks.iter().all(|hook| hook.ends_with(".sample")), "{hooks:?}");
        std::fs::write(dir.path().join("a.txt"), "1\n2\n3\n").unwrap_or_else(|error| panic!("{error}"));
        let files = changed_files(dir.path()).unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(
            files,
            [ChangedFile { path: "a.txt".to_owned(), added: 3, removed: 0, status: FileStatus::Added }]
        );
    }

    #[test]
    fn the_hardened_command_reads_no_config_but_its_own() {
        let command = hardened_git(Path::new("/store"));
        let std = command.as_std();
        let args: Vec<_> = std.get_args().map(|arg| arg.to_string_lossy().into_owned()).collect();
        assert!(args.windows(2).any(|pair| pair == ["-c", "core.fsmonitor=false"]), "{args:?}");
        assert!(args.windows(2).any(|pair| pair == ["-c", "core.hooksPath=/dev/null"]), "{args:?}");
        assert!(args.windows(2).any(|pair| pair == ["--git-dir", "/store"]), "{args:?}");
        assert!(!args.iter().any(|arg| arg.starts_with("--work-tree")), "{args:?}");
        let env: Vec<_> = std.get_envs().collect();
        assert!(env.contains(&(OsStr::new("GIT_CONFIG_GLOBAL"), Some(OsStr::new("/dev/null")))));
        assert!(env.contains(&(OsStr::new("GIT_CONFIG_NOSYSTEM"), Some(OsStr::new("1")))));
        assert_eq!(std.get_current_dir(), Some(Path::new("/store")));
    }
}
