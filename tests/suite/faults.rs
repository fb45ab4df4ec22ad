//! Provider faults through the real `session run --format json --yes`: the loopback server
//! injects each provider fault on a chosen request or mid-stream, and every case checks the
//! outcome SPEC 7, 8 and 10 prescribe (a retry after the right delay, a compaction, or a clear
//! stop), the `session.status` events in order, and that every part the run reported is in
//! the store afterwards, as reported.
//!
//! Delays are lower bounds read from the server's request log (the monotonic arrival times of
//! the failed request and of its retry); nothing asserts an upper bound on wall time. Cases
//! of one test run concurrently, since they mostly wait.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use session_core::{Identifier as _, Message, Part, PartKind, SessionId, ToolState};
use session_e2e::session_binary;
use session_llm::{Api, RequestKind, Script};
use session_store::{DatabaseConfig, SqliteConfig, StoreOptions};
use session_testkit::{RecordedRequest, TestServer};

/// The idle timeout configured for every case (`provider.mock.options.chunkTimeout`), short
/// so that a stall fails fast; far longer than any pause of a healthy scripted stream, even on
/// two cores busy with a build (400 ms was seen to expire there). (Not 1500 or any number with
/// "500" in it: a message holding "500" would be retried for that alone, SPEC 7.2 pattern 1.)
const CHUNK_TIMEOUT_MS: u64 = 1_800;

/// SPEC 7.1: the first backoff without a hint is at least 2 000 ms.
const FIRST_BACKOFF_MS: u64 = 2000;

/// The AI SDK package that makes `session` speak `api`.
fn npm(api: Api) -> &'static str {
    match api {
        Api::OpenAiChat => "@ai-sdk/openai-compatible",
        Api::OpenAiResponses => "@ai-sdk/openai",
        Api::Anthropic => "@ai-sdk/anthropic",
        Api::Gemini => "@ai-sdk/google",
    }
}

/// A project whose config points provider `mock` (speaking `api`) at the server.
fn project(dir: &Path, api: Api, base_url: &str) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("README.md"), "# app\n\nA tiny CLI.\n").unwrap();
    std::fs::write(dir.join("src/app.py"), "print('hello')\n").unwrap();
    let config = json!({
        "provider": {"mock": {
            "npm": npm(api),
            "options": {"baseURL": base_url, "apiKey": "test-key", "chunkTimeout": CHUNK_TIMEOUT_MS},
            "models": {"m": {"limit": {"context": 32000, "output": 4000}, "cost": {"input": 1, "output": 2}}}
        }}
    });
    std::fs::write(dir.join("session.json"), serde_json::to_string_pretty(&config).unwrap()).unwrap();
    // The tests run with HOME one level above the project; the project's config is trusted.
    session_testkit::trust_folder(dir.parent().unwrap(), dir).unwrap();
}

/// One finished `session run` and what the server saw.
struct Run {
    name: String,
    code: Option<i32>,
    /// The JSON lines, parsed.
    events: Vec<Value>,
    stdout: String,
    stderr: String,
    requests: Vec<RecordedRequest>,
    db: PathBuf,
    _dir: tempfile::TempDir,
}

impl Run {
    /// Everything a failed assertion should show.
    fn context(&self) -> String {
        let log: Vec<String> = self
            .requests
            .iter()
            .map(|r| {
                format!("#{} {:?} {:?} status {:?} at {:?}", r.index, r.kind, r.fault, r.status, r.received)
            })
            .collect();
        format!(
            "case {}: exit {:?}\nrequests:\n{}\nstderr:\n{}\nstdout:\n{}",
            self.name,
            self.code,
            log.join("\n"),
            self.stderr,
            self.stdout
        )
    }

    /// The `session.status` statuses in order, consecutive repeats merged (busy is set at
    /// every loop iteration and every attempt).
    fn statuses(&self) -> Vec<Value> {
        let mut statuses: Vec<Value> = Vec::new();
        for event in self.events.iter().filter(|e| e["type"] == "session.status") {
            let status = event["properties"]["status"].clone();
            let same = statuses
                .last()
                .is_some_and(|last| last["type"] == status["type"] && status["type"] != "retry");
            if !same {
                statuses.push(status);
            }
        }
        statuses
    }

    /// The status types in order, repeats merged.
    fn status_types(&self) -> Vec<String> {
        self.statuses().iter().map(|s| s["type"].as_str().unwrap_or_default().to_owned()).collect()
    }

