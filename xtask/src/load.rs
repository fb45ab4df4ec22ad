//! `cargo xtask bench --load [--sessions N] [--db sqlite|postgres|both]`: issue 12's load test.
//!
//! The release `session serve` runs against the loopback test server, whose one scripted reply
//! streams `--chunks` text chunks with a `--delay-ms` pause before each. Every chunk is one
//! [`SENT_US`] placeholder, which the server replaces by the moment it sends the chunk, so the
//! one `/event` client this driver opens knows for every delta it receives how long it took
//! from the provider to it. The driver creates N sessions, sends N `prompt_async` at once,
//! waits for N `session.idle`, then reads every session back (`GET /session/{id}/message`) and
//! counts what is missing. It reports the latency percentiles, the peak RSS of the server
//! (`VmHWM`), the wall time and every error, as `load.md` and `load.json` under
//! `<target>/bench/`.
//!
//! On PostgreSQL the server gets a fresh database (created and dropped here) on the server of
//! `--pg-url` (default `$SESSION_TEST_PG_URL`, else `postgres://postgres@127.0.0.1:5432/test`),
//! through `--db`, which gives it the store's default bounded pool.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, anyhow, bail};
use futures_util::StreamExt as _;
use serde::Serialize;
use serde_json::{Value, json};
use session_llm::Script;
use session_testkit::{SENT_US, TestServer};

/// The PostgreSQL server used when neither `--pg-url` nor `SESSION_TEST_PG_URL` names one.
const DEFAULT_PG_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// Characters of one text chunk: a 16-digit stamp and a space (the placeholder is 9 + 1).
const CHUNK_CHARS: usize = SENT_US.len() + 1;

/// How many requests the read-back sends at once (it measures nothing, so it stays polite).
const READ_BACK_CONCURRENCY: usize = 32;

/// Which database the server under load uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Backend {
    /// The embedded SQLite file in the data folder.
    Sqlite,
    /// A fresh database on a PostgreSQL server.
    Postgres,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Self::Sqlite => "sqlite",
            Self::Postgres => "postgres",
        }
    }
}

/// What `bench --load` is told.
#[derive(Debug, Clone)]
pub(crate) struct LoadOptions {
    /// Concurrent sessions.
    pub(crate) sessions: usize,
    /// The backends, in order.
    pub(crate) backends: Vec<Backend>,
    /// Text chunks in the scripted reply.
    pub(crate) chunks: usize,
    /// The provider's pause before each chunk.
    pub(crate) delay: Duration,
    /// The `session` binary; built in release when absent.
    pub(crate) bin: Option<PathBuf>,
    /// The PostgreSQL server a fresh database is created on.
    pub(crate) pg_url: String,
    /// How long the driver waits for every session to go idle.
    pub(crate) timeout: Duration,
    /// Where the server's log is kept (`load-<backend>.stderr`); nowhere when absent.
    pub(crate) logs: Option<PathBuf>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        Self {
            sessions: 1000,
            backends: vec![Backend::Sqlite, Backend::Postgres],
            chunks: 8,
            delay: Duration::from_millis(10),
            bin: None,
            pg_url: std::env::var("SESSION_TEST_PG_URL")
                .ok()
                .filter(|url| !url.is_empty())
                .unwrap_or_else(|| DEFAULT_PG_URL.to_owned()),
            timeout: Duration::from_secs(600),
            logs: None,
        }
    }
}

fn parse_options(args: &[String]) -> Result<LoadOptions> {
    let mut options = LoadOptions::default();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().with_context(|| format!("{name} needs a value"));
        let number = |name: &str, text: &str| -> Result<u64> {
            text.parse().with_context(|| format!("{name} takes a number, not {text:?}"))
        };
        match arg.as_str() {
            "--load" => {}
            "--sessions" => {
                let text = value("--sessions")?;
                options.sessions = usize::try_from(number("--sessions", text)?)?;
            }
            "--chunks" => {
                let text = value("--chunks")?;
                options.chunks = usize::try_from(number("--chunks", text)?)?;
            }
            "--delay-ms" => {
                let text = value("--delay-ms")?;
                options.delay = Duration::from_millis(number("--delay-ms", text)?);
            }
            "--timeout-s" => {
                let text = value("--timeout-s")?;
                options.timeout = Duration::from_secs(number("--timeout-s", text)?);
            }
            "--db" => {
                options.backends = match value("--db")?.as_str() {
                    "sqlite" => vec![Backend::Sqlite],
                    "postgres" => vec![Backend::Postgres],
                    "both" => vec![Backend::Sqlite, Backend::Postgres],
                    other => bail!("--db takes sqlite, postgres or both, not {other:?}"),
                }
            }
            "--bin" => options.bin = Some(PathBuf::from(value("--bin")?)),
            "--pg-url" => options.pg_url = value("--pg-url")?.clone(),
            other => bail!("unknown bench --load option {other:?}"),
        }
    }
    if options.sessions == 0 || options.chunks == 0 {
        bail!("--sessions and --chunks must be at least 1");
    }
    Ok(options)
}

