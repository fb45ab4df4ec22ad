//! The snapshot repository's operations in process, through libgit2 (SPEC 13): staging the
//! worktree with the index's stat cache, writing trees, listing and printing what changed,
//! restoring files. Blocking calls: `GitSnapshotter` runs them on tokio's
//! blocking pool, one at a time.
//!
//! One step boundary costs one walk of the worktree that compares each file's stat data with
//! what the index recorded last time (only files whose stat changed are read and hashed), and
//! one tree write that reuses the index's cached subtrees. No process is started.

use std::path::{Path, PathBuf};

use git2::{
    Delta, Diff, DiffDelta, DiffFormat, DiffOptions, Index, Oid, Repository, RepositoryInitOptions, Tree,
};
use session_core::{FileDiff, FileStatus, two_files_patch};

/// Untracked files above this size are left out of snapshots (SPEC 13).
pub const MAX_UNTRACKED_BYTES: u64 = 2 * 1024 * 1024;

/// The largest side of a change whose unified diff a summary keeps (1 MiB).
const MAX_PATCH_SIDE_BYTES: usize = 1024 * 1024;

/// Set in the snapshot repository's own config once [`LOCAL_CONFIG`] is written, so that an
/// open of a ready repository writes nothing.
const CONFIGURED_KEY: &str = "session.snapshotconfig";

/// The version of [`LOCAL_CONFIG`]; a repository configured by an older one is configured again.
const CONFIGURED_VERSION: i32 = 2;

/// The repository's own settings, which win over the user's global git config: snapshots
/// store bytes as they are on disk (no line-ending conversion), keep symlinks as links, and
/// see every file git itself would (no global excludes file).
const LOCAL_CONFIG: [(&str, &str); 5] = [
    ("core.autocrlf", "false"),
    ("core.symlinks", "true"),
    ("core.filemode", "true"),
    ("core.fsmonitor", "false"),
    // A path that never exists: libgit2 then reads no global excludes file.
    ("core.excludesfile", "session-no-global-excludes"),
];

/// Left out of snapshots of a folder that is not a git repository (there, no `.gitignore`
/// says what is build output or a dependency cache): the usual such folders.
const NON_GIT_EXCLUDES: &str = "\
# Written by session: this worktree is not a git repository, so these dependency and
# build caches stay out of its snapshots. Edit to taste; `git` reads it as usual.
node_modules/
.venv/
venv/
__pycache__/
.mypy_cache/
.pytest_cache/
.tox/
.gradle/
.next/
.cache/
target/
";

/// The snapshot repository (its own git directory) with the worktree it snapshots.
pub(super) struct SnapshotRepo {
    repo: Repository,
    worktree: PathBuf,
}

impl std::fmt::Debug for SnapshotRepo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SnapshotRepo")
            .field("git_dir", &self.repo.path())
            .field("worktree", &self.worktree)
            .finish()
    }
}

/// A git error as the snapshotter reports it.
fn message(error: git2::Error) -> String {
    error.message().to_owned()
}

/// A full object name (SHA-1 or SHA-256, hex): the only text from the store that reaches git.
pub(super) fn is_hash(text: &str) -> bool {
    matches!(text.len(), 40 | 64) && text.bytes().all(|byte| byte.is_ascii_hexdigit())
}

impl SnapshotRepo {
    /// Opens the repository in `git_dir`, creating it first when it does not exist; `non_git`
    /// worktrees get [`NON_GIT_EXCLUDES`] when the repository is created. A directory made by
    /// `git init` (earlier versions used the binary) opens the same way.
    pub(super) fn open(git_dir: &Path, worktree: &Path, non_git: bool) -> Result<Self, String> {
        let repo = if git_dir.join("HEAD").exists() {
            Repository::open_bare(git_dir).map_err(message)?
        } else {
            std::fs::create_dir_all(git_dir).map_err(|error| error.to_string())?;
            // Without git's template (its sample hooks and description): a dozen files a
            // snapshot store never uses, written on the way to a new worktree's first step.
            let mut options = RepositoryInitOptions::new();
            options.bare(true).external_template(false);
            let repo = Repository::init_opts(git_dir, &options).map_err(message)?;
            if non_git {
                let info = git_dir.join("info");
                std::fs::create_dir_all(&info).map_err(|error| error.to_string())?;
                std::fs::write(info.join("exclude"), NON_GIT_EXCLUDES).map_err(|error| error.to_string())?;
            }
            repo
        };
        configure(&repo).map_err(message)?;
        // In memory only: no `.git` link file is written into the user's worktree.
        repo.set_workdir(worktree, false).map_err(message)?;
        Ok(Self { repo, worktree: worktree.to_path_buf() })
    }