    /// The events of one type.
    fn of_type(&self, kind: &str) -> Vec<&Value> {
        self.events.iter().filter(|e| e["type"] == kind).collect()
    }

    fn session_id(&self) -> String {
        let event = self.of_type("session.status").into_iter().next();
        event.and_then(|e| e["properties"]["sessionID"].as_str()).unwrap_or_default().to_owned()
    }

    /// Every part the run reported, by id, as its last `message.part.updated` said plus the
    /// text deltas reported after it.
    fn reported_parts(&self) -> BTreeMap<String, Part> {
        let mut parts = BTreeMap::new();
        for event in &self.events {
            let properties = &event["properties"];
            if event["type"] == "message.part.updated" {
                let part: Part = serde_json::from_value(properties["part"].clone()).unwrap();
                parts.insert(part.id.to_string(), part);
            } else if event["type"] == "message.part.delta" && properties["field"] == "text" {
                let id = properties["partID"].as_str().unwrap_or_default();
                let delta = properties["delta"].as_str().unwrap_or_default();
                match parts.get_mut(id).map(|part| &mut part.kind) {
                    Some(PartKind::Text(text)) => text.text.push_str(delta),
                    Some(PartKind::Reasoning(reasoning)) => reasoning.text.push_str(delta),
                    _ => {}
                }
            }
        }
        parts
    }

    /// The main requests, in order.
    fn main_requests(&self) -> Vec<&RecordedRequest> {
        self.requests.iter().filter(|r| r.kind == RequestKind::Main).collect()
    }

    /// The assistant text the run streamed.
    fn streamed_text(&self) -> String {
        self.of_type("message.part.delta")
            .into_iter()
            .filter(|e| e["properties"]["field"] == "text")
            .filter_map(|e| e["properties"]["delta"].as_str())
            .collect()
    }
}

