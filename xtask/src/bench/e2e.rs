//! End-to-end runs: a script of `bench/scripts/` served by the loopback test server, the real
//! `session` binary run on a fresh git-initialised copy of `bench/fixture/`, as
//! `../shared/peers/run_peer.sh session` runs it (the same OpenCode-schema config, `run --yes`).
//!
//! Each run happens in a helper process (`xtask bench run-one`, this binary again) so that
//! `getrusage(RUSAGE_CHILDREN)` there covers `session` and its children (git, tool commands)
//! and nothing else. The helper hosts the server, so the first request is timed on one clock.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use nix::sys::resource::{UsageWho, getrusage};
use serde::{Deserialize, Serialize};
use serde_json::json;
use session_llm::{RequestKind, Script};
use session_testkit::TestServer;

use super::{Options, load_average, median, script_path, session_binary};

/// What one run measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RunSummary {
    /// Script name.
    pub(crate) script: String,
    /// Whether snapshots were on.
    pub(crate) snapshots: bool,
    /// The exit code of `session` (`None`: killed by a signal).
    pub(crate) exit_code: Option<i32>,
    /// Spawn to exit, seconds.
    pub(crate) wall_s: f64,
    /// User CPU of `session` and its children, seconds.
    pub(crate) user_s: f64,
    /// System CPU of `session` and its children, seconds.
    pub(crate) sys_s: f64,
    /// Peak resident set of the largest of `session` and its children, MB (MiB).
    pub(crate) max_rss_mb: f64,
    /// Spawn to the server's receipt of the first request, seconds.
    pub(crate) first_request_s: Option<f64>,
    /// Requests served, all kinds.
    pub(crate) requests: usize,
    /// Main (agent-turn) requests.
    pub(crate) main_requests: usize,
    /// Body bytes of the last main request (the history re-sent).
    pub(crate) last_request_bytes: usize,
    /// Tool-call invariant violations the server found.
    pub(crate) violations: usize,
    /// The SQLite file with its WAL and shared-memory files, bytes.
    pub(crate) store_bytes: u64,
    /// Everything under the data folder (store and snapshot repository), bytes.
    pub(crate) data_bytes: u64,
    /// One-minute load average when the run started.
    pub(crate) load: f64,
    /// The end of stdout, for a quick look.
    pub(crate) stdout_tail: String,
    /// The run folder.
    pub(crate) dir: PathBuf,
}

impl RunSummary {
    /// User plus system CPU.
    pub(crate) fn cpu_s(&self) -> f64 {
        self.user_s + self.sys_s
    }
}

/// Medians of one script and snapshot setting over its runs.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Row {
    /// Script name.
    pub(crate) script: String,
    /// Whether snapshots were on.
    pub(crate) snapshots: bool,
    /// Runs that exited 0, of all.
    pub(crate) ok: usize,
    /// Runs.
    pub(crate) runs: usize,
    /// Median wall, seconds.
    pub(crate) wall_s: f64,
    /// Median user+sys CPU, seconds.
    pub(crate) cpu_s: f64,
    /// Median peak RSS, MB.
    pub(crate) max_rss_mb: f64,
    /// Median time to the first request, seconds.
    pub(crate) first_request_s: f64,
    /// Median store size (SQLite files), MB.
    pub(crate) store_mb: f64,
    /// Median data folder size (store and snapshots), MB.
    pub(crate) data_mb: f64,
    /// Requests per run (of the first).
    pub(crate) requests: usize,
    /// Load averages at the start of each run.
    pub(crate) loads: Vec<f64>,
    /// Every run.
    pub(crate) samples: Vec<RunSummary>,
    /// The command that reproduces this row.
    pub(crate) command: String,
}

/// The end-to-end results.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct EndToEnd {
    /// The binary measured.
    pub(crate) binary: PathBuf,
    /// One row per script and snapshot setting.
    pub(crate) rows: Vec<Row>,
}

/// Runs every script `options.runs` times with each snapshot setting.
pub(crate) fn run(root: &Path, out: &Path, options: &Options) -> Result<EndToEnd> {
    let binary = session_binary(root, options.bin.as_deref())?;
    let helper = std::env::current_exe().context("cannot find the xtask binary")?;
    let base = out.join("e2e");
    let mut rows = Vec::new();
    for script in &options.scripts {
        let path = script_path(root, script)?;
        let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        for &snapshots in &options.snapshots {
            let mut samples = Vec::new();
            for index in 1..=options.runs {
                let tag = if snapshots { "snap" } else { "nosnap" };
                let dir = base.join(format!("{name}-{tag}-{index}"));
                prepare(root, &dir)?;
                let mut command = Command::new(&helper);
                command.args(["bench", "run-one", "--script"]).arg(&path).arg("--bin").arg(&binary);
                command.arg("--dir").arg(&dir);
                if snapshots {
                    command.arg("--snapshots");
                }
                let status = command.status().context("cannot start the measuring helper")?;
                if !status.success() {
                    bail!("the measuring helper failed on {name} ({status})");
                }
                let text = std::fs::read_to_string(dir.join("summary.json"))
                    .with_context(|| format!("no summary in {}", dir.display()))?;
                let summary: RunSummary = serde_json::from_str(&text).context("read summary.json")?;
                eprintln!(
                    "    {name} snapshots={snapshots} #{index}: exit {:?}, wall {:.3} s, cpu {:.3} s, rss {:.1} MB, first request {:.1} ms, store {:.3} MB, load {:.2}",
                    summary.exit_code,
                    summary.wall_s,
                    summary.cpu_s(),
                    summary.max_rss_mb,
                    summary.first_request_s.unwrap_or(f64::NAN) * 1e3,
                    summary.store_bytes as f64 / 1e6,
                    summary.load,
                );
                samples.push(summary);
            }
            let snapshot_flag = if snapshots { "on" } else { "off" };
            rows.push(row(
                &name,
                snapshots,
                samples,
                format!(
                    "cargo xtask bench e2e --scripts {name} --snapshots {snapshot_flag} --runs {}",
                    options.runs
                ),
            ));
        }
    }
    Ok(EndToEnd { binary, rows })
}