/// What one backend's run measured.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct LoadReport {
    /// The backend.
    pub(crate) backend: Backend,
    /// Sessions started.
    pub(crate) sessions: usize,
    /// Text chunks per reply and the pause before each, ms.
    pub(crate) chunks: usize,
    /// The pause before each chunk, ms.
    pub(crate) delay_ms: u64,
    /// Sessions whose stored history is complete: the whole scripted text in a finished
    /// assistant message without an error.
    pub(crate) complete: usize,
    /// Sessions whose stored text is missing or differs from the script (lost parts).
    pub(crate) lost_parts: usize,
    /// Sessions whose assistant message is not finished, or ended with an error.
    pub(crate) unfinished: usize,
    /// HTTP answers that were not 2xx (creates, prompts, read-backs).
    pub(crate) http_errors: usize,
    /// `session.error` events.
    pub(crate) session_errors: usize,
    /// Provider requests, and those with a broken invariant or a non-200 answer.
    pub(crate) provider_requests: usize,
    /// Provider requests with a broken invariant or a non-200 answer.
    pub(crate) provider_faults: usize,
    /// Deltas the provider sent (stamps found in the stored texts).
    pub(crate) deltas_sent: usize,
    /// Deltas the `/event` client received.
    pub(crate) deltas_received: usize,
    /// Sessions that went idle before the timeout, as the event client saw them.
    pub(crate) idle: usize,
    /// Provider delta to `/event` client, ms: median.
    pub(crate) latency_p50_ms: f64,
    /// 99th percentile, ms.
    pub(crate) latency_p99_ms: f64,
    /// Largest, ms.
    pub(crate) latency_max_ms: f64,
    /// Peak resident set of `session serve`, MiB (`VmHWM`).
    pub(crate) peak_rss_mib: f64,
    /// From the first prompt sent to the last session idle, seconds.
    pub(crate) wall_s: f64,
    /// One-minute load average before and after the run.
    pub(crate) load: (f64, f64),
    /// Warnings (and errors) `session serve` logged.
    pub(crate) server_warnings: usize,
    /// CPU time of `session serve` over the whole run, seconds.
    pub(crate) server_cpu_s: f64,
    /// CPU time of this driver (the provider and the clients) over the run, seconds.
    pub(crate) driver_cpu_s: f64,
    /// Up to ten of the problems found, for a first look.
    pub(crate) problems: Vec<String>,
    /// The command that reproduces this run.
    pub(crate) command: String,
}

impl LoadReport {
    /// Whether nothing went wrong: every session complete, every delta delivered, no error.
    pub(crate) fn clean(&self) -> bool {
        self.complete == self.sessions
            && self.lost_parts == 0
            && self.unfinished == 0
            && self.http_errors == 0
            && self.session_errors == 0
            && self.provider_faults == 0
            && self.server_warnings == 0
            && self.deltas_received == self.deltas_sent
            && self.deltas_sent == self.sessions * self.chunks
    }
}

/// Entry point of `cargo xtask bench --load ARGS`.
pub(crate) fn main(root: &Path, args: &[String]) -> Result<()> {
    let mut options = parse_options(args)?;
    let out = target_dir(root).join("bench");
    std::fs::create_dir_all(&out).with_context(|| format!("create {}", out.display()))?;
    options.logs = Some(out.clone());
    let binary = match &options.bin {
        Some(bin) => bin.clone(),
        None => build_release(root)?,
    };
    let mut reports = Vec::new();
    for &backend in &options.backends {
        eprintln!("load: {} sessions on {}", options.sessions, backend.name());
        let report = run(&binary, backend, &options)?;
        eprintln!("load: {}", summary_line(&report));
        reports.push(report);
    }
    let markdown = markdown(&reports);
    std::fs::write(out.join("load.md"), &markdown)?;
    std::fs::write(out.join("load.json"), serde_json::to_string_pretty(&reports)?)?;
    println!("{markdown}");
    eprintln!("load: written to {}", out.join("load.md").display());
    if let Some(bad) = reports.iter().find(|report| !report.clean()) {
        bail!("the load run on {} found problems: {:?}", bad.backend.name(), bad.problems);
    }
    Ok(())
}