/// Runs `session run` on `script` (JSON) with provider `mock` speaking `api`.
async fn run_case(name: &str, api: Api, script: String) -> Run {
    let server = TestServer::start(Script::from_json(&script).unwrap()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let project_dir = dir.path().join("project");
    project(&project_dir, api, &server.base_url(api));
    let binary = session_binary().unwrap();
    let (home, data) = (dir.path().to_path_buf(), dir.path().join("data"));
    let output = tokio::task::spawn_blocking(move || {
        Command::new(binary)
            .args(["run", "--model", "mock/m", "--format", "events", "--yes", "Say hello."])
            .current_dir(project_dir)
            .env("HOME", &home)
            .env("XDG_DATA_HOME", &data)
            .env_remove("SESSION_CONFIG")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let events = stdout.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let run = Run {
        name: name.to_owned(),
        code: output.status.code(),
        events,
        stdout,
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        requests: server.requests(),
        db: dir.path().join("data/session/session.db"),
        _dir: dir,
    };
    let violations = server.violations();
    assert!(violations.is_empty(), "{violations:?}\n{}", run.context());
    server.shutdown().await;
    run
}

/// Every part the run reported is in the store exactly as last reported, nothing is left
/// pending or running, and every assistant message is completed.
async fn assert_stored(run: &Run) {
    let store =
        session_store::open(&DatabaseConfig::Sqlite(SqliteConfig::new(&run.db)), StoreOptions::default())
            .await
            .unwrap();
    let id = SessionId::parse(&run.session_id()).unwrap();
    let history = store.load_history(&id).await.unwrap();
    store.close().await.unwrap();
    assert!(history.skipped.is_empty(), "{:?}\n{}", history.skipped, run.context());
    let mut stored = BTreeMap::new();
    for message in &history.messages {
        if let Message::Assistant(info) = &message.info {
            assert!(info.time.completed.is_some(), "assistant {} unfinished\n{}", info.id, run.context());
        }
        for part in &message.parts {
            if let PartKind::Tool(tool) = &part.kind {
                assert!(
                    !matches!(tool.state, ToolState::Pending { .. } | ToolState::Running { .. }),
                    "{part:?}\n{}",
                    run.context()
                );
            }
            stored.insert(part.id.to_string(), part.clone());
        }
    }
    let reported = run.reported_parts();
    assert!(!reported.is_empty(), "{}", run.context());
    for (id, part) in &reported {
        assert_eq!(stored.get(id), Some(part), "part {id} differs from what was reported\n{}", run.context());
    }
}

/// The run ended well: exit 0 and the scripted answer.
fn assert_success(run: &Run, answer: &str) {
    assert_eq!(run.code, Some(0), "{}", run.context());
    assert!(run.streamed_text().contains(answer), "{}", run.context());
}

/// The run stopped clearly on a fault that is not retried (SPEC 7.2, 8 step 4): exit 1, one
/// request, statuses busy then idle, `session.error` and the one stderr line naming the error.
fn assert_clear_stop(run: &Run, error_text: &str) {
    assert_eq!(run.code, Some(1), "{}", run.context());
    assert_eq!(run.main_requests().len(), 1, "{}", run.context());
    assert_eq!(run.status_types(), ["busy", "idle"], "{}", run.context());
    let errors = run.of_type("session.error");
    assert_eq!(errors.len(), 1, "{}", run.context());
    let message = errors[0]["properties"]["error"]["data"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(error_text), "{message}\n{}", run.context());
    assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.context());
    assert!(run.stderr.contains(error_text), "{}", run.context());
}

/// One retry: statuses busy, retry 1, busy, idle; the retry waited at least `min_ms` after
/// the failed request (server arrival times), and its `next` says so too.
fn assert_one_retry(run: &Run, min_ms: u64) -> String {
    assert_eq!(run.status_types(), ["busy", "retry", "busy", "idle"], "{}", run.context());
    let retry = &run.statuses()[1];
    assert_eq!(retry["attempt"], 1, "{}", run.context());
    let message = retry["message"].as_str().unwrap_or_default().to_owned();
    assert!(!message.is_empty(), "{}", run.context());
    let main = run.main_requests();
    assert_eq!(main.len(), 2, "{}", run.context());
    let (failed, retried) = (main[0], main[1]);
    assert!(failed.fault.is_some() && retried.fault.is_none(), "{}", run.context());
    let waited = retried.received.saturating_sub(failed.received);
    assert!(waited >= Duration::from_millis(min_ms), "waited {waited:?} < {min_ms} ms\n{}", run.context());
    // `next` is when the runtime meant to retry: no earlier than the hint after the failure,
    // and not after the retry really arrived (1 ms of rounding between the two clocks).
    let next = retry["next"].as_u64().unwrap();
    assert!(next >= failed.received_unix_ms + min_ms, "next {next}\n{}", run.context());
    assert!(next <= retried.received_unix_ms + 1, "next {next}\n{}", run.context());
    message
}

fn unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

const HELLO: &str =
    r#"{"text": "Hello from the scripted model.", "usage": {"prompt_tokens": 900, "completion_tokens": 12}}"#;

fn one_turn_with(fault: &Value) -> String {
    format!(r#"{{"turns": [{HELLO}], "faults": [{fault}]}}"#)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_wait_as_long_as_the_server_says() {
    // An HTTP date 1-2 s ahead (dates have whole seconds).
    let until = SystemTime::now() + Duration::from_secs(2);
    let date = httpdate::fmt_http_date(until);
    let date_ms =
        httpdate::parse_http_date(&date).unwrap().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
    let cases = [
        ("429 retry-after-ms", Api::OpenAiChat, json!({"at": 1, "kind": "429", "retry_after_ms": 300}), 300),
        (
            "429 retry-after seconds",
            Api::OpenAiResponses,
            json!({"at": 1, "kind": "429", "retry_after": "1"}),
            1000,
        ),
        ("429 retry-after date", Api::Anthropic, json!({"at": 1, "kind": "429", "retry_after": date}), 0),
    ];
    let started = unix_ms();
    let runs = futures_util::future::join_all(
        cases.iter().map(|(name, api, fault, _)| run_case(name, *api, one_turn_with(fault))),
    )
    .await;
    for (run, (_, _, _, min_ms)) in runs.iter().zip(&cases) {
        assert_success(run, "Hello from the scripted model.");
        let main = run.main_requests();
        // The date case: whatever the failed request's time, the retry comes after the date.
        let min_ms = match *min_ms {
            0 => date_ms.saturating_sub(main[0].received_unix_ms.max(started)),
            min => min,
        };
        assert_one_retry(run, min_ms);
        if run.name.ends_with("date") {
            assert!(main[1].received_unix_ms >= date_ms, "{}", run.context());
        }
        assert_stored(run).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_back_off_then_succeed() {
    let cases = [
        ("500", Api::OpenAiChat, json!({"at": 1, "kind": "500"})),
        ("502", Api::OpenAiResponses, json!({"at": 1, "kind": "502"})),
        ("503", Api::Gemini, json!({"at": 1, "kind": "503"})),
        ("529 overloaded", Api::Anthropic, json!({"at": 1, "kind": "529"})),
    ];
    let runs = futures_util::future::join_all(
        cases.iter().map(|(name, api, fault)| run_case(name, *api, one_turn_with(fault))),
    )
    .await;
    for run in &runs {
        assert_success(run, "Hello from the scripted model.");
        // No hint in the headers: the jittered exponential delay, at least 2 s (SPEC 7.1).
        let message = assert_one_retry(run, FIRST_BACKOFF_MS);
        if run.name.starts_with("529") {
            assert_eq!(message, "Provider is overloaded", "{}", run.context());
        }
        assert_stored(run).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_streams_retry_or_stop_clearly() {
    // A tool step whose stream breaks after six chunks (paced, so they reach the client and
    // parts are written before the fault), then the answer.
    let script = |fault: Value| {
        format!(
            r#"{{"turns": [{{"text": "Reading the readme first, then I will answer.", "calls": [{{"op": "read", "path": "README.md"}}]}}, {HELLO}],
                "chunk_chars": 8, "chunk_delay": 0.02, "faults": [{fault}]}}"#
        )
    };
    let cases = [
        ("reset mid-stream", Api::OpenAiChat, json!({"at": 1, "kind": "reset", "after_chunks": 6})),
        ("stall", Api::Anthropic, json!({"at": 1, "kind": "stall", "after_chunks": 6})),
        ("malformed event", Api::OpenAiResponses, json!({"at": 1, "kind": "malformed", "after_chunks": 6})),
        ("cut before terminal event", Api::Gemini, json!({"at": 1, "kind": "cut", "after_chunks": 6})),
    ];
    let runs = futures_util::future::join_all(
        cases.iter().map(|(name, api, fault)| run_case(name, *api, script(fault.clone()))),
    )
    .await;
    for run in &runs {
        // Text of the broken attempt reached the client before the fault.
        assert!(run.streamed_text().starts_with("Reading "), "{}", run.context());
        match run.name.as_str() {
            "reset mid-stream" | "stall" => {
                assert_success(run, "Hello from the scripted model.");
                // The retried step ran its tool, then the answer came: three main requests.
                let main = run.main_requests();
                assert_eq!(main.len(), 3, "{}", run.context());
                assert_eq!(run.status_types(), ["busy", "retry", "busy", "idle"], "{}", run.context());
                let retry = &run.statuses()[1];
                assert_eq!(retry["attempt"], 1, "{}", run.context());
                // No headers: the jittered exponential delay, at least 2 s (SPEC 7.1); a
                // stall first waits out the idle timeout.
                let min = match run.name.as_str() {
                    "stall" => FIRST_BACKOFF_MS + CHUNK_TIMEOUT_MS,
                    _ => FIRST_BACKOFF_MS,
                };
                let waited = main[1].received.saturating_sub(main[0].received);
                assert!(waited >= Duration::from_millis(min), "waited {waited:?}\n{}", run.context());
                let message = retry["message"].as_str().unwrap_or_default().to_lowercase();
                let expected = if run.name == "stall" { "timed out" } else { "reset" };
                assert!(message.contains(expected), "{message}\n{}", run.context());
            }
            "malformed event" => assert_clear_stop(run, "malformed JSON in event"),
            _ => assert_clear_stop(run, "stream ended before"),
        }
        assert_stored(run).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_overflow_compacts_in_every_provider_wording() {
    let apis = [Api::OpenAiChat, Api::OpenAiResponses, Api::Anthropic, Api::Gemini];
    let fault = json!({"at": 1, "kind": "overflow"});
    let runs = futures_util::future::join_all(
        apis.iter().map(|api| run_case(api.as_str(), *api, one_turn_with(&fault))),
    )
    .await;
    for run in &runs {
        assert_success(run, "Hello from the scripted model.");
        // SPEC 8 step 4: the overflow is published, never retried, and compaction follows:
        // a summary request, then the turn runs again.
        let errors = run.of_type("session.error");
        assert_eq!(errors.len(), 1, "{}", run.context());
        assert_eq!(errors[0]["properties"]["error"]["name"], "ContextOverflowError", "{}", run.context());
        assert_eq!(run.status_types(), ["busy", "idle"], "{}", run.context());
        let kinds: Vec<RequestKind> =
            run.requests.iter().filter(|r| r.kind != RequestKind::Title).map(|r| r.kind).collect();
        assert_eq!(kinds, [RequestKind::Main, RequestKind::Summary, RequestKind::Main], "{}", run.context());
        assert_eq!(run.of_type("session.compacted").len(), 1, "{}", run.context());
        assert_stored(run).await;
    }
}
