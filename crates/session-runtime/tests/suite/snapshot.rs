//! The in-process snapshotter (SPEC 13, libgit2) on real folders: a git repository and one
//! that is not, read back with the `git` binary as a user inspecting the store would.

use std::path::{Path, PathBuf};
use std::process::Command;

use session_runtime::snapshot::{GitSnapshotter, MAX_UNTRACKED_BYTES, Snapshotter};

use super::support::git;

/// `git --git-dir <git_dir> <args>`'s standard output; the command must succeed.
fn inspect(git_dir: &Path, worktree: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .arg("--work-tree")
        .arg(worktree)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn absolute(worktree: &Path, relative: &str) -> String {
    worktree.join(relative).to_string_lossy().into_owned()
}

struct Folder {
    _dir: tempfile::TempDir,
    work: PathBuf,
    data: PathBuf,
}

fn folder(git_repository: bool) -> Folder {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("work")).unwrap();
    let work = dir.path().join("work").canonicalize().unwrap();
    if git_repository {
        git(&work, &["init", "--quiet"]);
    }
    let data = dir.path().join("data");
    Folder { _dir: dir, work, data }
}

#[tokio::test]
async fn spec_13_a_folder_that_is_not_a_git_repository_is_snapshotted_without_its_caches() {
    let f = folder(false);
    write(&f.work.join("src/main.rs"), "fn main() {}\n");
    write(&f.work.join("node_modules/left-pad/index.js"), "module.exports = 1;\n");
    write(&f.work.join("__pycache__/x.pyc"), "cache");
    let snapshots = GitSnapshotter::open(&f.work, &f.data).await.expect("snapshots outside git");
    assert!(!f.work.join(".git").exists(), "no repository appears in the user's folder");

    let before = snapshots.track().await.expect("a tree");
    let listed = inspect(snapshots.git_dir(), &f.work, &["ls-tree", "-r", "--name-only", &before]);
    assert_eq!(listed, "src/main.rs\n", "the dependency caches stay out");

    write(&f.work.join("src/main.rs"), "fn main() { println!(\"hi\"); }\n");
    write(&f.work.join("src/new.rs"), "pub fn new() {}\n");
    write(&f.work.join("node_modules/left-pad/index.js"), "module.exports = 2;\n");
    let mut changed = snapshots.patch(&before).await;
    changed.sort();
    assert_eq!(changed, [absolute(&f.work, "src/main.rs"), absolute(&f.work, "src/new.rs")]);

    snapshots.restore(&before, &changed).await.unwrap();
    assert_eq!(std::fs::read_to_string(f.work.join("src/main.rs")).unwrap(), "fn main() {}\n");
    assert!(!f.work.join("src/new.rs").exists(), "a file the step created goes on revert");
    assert_eq!(snapshots.track().await.as_deref(), Some(before.as_str()), "back to the same tree");
}