/// Cargo's target directory: `CARGO_TARGET_DIR` when set, else `target/` in the workspace.
fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => root.join(dir),
        _ => root.join("target"),
    }
}

fn build_release(root: &Path) -> Result<PathBuf> {
    eprintln!("==> cargo build --release -p session-cli");
    let status = Command::new("cargo")
        .args(["build", "--release", "--quiet", "-p", "session-cli", "--bin", "session"])
        .current_dir(root)
        .status()
        .context("cannot start cargo build")?;
    if !status.success() {
        bail!("cargo build --release -p session-cli exited with {status}");
    }
    let bin = target_dir(root).join("release").join(format!("session{}", std::env::consts::EXE_SUFFIX));
    if !bin.is_file() {
        bail!("the release build left no binary at {}", bin.display());
    }
    Ok(bin)
}

fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next().and_then(|first| first.parse().ok()))
        .unwrap_or(0.0)
}

/// CPU time (user and system) of this process so far, seconds.
fn own_cpu_s() -> f64 {
    use nix::sys::resource::{UsageWho, getrusage};
    getrusage(UsageWho::RUSAGE_SELF).map_or(0.0, |usage| {
        let seconds = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
        seconds(usage.user_time()) + seconds(usage.system_time())
    })
}

fn unix_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(0))
}

/// The scripted reply: `chunks` stamps, one a chunk.
fn script(chunks: usize, delay: Duration) -> Result<Script> {
    let text = format!("{SENT_US} ").repeat(chunks);
    let body = json!({
        "name": "load",
        "title": "Load",
        "turns": [{"text": text}],
        "chunk_chars": CHUNK_CHARS,
        "chunk_delay": delay.as_secs_f64(),
    });
    Script::from_json(&body.to_string()).map_err(|error| anyhow!("the load script: {error}"))
}

/// Whether `token` is a stamp: 16 ASCII digits.
fn is_stamp(token: &str) -> bool {
    token.len() == 16 && token.bytes().all(|b| b.is_ascii_digit())
}

/// The stamps in a text, in order.
fn stamps(text: &str) -> impl Iterator<Item = u64> + '_ {
    text.split_whitespace().filter(|token| is_stamp(token)).filter_map(|token| token.parse().ok())
}

/// The text with its stamps put back to the placeholder: equal to the script's text when
/// nothing was lost.
fn unstamped(text: &str) -> String {
    text.split(' ').map(|token| if is_stamp(token) { SENT_US } else { token }).collect::<Vec<_>>().join(" ")
}

/// The `q` quantile (nearest rank) of sorted values, 0 for none.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// What the `/event` client has seen so far.
#[derive(Debug, Default)]
struct Seen {
    /// Provider-to-client latencies, microseconds.
    latencies_us: Vec<f64>,
    /// The deltas of each part, concatenated, by part id.
    part_text: HashMap<String, String>,
    /// Sessions that went idle.
    idle: HashSet<String>,
    /// `session.error` events, as text.
    errors: Vec<String>,
    /// Events received.
    events: usize,
}

/// Folds one event, received at `at_us`, into `seen`.
fn observe(seen: &mut Seen, event: &Value, at_us: u64) {
    seen.events += 1;
    let properties = &event["properties"];
    match event["type"].as_str().unwrap_or_default() {
        "message.part.delta" => {
            let Some(delta) = properties["delta"].as_str() else { return };
            for stamp in stamps(delta) {
                seen.latencies_us.push(at_us.saturating_sub(stamp) as f64);
            }
            if let Some(part) = properties["partID"].as_str() {
                seen.part_text.entry(part.to_owned()).or_default().push_str(delta);
            }
        }
        "session.idle" => {
            if let Some(session) = properties["sessionID"].as_str() {
                seen.idle.insert(session.to_owned());
            }
        }
        "session.error" => seen.errors.push(properties.to_string()),
        _ => {}
    }
}

/// Whether an event's data may be a delta, an idle or an error (the server writes `id`, then
/// `type`, first).
fn worth_parsing(data: &str) -> bool {
    let head = data.get(..96).unwrap_or(data);
    head.contains("\"message.part.delta\"")
        || head.contains("\"session.idle\"")
        || head.contains("\"session.error\"")
}

