//! Escape attempts by the file tools. Every one must end in an `external_directory` ask (here
//! rejected) or a refusal, and none may read or write outside the workspace.

use std::os::unix::fs::symlink;

use serde_json::{Value, json};
use session_core::{permission::Action, permission::PERMISSION_REJECTED_TEXT, permission::Rule};
use session_tools::{PermissionAnswer, ToolError};

use super::support::{Fixture, ScriptedAsker, build_rules, exists};

const SECRET: &str = "TOP-SECRET-CONTENT";

/// A workspace and an outside folder holding `secret.txt` and `dir/inner.txt`.
fn setup() -> Fixture {
    let fx = Fixture::with(ScriptedAsker::rejecting(), build_rules(), Some("home"));
    fx.write_outside("secret.txt", SECRET);
    fx.write_outside("dir/inner.txt", SECRET);
    fx.write_outside("home/.ssh/id_rsa", SECRET);
    fx.write("inside.txt", "fine");
    fx
}

/// The call failed by a rejected `external_directory` ask, and leaked nothing.
fn assert_asked_and_refused(fx: &Fixture, result: Result<session_tools::ToolSuccess, ToolError>) {
    match result {
        Err(error) => {
            assert_eq!(error.to_string(), PERMISSION_REJECTED_TEXT, "{error:?}");
            assert!(!error.to_string().contains(SECRET));
        }
        Ok(result) => panic!("escape succeeded: {}", result.output),
    }
    assert_eq!(
        fx.asker.permissions().last().map(String::as_str),
        Some("external_directory"),
        "{:?}",
        fx.asker.asked()
    );
}

/// The outside folder still holds exactly what setup put there.
fn assert_outside_untouched(fx: &Fixture) {
    assert_eq!(std::fs::read_to_string(fx.outside.join("secret.txt")).unwrap(), SECRET);
    let mut names: Vec<String> = std::fs::read_dir(&fx.outside)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, vec!["dir", "home", "secret.txt"]);
    let inner: Vec<_> = std::fs::read_dir(fx.outside.join("dir")).unwrap().collect();
    assert_eq!(inner.len(), 1);
}

fn rel_to_outside(fx: &Fixture, name: &str) -> String {
    // The workspace and the outside folder are siblings under the temp dir.
    let outside_name = fx.outside.file_name().unwrap().to_string_lossy();
    format!("../{outside_name}/{name}")
}

async fn attempt(fx: &Fixture, tool: &str, input: Value) {
    let result = fx.run(tool, input).await;
    assert_asked_and_refused(fx, result);
    assert_outside_untouched(fx);
}

#[tokio::test]
async fn e01_read_dot_dot() {
    let fx = setup();
    attempt(&fx, "read", json!({"filePath": rel_to_outside(&fx, "secret.txt")})).await;
}

#[tokio::test]
async fn e02_read_absolute() {
    let fx = setup();
    attempt(&fx, "read", json!({"filePath": fx.outside.join("secret.txt")})).await;
}

#[tokio::test]
async fn e03_read_symlink_to_outside_file() {
    let fx = setup();
    symlink(fx.outside.join("secret.txt"), fx.root.join("link.txt")).unwrap();
    attempt(&fx, "read", json!({"filePath": "link.txt"})).await;
}

#[tokio::test]
async fn e04_read_through_symlinked_parent() {
    let fx = setup();
    symlink(fx.outside.join("dir"), fx.root.join("linkdir")).unwrap();
    attempt(&fx, "read", json!({"filePath": "linkdir/inner.txt"})).await;
}

#[tokio::test]
async fn e05_read_tilde_home() {
    let fx = setup();
    attempt(&fx, "read", json!({"filePath": "~/.ssh/id_rsa"})).await;
}

