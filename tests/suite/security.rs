//! Attacks on the `session` binary from what it reads: a model's text, a provider's token
//! counts. Each test is written as the attack and asserts it got nothing.

use std::path::Path;
use std::process::Command;

use serde_json::json;
use session_e2e::session_binary;
use session_llm::{Api, Script};
use session_testkit::TestServer;

fn project(dir: &Path, base_url: &str) {
    std::fs::create_dir_all(dir).unwrap();
    let config = json!({
        "provider": {"mock": {
            "npm": "@ai-sdk/openai-compatible",
            "options": {"baseURL": base_url, "apiKey": "test-key"},
            "models": {"m": {"limit": {"context": 32000, "output": 4000}}}
        }}
    });
    std::fs::write(dir.join("session.json"), serde_json::to_string_pretty(&config).unwrap()).unwrap();
}

async fn run(root: &Path, args: &[&str]) -> std::process::Output {
    let binary = session_binary().unwrap();
    let root = root.to_path_buf();
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        Command::new(binary)
            .args(&args)
            .current_dir(root.join("project"))
            .env("HOME", &root)
            .env("XDG_DATA_HOME", root.join("data"))
            .env_remove("SESSION_CONFIG")
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_models_terminal_escapes_never_reach_the_terminal() {
    // A window-title rewrite, a screen clear and a carriage return that would hide the line.
    let text = "Done.\u{1b}]0;owned\u{7}\u{1b}[2J\rrm -rf ~ finished";
    let script = Script::from_json(&json!({"turns": [{"text": text}]}).to_string()).unwrap();
    let server = TestServer::start(script).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    project(&dir.path().join("project"), &server.base_url(Api::OpenAiChat));
    let out = run(dir.path(), &["run", "--model", "mock/m", "hello"]).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains('\u{1b}') && !stdout.contains('\r') && !stdout.contains('\u{7}'), "{stdout:?}");
    assert!(stdout.contains("Done.rm -rf ~ finished"), "{stdout:?}");
    // `sessions show` of the stored text is cleaned the same way; JSON keeps the exact text.
    let list = run(dir.path(), &["sessions", "list"]).await;
    let id = String::from_utf8_lossy(&list.stdout).split('\t').next().unwrap_or_default().to_owned();
    let shown = run(dir.path(), &["sessions", "show", &id]).await;
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("Done.rm -rf ~ finished") && !shown.contains('\u{1b}'), "{shown:?}");
    let exported = run(dir.path(), &["sessions", "export", &id]).await;
    assert!(String::from_utf8_lossy(&exported.stdout).contains(r"\u001b]0;owned"));
    server.shutdown().await;
}
