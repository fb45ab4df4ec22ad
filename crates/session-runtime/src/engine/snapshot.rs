//! Working-tree snapshots (SPEC 13) in a git directory of their own, through the `git` binary.
//!
//! The user's repository is never touched: the snapshot repository has its own git dir and
//! uses the worktree only as its work tree. Without git, or outside a repository, snapshots
//! are off ([`NoSnapshots`]) and everything else works.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use session_core::FileDiff;
use tokio::process::Command;

use super::snapshot_diff::{file_diffs, name_status, numstat};
use super::snapshot_gc::{HousekeepingReport, SnapshotRetention};

/// Untracked files above this size are left out of snapshots (SPEC 13).
pub const MAX_UNTRACKED_BYTES: u64 = 2 * 1024 * 1024;

/// Tracks the working tree and lists what changed.
#[async_trait]
pub trait Snapshotter: Send + Sync {
    /// Stages the tree and returns its hash, or `None` when snapshots are off or git failed.
    async fn track(&self) -> Option<String>;
    /// Absolute forward-slash paths of files changed since `hash` (empty on a git failure).
    async fn patch(&self, hash: &str) -> Vec<String>;
    /// Restores `files` to their content at `hash` (files absent there are deleted).
    async fn restore(&self, hash: &str, files: &[String]) -> Result<(), String>;
    /// Checks, touching nothing, that [`Snapshotter::restore`] of `files` at `hash` would stay
    /// inside the worktree and read a snapshot that exists (a revert checks every restore
    /// before the first).
    async fn check_restore(&self, _hash: &str, _files: &[String]) -> Result<(), String> {
        Ok(())
    }
    /// The unified diff from the tree at `hash` to the working tree now, or `None` when
    /// snapshots are off or git failed.
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
    worktree: PathBuf,
    git_dir: PathBuf,
    /// How long and how much is kept.
    pub(super) retention: SnapshotRetention,
    /// One git operation that writes at a time in this process: staging and housekeeping
    /// must not interleave (git's own locks would fail the loser instead of waiting).
    pub(super) lock: Arc<tokio::sync::Mutex<()>>,
}

impl GitSnapshotter {
    /// Snapshots of `worktree` in `<data_dir>/snapshot/<hash of the worktree path>`, or `None`
    /// when the worktree is not inside a git repository or git does not run.
    pub async fn open(worktree: &Path, data_dir: &Path) -> Option<Self> {
        let worktree = worktree.canonicalize().ok()?;
        if !worktree.ancestors().any(|dir| dir.join(".git").exists()) {
            return None;
        }
        let key = {
            use std::hash::{Hash as _, Hasher as _};
            // A stable (not randomly seeded) hash: the same worktree must find its directory again.
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            worktree.hash(&mut hasher);
            format!("{:016x}", hasher.finish())
        };
        let git_dir = data_dir.join("snapshot").join(key);
        let snapshotter = Self {
            worktree,
            git_dir,
            retention: SnapshotRetention::default(),
            lock: Arc::new(tokio::sync::Mutex::new(())),
        };
        if !snapshotter.git_dir.join("HEAD").exists() {
            tokio::fs::create_dir_all(&snapshotter.git_dir).await.ok()?;
            snapshotter.git(&["init", "--quiet"]).await.ok()?;
            for (key, value) in [
                ("core.autocrlf", "false"),
                ("core.longpaths", "true"),
                ("core.symlinks", "true"),
                ("core.fsmonitor", "false"),
            ] {
                snapshotter.git(&["config", key, value]).await.ok()?;
            }
        }
        Some(snapshotter)
    }

    /// The same snapshots with another retention policy.
    pub fn with_retention(mut self, retention: SnapshotRetention) -> Self {
        self.retention = retention;
        self
    }

    /// The snapshot repository's git directory.
    pub fn git_dir(&self) -> &Path {
        &self.git_dir
    }

    pub(super) async fn git(&self, args: &[&str]) -> Result<Vec<u8>, String> {
        self.git_with_input(args, None).await
    }

