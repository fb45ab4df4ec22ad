//! Side by side: `../shared/peers/run_peer.sh` (or `$PEERS_DIR/run_peer.sh`) runs OpenCode,
//! Codex and our `session` (`SESSION_BIN`) on the same scripts against the same Python mock,
//! under `/usr/bin/time -v`; this collects the medians of its `summary.json` files.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde::Serialize;
use serde_json::Value;

use super::{Options, load_average, median, session_binary};

/// One run, as `summarize.py` reported it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PeerRun {
    /// Exit code of the agent.
    pub(crate) rc: i64,
    /// Wall seconds (`/usr/bin/time`).
    pub(crate) wall_s: f64,
    /// User+sys CPU seconds, children included.
    pub(crate) cpu_s: f64,
    /// Peak RSS, MB.
    pub(crate) max_rss_mb: f64,
    /// The harness's `first_request_after_s`: from before it writes the agent's config (two
    /// Python starts for OpenCode and ours, one for Codex) to the mock's first request, seconds.
    pub(crate) first_request_harness_s: f64,
    /// From the agent's own launch to the first request, seconds: for ours, from the stamp
    /// our launcher writes as it hands over to the binary to the mock's receipt of the request
    /// (one clock, microseconds); for the peers, the harness's figure less the time between
    /// its start mark and the agent's start (`wall_outer_s - wall_s`, in `/usr/bin/time`'s
    /// hundredths of a second).
    pub(crate) first_request_s: f64,
    /// True when `first_request_s` is timed from our launcher's stamp.
    pub(crate) first_request_stamped: bool,
    /// The agent's storage after the run, bytes.
    pub(crate) store_bytes: f64,
    /// Requests served.
    pub(crate) requests: i64,
    /// One-minute load average when the run started.
    pub(crate) load: f64,
}

/// Medians of one agent on one script.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PeerRow {
    /// opencode, codex or session.
    pub(crate) peer: String,
    /// Script name.
    pub(crate) script: String,
    /// Runs that exited 0.
    pub(crate) ok: usize,
    /// Median wall, seconds.
    pub(crate) wall_s: f64,
    /// Median CPU, seconds.
    pub(crate) cpu_s: f64,
    /// Median peak RSS, MB.
    pub(crate) max_rss_mb: f64,
    /// Median first request from the agent's launch, seconds.
    pub(crate) first_request_s: f64,
    /// Median first request as the harness reports it, seconds.
    pub(crate) first_request_harness_s: f64,
    /// Median storage, MB.
    pub(crate) store_mb: f64,
    /// Every run.
    pub(crate) samples: Vec<PeerRun>,
}

/// The side-by-side results.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Peers {
    /// One row per agent and script that ran.
    pub(crate) rows: Vec<PeerRow>,
    /// Agents that could not run, and why.
    pub(crate) missing: Vec<String>,
    /// The command that reproduces the table.
    pub(crate) command: String,
}

fn peers_dir(root: &Path) -> Result<PathBuf> {
    let dir = std::env::var_os("PEERS_DIR").map_or_else(|| root.join("../shared/peers"), PathBuf::from);
    if !dir.join("run_peer.sh").is_file() {
        bail!("no peers harness at {} (set PEERS_DIR to the folder of run_peer.sh)", dir.display());
    }
    Ok(dir)
}

