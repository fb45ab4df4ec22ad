//! Housekeeping of the snapshot store (SPEC 13 `cleanup`, with a size bound): the git
//! directory of snapshots stays bounded however many steps run.
//!
//! A snapshot is a tree no ref points at, so git counts it unreachable; OpenCode's
//! `gc --prune=7.days` therefore drops every snapshot after seven days and keeps everything
//! younger, however much that is. A pass here, at most once per [`SnapshotRetention::interval`]
//! per store (a timestamp file in the git dir says when the last one started; a new store
//! stamps its creation, so its first pass comes one interval later):
//! 1. points one ref (`refs/session/keep`, a tree of trees) at the snapshots the store's
//!    sessions active within `max_age` still name, and runs `git gc --prune=<max_age>`:
//!    snapshots named by a recent session survive, other objects go once older than `max_age`;
//! 2. if the directory is still above `max_bytes`: `git gc --prune=<grace>`, so objects no
//!    recent session names go once older than `grace` (one hour; a run in progress, here or in
//!    another process, names its trees within milliseconds of making them);
//! 3. if still above: the ref is dropped and `gc --prune=<grace>` runs again, leaving only the
//!    objects of the worktree as last staged (the index) and those younger than `grace`.
//!
//! So after a pass the directory is at most `max_bytes`, or else holds no more than the
//! staged worktree, the last `grace` of snapshots and git's fixed files. A revert to a step
//! whose snapshot went fails with git's error; every other feature works on.
//!
//! This is the one place the `git` binary runs (libgit2 has no garbage collection), built by
//! [`crate::git::hardened_git`]: on the store's git dir alone, no work tree, no config but the
//! store's own, no hooks or fsmonitor. Without the binary a pass fails with a warning and the
//! store is not bounded.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use super::snapshot_repo::is_hash;

/// What a pass works on: a snapshot store's git folder, its retention and the lock its writers
/// take (borrowed from the snapshotter, which this module does not know).
pub(super) struct GcTarget<'a> {
    /// The store's git folder.
    pub(super) git_dir: &'a Path,
    /// Its retention policy.
    pub(super) retention: SnapshotRetention,
    /// Taken by every write to the store.
    pub(super) lock: &'a tokio::sync::Mutex<()>,
}

impl GcTarget<'_> {
    fn git_dir(&self) -> &Path {
        self.git_dir
    }
}

/// The file in the snapshot git dir holding when the last pass started (epoch ms).
const STAMP_FILE: &str = "session-housekeeping";

/// The ref that keeps the snapshots stored sessions still name.
const KEEP_REF: &str = "refs/session/keep";

/// How long and how much of the snapshot store is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotRetention {
    /// Snapshots named by sessions updated within this age are kept; other objects go once
    /// older (default 7 days, OpenCode's prune age).
    pub max_age: Duration,
    /// The size of the snapshot git dir above which a pass drops snapshots early (default 1 GiB).
    pub max_bytes: u64,
    /// Objects younger than this are never pruned: they may belong to a run in progress
    /// (default 1 hour). Zero (for tests) makes the pass hold off this process's other
    /// snapshot operations while it runs.
    pub grace: Duration,
    /// A pass runs at most once per this long per snapshot store (default 24 hours).
    pub interval: Duration,
}

impl Default for SnapshotRetention {
    fn default() -> Self {
        Self {
            max_age: Duration::from_secs(7 * 24 * 3600),
            max_bytes: 1024 * 1024 * 1024,
            grace: Duration::from_secs(3600),
            interval: Duration::from_secs(24 * 3600),
        }
    }
}

/// What one housekeeping pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HousekeepingReport {
    /// The git dir's size before the pass, in bytes.
    pub bytes_before: u64,
    /// Its size after the pass.
    pub bytes_after: u64,
    /// Snapshots kept by the ref (0 once step 3 dropped it).
    pub kept: usize,
    /// The last step that ran (1 to 3, as the module describes; 0 when nothing ran).
    pub stage: u8,
}

