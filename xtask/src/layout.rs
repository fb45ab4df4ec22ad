//! The layout rules `cargo xtask ci` checks before building: no source file over 700 lines
//! before its tests, no issue numbers in comments (a comment says the reason), and the client
//! crates (the TUI, the server) depending on no crate of ours but session-runtime and
//! session-core, so that the runtime stays their one door to the engine.

use std::path::Path;

use anyhow::{Context, Result, bail};

/// Lines a source file may have before its `#[cfg(test)]` module.
const MAX_LINES: usize = 700;

/// The crates that reach the engine only through session-runtime (and session-core's types).
const CLIENTS: &[&str] = &["session-tui", "session-server"];

/// Our crates a client may name under `[dependencies]`.
const CLIENT_MAY_USE: &[&str] = &["session-runtime", "session-core"];

/// Checks every rule over the workspace at `root`; every problem is listed before failing.
pub(crate) fn check(root: &Path) -> Result<()> {
    let mut problems = Vec::new();
    for dir in ["crates", "xtask", "tests"] {
        scan(&root.join(dir), &mut problems)?;
    }
    for client in CLIENTS {
        let manifest = std::fs::read_to_string(root.join("crates").join(client).join("Cargo.toml"))
            .with_context(|| format!("read {client}'s manifest"))?;
        for name in our_dependencies(&manifest) {
            if !CLIENT_MAY_USE.contains(&name.as_str()) {
                problems.push(format!("{client} depends on {name}: reach it through session-runtime"));
            }
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    for problem in &problems {
        eprintln!("  {problem}");
    }
    bail!("{} layout problem(s)", problems.len())
}

fn scan(dir: &Path, problems: &mut Vec<String>) -> Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(error).with_context(|| format!("read {}", dir.display())),
    };
    for entry in entries {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if path.is_dir() {
            // Build output and recorded data hold no sources of ours.
            if !matches!(name, "target" | "snapshots" | "fixtures" | "node_modules") {
                scan(&path, problems)?;
            }
        } else if name.ends_with(".rs") {
            let text = std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
            problems.extend(file_problems(&path.display().to_string(), &text));
        }
    }
    Ok(())
}

/// The problems of one source file: its length before its tests (test-suite files under a
/// `tests` folder are all tests) and issue numbers in its comments.
fn file_problems(path: &str, text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let in_test_folder = path.split('/').any(|part| part == "tests");
    let before_tests = text.lines().take_while(|line| line.trim() != "#[cfg(test)]").count();
    if !in_test_folder && before_tests > MAX_LINES {
        problems.push(format!("{path}: {before_tests} lines before its tests (at most {MAX_LINES})"));
    }
    for (number, line) in text.lines().enumerate() {
        if let Some(at) = line.find("//")
            && names_an_issue(&line[at..])
        {
            problems.push(format!("{path}:{}: a comment names an issue number; say the reason", number + 1));
        }
    }
    problems
}

/// Whether `comment` says "issue" (or "issues") and a number: a tracker's number means nothing
/// to a reader of the code.
fn names_an_issue(comment: &str) -> bool {
    let lower = comment.to_ascii_lowercase();
    lower.match_indices("issue").any(|(at, _)| {
        let rest = lower[at + "issue".len()..].strip_prefix('s').unwrap_or(&lower[at + "issue".len()..]);
        rest.strip_prefix(' ').is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
    })
}

/// The crates of ours (`session-*`) a manifest names under `[dependencies]`.
fn our_dependencies(manifest: &str) -> Vec<String> {
    let mut section = "";
    let mut names = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
            continue;
        }
        if section == "[dependencies]" && line.starts_with("session-") {
            let name = line.split(['.', ' ', '=']).next().unwrap_or_default();
            names.push(name.to_owned());
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_file_and_an_issue_number_are_problems() {
        let long = "fn f() {}\n".repeat(701);
        assert_eq!(file_problems("crates/a/src/x.rs", &long).len(), 1);
        let with_tests = format!("{}#[cfg(test)]\n{}", "fn f() {}\n".repeat(700), "fn t() {}\n".repeat(50));
        assert!(file_problems("crates/a/src/x.rs", &with_tests).is_empty());
        assert!(file_problems("crates/a/tests/suite/x.rs", &long).is_empty());
        let numbered = format!("let x = 1; // as issue {} asked\n", 40);
        assert_eq!(file_problems("crates/a/src/x.rs", &numbered).len(), 1);
        let reasoned = "fn issue_26_1_totals() {} // the totals line; issues are tracked elsewhere\n";
        assert!(file_problems("crates/a/src/x.rs", reasoned).is_empty());
    }

    #[test]
    fn a_clients_own_dependencies_are_read_from_its_dependencies_section() {
        let manifest = "[package]\nname = \"session-tui\"\n\n[dependencies]\nsession-core.workspace = true\n\
                        session-runtime = { workspace = true }\nsession-store.workspace = true\ntokio = \"1\"\n\n\
                        [dev-dependencies]\nsession-testkit.workspace = true\n";
        assert_eq!(our_dependencies(manifest), ["session-core", "session-runtime", "session-store"]);
    }
}
