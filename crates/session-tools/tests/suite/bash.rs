//! bash with real child processes: exit codes, timeouts, SIGTERM-proof commands, cancellation
//! of the whole process group, output caps, progress.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use session_core::JsonObject;
use session_tools::{MAX_OUTPUT_CHARS, PermissionAnswer, ProgressSink};
use tokio_util::sync::CancellationToken;

use super::support::{Fixture, ScriptedAsker, build_rules};

fn alive(pid: &str) -> bool {
    // A zombie is dead for our purposes; /proc/<pid>/stat shows its state.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| stat.split_whitespace().nth(2).is_none_or(|state| state != "Z"))
        .unwrap_or(false)
}

async fn wait_for_file(path: &std::path::Path) -> String {
    for _ in 0..200 {
        if let Ok(text) = std::fs::read_to_string(path)
            && text.ends_with('\n')
        {
            return text.trim().to_owned();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{} never appeared", path.display());
}

#[tokio::test]
async fn a_call_without_description_runs_and_silence_reads_no_output() {
    let fx = Fixture::new();
    // OpenCode 1.18.34 offers `description` as optional: a call without it runs.
    let result = fx.run("bash", json!({"command": "true"})).await.unwrap();
    assert_eq!(result.metadata["exit"], json!(0));
    assert_eq!(result.output, "(no output)");
    assert_eq!(result.metadata["output"], json!("(no output)"));
    assert_eq!(result.title, "true");
    // Control: a command that prints keeps its own output.
    let result = fx.run("bash", json!({"command": "printf x"})).await.unwrap();
    assert_eq!(result.output, "x");
}

#[tokio::test]
async fn runs_a_command_and_reports_exit_codes() {
    let fx = Fixture::new();
    let result =
        fx.run("bash", json!({"command": "echo out; echo err >&2", "description": "Echoes"})).await.unwrap();
    assert!(result.output.contains("out\n") && result.output.contains("err\n"), "{}", result.output);
    assert_eq!(result.metadata["exit"], json!(0));
    // The title is the command, as OpenCode 1.18.34 gives it; the description is not metadata.
    assert_eq!(result.title, "echo out; echo err >&2");
    assert_eq!(result.metadata.get("description"), None);
    let result = fx.run("bash", json!({"command": "pwd; exit 3", "description": "Fails"})).await.unwrap();
    assert_eq!(result.metadata["exit"], json!(3));
    assert_eq!(result.output.trim(), fx.root.to_str().unwrap());
    fx.write("sub/x", "");
    let result =
        fx.run("bash", json!({"command": "pwd", "workdir": "sub", "description": "Pwd"})).await.unwrap();
    assert_eq!(result.output.trim(), fx.root.join("sub").to_str().unwrap());
}

#[tokio::test]
async fn a_timeout_kills_the_command() {
    let fx = Fixture::new();
    let started = Instant::now();
    let result = fx
        .run("bash", json!({"command": "echo begun; sleep 30", "timeout": 300, "description": "Sleeps"}))
        .await
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    assert!(result.output.starts_with("begun\n"), "{}", result.output);
    assert!(result.output.ends_with("(Command timed out after 300 ms)"), "{}", result.output);
    assert_eq!(result.metadata["exit"], Value::Null);
    assert_eq!(result.metadata["timedOut"], json!(true));
}

#[tokio::test]
async fn a_command_that_ignores_sigterm_is_killed_with_sigkill() {
    let fx = Fixture::new();
    let pidfile = fx.root.join("pid");
    let command = format!("trap '' TERM; sleep 60 & echo $! > {}; wait", pidfile.display());
    let started = Instant::now();
    let result =
        fx.run("bash", json!({"command": command, "timeout": 300, "description": "Stubborn"})).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    assert!(result.output.contains("timed out"), "{}", result.output);
    let pid = std::fs::read_to_string(&pidfile).unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!alive(pid.trim()), "grandchild {pid} survived");
}

#[tokio::test]
async fn cancelling_kills_the_group_and_keeps_the_partial_output() {
    let fx = Fixture::new();
    let pidfile = fx.root.join("bg.pid");
    let command = format!("echo partial; sleep 120 & echo $! > {}; wait", pidfile.display());
    let abort = CancellationToken::new();
    let reports: Arc<Mutex<Vec<JsonObject>>> = Arc::default();
    let sink = {
        let reports = reports.clone();
        ProgressSink::new(move |_, metadata| reports.lock().unwrap().extend(metadata))
    };
    let run = fx.run_with("bash", json!({"command": command, "description": "Waits"}), abort.clone(), sink);
    let cancel = async {
        let pid = wait_for_file(&pidfile).await;
        // Cancel once the runtime would have seen the output, as an interrupting user would.
        while !reports.lock().unwrap().iter().any(|m| m["output"] == json!("partial\n")) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        abort.cancel();
        pid
    };
    let (result, pid) = tokio::join!(run, cancel);
    let result = result.unwrap();
    assert!(result.output.starts_with("partial\n"), "{}", result.output);
    assert!(result.output.ends_with("(Command was aborted)"), "{}", result.output);
    assert_eq!(result.metadata["aborted"], json!(true));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!alive(&pid), "background sleep {pid} survived the cancel");
    // The last progress report, sent as the cancel arrived, carried the partial output.
    let reports = reports.lock().unwrap();
    assert_eq!(reports.last().unwrap()["output"], json!("partial\n"), "{reports:?}");
}

