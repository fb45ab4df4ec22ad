//! The command sandbox through the real `session` binary: a model's command that writes outside
//! the project and into `.git/hooks` is refused by the kernel under the default config, and the
//! model is told what was refused; `session sandbox check` reports the kernel and the config.
//!
//! The project lives under the target dir, not in `/tmp` (which the sandbox leaves writable).

use std::path::Path;
use std::process::Command;

use session_e2e::session_binary;
use session_llm::{Api, RequestKind, Script};
use session_testkit::TestServer;

fn run(root: &Path, args: &[&str]) -> std::process::Output {
    Command::new(session_binary().unwrap())
        .args(args)
        .current_dir(root.join("project"))
        .env("HOME", root)
        .env("XDG_DATA_HOME", root.join("data"))
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("SESSION_CONFIG")
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_models_command_cannot_write_outside_the_project_or_into_git() {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(base).unwrap();
    let dir = tempfile::tempdir_in(base).unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let outside = root.join("outside-file");
    let command = format!(
        "echo pwned > {}; echo hook > .git/hooks/pre-commit; echo inside > inside-file",
        outside.display()
    );
    let script = serde_json::json!({"turns": [
        {"text": "Trying.", "calls": [{"op": "bash", "command": command, "description": "Write around"}]},
        {"text": "Done."}]});
    let server = TestServer::start(Script::from_json(&script.to_string()).unwrap()).await.unwrap();
    let project = root.join("project");
    session_e2e::mock_project(&project, &server.base_url(Api::OpenAiChat), 32_000, 4_000).unwrap();
    std::fs::create_dir_all(project.join(".git/hooks")).unwrap();
    let out = tokio::task::spawn_blocking({
        let root = root.clone();
        move || run(&root, &["run", "--model", "mock/m", "--yes", "write around"])
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!outside.exists(), "the command wrote outside the project");
    assert!(!project.join(".git/hooks/pre-commit").exists(), "the command installed a hook");
    assert_eq!(std::fs::read_to_string(project.join("inside-file")).unwrap(), "inside\n");
    let sent: String = server
        .requests()
        .iter()
        .filter(|r| r.kind == RequestKind::Main)
        .map(|r| r.body.to_string())
        .collect();
    assert!(sent.contains("this command ran in the workspace-write sandbox"), "{sent}");
    assert!(sent.contains(&format!("write to {}", outside.display())), "{sent}");
    assert!(sent.contains("pre-commit: Read-only file system"), "{sent}");
    server.shutdown().await;
}

#[test]
fn sandbox_check_reports_the_kernel_and_the_config() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("project")).unwrap();
    std::fs::write(
        root.join("project/session.json"),
        r#"{"sandbox": {"mode": "read-only", "network": true}}"#,
    )
    .unwrap();
    session_testkit::trust_folder(root, &root.join("project")).unwrap();
    let out = run(root, &["sandbox", "check"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("landlock:   ABI"), "{stdout}");
    assert!(stdout.contains("mode:         read-only"), "{stdout}");
    assert!(stdout.contains("network:      allowed"), "{stdout}");
    assert!(stdout.contains("build agent: confined, read-only; network allowed"), "{stdout}");
}
