//! The server under load: `session serve` in a scratch project, and its PostgreSQL database.

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::json;

use super::unix_us;

/// The server under load, stopped (and its database dropped) when dropped.
pub(super) struct Served {
    pub(super) child: Child,
    pub(super) url: String,
    pub(super) dir: tempfile::TempDir,
}

impl Served {
    /// Peak resident set so far, MiB, from `/proc/<pid>/status`.
    pub(super) fn peak_rss_mib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse::<f64>().ok())
            .map_or(0.0, |kib| kib / 1024.0)
    }

    /// CPU time (user and system) the server has used so far, seconds, from `/proc/<pid>/stat`.
    pub(super) fn cpu_s(&self) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        // The fields after the command name (which may hold spaces) start at its closing ')'.
        let fields: Vec<&str> =
            stat.rsplit_once(')').map_or("", |(_, rest)| rest).split_whitespace().collect();
        let ticks: f64 = [11, 12].iter().filter_map(|&at| fields.get(at)?.parse::<f64>().ok()).sum();
        // Clock ticks are 1/100 s on Linux.
        ticks / 100.0
    }

    /// SIGTERM, then a kill when it does not stop within a few seconds.
    pub(super) fn stop(&mut self) {
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
    pub(super) fn stderr_tail(&self) -> String {
        let lines = self.stderr_lines();
        lines[lines.len().saturating_sub(5)..].join("\n")
    }

    /// The server's log lines of level WARN or ERROR.
    pub(super) fn warnings(&self) -> Vec<String> {
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
pub(super) fn serve(binary: &Path, provider_url: &str, database: Option<&str>) -> Result<Served> {
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
pub(super) async fn create_database(base: &str) -> Result<(String, String)> {
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

pub(super) async fn drop_database(base: &str, name: &str) -> Result<()> {
    use sqlx::Connection as _;
    let mut connection = sqlx::PgConnection::connect(base).await?;
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)")))
        .execute(&mut connection)
        .await?;
    connection.close().await.ok();
    Ok(())
}

/// `url` with its database (the path) replaced by `name`, the query kept.
pub(super) fn with_database(url: &str, name: &str) -> String {
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
pub(super) fn redacted(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => format!("{}://***{}", &url[..scheme], &url[at..]),
        _ => url.to_owned(),
    }
}
