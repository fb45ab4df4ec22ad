//! Working-tree snapshots (SPEC 13) in a git directory of their own, written in process by
//! libgit2 (`snapshot_repo`); only the daily housekeeping runs the `git` binary.
//!
//! The user's repository is never touched: the snapshot repository has its own git dir and
//! uses the worktree only as its work tree, so `git --git-dir <dir> --work-tree <worktree>`
//! inspects it as usual. A folder that is not a git repository is snapshotted too (with the
//! usual dependency caches left out), except the filesystem root and the home directory,
//! where snapshots are off ([`NoSnapshots`]) and everything else works.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use session_core::FileDiff;

use super::snapshot_gc::{HousekeepingReport, SnapshotRetention, SnapshotStoreReport};
use super::snapshot_repo::SnapshotRepo;

pub use super::snapshot_repo::MAX_UNTRACKED_BYTES;

/// Tracks the working tree and lists what changed.
#[async_trait]
pub trait Snapshotter: Send + Sync {
    /// False when this snapshotter never takes a snapshot nor diffs one ([`NoSnapshots`]):
    /// work whose only input is snapshots (summary diffs) is then skipped.
    fn is_on(&self) -> bool {
        true
    }
    /// Stages the tree and returns its hash, or `None` when snapshots are off or git failed.
    async fn track(&self) -> Option<String>;
    /// Absolute forward-slash paths of files changed since `hash` (empty on a git failure).
    async fn patch(&self, hash: &str) -> Vec<String>;
    /// [`Snapshotter::patch`] when the worktree was just snapshotted as `to`: the files that
    /// differ between the trees `from` and `to`, without another pass over the worktree.
    async fn patch_between(&self, from: &str, _to: &str) -> Vec<String> {
        self.patch(from).await
    }
    /// Restores `files` to their content at `hash` (files absent there are deleted).
    async fn restore(&self, hash: &str, files: &[String]) -> Result<(), String>;
    /// Checks, touching nothing, that [`Snapshotter::restore`] of `files` at `hash` would stay
    /// inside the worktree and read a snapshot that exists (a revert checks every restore
    /// before the first).
    async fn check_restore(&self, _hash: &str, _files: &[String]) -> Result<(), String> {
        Ok(())
    }
    /// The unified diff from the tree at `hash` to the working tree now, without the final
    /// newline (OpenCode stores git's output trimmed), or `None` when snapshots are off or git
    /// failed.
    async fn diff(&self, _hash: &str) -> Option<String> {
        None
    }
    /// The files that differ between the trees `from` and `to`, with the lines added and
    /// deleted (binary files count 0 and 0), in path order; `None` when snapshots are off or
    /// git failed (a tree pruned by housekeeping, for one).
    async fn diff_trees(&self, _from: &str, _to: &str) -> Option<Vec<FileDiff>> {
        None
    }
    /// Claims the housekeeping pass when one is due at `now_ms` (at most one per interval per
    /// snapshot store) and returns since when (epoch ms) a session's snapshots are kept; `None`
    /// when no pass is due or snapshots are off.
    async fn claim_housekeeping(&self, _now_ms: u64) -> Option<u64> {
        None
    }
    /// Bounds the snapshot store: the trees in `keep` (and what they hold) survive the age
    /// limit; see [`SnapshotRetention`] for what goes and when.
    async fn housekeep(&self, _keep: &[String]) -> Result<HousekeepingReport, String> {
        Ok(HousekeepingReport::default())
    }
}

/// Snapshots turned off.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSnapshots;

#[async_trait]
impl Snapshotter for NoSnapshots {
    fn is_on(&self) -> bool {
        false
    }
    async fn track(&self) -> Option<String> {
        None
    }
    async fn patch(&self, _hash: &str) -> Vec<String> {
        Vec::new()
    }
    async fn restore(&self, _hash: &str, _files: &[String]) -> Result<(), String> {
        Err("snapshots are off".to_owned())
    }
}

/// Snapshots of `worktree` kept in `git_dir`.
#[derive(Debug, Clone)]
pub struct GitSnapshotter {
    pub(super) worktree: PathBuf,
    git_dir: PathBuf,
    /// How long and how much is kept.
    pub(super) retention: SnapshotRetention,
    /// One operation that writes at a time in this process: staging and housekeeping must
    /// not interleave (git's own locks would fail the loser instead of waiting).
    pub(super) lock: Arc<tokio::sync::Mutex<()>>,
    /// The open repository, kept across operations so that each reuses what the last one
    /// read (the index and its stat cache, the config, the object database's handles).
    repo: Arc<std::sync::Mutex<SnapshotRepo>>,
}