#[tokio::test]
async fn e06_read_tilde_without_known_home_is_refused() {
    let fx = Fixture::new();
    let error = fx.run("read", json!({"filePath": "~/.ssh/id_rsa"})).await.unwrap_err();
    assert!(matches!(error, ToolError::InvalidPath { .. }), "{error:?}");
    let error = fx.run("read", json!({"filePath": "~root/.profile"})).await.unwrap_err();
    assert!(matches!(error, ToolError::InvalidPath { .. }), "{error:?}");
}

#[tokio::test]
async fn e07_read_nested_dot_dot() {
    let fx = setup();
    fx.write("sub/x.txt", "x");
    let path = format!("sub/../{}", rel_to_outside(&fx, "secret.txt"));
    attempt(&fx, "read", json!({"filePath": path})).await;
}

#[tokio::test]
async fn e08_read_dot_dot_after_a_symlinked_folder() {
    let fx = setup();
    // linkdir -> outside/dir, so linkdir/.. is the outside folder, as the kernel sees it.
    symlink(fx.outside.join("dir"), fx.root.join("linkdir")).unwrap();
    attempt(&fx, "read", json!({"filePath": "linkdir/../secret.txt"})).await;
}

#[tokio::test]
async fn e09_read_dot_dot_after_a_missing_folder_then_a_link() {
    let fx = setup();
    symlink(fx.outside.join("dir"), fx.root.join("linkdir")).unwrap();
    attempt(&fx, "read", json!({"filePath": "missing/../linkdir/inner.txt"})).await;
}

#[tokio::test]
async fn e10_write_dot_dot() {
    let fx = setup();
    attempt(&fx, "write", json!({"filePath": rel_to_outside(&fx, "pwned.txt"), "content": "x"})).await;
}

#[tokio::test]
async fn e11_write_absolute_overwrite() {
    let fx = setup();
    attempt(&fx, "write", json!({"filePath": fx.outside.join("secret.txt"), "content": "x"})).await;
}

#[tokio::test]
async fn e12_write_through_symlinked_parent() {
    let fx = setup();
    symlink(fx.outside.join("dir"), fx.root.join("linkdir")).unwrap();
    attempt(&fx, "write", json!({"filePath": "linkdir/pwned.txt", "content": "x"})).await;
}

#[tokio::test]
async fn e13_write_through_dangling_symlink() {
    let fx = setup();
    symlink(fx.outside.join("new.txt"), fx.root.join("dangling")).unwrap();
    attempt(&fx, "write", json!({"filePath": "dangling", "content": "x"})).await;
    assert!(!exists(&fx.outside.join("new.txt")));
}

#[tokio::test]
async fn e14_write_missing_folder_dot_dot_into_a_link() {
    let fx = setup();
    symlink(fx.outside.join("dir"), fx.root.join("linkdir")).unwrap();
    attempt(&fx, "write", json!({"filePath": "newdir/../linkdir/pwned.txt", "content": "x"})).await;
    assert!(!exists(&fx.root.join("newdir")));
}

#[tokio::test]
async fn e15_edit_absolute() {
    let fx = setup();
    attempt(
        &fx,
        "edit",
        json!({"filePath": fx.outside.join("secret.txt"), "oldString": "TOP", "newString": "PWN"}),
    )
    .await;
}

#[tokio::test]
async fn e16_edit_through_symlink() {
    let fx = setup();
    symlink(fx.outside.join("secret.txt"), fx.root.join("link.txt")).unwrap();
    attempt(&fx, "edit", json!({"filePath": "link.txt", "oldString": "TOP", "newString": "PWN"})).await;
}

#[tokio::test]
async fn e17_edit_create_via_empty_old_string_outside() {
    let fx = setup();
    attempt(
        &fx,
        "edit",
        json!({"filePath": rel_to_outside(&fx, "made.txt"), "oldString": "", "newString": "x"}),
    )
    .await;
}

#[tokio::test]
async fn e20_glob_outside_path() {
    let fx = setup();
    attempt(&fx, "glob", json!({"pattern": "*.txt", "path": fx.outside})).await;
}

