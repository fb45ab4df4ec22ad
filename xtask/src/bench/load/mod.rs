//! `cargo xtask bench --load [--sessions N] [--db sqlite|postgres|both]`: the load test.
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

mod drive;
mod events;
mod serve;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, anyhow, bail};
use serde::{Deserialize, Serialize};
use serde_json::json;
use session_llm::Script;
use session_testkit::SENT_US;

use super::{session_binary, target_dir};
pub(crate) use drive::run;

/// The PostgreSQL server used when neither `--pg-url` nor `SESSION_TEST_PG_URL` names one.
const DEFAULT_PG_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// Characters of one text chunk: a 16-digit stamp and a space (the placeholder is 9 + 1).
const CHUNK_CHARS: usize = SENT_US.len() + 1;

/// How many requests the read-back sends at once (it measures nothing, so it stays polite).
pub(super) const READ_BACK_CONCURRENCY: usize = 32;

/// Which database the server under load uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Backend {
    /// The embedded SQLite file in the data folder.
    Sqlite,
    /// A fresh database on a PostgreSQL server.
    Postgres,
}

impl Backend {
    pub(crate) fn name(self) -> &'static str {
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
#[derive(Debug, Clone, Serialize, Deserialize)]
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
    let binary = session_binary(root, options.bin.as_deref())?;
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

/// CPU time (user and system) of this process so far, seconds.
pub(super) fn own_cpu_s() -> f64 {
    use nix::sys::resource::{UsageWho, getrusage};
    getrusage(UsageWho::RUSAGE_SELF).map_or(0.0, |usage| {
        let seconds = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
        seconds(usage.user_time()) + seconds(usage.system_time())
    })
}

pub(super) fn unix_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(0))
}

/// The scripted reply: `chunks` stamps, one a chunk.
pub(super) fn script(chunks: usize, delay: Duration) -> Result<Script> {
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

pub(crate) fn markdown(reports: &[LoadReport]) -> String {
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
    use std::time::Duration;

    use serde_json::json;
    use session_testkit::SENT_US;

    #[test]
    fn a_report_written_by_the_release_driver_reads_back_the_same() {
        let written = json!([{
            "backend": "postgres", "sessions": 10, "chunks": 8, "delay_ms": 10, "complete": 9,
            "lost_parts": 1, "unfinished": 0, "http_errors": 0, "session_errors": 0,
            "provider_requests": 10, "provider_faults": 0, "deltas_sent": 80, "deltas_received": 79,
            "idle": 10, "latency_p50_ms": 1.5, "latency_p99_ms": 9.0, "latency_max_ms": 9.5,
            "peak_rss_mib": 30.0, "wall_s": 1.0, "load": [0.5, 0.75], "server_warnings": 0,
            "server_cpu_s": 0.5, "driver_cpu_s": 0.25, "problems": ["ses_1: lost a part"],
            "command": "xtask bench --load --db postgres"
        }]);
        let reports: Vec<super::LoadReport> = serde_json::from_value(written.clone()).expect("a report");
        assert_eq!(reports[0].backend, super::Backend::Postgres);
        assert!(!reports[0].clean());
        assert_eq!(serde_json::to_value(&reports).expect("json"), written);
    }

    use super::events::{Seen, observe, quantile, stamps, unstamped, worth_parsing};
    use super::serve::with_database;
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
