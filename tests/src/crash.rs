//! The crash loop: `session run` on a long script, killed with SIGKILL at random moments.
//!
//! A loopback [`TestServer`] serves the vendored `long` script (40 tool steps, then an
//! answer), paced so that a step takes tens of milliseconds and kills land mid-step. Each
//! round starts the real binary (`session run --format events --yes`, resuming the session with
//! `--session ID` after the first), kills it after a random delay, then checks the store as the
//! next process would find it:
//!
//! - it opens (recovering the dead run);
//! - no part is left open: no tool pending or running, no text or reasoning without an end;
//! - every part the killed run printed as finished is stored exactly as printed; every part it
//!   printed at all is stored (a tool it printed as started is now completed or interrupted);
//!   every assistant message it printed as completed is stored as printed.
//!
//! When a run reaches the script's end the session is checked whole (the final answer, no
//! open part, every finished part printed by any of its runs still there) and a new session
//! starts in the same database. After the last kill the session is resumed, unkilled, to its
//! end. [`run`] is what `cargo xtask bench --crash N` and the CI test call.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, anyhow, bail, ensure};
use serde_json::{Value, json};
use session_core::{Identifier as _, Message, Part, PartKind, SessionId, ToolState};
use session_llm::Script;
use session_store::{DatabaseConfig, SqliteConfig, StoreOptions};
use session_testkit::TestServer;

/// The words that end the `long` script's final answer.
const FINAL_ANSWER: &str = "Checked all 12 modules";

/// What a crash loop does.
#[derive(Debug, Clone)]
pub struct CrashOptions {
    /// The `session` binary.
    pub binary: PathBuf,
    /// How many runs to kill.
    pub kills: usize,
    /// The seed of the kill delays (printed, so that a failure can be replayed).
    pub seed: u64,
    /// The pause before each streamed chunk.
    pub chunk_delay: Duration,
    /// Kills land uniformly between these delays after a run starts.
    pub kill_window: (Duration, Duration),
}

impl CrashOptions {
    /// `kills` kills of `binary`, seeded from the clock, with pacing that puts most kills
    /// inside a step.
    pub fn new(binary: PathBuf, kills: usize) -> Self {
        let seed = SystemTime::now().duration_since(UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64) | 1;
        Self {
            binary,
            kills,
            seed,
            chunk_delay: Duration::from_millis(12),
            kill_window: (Duration::from_millis(150), Duration::from_millis(2500)),
        }
    }
}

/// What a crash loop did and found.
#[derive(Debug, Clone, Default)]
pub struct CrashReport {
    /// Runs killed with SIGKILL.
    pub kills: usize,
    /// Runs that ended by themselves (one per session carried to its end, and runs that
    /// finished before their kill came).
    pub completed_runs: usize,
    /// Sessions carried to the script's end.
    pub sessions_finished: usize,
    /// Parts the killed runs printed, all found stored.
    pub parts_checked: usize,
    /// Of those, parts printed as finished, found stored exactly as printed.
    pub finished_parts_checked: usize,
    /// Tool calls a kill left running, found closed as interrupted.
    pub interrupted_tools: usize,
    /// The longest time to open (and so recover) the store after a kill.
    pub max_open: Duration,
    /// The total time spent opening the store after kills.
    pub total_open: Duration,
    /// The whole loop's wall time.
    pub elapsed: Duration,
    /// The seed used.
    pub seed: u64,
}

impl std::fmt::Display for CrashReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mean_open = self.total_open.checked_div(u32::try_from(self.kills.max(1)).unwrap_or(u32::MAX));
        write!(
            f,
            "{} kills (seed {}), {} runs ended by themselves, {} sessions carried to their end; \
             {} printed parts found stored ({} finished, stored as printed), {} interrupted tools closed; \
             store open after a kill: mean {:.0?}, max {:.0?}; wall {:.1?}",
            self.kills,
            self.seed,
            self.completed_runs,
            self.sessions_finished,
            self.parts_checked,
            self.finished_parts_checked,
            self.interrupted_tools,
            mean_open.unwrap_or_default(),
            self.max_open,
            self.elapsed,
        )
    }
}