#[tokio::test]
async fn e21_glob_pattern_cannot_climb_out() {
    let fx = setup();
    for pattern in ["../**/*.txt", "/**/secret.txt", "**/../../*"] {
        let result = fx.run("glob", json!({"pattern": pattern})).await;
        if let Ok(result) = result {
            assert!(!result.output.contains(fx.outside.to_str().unwrap()), "{pattern}: {}", result.output);
        }
    }
    assert_outside_untouched(&fx);
}

#[tokio::test]
async fn e22_grep_outside_path() {
    let fx = setup();
    attempt(&fx, "grep", json!({"pattern": "SECRET", "path": fx.outside.join("secret.txt")})).await;
}

#[tokio::test]
async fn e23_grep_does_not_follow_symlinks_out() {
    let fx = setup();
    symlink(fx.outside.join("secret.txt"), fx.root.join("link.txt")).unwrap();
    symlink(fx.outside.join("dir"), fx.root.join("linkdir")).unwrap();
    let result = fx.run("grep", json!({"pattern": "SECRET"})).await.unwrap();
    assert_eq!(result.output, "No files found");
    assert!(fx.asker.asked().is_empty());
}

#[tokio::test]
async fn e24_bash_workdir_outside() {
    let fx = setup();
    attempt(&fx, "bash", json!({"command": "cat secret.txt", "workdir": fx.outside, "description": "Reads"}))
        .await;
}

#[tokio::test]
async fn e25_nul_byte_in_path_is_refused() {
    let fx = setup();
    let error = fx.run("read", json!({"filePath": "inside.txt\u{0}../../etc/passwd"})).await.unwrap_err();
    assert!(matches!(error, ToolError::InvalidPath { .. }), "{error:?}");
}

#[tokio::test]
async fn e26_a_deny_rule_refuses_without_asking() {
    let mut rules = build_rules();
    rules.push(Rule::new("external_directory", "*", Action::Deny));
    let fx = Fixture::with(ScriptedAsker::rejecting(), rules, None);
    fx.write_outside("secret.txt", SECRET);
    let error = fx.run("read", json!({"filePath": fx.outside.join("secret.txt")})).await.unwrap_err();
    assert!(
        matches!(error, ToolError::Permission(session_core::permission::PermissionError::Denied { .. })),
        "{error:?}"
    );
    assert!(fx.asker.asked().is_empty());
}

#[tokio::test]
async fn e27_the_ask_names_the_outside_folder_and_an_allow_lets_it_through() {
    let fx = setup();
    let result = fx.run("read", json!({"filePath": fx.outside.join("secret.txt")})).await;
    assert_asked_and_refused(&fx, result);
    let ask = fx.asker.asked().pop().unwrap();
    let glob = format!("{}/*", fx.outside.display());
    assert_eq!(ask.request.patterns, vec![glob.clone()]);
    assert_eq!(ask.request.always, vec![glob]);
    assert_eq!(ask.request.metadata["parentDir"], json!(fx.outside.to_str().unwrap()));
    // Control: once the user allows it, the read goes ahead.
    fx.asker.set(|_| Some(PermissionAnswer::once()));
    let result = fx.run("read", json!({"filePath": fx.outside.join("secret.txt")})).await.unwrap();
    assert!(result.output.contains(SECRET));
}

#[tokio::test]
async fn e28_inside_paths_ask_nothing() {
    let fx = setup();
    fx.write("sub/deeper/f.txt", "ok");
    symlink(fx.root.join("sub"), fx.root.join("innerlink")).unwrap();
    for path in ["inside.txt", "./inside.txt", "sub/../inside.txt", "innerlink/deeper/f.txt"] {
        fx.run("read", json!({"filePath": path})).await.unwrap();
    }
    fx.run("read", json!({"filePath": fx.root.join("inside.txt")})).await.unwrap();
    assert!(fx.asker.asked().is_empty());
}
