//! `cargo xtask bench`: micro benchmarks (criterion, collected) and end-to-end runs of the real
//! `session` binary against the loopback provider, written as markdown and JSON under
//! `<target>/bench/`; `bench peers` runs OpenCode, Codex and ours with `../shared/peers`.
//!
//! ```text
//! cargo xtask bench [--only micro,e2e,peers,load] [--sessions N]
//!                                      every part, then the performance aims judged on this run's
//!                                      figures -> bench.md, bench.json
//! cargo xtask bench micro              criterion benches of the crates -> micro.{md,json}
//! cargo xtask bench e2e [--runs N] [--scripts short,long] [--bin PATH] [--snapshots off|on|both]
//! cargo xtask bench peers [--runs N] [--peers opencode,codex,session] [--scripts short,long]
//! cargo xtask bench --load ...         the load run alone (see `load`)
//! ```

mod aims;
mod e2e;
pub(crate) mod load;
mod micro;
mod peers;
mod report;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// Options shared by the bench subcommands.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    /// Runs per script (medians are reported).
    pub(crate) runs: usize,
    /// Script names (files in `bench/scripts/`) or paths.
    pub(crate) scripts: Vec<String>,
    /// The `session` binary to measure; built in release when absent.
    pub(crate) bin: Option<PathBuf>,
    /// Which snapshot settings the end-to-end runs use.
    pub(crate) snapshots: Vec<bool>,
    /// The agents `bench peers` runs.
    pub(crate) peers: Vec<String>,
    /// The parts the whole bench runs (micro, e2e, peers, load).
    pub(crate) only: Vec<String>,
    /// Concurrent sessions of the whole bench's load part.
    pub(crate) sessions: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            runs: 3,
            scripts: vec!["short".into(), "long".into()],
            bin: None,
            snapshots: vec![false, true],
            peers: vec!["opencode".into(), "codex".into(), "session".into()],
            only: PARTS.iter().map(|&part| part.to_owned()).collect(),
            sessions: aims::LOAD_SESSIONS,
        }
    }
}

/// The parts of the whole bench, in the order they run.
const PARTS: &[&str] = &["micro", "e2e", "peers", "load"];

fn list(value: &str) -> Vec<String> {
    value.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect()
}

fn parse_options(args: &[String]) -> Result<Options> {
    let mut options = Options::default();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().with_context(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--runs" => {
                options.runs = value("--runs")?.parse().context("--runs takes a number")?;
                if options.runs == 0 {
                    bail!("--runs must be at least 1");
                }
            }
            "--scripts" => options.scripts = list(value("--scripts")?),
            "--bin" => options.bin = Some(PathBuf::from(value("--bin")?)),
            "--peers" => options.peers = list(value("--peers")?),
            "--only" => {
                options.only = list(value("--only")?);
                if let Some(unknown) = options.only.iter().find(|part| !PARTS.contains(&part.as_str())) {
                    bail!("--only takes {}, not {unknown:?}", PARTS.join(", "));
                }
            }
            "--sessions" => {
                options.sessions = value("--sessions")?.parse().context("--sessions takes a number")?;
            }
            "--snapshots" => {
                options.snapshots = match value("--snapshots")?.as_str() {
                    "off" => vec![false],
                    "on" => vec![true],
                    "both" => vec![false, true],
                    other => bail!("--snapshots takes off, on or both, not {other:?}"),
                }
            }
            other => bail!("unknown bench option {other:?}"),
        }
    }
    Ok(options)
}