/// Runs the crash loop on its own runtime (blocking the caller); `progress` gets one line per
/// round. Fails with the first broken guarantee, naming the round and the seed.
pub fn run(options: &CrashOptions, progress: &mut dyn FnMut(&str)) -> Result<CrashReport> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start a tokio runtime")?;
    runtime.block_on(crash_loop(options, progress))
}

/// A xorshift generator: kill delays reproducible from the seed.
struct Random(u64);

impl Random {
    fn between(&mut self, low: Duration, high: Duration) -> Duration {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        let span = high.saturating_sub(low).as_millis().max(1) as u64;
        low + Duration::from_millis(self.0 % span)
    }
}

/// The vendored `long` script.
fn long_script(chunk_delay: Duration) -> Result<Script> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/session-llm/tests/scripts/peers/long.json");
    let mut script = Script::load(&path).map_err(|e| anyhow!("{e}"))?;
    script.chunk_delay = chunk_delay;
    // Small chunks: more of them, so that a step streams for a while.
    script.chunk_chars = 6;
    Ok(script)
}

/// The project the script reads: `src/mod1.py` to `mod12.py`, `util.py`, `app.py`.
fn project(dir: &Path, base_url: &str) -> Result<()> {
    std::fs::create_dir_all(dir.join("src"))?;
    std::fs::write(dir.join("README.md"), "# demo\nA tiny demo CLI.\n")?;
    for n in 1..=12 {
        std::fs::write(dir.join(format!("src/mod{n}.py")), format!("def f{n}(x):\n    return x + {n}\n"))?;
    }
    std::fs::write(
        dir.join("src/util.py"),
        "def greet(name):\n    return \"hello, %s\" % name\n\ndef shout(name):\n    return greet(name).upper()\n",
    )?;
    std::fs::write(dir.join("src/app.py"), "from util import greet\nprint(greet('you'))\n")?;
    let config = json!({
        "provider": {"mock": {
            "npm": "@ai-sdk/openai-compatible",
            "options": {"baseURL": base_url, "apiKey": "test-key"},
            "models": {"m": {"limit": {"context": 200000, "output": 8000}, "cost": {"input": 1, "output": 2}}}
        }}
    });
    std::fs::write(dir.join("session.json"), serde_json::to_string_pretty(&config)?)?;
    // HOME is the folder above the project: its config is trusted as `session trust` would.
    let home = dir.parent().context("the project has a parent folder")?;
    session_testkit::trust_folder(home, dir)?;
    Ok(())
}

/// A running `session run` whose JSON lines are collected as they come.
struct RunningSession {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl RunningSession {
    fn start(binary: &Path, home: &Path, session: Option<&str>) -> Result<Self> {
        let mut command = Command::new(binary);
        command.args(["run", "--model", "mock/m", "--format", "events", "--yes"]);
        if let Some(id) = session {
            command.args(["--session", id]);
        }
        let prompt = if session.is_some() { "Continue." } else { "Audit every module in src/." };
        let mut child = command
            .arg(prompt)
            .current_dir(home.join("project"))
            .env("HOME", home)
            .env("XDG_DATA_HOME", home.join("data"))
            .env_remove("SESSION_CONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start {}", binary.display()))?;
        let stdout = child.stdout.take().context("no stdout pipe")?;
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&lines);
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                sink.lock().unwrap_or_else(PoisonError::into_inner).push(line);
            }
        });
        Ok(Self { child, lines, reader: Some(reader) })
    }

    /// Waits for the end (killing first when `kill`), then for every line to be read.
    /// Returns the exit code (`None` when killed) and the lines.
    fn finish(mut self, kill: bool) -> Result<(Option<i32>, Vec<String>)> {
        if kill {
            // SIGKILL on Unix: no cleanup of any kind runs in the child.
            let _ = self.child.kill();
        }
        let status = self.child.wait()?;
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        let lines = std::mem::take(&mut *self.lines.lock().unwrap_or_else(PoisonError::into_inner));
        Ok((status.code(), lines))
    }
}

