//! `session demo`: the offline run a newcomer starts with.

use std::process::Command;

use serde_json::Value;
use session_e2e::session_binary;

#[test]
fn the_demo_runs_real_tools_and_ends_with_tokens_and_cost() {
    let out = Command::new(session_binary().unwrap()).arg("demo").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{}", String::from_utf8_lossy(&out.stderr));
    for tool in ["read", "grep", "write", "bash"] {
        assert!(stdout.contains(&format!("  ok {tool}")), "{tool} did not complete:\n{stdout}");
    }
    let last = stdout.lines().last().unwrap_or_default();
    assert!(last.starts_with("tokens: "), "{last}");
    assert!(last.contains("cost: $0.0"), "{last}");
}

#[test]
fn the_demo_as_json_lines_is_the_bus_event_stream() {
    let out = Command::new(session_binary().unwrap()).args(["demo", "--format", "json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect();
    assert!(events.iter().all(|e| e["type"].is_string() && e["properties"].is_object()));
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert!(types.contains(&"message.part.delta"));
    assert_eq!(types.last(), Some(&"session.idle"));
    let completed_tools = events
        .iter()
        .filter(|e| {
            e["type"] == "message.part.updated" && e["properties"]["part"]["state"]["status"] == "completed"
        })
        .count();
    assert_eq!(completed_tools, 5);
}

#[test]
fn logs_go_to_the_log_file_never_to_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("logs/session.log");
    let out = Command::new(session_binary().unwrap())
        .args(["--log-level", "debug", "--log-file"])
        .arg(&log)
        .arg("demo")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("DEBUG"), "debug diagnostics reach the file: {logged}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("DEBUG"), "{stdout}");
    assert!(String::from_utf8_lossy(&out.stderr).trim().is_empty(), "nothing logged to stderr");

    // A log file that cannot be opened is a usage error.
    let bad = Command::new(session_binary().unwrap())
        .args(["--log-file", "/proc/version/nope", "models"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("cannot open the log file"));
}
