//! The `question` tool end to end: the scripted model asks which database, and the answer
//! given on `session run`'s terminal, in the terminal UI's dialog, or in OpenCode's own UI
//! attached to `session serve` reaches the model's next request in OpenCode's words.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use session_llm::{RequestKind, Script};
use session_testkit::TestServer;

use crate::cli::{on_a_terminal, project_with};
use crate::tui::Tui;

/// One question with two options, then an answer that ends the run.
const ASKS: &str = r#"{"turns": [
    {"text": "Asking first.", "calls": [{"name": "question", "arguments": {"questions": [
        {"question": "Which database?", "header": "Database",
         "options": [{"label": "SQLite", "description": "one file"},
                     {"label": "PostgreSQL", "description": "a server"}]}]}}]},
    {"text": "Going with the answer."}
]}"#;

/// The tool's output for `answer`, as OpenCode 1.18.34 words it.
fn output_for(answer: &str) -> String {
    format!(
        "User has answered your questions: \"Which database?\"=\"{answer}\". You can now continue with \
         the user's answers in mind."
    )
}

/// The text of every tool result in an OpenAI chat request's messages.
fn tool_results(body: &Value) -> Vec<String> {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    messages
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| match &message["content"] {
            Value::String(text) => text.clone(),
            Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
            other => other.to_string(),
        })
        .collect()
}

/// The model's requests of the conversation (no title or summary requests).
fn main_requests(server: &TestServer) -> Vec<Value> {
    server.requests().into_iter().filter(|r| r.kind == RequestKind::Main).map(|r| r.body).collect()
}

