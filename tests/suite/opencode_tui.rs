//! OpenCode 1.18.34's own terminal UI, `opencode attach`, driving `session serve` over the
//! loopback scripted provider, in tmux (which answers the terminal queries the UI makes): a
//! prompt whose bash call asks permission, answered once in the dialog; the streamed answer
//! and its reasoning, the tool line and its output read off the screen; `/undo` and `/redo`
//! of the file it wrote; a second ask rejected; a slow answer interrupted with Esc; the
//! session list, the model and agent pickers from our catalog and config; `/exit`.
//!
//! The client is npm's `opencode-linux-x64@1.18.34` and tmux comes from Debian; `.ci/run`
//! installs both, and the test fails, not skips, without them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use session_e2e::{ServeProcess, start_serve};
use session_llm::{Api, RequestKind, Script};
use session_testkit::TestServer;

use crate::opencode_cli::opencode_binary;

/// How long the UI gets for each thing it is waiting for (it starts in about a second, but the
/// machine may be loaded).
const WAIT: Duration = Duration::from_secs(60);

/// A tmux server of its own (its own socket), killed with the test.
pub(crate) struct Tmux {
    socket: String,
}

impl Tmux {
    fn command(&self) -> Command {
        let mut command = Command::new("tmux");
        command.args(["-L", &self.socket, "-f", "/dev/null"]);
        command
    }

    /// Starts `shell_command` in a 150x45 window.
    pub(crate) fn start(socket: &str, shell_command: &str) -> Self {
        let tmux = Self { socket: socket.to_owned() };
        let status = tmux
            .command()
            .args(["new-session", "-d", "-s", "ui", "-x", "150", "-y", "45", shell_command])
            .status()
            .unwrap_or_else(|e| panic!("tmux is required for this test (.ci/run installs it): {e}"));
        assert!(status.success(), "tmux could not start the UI");
        tmux
    }