/// Reads `/event` into `seen` until the stream ends.
async fn follow_events(response: reqwest::Response, seen: Arc<Mutex<Seen>>) {
    let mut stream = response.bytes_stream();
    let mut buffer = String::new();
    while let Some(Ok(chunk)) = stream.next().await {
        let at = unix_us();
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let data: Vec<&str> =
                block.lines().filter_map(|line| line.strip_prefix("data:")).map(str::trim_start).collect();
            if data.is_empty() {
                continue; // a keep-alive comment
            }
            let data = data.join("\n");
            let mut seen = seen.lock().unwrap_or_else(PoisonError::into_inner);
            // Only deltas, idles and errors are read: parsing every event would make this
            // client, not the server, the slow part.
            if !worth_parsing(&data) {
                seen.events += 1;
                continue;
            }
            if let Ok(event) = serde_json::from_str::<Value>(&data) {
                observe(&mut seen, &event, at);
            }
        }
    }
}

/// The server under load, stopped (and its database dropped) when dropped.
struct Served {
    child: Child,
    url: String,
    dir: tempfile::TempDir,
}

impl Served {
    /// Peak resident set so far, MiB, from `/proc/<pid>/status`.
    fn peak_rss_mib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse::<f64>().ok())
            .map_or(0.0, |kib| kib / 1024.0)
    }

    /// CPU time (user and system) the server has used so far, seconds, from `/proc/<pid>/stat`.
    fn cpu_s(&self) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        // The fields after the command name (which may hold spaces) start at its closing ')'.
        let fields: Vec<&str> =
            stat.rsplit_once(')').map_or("", |(_, rest)| rest).split_whitespace().collect();
        let ticks: f64 = [11, 12].iter().filter_map(|&at| fields.get(at)?.parse::<f64>().ok()).sum();
        // Clock ticks are 1/100 s on Linux.
        ticks / 100.0
    }

    /// SIGTERM, then a kill when it does not stop within a few seconds.
    fn stop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).unwrap_or(i32::MAX));
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The end of the server's stderr, for a report.
    fn stderr_tail(&self) -> String {
        let lines = self.stderr_lines();
        lines[lines.len().saturating_sub(5)..].join("\n")
    }

    /// The server's log lines of level WARN or ERROR.
    fn warnings(&self) -> Vec<String> {
        self.stderr_lines()
            .into_iter()
            .filter(|line| line.contains(" WARN ") || line.contains(" ERROR "))
            .collect()
    }

    fn stderr_lines(&self) -> Vec<String> {
        let text = std::fs::read_to_string(self.dir.path().join("serve.stderr")).unwrap_or_default();
        text.lines().map(str::to_owned).collect()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.stop();
        }
    }
}

/// Starts `session serve` in a fresh project whose provider `mock` is `provider_url`.
fn serve(binary: &Path, provider_url: &str, database: Option<&str>) -> Result<Served> {
    let dir = tempfile::Builder::new().prefix("session-load-").tempdir().context("a scratch folder")?;
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project)?;
    for sub in ["home", "config", "cache", "data", "state"] {
        std::fs::create_dir_all(dir.path().join(sub))?;
    }
    // Snapshots off: the load is the streaming path, not a thousand git processes.
    let config = json!({
        "snapshot": false,
        "provider": {"mock": {
            "npm": "@ai-sdk/openai-compatible",
            "options": {"baseURL": provider_url, "apiKey": "load-key"},
            "models": {"m": {"limit": {"context": 32000, "output": 4000}}}
        }}
    });
    std::fs::write(project.join("session.json"), serde_json::to_string_pretty(&config)?)?;
    // The project's provider endpoint applies only in a trusted folder, as for a user.
    let trusted = Command::new(binary)
        .arg("trust")
        .current_dir(&project)
        .env_clear()
        .env("HOME", dir.path().join("home"))
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .output()
        .with_context(|| format!("cannot run {} trust", binary.display()))?;
    anyhow::ensure!(
        trusted.status.success(),
        "session trust failed: {}",
        String::from_utf8_lossy(&trusted.stderr)
    );
    let stderr = std::fs::File::create(dir.path().join("serve.stderr"))?;
    let mut command = Command::new(binary);
    command.args(["serve", "--port", "0", "--model", "mock/m"]);
    if let Some(database) = database {
        command.args(["--db", database]);
    }
    command
        .current_dir(&project)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir.path().join("home"))
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .env("XDG_CACHE_HOME", dir.path().join("cache"))
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .env("XDG_STATE_HOME", dir.path().join("state"))
        .env("NO_PROXY", "*")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr);
    let mut child = command.spawn().with_context(|| format!("cannot start {}", binary.display()))?;
    let stdout = child.stdout.take().context("no stdout of session serve")?;
    // The first line names the address; the rest of stdout is drained so that it never blocks.
    let mut lines = BufReader::new(stdout).lines();
    let first = lines.next().transpose().context("read session serve's stdout")?.unwrap_or_default();
    std::thread::spawn(move || lines.for_each(drop));
    let Some(url) = first.strip_prefix("session serve listening on ").map(str::trim) else {
        let _ = child.kill();
        let _ = child.wait();
        let error = std::fs::read_to_string(dir.path().join("serve.stderr")).unwrap_or_default();
        bail!("session serve did not start ({first:?}): {error}");
    };
    Ok(Served { url: url.to_owned(), child, dir })
}

