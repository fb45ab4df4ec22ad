//! `session run` against the loopback test server: a real HTTP provider, real tools, the
//! embedded store, permission asks answered by flags.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use session_e2e::session_binary;
use session_llm::{Api, RequestKind, Script};
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
    // The tests run with HOME one level above the project; the project's config is trusted.
    session_testkit::trust_folder(dir.parent().unwrap(), dir).unwrap();
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
    // Two agent steps, and the title of the session's first prompt on the side.
    let kinds: Vec<RequestKind> = server.requests().iter().map(|r| r.kind).collect();
    assert_eq!(kinds.iter().filter(|k| **k == RequestKind::Main).count(), 2, "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| **k == RequestKind::Title).count(), 1, "{kinds:?}");
    server.assert_invariants();
    // The key went out as a header but is stored nowhere.
    let db = std::fs::read(dir.path().join("data/session/session.db")).unwrap_or_default();
    assert!(!String::from_utf8_lossy(&db).contains("test-key"));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_lines_are_the_bus_events() {
    let server = TestServer::start(script(r#"{"turns": [{"text": "Hello."}]}"#)).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    project(&dir.path().join("project"), &server.base_url(Api::OpenAiChat));
    let out = run_session(dir.path(), &["run", "--model", "mock/m", "--format", "events", "hi"]).await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revert_and_unrevert_a_run_through_the_cli() {
    let server = TestServer::start(script(
        r#"{"turns": [
            {"text": "Writing.", "calls": [{"op": "write", "path": "NOTES.md", "content": "written by the model\n"}]},
            {"text": "Wrote the notes."}]}"#,
    ))
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let project_dir = dir.path().join("project");
    project(&project_dir, &server.base_url(Api::OpenAiChat));
    let git = |args: &[&str]| {
        let status = Command::new("git").args(args).current_dir(&project_dir).output().unwrap();
        assert!(status.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&status.stderr));
    };
    git(&["init", "--quiet"]);
    let run = run_session(dir.path(), &["run", "--yes", "--model", "mock/m", "write notes"]).await;
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(std::fs::read_to_string(project_dir.join("NOTES.md")).unwrap(), "written by the model\n");
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    let id = stdout.rsplit("session: ").next().unwrap().trim().to_owned();

    let data = dir.path().join("data");
    let export = session_cmd(dir.path(), &data, &["sessions", "export", &id]);
    let document: Value = serde_json::from_slice(&export.stdout).unwrap();
    let user_message = document["messages"][0]["info"]["id"].as_str().unwrap().to_owned();

    let reverted = session_cmd(dir.path(), &data, &["sessions", "revert", &id, &user_message]);
    let text = String::from_utf8_lossy(&reverted.stdout);
    assert!(reverted.status.success(), "{text}{}", String::from_utf8_lossy(&reverted.stderr));
    assert!(text.contains("restored NOTES.md"), "{text}");
    assert!(!project_dir.join("NOTES.md").exists(), "the file the run wrote is gone");

    let unreverted = session_cmd(dir.path(), &data, &["sessions", "unrevert", &id]);
    assert!(unreverted.status.success(), "{}", String::from_utf8_lossy(&unreverted.stderr));
    assert_eq!(std::fs::read_to_string(project_dir.join("NOTES.md")).unwrap(), "written by the model\n");

    // An unknown session is one clear line and exit code 1.
    let bogus = session_cmd(dir.path(), &data, &["sessions", "revert", "ses_nothing", &user_message]);
    assert_eq!(bogus.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&bogus.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spec_12_3_the_generated_title_and_the_changes_show_in_sessions_list() {
    let server = TestServer::start(script(
        r#"{"title": "Write the project notes", "turns": [
            {"text": "Writing.", "calls": [{"op": "write", "path": "NOTES.md", "content": "one\ntwo\n"}]},
            {"text": "Wrote the notes."}]}"#,
    ))
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let project_dir = dir.path().join("project");
    project(&project_dir, &server.base_url(Api::OpenAiChat));
    let init = Command::new("git").args(["init", "--quiet"]).current_dir(&project_dir).output().unwrap();
    assert!(init.status.success());
    let run = run_session(dir.path(), &["run", "--yes", "--model", "mock/m", "write the notes"]).await;
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    let id = stdout.rsplit("session: ").next().unwrap().trim().to_owned();

    // The binary waited for the title before it exited.
    let list = session_cmd(dir.path(), &dir.path().join("data"), &["sessions", "list"]);
    assert!(list.status.success(), "{}", String::from_utf8_lossy(&list.stderr));
    let text = String::from_utf8_lossy(&list.stdout);
    let line = text.lines().find(|line| line.starts_with(&id)).unwrap_or_else(|| panic!("{text}"));
    let columns: Vec<&str> = line.split('\t').collect();
    assert_eq!(columns[1..3], ["Write the project notes", "+2 -0"], "{line}");
    server.shutdown().await;
}

/// Starts `session` with `args` in the project, stdout piped, the rest as given.
fn spawn_session(dir: &Path, args: &[&str], stdin: Stdio, stderr: Stdio) -> std::process::Child {
    Command::new(session_binary().unwrap())
        .args(args)
        .current_dir(dir.join("project"))
        .env("HOME", dir)
        .env("XDG_DATA_HOME", dir.join("data"))
        .env_remove("SESSION_CONFIG")
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap()
}

/// Reads `reader` on a thread; sends what it read once `needle` appears (a prompt may end
/// without a newline), then everything when the stream ends.
fn read_until(
    mut reader: impl std::io::Read + Send + 'static,
    needle: &'static str,
) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut signalled = false;
        let mut buffer = [0u8; 4096];
        // A pseudo-terminal's master reads fail with EIO once the child exits: that ends it too.
        while let Ok(read) = reader.read(&mut buffer) {
            if read == 0 {
                break;
            }
            seen.extend_from_slice(&buffer[..read]);
            if !signalled && String::from_utf8_lossy(&seen).contains(needle) {
                signalled = true;
                let _ = tx.send(String::from_utf8_lossy(&seen).into_owned());
            }
        }
        let _ = tx.send(String::from_utf8_lossy(&seen).into_owned());
    });
    rx
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_mid_tool_stops_the_tool_and_exits_130_with_the_part_stored() {
    let server = TestServer::start(script(
        r#"{"turns": [{"text": "Waiting.", "calls": [{"op": "bash", "command": "sleep 60"}]}, {"text": "never"}]}"#,
    ))
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    project(&dir.path().join("project"), &server.base_url(Api::OpenAiChat));
    let root = dir.path().to_path_buf();
    let (code, stdout, stderr) = tokio::task::spawn_blocking(move || {
        let mut child = spawn_session(
            &root,
            &["run", "--yes", "--model", "mock/m", "wait"],
            Stdio::null(),
            Stdio::piped(),
        );
        let lines = read_until(child.stdout.take().unwrap(), "-> bash");
        let running = lines.recv_timeout(Duration::from_secs(60)).expect("the tool started");
        assert!(running.contains("-> bash sleep 60"), "{running}");
        let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
        let status = child.wait().unwrap();
        let rest = lines.recv_timeout(Duration::from_secs(10)).unwrap_or_default();
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        (status.code(), rest, stderr)
    })
    .await
    .unwrap();
    assert_eq!(code, Some(130), "stdout: {stdout}\nstderr: {stderr}");
    assert!(stderr.contains("interrupting"), "{stderr}");
    let id = stdout.rsplit("session: ").next().unwrap().trim().to_owned();
    assert!(id.starts_with("ses_"), "the totals line still prints: {stdout}");

    // The interrupted call is stored as an aborted error; nothing is left running.
    let export = session_cmd(dir.path(), &dir.path().join("data"), &["sessions", "export", &id]);
    let document: Value = serde_json::from_slice(&export.stdout).unwrap();
    let tools: Vec<&Value> = document["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["parts"].as_array().unwrap())
        .filter(|p| p["type"] == "tool")
        .collect();
    assert_eq!(tools.len(), 1, "{document}");
    // Either the bash tool settles the killed command itself, as OpenCode's does (completed,
    // `aborted` in its metadata), or cleanup settles it first (the aborted error, SPEC 8).
    let state = &tools[0]["state"];
    let settled_by_tool = state["status"] == "completed" && state["metadata"]["aborted"] == true;
    let settled_by_cleanup = state["status"] == "error" && state["error"] == "Tool execution aborted";
    assert!(settled_by_tool || settled_by_cleanup, "{state}");
    let main = server.requests().iter().filter(|r| r.kind == RequestKind::Main).count();
    assert_eq!(main, 1, "no step after the interrupt");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_ask_is_answered_on_the_terminal() {
    let server = TestServer::start(script(READ_SECRET)).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    project(&dir.path().join("project"), &server.base_url(Api::OpenAiChat));
    let root = dir.path().to_path_buf();
    let (code, stdout, terminal) = tokio::task::spawn_blocking(move || {
        // stdin and stderr on a pseudo-terminal, as in a shell; stdout piped to read the answer.
        let pty = nix::pty::openpty(None, None).unwrap();
        let mut child = spawn_session(
            &root,
            &["run", "--model", "mock/m", "read the env"],
            Stdio::from(pty.slave.try_clone().unwrap()),
            Stdio::from(pty.slave),
        );
        let master = std::fs::File::from(pty.master);
        let mut answer = master.try_clone().unwrap();
        let prompt = read_until(master, "allow [o]nce");
        let asked = prompt.recv_timeout(Duration::from_secs(60)).expect("the ask reached the terminal");
        std::io::Write::write_all(&mut answer, b"o\n").unwrap();
        let mut stdout = String::new();
        std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut stdout).unwrap();
        let status = child.wait().unwrap();
        (status.code(), stdout, asked)
    })
    .await
    .unwrap();
    assert!(terminal.contains("permission: read"), "{terminal}");
    assert_eq!(code, Some(0), "{stdout}");
    assert!(stdout.contains("  ok read"), "answered once, the read ran: {stdout}");
    server.assert_invariants();
    server.shutdown().await;
}

/// Runs `args` in `dir/project` and checks the failure is one clear line with exit code 1.
async fn one_clear_line(dir: &Path, args: &[&str], expected: &[&str]) {
    let out = run_session(dir, args).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
    let last = stderr.trim().lines().last().unwrap_or_default();
    for part in expected {
        assert!(last.contains(part), "{args:?}: expected {part:?} in the last line of: {stderr}");
    }
    assert!(last.starts_with("session: "), "{stderr}");
    assert!(!stderr.contains("panicked") && !stderr.contains("backtrace"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_user_error_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let project_dir = dir.path().join("project");
    project(&project_dir, "http://127.0.0.1:9/v1");
    // A model the provider does not declare.
    one_clear_line(
        dir.path(),
        &["run", "--model", "mock/zzz", "hi"],
        &["unknown model mock/zzz", "session models"],
    )
    .await;
    // A database that does not answer.
    one_clear_line(
        dir.path(),
        &["run", "--model", "mock/m", "--db", "postgres://postgres@127.0.0.1:9/none", "hi"],
        &["cannot open the session database", "--db"],
    )
    .await;
    // A server that is not there (one attempt: the provider's retry policy says so).
    let config = json!({"provider": {"mock": {
        "npm": "@ai-sdk/openai-compatible",
        "options": {"baseURL": "http://127.0.0.1:9/v1", "apiKey": "k", "retry": {"maxAttempts": 1}},
        "models": {"m": {}}
    }}});
    std::fs::write(project_dir.join("session.json"), config.to_string()).unwrap();
    one_clear_line(dir.path(), &["run", "--model", "mock/m", "hi"], &["server running", "--base-url"]).await;
    // A config file that is not JSON.
    std::fs::write(project_dir.join("session.json"), "{\"provider\": ").unwrap();
    one_clear_line(dir.path(), &["run", "--model", "mock/m", "hi"], &["session.json"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_running_in_another_process_is_refused() {
    let server = TestServer::start(script(
        r#"{"turns": [
            {"text": "Started."},
            {"text": "Waiting.", "calls": [{"op": "bash", "command": "sleep 60"}]},
            {"text": "done"}]}"#,
    ))
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    project(&dir.path().join("project"), &server.base_url(Api::OpenAiChat));
    let first = run_session(dir.path(), &["run", "--model", "mock/m", "start"]).await;
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let stdout = String::from_utf8_lossy(&first.stdout).into_owned();
    let id = stdout.rsplit("session: ").next().unwrap().trim().to_owned();
    let root = dir.path().to_path_buf();
    let busy_id = id.clone();
    let mut child = spawn_session(
        &root,
        &["run", "--yes", "--model", "mock/m", "--session", &busy_id, "wait"],
        Stdio::null(),
        Stdio::null(),
    );
    let lines = read_until(child.stdout.take().unwrap(), "-> bash");
    let running = tokio::task::spawn_blocking(move || lines.recv_timeout(Duration::from_secs(60)))
        .await
        .unwrap()
        .expect("the first process is running a tool");
    assert!(running.contains("-> bash"), "{running}");
    one_clear_line(
        dir.path(),
        &["run", "--model", "mock/m", "--session", &id, "me too"],
        &["another process"],
    )
    .await;
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap()).await.unwrap();
    assert_eq!(status.code(), Some(130));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_user_config_is_read_from_xdg_config_home() {
    let server = TestServer::start(script(r#"{"turns": [{"text": "Configured by XDG."}]}"#)).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let project_dir = dir.path().join("project");
    std::fs::create_dir_all(&project_dir).unwrap();
    let config = json!({"provider": {"mock": {
        "npm": "@ai-sdk/openai-compatible",
        "options": {"baseURL": server.base_url(Api::OpenAiChat), "apiKey": "k"},
        "models": {"m": {}}
    }}, "model": "mock/m"});
    let xdg = dir.path().join("xdg");
    std::fs::create_dir_all(xdg.join("session")).unwrap();
    std::fs::write(xdg.join("session/config.json"), config.to_string()).unwrap();
    let root = dir.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(session_binary().unwrap())
            .args(["run", "hi"])
            .current_dir(root.join("project"))
            .env("HOME", &root)
            .env("XDG_CONFIG_HOME", root.join("xdg"))
            .env("XDG_DATA_HOME", root.join("data"))
            .env_remove("SESSION_CONFIG")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Configured by XDG."));
    server.shutdown().await;
}
