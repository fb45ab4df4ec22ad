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

#[tokio::test]
async fn huge_output_is_capped_with_a_notice() {
    let fx = Fixture::new();
    let result = fx
        .run("bash", json!({"command": "yes abcdefgh | head -c 2000000", "description": "Floods"}))
        .await
        .unwrap();
    assert!(result.output.ends_with("(Output was truncated due to length limit)"));
    assert!(result.output.chars().count() <= MAX_OUTPUT_CHARS + 60);
    assert_eq!(result.metadata["truncated"], json!(true));
    assert_eq!(result.metadata["exit"], json!(0));
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
