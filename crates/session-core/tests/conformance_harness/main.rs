//! Runs every conformance vector file (see `tests/conformance/README.md`).
//!
//! The folder is `tests/conformance/` of this crate, or `SESSION_CONFORMANCE_DIR` when set.
//! Unknown files, unknown kinds and unmappable cases are failures, never skips.

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::Value;

mod compaction_split;
mod doomloop;
mod overflow;
mod provider_errors;
mod prune;
mod retry;
mod to_model_messages;
mod usage;

/// Collects case outcomes and prints failures as they come.
pub struct Report {
    file: String,
    passed: usize,
    failed: usize,
}

impl Report {
    /// Records one case: `Ok(())` passes, `Err(detail)` fails with the detail printed.
    pub fn record(&mut self, name: &str, outcome: Result<(), String>) {
        match outcome {
            Ok(()) => self.passed += 1,
            Err(detail) => {
                self.failed += 1;
                println!("FAIL {} :: {} :: {}", self.file, name, detail);
            }
        }
    }

    /// Records a whole-object comparison.
    pub fn compare(&mut self, name: &str, expected: &Value, actual: &Value) {
        let outcome = if json_equal(expected, actual) {
            Ok(())
        } else {
            Err(format!("expected {expected} actual {actual}"))
        };
        self.record(name, outcome);
    }
}

/// Deep equality where numbers compare by value (1500 equals 1500.0) and keys must match.
pub fn json_equal(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| json_equal(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => expected == actual,
    }
}

/// The name of a case, or a placeholder that says it has none.
pub fn case_name(case: &Value) -> String {
    case.get("name").and_then(Value::as_str).unwrap_or("<unnamed case>").to_owned()
}

/// The list under `key`, or an empty list.
pub fn cases<'a>(doc: &'a Value, key: &str) -> &'a [Value] {
    doc.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
}

fn main() -> ExitCode {
    let dir = std::env::var_os("SESSION_CONFORMANCE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/conformance"));
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
            .collect(),
        Err(error) => {
            println!("cannot read {}: {error}", dir.display());
            println!("conformance: 0 passed, 1 failed");
            return ExitCode::FAILURE;
        }
    };
    files.sort();
    let (mut passed, mut failed) = (0, 0);
    for path in files {
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let mut report = Report { file: stem.clone(), passed: 0, failed: 0 };
        let doc: Value = match std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|text| serde_json::from_str(&text).map_err(|e| e.to_string()))
        {
            Ok(doc) => doc,
            Err(error) => {
                report.record("<file>", Err(format!("unreadable: {error}")));
                failed += report.failed;
                continue;
            }
        };
        match stem.as_str() {
            "usage" => usage::run(&doc, &mut report),
            "overflow" => overflow::run(&doc, &mut report),
            "retry" => retry::run(&doc, &mut report),
            "provider_errors" => provider_errors::run(&doc, &mut report),
            "doomloop" => doomloop::run(&doc, &mut report),
            "prune" => prune::run(&doc, &mut report),
            "compaction_split" => compaction_split::run(&doc, &mut report),
            "to_model_messages" => to_model_messages::run(&doc, &mut report),
            other => report.record("<file>", Err(format!("unknown vector file {other}.json"))),
        }
        if report.passed + report.failed == 0 {
            report.record("<file>", Err("no case ran".to_owned()));
        }
        passed += report.passed;
        failed += report.failed;
    }
    println!("conformance: {passed} passed, {failed} failed");
    if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
