//! `cargo xtask bench --crash [N] [--seed S]`: the crash loop with N kills
//! (default 100). It builds the `session` binary, then runs `session_e2e::crash`: `session
//! run` on the long script, killed with SIGKILL at random moments, the store checked after
//! every kill, and each session carried to its end with `session run --session ID`. CI runs
//! the same loop with 5 kills (`tests/suite/crash.rs`).

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use session_e2e::crash::{CrashOptions, CrashReport};

/// The kills when N is not given: a hundred, the loop docs/performance.md reports (Crashes).
const DEFAULT_KILLS: usize = 100;

/// Parses `[N] [--seed S]` and runs the loop.
pub fn main(root: &Path, args: &[String]) -> Result<()> {
    let mut kills = DEFAULT_KILLS;
    let mut seed = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--seed" => {
                let value = args.next().context("--seed needs a number")?;
                seed = Some(value.parse().with_context(|| format!("--seed {value}: not a number"))?);
            }
            other => kills = other.parse().with_context(|| format!("--crash {other}: not a count"))?,
        }
    }
    let report = run(root, kills, seed)?;
    println!("crash: {report}");
    Ok(())
}

/// Builds the binary and kills `count` runs of it; `seed` replays an earlier loop's delays.
pub fn run(root: &Path, count: usize, seed: Option<u64>) -> Result<CrashReport> {
    let status = Command::new("cargo")
        .args(["build", "--quiet", "-p", "session-cli", "--bin", "session"])
        .current_dir(root)
        .status()
        .context("cannot start cargo build")?;
    if !status.success() {
        bail!("building the session binary failed");
    }
    // Built into the same target directory as this xtask binary, beside it.
    let exe = std::env::current_exe().context("cannot locate the xtask binary")?;
    let binary = exe
        .parent()
        .context("the xtask binary has no folder")?
        .join(format!("session{}", std::env::consts::EXE_SUFFIX));
    let mut options = CrashOptions::new(binary, count);
    if let Some(seed) = seed {
        options.seed = seed;
    }
    eprintln!("crash: {count} kills, seed {}", options.seed);
    session_e2e::crash::run(&options, &mut |line| eprintln!("crash: {line}"))
}