impl Drop for RunningSession {
    fn drop(&mut self) {
        // A failed check must not leave a run behind.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What one run printed: parts and assistant messages, last version of each.
#[derive(Default)]
struct Printed {
    session_id: Option<String>,
    parts: BTreeMap<String, Part>,
    messages: BTreeMap<String, Message>,
}

impl Printed {
    fn read(lines: &[String]) -> Result<Self> {
        let mut printed = Self::default();
        for (index, line) in lines.iter().enumerate() {
            let event: Value = match serde_json::from_str(line) {
                Ok(event) => event,
                // The kill may cut the last line; anything else unreadable is a bug.
                Err(_) if index + 1 == lines.len() => break,
                Err(error) => bail!("line {} is not JSON ({error}): {line}", index + 1),
            };
            let properties = &event["properties"];
            if printed.session_id.is_none() {
                let id = [
                    &properties["sessionID"],
                    &properties["info"]["sessionID"],
                    &properties["part"]["sessionID"],
                ]
                .into_iter()
                .find_map(Value::as_str);
                printed.session_id = id.map(str::to_owned);
            }
            match event["type"].as_str() {
                Some("message.part.updated") => {
                    let part: Part = serde_json::from_value(properties["part"].clone())?;
                    printed.parts.insert(part.id.to_string(), part);
                }
                Some("message.updated") => {
                    let message: Message = serde_json::from_value(properties["info"].clone())?;
                    printed.messages.insert(message.id().to_string(), message);
                }
                _ => {}
            }
        }
        Ok(printed)
    }
}

/// True when a part is finished: a settled tool, text or reasoning with an end, or a part
/// kind that is written once.
fn is_finished(part: &Part) -> bool {
    match &part.kind {
        PartKind::Tool(tool) => !tool.state.is_open(),
        // A user's text has no times at all; streamed text is open until its end is set.
        PartKind::Text(text) => text.time.is_none_or(|t| t.end.is_some()),
        PartKind::Reasoning(reasoning) => reasoning.time.end.is_some(),
        _ => true,
    }
}

/// The session as stored, read by a freshly opened store (which recovers dead runs).
struct Stored {
    parts: BTreeMap<String, Part>,
    messages: Vec<Message>,
    opened_in: Duration,
}

async fn open_and_load(db: &Path, session: &str) -> Result<Stored> {
    let started = Instant::now();
    let config = DatabaseConfig::Sqlite(SqliteConfig::new(db));
    let store = session_store::open(&config, StoreOptions::default())
        .await
        .map_err(|e| anyhow!("the store does not open after the kill: {e}"))?;
    let opened_in = started.elapsed();
    let id = SessionId::parse(session).map_err(|e| anyhow!("bad session id {session}: {e}"))?;
    let history = store.load_history(&id).await.map_err(|e| anyhow!("loading the session: {e}"))?;
    store.close().await.map_err(|e| anyhow!("closing the store: {e}"))?;
    ensure!(history.skipped.is_empty(), "unreadable rows: {:?}", history.skipped);
    let mut stored = Stored { parts: BTreeMap::new(), messages: Vec::new(), opened_in };
    for message in history.messages {
        stored.messages.push(message.info.clone());
        for part in message.parts {
            ensure!(is_finished(&part), "part left open: {part:?}");
            stored.parts.insert(part.id.to_string(), part);
        }
    }
    for message in &stored.messages {
        if let Message::Assistant(info) = message {
            ensure!(info.time.completed.is_some(), "assistant message {} left unfinished", info.id);
        }
    }
    Ok(stored)
}

/// Checks the store against what a killed run printed; returns (parts, finished parts,
/// interrupted tools) checked.
fn check_against(printed: &Printed, stored: &Stored) -> Result<(usize, usize, usize)> {
    let (mut finished, mut interrupted) = (0, 0);
    for (id, part) in &printed.parts {
        let kept =
            stored.parts.get(id).with_context(|| format!("printed part {id} is not stored: {part:?}"))?;
        if is_finished(part) {
            ensure!(kept == part, "finished part {id} changed:\nprinted {part:?}\nstored  {kept:?}");
            finished += 1;
        } else if let (PartKind::Tool(was), PartKind::Tool(now)) = (&part.kind, &kept.kind) {
            // Started before the kill: completed (committed, not yet printed) or interrupted.
            ensure!(
                matches!(now.state, ToolState::Completed { .. }) || now.state.is_interrupted(),
                "tool {id} was {:?} and is now {:?}",
                was.state.status(),
                now.state
            );
            interrupted += usize::from(now.state.is_interrupted());
        }
    }
    for (id, message) in &printed.messages {
        if let Message::Assistant(info) = message
            && info.time.completed.is_some()
        {
            let kept = stored.messages.iter().find(|m| m.id().as_str() == id);
            ensure!(kept == Some(message), "completed message {id} changed: {kept:?}");
        }
    }
    Ok((printed.parts.len(), finished, interrupted))
}

/// True when the session's last assistant message is the script's final answer, finished.
fn at_end(stored: &Stored) -> bool {
    let last = stored.messages.iter().rev().find_map(|m| match m {
        Message::Assistant(info) => Some(info),
        Message::User(_) => None,
    });
    let Some(last) = last else { return false };
    let answered = stored.parts.values().any(|p| {
        p.message_id == last.id && matches!(&p.kind, PartKind::Text(t) if t.text.contains(FINAL_ANSWER))
    });
    answered && last.error.is_none() && last.finish.is_some()
}

async fn crash_loop(options: &CrashOptions, progress: &mut dyn FnMut(&str)) -> Result<CrashReport> {
    let started = Instant::now();
    let server = TestServer::start(long_script(options.chunk_delay)?).await?;
    let dir = tempfile::tempdir()?;
    project(&dir.path().join("project"), &server.url())?;
    let db = dir.path().join("data/session/session.db");
    let mut random = Random(options.seed | 1);
    let mut report = CrashReport { seed: options.seed, ..CrashReport::default() };
    let mut session: Option<String> = None;
    // Every finished part any run of the current session printed, to check at its end.
    let mut finished_parts: BTreeMap<String, Part> = BTreeMap::new();
    let mut round = 0usize;
    loop {
        let last = report.kills >= options.kills;
        if last && session.is_none() {
            break;
        }
        round += 1;
        let context = |what: &str| format!("round {round} (seed {}): {what}", options.seed);
        let run = RunningSession::start(&options.binary, dir.path(), session.as_deref())?;
        let (code, lines) = if last {
            // After the last kill: carry the session to its end.
            tokio::task::spawn_blocking(move || run.finish(false)).await??
        } else {
            let delay = random.between(options.kill_window.0, options.kill_window.1);
            tokio::time::sleep(delay).await;
            tokio::task::spawn_blocking(move || run.finish(true)).await??
        };
        let printed = Printed::read(&lines).with_context(|| context("reading its output"))?;
        if session.is_none() {
            session.clone_from(&printed.session_id);
        }
        let Some(id) = session.clone() else {
            // Killed before it printed anything: there is nothing of it to check or resume.
            progress(&format!("round {round}: killed before the session existed"));
            report.kills += usize::from(code.is_none());
            continue;
        };
        let stored = open_and_load(&db, &id).await.with_context(|| context("opening the store"))?;
        let (parts, finished, interrupted) =
            check_against(&printed, &stored).with_context(|| context("checking what the run printed"))?;
        finished_parts.extend(printed.parts.into_iter().filter(|(_, p)| is_finished(p)));
        match code {
            None => {
                report.kills += 1;
                report.parts_checked += parts;
                report.finished_parts_checked += finished;
                report.interrupted_tools += interrupted;
                report.max_open = report.max_open.max(stored.opened_in);
                report.total_open += stored.opened_in;
            }
            Some(0) => report.completed_runs += 1,
            Some(other) => bail!(context(&format!("session run exited {other}"))),
        }
        if at_end(&stored) {
            for (part_id, part) in &finished_parts {
                let kept = stored.parts.get(part_id);
                ensure!(
                    kept == Some(part),
                    context(&format!("finished part {part_id} lost or changed: {kept:?}"))
                );
            }
            report.sessions_finished += 1;
            progress(&format!("round {round}: session {id} reached its end ({} parts)", stored.parts.len()));
            session = None;
            finished_parts.clear();
        } else {
            ensure!(!last, context("the unkilled run did not carry the session to its end"));
            progress(&format!(
                "round {round}: killed; {parts} printed parts stored ({finished} finished), {interrupted} tools interrupted"
            ));
        }
    }
    let violations = server.violations();
    ensure!(violations.is_empty(), "requests broke the tool-call invariant: {violations:?}");
    server.shutdown().await;
    report.elapsed = started.elapsed();
    Ok(report)
}
