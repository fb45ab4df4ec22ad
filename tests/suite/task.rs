//! The `task` tool through `session run`: the parent's model (server `main`) delegates to the
//! `general` subagent, whose model is another provider (server `sub`), so each side's turns
//! are scripted on their own.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use session_e2e::session_binary;
use session_llm::{Api, RequestKind, Script};
use session_testkit::{RecordedRequest, TestServer};

/// A trusted project whose `build` agent talks to `main` and whose `general` subagent talks to
/// `sub`.
fn project(root: &Path, main: &TestServer, sub: &TestServer) -> PathBuf {
    let dir = root.join("project");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("README.md"), "# app\n\nA tiny CLI called zebra.\n").unwrap();
    let provider = |server: &TestServer| {
        json!({
            "npm": "@ai-sdk/openai-compatible",
            "options": {"baseURL": server.base_url(Api::OpenAiChat), "apiKey": "test-key"},
            "models": {"m": {"limit": {"context": 32000, "output": 4000}, "cost": {"input": 1, "output": 2}}}
        })
    };
    let config = json!({
        "model": "main/m",
        "provider": {"main": provider(main), "sub": provider(sub)},
        "agent": {"general": {"model": "sub/m"}}
    });
    std::fs::write(dir.join("session.json"), config.to_string()).unwrap();
    session_testkit::trust_folder(root, &dir).unwrap();
    dir
}

fn session(root: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(session_binary().unwrap());
    command
        .args(args)
        .current_dir(root.join("project"))
        .env("HOME", root)
        .env("XDG_DATA_HOME", root.join("data"))
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("SESSION_CONFIG");
    command
}

async fn run(root: &Path, args: &[&str]) -> Output {
    let mut command = session(root, args);
    tokio::task::spawn_blocking(move || command.output().unwrap()).await.unwrap()
}

fn mains(server: &TestServer) -> Vec<RecordedRequest> {
    server.requests().into_iter().filter(|r| r.kind == RequestKind::Main).collect()
}

fn task_call(description: &str, prompt: &str) -> Value {
    json!({"name": "task", "arguments": {"description": description, "prompt": prompt, "subagent_type": "general"}})
}

fn script(turns: Value) -> Script {
    Script::from_json(&json!({"turns": turns}).to_string()).unwrap()
}

/// The tool results of an OpenAI Chat request, in order.
fn tool_results(request: &RecordedRequest) -> Vec<String> {
    request.body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().map_or_else(|| m["content"].to_string(), str::to_owned))
        .collect()
}

