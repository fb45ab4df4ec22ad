//! OpenCode 1.18.34's own command-line client, `opencode run --attach`, driving `session serve`
//! over the loopback scripted provider: a prompt with a bash call that needs permission,
//! answered by `--auto` or rejected, in both output formats. The client is npm's
//! `opencode-linux-x64@1.18.34`, which `.ci/run` installs; the tests fail, and do not skip,
//! when it is missing.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::{Value, json};
use session_e2e::{ServeProcess, start_serve};
use session_llm::{Api, RequestKind, Script};
use session_testkit::TestServer;

/// The pinned client version, as `.ci/run` installs it.
const OPENCODE_VERSION: &str = "1.18.34";

/// The `opencode` binary: `SESSION_TEST_OPENCODE`, else where `.ci/run` installs it.
pub(super) fn opencode_binary() -> PathBuf {
    let path = std::env::var_os("SESSION_TEST_OPENCODE").map(PathBuf::from).unwrap_or_else(|| {
        let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
        home.join(".cache/session-runtime/opencode/node_modules/opencode-linux-x64/bin/opencode")
    });
    assert!(
        path.exists(),
        "OpenCode's client is required for this test and is not at {}: run .ci/run, or \
         `npm install --prefix ~/.cache/session-runtime/opencode opencode-linux-x64@{OPENCODE_VERSION}`, \
         or set SESSION_TEST_OPENCODE",
        path.display()
    );
    path
}

/// A project whose bash commands need asking, served by `session serve` over `provider`.
struct Attached {
    _dir: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
    server: ServeProcess,
}

fn attach(base_url: &str) -> Attached {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    let extra = [("permission".to_owned(), json!({"bash": "ask"}))].into_iter().collect();
    session_e2e::mock_project_with(&project, base_url, 32_000, 4_000, extra).unwrap();
    let home = dir.path().to_owned();
    let server = start_serve(&project, &home, &["--model", "mock/m"]).unwrap();
    Attached { home, project, server, _dir: dir }
}

/// Runs `opencode run --attach <url> <args> <prompt>` with its own home, offline.
fn opencode_run(attached: &Attached, args: &[&str], prompt: &str) -> Output {
    let home = attached.home.join("opencode-home");
    std::fs::create_dir_all(&home).unwrap();
    Command::new(opencode_binary())
        .args(["run", "--attach", &attached.server.url])
        .args(args)
        .arg(prompt)
        .current_dir(&attached.project)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
        .env("NO_COLOR", "1")
        .env_remove("OPENCODE_SERVER_PASSWORD")
        .output()
        .unwrap()
}

fn script() -> Script {
    Script::from_json(
        r#"{"chunk_chars": 4, "turns": [
            {"text": "Checking.", "calls": [{"name": "bash", "arguments": {"command": "echo hello-from-bash", "description": "Say hello"}}]},
            {"text": "Done: the command printed its greeting."}
        ]}"#,
    )
    .unwrap()
}

fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

/// The tool result the model's second request carries.
fn second_main_request(provider: &TestServer) -> String {
    let main: Vec<_> = provider.requests().into_iter().filter(|r| r.kind == RequestKind::Main).collect();
    assert_eq!(main.len(), 2, "{main:#?}");
    main[1].body["messages"].to_string()
}

/// Serves a fresh project over `provider` and runs the client once against it (both block, so
/// they run off the async workers).
async fn serve_and_run(provider: &TestServer, args: &'static [&'static str]) -> (Attached, Output) {
    let base_url = provider.base_url(Api::OpenAiChat);
    tokio::task::spawn_blocking(move || {
        let attached = attach(&base_url);
        let output = opencode_run(&attached, args, "Say hello");
        (attached, output)
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_run_attach_runs_a_tool_after_auto_approval() {
    let provider = TestServer::start(script()).await.unwrap();
    let (_attached, output) = serve_and_run(&provider, &["--auto"]).await;
    let all = text(&output);
    assert!(output.status.success(), "{all}");
    assert!(all.contains("Done: the command printed its greeting."), "{all}");
    assert!(all.contains("echo hello-from-bash"), "the tool line: {all}");
    assert!(all.contains("hello-from-bash\n"), "the command's output: {all}");
    assert!(!all.contains("auto-rejecting"), "{all}");
    assert!(second_main_request(&provider).contains("hello-from-bash"));
    provider.assert_invariants();
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_run_attach_format_json_emits_its_event_lines() {
    let provider = TestServer::start(script()).await.unwrap();
    let (_attached, output) = serve_and_run(&provider, &["--auto", "--format", "json"]).await;
    assert!(output.status.success(), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let events: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}")))
        .collect();
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(
        types,
        ["step_start", "text", "tool_use", "step_finish", "step_start", "text", "step_finish"],
        "{stdout}"
    );
    let session = events[0]["sessionID"].as_str().unwrap();
    assert!(session.starts_with("ses_"));
    assert!(events.iter().all(|e| e["sessionID"] == session && e["part"]["sessionID"] == session));
    let tool = &events[2]["part"];
    assert_eq!(tool["tool"], "bash");
    assert_eq!(tool["state"]["status"], "completed");
    assert!(tool["state"]["output"].as_str().unwrap().contains("hello-from-bash"), "{tool}");
    assert_eq!(events[5]["part"]["text"], "Done: the command printed its greeting.");
    assert!(events[6]["part"]["tokens"].is_object(), "step_finish carries usage: {}", events[6]);
    provider.assert_invariants();
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_run_attach_rejects_an_ask_without_auto() {
    let provider = TestServer::start(script()).await.unwrap();
    let (_attached, output) = serve_and_run(&provider, &[]).await;
    let all = text(&output);
    assert!(all.contains("permission requested: bash (echo hello-from-bash); auto-rejecting"), "{all}");
    assert!(!all.contains("hello-from-bash\n"), "the command must not run: {all}");
    // The call fails with the rejection, and a rejection ends the run (SPEC 8).
    assert!(all.contains("echo hello-from-bash failed"), "{all}");
    assert!(all.contains("rejected permission"), "{all}");
    let main = provider.requests().into_iter().filter(|r| r.kind == RequestKind::Main).count();
    assert_eq!(main, 1);
    provider.assert_invariants();
    provider.shutdown().await;
}