    /// Runs git with `input` on its standard input.
    pub(super) async fn git_with_input(
        &self,
        args: &[&str],
        input: Option<&[u8]>,
    ) -> Result<Vec<u8>, String> {
        let mut command = Command::new("git");
        command
            .arg("--git-dir")
            .arg(&self.git_dir)
            .arg("--work-tree")
            .arg(&self.worktree)
            .args(args)
            .current_dir(&self.worktree)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "session")
            .env("GIT_AUTHOR_EMAIL", "session@localhost")
            .env("GIT_COMMITTER_NAME", "session")
            .env("GIT_COMMITTER_EMAIL", "session@localhost")
            .stdin(if input.is_some() { std::process::Stdio::piped() } else { std::process::Stdio::null() })
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|error| format!("git did not run: {error}"))?;
        let stdin = child.stdin.take();
        // Written while the output is read: git answers line by line, and a full output pipe
        // would otherwise stop it reading its input.
        let write = async move {
            if let (Some(input), Some(mut stdin)) = (input, stdin) {
                use tokio::io::AsyncWriteExt as _;
                stdin.write_all(input).await?;
                // Dropping stdin closes it: git reads to the end.
            }
            Ok::<(), std::io::Error>(())
        };
        let (written, output) = tokio::join!(write, child.wait_with_output());
        let output = output.map_err(|error| format!("git did not finish: {error}"))?;
        written.map_err(|error| format!("git's input: {error}"))?;
        if output.status.success() {
            Ok(output.stdout)
        } else {
            Err(String::from_utf8_lossy(&output.stderr).trim().to_owned())
        }
    }

    /// The worktree-relative form of `file`, refused when it is outside the worktree, climbs
    /// with `..`, or passes through a symlink (a link inside the repository must not let a
    /// restore or a delete reach a file outside it).
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

    /// Stages everything except untracked files over the size limit.
    async fn stage(&self) -> Result<(), String> {
        self.git(&["add", "--all", "--", "."]).await?;
        // Large new files stay out: snapshots are for source, not build outputs.
        let added = self.git(&["diff", "--cached", "--name-only", "--diff-filter=A", "-z"]).await?;
        for name in added.split(|byte| *byte == 0).filter(|name| !name.is_empty()) {
            let name = String::from_utf8_lossy(name).into_owned();
            let size = tokio::fs::metadata(self.worktree.join(&name)).await.map(|m| m.len()).unwrap_or(0);
            if size > MAX_UNTRACKED_BYTES {
                self.git(&["rm", "--cached", "--quiet", "--", &name]).await?;
            }
        }
        Ok(())
    }
}

#[async_trait]
impl Snapshotter for GitSnapshotter {
    async fn track(&self) -> Option<String> {
        let _writing = self.lock.lock().await;
        if let Err(error) = self.stage().await {
            tracing::warn!(%error, "snapshot: staging failed");
            return None;
        }
        match self.git(&["write-tree"]).await {
            Ok(out) => Some(String::from_utf8_lossy(&out).trim().to_owned()),
            Err(error) => {
                tracing::warn!(%error, "snapshot: write-tree failed");
                None
            }
        }
    }

    async fn patch(&self, hash: &str) -> Vec<String> {
        let _writing = self.lock.lock().await;
        if self.stage().await.is_err() {
            return Vec::new();
        }
        match self.git(&["diff", "--cached", "--name-only", "-z", hash, "--"]).await {
            Ok(out) => out
                .split(|byte| *byte == 0)
                .filter(|name| !name.is_empty())
                .map(|name| {
                    let path = self.worktree.join(String::from_utf8_lossy(name).as_ref());
                    path.to_string_lossy().replace('\\', "/")
                })
                .collect(),
            Err(error) => {
                tracing::warn!(%error, "snapshot: diff failed");
                Vec::new()
            }
        }
    }

    async fn diff(&self, hash: &str) -> Option<String> {
        let _writing = self.lock.lock().await;
        if let Err(error) = self.stage().await {
            tracing::warn!(%error, "snapshot: staging failed");
            return None;
        }
        match self.git(&["diff", "--cached", "--no-ext-diff", "--no-color", hash, "--"]).await {
            Ok(out) => Some(String::from_utf8_lossy(&out).into_owned()),
            Err(error) => {
                tracing::warn!(%error, "snapshot: diff failed");
                None
            }
        }
    }

    async fn diff_trees(&self, from: &str, to: &str) -> Option<Vec<FileDiff>> {
        // Tree to tree: the index is not read, so no lock is needed.
        let diff = ["diff", "--no-ext-diff", "--no-renames", "--no-color", "-z"];
        let counts = self.git(&[&diff[..], &["--numstat", from, to, "--"]].concat()).await;
        let statuses = self.git(&[&diff[..], &["--name-status", from, to, "--"]].concat()).await;
        match (counts, statuses) {
            (Ok(counts), Ok(statuses)) => Some(file_diffs(numstat(&counts), &name_status(&statuses))),
            (Err(error), _) | (_, Err(error)) => {
                tracing::warn!(%error, from, to, "snapshot: diff of two trees failed");
                None
            }
        }
    }

    async fn claim_housekeeping(&self, now_ms: u64) -> Option<u64> {
        super::snapshot_gc::claim(self, now_ms).await
    }

    async fn housekeep(&self, keep: &[String]) -> Result<HousekeepingReport, String> {
        super::snapshot_gc::housekeep(self, keep).await
    }

    async fn check_restore(&self, hash: &str, files: &[String]) -> Result<(), String> {
        self.git(&["cat-file", "-e", &format!("{hash}^{{tree}}")])
            .await
            .map_err(|_| format!("snapshot {hash} does not exist in this worktree's snapshots"))?;
        for file in files {
            self.confined(file)?;
        }
        Ok(())
    }

    async fn restore(&self, hash: &str, files: &[String]) -> Result<(), String> {
        // Every path is checked before the first file changes.
        self.check_restore(hash, files).await?;
        let _writing = self.lock.lock().await;
        for file in files {
            let relative = self.confined(file)?;
            let listed = self.git(&["ls-tree", "--name-only", hash, "--", &relative]).await?;
            if listed.is_empty() {
                // Not in the snapshot: the step created it, so reverting removes it.
                let _ = tokio::fs::remove_file(self.worktree.join(&relative)).await;
            } else {
                self.git(&["checkout", hash, "--", &relative]).await?;
            }
        }
        Ok(())
    }
}