/// Runs every agent on every script `options.runs` times, interleaved so that a change of load
/// touches all three alike.
pub(crate) fn run(root: &Path, out: &Path, options: &Options) -> Result<Peers> {
    let harness = peers_dir(root)?;
    let script = harness.join("run_peer.sh");
    let mut missing = Vec::new();
    let mut agents = Vec::new();
    let mut session_bin = None;
    for peer in &options.peers {
        if peer == "session" {
            let bin = session_binary(root, options.bin.as_deref())?;
            session_bin = Some(launcher(out, &bin)?);
            agents.push(peer.clone());
        } else if agents.iter().chain(&missing).all(|a| a != peer) {
            agents.push(peer.clone());
        }
    }
    if agents.iter().any(|a| a != "session") {
        eprintln!("==> {} setup (installs OpenCode and Codex from npm once)", script.display());
        let output = Command::new(&script).arg("setup").output().context("cannot run run_peer.sh setup")?;
        if !output.status.success() {
            let why = String::from_utf8_lossy(&output.stderr).lines().last().unwrap_or("").to_owned();
            for peer in agents.iter().filter(|a| *a != "session") {
                missing.push(format!("{peer}: run_peer.sh setup failed ({}): {why}", output.status));
            }
            agents.retain(|a| a == "session");
        }
    }
    let base = out.join("peers");
    let mut samples: Vec<(String, String, PeerRun)> = Vec::new();
    for index in 1..=options.runs {
        for name in &options.scripts {
            for peer in &agents {
                let dir = base.join(format!("{peer}-{name}-{index}"));
                let mut command = Command::new(&script);
                command
                    .args([peer.as_str(), name.as_str()])
                    .arg(&dir)
                    .env("QUIET", "1")
                    .env("TIMEOUT", "300");
                if let Some(bin) = &session_bin {
                    command.env("SESSION_BIN", bin);
                }
                let load = load_average();
                let status = command.status().context("cannot run run_peer.sh")?;
                let summary = std::fs::read_to_string(dir.join("summary.json"))
                    .ok()
                    .and_then(|text| serde_json::from_str::<Value>(&text).ok());
                let stamp = (peer == "session").then(|| launch_to_first_request(&dir)).flatten();
                match summary.and_then(|s| parse_run(&s, load, stamp)) {
                    Some(run) => {
                        eprintln!(
                            "    {peer} {name} #{index}: rc {}, wall {:.2} s, cpu {:.2} s, rss {:.0} MB, first request {:.3} s, load {load:.2}",
                            run.rc, run.wall_s, run.cpu_s, run.max_rss_mb, run.first_request_s
                        );
                        samples.push((peer.clone(), name.clone(), run));
                    }
                    None => missing.push(format!("{peer} {name} #{index}: no summary ({status})")),
                }
            }
        }
    }
    let mut rows = Vec::new();
    for peer in &agents {
        for name in &options.scripts {
            let runs: Vec<PeerRun> = samples
                .iter()
                .filter(|(p, s, _)| p == peer && s == name)
                .map(|(_, _, r)| r.clone())
                .collect();
            if runs.is_empty() {
                continue;
            }
            let of = |f: &dyn Fn(&PeerRun) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>());
            rows.push(PeerRow {
                peer: peer.clone(),
                script: name.clone(),
                ok: runs.iter().filter(|r| r.rc == 0).count(),
                wall_s: of(&|r| r.wall_s),
                cpu_s: of(&|r| r.cpu_s),
                max_rss_mb: of(&|r| r.max_rss_mb),
                first_request_s: of(&|r| r.first_request_s),
                first_request_harness_s: of(&|r| r.first_request_harness_s),
                store_mb: of(&|r| r.store_bytes / 1e6),
                samples: runs,
            });
        }
    }
    let command = format!(
        "cargo xtask bench peers --runs {} --peers {} --scripts {}",
        options.runs,
        options.peers.join(","),
        options.scripts.join(",")
    );
    Ok(Peers { rows, missing, command })
}

/// The file beside a run's project folder where our launcher writes when it started the binary.
const LAUNCH_STAMP: &str = "launched";