/// Entry point of `cargo xtask bench ARGS`.
pub(crate) fn main(root: &Path, args: &[String]) -> Result<()> {
    let (command, rest) = match args.first().map(String::as_str) {
        Some(command @ ("micro" | "e2e" | "peers" | "run-one")) => (command, &args[1..]),
        _ => ("all", args),
    };
    if command == "run-one" {
        // The measuring helper: the parent re-executes itself so that RUSAGE_CHILDREN holds the
        // measured process alone (not the cargo builds that ran before).
        return e2e::run_one(rest);
    }
    let options = parse_options(rest)?;
    let out = target_dir(root).join("bench");
    std::fs::create_dir_all(&out).with_context(|| format!("create {}", out.display()))?;
    let machine = report::Machine::probe();
    match command {
        "micro" => {
            let results = micro::run(root, &out)?;
            report::write(&out, "micro", &machine, &[report::Section::Micro(results)])
        }
        "e2e" => {
            let results = e2e::run(root, &out, &options)?;
            report::write(&out, "e2e", &machine, &[report::Section::EndToEnd(results)])
        }
        "peers" => {
            let results = peers::run(root, &out, &options)?;
            report::write(&out, "peers", &machine, &[report::Section::Peers(results)])
        }
        _ => everything(root, &out, &machine, &options),
    }
}

/// Every part `options.only` names, then the aims judged on their figures: one report.
fn everything(root: &Path, out: &Path, machine: &report::Machine, options: &Options) -> Result<()> {
    let wanted = |part: &str| options.only.iter().any(|p| p == part);
    let mut sections = Vec::new();
    let micro = if wanted("micro") { Some(micro::run(root, out)?) } else { None };
    // One release binary for every part that runs ours.
    let mut options = options.clone();
    if ["e2e", "peers", "load"].iter().any(|part| wanted(part)) {
        options.bin = Some(session_binary(root, options.bin.as_deref())?);
    }
    let e2e = if wanted("e2e") { Some(e2e::run(root, out, &options)?) } else { None };
    // The side by side needs ../shared/peers and what it installs: without them the report
    // says so rather than failing the other parts.
    let mut not_run = Vec::new();
    let peers = if wanted("peers") {
        match peers::run(root, out, &options) {
            Ok(peers) => Some(peers),
            Err(error) => {
                not_run.push(format!("peers: {error:#}"));
                None
            }
        }
    } else {
        None
    };
    let load = if wanted("load") && cfg!(debug_assertions) {
        // `cargo xtask` is a debug build, whose `/event` client cannot keep up with 10,000
        // sessions (it falls behind and the server drops events for it): the load runs in a
        // release build of this driver, whose reports are read back.
        match release_load(root, out, &options, &mut not_run) {
            Ok(reports) => Some(reports),
            Err(error) => {
                not_run.push(format!("load: {error:#}"));
                Some(Vec::new())
            }
        }
    } else if wanted("load") {
        let load_options = load::LoadOptions {
            sessions: options.sessions,
            bin: options.bin.clone(),
            logs: Some(out.to_path_buf()),
            ..load::LoadOptions::default()
        };
        let mut reports = Vec::new();
        for &backend in &load_options.backends {
            let binary = session_binary(root, load_options.bin.as_deref())?;
            match load::run(&binary, backend, &load_options) {
                Ok(report) => reports.push(report),
                Err(error) => not_run.push(format!("load on {}: {error:#}", backend.name())),
            }
        }
        Some(reports)
    } else {
        None
    };
    let aims = aims::judge(aims::Figures {
        micro: micro.as_ref(),
        e2e: e2e.as_ref(),
        peers: peers.as_ref(),
        load: load.as_deref(),
    });
    sections.push(report::Section::Aims { aims, not_run });
    sections.extend(micro.map(report::Section::Micro));
    sections.extend(e2e.map(report::Section::EndToEnd));
    sections.extend(peers.map(report::Section::Peers));
    sections.extend(load.map(report::Section::Load));
    report::write(out, "bench", machine, &sections)
}