/// A fresh database on the server of `base` for one run, dropped by [`drop_database`].
async fn create_database(base: &str) -> Result<(String, String)> {
    use sqlx::Connection as _;
    let name = format!("session_load_{}_{}", std::process::id(), unix_us() % 1_000_000);
    let mut connection = sqlx::PgConnection::connect(base)
        .await
        .with_context(|| format!("cannot connect to PostgreSQL at {}", redacted(base)))?;
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
        .execute(&mut connection)
        .await
        .with_context(|| format!("cannot create database {name}"))?;
    connection.close().await.ok();
    Ok((with_database(base, &name), name))
}

async fn drop_database(base: &str, name: &str) -> Result<()> {
    use sqlx::Connection as _;
    let mut connection = sqlx::PgConnection::connect(base).await?;
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)")))
        .execute(&mut connection)
        .await?;
    connection.close().await.ok();
    Ok(())
}

/// `url` with its database (the path) replaced by `name`, the query kept.
fn with_database(url: &str, name: &str) -> String {
    let (head, query) = match url.split_once('?') {
        Some((head, query)) => (head, Some(query)),
        None => (url, None),
    };
    let authority_start = head.find("://").map_or(0, |at| at + 3);
    let base = match head[authority_start..].find('/') {
        Some(slash) => &head[..authority_start + slash],
        None => head,
    };
    match query {
        Some(query) => format!("{base}/{name}?{query}"),
        None => format!("{base}/{name}"),
    }
}

/// The URL without its password.
fn redacted(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => format!("{}://***{}", &url[..scheme], &url[at..]),
        _ => url.to_owned(),
    }
}

/// One backend's run: its own provider, server and database.
pub(crate) fn run(binary: &Path, backend: Backend, options: &LoadOptions) -> Result<LoadReport> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("start the driver's runtime")?;
    runtime.block_on(async {
        let database = match backend {
            Backend::Sqlite => None,
            Backend::Postgres => Some(create_database(&options.pg_url).await?),
        };
        let result = drive(binary, backend, options, database.as_ref().map(|(url, _)| url.as_str())).await;
        if let Some((_, name)) = &database
            && let Err(error) = drop_database(&options.pg_url, name).await
        {
            eprintln!("load: could not drop database {name}: {error}");
        }
        result
    })
}

/// Answers of the driver's HTTP calls that were not 2xx, with the first few described.
#[derive(Debug, Default)]
struct Failures {
    count: usize,
    problems: Vec<String>,
}

impl Failures {
    fn add(&mut self, problem: String) {
        self.count += 1;
        if self.problems.len() < 10 {
            self.problems.push(problem);
        }
    }
}

async fn post(http: &reqwest::Client, url: String, body: Value) -> Result<(u16, Value), String> {
    let request = http.post(&url).header("content-type", "application/json").body(body.to_string());
    let response = request.send().await.map_err(|error| format!("POST {url}: {error}"))?;
    let status = response.status().as_u16();
    let text = response.text().await.map_err(|error| format!("POST {url}: {error}"))?;
    Ok((status, serde_json::from_str(&text).unwrap_or(Value::String(text))))
}

