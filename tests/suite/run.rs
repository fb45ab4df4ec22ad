//! `session run` against the loopback test server: a real HTTP provider, real tools, the
//! embedded store, permission asks answered by flags.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};
use session_e2e::session_binary;
use session_llm::{Api, Script};
use session_testkit::TestServer;

/// A project folder with a config pointing provider `mock` at the server.
fn project(dir: &Path, base_url: &str) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("README.md"), "# app\n\nA tiny CLI.\n").unwrap();
    std::fs::write(dir.join("src/app.py"), "print('hello')\n").unwrap();
    std::fs::write(dir.join(".env"), "SECRET=1\n").unwrap();
    let config = json!({
        "$schema": "https://opencode.ai/config.json",
        "provider": {"mock": {
            "npm": "@ai-sdk/openai-compatible",
            "options": {"baseURL": base_url, "apiKey": "test-key"},
            "models": {"m": {"limit": {"context": 32000, "output": 4000}, "cost": {"input": 1, "output": 2}}}
        }}
    });
    std::fs::write(dir.join("session.json"), serde_json::to_string_pretty(&config).unwrap()).unwrap();
}

async fn run_session(dir: &Path, args: &[&str]) -> Output {
    let binary = session_binary().unwrap();
    let dir = dir.to_path_buf();
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        Command::new(binary)
            .args(&args)
            .current_dir(dir.join("project"))
            .env("HOME", &dir)
            .env("XDG_DATA_HOME", dir.join("data"))
            .env_remove("SESSION_CONFIG")
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

fn script(text: &str) -> Script {
    Script::from_json(text).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_step_then_an_answer_over_real_http() {
    let server = TestServer::start(script(
        r#"{"turns": [
            {"text": "Looking around.", "calls": [{"op": "read", "path": "README.md"}]},
            {"text": "It is a tiny CLI.", "usage": {"prompt_tokens": 900, "completion_tokens": 12}}
        ]}"#,
    ))
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    project(&dir.path().join("project"), &server.base_url(Api::OpenAiChat));
    let out = run_session(dir.path(), &["run", "--model", "mock/m", "--yes", "what is this?"]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("  ok read"), "{stdout}");
    assert!(stdout.contains("It is a tiny CLI."), "{stdout}");
    assert!(stdout.lines().last().unwrap_or_default().starts_with("tokens: "), "{stdout}");
    assert_eq!(server.requests().len(), 2);
    server.assert_invariants();
    // The key went out as a header but is stored nowhere.
    let db = std::fs::read(dir.path().join("data/session/session.db")).unwrap_or_default();
    assert!(!String::from_utf8_lossy(&db).contains("test-key"));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_lines_are_the_bus_events() {
    let server = TestServer::start(script(r#"{"turns": [{"text": "Hello."}]}"#)).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    project(&dir.path().join("project"), &server.base_url(Api::OpenAiChat));
    let out = run_session(dir.path(), &["run", "--model", "mock/m", "--format", "json", "hi"]).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert!(events.iter().all(|e| e["type"].is_string() && e["properties"].is_object()));
    assert!(events.iter().any(|e| e["type"] == "message.part.delta" && e["properties"]["delta"] == "Hello."));
    server.shutdown().await;
}

const READ_SECRET: &str = r#"{"turns": [
    {"calls": [{"op": "read", "path": ".env"}]},
    {"text": "Done."}
]}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_without_a_terminal_or_flag_fails_naming_both_flags() {
    let server = TestServer::start(script(READ_SECRET)).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    project(&dir.path().join("project"), &server.base_url(Api::OpenAiChat));
    let out = run_session(dir.path(), &["run", "--model", "mock/m", "read the env"]).await;
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--yes") && stderr.contains("--deny"), "{stderr}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yes_allows_and_deny_rejects_the_ask() {
    let server = TestServer::start(script(READ_SECRET)).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    project(&dir.path().join("project"), &server.base_url(Api::OpenAiChat));
    let allowed = run_session(dir.path(), &["run", "--model", "mock/m", "--yes", "read the env"]).await;
    assert!(allowed.status.success(), "{}", String::from_utf8_lossy(&allowed.stderr));
    assert!(String::from_utf8_lossy(&allowed.stdout).contains("  ok read"));

    let server = TestServer::start(script(READ_SECRET)).await.unwrap();
    project(&dir.path().join("project"), &server.base_url(Api::OpenAiChat));
    let denied = run_session(dir.path(), &["run", "--model", "mock/m", "--deny", "read the env"]).await;
    let stdout = String::from_utf8_lossy(&denied.stdout);
    assert!(stdout.contains("!! read"), "{stdout}");
    assert!(!stdout.contains("SECRET=1"), "{stdout}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_errors_print_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    project(&dir.path().join("project"), "http://127.0.0.1:9/v1");
    let cases: [(&[&str], &str); 4] = [
        (&["run", "--model", "nobody/x", "hi"], "unknown provider"),
        (&["run", "--model", "anthropic/claude-sonnet-4-5", "hi"], "no API key for anthropic"),
        (&["run", "--model", "mock/m", "--db", "mysql://x", "hi"], "not a PostgreSQL URL"),
        (&["run", "--model", "mock/m", "--session", "bogus", "hi"], "--session"),
    ];
    for (args, expected) in cases {
        let out = run_session(dir.path(), args).await;
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked") && !stderr.contains("backtrace"), "{stderr}");
    }
}

fn session_cmd(dir: &Path, data: &Path, args: &[&str]) -> Output {
    Command::new(session_binary().unwrap())
        .args(args)
        .current_dir(dir.join("project"))
        .env("HOME", dir)
        .env("XDG_DATA_HOME", data)
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_a_session_then_export_and_import_it() {
    let server =
        TestServer::start(script(r#"{"turns": [{"text": "First answer."}, {"text": "Second answer."}]}"#))
            .await
            .unwrap();
    let dir = tempfile::tempdir().unwrap();
    project(&dir.path().join("project"), &server.base_url(Api::OpenAiChat));
    let first = run_session(dir.path(), &["run", "--model", "mock/m", "one"]).await;
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let stdout = String::from_utf8_lossy(&first.stdout).into_owned();
    let id = stdout.rsplit("session: ").next().unwrap().trim().to_owned();
    assert!(id.starts_with("ses_"), "{stdout}");

    let second = run_session(dir.path(), &["run", "--model", "mock/m", "--session", &id, "two"]).await;
    assert!(second.status.success(), "{}", String::from_utf8_lossy(&second.stderr));
    assert!(String::from_utf8_lossy(&second.stdout).contains("Second answer."));
    // The second request carried the first exchange.
    let last = server.requests().last().unwrap().body.to_string();
    assert!(last.contains("First answer."), "{last}");

    let data = dir.path().join("data");
    let list = session_cmd(dir.path(), &data, &["sessions", "list"]);
    assert!(String::from_utf8_lossy(&list.stdout).contains(&id));
    let export = session_cmd(dir.path(), &data, &["sessions", "export", &id]);
    assert!(export.status.success(), "{}", String::from_utf8_lossy(&export.stderr));
    let document: Value = serde_json::from_slice(&export.stdout).unwrap();
    assert!(!String::from_utf8_lossy(&export.stdout).contains("test-key"), "keys never leave in exports");
    let file = dir.path().join("export.json");
    std::fs::write(&file, serde_json::to_vec(&document).unwrap()).unwrap();

    let other = dir.path().join("other-data");
    let imported = session_cmd(dir.path(), &other, &["sessions", "import", file.to_str().unwrap()]);
    assert!(imported.status.success(), "{}", String::from_utf8_lossy(&imported.stderr));
    let show = session_cmd(dir.path(), &other, &["sessions", "show", &id]);
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(text.contains("First answer.") && text.contains("Second answer."), "{text}");
    let deleted = session_cmd(dir.path(), &other, &["sessions", "delete", &id]);
    assert!(deleted.status.success());
    assert!(
        !String::from_utf8_lossy(&session_cmd(dir.path(), &other, &["sessions", "list"]).stdout)
            .contains(&id)
    );
    server.shutdown().await;
}