#[tokio::test]
async fn spec_13_snapshots_read_as_git_and_leave_the_users_repository_alone() {
    let f = folder(true);
    write(&f.work.join("a.txt"), "one\n");
    write(&f.work.join(".gitignore"), "build/\n");
    write(&f.work.join("build/out.bin"), "ignored");
    git(&f.work, &["add", "a.txt"]);
    let user_index = std::fs::read(f.work.join(".git/index")).unwrap();
    let snapshots = GitSnapshotter::open(&f.work, &f.data).await.unwrap();

    let first = snapshots.track().await.unwrap();
    assert_eq!(snapshots.track().await.as_deref(), Some(first.as_str()), "nothing changed, same tree");
    let listed = inspect(snapshots.git_dir(), &f.work, &["ls-tree", "-r", "--name-only", &first]);
    assert_eq!(listed, ".gitignore\na.txt\n", "the user's .git and ignored files are not snapshotted");
    assert_eq!(inspect(snapshots.git_dir(), &f.work, &["cat-file", "-t", &first]), "tree\n");

    // A new file over the size limit stays out; a tracked file that grows stays in.
    let big = "x".repeat(usize::try_from(MAX_UNTRACKED_BYTES).unwrap() + 1);
    write(&f.work.join("big.log"), &big);
    write(&f.work.join("a.txt"), "one\ntwo\n");
    std::fs::remove_file(f.work.join(".gitignore")).unwrap();
    let second = snapshots.track().await.unwrap();
    let listed = inspect(snapshots.git_dir(), &f.work, &["ls-tree", "-r", "--name-only", &second]);
    assert!(
        listed.contains("a.txt") && !listed.contains("big.log") && !listed.contains(".gitignore"),
        "{listed}"
    );
    // Without .gitignore the build folder is now snapshotted, as git add --all would.
    assert!(listed.contains("build/out.bin"), "{listed}");

    // The text diff and the per-file counts agree with git's own.
    let text = snapshots.diff(&first).await.unwrap();
    assert!(text.contains("diff --git a/a.txt b/a.txt") && text.contains("\n+two\n"), "{text}");
    let files = snapshots.diff_trees(&first, &second).await.unwrap();
    let summary: Vec<(&str, u64, u64)> =
        files.iter().map(|f| (f.file.as_str(), f.additions, f.deletions)).collect();
    assert_eq!(summary, [(".gitignore", 0, 1), ("a.txt", 1, 0), ("build/out.bin", 1, 0)]);
    let numstat = inspect(snapshots.git_dir(), &f.work, &["diff", "--numstat", &first, &second]);
    assert_eq!(numstat, "0\t1\t.gitignore\n1\t0\ta.txt\n1\t0\tbuild/out.bin\n");

    assert_eq!(
        std::fs::read(f.work.join(".git/index")).unwrap(),
        user_index,
        "the user's index is untouched"
    );
    assert!(snapshots.diff_trees(&first, "not-a-hash").await.is_none());
    assert!(snapshots.check_restore(&"0".repeat(40), &[]).await.is_err(), "a tree that does not exist");
}

#[tokio::test]
async fn issue_39_a_restore_never_touches_a_git_folder() {
    let f = folder(true);
    write(&f.work.join("a.txt"), "one\n");
    let snapshots = GitSnapshotter::open(&f.work, &f.data).await.unwrap();
    let before = snapshots.track().await.unwrap();
    let config = std::fs::read(f.work.join(".git/config")).unwrap();
    // A forged patch names the repository's config and a nested repository's hook: restoring
    // them from a tree that lacks them would delete them.
    for forged in [".git/config", "sub/.git/hooks/post-checkout", ".GIT/config"] {
        let files = [absolute(&f.work, forged)];
        assert!(snapshots.check_restore(&before, &files).await.is_err(), "{forged}");
        assert!(snapshots.restore(&before, &files).await.is_err(), "{forged}");
    }
    assert_eq!(std::fs::read(f.work.join(".git/config")).unwrap(), config);
    // Control: the same restore of a plain file goes through.
    write(&f.work.join("a.txt"), "two\n");
    snapshots.restore(&before, &[absolute(&f.work, "a.txt")]).await.unwrap();
    assert_eq!(std::fs::read_to_string(f.work.join("a.txt")).unwrap(), "one\n");
}