/// `session sessions export ID`: the session's info (a child's `parentID` names its parent)
/// and its messages.
fn export(root: &Path, id: &str) -> Value {
    let out = session(root, &["sessions", "export", id]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `session sessions list`.
fn list(root: &Path) -> String {
    let out = session(root, &["sessions", "list"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn session_id_of(stdout: &str) -> String {
    stdout.rsplit("session: ").next().unwrap_or_default().trim().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_runs_a_child_session_whose_text_returns_to_the_parent() {
    let main = TestServer::start(script(json!([
        {"text": "Delegating.", "calls": [task_call("read the readme", "Read README.md and name the app.")]},
        {"text": "The subagent says it is zebra."}
    ])))
    .await
    .unwrap();
    let sub = TestServer::start(script(json!([
        {"calls": [{"op": "read", "path": "README.md"}]},
        {"text": "CHILD-REPORT: the app is zebra."}
    ])))
    .await
    .unwrap();
    let root = tempfile::tempdir().unwrap();
    project(root.path(), &main, &sub);
    let out = run(root.path(), &["run", "--yes", "what is the app called?"]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("The subagent says it is zebra."), "{stdout}");
    // The totals add the child's cost to the parent's.
    let totals = stdout.lines().last().unwrap_or_default();
    assert!(totals.contains(" (with subagents: $"), "{totals}");

    // The child ran the read with its own model and without the task tool.
    let child_requests = mains(&sub);
    assert_eq!(child_requests.len(), 2);
    assert!(!child_requests[0].tool_names.contains(&"task".to_owned()), "{:?}", child_requests[0].tool_names);
    assert!(tool_results(&child_requests[1]).iter().any(|r| r.contains("zebra")));
    // The parent offered the task tool and got the child's final text back.
    let parent_requests = mains(&main);
    assert_eq!(parent_requests.len(), 2);
    assert!(parent_requests[0].tool_names.contains(&"task".to_owned()));
    let results = tool_results(&parent_requests[1]);
    assert_eq!(results.len(), 1);
    assert!(
        results[0].contains("<task_result>\nCHILD-REPORT: the app is zebra.\n</task_result>"),
        "{results:?}"
    );
    let child_id = results[0].split_whitespace().nth(1).unwrap().to_owned();
    assert!(child_id.starts_with("ses_"), "{results:?}");

    // The child session is stored under the parent, and the parent's part names it.
    let parent_id = session_id_of(&stdout);
    let child = export(root.path(), &child_id);
    assert_eq!(child["info"]["parentID"], json!(parent_id), "{}", child["info"]);
    let listed = list(root.path());
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), 2, "{listed}");
    assert!(lines[0].starts_with(&format!("{parent_id}\t")), "{listed}");
    assert!(lines[1].starts_with(&format!("  {child_id}\tread the readme (@general subagent)")), "{listed}");
    let parent = export(root.path(), &parent_id);
    let task_part = parent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["parts"].as_array().unwrap())
        .find(|p| p["type"] == "tool" && p["tool"] == "task")
        .unwrap()
        .clone();
    assert_eq!(task_part["state"]["status"], "completed", "{task_part}");
    assert_eq!(task_part["state"]["metadata"]["sessionId"], json!(child_id), "{task_part}");
    main.shutdown().await;
    sub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_task_calls_run_two_children() {
    let main = TestServer::start(script(json!([
        {"calls": [task_call("first", "Read the README."), task_call("second", "Read the README too.")]},
        {"text": "Both done."}
    ])))
    .await
    .unwrap();
    let sub = TestServer::start(script(json!([
        {"calls": [{"op": "read", "path": "README.md"}]},
        {"text": "CHILD-DONE"}
    ])))
    .await
    .unwrap();
    let root = tempfile::tempdir().unwrap();
    project(root.path(), &main, &sub);
    let out = run(root.path(), &["run", "--yes", "twice"]).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(mains(&sub).len(), 4, "two children, two steps each");
    let results = tool_results(&mains(&main)[1]);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(results.iter().all(|r| r.contains("<task_result>\nCHILD-DONE\n</task_result>")), "{results:?}");
    let ids: Vec<&str> = results.iter().filter_map(|r| r.split_whitespace().nth(1)).collect();
    assert_ne!(ids[0], ids[1], "each call has its own child session");
    main.shutdown().await;
    sub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupting_the_parent_aborts_its_running_child() {
    let main = TestServer::start(script(json!([
        {"calls": [task_call("wait", "Wait for a minute.")]},
        {"text": "never"}
    ])))
    .await
    .unwrap();
    let sub = TestServer::start(script(json!([
        {"calls": [{"op": "bash", "command": "sleep 60"}]},
        {"text": "never either"}
    ])))
    .await
    .unwrap();
    let root = tempfile::tempdir().unwrap();
    project(root.path(), &main, &sub);
    let mut command = session(root.path(), &["run", "--yes", "wait"]);
    let (code, stdout) = tokio::task::spawn_blocking(move || {
        let mut child =
            command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut seen = Vec::new();
            let mut buffer = [0u8; 4096];
            let mut signalled = false;
            while let Ok(read) = std::io::Read::read(&mut stdout, &mut buffer) {
                if read == 0 {
                    break;
                }
                seen.extend_from_slice(&buffer[..read]);
                if !signalled && String::from_utf8_lossy(&seen).contains("-> bash sleep 60") {
                    signalled = true;
                    let _ = tx.send(String::new());
                }
            }
            let _ = tx.send(String::from_utf8_lossy(&seen).into_owned());
        });
        if rx.recv_timeout(Duration::from_secs(15)).is_err() {
            child.kill().unwrap();
            let seen = rx.recv_timeout(Duration::from_secs(10)).unwrap_or_default();
            panic!("the child's bash did not start:\n{seen}");
        }
        let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
        let status = child.wait().unwrap();
        (status.code(), rx.recv_timeout(Duration::from_secs(10)).unwrap_or_default())
    })
    .await
    .unwrap();
    assert_eq!(code, Some(130), "{stdout}");
    // Neither side took another step, and the parent's task part is settled as aborted.
    assert_eq!(mains(&sub).len(), 1);
    assert_eq!(mains(&main).len(), 1);
    let parent = export(root.path(), &session_id_of(&stdout));
    let task_part = parent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["parts"].as_array().unwrap())
        .find(|p| p["type"] == "tool" && p["tool"] == "task")
        .unwrap()
        .clone();
    assert_eq!(task_part["state"]["status"], "error", "{task_part}");
    let list = list(root.path());
    let child_id =
        list.lines().find_map(|line| line.strip_prefix("  ")).and_then(|line| line.split('\t').next());
    let child = export(root.path(), child_id.unwrap_or_else(|| panic!("no child in:\n{list}")));
    let bash = child["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["parts"].as_array().unwrap())
        .find(|p| p["type"] == "tool")
        .unwrap()
        .clone();
    let state = &bash["state"];
    let settled_by_tool = state["status"] == "completed" && state["metadata"]["aborted"] == true;
    let settled_by_cleanup = state["status"] == "error";
    assert!(settled_by_tool || settled_by_cleanup, "{state}");
    main.shutdown().await;
    sub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_permission_ask_reaches_the_parents_asker() {
    let parent_turns = json!([{"calls": [task_call("echo", "Run echo.")]}, {"text": "Parent done."}]);
    let child_turns =
        json!([{"calls": [{"op": "bash", "command": "echo CHILD-RAN"}]}, {"text": "child done"}]);
    let root = tempfile::tempdir().unwrap();
    for (flag, ran) in [("--deny", false), ("--yes", true)] {
        let main = TestServer::start(script(parent_turns.clone())).await.unwrap();
        let sub = TestServer::start(script(child_turns.clone())).await.unwrap();
        let dir = project(root.path(), &main, &sub);
        let mut config: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("session.json")).unwrap()).unwrap();
        config["agent"]["general"]["permission"] = json!({"bash": "ask"});
        std::fs::write(dir.join("session.json"), config.to_string()).unwrap();
        let out = run(root.path(), &["run", flag, "echo through a subagent"]).await;
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{flag}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        // A rejected ask halts the child's loop (as a parent's would); an allowed one runs.
        let child_requests = mains(&sub);
        assert_eq!(child_requests.len(), if ran { 2 } else { 1 }, "{flag}");
        if ran {
            assert!(tool_results(&child_requests[1]).iter().any(|r| r.contains("CHILD-RAN")), "{flag}");
        }
        assert_eq!(stdout.contains("!! bash"), !ran, "{flag}: {stdout}");
        main.shutdown().await;
        sub.shutdown().await;
    }
}

/// The child's turn of the delegation tests: rewrite README.md and run a command that leaves a
/// marker file.
fn rewriting_child() -> Value {
    json!([
        {"calls": [
            {"op": "write", "path": "README.md", "content": "REWRITTEN BY THE CHILD\n"},
            {"op": "bash", "command": "touch CHILD-RAN.marker"}
        ]},
        {"text": "child done"}
    ])
}

/// Runs `session run --agent AGENT --deny` where the parent delegates the rewrite to `general`;
/// returns the project folder and the child's stored tool parts.
async fn delegate_rewrite(root: &Path, agent: &str) -> (PathBuf, Vec<Value>) {
    let main = TestServer::start(script(json!([
        {"calls": [task_call("rewrite", "Rewrite README.md and run the command.")]},
        {"text": "Parent done."}
    ])))
    .await
    .unwrap();
    let sub = TestServer::start(script(rewriting_child())).await.unwrap();
    let dir = project(root, &main, &sub);
    let out = run(root, &["run", "--agent", agent, "--deny", "delegate the rewrite"]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{agent}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    // The child was offered the tools (its own agent allows them) and called them.
    let child_requests = mains(&sub);
    assert!(child_requests[0].tool_names.contains(&"write".to_owned()), "{:?}", child_requests[0].tool_names);
    let parent_requests = mains(&main);
    let result = tool_results(&parent_requests[1]).join("\n");
    let child_id = result.split_whitespace().nth(1).unwrap().to_owned();
    let child = export(root, &child_id);
    let parts = child["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["parts"].as_array().unwrap().clone())
        .filter(|p| p["type"] == "tool")
        .collect();
    main.shutdown().await;
    sub.shutdown().await;
    (dir, parts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_parents_subagent_cannot_edit_or_run_commands() {
    let root = tempfile::tempdir().unwrap();
    let (dir, parts) = delegate_rewrite(root.path(), "plan").await;
    assert_eq!(
        std::fs::read_to_string(dir.join("README.md")).unwrap(),
        "# app\n\nA tiny CLI called zebra.\n"
    );
    assert!(!dir.join("CHILD-RAN.marker").exists(), "the child's command ran");
    assert_eq!(parts.len(), 2, "{parts:?}");
    for part in &parts {
        assert_eq!(part["state"]["status"], "error", "{part}");
        let error = part["state"]["error"].as_str().unwrap_or_default();
        assert!(error.contains("prevents you from using this specific tool call"), "{part}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_a_build_parents_subagent_does_edit_and_run() {
    let root = tempfile::tempdir().unwrap();
    let (dir, parts) = delegate_rewrite(root.path(), "build").await;
    assert_eq!(std::fs::read_to_string(dir.join("README.md")).unwrap(), "REWRITTEN BY THE CHILD\n");
    assert!(dir.join("CHILD-RAN.marker").exists(), "the child's command did not run");
    assert!(parts.iter().all(|p| p["state"]["status"] == "completed"), "{parts:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_parents_subagent_runs_its_commands_read_only() {
    // Outside /tmp, which the sandbox leaves writable.
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(base).unwrap();
    let root = tempfile::tempdir_in(base).unwrap();
    let main = TestServer::start(script(json!([
        {"calls": [task_call("touch", "Create the marker.")]},
        {"text": "Parent done."}
    ])))
    .await
    .unwrap();
    let sub = TestServer::start(script(json!([
        {"calls": [{"op": "bash", "command": "touch CHILD-RAN.marker"}]},
        {"text": "child done"}
    ])))
    .await
    .unwrap();
    let dir = project(root.path(), &main, &sub);
    // The user lets plan run commands: its own run read-only, and so must its children's.
    let mut config: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("session.json")).unwrap()).unwrap();
    config["agent"]["plan"] = json!({"permission": {"bash": "allow"}});
    std::fs::write(dir.join("session.json"), config.to_string()).unwrap();
    let out = run(root.path(), &["run", "--agent", "plan", "--deny", "touch through a subagent"]).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!dir.join("CHILD-RAN.marker").exists(), "the child wrote in a read-only parent's project");
    let child_requests = mains(&sub);
    assert_eq!(child_requests.len(), 2);
    let results = tool_results(&child_requests[1]).join("\n");
    assert!(results.contains("read-only sandbox"), "{results}");
    main.shutdown().await;
    sub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_wider_rule_still_asks_what_the_parent_asks() {
    // The parent (build) asks before every command; the subagent's own rules allow them. The
    // child is bound by the parent's ask, so --deny rejects it; --yes (the control) lets it run.
    let parent_turns = json!([{"calls": [task_call("echo", "Run echo.")]}, {"text": "Parent done."}]);
    let child_turns =
        json!([{"calls": [{"op": "bash", "command": "echo CHILD-RAN"}]}, {"text": "child done"}]);
    let root = tempfile::tempdir().unwrap();
    for (flag, ran) in [("--deny", false), ("--yes", true)] {
        let main = TestServer::start(script(parent_turns.clone())).await.unwrap();
        let sub = TestServer::start(script(child_turns.clone())).await.unwrap();
        let dir = project(root.path(), &main, &sub);
        let mut config: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("session.json")).unwrap()).unwrap();
        config["permission"] = json!({"bash": "ask", "task": "allow"});
        config["agent"]["general"]["permission"] = json!({"bash": "allow"});
        std::fs::write(dir.join("session.json"), config.to_string()).unwrap();
        let out = run(root.path(), &["run", flag, "echo through a subagent"]).await;
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{flag}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        let child_requests = mains(&sub);
        assert_eq!(child_requests.len(), if ran { 2 } else { 1 }, "{flag}");
        if ran {
            assert!(tool_results(&child_requests[1]).iter().any(|r| r.contains("CHILD-RAN")), "{flag}");
        }
        assert_eq!(stdout.contains("!! bash"), !ran, "{flag}: {stdout}");
        main.shutdown().await;
        sub.shutdown().await;
    }
}
