//! Working-tree snapshots (SPEC 13) in a git directory of their own, through the `git` binary.
//!
//! The user's repository is never touched: the snapshot repository has its own git dir and
//! uses the worktree only as its work tree. Without git, or outside a repository, snapshots
//! are off ([`NoSnapshots`]) and everything else works.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use tokio::process::Command;

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
        let snapshotter = Self { worktree, git_dir };
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

    async fn git(&self, args: &[&str]) -> Result<Vec<u8>, String> {
        let output = Command::new("git")
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
            .kill_on_drop(true)
            .output()
            .await
            .map_err(|error| format!("git did not run: {error}"))?;
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