/// Asserts that the model was asked twice, the question offered the first time and the answer
/// read back the second time.
fn assert_answer_reached_the_model(server: &TestServer, answer: &str) {
    let requests = server.requests();
    let main: Vec<_> = requests.iter().filter(|r| r.kind == RequestKind::Main).collect();
    assert_eq!(main.len(), 2, "{main:#?}");
    assert!(main[0].tool_names.iter().any(|name| name == "question"), "{:?}", main[0].tool_names);
    assert_eq!(tool_results(&main[1].body), [output_for(answer)], "{}", main[1].body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_on_a_terminal_answers_a_question_by_its_number() {
    let server = TestServer::start(Script::from_json(ASKS).unwrap()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    project_with(dir.path(), &server);
    let root = dir.path().to_path_buf();
    let (code, terminal) = tokio::task::spawn_blocking(move || {
        on_a_terminal(
            &root,
            &["run", "-m", "mock/m", "set up storage"],
            Some("a number, your own answer, or Enter to dismiss: "),
            b"2\n",
        )
    })
    .await
    .unwrap();
    assert_eq!(code, Some(0), "{terminal}");
    assert!(terminal.contains("question: Database: Which database?"), "{terminal:?}");
    assert!(terminal.contains("  1. SQLite - one file") && terminal.contains("  2. PostgreSQL - a server"));
    assert!(terminal.contains("Going with the answer."), "{terminal:?}");
    assert_answer_reached_the_model(&server, "PostgreSQL");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_on_a_terminal_dismisses_a_question_with_an_empty_line() {
    let server = TestServer::start(Script::from_json(ASKS).unwrap()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    project_with(dir.path(), &server);
    let root = dir.path().to_path_buf();
    let (code, terminal) = tokio::task::spawn_blocking(move || {
        on_a_terminal(
            &root,
            &["run", "-m", "mock/m", "set up storage"],
            Some("a number, your own answer, or Enter to dismiss: "),
            b"\n",
        )
    })
    .await
    .unwrap();
    assert!(terminal.contains("The user dismissed this question"), "{code:?} {terminal:?}");
    // As OpenCode's dismissal does, the failed call ends the run: the model is not asked again.
    let main = main_requests(&server);
    assert_eq!(main.len(), 1, "{main:#?}");
    assert!(!terminal.contains("Going with the answer."), "{terminal:?}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tui_dialog_shows_the_question_and_a_key_answers_it() {
    let server = TestServer::start(Script::from_json(ASKS).unwrap()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    crate::tui::project(dir.path(), &server);
    let root = dir.path().to_path_buf();
    let (code, raw) = tokio::task::spawn_blocking(move || {
        let mut tui = Tui::start(&root, &[]);
        tui.wait_for("Type a prompt");
        tui.type_keys(b"set up storage\r");
        tui.wait_for("Which database?");
        tui.wait_for("1-9 or Enter picks");
        let screen = tui.contents();
        assert!(screen.contains("Database  Which database?"), "{screen}");
        assert!(screen.contains(" 1. SQLite ") && screen.contains("one file"), "{screen}");
        assert!(screen.contains(" 2. PostgreSQL ") && screen.contains("a server"), "{screen}");
        assert!(screen.contains(" 3. Type your own answer"), "{screen}");
        tui.type_keys(b"1");
        tui.wait_for("Going with the answer.");
        tui.wait_for("│ idle");
        assert!(!tui.contents().contains("1-9 or Enter picks"), "the dialog closed");
        tui.type_keys(b"\x03");
        tui.wait_for("press Ctrl-C again to quit");
        tui.type_keys(b"\x03");
        tui.finish()
    })
    .await
    .unwrap();
    assert_eq!(code, Some(0), "{raw}");
    assert_answer_reached_the_model(&server, "SQLite");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tui_dialog_dismisses_the_question_with_esc() {
    let server = TestServer::start(Script::from_json(ASKS).unwrap()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    crate::tui::project(dir.path(), &server);
    let root = dir.path().to_path_buf();
    let (code, raw) = tokio::task::spawn_blocking(move || {
        let mut tui = Tui::start(&root, &[]);
        tui.wait_for("Type a prompt");
        tui.type_keys(b"set up storage\r");
        tui.wait_for("1-9 or Enter picks");
        tui.type_keys(b"\x1b");
        tui.wait_for("The user dismissed this question");
        tui.wait_for("│ idle");
        let screen = tui.contents();
        assert!(!screen.contains("1-9 or Enter picks"), "the dialog closed: {screen}");
        tui.type_keys(b"\x03");
        tui.wait_for("press Ctrl-C again to quit");
        tui.type_keys(b"\x03");
        tui.finish()
    })
    .await
    .unwrap();
    assert_eq!(code, Some(0), "{raw}");
    // The dismissal ends the run: the model is not asked again.
    let main = main_requests(&server);
    assert_eq!(main.len(), 1, "{main:#?}");
    server.shutdown().await;
}

/// OpenCode's own UI, `opencode attach`, in tmux against `session serve`: the model asks, the
/// dialog shows, and the test picks the second option (or dismisses with Esc). Off the async
/// workers (it blocks).
fn drive_opencode(dir: &Path, base_url: &str, dismiss: bool) {
    use crate::opencode_tui::{Tmux, get, wait_until};
    let project = dir.join("project");
    session_e2e::mock_project_with(&project, base_url, 32_000, 4_000, serde_json::Map::new()).unwrap();
    let git = std::process::Command::new("git").args(["init", "-q"]).current_dir(&project).status();
    assert!(git.unwrap().success());
    let server = session_e2e::start_serve(&project, dir, &["--model", "mock/m"]).unwrap();
    let home = dir.join("opencode-home");
    std::fs::create_dir_all(&home).unwrap();
    let env = format!(
        "env HOME={h} XDG_CONFIG_HOME={h}/.config XDG_DATA_HOME={h}/.local/share XDG_CACHE_HOME={h}/.cache \
         OPENCODE_DISABLE_AUTOUPDATE=1 TERM=xterm-256color",
        h = home.display()
    );
    let binary = crate::opencode_cli::opencode_binary();
    let command = format!("cd {} && {env} {} attach {}", project.display(), binary.display(), server.url);
    let ui = Tmux::start(&format!("session-question-{dismiss}-{}", std::process::id()), &command);
    ui.wait_for("Ask anything");
    ui.submit("set up storage");
    let screen = ui.wait_for("↑↓ select  enter submit  esc dismiss");
    assert!(screen.contains("Which database?"), "{screen}");
    assert!(screen.contains("1. SQLite") && screen.contains("one file"), "{screen}");
    assert!(screen.contains("2. PostgreSQL") && screen.contains("a server"), "{screen}");
    assert!(screen.contains("3. Type your own answer"), "{screen}");
    // The UI lists the waiting request from `GET /question` or its event: ours, for this call.
    let waiting = get(&server, "/question");
    assert_eq!(waiting[0]["questions"][0]["header"], "Database", "{waiting}");
    if dismiss {
        ui.keys(&["Escape"], false);
        wait_until("the call to fail as dismissed", || {
            let sessions = get(&server, "/session");
            let id = sessions[0]["id"].as_str().unwrap_or_default().to_owned();
            let messages = get(&server, &format!("/session/{id}/message"));
            messages.as_array().is_some_and(|m| {
                m.iter().flat_map(|m| m["parts"].as_array().cloned().unwrap_or_default()).any(|p| {
                    p["tool"] == "question"
                        && p["state"]["status"] == "error"
                        && p["state"]["error"] == "The user dismissed this question"
                })
            })
        });
        // The dialog closed and the prompt, with its footer, is back.
        wait_until("the dialog to close", || !ui.screen().contains("esc dismiss"));
        ui.wait_for("ctrl+p commands");
    } else {
        // The second option, submitted.
        ui.keys(&["Down"], false);
        std::thread::sleep(Duration::from_millis(300));
        ui.keys(&["Enter"], false);
        ui.wait_for("Going with the answer.");
    }
    assert_eq!(get(&server, "/question"), serde_json::json!([]), "nothing waits any more");
    ui.submit("/exit");
    wait_until("the UI to exit", || !ui.alive());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_attach_answers_the_question_in_its_dialog() {
    let provider = TestServer::start(Script::from_json(ASKS).unwrap()).await.unwrap();
    let base_url = provider.base_url(session_llm::Api::OpenAiChat);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_owned();
    tokio::task::spawn_blocking(move || drive_opencode(&path, &base_url, false)).await.unwrap();
    assert_answer_reached_the_model(&provider, "PostgreSQL");
    provider.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_attach_dismisses_the_question_with_esc() {
    let provider = TestServer::start(Script::from_json(ASKS).unwrap()).await.unwrap();
    let base_url = provider.base_url(session_llm::Api::OpenAiChat);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_owned();
    tokio::task::spawn_blocking(move || drive_opencode(&path, &base_url, true)).await.unwrap();
    // The dismissal ends the run: the model is not asked again.
    let main = main_requests(&provider);
    assert_eq!(main.len(), 1, "{main:#?}");
    provider.shutdown().await;
}