    /// Brings the index up to the worktree, as `git add --all` would, except that files not
    /// yet in the index and above [`MAX_UNTRACKED_BYTES`] stay out; returns the index.
    fn stage(&self) -> Result<Index, String> {
        let mut index = self.repo.index().map_err(message)?;
        // Another process (a second server on this worktree) may have staged since.
        index.read(false).map_err(message)?;
        let mut options = DiffOptions::new();
        options
            .include_untracked(true)
            .recurse_untracked_dirs(true)
            .include_typechange(true)
            .ignore_submodules(true)
            // Files whose stat changed but whose content did not get their new stat data, so
            // the next pass does not hash them again.
            .update_index(true);
        let changes: Vec<(Delta, PathBuf)> = {
            let diff = self.repo.diff_index_to_workdir(Some(&index), Some(&mut options)).map_err(message)?;
            diff.deltas()
                .filter_map(|delta| Some((delta.status(), delta_path(&delta)?.to_path_buf())))
                .collect()
        };
        if changes.is_empty() {
            // Nothing to record: the index file stays as it is (stat data refreshed in memory
            // is written with the next change).
            return Ok(index);
        }
        for (status, path) in changes {
            let staged = match status {
                Delta::Deleted => index.remove_path(&path),
                Delta::Untracked => {
                    let size = std::fs::symlink_metadata(self.worktree.join(&path)).map(|meta| meta.len());
                    // Large new files stay out: snapshots are for source, not build outputs.
                    // A nested repository shows as its directory; it is not snapshotted.
                    if size.is_ok_and(|size| size > MAX_UNTRACKED_BYTES)
                        || path.as_os_str().to_string_lossy().ends_with('/')
                    {
                        continue;
                    }
                    index.add_path(&path)
                }
                Delta::Modified | Delta::Typechange => index.add_path(&path),
                _ => continue,
            };
            if let Err(error) = staged {
                // One file that cannot be read (gone meanwhile, unreadable) does not cost the
                // whole snapshot; it keeps what the index had.
                tracing::debug!(path = %path.display(), error = %error.message(), "snapshot: a file was not staged");
            }
        }
        index.write().map_err(message)?;
        Ok(index)
    }