/// The load part through a release build of this driver (`xtask bench --load --db <backend>`,
/// one backend after the other), each report read back from the `load.json` it writes (also
/// when it exits non-zero: a run that found problems still reports them). A backend that could
/// not run is named in `not_run`.
fn release_load(
    root: &Path,
    out: &Path,
    options: &Options,
    not_run: &mut Vec<String>,
) -> Result<Vec<load::LoadReport>> {
    let driver = release_binary(root, "xtask", "xtask")?;
    let reports_path = out.join("load.json");
    let mut reports = Vec::new();
    for backend in [load::Backend::Sqlite, load::Backend::Postgres] {
        // A report left by an earlier run must not pass for this one's.
        if reports_path.exists() {
            std::fs::remove_file(&reports_path)
                .with_context(|| format!("remove {}", reports_path.display()))?;
        }
        let mut command = Command::new(&driver);
        command
            .args(["bench", "--load", "--db", backend.name(), "--sessions"])
            .arg(options.sessions.to_string());
        if let Some(bin) = &options.bin {
            command.arg("--bin").arg(bin);
        }
        let status = command
            .current_dir(root)
            .status()
            .with_context(|| format!("cannot start {}", driver.display()))?;
        let read = std::fs::read_to_string(&reports_path)
            .with_context(|| {
                format!("the driver exited with {status} and wrote no {}", reports_path.display())
            })
            .and_then(|text| {
                serde_json::from_str::<Vec<load::LoadReport>>(&text)
                    .with_context(|| format!("read {}", reports_path.display()))
            });
        match read {
            Ok(found) => reports.extend(found),
            Err(error) => not_run.push(format!("load on {}: {error:#}", backend.name())),
        }
    }
    Ok(reports)
}

/// Cargo's target directory: `CARGO_TARGET_DIR` when set, else `target/` in the workspace.
pub(crate) fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() { dir } else { root.join(dir) }
        }
        _ => root.join("target"),
    }
}

/// Builds `session` in release (unless `bin` names one) and returns its path.
pub(crate) fn session_binary(root: &Path, bin: Option<&Path>) -> Result<PathBuf> {
    if let Some(bin) = bin {
        if !bin.is_file() {
            bail!("--bin {}: no such file", bin.display());
        }
        return std::fs::canonicalize(bin).with_context(|| format!("resolve {}", bin.display()));
    }
    release_binary(root, "session-cli", "session")
}

/// Builds binary `bin` of `package` in release and returns its path.
fn release_binary(root: &Path, package: &str, bin: &str) -> Result<PathBuf> {
    eprintln!("==> cargo build --release -p {package} --bin {bin}");
    let status = Command::new("cargo")
        .args(["build", "--release", "--quiet", "-p", package, "--bin", bin])
        .current_dir(root)
        .status()
        .context("cannot start cargo build")?;
    if !status.success() {
        bail!("cargo build --release -p {package} --bin {bin} exited with {status}");
    }
    let path = target_dir(root).join("release").join(bin);
    if !path.is_file() {
        bail!("the release build left no binary at {}", path.display());
    }
    Ok(path)
}

/// The one-minute load average, from `/proc/loadavg` (0 where there is none).
pub(crate) fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next().and_then(|first| first.parse().ok()))
        .unwrap_or(0.0)
}

/// The median of `values` (0 for none).
pub(crate) fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// The path of a script: a file in `bench/scripts/` by name, or a path as given.
pub(crate) fn script_path(root: &Path, script: &str) -> Result<PathBuf> {
    let by_name = root.join("bench/scripts").join(format!("{script}.json"));
    if by_name.is_file() {
        return Ok(by_name);
    }
    let given = PathBuf::from(script);
    if given.is_file() {
        return Ok(given);
    }
    bail!("no script {script:?}: neither {} nor a file", by_name.display())
}

#[cfg(test)]
mod tests {
    use super::{median, parse_options};

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
    }

    #[test]
    fn options_parse_lists_and_snapshot_modes() {
        let args: Vec<String> = ["--runs", "5", "--scripts", "long", "--snapshots", "on"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        let options = parse_options(&args).unwrap_or_default();
        assert_eq!(options.runs, 5);
        assert_eq!(options.scripts, vec!["long".to_owned()]);
        assert_eq!(options.snapshots, vec![true]);
        assert!(parse_options(&["--runs".to_owned(), "0".to_owned()]).is_err());
        assert!(parse_options(&["--snapshots".to_owned(), "sometimes".to_owned()]).is_err());
    }
}
