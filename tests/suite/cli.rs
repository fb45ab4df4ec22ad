//! The `session` command as a new user meets it: totals, the terminal, `models`,
//! local servers that are not running, failed starts, keys, colour, and `run`'s session flags.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::json;
use session_e2e::{mock_project, session_binary};
use session_llm::{Api, RequestKind, Script};
use session_testkit::TestServer;

/// `session ARGS` in `root/project`, with HOME at `root`, no provider keys and no
/// SESSION_CONFIG from the developer's environment, plus `env`.
fn session(root: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(session_binary().unwrap());
    command
        .args(args)
        .current_dir(root.join("project"))
        .env("HOME", root)
        .env("XDG_DATA_HOME", root.join("data"))
        .env_remove("SESSION_CONFIG")
        .env_remove("NO_COLOR")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY");
    for (name, value) in env {
        command.env(name, value);
    }
    command
}

async fn output(mut command: Command) -> Output {
    tokio::task::spawn_blocking(move || command.output().unwrap()).await.unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The session id the totals line ends with.
fn session_id(stdout: &str) -> String {
    stdout.rsplit("session: ").next().unwrap_or_default().trim().to_owned()
}

/// A port on loopback where nothing listens: bound, read and closed.
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

pub(crate) fn project_with(root: &Path, server: &TestServer) {
    mock_project(&root.join("project"), &server.base_url(Api::OpenAiChat), 32_000, 4_000).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_26_1_the_totals_line_sums_every_step_and_shows_the_context() {
    let server = TestServer::start(
        Script::from_json(
            r#"{"turns": [
                {"text": "Looking.", "calls": [{"op": "read", "path": "session.json"}],
                 "usage": {"prompt_tokens": 6165, "completion_tokens": 48}},
                {"text": "Done.", "usage": {"prompt_tokens": 9000, "completion_tokens": 40}}
            ]}"#,
        )
        .unwrap(),
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    project_with(dir.path(), &server);
    let out = output(session(dir.path(), &["run", "-m", "mock/m", "--yes", "look"], &[])).await;
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    let last = stdout.lines().last().unwrap_or_default();
    assert!(last.starts_with("tokens: 15165 in, 88 out | context: 9040 | cost: $"), "{last}");
    server.shutdown().await;
}

/// Runs `session ARGS` with stdin, stdout and stderr on one pseudo-terminal, as in a shell;
/// `answer` is typed once `prompt` shows. Returns the exit code and everything the terminal got.
pub(crate) fn on_a_terminal(
    root: &Path,
    args: &[&str],
    prompt: Option<&'static str>,
    answer: &[u8],
) -> (Option<i32>, String) {
    let pty = nix::pty::openpty(None, None).unwrap();
    let mut command = session(root, args, &[]);
    command
        .stdin(Stdio::from(pty.slave.try_clone().unwrap()))
        .stdout(Stdio::from(pty.slave.try_clone().unwrap()))
        .stderr(Stdio::from(pty.slave));
    let mut child = command.spawn().unwrap();
    // Our copies of the slave are gone with `command`: the master reads EOF/EIO at the exit.
    drop(command);
    let master = std::fs::File::from(pty.master);
    let mut typing = master.try_clone().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buffer = [0u8; 4096];
        let mut master = master;
        while let Ok(read) = std::io::Read::read(&mut master, &mut buffer) {
            if read == 0 {
                break;
            }
            seen.extend_from_slice(&buffer[..read]);
            let _ = tx.send(String::from_utf8_lossy(&seen).into_owned());
        }
        String::from_utf8_lossy(&seen).into_owned()
    });
    if let Some(prompt) = prompt {
        loop {
            let seen = rx.recv_timeout(Duration::from_secs(60)).expect("the question reached the terminal");
            if seen.contains(prompt) {
                break;
            }
        }
        // Give anything that would wrongly print meanwhile the time to land on the line.
        std::thread::sleep(Duration::from_millis(500));
        std::io::Write::write_all(&mut typing, answer).unwrap();
    }
    let status = child.wait().unwrap();
    drop(typing);
    (status.code(), reader.join().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_26_2_streamed_text_and_the_spinner_never_share_a_line() {
    let sentence = "The quick brown fox jumps over the lazy dog, slowly and word by word.";
    let script = json!({"chunk_delay": 0.12, "chunk_chars": 3, "turns": [{"text": sentence}]});
    let server = TestServer::start(Script::from_json(&script.to_string()).unwrap()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    project_with(dir.path(), &server);
    let root = dir.path().to_path_buf();
    let (code, terminal) = tokio::task::spawn_blocking(move || {
        on_a_terminal(&root, &["run", "-m", "mock/m", "say it"], None, b"")
    })
    .await
    .unwrap();
    assert_eq!(code, Some(0), "{terminal}");
    // The sentence arrived in 3-character pieces over seconds while the spinner ticked every
    // 100 ms: it is on the terminal in one piece, no spinner frame or line clearing inside.
    assert!(terminal.contains(sentence), "{terminal:?}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_26_2_a_permission_question_has_its_line_to_itself() {
    let server = TestServer::start(
        Script::from_json(
            r#"{"turns": [
                {"text": "Reading the env.", "calls": [{"op": "read", "path": ".env"}]},
                {"text": "Done reading."}
            ]}"#,
        )
        .unwrap(),
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    project_with(dir.path(), &server);
    std::fs::write(dir.path().join("project/.env"), "SECRET=1\n").unwrap();
    let root = dir.path().to_path_buf();
    let (code, terminal) = tokio::task::spawn_blocking(move || {
        on_a_terminal(&root, &["run", "-m", "mock/m", "read the env"], Some("type feedback: "), b"o\n")
    })
    .await
    .unwrap();
    assert_eq!(code, Some(0), "{terminal:?}");
    let lines: Vec<&str> = terminal.split(['\r', '\n']).filter(|line| !line.is_empty()).collect();
    // The tool's line came before the question, on a line of its own.
    // (A line may start with the spinner's "clear the line" sequence.)
    let tool = lines
        .iter()
        .position(|line| line.ends_with("  -> read .env"))
        .unwrap_or_else(|| panic!("{lines:#?}"));
    let question = lines
        .iter()
        .position(|line| line.contains("permission: read "))
        .unwrap_or_else(|| panic!("{lines:#?}"));
    assert!(tool < question, "{lines:#?}");
    // Nothing was written after the question but the typed answer (the terminal's echo).
    let asked = terminal.find("type feedback: ").unwrap() + "type feedback: ".len();
    assert!(terminal[asked..].starts_with("o\r\n"), "{:?}", &terminal[asked..]);
    assert!(terminal.contains("  ok read"), "{terminal:?}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_26_3_models_reads_the_config_run_reads_and_marks_what_run_refuses() {
    let dir = tempfile::tempdir().unwrap();
    mock_project(&dir.path().join("project"), "http://127.0.0.1:9/v1", 32_000, 4_000).unwrap();
    let out = output(session(dir.path(), &["models"], &[])).await;
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The project's own provider and model.
    assert!(stdout.lines().any(|line| line.starts_with("mock/m\tcontext 32000\toutput 4000")), "{stdout}");
    for preset in ["ollama/*", "vllm/*", "llama.cpp/*", "lmstudio/*"] {
        assert!(stdout.lines().any(|line| line.starts_with(preset)), "{preset}: {stdout}");
    }
    for refused in ["amazon-bedrock\t", "azure\t"] {
        let line =
            stdout.lines().find(|line| line.starts_with(refused)).unwrap_or_else(|| panic!("{stdout}"));
        assert!(line.contains("not usable by `session run`"), "{line}");
    }
    let only = output(session(dir.path(), &["models", "--provider", "mock"], &[])).await;
    assert_eq!(text(&only.stdout).trim(), "mock/m\tcontext 32000\toutput 4000\t$0/$0 per 1M tokens");

    // A SESSION_CONFIG that is not there is an error, as for `run`.
    let missing = output(session(dir.path(), &["models"], &[("SESSION_CONFIG", "nowhere.json")])).await;
    assert_eq!(missing.status.code(), Some(1));
    assert!(text(&missing.stderr).contains("nowhere.json"), "{}", text(&missing.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_variable_that_is_not_utf8_is_skipped_not_a_panic() {
    use std::os::unix::ffi::OsStrExt as _;
    let dir = tempfile::tempdir().unwrap();
    mock_project(&dir.path().join("project"), "http://127.0.0.1:9/v1", 32_000, 4_000).unwrap();
    let mut command = session(dir.path(), &["models", "--provider", "mock"], &[]);
    command.env(std::ffi::OsStr::from_bytes(b"LATIN1_NAME"), std::ffi::OsStr::from_bytes(b"caf\xe9"));
    command.env(std::ffi::OsStr::from_bytes(b"CAF\xc9"), "value");
    let out = output(command).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("panicked"), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "mock/m\tcontext 32000\toutput 4000\t$0/$0 per 1M tokens");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_26_4_a_local_server_that_is_not_running_fails_at_once_with_the_hint() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{}/v1", closed_port());
    // No retry policy of its own: the default one would retry a remote refusal.
    mock_project(&dir.path().join("project"), &url, 32_000, 4_000).unwrap();
    let out = output(session(dir.path(), &["run", "-m", "mock/m", "hi"], &[])).await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(!stdout.contains("retrying"), "no retry for a refused local connection: {stdout}");
    let last = stderr.trim().lines().last().unwrap_or_default();
    assert!(last.contains("ECONNREFUSED") && last.contains("server running"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_26_5_a_run_that_never_started_leaves_no_session_and_an_error_shows_in_sessions_show() {
    let server =
        TestServer::start(Script::from_json(r#"{"turns": [{"text": "First."}]}"#).unwrap()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    project_with(dir.path(), &server);
    let list = |root: &Path| {
        let out = session(root, &["sessions", "list"], &[]).output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let unknown_agent =
        output(session(dir.path(), &["run", "-m", "mock/m", "--agent", "nobody", "hi"], &[])).await;
    assert_eq!(unknown_agent.status.code(), Some(1));
    assert!(text(&unknown_agent.stderr).contains("nobody"), "{}", text(&unknown_agent.stderr));
    assert_eq!(list(dir.path()), "", "a prompt that was never stored leaves no empty session behind");
    // A start the provider never answered keeps its session: the prompt is not lost.
    let closed = format!("http://127.0.0.1:{}/v1", closed_port());
    let refused =
        output(session(dir.path(), &["run", "-m", "mock/m", "--base-url", &closed, "hi"], &[])).await;
    assert_eq!(refused.status.code(), Some(1));
    let kept = session_id(&text(&refused.stdout));
    assert!(kept.starts_with("ses_"), "{}", text(&refused.stdout));
    assert!(list(dir.path()).contains(&kept), "the failed start's session is listed");

    // A session that exists keeps its failed turn, and `sessions show` says what failed.
    let first = output(session(dir.path(), &["run", "-m", "mock/m", "one"], &[])).await;
    assert!(first.status.success(), "{}", text(&first.stderr));
    let id = session_id(&text(&first.stdout));
    let again = output(session(
        dir.path(),
        &["run", "-m", "mock/m", "--session", &id, "--base-url", &closed, "two"],
        &[],
    ))
    .await;
    assert_eq!(again.status.code(), Some(1));
    let show = output(session(dir.path(), &["sessions", "show", &id], &[])).await;
    let shown = text(&show.stdout);
    assert!(shown.contains("First."), "{shown}");
    assert!(shown.contains("[error APIError: ") && shown.contains("ECONNREFUSED"), "{shown}");
    // The folder's snapshot store, bounded, is reported (the folder need not be a git repository).
    assert!(shown.contains("\nsnapshots: ") && shown.contains("MiB of a 1024 MiB cap"), "{shown}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_26_6_an_unknown_model_comes_first_and_an_unset_env_key_is_no_key() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("project")).unwrap();
    let unknown = output(session(dir.path(), &["run", "-m", "anthropic/claude-sonnet-9", "hi"], &[])).await;
    let stderr = text(&unknown.stderr);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(
        stderr.contains("unknown model anthropic/claude-sonnet-9") && !stderr.contains("no API key"),
        "{stderr}"
    );

    let config = json!({"provider": {"anthropic": {"options": {"apiKey": "{env:MY_ANTHROPIC_KEY}"}}}});
    std::fs::write(dir.path().join("project/session.json"), config.to_string()).unwrap();
    session_testkit::trust_folder(dir.path(), &dir.path().join("project")).unwrap();
    let unset = output(session(dir.path(), &["run", "-m", "anthropic/claude-sonnet-4-5", "hi"], &[])).await;
    let stderr = text(&unset.stderr);
    assert_eq!(unset.status.code(), Some(1));
    assert!(stderr.contains("no API key for anthropic") && stderr.contains("apiKey is empty"), "{stderr}");
    assert!(stderr.contains("unset in your environment: MY_ANTHROPIC_KEY"), "names the variable: {stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_26_8_no_color_and_the_color_flag_decide_the_log_colours() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("project")).unwrap();
    let escape = |stderr: &str| stderr.contains("\u{1b}[");
    // A pipe is never coloured by default; --color always colours it, even with NO_COLOR.
    let piped = output(session(dir.path(), &["--log-level", "debug", "demo"], &[])).await;
    assert!(piped.status.success() && !text(&piped.stderr).is_empty());
    assert!(!escape(&text(&piped.stderr)));
    let always = output(session(
        dir.path(),
        &["--log-level", "debug", "--color", "always", "demo"],
        &[("NO_COLOR", "1")],
    ))
    .await;
    assert!(escape(&text(&always.stderr)));

    // On a terminal: coloured, unless NO_COLOR is set or --color never.
    let root = dir.path().to_path_buf();
    let on_terminal = move |args: &'static [&'static str], env: &'static [(&'static str, &'static str)]| {
        let pty = nix::pty::openpty(None, None).unwrap();
        let mut command = session(&root, args, env);
        command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::from(pty.slave));
        let mut child = command.spawn().unwrap();
        drop(command);
        let mut master = std::fs::File::from(pty.master);
        let mut seen = Vec::new();
        let mut buffer = [0u8; 4096];
        while let Ok(read) = std::io::Read::read(&mut master, &mut buffer) {
            if read == 0 {
                break;
            }
            seen.extend_from_slice(&buffer[..read]);
        }
        assert!(child.wait().unwrap().success());
        text(&seen)
    };
    let plain = tokio::task::spawn_blocking(move || {
        (
            on_terminal(&["--log-level", "debug", "demo"], &[]),
            on_terminal(&["--log-level", "debug", "demo"], &[("NO_COLOR", "1")]),
            on_terminal(&["--log-level", "debug", "--color", "never", "demo"], &[]),
        )
    })
    .await
    .unwrap();
    assert!(escape(&plain.0), "a terminal is coloured by default");
    assert!(!escape(&plain.1) && plain.1.contains("DEBUG"), "NO_COLOR: {}", plain.1);
    assert!(!escape(&plain.2) && plain.2.contains("DEBUG"), "--color never: {}", plain.2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_continue_fork_and_title() {
    let server = TestServer::start(
        Script::from_json(
            r#"{"turns": [{"text": "First answer."}, {"text": "Second answer."}, {"text": "Forked answer."}]}"#,
        )
        .unwrap(),
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    project_with(dir.path(), &server);
    let first =
        output(session(dir.path(), &["run", "-m", "mock/m", "--title", "My notes", "one"], &[])).await;
    assert!(first.status.success(), "{}", text(&first.stderr));
    let id = session_id(&text(&first.stdout));

    let second = output(session(dir.path(), &["run", "-m", "mock/m", "-c", "two"], &[])).await;
    assert!(second.status.success(), "{}", text(&second.stderr));
    assert_eq!(session_id(&text(&second.stdout)), id, "--continue took the latest session");
    let main: Vec<String> = server
        .requests()
        .iter()
        .filter(|r| r.kind == RequestKind::Main)
        .map(|r| r.body.to_string())
        .collect();
    assert!(main.last().unwrap().contains("First answer."), "the history went along");

    let forked = output(session(dir.path(), &["run", "-m", "mock/m", "-c", "--fork", "three"], &[])).await;
    assert!(forked.status.success(), "{}", text(&forked.stderr));
    let fork_id = session_id(&text(&forked.stdout));
    assert_ne!(fork_id, id);
    let show = |id: &str| text(&session(dir.path(), &["sessions", "show", id], &[]).output().unwrap().stdout);
    assert!(show(&fork_id).contains("Second answer.") && show(&fork_id).contains("Forked answer."));
    assert!(!show(&id).contains("Forked answer."), "the original is as it was");
    let list = text(&session(dir.path(), &["sessions", "list"], &[]).output().unwrap().stdout);
    let titled = list.lines().find(|line| line.starts_with(&id)).unwrap_or_else(|| panic!("{list}"));
    assert_eq!(titled.split('\t').nth(1), Some("My notes"), "{titled}");

    let nothing = tempfile::tempdir().unwrap();
    project_with(nothing.path(), &server);
    let none = output(session(nothing.path(), &["run", "-m", "mock/m", "-c", "hi"], &[])).await;
    assert_eq!(none.status.code(), Some(1));
    assert!(text(&none.stderr).contains("--continue: no session"), "{}", text(&none.stderr));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_opencode_json_project_runs_and_config_check_shows_its_keys() {
    let server =
        TestServer::start(Script::from_json(r#"{"turns": [{"text": "From opencode.json."}]}"#).unwrap())
            .await
            .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    // An OpenCode user's project: opencode.json, no session.json.
    mock_project(&project, &server.base_url(Api::OpenAiChat), 32_000, 4_000).unwrap();
    let config = std::fs::read_to_string(project.join("session.json")).unwrap();
    std::fs::remove_file(project.join("session.json")).unwrap();
    let mut value: serde_json::Value = serde_json::from_str(&config).unwrap();
    value["model"] = json!("mock/m");
    value["no_such_key"] = json!(true);
    std::fs::write(project.join("opencode.json"), value.to_string()).unwrap();
    let run = output(session(dir.path(), &["run", "hi"], &[])).await;
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert!(text(&run.stdout).contains("From opencode.json."));

    let check = output(session(dir.path(), &["config", "check"], &[])).await;
    let stdout = text(&check.stdout);
    assert!(check.status.success(), "{}", text(&check.stderr));
    let file = project.join("opencode.json").display().to_string();
    assert!(stdout.contains(&format!("  {file} (project, trusted)")), "{stdout}");
    assert!(stdout.contains(&format!("  model\t{file}")), "{stdout}");
    assert!(stdout.contains(&format!("  provider.mock\t{file}")), "{stdout}");
    assert!(stdout.contains("unknown key no_such_key"), "every warning: {stdout}");

    // An error fails the check, naming the file and the key.
    std::fs::write(project.join("opencode.json"), r#"{"model": 3}"#).unwrap();
    let bad = output(session(dir.path(), &["config", "check"], &[])).await;
    assert_eq!(bad.status.code(), Some(1));
    assert!(text(&bad.stderr).contains("opencode.json: model: expected a string"), "{}", text(&bad.stderr));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_sum_sessions_tokens_and_cost_per_model_and_day() {
    let server = TestServer::start(
        Script::from_json(
            r#"{"turns": [
                {"text": "One.", "usage": {"prompt_tokens": 100, "completion_tokens": 10}}
            ]}"#,
        )
        .unwrap(),
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    project_with(dir.path(), &server);
    // Two new sessions: each conversation is the script's first turn.
    for prompt in ["one", "two"] {
        let out = output(session(dir.path(), &["run", "-m", "mock/m", prompt], &[])).await;
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let out = output(session(dir.path(), &["stats"], &[])).await;
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "2 sessions, 2 assistant messages, 200 tokens in, 20 out, $0", "{stdout}");
    assert_eq!(lines[1], "by model:");
    assert_eq!(lines[2], "  mock/m\t2 sessions\t2 messages\t200 in\t20 out\t$0", "{stdout}");
    assert_eq!(lines[3], "by day (UTC):");
    let day = lines[4].trim_start().split('\t').next().unwrap();
    assert!(day.len() == 10 && day.as_bytes()[4] == b'-', "{stdout}");
    assert!(lines[4].ends_with("\t2 sessions\t2 messages\t200 in\t20 out\t$0"), "{stdout}");
    server.shutdown().await;
}

#[test]
fn completion_scripts_and_the_man_page_come_from_the_binary() {
    let run = |args: &[&str]| {
        let out = Command::new(session_binary().unwrap()).args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        text(&out.stdout)
    };
    let cases = [
        ("bash", "complete -F _session"),
        ("zsh", "#compdef session"),
        ("fish", "complete -c session"),
        ("powershell", "Register-ArgumentCompleter"),
    ];
    for (shell, sign) in cases {
        let script = run(&["completion", shell]);
        assert!(script.contains(sign), "{shell}: {script}");
        // The subcommands and their flags are in it.
        assert!(script.contains("continue") && script.contains("stats"), "{shell}");
    }
    let man = run(&["man"]);
    assert!(man.starts_with(".ie") || man.contains(".TH session"), "{man}");
    assert!(man.contains("completion") && man.contains("stats"), "{man}");
    let bad = Command::new(session_binary().unwrap()).args(["completion", "tcsh"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

/// A 1x1 PNG.
const PIXEL_PNG: [u8; 70] = [
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00,
    0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00,
    0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0x64, 0x60, 0xf8, 0x5f, 0x0f, 0x00, 0x02,
    0x87, 0x01, 0x80, 0xeb, 0x47, 0xba, 0x92, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42,
    0x60, 0x82,
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_file_attaches_text_and_images_as_file_parts() {
    let server =
        TestServer::start(Script::from_json(r#"{"turns": [{"text": "Seen."}]}"#).unwrap()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    project_with(dir.path(), &server);
    std::fs::write(dir.path().join("project/notes.txt"), "the notes say 42\n").unwrap();
    std::fs::write(dir.path().join("project/pixel.png"), PIXEL_PNG).unwrap();
    let out = output(session(
        dir.path(),
        &["run", "-m", "mock/m", "-f", "notes.txt", "--file", "pixel.png", "what is attached?"],
        &[],
    ))
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let id = session_id(&text(&out.stdout));
    let request =
        server.requests().into_iter().find(|r| r.kind == RequestKind::Main).unwrap().body.to_string();
    assert!(request.contains("the notes say 42"), "the text went inline: {request}");
    assert!(request.contains("data:image/png;base64,iVBORw0KGgo"), "the image went as an image: {request}");

    let export = session(dir.path(), &["sessions", "export", &id], &[]).output().unwrap();
    let document: serde_json::Value = serde_json::from_slice(&export.stdout).unwrap();
    let files: Vec<&str> = document["messages"][0]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["type"] == "file")
        .map(|p| p["mime"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["text/plain", "image/png"]);

    // A file that cannot be attached stops the run before anything is stored.
    let missing = output(session(dir.path(), &["run", "-m", "mock/m", "-f", "nowhere.txt", "hi"], &[])).await;
    assert_eq!(missing.status.code(), Some(1));
    assert!(text(&missing.stderr).contains("--file nowhere.txt"), "{}", text(&missing.stderr));
    server.shutdown().await;
}