/// A launcher of `bin` for the harness, written to `out`: it writes the time (bash's
/// `EPOCHREALTIME`, the clock of the mock's request times) to [`LAUNCH_STAMP`] in the folder
/// above its working directory (the run's project), then becomes `bin`. The harness times our
/// launch only in `/usr/bin/time`'s hundredths of a second, most of our figure; the stamp makes
/// it exact. The launcher's own start (a bash) counts in our CPU figures.
fn launcher(out: &Path, bin: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(out).with_context(|| format!("create {}", out.display()))?;
    let path = out.join("session-launcher");
    let quoted = bin.display().to_string().replace('\'', r"'\''");
    let script = format!(
        "#!/usr/bin/env bash\nprintf '%s\\n' \"$EPOCHREALTIME\" > ../{LAUNCH_STAMP}\nexec '{quoted}' \"$@\"\n"
    );
    std::fs::write(&path, script).with_context(|| format!("write {}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    }
    Ok(path)
}

/// Seconds from our launcher's stamp to the mock's first request in run folder `dir`.
fn launch_to_first_request(dir: &Path) -> Option<f64> {
    let launched: f64 = std::fs::read_to_string(dir.join(LAUNCH_STAMP)).ok()?.trim().parse().ok()?;
    let requests = std::fs::read_to_string(dir.join("req.jsonl")).ok()?;
    let first: Value = serde_json::from_str(requests.lines().find(|line| !line.trim().is_empty())?).ok()?;
    let received = first.get("ts").and_then(Value::as_f64)?;
    Some(received - launched).filter(|seconds| *seconds >= 0.0)
}

/// A run from `summarize.py`'s JSON; `stamped` is our own launch-to-request time, when known.
fn parse_run(summary: &Value, load: f64, stamped: Option<f64>) -> Option<PeerRun> {
    let number = |key: &str| summary.get(key).and_then(Value::as_f64);
    let harness = number("first_request_after_s").unwrap_or(f64::NAN);
    let before_launch = number("wall_outer_s")? - number("wall_s")?;
    Some(PeerRun {
        rc: summary.get("rc").and_then(Value::as_i64)?,
        wall_s: number("wall_s")?,
        cpu_s: number("cpu_s")?,
        max_rss_mb: number("max_rss_mb")?,
        first_request_harness_s: harness,
        first_request_s: stamped.unwrap_or(harness - before_launch.max(0.0)),
        first_request_stamped: stamped.is_some(),
        store_bytes: summary.pointer("/storage/bytes").and_then(Value::as_f64).unwrap_or(0.0),
        requests: summary.get("requests").and_then(Value::as_i64).unwrap_or(0),
        load,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::parse_run;

    /// The launcher writes its stamp beside the project folder it runs in and hands the
    /// arguments to the binary; the stamp and the mock's log give the launch-to-request time.
    #[test]
    fn the_launcher_stamps_its_launch_and_runs_the_binary() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let project = dir.path().join("proj");
        std::fs::create_dir_all(&project)?;
        let launcher = super::launcher(dir.path(), std::path::Path::new("/bin/sh"))?;
        let status = std::process::Command::new(&launcher)
            .args(["-c", "echo \"$1\" > ../argument", "sh", "it's passed"])
            .current_dir(&project)
            .status()?;
        assert!(status.success());
        assert_eq!(std::fs::read_to_string(dir.path().join("argument"))?, "it's passed\n");
        let launched: f64 = std::fs::read_to_string(dir.path().join(super::LAUNCH_STAMP))?.trim().parse()?;
        let request = json!({"ts": launched + 0.0125, "kind": "main"});
        std::fs::write(dir.path().join("req.jsonl"), format!("{request}\n"))?;
        let seconds = super::launch_to_first_request(dir.path()).unwrap_or(f64::NAN);
        assert!((seconds - 0.0125).abs() < 1e-6, "{seconds}");
        Ok(())
    }

    #[test]
    fn runs_read_summarize_output() {
        let summary = json!({"rc": 0, "wall_s": 2.3, "wall_outer_s": 2.4, "cpu_s": 1.44, "max_rss_mb": 150.2,
                             "first_request_after_s": 0.27, "requests": 41, "storage": {"bytes": 6_160_000}});
        let run = parse_run(&summary, 1.5, None).unwrap_or_else(|| panic!("no run"));
        assert_eq!((run.rc, run.requests), (0, 41));
        assert!((run.store_bytes - 6.16e6).abs() < 1.0);
        assert!((run.first_request_s - 0.17).abs() < 1e-9);
        assert!(!run.first_request_stamped);
        assert!(parse_run(&json!({"rc": 1}), 0.0, None).is_none());
        let stamped = parse_run(&summary, 1.5, Some(0.0123)).unwrap_or_else(|| panic!("no run"));
        assert!((stamped.first_request_s - 0.0123).abs() < 1e-12 && stamped.first_request_stamped);
        assert!((stamped.first_request_harness_s - 0.27).abs() < 1e-12);
    }
}
