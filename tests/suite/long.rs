//! A long single-prompt session through `session run`: tool outputs big enough that compaction
//! keeps a tail, against the loopback server. The run must carry on after the summary.

use std::path::Path;
use std::process::Command;

use session_e2e::session_binary;
use session_llm::{Api, RequestKind, Script};
use session_testkit::TestServer;

/// A project whose model has a 20 000-token context, so a few big reads overflow it.
fn project(dir: &Path, base_url: &str) {
    session_e2e::mock_project(dir, base_url, 20_000, 2_000).unwrap();
    let line = |n: usize| format!("{n:04} {}\n", "y".repeat(400));
    std::fs::write(dir.join("big.txt"), (0..70).map(line).collect::<String>()).unwrap();
    std::fs::write(dir.join("notes.txt"), "alpha\nbeta\n").unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spec_10_2_a_long_run_compacts_with_a_kept_tail_and_finishes() {
    let script = Script::from_json(
        r#"{"turns": [
            {"text": "Reading the big file.", "calls": [{"op": "read", "path": "big.txt"}],
             "usage": {"prompt_tokens": 3000, "completion_tokens": 20}},
            {"text": "Now the notes.", "calls": [{"op": "read", "path": "notes.txt"}],
             "usage": {"prompt_tokens": 11000, "completion_tokens": 20}},
            {"text": "Once more.", "calls": [{"op": "read", "path": "notes.txt"}],
             "usage": {"prompt_tokens": 17990, "completion_tokens": 20}}
        ],
        "exhausted_text": "Finished the long task."}"#,
    )
    .unwrap();
    let server = TestServer::start(script).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    project(&dir.path().join("project"), &server.base_url(Api::OpenAiChat));
    let binary = session_binary().unwrap();
    let root = dir.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(binary)
            .args(["run", "--model", "mock/m", "--yes", "tour the files"])
            .current_dir(root.join("project"))
            .env("HOME", &root)
            .env("XDG_DATA_HOME", root.join("data"))
            .env_remove("SESSION_CONFIG")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("Finished the long task."), "{stdout}");
    assert!(!format!("{stdout}{stderr}").contains("Compaction did not free enough context"));
    let requests = server.requests();
    let kinds: Vec<RequestKind> = requests.iter().map(|r| r.kind).collect();
    assert_eq!(kinds.iter().filter(|k| **k == RequestKind::Summary).count(), 1, "{kinds:?}");
    // The request after the summary carries the kept tail (the second read) but not the head.
    let summary_at = kinds.iter().position(|k| *k == RequestKind::Summary).unwrap();
    let after =
        requests[summary_at + 1..].iter().find(|r| r.kind == RequestKind::Main).expect("a step after");
    let body = after.body.to_string();
    assert!(body.contains("Now the notes."), "{body}");
    assert!(!body.contains("Reading the big file."), "{body}");
    server.assert_invariants();
    server.shutdown().await;
}