fn row(script: &str, snapshots: bool, samples: Vec<RunSummary>, command: String) -> Row {
    let of = |f: &dyn Fn(&RunSummary) -> f64| median(&samples.iter().map(f).collect::<Vec<_>>());
    Row {
        script: script.to_owned(),
        snapshots,
        ok: samples.iter().filter(|s| s.exit_code == Some(0)).count(),
        runs: samples.len(),
        wall_s: of(&|s| s.wall_s),
        cpu_s: of(&RunSummary::cpu_s),
        max_rss_mb: of(&|s| s.max_rss_mb),
        first_request_s: of(&|s| s.first_request_s.unwrap_or(f64::NAN)),
        store_mb: of(&|s| s.store_bytes as f64 / 1e6),
        data_mb: of(&|s| s.data_bytes as f64 / 1e6),
        requests: samples.first().map_or(0, |s| s.requests),
        loads: samples.iter().map(|s| s.load).collect(),
        samples,
        command,
    }
}

/// A fresh run folder with `proj/`, a git-initialised copy of the fixture (as `run_peer.sh`).
fn prepare(root: &Path, dir: &Path) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("remove {}", dir.display()))?;
    }
    let proj = dir.join("proj");
    copy_tree(&root.join("bench/fixture"), &proj)?;
    for args in [
        &["init", "-q"][..],
        &["add", "-A"],
        &["-c", "user.email=bench@example.invalid", "-c", "user.name=bench", "commit", "-qm", "init"],
    ] {
        let status = Command::new("git")
            .args(args)
            .current_dir(&proj)
            .stdout(Stdio::null())
            .status()
            .context("cannot run git")?;
        if !status.success() {
            bail!("git {} failed in {}", args.join(" "), proj.display());
        }
    }
    Ok(())
}

fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("create {}", to.display()))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("read {}", from.display()))? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)
                .with_context(|| format!("copy {}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// Bytes of every file under `dir` (0 when it does not exist).
pub(crate) fn tree_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .filter_map(Result::ok)
        .map(|entry| match entry.file_type() {
            Ok(kind) if kind.is_dir() => tree_bytes(&entry.path()),
            Ok(_) => entry.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}

/// The config `run_peer.sh` writes for OpenCode and for us: the server as the
/// OpenAI-compatible provider `mock`, model `mock/mock-model`.
fn opencode_config(base_url: &str, script: &Script, snapshots: bool) -> serde_json::Value {
    let output = if script.model.output == 0 { 8000 } else { script.model.output };
    json!({
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": false,
        "share": "disabled",
        "lsp": false,
        "formatter": false,
        "snapshot": snapshots,
        "model": "mock/mock-model",
        "small_model": "mock/mock-model",
        "enabled_providers": ["mock"],
        "provider": {
            "mock": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Mock",
                "options": {"baseURL": base_url, "apiKey": "mock-key"},
                "models": {"mock-model": {"name": "Mock Model", "tool_call": true,
                           "limit": {"context": script.model.context, "output": output}}}
            }
        },
        "permission": {"edit": "allow", "bash": "allow", "webfetch": "deny", "external_directory": "allow"}
    })
}

struct OneArgs {
    script: PathBuf,
    bin: PathBuf,
    dir: PathBuf,
    snapshots: bool,
}

fn one_args(args: &[String]) -> Result<OneArgs> {
    let (mut script, mut bin, mut dir, mut snapshots) = (None, None, None, false);
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--script" => script = args.next().map(PathBuf::from),
            "--bin" => bin = args.next().map(PathBuf::from),
            "--dir" => dir = args.next().map(PathBuf::from),
            "--snapshots" => snapshots = true,
            other => bail!("run-one: unknown option {other:?}"),
        }
    }
    Ok(OneArgs {
        script: script.context("run-one needs --script")?,
        bin: bin.context("run-one needs --bin")?,
        dir: dir.context("run-one needs --dir")?,
        snapshots,
    })
}