/// The snapshot store as `session sessions show` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotStoreReport {
    /// The snapshot repository's git directory.
    pub git_dir: std::path::PathBuf,
    /// Its size now, in bytes.
    pub bytes: u64,
    /// The size above which housekeeping drops snapshots early.
    pub max_bytes: u64,
    /// How long snapshots named by recent sessions are kept.
    pub max_age: Duration,
    /// When the last housekeeping pass started (epoch ms), if one ever ran.
    pub last_housekeeping_ms: Option<u64>,
}

impl SnapshotStoreReport {
    /// Reads the size of the store in `git_dir` and its last pass's timestamp.
    pub async fn read(git_dir: &Path, retention: SnapshotRetention) -> Self {
        let last_housekeeping_ms = tokio::fs::read_to_string(git_dir.join(STAMP_FILE))
            .await
            .ok()
            .and_then(|text| text.trim().parse::<u64>().ok());
        Self {
            bytes: dir_size(git_dir).await,
            max_bytes: retention.max_bytes,
            max_age: retention.max_age,
            last_housekeeping_ms,
            git_dir: git_dir.to_path_buf(),
        }
    }
}

/// Starts a new store's interval: its first pass is due one interval after it was made (a
/// store younger than that has nothing old to drop, and a short-lived folder, a benchmark's or
/// a test's, never pays for a `git gc`).
pub(super) async fn stamp_new_store(git_dir: &Path) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| u64::try_from(since.as_millis()).unwrap_or(u64::MAX));
    if let Err(error) = tokio::fs::write(git_dir.join(STAMP_FILE), now.to_string()).await {
        tracing::debug!(%error, "snapshot housekeeping: a new store's timestamp could not be written");
    }
}

/// Claims the pass due at `now_ms`: writes the timestamp and returns since when sessions keep
/// their snapshots, or `None` when the last pass is more recent than the interval.
pub(super) async fn claim(snapshots: &GcTarget<'_>, now_ms: u64) -> Option<u64> {
    let stamp = snapshots.git_dir().join(STAMP_FILE);
    let retention = snapshots.retention;
    let last = tokio::fs::read_to_string(&stamp).await.ok().and_then(|text| text.trim().parse::<u64>().ok());
    if !is_due(last, now_ms, retention.interval) {
        return None;
    }
    if let Err(error) = tokio::fs::write(&stamp, now_ms.to_string()).await {
        tracing::warn!(%error, "snapshot housekeeping: the timestamp could not be written");
        return None;
    }
    Some(now_ms.saturating_sub(millis(retention.max_age)))
}

