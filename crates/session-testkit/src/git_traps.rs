//! A git repository the model has booby-trapped, for the tests that show the runtime's own
//! git reading runs none of it: every place a repository can name a program the `git` binary
//! runs, each a script that leaves a marker file when run.
//!
//! - the repository's own config: `core.fsmonitor`, `core.hooksPath` (with `post-index-change`,
//!   `pre-commit` and `reference-transaction` hooks), `diff.external`, and the `filter.trap`
//!   (`clean`, `smudge`, `process`) and `diff.trap.textconv` drivers a `.gitattributes` names
//!   for every file;
//! - a submodule (a gitlink in the index, its repository inside the worktree) whose own config
//!   sets `core.fsmonitor` (`git status` looks into submodules);
//! - a nested repository `git init`ed in a plain folder, with the same fsmonitor.
//!
//! The worktree then has a modified file, a deleted one and an untracked one.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The traps of one repository and the folder their markers land in.
#[derive(Debug, Clone)]
pub struct GitTraps {
    /// The folder each trap writes its marker into (outside the repository).
    pub markers: PathBuf,
}

impl GitTraps {
    /// The names of the traps that ran since the last [`GitTraps::reset`], sorted.
    pub fn fired(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.markers)
            .map(|entries| {
                entries.flatten().map(|entry| entry.file_name().to_string_lossy().into_owned()).collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    /// Forgets the markers written so far.
    pub fn reset(&self) {
        let _ = std::fs::remove_dir_all(&self.markers);
        let _ = std::fs::create_dir_all(&self.markers);
    }
}

/// Runs git in `dir` with only this repository's config (the machine's and user's left out),
/// panicking when it fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .output()
        .unwrap_or_else(|error| panic!("git {args:?} did not run: {error}"));
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// An executable script at `path` that writes the marker `name` into `markers`, then runs
/// `then` (shell).
fn trap(path: &Path, markers: &Path, name: &str, then: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    let script = format!("#!/bin/sh\necho ran >> '{}/{name}'\n{then}\n", markers.display());
    std::fs::write(path, script).unwrap_or_else(|error| panic!("{error}"));
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .unwrap_or_else(|error| panic!("{error}"));
}

/// Sets `core.fsmonitor` of the repository in `dir` to a trap named `name`.
fn trap_fsmonitor(dir: &Path, scripts: &Path, markers: &Path, name: &str) {
    let script = scripts.join(name);
    // A failing hook: git then falls back to looking at every file.
    trap(&script, markers, name, "exit 1");
    git(dir, &["config", "core.fsmonitor", &script.display().to_string()]);
}

/// Makes `project` (an existing folder) a booby-trapped repository with a commit; its trap
/// scripts go in `scripts` and their markers in `markers` (both outside `project`).
pub fn git_traps(project: &Path, scripts: &Path, markers: &Path) -> GitTraps {
    let write = |path: &Path, text: &str| {
        std::fs::create_dir_all(path.parent().unwrap_or(path)).unwrap_or_else(|error| panic!("{error}"));
        std::fs::write(path, text).unwrap_or_else(|error| panic!("{error}"));
    };
    std::fs::create_dir_all(scripts).unwrap_or_else(|error| panic!("{error}"));
    // The submodule's own repository, made first and committed.
    let sub = project.join("sub");
    std::fs::create_dir_all(&sub).unwrap_or_else(|error| panic!("{error}"));
    git(&sub, &["init", "--quiet"]);
    write(&sub.join("lib.txt"), "lib\n");
    git(&sub, &["add", "lib.txt"]);
    git(&sub, &["commit", "--quiet", "-m", "sub"]);

    git(project, &["init", "--quiet"]);
    write(&project.join("README.md"), "# app\n\nA tiny CLI.\n");
    write(&project.join("gone.txt"), "one\ntwo\n");
    write(&project.join(".gitattributes"), "* filter=trap diff=trap\n");
    git(project, &["add", "README.md", "gone.txt", ".gitattributes", "sub"]);
    git(project, &["commit", "--quiet", "-m", "first"]);

    // Armed only now: the commits above ran none of it.
    trap_fsmonitor(project, scripts, markers, "fsmonitor");
    trap_fsmonitor(&sub, scripts, markers, "submodule-fsmonitor");
    let hooks = scripts.join("hooks");
    std::fs::create_dir_all(&hooks).unwrap_or_else(|error| panic!("{error}"));
    for hook in ["post-index-change", "pre-commit", "reference-transaction", "pre-auto-gc"] {
        trap(&hooks.join(hook), markers, &format!("hook-{hook}"), "exit 0");
    }
    git(project, &["config", "core.hooksPath", &hooks.display().to_string()]);
    trap(&scripts.join("clean"), markers, "filter-clean", "cat");
    trap(&scripts.join("smudge"), markers, "filter-smudge", "cat");
    trap(&scripts.join("textconv"), markers, "textconv", "cat \"$1\"");
    trap(&scripts.join("external-diff"), markers, "external-diff", "exit 0");
    for (key, script) in [
        ("filter.trap.clean", "clean"),
        ("filter.trap.smudge", "smudge"),
        ("diff.trap.textconv", "textconv"),
        ("diff.external", "external-diff"),
    ] {
        git(project, &["config", key, &scripts.join(script).display().to_string()]);
    }
    git(project, &["config", "filter.trap.required", "true"]);

    // A nested repository the model `git init`ed in a folder of its own.
    let nested = project.join("vendor/nested");
    std::fs::create_dir_all(&nested).unwrap_or_else(|error| panic!("{error}"));
    git(&nested, &["init", "--quiet"]);
    write(&nested.join("x.txt"), "x\n");
    trap_fsmonitor(&nested, scripts, markers, "nested-fsmonitor");

    // Work in progress: one file changed (same size, so git must read it), one gone, one new,
    // and a change inside the submodule.
    write(&project.join("README.md"), "# APP\n\nA tiny CLI.\n");
    std::fs::remove_file(project.join("gone.txt")).unwrap_or_else(|error| panic!("{error}"));
    write(&project.join("new.txt"), "a\nb\nc\n");
    write(&sub.join("lib.txt"), "LIB\n");

    let traps = GitTraps { markers: markers.to_path_buf() };
    traps.reset();
    traps
}

/// What the runtime's `/file/status` ran before it read through libgit2: `git status` and
/// `git diff HEAD --numstat` in the project (the control: these run the traps).
pub fn plain_git_status(project: &Path) {
    git(project, &["status", "--porcelain=v1", "--untracked-files=all", "--no-renames"]);
    git(project, &["diff", "HEAD", "--numstat", "--no-renames"]);
}