async fn drive(
    binary: &Path,
    backend: Backend,
    options: &LoadOptions,
    database: Option<&str>,
) -> Result<LoadReport> {
    let provider =
        TestServer::start(script(options.chunks, options.delay)?).await.context("start the test server")?;
    let mut served = serve(binary, &provider.url(), database)?;
    let http =
        reqwest::Client::builder().no_proxy().timeout(options.timeout).build().context("an HTTP client")?;
    let events =
        reqwest::Client::builder().no_proxy().build()?.get(format!("{}/event", served.url)).send().await?;
    if !events.status().is_success() {
        bail!("GET /event answered {}", events.status());
    }
    let seen = Arc::new(Mutex::new(Seen::default()));
    let follower = tokio::spawn(follow_events(events, seen.clone()));
    // The stream is live once server.connected arrived.
    while seen.lock().unwrap_or_else(PoisonError::into_inner).events == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let load_before = load_average();
    let driver_cpu_before = own_cpu_s();
    let mut failures = Failures::default();

    let creates = (0..options.sessions).map(|index| {
        post(&http, format!("{}/session", served.url), json!({"title": format!("load {index}")}))
    });
    let mut sessions = Vec::new();
    for answer in futures_util::future::join_all(creates).await {
        match answer {
            Ok((200, session)) => match session["id"].as_str() {
                Some(id) => sessions.push(id.to_owned()),
                None => failures.add(format!("POST /session answered no id: {session}")),
            },
            Ok((status, body)) => failures.add(format!("POST /session: {status} {body}")),
            Err(error) => failures.add(error),
        }
    }

    let started = Instant::now();
    let prompts = sessions.iter().map(|id| {
        let body = json!({"parts": [{"type": "text", "text": format!("Stream for {id}.")}]});
        post(&http, format!("{}/session/{id}/prompt_async", served.url), body)
    });
    for answer in futures_util::future::join_all(prompts).await {
        match answer {
            Ok((status, _)) if (200..300).contains(&status) => {}
            Ok((status, body)) => failures.add(format!("prompt_async: {status} {body}")),
            Err(error) => failures.add(error),
        }
    }
    let deadline = started + options.timeout;
    let mut wall = None;
    while Instant::now() < deadline {
        let idle = seen.lock().unwrap_or_else(PoisonError::into_inner).idle.len();
        if idle >= sessions.len() {
            wall = Some(started.elapsed());
            break;
        }
        if matches!(served.child.try_wait(), Ok(Some(_))) {
            failures.add(format!("session serve exited: {}", served.stderr_tail()));
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let wall = wall.unwrap_or_else(|| started.elapsed());
    let load_after = load_average();
    let peak_rss_mib = served.peak_rss_mib();
    let server_cpu_s = served.cpu_s();
    let driver_cpu_s = own_cpu_s() - driver_cpu_before;

    // Read every session back: the stored truth.
    let templates = format!("{SENT_US} ").repeat(options.chunks);
    let mut reads = futures_util::stream::iter(sessions.iter().map(|id| {
        let http = http.clone();
        let url = format!("{}/session/{id}/message", served.url);
        async move {
            let response = http.get(&url).send().await.map_err(|error| format!("GET {url}: {error}"))?;
            let status = response.status().as_u16();
            let text = response.text().await.map_err(|error| format!("GET {url}: {error}"))?;
            if status != 200 {
                return Err(format!("GET {url}: {status} {text}"));
            }
            serde_json::from_str::<Value>(&text).map_err(|error| format!("GET {url}: {error}"))
        }
    }))
    .buffered(READ_BACK_CONCURRENCY);
    let mut histories = Vec::new();
    while let Some(answer) = reads.next().await {
        match answer {
            Ok(history) => histories.push(history),
            Err(problem) => failures.add(problem),
        }
    }
    drop(reads);
    served.stop();
    follower.abort();
    let warnings = served.warnings();
    if let Some(logs) = &options.logs {
        let kept = logs.join(format!("load-{}.stderr", backend.name()));
        std::fs::copy(served.dir.path().join("serve.stderr"), &kept)
            .with_context(|| format!("keep the server's log as {}", kept.display()))?;
    }
    let requests = provider.requests();
    provider.shutdown().await;

    let seen = std::mem::take(&mut *seen.lock().unwrap_or_else(PoisonError::into_inner));
    let mut problems = failures.problems.clone();
    let mut note = |problem: String| {
        if problems.len() < 10 {
            problems.push(problem);
        }
    };
    let (mut complete, mut lost_parts, mut unfinished, mut deltas_sent, mut delivered) = (0, 0, 0, 0, 0);
    for history in &histories {
        let messages = history.as_array().map_or(&[][..], Vec::as_slice);
        let assistant = messages.iter().rev().find(|m| m["info"]["role"] == "assistant");
        let Some(assistant) = assistant else {
            lost_parts += 1;
            note(format!("a session has no assistant message: {history}"));
            continue;
        };
        let info = &assistant["info"];
        let finished = info["time"]["completed"].is_u64() && info["error"].is_null();
        let text_part =
            assistant["parts"].as_array().and_then(|parts| parts.iter().find(|part| part["type"] == "text"));
        let text = text_part.and_then(|part| part["text"].as_str()).unwrap_or_default();
        let ended = text_part.is_some_and(|part| part["time"]["end"].is_u64());
        deltas_sent += stamps(text).count();
        if let Some(part_id) = text_part.and_then(|part| part["id"].as_str())
            && seen.part_text.get(part_id).is_some_and(|streamed| streamed == text)
        {
            delivered += 1;
        }
        let whole = unstamped(text) == templates && ended;
        if !whole {
            lost_parts += 1;
            note(format!("session {}: stored text {text:?}", info["sessionID"]));
        }
        if !finished {
            unfinished += 1;
            note(format!("session {}: assistant message not finished: {info}", info["sessionID"]));
        }
        if whole && finished {
            complete += 1;
        }
    }
    // A session whose history could not be read counts as lost.
    lost_parts += sessions.len().saturating_sub(histories.len());
    let provider_faults =
        requests.iter().filter(|r| r.status != Some(200) || !r.violations.is_empty()).count();
    for warning in warnings.iter().take(3) {
        note(format!("session serve: {warning}"));
    }
    for error in seen.errors.iter().take(3) {
        note(format!("session.error: {error}"));
    }
    if delivered < histories.len() {
        note(format!("{} of {} parts reached the event client whole", delivered, histories.len()));
    }
    let mut latencies = seen.latencies_us.clone();
    latencies.sort_by(f64::total_cmp);
    let ms = |us: f64| us / 1000.0;
    let mut command =
        format!("cargo xtask bench --load --sessions {} --db {}", options.sessions, backend.name());
    if options.chunks != LoadOptions::default().chunks || options.delay != LoadOptions::default().delay {
        let _ = write!(command, " --chunks {} --delay-ms {}", options.chunks, options.delay.as_millis());
    }
    Ok(LoadReport {
        backend,
        sessions: options.sessions,
        chunks: options.chunks,
        delay_ms: u64::try_from(options.delay.as_millis()).unwrap_or(u64::MAX),
        complete,
        lost_parts,
        unfinished,
        http_errors: failures.count,
        session_errors: seen.errors.len(),
        provider_requests: requests.len(),
        provider_faults,
        deltas_sent,
        deltas_received: latencies.len(),
        idle: seen.idle.len(),
        latency_p50_ms: ms(quantile(&latencies, 0.50)),
        latency_p99_ms: ms(quantile(&latencies, 0.99)),
        latency_max_ms: ms(latencies.last().copied().unwrap_or(0.0)),
        peak_rss_mib,
        wall_s: wall.as_secs_f64(),
        load: (load_before, load_after),
        server_warnings: warnings.len(),
        server_cpu_s,
        driver_cpu_s,
        problems,
        command,
    })
}

fn summary_line(report: &LoadReport) -> String {
    format!(
        "{}: {}/{} complete, lost {}, unfinished {}, http errors {}, session.error {}, provider faults {}, server warnings {}, deltas {}/{}, latency p50 {:.1} ms p99 {:.1} ms max {:.1} ms, peak RSS {:.1} MiB, wall {:.2} s, CPU server {:.2} s driver {:.2} s, load {:.2} -> {:.2}",
        report.backend.name(),
        report.complete,
        report.sessions,
        report.lost_parts,
        report.unfinished,
        report.http_errors,
        report.session_errors,
        report.provider_faults,
        report.server_warnings,
        report.deltas_received,
        report.deltas_sent,
        report.latency_p50_ms,
        report.latency_p99_ms,
        report.latency_max_ms,
        report.peak_rss_mib,
        report.wall_s,
        report.server_cpu_s,
        report.driver_cpu_s,
        report.load.0,
        report.load.1,
    )
}

fn markdown(reports: &[LoadReport]) -> String {
    let mut out = String::from(
        "| backend | sessions | complete | lost parts | errors (HTTP / session.error / provider) | deltas received / sent | latency p50 / p99 / max | peak RSS | wall | load average |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in reports {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} / {} / {} | {} / {} | {:.1} / {:.1} / {:.1} ms | {:.1} MiB | {:.2} s | {:.1} → {:.1} |",
            r.backend.name(),
            r.sessions,
            r.complete,
            r.lost_parts,
            r.http_errors,
            r.session_errors,
            r.provider_faults,
            r.deltas_received,
            r.deltas_sent,
            r.latency_p50_ms,
            r.latency_p99_ms,
            r.latency_max_ms,
            r.peak_rss_mib,
            r.wall_s,
            r.load.0,
            r.load.1,
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_parse() {
        let args: Vec<String> =
            ["--load", "--sessions", "20", "--db", "postgres"].iter().map(|s| (*s).to_owned()).collect();
        let options = parse_options(&args).unwrap();
        assert_eq!((options.sessions, options.backends.clone()), (20, vec![Backend::Postgres]));
        assert!(parse_options(&["--db".to_owned(), "mysql".to_owned()]).is_err());
        assert!(parse_options(&["--sessions".to_owned(), "0".to_owned()]).is_err());
    }

    #[test]
    fn stamps_and_templates() {
        let text = "1764000000123456 1764000000123999 ";
        assert_eq!(stamps(text).collect::<Vec<_>>(), vec![1_764_000_000_123_456, 1_764_000_000_123_999]);
        assert_eq!(unstamped(text), format!("{SENT_US} ").repeat(2));
        assert_ne!(unstamped("1764000000123456 17640000 "), format!("{SENT_US} ").repeat(2));
    }

    #[test]
    fn quantiles_by_nearest_rank() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&values, 0.5), 50.0);
        assert_eq!(quantile(&values, 0.99), 99.0);
        assert_eq!(quantile(&[7.0], 0.99), 7.0);
        assert_eq!(quantile(&[], 0.5), 0.0);
    }

    #[test]
    fn database_names_replace_the_path() {
        assert_eq!(with_database("postgres://u@h:5432/test", "x"), "postgres://u@h:5432/x");
        assert_eq!(
            with_database("postgres://u@h/test?sslmode=disable", "x"),
            "postgres://u@h/x?sslmode=disable"
        );
        assert_eq!(with_database("postgres://h", "x"), "postgres://h/x");
    }

    #[test]
    fn events_fold_into_latencies_parts_and_idles() {
        let mut seen = Seen::default();
        let delta = json!({"id": "evt_01a2353035107cb10000000000", "type": "message.part.delta", "properties": {
            "sessionID": "ses_1", "messageID": "msg_1", "partID": "prt_1", "field": "text",
            "delta": "0000000000001000 "}});
        observe(&mut seen, &delta, 1_500);
        observe(&mut seen, &json!({"type": "session.idle", "properties": {"sessionID": "ses_1"}}), 2_000);
        observe(&mut seen, &json!({"type": "session.error", "properties": {"sessionID": "ses_1"}}), 2_000);
        assert_eq!(seen.latencies_us, vec![500.0]);
        assert_eq!(seen.part_text["prt_1"], "0000000000001000 ");
        assert!(seen.idle.contains("ses_1"));
        assert_eq!((seen.errors.len(), seen.events), (1, 3));
        for event in [&delta, &json!({"type": "session.idle", "properties": {}})] {
            assert!(worth_parsing(&event.to_string()));
        }
        let update = json!({"id": "evt_01a2353035107cb10000000001", "type": "message.part.updated",
            "properties": {"part": {"id": "prt_1"}, "sessionID": "ses_1", "time": 1}});
        assert!(!worth_parsing(&update.to_string()));
    }

    /// The CI version: 20 sessions on SQLite through the debug binary, nothing lost.
    #[test]
    fn twenty_sessions_on_sqlite_lose_nothing() {
        let binary = session_e2e::session_binary().unwrap();
        let options = LoadOptions {
            sessions: 20,
            backends: vec![Backend::Sqlite],
            chunks: 4,
            delay: Duration::from_millis(2),
            timeout: Duration::from_secs(120),
            ..LoadOptions::default()
        };
        let report = run(&binary, Backend::Sqlite, &options).unwrap();
        assert!(report.clean(), "{}\n{:#?}", summary_line(&report), report.problems);
        assert_eq!(report.deltas_received, 80);
        assert_eq!(report.provider_requests, 20);
    }
}