/// Whether a pass is due at `now_ms` after one that started at `last` (a stamp from the
/// future, after a clock change, counts as due).
pub(super) fn is_due(last: Option<u64>, now_ms: u64, interval: Duration) -> bool {
    match last {
        None => true,
        Some(last) => last > now_ms || now_ms - last >= millis(interval),
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// One pass over `snapshots` keeping the trees in `keep` (see the module).
pub(super) async fn housekeep(
    snapshots: &GcTarget<'_>,
    keep: &[String],
) -> Result<HousekeepingReport, String> {
    let retention = snapshots.retention;
    // git's gc is safe beside concurrent staging as long as fresh objects are spared; only a
    // zero grace would prune a tree a step of this process just made, so only then do the
    // other snapshot operations wait for the pass (a server's steps never stall behind it).
    let _writing = if retention.grace.is_zero() { Some(snapshots.lock.lock().await) } else { None };
    let git_dir = snapshots.git_dir().to_path_buf();
    let bytes_before = dir_size(&git_dir).await;
    let mut report =
        HousekeepingReport { bytes_before, kept: keep_ref(snapshots, keep).await?, ..Default::default() };
    gc(snapshots, retention.max_age).await?;
    report.stage = 1;
    report.bytes_after = dir_size(&git_dir).await;
    if report.bytes_after > retention.max_bytes {
        gc(snapshots, retention.grace).await?;
        report.stage = 2;
        report.bytes_after = dir_size(&git_dir).await;
    }
    if report.bytes_after > retention.max_bytes {
        // A missing ref is fine: there was nothing to keep.
        let _ = git(snapshots, &["update-ref", "-d", KEEP_REF]).await;
        report.kept = 0;
        gc(snapshots, retention.grace).await?;
        report.stage = 3;
        report.bytes_after = dir_size(&git_dir).await;
    }
    tracing::info!(?report, "snapshot housekeeping");
    Ok(report)
}

/// Points [`KEEP_REF`] at a tree holding every tree of `keep` that still exists; returns how
/// many it holds. Anything that is not a hash is left out (the store's text goes into git's
/// input).
async fn keep_ref(snapshots: &GcTarget<'_>, keep: &[String]) -> Result<usize, String> {
    let wanted: BTreeSet<&str> = keep.iter().map(String::as_str).filter(|hash| is_hash(hash)).collect();
    let mut input = String::new();
    for hash in &wanted {
        input.push_str(hash);
        input.push('\n');
    }
    let found = if wanted.is_empty() {
        Vec::new()
    } else {
        let out = git_with_input(snapshots, &["cat-file", "--batch-check"], Some(input.as_bytes())).await?;
        // `<hash> tree <size>` for a tree, `<hash> missing` for a pruned one.
        String::from_utf8_lossy(&out)
            .lines()
            .filter_map(|line| match line.split(' ').collect::<Vec<_>>().as_slice() {
                [hash, "tree", _] if is_hash(hash) => Some((*hash).to_owned()),
                _ => None,
            })
            .collect()
    };
    if found.is_empty() {
        let _ = git(snapshots, &["update-ref", "-d", KEEP_REF]).await;
        return Ok(0);
    }
    let entries: String = found.iter().map(|hash| format!("040000 tree {hash}\t{hash}\n")).collect();
    let tree = git_with_input(snapshots, &["mktree"], Some(entries.as_bytes())).await?;
    let tree = String::from_utf8_lossy(&tree).trim().to_owned();
    git(snapshots, &["update-ref", KEEP_REF, &tree]).await?;
    Ok(found.len())
}

/// Runs git on the snapshot repository (never with the project as its work tree), through
/// the runtime's one hardened git command ([`crate::git::hardened_git`]).
async fn git(snapshots: &GcTarget<'_>, args: &[&str]) -> Result<Vec<u8>, String> {
    git_with_input(snapshots, args, None).await
}

/// Runs git with `input` on its standard input.
async fn git_with_input(
    snapshots: &GcTarget<'_>,
    args: &[&str],
    input: Option<&[u8]>,
) -> Result<Vec<u8>, String> {
    let mut command = crate::git::hardened_git(snapshots.git_dir());
    command.args(args);
    if input.is_some() {
        command.stdin(std::process::Stdio::piped());
    }
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

/// `git gc --prune=<age ago>`.
async fn gc(snapshots: &GcTarget<'_>, age: Duration) -> Result<(), String> {
    let prune = if age.is_zero() {
        "--prune=now".to_owned()
    } else {
        format!("--prune={}.seconds.ago", age.as_secs())
    };
    git(snapshots, &["gc", "--quiet", &prune]).await.map(drop)
}

/// The bytes of every file under `dir` (symbolic links not followed).
pub(super) async fn dir_size(dir: &Path) -> u64 {
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let mut total = 0u64;
        let mut pending = vec![dir];
        while let Some(dir) = pending.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries.flatten() {
                let Ok(meta) = entry.path().symlink_metadata() else { continue };
                if meta.is_dir() {
                    pending.push(entry.path());
                } else {
                    total = total.saturating_add(meta.len());
                }
            }
        }
        total
    })
    .await
    .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_13_a_pass_is_due_once_per_interval() {
        let day = Duration::from_secs(86_400);
        assert!(is_due(None, 1_000, day));
        assert!(!is_due(Some(1_000), 1_000 + 86_399_999, day));
        assert!(is_due(Some(1_000), 1_000 + 86_400_000, day));
        // A stamp from the future (the clock was set back) does not block passes for good.
        assert!(is_due(Some(5_000), 1_000, day));
    }
}
