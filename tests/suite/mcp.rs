//! MCP servers through the real `session` binary, against the reference server nobody here
//! wrote (`@modelcontextprotocol/server-everything`, pinned in tests/mcp/, installed by
//! .ci/run): a scripted model calls its tools through `session run` and the results reach the
//! next request; `session mcp list` and `session mcp call`; the remote transports (streamable
//! HTTP, and the older HTTP+SSE as the fallback) on loopback; with session-testkit's
//! `mcp-fault-server`, a tool list change and a crash in the middle of a call.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use session_e2e::session_binary;
use session_llm::{Api, RequestKind, Script};
use session_testkit::TestServer;

/// The entry point of the installed reference server; fails (never skips) when it is missing.
fn everything() -> PathBuf {
    let dir = std::env::var_os("SESSION_TEST_MCP_DIR").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".cache/session-runtime/npm-mcp")
    });
    let entry = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        entry.exists(),
        "the MCP reference server is not installed at {}: run .ci/run, or `npm ci` in a copy of \
         tests/mcp/ at that folder (or point SESSION_TEST_MCP_DIR at one)",
        entry.display()
    );
    entry
}

/// A trusted project whose config points provider `mock` at `base_url` and adds `mcp`.
fn project(dir: &Path, base_url: &str, mcp: Value, permission: Value) {
    let extra = [("mcp".to_owned(), mcp), ("permission".to_owned(), permission)].into_iter().collect();
    session_e2e::mock_project_with(dir, base_url, 32_000, 4_000, extra).unwrap();
}

/// The loopback provider answering `script`.
async fn scripted(script: &str) -> TestServer {
    TestServer::start(Script::from_json(script).unwrap()).await.unwrap()
}

fn local_everything() -> Value {
    json!({"everything": {"type": "local", "command": ["node", everything().to_string_lossy(), "stdio"], "timeout": 60000}})
}