impl GitSnapshotter {
    /// Snapshots of `worktree` in `<data_dir>/snapshot/<hash of the worktree path>`, or `None`
    /// when the worktree is the filesystem root or the home directory outside any git
    /// repository, or the snapshot repository cannot be opened.
    pub async fn open(worktree: &Path, data_dir: &Path) -> Option<Self> {
        let worktree = worktree.canonicalize().ok()?;
        let in_git = worktree.ancestors().any(|dir| dir.join(".git").exists());
        if !in_git && too_wide(&worktree) {
            tracing::info!(worktree = %worktree.display(), "snapshots are off: not a git repository, and too wide a folder to snapshot");
            return None;
        }
        let git_dir = store_dir(&worktree, data_dir);
        let fresh = !git_dir.join("HEAD").exists();
        let opened = {
            let (git_dir, worktree) = (git_dir.clone(), worktree.clone());
            tokio::task::spawn_blocking(move || SnapshotRepo::open(&git_dir, &worktree, !in_git)).await
        };
        let repo = match opened {
            Ok(Ok(repo)) => repo,
            Ok(Err(error)) => {
                tracing::warn!(%error, git_dir = %git_dir.display(), "snapshots are off: the snapshot repository cannot be opened");
                return None;
            }
            Err(_) => return None,
        };
        if fresh {
            super::snapshot_gc::stamp_new_store(&git_dir).await;
        }
        Some(Self {
            worktree,
            git_dir,
            retention: SnapshotRetention::default(),
            lock: Arc::new(tokio::sync::Mutex::new(())),
            repo: Arc::new(std::sync::Mutex::new(repo)),
        })
    }

    /// The same snapshots with another retention policy.
    pub fn with_retention(mut self, retention: SnapshotRetention) -> Self {
        self.retention = retention;
        self
    }

    /// A listing of worktree-relative paths as the absolute forward-slash paths a patch part
    /// lists; empty (and logged) when git failed.
    fn patch_files(&self, listed: Result<Vec<PathBuf>, String>) -> Vec<String> {
        match listed {
            Ok(paths) => paths
                .into_iter()
                .map(|path| self.worktree.join(path).to_string_lossy().replace('\\', "/"))
                .collect(),
            Err(error) => {
                tracing::warn!(%error, "snapshot: listing the changed files failed");
                Vec::new()
            }
        }
    }

    /// The snapshot repository's git directory.
    pub fn git_dir(&self) -> &Path {
        &self.git_dir
    }

    /// What a housekeeping pass works on.
    fn gc_target(&self) -> super::snapshot_gc::GcTarget<'_> {
        super::snapshot_gc::GcTarget { git_dir: &self.git_dir, retention: self.retention, lock: &self.lock }
    }

    /// The snapshot store's size, its cap and when housekeeping last ran.
    pub async fn store_report(&self) -> SnapshotStoreReport {
        SnapshotStoreReport::read(&self.git_dir, self.retention).await
    }

    /// The snapshot store of `worktree` under `data_dir`, read without creating anything;
    /// `None` when the worktree has none (yet).
    pub async fn existing_store(
        worktree: &Path,
        data_dir: &Path,
        retention: SnapshotRetention,
    ) -> Option<SnapshotStoreReport> {
        let git_dir = store_dir(&worktree.canonicalize().ok()?, data_dir);
        if !git_dir.join("HEAD").exists() {
            return None;
        }
        Some(SnapshotStoreReport::read(&git_dir, retention).await)
    }

    /// Runs `operation` on the open repository: on the blocking pool, or in place on a
    /// one-thread runtime.
    async fn with_repo<T: Send + 'static>(
        &self,
        operation: impl FnOnce(&SnapshotRepo) -> Result<T, String> + Send + 'static,
    ) -> Result<T, String> {
        let repo = Arc::clone(&self.repo);
        let run = move || {
            // A panic inside libgit2's callers leaves nothing half-done in the repository
            // handle worth refusing it for.
            let repo = repo.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            operation(&repo)
        };
        // `session run` drives one session on one thread: there a hand-off to the blocking
        // pool costs two thread wake-ups per operation, more than an operation on a stat-cached
        // tree, while the thread would only wait for it. Worker threads serve other
        // sessions meanwhile, so there the operation goes to the pool.
        let one_thread = tokio::runtime::Handle::try_current()
            .is_ok_and(|handle| handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread);
        if one_thread {
            return std::panic::catch_unwind(std::panic::AssertUnwindSafe(run))
                .map_err(|_| "the snapshot task failed: it panicked".to_owned())?;
        }
        tokio::task::spawn_blocking(run)
            .await
            .map_err(|error| format!("the snapshot task failed: {error}"))?
    }

    /// The worktree-relative form of `file`, refused when it is outside the worktree, climbs
    /// with `..`, passes through a symlink (a link inside the repository must not let a
    /// restore or a delete reach a file outside it), or lies in a `.git` folder at any depth
    /// (snapshots never hold one, so only a forged patch names it).
    fn confined(&self, file: &str) -> Result<String, String> {
        let relative = Path::new(file)
            .strip_prefix(&self.worktree)
            .map_err(|_| format!("{file} is outside the worktree {}", self.worktree.display()))?;
        let mut at = self.worktree.clone();
        let mut parts = relative.components().peekable();
        while let Some(part) = parts.next() {
            let std::path::Component::Normal(name) = part else {
                return Err(format!("{file} is not a plain path inside the worktree"));
            };
            if name.to_str().is_some_and(|name| name.eq_ignore_ascii_case(".git")) {
                return Err(format!("{file} is inside a .git folder, which a revert never changes"));
            }
            at.push(name);
            // The last component may itself be a symlink: restoring or deleting it acts on
            // the link, not on what it points to.
            if parts.peek().is_some()
                && std::fs::symlink_metadata(&at).is_ok_and(|meta| meta.file_type().is_symlink())
            {
                return Err(format!("{file} goes through the symlink {}", at.display()));
            }
        }
        if relative.as_os_str().is_empty() {
            return Err(format!("{file} is the worktree itself"));
        }
        Ok(relative.to_string_lossy().into_owned())
    }
}

