//! Project automation: `cargo xtask ci` runs the whole gate, `cargo xtask bench` the benchmarks.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};

mod bench;
mod crash;

mod docs;
mod release;
mod toolchain;

/// Crates that would give session-core IO, a runtime, a clock or randomness.
const IMPURE_CRATES: &[&str] = &[
    "tokio",
    "async-std",
    "smol",
    "mio",
    "socket2",
    "libc",
    "rand",
    "rand_core",
    "getrandom",
    "fastrand",
    "chrono",
    "time",
    "reqwest",
    "hyper",
    "sqlx",
    "uuid",
    "futures",
    "tracing",
    "async-trait",
];

/// Source patterns that mean session-core touches the outside world.
const IMPURE_PATTERNS: &[&str] = &[
    "std::fs",
    "std::net",
    "std::env",
    "RandomState",
    "std::process",
    "std::thread",
    "SystemTime",
    "Instant::",
    "tokio::",
    "std::io::stdin",
    "std::io::stdout",
    "println!",
    "eprintln!",
];

/// Vendored copies of `../shared` data: (source under shared/, copy in the repository).
const VENDORED: &[(&str, &str)] = &[
    ("conformance", "crates/session-core/tests/conformance"),
    ("fixtures/providers", "crates/session-llm/tests/fixtures/providers"),
    ("data/models.json", "crates/session-llm/data/models.json"),
    ("peers/scripts", "bench/scripts"),
    ("peers/fixture", "bench/fixture"),
];

fn main() -> Result<()> {
    let root = workspace_root()?;
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("ci") => ci(&root),
        Some("bench") if args.get(1).is_some_and(|a| a == "--crash") => crash::main(&root, &args[2..]),
        Some("bench") if args.get(1).is_some_and(|a| a == "--load") => bench::load::main(&root, &args[2..]),
        Some("bench") => bench::main(&root, &args[1..]),
        Some("vendor-check") => check_vendored(&root),
        Some("purity") => check_purity(&root),
        Some("release") => release::main(&root, &args[1..]),
        Some("docs") => docs::main(&root, &args[1..]),
        _ => {
            eprintln!(
                "usage: cargo xtask <ci|bench|vendor-check|purity|release VERSION [--execute]|docs [--write]>"
            );
            bail!("unknown or missing command")
        }
    }
}

fn workspace_root() -> Result<PathBuf> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(Path::to_path_buf).context("xtask has no parent directory")
}

fn ci(root: &Path) -> Result<()> {
    let started = Instant::now();
    // First: the rest of the gate means little if it ran on another toolchain than declared.
    step("rustc is the declared rust-version", || toolchain::check(root))?;
    step("vendored data equals ../shared", || check_vendored(root))?;
    step("session-core purity", || check_purity(root))?;
    step("rustfmt", || run(root, "cargo", &["fmt", "--all", "--", "--check"], &[]))?;
    step("clippy", || {
        run(root, "cargo", &["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"], &[])
    })?;
    step("rustdoc", || {
        run(root, "cargo", &["doc", "--workspace", "--no-deps"], &[("RUSTDOCFLAGS", "-D warnings")])
    })?;
    let mut totals = TestTotals::default();
    step("tests", || run_tests(root, &mut totals))?;
    eprintln!("xtask ci: all steps passed in {:.0?}", started.elapsed());
    // The closing line CI reads: every test binary and the conformance runner, summed.
    println!("xtask ci: {} passed, {} failed", totals.passed, totals.failed);
    Ok(())
}

/// Test counts summed over every `test result:` and `conformance:` line.
#[derive(Debug, Default)]
struct TestTotals {
    passed: u64,
    failed: u64,
}

impl TestTotals {
    fn add_line(&mut self, line: &str) {
        let counts = if let Some(rest) = line.strip_prefix("test result: ") {
            rest
        } else if let Some(rest) = line.strip_prefix("conformance: ") {
            rest
        } else {
            return;
        };
        for piece in counts.split([';', ',', '.']) {
            let mut words = piece.split_whitespace();
            if let (Some(number), Some(label)) = (words.next(), words.next())
                && let Ok(number) = number.parse::<u64>()
            {
                match label {
                    "passed" => self.passed += number,
                    "failed" => self.failed += number,
                    _ => {}
                }
            }
        }
    }
}

/// Runs the whole test suite (unit, integration, conformance and doc tests), echoing its
/// output and counting results.
fn run_tests(root: &Path, totals: &mut TestTotals) -> Result<()> {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new("cargo")
        .args(["test", "--workspace"])
        .current_dir(root)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .context("cannot start cargo test")?;
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines() {
            let line = line.context("read cargo test output")?;
            println!("{line}");
            totals.add_line(&line);
        }
    }
    let status = child.wait().context("wait for cargo test")?;
    if !status.success() {
        bail!("cargo test exited with {status}");
    }
    if totals.passed == 0 {
        bail!("no test ran");
    }
    Ok(())
}