async fn session(dir: &Path, args: &[&str]) -> Output {
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
            .env_remove("XDG_CONFIG_HOME")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

fn text(output: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The main requests the model got, as JSON text.
fn main_requests(server: &TestServer) -> Vec<String> {
    server.requests().iter().filter(|r| r.kind == RequestKind::Main).map(|r| r.body.to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_calls_an_mcp_tool_and_its_result_reaches_the_next_request() {
    let server = scripted(
        r#"{"turns": [
            {"calls": [{"name": "everything_echo", "arguments": {"message": "ping from the model"}}]},
            {"text": "The server echoed."}
        ]}"#,
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    project(
        &dir.path().join("project"),
        &server.base_url(Api::OpenAiChat),
        local_everything(),
        json!({"everything_*": "allow"}),
    );
    let out = session(dir.path(), &["run", "--model", "mock/m", "say hi through the server"]).await;
    assert!(out.status.success(), "{}", text(&out));
    let requests = main_requests(&server);
    assert_eq!(requests.len(), 2, "{requests:?}");
    // The server's tools were offered under `<server>_<tool>` with the server's schema.
    assert!(requests[0].contains("\"everything_echo\""), "{}", requests[0]);
    assert!(requests[0].contains("Message to echo"), "{}", requests[0]);
    // The result went back to the model.
    assert!(requests[1].contains("Echo: ping from the model"), "{}", requests[1]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("The server echoed."), "{}", text(&out));
    server.assert_invariants();
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_image_reaches_the_model_as_an_attachment() {
    let server = scripted(
        r#"{"turns": [
            {"calls": [{"name": "everything_get-tiny-image", "arguments": {}}]},
            {"text": "A logo."}
        ]}"#,
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    project(
        &dir.path().join("project"),
        &server.base_url(Api::OpenAiChat),
        local_everything(),
        json!({"everything_get-tiny-image": "allow"}),
    );
    let out = session(dir.path(), &["run", "--model", "mock/m", "show me the logo"]).await;
    assert!(out.status.success(), "{}", text(&out));
    let requests = main_requests(&server);
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert!(requests[1].contains("Here's the image you requested"), "{}", requests[1]);
    // The PNG itself (its base64 signature) went to the model, not a description of it.
    assert!(requests[1].contains("data:image/png;base64,iVBORw0KGgo"), "{}", requests[1]);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_tool_asks_unless_a_rule_names_it() {
    // Everything is allowed by the default `*` rule, yet the MCP tool asks; --deny rejects.
    let server = scripted(
        r#"{"turns": [
            {"calls": [{"name": "everything_echo", "arguments": {"message": "should not run"}}]},
            {"text": "Refused."}
        ]}"#,
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    project(&dir.path().join("project"), &server.base_url(Api::OpenAiChat), local_everything(), json!({}));
    let out = session(dir.path(), &["run", "--model", "mock/m", "--deny", "echo something"]).await;
    let requests = main_requests(&server);
    assert!(!requests.iter().any(|r| r.contains("Echo: should not run")), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("everything_echo"), "{}", text(&out));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_list_shows_each_server_state_tools_and_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut mcp = local_everything();
    mcp["missing"] = json!({"type": "local", "command": ["/nonexistent/mcp-server"]});
    mcp["off"] = json!({"type": "remote", "url": "http://127.0.0.1:9/mcp", "enabled": false});
    project(&dir.path().join("project"), "http://127.0.0.1:9/v1", mcp, json!({}));
    let out = session(dir.path(), &["mcp", "list"]).await;
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("everything connected\n"), "{stdout}");
    assert!(stdout.contains("  everything_echo\n"), "{stdout}");
    assert!(
        stdout.contains("missing failed\n  error: MCP server \"missing\" could not be started"),
        "{stdout}"
    );
    assert!(stdout.contains("off disabled\n"), "{stdout}");

    let out = session(dir.path(), &["mcp", "call", "everything", "get-sum", r#"{"a": 2, "b": 3}"#]).await;
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("The sum of 2 and 3 is 5."), "{}", text(&out));
}

/// A free loopback port (bound and released; the server binds it right after).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The reference server in one of its HTTP modes on a free loopback port, once it listens.
async fn http_everything(mode: &str) -> (std::process::Child, u16) {
    let port = free_port();
    let mut child = Command::new("node")
        .arg(everything())
        .arg(mode)
        .env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("node runs the reference server");
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return (child, port);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("the reference server ({mode}) did not listen on {port}");
}

/// `session mcp call` of `echo` on a remote server at `url`; the output.
async fn remote_echo(url: String, message: &str) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let mcp = json!({"web": {"type": "remote", "url": url, "timeout": 30000, "headers": {"X-Test": "1"}}});
    project(&dir.path().join("project"), "http://127.0.0.1:9/v1", mcp, json!({}));
    let arguments = json!({"message": message}).to_string();
    session(dir.path(), &["mcp", "call", "web", "echo", &arguments]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_server_over_streamable_http_on_loopback() {
    let (mut child, port) = http_everything("streamableHttp").await;
    let out = remote_echo(format!("http://127.0.0.1:{port}/mcp"), "over http").await;
    let _ = child.kill();
    let _ = child.wait();
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Echo: over http"), "{}", text(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_server_offering_only_sse_is_reached_over_sse() {
    let (mut child, port) = http_everything("sse").await;
    let out = remote_echo(format!("http://127.0.0.1:{port}/sse"), "over sse").await;
    let _ = child.kill();
    let _ = child.wait();
    assert!(out.status.success(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Echo: over sse"), "{}", text(&out));
}

fn fault_server() -> Value {
    let binary = session_e2e::mcp_fault_server().unwrap();
    json!({"fault": {"type": "local", "command": [binary.to_string_lossy()], "timeout": 30000}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_list_change_is_offered_on_the_next_step() {
    let server = scripted(
        r#"{"turns": [
            {"calls": [{"name": "fault_grow", "arguments": {}}]},
            {"calls": [{"name": "fault_extra", "arguments": {}}]},
            {"text": "Grown."}
        ]}"#,
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    project(
        &dir.path().join("project"),
        &server.base_url(Api::OpenAiChat),
        fault_server(),
        json!({"fault_*": "allow"}),
    );
    let out = session(dir.path(), &["run", "--model", "mock/m", "grow the list"]).await;
    assert!(out.status.success(), "{}", text(&out));
    let requests = main_requests(&server);
    assert_eq!(requests.len(), 3, "{requests:?}");
    assert!(!requests[0].contains("\"fault_extra\""), "{}", requests[0]);
    assert!(requests[1].contains("\"fault_extra\""), "{}", requests[1]);
    assert!(requests[2].contains("extra ran"), "{}", requests[2]);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_crashing_mid_call_is_a_tool_error_and_the_run_goes_on() {
    let server = scripted(
        r#"{"turns": [
            {"calls": [{"name": "fault_crash", "arguments": {}}]},
            {"calls": [{"name": "fault_pid", "arguments": {}}]},
            {"text": "Recovered."}
        ]}"#,
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    project(
        &dir.path().join("project"),
        &server.base_url(Api::OpenAiChat),
        fault_server(),
        json!({"fault_*": "allow"}),
    );
    let out = session(dir.path(), &["run", "--model", "mock/m", "crash it"]).await;
    assert!(out.status.success(), "{}", text(&out));
    let requests = main_requests(&server);
    assert_eq!(requests.len(), 3, "{requests:?}");
    assert!(requests[1].contains("MCP server \\\"fault\\\" is not running"), "{}", requests[1]);
    // The next call started the server again: its process id came back.
    let third: Value = serde_json::from_str(&requests[2]).unwrap();
    let last = third["messages"].as_array().unwrap().last().unwrap().to_string();
    assert!(last.chars().any(|c| c.is_ascii_digit()) && !last.contains("not running"), "{last}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("Recovered."), "{}", text(&out));
    server.shutdown().await;
}