/// `<data_dir>/snapshot/<hash of the canonical worktree path>`.
fn store_dir(worktree: &Path, data_dir: &Path) -> PathBuf {
    use std::hash::{Hash as _, Hasher as _};
    // A stable (not randomly seeded) hash: the same worktree must find its directory again.
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    worktree.hash(&mut hasher);
    data_dir.join("snapshot").join(format!("{:016x}", hasher.finish()))
}

/// Whether a folder outside any git repository is too wide to snapshot: the filesystem root
/// or the user's home directory (every file the user has).
fn too_wide(worktree: &Path) -> bool {
    let home = std::env::var_os("HOME").map(PathBuf::from).and_then(|home| home.canonicalize().ok());
    is_too_wide(worktree, home.as_deref())
}

fn is_too_wide(worktree: &Path, home: Option<&Path>) -> bool {
    worktree.parent().is_none() || home == Some(worktree)
}

#[async_trait]
impl Snapshotter for GitSnapshotter {
    async fn track(&self) -> Option<String> {
        let _writing = self.lock.lock().await;
        match self.with_repo(SnapshotRepo::track).await {
            Ok(hash) => Some(hash),
            Err(error) => {
                tracing::warn!(%error, "snapshot: staging the worktree failed");
                None
            }
        }
    }

    async fn patch(&self, hash: &str) -> Vec<String> {
        let _writing = self.lock.lock().await;
        let hash = hash.to_owned();
        self.patch_files(self.with_repo(move |repo| repo.changed_since(&hash)).await)
    }

    async fn patch_between(&self, from: &str, to: &str) -> Vec<String> {
        // The same tree: nothing changed, and git has nothing to say (most steps only read).
        if from == to {
            return Vec::new();
        }
        let (from, to) = (from.to_owned(), to.to_owned());
        self.patch_files(self.with_repo(move |repo| repo.changed_between(&from, &to)).await)
    }

    async fn diff(&self, hash: &str) -> Option<String> {
        let _writing = self.lock.lock().await;
        let hash = hash.to_owned();
        match self.with_repo(move |repo| repo.diff_text(&hash)).await {
            Ok(text) => Some(text.trim().to_owned()),
            Err(error) => {
                tracing::warn!(%error, "snapshot: diff failed");
                None
            }
        }
    }

    async fn diff_trees(&self, from: &str, to: &str) -> Option<Vec<FileDiff>> {
        let (from, to) = (from.to_owned(), to.to_owned());
        let (shown_from, shown_to) = (from.clone(), to.clone());
        match self.with_repo(move |repo| repo.diff_trees(&from, &to)).await {
            Ok(files) => Some(files),
            Err(error) => {
                tracing::warn!(%error, from = shown_from, to = shown_to, "snapshot: diff of two trees failed");
                None
            }
        }
    }

    async fn claim_housekeeping(&self, now_ms: u64) -> Option<u64> {
        super::snapshot_gc::claim(&self.gc_target(), now_ms).await
    }

    async fn housekeep(&self, keep: &[String]) -> Result<HousekeepingReport, String> {
        super::snapshot_gc::housekeep(&self.gc_target(), keep).await
    }

    async fn check_restore(&self, hash: &str, files: &[String]) -> Result<(), String> {
        for file in files {
            self.confined(file)?;
        }
        let hash = hash.to_owned();
        self.with_repo(move |repo| repo.check_tree(&hash)).await
    }

    async fn restore(&self, hash: &str, files: &[String]) -> Result<(), String> {
        // Every path is checked before the first file changes.
        let relative = files.iter().map(|file| self.confined(file)).collect::<Result<Vec<_>, _>>()?;
        let _writing = self.lock.lock().await;
        let hash = hash.to_owned();
        self.with_repo(move |repo| repo.restore(&hash, &relative)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_13_outside_git_the_root_and_the_home_folder_are_too_wide() {
        let home = Path::new("/home/ada");
        assert!(is_too_wide(Path::new("/"), Some(home)));
        assert!(is_too_wide(home, Some(home)));
        assert!(!is_too_wide(&home.join("notes"), Some(home)));
        assert!(!is_too_wide(Path::new("/srv/site"), None));
    }

    #[test]
    fn a_worktree_finds_the_same_store_again() {
        let data = Path::new("/data");
        assert_eq!(store_dir(Path::new("/a/b"), data), store_dir(Path::new("/a/b"), data));
        assert_ne!(store_dir(Path::new("/a/b"), data), store_dir(Path::new("/a/c"), data));
        assert!(store_dir(Path::new("/a/b"), data).starts_with("/data/snapshot"));
    }
}