/// The saved file a truncated output names, checked: in the data folder's `tool-output`, not
/// the workspace, mode 0600, and named in `metadata.outputPath` as in the note.
fn saved_output(fx: &Fixture, result: &session_tools::ToolSuccess) -> (std::path::PathBuf, String) {
    use std::os::unix::fs::PermissionsExt as _;
    let path = std::path::PathBuf::from(result.metadata["outputPath"].as_str().unwrap());
    assert_eq!(path.parent().unwrap(), fx.data.join("tool-output"));
    assert!(path.file_name().unwrap().to_str().unwrap().starts_with("tool_"));
    assert!(!path.starts_with(&fx.root));
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    let note = format!("...output truncated...\n\nFull output saved to: {}\n\n", path.display());
    assert!(result.output.starts_with(&note), "{}", &result.output[..200]);
    let body = result.output[note.len()..].to_owned();
    (path, body)
}

#[tokio::test]
async fn past_2000_lines_the_tail_is_kept_and_the_whole_output_saved() {
    let fx = Fixture::new();
    let result = fx.run("bash", json!({"command": "seq 1 3000"})).await.unwrap();
    let (path, body) = saved_output(&fx, &result);
    // OpenCode 1.18.34's cut: the last 2,000 of the lines split at newlines (the empty one after
    // the last newline counts), so 1002 to 3000.
    let expected: String = (1002..=3000).map(|n| format!("{n}\n")).collect();
    assert_eq!(body, expected);
    let whole: String = (1..=3000).map(|n| format!("{n}\n")).collect();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), whole);
    assert_eq!(result.metadata["truncated"], json!(true));
    assert_eq!(result.metadata["output"], json!(whole), "clients see the streamed output");
    assert_eq!(result.metadata["exit"], json!(0));
    // Control: 2,000 lines are not cut, and nothing is saved.
    let result = fx.run("bash", json!({"command": "seq 1 1999"})).await.unwrap();
    assert_eq!(result.output, (1..=1999).map(|n| format!("{n}\n")).collect::<String>());
    assert_eq!(result.metadata["truncated"], json!(false));
    assert_eq!(result.metadata.get("outputPath"), None);
    let saved = std::fs::read_dir(fx.data.join("tool-output")).unwrap().count();
    assert_eq!(saved, 1, "only the long output was saved");
}

/// A line of 100 characters.
const LINE: &str =
    "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789";

#[tokio::test]
async fn past_50_kb_the_tail_is_kept_and_the_whole_output_saved() {
    let fx = Fixture::new();
    let result = fx
        .run("bash", json!({"command": format!("yes {LINE} | head -c 2020000"), "description": "Floods"}))
        .await
        .unwrap();
    let (path, body) = saved_output(&fx, &result);
    // Whole lines (of 101 bytes), as many as 50 KB holds: under 2,000 of them.
    assert!(body.len() <= session_tools::MAX_OUTPUT_BYTES, "{}", body.len());
    assert!(body.len() > session_tools::MAX_OUTPUT_BYTES - 101, "{}", body.len());
    assert!(body.starts_with(LINE) && body.ends_with(&format!("{LINE}\n")));
    let saved = std::fs::read(&path).unwrap();
    assert_eq!(saved.len(), 2_020_000, "the file holds the whole output");
    assert!(saved.starts_with(format!("{LINE}\n{LINE}\n").as_bytes()));
    assert_eq!(result.metadata["truncated"], json!(true));
    let shown = result.metadata["output"].as_str().unwrap();
    assert!(shown.starts_with("...\n\n") && shown.chars().count() == MAX_OUTPUT_CHARS + 5);
    assert_eq!(result.metadata["exit"], json!(0));
}

#[tokio::test]
async fn one_line_past_50_kb_keeps_its_end() {
    let fx = Fixture::new();
    let result = fx.run("bash", json!({"command": "head -c 60000 /dev/zero | tr '\\0' x"})).await.unwrap();
    let (path, body) = saved_output(&fx, &result);
    assert_eq!(body, "x".repeat(session_tools::MAX_OUTPUT_BYTES));
    assert_eq!(std::fs::read(&path).unwrap().len(), 60_000);
}

