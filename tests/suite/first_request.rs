//! A first request that fails, and the session headers, through the real binary: a run whose
//! first request the provider refuses keeps its session (the prompt, the assistant's
//! `APIError`), `run --continue` goes on in it, and every request of the session, the agent's
//! and the title's, names it in `x-session-affinity` and `x-session-id`.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};
use session_e2e::session_binary;
use session_llm::{Api, RequestKind, SESSION_HEADERS, Script};
use session_testkit::TestServer;

/// A trusted project whose provider `mock` is the server at `base_url`.
fn project(root: &Path, base_url: &str) {
    let dir = root.join("project");
    std::fs::create_dir_all(&dir).unwrap();
    let config = json!({
        "provider": {"mock": {
            "npm": "@ai-sdk/openai-compatible",
            "options": {"baseURL": base_url, "apiKey": "test-key"},
            "models": {"m": {"limit": {"context": 32000, "output": 4000}}}
        }}
    });
    std::fs::write(dir.join("session.json"), config.to_string()).unwrap();
    session_testkit::trust_folder(root, &dir).unwrap();
}

async fn session(root: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(session_binary().unwrap());
    command
        .args(args)
        .current_dir(root.join("project"))
        .env("HOME", root)
        .env("XDG_DATA_HOME", root.join("data"))
        .env_remove("SESSION_CONFIG");
    tokio::task::spawn_blocking(move || command.output().unwrap()).await.unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The id on the run's closing `session: ID` line.
fn closing_session(out: &Output) -> String {
    let stdout = text(&out.stdout);
    let id = stdout.rsplit("session: ").next().unwrap_or_default().trim().to_owned();
    assert!(id.starts_with("ses_"), "no session on the closing line: {stdout}");
    id
}

async fn export(root: &Path, id: &str) -> Value {
    let out = session(root, &["sessions", "export", id]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn part_texts(message: &Value) -> Vec<&str> {
    message["parts"].as_array().unwrap().iter().filter_map(|part| part["text"].as_str()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_first_request_keeps_the_session_and_continue_goes_on_in_it() {
    let script = Script::from_json(
        &json!({
            "turns": [{"text": "Hello again."}],
            "faults": [{"at": 1, "kind": "status", "status": 401,
                "body": {"error": {"message": "Invalid API key", "type": "invalid_request_error"}}}]
        })
        .to_string(),
    )
    .unwrap();
    let server = TestServer::start(script).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    project(root, &server.base_url(Api::OpenAiChat));

    // The control: with no session in the folder, `--continue` has nothing to go on with.
    let nothing = session(root, &["run", "-m", "mock/m", "-c", "Again"]).await;
    assert_eq!(nothing.status.code(), Some(1));
    assert!(text(&nothing.stderr).contains("no session in"), "{}", text(&nothing.stderr));

    let refused = session(root, &["run", "-m", "mock/m", "Hello there"]).await;
    let stderr = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("APIError") && stderr.contains("Invalid API key"), "{stderr}");
    let id = closing_session(&refused);
    let document = export(root, &id).await;
    assert_eq!(document["info"]["id"], json!(id));
    let messages = document["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "the prompt and the failed answer: {document}");
    assert_eq!(messages[0]["info"]["role"], "user");
    assert_eq!(part_texts(&messages[0]), ["Hello there"], "what the user typed is stored");
    let error = &messages[1]["info"]["error"];
    assert_eq!(messages[1]["info"]["role"], "assistant");
    assert_eq!(error["name"], "APIError", "{error}");
    assert_eq!(error["data"]["statusCode"], 401, "{error}");
    assert!(error["data"]["message"].as_str().unwrap().contains("Invalid API key"), "{error}");
    // A turn no step started in changed nothing, and its summaries say so, as OpenCode's do.
    assert_eq!(messages[0]["info"]["summary"], json!({"diffs": []}), "{document}");
    assert_eq!(document["info"]["summary"], json!({"additions": 0, "deletions": 0, "files": 0}));

    let continued = session(root, &["run", "-m", "mock/m", "-c", "Again"]).await;
    assert!(continued.status.success(), "{}", text(&continued.stderr));
    assert!(text(&continued.stdout).contains("Hello again."), "{}", text(&continued.stdout));
    assert_eq!(closing_session(&continued), id, "the same session went on");
    let document = export(root, &id).await;
    let messages = document["messages"].as_array().unwrap();
    let texts: Vec<Vec<&str>> = messages.iter().map(part_texts).collect();
    assert_eq!(texts, [vec!["Hello there"], vec![], vec!["Again"], vec!["Hello again."]]);
    // The request after the failure carries the first prompt: nothing the user typed was lost.
    let last = server.requests().iter().rfind(|r| r.kind == RequestKind::Main).unwrap().body.to_string();
    assert!(last.contains("Hello there") && last.contains("Again"), "{last}");

    // Every request of the session named it, the one refused (sent before the session was
    // stored) and the title's included.
    let requests = server.requests();
    assert!(requests.iter().any(|r| r.kind == RequestKind::Title), "a title was asked for");
    assert!(requests.iter().filter(|r| r.kind == RequestKind::Main).count() >= 2);
    for request in &requests {
        for name in SESSION_HEADERS {
            assert_eq!(
                request.headers.get(name),
                Some(&id),
                "{:?} request {}: {name}",
                request.kind,
                request.index
            );
        }
    }
    server.shutdown().await;
}
