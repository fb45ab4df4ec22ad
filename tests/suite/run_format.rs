//! `session run --format json` against the loopback scripted provider, in the shape of OpenCode
//! 1.18's `opencode run --format json`: every line is compared with the reference lines the real
//! client printed for the same scripts (`tests/fixtures/opencode_run_json`, see its README), and
//! the normalised lines are snapshotted. The real client attached to `session serve` is held to
//! the same reference.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Map, Value};
use session_e2e::session_binary;
use session_llm::{Api, Script};
use session_testkit::TestServer;

/// The folder of the reference lines and their scripts.
fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/opencode_run_json")
}

/// The reference lines `name` (JSON lines).
fn reference(name: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(fixtures().join(name)).unwrap();
    text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

/// One `session run --format json` run.
struct JsonRun {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    /// The lines, normalised like the reference (ids, times, the project path).
    lines: Vec<Value>,
    _dir: tempfile::TempDir,
}

impl JsonRun {
    fn context(&self) -> String {
        format!("exit {:?}\nstdout:\n{}\nstderr:\n{}", self.code, self.stdout, self.stderr)
    }

    fn types(&self) -> Vec<&str> {
        self.lines.iter().map(|line| line["type"].as_str().unwrap_or_default()).collect()
    }

    /// The normalised lines, one per line, for a snapshot.
    fn snapshot(&self) -> String {
        self.lines.iter().map(|line| serde_json::to_string(line).unwrap() + "\n").collect()
    }
}

/// Runs `session run --model mock/m --yes --format json <extra> <prompt>` on the script file
/// `script` (its own prompt) in a fresh project served by the loopback provider.
async fn run_json(script: &str, extra: &[&str]) -> JsonRun {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let mut script = Script::load(&fixtures().join(script)).unwrap();
    script.workdir = Some(project.clone());
    let prompt = script.prompt.clone().unwrap();
    let server = TestServer::start(script).await.unwrap();
    session_e2e::mock_project(&project, &server.base_url(Api::OpenAiChat), 32_000, 4_000).unwrap();
    let binary = session_binary().unwrap();
    let mut args: Vec<String> =
        ["run", "--model", "mock/m", "--yes", "--format", "json"].map(String::from).to_vec();
    args.extend(extra.iter().map(|arg| (*arg).to_owned()));
    args.push(prompt);
    let (home, cwd) = (dir.path().to_owned(), project.clone());
    let output = tokio::task::spawn_blocking(move || {
        Command::new(binary)
            .args(&args)
            .current_dir(cwd)
            .env("HOME", &home)
            .env("XDG_DATA_HOME", home.join("data"))
            .env_remove("SESSION_CONFIG")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    server.assert_invariants();
    server.shutdown().await;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let lines = stdout
        .lines()
        .map(|line| match serde_json::from_str(line) {
            Ok(value) => normalize(value, None, &project),
            Err(error) => panic!("not a JSON line ({error}): {line}\n{stdout}"),
        })
        .collect();
    JsonRun {
        code: output.status.code(),
        stdout,
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        lines,
        _dir: dir,
    }
}

/// Replaces what differs between runs as the reference's capture did: ids by their prefix,
/// times by 0, the project folder by `{project}`, a loopback port by `{port}`, a snapshot's
/// tree hash by `{tree}`.
fn normalize(value: Value, key: Option<&str>, project: &Path) -> Value {
    match value {
        Value::Object(object) => Value::Object(
            object.into_iter().map(|(k, v)| (k.clone(), normalize(v, Some(&k), project))).collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(|v| normalize(v, None, project)).collect()),
        Value::Number(_) if matches!(key, Some("timestamp" | "start" | "end")) => Value::from(0),
        Value::String(_) if key == Some("snapshot") => Value::from("{tree}"),
        Value::String(text) => {
            let text = text.replace(&project.display().to_string(), "{project}");
            let id = ["ses_", "msg_", "prt_"].into_iter().find(|prefix| {
                text.strip_prefix(prefix)
                    .is_some_and(|rest| rest.len() >= 20 && rest.chars().all(|c| c.is_ascii_alphanumeric()))
            });
            match id {
                Some(prefix) => Value::from(prefix),
                None => Value::from(loopback_port(&text)),
            }
        }
        other => other,
    }
}

/// `text` with the port of `127.0.0.1:<port>` replaced by `{port}`.
fn loopback_port(text: &str) -> String {
    const HOST: &str = "127.0.0.1:";
    let Some(at) = text.find(HOST) else { return text.to_owned() };
    let rest = &text[at + HOST.len()..];
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    format!("{}{HOST}{{port}}{}", &text[..at], &rest[digits..])
}

/// The JSON type of every leaf, keyed by its path (`part.state.status`); arrays by `[]`.
fn shape(value: &Value, path: &str, into: &mut Map<String, Value>) {
    let kind = match value {
        Value::Object(object) => {
            for (key, child) in object {
                shape(child, &format!("{path}.{key}"), into);
            }
            "object"
        }
        Value::Array(items) => {
            for item in items {
                shape(item, &format!("{path}[]"), into);
            }
            "array"
        }
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "boolean",
        Value::Null => "null",
    };
    into.insert(path.to_owned(), Value::from(kind));
}

/// Paths under which the content is the tool's or the provider's own, not the line format's:
/// a tool's input and metadata, the details of an error beyond its name and message, and a
/// step part's snapshot (OpenCode's lines were captured in a folder that is not a git
/// repository, where OpenCode takes no snapshots; ours snapshots such folders too).
const OPEN: [&str; 4] = [".part.state.input.", ".part.state.metadata.", ".error.data.", ".part.snapshot"];

/// The one field under [`OPEN`] every error has.
const CHECKED: &str = ".error.data.message";

/// Asserts the lines have the reference's types in its order, and that every field of every
/// reference line is in ours with the same JSON type, and ours has no field theirs lacks.
fn assert_shape_matches(run: &JsonRun, reference_name: &str) {
    let reference = reference(reference_name);
    let expected: Vec<&str> = reference.iter().map(|line| line["type"].as_str().unwrap()).collect();
    assert_eq!(run.types(), expected, "line types against {reference_name}\n{}", run.context());
    for (ours, theirs) in run.lines.iter().zip(&reference) {
        let (mut our_shape, mut their_shape) = (Map::new(), Map::new());
        shape(ours, "", &mut our_shape);
        shape(theirs, "", &mut their_shape);
        let open = |path: &String| path != CHECKED && OPEN.iter().any(|prefix| path.starts_with(prefix));
        let wrong: Vec<String> = their_shape
            .iter()
            .filter(|(path, _)| !open(path))
            .filter(|(path, kind)| our_shape.get(*path) != Some(*kind))
            .map(|(path, kind)| format!("{path}: {kind} in OpenCode's, {:?} in ours", our_shape.get(path)))
            .collect();
        let extra: BTreeSet<&String> =
            our_shape.keys().filter(|path| !their_shape.contains_key(*path) && !open(path)).collect();
        assert!(
            wrong.is_empty() && extra.is_empty(),
            "{reference_name}: a {} line differs from OpenCode's\nmissing or of another type: {wrong:#?}\nonly in ours: {extra:#?}\nours: {ours}\ntheirs: {theirs}",
            ours["type"]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_lines_of_a_tool_step_are_opencodes() {
    let run = run_json("tool_step.script.json", &[]).await;
    assert_eq!(run.code, Some(0), "{}", run.context());
    assert_shape_matches(&run, "tool_step.jsonl");
    // What a wrapper reads off the lines.
    let tool = &run.lines[2]["part"];
    assert_eq!((&tool["tool"], &tool["state"]["status"]), (&Value::from("bash"), &Value::from("completed")));
    assert_eq!(tool["state"]["output"], "hello-from-bash\n");
    assert_eq!(run.lines[5]["part"]["text"], "Done: the command printed its greeting.");
    assert_eq!(run.lines[6]["part"]["tokens"]["input"], 900);
    insta::assert_snapshot!(run.snapshot());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thinking_adds_the_reasoning_lines() {
    let run = run_json("tool_step.script.json", &["--thinking"]).await;
    assert_eq!(run.code, Some(0), "{}", run.context());
    assert_shape_matches(&run, "tool_step_thinking.jsonl");
    assert_eq!(run.lines[1]["part"]["text"], "I should run a command.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_tool_call_is_a_tool_use_line_with_its_error() {
    let run = run_json("tool_error.script.json", &[]).await;
    assert_eq!(run.code, Some(0), "{}", run.context());
    assert_shape_matches(&run, "tool_error.jsonl");
    let state = &run.lines[1]["part"]["state"];
    assert_eq!(state["status"], "error");
    assert!(state["error"].as_str().unwrap().contains("missing.txt"), "{state}");
    insta::assert_snapshot!(run.snapshot());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_error_is_one_error_line_and_exit_1() {
    let run = run_json("api_error.script.json", &[]).await;
    assert_eq!(run.code, Some(1), "{}", run.context());
    assert_shape_matches(&run, "api_error.jsonl");
    let error = &run.lines[0]["error"];
    assert_eq!(error["name"], "APIError");
    assert!(error["data"]["message"].as_str().unwrap().contains("bad request (mock)"), "{error}");
    assert_eq!(error["data"]["statusCode"], 400);
    // The error is on stdout as a line; stderr says it for a person.
    assert!(run.stderr.contains("bad request (mock)"), "{}", run.context());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_prompt_is_an_error_line_too() {
    let run = run_json("tool_step.script.json", &["--agent", "nobody"]).await;
    assert_eq!(run.code, Some(1), "{}", run.context());
    assert_eq!(run.types(), ["error"], "{}", run.context());
    let error = &run.lines[0]["error"];
    assert_eq!(error["name"], "UnknownError");
    assert!(error["data"]["message"].as_str().unwrap().contains("nobody"), "{error}");
    assert_eq!(run.lines[0]["sessionID"], "ses_");
}

/// The real client attached to `session serve` prints, for the same script, lines of the same
/// shape as the reference (and so as `session run --format json`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_attached_to_session_serve_prints_the_same_shape() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let mut script = Script::load(&fixtures().join("tool_step.script.json")).unwrap();
    script.workdir = Some(project.clone());
    // At a model's pace. OpenCode's `run --attach` exits as soon as its prompt request
    // answers, without reading what its event stream still holds, and it starts reading that
    // stream some 30-40 ms after connecting: a run that ends sooner prints nothing, whatever
    // the server (docs/http-api.md). Ten chunks of 40 ms keep the run well past that.
    script.chunk_delay = std::time::Duration::from_millis(40);
    // The first turn waits instead, then streams at once: its text part ends when the model's
    // stream ends (SPEC 1.1, as in OpenCode), and a paced stream would end after the quick
    // `bash` call it started, so the tool's line would come first (the differential suite's
    // `paced_text_and_call` case shows OpenCode doing the same).
    script.turns[0].delay = std::time::Duration::from_millis(400);
    script.turns[0].chunk_delay = Some(std::time::Duration::ZERO);
    let prompt = script.prompt.clone().unwrap();
    let server = TestServer::start(script).await.unwrap();
    session_e2e::mock_project(&project, &server.base_url(Api::OpenAiChat), 32_000, 4_000).unwrap();
    let (home, cwd) = (dir.path().to_owned(), project.clone());
    let output = tokio::task::spawn_blocking(move || {
        let serve = session_e2e::start_serve(&cwd, &home, &["--model", "mock/m"]).unwrap();
        let client_home = home.join("opencode-home");
        let output = Command::new(super::opencode_cli::opencode_binary())
            .args(["run", "--attach", &serve.url, "--auto", "--format", "json", &prompt])
            .current_dir(&cwd)
            .env("HOME", &client_home)
            .env("XDG_CONFIG_HOME", client_home.join(".config"))
            .env("XDG_DATA_HOME", client_home.join(".local/share"))
            .env("XDG_CACHE_HOME", client_home.join(".cache"))
            .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
            .env("NO_COLOR", "1")
            .env_remove("OPENCODE_SERVER_PASSWORD")
            .output()
            .unwrap();
        drop(serve);
        output
    })
    .await
    .unwrap();
    server.shutdown().await;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let lines =
        stdout.lines().map(|line| normalize(serde_json::from_str(line).unwrap(), None, &project)).collect();
    let run = JsonRun {
        code: output.status.code(),
        stdout,
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        lines,
        _dir: dir,
    };
    assert_eq!(run.code, Some(0), "{}", run.context());
    assert_shape_matches(&run, "tool_step.jsonl");
}