#[tokio::test]
async fn background_children_holding_the_pipe_do_not_hang_the_call() {
    let fx = Fixture::new();
    let started = Instant::now();
    let result =
        fx.run("bash", json!({"command": "sleep 3 & echo done", "description": "Detaches"})).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(2), "took {:?}", started.elapsed());
    assert_eq!(result.output, "done\n");
}

#[tokio::test]
async fn progress_streams_the_output() {
    let fx = Fixture::new();
    let reports: Arc<Mutex<Vec<JsonObject>>> = Arc::default();
    let sink = {
        let reports = reports.clone();
        ProgressSink::new(move |_, metadata| reports.lock().unwrap().extend(metadata))
    };
    let input = json!({"command": "echo one; sleep 0.3; echo two", "description": "Streams"});
    fx.run_with("bash", input, CancellationToken::new(), sink).await.unwrap();
    let reports = reports.lock().unwrap();
    assert_eq!(reports.first().unwrap()["output"], json!(""));
    assert!(reports.iter().any(|m| m["output"] == json!("one\n")), "{reports:?}");
    assert!(reports.iter().all(|m| m["description"] == json!("Streams")));
}

#[tokio::test]
async fn asks_bash_with_command_patterns_and_checks_path_arguments() {
    let asker = ScriptedAsker::new(|ask| {
        Some(if ask.request.permission == "bash" {
            PermissionAnswer::once()
        } else {
            PermissionAnswer::reject()
        })
    });
    let mut rules = build_rules();
    rules.push(session_core::permission::Rule::new("bash", "*", session_core::permission::Action::Ask));
    let fx = Fixture::with(asker, rules, None);
    fx.run("bash", json!({"command": "git status -s && ls -la | wc -l", "description": "Status"}))
        .await
        .unwrap();
    let asks = fx.asker.asked();
    assert_eq!(asks.len(), 1);
    assert_eq!(asks[0].request.patterns, vec!["git status -s", "ls -la", "wc -l"]);
    assert_eq!(asks[0].request.always, vec!["git status *", "ls *", "wc *"]);
    assert_eq!(asks[0].tool.as_ref().unwrap().call_id, "call_1");
    // A path outside the workspace given to rm asks external_directory first; rejected, nothing runs.
    let target = fx.write_outside("keep.txt", "keep");
    let command = format!("rm {}", target.display());
    let error = fx.run("bash", json!({"command": command, "description": "Removes"})).await.unwrap_err();
    assert_eq!(error.to_string(), session_core::permission::PERMISSION_REJECTED_TEXT);
    assert!(target.exists());
    assert_eq!(fx.asker.permissions().last().unwrap(), "external_directory");
}

#[tokio::test]
async fn the_saved_output_is_read_and_grepped_without_asking_under_opencodes_rules() {
    use session_core::permission::{AgentPaths, BuiltinAgent, agent_ruleset};
    let mut fx = Fixture::new();
    // The runtime's rules (compose/setup.rs), as OpenCode's agents have them: the folder of
    // saved outputs is reachable without an `external_directory` ask; everything else asks,
    // and this asker rejects every ask.
    let paths = AgentPaths {
        tool_output_glob: Some(format!("{}/tool-output/*", fx.data.display())),
        ..AgentPaths::default()
    };
    fx.ruleset = agent_ruleset(Some(BuiltinAgent::Build), &paths, &[], &[]);
    let result = fx.run("bash", json!({"command": "seq 1 3000"})).await.unwrap();
    let saved = result.metadata["outputPath"].as_str().unwrap().to_owned();
    let read = fx.run("read", json!({"filePath": saved, "offset": 1, "limit": 3})).await.unwrap();
    assert!(read.output.contains("1: 1\n2: 2\n3: 3"), "{}", read.output);
    let folder = fx.data.join("tool-output");
    let grep =
        fx.run("grep", json!({"pattern": "^2999$", "path": folder.display().to_string()})).await.unwrap();
    assert!(grep.output.contains("2999"), "{}", grep.output);
    assert!(fx.asker.asked().is_empty(), "{:?}", fx.asker.permissions());
    // Only that folder: its parent, the data folder, still asks (and is refused here).
    std::fs::write(fx.data.join("session.db"), "secret").unwrap();
    let outside = fx.data.join("tool-output/../session.db").display().to_string();
    assert!(fx.run("read", json!({"filePath": outside})).await.is_err());
    assert_eq!(fx.asker.permissions(), ["external_directory"]);
}

#[tokio::test]
async fn control_without_the_rule_reading_the_saved_output_asks() {
    // Control: under the rules without the folder (the default paths), the same read asks
    // `external_directory`, which this asker refuses.
    let fx = Fixture::new();
    let result = fx.run("bash", json!({"command": "seq 1 3000"})).await.unwrap();
    let saved = result.metadata["outputPath"].as_str().unwrap().to_owned();
    assert!(fx.run("read", json!({"filePath": saved})).await.is_err());
    assert_eq!(fx.asker.permissions(), ["external_directory"]);
}