    /// The visible screen as text.
    pub(crate) fn screen(&self) -> String {
        let output = self.command().args(["capture-pane", "-p", "-t", "ui"]).output().unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Waits until the screen shows `text`; panics with the screen when it does not.
    pub(crate) fn wait_for(&self, text: &str) -> String {
        let started = Instant::now();
        loop {
            let screen = self.screen();
            if screen.contains(text) {
                return screen;
            }
            assert!(started.elapsed() < WAIT, "the UI never showed {text:?}; the screen:\n{screen}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Types `keys` (tmux key names, or literal text with `literal`).
    pub(crate) fn keys(&self, keys: &[&str], literal: bool) {
        let mut command = self.command();
        command.args(["send-keys", "-t", "ui"]);
        if literal {
            command.arg("-l");
        }
        assert!(command.args(keys).status().unwrap().success());
    }

    /// Clears the prompt (an undo puts the reverted message back into it), types `text` and
    /// Enter, with a pause for the UI's autocomplete to settle.
    pub(crate) fn submit(&self, text: &str) {
        self.keys(&["C-u"], false);
        self.keys(&[text], true);
        std::thread::sleep(Duration::from_millis(500));
        self.keys(&["Enter"], false);
    }

    pub(crate) fn alive(&self) -> bool {
        self.command().args(["has-session", "-t", "ui"]).status().is_ok_and(|s| s.success())
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.command().arg("kill-server").status();
    }
}

fn script() -> Script {
    Script::from_json(
        r#"{"chunk_chars": 6, "title": "Greeting work", "turns": [
            {"text": "Writing the greeting.", "calls": [{"name": "bash", "arguments": {"command": "echo hello-from-tui > greeting.txt && cat greeting.txt", "description": "Write a greeting"}}]},
            {"reasoning": "The file holds the greeting now.", "text": "All done: the greeting was written."},
            {"text": "One more command.", "calls": [{"name": "bash", "arguments": {"command": "echo never-run", "description": "Print a word"}}]},
            {"text": "Counting slowly: one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty.", "chunk_delay": 0.4}
        ]}"#,
    )
    .unwrap()
}

/// A git project whose bash commands need asking, served over `base_url`.
fn serve(dir: &Path, base_url: &str) -> (PathBuf, ServeProcess) {
    let project = dir.join("project");
    let extra = [("permission".to_owned(), json!({"bash": "ask"}))].into_iter().collect();
    session_e2e::mock_project_with(&project, base_url, 32_000, 4_000, extra).unwrap();
    assert!(Command::new("git").args(["init", "-q"]).current_dir(&project).status().unwrap().success());
    let server = start_serve(&project, dir, &["--model", "mock/m"]).unwrap();
    (project, server)
}

/// `GET path` of the server (loopback needs no token for a server that made its own).
pub(crate) fn get(server: &ServeProcess, path: &str) -> Value {
    let url = format!("{}{path}", server.url);
    let body = Command::new("curl").args(["-sf", &url]).output().unwrap();
    assert!(body.status.success(), "GET {path} failed");
    serde_json::from_slice(&body.stdout).unwrap()
}

pub(crate) fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < WAIT, "{what} never happened");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The whole walk through the UI, off the async workers (it blocks).
fn drive(dir: &Path, base_url: &str) {
    let (project, server) = serve(dir, base_url);
    let home = dir.join("opencode-home");
    std::fs::create_dir_all(&home).unwrap();
    let env = format!(
        "env HOME={h} XDG_CONFIG_HOME={h}/.config XDG_DATA_HOME={h}/.local/share XDG_CACHE_HOME={h}/.cache \
         OPENCODE_DISABLE_AUTOUPDATE=1 TERM=xterm-256color",
        h = home.display()
    );
    let command =
        format!("cd {} && {env} {} attach {}", project.display(), opencode_binary().display(), server.url);
    let socket = format!("session-tui-{}", std::process::id());
    let ui = Tmux::start(&socket, &command);

    // Start-up: the prompt, with our default model and agent.
    let screen = ui.wait_for("Ask anything");
    assert!(screen.contains("Build") && screen.contains("mock"), "{screen}");

    // A prompt whose bash call asks: the dialog, answered once.
    ui.submit("Write the greeting");
    let screen = ui.wait_for("Permission required");
    assert!(screen.contains("echo hello-from-tui > greeting.txt"), "{screen}");
    assert!(screen.contains("Allow once") && screen.contains("Reject"), "{screen}");
    ui.keys(&["Enter"], false);
    let screen = ui.wait_for("All done: the greeting was written.");
    assert!(screen.contains("Writing the greeting."), "{screen}");
    assert!(screen.contains("$ echo hello-from-tui > greeting.txt"), "the tool line: {screen}");
    assert!(
        screen.lines().any(|line| line.trim_start_matches([' ', '┃']).trim() == "hello-from-tui"),
        "{screen}"
    );
    // The reasoning, collapsed as the UI shows it, and the sidebar's diff of the session.
    assert!(screen.contains("Thought"), "the reasoning: {screen}");
    assert!(
        screen.contains("Modified Files") && screen.contains("greeting.txt"),
        "the session diff: {screen}"
    );
    let greeting = project.join("greeting.txt");
    assert_eq!(std::fs::read_to_string(&greeting).unwrap(), "hello-from-tui\n");

    // Undo takes the file back out; redo brings it back.
    ui.submit("/undo");
    ui.wait_for("message reverted");
    wait_until("the revert of greeting.txt", || !greeting.exists());
    ui.submit("/redo");
    ui.wait_for("All done: the greeting was written.");
    wait_until("the unrevert of greeting.txt", || greeting.exists());

    // A second ask, rejected: the command never runs.
    ui.submit("Run another");
    ui.wait_for("echo never-run");
    ui.wait_for("Permission required");
    ui.keys(&["Right"], false);
    ui.keys(&["Right"], false);
    ui.keys(&["Enter"], false);
    wait_until("the rejection to settle", || {
        let sessions = get(&server, "/session");
        let id = sessions[0]["id"].as_str().unwrap_or_default().to_owned();
        let messages = get(&server, &format!("/session/{id}/message"));
        messages.as_array().is_some_and(|m| {
            m.iter().flat_map(|m| m["parts"].as_array().cloned().unwrap_or_default()).any(|p| {
                p["tool"] == "bash"
                    && p["state"]["status"] == "error"
                    && p["state"]["input"]["command"] == "echo never-run"
            })
        })
    });

    // A slow answer, interrupted with Esc (twice, as the UI asks).
    ui.submit("Count slowly");
    ui.wait_for("Counting slowly");
    ui.keys(&["Escape"], false);
    std::thread::sleep(Duration::from_millis(300));
    ui.keys(&["Escape"], false);
    wait_until("the run to be aborted", || {
        let sessions = get(&server, "/session");
        let id = sessions[0]["id"].as_str().unwrap_or_default().to_owned();
        let messages = get(&server, &format!("/session/{id}/message"));
        messages
            .as_array()
            .and_then(|m| m.last())
            .is_some_and(|last| last["info"]["error"]["name"] == "MessageAbortedError")
    });
    let screen = ui.screen();
    assert!(!screen.contains("twenty."), "the answer stopped early: {screen}");

    // The session list shows the title; the pickers show our model and agents.
    ui.submit("/sessions");
    ui.wait_for("Greeting work");
    ui.keys(&["Escape"], false);
    ui.submit("/models");
    ui.wait_for("Select model");
    ui.keys(&["Escape"], false);
    ui.submit("/agents");
    let screen = ui.wait_for("Select agent");
    assert!(screen.contains("build") && screen.contains("plan"), "{screen}");
    ui.keys(&["Escape"], false);

    // The sidebar reads the session's tokens.
    let screen = ui.screen();
    assert!(screen.contains("tokens"), "{screen}");

    ui.submit("/exit");
    wait_until("the UI to exit", || !ui.alive());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_attach_runs_prompts_permissions_undo_and_abort_on_session_serve() {
    let provider = TestServer::start(script()).await.unwrap();
    let base_url = provider.base_url(Api::OpenAiChat);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_owned();
    tokio::task::spawn_blocking(move || drive(&path, &base_url)).await.unwrap();
    let main: Vec<_> = provider.requests().into_iter().filter(|r| r.kind == RequestKind::Main).collect();
    assert!(main.len() >= 4, "{main:#?}");
    assert!(
        main[1].body["messages"].to_string().contains("hello-from-tui"),
        "the tool result reached the model"
    );
    provider.shutdown().await;
}