fn step(name: &str, action: impl FnOnce() -> Result<()>) -> Result<()> {
    eprintln!("==> {name}");
    let started = Instant::now();
    action().with_context(|| format!("step failed: {name}"))?;
    eprintln!("<== {name} ({:.1?})", started.elapsed());
    Ok(())
}

fn run(root: &Path, program: &str, args: &[&str], env: &[(&str, &str)]) -> Result<()> {
    let mut command = Command::new(program);
    command.args(args).current_dir(root);
    for (key, value) in env {
        command.env(key, value);
    }
    let status = command.status().with_context(|| format!("cannot start {program}"))?;
    if !status.success() {
        bail!("{program} {} exited with {status}", args.join(" "));
    }
    Ok(())
}

fn check_vendored(root: &Path) -> Result<()> {
    let shared = root.join("../shared");
    if !shared.is_dir() {
        eprintln!("../shared is absent: nothing to compare");
        return Ok(());
    }
    let mut problems = Vec::new();
    for (source, copy) in VENDORED {
        let source = shared.join(source);
        let copy = root.join(copy);
        if !source.exists() {
            continue;
        }
        if !copy.exists() {
            // A copy appears with the issue that needs it; until then there is nothing to compare.
            eprintln!("not vendored yet: {}", copy.display());
            continue;
        }
        compare_paths(&source, &copy, &mut problems)?;
    }
    if problems.is_empty() {
        Ok(())
    } else {
        for problem in &problems {
            eprintln!("  {problem}");
        }
        bail!("{} vendored file(s) differ from ../shared; copy them again", problems.len())
    }
}

fn compare_paths(source: &Path, copy: &Path, problems: &mut Vec<String>) -> Result<()> {
    if source.is_file() {
        let a = std::fs::read(source).with_context(|| format!("read {}", source.display()))?;
        match std::fs::read(copy) {
            Ok(b) if a == b => {}
            Ok(_) => problems.push(format!("differs: {}", copy.display())),
            Err(_) => problems.push(format!("missing: {}", copy.display())),
        }
        return Ok(());
    }
    let mut names = std::collections::BTreeSet::new();
    for dir in [source, copy] {
        if let Ok(entries) = std::fs::read_dir(dir) {
            for entry in entries {
                names.insert(entry?.file_name());
            }
        }
    }
    for name in names {
        let (a, b) = (source.join(&name), copy.join(&name));
        if !a.exists() {
            problems.push(format!("not in ../shared: {}", b.display()));
        } else {
            compare_paths(&a, &b, problems)?;
        }
    }
    Ok(())
}

fn check_purity(root: &Path) -> Result<()> {
    let output = Command::new("cargo")
        .args(["tree", "-p", "session-core", "-e", "normal", "--prefix", "none", "--format", "{p}"])
        .current_dir(root)
        .output()
        .context("cannot run cargo tree")?;
    if !output.status.success() {
        bail!("cargo tree failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    let tree = String::from_utf8_lossy(&output.stdout);
    let mut problems: Vec<String> = tree
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| IMPURE_CRATES.contains(name))
        .map(|name| format!("session-core depends on {name}"))
        .collect();
    problems.sort();
    problems.dedup();
    scan_sources(&root.join("crates/session-core/src"), &mut problems)?;
    if problems.is_empty() {
        Ok(())
    } else {
        for problem in &problems {
            eprintln!("  {problem}");
        }
        bail!("session-core must stay free of IO, clocks, randomness and runtimes")
    }
}

fn scan_sources(dir: &Path, problems: &mut Vec<String>) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("read {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            scan_sources(&path, problems)?;
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            let text = std::fs::read_to_string(&path)?;
            for (number, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                for pattern in IMPURE_PATTERNS {
                    if code.contains(pattern) {
                        problems.push(format!("{}:{}: uses {pattern}", path.display(), number + 1));
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::TestTotals;

    #[test]
    fn totals_sum_test_binaries_and_conformance() {
        let mut totals = TestTotals::default();
        for line in [
            "test result: ok. 35 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.03s",
            "conformance: 269 passed, 2 failed",
            "test result: FAILED. 3 passed; 1 failed; 0 ignored",
            "running 35 tests",
        ] {
            totals.add_line(line);
        }
        assert_eq!((totals.passed, totals.failed), (307, 3));
    }
}
