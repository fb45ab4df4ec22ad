//! The built-in tools must not write inside `.git` (the repository's config and hooks
//! run programs at the user's next `git` command, outside any sandbox), at any depth and through
//! a symlink, unless an `edit` rule names the path. The control shows the attack's setup is
//! real: with `core.fsmonitor` set, a plain `git status` runs the script and it leaves a marker.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;

use serde_json::json;
use session_core::permission::{Action, Rule};
use session_tools::ToolError;

use super::support::{Fixture, ScriptedAsker, build_rules};

/// A real repository in the workspace (and one nested in `sub/`), with a hook script outside
/// `.git` that would leave `marker` when run.
fn setup(rules: Vec<Rule>) -> Fixture {
    let fx = Fixture::with(ScriptedAsker::rejecting(), rules, None);
    for repo in [fx.root.clone(), fx.root.join("sub")] {
        std::fs::create_dir_all(&repo).unwrap();
        let status = Command::new("git").arg("init").arg("-q").arg(&repo).status().unwrap();
        assert!(status.success());
    }
    let script = fx.outside.join("monitor.sh");
    std::fs::write(&script, format!("#!/bin/sh\ntouch '{}'\n", fx.outside.join("marker").display())).unwrap();
    make_executable(&script);
    fx
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn fsmonitor_line(fx: &Fixture) -> String {
    format!("\tfsmonitor = {}\n", fx.outside.join("monitor.sh").display())
}

/// The call was refused by the `.git` guard, with a message that tells the model why.
fn assert_refused(result: Result<session_tools::ToolSuccess, ToolError>) {
    match result {
        Err(error) => assert!(error.to_string().contains("inside a .git folder"), "{error}"),
        Ok(result) => panic!("the write into .git went through: {}", result.output),
    }
}

/// `git status` in `repo` leaves no marker: no fsmonitor or hook the tools wrote ran.
fn assert_git_runs_nothing(fx: &Fixture, repo: &Path) {
    let _ = Command::new("git").arg("-C").arg(repo).arg("status").output().unwrap();
    let _ = Command::new("git").arg("-C").arg(repo).args(["checkout", "-q", "-b", "other"]).output().unwrap();
    assert!(!fx.outside.join("marker").exists(), "a program the tools wrote into .git ran");
}

#[tokio::test]
async fn edit_of_git_config_adding_an_fsmonitor_is_refused() {
    let fx = setup(build_rules());
    let config = fx.root.join(".git/config");
    let before = std::fs::read_to_string(&config).unwrap();
    let result = fx
        .run(
            "edit",
            json!({"filePath": ".git/config", "oldString": "[core]\n", "newString": format!("[core]\n{}", fsmonitor_line(&fx))}),
        )
        .await;
    assert_refused(result);
    assert_eq!(std::fs::read_to_string(&config).unwrap(), before);
    assert_git_runs_nothing(&fx, &fx.root);
}

#[tokio::test]
async fn write_of_a_post_checkout_hook_is_refused() {
    let fx = setup(build_rules());
    let hook = fx.root.join(".git/hooks/post-checkout");
    let body = format!("#!/bin/sh\ntouch '{}'\n", fx.outside.join("marker").display());
    let result = fx.run("write", json!({"filePath": ".git/hooks/post-checkout", "content": body})).await;
    assert_refused(result);
    assert!(!hook.exists());
    assert_git_runs_nothing(&fx, &fx.root);
}

#[tokio::test]
async fn a_nested_repository_git_config_is_refused() {
    let fx = setup(build_rules());
    let config = fx.root.join("sub/.git/config");
    let before = std::fs::read_to_string(&config).unwrap();
    let content = format!("{before}[core]\n{}", fsmonitor_line(&fx));
    assert_refused(fx.run("write", json!({"filePath": "sub/.git/config", "content": content})).await);
    assert_refused(
        fx.run(
            "edit",
            json!({"filePath": "sub/.GIT/config", "oldString": "[core]", "newString": "[core]\n"}),
        )
        .await,
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), before);
    assert_git_runs_nothing(&fx, &fx.root.join("sub"));
}

#[tokio::test]
async fn a_symlink_to_git_is_refused_on_where_it_leads() {
    let fx = setup(build_rules());
    symlink(fx.root.join(".git"), fx.root.join("link")).unwrap();
    symlink(fx.root.join(".git/config"), fx.root.join("config-link")).unwrap();
    let config = fx.root.join(".git/config");
    let before = std::fs::read_to_string(&config).unwrap();
    let content = format!("{before}[core]\n{}", fsmonitor_line(&fx));
    assert_refused(fx.run("write", json!({"filePath": "link/config", "content": content.clone()})).await);
    assert_refused(fx.run("write", json!({"filePath": "config-link", "content": content})).await);
    let body = "#!/bin/sh\nexit 0\n";
    assert_refused(fx.run("write", json!({"filePath": "link/hooks/post-checkout", "content": body})).await);
    assert_eq!(std::fs::read_to_string(&config).unwrap(), before);
    assert!(!fx.root.join(".git/hooks/post-checkout").exists());
    assert_git_runs_nothing(&fx, &fx.root);
}

#[tokio::test]
async fn files_beside_git_and_named_like_it_are_still_written() {
    let fx = setup(build_rules());
    fx.run("write", json!({"filePath": ".github/workflows/ci.yml", "content": "on: push\n"})).await.unwrap();
    fx.run("write", json!({"filePath": "notes.git", "content": "x\n"})).await.unwrap();
    assert_eq!(std::fs::read_to_string(fx.root.join(".github/workflows/ci.yml")).unwrap(), "on: push\n");
}

#[tokio::test]
async fn control_an_explicit_rule_naming_git_lets_the_write_through_and_git_then_runs_it() {
    let mut rules = build_rules();
    rules.push(Rule::new("edit", ".git/**", Action::Allow));
    let fx = setup(rules);
    let config = fx.root.join(".git/config");
    let before = std::fs::read_to_string(&config).unwrap();
    let content = format!("{before}[core]\n{}", fsmonitor_line(&fx));
    fx.run("write", json!({"filePath": ".git/config", "content": content.clone()})).await.unwrap();
    assert_eq!(std::fs::read_to_string(&config).unwrap(), content);
    // The attack is real: a plain `git status` now runs the fsmonitor script.
    let _ = Command::new("git").arg("-C").arg(&fx.root).arg("status").output().unwrap();
    assert!(fx.outside.join("marker").exists(), "git did not run the fsmonitor: the control shows nothing");
}