#[tokio::test]
async fn spec_13_a_restore_takes_exact_names_and_keeps_symlinks_as_links() {
    let f = folder(true);
    write(&f.work.join("a*.txt"), "star\n");
    write(&f.work.join("ab.txt"), "ab\n");
    #[cfg(unix)]
    std::os::unix::fs::symlink("ab.txt", f.work.join("link")).unwrap();
    let snapshots = GitSnapshotter::open(&f.work, &f.data).await.unwrap();
    let before = snapshots.track().await.unwrap();

    write(&f.work.join("a*.txt"), "changed\n");
    write(&f.work.join("ab.txt"), "changed\n");
    #[cfg(unix)]
    {
        std::fs::remove_file(f.work.join("link")).unwrap();
        write(&f.work.join("link"), "now a file\n");
    }
    let mut restore = vec![absolute(&f.work, "a*.txt")];
    if cfg!(unix) {
        restore.push(absolute(&f.work, "link"));
    }
    snapshots.restore(&before, &restore).await.unwrap();
    assert_eq!(std::fs::read_to_string(f.work.join("a*.txt")).unwrap(), "star\n");
    assert_eq!(
        std::fs::read_to_string(f.work.join("ab.txt")).unwrap(),
        "changed\n",
        "`*` matched only itself"
    );
    #[cfg(unix)]
    assert_eq!(std::fs::read_link(f.work.join("link")).unwrap(), Path::new("ab.txt"));
}

#[tokio::test]
async fn spec_13_a_snapshot_directory_made_by_the_git_binary_opens_and_reports_its_size() {
    let f = folder(true);
    write(&f.work.join("a.txt"), "one\n");
    // The layout earlier versions made with `git init` (a git dir of its own, no core.worktree).
    let first = GitSnapshotter::open(&f.work, &f.data).await.unwrap();
    let git_dir = first.git_dir().to_path_buf();
    drop(first);
    std::fs::remove_dir_all(&git_dir).unwrap();
    std::fs::create_dir_all(&git_dir).unwrap();
    let status =
        Command::new("git").arg("--git-dir").arg(&git_dir).args(["init", "--quiet"]).status().unwrap();
    assert!(status.success());

    let snapshots = GitSnapshotter::open(&f.work, &f.data).await.unwrap();
    assert_eq!(snapshots.git_dir(), git_dir);
    let tree = snapshots.track().await.unwrap();
    assert_eq!(inspect(&git_dir, &f.work, &["ls-tree", "--name-only", &tree]), "a.txt\n");
    let report = snapshots.store_report().await;
    assert!(report.bytes > 0 && report.bytes < report.max_bytes, "{report:?}");
    assert_eq!(report.last_housekeeping_ms, None, "no pass ran yet");
}

#[tokio::test]
async fn spec_13_the_patch_between_two_snapshots_is_the_patch_right_after_the_second() {
    let f = folder(true);
    write(&f.work.join("src/keep.rs"), "pub fn keep() {}\n");
    write(&f.work.join("src/edit.rs"), "pub fn edit() {}\n");
    write(&f.work.join("src/gone.rs"), "pub fn gone() {}\n");
    let snapshots = GitSnapshotter::open(&f.work, &f.data).await.expect("snapshots");
    let start = snapshots.track().await.expect("the start snapshot");
    // A step that only read: the same tree, and no patch.
    let same = snapshots.track().await.expect("an unchanged snapshot");
    assert_eq!(same, start);
    assert!(snapshots.patch_between(&start, &same).await.is_empty());
    // A step that wrote, created and deleted files.
    write(&f.work.join("src/edit.rs"), "pub fn edit() { todo!() }\n");
    write(&f.work.join("src/new.rs"), "pub fn new() {}\n");
    std::fs::remove_file(f.work.join("src/gone.rs")).unwrap();
    let finish = snapshots.track().await.expect("the finish snapshot");
    let mut between = snapshots.patch_between(&start, &finish).await;
    let mut since = snapshots.patch(&start).await;
    between.sort();
    since.sort();
    let expected: Vec<String> =
        ["src/edit.rs", "src/gone.rs", "src/new.rs"].iter().map(|file| absolute(&f.work, file)).collect();
    assert_eq!(between, expected);
    assert_eq!(since, expected, "the two trees' patch is the worktree's patch right after the second");
    // A hash that names no snapshot gives an empty patch, as `patch` does on a git failure.
    assert!(snapshots.patch_between(&start, &"0".repeat(40)).await.is_empty());
}