/// The helper: serves the script, runs `session` once in `--dir`, writes `summary.json` there.
pub(crate) fn run_one(args: &[String]) -> Result<()> {
    let args = one_args(args)?;
    let text =
        std::fs::read_to_string(&args.script).with_context(|| format!("read {}", args.script.display()))?;
    let script =
        Script::from_json(&text).map_err(|error| anyhow::anyhow!("{}: {error}", args.script.display()))?;
    let name = args.script.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let prompt = script.prompt.clone().unwrap_or_else(|| "Do the task.".to_owned());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("start the server's runtime")?;
    let server = runtime.block_on(TestServer::start(script.clone())).context("start the test server")?;
    let dir = &args.dir;
    let config = dir.join("opencode.json");
    let body = serde_json::to_string_pretty(&opencode_config(&server.url(), &script, args.snapshots))?;
    std::fs::write(&config, body).with_context(|| format!("write {}", config.display()))?;
    for sub in ["home", "config", "cache", "data", "state"] {
        std::fs::create_dir_all(dir.join(sub))?;
    }
    let stdout = std::fs::File::create(dir.join("stdout.txt"))?;
    let stderr = std::fs::File::create(dir.join("stderr.txt"))?;
    let mut command = Command::new(&args.bin);
    command
        .args(["run", "--yes", "--model", "mock/mock-model", &prompt])
        .current_dir(dir.join("proj"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("TERM", "dumb")
        .env("LANG", "C.UTF-8")
        .env("HOME", dir.join("home"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("SESSION_CONFIG", &config)
        .env("NO_PROXY", "*")
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr);
    let load = load_average();
    let started = Instant::now();
    let mut child = command.spawn().with_context(|| format!("cannot start {}", args.bin.display()))?;
    // Poll the request log until the first request arrives (or the process ends).
    let mut first_request = None;
    while first_request.is_none() {
        if !server.requests().is_empty() {
            first_request = Some(started.elapsed());
            break;
        }
        if child.try_wait()?.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    let status = child.wait().context("wait for session")?;
    let wall = started.elapsed();
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).context("getrusage")?;
    let seconds = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    let requests = server.requests();
    runtime.block_on(server.shutdown());
    let db = dir.join("data/session/session.db");
    let store_bytes = ["", "-wal", "-shm"]
        .iter()
        .filter_map(|suffix| std::fs::metadata(format!("{}{suffix}", db.display())).ok())
        .map(|m| m.len())
        .sum();
    let stdout_text = std::fs::read_to_string(dir.join("stdout.txt")).unwrap_or_default();
    let tail: String = {
        let chars: Vec<char> = stdout_text.trim().chars().collect();
        chars[chars.len().saturating_sub(300)..].iter().collect()
    };
    let main: Vec<_> = requests.iter().filter(|r| r.kind == RequestKind::Main).collect();
    let summary = RunSummary {
        script: name,
        snapshots: args.snapshots,
        exit_code: status.code(),
        wall_s: wall.as_secs_f64(),
        user_s: seconds(usage.user_time()),
        sys_s: seconds(usage.system_time()),
        // ru_maxrss is in KiB on Linux.
        max_rss_mb: usage.max_rss() as f64 / 1024.0,
        first_request_s: first_request.map(|d| d.as_secs_f64()),
        requests: requests.len(),
        main_requests: main.len(),
        last_request_bytes: main.last().map_or(0, |r| r.body.to_string().len()),
        violations: requests.iter().map(|r| r.violations.len()).sum(),
        store_bytes,
        data_bytes: tree_bytes(&dir.join("data")),
        load,
        stdout_tail: tail,
        dir: dir.clone(),
    };
    std::fs::write(dir.join("summary.json"), serde_json::to_string_pretty(&summary)?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{RunSummary, row, tree_bytes};

    fn sample(cpu: f64, exit: i32) -> RunSummary {
        RunSummary {
            script: "long".into(),
            snapshots: false,
            exit_code: Some(exit),
            wall_s: cpu * 2.0,
            user_s: cpu,
            sys_s: 0.0,
            max_rss_mb: 10.0,
            first_request_s: Some(0.01),
            requests: 41,
            main_requests: 41,
            last_request_bytes: 0,
            violations: 0,
            store_bytes: 500_000,
            data_bytes: 600_000,
            load: 1.0,
            stdout_tail: String::new(),
            dir: "x".into(),
        }
    }

    #[test]
    fn rows_take_medians_and_count_successes() {
        let row = row("long", false, vec![sample(0.3, 0), sample(0.1, 0), sample(0.2, 1)], String::new());
        assert_eq!((row.ok, row.runs, row.requests), (2, 3, 41));
        assert!((row.cpu_s - 0.2).abs() < 1e-9);
        assert!((row.store_mb - 0.5).abs() < 1e-9);
    }

    #[test]
    fn tree_bytes_sums_nested_files() {
        let dir = std::env::temp_dir().join(format!("xtask-tree-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("a/b")).ok();
        std::fs::write(dir.join("x"), [0u8; 10]).ok();
        std::fs::write(dir.join("a/b/y"), [0u8; 5]).ok();
        assert_eq!(tree_bytes(&dir), 15);
        assert_eq!(tree_bytes(&dir.join("absent")), 0);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