    fn tree(&self, hash: &str) -> Result<Tree<'_>, String> {
        if !is_hash(hash) {
            return Err(format!("{hash:?} is not a snapshot id"));
        }
        let oid = Oid::from_str(hash).map_err(message)?;
        self.repo
            .find_tree(oid)
            .map_err(|_| format!("snapshot {hash} does not exist in this worktree's snapshots"))
    }

    /// Stages the worktree and writes its tree; returns the tree's hash.
    pub(super) fn track(&self) -> Result<String, String> {
        let mut index = self.stage()?;
        index.write_tree().map(|oid| oid.to_string()).map_err(message)
    }

    /// The diff from the tree `hash` to the worktree now (staged first).
    fn diff_to_worktree(&self, hash: &str) -> Result<Diff<'_>, String> {
        let tree = self.tree(hash)?;
        let index = self.stage()?;
        self.repo.diff_tree_to_index(Some(&tree), Some(&index), None).map_err(message)
    }

    /// Worktree-relative paths of the files that differ between the tree `hash` and the
    /// worktree now (staged first).
    pub(super) fn changed_since(&self, hash: &str) -> Result<Vec<PathBuf>, String> {
        Ok(changed_paths(&self.diff_to_worktree(hash)?))
    }

    /// Worktree-relative paths of the files that differ between the trees `from` and `to`.
    pub(super) fn changed_between(&self, from: &str, to: &str) -> Result<Vec<PathBuf>, String> {
        let (from, to) = (self.tree(from)?, self.tree(to)?);
        let diff = self.repo.diff_tree_to_tree(Some(&from), Some(&to), None).map_err(message)?;
        Ok(changed_paths(&diff))
    }

    /// The unified diff from the tree `hash` to the worktree now, as `git diff` prints it.
    pub(super) fn diff_text(&self, hash: &str) -> Result<String, String> {
        let diff = self.diff_to_worktree(hash)?;
        let mut text = Vec::new();
        diff.print(DiffFormat::Patch, |_, _, line| {
            // Content lines carry their marker apart; headers and hunk lines carry it inside.
            if matches!(line.origin(), '+' | '-' | ' ') {
                text.push(line.origin() as u8);
            }
            text.extend_from_slice(line.content());
            true
        })
        .map_err(message)?;
        Ok(String::from_utf8_lossy(&text).into_owned())
    }

    /// The files that differ between the trees `from` and `to`, with lines added and deleted
    /// (binary files 0 and 0), in path order.
    pub(super) fn diff_trees(&self, from: &str, to: &str) -> Result<Vec<FileDiff>, String> {
        let (from, to) = (self.tree(from)?, self.tree(to)?);
        let diff = self.repo.diff_tree_to_tree(Some(&from), Some(&to), None).map_err(message)?;
        let mut files = Vec::with_capacity(diff.deltas().len());
        for (at, delta) in diff.deltas().enumerate() {
            let Some(path) = delta_path(&delta) else { continue };
            let status = match delta.status() {
                Delta::Added => FileStatus::Added,
                Delta::Deleted => FileStatus::Deleted,
                _ => FileStatus::Modified,
            };
            let (additions, deletions, binary) = match git2::Patch::from_diff(&diff, at).map_err(message)? {
                Some(patch) if !patch.delta().flags().is_binary() => {
                    let (_, added, deleted) = patch.line_stats().map_err(message)?;
                    (added as u64, deleted as u64, false)
                }
                _ => (0, 0, true),
            };
            let file = path.to_string_lossy().into_owned();
            let patch = if binary { None } else { self.patch_text(&file, &delta) };
            files.push(FileDiff { file, patch, additions, deletions, status: Some(status) });
        }
        files.sort_by(|a, b| a.file.cmp(&b.file));
        Ok(files)
    }

    /// The unified diff of one text file's change as OpenCode writes a summary diff's `patch`
    /// (an empty header after each name); none when either side is over
    /// [`MAX_PATCH_SIDE_BYTES`] or cannot be read, so one huge file cannot swell a summary.
    fn patch_text(&self, file: &str, delta: &git2::DiffDelta<'_>) -> Option<String> {
        let side = |id: git2::Oid| -> Option<String> {
            if id.is_zero() {
                return Some(String::new());
            }
            let blob = self.repo.find_blob(id).ok()?;
            (blob.size() <= MAX_PATCH_SIDE_BYTES)
                .then(|| String::from_utf8_lossy(blob.content()).into_owned())
        };
        let old = side(delta.old_file().id())?;
        let new = side(delta.new_file().id())?;
        Some(two_files_patch(file, &old, &new, Some("")))
    }

    /// An error when `hash` names no tree of this repository.
    pub(super) fn check_tree(&self, hash: &str) -> Result<(), String> {
        self.tree(hash).map(drop)
    }

    /// Puts the worktree-relative `files` back as they are in the tree `hash`; a file absent
    /// there is deleted (the step created it). The caller has checked each path.
    pub(super) fn restore(&self, hash: &str, files: &[String]) -> Result<(), String> {
        let tree = self.tree(hash)?;
        let mut present = Vec::new();
        for file in files {
            if tree.get_path(Path::new(file)).is_ok() {
                present.push(file.as_str());
            } else {
                // Gone already is as good as deleted.
                let _ = std::fs::remove_file(self.worktree.join(file));
            }
        }
        if present.is_empty() {
            return Ok(());
        }
        let mut checkout = git2::build::CheckoutBuilder::new();
        // Exact paths: a name holding `*` or `?` matches only itself.
        checkout.force().disable_pathspec_match(true);
        for file in present {
            checkout.path(file);
        }
        self.repo.checkout_tree(tree.as_object(), Some(&mut checkout)).map_err(message)
    }
}

/// The path a change is about: the new file's, or the old one's for a deletion.
/// The paths a diff touches, worktree-relative.
fn changed_paths(diff: &Diff<'_>) -> Vec<PathBuf> {
    diff.deltas().filter_map(|delta| delta_path(&delta).map(Path::to_path_buf)).collect()
}

fn delta_path<'a>(delta: &'a DiffDelta<'_>) -> Option<&'a Path> {
    delta.new_file().path().or_else(|| delta.old_file().path())
}

/// Writes [`LOCAL_CONFIG`] unless this repository already has it.
fn configure(repo: &Repository) -> Result<(), git2::Error> {
    let mut config = repo.config()?.open_level(git2::ConfigLevel::Local)?;
    if config.get_i32(CONFIGURED_KEY).is_ok_and(|version| version >= CONFIGURED_VERSION) {
        return Ok(());
    }
    // `git` run by hand on the directory treats it as a repository with a work tree.
    config.set_bool("core.bare", false)?;
    for (key, value) in LOCAL_CONFIG {
        config.set_str(key, value)?;
    }
    config.set_i32(CONFIGURED_KEY, CONFIGURED_VERSION)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_object_names_reach_git() {
        assert!(is_hash(&"a".repeat(40)) && is_hash(&"0".repeat(64)));
        assert!(!is_hash("abc") && !is_hash(&format!("{}\n", "a".repeat(39))) && !is_hash(&"g".repeat(40)));
        assert!(!is_hash("HEAD~1") && !is_hash(&format!("{}^{{tree}}", "a".repeat(40))));
    }
}
