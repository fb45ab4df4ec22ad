//! Snapshot housekeeping (SPEC 13 `cleanup`, bounded) on a real git repository: many large
//! snapshots, then one pass, then the store's size and object count measured. Object ages are
//! not faked: the tests use a zero grace and age, which prune by reachability alone.

use std::path::Path;
use std::time::Duration;

use session_runtime::snapshot::{GitSnapshotter, SnapshotRetention, Snapshotter};

use super::support::git;

/// Bytes that do not compress: each snapshot of a changed file adds its full size.
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect()
}

fn dir_size(dir: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let meta = entry.path().symlink_metadata().unwrap();
        total += if meta.is_dir() { dir_size(&entry.path()) } else { meta.len() };
    }
    total
}

/// Loose plus packed objects, from `git count-objects -v`.
fn object_count(git_dir: &Path) -> u64 {
    let out = std::process::Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .args(["count-objects", "-v"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| line.strip_prefix("count: ").or_else(|| line.strip_prefix("in-pack: ")))
        .map(|n| n.trim().parse::<u64>().unwrap())
        .sum()
}

fn exists(git_dir: &Path, object: &str) -> bool {
    std::process::Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .args(["cat-file", "-e", object])
        .status()
        .unwrap()
        .success()
}

const SNAPSHOTS: u64 = 30;
const FILE_BYTES: usize = 256 * 1024;

/// A worktree in a fresh repository and `SNAPSHOTS` snapshots of it, each with a new
/// `data.bin`; returns the snapshotter and the hashes, oldest first.
async fn many_snapshots(root: &Path, retention: SnapshotRetention) -> (GitSnapshotter, Vec<String>) {
    let work = root.join("work");
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "--quiet"]);
    std::fs::write(work.join("main.rs"), "fn main() {}\n").unwrap();
    let snapshots = GitSnapshotter::open(&work, &root.join("data")).await.unwrap().with_retention(retention);
    let mut hashes = Vec::new();
    for n in 0..SNAPSHOTS {
        std::fs::write(work.join("data.bin"), noise(n, FILE_BYTES)).unwrap();
        hashes.push(snapshots.track().await.unwrap());
    }
    (snapshots, hashes)
}

#[tokio::test]
async fn spec_13_snapshot_gc_keeps_store_bounded() {
    let root = tempfile::tempdir().unwrap();
    let bound = 2 * 1024 * 1024;
    let retention =
        SnapshotRetention { max_bytes: bound, grace: Duration::ZERO, ..SnapshotRetention::default() };
    let (snapshots, hashes) = many_snapshots(root.path(), retention).await;
    let git_dir = snapshots.git_dir().to_path_buf();
    let before = (dir_size(&git_dir), object_count(&git_dir));
    assert!(before.0 > 6 * 1024 * 1024, "{before:?}");

    // Every snapshot is still named by a session: the bound wins over keeping them.
    let report = snapshots.housekeep(&hashes).await.unwrap();
    let after = (dir_size(&git_dir), object_count(&git_dir));
    eprintln!("snapshot store before {before:?}, after {after:?} (bytes, objects), report {report:?}");
    assert_eq!(report.stage, 3);
    assert_eq!(report.bytes_after, after.0);
    assert!(after.0 <= bound, "{after:?} over the bound of {bound} bytes");
    // What stays is the worktree as last staged: its two files and their trees.
    assert!(after.1 < before.1 && after.1 <= 4, "{after:?}");
    assert!(!exists(&git_dir, &hashes[0]), "the oldest snapshot is gone");
    // Staging and tracking still work afterwards.
    assert!(snapshots.track().await.is_some());
}

#[tokio::test]
async fn spec_13_snapshot_gc_prunes_unreferenced_and_keeps_referenced() {
    let root = tempfile::tempdir().unwrap();
    let retention =
        SnapshotRetention { max_age: Duration::ZERO, grace: Duration::ZERO, ..SnapshotRetention::default() };
    let (snapshots, hashes) = many_snapshots(root.path(), retention).await;
    let git_dir = snapshots.git_dir().to_path_buf();
    let before = dir_size(&git_dir);
    let (kept, also) = (&hashes[3], &hashes[5]);
    let named = [kept.clone(), also.clone(), "not a hash\n".into(), "0".repeat(40)];
    let report = snapshots.housekeep(&named).await.unwrap();
    assert_eq!((report.stage, report.kept), (1, 2), "{report:?}");
    // The named snapshot survives with its content; the others, unnamed, are gone.
    assert!(exists(&git_dir, &format!("{kept}:data.bin")));
    assert!(!exists(&git_dir, &hashes[0]) && !exists(&git_dir, &hashes[10]));
    let after = dir_size(&git_dir);
    assert!(after < before / 4, "{before} -> {after}");
    let diff = snapshots.diff_trees(kept, also).await.unwrap();
    assert_eq!(diff.iter().map(|d| d.file.as_str()).collect::<Vec<_>>(), ["data.bin"]);
}

#[tokio::test]
async fn spec_13_snapshot_gc_runs_at_most_once_per_interval() {
    let root = tempfile::tempdir().unwrap();
    let work = root.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "--quiet"]);
    let snapshots = GitSnapshotter::open(&work, &root.path().join("data")).await.unwrap();
    let day = 86_400_000;
    let now = 10 * day;
    assert_eq!(
        snapshots.claim_housekeeping(now).await,
        Some(now - 7 * day),
        "sessions of the last 7 days keep theirs"
    );
    assert_eq!(snapshots.claim_housekeeping(now + 1).await, None);
    assert_eq!(snapshots.claim_housekeeping(now + day - 1).await, None);
    assert!(snapshots.claim_housekeeping(now + day).await.is_some());
}

/// Snapshots (libgit2) and their housekeeping (the one `git` process, built
/// hardened) of a project the model booby-trapped run none of its programs; the control runs
/// plain `git status` there and the traps fire.
#[tokio::test]
async fn snapshots_and_housekeeping_run_none_of_a_trapped_repositorys_programs() {
    let root = tempfile::tempdir().unwrap();
    let work = root.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let traps = session_testkit::git_traps(&work, &root.path().join("scripts"), &root.path().join("markers"));
    let retention = SnapshotRetention {
        max_age: Duration::ZERO,
        max_bytes: 0,
        grace: Duration::ZERO,
        ..SnapshotRetention::default()
    };
    let snapshots =
        GitSnapshotter::open(&work, &root.path().join("data")).await.unwrap().with_retention(retention);
    let first = snapshots.track().await.unwrap();
    std::fs::write(work.join("README.md"), "# App\n\nChanged.\n").unwrap();
    assert_eq!(snapshots.patch(&first).await, [work.join("README.md").display().to_string()]);
    assert!(snapshots.diff(&first).await.unwrap().contains("+Changed."));
    let second = snapshots.track().await.unwrap();
    snapshots.restore(&first, &[work.join("README.md").display().to_string()]).await.unwrap();
    let report = snapshots.housekeep(&[first, second]).await.unwrap();
    assert_eq!(report.stage, 3, "{report:?}");
    assert_eq!(traps.fired(), Vec::<String>::new(), "the runtime's git ran the repository's programs");

    session_testkit::plain_git_status(&work);
    assert!(traps.fired().contains(&"fsmonitor".to_owned()), "{:?}", traps.fired());
}
